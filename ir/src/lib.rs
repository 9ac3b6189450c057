#![warn(missing_docs)]
//! weft-ir: the data weft compiles — axes, dtypes, host arrays, the axes-labelled op graph, its
//! text form, the loop IR and TensorWrapper's shape algebra. It knows no backend; the training
//! helpers (weft-nn) and the test oracle and random graphs (weft-oracle) are crates of their
//! own, built on this one.

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
pub mod perturb;
pub mod random;
pub mod scalar;
pub mod shape;
pub mod size;

// The text format.
pub mod text;

pub use axis::{
    Axes, AxesError, Axis, AxisDef, AxisId, Role, SliceRange, WindowKernel, WindowStep,
};
pub use dtype::DType;
pub use graph::{
    AxisSlice, BinaryOp, CompareOp, ConvSpec, Graph, GraphError, KindFlags, Node, NodeId, Op,
    PoolKind, PoolSpec, ReduceOp, SumOfProducts, TensorInit, TensorKind, UnaryOp,
};
pub use host::{ArrayData, DataMut, DataRef, Element, HostArray, HostError, Scalar};
pub use host_view::{AsHostView, HostView, HostViewMut, Inputs, OutputArrays};
pub use size::{TensorSize, MAX_TENSOR_BYTES};
