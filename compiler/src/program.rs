//! Building the [`Program`] a JIT executable runs: storages, steps, and how arrays move.
//!
//! Assumes a [`CompiledPlan`] of the caller's graph restricted to the computation (`restricted`
//! maps the caller's nodes to it), and its lowered kernels' bindings.
//! Guarantees:
//! - storage: one storage per (planned buffer, dtype) — storages are typed; tensors of one type
//!   still share — and one per unplanned stored tensor (placeholders, state, constants,
//!   outputs, assigned values, in their row-major layout); row, partials and block scratch is
//!   private to its kernel; a storage no step binds any more is [`StorageKind::Elided`];
//! - the memory budget is checked twice, before lowering's scratch and before any code is
//!   generated, against every storage plus the inputs' and outputs' host arrays;
//! - steps: kernels and GEMM calls in schedule order; a GEMM call and the kernel right after
//!   it as one step where that computes the same (crate::epilogue); consecutive kernels that
//!   cut the same columns into the same blocks as one kernel (crate::chain), at most
//!   [`MAX_CHAINED`]; only the kernels a step runs are kept;
//! - inputs, outputs, state reads and assigns each with its [`Binding`](weft_runtime::program::Binding) (crate::io_binding).

use crate::io_binding::{AssignValue, Facts, InputValue, OutputValue, StateValue, Values};
use crate::lower::{lower_plan, BufferBinding, LoweredKernel};
use crate::options::{JitError, JitOptions};
use crate::passes::rebuild::NodeMap;
use crate::passes::storage::{Planned, TensorRole};
use crate::passes::PassError;
use crate::pipeline::CompiledPlan;
use std::collections::{HashMap, HashSet};
use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::BufferId;
use weft_ir::{Axes, DType, Graph, NodeId, Op};
use weft_runtime::program::{
    GemmId, GemmStep, Home, KernelId, KernelStep, Program, Step, Storage, StorageId, StorageKind,
};
use weft_runtime::state::stored_value;
use weft_runtime::{GemmCall, GemmEpilogue, KernelSignature, Plan, RunError, SplitDim};

/// The most kernels one chained kernel runs (crate::chain): its function, and the register
/// allocator's work on it, grow with them (a pool's fold has a kernel per level).
pub const MAX_CHAINED: usize = 4;

/// A step while the schedule is being decided: indices into the builder's tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sched {
    /// `lowered[i]`.
    Kernel(usize),
    /// `gemms[i]`.
    Gemm(usize),
    /// `epilogues[i]`.
    GemmThen(usize),
}

/// A GEMM call and its epilogue kernel as one step: the pair, the GEMM and the kernel.
struct Epilogue {
    fused: GemmEpilogue,
    gemm: usize,
    kernel: usize,
}

/// What the program of a computation is built from.
pub(crate) struct Sources<'a> {
    /// The caller's graph.
    pub(crate) graph: &'a Graph,
    /// The computation.
    pub(crate) plan: &'a Plan,
    /// The passes' results over the restricted graph.
    pub(crate) compiled: &'a CompiledPlan,
    /// The caller's nodes → the restricted graph's.
    pub(crate) restricted: &'a NodeMap,
    /// The options it is compiled with.
    pub(crate) options: &'a JitOptions,
    /// Whether the code generator may call native span routines (lowering splits span sums
    /// only then).
    pub(crate) span_math: bool,
}

/// The program, and the loop IR of its kernels in [`KernelId`] order.
pub(crate) struct Built {
    pub(crate) program: Program,
    pub(crate) lowered: Vec<LoweredKernel>,
}

/// Builds the program of `src`: see the module docs.
pub(crate) fn build(src: &Sources<'_>) -> Result<Built, JitError> {
    let mut b = Builder::new(src);
    b.assign_storages()?;
    // Every tensor's storage is known before lowering, which adds only scratch: a plan
    // already past the budget is refused before lowering and codegen look at its loops.
    b.check_budget()?;
    let lower_options = crate::lower::LowerOptions {
        split_span_sums: src.options.lower.split_span_sums && src.span_math,
        ..src.options.lower
    };
    let mut lowered = lower_plan(src.compiled, &lower_options)?;
    let mut kernel_args = b.kernel_args(&lowered)?;
    let steps = b.schedule(&lowered)?;
    let steps = b.fuse_epilogues(steps, &mut lowered, &kernel_args);
    let steps = if src.options.chain {
        b.chain(steps, &mut lowered, &mut kernel_args)?
    } else {
        steps
    };
    // Every storage is known: a plan past the budget is refused before any code is
    // generated (a gradient through a huge pool's fold levels is seconds of codegen).
    b.check_budget()?;
    let (lowered, kernel_args, steps) = b.keep_scheduled(lowered, kernel_args, steps);
    b.fill_constants()?;
    let program = b.finish(&lowered, kernel_args, steps)?;
    Ok(Built { program, lowered })
}

/// The tables a program is built in.
struct Builder<'a> {
    src: &'a Sources<'a>,
    storages: Vec<Storage>,
    /// The storage of each stored simplified node.
    storage_of: HashMap<NodeId, usize>,
    /// The storage of each (planned buffer, dtype).
    shared: HashMap<(usize, DType), usize>,
    /// Per state read: the caller's node, its storage, the simplified node.
    state_in: Vec<(NodeId, usize, NodeId)>,
    /// Constants to fill once the budget is checked: storage, simplified node.
    constants: Vec<(usize, NodeId)>,
    /// The caller's node of every simplified placeholder or variable.
    source_of: HashMap<NodeId, NodeId>,
    gemms: Vec<GemmStep>,
    epilogues: Vec<Epilogue>,
}

impl<'a> Builder<'a> {
    fn new(src: &'a Sources<'a>) -> Builder<'a> {
        let mut b = Builder {
            src,
            storages: Vec::new(),
            storage_of: HashMap::new(),
            shared: HashMap::new(),
            state_in: Vec::new(),
            constants: Vec::new(),
            source_of: HashMap::new(),
            gemms: Vec::new(),
            epilogues: Vec::new(),
        };
        for (id, node) in src.graph.nodes() {
            if matches!(node.op, Op::Tensor { .. }) {
                if let Some(s) = b.to_simplified(id) {
                    b.source_of.entry(s).or_insert(id);
                }
            }
        }
        b
    }

    /// The simplified node of the caller's node `n`, if it survived.
    fn to_simplified(&self, n: NodeId) -> Option<NodeId> {
        let compiled = self.src.compiled;
        self.src
            .restricted
            .get(n)
            .and_then(|r| compiled.map().get(r))
    }

    fn simplified(&self) -> &'a Graph {
        &self.src.compiled.simplified.graph
    }

    fn internal(what: String) -> PassError {
        PassError::Internal(what)
    }

    /// One storage per (planned buffer, dtype), one per unplanned stored tensor, each named by
    /// the tensors it holds (by their names in the caller's graph where they have one).
    fn assign_storages(&mut self) -> Result<(), PassError> {
        let (graph, g, compiled) = (self.src.graph, self.simplified(), self.src.compiled);
        let mut source_label: HashMap<NodeId, String> = HashMap::new();
        for (id, _) in graph.nodes().rev() {
            if let Some(s) = self.to_simplified(id) {
                source_label.insert(s, graph.node_label(id));
            }
        }
        let label = |n: NodeId| source_label.get(&n).cloned().unwrap_or(g.node_label(n));
        for t in &compiled.buffers.tensors {
            let Planned::Node(n) = t.what else { continue };
            let dtype = g.node(n).dtype;
            let elements = compiled
                .layouts
                .layouts
                .get(&n)
                .map(|l| l.elements as u64)
                .ok_or_else(|| Self::internal(format!("{} has no layout", g.node_label(n))))?;
            let s = match t.buffer {
                Some(buffer) => {
                    let k = *self.shared.entry((buffer, dtype)).or_insert_with(|| {
                        self.storages
                            .push(storage(dtype, 0, StorageKind::Planned, Vec::new()));
                        self.storages.len() - 1
                    });
                    let st = &mut self.storages[k];
                    st.elements = st.elements.max(elements);
                    st.holders.push(label(n));
                    k
                }
                None => {
                    let kind = match t.role {
                        // Materialised once the memory budget is checked.
                        TensorRole::Constant => {
                            self.constants.push((self.storages.len(), n));
                            StorageKind::Private
                        }
                        TensorRole::State => {
                            let src = self.source_of.get(&n).copied().ok_or_else(|| {
                                Self::internal(format!("{} has no source", g.node_label(n)))
                            })?;
                            self.state_in.push((src, self.storages.len(), n));
                            StorageKind::State
                        }
                        _ => StorageKind::Private,
                    };
                    self.storages
                        .push(storage(dtype, elements, kind, vec![label(n)]));
                    self.storages.len() - 1
                }
            };
            self.storage_of.insert(n, s);
        }
        Ok(())
    }

    /// Checks what a run holds — every storage of a workspace plus the inputs' and outputs'
    /// host arrays — against the budget.
    fn check_budget(&self) -> Result<(), RunError> {
        let Some(budget) = self.src.options.max_bytes else {
            return Ok(());
        };
        let (graph, plan) = (self.src.graph, self.src.plan);
        let workspace = self
            .storages
            .iter()
            .map(Storage::bytes)
            .fold(0u64, u64::saturating_add);
        // The caller's arrays live beside the workspace for the whole call (a `call` copies
        // the inputs in and the outputs out): counted, a run the machine cannot hold is
        // refused here rather than killed by the system halfway (measured: a 6 GB exp,
        // 23.4 GB at its peak).
        let inputs = graph.bytes_of_all(plan.placeholders())?;
        let outputs = graph.bytes_of_all(plan.outputs())?;
        let needed = workspace.saturating_add(inputs).saturating_add(outputs);
        if needed <= budget {
            return Ok(());
        }
        // The storage most of it goes to, named by the tensors it holds.
        let largest = self
            .storages
            .iter()
            .max_by_key(|s| s.bytes())
            .map(|s| {
                format!(
                    "; the largest storage, {} bytes, holds `{}`",
                    s.bytes(),
                    s.holders_text()
                )
            })
            .unwrap_or_default();
        Err(RunError::MemoryBudget {
            needed,
            budget,
            detail: format!(
                "a workspace of {workspace} bytes in {} storages: planned buffers at their \
                 peak, inputs, state, constants, outputs, scratch; and {inputs} bytes of input \
                 arrays and {outputs} of output arrays{largest}",
                self.storages.len()
            ),
        })
    }

    /// A new scratch storage of `len` elements of `ty`, held by `holder`.
    fn new_scratch(&mut self, ty: DType, len: u64, holder: String) -> usize {
        let kind = StorageKind::Scratch;
        self.storages.push(storage(ty, len, kind, vec![holder]));
        self.storages.len() - 1
    }

    /// The storage of stored simplified node `n`.
    fn stored(&self, n: NodeId) -> Result<usize, PassError> {
        self.storage_of.get(&n).copied().ok_or_else(|| {
            Self::internal(format!(
                "{} has no storage",
                self.simplified().node_label(n)
            ))
        })
    }

    /// Each kernel's argument storages, scratch made as its bindings ask (a split
    /// reduction's partials kernel and combining kernel share one).
    fn kernel_args(&mut self, lowered: &[LoweredKernel]) -> Result<Vec<Vec<usize>>, PassError> {
        let g = self.simplified();
        let mut partials: HashMap<NodeId, usize> = HashMap::new();
        let mut all = Vec::with_capacity(lowered.len());
        for lk in lowered {
            let mut args = Vec::new();
            for (i, b) in lk.bindings.iter().enumerate() {
                let decl = lk.kernel.buffers.values().nth(i);
                let s = match b {
                    BufferBinding::Tensor(n) => self.stored(*n)?,
                    BufferBinding::RowScratch(_) | BufferBinding::Accumulators => {
                        let decl = decl.ok_or_else(|| {
                            Self::internal("scratch binding without a buffer".into())
                        })?;
                        let holder = format!("row scratch of @{}", lk.kernel.name);
                        self.new_scratch(decl.ty, decl.len, holder)
                    }
                    BufferBinding::Partials(n) => match partials.get(n) {
                        Some(s) => *s,
                        None => {
                            let decl = decl.ok_or_else(|| {
                                Self::internal("partials binding without a buffer".into())
                            })?;
                            let holder = format!("partials of {}", g.node_label(*n));
                            let s = self.new_scratch(decl.ty, decl.len, holder);
                            partials.insert(*n, s);
                            s
                        }
                    },
                };
                args.push(s);
            }
            all.push(args);
        }
        Ok(all)
    }

    /// GEMM calls over the storages of their tensors, and every step in schedule order.
    fn schedule(&mut self, lowered: &[LoweredKernel]) -> Result<Vec<Sched>, JitError> {
        let compiled = self.src.compiled;
        let mut steps = Vec::new();
        let mut next_kernel = 0;
        for (p, call) in compiled.kernels.iter().zip(&compiled.gemms) {
            match call {
                Some((spec, tensors)) => {
                    let mut args = [StorageId::new(0); 3];
                    for (a, t) in args.iter_mut().zip(tensors) {
                        *a = StorageId::new(self.stored(*t)?);
                    }
                    let call = GemmCall::new(spec.clone()).map_err(RunError::from)?;
                    steps.push(Sched::Gemm(self.gemms.len()));
                    self.gemms.push(GemmStep {
                        call,
                        args,
                        note: None,
                    });
                }
                None => {
                    while lowered.get(next_kernel).is_some_and(|k| k.group == p.group) {
                        steps.push(Sched::Kernel(next_kernel));
                        next_kernel += 1;
                    }
                }
            }
        }
        if next_kernel != lowered.len() {
            return Err(Self::internal("kernels out of schedule order".into()).into());
        }
        Ok(steps)
    }

    /// A GEMM call and the kernel right after it as one step, where that computes the same;
    /// else the GEMM's note says why not.
    fn fuse_epilogues(
        &mut self,
        steps: Vec<Sched>,
        lowered: &mut [LoweredKernel],
        kernel_args: &[Vec<usize>],
    ) -> Vec<Sched> {
        let mut fused_steps = Vec::with_capacity(steps.len());
        let mut rest = steps.into_iter().peekable();
        while let Some(step) = rest.next() {
            let (Sched::Gemm(gi), Some(&Sched::Kernel(ki))) = (step, rest.peek()) else {
                fused_steps.push(step);
                continue;
            };
            if !self.src.options.epilogue {
                fused_steps.push(step);
                continue;
            }
            match self.epilogue(gi, &mut lowered[ki], &kernel_args[ki]) {
                Ok(fused) => {
                    rest.next();
                    fused_steps.push(Sched::GemmThen(self.epilogues.len()));
                    self.epilogues.push(Epilogue {
                        fused,
                        gemm: gi,
                        kernel: ki,
                    });
                }
                Err(why) => {
                    self.gemms[gi].note = Some(why);
                    fused_steps.push(step);
                }
            }
        }
        fused_steps
    }

    /// GEMM `gi` with kernel `lk` (over `kargs`) as its epilogue, the kernel strip-mined into
    /// the GEMM's column blocks if it cuts C so; or why not.
    fn epilogue(
        &self,
        gi: usize,
        lk: &mut LoweredKernel,
        kargs: &[usize],
    ) -> Result<GemmEpilogue, String> {
        let gemm = &self.gemms[gi];
        let spec = gemm.call.spec();
        // With batch axes the pair runs batch index by batch index (one block each, checked
        // by the runtime), whatever the split within a matrix.
        let strips = match spec.split {
            SplitDim::Columns if spec.batch.is_empty() => Some(
                crate::column_blocks::strip_columns(&lk.kernel, spec.block as u64)
                    .map_err(|why| format!("C is cut into column blocks, and {why}"))?,
            ),
            _ => None,
        };
        let candidate = KernelSignature::of(strips.as_ref().unwrap_or(&lk.kernel));
        let gargs = gemm.args.map(StorageId::index);
        let fused = crate::epilogue::plan_epilogue(spec, gargs, &candidate, kargs)?;
        if let Some(k) = strips {
            lk.kernel = k;
            lk.notes.push(format!(
                "columns in strips of {}, one per column block of the GEMM before it, the \
                 strips parallel",
                spec.block
            ));
        }
        Ok(fused)
    }

    /// The storages step `step` binds.
    fn bound_by(&self, step: Sched, kernel_args: &[Vec<usize>]) -> Vec<usize> {
        let gemm_args = |g: usize| self.gemms[g].args.map(StorageId::index).to_vec();
        match step {
            Sched::Kernel(i) => kernel_args[i].clone(),
            Sched::Gemm(g) => gemm_args(g),
            Sched::GemmThen(e) => {
                let e = &self.epilogues[e];
                let mut b = gemm_args(e.gemm);
                b.extend(&kernel_args[e.kernel]);
                b
            }
        }
    }

    /// Chains consecutive kernels ([`chain_steps`]), then holds each chained kernel's
    /// intermediates that only it binds one block at a time ([`contract_chained`]): a storage
    /// no step binds any more, holding only intermediates, is elided.
    fn chain(
        &mut self,
        steps: Vec<Sched>,
        lowered: &mut [LoweredKernel],
        kernel_args: &mut [Vec<usize>],
    ) -> Result<Vec<Sched>, PassError> {
        let (steps, chained) = chain_steps(&steps, lowered, kernel_args);
        if chained.is_empty() {
            return Ok(steps);
        }
        let bound: Vec<Vec<usize>> = steps
            .iter()
            .map(|s| self.bound_by(*s, kernel_args))
            .collect();
        let scratch: HashSet<NodeId> = self
            .src
            .compiled
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
                .position(|s| matches!(s, Sched::Kernel(j) if *j == i))
                .ok_or_else(|| Self::internal("a chained kernel has no step".into()))?;
            let elsewhere: HashSet<usize> = bound
                .iter()
                .enumerate()
                .filter(|(j, _)| *j != k)
                .flat_map(|(_, b)| b.iter().copied())
                .collect();
            let holder = format!("block scratch of @{}", lowered[i].kernel.name);
            let mut new_scratch = |ty: DType, len: u64| self.new_scratch(ty, len, holder.clone());
            let replaced = contract_chained(
                &mut lowered[i],
                &mut kernel_args[i],
                |n| scratch.contains(&n),
                &elsewhere,
                &mut new_scratch,
            );
            // Softmax's exponentials no longer take a tensor's memory.
            for s in replaced {
                let only_scratch = self
                    .storage_of
                    .iter()
                    .all(|(n, at)| *at != s || scratch.contains(n));
                if only_scratch {
                    self.storages[s].elements = 0;
                    self.storages[s].kind = StorageKind::Elided;
                }
            }
        }
        Ok(steps)
    }

    /// The kernels (with their argument storages) that `steps` or the epilogues run, in their
    /// order, and `steps` and the epilogues renumbered to them: a kernel chained onto another
    /// runs inside it and is not compiled.
    fn keep_scheduled(
        &mut self,
        lowered: Vec<LoweredKernel>,
        kernel_args: Vec<Vec<usize>>,
        steps: Vec<Sched>,
    ) -> (Vec<LoweredKernel>, Vec<Vec<usize>>, Vec<Sched>) {
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
                Sched::Kernel(i) => Sched::Kernel(keep(i)),
                Sched::GemmThen(e) => {
                    self.epilogues[e].kernel = keep(self.epilogues[e].kernel);
                    Sched::GemmThen(e)
                }
                Sched::Gemm(g) => Sched::Gemm(g),
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

    /// Fills the constants' storages with their values.
    fn fill_constants(&mut self) -> Result<(), RunError> {
        for (k, n) in std::mem::take(&mut self.constants) {
            let value = stored_value(self.simplified(), n)?;
            self.storages[k].kind = StorageKind::Constant(value.data().clone());
        }
        Ok(())
    }

    /// Where stored simplified node `n` lives, and how it is laid out there.
    fn home(&self, n: NodeId) -> Result<Home, PassError> {
        let g = self.simplified();
        let storage = self.stored(n)?;
        let node = g.node(n);
        let shape = g
            .shape_of(&node.axes)
            .map_err(|e| Self::internal(format!("shape of {}: {e}", g.node_label(n))))?;
        let strides = match self.src.compiled.layouts.layouts.get(&n) {
            Some(layout) => layout.strides.clone(),
            None => return Err(Self::internal(format!("{} has no layout", g.node_label(n)))),
        };
        let row_major = weft_ir::size::row_major_strides(&shape)
            .ok_or_else(|| Self::internal("stride overflow past a verified size".into()))?;
        let row_major = strides.len() == row_major.len()
            && strides.iter().zip(&row_major).all(|(a, b)| *a == *b as i64);
        Ok(Home {
            storage: StorageId::new(storage),
            name: g.node_label(n),
            axes: node.axes.clone(),
            shape,
            dtype: node.dtype,
            strides,
            row_major,
        })
    }

    /// The caller-facing values: per placeholder, output, state read and assign, where it
    /// lives.
    fn values(&self) -> Result<Values, PassError> {
        let (graph, plan, g) = (self.src.graph, self.src.plan, self.simplified());
        let shape = |n: NodeId| {
            graph
                .shape_of(&graph.node(n).axes)
                .map_err(|e| Self::internal(format!("shape of {}: {e}", graph.node_label(n))))
        };
        let mut inputs = Vec::new();
        for p in plan.placeholders() {
            let simplified = self.to_simplified(*p);
            let requested = self.src.options.layouts.iter().find(|(n, _)| n == p);
            let order = match requested {
                Some((_, order)) if graph.node(*p).axes.iter().ne(order.iter()) => {
                    Some(Axes::new(order.iter().copied()).map_err(|e| {
                        Self::internal(format!("layout of {}: {e}", graph.node_label(*p)))
                    })?)
                }
                _ => None,
            };
            inputs.push(InputValue {
                placeholder: *p,
                name: graph.node_label(*p),
                storage: simplified.and_then(|s| self.storage_of.get(&s).copied()),
                // An input that is not stored (unused, or folded away) has no home.
                home: simplified.and_then(|n| self.home(n).ok()),
                order,
                shape: shape(*p)?,
            });
        }
        let mut outputs = Vec::new();
        for o in plan.outputs() {
            let n = self
                .to_simplified(*o)
                .ok_or_else(|| Self::internal(format!("output {o} was removed")))?;
            let mut home = self.home(n)?;
            home.name = graph.node_label(*o);
            outputs.push(OutputValue { node: *o, home });
        }
        let state = self
            .state_in
            .iter()
            .map(|&(source, storage, n)| StateValue {
                source,
                name: graph.node_label(source),
                storage,
                home: self.home(n).ok(),
            })
            .collect();
        let mut assigns = Vec::new();
        for (id, node) in g.nodes() {
            if let Op::Assign { target, .. } = node.op {
                let src = self.source_of.get(&target).copied().ok_or_else(|| {
                    Self::internal(format!("assign target {target} has no source"))
                })?;
                let mut home = self.home(id)?;
                // Committed in place only if stored exactly as the state holds it.
                home.row_major &= graph.node(src).axes == node.axes;
                assigns.push(AssignValue {
                    target: src,
                    name: graph.node_label(src),
                    home,
                });
            }
        }
        Ok(Values {
            inputs,
            outputs,
            state,
            assigns,
        })
    }

    /// The program: the steps with typed ids, and every input, output, state read and assign
    /// with its binding.
    fn finish(
        self,
        lowered: &[LoweredKernel],
        kernel_args: Vec<Vec<usize>>,
        steps: Vec<Sched>,
    ) -> Result<Program, JitError> {
        let values = self.values()?;
        let kernels: Vec<KernelStep> = lowered
            .iter()
            .zip(kernel_args)
            .map(|(lk, args)| KernelStep {
                name: lk.kernel.name.clone(),
                args: args.into_iter().map(StorageId::new).collect(),
            })
            .collect();
        let signatures: Vec<KernelSignature> = lowered
            .iter()
            .map(|lk| KernelSignature::of(&lk.kernel))
            .collect();
        let facts = Facts {
            graph: self.src.graph,
            storages: &self.storages,
            signatures: &signatures,
            kernels: &kernels,
            gemms: &self.gemms,
            values: &values,
        };
        let (inputs, outputs) = (facts.inputs(), facts.outputs());
        let (state_reads, assigns) = (facts.state_reads(), facts.assigns());
        let mut epilogues: Vec<Option<Epilogue>> = self.epilogues.into_iter().map(Some).collect();
        let mut steps_out = Vec::with_capacity(steps.len());
        for s in steps {
            steps_out.push(match s {
                Sched::Kernel(i) => Step::Kernel(KernelId::new(i)),
                Sched::Gemm(g) => Step::Gemm(GemmId::new(g)),
                Sched::GemmThen(e) => {
                    let e = epilogues[e]
                        .take()
                        .ok_or_else(|| Self::internal("an epilogue runs twice".into()))?;
                    Step::GemmThen {
                        gemm: GemmId::new(e.gemm),
                        kernel: KernelId::new(e.kernel),
                        epilogue: Box::new(e.fused),
                    }
                }
            });
        }
        Ok(Program {
            storages: self.storages,
            kernels,
            gemms: self.gemms,
            steps: steps_out,
            inputs,
            outputs,
            state_reads,
            assigns,
        })
    }
}

/// `steps` with each run of consecutive kernels that chain (crate::chain), at most
/// [`MAX_CHAINED`] at a time, made one step, and the kernels that became chained kernels:
/// the first kernel of each run takes the chained loop IR, bindings and storages (its notes
/// saying so), the others' steps are dropped (their storages stay, unused or shared).
fn chain_steps(
    steps: &[Sched],
    lowered: &mut [LoweredKernel],
    kernel_args: &mut [Vec<usize>],
) -> (Vec<Sched>, Vec<usize>) {
    let mut out: Vec<Sched> = Vec::with_capacity(steps.len());
    // The kernel a run chains onto and how many it runs; the chained ones.
    let mut open: Option<(usize, usize)> = None;
    let mut chained = Vec::new();
    for &step in steps {
        if let (Some((first, count)), Sched::Kernel(next)) = (open, step) {
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
            Sched::Kernel(i) => Some((i, 1)),
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

/// A storage of `elements` of `dtype`, holding `holders`.
fn storage(dtype: DType, elements: u64, kind: StorageKind, holders: Vec<String>) -> Storage {
    Storage {
        dtype,
        elements,
        kind,
        holders,
    }
}
