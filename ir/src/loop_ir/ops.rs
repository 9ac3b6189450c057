//! The scalar operators of the loop IR and the reductions of its accumulators.
//!
//! Guarantees: each operator has one text spelling (its `name`) that `from_name` reads back, and
//! states which operand types it accepts. Semantics (shared by the interpreter and code
//! generation) are documented per variant and defined by the graph op each maps to
//! (`graph_op`, evaluated by `crate::scalar`).

use super::ScalarType;

macro_rules! named_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
        }
        impl $name {
            /// Every operator of this kind.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];
            /// The text spelling.
            pub fn name(self) -> &'static str {
                match self { $($name::$variant => $text,)* }
            }
            /// The operator spelled `text`, if any.
            pub fn from_name(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|op| op.name() == text)
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// A one-operand operator; the result has the operand's type.
    UnaryOp {
        /// `-x`; wraps for integers.
        Neg = "neg",
        /// `|x|`; wraps for the most negative integer.
        Abs = "abs",
        /// `e^x` (floats).
        Exp = "exp",
        /// Natural logarithm (floats).
        Log = "log",
        /// Square root (floats).
        Sqrt = "sqrt",
        /// `x * x`; wraps for integers.
        Square = "square",
        /// `1 / x` (floats).
        Reciprocal = "reciprocal",
        /// -1, 0 or 1; for floats `±0` and NaN are returned unchanged.
        Sign = "sign",
        /// Hyperbolic tangent (floats).
        Tanh = "tanh",
        /// `1 / (1 + e^-x)` (floats).
        Sigmoid = "sigmoid",
        /// Sine (floats).
        Sin = "sin",
        /// Cosine (floats).
        Cos = "cos",
        /// `max(x, 0)`; floats: `x` for `x > 0` or NaN, else `+0` (so `relu(-0.0) = +0.0`).
        Relu = "relu",
        /// Logical negation (`bool`).
        Not = "not",
    }
}

impl UnaryOp {
    /// Whether the operator accepts an operand of type `ty`.
    pub fn accepts(self, ty: ScalarType) -> bool {
        match self.graph_op() {
            Some(op) if op.is_float_only() => ty.is_float(),
            Some(_) => ty.is_numeric(),
            None => ty == ScalarType::Bool,
        }
    }
}

named_enum! {
    /// A two-operand operator over operands of one type; the result has that type.
    BinaryOp {
        /// Sum; wraps for integers.
        Add = "add",
        /// Difference; wraps for integers.
        Sub = "sub",
        /// Product; wraps for integers.
        Mul = "mul",
        /// Quotient. Integers: truncating, `x / 0 == 0` and `MIN / -1 == MIN` (never traps).
        Div = "div",
        /// Larger operand. Floats: NaN if either is NaN; on a tie (also `-0.0` against `0.0`)
        /// the left operand.
        Max = "max",
        /// Smaller operand. Floats: NaN if either is NaN; on a tie (also `-0.0` against `0.0`)
        /// the left operand.
        Min = "min",
        /// The step of a `max` accumulator ([`ReduceKind::Max`]): NaN if either is NaN, and
        /// `-0.0 < 0.0` (`crate::scalar::reduce_max`; order-free, so a row of accumulators in
        /// memory folds as the accumulator would).
        ReduceMax = "reduce_max",
        /// The step of a `min` accumulator ([`ReduceKind::Min`]; `crate::scalar::reduce_min`).
        ReduceMin = "reduce_min",
        /// `x^y` (floats), as C's `pow`.
        Pow = "pow",
        /// Logical and (`bool`).
        And = "and",
        /// Logical or (`bool`).
        Or = "or",
        /// Logical exclusive or (`bool`).
        Xor = "xor",
    }
}

impl BinaryOp {
    /// Whether the operator accepts operands of type `ty`.
    pub fn accepts(self, ty: ScalarType) -> bool {
        match self {
            Self::Add
            | Self::Sub
            | Self::Mul
            | Self::Div
            | Self::Max
            | Self::Min
            | Self::ReduceMax
            | Self::ReduceMin => ty.is_numeric(),
            Self::Pow => ty.is_float(),
            Self::And | Self::Or | Self::Xor => ty == ScalarType::Bool,
        }
    }
}

named_enum! {
    /// A comparison of two operands of one type; the result is `bool`. Ordered float
    /// comparisons are false when an operand is NaN; `ne` is then true.
    CompareOp {
        /// Equal.
        Eq = "eq",
        /// Not equal.
        Ne = "ne",
        /// Less than.
        Lt = "lt",
        /// Less than or equal.
        Le = "le",
        /// Greater than.
        Gt = "gt",
        /// Greater than or equal.
        Ge = "ge",
    }
}

impl CompareOp {
    /// Whether the comparison accepts operands of type `ty` (`bool` only for `eq`/`ne`).
    pub fn accepts(self, ty: ScalarType) -> bool {
        match self {
            Self::Eq | Self::Ne => true,
            _ => ty.is_numeric(),
        }
    }
}

named_enum! {
    /// How an accumulator combines the values reduced into it. Every accumulator starts at
    /// the kind's identity.
    ReduceKind {
        /// Sum; identity 0.
        Sum = "sum",
        /// Product; identity 1.
        Prod = "prod",
        /// Maximum: NaN if either is NaN, and `-0.0 < 0.0` (order-free, unlike [`BinaryOp::Max`]'s
        /// tie rule; `crate::scalar::reduce_max`); identity -inf (integers: MIN).
        Max = "max",
        /// Minimum: NaN if either is NaN, and `-0.0 < 0.0` (`crate::scalar::reduce_min`); identity +inf (integers: MAX).
        Min = "min",
        /// Value and `i64` index of the first strictly greatest value; starts at (-inf, 0).
        ArgMax = "argmax",
        /// Value and `i64` index of the first strictly smallest value; starts at (+inf, 0).
        ArgMin = "argmin",
    }
}

impl ReduceKind {
    /// Whether the accumulator also carries an index (`argmax`, `argmin`).
    pub fn has_index(self) -> bool {
        matches!(self, Self::ArgMax | Self::ArgMin)
    }

    /// Whether an accumulator of this kind may hold values of type `ty` (numeric types only).
    pub fn accepts(self, ty: ScalarType) -> bool {
        ty.is_numeric()
    }
}

// The graph op each loop-IR operator means; its semantics are the graph op's
// (`crate::scalar`). Operators the graph lacks (`not`, `and`, `or`, `xor`) map to `None`.
type GraphUnary = crate::graph::UnaryOp;
type GraphBinary = crate::graph::BinaryOp;
type GraphCompare = crate::graph::CompareOp;
type GraphReduce = crate::graph::ReduceOp;

impl UnaryOp {
    /// The graph's op with this operator's semantics; `None` for `not`.
    pub fn graph_op(self) -> Option<GraphUnary> {
        Some(match self {
            Self::Neg => GraphUnary::Negative,
            Self::Abs => GraphUnary::Abs,
            Self::Exp => GraphUnary::Exp,
            Self::Log => GraphUnary::Log,
            Self::Sqrt => GraphUnary::Sqrt,
            Self::Square => GraphUnary::Square,
            Self::Reciprocal => GraphUnary::Reciprocal,
            Self::Sign => GraphUnary::Sign,
            Self::Tanh => GraphUnary::Tanh,
            Self::Sigmoid => GraphUnary::Sigmoid,
            Self::Sin => GraphUnary::Sin,
            Self::Cos => GraphUnary::Cos,
            Self::Relu => GraphUnary::Relu,
            Self::Not => return None,
        })
    }

    /// The operator meaning graph op `op` (the inverse of [`UnaryOp::graph_op`]).
    pub fn from_graph_op(op: GraphUnary) -> Option<Self> {
        Self::ALL.iter().copied().find(|u| u.graph_op() == Some(op))
    }
}

impl BinaryOp {
    /// The graph's op with this operator's semantics; `None` for the logical operators and
    /// the reduction steps.
    pub fn graph_op(self) -> Option<GraphBinary> {
        Some(match self {
            Self::Add => GraphBinary::Add,
            Self::Sub => GraphBinary::Subtract,
            Self::Mul => GraphBinary::Multiply,
            Self::Div => GraphBinary::Divide,
            Self::Max => GraphBinary::Maximum,
            Self::Min => GraphBinary::Minimum,
            Self::Pow => GraphBinary::Power,
            Self::And | Self::Or | Self::Xor | Self::ReduceMax | Self::ReduceMin => return None,
        })
    }

    /// The operator meaning graph op `op` (the inverse of [`BinaryOp::graph_op`]).
    pub fn from_graph_op(op: GraphBinary) -> Option<Self> {
        Self::ALL.iter().copied().find(|b| b.graph_op() == Some(op))
    }
}

impl CompareOp {
    /// The graph's comparison with this one's semantics.
    pub fn graph_op(self) -> GraphCompare {
        match self {
            Self::Eq => GraphCompare::Equal,
            Self::Ne => GraphCompare::NotEqual,
            Self::Lt => GraphCompare::Less,
            Self::Le => GraphCompare::LessEqual,
            Self::Gt => GraphCompare::Greater,
            Self::Ge => GraphCompare::GreaterEqual,
        }
    }

    /// The comparison meaning graph comparison `op` (the inverse of [`CompareOp::graph_op`]).
    pub fn from_graph_op(op: GraphCompare) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.graph_op() == op)
    }
}

impl ReduceKind {
    /// The graph's reduction whose fold this accumulator performs.
    pub fn graph_op(self) -> GraphReduce {
        match self {
            Self::Sum => GraphReduce::Sum,
            Self::Prod => GraphReduce::Prod,
            Self::Max => GraphReduce::Max,
            Self::Min => GraphReduce::Min,
            Self::ArgMax => GraphReduce::ArgMax,
            Self::ArgMin => GraphReduce::ArgMin,
        }
    }

    /// The accumulator kind folding like graph reduction `op`; `None` for `mean` (a sum,
    /// divided afterwards).
    pub fn from_graph_op(op: GraphReduce) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.graph_op() == op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_graph_op_has_its_loop_ir_operator() {
        for &op in GraphUnary::ALL {
            assert_eq!(
                UnaryOp::from_graph_op(op).and_then(UnaryOp::graph_op),
                Some(op)
            );
        }
        for &op in GraphBinary::ALL {
            assert_eq!(
                BinaryOp::from_graph_op(op).and_then(BinaryOp::graph_op),
                Some(op)
            );
        }
        for &op in GraphCompare::ALL {
            assert_eq!(
                CompareOp::from_graph_op(op).map(CompareOp::graph_op),
                Some(op)
            );
        }
        for &op in GraphReduce::ALL {
            let kind = ReduceKind::from_graph_op(op);
            assert_eq!(kind.is_none(), op == GraphReduce::Mean, "{op:?}");
        }
    }
}
