//! Property tests over random graphs (`weft_oracle`): simplify keeps every result bit for
//! bit (the interpreter is the oracle), and every graph compiles, fused and unfused, to plans
//! that compute the same values (run by the test executor over their planned arenas).

mod common;
#[path = "common/exec.rs"]
mod exec;
#[path = "common/oracle.rs"]
mod oracle;

use proptest::prelude::*;
use std::collections::HashMap;
use weft_compiler::passes::simplify::{interpreter_evaluator, simplify, SimplifyOptions};
use weft_compiler::{compile_plan, PlanOptions};
use weft_ir::Graph;
use weft_oracle::{arb_graph_with, run_property, GraphConfig, Tally};

/// The graph with its sinks marked as outputs when it has none (so every draw tests something).
fn with_outputs(mut g: Graph) -> Graph {
    if g.outputs().is_empty() {
        let mut read = vec![false; g.len()];
        for (_, n) in g.nodes() {
            for i in n.op.inputs() {
                read[i.as_u32() as usize] = true;
            }
        }
        let sinks: Vec<_> = g
            .nodes()
            .map(|(id, _)| id)
            .filter(|id| !read[id.as_u32() as usize])
            .collect();
        for s in sinks {
            g.mark_output(s).unwrap();
        }
    }
    g
}

/// Point evaluations a plan's kernels make (outer × loops × reduction per stage).
fn work(p: &weft_compiler::CompiledPlan) -> usize {
    p.kernels
        .iter()
        .flat_map(|k| {
            let outer: usize = k.outer.iter().map(|a| a.len).product();
            k.stages.iter().map(move |st| {
                let inner: usize = st.loops.iter().map(|a| a.len).product();
                let red: usize = st
                    .reduction
                    .as_ref()
                    .map(|r| r.axes.iter().map(|a| a.len).product())
                    .unwrap_or(1);
                outer.saturating_mul(inner).saturating_mul(red)
            })
        })
        .fold(0usize, |a, b| a.saturating_add(b))
}

/// Above this many point evaluations a case is compiled but not run (the interpreter and the
/// test executor are slow on the rare huge outer products the generator draws).
const MAX_WORK: usize = 200_000;

fn check(g: &Graph, seed: u64, tally: &Tally) -> Result<(), TestCaseError> {
    // Every graph compiles, fused and unfused (no div/mod refusal either: docs/passes.md).
    let mut plans = Vec::new();
    for fused in [true, false] {
        let opts = PlanOptions {
            fused,
            ..PlanOptions::default()
        };
        match compile_plan(g, &opts) {
            Ok(p) => plans.push(p),
            Err(e) => {
                return Err(TestCaseError::fail(format!(
                    "fused={fused}: {e}\n{}",
                    weft_ir::text::print(g)
                )))
            }
        }
    }
    // Buffer sharing: tensors in one buffer have disjoint lives, except a write in place.
    for p in &plans {
        let b = &p.buffers;
        prop_assert!(b.peak_live_bytes <= b.arena_bytes);
        for buf in &b.buffers {
            for (i, x) in buf.tensors.iter().enumerate() {
                for y in &buf.tensors[i + 1..] {
                    let (x, y) = (&b.tensors[*x], &b.tensors[*y]);
                    let disjoint = x.last < y.first || y.last < x.first;
                    let in_place = b.in_place.iter().any(|(w, o)| {
                        use weft_compiler::passes::storage::Planned::Node;
                        (x.what == Node(*o) && y.what == Node(*w))
                            || (y.what == Node(*o) && x.what == Node(*w))
                    });
                    prop_assert!(disjoint || in_place, "{x:?} and {y:?} share a buffer");
                }
            }
        }
    }
    if work(&plans[1]) > MAX_WORK {
        tally.skipped("over MAX_WORK: plans checked, not run");
        return Ok(());
    }
    let ins = oracle::random_inputs_with(g, seed, true);
    // simplify is exact.
    let s = simplify(g, &SimplifyOptions::default(), Some(&interpreter_evaluator))
        .map_err(|e| TestCaseError::fail(format!("simplify: {e}")))?;
    let before = oracle::interpret(g, g.outputs(), &ins);
    let outs: Vec<_> = g.outputs().iter().map(|o| s.map.get(*o).unwrap()).collect();
    let after = oracle::interpret(&s.graph, &outs, &ins);
    for (b, a) in before.iter().zip(&after) {
        prop_assert!(
            oracle::same_bits(b, a),
            "simplify changed\n{b:?}\ninto\n{a:?}"
        );
    }
    // Fused and unfused plans compute the same values, to the bit.
    let by_name: HashMap<String, Vec<f64>> = g
        .placeholders()
        .iter()
        .zip(&ins)
        .map(|(p, a)| {
            let v = (0..a.len())
                .map(|i| a.data().get(i).unwrap().as_f64())
                .collect();
            (g.node(*p).name.clone().unwrap(), v)
        })
        .collect();
    let results: Vec<_> = plans.iter().map(|p| exec::run(p, &by_name)).collect();
    for (a, b) in results[0].iter().zip(&results[1]) {
        for (x, y) in a.iter().zip(b) {
            prop_assert!(
                (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits(),
                "fused {x} but unfused {y}"
            );
        }
    }
    tally.compared();
    Ok(())
}

#[test]
fn passes_keep_results() {
    run_property(
        "random_graphs::passes_keep_results",
        file!(),
        weft_oracle::proptest_cases(512),
        0.9,
        (arb_graph_with(GraphConfig::compilable()), 0u64..1000),
        |(g, seed), tally| check(&with_outputs(g), seed, tally),
    );
}

#[test]
fn workloads_pass_the_same_checks() {
    for g in [
        common::softmax(3, 4),
        common::layernorm(2, 3),
        common::mlp(4, 3),
        common::views(),
    ] {
        let tally = Tally::default();
        check(&g, 1, &tally).unwrap();
        assert_eq!(tally.compared_count(), 1);
    }
}
