//! Backends: what runs a transformer's computations ([`Backend`]), and how a transformer
//! prepares an executable of one ([`Preparer`]).

use crate::bound::{Bound, Shared};
use crate::error::Result;
use std::sync::Arc;
use weft_compiler::{JitExecutable, JitOptions};
use weft_ir::{Graph, NodeId};
use weft_runtime::{Executable, Interpreter, Perturbation, Plan, StateAccess};

/// What runs a transformer's computations.
///
/// ```
/// use weft::prelude::*;
/// let b = GraphBuilder::new();
/// let n = b.axis("N", 3)?;
/// let x = b.placeholder("x", &[n], DType::F64)?;
/// let (x, y) = (x.id(), x.tanh()?.id());
/// let g = b.finish();
/// let input = HostArray::from_vec(Axes::new([n])?, vec![3], vec![-1.0, 0.0, 1.0])?;
/// // The same computation on the JIT and on the reference interpreter.
/// let on = |backend| -> Result<Vec<f64>, Box<dyn std::error::Error>> {
///     let t = Transformer::new(g.clone(), backend)?;
///     Ok(t.computation(&[y], &[x])?.call(&[&input])?[0].to_vec::<f64>()?)
/// };
/// let (jit, interp) = (on(Backend::Jit)?, on(Backend::Interpreter)?);
/// assert!(jit.iter().zip(&interp).all(|(a, b)| (a - b).abs() < 1e-12));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Native kernels compiled once by the JIT ([`weft_compiler::JitExecutable`]): fused
    /// kernels over shared buffers. The default.
    #[default]
    Jit,
    /// The JIT with fusion and storage sharing off: one kernel per op, every intermediate
    /// materialised in a buffer of its own (the baseline that shows what fusion buys).
    JitUnfused,
    /// The reference interpreter ([`weft_runtime::interp`]): slow, simple and obviously right.
    Interpreter,
}

impl Backend {
    /// Prepares the computation of `outputs` given `placeholders` on this backend.
    fn prepare(
        self,
        graph: &Arc<Graph>,
        outputs: &[NodeId],
        placeholders: &[NodeId],
        jit: Option<&JitOptions>,
        perturbation: Option<Perturbation>,
    ) -> Result<Box<dyn Executable>> {
        match self {
            Backend::Jit | Backend::JitUnfused => {
                let options = match jit {
                    Some(o) => o.clone(),
                    None if self == Backend::Jit => JitOptions::default(),
                    None => JitOptions::unfused(),
                };
                Ok(Box::new(JitExecutable::new(
                    Arc::clone(graph),
                    outputs,
                    placeholders,
                    &options,
                )?))
            }
            Backend::Interpreter => {
                let interp = Interpreter::new(Arc::clone(graph), outputs, placeholders)?;
                Ok(Box::new(match perturbation {
                    Some(p) => interp.with_perturbation(p),
                    None => interp,
                }))
            }
        }
    }
}

/// How a transformer prepares executables: its backend and the options it was made with.
#[derive(Clone, Debug)]
pub(crate) struct Preparer {
    pub(crate) backend: Backend,
    pub(crate) jit: Option<JitOptions>,
    pub(crate) perturbation: Option<Perturbation>,
}

impl Preparer {
    /// A computation of `outputs` given `placeholders` over `shared` (its graph fully bound).
    pub(crate) fn computation(
        &self,
        shared: Arc<Shared>,
        outputs: &[NodeId],
        placeholders: &[NodeId],
    ) -> Result<Bound> {
        let executable = self.backend.prepare(
            &shared.graph,
            outputs,
            placeholders,
            self.jit.as_ref(),
            self.perturbation,
        )?;
        let plan = Plan::new(&shared.graph, outputs, placeholders)?;
        let access = StateAccess::of(&shared.graph, &plan);
        Bound::new(shared, executable, access)
    }
}
