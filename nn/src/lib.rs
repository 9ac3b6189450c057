//! weft-nn: training helpers built from ordinary graph ops (docs/training.md), on weft-ir's
//! graph API alone (re-exported as `weft::nn`): losses ([`loss`]), a dense layer with seeded
//! initial weights ([`layer`]) and optimizers as `assign` updates ([`optim`]) — each also a
//! method of [`GraphBuilder`](weft_ir::graph::GraphBuilder) or
//! [`Tensor`](weft_ir::graph::Tensor) through the traits [`GraphBuilderNn`] and [`TensorNn`]
//! ([`tensors`], which says how the two levels meet).
//!
//! Assumes: the caller's graph, axes and nodes; nothing else. Every helper is a function of
//! `&mut Graph` that adds nodes through the public builders (no new ops), so the text form,
//! the interpreter and the JIT handle what they build like any other graph, and every check
//! the builders make applies. Guarantees: axes stay labelled (a result's axes are named in each
//! helper's documentation); bad input is a [`GraphError`] naming the helper and the tensor,
//! axis or hyper-parameter at fault, never a panic; on an error the graph may hold nodes made
//! before the check that failed (unreferenced, so dead code to every backend).
//!
//! ```
//! use weft::ir::{DType, Graph};
//! use weft::nn;
//! let mut g = Graph::new();
//! let (b, i, c) = (g.axis("B", 4)?, g.axis("I", 8)?, g.axis("C", 3)?);
//! let x = g.placeholder("x", &[b, i], DType::F32)?;
//! let labels = g.placeholder("labels", &[b], DType::I64)?;
//! let layer = nn::dense(&mut g, "fc", x, i, c, nn::Activation::Identity, nn::Init::glorot(7))?;
//! let loss = nn::softmax_cross_entropy(&mut g, layer.output, labels, c)?;
//! assert!(g.node(loss).axes.is_empty()); // the mean over the batch
//! # Ok::<(), weft::ir::GraphError>(())
//! ```

#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod layer;
pub mod loss;
pub mod optim;
pub mod tensors;

pub use layer::{conv, dense, Activation, Conv, Dense, Init, InitScheme, Random};
pub use loss::{accuracy, iota, log_softmax, mean_squared_error, one_hot, softmax_cross_entropy};
pub use optim::{adam, momentum, sgd, Adam, Updates};
pub use tensors::{ConvTensors, DenseTensors, GraphBuilderNn, StepTensors, TensorNn};

use weft_ir::axis::Axis;
use weft_ir::dtype::DType;
use weft_ir::graph::{Graph, GraphError, NodeId};

/// `op(a, b, ..)` with each operand by name or id: how the helpers name themselves in errors.
fn label(g: &Graph, op: &str, nodes: &[NodeId]) -> String {
    let args: Vec<String> = nodes.iter().map(|n| g.node_label(*n)).collect();
    format!("{op}({})", args.join(", "))
}

/// The dtype of `x`, which must be f32 or f64.
fn float_dtype(g: &Graph, op: &str, x: NodeId) -> Result<DType, GraphError> {
    let dtype = g.check_node(x)?.dtype;
    if dtype.is_float() {
        Ok(dtype)
    } else {
        Err(GraphError::UnsupportedDType {
            op: op.to_string(),
            dtype,
            expected: "f32 or f64",
        })
    }
}

/// An error unless `axis` is one of `x`'s axes.
fn require_axis(g: &Graph, op: &str, x: NodeId, axis: Axis) -> Result<(), GraphError> {
    let axes = &g.check_node(x)?.axes;
    if axes.contains(axis) {
        Ok(())
    } else {
        Err(GraphError::Axes {
            op: op.to_string(),
            message: format!(
                "axis `{}` is not an axis of `{}` {}",
                g.axis_name(axis),
                g.node_label(x),
                g.axes_name(axes)
            ),
        })
    }
}

/// A scalar constant `value` of `dtype` (a float dtype: the value rounds once to it).
fn float_scalar(g: &mut Graph, value: f64, dtype: DType) -> Result<NodeId, GraphError> {
    g.scalar(weft_ir::host::Scalar::Float(value), dtype)
}
