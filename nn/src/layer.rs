//! A dense (fully connected) layer: `activation(x · W + b)` with the weight and bias as
//! trainable variables initialised from a seed.
//!
//! Assumes: `x` is f32 or f64 and holds the input axis but not the output axis; both axes'
//! lengths are bound (the initial weights are data); the layer's name is not yet taken by
//! `NAME_w` or `NAME_b`. Guarantees: the weight is the variable `NAME_w` over `[in, out]`,
//! drawn uniformly from `[-limit, limit)` by [`Init`] (Glorot or He) with the SplitMix64
//! generator (`weft_ir::perturb::SplitMix`) seeded by `Init::seed`, row-major — the same seed
//! gives the same weights on every machine and run; the bias is the variable `NAME_b` over
//! `[out]`, zero; the output has `x`'s axes with the input axis replaced by the output axis
//! at the end (`dot`'s rule: `x`'s remaining axes, then `W`'s).

use crate::{float_dtype, label, require_axis};
use weft_ir::axis::Axis;
use weft_ir::dtype::DType;
use weft_ir::graph::{Graph, GraphError, NodeId, TensorInit};
use weft_ir::host::{ArrayData, Scalar};
use weft_ir::perturb::SplitMix;
/// Seeded distributions of initial values; defined in weft-ir, whose text form draws them.
pub use weft_ir::random::Random;

/// The nonlinearity applied after `x · W + b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// None: the affine map itself (e.g. logits for [`softmax_cross_entropy`](crate::softmax_cross_entropy)).
    Identity,
    /// `max(x, 0)`.
    Relu,
    /// `tanh x`.
    Tanh,
    /// `1 / (1 + e⁻ˣ)`.
    Sigmoid,
}

/// How initial weights are drawn: uniformly from `[-limit, limit)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InitScheme {
    /// Glorot (Xavier) uniform: `limit = √(6 / (fan_in + fan_out))`; for tanh, sigmoid and
    /// linear layers.
    GlorotUniform,
    /// He (Kaiming) uniform: `limit = √(6 / fan_in)`; for relu layers.
    HeUniform,
}

/// A weight initialisation: a scheme and the seed of its generator.
///
/// ```
/// use weft::ir::{ArrayData, DType};
/// use weft::nn::Init;
/// let a = Init::he(3).values(4, 2, DType::F64);
/// assert_eq!(a, Init::he(3).values(4, 2, DType::F64)); // deterministic
/// let ArrayData::F64(w) = a else { panic!() };
/// assert_eq!(w.len(), 8);
/// assert!(w.iter().all(|x| x.abs() < Init::he(3).limit(4, 2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Init {
    /// The distribution's limit rule.
    pub scheme: InitScheme,
    /// The seed of the SplitMix64 generator drawing the weights.
    pub seed: u64,
}

impl Init {
    /// Glorot uniform from `seed`.
    pub fn glorot(seed: u64) -> Init {
        Init {
            scheme: InitScheme::GlorotUniform,
            seed,
        }
    }

    /// He uniform from `seed`.
    pub fn he(seed: u64) -> Init {
        Init {
            scheme: InitScheme::HeUniform,
            seed,
        }
    }

    /// The half-width of the distribution for a weight with `fan_in` inputs and `fan_out`
    /// outputs (0 when the fan it divides by is 0: there are no weights to draw).
    pub fn limit(&self, fan_in: usize, fan_out: usize) -> f64 {
        let fan = match self.scheme {
            InitScheme::GlorotUniform => fan_in as f64 + fan_out as f64,
            InitScheme::HeUniform => fan_in as f64,
        };
        if fan == 0.0 {
            0.0
        } else {
            (6.0 / fan).sqrt()
        }
    }

    /// `fan_in · fan_out` weights, row-major over `[in, out]`, in `dtype` (f32 values are the
    /// f64 draws rounded once; any other dtype gets f64). Each is `limit · u` with `u` uniform
    /// in `[-1, 1)`, drawn in order from SplitMix64 seeded with `seed`.
    pub fn values(&self, fan_in: usize, fan_out: usize, dtype: DType) -> ArrayData {
        let limit = self.limit(fan_in, fan_out);
        let mut rng = SplitMix(self.seed);
        let n = fan_in.saturating_mul(fan_out);
        let draws = (0..n).map(|_| limit * rng.unit() / 2.0);
        match dtype {
            DType::F32 => ArrayData::F32(draws.map(|x| x as f32).collect()),
            _ => ArrayData::F64(draws.collect()),
        }
    }
}

/// The nodes [`dense`] made: its output and its two variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dense {
    /// `activation(x · W + b)`.
    pub output: NodeId,
    /// `W` over `[in, out]`, the variable `NAME_w`.
    pub weight: NodeId,
    /// `b` over `[out]`, the variable `NAME_b`.
    pub bias: NodeId,
}

impl Dense {
    /// The trainable variables, weight then bias (what an optimizer pairs with gradients).
    pub fn variables(&self) -> [NodeId; 2] {
        [self.weight, self.bias]
    }
}

/// A dense layer named `name` from `in_axis` to `out_axis`: `activation(x · W + b)`, with the
/// variables `NAME_w` (over `[in_axis, out_axis]`, drawn by `init`) and `NAME_b` (over
/// `[out_axis]`, zero). The output has `x`'s axes less `in_axis`, then `out_axis`, and `x`'s
/// dtype (f32 or f64).
///
/// ```
/// use weft::ir::{DType, Graph};
/// use weft::nn;
/// let mut g = Graph::new();
/// let (b, i, h) = (g.axis("B", 16)?, g.axis("I", 64)?, g.axis("H", 32)?);
/// let x = g.placeholder("x", &[b, i], DType::F32)?;
/// let l1 = nn::dense(&mut g, "hidden", x, i, h, nn::Activation::Relu, nn::Init::he(1))?;
/// assert_eq!(g.node(l1.output).axes.as_slice(), &[b, h]);
/// assert_eq!(g.find("hidden_w"), Some(l1.weight));
/// // The input axis must be x's; the output axis must be new to it.
/// assert!(nn::dense(&mut g, "again", x, h, i, nn::Activation::Identity, nn::Init::glorot(1)).is_err());
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn dense(
    g: &mut Graph,
    name: &str,
    x: NodeId,
    in_axis: Axis,
    out_axis: Axis,
    activation: Activation,
    init: Init,
) -> Result<Dense, GraphError> {
    let op = format!("dense {name}: {}", label(g, "dense", &[x]));
    let dtype = float_dtype(g, &op, x)?;
    require_axis(g, &op, x, in_axis)?;
    let x_axes = &g.node(x).axes;
    if x_axes.contains(out_axis) || in_axis == out_axis {
        return Err(GraphError::Axes {
            op,
            message: format!(
                "the output axis `{}` must be new to the input {} (and differ from the input axis `{}`)",
                g.axis_name(out_axis),
                g.axes_name(x_axes),
                g.axis_name(in_axis)
            ),
        });
    }
    let fan_in = g.resolve_len(in_axis)?;
    let fan_out = g.resolve_len(out_axis)?;
    let w = g.variable(
        &format!("{name}_w"),
        &[in_axis, out_axis],
        dtype,
        TensorInit::data(init.values(fan_in, fan_out, dtype)),
    )?;
    let b = g.variable(
        &format!("{name}_b"),
        &[out_axis],
        dtype,
        TensorInit::Fill(Scalar::Float(0.0)),
    )?;
    let xw = g.dot(x, w)?;
    let affine = g.add(xw, b)?;
    let output = activation.apply(g, affine)?;
    Ok(Dense {
        output,
        weight: w,
        bias: b,
    })
}

impl Activation {
    /// The activation of `x`, a new node (or `x` itself for `Identity`).
    pub fn apply(self, g: &mut Graph, x: NodeId) -> Result<NodeId, GraphError> {
        match self {
            Activation::Identity => Ok(x),
            Activation::Relu => g.relu(x),
            Activation::Tanh => g.tanh(x),
            Activation::Sigmoid => g.sigmoid(x),
        }
    }
}

/// A convolution layer: its output and its trainable variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv {
    /// `activation(convolution(x, filter) + b)`.
    pub output: NodeId,
    /// The filter over the given filter axes, the variable `NAME_w`.
    pub filter: NodeId,
    /// The bias over the output's features axis, the variable `NAME_b`.
    pub bias: NodeId,
}

impl Conv {
    /// The trainable variables, filter then bias.
    pub fn variables(&self) -> [NodeId; 2] {
        [self.filter, self.bias]
    }
}

/// A convolution layer named `name`: `activation(convolution(x, W, spec) + b)`, pairing axes
/// by role (`Graph::convolution`). `W` (the variable `NAME_w`) is over `filter_axes`, which
/// hold one Channelout axis, one Channel axis and one axis per spatial role of `x`; it is drawn
/// by `init` with `fan_in` = the filter's size less its Channelout axis (channels × taps).
/// `b` (`NAME_b`, zero) is over the output's features axis.
///
/// ```
/// use weft::ir::{ConvSpec, DType, Graph, Role};
/// use weft::nn;
/// let mut g = Graph::new();
/// let b = g.axis("B", 4)?;
/// let c = g.axis_with_roles("C", Some(1), vec![Role::Channel])?;
/// let (h, w) = (g.axis_with_roles("H", Some(8), vec![Role::Height])?, g.axis_with_roles("W", Some(8), vec![Role::Width])?);
/// let k = g.axis_with_roles("K", Some(16), vec![Role::Channelout])?;
/// let (r, s) = (g.axis_with_roles("R", Some(3), vec![Role::Height])?, g.axis_with_roles("S", Some(3), vec![Role::Width])?);
/// let x = g.placeholder("x", &[b, c, h, w], DType::F32)?;
/// let spec = ConvSpec::new().pad(Role::Height, 1, 1).pad(Role::Width, 1, 1);
/// let l = nn::conv(&mut g, "conv1", x, &[k, c, r, s], &spec, nn::Activation::Relu, nn::Init::he(1))?;
/// assert_eq!(g.shape_of(&g.node(l.output).axes)?, vec![4, 16, 8, 8]);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn conv(
    g: &mut Graph,
    name: &str,
    x: NodeId,
    filter_axes: &[Axis],
    spec: &weft_ir::graph::ConvSpec,
    activation: Activation,
    init: Init,
) -> Result<Conv, GraphError> {
    let op = format!("conv {name}: {}", label(g, "conv", &[x]));
    let dtype = float_dtype(g, &op, x)?;
    let (fan_in, fan_out) = g.filter_fans(filter_axes)?;
    let w = g.variable(
        &format!("{name}_w"),
        filter_axes,
        dtype,
        TensorInit::data(init.values(fan_in, fan_out, dtype)),
    )?;
    let y = g.convolution(x, w, spec)?;
    // The convolution paired the axes: its Channelout axis names the output's features axis.
    let (x_axes, w_axes) = (g.node(x).axes.clone(), g.node(w).axes.clone());
    let filter_out = g.conv_pairing(&op, &x_axes, &w_axes, spec)?.filter_out;
    let features = g.derived_axis(weft_ir::axis::AxisDef::Features(filter_out));
    let b = g.variable(
        &format!("{name}_b"),
        &[features],
        dtype,
        TensorInit::Fill(Scalar::Float(0.0)),
    )?;
    let affine = g.add(y, b)?;
    let output = activation.apply(g, affine)?;
    Ok(Conv {
        output,
        filter: w,
        bias: b,
    })
}
