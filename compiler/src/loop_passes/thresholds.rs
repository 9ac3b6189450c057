//! The strided-access thresholds: the one home of each size at which a strided walk of a
//! tensor changes a decision, read by the loop passes, fusion, its cost model and chaining.
//!
//! Two decisions, two figures (docs/passes.md, "Loop-IR passes"):
//! - [`STRIDED_SUM_MIN_BYTES`]: from this operand size a reduction striding along it is worth
//!   taking in memory order (`reduce_in_memory`, `memory_order`), so fusion keeps such a
//!   reduction in a kernel of its own and its cost model counts it as no gather.
//! - [`GATHER_MIN_BYTES`]: from this tensor size a strided read misses the cache element by
//!   element, so the cost model charges it as a gather and chaining refuses a strip of
//!   columns that would walk it so. Larger than the first: a rewrite pays before a read
//!   gathers from memory (leaf loops made operands of 128–512 KiB win in memory order).

/// The least size (bytes) of the strided operand for which lowering sums a reduction in
/// memory order (`LowerOptions::reduce_in_memory_min_bytes` and
/// `PlanOptions::reduce_in_memory_min_bytes` default to it): below it register blocking
/// (accumulators in registers, no load and store per term) is as fast — a small dot's loop
/// nest, a bias gradient. Was 1 MiB; since the jammed steps run as leaf loops (8 rows a step,
/// `codegen::leaf`), operands of 128–512 KiB (a softmax over the first axis of [512,
/// 64..256]) run 2–9× faster in memory order than gathered (docs/benchmarks.md).
pub const STRIDED_SUM_MIN_BYTES: u64 = 64 << 10;

/// The least tensor (bytes) whose strided reads miss the cache element by element: the cost
/// model's `Machine::gather_min_bytes` and `chain::strip_to_blocks`' refusal of narrow strips
/// (docs/cost-model.md).
pub const GATHER_MIN_BYTES: u64 = 1 << 20;
