//! `weft profile`: where a fused (or, `--unfused`, an unfused) run's time goes, step by step — each kernel and GEMM call of
//! the program timed alone over device-resident inputs, the median of several rounds, largest
//! first, with the totals per kind of step (so the next gap is visible).

use std::fmt::Write;

use weft_ir::Graph;
use weft_runtime::program::Step;

use crate::cli::bench::inputs_for;
use crate::{Error, Transformer};

/// Whether a step is of one kind.
type IsKind = fn(&Step) -> bool;

/// The profile of `graph`'s fused run (unfused when `unfused`): `rounds` rounds, the `top`
/// slowest steps listed.
pub fn profile(graph: Graph, rounds: usize, top: usize, unfused: bool) -> Result<String, Error> {
    graph.verify()?;
    if graph.outputs().is_empty() {
        return Err(Error::NoOutputs);
    }
    let options = if unfused {
        weft_compiler::JitOptions::unfused()
    } else {
        weft_compiler::JitOptions::default()
    };
    let t = Transformer::with_jit_options(graph.clone(), options)?;
    let c = t.computation(graph.outputs(), &graph.placeholders())?;
    let exe = c.jit().ok_or(Error::NoOutputs)?;
    let inputs = inputs_for(&graph)?;
    let state = weft_runtime::State::initial(&graph)?;
    let mut run = exe.resident(&inputs, &state)?;
    let times = run.profile(rounds)?;
    let program = exe.program();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let total: f64 = times.iter().map(|d| ms(*d)).sum();
    let mut out = String::new();
    writeln!(out, "target: {}", weft_runtime::Target::host()).unwrap();
    writeln!(
        out,
        "{} steps, each timed alone over resident inputs, median of {} rounds: {total:.4} ms in all",
        program.steps.len(),
        rounds.max(1)
    )
    .unwrap();
    let kinds: [(&str, IsKind); 3] = [
        ("GEMM calls", |s| matches!(s, Step::Gemm(_))),
        ("GEMM calls with their epilogue kernel", |s| {
            matches!(s, Step::GemmThen { .. })
        }),
        ("JIT kernels", |s| matches!(s, Step::Kernel(_))),
    ];
    writeln!(out, "\n# by kind").unwrap();
    for (name, is) in kinds {
        let (n, t) = program
            .steps
            .iter()
            .zip(&times)
            .filter(|(s, _)| is(s))
            .fold((0, 0.0), |(n, t), (_, d)| (n + 1, t + ms(*d)));
        let share = if total > 0.0 { 100.0 * t / total } else { 0.0 };
        writeln!(out, "{name:<40} {n:>5} steps {t:>11.4} ms {share:>5.1}%").unwrap();
    }
    let mut order: Vec<usize> = (0..times.len()).collect();
    order.sort_by(|a, b| times[*b].cmp(&times[*a]));
    writeln!(out, "\n# slowest steps").unwrap();
    for i in order.into_iter().take(top) {
        let t = ms(times[i]);
        let share = if total > 0.0 { 100.0 * t / total } else { 0.0 };
        let text = program.step_text(&program.steps[i]);
        writeln!(out, "step {i:<5} {t:>10.4} ms {share:>5.1}%  {text}").unwrap();
    }
    Ok(out)
}
