//! Which nodes a computation evaluates. A computation asks for some outputs given some
//! placeholders; it evaluates exactly the outputs and their ancestors, so an `assign` takes
//! effect only in computations that ask for it (or for something computed from it).
//!
//! Guarantees: every listed node belongs to the graph, the placeholders are distinct
//! placeholders, and every placeholder an output depends on is listed. Listed placeholders
//! that no output needs are allowed (their inputs are still checked at each call).

use crate::error::RunError;
use weft_ir::arena::EntityRef;
use weft_ir::{Graph, NodeId, Op, TensorKind};

/// The signature of one computation and the nodes it evaluates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    outputs: Vec<NodeId>,
    placeholders: Vec<NodeId>,
    needed: Vec<bool>,
}

impl Plan {
    /// Plans the computation of `outputs` given `placeholders` (in the order inputs will be
    /// passed).
    pub fn new(
        graph: &Graph,
        outputs: &[NodeId],
        placeholders: &[NodeId],
    ) -> Result<Plan, RunError> {
        for id in outputs.iter().chain(placeholders) {
            if graph.get(*id).is_none() {
                let whose = if (id.as_u32() as usize) < graph.len() {
                    "of another graph (an id means something only to the graph that made it, or a clone of it)"
                } else {
                    "not in this graph"
                };
                return Err(RunError::ForeignNode(format!("node {id} {whose}")));
            }
        }
        for (i, p) in placeholders.iter().enumerate() {
            match &graph.node(*p).op {
                Op::Tensor {
                    kind: TensorKind::Placeholder,
                    ..
                } => {}
                op => {
                    return Err(RunError::NotAPlaceholder {
                        node: graph.node_label(*p),
                        kind: op.name(),
                    })
                }
            }
            if placeholders[..i].contains(p) {
                return Err(RunError::DuplicatePlaceholder {
                    placeholder: graph.node_label(*p),
                });
            }
        }
        let needed = graph.ancestors(outputs);
        for (id, node) in graph.nodes() {
            let is_placeholder = matches!(
                node.op,
                Op::Tensor {
                    kind: TensorKind::Placeholder,
                    ..
                }
            );
            if is_placeholder && needed[id.index()] && !placeholders.contains(&id) {
                let output = outputs
                    .iter()
                    .find(|o| graph.ancestors(&[**o])[id.index()])
                    .copied()
                    .unwrap_or(id);
                return Err(RunError::MissingPlaceholder {
                    placeholder: graph.node_label(id),
                    output: graph.node_label(output),
                });
            }
        }
        Ok(Plan {
            outputs: outputs.to_vec(),
            placeholders: placeholders.to_vec(),
            needed,
        })
    }

    /// The outputs, in the order results are returned.
    pub fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    /// The placeholders, in the order inputs are passed.
    pub fn placeholders(&self) -> &[NodeId] {
        &self.placeholders
    }

    /// True if the computation evaluates `id`.
    pub fn is_needed(&self, id: NodeId) -> bool {
        self.needed.get(id.index()).copied().unwrap_or(false)
    }
}
