#![warn(missing_docs)]
//! weft-compiler: the graph passes (simplify, fusion, layout, view folding, storage sharing)
//! that turn an axes-labelled graph into a [`CompiledPlan`] of fused kernels over planned
//! buffers, and the Cranelift code generation that follows them — the only crate that knows
//! Cranelift.

#![deny(unsafe_code)]

pub mod chain;
pub mod codegen;
pub mod column_blocks;
pub mod dump;
pub mod epilogue;
pub mod executable;
pub mod explain;
pub mod gemm;
mod io_binding;
pub mod loop_passes;
pub mod lower;
pub mod options;
pub mod passes;
pub mod picture;
pub mod pipeline;
pub mod program;

/// The loop-IR passes at their former paths (`weft_compiler::tile`, …).
pub use loop_passes::{memory_order, narrow_sums, reduce_in_memory, span_fission, tile};

pub use executable::{JitError, JitExecutable, JitOptions, ScheduledStep};
pub use lower::{lower_plan, BufferBinding, LowerError, LowerOptions, LoweredKernel};
pub use passes::{NodeMap, PassError};
pub use pipeline::{compile_plan, CompiledPlan, PlanOptions};
