//! The f64 sum of f32 terms read from a contiguous span — `x`, `x − u`, `u − x`, or the square
//! of one of those — which JIT kernels call for a whole sum loop (layernorm's mean and
//! variance passes, an l2 norm): the loop's vector code, the combine of its partials, its
//! scalar tail and its f64 re-run are one call instead of some 60 Cranelift instructions, so
//! the kernel compiles in less time (docs/benchmarks.md).
//!
//! Assumes a span valid for reads. Guarantees the bits of the JIT loop it replaces
//! (`compiler/src/codegen/translate.rs`: `emit_loop` with f32 partials), step by step:
//! element `i` below `len − len % width` is added in f32 into partial `i mod width` in
//! increasing `i` (partials start at −0); the partials combine as the loop's four-lane
//! vectors do (vector `j` is partials `4j..4j+4`: the vectors summed in order, then the four
//! lanes in order), widen to f64 and add to the accumulator's value `init`; the tail adds each
//! remaining term widened to f64, in order; and if the total is not finite (an f32 partial
//! may have overflowed where f64 would not), the sum restarts from `init` adding every term
//! widened to f64, in order. Each term is computed in f32 as the loop computes it (a
//! subtraction, then a multiplication, never fused). The vector paths (AVX-512F: `width / 16`
//! vectors of sixteen lanes; AVX2: `width / 8` of eight) hold partial `i mod width` in lane
//! `i mod width` of their accumulators, so they add the same numbers in the same order as
//! the scalar path; the unit tests compare every path the CPU has with it bit for bit.
//!
//! `unsafe` here: the AVX2 and AVX-512 intrinsics (through `vmath::simd::Lanes`, called only
//! where the host `Target` has them) and the entry point JIT code calls with a raw pointer and
//! length (its caller vouches for them).

use crate::prefetch::{Prefetch, PrefetchCursor};
use crate::target::Isa;
use crate::vmath::path;

/// The most partials a sum may have: the JIT's widest f32 sum step (four lanes × eight
/// parts).
pub const MAX_WIDTH: usize = 32;

/// How each element `x` of the span becomes a term, before squaring ([`SumTerm::square`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SumArg {
    /// `x` itself.
    Plain,
    /// `x − shift`.
    LessShift,
    /// `shift − x`.
    ShiftLess,
}

/// The term a sum adds for each element: its [`SumArg`], squared or not.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SumTerm {
    /// The argument.
    pub arg: SumArg,
    /// The value subtracted or subtracted from (unused by [`SumArg::Plain`]).
    pub shift: f32,
    /// Whether the argument is squared (`a · a`).
    pub square: bool,
}

impl SumTerm {
    /// The form code JIT kernels pass: the argument in bits 0–1 (0 plain, 1 less the shift,
    /// 2 the shift less), squared when bit 2 is set.
    pub fn form(arg: SumArg, square: bool) -> u64 {
        let arg = match arg {
            SumArg::Plain => 0,
            SumArg::LessShift => 1,
            SumArg::ShiftLess => 2,
        };
        arg | (u64::from(square) << 2)
    }

    /// The term of form code `form` (see [`SumTerm::form`]; other argument bits read as
    /// plain) with `shift`.
    fn from_form(form: u64, shift: f32) -> SumTerm {
        let arg = match form & 3 {
            1 => SumArg::LessShift,
            2 => SumArg::ShiftLess,
            _ => SumArg::Plain,
        };
        SumTerm {
            arg,
            shift,
            square: form & 4 != 0,
        }
    }

    /// The term of element `x`, in f32.
    #[inline(always)]
    fn of(self, x: f32) -> f32 {
        let a = match self.arg {
            SumArg::Plain => x,
            SumArg::LessShift => x - self.shift,
            SumArg::ShiftLess => self.shift - x,
        };
        if self.square {
            a * a
        } else {
            a
        }
    }
}

/// A sum's partial count is valid: whole vectors of every path, 16 or 32 (at most
/// [`MAX_WIDTH`], a power of two).
pub fn valid_width(width: usize) -> bool {
    width == 16 || width == MAX_WIDTH
}

/// The sum of `term` over `xs`, from `init`, with `width` f32 partials, as the JIT loop of
/// that width computes it (see the module documentation); prefetching `prefetch` as it goes.
///
/// # Panics
/// If `width` is not [`valid_width`].
pub fn sum_f32(term: SumTerm, xs: &[f32], width: usize, init: f64, prefetch: Prefetch) -> f64 {
    assert!(valid_width(width), "a span sum of {width} partials");
    // SAFETY: `xs` holds `xs.len()` f32s; the width is valid.
    unsafe { run(term, xs.as_ptr(), xs.len(), width, init, prefetch) }
}

/// The entry point JIT kernels call: `*acc` becomes the sum, from `*acc`, of the term of
/// `mode`'s form (bits 0–7, see [`SumTerm::form`]) with `shift` over the `len` f32s at `src`
/// with `mode >> 8` f32 partials (see the module documentation), prefetching `bytes` from
/// `at` meanwhile (any address: a prefetch never faults). A width that is not
/// [`valid_width`] sums as the scalar f64 loop does (the re-run alone). The accumulator goes
/// through memory, not a return register, so the call can keep every register (see
/// [`weft_sum_f32_span_keeping`]).
///
/// # Safety
/// `src` must be valid for reads of `len` f32s, aligned to 4 bytes, with no other reference
/// writing them during the call (a kernel passes a span of a buffer within its length,
/// checked by the loop-IR verifier); `acc` valid for reading and writing an f64.
pub unsafe extern "C" fn weft_sum_f32_span(
    src: *const f32,
    len: usize,
    mode: u64,
    acc: *mut f64,
    at: *const u8,
    bytes: usize,
    shift: f32,
) {
    let term = SumTerm::from_form(mode & 0xff, shift);
    let width = usize::try_from(mode >> 8).unwrap_or(0);
    // SAFETY: the caller's contract.
    let init = unsafe { *acc };
    let total = if valid_width(width) {
        // SAFETY: the caller's contract; the width is valid.
        unsafe { run(term, src, len, width, init, Prefetch { at, bytes }) }
    } else {
        // SAFETY: the caller's contract.
        unsafe { rerun(term, src, len, init) }
    };
    // SAFETY: the caller's contract.
    unsafe { *acc = total };
}

/// The `mode` argument of [`weft_sum_f32_span`]: `form` (see [`SumTerm::form`]) and `width`.
pub fn sum_mode(form: u64, width: u32) -> u64 {
    form | (u64::from(width) << 8)
}

/// [`weft_sum_f32_span`] keeping every register: JIT kernels call it with Cranelift's
/// `preserve_all` convention, so values live across the call — a row loop's buffer
/// addresses, its constants — stay in registers instead of being spilled and reloaded inside
/// the loops after it (layernorm's output pass reloaded two addresses and stored them back
/// every step when its two sums were ordinary calls: 10–17% slower).
///
/// # Safety
/// As for [`weft_sum_f32_span`].
#[cfg(target_arch = "x86_64")]
// SAFETY: the body saves the nine general registers a System V call may clobber (`rbx`, `rbp`
// and `r12`–`r15` the callee keeps itself) and `xmm0`–`xmm15` on the stack, keeping it
// 16-byte aligned at the call (entry `rsp ≡ 8 mod 16`, ten pushes, 264 bytes), calls the
// routine with the arguments still in their registers, and restores them all. The JIT's code
// uses only the low 128 bits of `xmm0`–`xmm15`, which the saves cover; the routine's own
// wider registers are its business (it ends with `vzeroupper` where it used them).
#[unsafe(naked)]
#[export_name = "weft_sum_f32_span"]
pub unsafe extern "C" fn weft_sum_f32_span_keeping(
    src: *const f32,
    len: usize,
    mode: u64,
    acc: *mut f64,
    at: *const u8,
    bytes: usize,
    shift: f32,
) {
    std::arch::naked_asm!(
        "push rbp",
        "mov rbp, rsp",
        "push rax",
        "push rcx",
        "push rdx",
        "push rsi",
        "push rdi",
        "push r8",
        "push r9",
        "push r10",
        "push r11",
        "sub rsp, 264",
        "movdqu [rsp], xmm0",
        "movdqu [rsp + 16], xmm1",
        "movdqu [rsp + 32], xmm2",
        "movdqu [rsp + 48], xmm3",
        "movdqu [rsp + 64], xmm4",
        "movdqu [rsp + 80], xmm5",
        "movdqu [rsp + 96], xmm6",
        "movdqu [rsp + 112], xmm7",
        "movdqu [rsp + 128], xmm8",
        "movdqu [rsp + 144], xmm9",
        "movdqu [rsp + 160], xmm10",
        "movdqu [rsp + 176], xmm11",
        "movdqu [rsp + 192], xmm12",
        "movdqu [rsp + 208], xmm13",
        "movdqu [rsp + 224], xmm14",
        "movdqu [rsp + 240], xmm15",
        "call {sum}",
        "movdqu xmm0, [rsp]",
        "movdqu xmm1, [rsp + 16]",
        "movdqu xmm2, [rsp + 32]",
        "movdqu xmm3, [rsp + 48]",
        "movdqu xmm4, [rsp + 64]",
        "movdqu xmm5, [rsp + 80]",
        "movdqu xmm6, [rsp + 96]",
        "movdqu xmm7, [rsp + 112]",
        "movdqu xmm8, [rsp + 128]",
        "movdqu xmm9, [rsp + 144]",
        "movdqu xmm10, [rsp + 160]",
        "movdqu xmm11, [rsp + 176]",
        "movdqu xmm12, [rsp + 192]",
        "movdqu xmm13, [rsp + 208]",
        "movdqu xmm14, [rsp + 224]",
        "movdqu xmm15, [rsp + 240]",
        "add rsp, 264",
        "pop r11",
        "pop r10",
        "pop r9",
        "pop r8",
        "pop rdi",
        "pop rsi",
        "pop rdx",
        "pop rcx",
        "pop rax",
        "pop rbp",
        "ret",
        sum = sym weft_sum_f32_span,
    )
}

/// [`weft_sum_f32_span`] elsewhere (JIT kernels run only on x86-64).
///
/// # Safety
/// As for [`weft_sum_f32_span`].
#[cfg(not(target_arch = "x86_64"))]
#[export_name = "weft_sum_f32_span"]
pub unsafe extern "C" fn weft_sum_f32_span_keeping(
    src: *const f32,
    len: usize,
    mode: u64,
    acc: *mut f64,
    at: *const u8,
    bytes: usize,
    shift: f32,
) {
    // SAFETY: the caller's contract.
    unsafe { weft_sum_f32_span(src, len, mode, acc, at, bytes, shift) }
}

/// The sum on this CPU's path.
///
/// # Safety
/// `len` f32s at `src` (as for [`weft_sum_f32_span`]); `width` is [`valid_width`].
unsafe fn run(
    term: SumTerm,
    src: *const f32,
    len: usize,
    width: usize,
    init: f64,
    prefetch: Prefetch,
) -> f64 {
    // A power of two (`valid_width`): no division.
    let whole = len & !(width - 1);
    // SAFETY (each arm): the caller's contract; the host `Target` has the path's features.
    let settled = match path() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512F => unsafe { avx512::settled(term, src, whole, width, prefetch) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { avx2::settled(term, src, whole, width, prefetch) },
        _ => unsafe { settled_scalar(term, src, whole, width, prefetch) },
    };
    // SAFETY (both): the caller's contract, `whole <= len`.
    let total = unsafe { add_widened(term, src, whole..len, init + f64::from(settled)) };
    if total.is_finite() {
        total
    } else {
        unsafe { rerun(term, src, len, init) }
    }
}

/// The JIT loop's four-lane vectors of partials (vector `j` is partials `4j..4j+4`)
/// combined as it combines them: each added to the running vector in order, then that
/// vector's four lanes in order.
fn settle(vectors: impl IntoIterator<Item = [f32; 4]>) -> f32 {
    let mut vectors = vectors.into_iter();
    let mut v = vectors.next().unwrap_or([-0.0; 4]);
    for part in vectors {
        for (lane, x) in v.iter_mut().zip(part) {
            *lane += x;
        }
    }
    ((v[0] + v[1]) + v[2]) + v[3]
}

/// Every term widened to f64 and added to `init` in order: the loop's re-run.
///
/// # Safety
/// `len` f32s at `src`.
unsafe fn rerun(term: SumTerm, src: *const f32, len: usize, init: f64) -> f64 {
    // SAFETY: the caller's contract.
    unsafe { add_widened(term, src, 0..len, init) }
}

/// `total` plus the terms of elements `range` of `src`, each widened to f64, in order: the
/// loop's scalar steps (its tail, its re-run).
///
/// # Safety
/// `range.end` f32s at `src`.
unsafe fn add_widened(
    term: SumTerm,
    src: *const f32,
    range: std::ops::Range<usize>,
    mut total: f64,
) -> f64 {
    for i in range {
        // SAFETY: `i < range.end`.
        total += f64::from(term.of(unsafe { *src.add(i) }));
    }
    total
}

/// The settled partials of the first `whole` elements (a multiple of `width`), one element
/// at a time.
///
/// # Safety
/// `whole` f32s at `src`; `width` is [`valid_width`].
unsafe fn settled_scalar(
    term: SumTerm,
    src: *const f32,
    whole: usize,
    width: usize,
    prefetch: Prefetch,
) -> f32 {
    let mut partials = [-0.0f32; MAX_WIDTH];
    let mut lines = PrefetchCursor::new(prefetch, whole / width);
    for step in (0..whole).step_by(width) {
        lines.step();
        for (j, p) in partials[..width].iter_mut().enumerate() {
            // SAFETY: `step + j < whole`.
            *p += term.of(unsafe { *src.add(step + j) });
        }
    }
    settle(
        partials[..width]
            .chunks_exact(4)
            .map(|c| [c[0], c[1], c[2], c[3]]),
    )
}

#[cfg(target_arch = "x86_64")]
mod simd {
    //! The partials' loop over `vmath`'s [`Lanes`], instantiated for AVX2 and AVX-512F.

    use super::{SumArg, SumTerm, MAX_WIDTH};
    use crate::prefetch::{Prefetch, PrefetchCursor};
    use crate::vmath::simd::Lanes;
    use std::arch::x86_64::*;

    /// A vector of lanes whose four-lane quarters can be taken out.
    pub(super) trait Quarters: Lanes {
        /// Lanes `4j..4j+4`.
        ///
        /// # Safety
        /// The trait's contract; `j < N / 4`.
        unsafe fn quarter(self, j: usize) -> __m128;
    }

    /// The term of the `V::N` elements at `src`, as [`SumTerm::of`] computes each lane.
    ///
    /// # Safety
    /// The trait's contract; `V::N` f32s at `src`.
    #[inline(always)]
    unsafe fn term<V: Lanes, const ARG: u8, const SQUARE: bool>(src: *const f32, shift: V) -> V {
        // SAFETY: the caller's contract.
        unsafe {
            let x = V::load(src);
            let a = match ARG {
                0 => x,
                1 => x.sub(shift),
                _ => shift.sub(x),
            };
            if SQUARE {
                a.mul(a)
            } else {
                a
            }
        }
    }

    /// The settled partials of the first `whole` elements with `A` accumulators of `V::N`
    /// lanes (`A · V::N` is the width): accumulator `a`, lane `q` holds partial `a · N + q`;
    /// their four-lane quarters, in partial order, combined by [`super::settle`].
    ///
    /// # Safety
    /// The trait's contract; `whole` (a multiple of `A · N`) f32s at `src`.
    #[inline(always)]
    unsafe fn run<V: Quarters, const A: usize, const ARG: u8, const SQUARE: bool>(
        shift: f32,
        src: *const f32,
        whole: usize,
        prefetch: Prefetch,
    ) -> f32 {
        let step = A * V::N;
        let mut lines = PrefetchCursor::new(prefetch, whole / step);
        // SAFETY (the block): the caller's contract; every load is below `whole`, every
        // quarter below `N / 4`.
        unsafe {
            let shift = V::splat(shift);
            let mut acc = [V::splat(-0.0); A];
            let mut i = 0;
            while i < whole {
                lines.step();
                for (a, v) in acc.iter_mut().enumerate() {
                    *v = v.add(term::<V, ARG, SQUARE>(src.add(i + a * V::N), shift));
                }
                i += step;
            }
            let mut quarters = [[0f32; 4]; MAX_WIDTH / 4];
            let mut n = 0;
            for x in &acc {
                for j in 0..V::N / 4 {
                    _mm_storeu_ps(quarters[n].as_mut_ptr(), x.quarter(j));
                    n += 1;
                }
            }
            super::settle(quarters[..n].iter().copied())
        }
    }

    /// [`run`] for `term` and width `A · V::N`, one loop per form so each is straight-line.
    ///
    /// # Safety
    /// As for [`run`].
    #[inline(always)]
    pub(super) unsafe fn by_form<V: Quarters, const A: usize>(
        term: SumTerm,
        src: *const f32,
        whole: usize,
        prefetch: Prefetch,
    ) -> f32 {
        let s = term.shift;
        // SAFETY: the caller's contract.
        unsafe {
            match (term.arg, term.square) {
                (SumArg::Plain, false) => run::<V, A, 0, false>(s, src, whole, prefetch),
                (SumArg::LessShift, false) => run::<V, A, 1, false>(s, src, whole, prefetch),
                (SumArg::ShiftLess, false) => run::<V, A, 2, false>(s, src, whole, prefetch),
                (SumArg::Plain, true) => run::<V, A, 0, true>(s, src, whole, prefetch),
                (SumArg::LessShift, true) => run::<V, A, 1, true>(s, src, whole, prefetch),
                (SumArg::ShiftLess, true) => run::<V, A, 2, true>(s, src, whole, prefetch),
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::simd::Quarters;
    use super::SumTerm;
    use crate::prefetch::Prefetch;
    use std::arch::x86_64::*;

    impl Quarters for __m256 {
        #[inline(always)]
        unsafe fn quarter(self, j: usize) -> __m128 {
            // SAFETY: reached only from `settled` below, compiled with AVX2.
            unsafe {
                if j == 0 {
                    _mm256_castps256_ps128(self)
                } else {
                    _mm256_extractf128_ps::<1>(self)
                }
            }
        }
    }

    /// The settled partials on AVX2: `width / 8` accumulators of eight lanes.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `whole` (a multiple of the valid `width`) f32s at `src`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn settled(
        term: SumTerm,
        src: *const f32,
        whole: usize,
        width: usize,
        prefetch: Prefetch,
    ) -> f32 {
        // SAFETY: compiled with AVX2 and FMA, which the caller detected; its contract.
        unsafe {
            if width == 16 {
                super::simd::by_form::<__m256, 2>(term, src, whole, prefetch)
            } else {
                super::simd::by_form::<__m256, 4>(term, src, whole, prefetch)
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::simd::Quarters;
    use super::SumTerm;
    use crate::prefetch::Prefetch;
    use std::arch::x86_64::*;

    impl Quarters for __m512 {
        #[inline(always)]
        unsafe fn quarter(self, j: usize) -> __m128 {
            // SAFETY: reached only from `settled` below, compiled with AVX-512F.
            unsafe {
                match j {
                    0 => _mm512_castps512_ps128(self),
                    1 => _mm512_extractf32x4_ps::<1>(self),
                    2 => _mm512_extractf32x4_ps::<2>(self),
                    _ => _mm512_extractf32x4_ps::<3>(self),
                }
            }
        }
    }

    /// The settled partials on AVX-512F: `width / 16` accumulators of sixteen lanes.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; `whole` (a multiple of the valid `width`) f32s at `src`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn settled(
        term: SumTerm,
        src: *const f32,
        whole: usize,
        width: usize,
        prefetch: Prefetch,
    ) -> f32 {
        // SAFETY: compiled with AVX-512F, which the caller detected; its contract.
        unsafe {
            if width == 16 {
                super::simd::by_form::<__m512, 1>(term, src, whole, prefetch)
            } else {
                super::simd::by_form::<__m512, 2>(term, src, whole, prefetch)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every form, width and path the CPU has gives the scalar path's bits, over lengths with
    /// and without a tail and values with every edge: NaN, ±inf, −0 only, and sums whose f32
    /// partials overflow (the re-run).
    #[test]
    fn every_path_gives_the_scalar_bits() {
        let mut rng = weft_ir::perturb::SplitMix(0x2545_f491_4f6c_dd1d);
        let mut next = move || rng.next_u64();
        let edges = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            3e38,
            -3e38,
        ];
        for len in [0usize, 5, 16, 37, 64, 100, 4099] {
            for case in 0..4 {
                let xs: Vec<f32> = (0..len)
                    .map(|i| match case {
                        0 => ((next() >> 40) as f32 / (1u64 << 24) as f32) * 8.0 - 4.0,
                        1 if next() % 16 == 0 => edges[i % edges.len()],
                        1 => (next() >> 40) as f32 - 8e6,
                        2 => -0.0,
                        _ => 2e38 + (i % 3) as f32 * 1e37,
                    })
                    .collect();
                for form in 0..8 {
                    let term = SumTerm::from_form(form, 1.5);
                    for width in [16, 32] {
                        // SAFETY: `xs` holds `len` f32s; the width is valid.
                        let scalar = unsafe {
                            let whole = len - len % width;
                            let p = Prefetch::NONE;
                            let s = settled_scalar(term, xs.as_ptr(), whole, width, p);
                            let mut t = 0.25 + f64::from(s);
                            for &x in &xs[whole..] {
                                t += f64::from(term.of(x));
                            }
                            if t.is_finite() {
                                t
                            } else {
                                rerun(term, xs.as_ptr(), len, 0.25)
                            }
                        };
                        let got = sum_f32(term, &xs, width, 0.25, Prefetch::NONE);
                        let same =
                            got.to_bits() == scalar.to_bits() || got.is_nan() && scalar.is_nan();
                        assert!(
                            same,
                            "len {len} case {case} form {form} width {width}: {got} vs {scalar}"
                        );
                    }
                }
            }
        }
    }

    /// The partials follow the JIT loop's layout: summing `[1, 2, 3, …]` into 16 partials and
    /// combining them as four-lane vectors gives the exact total; an overflowing f32 partial
    /// re-runs in f64; a sum of −0s stays −0; NaN stays NaN.
    #[test]
    fn sums_are_the_loops() {
        let xs: Vec<f32> = (1..=1000).map(|i| i as f32).collect();
        let plain = SumTerm::from_form(0, 0.0);
        assert_eq!(sum_f32(plain, &xs, 16, 0.0, Prefetch::NONE), 500_500.0);
        let squares = SumTerm::from_form(SumTerm::form(SumArg::LessShift, true), 1.0);
        // Every partial and the combine exact in f32 (below 2^24).
        let want: f64 = (0..100).map(|i| f64::from(i * i)).sum();
        assert_eq!(sum_f32(squares, &xs[..100], 32, 0.0, Prefetch::NONE), want);
        let big = vec![3e38f32; 64];
        assert_eq!(
            sum_f32(plain, &big, 16, 0.0, Prefetch::NONE),
            64.0 * f64::from(3e38f32)
        );
        let zeros = vec![-0.0f32; 40];
        let z = sum_f32(plain, &zeros, 16, -0.0, Prefetch::NONE);
        assert!(z == 0.0 && z.is_sign_negative());
        let mut nan = xs.clone();
        nan[17] = f32::NAN;
        assert!(sum_f32(plain, &nan, 16, 0.0, Prefetch::NONE).is_nan());
        // An invalid width from JIT code sums as the re-run does; the accumulator's value is
        // where the sum starts.
        let (null, mut acc) = (std::ptr::null(), 0.5);
        // SAFETY: `xs` holds 1000 f32s; `acc` is an f64.
        unsafe { weft_sum_f32_span(xs.as_ptr(), 1000, sum_mode(0, 12), &mut acc, null, 0, 0.0) };
        assert_eq!(acc, 500_500.5);
        // Through the register-keeping trampoline, with a valid width.
        let mut acc = 0.25;
        // SAFETY: as above.
        unsafe {
            let mode = sum_mode(0, 16);
            weft_sum_f32_span_keeping(xs.as_ptr(), 1000, mode, &mut acc, null, 0, 0.0)
        };
        assert_eq!(acc, 500_500.25);
    }

    /// Prefetching changes no result.
    #[test]
    fn prefetching_changes_no_result() {
        let xs: Vec<f32> = (0..5000).map(|i| (i as f32 * 0.37).sin()).collect();
        let other = vec![0u8; 20_000];
        let prefetch = Prefetch {
            at: other.as_ptr(),
            bytes: other.len(),
        };
        for form in 0..8 {
            let term = SumTerm::from_form(form, 0.5);
            let plain = sum_f32(term, &xs, 16, 0.0, Prefetch::NONE);
            let fetching = sum_f32(term, &xs, 16, 0.0, prefetch);
            assert_eq!(plain.to_bits(), fetching.to_bits());
        }
    }
}
