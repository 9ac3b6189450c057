//! Transformers (as in nGraph: make a transformer, ask it for a computation of some outputs
//! given some placeholders, call it with host arrays, get host arrays back; docs/design.md).
//!
//! A [`Transformer`] owns a verified graph, a [`Backend`] and the values of the graph's
//! variables and persistent tensors. Those values are shared by every computation the
//! transformer hands out, as in ngraph: an `assign` run by a training computation is seen by an
//! evaluation computation. The state is a [`SharedState`], so transformers and computations are
//! `Send + Sync` and calls run concurrently: a call that assigns nothing takes no exclusive
//! lock, and a call that assigns waits only for calls that read or assign what it assigns (or
//! assign what it reads). Every call reads a consistent snapshot and commits all its assigns
//! or none (the protocol is in `weft_runtime::state`).

pub use crate::backend::Backend;
use crate::backend::Preparer;
use crate::bound::{conform, Shared};
use crate::computation::Computation;
use crate::error::{Error, Result};
use std::sync::Arc;
use weft_compiler::JitOptions;
use weft_ir::{Graph, HostArray, NodeId};
use weft_runtime::{Perturbation, Plan, SharedState, State, StateAccess};

/// A graph prepared to run on a backend, with the state of its variables and persistent
/// tensors.
///
/// ```
/// use weft::prelude::*;
/// let b = GraphBuilder::new();
/// let n = b.axis("N", 2)?;
/// let x = b.placeholder("x", &[n], DType::F32)?;
/// let w = b.variable("w", &[n], DType::F32, TensorInit::Fill(Scalar::Float(0.5)))?;
/// let (x, w, y) = (x.id(), w.id(), (x * w)?.id());
/// let t = Transformer::new(b.finish(), Backend::Jit)?; // Backend::Interpreter: the oracle
/// let scale = t.computation(&[y], &[x])?;
/// let out = scale.call(&[HostArray::from_vec(Axes::new([n])?, vec![2], vec![2f32, 4.])?])?;
/// assert_eq!(out[0].to_vec::<f32>()?, vec![1., 2.]);
/// assert_eq!(t.value_of(w)?.to_vec::<f32>()?, vec![0.5, 0.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Transformer {
    shared: Arc<Shared>,
    /// The backend, the JIT's options when the caller chose them
    /// ([`Transformer::with_jit_options`]) and the interpreter's conditioning probe
    /// ([`Transformer::perturbed_interpreter`]).
    preparer: Preparer,
}

impl Transformer {
    /// A transformer for `graph` on `backend`. [`Graph::verify`] runs here. Declared axes may
    /// be left unbound when they are axes of placeholders: their lengths are then bound at call
    /// time, from the inputs' shapes, and each computation compiles once per distinct binding
    /// (docs/runtime.md, "Lengths bound at call time"; [`Computation::bindings`]). Variables
    /// and persistent tensors keep their values across calls, so their axes must be bound
    /// here (an error names the tensor and the axis otherwise). They start from their initial
    /// values.
    pub fn new(graph: Graph, backend: Backend) -> Result<Transformer> {
        match graph.verify() {
            Ok(()) => {}
            Err(weft_ir::GraphError::UnboundAxis { .. }) => {
                crate::per_binding::check_state(&graph)?
            }
            Err(e) => return Err(e.into()),
        }
        let state = State::initial(&graph)?;
        Ok(Transformer {
            shared: Arc::new(Shared {
                graph: Arc::new(graph),
                state: Arc::new(SharedState::new(state)),
            }),
            preparer: Preparer {
                backend,
                jit: None,
                perturbation: None,
            },
        })
    }

    /// A transformer for `graph` on the reference interpreter with every float entering the
    /// computation (inputs, state, constants, conversions from integers) nudged by `p`: the
    /// test oracle's perturbed reference, whose distance from the plain interpreter's results
    /// measures each element's conditioning (docs/testing.md, "Tolerances").
    pub fn perturbed_interpreter(graph: Graph, p: Perturbation) -> Result<Transformer> {
        let mut t = Transformer::new(graph, Backend::Interpreter)?;
        t.preparer.perturbation = Some(p);
        Ok(t)
    }

    /// A transformer for `graph` on the JIT with the caller's options: fusion on or off, the
    /// lowering's thresholds (parallelism, vectorisation, f64 accumulation), code generation
    /// switches, and axis orders for placeholders and outputs (`JitOptions::layouts`: arrays
    /// still go in and come out in their declared order).
    pub fn with_jit_options(graph: Graph, options: JitOptions) -> Result<Transformer> {
        let backend = if options.fused {
            Backend::Jit
        } else {
            Backend::JitUnfused
        };
        let mut t = Transformer::new(graph, backend)?;
        t.preparer.jit = Some(options);
        Ok(t)
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.shared.graph
    }

    /// The backend.
    pub fn backend(&self) -> Backend {
        self.preparer.backend
    }

    /// A computation of `outputs` given `placeholders`: each call takes one array per
    /// placeholder, in this order, and returns one array per output, in this order. Every
    /// placeholder an output depends on must be listed. If the graph has axes bound at call
    /// time, nothing is compiled here: each call binds them from its inputs and compiles on
    /// the first call of each binding ([`Computation::bindings`]).
    pub fn computation(&self, outputs: &[NodeId], placeholders: &[NodeId]) -> Result<Computation> {
        let g = &*self.shared.graph;
        // Only the axes of the nodes this computation evaluates matter: another computation's
        // axis bound at call time neither stops it nor makes it compile per binding.
        let fully_bound = crate::per_binding::unbound_axes(g).is_empty() || {
            let plan = Plan::new(g, outputs, placeholders)?;
            // Listed placeholders count even when no output reads them: their inputs give
            // their axes' lengths at each call, and the JIT sizes every input it takes.
            match g.verify_part(|id| plan.is_needed(id) || placeholders.contains(&id)) {
                Ok(()) => true,
                Err(weft_ir::GraphError::UnboundAxis { .. }) => false,
                Err(e) => return Err(e.into()),
            }
        };
        if fully_bound {
            let bound =
                self.preparer
                    .computation(Arc::clone(&self.shared), outputs, placeholders)?;
            return Ok(Computation::bound(bound));
        }
        let per = crate::per_binding::PerBinding::new(
            Arc::clone(&self.shared),
            self.preparer.clone(),
            outputs,
            placeholders,
        )?;
        Ok(Computation::per_binding(per))
    }

    /// The current value of a variable or persistent tensor, in its axes order.
    pub fn value_of(&self, node: NodeId) -> Result<HostArray> {
        self.check_stateful(node)?;
        self.shared
            .state
            .read(|s| s.get(node).cloned())
            .ok_or_else(|| self.not_stateful(node))
    }

    /// Replaces the value of a variable or persistent tensor. The array's axes must be the
    /// tensor's as a set (any order), with the same lengths and dtype.
    pub fn set_value(&self, node: NodeId, value: &HostArray) -> Result<()> {
        self.check_stateful(node)?;
        let value = conform(&self.shared.graph, node, value.view())?;
        // Claimed like a call that assigns `node`: it waits for calls reading or assigning it.
        let access = StateAccess::assigning(node);
        let mut view = self.shared.state.begin(&access);
        view.commit(|s| s.set(&self.shared.graph, node, value))?;
        Ok(())
    }

    fn check_stateful(&self, node: NodeId) -> Result<()> {
        if self.shared.graph.get(node).is_none() {
            return Err(Error::Run(weft_runtime::RunError::ForeignNode(format!(
                "node {node}"
            ))));
        }
        if !self.shared.state.holds(node) {
            return Err(self.not_stateful(node));
        }
        Ok(())
    }

    fn not_stateful(&self, node: NodeId) -> Error {
        let g = &self.shared.graph;
        Error::NotStateful {
            node: g.node_label(node),
            kind: g.get(node).map(|n| n.op.name()).unwrap_or("foreign node"),
        }
    }
}

impl Transformer {
    /// The variables and persistent tensors, in node order.
    pub fn stateful(&self) -> Vec<NodeId> {
        let g = &self.shared.graph;
        g.nodes()
            .filter(|(id, _)| self.shared.state.holds(*id))
            .map(|(id, _)| id)
            .collect()
    }

    /// Writes the current value of every variable and persistent tensor into `dir` (created
    /// if missing) as `NAME.npy` ([`file_stem`] of its name); [`Transformer::load`] reads them
    /// back. Returns the files written.
    pub fn save(&self, dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.display().to_string(),
            source,
        })?;
        let g = &self.shared.graph;
        let mut written = Vec::new();
        for id in self.stateful() {
            let path = dir.join(format!("{}.npy", file_stem(&g.node_label(id))));
            self.value_of(id)?.write_npy(&path)?;
            written.push(path);
        }
        Ok(written)
    }

    /// Sets every variable and persistent tensor from `NAME.npy` in `dir`, as
    /// [`Transformer::save`] wrote them: each file must exist and fit its tensor (axes in
    /// declared order, lengths, dtype; an error names the file). Nothing is set unless every
    /// file reads.
    pub fn load(&self, dir: &std::path::Path) -> Result<()> {
        let g = &self.shared.graph;
        let values = self
            .stateful()
            .into_iter()
            .map(|id| {
                let path = dir.join(format!("{}.npy", file_stem(&g.node_label(id))));
                let value = HostArray::read_npy(&path, g.node(id).axes.clone())?;
                Ok((id, conform(g, id, value.view())?))
            })
            .collect::<Result<Vec<_>>>()?;
        for (id, value) in values {
            self.set_value(id, &value)?;
        }
        Ok(())
    }
}

/// The `.npy` file stem of a tensor's name (`%3` becomes `node3`; characters other than
/// letters, digits, `_` and `-` become `_`): how `weft run` names outputs and inputs and
/// [`Transformer::save`] names state.
pub fn file_stem(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    match name.strip_prefix('%') {
        Some(n) => format!("node{n}"),
        None => s,
    }
}

impl std::fmt::Debug for Transformer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transformer")
            .field("backend", &self.preparer.backend)
            .field("nodes", &self.shared.graph.len())
            .finish()
    }
}
