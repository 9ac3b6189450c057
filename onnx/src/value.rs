//! An ONNX tensor as the importer sees it: a weft node, its axes in ONNX's positional order,
//! and — for the small integer tensors shape arithmetic is made of — its elements, known at
//! import.
//!
//! Invariant: `axes` is a permutation of the node's axes (the node may store them in another
//! order: weft pairs by axis, never by position); `known`, when present, holds the elements in
//! row-major order of `axes`.

use std::rc::Rc;
use weft_ir::{ArrayData, Axis, DType, NodeId};

/// At most this many elements are kept as known data (shape tensors, small constants).
pub const KNOWN_LIMIT: usize = 1 << 16;

/// One imported ONNX tensor.
#[derive(Clone, Debug)]
pub struct Value {
    /// The weft node computing it.
    pub node: NodeId,
    /// Its axes, position by position as ONNX orders its dims.
    pub axes: Vec<Axis>,
    /// Its dtype.
    pub dtype: DType,
    /// Its elements, when known at import and at most [`KNOWN_LIMIT`].
    pub known: Option<Rc<ArrayData>>,
}

impl Value {
    /// The rank.
    pub fn rank(&self) -> usize {
        self.axes.len()
    }

    /// Its axes but those at `positions`, in order.
    pub fn axes_except(&self, positions: &[usize]) -> Vec<Axis> {
        self.axes
            .iter()
            .enumerate()
            .filter(|(i, _)| !positions.contains(i))
            .map(|(_, a)| *a)
            .collect()
    }

    /// The known elements as integers (ints and bools as they are, floats truncated).
    pub fn known_ints(&self) -> Option<Vec<i64>> {
        self.known.as_deref().map(|d| match d {
            ArrayData::I64(v) => v.clone(),
            ArrayData::I32(v) => v.iter().map(|x| *x as i64).collect(),
            ArrayData::Bool(v) => v.iter().map(|x| *x as i64).collect(),
            ArrayData::F32(v) => v.iter().map(|x| *x as i64).collect(),
            ArrayData::F64(v) => v.iter().map(|x| *x as i64).collect(),
        })
    }

    /// The known elements as floats.
    pub fn known_floats(&self) -> Option<Vec<f64>> {
        self.known.as_deref().map(|d| match d {
            ArrayData::I64(v) => v.iter().map(|x| *x as f64).collect(),
            ArrayData::I32(v) => v.iter().map(|x| *x as f64).collect(),
            ArrayData::Bool(v) => v.iter().map(|x| *x as u8 as f64).collect(),
            ArrayData::F32(v) => v.iter().map(|x| *x as f64).collect(),
            ArrayData::F64(v) => v.clone(),
        })
    }
}
