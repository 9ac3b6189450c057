//! The exact f32 maximum or minimum of a contiguous span, which JIT kernels call for a row's
//! extreme (softmax's row maximum): Cranelift's 128-bit code of that loop takes three vector
//! instructions per four elements (the value and two integer maxima of the bits, to see NaNs
//! and the sign of a zero); a 4096² row max runs 1.2–1.9× faster through the routine.
//!
//! Assumes a span valid for reads. Guarantees the fold of the span by
//! `weft_ir::scalar::reduce_max` (or `reduce_min`) from its identity (−inf, +inf): NaN if any
//! element is NaN, `−0 < +0`, otherwise the exact extreme — an order-free rule, so the result
//! does not depend on the lanes or their order, and a kernel combining it into its accumulator
//! gets the bits its own loop would (a NaN's sign and payload aside, as everywhere). The path
//! is chosen at run time (`vmath::path`): AVX-512F (sixteen lanes, four vectors a step), else
//! AVX2 (eight), else scalar; the unit tests compare every path the CPU has with the scalar
//! fold.
//!
//! `unsafe` here: the AVX2 and AVX-512 intrinsics (called only where the host `Target` has
//! them) and the entry point JIT code calls with a raw pointer and length (its caller vouches
//! for them).

use crate::target::Isa;
use crate::vmath::path;

/// Which extreme a span routine computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extreme {
    /// The maximum.
    Max,
    /// The minimum.
    Min,
}

impl Extreme {
    /// The fold's identity: the extreme of an empty span.
    fn identity(self) -> f32 {
        match self {
            Extreme::Max => f32::NEG_INFINITY,
            Extreme::Min => f32::INFINITY,
        }
    }

    /// `acc` and `x` folded by the reduction's scalar rule (`weft_ir::scalar`).
    fn fold(self, acc: f32, x: f32) -> f32 {
        let (acc, x) = (f64::from(acc), f64::from(x));
        // Exact: both are f32 values, and so is their extreme.
        (match self {
            Extreme::Max => weft_ir::scalar::reduce_max(acc, x),
            Extreme::Min => weft_ir::scalar::reduce_min(acc, x),
        }) as f32
    }
}

/// The extreme of `xs` by the reduction's rule (see the module documentation).
pub fn extreme_f32(kind: Extreme, xs: &[f32]) -> f32 {
    extreme_f32_scaled(kind, xs, 1.0)
}

/// The extreme of `x · scale` over `xs`, each product rounded to f32 as the JIT's `mul` rounds
/// it, by the reduction's rule: a scaled softmax's `max(x·c)`. A scale of 1 is no product
/// (`x · 1` is `x`, a NaN's payload aside).
pub fn extreme_f32_scaled(kind: Extreme, xs: &[f32], scale: f32) -> f32 {
    // SAFETY: `xs` holds `xs.len()` f32s.
    unsafe { run(kind, xs.as_ptr(), xs.len(), scale) }
}

/// The entry point JIT kernels call: the maximum (`min` 0) or minimum (otherwise) of the `len`
/// f32s at `src`, each times `scale` ([`extreme_f32_scaled`]; 1 for none), by the reduction's
/// rule (see the module documentation); the identity (−inf, +inf) when `len` is 0.
///
/// # Safety
/// `src` must be valid for reads of `len` f32s, aligned to 4 bytes, with no other reference
/// writing them during the call (a kernel passes a span of a buffer within its length,
/// checked by the loop-IR verifier).
#[no_mangle]
pub unsafe extern "C" fn weft_extreme_f32_span(
    src: *const f32,
    len: usize,
    min: usize,
    scale: f32,
) -> f32 {
    let kind = if min == 0 { Extreme::Max } else { Extreme::Min };
    // SAFETY: the caller's contract.
    unsafe { run(kind, src, len, scale) }
}

/// [`weft_extreme_f32_span`] on this CPU's path.
///
/// # Safety
/// As for [`weft_extreme_f32_span`].
unsafe fn run(kind: Extreme, src: *const f32, len: usize, scale: f32) -> f32 {
    let scaled = scale != 1.0;
    // SAFETY (each arm): the caller's contract; the host `Target` has the path's features.
    match path() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512F if scaled => unsafe { avx512::run::<true>(kind, src, len, scale) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512F => unsafe { avx512::run::<false>(kind, src, len, scale) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma if scaled => unsafe { avx2::run::<true>(kind, src, len, scale) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { avx2::run::<false>(kind, src, len, scale) },
        _ => unsafe { run_scalar(kind, src, len, scale, kind.identity()) },
    }
}

/// `acc` folded with the `len` f32s at `src`, each times `scale`, one at a time.
///
/// # Safety
/// As for [`weft_extreme_f32_span`].
unsafe fn run_scalar(kind: Extreme, src: *const f32, len: usize, scale: f32, acc: f32) -> f32 {
    (0..len).fold(acc, |acc, i| {
        // SAFETY: the caller's contract: `i < len`.
        let x = unsafe { *src.add(i) };
        kind.fold(acc, if scale == 1.0 { x } else { x * scale })
    })
}

/// What the vector paths keep per lane — here one lane's, after the merge across lanes —
/// settled by [`Partials::settle`]: the extreme of the lane's values by `maxps`/`minps`
/// (which skip a NaN term and may keep either zero), and the signed and unsigned maxima and
/// the signed minimum of their bits. A NaN term shows as a signed maximum above `+inf`'s bits
/// or an unsigned maximum above `−inf`'s; when the extreme is a zero, its sign is whether a
/// `+0` (signed maximum 0) or a `−0` (signed minimum `i32::MIN`) was among the terms — the
/// rule of the JIT's own vector loops (`compiler/src/codegen/translate.rs`, `Extreme`).
struct Partials {
    value: f32,
    smax: i32,
    umax: u32,
    smin: i32,
}

impl Partials {
    /// The extreme of every term folded in.
    fn settle(&self, kind: Extreme) -> f32 {
        let nan = self.smax > 0x7f80_0000 || self.umax > 0xff80_0000;
        if nan {
            f32::NAN
        } else if self.value == 0.0 {
            let positive = match kind {
                Extreme::Max => self.smax == 0,
                Extreme::Min => self.smin != i32::MIN,
            };
            if positive {
                0.0
            } else {
                -0.0
            }
        } else {
            self.value
        }
    }
}

/// The vector paths, written once over a register type ([`Lanes`]).
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{Extreme, Partials};
    use crate::vmath::simd::Lanes;

    /// The span routines' vector of f32 lanes ([`Lanes`]: splat, load, store) with the
    /// integer operations the extreme needs.
    ///
    /// # Safety
    /// As for [`Lanes`].
    pub(super) trait ExtremeLanes: Lanes {
        /// The same width of 32-bit integers.
        type Bits: Copy;
        /// `x` where it is strictly beyond `self` (`maxps`/`minps` with `self` second), else
        /// `self`.
        unsafe fn extreme(self, x: Self, kind: Extreme) -> Self;
        unsafe fn bits(self) -> Self::Bits;
        unsafe fn splat_bits(x: i32) -> Self::Bits;
        unsafe fn smax(a: Self::Bits, b: Self::Bits) -> Self::Bits;
        unsafe fn umax(a: Self::Bits, b: Self::Bits) -> Self::Bits;
        unsafe fn smin(a: Self::Bits, b: Self::Bits) -> Self::Bits;
        /// Stores the `N` lanes of `b` at `p`.
        unsafe fn store_bits(b: Self::Bits, p: *mut i32);
        /// The f32 lanes whose bits are `b`.
        unsafe fn from_bits(b: Self::Bits) -> Self;
        /// `b` with each group of `width` lanes swapped with its neighbour (`width` a power
        /// of two below `N`): lane `j` of the result is lane `j ^ width` of `b`.
        unsafe fn swap_groups(b: Self::Bits, width: usize) -> Self::Bits;
    }

    /// Four independent partials a step (the instructions' latency, not their count, would
    /// bound one).
    const ACCS: usize = 4;

    /// [`Partials`] of every lane of `V`.
    #[derive(Clone, Copy)]
    struct VectorPartials<V: ExtremeLanes> {
        value: V,
        smax: V::Bits,
        umax: V::Bits,
        smin: V::Bits,
    }

    impl<V: ExtremeLanes> VectorPartials<V> {
        /// The partials of no term.
        ///
        /// # Safety
        /// The trait's contract.
        #[inline(always)]
        unsafe fn new(kind: Extreme) -> Self {
            // SAFETY: the caller's contract.
            unsafe {
                VectorPartials {
                    value: V::splat(kind.identity()),
                    smax: V::splat_bits(i32::MIN),
                    umax: V::splat_bits(0),
                    smin: V::splat_bits(i32::MAX),
                }
            }
        }

        /// The terms `x` folded in, lane by lane (the signed minimum only for a minimum, the
        /// one rule that reads it).
        ///
        /// # Safety
        /// The trait's contract.
        #[inline(always)]
        unsafe fn add(&mut self, kind: Extreme, x: V) {
            // SAFETY: the caller's contract.
            unsafe {
                self.value = self.value.extreme(x, kind);
                let b = x.bits();
                self.smax = V::smax(self.smax, b);
                self.umax = V::umax(self.umax, b);
                if kind == Extreme::Min {
                    self.smin = V::smin(self.smin, b);
                }
            }
        }

        /// `self` and `other` lane by lane: each partial of the terms both have seen (the
        /// values by `maxps`/`minps`, which never hold a NaN, the bits by integer extremes).
        ///
        /// # Safety
        /// The trait's contract.
        #[inline(always)]
        unsafe fn merge(self, other: Self, kind: Extreme) -> Self {
            // SAFETY: the caller's contract.
            unsafe {
                VectorPartials {
                    value: self.value.extreme(other.value, kind),
                    smax: V::smax(self.smax, other.smax),
                    umax: V::umax(self.umax, other.umax),
                    smin: V::smin(self.smin, other.smin),
                }
            }
        }

        /// Every lane's partials folded into each lane, by merging with the lanes swapped in
        /// groups of half, a quarter, … of the vector (log₂ `N` steps, no branch).
        ///
        /// # Safety
        /// The trait's contract.
        #[inline(always)]
        unsafe fn across_lanes(self, kind: Extreme) -> Self {
            let mut m = self;
            let mut width = V::N / 2;
            // SAFETY: the caller's contract; every width is a power of two below `N`.
            unsafe {
                while width > 0 {
                    let swapped = VectorPartials {
                        value: V::from_bits(V::swap_groups(m.value.bits(), width)),
                        smax: V::swap_groups(m.smax, width),
                        umax: V::swap_groups(m.umax, width),
                        smin: V::swap_groups(m.smin, width),
                    };
                    m = m.merge(swapped, kind);
                    width /= 2;
                }
            }
            m
        }

        /// The first lane's partials.
        ///
        /// # Safety
        /// The trait's contract.
        #[inline(always)]
        unsafe fn first_lane(&self) -> Partials {
            // No path has more than sixteen lanes.
            let (mut v, mut s, mut u, mut m) = ([0.0f32; 16], [0i32; 16], [0i32; 16], [0i32; 16]);
            // SAFETY: the caller's contract; each array holds sixteen lanes.
            unsafe {
                self.value.store(v.as_mut_ptr());
                V::store_bits(self.smax, s.as_mut_ptr());
                V::store_bits(self.umax, u.as_mut_ptr());
                V::store_bits(self.smin, m.as_mut_ptr());
            }
            Partials {
                value: v[0],
                smax: s[0],
                umax: u[0] as u32,
                smin: m[0],
            }
        }
    }

    /// The `V::N` f32s at `p`, times `factor` where `SCALED`. (A function, not a closure: a
    /// closure would be compiled without the entry point's target features.)
    ///
    /// # Safety
    /// The trait's contract; `V::N` f32s at `p`.
    #[inline(always)]
    unsafe fn term<V: ExtremeLanes, const SCALED: bool>(p: *const f32, factor: V) -> V {
        // SAFETY: the caller's contract.
        unsafe {
            let x = V::load(p);
            if SCALED {
                x.mul(factor)
            } else {
                x
            }
        }
    }

    /// The extreme of the `len` f32s at `src` on `V`, each times `scale` where `SCALED`:
    /// whole vectors into [`ACCS`] partials of each kind, then the rest folded one at a time
    /// onto their settled extreme.
    ///
    /// # Safety
    /// The trait's contract; `src` valid for reads of `len` f32s.
    #[inline(always)]
    pub(super) unsafe fn run<V: ExtremeLanes, const SCALED: bool>(
        kind: Extreme,
        src: *const f32,
        len: usize,
        scale: f32,
    ) -> f32 {
        // SAFETY (the block): the trait's contract, passed on by the caller; every load is of
        // `V::N` f32s below `len`, the scalar rest below `len` too.
        unsafe {
            let n = V::N;
            let factor = V::splat(scale);
            let mut acc = [VectorPartials::<V>::new(kind); ACCS];
            let mut i = 0;
            while i + ACCS * n <= len {
                for (a, partials) in acc.iter_mut().enumerate() {
                    partials.add(kind, term::<V, SCALED>(src.add(i + a * n), factor));
                }
                i += ACCS * n;
            }
            while i + n <= len {
                acc[0].add(kind, term::<V, SCALED>(src.add(i), factor));
                i += n;
            }
            // Merged in vectors, the partials and then the lanes: a scalar fold of every lane
            // (ten instructions and a data-dependent branch each) made a 512 × 128 softmax
            // 3.3× slower.
            let merged = acc[1..].iter().fold(acc[0], |m, &a| m.merge(a, kind));
            let p = merged.across_lanes(kind).first_lane();
            let scale = if SCALED { scale } else { 1.0 };
            super::run_scalar(kind, src.add(i), len - i, scale, p.settle(kind))
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::simd::ExtremeLanes;
    use super::Extreme;
    use std::arch::x86_64::*;

    // SAFETY (every method): the trait's contract — reached only from `run` below, compiled
    // with AVX-512F, which its caller detected.
    impl ExtremeLanes for __m512 {
        type Bits = __m512i;
        #[inline(always)]
        unsafe fn extreme(self, x: Self, kind: Extreme) -> Self {
            // SAFETY: see the impl. (`vmaxps`/`vminps` return the second operand unless the
            // first is strictly beyond it, a NaN never being beyond.)
            unsafe {
                match kind {
                    Extreme::Max => _mm512_max_ps(x, self),
                    Extreme::Min => _mm512_min_ps(x, self),
                }
            }
        }
        #[inline(always)]
        unsafe fn bits(self) -> __m512i {
            // SAFETY: see the impl.
            unsafe { _mm512_castps_si512(self) }
        }
        #[inline(always)]
        unsafe fn splat_bits(x: i32) -> __m512i {
            // SAFETY: see the impl.
            unsafe { _mm512_set1_epi32(x) }
        }
        #[inline(always)]
        unsafe fn smax(a: __m512i, b: __m512i) -> __m512i {
            // SAFETY: see the impl.
            unsafe { _mm512_max_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn umax(a: __m512i, b: __m512i) -> __m512i {
            // SAFETY: see the impl.
            unsafe { _mm512_max_epu32(a, b) }
        }
        #[inline(always)]
        unsafe fn smin(a: __m512i, b: __m512i) -> __m512i {
            // SAFETY: see the impl.
            unsafe { _mm512_min_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn store_bits(b: __m512i, p: *mut i32) {
            // SAFETY: see the impl; sixteen i32s at `p`.
            unsafe { _mm512_storeu_si512(p.cast(), b) }
        }
        #[inline(always)]
        unsafe fn from_bits(b: __m512i) -> __m512 {
            // SAFETY: see the impl.
            unsafe { _mm512_castsi512_ps(b) }
        }
        #[inline(always)]
        unsafe fn swap_groups(b: __m512i, width: usize) -> __m512i {
            // SAFETY: see the impl. (Four 128-bit blocks: 8 swaps block pairs, 4 neighbouring
            // blocks; within a block, 2 swaps the 64-bit halves, 1 neighbouring lanes.)
            unsafe {
                match width {
                    8 => _mm512_shuffle_i32x4::<0b01_00_11_10>(b, b),
                    4 => _mm512_shuffle_i32x4::<0b10_11_00_01>(b, b),
                    2 => _mm512_shuffle_epi32::<0b01_00_11_10>(b),
                    _ => _mm512_shuffle_epi32::<0b10_11_00_01>(b),
                }
            }
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F; `src` valid for reads of `len` f32s.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn run<const SCALED: bool>(
        kind: Extreme,
        src: *const f32,
        len: usize,
        scale: f32,
    ) -> f32 {
        // SAFETY: compiled with AVX-512F, which the caller detected; the caller's contract.
        unsafe { super::simd::run::<__m512, SCALED>(kind, src, len, scale) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::simd::ExtremeLanes;
    use super::Extreme;
    use std::arch::x86_64::*;

    // SAFETY (every method): the trait's contract — reached only from `run` below, compiled
    // with AVX2 and FMA, which its caller detected.
    impl ExtremeLanes for __m256 {
        type Bits = __m256i;
        #[inline(always)]
        unsafe fn extreme(self, x: Self, kind: Extreme) -> Self {
            // SAFETY: see the impl, and the AVX-512 one on the operands' order.
            unsafe {
                match kind {
                    Extreme::Max => _mm256_max_ps(x, self),
                    Extreme::Min => _mm256_min_ps(x, self),
                }
            }
        }
        #[inline(always)]
        unsafe fn bits(self) -> __m256i {
            // SAFETY: see the impl.
            unsafe { _mm256_castps_si256(self) }
        }
        #[inline(always)]
        unsafe fn splat_bits(x: i32) -> __m256i {
            // SAFETY: see the impl.
            unsafe { _mm256_set1_epi32(x) }
        }
        #[inline(always)]
        unsafe fn smax(a: __m256i, b: __m256i) -> __m256i {
            // SAFETY: see the impl.
            unsafe { _mm256_max_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn umax(a: __m256i, b: __m256i) -> __m256i {
            // SAFETY: see the impl.
            unsafe { _mm256_max_epu32(a, b) }
        }
        #[inline(always)]
        unsafe fn smin(a: __m256i, b: __m256i) -> __m256i {
            // SAFETY: see the impl.
            unsafe { _mm256_min_epi32(a, b) }
        }
        #[inline(always)]
        unsafe fn store_bits(b: __m256i, p: *mut i32) {
            // SAFETY: see the impl; eight i32s at `p`.
            unsafe { _mm256_storeu_si256(p.cast(), b) }
        }
        #[inline(always)]
        unsafe fn from_bits(b: __m256i) -> __m256 {
            // SAFETY: see the impl.
            unsafe { _mm256_castsi256_ps(b) }
        }
        #[inline(always)]
        unsafe fn swap_groups(b: __m256i, width: usize) -> __m256i {
            // SAFETY: see the impl. (Two 128-bit blocks: 4 swaps them; within a block, 2
            // swaps the 64-bit halves, 1 neighbouring lanes.)
            unsafe {
                match width {
                    4 => _mm256_permute2x128_si256::<0x01>(b, b),
                    2 => _mm256_shuffle_epi32::<0b01_00_11_10>(b),
                    _ => _mm256_shuffle_epi32::<0b10_11_00_01>(b),
                }
            }
        }
    }

    /// # Safety
    /// The CPU must have AVX2 and FMA (the span routines' lanes assume both); `src` valid for
    /// reads of `len` f32s.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn run<const SCALED: bool>(
        kind: Extreme,
        src: *const f32,
        len: usize,
        scale: f32,
    ) -> f32 {
        // SAFETY: compiled with AVX2 and FMA, which the caller detected; the caller's
        // contract.
        unsafe { super::simd::run::<__m256, SCALED>(kind, src, len, scale) }
    }
}

/// Where an arg-reduction's loop over a span ends up: the first index of the span's greatest
/// (or least) non-NaN value, and the first index of a NaN — each `None` when there is none.
/// The loop IR's arg step keeps the first strictly better value and never takes a NaN
/// (`weft_ir::loop_ir::semantics::reduce_step`); lowering tracks the first NaN beside it.
/// Both are order-free summaries: a kernel folds `(xs[best], best)` into its value
/// accumulator and `(1, nan)` (or `(0, 0)`) into its NaN one with its own steps and gets what
/// its loop over the span would.
pub fn arg_extreme_f32(kind: Extreme, xs: &[f32]) -> (Option<usize>, Option<usize>) {
    // Pass one: the extreme of the non-NaN values (`maxps`'s rule: a NaN term keeps the
    // accumulator), and whether any term is NaN; pass two finds the first of each.
    let (best, any_nan) = match path() {
        // SAFETY: the host `Target` has the path's features.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512F => unsafe { arg_pass_avx512(kind, xs) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { arg_pass_avx2(kind, xs) },
        _ => arg_pass(kind, xs),
    };
    // −inf (+inf) beats nothing: the loop's step never takes it.
    let found = (best != kind.identity()).then(|| first_where(xs, |x| x == best));
    let nan = any_nan.then(|| first_where(xs, |x| x.is_nan()));
    (found.flatten(), nan.flatten())
}

/// Sixteen running extremes of the non-NaN terms and a NaN flag per lane; the compiler
/// vectorises it with the features of its caller.
#[inline(always)]
fn arg_pass(kind: Extreme, xs: &[f32]) -> (f32, bool) {
    const LANES: usize = 16;
    let better = |x: f32, acc: f32| match kind {
        Extreme::Max => x > acc,
        Extreme::Min => x < acc,
    };
    let mut acc = [kind.identity(); LANES];
    let mut nan = [false; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for j in 0..LANES {
            let x = chunk[j];
            acc[j] = if better(x, acc[j]) { x } else { acc[j] };
            nan[j] |= x.is_nan();
        }
    }
    let mut best = kind.identity();
    for &x in acc.iter().chain(tail) {
        best = if better(x, best) { x } else { best };
    }
    (
        best,
        nan.iter().any(|n| *n) || tail.iter().any(|x| x.is_nan()),
    )
}

/// [`arg_pass`] compiled for AVX-512F.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn arg_pass_avx512(kind: Extreme, xs: &[f32]) -> (f32, bool) {
    arg_pass(kind, xs)
}

/// [`arg_pass`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn arg_pass_avx2(kind: Extreme, xs: &[f32]) -> (f32, bool) {
    arg_pass(kind, xs)
}

/// The first index of `xs` where `hit` holds: blocks of 64 tested whole (vectorisable, no
/// early exit inside), the first block that has one searched.
fn first_where(xs: &[f32], hit: impl Fn(f32) -> bool) -> Option<usize> {
    const BLOCK: usize = 64;
    xs.chunks(BLOCK).enumerate().find_map(|(b, block)| {
        block
            .iter()
            .fold(false, |any, x| any | hit(*x))
            .then(|| block.iter().position(|x| hit(*x)).map(|i| b * BLOCK + i))
            .flatten()
    })
}

/// The entry point JIT kernels call for an arg-reduction's loop over a span
/// ([`arg_extreme_f32`]): the greatest (`min` 0) or least of the `len` f32s at `src`; writes
/// the first index of the best non-NaN value to `out[0]` and the first NaN's to `out[1]`,
/// `len` where there is none.
///
/// # Safety
/// `src` must be valid for reads of `len` f32s, aligned to 4 bytes, with no other reference
/// writing them during the call; `out` valid for writes of two `u64`s, aligned to 8 bytes.
#[no_mangle]
pub unsafe extern "C" fn weft_arg_extreme_f32_span(
    src: *const f32,
    len: usize,
    min: usize,
    out: *mut u64,
) {
    let kind = if min == 0 { Extreme::Max } else { Extreme::Min };
    // SAFETY: the caller's contract.
    let xs = unsafe { std::slice::from_raw_parts(src, len) };
    let (best, nan) = arg_extreme_f32(kind, xs);
    // SAFETY: the caller's contract.
    unsafe {
        *out = best.unwrap_or(len) as u64;
        *out.add(1) = nan.unwrap_or(len) as u64;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A xorshift stream of `u32`s from `seed` (not zero): test inputs, the same on every run.
    pub(crate) fn xorshift(seed: u32) -> impl FnMut() -> u32 {
        let mut state = seed;
        move || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state
        }
    }

    /// Values at every edge of the extreme rule: both zeros, infinities, NaNs of either sign
    /// and another payload, the least subnormal, the finite extremes.
    pub(crate) const SPECIALS: [f32; 10] = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::from_bits(1),
        f32::MAX,
        f32::MIN,
    ];

    /// The arg summary is what the loop IR's arg step and the NaN rule give one element at a
    /// time, on every path this CPU has (the vector pass) and every span of every kind.
    #[test]
    fn arg_extremes_are_the_first_best_and_the_first_nan() {
        for xs in spans() {
            for kind in [Extreme::Max, Extreme::Min] {
                let (mut best, mut at, mut nan) = (kind.identity(), None, None);
                for (i, &x) in xs.iter().enumerate() {
                    let better = match kind {
                        Extreme::Max => x > best,
                        Extreme::Min => x < best,
                    };
                    if better {
                        (best, at) = (x, Some(i));
                    }
                    if x.is_nan() && nan.is_none() {
                        nan = Some(i);
                    }
                }
                assert_eq!(arg_extreme_f32(kind, &xs), (at, nan), "{kind:?} {xs:?}");
                assert_eq!(arg_pass(kind, &xs).1, nan.is_some());
            }
        }
    }

    /// Spans exercising every rule: NaNs of either sign, both zeros, infinities, subnormals,
    /// and lengths around the vector steps (tails of every size).
    fn spans() -> Vec<Vec<f32>> {
        let mut next = xorshift(0x9e37_79b9);
        let specials = SPECIALS;
        let mut out = vec![];
        for len in [0, 1, 7, 8, 15, 16, 17, 63, 64, 65, 100, 200, 1000] {
            for mix in 0..12 {
                let xs = (0..len)
                    .map(|_| {
                        let r = next();
                        match mix {
                            // Ordinary values only.
                            0 => (r as i32 as f32) * 1e-6,
                            // Zeros only, of either sign.
                            1 => specials[(r % 2) as usize],
                            // Negative values and −0 only (the max a −0).
                            2 => -((r % 4) as f32),
                            // Positive values and +0 only (the min a +0).
                            3 => (r % 4) as f32,
                            // Raw bits: NaNs of every payload, subnormals, everything.
                            4 => f32::from_bits(r),
                            _ if r.is_multiple_of(97) => specials[(r / 97 % 10) as usize],
                            _ => (r as i32 as f32) * 1e-9,
                        }
                    })
                    .collect();
                out.push(xs);
            }
        }
        out
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    /// Every path, unscaled and scaled (by a factor that rounds, a negative one that turns
    /// the extreme round, one that underflows small terms to zeros of either sign and one
    /// that overflows large ones), folds the rounded products by the rule.
    #[test]
    fn every_path_folds_by_the_reductions_rule() {
        for kind in [Extreme::Max, Extreme::Min] {
            for scale in [1.0f32, 0.125, 0.3, -1.7, 1e-30, 3e30] {
                for xs in spans() {
                    let want = xs
                        .iter()
                        .fold(kind.identity(), |a, &x| kind.fold(a, x * scale));
                    // SAFETY: `xs` holds its length of f32s.
                    let scalar =
                        unsafe { run_scalar(kind, xs.as_ptr(), xs.len(), scale, kind.identity()) };
                    assert!(same(scalar, want), "{kind:?} {scale} scalar of {xs:?}");
                    let got = extreme_f32_scaled(kind, &xs, scale);
                    assert!(
                        same(got, want),
                        "{kind:?} of {xs:?} times {scale}: {got:?} ({:#x}), want {want:?} ({:#x})",
                        got.to_bits(),
                        want.to_bits()
                    );
                    #[cfg(target_arch = "x86_64")]
                    if crate::target::Target::host().isa() >= Isa::Avx2Fma {
                        // SAFETY: the host `Target` has AVX2 and FMA; `xs` holds its f32s.
                        let avx2 = unsafe { avx2::run::<true>(kind, xs.as_ptr(), xs.len(), scale) };
                        assert!(same(avx2, want), "{kind:?} {scale} AVX2 of {xs:?}");
                    }
                }
            }
        }
    }

    /// The extreme of `xs` on the CPU's path and, where it has AVX2 and FMA, the AVX2 path.
    fn on_every_path(kind: Extreme, xs: &[f32]) -> Vec<f32> {
        let mut got = vec![extreme_f32(kind, xs)];
        #[cfg(target_arch = "x86_64")]
        if crate::target::Target::host().isa() >= Isa::Avx2Fma {
            // SAFETY: the host `Target` has AVX2 and FMA; `xs` holds its f32s.
            got.push(unsafe { avx2::run::<false>(kind, xs.as_ptr(), xs.len(), 1.0) });
        }
        got
    }

    /// A deciding term in each position of a span of 64 (each lane of each partial of the
    /// vector paths) reaches the result through the merge across partials and lanes.
    #[test]
    fn a_deciding_term_counts_in_every_lane() {
        for j in 0..64 {
            let mut xs = vec![-0.0f32; 64];
            xs[j] = 0.0;
            for got in on_every_path(Extreme::Max, &xs) {
                assert_eq!(got.to_bits(), 0, "+0 at {j}");
            }
            xs[j] = 3.0;
            for got in on_every_path(Extreme::Max, &xs) {
                assert_eq!(got, 3.0, "max at {j}");
            }
            xs[j] = -3.0;
            for got in on_every_path(Extreme::Min, &xs) {
                assert_eq!(got, -3.0, "min at {j}");
            }
            xs[j] = -f32::NAN;
            for got in on_every_path(Extreme::Max, &xs) {
                assert!(got.is_nan(), "NaN at {j}");
            }
            let mut ys = vec![0.0f32; 64];
            ys[j] = -0.0;
            for got in on_every_path(Extreme::Min, &ys) {
                assert_eq!(got.to_bits(), (-0.0f32).to_bits(), "-0 at {j}");
            }
        }
    }

    #[test]
    fn zeros_and_nans_follow_the_rule() {
        assert_eq!(
            extreme_f32(Extreme::Max, &[-0.0; 40]).to_bits(),
            (-0.0f32).to_bits()
        );
        let mut xs = vec![-0.0f32; 40];
        xs[33] = 0.0;
        assert_eq!(extreme_f32(Extreme::Max, &xs).to_bits(), 0);
        assert_eq!(
            extreme_f32(Extreme::Min, &xs).to_bits(),
            (-0.0f32).to_bits()
        );
        xs[5] = -f32::NAN;
        assert!(extreme_f32(Extreme::Max, &xs).is_nan());
        assert!(extreme_f32(Extreme::Min, &xs).is_nan());
        assert_eq!(extreme_f32(Extreme::Max, &[]), f32::NEG_INFINITY);
        assert_eq!(extreme_f32(Extreme::Min, &[]), f32::INFINITY);
    }
}
