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
//! holds `src[..bytes]`, as this thread sees it. The widest store the CPU has is chosen at run
//! time (AVX-512F: 64 bytes, AVX: 32, else SSE2's 16, which every x86-64 has); the head up
//! to the first 64-byte boundary of `dst` and the tail are written four bytes at a time with
//! non-temporal `movnti` (an ordinary store there read the line from memory first, which cost
//! the gain when outputs start 16 bytes past a line), any bytes left over with ordinary ones.
//!
//! `unsafe` here: the intrinsics (the AVX and AVX-512 ones called only after run-time
//! detection) and the entry point JIT code calls with raw pointers (its caller vouches).

/// Copies `bytes` bytes from `src` to `dst` with non-temporal stores where aligned.
///
/// # Safety
/// `src` must be valid for reads and `dst` for writes of `bytes` bytes (none if `bytes <=
/// 0`), and the two ranges must not overlap.
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
    use std::arch::is_x86_feature_detected as has;
    if has!("avx512f") {
        // SAFETY: AVX-512F was detected; the caller vouches for the ranges.
        unsafe { stream_lines_avx512(dst, src, lines) }
    } else if has!("avx") {
        // SAFETY: AVX was detected; as above.
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
    use super::weft_stream_copy;

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
        use std::arch::is_x86_feature_detected as has;
        let src: Vec<u8> = (0..640u32).map(|i| (i * 13 + 1) as u8).collect();
        type Lines = unsafe fn(*mut u8, *const u8, usize);
        let mut paths: Vec<(&str, Lines)> = vec![("sse2", super::stream_lines_sse2)];
        if has!("avx") {
            paths.push(("avx", super::stream_lines_avx));
        }
        if has!("avx512f") {
            paths.push(("avx512", super::stream_lines_avx512));
        }
        for (name, copy) in paths {
            let mut dst = vec![0u8; 640 + 64];
            let at = dst.as_ptr().align_offset(64);
            // SAFETY: `at + 576 <= 704`: nine lines lie within `dst`, 64-byte aligned at `at`,
            // and within `src`; the feature the function needs was detected above.
            unsafe { copy(dst.as_mut_ptr().add(at), src.as_ptr(), 9) };
            assert_eq!(&dst[at..at + 576], &src[..576], "{name}");
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
