//! `Graph` and `Axis`: the graph a Python program builds, op by op, behind a mutex (ops
//! named by integer ids, axes checked to belong to it); `parse` of `.weft` text.

use super::*;

// ---- axes --------------------------------------------------------------------------------

/// An axis of a graph: a named dimension with an identity (two axes of one name and length are
/// different axes). `A + 1` is its dual `A*`, `A - 1` the axis whose dual it is.
#[pyclass(frozen, module = "weft._weft")]
pub(crate) struct Axis {
    pub(crate) axis: weft::Axis,
    pub(crate) graph: Arc<Mutex<weft::Graph>>,
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
    /// Its label: the name given when it was made (its dual degree not included); for an axis
    /// a slice, pad, convolution or pool derived, the label of the axis it came from, as
    /// nGraph named them (`H` for a convolution's output rows over `H`; `derivation` tells
    /// how).
    #[getter]
    fn name(&self, py: Python<'_>) -> PyResult<String> {
        let g = lock(py, &self.graph)?;
        Ok(label(&g, self.axis))
    }
    /// How it was made: its name for a declared axis, the derivation for a derived one
    /// (`H~R+pad(1,1)~2/2`: `H` under a window of `R` padded by one each side, then one of two
    /// taps at stride 2), with `@index` where two declared axes share a label.
    #[getter]
    fn derivation(&self, py: Python<'_>) -> PyResult<String> {
        let g = lock(py, &self.graph)?;
        Ok(g.axis_name(self.axis.with_dual(0)))
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

/// The label of `axis` in `g` (see `Axis.name`).
fn label(g: &weft::Graph, axis: weft::Axis) -> String {
    use weft::ir::AxisDef;
    match &g.axis_data(axis.id).def {
        AxisDef::Slice { of, .. } | AxisDef::Pad { of, .. } | AxisDef::Window { of, .. } => {
            label(g, *of)
        }
        AxisDef::Features(out) => label(g, *out),
        _ => g.axis_data(axis.id).name.clone(),
    }
}

pub(crate) fn lock<'a>(
    py: Python<'_>,
    g: &'a Mutex<weft::Graph>,
) -> PyResult<MutexGuard<'a, weft::Graph>> {
    g.lock().map_err(|_| {
        raise(
            py,
            "WeftError",
            "the graph was poisoned by an earlier failure".into(),
        )
    })
}

/// The weft axes of `axes`, each checked to belong to `graph`.
pub(crate) fn axes_of(
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
pub(crate) struct Graph {
    pub(crate) graph: Arc<Mutex<weft::Graph>>,
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
            .map_err(|e| graph_err_in(py, &g, e))
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
pub(crate) fn array_data(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    dtype: DType,
) -> PyResult<ArrayData> {
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

pub(crate) fn init_of(
    py: Python<'_>,
    value: &Bound<'_, PyAny>,
    dtype: DType,
) -> PyResult<TensorInit> {
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

/// How a convolution's filter or a pool's window moves along one role.
fn window_step(stride: usize, dilation: usize, before: usize, after: usize) -> weft::WindowStep {
    weft::WindowStep {
        stride,
        dilation,
        before,
        after,
    }
}

#[pymethods]
impl Graph {
    #[new]
    fn new() -> Graph {
        Graph {
            graph: Arc::new(Mutex::new(weft::Graph::new())),
        }
    }

    /// A new axis, whatever other axes are named (a name is a label: nGraph-python's
    /// `make_axis`); `length` None leaves it unbound (bound at call time by the inputs);
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
        Ok(self.axis_obj(g.axis_labelled(name, length, roles)))
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
                .map(|&(ref role, stride, dilation, before, after)| {
                    (
                        weft::Role::parse(role),
                        window_step(stride, dilation, before, after),
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
                .map(|&(ref role, taps, stride, dilation, before, after)| {
                    (
                        weft::Role::parse(role),
                        taps,
                        window_step(stride, dilation, before, after),
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
            .map_err(|e| graph_err_in(py, &g, e))
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

    /// Every op's operands, by op id (operands come before their readers): the Python
    /// layer's view of the graph's edges, for `sequential`'s planner, whose walks stop at
    /// ops an earlier segment computes (what `weft::Graph::ancestors` cannot express).
    fn operands(&self, py: Python<'_>) -> PyResult<Vec<Vec<u32>>> {
        let g = lock(py, &self.graph)?;
        Ok(g.nodes()
            .map(|(_, n)| n.op.inputs().into_iter().map(NodeId::as_u32).collect())
            .collect())
    }

    /// The ops `roots` are computed from, themselves included, by id in creation order: the
    /// graph's one walk (`weft::Graph::ancestors`), for `deriv`'s check that an upstream
    /// gradient does not depend on what it differentiates and the ops `sequential`'s
    /// segments reach.
    fn ancestors(&self, py: Python<'_>, roots: Vec<u32>) -> PyResult<Vec<u32>> {
        let g = lock(py, &self.graph)?;
        let roots = roots
            .into_iter()
            .map(|r| self.node(py, &g, r))
            .collect::<PyResult<Vec<_>>>()?;
        let reached = g.ancestors(&roots);
        Ok((0..reached.len() as u32)
            .filter(|&i| reached[i as usize])
            .collect())
    }

    /// The variable or persistent tensor op `x` assigns, if it is an `assign`.
    fn assign_target(&self, py: Python<'_>, x: u32) -> PyResult<Option<u32>> {
        let g = lock(py, &self.graph)?;
        let node = self.node(py, &g, x)?;
        Ok(match g.node(node).op {
            Op::Assign { target, .. } => Some(target.as_u32()),
            _ => None,
        })
    }

    /// A copy of op `x` reading `operands` (of the same axes and dtypes as its own, in order)
    /// instead of its own, unnamed: how `sequential` has a later step read the value an
    /// earlier step computed rather than compute it again from state that changed since.
    fn clone_reading(&self, py: Python<'_>, x: u32, operands: Vec<u32>) -> PyResult<u32> {
        use weft::compiler::passes::rebuild::{add_like, remap_op, with_op};
        let mut g = lock(py, &self.graph)?;
        let node = self.node(py, &g, x)?;
        let new = operands
            .iter()
            .map(|&o| self.node(py, &g, o))
            .collect::<PyResult<Vec<_>>>()?;
        let old = g.node(node).clone();
        if old.op.inputs().len() != new.len() {
            return Err(raise(
                py,
                "GraphError",
                format!(
                    "op #{x} reads {} operands, not {}",
                    old.op.inputs().len(),
                    new.len()
                ),
            ));
        }
        let map: Vec<(NodeId, NodeId)> = old.op.inputs().into_iter().zip(new).collect();
        let op = remap_op(&old.op, |o| {
            map.iter()
                .find(|(from, _)| *from == o)
                .map(|(_, to)| *to)
                .ok_or_else(|| {
                    weft::compiler::passes::PassError::Internal("an operand not mapped".into())
                })
        })
        .map_err(|e| raise(py, "GraphError", e.to_string()))?;
        add_like(&mut g, &with_op(&old, op), false)
            .map(NodeId::as_u32)
            .map_err(|e| raise(py, "GraphError", e.to_string()))
    }

    /// The gradients of the scalar `loss` with respect to each of `wrt`, no gradient flowing
    /// through the ops `stops` (`stop_gradient`'s).
    #[pyo3(signature = (loss, wrt, stops=Vec::new()))]
    fn grad(
        &self,
        py: Python<'_>,
        loss: u32,
        wrt: Vec<u32>,
        stops: Vec<u32>,
    ) -> PyResult<Vec<u32>> {
        let mut g = lock(py, &self.graph)?;
        let loss = self.node(py, &g, loss)?;
        let ids = |g: &weft::Graph, xs: &[u32]| {
            xs.iter()
                .map(|&w| self.node(py, g, w))
                .collect::<PyResult<Vec<_>>>()
        };
        let (wrt, stops) = (ids(&g, &wrt)?, ids(&g, &stops)?);
        let grads = g
            .grad_stopping(loss, &wrt, &stops)
            .map_err(|e| graph_err_in(py, &g, e))?;
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
pub(crate) fn parse(py: Python<'_>, source: &str, file: &str) -> PyResult<Graph> {
    let graph = weft::ir::text::parse(source, file).map_err(|e| to_py(py, e.into()))?;
    Ok(Graph {
        graph: Arc::new(Mutex::new(graph)),
    })
}
