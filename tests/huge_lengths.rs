//! Random graphs over every op (`weft_oracle`'s generator, [`GraphConfig::huge_lengths`])
//! whose axes are often huge — 2^20 to 2^62, a power of two or one more — or empty. Every
//! backend (the interpreter, the fused JIT, the unfused JIT) must answer each, for the last
//! node alone, for a random set of nodes, and for the total (a sum) of the last computed node
//! over a huge axis, appended (a small result the JIT compiles with loops of huge lengths): a computation or a typed refusal, never a panic
//! or a hang, and they must agree on validity:
//!
//! - where the interpreter prepares a computation, both JITs do too;
//! - where a JIT prepares one the interpreter refuses, the interpreter's refusal is its memory
//!   budget (it holds every value and index map, where the JIT computes a broadcast in its
//!   kernels instead of storing it);
//! - no refusal is an internal error (a broken guarantee between passes, a kernel failing
//!   verification).
//!
//! Graphs small enough to run are run on all three with random inputs and compared by the
//! oracle (docs/testing.md), as in `jit_props`.
//!
//! Compile-time work must not grow with an axis's length (issue 60: refusing a 2^40 batch took
//! the JIT over 100 s). Nothing structural counts that work, so each case runs on a thread and
//! must answer within [`CASE_LIMIT`]: generous (a case compiles in milliseconds in release),
//! because what it catches is linear in a length of 2^20 to 2^62 — seconds to centuries.
//! `PROPTEST_CASES=1000 cargo test --release --test huge_lengths` runs longer. Random graphs
//! rarely reach a computation over a huge axis that fits the budget, so a second property draws
//! the shapes the findings hit (`huge_shape`) at random huge lengths.

mod jit_common;

use jit_common::{compare, references, run};
use proptest::prelude::*;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;
use weft::prelude::*;
use weft_oracle::{
    arb_graph_with, observed_outputs, proptest_cases, small_enough, GraphConfig, Tolerance,
    PROP_MAX_ELEMENTS, PROP_MAX_TOTAL_ELEMENTS,
};

/// The longest one case may take, all backends and output sets together: 5 s in release,
/// 60 s in a debug build (about ten times slower, and the oracle's perturbed runs).
const CASE_LIMIT: Duration = Duration::from_secs(if cfg!(debug_assertions) { 60 } else { 5 });

const BACKENDS: [Backend; 3] = [Backend::Interpreter, Backend::Jit, Backend::JitUnfused];

/// Prepares the computation of `outputs` on `backend`: `Err` with the refusal's text.
fn prepare(g: &Graph, outputs: &[NodeId], backend: Backend) -> Result<(), String> {
    let ps = needed_placeholders(g, outputs);
    catch_unwind(AssertUnwindSafe(|| {
        let t = Transformer::new(g.clone(), backend).map_err(|e| e.to_string())?;
        t.computation(outputs, &ps)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }))
    .unwrap_or_else(|_| Err(format!("{backend:?} panicked")))
}

/// The placeholders `outputs` depend on (the caller's arrays the budget counts: a huge
/// placeholder nothing reads would refuse every computation).
fn needed_placeholders(g: &Graph, outputs: &[NodeId]) -> Vec<NodeId> {
    let needed = g.ancestors(outputs);
    let ps = g.placeholders();
    ps.into_iter()
        .filter(|p| needed[p.as_u32() as usize])
        .collect()
}

/// Whether a refusal's text says a guarantee broke inside weft rather than refusing the graph.
fn internal(e: &str) -> bool {
    ["internal", "fails verification", "panicked"]
        .iter()
        .any(|w| e.contains(w))
}

/// The refusals of the interpreter's memory budget (or of an allocation it cannot have).
fn over_interpreter_budget(e: &str) -> bool {
    e.contains("memory budget") || e.contains("cannot allocate")
}

/// Every backend's answer for `outputs` of `g`, checked for agreement (module docs); then, when
/// all prepared it and it is small, the results compared with the interpreter's.
fn check_outputs(g: &Graph, outputs: &[NodeId], seed: u64) -> Result<(), String> {
    let answers: Vec<Result<(), String>> =
        BACKENDS.iter().map(|b| prepare(g, outputs, *b)).collect();
    for (b, a) in BACKENDS.iter().zip(&answers) {
        if let Err(e) = a {
            if internal(e) {
                return Err(format!("{b:?}: {e}"));
            }
        }
    }
    match &answers[0] {
        Ok(()) => {
            if let Some((b, Err(e))) = BACKENDS.iter().zip(&answers).find(|(_, a)| a.is_err()) {
                return Err(format!("{b:?} refuses what the interpreter prepares: {e}"));
            }
        }
        Err(e) if answers[1..].iter().any(|a| a.is_ok()) && !over_interpreter_budget(e) => {
            return Err(format!("a JIT prepares what the interpreter refuses: {e}"));
        }
        Err(_) => return Ok(()),
    }
    if answers.iter().any(|a| a.is_err())
        || !small_enough(g, PROP_MAX_ELEMENTS, PROP_MAX_TOTAL_ELEMENTS)
    {
        return Ok(());
    }
    let ps = g.placeholders();
    let inputs = weft_oracle::random_inputs(g, &ps, seed, true);
    let tol = Tolerance::for_graph(g);
    let refs = references(g, outputs, &ps, &inputs, 2, &tol).map_err(|e| e.to_string())?;
    for backend in [Backend::Jit, Backend::JitUnfused] {
        let got = run(g, outputs, &ps, &inputs, 2, backend)
            .map_err(|e| format!("{backend:?} failed: {e}"))?;
        compare(&got, &refs, &tol).map_err(|m| format!("{backend:?} differs: {m}"))?;
    }
    Ok(())
}

/// `g` with the total (`sum`, `max` for bools) of its last computed node over a huge axis
/// appended, and that total: a small result read from a huge operand, which the JIT compiles
/// with loops of the huge lengths where the operand is computed (a broadcast, an elementwise op
/// of one) rather than stored — a huge output or input is refused by the budget at once.
fn with_total(g: &Graph) -> Option<(Graph, NodeId)> {
    let huge = |n: &weft::ir::Node| {
        g.shape_of(&n.axes)
            .is_ok_and(|s| s.iter().any(|&len| len >= 1 << 20))
    };
    let (id, node) = g
        .nodes()
        .rev()
        .find(|(_, n)| !matches!(n.op, weft::Op::Tensor { .. }) && huge(n))?;
    let op = if node.dtype == DType::Bool {
        weft::ReduceOp::Max
    } else {
        weft::ReduceOp::Sum
    };
    let axes: Vec<Axis> = node.axes.iter().copied().collect();
    let mut with = g.clone();
    let total = with.reduce(op, id, &axes, None).ok()?;
    Some((with, total))
}

/// [`check_outputs`] for the last node alone, for a random set of nodes and for the total of
/// the last computed node over a huge axis ([`with_total`]), on a thread that must answer
/// within [`CASE_LIMIT`].
fn check(g: &Graph, seed: u64) -> Result<(), TestCaseError> {
    let Some((last, _)) = g.nodes().last() else {
        return Ok(());
    };
    let (tx, rx) = mpsc::channel();
    let graph = g.clone();
    std::thread::spawn(move || {
        let sets = [vec![last], observed_outputs(&graph, seed)];
        let mut outcome = sets
            .iter()
            .try_for_each(|outputs| check_outputs(&graph, outputs, seed));
        if let (Ok(()), Some((with, total))) = (&outcome, with_total(&graph)) {
            outcome = check_outputs(&with, &[total], seed).map_err(|e| format!("its total: {e}"));
        }
        let _ = tx.send(outcome);
    });
    let fail = |what: String| {
        TestCaseError::fail(format!("{what} (seed {seed})\n{}", weft_ir::text::print(g)))
    };
    match rx.recv_timeout(CASE_LIMIT) {
        Ok(outcome) => outcome.map_err(fail),
        // The thread is left running; the test fails and the process ends with it.
        Err(_) => Err(fail(format!("no answer within {CASE_LIMIT:?}"))),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(96)))]

    #[test]
    fn every_backend_answers_huge_lengths_alike(
        g in arb_graph_with(GraphConfig::huge_lengths()),
        seed in any::<u64>(),
    ) {
        check(&g, seed)?;
    }
}

/// The shapes the 2026-12-06 findings hit, which random graphs rarely reach within the budget
/// (a small placeholder broadcast over a huge axis and reduced; a huge batch through a dense
/// layer; a reduction over the middle axis of a huge input), at a drawn huge length `n` (2^20
/// to 2^62, a power of two or one more) and small lengths `a`, `p`: the text of one graph.
fn huge_shape(kind: u8, n: usize, a: usize, p: usize) -> String {
    let head = format!("axis N = {n}\naxis A = {a}\naxis P = {p}\n");
    let body = match kind % 6 {
        0 => "placeholder x: f32[A]\nb = broadcast(x, [A, N])\ny = sum(b, [N])\n",
        1 => "placeholder x: f32[A]\nb = broadcast(x, [N, A])\ny = max(b, [N])\n",
        2 => "constant c: f32[A, N] = 0.5\nm = mean(c, [N])\ny = exp(m)\n",
        3 => "placeholder x: f32[A]\nb = broadcast(x, [A, N])\nt = tanh(b)\ny = sum(t, [N, A])\n",
        4 => "placeholder x: f32[N, P]\nvariable w: f32[P, A] = 0.5\ny = dot(x, w)\n",
        _ => "placeholder t: f32[N, P, A]\ny = sum(t, [P])\n",
    };
    format!("{head}{body}output y\n")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    /// Every backend answers the findings' shapes alike at any huge length, within
    /// [`CASE_LIMIT`] (the JIT refused a 2^40 batch after 100 s before).
    #[test]
    fn the_findings_shapes_answer_alike_at_any_huge_length(
        kind in 0u8..6,
        power in 20u32..63,
        plus_one in any::<bool>(),
        a in 1usize..9,
        p in 1usize..9,
        seed in any::<u64>(),
    ) {
        let n = (1usize << power) + usize::from(plus_one);
        let g = weft_ir::text::parse(&huge_shape(kind, n, a, p), "huge_shape.weft")
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        check(&g, seed)?;
    }
}

/// The generator does reach huge and empty axes: the property above is not about small
/// lengths only.
#[test]
fn the_generator_draws_huge_and_empty_lengths() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let strategy = arb_graph_with(GraphConfig::huge_lengths());
    let (mut huge, mut empty) = (0, 0);
    for _ in 0..64 {
        let g = strategy.new_tree(&mut runner).unwrap().current();
        let lengths: Vec<usize> = g
            .axis_table()
            .filter_map(|(id, _)| g.axis_len(g.axis_of(id)))
            .collect();
        huge += usize::from(lengths.iter().any(|&n| n >= 1 << 20));
        empty += usize::from(lengths.contains(&0));
    }
    assert!(huge >= 16 && empty >= 2, "{huge} {empty}");
}
