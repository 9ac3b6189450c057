//! Node constructors with axis and dtype inference. Every check that needs only axes and dtypes
//! happens here, when the node is made; checks that need lengths happen here too when the lengths
//! are bound, and again in [`Graph::verify`](super::Graph::verify) once everything is bound.

use super::{AxisSlice, BinaryOp, CompareOp, Graph, GraphError, Node, NodeId, Op, ReduceOp};
use super::{TensorInit, TensorKind, UnaryOp};
use crate::axis::{Axes, AxesError, Axis, AxisDef};
use crate::dtype::DType;
use crate::host::Scalar;

impl Graph {
    pub(super) fn op_label(&self, op: &str, inputs: &[NodeId]) -> String {
        let args: Vec<String> = inputs.iter().map(|i| self.node_label(*i)).collect();
        format!("{op}({})", args.join(", "))
    }

    pub(super) fn make_axes(&self, op: &str, axes: &[Axis]) -> Result<Axes, GraphError> {
        for a in axes {
            if self.axis_table().len() <= a.id.as_u32() as usize {
                return Err(GraphError::Foreign(format!("{op}: axis {}", a.id)));
            }
        }
        Axes::new(axes.iter().copied()).map_err(|AxesError::Duplicate(a)| {
            GraphError::DuplicateAxis {
                op: op.to_string(),
                axis: self.axis_name(a),
                axes: self.axes_name(&Axes::new_unchecked(axes)),
            }
        })
    }

    pub(super) fn push_op(&mut self, op: Op, axes: Axes, dtype: DType) -> NodeId {
        self.push_node(Node {
            op,
            axes,
            dtype,
            name: None,
        })
    }

    fn not_an_axis_of(&self, op: String, axis: Axis, axes: &Axes) -> GraphError {
        self.axes_err(
            op,
            format!(
                "axis `{}` is not an axis of the input {}",
                self.axis_name(axis),
                self.axes_name(axes)
            ),
        )
    }

    pub(super) fn axes_err(&self, op: String, message: String) -> GraphError {
        GraphError::Axes { op, message }
    }

    // ---- stored tensors --------------------------------------------------------------------

    /// A stored tensor of any kind. `init` must be `None` for placeholders and is required for
    /// constants and variables; a persistent tensor without one starts at zero.
    pub fn tensor(
        &mut self,
        kind: TensorKind,
        name: Option<&str>,
        axes: &[Axis],
        dtype: DType,
        init: Option<TensorInit>,
    ) -> Result<NodeId, GraphError> {
        let label = format!("{} {}", kind.keyword(), name.unwrap_or("(unnamed)"));
        let axes = self.make_axes(&label, axes)?;
        if let Some(n) = name {
            if self.find(n).is_some() {
                return Err(GraphError::NameTaken(n.to_string()));
            }
        }
        let tensor = name.unwrap_or("(unnamed)").to_string();
        let init = match (kind, init) {
            (TensorKind::Placeholder, Some(_)) => {
                return Err(GraphError::Init {
                    tensor,
                    message: "a placeholder takes its value at each call, not an initial value"
                        .into(),
                })
            }
            (TensorKind::Placeholder, None) => None,
            (TensorKind::PersistentTensor, None) => Some(TensorInit::Fill(Scalar::zero(dtype))),
            (_, None) => {
                return Err(GraphError::Init {
                    tensor,
                    message: format!("a {} needs an initial value", kind.keyword()),
                })
            }
            (_, Some(TensorInit::Fill(s))) => {
                Some(TensorInit::Fill(s.to_dtype(dtype).map_err(|message| {
                    GraphError::Init {
                        tensor: tensor.clone(),
                        message,
                    }
                })?))
            }
            (_, Some(TensorInit::Data(d))) => {
                if d.dtype() != dtype {
                    return Err(GraphError::Init {
                        tensor,
                        message: format!(
                            "data of dtype {} for a tensor of dtype {dtype}",
                            d.dtype()
                        ),
                    });
                }
                if let Ok(shape) = self.shape_of(&axes) {
                    let n = crate::size::element_count(&shape);
                    if n != Some(d.len()) {
                        return Err(GraphError::Init {
                            tensor,
                            message: format!(
                                "{} values given for axes {} of {} elements",
                                d.len(),
                                self.axes_name(&axes),
                                n.map_or("more than usize::MAX".into(), |n| n.to_string())
                            ),
                        });
                    }
                }
                Some(TensorInit::Data(d))
            }
        };
        let id = self.push_op(Op::Tensor { kind, init }, axes, dtype);
        if let Some(n) = name {
            self.set_name(id, n)?;
        }
        Ok(id)
    }

    /// A stored tensor (a variable, persistent tensor or constant) whose initial value is the
    /// `.npy` file at `path`: the file's rank must be the number of `axes` and its dtype
    /// `dtype`; an axis without a length takes the file's, and a bound one must have it. How a
    /// program loads trained weights in one step. Errors name the tensor, the file and what
    /// does not fit.
    pub fn tensor_from_npy(
        &mut self,
        kind: TensorKind,
        name: &str,
        axes: &[Axis],
        dtype: DType,
        path: &std::path::Path,
    ) -> Result<NodeId, GraphError> {
        let init_err = |message: String| GraphError::Init {
            tensor: name.to_string(),
            message: format!("{}: {message}", path.display()),
        };
        let label = format!("{} {name}", kind.keyword());
        let checked = self.make_axes(&label, axes)?;
        let array = crate::host::HostArray::read_npy(path, checked.clone()).map_err(|e| {
            GraphError::Init {
                tensor: name.to_string(),
                message: e.to_string(),
            }
        })?;
        if array.dtype() != dtype {
            return Err(init_err(format!(
                "the file holds {} values, the tensor is {dtype}",
                array.dtype()
            )));
        }
        for (axis, len) in checked.iter().zip(array.shape()) {
            match self.axis_len(*axis) {
                Some(l) if l != *len => {
                    return Err(init_err(format!(
                        "axis `{}` has length {l}, the file's dimension {len}",
                        self.axis_name(*axis)
                    )))
                }
                Some(_) => {}
                None => self
                    .bind(*axis, *len)
                    .map_err(|e| init_err(e.to_string()))?,
            }
        }
        let (_, _, data) = array.into_parts();
        self.tensor(kind, Some(name), axes, dtype, Some(TensorInit::data(data)))
    }

    /// An input tensor (`ng.placeholder`).
    pub fn placeholder(
        &mut self,
        name: &str,
        axes: &[Axis],
        dtype: DType,
    ) -> Result<NodeId, GraphError> {
        self.tensor(TensorKind::Placeholder, Some(name), axes, dtype, None)
    }

    /// A constant (`ng.constant`).
    pub fn constant(
        &mut self,
        name: Option<&str>,
        axes: &[Axis],
        dtype: DType,
        init: TensorInit,
    ) -> Result<NodeId, GraphError> {
        self.tensor(TensorKind::Constant, name, axes, dtype, Some(init))
    }

    /// A scalar constant.
    pub fn scalar(&mut self, value: Scalar, dtype: DType) -> Result<NodeId, GraphError> {
        self.constant(None, &[], dtype, TensorInit::Fill(value))
    }

    /// A trainable variable with an initial value (`ng.variable`).
    pub fn variable(
        &mut self,
        name: &str,
        axes: &[Axis],
        dtype: DType,
        init: TensorInit,
    ) -> Result<NodeId, GraphError> {
        self.tensor(TensorKind::Variable, Some(name), axes, dtype, Some(init))
    }

    /// A persistent tensor (`ng.persistent_tensor`), zero unless `init` says otherwise.
    pub fn persistent_tensor(
        &mut self,
        name: &str,
        axes: &[Axis],
        dtype: DType,
        init: Option<TensorInit>,
    ) -> Result<NodeId, GraphError> {
        self.tensor(TensorKind::PersistentTensor, Some(name), axes, dtype, init)
    }

    // ---- elementwise -----------------------------------------------------------------------

    /// An elementwise unary op. Transcendental ops and `reciprocal` take floats; the others
    /// take any numeric dtype.
    pub fn unary(&mut self, op: UnaryOp, x: NodeId) -> Result<NodeId, GraphError> {
        let n = self.check_node(x)?;
        let (axes, dtype) = (n.axes.clone(), n.dtype);
        if (op.is_float_only() && !dtype.is_float()) || !dtype.is_numeric() {
            return Err(GraphError::UnsupportedDType {
                op: self.op_label(op.name(), &[x]),
                dtype,
                expected: if op.is_float_only() {
                    "f32 or f64"
                } else {
                    "a numeric dtype"
                },
            });
        }
        Ok(self.push_op(Op::Unary(op, x), axes, dtype))
    }

    fn elementwise_pair(
        &self,
        op: &str,
        x: NodeId,
        y: NodeId,
    ) -> Result<(Axes, DType), GraphError> {
        let a = self.check_node(x)?;
        let b = self.check_node(y)?;
        if a.dtype != b.dtype {
            return Err(GraphError::DTypeMismatch {
                op: self.op_label(op, &[x, y]),
                left: a.dtype,
                right: b.dtype,
            });
        }
        Ok((Axes::elementwise(&a.axes, &b.axes), a.dtype))
    }

    /// An elementwise binary op; operands pair by axis and broadcast over the others, and the
    /// result axes follow the three rules of docs/design.md, "Axes" ([`Axes::elementwise`]).
    pub fn binary(&mut self, op: BinaryOp, x: NodeId, y: NodeId) -> Result<NodeId, GraphError> {
        let (axes, dtype) = self.elementwise_pair(op.name(), x, y)?;
        if !dtype.is_numeric() {
            return Err(GraphError::UnsupportedDType {
                op: self.op_label(op.name(), &[x, y]),
                dtype,
                expected: "a numeric dtype",
            });
        }
        Ok(self.push_op(Op::Binary(op, x, y), axes, dtype))
    }

    /// An elementwise comparison; the result is `bool`.
    pub fn compare(&mut self, op: CompareOp, x: NodeId, y: NodeId) -> Result<NodeId, GraphError> {
        let (axes, _) = self.elementwise_pair(op.name(), x, y)?;
        Ok(self.push_op(Op::Compare(op, x, y), axes, DType::Bool))
    }

    /// `select(cond, a, b)`: `a` where `cond` holds, else `b`. The result axes are those of
    /// `a` and `b` combined, then combined with `cond`'s.
    pub fn select(&mut self, cond: NodeId, a: NodeId, b: NodeId) -> Result<NodeId, GraphError> {
        let (ab, dtype) = self.elementwise_pair("select", a, b)?;
        let c = self.check_node(cond)?;
        if c.dtype != DType::Bool {
            return Err(GraphError::UnsupportedDType {
                op: self.op_label("select", &[cond, a, b]),
                dtype: c.dtype,
                expected: "bool for the condition",
            });
        }
        let axes = Axes::elementwise(&ab, &c.axes);
        Ok(self.push_op(Op::Select(cond, a, b), axes, dtype))
    }

    /// Elementwise conversion to `dtype` (floats to ints truncate toward zero and saturate;
    /// to bool is `≠ 0`).
    pub fn convert(&mut self, x: NodeId, dtype: DType) -> Result<NodeId, GraphError> {
        let axes = self.check_node(x)?.axes.clone();
        Ok(self.push_op(Op::Convert(x), axes, dtype))
    }

    // ---- reductions and dot ----------------------------------------------------------------

    /// A reduction over `reduction_axes` (any order; empty reduces nothing). `out_axes`, if
    /// given, orders the remaining axes and must be exactly them.
    pub fn reduce(
        &mut self,
        op: ReduceOp,
        x: NodeId,
        reduction_axes: &[Axis],
        out_axes: Option<&[Axis]>,
    ) -> Result<NodeId, GraphError> {
        let label = self.op_label(op.name(), &[x]);
        let n = self.check_node(x)?;
        let (in_axes, in_dtype) = (n.axes.clone(), n.dtype);
        let red = self.make_axes(&label, reduction_axes)?;
        for a in &red {
            if !in_axes.contains(*a) {
                return Err(self.axes_err(
                    label,
                    format!(
                        "reduction axis `{}` is not an axis of the input {}",
                        self.axis_name(*a),
                        self.axes_name(&in_axes)
                    ),
                ));
            }
        }
        self.check_reduction_not_empty(&label, op, &red)?;
        let rest = in_axes.difference(&red);
        let axes = match out_axes {
            None => rest,
            Some(o) => {
                let o = self.make_axes(&label, o)?;
                if !o.is_equal_set(&rest) {
                    return Err(self.axes_err(
                        label,
                        format!(
                            "out_axes {} must be the remaining axes {} in some order",
                            self.axes_name(&o),
                            self.axes_name(&rest)
                        ),
                    ));
                }
                o
            }
        };
        let dtype = match op {
            ReduceOp::ArgMax | ReduceOp::ArgMin => DType::I64,
            ReduceOp::Sum | ReduceOp::Prod if in_dtype == DType::Bool => {
                return Err(GraphError::UnsupportedDType {
                    op: label,
                    dtype: in_dtype,
                    expected: "a numeric dtype",
                })
            }
            ReduceOp::Mean if !in_dtype.is_float() => {
                return Err(GraphError::UnsupportedDType {
                    op: label,
                    dtype: in_dtype,
                    expected: "f32 or f64",
                })
            }
            _ => in_dtype,
        };
        Ok(self.push_op(
            Op::Reduce {
                op,
                input: x,
                axes: red,
            },
            axes,
            dtype,
        ))
    }

    /// The contraction of every axis `x` and `y` share, and of every dual pair (`A*` in `x`
    /// with `A` in `y`). The result has `x`'s remaining axes, then `y`'s.
    pub fn dot(&mut self, x: NodeId, y: NodeId) -> Result<NodeId, GraphError> {
        let label = self.op_label("dot", &[x, y]);
        let (l, r) = (self.check_node(x)?.clone(), self.check_node(y)?.clone());
        if l.dtype != r.dtype {
            return Err(GraphError::DTypeMismatch {
                op: label,
                left: l.dtype,
                right: r.dtype,
            });
        }
        if !l.dtype.is_numeric() {
            return Err(GraphError::UnsupportedDType {
                op: label,
                dtype: l.dtype,
                expected: "a numeric dtype",
            });
        }
        let pairs = self.dot_pairs(&label, &l.axes, &r.axes)?;
        let left_rest: Vec<Axis> = l
            .axes
            .iter()
            .copied()
            .filter(|a| !pairs.iter().any(|(p, _)| p == a))
            .collect();
        let right_rest: Vec<Axis> = r
            .axes
            .iter()
            .copied()
            .filter(|a| !pairs.iter().any(|(_, p)| p == a))
            .collect();
        let all: Vec<Axis> = left_rest.into_iter().chain(right_rest).collect();
        let axes = self.make_axes(&label, &all)?;
        for (a, b) in &pairs {
            self.check_same_len(&label, *a, *b)?;
        }
        Ok(self.push_op(Op::Dot(x, y), axes, l.dtype))
    }

    /// The axis pairs `dot` contracts: `(left axis, right axis)`, in left order. The rule
    /// (docs/axes.md): a left axis `A^(k*)` pairs with the right operand's `A^(k*)` (the same
    /// axis) or `A^((k-1)*)` (its dual partner, `M*` with `M`). A pairing must be
    /// unambiguous: a left axis with both partners in the right operand, or a right axis that
    /// two left axes would claim, is an error naming the axes — never a silent choice.
    pub fn dot_pairs(
        &self,
        label: &str,
        left: &Axes,
        right: &Axes,
    ) -> Result<Vec<(Axis, Axis)>, GraphError> {
        let mut pairs: Vec<(Axis, Axis)> = Vec::new();
        for a in left {
            let same = right.contains(*a).then_some(*a);
            let dual = right.contains(a.undual()).then_some(a.undual());
            let b = match (same, dual) {
                (Some(s), Some(d)) => {
                    return Err(self.axes_err(
                        label.to_string(),
                        format!(
                            "left axis `{}` could pair with right axis `{}` (the same axis) or `{}` (its dual partner): the pairing is ambiguous",
                            self.axis_name(*a),
                            self.axis_name(s),
                            self.axis_name(d)
                        ),
                    ))
                }
                (Some(b), None) | (None, Some(b)) => b,
                (None, None) => continue,
            };
            if let Some((other, _)) = pairs.iter().find(|(_, p)| *p == b) {
                return Err(self.axes_err(
                    label.to_string(),
                    format!(
                        "right axis `{}` would pair with both `{}` and `{}`",
                        self.axis_name(b),
                        self.axis_name(*other),
                        self.axis_name(*a)
                    ),
                ));
            }
            pairs.push((*a, b));
        }
        Ok(pairs)
    }

    /// `max`/`min`/`argmax`/`argmin` over an axis whose length is known to be 0 is an error
    /// (checked again by [`Graph::verify`] for lengths bound later).
    pub(crate) fn check_reduction_not_empty(
        &self,
        label: &str,
        op: ReduceOp,
        red: &Axes,
    ) -> Result<(), GraphError> {
        if matches!(op, ReduceOp::Sum | ReduceOp::Prod | ReduceOp::Mean) {
            return Ok(());
        }
        match red.iter().find(|a| self.axis_len(**a) == Some(0)) {
            Some(a) => Err(GraphError::EmptyReduction {
                op: label.to_string(),
                axis: self.axis_name(*a),
                kind: op.name(),
            }),
            None => Ok(()),
        }
    }

    fn check_same_len(&self, op: &str, a: Axis, b: Axis) -> Result<(), GraphError> {
        if let (Some(la), Some(lb)) = (self.axis_len(a), self.axis_len(b)) {
            if la != lb {
                return Err(GraphError::LengthMismatch {
                    op: op.to_string(),
                    left: self.axis_name(a),
                    left_len: la,
                    right: self.axis_name(b),
                    right_len: lb,
                });
            }
        }
        Ok(())
    }

    // ---- views -----------------------------------------------------------------------------

    /// A view of `x` over `axes`, a superset of `x`'s in any order.
    pub fn broadcast(&mut self, x: NodeId, axes: &[Axis]) -> Result<NodeId, GraphError> {
        let label = self.op_label("broadcast", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        let axes = self.make_axes(&label, axes)?;
        if !axes.is_super_set(&in_axes) {
            return Err(self.axes_err(
                label,
                format!(
                    "new axes {} must include the input's {}; missing {}",
                    self.axes_name(&axes),
                    self.axes_name(&in_axes),
                    self.axes_name(&in_axes.difference(&axes))
                ),
            ));
        }
        Ok(self.push_op(Op::Broadcast(x), axes, dtype))
    }

    /// A view of `x` with the same axes in another order.
    pub fn axes_with_order(&mut self, x: NodeId, axes: &[Axis]) -> Result<NodeId, GraphError> {
        let label = self.op_label("axes_with_order", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        let axes = self.make_axes(&label, axes)?;
        if !axes.is_equal_set(&in_axes) {
            return Err(self.axes_err(
                label,
                format!(
                    "{} is not a reordering of the input's axes {}",
                    self.axes_name(&axes),
                    self.axes_name(&in_axes)
                ),
            ));
        }
        Ok(self.push_op(Op::AxesWithOrder(x), axes, dtype))
    }

    /// A view of `x` relabelling its axes, position by position, with `axes` of equal lengths.
    pub fn cast_axes(&mut self, x: NodeId, axes: &[Axis]) -> Result<NodeId, GraphError> {
        let label = self.op_label("cast_axes", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        let axes = self.make_axes(&label, axes)?;
        if axes.len() != in_axes.len() {
            return Err(self.axes_err(
                label,
                format!(
                    "{} has {} but the input {} has {}",
                    self.axes_name(&axes),
                    crate::size::count(axes.len(), "axis", "axes"),
                    self.axes_name(&in_axes),
                    in_axes.len()
                ),
            ));
        }
        for (a, b) in in_axes.iter().zip(axes.iter()) {
            self.check_same_len(&label, *a, *b)?;
        }
        Ok(self.push_op(Op::CastAxes(x), axes, dtype))
    }

    /// The transpose view: axes reversed, each `A^(k*)` becoming `A^((1-k)*)`.
    pub fn transpose(&mut self, x: NodeId) -> Result<NodeId, GraphError> {
        let n = self.check_node(x)?;
        let dtype = n.dtype;
        let axes = Axes::new_unchecked(
            &n.axes
                .iter()
                .rev()
                .map(|a| a.transposed())
                .collect::<Vec<_>>(),
        );
        Ok(self.push_op(Op::Transpose(x), axes, dtype))
    }

    /// A view taking a range of, or pinning one index of, each listed axis.
    pub fn slice(&mut self, x: NodeId, slices: &[(Axis, AxisSlice)]) -> Result<NodeId, GraphError> {
        let label = self.op_label("slice", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        self.make_axes(&label, &slices.iter().map(|(a, _)| *a).collect::<Vec<_>>())?;
        let mut out = Vec::new();
        for a in &in_axes {
            match slices.iter().find(|(s, _)| s == a) {
                None => out.push(*a),
                Some((_, AxisSlice::Index(i))) => {
                    if let Some(len) = self.axis_len(*a) {
                        resolve_index(*i, len).map_err(|message| GraphError::Range {
                            op: label.clone(),
                            axis: self.axis_name(*a),
                            message,
                        })?;
                    }
                }
                Some((_, AxisSlice::Range(range))) => {
                    if let Some(len) = self.axis_len(*a) {
                        range.resolve(len).map_err(|message| GraphError::Range {
                            op: label.clone(),
                            axis: self.axis_name(*a),
                            message,
                        })?;
                    }
                    out.push(self.derived_axis(AxisDef::Slice {
                        of: *a,
                        range: *range,
                    }));
                }
            }
        }
        for (a, _) in slices {
            if !in_axes.contains(*a) {
                return Err(self.not_an_axis_of(label, *a, &in_axes));
            }
        }
        let axes = self.make_axes(&label, &out)?;
        Ok(self.push_op(
            Op::Slice {
                input: x,
                slices: slices.to_vec(),
            },
            axes,
            dtype,
        ))
    }

    /// A view merging `axes` (first major; at least two) into one derived axis placed where the
    /// first of them stood in `x`.
    pub fn flatten(&mut self, x: NodeId, axes: &[Axis]) -> Result<NodeId, GraphError> {
        let label = self.op_label("flatten", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        let group = self.make_axes(&label, axes)?;
        if group.len() < 2 {
            return Err(self.axes_err(label, "flatten needs at least two axes".into()));
        }
        if !group.is_sub_set(&in_axes) {
            return Err(self.axes_err(
                label,
                format!(
                    "{} are not all axes of the input {}",
                    self.axes_name(&group),
                    self.axes_name(&in_axes)
                ),
            ));
        }
        let flat = self.derived_axis(AxisDef::Flatten(axes.to_vec()));
        let first = in_axes.iter().position(|a| group.contains(*a)).unwrap_or(0);
        let mut out: Vec<Axis> = Vec::new();
        for (i, a) in in_axes.iter().enumerate() {
            if i == first {
                out.push(flat);
            } else if !group.contains(*a) {
                out.push(*a);
            }
        }
        let out = self.make_axes(&label, &out)?;
        Ok(self.push_op(
            Op::Flatten {
                input: x,
                axes: axes.to_vec(),
            },
            out,
            dtype,
        ))
    }

    /// A view splitting the flattened axis `axis` of `x` back into its parts, in place.
    pub fn unflatten(&mut self, x: NodeId, axis: Axis) -> Result<NodeId, GraphError> {
        let label = self.op_label("unflatten", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        let parts = match (
            axis.dual,
            self.axis_table().len() > axis.id.as_u32() as usize,
        ) {
            (0, true) => match &self.axis_data(axis.id).def {
                AxisDef::Flatten(p) => p.clone(),
                _ => {
                    return Err(self.axes_err(
                        label,
                        format!("axis `{}` is not a flattened axis", self.axis_name(axis)),
                    ))
                }
            },
            _ => {
                return Err(self.axes_err(
                    label,
                    format!("axis `{}` is not a flattened axis", self.axis_name(axis)),
                ))
            }
        };
        if !in_axes.contains(axis) {
            return Err(self.not_an_axis_of(label, axis, &in_axes));
        }
        let mut out = Vec::new();
        for a in &in_axes {
            if *a == axis {
                out.extend(parts.iter().copied());
            } else {
                out.push(*a);
            }
        }
        let out = self.make_axes(&label, &out)?;
        Ok(self.push_op(Op::Unflatten { input: x, axis }, out, dtype))
    }

    /// A view with `before` zeros and `after` zeros around each listed axis (a complex view,
    /// docs/design.md).
    pub fn pad(&mut self, x: NodeId, pads: &[(Axis, usize, usize)]) -> Result<NodeId, GraphError> {
        let label = self.op_label("pad", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        self.make_axes(&label, &pads.iter().map(|(a, _, _)| *a).collect::<Vec<_>>())?;
        for (a, _, _) in pads {
            if !in_axes.contains(*a) {
                return Err(self.not_an_axis_of(label, *a, &in_axes));
            }
        }
        let mut out = Vec::new();
        for a in &in_axes {
            match pads.iter().find(|(p, _, _)| p == a) {
                Some((_, before, after)) => out.push(self.derived_axis(AxisDef::Pad {
                    of: *a,
                    before: *before,
                    after: *after,
                })),
                None => out.push(*a),
            }
        }
        let out = self.make_axes(&label, &out)?;
        Ok(self.push_op(
            Op::Pad {
                input: x,
                pads: pads.to_vec(),
            },
            out,
            dtype,
        ))
    }

    /// The concatenation of `parts`, each along its own axis; the other axes of every part
    /// must be the same set. The result takes the first part's axis order, the concatenated
    /// axis (derived) in place of its axis.
    pub fn concat(&mut self, parts: &[(NodeId, Axis)]) -> Result<NodeId, GraphError> {
        let ids: Vec<NodeId> = parts.iter().map(|(n, _)| *n).collect();
        let label = self.op_label("concat", &ids);
        if parts.is_empty() {
            return Err(self.axes_err(label, "concat needs at least one part".into()));
        }
        let mut first: Option<(Axes, DType)> = None;
        for (n, a) in parts {
            let node = self.check_node(*n)?;
            if !node.axes.contains(*a) {
                return Err(self.axes_err(
                    label,
                    format!(
                        "axis `{}` is not an axis of `{}` {}",
                        self.axis_name(*a),
                        self.node_label(*n),
                        self.axes_name(&node.axes)
                    ),
                ));
            }
            let rest = node.axes.difference(&Axes::new_unchecked(&[*a]));
            match &first {
                None => first = Some((rest, node.dtype)),
                Some((r0, d0)) => {
                    let d0 = *d0;
                    if !r0.is_equal_set(&rest) {
                        return Err(self.axes_err(
                            label,
                            format!(
                                "the parts' other axes differ: {} and {}",
                                self.axes_name(r0),
                                self.axes_name(&rest)
                            ),
                        ));
                    }
                    if d0 != node.dtype {
                        return Err(GraphError::DTypeMismatch {
                            op: label,
                            left: d0,
                            right: node.dtype,
                        });
                    }
                }
            }
        }
        let cat = self.derived_axis(AxisDef::Concat(parts.iter().map(|(_, a)| *a).collect()));
        let first_axes = self.node(parts[0].0).axes.clone();
        let out: Vec<Axis> = first_axes
            .iter()
            .map(|a| if *a == parts[0].1 { cat } else { *a })
            .collect();
        let out = self.make_axes(&label, &out)?;
        let dtype = first.map(|(_, d)| d).unwrap_or(DType::F32);
        Ok(self.push_op(Op::Concat(parts.to_vec()), out, dtype))
    }

    /// A view with the new axis `axis` at position `pos`, values repeated along it.
    pub fn expand_dims(&mut self, x: NodeId, axis: Axis, pos: usize) -> Result<NodeId, GraphError> {
        let label = self.op_label("expand_dims", &[x]);
        let n = self.check_node(x)?;
        let (in_axes, dtype) = (n.axes.clone(), n.dtype);
        if pos > in_axes.len() {
            return Err(self.axes_err(
                label,
                format!(
                    "position {pos} is past the end of {} (rank {})",
                    self.axes_name(&in_axes),
                    in_axes.len()
                ),
            ));
        }
        let mut out: Vec<Axis> = in_axes.as_slice().to_vec();
        out.insert(pos, axis);
        let out = self.make_axes(&label, &out)?;
        Ok(self.push_op(
            Op::ExpandDims {
                input: x,
                axis,
                pos,
            },
            out,
            dtype,
        ))
    }

    /// `assign(target, value)`: evaluates to `value`; after the call, `target` (a variable or
    /// persistent tensor) holds it. `value` must have `target`'s axes (any order) and dtype.
    pub fn assign(&mut self, target: NodeId, value: NodeId) -> Result<NodeId, GraphError> {
        let label = self.op_label("assign", &[target, value]);
        let t = self.check_node(target)?.clone();
        let v = self.check_node(value)?.clone();
        match t.op {
            Op::Tensor {
                kind: TensorKind::Variable | TensorKind::PersistentTensor,
                ..
            } => {}
            ref op => {
                return Err(GraphError::AssignTarget {
                    target: self.node_label(target),
                    kind: op.name().to_string(),
                })
            }
        }
        if t.dtype != v.dtype {
            return Err(GraphError::DTypeMismatch {
                op: label,
                left: t.dtype,
                right: v.dtype,
            });
        }
        if !t.axes.is_equal_set(&v.axes) {
            return Err(self.axes_err(
                label,
                format!(
                    "value axes {} are not the target's {}",
                    self.axes_name(&v.axes),
                    self.axes_name(&t.axes)
                ),
            ));
        }
        Ok(self.push_op(Op::Assign { target, value }, t.axes, t.dtype))
    }
}

/// Resolves a pinned index (negative counts from the end) against a length.
pub fn resolve_index(i: i64, len: usize) -> Result<usize, String> {
    // In i128, where every i64 index and usize length fit, so nothing overflows.
    let n = len as i128;
    let j = if i < 0 {
        i128::from(i) + n
    } else {
        i128::from(i)
    };
    if j < 0 || j >= n {
        Err(format!("index {i} is out of range for length {len}"))
    } else {
        Ok(j as usize)
    }
}

macro_rules! unary_shorthands {
    ($($name:ident => $variant:ident),*) => {
        impl Graph {
            $(
                #[doc = concat!("Shorthand for `unary(UnaryOp::", stringify!($variant), ", x)`.")]
                pub fn $name(&mut self, x: NodeId) -> Result<NodeId, GraphError> {
                    self.unary(UnaryOp::$variant, x)
                }
            )*
        }
    };
}

macro_rules! binary_shorthands {
    ($kind:ident, $method:ident, $($name:ident => $variant:ident),*) => {
        impl Graph {
            $(
                #[doc = concat!("Shorthand for `", stringify!($method), "(", stringify!($kind), "::", stringify!($variant), ", x, y)`.")]
                pub fn $name(&mut self, x: NodeId, y: NodeId) -> Result<NodeId, GraphError> {
                    self.$method($kind::$variant, x, y)
                }
            )*
        }
    };
}

unary_shorthands!(negative => Negative, abs => Abs, exp => Exp, log => Log, sqrt => Sqrt,
    square => Square, reciprocal => Reciprocal, sign => Sign, tanh => Tanh,
    sigmoid => Sigmoid, sin => Sin, cos => Cos, relu => Relu);
binary_shorthands!(BinaryOp, binary, add => Add, subtract => Subtract, multiply => Multiply,
    divide => Divide, maximum => Maximum, minimum => Minimum, power => Power);
binary_shorthands!(CompareOp, compare, equal => Equal, not_equal => NotEqual, less => Less,
    less_equal => LessEqual, greater => Greater, greater_equal => GreaterEqual);
macro_rules! reductions {
    ($($name:ident => $variant:ident),*) => {
        impl Graph {
            $(
                #[doc = concat!("`", stringify!($name), "` over `reduction_axes`; see [`Graph::reduce`].")]
                pub fn $name(&mut self, x: NodeId, reduction_axes: &[Axis]) -> Result<NodeId, GraphError> {
                    self.reduce(ReduceOp::$variant, x, reduction_axes, None)
                }
            )*
        }
    };
}

reductions!(sum => Sum, prod => Prod, max => Max, min => Min, mean => Mean,
    argmax => ArgMax, argmin => ArgMin);
