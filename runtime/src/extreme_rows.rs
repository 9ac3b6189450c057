//! Extremes down columns: a row of f32 accumulators folded with the same columns of several
//! rows a stride apart — the step of a maximum or minimum over a strided axis in memory order
//! (`compiler/src/reduce_in_memory.rs`: 8 rows jammed), which JIT kernels call instead of
//! their 128-bit loop. Cranelift's f32x4 `fmax`, with NaN and signed-zero semantics, is eight
//! instructions a vector; this routine folds sixteen lanes in four.
//!
//! Assumes spans valid for the reads and writes its entry names. Guarantees: each accumulator
//! ends as the fold of itself and its column's terms by `weft_ir::scalar::reduce_max` (or
//! `reduce_min`): NaN if any is NaN, `−0 < +0`, otherwise the exact extreme — an order-free
//! rule, so the bits are those of the kernel's own loop (a NaN's sign and payload aside, as
//! everywhere). With a prefetch address, it asks for each row's columns there (a later step's
//! rows, the same stride apart), a line per row per sixteen columns, as it goes. The path is
//! chosen at run time (`vmath::path`): the per-lane rule compiled for AVX-512F or AVX2, else
//! plain code; the unit tests compare every path the CPU has with the scalar fold.
//!
//! `unsafe` here: the entry point JIT code calls with raw pointers, and the `#[target_feature]`
//! copies called only where the host `Target` has them.

use crate::extreme::Extreme;
use crate::target::Isa;
use crate::vmath::path;

/// Columns folded a step: one AVX-512 vector, one cache line of each row.
const STEP: usize = 16;

/// The entry point JIT kernels call: for each column `i < len`, `acc[i]` folded with
/// `src[r·stride + i]` for `r < rows`, the maximum (`min` 0) or minimum (otherwise); where
/// `ahead` is not null, the lines of `ahead[r·stride + i]` for the same rows and columns
/// prefetched as it goes.
///
/// # Safety
/// `acc` must be valid for reads and writes of `len` f32s and `src + r·stride` for reads of
/// `len` f32s for every `r < rows`, all aligned to 4 bytes, with no other reference touching
/// them during the call and the accumulators not among the rows read (a kernel passes spans
/// of its buffers within their lengths, checked by the loop-IR verifier). `ahead` is only
/// prefetched, never read: any address will do.
#[no_mangle]
pub unsafe extern "C" fn weft_extreme_rows_f32(
    acc: *mut f32,
    src: *const f32,
    stride: isize,
    rows: usize,
    len: usize,
    min: usize,
    ahead: *const f32,
) {
    let kind = if min == 0 { Extreme::Max } else { Extreme::Min };
    let rows = Rows {
        src,
        stride,
        count: rows,
        ahead,
    };
    // SAFETY (each arm): the caller's contract; the host `Target` has the path's features.
    match path() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512F => unsafe { fold_avx512(kind, acc, &rows, len) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { fold_avx2(kind, acc, &rows, len) },
        _ => unsafe { fold(kind, acc, &rows, len) },
    }
}

/// The rows a call folds in, and where to prefetch.
struct Rows {
    src: *const f32,
    stride: isize,
    count: usize,
    ahead: *const f32,
}

/// `a` and `x` by the reduction's rule, without a branch: NaN if either is (their sum), a tie
/// (equal values; only `−0` against `+0` differ in bits) the bits of both anded (a maximum:
/// `+0`) or ored (a minimum: `−0`), else the larger (smaller).
#[inline(always)]
fn step(kind: Extreme, a: f32, x: f32) -> f32 {
    let (bits_a, bits_x) = (a.to_bits(), x.to_bits());
    let (better, tie) = match kind {
        Extreme::Max => (if a > x { a } else { x }, bits_a & bits_x),
        Extreme::Min => (if a < x { a } else { x }, bits_a | bits_x),
    };
    let settled = if a == x { f32::from_bits(tie) } else { better };
    if a.is_nan() || x.is_nan() {
        a + x
    } else {
        settled
    }
}

/// The fold (see [`weft_extreme_rows_f32`]), sixteen columns a step, each step's lines of the
/// prefetch rows asked for; the compiler vectorises the step with its caller's features.
///
/// # Safety
/// As for [`weft_extreme_rows_f32`].
#[inline(always)]
unsafe fn fold(kind: Extreme, acc: *mut f32, rows: &Rows, len: usize) {
    let mut i = 0;
    while i + STEP <= len {
        let mut lanes = [0f32; STEP];
        // SAFETY: `i + STEP <= len`: within the accumulators and each row (the caller's
        // contract).
        unsafe {
            std::ptr::copy_nonoverlapping(acc.add(i), lanes.as_mut_ptr(), STEP);
            for r in 0..rows.count {
                let row = rows.src.offset(r as isize * rows.stride).add(i);
                for (j, lane) in lanes.iter_mut().enumerate() {
                    *lane = step(kind, *lane, *row.add(j));
                }
                if !rows.ahead.is_null() {
                    let at = rows
                        .ahead
                        .wrapping_offset(r as isize * rows.stride + i as isize);
                    crate::prefetch::prefetch_line(at.cast());
                }
            }
            std::ptr::copy_nonoverlapping(lanes.as_ptr(), acc.add(i), STEP);
        }
        i += STEP;
    }
    for i in i..len {
        // SAFETY: `i < len`, as above.
        unsafe {
            let mut a = *acc.add(i);
            for r in 0..rows.count {
                a = step(kind, a, *rows.src.offset(r as isize * rows.stride).add(i));
            }
            *acc.add(i) = a;
        }
    }
}

/// [`fold`] compiled for AVX-512F.
///
/// # Safety
/// As for [`weft_extreme_rows_f32`]; the CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn fold_avx512(kind: Extreme, acc: *mut f32, rows: &Rows, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { fold(kind, acc, rows, len) }
}

/// [`fold`] compiled for AVX2.
///
/// # Safety
/// As for [`weft_extreme_rows_f32`]; the CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fold_avx2(kind: Extreme, acc: *mut f32, rows: &Rows, len: usize) {
    // SAFETY: the caller's contract.
    unsafe { fold(kind, acc, rows, len) }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Fold = unsafe fn(Extreme, *mut f32, &Rows, usize);

    /// The plain fold and each vector copy this CPU can run.
    fn paths() -> Vec<Fold> {
        let mut out: Vec<Fold> = vec![fold];
        #[cfg(target_arch = "x86_64")]
        {
            let host = crate::target::Target::host().features;
            if host.avx512f {
                out.push(fold_avx512);
            }
            if host.avx2 {
                out.push(fold_avx2);
            }
        }
        out
    }

    /// Every column is the scalar rule's fold (`weft_ir::scalar`), on every path this CPU has,
    /// over values with NaNs of either sign, both zeros, infinities and subnormals, lengths
    /// around the step, 1 to 9 rows a stride apart, with and without a prefetch address.
    #[test]
    fn columns_fold_by_the_reduction_rule() {
        let mut next = crate::extreme::tests::xorshift(0x2545_f491);
        let specials = crate::extreme::tests::SPECIALS;
        for len in [0usize, 1, 15, 16, 17, 40, 100] {
            for rows in 1..=9usize {
                let stride = len + 3;
                let mut value = || match next() % 8 {
                    0 => specials[next() as usize % specials.len()],
                    _ => (next() % 2000) as f32 / 100.0 - 10.0,
                };
                let src: Vec<f32> = (0..rows * stride).map(|_| value()).collect();
                let start: Vec<f32> = (0..len).map(|_| value()).collect();
                for kind in [Extreme::Max, Extreme::Min] {
                    let want: Vec<f32> = (0..len)
                        .map(|i| {
                            (0..rows).fold(start[i], |a, r| {
                                let (a, x) = (f64::from(a), f64::from(src[r * stride + i]));
                                (match kind {
                                    Extreme::Max => weft_ir::scalar::reduce_max(a, x),
                                    Extreme::Min => weft_ir::scalar::reduce_min(a, x),
                                }) as f32
                            })
                        })
                        .collect();
                    for (ahead, path) in [std::ptr::null(), src.as_ptr()]
                        .into_iter()
                        .flat_map(|a| paths().into_iter().map(move |p| (a, p)))
                    {
                        let mut acc = start.clone();
                        let r = Rows {
                            src: src.as_ptr(),
                            stride: stride as isize,
                            count: rows,
                            ahead,
                        };
                        // SAFETY: `acc` holds `len` f32s, and each of the `rows` rows
                        // `stride >= len` apart in `src` holds `len`; `paths` lists only the
                        // paths this CPU has.
                        unsafe { path(kind, acc.as_mut_ptr(), &r, len) };
                        for (i, (got, want)) in acc.iter().zip(&want).enumerate() {
                            assert!(
                                got.to_bits() == want.to_bits() || got.is_nan() && want.is_nan(),
                                "{kind:?} len {len} rows {rows} column {i}: {got} against {want}"
                            );
                        }
                    }
                }
            }
        }
    }
}
