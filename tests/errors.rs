//! Every error case of building, compiling and calling: each is a typed error (never a panic)
//! whose message names the op, axis or placeholder at fault.

mod common;
use common::*;
use weft::prelude::*;
use weft::{GraphError, ReduceOp, RunError};

/// Asserts `msg` contains every one of `parts`.
fn names(msg: impl std::fmt::Display, parts: &[&str]) {
    let msg = msg.to_string();
    for p in parts {
        assert!(msg.contains(p), "`{msg}` does not mention `{p}`");
    }
}

struct Fixture {
    g: Graph,
    a: Axis,
    b: Axis,
    x: NodeId,
}

/// A = 2, B = 3 and a named f32 placeholder x(A, B).
fn fixture() -> Fixture {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
    Fixture { g, a, b, x }
}

#[test]
fn duplicate_axis() {
    let mut f = fixture();
    let err =
        f.g.placeholder("y", &[f.a, f.b, f.a], DType::F32)
            .unwrap_err();
    assert!(matches!(err, GraphError::DuplicateAxis { .. }));
    names(&err, &["placeholder y", "`A`", "(A, B, A)"]);
    let err = f.g.broadcast(f.x, &[f.b, f.b]).unwrap_err();
    assert!(matches!(err, GraphError::DuplicateAxis { .. }));
    names(&err, &["broadcast(x)", "`B`"]);
    // `Axes` alone knows no graph, yet its errors and `{:?}` name the axes (issue 47).
    let err = Axes::new([f.a, f.b.dual(), f.a]).unwrap_err();
    names(&err, &["axis `A` occurs more than once"]);
    let ab = Axes::new([f.a, f.b.dual()]).unwrap();
    assert_eq!(format!("{ab:?}"), "Axes([A, B*])");
}

#[test]
fn dtype_mismatch() {
    let mut f = fixture();
    let y = f.g.placeholder("y", &[f.b], DType::F64).unwrap();
    let err = f.g.add(f.x, y).unwrap_err();
    assert!(matches!(
        err,
        GraphError::DTypeMismatch {
            left: DType::F32,
            right: DType::F64,
            ..
        }
    ));
    names(&err, &["add(x, y)", "f32", "f64"]);
    let err = f.g.dot(f.x, y).unwrap_err();
    names(&err, &["dot(x, y)"]);
    let c = f.g.placeholder("c", &[f.a], DType::Bool).unwrap();
    let err = f.g.select(c, f.x, y).unwrap_err();
    assert!(matches!(err, GraphError::DTypeMismatch { .. }));
    names(&err, &["select"]);
}

#[test]
fn unsupported_dtype() {
    let mut f = fixture();
    let i = f.g.placeholder("i", &[f.a], DType::I32).unwrap();
    let bl = f.g.placeholder("bl", &[f.a], DType::Bool).unwrap();
    let cases = [
        (f.g.exp(i).unwrap_err(), "exp(i)"),
        (f.g.reciprocal(i).unwrap_err(), "reciprocal(i)"),
        (f.g.negative(bl).unwrap_err(), "negative(bl)"),
        (f.g.add(bl, bl).unwrap_err(), "add(bl, bl)"),
        (f.g.sum(bl, &[f.a]).unwrap_err(), "sum(bl)"),
        (f.g.mean(i, &[f.a]).unwrap_err(), "mean(i)"),
        (f.g.dot(bl, bl).unwrap_err(), "dot(bl, bl)"),
        (f.g.select(i, i, i).unwrap_err(), "select(i, i, i)"),
    ];
    for (err, op) in cases {
        assert!(matches!(err, GraphError::UnsupportedDType { .. }), "{err}");
        names(&err, &[op]);
    }
}

#[test]
fn broadcast_to_axes_that_are_not_a_superset() {
    let mut f = fixture();
    let c = f.g.axis("C", 4).unwrap();
    let err = f.g.broadcast(f.x, &[f.a, c]).unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }));
    names(&err, &["broadcast(x)", "missing (B)"]);
}

#[test]
fn axes_with_order_that_is_not_a_permutation() {
    let mut f = fixture();
    let c = f.g.axis("C", 4).unwrap();
    for axes in [vec![f.a], vec![f.b, c], vec![f.b, f.a, c]] {
        let err = f.g.axes_with_order(f.x, &axes).unwrap_err();
        assert!(matches!(err, GraphError::Axes { .. }));
        names(&err, &["axes_with_order(x)", "not a reordering", "(A, B)"]);
    }
}

#[test]
fn cast_axes_with_other_lengths_or_rank() {
    let mut f = fixture();
    let c = f.g.axis("C", 4).unwrap();
    let d = f.g.axis("D", 3).unwrap();
    let err = f.g.cast_axes(f.x, &[c, d]).unwrap_err();
    assert!(matches!(
        err,
        GraphError::LengthMismatch {
            left_len: 2,
            right_len: 4,
            ..
        }
    ));
    names(&err, &["cast_axes(x)", "`A`", "`C`"]);
    let err = f.g.cast_axes(f.x, &[d]).unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }));
    names(&err, &["cast_axes(x)"]);
    // Bound late: the mismatch is caught when the transformer verifies the graph.
    let e = f.g.axis_unbound("E").unwrap();
    let cast = f.g.cast_axes(f.x, &[e, d]).unwrap();
    f.g.bind(e, 5).unwrap();
    let _ = cast;
    let err = Transformer::new(f.g, Backend::Interpreter).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::Graph(GraphError::LengthMismatch { .. })
    ));
    names(&err, &["cast_axes", "`E`"]);
}

#[test]
fn reduction_axis_missing_and_bad_out_axes() {
    let mut f = fixture();
    let c = f.g.axis("C", 4).unwrap();
    let err = f.g.sum(f.x, &[c]).unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }));
    names(&err, &["sum(x)", "`C`", "(A, B)"]);
    let err =
        f.g.reduce(ReduceOp::Max, f.x, &[f.a], Some(&[c]))
            .unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }));
    names(&err, &["max(x)", "out_axes (C)", "(B)"]);
    let err =
        f.g.reduce(ReduceOp::Max, f.x, &[f.a], Some(&[f.a, f.b]))
            .unwrap_err();
    names(&err, &["out_axes (A, B)"]);
    let err =
        f.g.reduce(ReduceOp::Sum, f.x, &[f.a, f.a], None)
            .unwrap_err();
    assert!(matches!(err, GraphError::DuplicateAxis { .. }));
}

#[test]
fn slices_out_of_range_empty_or_with_step_zero() {
    let mut f = fixture();
    let r = |start, stop, step| {
        AxisSlice::Range(SliceRange {
            start: Some(start),
            stop: Some(stop),
            step,
        })
    };
    let cases = [
        (r(0, 4, 1), "out of range"),
        (r(-4, 2, 1), "out of range"),
        (r(0, 2, 0), "step is 0"),
        (AxisSlice::Index(3), "index 3 is out of range"),
        (AxisSlice::Index(-4), "out of range"),
    ];
    for (s, what) in cases {
        let err = f.g.slice(f.x, &[(f.b, s)]).unwrap_err();
        assert!(matches!(err, GraphError::Range { .. }), "{err}");
        names(&err, &["slice(x)", "`B`", what]);
    }
    // A range that takes nothing is an empty slice, as in NumPy (docs/axes.md).
    for s in [r(2, 2, 1), r(1, 2, -1)] {
        let e = f.g.slice(f.x, &[(f.b, s)]).unwrap();
        assert_eq!(f.g.shape_of(&f.g.node(e).axes).unwrap(), vec![2, 0]);
    }
    let c = f.g.axis("C", 4).unwrap();
    let err = f.g.slice(f.x, &[(c, AxisSlice::Index(0))]).unwrap_err();
    names(&err, &["slice(x)", "`C`"]);
    // Bound late: caught by the transformer.
    let e = f.g.axis_unbound("E").unwrap();
    let y = f.g.placeholder("y", &[e], DType::F32).unwrap();
    f.g.slice(y, &[(e, r(0, 3, 1))]).unwrap();
    f.g.bind(e, 2).unwrap();
    let err = Transformer::new(f.g, Backend::Interpreter).unwrap_err();
    assert!(matches!(err, weft::Error::Graph(GraphError::Range { .. })));
    names(&err, &["slice", "`E`", "out of range"]);
}

#[test]
fn unflatten_of_an_axis_that_is_not_flattened() {
    let mut f = fixture();
    let err = f.g.unflatten(f.x, f.a).unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }));
    names(&err, &["unflatten(x)", "`A` is not a flattened axis"]);
    let err = f.g.flatten(f.x, &[f.a]).unwrap_err();
    names(&err, &["flatten(x)", "at least two"]);
}

#[test]
fn assign_to_something_that_holds_no_state() {
    let mut f = fixture();
    let y = f.g.placeholder("y", &[f.a, f.b], DType::F32).unwrap();
    let err = f.g.assign(f.x, y).unwrap_err();
    assert!(matches!(err, GraphError::AssignTarget { .. }));
    names(&err, &["assign", "`x`", "placeholder"]);
    let k =
        f.g.constant(
            Some("k"),
            &[f.a, f.b],
            DType::F32,
            TensorInit::Fill(Scalar::Float(1.0)),
        )
        .unwrap();
    let err = f.g.assign(k, y).unwrap_err();
    names(&err, &["`k`", "constant"]);
    let v =
        f.g.variable(
            "v",
            &[f.a],
            DType::F32,
            TensorInit::Fill(Scalar::Float(0.0)),
        )
        .unwrap();
    let err = f.g.assign(v, y).unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }));
    names(&err, &["assign(v, y)", "(A, B)", "(A)"]);
}

#[test]
fn unbound_axis_needed_by_a_computation_names_it() {
    // The computation broadcasts over `height`, which no placeholder it takes has: no call can
    // bind it, so the first call's compilation names it. (A computation that needs no node
    // over `height` runs: another computation's axis bound at call time is not its concern.)
    let mut g = Graph::new();
    let h = g.axis_unbound("height").unwrap();
    let w = g.axis("width", 2).unwrap();
    let x = g.placeholder("x", &[h], DType::F32).unwrap();
    let y = g.placeholder("y", &[w], DType::F32).unwrap();
    g.exp(x).unwrap();
    let e = g.exp(y).unwrap();
    let wide = g.broadcast(e, &[h, w]).unwrap();
    let t = Transformer::new(g, Backend::Interpreter).unwrap();
    let input = HostArray::from_vec(Axes::new([w]).unwrap(), vec![2], vec![0f32; 2]).unwrap();
    let alone = t.computation(&[e], &[y]).unwrap();
    assert_eq!(
        alone.call(&[&input]).unwrap()[0].to_vec::<f32>().unwrap(),
        vec![1.0; 2]
    );
    let c = t.computation(&[wide], &[y]).unwrap();
    let err = c.call(&[&input]).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::Graph(GraphError::UnboundAxis { ref axis }) if axis == "height"
    ));
    names(&err, &["`height`", "bind"]);
}

/// A transformer and a computation of x + y given x(A, B) and y(B); C has B's length.
fn callable() -> (Transformer, Computation, Axis, Axis, Axis) {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let c = g.axis("C", 3).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
    let y = g.placeholder("y", &[b], DType::F32).unwrap();
    let z = (x + y).unwrap().id();
    let (x, y) = (x.id(), y.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let comp = t.computation(&[z], &[x, y]).unwrap();
    (t, comp, a, b, c)
}

#[test]
fn inputs_with_wrong_axes_lengths_dtype_or_count() {
    let (_t, c, a, b, other) = callable();
    let ys = arr(&[b], &[3], vec![0f32; 3]);
    // Wrong axes: too few, or another axis of the same length in B's place.
    let err = c
        .call(&[arr(&[b], &[3], vec![0f32; 3]), ys.clone()])
        .unwrap_err();
    assert!(matches!(err, weft::Error::InputAxes { ref tensor, .. } if tensor == "x"));
    names(&err, &["`x`", "(B)", "(A, B)"]);
    let err = c
        .call(&[arr(&[a, other], &[2, 3], vec![0f32; 6]), ys.clone()])
        .unwrap_err();
    assert!(matches!(err, weft::Error::InputAxes { .. }));
    names(&err, &["`x`", "(A, C)", "(A, B)"]);
    let err = c.call(&[
        arr(&[a, b], &[2, 3], vec![0f32; 6]),
        arr(&[other], &[3], vec![0f32; 3]),
    ]);
    names(err.unwrap_err(), &["`y`", "(C)", "(B)"]);
    // Wrong length along an axis, in either axis order.
    let err = c
        .call(&[arr(&[a, b], &[2, 4], vec![0f32; 8]), ys.clone()])
        .unwrap_err();
    assert!(matches!(
        err,
        weft::Error::InputLength { ref tensor, ref axis, expected: 3, got: 4 }
            if tensor == "x" && axis == "B"
    ));
    names(&err, &["`x`", "`B`", "3", "4"]);
    let err = c
        .call(&[arr(&[b, a], &[3, 1], vec![0f32; 3]), ys.clone()])
        .unwrap_err();
    assert!(matches!(err, weft::Error::InputLength { ref axis, .. } if axis == "A"));
    // Wrong dtype.
    let err = c
        .call(&[arr(&[a, b], &[2, 3], vec![0f64; 6]), ys.clone()])
        .unwrap_err();
    assert!(matches!(
        err,
        weft::Error::InputDType { ref tensor, expected: DType::F32, got: DType::F64 } if tensor == "x"
    ));
    names(&err, &["`x`", "f64", "f32"]);
    let err = c
        .call(&[
            arr(&[a, b], &[2, 3], vec![0f32; 6]),
            arr(&[b], &[3], vec![0i32; 3]),
        ])
        .unwrap_err();
    names(&err, &["`y`", "i32"]);
    // Missing and extra inputs.
    let xs = arr(&[a, b], &[2, 3], vec![0f32; 6]);
    let err = c.call(std::slice::from_ref(&xs)).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::InputCount {
            expected: 2,
            got: 1,
            ..
        }
    ));
    names(&err, &["in order: x, y) but 1 was given"]);
    let err = c.call(&[xs.clone(), ys.clone(), ys.clone()]).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::InputCount {
            expected: 2,
            got: 3,
            ..
        }
    ));
    assert!(c.call(&[xs, ys]).is_ok());
}

#[test]
fn computations_with_bad_placeholder_lists() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let y = g.placeholder("y", &[a], DType::F32).unwrap();
    let z = (x + y).unwrap().named("z").unwrap();
    let (x, y, z) = (x.id(), y.id(), z.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let err = t.computation(&[z], &[x]).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::Run(RunError::MissingPlaceholder { .. })
    ));
    names(&err, &["`z`", "`y`"]);
    let err = t.computation(&[z], &[x, y, x]).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::Run(RunError::DuplicatePlaceholder { .. })
    ));
    names(&err, &["`x`"]);
    let err = t.computation(&[z], &[x, y, z]).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::Run(RunError::NotAPlaceholder { .. })
    ));
    names(&err, &["`z`", "add"]);
    let foreign = NodeId::from_u32(1000);
    let err = t.computation(&[foreign], &[]).unwrap_err();
    assert!(matches!(err, weft::Error::Run(RunError::ForeignNode(_))));
}

#[test]
fn value_of_and_set_value_refuse_what_holds_no_state_or_does_not_fit() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let v = g
        .variable("v", &[a], DType::F32, TensorInit::Fill(Scalar::Float(1.0)))
        .unwrap();
    let (x, v) = (x.id(), v.id());
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let err = t.value_of(x).unwrap_err();
    assert!(matches!(err, weft::Error::NotStateful { .. }));
    names(&err, &["`x`", "placeholder"]);
    let err = t.set_value(x, &arr(&[a], &[2], vec![0f32; 2])).unwrap_err();
    assert!(matches!(err, weft::Error::NotStateful { .. }));
    let err = t.set_value(v, &arr(&[a], &[2], vec![0i64; 2])).unwrap_err();
    assert!(matches!(err, weft::Error::InputDType { ref tensor, .. } if tensor == "v"));
    let err = t.set_value(v, &arr(&[a], &[3], vec![0f32; 3])).unwrap_err();
    assert!(matches!(err, weft::Error::InputLength { .. }));
    let err = t.set_value(v, &HostArray::scalar(0f32)).unwrap_err();
    assert!(matches!(err, weft::Error::InputAxes { .. }));
    // Nothing changed.
    assert_eq!(f32s(&t.value_of(v).unwrap()), vec![1.0, 1.0]);
}

#[test]
fn ambiguous_dot_pairings_are_errors_naming_the_axes() {
    // T[H, H*]: the left H* could take the right H* (same axis) or H (its dual partner).
    let mut g = Graph::new();
    let h = g.axis("H", 3).unwrap();
    let t = g.placeholder("T", &[h, h.dual()], DType::F32).unwrap();
    let err = g.dot(t, t).unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }), "{err}");
    names(&err, &["dot(T, T)", "`H*`", "`H`", "ambiguous"]);
    // x[A, A*]·y[A]: A by identity and A* as its dual both claim the right A.
    let a = g.axis("A", 2).unwrap();
    let x = g.placeholder("x", &[a, a.dual()], DType::F32).unwrap();
    let y = g.placeholder("y", &[a], DType::F32).unwrap();
    let err = g.dot(x, y).unwrap_err();
    assert!(matches!(err, GraphError::Axes { .. }), "{err}");
    names(&err, &["dot(x, y)", "right axis `A`", "`A*`"]);
    // The same graph as text: the error carries file:line:col.
    let src = "axis H = 3\nplaceholder T: f32[H, H*]\nd = dot(T, T)\noutput d\n";
    let err = weft::ir::text::parse(src, "ambiguous.weft").unwrap_err();
    names(&err, &["ambiguous.weft:3:", "ambiguous"]);
    // An unambiguous pairing still contracts: the L2 example's dot(yᵀ, y), pairs A* with A.
    let tt = g.transpose(y).unwrap();
    assert!(g.dot(tt, y).is_ok());
}

/// Axis ids are indices into a graph's axis table, so `N` of one graph and `N` of another
/// parsed from the same text are the same index: an array labelled with the other graph's
/// axes is rejected, naming the tensor, the axis and both tables, instead of being read as
/// this graph's (issue 10). A clone shares its graph's table; a computation's output passes
/// to another computation of the same transformer as it is.
#[test]
fn an_array_labelled_with_another_graphs_axes_is_rejected() {
    let text = "axis N = 4\nplaceholder x: f32[N]\ny = negative(x)\noutput y\n";
    let parse = || weft::ir::text::parse(text, "neg.weft").unwrap();
    let (ga, gb) = (parse(), parse());
    assert_ne!(ga.axis_table_number(), gb.axis_table_number());
    let clone = ga.clone();
    assert_eq!(clone.axis_table_number(), ga.axis_table_number());
    let computation = |g: Graph| {
        let (out, ps) = (g.outputs().to_vec(), g.placeholders());
        let t = Transformer::new(g, Backend::Jit).unwrap();
        let c = t.computation(&out, &ps).unwrap();
        (t, c)
    };
    let (_ta, ca) = computation(ga);
    let (_tb, cb) = computation(gb);
    let (_tc, cc) = computation(clone);
    let xa = ca.output_arrays().unwrap().remove(0);
    let ya = ca.call(&[&xa]).unwrap();
    // The same graph, and a clone of it, take A's arrays: the output chains into the next call.
    let yy = ca.call(&ya).unwrap();
    assert_eq!(yy[0].to_vec::<f32>().unwrap(), vec![0.0; 4]);
    cc.call(&ya).unwrap();
    for err in [
        cb.call(&ya).unwrap_err(),
        cb.call_into(&[&xa], &mut ca.output_arrays().unwrap())
            .unwrap_err(),
    ] {
        assert!(matches!(err, weft::Error::ForeignAxis { .. }), "{err}");
        names(&err, &["`N`", "another graph", "table #"]);
    }
    // B's own input with A's arrays to write into: the output is named.
    let xb = cb.output_arrays().unwrap();
    let err = cb
        .call_into(&xb, &mut ca.output_arrays().unwrap())
        .unwrap_err();
    assert!(
        matches!(err, weft::Error::ForeignAxis { ref tensor, .. } if tensor == "y"),
        "{err}"
    );
    cb.call_into(&xb, &mut cb.output_arrays().unwrap()).unwrap();
    // Arrays made with `Axis::new` (no known table) are accepted by every graph.
    let plain = weft::ir::Axes::new([weft::ir::Axis::new(xa.axes()[0].id)]).unwrap();
    let x = HostArray::from_vec(plain, vec![4], vec![1.0f32; 4]).unwrap();
    assert_eq!(
        cb.call(&[&x]).unwrap()[0].to_vec::<f32>().unwrap(),
        vec![-1.0; 4]
    );
}

#[test]
fn training_helper_arguments_and_data_set_requests_that_do_not_fit() {
    // The optimizers' misfits beyond axes and dtypes (tests/nn.rs has every case).
    let Fixture { mut g, a, .. } = fixture();
    let w = g
        .variable("w", &[a], DType::F32, TensorInit::Fill(Scalar::Float(0.0)))
        .unwrap();
    let grad = g.placeholder("grad", &[a], DType::F32).unwrap();
    let err = nn::sgd(&mut g, &[(w, grad), (w, grad)], 0.1).unwrap_err();
    assert!(matches!(err, GraphError::Argument { .. }), "{err}");
    names(&err, &["sgd(w, grad)", "`w`", "listed twice"]);
    let err = nn::adam(
        &mut g,
        &[(w, grad)],
        &nn::Adam {
            lr: f64::INFINITY,
            ..Default::default()
        },
    )
    .unwrap_err();
    names(&err, &["adam", "lr = inf", "finite and positive"]);
    // The data set: a split fraction out of range, an index past the end.
    let d = weft::datasets::digits().unwrap();
    let err = d.split(2.0, 0).unwrap_err();
    assert!(
        matches!(err, weft::Error::Dataset { name: "digits", .. }),
        "{err}"
    );
    names(&err, &["digits", "test fraction 2"]);
    names(
        d.subset(&[1797]).unwrap_err(),
        &["index 1797", "1797 images"],
    );
}

#[test]
fn a_node_of_another_graph_is_refused_not_read_as_this_graphs() {
    let build = |op: fn(Tensor<'_>) -> Result<Tensor<'_>, GraphError>| {
        let g = GraphBuilder::new();
        let a = g.axis("A", 2).unwrap();
        let x = g.placeholder("x", &[a], DType::F32).unwrap();
        let y = op(x).unwrap();
        (x.id(), y.id(), g.finish())
    };
    let (x1, _, g1) = build(|x| x.exp());
    let (_, y2, g2) = build(|x| x.square());
    let t = Transformer::new(g1.clone(), Backend::Interpreter).unwrap();
    // y2 has the same index as g1's exp node: refused, not computed as exp(x).
    let err = t.computation(&[y2], &[x1]).unwrap_err();
    assert!(matches!(err, weft::Error::Run(RunError::ForeignNode(_))));
    names(&err, &["of another graph"]);
    // A clone keeps its graph's ids; builders refuse another graph's node.
    let mut g = g1.clone();
    assert!(g.get(x1).is_some() && g2.get(x1).is_none());
    assert!(matches!(
        g.unary(weft::UnaryOp::Exp, y2),
        Err(GraphError::Foreign(_))
    ));
}

#[test]
fn building_while_the_graph_is_read_is_an_error_not_a_panic() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let peek = g.graph();
    assert!(matches!(x.exp(), Err(GraphError::GraphBorrowed)));
    assert!(matches!(g.axis("B", 3), Err(GraphError::GraphBorrowed)));
    drop(peek);
    // The sequence: a guard alive for the whole statement.
    let c = g.axis("C", 3).unwrap();
    let y = g.placeholder("y", &[c], DType::F32).unwrap();
    let r = g.graph().axes_with_lengths(&x.axes()).len() + (y + 1.0).map(|_| 0).unwrap_or(7);
    assert!(r >= 7, "the build inside the statement was refused");
    assert!(x.exp().is_ok());
}
