//! Elementwise semantics: what one element of a unary, binary, comparison, select or convert
//! result is. The conventions are listed in the [module docs](super) and docs/interpreter.md;
//! in short: floats are computed in f64 and rounded once to the result dtype, integers in i64
//! with wrapping arithmetic and then wrapped to the result width.

//! Elementwise evaluation: applies the scalar semantics of `weft_ir::scalar` (the one
//! definition of what one element of a unary, binary, comparison or convert result is; the
//! rules are listed in docs/interpreter.md) to whole arrays, reading operands through index
//! maps. `select` is defined here: it only picks elements.

use super::index::at;
use weft_ir::scalar::{self, Arith, Convert};
use weft_ir::{ArrayData, BinaryOp, CompareOp, DType, UnaryOp};

fn unary_slice<T: Arith>(op: UnaryOp, v: &[T]) -> Result<ArrayData, String> {
    let r: Option<Vec<T>> = v.iter().map(|&a| T::unary(op, a)).collect();
    r.map(T::wrap)
        .ok_or_else(|| format!("{} on {}", op.name(), T::DTYPE))
}

/// Applies a unary op to every element.
pub(crate) fn unary(op: UnaryOp, x: &ArrayData) -> Result<ArrayData, String> {
    match x {
        ArrayData::F32(v) => unary_slice(op, v),
        ArrayData::F64(v) => unary_slice(op, v),
        ArrayData::I32(v) => unary_slice(op, v),
        ArrayData::I64(v) => unary_slice(op, v),
        ArrayData::Bool(v) => unary_slice(op, v),
    }
}

/// `f(x[ix[k]], y[iy[k]])` for every k.
fn zip_map<T: Copy, R>(
    x: &[T],
    ix: &[usize],
    y: &[T],
    iy: &[usize],
    f: impl Fn(T, T) -> R,
) -> Result<Vec<R>, String> {
    ix.iter()
        .zip(iy)
        .map(|(&i, &j)| Ok(f(at(x, i)?, at(y, j)?)))
        .collect()
}

fn dtype_mismatch(op: &str, x: &ArrayData, y: &ArrayData) -> String {
    format!("{op} on {} and {}", x.dtype(), y.dtype())
}

fn binary_slices<T: Arith>(
    op: BinaryOp,
    x: &[T],
    ix: &[usize],
    y: &[T],
    iy: &[usize],
) -> Result<ArrayData, String> {
    let r: Vec<Option<T>> = zip_map(x, ix, y, iy, |p, q| T::binary(op, p, q))?;
    let r: Option<Vec<T>> = r.into_iter().collect();
    r.map(T::wrap)
        .ok_or_else(|| format!("{} on {}", op.name(), T::DTYPE))
}

/// A binary op on the elements `x[ix[k]]`, `y[iy[k]]`.
pub(crate) fn binary(
    op: BinaryOp,
    x: &ArrayData,
    ix: &[usize],
    y: &ArrayData,
    iy: &[usize],
) -> Result<ArrayData, String> {
    use ArrayData as D;
    match (x, y) {
        (D::F32(a), D::F32(b)) => binary_slices(op, a, ix, b, iy),
        (D::F64(a), D::F64(b)) => binary_slices(op, a, ix, b, iy),
        (D::I32(a), D::I32(b)) => binary_slices(op, a, ix, b, iy),
        (D::I64(a), D::I64(b)) => binary_slices(op, a, ix, b, iy),
        (D::Bool(a), D::Bool(b)) => binary_slices(op, a, ix, b, iy),
        _ => Err(dtype_mismatch(op.name(), x, y)),
    }
}

/// A comparison of the elements `x[ix[k]]`, `y[iy[k]]`.
pub(crate) fn compare_arrays(
    op: CompareOp,
    x: &ArrayData,
    ix: &[usize],
    y: &ArrayData,
    iy: &[usize],
) -> Result<ArrayData, String> {
    use ArrayData as D;
    Ok(D::Bool(match (x, y) {
        (D::F32(a), D::F32(b)) => zip_map(a, ix, b, iy, |p, q| scalar::compare(op, p, q))?,
        (D::F64(a), D::F64(b)) => zip_map(a, ix, b, iy, |p, q| scalar::compare(op, p, q))?,
        (D::I32(a), D::I32(b)) => zip_map(a, ix, b, iy, |p, q| scalar::compare(op, p, q))?,
        (D::I64(a), D::I64(b)) => zip_map(a, ix, b, iy, |p, q| scalar::compare(op, p, q))?,
        (D::Bool(a), D::Bool(b)) => zip_map(a, ix, b, iy, |p, q| scalar::compare(op, p, q))?,
        _ => return Err(dtype_mismatch(op.name(), x, y)),
    }))
}

/// `select`: `x[ix[k]]` where `cond[ic[k]]`, else `y[iy[k]]`.
pub(crate) fn select(
    cond: &ArrayData,
    ic: &[usize],
    x: &ArrayData,
    ix: &[usize],
    y: &ArrayData,
    iy: &[usize],
) -> Result<ArrayData, String> {
    use ArrayData as D;
    let c = match cond {
        D::Bool(c) => c,
        other => return Err(format!("select condition of dtype {}", other.dtype())),
    };
    fn pick<T: Copy>(
        c: &[bool],
        ic: &[usize],
        a: &[T],
        ix: &[usize],
        b: &[T],
        iy: &[usize],
    ) -> Result<Vec<T>, String> {
        ic.iter()
            .zip(ix)
            .zip(iy)
            .map(|((&k, &i), &j)| if at(c, k)? { at(a, i) } else { at(b, j) })
            .collect()
    }
    Ok(match (x, y) {
        (D::F32(a), D::F32(b)) => D::F32(pick(c, ic, a, ix, b, iy)?),
        (D::F64(a), D::F64(b)) => D::F64(pick(c, ic, a, ix, b, iy)?),
        (D::I32(a), D::I32(b)) => D::I32(pick(c, ic, a, ix, b, iy)?),
        (D::I64(a), D::I64(b)) => D::I64(pick(c, ic, a, ix, b, iy)?),
        (D::Bool(a), D::Bool(b)) => D::Bool(pick(c, ic, a, ix, b, iy)?),
        _ => return Err(dtype_mismatch("select", x, y)),
    })
}

fn convert_slice<T: Convert>(v: &[T], to: DType) -> ArrayData {
    match to {
        DType::F32 => ArrayData::F32(v.iter().map(|x| x.to_f32()).collect()),
        DType::F64 => ArrayData::F64(v.iter().map(|x| x.to_f64()).collect()),
        DType::I32 => ArrayData::I32(v.iter().map(|x| x.to_i32()).collect()),
        DType::I64 => ArrayData::I64(v.iter().map(|x| x.to_i64()).collect()),
        DType::Bool => ArrayData::Bool(v.iter().map(|x| x.to_bool()).collect()),
    }
}

/// Every element converted to `to`.
pub(crate) fn convert(x: &ArrayData, to: DType) -> ArrayData {
    match x {
        ArrayData::F32(v) => convert_slice(v, to),
        ArrayData::F64(v) => convert_slice(v, to),
        ArrayData::I32(v) => convert_slice(v, to),
        ArrayData::I64(v) => convert_slice(v, to),
        ArrayData::Bool(v) => convert_slice(v, to),
    }
}
