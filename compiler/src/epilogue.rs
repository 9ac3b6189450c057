//! GEMM epilogue fusion: a GEMM call and the JIT kernel right after it in the schedule (its
//! *epilogue*, e.g. `relu(C + b)`) run as one step, each parallel work item computing one
//! block of C and then running the kernel's parallel loop over that same block, while it is
//! still in cache ([`weft_runtime::GemmEpilogue`]): the block's rows when the GEMM is cut into
//! row blocks (C at least as tall as wide), or, when it is cut into column blocks, the one
//! iteration of a kernel strip-mined so that iteration `j` is column block `j`
//! ([`crate::column_blocks`]; the executable passes that variant's signature here, and compiles
//! the variant when they pair).
//!
//! Assumes: a GEMM call planned by [`crate::gemm::plan_gemm`] and the signature of the kernel
//! that follows it in the schedule, each with the workspace storages (slots) of its buffers; two
//! slots are one storage exactly when equal (each planned buffer, input, state value and
//! constant has its own storage).
//!
//! Guarantees: [`plan_epilogue`] pairs them only when the runtime's check accepts the pair —
//! batch axes: one, one block per batch index (a sum of convolution taps over a batch of
//! images), the kernel's parallel loop over the batch indices and every access to C's storage
//! within batch index `p`'s matrix in iteration `p`; otherwise no batch axes and rows: the kernel's parallel loop runs over C's `m` rows and every access of
//! the kernel to C's storage stays, in parallel iteration `p`, within the band of C's row `p`
//! (the loop IR's affine indices, as [`weft_runtime::Footprint`]s: the coefficient of the
//! parallel loop is C's row stride and the rest spans at most one row); columns: the parallel
//! loop runs over C's column blocks and every access to C's storage stays in block `p`'s
//! columns ([`weft_runtime::AccessPattern`]s); masks ignored, so conservative; and the
//! kernel writes no storage the GEMM reads (the storage plan may give the epilogue's output a
//! dead operand's buffer: A's, row by row, is allowed for row blocks). Then the fused step
//! computes exactly what the GEMM followed by the kernel computes, bit for bit: the step's
//! blocks are the GEMM's own ([`GemmSpec::blocks_for`]: one per thread), so the GEMM makes
//! the same calls, and every kernel iteration runs the same code whatever its sub-range (the
//! strip-mined variant runs each of the original iterations once, the same code on the same
//! indices). Otherwise it says why, and the executable keeps the two steps. The runtime
//! checks the conditions again, on the memory bound, at every call.

use weft_runtime::{GemmEpilogue, GemmSpec, KernelSignature};

/// The fused step of GEMM `spec` (over storages `gemm_args`: A, B, C) and `kernel` (over
/// `kernel_args`), in the GEMM's own blocks; or why the two must stay separate steps.
pub fn plan_epilogue(
    spec: &GemmSpec,
    gemm_args: [usize; 3],
    kernel: &KernelSignature,
    kernel_args: &[usize],
) -> Result<GemmEpilogue, String> {
    GemmEpilogue::new(spec.clone(), gemm_args, kernel, kernel_args.to_vec()).map_err(|e| match e {
        weft_runtime::RuntimeError::Gemm { message, .. } => message,
        other => other.to_string(),
    })
}
