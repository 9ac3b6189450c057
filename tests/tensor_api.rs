//! One Rust API without traps (issue 47): the three host programs a new user wrote from the
//! README and rustdoc — a softmax over a non-innermost axis called 100 times on borrowed data,
//! an MLP at call-time batch sizes, a softmax regression trained on the digits — written with
//! the `GraphBuilder`/`Tensor` API and `weft::` paths alone (no `weft_ir`); and the traps that
//! user met: axis names are unique per graph, so errors never contradict themselves.

use weft::nn::{Activation, Init};
use weft::prelude::*;

/// A softmax over R, the *first* axis of x[R, C], called 100 times on one borrowed slice.
#[test]
fn a_softmax_over_a_non_innermost_axis_called_100_times_on_borrowed_data() -> weft::Result<()> {
    let g = GraphBuilder::new();
    let (r, c) = (g.axis("R", 3)?, g.axis("C", 4)?);
    let x = g.placeholder("x", &[r, c], DType::F32)?;
    let e = (x - x.max(&[r])?)?.exp()?;
    let y = (e / e.sum(&[r])?)?.named("y")?;
    assert_eq!(y.axes().as_slice(), &[r, c]); // x's order: the max over R broadcasts back
    let (x, y) = (x.id(), y.id());
    let t = Transformer::new(g.finish(), Backend::Jit)?;
    let softmax = t.computation(&[y], &[x])?;
    let data: Vec<f32> = (0..12).map(|i| (i as f32 * 0.7).sin()).collect();
    let axes = Axes::new([r, c])?;
    let mut last = Vec::new();
    for _ in 0..100 {
        let view = HostView::new(&axes, &[3, 4], &data)?;
        last = softmax.call(&[view])?[0].to_vec::<f32>()?;
    }
    for col in 0..4 {
        let column: f32 = (0..3).map(|row| last[row * 4 + col]).sum();
        assert!((column - 1.0).abs() < 1e-6, "column {col} sums to {column}");
    }
    Ok(())
}

/// An MLP whose batch axis is bound by each call: three batch sizes through one computation.
#[test]
fn an_mlp_at_call_time_batch_sizes() -> weft::Result<()> {
    let g = GraphBuilder::new();
    let (b, i, h, o) = (
        g.axis_unbound("B")?,
        g.axis("I", 5)?,
        g.axis("H", 8)?,
        g.axis("O", 2)?,
    );
    let x = g.placeholder("x", &[b, i], DType::F64)?;
    let hidden = g.dense("hidden", x, i, h, Activation::Relu, Init::he(1))?;
    let out = g.dense(
        "out",
        hidden.output,
        h,
        o,
        Activation::Identity,
        Init::glorot(2),
    )?;
    assert_eq!(out.output.axes().as_slice(), &[b, o]);
    let (x, y) = (x.id(), out.output.id());
    let graph = g.finish();
    let jit = Transformer::new(graph.clone(), Backend::Jit)?;
    let interp = Transformer::new(graph, Backend::Interpreter)?;
    let (mlp, reference) = (
        jit.computation(&[y], &[x])?,
        interp.computation(&[y], &[x])?,
    );
    for batch in [1, 7, 64] {
        let data: Vec<f64> = (0..batch * 5).map(|k| (k as f64 * 0.31).cos()).collect();
        let xs = HostArray::from_vec(Axes::new([b, i])?, vec![batch, 5], data)?;
        let got = mlp.call(std::slice::from_ref(&xs))?[0].to_vec::<f64>()?;
        let want = reference.call(&[xs])?[0].to_vec::<f64>()?;
        assert_eq!(got.len(), batch * 2);
        for (a, w) in got.iter().zip(&want) {
            assert!((a - w).abs() <= 1e-12 * (1.0 + w.abs()), "{a} vs {w}");
        }
    }
    Ok(())
}

/// Softmax regression on the digits: loss, gradients and SGD steps all built with tensors.
#[test]
fn a_softmax_regression_trained_with_the_tensor_api() -> weft::Result<()> {
    let (train, test) = datasets::digits()?.split(0.2, 0)?;
    let g = GraphBuilder::new();
    let (b, p, c) = (g.axis_unbound("B")?, g.axis("P", 64)?, g.axis("C", 10)?);
    let x = g.placeholder("x", &[b, p], DType::F32)?;
    let labels = g.placeholder("labels", &[b], DType::I64)?;
    let model = g.dense("model", x, p, c, Activation::Identity, Init::glorot(0))?;
    let loss = model.output.softmax_cross_entropy(labels, c)?;
    let accuracy = model.output.accuracy(labels, c)?;
    let grads = loss.grad(&model.variables())?;
    let step = g.sgd(&[(model.weight, grads[0]), (model.bias, grads[1])], 0.5)?;
    let mut train_outputs = vec![loss.id()];
    train_outputs.extend(step.assigns.iter().map(|a| a.id()));
    let (x, labels, accuracy) = (x.id(), labels.id(), accuracy.id());
    let t = Transformer::new(g.finish(), Backend::Jit)?;
    let train_step = t.computation(&train_outputs, &[x, labels])?;
    let evaluate = t.computation(&[accuracy], &[x, labels])?;
    let inputs = [train.images_array(b, p)?, train.labels_array(b)?];
    let first = train_step.call(&inputs)?[0].to_vec::<f32>()?[0];
    let mut last = first;
    for _ in 0..100 {
        last = train_step.call(&inputs)?[0].to_vec::<f32>()?[0];
    }
    assert!(
        last < first * 0.5,
        "the loss fell from {first} to {last} only"
    );
    let test_set = [test.images_array(b, p)?, test.labels_array(b)?];
    let acc = evaluate.call(&test_set)?[0].to_vec::<f32>()?[0];
    assert!(acc > 0.85, "test accuracy {acc}");
    Ok(())
}

#[test]
fn axis_names_are_unique_per_graph_so_errors_never_contradict_themselves() {
    let g = GraphBuilder::new();
    let n = g.axis("N", 2).unwrap();
    let err = g.axis("N", 3).unwrap_err();
    assert!(
        matches!(err, GraphError::AxisNameTaken(ref s) if s == "N"),
        "{err}"
    );
    assert!(matches!(
        g.axis_unbound("N"),
        Err(GraphError::AxisNameTaken(_))
    ));
    assert!(g.axis("M", 3).is_ok());
    // The text format tells same-named axes apart by their index, and so do messages.
    let text = "axis N@0 = 2\naxis N@1 = 3\nplaceholder x: f32[N@0]\ny = sum(x, [N@1])\n";
    let err = weft::ir::text::parse(text, "dup.weft")
        .unwrap_err()
        .to_string();
    assert!(err.contains("N@1") && err.contains("(N@0)"), "{err}");
    let _ = n;
}

#[test]
fn the_two_levels_meet_both_ways() -> weft::Result<()> {
    // A Graph-level helper through the builder, and a builder over a Graph made elsewhere.
    let mut graph = Graph::new();
    let n = graph.axis("N", 3)?;
    let x = graph.placeholder("x", &[n], DType::F64)?;
    let g = GraphBuilder::from_graph(graph);
    let x = g.tensor(x)?;
    let iota = g.with(|graph| nn::iota(graph, n, DType::F64))?;
    let y = (x * iota)?.named("y")?.id();
    let same = g.with_graph(|graph| graph.find("y"))?;
    assert_eq!(same, Some(y));
    let graph = g.finish();
    assert_eq!(graph.node(y).axes.as_slice(), &[n]);
    Ok(())
}
