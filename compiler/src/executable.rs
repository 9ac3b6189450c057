//! The JIT executable: a computation compiled once into native kernels over planned device
//! buffers, run by calling the kernels in schedule order.
//!
//! Assumes: a graph `Graph::verify` accepts and a valid [`Plan`] of outputs and placeholders.
//! Guarantees:
//! - compilation: the graph is first restricted to what the requested outputs need (so an
//!   `assign` runs only when an output depends on it, as in the interpreter), then runs the pass
//!   pipeline ([`compile_plan`]), [`lower_plan`](crate::lower_plan) (every kernel verified) and Cranelift, once;
//!   anything it cannot compile is a typed [`JitError`] naming what;
//! - the plan as data: [`crate::program`] builds the [`Program`] (storages, steps, how arrays
//!   move), and only then are the kernels it keeps compiled, each once, all at once on the
//!   computation's threads;
//! - a run is the runtime's ([`NativeExecutable`]): inputs and the current state in, the steps
//!   in order (a kernel with a `parallel` loop split across the pool of [`JitOptions::threads`]
//!   threads; each outer point or reduction chunk is computed by exactly one thread, so results
//!   do not depend on the thread count), outputs out and, only when everything succeeded,
//!   assigned values into the state.

use crate::codegen::{CodegenOptions, JitCompiler};
use crate::gemm::GemmOptions;
use crate::lower::LoweredKernel;
use crate::passes::rebuild::{restricted, NodeMap};
use crate::passes::PassError;
use crate::pipeline::{compile_plan, CompiledPlan, PlanOptions};
use std::sync::Arc;
use weft_ir::arena::EntityRef;
use weft_ir::{Graph, HostArray, Inputs, NodeId, OutputArrays};
use weft_runtime::program::{GemmId, Step, StorageKind};
use weft_runtime::{
    Executable, GemmCall, GemmEpilogue, NativeExecutable, Plan, Program, RunError, State,
    StateView, ThreadPool,
};

/// A step of a run as `weft explain` lists it.
#[derive(Clone, Copy, Debug)]
pub enum ScheduledStep<'e> {
    /// A JIT kernel.
    Kernel(&'e LoweredKernel),
    /// A GEMM call (crate::gemm), and, when the kernel after it could not run as its
    /// epilogue, why not.
    Gemm(GemmId, &'e GemmCall, Option<&'e str>),
    /// A GEMM call, then its epilogue kernel over each row block the call computes, in the
    /// same work items (crate::epilogue).
    GemmThen(GemmId, &'e GemmEpilogue, &'e LoweredKernel),
}

pub use crate::options::{JitError, JitOptions};

/// A computation compiled into native kernels: the program the runtime runs, and what the
/// compiler knows about it (the passes' results, the loop IR) for `weft explain` and dumps.
pub struct JitExecutable {
    native: NativeExecutable,
    compiled: CompiledPlan,
    /// The loop IR of the program's kernels, by `KernelId`.
    lowered: Vec<LoweredKernel>,
    /// Whether code generation may hand an f32 `exp`, `tanh` or `sigmoid` stored into a span to
    /// the native span routine ([`CodegenOptions::span_math`] on a host with AVX2 and FMA).
    span_math: bool,
    /// Whether a tiled transposing copy may call the native transpose
    /// ([`CodegenOptions::native_transpose`] on a host with AVX).
    native_transpose: bool,
    /// The code generator's switches it was compiled with.
    codegen: CodegenOptions,
}

impl std::fmt::Debug for JitExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitExecutable")
            .field("kernels", &self.lowered.len())
            .field("storages", &self.program().storages.len())
            .finish()
    }
}

pub use weft_runtime::{default_threads, pool_of, shared_pool, ResidentRun, MAX_THREADS};

/// The thread count `options` ask for (see [`JitOptions::threads`]).
fn threads_of(options: &JitOptions) -> Result<usize, JitError> {
    match options.threads {
        None => Ok(default_threads()),
        Some(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Some(requested) => Err(JitError::Threads { requested }),
    }
}

/// `graph` restricted to the nodes `plan` evaluates (plus every listed placeholder), with the
/// outputs marked; and the map from `graph`'s nodes to it.
fn restrict(graph: &Graph, plan: &Plan) -> Result<(Graph, NodeMap), PassError> {
    let mut keep: Vec<bool> = graph.nodes().map(|(id, _)| plan.is_needed(id)).collect();
    // A placeholder reads nothing, so the mask stays closed under operands.
    for p in plan.placeholders() {
        keep[p.index()] = true;
    }
    let (mut out, map) = restricted(graph, &keep)?;
    for o in plan.outputs() {
        let n = map
            .get(*o)
            .ok_or_else(|| PassError::Internal("output dropped".into()))?;
        out.mark_output(n)?;
    }
    Ok((out, map))
}

/// The pass pipeline's options for `options`, its layouts by the restricted graph's nodes.
fn plan_options(options: &JitOptions, pool: &ThreadPool, restricted: &NodeMap) -> PlanOptions {
    PlanOptions {
        fused: options.fused,
        gemm: options.gemm.map(|g| GemmOptions {
            threads: pool.threads(),
            ..g
        }),
        layouts: options
            .layouts
            .iter()
            .filter_map(|(n, order)| Some((restricted.get(*n)?, order.clone())))
            .collect(),
        reduce_in_memory_min_bytes: options.lower.reduce_in_memory_min_bytes,
        fold_constants: options.fold_constants,
        ..PlanOptions::default()
    }
}

impl JitExecutable {
    /// Compiles the computation of `outputs` given `placeholders` of `graph`.
    pub fn new(
        graph: Arc<Graph>,
        outputs: &[NodeId],
        placeholders: &[NodeId],
        options: &JitOptions,
    ) -> Result<JitExecutable, JitError> {
        let pool = pool_of(threads_of(options)?);
        let plan = Plan::new(&graph, outputs, placeholders)?;
        let (restricted, to_restricted) = restrict(&graph, &plan)?;
        let compiled = compile_plan(&restricted, &plan_options(options, &pool, &to_restricted))?;
        let compiler = JitCompiler::with_options(options.codegen)?.with_pool(pool.clone());
        let crate::program::Built {
            program,
            mut lowered,
        } = crate::program::build(&crate::program::Sources {
            graph: &graph,
            plan: &plan,
            compiled: &compiled,
            restricted: &to_restricted,
            options,
            span_math: compiler.span_math(),
        })?;
        // Each kernel the program keeps is compiled once, in a module of its own, all at once
        // on the computation's threads.
        let strategies: Vec<_> = lowered
            .iter()
            .map(|lk| compiler.strategy(&lk.kernel))
            .collect();
        let jobs: Vec<_> = lowered.iter().zip(&strategies).collect();
        let codes = pool.map(&jobs, |(lk, strategy)| {
            compiler.compile_by(&lk.kernel, strategy)
        });
        for (lk, strategy) in lowered.iter_mut().zip(strategies) {
            lk.strategy = Some(strategy);
        }
        let code = codes.into_iter().collect::<Result<Vec<_>, _>>()?;
        let native = NativeExecutable::new(graph, plan, program, code, pool)?;
        let exe = JitExecutable {
            native,
            compiled,
            lowered,
            span_math: compiler.span_math(),
            native_transpose: compiler.native_transpose(),
            codegen: compiler.options(),
        };
        let dump = options
            .dump
            .clone()
            .or_else(|| std::env::var_os("WEFT_DUMP").map(std::path::PathBuf::from));
        if let Some(dir) = dump {
            let files = crate::dump::dump_stages(&exe.stages(exe.native.graph()))?;
            crate::dump::write_dump(&crate::dump::next_dump_dir(&dir), &files, |_| true)?;
        }
        Ok(exe)
    }

    /// What a dump of it shows, compiled from `source` ([`crate::dump::dump_stages`]).
    pub fn stages<'a>(&'a self, source: &'a Graph) -> crate::dump::Stages<'a> {
        crate::dump::Stages {
            source,
            compiled: &self.compiled,
            lowered: &self.lowered,
            program: self.program(),
            codegen: self.codegen,
            threads: self.threads(),
        }
    }

    /// The program it runs: storages, steps, and how each array moves.
    pub fn program(&self) -> &Program {
        self.native.program()
    }

    /// The runtime's half: the program with its code.
    pub fn native(&self) -> &NativeExecutable {
        &self.native
    }

    /// Threads that run its parallel kernels ([`JitOptions::threads`]).
    pub fn threads(&self) -> usize {
        self.native.threads()
    }

    /// The code generator's switches its kernels were compiled with.
    pub fn codegen_options(&self) -> CodegenOptions {
        self.codegen
    }

    /// Whether its kernels may run an f32 `exp`, `tanh` or `sigmoid` over a stored span natively
    /// ([`CodegenOptions::span_math`], and the host has AVX2 and FMA).
    pub fn span_math(&self) -> bool {
        self.span_math
    }

    /// Whether a tiled transposing copy of f32s calls the native transpose per parallel chunk
    /// ([`CodegenOptions::native_transpose`], and the host has AVX).
    pub fn native_transpose(&self) -> bool {
        self.native_transpose
    }

    /// The compiled plan (passes' results) behind this executable.
    pub fn compiled_plan(&self) -> &CompiledPlan {
        &self.compiled
    }

    /// Bytes a workspace allocates for the buffer plan's buffers and the kernels' row scratch
    /// (each storage rounded up to its 64-byte alignment): what the plan's buffer sizes promise
    /// when every buffer holds one element type and no row kernel is parallel (the plan counts
    /// one scratch row; a parallel row kernel takes one per chunk, see `lower`).
    pub fn planned_buffer_bytes(&self) -> usize {
        let bytes: u64 = self
            .program()
            .storages
            .iter()
            .filter(|s| matches!(s.kind, StorageKind::Planned | StorageKind::Scratch))
            .map(|s| s.bytes())
            .sum();
        bytes as usize
    }
    /// The machine code of every kernel of its program, kernel `i` as the function
    /// [`kernel_symbol`](crate::codegen::kernel_symbol)`(prefix, i)`, in a relocatable object
    /// file (`codegen/object.rs`): the same translation, by the same recorded strategies and
    /// options, as the code it runs, position-independent.
    pub fn emit_object(&self, prefix: &str) -> Result<crate::codegen::ObjectCode, JitError> {
        let compiler =
            JitCompiler::with_options(self.codegen)?.with_pool(self.native.pool().clone());
        let kernels = self
            .lowered
            .iter()
            .map(|lk| {
                let strategy = lk
                    .strategy
                    .clone()
                    .unwrap_or_else(|| compiler.strategy(&lk.kernel));
                (&lk.kernel, strategy)
            })
            .collect::<Vec<_>>();
        let jobs: Vec<_> = kernels.iter().map(|(k, s)| (*k, s)).collect();
        Ok(compiler.emit_object(&jobs, prefix)?)
    }

    /// The loop-IR kernels, in schedule order.
    pub fn lowered(&self) -> &[LoweredKernel] {
        &self.lowered
    }

    /// Every step of a run, in schedule order: JIT kernels and GEMM calls.
    pub fn schedule(&self) -> Vec<ScheduledStep<'_>> {
        let program = self.program();
        program
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Kernel(k) => self.lowered.get(k.index()).map(ScheduledStep::Kernel),
                Step::Gemm(g) => program
                    .gemms
                    .get(g.index())
                    .map(|gemm| ScheduledStep::Gemm(*g, &gemm.call, gemm.note.as_deref())),
                Step::GemmThen {
                    gemm,
                    kernel,
                    epilogue,
                } => Some(ScheduledStep::GemmThen(
                    *gemm,
                    epilogue,
                    self.lowered.get(kernel.index())?,
                )),
            })
            .collect()
    }

    /// One line per step of a run, in schedule order: kernels, GEMM calls, and GEMM calls
    /// with their epilogue kernel as one step (the dump's `steps` stage).
    pub fn steps_display(&self) -> String {
        self.program().steps_text()
    }

    /// How a call moves each input, output, state value read and assigned value: bound in place
    /// of its storage (zero-copy, crate::io_binding) or copied — the last section of
    /// `weft explain`.
    pub fn binding_report(&self) -> String {
        self.program().bindings_text()
    }

    /// Loads `inputs` and the state into device buffers and keeps them there, so the kernels
    /// can be run again and again over resident data ([`ResidentRun::execute`]): what a
    /// benchmark of kernel time (fused against unfused) measures, without host copies.
    pub fn resident(
        &self,
        inputs: &[HostArray],
        state: &State,
    ) -> Result<ResidentRun<'_>, RunError> {
        self.native.resident(inputs, state)
    }
}

impl Executable for JitExecutable {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn checks_arrays_exactly(&self) -> bool {
        self.native.checks_arrays_exactly()
    }

    fn outputs(&self) -> &[NodeId] {
        self.native.outputs()
    }

    fn placeholders(&self) -> &[NodeId] {
        self.native.placeholders()
    }

    fn run_on(
        &self,
        inputs: &dyn Inputs,
        state: &mut StateView<'_>,
    ) -> Result<Vec<HostArray>, RunError> {
        self.native.run_on(inputs, state)
    }

    fn run_into_on(
        &self,
        inputs: &dyn Inputs,
        outputs: OutputArrays<'_, '_>,
        state: &mut StateView<'_>,
    ) -> Result<(), RunError> {
        self.native.run_into_on(inputs, outputs, state)
    }
}
