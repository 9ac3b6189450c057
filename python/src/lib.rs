//! weft for Python: the native module `weft._weft` under the `weft` package (python/weft/),
//! which gives it nGraph-python's names.
//!
//! Assumes: the Python layer passes node ids this module handed out for the same `Graph`,
//! and axes of that graph (both are checked: a foreign or unknown one is an error, never a
//! panic); arrays are NumPy arrays (anything else is refused with a `TypeError`).
//!
//! Guarantees: every weft error becomes an exception of `weft.errors` (its message weft's own,
//! naming the op, axis, tensor or input); nothing here panics on bad input. Inputs that are
//! C-contiguous arrays of the placeholder's dtype are read in place — borrowed for the call,
//! not copied (`Computation::call` reads `HostView`s of their memory); a non-contiguous or
//! misaligned array is copied once, a number or list converted to the placeholder's dtype, an
//! array of another dtype refused. Outputs are the arrays weft wrote, lent to NumPy without a
//! copy, their memory given back for later calls when NumPy drops them (`Spares`). The GIL is
//! released while a computation compiles and while it runs — but for calls whose last run took
//! under 20 µs, where giving it up and taking it back would cost more than the call — so
//! Python threads call computations concurrently.

// No unsafe of its own: PyO3 and rust-numpy do the FFI (their macros allow what they emit).
#![deny(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use numpy::{
    PyArray, PyArrayMethods, PyReadonlyArrayDyn, PyReadwriteArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use weft::prelude::*;
use weft::{ArrayData, AxisSlice, BinaryOp, CompareOp, HostView, NodeId, ReduceOp, SliceRange};
use weft::{Op, UnaryOp};

// ---- errors ------------------------------------------------------------------------------

/// An exception of class `kind` of the pure-Python `weft.errors` module with `message`.
fn raise(py: Python<'_>, kind: &str, message: String) -> PyErr {
    let made = py
        .import("weft.errors")
        .and_then(|m| m.getattr(kind))
        .and_then(|class| class.call1((message.clone(),)));
    match made {
        Ok(exception) => PyErr::from_value(exception),
        Err(e) => e,
    }
}

/// Which `weft.errors` class a graph error belongs to.
fn graph_error_kind(e: &weft::GraphError) -> &'static str {
    let variant = format!("{e:?}");
    let name = variant.split([' ', '(', '{']).next().unwrap_or("");
    if name.contains("DType") {
        "DTypeError"
    } else if name.contains("Axis") || name.contains("Axes") || name == "LengthMismatch" {
        "AxisError"
    } else {
        "GraphError"
    }
}

/// A weft error as the `weft.errors` exception of its kind.
fn to_py(py: Python<'_>, e: weft::Error) -> PyErr {
    use weft::Error as E;
    let kind = match &e {
        E::Graph(g) => graph_error_kind(g),
        E::Axes(_) => "AxisError",
        E::Compile(_) | E::UnboundState { .. } => "CompileError",
        _ => "CallError",
    };
    raise(py, kind, e.to_string())
}

fn graph_err(py: Python<'_>, e: weft::GraphError) -> PyErr {
    raise(py, graph_error_kind(&e), e.to_string())
}

// ---- dtypes ------------------------------------------------------------------------------

/// NumPy's name of `d`.
fn dtype_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::I32 => "int32",
        DType::I64 => "int64",
        DType::Bool => "bool",
    }
}

fn parse_dtype(py: Python<'_>, name: &str) -> PyResult<DType> {
    Ok(match name {
        "float32" => DType::F32,
        "float64" => DType::F64,
        "int32" => DType::I32,
        "int64" => DType::I64,
        "bool" => DType::Bool,
        other => {
            return Err(raise(
                py,
                "DTypeError",
                format!("weft has no dtype `{other}` (float32, float64, int32, int64, bool)"),
            ))
        }
    })
}

// ---- axes --------------------------------------------------------------------------------

/// An axis of a graph: a named dimension with an identity (two axes of one name and length are
/// different axes). `A + 1` is its dual `A*`, `A - 1` the axis whose dual it is.
#[pyclass(frozen, module = "weft._weft")]
struct Axis {
    axis: weft::Axis,
    graph: Arc<Mutex<weft::Graph>>,
}

impl Axis {
    fn with(&self, axis: weft::Axis) -> Axis {
        Axis {
            axis,
            graph: Arc::clone(&self.graph),
        }
    }
}

#[pymethods]
impl Axis {
    /// The name given when it was made (its dual degree not included).
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        let g = lock(py, &self.graph)?;
        Ok(g.axis_data(self.axis.id).name.clone())
    }
    /// Its length, or None while it is unbound (bound at call time by the inputs).
    #[getter]
    fn length(&self, py: Python<'_>) -> PyResult<Option<usize>> {
        Ok(lock(py, &self.graph)?.axis_len(self.axis))
    }
    /// Its roles' names (`Height`, `Channel`, …).
    #[getter]
    fn roles(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let g = lock(py, &self.graph)?;
        Ok(g.axis_data(self.axis.id)
            .roles
            .iter()
            .map(|r| r.name().to_string())
            .collect())
    }
    /// Gives the axis its length (nGraph's `H.length = 3`; `Graph::bind`): transformers made
    /// afterwards compile with it, computations made before keep theirs.
    #[setter]
    fn set_length(&self, py: Python<'_>, length: usize) -> PyResult<()> {
        let mut g = lock(py, &self.graph)?;
        g.bind(self.axis, length).map_err(|e| graph_err(py, e))
    }
    /// Its dual degree: 0 for a declared axis, 1 for its dual `A*`, …
    #[getter]
    fn dual_degree(&self) -> i32 {
        self.axis.dual
    }
    /// The dual axis `A*` (degree + 1).
    fn dual(&self) -> Axis {
        self.with(self.axis.dual())
    }
    /// The axis whose dual this one is (degree − 1).
    fn undual(&self) -> Axis {
        self.with(self.axis.undual())
    }
    /// The axis a transpose turns this one into (`A` ↔ `A*`).
    #[getter(T)]
    fn transposed(&self) -> Axis {
        self.with(self.axis.transposed())
    }
    fn __add__(&self, k: i32) -> Axis {
        self.with(self.axis.with_dual(self.axis.dual.saturating_add(k)))
    }
    fn __sub__(&self, k: i32) -> Axis {
        self.with(self.axis.with_dual(self.axis.dual.saturating_sub(k)))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Axis>()
            .is_ok_and(|o| o.get().axis == self.axis && Arc::ptr_eq(&o.get().graph, &self.graph))
    }
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.axis.hash(&mut h);
        h.finish()
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let g = lock(py, &self.graph)?;
        let len = g
            .axis_len(self.axis)
            .map_or("unbound".into(), |n| n.to_string());
        Ok(format!("Axis({}, length={len})", g.axis_name(self.axis)))
    }
}

fn lock<'a>(py: Python<'_>, g: &'a Mutex<weft::Graph>) -> PyResult<MutexGuard<'a, weft::Graph>> {
    g.lock().map_err(|_| {
        raise(
            py,
            "WeftError",
            "the graph was poisoned by an earlier failure".into(),
        )
    })
}

/// The weft axes of `axes`, each checked to belong to `graph`.
fn axes_of(
    py: Python<'_>,
    graph: &Arc<Mutex<weft::Graph>>,
    axes: &[Bound<'_, Axis>],
) -> PyResult<Vec<weft::Axis>> {
    axes.iter()
        .map(|a| {
            let a = a.get();
            if Arc::ptr_eq(&a.graph, graph) {
                Ok(a.axis)
            } else {
                Err(raise(
                    py,
                    "AxisError",
                    format!("axis {} belongs to another graph", a.__repr__(py)?),
                ))
            }
        })
        .collect()
}

// ---- graphs ------------------------------------------------------------------------------

/// A graph under construction: axes and ops, each op a node id.
#[pyclass(frozen, module = "weft._weft")]
struct Graph {
    graph: Arc<Mutex<weft::Graph>>,
}

impl Graph {
    fn node(&self, py: Python<'_>, g: &weft::Graph, id: u32) -> PyResult<NodeId> {
        let node = NodeId::from_u32(id);
        if g.get(node).is_none() {
            return Err(raise(
                py,
                "GraphError",
                format!("no op #{id} in this graph"),
            ));
        }
        Ok(node)
    }
    /// Runs `f` on the locked graph, with the node ids checked.
    fn edit<const N: usize>(
        &self,
        py: Python<'_>,
        ids: [u32; N],
        f: impl FnOnce(&mut weft::Graph, [NodeId; N]) -> Result<NodeId, weft::GraphError>,
    ) -> PyResult<u32> {
        let mut g = lock(py, &self.graph)?;
        let mut nodes = [NodeId::from_u32(0); N];
        for (n, id) in nodes.iter_mut().zip(ids) {
            *n = self.node(py, &g, id)?;
        }
        f(&mut g, nodes)
            .map(NodeId::as_u32)
            .map_err(|e| graph_err(py, e))
    }
    fn axes(&self, py: Python<'_>, axes: &[Bound<'_, Axis>]) -> PyResult<Vec<weft::Axis>> {
        axes_of(py, &self.graph, axes)
    }
    fn axis_obj(&self, axis: weft::Axis) -> Axis {
        Axis {
            axis,
            graph: Arc::clone(&self.graph),
        }
    }
}

/// Elements of a C-contiguous array as weft data (one copy: a constant's or variable's
/// initial value, kept by the graph).
fn array_data(py: Python<'_>, value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<ArrayData> {
    fn take<T: numpy::Element + Copy>(v: &Bound<'_, PyAny>) -> PyResult<Vec<T>> {
        let a = v.extract::<PyReadonlyArrayDyn<'_, T>>()?;
        Ok(a.as_slice()
            .map_err(|e| PyTypeError::new_err(e.to_string()))?
            .to_vec())
    }
    let wrong = |_| {
        raise(
            py,
            "DTypeError",
            format!(
                "the value is not a C-contiguous {} array",
                dtype_name(dtype)
            ),
        )
    };
    Ok(match dtype {
        DType::F32 => ArrayData::F32(take(value).map_err(wrong)?),
        DType::F64 => ArrayData::F64(take(value).map_err(wrong)?),
        DType::I32 => ArrayData::I32(take(value).map_err(wrong)?),
        DType::I64 => ArrayData::I64(take(value).map_err(wrong)?),
        DType::Bool => ArrayData::Bool(take(value).map_err(wrong)?),
    })
}

fn init_of(py: Python<'_>, value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<TensorInit> {
    if let Ok(x) = value.extract::<f64>() {
        if !value.is_instance_of::<PyUntypedArray>() {
            let s = match dtype {
                DType::F32 | DType::F64 => weft::Scalar::Float(x),
                DType::Bool => weft::Scalar::Bool(x != 0.0),
                _ => weft::Scalar::Int(value.extract::<i64>().unwrap_or(x as i64)),
            };
            return Ok(TensorInit::Fill(s));
        }
    }
    Ok(TensorInit::data(array_data(py, value, dtype)?))
}

#[pymethods]
impl Graph {
    #[new]
    fn new() -> Graph {
        Graph {
            graph: Arc::new(Mutex::new(weft::Graph::new())),
        }
    }

    /// A new axis; `length` None leaves it unbound (bound at call time by the inputs);
    /// `roles` by name (`Height`, `Width`, `Depth`, `Channel`, `Channelout`, `Time`, or a
    /// role of the user's own): how convolution and pooling pair it.
    #[pyo3(signature = (name, length=None, roles=Vec::new()))]
    fn axis(
        &self,
        py: Python<'_>,
        name: &str,
        length: Option<usize>,
        roles: Vec<String>,
    ) -> PyResult<Axis> {
        let mut g = lock(py, &self.graph)?;
        let roles = roles.iter().map(|r| weft::Role::parse(r)).collect();
        let axis = g
            .axis_with_roles(name, length, roles)
            .map_err(|e| graph_err(py, e))?;
        Ok(self.axis_obj(axis))
    }

    /// The convolution of `x` with `filter`, paired by axis role: `steps` per spatial role
    /// `(role, stride, dilation, pad before, pad after)`, `groups` channel groups.
    #[pyo3(signature = (x, filter, steps, groups=1))]
    fn convolution(
        &self,
        py: Python<'_>,
        x: u32,
        filter: u32,
        steps: Vec<(String, usize, usize, usize, usize)>,
        groups: usize,
    ) -> PyResult<u32> {
        let spec = weft::ConvSpec {
            steps: steps
                .iter()
                .map(|(role, stride, dilation, before, after)| {
                    (
                        weft::Role::parse(role),
                        weft::WindowStep {
                            stride: *stride,
                            dilation: *dilation,
                            before: *before,
                            after: *after,
                        },
                    )
                })
                .collect(),
            groups,
        };
        self.edit(py, [x, filter], |g, [x, f]| g.convolution(x, f, &spec))
    }

    /// A max or avg pool of `x`: `windows` per pooled role `(role, taps, stride, dilation,
    /// pad before, pad after)`.
    fn pool(
        &self,
        py: Python<'_>,
        x: u32,
        kind: &str,
        windows: Vec<(String, usize, usize, usize, usize, usize)>,
    ) -> PyResult<u32> {
        let kind = match kind {
            "max" => weft::PoolKind::Max,
            "avg" | "mean" => weft::PoolKind::Avg,
            other => {
                return Err(raise(
                    py,
                    "GraphError",
                    format!("pooling: no pool `{other}` (max, avg)"),
                ))
            }
        };
        let spec = weft::PoolSpec {
            kind,
            windows: windows
                .iter()
                .map(|(role, taps, stride, dilation, before, after)| {
                    (
                        weft::Role::parse(role),
                        *taps,
                        weft::WindowStep {
                            stride: *stride,
                            dilation: *dilation,
                            before: *before,
                            after: *after,
                        },
                    )
                })
                .collect(),
        };
        self.edit(py, [x], |g, [x]| g.pool(x, &spec))
    }

    /// Whether an axis of this name exists.
    fn has_axis(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        Ok(lock(py, &self.graph)?.find_axis(name).is_some())
    }

    /// The number of ops so far (ids run from 0).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(lock(py, &self.graph)?.len())
    }

    /// Whether an op of this name exists.
    fn has_name(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        Ok(lock(py, &self.graph)?.find(name).is_some())
    }

    /// The op of this name, or None.
    fn find(&self, py: Python<'_>, name: &str) -> PyResult<Option<u32>> {
        Ok(lock(py, &self.graph)?.find(name).map(NodeId::as_u32))
    }

    fn placeholder(
        &self,
        py: Python<'_>,
        name: &str,
        axes: Vec<Bound<'_, Axis>>,
        dtype: &str,
    ) -> PyResult<u32> {
        let (axes, dtype) = (self.axes(py, &axes)?, parse_dtype(py, dtype)?);
        self.edit(py, [], |g, []| g.placeholder(name, &axes, dtype))
    }

    /// A constant: `value` a number (every element) or a C-contiguous array of `dtype` in the
    /// order of `axes`.
    #[pyo3(signature = (name, axes, dtype, value))]
    fn constant(
        &self,
        py: Python<'_>,
        name: Option<&str>,
        axes: Vec<Bound<'_, Axis>>,
        dtype: &str,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<u32> {
        let (axes, dtype) = (self.axes(py, &axes)?, parse_dtype(py, dtype)?);
        let init = init_of(py, value, dtype)?;
        self.edit(py, [], |g, []| g.constant(name, &axes, dtype, init))
    }

    fn variable(
        &self,
        py: Python<'_>,
        name: &str,
        axes: Vec<Bound<'_, Axis>>,
        dtype: &str,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<u32> {
        let (axes, dtype) = (self.axes(py, &axes)?, parse_dtype(py, dtype)?);
        let init = init_of(py, value, dtype)?;
        self.edit(py, [], |g, []| g.variable(name, &axes, dtype, init))
    }

    #[pyo3(signature = (name, axes, dtype, value=None))]
    fn persistent_tensor(
        &self,
        py: Python<'_>,
        name: &str,
        axes: Vec<Bound<'_, Axis>>,
        dtype: &str,
        value: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<u32> {
        let (axes, dtype) = (self.axes(py, &axes)?, parse_dtype(py, dtype)?);
        let init = value.map(|v| init_of(py, v, dtype)).transpose()?;
        self.edit(py, [], |g, []| {
            g.persistent_tensor(name, &axes, dtype, init)
        })
    }

    /// An elementwise function by weft's name (`exp`, `log`, `tanh`, `negative`, …).
    fn unary(&self, py: Python<'_>, op: &str, x: u32) -> PyResult<u32> {
        let op = UnaryOp::from_name(op).ok_or_else(|| {
            raise(
                py,
                "GraphError",
                format!("weft has no elementwise function `{op}`"),
            )
        })?;
        self.edit(py, [x], |g, [x]| g.unary(op, x))
    }

    /// An elementwise operation of two tensors, paired by axis (`add`, `multiply`, …).
    fn binary(&self, py: Python<'_>, op: &str, x: u32, y: u32) -> PyResult<u32> {
        let op = BinaryOp::from_name(op).ok_or_else(|| {
            raise(
                py,
                "GraphError",
                format!("weft has no binary operation `{op}`"),
            )
        })?;
        self.edit(py, [x, y], |g, [x, y]| g.binary(op, x, y))
    }

    /// A comparison (`equal`, `less`, …), a bool tensor.
    fn compare(&self, py: Python<'_>, op: &str, x: u32, y: u32) -> PyResult<u32> {
        let op = CompareOp::from_name(op)
            .ok_or_else(|| raise(py, "GraphError", format!("weft has no comparison `{op}`")))?;
        self.edit(py, [x, y], |g, [x, y]| g.compare(op, x, y))
    }

    fn select(&self, py: Python<'_>, cond: u32, a: u32, b: u32) -> PyResult<u32> {
        self.edit(py, [cond, a, b], |g, [c, a, b]| g.select(c, a, b))
    }

    fn convert(&self, py: Python<'_>, x: u32, dtype: &str) -> PyResult<u32> {
        let dtype = parse_dtype(py, dtype)?;
        self.edit(py, [x], |g, [x]| g.convert(x, dtype))
    }

    /// A reduction (`sum`, `prod`, `max`, `min`, `mean`, `argmax`, `argmin`) over
    /// `reduction_axes`, its result in the order `out_axes` gives (if given).
    #[pyo3(signature = (op, x, reduction_axes, out_axes=None))]
    fn reduce(
        &self,
        py: Python<'_>,
        op: &str,
        x: u32,
        reduction_axes: Vec<Bound<'_, Axis>>,
        out_axes: Option<Vec<Bound<'_, Axis>>>,
    ) -> PyResult<u32> {
        let op = ReduceOp::from_name(op)
            .ok_or_else(|| raise(py, "GraphError", format!("weft has no reduction `{op}`")))?;
        let axes = self.axes(py, &reduction_axes)?;
        let out = out_axes.map(|o| self.axes(py, &o)).transpose()?;
        self.edit(py, [x], |g, [x]| g.reduce(op, x, &axes, out.as_deref()))
    }

    fn dot(&self, py: Python<'_>, x: u32, y: u32) -> PyResult<u32> {
        self.edit(py, [x, y], |g, [x, y]| g.dot(x, y))
    }

    fn broadcast(&self, py: Python<'_>, x: u32, axes: Vec<Bound<'_, Axis>>) -> PyResult<u32> {
        let axes = self.axes(py, &axes)?;
        self.edit(py, [x], |g, [x]| g.broadcast(x, &axes))
    }

    fn axes_with_order(&self, py: Python<'_>, x: u32, axes: Vec<Bound<'_, Axis>>) -> PyResult<u32> {
        let axes = self.axes(py, &axes)?;
        self.edit(py, [x], |g, [x]| g.axes_with_order(x, &axes))
    }

    fn cast_axes(&self, py: Python<'_>, x: u32, axes: Vec<Bound<'_, Axis>>) -> PyResult<u32> {
        let axes = self.axes(py, &axes)?;
        self.edit(py, [x], |g, [x]| g.cast_axes(x, &axes))
    }

    fn transpose(&self, py: Python<'_>, x: u32) -> PyResult<u32> {
        self.edit(py, [x], |g, [x]| g.transpose(x))
    }

    /// A slice: per axis, an index (the axis is dropped) or `(start, stop, step)` with None
    /// for an open end (a derived axis takes its place).
    fn slice(
        &self,
        py: Python<'_>,
        x: u32,
        slices: Vec<(Bound<'_, Axis>, Bound<'_, PyAny>)>,
    ) -> PyResult<u32> {
        let mut spec = Vec::with_capacity(slices.len());
        for (axis, s) in &slices {
            let axis = self.axes(py, std::slice::from_ref(axis))?[0];
            let how = if let Ok(i) = s.extract::<i64>() {
                AxisSlice::Index(i)
            } else {
                let (start, stop, step) = s.extract::<(Option<i64>, Option<i64>, Option<i64>)>()?;
                AxisSlice::Range(SliceRange {
                    start,
                    stop,
                    step: step.unwrap_or(1),
                })
            };
            spec.push((axis, how));
        }
        self.edit(py, [x], |g, [x]| g.slice(x, &spec))
    }

    fn flatten(&self, py: Python<'_>, x: u32, axes: Vec<Bound<'_, Axis>>) -> PyResult<u32> {
        let axes = self.axes(py, &axes)?;
        self.edit(py, [x], |g, [x]| g.flatten(x, &axes))
    }

    fn unflatten(&self, py: Python<'_>, x: u32, axis: Bound<'_, Axis>) -> PyResult<u32> {
        let axis = self.axes(py, &[axis])?[0];
        self.edit(py, [x], |g, [x]| g.unflatten(x, axis))
    }

    fn pad(
        &self,
        py: Python<'_>,
        x: u32,
        pads: Vec<(Bound<'_, Axis>, usize, usize)>,
    ) -> PyResult<u32> {
        let mut spec = Vec::with_capacity(pads.len());
        for (axis, before, after) in &pads {
            spec.push((
                self.axes(py, std::slice::from_ref(axis))?[0],
                *before,
                *after,
            ));
        }
        self.edit(py, [x], |g, [x]| g.pad(x, &spec))
    }

    fn concat(&self, py: Python<'_>, parts: Vec<(u32, Bound<'_, Axis>)>) -> PyResult<u32> {
        let mut g = lock(py, &self.graph)?;
        let mut spec = Vec::with_capacity(parts.len());
        for (x, axis) in &parts {
            spec.push((
                self.node(py, &g, *x)?,
                self.axes(py, std::slice::from_ref(axis))?[0],
            ));
        }
        g.concat(&spec)
            .map(NodeId::as_u32)
            .map_err(|e| graph_err(py, e))
    }

    fn expand_dims(
        &self,
        py: Python<'_>,
        x: u32,
        axis: Bound<'_, Axis>,
        pos: usize,
    ) -> PyResult<u32> {
        let axis = self.axes(py, &[axis])?[0];
        self.edit(py, [x], |g, [x]| g.expand_dims(x, axis, pos))
    }

    fn assign(&self, py: Python<'_>, target: u32, value: u32) -> PyResult<u32> {
        self.edit(py, [target, value], |g, [t, v]| g.assign(t, v))
    }

    /// The one-hot encoding of integer `labels` along `axis`.
    fn one_hot(
        &self,
        py: Python<'_>,
        labels: u32,
        axis: Bound<'_, Axis>,
        dtype: &str,
    ) -> PyResult<u32> {
        let (axis, dtype) = (self.axes(py, &[axis])?[0], parse_dtype(py, dtype)?);
        self.edit(py, [labels], |g, [x]| weft::nn::one_hot(g, x, axis, dtype))
    }

    /// The gradients of the scalar `loss` with respect to each of `wrt`.
    fn grad(&self, py: Python<'_>, loss: u32, wrt: Vec<u32>) -> PyResult<Vec<u32>> {
        let mut g = lock(py, &self.graph)?;
        let loss = self.node(py, &g, loss)?;
        let wrt = wrt
            .iter()
            .map(|&w| self.node(py, &g, w))
            .collect::<PyResult<Vec<_>>>()?;
        let grads = g.grad(loss, &wrt).map_err(|e| graph_err(py, e))?;
        Ok(grads.into_iter().map(NodeId::as_u32).collect())
    }

    /// The axes of op `x`, in order.
    fn axes_of(&self, py: Python<'_>, x: u32) -> PyResult<Vec<Axis>> {
        let g = lock(py, &self.graph)?;
        let node = self.node(py, &g, x)?;
        Ok(g.node(node)
            .axes
            .iter()
            .map(|&a| self.axis_obj(a))
            .collect())
    }

    fn dtype_of(&self, py: Python<'_>, x: u32) -> PyResult<&'static str> {
        let g = lock(py, &self.graph)?;
        let node = self.node(py, &g, x)?;
        Ok(dtype_name(g.node(node).dtype))
    }

    fn name_of(&self, py: Python<'_>, x: u32) -> PyResult<Option<String>> {
        let g = lock(py, &self.graph)?;
        let node = self.node(py, &g, x)?;
        Ok(g.node(node).name.clone())
    }

    fn set_name(&self, py: Python<'_>, x: u32, name: &str) -> PyResult<()> {
        let mut g = lock(py, &self.graph)?;
        let node = self.node(py, &g, x)?;
        g.set_name(node, name).map_err(|e| graph_err(py, e))
    }

    /// What op `x` is: `placeholder`, `constant`, `variable`, `persistent_tensor` or the op's
    /// name.
    fn kind_of(&self, py: Python<'_>, x: u32) -> PyResult<String> {
        let g = lock(py, &self.graph)?;
        let node = self.node(py, &g, x)?;
        Ok(match &g.node(node).op {
            Op::Tensor { kind, .. } => kind.keyword().to_string(),
            op => op.name().to_string(),
        })
    }

    /// The ops marked as outputs (a graph read from a `.weft` file).
    fn outputs(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        Ok(lock(py, &self.graph)?
            .outputs()
            .iter()
            .map(|n| n.as_u32())
            .collect())
    }

    /// The placeholders, in the order the graph declares them.
    fn placeholders(&self, py: Python<'_>) -> PyResult<Vec<u32>> {
        Ok(lock(py, &self.graph)?
            .placeholders()
            .into_iter()
            .map(NodeId::as_u32)
            .collect())
    }

    /// The axis of this name, or None.
    fn find_axis(&self, py: Python<'_>, name: &str) -> PyResult<Option<Axis>> {
        let g = lock(py, &self.graph)?;
        Ok(g.find_axis(name).map(|a| self.axis_obj(a)))
    }

    /// The graph in weft's text form (the `.weft` language).
    fn text(&self, py: Python<'_>) -> PyResult<String> {
        Ok(weft::ir::text::print(&*lock(py, &self.graph)?))
    }
}

/// The graph of a `.weft` program (`file` names it in errors).
#[pyfunction]
#[pyo3(signature = (source, file="<string>"))]
fn parse(py: Python<'_>, source: &str, file: &str) -> PyResult<Graph> {
    let graph =
        weft::ir::text::parse(source, file).map_err(|e| raise(py, "ParseError", e.to_string()))?;
    Ok(Graph {
        graph: Arc::new(Mutex::new(graph)),
    })
}

// ---- transformers and computations -------------------------------------------------------

fn backend_of(py: Python<'_>, name: &str) -> PyResult<Backend> {
    Ok(match name {
        "jit" | "cpu" => Backend::Jit,
        "unfused" | "jit-unfused" => Backend::JitUnfused,
        "interpreter" | "interp" => Backend::Interpreter,
        other => {
            return Err(raise(
                py,
                "WeftError",
                format!("no backend `{other}` (jit, unfused, interpreter)"),
            ))
        }
    })
}

/// A graph as it was when the transformer was made — the part of it its computations need —
/// compiled into computations that share its variables.
#[pyclass(frozen, module = "weft._weft")]
struct Transformer {
    transformer: Arc<weft::Transformer>,
    /// The Python graph's op ids → the transformer graph's (None: not part of it).
    ids: Vec<Option<NodeId>>,
    /// The JIT's options (threads, fusion), for `explain` and `dumps`.
    options: weft::JitOptions,
}

/// The ops of `g` that `roots` reach through their operands, in a graph of their own with
/// `g`'s axis table (names kept), and the map from `g`'s ids to its ids: what a transformer
/// compiles, so an op it does not need — an unbound placeholder, a tensor past the memory
/// budget, built for another model in the same module-level graph — cannot stop it.
fn reachable_part(
    g: &weft::Graph,
    roots: &[NodeId],
) -> Result<(weft::Graph, Vec<Option<NodeId>>), String> {
    use weft::compiler::passes::rebuild::{add_like, empty_like, remap_op, with_op};
    use weft::ir::arena::EntityRef;
    let mut needed = vec![false; g.len()];
    let mut stack: Vec<NodeId> = roots.to_vec();
    while let Some(id) = stack.pop() {
        let Some(slot) = needed.get_mut(id.index()) else {
            return Err(format!("no op #{} in this graph", id.as_u32()));
        };
        if !std::mem::replace(slot, true) {
            stack.extend(g.node(id).op.inputs());
        }
    }
    let mut part = empty_like(g).map_err(|e| e.to_string())?;
    let mut ids = vec![None; g.len()];
    for (id, node) in g.nodes() {
        if !needed[id.index()] {
            continue;
        }
        let op = remap_op(&node.op, |x| {
            ids[x.index()].ok_or_else(|| {
                weft::compiler::passes::PassError::Internal("an operand after its reader".into())
            })
        })
        .map_err(|e| e.to_string())?;
        let copy = add_like(&mut part, &with_op(node, op), true).map_err(|e| e.to_string())?;
        ids[id.index()] = Some(copy);
    }
    Ok((part, ids))
}

#[pymethods]
impl Transformer {
    /// A transformer for `backend` over the part of `graph` that `roots` (op ids) need;
    /// `threads`: the JIT's thread count (default: the machine's cores).
    #[new]
    #[pyo3(signature = (graph, roots, backend="jit", threads=None))]
    fn new(
        py: Python<'_>,
        graph: &Graph,
        roots: Vec<u32>,
        backend: &str,
        threads: Option<usize>,
    ) -> PyResult<Transformer> {
        let backend = backend_of(py, backend)?;
        let roots: Vec<NodeId> = roots.into_iter().map(NodeId::from_u32).collect();
        let (part, ids) = {
            let g = lock(py, &graph.graph)?;
            reachable_part(&g, &roots).map_err(|e| raise(py, "GraphError", e))?
        };
        let options = weft::JitOptions {
            threads,
            ..match backend {
                Backend::JitUnfused => weft::JitOptions::unfused(),
                _ => weft::JitOptions::default(),
            }
        };
        let t = match backend {
            Backend::Interpreter if threads.is_some() => {
                return Err(raise(
                    py,
                    "WeftError",
                    "threads: the interpreter runs on one thread".into(),
                ))
            }
            Backend::Interpreter => py.detach(|| weft::Transformer::new(part, backend)),
            _ => {
                let options = options.clone();
                py.detach(move || weft::Transformer::with_jit_options(part, options))
            }
        };
        Ok(Transformer {
            transformer: Arc::new(t.map_err(|e| to_py(py, e))?),
            ids,
            options,
        })
    }

    /// Whether op `node` is part of the graph this transformer compiles.
    fn has(&self, node: u32) -> bool {
        self.ids.get(node as usize).is_some_and(Option::is_some)
    }

    /// The ops of the Python graph this transformer holds state for (variables and
    /// persistent tensors), as `(op id, kind)`.
    fn state_ops(&self) -> Vec<u32> {
        let g = self.transformer.graph();
        self.ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let stateful = matches!(
                    g.node((*id)?).op,
                    Op::Tensor {
                        kind: weft::TensorKind::Variable | weft::TensorKind::PersistentTensor,
                        ..
                    }
                );
                stateful.then_some(i as u32)
            })
            .collect()
    }

    /// Compiles the computation of `outputs` given `placeholders` (GIL released meanwhile).
    fn computation(
        &self,
        py: Python<'_>,
        outputs: Vec<u32>,
        placeholders: Vec<u32>,
    ) -> PyResult<Computation> {
        let outs = self.ids_of(py, &outputs)?;
        let ins = self.ids_of(py, &placeholders)?;
        let graph = self.transformer.graph();
        let inputs = ins
            .iter()
            .zip(&placeholders)
            .map(|(&id, python_id)| {
                let node = graph.node(id);
                let name = node.name.clone().unwrap_or_else(|| format!("#{python_id}"));
                InputSpec {
                    name,
                    dtype: node.dtype,
                    axes: node.axes.clone(),
                }
            })
            .collect();
        let t = Arc::clone(&self.transformer);
        let computation = py
            .detach(move || t.computation(&outs, &ins))
            .map_err(|e| to_py(py, e))?;
        let spares = computation.output_arrays().is_ok().then(|| {
            Arc::new(Spares {
                free: Mutex::new(vec![Vec::new(); computation.outputs().len()]),
            })
        });
        Ok(Computation {
            computation: Arc::new(computation),
            inputs,
            last_call_nanos: AtomicU64::new(u64::MAX),
            spares,
        })
    }

    /// The current value of a variable or persistent tensor, as a new array.
    fn value_of<'py>(&self, py: Python<'py>, node: u32) -> PyResult<Bound<'py, PyAny>> {
        let id = self.ids_of(py, &[node])?[0];
        let t = Arc::clone(&self.transformer);
        let value = py
            .detach(move || t.value_of(id))
            .map_err(|e| to_py(py, e))?;
        to_numpy(py, value)
    }

    /// Sets a variable's or persistent tensor's value (an array in its axes' order).
    fn set_value(&self, py: Python<'_>, node: u32, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = self.ids_of(py, &[node])?[0];
        let n = self.transformer.graph().node(id);
        let data = array_data(py, value, n.dtype)?;
        let shape = value.cast::<PyUntypedArray>()?.shape().to_vec();
        let array =
            weft::HostArray::new(n.axes.clone(), shape, data).map_err(|e| to_py(py, e.into()))?;
        self.transformer
            .set_value(id, &array)
            .map_err(|e| to_py(py, e))
    }

    /// What the compiler did with the computation of `outputs` given `placeholders`: fused
    /// kernels, their loops and the cost model's figures (`weft explain`).
    fn explain(
        &self,
        py: Python<'_>,
        outputs: Vec<u32>,
        placeholders: Vec<u32>,
    ) -> PyResult<String> {
        let exe = self.executable(py, &outputs, &placeholders)?;
        Ok(weft::compiler::explain::explain(&exe))
    }

    /// Every IR stage of the computation of `outputs` given `placeholders` (`weft compile
    /// --dump-dir`): `(file name, stage, text)` in pipeline order.
    fn dumps(
        &self,
        py: Python<'_>,
        outputs: Vec<u32>,
        placeholders: Vec<u32>,
    ) -> PyResult<Vec<(String, String, String)>> {
        let exe = self.executable(py, &outputs, &placeholders)?;
        let files = weft::compiler::dump::dump_stages(self.transformer.graph(), &exe)
            .map_err(|e| raise(py, "CompileError", e.to_string()))?;
        Ok(files
            .into_iter()
            .map(|f| (f.name, f.stage, f.contents))
            .collect())
    }
}

impl Transformer {
    /// The transformer graph's ids of the Python graph's ops `ids`.
    fn ids_of(&self, py: Python<'_>, ids: &[u32]) -> PyResult<Vec<NodeId>> {
        ids.iter()
            .map(|&i| {
                self.ids.get(i as usize).copied().flatten().ok_or_else(|| {
                    raise(
                        py,
                        "GraphError",
                        format!("op #{i} is not part of this transformer's graph (made after it, or needed by none of its computations)"),
                    )
                })
            })
            .collect()
    }

    /// The JIT's executable of `outputs` given `placeholders`, compiled with the GIL released.
    fn executable(
        &self,
        py: Python<'_>,
        outputs: &[u32],
        placeholders: &[u32],
    ) -> PyResult<weft::compiler::JitExecutable> {
        let graph = Arc::new(self.transformer.graph().clone());
        let outs = self.ids_of(py, outputs)?;
        let ins = self.ids_of(py, placeholders)?;
        let options = self.options.clone();
        py.detach(move || weft::compiler::JitExecutable::new(graph, &outs, &ins, &options))
            .map_err(|e| to_py(py, weft::Error::Compile(e)))
    }
}

/// What a computation expects of one input.
struct InputSpec {
    name: String,
    dtype: DType,
    axes: weft::Axes,
}

/// A compiled computation: call it with one array per placeholder.
#[pyclass(frozen, module = "weft._weft")]
struct Computation {
    computation: Arc<weft::Computation>,
    inputs: Vec<InputSpec>,
    /// How long the last call ran (ns; `u64::MAX` before the first), to decide whether the
    /// next releases the GIL.
    last_call_nanos: AtomicU64,
    /// Output memory given back by NumPy arrays that are gone, for the next calls; None when
    /// lengths are bound at call time (outputs' shapes vary).
    spares: Option<Arc<Spares>>,
}

/// Output arrays a computation has handed out and NumPy has given back, per output, at most
/// [`Spares::KEEP`] each: a call writes into one of them in place (`call_into`) instead of into
/// fresh memory, which the OS must zero page by page on its first touch — as long as a call
/// takes for a 64 MiB output. What a host loop that keeps its output arrays gets from Rust.
struct Spares {
    free: Mutex<Vec<Vec<weft::HostArray>>>,
}

impl Spares {
    const KEEP: usize = 2;

    /// One array per output: spares where there are, else new ones from `computation`.
    fn take(&self, computation: &weft::Computation) -> weft::Result<Vec<weft::HostArray>> {
        if let Ok(mut free) = self.free.lock() {
            if free.iter().all(|spares| !spares.is_empty()) {
                return Ok(free.iter_mut().filter_map(Vec::pop).collect());
            }
        }
        computation.output_arrays()
    }

    fn give(&self, output: usize, array: weft::HostArray) {
        if let Ok(mut free) = self.free.lock() {
            if let Some(list) = free.get_mut(output) {
                if list.len() < Self::KEEP {
                    list.push(array);
                }
            }
        }
    }
}

/// The memory under one output array NumPy holds: returned to its computation's spares when
/// NumPy drops the array.
#[pyclass(module = "weft._weft")]
struct OutputMemory {
    array: Option<weft::HostArray>,
    spares: Arc<Spares>,
    output: usize,
}

impl Drop for OutputMemory {
    fn drop(&mut self) {
        if let Some(array) = self.array.take() {
            self.spares.give(self.output, array);
        }
    }
}

/// `array` as a NumPy array over its own memory, which goes back to `spares` afterwards.
fn lend<'py>(
    py: Python<'py>,
    array: weft::HostArray,
    spares: &Arc<Spares>,
    output: usize,
) -> PyResult<Bound<'py, PyAny>> {
    fn view<'py, T: numpy::Element + weft::Element>(
        py: Python<'py>,
        array: &weft::HostArray,
        owner: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let data = array
            .as_slice::<T>()
            .map_err(|e| PyTypeError::new_err(e.to_string()))?;
        let view = numpy::ndarray::ArrayViewD::from_shape(array.shape(), data)
            .map_err(|e| PyTypeError::new_err(e.to_string()))?;
        // SAFETY: `owner` (an `OutputMemory`) owns `array` and becomes the NumPy array's base
        // object, so it outlives the array; the `HostArray` is never touched again while it
        // lives there (no reallocation: its data only moves, with its heap buffer in place,
        // back to the spares when `owner` is dropped, after NumPy has dropped the array).
        #[allow(unsafe_code)]
        let lent = unsafe { PyArray::borrow_from_array(&view, owner) };
        let _ = py;
        Ok(lent.into_any())
    }
    let dtype = array.dtype();
    let owner = Bound::new(
        py,
        OutputMemory {
            array: Some(array),
            spares: Arc::clone(spares),
            output,
        },
    )?;
    let held = owner.borrow();
    let array = held
        .array
        .as_ref()
        .ok_or_else(|| PyTypeError::new_err("output memory gone"))?;
    let any = owner.clone().into_any();
    match dtype {
        DType::F32 => view::<f32>(py, array, any),
        DType::F64 => view::<f64>(py, array, any),
        DType::I32 => view::<i32>(py, array, any),
        DType::I64 => view::<i64>(py, array, any),
        DType::Bool => view::<bool>(py, array, any),
    }
}

/// A borrowed input: the array's read guard (it keeps NumPy from handing the memory to a
/// writer while weft reads it) and its shape.
enum Borrowed<'py> {
    F32(PyReadonlyArrayDyn<'py, f32>),
    F64(PyReadonlyArrayDyn<'py, f64>),
    I32(PyReadonlyArrayDyn<'py, i32>),
    I64(PyReadonlyArrayDyn<'py, i64>),
    Bool(PyReadonlyArrayDyn<'py, bool>),
}

impl Borrowed<'_> {
    fn data(&self) -> Result<weft::DataRef<'_>, numpy::AsSliceError> {
        Ok(match self {
            Borrowed::F32(a) => weft::DataRef::F32(a.as_slice()?),
            Borrowed::F64(a) => weft::DataRef::F64(a.as_slice()?),
            Borrowed::I32(a) => weft::DataRef::I32(a.as_slice()?),
            Borrowed::I64(a) => weft::DataRef::I64(a.as_slice()?),
            Borrowed::Bool(a) => weft::DataRef::Bool(a.as_slice()?),
        })
    }
}

/// `x` as an array weft can read in place: a C-contiguous NumPy array as it is; another NumPy
/// array copied once into a C-contiguous one (its dtype kept: a wrong dtype is refused later,
/// never converted); anything else (numbers, lists) converted to the placeholder's dtype.
fn as_input_array<'py>(
    py: Python<'py>,
    spec: &InputSpec,
    x: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if x.is_none() {
        // NumPy would read None as NaN for a float placeholder.
        return Err(raise(
            py,
            "CallError",
            format!("no value given for placeholder `{}`", spec.name),
        ));
    }
    if let Ok(array) = x.cast::<PyUntypedArray>() {
        if array.is_c_contiguous() {
            return Ok(x);
        }
        return py
            .import("numpy")?
            .getattr("ascontiguousarray")?
            .call1((x,));
    }
    py.import("numpy")?
        .getattr("asarray")?
        .call1((&x, dtype_name(spec.dtype)))
        .map_err(|e| {
            raise(
                py,
                "DTypeError",
                format!(
                    "input `{}`: not convertible to a {} array: {e}",
                    spec.name,
                    dtype_name(spec.dtype)
                ),
            )
        })
}

fn borrow<'py>(
    py: Python<'py>,
    spec: &InputSpec,
    x: &Bound<'py, PyAny>,
) -> PyResult<Borrowed<'py>> {
    let array = x.cast::<PyUntypedArray>().map_err(|_| {
        raise(
            py,
            "DTypeError",
            format!(
                "input `{}`: expected a NumPy array, got {}",
                spec.name,
                x.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        )
    })?;
    let wrong = || {
        let got = array
            .dtype()
            .str()
            .map(|s| s.to_string())
            .unwrap_or_default();
        raise(
            py,
            "DTypeError",
            format!(
                "input `{}` is {} but the placeholder is {}",
                spec.name,
                got,
                dtype_name(spec.dtype)
            ),
        )
    };
    let b = match spec.dtype {
        DType::F32 => Borrowed::F32(x.extract().map_err(|_| wrong())?),
        DType::F64 => Borrowed::F64(x.extract().map_err(|_| wrong())?),
        DType::I32 => Borrowed::I32(x.extract().map_err(|_| wrong())?),
        DType::I64 => Borrowed::I64(x.extract().map_err(|_| wrong())?),
        DType::Bool => Borrowed::Bool(x.extract().map_err(|_| wrong())?),
    };
    if !array.is_c_contiguous() {
        return Err(raise(
            py,
            "CallError",
            format!("input `{}` is not C-contiguous (weft reads inputs in place: pass np.ascontiguousarray(x))", spec.name),
        ));
    }
    Ok(b)
}

/// A weft output as a NumPy array over the same memory (no copy).
fn to_numpy(py: Python<'_>, array: weft::HostArray) -> PyResult<Bound<'_, PyAny>> {
    let (_, shape, data) = array.into_parts();
    Ok(match data {
        ArrayData::F32(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::F64(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::I32(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::I64(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::Bool(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
    })
}

impl Computation {
    /// Calls shorter than this (the last one's time) keep the GIL.
    const HOLD_GIL_BELOW_NANOS: u64 = 20_000;

    /// Borrows `inputs` (checked against the placeholders) and runs `f` on their views, the
    /// GIL released unless the last call was shorter than [`Computation::HOLD_GIL_BELOW_NANOS`].
    fn with_inputs<'py, R: Send>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        f: impl FnOnce(&weft::Computation, &[HostView<'_>]) -> weft::Result<R> + Send,
    ) -> PyResult<R> {
        let items: Vec<Bound<'py, PyAny>> = if let Ok(t) = inputs.cast::<PyTuple>() {
            t.iter().collect()
        } else if let Ok(l) = inputs.cast::<PyList>() {
            l.iter().collect()
        } else {
            return Err(PyTypeError::new_err("inputs: a list or tuple of arrays"));
        };
        if items.len() != self.inputs.len() {
            let names: Vec<&str> = self.inputs.iter().map(|s| s.name.as_str()).collect();
            return Err(raise(
                py,
                "CallError",
                format!(
                    "the computation takes {} input arrays ({}) but {} were given",
                    names.len(),
                    names.join(", "),
                    items.len()
                ),
            ));
        }
        let items = items
            .into_iter()
            .zip(&self.inputs)
            .map(|(x, spec)| as_input_array(py, spec, x))
            .collect::<PyResult<Vec<_>>>()?;
        let borrowed = items
            .iter()
            .zip(&self.inputs)
            .map(|(x, spec)| {
                let b = borrow(py, spec, x)?;
                if b.data().is_ok() {
                    return Ok(b);
                }
                // C-contiguous but misaligned (a view at an odd byte offset): one aligned copy.
                let aligned =
                    py.import("numpy")?
                        .getattr("require")?
                        .call1((x, py.None(), "CA"))?;
                borrow(py, spec, &aligned)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let shapes: Vec<Vec<usize>> = items
            .iter()
            .map(|x| x.cast::<PyUntypedArray>().map(|a| a.shape().to_vec()))
            .collect::<Result<_, _>>()?;
        let mut views = Vec::with_capacity(borrowed.len());
        for ((b, spec), shape) in borrowed.iter().zip(&self.inputs).zip(&shapes) {
            let data = b
                .data()
                .map_err(|e| raise(py, "CallError", format!("input `{}`: {e}", spec.name)))?;
            let view = HostView::of_data(&spec.axes, shape, data)
                .map_err(|e| raise(py, "CallError", format!("input `{}`: {e}", spec.name)))?;
            views.push(view);
        }
        let computation = &*self.computation;
        let timed = || {
            let start = std::time::Instant::now();
            let result = f(computation, &views);
            let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.last_call_nanos.store(nanos, Ordering::Relaxed);
            result
        };
        // Giving the GIL up and taking it back costs more than a call of a few microseconds
        // takes, and other threads' calls cannot overlap such a call anyway: those run with
        // it held. Any call that took longer last time releases it.
        let result = if self.last_call_nanos.load(Ordering::Relaxed) < Self::HOLD_GIL_BELOW_NANOS {
            timed()
        } else {
            py.detach(timed)
        };
        result.map_err(|e| to_py(py, e))
    }
}

#[pymethods]
impl Computation {
    /// Runs the computation on `inputs` (one C-contiguous array per placeholder, each of its
    /// dtype, in the placeholders' axes order), returning one new array per output.
    fn call<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let Some(spares) = &self.spares else {
            let outputs = self.with_inputs(py, inputs, |c, views| c.call(views))?;
            return outputs.into_iter().map(|o| to_numpy(py, o)).collect();
        };
        let outputs = self.with_inputs(py, inputs, |c, views| {
            let mut outputs = spares.take(c)?;
            c.call_into(views, &mut outputs)?;
            Ok(outputs)
        })?;
        outputs
            .into_iter()
            .enumerate()
            .map(|(i, o)| lend(py, o, spares, i))
            .collect()
    }

    /// Runs the computation and writes each output into the matching array of `out`
    /// (C-contiguous, of the output's dtype and shape): weft writes into its own buffers, then
    /// each result is copied into `out` once.
    fn call_into<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        out: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<()> {
        if out.len() != self.computation.outputs().len() {
            return Err(raise(
                py,
                "CallError",
                format!(
                    "out: {} arrays given for {} outputs",
                    out.len(),
                    self.computation.outputs().len()
                ),
            ));
        }
        let results = self.with_inputs(py, inputs, |c, views| c.call(views))?;
        for (i, (result, target)) in results.into_iter().zip(&out).enumerate() {
            write_into(py, i, result, target)?;
        }
        Ok(())
    }

    /// The number of inputs it takes.
    #[getter]
    fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// The number of outputs it returns.
    #[getter]
    fn output_count(&self) -> usize {
        self.computation.outputs().len()
    }
}

/// Copies output `i`'s `result` into the caller's array `target`.
fn write_into(
    py: Python<'_>,
    i: usize,
    result: weft::HostArray,
    target: &Bound<'_, PyAny>,
) -> PyResult<()> {
    fn copy<T: numpy::Element + weft::Element>(
        py: Python<'_>,
        i: usize,
        src: &[T],
        shape: &[usize],
        target: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let mut t: PyReadwriteArrayDyn<'_, T> = target.extract().map_err(|_| {
            raise(
                py,
                "DTypeError",
                format!(
                    "out[{i}] is not a writeable array of the output's dtype {}",
                    dtype_name(T::DTYPE)
                ),
            )
        })?;
        if t.shape() != shape {
            return Err(raise(
                py,
                "CallError",
                format!(
                    "out[{i}] has shape {:?} but the output has {:?}",
                    t.shape(),
                    shape
                ),
            ));
        }
        let dst = t
            .as_slice_mut()
            .map_err(|_| raise(py, "CallError", format!("out[{i}] is not C-contiguous")))?;
        dst.copy_from_slice(src);
        Ok(())
    }
    let shape = result.shape().to_vec();
    match result.data() {
        ArrayData::F32(v) => copy(py, i, v, &shape, target),
        ArrayData::F64(v) => copy(py, i, v, &shape, target),
        ArrayData::I32(v) => copy(py, i, v, &shape, target),
        ArrayData::I64(v) => copy(py, i, v, &shape, target),
        ArrayData::Bool(v) => copy(py, i, v, &shape, target),
    }
}

/// The digits data set bundled with weft (1,797 8×8 images, pixels in [0, 1] as float32, and
/// their labels 0–9 as int64): `(images [1797, 64], labels [1797])`.
#[pyfunction]
fn digits(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Bound<'_, PyAny>)> {
    let d = weft::datasets::digits().map_err(|e| to_py(py, e))?;
    let n = d.len();
    let images = PyArray::from_vec(py, d.images().to_vec())
        .reshape(vec![n, weft::datasets::DIGITS_PIXELS])?
        .into_any();
    Ok((
        images,
        PyArray::from_vec(py, d.labels().to_vec()).into_any(),
    ))
}

/// How many bytes this process has copied between host arrays and weft's buffers (inputs
/// and state in, outputs out): a call whose arrays are read and written in place adds none.
#[pyfunction]
fn host_copy_bytes() -> u64 {
    weft::host_copy_bytes()
}

/// The native part of the `weft` package.
#[pymodule]
fn _weft(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Graph>()?;
    m.add_class::<Axis>()?;
    m.add_class::<Transformer>()?;
    m.add_class::<Computation>()?;
    m.add_class::<OutputMemory>()?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(digits, m)?)?;
    m.add_function(wrap_pyfunction!(host_copy_bytes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
