//! How the graph passes class ops: the ones too costly to recompute inline, and the uniform
//! constants evaluated as immediates. Read by fusion, its cost model and kernel building.
//!
//! Assumes nothing; guarantees the same answer for the same op (pure functions of it).

use weft_ir::{BinaryOp, Graph, NodeId, Op, TensorInit, TensorKind};

/// True for the ops weft treats as expensive to recompute.
pub fn is_expensive(op: &Op) -> bool {
    match op {
        // The transcendental functions: the approximate ones are the costly ones.
        Op::Unary(u, _) => u.is_approximate(),
        Op::Binary(BinaryOp::Power, _, _) => true,
        Op::Reduce { .. } | Op::Dot(..) => true,
        _ => false,
    }
}

/// A uniform constant: evaluated as an immediate, never stored.
pub fn is_immediate(op: &Op) -> bool {
    matches!(
        op,
        Op::Tensor {
            kind: TensorKind::Constant,
            init: Some(TensorInit::Fill(_))
        }
    )
}

/// The `pad` view `id` is, or is a view of (through other views), if any: a padded value read
/// plainly only once stored (fusion's `PaddedSeveral`, the GEMM path's stored pad).
pub fn pad_under(g: &Graph, mut id: NodeId) -> Option<NodeId> {
    loop {
        let op = &g.node(id).op;
        if matches!(op, Op::Pad { .. }) {
            return Some(id);
        }
        if !op.is_view() {
            return None;
        }
        id = *op.inputs().first()?;
    }
}
