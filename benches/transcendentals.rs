//! Throughput of the transcendental functions: for each of exp, log, tanh, sigmoid, sin and
//! cos in f32 and f64, the graph `y = f(x)` over 2^16 elements (input and output fit in L2),
//! compiled fused on the JIT with one thread and called through the zero-copy
//! `Computation::call_into`, so the time is the kernel's plus the fixed per-call overhead.
//! Reported as elements per second. Group `transcendentals-f32` is what a graph gets (f32
//! exp, tanh and sigmoid through the native span routine, `weft_runtime::vmath`, where the
//! host has AVX2 and FMA); `transcendentals-f32-inline` turns span functions off
//! (`CodegenOptions::span_math`), so every function is the inline f32x4 code of
//! compiler/src/codegen/math.rs.
//!
//! Inputs are uniform over a range where the function does real work (log: positive).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use weft::prelude::*;
use weft_compiler::executable::JitOptions;

const LEN: usize = 1 << 16;

/// The functions measured, each with the input range it is sampled over.
const FUNCTIONS: [(&str, f64, f64); 6] = [
    ("exp", -80.0, 80.0),
    ("log", 1e-3, 1e3),
    ("tanh", -5.0, 5.0),
    ("sigmoid", -20.0, 20.0),
    ("sin", -10.0, 10.0),
    ("cos", -10.0, 10.0),
];

fn apply<'g>(name: &str, x: Tensor<'g>) -> Tensor<'g> {
    match name {
        "exp" => x.exp(),
        "log" => x.log(),
        "tanh" => x.tanh(),
        "sigmoid" => x.sigmoid(),
        "sin" => x.sin(),
        "cos" => x.cos(),
        _ => unreachable!("not a measured function: {name}"),
    }
    .expect("builds")
}

fn input(dtype: DType, n: Axis, lo: f64, hi: f64) -> HostArray {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let xs: Vec<f64> = (0..LEN).map(|_| rng.random_range(lo..hi)).collect();
    let axes = Axes::new([n]).unwrap();
    match dtype {
        DType::F32 => HostArray::from_vec(axes, vec![LEN], xs.iter().map(|&x| x as f32).collect()),
        _ => HostArray::from_vec(axes, vec![LEN], xs),
    }
    .expect("input")
}

fn transcendentals(c: &mut Criterion) {
    let spans = JitOptions {
        threads: Some(1),
        ..JitOptions::default()
    };
    let inline = JitOptions {
        codegen: weft::CodegenOptions {
            span_math: false,
            ..Default::default()
        },
        ..spans.clone()
    };
    for (dtype, label, options) in [
        (DType::F32, "f32", spans.clone()),
        (DType::F32, "f32-inline", inline),
        (DType::F64, "f64", spans),
    ] {
        let mut group = c.benchmark_group(format!("transcendentals-{label}"));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .throughput(Throughput::Elements(LEN as u64));
        for (name, lo, hi) in FUNCTIONS {
            let g = GraphBuilder::new();
            let n = g.axis("N", LEN).unwrap();
            let x = g.placeholder("x", &[n], dtype).unwrap();
            let y = apply(name, x);
            let (out, ins) = ([y.id()], [x.id()]);
            let graph = g.finish();
            let t = Transformer::with_jit_options(graph, options.clone()).expect("compiles");
            let comp = t.computation(&out, &ins).expect("plans");
            let inputs = [input(dtype, n, lo, hi)];
            let mut outputs = comp.output_arrays().expect("outputs");
            group.bench_function(BenchmarkId::from_parameter(name), |b| {
                b.iter(|| comp.call_into(&inputs, &mut outputs).expect("runs"))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, transcendentals);
criterion_main!(benches);
