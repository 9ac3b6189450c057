//! Sums of products: the batched contractions nGraph programs write as `sum(multiply(a, b), K)`.
//!
//! Assumes: a graph whose nodes' axes were inferred by the builders (every graph).
//! Guarantees: [`Graph::sum_of_products`] recognises a float `sum` over axes `K` of a
//! `multiply(a, b)` as a contraction exactly when every axis of `K` is an axis of both `a` and
//! `b` and each operand has an axis the other lacks (so the result is a matrix product per
//! batch index, not a row-wise dot or a plain reduction); it then names the operands and
//! splits the product's axes into the contracted ones, the batch axes (in both operands, kept)
//! and each side's free axes. The rule lives here, in one place, because two parties must
//! agree on it: the compiler may run such a sum on its GEMM path (accumulating f32 in f32),
//! and the interpreter's perturbed runs show the oracle that error for exactly these sums.
//! The dot pairing rule is untouched: a `dot` pairs axes as it always has.

use super::{Graph, NodeId, Op};
use crate::axis::Axis;
use crate::graph::{BinaryOp, ReduceOp};

/// `sum(multiply(lhs, rhs), contracted)` read as a contraction (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SumOfProducts {
    /// The `multiply` node.
    pub product: NodeId,
    /// Its left operand.
    pub lhs: NodeId,
    /// Its right operand.
    pub rhs: NodeId,
    /// The summed axes, in both operands.
    pub contracted: Vec<Axis>,
    /// Axes of both operands that the sum keeps.
    pub batch: Vec<Axis>,
    /// Axes of the left operand only.
    pub lhs_free: Vec<Axis>,
    /// Axes of the right operand only.
    pub rhs_free: Vec<Axis>,
}

impl Graph {
    /// Node `id` as a contraction, if it is a float sum of products of that shape (module
    /// docs); `None` otherwise, and for ids that are not in the graph.
    pub fn sum_of_products(&self, id: NodeId) -> Option<SumOfProducts> {
        let node = self.get(id)?;
        let Op::Reduce {
            op: ReduceOp::Sum,
            input,
            axes,
        } = &node.op
        else {
            return None;
        };
        let product = self.get(*input)?;
        let Op::Binary(BinaryOp::Multiply, lhs, rhs) = product.op else {
            return None;
        };
        let (l, r) = (self.get(lhs)?, self.get(rhs)?);
        if !node.dtype.is_float() || l.dtype != node.dtype || r.dtype != node.dtype {
            return None;
        }
        if axes.is_empty()
            || !axes
                .iter()
                .all(|a| l.axes.contains(*a) && r.axes.contains(*a))
        {
            return None;
        }
        let summed = |a: &Axis| axes.contains(*a);
        let batch: Vec<Axis> = l
            .axes
            .iter()
            .filter(|a| r.axes.contains(**a) && !summed(a))
            .copied()
            .collect();
        let lhs_free: Vec<Axis> = l
            .axes
            .iter()
            .filter(|a| !r.axes.contains(**a))
            .copied()
            .collect();
        let rhs_free: Vec<Axis> = r
            .axes
            .iter()
            .filter(|a| !l.axes.contains(**a))
            .copied()
            .collect();
        if lhs_free.is_empty() || rhs_free.is_empty() {
            return None;
        }
        Some(SumOfProducts {
            product: *input,
            lhs,
            rhs,
            contracted: axes.iter().copied().collect(),
            batch,
            lhs_free,
            rhs_free,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::GraphBuilder;
    use crate::DType;

    #[test]
    fn attention_scores_are_a_contraction_and_row_dots_are_not() -> Result<(), crate::GraphError> {
        let b = GraphBuilder::new();
        let (bb, s, k, d) = (
            b.axis("B", 2)?,
            b.axis("S", 3)?,
            b.axis("K", 4)?,
            b.axis("D", 5)?,
        );
        let q = b.placeholder("q", &[bb, s, d], DType::F32)?;
        let kk = b.placeholder("k", &[bb, k, d], DType::F32)?;
        let scores = q.multiply(kk)?.sum(&[d])?;
        let same = q.multiply(q)?.sum(&[d])?;
        let over_free = q.multiply(kk)?.sum(&[s])?;
        let (scores, same, over_free, q) = (scores.id(), same.id(), over_free.id(), q.id());
        let g = b.finish();
        let c = g.sum_of_products(scores).expect("a contraction");
        assert_eq!(
            (c.contracted, c.batch, c.lhs_free, c.rhs_free),
            (vec![d], vec![bb], vec![s], vec![k])
        );
        // q·q over D: no free side, a row-wise reduction.
        assert_eq!(g.sum_of_products(same), None);
        // Summing S, an axis only q has, is not a contraction.
        assert_eq!(g.sum_of_products(over_free), None);
        assert_eq!(g.sum_of_products(q), None);
        Ok(())
    }
}
