//! Native vector math over contiguous spans, which JIT kernels call where their own 128-bit
//! code is compute-bound: Cranelift emits only 4-lane f32 vectors and keeps a polynomial's
//! dozen constants in 16 registers by spilling, so an f32 `exp` costs the JIT about 35
//! instructions per four lanes; rustc's AVX2 code of the same algorithm does eight lanes in
//! about 20, its AVX-512 code sixteen.
//!
//! Assumes nothing of the caller but a valid span. Guarantees: [`exp_f32_in_place`],
//! [`tanh_f32_in_place`], [`sigmoid_f32_in_place`] and [`log_f32_in_place`] compute, element by
//! element, bit for bit what the JIT's inline f32 `exp`, `tanh`, `sigmoid` and `log` compute
//! with FMA (`compiler/src/codegen/math.rs`, from the constants of [`exp_f32`], [`tanh_f32`]
//! and [`log_f32`]):
//! the same reductions, polynomials, Horner order, fused multiply-adds,
//! divides and edge rules, so moving one from inline code to a span changes no result
//! (`tests/jit.rs` checks it bit for bit; a NaN result is NaN on both, but its sign and
//! payload may differ, since Cranelift and rustc each fold negations into other operations).
//! The path is the host [`Target`]'s level ([`span_isa`]): AVX-512F (sixteen lanes), else
//! AVX2 with FMA (eight), else scalar; all three give the same bits (`f32::mul_add` is the fused
//! operation; the unit tests compare every path the CPU has).
//!
//! `unsafe` here: the AVX2 and AVX-512 intrinsics (called only where the host `Target` has
//! them) and the span entry points JIT code calls with a raw pointer and length (its caller
//! vouches for them).

/// How an f32 exponential of normal result is reduced and evaluated: `k = round(x·log2e)`,
/// `r = x + k·parts[0] + k·parts[1] + …` (one fused multiply-add each), `p = Σ poly[i]·r^i`
/// by Horner's rule, the result `p·2^k` by adding `k` into `p`'s exponent bits.
pub struct ExpForm {
    /// The factor of `x` giving `k`.
    pub log2e: f32,
    /// The reduction's constants, in order.
    pub parts: &'static [f32],
    /// The polynomial, lowest degree first.
    pub poly: &'static [f32],
}

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
    /// `e^x`: `x` reduced by `−ln 2` in two parts, [`POLY`].
    pub const FORM: super::ExpForm = super::ExpForm {
        log2e: LOG2_E,
        parts: &[NEG_LN2_HI, NEG_LN2_LO],
        poly: &POLY,
    };
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

/// The f32 `tanh` algorithm's constants, shared by the JIT's inline code and the span routine.
///
/// Below [`POLY_BELOW`](tanh_f32::POLY_BELOW), `tanh x = x + x·x²·P(x²)`; from it on,
/// `±(1 − e)/(1 + e)` with `e = e^{−2|x|}` (`|x|` clamped to [`CLAMP`](tanh_f32::CLAMP)),
/// reduced and evaluated as [`exp_f32`] does, without its overflow and underflow tests, which
/// the clamp makes unnecessary. 27 vector operations (the clamp one `min`), one divide, no
/// branch.
pub mod tanh_f32 {
    /// Below this `|x|` the polynomial; at or above it the exponential form, whose
    /// cancellation in `1 − e` costs accuracy for smaller `|x|`.
    pub const POLY_BELOW: f32 = 0.55;
    /// `P`, lowest degree first: a minimax fit of `(tanh(x)/x − 1)/x²` in powers of `x²` on
    /// `|x| ≤ 0.55`, weighted for `tanh`'s relative error (Lawson's iteratively reweighted
    /// least squares). Degree 3: 0.62 ulp of approximation error, 1.29 ulp at worst with the
    /// rounding, against 0.77 for degree 4 — under the exponential form's 1.51, so the extra
    /// multiply-add would buy nothing at the function's worst case.
    // The fitted digits are kept verbatim.
    #[allow(clippy::excessive_precision)]
    pub const POLY: [f32; 4] = [
        -0.333_329_468_965_530_4,
        0.133_207_246_661_186_22,
        -0.052_671_801_298_856_735,
        0.016_437_562_182_545_662,
    ];
    /// `|x|` is clamped to this before the exponential: `tanh` rounds to 1 from 9.01 on,
    /// and `e^{−2·9.1}` is normal, so the `2^k` scaling needs no underflow test.
    pub const CLAMP: f32 = 9.1;
    /// `e = e^{−2m}` of the clamped `m = min(|x|, CLAMP)`, evaluated from `m` itself: the
    /// exp's algorithm on `−2m` with `−ln 2` in one part (its reduction error in `e` is
    /// relative, and `e ≤ 1/3` shrinks it in `(1 − e)/(1 + e)`; two parts gave the same worst
    /// case), the doubling folded into the constants. Every fold scales by a power of two,
    /// so the results are bit for bit those of computing `−2m` first: `k` from
    /// `m·(−2·log2 e)`, the reduced argument `s = m + k·(ln 2)/2 = −r/2`, and the
    /// polynomial in `s` with coefficients `POLY[i]·(−2)^i`, whose Horner steps are the
    /// steps in `r` times `(−2)^i` — one multiply fewer per element.
    pub const EXP_FORM: super::ExpForm = super::ExpForm {
        log2e: -2.0 * std::f32::consts::LOG2_E,
        parts: &[std::f32::consts::LN_2 / 2.0],
        poly: &EXP_POLY,
    };

    /// [`super::exp_f32::POLY`] in `s = −r/2`.
    const EXP_POLY: [f32; 7] = {
        let mut p = super::exp_f32::POLY;
        let (mut i, mut scale) = (0, 1.0f32);
        while i < p.len() {
            p[i] *= scale;
            scale *= -2.0;
            i += 1;
        }
        p
    };
}

/// `tanh(x)` of one f32, exactly as the vector paths compute each lane ([`tanh_f32`]).
fn tanh_scalar(x: f32) -> f32 {
    use tanh_f32::*;
    let a = x.abs();
    let z = x * x;
    let p = horner_scalar(z, &POLY);
    let small = (x * z).mul_add(p, x);
    // `min` takes CLAMP for a NaN, as the vector paths' `vminps` does (a NaN takes `small`).
    let e = exp_unchecked_scalar(a.min(CLAMP), &EXP_FORM);
    let large = (1.0 - e) / (1.0 + e);
    let y = if a >= POLY_BELOW { large } else { small };
    f32::from_bits(y.to_bits() | (x.to_bits() & 0x8000_0000))
}

/// `Σ coeffs[i] · x^i` by Horner's rule with fused multiply-adds.
fn horner_scalar(x: f32, coeffs: &[f32]) -> f32 {
    let (&last, rest) = coeffs.split_last().expect("a polynomial has a coefficient");
    rest.iter().rev().fold(last, |p, &c| p.mul_add(x, c))
}

/// `1 / (1 + e^-x)` of one f32, exactly as the vector paths compute each lane.
fn sigmoid_scalar(x: f32) -> f32 {
    1.0 / (1.0 + exp_scalar(-x))
}

/// `e^x` of one f32, exactly as the vector paths compute each lane.
fn exp_scalar(x: f32) -> f32 {
    use exp_f32::*;
    let y = exp_unchecked_scalar(x, &FORM);
    if x.is_nan() || x > HI {
        x + f32::INFINITY
    } else if x < LO {
        0.0
    } else {
        y
    }
}

/// The exponential `form` describes, of one f32 whose result is normal.
fn exp_unchecked_scalar(x: f32, form: &ExpForm) -> f32 {
    use exp_f32::MAGIC;
    let t = x.mul_add(form.log2e, MAGIC);
    let k = t - MAGIC;
    let r = form.parts.iter().fold(x, |r, &c| k.mul_add(c, r));
    let p = horner_scalar(r, form.poly);
    f32::from_bits(p.to_bits().wrapping_add(t.to_bits() << 23))
}

/// The f32 `log` algorithm's constants, shared by the JIT's inline code and the span routine.
///
/// Subnormal `x` scaled by `2^SUBNORMAL_SCALE` first; `x = m·2^e` from the bits with `m` moved
/// into `[√½, √2)`; `f = m − 1`; Cephes `logf`: `log(1 + f) = f − f²/2 + f³·P(f)` (no divide),
/// `e·ln 2` added in two parts. `+inf` for `+inf`, `−inf` for `±0`, NaN for a negative or NaN
/// `x`.
pub mod log_f32 {
    /// Inputs below the smallest normal are scaled by `2^SUBNORMAL_SCALE` (and the exponent
    /// corrected), so the bits give their exponent and mantissa.
    pub const SUBNORMAL_SCALE: i32 = 25;
    /// `m` above this is halved (and the exponent raised by one).
    pub const SQRT_2: f32 = std::f64::consts::SQRT_2 as f32;
    /// `ln 2` in two parts: a high part with trailing zero bits and the remainder.
    // Written out exactly (355/512), as in Cephes.
    #[allow(clippy::excessive_precision)]
    pub const LN2_HI: f32 = 0.693_359_375;
    /// See [`LN2_HI`].
    pub const LN2_LO: f32 = -2.121_944_4e-4;
    /// Cephes `logf`'s `P`, lowest degree first.
    // The published digits are kept verbatim, so the source can be checked.
    #[allow(clippy::excessive_precision)]
    pub const POLY: [f32; 9] = [
        3.333_333_117_4e-1,
        -2.499_999_399_3e-1,
        2.000_071_476_5e-1,
        -1.666_805_766_5e-1,
        1.424_932_278_7e-1,
        -1.242_014_084_6e-1,
        1.167_699_874_0e-1,
        -1.151_461_031_0e-1,
        7.037_683_629_2e-2,
    ];
}

/// `ln x` of one f32, exactly as the vector paths compute each lane ([`log_f32`]).
fn log_scalar(x: f32) -> f32 {
    use log_f32::*;
    let is_sub = x < f32::MIN_POSITIVE;
    let xs = if is_sub {
        x * 2f32.powi(SUBNORMAL_SCALE)
    } else {
        x
    };
    let e_adj = if is_sub {
        -(SUBNORMAL_SCALE as f32)
    } else {
        0.0
    };
    let bits = xs.to_bits();
    let ef = ((bits >> 23) & 0xff) as f32;
    let m = f32::from_bits((bits & 0x7f_ffff) | 1f32.to_bits());
    let big = m > SQRT_2;
    let (m, ef) = if big { (m * 0.5, ef + 1.0) } else { (m, ef) };
    let e = (ef - 127.0) + e_adj;
    let f = m - 1.0;
    let z = f * f;
    let tail = (f * z) * horner_scalar(f, &POLY);
    let tail = z.mul_add(-0.5, e.mul_add(LN2_LO, tail));
    let y = e.mul_add(LN2_HI, f + tail);
    if x.is_nan() || x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        f32::INFINITY
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
    /// `ln x`.
    Log,
}

/// The vector level the runtime's native routines take on this CPU: the span routines here,
/// `span_sum`, `extreme`, `extreme_rows` and the GEMM fix-up's scans (`gemm.rs`). The host
/// [`Target`]'s, detected once (`target.rs`): a level it names is one the CPU has.
pub(crate) fn path() -> Isa {
    Target::host().isa()
}

/// The instruction set the span routines run on this CPU: `"AVX-512"` (sixteen lanes),
/// `"AVX2"` (eight), or `None` (the scalar path).
pub fn span_isa() -> Option<&'static str> {
    match path() {
        Isa::Scalar => None,
        isa => Some(isa.name()),
    }
}

pub use crate::prefetch::Prefetch;
use crate::prefetch::PrefetchCursor;
use crate::target::{Isa, Target};

/// One call of a span routine: `f` over `len` elements into `dst`, from `dst` itself or from
/// `src` (scaled and shifted by `form`), summing the results into `sums`, prefetching
/// `prefetch`.
///
/// Element by element (the scalar path, which the vector paths reproduce bit for bit):
/// `x = src.is_null() ? dst[i] : form.of(src[i], scale, shift); dst[i] = f(x)`, and for every `i` below
/// `len - len % width` (`width = sums.len()`), `sums[i % width] += dst[i]` in increasing `i`:
/// exactly what a JIT vector loop of `width` f32 lanes in total (`lanes × parts`) adds into
/// its partial accumulators, so handing the loop's sum to the routine changes no bit.
#[derive(Clone, Copy, Debug)]
struct Job {
    dst: *mut f32,
    len: usize,
    /// Where the arguments come from: `dst` itself when null.
    src: *const f32,
    shift: f32,
    scale: f32,
    /// How the argument is made from `src[i]`, `scale` and `shift`; only with a `src`.
    form: ArgForm,
    /// `width` f32 partial sums, or null.
    sums: *mut f32,
    width: usize,
    prefetch: Prefetch,
}

impl Job {
    /// `f` in place over `xs`.
    fn in_place(xs: &mut [f32], prefetch: Prefetch) -> Job {
        Job {
            dst: xs.as_mut_ptr(),
            len: xs.len(),
            src: std::ptr::null(),
            shift: 0.0,
            scale: 1.0,
            form: ArgForm::LessShift,
            sums: std::ptr::null_mut(),
            width: 0,
            prefetch,
        }
    }
}

/// `xs[i] = f(xs[i])` for every element, as the JIT's inline f32 code computes `f`.
pub fn apply_f32_in_place(f: SpanFn, xs: &mut [f32]) {
    apply_f32_prefetching(f, xs, Prefetch::NONE);
}

/// [`apply_f32_in_place`], prefetching `prefetch` (into L1) as it goes.
pub fn apply_f32_prefetching(f: SpanFn, xs: &mut [f32], prefetch: Prefetch) {
    // SAFETY: `xs` is valid for reads and writes of its length, no sums.
    unsafe { run(f, Job::in_place(xs, prefetch)) }
}

/// How a span routine makes its argument from `src[i]` and the job's `scale` and `shift`,
/// each operation rounded as the JIT's f32 `mul` and `sub` round it (no fused multiply-add).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArgForm {
    /// `src[i] − shift` (`src[i]` itself when `shift` is +0).
    LessShift,
    /// `shift − src[i]`.
    ShiftLess,
    /// `src[i] · scale`.
    Times,
    /// `src[i] · scale − shift`: a scaled softmax's `x·c − max`.
    TimesLess,
}

impl ArgForm {
    /// The form an entry point's `form` argument codes ([`ArgForm::code`]; any other code is
    /// `ShiftLess`).
    fn from_code(code: usize) -> ArgForm {
        match code {
            0 => ArgForm::LessShift,
            2 => ArgForm::Times,
            3 => ArgForm::TimesLess,
            _ => ArgForm::ShiftLess,
        }
    }

    /// The code of this form in an entry point's `form` argument (the span entry points
    /// read any other code as `ShiftLess`).
    pub fn code(self) -> usize {
        match self {
            ArgForm::LessShift => 0,
            ArgForm::ShiftLess => 1,
            ArgForm::Times => 2,
            ArgForm::TimesLess => 3,
        }
    }

    /// The argument from `x = src[i]`, as the JIT's scalar code computes it.
    fn of(self, x: f32, scale: f32, shift: f32) -> f32 {
        match self {
            ArgForm::LessShift => x - shift,
            ArgForm::ShiftLess => shift - x,
            ArgForm::Times => x * scale,
            ArgForm::TimesLess => x * scale - shift,
        }
    }
}

/// `dst[i] = f(arg)` for every element of `dst`, `arg` made from `src[i]`, `scale` and
/// `shift` by `form` (`src` at least as long), and `sums[i % sums.len()] += dst[i]` for the elements up
/// to the last whole multiple of `sums.len()`, in increasing `i` (the partial sums of a JIT
/// vector loop of that many lanes; an empty `sums` sums nothing).
///
/// # Panics
/// If `src` is shorter than `dst`.
pub fn apply_f32_summing(
    f: SpanFn,
    src: &[f32],
    (scale, shift): (f32, f32),
    form: ArgForm,
    dst: &mut [f32],
    sums: &mut [f32],
) {
    let src = &src[..dst.len()];
    let job = Job {
        src: src.as_ptr(),
        shift,
        scale,
        form,
        sums: if sums.is_empty() {
            std::ptr::null_mut()
        } else {
            sums.as_mut_ptr()
        },
        width: sums.len(),
        ..Job::in_place(dst, Prefetch::NONE)
    };
    // SAFETY: `dst` and `src` (distinct borrows, so not overlapping) hold `dst.len()` f32s,
    // `sums` its own.
    unsafe { run(f, job) }
}

/// Runs `job` on this CPU's path.
///
/// # Safety
/// As for [`weft_exp_f32_span`], over `job`'s fields.
unsafe fn run(f: SpanFn, job: Job) {
    // SAFETY (each arm): the caller's contract; the host `Target` has the path's features.
    match path() {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512F => unsafe { avx512::run(f, job) },
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2Fma => unsafe { avx2::run(f, job) },
        _ => unsafe { run_scalar(f, job) },
    }
}

/// The scalar path of [`run`] (also what the vector paths are tested against).
///
/// # Safety
/// As for [`run`].
unsafe fn run_scalar(f: SpanFn, job: Job) {
    for i in 0..job.len {
        // SAFETY: the caller's contract: `i < len`.
        unsafe {
            let x = if job.src.is_null() {
                *job.dst.add(i)
            } else {
                job.form.of(*job.src.add(i), job.scale, job.shift)
            };
            *job.dst.add(i) = match f {
                SpanFn::Exp => exp_scalar(x),
                SpanFn::Tanh => tanh_scalar(x),
                SpanFn::Sigmoid => sigmoid_scalar(x),
                SpanFn::Log => log_scalar(x),
            };
        }
    }
    // SAFETY: as above.
    unsafe { add_sums_scalar(job, 0) };
}

/// The sums of `job` over its results from element `from` on (the whole groups of
/// `job.width` only), one element at a time.
///
/// # Safety
/// As for [`run`], with `dst` holding the results.
unsafe fn add_sums_scalar(job: Job, from: usize) {
    if job.sums.is_null() || job.width == 0 {
        return;
    }
    for i in from..job.len - job.len % job.width {
        // SAFETY: the caller's contract: `i < len`, `i % width < width`.
        unsafe { *job.sums.add(i % job.width) += *job.dst.add(i) };
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

/// `xs[i] = ln xs[i]` for every element, as the JIT's inline f32 `log` computes it.
pub fn log_f32_in_place(xs: &mut [f32]) {
    apply_f32_in_place(SpanFn::Log, xs);
}

/// Defines a span entry point: an `unsafe extern "C"` function of the JIT's span signature
/// running [`run`] with one [`SpanFn`] (one symbol per function, one body for all).
macro_rules! span_entry_point {
    ($(#[$doc:meta])* $name:ident, $f:expr) => {
        $(#[$doc])*
        #[allow(clippy::too_many_arguments)]
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: *mut f32,
            len: usize,
            at: *const u8,
            bytes: usize,
            src: *const f32,
            sums: *mut f32,
            width: usize,
            shift: f32,
            form: usize,
            scale: f32,
        ) {
            if len == 0 {
                return;
            }
            let job = Job {
                dst,
                len,
                src,
                shift,
                scale,
                form: if src.is_null() {
                    ArgForm::LessShift
                } else {
                    ArgForm::from_code(form)
                },
                sums,
                width: if sums.is_null() { 0 } else { width },
                prefetch: Prefetch { at, bytes },
            };
            // SAFETY: the caller's contract (the entry point's documentation).
            unsafe { run($f, job) }
        }
    };
}

span_entry_point!(
    /// The span entry point JIT kernels call: `e^x` over `len` f32s into `dst`, `x` read from
    /// `dst` itself (`src` null) or from `src[i]`, `scale` and `shift` by `form` ([`ArgForm`]:
    /// 0 `src[i] − shift`, 2 `src[i] · scale`, 3 `src[i] · scale − shift`, else
    /// `shift − src[i]` — a sum of `exp(u − y[j])` over a row of `y`); the results summed into `width`
    /// partials at `sums` (null: none; see [`apply_f32_summing`] for the order); `bytes` from
    /// `at` prefetched meanwhile ([`Prefetch`]; any address, or 0 bytes).
    ///
    /// # Safety
    /// `dst` must be valid for reads and writes of `len` f32s and `src`, unless null, for
    /// reads of `len` f32s, both aligned to 4 bytes; `src` either is `dst` or does not overlap
    /// its span; `sums`, unless null, is valid for reads and writes of `width` f32s
    /// overlapping neither; no other reference accesses them during the call (a kernel passes
    /// spans of distinct buffers it alone writes — or reads a buffer written in place, at the
    /// same address — within their lengths, checked by the loop-IR verifier, and partials in
    /// its own stack frame).
    weft_exp_f32_span,
    SpanFn::Exp
);

span_entry_point!(
    /// The span entry point for `tanh`, as [`weft_exp_f32_span`] is for `exp`.
    ///
    /// # Safety
    /// As for [`weft_exp_f32_span`].
    weft_tanh_f32_span,
    SpanFn::Tanh
);

span_entry_point!(
    /// The span entry point for `sigmoid`, as [`weft_exp_f32_span`] is for `exp`.
    ///
    /// # Safety
    /// As for [`weft_exp_f32_span`].
    weft_sigmoid_f32_span,
    SpanFn::Sigmoid
);

span_entry_point!(
    /// The span entry point for `log`, as [`weft_exp_f32_span`] is for `exp`.
    ///
    /// # Safety
    /// As for [`weft_exp_f32_span`].
    weft_log_f32_span,
    SpanFn::Log
);

#[cfg(target_arch = "x86_64")]
pub(crate) mod simd {
    //! The span algorithms written once over [`Lanes`] (a vector of f32 lanes), each step the
    //! scalar path's operation lane by lane, and instantiated for AVX2 (`__m256`) and
    //! AVX-512F (`__m512`) by the entry points in `avx2` and `avx512`.

    use super::exp_f32::*;
    use super::{Job, PrefetchCursor, SpanFn};

    /// A vector of f32 lanes with the operations the span algorithms use, one or two
    /// instructions each.
    ///
    /// # Safety
    /// Every method may be called only from code compiled with the implementation's target
    /// features (the entry points, where the host `Target` has them); `load`/`store` need `N` valid
    /// f32s at the pointer, `load_partial`/`store_partial` `n < N`.
    pub(crate) trait Lanes: Copy {
        /// Lanes per vector.
        const N: usize;
        /// A per-lane condition.
        type Mask: Copy;
        unsafe fn splat(x: f32) -> Self;
        unsafe fn load(p: *const f32) -> Self;
        unsafe fn store(self, p: *mut f32);
        unsafe fn load_partial(p: *const f32, n: usize) -> Self;
        unsafe fn store_partial(self, p: *mut f32, n: usize);
        /// `self · b + c`, rounded once.
        unsafe fn fma(self, b: Self, c: Self) -> Self;
        unsafe fn add(self, b: Self) -> Self;
        unsafe fn sub(self, b: Self) -> Self;
        unsafe fn mul(self, b: Self) -> Self;
        unsafe fn div(self, b: Self) -> Self;
        /// The bits of `self` plus the bits of `t` shifted left by 23 (`2^k` into an exponent).
        unsafe fn add_shifted_bits(self, t: Self) -> Self;
        /// Sign bit cleared.
        unsafe fn abs(self) -> Self;
        /// Sign bit flipped.
        unsafe fn neg(self) -> Self;
        /// `self`'s bits with `x`'s sign bit ORed in.
        unsafe fn or_sign_of(self, x: Self) -> Self;
        /// `self > c`, or unordered.
        unsafe fn gt_or_nan(self, c: Self) -> Self::Mask;
        /// `self < c` (ordered).
        unsafe fn lt(self, c: Self) -> Self::Mask;
        /// `self ≥ c` (ordered).
        unsafe fn ge(self, c: Self) -> Self::Mask;
        /// `self > c` (ordered).
        unsafe fn gt(self, c: Self) -> Self::Mask;
        /// `self = c` (ordered).
        unsafe fn eq(self, c: Self) -> Self::Mask;
        /// `self < c`, or unordered.
        unsafe fn lt_or_nan(self, c: Self) -> Self::Mask;
        /// The biased exponent field of `self`'s bits (`bits >> 23 & 0xff`), as an f32.
        unsafe fn exponent_field(self) -> Self;
        /// `self`'s mantissa bits under the exponent of 1: a value in `[1, 2)`.
        unsafe fn mantissa_in_one_two(self) -> Self;
        /// The smaller of `self` and `c`; `c` where `self` is NaN.
        unsafe fn min_or(self, c: Self) -> Self;
        /// `a` where `m`, else `self`.
        unsafe fn select(self, m: Self::Mask, a: Self) -> Self;
        /// `+0` where `m`, else `self`.
        unsafe fn zero_where(self, m: Self::Mask) -> Self;
    }

    /// [`super::exp_scalar`] lane by lane.
    #[inline(always)]
    pub(super) unsafe fn exp<V: Lanes>(x: V) -> V {
        // SAFETY: the trait's contract, passed on to the caller.
        unsafe {
            let y = exp_unchecked(x, &FORM);
            let y = y.select(x.gt_or_nan(V::splat(HI)), x.add(V::splat(f32::INFINITY)));
            y.zero_where(x.lt(V::splat(LO)))
        }
    }

    /// [`super::exp_unchecked_scalar`] lane by lane.
    #[inline(always)]
    unsafe fn exp_unchecked<V: Lanes>(x: V, form: &super::ExpForm) -> V {
        // SAFETY: the trait's contract, passed on to the caller.
        unsafe {
            let magic = V::splat(MAGIC);
            let t = x.fma(V::splat(form.log2e), magic);
            let k = t.sub(magic);
            let mut r = x;
            for &c in form.parts {
                r = k.fma(V::splat(c), r);
            }
            horner(r, form.poly).add_shifted_bits(t)
        }
    }

    /// [`super::horner_scalar`] lane by lane.
    #[inline(always)]
    unsafe fn horner<V: Lanes>(x: V, coeffs: &[f32]) -> V {
        // SAFETY: the trait's contract, passed on to the caller.
        unsafe {
            let (&last, rest) = coeffs.split_last().expect("a polynomial has a coefficient");
            let mut p = V::splat(last);
            for &c in rest.iter().rev() {
                p = p.fma(x, V::splat(c));
            }
            p
        }
    }

    /// [`super::tanh_scalar`] lane by lane.
    #[inline(always)]
    unsafe fn tanh<V: Lanes>(x: V) -> V {
        use super::tanh_f32::*;
        // SAFETY: the trait's contract, passed on to the caller.
        unsafe {
            let a = x.abs();
            let z = x.mul(x);
            let small = x.mul(z).fma(horner(z, &POLY), x);
            let e = exp_unchecked(a.min_or(V::splat(CLAMP)), &EXP_FORM);
            let one = V::splat(1.0);
            let large = one.sub(e).div(one.add(e));
            small
                .select(a.ge(V::splat(POLY_BELOW)), large)
                .or_sign_of(x)
        }
    }

    /// [`super::sigmoid_scalar`] lane by lane.
    #[inline(always)]
    unsafe fn sigmoid<V: Lanes>(x: V) -> V {
        // SAFETY: the trait's contract, passed on to the caller.
        unsafe {
            let e = exp(x.neg());
            let one = V::splat(1.0);
            one.div(one.add(e))
        }
    }

    /// [`super::log_scalar`] lane by lane.
    #[inline(always)]
    unsafe fn log<V: Lanes>(x: V) -> V {
        use super::log_f32::*;
        // SAFETY: the trait's contract, passed on to the caller.
        unsafe {
            let is_sub = x.lt(V::splat(f32::MIN_POSITIVE));
            let xs = x.select(is_sub, x.mul(V::splat(2f32.powi(SUBNORMAL_SCALE))));
            let e_adj = V::splat(0.0).select(is_sub, V::splat(-(SUBNORMAL_SCALE as f32)));
            let ef = xs.exponent_field();
            let m = xs.mantissa_in_one_two();
            let big = m.gt(V::splat(SQRT_2));
            let m = m.select(big, m.mul(V::splat(0.5)));
            let ef = ef.select(big, ef.add(V::splat(1.0)));
            let e = ef.sub(V::splat(127.0)).add(e_adj);
            let f = m.sub(V::splat(1.0));
            let z = f.mul(f);
            let tail = f.mul(z).mul(horner(f, &POLY));
            let tail = z.fma(V::splat(-0.5), e.fma(V::splat(LN2_LO), tail));
            let y = e.fma(V::splat(LN2_HI), f.add(tail));
            let y = y.select(x.eq(V::splat(f32::INFINITY)), V::splat(f32::INFINITY));
            let y = y.select(x.eq(V::splat(0.0)), V::splat(f32::NEG_INFINITY));
            y.select(x.lt_or_nan(V::splat(0.0)), V::splat(f32::NAN))
        }
    }

    /// Arguments read as they are ([`arg`]).
    const PLAIN: u8 = 0;
    /// Arguments less the job's shift.
    const LESS_SHIFT: u8 = 1;
    /// The job's shift less the arguments.
    const SHIFT_LESS: u8 = 2;
    /// The arguments times the job's scale.
    const TIMES: u8 = 3;
    /// The arguments times the job's scale, less its shift.
    const TIMES_LESS: u8 = 4;

    /// The job's scale and shift, in every lane.
    #[derive(Clone, Copy)]
    struct Affine<V> {
        scale: V,
        shift: V,
    }

    /// The argument `x` at `src + i`: as it is, less `shift`, `shift − x`, `x · scale` or
    /// `x · scale − shift`, by `ARG`.
    ///
    /// # Safety
    /// The trait's contract; `n` f32s at `src + i` (`V::N` when `n` is `V::N`).
    #[inline(always)]
    unsafe fn arg<V: Lanes, const ARG: u8>(
        src: *const f32,
        by: Affine<V>,
        i: usize,
        n: usize,
    ) -> V {
        let Affine { scale, shift } = by;
        // SAFETY: the caller's contract.
        unsafe {
            let x = if n == V::N {
                V::load(src.add(i))
            } else {
                V::load_partial(src.add(i), n)
            };
            match ARG {
                PLAIN => x,
                LESS_SHIFT => x.sub(shift),
                TIMES => x.mul(scale),
                TIMES_LESS => x.mul(scale).sub(shift),
                _ => shift.sub(x),
            }
        }
    }

    /// The argument at `src + i` ([`arg`]), its `f` stored at `dst + i`, and returned.
    ///
    /// # Safety
    /// The trait's contract; `V::N` f32s at `src + i` and `dst + i`.
    #[inline(always)]
    unsafe fn one<V: Lanes, const ARG: u8>(
        f: SpanFn,
        src: *const f32,
        by: Affine<V>,
        dst: *mut f32,
        i: usize,
    ) -> V {
        // SAFETY: the caller's contract.
        unsafe {
            let y = apply(f, arg::<V, ARG>(src, by, i, V::N));
            y.store(dst.add(i));
            y
        }
    }

    /// `job`'s work, `V::N` elements at a time: whole groups of `A` vectors summed into `A`
    /// vector partials (`A · V::N` is `job.width`; none when `A` is 0), then the rest
    /// unsummed, the tail by a partial load and store. In place, `src` is `dst` and `shift`
    /// 0, and `x − 0` is `x` for every `x` but a NaN (whose result is NaN either way).
    ///
    /// # Safety
    /// The trait's contract, and [`super::run`]'s.
    #[inline(always)]
    unsafe fn run_chunks<V: Lanes, const A: usize, const ARG: u8>(f: SpanFn, job: &Job) {
        let n = V::N;
        let mut lines = PrefetchCursor::new(job.prefetch, job.len / n);
        let (src, scale, shift) = if job.src.is_null() {
            (job.dst.cast_const(), 1.0, 0.0)
        } else {
            (job.src, job.scale, job.shift)
        };
        // SAFETY (the block): the caller's contract; every access is below `len` (or of the
        // `A · N = width` partials).
        unsafe {
            let by = Affine {
                scale: V::splat(scale),
                shift: V::splat(shift),
            };
            let mut i = 0;
            if A > 0 {
                let mut acc = [V::splat(0.0); A];
                for (a, v) in acc.iter_mut().enumerate() {
                    *v = V::load(job.sums.add(a * n));
                }
                while i + A * n <= job.len {
                    for v in acc.iter_mut() {
                        lines.step();
                        *v = v.add(one::<V, ARG>(f, src, by, job.dst, i));
                        i += n;
                    }
                }
                for (a, v) in acc.iter().enumerate() {
                    v.store(job.sums.add(a * n));
                }
            }
            while i + n <= job.len {
                lines.step();
                one::<V, ARG>(f, src, by, job.dst, i);
                i += n;
            }
            if i < job.len {
                let m = job.len - i;
                let x = arg::<V, ARG>(src, by, i, m);
                apply(f, x).store_partial(job.dst.add(i), m);
            }
        }
    }

    /// `f` of every lane. (A function, not a closure: a closure would be compiled without
    /// the entry point's target features, and the lane operations could not be inlined.)
    #[inline(always)]
    unsafe fn apply<V: Lanes>(f: SpanFn, x: V) -> V {
        // SAFETY: the caller's contract.
        unsafe {
            match f {
                SpanFn::Exp => exp(x),
                SpanFn::Tanh => tanh(x),
                SpanFn::Sigmoid => sigmoid(x),
                SpanFn::Log => log(x),
            }
        }
    }

    /// [`run_chunks`] with `A` vector partials, one loop per function and form of the
    /// argument so each inner loop is straight-line code.
    ///
    /// # Safety
    /// As for [`run_chunks`].
    #[inline(always)]
    unsafe fn by_fn<V: Lanes, const A: usize>(f: SpanFn, job: &Job) {
        // SAFETY: the caller's contract.
        unsafe {
            // `x − 0` is `x` (a NaN's payload aside), so no subtraction without a shift.
            if job.form == super::ArgForm::ShiftLess {
                by_arg::<V, A, SHIFT_LESS>(f, job)
            } else if job.form == super::ArgForm::Times {
                by_arg::<V, A, TIMES>(f, job)
            } else if job.form == super::ArgForm::TimesLess {
                by_arg::<V, A, TIMES_LESS>(f, job)
            } else if job.shift.to_bits() == 0 {
                by_arg::<V, A, PLAIN>(f, job)
            } else {
                by_arg::<V, A, LESS_SHIFT>(f, job)
            }
        }
    }

    /// [`by_fn`] for one form of the argument.
    ///
    /// # Safety
    /// As for [`run_chunks`].
    #[inline(always)]
    unsafe fn by_arg<V: Lanes, const A: usize, const ARG: u8>(f: SpanFn, job: &Job) {
        // SAFETY: the caller's contract.
        unsafe {
            match f {
                SpanFn::Exp => run_chunks::<V, A, ARG>(SpanFn::Exp, job),
                SpanFn::Tanh => run_chunks::<V, A, ARG>(SpanFn::Tanh, job),
                SpanFn::Sigmoid => run_chunks::<V, A, ARG>(SpanFn::Sigmoid, job),
                SpanFn::Log => run_chunks::<V, A, ARG>(SpanFn::Log, job),
            }
        }
    }

    /// [`super::run`] on `V`: its sums in 1, 2 or 4 vector partials where `width` is that
    /// many vectors, else added one element at a time after the loop.
    ///
    /// # Safety
    /// As for [`run_chunks`].
    #[inline(always)]
    pub(super) unsafe fn run<V: Lanes>(f: SpanFn, job: Job) {
        let vectors = match job.width {
            _ if job.sums.is_null() => Some(0),
            w if w % V::N == 0 => Some(w / V::N),
            _ => None,
        };
        // SAFETY: the caller's contract.
        unsafe {
            match vectors {
                Some(0) => by_fn::<V, 0>(f, &job),
                Some(1) => by_fn::<V, 1>(f, &job),
                Some(2) => by_fn::<V, 2>(f, &job),
                Some(4) => by_fn::<V, 4>(f, &job),
                _ => {
                    by_fn::<V, 0>(f, &job);
                    super::add_sums_scalar(job, 0);
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::simd::Lanes;
    use super::SpanFn;
    use std::arch::x86_64::*;

    // SAFETY (every method): the trait's contract — reached only from `run`
    // below, compiled with AVX2 and FMA, which its callers detected.
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
        unsafe fn store_partial(self, p: *mut f32, n: usize) {
            let mut buf = [0f32; 8];
            // SAFETY: see the impl; an eight-lane buffer, then `n < 8` f32s to `p`.
            unsafe {
                _mm256_storeu_ps(buf.as_mut_ptr(), self);
                std::ptr::copy_nonoverlapping(buf.as_ptr(), p, n);
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
        unsafe fn div(self, b: Self) -> Self {
            // SAFETY: see the impl.
            unsafe { _mm256_div_ps(self, b) }
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
        unsafe fn abs(self) -> Self {
            // SAFETY: see the impl.
            unsafe { _mm256_andnot_ps(_mm256_set1_ps(-0.0), self) }
        }
        #[inline(always)]
        unsafe fn neg(self) -> Self {
            // SAFETY: see the impl.
            unsafe { _mm256_xor_ps(self, _mm256_set1_ps(-0.0)) }
        }
        #[inline(always)]
        unsafe fn or_sign_of(self, x: Self) -> Self {
            // SAFETY: see the impl.
            unsafe { _mm256_or_ps(self, _mm256_and_ps(x, _mm256_set1_ps(-0.0))) }
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
        unsafe fn ge(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm256_cmp_ps::<_CMP_GE_OQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn gt(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm256_cmp_ps::<_CMP_GT_OQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn eq(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm256_cmp_ps::<_CMP_EQ_OQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn lt_or_nan(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm256_cmp_ps::<_CMP_NGE_UQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn exponent_field(self) -> Self {
            // SAFETY: see the impl.
            unsafe {
                let field = _mm256_srli_epi32::<23>(_mm256_castps_si256(self));
                _mm256_cvtepi32_ps(_mm256_and_si256(field, _mm256_set1_epi32(0xff)))
            }
        }
        #[inline(always)]
        unsafe fn mantissa_in_one_two(self) -> Self {
            // SAFETY: see the impl.
            unsafe {
                let mant =
                    _mm256_and_si256(_mm256_castps_si256(self), _mm256_set1_epi32(0x7f_ffff));
                _mm256_castsi256_ps(_mm256_or_si256(mant, _mm256_set1_epi32(0x3f80_0000)))
            }
        }
        #[inline(always)]
        unsafe fn min_or(self, c: Self) -> Self {
            // SAFETY: see the impl. (`vminps` returns its second operand for a NaN.)
            unsafe { _mm256_min_ps(self, c) }
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

    /// # Safety
    /// The CPU must have AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn run(f: SpanFn, job: super::Job) {
        // SAFETY: compiled with AVX2 and FMA, which the caller detected; the caller's contract.
        unsafe { super::simd::run::<__m256>(f, job) }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::simd::Lanes;
    use super::SpanFn;
    use std::arch::x86_64::*;

    /// A lane mask of the sign bit (AVX-512F has the float logic only as integer ops).
    #[inline(always)]
    unsafe fn sign() -> __m512i {
        // SAFETY: see the impl below.
        unsafe { _mm512_set1_epi32(i32::MIN) }
    }

    // SAFETY (every method): the trait's contract — reached only from `run`
    // below, compiled with AVX-512F, which its callers detected.
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
            // SAFETY: see the impl; the mask covers the `n < 16` f32s at `p`, masked-off
            // lanes are not read.
            unsafe { _mm512_maskz_loadu_ps(((1u32 << n) - 1) as __mmask16, p) }
        }
        #[inline(always)]
        unsafe fn store_partial(self, p: *mut f32, n: usize) {
            // SAFETY: see the impl; the mask covers the `n < 16` f32s at `p`, masked-off
            // lanes are not written.
            unsafe { _mm512_mask_storeu_ps(p, ((1u32 << n) - 1) as __mmask16, self) }
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
        unsafe fn div(self, b: Self) -> Self {
            // SAFETY: see the impl.
            unsafe { _mm512_div_ps(self, b) }
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
        unsafe fn abs(self) -> Self {
            // SAFETY: see the impl.
            unsafe { _mm512_castsi512_ps(_mm512_andnot_si512(sign(), _mm512_castps_si512(self))) }
        }
        #[inline(always)]
        unsafe fn neg(self) -> Self {
            // SAFETY: see the impl.
            unsafe { _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(self), sign())) }
        }
        #[inline(always)]
        unsafe fn or_sign_of(self, x: Self) -> Self {
            // SAFETY: see the impl.
            unsafe {
                let s = _mm512_and_si512(_mm512_castps_si512(x), sign());
                _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(self), s))
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
        unsafe fn ge(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm512_cmp_ps_mask::<_CMP_GE_OQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn gt(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm512_cmp_ps_mask::<_CMP_GT_OQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn eq(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn lt_or_nan(self, c: Self) -> Self::Mask {
            // SAFETY: see the impl.
            unsafe { _mm512_cmp_ps_mask::<_CMP_NGE_UQ>(self, c) }
        }
        #[inline(always)]
        unsafe fn exponent_field(self) -> Self {
            // SAFETY: see the impl.
            unsafe {
                let field = _mm512_srli_epi32::<23>(_mm512_castps_si512(self));
                _mm512_cvtepi32_ps(_mm512_and_si512(field, _mm512_set1_epi32(0xff)))
            }
        }
        #[inline(always)]
        unsafe fn mantissa_in_one_two(self) -> Self {
            // SAFETY: see the impl.
            unsafe {
                let mant =
                    _mm512_and_si512(_mm512_castps_si512(self), _mm512_set1_epi32(0x7f_ffff));
                _mm512_castsi512_ps(_mm512_or_si512(mant, _mm512_set1_epi32(0x3f80_0000)))
            }
        }
        #[inline(always)]
        unsafe fn min_or(self, c: Self) -> Self {
            // SAFETY: see the impl. (`vminps` returns its second operand for a NaN.)
            unsafe { _mm512_min_ps(self, c) }
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

    /// # Safety
    /// The CPU must have AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn run(f: SpanFn, job: super::Job) {
        // SAFETY: compiled with AVX-512F, which the caller detected; the caller's contract.
        unsafe { super::simd::run::<__m512>(f, job) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The f32 `tanh` against f64's over every 61st f32 from 0 to 12 (17 million, subnormals
    /// included) and their negatives: within the 1.6 ulp docs/numerics.md states (its worst
    /// case found by an exhaustive search when the algorithm was chosen: 1.51 ulp at
    /// 1.247645), odd to the bit, −0 kept, ±1 exactly from the clamp on.
    /// The f32 `log` against f64's over every 127th positive f32 (17 million, subnormals and
    /// the largest included): within the 1 ulp docs/numerics.md states; and its edges.
    #[test]
    fn log_is_within_its_documented_ulps_over_a_sweep_of_f32() {
        let mut worst = (0.0f64, 0.0f32);
        for bits in (1..f32::INFINITY.to_bits()).step_by(127) {
            let x = f32::from_bits(bits);
            let t = f64::from(x).ln();
            let err = (f64::from(log_scalar(x)) - t).abs() / ulp_of(t);
            if err > worst.0 {
                worst = (err, x);
            }
        }
        assert!(worst.0 <= 1.0, "{} ulp at {:e}", worst.0, worst.1);
        assert_eq!(log_scalar(1.0).to_bits(), 0f32.to_bits());
        assert_eq!(log_scalar(f32::INFINITY), f32::INFINITY);
        assert_eq!(log_scalar(0.0), f32::NEG_INFINITY);
        assert_eq!(log_scalar(-0.0), f32::NEG_INFINITY);
        for x in [-1.0, -1e-40, f32::NEG_INFINITY, f32::NAN] {
            assert!(log_scalar(x).is_nan(), "at {x}");
        }
    }

    /// An f32 ulp at `t`: of the binade `|t|` lies in (the smallest normal's below it).
    fn ulp_of(t: f64) -> f64 {
        let e = (t.abs() as f32).to_bits() >> 23;
        let e = if (f32::from_bits(e << 23) as f64) > t.abs() {
            e - 1
        } else {
            e
        };
        2f64.powi(e.max(1) as i32 - 127 - 23)
    }

    #[test]
    fn tanh_is_within_its_documented_ulps_over_a_sweep_of_f32() {
        let mut worst = (0.0f64, 0.0f32);
        for bits in (0..12.0f32.to_bits()).step_by(61) {
            let x = f32::from_bits(bits);
            let y = tanh_scalar(x);
            assert_eq!(tanh_scalar(-x).to_bits(), (-y).to_bits(), "odd at {x}");
            let t = f64::from(x).tanh();
            let err = (f64::from(y) - t).abs() / ulp_of(t);
            if err > worst.0 {
                worst = (err, x);
            }
        }
        assert!(worst.0 <= 1.6, "{} ulp at {}", worst.0, worst.1);
        assert_eq!(tanh_scalar(-0.0).to_bits(), (-0.0f32).to_bits());
        for x in [9.1f32, 9.5, 20.0, 1e30, f32::INFINITY] {
            assert_eq!((tanh_scalar(x), tanh_scalar(-x)), (1.0, -1.0), "at {x}");
        }
        assert!(tanh_scalar(f32::NAN).is_nan());
    }

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
            // log's edges: the smallest subnormal and the largest, either side of √2, 1 ± ulp.
            f32::from_bits(1),
            f32::from_bits(0x007f_ffff),
            log_f32::SQRT_2,
            f32::from_bits(log_f32::SQRT_2.to_bits() + 1),
            f32::from_bits(log_f32::SQRT_2.to_bits() - 1),
            f32::from_bits(1f32.to_bits() + 1),
            f32::from_bits(1f32.to_bits() - 1),
            0.5,
            2.0,
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
            if path() != Isa::Scalar {
                // SAFETY: AVX2 and FMA detected.
                run("avx2", &|ys| unsafe {
                    avx2::run(f, Job::in_place(ys, Prefetch::NONE))
                });
            }
            if path() == Isa::Avx512F {
                // SAFETY: AVX-512F detected.
                run("avx512", &|ys| unsafe {
                    avx512::run(f, Job::in_place(ys, Prefetch::NONE))
                });
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
        for f in [SpanFn::Exp, SpanFn::Tanh, SpanFn::Sigmoid, SpanFn::Log] {
            let scalar = |x: f32| match f {
                SpanFn::Exp => exp_scalar(x),
                SpanFn::Tanh => tanh_scalar(x),
                SpanFn::Sigmoid => sigmoid_scalar(x),
                SpanFn::Log => log_scalar(x),
            };
            // A NaN's sign and payload may differ between paths (the module's guarantee):
            // release builds fold negations differently from debug ones.
            let bits = |y: f32| if y.is_nan() { u32::MAX } else { y.to_bits() };
            let want: Vec<u32> = xs.iter().map(|&x| bits(scalar(x))).collect();
            for len in [0, 1, 7, 8, 9, 15, 16, 17, 23, xs.len()] {
                for (path, got) in vector_results(f, &xs[..len]) {
                    let got: Vec<u32> = got.iter().map(|&y| bits(y)).collect();
                    assert_eq!(got, want[..len], "{f:?} by {path}, length {len}");
                }
            }
        }
    }

    /// Reading from another span less a shift (or a shift less it) and summing the results
    /// give, on every path, the bits of the element-by-element definition
    /// ([`apply_f32_summing`]): the results of `f(src[i] - shift)` (`f(shift - src[i])`) and
    /// partial sums `sums[i % width]` in increasing `i` over the
    /// whole groups of `width`, for widths of one, two and four vectors of either path and
    /// others (added one element at a time), from partials already holding values.
    #[test]
    fn summing_from_a_source_gives_the_bits_of_the_definition() {
        let xs: Vec<f32> = specials().into_iter().filter(|x| x.abs() < 200.0).collect();
        for f in [SpanFn::Exp, SpanFn::Tanh, SpanFn::Sigmoid, SpanFn::Log] {
            let scalar = |x: f32| match f {
                SpanFn::Exp => exp_scalar(x),
                SpanFn::Tanh => tanh_scalar(x),
                SpanFn::Sigmoid => sigmoid_scalar(x),
                SpanFn::Log => log_scalar(x),
            };
            let forms = [
                ArgForm::LessShift,
                ArgForm::ShiftLess,
                ArgForm::Times,
                ArgForm::TimesLess,
            ];
            for (width, form) in [4, 8, 12, 16, 32, 64, 20]
                .into_iter()
                .flat_map(|w| forms.map(|f| (w, f)))
            {
                for len in [0, 3, 16, 17, 63, 64, 100, xs.len()] {
                    let (scale, shift) = (0.3f32, 1.75f32);
                    let arg = |x: f32| form.of(x, scale, shift);
                    let want: Vec<f32> = xs[..len].iter().map(|&x| scalar(arg(x))).collect();
                    let mut want_sums: Vec<f32> = (0..width).map(|j| j as f32 * 0.5).collect();
                    for (i, y) in want.iter().enumerate().take(len - len % width) {
                        want_sums[i % width] += y;
                    }
                    type Runner = unsafe fn(SpanFn, Job);
                    let mut paths: Vec<(&str, Runner)> =
                        vec![("scalar", run_scalar), ("dispatch", run)];
                    #[cfg(target_arch = "x86_64")]
                    {
                        if path() != Isa::Scalar {
                            paths.push(("avx2", avx2::run));
                        }
                        if path() == Isa::Avx512F {
                            paths.push(("avx512", avx512::run));
                        }
                    }
                    for (name, run_on) in paths {
                        let mut dst = vec![0f32; len];
                        let mut sums: Vec<f32> = (0..width).map(|j| j as f32 * 0.5).collect();
                        let job = Job {
                            src: xs.as_ptr(),
                            shift,
                            scale,
                            form,
                            sums: sums.as_mut_ptr(),
                            width,
                            ..Job::in_place(&mut dst, Prefetch::NONE)
                        };
                        // SAFETY: `dst`, `xs` (at least `len` long) and `sums` are distinct
                        // allocations of the job's lengths; the path's features were detected.
                        unsafe { run_on(f, job) };
                        let bits = |v: &[f32]| v.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
                        let case = format!("{f:?} {name} {width} {len} {form:?}");
                        assert_eq!(bits(&dst), bits(&want), "{case}");
                        assert_eq!(bits(&sums), bits(&want_sums), "{case}");
                    }
                    if width == 16 {
                        let mut dst = vec![0f32; len];
                        let mut sums = vec![0f32; 16];
                        apply_f32_summing(f, &xs, (scale, shift), form, &mut dst, &mut sums);
                        assert_eq!(
                            dst.iter().map(|y| y.to_bits()).collect::<Vec<_>>(),
                            want.iter().map(|y| y.to_bits()).collect::<Vec<_>>()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn prefetching_changes_no_result() {
        let xs: Vec<f32> = (0..1000).map(|i| i as f32 * 0.37 - 180.0).collect();
        let other = vec![0u8; 5000];
        let prefetch = Prefetch {
            at: other.as_ptr(),
            bytes: other.len(),
        };
        for f in [SpanFn::Exp, SpanFn::Tanh, SpanFn::Sigmoid, SpanFn::Log] {
            let (mut plain, mut fetching) = (xs.clone(), xs.clone());
            apply_f32_in_place(f, &mut plain);
            apply_f32_prefetching(f, &mut fetching, prefetch);
            let bits = |v: &[f32]| v.iter().map(|y| y.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&plain), bits(&fetching), "{f:?}");
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
