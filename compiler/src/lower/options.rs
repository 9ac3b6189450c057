//! The lowering's options, and the rules both lowering and the split-reduction planner
//! (`split.rs`) read: which reductions keep the interpreter's order, and what type each
//! accumulates in. A leaf module, so that both depend on it and neither on the other.

use crate::loop_passes::PassOptions;
use crate::passes::kernel::StageProgram;
use weft_ir::{DType, Graph, ReduceOp};

/// Tuning of the lowering.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// Annotate the outermost loop `parallel` when the kernel evaluates at least this many
    /// scalar points (0: never).
    pub parallel_min_points: u64,
    /// Never make row scratch (one row per parallel chunk) larger than this many elements to
    /// parallelise a kernel.
    pub parallel_scratch_limit: u64,
    /// Most parallel chunks a kernel with row scratch splits its outermost axis into: enough
    /// to balance a few threads, few enough that the scratch (one row per chunk) stays in
    /// cache.
    pub parallel_max_chunks: u64,
    /// Annotate innermost loops `vectorize`.
    pub vectorize: bool,
    /// Accumulate f32 sums, means and dots in f64 (each dot product taken in f64) and round
    /// once, as the interpreter does: partial sums and products then overflow exactly where the
    /// interpreter's do. Such loops still vectorise: four lanes per step, f32 values in `f32x4`
    /// and f64 values in pairs of `f64x2`. Off, they accumulate in f32. Products always
    /// accumulate in f64.
    pub f64_accumulation: bool,
    /// Let an f32 sum accumulated in f64 keep its vector partials in f32 where each term's
    /// path through them has few additions, so its error stays below `2⁻¹⁴ · Σ|xᵢ|`
    /// ([`crate::loop_passes::narrow_sums`]); the loop re-runs summing in f64 when the total is not
    /// finite, so an f32 partial overflowing where f64 would not (a layernorm row holding two
    /// terms near f32's maximum; fuzzer, 2026-11-24) costs time, not the result. On by
    /// default: layernorm 4096² runs 11.3–11.8 → 9.7–10.6 ms (docs/numerics.md).
    pub narrow_f32_sums: bool,
    /// Cut a transposing copy's innermost loop and the loop its gathered operand is contiguous
    /// along into blocks ([`crate::loop_passes::tile`]): a 4096 × 4096 transpose walked column by column
    /// touches a page per element.
    pub tile_transposes: bool,
    /// Reorder a perfect nest of result loops around row reductions so the rows of a large
    /// operand are read in memory order ([`crate::loop_passes::memory_order`]): summing the last axis of
    /// `[B, M, A]` into `[M, B]` in the result's order reads rows `M·A` elements apart.
    pub rows_in_memory_order: bool,
    /// Sum over a strided axis in memory order with a row of accumulators in scratch
    /// ([`crate::loop_passes::reduce_in_memory`]): a column sum read down the columns waits on memory for
    /// every term.
    pub reduce_in_memory: bool,
    /// Split a vector loop adding span functions (`exp`, `tanh`, `sigmoid`, `log`) of its terms
    /// into a row of accumulators into one loop per term storing its function into scratch,
    /// then the additions ([`crate::loop_passes::span_fission`]), so the code generator's native span
    /// routine computes each function. The executable turns it off where span functions do
    /// not run natively (`JitExecutable::span_math`).
    pub split_span_sums: bool,
    /// The least size of the strided operand for [`LowerOptions::reduce_in_memory`] and
    /// [`LowerOptions::rows_in_memory_order`] (bytes; default
    /// [`STRIDED_SUM_MIN_BYTES`](crate::loop_passes::thresholds::STRIDED_SUM_MIN_BYTES),
    /// 64 KiB): a smaller one stays in registers.
    pub reduce_in_memory_min_bytes: u64,
    /// Let f64 sums, means and dots run with several vector accumulators (reassociated). Off
    /// (the default), each f64 result is summed in the interpreter's order — vectorised across
    /// results where the kernel has them, never across its own terms — because f64 terms can
    /// overflow: reordered, a sum like `1e308 + 1e308 − 1e308` gives a finite value where the
    /// interpreter's order gives `inf`. f32 sums accumulated in f64 reassociate freely (f32
    /// terms and their products cannot overflow f64, so order changes only rounding); products
    /// never do (`0 · huge · huge` is 0 or NaN depending on order).
    pub reassociate_f64_sums: bool,
    /// Split a reduction of at least this many terms per result into parallel chunks
    /// (`split.rs`; 0: never). Only where the kernel's results are few (see
    /// [`LowerOptions::split_max_results`]) and the reduction may be reassociated.
    pub split_min_terms: u64,
    /// Most results (outer points × the reducing stage's own points) a split kernel may have:
    /// more, and the result loop itself gives the pool enough parallel work.
    pub split_max_results: u64,
    /// Most chunks a split reduction's leading axis is cut into (the largest divisor of its
    /// length not above this). Fixed by the options, never by the thread count or timing, so a
    /// split result is the same for every thread count.
    pub split_chunks: u64,
}

impl LowerOptions {
    /// The switches of the loop-IR passes (`crate::loop_passes`).
    pub fn pass_options(&self) -> PassOptions {
        PassOptions {
            vectorize: self.vectorize,
            rows_in_memory_order: self.rows_in_memory_order,
            reduce_in_memory: self.reduce_in_memory,
            split_span_sums: self.split_span_sums,
            tile_transposes: self.tile_transposes,
            narrow_f32_sums: self.narrow_f32_sums,
            strided_sum_min_bytes: self.reduce_in_memory_min_bytes,
        }
    }
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions {
            parallel_min_points: 1 << 16,
            parallel_scratch_limit: 1 << 20,
            parallel_max_chunks: 64,
            vectorize: true,
            f64_accumulation: true,
            narrow_f32_sums: true,
            tile_transposes: true,
            rows_in_memory_order: true,
            reduce_in_memory: true,
            reduce_in_memory_min_bytes: crate::loop_passes::thresholds::STRIDED_SUM_MIN_BYTES,
            split_span_sums: true,
            reassociate_f64_sums: false,
            split_min_terms: 1 << 16,
            split_max_results: 64,
            split_chunks: 64,
        }
    }
}

/// Whether a `op` reduction producing `dtype` must add its terms in the interpreter's order
/// (see [`LowerOptions::reassociate_f64_sums`]).
pub(crate) fn keeps_order(op: ReduceOp, dtype: DType, options: &LowerOptions) -> bool {
    match op {
        ReduceOp::Prod => dtype.is_float(),
        ReduceOp::Sum | ReduceOp::Mean => dtype == DType::F64 && !options.reassociate_f64_sums,
        _ => false,
    }
}

/// The type of the values `st` reduces, as lowered: its body's result (a dot's products in
/// the dot's dtype, as a sum of the same products; docs/numerics.md).
pub(crate) fn stage_value_type(g: &Graph, st: &StageProgram, _options: &LowerOptions) -> DType {
    st.body
        .get(st.result)
        .map_or(g.node(st.node).dtype, |i| i.dtype)
}

/// The type a `op` reduction of `values` accumulates in: bools as i32 0/1 (max = any, min =
/// all); f32 sums and means in f64 with [`LowerOptions::f64_accumulation`], f32 products always
/// (partial products overflow f32 long before f64), as the interpreter's; else their own type.
pub(crate) fn accumulation_type(op: ReduceOp, values: DType, options: &LowerOptions) -> DType {
    let widen = values == DType::F32
        && matches!(op, ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod)
        && (options.f64_accumulation || op == ReduceOp::Prod);
    match values {
        DType::Bool => DType::I32,
        _ if widen => DType::F64,
        other => other,
    }
}
