//! lowering: each kernel program of a [`CompiledPlan`] becomes one loop-IR [`Kernel`].
//!
//! Assumes: a complete plan (every load and store carries its strided view, every stored tensor
//! has a layout).
//! Guarantees:
//! - one kernel per program, in schedule order — two for a split reduction (`split.rs`:
//!   `k<g>_partials`, parallel over the chunks, then `k<g>_combine`, with a partials buffer
//!   both bind); its buffer parameters are the stored tensors it
//!   loads or stores (each once, in order of first use, with the tensor's element count and
//!   dtype) and one row scratch per stage kept locally over loops; [`LoweredKernel::bindings`]
//!   says what each parameter is bound to. Every tensor starts at element 0 of its storage;
//! - the outer loops enclose the stages in order; each stage is its loops, then (for a
//!   reduction) an accumulator declared inside the innermost stage loop and the reduction loops;
//!   every value is computed at the shallowest loop level its indices allow (loop-invariant
//!   code motion), so uniform operands are not recomputed per element;
//! - the innermost loop of each nest is annotated `vectorize` (with `unroll(2)` or `unroll(4)`
//!   for long loops: several independent vector accumulators for reductions), except that a
//!   reduction whose loads would gather along its own loop but not along the result loop around
//!   it is register-blocked: the result loop is vectorised and unrolled around the scalar
//!   reduction loop (a dot `X[b, i]·W[i, o]`);
//! - leading outer axes one long get no loop (index 0), so a batch of one image runs in
//!   parallel over its next axis; the outermost loop of a kernel with enough work is
//!   annotated `parallel` — its iterations
//!   are independent because each outer point computes and stores only its own elements. A
//!   kernel with row scratch splits its outermost axis into at most 64 parallel chunks of rows
//!   (`Q·chunk + row`, the chunk count dividing the axis length); the scratch has one row per
//!   chunk, indexed by the chunk loop, so threads never share a row and it stays in cache;
//! - pad becomes masked loads plus a select where a guarded value is not already a masked load;
//!   concat a chain of selects over masked loads; dot a reduction loop nest of products;
//!   mean a sum divided by the count; float argmax/argmin a second accumulator finding the first
//!   NaN (the interpreter's rule); bool max/min/argmax/argmin run on `i32` 0/1; f32 sums, means,
//!   dots and products accumulate in f64 as the interpreter's (see
//!   [`LowerOptions::f64_accumulation`]; short f32 sums then keep f32 vector partials by
//!   [`crate::loop_passes::narrow_sums`]); integer power is
//!   square-and-multiply over the exponent's bits, unrolled;
//! - every lowered kernel passes [`verify`] (checked here; a failure is a typed error).

use crate::codegen::KernelStrategy;
use crate::loop_passes::{self, PassContext};
use crate::passes::kernel::{Instr, KernelProgram, StageProgram};
use crate::passes::layout::LayoutPlan;
use crate::passes::views::{AffineExpr as PassAffine, IterAxis, StridedView, ValidRange};
use crate::pipeline::CompiledPlan;
mod options;
mod split;

pub use options::LowerOptions;
pub(crate) use options::{accumulation_type, keeps_order};
use split::{combine_program, partials_program, plan_split, Split};
use std::collections::HashMap;
use weft_ir::loop_ir::{
    drop_unused, verify, AccId, AffineExpr, BinaryOp as LBinary, BufferAccess, BufferAccessExpr,
    BufferId, CompareOp as LCompare, Inst, Kernel, LoopAnnotations, LoopId, MaskBound, ReduceKind,
    ScalarValue, Stmt, UnaryOp as LUnary, ValueId,
};
use weft_ir::shape::{Shape, TiledShape};
use weft_ir::{Axis, BinaryOp, CompareOp, DType, Graph, NodeId, ReduceOp, Scalar};

/// What a kernel buffer parameter is bound to at call time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferBinding {
    /// The storage of a stored tensor (a node of the simplified graph).
    Tensor(NodeId),
    /// The row scratch of a stage kept locally over loops (private to the kernel).
    RowScratch(NodeId),
    /// A row of sums' accumulators kept in memory ([`crate::loop_passes::reduce_in_memory`]), private
    /// to the kernel like row scratch.
    Accumulators,
    /// The partial results of this node's split reduction (see `split.rs`): written by
    /// its parallel partials kernel, one slot per chunk and result, then read by the combining
    /// kernel right after it. Both kernels bind the same storage.
    Partials(NodeId),
}

/// One lowered kernel program.
#[derive(Clone, Debug)]
pub struct LoweredKernel {
    /// The schedule index of the program.
    pub group: usize,
    /// The verified loop-IR kernel.
    pub kernel: Kernel,
    /// What each buffer parameter is bound to, in parameter order.
    pub bindings: Vec<BufferBinding>,
    /// Why the loop nest is ordered and vectorised as it is, beyond the result's axis order:
    /// one line per schedule decision of the lowering (register blocking, tiling, sums in
    /// memory order), which `weft explain` prints.
    pub notes: Vec<String>,
    /// How code generation emits each loop ([`KernelStrategy`]), recorded when the kernel is
    /// compiled; `None` before.
    pub strategy: Option<KernelStrategy>,
}

/// Why a program could not be lowered.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LowerError {
    /// A construct lowering does not handle, naming the kernel and the node.
    #[error("cannot lower kernel {kernel}: {reason}")]
    Unsupported {
        /// The kernel (schedule index).
        kernel: usize,
        /// What cannot be lowered.
        reason: String,
    },
    /// The lowered kernel failed verification (a lowering bug).
    #[error("lowered kernel {kernel} fails verification: {errors}")]
    Verify {
        /// The kernel (schedule index).
        kernel: usize,
        /// The verifier's report.
        errors: String,
    },
    /// A guarantee of an earlier pass does not hold (a bug in weft).
    #[error("internal lowering error in kernel {kernel}: {message}")]
    Internal {
        /// The kernel (schedule index).
        kernel: usize,
        /// What broke.
        message: String,
    },
}

/// Lowers every kernel program of `plan` but those a GEMM call computes
/// ([`CompiledPlan::gemms`]), in schedule order, verifying each (a split reduction's program
/// gives two kernels).
pub fn lower_plan(
    plan: &CompiledPlan,
    options: &LowerOptions,
) -> Result<Vec<LoweredKernel>, LowerError> {
    let mut out = Vec::with_capacity(plan.kernels.len());
    for (i, p) in plan.kernels.iter().enumerate() {
        // A program a GEMM call computes has no loop nest (crate::gemm).
        if plan.gemms.get(i).is_some_and(Option::is_some) {
            continue;
        }
        out.extend(lower_program(
            &plan.simplified.graph,
            &plan.layouts,
            p,
            options,
        )?);
    }
    Ok(out)
}

/// Lowers one kernel program and verifies the result: one kernel, or two for a split
/// reduction (its parallel partials kernel, then the kernel combining them; `split.rs`).
pub fn lower_program(
    g: &Graph,
    layouts: &LayoutPlan,
    program: &KernelProgram,
    options: &LowerOptions,
) -> Result<Vec<LoweredKernel>, LowerError> {
    let Some(split) = plan_split(g, program, options) else {
        return Ok(vec![lower_role(g, layouts, program, options, Role::Whole)?]);
    };
    Ok(vec![
        lower_role(
            g,
            layouts,
            &partials_program(program),
            options,
            Role::Partials(split),
        )?,
        lower_role(
            g,
            layouts,
            &combine_program(program),
            options,
            Role::Combine(split),
        )?,
    ])
}

/// What a lowered kernel computes of its program.
#[derive(Clone, Copy, Debug)]
enum Role {
    /// All of it.
    Whole,
    /// A split reduction's partials, one per chunk and result.
    Partials(Split),
    /// The split reduction from its partials, and everything after it.
    Combine(Split),
}

/// Lowers `program` in `role` and verifies the result.
fn lower_role(
    g: &Graph,
    layouts: &LayoutPlan,
    program: &KernelProgram,
    options: &LowerOptions,
    role: Role,
) -> Result<LoweredKernel, LowerError> {
    let mut l = Lowerer::new(g, layouts, program, options, role)?;
    l.lower()?;
    let cx = PassContext {
        options: options.pass_options(),
        ordered_reductions: &l.ordered_reductions,
    };
    let done = loop_passes::run_all(&mut l.k, &cx);
    l.bindings
        .extend(done.scratch.iter().map(|_| BufferBinding::Accumulators));
    l.notes.extend(done.notes);
    let lowered = LoweredKernel {
        group: program.group,
        kernel: renumber(l.k),
        bindings: l.bindings,
        notes: l.notes,
        strategy: None,
    };
    verify(&lowered.kernel).map_err(|e| LowerError::Verify {
        kernel: program.group,
        errors: e.to_string(),
    })?;
    Ok(lowered)
}

/// A stage's term as its reduction sees it: the op, the term's value and depth, the types in
/// and out, and whether the kernel computes a split reduction's partials.
#[derive(Clone, Copy, Debug)]
struct Term {
    op: ReduceOp,
    value: ValueId,
    level: usize,
    in_dtype: DType,
    out_dtype: DType,
    partial: bool,
}

/// A row scratch: its buffer, the strides of the stage's loops in it, and the row length.
#[derive(Clone, Debug)]
struct Scratch {
    buffer: BufferId,
    strides: Vec<i64>,
    row: i64,
}

struct Lowerer<'a> {
    g: &'a Graph,
    p: &'a KernelProgram,
    options: &'a LowerOptions,
    k: Kernel,
    bindings: Vec<BufferBinding>,
    buffers: HashMap<BufferBinding, BufferId>,
    /// Loops around the stages, outermost first (a chunked axis has two).
    outer_loops: Vec<LoopId>,
    /// Each outer axis's index in terms of `outer_loops`.
    outer_scope: Vec<(Axis, Vec<(LoopId, i64)>)>,
    parallel: bool,
    registers: HashMap<NodeId, ValueId>,
    scratch: HashMap<NodeId, Scratch>,
    /// Innermost reduction loops that must keep the interpreter's order
    /// ([`LowerOptions::reassociate_f64_sums`]): never vectorised themselves, but register
    /// blocking may still vectorise the result loop around them.
    ordered_reductions: Vec<LoopId>,
    role: Role,
    /// The partials kernel's parallel loop over the chunks.
    chunk_loop: Option<LoopId>,
    /// The partials buffer of a split reduction.
    partials: Option<BufferId>,
    /// [`LoweredKernel::notes`].
    notes: Vec<String>,
}

/// Where statements of one stage go while it is built: per loop depth, the statements before
/// the next inner loop and those after it.
struct Levels {
    before: Vec<Vec<Stmt>>,
    after: Vec<Vec<Stmt>>,
    loops: Vec<LoopId>,
}

impl Levels {
    fn new(loops: Vec<LoopId>) -> Levels {
        let n = loops.len() + 1;
        Levels {
            before: vec![Vec::new(); n],
            after: vec![Vec::new(); n],
            loops,
        }
    }
    /// The statements of depth 0, with every deeper level nested in its loop.
    fn build(mut self) -> Vec<Stmt> {
        let mut inner: Option<Stmt> = None;
        for d in (0..self.before.len()).rev() {
            let mut body = std::mem::take(&mut self.before[d]);
            if let Some(s) = inner.take() {
                body.push(s);
            }
            body.append(&mut self.after[d]);
            if d == 0 {
                return body;
            }
            inner = Some(Stmt::Loop {
                loop_id: self.loops[d - 1],
                body,
            });
        }
        Vec::new()
    }
}

fn sanitize(label: &str) -> String {
    let s: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "t".into()
    } else {
        s
    }
}

fn scalar_value(s: Scalar, dtype: DType) -> ScalarValue {
    match (dtype, s) {
        (DType::F32, s) => ScalarValue::F32(s.as_f64() as f32),
        (DType::F64, s) => ScalarValue::F64(s.as_f64()),
        (DType::I32, Scalar::Int(v)) => ScalarValue::I32(v as i32),
        (DType::I64, Scalar::Int(v)) => ScalarValue::I64(v),
        (DType::I32, s) => ScalarValue::I32(s.as_f64() as i32),
        (DType::I64, s) => ScalarValue::I64(s.as_f64() as i64),
        (DType::Bool, s) => ScalarValue::Bool(s.as_f64() != 0.0),
    }
}

/// Unroll factor for a vectorised innermost loop of `extent` iterations.
fn unroll_for(extent: usize, reduction: bool) -> u32 {
    match (reduction, extent) {
        (true, e) if e >= 32 => 4,
        (_, e) if e >= 16 => 2,
        _ => 1,
    }
}

/// A kernel's buffer parameters while they are declared: what each is bound to, and the names
/// taken.
#[derive(Default)]
struct Params {
    bindings: Vec<BufferBinding>,
    buffers: HashMap<BufferBinding, BufferId>,
    names: Vec<String>,
}

/// How a kernel uses a stored tensor.
#[derive(Clone, Copy, Default)]
struct TensorUse {
    loaded: bool,
    stored: bool,
}

impl Params {
    /// `base`, or `base_<id>` when `base` is taken.
    fn unique(&mut self, base: String, id: NodeId) -> String {
        let name = if self.names.contains(&base) {
            format!("{base}_{}", id.as_u32())
        } else {
            base
        };
        self.names.push(name.clone());
        name
    }

    fn bind(&mut self, binding: BufferBinding, id: BufferId) {
        self.bindings.push(binding);
        self.buffers.insert(binding, id);
    }

    /// The stored tensors `p` loads or stores, in order of first use.
    fn add_tensors(
        &mut self,
        k: &mut Kernel,
        g: &Graph,
        layouts: &LayoutPlan,
        p: &KernelProgram,
    ) -> Result<(), LowerError> {
        let mut order: Vec<NodeId> = Vec::new();
        let mut use_of: HashMap<NodeId, TensorUse> = HashMap::new();
        for st in &p.stages {
            for inst in &st.body {
                if let Instr::Load { tensor, .. } = &inst.instr {
                    if !use_of.contains_key(tensor) {
                        order.push(*tensor);
                    }
                    use_of.entry(*tensor).or_default().loaded = true;
                }
            }
            if st.store.is_some() {
                if !use_of.contains_key(&st.node) {
                    order.push(st.node);
                }
                use_of.entry(st.node).or_default().stored = true;
            }
        }
        for t in order {
            let layout = layouts
                .layouts
                .get(&t)
                .ok_or_else(|| LowerError::Internal {
                    kernel: p.group,
                    message: format!("{} is stored but has no layout", g.node_label(t)),
                })?;
            let u = use_of[&t];
            let access = match (u.loaded, u.stored) {
                (true, true) => BufferAccess::ReadWrite,
                (false, true) => BufferAccess::Write,
                _ => BufferAccess::Read,
            };
            let name = self.unique(sanitize(&g.node_label(t)), t);
            let id = k.add_buffer(name, g.node(t).dtype, layout.elements as u64, access);
            self.bind(BufferBinding::Tensor(t), id);
        }
        Ok(())
    }

    /// The partials buffer of a split reduction's kernels (written by the partials kernel,
    /// read by the combining one).
    fn add_partials(&mut self, k: &mut Kernel, g: &Graph, role: Role) -> Option<BufferId> {
        let (Role::Partials(s) | Role::Combine(s)) = role else {
            return None;
        };
        let access = match role {
            Role::Partials(_) => BufferAccess::Write,
            _ => BufferAccess::Read,
        };
        let name = self.unique(
            format!("partials_{}", sanitize(&g.node_label(s.node))),
            s.node,
        );
        let id = k.add_buffer(name, s.acc, s.chunks * s.results, access);
        self.bind(BufferBinding::Partials(s.node), id);
        Some(id)
    }

    /// Row scratch per stage kept locally over loops: one row per parallel chunk.
    fn add_row_scratch(
        &mut self,
        k: &mut Kernel,
        g: &Graph,
        p: &KernelProgram,
        chunks: Option<u64>,
    ) -> HashMap<NodeId, Scratch> {
        let mut scratch = HashMap::new();
        for st in p.stages.iter().filter(|s| s.local && !s.loops.is_empty()) {
            // Saturating: an empty kernel's row is 0 however long the stage's axes, and its
            // strides are never used (`prune_empty` drops every loop that would index it).
            let row = i64::try_from(p.scratch_row(st)).unwrap_or(i64::MAX);
            let mut strides = vec![0i64; st.loops.len()];
            let mut s = 1i64;
            for (i, a) in st.loops.iter().enumerate().rev() {
                strides[i] = s;
                s = s.saturating_mul(i64::try_from(a.len).unwrap_or(i64::MAX));
            }
            let rows = chunks.unwrap_or(1) as i64;
            let dtype = g.node(st.node).dtype;
            let name = self.unique(
                format!("rows_{}", sanitize(&g.node_label(st.node))),
                st.node,
            );
            let len = row.saturating_mul(rows) as u64;
            let id = k.add_buffer(name, dtype, len, BufferAccess::ReadWrite);
            self.bind(BufferBinding::RowScratch(st.node), id);
            scratch.insert(
                st.node,
                Scratch {
                    buffer: id,
                    strides,
                    row,
                },
            );
        }
        scratch
    }
}

/// How many parallel chunks the kernel's outermost axis is cut into, `None` when the kernel
/// is not parallel: when there is enough work and scratch stays small. Point counts saturate:
/// they only choose whether to parallelise, and must not overflow however the lengths
/// multiply. With row scratch, the outermost axis splits into chunks of rows (each chunk one
/// scratch row, reused row after row, so scratch stays small and hot). A partials kernel is
/// parallel over its chunk loop instead.
fn parallel_chunks(p: &KernelProgram, options: &LowerOptions, role: Role) -> Option<u64> {
    let points = |loops: &[IterAxis]| -> u64 {
        loops
            .iter()
            .fold(1u64, |n, a| n.saturating_mul(a.len as u64))
    };
    let outer_points = points(&p.outer);
    let stage_points: u64 = p
        .stages
        .iter()
        .map(|s| {
            let r = s.reduction.as_ref().map_or(1, |r| points(&r.axes));
            points(&s.loops).saturating_mul(r)
        })
        .fold(0u64, |a, b| a.saturating_add(b));
    let row_total: u64 = p
        .stages
        .iter()
        .filter(|s| s.local && !s.loops.is_empty())
        .map(|s| points(&s.loops))
        .fold(0u64, |a, b| a.saturating_add(b));
    let par_extent = p
        .outer
        .get(leading_units(p))
        .map(|a| a.len as u64)
        .unwrap_or(0);
    if matches!(role, Role::Partials(_))
        || options.parallel_min_points == 0
        || par_extent < 2
        || outer_points.saturating_mul(stage_points) < options.parallel_min_points
    {
        return None;
    }
    match options.parallel_scratch_limit.checked_div(row_total) {
        None => Some(par_extent),
        Some(most) => (2..=most.min(options.parallel_max_chunks).min(par_extent))
            .rev()
            .find(|d| par_extent.is_multiple_of(*d)),
    }
}

/// The axes `st` reduces over that get a loop, and those one long that get none (their
/// index is 0): a reduction over `[C, 1, 1]` (a flattened pooled image) loops over `C`
/// innermost, so it can be vectorised. Exact: a one-long axis adds no term and moves no
/// index, and the flat index of an arg-reduction is unchanged. At least one axis keeps its
/// loop, and a split reduction keeps all (its chunks cut the leading axis as planned).
fn looped_reduction_axes(st: &StageProgram, split: bool) -> (Vec<IterAxis>, Vec<Axis>) {
    let all = st.reduction.as_ref().map_or(&[][..], |r| &r.axes[..]);
    let looped: Vec<IterAxis> = all.iter().filter(|a| a.len != 1).copied().collect();
    if split || looped.is_empty() {
        return (all.to_vec(), Vec::new());
    }
    let units = all.iter().filter(|a| a.len == 1).map(|a| a.axis).collect();
    (looped, units)
}

/// How many of `p`'s outer axes, from the outermost, are one long and get no loop (their
/// index is 0), so that the parallel loop is the first axis with more than one point (the
/// channels of a batch of one image, not the batch) — all but the last when every one is.
fn leading_units(p: &KernelProgram) -> usize {
    let units = p.outer.iter().take_while(|a| a.len == 1).count();
    units.min(p.outer.len().saturating_sub(1))
}

/// The loops around the stages, outermost first, and each outer axis's index over them.
#[derive(Default)]
struct OuterLoops {
    loops: Vec<LoopId>,
    scope: Vec<(Axis, Vec<(LoopId, i64)>)>,
}

impl OuterLoops {
    /// A loop per outer axis of `p` (the first cut into `chunks` parallel chunks of rows when
    /// fewer than its length; else the parallel loop itself when `chunks` is some).
    fn add_axes(
        &mut self,
        k: &mut Kernel,
        p: &KernelProgram,
        options: &LowerOptions,
        chunks: Option<u64>,
    ) -> Result<(), LowerError> {
        let parallel = chunks.is_some();
        let units = leading_units(p);
        let par_extent = p.outer.get(units).map(|a| a.len as u64).unwrap_or(0);
        let all_flat = p
            .stages
            .iter()
            .all(|s| s.loops.is_empty() && s.reduction.is_none());
        for a in &p.outer[..units] {
            // Index 0 throughout: no loop, so the first axis with work is outermost.
            self.scope.push((a.axis, Vec::new()));
        }
        for (i, a) in p.outer.iter().enumerate().skip(units) {
            let i = i - units;
            if let (0, Some(c)) = (i, chunks.filter(|c| *c < par_extent)) {
                self.add_chunked(k, p.group, a, c)?;
                continue;
            }
            let innermost = i + units + 1 == p.outer.len() && all_flat;
            let vectorize = options.vectorize && innermost && a.len >= 4;
            let l = k.add_loop(
                a.len as u64,
                LoopAnnotations {
                    vectorize,
                    unroll: if vectorize {
                        unroll_for(a.len, false)
                    } else {
                        1
                    },
                    parallel: parallel && i == 0,
                },
            );
            self.loops.push(l);
            self.scope.push((a.axis, vec![(l, 1)]));
        }
        Ok(())
    }

    /// The axis `a` as a uniform tiling (TensorWrapper's tiled shape) of `c` tiles: the grid
    /// is the parallel chunk loop, a tile the rows each chunk runs in order.
    fn add_chunked(
        &mut self,
        k: &mut Kernel,
        group: usize,
        a: &IterAxis,
        c: u64,
    ) -> Result<(), LowerError> {
        let tiling = Shape::new([a.len])
            .and_then(|s| TiledShape::uniform(&s, &[a.len / c as usize]))
            .map_err(|e| LowerError::Internal {
                kernel: group,
                message: format!("tiling the parallel axis: {e}"),
            })?;
        let (c, q) = (
            tiling.grid().extents()[0] as u64,
            tiling.tile_lengths()[0][0] as u64,
        );
        let annotations = |parallel| LoopAnnotations {
            vectorize: false,
            unroll: 1,
            parallel,
        };
        let chunk = k.add_loop(c, annotations(true));
        let row = k.add_loop(q, annotations(false));
        self.loops.extend([chunk, row]);
        self.scope.push((a.axis, vec![(chunk, q as i64), (row, 1)]));
        Ok(())
    }
}

impl<'a> Lowerer<'a> {
    fn new(
        g: &'a Graph,
        layouts: &'a LayoutPlan,
        p: &'a KernelProgram,
        options: &'a LowerOptions,
        role: Role,
    ) -> Result<Lowerer<'a>, LowerError> {
        let mut k = Kernel::new(match role {
            Role::Whole => format!("k{}", p.group),
            Role::Partials(_) => format!("k{}_partials", p.group),
            Role::Combine(_) => format!("k{}_combine", p.group),
        });
        let mut params = Params::default();
        params.add_tensors(&mut k, g, layouts, p)?;
        let partials = params.add_partials(&mut k, g, role);
        let chunks = parallel_chunks(p, options, role);
        let parallel = chunks.is_some();
        let mut outer = OuterLoops::default();
        let chunk_loop = match role {
            Role::Partials(s) => {
                let l = k.add_loop(
                    s.chunks,
                    LoopAnnotations {
                        parallel: true,
                        ..LoopAnnotations::default()
                    },
                );
                outer.loops.push(l);
                Some(l)
            }
            _ => None,
        };
        outer.add_axes(&mut k, p, options, chunks)?;
        let scratch = params.add_row_scratch(&mut k, g, p, chunks);
        Ok(Lowerer {
            g,
            p,
            options,
            k,
            bindings: params.bindings,
            buffers: params.buffers,
            outer_loops: outer.loops,
            outer_scope: outer.scope,
            parallel,
            registers: HashMap::new(),
            scratch,
            ordered_reductions: Vec::new(),
            role,
            chunk_loop,
            partials,
            notes: Vec::new(),
        })
    }

    /// The split of `st` if this kernel computes its partials.
    fn partial_split(&self, st: &StageProgram) -> Option<Split> {
        match self.role {
            Role::Partials(s) if s.node == st.node => Some(s),
            _ => None,
        }
    }

    /// The split of `st` if this kernel combines its partials.
    fn combined_split(&self, st: &StageProgram) -> Option<Split> {
        match self.role {
            Role::Combine(s) if s.node == st.node => Some(s),
            _ => None,
        }
    }

    /// The slot of a split reduction's partial for the current result and the chunk `chunk`
    /// runs over: `chunk·results` + the row-major index over the outer axes and the stage's
    /// own loops.
    fn partials_slot(
        &self,
        st: &StageProgram,
        scope: &Scope,
        chunk: LoopId,
        split: Split,
    ) -> Result<BufferAccessExpr, LowerError> {
        let buffer = self
            .partials
            .ok_or_else(|| self.internal("a split reduction without a partials buffer"))?;
        let mut terms = vec![(chunk, split.results as i64)];
        let mut stride = 1i64;
        for a in self.p.outer.iter().chain(&st.loops).rev() {
            let (ls, _) = scope.get(a.axis).ok_or_else(|| {
                self.internal(format!("axis {} has no loop", self.g.axis_name(a.axis)))
            })?;
            terms.extend(ls.iter().map(|(l, m)| (*l, m * stride)));
            stride *= a.len as i64;
        }
        Ok(BufferAccessExpr {
            buffer,
            index: AffineExpr::new(terms, 0),
            mask: Vec::new(),
        })
    }

    /// The loop-IR op of a graph op (`weft_ir::loop_ir::ops` holds the one mapping).
    fn loop_op<T>(&self, op: Option<T>, name: &str) -> Result<T, LowerError> {
        op.ok_or_else(|| self.internal(format!("`{name}` has no loop-IR operation")))
    }

    fn internal(&self, message: impl Into<String>) -> LowerError {
        LowerError::Internal {
            kernel: self.p.group,
            message: message.into(),
        }
    }

    fn lower(&mut self) -> Result<(), LowerError> {
        let mut body = Vec::new();
        for st in &self.p.stages {
            body.extend(self.lower_stage(st)?);
        }
        for l in self.outer_loops.iter().rev() {
            body = vec![Stmt::Loop { loop_id: *l, body }];
        }
        let mut pruned = false;
        let body = self.prune_empty(body, &mut pruned);
        // Only a pruned loop can leave hoisted values unread (a load of an empty buffer, say).
        let mut body = body;
        if pruned {
            drop_unused(&mut body);
        }
        self.k.body = body;
        Ok(())
    }

    /// Drops loops that do nothing: those of zero iterations (an empty axis), and those whose
    /// body is left with no store, reduction or loop. Exact (the dropped statements never run
    /// or have no effect), and it keeps a huge loop around an empty one from spinning: a
    /// `[2^40, 0]` tensor has no elements, and its kernel does no work.
    /// Sets `pruned` when it drops anything.
    fn prune_empty(&self, body: Vec<Stmt>, pruned: &mut bool) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(body.len());
        for s in body {
            match s {
                Stmt::Loop { loop_id, body } => {
                    if self.k.loops[loop_id].extent == 0 {
                        *pruned = true;
                        continue;
                    }
                    let body = self.prune_empty(body, pruned);
                    if body.iter().any(|s| !matches!(s, Stmt::Let { .. })) {
                        out.push(Stmt::Loop { loop_id, body });
                    } else {
                        *pruned = true;
                    }
                }
                other => out.push(other),
            }
        }
        out
    }

    fn lower_stage(&mut self, st: &StageProgram) -> Result<Vec<Stmt>, LowerError> {
        let g = self.g;
        let nl = st.loops.len();
        let (partial, combined) = (self.partial_split(st), self.combined_split(st));
        let split = partial.is_some() || combined.is_some();
        let (red_axes, unit_axes) = looped_reduction_axes(st, split);
        // Depth 0 is the outer body; stage loops 1..=nl; reduction loops nl+1..=nl+nr.
        let mut scope = Scope::default();
        for (a, terms) in &self.outer_scope {
            scope.insert_terms(*a, terms.clone(), 0);
        }
        for a in unit_axes {
            // Index 0 throughout: no loop, so a loop with work can be innermost.
            scope.insert_terms(a, Vec::new(), 0);
        }
        let loops = self.stage_loops(st, &red_axes, &mut scope);
        let mut lv = Levels::new(loops.clone());
        let mut vals: Vec<(ValueId, usize)> = Vec::with_capacity(st.body.len() + 1);
        if let (Some(s), Some(chunk)) = (combined, loops.last().copied()) {
            let slot = self.partials_slot(st, &scope, chunk, s)?;
            let level = loops.len();
            vals.push((self.define(&mut lv, level, s.acc, Inst::Load(slot)), level));
        }
        for inst in &st.body {
            let v = self.lower_inst(inst, st, &vals, &scope, &mut lv)?;
            vals.push(v);
        }
        let (result, rlevel) = *vals
            .get(st.result)
            .ok_or_else(|| self.internal("stage result out of range"))?;
        let (value, at_after) = match &st.reduction {
            None => (result, false),
            Some(r) => {
                let term = Term {
                    op: r.op,
                    value: result,
                    level: rlevel,
                    in_dtype: self.k.values[result],
                    out_dtype: g.node(st.node).dtype,
                    partial: partial.is_some(),
                };
                (
                    self.lower_reduction(term, &red_axes, &loops, nl, &mut lv)?,
                    true,
                )
            }
        };
        let tail = self.stage_tail(st, value, &loops, &scope)?;
        if at_after {
            lv.after[nl].extend(tail);
        } else {
            lv.before[nl].extend(tail);
        }
        Ok(lv.build())
    }

    /// The stage's loops, outermost first — its own axes, then the axes it reduces (or,
    /// combining partials, a scalar loop over the chunks) — each axis entered in `scope` at
    /// its depth; an innermost loop keeping the interpreter's order is recorded in
    /// `ordered_reductions`.
    fn stage_loops(
        &mut self,
        st: &StageProgram,
        red_axes: &[IterAxis],
        scope: &mut Scope,
    ) -> Vec<LoopId> {
        let (nl, nr) = (st.loops.len(), red_axes.len());
        let (partial, combined) = (self.partial_split(st), self.combined_split(st));
        // Combining partials, the reduction runs over the chunks instead of the axes.
        let all: Vec<IterAxis> = match combined {
            Some(_) => st.loops.clone(),
            None => st.loops.iter().chain(red_axes).copied().collect(),
        };
        let ordered = nr > 0
            && st
                .reduction
                .as_ref()
                .is_some_and(|r| keeps_order(r.op, self.g.node(st.node).dtype, self.options));
        let mut loops = Vec::new();
        for (i, a) in all.iter().enumerate() {
            let innermost = i + 1 == all.len() && combined.is_none();
            // A split reduction's leading axis runs over the chunk's range: `Q·chunk + j`.
            let chunked = partial.filter(|_| i == nl).zip(self.chunk_loop);
            let extent = chunked.map_or(a.len as u64, |(s, _)| s.per_chunk);
            let vectorize = self.options.vectorize && innermost && extent >= 4 && !ordered;
            let l = self.k.add_loop(
                extent,
                LoopAnnotations {
                    vectorize,
                    unroll: if vectorize {
                        unroll_for(extent as usize, nr > 0)
                    } else {
                        1
                    },
                    parallel: false,
                },
            );
            match chunked {
                Some((s, chunk)) => {
                    scope.insert_terms(a.axis, vec![(chunk, s.per_chunk as i64), (l, 1)], i + 1)
                }
                None => scope.insert(a.axis, l, i + 1),
            }
            loops.push(l);
            if ordered && innermost {
                self.ordered_reductions.push(l);
            }
        }
        // Partials are combined in chunk order, by a scalar loop.
        if let Some(s) = combined {
            loops.push(self.k.add_loop(s.chunks, LoopAnnotations::default()));
        }
        loops
    }

    /// Where the stage's `value` goes once computed: its partials slot (a split reduction's
    /// partials kernel), its stored tensor, and its register or row scratch (kept locally).
    fn stage_tail(
        &mut self,
        st: &StageProgram,
        value: ValueId,
        loops: &[LoopId],
        scope: &Scope,
    ) -> Result<Vec<Stmt>, LowerError> {
        let nl = st.loops.len();
        let mut tail = Vec::new();
        if let (Some(s), Some(chunk)) = (self.partial_split(st), self.chunk_loop) {
            if self.k.values[value] != s.acc {
                return Err(self.internal("a partial is not of its accumulation type"));
            }
            tail.push(Stmt::Store {
                target: self.partials_slot(st, scope, chunk, s)?,
                value,
            });
        }
        if let Some(t) = &st.store {
            let view = t
                .view
                .as_ref()
                .ok_or_else(|| self.internal("store without a view"))?;
            let buffer = self.buffers[&BufferBinding::Tensor(st.node)];
            let index = self.view_index(view, scope)?;
            tail.push(Stmt::Store {
                target: BufferAccessExpr {
                    buffer,
                    index,
                    mask: Vec::new(),
                },
                value,
            });
        }
        if st.local && nl == 0 {
            self.registers.insert(st.node, value);
        } else if st.local {
            let sc = self.scratch[&st.node].clone();
            let mut terms: Vec<(LoopId, i64)> = loops[..nl]
                .iter()
                .zip(&sc.strides)
                .map(|(l, s)| (*l, *s))
                .collect();
            if self.parallel {
                terms.push((self.outer_loops[0], sc.row));
            }
            tail.push(Stmt::Store {
                target: BufferAccessExpr {
                    buffer: sc.buffer,
                    index: AffineExpr::new(terms, 0),
                    mask: Vec::new(),
                },
                value,
            });
        }
        Ok(tail)
    }

    fn define(&mut self, lv: &mut Levels, level: usize, ty: DType, inst: Inst) -> ValueId {
        let (v, s) = self.k.define(ty, inst);
        lv.before[level].push(s);
        v
    }

    fn define_after(&mut self, lv: &mut Levels, level: usize, ty: DType, inst: Inst) -> ValueId {
        let (v, s) = self.k.define(ty, inst);
        lv.after[level].push(s);
        v
    }

    /// The reduction of a stage: an accumulator declared at depth `nl` (after the stage's own
    /// loops), the term reduced in the innermost loop, and the result read after the loops.
    fn lower_reduction(
        &mut self,
        t: Term,
        red: &[IterAxis],
        loops: &[LoopId],
        nl: usize,
        lv: &mut Levels,
    ) -> Result<ValueId, LowerError> {
        // The reduction loops follow the stage's `nl` loops (over the chunks, combining).
        let inner = loops.len();
        let ty = accumulation_type(t.op, t.in_dtype, self.options);
        let value = if ty != t.in_dtype {
            self.define(lv, t.level, ty, Inst::Convert(t.value))
        } else {
            t.value
        };
        if red.is_empty() && !matches!(t.op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
            // Over no axes each result is its one term, as in the interpreter: folding it
            // into the identity would turn a −0 sum into +0.
            let v = if ty != t.out_dtype {
                self.define_after(lv, nl, t.out_dtype, Inst::Convert(value))
            } else {
                value
            };
            return Ok(v);
        }
        let kind = match t.op {
            ReduceOp::Sum | ReduceOp::Mean => ReduceKind::Sum,
            ReduceOp::Prod => ReduceKind::Prod,
            ReduceOp::Max => ReduceKind::Max,
            ReduceOp::Min => ReduceKind::Min,
            ReduceOp::ArgMax => ReduceKind::ArgMax,
            ReduceOp::ArgMin => ReduceKind::ArgMin,
        };
        let acc = self.k.add_acc(kind, ty);
        lv.before[nl].push(Stmt::DeclareAcc(acc));
        let arg = kind.has_index();
        let index = if arg {
            Some(self.flat_index(red, &loops[nl..], inner, lv))
        } else {
            None
        };
        // Float arg-reductions: the first NaN wins, found by a second accumulator.
        let nan_acc: Option<AccId> = if arg && ty.is_float() {
            let a = self.k.add_acc(ReduceKind::ArgMax, DType::I32);
            lv.before[nl].push(Stmt::DeclareAcc(a));
            let is_nan = self.define(
                lv,
                t.level,
                DType::Bool,
                Inst::Compare(LCompare::Ne, value, value),
            );
            let as_int = self.define(lv, t.level, DType::I32, Inst::Convert(is_nan));
            lv.before[inner].push(Stmt::Reduce {
                acc: a,
                value: as_int,
                index,
            });
            Some(a)
        } else {
            None
        };
        lv.before[inner].push(Stmt::Reduce { acc, value, index });
        if t.partial {
            // A chunk's partial stays in the accumulation type, undivided: the combining
            // kernel finishes it.
            return Ok(self.define_after(lv, nl, ty, Inst::AccValue(acc)));
        }
        let out = if arg {
            self.arg_result(acc, nan_acc, nl, lv)
        } else {
            self.reduced_value(t, acc, ty, red, nl, lv)?
        };
        if self.k.values[out] != t.out_dtype {
            return Err(self.internal(format!(
                "reduction {} gives {} but the node is {}",
                t.op.name(),
                self.k.values[out],
                t.out_dtype
            )));
        }
        Ok(out)
    }

    /// An arg-reduction's index after its loops: the first NaN's where `nan_acc` found one.
    fn arg_result(
        &mut self,
        acc: AccId,
        nan_acc: Option<AccId>,
        nl: usize,
        lv: &mut Levels,
    ) -> ValueId {
        let i = self.define_after(lv, nl, DType::I64, Inst::AccIndex(acc));
        let Some(a) = nan_acc else {
            return i;
        };
        let any = self.define_after(lv, nl, DType::I32, Inst::AccValue(a));
        let zero = self.define_after(lv, nl, DType::I32, Inst::Const(ScalarValue::I32(0)));
        let has = self.define_after(lv, nl, DType::Bool, Inst::Compare(LCompare::Gt, any, zero));
        let ni = self.define_after(lv, nl, DType::I64, Inst::AccIndex(a));
        self.define_after(
            lv,
            nl,
            DType::I64,
            Inst::Select {
                cond: has,
                if_true: ni,
                if_false: i,
            },
        )
    }

    /// A reduction's value after its loops: a mean divided by the count, then back from the
    /// accumulation type `ty` (i32 for bools, f64 for f32), rounding once.
    fn reduced_value(
        &mut self,
        t: Term,
        acc: AccId,
        ty: DType,
        red: &[IterAxis],
        nl: usize,
        lv: &mut Levels,
    ) -> Result<ValueId, LowerError> {
        let v = self.define_after(lv, nl, ty, Inst::AccValue(acc));
        let v = if t.op == ReduceOp::Mean {
            let lens: Vec<usize> = red.iter().map(|a| a.len).collect();
            let count = weft_ir::size::element_count(&lens)
                .ok_or_else(|| self.internal("a mean's count overflows past a verified size"))?;
            let c = self.define_after(
                lv,
                nl,
                ty,
                Inst::Const(scalar_value(Scalar::Float(count as f64), ty)),
            );
            self.define_after(lv, nl, ty, Inst::Binary(LBinary::Div, v, c))
        } else {
            v
        };
        Ok(if ty != t.out_dtype {
            self.define_after(lv, nl, t.out_dtype, Inst::Convert(v))
        } else {
            v
        })
    }

    /// The row-major flat index (i64) over the reduction loops, at the innermost level.
    fn flat_index(
        &mut self,
        red: &[IterAxis],
        loops: &[LoopId],
        level: usize,
        lv: &mut Levels,
    ) -> ValueId {
        let mut acc: Option<ValueId> = None;
        for (a, l) in red.iter().zip(loops) {
            let i = self.define(lv, level, DType::I64, Inst::Index(*l));
            acc = Some(match acc {
                None => i,
                Some(prev) => {
                    let n = self.define(
                        lv,
                        level,
                        DType::I64,
                        Inst::Const(ScalarValue::I64(a.len as i64)),
                    );
                    let m = self.define(lv, level, DType::I64, Inst::Binary(LBinary::Mul, prev, n));
                    self.define(lv, level, DType::I64, Inst::Binary(LBinary::Add, m, i))
                }
            });
        }
        match acc {
            Some(v) => v,
            None => self.define(lv, level, DType::I64, Inst::Const(ScalarValue::I64(0))),
        }
    }

    fn affine(&self, e: &PassAffine, scope: &Scope) -> Result<(AffineExpr, usize), LowerError> {
        let mut terms = Vec::new();
        let mut level = 0;
        for (a, k) in &e.terms {
            let (ls, d) = scope.get(*a).ok_or_else(|| {
                self.internal(format!("axis {} has no loop", self.g.axis_name(*a)))
            })?;
            terms.extend(ls.iter().map(|(l, m)| (*l, k * m)));
            level = level.max(d);
        }
        Ok((AffineExpr::new(terms, e.constant), level))
    }

    fn view_index(&self, v: &StridedView, scope: &Scope) -> Result<AffineExpr, LowerError> {
        Ok(self.view_index_level(v, scope)?.0)
    }

    fn view_index_level(
        &self,
        v: &StridedView,
        scope: &Scope,
    ) -> Result<(AffineExpr, usize), LowerError> {
        let mut terms = Vec::new();
        let mut level = 0;
        for (a, s) in v.axes.iter().zip(&v.strides) {
            if *s == 0 {
                continue;
            }
            let (ls, d) = scope.get(a.axis).ok_or_else(|| {
                self.internal(format!("axis {} has no loop", self.g.axis_name(a.axis)))
            })?;
            terms.extend(ls.iter().map(|(l, m)| (*l, s * m)));
            level = level.max(d);
        }
        Ok((AffineExpr::new(terms, v.offset), level))
    }

    fn masks(
        &self,
        valid: &[ValidRange],
        scope: &Scope,
    ) -> Result<(Vec<MaskBound>, usize), LowerError> {
        let mut out = Vec::new();
        let mut level = 0;
        for r in valid {
            let (expr, d) = self.affine(&r.index, scope)?;
            level = level.max(d);
            out.push(MaskBound {
                expr,
                lo: r.lo,
                hi: r.hi,
            });
        }
        Ok((out, level))
    }

    /// A bool value: every range of `valid` holds.
    fn condition(
        &mut self,
        valid: &[ValidRange],
        scope: &Scope,
        lv: &mut Levels,
    ) -> Result<(ValueId, usize), LowerError> {
        let mut cond: Option<ValueId> = None;
        let mut level = 0;
        for r in valid {
            let (_, d) = self.affine(&r.index, scope)?;
            level = level.max(d);
        }
        for r in valid {
            let idx = self.affine_value(&r.index, scope, level, lv)?;
            let lo = self.define(lv, level, DType::I64, Inst::Const(ScalarValue::I64(r.lo)));
            let hi = self.define(lv, level, DType::I64, Inst::Const(ScalarValue::I64(r.hi)));
            let a = self.define(lv, level, DType::Bool, Inst::Compare(LCompare::Ge, idx, lo));
            let b = self.define(lv, level, DType::Bool, Inst::Compare(LCompare::Lt, idx, hi));
            let both = self.define(lv, level, DType::Bool, Inst::Binary(LBinary::And, a, b));
            cond = Some(match cond {
                None => both,
                Some(c) => self.define(lv, level, DType::Bool, Inst::Binary(LBinary::And, c, both)),
            });
        }
        match cond {
            Some(c) => Ok((c, level)),
            None => Ok((
                self.define(lv, 0, DType::Bool, Inst::Const(ScalarValue::Bool(true))),
                0,
            )),
        }
    }

    /// The i64 value of an affine index at `level`.
    fn affine_value(
        &mut self,
        e: &PassAffine,
        scope: &Scope,
        level: usize,
        lv: &mut Levels,
    ) -> Result<ValueId, LowerError> {
        let mut acc = self.define(
            lv,
            level,
            DType::I64,
            Inst::Const(ScalarValue::I64(e.constant)),
        );
        for (a, k) in &e.terms {
            let (ls, _) = scope.get(*a).ok_or_else(|| {
                self.internal(format!("axis {} has no loop", self.g.axis_name(*a)))
            })?;
            for (l, m) in ls.iter().copied() {
                let i = self.define(lv, level, DType::I64, Inst::Index(l));
                let c = self.define(lv, level, DType::I64, Inst::Const(ScalarValue::I64(k * m)));
                let m = self.define(lv, level, DType::I64, Inst::Binary(LBinary::Mul, i, c));
                acc = self.define(lv, level, DType::I64, Inst::Binary(LBinary::Add, acc, m));
            }
        }
        Ok(acc)
    }

    fn lower_inst(
        &mut self,
        inst: &crate::passes::kernel::Inst,
        st: &StageProgram,
        vals: &[(ValueId, usize)],
        scope: &Scope,
        lv: &mut Levels,
    ) -> Result<(ValueId, usize), LowerError> {
        let ty = inst.dtype;
        let get = |v: usize| -> Result<(ValueId, usize), LowerError> {
            vals.get(v).copied().ok_or_else(|| LowerError::Internal {
                kernel: self.p.group,
                message: format!("operand v{v} used before it is defined"),
            })
        };
        Ok(match &inst.instr {
            Instr::Load {
                tensor,
                valid,
                view,
                ..
            } => self.lower_load(ty, *tensor, valid, view.as_ref(), scope, lv)?,
            Instr::Immediate(s) => (self.define(lv, 0, ty, Inst::Const(scalar_value(*s, ty))), 0),
            Instr::Unary(u, a) => {
                let (a, l) = get(*a)?;
                (
                    self.define(
                        lv,
                        l,
                        ty,
                        Inst::Unary(self.loop_op(LUnary::from_graph_op(*u), u.name())?, a),
                    ),
                    l,
                )
            }
            Instr::Binary(BinaryOp::Power, x, y) if ty.is_int() => {
                let ((x, lx), (y, ly)) = (get(*x)?, get(*y)?);
                let l = lx.max(ly);
                (self.int_power(x, y, ty, l, lv), l)
            }
            Instr::Binary(b, x, y) => {
                let ((x, lx), (y, ly)) = (get(*x)?, get(*y)?);
                let l = lx.max(ly);
                (
                    self.define(
                        lv,
                        l,
                        ty,
                        Inst::Binary(self.loop_op(LBinary::from_graph_op(*b), b.name())?, x, y),
                    ),
                    l,
                )
            }
            Instr::Compare(c, x, y) => {
                let ((mut x, lx), (mut y, ly)) = (get(*x)?, get(*y)?);
                let l = lx.max(ly);
                let ordered = !matches!(c, CompareOp::Equal | CompareOp::NotEqual);
                if ordered && self.k.values[x] == DType::Bool {
                    x = self.define(lv, l, DType::I32, Inst::Convert(x));
                    y = self.define(lv, l, DType::I32, Inst::Convert(y));
                }
                (
                    self.define(
                        lv,
                        l,
                        ty,
                        Inst::Compare(self.loop_op(LCompare::from_graph_op(*c), c.name())?, x, y),
                    ),
                    l,
                )
            }
            Instr::Select(c, x, y) => {
                let ((c, lc), (x, lx), (y, ly)) = (get(*c)?, get(*x)?, get(*y)?);
                let l = lc.max(lx).max(ly);
                (
                    self.define(
                        lv,
                        l,
                        ty,
                        Inst::Select {
                            cond: c,
                            if_true: x,
                            if_false: y,
                        },
                    ),
                    l,
                )
            }
            Instr::Convert(x) => {
                let (x, l) = get(*x)?;
                (self.define(lv, l, ty, Inst::Convert(x)), l)
            }
            Instr::Guard { valid, value } => {
                let v = get(*value)?;
                self.lower_guard(ty, st, valid, *value, v, scope, lv)?
            }
            Instr::Choose { parts } => self.lower_choose(ty, parts, vals, scope, lv)?,
            Instr::ReadLocal { node, index, valid } => {
                self.read_local(ty, *node, index, valid, scope, lv)?
            }
        })
    }

    /// A value operand of the stage body: its value and level.
    fn operand(&self, vals: &[(ValueId, usize)], v: usize) -> Result<(ValueId, usize), LowerError> {
        vals.get(v)
            .copied()
            .ok_or_else(|| self.internal(format!("operand v{v} used before it is defined")))
    }

    /// A load of a stored tensor through its view, masked by `valid`.
    fn lower_load(
        &mut self,
        ty: DType,
        tensor: NodeId,
        valid: &[ValidRange],
        view: Option<&StridedView>,
        scope: &Scope,
        lv: &mut Levels,
    ) -> Result<(ValueId, usize), LowerError> {
        let view = view.ok_or_else(|| self.internal("load without a view"))?;
        let (index, l1) = self.view_index_level(view, scope)?;
        let (mask, l2) = self.masks(valid, scope)?;
        let level = l1.max(l2);
        let buffer = *self
            .buffers
            .get(&BufferBinding::Tensor(tensor))
            .ok_or_else(|| self.internal("load of an unbound tensor"))?;
        let v = self.define(
            lv,
            level,
            ty,
            Inst::Load(BufferAccessExpr {
                buffer,
                index,
                mask,
            }),
        );
        Ok((v, level))
    }

    /// Pad's guard: the value where every range of `valid` holds, else zero — nothing to do
    /// where the value is a masked load under the same (or stricter) ranges, already zero
    /// outside.
    #[allow(clippy::too_many_arguments)]
    fn lower_guard(
        &mut self,
        ty: DType,
        st: &StageProgram,
        valid: &[ValidRange],
        value: usize,
        (v, l): (ValueId, usize),
        scope: &Scope,
        lv: &mut Levels,
    ) -> Result<(ValueId, usize), LowerError> {
        let covered = match st.body.get(value).map(|i| &i.instr) {
            Some(Instr::Load { valid: inner, .. }) => valid.iter().all(|r| inner.contains(r)),
            _ => false,
        };
        if covered {
            return Ok((v, l));
        }
        let (c, lc) = self.condition(valid, scope, lv)?;
        let level = l.max(lc);
        let z = self.define(lv, 0, ty, Inst::Const(ty.zero()));
        let sel = Inst::Select {
            cond: c,
            if_true: v,
            if_false: z,
        };
        Ok((self.define(lv, level, ty, sel), level))
    }

    /// Concat: a chain of selects over its parts, the last part where no range holds.
    fn lower_choose(
        &mut self,
        ty: DType,
        parts: &[(ValidRange, usize)],
        vals: &[(ValueId, usize)],
        scope: &Scope,
        lv: &mut Levels,
    ) -> Result<(ValueId, usize), LowerError> {
        let Some(((_, last), rest)) = parts.split_last() else {
            return Err(self.internal("concat without parts"));
        };
        let (mut acc, mut level) = self.operand(vals, *last)?;
        for (r, x) in rest.iter().rev() {
            let (x, lx) = self.operand(vals, *x)?;
            let (c, lc) = self.condition(std::slice::from_ref(r), scope, lv)?;
            level = level.max(lx).max(lc);
            acc = self.define(
                lv,
                level,
                ty,
                Inst::Select {
                    cond: c,
                    if_true: x,
                    if_false: acc,
                },
            );
        }
        Ok((acc, level))
    }

    /// A read of a stage kept locally: its register (zero where `valid` fails), or its row
    /// scratch at `index`, masked by `valid`.
    fn read_local(
        &mut self,
        ty: DType,
        node: NodeId,
        index: &[PassAffine],
        valid: &[ValidRange],
        scope: &Scope,
        lv: &mut Levels,
    ) -> Result<(ValueId, usize), LowerError> {
        if let Some(v) = self.registers.get(&node).copied() {
            if valid.is_empty() {
                return Ok((v, 0));
            }
            let (c, lc) = self.condition(valid, scope, lv)?;
            let z = self.define(lv, 0, ty, Inst::Const(ty.zero()));
            let sel = Inst::Select {
                cond: c,
                if_true: v,
                if_false: z,
            };
            return Ok((self.define(lv, lc, ty, sel), lc));
        }
        let sc = self.scratch.get(&node).cloned().ok_or_else(|| {
            self.internal(format!(
                "{} is read locally but kept nowhere",
                self.g.node_label(node)
            ))
        })?;
        let mut expr = AffineExpr::constant(0);
        let mut level = 0;
        for (e, s) in index.iter().zip(&sc.strides) {
            let (a, d) = self.affine(&e.scale_add(*s, 0), scope)?;
            expr = add_affine(&expr, &a);
            level = level.max(d);
        }
        if self.parallel {
            expr = add_affine(&expr, &AffineExpr::new([(self.outer_loops[0], sc.row)], 0));
        }
        let (mask, lm) = self.masks(valid, scope)?;
        level = level.max(lm);
        let load = Inst::Load(BufferAccessExpr {
            buffer: sc.buffer,
            index: expr,
            mask,
        });
        Ok((self.define(lv, level, ty, load), level))
    }

    /// `x^y` for integers, wrapping: square-and-multiply over the exponent's bits (unrolled),
    /// and for a negative exponent 1 (base 1), ±1 (base −1) or 0.
    fn int_power(
        &mut self,
        x: ValueId,
        y: ValueId,
        ty: DType,
        l: usize,
        lv: &mut Levels,
    ) -> ValueId {
        let c = |v: i64| {
            if ty == DType::I32 {
                ScalarValue::I32(v as i32)
            } else {
                ScalarValue::I64(v)
            }
        };
        let bits = if ty == DType::I32 { 31 } else { 63 };
        let zero = self.define(lv, l, ty, Inst::Const(c(0)));
        let one = self.define(lv, l, ty, Inst::Const(c(1)));
        let two = self.define(lv, l, ty, Inst::Const(c(2)));
        let minus_one = self.define(lv, l, ty, Inst::Const(c(-1)));
        let mut acc = one;
        let mut base = x;
        let mut q = y;
        for i in 0..bits {
            let half = self.define(lv, l, ty, Inst::Binary(LBinary::Div, q, two));
            let twice = self.define(lv, l, ty, Inst::Binary(LBinary::Mul, half, two));
            let bit = self.define(lv, l, ty, Inst::Binary(LBinary::Sub, q, twice));
            let set = self.define(lv, l, DType::Bool, Inst::Compare(LCompare::Ne, bit, zero));
            let times = self.define(lv, l, ty, Inst::Binary(LBinary::Mul, acc, base));
            acc = self.define(
                lv,
                l,
                ty,
                Inst::Select {
                    cond: set,
                    if_true: times,
                    if_false: acc,
                },
            );
            if i + 1 < bits {
                base = self.define(lv, l, ty, Inst::Binary(LBinary::Mul, base, base));
            }
            q = half;
        }
        // Negative exponent: 1 for base 1, ±1 for base −1 (by parity), else 0.
        let neg = self.define(lv, l, DType::Bool, Inst::Compare(LCompare::Lt, y, zero));
        let is_one = self.define(lv, l, DType::Bool, Inst::Compare(LCompare::Eq, x, one));
        let is_m1 = self.define(
            lv,
            l,
            DType::Bool,
            Inst::Compare(LCompare::Eq, x, minus_one),
        );
        let yh = self.define(lv, l, ty, Inst::Binary(LBinary::Div, y, two));
        let y2 = self.define(lv, l, ty, Inst::Binary(LBinary::Mul, yh, two));
        let even = self.define(lv, l, DType::Bool, Inst::Compare(LCompare::Eq, y, y2));
        let pm = self.define(
            lv,
            l,
            ty,
            Inst::Select {
                cond: even,
                if_true: one,
                if_false: minus_one,
            },
        );
        let m1 = self.define(
            lv,
            l,
            ty,
            Inst::Select {
                cond: is_m1,
                if_true: pm,
                if_false: zero,
            },
        );
        let small = self.define(
            lv,
            l,
            ty,
            Inst::Select {
                cond: is_one,
                if_true: one,
                if_false: m1,
            },
        );
        self.define(
            lv,
            l,
            ty,
            Inst::Select {
                cond: neg,
                if_true: small,
                if_false: acc,
            },
        )
    }
}

fn add_affine(a: &AffineExpr, b: &AffineExpr) -> AffineExpr {
    AffineExpr::new(
        a.terms().iter().chain(b.terms()).copied(),
        a.offset().wrapping_add(b.offset()),
    )
}

/// The loops in scope: axis → (its index as loops × coefficients, depth). An axis is one loop,
/// except a chunked outer axis: `Q·chunk + row` over a parallel chunk loop and a row loop.
#[derive(Default, Clone)]
struct Scope {
    map: HashMap<Axis, (Vec<(LoopId, i64)>, usize)>,
}

impl Scope {
    fn insert(&mut self, a: Axis, l: LoopId, depth: usize) {
        self.map.insert(a, (vec![(l, 1)], depth));
    }
    fn insert_terms(&mut self, a: Axis, terms: Vec<(LoopId, i64)>, depth: usize) {
        self.map.insert(a, (terms, depth));
    }
    fn get(&self, a: Axis) -> Option<(&[(LoopId, i64)], usize)> {
        self.map.get(&a).map(|(t, d)| (&t[..], *d))
    }
}

/// `k` with its values numbered in textual order (hoisting defines them out of order), so the
/// printed form reads naturally and is stable.
fn renumber(mut k: Kernel) -> Kernel {
    fn walk(body: &[Stmt], order: &mut Vec<ValueId>) {
        for s in body {
            match s {
                Stmt::Let { result, .. } => order.push(*result),
                Stmt::Loop { body, .. } | Stmt::If { body, .. } => walk(body, order),
                _ => {}
            }
        }
    }
    let mut order = Vec::new();
    walk(&k.body, &mut order);
    let mut new_of: HashMap<ValueId, ValueId> = HashMap::new();
    let mut values = weft_ir::arena::PrimaryMap::new();
    for v in &order {
        new_of.insert(*v, values.push(k.values[*v]));
    }
    let m = |v: &mut ValueId| {
        if let Some(n) = new_of.get(v) {
            *v = *n;
        }
    };
    fn apply(body: &mut [Stmt], m: &dyn Fn(&mut ValueId)) {
        for s in body {
            match s {
                Stmt::Let { result, inst } => {
                    m(result);
                    inst.operands_mut(m);
                }
                Stmt::Store { value, .. } => m(value),
                Stmt::Reduce { value, index, .. } => {
                    m(value);
                    if let Some(i) = index {
                        m(i);
                    }
                }
                Stmt::Loop { body, .. } => apply(body, m),
                Stmt::If { cond, body } => {
                    m(cond);
                    apply(body, m);
                }
                Stmt::DeclareAcc(_) => {}
            }
        }
    }
    apply(&mut k.body, &m);
    k.values = values;
    k
}
