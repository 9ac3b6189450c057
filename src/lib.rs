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

#![forbid(unsafe_code)]

pub mod cli;
pub mod computation;
pub mod datasets;
pub mod error;
pub mod per_binding;
pub mod transformer;

pub use computation::{Computation, NO_INPUTS};
pub use error::{Error, Result};
pub use transformer::{Backend, Transformer};
pub use weft_compiler::codegen::CodegenOptions;
pub use weft_compiler::{JitOptions, LowerOptions};
pub use weft_ir::graph::{GraphBuilder, Tensor};
pub use weft_ir::{
    ArrayData, AsHostView, Axes, AxesError, Axis, AxisSlice, BinaryOp, CompareOp, DType, DataRef,
    Element, Graph, GraphError, HostArray, HostError, HostView, Node, NodeId, Op, ReduceOp, Role,
    Scalar, SliceRange, TensorInit, TensorKind, UnaryOp,
};
pub use weft_runtime::{host_copy_bytes, Executable, Perturbation, RunError};

/// The `ndarray` crate weft's conversions use (feature `ndarray`), so a program's arrays are
/// of the same version.
#[cfg(feature = "ndarray")]
pub use ndarray;

/// Training helpers as graph-building functions: losses, a dense layer, optimizers
/// (`weft_ir::nn`; docs/training.md).
pub use weft_ir::nn;

/// The crates weft is made of, for what the prelude does not cover.
pub use weft_compiler as compiler;
pub use weft_ir as ir;
pub use weft_runtime as runtime;

/// Everything needed to build and run graphs: `use weft::prelude::*;`.
pub mod prelude {
    pub use crate::{datasets, nn};
    pub use crate::{
        ArrayData, AsHostView, Axes, Axis, AxisSlice, Backend, Computation, DType, Error, Graph,
        GraphBuilder, HostArray, HostView, JitOptions, NodeId, Scalar, SliceRange, Tensor,
        TensorInit, TensorKind, Transformer, NO_INPUTS,
    };
}

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
