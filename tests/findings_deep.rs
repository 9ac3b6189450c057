//! Deep graphs and former refusals, from outside reports (/work/shared/findings, copied to
//! tests/findings/ or generated here from the same pattern as their `gen_deep.py`): 100K-op
//! chains (elementwise, transposes, slice-of-slice views, derived axes) go through parse →
//! verify → compile (fused and unfused) → run on a thread with a 2 MiB stack and match the
//! interpreter; a fused kernel may read any number of buffers; a flatten/pad/select graph that
//! once needed div/mod indices
//! compiles (not yet: see docs/testing.md).

mod jit_common;

use jit_common::{compare, random_inputs, run};
use weft::prelude::*;
use weft_oracle::Tolerance;

/// The stack every deep test runs on: Rust's default for spawned threads.
const SMALL_STACK: usize = 2 << 20;

/// How many ops the deep chains have (the figure).
const DEEP: usize = 100_000;

/// How many ops the chains interpreted and compiled in the default (debug) test run have: deep
/// enough for recursion per op to show on a 2 MiB stack in a debug build, small enough for Cranelift in a debug
/// build; the `#[ignore]`d tests compile `DEEP` (docs/testing.md: run them with `--release`).
const COMPILED: usize = 1_000;

/// A chain of `n` elementwise ops (binary with a scalar constant, every third one unary).
fn elementwise_chain(n: usize) -> String {
    let bin = ["add", "multiply", "subtract", "maximum"];
    let un = ["tanh", "sigmoid", "abs", "negative"];
    let mut s = String::from("axis N = 64\nplaceholder x: f32[N]\nconstant h: f32[] = 0.5\n");
    let mut prev = "x".to_string();
    for i in 0..n {
        if i % 3 == 2 {
            s += &format!("v{i} = {}({prev})\n", un[i % 4]);
        } else {
            s += &format!("v{i} = {}({prev}, h)\n", bin[i % 4]);
        }
        prev = format!("v{i}");
    }
    s
}

/// A chain of `n` transposes of a vector.
fn transpose_chain(n: usize) -> String {
    let mut s = String::from("axis N = 4\nplaceholder x: f32[N]\n");
    let mut prev = "x".to_string();
    for i in 0..n {
        s += &format!("t{i} = transpose({prev})\n");
        prev = format!("t{i}");
    }
    s
}

/// `n` slices of slices, each dropping `drop` leading elements of a vector that keeps `keep`.
fn slice_chain(n: usize, drop: usize, keep: usize) -> String {
    let mut s = format!("axis S0 = {}\nplaceholder x: f32[S0]\n", n * drop + keep);
    let mut prev = "x".to_string();
    for i in 0..n {
        s += &format!(
            "axis S{} = slice(S{i}, {drop}:)\nv{i} = slice({prev}, S{i}={drop}:)\n",
            i + 1
        );
        prev = format!("v{i}");
    }
    s
}

/// `n` derived axes, each a pad of the one before, then a reduction over the last.
fn derived_axes(n: usize) -> String {
    let mut s = String::from("axis A0 = 2\n");
    for i in 0..n {
        s += &format!("axis A{} = pad(A{i}, 1, 0)\n", i + 1);
    }
    s + &format!("placeholder x: f32[A{n}]\ny = exp(x)\ns = sum(y, [A{n}])\n")
}

/// Which nodes a test requests.
#[derive(Clone, Copy, Debug)]
enum Requested {
    Last,
    Every,
}

fn outputs_of(g: &Graph, which: Requested) -> Vec<NodeId> {
    let mut computed = g
        .nodes()
        .filter(|(_, n)| !matches!(n.op, weft::Op::Tensor { .. }))
        .map(|(id, _)| id);
    match which {
        Requested::Last => computed.next_back().into_iter().collect(),
        Requested::Every => computed.collect(),
    }
}

/// Parses and verifies `source`, then runs the `which` outputs on the interpreter and, if
/// `compile`, on the fused and unfused JIT, comparing both with the interpreter.
fn agrees_with_the_interpreter(
    source: &str,
    which: Requested,
    compile: bool,
) -> Result<(), String> {
    let g = parsed(source)?;
    let outputs = outputs_of(&g, which);
    let ps = g.placeholders();
    let inputs = random_inputs(&g, &ps, 7);
    let tol = Tolerance::for_graph(&g);
    let refs = jit_common::references(&g, &outputs, &ps, &inputs, 1, &tol)
        .map_err(|e| format!("interpreter: {e}"))?;
    if !compile {
        return Ok(());
    }
    for backend in [Backend::Jit, Backend::JitUnfused] {
        let jit =
            run(&g, &outputs, &ps, &inputs, 1, backend).map_err(|e| format!("{backend:?}: {e}"))?;
        compare(&jit, &refs, &tol).map_err(|m| format!("{backend:?}: {m}"))?;
    }
    Ok(())
}

/// `source` parsed and verified.
fn parsed(source: &str) -> Result<Graph, String> {
    let g = weft::ir::text::parse(source, "deep.weft").map_err(|e| e.to_string())?;
    g.verify().map_err(|e| e.to_string())?;
    Ok(g)
}

/// Runs `f` on a fresh thread with a 2 MiB stack, failing the test on error or overflow.
fn on_small_stack(name: &str, f: impl FnOnce() -> Result<(), String> + Send + 'static) {
    let handle = std::thread::Builder::new()
        .name(name.into())
        .stack_size(SMALL_STACK)
        .spawn(f)
        .expect("spawn");
    match handle.join() {
        Ok(Ok(())) => {}
        Ok(Err(m)) => panic!("{name}: {m}"),
        Err(_) => panic!("{name} panicked"),
    }
}

/// Which stages a deep case goes through.
#[derive(Clone, Copy)]
enum Through {
    /// Parse, verify and the interpreter.
    Interpreter,
    /// Also the fused and unfused JIT.
    Jit,
}

fn deep_case(name: &str, source: String, which: Requested, through: Through) {
    let compile = matches!(through, Through::Jit);
    on_small_stack(name, move || {
        agrees_with_the_interpreter(&source, which, compile)
    });
}

/// Every deep chain of `n` ops, by name.
fn chains(n: usize) -> Vec<(&'static str, String)> {
    vec![
        ("elementwise", elementwise_chain(n)),
        ("transposes", transpose_chain(n)),
        ("slices of slices", slice_chain(n, 0, 3)),
        ("derived axes", derived_axes(n)),
    ]
}

#[test]
fn chains_of_100k_ops_parse_and_verify_on_a_small_stack() {
    for (name, source) in chains(DEEP) {
        on_small_stack(name, move || parsed(&source).map(drop));
    }
}

#[test]
fn deep_chains_run_on_the_interpreter_on_a_small_stack() {
    for (name, source) in chains(COMPILED) {
        deep_case(name, source, Requested::Last, Through::Interpreter);
    }
}

#[test]
fn deep_chains_compile_fused_and_unfused_on_a_small_stack() {
    for (name, source) in chains(COMPILED) {
        deep_case(name, source, Requested::Last, Through::Jit);
    }
}

#[test]
fn every_node_of_a_deep_chain_can_be_an_output() {
    for (name, source) in chains(COMPILED / 10) {
        deep_case(name, source, Requested::Every, Through::Jit);
    }
}

#[test]
fn the_10k_shrinking_slice_chain_of_the_finding_parses() {
    let source = slice_chain(10_000, 1, 2);
    on_small_stack("slices_10k", move || parsed(&source).map(drop));
}

/// Compiles and runs the 100K-op chains (`WEFT_DEEP_OPS` ops when set: CI runs 20 000 in
/// release, since the fused 100K elementwise chain alone compiles for minutes there).
#[test]
#[ignore = "minutes in a debug build: run with --release (docs/testing.md)"]
fn chains_of_100k_ops_run_on_every_backend_on_a_small_stack() {
    let ops = std::env::var("WEFT_DEEP_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEEP);
    for (name, source) in chains(ops) {
        deep_case(name, source, Requested::Last, Through::Jit);
    }
}

/// A finding's reproducer, requesting the last node and then every node: both backends match
/// the interpreter.
fn finding_matches(source: &str) {
    for which in [Requested::Last, Requested::Every] {
        if let Err(m) = agrees_with_the_interpreter(source, which, true) {
            panic!("{which:?}: {m}");
        }
    }
}

#[test]
fn a_fused_kernel_reading_101_buffers_compiles_and_runs() {
    finding_matches(include_str!("findings/fused_101_buffers_refused.weft"));
}
