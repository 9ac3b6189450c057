//! GEMM epilogue fusion: a GEMM call and the JIT kernel right after it in the schedule (its
//! *epilogue*, e.g. `relu(C + b)`) run as one step, each parallel work item computing one row
//! block of C and then running the kernel's parallel loop over those same rows, while they are
//! still in cache ([`weft_runtime::GemmEpilogue`]).
//!
//! Assumes: a GEMM call planned by [`crate::gemm::plan_gemm`] and the compiled kernel that
//! follows it in the schedule, each with the workspace storages (slots) of its buffers; two
//! slots are one storage exactly when equal (each planned buffer, input, state value and
//! constant has its own storage).
//!
//! Guarantees: [`plan_epilogue`] pairs them only when the GEMM alone would be cut into row
//! blocks (C at least as tall as wide: otherwise row blocks would lose the GEMM's parallelism)
//! and the runtime's check accepts the pair — no batch axes; the kernel's parallel loop runs over C's `m` rows; every access of the
//! kernel to C's storage stays, in parallel iteration `p`, within the band of C's row `p`
//! (the loop IR's affine indices, as [`weft_runtime::Footprint`]s: the coefficient of the
//! parallel loop is C's row stride and the rest spans at most one row; masks ignored, so
//! conservative); and the kernel writes no storage the GEMM reads (the storage plan may give
//! the epilogue's output a dead operand's buffer). Then the fused step computes exactly what
//! the GEMM followed by the kernel computes, bit for bit, for every thread count: every
//! element of C is computed by the same operations whatever the blocks, every kernel iteration
//! by the same code whatever its sub-range. Otherwise it says why, and the executable keeps
//! the two steps. The step's row blocks are its own ([`EpilogueOptions`]); the runtime checks
//! the conditions again, on the memory bound, at every call.

use weft_runtime::{CompiledKernel, GemmEpilogue, GemmSpec, SplitDim};

/// When and how a GEMM and its epilogue kernel run as one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EpilogueOptions {
    /// Fewest rows of C per work item.
    pub min_block: usize,
    /// Work items per pool thread. Each item's GEMM packs all of B again, so more items cost
    /// packing; fewer rows per item keep more of C in cache for the kernel (measured,
    /// docs/benchmarks.md).
    pub blocks_per_thread: usize,
    /// Most work items per step.
    pub max_blocks: usize,
}

impl Default for EpilogueOptions {
    fn default() -> Self {
        EpilogueOptions {
            min_block: 128,
            blocks_per_thread: 1,
            max_blocks: 64,
        }
    }
}

impl EpilogueOptions {
    /// Rows per work item for `m` rows on a pool of `threads` threads: at least `min_block`
    /// (rounded up to a multiple of 16, the GEMM's micro-kernel tile), at most
    /// `blocks_per_thread` items per thread and `max_blocks` items. A function of the shape
    /// and the pool only; results do not depend on it.
    pub fn block_rows(&self, m: usize, threads: usize) -> usize {
        let count = (m / self.min_block.max(1))
            .min(threads.max(1).saturating_mul(self.blocks_per_thread.max(1)))
            .clamp(1, self.max_blocks.max(1));
        m.div_ceil(count).div_ceil(16).saturating_mul(16).max(1)
    }
}

/// The fused step of GEMM `spec` (over storages `gemm_args`: A, B, C) and `kernel` (over
/// `kernel_args`), in row blocks chosen by `options` for a pool of `threads`; or why the two
/// must stay separate steps.
pub fn plan_epilogue(
    spec: &GemmSpec,
    gemm_args: [usize; 3],
    kernel: &CompiledKernel,
    kernel_args: &[usize],
    options: &EpilogueOptions,
    threads: usize,
) -> Result<GemmEpilogue, String> {
    if !spec.batch.is_empty() {
        return Err("the GEMM has batch axes".into());
    }
    // C wider than tall: the GEMM alone splits its columns over the threads, which row blocks
    // of so few rows would not (one block of 64 rows where 2 column blocks ran in parallel).
    if spec.split != SplitDim::Rows {
        return Err("the GEMM is cut into column blocks (C is wider than tall)".into());
    }
    let rows = GemmSpec {
        split: SplitDim::Rows,
        block: options.block_rows(spec.m, threads),
        ..spec.clone()
    };
    GemmEpilogue::new(rows, gemm_args, kernel.signature(), kernel_args.to_vec()).map_err(
        |e| match e {
            weft_runtime::RuntimeError::Gemm { message, .. } => message,
            other => other.to_string(),
        },
    )
}
