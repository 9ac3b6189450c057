//! Zero-length axes, with NumPy's meanings, on every backend: a batch of zero, an empty slice,
//! reductions over nothing (sum 0, prod 1, mean NaN), dots over an empty contracted axis,
//! views and concatenations with empty parts. max/min/argmax/argmin over an empty axis have
//! no value: a typed error naming the op and the axis, at build time when the length is known
//! and at verification when it is bound later.

use weft::prelude::*;
use weft::{GraphError, ReduceOp};

const BACKENDS: [Backend; 3] = [Backend::Interpreter, Backend::Jit, Backend::JitUnfused];

/// Runs the graph's outputs on `backend` with the given f32 inputs (in placeholder order).
fn run_f32(src: &str, backend: Backend, inputs: &[Vec<f32>]) -> Vec<HostArray> {
    let g = weft::ir::text::parse(src, "zero.weft").unwrap();
    let ps = g.placeholders();
    let arrays: Vec<HostArray> = ps
        .iter()
        .zip(inputs)
        .map(|(p, data)| {
            let n = g.node(*p);
            let shape = g.shape_of(&n.axes).unwrap();
            HostArray::from_vec(n.axes.clone(), shape, data.clone()).unwrap()
        })
        .collect();
    let outputs = g.outputs().to_vec();
    let t = Transformer::new(g, backend).unwrap();
    let c = t.computation(&outputs, &ps).unwrap();
    c.call(&arrays)
        .unwrap_or_else(|e| panic!("{backend:?}: {e}"))
}

fn values(a: &HostArray) -> Vec<f64> {
    (0..a.len())
        .map(|i| a.data().get(i).unwrap().as_f64())
        .collect()
}

/// Equal element by element, NaN equal to NaN.
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x.is_nan() && y.is_nan()))
}

#[test]
fn reductions_over_an_empty_batch_have_numpys_values() {
    let src = "axis B = 0\naxis C = 3\nplaceholder x: f32[B, C]\n\
               s = sum(x, [B])\np = prod(x, [B])\nm = mean(x, [B])\n\
               y = relu(x)\nt = sum(x, [C])\noutput s, p, m, y, t\n";
    for b in BACKENDS {
        let out = run_f32(src, b, &[vec![]]);
        assert!(same(&values(&out[0]), &[0.0; 3]), "{b:?} sum");
        assert!(same(&values(&out[1]), &[1.0; 3]), "{b:?} prod");
        assert!(same(&values(&out[2]), &[f64::NAN; 3]), "{b:?} mean");
        assert_eq!(out[3].shape(), &[0, 3], "{b:?} relu");
        assert_eq!(out[3].len(), 0);
        assert_eq!(out[4].shape(), &[0], "{b:?} sum over C");
    }
}

#[test]
fn a_dot_over_an_empty_axis_is_zero() {
    let src = "axis K = 0\naxis O = 2\nplaceholder x: f32[K]\nplaceholder w: f32[K, O]\n\
               d = dot(x, w)\noutput d\n";
    for b in BACKENDS {
        let out = run_f32(src, b, &[vec![], vec![]]);
        assert!(same(&values(&out[0]), &[0.0, 0.0]), "{b:?}");
    }
}

#[test]
fn empty_slices_pads_and_concats() {
    let src = "axis C = 3\nplaceholder x: f32[C]\n\
               e = slice(x, C=1:1)\ns = sum(e, [\"C[1:1]\"])\n\
               p = pad(e, \"C[1:1]\"=(1, 2))\n\
               c = concat(x:C, e:\"C[1:1]\")\noutput e, s, p, c\n";
    // A derived axis is named by its derivation (`C[1:1]`, quoted in the text format).
    let g = weft::ir::text::parse(src, "zero.weft").unwrap();
    assert_eq!(g.shape_of(&g.node(g.outputs()[0]).axes).unwrap(), vec![0]);
    for b in BACKENDS {
        let out = run_f32(src, b, &[vec![1.0, 2.0, 3.0]]);
        assert_eq!(out[0].len(), 0, "{b:?} slice");
        assert!(same(&values(&out[1]), &[0.0]), "{b:?} sum");
        assert!(same(&values(&out[2]), &[0.0; 3]), "{b:?} pad");
        assert!(same(&values(&out[3]), &[1.0, 2.0, 3.0]), "{b:?} concat");
    }
}

#[test]
fn max_min_and_arg_reductions_of_an_empty_axis_are_errors_naming_it() {
    for op in ["max", "min", "argmax", "argmin"] {
        let src = format!("axis B = 0\naxis C = 3\nplaceholder x: f32[B, C]\nr = {op}(x, [B])\n");
        let err = weft::ir::text::parse(&src, "empty.weft").unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(op) && msg.contains("`B`"), "{msg}");
        assert!(msg.contains("empty.weft:4:"), "{msg}");
    }
    // Bound later: verification says the same.
    let mut g = Graph::new();
    let b = g.axis_unbound("B").unwrap();
    let x = g.placeholder("x", &[b], DType::F32).unwrap();
    let m = g.reduce(ReduceOp::Max, x, &[b], None).unwrap();
    g.mark_output(m).unwrap();
    g.bind(b, 0).unwrap();
    let err = g.verify().unwrap_err();
    assert!(matches!(err, GraphError::EmptyReduction { .. }), "{err}");
    assert!(err.to_string().contains("`B`"), "{err}");
}

#[test]
fn a_batch_of_zero_through_an_mlp_layer() {
    let src = "axis B = 0\naxis I = 4\naxis O = 2\nplaceholder x: f32[B, I]\n\
               placeholder w: f32[I, O]\nh = dot(x, w)\nr = relu(h)\noutput r\n";
    let w: Vec<f32> = (0..8).map(|i| i as f32).collect();
    for b in BACKENDS {
        let out = run_f32(src, b, &[vec![], w.clone()]);
        assert_eq!(out[0].shape(), &[0, 2], "{b:?}");
    }
}

#[test]
fn empty_axes_in_vectorised_and_parallel_kernels() {
    // Large kept axes make the kernels vectorise, unroll and run in parallel around the empty
    // loops; the empty axis is innermost in one, outermost in the other.
    let src = "axis B = 0\naxis C = 70000\nplaceholder x: f32[C, B]\nplaceholder y: f32[B, C]\n\
               s = sum(x, [B])\np = prod(y, [B])\ne = exp(y)\nt = sum(e, [C])\n\
               m = mean(x, [B])\noutput s, p, t, m\n";
    for b in BACKENDS {
        let out = run_f32(src, b, &[vec![], vec![]]);
        assert!(values(&out[0]).iter().all(|v| *v == 0.0), "{b:?} sum");
        assert_eq!(out[0].len(), 70000);
        assert!(values(&out[1]).iter().all(|v| *v == 1.0), "{b:?} prod");
        assert_eq!(out[2].shape(), &[0], "{b:?}");
        assert!(values(&out[3]).iter().all(|v| v.is_nan()), "{b:?} mean");
    }
}
