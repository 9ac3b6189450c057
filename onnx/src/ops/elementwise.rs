//! Elementwise ops: unary functions, arithmetic and comparisons with NumPy broadcasting,
//! variadic sums and extremes, `Where`, `Clip`, the activations, `Cast`.
//!
//! Functions weft has no op for are composed from ones it has: `Erf` from `exp` (Numerical
//! Recipes' erfc, fractional error below 1.2e-7), `Gelu`, `LeakyRelu`, `Elu`, `Softplus`,
//! `HardSigmoid`.

use crate::broadcast::broadcast;
use crate::context::Cx;
use crate::error::ImportError;
use crate::proto;
use crate::value::Value;
use weft_ir::{BinaryOp, CompareOp, DType, NodeId, UnaryOp};

/// A unary weft op on `v`.
pub fn unary(cx: &mut Cx, op: UnaryOp, v: &Value) -> Result<Value, ImportError> {
    let r = cx.g.unary(op, v.node);
    let node = cx.ok(r)?;
    let mut out = cx.value(node, v.axes.clone());
    out.known = crate::ops::fold::unary(op, v);
    Ok(out)
}

/// The two operands of an arithmetic op or comparison. Before opset 7, `broadcast = 1` with
/// an `axis` aligns B's dims from A's dim `axis` on (not from the right): B gets trailing
/// units so NumPy's rule gives the same pairing.
pub fn legacy_operands(cx: &mut Cx) -> Result<(Value, Value), ImportError> {
    let (a, mut b) = (cx.input(0)?, cx.input(1)?);
    let attrs = cx.attrs();
    if cx.opset() < 7 && attrs.int("broadcast", 0)? == 1 && attrs.has("axis") {
        let p = cx.position(attrs.int("axis", 0)?, a.rank().max(1))?;
        let trailing = a.rank().checked_sub(p + b.rank()).ok_or_else(|| {
            cx.shape_err(format!(
                "B of rank {} does not fit A of rank {} from axis {p}",
                b.rank(),
                a.rank()
            ))
        })?;
        for _ in 0..trailing {
            let end = b.rank();
            b = cx.insert_unit(&b, end)?;
        }
    }
    Ok((a, b))
}

/// A binary weft op, operands broadcast as NumPy does. `Pow`'s exponent may have another
/// dtype than its base: it is converted (the result has the base's).
pub fn binary(cx: &mut Cx, op: BinaryOp, a: &Value, b: &Value) -> Result<Value, ImportError> {
    let converted;
    let b = if op == BinaryOp::Power && b.dtype != a.dtype {
        let r = cx.g.convert(b.node, a.dtype);
        let node = cx.ok(r)?;
        converted = cx.value(node, b.axes.clone());
        &converted
    } else {
        b
    };
    let (nodes, axes) = broadcast(cx, &[a, b])?;
    let r = cx.g.binary(op, nodes[0], nodes[1]);
    let node = cx.ok(r)?;
    let mut v = cx.value(node, axes);
    v.known = crate::ops::fold::binary(op, a, b);
    Ok(v)
}

/// A comparison, operands broadcast.
pub fn compare(cx: &mut Cx, op: CompareOp, a: &Value, b: &Value) -> Result<Value, ImportError> {
    let (nodes, axes) = broadcast(cx, &[a, b])?;
    let r = cx.g.compare(op, nodes[0], nodes[1]);
    let node = cx.ok(r)?;
    Ok(cx.value(node, axes))
}

/// `op` of `v` with a scalar `c` (`c op v` when `c_first`).
fn with_scalar(
    cx: &mut Cx,
    op: BinaryOp,
    v: &Value,
    c: f64,
    c_first: bool,
) -> Result<Value, ImportError> {
    let s = cx.scalar(c, v.dtype)?;
    let (x, y) = if c_first { (s, v.node) } else { (v.node, s) };
    let r = cx.g.binary(op, x, y);
    let node = cx.ok(r)?;
    Ok(cx.value(node, v.axes.clone()))
}

fn select(cx: &mut Cx, cond: &Value, a: &Value, b: &Value) -> Result<Value, ImportError> {
    let (nodes, axes) = broadcast(cx, &[cond, a, b])?;
    let r = cx.g.select(nodes[0], nodes[1], nodes[2]);
    let node = cx.ok(r)?;
    Ok(cx.value(node, axes))
}

fn float_input(cx: &Cx, i: usize) -> Result<Value, ImportError> {
    let v = cx.input(i)?;
    if !v.dtype.is_float() {
        return Err(cx.unsupported(format!(
            "input {i} is {}; weft computes this op on f32 and f64",
            v.dtype
        )));
    }
    Ok(v)
}

/// Ops that map to one weft unary op.
pub fn unary_op(op_type: &str) -> Option<UnaryOp> {
    Some(match op_type {
        "Neg" => UnaryOp::Negative,
        "Abs" => UnaryOp::Abs,
        "Exp" => UnaryOp::Exp,
        "Log" => UnaryOp::Log,
        "Sqrt" => UnaryOp::Sqrt,
        "Reciprocal" => UnaryOp::Reciprocal,
        "Sign" => UnaryOp::Sign,
        "Tanh" => UnaryOp::Tanh,
        "Sigmoid" => UnaryOp::Sigmoid,
        "Sin" => UnaryOp::Sin,
        "Cos" => UnaryOp::Cos,
        "Relu" => UnaryOp::Relu,
        _ => return None,
    })
}

/// Ops that map to one weft binary op.
pub fn binary_op(op_type: &str) -> Option<BinaryOp> {
    Some(match op_type {
        "Add" => BinaryOp::Add,
        "Sub" => BinaryOp::Subtract,
        "Mul" => BinaryOp::Multiply,
        "Div" => BinaryOp::Divide,
        "Pow" => BinaryOp::Power,
        _ => return None,
    })
}

/// Ops that map to one weft comparison.
pub fn compare_op(op_type: &str) -> Option<CompareOp> {
    Some(match op_type {
        "Equal" => CompareOp::Equal,
        "Less" => CompareOp::Less,
        "LessOrEqual" => CompareOp::LessEqual,
        "Greater" => CompareOp::Greater,
        "GreaterOrEqual" => CompareOp::GreaterEqual,
        _ => return None,
    })
}

/// `Sum`, `Max`, `Min`, `Mean`: every input broadcast with the others.
pub fn variadic(cx: &mut Cx, op_type: &str) -> Result<Value, ImportError> {
    let inputs: Vec<Value> = (0..cx.inputs.len())
        .map(|i| cx.input(i))
        .collect::<Result<_, _>>()?;
    if inputs.is_empty() {
        return Err(cx.malformed("the op needs at least one input".into()));
    }
    let refs: Vec<&Value> = inputs.iter().collect();
    let (nodes, axes) = broadcast(cx, &refs)?;
    let op = match op_type {
        "Max" => BinaryOp::Maximum,
        "Min" => BinaryOp::Minimum,
        _ => BinaryOp::Add,
    };
    let mut acc = nodes[0];
    for n in &nodes[1..] {
        let r = cx.g.binary(op, acc, *n);
        acc = cx.ok(r)?;
    }
    if op_type == "Mean" {
        let count = cx.scalar(nodes.len() as f64, inputs[0].dtype)?;
        let r = cx.g.binary(BinaryOp::Divide, acc, count);
        acc = cx.ok(r)?;
    }
    if nodes.len() == 1 {
        // One input: the op is its (broadcast-free) copy.
        return Ok(inputs[0].clone());
    }
    let mut v = cx.value(acc, axes);
    if op_type != "Mean" {
        // Known operands (shape arithmetic: a Max of lengths) fold, pair by pair.
        let mut known = Some(inputs[0].clone());
        for x in &inputs[1..] {
            known = known.and_then(|k| {
                let data = crate::ops::fold::binary(op, &k, x)?;
                let axes = if k.rank() >= x.rank() {
                    k.axes
                } else {
                    x.axes.clone()
                };
                Some(Value {
                    axes,
                    known: Some(data),
                    ..k
                })
            });
        }
        v.known = known.and_then(|k| k.known);
    }
    Ok(v)
}

/// `Where(cond, x, y)`.
pub fn where_(cx: &mut Cx) -> Result<Value, ImportError> {
    let (c, a, b) = (cx.input(0)?, cx.input(1)?, cx.input(2)?);
    select(cx, &c, &a, &b)
}

/// `Not`: `x = false`.
pub fn not(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let f = cx.scalar(0.0, DType::Bool)?;
    let r = cx.g.compare(CompareOp::Equal, x.node, f);
    let node = cx.ok(r)?;
    Ok(cx.value(node, x.axes))
}

/// `Clip`: bounds from attributes (opset < 11) or optional inputs 1 and 2.
pub fn clip(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let (lo, hi) = if cx.opset() < 11 {
        let a = cx.attrs();
        let lo = a.has("min").then(|| a.float("min", 0.0)).transpose()?;
        let hi = a.has("max").then(|| a.float("max", 0.0)).transpose()?;
        (scalar_bound(cx, &x, lo)?, scalar_bound(cx, &x, hi)?)
    } else {
        (cx.opt_input(1), cx.opt_input(2))
    };
    let mut out = x;
    if let Some(b) = lo {
        out = binary(cx, BinaryOp::Maximum, &out, &b)?;
    }
    if let Some(b) = hi {
        out = binary(cx, BinaryOp::Minimum, &out, &b)?;
    }
    Ok(out)
}

fn scalar_bound(cx: &mut Cx, x: &Value, b: Option<f32>) -> Result<Option<Value>, ImportError> {
    let Some(b) = b else { return Ok(None) };
    let node = cx.scalar(b as f64, x.dtype)?;
    Ok(Some(cx.value(node, vec![])))
}

/// `LeakyRelu(alpha)`: `x` where `x ≥ 0`, else `alpha·x`.
pub fn leaky_relu(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = float_input(cx, 0)?;
    let alpha = cx.attrs().float("alpha", 0.01)? as f64;
    let scaled = with_scalar(cx, BinaryOp::Multiply, &x, alpha, false)?;
    let zero = cx.scalar(0.0, x.dtype)?;
    let r = cx.g.compare(CompareOp::GreaterEqual, x.node, zero);
    let c = cx.ok(r)?;
    let r = cx.g.select(c, x.node, scaled.node);
    let node = cx.ok(r)?;
    Ok(cx.value(node, x.axes))
}

/// `Elu(alpha)`: `x` where `x ≥ 0`, else `alpha·(eˣ − 1)`.
pub fn elu(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = float_input(cx, 0)?;
    let alpha = cx.attrs().float("alpha", 1.0)? as f64;
    let e = unary(cx, UnaryOp::Exp, &x)?;
    let em1 = with_scalar(cx, BinaryOp::Subtract, &e, 1.0, false)?;
    let neg = with_scalar(cx, BinaryOp::Multiply, &em1, alpha, false)?;
    let zero = cx.scalar(0.0, x.dtype)?;
    let r = cx.g.compare(CompareOp::GreaterEqual, x.node, zero);
    let c = cx.ok(r)?;
    let r = cx.g.select(c, x.node, neg.node);
    let node = cx.ok(r)?;
    Ok(cx.value(node, x.axes))
}

/// `Softplus`: `ln(1 + eˣ)`, as `max(x, 0) + ln(1 + e^−|x|)` so large `x` does not overflow.
pub fn softplus(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = float_input(cx, 0)?;
    let relu = unary(cx, UnaryOp::Relu, &x)?;
    let abs = unary(cx, UnaryOp::Abs, &x)?;
    let neg = unary(cx, UnaryOp::Negative, &abs)?;
    let e = unary(cx, UnaryOp::Exp, &neg)?;
    let one_plus = with_scalar(cx, BinaryOp::Add, &e, 1.0, false)?;
    let log = unary(cx, UnaryOp::Log, &one_plus)?;
    binary(cx, BinaryOp::Add, &relu, &log)
}

/// `HardSigmoid(alpha, beta)`: `max(0, min(1, alpha·x + beta))`.
pub fn hard_sigmoid(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = float_input(cx, 0)?;
    let a = cx.attrs();
    let (alpha, beta) = (a.float("alpha", 0.2)? as f64, a.float("beta", 0.5)? as f64);
    let ax = with_scalar(cx, BinaryOp::Multiply, &x, alpha, false)?;
    let axb = with_scalar(cx, BinaryOp::Add, &ax, beta, false)?;
    let lo = with_scalar(cx, BinaryOp::Minimum, &axb, 1.0, false)?;
    with_scalar(cx, BinaryOp::Maximum, &lo, 0.0, false)
}

/// erf(x) = sign(x)·(1 − erfc(|x|)), erfc by Numerical Recipes' Chebyshev fit (fractional
/// error below 1.2e-7 everywhere).
pub fn erf_of(cx: &mut Cx, x: &Value) -> Result<Value, ImportError> {
    const C: [f64; 10] = [
        -1.26551223,
        1.00002368,
        0.37409196,
        0.09678418,
        -0.18628806,
        0.27886807,
        -1.13520398,
        1.48851587,
        -0.82215223,
        0.17087277,
    ];
    let z = unary(cx, UnaryOp::Abs, x)?;
    let half = with_scalar(cx, BinaryOp::Multiply, &z, 0.5, false)?;
    let denom = with_scalar(cx, BinaryOp::Add, &half, 1.0, false)?;
    let t = unary(cx, UnaryOp::Reciprocal, &denom)?;
    // Horner: C0 + t(C1 + t(C2 + ...)).
    let last = cx.scalar(C[9], x.dtype)?;
    let mut poly = cx.value(last, vec![]);
    for c in C[..9].iter().rev() {
        let p = binary(cx, BinaryOp::Multiply, &poly, &t)?;
        poly = with_scalar(cx, BinaryOp::Add, &p, *c, false)?;
    }
    let z2 = unary(cx, UnaryOp::Square, &z)?;
    let expo = binary(cx, BinaryOp::Subtract, &poly, &z2)?;
    let e = unary(cx, UnaryOp::Exp, &expo)?;
    let erfc = binary(cx, BinaryOp::Multiply, &t, &e)?;
    let erf_abs = with_scalar(cx, BinaryOp::Subtract, &erfc, 1.0, true)?;
    let sign = unary(cx, UnaryOp::Sign, x)?;
    binary(cx, BinaryOp::Multiply, &sign, &erf_abs)
}

/// `Erf`.
pub fn erf(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = float_input(cx, 0)?;
    erf_of(cx, &x)
}

/// `Gelu(approximate)`: `x·Φ(x)`, Φ by erf (`none`) or by tanh (`tanh`).
pub fn gelu(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = float_input(cx, 0)?;
    let approximate = cx.attrs().string("approximate", "none")?;
    let inner = match approximate.as_str() {
        "none" => {
            let scaled = with_scalar(
                cx,
                BinaryOp::Multiply,
                &x,
                std::f64::consts::FRAC_1_SQRT_2,
                false,
            )?;
            erf_of(cx, &scaled)?
        }
        "tanh" => {
            let cube = with_scalar(cx, BinaryOp::Power, &x, 3.0, false)?;
            let c = with_scalar(cx, BinaryOp::Multiply, &cube, 0.044715, false)?;
            let s = binary(cx, BinaryOp::Add, &x, &c)?;
            let k = (2.0 / std::f64::consts::PI).sqrt();
            let arg = with_scalar(cx, BinaryOp::Multiply, &s, k, false)?;
            unary(cx, UnaryOp::Tanh, &arg)?
        }
        other => {
            return Err(cx.malformed(format!(
                "approximate `{other}` is neither `none` nor `tanh`"
            )))
        }
    };
    let one_plus = with_scalar(cx, BinaryOp::Add, &inner, 1.0, false)?;
    let half_x = with_scalar(cx, BinaryOp::Multiply, &x, 0.5, false)?;
    binary(cx, BinaryOp::Multiply, &half_x, &one_plus)
}

/// `Cast(to)`.
pub fn cast(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    // Before opset 6, `to` is the type's name.
    let to = match cx.attrs().int("to", 0) {
        Ok(code) => code as i32,
        Err(_) => proto::code_named(&cx.attrs().string("to", "")?),
    };
    let dtype = proto::dtype_of(to).ok_or_else(|| {
        cx.unsupported(format!(
            "cast to {}: weft has f32, f64, i32, i64 and bool",
            proto::type_name(to)
        ))
    })?;
    if dtype == x.dtype {
        return Ok(x);
    }
    let r = cx.g.convert(x.node, dtype);
    let node: NodeId = cx.ok(r)?;
    let mut v = cx.value(node, x.axes.clone());
    v.known = crate::ops::fold::cast(&x, dtype);
    Ok(v)
}
