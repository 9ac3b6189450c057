//! What an op's import reads and the graph helpers every op shares: the node's inputs and
//! attributes, errors that name the node, fresh axes, and views that move a value's axes.
//!
//! Assumes: the inputs are earlier values of the same graph (the importer's order).
//! Guarantees: every error names the node, op and opset; every helper keeps the
//! [`Value`] invariant (its positional axes are its node's axes).

use crate::error::{At, ImportError};
use crate::naming::Namer;
use crate::proto::Attrs;
use crate::value::{Value, KNOWN_LIMIT};
use onnx_protobuf::NodeProto;
use std::rc::Rc;
use weft_ir::TensorInit;
use weft_ir::{ArrayData, Axis, AxisSlice, DType, Graph, GraphError, NodeId, Role, Scalar};

/// One node's import: the graph it adds to, the node, its inputs.
pub struct Cx<'a> {
    /// The graph being built.
    pub g: &'a mut Graph,
    /// The node, for its attributes.
    pub node: &'a NodeProto,
    /// Where errors point.
    pub at: At,
    /// The inputs, `None` where an optional input is omitted (`""`).
    pub inputs: Vec<Option<Value>>,
    /// The model's axis names.
    pub namer: &'a mut Namer,
}

impl<'a> Cx<'a> {
    /// The node's attributes.
    pub fn attrs(&self) -> Attrs<'a> {
        Attrs::new(self.node, self.at.clone())
    }

    /// The opset the model imports.
    pub fn opset(&self) -> i64 {
        self.at.opset
    }

    /// Input `i`, which the op requires.
    pub fn input(&self, i: usize) -> Result<Value, ImportError> {
        self.opt_input(i).ok_or_else(|| {
            self.malformed(format!(
                "input {i} is required (the node has {})",
                self.inputs.len()
            ))
        })
    }

    /// Input `i`, if given.
    pub fn opt_input(&self, i: usize) -> Option<Value> {
        self.inputs.get(i).cloned().flatten()
    }

    /// Input `i`'s elements, which must be known when the model is imported (shapes, axes,
    /// pads, ...): `None` when the input is omitted.
    pub fn known_ints(&self, i: usize, what: &str) -> Result<Option<Vec<i64>>, ImportError> {
        let Some(v) = self.opt_input(i) else {
            return Ok(None);
        };
        v.known_ints().map(Some).ok_or_else(|| {
            self.unsupported(format!(
                "input {i} ({what}) is computed at run time; weft needs it known when the model is imported (a constant, an initializer, or shape arithmetic on known lengths)"
            ))
        })
    }

    /// An error: the node is not well formed.
    pub fn malformed(&self, message: String) -> ImportError {
        ImportError::Malformed {
            at: self.at.clone(),
            message,
        }
    }

    /// An error: weft does not support this use of the op.
    pub fn unsupported(&self, message: String) -> ImportError {
        ImportError::Unsupported {
            at: self.at.clone(),
            message,
        }
    }

    /// An error: shapes disagree.
    pub fn shape_err(&self, message: String) -> ImportError {
        ImportError::Shape {
            at: self.at.clone(),
            message,
        }
    }

    /// The graph's result, its error naming the node.
    pub fn ok<T>(&self, r: Result<T, GraphError>) -> Result<T, ImportError> {
        r.map_err(|source| ImportError::Graph {
            at: self.at.clone(),
            source: Box::new(source),
        })
    }

    /// A new axis named `name`, numbered when the name is taken.
    pub fn fresh(&mut self, name: &str, len: Option<usize>, roles: Vec<Role>) -> Axis {
        let name = self.namer.unique(name);
        self.g.axis_labelled(&name, len, roles)
    }

    /// Axis `a`'s length, which `what` needs bound.
    pub fn fixed_len(&self, a: Axis, what: &str) -> Result<usize, ImportError> {
        self.len(a).ok_or_else(|| {
            self.unsupported(format!(
                "{what} needs the length of axis `{}`, which is symbolic",
                self.g.axis_name(a)
            ))
        })
    }

    /// An axis's length, if bound.
    pub fn len(&self, a: Axis) -> Option<usize> {
        self.g.axis_len(a)
    }

    /// A value's dims (unbound ones `None`).
    pub fn dims(&self, v: &Value) -> Vec<Option<usize>> {
        v.axes.iter().map(|a| self.len(*a)).collect()
    }

    /// A value's dims, every one bound (an error naming the op otherwise).
    pub fn fixed_dims(&self, v: &Value, what: &str) -> Result<Vec<usize>, ImportError> {
        v.axes.iter().map(|a| self.fixed_len(*a, what)).collect()
    }

    /// `axis` (ONNX's, negative counting from the end) as a position in `0..rank`.
    pub fn position(&self, axis: i64, rank: usize) -> Result<usize, ImportError> {
        let r = rank as i64;
        let p = if axis < 0 { axis + r } else { axis };
        if (0..r).contains(&p) {
            Ok(p as usize)
        } else {
            Err(self.malformed(format!("axis {axis} is outside a tensor of rank {rank}")))
        }
    }

    /// `v`'s node with its axes in `v`'s positional order.
    pub fn ordered(&mut self, v: &Value) -> Result<NodeId, ImportError> {
        if self.g.node(v.node).axes.as_slice() == v.axes.as_slice() {
            return Ok(v.node);
        }
        let r = self.g.axes_with_order(v.node, &v.axes);
        self.ok(r)
    }

    /// `v` relabelled position by position with `to` (equal lengths).
    pub fn relabel(&mut self, v: &Value, to: &[Axis]) -> Result<Value, ImportError> {
        if v.axes.as_slice() == to {
            return Ok(v.clone());
        }
        let n = self.ordered(v)?;
        let r = self.g.cast_axes(n, to);
        let node = self.ok(r)?;
        Ok(Value {
            node,
            axes: to.to_vec(),
            ..v.clone()
        })
    }

    /// `v` with each listed position (length 1) dropped.
    pub fn drop_units(&mut self, v: &Value, positions: &[usize]) -> Result<Value, ImportError> {
        if positions.is_empty() {
            return Ok(v.clone());
        }
        let slices: Vec<(Axis, AxisSlice)> = positions
            .iter()
            .map(|p| (v.axes[*p], AxisSlice::Index(0)))
            .collect();
        let r = self.g.slice(v.node, &slices);
        let node = self.ok(r)?;
        let axes = v.axes_except(positions);
        Ok(Value {
            node,
            axes,
            dtype: v.dtype,
            known: None,
        })
    }

    /// `v` with a new axis of length 1 at position `pos`.
    pub fn insert_unit(&mut self, v: &Value, pos: usize) -> Result<Value, ImportError> {
        let unit = self.fresh("one", Some(1), Vec::new());
        let n = self.ordered(v)?;
        let r = self.g.expand_dims(n, unit, pos);
        let node = self.ok(r)?;
        let mut axes = v.axes.clone();
        axes.insert(pos, unit);
        Ok(Value {
            node,
            axes,
            dtype: v.dtype,
            known: v.known.clone(),
        })
    }

    /// A constant of `shape` holding `data` (row-major); its elements are kept as known data
    /// when small.
    pub fn constant(&mut self, shape: &[usize], data: ArrayData) -> Result<Value, ImportError> {
        let axes: Vec<Axis> = shape
            .iter()
            .enumerate()
            .map(|(i, n)| self.fresh(&format!("k{i}"), Some(*n), Vec::new()))
            .collect();
        let dtype = data.dtype();
        let known = (data.len() <= KNOWN_LIMIT).then(|| Rc::new(data.clone()));
        let r = self.g.constant(None, &axes, dtype, TensorInit::data(data));
        let node = self.ok(r)?;
        Ok(Value {
            node,
            axes,
            dtype,
            known,
        })
    }

    /// A constant of `shape` with every element `value`.
    pub fn fill(
        &mut self,
        shape: &[usize],
        dtype: DType,
        value: Scalar,
    ) -> Result<Value, ImportError> {
        let count: usize = shape.iter().product();
        if count <= KNOWN_LIMIT {
            return self.constant(shape, repeat(value, dtype, count));
        }
        let axes: Vec<Axis> = shape
            .iter()
            .enumerate()
            .map(|(i, n)| self.fresh(&format!("k{i}"), Some(*n), Vec::new()))
            .collect();
        let r = self.g.constant(None, &axes, dtype, TensorInit::Fill(value));
        let node = self.ok(r)?;
        Ok(Value {
            node,
            axes,
            dtype,
            known: None,
        })
    }

    /// A scalar constant of `dtype`.
    pub fn scalar(&mut self, value: f64, dtype: DType) -> Result<NodeId, ImportError> {
        let s = if dtype.is_float() {
            Scalar::Float(value)
        } else if dtype == DType::Bool {
            Scalar::Bool(value != 0.0)
        } else {
            Scalar::Int(value as i64)
        };
        let r = self.g.scalar(s, dtype);
        self.ok(r)
    }

    /// A value computed by node `node` over the positional axes `axes`.
    pub fn value(&self, node: NodeId, axes: Vec<Axis>) -> Value {
        Value {
            node,
            axes,
            dtype: self.g.node(node).dtype,
            known: None,
        }
    }
}

/// `count` copies of `value` as `dtype` data.
pub fn repeat(value: Scalar, dtype: DType, count: usize) -> ArrayData {
    let f = match value {
        Scalar::Float(f) => f,
        Scalar::Int(i) => i as f64,
        Scalar::Bool(b) => b as u8 as f64,
    };
    let i = match value {
        Scalar::Float(f) => f as i64,
        Scalar::Int(i) => i,
        Scalar::Bool(b) => b as i64,
    };
    match dtype {
        DType::F32 => ArrayData::F32(vec![f as f32; count]),
        DType::F64 => ArrayData::F64(vec![f; count]),
        DType::I32 => ArrayData::I32(vec![i as i32; count]),
        DType::I64 => ArrayData::I64(vec![i; count]),
        DType::Bool => ArrayData::Bool(vec![i != 0; count]),
    }
}
