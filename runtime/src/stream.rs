//! Streaming (non-temporal) copies, which JIT kernels call to write large outputs.
//!
//! An ordinary store to a line not in cache first reads the line from memory (a read for
//! ownership), so a kernel reading one array and writing another moves three arrays' worth of
//! bytes, not two. Non-temporal stores go to memory through write-combining buffers without
//! that read. Cranelift has no such store, so a kernel writing a large output stores a block
//! into a small staging area in L1 and calls [`weft_stream_copy`] to move it out
//! (`compiler/src/codegen/translate/span.rs`).
//!
//! Assumes valid, non-overlapping ranges, and that the caller fences (`sfence` or `mfence`)
//! before it publishes the result to another thread: non-temporal stores are weakly ordered,
//! and a fence after every copy would wait for each block to reach memory before the next is
//! computed (a kernel fences once, before it returns). Guarantees: afterwards `dst[..bytes]`
//! holds `src[..bytes]`, as this thread sees it. The widest store the host `Target` has is
//! chosen (AVX-512F: 64 bytes, AVX: 32, else SSE2's 16, which every x86-64 has); the head up
//! to the first 64-byte boundary of `dst` and the tail are written four bytes at a time with
//! non-temporal `movnti` (an ordinary store there read the line from memory first, which cost
//! the gain when outputs start 16 bytes past a line), any bytes left over with ordinary ones.
//!
//! `unsafe` here: the intrinsics (the AVX and AVX-512 ones called only where the host
//! `Target` has them) and the entry point JIT code calls with raw pointers (its caller vouches).

#[cfg(target_arch = "x86_64")]
use crate::target::Target;

/// Copies `bytes` bytes from `src` to `dst` with non-temporal stores where aligned.
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of `bytes` bytes (none if `bytes <=
/// 0`), and the two ranges must not overlap.
#[no_mangle]
pub unsafe extern "C" fn weft_stream_copy(dst: *mut u8, src: *const u8, bytes: i64) {
    let Ok(bytes) = usize::try_from(bytes) else {
        return;
    };
    let head = dst.align_offset(64).min(bytes);
    // SAFETY: the caller vouches for both ranges; `head <= bytes`.
    unsafe { stream_bytes(dst, src, head) };
    let lines = (bytes - head) / 64;
    // SAFETY: `head + 64 * lines <= bytes`, so both offsets stay within the ranges.
    let (dst_body, src_body) = unsafe { (dst.add(head), src.add(head)) };
    // SAFETY: `dst_body` is 64-byte aligned and both ranges hold `64 * lines` bytes.
    unsafe { stream_lines(dst_body, src_body, lines) };
    let done = head + 64 * lines;
    // SAFETY: `done <= bytes`; the rest of both ranges.
    unsafe { stream_bytes(dst.add(done), src.add(done), bytes - done) };
}

/// Elements per piece of [`weft_stream_scaled_f32`]: the scaled values of a piece go through a
/// 1 KiB buffer on the stack (in L1) and out by [`weft_stream_copy`].
const SCALED_PIECE: usize = 256;

/// A piece's values, aligned to a line so its copy reads whole lines.
#[repr(C, align(64))]
struct Piece([f32; SCALED_PIECE]);

/// Writes `dst[i] = (src[i] · r) · s` for `i < len − len % step` and `src[i] / d` for the
/// rest, with non-temporal stores: bit for bit what a JIT vector loop of step `step` stores
/// when it divides by `d` (its vector body multiplies by the scaled reciprocal `r`, `s`; its
/// scalar tail divides), or multiplies by `r` (`s` = 1, `step` = 1). Kernels call it for a
/// streamed loop that only scales what it reads (softmax's `e / Σe`), instead of staging
/// the loop's stores (`compiler/src/codegen/translate/span.rs`). Pieces start on `dst`'s
/// lines, so each is copied out in whole lines; each element's value depends on nothing but
/// its own, so where the pieces fall changes no bit.
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of `len` f32s (none if `len <= 0`),
/// both aligned to 4 bytes, not overlapping; the caller fences as for [`weft_stream_copy`].
#[no_mangle]
pub unsafe extern "C" fn weft_stream_scaled_f32(
    dst: *mut f32,
    src: *const f32,
    len: i64,
    step: i64,
    r: f32,
    s: f32,
    d: f32,
) {
    let Ok(len) = usize::try_from(len) else {
        return;
    };
    let step = usize::try_from(step).unwrap_or(1).max(1);
    let exact_from = len - len % step;
    let mut piece = Piece([0.0; SCALED_PIECE]);
    // Up to `dst`'s first line boundary, then whole lines (AVX-512F: straight from `src`,
    // no piece), then pieces.
    let head = (dst.cast::<u8>().align_offset(64) / 4).min(len);
    // SAFETY: `head <= len`, within the ranges the caller vouches for.
    unsafe { scale_piece_out(&mut piece, dst, src, 0, head, exact_from, (r, s, d)) };
    let mut at = head;
    #[cfg(target_arch = "x86_64")]
    if Target::host().features.avx512f && at < exact_from {
        let lines = (exact_from - at) / 16;
        // SAFETY: the host `Target` has AVX-512F; `dst + at` is line-aligned (or `lines` is 0)
        // and both ranges hold the `16 · lines` f32s from `at`, below `exact_from <= len`.
        unsafe { scale_lines_avx512(dst.add(at), src.add(at), lines, r, s) };
        at += 16 * lines;
    }
    while at < len {
        let n = SCALED_PIECE.min(len - at);
        // SAFETY: `at + n <= len`, as above.
        unsafe { scale_piece_out(&mut piece, dst, src, at, n, exact_from, (r, s, d)) };
        at += n;
    }
}

/// Elements `at..at + n` of [`weft_stream_scaled_f32`], through `piece` and out by
/// [`weft_stream_copy`].
///
/// # Safety
/// As for [`weft_stream_scaled_f32`], with `at + n <= len` and `n <= SCALED_PIECE`.
unsafe fn scale_piece_out(
    piece: &mut Piece,
    dst: *mut f32,
    src: *const f32,
    at: usize,
    n: usize,
    exact_from: usize,
    (r, s, d): (f32, f32, f32),
) {
    if n == 0 {
        return;
    }
    let scaled = exact_from.saturating_sub(at).min(n);
    // SAFETY: the caller's contract: `src[at..at + n]` is valid.
    let from = unsafe { std::slice::from_raw_parts(src.add(at), n) };
    scale_piece(&mut piece.0[..n], from, scaled, r, s, d);
    // SAFETY: `dst[at..at + n]` is valid for writes and does not overlap the stack piece.
    unsafe {
        weft_stream_copy(
            dst.add(at).cast::<u8>(),
            piece.0.as_ptr().cast::<u8>(),
            (n * 4) as i64,
        )
    };
}

/// `dst[j] = (src[j] · r) · s` for `lines` lines of 16 f32s, each stored whole with one
/// non-temporal store: no staging when the destination is line-aligned.
///
/// # Safety
/// The CPU must have AVX-512F; `dst` is 64-byte aligned and valid for writes, `src` for
/// reads, of `16 · lines` f32s, not overlapping.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scale_lines_avx512(dst: *mut f32, src: *const f32, lines: usize, r: f32, s: f32) {
    use std::arch::x86_64::*;
    let (r, s) = (_mm512_set1_ps(r), _mm512_set1_ps(s));
    for line in 0..lines {
        // SAFETY: the caller's contract: line `line` lies within both ranges, `dst`'s
        // aligned.
        unsafe {
            let x = _mm512_loadu_ps(src.add(16 * line));
            let y = _mm512_mul_ps(_mm512_mul_ps(x, r), s);
            _mm512_stream_ps(dst.add(16 * line), y);
        }
    }
}

/// `out[j] = (from[j] · r) · s` for `j < scaled`, `from[j] / d` after: 16 lanes at a time
/// where the CPU has AVX-512F (each lane the same IEEE operations, so the same bits).
fn scale_piece(out: &mut [f32], from: &[f32], scaled: usize, r: f32, s: f32, d: f32) {
    #[cfg(target_arch = "x86_64")]
    if Target::host().features.avx512f {
        // SAFETY: the host has AVX-512F (`Target`).
        return unsafe { scale_piece_avx512(out, from, scaled, r, s, d) };
    }
    scale_piece_any(out, from, scaled, r, s, d);
}

/// [`scale_piece`] compiled for AVX-512F.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scale_piece_avx512(out: &mut [f32], from: &[f32], scaled: usize, r: f32, s: f32, d: f32) {
    scale_piece_any(out, from, scaled, r, s, d);
}

/// [`scale_piece`]'s loops, vectorised by the compiler for whatever features the caller has.
#[inline(always)]
fn scale_piece_any(out: &mut [f32], from: &[f32], scaled: usize, r: f32, s: f32, d: f32) {
    let (out_scaled, out_exact) = out.split_at_mut(scaled);
    let (from_scaled, from_exact) = from.split_at(scaled);
    for (y, x) in out_scaled.iter_mut().zip(from_scaled) {
        *y = (x * r) * s;
    }
    for (y, x) in out_exact.iter_mut().zip(from_exact) {
        *y = x / d;
    }
}

/// Copies a partial line: four bytes at a time with non-temporal stores where `dst` allows
/// (an ordinary store would read the line from memory first), the rest with ordinary stores.
///
/// # Safety
/// As [`weft_stream_copy`], for `bytes` bytes.
unsafe fn stream_bytes(dst: *mut u8, src: *const u8, bytes: usize) {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    if dst.align_offset(4) == 0 {
        while i + 4 <= bytes {
            // SAFETY: bytes `i..i + 4` lie within both ranges; `dst + i` is 4-byte aligned.
            unsafe {
                let v = src.add(i).cast::<i32>().read_unaligned();
                std::arch::x86_64::_mm_stream_si32(dst.add(i).cast::<i32>(), v);
            }
            i += 4;
        }
    }
    // SAFETY: bytes `i..bytes` lie within both ranges.
    unsafe { std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), bytes - i) };
}

/// Copies `lines` 64-byte lines, `dst` 64-byte aligned, with non-temporal stores.
///
/// # Safety
/// As [`weft_stream_copy`], for `64 * lines` bytes; `dst` 64-byte aligned.
#[cfg(target_arch = "x86_64")]
unsafe fn stream_lines(dst: *mut u8, src: *const u8, lines: usize) {
    let host = Target::host().features;
    if host.avx512f {
        // SAFETY: the host has AVX-512F (`Target`); the caller vouches for the ranges.
        unsafe { stream_lines_avx512(dst, src, lines) }
    } else if host.avx {
        // SAFETY: the host has AVX; as above.
        unsafe { stream_lines_avx(dst, src, lines) }
    } else {
        // SAFETY: SSE2 is part of x86-64; as above.
        unsafe { stream_lines_sse2(dst, src, lines) }
    }
}

/// The portable fallback: an ordinary copy (other architectures).
///
/// # Safety
/// As [`weft_stream_copy`], for `64 * lines` bytes.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn stream_lines(dst: *mut u8, src: *const u8, lines: usize) {
    // SAFETY: the caller vouches for both ranges.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, 64 * lines) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn stream_lines_avx512(dst: *mut u8, src: *const u8, lines: usize) {
    use std::arch::x86_64::{__m512i, _mm512_loadu_si512, _mm512_stream_si512};
    for i in 0..lines {
        // SAFETY: line `i` lies within both ranges; `dst` is 64-byte aligned.
        unsafe {
            let v = _mm512_loadu_si512(src.add(64 * i).cast::<__m512i>());
            _mm512_stream_si512(dst.add(64 * i).cast::<__m512i>(), v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx")]
unsafe fn stream_lines_avx(dst: *mut u8, src: *const u8, lines: usize) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256};
    for i in 0..2 * lines {
        // SAFETY: half-line `i` lies within both ranges; `dst` is 32-byte aligned there.
        unsafe {
            let v = _mm256_loadu_si256(src.add(32 * i).cast::<__m256i>());
            _mm256_stream_si256(dst.add(32 * i).cast::<__m256i>(), v);
        }
    }
}

#[cfg(target_arch = "x86_64")]
unsafe fn stream_lines_sse2(dst: *mut u8, src: *const u8, lines: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    for i in 0..4 * lines {
        // SAFETY: quarter-line `i` lies within both ranges; `dst` is 16-byte aligned there.
        unsafe {
            let v = _mm_loadu_si128(src.add(16 * i).cast::<__m128i>());
            _mm_stream_si128(dst.add(16 * i).cast::<__m128i>(), v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{weft_stream_copy, weft_stream_scaled_f32};

    #[test]
    fn copies_every_byte_at_every_alignment_and_length() {
        let src: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for offset in 0..70 {
            for len in [0usize, 1, 15, 63, 64, 65, 127, 128, 300, 900] {
                let mut dst = vec![0xAAu8; 1000];
                // SAFETY: both ranges lie within their vectors (offset + len <= 970) and the
                // vectors are distinct.
                unsafe { weft_stream_copy(dst.as_mut_ptr().add(offset), src.as_ptr(), len as i64) };
                assert_eq!(&dst[offset..offset + len], &src[..len], "{offset} {len}");
                assert!(dst[..offset].iter().all(|&b| b == 0xAA), "{offset} {len}");
                assert!(
                    dst[offset + len..].iter().all(|&b| b == 0xAA),
                    "{offset} {len}"
                );
            }
        }
    }

    /// Every store width the CPU has, not only the one dispatch picks.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn every_store_width_copies_whole_lines() {
        let host = crate::target::Target::host().features;
        let src: Vec<u8> = (0..640u32).map(|i| (i * 13 + 1) as u8).collect();
        type Lines = unsafe fn(*mut u8, *const u8, usize);
        let mut paths: Vec<(&str, Lines)> = vec![("sse2", super::stream_lines_sse2)];
        if host.avx {
            paths.push(("avx", super::stream_lines_avx));
        }
        if host.avx512f {
            paths.push(("avx512", super::stream_lines_avx512));
        }
        for (name, copy) in paths {
            let mut dst = vec![0u8; 640 + 64];
            let at = dst.as_ptr().align_offset(64);
            // SAFETY: `at + 576 <= 704`: nine lines lie within `dst`, 64-byte aligned at `at`,
            // and within `src`; the host has the feature the function needs.
            unsafe { copy(dst.as_mut_ptr().add(at), src.as_ptr(), 9) };
            assert_eq!(&dst[at..at + 576], &src[..576], "{name}");
        }
    }

    #[test]
    fn scaled_streams_give_the_scaled_bits_at_every_alignment_and_length() {
        let src: Vec<f32> = (0..1200).map(|i| (i as f32 * 0.731).sin() * 1e3).collect();
        let (r, s, d) = (0.137f32, 2.0f32, 3.0f32);
        for offset in [0usize, 1, 3, 4, 15] {
            for len in [0usize, 1, 15, 16, 17, 255, 256, 257, 1000] {
                for step in [1i64, 8, 16] {
                    let mut out = vec![0f32; 1300];
                    let dst = &mut out[offset..offset + len];
                    // SAFETY: `dst` and `src` hold `len` f32s each and do not overlap.
                    unsafe {
                        weft_stream_scaled_f32(
                            dst.as_mut_ptr(),
                            src.as_ptr(),
                            len as i64,
                            step,
                            r,
                            s,
                            d,
                        )
                    };
                    let exact_from = len - len % step as usize;
                    for (i, y) in dst.iter().enumerate() {
                        let want = if i < exact_from {
                            (src[i] * r) * s
                        } else {
                            src[i] / d
                        };
                        assert_eq!(y.to_bits(), want.to_bits(), "{offset} {len} {step} {i}");
                    }
                    assert!(out[..offset].iter().all(|y| *y == 0.0));
                    assert!(out[offset + len..].iter().all(|y| *y == 0.0));
                }
            }
        }
    }

    #[test]
    fn a_negative_length_copies_nothing() {
        let (src, mut dst) = ([1u8; 8], [0u8; 8]);
        // SAFETY: nothing is read or written for a negative length.
        unsafe { weft_stream_copy(dst.as_mut_ptr(), src.as_ptr(), -5) };
        assert_eq!(dst, [0; 8]);
    }
}
