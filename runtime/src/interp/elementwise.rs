//! Elementwise semantics: what one element of a unary, binary, comparison, select or convert
//! result is. The conventions are listed in the [module docs](super) and docs/interpreter.md;
//! in short: floats are computed in f64 and rounded once to the result dtype, integers in i64
//! with wrapping arithmetic and then wrapped to the result width.

use super::index::at;
use weft_ir::{ArrayData, BinaryOp, CompareOp, DType, UnaryOp};

/// A unary op on a float, in f64.
pub(crate) fn unary_float(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Negative => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Square => x * x,
        UnaryOp::Reciprocal => 1.0 / x,
        // Zeros (of either sign) and NaN are their own sign; `f64::signum` would give ±1 for ±0.
        UnaryOp::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x
            }
        }
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        // NaN propagates; −0 gives +0.
        UnaryOp::Relu => {
            if x > 0.0 || x.is_nan() {
                x
            } else {
                0.0
            }
        }
    }
}

/// A unary op on an integer, wrapping. Float-only ops never reach here (the graph builder
/// refuses them); they are reported as `None`.
pub(crate) fn unary_int(op: UnaryOp, x: i64) -> Option<i64> {
    Some(match op {
        UnaryOp::Negative => x.wrapping_neg(),
        UnaryOp::Abs => x.wrapping_abs(),
        UnaryOp::Square => x.wrapping_mul(x),
        UnaryOp::Sign => x.signum(),
        UnaryOp::Relu => x.max(0),
        UnaryOp::Exp
        | UnaryOp::Log
        | UnaryOp::Sqrt
        | UnaryOp::Reciprocal
        | UnaryOp::Tanh
        | UnaryOp::Sigmoid
        | UnaryOp::Sin
        | UnaryOp::Cos => return None,
    })
}

/// NaN-propagating maximum (numpy's `maximum`); on a tie, including −0 against +0, the left
/// operand.
pub(crate) fn max_float(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if y > x {
        y
    } else {
        x
    }
}

/// NaN-propagating minimum (numpy's `minimum`); on a tie the left operand.
pub(crate) fn min_float(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if y < x {
        y
    } else {
        x
    }
}

/// A binary op on floats, in f64.
pub(crate) fn binary_float(op: BinaryOp, x: f64, y: f64) -> f64 {
    match op {
        BinaryOp::Add => x + y,
        BinaryOp::Subtract => x - y,
        BinaryOp::Multiply => x * y,
        BinaryOp::Divide => x / y,
        BinaryOp::Maximum => max_float(x, y),
        BinaryOp::Minimum => min_float(x, y),
        BinaryOp::Power => x.powf(y),
    }
}

/// A binary op on integers: wrapping; division truncates toward zero and by zero gives 0.
pub(crate) fn binary_int(op: BinaryOp, x: i64, y: i64) -> i64 {
    match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Subtract => x.wrapping_sub(y),
        BinaryOp::Multiply => x.wrapping_mul(y),
        BinaryOp::Divide => {
            if y == 0 {
                0
            } else {
                x.wrapping_div(y)
            }
        }
        BinaryOp::Maximum => x.max(y),
        BinaryOp::Minimum => x.min(y),
        BinaryOp::Power => power_int(x, y),
    }
}

/// `x^y` wrapping. A negative exponent gives 1 for base 1, ±1 for base −1 and 0 otherwise.
pub(crate) fn power_int(x: i64, y: i64) -> i64 {
    if y < 0 {
        return match x {
            1 => 1,
            -1 => {
                if y % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    // Square and multiply; wrapping products are exact modulo 2^64, hence modulo 2^32 too.
    let (mut base, mut exp, mut acc) = (x, y as u64, 1i64);
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    acc
}

/// A comparison; floats follow IEEE 754 (every comparison with NaN is false but `not_equal`),
/// bools order `false < true`.
pub(crate) fn compare<T: PartialOrd>(op: CompareOp, x: T, y: T) -> bool {
    match op {
        CompareOp::Equal => x == y,
        CompareOp::NotEqual => x != y,
        CompareOp::Less => x < y,
        CompareOp::LessEqual => x <= y,
        CompareOp::Greater => x > y,
        CompareOp::GreaterEqual => x >= y,
    }
}

/// Applies a unary op to every element.
pub(crate) fn unary(op: UnaryOp, x: &ArrayData) -> Result<ArrayData, String> {
    let int = |v: i64| unary_int(op, v).ok_or_else(|| format!("{} on an integer", op.name()));
    Ok(match x {
        ArrayData::F32(v) => ArrayData::F32(
            v.iter()
                .map(|&a| unary_float(op, a as f64) as f32)
                .collect(),
        ),
        ArrayData::F64(v) => ArrayData::F64(v.iter().map(|&a| unary_float(op, a)).collect()),
        ArrayData::I32(v) => ArrayData::I32(
            v.iter()
                .map(|&a| int(a as i64).map(|r| r as i32))
                .collect::<Result<_, _>>()?,
        ),
        ArrayData::I64(v) => ArrayData::I64(v.iter().map(|&a| int(a)).collect::<Result<_, _>>()?),
        ArrayData::Bool(_) => return Err(format!("{} on bool", op.name())),
    })
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

/// A binary op on the elements `x[ix[k]]`, `y[iy[k]]`.
pub(crate) fn binary(
    op: BinaryOp,
    x: &ArrayData,
    ix: &[usize],
    y: &ArrayData,
    iy: &[usize],
) -> Result<ArrayData, String> {
    use ArrayData as D;
    Ok(match (x, y) {
        (D::F32(a), D::F32(b)) => D::F32(zip_map(a, ix, b, iy, |p, q| {
            binary_float(op, p as f64, q as f64) as f32
        })?),
        (D::F64(a), D::F64(b)) => D::F64(zip_map(a, ix, b, iy, |p, q| binary_float(op, p, q))?),
        (D::I32(a), D::I32(b)) => D::I32(zip_map(a, ix, b, iy, |p, q| {
            binary_int(op, p as i64, q as i64) as i32
        })?),
        (D::I64(a), D::I64(b)) => D::I64(zip_map(a, ix, b, iy, |p, q| binary_int(op, p, q))?),
        _ => return Err(dtype_mismatch(op.name(), x, y)),
    })
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
        (D::F32(a), D::F32(b)) => zip_map(a, ix, b, iy, |p, q| compare(op, p, q))?,
        (D::F64(a), D::F64(b)) => zip_map(a, ix, b, iy, |p, q| compare(op, p, q))?,
        (D::I32(a), D::I32(b)) => zip_map(a, ix, b, iy, |p, q| compare(op, p, q))?,
        (D::I64(a), D::I64(b)) => zip_map(a, ix, b, iy, |p, q| compare(op, p, q))?,
        (D::Bool(a), D::Bool(b)) => zip_map(a, ix, b, iy, |p, q| compare(op, p, q))?,
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

/// Conversion of one element to each dtype, with Rust `as` semantics: floats to integers
/// truncate toward zero and saturate (NaN gives 0), wider integers wrap to narrower ones,
/// integers and f64 round to nearest f32/f64, anything to bool is `≠ 0`, bool is 0 or 1.
trait Cast: Copy {
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_i32(self) -> i32;
    fn to_i64(self) -> i64;
    fn to_bool(self) -> bool;
}

macro_rules! cast_numeric {
    ($t:ty, $zero:expr) => {
        impl Cast for $t {
            fn to_f32(self) -> f32 {
                self as f32
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_i32(self) -> i32 {
                self as i32
            }
            fn to_i64(self) -> i64 {
                self as i64
            }
            fn to_bool(self) -> bool {
                self != $zero
            }
        }
    };
}
cast_numeric!(f32, 0.0);
cast_numeric!(f64, 0.0);
cast_numeric!(i32, 0);
cast_numeric!(i64, 0);

impl Cast for bool {
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    fn to_i32(self) -> i32 {
        self as i32
    }
    fn to_i64(self) -> i64 {
        self as i64
    }
    fn to_bool(self) -> bool {
        self
    }
}

fn convert_slice<T: Cast>(v: &[T], to: DType) -> ArrayData {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_power_rules() {
        assert_eq!(power_int(3, 4), 81);
        assert_eq!(power_int(0, 0), 1);
        assert_eq!(power_int(2, -1), 0);
        assert_eq!(power_int(1, -5), 1);
        assert_eq!(power_int(-1, -3), -1);
        assert_eq!(power_int(-1, -4), 1);
        assert_eq!(power_int(2, 64), 0);
        assert_eq!(power_int(2, 31) as i32, i32::MIN);
    }

    #[test]
    fn float_sign_and_relu_edge_cases() {
        assert_eq!(
            unary_float(UnaryOp::Sign, -0.0).to_bits(),
            (-0.0f64).to_bits()
        );
        assert!(unary_float(UnaryOp::Sign, f64::NAN).is_nan());
        assert_eq!(unary_float(UnaryOp::Relu, -0.0).to_bits(), 0.0f64.to_bits());
        assert!(unary_float(UnaryOp::Relu, f64::NAN).is_nan());
        assert!(max_float(1.0, f64::NAN).is_nan());
        assert!(min_float(f64::NAN, 1.0).is_nan());
    }
}
