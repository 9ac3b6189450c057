//! Accuracy of the polynomial math functions, in ulps of the result type, measured against
//! the f64 standard library (itself within 1 ulp of the exact result): for `f32` the reference
//! is computed in f64 and is effectively exact; for `f64` it is libm's result. Each function is
//! sampled densely over its documented range, through the vectorised path and the scalar path.
//! The bounds asserted here are the ones docs/numerics.md records; run with `--nocapture` to
//! print the measured maxima.

use std::sync::Arc;

use weft_compiler::codegen::{CodegenOptions, JitCompiler};
use weft_ir::loop_ir::parse_kernel;
use weft_runtime::{DeviceBufferReference, DeviceBufferStorage, Element};

const SAMPLES: usize = 200_003;

fn run<T: Element + Default>(compiler: &JitCompiler, op: &str, ty: &str, xs: &[T]) -> Vec<T> {
    let n = xs.len();
    let text = format!(
        "kernel @{op} {{
  buffer %x: {ty}[{n}] read
  buffer %y: {ty}[{n}] write
  loop %i in 0..{n} vectorize unroll(2) {{
    %v: {ty} = load %x[%i]
    %r: {ty} = {op} %v
    store %y[%i], %r
  }}
}}"
    );
    let kernel = parse_kernel(op, &text).unwrap();
    let compiled = compiler.compile(&kernel).unwrap();
    let x = DeviceBufferStorage::from_slice(xs).unwrap();
    let y = DeviceBufferStorage::new(T::DTYPE, n as u64).unwrap();
    let refs = [x, Arc::clone(&y)].map(|s| DeviceBufferReference::to_storage("b", s));
    compiled.call(&[&refs[0], &refs[1]]).unwrap();
    y.to_vec().unwrap()
}

fn ulp_f32(reference: f64) -> f64 {
    let r = (reference as f32).abs();
    let next = f32::from_bits(r.to_bits() + 1);
    f64::from(next - r).max(f64::from(f32::from_bits(1)))
}

fn ulp_f64(reference: f64) -> f64 {
    let r = reference.abs();
    (f64::from_bits(r.to_bits() + 1) - r).max(f64::from_bits(1))
}

fn reference(op: &str, x: f64) -> f64 {
    match op {
        "exp" => x.exp(),
        "log" => x.ln(),
        "tanh" => x.tanh(),
        "sigmoid" => 1.0 / (1.0 + (-x).exp()),
        "sin" => x.sin(),
        "cos" => x.cos(),
        _ => unreachable!("unknown function {op}"),
    }
}

/// (function, lo, hi, logarithmic sampling, max ulp f32, max ulp f64)
const CASES: [(&str, f64, f64, bool, f64, f64); 9] = [
    ("exp", -87.0, 88.0, false, 1.0, 1.0),
    ("log", 1e-30, 1e30, true, 1.0, 2.0),
    ("log", 0.5, 2.0, false, 1.0, 3.0),
    ("log", 1e-45, 1e-36, true, 1.0, 1.0),
    ("tanh", -10.0, 10.0, false, 1.6, 2.0),
    ("sigmoid", -80.0, 80.0, false, 2.0, 3.0),
    ("sin", -100.0, 100.0, false, 2.0, 2.0),
    ("cos", -100.0, 100.0, false, 2.0, 2.0),
    ("sin", -1.0, 1.0, false, 1.2, 1.0),
];

fn samples(lo: f64, hi: f64, log: bool) -> Vec<f64> {
    (0..SAMPLES)
        .map(|i| {
            let t = i as f64 / (SAMPLES - 1) as f64;
            if log {
                (lo.ln() + t * (hi.ln() - lo.ln())).exp()
            } else {
                lo + t * (hi - lo)
            }
        })
        .collect()
}

#[test]
fn polynomial_accuracy_within_documented_ulps() {
    for vectorize in [true, false] {
        let compiler = JitCompiler::with_options(CodegenOptions {
            vectorize,
            ..CodegenOptions::default()
        })
        .unwrap();
        for (op, lo, hi, log, bound32, bound64) in CASES {
            let xs = samples(lo, hi, log);
            // sin/cos near their zeros are measured in absolute terms relative to 1 ulp of
            // 1.0 when |result| < 2^-10 (range reduction error dominates there).
            let small = |r: f64| matches!(op, "sin" | "cos") && r.abs() < 1.0 / 1024.0;

            let xs32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
            let ys32 = run(&compiler, op, "f32", &xs32);
            let mut worst32 = (0.0f64, 0.0f64);
            for (&x, &y) in xs32.iter().zip(&ys32) {
                let r = reference(op, f64::from(x));
                let ulp = if small(r) {
                    ulp_f32(1.0) / 1024.0
                } else {
                    ulp_f32(r)
                };
                let err = (f64::from(y) - r).abs() / ulp;
                if err > worst32.0 {
                    worst32 = (err, f64::from(x));
                }
            }

            let ys64 = run(&compiler, op, "f64", &xs);
            let mut worst64 = (0.0f64, 0.0f64);
            for (&x, &y) in xs.iter().zip(&ys64) {
                let r = reference(op, x);
                let ulp = if small(r) {
                    ulp_f64(1.0) / 1024.0
                } else {
                    ulp_f64(r)
                };
                let err = (y - r).abs() / ulp;
                if err > worst64.0 {
                    worst64 = (err, x);
                }
            }
            println!(
                "{op:8} [{lo:e}, {hi:e}] vectorize={vectorize}: f32 max {:.3} ulp (at {:e}), f64 max {:.3} ulp (at {:e})",
                worst32.0, worst32.1, worst64.0, worst64.1
            );
            assert!(
                worst32.0 <= bound32,
                "{op} f32: {} ulp at {}",
                worst32.0,
                worst32.1
            );
            assert!(
                worst64.0 <= bound64,
                "{op} f64: {} ulp at {}",
                worst64.0,
                worst64.1
            );
        }
    }
}

/// `exp` where its method changes: the overflow threshold (largest finite result, then +inf),
/// the flush threshold (smallest normal result, then +0: results that would be subnormal are
/// flushed, docs/numerics.md), signed zeros, infinities and NaNs with payloads.
#[test]
fn exp_limits_are_exact() {
    let nan_payloads32 = [
        f32::NAN,
        f32::from_bits(0x7fc0_0123),
        f32::from_bits(0xffc0_4001),
    ];
    let nan_payloads64 = [
        f64::NAN,
        f64::from_bits(0x7ff8_0000_0000_0123),
        f64::from_bits(0xfff8_0000_0040_0001),
    ];
    // (x, expected class): Some(0/inf) exact, None = finite normal within 2 ulp.
    let cases32: [(f32, Option<f32>); 10] = [
        (0.0, Some(1.0)),
        (-0.0, Some(1.0)),
        (f32::INFINITY, Some(f32::INFINITY)),
        (f32::NEG_INFINITY, Some(0.0)),
        (88.722_83, None),
        (
            f32::from_bits(88.722_83_f32.to_bits() + 1),
            Some(f32::INFINITY),
        ),
        (1e30, Some(f32::INFINITY)),
        (-87.336_54, None),
        (f32::from_bits((-87.336_54_f32).to_bits() + 1), Some(0.0)),
        (-1e30, Some(0.0)),
    ];
    let cases64: [(f64, Option<f64>); 10] = [
        (0.0, Some(1.0)),
        (-0.0, Some(1.0)),
        (f64::INFINITY, Some(f64::INFINITY)),
        (f64::NEG_INFINITY, Some(0.0)),
        (709.782_712_893_384, None),
        (
            f64::from_bits(709.782_712_893_384_f64.to_bits() + 1),
            Some(f64::INFINITY),
        ),
        (1e300, Some(f64::INFINITY)),
        (-708.396_418_532_264_1, None),
        (
            f64::from_bits((-708.396_418_532_264_1_f64).to_bits() + 1),
            Some(0.0),
        ),
        (-1e300, Some(0.0)),
    ];
    for vectorize in [true, false] {
        let compiler = JitCompiler::with_options(CodegenOptions {
            vectorize,
            ..CodegenOptions::default()
        })
        .unwrap();
        let xs: Vec<f32> = cases32.iter().map(|c| c.0).chain(nan_payloads32).collect();
        let ys = run(&compiler, "exp", "f32", &xs);
        for (&(x, want), &y) in cases32.iter().zip(&ys) {
            match want {
                Some(w) => assert_eq!(y.to_bits(), w.to_bits(), "exp f32 {x}: {y}"),
                None => {
                    let r = f64::from(x).exp();
                    assert!(y.is_normal(), "exp f32 {x}: {y} not normal");
                    assert!(
                        (f64::from(y) - r).abs() <= 2.0 * ulp_f32(r),
                        "exp f32 {x}: {y}"
                    );
                }
            }
        }
        assert!(
            ys[cases32.len()..].iter().all(|y| y.is_nan()),
            "exp f32 NaN: {ys:?}"
        );
        let xs: Vec<f64> = cases64.iter().map(|c| c.0).chain(nan_payloads64).collect();
        let ys = run(&compiler, "exp", "f64", &xs);
        for (&(x, want), &y) in cases64.iter().zip(&ys) {
            match want {
                Some(w) => assert_eq!(y.to_bits(), w.to_bits(), "exp f64 {x}: {y}"),
                None => {
                    let r = x.exp();
                    assert!(y.is_normal(), "exp f64 {x}: {y} not normal");
                    assert!((y - r).abs() <= 2.0 * ulp_f64(r), "exp f64 {x}: {y}");
                }
            }
        }
        assert!(
            ys[cases64.len()..].iter().all(|y| y.is_nan()),
            "exp f64 NaN: {ys:?}"
        );
    }
}
