//! Reductions over repeated values: a `sum`, `mean`, `max` or `min` over axes that only a
//! broadcast introduced, where every term along those axes is the same value.
//!
//! Assumes: a graph whose nodes' axes were inferred by the builders (every graph); lengths
//! bound where the rule is asked about (unbound: no rule).
//! Guarantees: [`Graph::repeated_reduction`] recognises `reduce(op, x, R)` where `x` is
//! `broadcast(y, ..)` or a constant filled with one value (the broadcast of that value over
//! all its axes), and some axes `R₂` of `R` are not axes of `y` (the broadcast introduced
//! them), their lengths' product `L` at least 1. The value is then *defined* as:
//!
//! - first the reduction over the other axes `R₁` of `R` (those of `y`), as usual — `y`
//!   itself where `R₁` is empty;
//! - then, along `R₂`: `sum` multiplies by `L` (one `multiply` by a constant holding `L`
//!   rounded to the dtype: f32, f64, or wrapped to i32/i64, as integer sums wrap); `mean`,
//!   `max` and `min` keep the value (`L` copies of `v` average to `v`; NaN stays NaN, ±inf
//!   stays ±inf, −0 stays −0).
//!
//! That is what a long sequential sum computes in exact arithmetic, without its drift (2⁴⁰
//! additions of 1.0 in f64 would be exact, of 0.1 not), and it is one multiply instead of
//! `L` additions. Integer sums equal the sequential wrapping sum exactly. `prod` (`v^L`, which
//! backends would round differently), the arg-reductions, bool sums and integer means are
//! not rewritten, nor is anything with `L = 0` (an empty sum is −0, not `v·0`).
//!
//! The rule lives here, in one place, because every backend must apply it alike: the
//! compiler's simplify pass rewrites such reductions before fusion sees them, and the
//! interpreter evaluates them by the same definition without materialising the broadcast
//! (which it otherwise holds element by element: a 2⁴⁰-long broadcast is past its budget).

use super::{Graph, Node, NodeId, Op, TensorInit, TensorKind};
use crate::axis::{Axes, Axis};
use crate::dtype::DType;
use crate::graph::ReduceOp;
use crate::host::Scalar;

/// What a broadcast repeats along the axes it introduced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Repeated {
    /// The broadcast's operand.
    Node(NodeId),
    /// The one value of a filled constant (a scalar repeated over all its axes).
    Fill(Scalar),
}

/// `reduce(op, x, R)` over axes `x`'s broadcast introduced (module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct RepeatedReduction {
    /// The reduction.
    pub op: ReduceOp,
    /// The reduced operand (the broadcast or filled constant).
    pub operand: NodeId,
    /// What it repeats.
    pub source: Repeated,
    /// The reduced axes the source has (`R₁`), in the reduction's order: reduced as usual.
    pub kept: Vec<Axis>,
    /// The product of the lengths of the reduced axes the broadcast introduced (`L` ≥ 1).
    pub len: usize,
}

impl RepeatedReduction {
    /// What the reduction over the introduced axes multiplies by: for a `sum`, `L` as a value
    /// of `dtype` (rounded to nearest for floats, wrapped for integers); `None` for `mean`,
    /// `max` and `min`, which keep the value.
    pub fn factor(&self, dtype: DType) -> Option<Scalar> {
        if self.op != ReduceOp::Sum {
            return None;
        }
        // `as` rounds to nearest into a float and wraps into an integer: the wrapping sum of
        // `L` copies of `v` is `v·L` modulo the width.
        Some(match dtype {
            DType::F32 => Scalar::Float(self.len as f32 as f64),
            DType::F64 => Scalar::Float(self.len as f64),
            DType::I32 => Scalar::Int(self.len as i32 as i64),
            DType::I64 | DType::Bool => Scalar::Int(self.len as i64),
        })
    }
}

impl Graph {
    /// Node `id` as a reduction over repeated values, if it is one (module docs); `None`
    /// otherwise, for ids not in the graph, and while a length it needs is unbound.
    pub fn repeated_reduction(&self, id: NodeId) -> Option<RepeatedReduction> {
        self.repeated_reduction_of(self.get(id)?)
    }

    /// [`Graph::repeated_reduction`] of a node not (yet) in the graph, whose operands are
    /// nodes of this graph: what a pass rebuilding a graph asks before adding it.
    pub fn repeated_reduction_of(&self, node: &Node) -> Option<RepeatedReduction> {
        let Op::Reduce { op, input, axes } = &node.op else {
            return None;
        };
        let dtype = node.dtype;
        let rewritten = match op {
            ReduceOp::Sum => dtype != DType::Bool,
            ReduceOp::Mean => dtype.is_float(),
            ReduceOp::Max | ReduceOp::Min => true,
            ReduceOp::Prod | ReduceOp::ArgMax | ReduceOp::ArgMin => false,
        };
        if !rewritten {
            return None;
        }
        let scalar = Axes::default();
        let (source, has) = match &self.get(*input)?.op {
            Op::Broadcast(y) => (Repeated::Node(*y), &self.get(*y)?.axes),
            Op::Tensor {
                kind: TensorKind::Constant,
                init: Some(TensorInit::Fill(v)),
            } => (Repeated::Fill(*v), &scalar),
            _ => return None,
        };
        let (kept, introduced): (Vec<Axis>, Vec<Axis>) =
            axes.iter().copied().partition(|a| has.contains(*a));
        if introduced.is_empty() {
            return None;
        }
        let lengths: Vec<usize> = introduced
            .iter()
            .map(|a| self.resolve_len(*a).ok())
            .collect::<Option<_>>()?;
        let len = crate::size::element_count(&lengths).filter(|&n| n > 0)?;
        Some(RepeatedReduction {
            op: *op,
            operand: *input,
            source,
            kept,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_over_introduced_axes_are_recognised_with_their_length() {
        let mut g = Graph::new();
        let (n, m) = (g.axis("N", 1 << 40).unwrap(), g.axis("M", 3).unwrap());
        let x = g.placeholder("x", &[m], DType::F32).unwrap();
        let b = g.broadcast(x, &[n, m]).unwrap();
        let s = g.reduce(ReduceOp::Sum, b, &[m, n], None).unwrap();
        let r = g.repeated_reduction(s).unwrap();
        assert_eq!(
            (r.source, r.kept.clone(), r.len),
            (Repeated::Node(x), vec![m], 1 << 40)
        );
        assert_eq!(
            r.factor(DType::F32),
            Some(Scalar::Float((1u64 << 40) as f64))
        );
        let only_m = g.reduce(ReduceOp::Sum, b, &[m], None).unwrap();
        assert_eq!(
            g.repeated_reduction(only_m),
            None,
            "M is the operand's own axis"
        );
        let p = g.reduce(ReduceOp::Prod, b, &[n], None).unwrap();
        assert_eq!(g.repeated_reduction(p), None, "prod is left alone");
    }

    #[test]
    fn filled_constants_repeat_their_value_and_empty_axes_are_left_alone() {
        let mut g = Graph::new();
        let (n, e) = (g.axis("N", 5).unwrap(), g.axis("E", 0).unwrap());
        let c = g
            .constant(None, &[n, e], DType::I32, TensorInit::Fill(Scalar::Int(2)))
            .unwrap();
        let over_e = g.reduce(ReduceOp::Sum, c, &[e, n], None).unwrap();
        assert_eq!(
            g.repeated_reduction(over_e),
            None,
            "L = 0: an empty sum is -0"
        );
        let over_n = g.reduce(ReduceOp::Max, c, &[n], None).unwrap();
        let r = g.repeated_reduction(over_n).unwrap();
        assert_eq!(
            (r.source, r.len, r.factor(DType::I32)),
            (Repeated::Fill(Scalar::Int(2)), 5, None)
        );
    }
}
