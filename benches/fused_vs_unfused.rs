//! Fused against unfused JIT execution on the streaming workloads of ../shared/peers/README.md:
//! chain, l2, softmax and layernorm (float32, the peers' sizes). Each workload is compiled once
//! per mode and the two modes are measured side by side in one run, so their ratio is meaningful
//! on a shared, noisy machine. Two measurements per mode:
//! - `kernels`: the compiled kernels over device-resident inputs (`JitExecutable::resident`),
//!   which is what fusion changes;
//! - `call`: a whole `Computation::call`, host copies in and out included.
//!
//! A third mode, `fused-unsplit`, is fused with split reductions off (`split_min_terms = 0`):
//! a reduction to a scalar (l2) then runs as one kernel on one thread, as before they existed.
//!
//! `WEFT_BENCH_SCALE=k` divides the sizes by 2^k for a quick look.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use weft::prelude::*;
use weft::runtime::State;
use weft_compiler::executable::{JitExecutable, JitOptions};
use weft_compiler::LowerOptions;

struct Workload {
    name: &'static str,
    graph: Graph,
    outputs: Vec<NodeId>,
    placeholders: Vec<NodeId>,
    inputs: Vec<HostArray>,
    bytes: u64,
}

fn scale() -> u32 {
    std::env::var("WEFT_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn random(axes: &[Axis], shape: &[usize], rng: &mut ChaCha8Rng) -> HostArray {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    HostArray::from_vec(
        Axes::new(axes.iter().copied()).unwrap(),
        shape.to_vec(),
        data,
    )
    .unwrap()
}

fn finish(
    name: &'static str,
    g: GraphBuilder,
    outputs: &[NodeId],
    placeholders: &[NodeId],
    bytes: u64,
) -> Workload {
    let graph = g.finish();
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let inputs = placeholders
        .iter()
        .map(|p| {
            let axes: Vec<Axis> = graph.node(*p).axes.iter().copied().collect();
            let shape = graph.shape_of(&graph.node(*p).axes).unwrap();
            random(&axes, &shape, &mut rng)
        })
        .collect();
    Workload {
        name,
        graph,
        outputs: outputs.to_vec(),
        placeholders: placeholders.to_vec(),
        inputs,
        bytes,
    }
}

/// out = sqrt((x − y)² + (z·w)²) · 0.5 over N = 2^24.
fn chain() -> Workload {
    let n_len = (1usize << 24) >> scale();
    let g = GraphBuilder::new();
    let n = g.axis("N", n_len).unwrap();
    let [x, y, z, w] = ["x", "y", "z", "w"].map(|s| g.placeholder(s, &[n], DType::F32).unwrap());
    let out = ((((x - y).unwrap().square().unwrap() + (z * w).unwrap().square().unwrap())
        .unwrap()
        .sqrt()
        .unwrap())
        * 0.5)
        .unwrap();
    let ids = [x, y, z, w].map(|t| t.id());
    let out = [out.id()];
    finish("chain", g, &out, &ids, 5 * 4 * n_len as u64)
}

/// s = Σ_N (x − y)², the L2 example of docs/design.md.
fn l2() -> Workload {
    let n_len = (1usize << 24) >> scale();
    let g = GraphBuilder::new();
    let n = g.axis("N", n_len).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let y = g.placeholder("y", &[n], DType::F32).unwrap();
    let t = (x - y).unwrap();
    let s = t.square().unwrap().sum(&[n]).unwrap();
    let (out, ins) = ([s.id()], [x.id(), y.id()]);
    finish("l2", g, &out, &ins, 2 * 4 * n_len as u64)
}

fn rows() -> (usize, usize) {
    let s = scale() / 2;
    (4096 >> s, 4096 >> (scale() - s))
}

/// Row softmax over C of a [R, C] matrix.
fn softmax() -> Workload {
    let (r_len, c_len) = rows();
    let g = GraphBuilder::new();
    let r = g.axis("R", r_len).unwrap();
    let c = g.axis("C", c_len).unwrap();
    let a = g.placeholder("a", &[r, c], DType::F32).unwrap();
    let m = a.max(&[c]).unwrap();
    let e = (a - m).unwrap().exp().unwrap();
    let out = (e / e.sum(&[c]).unwrap()).unwrap();
    let (out, ins) = ([out.id()], [a.id()]);
    finish("softmax", g, &out, &ins, 2 * 4 * (r_len * c_len) as u64)
}

/// Row layernorm over C with gain and bias.
fn layernorm() -> Workload {
    let (r_len, c_len) = rows();
    let g = GraphBuilder::new();
    let r = g.axis("R", r_len).unwrap();
    let c = g.axis("C", c_len).unwrap();
    let a = g.placeholder("a", &[r, c], DType::F32).unwrap();
    let gain = g.placeholder("g", &[c], DType::F32).unwrap();
    let bias = g.placeholder("b", &[c], DType::F32).unwrap();
    let mu = a.mean(&[c]).unwrap();
    let centered = (a - mu).unwrap();
    let var = centered.square().unwrap().mean(&[c]).unwrap();
    let sd = (var + 1e-5).unwrap().sqrt().unwrap();
    let out = (((centered / sd).unwrap() * gain).unwrap() + bias).unwrap();
    let (out, ins) = ([out.id()], [a.id(), gain.id(), bias.id()]);
    finish("layernorm", g, &out, &ins, 2 * 4 * (r_len * c_len) as u64)
}

fn fused_vs_unfused(c: &mut Criterion) {
    for w in [chain(), l2(), softmax(), layernorm()] {
        let mut group = c.benchmark_group(w.name);
        group
            .sample_size(10)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(4))
            .throughput(Throughput::Bytes(w.bytes));
        let graph = Arc::new(w.graph.clone());
        let state = State::initial(&graph).expect("state");
        let unsplit = JitOptions {
            lower: LowerOptions {
                split_min_terms: 0,
                ..LowerOptions::default()
            },
            ..JitOptions::default()
        };
        for (mode, options) in [
            ("fused", JitOptions::default()),
            ("fused-unsplit", unsplit),
            ("unfused", JitOptions::unfused()),
        ] {
            let exe = JitExecutable::new(Arc::clone(&graph), &w.outputs, &w.placeholders, &options)
                .expect("compiles");
            let mut run = exe.resident(&w.inputs, &state).expect("loads");
            group.bench_function(BenchmarkId::new("kernels", mode), |b| {
                b.iter(|| run.execute().expect("runs"))
            });
            drop(run);
            let t = Transformer::with_jit_options(w.graph.clone(), options).expect("compiles");
            let comp = t.computation(&w.outputs, &w.placeholders).expect("plans");
            group.bench_with_input(BenchmarkId::new("call", mode), &w.inputs, |b, inputs| {
                b.iter(|| comp.call(inputs).expect("runs"))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, fused_vs_unfused);
criterion_main!(benches);
