//! The adjoint rule of every differentiable op: given a node and its adjoint (an [`Adjoint`]:
//! a node with the node's axes as a set, in any order, and its dtype, or a node to be
//! broadcast to them), the contribution to each operand's adjoint, again with exactly that
//! operand's axes as a set and its dtype.
//!
//! Conventions (docs/autodiff.md): `relu` has derivative 0 at x ≤ 0, `abs` has `sign(x)` (0
//! at 0), `sign` has 0; `maximum`/`minimum` split a tie 0.5/0.5 between the operands, as JAX
//! does; `max`/`min` reductions share the adjoint equally among the elements equal to the
//! result (JAX's rule; with a NaN in the input no element equals the NaN result, and the
//! gradient is 0); `power`'s derivative in the exponent is `xʸ·ln x` where x > 0 and 0 where
//! x ≤ 0, in the base `y·xʸ⁻¹` and 0 where y = 0; `prod` is exact with zeros in the input
//! (the product of the other elements).

use crate::axis::{Axes, Axis, AxisDef, SliceRange};
use crate::graph::{
    AxisSlice, BinaryOp, ConvExpansion, Graph, GraphError, NodeId, Op, ReduceOp, UnaryOp,
};
use crate::host::Scalar;

type Res<T> = Result<T, GraphError>;

/// An adjoint: a node with the adjoint's axes, or a node to be broadcast to another node's
/// axes, kept unmaterialised so a `multiply` can take the smaller node (its adjoint is then a
/// sum of products, [`Graph::sum_of_products`], instead of a product with a broadcast).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Adjoint {
    /// The adjoint itself.
    Node(NodeId),
    /// `broadcast(src, axes of of)`.
    Broadcast {
        /// The values.
        src: NodeId,
        /// The node whose axes it has.
        of: NodeId,
    },
}

impl Adjoint {
    /// `t` broadcast to `of`'s axes, unmaterialised when it lacks some.
    pub(super) fn to(g: &Graph, t: NodeId, of: NodeId) -> Adjoint {
        if g.node(t).axes.is_equal_set(&g.node(of).axes) {
            Adjoint::Node(t)
        } else {
            Adjoint::Broadcast { src: t, of }
        }
    }

    /// The node with the values, without the broadcast.
    pub(super) fn source(self) -> NodeId {
        match self {
            Adjoint::Node(n) | Adjoint::Broadcast { src: n, .. } => n,
        }
    }

    /// The adjoint as a node of its axes.
    pub(super) fn materialise(self, g: &mut Graph) -> Res<NodeId> {
        match self {
            Adjoint::Node(n) => Ok(n),
            Adjoint::Broadcast { src, of } => {
                let axes = g.node(of).axes.clone();
                g.broadcast(src, axes.as_slice())
            }
        }
    }
}

/// The contributions of node `id`'s adjoint `adj` to its operands that `wanted` accepts, as
/// `(operand, contribution)` pairs (an operand used twice gets two).
pub(super) fn contributions(
    g: &mut Graph,
    id: NodeId,
    adj: Adjoint,
    wanted: &dyn Fn(NodeId) -> bool,
) -> Res<Vec<(NodeId, Adjoint)>> {
    let node = g.node(id).clone();
    if let Op::Binary(op @ (BinaryOp::Multiply | BinaryOp::Divide), x, y) = node.op {
        // Linear in the adjoint, whose broadcast the op does itself: the adjoint's values
        // times the other operand, summed over the axes the operand lacks.
        let mut out = Vec::new();
        let src = adj.source();
        if wanted(x) {
            let p = match op {
                BinaryOp::Multiply => g.multiply(src, y)?,
                _ => g.divide(src, y)?,
            };
            let c = sum_to(g, p, x)?;
            out.push((x, Adjoint::to(g, c, x)));
        }
        if wanted(y) {
            let p = match op {
                BinaryOp::Multiply => g.multiply(x, src)?,
                _ => {
                    let full = adj.materialise(g)?;
                    binary(g, op, id, x, y, full, false)?
                }
            };
            let c = sum_to(g, p, y)?;
            out.push((y, Adjoint::to(g, c, y)));
        }
        return Ok(out);
    }
    match &node.op {
        Op::Reduce {
            op: op @ (ReduceOp::Sum | ReduceOp::Mean),
            input,
            axes,
        } => {
            // Broadcast back, left unmaterialised.
            let mut out = Vec::new();
            if wanted(*input) {
                let mut src = adj.source();
                if *op == ReduceOp::Mean {
                    let n = count(g, axes, node.dtype)?;
                    src = g.divide(src, n)?;
                }
                out.push((*input, Adjoint::to(g, src, *input)));
            }
            return Ok(out);
        }
        Op::AxesWithOrder(x) => {
            // The same axes as a set: the adjoint as it is (a gradient is put in its wrt
            // node's order at the end).
            return Ok(if wanted(*x) { vec![(*x, adj)] } else { vec![] });
        }
        _ => {}
    }
    let adj = adj.materialise(g)?;
    let out = nonlinear(g, id, &node, adj, wanted)?;
    Ok(out
        .into_iter()
        .map(|(o, c)| (o, Adjoint::Node(c)))
        .collect())
}

/// The contributions of every op but `multiply` and `divide`, from a materialised adjoint.
fn nonlinear(
    g: &mut Graph,
    id: NodeId,
    node: &crate::graph::Node,
    adj: NodeId,
    wanted: &dyn Fn(NodeId) -> bool,
) -> Res<Vec<(NodeId, NodeId)>> {
    let mut out = Vec::new();
    match &node.op {
        Op::Tensor { .. } | Op::Compare(..) | Op::Assign { .. } | Op::AxesWithOrder(_) => {}
        Op::Unary(op, x) => {
            if wanted(*x) {
                if let Some(c) = unary(g, *op, id, *x, adj)? {
                    out.push((*x, c));
                }
            }
        }
        Op::Binary(op, x, y) => {
            for (k, operand) in [*x, *y].into_iter().enumerate() {
                if wanted(operand) {
                    let c = binary(g, *op, id, *x, *y, adj, k == 0)?;
                    out.push((operand, sum_to(g, c, operand)?));
                }
            }
        }
        Op::Select(cond, a, b) => {
            for (k, operand) in [*a, *b].into_iter().enumerate() {
                if wanted(operand) {
                    let zero = zero(g, node.dtype)?;
                    let c = if k == 0 {
                        g.select(*cond, adj, zero)?
                    } else {
                        g.select(*cond, zero, adj)?
                    };
                    out.push((operand, sum_to(g, c, operand)?));
                }
            }
        }
        Op::Convert(x) => {
            if wanted(*x) {
                let dtype = g.node(*x).dtype;
                out.push((*x, g.convert(adj, dtype)?));
            }
        }
        Op::Reduce { op, input, axes } => {
            if wanted(*input) {
                out.push((*input, reduce(g, *op, id, *input, axes, adj)?));
            }
        }
        Op::Dot(x, y) => {
            if wanted(*x) {
                out.push((*x, dot_left(g, *x, *y, adj)?));
            }
            if wanted(*y) {
                out.push((*y, dot_right(g, *x, *y, adj)?));
            }
        }
        Op::Broadcast(x) => {
            if wanted(*x) {
                out.push((*x, sum_to(g, adj, *x)?));
            }
        }
        Op::CastAxes(x) => {
            if wanted(*x) {
                let ordered = in_order(g, adj, &node.axes)?;
                let axes = g.node(*x).axes.clone();
                out.push((*x, g.cast_axes(ordered, axes.as_slice())?));
            }
        }
        Op::Transpose(x) => {
            if wanted(*x) {
                out.push((*x, g.transpose(adj)?));
            }
        }
        Op::Slice { input, slices } => {
            if wanted(*input) {
                if let Some(c) = unslice(g, adj, slices)? {
                    out.push((*input, c));
                }
            }
        }
        Op::Convolution {
            input,
            filter,
            spec,
        } => {
            let expanded = g.expand_convolution(*input, *filter, spec, ConvExpansion::Strided)?;
            through(g, expanded, adj, &[*input, *filter], wanted, &mut out)?;
        }
        Op::Pool { input, spec } => {
            let expanded = g.expand_pool(*input, spec)?;
            through(g, expanded, adj, &[*input], wanted, &mut out)?;
        }
        Op::Pad { input, pads } => {
            if wanted(*input) {
                out.push((*input, unpad(g, adj, pads)?));
            }
        }
        Op::Concat(parts) => {
            // Derived axes are interned: this is the result's concatenated axis.
            let cat = g.derived_axis(AxisDef::Concat(parts.iter().map(|(_, a)| *a).collect()));
            let mut offset = 0usize;
            for (part, axis) in parts {
                let len = g.resolve_len(*axis)?;
                let end = checked(offset.checked_add(len))?;
                if wanted(*part) && len > 0 {
                    let range = SliceRange::range(as_i64(offset)?, as_i64(end)?);
                    out.push((*part, take_range(g, adj, cat, range, *axis)?));
                }
                offset = end;
            }
        }
        Op::Flatten { input, axes } => {
            if wanted(*input) {
                let flat = g.derived_axis(AxisDef::Flatten(axes.clone()));
                out.push((*input, g.unflatten(adj, flat)?));
            }
        }
        Op::Unflatten { input, axis } => {
            if wanted(*input) {
                let parts = match &g.axis_data(axis.id).def {
                    AxisDef::Flatten(p) => p.clone(),
                    _ => return Err(internal(g, id, "its axis is not a flattened axis")),
                };
                let c = match parts.as_slice() {
                    [] => g.expand_dims(adj, *axis, 0)?,
                    [one] => relabel(g, adj, *one, *axis)?,
                    _ => g.flatten(adj, &parts)?,
                };
                out.push((*input, c));
            }
        }
        Op::ExpandDims { input, axis, .. } => {
            if wanted(*input) {
                out.push((*input, g.sum(adj, &[*axis])?));
            }
        }
    }
    Ok(out)
}

/// The contributions of a convolution or pool through `expanded`, its value built from ordinary
/// ops (`Graph::expand_convolution`, `Graph::expand_pool`): the backward walk of that
/// expansion, seeded with the node's adjoint, for each wanted operand.
fn through(
    g: &mut Graph,
    expanded: NodeId,
    adj: NodeId,
    operands: &[NodeId],
    wanted: &dyn Fn(NodeId) -> bool,
    out: &mut Vec<(NodeId, NodeId)>,
) -> Res<()> {
    let wrt: Vec<NodeId> = operands.iter().copied().filter(|o| wanted(*o)).collect();
    let grads = super::backward_from(g, expanded, adj, &wrt, &[])?;
    out.extend(wrt.into_iter().zip(grads));
    Ok(())
}

fn internal(g: &Graph, id: NodeId, what: &str) -> GraphError {
    GraphError::Axes {
        op: format!("grad of `{}`", g.node_label(id)),
        message: what.to_string(),
    }
}

/// An index or length the backward views need, or the error when it overflows `usize` (only
/// for axes no tensor can have).
fn checked(n: Option<usize>) -> Res<usize> {
    n.ok_or_else(|| GraphError::AxisTooLong {
        axis: "an axis of the backward pass".into(),
    })
}

/// `n` as an i64 slice bound (`size.rs`'s conversion), or the error naming the axis.
fn as_i64(n: usize) -> Res<i64> {
    crate::size::to_i64(n).ok_or_else(|| GraphError::AxisTooLong {
        axis: format!("{n}"),
    })
}

fn constant(g: &mut Graph, v: f64, dtype: crate::dtype::DType) -> Res<NodeId> {
    g.scalar(Scalar::Float(v), dtype)
}

/// The number of elements over `axes`, computed in the graph (lengths may be bound later):
/// the sum of ones over them.
fn count(g: &mut Graph, axes: &Axes, dtype: crate::dtype::DType) -> Res<NodeId> {
    let one = constant(g, 1.0, dtype)?;
    let ones = g.broadcast(one, axes.as_slice())?;
    g.sum(ones, axes.as_slice())
}

fn zero(g: &mut Graph, dtype: crate::dtype::DType) -> Res<NodeId> {
    constant(g, 0.0, dtype)
}

/// `t` summed over the axes `operand` lacks (the adjoint of a broadcast).
fn sum_to(g: &mut Graph, t: NodeId, operand: NodeId) -> Res<NodeId> {
    let extra = g.node(t).axes.difference(&g.node(operand).axes);
    if extra.is_empty() {
        Ok(t)
    } else {
        g.sum(t, extra.as_slice())
    }
}

/// `t` with its axes in the order `axes` (the same set).
fn in_order(g: &mut Graph, t: NodeId, axes: &Axes) -> Res<NodeId> {
    if g.node(t).axes == *axes {
        Ok(t)
    } else {
        g.axes_with_order(t, axes.as_slice())
    }
}

/// `t` with its axis `from` relabelled `to` ([`Graph::relabel`]).
fn relabel(g: &mut Graph, t: NodeId, from: Axis, to: Axis) -> Res<NodeId> {
    g.relabel(t, from, to)
}

fn unary(g: &mut Graph, op: UnaryOp, y: NodeId, x: NodeId, adj: NodeId) -> Res<Option<NodeId>> {
    let dtype = g.node(y).dtype;
    let c = match op {
        UnaryOp::Negative => g.negative(adj)?,
        UnaryOp::Abs => {
            let s = g.sign(x)?;
            g.multiply(adj, s)?
        }
        UnaryOp::Sign => return Ok(None),
        UnaryOp::Exp => g.multiply(adj, y)?,
        UnaryOp::Log => g.divide(adj, x)?,
        UnaryOp::Sqrt => {
            let two = constant(g, 2.0, dtype)?;
            let twice = g.multiply(two, y)?;
            g.divide(adj, twice)?
        }
        UnaryOp::Square => {
            let two = constant(g, 2.0, dtype)?;
            let twice = g.multiply(two, x)?;
            g.multiply(adj, twice)?
        }
        UnaryOp::Reciprocal => {
            let y2 = g.square(y)?;
            let p = g.multiply(adj, y2)?;
            g.negative(p)?
        }
        UnaryOp::Tanh => {
            let one = constant(g, 1.0, dtype)?;
            let y2 = g.square(y)?;
            let d = g.subtract(one, y2)?;
            g.multiply(adj, d)?
        }
        UnaryOp::Sigmoid => {
            let one = constant(g, 1.0, dtype)?;
            let rest = g.subtract(one, y)?;
            let d = g.multiply(y, rest)?;
            g.multiply(adj, d)?
        }
        UnaryOp::Sin => {
            let c = g.cos(x)?;
            g.multiply(adj, c)?
        }
        UnaryOp::Cos => {
            let s = g.sin(x)?;
            let p = g.multiply(adj, s)?;
            g.negative(p)?
        }
        UnaryOp::Relu => {
            let zero = zero(g, dtype)?;
            let positive = g.greater(x, zero)?;
            g.select(positive, adj, zero)?
        }
    };
    Ok(Some(c))
}

/// The contribution of `z = op(x, y)`'s adjoint to `x` (`left`) or `y`, over `z`'s axes
/// (the caller sums it to the operand's).
fn binary(
    g: &mut Graph,
    op: BinaryOp,
    z: NodeId,
    x: NodeId,
    y: NodeId,
    adj: NodeId,
    left: bool,
) -> Res<NodeId> {
    let dtype = g.node(z).dtype;
    Ok(match (op, left) {
        (BinaryOp::Add, _) | (BinaryOp::Subtract, true) => adj,
        (BinaryOp::Subtract, false) => g.negative(adj)?,
        (BinaryOp::Multiply, true) => g.multiply(adj, y)?,
        (BinaryOp::Multiply, false) => g.multiply(x, adj)?,
        (BinaryOp::Divide, true) => g.divide(adj, y)?,
        (BinaryOp::Divide, false) => {
            // d(x/y)/dy = −(x/y)/y.
            let p = g.multiply(adj, z)?;
            let q = g.divide(p, y)?;
            g.negative(q)?
        }
        (BinaryOp::Maximum | BinaryOp::Minimum, _) => {
            // The operand that wins gets it all; a tie splits it 0.5/0.5.
            let wins = match (op, left) {
                (BinaryOp::Maximum, true) | (BinaryOp::Minimum, false) => g.greater(x, y)?,
                _ => g.less(x, y)?,
            };
            let tie = g.equal(x, y)?;
            let half = constant(g, 0.5, dtype)?;
            let halved = g.multiply(adj, half)?;
            let zero = zero(g, dtype)?;
            let on_tie = g.select(tie, halved, zero)?;
            g.select(wins, adj, on_tie)?
        }
        (BinaryOp::Power, true) => {
            // y·x^(y−1), 0 where y = 0 (so 0⁰ has derivative 0 in x, not 0·0⁻¹).
            let one = constant(g, 1.0, dtype)?;
            let zero = zero(g, dtype)?;
            let ym1 = g.subtract(y, one)?;
            let p = g.power(x, ym1)?;
            let d = g.multiply(y, p)?;
            let y0 = g.equal(y, zero)?;
            let d = g.select(y0, zero, d)?;
            g.multiply(adj, d)?
        }
        (BinaryOp::Power, false) => {
            // x^y·ln x where x > 0, 0 where x ≤ 0 (JAX's guard).
            let zero = zero(g, dtype)?;
            let ln = g.log(x)?;
            let d = g.multiply(z, ln)?;
            let positive = g.greater(x, zero)?;
            let d = g.select(positive, d, zero)?;
            g.multiply(adj, d)?
        }
    })
}

fn reduce(
    g: &mut Graph,
    op: ReduceOp,
    y: NodeId,
    x: NodeId,
    axes: &Axes,
    adj: NodeId,
) -> Res<NodeId> {
    let dtype = g.node(x).dtype;
    match op {
        ReduceOp::Sum | ReduceOp::Mean => Err(internal(
            g,
            y,
            "a sum's or mean's adjoint is a broadcast, made before materialising",
        )),
        ReduceOp::Prod => {
            // The product of the other elements, exact with zeros: with no zero it is
            // Π/xᵢ, with one zero it is the product of the nonzeros at the zero and 0
            // elsewhere, with more it is 0.
            let zero = zero(g, dtype)?;
            let one = constant(g, 1.0, dtype)?;
            let is_zero = g.equal(x, zero)?;
            let nonzero = g.select(is_zero, one, x)?;
            let p = g.prod(nonzero, axes.as_slice())?;
            let flags = g.convert(is_zero, dtype)?;
            let zeros = g.sum(flags, axes.as_slice())?;
            let none = g.equal(zeros, zero)?;
            let single = g.equal(zeros, one)?;
            let others = g.divide(p, x)?;
            let at_nonzero = g.select(none, others, zero)?;
            let at_zero = g.select(single, p, zero)?;
            let d = g.select(is_zero, at_zero, at_nonzero)?;
            g.multiply(adj, d)
        }
        ReduceOp::Max | ReduceOp::Min => {
            // Shared equally among the elements equal to the result.
            let hit = g.equal(x, y)?;
            let flags = g.convert(hit, dtype)?;
            let count = g.sum(flags, axes.as_slice())?;
            let share = g.divide(adj, count)?;
            let zero = zero(g, dtype)?;
            g.select(hit, share, zero)
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => Err(internal(
            g,
            y,
            "an arg-reduction has no gradient (checked before the walk)",
        )),
    }
}

/// The dot's pairs, the axes each side keeps, and a copy of `side` with its paired axes
/// relabelled as the other side's (`to_left`: the right operand's paired axes become the
/// left's).
fn relabelled(g: &mut Graph, x: NodeId, y: NodeId, to_left: bool) -> Res<NodeId> {
    let (xa, ya) = (g.node(x).axes.clone(), g.node(y).axes.clone());
    let pairs = g.dot_pairs("dot", &xa, &ya)?;
    let (side, axes) = if to_left { (y, ya) } else { (x, xa) };
    let new: Vec<Axis> = axes
        .iter()
        .map(|a| {
            pairs
                .iter()
                .find(|(l, r)| if to_left { r == a } else { l == a })
                .map_or(*a, |(l, r)| if to_left { *l } else { *r })
        })
        .collect();
    if new.as_slice() == axes.as_slice() {
        Ok(side)
    } else {
        g.cast_axes(side, &new)
    }
}

/// `dot(a, b)` when it contracts exactly `shared` (pairing each with itself), else the same
/// contraction as a sum of products (`a` and `b` have, besides `shared`, disjoint axes).
fn contract(g: &mut Graph, a: NodeId, b: NodeId, shared: &Axes) -> Res<NodeId> {
    let (aa, ba) = (g.node(a).axes.clone(), g.node(b).axes.clone());
    let expected: Vec<(Axis, Axis)> = aa
        .iter()
        .filter(|x| shared.contains(**x))
        .map(|x| (*x, *x))
        .collect();
    if g.dot_pairs("dot", &aa, &ba).ok() == Some(expected) {
        return g.dot(a, b);
    }
    let p = g.multiply(a, b)?;
    if shared.is_empty() {
        Ok(p)
    } else {
        g.sum(p, shared.as_slice())
    }
}

/// The adjoint of `dot(x, y)` for `x`: `adj` contracted with `y` over `y`'s unpaired axes,
/// `y`'s paired axes relabelled as `x`'s.
fn dot_left(g: &mut Graph, x: NodeId, y: NodeId, adj: NodeId) -> Res<NodeId> {
    let y2 = relabelled(g, x, y, true)?;
    let rest = g.node(y2).axes.difference(&g.node(x).axes);
    contract(g, adj, y2, &rest)
}

/// The adjoint of `dot(x, y)` for `y`: `x`, its paired axes relabelled as `y`'s, contracted
/// with `adj` over `x`'s unpaired axes.
fn dot_right(g: &mut Graph, x: NodeId, y: NodeId, adj: NodeId) -> Res<NodeId> {
    let x2 = relabelled(g, x, y, false)?;
    let rest = g.node(x2).axes.difference(&g.node(y).axes);
    contract(g, x2, adj, &rest)
}

/// A pad of `t`'s axis `at` with `before` and `after` zeros (nothing when both are 0).
fn pad_axis(
    g: &mut Graph,
    t: NodeId,
    at: Axis,
    before: usize,
    after: usize,
) -> Res<(NodeId, Axis)> {
    if before == 0 && after == 0 {
        return Ok((t, at));
    }
    let p = g.pad(t, &[(at, before, after)])?;
    let axis = g.derived_axis(AxisDef::Pad {
        of: at,
        before,
        after,
    });
    Ok((p, axis))
}

/// The adjoint of a slice: the adjoint scattered back into the sliced axes, zeros elsewhere,
/// one axis at a time (`None`: an empty range, so the contribution is zero).
fn unslice(g: &mut Graph, adj: NodeId, slices: &[(Axis, AxisSlice)]) -> Res<Option<NodeId>> {
    let mut t = adj;
    for (axis, spec) in slices {
        let n = g.resolve_len(*axis)?;
        let range_err = |message: String| GraphError::Range {
            op: "grad of slice".into(),
            axis: format!("{}", axis.id),
            message,
        };
        match spec {
            AxisSlice::Index(i) => {
                let i = crate::graph::resolve_index(*i, n).map_err(range_err)?;
                let one = g.derived_axis(AxisDef::Slice {
                    of: *axis,
                    range: SliceRange::range(as_i64(i)?, as_i64(i + 1)?),
                });
                let e = g.expand_dims(t, one, 0)?;
                let (p, at) = pad_axis(g, e, one, i, n - i - 1)?;
                t = relabel(g, p, at, *axis)?;
            }
            AxisSlice::Range(range) => {
                let r = range.resolve(n).map_err(range_err)?;
                if r.len == 0 {
                    return Ok(None);
                }
                let sliced = g.derived_axis(AxisDef::Slice {
                    of: *axis,
                    range: *range,
                });
                t = scatter_range(g, t, sliced, *axis, r, n)?;
            }
        }
    }
    Ok(Some(t))
}

/// `t` over the slice axis `sliced` (`r` of `axis`, of length `n`) scattered into `axis`.
fn scatter_range(
    g: &mut Graph,
    t: NodeId,
    sliced: Axis,
    axis: Axis,
    r: crate::axis::ResolvedSlice,
    n: usize,
) -> Res<NodeId> {
    let s = r.step.unsigned_abs() as usize;
    let l = r.len;
    // Ascending: element k goes to start + k·s.
    let (mut t, mut at, start) = if r.step < 0 {
        let rev = g.slice(t, &[(sliced, AxisSlice::Range(SliceRange::reversed()))])?;
        let at = g.derived_axis(AxisDef::Slice {
            of: sliced,
            range: SliceRange::reversed(),
        });
        (rev, at, r.first - (l - 1) * s)
    } else {
        (t, sliced, r.first)
    };
    let mut span = l;
    if s > 1 {
        // Interleave s − 1 zeros after each element: a length-1 axis beside it, padded to s,
        // flattened with it (it minor).
        let one = g.derived_axis(AxisDef::Slice {
            of: at,
            range: SliceRange::range(0, 1),
        });
        let pos = g.node(t).axes.position(at).map_or(0, |p| p + 1);
        let e = g.expand_dims(t, one, pos)?;
        let (p, wide) = pad_axis(g, e, one, 0, s - 1)?;
        t = g.flatten(p, &[at, wide])?;
        at = g.derived_axis(AxisDef::Flatten(vec![at, wide]));
        span = checked(l.checked_mul(s))?;
        if checked(start.checked_add(span))? > n {
            // The zeros after the last element run past the axis: cut them.
            let keep = n - start;
            let range = SliceRange::range(0, as_i64(keep)?);
            t = g.slice(t, &[(at, AxisSlice::Range(range))])?;
            at = g.derived_axis(AxisDef::Slice { of: at, range });
            span = keep;
        }
    }
    let (p, padded) = pad_axis(g, t, at, start, n - start - span)?;
    relabel(g, p, padded, axis)
}

/// The adjoint of a pad: the adjoint with the padding sliced off.
fn unpad(g: &mut Graph, adj: NodeId, pads: &[(Axis, usize, usize)]) -> Res<NodeId> {
    let mut t = adj;
    for (axis, before, after) in pads {
        let padded = g.derived_axis(AxisDef::Pad {
            of: *axis,
            before: *before,
            after: *after,
        });
        let range = SliceRange {
            start: Some(as_i64(*before)?),
            stop: if *after == 0 {
                None
            } else {
                Some(-as_i64(*after)?)
            },
            step: 1,
        };
        t = take_range(g, t, padded, range, *axis)?;
    }
    Ok(t)
}

/// `t`'s axis `from` sliced to `range` and relabelled `to`.
fn take_range(g: &mut Graph, t: NodeId, from: Axis, range: SliceRange, to: Axis) -> Res<NodeId> {
    // A range over the whole axis (a pad of nothing, a concat of one part) is a relabelling.
    let same_len = matches!((g.axis_len(from), g.axis_len(to)), (Some(a), Some(b)) if a == b);
    let whole = same_len && range.start.unwrap_or(0) == 0 && range.step == 1;
    if whole {
        return relabel(g, t, from, to);
    }
    let s = g.slice(t, &[(from, AxisSlice::Range(range))])?;
    let sliced = g.derived_axis(AxisDef::Slice { of: from, range });
    relabel(g, s, sliced, to)
}
