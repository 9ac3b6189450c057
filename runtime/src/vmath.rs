//! Native vector math over contiguous spans, which JIT kernels call where their own 128-bit
//! code is compute-bound: Cranelift emits only 4-lane f32 vectors and keeps a polynomial's
//! dozen constants in 16 registers by spilling, so an f32 `exp` costs the JIT about 35
//! instructions per four lanes; rustc's AVX2 code of the same algorithm does eight lanes in
//! about 20, its AVX-512 code sixteen.
//!
//! Assumes nothing of the caller but a valid span. Guarantees: [`exp_f32_in_place`],
//! [`tanh_f32_in_place`] and [`sigmoid_f32_in_place`] compute, element by element, bit for bit
//! what the JIT's inline f32 `exp`, `tanh` and `sigmoid` compute with FMA
//! (`compiler/src/codegen/math.rs`, from the constants of [`exp_f32`] and
//! [`tanh_coefficients`]): the same reductions, polynomials, Horner order, fused multiply-adds,
//! divides and edge rules, so moving one from inline code to a span changes no result
//! (`tests/jit.rs` checks it bit for bit; a NaN result is NaN on both, but its sign and
//! payload may differ, since Cranelift and rustc each fold negations into other operations).
//! The path is chosen at run time ([`span_isa`]): AVX-512F (sixteen lanes), else AVX2 with
//! FMA (eight), else scalar; all three give the same bits (`f32::mul_add` is the fused
//! operation; the unit tests compare every path the CPU has).
//!
//! `unsafe` here: the AVX2 and AVX-512 intrinsics (called only after run-time detection) and
//! the span entry points JIT code calls with a raw pointer and length (its caller vouches for
//! them).

/// The f32 `exp` algorithm's constants, shared by the JIT's inline code and the span routine.
pub mod exp_f32 {
    /// The largest `x` with a finite `e^x`; above it (or NaN) the result is `x + inf`.
    pub const HI: f32 = 88.722_83;
    /// `ln(f32::MIN_POSITIVE)`; below it the result is `+0` (subnormal results are flushed).
    pub const LO: f32 = -87.336_54;
    /// `log2(e)`.
    pub const LOG2_E: f32 = std::f32::consts::LOG2_E;
    /// `1.5 · 2^23`: adding and subtracting it rounds to an integer.
    pub const MAGIC: f32 = 12_582_912.0;
    /// `−ln 2` split in two: a high part with trailing zero bits (exact products with `k`)
    /// and the remainder.
    pub const NEG_LN2_HI: f32 = -0.693_359_4;
    /// See [`NEG_LN2_HI`].
    pub const NEG_LN2_LO: f32 = 2.121_944_4e-4;
    /// Minimax polynomial for `e^r` on `|r| ≤ ln2/2`, lowest degree first, degree 6: the
    /// coefficients of Eigen's `pexp_float`.
    // The published digits are kept verbatim, so the source can be checked.
    #[allow(clippy::excessive_precision)]
    pub const POLY: [f32; 7] = [
        1.0,
        1.0,
        0.499_999_880_790_710_449_218_75,
        0.166_665_181_517_601_013_183_593_75,
        4.166_965_186_595_916_748_046_875e-2,
        8.368_944_749_236_106_872_558_593_75e-3,
        1.374_496_379_867_196_083_068_847_656_25e-3,
    ];
}

/// Taylor coefficients of `tanh(x) / x` in powers of `x²`, from `tanh' = 1 − tanh²`: the
/// small-argument series of `tanh` (9 terms for f32, 20 for f64).
pub fn tanh_coefficients(terms: usize) -> Vec<f64> {
    let n = 2 * terms + 1;
    let mut a = vec![0.0f64; n + 1];
    a[1] = 1.0;
    for k in 1..n {
        let mut conv = 0.0;
        for i in 1..k {
            conv += a[i] * a[k - i];
        }
        a[k + 1] = -conv / (k as f64 + 1.0);
    }
    (0..terms).map(|i| a[2 * i + 1]).collect()
}

/// Below this `|x|` the f32 (and f64) `tanh` takes the series.
pub const TANH_SERIES_BELOW: f32 = 0.55;

/// The f32 series coefficients, as f32.
fn tanh_f32_series() -> &'static [f32; 9] {
    static C: std::sync::OnceLock<[f32; 9]> = std::sync::OnceLock::new();
    C.get_or_init(|| {
        let c = tanh_coefficients(9);
        std::array::from_fn(|i| c[i] as f32)
    })
}

/// `tanh(x)` of one f32, exactly as the vector paths compute each lane.
fn tanh_scalar(x: f32, series: &[f32; 9]) -> f32 {
    let a = x.abs();
    let z = x * x;
    let mut p = series[8];
    for &c in series[..8].iter().rev() {
        p = p.mul_add(z, c);
    }
    let small = x * p;
    let e = exp_scalar(a + a);
    let large_abs = 1.0 - 2.0 / (e + 1.0);
    let large = f32::from_bits(large_abs.to_bits() | (x.to_bits() & 0x8000_0000));
    if a < TANH_SERIES_BELOW {
        small
    } else {
        large
    }
}

/// `1 / (1 + e^-x)` of one f32, exactly as the vector paths compute each lane.
fn sigmoid_scalar(x: f32) -> f32 {
    1.0 / (1.0 + exp_scalar(-x))
}

/// `e^x` of one f32, exactly as the vector paths compute each lane.
fn exp_scalar(x: f32) -> f32 {
    use exp_f32::*;
    let t = x.mul_add(LOG2_E, MAGIC);
    let k = t - MAGIC;
    let r = k.mul_add(NEG_LN2_HI, x);
    let r = k.mul_add(NEG_LN2_LO, r);
    let mut p = POLY[6];
    for &c in POLY[..6].iter().rev() {
        p = p.mul_add(r, c);
    }
    let y = f32::from_bits(p.to_bits().wrapping_add(t.to_bits() << 23));
    if x.is_nan() || x > HI {
        x + f32::INFINITY
    } else if x < LO {
        0.0
    } else {
        y
    }
}

/// The span functions: which one a kernel calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanFn {
    /// `e^x`.
    Exp,
    /// `tanh(x)`.
    Tanh,
    /// `1 / (1 + e^-x)`.
    Sigmoid,
}

/// Whether this CPU runs the vector path (AVX2 and FMA).
fn vector_path() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The instruction set the span routines run on this CPU: `"AVX-512"` (sixteen lanes),
/// `"AVX2"` (eight), or `None` (the scalar path).
pub fn span_isa() -> Option<&'static str> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && vector_path() {
        return Some("AVX-512");
    }
    vector_path().then_some("AVX2")
}

/// `xs[i] = f(xs[i])` for every element, as the JIT's inline f32 code computes `f`.
pub fn apply_f32_in_place(f: SpanFn, xs: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && vector_path() {
        // SAFETY: the features the function is compiled for were detected on this CPU.
        unsafe { avx512::apply_in_place(f, xs) };
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if vector_path() {
        // SAFETY: the features the function is compiled for were detected on this CPU.
        unsafe { avx2::apply_in_place(f, xs) };
        return;
    }
    apply_scalar(f, xs);
}

/// The scalar path of [`apply_f32_in_place`] (also what the vector paths are tested against).
fn apply_scalar(f: SpanFn, xs: &mut [f32]) {
    let series = tanh_f32_series();
    for x in xs {
        *x = match f {
            SpanFn::Exp => exp_scalar(*x),
            SpanFn::Tanh => tanh_scalar(*x, series),
            SpanFn::Sigmoid => sigmoid_scalar(*x),
        };
    }
}

/// `xs[i] = e^xs[i]` for every element, as the JIT's inline f32 `exp` computes it.
pub fn exp_f32_in_place(xs: &mut [f32]) {
    apply_f32_in_place(SpanFn::Exp, xs);
}

/// `xs[i] = tanh(xs[i])` for every element, as the JIT's inline f32 `tanh` computes it.
pub fn tanh_f32_in_place(xs: &mut [f32]) {
    apply_f32_in_place(SpanFn::Tanh, xs);
}

/// `xs[i] = 1 / (1 + e^-xs[i])` for every element, as the JIT's inline f32 `sigmoid` computes
/// it.
pub fn sigmoid_f32_in_place(xs: &mut [f32]) {
    apply_f32_in_place(SpanFn::Sigmoid, xs);
}

/// The span of `len` f32s from `ptr` as a slice.
///
/// # Safety
/// As for [`weft_exp_f32_span`].
unsafe fn span<'a>(ptr: *mut f32, len: usize) -> &'a mut [f32] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    unsafe { std::slice::from_raw_parts_mut(ptr, len) }
}

/// The span entry point JIT kernels call: `e^x` in place over `len` f32s from `ptr`.
///
/// # Safety
/// `ptr` must be valid for reads and writes of `len` f32s, aligned to 4 bytes, and no other
/// reference may access them during the call (a kernel passes a span of a buffer it alone
/// writes, within the buffer's length, checked by the loop-IR verifier).
pub unsafe extern "C" fn weft_exp_f32_span(ptr: *mut f32, len: usize) {
    // SAFETY: the caller's contract above.
    exp_f32_in_place(unsafe { span(ptr, len) });
}

/// The span entry point for `tanh`, as [`weft_exp_f32_span`] is for `exp`.
///
/// # Safety
/// As for [`weft_exp_f32_span`].
pub unsafe extern "C" fn weft_tanh_f32_span(ptr: *mut f32, len: usize) {
    // SAFETY: the caller's contract above.
    tanh_f32_in_place(unsafe { span(ptr, len) });
}

/// The span entry point for `sigmoid`, as [`weft_exp_f32_span`] is for `exp`.
///
/// # Safety
/// As for [`weft_exp_f32_span`].
pub unsafe extern "C" fn weft_sigmoid_f32_span(ptr: *mut f32, len: usize) {
    // SAFETY: the caller's contract above.
    sigmoid_f32_in_place(unsafe { span(ptr, len) });
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::exp_f32::*;
    use super::SpanFn;
    use std::arch::x86_64::*;

    /// Eight lanes of [`super::exp_scalar`].
    #[target_feature(enable = "avx2,fma")]
    fn exp8(x: __m256) -> __m256 {
        let t = _mm256_fmadd_ps(x, _mm256_set1_ps(LOG2_E), _mm256_set1_ps(MAGIC));
        let k = _mm256_sub_ps(t, _mm256_set1_ps(MAGIC));
        let r = _mm256_fmadd_ps(k, _mm256_set1_ps(NEG_LN2_HI), x);
        let r = _mm256_fmadd_ps(k, _mm256_set1_ps(NEG_LN2_LO), r);
        let mut p = _mm256_set1_ps(POLY[6]);
        for &c in POLY[..6].iter().rev() {
            p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(c));
        }
        let k_bits = _mm256_slli_epi32::<23>(_mm256_castps_si256(t));
        let y = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), k_bits));
        let over = _mm256_cmp_ps::<_CMP_NLE_UQ>(x, _mm256_set1_ps(HI));
        let x_inf = _mm256_add_ps(x, _mm256_set1_ps(f32::INFINITY));
        let y = _mm256_blendv_ps(y, x_inf, over);
        let under = _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_set1_ps(LO));
        _mm256_andnot_ps(under, y)
    }

    /// Eight lanes of [`super::tanh_scalar`].
    #[target_feature(enable = "avx2,fma")]
    fn tanh8(x: __m256, series: &[f32; 9]) -> __m256 {
        let sign = _mm256_set1_ps(-0.0);
        let a = _mm256_andnot_ps(sign, x);
        let z = _mm256_mul_ps(x, x);
        let mut p = _mm256_set1_ps(series[8]);
        for &c in series[..8].iter().rev() {
            p = _mm256_fmadd_ps(p, z, _mm256_set1_ps(c));
        }
        let small = _mm256_mul_ps(x, p);
        let e = exp8(_mm256_add_ps(a, a));
        let one = _mm256_set1_ps(1.0);
        let q = _mm256_div_ps(_mm256_set1_ps(2.0), _mm256_add_ps(e, one));
        let large = _mm256_or_ps(_mm256_sub_ps(one, q), _mm256_and_ps(x, sign));
        let is_small = _mm256_cmp_ps::<_CMP_LT_OQ>(a, _mm256_set1_ps(super::TANH_SERIES_BELOW));
        _mm256_blendv_ps(large, small, is_small)
    }

    /// Eight lanes of [`super::sigmoid_scalar`].
    #[target_feature(enable = "avx2,fma")]
    fn sigmoid8(x: __m256) -> __m256 {
        let e = exp8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0)));
        let one = _mm256_set1_ps(1.0);
        _mm256_div_ps(one, _mm256_add_ps(one, e))
    }

    /// `f` over eight lanes.
    #[target_feature(enable = "avx2,fma")]
    fn apply8(f: SpanFn, x: __m256, series: &[f32; 9]) -> __m256 {
        match f {
            SpanFn::Exp => exp8(x),
            SpanFn::Tanh => tanh8(x, series),
            SpanFn::Sigmoid => sigmoid8(x),
        }
    }

    /// `f` over every element, eight at a time (the tail through a padded copy).
    #[target_feature(enable = "avx2,fma")]
    fn apply_chunks(f: SpanFn, xs: &mut [f32], series: &[f32; 9]) {
        let mut chunks = xs.chunks_exact_mut(8);
        for c in &mut chunks {
            // SAFETY: `c` holds exactly eight f32s; unaligned loads and stores.
            unsafe {
                let x = _mm256_loadu_ps(c.as_ptr());
                _mm256_storeu_ps(c.as_mut_ptr(), apply8(f, x, series));
            }
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let mut buf = [0f32; 8];
            buf[..tail.len()].copy_from_slice(tail);
            // SAFETY: `buf` holds eight f32s.
            unsafe {
                let x = _mm256_loadu_ps(buf.as_ptr());
                _mm256_storeu_ps(buf.as_mut_ptr(), apply8(f, x, series));
            }
            tail.copy_from_slice(&buf[..tail.len()]);
        }
    }

    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn apply_in_place(f: SpanFn, xs: &mut [f32]) {
        let series = super::tanh_f32_series();
        // One loop per function, so each inner loop is straight-line code.
        match f {
            SpanFn::Exp => apply_chunks(SpanFn::Exp, xs, series),
            SpanFn::Tanh => apply_chunks(SpanFn::Tanh, xs, series),
            SpanFn::Sigmoid => apply_chunks(SpanFn::Sigmoid, xs, series),
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::exp_f32::*;
    use super::SpanFn;
    use std::arch::x86_64::*;

    /// Sixteen lanes of [`super::exp_scalar`] (AVX-512F; the float logic through integer ops,
    /// which AVX-512F has).
    #[target_feature(enable = "avx512f")]
    fn exp16(x: __m512) -> __m512 {
        let t = _mm512_fmadd_ps(x, _mm512_set1_ps(LOG2_E), _mm512_set1_ps(MAGIC));
        let k = _mm512_sub_ps(t, _mm512_set1_ps(MAGIC));
        let r = _mm512_fmadd_ps(k, _mm512_set1_ps(NEG_LN2_HI), x);
        let r = _mm512_fmadd_ps(k, _mm512_set1_ps(NEG_LN2_LO), r);
        let mut p = _mm512_set1_ps(POLY[6]);
        for &c in POLY[..6].iter().rev() {
            p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(c));
        }
        let k_bits = _mm512_slli_epi32::<23>(_mm512_castps_si512(t));
        let y = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), k_bits));
        let over = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(x, _mm512_set1_ps(HI));
        let y = _mm512_mask_add_ps(y, over, x, _mm512_set1_ps(f32::INFINITY));
        let under = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(LO));
        _mm512_maskz_mov_ps(!under, y)
    }

    /// Sixteen lanes of [`super::tanh_scalar`].
    #[target_feature(enable = "avx512f")]
    fn tanh16(x: __m512, series: &[f32; 9]) -> __m512 {
        let xi = _mm512_castps_si512(x);
        let sign = _mm512_set1_epi32(i32::MIN);
        let a = _mm512_castsi512_ps(_mm512_andnot_si512(sign, xi));
        let z = _mm512_mul_ps(x, x);
        let mut p = _mm512_set1_ps(series[8]);
        for &c in series[..8].iter().rev() {
            p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(c));
        }
        let small = _mm512_mul_ps(x, p);
        let e = exp16(_mm512_add_ps(a, a));
        let one = _mm512_set1_ps(1.0);
        let q = _mm512_div_ps(_mm512_set1_ps(2.0), _mm512_add_ps(e, one));
        let large_abs = _mm512_castps_si512(_mm512_sub_ps(one, q));
        let large = _mm512_or_si512(large_abs, _mm512_and_si512(xi, sign));
        let is_small =
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, _mm512_set1_ps(super::TANH_SERIES_BELOW));
        _mm512_mask_blend_ps(is_small, _mm512_castsi512_ps(large), small)
    }

    /// Sixteen lanes of [`super::sigmoid_scalar`].
    #[target_feature(enable = "avx512f")]
    fn sigmoid16(x: __m512) -> __m512 {
        let neg = _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32(i32::MIN));
        let e = exp16(_mm512_castsi512_ps(neg));
        let one = _mm512_set1_ps(1.0);
        _mm512_div_ps(one, _mm512_add_ps(one, e))
    }

    /// `f` over sixteen lanes.
    #[target_feature(enable = "avx512f")]
    fn apply16(f: SpanFn, x: __m512, series: &[f32; 9]) -> __m512 {
        match f {
            SpanFn::Exp => exp16(x),
            SpanFn::Tanh => tanh16(x, series),
            SpanFn::Sigmoid => sigmoid16(x),
        }
    }

    /// `f` over every element, sixteen at a time (the tail by masked loads and stores).
    #[target_feature(enable = "avx512f")]
    fn apply_chunks(f: SpanFn, xs: &mut [f32], series: &[f32; 9]) {
        let mut chunks = xs.chunks_exact_mut(16);
        for c in &mut chunks {
            // SAFETY: `c` holds exactly sixteen f32s; unaligned loads and stores.
            unsafe {
                let x = _mm512_loadu_ps(c.as_ptr());
                _mm512_storeu_ps(c.as_mut_ptr(), apply16(f, x, series));
            }
        }
        let tail = chunks.into_remainder();
        if !tail.is_empty() {
            let mask: __mmask16 = (1u16 << tail.len()) - 1;
            // SAFETY: the mask covers exactly the tail's elements; masked-off lanes are not
            // read or written.
            unsafe {
                let x = _mm512_maskz_loadu_ps(mask, tail.as_ptr());
                _mm512_mask_storeu_ps(tail.as_mut_ptr(), mask, apply16(f, x, series));
            }
        }
    }

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn apply_in_place(f: SpanFn, xs: &mut [f32]) {
        let series = super::tanh_f32_series();
        // One loop per function, so each inner loop is straight-line code.
        match f {
            SpanFn::Exp => apply_chunks(SpanFn::Exp, xs, series),
            SpanFn::Tanh => apply_chunks(SpanFn::Tanh, xs, series),
            SpanFn::Sigmoid => apply_chunks(SpanFn::Sigmoid, xs, series),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn specials() -> Vec<f32> {
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            exp_f32::HI,
            exp_f32::LO,
            f32::from_bits(exp_f32::HI.to_bits() + 1),
            f32::from_bits(exp_f32::LO.to_bits() + 1),
            88.0,
            -87.0,
            -88.0,
            89.0,
            -104.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7fc0_0123),
            f32::MIN_POSITIVE,
            1e-40,
            f32::MAX,
            f32::MIN,
        ];
        let mut s = 0x2545_f491_u32;
        for _ in 0..4000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            xs.push(f32::from_bits(s));
            xs.push((s as f32 / u32::MAX as f32) * 200.0 - 100.0);
        }
        xs
    }

    /// `f` over `xs` by every path this CPU has (the dispatching entry included).
    fn vector_results(f: SpanFn, xs: &[f32]) -> Vec<(&'static str, Vec<f32>)> {
        let mut out = Vec::new();
        let mut run = |path, apply: &dyn Fn(&mut [f32])| {
            let mut ys = xs.to_vec();
            apply(&mut ys);
            out.push((path, ys));
        };
        run("dispatch", &|ys| apply_f32_in_place(f, ys));
        #[cfg(target_arch = "x86_64")]
        {
            if vector_path() {
                // SAFETY: AVX2 and FMA detected.
                run("avx2", &|ys| unsafe { avx2::apply_in_place(f, ys) });
            }
            if vector_path() && std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: AVX-512F detected.
                run("avx512", &|ys| unsafe { avx512::apply_in_place(f, ys) });
            }
        }
        out
    }

    #[test]
    fn the_vector_path_gives_the_scalar_bits_at_every_length() {
        let mut xs = specials();
        xs.extend([
            0.549_999_9,
            0.55,
            -0.55,
            0.550_000_1,
            9.0,
            -9.0,
            1e-3,
            -1e-30,
        ]);
        let series = tanh_f32_series();
        for f in [SpanFn::Exp, SpanFn::Tanh, SpanFn::Sigmoid] {
            let scalar = |x: f32| match f {
                SpanFn::Exp => exp_scalar(x),
                SpanFn::Tanh => tanh_scalar(x, series),
                SpanFn::Sigmoid => sigmoid_scalar(x),
            };
            let want: Vec<u32> = xs.iter().map(|&x| scalar(x).to_bits()).collect();
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 23, xs.len()] {
                for (path, got) in vector_results(f, &xs[..len]) {
                    let got: Vec<u32> = got.iter().map(|y| y.to_bits()).collect();
                    assert_eq!(got, want[..len], "{f:?} by {path}, length {len}");
                }
            }
        }
    }

    #[test]
    fn the_high_part_of_ln2_has_trailing_zero_bits() {
        // -0.693359375: k · NEG_LN2_HI is exact for |k| < 2^11.
        assert_eq!(exp_f32::NEG_LN2_HI.to_bits(), 0xbf31_8000);
    }

    #[test]
    fn the_scalar_path_is_exp_within_its_bound() {
        for x in specials() {
            let y = exp_scalar(x);
            let exact = f64::from(x).exp();
            if x.is_nan() {
                assert!(y.is_nan());
            } else if x > exp_f32::HI {
                assert_eq!(y, f32::INFINITY, "{x}");
            } else if x < exp_f32::LO {
                assert_eq!(y.to_bits(), 0, "{x}");
            } else {
                let ulp = f64::from(f32::from_bits((exact as f32).to_bits() + 1)) - exact;
                assert!(
                    ((f64::from(y) - exact) / ulp.abs()).abs() <= 2.0,
                    "exp({x}) = {y}, exactly {exact}"
                );
            }
        }
    }
}
