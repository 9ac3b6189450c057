//! Shape arithmetic done at import: the elements of small tensors computed from known ones,
//! so a `Shape → Gather → Concat → Reshape` chain gives `Reshape` a known shape.
//!
//! Guarantees: a fold returns `None` (the value is left to run time) rather than guess: only
//! equal shapes or a one-element operand, only integer or float data of one dtype.

use crate::value::{Value, KNOWN_LIMIT};
use std::rc::Rc;
use weft_ir::{ArrayData, BinaryOp, DType, UnaryOp};

/// `a op b` when both are known.
pub fn binary(op: BinaryOp, a: &Value, b: &Value) -> Option<Rc<ArrayData>> {
    let (x, y) = (a.known.as_deref()?, b.known.as_deref()?);
    if x.dtype() != y.dtype() {
        return None;
    }
    let n = x.len().max(y.len());
    if !(x.len() == y.len() || x.len() == 1 || y.len() == 1) || n > KNOWN_LIMIT {
        return None;
    }
    if (x.len() != y.len()) && a.rank().max(b.rank()) > 1 {
        return None;
    }
    let pick = |v: &[i64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    let pickf = |v: &[f64], i: usize| if v.len() == 1 { v[0] } else { v[i] };
    match x.dtype() {
        DType::I64 | DType::I32 => {
            let (xs, ys) = (a.known_ints()?, b.known_ints()?);
            let out: Option<Vec<i64>> = (0..n)
                .map(|i| int_op(op, pick(&xs, i), pick(&ys, i)))
                .collect();
            let out = out?;
            Some(Rc::new(if x.dtype() == DType::I64 {
                ArrayData::I64(out)
            } else {
                ArrayData::I32(out.into_iter().map(|v| v as i32).collect())
            }))
        }
        DType::F32 | DType::F64 => {
            let (xs, ys) = (a.known_floats()?, b.known_floats()?);
            let out: Vec<f64> = (0..n)
                .map(|i| float_op(op, pickf(&xs, i), pickf(&ys, i)))
                .collect();
            Some(Rc::new(if x.dtype() == DType::F64 {
                ArrayData::F64(out)
            } else {
                ArrayData::F32(out.into_iter().map(|v| v as f32).collect())
            }))
        }
        DType::Bool => None,
    }
}

fn int_op(op: BinaryOp, x: i64, y: i64) -> Option<i64> {
    match op {
        BinaryOp::Add => x.checked_add(y),
        BinaryOp::Subtract => x.checked_sub(y),
        BinaryOp::Multiply => x.checked_mul(y),
        // ONNX's integer Div truncates, as Rust's does.
        BinaryOp::Divide => x.checked_div(y),
        BinaryOp::Maximum => Some(x.max(y)),
        BinaryOp::Minimum => Some(x.min(y)),
        BinaryOp::Power => u32::try_from(y).ok().and_then(|e| x.checked_pow(e)),
    }
}

fn float_op(op: BinaryOp, x: f64, y: f64) -> f64 {
    match op {
        BinaryOp::Add => x + y,
        BinaryOp::Subtract => x - y,
        BinaryOp::Multiply => x * y,
        BinaryOp::Divide => x / y,
        BinaryOp::Maximum => x.max(y),
        BinaryOp::Minimum => x.min(y),
        BinaryOp::Power => x.powf(y),
    }
}

/// `op x` when `x` is known, for the ops shape arithmetic uses (negation, absolute value).
pub fn unary(op: UnaryOp, x: &Value) -> Option<Rc<ArrayData>> {
    let f = match op {
        UnaryOp::Negative => |v: i64| v.checked_neg(),
        UnaryOp::Abs => |v: i64| v.checked_abs(),
        _ => return None,
    };
    match x.known.as_deref()? {
        ArrayData::I64(v) => Some(Rc::new(ArrayData::I64(
            v.iter().map(|e| f(*e)).collect::<Option<_>>()?,
        ))),
        ArrayData::I32(v) => Some(Rc::new(ArrayData::I32(
            v.iter()
                .map(|e| i32::try_from(f(*e as i64)?).ok())
                .collect::<Option<_>>()?,
        ))),
        _ => None,
    }
}

/// `x` converted to `dtype`, when known.
pub fn cast(x: &Value, dtype: DType) -> Option<Rc<ArrayData>> {
    x.known.as_ref()?;
    Some(Rc::new(match dtype {
        DType::I64 => ArrayData::I64(x.known_ints()?),
        DType::I32 => ArrayData::I32(x.known_ints()?.into_iter().map(|v| v as i32).collect()),
        DType::F64 => ArrayData::F64(x.known_floats()?),
        DType::F32 => ArrayData::F32(x.known_floats()?.into_iter().map(|v| v as f32).collect()),
        DType::Bool => ArrayData::Bool(x.known_floats()?.into_iter().map(|v| v != 0.0).collect()),
    }))
}

/// Int64 data.
pub fn ints(v: Vec<i64>) -> Option<Rc<ArrayData>> {
    (v.len() <= KNOWN_LIMIT).then(|| Rc::new(ArrayData::I64(v)))
}

/// The elements of `data` (row-major over `shape`) taken along `axis` at `indices`.
pub fn take(
    data: &ArrayData,
    shape: &[usize],
    axis: usize,
    indices: &[usize],
) -> Option<ArrayData> {
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let len = shape[axis];
    let mut order = Vec::with_capacity(outer * indices.len() * inner);
    for o in 0..outer {
        for i in indices {
            for k in 0..inner {
                order.push((o * len + i) * inner + k);
            }
        }
    }
    gather(data, &order)
}

/// `data` at the flat positions `order`.
pub fn gather(data: &ArrayData, order: &[usize]) -> Option<ArrayData> {
    fn pick<T: Clone>(v: &[T], order: &[usize]) -> Option<Vec<T>> {
        order.iter().map(|i| v.get(*i).cloned()).collect()
    }
    Some(match data {
        ArrayData::F32(v) => ArrayData::F32(pick(v, order)?),
        ArrayData::F64(v) => ArrayData::F64(pick(v, order)?),
        ArrayData::I32(v) => ArrayData::I32(pick(v, order)?),
        ArrayData::I64(v) => ArrayData::I64(pick(v, order)?),
        ArrayData::Bool(v) => ArrayData::Bool(pick(v, order)?),
    })
}
