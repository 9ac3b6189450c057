//! Computations: callable evaluations of some outputs given some placeholders.
//!
//! Every call checks each input against its placeholder — the axes as a set (seed 003: the
//! order of axes does not matter; a permuted array is transposed), then each axis's length,
//! then the dtype — and answers a mismatch with an error naming the placeholder. Outputs come
//! back in their output node's axes order.

use crate::error::{Error, Result};
use crate::transformer::Shared;
use std::sync::Arc;
use weft_ir::{Graph, HostArray, NodeId};
use weft_runtime::Executable;

/// A computation handed out by a [`Transformer`](crate::Transformer); it shares the
/// transformer's variables and persistent tensors.
pub struct Computation {
    shared: Arc<Shared>,
    executable: Box<dyn Executable>,
}

impl Computation {
    pub(crate) fn new(shared: Arc<Shared>, executable: Box<dyn Executable>) -> Computation {
        Computation { shared, executable }
    }

    /// The outputs, in the order calls return them.
    pub fn outputs(&self) -> &[NodeId] {
        self.executable.outputs()
    }

    /// The placeholders, in the order calls take inputs.
    pub fn placeholders(&self) -> &[NodeId] {
        self.executable.placeholders()
    }

    /// Runs the computation: one array per placeholder in, one array per output out.
    /// Variables and persistent tensors keep the values `assign`s give them for later calls
    /// of this and every other computation of the transformer.
    pub fn call(&self, inputs: &[HostArray]) -> Result<Vec<HostArray>> {
        let g = &*self.shared.graph;
        let placeholders = self.placeholders();
        if inputs.len() != placeholders.len() {
            let names: Vec<String> = placeholders.iter().map(|p| g.node_label(*p)).collect();
            return Err(Error::InputCount {
                expected: placeholders.len(),
                got: inputs.len(),
                placeholders: format!("({})", names.join(", ")),
            });
        }
        for (p, a) in placeholders.iter().zip(inputs) {
            check(g, *p, a)?;
        }
        let in_order = placeholders
            .iter()
            .zip(inputs)
            .all(|(p, a)| a.axes() == &g.node(*p).axes);
        // Arrays already in their placeholder's axes order go to the executable as they are;
        // only permuted ones are transposed (a copy).
        let permuted;
        let inputs = if in_order {
            inputs
        } else {
            permuted = placeholders
                .iter()
                .zip(inputs)
                .map(|(p, a)| conform(g, *p, a))
                .collect::<Result<Vec<_>>>()?;
            &permuted[..]
        };
        let mut state = self.shared.state();
        Ok(self.executable.run(inputs, &mut state)?)
    }
}

impl std::fmt::Debug for Computation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Computation")
            .field("outputs", &self.outputs())
            .field("placeholders", &self.placeholders())
            .finish()
    }
}

/// `array` as a value of tensor `node`: the same axes as a set, put in the node's order, with
/// the node's lengths and dtype.
pub(crate) fn conform(graph: &Graph, node: NodeId, array: &HostArray) -> Result<HostArray> {
    check(graph, node, array)?;
    let n = graph.node(node);
    array
        .with_axes_order(&n.axes)
        .ok_or_else(|| Error::InputAxes {
            tensor: graph.node_label(node),
            expected: graph.axes_name(&n.axes),
            got: graph.axes_name(array.axes()),
        })
}

/// Checks that `array` can be a value of tensor `node`: the same axes as a set, the node's
/// lengths and dtype.
fn check(graph: &Graph, node: NodeId, array: &HostArray) -> Result<()> {
    let n = graph.node(node);
    let tensor = graph.node_label(node);
    if !array.axes().is_equal_set(&n.axes) {
        return Err(Error::InputAxes {
            tensor,
            expected: graph.axes_name(&n.axes),
            got: graph.axes_name(array.axes()),
        });
    }
    for (a, got) in array.axes().iter().zip(array.shape()) {
        let expected = graph.resolve_len(*a)?;
        if expected != *got {
            return Err(Error::InputLength {
                tensor,
                axis: graph.axis_name(*a),
                expected,
                got: *got,
            });
        }
    }
    if array.dtype() != n.dtype {
        return Err(Error::InputDType {
            tensor,
            expected: n.dtype,
            got: array.dtype(),
        });
    }
    Ok(())
}
