//! The computation API (docs/design.md): transformers, computations, inputs in any axis order,
//! outputs in their node's axis order, and variables and persistent tensors that keep their
//! values across calls and are shared by every computation of a transformer.

mod common;
use common::*;
use weft::prelude::*;

#[test]
fn inputs_in_any_axis_order_outputs_in_node_order() {
    let g = GraphBuilder::new();
    let h = g.axis("H", 2).unwrap();
    let w = g.axis("W", 3).unwrap();
    let x = g.placeholder("x", &[h, w], DType::F32).unwrap();
    let y = g.placeholder("y", &[w], DType::F32).unwrap();
    let z = (y - x).unwrap();
    assert_eq!(z.axes(), Axes::new([h, w]).unwrap());
    let (x, y, z) = (x.id(), y.id(), z.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let c = t.computation(&[z, x], &[x, y]).unwrap();
    let ys = arr(&[w], &[3], vec![10f32, 20., 30.]);
    let straight = arr(&[h, w], &[2, 3], vec![1f32, 2., 3., 4., 5., 6.]);
    // The same tensor given as (W, H): transposed on the way in.
    let permuted = arr(&[w, h], &[3, 2], vec![1f32, 4., 2., 5., 3., 6.]);
    for xs in [straight, permuted] {
        let out = c.call(&[xs, ys.clone()]).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].axes(), &Axes::new([h, w]).unwrap());
        assert_eq!(f32s(&out[0]), vec![9., 18., 27., 6., 15., 24.]);
        // A placeholder asked for as an output comes back in its own axes order.
        assert_eq!(out[1].axes(), &Axes::new([h, w]).unwrap());
        assert_eq!(f32s(&out[1]), vec![1., 2., 3., 4., 5., 6.]);
    }
    assert_eq!(c.outputs(), &[z, x]);
    assert_eq!(c.placeholders(), &[x, y]);
}

/// A counter: variable `v` (over N=2) and `assign(v, v + step)`.
fn counter() -> (Transformer, NodeId, NodeId, NodeId, Axis) {
    let g = GraphBuilder::new();
    let n = g.axis("N", 2).unwrap();
    let v = g
        .variable(
            "v",
            &[n],
            DType::I64,
            TensorInit::data(ArrayData::I64(vec![0, 100])),
        )
        .unwrap();
    let step = g.placeholder("step", &[n], DType::I64).unwrap();
    let next = (v + step).unwrap();
    let upd = v.assign(next).unwrap();
    let (v, step, upd) = (v.id(), step.id(), upd.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    (t, v, step, upd, n)
}

#[test]
fn variables_persist_across_calls_and_reads_see_the_old_value() {
    let (t, v, step, upd, n) = counter();
    let train = t.computation(&[v, upd], &[step]).unwrap();
    let ones = arr(&[n], &[2], vec![1i64, 2]);
    for k in 0..3i64 {
        let out = train.call(std::slice::from_ref(&ones)).unwrap();
        // Within a call, `v` reads the value from before the call; assign evaluates to the new.
        assert_eq!(i64s(&out[0]), vec![k, 100 + 2 * k]);
        assert_eq!(i64s(&out[1]), vec![k + 1, 100 + 2 * (k + 1)]);
    }
    assert_eq!(i64s(&t.value_of(v).unwrap()), vec![3, 106]);
}

#[test]
fn state_is_shared_between_computations_and_only_assigns_asked_for_run() {
    let (t, v, step, upd, n) = counter();
    let train = t.computation(&[upd], &[step]).unwrap();
    // An evaluation computation that reads v but does not ask for the assign.
    let read = t.computation(&[v], &[]).unwrap();
    assert_eq!(i64s(&read.call(NO_INPUTS).unwrap()[0]), vec![0, 100]);
    train.call(&[arr(&[n], &[2], vec![5i64, 5])]).unwrap();
    assert_eq!(i64s(&read.call(NO_INPUTS).unwrap()[0]), vec![5, 105]);
    assert_eq!(i64s(&read.call(NO_INPUTS).unwrap()[0]), vec![5, 105]);
    // set_value is seen by every computation.
    t.set_value(v, &arr(&[n], &[2], vec![-1i64, -2])).unwrap();
    assert_eq!(i64s(&read.call(NO_INPUTS).unwrap()[0]), vec![-1, -2]);
    train.call(&[arr(&[n], &[2], vec![1i64, 1])]).unwrap();
    assert_eq!(i64s(&t.value_of(v).unwrap()), vec![0, -1]);
}

#[test]
fn a_failed_call_changes_no_state() {
    let (t, v, step, upd, n) = counter();
    let train = t.computation(&[upd], &[step]).unwrap();
    let bad = arr(&[n], &[2], vec![1.0f64, 1.0]);
    assert!(train.call(&[bad]).is_err());
    assert_eq!(i64s(&t.value_of(v).unwrap()), vec![0, 100]);
}

#[test]
fn persistent_tensors_start_at_zero_and_accept_values_in_any_order() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let p = g
        .persistent_tensor("velocity", &[a, b], DType::F64, None)
        .unwrap();
    let x = g.placeholder("x", &[b, a], DType::F64).unwrap();
    // velocity = 0.5·velocity + x; the value is (A, B) and x is (B, A).
    let half = (p * 0.5).unwrap();
    let upd = p.assign((half + x).unwrap()).unwrap();
    let (p, x, upd) = (p.id(), x.id(), upd.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    assert_eq!(f64s(&t.value_of(p).unwrap()), vec![0.0; 6]);
    let c = t.computation(&[upd], &[x]).unwrap();
    let xs = arr(&[b, a], &[3, 2], vec![1.0f64, 4., 2., 5., 3., 6.]);
    c.call(std::slice::from_ref(&xs)).unwrap();
    let out = c.call(&[xs]).unwrap();
    // After two calls: 0.5·x + x = 1.5·x, in (A, B) order.
    assert_eq!(out[0].axes(), &Axes::new([a, b]).unwrap());
    assert_eq!(f64s(&out[0]), vec![1.5, 3.0, 4.5, 6.0, 7.5, 9.0]);
    let held = t.value_of(p).unwrap();
    assert_eq!(held.axes(), &Axes::new([a, b]).unwrap());
    assert_eq!(f64s(&held), f64s(&out[0]));
    // set_value accepts a permuted array and stores it in the tensor's order.
    t.set_value(p, &arr(&[b, a], &[3, 2], vec![1.0f64, 4., 2., 5., 3., 6.]))
        .unwrap();
    assert_eq!(f64s(&t.value_of(p).unwrap()), vec![1., 2., 3., 4., 5., 6.]);
}

#[test]
fn the_later_of_two_assigns_to_one_target_wins() {
    let g = GraphBuilder::new();
    let n = g.axis("N", 1).unwrap();
    let v = g
        .variable("v", &[n], DType::I32, TensorInit::Fill(Scalar::Int(0)))
        .unwrap();
    let one = g.filled(&[n], DType::I32, Scalar::Int(1)).unwrap();
    let two = g.filled(&[n], DType::I32, Scalar::Int(2)).unwrap();
    let first = v.assign(one).unwrap().id();
    let second = v.assign(two).unwrap().id();
    let v = v.id();
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    t.computation(&[second, first], &[])
        .unwrap()
        .call(NO_INPUTS)
        .unwrap();
    assert_eq!(i32s(&t.value_of(v).unwrap()), vec![2]);
}

#[test]
fn a_gradient_step_updates_a_weight() {
    // w ← w − lr·(w − target): halves the distance to target each call with lr = 0.5.
    let g = GraphBuilder::new();
    let n = g.axis("N", 3).unwrap();
    let w = g
        .variable(
            "w",
            &[n],
            DType::F32,
            TensorInit::data(ArrayData::F32(vec![0.0, 4.0, -8.0])),
        )
        .unwrap();
    let target = g.placeholder("target", &[n], DType::F32).unwrap();
    let grad = (w - target).unwrap();
    let loss = grad.dot(grad).unwrap();
    let upd = w.assign((w - (grad * 0.5).unwrap()).unwrap()).unwrap();
    let (w, target, loss, upd) = (w.id(), target.id(), loss.id(), upd.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let step = t.computation(&[loss, upd], &[target]).unwrap();
    let tv = arr(&[n], &[3], vec![2.0f32, 2.0, 2.0]);
    let out = step.call(std::slice::from_ref(&tv)).unwrap();
    assert_eq!(f32s(&out[0]), vec![4.0 + 4.0 + 100.0]);
    assert_eq!(f32s(&out[1]), vec![1.0, 3.0, -3.0]);
    let out = step.call(&[tv]).unwrap();
    assert_eq!(f32s(&out[0]), vec![1.0 + 1.0 + 25.0]);
    assert_eq!(f32s(&t.value_of(w).unwrap()), vec![1.5, 2.5, -0.5]);
}

#[test]
fn lengths_bound_late_are_used() {
    let mut g = Graph::new();
    let h = g.axis_unbound("H").unwrap();
    let x = g.placeholder("x", &[h], DType::I32).unwrap();
    let s = g.sum(x, &[h]).unwrap();
    g.bind(h, 4).unwrap();
    let t = Transformer::new(g, Backend::Interpreter).unwrap();
    let c = t.computation(&[s], &[x]).unwrap();
    let out = c.call(&[arr(&[h], &[4], vec![1i32, 2, 3, 4])]).unwrap();
    assert_eq!(i32s(&out[0]), vec![10]);
}

#[test]
fn unused_placeholders_are_allowed_and_still_checked() {
    let g = GraphBuilder::new();
    let n = g.axis("N", 2).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let unused = g.placeholder("unused", &[n], DType::F32).unwrap();
    let y = (x * 2.0).unwrap();
    let (x, unused, y) = (x.id(), unused.id(), y.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let c = t.computation(&[y, y], &[x, unused]).unwrap();
    let xs = arr(&[n], &[2], vec![1f32, 2.]);
    let out = c.call(&[xs.clone(), xs.clone()]).unwrap();
    assert_eq!(f32s(&out[0]), vec![2., 4.]);
    assert_eq!(f32s(&out[1]), vec![2., 4.]);
    let wrong = arr(&[n], &[2], vec![1i32, 2]);
    let err = c.call(&[xs, wrong]).unwrap_err();
    assert!(err.to_string().contains("`unused`"), "{err}");
}

#[test]
fn transformers_and_computations_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Transformer>();
    send_sync::<Computation>();
    send_sync::<weft::Error>();
    let (t, v, step, upd, n) = counter();
    let train = t.computation(&[upd], &[step]).unwrap();
    let ones = arr(&[n], &[2], vec![1i64, 1]);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..25 {
                    train.call(std::slice::from_ref(&ones)).unwrap();
                }
            });
        }
    });
    // Assigning calls to one variable serialise with each other: no increment is lost.
    assert_eq!(i64s(&t.value_of(v).unwrap()), vec![100, 200]);
}

#[test]
fn call_into_writes_caller_arrays_and_names_a_wrong_output() {
    for backend in [Backend::Interpreter, Backend::Jit, Backend::JitUnfused] {
        let g = GraphBuilder::new();
        let h = g.axis("H", 2).unwrap();
        let w = g.axis("W", 3).unwrap();
        let x = g.placeholder("x", &[h, w], DType::F32).unwrap();
        let y = g.placeholder("y", &[w], DType::F32).unwrap();
        let z = (x + y).unwrap().named("z").unwrap();
        let (x, y, z) = (x.id(), y.id(), z.id());
        let t = Transformer::new(g.finish(), backend).unwrap();
        let c = t.computation(&[z], &[x, y]).unwrap();
        let xs = HostArray::from_vec(
            Axes::new([h, w]).unwrap(),
            vec![2, 3],
            vec![0f32, 1., 2., 3., 4., 5.],
        )
        .unwrap();
        let ys =
            HostArray::from_vec(Axes::new([w]).unwrap(), vec![3], vec![10f32, 20., 30.]).unwrap();
        let inputs = [xs, ys];
        let mut out = c.output_arrays().unwrap();
        c.call_into(&inputs, &mut out).unwrap();
        assert_eq!(out, c.call(&inputs).unwrap(), "{backend:?}");
        assert_eq!(
            out[0].to_vec::<f32>().unwrap(),
            vec![10., 21., 32., 13., 24., 35.]
        );

        let err = c.call_into(&inputs, &mut []).unwrap_err();
        assert!(
            matches!(
                err,
                Error::OutputCount {
                    expected: 1,
                    got: 0,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("(z)"), "{err}");
        // Axes in another order: the output's own order is required.
        let mut permuted =
            [HostArray::from_vec(Axes::new([w, h]).unwrap(), vec![3, 2], vec![0f32; 6]).unwrap()];
        let err = c.call_into(&inputs, &mut permuted).unwrap_err();
        assert!(
            matches!(&err, Error::OutputAxes { output, .. } if output == "z"),
            "{err}"
        );
        let mut short =
            [HostArray::from_vec(Axes::new([h, w]).unwrap(), vec![2, 2], vec![0f32; 4]).unwrap()];
        let err = c.call_into(&inputs, &mut short).unwrap_err();
        assert!(
            matches!(&err, Error::OutputLength { output, expected: 3, got: 2, .. } if output == "z"),
            "{err}"
        );
        let mut ints =
            [HostArray::from_vec(Axes::new([h, w]).unwrap(), vec![2, 3], vec![0i32; 6]).unwrap()];
        let err = c.call_into(&inputs, &mut ints).unwrap_err();
        assert!(
            matches!(&err, Error::OutputDType { output, expected: DType::F32, got: DType::I32 } if output == "z"),
            "{err}"
        );
    }
}
