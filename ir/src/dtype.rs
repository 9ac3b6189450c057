//! Element types.

use std::fmt;
use std::str::FromStr;

/// The element type of a tensor.
///
/// ```
/// use weft::ir::DType;
/// assert!(DType::F32.is_float() && !DType::I64.is_float());
/// assert_eq!(DType::F64.to_string(), "f64");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    /// IEEE-754 binary32.
    F32,
    /// IEEE-754 binary64.
    F64,
    /// Two's-complement 32-bit integer; arithmetic wraps.
    I32,
    /// Two's-complement 64-bit integer; arithmetic wraps.
    I64,
    /// Boolean, one byte per element (0 or 1) in buffers.
    Bool,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 5] = [DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool];

    /// True for `F32` and `F64`.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
    /// True for `I32` and `I64`.
    pub fn is_int(self) -> bool {
        matches!(self, DType::I32 | DType::I64)
    }
    /// True for every dtype but `Bool`.
    pub fn is_numeric(self) -> bool {
        self != DType::Bool
    }
    /// Bytes per element in a buffer.
    pub fn size_bytes(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F64 | DType::I64 => 8,
            DType::Bool => 1,
        }
    }
    /// The spelling used in the text format and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::Bool => "bool",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A dtype name that is not one of `f32`, `f64`, `i32`, `i64`, `bool`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown dtype `{0}` (expected f32, f64, i32, i64 or bool)")]
pub struct UnknownDType(pub String);

impl FromStr for DType {
    type Err = UnknownDType;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DType::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownDType(s.to_string()))
    }
}
