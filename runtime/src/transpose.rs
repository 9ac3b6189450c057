//! Transposing copies of 32-bit elements, which JIT kernels call for a tiled transpose.
//!
//! Cranelift emits 128-bit vectors only, so a JIT transpose moves 4 × 4 blocks through
//! registers and stores each output row 16 bytes at a time (`compiler/src/codegen/translate/
//! jam.rs`): 7–9 ms for a 4096 × 4096 f32 transpose on Zen 4, about 2× its bandwidth floor.
//! Here blocks of 16 rows × 8 columns go through AVX registers as two 8 × 8 transposes, and
//! each output row's 64 bytes (one line, where the destination allows) are stored by two
//! 32-byte stores back to back, non-temporal when asked (no read of the line first). How the
//! line is written decides it (C models on the same machine, 2026-11-24, an hour when
//! non-temporal stores were slow): 16-byte non-temporal stores, four per line and spread over
//! four rows, gained nothing; 32-byte halves of lines stored a block of rows apart took 12 ms
//! (the write-combining buffers flush half lines); whole lines back to back 5.2–5.8 ms
//! (AVX-512's one-store lines 6.6–8.3). In quieter hours all the streamed forms ran 4.1–4.7.
//! Loads are kept 32-byte aligned too: a load across two lines made a transpose from a `Vec`
//! 16 bytes past a line 2.8× slower.
//!
//! A thread's calls walk their tiles of rows first to last and last to first in turn, so a
//! transpose repeated over the same arrays starts on the rows the last call read, still in the
//! last-level cache (4096²: 5.2–5.5 → 4.9–5.1 ms per call on Zen 4). While a tile is
//! transposed, the next one's source rows are prefetched a few at a time: a tile reads dozens of
//! rows a short run each (64 of 2 KiB for 512-column calls), too many and too short for the
//! hardware prefetchers to run ahead of (4096²: 5.3–6.3 → 4.3–5.4 ms per call, Zen 4).
//!
//! Assumes valid, non-overlapping ranges, and, when streaming, that the caller fences before it
//! publishes the result to another thread (as for [`crate::stream`]). Guarantees: afterwards
//! `dst[c·ld + r]` holds the bits of `src[r·ls + c]` for every `r < rows`, `c < cols`, and no
//! other element of `dst` is written. The AVX path is taken where the host `Target` has AVX; a
//! plain loop does everything on other CPUs and for fewer than 8 rows or columns.
//!
//! `unsafe` here: the intrinsics (the AVX ones called only where the host `Target` has AVX)
//! and the entry point JIT code calls with raw pointers (its caller vouches).

/// Side of the blocks moved through registers.
const BLOCK: usize = 8;

/// Rows per whole-line unit: 16 f32s make a 64-byte line of a destination row.
const LINE: usize = 16;

/// Units of rows per tile: the blocks of a tile's columns are done before the next tile's, so
/// the tile's lines of `src` are read from L1 (64 rows of a 64-column block: 16 KiB).
const TILE_UNITS: usize = 4;

/// The most source a tile may read for it to be prefetched during the tile before: a quarter
/// of a 1 MiB L2, so the prefetched lines are still there when read (`weft explain` quotes
/// it). 4096²'s 512-column chunks read 128 KiB a tile, and prefetching them made the call
/// 5.3–6.3 → 4.3–5.4 ms (Zen 4, 2026-11-28); 2048-column chunks (512 KiB a tile) ran slower.
pub const PREFETCH_BYTES: usize = 256 << 10;

/// Whether this CPU runs the blocked path (AVX); a plain loop transposes otherwise.
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    return crate::target::Target::host().features.avx;
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Writes `dst[c·ld + r] = src[r·ls + c]` for `r < rows`, `c < cols` (32-bit elements, bit
/// for bit), with non-temporal stores where `stream` is non-zero and `ld · 4` is a multiple of
/// 32 bytes.
///
/// With AVX and at least 8 rows and columns, everything goes in blocks. Units of 16 rows
/// start at the first row whose destination starts a line, so each writes whole lines
/// (streamed, if asked); blocks of columns start where `src`'s rows are 32-byte aligned. The
/// rows and columns before those starts and after the last whole unit are covered by 8 × 8
/// blocks, overlapping their neighbours where needed, stored with ordinary stores: an element
/// written twice gets the same bits both times.
///
/// # Safety
/// For every such `r`, `c`: `src + r·ls + c` must be valid for reads and `dst + c·ld + r` for
/// writes, and no element written may be one read. Nothing is touched if `rows` or `cols`
/// is not positive.
#[no_mangle]
pub unsafe extern "C" fn weft_transpose_32(
    dst: *mut u32,
    ld: i64,
    src: *const u32,
    ls: i64,
    rows: i64,
    cols: i64,
    stream: i64,
) {
    let (Ok(rows), Ok(cols)) = (usize::try_from(rows), usize::try_from(cols)) else {
        return;
    };
    let (ld, ls) = (ld as isize, ls as isize);
    #[cfg(target_arch = "x86_64")]
    if available() && rows >= BLOCK && cols >= BLOCK {
        let line = dst.align_offset(64);
        let row_starts = starts(rows, line % LINE, LINE);
        let col_starts = starts(cols, src.align_offset(32) % BLOCK, BLOCK);
        let stream = stream != 0 && (ld * 4) % 32 == 0 && line < LINE;
        // SAFETY: the host `Target` has AVX; every start leaves its unit within `rows` and
        // `cols`, so within the caller's ranges; the line units start at `line % 16` plus
        // multiples of 16, so when streaming (`dst + line` on a line, `ld · 4` a multiple of
        // 32) their stores are 32-byte aligned.
        unsafe { blocks_avx(dst, ld, src, ls, &row_starts, &col_starts, stream) };
        return;
    }
    for r in 0..rows {
        for c in 0..cols {
            // SAFETY: `r < rows`, `c < cols`: within the caller's ranges.
            unsafe {
                let v = src.offset(r as isize * ls + c as isize).read();
                dst.offset(c as isize * ld + r as isize).write(v);
            }
        }
    }
}

/// The units that cover `0..n` (`n >= 8`): from `first`, units of `unit` (8 or 16) while a
/// whole one fits, flagged `true`; 8-wide blocks every 8 from 0 over the head they leave and
/// from their end over the tail (the last ending at `n`), flagged `false`. If no unit fits
/// from `first`, only blocks.
fn starts(n: usize, first: usize, unit: usize) -> Vec<(usize, bool)> {
    let first = if first + unit <= n { first } else { n };
    let end = first + (n - first) / unit * unit;
    let head = (0..first).step_by(BLOCK).map(|s| (s.min(n - BLOCK), false));
    let units = (first..end).step_by(unit).map(|s| (s, true));
    let tail = (end..n).step_by(BLOCK).map(|s| (s.min(n - BLOCK), false));
    head.chain(units).chain(tail).collect()
}

thread_local! {
    /// Whether this thread's next blocked transpose walks its tiles last to first.
    static BACKWARDS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The units at `row_starts` × `col_starts` (flagged row starts: 16 rows, else 8; columns 8):
/// tiles of [`TILE_UNITS`] row starts, in each the columns outside.
///
/// # Safety
/// The CPU must have AVX; each unit within the caller's ranges of [`weft_transpose_32`]; if
/// `stream`, the destination of every flagged row start 32-byte aligned in every row.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn blocks_avx(
    dst: *mut u32,
    ld: isize,
    src: *const u32,
    ls: isize,
    row_starts: &[(usize, bool)],
    col_starts: &[(usize, bool)],
    stream: bool,
) {
    // Each call walks the tiles the other way round from this thread's previous call: a
    // repeated call then starts on the rows the last one read, still in the last-level cache.
    let backwards = BACKWARDS.with(|b| {
        let now = b.get();
        b.set(!now);
        now
    });
    let tiles = row_starts.len().div_ceil(TILE_UNITS);
    let tile_of =
        |t: usize| &row_starts[t * TILE_UNITS..((t + 1) * TILE_UNITS).min(row_starts.len())];
    // The columns' span in a source row, which the next tile's rows are prefetched over.
    let first_col = col_starts.first().map_or(0, |&(c, _)| c);
    let span = col_starts
        .iter()
        .map(|&(c, _)| c + BLOCK)
        .max()
        .unwrap_or(0)
        - first_col;
    for t in 0..tiles {
        let t = if backwards { tiles - 1 - t } else { t };
        let tile = tile_of(t);
        // The next tile's source, prefetched while this one is transposed (a few rows a
        // column block): the hardware prefetchers do not run ahead of its dozens of short runs.
        let next = if backwards {
            t.checked_sub(1)
        } else {
            (t + 1 < tiles).then_some(t + 1)
        };
        let ahead = next
            .map(|n| rows_of(tile_of(n)))
            .filter(|rows| rows.len() * span * 4 <= PREFETCH_BYTES)
            .unwrap_or(0..0);
        let per_block = ahead.len().div_ceil(col_starts.len());
        for (j, &(c, _)) in col_starts.iter().enumerate() {
            for r in ahead.clone().skip(j * per_block).take(per_block) {
                let row = src.wrapping_offset(r as isize * ls + first_col as isize);
                crate::prefetch::prefetch_span(row.cast::<u8>(), span * 4);
            }
            for &(r, line) in tile {
                let (r, c) = (r as isize, c as isize);
                // SAFETY: within the caller's rows and columns; aligned where streamed.
                unsafe {
                    let a = transpose8_avx(src, ls, r, c);
                    if line {
                        let b = transpose8_avx(src, ls, r + BLOCK as isize, c);
                        for k in 0..BLOCK {
                            let at = dst.offset((c + k as isize) * ld + r);
                            store_avx(at, a[k], stream);
                            store_avx(at.add(BLOCK), b[k], stream);
                        }
                    } else {
                        for (k, v) in a.into_iter().enumerate() {
                            store_avx(dst.offset((c + k as isize) * ld + r), v, false);
                        }
                    }
                }
            }
        }
    }
}

/// The rows a tile's units cover (they are in order, and each starts at or after the last).
fn rows_of(tile: &[(usize, bool)]) -> std::ops::Range<usize> {
    let end = tile
        .iter()
        .map(|&(r, line)| r + if line { LINE } else { BLOCK })
        .max();
    tile.first().map_or(0, |&(r, _)| r)..end.unwrap_or(0)
}

/// Eight f32 lanes at `at`, non-temporal if `stream`.
///
/// # Safety
/// The CPU must have AVX; `at` valid for writes of 8 elements, 32-byte aligned if `stream`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn store_avx(at: *mut u32, v: std::arch::x86_64::__m256, stream: bool) {
    use std::arch::x86_64::{_mm256_storeu_ps, _mm256_stream_ps};
    // SAFETY: the caller's contract.
    unsafe {
        if stream {
            _mm256_stream_ps(at.cast::<f32>(), v);
        } else {
            _mm256_storeu_ps(at.cast::<f32>(), v);
        }
    }
}

/// The 8 × 8 block of `src` at row `r`, column `c`, transposed: element `k` holds column
/// `c + k`, rows `r..r + 8`.
///
/// # Safety
/// The CPU must have AVX; rows `r..r + 8` and columns `c..c + 8` within the caller's ranges
/// of [`weft_transpose_32`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn transpose8_avx(
    src: *const u32,
    ls: isize,
    r: isize,
    c: isize,
) -> [std::arch::x86_64::__m256; BLOCK] {
    use std::arch::x86_64::*;
    // No closures here: a closure does not inherit `target_feature`, and its intrinsics would
    // be calls passing vectors through memory.
    let mut x = [_mm256_setzero_ps(); BLOCK];
    for (i, row) in x.iter_mut().enumerate() {
        // SAFETY: rows `r..r + 8` and columns `c..c + 8` lie within the caller's ranges.
        *row = unsafe { _mm256_loadu_ps(src.offset((r + i as isize) * ls + c).cast::<f32>()) };
    }
    // t: pairs of rows interleaved; u[4h + j]: rows 4h..4h + 4, columns j and j + 4.
    let t = [
        _mm256_unpacklo_ps(x[0], x[1]),
        _mm256_unpackhi_ps(x[0], x[1]),
        _mm256_unpacklo_ps(x[2], x[3]),
        _mm256_unpackhi_ps(x[2], x[3]),
        _mm256_unpacklo_ps(x[4], x[5]),
        _mm256_unpackhi_ps(x[4], x[5]),
        _mm256_unpacklo_ps(x[6], x[7]),
        _mm256_unpackhi_ps(x[6], x[7]),
    ];
    let u = [
        _mm256_shuffle_ps::<0x44>(t[0], t[2]),
        _mm256_shuffle_ps::<0xEE>(t[0], t[2]),
        _mm256_shuffle_ps::<0x44>(t[1], t[3]),
        _mm256_shuffle_ps::<0xEE>(t[1], t[3]),
        _mm256_shuffle_ps::<0x44>(t[4], t[6]),
        _mm256_shuffle_ps::<0xEE>(t[4], t[6]),
        _mm256_shuffle_ps::<0x44>(t[5], t[7]),
        _mm256_shuffle_ps::<0xEE>(t[5], t[7]),
    ];
    [
        _mm256_permute2f128_ps::<0x20>(u[0], u[4]),
        _mm256_permute2f128_ps::<0x20>(u[1], u[5]),
        _mm256_permute2f128_ps::<0x20>(u[2], u[6]),
        _mm256_permute2f128_ps::<0x20>(u[3], u[7]),
        _mm256_permute2f128_ps::<0x31>(u[0], u[4]),
        _mm256_permute2f128_ps::<0x31>(u[1], u[5]),
        _mm256_permute2f128_ps::<0x31>(u[2], u[6]),
        _mm256_permute2f128_ps::<0x31>(u[3], u[7]),
    ]
}

#[cfg(test)]
mod tests {
    use super::weft_transpose_32;

    /// Every shape around the block side, strides wider than the shape, both store kinds, an
    /// aligned destination and unaligned ones, each twice (a thread's calls alternate the
    /// direction they walk their tiles): each element lands where the definition puts it, and
    /// nothing else of `dst` is written.
    #[test]
    fn transposes_every_element_and_nothing_else() {
        for rows in [0usize, 1, 7, 8, 9, 16, 21, 64, 130] {
            for cols in [0usize, 1, 5, 8, 15, 16, 24, 64] {
                for (ls, ld, offset) in [(cols, rows, 0), (cols + 3, rows + 8, 8), (72, 80, 1)] {
                    let (ls, ld) = (ls.max(cols), ld.max(rows).max(1));
                    let src: Vec<u32> = (0..rows * ls)
                        .map(|i| (i as u32).wrapping_mul(2654435761))
                        .collect();
                    for stream in [0, 0, 1, 1] {
                        let mut dst = vec![7u32; 8 + offset + cols * ld + 8];
                        // From a 32-byte boundary (streamed stores where `ld` allows), or past it.
                        let offset = dst.as_ptr().align_offset(32) + offset;
                        // SAFETY: the ranges lie within the vectors, which are distinct.
                        unsafe {
                            weft_transpose_32(
                                dst.as_mut_ptr().add(offset),
                                ld as i64,
                                src.as_ptr(),
                                ls as i64,
                                rows as i64,
                                cols as i64,
                                stream,
                            )
                        };
                        for (i, &v) in dst.iter().enumerate() {
                            let at = i.checked_sub(offset).map(|j| (j / ld, j % ld));
                            let want = match at {
                                Some((c, r)) if c < cols && r < rows => src[r * ls + c],
                                _ => 7,
                            };
                            assert_eq!(v, want, "{rows}x{cols} ls {ls} ld {ld} at {i}");
                        }
                    }
                }
            }
        }
    }
}
