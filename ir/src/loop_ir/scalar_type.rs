//! Scalar element types of loop-IR values and buffers, and typed constants.
//!
//! Guarantees: every type has a fixed in-memory size (`bool` is one byte holding 0 or 1) and a
//! canonical text spelling that [`ScalarType::from_name`] reads back.

use std::fmt;

/// The element type of a loop-IR value or buffer: the graph's [`DType`](crate::DType), so lowering needs no
/// translation and there is one list of element types in weft.
pub use crate::dtype::DType as ScalarType;

impl ScalarType {
    /// The type spelled `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The zero of this type (`false` for `bool`): what a masked-out load yields.
    pub fn zero(self) -> ScalarValue {
        match self {
            Self::F32 => ScalarValue::F32(0.0),
            Self::F64 => ScalarValue::F64(0.0),
            Self::I32 => ScalarValue::I32(0),
            Self::I64 => ScalarValue::I64(0),
            Self::Bool => ScalarValue::Bool(false),
        }
    }
}

/// A typed scalar constant.
#[derive(Clone, Copy, Debug)]
pub enum ScalarValue {
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// An `i32`.
    I32(i32),
    /// An `i64`.
    I64(i64),
    /// A `bool`.
    Bool(bool),
}

impl ScalarValue {
    /// The type of this constant.
    pub fn ty(self) -> ScalarType {
        match self {
            Self::F32(_) => ScalarType::F32,
            Self::F64(_) => ScalarType::F64,
            Self::I32(_) => ScalarType::I32,
            Self::I64(_) => ScalarType::I64,
            Self::Bool(_) => ScalarType::Bool,
        }
    }

    /// Parses the text spelling of a constant of type `ty` (`1.5`, `-inf`, `NaN`, `7`, `true`).
    pub fn parse(ty: ScalarType, text: &str) -> Option<Self> {
        match ty {
            ScalarType::F32 => text.parse().ok().map(Self::F32),
            ScalarType::F64 => text.parse().ok().map(Self::F64),
            ScalarType::I32 => text.parse().ok().map(Self::I32),
            ScalarType::I64 => text.parse().ok().map(Self::I64),
            ScalarType::Bool => text.parse().ok().map(Self::Bool),
        }
    }
}

/// Bitwise equality, so that NaN constants compare equal to themselves and `-0.0 != 0.0`.
impl PartialEq for ScalarValue {
    fn eq(&self, other: &Self) -> bool {
        match (*self, *other) {
            (Self::F32(a), Self::F32(b)) => a.to_bits() == b.to_bits(),
            (Self::F64(a), Self::F64(b)) => a.to_bits() == b.to_bits(),
            (Self::I32(a), Self::I32(b)) => a == b,
            (Self::I64(a), Self::I64(b)) => a == b,
            (Self::Bool(a), Self::Bool(b)) => a == b,
            _ => false,
        }
    }
}

/// Prints the shortest text that [`ScalarValue::parse`] reads back bit-exactly (NaN payloads
/// other than the default quiet NaN are not preserved).
impl fmt::Display for ScalarValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::F32(v) => write!(f, "{v:?}"),
            Self::F64(v) => write!(f, "{v:?}"),
            Self::I32(v) => write!(f, "{v}"),
            Self::I64(v) => write!(f, "{v}"),
            Self::Bool(v) => write!(f, "{v}"),
        }
    }
}
