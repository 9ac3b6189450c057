//! simplify: before/after listings and the exactness rules of each peephole.

mod common;

use weft_compiler::passes::simplify::{simplify, SimplifyOptions};
use weft_ir::graph::GraphBuilder;
use weft_ir::{DType, Graph, NodeId, Op, Scalar, TensorInit};

/// The graph in the text format.
fn listing(g: &Graph) -> String {
    weft_ir::text::print(g)
}

fn before_after(g: &Graph, opts: &SimplifyOptions) -> (Graph, String) {
    let s = simplify(g, opts, None).unwrap();
    let text = format!(
        "-- before\n{}-- after ({:?})\n{}",
        listing(g),
        s.stats,
        listing(&s.graph)
    );
    (s.graph, text)
}

#[test]
fn peepholes_keep_axes_and_exactness() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 3).unwrap();
    let b = g.axis("B", 2).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let i = g.placeholder("i", &[a], DType::I32).unwrap();
    let ones = g.filled(&[a, b], DType::F32, Scalar::Float(1.0)).unwrap();
    // x·1 over (A, B): x broadcast to (A, B), the axes of the product.
    (x * ones)
        .unwrap()
        .named("x_times_ones")
        .unwrap()
        .output()
        .unwrap();
    // Floats: x + 0.0 stays (−0 + 0 = +0); x + (−0.0) and x − 0.0 go.
    let zero = g.scalar(0.0, DType::F32).unwrap();
    let neg_zero = g.scalar(-0.0, DType::F32).unwrap();
    (x + zero)
        .unwrap()
        .named("x_plus_zero")
        .unwrap()
        .output()
        .unwrap();
    (x + neg_zero)
        .unwrap()
        .named("x_plus_neg_zero")
        .unwrap()
        .output()
        .unwrap();
    (x - zero)
        .unwrap()
        .named("x_minus_zero")
        .unwrap()
        .output()
        .unwrap();
    // Floats: x·0 stays (NaN, inf, −0); integers: i·0 is 0.
    (x * zero)
        .unwrap()
        .named("x_times_zero")
        .unwrap()
        .output()
        .unwrap();
    let izero = g.scalar(0.0, DType::I32).unwrap();
    (i * izero)
        .unwrap()
        .named("i_times_zero")
        .unwrap()
        .output()
        .unwrap();
    let iz = g.scalar(0.0, DType::I32).unwrap();
    (i + iz)
        .unwrap()
        .named("i_plus_zero")
        .unwrap()
        .output()
        .unwrap();
    // −(−x) is x; log(exp x) only when inexact rewrites are allowed.
    x.negative()
        .unwrap()
        .negative()
        .unwrap()
        .named("negneg")
        .unwrap()
        .output()
        .unwrap();
    x.exp()
        .unwrap()
        .log()
        .unwrap()
        .named("logexp")
        .unwrap()
        .output()
        .unwrap();
    let graph = g.finish();
    let (out, text) = before_after(&graph, &SimplifyOptions::default());
    insta::assert_snapshot!(text);
    // Every output keeps its axes, order included, and dtype.
    let map = simplify(&graph, &SimplifyOptions::default(), None)
        .unwrap()
        .map;
    for o in graph.outputs() {
        let n = map.get(*o).unwrap();
        assert_eq!(graph.node(*o).axes, out.node(n).axes);
        assert_eq!(graph.node(*o).dtype, out.node(n).dtype);
    }
    let kept_logexp = out
        .outputs()
        .iter()
        .any(|o| matches!(out.node(*o).op, Op::Unary(weft_ir::UnaryOp::Log, _)));
    assert!(kept_logexp);
    let inexact = simplify(
        &graph,
        &SimplifyOptions {
            inexact: true,
            ..SimplifyOptions::default()
        },
        None,
    )
    .unwrap();
    assert!(!inexact
        .graph
        .nodes()
        .any(|(_, n)| matches!(n.op, Op::Unary(weft_ir::UnaryOp::Log, _))));
}

#[test]
fn common_subexpressions_merge_and_dead_code_goes() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 3).unwrap();
    let x = g.placeholder("x", &[a], DType::F64).unwrap();
    let y = g.placeholder("y", &[a], DType::F64).unwrap();
    let d1 = (x - y).unwrap();
    let d2 = (x - y).unwrap();
    let unused = (x * y).unwrap().exp().unwrap();
    let _ = unused;
    let two = g.scalar(2.0, DType::F64).unwrap();
    let two_again = g.scalar(2.0, DType::F64).unwrap();
    let s = ((d1 * two).unwrap() + (d2 * two_again).unwrap()).unwrap();
    s.named("s").unwrap().output().unwrap();
    let graph = g.finish();
    let (out, text) = before_after(&graph, &SimplifyOptions::default());
    insta::assert_snapshot!(text);
    let s = simplify(&graph, &SimplifyOptions::default(), None).unwrap();
    assert_eq!(s.stats.common, 3);
    assert_eq!(s.stats.dead, 2);
    // x − y once, (x − y)·2 once, the sum of it with itself.
    assert_eq!(out.len(), 6);
    assert_eq!(out.node(out.find("s").unwrap()).op.name(), "add");
}

#[test]
fn uniform_constants_fold_through_views() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 3).unwrap();
    let b = g.axis("B", 4).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
    let c = g.scalar(3.0, DType::F32).unwrap();
    let cb = c.broadcast(&[b, a]).unwrap().transpose().unwrap();
    let cbt = cb.cast_axes(&[a, b]).unwrap();
    (x * cbt).unwrap().named("y").unwrap().output().unwrap();
    let graph = g.finish();
    let (out, text) = before_after(&graph, &SimplifyOptions::default());
    insta::assert_snapshot!(text);
    assert!(!out.nodes().any(|(_, n)| n.op.is_view()));
}

#[test]
fn requested_outputs_assigns_and_state_survive() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let unused_input = g.placeholder("unused", &[a], DType::F32).unwrap();
    let _ = unused_input;
    let v = g
        .variable("v", &[a], DType::F32, TensorInit::Fill(Scalar::Float(0.0)))
        .unwrap();
    let t = (x + v).unwrap().named("t").unwrap();
    v.assign(t).unwrap();
    let r = x.exp().unwrap().named("requested").unwrap().id();
    let graph = g.finish();
    let s = simplify(
        &graph,
        &SimplifyOptions {
            keep: vec![r],
            ..SimplifyOptions::default()
        },
        None,
    )
    .unwrap();
    assert!(s.map.get(r).is_some());
    assert!(s.graph.find("unused").is_some());
    assert!(s
        .graph
        .nodes()
        .any(|(_, n)| matches!(n.op, Op::Assign { .. })));
    assert_eq!(s.stats.dead, 0);
}

#[test]
fn workloads_are_left_alone() {
    for g in [
        common::softmax(2, 3),
        common::layernorm(2, 3),
        common::mlp(3, 4),
    ] {
        let s = simplify(&g, &SimplifyOptions::default(), None).unwrap();
        assert_eq!(s.graph, g);
    }
}

#[path = "common/oracle.rs"]
mod oracle;

/// Simplify's exact mode changes no result: the interpreter gives the same bits before and after.
fn assert_same_results(g: &Graph) {
    let s = simplify(
        g,
        &SimplifyOptions::default(),
        Some(&weft_compiler::passes::simplify::interpreter_evaluator),
    )
    .unwrap();
    for seed in 0..3 {
        let ins = oracle::random_inputs(g, seed);
        let before = oracle::interpret(g, g.outputs(), &ins);
        let outs: Vec<_> = g.outputs().iter().map(|o| s.map.get(*o).unwrap()).collect();
        // Placeholders all survive, in order.
        assert_eq!(s.graph.placeholders().len(), g.placeholders().len());
        let after = oracle::interpret(&s.graph, &outs, &ins);
        for (b, a) in before.iter().zip(&after) {
            assert!(oracle::same_bits(b, a), "{b:?}\nvs\n{a:?}");
        }
    }
}

#[test]
fn exact_simplification_keeps_every_result() {
    assert_same_results(&common::softmax(3, 4));
    assert_same_results(&common::layernorm(2, 5));
    assert_same_results(&common::views());
    let g = GraphBuilder::new();
    let a = g.axis("A", 3).unwrap();
    let b = g.axis("B", 2).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
    let i = g.placeholder("i", &[b], DType::I64).unwrap();
    let one = g.filled(&[b], DType::F32, Scalar::Float(1.0)).unwrap();
    let nz = g.scalar(-0.0, DType::F32).unwrap();
    let z = g.scalar(0.0, DType::F32).unwrap();
    let iz = g.scalar(0.0, DType::I64).unwrap();
    ((x * one).unwrap() + nz).unwrap().output().unwrap();
    (x - z)
        .unwrap()
        .negative()
        .unwrap()
        .negative()
        .unwrap()
        .output()
        .unwrap();
    (i * iz).unwrap().output().unwrap();
    (x * z).unwrap().output().unwrap();
    let c = g
        .constant(&[b], weft_ir::ArrayData::F32(vec![0.5, -1.5]))
        .unwrap();
    (x + c.exp().unwrap().sigmoid().unwrap())
        .unwrap()
        .output()
        .unwrap();
    assert_same_results(&g.finish());
}

#[test]
fn constant_subgraphs_fold_with_the_interpreter() {
    let g = GraphBuilder::new();
    let a = g.axis("A", 3).unwrap();
    let b = g.axis("B", 2).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
    let c = g
        .constant(&[b], weft_ir::ArrayData::F32(vec![0.25, 2.0]))
        .unwrap();
    let d = g.filled(&[a], DType::F32, Scalar::Float(3.0)).unwrap();
    // (exp(c) + d) over (B, A) is constant: one data constant after folding.
    let k = (c.exp().unwrap() + d).unwrap().named("k").unwrap();
    (x * k).unwrap().named("y").unwrap().output().unwrap();
    let graph = g.finish();
    let s = simplify(
        &graph,
        &SimplifyOptions::default(),
        Some(&weft_compiler::passes::simplify::interpreter_evaluator),
    )
    .unwrap();
    assert_eq!(s.stats.folded, 2);
    let text = format!(
        "-- before\n{}-- after ({:?})\n{}",
        listing(&graph),
        s.stats,
        listing(&s.graph)
    );
    insta::assert_snapshot!(text);
    assert_same_results(&graph);
    // The folded value is the interpreter's, to the bit.
    let k_old = graph.find("k").unwrap();
    let k_new = s.map.get(k_old).unwrap();
    let want = oracle::interpret(&graph, &[k_old], &oracle::random_inputs(&graph, 0));
    let got = oracle::interpret(&s.graph, &[k_new], &oracle::random_inputs(&s.graph, 0));
    assert!(oracle::same_bits(&want[0], &got[0]));
}

/// Constants holding data merge when their elements are the same bit for bit and only then:
/// `-0.0` is not `0.0`, NaNs of different payloads differ, nor does an i32 constant merge
/// with an f32 one of the same bits. (Their key is a digest of the bits, confirmed by a
/// comparison, not the data as text.)
#[test]
fn data_constants_merge_only_when_their_bits_agree() {
    use weft_ir::ArrayData;
    let g = GraphBuilder::new();
    let a = g.axis("A", 4).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let quiet = f32::from_bits(0x7fc0_0001);
    let other_nan = f32::from_bits(0x7fc0_0002);
    let f32s = |v: [f32; 4]| g.constant(&[a], ArrayData::F32(v.to_vec())).unwrap();
    let base = [1.0, 2.0, 0.0, quiet];
    let constants = [
        f32s(base),
        f32s(base),                       // merges with the first
        f32s([1.0, 2.0, -0.0, quiet]),    // −0
        f32s([1.0, 2.0, 0.0, other_nan]), // another NaN payload
    ];
    let mut sum = x;
    for c in constants {
        sum = (sum + c).unwrap();
    }
    sum.named("s").unwrap().output().unwrap();
    let bits = base.map(f32::to_bits).map(|b| b as i32);
    let ints = g.constant(&[a], ArrayData::I32(bits.to_vec())).unwrap();
    let ints_again = g.constant(&[a], ArrayData::I32(bits.to_vec())).unwrap();
    (ints + ints_again)
        .unwrap()
        .named("i")
        .unwrap()
        .output()
        .unwrap();
    let graph = g.finish();
    let s = simplify(&graph, &SimplifyOptions::default(), None).unwrap();
    let data_constants = s
        .graph
        .nodes()
        .filter(|(_, n)| {
            matches!(
                n.op,
                Op::Tensor {
                    init: Some(TensorInit::Data(_)),
                    ..
                }
            )
        })
        .count();
    // Three distinct f32 constants and one i32 constant.
    assert_eq!(data_constants, 4);
    assert_eq!(s.stats.common, 2);
}

/// Two equal ops over a data constant fold to constants and still merge: the second finds
/// the first's folded constant under its op's key.
#[test]
fn equal_folded_ops_over_a_data_constant_merge() {
    use weft_ir::ArrayData;
    let g = GraphBuilder::new();
    let a = g.axis("A", 4).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let c = g
        .constant(&[a], ArrayData::F32(vec![0.5, 1.0, 1.5, 2.0]))
        .unwrap();
    let first = c.exp().unwrap();
    let second = c.exp().unwrap();
    (((x + first).unwrap()) * second)
        .unwrap()
        .named("y")
        .unwrap()
        .output()
        .unwrap();
    let graph = g.finish();
    let s = simplify(
        &graph,
        &SimplifyOptions::default(),
        Some(&weft_compiler::passes::simplify::interpreter_evaluator),
    )
    .unwrap();
    let constants = s
        .graph
        .nodes()
        .filter(|(_, n)| matches!(n.op, Op::Tensor { init: Some(_), .. }))
        .count();
    // exp(c) folded once, the second exp(c) merged with it; c itself is dead.
    assert_eq!((s.stats.folded, s.stats.common), (1, 1), "{:?}", s.stats);
    assert_eq!(constants, 1);
}

/// A data constant's elements are shared, not copied, by the graphs the pipeline rebuilds
/// from the user's (each rebuild once copied them: a 4 MiB constant eight times a compile).
#[test]
fn data_constants_are_shared_by_every_rebuilt_graph() {
    use std::sync::Arc;
    use weft_compiler::pipeline::{compile_plan, PlanOptions};
    use weft_ir::ArrayData;
    let data = |g: &Graph| -> Vec<Arc<ArrayData>> {
        g.nodes()
            .filter_map(|(_, n)| match &n.op {
                Op::Tensor {
                    init: Some(TensorInit::Data(d)),
                    ..
                } => Some(d.clone()),
                _ => None,
            })
            .collect()
    };
    let g = GraphBuilder::new();
    let n = g.axis("N", 4096).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let w = g.constant(&[n], ArrayData::F32(vec![0.5; 4096])).unwrap();
    (x + w).unwrap().named("y").unwrap().output().unwrap();
    let graph = g.finish();
    let Ok([original]) = <[_; 1]>::try_from(data(&graph)) else {
        panic!("one data constant")
    };
    let plan = compile_plan(&graph, &PlanOptions::default()).unwrap();
    for rebuilt in [&plan.source, &plan.simplified.graph] {
        let Ok([shared]) = <[_; 1]>::try_from(data(rebuilt)) else {
            panic!("one data constant")
        };
        assert!(Arc::ptr_eq(&original, &shared));
    }
}

/// Powers whose value the dtype holds exactly become the cheap spelling — `x¹` → `x`, `x⁰` →
/// 1, an f32's or an integer's `x²` → `square(x)` — and a square drops an `abs` or a negation
/// of its operand; an f64's `x²` stays a power (`pow` need not round it as `x·x` does). The
/// interpreter gives the same bits before and after, special values (NaN, ±inf, ±0,
/// subnormals, extremes) among the inputs.
#[test]
fn exact_powers_and_squares_of_signs_take_the_cheap_spelling() {
    use weft_ir::{BinaryOp, UnaryOp};
    let mut g = Graph::new();
    let a = g.axis("A", 4096).unwrap();
    let x = g.placeholder("x", &[a], DType::F32).unwrap();
    let y = g.placeholder("y", &[a], DType::F64).unwrap();
    let i = g.placeholder("i", &[a], DType::I64).unwrap();
    let power = |g: &mut Graph, t: NodeId, e: f64| {
        let dtype = g.node(t).dtype;
        let value = if dtype.is_int() {
            Scalar::Int(e as i64)
        } else {
            Scalar::Float(e)
        };
        let c = g.scalar(value, dtype).unwrap();
        let p = g.binary(BinaryOp::Power, t, c).unwrap();
        g.mark_output(p).unwrap();
    };
    for e in [2.0, 1.0, 0.0, -0.0] {
        power(&mut g, x, e);
        power(&mut g, y, e);
    }
    power(&mut g, i, 2.0);
    power(&mut g, i, 0.0);
    for sign in [UnaryOp::Abs, UnaryOp::Negative] {
        for t in [x, y, i] {
            let s = g.unary(sign, t).unwrap();
            let sq = g.unary(UnaryOp::Square, s).unwrap();
            g.mark_output(sq).unwrap();
        }
    }
    let s = simplify(&g, &SimplifyOptions::default(), None).unwrap();
    let kinds: Vec<String> = g
        .outputs()
        .iter()
        .map(|o| {
            let n = s.graph.node(s.map.get(*o).unwrap());
            format!("{} {:?}", n.op.name(), n.dtype)
        })
        .collect();
    let expected = [
        "square F32",
        "power F64",
        "placeholder F32",
        "placeholder F64",
        "constant F32",
        "constant F64",
        "constant F32",
        "constant F64",
        "square I64",
        "constant I64",
        "square F32",
        "square F64",
        "square I64",
        "square F32",
        "square F64",
        "square I64",
    ];
    assert_eq!(kinds, expected);
    for seed in 0..4 {
        let ins = oracle::random_inputs_with(&g, seed, true);
        let before = oracle::interpret(&g, g.outputs(), &ins);
        let outs: Vec<_> = g.outputs().iter().map(|o| s.map.get(*o).unwrap()).collect();
        let after = oracle::interpret(&s.graph, &outs, &ins);
        for (k, (b, a)) in before.iter().zip(&after).enumerate() {
            assert!(oracle::same_bits(b, a), "{}: {b:?}\nvs\n{a:?}", kinds[k]);
        }
    }
}
