//! The values of a graph's variables and persistent tensors, which outlive a single call.
//!
//! A [`State`] starts from each tensor's initial value and is updated by `assign`s after a
//! call succeeds. Every value is held in its tensor's axes order with the graph's lengths and
//! the tensor's dtype; [`State::set`] refuses anything else, so executables can rely on it.

use crate::error::RunError;
use std::collections::BTreeMap;
use weft_ir::{ArrayData, Graph, HostArray, NodeId, Op, TensorInit, TensorKind};

/// The current values of the variables and persistent tensors of one graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    values: BTreeMap<NodeId, HostArray>,
}

impl State {
    /// The initial values of every variable and persistent tensor of `graph`, whose axes must be
    /// bound.
    pub fn initial(graph: &Graph) -> Result<State, RunError> {
        let mut values = BTreeMap::new();
        for (id, node) in graph.nodes() {
            if let Op::Tensor {
                kind: TensorKind::Variable | TensorKind::PersistentTensor,
                ..
            } = node.op
            {
                values.insert(id, stored_value(graph, id)?);
            }
        }
        Ok(State { values })
    }

    /// The value of a variable or persistent tensor.
    pub fn get(&self, id: NodeId) -> Option<&HostArray> {
        self.values.get(&id)
    }

    /// The elements of a variable or persistent tensor, mutably, if it is held here and of
    /// element type `T`. The axes, shape and dtype cannot change through it, so executables can
    /// commit an assigned value in place, without allocating.
    pub fn elements_mut<T: weft_ir::Element>(&mut self, id: NodeId) -> Option<&mut [T]> {
        self.values.get_mut(&id)?.as_mut_slice().ok()
    }

    /// True if `id` is a variable or persistent tensor held here.
    pub fn holds(&self, id: NodeId) -> bool {
        self.values.contains_key(&id)
    }

    /// Replaces the value of a variable or persistent tensor. The value must have the tensor's
    /// axes in its order, its lengths and its dtype.
    pub fn set(&mut self, graph: &Graph, id: NodeId, value: HostArray) -> Result<(), RunError> {
        let tensor = graph.node_label(id);
        let old = self.values.get_mut(&id).ok_or_else(|| RunError::State {
            tensor: tensor.clone(),
            message: "is not a variable or persistent tensor of this graph".into(),
        })?;
        if value.axes() != old.axes() || value.shape() != old.shape() {
            return Err(RunError::State {
                tensor,
                message: format!(
                    "new value has axes {} and shape {:?}, not {} and {:?}",
                    graph.axes_name(value.axes()),
                    value.shape(),
                    graph.axes_name(old.axes()),
                    old.shape()
                ),
            });
        }
        if value.dtype() != old.dtype() {
            return Err(RunError::State {
                tensor,
                message: format!("new value has dtype {}, not {}", value.dtype(), old.dtype()),
            });
        }
        *old = value;
        Ok(())
    }

    /// The variables and persistent tensors held, in node order.
    pub fn tensors(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.values.keys().copied()
    }
}

/// The initial value of a stored tensor (constant, variable or persistent tensor) over its
/// axes, in their order.
pub fn stored_value(graph: &Graph, id: NodeId) -> Result<HostArray, RunError> {
    let node = graph
        .get(id)
        .ok_or_else(|| RunError::ForeignNode(format!("node {id}")))?;
    let shape = graph.shape_of(&node.axes)?;
    let count = graph.tensor_size(id)?.elements;
    let init = match &node.op {
        Op::Tensor { init: Some(i), .. } => i,
        op => {
            return Err(RunError::State {
                tensor: graph.node_label(id),
                message: format!("a {} has no initial value", op.name()),
            })
        }
    };
    let data = match init {
        TensorInit::Fill(s) => {
            ArrayData::filled(node.dtype, *s, count).map_err(|source| RunError::Alloc {
                tensor: graph.node_label(id),
                source,
            })?
        }
        TensorInit::Data(d) => d.clone(),
    };
    Ok(HostArray::new(node.axes.clone(), shape, data)?)
}
