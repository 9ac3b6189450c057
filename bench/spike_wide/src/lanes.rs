//! A vector of f32 lanes, copied in small from weft-runtime's `vmath::simd::Lanes` (which is
//! `pub(crate)`): the operations the engine's kernels use, and `exp` written once over it with
//! the runtime's constants (`weft::runtime::vmath::exp_f32`), so the engine, the assembler and
//! weft's JIT evaluate one algorithm.

use std::arch::x86_64::*;

pub use weft::runtime::vmath::exp_f32 as expc;

/// A vector of f32 lanes.
///
/// # Safety
/// Every method may be called only from code compiled with the implementation's target features
/// (the `#[target_feature]` entry points, after detection); `load`/`store` need `N` valid f32s
/// at the pointer, `load_partial`/`store_partial` `n < N`.
pub trait Lanes: Copy {
    const N: usize;
    type Mask: Copy;
    unsafe fn splat(x: f32) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn store(self, p: *mut f32);
    unsafe fn load_partial(p: *const f32, n: usize) -> Self;
    unsafe fn fma(self, b: Self, c: Self) -> Self;
    unsafe fn add(self, b: Self) -> Self;
    unsafe fn sub(self, b: Self) -> Self;
    unsafe fn mul(self, b: Self) -> Self;
    unsafe fn add_shifted_bits(self, t: Self) -> Self;
    unsafe fn gt_or_nan(self, c: Self) -> Self::Mask;
    unsafe fn lt(self, c: Self) -> Self::Mask;
    unsafe fn gt(self, c: Self) -> Self::Mask;
    unsafe fn select(self, m: Self::Mask, a: Self) -> Self;
    unsafe fn zero_where(self, m: Self::Mask) -> Self;
}

/// `e^x` lane by lane: the runtime's `simd::exp` (Eigen's polynomial, two-part reduction,
/// overflow to `x + inf`, underflow flushed to `+0`).
#[inline(always)]
pub unsafe fn exp<V: Lanes>(x: V) -> V {
    use expc::*;
    // SAFETY: the trait's contract, passed on to the caller.
    unsafe {
        let magic = V::splat(MAGIC);
        let t = x.fma(V::splat(LOG2_E), magic);
        let k = t.sub(magic);
        let r = k.fma(V::splat(NEG_LN2_HI), x);
        let r = k.fma(V::splat(NEG_LN2_LO), r);
        let (&last, rest) = POLY.split_last().unwrap();
        let mut p = V::splat(last);
        for &c in rest.iter().rev() {
            p = p.fma(r, V::splat(c));
        }
        let y = p.add_shifted_bits(t);
        let y = y.select(x.gt_or_nan(V::splat(HI)), x.add(V::splat(f32::INFINITY)));
        y.zero_where(x.lt(V::splat(LO)))
    }
}

// SAFETY (the impl): every method is one or two AVX2/FMA instructions; the trait's contract
// (callers compiled with `avx2,fma`, detected) makes them sound.
impl Lanes for __m256 {
    const N: usize = 8;
    type Mask = __m256;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: see the impl; eight f32s at `p`.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: see the impl; eight f32s at `p`.
        unsafe { _mm256_storeu_ps(p, self) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        let mut buf = [0f32; 8];
        // SAFETY: see the impl; `n < 8` f32s at `p`, into an eight-lane buffer.
        unsafe {
            std::ptr::copy_nonoverlapping(p, buf.as_mut_ptr(), n);
            _mm256_loadu_ps(buf.as_ptr())
        }
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm256_fmadd_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm256_add_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm256_sub_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm256_mul_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn add_shifted_bits(self, t: Self) -> Self {
        // SAFETY: see the impl.
        unsafe {
            let k = _mm256_slli_epi32::<23>(_mm256_castps_si256(t));
            _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(self), k))
        }
    }
    #[inline(always)]
    unsafe fn gt_or_nan(self, c: Self) -> Self::Mask {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_NLE_UQ>(self, c) }
    }
    #[inline(always)]
    unsafe fn lt(self, c: Self) -> Self::Mask {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(self, c) }
    }
    #[inline(always)]
    unsafe fn gt(self, c: Self) -> Self::Mask {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_GT_OQ>(self, c) }
    }
    #[inline(always)]
    unsafe fn select(self, m: Self::Mask, a: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm256_blendv_ps(self, a, m) }
    }
    #[inline(always)]
    unsafe fn zero_where(self, m: Self::Mask) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm256_andnot_ps(m, self) }
    }
}

// SAFETY (the impl): every method is one or two AVX-512F instructions; the trait's contract
// (callers compiled with `avx512f`, detected) makes them sound.
impl Lanes for __m512 {
    const N: usize = 16;
    type Mask = __mmask16;
    #[inline(always)]
    unsafe fn splat(x: f32) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    unsafe fn load(p: *const f32) -> Self {
        // SAFETY: see the impl; sixteen f32s at `p`.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32) {
        // SAFETY: see the impl; sixteen f32s at `p`.
        unsafe { _mm512_storeu_ps(p, self) }
    }
    #[inline(always)]
    unsafe fn load_partial(p: *const f32, n: usize) -> Self {
        // SAFETY: see the impl; masked-off lanes are not read.
        unsafe { _mm512_maskz_loadu_ps(((1u32 << n) - 1) as __mmask16, p) }
    }
    #[inline(always)]
    unsafe fn fma(self, b: Self, c: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm512_fmadd_ps(self, b, c) }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm512_add_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm512_sub_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn mul(self, b: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm512_mul_ps(self, b) }
    }
    #[inline(always)]
    unsafe fn add_shifted_bits(self, t: Self) -> Self {
        // SAFETY: see the impl.
        unsafe {
            let k = _mm512_slli_epi32::<23>(_mm512_castps_si512(t));
            _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(self), k))
        }
    }
    #[inline(always)]
    unsafe fn gt_or_nan(self, c: Self) -> Self::Mask {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(self, c) }
    }
    #[inline(always)]
    unsafe fn lt(self, c: Self) -> Self::Mask {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(self, c) }
    }
    #[inline(always)]
    unsafe fn gt(self, c: Self) -> Self::Mask {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_GT_OQ>(self, c) }
    }
    #[inline(always)]
    unsafe fn select(self, m: Self::Mask, a: Self) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm512_mask_blend_ps(m, self, a) }
    }
    #[inline(always)]
    unsafe fn zero_where(self, m: Self::Mask) -> Self {
        // SAFETY: see the impl.
        unsafe { _mm512_maskz_mov_ps(!m, self) }
    }
}
