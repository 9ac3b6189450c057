//! Optimizers as graph updates: each takes `(variable, gradient)` pairs and hyper-parameters
//! and builds the `assign`s of one training step — new values of the variables and of the
//! optimizer's state (persistent tensors, zero at first). A computation whose outputs include
//! those assigns is one training step: each call updates every variable and its state in place.
//!
//! Assumes (the `assign` semantics of docs/interpreter.md and docs/runtime.md, checked in
//! tests/nn.rs on every backend): within one call every read of a variable or persistent
//! tensor sees its value from before the call; the call's assigns are committed together after
//! it succeeds (none if it fails), so the next call sees them all; an `assign` node evaluates
//! to the new value; an assign runs only when the computation's outputs depend on it. So
//! each update is written as a function of the old values, and wherever a new state value is
//! needed within the step (the variable's update uses the new velocity or moments) it is read
//! from the state's `assign` node, not from the state tensor (which would give the old value).
//! That also makes every variable's assign depend on its state's assigns: a computation asking
//! only for the variables' assigns still updates the state.
//!
//! Guarantees: the gradient of each pair has its variable's axes (any order) and dtype (f32 or
//! f64); each variable is a trainable `variable` listed once (two assigns of one target in one
//! call would drop one); hyper-parameters are finite and in range. Otherwise a [`GraphError`]
//! names the optimizer and the variable, gradient or hyper-parameter at fault. Constants are
//! the hyper-parameters rounded once to the variable's dtype. State tensors are named after
//! their variable (`NAME_velocity`; `NAME_adam_m`, `NAME_adam_v`, `NAME_adam_step`), so
//! `Transformer::save` writes them beside the variables; a name already taken is
//! `GraphError::NameTaken`.

use crate::{float_scalar, label};
use weft_ir::dtype::DType;
use weft_ir::graph::{Graph, GraphError, NodeId, Op, TensorKind};
use weft_ir::host::Scalar;

/// What an optimizer built: the assigns of one step and the state tensors it keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Updates {
    /// Every assign of the step, per variable its state's assigns first, then the variable's.
    /// Ask a computation for all of them (or at least the variables' ones, which depend on
    /// the rest) to run the step.
    pub assigns: Vec<NodeId>,
    /// The persistent tensors holding optimizer state (velocity; moments and step counters),
    /// in the order made.
    pub state: Vec<NodeId>,
}

/// One checked `(variable, gradient)` pair.
struct Param {
    var: NodeId,
    grad: NodeId,
    dtype: DType,
    name: String,
}

fn check_params(
    g: &Graph,
    op: &str,
    params: &[(NodeId, NodeId)],
) -> Result<Vec<Param>, GraphError> {
    let mut out: Vec<Param> = Vec::with_capacity(params.len());
    for &(var, grad) in params {
        let at = label(g, op, &[var, grad]);
        let v = g.check_node(var)?;
        let gr = g.check_node(grad)?;
        if !matches!(
            v.op,
            Op::Tensor {
                kind: TensorKind::Variable,
                ..
            }
        ) {
            return Err(GraphError::Argument {
                op: at,
                message: format!(
                    "`{}` is a {}, not a variable: optimizers update trainable variables",
                    g.node_label(var),
                    v.op.name()
                ),
            });
        }
        if !v.dtype.is_float() {
            return Err(GraphError::UnsupportedDType {
                op: at,
                dtype: v.dtype,
                expected: "f32 or f64 for a variable an optimizer updates",
            });
        }
        if gr.dtype != v.dtype {
            return Err(GraphError::DTypeMismatch {
                op: at,
                left: v.dtype,
                right: gr.dtype,
            });
        }
        if !gr.axes.is_equal_set(&v.axes) {
            return Err(GraphError::Axes {
                op: at,
                message: format!(
                    "the gradient `{}` has axes {} but its variable `{}` has {}",
                    g.node_label(grad),
                    g.axes_name(&gr.axes),
                    g.node_label(var),
                    g.axes_name(&v.axes)
                ),
            });
        }
        if out.iter().any(|p| p.var == var) {
            return Err(GraphError::Argument {
                op: at,
                message: format!(
                    "the variable `{}` is listed twice: one step assigns it once",
                    g.node_label(var)
                ),
            });
        }
        let name = v
            .name
            .clone()
            .unwrap_or_else(|| format!("var{}", var.as_u32()));
        out.push(Param {
            var,
            grad,
            dtype: v.dtype,
            name,
        });
    }
    Ok(out)
}

/// An error unless `ok(value)`, naming the hyper-parameter and what it must be.
fn check_hyper(
    op: &str,
    name: &str,
    value: f64,
    ok: impl Fn(f64) -> bool,
    must: &str,
) -> Result<(), GraphError> {
    if value.is_finite() && ok(value) {
        Ok(())
    } else {
        Err(GraphError::Argument {
            op: op.to_string(),
            message: format!("{name} = {value}: it must be {must}"),
        })
    }
}

/// `w − lr · d`, assigned to `w`.
fn descend(g: &mut Graph, p: &Param, lr: f64, direction: NodeId) -> Result<NodeId, GraphError> {
    let rate = float_scalar(g, lr, p.dtype)?;
    let step = g.multiply(rate, direction)?;
    let new = g.subtract(p.var, step)?;
    g.assign(p.var, new)
}

/// Plain stochastic gradient descent: `w ← w − lr · g`. No state. `lr` finite and positive.
///
/// ```
/// use weft::ir::{DType, Graph, Scalar, TensorInit};
/// use weft::nn;
/// let mut g = Graph::new();
/// let n = g.axis("N", 3)?;
/// let w = g.variable("w", &[n], DType::F32, TensorInit::Fill(Scalar::Float(1.0)))?;
/// let grad = g.placeholder("grad", &[n], DType::F32)?; // any node: by hand, or Graph::grad
/// let step = nn::sgd(&mut g, &[(w, grad)], 0.1)?;
/// assert_eq!(step.assigns.len(), 1);
/// assert!(step.state.is_empty());
/// assert!(nn::sgd(&mut g, &[(w, grad)], f64::NAN).is_err());
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn sgd(g: &mut Graph, params: &[(NodeId, NodeId)], lr: f64) -> Result<Updates, GraphError> {
    check_hyper("sgd", "lr", lr, |x| x > 0.0, "finite and positive")?;
    let params = check_params(g, "sgd", params)?;
    let mut assigns = Vec::with_capacity(params.len());
    for p in &params {
        assigns.push(descend(g, p, lr, p.grad)?);
    }
    Ok(Updates {
        assigns,
        state: Vec::new(),
    })
}

/// SGD with momentum (the heavy-ball form PyTorch's `SGD(momentum=μ)` uses, without dampening):
/// `v ← μ · v + g`, `w ← w − lr · v` (the new `v`). The velocity `v` is the persistent tensor
/// `NAME_velocity` over the variable's axes, zero at first, so the first step is plain SGD.
/// `lr` finite and positive; `μ` in `[0, 1)`.
///
/// ```
/// use weft::ir::{DType, Graph, Scalar, TensorInit};
/// use weft::nn;
/// let mut g = Graph::new();
/// let n = g.axis("N", 3)?;
/// let w = g.variable("w", &[n], DType::F64, TensorInit::Fill(Scalar::Float(1.0)))?;
/// let grad = g.placeholder("grad", &[n], DType::F64)?;
/// let step = nn::momentum(&mut g, &[(w, grad)], 0.1, 0.9)?;
/// assert_eq!(step.state, vec![g.find("w_velocity").unwrap()]);
/// assert_eq!(step.assigns.len(), 2); // the velocity's, then the variable's
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn momentum(
    g: &mut Graph,
    params: &[(NodeId, NodeId)],
    lr: f64,
    mu: f64,
) -> Result<Updates, GraphError> {
    check_hyper("momentum", "lr", lr, |x| x > 0.0, "finite and positive")?;
    check_hyper(
        "momentum",
        "mu",
        mu,
        |x| (0.0..1.0).contains(&x),
        "in [0, 1)",
    )?;
    let params = check_params(g, "momentum", params)?;
    let mut out = Updates::default();
    for p in &params {
        let axes: Vec<_> = g.node(p.var).axes.iter().copied().collect();
        let v = g.persistent_tensor(&format!("{}_velocity", p.name), &axes, p.dtype, None)?;
        let m = float_scalar(g, mu, p.dtype)?;
        let decayed = g.multiply(m, v)?;
        let v_new = g.add(decayed, p.grad)?;
        let v_assign = g.assign(v, v_new)?;
        let w_assign = descend(g, p, lr, v_assign)?;
        out.state.push(v);
        out.assigns.extend([v_assign, w_assign]);
    }
    Ok(out)
}

/// Adam's hyper-parameters (Kingma and Ba, 2015); the defaults are the paper's and PyTorch's.
///
/// ```
/// use weft::nn::Adam;
/// let a = Adam { lr: 0.01, ..Adam::default() };
/// assert_eq!((a.beta1, a.beta2, a.eps), (0.9, 0.999, 1e-8));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Adam {
    /// The step size, finite and positive (default 0.001).
    pub lr: f64,
    /// The decay of the first-moment (mean) estimate, in `[0, 1)` (default 0.9).
    pub beta1: f64,
    /// The decay of the second-moment (uncentred variance) estimate, in `[0, 1)` (default
    /// 0.999).
    pub beta2: f64,
    /// Added to `√v̂` before dividing, finite and positive (default 1e-8; in f32 it rounds to
    /// the nearest f32).
    pub eps: f64,
}

impl Default for Adam {
    fn default() -> Adam {
        Adam {
            lr: 1e-3,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
        }
    }
}

/// Adam: per variable, with `t` counting steps from 1,
///
/// ```text
/// m ← β1·m + (1 − β1)·g        v ← β2·v + (1 − β2)·g²
/// m̂ = m / (1 − β1ᵗ)             v̂ = v / (1 − β2ᵗ)
/// w ← w − lr · m̂ / (√v̂ + ε)
/// ```
///
/// (the new `m`, `v` and `t`; PyTorch's `Adam` without weight decay or amsgrad). State: the
/// persistent tensors `NAME_adam_m` and `NAME_adam_v` over the variable's axes, zero at first,
/// and the step counter `NAME_adam_step`, an i64 scalar from 0, incremented by each step and
/// converted to the variable's dtype for the bias corrections `βᵗ` (`power`).
///
/// ```
/// use weft::ir::{DType, Graph, Scalar, TensorInit};
/// use weft::nn;
/// let mut g = Graph::new();
/// let n = g.axis("N", 3)?;
/// let w = g.variable("w", &[n], DType::F32, TensorInit::Fill(Scalar::Float(1.0)))?;
/// let grad = g.placeholder("grad", &[n], DType::F32)?;
/// let step = nn::adam(&mut g, &[(w, grad)], &nn::Adam::default())?;
/// assert_eq!(step.assigns.len(), 4); // step counter, m, v, then w
/// assert_eq!(g.node(g.find("w_adam_step").unwrap()).dtype, DType::I64);
/// let bad = nn::Adam { beta1: 1.0, ..nn::Adam::default() };
/// assert!(nn::adam(&mut g, &[(w, grad)], &bad).is_err());
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn adam(
    g: &mut Graph,
    params: &[(NodeId, NodeId)],
    hyper: &Adam,
) -> Result<Updates, GraphError> {
    let unit = |x: f64| (0.0..1.0).contains(&x);
    check_hyper("adam", "lr", hyper.lr, |x| x > 0.0, "finite and positive")?;
    check_hyper("adam", "beta1", hyper.beta1, unit, "in [0, 1)")?;
    check_hyper("adam", "beta2", hyper.beta2, unit, "in [0, 1)")?;
    check_hyper("adam", "eps", hyper.eps, |x| x > 0.0, "finite and positive")?;
    let params = check_params(g, "adam", params)?;
    let mut out = Updates::default();
    for p in &params {
        let axes: Vec<_> = g.node(p.var).axes.iter().copied().collect();
        let dt = p.dtype;
        let m = g.persistent_tensor(&format!("{}_adam_m", p.name), &axes, dt, None)?;
        let v = g.persistent_tensor(&format!("{}_adam_v", p.name), &axes, dt, None)?;
        let t = g.persistent_tensor(&format!("{}_adam_step", p.name), &[], DType::I64, None)?;

        let one_step = g.scalar(Scalar::Int(1), DType::I64)?;
        let t_next = g.add(t, one_step)?;
        let t_assign = g.assign(t, t_next)?;
        let t_float = g.convert(t_assign, dt)?;

        let (b1, b2) = (
            float_scalar(g, hyper.beta1, dt)?,
            float_scalar(g, hyper.beta2, dt)?,
        );
        let c1 = float_scalar(g, 1.0 - hyper.beta1, dt)?;
        let c2 = float_scalar(g, 1.0 - hyper.beta2, dt)?;
        let m_old = g.multiply(b1, m)?;
        let m_grad = g.multiply(c1, p.grad)?;
        let m_new = g.add(m_old, m_grad)?;
        let m_assign = g.assign(m, m_new)?;
        let v_old = g.multiply(b2, v)?;
        let g2 = g.square(p.grad)?;
        let v_grad = g.multiply(c2, g2)?;
        let v_new = g.add(v_old, v_grad)?;
        let v_assign = g.assign(v, v_new)?;

        let one = float_scalar(g, 1.0, dt)?;
        let b1t = g.power(b1, t_float)?;
        let bc1 = g.subtract(one, b1t)?;
        let b2t = g.power(b2, t_float)?;
        let bc2 = g.subtract(one, b2t)?;
        let m_hat = g.divide(m_assign, bc1)?;
        let v_hat = g.divide(v_assign, bc2)?;
        let root = g.sqrt(v_hat)?;
        let eps = float_scalar(g, hyper.eps, dt)?;
        let denom = g.add(root, eps)?;
        let direction = g.divide(m_hat, denom)?;
        let w_assign = descend(g, p, hyper.lr, direction)?;

        out.state.extend([m, v, t]);
        out.assigns.extend([t_assign, m_assign, v_assign, w_assign]);
    }
    Ok(out)
}
