//! simplify: dead-code elimination, common-subexpression elimination, constant folding and
//! algebraic peepholes, as one rebuild of the graph.
//!
//! Assumes: a graph whose nodes were made by `Graph`'s builders (any graph that passed
//! construction; lengths are only needed for folding, which is skipped for unbound shapes).
//! Guarantees:
//! - every graph output, every requested output ([`SimplifyOptions::keep`]) and every `assign`
//!   survives, with the same axes (in the same order) and dtype; the [`NodeMap`] says what each
//!   old node became;
//! - placeholders and variables/persistent tensors all survive (they are the caller's inputs and
//!   state), constants only if used;
//! - with [`SimplifyOptions::inexact`] off, every surviving value is bit-for-bit what the
//!   interpreter computes for the input graph: peepholes apply only where IEEE-754 arithmetic
//!   agrees exactly. `x·0 → 0` is applied to integers only: for floats `NaN·0` and `inf·0` are
//!   NaN and `−1·0` is `−0`. `x + 0 → x` for floats only with `−0.0` (`−0 + +0` is `+0`), and
//!   `x − 0 → x` with `+0.0`. `log(exp x) → x` is inexact (rounding; `exp` overflows to inf
//!   past ≈88.7 in f32) and runs only with `inexact`;
//! - a peephole that drops a broadcasting operand keeps the result axes: the kept operand is
//!   wrapped in `broadcast`/`axes_with_order` to the replaced node's axes;
//! - a `sum`, `mean`, `max` or `min` over axes only a broadcast (or a filled constant)
//!   introduced is rewritten by weft_ir's one rule (`Graph::repeated_reduction`, which the
//!   interpreter evaluates alike): the repeated value reduced over its own reduced axes, then a
//!   sum multiplied by the introduced length (rounded to the dtype), a mean, max or min kept —
//!   one multiply, never a loop as long as the axis (docs/numerics.md, "Reductions over
//!   broadcast axes");
//! - no `convolution` or pool survives: after the common-subexpression lookup (two equal ones
//!   expand once) and constant folding, each is expanded into pads, strided slices, dots and
//!   elementwise ops with the same axes and value (`Graph::expand_convolution`,
//!   `Graph::expand_pool`), so the passes after this one never see them.

use super::rebuild::{add_like, coerce_axes, empty_like, remap_op, restricted, with_op, NodeMap};
use super::PassError;
use std::collections::HashMap;
use weft_ir::axis::debug_axes_by_index;
use weft_ir::graph::window_fold::PoolFold;
use weft_ir::graph::{ConvExpansion, Repeated};
use weft_ir::size::element_count;
use weft_ir::{
    Axis, BinaryOp, DType, Graph, HostArray, Node, NodeId, Op, ReduceOp, Scalar, TensorInit,
    TensorKind, UnaryOp,
};
use weft_runtime::{Executable, Interpreter, State};

/// What [`simplify`] may do.
#[derive(Clone, Debug)]
pub struct SimplifyOptions {
    /// Nodes to keep besides the graph's outputs and assigns (a computation's requested outputs).
    pub keep: Vec<NodeId>,
    /// Allows peepholes that change results by rounding (`log(exp x) → x`).
    pub inexact: bool,
    /// The size budget of constant folding, in elements (default 2^16): a constant-only node is
    /// evaluated only if its result, each operand and (for `dot`) its iteration space are at
    /// most this large, and a uniform constant larger than this is kept as the broadcast of a
    /// scalar, so kernels compute it instead of the executable materialising it.
    pub fold_limit: usize,
}

impl Default for SimplifyOptions {
    fn default() -> Self {
        SimplifyOptions {
            keep: Vec::new(),
            inexact: false,
            fold_limit: 1 << 16,
        }
    }
}

/// The rewrites [`simplify`] made, by kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimplifyStats {
    /// Nodes removed because nothing kept depends on them.
    pub dead: usize,
    /// Nodes merged into an identical earlier node.
    pub common: usize,
    /// Nodes replaced by a constant.
    pub folded: usize,
    /// Algebraic peepholes applied.
    pub peepholes: usize,
    /// Convolutions and pools expanded into ordinary ops.
    pub expanded: usize,
}

/// The result of [`simplify`].
#[derive(Clone, Debug)]
pub struct Simplified {
    /// The simplified graph.
    pub graph: Graph,
    /// Old node → new node.
    pub map: NodeMap,
    /// What was done.
    pub stats: SimplifyStats,
    /// Each convolution and pool expanded, and how: `weft explain`'s lines.
    pub expansions: Vec<String>,
}

/// A function evaluating node `id` of a graph whose operands are all constants; `None` when it
/// cannot (the node is then kept as it is).
pub type ConstantEvaluator<'a> = &'a dyn Fn(&Graph, NodeId) -> Option<HostArray>;

/// Simplifies `g`; see the module documentation for what is guaranteed. Constant-only
/// subgraphs whose values are not uniform are folded only when `evaluate` is given.
pub fn simplify(
    g: &Graph,
    opts: &SimplifyOptions,
    evaluate: Option<ConstantEvaluator<'_>>,
) -> Result<Simplified, PassError> {
    let live = live_nodes(g, &opts.keep);
    let mut s = Simplifier {
        out: empty_like(g)?,
        map: NodeMap::new(g.len()),
        cse: HashMap::new(),
        stats: SimplifyStats::default(),
        expansions: Vec::new(),
        opts,
        evaluate,
    };
    for (id, node) in g.nodes() {
        if !live[id.as_u32() as usize] {
            s.stats.dead += 1;
            continue;
        }
        let new = s.node(node)?;
        s.map.set(id, new);
    }
    for o in g.outputs() {
        let n = s.map.get(*o).ok_or_else(|| lost(g, *o))?;
        s.out.mark_output(n)?;
    }
    // Folding and peepholes leave orphans behind (the operands they bypassed); one more
    // dead-code sweep removes them.
    let keep: Vec<NodeId> = opts.keep.iter().filter_map(|k| s.map.get(*k)).collect();
    let (graph, sweep) = eliminate_dead(&s.out, &keep)?;
    Ok(Simplified {
        graph,
        map: s.map.then(&sweep),
        stats: s.stats,
        expansions: s.expansions,
    })
}

/// How a convolution or pool node was expanded, in words.
fn expansion_text(g: &Graph, node: &Node) -> Result<String, PassError> {
    let named = |n: &Node| n.name.as_ref().map_or(String::new(), |s| format!("{s}: "));
    match &node.op {
        Op::Convolution {
            input,
            filter,
            spec,
        } => {
            let (x, f) = (&g.node(*input).axes, &g.node(*filter).axes);
            let p = g.conv_pairing("convolution", x, f, spec)?;
            let taps: usize = p
                .spatial
                .iter()
                .filter_map(|s| g.axis_len(s.filter))
                .product();
            let form = ConvExpansion::Shifted.for_pairing(g, &p)?;
            Ok(format!(
                "{}{} over {}: {} filter tap{} as {}",
                named(node),
                node.op.name(),
                g.axes_name(&node.axes),
                taps,
                if taps == 1 { "" } else { "s" },
                form.describe()
            ))
        }
        Op::Pool { input, spec } => {
            let pooled = g.pool_axes("pool", &g.node(*input).axes, spec)?;
            Ok(format!(
                "{}{} over {}: {} taps {}",
                named(node),
                node.op.name(),
                g.axes_name(&node.axes),
                pooled.iter().fold(1usize, |n, p| n.saturating_mul(p.taps)),
                PoolFold::of(&pooled).describe()
            ))
        }
        _ => Ok(String::new()),
    }
}

fn lost(g: &Graph, id: NodeId) -> PassError {
    PassError::Internal(format!("simplify lost kept node {}", g.node_label(id)))
}

/// Marks the nodes that outputs, `keep`, assigns and stored non-constant tensors depend on.
fn live_nodes(g: &Graph, keep: &[NodeId]) -> Vec<bool> {
    let mut roots: Vec<NodeId> = g
        .nodes()
        .filter(|(_, n)| match &n.op {
            Op::Assign { .. } => true,
            Op::Tensor { kind, .. } => *kind != TensorKind::Constant,
            _ => false,
        })
        .map(|(id, _)| id)
        .collect();
    // Outputs and kept nodes as roots of their own (a node listed twice is walked once), not
    // looked up per node: that made this quadratic in graphs with many outputs.
    roots.extend(g.outputs());
    roots.extend(keep.iter().copied().filter(|id| g.get(*id).is_some()));
    g.ancestors(&roots)
}

/// Dead-code elimination alone: a rebuild keeping what outputs, `keep` and assigns need.
pub fn eliminate_dead(g: &Graph, keep: &[NodeId]) -> Result<(Graph, NodeMap), PassError> {
    let (mut out, map) = restricted(g, &live_nodes(g, keep))?;
    for o in g.outputs() {
        out.mark_output(map.get(*o).ok_or_else(|| lost(g, *o))?)?;
    }
    Ok((out, map))
}

struct Simplifier<'a> {
    out: Graph,
    map: NodeMap,
    cse: HashMap<CseKey, NodeId>,
    stats: SimplifyStats,
    expansions: Vec<String>,
    opts: &'a SimplifyOptions,
    evaluate: Option<ConstantEvaluator<'a>>,
}

impl Simplifier<'_> {
    fn node(&mut self, node: &Node) -> Result<NodeId, PassError> {
        let map = &self.map;
        let op = remap_op(&node.op, |x| {
            map.get(x)
                .ok_or_else(|| PassError::Internal(format!("operand {x} was removed")))
        })?;
        let node = with_op(node, op);
        if let Some(v) = self.large_fill(&node) {
            let axes: Vec<_> = node.axes.iter().copied().collect();
            let b = self.uniform(&axes, node.dtype, v)?;
            if let Some(name) = node.name.as_deref().filter(|n| self.out.find(n).is_none()) {
                self.out.set_name(b, name)?;
            }
            return Ok(b);
        }
        if let Some(r) = self.peephole(&node)? {
            self.stats.peepholes += 1;
            let r = coerce_axes(&mut self.out, r, &node.axes, node.dtype)?;
            // A new node (a rewritten spelling) keeps the name of the node it replaces.
            let free = |n: &&String| self.out.find(n).is_none();
            if let Some(name) = node.name.as_ref().filter(free) {
                if self.out.node(r).name.is_none() {
                    self.out.set_name(r, name)?;
                }
            }
            return Ok(r);
        }
        let key = cse_key(&node);
        if let Some(&prev) = key.as_ref().and_then(|k| self.cse.get(k)) {
            // A data constant's digest is confirmed against the constant found; any other key
            // is the whole op (its entry may be the constant an equal op folded to).
            let same = constant_data(&node)
                .is_none_or(|a| constant_data(self.out.node(prev)).is_some_and(|b| a.same_bits(b)));
            if same {
                self.stats.common += 1;
                return Ok(prev);
            }
        }
        let id = match self.fold(&node)? {
            Some(c) => {
                self.stats.folded += 1;
                c
            }
            None => match self.expand(&node)? {
                Some(e) => e,
                None => add_like(&mut self.out, &node, true)?,
            },
        };
        if let Some(k) = key {
            // A digest shared by different data keeps the first constant's entry.
            self.cse.entry(k).or_insert(id);
        }
        Ok(id)
    }

    /// A convolution or pool as pads, strided slices, dots and elementwise ops, which the later
    /// passes fuse and lower (`weft_ir::graph::convolution`), with the node's axes; `None` for
    /// other ops. After the common-subexpression lookup, so two equal ones expand once.
    fn expand(&mut self, node: &Node) -> Result<Option<NodeId>, PassError> {
        let e = match &node.op {
            Op::Convolution {
                input,
                filter,
                spec,
            } => self
                .out
                .expand_convolution(*input, *filter, spec, ConvExpansion::Shifted)?,
            Op::Pool { input, spec } => self.out.expand_pool(*input, spec)?,
            _ => return Ok(None),
        };
        self.stats.expanded += 1;
        self.expansions.push(expansion_text(&self.out, node)?);
        Ok(Some(coerce_axes(&mut self.out, e, &node.axes, node.dtype)?))
    }

    /// The uniform value of a constant, if `id` is one filled with a single value or the
    /// broadcast of one (how [`Simplifier::uniform`] keeps large ones).
    fn fill(&self, id: NodeId) -> Option<Scalar> {
        match &self.out.node(id).op {
            Op::Tensor {
                kind: TensorKind::Constant,
                init: Some(TensorInit::Fill(s)),
            } => Some(*s),
            Op::Broadcast(x) => match &self.out.node(*x).op {
                Op::Tensor {
                    kind: TensorKind::Constant,
                    init: Some(TensorInit::Fill(s)),
                } => Some(*s),
                _ => None,
            },
            _ => None,
        }
    }

    /// The value of `node` if it is a constant filled with one value over more elements than
    /// the folding budget (an input-graph node, whose operands are already rebuilt).
    fn large_fill(&self, node: &Node) -> Option<Scalar> {
        let Op::Tensor {
            kind: TensorKind::Constant,
            init: Some(TensorInit::Fill(v)),
        } = &node.op
        else {
            return None;
        };
        self.over_budget(node.axes.iter()).then_some(*v)
    }

    /// The elements of a tensor over `axes`: `None` while a length is unbound, `Some(None)`
    /// when the count overflows.
    fn elements_of<'a>(&self, axes: impl IntoIterator<Item = &'a Axis>) -> Option<Option<usize>> {
        let lengths: Result<Vec<usize>, _> =
            axes.into_iter().map(|a| self.out.resolve_len(*a)).collect();
        Some(element_count(&lengths.ok()?))
    }

    /// True if a tensor over `axes` is known to have more than `fold_limit` elements.
    fn over_budget<'a>(&self, axes: impl IntoIterator<Item = &'a Axis>) -> bool {
        matches!(self.elements_of(axes), Some(n) if n.is_none_or(|n| n > self.opts.fold_limit))
    }

    /// True if a tensor over `axes` is known to have at most `fold_limit` elements (false when
    /// unbound: evaluation needs lengths).
    fn within_budget<'a>(&self, axes: impl IntoIterator<Item = &'a Axis>) -> bool {
        matches!(self.elements_of(axes), Some(Some(n)) if n <= self.opts.fold_limit)
    }

    /// A node holding `value` over `axes`: a fill constant within the folding budget, else the
    /// broadcast of a scalar fill constant, which kernels compute without a buffer of its size.
    fn uniform(&mut self, axes: &[Axis], dtype: DType, value: Scalar) -> Result<NodeId, PassError> {
        let fill = TensorInit::Fill(value);
        if !self.over_budget(axes) {
            return Ok(self.out.constant(None, axes, dtype, fill)?);
        }
        let scalar = self.out.constant(None, &[], dtype, fill)?;
        Ok(self.out.broadcast(scalar, axes)?)
    }

    /// An existing node equal to `node`'s value, by an algebraic identity.
    fn peephole(&mut self, node: &Node) -> Result<Option<NodeId>, PassError> {
        let is = |s: Option<Scalar>, v: f64| s.is_some_and(|s| s.as_f64() == v);
        let int = node.dtype.is_int();
        let neg_zero = |s: Option<Scalar>| matches!(s, Some(Scalar::Float(v)) if v == 0.0 && v.is_sign_negative());
        let pos_zero = |s: Option<Scalar>| match s {
            Some(Scalar::Float(v)) => v == 0.0 && v.is_sign_positive(),
            Some(Scalar::Int(v)) => v == 0,
            _ => false,
        };
        Ok(match &node.op {
            Op::Binary(op, x, y) => {
                let (fx, fy) = (self.fill(*x), self.fill(*y));
                match op {
                    BinaryOp::Add if (int && is(fy, 0.0)) || neg_zero(fy) => Some(*x),
                    BinaryOp::Add if (int && is(fx, 0.0)) || neg_zero(fx) => Some(*y),
                    BinaryOp::Subtract if pos_zero(fy) => Some(*x),
                    BinaryOp::Multiply | BinaryOp::Divide if is(fy, 1.0) => Some(*x),
                    BinaryOp::Multiply if is(fx, 1.0) => Some(*y),
                    // One spelling of a square: `sum(multiply(t, t))` is `sum(square(t))`.
                    BinaryOp::Multiply if x == y && node.dtype.is_float() => {
                        Some(self.out.unary(UnaryOp::Square, *x)?)
                    }
                    BinaryOp::Multiply if int && (is(fx, 0.0) || is(fy, 0.0)) => {
                        let axes: Vec<_> = node.axes.iter().copied().collect();
                        Some(self.uniform(&axes, node.dtype, Scalar::Int(0))?)
                    }
                    // Powers whose exact value the dtype holds: the interpreter's `pow` (within
                    // an ulp) returns it, and so does the rewrite. `x⁰` is 1 for every x, NaN
                    // included; `x²` of an f32 is exact in f64, of an integer the wrapping
                    // square; an f64's `x²` is not exact, so `pow` may round it otherwise.
                    BinaryOp::Power if is(fy, 1.0) => Some(*x),
                    BinaryOp::Power if is(fy, 0.0) => {
                        let one = if int {
                            Scalar::Int(1)
                        } else {
                            Scalar::Float(1.0)
                        };
                        let axes: Vec<_> = node.axes.iter().copied().collect();
                        Some(self.uniform(&axes, node.dtype, one)?)
                    }
                    BinaryOp::Power if is(fy, 2.0) && (int || node.dtype == DType::F32) => {
                        Some(self.square_of(*x)?)
                    }
                    _ => None,
                }
            }
            Op::Dot(x, y) => self.dot_of_itself(node, *x, *y)?,
            Op::Reduce { .. } => self.repeated(node)?,
            Op::Unary(UnaryOp::Negative, x) => match &self.out.node(*x).op {
                Op::Unary(UnaryOp::Negative, inner) => Some(*inner),
                _ => None,
            },
            Op::Unary(UnaryOp::Square, x) if self.unsigned(*x) != *x => Some(self.square_of(*x)?),
            Op::Unary(UnaryOp::Log, x) if self.opts.inexact => match &self.out.node(*x).op {
                Op::Unary(UnaryOp::Exp, inner) => Some(*inner),
                _ => None,
            },
            Op::Convert(x) if self.out.node(*x).dtype == node.dtype => Some(*x),
            Op::AxesWithOrder(x) | Op::Broadcast(x) if self.out.node(*x).axes == node.axes => {
                Some(*x)
            }
            _ => None,
        })
    }

    /// A reduction over axes only a broadcast introduced, by weft_ir's one definition
    /// (`Graph::repeated_reduction`, which the interpreter applies too): the repeated value
    /// reduced over the reduced axes it has, then, for a sum, times the introduced length;
    /// `node`'s caller broadcasts it to `node`'s axes. Not a sum of `L` terms: one multiply.
    fn repeated(&mut self, node: &Node) -> Result<Option<NodeId>, PassError> {
        let Some(r) = self.out.repeated_reduction_of(node) else {
            return Ok(None);
        };
        let mut v = match r.source {
            Repeated::Node(y) => y,
            Repeated::Fill(s) => self
                .out
                .constant(None, &[], node.dtype, TensorInit::Fill(s))?,
        };
        if !r.kept.is_empty() {
            v = self.out.reduce(r.op, v, &r.kept, None)?;
        }
        if let Some(f) = r.factor(node.dtype) {
            let len = self
                .out
                .constant(None, &[], node.dtype, TensorInit::Fill(f))?;
            v = self.out.binary(BinaryOp::Multiply, v, len)?;
        }
        Ok(Some(v))
    }

    /// `x` without the `abs` and `negative` ops it is made by: what a square of it squares.
    fn unsigned(&self, mut x: NodeId) -> NodeId {
        while let Op::Unary(UnaryOp::Abs | UnaryOp::Negative, inner) = self.out.node(x).op {
            x = inner;
        }
        x
    }

    /// `square(x)`, with `x`'s sign dropped (`square(abs(t))` is `square(t)`, exactly: the
    /// sign never reaches the result, and integer squares wrap alike).
    fn square_of(&mut self, x: NodeId) -> Result<NodeId, PassError> {
        let x = self.unsigned(x);
        Ok(self.out.unary(UnaryOp::Square, x)?)
    }

    /// `sum(square(t))` over all of `t`'s axes for a float dot of `t` with itself contracting
    /// every axis with itself — `dot(transpose(t), t)` (seed 003's squared norm), `dot(t, t)` — so each
    /// spelling of the squared norm is one kernel. Exact: a dot's products are rounded to its
    /// dtype and summed like a sum's terms (docs/numerics.md), its pairs in the left
    /// operand's axis order, so the sum lists `t`'s axes in that order (reversed by a
    /// transpose); an f32 sum then loops in memory order all the same (kernel.rs).
    fn dot_of_itself(
        &mut self,
        node: &Node,
        x: NodeId,
        y: NodeId,
    ) -> Result<Option<NodeId>, PassError> {
        let base = |id: NodeId| match self.out.node(id).op {
            Op::Transpose(inner) => inner,
            _ => id,
        };
        let t = base(x);
        if t != base(y) || !node.axes.is_empty() || !node.dtype.is_float() {
            return Ok(None);
        }
        // Each pair must join an axis of `t` with itself: `t`'s axes A and A** pair crosswise
        // in `dot(t, transpose(t))` (A with the transpose's A^-1*, the dual partner), which is
        // Σ t[i,j]·t[j,i], not a squared norm.
        let origin = |operand: NodeId, a: Axis| if operand == t { a } else { a.transposed() };
        let (left, right) = (&self.out.node(x).axes, &self.out.node(y).axes);
        let pairs = self.out.dot_pairs("dot", left, right)?;
        let itself = pairs.len() == self.out.node(t).axes.len()
            && pairs.iter().all(|&(a, b)| origin(x, a) == origin(y, b));
        if !itself {
            return Ok(None);
        }
        let axes: Vec<Axis> = pairs.iter().map(|&(a, _)| origin(x, a)).collect();
        let square = self.out.unary(UnaryOp::Square, t)?;
        Ok(Some(self.out.reduce(ReduceOp::Sum, square, &axes, None)?))
    }

    /// A constant replacing `node` if all its operands are constants.
    fn fold(&mut self, node: &Node) -> Result<Option<NodeId>, PassError> {
        let inputs = node.op.inputs();
        if inputs.is_empty() || matches!(node.op, Op::Assign { .. }) {
            return Ok(None);
        }
        let all_const = inputs.iter().all(|i| {
            matches!(
                self.out.node(*i).op,
                Op::Tensor {
                    kind: TensorKind::Constant,
                    ..
                }
            )
        });
        if !all_const {
            return Ok(None);
        }
        let axes: Vec<_> = node.axes.iter().copied().collect();
        // A view of a uniform constant is the same uniform constant over the view's axes; no
        // evaluation needed and no size limit (the result stays one value).
        let uniform_view = matches!(
            node.op,
            Op::Broadcast(_)
                | Op::AxesWithOrder(_)
                | Op::CastAxes(_)
                | Op::Transpose(_)
                | Op::Slice { .. }
                | Op::Flatten { .. }
                | Op::Unflatten { .. }
                | Op::ExpandDims { .. }
        );
        if uniform_view {
            if let Some(s) = self.fill(inputs[0]) {
                return Ok(Some(self.uniform(&axes, node.dtype, s)?));
            }
        }
        let Some(evaluate) = self.evaluate else {
            return Ok(None);
        };
        if !self.evaluation_within_budget(node, &inputs) {
            return Ok(None);
        }
        let tmp = add_like(&mut self.out, node, false)?;
        // A dot's budget also counts its contracted lengths (an unfolded `tmp` is swept as dead).
        let dot_over = matches!(node.op, Op::Dot(..))
            && !matches!(self.out.dot_points(tmp), Ok(Some(n)) if n <= self.opts.fold_limit);
        if dot_over {
            return Ok(None);
        }
        let Some(value) = evaluate(&self.out, tmp) else {
            return Ok(None);
        };
        let ordered = value
            .with_axes_order(&node.axes)
            .ok_or_else(|| PassError::Internal("folded value has other axes".into()))?;
        let (_, _, data) = ordered.into_parts();
        let name = node.name.as_deref().filter(|n| self.out.find(n).is_none());
        Ok(Some(self.out.constant(
            name,
            &axes,
            node.dtype,
            TensorInit::data(data),
        )?))
    }
}

impl Simplifier<'_> {
    /// True if evaluating `node` stays within the folding budget as far as its result and each
    /// operand go: each has at most `fold_limit` elements (the interpreter materialises all
    /// of them, so a scalar `sum` of a huge constant is not folded either). `fold` checks a
    /// dot's iteration space too.
    fn evaluation_within_budget(&self, node: &Node, inputs: &[NodeId]) -> bool {
        self.within_budget(node.axes.iter())
            && inputs
                .iter()
                .all(|i| self.within_budget(self.out.node(*i).axes.iter()))
    }
}

/// What makes two nodes interchangeable: the op (operands included), axes and dtype.
/// A constant's elements enter as a digest of their bits, not as text: formatting a constant of
/// millions of elements cost more than every other pass together (185 ms for 2²⁰ f32s), and
/// text would merge NaNs of different payloads. A digest match is confirmed bit for bit.
#[derive(PartialEq, Eq, Hash)]
enum CseKey {
    /// Every other op, by its text.
    Text(String),
    /// A constant holding data: axes and dtype, and the digest of its elements.
    Data { header: String, digest: u64 },
}

/// The key under which `node` is interchangeable with any node of the same key (a
/// [`CseKey::Data`] one only when its data is also the same), or `None` for nodes that must
/// stay distinct (stored non-constant tensors, assigns).
/// Axes in the key are in their index form (`debug_axes_by_index`): their identity, never their
/// names (two axes may share a name), and no lookup of names per node.
fn cse_key(node: &Node) -> Option<CseKey> {
    debug_axes_by_index(|| match (&node.op, constant_data(node)) {
        (Op::Tensor { kind, .. }, _) if *kind != TensorKind::Constant => None,
        (Op::Assign { .. }, _) => None,
        (_, Some(data)) => Some(CseKey::Data {
            header: format!("{:?}|{:?}", node.axes, node.dtype),
            digest: data.bits_digest(),
        }),
        (op, None) => Some(CseKey::Text(format!(
            "{op:?}|{:?}|{:?}",
            node.axes, node.dtype
        ))),
    })
}

/// The data of `node` if it is a constant holding data.
fn constant_data(node: &Node) -> Option<&weft_ir::ArrayData> {
    match &node.op {
        Op::Tensor {
            init: Some(TensorInit::Data(data)),
            ..
        } => Some(data),
        _ => None,
    }
}

/// Evaluates node `id` of `g` (whose operands are constants) with the reference interpreter, the
/// oracle, on a small graph holding only the node and its operands. `None` if the interpreter
/// refuses (the node is then left unfolded).
pub fn interpreter_evaluator(g: &Graph, id: NodeId) -> Option<HostArray> {
    let mut small = empty_like(g).ok()?;
    let node = g.node(id);
    let mut map = NodeMap::new(g.len());
    for i in node.op.inputs() {
        if map.get(i).is_none() {
            let n = add_like(&mut small, g.node(i), false).ok()?;
            map.set(i, n);
        }
    }
    let op = remap_op(&node.op, |x| {
        map.get(x)
            .ok_or_else(|| PassError::Internal("operand".into()))
    })
    .ok()?;
    let target = add_like(&mut small, &with_op(node, op), false).ok()?;
    let state_graph = std::sync::Arc::new(small);
    let interp = Interpreter::new(state_graph.clone(), &[target], &[]).ok()?;
    let mut state = State::initial(&state_graph).ok()?;
    interp.run(&[], &mut state).ok()?.pop()
}
