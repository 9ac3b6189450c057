//! Lengths bound at call time (src/per_binding.rs): one transformer over a graph whose batch
//! axis is unbound serves calls at any batch size, compiling once per binding, every result
//! equal to the interpreter's at the same binding; the errors name the axis and the inputs.

use weft::prelude::*;
use weft::{BinaryOp, ReduceOp, UnaryOp};

/// `y = tanh(x·2) − Σ_C x` over x[B, C] with B unbound, and a variable `count[C]` (bound) that
/// accumulates Σ_B x on every call.
fn graph() -> (Graph, Axis, Axis, [NodeId; 4]) {
    let mut g = Graph::new();
    let b = g.axis_unbound("B").unwrap();
    let c = g.axis("C", 5).unwrap();
    let x = g.placeholder("x", &[b, c], DType::F64).unwrap();
    let count = g
        .variable(
            "count",
            &[c],
            DType::F64,
            TensorInit::Fill(Scalar::Float(0.0)),
        )
        .unwrap();
    let two = g.scalar(Scalar::Float(2.0), DType::F64).unwrap();
    let x2 = g.binary(BinaryOp::Multiply, x, two).unwrap();
    let t = g.unary(UnaryOp::Tanh, x2).unwrap();
    let s = g.reduce(ReduceOp::Sum, x, &[c], None).unwrap();
    let y = g.binary(BinaryOp::Subtract, t, s).unwrap();
    let col = g.reduce(ReduceOp::Sum, x, &[b], None).unwrap();
    let next = g.binary(BinaryOp::Add, count, col).unwrap();
    let assign = g.assign(count, next).unwrap();
    g.mark_output(y).unwrap();
    (g, b, c, [x, y, assign, count])
}

fn batch(b: Axis, c: Axis, len: usize, offset: f64) -> HostArray {
    let data: Vec<f64> = (0..len * 5)
        .map(|i| (i as f64 * 0.37 + offset).sin())
        .collect();
    HostArray::from_vec(Axes::new([b, c]).unwrap(), vec![len, 5], data).unwrap()
}

#[test]
fn one_computation_serves_every_batch_size_compiling_once_per_size() {
    let (g, b, c, [x, y, assign, count]) = graph();
    for backend in [Backend::Jit, Backend::JitUnfused, Backend::Interpreter] {
        let t = Transformer::new(g.clone(), backend).unwrap();
        let comp = t.computation(&[y, assign], &[x]).unwrap();
        assert_eq!(comp.compilations(), 0, "nothing compiles before a call");
        let mut want_count = [0.0f64; 5];
        for (k, len) in [3usize, 7, 3, 1, 7, 0, 3].into_iter().enumerate() {
            let input = batch(b, c, len, k as f64);
            let out = comp.call(&[&input]).unwrap();
            // The same call on a transformer built for this length alone.
            let mut fixed = g.clone();
            fixed.bind(b, len).unwrap();
            let reference = Transformer::new(fixed, Backend::Interpreter).unwrap();
            let want = reference
                .computation(&[y], &[x])
                .unwrap()
                .call(&[&input])
                .unwrap();
            assert_eq!(out[0].shape(), &[len, 5], "{backend:?} B = {len}");
            let (got, want) = (
                out[0].as_slice::<f64>().unwrap(),
                want[0].as_slice::<f64>().unwrap(),
            );
            for (i, (p, q)) in got.iter().zip(want).enumerate() {
                assert!(
                    (p - q).abs() <= 1e-12 * (1.0 + q.abs()),
                    "{backend:?} B = {len}, [{i}]: {p} vs {q}"
                );
            }
            // The state is the transformer's, whatever the binding.
            let xs = input.as_slice::<f64>().unwrap();
            for (j, w) in want_count.iter_mut().enumerate() {
                *w += (0..len).map(|r| xs[r * 5 + j]).sum::<f64>();
            }
            let have = t.value_of(count).unwrap();
            for (p, q) in have.as_slice::<f64>().unwrap().iter().zip(want_count) {
                assert!(
                    (p - q).abs() <= 1e-12 * (1.0 + q.abs()),
                    "{backend:?}: count {p} vs {q}"
                );
            }
        }
        assert_eq!(comp.compilations(), 4, "{backend:?}: B = 3, 7, 1, 0");
        let held: Vec<usize> = comp.bindings().iter().map(|bd| bd[0].1).collect();
        assert_eq!(
            held,
            vec![3, 0, 7, 1],
            "{backend:?}: most recently used first"
        );
        assert_eq!(comp.bindings()[0][0].0, "B");
    }
}

#[test]
fn the_least_recently_used_binding_is_evicted() {
    let (g, b, c, [x, y, ..]) = graph();
    let t = Transformer::new(g, Backend::Jit).unwrap();
    let comp = t.computation(&[y], &[x]).unwrap();
    comp.set_binding_capacity(2);
    for len in [1, 2, 1, 3, 1, 2] {
        comp.call(&[&batch(b, c, len, 0.0)]).unwrap();
    }
    // 1, 2 compile; 1 hits; 3 evicts 2; 1 hits; 2 compiles again, evicting 3.
    assert_eq!(comp.compilations(), 4);
    let held: Vec<usize> = comp.bindings().iter().map(|bd| bd[0].1).collect();
    assert_eq!(held, vec![2, 1]);
}

#[test]
fn call_into_takes_output_arrays_made_for_the_binding() {
    let (g, b, c, [x, y, ..]) = graph();
    let t = Transformer::new(g, Backend::Jit).unwrap();
    let comp = t.computation(&[y], &[x]).unwrap();
    let err = comp.output_arrays().unwrap_err();
    assert!(matches!(err, Error::LengthsAtCall { .. }), "{err}");
    assert!(err.to_string().contains("`B`"), "{err}");
    let input = batch(b, c, 4, 0.5);
    let mut outs = comp.output_arrays_for(&[&input]).unwrap();
    comp.call_into(&[&input], &mut outs).unwrap();
    assert_eq!(outs[0], comp.call(&[&input]).unwrap()[0]);
    // Arrays of another binding are refused, naming the output and the axis.
    let other = batch(b, c, 6, 0.5);
    let err = comp.call_into(&[&other], &mut outs).unwrap_err();
    assert!(err.to_string().contains('B'), "{err}");
}

#[test]
fn inputs_that_disagree_on_a_length_are_an_error_naming_both() {
    let mut g = Graph::new();
    let b = g.axis_unbound("B").unwrap();
    let c = g.axis("C", 2).unwrap();
    let x = g.placeholder("x", &[b, c], DType::F32).unwrap();
    let z = g.placeholder("z", &[b], DType::F32).unwrap();
    let y = g.binary(BinaryOp::Add, x, z).unwrap();
    let t = Transformer::new(g, Backend::Jit).unwrap();
    let comp = t.computation(&[y], &[x, z]).unwrap();
    let xs = HostArray::from_vec(Axes::new([b, c]).unwrap(), vec![3, 2], vec![0f32; 6]).unwrap();
    let zs = HostArray::from_vec(Axes::new([b]).unwrap(), vec![4], vec![0f32; 4]).unwrap();
    let err = comp.call(&[&xs, &zs]).unwrap_err();
    assert!(matches!(err, Error::ConflictingLengths { .. }), "{err}");
    for part in ["`B`", "`x`", "`z`", "3", "4"] {
        assert!(err.to_string().contains(part), "{part} not in: {err}");
    }
    // Too few inputs is the usual count error, not a length error.
    let err = comp.call(&[&xs]).unwrap_err();
    assert!(matches!(err, Error::InputCount { .. }), "{err}");
}

#[test]
fn state_over_an_unbound_axis_is_refused_when_the_transformer_is_made() {
    let mut g = Graph::new();
    let h = g.axis_unbound("height").unwrap();
    let v = g
        .variable("v", &[h], DType::F32, TensorInit::Fill(Scalar::Float(0.0)))
        .unwrap();
    g.mark_output(v).unwrap();
    let err = Transformer::new(g, Backend::Jit).unwrap_err();
    assert!(matches!(err, Error::UnboundState { .. }), "{err}");
    assert!(
        err.to_string().contains("`v`") && err.to_string().contains("`height`"),
        "{err}"
    );
}

/// A computation that evaluates no node over an axis bound at call time compiles once, when
/// made, and runs, though another computation of the same transformer binds that axis at each
/// call (a Python transformer holds both; before, every computation of it failed on the other's
/// unbound axis).
#[test]
fn another_computations_unbound_axis_leaves_a_bound_one_alone() {
    let (mut g, b, c, [x, y, _, count]) = graph();
    let z = g.placeholder("z", &[c], DType::F64).unwrap();
    let doubled = g.binary(BinaryOp::Add, z, count).unwrap();
    for backend in [Backend::Jit, Backend::JitUnfused, Backend::Interpreter] {
        let t = Transformer::new(g.clone(), backend).unwrap();
        let bound = t.computation(&[doubled], &[z]).unwrap();
        let per_batch = t.computation(&[y], &[x]).unwrap();
        assert_eq!(bound.compilations(), 1, "{backend:?}: compiled when made");
        assert!(bound.bindings().is_empty(), "{backend:?}");
        let zs = HostArray::from_vec(Axes::new([c]).unwrap(), vec![5], vec![1.0f64; 5]).unwrap();
        per_batch.call(&[&batch(b, c, 4, 0.5)]).unwrap();
        let out = bound.call(&[&zs]).unwrap();
        assert_eq!(out[0].to_vec::<f64>().unwrap(), vec![1.0; 5], "{backend:?}");
        assert_eq!(
            bound.compilations(),
            1,
            "{backend:?}: no binding to compile for"
        );
    }
}
