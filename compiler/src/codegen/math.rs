//! Polynomial approximations of exp, log, tanh, sigmoid, sin and cos, emitted as straight-line
//! Cranelift code that works unchanged on scalars (`f32`, `f64`) and vectors (`f32x4`, `f64x2`)
//! — no libm call, no branch.
//!
//! Assumes round-to-nearest floating point and that vector integer add, shift, and, xor and
//! compare exist for the lane width (SSE2/SSE4.1 on x86-64). Guarantees the accuracy measured by
//! `tests/math_accuracy.rs` and recorded in docs/numerics.md. Techniques: Cody–Waite range
//! reduction, Taylor/atanh series evaluated by Horner's rule (fused multiply-add when the host
//! has FMA), rounding and `2^n` built by the "magic number" trick (`(x + 1.5·2^p) - 1.5·2^p`,
//! then exponent bits by integer add and shift), so no float↔int conversion instruction is
//! needed on vectors.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{types, Endianness, InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;
use weft_runtime::vmath::{exp_f32, log_f32, tanh_f32, ExpForm};

/// Emits math functions into a function under construction.
pub(crate) struct MathEmitter<'a, 'b> {
    /// The function builder, positioned where code should go.
    pub b: &'a mut FunctionBuilder<'b>,
    /// Whether `fma` may be used (the host has FMA).
    pub fma: bool,
}

/// Per-precision constants.
struct Precision {
    /// `1.5 · 2^mantissa_bits`: adding and subtracting it rounds to an integer.
    magic: f64,
    mantissa_bits: i64,
    bias: i64,
    sign_shift: i64,
}

fn precision(ty: Type) -> Precision {
    if ty.lane_type() == types::F32 {
        Precision {
            magic: 12_582_912.0,
            mantissa_bits: 23,
            bias: 127,
            sign_shift: 31,
        }
    } else {
        Precision {
            magic: 6_755_399_441_055_744.0,
            mantissa_bits: 52,
            bias: 1023,
            sign_shift: 63,
        }
    }
}

fn is_f32(ty: Type) -> bool {
    ty.lane_type() == types::F32
}

/// The integer type of the same shape as float type `ty`.
pub(crate) fn int_type_of(ty: Type) -> Type {
    match (ty.lane_type() == types::F32, ty.is_vector()) {
        (true, false) => types::I32,
        (false, false) => types::I64,
        (true, true) => types::I32X4,
        (false, true) => types::I64X2,
    }
}

/// Minimax polynomial for `e^r` on `|r| ≤ ln2/2`, degree 12: SLEEF's `xexp` (u10) coefficients.
#[allow(clippy::excessive_precision)]
const EXP_F64: [f64; 13] = [
    1.0,
    1.0,
    0.5,
    0.166_666_666_666_666_851_703_837,
    0.041_666_666_666_666_504_759_142_2,
    0.008_333_333_333_316_527_216_649_84,
    0.001_388_888_888_897_744_922_079_62,
    0.000_198_412_698_960_509_205_564_975,
    2.480_158_715_923_547_299_879_1e-5,
    2.755_723_629_119_288_276_294_23e-6,
    2.755_739_112_349_004_718_933_38e-7,
    2.511_129_308_928_765_186_106_61e-8,
    2.088_606_211_072_836_875_363_41e-9,
];

/// Taylor coefficients of `tanh(x) / x` in powers of `x²`, from `tanh' = 1 − tanh²`: the
/// small-argument series of the f64 `tanh`.
fn tanh_coefficients(terms: usize) -> Vec<f64> {
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

fn factorial(n: u32) -> f64 {
    (1..=n).map(f64::from).product()
}

impl MathEmitter<'_, '_> {
    /// A float constant of type `ty` (splatted for vectors).
    pub fn fconst(&mut self, ty: Type, c: f64) -> Value {
        let s = if is_f32(ty) {
            self.b.ins().f32const(c as f32)
        } else {
            self.b.ins().f64const(c)
        };
        if ty.is_vector() {
            self.b.ins().splat(ty, s)
        } else {
            s
        }
    }

    fn iconst(&mut self, ity: Type, c: i64) -> Value {
        let s = self.b.ins().iconst(ity.lane_type(), c);
        if ity.is_vector() {
            self.b.ins().splat(ity, s)
        } else {
            s
        }
    }

    /// Reinterprets the bits of `v` as type `to`.
    pub fn bitcast(&mut self, to: Type, v: Value) -> Value {
        let flags = if to.is_vector() {
            MemFlagsData::new().with_endianness(Endianness::Little)
        } else {
            MemFlagsData::new()
        };
        self.b.ins().bitcast(to, flags, v)
    }

    /// `cond ? x : y`, where `cond` is a comparison result of matching shape (an `i8` for
    /// scalars, an all-ones/all-zeros lane mask for vectors).
    pub fn select(&mut self, cond: Value, x: Value, y: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        if ty.is_vector() {
            let mask = if self.b.func.dfg.value_type(cond) == ty {
                cond
            } else {
                self.bitcast(ty, cond)
            };
            self.b.ins().bitselect(mask, x, y)
        } else {
            self.b.ins().select(cond, x, y)
        }
    }

    fn fcmp_const(&mut self, cc: FloatCC, x: Value, c: f64) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let k = self.fconst(ty, c);
        self.b.ins().fcmp(cc, x, k)
    }

    /// `a · x + c`, fused when the host has FMA.
    fn mul_add(&mut self, a: Value, x: Value, c: Value) -> Value {
        if self.fma {
            self.b.ins().fma(a, x, c)
        } else {
            let p = self.b.ins().fmul(a, x);
            self.b.ins().fadd(p, c)
        }
    }

    /// `Σ coeffs[i] · x^i` by Horner's rule.
    fn horner(&mut self, x: Value, coeffs: &[f64]) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let (last, rest) = coeffs.split_last().expect("a polynomial has a coefficient");
        let mut acc = self.fconst(ty, *last);
        for &c in rest.iter().rev() {
            let k = self.fconst(ty, c);
            acc = self.mul_add(acc, x, k);
        }
        acc
    }

    /// `x` rounded to the nearest integer (ties to even); exact for `|x| < 2^(p-1)`.
    fn round(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let m = self.fconst(ty, precision(ty).magic);
        let t = self.b.ins().fadd(x, m);
        self.b.ins().fsub(t, m)
    }

    /// The low bits of the integer `n` (a float holding an integer, `|n| < 2^(p-1)`) as an
    /// integer of the same shape.
    fn small_int_bits(&mut self, n: Value) -> Value {
        let ty = self.b.func.dfg.value_type(n);
        let m = self.fconst(ty, precision(ty).magic);
        let t = self.b.ins().fadd(n, m);
        self.bitcast(int_type_of(ty), t)
    }

    /// `x` where `cond` is false, `+0` where it is true (`cond` a comparison of matching shape).
    fn zero_where(&mut self, cond: Value, y: Value) -> Value {
        let ty = self.b.func.dfg.value_type(y);
        if ty.is_vector() {
            // One `andn` instead of a blend with a zero vector.
            let ity = int_type_of(ty);
            let mask = self.bitcast(ity, cond);
            let bits = self.bitcast(ity, y);
            let kept = self.b.ins().band_not(bits, mask);
            self.bitcast(ty, kept)
        } else {
            let zero = self.fconst(ty, 0.0);
            self.b.ins().select(cond, zero, y)
        }
    }

    /// `e^x`: Cody–Waite reduction `x = k·ln2 + r`, `|r| ≤ ln2/2`, a minimax polynomial for
    /// `e^r`, and `2^k` added into the exponent bits of that polynomial's value.
    ///
    /// Exact limits: `+inf` above the largest `x` with a finite result, NaN for NaN (its
    /// payload kept); `+0` below `ln(MIN_POSITIVE)` — results that would be subnormal are
    /// flushed to zero (docs/numerics.md), which is what lets one integer add scale the result.
    pub fn exp(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        // f32: the form and limits the native span routine shares (weft_runtime::vmath), so
        // an `exp` moved to a span gives the same bits.
        let (y, hi, lo) = if is_f32(ty) {
            let y = self.exp_form(x, &exp_f32::FORM);
            (y, f64::from(exp_f32::HI), f64::from(exp_f32::LO))
        } else {
            // −ln 2 in two parts and SLEEF's polynomial; the largest x with a finite e^x and
            // the smallest with a normal one.
            let neg_ln2 = [-0.693_147_180_369_123_8, -1.908_214_929_270_587_7e-10];
            let y = self.exp_unchecked(x, std::f64::consts::LOG2_E, &neg_ln2, &EXP_F64);
            (y, 709.782_712_893_384, -708.396_418_532_264_1)
        };
        // Above `hi` or NaN: x + inf is +inf, or x's NaN.
        let over = self.fcmp_const(FloatCC::UnorderedOrGreaterThan, x, hi);
        let inf = self.fconst(ty, f64::INFINITY);
        let x_inf = self.b.ins().fadd(x, inf);
        let y = self.select(over, x_inf, y);
        let under = self.fcmp_const(FloatCC::LessThan, x, lo);
        self.zero_where(under, y)
    }

    /// The f32 exponential `form` describes (whose result is normal), operation for
    /// operation as the span routine evaluates it.
    fn exp_form(&mut self, x: Value, form: &ExpForm) -> Value {
        let parts: Vec<f64> = form.parts.iter().map(|&c| f64::from(c)).collect();
        let coeffs: Vec<f64> = form.poly.iter().map(|&c| f64::from(c)).collect();
        self.exp_unchecked(x, f64::from(form.log2e), &parts, &coeffs)
    }

    /// An exponential whose result is normal (`weft_runtime::vmath::ExpForm`): `k =
    /// round(x·log2e)`, `r = x + k·parts[0] + …`, the polynomial `coeffs` in `r`, `2^k` added
    /// into the exponent bits.
    fn exp_unchecked(&mut self, x: Value, log2e: f64, parts: &[f64], coeffs: &[f64]) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        // t = x·log2e + magic holds k = round(x·log2e) in its low mantissa bits.
        let log2e = self.fconst(ty, log2e);
        let magic = self.fconst(ty, precision(ty).magic);
        let t = self.mul_add(x, log2e, magic);
        let k = self.b.ins().fsub(t, magic);
        let mut r = x;
        for &part in parts {
            let c = self.fconst(ty, part);
            r = self.mul_add(k, c, r);
        }
        let p = self.horner(r, coeffs);
        // p ∈ [0.7, 1.42] and k ∈ [-126, 128] (f32) in the unflushed range, so p·2^k is
        // normal and is p's bits plus k shifted into the exponent field; shifting t's bits
        // left by the mantissa width drops the magic number and keeps k (two's complement).
        let ity = int_type_of(ty);
        let t_bits = self.bitcast(ity, t);
        let shift = self.b.ins().iconst(types::I32, precision(ty).mantissa_bits);
        let k_bits = self.b.ins().ishl(t_bits, shift);
        let p_bits = self.bitcast(ity, p);
        let y_bits = self.b.ins().iadd(p_bits, k_bits);
        self.bitcast(ty, y_bits)
    }

    /// Natural logarithm.
    pub fn log(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let ity = int_type_of(ty);
        let p = precision(ty);
        let (min_normal, subnormal_scale) = if is_f32(ty) {
            (f64::from(f32::MIN_POSITIVE), log_f32::SUBNORMAL_SCALE)
        } else {
            (f64::MIN_POSITIVE, 54)
        };
        // Scale subnormals into the normal range.
        let is_sub = self.fcmp_const(FloatCC::LessThan, x, min_normal);
        let scale = self.fconst(ty, 2f64.powi(subnormal_scale));
        let scaled = self.b.ins().fmul(x, scale);
        let xs = self.select(is_sub, scaled, x);
        let zero_adj = self.fconst(ty, 0.0);
        let sub_adj = self.fconst(ty, -f64::from(subnormal_scale));
        let e_adj = self.select(is_sub, sub_adj, zero_adj);
        // x = m · 2^e with m in [1, 2).
        let bits = self.bitcast(ity, xs);
        let shift = self.b.ins().iconst(types::I32, p.mantissa_bits);
        let field = self.b.ins().ushr(bits, shift);
        let exp_mask = self.iconst(ity, 2 * p.bias + 1);
        let field = self.b.ins().band(field, exp_mask);
        // The exponent field as a float: OR it into the mantissa of 2^p, subtract 2^p.
        let two_p = 2f64.powi(p.mantissa_bits as i32);
        let two_p_bits = self.fconst(ty, two_p);
        let two_p_bits = self.bitcast(ity, two_p_bits);
        let ef_bits = self.b.ins().bor(field, two_p_bits);
        let ef = self.bitcast(ty, ef_bits);
        let two_p_f = self.fconst(ty, two_p);
        let ef = self.b.ins().fsub(ef, two_p_f);
        let mant_mask = self.iconst(ity, (1i64 << p.mantissa_bits) - 1);
        let mant = self.b.ins().band(bits, mant_mask);
        let one = self.fconst(ty, 1.0);
        let one_bits = self.bitcast(ity, one);
        let m_bits = self.b.ins().bor(mant, one_bits);
        let m = self.bitcast(ty, m_bits);
        // Move m into [sqrt(1/2), sqrt(2)).
        let big = self.fcmp_const(FloatCC::GreaterThan, m, std::f64::consts::SQRT_2);
        let half = self.fconst(ty, 0.5);
        let m_half = self.b.ins().fmul(m, half);
        let m = self.select(big, m_half, m);
        let ef_plus = self.b.ins().fadd(ef, one);
        let ef = self.select(big, ef_plus, ef);
        let bias = self.fconst(ty, p.bias as f64);
        let e = self.b.ins().fsub(ef, bias);
        let e = self.b.ins().fadd(e, e_adj);
        let (ln2_hi, ln2_lo) = if is_f32(ty) {
            (f64::from(log_f32::LN2_HI), f64::from(log_f32::LN2_LO))
        } else {
            (0.693_147_180_369_123_8, 1.908_214_929_270_587_7e-10)
        };
        let c_lo = self.fconst(ty, ln2_lo);
        let c_hi = self.fconst(ty, ln2_hi);
        let f = self.b.ins().fsub(m, one);
        let y = if is_f32(ty) {
            // Cephes logf: log(1 + f) = f - f²/2 + f³·P(f), no divide.
            let z = self.b.ins().fmul(f, f);
            let poly = self.horner(f, &log_f32::POLY.map(f64::from));
            let fz = self.b.ins().fmul(f, z);
            let tail = self.b.ins().fmul(fz, poly);
            let tail = self.mul_add(e, c_lo, tail);
            let minus_half = self.fconst(ty, -0.5);
            let tail = self.mul_add(z, minus_half, tail);
            let log_m = self.b.ins().fadd(f, tail);
            self.mul_add(e, c_hi, log_m)
        } else {
            // log(m) = 2 atanh(s), s = (m - 1) / (m + 1).
            let two = self.fconst(ty, 2.0);
            let den = self.b.ins().fadd(f, two);
            let s = self.b.ins().fdiv(f, den);
            let z = self.b.ins().fmul(s, s);
            let coeffs: Vec<f64> = (0..13).map(|i| 1.0 / (2.0 * f64::from(i) + 1.0)).collect();
            let series = self.horner(z, &coeffs);
            let two_s = self.b.ins().fadd(s, s);
            let log_m = self.b.ins().fmul(two_s, series);
            let low = self.mul_add(e, c_lo, log_m);
            self.mul_add(e, c_hi, low)
        };
        // Special cases: +inf, ±0, negative or NaN.
        let inf = self.fconst(ty, f64::INFINITY);
        let is_inf = self.fcmp_const(FloatCC::Equal, x, f64::INFINITY);
        let y = self.select(is_inf, inf, y);
        let is_zero = self.fcmp_const(FloatCC::Equal, x, 0.0);
        let neg_inf = self.fconst(ty, f64::NEG_INFINITY);
        let y = self.select(is_zero, neg_inf, y);
        let invalid = self.fcmp_const(FloatCC::UnorderedOrLessThan, x, 0.0);
        let nan = self.fconst(ty, f64::NAN);
        self.select(invalid, nan, y)
    }

    /// `1 / (1 + e^-x)`.
    pub fn sigmoid(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let neg = self.b.ins().fneg(x);
        let e = self.exp(neg);
        let one = self.fconst(ty, 1.0);
        let den = self.b.ins().fadd(one, e);
        self.b.ins().fdiv(one, den)
    }

    /// Hyperbolic tangent. f32: the algorithm of `weft_runtime::vmath::tanh_f32`, shared
    /// with the span routine; f64: an odd series below 0.55, `1 − 2/(e^{2|x|} + 1)` above.
    pub fn tanh(&mut self, x: Value) -> Value {
        if is_f32(self.b.func.dfg.value_type(x)) {
            self.tanh_f32(x)
        } else {
            self.tanh_f64(x)
        }
    }

    /// [`Self::tanh`] in f32 (scalar or vector), operation for operation as
    /// `weft_runtime::vmath` computes it.
    fn tanh_f32(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let f = |c: f32| f64::from(c);
        let a = self.b.ins().fabs(x);
        let z = self.b.ins().fmul(x, x);
        let p = self.horner(z, &tanh_f32::POLY.map(f));
        let xz = self.b.ins().fmul(x, z);
        let small = self.mul_add(xz, p, x);
        // `a < CLAMP ? a : CLAMP`, which clamps a NaN too (as the span routine's `vminps`
        // does; it then takes `small`), in the form Cranelift lowers to one `minps`.
        let clamp = self.fconst(ty, f(tanh_f32::CLAMP));
        let under = self.b.ins().fcmp(FloatCC::LessThan, a, clamp);
        let am = self.select(under, a, clamp);
        let e = self.exp_form(am, &tanh_f32::EXP_FORM);
        let one = self.fconst(ty, 1.0);
        let num = self.b.ins().fsub(one, e);
        let den = self.b.ins().fadd(one, e);
        let large = self.b.ins().fdiv(num, den);
        let is_large = self.fcmp_const(FloatCC::GreaterThanOrEqual, a, f(tanh_f32::POLY_BELOW));
        let y = self.select(is_large, large, small);
        self.or_sign_of(y, x)
    }

    /// `y`'s bits with `x`'s sign bit ORed in.
    fn or_sign_of(&mut self, y: Value, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let ity = int_type_of(ty);
        let sign_mask = self.iconst(ity, 1i64 << precision(ty).sign_shift);
        let x_bits = self.bitcast(ity, x);
        let sign = self.b.ins().band(x_bits, sign_mask);
        let y_bits = self.bitcast(ity, y);
        let signed = self.b.ins().bor(y_bits, sign);
        self.bitcast(ty, signed)
    }

    /// [`Self::tanh`] in f64: the series to 20 terms below 0.55.
    fn tanh_f64(&mut self, x: Value) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let a = self.b.ins().fabs(x);
        let z = self.b.ins().fmul(x, x);
        let series = self.horner(z, &tanh_coefficients(20));
        let small = self.b.ins().fmul(x, series);
        let two_a = self.b.ins().fadd(a, a);
        let e = self.exp(two_a);
        let one = self.fconst(ty, 1.0);
        let two = self.fconst(ty, 2.0);
        let den = self.b.ins().fadd(e, one);
        let q = self.b.ins().fdiv(two, den);
        let large_abs = self.b.ins().fsub(one, q);
        let large = self.or_sign_of(large_abs, x);
        let is_small = self.fcmp_const(FloatCC::LessThan, a, 0.55);
        self.select(is_small, small, large)
    }

    /// Sine.
    pub fn sin(&mut self, x: Value) -> Value {
        self.sin_cos(x, 0)
    }

    /// Cosine.
    pub fn cos(&mut self, x: Value) -> Value {
        self.sin_cos(x, 1)
    }

    /// `sin(x + quadrant_shift · π/2)`.
    fn sin_cos(&mut self, x: Value, quadrant_shift: i64) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        let ity = int_type_of(ty);
        let (parts, sin_terms, cos_terms): ([f64; 3], u32, u32) = if is_f32(ty) {
            (
                [
                    1.570_312_5,
                    4.837_512_969_970_703e-4,
                    7.549_789_954_891_882e-8,
                ],
                5,
                6,
            )
        } else {
            (
                [
                    1.570_796_251_296_997,
                    7.549_789_415_861_596e-8,
                    5.390_302_858_158_119e-15,
                ],
                9,
                10,
            )
        };
        let two_over_pi = self.fconst(ty, std::f64::consts::FRAC_2_PI);
        let scaled = self.b.ins().fmul(x, two_over_pi);
        let k = self.round(scaled);
        let neg_k = self.b.ins().fneg(k);
        let mut r = x;
        for part in parts {
            let c = self.fconst(ty, part);
            r = self.mul_add(neg_k, c, r);
        }
        let z = self.b.ins().fmul(r, r);
        let sin_coeffs: Vec<f64> = (0..sin_terms)
            .map(|i| (-1f64).powi(i as i32) / factorial(2 * i + 1))
            .collect();
        let cos_coeffs: Vec<f64> = (0..cos_terms)
            .map(|i| (-1f64).powi(i as i32) / factorial(2 * i))
            .collect();
        let sin_series = self.horner(z, &sin_coeffs);
        let sin_r = self.b.ins().fmul(r, sin_series);
        let cos_r = self.horner(z, &cos_coeffs);
        // Quadrant q = k + shift (mod 4): odd q swaps sin and cos, q & 2 negates.
        let q = self.small_int_bits(k);
        let q = if quadrant_shift != 0 {
            let s = self.iconst(ity, quadrant_shift);
            self.b.ins().iadd(q, s)
        } else {
            q
        };
        let one = self.iconst(ity, 1);
        let odd = self.b.ins().band(q, one);
        let zero = self.iconst(ity, 0);
        let swap = self.b.ins().icmp(IntCC::NotEqual, odd, zero);
        let y = self.select(swap, cos_r, sin_r);
        let two = self.iconst(ity, 2);
        let neg = self.b.ins().band(q, two);
        let shift = self
            .b
            .ins()
            .iconst(types::I32, precision(ty).sign_shift - 1);
        let sign = self.b.ins().ishl(neg, shift);
        let y_bits = self.bitcast(ity, y);
        let flipped = self.b.ins().bxor(y_bits, sign);
        self.bitcast(ty, flipped)
    }
}

#[cfg(test)]
mod tests {
    use super::tanh_coefficients;

    #[test]
    fn tanh_series_matches_known_coefficients() {
        let c = tanh_coefficients(4);
        let expected = [1.0, -1.0 / 3.0, 2.0 / 15.0, -17.0 / 315.0];
        for (a, b) in c.iter().zip(expected) {
            assert!((a - b).abs() < 1e-15, "{a} vs {b}");
        }
    }
}
