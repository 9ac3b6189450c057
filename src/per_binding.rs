//! Lengths bound at call time: one computation, one executable per binding.
//!
//! nGraph lets a graph's axis lengths be given late; a serving program calls one model at many
//! batch sizes. A [`Transformer`](crate::Transformer) may hold a graph whose declared axes of
//! placeholders are unbound. Its computations then compile nothing when they are made: each
//! call reads the lengths of those axes from its inputs (the *binding*), and runs the
//! executable compiled for that binding — compiled on the binding's first call, from a clone
//! of the graph with those lengths bound (same node ids, same axis table, so arrays labelled
//! with the transformer's axes are that graph's arrays), sharing the transformer's state.
//!
//! Assumes: variables and persistent tensors have every length bound (their values persist
//! across calls of any binding; `check_state` refuses others, naming the tensor and axis).
//! Guarantees:
//! - a binding compiles once while it stays cached; the cache holds the
//!   [`DEFAULT_BINDING_CAPACITY`] most recently used bindings (settable per computation) and
//!   evicts the least recently used; `Computation::compilations` counts compiles;
//! - a call whose binding is cached takes the cache's lock only to find it (no allocation:
//!   the lengths are compared in place), then runs like a computation made with those lengths;
//!   a new binding compiles under the lock, so concurrent first calls of one binding compile
//!   it once;
//! - every axis an input has gets its length from that input; two inputs disagreeing, an
//!   unbound axis no input has, or a binding whose graph fails verification is an error
//!   naming the axis (and the inputs) at fault.

use crate::backend::Preparer;
use crate::bound::{placeholder_names, Bound, Shared};
use crate::error::{Error, Result};
use std::sync::{Arc, Mutex};
use weft_ir::{AsHostView, Axis, AxisDef, Graph, NodeId, Op, TensorKind};
use weft_runtime::{Plan, StateAccess};

/// How many bindings a computation keeps compiled unless told otherwise.
pub const DEFAULT_BINDING_CAPACITY: usize = 8;

/// The lengths of a computation's axes bound at call time: `(axis name, length)`, in the
/// graph's axis-table order.
pub type Binding = Vec<(String, usize)>;

/// The declared axes of `g` without a length, in axis-table order.
pub(crate) fn unbound_axes(g: &Graph) -> Vec<Axis> {
    g.axis_table()
        .filter(|(_, d)| matches!(d.def, AxisDef::Base { len: None }))
        .map(|(id, _)| g.axis_of(id))
        .collect()
}

/// An error naming the first variable or persistent tensor of `g` with an unbound length.
pub(crate) fn check_state(g: &Graph) -> Result<()> {
    for (id, node) in g.nodes() {
        let stateful = matches!(
            node.op,
            Op::Tensor {
                kind: TensorKind::Variable | TensorKind::PersistentTensor,
                ..
            }
        );
        if let Some(axis) = node
            .axes
            .iter()
            .find(|a| stateful && g.resolve_len(**a).is_err())
        {
            return Err(Error::UnboundState {
                tensor: g.node_label(id),
                axis: g.axis_name(*axis),
            });
        }
    }
    Ok(())
}

/// Where a call finds the length of an axis bound at call time: input `input`, the first
/// placeholder that has the axis (the input may hold its axes in any order).
#[derive(Clone, Copy, Debug)]
struct Source {
    axis: Axis,
    input: usize,
}

/// Compiled bindings, most recently used first.
struct Cache {
    entries: Vec<(Vec<usize>, Arc<Bound>)>,
    capacity: usize,
    compilations: usize,
}

/// A computation whose graph has axes bound at call time.
pub(crate) struct PerBinding {
    shared: Arc<Shared>,
    preparer: Preparer,
    outputs: Vec<NodeId>,
    placeholders: Vec<NodeId>,
    access: StateAccess,
    /// The nodes it evaluates: only their axes (and its placeholders') need lengths.
    plan: Plan,
    /// Per unbound axis any placeholder has, where calls read its length.
    sources: Vec<Source>,
    cache: Mutex<Cache>,
}

impl PerBinding {
    /// The computation of `outputs` given `placeholders` over `shared`'s graph (which has
    /// unbound axes). Compiles nothing.
    pub(crate) fn new(
        shared: Arc<Shared>,
        preparer: Preparer,
        outputs: &[NodeId],
        placeholders: &[NodeId],
    ) -> Result<PerBinding> {
        let g = &*shared.graph;
        let plan = Plan::new(g, outputs, placeholders)?;
        let access = StateAccess::of(g, &plan);
        let sources = unbound_axes(g)
            .into_iter()
            .filter_map(|axis| {
                placeholders.iter().enumerate().find_map(|(input, p)| {
                    g.node(*p)
                        .axes
                        .iter()
                        .any(|a| a.id == axis.id)
                        .then_some(Source { axis, input })
                })
            })
            .collect();
        Ok(PerBinding {
            preparer,
            outputs: outputs.to_vec(),
            placeholders: placeholders.to_vec(),
            access,
            plan,
            sources,
            cache: Mutex::new(Cache {
                entries: Vec::new(),
                capacity: DEFAULT_BINDING_CAPACITY,
                compilations: 0,
            }),
            shared,
        })
    }

    pub(crate) fn graph(&self) -> &Graph {
        &self.shared.graph
    }

    pub(crate) fn outputs(&self) -> &[NodeId] {
        &self.outputs
    }

    pub(crate) fn placeholders(&self) -> &[NodeId] {
        &self.placeholders
    }

    pub(crate) fn assigns(&self) -> bool {
        !self.access.writes().is_empty()
    }

    /// Locks the cache (a panic in another call cannot leave it inconsistent: entries are
    /// only ever whole).
    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The length `inputs` give source `s`'s axis: from the input the source names, checked
    /// against every other input that has the axis. `Err` names the axis and the inputs.
    fn length<I: AsHostView>(&self, inputs: &[I], s: &Source) -> Result<usize> {
        let g = self.graph();
        let len_in = |i: usize| -> Option<usize> {
            let v = inputs.get(i)?.host_view();
            let at = v.axes().iter().position(|a| a.id == s.axis.id)?;
            v.shape().get(at).copied()
        };
        let first = len_in(s.input).ok_or_else(|| Error::InputAxes {
            tensor: g.node_label(self.placeholders[s.input]),
            expected: g.axes_name(&g.node(self.placeholders[s.input]).axes),
            got: g.axes_name(inputs[s.input].host_view().axes()),
        })?;
        for i in s.input + 1..inputs.len() {
            if let Some(len) = len_in(i).filter(|l| *l != first) {
                return Err(Error::ConflictingLengths {
                    axis: g.axis_name(s.axis),
                    first: g.node_label(self.placeholders[s.input]),
                    first_len: first,
                    second: g.node_label(self.placeholders[i]),
                    second_len: len,
                });
            }
        }
        Ok(first)
    }

    /// The computation for the binding `inputs` give, compiled on its first call.
    pub(crate) fn for_inputs<I: AsHostView>(&self, inputs: &[I]) -> Result<Arc<Bound>> {
        if inputs.len() != self.placeholders.len() {
            return Err(Error::InputCount {
                expected: self.placeholders.len(),
                got: inputs.len(),
                placeholders: placeholder_names(self.graph(), &self.placeholders),
            });
        }
        // Lengths compared in place: a cached binding's call allocates nothing here. An input
        // whose lengths are wrong matches no entry (its `length` is an error), so it reaches
        // the miss path, which returns that error.
        let mut cache = self.lock();
        let hit = cache.entries.iter().position(|(lens, _)| {
            lens.iter()
                .zip(&self.sources)
                .all(|(l, s)| self.length(inputs, s).ok() == Some(*l))
        });
        if let Some(at) = hit {
            cache.entries[..=at].rotate_right(1);
            return Ok(Arc::clone(&cache.entries[0].1));
        }
        let lens = self
            .sources
            .iter()
            .map(|s| self.length(inputs, s))
            .collect::<Result<Vec<_>>>()?;
        let bound = Arc::new(self.compile(&lens)?);
        cache.compilations += 1;
        cache.entries.insert(0, (lens, Arc::clone(&bound)));
        let capacity = cache.capacity;
        cache.entries.truncate(capacity);
        Ok(bound)
    }

    /// Compiles the computation with the sources' axes bound to `lens`.
    fn compile(&self, lens: &[usize]) -> Result<Bound> {
        let mut g = (*self.shared.graph).clone();
        for (s, len) in self.sources.iter().zip(lens) {
            g.bind(s.axis, *len)?;
        }
        g.verify_part(|id| self.plan.is_needed(id) || self.placeholders.contains(&id))?;
        let shared = Arc::new(Shared {
            graph: Arc::new(g),
            state: Arc::clone(&self.shared.state),
        });
        self.preparer
            .computation(shared, &self.outputs, &self.placeholders)
    }

    /// The error of asking for lengths before a call gives them.
    pub(crate) fn lengths_unknown(&self) -> Error {
        let g = self.graph();
        let names: Vec<String> = self
            .sources
            .iter()
            .map(|s| format!("`{}`", g.axis_name(s.axis)))
            .collect();
        Error::LengthsAtCall {
            axes: names.join(", "),
        }
    }

    pub(crate) fn bindings(&self) -> Vec<Binding> {
        let g = self.graph();
        self.lock()
            .entries
            .iter()
            .map(|(lens, _)| {
                self.sources
                    .iter()
                    .zip(lens)
                    .map(|(s, l)| (g.axis_name(s.axis), *l))
                    .collect()
            })
            .collect()
    }

    pub(crate) fn compilations(&self) -> usize {
        self.lock().compilations
    }

    pub(crate) fn set_capacity(&self, capacity: usize) {
        let mut cache = self.lock();
        cache.capacity = capacity.max(1);
        let capacity = cache.capacity;
        cache.entries.truncate(capacity);
    }
}
