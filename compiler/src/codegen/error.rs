//! Typed errors of code generation; each names the kernel at fault.

use weft_ir::loop_ir::VerifierErrors;
use weft_runtime::RuntimeError;

/// Why a kernel could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// The kernel failed verification (code generation never sees unverified kernels).
    #[error("{0}")]
    Verify(#[from] VerifierErrors),
    /// The host ISA could not be detected or configured.
    #[error("host ISA: {0}")]
    Host(String),
    /// Cranelift rejected the generated function (a code generator bug).
    #[error("kernel @{kernel}: Cranelift: {message}")]
    Cranelift {
        /// The kernel.
        kernel: String,
        /// Cranelift's diagnostic.
        message: String,
    },
    /// The runtime rejected the compiled kernel.
    #[error("{0}")]
    Runtime(#[from] RuntimeError),
    /// An invariant of the translator broke (a code generator bug).
    #[error("kernel @{kernel}: internal code generation error: {message}")]
    Internal {
        /// The kernel.
        kernel: String,
        /// What broke.
        message: String,
    },
}
