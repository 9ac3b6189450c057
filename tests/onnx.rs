//! The ONNX importer end to end: models built message by message, imported, compiled and run
//! on the JIT and the interpreter against values computed here; and bad models, each refused
//! with an error naming the node, tensor or file. (ONNX's own suite runs from Python:
//! python/tests/test_onnx.py, docs/onnx.md.)

use onnx_protobuf::{
    attribute_proto::AttributeType, tensor_shape_proto::dimension, type_proto, AttributeProto,
    GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto,
    TypeProto, ValueInfoProto,
};
use protobuf::Message;
use weft::onnx::{import_bytes, ImportError};
use weft::prelude::*;

/// A dim: a length, or a symbolic name.
enum Dim {
    Len(i64),
    Param(&'static str),
}

fn value_info(name: &str, elem: i32, dims: &[Dim]) -> ValueInfoProto {
    let mut shape = TensorShapeProto::new();
    for d in dims {
        let mut dim = onnx_protobuf::tensor_shape_proto::Dimension::new();
        dim.value = Some(match d {
            Dim::Len(n) => dimension::Value::DimValue(*n),
            Dim::Param(p) => dimension::Value::DimParam(p.to_string()),
        });
        shape.dim.push(dim);
    }
    let mut tt = type_proto::Tensor::new();
    tt.elem_type = elem;
    tt.shape = Some(shape).into();
    let mut ty = TypeProto::new();
    ty.value = Some(type_proto::Value::TensorType(tt));
    let mut v = ValueInfoProto::new();
    v.name = name.into();
    v.type_ = Some(ty).into();
    v
}

fn f32_tensor(name: &str, dims: &[i64], data: &[f32]) -> TensorProto {
    let mut t = TensorProto::new();
    t.name = name.into();
    t.dims = dims.to_vec();
    t.data_type = 1;
    t.raw_data = data.iter().flat_map(|v| v.to_le_bytes()).collect();
    t
}

fn i64_tensor(name: &str, dims: &[i64], data: &[i64]) -> TensorProto {
    let mut t = TensorProto::new();
    t.name = name.into();
    t.dims = dims.to_vec();
    t.data_type = 7;
    t.int64_data = data.to_vec();
    t
}

fn node(
    op: &str,
    name: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    let mut n = NodeProto::new();
    n.op_type = op.into();
    n.name = name.into();
    n.input = inputs.iter().map(|s| s.to_string()).collect();
    n.output = outputs.iter().map(|s| s.to_string()).collect();
    n.attribute = attrs;
    n
}

fn int_attr(name: &str, v: i64) -> AttributeProto {
    let mut a = AttributeProto::new();
    a.name = name.into();
    a.type_ = AttributeType::INT.into();
    a.i = v;
    a
}

fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
    let mut a = AttributeProto::new();
    a.name = name.into();
    a.type_ = AttributeType::INTS.into();
    a.ints = v.to_vec();
    a
}

fn model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: &[&str],
    inits: Vec<TensorProto>,
    opset: i64,
) -> Vec<u8> {
    let mut g = GraphProto::new();
    g.name = "test".into();
    g.node = nodes;
    g.input = inputs;
    g.initializer = inits;
    g.output = outputs.iter().map(|o| value_info(o, 1, &[])).collect();
    let mut m = ModelProto::new();
    m.ir_version = 8;
    let mut op = OperatorSetIdProto::new();
    op.version = opset;
    m.opset_import.push(op);
    m.graph = Some(g).into();
    m.write_to_bytes().expect("serialise")
}

/// Runs an imported model on both backends; asserts they agree and returns the JIT's outputs.
fn run(bytes: &[u8], inputs: &[Vec<f32>]) -> Vec<HostArray> {
    let imported = import_bytes(bytes).expect("import");
    let g = &imported.graph;
    let arrays: Vec<HostArray> = imported
        .inputs
        .iter()
        .zip(inputs)
        .map(|((_, id), data)| {
            let axes = g.node(*id).axes.clone();
            let shape = g.shape_of(&axes).expect("bound lengths");
            HostArray::new(axes, shape, ArrayData::F32(data.clone())).expect("input array")
        })
        .collect();
    let outputs: Vec<NodeId> = imported.outputs.iter().map(|(_, n)| *n).collect();
    let placeholders: Vec<NodeId> = imported.inputs.iter().map(|(_, n)| *n).collect();
    let mut results = Vec::new();
    for backend in [Backend::Jit, Backend::Interpreter] {
        let t = Transformer::new(g.clone(), backend).expect("transformer");
        let c = t.computation(&outputs, &placeholders).expect("computation");
        results.push(c.call(&arrays).expect("call"));
    }
    for (j, i) in results[0].iter().zip(&results[1]) {
        let (a, b) = (j.as_slice::<f32>().unwrap(), i.as_slice::<f32>().unwrap());
        for (x, y) in a.iter().zip(b) {
            assert!(
                (x - y).abs() <= 1e-5 * (1.0 + y.abs()),
                "JIT {x} vs interpreter {y}"
            );
        }
    }
    results.swap_remove(0)
}

fn close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn gemm_relu_softmax_matches_a_hand_computation() {
    let w: Vec<f32> = (0..12).map(|i| (i as f32 - 5.0) * 0.25).collect(); // [3, 4]
    let b = [0.5f32, -0.5, 0.25, 0.0];
    let bytes = model(
        vec![
            node("Gemm", "fc", &["x", "w", "b"], &["y"], vec![]),
            node("Relu", "act", &["y"], &["r"], vec![]),
            node("Softmax", "sm", &["r"], &["p"], vec![int_attr("axis", 1)]),
        ],
        vec![value_info("x", 1, &[Dim::Len(2), Dim::Len(3)])],
        &["p"],
        vec![f32_tensor("w", &[3, 4], &w), f32_tensor("b", &[4], &b)],
        13,
    );
    let x = [1.0f32, 2.0, 3.0, -1.0, 0.5, 2.0];
    let out = run(&bytes, &[x.to_vec()]);
    let mut want = Vec::new();
    for r in 0..2 {
        let y: Vec<f32> = (0..4)
            .map(|c| ((0..3).map(|k| x[r * 3 + k] * w[k * 4 + c]).sum::<f32>() + b[c]).max(0.0))
            .collect();
        let m = y.iter().cloned().fold(f32::MIN, f32::max);
        let e: Vec<f32> = y.iter().map(|v| (v - m).exp()).collect();
        let s: f32 = e.iter().sum();
        want.extend(e.iter().map(|v| v / s));
    }
    assert_eq!(out[0].shape(), &[2, 4]);
    close(out[0].as_slice::<f32>().unwrap(), &want);
}

#[test]
fn reshape_transpose_and_batched_matmul_keep_positions() {
    // x: [2, 6] → reshape [2, 2, 3] → transpose (0, 2, 1) → [2, 3, 2] → matmul with y [2, 2, 1].
    let bytes = model(
        vec![
            node("Reshape", "rs", &["x", "shape"], &["r"], vec![]),
            node(
                "Transpose",
                "tr",
                &["r"],
                &["t"],
                vec![ints_attr("perm", &[0, 2, 1])],
            ),
            node("MatMul", "mm", &["t", "y"], &["z"], vec![]),
        ],
        vec![
            value_info("x", 1, &[Dim::Len(2), Dim::Len(6)]),
            value_info("y", 1, &[Dim::Len(2), Dim::Len(2), Dim::Len(1)]),
        ],
        &["z"],
        vec![i64_tensor("shape", &[3], &[2, 2, 3])],
        13,
    );
    let x: Vec<f32> = (0..12).map(|i| i as f32).collect();
    let y = vec![1.0f32, 10.0, -1.0, 2.0];
    let out = run(&bytes, &[x.clone(), y.clone()]);
    let mut want = Vec::new();
    for b in 0..2 {
        for i in 0..3 {
            // t[b, i, k] = r[b, k, i] = x[b, k*3 + i]
            want.push(
                (0..2)
                    .map(|k| x[b * 6 + k * 3 + i] * y[b * 2 + k])
                    .sum::<f32>(),
            );
        }
    }
    assert_eq!(out[0].shape(), &[2, 3, 1]);
    close(out[0].as_slice::<f32>().unwrap(), &want);
}

#[test]
fn symbolic_dims_are_one_axis_bound_at_call_time() {
    let bytes = model(
        vec![node("Add", "add", &["a", "b"], &["c"], vec![])],
        vec![
            value_info("a", 1, &[Dim::Param("batch"), Dim::Len(2)]),
            value_info("b", 1, &[Dim::Param("batch"), Dim::Len(2)]),
        ],
        &["c"],
        vec![],
        13,
    );
    let imported = import_bytes(&bytes).unwrap();
    let g = &imported.graph;
    let batch = g
        .find_axis("batch")
        .expect("a declared axis named after the dim_param");
    assert_eq!(g.axis_len(batch), None);
    let (a, b) = (imported.inputs[0].1, imported.inputs[1].1);
    assert!(g.node(a).axes.contains(batch) && g.node(b).axes.contains(batch));
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&[imported.outputs[0].1], &[a, b]).unwrap();
    for rows in [1usize, 3] {
        let arr = |v: f32| {
            HostArray::new(
                g.node(a).axes.clone(),
                vec![rows, 2],
                ArrayData::F32(vec![v; rows * 2]),
            )
            .unwrap()
        };
        let bb = HostArray::new(
            g.node(b).axes.clone(),
            vec![rows, 2],
            ArrayData::F32(vec![2.0; rows * 2]),
        )
        .unwrap();
        let out = c.call(&[arr(1.5), bb]).unwrap();
        assert_eq!(out[0].shape(), &[rows, 2]);
        assert!(out[0].as_slice::<f32>().unwrap().iter().all(|v| *v == 3.5));
    }
}

fn import_err(bytes: &[u8]) -> ImportError {
    match import_bytes(bytes) {
        Ok(_) => panic!("the model imported"),
        Err(e) => e,
    }
}

#[test]
fn an_unknown_op_is_refused_naming_the_node_and_opset() {
    let bytes = model(
        vec![node("Frobnicate", "frob1", &["x"], &["y"], vec![])],
        vec![value_info("x", 1, &[Dim::Len(2)])],
        &["y"],
        vec![],
        17,
    );
    let e = import_err(&bytes);
    assert!(matches!(e, ImportError::UnsupportedOp { .. }), "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("frob1") && msg.contains("Frobnicate") && msg.contains("opset 17"),
        "{msg}"
    );
}

#[test]
fn a_missing_input_a_cycle_and_a_truncated_file_are_errors() {
    let missing = model(
        vec![node("Relu", "r", &["nowhere"], &["y"], vec![])],
        vec![],
        &["y"],
        vec![],
        13,
    );
    let e = import_err(&missing);
    assert!(
        matches!(&e, ImportError::MissingInput { input, .. } if input == "nowhere"),
        "{e:?}"
    );

    let cyclic = model(
        vec![
            node("Relu", "first", &["b"], &["a"], vec![]),
            node("Relu", "second", &["a"], &["b"], vec![]),
        ],
        vec![],
        &["a"],
        vec![],
        13,
    );
    let e = import_err(&cyclic);
    assert!(matches!(e, ImportError::Cycle { .. }), "{e:?}");

    let good = model(
        vec![node("Relu", "r", &["x"], &["y"], vec![])],
        vec![value_info("x", 1, &[Dim::Len(4)])],
        &["y"],
        vec![],
        13,
    );
    for cut in [1, good.len() / 2, good.len() - 1] {
        let e = import_err(&good[..cut]);
        assert!(
            matches!(e, ImportError::Parse { .. } | ImportError::Model { .. }),
            "cut at {cut}: {e:?}"
        );
    }
}

#[test]
fn shapes_that_do_not_broadcast_are_an_error_naming_both() {
    let bytes = model(
        vec![node("Add", "bad_add", &["a", "b"], &["c"], vec![])],
        vec![
            value_info("a", 1, &[Dim::Len(2), Dim::Len(3)]),
            value_info("b", 1, &[Dim::Len(4)]),
        ],
        &["c"],
        vec![],
        13,
    );
    let e = import_err(&bytes);
    let msg = e.to_string();
    assert!(matches!(e, ImportError::Shape { .. }), "{e:?}");
    assert!(
        msg.contains("bad_add") && msg.contains("[2, 3]") && msg.contains("[4]"),
        "{msg}"
    );
}

#[test]
fn conv_with_padding_stride_and_bias_matches_a_direct_loop_and_names_its_axes() {
    let (c, k, h) = (2usize, 3usize, 5usize);
    let x: Vec<f32> = (0..c * h * h)
        .map(|i| ((i * 7) % 11) as f32 - 5.0)
        .collect();
    let w: Vec<f32> = (0..k * c * 9)
        .map(|i| ((i * 5) % 7) as f32 * 0.5 - 1.5)
        .collect();
    let b = [0.25f32, -1.0, 2.0];
    let bytes = model(
        vec![node(
            "Conv",
            "conv1",
            &["x", "w", "b"],
            &["y"],
            vec![
                ints_attr("pads", &[1, 1, 1, 1]),
                ints_attr("strides", &[2, 2]),
            ],
        )],
        vec![value_info(
            "x",
            1,
            &[Dim::Len(1), Dim::Len(c as i64), Dim::Len(5), Dim::Len(5)],
        )],
        &["y"],
        vec![
            f32_tensor("w", &[3, 2, 3, 3], &w),
            f32_tensor("b", &[3], &b),
        ],
        13,
    );
    let out = run(&bytes, std::slice::from_ref(&x));
    let o = 3; // (5 + 2 - 3) / 2 + 1
    let mut want = Vec::new();
    for kk in 0..k {
        for oy in 0..o {
            for ox in 0..o {
                let mut s = b[kk];
                for cc in 0..c {
                    for r in 0..3 {
                        for q in 0..3 {
                            let (iy, ix) = ((oy * 2 + r) as i64 - 1, (ox * 2 + q) as i64 - 1);
                            if (0..h as i64).contains(&iy) && (0..h as i64).contains(&ix) {
                                s += x[(cc * h + iy as usize) * h + ix as usize]
                                    * w[((kk * c + cc) * 3 + r) * 3 + q];
                            }
                        }
                    }
                }
                want.push(s);
            }
        }
    }
    assert_eq!(out[0].shape(), &[1, 3, 3, 3]);
    close(out[0].as_slice::<f32>().unwrap(), &want);
    let imported = import_bytes(&bytes).unwrap();
    let g = &imported.graph;
    let names =
        |id: NodeId| -> Vec<String> { g.node(id).axes.iter().map(|a| g.axis_name(*a)).collect() };
    assert_eq!(names(imported.inputs[0].1), ["N", "C", "H", "W"]);
    assert_eq!(names(imported.outputs[0].1), ["N", "C1", "H1", "W1"]);
}

#[test]
fn an_input_weft_needs_known_is_refused_unless_its_value_is_given_at_import() {
    // ReduceSum takes its axes as an input from opset 13: a model may make it a graph input.
    let bytes = model(
        vec![node(
            "ReduceSum",
            "rsum",
            &["x", "axes"],
            &["y"],
            vec![int_attr("keepdims", 0)],
        )],
        vec![
            value_info("x", 1, &[Dim::Len(2), Dim::Len(3)]),
            value_info("axes", 7, &[Dim::Len(1)]),
        ],
        &["y"],
        vec![],
        13,
    );
    let e = import_err(&bytes);
    assert!(matches!(e, ImportError::Unsupported { .. }), "{e:?}");
    assert!(
        e.to_string().contains("rsum") && e.to_string().contains("known"),
        "{e}"
    );
    let options = weft::onnx::ImportOptions {
        known_inputs: vec![weft::onnx::KnownInput {
            name: "axes".into(),
            dims: vec![1],
            data: ArrayData::I64(vec![1]),
        }],
    };
    let imported = weft::onnx::import_bytes_with(&bytes, &options).unwrap();
    assert_eq!(
        imported.inputs.len(),
        1,
        "axes is a constant now, x the one input"
    );
    let g = &imported.graph;
    let x = imported.inputs[0].1;
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&[imported.outputs[0].1], &[x]).unwrap();
    let arr = HostArray::new(
        g.node(x).axes.clone(),
        vec![2, 3],
        ArrayData::F32(vec![1., 2., 3., 4., 5., 6.]),
    )
    .unwrap();
    let out = c.call(&[arr]).unwrap();
    close(out[0].as_slice::<f32>().unwrap(), &[6.0, 15.0]);
    // A value of another dtype or shape than the input's is an error naming the input.
    let bad = weft::onnx::ImportOptions {
        known_inputs: vec![weft::onnx::KnownInput {
            name: "axes".into(),
            dims: vec![2],
            data: ArrayData::I64(vec![0, 1]),
        }],
    };
    let e = weft::onnx::import_bytes_with(&bytes, &bad).unwrap_err();
    assert!(
        matches!(&e, ImportError::Tensor { tensor, .. } if tensor == "axes"),
        "{e:?}"
    );
}

/// Mutated and truncated models never panic the importer: each import either succeeds or
/// returns an error (bytes flipped, set to 0 or 0xff, cut short, across three seed models).
#[test]
fn mutated_models_are_imported_or_refused_never_a_panic() {
    let seeds = [
        model(
            vec![
                node(
                    "Gemm",
                    "fc",
                    &["x", "w"],
                    &["y"],
                    vec![int_attr("transB", 1)],
                ),
                node("Softmax", "sm", &["y"], &["p"], vec![int_attr("axis", 1)]),
            ],
            vec![value_info("x", 1, &[Dim::Param("batch"), Dim::Len(3)])],
            &["p"],
            vec![f32_tensor("w", &[4, 3], &[0.5; 12])],
            13,
        ),
        model(
            vec![node(
                "Conv",
                "c",
                &["x", "w"],
                &["y"],
                vec![
                    ints_attr("pads", &[1, 1, 1, 1]),
                    ints_attr("strides", &[2, 2]),
                ],
            )],
            vec![value_info(
                "x",
                1,
                &[Dim::Len(1), Dim::Len(2), Dim::Len(6), Dim::Len(6)],
            )],
            &["y"],
            vec![f32_tensor("w", &[3, 2, 3, 3], &[0.25; 54])],
            11,
        ),
        model(
            vec![
                node("Reshape", "rs", &["x", "shape"], &["r"], vec![]),
                node(
                    "Transpose",
                    "tr",
                    &["r"],
                    &["t"],
                    vec![ints_attr("perm", &[1, 0])],
                ),
                node("ReduceSum", "s", &["t", "axes"], &["y"], vec![]),
            ],
            vec![value_info("x", 1, &[Dim::Len(2), Dim::Len(6)])],
            &["y"],
            vec![
                i64_tensor("shape", &[2], &[3, 4]),
                i64_tensor("axes", &[1], &[0]),
            ],
            13,
        ),
    ];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 33) as usize
    };
    for seed in &seeds {
        for _ in 0..4000 {
            let mut bytes = seed.clone();
            for _ in 0..1 + next() % 3 {
                let i = next() % bytes.len();
                bytes[i] = match next() % 3 {
                    0 => bytes[i] ^ (1 << (next() % 8)),
                    1 => 0,
                    _ => 0xff,
                };
            }
            if next() % 4 == 0 {
                bytes.truncate(next() % bytes.len());
            }
            let _ = import_bytes(&bytes);
        }
    }
}
