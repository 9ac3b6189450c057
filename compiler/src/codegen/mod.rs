//! Cranelift code generation for verified loop-IR kernels.
//!
//! [`JitCompiler`] detects the host ISA (SSE4.1, AVX, FMA via cranelift-native), verifies each
//! kernel, translates it (scalar loops, explicit unrolling, 128-bit SIMD for loops annotated
//! `vectorize`, polynomial math) and JIT-compiles it into a [`weft_runtime::CompiledKernel`]
//! that owns its code. [`JitCompiler::clif_text`] and [`KernelListing`] expose the Cranelift IR
//! and disassembly for debugging.

mod error;
mod handoff;
mod host;
pub(crate) mod jam_plan;
mod jit;
pub(crate) mod leaf;
pub(crate) mod leaf_asm;
mod math;
mod object;
mod parallel;
pub(crate) mod span_plan;
pub(crate) mod strategy;
pub(crate) mod translate;
pub(crate) mod vectorize;

pub use error::CodegenError;
pub use host::HostFeatures;
pub use jit::{CodegenOptions, JitCompiler, KernelListing, Outline};
pub use object::{kernel_symbol, ObjectCode};
pub use span_plan::{stream_min_bytes, STREAM_MIN_BYTES};
pub use strategy::KernelStrategy;
