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
use weft_oracle::{fill_garbage, Tolerance};

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

#[test]
fn borrowed_slices_at_any_alignment_are_read_in_place() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let g = parse(CHAIN);
    let (outs, ps) = (named(&g, &["out"]), named(&g, &["x", "y", "z", "w"]));
    let inputs = jit_common::random_inputs(&g, &ps, 11);
    let want = jit_common::run(&g, &outs, &ps, &inputs, 1, Backend::Interpreter).unwrap();
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&outs, &ps).unwrap();
    let mut out = c.output_arrays().unwrap();
    for offset in 0..4 {
        // Each input copied `offset` floats into a buffer: 0, 4, 8 or 12 bytes past alignment.
        let buffers: Vec<Vec<f32>> = inputs
            .iter()
            .map(|a| {
                let mut v = vec![0.0; offset];
                v.extend_from_slice(a.as_slice::<f32>().unwrap());
                v
            })
            .collect();
        let views: Vec<HostView> = inputs
            .iter()
            .zip(&buffers)
            .map(|(a, b)| HostView::new(a.axes(), a.shape(), &b[offset..]).unwrap())
            .collect();
        c.call_into(&views, &mut out).unwrap();
        fill_garbage(&mut out[0]);
        let before = weft::host_copy_bytes();
        c.call_into(&views, &mut out).unwrap();
        assert_eq!(weft::host_copy_bytes() - before, 0, "offset {offset}");
        compare(
            &(vec![out.clone()], vec![]),
            std::slice::from_ref(&want),
            &Tolerance::F32,
        )
        .unwrap();
    }
}

#[test]
fn inputs_by_name_in_any_order() {
    let g = parse(CHAIN);
    let (outs, ps) = (named(&g, &["out"]), named(&g, &["x", "y", "z", "w"]));
    let inputs = jit_common::random_inputs(&g, &ps, 13);
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&outs, &ps).unwrap();
    let positional = c.call(&inputs).unwrap();
    let by_name = c
        .call_named(&[
            ("w", &inputs[3]),
            ("x", &inputs[0]),
            ("z", &inputs[2]),
            ("y", &inputs[1]),
        ])
        .unwrap();
    assert_eq!(positional, by_name);
    let missing = c
        .call_named(&[("w", &inputs[3]), ("x", &inputs[0]), ("z", &inputs[2])])
        .unwrap_err();
    assert!(
        missing.to_string().contains("`y` is not given"),
        "{missing}"
    );
    let unknown = c.call_named(&[("q", &inputs[0])]).unwrap_err();
    assert!(
        unknown.to_string().contains("`q` is not a placeholder"),
        "{unknown}"
    );
    let twice = c
        .call_named(&[("x", &inputs[0]), ("x", &inputs[0])])
        .unwrap_err();
    assert!(
        twice.to_string().contains("`x` is given more than once"),
        "{twice}"
    );
}

#[test]
fn variables_are_read_in_place_and_assigned_by_swapping() {
    // Assigns run when an output depends on them: here the outputs are the assigns.
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let g = parse(
        "
axis R = 33
axis C = 17
placeholder a: f32[R, C]
variable v: f32[R, C] = 0.25
persistent_tensor m: f32[C] = 1.0
s = add(a, v)
t = multiply(s, m)
n = assign(v, t)
c = sum(t, [R])
k = assign(m, c)
output n, k
",
    );
    let (outs, ps) = (named(&g, &["n", "k"]), named(&g, &["a"]));
    let inputs = jit_common::random_inputs(&g, &ps, 17);
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&outs, &ps).unwrap();
    let mut out = c.output_arrays().unwrap();
    let calls = 5;
    c.call_into(&inputs, &mut out).unwrap();
    let before = weft::host_copy_bytes();
    for _ in 1..calls {
        c.call_into(&inputs, &mut out).unwrap();
    }
    let copied = weft::host_copy_bytes() - before;
    let state = vec![
        t.value_of(g.find("v").unwrap()).unwrap(),
        t.value_of(g.find("m").unwrap()).unwrap(),
    ];
    let want = jit_common::run(&g, &outs, &ps, &inputs, calls, Backend::Interpreter).unwrap();
    let last = vec![want.0.last().unwrap().clone()];
    compare(&(vec![out], state), &[(last, want.1)], &Tolerance::F32).unwrap();
    // The state is read in place and committed by swapping; the only copies are of the
    // outputs, which are the assigned values themselves (one value, two owners).
    let output_bytes = ((33 * 17 + 17) * 4 * (calls - 1)) as u64;
    assert_eq!(
        copied, output_bytes,
        "warm calls reading and assigning state"
    );
}

#[test]
fn an_output_passed_to_another_computation_is_read_in_place() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let g = parse(CHAIN);
    let (outs, ps) = (named(&g, &["out"]), named(&g, &["x", "y", "z", "w"]));
    let inputs = jit_common::random_inputs(&g, &ps, 19);
    let first = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c1 = first.computation(&outs, &ps).unwrap();
    // A second transformer over the same graph: the chain's output is its `x`.
    let second = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c2 = second.computation(&outs, &ps).unwrap();
    let mut mid = c1.output_arrays().unwrap();
    let mut out = c2.output_arrays().unwrap();
    for warm in [true, false] {
        let before = weft::host_copy_bytes();
        c1.call_into(&inputs, &mut mid).unwrap();
        let chained = [
            mid[0].view(),
            inputs[1].view(),
            inputs[2].view(),
            inputs[3].view(),
        ];
        c2.call_into(&chained, &mut out).unwrap();
        if !warm {
            assert_eq!(weft::host_copy_bytes() - before, 0);
        }
    }
    let want_mid = jit_common::run(&g, &outs, &ps, &inputs, 1, Backend::Interpreter).unwrap();
    let mut second_inputs = inputs.clone();
    second_inputs[0] = want_mid.0[0][0].clone();
    let want = jit_common::run(&g, &outs, &ps, &second_inputs, 1, Backend::Interpreter).unwrap();
    compare(&(vec![out], vec![]), &[want], &Tolerance::F32).unwrap();
}

/// `call_into_views`: outputs written into memory the caller lends, with the bits `call_into`
/// gives, on the JIT (in place: no byte copied once warm) and on the interpreter (copied in);
/// a bool output (copied out) too; a view of the wrong lengths is refused naming the output.
#[test]
fn outputs_are_written_into_borrowed_memory() {
    let _lock = COUNTER.lock().unwrap_or_else(|p| p.into_inner());
    let g = parse(
        "
axis R = 33
axis C = 70
placeholder a: f32[R, C]
placeholder b: f32[C]
s = add(a, b)
m = max(s, [C])
big = greater(s, b)
output s, m, big
",
    );
    let (outs, ps) = (named(&g, &["s", "m", "big"]), named(&g, &["a", "b"]));
    let inputs = jit_common::random_inputs(&g, &ps, 9);
    for backend in [Backend::Jit, Backend::Interpreter] {
        let t = Transformer::new(g.clone(), backend).unwrap();
        let c = t.computation(&outs, &ps).unwrap();
        let mut arrays = c.output_arrays().unwrap();
        c.call_into(&inputs, &mut arrays).unwrap();
        let shapes: Vec<(Axes, Vec<usize>)> = arrays
            .iter()
            .map(|a| (a.axes().clone(), a.shape().to_vec()))
            .collect();
        let (mut s, mut m, mut big) = (vec![-1f32; 33 * 70], vec![-1f32; 33], vec![true; 33 * 70]);
        let lend = |s: &mut [f32], m: &mut [f32], big: &mut [bool]| {
            let mut views = [
                HostViewMut::new(&shapes[0].0, &shapes[0].1, s).unwrap(),
                HostViewMut::new(&shapes[1].0, &shapes[1].1, m).unwrap(),
                HostViewMut::new(&shapes[2].0, &shapes[2].1, big).unwrap(),
            ];
            let before = weft::host_copy_bytes();
            c.call_into_views(&inputs, &mut views).unwrap();
            weft::host_copy_bytes() - before
        };
        lend(&mut s, &mut m, &mut big);
        s.fill(f32::NAN);
        let copied = lend(&mut s, &mut m, &mut big);
        if backend == Backend::Jit {
            // Only the bool output is copied: 33 x 70 one-byte elements.
            assert_eq!(copied, 33 * 70, "a warm call copied {copied} bytes");
        }
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&s), bits(&arrays[0].to_vec::<f32>().unwrap()));
        assert_eq!(bits(&m), bits(&arrays[1].to_vec::<f32>().unwrap()));
        assert_eq!(big, arrays[2].to_vec::<bool>().unwrap());
        // R and C swapped: the right element count, the wrong lengths.
        let (r, cc) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
        let swapped = Axes::new([cc, r]).unwrap();
        let mut views = [
            HostViewMut::new(&swapped, &[70, 33], &mut s).unwrap(),
            HostViewMut::new(&shapes[1].0, &shapes[1].1, &mut m).unwrap(),
            HostViewMut::new(&shapes[2].0, &shapes[2].1, &mut big).unwrap(),
        ];
        let e = c
            .call_into_views(&inputs, &mut views)
            .unwrap_err()
            .to_string();
        assert!(e.contains("`s`"), "{e}");
    }
}
