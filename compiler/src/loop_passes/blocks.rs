//! Column blocks: the geometry a reduction in memory order strip-mines its parallel result
//! loop into ([`block_width`]) and the chunks of consecutive blocks a chain of such kernels
//! runs per thread ([`chunk_count`]) — one home for both, read by `reduce_in_memory` and
//! `crate::chain`, so each picks widths the other can use.
//!
//! Assumes nothing; guarantees pure functions of the extents (no address, no thread count).

/// Chunks a chained kernel's parallel loop is cut into where its intermediates are contracted
/// and 16 divides its blocks ([`chunk_count`]).
pub const PREFERRED_CHUNKS: u64 = 16;

/// The chunk counts [`chunk_count`] prefers when `preferred` does not divide the blocks: fewer
/// than 8 leaves the threads unevenly loaded (3 chunks on 2 threads wait a third longer than
/// 4); more than 64 makes each chunk's scratch block a smaller share of the work it saves.
pub const CHUNK_COUNTS: std::ops::RangeInclusive<u64> = 8..=64;

/// How many chunks of consecutive blocks `crate::chain::contract` cuts a parallel loop of `n` blocks
/// into: `preferred` where it divides `n` and is fewer; else the divisor of `n` in
/// [`CHUNK_COUNTS`] nearest to it (513 blocks: 19 chunks of 27); else the largest divisor below
/// 8 and above 1 (1366 blocks: 2) — a whole intermediate streamed out and back costs more than
/// threads waiting on an uneven share. `None` where `n` is 1 or a prime (683 blocks): the
/// intermediates then stay whole.
pub fn chunk_count(n: u64, preferred: u64) -> Option<u64> {
    if preferred > 1 && preferred < n && n.is_multiple_of(preferred) {
        return Some(preferred);
    }
    let distance = |c: u64| (c.max(preferred) as f64 / c.min(preferred).max(1) as f64).ln();
    let divides = |c: &u64| *c < n && n.is_multiple_of(*c);
    CHUNK_COUNTS
        .filter(divides)
        .min_by(|&a, &b| distance(a).total_cmp(&distance(b)).then(b.cmp(&a)))
        .or_else(|| (2..*CHUNK_COUNTS.start()).rev().find(divides))
}

/// The column block width [`block_width`] aims at: 1024 results, a 4 KiB run of each f32
/// row, long enough for the hardware's stream prefetcher to run ahead within a row (blocks of
/// 64 — 256 B runs a row stride apart — left a sum over the first axis at 2.6x the time of
/// its transposed twin; docs/benchmarks.md).
pub const BLOCK_TARGET: u64 = 1024;

/// The narrowest and widest column block [`block_width`] picks: a block narrower than 64
/// leaves its loops shorter than a leaf loop (`codegen::leaf::MIN_EXTENT`) and its runs a
/// line or less (a batch-norm over the first axis of [8192, 64] in four blocks of 16 on two
/// threads took 0.60–0.68 ms, in one block on one thread 0.42–0.48; docs/benchmarks.md); one
/// wider than 4096 results is a block of a chained kernel (`crate::chain::contract`) that no
/// longer stays in cache between passes.
pub const BLOCK_WIDTHS: std::ops::RangeInclusive<u64> = 64..=4096;

/// Blocks [`block_width`] leaves where it can: at least as many as a few threads.
pub const MIN_BLOCKS: u64 = 4;

/// The width of the column blocks a reduction over `n` results, strip-mined because its
/// result loop is the parallel one, gives each work item: the divisor of `n` in
/// [`BLOCK_WIDTHS`] leaving at least two blocks — blocks a chain can cut into chunks
/// ([`chunk_count`]) first, then at least [`MIN_BLOCKS`] of them, then the width
/// nearest [`BLOCK_TARGET`] counting a row's scalar tail (`w mod 8` of 8 f32 lanes) as work
/// lost — so that an extent that is not a power of two is no cliff (32784 = 24 · 1366: blocks
/// of 1366 run a tail of 6 a row, where 48, the widest whole vectors, leave 683 blocks, a
/// prime, and 24 runs too short to stream). `None` where `n` has no such divisor (a prime):
/// the reduction then runs on one thread (`reduce_in_memory`).
pub fn block_width(n: u64) -> Option<u64> {
    let cost = |w: u64| {
        let distance = (w.max(BLOCK_TARGET) as f64 / w.min(BLOCK_TARGET) as f64).ln();
        // A tail element costs about as much as a vector step of 8 lanes.
        distance + (1.0 + 8.0 * (w % 8) as f64 / w as f64).ln()
    };
    BLOCK_WIDTHS
        .filter(|&w| n.is_multiple_of(w) && n / w >= 2)
        .min_by(|&a, &b| {
            let key = |w: u64| {
                let chunks = chunk_count(n / w, PREFERRED_CHUNKS);
                (chunks.is_none(), n / w < MIN_BLOCKS)
            };
            key(a)
                .cmp(&key(b))
                .then(cost(a).total_cmp(&cost(b)))
                .then(b.cmp(&a))
        })
}

#[cfg(test)]
mod tests {
    use super::block_width;

    #[test]
    fn column_blocks_divide_the_results_near_the_target_width() {
        // Powers of two: 1024 (4 KiB runs), leaving at least 4 blocks.
        assert_eq!(block_width(32768), Some(1024));
        assert_eq!(block_width(4096), Some(1024));
        assert_eq!(block_width(512), Some(128));
        // At least 64 wide: 256 in 4 blocks, 128 in 2, 64 in one (no block: one thread).
        assert_eq!(block_width(256), Some(64));
        assert_eq!(block_width(128), Some(64));
        assert_eq!(block_width(64), None);
        // 30000 = 1000 · 30 (15 chunks of 2 blocks); 32832 = 1026 · 32: a tail of 2 a row.
        assert_eq!(block_width(30000), Some(1000));
        assert_eq!(block_width(32832), Some(1026));
        // 32784 = 48 · 683 = 24 · 1366 = 1366 · 24: 683 blocks (a prime) cut into no chunks,
        // and 24-wide runs are too short; 1366 with a tail of 6 a row.
        assert_eq!(block_width(32784), Some(1366));
        // 969 = 3 · 323: 57, 51 and 19 are narrower than 64.
        assert_eq!(block_width(3 * 17 * 19), Some(323));
        // A prime, or a length with no divisor in range, takes none.
        assert_eq!(block_width(32771), None);
        assert_eq!(block_width(2 * 4099), None);
        assert_eq!(block_width(17), None);
    }
}
