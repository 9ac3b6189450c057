#![warn(missing_docs)]
//! weft: an ahead-of-time compiler for axes-labelled tensor graphs (the Nervana Graph model).
//!
//! Build a [`Graph`] (or use a [`GraphBuilder`]), bind its axis lengths, make a
//! [`Transformer`] for a [`Backend`], ask it for a [`Computation`] of some outputs given some
//! placeholders, and call it with [`HostArray`]s:
//!
//! ```
//! use weft::prelude::*;
//!
//! let g = GraphBuilder::new();
//! let h = g.axis("H", 2)?;
//! let w = g.axis("W", 3)?;
//! let x = g.placeholder("x", &[h, w], DType::F32)?;
//! let y = g.placeholder("y", &[w], DType::F32)?;
//! let z = (x + y)?.id();
//! let (x, y) = (x.id(), y.id());
//! let t = Transformer::new(g.finish(), Backend::Interpreter)?;
//! let comp = t.computation(&[z], &[x, y])?;
//! let xs = HostArray::from_vec(Axes::new([h, w])?, vec![2, 3], vec![0f32, 1., 2., 3., 4., 5.])?;
//! let ys = HostArray::from_vec(Axes::new([w])?, vec![3], vec![10f32, 20., 30.])?;
//! let out = comp.call(&[xs, ys])?;
//! assert_eq!(out[0].to_vec::<f32>()?, vec![10., 21., 32., 13., 24., 35.]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Training (docs/training.md): losses, a dense layer and optimizers are graph-building
//! functions in [`nn`]; a data set to train on is in [`datasets`].

#![forbid(unsafe_code)]

mod backend;
mod bound;
pub mod cli;
pub mod computation;
pub mod datasets;
pub mod error;
pub mod per_binding;
#[cfg(feature = "testing")]
pub mod testing;
pub mod transformer;

pub use computation::{Computation, NO_INPUTS};
pub use error::{Error, Result};
pub use transformer::{Backend, Transformer};
pub use weft_compiler::codegen::{CodegenOptions, Outline};
pub use weft_compiler::{JitOptions, LowerOptions};
pub use weft_ir::graph::{GraphBuilder, Tensor};
pub use weft_ir::{
    ArrayData, AsHostView, Axes, AxesError, Axis, AxisSlice, BinaryOp, CompareOp, ConvSpec, DType,
    DataMut, DataRef, Element, Graph, GraphError, HostArray, HostError, HostView, HostViewMut,
    Node, NodeId, Op, PoolKind, PoolSpec, ReduceOp, Role, Scalar, SliceRange, TensorInit,
    TensorKind, UnaryOp, WindowStep,
};
pub use weft_runtime::{advise_huge_pages, host_copy_bytes, Executable, Perturbation, RunError};

/// The `ndarray` crate weft's conversions use (feature `ndarray`), so a program's arrays are
/// of the same version.
#[cfg(feature = "ndarray")]
pub use ndarray;

/// Training helpers as graph-building functions: losses, a dense layer, optimizers as
/// `assign` updates (the crate weft-nn; docs/training.md). A training step is one computation
/// whose outputs include the optimizer's assigns:
///
/// ```
/// use weft::prelude::*;
///
/// // Linear regression: pred = X·w, the MSE's gradient by hand (2/n · Xᵀ(pred − y)), SGD.
/// let mut g = Graph::new();
/// let (b, f) = (g.axis("B", 4)?, g.axis("F", 2)?);
/// let x = g.placeholder("x", &[b, f], DType::F64)?;
/// let y = g.placeholder("y", &[b], DType::F64)?;
/// let w = g.variable("w", &[f], DType::F64, TensorInit::Fill(Scalar::Float(0.0)))?;
/// let pred = g.dot(x, w)?;
/// let loss = nn::mean_squared_error(&mut g, pred, y)?;
/// let resid = g.subtract(pred, y)?;
/// let xr = g.dot(resid, x)?; // contracts B
/// let scale = g.scalar(Scalar::Float(2.0 / 4.0), DType::F64)?;
/// let grad = g.multiply(scale, xr)?;
/// let step = nn::sgd(&mut g, &[(w, grad)], 0.25)?;
///
/// let t = Transformer::new(g, Backend::Jit)?;
/// let mut outputs = vec![loss];
/// outputs.extend(&step.assigns);
/// let train = t.computation(&outputs, &[x, y])?;
/// let xs = HostArray::from_vec(Axes::new([b, f])?, vec![4, 2], vec![1.0, 0., 0., 1., 1., 1., 2., -1.])?;
/// let ys = HostArray::from_vec(Axes::new([b])?, vec![4], vec![2.0, -1., 1., 5.])?; // w = (2, -1)
/// let first = train.call(&[&xs, &ys])?[0].to_vec::<f64>()?[0];
/// for _ in 0..200 {
///     train.call(&[&xs, &ys])?;
/// }
/// let last = train.call(&[&xs, &ys])?[0].to_vec::<f64>()?[0];
/// assert!(first > 1.0 && last < 1e-12);
/// let w = t.value_of(w)?.to_vec::<f64>()?;
/// assert!((w[0] - 2.0).abs() < 1e-6 && (w[1] + 1.0).abs() < 1e-6);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub use weft_nn as nn;

/// The crates weft is made of, for what the prelude does not cover.
pub use weft_compiler as compiler;
pub use weft_ir as ir;
/// The ONNX front end: an ONNX model to a weft graph (docs/onnx.md).
pub use weft_onnx as onnx;
pub use weft_runtime as runtime;

/// Everything needed to build and run graphs: `use weft::prelude::*;`.
pub mod prelude {
    pub use crate::nn::{GraphBuilderNn, TensorNn};
    pub use crate::{datasets, nn};
    pub use crate::{
        ArrayData, AsHostView, Axes, Axis, AxisSlice, Backend, Computation, ConvSpec, DType, Error,
        Graph, GraphBuilder, GraphError, HostArray, HostView, HostViewMut, JitOptions, NodeId,
        PoolKind, PoolSpec, Role, Scalar, SliceRange, Tensor, TensorInit, TensorKind, Transformer,
        NO_INPUTS,
    };
}

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// The doc examples of the inner crates, run as weft's doc-tests (`cargo test --doc -p weft`):
/// rustdoc runs an example only as a doc-test of the crate defining its item, never of one
/// re-exporting it, so build.rs copies every code block of their doc comments into `OUT_DIR`
/// (each after a heading naming its file and line) and these modules include them. The inner
/// crates set `doctest = false`.
#[cfg(doctest)]
pub mod inner_crate_doctests {
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/ir.md"))]
    pub mod ir {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/nn.md"))]
    pub mod nn {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/compiler.md"))]
    pub mod compiler {}
    #[doc = include_str!(concat!(env!("OUT_DIR"), "/runtime.md"))]
    pub mod runtime {}
}
