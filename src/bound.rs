//! A computation over a fully bound graph: one executable, the state it shares with its
//! transformer ([`Shared`]), and the checks of its calls — input and output arrays against
//! their nodes, permuted inputs conformed to their placeholder's axes order.
//!
//! Assumes a verified graph whose lengths are all bound. Guarantees: an array a call is given
//! is used only when it is exactly, or (for an input) conforms to, what its node takes; a
//! mismatch is a typed [`Error`] naming the tensor.

use crate::error::{Error, Result};
use std::sync::Arc;
use weft_ir::{AsHostView, Graph, HostArray, HostView, NodeId, OutputArrays};
use weft_runtime::{Executable, RunError, SharedState, StateAccess};

/// What a transformer shares with its computations. A computation of lengths bound at call
/// time holds one per binding: the bound graph, the same state.
pub(crate) struct Shared {
    pub(crate) graph: Arc<Graph>,
    pub(crate) state: Arc<SharedState>,
}

/// A computation over a fully bound graph: one executable and the checks of its calls.
pub(crate) struct Bound {
    pub(crate) shared: Arc<Shared>,
    pub(crate) executable: Box<dyn Executable>,
    /// The variables and persistent tensors a call reads and assigns (what it claims).
    access: StateAccess,
    /// Per placeholder, then per output: its lengths, so a call recognises a well-formed array
    /// by comparing axes, lengths and dtype at once (the detailed checks run only to name what
    /// is wrong).
    input_shapes: Vec<Vec<usize>>,
    output_shapes: Vec<Vec<usize>>,
}

impl Bound {
    pub(crate) fn new(
        shared: Arc<Shared>,
        executable: Box<dyn Executable>,
        access: StateAccess,
    ) -> Result<Bound> {
        let g = &*shared.graph;
        let shapes = |nodes: &[NodeId]| -> Result<Vec<Vec<usize>>> {
            nodes
                .iter()
                .map(|n| Ok(g.shape_of(&g.node(*n).axes)?))
                .collect()
        };
        let input_shapes = shapes(executable.placeholders())?;
        let output_shapes = shapes(executable.outputs())?;
        Ok(Bound {
            shared,
            executable,
            access,
            input_shapes,
            output_shapes,
        })
    }

    /// Whether `a` is exactly what node `n` (of lengths `shape`) takes: its axes in order, its
    /// lengths and dtype.
    fn fits(&self, n: NodeId, shape: &[usize], a: HostView<'_>) -> bool {
        let node = self.shared.graph.node(n);
        a.axes().identical_to(&node.axes) && a.shape() == shape && a.dtype() == node.dtype
    }

    /// [`Computation::assigns`].
    pub fn assigns(&self) -> bool {
        !self.access.writes().is_empty()
    }

    /// [`Computation::outputs`].
    pub fn outputs(&self) -> &[NodeId] {
        self.executable.outputs()
    }

    /// [`Computation::placeholders`].
    pub fn placeholders(&self) -> &[NodeId] {
        self.executable.placeholders()
    }

    /// [`Computation::call`] at this binding.
    pub fn call<I: AsHostView>(&self, inputs: &[I]) -> Result<Vec<HostArray>> {
        let permuted = self.check_inputs(inputs)?;
        let mut state = self.shared.state.begin(&self.access);
        Ok(match &permuted {
            Some(p) => self.executable.run_on(&p.as_slice(), &mut state)?,
            None => self.executable.run_on(&inputs, &mut state)?,
        })
    }

    /// [`Computation::call_into`] and [`Computation::call_into_views`] at this binding.
    pub fn call_into<I: AsHostView>(
        &self,
        inputs: &[I],
        mut outputs: OutputArrays<'_, '_>,
    ) -> Result<()> {
        // Arrays exactly as the placeholders and outputs take them — the steady state of a
        // host calling in a loop — are checked once, by an executable that checks them
        // exactly before any effect (the rule of `fits`). Any mismatch there takes the
        // checked path below: the precise error, or a permuted input transposed.
        if self.executable.checks_arrays_exactly() {
            let mut state = self.shared.state.begin(&self.access);
            match self
                .executable
                .run_into_on(&inputs, outputs.reborrow(), &mut state)
            {
                Err(
                    RunError::InputCount { .. }
                    | RunError::Input { .. }
                    | RunError::OutputCount { .. }
                    | RunError::Output { .. },
                ) => {}
                result => return Ok(result?),
            }
        }
        let permuted = self.check_inputs(inputs)?;
        self.check_outputs(&outputs)?;
        let mut state = self.shared.state.begin(&self.access);
        match &permuted {
            Some(p) => self
                .executable
                .run_into_on(&p.as_slice(), outputs, &mut state)?,
            None => self.executable.run_into_on(&inputs, outputs, &mut state)?,
        }
        Ok(())
    }

    /// [`Computation::output_arrays`] at this binding.
    pub fn output_arrays(&self) -> Result<Vec<HostArray>> {
        let g = &*self.shared.graph;
        self.outputs()
            .iter()
            .map(|o| {
                let n = g.node(*o);
                let shape = g.shape_of(&n.axes)?;
                let len = g.tensor_size(*o)?.elements;
                let data = weft_runtime::zeroed_host_data(n.dtype, len).map_err(|source| {
                    RunError::Alloc {
                        tensor: g.node_label(*o),
                        source,
                    }
                })?;
                Ok(HostArray::new(n.axes.clone(), shape, data)?)
            })
            .collect()
    }

    /// Checks every input against its placeholder. Returns the inputs put in their
    /// placeholders' axes order if any was permuted (a copy); `None` — and no allocation —
    /// when all are in order already.
    fn check_inputs<I: AsHostView>(&self, inputs: &[I]) -> Result<Option<Vec<HostArray>>> {
        let g = &*self.shared.graph;
        let placeholders = self.placeholders();
        if inputs.len() != placeholders.len() {
            return Err(Error::InputCount {
                expected: placeholders.len(),
                got: inputs.len(),
                placeholders: placeholder_names(g, placeholders),
            });
        }
        let exact = placeholders
            .iter()
            .zip(&self.input_shapes)
            .zip(inputs)
            .all(|((p, shape), a)| self.fits(*p, shape, a.host_view()));
        if exact {
            return Ok(None);
        }
        for (p, a) in placeholders.iter().zip(inputs) {
            check(g, *p, a.host_view())?;
        }
        let in_order = placeholders
            .iter()
            .zip(inputs)
            .all(|(p, a)| a.host_view().axes() == &g.node(*p).axes);
        // Arrays already in their placeholder's axes order go to the executable as they are;
        // only permuted ones are transposed (a copy).
        if in_order {
            return Ok(None);
        }
        placeholders
            .iter()
            .zip(inputs)
            .map(|(p, a)| conform(g, *p, a.host_view()))
            .collect::<Result<Vec<_>>>()
            .map(Some)
    }

    /// Checks the output arrays of [`Computation::call_into`]. Allocates nothing unless one is
    /// wrong.
    fn check_outputs(&self, arrays: &OutputArrays<'_, '_>) -> Result<()> {
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
        let exact = outputs
            .iter()
            .zip(&self.output_shapes)
            .enumerate()
            .all(|(i, (o, shape))| self.fits(*o, shape, arrays.view(i)));
        if exact {
            return Ok(());
        }
        for (i, o) in outputs.iter().enumerate() {
            let a = arrays.view(i);
            let n = g.node(*o);
            if a.axes() != &n.axes {
                return Err(Error::OutputAxes {
                    output: g.node_label(*o),
                    expected: g.axes_name(&n.axes),
                    got: g.axes_name(a.axes()),
                });
            }
            foreign(g, a.axes(), &n.axes, || g.node_label(*o))?;
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

/// `array` as a value of tensor `node`: the same axes as a set, put in the node's order, with
/// the node's lengths and dtype.
pub(crate) fn conform(graph: &Graph, node: NodeId, array: HostView<'_>) -> Result<HostArray> {
    check(graph, node, array)?;
    let n = graph.node(node);
    array
        .to_owned_array()
        .with_axes_order(&n.axes)
        .ok_or_else(|| Error::InputAxes {
            tensor: graph.node_label(node),
            expected: graph.axes_name(&n.axes),
            got: graph.axes_name(array.axes()),
        })
}

/// An error naming `tensor` if an axis of `array` (equal to one of `node`'s) belongs to
/// another graph's axis table.
fn foreign(
    graph: &Graph,
    array: &weft_ir::Axes,
    node: &weft_ir::Axes,
    tensor: impl Fn() -> String,
) -> Result<()> {
    match array.foreign_to(node) {
        None => Ok(()),
        Some((theirs, ours)) => Err(Error::ForeignAxis {
            tensor: tensor(),
            axis: graph.axis_name(ours),
            expected: ours.table(),
            got: theirs.table(),
        }),
    }
}

/// Checks that `array` can be a value of tensor `node`: the same axes as a set, the node's
/// lengths and dtype.
fn check(graph: &Graph, node: NodeId, array: HostView<'_>) -> Result<()> {
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
    foreign(graph, array.axes(), &n.axes, tensor)?;
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

/// The placeholders' names, for an error.
pub(crate) fn placeholder_names(g: &Graph, placeholders: &[NodeId]) -> String {
    let names: Vec<String> = placeholders.iter().map(|p| g.node_label(*p)).collect();
    names.join(", ")
}
