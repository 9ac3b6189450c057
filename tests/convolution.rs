//! Convolution and pooling (`weft_ir::graph::convolution`): hand-computed cases, axes paired by
//! role in any order, typed errors naming the axes, the text format's round trip, the JIT
//! (fused and unfused, through the expansion into slices and dots) against the interpreter
//! over random shapes, strides, paddings, dilations, groups and roles, and gradients against
//! central finite differences.

mod jit_common;

use proptest::prelude::*;
use weft::prelude::*;
use weft::{ConvSpec, GraphError, PoolKind, PoolSpec, Role};
use weft_oracle::{proptest_cases, run_property, SplitMix, Tally};

const BACKENDS: [Backend; 3] = [Backend::Interpreter, Backend::Jit, Backend::JitUnfused];

/// Every backend's value of `out`, all placeholders given as `inputs`.
fn on_every_backend(g: &Graph, out: NodeId, inputs: &[HostArray]) -> Vec<Vec<f64>> {
    BACKENDS
        .iter()
        .map(|b| {
            let t = Transformer::new(g.clone(), *b).unwrap();
            let c = t.computation(&[out], &g.placeholders()).unwrap();
            let r = c.call(inputs).unwrap();
            let r = r[0].clone();
            match r.dtype() {
                DType::F32 => r
                    .to_vec::<f32>()
                    .unwrap()
                    .iter()
                    .map(|v| *v as f64)
                    .collect(),
                _ => r.to_vec::<f64>().unwrap(),
            }
        })
        .collect()
}

fn array(g: &Graph, id: NodeId, v: Vec<f64>) -> HostArray {
    let axes = g.node(id).axes.clone();
    let shape = g.shape_of(&axes).unwrap();
    if g.node(id).dtype == DType::F32 {
        let v: Vec<f32> = v.iter().map(|x| *x as f32).collect();
        return HostArray::from_vec(axes, shape, v).unwrap();
    }
    HostArray::from_vec(axes, shape, v).unwrap()
}

#[test]
fn a_padded_one_dimensional_convolution_by_hand() {
    let mut g = Graph::new();
    let t = g.axis_with_roles("T", Some(5), vec![Role::Time]).unwrap();
    let c = g
        .axis_with_roles("C", Some(1), vec![Role::Channel])
        .unwrap();
    let k = g
        .axis_with_roles("K", Some(1), vec![Role::Channelout])
        .unwrap();
    let r = g.axis_with_roles("R", Some(3), vec![Role::Time]).unwrap();
    let x = g.placeholder("x", &[t, c], DType::F64).unwrap();
    let f = g.placeholder("f", &[k, c, r], DType::F64).unwrap();
    let y = g
        .convolution(x, f, &ConvSpec::new().pad(Role::Time, 1, 1))
        .unwrap();
    // y[t] = x[t−1] − x[t+1], zeros outside: [0 − 2, 1 − 3, 2 − 4, 3 − 5, 4 − 0].
    let xs = [
        array(&g, x, vec![1.0, 2.0, 3.0, 4.0, 5.0]),
        array(&g, f, vec![1.0, 0.0, -1.0]),
    ];
    for got in on_every_backend(&g, y, &xs) {
        assert_eq!(got, vec![-2.0, -2.0, -2.0, -2.0, 4.0]);
    }
    // The output keeps the input's axis order: the window axis, then the features axis.
    let out = &g.node(y).axes;
    assert_eq!(g.axis_name(out.as_slice()[0]), "T~R+pad(1,1)");
    assert_eq!(g.axis_name(out.as_slice()[1]), "K'");
    assert_eq!(g.axis_data(out.as_slice()[1].id).roles, vec![Role::Channel]);
}

#[test]
fn pools_by_hand_padding_never_counts() {
    let mut g = Graph::new();
    let h = g.axis_with_roles("H", Some(4), vec![Role::Height]).unwrap();
    let x = g.placeholder("x", &[h], DType::F32).unwrap();
    let spec = |kind| {
        PoolSpec::new(kind)
            .window(Role::Height, 3)
            .stride(Role::Height, 2)
            .pad(Role::Height, 1, 1)
    };
    let m = g.pool(x, &spec(PoolKind::Max)).unwrap();
    let a = g.pool(x, &spec(PoolKind::Avg)).unwrap();
    // Windows over [pad, −1, −2, −3, −4, pad]: {pad, −1, −2}, {−2, −3, −4}.
    let xs = [array(&g, x, vec![-1.0, -2.0, -3.0, -4.0])];
    for got in on_every_backend(&g, m, &xs) {
        assert_eq!(got, vec![-1.0, -2.0]);
    }
    for got in on_every_backend(&g, a, &xs) {
        assert_eq!(got, vec![-1.5, -3.0]);
    }
    // A NaN tap makes the max NaN, as `maximum` does.
    let xs = [array(&g, x, vec![1.0, 0.0, 0.0, f64::NAN])];
    for got in on_every_backend(&g, m, &xs) {
        assert!(got[0] == 1.0 && got[1].is_nan(), "{got:?}");
    }
}

/// A 2-D convolution written in two axis orders gives the same values: pairing is by role.
#[test]
fn roles_pair_axes_in_any_order() {
    let mut g = Graph::new();
    let n = g.axis("N", 2).unwrap();
    let c = g
        .axis_with_roles("C", Some(3), vec![Role::Channel])
        .unwrap();
    let h = g.axis_with_roles("H", Some(5), vec![Role::Height]).unwrap();
    let w = g.axis_with_roles("W", Some(4), vec![Role::Width]).unwrap();
    let k = g
        .axis_with_roles("K", Some(2), vec![Role::Channelout])
        .unwrap();
    let j = g
        .axis_with_roles("J", Some(3), vec![Role::Channel])
        .unwrap();
    let r = g.axis_with_roles("R", Some(2), vec![Role::Height]).unwrap();
    let s = g.axis_with_roles("S", Some(3), vec![Role::Width]).unwrap();
    let spec = ConvSpec::new()
        .stride(Role::Width, 2)
        .pad(Role::Width, 1, 0);
    let x1 = g.placeholder("x1", &[n, c, h, w], DType::F64).unwrap();
    let f1 = g.placeholder("f1", &[k, j, r, s], DType::F64).unwrap();
    let x2 = g.axes_with_order(x1, &[w, n, h, c]).unwrap();
    let f2 = g.axes_with_order(f1, &[s, r, k, j]).unwrap();
    let y1 = g.convolution(x1, f1, &spec).unwrap();
    let y2 = g.convolution(x2, f2, &spec).unwrap();
    let order: Vec<Axis> = g.node(y1).axes.iter().copied().collect();
    let y2 = g.axes_with_order(y2, &order).unwrap();
    let mut rng = SplitMix(7);
    let mut draw = |id| {
        let len: usize = g.shape_of(&g.node(id).axes).unwrap().iter().product();
        array(&g, id, (0..len).map(|_| rng.unit() - 0.5).collect())
    };
    let xs = [draw(x1), draw(f1)];
    // The same values, up to the order the taps are summed in.
    let a = on_every_backend(&g, y1, &xs);
    let b = on_every_backend(&g, y2, &xs);
    for (p, q) in a.iter().zip(&b) {
        for (u, v) in p.iter().zip(q) {
            assert!((u - v).abs() < 1e-12, "{u} vs {v}");
        }
    }
}

#[test]
fn bad_pairings_are_typed_errors_naming_the_axes() {
    let mut g = Graph::new();
    let n = g.axis("N", 2).unwrap();
    let c = g
        .axis_with_roles("C", Some(4), vec![Role::Channel])
        .unwrap();
    let h = g.axis_with_roles("H", Some(5), vec![Role::Height]).unwrap();
    let w = g.axis_with_roles("W", Some(5), vec![Role::Width]).unwrap();
    let k = g
        .axis_with_roles("K", Some(3), vec![Role::Channelout])
        .unwrap();
    let j = g
        .axis_with_roles("J", Some(4), vec![Role::Channel])
        .unwrap();
    let r = g.axis_with_roles("R", Some(3), vec![Role::Height]).unwrap();
    let big = g
        .axis_with_roles("R9", Some(9), vec![Role::Height])
        .unwrap();
    let d = g.axis_with_roles("D", Some(2), vec![Role::Depth]).unwrap();
    let z = g.axis("Z", 2).unwrap();
    let f32_ = DType::F32;
    let x = g.placeholder("x", &[n, c, h], f32_).unwrap();
    let no_channel = g.placeholder("nc", &[n, h], f32_).unwrap();
    let f = g.placeholder("f", &[k, j, r], f32_).unwrap();
    let f_depth = g.placeholder("fd", &[k, j, d], f32_).unwrap();
    let f_extra = g.placeholder("fz", &[k, j, r, z], f32_).unwrap();
    let f_big = g.placeholder("fb", &[k, j, big], f32_).unwrap();
    let f_w = g.placeholder("fw", &[k, j, r], f32_).unwrap();
    let x_hw = g.placeholder("xhw", &[n, c, h, w], f32_).unwrap();
    let x64 = g.placeholder("x64", &[n, c, h], DType::F64).unwrap();
    let cases: Vec<(Result<NodeId, GraphError>, &str)> = vec![
        (
            g.convolution(no_channel, f, &ConvSpec::new()),
            "the input (N, H) has no axis with the Channel role",
        ),
        (
            g.convolution(x, f_depth, &ConvSpec::new()),
            "the input's axis `H` (Height) needs exactly one filter axis with the Height role",
        ),
        (
            g.convolution(x, f_extra, &ConvSpec::new()),
            "the filter's axis `Z` pairs with nothing",
        ),
        (
            g.convolution(x, f_big, &ConvSpec::new()),
            "axis `H`: a window spanning 9",
        ),
        (
            g.convolution(x_hw, f_w, &ConvSpec::new()),
            "the input's axis `W` (Width) needs exactly one filter axis",
        ),
        (
            g.convolution(x, f, &ConvSpec::new().stride(Role::Width, 2)),
            "the spec moves the filter over Width, but the input (N, C, H) has no Width axis",
        ),
        (
            g.convolution(x, f, &ConvSpec::new().groups(2)),
            "the input's Channel axis `C` has length 4, but 2 group(s)",
        ),
        (
            g.convolution(x, f, &ConvSpec::new().stride(Role::Height, 0)),
            "stride 0",
        ),
        (
            g.convolution(x64, f, &ConvSpec::new()),
            "dtypes f64 and f32",
        ),
        (
            g.pool(x, &PoolSpec::new(PoolKind::Max).window(Role::Width, 2)),
            "the input (N, C, H) has no axis with the Width role",
        ),
        (
            g.pool(
                x,
                &PoolSpec::new(PoolKind::Avg)
                    .window(Role::Height, 2)
                    .pad(Role::Height, 2, 0),
            ),
            "padding (2, 0) must be shorter than the window 2",
        ),
        (
            g.pool(x, &PoolSpec::new(PoolKind::Max)),
            "a pool needs at least one window",
        ),
    ];
    for (k, (result, want)) in cases.into_iter().enumerate() {
        let e = result.expect_err(want).to_string();
        assert!(e.contains(want), "case {k}: `{e}` does not say `{want}`");
    }
}

#[test]
fn the_text_format_round_trips_convolutions_and_pools() {
    let text = "\
axis N = 2
axis C = 4 : Channel
axis H = 7 : Height
axis W = 6 : Width
axis K = 6 : Channelout
axis J = 2 : Channel
axis R = 3 : Height
axis S = 2 : Width
placeholder x: f32[N, C, H, W]
placeholder f: f32[K, J, R, S]
y = convolution(x, f, Height=(stride=2, pad=(1, 1)), Width=(dilation=2), groups=2)
m = max_pool(y, Height=(window=2, stride=1, pad=(1, 0)), Width=(window=2))
a = avg_pool(m, Channel=(window=3))
output a
";
    let g = weft_ir::text::parse(text, "c.weft").unwrap();
    let printed = weft_ir::text::print(&g);
    assert!(
        printed.contains("= window(H, R, 2, 1, 1, 1) : Height"),
        "{printed}"
    );
    assert!(printed.contains("= features(K) : Channel"), "{printed}");
    assert!(printed.contains("groups=2"), "{printed}");
    let again = weft_ir::text::parse(&printed, "c.weft").unwrap();
    assert_eq!(weft_ir::text::print(&again), printed);
    // Errors point at the argument.
    let bad = text.replace("Height=(stride=2,", "Height=(strde=2,");
    let e = weft_ir::text::parse(&bad, "c.weft")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("stride, dilation or pad") && e.contains("11:"),
        "{e}"
    );
}

#[test]
fn max_pool_gradients_go_to_the_largest_tap() {
    let mut g = Graph::new();
    let t = g.axis_with_roles("T", Some(5), vec![Role::Time]).unwrap();
    let x = g.placeholder("x", &[t], DType::F64).unwrap();
    let spec = PoolSpec::new(PoolKind::Max)
        .window(Role::Time, 2)
        .stride(Role::Time, 1)
        .pad(Role::Time, 1, 0);
    let m = g.pool(x, &spec).unwrap();
    let out: Vec<Axis> = g.node(m).axes.iter().copied().collect();
    let loss = g.sum(m, &out).unwrap();
    let dx = g.grad(loss, &[x]).unwrap()[0];
    // Windows {pad, 3}, {3, 1}, {1, 4}, {4, 1}, {1, 5}: maxima 3, 3, 4, 4, 5.
    let xs = [array(&g, x, vec![3.0, 1.0, 4.0, 1.0, 5.0])];
    for got in on_every_backend(&g, dx, &xs) {
        assert_eq!(got, vec![2.0, 0.0, 2.0, 0.0, 1.0]);
    }
}

/// Values in [-2, 2) for every placeholder, no special values (the oracle's generator).
fn random_values(g: &Graph, ps: &[NodeId], seed: u64) -> Vec<HostArray> {
    weft_oracle::random_inputs(g, ps, seed, false)
}

fn check_jit(seed: u64) -> Result<(), TestCaseError> {
    let case = jit_common::random_convolution(seed, None);
    let g = &case.g;
    let ps = g.placeholders();
    let xs = random_values(g, &ps, seed);
    jit_common::check_backends(g, &case.out, &xs)
}

/// Central differences of `loss = Σ out · weights` for each placeholder element, against
/// `grad`, in f64. A convolution and an average pool are linear in each operand, so a central
/// difference is exact up to rounding and a wide step (1e-3) keeps that rounding (≈ ε·|loss|
/// / step) far below the tolerance, 1e-6·(1 + |difference|). A max pool is only piecewise
/// linear (a step may cross a tie): `max_pool_gradients_go_to_the_largest_tap` checks it.
/// The cases are drawn f64 with average pools only (`random_convolution_with`), so none is
/// skipped; `tally` counts them (and the elements whose derivative was compared).
fn check_gradients(seed: u64, tally: &Tally) -> Result<(), TestCaseError> {
    let mut case = jit_common::random_convolution_with(seed, None, true);
    let g = &mut case.g;
    let max_pool = case.out.iter().any(
        |o| matches!(&g.node(*o).op, weft::Op::Pool { spec, .. } if spec.kind == PoolKind::Max),
    );
    let f32 = g
        .placeholders()
        .iter()
        .any(|p| g.node(*p).dtype == DType::F32);
    prop_assert!(!max_pool && !f32, "the draw gave what it must not");
    let last = *case.out.last().unwrap();
    let axes: Vec<Axis> = g.node(last).axes.iter().copied().collect();
    let n: usize = g.shape_of(&g.node(last).axes).unwrap().iter().product();
    let mut r = SplitMix(seed ^ 0x5eed);
    let weights: Vec<f64> = (0..n).map(|_| r.unit() - 0.5).collect();
    let wts = g
        .constant(
            None,
            &axes,
            DType::F64,
            weft::TensorInit::data(weft::ArrayData::F64(weights)),
        )
        .unwrap();
    let prod = g.multiply(last, wts).unwrap();
    let loss = g.sum(prod, &axes).unwrap();
    let ps = g.placeholders();
    let grads = g.grad(loss, &ps).unwrap();
    let t = Transformer::new(g.clone(), Backend::Interpreter).unwrap();
    let mut outs = vec![loss];
    outs.extend(&grads);
    let all = t.computation(&outs, &ps).unwrap();
    let f = t.computation(&[loss], &ps).unwrap();
    let xs = random_values(g, &ps, seed);
    let value = |c: &Computation, xs: &[HostArray]| -> Vec<Vec<f64>> {
        c.call(xs)
            .unwrap()
            .iter()
            .map(|a| a.to_vec::<f64>().unwrap())
            .collect()
    };
    let got = value(&all, &xs);
    let h = 1e-3;
    let mut elements = 0;
    for (k, _) in xs.iter().enumerate() {
        for (e, &ge) in got[1 + k].iter().enumerate() {
            let at = |delta: f64| {
                let mut moved = xs.clone();
                moved[k].as_mut_slice::<f64>().unwrap()[e] += delta;
                value(&f, &moved)[0][0]
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            prop_assert!(
                (ge - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "d loss / d {}[{e}]: grad {ge} vs central difference {fd}\n{}",
                g.node_label(ps[k]),
                weft_ir::text::print(g)
            );
            elements += 1;
        }
    }
    if elements == 0 {
        tally.skipped("no input element");
    } else {
        tally.compared();
    }
    Ok(())
}

#[test]
fn convolutions_and_pools_on_the_jit_match_the_interpreter() {
    run_property(
        "convolution::convolutions_and_pools_on_the_jit_match_the_interpreter",
        file!(),
        proptest_cases(64),
        1.0,
        any::<u64>(),
        |seed, tally| {
            check_jit(seed)?;
            tally.compared();
            Ok(())
        },
    );
}

#[test]
fn gradients_match_central_differences() {
    run_property(
        "convolution::gradients_match_central_differences",
        file!(),
        proptest_cases(64),
        1.0,
        any::<u64>(),
        check_gradients,
    );
}

#[test]
fn explain_says_how_each_convolution_and_pool_was_expanded() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/bench/workloads/conv.weft"
    ))
    .unwrap();
    let g = weft_ir::text::parse(&text, "conv.weft").unwrap();
    let plan = jit_common::explain(&g, &JitOptions::default());
    assert!(
        plan.contains("y: convolution over (N, F, H~R+pad(1,1), W~S+pad(1,1)): 9 filter taps as shifted matrix products"),
        "{plan}"
    );
    assert!(
        plan.contains("sum of taps computed by one GEMM call (taps never stored)"),
        "{plan}"
    );
    assert!(plan.contains("9 taps summed in C"), "{plan}");
    // A stride of 2 splits the padded axis into phases: still one GEMM call summing the
    // nine taps; a pool is a fold.
    let strided = text.replace("Width=(pad=(1, 1)))", "Width=(pad=(1, 1), stride=2))");
    let mut g = weft_ir::text::parse(&strided, "conv.weft").unwrap();
    let out = g.find("y").unwrap();
    let pool = PoolSpec::new(PoolKind::Avg).window(Role::Height, 2);
    let p = g.pool(out, &pool).unwrap();
    g.mark_output(p).unwrap();
    let plan = jit_common::explain(&g, &JitOptions::default());
    assert!(
        plan.contains("9 filter taps as shifted matrix products: the padded spatial axes (split into phases by a stride above 1)"),
        "{plan}"
    );
    assert!(plan.contains("W+pad(1,1)|within"), "{plan}");
    assert!(plan.contains("9 taps summed in C"), "{plan}");
    assert!(plan.contains("avg_pool over"), "{plan}");
}

#[test]
fn two_equal_convolutions_expand_once() {
    let mut g = Graph::new();
    let t = g.axis_with_roles("T", Some(6), vec![Role::Time]).unwrap();
    let c = g
        .axis_with_roles("C", Some(2), vec![Role::Channel])
        .unwrap();
    let k = g
        .axis_with_roles("K", Some(3), vec![Role::Channelout])
        .unwrap();
    let r = g.axis_with_roles("R", Some(2), vec![Role::Time]).unwrap();
    let x = g.placeholder("x", &[t, c], DType::F32).unwrap();
    let f = g.placeholder("f", &[k, c, r], DType::F32).unwrap();
    let a = g.convolution(x, f, &ConvSpec::new()).unwrap();
    let b = g.convolution(x, f, &ConvSpec::new()).unwrap();
    g.mark_output(a).unwrap();
    g.mark_output(b).unwrap();
    let plan = jit_common::explain(&g, &JitOptions::default());
    assert_eq!(plan.matches("filter taps as").count(), 1, "{plan}");
}

/// A padded convolution with a stride of 2 (ResNet's downsampling 3 × 3s and its 7 × 7 stem):
/// its taps read a strided view of the padded input, which the GEMM path can read only stored,
/// so the padded input is stored once and the taps run as one GEMM call — and the values are
/// the interpreter's.
#[test]
fn a_strided_padded_convolution_stores_its_padded_input_and_runs_on_the_gemm() {
    let text = "axis N = 2\naxis C = 32 : Channel\naxis H = 28 : Height\naxis W = 28 : Width\n\
        axis O = 64 : Channelout\naxis R = 3 : Height\naxis S = 3 : Width\n\
        placeholder x: f32[N, C, H, W]\nplaceholder w: f32[O, C, R, S]\n\
        y = convolution(x, w, Height=(stride=2, pad=(1, 1)), Width=(stride=2, pad=(1, 1)))\n\
        output y\n";
    let g = weft_ir::text::parse(text, "strided.weft").unwrap();
    let y = g.find("y").unwrap();
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&[y], &g.placeholders()).unwrap();
    let program = c.plan().expect("a JIT program");
    assert!(
        !program.gemms.is_empty(),
        "the taps run as GEMM calls:\n{}",
        program.steps_text()
    );
    let inputs = random_values(&g, &g.placeholders(), 7);
    let values = on_every_backend(&g, y, &inputs);
    for (b, v) in BACKENDS.iter().zip(&values).skip(1) {
        for (x, r) in v.iter().zip(&values[0]) {
            assert!((x - r).abs() <= 1e-4 * (1.0 + r.abs()), "{b:?}: {x} vs {r}");
        }
    }
}

/// A 1 × 1 convolution without padding or stride reads the input itself
/// (`ConvExpansion::Pointwise`): no padded copy, one GEMM-shaped dot. At a stride of 2 it
/// copies the one phase it reads (one GEMM call over every output position, not one per
/// output row). The values are the interpreter's.
#[test]
fn a_pointwise_convolution_reads_its_input_in_place() {
    for stride in [1, 2] {
        let text = format!(
            "axis N = 2\naxis C = 32 : Channel\naxis H = 12 : Height\naxis W = 12 : Width\n\
             axis O = 64 : Channelout\naxis R = 1 : Height\naxis S = 1 : Width\n\
             placeholder x: f32[N, C, H, W]\nplaceholder w: f32[O, C, R, S]\n\
             y = convolution(x, w, Height=(stride={stride}), Width=(stride={stride}))\noutput y\n"
        );
        let g = weft_ir::text::parse(&text, "pointwise.weft").unwrap();
        let plan = jit_common::explain(&g, &JitOptions::default());
        if stride == 1 {
            assert!(
                plan.contains("1 filter tap as one tap of a 1 × 1 filter"),
                "{plan}"
            );
            assert!(!plan.contains("flatten"), "no flattened copy:\n{plan}");
        } else {
            assert!(plan.contains("split into phases"), "{plan}");
            // One phase copied, no phase index left in the copy; one call of m = 6 · 6.
            assert!(!plan.contains("|within"), "{plan}");
            assert!(
                plan.contains("gemm %") && plan.contains(": m 36 n 64 k 32"),
                "{plan}"
            );
        }
        let y = g.find("y").unwrap();
        let inputs = random_values(&g, &g.placeholders(), 3);
        let values = on_every_backend(&g, y, &inputs);
        for (b, v) in BACKENDS.iter().zip(&values).skip(1) {
            for (x, r) in v.iter().zip(&values[0]) {
                assert!((x - r).abs() <= 1e-4 * (1.0 + r.abs()), "{b:?}: {x} vs {r}");
            }
        }
    }
}

/// A max pool with padding reads a `−inf`-padded input through every tap: stored once
/// (`StageReason::PaddedSeveral`), each tap then loads it plainly instead of choosing per lane
/// at the border; the values are the interpreter's.
#[test]
fn a_padded_max_pools_padded_input_is_stored_once() {
    let text = "axis N = 2\naxis C = 8 : Channel\naxis H = 20 : Height\naxis W = 20 : Width\n\
        placeholder x: f32[N, C, H, W]\nr = relu(x)\n\
        m = max_pool(r, Height=(window=3, stride=2, pad=(1, 1)), Width=(window=3, stride=2, pad=(1, 1)))\n\
        output m\n";
    let g = weft_ir::text::parse(text, "pool.weft").unwrap();
    let m = g.find("m").unwrap();
    let plan = weft_compiler::compile_plan(&g, &weft_compiler::PlanOptions::default()).unwrap();
    let padded = plan
        .fusion
        .groups
        .iter()
        .flat_map(|grp| &grp.stages)
        .any(|s| s.reason == weft_compiler::passes::groups::StageReason::PaddedSeveral);
    assert!(
        padded,
        "{:#?}",
        plan.fusion
            .groups
            .iter()
            .map(|g| &g.stages)
            .collect::<Vec<_>>()
    );
    let inputs = random_values(&g, &g.placeholders(), 5);
    let values = on_every_backend(&g, m, &inputs);
    for (b, v) in BACKENDS.iter().zip(&values).skip(1) {
        assert_eq!(v, &values[0], "{b:?}: a max pool is exact");
    }
}
