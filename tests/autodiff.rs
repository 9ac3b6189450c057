//! `Graph::grad` on fixed cases against hand-derived values (d/dx Σx² = 2x, softmax
//! cross-entropy = softmax − onehot, layernorm, dots with dual axes, max with ties, prod with
//! zeros, every view), the errors it gives, the shape of what it builds (exact axes, a dot's
//! gradient a dot, sums of products kept), its text form, and the backward graphs on the JIT,
//! fused and unfused, against the interpreter (docs/autodiff.md, docs/testing.md).

mod common;
mod jit_common;

use common::{assert_close, f64s};
use jit_common::{compare, references, run};
use weft::prelude::*;
use weft::{GraphError, Op, ReduceOp};

/// Runs `outputs` of `g` on the interpreter with `inputs` for `ps`, as f64s.
fn eval(g: &Graph, outputs: &[NodeId], ps: &[NodeId], inputs: &[HostArray]) -> Vec<Vec<f64>> {
    let t = Transformer::new(g.clone(), Backend::Interpreter).expect("transformer");
    let c = t.computation(outputs, ps).expect("computation");
    c.call(inputs)
        .expect("call")
        .iter()
        .map(|a| match a.dtype() {
            DType::F32 => a
                .to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect(),
            _ => f64s(a),
        })
        .collect()
}

fn arr(axes: &[Axis], shape: &[usize], data: Vec<f64>) -> HostArray {
    common::arr(axes, shape, data)
}

/// Every gradient has exactly its wrt node's axes and dtype, and the graph verifies.
fn check_shapes(g: &Graph, wrt: &[NodeId], grads: &[NodeId]) {
    g.verify().expect("the graph with its gradients verifies");
    for (w, d) in wrt.iter().zip(grads) {
        assert_eq!(g.node(*d).axes, g.node(*w).axes, "axes of the gradient");
        assert_eq!(g.node(*d).dtype, g.node(*w).dtype, "dtype of the gradient");
    }
}

#[test]
fn sum_of_squares_has_gradient_two_x() {
    let b = GraphBuilder::new();
    let n = b.axis("N", 4).unwrap();
    let x = b.placeholder("x", &[n], DType::F64).unwrap();
    let loss = x.square().unwrap().sum(&[n]).unwrap();
    let dx = loss.grad(&[x]).unwrap()[0];
    let (x, dx) = (x.id(), dx.id());
    let g = b.finish();
    check_shapes(&g, &[x], &[dx]);
    let xs = vec![1.0, -2.0, 0.5, 3.0];
    let got = eval(&g, &[dx], &[x], &[arr(&[n], &[4], xs.clone())]);
    assert_eq!(got[0], xs.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
}

/// `grad_stopping` holds a stopped node constant: d/dx Σ x·s(x) with s = x stopped is s, not 2x,
/// and stopping a node off the path changes nothing.
#[test]
fn a_stopped_node_carries_no_gradient() {
    let mut g = Graph::new();
    let n = g.axis("N", 3).unwrap();
    let x = g.placeholder("x", &[n], DType::F64).unwrap();
    let one = g.scalar(weft::Scalar::Float(1.0), DType::F64).unwrap();
    let stopped = g.binary(weft::BinaryOp::Multiply, x, one).unwrap();
    let prod = g.binary(weft::BinaryOp::Multiply, x, stopped).unwrap();
    let loss = g.reduce(ReduceOp::Sum, prod, &[n], None).unwrap();
    let free = g.grad(loss, &[x]).unwrap()[0];
    let held = g.grad_stopping(loss, &[x], &[stopped]).unwrap()[0];
    let off_path = g.grad_stopping(loss, &[x], &[one]).unwrap()[0];
    check_shapes(&g, &[x, x, x], &[free, held, off_path]);
    let xs = vec![1.0, -2.0, 0.5];
    let got = eval(
        &g,
        &[free, held, off_path],
        &[x],
        &[arr(&[n], &[3], xs.clone())],
    );
    assert_eq!(got[0], xs.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    assert_eq!(got[1], xs);
    assert_eq!(got[2], got[0]);
}

#[test]
fn softmax_cross_entropy_gradient_is_softmax_minus_onehot() {
    let b = GraphBuilder::new();
    let (bb, c) = (b.axis("B", 2).unwrap(), b.axis("C", 3).unwrap());
    let z = b.placeholder("z", &[bb, c], DType::F64).unwrap();
    let y = b.placeholder("y", &[bb, c], DType::F64).unwrap();
    let m = z.max(&[c]).unwrap();
    let shifted = (z - m).unwrap();
    let lse = shifted.exp().unwrap().sum(&[c]).unwrap().log().unwrap();
    let logp = (shifted - lse).unwrap();
    let loss = (y * logp)
        .unwrap()
        .sum(&[bb, c])
        .unwrap()
        .negative()
        .unwrap();
    let grads = b.grad(loss, &[z]).unwrap();
    let (zi, yi, dz) = (z.id(), y.id(), grads[0].id());
    let g = b.finish();
    check_shapes(&g, &[zi], &[dz]);
    let zs = vec![1.0, 2.0, 3.0, -1.0, 0.5, 0.5];
    let ys = vec![0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
    let got = eval(
        &g,
        &[dz],
        &[zi, yi],
        &[
            arr(&[bb, c], &[2, 3], zs.clone()),
            arr(&[bb, c], &[2, 3], ys.clone()),
        ],
    );
    let mut want = Vec::new();
    for r in 0..2 {
        let row = &zs[3 * r..3 * r + 3];
        let s: f64 = row.iter().map(|v| v.exp()).sum();
        for k in 0..3 {
            want.push(row[k].exp() / s - ys[3 * r + k]);
        }
    }
    assert_close(&got[0], &want, 1e-12);
}

#[test]
fn layernorm_gradient_matches_the_closed_form() {
    // y = (x − μ)/σ over C, loss = Σ y·w: dx = (w − mean(w) − y·mean(w·y))/σ per row.
    let b = GraphBuilder::new();
    let (r, c) = (b.axis("R", 2).unwrap(), b.axis("C", 4).unwrap());
    let x = b.placeholder("x", &[r, c], DType::F64).unwrap();
    let w = b.placeholder("w", &[r, c], DType::F64).unwrap();
    let centred = (x - x.mean(&[c]).unwrap()).unwrap();
    let var = centred.square().unwrap().mean(&[c]).unwrap();
    let y = (centred / var.sqrt().unwrap()).unwrap();
    let loss = (y * w).unwrap().sum(&[r, c]).unwrap();
    let dx = loss.grad(&[x]).unwrap()[0];
    let (xi, wi, dx) = (x.id(), w.id(), dx.id());
    let g = b.finish();
    check_shapes(&g, &[xi], &[dx]);
    let xs = vec![1.0, 2.0, 4.0, 7.0, -1.0, 0.5, 0.25, 3.0];
    let ws = vec![0.3, -1.0, 2.0, 0.5, 1.5, 0.1, -0.7, 0.2];
    let got = eval(
        &g,
        &[dx],
        &[xi, wi],
        &[
            arr(&[r, c], &[2, 4], xs.clone()),
            arr(&[r, c], &[2, 4], ws.clone()),
        ],
    );
    let mut want = Vec::new();
    for row in 0..2 {
        let xr = &xs[4 * row..4 * row + 4];
        let wr = &ws[4 * row..4 * row + 4];
        let mu = xr.iter().sum::<f64>() / 4.0;
        let sigma = (xr.iter().map(|v| (v - mu).powi(2)).sum::<f64>() / 4.0).sqrt();
        let yr: Vec<f64> = xr.iter().map(|v| (v - mu) / sigma).collect();
        let mw = wr.iter().sum::<f64>() / 4.0;
        let mwy = wr.iter().zip(&yr).map(|(a, b)| a * b).sum::<f64>() / 4.0;
        for k in 0..4 {
            want.push((wr[k] - mw - yr[k] * mwy) / sigma);
        }
    }
    assert_close(&got[0], &want, 1e-12);
}

#[test]
fn l2_norm_through_a_dual_axis_dot() {
    // s = dot(tᵀ, t) with t = x − y: N* contracted with N. ds/dx = 2t, ds/dy = −2t.
    let b = GraphBuilder::new();
    let n = b.axis("N", 3).unwrap();
    let x = b.placeholder("x", &[n], DType::F64).unwrap();
    let y = b.placeholder("y", &[n], DType::F64).unwrap();
    let t = (x - y).unwrap();
    let s = t.transpose().unwrap().dot(t).unwrap();
    let grads = s.grad(&[x, y]).unwrap();
    let ids = [x.id(), y.id()];
    let ds = [grads[0].id(), grads[1].id()];
    let g = b.finish();
    check_shapes(&g, &ids, &ds);
    let (xs, ys) = (vec![1.0, 2.0, 3.0], vec![0.5, -1.0, 4.0]);
    let got = eval(
        &g,
        &ds,
        &ids,
        &[arr(&[n], &[3], xs.clone()), arr(&[n], &[3], ys.clone())],
    );
    let t: Vec<f64> = xs.iter().zip(&ys).map(|(a, b)| a - b).collect();
    assert_eq!(got[0], t.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
    assert_eq!(got[1], t.iter().map(|v| -2.0 * v).collect::<Vec<_>>());
}

#[test]
fn a_dots_gradients_are_dots_with_the_operands_axes() {
    // loss = Σ dot(X[B, I], W[O*, I*]ᵀ…) written with a dual pair: X's I against W's I*.
    let mut g = Graph::new();
    let (bb, i, o) = (
        g.axis("B", 2).unwrap(),
        g.axis("I", 3).unwrap(),
        g.axis("O", 2).unwrap(),
    );
    let x = g.placeholder("X", &[bb, i.dual()], DType::F64).unwrap();
    let w = g.placeholder("W", &[o, i], DType::F64).unwrap();
    let h = g.dot(x, w).unwrap(); // X's I* pairs with W's I: h over (B, O)
    assert_eq!(g.node(h).axes.as_slice(), &[bb, o]);
    let gw = g.placeholder("G", &[bb, o], DType::F64).unwrap();
    let p = g.multiply(h, gw).unwrap();
    let loss = g.sum(p, &[bb, o]).unwrap();
    let d = g.grad(loss, &[x, w]).unwrap();
    check_shapes(&g, &[x, w], &d);
    for id in &d {
        let dot = g
            .nodes()
            .any(|(k, n)| matches!(n.op, Op::Dot(..)) && k.as_u32() > loss.as_u32());
        assert!(dot, "the gradient {id} is computed by a dot");
    }
    let xs = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let ws = vec![0.5, -1.0, 2.0, 1.0, 0.0, -0.5];
    let gs = vec![1.0, -2.0, 0.5, 3.0];
    let got = eval(
        &g,
        &d,
        &[x, w, gw],
        &[
            arr(&[bb, i.dual()], &[2, 3], xs.clone()),
            arr(&[o, i], &[2, 3], ws.clone()),
            arr(&[bb, o], &[2, 2], gs.clone()),
        ],
    );
    // dX[b, i] = Σ_o G[b, o] W[o, i]; dW[o, i] = Σ_b G[b, o] X[b, i].
    let mut dx = vec![0.0; 6];
    let mut dw = vec![0.0; 6];
    for b_ in 0..2 {
        for o_ in 0..2 {
            for i_ in 0..3 {
                dx[3 * b_ + i_] += gs[2 * b_ + o_] * ws[3 * o_ + i_];
                dw[3 * o_ + i_] += gs[2 * b_ + o_] * xs[3 * b_ + i_];
            }
        }
    }
    assert_close(&got[0], &dx, 1e-14);
    assert_close(&got[1], &dw, 1e-14);
}

#[test]
fn the_gradient_of_a_sum_of_products_is_a_sum_of_products() {
    let b = GraphBuilder::new();
    let (m, k, n) = (
        b.axis("M", 2).unwrap(),
        b.axis("K", 3).unwrap(),
        b.axis("N", 4).unwrap(),
    );
    let a = b.placeholder("a", &[m, k], DType::F32).unwrap();
    let w = b.placeholder("w", &[k, n], DType::F32).unwrap();
    let c = a.multiply(w).unwrap().sum(&[k]).unwrap();
    let loss = c.square().unwrap().sum(&[m, n]).unwrap();
    let before = b.graph().len();
    let d = loss.grad(&[a, w]).unwrap();
    let (ai, wi, da, dw, ci) = (a.id(), w.id(), d[0].id(), d[1].id(), c.id());
    let g = b.finish();
    assert!(g.sum_of_products(ci).is_some());
    check_shapes(&g, &[ai, wi], &[da, dw]);
    let contractions = g
        .nodes()
        .skip(before)
        .filter(|(id, _)| g.sum_of_products(*id).is_some())
        .count();
    assert_eq!(contractions, 2, "{}", weft::ir::text::print(&g));
}

#[test]
fn max_shares_its_gradient_among_ties_and_maximum_splits_a_tie() {
    let b = GraphBuilder::new();
    let n = b.axis("N", 4).unwrap();
    let x = b.placeholder("x", &[n], DType::F64).unwrap();
    let y = b.placeholder("y", &[n], DType::F64).unwrap();
    let l1 = x.max(&[n]).unwrap();
    let l2 = x.maximum(y).unwrap().sum(&[n]).unwrap();
    let l3 = x.min(&[n]).unwrap();
    let dmax = l1.grad(&[x]).unwrap()[0].id();
    let dm = b.grad(l2, &[x, y]).unwrap();
    let dmin = l3.grad(&[x]).unwrap()[0].id();
    let (xi, yi, dmx, dmy) = (x.id(), y.id(), dm[0].id(), dm[1].id());
    let g = b.finish();
    let got = eval(
        &g,
        &[dmax, dmx, dmy, dmin],
        &[xi, yi],
        &[
            arr(&[n], &[4], vec![1.0, 3.0, 3.0, 1.0]),
            arr(&[n], &[4], vec![0.0, 3.0, 5.0, 1.0]),
        ],
    );
    assert_eq!(got[0], vec![0.0, 0.5, 0.5, 0.0]);
    assert_eq!(got[1], vec![1.0, 0.5, 0.0, 0.5]);
    assert_eq!(got[2], vec![0.0, 0.5, 1.0, 0.5]);
    assert_eq!(got[3], vec![0.5, 0.0, 0.0, 0.5]);
}

#[test]
fn prod_is_exact_with_zeros() {
    let b = GraphBuilder::new();
    let n = b.axis("N", 3).unwrap();
    let x = b.placeholder("x", &[n], DType::F64).unwrap();
    let loss = x.prod(&[n]).unwrap();
    let dx = loss.grad(&[x]).unwrap()[0].id();
    let xi = x.id();
    let g = b.finish();
    for (xs, want) in [
        (vec![2.0, 3.0, 4.0], vec![12.0, 8.0, 6.0]),
        (vec![2.0, 0.0, 4.0], vec![0.0, 8.0, 0.0]),
        (vec![0.0, 0.0, 4.0], vec![0.0, 0.0, 0.0]),
        (vec![-1.5, 2.0, 0.5], vec![1.0, -0.75, -3.0]),
    ] {
        let got = eval(&g, &[dx], &[xi], &[arr(&[n], &[3], xs)]);
        assert_eq!(got[0], want);
    }
}

#[test]
fn elementwise_rules_at_fixed_points() {
    // One loss per op, Σ f(x): the gradient is f'(x) elementwise.
    let xs = vec![0.5, 1.25, 2.0];
    type Case = (&'static str, fn(f64) -> f64);
    let cases: [Case; 12] = [
        ("exp", f64::exp),
        ("log", |x| 1.0 / x),
        ("sqrt", |x| 0.5 / x.sqrt()),
        ("square", |x| 2.0 * x),
        ("reciprocal", |x| -1.0 / (x * x)),
        ("tanh", |x| 1.0 - x.tanh().powi(2)),
        ("sigmoid", |x| {
            let s = 1.0 / (1.0 + (-x).exp());
            s * (1.0 - s)
        }),
        ("sin", f64::cos),
        ("cos", |x| -x.sin()),
        ("negative", |_| -1.0),
        ("abs", |_| 1.0),
        ("relu", |_| 1.0),
    ];
    for (name, d) in cases {
        let src = format!(
            "axis N = 3\nplaceholder x: f64[N]\ny = {name}(x)\nl = sum(y, [N])\ndx = grad(l, x)\n"
        );
        let g = weft::ir::text::parse(&src, "t.weft").unwrap();
        let (x, dx) = (g.find("x").unwrap(), g.find("dx").unwrap());
        let n = g.node(x).axes[0];
        let got = eval(&g, &[dx], &[x], &[arr(&[n], &[3], xs.clone())]);
        let want: Vec<f64> = xs.iter().map(|v| d(*v)).collect();
        assert_close(&got[0], &want, 1e-14);
    }
}

#[test]
fn kinks_follow_the_documented_conventions() {
    // relu'(0) = 0, abs'(0) = 0, sign' = 0, and x^y at x ≤ 0 has no gradient in y.
    let src = "axis N = 3\nplaceholder x: f64[N]\nplaceholder y: f64[N]\n\
               a = relu(x)\nb = abs(x)\nc = sign(x)\np = power(x, y)\n\
               s1 = add(a, b)\ns2 = add(s1, c)\ns3 = add(s2, p)\nl = sum(s3, [N])\n\
               dx, dy = grad(l, x, y)\n";
    let g = weft::ir::text::parse(src, "t.weft").unwrap();
    let (x, y) = (g.find("x").unwrap(), g.find("y").unwrap());
    let (dx, dy) = (g.find("dx").unwrap(), g.find("dy").unwrap());
    let n = g.node(x).axes[0];
    let got = eval(
        &g,
        &[dx, dy],
        &[x, y],
        &[
            arr(&[n], &[3], vec![0.0, -2.0, 2.0]),
            arr(&[n], &[3], vec![2.0, 2.0, 3.0]),
        ],
    );
    // x = 0: relu 0, abs 0, sign 0, power 2·0 = 0. x = −2: −1 + 2·(−2) = −5. x = 2: 1 + 1 + 3·4.
    assert_eq!(got[0], vec![0.0, -5.0, 14.0]);
    assert_eq!(got[1], vec![0.0, 0.0, 8.0 * 2f64.ln()]);
}

/// Σ t · (1 + position in t's row-major order), so each element has its own weight.
fn weigh<'g>(b: &'g GraphBuilder, t: Tensor<'g>) -> Tensor<'g> {
    let axes = t.axes();
    let shape = b.graph().shape_of(&axes).unwrap();
    let count: usize = shape.iter().product();
    let w = b
        .constant(
            axes.as_slice(),
            ArrayData::F64((1..=count).map(|v| v as f64).collect()),
        )
        .unwrap();
    (t * w).unwrap().sum(axes.as_slice()).unwrap()
}

#[test]
fn views_scatter_and_gather_their_gradients() {
    // loss = Σ view(x) · w for a weight w over the view's axes: the gradient is w put back.
    let b = GraphBuilder::new();
    let (n, m) = (b.axis("N", 6).unwrap(), b.axis("M", 2).unwrap());
    let x = b.placeholder("x", &[n, m], DType::F64).unwrap();
    let xs: Vec<f64> = (0..12).map(|v| v as f64).collect();
    let steps = x
        .slice(&[(
            n,
            AxisSlice::Range(SliceRange {
                start: Some(1),
                stop: None,
                step: 2,
            }),
        )])
        .unwrap();
    let back = x
        .slice(&[(
            n,
            AxisSlice::Range(SliceRange {
                start: Some(-2),
                stop: None,
                step: -2,
            }),
        )])
        .unwrap();
    let pinned = x.slice(&[(n, AxisSlice::Index(-2))]).unwrap();
    let padded = x.pad(&[(n, 1, 2)]).unwrap();
    let cat = b.concat(&[(x, n), (x, n)]).unwrap();
    let flat = x.flatten(&[m, n]).unwrap();
    let tr = x.transpose().unwrap();
    let losses = [steps, back, pinned, padded, cat, flat, tr].map(|t| weigh(&b, t));
    let grads: Vec<NodeId> = losses
        .iter()
        .map(|l| l.grad(&[x]).unwrap()[0].id())
        .collect();
    let xi = x.id();
    let g = b.finish();
    check_shapes(&g, &vec![xi; grads.len()], &grads);
    let got = eval(&g, &grads, &[xi], &[arr(&[n, m], &[6, 2], xs)]);
    // x is [6, 2] row-major: element (i, j) at 2i + j.
    let z = 0.0;
    // N = 1::2 takes rows 1, 3, 5: weights 1..6 row-major over (N[1::2], M).
    assert_eq!(got[0], vec![z, z, 1., 2., z, z, 3., 4., z, z, 5., 6.]);
    // N = -2::-2 takes rows 4, 2, 0.
    assert_eq!(got[1], vec![5., 6., z, z, 3., 4., z, z, 1., 2., z, z]);
    // N = -2 pins row 4.
    assert_eq!(got[2], vec![z, z, z, z, z, z, z, z, 1., 2., z, z]);
    // The padded rows 1..7 of 9 carry weights 3..14.
    assert_eq!(got[3], (3..=14).map(|v| v as f64).collect::<Vec<_>>());
    // Both halves of the concat: (i, j) weighs 2i + j + 1 and 2(6 + i) + j + 1.
    assert_eq!(
        got[4],
        (0..12).map(|k| (2 * k + 14) as f64).collect::<Vec<_>>()
    );
    // flatten(M, N): element (i, j) sits at 6j + i.
    let want: Vec<f64> = (0..12).map(|k| (6 * (k % 2) + k / 2 + 1) as f64).collect();
    assert_eq!(got[5], want);
    // transpose: (M*, N*) row-major: element (i, j) at 6j + i, like the flatten.
    assert_eq!(got[6], want);
}

#[test]
fn unrelated_and_cut_inputs_get_zero() {
    let src = "axis N = 3\nplaceholder x: f64[N]\nplaceholder u: f64[N]\nconstant z: f64 = 0\n\
               m = greater(x, z)\ns = select(m, u, z)\nl = sum(s, [N])\ndx, du = grad(l, x, u)\n";
    let g = weft::ir::text::parse(src, "t.weft").unwrap();
    let (x, u) = (g.find("x").unwrap(), g.find("u").unwrap());
    let (dx, du) = (g.find("dx").unwrap(), g.find("du").unwrap());
    let n = g.node(x).axes[0];
    let got = eval(
        &g,
        &[dx, du],
        &[x, u],
        &[
            arr(&[n], &[3], vec![1.0, -1.0, 2.0]),
            arr(&[n], &[3], vec![5.0, 6.0, 7.0]),
        ],
    );
    assert_eq!(got[0], vec![0.0; 3]);
    assert_eq!(got[1], vec![1.0, 0.0, 1.0]);
}

#[test]
fn convert_between_floats_passes_the_gradient_back() {
    let b = GraphBuilder::new();
    let n = b.axis("N", 2).unwrap();
    let x = b.placeholder("x", &[n], DType::F32).unwrap();
    let loss = x
        .convert(DType::F64)
        .unwrap()
        .square()
        .unwrap()
        .sum(&[n])
        .unwrap();
    let dx = loss.grad(&[x]).unwrap()[0];
    assert_eq!(dx.dtype(), DType::F32);
    let (xi, dx) = (x.id(), dx.id());
    let g = b.finish();
    let xs = HostArray::from_vec(Axes::new([n]).unwrap(), vec![2], vec![1.5f32, -2.0]).unwrap();
    let got = eval(&g, &[dx], &[xi], &[xs]);
    assert_eq!(got[0], vec![3.0, -4.0]);
}

#[test]
fn bad_losses_and_paths_without_derivatives_are_typed_errors() {
    let mut g = Graph::new();
    let n = g.axis("N", 3).unwrap();
    let x = g.placeholder("x", &[n], DType::F64).unwrap();
    let k = g.placeholder("k", &[n], DType::I64).unwrap();
    let v = g
        .variable("v", &[n], DType::F64, TensorInit::Fill(Scalar::Float(0.0)))
        .unwrap();
    let sq = g.square(x).unwrap();
    // Not a scalar.
    let e = g.grad(sq, &[x]).unwrap_err();
    assert!(matches!(e, GraphError::GradLoss { .. }), "{e}");
    assert!(e.to_string().contains("(N)"), "{e}");
    // Not a float.
    let ks = g.sum(k, &[n]).unwrap();
    let e = g.grad(ks, &[k]).unwrap_err();
    assert!(matches!(e, GraphError::GradLoss { .. }), "{e}");
    // argmax on the path.
    let am = g.argmax(x, &[n]).unwrap();
    let amf = g.convert(am, DType::F64).unwrap();
    let len = g.len();
    let e = g.grad(amf, &[x]).unwrap_err();
    assert!(
        matches!(e, GraphError::NotDifferentiable { op: "argmax", .. }),
        "{e}"
    );
    assert_eq!(g.len(), len, "an error leaves the graph as it was");
    // An integer-valued path: x → i64 → f64.
    let xi = g.convert(x, DType::I64).unwrap();
    let xf = g.convert(xi, DType::F64).unwrap();
    let l = g.sum(xf, &[n]).unwrap();
    let e = g.grad(l, &[x]).unwrap_err();
    assert!(
        matches!(e, GraphError::NotDifferentiable { op: "convert", .. }),
        "{e}"
    );
    assert!(e.to_string().contains("`x`"), "{e}");
    // assign on the path.
    let a = g.assign(v, sq).unwrap();
    let l = g.sum(a, &[n]).unwrap();
    let e = g.grad(l, &[x]).unwrap_err();
    assert!(
        matches!(e, GraphError::NotDifferentiable { op: "assign", .. }),
        "{e}"
    );
    // An integer wrt the loss depends on.
    let kf = g.convert(k, DType::F64).unwrap();
    let l = g.sum(kf, &[n]).unwrap();
    let e = g.grad(l, &[k]).unwrap_err();
    assert!(
        matches!(
            e,
            GraphError::NotDifferentiable {
                op: "placeholder",
                ..
            }
        ),
        "{e}"
    );
    // The same loss is fine with respect to x (zero: it does not depend on it).
    let d = g.grad(l, &[x, k]);
    assert!(d.is_err(), "k is still on a path");
    let d = g.grad(l, &[x]).unwrap();
    check_shapes(&g, &[x], &d);
    // A node of another graph.
    let mut other = Graph::new();
    let e = other.grad(l, &[x]).unwrap_err();
    assert!(matches!(e, GraphError::Foreign(_)), "{e}");
}

#[test]
fn the_text_form_names_each_gradient_and_round_trips() {
    let src = "axis B = 2\naxis I = 3\naxis O = 2\n\
               placeholder x: f32[B, I]\nvariable w: f32[I, O] = 0.5\nvariable b: f32[O] = 0\n\
               h = dot(x, w)\nhb = add(h, b)\nr = relu(hb)\nl = sum(r, [B, O])\n\
               dw, db = grad(l, w, b)\noutput dw, db\n";
    let g = weft::ir::text::parse(src, "mlp.weft").unwrap();
    let (w, bb) = (g.find("w").unwrap(), g.find("b").unwrap());
    let (dw, db) = (g.find("dw").unwrap(), g.find("db").unwrap());
    check_shapes(&g, &[w, bb], &[dw, db]);
    let printed = weft::ir::text::print(&g);
    let again = weft::ir::text::parse(&printed, "printed.weft").unwrap();
    assert_eq!(again, g);
    assert!(
        !printed.contains("grad("),
        "the printer writes the expanded ops"
    );

    // Errors: file:line:col, through ParseError.
    for (bad, at, what) in [
        ("dw, db = grad(l, w)\n", "t.weft:8:10", "2 tensors"),
        ("dw = grad(l, w, b)\n", "t.weft:8:6", "1 tensor"),
        ("dw, db = add(w, b)\n", "t.weft:8:10", "`grad`"),
        ("dw = grad(h, w)\n", "t.weft:8:6", "float scalar"),
        ("dw, dw = grad(l, w, b)\n", "t.weft:8:5", "new tensor name"),
    ] {
        let src = format!(
            "axis I = 3\naxis O = 2\nplaceholder x: f32[I]\nvariable w: f32[I, O] = 0.5\n\
             variable b: f32[O] = 0\nh = dot(x, w)\nl = sum(h, [O])\n{bad}"
        );
        let e = weft::ir::text::parse(&src, "t.weft")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(at), "{bad}: {e}");
        assert!(e.contains(what), "{bad}: {e}");
    }
}

/// The backward graph on the JIT, fused and unfused, against the interpreter.
fn jit_agrees(g: &Graph, outputs: &[NodeId]) {
    let ps = g.placeholders();
    let tol = weft_oracle::Tolerance::for_graph(g);
    for seed in [1u64, 2] {
        let inputs = jit_common::random_inputs(g, &ps, seed);
        let refs = references(g, outputs, &ps, &inputs, 1, &tol).unwrap();
        for backend in [Backend::Jit, Backend::JitUnfused] {
            let got = run(g, outputs, &ps, &inputs, 1, backend)
                .unwrap_or_else(|e| panic!("{backend:?} cannot run the graph: {e}"));
            if let Err(m) = compare(&got, &refs, &tol) {
                panic!("{backend:?} differs: {m}\n{}", weft::ir::text::print(g));
            }
        }
    }
}

#[test]
fn backward_graphs_run_on_the_jit_as_on_the_interpreter() {
    // An MLP with softmax cross-entropy, large enough for the GEMM path (f32).
    let b = GraphBuilder::new();
    let (bb, i, h, c) = (
        b.axis("B", 32).unwrap(),
        b.axis("I", 64).unwrap(),
        b.axis("H", 48).unwrap(),
        b.axis("C", 10).unwrap(),
    );
    let x = b.placeholder("x", &[bb, i], DType::F32).unwrap();
    let y = b.placeholder("y", &[bb, c], DType::F32).unwrap();
    let w1 = b.placeholder("w1", &[i, h], DType::F32).unwrap();
    let b1 = b.placeholder("b1", &[h], DType::F32).unwrap();
    let w2 = b.placeholder("w2", &[h, c], DType::F32).unwrap();
    let hid = (x.dot(w1).unwrap() + b1).unwrap().tanh().unwrap();
    let z = hid.dot(w2).unwrap();
    let shifted = (z - z.max(&[c]).unwrap()).unwrap();
    let lse = shifted.exp().unwrap().sum(&[c]).unwrap().log().unwrap();
    let loss = (y * (shifted - lse).unwrap())
        .unwrap()
        .mean(&[bb, c])
        .unwrap()
        .negative()
        .unwrap();
    let d = b.grad(loss, &[w1, b1, w2, x]).unwrap();
    let mut outs: Vec<NodeId> = d.iter().map(|t| t.id()).collect();
    outs.push(loss.id());
    let wrt = [w1.id(), b1.id(), w2.id(), x.id()];
    let g = b.finish();
    check_shapes(&g, &wrt, &outs[..4]);
    jit_agrees(&g, &outs);

    // Every view and reduction in f64.
    let src = "axis N = 5\naxis M = 3\nplaceholder x: f64[N, M]\nplaceholder w: f64[M]\n\
               s = slice(x, N=4:0:-2)\np = pad(s, M=(1, 2))\nc = concat(x:N, x:N)\n\
               f = flatten(c, [M, \"N|N\"])\nu = unflatten(f, \"M*N|N\")\nt = transpose(u)\n\
               e = expand_dims(w, N, 0)\nq = multiply(x, e)\nm = max(q, [M])\nr = prod(x, [N])\n\
               a = sum(p, [\"M+pad(1,2)\"])\nb = sum(t, [M*, \"N|N\"*])\nk = mean(m, [N])\n\
               k2 = sum(r, [M])\nk3 = sum(a, [\"N[4:0:-2]\"])\nl1 = add(k, k2)\nl2 = add(l1, k3)\n\
               bs = sum(b, [])\nl = add(l2, bs)\ndx, dw = grad(l, x, w)\noutput dx, dw, l\n";
    let g = weft::ir::text::parse(src, "views.weft").unwrap();
    check_shapes(
        &g,
        &[g.find("x").unwrap(), g.find("w").unwrap()],
        &[g.find("dx").unwrap(), g.find("dw").unwrap()],
    );
    jit_agrees(&g, g.outputs());
}

#[test]
fn reductions_pair_with_their_kinds() {
    // mean over no axes and over all; sum with out_axes; the gradient keeps wrt's order.
    let b = GraphBuilder::new();
    let (r, c) = (b.axis("R", 2).unwrap(), b.axis("C", 3).unwrap());
    let x = b.placeholder("x", &[c, r], DType::F64).unwrap();
    let s = x.reduce(ReduceOp::Sum, &[], Some(&[r, c])).unwrap();
    let loss = s.mean(&[r, c]).unwrap();
    let dx = loss.grad(&[x]).unwrap()[0];
    assert_eq!(dx.axes().as_slice(), &[c, r]);
    let (xi, dx) = (x.id(), dx.id());
    let g = b.finish();
    let got = eval(&g, &[dx], &[xi], &[arr(&[c, r], &[3, 2], vec![1.0; 6])]);
    assert_close(&got[0], &[1.0 / 6.0; 6], 1e-15);
}

#[test]
fn lengths_may_be_bound_after_grad_unless_a_cut_needs_them() {
    // A mean's count is computed in the graph: bind N after grad and run.
    let mut g = Graph::new();
    let n = g.axis_unbound("N").unwrap();
    let x = g.placeholder("x", &[n], DType::F64).unwrap();
    let sq = g.square(x).unwrap();
    let loss = g.mean(sq, &[n]).unwrap();
    let dx = g.grad(loss, &[x]).unwrap()[0];
    g.bind(n, 4).unwrap();
    check_shapes(&g, &[x], &[dx]);
    let got = eval(
        &g,
        &[dx],
        &[x],
        &[arr(&[n], &[4], vec![1.0, 2.0, 3.0, 4.0])],
    );
    assert_eq!(got[0], vec![0.5, 1.0, 1.5, 2.0]);
    // A slice's adjoint is a pad of fixed widths: its axis's length is needed.
    let mut g = Graph::new();
    let n = g.axis_unbound("N").unwrap();
    let x = g.placeholder("x", &[n], DType::F64).unwrap();
    let s = g
        .slice(x, &[(n, AxisSlice::Range(SliceRange::range(0, 1)))])
        .unwrap();
    let axes = g.node(s).axes.clone();
    let loss = g.sum(s, axes.as_slice()).unwrap();
    let e = g.grad(loss, &[x]).unwrap_err();
    assert!(matches!(e, GraphError::UnboundAxis { .. }), "{e}");
}

#[test]
fn a_dot_whose_adjoint_would_pair_ambiguously_becomes_a_sum_of_products() {
    // dot(x[A], y[A, A*]) pairs A with A and keeps A*: dot(adj[A*], y) would see A* pair
    // with both A* and A, so x's adjoint is Σ_{A*} adj · y instead.
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let x = g.placeholder("x", &[a], DType::F64).unwrap();
    let y = g.placeholder("y", &[a, a.dual()], DType::F64).unwrap();
    let w = g.placeholder("w", &[a.dual()], DType::F64).unwrap();
    let z = g.dot(x, y).unwrap();
    assert_eq!(g.node(z).axes.as_slice(), &[a.dual()]);
    let p = g.multiply(z, w).unwrap();
    let loss = g.sum(p, &[a.dual()]).unwrap();
    let d = g.grad(loss, &[x, y, x]).unwrap();
    check_shapes(&g, &[x, y, x], &d);
    assert_ne!(d[0], d[2], "a repeated wrt gets its own node");
    let (xs, ys, ws) = (vec![2.0, 3.0], vec![1.0, 2.0, 3.0, 4.0], vec![0.5, -1.0]);
    let got = eval(
        &g,
        &d,
        &[x, y, w],
        &[
            arr(&[a], &[2], xs.clone()),
            arr(&[a, a.dual()], &[2, 2], ys.clone()),
            arr(&[a.dual()], &[2], ws.clone()),
        ],
    );
    // dx[i] = Σ_j y[i, j] w[j]; dy[i, j] = x[i] w[j].
    let dx: Vec<f64> = (0..2)
        .map(|i| ys[2 * i] * ws[0] + ys[2 * i + 1] * ws[1])
        .collect();
    let dy: Vec<f64> = (0..4).map(|k| xs[k / 2] * ws[k % 2]).collect();
    assert_eq!(got[0], dx);
    assert_eq!(got[1], dy);
    assert_eq!(got[2], dx);
}
