//! Fusion, kernel programs, layouts and buffers on the workloads the issue names.

mod common;

use weft_compiler::passes::fusion::{BoundaryReason, GroupKind};
use weft_compiler::{compile_plan, PlanOptions};

fn fused() -> PlanOptions {
    PlanOptions::default()
}

#[test]
fn l2_sum_is_one_kernel_without_x_minus_y() {
    let g = common::l2_sum(10);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1);
    assert_eq!(p.fusion.groups[0].kind, GroupKind::Reduction);
    // Only x, y and the output exist in memory.
    assert_eq!(p.fusion.boundaries.len(), 3);
    assert_eq!(p.buffers.scratch_buffers(), 0);
    insta::assert_snapshot!(p.display());
}

#[test]
fn l2_dot_is_one_kernel_without_x_minus_y() {
    let g = common::l2_dot(10);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1);
    // Simplify canonicalises `dot(transpose(t), t)` into `sum(square(t))`.
    assert_eq!(p.fusion.groups[0].kind, GroupKind::Reduction);
    let t = p.simplified.graph.find("t").unwrap();
    assert!(!p.fusion.is_stored(t));
    assert!(p.buffers.tensor_of(t).is_none());
    assert_eq!(p.buffers.scratch_buffers(), 0);
    insta::assert_snapshot!(p.display());
}

#[test]
fn softmax_is_one_row_kernel() {
    let g = common::softmax(4, 7);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1, "{}", p.display());
    assert_eq!(p.fusion.groups[0].kind, GroupKind::RowReduction);
    assert_eq!(p.fusion.groups[0].outer.len(), 1);
    // exp is computed once per element into a row scratch, not recomputed.
    let e = p.simplified.graph.find("e").unwrap();
    let k = &p.kernels[0];
    assert!(k
        .stages
        .iter()
        .any(|s| s.node == e && s.local && !s.loops.is_empty()));
    insta::assert_snapshot!(p.display());
}

#[test]
fn layernorm_is_one_row_kernel() {
    let g = common::layernorm(3, 5);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1, "{}", p.display());
    assert_eq!(p.fusion.groups[0].kind, GroupKind::RowReduction);
    insta::assert_snapshot!(p.display());
}

#[test]
fn mlp_uses_two_scratch_buffers_whatever_its_depth() {
    for layers in [2, 3, 8, 13] {
        let g = common::mlp(layers, 16);
        let p = compile_plan(&g, &fused()).unwrap();
        assert_eq!(p.fusion.groups.len(), layers, "{}", p.display());
        let expected = if layers > 2 { 2 } else { 1 };
        assert_eq!(p.buffers.scratch_buffers(), expected, "{}", p.display());
        assert!(p.buffers.arena_bytes < p.buffers.unshared_bytes || layers <= 3);
        for b in &p.fusion.boundaries {
            let n = p.simplified.graph.node(b.node);
            if n.name
                .as_deref()
                .is_some_and(|s| s.starts_with('h') && s != "h0")
            {
                assert!(matches!(
                    b.reason,
                    BoundaryReason::DotOperand | BoundaryReason::GraphOutput
                ));
            }
        }
    }
    let p = compile_plan(&common::mlp(8, 16), &fused()).unwrap();
    insta::assert_snapshot!(p.buffers.display(&p.simplified.graph));
}

#[test]
fn unfused_mode_stores_every_intermediate() {
    let g = common::softmax(4, 7);
    let p = compile_plan(
        &g,
        &PlanOptions {
            fused: false,
            ..PlanOptions::default()
        },
    )
    .unwrap();
    // max, subtract, exp, sum, divide: one kernel each.
    assert_eq!(p.fusion.groups.len(), 5, "{}", p.display());
    assert!(p.fusion.groups.iter().all(|g| g.stages.len() == 1));
    // Every intermediate has a buffer of its own.
    assert_eq!(p.buffers.scratch_buffers(), 4);
    assert_eq!(p.buffers.arena_bytes, p.buffers.unshared_bytes);
    assert!(p.buffers.peak_live_bytes <= p.buffers.arena_bytes);
    insta::assert_snapshot!(p.fusion.display(&p.simplified.graph));
}

#[test]
fn views_fold_into_loads() {
    let g = common::views();
    let p = compile_plan(&g, &fused()).unwrap();
    // Only stored tensors and outputs are in memory: no view is ever copied.
    for b in &p.fusion.boundaries {
        let n = p.simplified.graph.node(b.node);
        assert!(!n.op.is_view() || b.reason == BoundaryReason::GraphOutput);
    }
    insta::assert_snapshot!(p.display());
}

#[path = "common/exec.rs"]
mod exec;

fn inputs(g: &weft_ir::Graph, seed: u64) -> std::collections::HashMap<String, Vec<f64>> {
    let mut s = seed;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) as f64 / (1u64 << 31) as f64) * 2.0 - 1.0
    };
    g.placeholders()
        .into_iter()
        .map(|p| {
            let n = g.node(p);
            let len: usize = g.shape_of(&n.axes).unwrap().iter().product();
            (n.name.clone().unwrap(), (0..len).map(|_| next()).collect())
        })
        .collect()
}

fn close(a: &[Vec<f64>], b: &[Vec<f64>]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert_eq!(x.len(), y.len());
        for (p, q) in x.iter().zip(y) {
            assert!((p - q).abs() <= 1e-9 * (1.0 + p.abs()), "{p} vs {q}");
        }
    }
}

#[test]
fn fused_and_unfused_plans_compute_the_same() {
    let unfused = PlanOptions {
        fused: false,
        ..PlanOptions::default()
    };
    for g in [
        common::l2_sum(9),
        common::l2_dot(9),
        common::softmax(3, 5),
        common::layernorm(4, 6),
        common::mlp(8, 5),
        common::views(),
    ] {
        let a = compile_plan(&g, &fused()).unwrap();
        let b = compile_plan(&g, &unfused).unwrap();
        let ins = inputs(&g, 7);
        close(&exec::run(&a, &ins), &exec::run(&b, &ins));
    }
}

#[test]
fn softmax_rows_sum_to_one() {
    let g = common::softmax(3, 5);
    let p = compile_plan(&g, &fused()).unwrap();
    let out = &exec::run(&p, &inputs(&g, 3))[0];
    for r in 0..3 {
        let s: f64 = out[r * 5..r * 5 + 5].iter().sum();
        assert!((s - 1.0).abs() < 1e-6, "row {r} sums to {s}");
    }
}

#[test]
fn views_read_the_right_elements() {
    let g = common::views();
    let p = compile_plan(&g, &fused()).unwrap();
    let ins = inputs(&g, 11);
    let out = exec::run(&p, &ins);
    let x = &ins["x"];
    // pp[a', b'] = exp(p)·p with p = pad(x[5 - 2a', b, 2], B: 1 before, 2 after).
    for a in 0..3 {
        for b in 0..7 {
            let p = if (1..5).contains(&b) {
                x[(5 - 2 * a) * 12 + (b - 1) * 3 + 2]
            } else {
                0.0
            };
            let want = p.exp() * p;
            assert!((out[0][a * 7 + b] - want).abs() < 1e-6);
        }
    }
    // fs = flatten(x) unchanged; neg = −concat(constant 1..4, z); inputs are f32.
    let f32_values = |v: &[f64]| v.iter().map(|&v| f64::from(v as f32)).collect::<Vec<_>>();
    assert_eq!(out[1], f32_values(x));
    let z = f32_values(&ins["z"]);
    let want: Vec<f64> = [1.0, 2.0, 3.0, 4.0]
        .iter()
        .chain(z.iter())
        .map(|v| -v)
        .collect();
    assert_eq!(out[2], want);
}

#[test]
fn dot_operands_read_many_times_are_stored() {
    let g = weft_ir::graph::GraphBuilder::new();
    let m = g.axis("M", 3).unwrap();
    let k = g.axis("K", 4).unwrap();
    let n = g.axis("N", 5).unwrap();
    let a = g.placeholder("a", &[m, k], weft_ir::DType::F32).unwrap();
    let b = g.placeholder("b", &[k, n], weft_ir::DType::F32).unwrap();
    let v = g.placeholder("v", &[k], weft_ir::DType::F32).unwrap();
    let ra = a.relu().unwrap().named("ra").unwrap();
    // ra is read N times by the matmul: stored. (a − 1) is read once per element by the
    // matrix-vector product: inline.
    ra.dot(b).unwrap().named("mm").unwrap().output().unwrap();
    let one = g.scalar(1.0, weft_ir::DType::F32).unwrap();
    let am = (a - one).unwrap().named("am").unwrap();
    am.dot(v).unwrap().named("mv").unwrap().output().unwrap();
    let graph = g.finish();
    let p = compile_plan(&graph, &fused()).unwrap();
    let gg = &p.simplified.graph;
    let ra = gg.find("ra").unwrap();
    let am = gg.find("am").unwrap();
    assert_eq!(
        p.fusion
            .groups
            .iter()
            .find(|x| x.stages.iter().any(|s| s.node == ra))
            .unwrap()
            .stages[0]
            .reason,
        weft_compiler::passes::fusion::StageReason::DotOperand
    );
    assert!(p.fusion.is_stored(ra));
    assert!(!p.fusion.is_stored(am));
    insta::assert_snapshot!(p.fusion.display(gg));
    let unfused = PlanOptions {
        fused: false,
        ..PlanOptions::default()
    };
    let ins = inputs(&graph, 5);
    close(
        &exec::run(&p, &ins),
        &exec::run(&compile_plan(&graph, &unfused).unwrap(), &ins),
    );
}

#[test]
fn expensive_producers_are_computed_once() {
    let g = weft_ir::graph::GraphBuilder::new();
    let n = g.axis("N", 4).unwrap();
    let c = g.axis("C", 3).unwrap();
    let x = g.placeholder("x", &[n], weft_ir::DType::F64).unwrap();
    let y = g.placeholder("y", &[n, c], weft_ir::DType::F64).unwrap();
    // Read through a broadcast: one exp per N, not per (N, C); same kernel.
    let e = x.exp().unwrap().named("e").unwrap();
    (e + y).unwrap().named("out").unwrap().output().unwrap();
    // Read by two kernels: stored once.
    let t = x.tanh().unwrap().named("t").unwrap();
    t.sum(&[n]).unwrap().named("s").unwrap().output().unwrap();
    let u = t.exp().unwrap().named("u").unwrap();
    u.sum(&[n]).unwrap().named("v").unwrap().output().unwrap();
    u.max(&[n]).unwrap().named("w").unwrap().output().unwrap();
    let graph = g.finish();
    let p = compile_plan(&graph, &fused()).unwrap();
    let gg = &p.simplified.graph;
    use weft_compiler::passes::fusion::StageReason;
    let e = gg.find("e").unwrap();
    let ge = p.fusion.group_of(e).unwrap();
    assert_eq!(p.fusion.groups[ge].stages.len(), 2);
    assert_eq!(
        p.fusion.groups[ge].stages[0].reason,
        StageReason::BroadcastExpensive
    );
    assert!(!p.fusion.is_stored(e));
    let t = gg.find("t").unwrap();
    assert_eq!(
        p.fusion
            .boundaries
            .iter()
            .find(|b| b.node == t)
            .unwrap()
            .reason,
        BoundaryReason::ConsumersInSeveralGroups
    );
    // u = exp(t), read by two kernels, is written over t, dead after u's kernel.
    let u = gg.find("u").unwrap();
    assert_eq!(p.buffers.in_place, vec![(u, t)], "{}", p.display());
    insta::assert_snapshot!(p.display());
    let unfused = PlanOptions {
        fused: false,
        ..PlanOptions::default()
    };
    let ins = inputs(&graph, 9);
    close(
        &exec::run(&p, &ins),
        &exec::run(&compile_plan(&graph, &unfused).unwrap(), &ins),
    );
}

#[test]
fn a_row_value_read_at_another_row_is_stored() {
    let g = weft_ir::graph::GraphBuilder::new();
    let n = g.axis("N", 4).unwrap();
    let c = g.axis("C", 3).unwrap();
    let x = g.placeholder("x", &[n, c], weft_ir::DType::F32).unwrap();
    let m = x.max(&[c]).unwrap().named("m").unwrap();
    // Row n reads the max of row N − 1 − n.
    let r = m
        .slice(&[(
            n,
            weft_ir::AxisSlice::Range(weft_ir::SliceRange::reversed()),
        )])
        .unwrap()
        .cast_axes(&[n])
        .unwrap();
    (x - r).unwrap().named("out").unwrap().output().unwrap();
    let graph = g.finish();
    let p = compile_plan(&graph, &fused()).unwrap();
    let m = p.simplified.graph.find("m").unwrap();
    assert_eq!(
        p.fusion
            .boundaries
            .iter()
            .find(|b| b.node == m)
            .unwrap()
            .reason,
        BoundaryReason::ViewOfOuterAxes
    );
    let unfused = PlanOptions {
        fused: false,
        ..PlanOptions::default()
    };
    let ins = inputs(&graph, 2);
    let out = exec::run(&p, &ins);
    close(
        &out,
        &exec::run(&compile_plan(&graph, &unfused).unwrap(), &ins),
    );
    let x = &ins["x"];
    let max3 = |row: usize| {
        x[row * 3..row * 3 + 3]
            .iter()
            .cloned()
            .fold(f64::MIN, f64::max)
    };
    // f32 arithmetic on f32 inputs.
    assert_eq!(out[0][0], f64::from(x[0] as f32 - max3(3) as f32));
}

#[path = "common/oracle.rs"]
mod oracle;

/// The plan, run by the test executor, matches the interpreter on the original graph.
fn matches_interpreter(g: &weft_ir::Graph, fused_mode: bool) {
    let opts = PlanOptions {
        fused: fused_mode,
        ..PlanOptions::default()
    };
    matches_interpreter_with(g, &opts);
}

fn matches_interpreter_with(g: &weft_ir::Graph, opts: &PlanOptions) {
    let p = compile_plan(g, opts).unwrap();
    for seed in 0..2 {
        let ins = oracle::random_inputs(g, seed);
        let want = oracle::interpret(g, g.outputs(), &ins);
        let by_name = g
            .placeholders()
            .iter()
            .zip(&ins)
            .map(|(p, a)| {
                let v = (0..a.len())
                    .map(|i| a.data().get(i).unwrap().as_f64())
                    .collect();
                (g.node(*p).name.clone().unwrap(), v)
            })
            .collect();
        let got = exec::run(&p, &by_name);
        let outs: Vec<_> = g
            .outputs()
            .iter()
            .map(|o| p.map().get(*o).unwrap())
            .collect();
        for (w, o) in want.iter().zip(&outs) {
            let k = p
                .simplified
                .graph
                .outputs()
                .iter()
                .position(|x| x == o)
                .unwrap();
            for (i, x) in got[k].iter().enumerate() {
                let y = w.data().get(i).unwrap().as_f64();
                assert!(
                    (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                    "output {k}[{i}]: {x} vs {y}"
                );
            }
        }
    }
}

#[test]
fn plans_match_the_interpreter() {
    for g in [
        common::l2_sum(9),
        common::l2_dot(9),
        common::softmax(3, 5),
        common::layernorm(4, 6),
        common::mlp(8, 5),
        common::views(),
    ] {
        matches_interpreter(&g, true);
        matches_interpreter(&g, false);
    }
}

#[test]
fn outputs_that_are_stored_tensors_or_constants_need_no_kernel() {
    let g = weft_ir::graph::GraphBuilder::new();
    let a = g.axis("A", 3).unwrap();
    let x = g.placeholder("x", &[a], weft_ir::DType::I32).unwrap();
    let zero = g.scalar(0.0, weft_ir::DType::I32).unwrap();
    let one = g.scalar(1.0, weft_ir::DType::I32).unwrap();
    // x·1 is x itself; x·0 is a uniform constant; x transposed is a copy kernel.
    (x * one).unwrap().output().unwrap();
    (x * zero).unwrap().output().unwrap();
    x.transpose()
        .unwrap()
        .named("xt")
        .unwrap()
        .output()
        .unwrap();
    let graph = g.finish();
    let p = compile_plan(&graph, &fused()).unwrap();
    assert_eq!(p.kernels.len(), 1, "{}", p.display());
    for o in p.simplified.graph.outputs() {
        assert!(p.fusion.is_stored(*o));
        assert!(p.layouts.layouts.contains_key(o));
    }
    matches_interpreter(&graph, true);
    matches_interpreter(&graph, false);
}

#[test]
fn a_value_computed_by_parts_but_read_whole_is_stored() {
    let g = weft_ir::graph::GraphBuilder::new();
    let a = g.axis("A", 3).unwrap();
    let b = g.axis("B", 2).unwrap();
    let x = g.placeholder("x", &[a, b], weft_ir::DType::F64).unwrap();
    let z = g.placeholder("z", &[a], weft_ir::DType::F64).unwrap();
    // out has axes (A·B, A): it iterates A·B whole, since splitting it would repeat A, while
    // exp(flatten(x)) is computed over A and B: stored rather than indexed with div/mod.
    let e = x
        .flatten(&[a, b])
        .unwrap()
        .exp()
        .unwrap()
        .named("e")
        .unwrap();
    (e * z).unwrap().named("out").unwrap().output().unwrap();
    let graph = g.finish();
    let p = compile_plan(&graph, &fused()).unwrap();
    let e = p.simplified.graph.find("e").unwrap();
    assert_eq!(
        p.fusion
            .boundaries
            .iter()
            .find(|x| x.node == e)
            .unwrap()
            .reason,
        BoundaryReason::SplitIndex,
        "{}",
        p.display()
    );
    insta::assert_snapshot!(p.display());
    matches_interpreter(&graph, true);
    matches_interpreter(&graph, false);
}

/// Two flattened axes of one tensor share a part (`W·W^-1*` and `W·pad`), so its frame iterates
/// one of them whole. Each flatten read through it by parts is materialised in a kernel of its
/// own, whose frame splits the flatten's own axis: the graph compiles with no div/mod index
/// (tests/findings/jit_refuses_needs_divmod.weft, once refused).
#[test]
fn flattened_axes_sharing_a_part_compile_by_materialising_the_flattens() {
    let text = "axis W = 2
placeholder c: f64[W]
placeholder t: f64[W, W^-1*]
a = flatten(t, [W, W^-1*])
b = flatten(t, [W^-1*, W])
p = pad(b, \"W^-1**W\"=(2, 0))
s0 = add(c, a)
s = add(s0, p)
out = flatten(s, [W, \"W^-1**W+pad(2,0)\"])
output out
";
    let graph = weft_ir::text::parse(text, "shared_part.weft").unwrap();
    for fused in [true, false] {
        let opts = PlanOptions {
            fused,
            ..PlanOptions::default()
        };
        let p = compile_plan(&graph, &opts).unwrap();
        let g = &p.simplified.graph;
        for name in ["a", "b"] {
            let n = g.find(name).unwrap();
            let reason = p.fusion.boundaries.iter().find(|x| x.node == n);
            let want = if fused {
                BoundaryReason::SplitIndex
            } else {
                BoundaryReason::Unfused
            };
            assert_eq!(
                reason.map(|b| b.reason),
                Some(want),
                "{name}: {}",
                p.display()
            );
        }
        matches_interpreter(&graph, fused);
    }
}

/// `flatten(t, [A*, B*])` where `t` also has the transposed `(A·B)*`: both result axes have the
/// parts `A*`, `B*`. The flatten's frame splits its own axis (and keeps `(A·B)*` whole), so it
/// reads its parts' keys as its own (tests/findings/fuzz_flatten_of_transposed_compare.weft:
/// once a silent miscompile, then a refusal).
#[test]
fn a_flatten_beside_a_transposed_flatten_splits_its_own_axis() {
    use weft_compiler::passes::views::node_keys;
    let text = "axis A = 3
axis B = 2
placeholder x: f64[A, B]
f = flatten(x, [A, B])
d = subtract(x, f)
t = transpose(d)
out = flatten(t, [A*, B*])
output out
";
    let graph = weft_ir::text::parse(text, "transposed_flatten.weft").unwrap();
    let out = graph.find("out").unwrap();
    let names: Vec<String> = node_keys(&graph, out)
        .into_iter()
        .map(|a| graph.axis_name(a))
        .collect();
    // `(A·B)*` (named `A*B*`) whole, then the parts of the flatten's own `A*·B*`.
    assert_eq!(names, ["A*B*", "A*", "B*"]);
    matches_interpreter(&graph, true);
    matches_interpreter(&graph, false);
}

#[test]
fn callers_may_ask_for_column_major_inputs_and_outputs() {
    let g = weft_ir::graph::GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = g.placeholder("x", &[a, b], weft_ir::DType::F64).unwrap();
    let y = x.exp().unwrap().named("y").unwrap();
    y.output().unwrap();
    let (xid, yid) = (x.id(), y.id());
    let graph = g.finish();
    let opts = PlanOptions {
        layouts: vec![(xid, vec![b, a]), (yid, vec![b, a])],
        ..PlanOptions::default()
    };
    let p = compile_plan(&graph, &opts).unwrap();
    let m = p.map();
    assert_eq!(p.layouts.layouts[&m.get(xid).unwrap()].strides, vec![1, 2]);
    assert_eq!(p.layouts.layouts[&m.get(yid).unwrap()].strides, vec![1, 2]);
    // Column-major data in, the same logical values out.
    let row_major: Vec<f64> = (0..6).map(|i| i as f64 / 4.0).collect();
    let col_major: Vec<f64> = (0..6).map(|k| row_major[(k % 2) * 3 + k / 2]).collect();
    let out = exec::run(&p, &[("x".to_string(), col_major)].into_iter().collect());
    let want: Vec<f64> = row_major.iter().map(|v| v.exp()).collect();
    assert_eq!(out[0], want);
    // Only placeholders and outputs take a requested order.
    let bad = PlanOptions {
        layouts: vec![(xid, vec![a])],
        ..PlanOptions::default()
    };
    assert!(matches!(
        compile_plan(&graph, &bad),
        Err(weft_compiler::PassError::Unsupported { .. })
    ));
}

#[test]
fn a_chain_of_views_is_one_strided_view() {
    use weft_compiler::passes::views::view_index_map;
    let g = weft_ir::graph::GraphBuilder::new();
    let a = g.axis("A", 5).unwrap();
    let b = g.axis("B", 4).unwrap();
    let c = g.axis("C", 3).unwrap();
    let x = g.placeholder("x", &[a, b, c], weft_ir::DType::F32).unwrap();
    // transpose, then B reversed with step 2, C pinned to 1, then A·... flattened away again.
    let v = x
        .transpose()
        .unwrap()
        .slice(&[
            (
                b.transposed(),
                weft_ir::AxisSlice::Range(weft_ir::SliceRange {
                    start: None,
                    stop: None,
                    step: -2,
                }),
            ),
            (c.transposed(), weft_ir::AxisSlice::Index(1)),
        ])
        .unwrap()
        .pad(&[(a.transposed(), 1, 0)])
        .unwrap();
    let (vid, xid) = (v.id(), x.id());
    let graph = g.finish();
    let strides = |n: weft_ir::NodeId| (n == xid).then(|| vec![12i64, 3, 1]);
    let (view, mask) = view_index_map(&graph, vid, &strides).unwrap();
    // View axes: B*[::-2] (2: b = 3, 1), A*+pad(1,0) (6: a = i − 1).
    assert_eq!(
        view.axes.iter().map(|x| x.len).collect::<Vec<_>>(),
        vec![2, 6]
    );
    assert_eq!(view.strides, vec![-6, 12]);
    // b = 3 → 9, c = 1 → 1, a = −1 (the pad) → −12.
    assert_eq!(view.offset, 9 + 1 - 12);
    assert_eq!(mask.len(), 1);
    assert_eq!((mask[0].lo, mask[0].hi), (1, 6));
}

/// Finding 001 (tests/findings/fuzz_empty_tensor_huge_axis_row_scratch.weft): `convert` of an
/// empty `[2^63 − 1, 0, 0*]` tensor, an output also kept locally over its huge axis by the sum
/// that reduces it,
/// asked for a scratch row of 2^63 − 1 floats, and the kernel failed verification. A kernel that
/// runs no iteration writes no row: it needs no scratch.
#[test]
fn an_empty_kernel_needs_no_row_scratch_however_long_its_axes() {
    let text = "axis A0 = 9223372036854775807\naxis A1 = 0\n\
                placeholder t1: bool[A0, A1, A1*]\nc = convert(t1, f32)\nt = sum(c, [A0])\n";
    let graph = weft_ir::text::parse(text, "empty_huge.weft").unwrap();
    let options = PlanOptions {
        outputs: ["t1", "c", "t"].map(|n| graph.find(n).unwrap()).to_vec(),
        ..fused()
    };
    let p = compile_plan(&graph, &options).unwrap();
    assert!(p
        .kernels
        .iter()
        .all(|k| k.scratch_bytes(&p.simplified.graph) == 0));
    let lowered = weft_compiler::lower_plan(&p, &Default::default()).unwrap();
    for lk in &lowered {
        for (b, decl) in lk.bindings.iter().zip(lk.kernel.buffers.values()) {
            if matches!(b, weft_compiler::BufferBinding::RowScratch(_)) {
                assert_eq!(decl.len, 0, "{}", decl.name);
            }
        }
    }
}

#[test]
fn the_cost_model_keeps_apart_a_merge_that_would_gather() {
    // Sums over a strided axis not taken in memory order (as below the pipeline's threshold):
    // merged into the normalising pass, each statistic's loop over C would run inside a loop
    // over N, gathering x and scattering out a lane at a time.
    let no_memory_order = PlanOptions {
        reduce_in_memory_min_bytes: u64::MAX,
        ..fused()
    };
    // x: 1 MiB, past the cache a strided read stays in.
    let g = common::first_axis_layernorm(64, 4096);
    let p = compile_plan(&g, &no_memory_order).unwrap();
    let refused: Vec<_> = p.fusion.decisions.iter().filter(|d| !d.taken).collect();
    assert!(
        !refused.is_empty(),
        "{}",
        p.fusion.display(&p.simplified.graph)
    );
    for d in &refused {
        assert!(d.merged.gathered > d.apart.gathered, "{d:?}");
        assert!(d.merged.seconds() > d.apart.seconds(), "{d:?}");
    }
    assert!(p
        .fusion
        .boundaries
        .iter()
        .any(|b| b.reason == BoundaryReason::CostModel));
    for grp in &p.fusion.groups {
        assert!(grp.estimate.seconds() <= grp.unfused.seconds(), "{grp:?}");
    }
    matches_interpreter_with(&g, &no_memory_order);
    // The same math over the contiguous axis gathers nothing: every merge is taken, one
    // kernel, predicted faster than its ops unfused.
    let p = compile_plan(&common::layernorm(1024, 512), &no_memory_order).unwrap();
    assert_eq!(p.fusion.groups.len(), 1);
    assert!(!p.fusion.decisions.is_empty());
    assert!(p
        .fusion
        .decisions
        .iter()
        .all(|d| d.taken && d.merged.gathered == 0));
    let grp = &p.fusion.groups[0];
    assert!(
        grp.estimate.seconds() < grp.unfused.seconds() / 2.0,
        "{grp:?}"
    );
}

#[test]
fn the_cost_model_counts_what_fusion_saves() {
    // softmax over rows of 512 f32 (2 KiB: in cache between passes): fused, x is read once
    // and out written once; unfused, every intermediate is written and read back.
    let (rows, cols) = (4096u64, 512u64);
    let p = compile_plan(&common::softmax(rows as usize, cols as usize), &fused()).unwrap();
    let grp = &p.fusion.groups[0];
    let bytes = rows * cols * 4;
    assert_eq!(grp.estimate.memory_bytes, 2 * bytes);
    assert_eq!(grp.estimate.kernels, 1);
    assert!(grp.unfused.memory_bytes >= 6 * bytes, "{:?}", grp.unfused);
    assert_eq!(grp.unfused.element_ops, grp.estimate.element_ops);
    // Rows too long to stay in cache are read again by each pass that reads them.
    let p = compile_plan(&common::softmax(4, 1 << 20), &fused()).unwrap();
    let grp = &p.fusion.groups[0];
    assert!(
        grp.estimate.memory_bytes >= 4 * (4 << 20),
        "{:?}",
        grp.estimate
    );
}
