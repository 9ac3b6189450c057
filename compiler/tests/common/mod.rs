//! Graphs shared by the pass tests: the L2 example of docs/design.md, softmax, layernorm, an MLP,
//! views.
#![allow(dead_code)]

use weft_ir::graph::{GraphBuilder, Tensor};
use weft_ir::{ArrayData, Axis, AxisSlice, DType, Graph, SliceRange, TensorInit};

/// sum((x − y)²) over N.
pub fn l2_sum(n: usize) -> Graph {
    let g = GraphBuilder::new();
    let ax = g.axis("N", n).unwrap();
    let x = g.placeholder("x", &[ax], DType::F32).unwrap();
    let y = g.placeholder("y", &[ax], DType::F32).unwrap();
    let t = (x - y).unwrap();
    let s = t.square().unwrap().sum(&[ax]).unwrap().named("l2").unwrap();
    s.output().unwrap();
    g.finish()
}

/// dot(transpose(x − y), x − y): the L2 norm of docs/design.md.
pub fn l2_dot(n: usize) -> Graph {
    let g = GraphBuilder::new();
    let ax = g.axis("N", n).unwrap();
    let x = g.placeholder("x", &[ax], DType::F32).unwrap();
    let y = g.placeholder("y", &[ax], DType::F32).unwrap();
    let t = (x - y).unwrap().named("t").unwrap();
    let l2 = t.transpose().unwrap().dot(t).unwrap().named("l2").unwrap();
    l2.output().unwrap();
    g.finish()
}

/// softmax over C of x(N, C).
pub fn softmax(n: usize, c: usize) -> Graph {
    let g = GraphBuilder::new();
    let na = g.axis("N", n).unwrap();
    let ca = g.axis("C", c).unwrap();
    let x = g.placeholder("x", &[na, ca], DType::F32).unwrap();
    let m = x.max(&[ca]).unwrap().named("m").unwrap();
    let e = (x - m).unwrap().exp().unwrap().named("e").unwrap();
    let s = e.sum(&[ca]).unwrap().named("s").unwrap();
    let out = (e / s).unwrap().named("softmax").unwrap();
    out.output().unwrap();
    g.finish()
}

/// layernorm over C of x(N, C) with gain and bias over C.
pub fn layernorm(n: usize, c: usize) -> Graph {
    let g = GraphBuilder::new();
    let na = g.axis("N", n).unwrap();
    let ca = g.axis("C", c).unwrap();
    let x = g.placeholder("x", &[na, ca], DType::F32).unwrap();
    let gain = g.placeholder("gain", &[ca], DType::F32).unwrap();
    let bias = g.placeholder("bias", &[ca], DType::F32).unwrap();
    let out = (normalised(&g, x, ca) * gain).unwrap();
    let out = (out + bias).unwrap().named("layernorm").unwrap();
    out.output().unwrap();
    g.finish()
}

/// Layernorm's statistics over C of `x` stored as [C, N] (C the first axis in memory, so a
/// loop over C inside a loop over N reads `x` a stride of N elements apart), without gain and
/// bias.
pub fn first_axis_layernorm(c: usize, n: usize) -> Graph {
    let g = GraphBuilder::new();
    let na = g.axis("N", n).unwrap();
    let ca = g.axis("C", c).unwrap();
    let x = g.placeholder("x", &[ca, na], DType::F32).unwrap();
    let out = normalised(&g, x, ca).named("out").unwrap();
    out.output().unwrap();
    g.finish()
}

/// (x − mean_C x) / sqrt(var_C x + 1e-5).
fn normalised<'g>(g: &'g GraphBuilder, x: Tensor<'g>, ca: Axis) -> Tensor<'g> {
    let mean = x.mean(&[ca]).unwrap().named("mean").unwrap();
    let xc = (x - mean).unwrap().named("xc").unwrap();
    let var = xc
        .square()
        .unwrap()
        .mean(&[ca])
        .unwrap()
        .named("var")
        .unwrap();
    let eps = g.scalar(1e-5, DType::F32).unwrap();
    let den = (var + eps).unwrap().sqrt().unwrap();
    (xc / den).unwrap()
}

/// `layers` layers of relu(dot(W_i, h) + b_i) over hidden axes of length `width`.
pub fn mlp(layers: usize, width: usize) -> Graph {
    let g = GraphBuilder::new();
    let mut axes = vec![g.axis("H0", width).unwrap()];
    let mut h = g.placeholder("h0", &[axes[0]], DType::F32).unwrap();
    for i in 1..=layers {
        let a = g.axis(&format!("H{i}"), width).unwrap();
        axes.push(a);
        let prev = axes[i - 1];
        let w = g
            .placeholder(&format!("W{i}"), &[a, prev], DType::F32)
            .unwrap();
        let b = g.placeholder(&format!("b{i}"), &[a], DType::F32).unwrap();
        h = (w.dot(h).unwrap() + b).unwrap().relu().unwrap();
        h = h.named(&format!("h{i}")).unwrap();
    }
    h.output().unwrap();
    g.finish()
}

/// Views over a stored tensor: a reversed strided slice with a pinned index, a transpose, a pad,
/// a flatten and a concat, read by one elementwise op.
pub fn views() -> Graph {
    let g = GraphBuilder::new();
    let a = g.axis("A", 6).unwrap();
    let b = g.axis("B", 4).unwrap();
    let c = g.axis("C", 3).unwrap();
    let x = g.placeholder("x", &[a, b, c], DType::F32).unwrap();
    let s = x
        .slice(&[
            (
                a,
                AxisSlice::Range(SliceRange {
                    start: Some(-1),
                    stop: None,
                    step: -2,
                }),
            ),
            (c, AxisSlice::Index(-1)),
        ])
        .unwrap()
        .named("s")
        .unwrap();
    let p = s.pad(&[(b, 1, 2)]).unwrap().named("p").unwrap();
    let f = x.flatten(&[b, c]).unwrap().named("f").unwrap();
    let y = g
        .constant(&[b], ArrayData::F32(vec![1.0, 2.0, 3.0, 4.0]))
        .unwrap();
    let yy = g.placeholder("z", &[b], DType::F32).unwrap();
    let cat = g.concat(&[(y, b), (yy, b)]).unwrap().named("cat").unwrap();
    let out = (p.exp().unwrap() * p).unwrap().named("pp").unwrap();
    out.output().unwrap();
    (f.sum(&[]).unwrap()).named("fs").unwrap().output().unwrap();
    cat.negative()
        .unwrap()
        .named("neg")
        .unwrap()
        .output()
        .unwrap();
    let _ = TensorInit::Fill(weft_ir::Scalar::Float(0.0));
    g.finish()
}
