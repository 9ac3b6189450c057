//! The loop IR: kernels of loop nests over index variables, affine indices into buffers,
//! scalar arithmetic, reduction accumulators and loop annotations — the form the lowering
//! produces and code generation consumes.
//!
//! Pipeline: build a [`Kernel`] (or [`parse_kernel`] its text form), [`verify`] it, then hand
//! it to the code generator or to [`interpret`]. docs/loop-ir.md describes the text grammar and
//! what the verifier guarantees.

mod affine;
pub mod bounds;
mod interpreter;
mod kernel;
mod lexer;
mod ops;
mod printer;
mod reader;
mod scalar_type;
pub mod semantics;
mod values;
mod verifier;

pub use affine::{AffineExpr, MaskBound};
pub use interpreter::{interpret, BufferData, InterpretError};
pub use kernel::{
    elementwise_body, nest, perfect_nest, AccDecl, AccId, BodyAccesses, BufferAccess,
    BufferAccessExpr, BufferDecl, BufferId, Inst, Kernel, LoopAnnotations, LoopDecl, LoopId, Stmt,
    ValueId,
};
pub use ops::{BinaryOp, CompareOp, ReduceKind, UnaryOp};
pub use printer::{AffineDisplay, StmtDisplay};
pub use reader::{parse_kernel, ReadError};
pub use scalar_type::{ScalarType, ScalarValue};
pub use values::{drop_unused, lets_of, rename_reads, used_values, uses};
pub use verifier::{verify, VerifierError, VerifierErrors, MAX_UNROLL};
