//! The meaning of every loop-IR scalar operation, reduction and conversion, on
//! [`ScalarValue`]s.
//!
//! Each operator the graph also has is mapped onto the graph's op (`UnaryOp::graph_op` and
//! friends in `ops.rs`) and evaluated by [`crate::scalar`], the one definition of weft's scalar
//! rules; only the loop IR's own logical operators (`not`, `and`, `or`, `xor` on `bool`) are
//! defined here. This is what the loop-IR interpreter runs and code generation must match
//! (exactly for integers and `bool`; for floats up to the documented polynomial accuracy and
//! reduction order). Assumes operands were type-checked by the verifier; given ill-typed
//! operands it returns `None` rather than panicking.

use super::{BinaryOp, CompareOp, ReduceKind, ScalarType, ScalarValue, UnaryOp};
use crate::scalar;

/// Applies a unary operator.
pub fn unary(op: UnaryOp, x: ScalarValue) -> Option<ScalarValue> {
    match (op.graph_op(), x) {
        (Some(op), _) => scalar::unary(op, x),
        (None, ScalarValue::Bool(x)) => Some(ScalarValue::Bool(!x)),
        (None, _) => None,
    }
}

/// Applies a binary operator to operands of one type. `pow` is defined on floats only (the
/// verifier rejects it on integers; lowering expands integer powers).
pub fn binary(op: BinaryOp, x: ScalarValue, y: ScalarValue) -> Option<ScalarValue> {
    use ScalarValue as S;
    if !op.accepts(x.ty()) {
        return None;
    }
    match (op.graph_op(), x, y) {
        (Some(op), _, _) => scalar::binary(op, x, y),
        (None, S::Bool(x), S::Bool(y)) => Some(S::Bool(match op {
            BinaryOp::And => x && y,
            BinaryOp::Or => x || y,
            _ => x != y,
        })),
        (None, _, _) => match op {
            BinaryOp::ReduceMax => scalar::reduce_step(crate::ReduceOp::Max, x, y),
            BinaryOp::ReduceMin => scalar::reduce_step(crate::ReduceOp::Min, x, y),
            _ => None,
        },
    }
}

/// Applies a comparison to operands of one type (`bool` only for `eq`/`ne`).
pub fn compare(op: CompareOp, x: ScalarValue, y: ScalarValue) -> Option<bool> {
    if !op.accepts(x.ty()) {
        return None;
    }
    scalar::compare_values(op.graph_op(), x, y)
}

/// Converts `x` to type `to` (see [`super::Inst::Convert`] and [`scalar::Convert`]).
pub fn convert(x: ScalarValue, to: ScalarType) -> ScalarValue {
    scalar::convert(x, to)
}

/// The starting value of an accumulator ([`scalar::reduce_identity`]).
pub fn reduce_identity(kind: ReduceKind, ty: ScalarType) -> ScalarValue {
    scalar::reduce_identity(kind.graph_op(), ty)
}

/// Combines `value` into an accumulator holding `acc` (and `acc_index` for arg-reductions);
/// returns the new value and index. Value reductions fold with the graph reduction's step
/// ([`scalar::reduce_step`]); arg-reductions keep the first strictly best value
/// (lowering adds the NaN rule of the graph's argmax/argmin around them).
pub fn reduce_step(
    kind: ReduceKind,
    acc: ScalarValue,
    acc_index: i64,
    value: ScalarValue,
    index: i64,
) -> Option<(ScalarValue, i64)> {
    let better = match kind {
        ReduceKind::ArgMax => CompareOp::Gt,
        ReduceKind::ArgMin => CompareOp::Lt,
        _ => {
            return Some((scalar::reduce_step(kind.graph_op(), acc, value)?, acc_index));
        }
    };
    Some(if compare(better, value, acc)? {
        (value, index)
    } else {
        (acc, acc_index)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarValue as S;

    #[test]
    fn graph_ops_follow_the_scalar_module() {
        assert_eq!(
            binary(BinaryOp::Div, S::I32(i32::MIN), S::I32(-1)),
            Some(S::I32(i32::MIN))
        );
        assert_eq!(
            binary(BinaryOp::Max, S::F32(-0.0), S::F32(0.0)),
            Some(S::F32(-0.0))
        );
        assert_eq!(unary(UnaryOp::Relu, S::F64(-0.0)), Some(S::F64(0.0)));
        assert_eq!(convert(S::F32(f32::NAN), ScalarType::I32), S::I32(0));
    }

    #[test]
    fn the_loop_ir_keeps_its_own_type_rules() {
        assert_eq!(binary(BinaryOp::Pow, S::I32(2), S::I32(3)), None);
        assert_eq!(compare(CompareOp::Lt, S::Bool(false), S::Bool(true)), None);
        assert_eq!(unary(UnaryOp::Not, S::Bool(true)), Some(S::Bool(false)));
        assert_eq!(unary(UnaryOp::Not, S::I32(1)), None);
        assert_eq!(unary(UnaryOp::Exp, S::Bool(true)), None);
        assert_eq!(
            binary(BinaryOp::Xor, S::Bool(true), S::Bool(true)),
            Some(S::Bool(false))
        );
        assert_eq!(binary(BinaryOp::And, S::I32(1), S::I32(1)), None);
    }

    #[test]
    fn argmax_keeps_the_first_maximum() {
        let (v, i) = reduce_step(ReduceKind::ArgMax, S::F32(3.0), 1, S::F32(3.0), 4).unwrap();
        assert_eq!((v, i), (S::F32(3.0), 1));
        let (v, i) = reduce_step(ReduceKind::ArgMax, S::F32(3.0), 1, S::F32(5.0), 4).unwrap();
        assert_eq!((v, i), (S::F32(5.0), 4));
    }

    #[test]
    fn max_reduction_orders_zeros() {
        let (v, _) = reduce_step(ReduceKind::Max, S::F64(-0.0), 0, S::F64(0.0), 1).unwrap();
        assert_eq!(v, S::F64(0.0));
    }
}
