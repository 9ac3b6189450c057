//! The functions compiled kernels call, by the names they import them under: [`ROUTINES`] is
//! the one table the JIT resolves its imports from, so a routine's name lives here and in the
//! import that declares its signature (`compiler/src/codegen/jit.rs`), nowhere else.
//!
//! Guarantees: every entry is an `extern "C"` function with the signature the compiler imports
//! it with, exported under its name (`#[no_mangle]`, or `export_name` for the trampoline), so
//! the undefined symbols of an object file of kernels resolve against a runtime linked with
//! it; the scalar calls compute the interpreter's scalar rules (`weft_ir::scalar`: an f32
//! computed in f64 and rounded once), so these calls agree with it bit for bit.

use crate::extreme::{weft_arg_extreme_f32_span, weft_extreme_f32_span};
use crate::extreme_rows::weft_extreme_rows_f32;
use crate::prefetch::weft_prefetch_line;
use crate::span_sum::weft_sum_f32_span_keeping;
use crate::stream::{weft_stream_copy, weft_stream_scaled_f32};
use crate::transpose::weft_transpose_32;
use crate::vmath::{
    weft_exp_f32_span, weft_log_f32_span, weft_sigmoid_f32_span, weft_tanh_f32_span,
};
use weft_ir::scalar::{self, Arith};
use weft_ir::{BinaryOp, UnaryOp};

/// `x` to the power `y`, as the interpreter's f32 `power`.
#[no_mangle]
pub extern "C" fn weft_pow_f32(x: f32, y: f32) -> f32 {
    Arith::binary(BinaryOp::Power, x, y).unwrap_or(f32::NAN)
}

/// `x` to the power `y`, as the interpreter's f64 `power`.
#[no_mangle]
pub extern "C" fn weft_pow_f64(x: f64, y: f64) -> f64 {
    scalar::binary_float(BinaryOp::Power, x, y)
}

/// The interpreter's f32 `sin`.
#[no_mangle]
pub extern "C" fn weft_sin_f32(x: f32) -> f32 {
    Arith::unary(UnaryOp::Sin, x).unwrap_or(f32::NAN)
}

/// The interpreter's f64 `sin`.
#[no_mangle]
pub extern "C" fn weft_sin_f64(x: f64) -> f64 {
    scalar::unary_float(UnaryOp::Sin, x)
}

/// The interpreter's f32 `cos`.
#[no_mangle]
pub extern "C" fn weft_cos_f32(x: f32) -> f32 {
    Arith::unary(UnaryOp::Cos, x).unwrap_or(f32::NAN)
}

/// The interpreter's f64 `cos`.
#[no_mangle]
pub extern "C" fn weft_cos_f64(x: f64) -> f64 {
    scalar::unary_float(UnaryOp::Cos, x)
}

/// A function kernels call: the name they import it under, and its address.
#[derive(Clone, Copy, Debug)]
pub struct Routine {
    /// The symbol kernels import.
    pub name: &'static str,
    /// The function.
    pub address: fn() -> *const u8,
}

macro_rules! routine {
    ($name:literal, $f:expr) => {
        Routine {
            name: $name,
            address: || $f as *const u8,
        }
    };
}

/// Every function compiled kernels call (the native routines of `vmath`, `span_sum`,
/// `extreme`, `extreme_rows`, `stream`, `transpose` and `prefetch`, and the scalar calls
/// above), by the name kernels import it under.
pub const ROUTINES: [Routine; 18] = [
    routine!("weft_pow_f32", weft_pow_f32),
    routine!("weft_pow_f64", weft_pow_f64),
    routine!("weft_sin_f32", weft_sin_f32),
    routine!("weft_sin_f64", weft_sin_f64),
    routine!("weft_cos_f32", weft_cos_f32),
    routine!("weft_cos_f64", weft_cos_f64),
    routine!("weft_exp_f32_span", weft_exp_f32_span),
    routine!("weft_tanh_f32_span", weft_tanh_f32_span),
    routine!("weft_sigmoid_f32_span", weft_sigmoid_f32_span),
    routine!("weft_log_f32_span", weft_log_f32_span),
    routine!("weft_stream_copy", weft_stream_copy),
    routine!("weft_prefetch_line", weft_prefetch_line),
    routine!("weft_transpose_32", weft_transpose_32),
    routine!("weft_extreme_f32_span", weft_extreme_f32_span),
    routine!("weft_extreme_rows_f32", weft_extreme_rows_f32),
    routine!("weft_arg_extreme_f32_span", weft_arg_extreme_f32_span),
    // The register-keeping trampoline: kernels call it with `preserve_all`.
    routine!("weft_sum_f32_span", weft_sum_f32_span_keeping),
    routine!("weft_stream_scaled_f32", weft_stream_scaled_f32),
];
