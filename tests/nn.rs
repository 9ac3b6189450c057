//! The training helpers (`weft::nn`, docs/training.md) on every backend: losses against values
//! computed by hand in Rust, numerical stability and one-hot encoding; the `assign` semantics
//! the optimizers rely on; each optimizer over several calls against a Rust reference of its
//! update rule, its state kept across calls; linear regression with SGD and a linear digits
//! classifier with Adam, gradients written by hand; the digits loader.

mod common;
mod jit_common;

use common::*;
use jit_common::{call_alternately, compare, random_inputs, references, run};
use weft::datasets::{digits, DIGITS_PIXELS};
use weft::ir::perturb::SplitMix;
use weft::prelude::*;
use weft::{GraphError, Op};

const BACKENDS: [Backend; 3] = [Backend::Interpreter, Backend::Jit, Backend::JitUnfused];

/// `calls` calls of `outputs` given `ps` on `backend` (alternately `call` and `call_into`,
/// tests/jit_common), each with the inputs `inputs(k)`, and the transformer for reading state.
fn calls(
    g: &Graph,
    backend: Backend,
    outputs: &[NodeId],
    ps: &[NodeId],
    n: usize,
    inputs: impl Fn(usize) -> Vec<HostArray>,
) -> (Transformer, Vec<Vec<HostArray>>) {
    let t = Transformer::new(g.clone(), backend).unwrap();
    let c = t.computation(outputs, ps).unwrap();
    let results = (0..n)
        .map(|k| call_alternately(&c, &inputs(k), k).unwrap())
        .collect();
    (t, results)
}

/// The floats of `a` as f64, whatever its float dtype.
fn floats(a: &HostArray) -> Vec<f64> {
    match a.dtype() {
        DType::F32 => f32s(a).into_iter().map(f64::from).collect(),
        _ => f64s(a),
    }
}

/// The relative tolerance a backend is held to for results of `dtype` computed the same way
/// as the reference (the JIT's exp/log/pow are within a few ulps, docs/numerics.md).
fn tol(dtype: DType) -> f64 {
    if dtype == DType::F32 {
        1e-5
    } else {
        1e-12
    }
}

/// An array of `dtype` from f64 values.
fn float_arr(axes: &[Axis], shape: &[usize], dtype: DType, v: &[f64]) -> HostArray {
    match dtype {
        DType::F32 => arr(axes, shape, v.iter().map(|x| *x as f32).collect()),
        _ => arr(axes, shape, v.to_vec()),
    }
}

/// Cross-entropy of one row by hand: log Σ exp(x − max) − (x[label] − max).
fn row_cross_entropy(row: &[f64], label: usize) -> f64 {
    let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let lse = row.iter().map(|x| (x - m).exp()).sum::<f64>().ln();
    lse - (row[label] - m)
}

// ---- losses -------------------------------------------------------------------------------

/// Softmax cross-entropy of `logits` (rows of `classes`) against `labels`, on every backend, in
/// f32 and f64, with the logits given over (C, B) so the class axis is not last.
fn check_cross_entropy(rows: &[Vec<f64>], labels: &[i64]) {
    let (nb, nc) = (rows.len(), rows[0].len());
    let want: f64 = rows
        .iter()
        .zip(labels)
        .map(|(r, &l)| row_cross_entropy(r, l as usize))
        .sum::<f64>()
        / nb as f64;
    for dtype in [DType::F64, DType::F32] {
        let mut g = Graph::new();
        let (b, c) = (g.axis("B", nb).unwrap(), g.axis("C", nc).unwrap());
        let logits = g.placeholder("logits", &[c, b], dtype).unwrap();
        let y = g.placeholder("labels", &[b], DType::I64).unwrap();
        let loss = nn::softmax_cross_entropy(&mut g, logits, y, c).unwrap();
        assert!(g.node(loss).axes.is_empty());
        let by_class: Vec<f64> = (0..nc)
            .flat_map(|j| rows.iter().map(move |r| r[j]))
            .collect();
        let inputs = vec![
            float_arr(&[c, b], &[nc, nb], dtype, &by_class),
            arr(&[b], &[nb], labels.to_vec()),
        ];
        for backend in BACKENDS {
            let (_, out) = calls(&g, backend, &[loss], &[logits, y], 2, |_| inputs.clone());
            for call in &out {
                let got = floats(&call[0]);
                assert!(got[0].is_finite(), "{backend:?} {dtype}: {got:?}");
                assert_close(&got, &[want], tol(dtype));
            }
        }
    }
}

#[test]
fn softmax_cross_entropy_matches_the_hand_computed_mean() {
    check_cross_entropy(
        &[
            vec![1.0, 2.0, 3.0, 0.5],
            vec![-1.0, 0.0, 0.25, 4.0],
            vec![0.0, 0.0, 0.0, 0.0],
        ],
        &[2, 0, 3],
    );
    // Uniform logits: log 4 exactly.
    let mut g = Graph::new();
    let (b, c) = (g.axis("B", 1).unwrap(), g.axis("C", 4).unwrap());
    let logits = g.placeholder("logits", &[b, c], DType::F64).unwrap();
    let y = g.placeholder("labels", &[b], DType::I32).unwrap();
    let loss = nn::softmax_cross_entropy(&mut g, logits, y, c).unwrap();
    let inputs = vec![
        arr(&[b, c], &[1, 4], vec![7.0; 4]),
        arr(&[b], &[1], vec![1i32]),
    ];
    for backend in BACKENDS {
        let (_, out) = calls(&g, backend, &[loss], &[logits, y], 1, |_| inputs.clone());
        assert_close(&f64s(&out[0][0]), &[4f64.ln()], 1e-15);
    }
}

#[test]
fn softmax_cross_entropy_does_not_overflow_on_large_logits() {
    // exp(1000) overflows f32 and f64; the loss subtracts each row's max first.
    check_cross_entropy(
        &[
            vec![1000.0, 1001.0, 999.0],
            vec![-1000.0, 1000.0, 0.0],
            vec![1000.0, 1000.0, 1000.0],
        ],
        &[1, 0, 2],
    );
    // A −∞ logit in another class contributes nothing (no 0·∞ = NaN).
    check_cross_entropy(&[vec![f64::NEG_INFINITY, 2.0, 1.0]], &[1]);
}

#[test]
fn one_hot_is_exact_and_labels_out_of_range_match_no_class() {
    for dtype in [DType::I32, DType::I64] {
        let mut g = Graph::new();
        let (b, c) = (g.axis("B", 6).unwrap(), g.axis("C", 4).unwrap());
        let y = g.placeholder("labels", &[b], dtype).unwrap();
        let oh = nn::one_hot(&mut g, y, c, DType::F32).unwrap();
        assert_eq!(g.node(oh).axes.as_slice(), &[b, c]);
        let labels = [2i64, 0, 3, 1, 4, -1];
        let input = match dtype {
            DType::I32 => arr(&[b], &[6], labels.iter().map(|l| *l as i32).collect()),
            _ => arr(&[b], &[6], labels.to_vec()),
        };
        let want: Vec<f32> = labels
            .iter()
            .flat_map(|&l| (0..4).map(move |j| if j == l { 1.0 } else { 0.0 }))
            .collect();
        for backend in BACKENDS {
            let (_, out) = calls(&g, backend, &[oh], &[y], 2, |_| vec![input.clone()]);
            for call in &out {
                assert_eq!(f32s(&call[0]), want, "{backend:?} {dtype}");
            }
        }
    }
}

#[test]
fn mean_squared_error_and_accuracy_match_by_hand() {
    let pred = [1.0, 2.0, -3.0, 0.5, 4.0, 0.0];
    let target = [0.5, 2.0, -1.0, 1.5, 1.0, -2.0];
    let want: f64 = pred
        .iter()
        .zip(&target)
        .map(|(p, t)| (p - t) * (p - t))
        .sum::<f64>()
        / 6.0;
    for dtype in [DType::F64, DType::F32] {
        let mut g = Graph::new();
        let (b, o) = (g.axis("B", 3).unwrap(), g.axis("O", 2).unwrap());
        let p = g.placeholder("pred", &[b, o], dtype).unwrap();
        let t = g.placeholder("target", &[o, b], dtype).unwrap();
        let mse = nn::mean_squared_error(&mut g, p, t).unwrap();
        // The target over (O, B): the same tensor transposed.
        let t_ob: Vec<f64> = (0..2)
            .flat_map(|j| (0..3).map(move |i| target[i * 2 + j]))
            .collect();
        let inputs = vec![
            float_arr(&[b, o], &[3, 2], dtype, &pred),
            float_arr(&[o, b], &[2, 3], dtype, &t_ob),
        ];
        for backend in BACKENDS {
            let (_, out) = calls(&g, backend, &[mse], &[p, t], 2, |_| inputs.clone());
            for call in &out {
                assert_close(&floats(&call[0]), &[want], tol(dtype));
            }
        }
    }
    // Accuracy: rows 0 and 2 right (row 2's tie goes to the first maximum, class 0).
    let mut g = Graph::new();
    let (b, c) = (g.axis("B", 4).unwrap(), g.axis("C", 3).unwrap());
    let logits = g.placeholder("logits", &[b, c], DType::F32).unwrap();
    let y = g.placeholder("labels", &[b], DType::I32).unwrap();
    let acc = nn::accuracy(&mut g, logits, y, c).unwrap();
    let inputs = vec![
        arr(
            &[b, c],
            &[4, 3],
            vec![
                0.1f32, 0.9, 0.0, 3.0, 1.0, 2.0, 5.0, 5.0, 1.0, 0.0, 0.0, 1.0,
            ],
        ),
        arr(&[b], &[4], vec![1i32, 2, 0, 0]),
    ];
    for backend in BACKENDS {
        let (_, out) = calls(&g, backend, &[acc], &[logits, y], 1, |_| inputs.clone());
        assert_eq!(f32s(&out[0][0]), vec![0.5], "{backend:?}");
    }
}

/// A whole training step — two dense layers, cross-entropy, accuracy, momentum on one layer and
/// Adam on the other (gradients as inputs) — on both JIT modes against the interpreter's
/// oracle (docs/testing.md), over three calls with the state; and the graph the helpers build
/// survives the text form.
#[test]
fn a_training_step_on_the_jit_matches_the_interpreter_oracle() {
    let mut g = Graph::new();
    let [b, i, h, c] = [("B", 5), ("I", 7), ("H", 6), ("C", 4)].map(|(n, l)| g.axis(n, l).unwrap());
    let x = g.placeholder("x", &[b, i], DType::F32).unwrap();
    let y = g.placeholder("y", &[b], DType::I64).unwrap();
    let l1 = nn::dense(&mut g, "l1", x, i, h, nn::Activation::Relu, nn::Init::he(1)).unwrap();
    let l2 = nn::dense(
        &mut g,
        "l2",
        l1.output,
        h,
        c,
        nn::Activation::Identity,
        nn::Init::glorot(2),
    )
    .unwrap();
    let ce = nn::softmax_cross_entropy(&mut g, l2.output, y, c).unwrap();
    let acc = nn::accuracy(&mut g, l2.output, y, c).unwrap();
    let mut grads = Vec::new();
    for v in l1.variables().into_iter().chain(l2.variables()) {
        let name = format!("grad_{}", g.node_label(v));
        let axes: Vec<Axis> = g.node(v).axes.iter().copied().collect();
        grads.push(g.placeholder(&name, &axes, DType::F32).unwrap());
    }
    let [w1, b1] = l1.variables();
    let [w2, b2] = l2.variables();
    let mom = nn::momentum(&mut g, &[(w1, grads[0]), (b1, grads[1])], 0.1, 0.9).unwrap();
    let adam = nn::adam(
        &mut g,
        &[(w2, grads[2]), (b2, grads[3])],
        &nn::Adam::default(),
    )
    .unwrap();
    let mut outputs = vec![ce, acc];
    outputs.extend(mom.assigns.iter().chain(&adam.assigns));
    let text = weft::ir::text::print(&g);
    assert_eq!(
        weft::ir::text::parse(&text, "nn.weft").unwrap(),
        g,
        "{text}"
    );

    let ps = g.placeholders();
    let tol = weft_oracle::Tolerance::for_graph(&g);
    for seed in [1, 2] {
        let inputs = random_inputs(&g, &ps, seed);
        let interp = references(&g, &outputs, &ps, &inputs, 3, &tol).unwrap();
        for backend in [Backend::Jit, Backend::JitUnfused] {
            let got = run(&g, &outputs, &ps, &inputs, 3, backend).unwrap();
            if let Err(m) = compare(&got, &interp, &tol) {
                panic!("{backend:?} differs: {m}\n{text}");
            }
        }
    }
}

// ---- the dense layer ------------------------------------------------------------------------

#[test]
fn dense_computes_its_affine_map_from_seeded_weights() {
    let build = |seed| {
        let mut g = Graph::new();
        let (b, i, o) = (
            g.axis("B", 2).unwrap(),
            g.axis("I", 3).unwrap(),
            g.axis("O", 4).unwrap(),
        );
        let x = g.placeholder("x", &[b, i], DType::F64).unwrap();
        let d = nn::dense(
            &mut g,
            "fc",
            x,
            i,
            o,
            nn::Activation::Tanh,
            nn::Init::he(seed),
        )
        .unwrap();
        assert_eq!(g.node(d.output).axes.as_slice(), &[b, o]);
        (g, [b, i, o], x, d)
    };
    let (g, [b, i, _], x, d) = build(11);
    let xs = [0.5, -1.0, 2.0, 1.5, 0.25, -0.75];
    let input = arr(&[b, i], &[2, 3], xs.to_vec());
    let init = |g: &Graph, id| match &g.node(id).op {
        Op::Tensor {
            init: Some(TensorInit::Data(d)),
            ..
        } => match &**d {
            ArrayData::F64(v) => v.clone(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    };
    let w = init(&g, d.weight);
    let limit = nn::Init::he(11).limit(3, 4);
    assert!(w.iter().all(|x| x.abs() < limit) && w.iter().any(|x| x.abs() > limit / 4.0));
    assert_ne!(w, init(&build(12).0, build(12).3.weight), "another seed");
    assert_eq!(w, init(&build(11).0, build(11).3.weight), "the same seed");
    let want: Vec<f64> = (0..2)
        .flat_map(|r| {
            let (w, xs) = (&w, &xs);
            (0..4).map(move |c| {
                (0..3)
                    .map(|k| xs[r * 3 + k] * w[k * 4 + c])
                    .sum::<f64>()
                    .tanh()
            })
        })
        .collect();
    for backend in BACKENDS {
        let (t, out) = calls(&g, backend, &[d.output], &[x], 1, |_| vec![input.clone()]);
        assert_close(&f64s(&out[0][0]), &want, 1e-12);
        assert_eq!(f64s(&t.value_of(d.bias).unwrap()), vec![0.0; 4]);
    }
}

// ---- assign semantics ---------------------------------------------------------------------

/// What the optimizers rely on: every read in a call sees the state from before the call, the
/// call's assigns are committed together after it (so two assigns can swap two tensors), an
/// assign evaluates to the new value, and the next call sees every new value.
#[test]
fn assigns_read_the_old_state_and_commit_together() {
    let mut g = Graph::new();
    let n = g.axis("N", 2).unwrap();
    let init = |v: Vec<f64>| Some(TensorInit::data(ArrayData::F64(v)));
    let a = g
        .persistent_tensor("a", &[n], DType::F64, init(vec![1., 2.]))
        .unwrap();
    let b = g
        .persistent_tensor("b", &[n], DType::F64, init(vec![10., 20.]))
        .unwrap();
    let a_gets_b = g.assign(a, b).unwrap();
    let b_gets_a = g.assign(b, a).unwrap();
    // Reads `a` (old) and the assign of `a` (new) in the same call.
    let diff = g.subtract(a_gets_b, a).unwrap();
    for backend in BACKENDS {
        let (t, out) = calls(&g, backend, &[diff, b_gets_a], &[], 3, |_| vec![]);
        assert_eq!(
            f64s(&out[0][0]),
            vec![9., 18.],
            "{backend:?}: new a − old a"
        );
        assert_eq!(
            f64s(&out[0][1]),
            vec![1., 2.],
            "{backend:?}: b gets the old a"
        );
        assert_eq!(
            f64s(&out[1][0]),
            vec![-9., -18.],
            "{backend:?}: swapped back"
        );
        // Three swaps: a and b exchanged.
        assert_eq!(f64s(&t.value_of(a).unwrap()), vec![10., 20.]);
        assert_eq!(f64s(&t.value_of(b).unwrap()), vec![1., 2.]);
    }
}

// ---- optimizers ---------------------------------------------------------------------------

/// A tiny problem: `w` over N = 3 from `w0`, the loss Σ cᵢ (wᵢ − τᵢ)², its gradient by hand
/// `2 c (w − τ)` computed in the graph from the old `w` of each call.
struct Quadratic {
    g: Graph,
    w: NodeId,
    grad: NodeId,
}

const W0: [f64; 3] = [1.0, -2.0, 0.5];
const C: [f64; 3] = [1.0, 0.25, 4.0];
const TARGET: [f64; 3] = [0.5, 1.0, -1.0];

fn quadratic(dtype: DType) -> Quadratic {
    let mut g = Graph::new();
    let n = g.axis("N", 3).unwrap();
    let data = |v: &[f64]| match dtype {
        DType::F32 => ArrayData::F32(v.iter().map(|x| *x as f32).collect()),
        _ => ArrayData::F64(v.to_vec()),
    };
    let w = g
        .variable("w", &[n], dtype, TensorInit::data(data(&W0)))
        .unwrap();
    let c = g
        .constant(None, &[n], dtype, TensorInit::data(data(&C)))
        .unwrap();
    let tau = g
        .constant(None, &[n], dtype, TensorInit::data(data(&TARGET)))
        .unwrap();
    let two = g.scalar(Scalar::Float(2.0), dtype).unwrap();
    let d = g.subtract(w, tau).unwrap();
    let cd = g.multiply(c, d).unwrap();
    let grad = g.multiply(two, cd).unwrap();
    Quadratic { g, w, grad }
}

/// The gradient of the quadratic at `w`, in the graph's order of operations and dtype.
fn quadratic_grad(w: &[f64], dtype: DType) -> Vec<f64> {
    let r = |x| round(x, dtype);
    (0..3)
        .map(|i| r(2.0 * r(C[i] * r(w[i] - TARGET[i]))))
        .collect()
}

/// `x` rounded to `dtype` (the reference computes each operation in the graph's dtype).
fn round(x: f64, dtype: DType) -> f64 {
    if dtype == DType::F32 {
        f64::from(x as f32)
    } else {
        x
    }
}

/// Runs `steps` of an optimizer built by `build` on the quadratic on every backend in f32 and
/// f64, and checks the variable after each call, and the state (by name) after the last,
/// against `reference` (which returns, per call, the new `w` and the named state).
fn check_optimizer(
    build: impl Fn(&mut Graph, NodeId, NodeId) -> Result<nn::Updates, GraphError>,
    reference: impl Fn(DType, usize) -> (Vec<Vec<f64>>, Vec<(&'static str, Vec<f64>)>),
) {
    const STEPS: usize = 6;
    for dtype in [DType::F64, DType::F32] {
        let Quadratic { mut g, w, grad } = quadratic(dtype);
        let upd = build(&mut g, w, grad).unwrap();
        let w_assign = *upd.assigns.last().unwrap();
        let (want_w, want_state) = reference(dtype, STEPS);
        for backend in BACKENDS {
            let (t, out) = calls(&g, backend, &upd.assigns, &[], STEPS, |_| vec![]);
            for (k, call) in out.iter().enumerate() {
                let got = floats(&call[upd.assigns.len() - 1]);
                assert_close(&got, &want_w[k], tol(dtype));
            }
            assert_close(
                &floats(&t.value_of(w).unwrap()),
                &want_w[STEPS - 1],
                tol(dtype),
            );
            for (name, want) in &want_state {
                let s = g.find(name).unwrap_or_else(|| panic!("no {name}"));
                let got = t.value_of(s).unwrap();
                let got = if got.dtype() == DType::I64 {
                    i64s(&got).into_iter().map(|x| x as f64).collect()
                } else {
                    floats(&got)
                };
                assert_close(&got, want, tol(dtype));
            }
            // The state persists: a computation asking only for the variable's assign (which
            // depends on its state's assigns) carries on from it — one more step.
            let (more_w, more_state) = reference(dtype, STEPS + 1);
            let c = t.computation(&[w_assign], &[]).unwrap();
            let got = c.call(NO_INPUTS).unwrap();
            assert_close(&floats(&got[0]), &more_w[STEPS], tol(dtype));
            for (name, want) in &more_state {
                let got = t.value_of(g.find(name).unwrap()).unwrap();
                if got.dtype() != DType::I64 {
                    assert_close(&floats(&got), want, tol(dtype));
                }
            }
        }
    }
}

#[test]
fn sgd_matches_its_update_rule() {
    let lr = 0.05;
    check_optimizer(
        |g, w, grad| nn::sgd(g, &[(w, grad)], lr),
        |dtype, steps| {
            let lr = round(lr, dtype);
            let mut w = W0.map(|x| round(x, dtype)).to_vec();
            let mut ws = Vec::new();
            for _ in 0..steps {
                let gr = quadratic_grad(&w, dtype);
                w = (0..3)
                    .map(|i| round(w[i] - round(lr * gr[i], dtype), dtype))
                    .collect();
                ws.push(w.clone());
            }
            (ws, vec![])
        },
    );
}

#[test]
fn momentum_matches_its_update_rule_and_keeps_its_velocity() {
    let (lr, mu) = (0.05, 0.9);
    check_optimizer(
        |g, w, grad| {
            let u = nn::momentum(g, &[(w, grad)], lr, mu)?;
            assert_eq!(u.state, vec![g.find("w_velocity").unwrap()]);
            Ok(u)
        },
        |dtype, steps| {
            let (lr, mu) = (round(lr, dtype), round(mu, dtype));
            let mut w = W0.map(|x| round(x, dtype)).to_vec();
            let mut v = vec![0.0; 3];
            let mut ws = Vec::new();
            for _ in 0..steps {
                let gr = quadratic_grad(&w, dtype);
                let r = |x| round(x, dtype);
                v = (0..3).map(|i| r(r(mu * v[i]) + gr[i])).collect();
                w = (0..3).map(|i| r(w[i] - r(lr * v[i]))).collect();
                ws.push(w.clone());
            }
            (ws, vec![("w_velocity", v)])
        },
    );
}

#[test]
fn adam_matches_its_update_rule_and_keeps_its_moments_and_step() {
    let hyper = nn::Adam {
        lr: 0.1,
        ..nn::Adam::default()
    };
    check_optimizer(
        |g, w, grad| nn::adam(g, &[(w, grad)], &hyper),
        |dtype, steps| {
            let r = |x| round(x, dtype);
            let (b1, b2, lr, eps) = (r(hyper.beta1), r(hyper.beta2), r(hyper.lr), r(hyper.eps));
            let (c1, c2) = (r(1.0 - hyper.beta1), r(1.0 - hyper.beta2));
            let mut w = W0.map(r).to_vec();
            let (mut m, mut v) = (vec![0.0; 3], vec![0.0; 3]);
            let mut ws = Vec::new();
            for t in 1..=steps {
                let gr = quadratic_grad(&w, dtype);
                m = (0..3).map(|i| r(r(b1 * m[i]) + r(c1 * gr[i]))).collect();
                v = (0..3)
                    .map(|i| r(r(b2 * v[i]) + r(c2 * r(gr[i] * gr[i]))))
                    .collect();
                let bc1 = r(1.0 - r(b1.powf(t as f64)));
                let bc2 = r(1.0 - r(b2.powf(t as f64)));
                w = (0..3)
                    .map(|i| {
                        let (mh, vh) = (r(m[i] / bc1), r(v[i] / bc2));
                        r(w[i] - r(lr * r(mh / r(r(vh.sqrt()) + eps))))
                    })
                    .collect();
                ws.push(w.clone());
            }
            let state = vec![
                ("w_adam_m", m),
                ("w_adam_v", v),
                ("w_adam_step", vec![steps as f64]),
            ];
            (ws, state)
        },
    );
}

#[test]
fn bad_helper_arguments_are_typed_errors_naming_what_is_at_fault() {
    let mut g = Graph::new();
    let (b, c, unbound) = (
        g.axis("B", 2).unwrap(),
        g.axis("C", 3).unwrap(),
        g.axis_unbound("K").unwrap(),
    );
    let logits = g.placeholder("logits", &[b, c], DType::F32).unwrap();
    let flabels = g.placeholder("flabels", &[b], DType::F32).unwrap();
    let wide = g.placeholder("wide", &[b, c], DType::I64).unwrap();
    let other = g.placeholder("other", &[c], DType::I64).unwrap();
    let ilogits = g.placeholder("ilogits", &[b, c], DType::I32).unwrap();
    let labels = g.placeholder("labels", &[b], DType::I64).unwrap();
    let msg = |e: GraphError| e.to_string();
    let e = nn::softmax_cross_entropy(&mut g, logits, flabels, c).unwrap_err();
    assert!(matches!(e, GraphError::UnsupportedDType { .. }) && msg(e).contains("flabels"));
    let e = nn::softmax_cross_entropy(&mut g, logits, wide, c).unwrap_err();
    assert!(msg(e).contains("hold the class axis `C`"));
    let e = nn::softmax_cross_entropy(&mut g, logits, other, c).unwrap_err();
    assert!(matches!(e, GraphError::Axes { .. }) && msg(e).contains("`other`"));
    let e = nn::softmax_cross_entropy(&mut g, ilogits, labels, c).unwrap_err();
    assert!(matches!(e, GraphError::UnsupportedDType { .. }));
    let e = nn::log_softmax(&mut g, logits, unbound).unwrap_err();
    assert!(msg(e).contains("axis `K` is not an axis of `logits`"));
    assert!(matches!(
        nn::iota(&mut g, unbound, DType::I64),
        Err(GraphError::UnboundAxis { .. })
    ));
    assert!(nn::iota(&mut g, c, DType::Bool).is_err());
    let e = nn::mean_squared_error(&mut g, logits, flabels).unwrap_err();
    assert!(msg(e).contains("the prediction's axes (B, C) and the target's (B) differ"));

    let x = g.placeholder("x", &[b, c], DType::F32).unwrap();
    let e = nn::dense(&mut g, "d", x, c, b, nn::Activation::Relu, nn::Init::he(0)).unwrap_err();
    assert!(msg(e).contains("output axis `B` must be new"));
    let e = nn::dense(
        &mut g,
        "d",
        x,
        c,
        unbound,
        nn::Activation::Relu,
        nn::Init::he(0),
    );
    assert!(matches!(e, Err(GraphError::UnboundAxis { .. })));
    let h = g.axis("H", 2).unwrap();
    nn::dense(&mut g, "d", x, c, h, nn::Activation::Relu, nn::Init::he(0)).unwrap();
    let h2 = g.axis("H2", 2).unwrap();
    let e = nn::dense(&mut g, "d", x, c, h2, nn::Activation::Relu, nn::Init::he(0)).unwrap_err();
    assert_eq!(e, GraphError::NameTaken("d_w".into()));

    let w = g
        .variable("w", &[c], DType::F32, TensorInit::Fill(Scalar::Float(0.0)))
        .unwrap();
    let gw = g.placeholder("gw", &[c], DType::F32).unwrap();
    let gb = g.placeholder("gb", &[b], DType::F32).unwrap();
    let g64 = g.placeholder("g64", &[c], DType::F64).unwrap();
    let e = nn::sgd(&mut g, &[(x, gw)], 0.1).unwrap_err();
    assert!(msg(e).contains("`x` is a placeholder, not a variable"));
    let e = nn::sgd(&mut g, &[(w, gb)], 0.1).unwrap_err();
    assert!(msg(e).contains("the gradient `gb` has axes (B) but its variable `w` has (C)"));
    let e = nn::momentum(&mut g, &[(w, g64)], 0.1, 0.9).unwrap_err();
    assert!(matches!(e, GraphError::DTypeMismatch { .. }));
    let e = nn::sgd(&mut g, &[(w, gw), (w, gw)], 0.1).unwrap_err();
    assert!(msg(e).contains("listed twice"));
    let e = nn::momentum(&mut g, &[(w, gw)], 0.1, 1.0).unwrap_err();
    assert!(msg(e).contains("mu = 1: it must be in [0, 1)"));
    let e = nn::sgd(&mut g, &[(w, gw)], -1.0).unwrap_err();
    assert!(msg(e).contains("lr = -1"));
    let eps = nn::Adam {
        eps: 0.0,
        ..nn::Adam::default()
    };
    assert!(msg(nn::adam(&mut g, &[(w, gw)], &eps).unwrap_err()).contains("eps = 0"));
    nn::momentum(&mut g, &[(w, gw)], 0.1, 0.5).unwrap();
    let e = nn::momentum(&mut g, &[(w, gw)], 0.1, 0.5).unwrap_err();
    assert_eq!(e, GraphError::NameTaken("w_velocity".into()));
}

// ---- end to end ---------------------------------------------------------------------------

/// Linear regression, `pred = X·w + b`, the MSE's gradient by hand (`2/n · Xᵀ(pred − y)` and
/// `2/n · Σ(pred − y)`), SGD: converges to the generating weights on the JIT and the
/// interpreter.
#[test]
fn linear_regression_with_sgd_converges() {
    const N: usize = 32;
    let true_w = [1.5, -2.0, 0.5];
    let true_b = 0.25;
    let mut rng = SplitMix(5);
    let xs: Vec<f64> = (0..N * 3).map(|_| rng.unit()).collect();
    let ys: Vec<f64> = (0..N)
        .map(|i| (0..3).map(|k| xs[i * 3 + k] * true_w[k]).sum::<f64>() + true_b)
        .collect();

    let mut g = Graph::new();
    let (bn, f) = (g.axis("B", N).unwrap(), g.axis("F", 3).unwrap());
    let x = g.placeholder("x", &[bn, f], DType::F64).unwrap();
    let y = g.placeholder("y", &[bn], DType::F64).unwrap();
    let zero = || TensorInit::Fill(Scalar::Float(0.0));
    let w = g.variable("w", &[f], DType::F64, zero()).unwrap();
    let b = g.variable("b", &[], DType::F64, zero()).unwrap();
    let xw = g.dot(x, w).unwrap();
    let pred = g.add(xw, b).unwrap();
    let loss = nn::mean_squared_error(&mut g, pred, y).unwrap();
    let resid = g.subtract(pred, y).unwrap();
    let scale = g.scalar(Scalar::Float(2.0 / N as f64), DType::F64).unwrap();
    let xr = g.dot(resid, x).unwrap(); // contracts B: Xᵀ(pred − y) over F
    let gw = g.multiply(scale, xr).unwrap();
    let rs = g.sum(resid, &[bn]).unwrap();
    let gb = g.multiply(scale, rs).unwrap();
    let upd = nn::sgd(&mut g, &[(w, gw), (b, gb)], 0.2).unwrap();
    let mut outputs = vec![loss];
    outputs.extend(&upd.assigns);

    let inputs = vec![arr(&[bn, f], &[N, 3], xs), arr(&[bn], &[N], ys)];
    for backend in [Backend::Jit, Backend::Interpreter] {
        let (t, out) = calls(&g, backend, &outputs, &[x, y], 300, |_| inputs.clone());
        let losses: Vec<f64> = out.iter().map(|o| f64s(&o[0])[0]).collect();
        assert!(
            losses[0] > 1.0,
            "{backend:?}: starts far off ({})",
            losses[0]
        );
        let rises = |p: &[f64]| p[1] > p[0] * (1.0 + 1e-9) + 1e-20;
        assert!(
            !losses.windows(2).any(rises),
            "{backend:?}: the loss never rises"
        );
        assert!(
            losses[299] < 1e-8,
            "{backend:?}: converged ({})",
            losses[299]
        );
        assert_close(&f64s(&t.value_of(w).unwrap()), &true_w, 1e-4);
        assert_close(&f64s(&t.value_of(b).unwrap()), &[true_b], 1e-4);
    }
}

/// A linear softmax classifier on the digits (a dense layer, softmax cross-entropy, its
/// gradient by hand: `(softmax − onehot) / n` back through the layer) trained with Adam on the
/// training split reaches over 90% accuracy on the held-out split, on the JIT.
#[test]
fn a_linear_classifier_learns_the_digits_with_adam() {
    let (train, test) = digits().unwrap().split(0.25, 1).unwrap();
    let mut g = Graph::new();
    let (bn, p, c) = (
        g.axis_unbound("B").unwrap(),
        g.axis("P", DIGITS_PIXELS).unwrap(),
        g.axis("C", 10).unwrap(),
    );
    let x = g.placeholder("x", &[bn, p], DType::F32).unwrap();
    let y = g.placeholder("y", &[bn], DType::I64).unwrap();
    let fc = nn::dense(
        &mut g,
        "fc",
        x,
        p,
        c,
        nn::Activation::Identity,
        nn::Init::glorot(3),
    )
    .unwrap();
    let loss = nn::softmax_cross_entropy(&mut g, fc.output, y, c).unwrap();
    let acc = nn::accuracy(&mut g, fc.output, y, c).unwrap();
    // d loss / d logits = (softmax − onehot) / n, n the batch length.
    let ls = nn::log_softmax(&mut g, fc.output, c).unwrap();
    let sm = g.exp(ls).unwrap();
    let oh = nn::one_hot(&mut g, y, c, DType::F32).unwrap();
    let diff = g.subtract(sm, oh).unwrap();
    // The batch length is bound at call time, so the 1/n is a mean over B.
    let xd = g.multiply(x, diff).unwrap(); // (B, P, C)
    let gw = g.mean(xd, &[bn]).unwrap();
    let gb = g.mean(diff, &[bn]).unwrap();
    let hyper = nn::Adam {
        lr: 0.02,
        ..nn::Adam::default()
    };
    let upd = nn::adam(&mut g, &[(fc.weight, gw), (fc.bias, gb)], &hyper).unwrap();
    let t = Transformer::new(g, Backend::Jit).unwrap();
    let mut outputs = vec![loss];
    outputs.extend(&upd.assigns);
    let step = t.computation(&outputs, &[x, y]).unwrap();
    let eval = t.computation(&[acc, loss], &[x, y]).unwrap();
    let (tx, ty) = (
        train.images_array(bn, p).unwrap(),
        train.labels_array(bn).unwrap(),
    );
    let (vx, vy) = (
        test.images_array(bn, p).unwrap(),
        test.labels_array(bn).unwrap(),
    );
    let before = eval.call(&[&vx, &vy]).unwrap();
    let mut losses = Vec::new();
    for _ in 0..100 {
        losses.push(f32s(&step.call(&[&tx, &ty]).unwrap()[0])[0]);
    }
    let after = eval.call(&[&vx, &vy]).unwrap();
    assert!(
        losses[99] < losses[0] / 4.0,
        "training loss {} → {}",
        losses[0],
        losses[99]
    );
    let (acc0, acc1) = (f32s(&before[0])[0], f32s(&after[0])[0]);
    assert!(acc0 < 0.5 && acc1 > 0.9, "test accuracy {acc0} → {acc1}");
}

// ---- the digits data set ------------------------------------------------------------------

#[test]
fn the_digits_load_with_their_known_counts_and_pixels() {
    let d = digits().unwrap();
    assert_eq!(d.len(), 1797);
    assert_eq!(d.images().len(), 1797 * 64);
    assert_eq!(
        d.class_counts(),
        [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    );
    // The file's first row, a 0: pixels 0..=16 scaled by 1/16.
    let first: [u8; 64] = [
        0, 0, 5, 13, 9, 1, 0, 0, 0, 0, 13, 15, 10, 15, 5, 0, 0, 3, 15, 2, 0, 11, 8, 0, 0, 4, 12, 0,
        0, 8, 8, 0, 0, 5, 8, 0, 0, 9, 8, 0, 0, 4, 11, 0, 1, 12, 7, 0, 0, 2, 14, 5, 10, 12, 0, 0, 0,
        0, 6, 13, 10, 0, 0, 0,
    ];
    let want: Vec<f32> = first.iter().map(|p| f32::from(*p) / 16.0).collect();
    assert_eq!(d.image(0).unwrap(), &want[..]);
    assert_eq!(&d.labels()[..10], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert!(d.images().iter().all(|p| (0.0..=1.0).contains(p)));
    assert!(d.images().contains(&1.0) && d.image(1797).is_none());
    assert_eq!(d, digits().unwrap(), "the same data every time");
}

#[test]
fn the_digits_split_is_a_deterministic_partition() {
    let d = digits().unwrap();
    let (train, test) = d.split(0.2, 9).unwrap();
    assert_eq!((train.len(), test.len()), (1438, 359));
    assert_eq!(d.split(0.2, 9).unwrap(), (train.clone(), test.clone()));
    assert_ne!(
        d.split(0.2, 10).unwrap().1,
        test,
        "another seed, another split"
    );
    // Every image lands on exactly one side: the class counts add up, and so do the pixels.
    let (a, b) = (train.class_counts(), test.class_counts());
    let sum: Vec<usize> = a.iter().zip(&b).map(|(x, y)| x + y).collect();
    assert_eq!(sum, d.class_counts().to_vec());
    let total = |x: &weft::datasets::Digits| x.images().iter().map(|p| f64::from(*p)).sum::<f64>();
    assert!((total(&train) + total(&test) - total(&d)).abs() < 1e-6);
    assert_eq!(d.split(0.0, 1).unwrap().1.len(), 0);
    assert_eq!(d.split(1.0, 1).unwrap().0.len(), 0);
    for bad in [-0.1, 1.1, f64::NAN] {
        let e = d.split(bad, 1).unwrap_err();
        assert!(
            e.to_string().contains("data set `digits`: test fraction"),
            "{e}"
        );
    }
    let e = d.subset(&[0, 5000]).unwrap_err();
    assert!(e
        .to_string()
        .contains("index 5000 is past the end (1797 images)"));
}
