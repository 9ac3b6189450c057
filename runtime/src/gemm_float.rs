//! The element types GEMM calls run on (f32, f64) and the scans of their results and
//! operands: the `gemm` crate's entry point per type, the per-thread scratch, the
//! interpreter's accumulation, and the branch-free vector scans the fix-up (zeros,
//! infinities, NaNs) and the overflow bound (largest magnitudes) read — one home for what
//! both GEMM engines (the crate's calls and [`crate::gemm_tiles`]) ask of an element.
//!
//! Assumes: a scan's `width` is one the CPU has (`vmath::path` or
//! `Target::runnable_isas`). Guarantees: every width gives the scalar answer.
//!
//! `unsafe` here: the calls of the crate's raw-pointer `gemm` (the caller's contract) and
//! of the scans compiled for a wider ISA than the build's (the width's contract).

use crate::target::Isa;

/// Whether any element of `row` is zero, infinite or NaN ([`Float::special`]), in the
/// vectors of `width` (scalar: the build's baseline).
pub(crate) fn any_special<T: Float>(row: &[T], width: Isa) -> bool {
    #[cfg(target_arch = "x86_64")]
    match width {
        // SAFETY: `vmath::path` chose each path only where the CPU has it.
        Isa::Avx512F => return unsafe { any_special_avx512(row) },
        // SAFETY: as above.
        Isa::Avx2Fma => return unsafe { any_special_avx2(row) },
        Isa::Scalar => {}
    }
    let _ = width;
    any_special_in(row)
}

/// The largest magnitude in `line`, NaNs ignored, without branches.
pub(crate) fn largest_magnitude<T: Float>(line: &[T], width: Isa) -> f64 {
    #[cfg(target_arch = "x86_64")]
    match width {
        // SAFETY: `vmath::path` chose each path only where the CPU has it.
        Isa::Avx512F => return unsafe { largest_magnitude_avx512(line) },
        // SAFETY: as above.
        Isa::Avx2Fma => return unsafe { largest_magnitude_avx2(line) },
        Isa::Scalar => {}
    }
    let _ = width;
    largest_magnitude_in(line)
}

/// The largest magnitude of an f32 or f64 array's elements, NaNs ignored, at the host's
/// widest vectors; `None` for other element types.
pub(crate) fn largest_magnitude_of(data: &weft_ir::host::ArrayData) -> Option<f64> {
    use weft_ir::host::ArrayData;
    let width = crate::vmath::path();
    match data {
        ArrayData::F32(v) => Some(largest_magnitude(v, width)),
        ArrayData::F64(v) => Some(largest_magnitude(v, width)),
        _ => None,
    }
}

/// [`largest_magnitude`]'s reduction (inlined into every caller, so each is compiled for its
/// caller's vectors).
#[inline(always)]
fn largest_magnitude_in<T: Float>(line: &[T]) -> f64 {
    // Sixteen running maxima, one per lane: a single fold's chain does not vectorise.
    let mut lanes = [T::NO_KEY; 16];
    let chunks = line.chunks_exact(16);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (most, x) in lanes.iter_mut().zip(chunk) {
            *most = (*most).max(x.magnitude_key());
        }
    }
    let most = lanes.into_iter().fold(T::NO_KEY, Ord::max);
    T::from_magnitude_key(rest.iter().fold(most, |m, x| m.max(x.magnitude_key())))
}

/// [`largest_magnitude`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn largest_magnitude_avx2<T: Float>(line: &[T]) -> f64 {
    largest_magnitude_in(line)
}

/// [`largest_magnitude`] compiled for AVX-512F.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn largest_magnitude_avx512<T: Float>(line: &[T]) -> f64 {
    largest_magnitude_in(line)
}

/// Whether `row` holds a special element: its largest [`Float::special_key`], without
/// branches (inlined into every caller, so each is compiled for its caller's vectors).
#[inline(always)]
fn any_special_in<T: Float>(row: &[T]) -> bool {
    row.iter()
        .fold(T::NO_KEY, |most, x| most.max(x.special_key()))
        >= T::SPECIAL_KEYS
}

/// Bit `e` set for each special element `e` of `chunk` (at most 64 elements), without branches.
pub(crate) fn special_mask<T: Float>(chunk: &[T], width: Isa) -> u64 {
    #[cfg(target_arch = "x86_64")]
    match width {
        // SAFETY: `vmath::path` chose each path only where the CPU has it.
        Isa::Avx512F => return unsafe { special_mask_avx512(chunk) },
        // SAFETY: as above.
        Isa::Avx2Fma => return unsafe { special_mask_avx2(chunk) },
        Isa::Scalar => {}
    }
    let _ = width;
    special_bits(chunk)
}

/// Bit `e` set for each special element `e` of `chunk`, without branches (inlined into every
/// caller).
#[inline(always)]
fn special_bits<T: Float>(chunk: &[T]) -> u64 {
    chunk
        .iter()
        .enumerate()
        .fold(0, |m, (e, x)| m | (u64::from(x.special()) << e))
}

/// [`special_mask`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn special_mask_avx2<T: Float>(chunk: &[T]) -> u64 {
    special_bits(chunk)
}

/// [`special_mask`] compiled for AVX-512F.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn special_mask_avx512<T: Float>(chunk: &[T]) -> u64 {
    special_bits(chunk)
}

/// [`any_special`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn any_special_avx2<T: Float>(row: &[T]) -> bool {
    any_special_in(row)
}

/// [`any_special`] compiled for AVX-512F: a row of the fix-up's scan is a whole output row
/// that was just computed, 1–2 % of dense_gelu's call at 256 bits (docs/benchmarks.md).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn any_special_avx512<T: Float>(row: &[T]) -> bool {
    any_special_in(row)
}

/// f32 and f64: the crate's entry point and the interpreter's accumulation.
pub(crate) trait Float: Copy + PartialEq {
    const ZERO: Self;
    /// `C ← A·B` (C is not read), or `C ← C + A·B` when `accumulate`.
    ///
    /// # Safety
    /// `gemm::gemm`'s contract: every element addressed in bounds, C's elements distinct
    /// and not overlapping A or B.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm(
        m: usize,
        k: usize,
        n: usize,
        a: *const Self,
        rsa: isize,
        csa: isize,
        b: *const Self,
        rsb: isize,
        csb: isize,
        c: *mut Self,
        rsc: isize,
        csc: isize,
        accumulate: bool,
    );
    /// `self + other` in the element type.
    fn add(self, other: Self) -> Self;
    /// Runs `f` on this thread's scratch of `len` elements (kept between calls, so a
    /// steady-state call allocates nothing).
    fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [Self]) -> R) -> R;
    /// `acc + x·y` in the interpreter's precision (f64; for f32 the product of the widened
    /// operands, exact).
    fn mul_add(acc: f64, x: Self, y: Self) -> f64;
    /// The accumulator rounded to the element type.
    fn finish(acc: f64) -> Self;
    /// Neither infinite nor NaN.
    fn finite(self) -> bool;
    /// `|self|` in f64 (NaN stays NaN).
    fn magnitude(self) -> f64;
    /// The largest finite value of the type, in f64.
    const MAX_FINITE: f64;
    /// Zero (either sign), infinite or NaN: what the fix-up after a call looks at. No branch.
    fn special(self) -> bool {
        self.special_key() >= Self::SPECIAL_KEYS
    }
    /// An unsigned key of the magnitude's bits less one (wrapping): zero wraps to the
    /// largest key, and infinities and NaNs sit above every finite nonzero magnitude, so
    /// `x` is special iff its key is at least [`Self::SPECIAL_KEYS`] — and a row holds a
    /// special element iff its largest key does, a max-reduction with no mask registers.
    fn special_key(self) -> Self::Key;
    /// The bits of [`Self::special_key`].
    type Key: Copy + Ord;
    /// The least key of a special element: infinity's.
    const SPECIAL_KEYS: Self::Key;
    /// The least key there is, where a max-reduction starts.
    const NO_KEY: Self::Key;
    /// The magnitude's bits, NaN's taken as zero's: ordered as the magnitudes are, so the
    /// largest magnitude of a line is a branch-free max-reduction of keys.
    fn magnitude_key(self) -> Self::Key;
    /// The magnitude whose [`Float::magnitude_key`] is `key`, in f64.
    fn from_magnitude_key(key: Self::Key) -> f64;
}

/// `Float` for a type, its `gemm` entry point and its widening to the
/// interpreter's f64 (exact for f32).
macro_rules! float_impl {
    ($t:ty, $gemm:path, $bits:ty) => {
        impl Float for $t {
            const ZERO: $t = 0.0;
            type Key = $bits;
            const SPECIAL_KEYS: $bits = <$t>::INFINITY.to_bits() - 1;
            const NO_KEY: $bits = 0;
            #[inline(always)]
            fn magnitude_key(self) -> $bits {
                let bits = self.to_bits() & !(1 << (<$bits>::BITS - 1));
                if bits > <$t>::INFINITY.to_bits() {
                    0
                } else {
                    bits
                }
            }
            fn from_magnitude_key(key: $bits) -> f64 {
                f64::from(<$t>::from_bits(key))
            }
            #[inline(always)]
            fn special_key(self) -> $bits {
                (self.to_bits() & !(1 << (<$bits>::BITS - 1))).wrapping_sub(1)
            }
            unsafe fn gemm(
                m: usize,
                k: usize,
                n: usize,
                a: *const $t,
                rsa: isize,
                csa: isize,
                b: *const $t,
                rsb: isize,
                csb: isize,
                c: *mut $t,
                rsc: isize,
                csc: isize,
                accumulate: bool,
            ) {
                // SAFETY: forwarded from the caller's contract. `gemm` computes
                // dst ← α·dst + β·lhs·rhs; with `read_dst` false C is only written, with it
                // (α = 1) C's elements are read and added to.
                unsafe {
                    $gemm(
                        m,
                        n,
                        k,
                        c,
                        csc,
                        rsc,
                        accumulate,
                        a,
                        csa,
                        rsa,
                        b,
                        csb,
                        rsb,
                        if accumulate { 1.0 } else { 0.0 },
                        1.0,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
                    )
                }
            }
            fn add(self, other: $t) -> $t {
                self + other
            }
            fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [$t]) -> R) -> R {
                thread_local! {
                    static SCRATCH: std::cell::RefCell<Vec<$t>> = const {
                        std::cell::RefCell::new(Vec::new())
                    };
                }
                SCRATCH.with(|cell| match cell.try_borrow_mut() {
                    Ok(mut v) => {
                        if v.len() < len {
                            v.resize(len, 0.0);
                        }
                        f(&mut v[..len])
                    }
                    // Re-entered (not done by this module): a scratch of its own.
                    Err(_) => f(&mut vec![0.0; len]),
                })
            }
            /// The interpreter's step: the product in the dtype, summed in f64.
            fn mul_add(acc: f64, x: $t, y: $t) -> f64 {
                acc + f64::from(x * y)
            }
            fn finish(acc: f64) -> $t {
                acc as $t
            }
            fn finite(self) -> bool {
                self.is_finite()
            }
            fn magnitude(self) -> f64 {
                f64::from(self.abs())
            }
            const MAX_FINITE: f64 = <$t>::MAX as f64;
        }
    };
}

float_impl!(f32, gemm::gemm::<f32>, u32);
float_impl!(f64, gemm::gemm::<f64>, u64);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every scan width this CPU has finds each special value at every position of rows of
    /// several lengths (vector bodies and tails), agrees with `special_mask`, and passes
    /// rows of ordinary values — the largest finite and the subnormals included.
    fn scans_find_specials<T: Float + std::fmt::Debug>(specials: [T; 5], ordinary: [T; 4]) {
        // This CPU's path and every narrower one.
        for width in crate::target::Target::runnable_isas() {
            for len in [1, 7, 16, 33, 64, 100] {
                let row: Vec<T> = (0..len).map(|i| ordinary[i % ordinary.len()]).collect();
                assert!(!any_special(&row, width), "{width:?}, {len}: {row:?}");
                assert_eq!(special_mask(&row[..len.min(64)], width), 0);
                for at in 0..len {
                    for s in specials {
                        let mut row = row.clone();
                        row[at] = s;
                        assert!(
                            any_special(&row, width),
                            "{width:?}: {s:?} at {at} of {len}"
                        );
                        if at < 64 {
                            assert_eq!(special_mask(&row[..len.min(64)], width), 1 << at);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_fix_ups_scans_find_zeros_infinities_and_nans_at_every_width() {
        let f32s = [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN];
        let f32_ordinary = [f32::MAX, -f32::MAX, 1e-45, -1.5];
        scans_find_specials(f32s, f32_ordinary);
        let f64s = [0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, -f64::NAN];
        let f64_ordinary = [f64::MAX, -f64::MAX, 5e-324, 2.5];
        scans_find_specials(f64s, f64_ordinary);
    }

    /// At every width this CPU has, the overflow scan's largest magnitude of a line is the
    /// scalar maximum of `|x|` with NaNs ignored, wherever the line's largest value, an
    /// infinity or a NaN sits (vector bodies, tails) and whatever its sign.
    fn largest_magnitude_is_the_scalar_maximum<T: Float + std::fmt::Debug>(values: [T; 6]) {
        let expected = |line: &[T]| {
            line.iter()
                .map(|x| x.magnitude())
                .filter(|m| !m.is_nan())
                .fold(0.0, f64::max)
        };
        for width in crate::target::Target::runnable_isas() {
            for len in [0, 1, 15, 16, 17, 40, 100] {
                for rotate in [0, 1, 5] {
                    let line: Vec<T> = (0..len)
                        .map(|i| values[(i + rotate) % values.len()])
                        .collect();
                    let got = largest_magnitude(&line, width);
                    assert_eq!(
                        got.to_bits(),
                        expected(&line).to_bits(),
                        "{width:?}: {line:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_overflow_scan_finds_the_largest_magnitude_at_every_width() {
        let f32s = [f32::NAN, -1.5, 1e-45, -f32::MAX, f32::NEG_INFINITY, 0.25];
        largest_magnitude_is_the_scalar_maximum(f32s);
        largest_magnitude_is_the_scalar_maximum([f32::NAN, -3.0, 2.0, -0.0, 1e-45, -f32::NAN]);
        let f64s = [-f64::NAN, 2.5, 5e-324, f64::MAX, -f64::INFINITY, -7.0];
        largest_magnitude_is_the_scalar_maximum(f64s);
        largest_magnitude_is_the_scalar_maximum([f64::NAN, -3.0, 2.0, 0.0, -1e300, 1.0]);
    }
}
