//! Scalar semantics: what one element of every elementwise op, conversion and reduction step
//! is, keyed by the graph's op enums. This is the one definition of these rules in weft: the
//! reference interpreter, the loop-IR interpreter (through [`crate::loop_ir::semantics`]) and
//! the test executors call it, and code generation is tested against it op by op.
//! docs/interpreter.md states the same rules in prose.
//!
//! Assumes operands of one dtype (the graph builder and the loop-IR verifier check that).
//! Guarantees: nothing here panics; an op that a dtype does not have gives `None`. Floats are
//! computed in f64 and an f32 result is rounded once; integers are computed in i64 with
//! wrapping and then wrapped to the result width (two's complement).

/// The most additions a backend may put on one term's path to an f32 sum while accumulating it
/// in f32 (2¹⁰): the JIT narrows an f32 sum to an f32 accumulator only within it
/// (`weft_compiler::narrow_sums`), so its error stays below `2⁻¹⁴ · Σ|xᵢ|`, and the
/// interpreter's perturbed runs nudge f32 sums by `min(n, this) · 2⁻²⁴ · Σ|xᵢ|`
/// (docs/testing.md, "Tolerances").
pub const MAX_F32_SUM_CHAIN: u64 = 1 << 10;
use crate::graph::{BinaryOp, CompareOp, ReduceOp, UnaryOp};
use crate::host::Element;
use crate::loop_ir::ScalarValue;
use crate::DType;

/// `maximum`: NaN if either operand is NaN (numpy's `maximum`); on a tie, including −0 against
/// +0, the left operand.
pub fn maximum(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if y > x {
        y
    } else {
        x
    }
}

/// `minimum`: NaN if either operand is NaN; on a tie, including −0 against +0, the left operand.
pub fn minimum(x: f64, y: f64) -> f64 {
    if x.is_nan() || y.is_nan() {
        f64::NAN
    } else if y < x {
        y
    } else {
        x
    }
}

/// `relu` on a float: `x` for `x > 0` or NaN, else +0 (so −0 gives +0).
pub fn relu(x: f64) -> f64 {
    if x > 0.0 || x.is_nan() {
        x
    } else {
        0.0
    }
}

/// `sign` on a float: −1 below zero, 1 above; ±0 and NaN are their own sign (`f64::signum`
/// would give ±1 for ±0).
pub fn sign(x: f64) -> f64 {
    if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        x
    }
}

/// A unary op on a float, in f64.
pub fn unary_float(op: UnaryOp, x: f64) -> f64 {
    match op {
        UnaryOp::Negative => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Square => x * x,
        UnaryOp::Reciprocal => 1.0 / x,
        UnaryOp::Sign => sign(x),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Relu => relu(x),
    }
}

/// A unary op on an integer, in i64 with wrapping (`abs(MIN) = MIN`); `None` for the
/// float-only ops ([`UnaryOp::is_float_only`]).
pub fn unary_int(op: UnaryOp, x: i64) -> Option<i64> {
    Some(match op {
        UnaryOp::Negative => x.wrapping_neg(),
        UnaryOp::Abs => x.wrapping_abs(),
        UnaryOp::Square => x.wrapping_mul(x),
        UnaryOp::Sign => x.signum(),
        UnaryOp::Relu => x.max(0),
        // The float-only ops.
        _ => return None,
    })
}

/// A binary op on floats, in f64; `power` is `powf`.
pub fn binary_float(op: BinaryOp, x: f64, y: f64) -> f64 {
    match op {
        BinaryOp::Add => x + y,
        BinaryOp::Subtract => x - y,
        BinaryOp::Multiply => x * y,
        BinaryOp::Divide => x / y,
        BinaryOp::Maximum => maximum(x, y),
        BinaryOp::Minimum => minimum(x, y),
        BinaryOp::Power => x.powf(y),
    }
}

/// A binary op on integers, in i64 with wrapping. Division truncates toward zero, `x / 0 = 0`
/// and `MIN / −1` wraps to `MIN`: it never traps.
pub fn binary_int(op: BinaryOp, x: i64, y: i64) -> i64 {
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

/// `x^y` wrapping; `x^0 = 1` (also for 0). A negative exponent gives 1 for base 1, ±1 for base
/// −1 and 0 otherwise.
pub fn power_int(x: i64, y: i64) -> i64 {
    if y < 0 {
        return match x {
            1 => 1,
            -1 if y % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    // Square and multiply; wrapping products are exact modulo 2^64, hence modulo 2^32 too.
    let (mut base, mut exp, mut acc) = (x, y.unsigned_abs(), 1i64);
    while exp > 0 {
        if exp & 1 == 1 {
            acc = acc.wrapping_mul(base);
        }
        base = base.wrapping_mul(base);
        exp >>= 1;
    }
    acc
}

/// A comparison. Floats follow IEEE 754 (with a NaN operand only `not_equal` is true, and
/// −0 = +0); bools order `false < true`.
pub fn compare<T: PartialOrd>(op: CompareOp, x: T, y: T) -> bool {
    match op {
        CompareOp::Equal => x == y,
        CompareOp::NotEqual => x != y,
        CompareOp::Less => x < y,
        CompareOp::LessEqual => x <= y,
        CompareOp::Greater => x > y,
        CompareOp::GreaterEqual => x >= y,
    }
}

/// An element type with the arithmetic of the graph's unary and binary ops: each type's rule
/// is the f64 or i64 rule above, narrowed once to the type.
pub trait Arith: Element + PartialOrd {
    /// `op x`, or `None` if the type does not have the op.
    fn unary(op: UnaryOp, x: Self) -> Option<Self>;
    /// `x op y`, or `None` if the type does not have the op.
    fn binary(op: BinaryOp, x: Self, y: Self) -> Option<Self>;
}

impl Arith for f64 {
    fn unary(op: UnaryOp, x: f64) -> Option<f64> {
        Some(unary_float(op, x))
    }
    fn binary(op: BinaryOp, x: f64, y: f64) -> Option<f64> {
        Some(binary_float(op, x, y))
    }
}

impl Arith for f32 {
    fn unary(op: UnaryOp, x: f32) -> Option<f32> {
        Some(unary_float(op, f64::from(x)) as f32)
    }
    fn binary(op: BinaryOp, x: f32, y: f32) -> Option<f32> {
        Some(binary_float(op, f64::from(x), f64::from(y)) as f32)
    }
}

impl Arith for i64 {
    fn unary(op: UnaryOp, x: i64) -> Option<i64> {
        unary_int(op, x)
    }
    fn binary(op: BinaryOp, x: i64, y: i64) -> Option<i64> {
        Some(binary_int(op, x, y))
    }
}

impl Arith for i32 {
    fn unary(op: UnaryOp, x: i32) -> Option<i32> {
        unary_int(op, i64::from(x)).map(|r| r as i32)
    }
    fn binary(op: BinaryOp, x: i32, y: i32) -> Option<i32> {
        Some(binary_int(op, i64::from(x), i64::from(y)) as i32)
    }
}

/// The graph has no arithmetic on bools (only comparisons, `select` and `convert`).
impl Arith for bool {
    fn unary(_: UnaryOp, _: bool) -> Option<bool> {
        None
    }
    fn binary(_: BinaryOp, _: bool, _: bool) -> Option<bool> {
        None
    }
}

/// Conversion of one element to each dtype, with Rust `as` semantics: floats to integers
/// truncate toward zero and saturate (NaN gives 0), wider integers wrap to narrower ones,
/// everything rounds to nearest f32/f64 directly from the source, anything to bool is `≠ 0`
/// (NaN gives true), bool is 0 or 1.
pub trait Convert: Copy {
    /// To f32.
    fn to_f32(self) -> f32;
    /// To f64.
    fn to_f64(self) -> f64;
    /// To i32.
    fn to_i32(self) -> i32;
    /// To i64.
    fn to_i64(self) -> i64;
    /// To bool.
    fn to_bool(self) -> bool;
}

macro_rules! convert_numeric {
    ($t:ty, $zero:expr) => {
        impl Convert for $t {
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
convert_numeric!(f32, 0.0);
convert_numeric!(f64, 0.0);
convert_numeric!(i32, 0);
convert_numeric!(i64, 0);

impl Convert for bool {
    fn to_f32(self) -> f32 {
        f32::from(u8::from(self))
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
    fn to_i32(self) -> i32 {
        i32::from(self)
    }
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn to_bool(self) -> bool {
        self
    }
}

fn convert_to<T: Convert>(x: T, to: DType) -> ScalarValue {
    match to {
        DType::F32 => ScalarValue::F32(x.to_f32()),
        DType::F64 => ScalarValue::F64(x.to_f64()),
        DType::I32 => ScalarValue::I32(x.to_i32()),
        DType::I64 => ScalarValue::I64(x.to_i64()),
        DType::Bool => ScalarValue::Bool(x.to_bool()),
    }
}

/// `x` converted to `to` (see [`Convert`]).
pub fn convert(x: ScalarValue, to: DType) -> ScalarValue {
    match x {
        ScalarValue::F32(v) => convert_to(v, to),
        ScalarValue::F64(v) => convert_to(v, to),
        ScalarValue::I32(v) => convert_to(v, to),
        ScalarValue::I64(v) => convert_to(v, to),
        ScalarValue::Bool(v) => convert_to(v, to),
    }
}

/// `op x` on a typed value; `None` if its dtype does not have the op.
pub fn unary(op: UnaryOp, x: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    match x {
        S::F32(x) => Arith::unary(op, x).map(S::F32),
        S::F64(x) => Arith::unary(op, x).map(S::F64),
        S::I32(x) => Arith::unary(op, x).map(S::I32),
        S::I64(x) => Arith::unary(op, x).map(S::I64),
        S::Bool(x) => Arith::unary(op, x).map(S::Bool),
    }
}

/// `x op y` on typed values; `None` if the dtypes differ or do not have the op.
pub fn binary(op: BinaryOp, x: ScalarValue, y: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    match (x, y) {
        (S::F32(x), S::F32(y)) => Arith::binary(op, x, y).map(S::F32),
        (S::F64(x), S::F64(y)) => Arith::binary(op, x, y).map(S::F64),
        (S::I32(x), S::I32(y)) => Arith::binary(op, x, y).map(S::I32),
        (S::I64(x), S::I64(y)) => Arith::binary(op, x, y).map(S::I64),
        (S::Bool(x), S::Bool(y)) => Arith::binary(op, x, y).map(S::Bool),
        _ => None,
    }
}

/// A comparison of typed values; `None` if the dtypes differ.
pub fn compare_values(op: CompareOp, x: ScalarValue, y: ScalarValue) -> Option<bool> {
    use ScalarValue as S;
    Some(match (x, y) {
        (S::F32(x), S::F32(y)) => compare(op, x, y),
        (S::F64(x), S::F64(y)) => compare(op, x, y),
        (S::I32(x), S::I32(y)) => compare(op, x, y),
        (S::I64(x), S::I64(y)) => compare(op, x, y),
        (S::Bool(x), S::Bool(y)) => compare(op, x, y),
        _ => return None,
    })
}

/// The `max` reduction's fold on floats: NaN if either is NaN, else the greater, with
/// −0 < +0. Unlike [`maximum`]'s left-operand tie rule this is commutative and associative, so
/// a max reduction has the same bits in any order (vector lanes, threads).
pub fn reduce_max(acc: f64, x: f64) -> f64 {
    if acc.is_nan() || x.is_nan() {
        f64::NAN
    } else if acc == x {
        // Equal values differ at most in the sign of a zero.
        if acc.is_sign_negative() {
            x
        } else {
            acc
        }
    } else if x > acc {
        x
    } else {
        acc
    }
}

/// The `min` reduction's fold on floats: NaN if either is NaN, else the smaller, with −0 < +0
/// (order-free, as [`reduce_max`]).
pub fn reduce_min(acc: f64, x: f64) -> f64 {
    -reduce_max(-acc, -x)
}

/// The value a reduction's fold starts from: −0 for float sums (the additive identity: −0 + x
/// is x for every x, so a sum of −0s stays −0), 0 for integer sums, 1 for products, −inf and
/// +inf (integers: MIN and MAX) for max and min and for argmax and argmin's value; `false` for
/// bool, which has no arithmetic reductions.
pub fn reduce_identity(op: ReduceOp, ty: DType) -> ScalarValue {
    use ScalarValue as S;
    let max = matches!(op, ReduceOp::Max | ReduceOp::ArgMax);
    match (op, ty) {
        (_, DType::Bool) => S::Bool(false),
        (ReduceOp::Sum | ReduceOp::Mean, DType::F32) => S::F32(-0.0),
        (ReduceOp::Sum | ReduceOp::Mean, DType::F64) => S::F64(-0.0),
        (ReduceOp::Sum | ReduceOp::Mean, DType::I32) => S::I32(0),
        (ReduceOp::Sum | ReduceOp::Mean, DType::I64) => S::I64(0),
        (ReduceOp::Prod, _) => convert(S::I64(1), ty),
        (_, DType::F32) => S::F32(if max {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        }),
        (_, DType::F64) => S::F64(if max {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }),
        (_, DType::I32) => S::I32(if max { i32::MIN } else { i32::MAX }),
        (_, DType::I64) => S::I64(if max { i64::MIN } else { i64::MAX }),
    }
}

/// One step `acc ⊕ x` of a value reduction over typed values, folded from the left in visiting
/// order: `sum` (and `mean`, which divides the sum by the count) adds, `prod` multiplies,
/// `max`/`min` are [`reduce_max`]/[`reduce_min`] on floats and the plain max/min on integers.
/// `None` for argmax/argmin (see [`arg_replaces`]) and for mixed or non-numeric types.
pub fn reduce_step(op: ReduceOp, acc: ScalarValue, x: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    let extreme = |fold: fn(f64, f64) -> f64, int_op: BinaryOp| match (acc, x) {
        (S::F32(a), S::F32(b)) => Some(S::F32(fold(f64::from(a), f64::from(b)) as f32)),
        (S::F64(a), S::F64(b)) => Some(S::F64(fold(a, b))),
        _ => binary(int_op, acc, x),
    };
    match op {
        ReduceOp::Sum | ReduceOp::Mean => binary(BinaryOp::Add, acc, x),
        ReduceOp::Prod => binary(BinaryOp::Multiply, acc, x),
        ReduceOp::Max => extreme(reduce_max, BinaryOp::Maximum),
        ReduceOp::Min => extreme(reduce_min, BinaryOp::Minimum),
        ReduceOp::ArgMax | ReduceOp::ArgMin => None,
    }
}

/// Whether argmax (`max`) or argmin, holding `best`, moves to the later value `x`: the first
/// NaN wins and is kept, otherwise only a strictly better value replaces the best.
pub fn arg_replaces(max: bool, best: f64, x: f64) -> bool {
    if best.is_nan() {
        false
    } else if x.is_nan() {
        true
    } else if max {
        x > best
    } else {
        x < best
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarValue as S;

    fn bits(x: f64) -> u64 {
        x.to_bits()
    }

    #[test]
    fn max_and_min_propagate_nan_and_keep_the_left_operand_on_ties() {
        assert!(maximum(1.0, f64::NAN).is_nan());
        assert!(minimum(f64::NAN, 1.0).is_nan());
        assert_eq!(bits(maximum(-0.0, 0.0)), bits(-0.0));
        assert_eq!(bits(maximum(0.0, -0.0)), bits(0.0));
        assert_eq!(bits(minimum(0.0, -0.0)), bits(0.0));
        assert_eq!(bits(minimum(-0.0, 0.0)), bits(-0.0));
        assert_eq!(maximum(-1.0, 2.0), 2.0);
        assert_eq!(minimum(-1.0, 2.0), -1.0);
    }

    #[test]
    fn relu_and_sign_edge_cases() {
        assert_eq!(bits(relu(-0.0)), bits(0.0));
        assert!(relu(f64::NAN).is_nan());
        assert_eq!(relu(-3.0), 0.0);
        assert_eq!(bits(sign(-0.0)), bits(-0.0));
        assert!(sign(f64::NAN).is_nan());
        assert_eq!(sign(-1e-310), -1.0);
    }

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
        assert_eq!(power_int(3, i64::MIN), 0);
    }

    #[test]
    fn integer_arithmetic_wraps_and_never_traps() {
        let div = |x, y| binary(BinaryOp::Divide, x, y);
        assert_eq!(div(S::I32(7), S::I32(0)), Some(S::I32(0)));
        assert_eq!(div(S::I32(i32::MIN), S::I32(-1)), Some(S::I32(i32::MIN)));
        assert_eq!(div(S::I64(i64::MIN), S::I64(-1)), Some(S::I64(i64::MIN)));
        assert_eq!(div(S::I64(-7), S::I64(2)), Some(S::I64(-3)));
        let add = binary(BinaryOp::Add, S::I32(i32::MAX), S::I32(1));
        assert_eq!(add, Some(S::I32(i32::MIN)));
        assert_eq!(
            unary(UnaryOp::Abs, S::I32(i32::MIN)),
            Some(S::I32(i32::MIN))
        );
        assert_eq!(
            binary(BinaryOp::Power, S::I32(3), S::I32(21)),
            Some(S::I32(3i32.wrapping_pow(21)))
        );
    }

    #[test]
    fn f32_is_computed_in_f64_and_rounded_once() {
        let x = 16_777_217.0f64; // 2^24 + 1: not an f32
        let r = binary(BinaryOp::Add, S::F32(16_777_216.0), S::F32(1.0));
        assert_eq!(r, Some(S::F32(x as f32)));
        assert_eq!(unary(UnaryOp::Exp, S::I32(1)), None);
        assert_eq!(binary(BinaryOp::Add, S::F32(1.0), S::F64(1.0)), None);
        assert_eq!(unary(UnaryOp::Negative, S::Bool(true)), None);
    }

    #[test]
    fn conversions_saturate_and_wrap() {
        assert_eq!(convert(S::F32(f32::NAN), DType::I32), S::I32(0));
        assert_eq!(convert(S::F64(1e20), DType::I32), S::I32(i32::MAX));
        assert_eq!(convert(S::F64(-2.7), DType::I64), S::I64(-2));
        assert_eq!(convert(S::I64(1 << 32 | 5), DType::I32), S::I32(5));
        assert_eq!(convert(S::F32(-0.5), DType::Bool), S::Bool(true));
        assert_eq!(convert(S::F64(f64::NAN), DType::Bool), S::Bool(true));
        assert_eq!(convert(S::Bool(true), DType::F64), S::F64(1.0));
    }

    #[test]
    fn comparisons_with_nan_and_zeros() {
        for op in CompareOp::ALL.iter().copied() {
            let with_nan = compare(op, f64::NAN, 1.0);
            assert_eq!(with_nan, op == CompareOp::NotEqual, "{op:?}");
        }
        assert!(compare(CompareOp::Equal, -0.0, 0.0));
        assert!(compare(CompareOp::Less, false, true));
    }

    #[test]
    fn max_and_min_reductions_order_zeros_and_are_order_free() {
        assert_eq!(bits(reduce_max(-0.0, 0.0)), bits(0.0));
        assert_eq!(bits(reduce_max(0.0, -0.0)), bits(0.0));
        assert_eq!(bits(reduce_min(0.0, -0.0)), bits(-0.0));
        assert_eq!(bits(reduce_min(-0.0, -0.0)), bits(-0.0));
        assert!(reduce_max(f64::NAN, 1.0).is_nan());
        assert!(reduce_min(1.0, f64::NAN).is_nan());
        let max = |op| reduce_step(op, S::F32(-0.0), S::F32(0.0));
        assert_eq!(max(ReduceOp::Max), Some(S::F32(0.0)));
        assert_eq!(max(ReduceOp::Min), Some(S::F32(-0.0)));
        assert_eq!(
            reduce_step(ReduceOp::Sum, S::I32(i32::MAX), S::I32(1)),
            Some(S::I32(i32::MIN))
        );
        assert_eq!(reduce_step(ReduceOp::ArgMax, S::I32(1), S::I32(2)), None);
    }

    #[test]
    fn reductions_start_from_their_identity() {
        for ty in [DType::F32, DType::F64, DType::I32, DType::I64] {
            for op in [ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max, ReduceOp::Min] {
                let start = reduce_identity(op, ty);
                for x in [-0.0, 0.0, -3.0, 5.0] {
                    let x = convert(S::F64(x), ty);
                    assert_eq!(reduce_step(op, start, x), Some(x), "{op:?} {ty} {x:?}");
                }
            }
        }
    }

    #[test]
    fn arg_reductions_keep_the_first_nan_or_first_extreme() {
        assert!(!arg_replaces(true, 3.0, 3.0));
        assert!(arg_replaces(true, 3.0, 5.0));
        assert!(arg_replaces(false, 3.0, f64::NAN));
        assert!(!arg_replaces(true, f64::NAN, 5.0));
    }
}
