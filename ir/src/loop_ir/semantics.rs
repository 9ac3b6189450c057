//! The meaning of every scalar operation, reduction and conversion, on [`ScalarValue`]s.
//!
//! This is the executable definition that the interpreter uses and code generation must match
//! (exactly for integers and `bool`; for floats up to the documented polynomial accuracy and
//! reduction order). Assumes operands were type-checked by the verifier; given ill-typed
//! operands it returns `None` rather than panicking.

use super::{BinaryOp, CompareOp, ReduceKind, ScalarType, ScalarValue, UnaryOp};

/// `max` on floats: NaN if either operand is NaN, and `-0.0 < 0.0`.
pub fn float_max<F: Float>(a: F, b: F) -> F {
    if a.is_nan() || b.is_nan() {
        F::NAN
    } else if a == b {
        if a.is_sign_negative() {
            b
        } else {
            a
        }
    } else if a > b {
        a
    } else {
        b
    }
}

/// `min` on floats: NaN if either operand is NaN, and `-0.0 < 0.0`.
pub fn float_min<F: Float>(a: F, b: F) -> F {
    if a.is_nan() || b.is_nan() {
        F::NAN
    } else if a == b {
        if a.is_sign_negative() {
            a
        } else {
            b
        }
    } else if a < b {
        a
    } else {
        b
    }
}

/// The float operations the semantics needs, for `f32` and `f64`.
pub trait Float: Copy + PartialOrd + std::ops::Neg<Output = Self> {
    /// A quiet NaN.
    const NAN: Self;
    /// Whether the value is NaN.
    fn is_nan(self) -> bool;
    /// Whether the sign bit is set.
    fn is_sign_negative(self) -> bool;
}

impl Float for f32 {
    const NAN: Self = f32::NAN;
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f32::is_sign_negative(self)
    }
}

impl Float for f64 {
    const NAN: Self = f64::NAN;
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_sign_negative(self) -> bool {
        f64::is_sign_negative(self)
    }
}

macro_rules! float_unary {
    ($op:expr, $x:expr, $t:ty) => {{
        let x: $t = $x;
        let zero: $t = 0.0;
        Some(match $op {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Square => x * x,
            UnaryOp::Reciprocal => 1.0 / x,
            UnaryOp::Sign => {
                if x > zero {
                    1.0
                } else if x < zero {
                    -1.0
                } else {
                    x
                }
            }
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Relu => float_max(x, zero),
            UnaryOp::Not => return None,
        })
    }};
}

macro_rules! int_unary {
    ($op:expr, $x:expr) => {{
        let x = $x;
        Some(match $op {
            UnaryOp::Neg => x.wrapping_neg(),
            UnaryOp::Abs => x.wrapping_abs(),
            UnaryOp::Square => x.wrapping_mul(x),
            UnaryOp::Sign => x.signum(),
            UnaryOp::Relu => x.max(0),
            _ => return None,
        })
    }};
}

/// Applies a unary operator.
pub fn unary(op: UnaryOp, x: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    match x {
        S::F32(x) => float_unary!(op, x, f32).map(S::F32),
        S::F64(x) => float_unary!(op, x, f64).map(S::F64),
        S::I32(x) => int_unary!(op, x).map(S::I32),
        S::I64(x) => int_unary!(op, x).map(S::I64),
        S::Bool(x) => (op == UnaryOp::Not).then_some(S::Bool(!x)),
    }
}

macro_rules! float_binary {
    ($op:expr, $x:expr, $y:expr) => {{
        let (x, y) = ($x, $y);
        Some(match $op {
            BinaryOp::Add => x + y,
            BinaryOp::Sub => x - y,
            BinaryOp::Mul => x * y,
            BinaryOp::Div => x / y,
            BinaryOp::Max => float_max(x, y),
            BinaryOp::Min => float_min(x, y),
            BinaryOp::Pow => x.powf(y),
            _ => return None,
        })
    }};
}

macro_rules! int_binary {
    ($op:expr, $x:expr, $y:expr) => {{
        let (x, y) = ($x, $y);
        Some(match $op {
            BinaryOp::Add => x.wrapping_add(y),
            BinaryOp::Sub => x.wrapping_sub(y),
            BinaryOp::Mul => x.wrapping_mul(y),
            BinaryOp::Div => {
                if y == 0 {
                    0
                } else {
                    x.wrapping_div(y)
                }
            }
            BinaryOp::Max => x.max(y),
            BinaryOp::Min => x.min(y),
            _ => return None,
        })
    }};
}

/// Applies a binary operator to operands of one type.
pub fn binary(op: BinaryOp, x: ScalarValue, y: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    match (x, y) {
        (S::F32(x), S::F32(y)) => float_binary!(op, x, y).map(S::F32),
        (S::F64(x), S::F64(y)) => float_binary!(op, x, y).map(S::F64),
        (S::I32(x), S::I32(y)) => int_binary!(op, x, y).map(S::I32),
        (S::I64(x), S::I64(y)) => int_binary!(op, x, y).map(S::I64),
        (S::Bool(x), S::Bool(y)) => match op {
            BinaryOp::And => Some(S::Bool(x && y)),
            BinaryOp::Or => Some(S::Bool(x || y)),
            BinaryOp::Xor => Some(S::Bool(x != y)),
            _ => None,
        },
        _ => None,
    }
}

fn compare_ord<T: PartialOrd>(op: CompareOp, x: T, y: T) -> bool {
    match op {
        CompareOp::Eq => x == y,
        CompareOp::Ne => x != y,
        CompareOp::Lt => x < y,
        CompareOp::Le => x <= y,
        CompareOp::Gt => x > y,
        CompareOp::Ge => x >= y,
    }
}

/// Applies a comparison to operands of one type.
pub fn compare(op: CompareOp, x: ScalarValue, y: ScalarValue) -> Option<bool> {
    use ScalarValue as S;
    match (x, y) {
        (S::F32(x), S::F32(y)) => Some(compare_ord(op, x, y)),
        (S::F64(x), S::F64(y)) => Some(compare_ord(op, x, y)),
        (S::I32(x), S::I32(y)) => Some(compare_ord(op, x, y)),
        (S::I64(x), S::I64(y)) => Some(compare_ord(op, x, y)),
        (S::Bool(x), S::Bool(y)) if matches!(op, CompareOp::Eq | CompareOp::Ne) => {
            Some(compare_ord(op, x, y))
        }
        _ => None,
    }
}

/// Converts `x` to type `to` (see [`super::Inst::Convert`]).
pub fn convert(x: ScalarValue, to: ScalarType) -> ScalarValue {
    use ScalarValue as S;
    // Rust's `as` is exactly the documented rule: float→int truncates and saturates (NaN → 0),
    // int→int wraps, int→float and f64→f32 round to nearest.
    macro_rules! to {
        ($v:expr) => {
            match to {
                ScalarType::F32 => S::F32($v as f32),
                ScalarType::F64 => S::F64($v as f64),
                ScalarType::I32 => S::I32($v as i32),
                ScalarType::I64 => S::I64($v as i64),
                ScalarType::Bool => S::Bool($v != (0 as _)),
            }
        };
    }
    match x {
        S::F32(v) => to!(v),
        S::F64(v) => to!(v),
        S::I32(v) => to!(v),
        S::I64(v) => to!(v),
        S::Bool(v) => to!(u8::from(v)),
    }
}

/// The starting value of an accumulator.
pub fn reduce_identity(kind: ReduceKind, ty: ScalarType) -> ScalarValue {
    use ScalarValue as S;
    match (kind, ty) {
        (ReduceKind::Sum, _) => ty.zero(),
        (ReduceKind::Prod, ScalarType::F32) => S::F32(1.0),
        (ReduceKind::Prod, ScalarType::F64) => S::F64(1.0),
        (ReduceKind::Prod, ScalarType::I32) => S::I32(1),
        (ReduceKind::Prod, ScalarType::I64) => S::I64(1),
        (ReduceKind::Max | ReduceKind::ArgMax, ScalarType::F32) => S::F32(f32::NEG_INFINITY),
        (ReduceKind::Max | ReduceKind::ArgMax, ScalarType::F64) => S::F64(f64::NEG_INFINITY),
        (ReduceKind::Max | ReduceKind::ArgMax, ScalarType::I32) => S::I32(i32::MIN),
        (ReduceKind::Max | ReduceKind::ArgMax, ScalarType::I64) => S::I64(i64::MIN),
        (ReduceKind::Min | ReduceKind::ArgMin, ScalarType::F32) => S::F32(f32::INFINITY),
        (ReduceKind::Min | ReduceKind::ArgMin, ScalarType::F64) => S::F64(f64::INFINITY),
        (ReduceKind::Min | ReduceKind::ArgMin, ScalarType::I32) => S::I32(i32::MAX),
        (ReduceKind::Min | ReduceKind::ArgMin, ScalarType::I64) => S::I64(i64::MAX),
        (_, ScalarType::Bool) => ty.zero(),
    }
}

/// Combines `value` into an accumulator holding `acc` (and `acc_index` for arg-reductions);
/// returns the new value and index. Arg-reductions keep the first strictly best value.
pub fn reduce_step(
    kind: ReduceKind,
    acc: ScalarValue,
    acc_index: i64,
    value: ScalarValue,
    index: i64,
) -> Option<(ScalarValue, i64)> {
    Some(match kind {
        ReduceKind::Sum => (binary(BinaryOp::Add, acc, value)?, acc_index),
        ReduceKind::Prod => (binary(BinaryOp::Mul, acc, value)?, acc_index),
        ReduceKind::Max => (binary(BinaryOp::Max, acc, value)?, acc_index),
        ReduceKind::Min => (binary(BinaryOp::Min, acc, value)?, acc_index),
        ReduceKind::ArgMax => {
            if compare(CompareOp::Gt, value, acc)? {
                (value, index)
            } else {
                (acc, acc_index)
            }
        }
        ReduceKind::ArgMin => {
            if compare(CompareOp::Lt, value, acc)? {
                (value, index)
            } else {
                (acc, acc_index)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarValue as S;

    #[test]
    fn integer_division_never_traps() {
        assert_eq!(binary(BinaryOp::Div, S::I32(7), S::I32(0)), Some(S::I32(0)));
        assert_eq!(
            binary(BinaryOp::Div, S::I32(i32::MIN), S::I32(-1)),
            Some(S::I32(i32::MIN))
        );
        assert_eq!(
            binary(BinaryOp::Div, S::I64(-7), S::I64(2)),
            Some(S::I64(-3))
        );
    }

    #[test]
    fn float_max_propagates_nan_and_orders_zeros() {
        assert!(float_max(f32::NAN, 1.0).is_nan());
        assert!(float_max(-0.0f32, 0.0).is_sign_positive());
        assert!(float_min(0.0f64, -0.0).is_sign_negative());
    }

    #[test]
    fn conversions_saturate_and_wrap() {
        assert_eq!(convert(S::F32(f32::NAN), ScalarType::I32), S::I32(0));
        assert_eq!(convert(S::F64(1e20), ScalarType::I32), S::I32(i32::MAX));
        assert_eq!(convert(S::I64(1 << 32 | 5), ScalarType::I32), S::I32(5));
        assert_eq!(convert(S::F32(-0.5), ScalarType::Bool), S::Bool(true));
        assert_eq!(convert(S::Bool(true), ScalarType::F64), S::F64(1.0));
    }

    #[test]
    fn argmax_keeps_the_first_maximum() {
        let (v, i) = reduce_step(ReduceKind::ArgMax, S::F32(3.0), 1, S::F32(3.0), 4).unwrap();
        assert_eq!((v, i), (S::F32(3.0), 1));
        let (v, i) = reduce_step(ReduceKind::ArgMax, S::F32(3.0), 1, S::F32(5.0), 4).unwrap();
        assert_eq!((v, i), (S::F32(5.0), 4));
    }
}
