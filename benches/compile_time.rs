//! Compile time (issue "kernel schedules", item 4): graph to callable, fused, on a warm process,
//! for the layernorm and softmax examples (bound to the peers' 4096 × 4096), a 40-op graph
//! (a chain of elementwise ops, two reductions and a broadcast back) and the peers' training
//! step (forward, backward and update: 12 kernels), each split into its
//! stages — passes (`compile_plan`), lowering (`lower_plan`), code generation (`JitCompiler`,
//! every kernel, one after another; `codegen_threaded`: each kernel's largest loop nests
//! outlined and compiled beside it on the shared pool's threads) — and whole (`Transformer::with_jit_options` +
//! `computation`: the kernels compiled at once on the computation's threads, storage
//! planning and buffer allocation included). Lengths do not change the code generated, only
//! the loop bounds in it; the whole-graph figure at 4096 × 4096 includes allocating its
//! workspace. `compile_at_scale`: graph to callable for chains and mixed graphs of 1,000 to
//! 16,000 ops, fused and unfused (issue 60: compile time linear in the graph).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::time::Duration;
use weft::prelude::*;
use weft_compiler::codegen::JitCompiler;
use weft_compiler::pipeline::{compile_plan, PlanOptions};
use weft_compiler::{lower_plan, LowerOptions};

fn example(name: &str) -> Graph {
    let path = format!("{}/examples/{name}.weft", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("example exists");
    let mut g = weft_ir::text::parse(&text, &path).expect("example parses");
    for name in ["R", "C"] {
        let axis = g.find_axis(name).expect("the example declares R and C");
        g.bind(axis, 4096).expect("binds");
    }
    g
}

/// A workload of the peers' set as it is written (bench/workloads), lengths and all.
fn workload(name: &str) -> Graph {
    let path = format!("{}/bench/workloads/{name}.weft", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("workload exists");
    weft_ir::text::parse(&text, &path).expect("workload parses")
}

/// 40 ops: a chain of 36 elementwise ops over [R, C], a row max and a row sum, and two
/// broadcasts of them back over the row.
fn chain40() -> Graph {
    let g = GraphBuilder::new();
    let r = g.axis("R", 4096).unwrap();
    let c = g.axis("C", 4096).unwrap();
    let x = g.placeholder("x", &[r, c], DType::F32).unwrap();
    let y = g.placeholder("y", &[r, c], DType::F32).unwrap();
    let mut t = x;
    for i in 0..36 {
        t = match i % 6 {
            0 => (t + y).unwrap(),
            1 => (t * y).unwrap(),
            2 => t.tanh().unwrap(),
            3 => (t - x).unwrap(),
            4 => t.abs().unwrap(),
            _ => t.sqrt().unwrap(),
        };
    }
    let m = t.max(&[c]).unwrap();
    let s = t.sum(&[c]).unwrap();
    ((t - m).unwrap() / s).unwrap().output().unwrap();
    g.finish()
}

fn compile_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, graph) in [
        ("layernorm", example("layernorm")),
        ("softmax", example("softmax")),
        ("chain40", chain40()),
        ("train_step", workload("train_step")),
    ] {
        let outputs = graph.outputs().to_vec();
        let placeholders = graph.placeholders();
        group.bench_function(BenchmarkId::new("passes", name), |b| {
            b.iter(|| compile_plan(&graph, &PlanOptions::default()).unwrap())
        });
        let plan = compile_plan(&graph, &PlanOptions::default()).unwrap();
        group.bench_function(BenchmarkId::new("lowering", name), |b| {
            b.iter(|| lower_plan(&plan, &LowerOptions::default()).unwrap())
        });
        let lowered = lower_plan(&plan, &LowerOptions::default()).unwrap();
        let compiler = JitCompiler::new().unwrap();
        group.bench_function(BenchmarkId::new("codegen", name), |b| {
            b.iter(|| {
                for lk in &lowered {
                    compiler.compile(&lk.kernel).unwrap();
                }
            })
        });
        let threaded = JitCompiler::new()
            .unwrap()
            .with_pool(weft_compiler::executable::shared_pool());
        group.bench_function(BenchmarkId::new("codegen_threaded", name), |b| {
            b.iter(|| {
                for lk in &lowered {
                    threaded.compile(&lk.kernel).unwrap();
                }
            })
        });
        group.bench_function(BenchmarkId::new("whole", name), |b| {
            b.iter(|| {
                let t =
                    Transformer::with_jit_options(graph.clone(), JitOptions::default()).unwrap();
                t.computation(&outputs, &placeholders).unwrap()
            })
        });
    }
    group.finish();
}

/// A chain of `n` elementwise ops over `x[R, C]` (add, multiply, tanh, subtract in turn),
/// or, `mixed`, one where every few ops a row maximum is subtracted or a column sum divides:
/// graphs of thousands of ops, as imported models and generated graphs reach.
fn long_graph(n: usize, mixed: bool) -> Graph {
    let g = GraphBuilder::new();
    let r = g.axis("R", 64).unwrap();
    let c = g.axis("C", 64).unwrap();
    let x = g.placeholder("x", &[r, c], DType::F32).unwrap();
    let y = g.placeholder("y", &[r, c], DType::F32).unwrap();
    let one = g.scalar(1.0, DType::F32).unwrap();
    let mut t = x;
    for i in 0..n {
        t = match (i % 8, mixed) {
            (5, true) => (t - t.max(&[c]).unwrap()).unwrap(),
            (7, true) => (t / (t.sum(&[r]).unwrap() + one).unwrap()).unwrap(),
            (k, _) if k % 4 == 0 => (t + y).unwrap(),
            (k, _) if k % 4 == 1 => (t * y).unwrap(),
            (k, _) if k % 4 == 2 => t.tanh().unwrap(),
            _ => (t - x).unwrap(),
        };
    }
    t.output().unwrap();
    g.finish()
}

/// Graph to callable for graphs of 1,000 to 16,000 ops, fused and unfused: the curve of
/// compile time against graph size (linear: every fused kernel is bounded,
/// `fusion::MAX_KERNEL_NODES`).
fn compile_time_at_scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile_at_scale");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(5));
    for mixed in [false, true] {
        for n in [1_000, 4_000, 16_000] {
            let graph = long_graph(n, mixed);
            let outputs = graph.outputs().to_vec();
            let placeholders = graph.placeholders();
            let name = format!("{}_{n}", if mixed { "mixed" } else { "chain" });
            for (mode, options) in [
                ("fused", JitOptions::default()),
                ("unfused", JitOptions::unfused()),
            ] {
                group.bench_function(BenchmarkId::new(mode, &name), |b| {
                    b.iter(|| {
                        let t =
                            Transformer::with_jit_options(graph.clone(), options.clone()).unwrap();
                        t.computation(&outputs, &placeholders).unwrap()
                    })
                });
            }
        }
    }
    group.finish();
}

criterion_group!(benches, compile_time, compile_time_at_scale);
criterion_main!(benches);
