//! An ergonomic front end over [`Graph`]: [`GraphBuilder`] hands out [`Tensor`] handles that
//! carry their graph, so ops read as methods and operators (`(&x - &y)?`, `x.exp()?`).
//!
//! Every operator returns `Result<Tensor, GraphError>`; operators also accept a `Result` on
//! either side so chains need only one `?` per step. Scalars (`f64`) on either side become
//! scalar constants of the tensor's dtype.

use super::{AxisSlice, BinaryOp, Graph, GraphError, NodeId, ReduceOp, TensorInit};
use crate::axis::{Axes, Axis, Role};
use crate::dtype::DType;
use crate::host::{ArrayData, Scalar};
use std::cell::{Ref, RefCell, RefMut};

/// Builds a [`Graph`] through [`Tensor`] handles.
///
/// ```
/// use weft::ir::{DType, graph::GraphBuilder};
/// let g = GraphBuilder::new();
/// let n = g.axis("N", 4)?;
/// let x = g.placeholder("x", &[n], DType::F32)?;
/// let y = g.placeholder("y", &[n], DType::F32)?;
/// let t = (x - y)?;
/// let l2 = t.transpose()?.dot(t)?.named("l2")?;
/// l2.output()?;
/// let graph = g.finish();
/// assert_eq!(graph.node(graph.find("l2").unwrap()).axes.len(), 0);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Default)]
pub struct GraphBuilder {
    graph: RefCell<Graph>,
}

/// A node of a [`GraphBuilder`]'s graph, with the ops as methods.
///
/// ```
/// use weft::ir::{graph::GraphBuilder, DType};
/// let b = GraphBuilder::new();
/// let (r, c) = (b.axis("R", 2)?, b.axis("C", 3)?);
/// let x = b.placeholder("x", &[r, c], DType::F32)?;
/// let centred = (x - x.mean(&[c])?)?; // operators pair and broadcast by axis
/// let y = centred.square()?.sum(&[c])?.named("ss")?;
/// assert_eq!(y.axes().as_slice(), &[r]);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Clone, Copy)]
pub struct Tensor<'g> {
    builder: &'g GraphBuilder,
    id: NodeId,
}

impl std::fmt::Debug for Tensor<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor({})", self.id)
    }
}

impl GraphBuilder {
    /// An empty builder.
    pub fn new() -> GraphBuilder {
        GraphBuilder::default()
    }
    /// A builder continuing an existing graph.
    pub fn from_graph(graph: Graph) -> GraphBuilder {
        GraphBuilder {
            graph: RefCell::new(graph),
        }
    }
    /// The graph built so far. While the returned guard lives, building through this
    /// builder (a new tensor, axis, name or output) is [`GraphError::GraphBorrowed`], never
    /// a panic: read what you need, then drop the guard (or end the statement).
    pub fn graph(&self) -> Ref<'_, Graph> {
        self.graph.borrow()
    }

    /// The graph, to change; [`GraphError::GraphBorrowed`] while a [`GraphBuilder::graph`]
    /// guard is alive.
    fn graph_mut(&self) -> Result<RefMut<'_, Graph>, GraphError> {
        self.graph
            .try_borrow_mut()
            .map_err(|_| GraphError::GraphBorrowed)
    }
    /// Ends building and returns the graph.
    pub fn finish(self) -> Graph {
        self.graph.into_inner()
    }
    /// Runs `f` on the graph and wraps the node it makes.
    pub fn with<F>(&self, f: F) -> Result<Tensor<'_>, GraphError>
    where
        F: FnOnce(&mut Graph) -> Result<NodeId, GraphError>,
    {
        let id = f(&mut *self.graph_mut()?)?;
        Ok(Tensor { builder: self, id })
    }
    /// Runs `f` on the graph and returns what it returns: the bridge to the `Graph`/`NodeId`
    /// level for functions that make more than one node (`weft::nn`'s layers and
    /// optimizers; [`GraphBuilder::tensor`] wraps the ids they return).
    pub fn with_graph<T>(&self, f: impl FnOnce(&mut Graph) -> T) -> Result<T, GraphError> {
        Ok(f(&mut *self.graph_mut()?))
    }
    /// The handle of an existing node.
    pub fn tensor(&self, id: NodeId) -> Result<Tensor<'_>, GraphError> {
        self.graph.borrow().check_node(id)?;
        Ok(Tensor { builder: self, id })
    }
    /// Declares an axis of known length.
    pub fn axis(&self, name: &str, len: usize) -> Result<Axis, GraphError> {
        self.graph_mut()?.axis(name, len)
    }
    /// Declares an axis whose length is bound later.
    pub fn axis_unbound(&self, name: &str) -> Result<Axis, GraphError> {
        self.graph_mut()?.axis_unbound(name)
    }
    /// Declares an axis with roles.
    pub fn axis_with_roles(
        &self,
        name: &str,
        len: Option<usize>,
        roles: Vec<Role>,
    ) -> Result<Axis, GraphError> {
        self.graph_mut()?.axis_with_roles(name, len, roles)
    }
    /// Binds a declared axis's length.
    pub fn bind(&self, axis: Axis, len: usize) -> Result<(), GraphError> {
        self.graph_mut()?.bind(axis, len)
    }
    /// An input tensor.
    pub fn placeholder(
        &self,
        name: &str,
        axes: &[Axis],
        dtype: DType,
    ) -> Result<Tensor<'_>, GraphError> {
        self.with(|g| g.placeholder(name, axes, dtype))
    }
    /// A constant with row-major `data` over `axes`.
    pub fn constant(&self, axes: &[Axis], data: ArrayData) -> Result<Tensor<'_>, GraphError> {
        let dtype = data.dtype();
        self.with(|g| g.constant(None, axes, dtype, TensorInit::data(data)))
    }
    /// A constant filled with one value.
    pub fn filled(
        &self,
        axes: &[Axis],
        dtype: DType,
        value: Scalar,
    ) -> Result<Tensor<'_>, GraphError> {
        self.with(|g| g.constant(None, axes, dtype, TensorInit::Fill(value)))
    }
    /// A scalar constant.
    pub fn scalar(&self, value: f64, dtype: DType) -> Result<Tensor<'_>, GraphError> {
        let s = if dtype.is_int() {
            Scalar::Int(value as i64)
        } else if dtype == DType::Bool {
            Scalar::Bool(value != 0.0)
        } else {
            Scalar::Float(value)
        };
        self.with(|g| g.scalar(s, dtype))
    }
    /// A trainable variable.
    pub fn variable(
        &self,
        name: &str,
        axes: &[Axis],
        dtype: DType,
        init: TensorInit,
    ) -> Result<Tensor<'_>, GraphError> {
        self.with(|g| g.variable(name, axes, dtype, init))
    }
    /// A persistent tensor (zero unless `init` is given).
    pub fn persistent_tensor(
        &self,
        name: &str,
        axes: &[Axis],
        dtype: DType,
        init: Option<TensorInit>,
    ) -> Result<Tensor<'_>, GraphError> {
        self.with(|g| g.persistent_tensor(name, axes, dtype, init))
    }
    /// `select(cond, a, b)`.
    pub fn select<'g>(
        &'g self,
        cond: Tensor<'g>,
        a: Tensor<'g>,
        b: Tensor<'g>,
    ) -> Result<Tensor<'g>, GraphError> {
        self.with(|g| g.select(cond.id, a.id, b.id))
    }
    /// The gradients of the scalar `loss` with respect to each of `wrt` ([`Graph::grad`]):
    /// one new tensor each, with exactly that tensor's axes and dtype.
    ///
    /// ```
    /// use weft::ir::{graph::GraphBuilder, DType};
    /// let b = GraphBuilder::new();
    /// let (r, c) = (b.axis("R", 2)?, b.axis("C", 3)?);
    /// let w = b.placeholder("w", &[r, c], DType::F32)?;
    /// let x = b.placeholder("x", &[c], DType::F32)?;
    /// let loss = w.dot(x)?.square()?.sum(&[r])?;
    /// let grads = b.grad(loss, &[w, x])?;
    /// assert_eq!(grads[0].axes().as_slice(), &[r, c]);
    /// assert_eq!(grads[1].axes().as_slice(), &[c]);
    /// # Ok::<(), weft::ir::GraphError>(())
    /// ```
    pub fn grad<'g>(
        &'g self,
        loss: Tensor<'g>,
        wrt: &[Tensor<'g>],
    ) -> Result<Vec<Tensor<'g>>, GraphError> {
        let ids: Vec<NodeId> = wrt.iter().map(|t| t.id).collect();
        let grads = self.graph_mut()?.grad(loss.id, &ids)?;
        Ok(grads
            .into_iter()
            .map(|id| Tensor { builder: self, id })
            .collect())
    }
    /// The concatenation of `parts`, each along its own axis.
    pub fn concat<'g>(&'g self, parts: &[(Tensor<'g>, Axis)]) -> Result<Tensor<'g>, GraphError> {
        let p: Vec<(NodeId, Axis)> = parts.iter().map(|(t, a)| (t.id, *a)).collect();
        self.with(|g| g.concat(&p))
    }
}

macro_rules! unary_methods {
    ($($name:ident),*) => {
        $(
            #[doc = concat!("`", stringify!($name), "` of each element. The result has `self`'s axes, in `self`'s order, and dtype.")]
            pub fn $name(self) -> Result<Tensor<'g>, GraphError> {
                self.builder.with(|g| g.$name(self.id))
            }
        )*
    };
}

macro_rules! binary_methods {
    ($($name:ident),*) => {
        $(
            #[doc = concat!("`", stringify!($name), "(self, other)` element by element, the operands paired by axis (never by position) and each broadcast over the axes only the other has. The result's axes: `self`'s order when both have the same axes or `self`'s contain `other`'s; `other`'s order when its axes contain `self`'s; otherwise `self`'s axes, then `other`'s others ([`Axes::elementwise`]). Comparisons give `bool`.")]
            pub fn $name(self, other: Tensor<'g>) -> Result<Tensor<'g>, GraphError> {
                self.builder.with(|g| g.$name(self.id, other.id))
            }
        )*
    };
}

macro_rules! reduce_methods {
    ($($name:ident => $op:ident),*) => {
        $(
            #[doc = concat!("`", stringify!($name), "` over `axes` (any order). The result has `self`'s other axes, in `self`'s order ([`Tensor::reduce`] orders them otherwise); `argmax`/`argmin` give an `i64` flat index, row-major over `axes` in the order given.")]
            pub fn $name(self, axes: &[Axis]) -> Result<Tensor<'g>, GraphError> {
                self.builder.with(|g| g.reduce(ReduceOp::$op, self.id, axes, None))
            }
        )*
    };
}

impl<'g> Tensor<'g> {
    /// The node.
    pub fn id(self) -> NodeId {
        self.id
    }
    /// The builder this tensor belongs to.
    pub fn builder(self) -> &'g GraphBuilder {
        self.builder
    }
    /// The result axes.
    pub fn axes(self) -> Axes {
        self.builder.graph().node(self.id).axes.clone()
    }
    /// The dtype.
    pub fn dtype(self) -> DType {
        self.builder.graph().node(self.id).dtype
    }
    /// Names the tensor.
    pub fn named(self, name: &str) -> Result<Tensor<'g>, GraphError> {
        self.builder.graph_mut()?.set_name(self.id, name)?;
        Ok(self)
    }
    /// Marks the tensor as a graph output.
    pub fn output(self) -> Result<Tensor<'g>, GraphError> {
        self.builder.graph_mut()?.mark_output(self.id)?;
        Ok(self)
    }

    unary_methods!(
        negative, abs, exp, log, sqrt, square, reciprocal, sign, tanh, sigmoid, sin, cos, relu
    );
    /// `add(self, other)` element by element (also `self + other`), paired by axis as the
    /// other binary methods ([`Tensor::subtract`] says the result's axes and order).
    #[allow(clippy::should_implement_trait)] // the operator is implemented too; this returns the Result
    pub fn add(self, other: Tensor<'g>) -> Result<Tensor<'g>, GraphError> {
        self.builder
            .with(|g| g.binary(BinaryOp::Add, self.id, other.id))
    }
    /// `dot(self, other)`: the contraction of every axis the two share and every dual pair
    /// (`N*` with `N`); the result has `self`'s remaining axes, then `other`'s.
    pub fn dot(self, other: Tensor<'g>) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.dot(self.id, other.id))
    }
    binary_methods!(
        subtract,
        multiply,
        divide,
        maximum,
        minimum,
        power,
        equal,
        not_equal,
        less,
        less_equal,
        greater,
        greater_equal
    );
    reduce_methods!(sum => Sum, prod => Prod, max => Max, min => Min, mean => Mean,
        argmax => ArgMax, argmin => ArgMin);

    /// `op` over `axes` (any order), the remaining axes in the order `out_axes` gives (which
    /// must be exactly them), or in `self`'s order when `None`.
    pub fn reduce(
        self,
        op: ReduceOp,
        axes: &[Axis],
        out_axes: Option<&[Axis]>,
    ) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.reduce(op, self.id, axes, out_axes))
    }
    /// Each element converted to `dtype` (floats to integers truncate toward zero; anything to
    /// bool is `≠ 0`). Same axes, same order.
    pub fn convert(self, dtype: DType) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.convert(self.id, dtype))
    }
    /// The values repeated over the axes of `axes` that `self` lacks; `axes` must contain
    /// `self`'s and is the result's order.
    pub fn broadcast(self, axes: &[Axis]) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.broadcast(self.id, axes))
    }
    /// The same values with the same axes, in the order `axes` gives (exactly `self`'s axes).
    pub fn axes_with_order(self, axes: &[Axis]) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.axes_with_order(self.id, axes))
    }
    /// The same values with axis `i` relabelled `axes[i]`, position by position (the lengths
    /// must agree): the one op that pairs by position. The result's axes are `axes`.
    pub fn cast_axes(self, axes: &[Axis]) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.cast_axes(self.id, axes))
    }
    /// The transpose: a view whose axes are `self`'s reversed, each `A` becoming its dual
    /// `A*` (which a `dot` pairs with `A`).
    pub fn transpose(self) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.transpose(self.id))
    }
    /// A view taking a range of (`AxisSlice::Range`) or pinning one index of
    /// (`AxisSlice::Index`) each listed axis: `self`'s axis order, pinned axes dropped and each
    /// ranged one replaced in place by its derived slice axis.
    pub fn slice(self, slices: &[(Axis, AxisSlice)]) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.slice(self.id, slices))
    }
    /// A view merging `axes` (the first major; at least two) into one derived axis, placed
    /// where the first of them stood; the other axes keep their order.
    pub fn flatten(self, axes: &[Axis]) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.flatten(self.id, axes))
    }
    /// The inverse of [`Tensor::flatten`]: the flattened `axis` split back into its parts, in
    /// place and in their order.
    pub fn unflatten(self, axis: Axis) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.unflatten(self.id, axis))
    }
    /// A view with `before` and `after` zeros around each listed axis, each replaced in place
    /// by its derived padded axis.
    pub fn pad(self, pads: &[(Axis, usize, usize)]) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.pad(self.id, pads))
    }
    /// A view with the new axis `axis` at position `pos` (0: first), values repeated along it.
    pub fn expand_dims(self, axis: Axis, pos: usize) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.expand_dims(self.id, axis, pos))
    }
    /// `assign(self, value)`: when a computation that requests it runs, `self` (a variable or
    /// persistent tensor) takes `value` (its axes in any order, same dtype) after the call.
    /// The result is the new value, over `self`'s axes in `self`'s order.
    pub fn assign(self, value: Tensor<'g>) -> Result<Tensor<'g>, GraphError> {
        self.builder.with(|g| g.assign(self.id, value.id))
    }

    /// The gradients of this scalar loss with respect to each of `wrt`
    /// ([`GraphBuilder::grad`], [`Graph::grad`]).
    ///
    /// ```
    /// use weft::ir::{graph::GraphBuilder, DType};
    /// let b = GraphBuilder::new();
    /// let n = b.axis("N", 4)?;
    /// let x = b.placeholder("x", &[n], DType::F64)?;
    /// let loss = x.square()?.sum(&[n])?;
    /// let dx = loss.grad(&[x])?[0]; // 2x
    /// assert_eq!(dx.axes().as_slice(), &[n]);
    /// assert_eq!(dx.dtype(), DType::F64);
    /// # Ok::<(), weft::ir::GraphError>(())
    /// ```
    pub fn grad(self, wrt: &[Tensor<'g>]) -> Result<Vec<Tensor<'g>>, GraphError> {
        self.builder.grad(self, wrt)
    }

    fn scalar_like(self, v: f64) -> Result<Tensor<'g>, GraphError> {
        self.builder.scalar(v, self.dtype())
    }
}

macro_rules! operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<'g> std::ops::$trait<Tensor<'g>> for Tensor<'g> {
            type Output = Result<Tensor<'g>, GraphError>;
            fn $method(self, rhs: Tensor<'g>) -> Self::Output {
                self.builder
                    .with(|g| g.binary(BinaryOp::$op, self.id, rhs.id))
            }
        }
        impl<'g> std::ops::$trait<Result<Tensor<'g>, GraphError>> for Tensor<'g> {
            type Output = Result<Tensor<'g>, GraphError>;
            fn $method(self, rhs: Result<Tensor<'g>, GraphError>) -> Self::Output {
                std::ops::$trait::$method(self, rhs?)
            }
        }
        impl<'g> std::ops::$trait<Tensor<'g>> for Result<Tensor<'g>, GraphError> {
            type Output = Result<Tensor<'g>, GraphError>;
            fn $method(self, rhs: Tensor<'g>) -> Self::Output {
                std::ops::$trait::$method(self?, rhs)
            }
        }
        impl<'g> std::ops::$trait<f64> for Tensor<'g> {
            type Output = Result<Tensor<'g>, GraphError>;
            fn $method(self, rhs: f64) -> Self::Output {
                let c = self.scalar_like(rhs)?;
                std::ops::$trait::$method(self, c)
            }
        }
        impl<'g> std::ops::$trait<Tensor<'g>> for f64 {
            type Output = Result<Tensor<'g>, GraphError>;
            fn $method(self, rhs: Tensor<'g>) -> Self::Output {
                let c = rhs.scalar_like(self)?;
                std::ops::$trait::$method(c, rhs)
            }
        }
    };
}

operator!(Add, add, Add);
operator!(Sub, sub, Subtract);
operator!(Mul, mul, Multiply);
operator!(Div, div, Divide);

impl<'g> std::ops::Neg for Tensor<'g> {
    type Output = Result<Tensor<'g>, GraphError>;
    fn neg(self) -> Self::Output {
        self.negative()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_build_the_l2_graph() -> Result<(), GraphError> {
        let g = GraphBuilder::new();
        let n = g.axis("N", 3)?;
        let x = g.placeholder("x", &[n], DType::F32)?;
        let y = g.placeholder("y", &[n], DType::F32)?;
        let s = ((x - y)? * 2.0)?;
        let s = (s + (1.0 - x))?;
        assert_eq!(s.axes().as_slice(), &[n]);
        let t = (x - y)?;
        let l2 = t.dot(t)?;
        assert!(l2.axes().is_empty());
        let bad = g.placeholder("b", &[n], DType::I32)?;
        assert!(matches!(x + bad, Err(GraphError::DTypeMismatch { .. })));
        Ok(())
    }
}
