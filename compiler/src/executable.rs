//! The JIT executable: a computation compiled once into native kernels over planned device
//! buffers, run by calling the kernels in schedule order.
//!
//! Assumes: a graph `Graph::verify` accepts and a valid [`Plan`] of outputs and placeholders.
//! Guarantees:
//! - compilation: the graph is first restricted to what the requested outputs need (so an
//!   `assign` runs only when an output depends on it, as in the interpreter), then runs the pass
//!   pipeline ([`compile_plan`]), [`lower_plan`] (every kernel verified) and Cranelift, once;
//!   anything it cannot compile is a typed [`JitError`] naming what;
//! - storage: each planned buffer becomes one 64-byte-aligned [`DeviceBufferStorage`] per
//!   element type it holds (storages are typed; tensors of one type still share); placeholders,
//!   variables, persistent tensors and constants get storages of their own in their row-major
//!   layout; row scratch is private to its kernel;
//! - a run copies inputs and the current state in, calls the kernels in schedule order (a
//!   kernel with a `parallel` loop is split across the pool of [`JitOptions::threads`] threads;
//!   each outer point or reduction chunk is computed by exactly one thread, so results do not
//!   depend on the thread count), copies the
//!   outputs out and, only when everything succeeded, writes assigned values into the state;
//! - a set of storages (a *workspace*) is used by one run at a time; concurrent runs take
//!   different workspaces (created on demand, then reused), so the executable is `Send + Sync`
//!   and a steady-state run allocates no device memory.

use crate::codegen::{CodegenError, CodegenOptions, JitCompiler, Outline};
use crate::column_blocks::strip_columns;
use crate::epilogue::plan_epilogue;
use crate::gemm::GemmOptions;
use crate::io_binding::{bind_input, bind_output, Binding};
use crate::lower::{lower_plan, BufferBinding, LowerError, LowerOptions, LoweredKernel};
use crate::passes::rebuild::{restricted, NodeMap};
use crate::passes::storage::{Planned, TensorRole};
use crate::passes::PassError;
use crate::pipeline::{compile_plan, CompiledPlan, PlanOptions};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::BufferId;
use weft_ir::{
    ArrayData, Axes, Axis, DType, DataRef, Graph, HostArray, HostError, HostView, Inputs, NodeId,
    Op,
};
use weft_runtime::state::stored_value;
use weft_runtime::{
    copy_array, BindScope, CompiledKernel, DeviceBufferReference, DeviceBufferStorage, Executable,
    GemmCall, GemmEpilogue, HostBindings, KernelSignature, Plan, RunError, RuntimeError, SplitDim,
    State, StateView, ThreadPool,
};

/// One step of a run, in schedule order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// `kernels[i]`.
    Kernel(usize),
    /// `gemms[i]`.
    Gemm(usize),
    /// `epilogues[i]`: a GEMM call and its epilogue kernel as one step (crate::epilogue).
    GemmThen(usize),
}

/// A step of a run as `weft explain` lists it.
#[derive(Clone, Copy, Debug)]
pub enum ScheduledStep<'e> {
    /// A JIT kernel.
    Kernel(&'e LoweredKernel),
    /// A GEMM call (crate::gemm), and, when the kernel after it could not run as its
    /// epilogue, why not.
    Gemm(&'e GemmCall, Option<&'e str>),
    /// A GEMM call, then its epilogue kernel over each row block the call computes, in the
    /// same work items (crate::epilogue).
    GemmThen(&'e GemmEpilogue, &'e LoweredKernel),
}

/// Why a computation could not be compiled for the JIT.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The computation's signature is invalid (see [`Plan::new`]).
    #[error(transparent)]
    Plan(#[from] RunError),
    /// A pass refused the graph.
    #[error(transparent)]
    Pass(#[from] PassError),
    /// A kernel program could not be lowered to the loop IR.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// Code generation failed.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// The IR dump asked for could not be written.
    #[error(transparent)]
    Dump(#[from] crate::dump::DumpError),
    /// [`JitOptions::threads`] is not a thread count a pool can have.
    #[error("JitOptions::threads = {requested}: a pool runs 1 to {MAX_THREADS} threads")]
    Threads {
        /// The count asked for.
        requested: usize,
    },
}

/// How to compile a JIT executable.
///
/// ```
/// use weft::compiler::JitOptions;
/// // Two threads, fused; `JitOptions::unfused()` is the one-kernel-per-op baseline.
/// let options = JitOptions { threads: Some(2), ..JitOptions::default() };
/// assert!(options.fused && !JitOptions::unfused().fused);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitOptions {
    /// Fusion and storage sharing (off: one kernel per op, every intermediate stored).
    pub fused: bool,
    /// Lowering switches.
    pub lower: LowerOptions,
    /// Code generation switches.
    pub codegen: CodegenOptions,
    /// Axis orders (major to minor) for some placeholders and outputs, by node of the graph
    /// handed to [`JitExecutable::new`]; the others are row-major in their declared axes order
    /// ([`PlanOptions::layouts`]). Callers still pass and receive arrays in the declared order:
    /// such an input is transposed into its layout on the way in (a copy that allocates), such
    /// an output gathered on the way out.
    pub layouts: Vec<(NodeId, Vec<Axis>)>,
    /// Write every stage's IR (crate::dump) into a numbered subfolder `cN` of this folder.
    /// Unset, the `WEFT_DUMP` environment variable names the folder, for host programs that
    /// cannot change their code.
    pub dump: Option<std::path::PathBuf>,
    /// A memory budget in bytes: compilation fails with [`RunError::MemoryBudget`] when a run
    /// would need more (its workspace — planned buffers at their peak sharing, inputs, state,
    /// constants, outputs, row scratch — plus the inputs' and outputs' host arrays), before
    /// anything of that size is allocated. The default ([`weft_runtime::default_memory_budget`]) is the
    /// `WEFT_MAX_BYTES` environment variable (a byte count), else the machine's physical
    /// memory (no budget where it cannot be read): the system grants each allocation up to
    /// that size on its own, and would kill the process whose allocations together exceed it.
    pub max_bytes: Option<u64>,
    /// Threads that run this computation's parallel kernels, the calling thread included
    /// (1 to [`MAX_THREADS`]; anything else is [`JitError::Threads`]). `None` (the default)
    /// takes the `WEFT_NUM_THREADS` environment variable if it holds such a count (anything
    /// else is ignored with a warning on stderr), else the machine's
    /// [`std::thread::available_parallelism`] ([`default_threads`]). Computations with the same
    /// count share one pool ([`pool_of`]). Results do not depend on it: parallel loops split
    /// independent iterations, and a split reduction's chunks are fixed by
    /// [`LowerOptions::split_chunks`], not by the thread count.
    pub threads: Option<usize>,
    /// Which dots a GEMM call computes instead of a JIT loop nest (crate::gemm; `None`: none).
    /// Fused and unfused alike.
    pub gemm: Option<GemmOptions>,
    /// Whether a GEMM call and the kernel after it run as one step, the kernel on each row
    /// block of the GEMM's result as soon as it is computed (crate::epilogue; default true).
    /// Results are the same either way.
    pub epilogue: bool,
    /// Whether consecutive kernels whose parallel loops cut the same columns into the same
    /// blocks run as one kernel, block by block (crate::chain; default true). Results are the
    /// same either way.
    pub chain: bool,
    /// Fold constant-only subgraphs with the reference interpreter at compile time (default
    /// true; [`PlanOptions::fold_constants`]). The oracle tests turn it off on one
    /// configuration, so that the JIT computes those subgraphs instead of copying the
    /// interpreter's values (docs/testing.md).
    pub fold_constants: bool,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            fused: true,
            lower: LowerOptions::default(),
            codegen: CodegenOptions::default(),
            layouts: Vec::new(),
            dump: None,
            max_bytes: weft_runtime::default_memory_budget(),
            threads: None,
            gemm: Some(GemmOptions::default()),
            epilogue: true,
            chain: true,
            fold_constants: true,
        }
    }
}

impl JitOptions {
    /// The unfused baseline: one kernel per op, every intermediate in a buffer of its own —
    /// a GEMM call too, so no epilogue runs inside it ([`JitOptions::epilogue`] off): the
    /// fused/unfused ratio shows what fusion, epilogues included, buys.
    pub fn unfused() -> Self {
        JitOptions {
            fused: false,
            epilogue: false,
            chain: false,
            ..JitOptions::default()
        }
    }

    /// Fused, with every kernel of two or more outer points parallel (row kernels in two
    /// chunks), every reduction that may be split split in two, and loop nests outlined
    /// wherever they may be ([`Outline::Every`]): small graphs then take the parallel, split
    /// and outlined paths that only large ones reach by default — how the tests and the
    /// fuzzer check that those paths compute what the interpreter does.
    pub fn forced_parallel() -> Self {
        JitOptions {
            lower: LowerOptions {
                parallel_min_points: 1,
                parallel_max_chunks: 2,
                split_min_terms: 1,
                split_chunks: 2,
                ..LowerOptions::default()
            },
            codegen: CodegenOptions {
                outline: Outline::Every,
                ..CodegenOptions::default()
            },
            ..JitOptions::default()
        }
    }
}

/// Storage specs: dtype and length, and the constant data to fill it with.
type Spec = (DType, u64, Option<ArrayData>);

/// The most kernels one chained kernel runs (crate::chain): its function, and the register
/// allocator's work on it, grow with them (a pool's fold has a kernel per level).
const MAX_CHAINED: usize = 4;

/// `steps` with each run of consecutive kernels that chain (crate::chain), at most
/// [`MAX_CHAINED`] at a time, made one step, and the kernels that became chained kernels:
/// the first kernel of each run takes the chained loop IR, bindings and storages (its notes
/// saying so), the others' steps are dropped (their storages stay, unused or shared).
fn chain_steps(
    steps: &[Step],
    lowered: &mut [LoweredKernel],
    kernel_args: &mut [Vec<usize>],
) -> (Vec<Step>, Vec<usize>) {
    let mut out: Vec<Step> = Vec::with_capacity(steps.len());
    // The kernel a run chains onto and how many it runs; the chained ones.
    let mut open: Option<(usize, usize)> = None;
    let mut chained = Vec::new();
    for &step in steps {
        if let (Some((first, count)), Step::Kernel(next)) = (open, step) {
            if count < MAX_CHAINED && chain_onto(first, next, lowered, kernel_args) {
                open = Some((first, count + 1));
                if !chained.contains(&first) {
                    chained.push(first);
                }
                continue;
            }
        }
        out.push(step);
        open = match step {
            Step::Kernel(i) => Some((i, 1)),
            _ => None,
        };
    }
    (out, chained)
}

/// Chains kernel `next` onto kernel `first` (crate::chain; an elementwise `next` strip-mined
/// into `first`'s blocks if need be): `first`'s loop IR, bindings, notes and storages become
/// the chained kernel's. False, and nothing changed, when they do not chain.
fn chain_onto(
    first: usize,
    next: usize,
    lowered: &mut [LoweredKernel],
    kernel_args: &mut [Vec<usize>],
) -> bool {
    let (a, a_args) = (&lowered[first].kernel, &kernel_args[first]);
    let (b, b_args) = (&lowered[next].kernel, &kernel_args[next]);
    let mut chained = crate::chain::chain(a, a_args, b, b_args);
    if chained.is_err() {
        // An elementwise kernel strip-mined into the first one's column blocks.
        let strips =
            crate::chain::parallel_extent(a).and_then(|n| crate::chain::strip_to_blocks(b, n));
        if let Some(strips) = strips {
            chained = crate::chain::chain(a, a_args, &strips, b_args);
        }
    }
    let Ok(crate::chain::Chained {
        kernel,
        args,
        from_b,
    }) = chained
    else {
        return false;
    };
    let bindings: Vec<BufferBinding> = from_b.iter().map(|j| lowered[next].bindings[*j]).collect();
    let note = format!(
        "chained with @{}: one parallel loop over the same column blocks, each block \
         through both kernels while it is in cache",
        lowered[next].kernel.name
    );
    let moved = std::mem::take(&mut lowered[next].notes);
    let first_kernel = &mut lowered[first];
    first_kernel.kernel = kernel;
    first_kernel.bindings.extend(bindings);
    first_kernel.notes.extend(moved);
    first_kernel.notes.push(note);
    kernel_args[first] = args;
    true
}

/// The kernels (with their argument storages) that `steps` or `epilogues` run, in their
/// order, and `steps` and `epilogues` renumbered to them: a kernel chained onto another
/// runs inside it and is not compiled.
fn keep_scheduled(
    lowered: Vec<LoweredKernel>,
    kernel_args: Vec<Vec<usize>>,
    steps: Vec<Step>,
    epilogues: &mut [(GemmEpilogue, usize, usize)],
) -> (Vec<LoweredKernel>, Vec<Vec<usize>>, Vec<Step>) {
    let mut new_index: Vec<Option<usize>> = vec![None; lowered.len()];
    let mut kept = 0;
    let mut keep = |i: usize| {
        *new_index[i].get_or_insert_with(|| {
            kept += 1;
            kept - 1
        })
    };
    let steps = steps
        .into_iter()
        .map(|step| match step {
            Step::Kernel(i) => Step::Kernel(keep(i)),
            Step::GemmThen(e) => {
                epilogues[e].2 = keep(epilogues[e].2);
                Step::GemmThen(e)
            }
            Step::Gemm(g) => Step::Gemm(g),
        })
        .collect();
    let mut slots: Vec<Option<(LoweredKernel, Vec<usize>)>> = vec![None; kept];
    for (i, kernel) in lowered.into_iter().zip(kernel_args).enumerate() {
        if let Some(k) = new_index[i] {
            slots[k] = Some(kernel);
        }
    }
    let (lowered, kernel_args) = slots.into_iter().flatten().unzip();
    (lowered, kernel_args, steps)
}

/// The chained kernel `lk` (its storages `args`) with the intermediates only it binds held
/// one block at a time (crate::chain::contract), when some qualify: each such parameter is
/// bound to a new scratch storage (`new_scratch`) instead of its tensor's. The storages it
/// no longer binds, and the caller compiles the kernel.
fn contract_chained(
    lk: &mut LoweredKernel,
    args: &mut [usize],
    intermediate: impl Fn(NodeId) -> bool,
    elsewhere: &HashSet<usize>,
    new_scratch: &mut dyn FnMut(DType, u64) -> usize,
) -> Vec<usize> {
    let private: Vec<BufferId> = lk
        .bindings
        .iter()
        .enumerate()
        .filter(|(i, b)| {
            matches!(b, BufferBinding::Tensor(n) if intermediate(*n))
                && !elsewhere.contains(&args[*i])
                && args.iter().filter(|s| **s == args[*i]).count() == 1
        })
        .map(|(i, _)| BufferId::new(i))
        .collect();
    let Some(c) = crate::chain::contract(&lk.kernel, &private, crate::chain::PREFERRED_CHUNKS)
    else {
        return Vec::new();
    };
    let (mut names, mut replaced) = (Vec::new(), Vec::new());
    for b in &c.contracted {
        let decl = &c.kernel.buffers[*b];
        replaced.push(args[b.index()]);
        args[b.index()] = new_scratch(decl.ty, decl.len);
        lk.bindings[b.index()] = BufferBinding::Accumulators;
        names.push(format!("%{}", decl.name));
    }
    lk.notes.push(format!(
        "{} held one block at a time: the parallel loop in {} chunks of consecutive blocks, \
         each chunk's block scratch reused from block to block",
        names.join(", "),
        c.chunks
    ));
    lk.kernel = c.kernel;
    replaced
}

/// The bytes a storage of `spec` allocates: rounded up to its 64-byte alignment, saturating
/// (a length past `u64` bytes is refused by the budget, and by the allocation).
fn spec_bytes(spec: &Spec) -> u64 {
    let (dtype, len, _) = spec;
    len.saturating_mul(dtype.size_bytes() as u64)
        .div_ceil(64)
        .saturating_mul(64)
}

/// Checks what a run holds — every storage of a workspace plus the inputs' and outputs' host
/// arrays — against `budget`.
fn check_budget(
    graph: &Graph,
    plan: &Plan,
    specs: &[Spec],
    holders: &[Vec<String>],
    budget: u64,
) -> Result<(), RunError> {
    let workspace = specs.iter().map(spec_bytes).fold(0u64, u64::saturating_add);
    // The caller's arrays live beside the workspace for the whole call (a `call` copies the
    // inputs in and the outputs out): counted, a run the machine cannot hold is refused here
    // rather than killed by the system halfway (measured: a 6 GB exp, 23.4 GB at its peak).
    let inputs = graph.bytes_of_all(plan.placeholders())?;
    let outputs = graph.bytes_of_all(plan.outputs())?;
    let needed = workspace.saturating_add(inputs).saturating_add(outputs);
    if needed <= budget {
        return Ok(());
    }
    // The storage most of it goes to, named by the tensors it holds.
    let largest = specs
        .iter()
        .zip(holders)
        .max_by_key(|(spec, _)| spec_bytes(spec))
        .map(|(spec, h)| {
            format!(
                "; the largest storage, {} bytes, holds `{}`",
                spec_bytes(spec),
                h.join("`, `")
            )
        })
        .unwrap_or_default();
    Err(RunError::MemoryBudget {
        needed,
        budget,
        detail: format!(
            "a workspace of {workspace} bytes in {} storages: planned buffers at their peak, \
             inputs, state, constants, outputs, scratch; and {inputs} bytes of input arrays and \
             {outputs} of output arrays{largest}",
            specs.len()
        ),
    })
}

/// Where a value read after the run lives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Home {
    /// Index into a workspace's storages.
    pub(crate) storage: usize,
    /// The simplified-graph node (for its layout).
    pub(crate) node: NodeId,
    /// Stored row-major in its node's axes order at the start of its storage, so reading it is
    /// a prefix copy (always so for outputs and assigned values; see the compiler invariants).
    pub(crate) row_major: bool,
}

/// The storages of one run.
struct Workspace {
    storages: Vec<Arc<DeviceBufferStorage>>,
    references: Vec<DeviceBufferReference>,
    /// One slot per storage for the caller's arrays bound in its place during a call.
    host: HostBindings,
    /// Per assign committed by swapping: the array its kernels write, swapped with the state's
    /// value at the commit (so the old value is the next call's spare); made on first use.
    spares: Vec<Option<HostArray>>,
}

/// A computation compiled into native kernels.
pub struct JitExecutable {
    graph: Arc<Graph>,
    plan: Plan,
    compiled: CompiledPlan,
    kernels: Vec<(CompiledKernel, Vec<usize>)>,
    lowered: Vec<LoweredKernel>,
    /// GEMM calls with the storages of A, B and C.
    gemms: Vec<(GemmCall, [usize; 3])>,
    /// Per GEMM call run alone, why the kernel after it is not its epilogue (if one follows).
    gemm_notes: Vec<Option<String>>,
    /// GEMM calls fused with their epilogue kernel: the step, and the indices of the GEMM call
    /// (in `gemms`) and the kernel (in `kernels`).
    epilogues: Vec<(GemmEpilogue, usize, usize)>,
    /// Kernels and GEMM calls in schedule order.
    steps: Vec<Step>,
    /// Storage specs: dtype and length, and the constant data to fill it with.
    specs: Vec<Spec>,
    /// Per storage, the tensors it holds (names joined by "`, `"), for allocation errors.
    holders: Vec<String>,
    /// Per placeholder (in plan order): the storage it is copied into, if it is used.
    inputs: Vec<Option<usize>>,
    /// Per placeholder (in plan order): the axis order it is stored in, when the caller asked
    /// for another than its declared one.
    input_orders: Vec<Option<Axes>>,
    /// Per placeholder (in plan order): its lengths, so a run checks inputs without allocating.
    input_shapes: Vec<Vec<usize>>,
    /// Per output (in plan order): its lengths.
    output_shapes: Vec<Vec<usize>>,
    /// Per placeholder (in plan order): whether kernels read the caller's array in place
    /// ([`Binding`]), else it is copied into its storage.
    bind_inputs: Vec<bool>,
    /// Per output (in plan order): whether kernels write the caller's array in place, else it
    /// is copied out of its storage.
    bind_outputs: Vec<bool>,
    /// Per state read: whether kernels read the state's array in place, else it is copied in.
    bind_state: Vec<bool>,
    /// Per assign: whether kernels write a spare array that the commit swaps into the state,
    /// else the value is copied into the state's array.
    swap_assigns: Vec<bool>,
    /// `(source node, storage)` of every variable or persistent tensor read.
    state_in: Vec<(NodeId, usize)>,
    /// Per output: where its value is.
    outputs: Vec<Home>,
    /// `(source target, value)` per assign, in node order.
    assigns: Vec<(NodeId, Home)>,
    workspaces: Mutex<Vec<Workspace>>,
    /// The storages that hold the buffer plan's buffers and the row scratch.
    planned: Vec<usize>,
    /// The pool parallel kernels run on ([`JitOptions::threads`]).
    pool: Arc<ThreadPool>,
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
            .field("kernels", &self.kernels.len())
            .field("storages", &self.specs.len())
            .finish()
    }
}

/// Most threads a pool may have: a larger count is a mistake, not a machine, and would start
/// that many OS threads.
pub const MAX_THREADS: usize = 1024;

/// The thread count of computations that do not choose one: `WEFT_NUM_THREADS` if it is set to
/// a count in `1..=MAX_THREADS` (anything else is ignored with a warning on stderr, rather than
/// silently), else the machine's available parallelism (1 if unknown). Read once per process.
pub fn default_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        let machine = || std::thread::available_parallelism().map_or(1, |n| n.get());
        let Ok(v) = std::env::var("WEFT_NUM_THREADS") else {
            return machine();
        };
        match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_THREADS).contains(&n) => n,
            _ => {
                eprintln!(
                    "weft: ignoring WEFT_NUM_THREADS={v:?}: not a thread count in 1..={MAX_THREADS}"
                );
                machine()
            }
        }
    })
}

/// The thread count `options` ask for (see [`JitOptions::threads`]).
fn threads_of(options: &JitOptions) -> Result<usize, JitError> {
    match options.threads {
        None => Ok(default_threads()),
        Some(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        Some(requested) => Err(JitError::Threads { requested }),
    }
}

/// The pool of `threads` threads (clamped to `1..=MAX_THREADS`), shared by every computation of
/// that count in the process; made on first use and kept for the process's life (at most one
/// per count).
pub fn pool_of(threads: usize) -> Arc<ThreadPool> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<ThreadPool>>>> = OnceLock::new();
    let threads = threads.clamp(1, MAX_THREADS);
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    Arc::clone(
        pools
            .entry(threads)
            .or_insert_with(|| Arc::new(ThreadPool::new(threads))),
    )
}

/// The pool of computations that do not choose a thread count: [`default_threads`] threads.
pub fn shared_pool() -> Arc<ThreadPool> {
    pool_of(default_threads())
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
        let compiled = compile_plan(
            &restricted,
            &PlanOptions {
                fused: options.fused,
                gemm: options.gemm.map(|g| GemmOptions {
                    threads: pool.threads(),
                    ..g
                }),
                layouts: options
                    .layouts
                    .iter()
                    .filter_map(|(n, order)| {
                        let r = to_restricted.get(*n)?;
                        Some((r, order.clone()))
                    })
                    .collect(),
                reduce_in_memory_min_bytes: options.lower.reduce_in_memory_min_bytes,
                fold_constants: options.fold_constants,
                ..PlanOptions::default()
            },
        )?;
        let to_simplified = |src: NodeId| -> Option<NodeId> {
            to_restricted.get(src).and_then(|r| compiled.map().get(r))
        };
        let g = &compiled.simplified.graph;
        // Source node of every simplified placeholder / variable.
        let mut source_of: HashMap<NodeId, NodeId> = HashMap::new();
        for (id, node) in graph.nodes() {
            if matches!(node.op, Op::Tensor { .. }) {
                if let Some(s) = to_simplified(id) {
                    source_of.entry(s).or_insert(id);
                }
            }
        }
        // One storage per (planned buffer, dtype), one per unplanned stored tensor.
        let mut specs: Vec<Spec> = Vec::new();
        let mut storage_of: HashMap<NodeId, usize> = HashMap::new();
        let mut shared: HashMap<(usize, DType), usize> = HashMap::new();
        let mut state_in = Vec::new();
        let mut state_nodes = Vec::new();
        let mut constants = Vec::new();
        // The tensors each storage holds, to name in an allocation error, by their names in
        // the caller's graph where they have one (simplified nodes are renumbered).
        let mut holders: Vec<Vec<String>> = Vec::new();
        let mut source_label: HashMap<NodeId, String> = HashMap::new();
        for (id, _) in graph.nodes().rev() {
            if let Some(s) = to_simplified(id) {
                source_label.insert(s, graph.node_label(id));
            }
        }
        let label = |n: NodeId| source_label.get(&n).cloned().unwrap_or(g.node_label(n));
        for t in &compiled.buffers.tensors {
            let Planned::Node(n) = t.what else { continue };
            let node = g.node(n);
            let elements = compiled
                .layouts
                .layouts
                .get(&n)
                .map(|l| l.elements as u64)
                .ok_or_else(|| PassError::Internal(format!("{} has no layout", g.node_label(n))))?;
            let s = match t.buffer {
                Some(b) => {
                    let k = *shared.entry((b, node.dtype)).or_insert_with(|| {
                        specs.push((node.dtype, 0, None));
                        holders.push(Vec::new());
                        specs.len() - 1
                    });
                    specs[k].1 = specs[k].1.max(elements);
                    holders[k].push(label(n));
                    k
                }
                None => {
                    // Constants are materialised once the memory budget is checked.
                    if t.role == TensorRole::Constant {
                        constants.push((specs.len(), n));
                    }
                    if t.role == TensorRole::State {
                        let src = source_of.get(&n).copied().ok_or_else(|| {
                            PassError::Internal(format!("{} has no source", g.node_label(n)))
                        })?;
                        state_in.push((src, specs.len()));
                        state_nodes.push(n);
                    }
                    specs.push((node.dtype, elements, None));
                    holders.push(vec![label(n)]);
                    specs.len() - 1
                }
            };
            storage_of.insert(n, s);
        }
        // Every tensor's storage is known before lowering, which adds only scratch: a plan
        // already past the budget is refused before lowering and codegen look at its loops.
        if let Some(budget) = options.max_bytes {
            check_budget(&graph, &plan, &specs, &holders, budget)?;
        }
        let compiler = JitCompiler::with_options(options.codegen)?.with_pool(pool.clone());
        let lower_options = LowerOptions {
            split_span_sums: options.lower.split_span_sums && compiler.span_math(),
            ..options.lower
        };
        let mut lowered = lower_plan(&compiled, &lower_options)?;
        // Each kernel's argument storages; its code is compiled once the steps are decided.
        let mut kernel_args: Vec<Vec<usize>> = Vec::with_capacity(lowered.len());
        let mut row_scratch = Vec::new();
        // A split reduction's partials kernel and combining kernel share one storage.
        let mut partials: HashMap<NodeId, usize> = HashMap::new();
        for lk in &lowered {
            let mut args = Vec::new();
            for b in &lk.bindings {
                match b {
                    BufferBinding::Tensor(n) => {
                        let s = storage_of.get(n).copied().ok_or_else(|| {
                            PassError::Internal(format!("{} has no storage", g.node_label(*n)))
                        })?;
                        args.push(s);
                    }
                    BufferBinding::RowScratch(_) | BufferBinding::Accumulators => {
                        let decl =
                            &lk.kernel.buffers.values().nth(args.len()).ok_or_else(|| {
                                PassError::Internal("scratch binding without a buffer".into())
                            })?;
                        specs.push((decl.ty, decl.len, None));
                        holders.push(vec![format!("row scratch of @{}", lk.kernel.name)]);
                        row_scratch.push(specs.len() - 1);
                        args.push(specs.len() - 1);
                    }
                    BufferBinding::Partials(n) => {
                        if let Some(s) = partials.get(n) {
                            args.push(*s);
                            continue;
                        }
                        let decl =
                            &lk.kernel.buffers.values().nth(args.len()).ok_or_else(|| {
                                PassError::Internal("partials binding without a buffer".into())
                            })?;
                        specs.push((decl.ty, decl.len, None));
                        holders.push(vec![format!("partials of {}", g.node_label(*n))]);
                        row_scratch.push(specs.len() - 1);
                        partials.insert(*n, specs.len() - 1);
                        args.push(specs.len() - 1);
                    }
                }
            }
            kernel_args.push(args);
        }
        // GEMM calls over the storages of their tensors, and every step in schedule order.
        let mut gemms = Vec::new();
        let mut steps = Vec::new();
        let mut next_kernel = 0;
        for (p, call) in compiled.kernels.iter().zip(&compiled.gemms) {
            match call {
                Some((spec, tensors)) => {
                    let mut args = [0; 3];
                    for (a, t) in args.iter_mut().zip(tensors) {
                        *a = storage_of.get(t).copied().ok_or_else(|| {
                            PassError::Internal(format!("{} has no storage", g.node_label(*t)))
                        })?;
                    }
                    let call = GemmCall::new(spec.clone()).map_err(RunError::from)?;
                    steps.push(Step::Gemm(gemms.len()));
                    gemms.push((call, args));
                }
                None => {
                    while lowered.get(next_kernel).is_some_and(|k| k.group == p.group) {
                        steps.push(Step::Kernel(next_kernel));
                        next_kernel += 1;
                    }
                }
            }
        }
        if next_kernel != lowered.len() {
            return Err(PassError::Internal("kernels out of schedule order".into()).into());
        }
        // A GEMM call and the kernel right after it as one step, where that computes the same.
        let mut gemm_notes = vec![None; gemms.len()];
        let mut epilogues = Vec::new();
        let mut fused_steps = Vec::with_capacity(steps.len());
        let mut rest = steps.iter().copied().peekable();
        while let Some(step) = rest.next() {
            let (Step::Gemm(gi), Some(&Step::Kernel(ki))) = (step, rest.peek()) else {
                fused_steps.push(step);
                continue;
            };
            if !options.epilogue {
                fused_steps.push(step);
                continue;
            }
            let ((call, gargs), kargs) = (&gemms[gi], &kernel_args[ki]);
            let spec = call.spec();
            // Column blocks: the kernel strip-mined so that an iteration is one block.
            let strips = match spec.split {
                SplitDim::Rows => None,
                SplitDim::Columns => match strip_columns(&lowered[ki].kernel, spec.block as u64) {
                    Ok(k) => Some(k),
                    Err(why) => {
                        gemm_notes[gi] = Some(format!("C is cut into column blocks, and {why}"));
                        fused_steps.push(step);
                        continue;
                    }
                },
            };
            let candidate = KernelSignature::of(strips.as_ref().unwrap_or(&lowered[ki].kernel));
            match plan_epilogue(spec, *gargs, &candidate, kargs) {
                Ok(fused) => {
                    if let Some(k) = strips {
                        lowered[ki].kernel = k;
                        lowered[ki].notes.push(format!(
                            "columns in strips of {}, one per column block of the GEMM before \
                             it, the strips parallel",
                            spec.block
                        ));
                    }
                    rest.next();
                    fused_steps.push(Step::GemmThen(epilogues.len()));
                    epilogues.push((fused, gi, ki));
                }
                Err(why) => {
                    gemm_notes[gi] = Some(why);
                    fused_steps.push(step);
                }
            }
        }
        let (steps, chained) = if options.chain {
            chain_steps(&fused_steps, &mut lowered, &mut kernel_args)
        } else {
            (fused_steps, Vec::new())
        };
        if !chained.is_empty() {
            // What each step binds, so a chained kernel's intermediates can be told apart.
            let mut bound: Vec<Vec<usize>> = Vec::with_capacity(steps.len());
            for step in &steps {
                bound.push(match *step {
                    Step::Kernel(i) => kernel_args[i].clone(),
                    Step::Gemm(i) => gemms[i].1.to_vec(),
                    Step::GemmThen(e) => {
                        let (_, gi, ki) = &epilogues[e];
                        let mut b = gemms[*gi].1.to_vec();
                        b.extend(&kernel_args[*ki]);
                        b
                    }
                });
            }
            let scratch: HashSet<NodeId> = compiled
                .buffers
                .tensors
                .iter()
                .filter(|t| t.role == TensorRole::Scratch)
                .filter_map(|t| match t.what {
                    Planned::Node(n) => Some(n),
                    Planned::RowScratch(_) => None,
                })
                .collect();
            for &i in &chained {
                let k = steps
                    .iter()
                    .position(|s| matches!(s, Step::Kernel(j) if *j == i))
                    .ok_or_else(|| PassError::Internal("a chained kernel has no step".into()))?;
                let elsewhere: HashSet<usize> = bound
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != k)
                    .flat_map(|(_, b)| b.iter().copied())
                    .collect();
                let holder = format!("block scratch of @{}", lowered[i].kernel.name);
                let mut new_scratch = |ty: DType, len: u64| {
                    specs.push((ty, len, None));
                    holders.push(vec![holder.clone()]);
                    row_scratch.push(specs.len() - 1);
                    specs.len() - 1
                };
                let replaced = contract_chained(
                    &mut lowered[i],
                    &mut kernel_args[i],
                    |n| scratch.contains(&n),
                    &elsewhere,
                    &mut new_scratch,
                );
                // A storage no step binds any more, holding only intermediates, is not
                // allocated: softmax's exponentials no longer take a tensor's memory.
                for s in replaced {
                    let only_scratch = storage_of
                        .iter()
                        .all(|(n, at)| *at != s || scratch.contains(n));
                    if only_scratch {
                        specs[s].1 = 0;
                    }
                }
            }
        }
        // Every storage is known: a plan past the budget is refused before any code is
        // generated (a gradient through a huge pool's fold levels is seconds of codegen).
        if let Some(budget) = options.max_bytes {
            check_budget(&graph, &plan, &specs, &holders, budget)?;
        }
        // Only the kernels a step runs are kept (a chained kernel holds the ones after it),
        // and each is compiled once, in a module of its own, all at once on the
        // computation's threads.
        let (mut lowered, kernel_args, steps) =
            keep_scheduled(lowered, kernel_args, steps, &mut epilogues);
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
        let kernels: Vec<(CompiledKernel, Vec<usize>)> = codes
            .into_iter()
            .zip(kernel_args)
            .map(|(compiled, args)| compiled.map(|c| (c, args)))
            .collect::<Result<_, _>>()?;
        for (k, n) in constants {
            specs[k].2 = Some(stored_value(g, n)?.data().clone());
        }
        let home = |n: NodeId| -> Result<Home, PassError> {
            let storage = storage_of
                .get(&n)
                .copied()
                .ok_or_else(|| PassError::Internal(format!("{} is not stored", g.node_label(n))))?;
            let row_major = match (
                compiled.layouts.layouts.get(&n),
                g.shape_of(&g.node(n).axes),
            ) {
                (Some(layout), Ok(shape)) => {
                    let Some(strides) = weft_ir::size::row_major_strides(&shape) else {
                        return Err(PassError::Internal(
                            "stride overflow past a verified size".into(),
                        ));
                    };
                    layout.strides.len() == strides.len()
                        && layout
                            .strides
                            .iter()
                            .zip(&strides)
                            .all(|(a, b)| *a == *b as i64)
                }
                _ => false,
            };
            Ok(Home {
                storage,
                node: n,
                row_major,
            })
        };
        let shapes = |nodes: &[NodeId]| -> Result<Vec<Vec<usize>>, RunError> {
            nodes
                .iter()
                .map(|n| Ok(graph.shape_of(&graph.node(*n).axes)?))
                .collect()
        };
        let input_shapes = shapes(plan.placeholders())?;
        let output_shapes = shapes(plan.outputs())?;
        let inputs: Vec<Option<usize>> = plan
            .placeholders()
            .iter()
            .map(|p| to_simplified(*p).and_then(|s| storage_of.get(&s).copied()))
            .collect();
        let input_orders = plan
            .placeholders()
            .iter()
            .map(|p| {
                let requested = options.layouts.iter().find(|(n, _)| n == p);
                match requested {
                    Some((_, order)) if graph.node(*p).axes.iter().ne(order.iter()) => {
                        Axes::new(order.iter().copied()).map(Some).map_err(|e| {
                            PassError::Internal(format!("layout of {}: {e}", graph.node_label(*p)))
                        })
                    }
                    _ => Ok(None),
                }
            })
            .collect::<Result<Vec<_>, PassError>>()?;
        let outputs = plan
            .outputs()
            .iter()
            .map(|o| {
                to_simplified(*o)
                    .ok_or_else(|| PassError::Internal(format!("output {o} was removed")))
                    .and_then(home)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut assigns = Vec::new();
        for (id, node) in g.nodes() {
            if let Op::Assign { target, .. } = node.op {
                let src = source_of.get(&target).copied().ok_or_else(|| {
                    PassError::Internal(format!("assign target {} has no source", target))
                })?;
                let mut h = home(id)?;
                // Committed in place only if stored exactly as the state holds it.
                h.row_major &= graph.node(src).axes == node.axes;
                assigns.push((src, h));
            }
        }
        let gemm_writes: Vec<usize> = gemms.iter().map(|(_, args)| args[2]).collect();
        let binding = Binding {
            specs: &specs,
            kernels: &kernels,
            gemm_writes: &gemm_writes,
            state_in: &state_in,
            outputs: &outputs,
            assigns: &assigns,
        };
        let bind_inputs = plan
            .placeholders()
            .iter()
            .enumerate()
            .map(|(i, p)| {
                // An input that is not stored (unused, or folded away) has no home.
                let home = to_simplified(*p).and_then(|n| home(n).ok());
                binding.input(&inputs, i, home, input_orders[i].is_none())
            })
            .collect();
        let bind_outputs = (0..outputs.len())
            .map(|j| binding.output(&inputs, j, plan.outputs()[j], &graph))
            .collect();
        let bind_state = state_nodes
            .iter()
            .enumerate()
            .map(|(k, n)| binding.state(&inputs, k, home(*n).ok(), &graph))
            .collect();
        let swap_assigns = (0..assigns.len())
            .map(|k| binding.assign(&inputs, k, &graph))
            .collect();
        let exe = JitExecutable {
            graph,
            plan,
            compiled,
            kernels,
            lowered,
            gemms,
            gemm_notes,
            epilogues,
            steps,
            specs,
            holders: holders.into_iter().map(|h| h.join("`, `")).collect(),
            inputs,
            input_orders,
            input_shapes,
            output_shapes,
            bind_inputs,
            bind_outputs,
            bind_state,
            swap_assigns,
            state_in,
            outputs,
            assigns,
            workspaces: Mutex::new(Vec::new()),
            planned: shared.values().copied().chain(row_scratch).collect(),
            pool,
            span_math: compiler.span_math(),
            native_transpose: compiler.native_transpose(),
            codegen: compiler.options(),
        };
        let dump = options
            .dump
            .clone()
            .or_else(|| std::env::var_os("WEFT_DUMP").map(std::path::PathBuf::from));
        if let Some(dir) = dump {
            let files = crate::dump::dump_stages(&exe.graph, &exe)?;
            crate::dump::write_dump(&crate::dump::next_dump_dir(&dir), &files, |_| true)?;
        }
        Ok(exe)
    }

    /// Threads that run its parallel kernels ([`JitOptions::threads`]).
    pub fn threads(&self) -> usize {
        self.pool.threads()
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
            .planned
            .iter()
            .map(|&k| spec_bytes(&self.specs[k]))
            .sum();
        bytes as usize
    }

    /// The loop-IR kernels, in schedule order.
    pub fn lowered(&self) -> &[LoweredKernel] {
        &self.lowered
    }

    /// Every step of a run, in schedule order: JIT kernels and GEMM calls.
    pub fn schedule(&self) -> Vec<ScheduledStep<'_>> {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Kernel(i) => self.lowered.get(*i).map(ScheduledStep::Kernel),
                Step::Gemm(i) => self.gemms.get(*i).map(|(c, _)| {
                    let note = self.gemm_notes.get(*i).and_then(|n| n.as_deref());
                    ScheduledStep::Gemm(c, note)
                }),
                Step::GemmThen(i) => {
                    let (fused, _, k) = self.epilogues.get(*i)?;
                    Some(ScheduledStep::GemmThen(fused, self.lowered.get(*k)?))
                }
            })
            .collect()
    }

    /// One line per step of a run, in schedule order: kernels, GEMM calls, and GEMM calls
    /// with their epilogue kernel as one step (the dump's `steps` stage).
    pub fn steps_display(&self) -> String {
        let mut s = String::new();
        for (i, step) in self.schedule().iter().enumerate() {
            let line = match step {
                ScheduledStep::Kernel(lk) => format!("kernel @{}", lk.kernel.name),
                ScheduledStep::Gemm(call, note) => {
                    let mut l = call.spec().display();
                    if let Some(why) = note {
                        l += &format!("; the next kernel runs after it: {why}");
                    }
                    l
                }
                ScheduledStep::GemmThen(fused, lk) => format!(
                    "{}; then epilogue kernel @{} over the same {} blocks",
                    fused.gemm().spec().display(),
                    lk.kernel.name,
                    fused.gemm().spec().split.noun()
                ),
            };
            s += &format!("step {i}: {line}\n");
        }
        s
    }

    fn workspace(&self) -> Result<Workspace, RunError> {
        if let Some(w) = self
            .workspaces
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
        {
            return Ok(w);
        }
        let mut storages = Vec::new();
        let mut references = Vec::new();
        for (i, (dtype, len, data)) in self.specs.iter().enumerate() {
            let s = DeviceBufferStorage::new(*dtype, *len).map_err(|e| match e {
                RuntimeError::AllocationFailed { .. } => RunError::Alloc {
                    tensor: self.holders[i].clone(),
                    source: HostError::Alloc {
                        bytes: spec_bytes(&self.specs[i]) as usize,
                    },
                },
                e => e.into(),
            })?;
            if let Some(d) = data {
                copy_in(&s, d)?;
            }
            references.push(DeviceBufferReference::to_storage(
                format!("s{i}"),
                Arc::clone(&s),
            ));
            storages.push(s);
        }
        Ok(Workspace {
            spares: vec![None; self.assigns.len()],
            host: HostBindings::new(storages.len()),
            storages,
            references,
        })
    }

    fn read(&self, storages: &[Arc<DeviceBufferStorage>], h: Home) -> Result<HostArray, RunError> {
        let g = &self.compiled.simplified.graph;
        let node = g.node(h.node);
        let layout =
            self.compiled
                .layouts
                .layouts
                .get(&h.node)
                .ok_or_else(|| RunError::Malformed {
                    node: g.node_label(h.node),
                    op: node.op.name(),
                    message: "no layout".into(),
                })?;
        let shape = g.shape_of(&node.axes)?;
        let s = &storages[h.storage];
        // Reading copies the storage to the host (and, when not row-major, gathers through a
        // position per element): refuse sizes the system would not give, rather than abort.
        let positions =
            (layout.elements as u64).saturating_mul(std::mem::size_of::<usize>() as u64);
        let bytes = spec_bytes(&self.specs[h.storage])
            .saturating_mul(2)
            .saturating_add(positions);
        weft_ir::host::check_alloc(usize::try_from(bytes).unwrap_or(usize::MAX)).map_err(
            |source| RunError::Alloc {
                tensor: self.holders[h.storage].clone(),
                source,
            },
        )?;
        let row_major: Option<Vec<i64>> = weft_ir::size::row_major_strides(&shape)
            .and_then(|s| s.into_iter().map(weft_ir::size::to_i64).collect());
        let row_major = row_major.ok_or_else(|| RunError::Malformed {
            node: g.node_label(h.node),
            op: node.op.name(),
            message: "row-major strides past i64".into(),
        })?;
        if layout.strides == row_major {
            // Row-major at the start of its storage: a prefix copy, no index arithmetic.
            fn prefix<T: Copy>(mut v: Vec<T>, n: usize) -> Vec<T> {
                v.truncate(n);
                v
            }
            let n = layout.elements;
            let data = match node.dtype {
                DType::F32 => ArrayData::F32(prefix(s.to_vec::<f32>()?, n)),
                DType::F64 => ArrayData::F64(prefix(s.to_vec::<f64>()?, n)),
                DType::I32 => ArrayData::I32(prefix(s.to_vec::<i32>()?, n)),
                DType::I64 => ArrayData::I64(prefix(s.to_vec::<i64>()?, n)),
                DType::Bool => ArrayData::Bool(prefix(s.to_vec::<bool>()?, n)),
            };
            return Ok(HostArray::new(node.axes.clone(), shape, data)?);
        }
        // Element k (row-major over the node's axes) is at Σ index·stride in storage.
        let mut positions = Vec::with_capacity(layout.elements);
        let mut idx = vec![0usize; shape.len()];
        for _ in 0..layout.elements {
            let p: i64 = idx
                .iter()
                .zip(&layout.strides)
                .map(|(i, s)| *i as i64 * s)
                .sum();
            positions.push(p as usize);
            for d in (0..shape.len()).rev() {
                idx[d] += 1;
                if idx[d] < shape[d] {
                    break;
                }
                idx[d] = 0;
            }
        }
        fn pick<T: Copy>(v: Vec<T>, p: &[usize]) -> Vec<T> {
            p.iter().map(|i| v[*i]).collect()
        }
        let data = match node.dtype {
            DType::F32 => ArrayData::F32(pick(s.to_vec::<f32>()?, &positions)),
            DType::F64 => ArrayData::F64(pick(s.to_vec::<f64>()?, &positions)),
            DType::I32 => ArrayData::I32(pick(s.to_vec::<i32>()?, &positions)),
            DType::I64 => ArrayData::I64(pick(s.to_vec::<i64>()?, &positions)),
            DType::Bool => ArrayData::Bool(pick(s.to_vec::<bool>()?, &positions)),
        };
        Ok(HostArray::new(node.axes.clone(), shape, data)?)
    }

    /// Checks `inputs` against the placeholders and copies them into `w`'s storages.
    fn load_inputs(&self, w: &Workspace, inputs: &dyn Inputs) -> Result<(), RunError> {
        self.check_inputs(inputs)?;
        for (i, s) in self.inputs.iter().enumerate() {
            if let Some(s) = s {
                self.copy_input(&w.storages[*s], i, inputs.input(i))?;
            }
        }
        Ok(())
    }

    /// Checks `inputs` against the placeholders: count, axes, lengths, dtype. Allocates nothing
    /// unless it fails.
    /// Every input is exactly what its placeholder takes: its axes in order and from this
    /// graph's table (`Axes::identical_to`), its lengths and dtype.
    fn check_inputs(&self, inputs: &dyn Inputs) -> Result<(), RunError> {
        let g = &*self.graph;
        if inputs.count() != self.plan.placeholders().len() {
            return Err(RunError::InputCount {
                expected: self.plan.placeholders().len(),
                got: inputs.count(),
            });
        }
        for (i, (p, shape)) in self
            .plan
            .placeholders()
            .iter()
            .zip(&self.input_shapes)
            .enumerate()
        {
            let input = inputs.input(i);
            let node = g.node(*p);
            if !input.axes().identical_to(&node.axes)
                || input.shape() != &shape[..]
                || input.dtype() != node.dtype
            {
                return Err(RunError::Input {
                    placeholder: g.node_label(*p),
                    message: format!(
                        "expected axes {} with shape {shape:?} and dtype {}",
                        g.axes_name(&node.axes),
                        node.dtype
                    ),
                });
            }
        }
        Ok(())
    }

    /// Copies input `i` into storage `s`, in the layout the caller asked for if another than
    /// its declared one (a transposed copy, which allocates).
    fn copy_input(
        &self,
        s: &DeviceBufferStorage,
        i: usize,
        input: HostView<'_>,
    ) -> Result<(), RunError> {
        let Some(order) = &self.input_orders[i] else {
            return Ok(copy_in_ref(s, input.data())?);
        };
        let g = &*self.graph;
        let p = self.plan.placeholders()[i];
        let permuted = input
            .to_owned_array()
            .with_axes_order(order)
            .ok_or_else(|| RunError::Input {
                placeholder: g.node_label(p),
                message: format!("cannot be put in order {}", g.axes_name(order)),
            })?;
        Ok(copy_in(s, permuted.data())?)
    }

    /// Copies the variables and persistent tensors the run reads from `state` into `storages`.
    fn load_state(
        &self,
        storages: &[Arc<DeviceBufferStorage>],
        state: &State,
    ) -> Result<(), RunError> {
        let g = &*self.graph;
        for (src, s) in &self.state_in {
            let v = state.get(*src).ok_or_else(|| RunError::State {
                tensor: g.node_label(*src),
                message: "has no value in the state".into(),
            })?;
            copy_in(&storages[*s], v.data())?;
        }
        Ok(())
    }

    /// Checks that `outputs` are one array per output, each with its output node's axes in
    /// order, lengths and dtype. Allocates nothing unless it fails.
    fn check_outputs(&self, outputs: &[HostArray]) -> Result<(), RunError> {
        let g = &*self.graph;
        if outputs.len() != self.plan.outputs().len() {
            return Err(RunError::OutputCount {
                expected: self.plan.outputs().len(),
                got: outputs.len(),
            });
        }
        for ((o, array), shape) in self
            .plan
            .outputs()
            .iter()
            .zip(outputs)
            .zip(&self.output_shapes)
        {
            let node = g.node(*o);
            if !array.axes().identical_to(&node.axes)
                || array.shape() != &shape[..]
                || array.dtype() != node.dtype
            {
                return Err(RunError::Output {
                    output: g.node_label(*o),
                    message: format!(
                        "expected axes {} with shape {shape:?} and dtype {}",
                        g.axes_name(&node.axes),
                        node.dtype
                    ),
                });
            }
        }
        Ok(())
    }

    /// Runs over workspace `w` writing the outputs into `outputs` (checked) and committing
    /// assigned values to `state` in place. Inputs and outputs that can be are bound in place of
    /// their storages (crate::io_binding): kernels read and write the caller's arrays; the rest
    /// are copied. Allocates nothing in steady state.
    fn run_into_in(
        &self,
        w: &mut Workspace,
        inputs: &dyn Inputs,
        outputs: &mut [HostArray],
        state: &mut StateView<'_>,
    ) -> Result<(), RunError> {
        self.check_outputs(outputs)?;
        self.check_inputs(inputs)?;
        let Workspace {
            storages,
            references,
            host,
            spares,
        } = w;
        if spares.iter().any(Option::is_none) {
            state.read(|st| self.make_spares(spares, st))?;
        }
        // Kernels read the state in place, so the state is held (shared) while they run.
        let mut run = |st: Option<&State>| -> Result<(), RunError> {
            let mut scope = host.scope();
            for (i, slot) in self.inputs.iter().enumerate() {
                match slot {
                    Some(s) if self.bind_inputs[i] => bind_input(&mut scope, *s, inputs.input(i))?,
                    Some(s) => self.copy_input(&storages[*s], i, inputs.input(i))?,
                    None => {}
                }
            }
            if let Some(st) = st {
                self.bind_state(&mut scope, storages, st)?;
            }
            for ((out, h), bind) in outputs
                .iter_mut()
                .zip(&self.outputs)
                .zip(&self.bind_outputs)
            {
                if *bind {
                    bind_output(&mut scope, h.storage, out)?;
                }
            }
            for ((_, h), spare) in self.assigns.iter().zip(spares.iter_mut()) {
                if let Some(spare) = spare {
                    bind_output(&mut scope, h.storage, spare)?;
                }
            }
            self.execute_on(references, Some(&scope))
        };
        if self.state_in.is_empty() {
            run(None)?;
        } else {
            state.read(|st| run(Some(st)))?;
        }
        for ((out, h), bind) in outputs
            .iter_mut()
            .zip(&self.outputs)
            .zip(&self.bind_outputs)
        {
            if *bind {
                continue;
            }
            if let Some(spare) = self.spare_of(h.storage, spares) {
                copy_array(out, spare)?;
            } else if h.row_major {
                copy_out(&storages[h.storage], out)?;
            } else {
                // Not expected (outputs are stored row-major), but correct: gather, allocating.
                *out = self.read(storages, *h)?;
            }
        }
        if self.assigns.is_empty() {
            return Ok(());
        }
        if self.assigns.iter().all(|(_, h)| h.row_major) {
            return state.commit(|state| self.commit_assigns_in_place(storages, spares, state));
        }
        let assigned = self
            .assigns
            .iter()
            .zip(spares.iter())
            .map(|((t, h), spare)| match spare {
                Some(v) => Ok((*t, v.clone())),
                None => Ok((*t, self.read(storages, *h)?)),
            })
            .collect::<Result<Vec<_>, RunError>>()?;
        state.commit(|s| s.set_all(&self.graph, assigned))
    }

    /// The spare array written in place of `storage` this call, if an assign swaps it.
    fn spare_of<'s>(
        &self,
        storage: usize,
        spares: &'s [Option<HostArray>],
    ) -> Option<&'s HostArray> {
        self.assigns
            .iter()
            .zip(spares)
            .find(|((_, h), spare)| h.storage == storage && spare.is_some())
            .and_then(|(_, spare)| spare.as_ref())
    }

    /// Binds the state values the kernels read (where `bind_state` allows) and copies the
    /// rest in.
    fn bind_state<'a>(
        &self,
        scope: &mut BindScope<'_, 'a>,
        storages: &[Arc<DeviceBufferStorage>],
        state: &'a State,
    ) -> Result<(), RunError> {
        for ((src, s), bind) in self.state_in.iter().zip(&self.bind_state) {
            let v = state.get(*src).ok_or_else(|| RunError::State {
                tensor: self.graph.node_label(*src),
                message: "has no value in the state".into(),
            })?;
            if *bind {
                bind_input(scope, *s, v.view())?;
            } else {
                copy_in(&storages[*s], v.data())?;
            }
        }
        Ok(())
    }

    /// Makes the missing spare arrays of assigns committed by swapping: each with its target's
    /// axes, lengths and dtype (once per workspace).
    fn make_spares(&self, spares: &mut [Option<HostArray>], state: &State) -> Result<(), RunError> {
        for ((t, _), (spare, swap)) in self
            .assigns
            .iter()
            .zip(spares.iter_mut().zip(&self.swap_assigns))
        {
            if !*swap || spare.is_some() {
                continue;
            }
            let v = state.get(*t).ok_or_else(|| RunError::State {
                tensor: self.graph.node_label(*t),
                message: "has no value in the state".into(),
            })?;
            let data = weft_runtime::zeroed_host_data(v.dtype(), v.len()).map_err(|source| {
                RunError::Alloc {
                    tensor: self.graph.node_label(*t),
                    source,
                }
            })?;
            *spare = Some(HostArray::new(v.axes().clone(), v.shape().to_vec(), data)?);
        }
        Ok(())
    }

    /// Copies every assigned value (each row-major at the start of its storage) into the
    /// state's arrays in place, checking every target before writing any, so a failed run
    /// changes nothing. Allocates nothing unless it fails.
    fn commit_assigns_in_place(
        &self,
        storages: &[Arc<DeviceBufferStorage>],
        spares: &mut [Option<HostArray>],
        state: &mut State,
    ) -> Result<(), RunError> {
        // After the checks no copy or swap can fail: types and lengths match and this run owns
        // its workspace.
        for ((t, h), spare) in self.assigns.iter().zip(spares.iter()) {
            let target = state.get(*t);
            let fits = match spare {
                Some(v) => target.is_some_and(|old| old.same_shape(v)),
                None => {
                    let storage = &storages[h.storage];
                    target.is_some_and(|v| {
                        v.dtype() == storage.dtype() && v.len() as u64 <= storage.len()
                    })
                }
            };
            if !fits {
                return Err(RunError::State {
                    tensor: self.graph.node_label(*t),
                    message: "the assigned value does not fit the state".into(),
                });
            }
        }
        for ((t, h), spare) in self.assigns.iter().zip(spares.iter_mut()) {
            match spare {
                // Double buffering: the new value goes in, the old one becomes the spare.
                Some(v) => state.swap(*t, v)?,
                None => commit_in_place(&storages[h.storage], state, *t)?,
            }
        }
        Ok(())
    }
}

impl JitExecutable {
    /// Runs the kernels, in schedule order, over a workspace whose inputs are loaded.
    fn execute(&self, w: &Workspace) -> Result<(), RunError> {
        self.execute_on(&w.references, None)
    }

    /// Runs the kernels, in schedule order, over `references`, with the slots `host` binds
    /// read or written in the caller's arrays instead.
    fn execute_on(
        &self,
        references: &[DeviceBufferReference],
        host: Option<&BindScope<'_, '_>>,
    ) -> Result<(), RunError> {
        let pool = &*self.pool;
        // Kernels bind the workspace by index: no argument table is built, and a kernel of up
        // to `STACK_TABLE` buffers allocates nothing.
        for step in &self.steps {
            let (k, args) = match step {
                Step::Kernel(i) => &self.kernels[*i],
                Step::Gemm(i) => {
                    let (call, args) = &self.gemms[*i];
                    let pool = (pool.threads() > 1).then_some(pool);
                    call.call_bound(pool, references, host, *args)?;
                    continue;
                }
                Step::GemmThen(i) => {
                    let (fused, _, k) = &self.epilogues[*i];
                    let pool = (pool.threads() > 1).then_some(pool);
                    fused.call_bound(&self.kernels[*k].0, pool, references, host)?;
                    continue;
                }
            };
            let parallel = k.signature().parallel_extent.is_some() && pool.threads() > 1;
            let pool = parallel.then_some(pool);
            match host {
                Some(scope) => k.call_bound(pool, references, scope, args)?,
                None => k.call_indexed(pool, references, args)?,
            }
        }
        Ok(())
    }

    /// Loads `inputs` and the state into device buffers and keeps them there, so the kernels
    /// can be run again and again over resident data ([`ResidentRun::execute`]): what a
    /// benchmark of kernel time (fused against unfused) measures, without host copies.
    pub fn resident(
        &self,
        inputs: &[HostArray],
        state: &State,
    ) -> Result<ResidentRun<'_>, RunError> {
        let w = self.workspace()?;
        let run = ResidentRun {
            exe: self,
            workspace: Some(w),
        };
        let w = run
            .workspace
            .as_ref()
            .ok_or_else(|| self.malformed("no workspace"))?;
        self.load_inputs(w, &inputs)?;
        self.load_state(&w.storages, state)?;
        self.execute(w)?;
        Ok(run)
    }

    /// How a call moves each input, output, state value read and assigned value: bound in place
    /// of its storage (zero-copy, crate::io_binding) or copied — the last section of
    /// `weft explain`.
    pub fn binding_report(&self) -> String {
        let g = &*self.graph;
        let how = |bound: bool, yes: &'static str, no: &'static str| if bound { yes } else { no };
        let mut s = String::from("\n# calls: how each array moves\n");
        for (i, p) in self.plan.placeholders().iter().enumerate() {
            let what = match (self.inputs[i], self.bind_inputs[i]) {
                (None, _) => "unused",
                (Some(_), bound) => how(bound, "read in place", "copied in"),
            };
            s += &format!("input  {:<16} {what}\n", g.node_label(*p));
        }
        for ((o, h), bound) in self
            .plan
            .outputs()
            .iter()
            .zip(&self.outputs)
            .zip(&self.bind_outputs)
        {
            let assigned = self
                .assigns
                .iter()
                .zip(&self.swap_assigns)
                .any(|((_, a), swap)| *swap && a.storage == h.storage);
            let what = match (*bound, assigned) {
                (true, _) => "written in place",
                (false, true) => "copied from the assigned value (one value, two owners)",
                (false, false) => "copied out",
            };
            s += &format!("output {:<16} {what}\n", g.node_label(*o));
        }
        for ((src, _), bound) in self.state_in.iter().zip(&self.bind_state) {
            let what = how(*bound, "read in place", "copied in");
            s += &format!("state  {:<16} {what}\n", g.node_label(*src));
        }
        for ((t, _), swap) in self.assigns.iter().zip(&self.swap_assigns) {
            let what = how(*swap, "committed by swapping", "copied into the state");
            s += &format!("assign {:<16} {what}\n", g.node_label(*t));
        }
        s
    }

    /// One zeroed array per output, with its axes (in order) and lengths.
    fn fresh_outputs(&self) -> Result<Vec<HostArray>, RunError> {
        let g = &*self.graph;
        self.plan
            .outputs()
            .iter()
            .zip(&self.output_shapes)
            .map(|(o, shape)| {
                let node = g.node(*o);
                let n = weft_ir::size::element_count(shape).ok_or_else(|| RunError::Malformed {
                    node: g.node_label(*o),
                    op: node.op.name(),
                    message: "no element count".into(),
                })?;
                let data = weft_runtime::zeroed_host_data(node.dtype, n).map_err(|source| {
                    RunError::Alloc {
                        tensor: g.node_label(*o),
                        source,
                    }
                })?;
                Ok(HostArray::new(node.axes.clone(), shape.clone(), data)?)
            })
            .collect()
    }

    fn malformed(&self, message: &str) -> RunError {
        RunError::Malformed {
            node: "executable".into(),
            op: "run",
            message: message.into(),
        }
    }
}

/// Device buffers of one executable loaded with one set of inputs; see
/// [`JitExecutable::resident`]. The buffers return to the executable's pool when dropped.
pub struct ResidentRun<'e> {
    exe: &'e JitExecutable,
    workspace: Option<Workspace>,
}

impl ResidentRun<'_> {
    /// Runs every kernel once more over the resident buffers (state is not committed).
    pub fn execute(&mut self) -> Result<(), RunError> {
        let w = self
            .workspace
            .as_ref()
            .ok_or_else(|| self.exe.malformed("no workspace"))?;
        self.exe.execute(w)
    }

    /// The outputs as they stand in the buffers.
    pub fn outputs(&self) -> Result<Vec<HostArray>, RunError> {
        let w = self
            .workspace
            .as_ref()
            .ok_or_else(|| self.exe.malformed("no workspace"))?;
        self.exe
            .outputs
            .iter()
            .map(|h| self.exe.read(&w.storages, *h))
            .collect()
    }
}

impl Drop for ResidentRun<'_> {
    fn drop(&mut self) {
        if let Some(w) = self.workspace.take() {
            self.exe
                .workspaces
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(w);
        }
    }
}

/// Copies the first `out.len()` elements of `s` into `out`.
fn copy_out(s: &DeviceBufferStorage, out: &mut HostArray) -> Result<(), RunError> {
    match out.dtype() {
        DType::F32 => s.copy_prefix_to_slice(out.as_mut_slice::<f32>()?)?,
        DType::F64 => s.copy_prefix_to_slice(out.as_mut_slice::<f64>()?)?,
        DType::I32 => s.copy_prefix_to_slice(out.as_mut_slice::<i32>()?)?,
        DType::I64 => s.copy_prefix_to_slice(out.as_mut_slice::<i64>()?)?,
        DType::Bool => s.copy_prefix_to_slice(out.as_mut_slice::<bool>()?)?,
    }
    Ok(())
}

/// Copies the value assigned to `target` (row-major at the start of `s`) into the state.
fn commit_in_place(
    s: &DeviceBufferStorage,
    state: &mut State,
    target: NodeId,
) -> Result<(), RunError> {
    fn one<T: weft_runtime::Element + weft_ir::Element>(
        s: &DeviceBufferStorage,
        state: &mut State,
        target: NodeId,
    ) -> Result<(), RunError> {
        match state.elements_mut::<T>(target) {
            Some(out) => Ok(s.copy_prefix_to_slice(out)?),
            None => Err(RunError::State {
                tensor: format!("{target}"),
                message: "the assigned value does not fit the state".into(),
            }),
        }
    }
    match s.dtype() {
        DType::F32 => one::<f32>(s, state, target),
        DType::F64 => one::<f64>(s, state, target),
        DType::I32 => one::<i32>(s, state, target),
        DType::I64 => one::<i64>(s, state, target),
        DType::Bool => one::<bool>(s, state, target),
    }
}

fn copy_in_ref(s: &DeviceBufferStorage, d: DataRef<'_>) -> Result<(), RuntimeError> {
    match d {
        DataRef::F32(v) => s.copy_from_slice(v),
        DataRef::F64(v) => s.copy_from_slice(v),
        DataRef::I32(v) => s.copy_from_slice(v),
        DataRef::I64(v) => s.copy_from_slice(v),
        DataRef::Bool(v) => s.copy_from_slice(v),
    }
}

fn copy_in(s: &DeviceBufferStorage, d: &ArrayData) -> Result<(), RuntimeError> {
    match d {
        ArrayData::F32(v) => s.copy_from_slice(v),
        ArrayData::F64(v) => s.copy_from_slice(v),
        ArrayData::I32(v) => s.copy_from_slice(v),
        ArrayData::I64(v) => s.copy_from_slice(v),
        ArrayData::Bool(v) => s.copy_from_slice(v),
    }
}

impl Executable for JitExecutable {
    /// `run_into_in` checks outputs then inputs first (`check_outputs`, `check_inputs`).
    fn checks_arrays_exactly(&self) -> bool {
        true
    }

    fn outputs(&self) -> &[NodeId] {
        self.plan.outputs()
    }

    fn placeholders(&self) -> &[NodeId] {
        self.plan.placeholders()
    }

    /// New output arrays (zeroed allocations), written in place by the kernels where the
    /// outputs are bound ([`Executable::run_into_on`]).
    fn run_on(
        &self,
        inputs: &dyn Inputs,
        state: &mut StateView<'_>,
    ) -> Result<Vec<HostArray>, RunError> {
        let mut outputs = self.fresh_outputs()?;
        self.run_into_on(inputs, &mut outputs, state)?;
        Ok(outputs)
    }

    /// Allocates nothing in steady state: the workspace comes from the pool (a new one only
    /// when every pooled one is in use), inputs and state are copied into its storages, the
    /// kernels run with their argument tables on the stack (parallel ones through the shared
    /// pool, whose dispatch does not allocate), the outputs are copied into the caller's
    /// arrays and assigned values into the state's arrays in place.
    fn run_into_on(
        &self,
        inputs: &dyn Inputs,
        outputs: &mut [HostArray],
        state: &mut StateView<'_>,
    ) -> Result<(), RunError> {
        let mut w = self.workspace()?;
        let result = self.run_into_in(&mut w, inputs, outputs, state);
        self.workspaces
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(w);
        result
    }
}
