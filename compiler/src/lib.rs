//! weft-compiler: the graph passes (simplify, fusion, layout, view folding, storage sharing)
//! that turn an axes-labelled graph into a [`CompiledPlan`] of fused kernels over planned
//! buffers, and the Cranelift code generation that follows them — the only crate that knows
//! Cranelift.

pub mod codegen;
pub mod passes;
pub mod pipeline;

pub use passes::{NodeMap, PassError};
pub use pipeline::{compile_plan, CompiledPlan, PlanOptions};
