//! The runtime's typed errors. Every variant names the buffer, tensor or kernel at fault.

use weft_ir::loop_ir::ScalarType;

/// Why a runtime operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// Host data of one element type was used with a buffer of another.
    #[error("{what}: element type {actual} does not match buffer type {expected}")]
    DTypeMismatch {
        /// The buffer, reference or tensor involved.
        what: String,
        /// The buffer's type.
        expected: ScalarType,
        /// The type used.
        actual: ScalarType,
    },
    /// A host slice, storage or view has the wrong number of elements.
    #[error("{what}: needs {expected} elements, got {actual}")]
    LengthMismatch {
        /// The buffer, reference or tensor involved.
        what: String,
        /// Required elements.
        expected: u64,
        /// Available elements.
        actual: u64,
    },
    /// The storage could not be allocated.
    #[error("cannot allocate storage of {len} {dtype} elements")]
    AllocationFailed {
        /// Element type.
        dtype: ScalarType,
        /// Elements requested.
        len: u64,
    },
    /// A tensor view reaches outside its buffer reference.
    #[error("tensor view {view} reaches element {reach} of a reference of {len} elements")]
    ViewOutOfBounds {
        /// The view, printed.
        view: String,
        /// The furthest element index reached (negative when below zero).
        reach: i128,
        /// The reference's minimum size.
        len: u64,
    },
    /// Another call or host access holds the storage in a conflicting mode.
    #[error(
        "kernel @{kernel}: storage of buffer %{buffer} is in use by another call or host access"
    )]
    StorageBusy {
        /// The kernel called (or `host` for host copies).
        kernel: String,
        /// The buffer parameter.
        buffer: String,
    },
    /// A kernel was called with the wrong number of buffers.
    #[error("kernel @{kernel} takes {expected} buffers, {actual} given")]
    BufferCount {
        /// The kernel.
        kernel: String,
        /// Declared buffers.
        expected: usize,
        /// Given buffers.
        actual: usize,
    },
    /// A kernel that writes a buffer was bound to a host slice borrowed for reading.
    #[error("kernel @{kernel}: writes buffer %{buffer}, bound to a read-only host array")]
    ReadOnlyBinding {
        /// The kernel.
        kernel: String,
        /// The parameter.
        buffer: String,
    },
    /// A buffer bound to a kernel parameter has the wrong type or is too small.
    #[error("kernel @{kernel}: buffer %{buffer} needs {len} {dtype} elements, bound to {actual_len} {actual_dtype}")]
    BufferMismatch {
        /// The kernel.
        kernel: String,
        /// The parameter.
        buffer: String,
        /// Required type.
        dtype: ScalarType,
        /// Required elements.
        len: u64,
        /// Bound storage's type.
        actual_dtype: ScalarType,
        /// Bound storage's length.
        actual_len: u64,
    },
    /// A code generator handed over code without an entry point.
    #[error("kernel @{kernel}: the code generator gave no entry point")]
    NullEntry {
        /// The kernel.
        kernel: String,
    },
    /// A GEMM call whose description or buffers are not what it needs (its bounds, its
    /// element type, aliasing of C).
    #[error("gemm {gemm}: {message}")]
    Gemm {
        /// The call (the dot's label).
        gemm: String,
        /// What is wrong.
        message: String,
    },
}
