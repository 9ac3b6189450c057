//! Call rate of 1, 2 and 8 threads calling one non-assigning computation on one transformer:
//! what the concurrent call path buys (docs/benchmarks.md has figures). Two graphs:
//! - `l2_1k`: s = Σ_N (x − y)², N = 1024 — so small that per-call overhead (input checks,
//!   workspace pool, state snapshot, copies) is all there is;
//! - `softmax_256x1024`: a row softmax large enough that its kernels run split over the shared
//!   thread pool, so concurrent calls' jobs meet in the pool.
//!
//! Each sample runs `iters` calls of `call_into` (the allocation-free path) spread evenly over
//! the threads, timed wall-clock; criterion's throughput is calls per second.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::{Duration, Instant};
use weft::prelude::*;

/// A transformer, its computation and one set of inputs.
struct Workload {
    name: &'static str,
    transformer: Transformer,
    outputs: Vec<NodeId>,
    placeholders: Vec<NodeId>,
}

fn workload(name: &'static str, g: GraphBuilder, outputs: &[NodeId]) -> Workload {
    let graph = g.finish();
    let placeholders = graph.placeholders();
    let transformer = Transformer::new(graph, Backend::Jit).expect("compiles");
    Workload {
        name,
        transformer,
        outputs: outputs.to_vec(),
        placeholders,
    }
}

fn l2_1k() -> Workload {
    let g = GraphBuilder::new();
    let n = g.axis("N", 1024).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let y = g.placeholder("y", &[n], DType::F32).unwrap();
    let s = (x - y).unwrap().square().unwrap().sum(&[n]).unwrap();
    let s = s.id();
    workload("l2_1k", g, &[s])
}

fn softmax_256x1024() -> Workload {
    let g = GraphBuilder::new();
    let r = g.axis("R", 256).unwrap();
    let c = g.axis("C", 1024).unwrap();
    let a = g.placeholder("a", &[r, c], DType::F32).unwrap();
    let e = (a - a.max(&[c]).unwrap()).unwrap().exp().unwrap();
    let out = (e / e.sum(&[c]).unwrap()).unwrap().id();
    workload("softmax_256x1024", g, &[out])
}

/// Inputs in `[-1, 1)`, one per placeholder.
fn inputs(w: &Workload) -> Vec<HostArray> {
    let g = w.transformer.graph();
    w.placeholders
        .iter()
        .map(|p| {
            let axes = g.node(*p).axes.clone();
            let shape = g.shape_of(&axes).unwrap();
            let len: usize = shape.iter().product();
            let data: Vec<f32> = (0..len)
                .map(|i| ((i * 37 % 101) as f32) / 50.5 - 1.0)
                .collect();
            HostArray::from_vec(axes, shape, data).unwrap()
        })
        .collect()
}

/// Wall time of `iters` calls spread over `threads` threads, each with its own output arrays.
fn timed_calls(c: &Computation, ins: &[HostArray], threads: usize, iters: u64) -> Duration {
    let per_thread = iters.div_ceil(threads as u64);
    let start = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut outs = c.output_arrays().unwrap();
                for _ in 0..per_thread {
                    c.call_into(ins, &mut outs).unwrap();
                }
            });
        }
    });
    // Per call of the `per_thread · threads` made.
    start
        .elapsed()
        .mul_f64(iters as f64 / (per_thread * threads as u64) as f64)
}

fn concurrent_calls(cr: &mut Criterion) {
    for w in [l2_1k(), softmax_256x1024()] {
        let c = w
            .transformer
            .computation(&w.outputs, &w.placeholders)
            .unwrap();
        let ins = inputs(&w);
        // Warm: one workspace per thread exists before timing.
        timed_calls(&c, &ins, 8, 64);
        let mut group = cr.benchmark_group(w.name);
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2))
            .throughput(Throughput::Elements(1));
        for threads in [1usize, 2, 8] {
            group.bench_with_input(BenchmarkId::new("threads", threads), &threads, |b, &t| {
                b.iter_custom(|iters| timed_calls(&c, &ins, t, iters))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, concurrent_calls);
criterion_main!(benches);
