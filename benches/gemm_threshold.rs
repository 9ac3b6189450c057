//! Where the GEMM path starts to pay: a square f32 and f64 `dot` of side n (n³ points) timed as
//! whole `call_into`s with every dot on the JIT's loop nest (`gemm: None`) and with every dot
//! on the GEMM (`min_work: 1`), interleaved, medians of many calls, one and two threads. The
//! crossover sets `GemmOptions::min_work` (docs/benchmarks.md). Run with
//! `cargo bench --bench gemm_threshold`.

use std::time::Instant;
use weft::prelude::*;
use weft_compiler::gemm::GemmOptions;

fn graph(n: usize, dtype: DType) -> Graph {
    let mut g = Graph::new();
    let (b, i, o) = (
        g.axis("B", n).unwrap(),
        g.axis("I", n).unwrap(),
        g.axis("O", n).unwrap(),
    );
    let x = g.placeholder("X", &[b, i], dtype).unwrap();
    let w = g.placeholder("W", &[i, o], dtype).unwrap();
    let h = g.dot(x, w).unwrap();
    g.mark_output(h).unwrap();
    g
}

fn main() {
    println!("dtype threads n points loop_nest_us gemm_us loop/gemm");
    for dtype in [DType::F32, DType::F64] {
        for threads in [1usize, 2] {
            for n in [8usize, 16, 24, 32, 40, 48, 64, 96, 128, 256] {
                let g = graph(n, dtype);
                let ps = g.placeholders();
                let inputs = weft_oracle::random_inputs(&g, &ps, 1, false);
                let comps: Vec<(Transformer, Computation)> = [
                    None,
                    Some(GemmOptions {
                        min_work: 1,
                        min_side: 1,
                        ..GemmOptions::default()
                    }),
                ]
                .into_iter()
                .map(|gemm| {
                    let t = Transformer::with_jit_options(
                        g.clone(),
                        JitOptions {
                            threads: Some(threads),
                            gemm,
                            ..JitOptions::default()
                        },
                    )
                    .unwrap();
                    let c = t.computation(g.outputs(), &ps).unwrap();
                    (t, c)
                })
                .collect();
                let mut outs: Vec<Vec<HostArray>> = comps
                    .iter()
                    .map(|(_, c)| c.output_arrays().unwrap())
                    .collect();
                // Calls per sample: about a millisecond of work.
                let reps = (2_000_000 / (n * n * n)).clamp(1, 2000);
                let mut times = [Vec::new(), Vec::new()];
                for round in 0..41 {
                    for (k, (_, c)) in comps.iter().enumerate() {
                        let t0 = Instant::now();
                        for _ in 0..reps {
                            c.call_into(&inputs, &mut outs[k]).unwrap();
                        }
                        if round > 0 {
                            times[k].push(t0.elapsed().as_secs_f64() * 1e6 / reps as f64);
                        }
                    }
                }
                let med = |v: &mut Vec<f64>| {
                    v.sort_by(|a, b| a.total_cmp(b));
                    v[v.len() / 2]
                };
                let (l, m) = (med(&mut times[0]), med(&mut times[1]));
                println!(
                    "{dtype} {threads} {n} {} {l:.2} {m:.2} {:.2}",
                    n * n * n,
                    l / m
                );
            }
        }
    }
}
