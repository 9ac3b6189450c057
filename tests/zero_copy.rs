//! Zero-copy calls: on the JIT, kernels read the caller's input arrays and write the caller's
//! output arrays in place (compiler/src/io_binding.rs, docs/runtime.md), so a steady-state call
//! copies no byte between host and device (`weft::host_copy_bytes`), and results still equal
//! the interpreter's — including where binding is refused and the call copies (an output that
//! is an input or a constant, an input stored in another layout, an output also assigned).
//! The copy counter is process-wide: the tests here take one lock so they do not count each
//! other's copies.

mod jit_common;

use jit_common::compare;
use std::sync::Mutex;
use weft::prelude::*;
use weft_ir::testing::{fill_garbage, Tolerance};

static COUNTER: Mutex<()> = Mutex::new(());

fn parse(text: &str) -> Graph {
    weft::ir::text::parse(text, "zero_copy.weft").unwrap()
}

fn named(g: &Graph, names: &[&str]) -> Vec<NodeId> {
    names.iter().map(|n| g.find(n).unwrap()).collect()
}

/// The bytes `call_into` copies between host and device on a warm computation, and its outputs
/// (written into garbage-filled arrays), checked against the interpreter.
fn copied_by_call_into(g: &Graph, outputs: &[&str], placeholders: &[&str]) -> u64 {
    let (outs, ps) = (named(g, outputs), named(g, placeholders));
    let inputs = jit_common::random_inputs(g, &ps, 3);
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&outs, &ps).unwrap();
    let mut arrays = c.output_arrays().unwrap();
    c.call_into(&inputs, &mut arrays).unwrap();
    arrays.iter_mut().for_each(fill_garbage);
    let before = weft::host_copy_bytes();
    c.call_into(&inputs, &mut arrays).unwrap();
    let copied = weft::host_copy_bytes() - before;
    let want = jit_common::run(g, &outs, &ps, &inputs, 1, Backend::Interpreter).unwrap();
    let state = Vec::new();
    compare(&(vec![arrays], state), &[want], &Tolerance::for_graph(g)).unwrap();
    copied
}

const CHAIN: &str = "
axis N = 4099
placeholder x: f32[N]
placeholder y: f32[N]
placeholder z: f32[N]
placeholder w: f32[N]
constant half: f32[] = 0.5
d = subtract(x, y)
p = multiply(z, w)
d2 = square(d)
p2 = square(p)
s = add(d2, p2)
r = sqrt(s)
out = multiply(r, half)
output out
";

#[test]
fn a_fused_chain_reads_and_writes_the_callers_arrays() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let copied = copied_by_call_into(&parse(CHAIN), &["out"], &["x", "y", "z", "w"]);
    assert_eq!(copied, 0, "a warm chain call copied {copied} bytes");
}

#[test]
fn reductions_and_several_outputs_are_bound_too() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/layernorm.weft"
    ))
    .unwrap();
    let g = parse(&text);
    let copied = copied_by_call_into(&g, &["out", "mu", "var"], &["a", "g", "b"]);
    assert_eq!(copied, 0, "a warm layernorm call copied {copied} bytes");
}

#[test]
fn outputs_that_are_inputs_or_constants_are_copied_and_correct() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let g = parse(
        "
axis N = 37
placeholder x: f32[N]
constant k: f32[N] = 2.5
y = add(x, k)
output y
",
    );
    // `x` is both an input (bound) and an output (copied out of its storage, so it is copied
    // in); `k` is a constant output; `y` is written in place.
    let copied = copied_by_call_into(&g, &["y", "x", "k"], &["x"]);
    assert!(copied > 0, "an output that is an input must be copied");
}

#[test]
fn the_same_array_passed_twice_and_bool_outputs_are_correct() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let g = parse(
        "
axis N = 21
placeholder x: f32[N]
placeholder y: f32[N]
m = greater(x, y)
s = subtract(x, y)
output m, s
",
    );
    let (outs, ps) = (named(&g, &["m", "s"]), named(&g, &["x", "y"]));
    let x = jit_common::random_inputs(&g, &ps, 5).remove(0);
    let inputs = vec![x.clone(), x];
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&outs, &ps).unwrap();
    let mut arrays = c.output_arrays().unwrap();
    arrays.iter_mut().for_each(fill_garbage);
    c.call_into(&inputs, &mut arrays).unwrap();
    let want = jit_common::run(&g, &outs, &ps, &inputs, 1, Backend::Interpreter).unwrap();
    compare(&(vec![arrays], vec![]), &[want], &Tolerance::F32).unwrap();
}

#[test]
fn inputs_in_another_layout_and_assigned_outputs_are_correct() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let g = parse(
        "
axis R = 5
axis C = 7
placeholder a: f32[R, C]
variable v: f32[R, C] = 1.0
s = add(a, v)
n = assign(v, s)
output s, n
",
    );
    let (outs, ps) = (named(&g, &["s", "n"]), named(&g, &["a"]));
    let inputs = jit_common::random_inputs(&g, &ps, 9);
    let order: Vec<Axis> = g.node(ps[0]).axes.iter().rev().copied().collect();
    let options = JitOptions {
        layouts: vec![(ps[0], order)],
        ..JitOptions::default()
    };
    let t = Transformer::with_jit_options(g.clone(), options).unwrap();
    let c = t.computation(&outs, &ps).unwrap();
    let want = jit_common::run(&g, &outs, &ps, &inputs, 2, Backend::Interpreter).unwrap();
    let mut calls = Vec::new();
    for k in 0..2 {
        calls.push(jit_common::call_alternately(&c, &inputs, k + 1).unwrap());
    }
    let state = vec![t.value_of(g.find("v").unwrap()).unwrap()];
    compare(&(calls, state), &[want], &Tolerance::F32).unwrap();
}
