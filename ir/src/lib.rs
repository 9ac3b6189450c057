#![warn(missing_docs)]
//! weft-ir: the data weft compiles — axes, dtypes, host arrays, the axes-labelled op graph, its
//! text form, the loop IR and TensorWrapper's shape algebra — and the training helpers that
//! build graphs from ordinary ops ([`nn`]). It knows no backend.

#![forbid(unsafe_code)]

pub mod arena;
pub mod autodiff;
pub mod axis;
mod axis_names;
pub mod dtype;
pub mod graph;
pub mod host;
pub mod host_display;
pub mod host_view;
pub mod loop_ir;
pub mod nn;
pub mod perturb;
pub mod scalar;
pub mod shape;
pub mod size;

// The text format, and random graphs for property tests.
#[cfg(feature = "testing")]
pub mod testing;
pub mod text;

pub use axis::{
    Axes, AxesError, Axis, AxisDef, AxisId, Role, SliceRange, WindowKernel, WindowStep,
};
pub use dtype::DType;
pub use graph::{
    AxisSlice, BinaryOp, CompareOp, ConvSpec, Graph, GraphError, KindFlags, Node, NodeId, Op,
    PoolKind, PoolSpec, ReduceOp, SumOfProducts, TensorInit, TensorKind, UnaryOp,
};
pub use host::{ArrayData, Element, HostArray, HostError, Scalar};
pub use host_view::{AsHostView, DataRef, HostView, Inputs};
pub use size::{TensorSize, MAX_TENSOR_BYTES};
