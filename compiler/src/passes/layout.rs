//! layout assignment: element strides for every tensor that exists in memory.
//!
//! Assumes: kernel programs built from a fusion plan (loads carry per-axis affine indices).
//! Guarantees:
//! - placeholders, variables, persistent tensors, constants, graph outputs and assigned values
//!   are row-major in their declared axes order (the caller's and the interpreter's layout),
//!   except placeholders and outputs for which the caller asks for another axis order;
//! - every other stored intermediate is dense (no gaps), its axes ordered major to minor by how
//!   deep in its first reader's loop nest they are walked (outer loops major, innermost loop
//!   minor), so that reader walks it contiguously — the first reader that is not a GEMM call;
//!   ties keep the declared order; one only GEMM calls read keeps its declared order (they
//!   take any strides; its writer walks it in that order, and the convolution expansion
//!   declares the image's positions innermost, where the taps slide);
//! - afterwards every load and store of every kernel program carries its [`StridedView`]
//!   (strides per loop axis of its stage: outer loops, stage loops, reduction loops).

use super::groups::FusionPlan;
use super::kernel::{Instr, KernelProgram};
use super::views::{strided, AffineExpr, IterAxis, StridedView};
use super::PassError;
use std::collections::{BTreeMap, BTreeSet};
use weft_ir::{Axis, Graph, NodeId, Op};

/// How one stored tensor is laid out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The node's axes, major to minor.
    pub order: Vec<Axis>,
    /// Element strides, one per axis of the node in the node's axes order.
    pub strides: Vec<i64>,
    /// The number of elements stored.
    pub elements: usize,
    /// Bytes stored (elements × dtype size).
    pub bytes: usize,
}

/// The layout of every stored tensor.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LayoutPlan {
    /// Stored node → layout.
    pub layouts: BTreeMap<NodeId, Layout>,
}

impl LayoutPlan {
    /// A readable listing.
    pub fn display(&self, g: &Graph) -> String {
        let mut s = String::new();
        for (n, l) in &self.layouts {
            let order: Vec<String> = l.order.iter().map(|a| g.axis_name(*a)).collect();
            s += &format!(
                "{} {} order ({}) strides {:?} {} bytes\n",
                g.node_label(*n),
                g.axes_name(&g.node(*n).axes),
                order.join(", "),
                l.strides,
                l.bytes
            );
        }
        s
    }
}

/// Chooses layouts for every stored tensor of `plan` and writes the strided views into
/// `programs`.
/// `requested` gives, for some placeholders and outputs, the axis order (major to minor) the
/// caller will supply or wants; it must be a reordering of the node's axes.
pub fn assign_layouts(
    g: &Graph,
    plan: &FusionPlan,
    programs: &mut [KernelProgram],
    requested: &BTreeMap<NodeId, Vec<Axis>>,
) -> Result<LayoutPlan, PassError> {
    let mut layouts = BTreeMap::new();
    let first_loads = first_loads(plan, programs);
    let outputs: BTreeSet<NodeId> = g.outputs().iter().copied().collect();
    for b in &plan.boundaries {
        let node = g.node(b.node);
        let axes: Vec<Axis> = node.axes.iter().copied().collect();
        if let Some(order) = requested.get(&b.node) {
            let is_input = matches!(
                node.op,
                Op::Tensor {
                    kind: weft_ir::TensorKind::Placeholder,
                    ..
                }
            );
            let reorder = order.len() == axes.len() && order.iter().all(|a| axes.contains(a));
            if !(is_input || outputs.contains(&b.node)) || !reorder {
                return Err(PassError::Unsupported {
                    node: g.node_label(b.node),
                    reason: format!(
                        "a layout order can be asked only for a placeholder or an output, as a \
                         reordering of its axes {}",
                        g.axes_name(&node.axes)
                    ),
                });
            }
        }
        let fixed = matches!(node.op, Op::Tensor { .. } | Op::Assign { .. })
            || outputs.contains(&b.node)
            || b.reason == super::groups::BoundaryReason::GraphOutput;
        let order = if let Some(order) = requested.get(&b.node) {
            order.clone()
        } else if fixed
            || first_loads
                .get(&b.node)
                .is_some_and(|at| strided_reduction_reads(g, plan, programs, at.0))
        {
            // A reduction fusion judged strided reads its operands as declared, summing in
            // memory order (fusion's `StridedReduction`).
            axes.clone()
        } else {
            first_loads
                .get(&b.node)
                .map(|at| reader_order(g, b.node, programs, *at))
                .unwrap_or(axes.clone())
        };
        let shape = g.shape_of(&node.axes)?;
        // A verified graph's tensors fit `crate::size`'s bound, so every stride (a product of
        // some of its lengths) fits i64; the error only guards graphs that skipped verify.
        let size = g.tensor_size(b.node)?;
        let mut strides = vec![0i64; axes.len()];
        let mut s = 1i64;
        // A tensor with an empty axis has no elements: nothing is ever addressed, so its
        // strides stay 0 (its other axes may be longer than any index).
        let empty = size.elements == 0;
        for a in order.iter().rev().filter(|_| !empty) {
            let k = node
                .axes
                .position(*a)
                .ok_or_else(|| PassError::Internal("layout order".into()))?;
            strides[k] = s;
            s = weft_ir::size::to_i64(shape[k])
                .and_then(|l| s.checked_mul(l))
                .ok_or_else(|| {
                    PassError::Internal("stride overflow past a verified size".into())
                })?;
        }
        layouts.insert(
            b.node,
            Layout {
                order,
                strides,
                elements: size.elements,
                bytes: size.bytes,
            },
        );
    }
    for p in programs.iter_mut() {
        let outer = p.outer.clone();
        for st in &mut p.stages {
            let mut space: Vec<IterAxis> = outer.clone();
            space.extend(st.loops.iter().copied());
            if let Some(r) = &st.reduction {
                space.extend(r.axes.iter().copied());
            }
            for inst in &mut st.body {
                if let Instr::Load {
                    tensor,
                    index,
                    view,
                    ..
                } = &mut inst.instr
                {
                    *view = Some(view_of(&layouts, *tensor, index, &space)?);
                }
            }
            if let Some(t) = &mut st.store {
                let mut space: Vec<IterAxis> = outer.clone();
                space.extend(st.loops.iter().copied());
                t.view = Some(view_of(&layouts, st.node, &t.index, &space)?);
            }
        }
    }
    Ok(LayoutPlan { layouts })
}

fn view_of(
    layouts: &BTreeMap<NodeId, Layout>,
    t: NodeId,
    index: &[AffineExpr],
    space: &[IterAxis],
) -> Result<StridedView, PassError> {
    let l = layouts
        .get(&t)
        .ok_or_else(|| PassError::Internal(format!("{t} is read but has no layout")))?;
    let mut v = strided(t, index, &l.strides, space);
    // Keep only the axes that move the address: the view's shape is what the load walks.
    let keep: Vec<usize> = (0..v.axes.len()).filter(|i| v.strides[*i] != 0).collect();
    v.axes = keep.iter().map(|i| v.axes[*i]).collect();
    v.strides = keep.iter().map(|i| v.strides[*i]).collect();
    Ok(v)
}

/// Whether program `p` computes a reduction that fusion stored for reducing an axis its large
/// operand strides along in declared order ([`BoundaryReason::StridedReduction`]): that
/// judgement assumed the declared order, in which the reduction then sums in memory order.
///
/// [`BoundaryReason::StridedReduction`]: super::groups::BoundaryReason::StridedReduction
fn strided_reduction_reads(
    g: &Graph,
    plan: &FusionPlan,
    programs: &[KernelProgram],
    p: usize,
) -> bool {
    let Some(group) = plan.groups.get(programs[p].group) else {
        return false;
    };
    group.roots().iter().any(|r| {
        plan.boundaries
            .binary_search_by_key(r, |b| b.node)
            .is_ok_and(|i| {
                plan.boundaries[i].reason == super::groups::BoundaryReason::StridedReduction
            })
            && matches!(g.node(*r).op, Op::Reduce { .. })
    })
}

/// Where each stored tensor is first loaded by a kernel that is not a GEMM group: (program,
/// stage, instruction), in one pass so that the layout of every tensor costs no search. A
/// tensor only GEMM calls read has none and keeps its declared order: a GEMM takes its
/// operands in any strides, while laying the tensor out in the GEMM's loop order would make
/// the kernel writing it scatter its stores across its own loop order (ResNet-50's
/// activations between convolutions: docs/benchmarks.md).
fn first_loads(
    plan: &FusionPlan,
    programs: &[KernelProgram],
) -> BTreeMap<NodeId, (usize, usize, usize)> {
    let mut first = BTreeMap::new();
    for (pi, p) in programs.iter().enumerate() {
        let gemm = plan
            .groups
            .get(p.group)
            .is_some_and(|g| g.kind == super::groups::GroupKind::Gemm);
        if gemm {
            continue;
        }
        for (si, st) in p.stages.iter().enumerate() {
            for (ii, inst) in st.body.iter().enumerate() {
                if let Instr::Load { tensor, .. } = &inst.instr {
                    first.entry(*tensor).or_insert((pi, si, ii));
                }
            }
        }
    }
    first
}

/// The axes of stored `t` ordered by loop depth in its first reader (outer loops first), from
/// its first load `at` (see [`first_loads`]).
fn reader_order(
    g: &Graph,
    t: NodeId,
    programs: &[KernelProgram],
    (pi, si, ii): (usize, usize, usize),
) -> Vec<Axis> {
    let p = &programs[pi];
    let st = &p.stages[si];
    let mut depth: Vec<Axis> = p.outer.iter().map(|a| a.axis).collect();
    depth.extend(st.loops.iter().map(|a| a.axis));
    if let Some(r) = &st.reduction {
        depth.extend(r.axes.iter().map(|a| a.axis));
    }
    let axes: Vec<Axis> = g.node(t).axes.iter().copied().collect();
    let Instr::Load { index, .. } = &st.body[ii].instr else {
        return axes;
    };
    let key = |k: usize| -> i64 {
        index[k]
            .terms
            .iter()
            .filter_map(|(a, _)| depth.iter().position(|d| d == a))
            .max()
            .map(|d| d as i64)
            .unwrap_or(-1)
    };
    let mut ks: Vec<usize> = (0..axes.len()).collect();
    ks.sort_by_key(|k| key(*k));
    ks.into_iter().map(|k| axes[k]).collect()
}
