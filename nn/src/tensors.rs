//! The training helpers on the [`GraphBuilder`]/[`Tensor`] API: the same functions as the rest
//! of this crate (losses, layers, optimizers), taking and returning [`Tensor`]s, as the methods
//! of two traits, [`GraphBuilderNn`] and [`TensorNn`] (in `weft::prelude`; the builder and the
//! tensor are weft-ir's types, so the methods reach them as a trait's).
//!
//! Assumes: tensors of one builder (another builder's tensor is [`GraphError::Foreign`], as in
//! every builder method). Guarantees: each method builds exactly what its `&mut Graph`
//! counterpart builds, on the builder's graph.
//!
//! The two levels meet both ways: a [`Tensor`]'s node is [`Tensor::id`]; a node of the
//! builder's graph is a tensor again with [`GraphBuilder::tensor`]; [`GraphBuilder::with`] runs
//! any `&mut Graph` function and wraps the node it returns; [`GraphBuilder::from_graph`]
//! continues a graph built with the `Graph` API, and [`GraphBuilder::finish`] hands it back.
//!
//! ```
//! use weft::ir::{graph::GraphBuilder, DType};
//! use weft::nn::{Activation, GraphBuilderNn, Init, TensorNn};
//! let g = GraphBuilder::new();
//! let (b, p, c) = (g.axis("B", 8)?, g.axis("P", 4)?, g.axis("C", 3)?);
//! let x = g.placeholder("x", &[b, p], DType::F32)?;
//! let labels = g.placeholder("labels", &[b], DType::I64)?;
//! let layer = g.dense("out", x, p, c, Activation::Identity, Init::glorot(7))?;
//! let loss = layer.output.softmax_cross_entropy(labels, c)?;
//! let grads = loss.grad(&layer.variables())?;
//! let step = g.sgd(&[(layer.weight, grads[0]), (layer.bias, grads[1])], 0.1)?;
//! assert_eq!(step.assigns.len(), 2);
//! assert_eq!(loss.axes().len(), 0); // a scalar
//! # Ok::<(), weft::ir::GraphError>(())
//! ```

use crate::layer::{Activation, Init};
use crate::optim::Adam;
use weft_ir::axis::Axis;
use weft_ir::dtype::DType;
use weft_ir::graph::{ConvSpec, GraphBuilder, GraphError, NodeId, Tensor};

/// A dense layer built on a [`GraphBuilder`] ([`GraphBuilderNn::dense`]).
#[derive(Clone, Copy, Debug)]
pub struct DenseTensors<'g> {
    /// `activation(x · W + b)`: `x`'s axes less the input axis, then the output axis.
    pub output: Tensor<'g>,
    /// `W` over `[in, out]`, the variable `NAME_w`.
    pub weight: Tensor<'g>,
    /// `b` over `[out]`, the variable `NAME_b`.
    pub bias: Tensor<'g>,
}

impl<'g> DenseTensors<'g> {
    /// The trainable variables, weight then bias (what an optimizer pairs with gradients).
    pub fn variables(&self) -> [Tensor<'g>; 2] {
        [self.weight, self.bias]
    }
}

/// A convolution layer built on a [`GraphBuilder`] ([`GraphBuilderNn::conv`]).
#[derive(Clone, Copy, Debug)]
pub struct ConvTensors<'g> {
    /// `activation(convolution(x, filter) + b)`: `x`'s axes, the Channel axis replaced by the
    /// features axis and each spatial axis by its window axis, in place.
    pub output: Tensor<'g>,
    /// The filter over the given filter axes, the variable `NAME_w`.
    pub filter: Tensor<'g>,
    /// The bias over the output's features axis, the variable `NAME_b`.
    pub bias: Tensor<'g>,
}

impl<'g> ConvTensors<'g> {
    /// The trainable variables, filter then bias.
    pub fn variables(&self) -> [Tensor<'g>; 2] {
        [self.filter, self.bias]
    }
}

/// One optimizer step built on a [`GraphBuilder`]: ask a computation for `assigns` and each
/// call is a step.
#[derive(Clone, Debug)]
pub struct StepTensors<'g> {
    /// Every assign of the step, per variable its state's first, then the variable's.
    pub assigns: Vec<Tensor<'g>>,
    /// The persistent tensors holding the optimizer's state, in the order made.
    pub state: Vec<Tensor<'g>>,
}

fn wrap(b: &GraphBuilder, ids: Vec<NodeId>) -> Result<Vec<Tensor<'_>>, GraphError> {
    ids.into_iter().map(|id| b.tensor(id)).collect()
}

fn pairs(params: &[(Tensor<'_>, Tensor<'_>)]) -> Vec<(NodeId, NodeId)> {
    params.iter().map(|(v, g)| (v.id(), g.id())).collect()
}

fn step(b: &GraphBuilder, u: crate::Updates) -> Result<StepTensors<'_>, GraphError> {
    Ok(StepTensors {
        assigns: wrap(b, u.assigns)?,
        state: wrap(b, u.state)?,
    })
}

/// The training helpers as methods of a [`GraphBuilder`] (the module's docs say how they
/// meet the `&mut Graph` functions). Implemented for [`GraphBuilder`] alone.
pub trait GraphBuilderNn {
    /// A dense layer `activation(x · W + b)` with new variables `NAME_w` over
    /// `[in_axis, out_axis]` and `NAME_b` over `[out_axis]` ([`crate::dense`]).
    fn dense<'g>(
        &'g self,
        name: &str,
        x: Tensor<'g>,
        in_axis: Axis,
        out_axis: Axis,
        activation: Activation,
        init: Init,
    ) -> Result<DenseTensors<'g>, GraphError>;

    /// A convolution layer `activation(convolution(x, W) + b)` with a new filter `NAME_w` over
    /// `filter_axes` and bias `NAME_b` over the output's features axis ([`crate::conv`]).
    fn conv<'g>(
        &'g self,
        name: &str,
        x: Tensor<'g>,
        filter_axes: &[Axis],
        spec: &ConvSpec,
        activation: Activation,
        init: Init,
    ) -> Result<ConvTensors<'g>, GraphError>;

    /// The constant `0, 1, .., n−1` over `[axis]` in `dtype` ([`crate::iota`]).
    fn iota(&self, axis: Axis, dtype: DType) -> Result<Tensor<'_>, GraphError>;

    /// One step of plain gradient descent over `(variable, gradient)` pairs ([`crate::sgd`]).
    fn sgd<'g>(
        &'g self,
        params: &[(Tensor<'g>, Tensor<'g>)],
        lr: f64,
    ) -> Result<StepTensors<'g>, GraphError>;

    /// One step of gradient descent with momentum `mu` ([`crate::momentum`]).
    fn momentum<'g>(
        &'g self,
        params: &[(Tensor<'g>, Tensor<'g>)],
        lr: f64,
        mu: f64,
    ) -> Result<StepTensors<'g>, GraphError>;

    /// One Adam step ([`crate::adam`]).
    fn adam<'g>(
        &'g self,
        params: &[(Tensor<'g>, Tensor<'g>)],
        hyper: &Adam,
    ) -> Result<StepTensors<'g>, GraphError>;
}

impl GraphBuilderNn for GraphBuilder {
    fn dense<'g>(
        &'g self,
        name: &str,
        x: Tensor<'g>,
        in_axis: Axis,
        out_axis: Axis,
        activation: Activation,
        init: Init,
    ) -> Result<DenseTensors<'g>, GraphError> {
        let d = self
            .with_graph(|g| crate::dense(g, name, x.id(), in_axis, out_axis, activation, init))??;
        Ok(DenseTensors {
            output: self.tensor(d.output)?,
            weight: self.tensor(d.weight)?,
            bias: self.tensor(d.bias)?,
        })
    }

    fn conv<'g>(
        &'g self,
        name: &str,
        x: Tensor<'g>,
        filter_axes: &[Axis],
        spec: &ConvSpec,
        activation: Activation,
        init: Init,
    ) -> Result<ConvTensors<'g>, GraphError> {
        let c = self
            .with_graph(|g| crate::conv(g, name, x.id(), filter_axes, spec, activation, init))??;
        Ok(ConvTensors {
            output: self.tensor(c.output)?,
            filter: self.tensor(c.filter)?,
            bias: self.tensor(c.bias)?,
        })
    }

    fn iota(&self, axis: Axis, dtype: DType) -> Result<Tensor<'_>, GraphError> {
        self.with(|g| crate::iota(g, axis, dtype))
    }

    fn sgd<'g>(
        &'g self,
        params: &[(Tensor<'g>, Tensor<'g>)],
        lr: f64,
    ) -> Result<StepTensors<'g>, GraphError> {
        let u = self.with_graph(|g| crate::sgd(g, &pairs(params), lr))??;
        step(self, u)
    }

    fn momentum<'g>(
        &'g self,
        params: &[(Tensor<'g>, Tensor<'g>)],
        lr: f64,
        mu: f64,
    ) -> Result<StepTensors<'g>, GraphError> {
        let u = self.with_graph(|g| crate::momentum(g, &pairs(params), lr, mu))??;
        step(self, u)
    }

    fn adam<'g>(
        &'g self,
        params: &[(Tensor<'g>, Tensor<'g>)],
        hyper: &Adam,
    ) -> Result<StepTensors<'g>, GraphError> {
        let u = self.with_graph(|g| crate::adam(g, &pairs(params), hyper))??;
        step(self, u)
    }
}

/// The training helpers as methods of a [`Tensor`] (losses, `log_softmax`, `one_hot`).
/// Implemented for [`Tensor`] alone.
pub trait TensorNn<'g> {
    /// The log-softmax of these logits along `axis`: same axes, same order
    /// ([`crate::log_softmax`]).
    fn log_softmax(self, axis: Axis) -> Result<Tensor<'g>, GraphError>;

    /// The mean over the batch of `−log softmax(self)[label]` for integer `labels` over these
    /// logits' axes less `class_axis`: a scalar ([`crate::softmax_cross_entropy`]).
    fn softmax_cross_entropy(
        self,
        labels: Tensor<'g>,
        class_axis: Axis,
    ) -> Result<Tensor<'g>, GraphError>;

    /// The mean of `(self − target)²` over every element: a scalar; the two must have the
    /// same axes, in any order ([`crate::mean_squared_error`]).
    fn mean_squared_error(self, target: Tensor<'g>) -> Result<Tensor<'g>, GraphError>;

    /// The fraction of rows of these logits whose argmax over `class_axis` (the first on a
    /// tie) is the label: a scalar ([`crate::accuracy`]).
    fn accuracy(self, labels: Tensor<'g>, class_axis: Axis) -> Result<Tensor<'g>, GraphError>;

    /// These integer labels one-hot encoded in `dtype`: their axes, then `class_axis`
    /// ([`crate::one_hot`]).
    fn one_hot(self, class_axis: Axis, dtype: DType) -> Result<Tensor<'g>, GraphError>;
}

impl<'g> TensorNn<'g> for Tensor<'g> {
    fn log_softmax(self, axis: Axis) -> Result<Tensor<'g>, GraphError> {
        self.builder()
            .with(|g| crate::log_softmax(g, self.id(), axis))
    }

    fn softmax_cross_entropy(
        self,
        labels: Tensor<'g>,
        class_axis: Axis,
    ) -> Result<Tensor<'g>, GraphError> {
        self.builder()
            .with(|g| crate::softmax_cross_entropy(g, self.id(), labels.id(), class_axis))
    }

    fn mean_squared_error(self, target: Tensor<'g>) -> Result<Tensor<'g>, GraphError> {
        self.builder()
            .with(|g| crate::mean_squared_error(g, self.id(), target.id()))
    }

    fn accuracy(self, labels: Tensor<'g>, class_axis: Axis) -> Result<Tensor<'g>, GraphError> {
        self.builder()
            .with(|g| crate::accuracy(g, self.id(), labels.id(), class_axis))
    }

    fn one_hot(self, class_axis: Axis, dtype: DType) -> Result<Tensor<'g>, GraphError> {
        self.builder()
            .with(|g| crate::one_hot(g, self.id(), class_axis, dtype))
    }
}
