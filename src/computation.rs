//! Computations: callable evaluations of some outputs given some placeholders.
//!
//! Every call checks each input against its placeholder — the axes as a set (seed 003: the
//! order of axes does not matter; a permuted array is transposed), then each axis's length,
//! then the dtype — and answers a mismatch with an error naming the placeholder. Outputs come
//! back in their output node's axes order, as new arrays from [`Computation::call`] or written
//! into caller-owned arrays by [`Computation::call_into`], which on the JIT allocates nothing in
//! steady state.

use crate::error::{Error, Result};
use crate::transformer::Shared;
use std::sync::Arc;
use weft_ir::{ArrayData, Graph, HostArray, NodeId};
use weft_runtime::{Executable, RunError, StateAccess};

/// A computation handed out by a [`Transformer`](crate::Transformer); it shares the
/// transformer's variables and persistent tensors. Calls may run from several threads at once:
/// calls that assign nothing never wait for each other; a call that assigns waits only for
/// calls touching what it assigns or assigning what it reads.
pub struct Computation {
    shared: Arc<Shared>,
    executable: Box<dyn Executable>,
    /// The variables and persistent tensors a call reads and assigns (what it claims).
    access: StateAccess,
}

impl Computation {
    pub(crate) fn new(
        shared: Arc<Shared>,
        executable: Box<dyn Executable>,
        access: StateAccess,
    ) -> Computation {
        Computation {
            shared,
            executable,
            access,
        }
    }

    /// True if a call assigns a variable or persistent tensor (and so may wait for other calls
    /// touching it).
    pub fn assigns(&self) -> bool {
        !self.access.writes().is_empty()
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
        let permuted = self.check_inputs(inputs)?;
        let inputs = permuted.as_deref().unwrap_or(inputs);
        let mut state = self.shared.state.begin(&self.access);
        Ok(self.executable.run_on(inputs, &mut state)?)
    }

    /// Runs the computation like [`Computation::call`] but writes the outputs into
    /// caller-owned arrays, one per output in [`Computation::outputs`] order, each with its
    /// output's axes *in the output's order*, lengths and dtype (make them once with
    /// [`Computation::output_arrays`]); a mismatch is an error naming the output.
    ///
    /// On the JIT backends a steady-state call allocates nothing — no heap allocation at all,
    /// proved by `tests/steady_state_call.rs` with a counting global allocator — provided the
    /// inputs are in their placeholders' axes order (a permuted input is transposed into a new
    /// array), no other call of the same computation runs at the same time (a concurrent call
    /// makes one more set of device buffers, once) and nothing fails (errors allocate their
    /// messages). Assigned values are committed into the state in place. The interpreter
    /// backend computes new arrays and moves them into `outputs`, so it allocates.
    ///
    /// On an error the output arrays may hold anything; variables and persistent tensors are
    /// unchanged.
    pub fn call_into(&self, inputs: &[HostArray], outputs: &mut [HostArray]) -> Result<()> {
        let permuted = self.check_inputs(inputs)?;
        let inputs = permuted.as_deref().unwrap_or(inputs);
        self.check_outputs(outputs)?;
        let mut state = self.shared.state.begin(&self.access);
        Ok(self.executable.run_into_on(inputs, outputs, &mut state)?)
    }

    /// Zero-filled arrays to pass to [`Computation::call_into`]: one per output, with its axes
    /// (in order), lengths and dtype.
    pub fn output_arrays(&self) -> Result<Vec<HostArray>> {
        let g = &*self.shared.graph;
        self.outputs()
            .iter()
            .map(|o| {
                let n = g.node(*o);
                let shape = g.shape_of(&n.axes)?;
                let len = g.tensor_size(*o)?.elements;
                let data = ArrayData::zeros(n.dtype, len).map_err(|source| RunError::Alloc {
                    tensor: g.node_label(*o),
                    source,
                })?;
                Ok(HostArray::new(n.axes.clone(), shape, data)?)
            })
            .collect()
    }

    /// Checks every input against its placeholder. Returns the inputs put in their
    /// placeholders' axes order if any was permuted (a copy); `None` — and no allocation —
    /// when all are in order already.
    fn check_inputs(&self, inputs: &[HostArray]) -> Result<Option<Vec<HostArray>>> {
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
        if in_order {
            return Ok(None);
        }
        placeholders
            .iter()
            .zip(inputs)
            .map(|(p, a)| conform(g, *p, a))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Checks the output arrays of [`Computation::call_into`]. Allocates nothing unless one is
    /// wrong.
    fn check_outputs(&self, arrays: &[HostArray]) -> Result<()> {
        let g = &*self.shared.graph;
        let outputs = self.outputs();
        if arrays.len() != outputs.len() {
            let names: Vec<String> = outputs.iter().map(|o| g.node_label(*o)).collect();
            return Err(Error::OutputCount {
                expected: outputs.len(),
                got: arrays.len(),
                outputs: format!("({})", names.join(", ")),
            });
        }
        for (o, a) in outputs.iter().zip(arrays) {
            let n = g.node(*o);
            if a.axes() != &n.axes {
                return Err(Error::OutputAxes {
                    output: g.node_label(*o),
                    expected: g.axes_name(&n.axes),
                    got: g.axes_name(a.axes()),
                });
            }
            for (axis, got) in a.axes().iter().zip(a.shape()) {
                let expected = g.resolve_len(*axis)?;
                if expected != *got {
                    return Err(Error::OutputLength {
                        output: g.node_label(*o),
                        axis: g.axis_name(*axis),
                        expected,
                        got: *got,
                    });
                }
            }
            if a.dtype() != n.dtype {
                return Err(Error::OutputDType {
                    output: g.node_label(*o),
                    expected: n.dtype,
                    got: a.dtype(),
                });
            }
        }
        Ok(())
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
    // Named only on an error: the happy path allocates nothing.
    let tensor = || graph.node_label(node);
    if !array.axes().is_equal_set(&n.axes) {
        return Err(Error::InputAxes {
            tensor: tensor(),
            expected: graph.axes_name(&n.axes),
            got: graph.axes_name(array.axes()),
        });
    }
    for (a, got) in array.axes().iter().zip(array.shape()) {
        let expected = graph.resolve_len(*a)?;
        if expected != *got {
            return Err(Error::InputLength {
                tensor: tensor(),
                axis: graph.axis_name(*a),
                expected,
                got: *got,
            });
        }
    }
    if array.dtype() != n.dtype {
        return Err(Error::InputDType {
            tensor: tensor(),
            expected: n.dtype,
            got: array.dtype(),
        });
    }
    Ok(())
}
