//! Cutting a graph at a node: the graph a host runs downstream of a value it already holds.
//!
//! Assumes nothing beyond a well-formed graph. Guarantees: the result keeps the axis table, every
//! node id, name and the marked outputs, and differs only in the cut node, which becomes a
//! placeholder of the same axes (same order) and dtype; so arrays and node ids of the original
//! graph mean the same in the cut one, and creation order stays topological (a placeholder reads
//! nothing).

use super::{Graph, GraphError, NodeId, Op, TensorKind};

impl Graph {
    /// This graph with the computed node `node` replaced by a placeholder of the same axes (same
    /// order), dtype and name, every reader of `node` now reading the placeholder: the graph of
    /// a computation that takes `node`'s value from another one (a pipeline stage; the chained
    /// property tests pass one JIT computation's returned array to the next this way). Nodes
    /// only `node` read stay, unread.
    ///
    /// Kept in place rather than rebuilt, so node ids need no map. Errors: `node` not of this
    /// graph (`Foreign`), or not computed (`NotComputed`): a stored tensor already is an input or
    /// state, and an assign replaced by an input would drop its update of the state.
    pub fn with_placeholder_for(&self, node: NodeId) -> Result<Graph, GraphError> {
        let n = self.check_node(node)?;
        if matches!(n.op, Op::Tensor { .. } | Op::Assign { .. }) {
            return Err(GraphError::NotComputed {
                node: self.node_label(node),
                op: n.op.name().to_string(),
            });
        }
        Ok(self.cut_unchecked(node))
    }

    /// [`Graph::with_placeholder_for`] for judging a run the test oracle failed
    /// (`weft::testing`), which evaluates one reader of `node` alone: `node` may also be an `assign`, whose update of the state
    /// the cut graph then drops. Errors: `node` not of this graph, or a stored tensor.
    pub fn with_placeholder_for_value(&self, node: NodeId) -> Result<Graph, GraphError> {
        let n = self.check_node(node)?;
        if matches!(n.op, Op::Tensor { .. }) {
            return Err(GraphError::NotComputed {
                node: self.node_label(node),
                op: n.op.name().to_string(),
            });
        }
        Ok(self.cut_unchecked(node))
    }

    fn cut_unchecked(&self, node: NodeId) -> Graph {
        let mut cut = self.clone();
        cut.nodes[node].op = Op::Tensor {
            kind: TensorKind::Placeholder,
            init: None,
        };
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::{ReduceOp, TensorInit, UnaryOp};
    use crate::host::Scalar;

    /// `x: f32[A, B]`, `e = exp(x)`, `s = sum(e over B)` with axes `[A]`, `y = assign(v, s)`.
    fn graph() -> (Graph, [NodeId; 5]) {
        let mut g = Graph::new();
        let a = g.axis("A", 2).unwrap();
        let b = g.axis("B", 3).unwrap();
        let x = g
            .tensor(
                TensorKind::Placeholder,
                Some("x"),
                &[b, a],
                DType::F32,
                None,
            )
            .unwrap();
        let e = g.unary(UnaryOp::Exp, x).unwrap();
        g.set_name(e, "e").unwrap();
        let s = g.reduce(ReduceOp::Sum, e, &[b], None).unwrap();
        let v = g
            .tensor(
                TensorKind::Variable,
                Some("v"),
                &[a],
                DType::F32,
                Some(TensorInit::Fill(Scalar::Float(0.0))),
            )
            .unwrap();
        let y = g.assign(v, s).unwrap();
        g.mark_output(y).unwrap();
        (g, [x, e, s, v, y])
    }

    #[test]
    fn the_cut_node_becomes_a_placeholder_and_nothing_else_changes() {
        let (g, [x, e, s, _, y]) = graph();
        let cut = g.with_placeholder_for(e).unwrap();
        assert_eq!(cut.placeholders(), vec![x, e]);
        let p = cut.node(e);
        assert_eq!((&p.axes, p.dtype), (&g.node(e).axes, g.node(e).dtype));
        assert_eq!(cut.find("e"), Some(e));
        assert_eq!(cut.node(s), g.node(s));
        assert_eq!(cut.node(y), g.node(y));
        assert_eq!(cut.outputs(), g.outputs());
        assert_eq!(cut.axis_table().len(), g.axis_table().len());
        cut.verify().unwrap();
        // The printed cut graph reads back as itself.
        let text = crate::text::print(&cut);
        assert_eq!(crate::text::parse(&text, "cut.weft").unwrap(), cut);
    }

    #[test]
    fn stored_tensors_assigns_and_foreign_nodes_are_refused() {
        let (g, [x, _, _, v, y]) = graph();
        for stored in [x, v, y] {
            let err = g.with_placeholder_for(stored).unwrap_err();
            assert!(matches!(err, GraphError::NotComputed { .. }), "{err}");
        }
        assert!(g
            .with_placeholder_for(y)
            .unwrap_err()
            .to_string()
            .contains("assign"));
        let foreign = NodeId::from_u32(99);
        assert!(matches!(
            g.with_placeholder_for(foreign),
            Err(GraphError::Foreign(_))
        ));
    }
}
