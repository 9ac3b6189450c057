//! Convolution and pooling, paired by axis role (seed 000, "Convolution"; seed 003's roles).
//!
//! Assumes: operands made by the builders (axes and dtypes inferred).
//!
//! Guarantees:
//! - [`Graph::convolution`] pairs input and filter by role, never by position: every input axis
//!   with a spatial role ([`SPATIAL_ROLES`]) slides over the filter axis of the same role; the
//!   input's Channel axis contracts with the filter's Channel axis (in `groups` blocks); the
//!   filter's Channelout axis becomes the output's channel axis, a derived axis with the
//!   Channel role ([`AxisDef::Features`]) that the next convolution contracts. Every other
//!   input axis is a batch axis and is kept. The output has the input's axis order, each
//!   spatial axis replaced by its window axis ([`AxisDef::Window`], same roles) and the Channel
//!   axis by the features axis.
//! - [`Graph::pool`] slides a window over the axis of each role its spec lists (any role,
//!   so crossmap pooling over Channel is a pool too), taking the maximum or the average of
//!   the taps inside the input (padding never counts).
//! - A pairing the roles do not determine, a zero stride, dilation, window or group count, or
//!   (lengths bound) a window longer than its padded axis or channels that the groups do not
//!   divide is a typed [`GraphError`] naming the axes, when the node is made.
//! - [`Graph::expand_convolution`] and [`Graph::expand_pool`] build, from ordinary ops (pad,
//!   strided slices, cast_axes, dot, add, maximum, select, divide), a node with the same axes
//!   and value: one strided slice of the padded input per filter tap. The compiler lowers the
//!   two ops through them and autodiff differentiates them through them.

use super::window::{as_i64, window_range, PooledAxis};
use super::window_fold::{windows_meeting, PoolFold};
use super::{AxisSlice, BinaryOp, Graph, GraphError, NodeId, Op};
use crate::axis::{Axes, Axis, AxisDef, Role, SliceRange, WindowKernel, WindowStep};
use crate::dtype::DType;
use crate::host::Scalar;

/// The most terms a convolution's expansion may have: one product per filter tap, per channel
/// group unless the convolution is depthwise. Each is a node of the expanded graph, so
/// compile time grows with them; [`Graph::conv_pairing`] refuses more, for every backend.
pub const MAX_CONV_TERMS: usize = 4096;

/// The roles a window slides over in a convolution: the image and sequence axes.
pub const SPATIAL_ROLES: [Role; 4] = [Role::Depth, Role::Height, Role::Width, Role::Time];

/// How a convolution's filter moves, per spatial role, and how many channel groups it has.
///
/// ```
/// use weft::ir::{ConvSpec, Role};
/// let spec = ConvSpec::new().stride(Role::Height, 2).stride(Role::Width, 2).pad(Role::Height, 1, 1);
/// assert_eq!(spec.step(&Role::Height).stride, 2);
/// assert_eq!(spec.step(&Role::Time).stride, 1); // roles not listed: stride 1, no padding
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ConvSpec {
    /// Stride, dilation and padding per role; a role not listed moves by 1 without padding.
    pub steps: Vec<(Role, WindowStep)>,
    /// Channel groups (1: every output channel sees every input channel).
    pub groups: usize,
}

impl Default for ConvSpec {
    fn default() -> ConvSpec {
        ConvSpec::new()
    }
}

impl ConvSpec {
    /// Stride 1, no dilation, no padding, one group.
    pub fn new() -> ConvSpec {
        ConvSpec {
            steps: Vec::new(),
            groups: 1,
        }
    }
    /// The same spec in its one written form: the first step per role (the one that
    /// applies), steps equal to the default left out. `Graph::convolution` stores this form,
    /// so a convolution prints and parses back to the same node.
    pub fn canonical(&self) -> ConvSpec {
        let mut steps: Vec<(Role, WindowStep)> = Vec::new();
        for (role, step) in &self.steps {
            if !steps.iter().any(|(r, _)| r == role) {
                steps.push((role.clone(), *step));
            }
        }
        steps.retain(|(_, s)| *s != WindowStep::default());
        ConvSpec {
            steps,
            groups: self.groups,
        }
    }

    /// The step over `role`'s axis.
    pub fn step(&self, role: &Role) -> WindowStep {
        find_step(&self.steps, role).unwrap_or_default()
    }
    /// Moves by `stride` over `role`'s axis.
    pub fn stride(mut self, role: Role, stride: usize) -> ConvSpec {
        step_mut(&mut self.steps, role).stride = stride;
        self
    }
    /// Spaces the filter's taps `dilation` apart over `role`'s axis.
    pub fn dilation(mut self, role: Role, dilation: usize) -> ConvSpec {
        step_mut(&mut self.steps, role).dilation = dilation;
        self
    }
    /// Pads `role`'s axis with `before` and `after` zeros.
    pub fn pad(mut self, role: Role, before: usize, after: usize) -> ConvSpec {
        let s = step_mut(&mut self.steps, role);
        (s.before, s.after) = (before, after);
        self
    }
    /// Splits the channels into `groups` blocks, output block g seeing input block g only.
    pub fn groups(mut self, groups: usize) -> ConvSpec {
        self.groups = groups;
        self
    }
}

fn find_step(steps: &[(Role, WindowStep)], role: &Role) -> Option<WindowStep> {
    steps.iter().find(|(r, _)| r == role).map(|(_, s)| *s)
}

fn step_mut(steps: &mut Vec<(Role, WindowStep)>, role: Role) -> &mut WindowStep {
    let i = match steps.iter().position(|(r, _)| *r == role) {
        Some(i) => i,
        None => {
            steps.push((role, WindowStep::default()));
            steps.len() - 1
        }
    };
    &mut steps[i].1
}

/// What a pool computes over each window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// The largest tap (`maximum`'s rules: NaN if any tap is NaN).
    Max,
    /// The mean of the taps inside the input (padding is not counted).
    Avg,
}

impl PoolKind {
    /// The op's name: `max_pool` or `avg_pool`.
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Max => "max_pool",
            PoolKind::Avg => "avg_pool",
        }
    }
}

/// A pool: its kind and, per pooled role, the window length and how it moves.
///
/// ```
/// use weft::ir::{PoolKind, PoolSpec, Role};
/// // 2×2 windows moving by 2 (a window's stride defaults to its length).
/// let spec = PoolSpec::new(PoolKind::Max).window(Role::Height, 2).window(Role::Width, 2);
/// assert_eq!(spec.windows[0].2.stride, 2);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PoolSpec {
    /// Max or average.
    pub kind: PoolKind,
    /// Per pooled role: the window's length (taps) and its step.
    pub windows: Vec<(Role, usize, WindowStep)>,
}

impl PoolSpec {
    /// A pool over no role yet.
    pub fn new(kind: PoolKind) -> PoolSpec {
        PoolSpec {
            kind,
            windows: Vec::new(),
        }
    }
    /// Pools `role`'s axis in windows of `len`, moving by `len` (set another with `stride`).
    pub fn window(mut self, role: Role, len: usize) -> PoolSpec {
        let w = self.entry(role);
        w.1 = len;
        w.2.stride = len;
        self
    }
    /// Moves `role`'s window by `stride`.
    pub fn stride(mut self, role: Role, stride: usize) -> PoolSpec {
        self.entry(role).2.stride = stride;
        self
    }
    /// Spaces `role`'s taps `dilation` apart.
    pub fn dilation(mut self, role: Role, dilation: usize) -> PoolSpec {
        self.entry(role).2.dilation = dilation;
        self
    }
    /// Pads `role`'s axis; padding never counts as a tap (each must be shorter than the window).
    pub fn pad(mut self, role: Role, before: usize, after: usize) -> PoolSpec {
        let w = self.entry(role);
        (w.2.before, w.2.after) = (before, after);
        self
    }
    fn entry(&mut self, role: Role) -> &mut (Role, usize, WindowStep) {
        let i = match self.windows.iter().position(|w| w.0 == role) {
            Some(i) => i,
            None => {
                self.windows.push((role, 0, WindowStep::default()));
                self.windows.len() - 1
            }
        };
        &mut self.windows[i]
    }
}

/// How [`Graph::expand_convolution`] takes each tap's input positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvExpansion {
    /// One strided slice of the padded input per spatial axis: any stride; each tap's operand
    /// is a view over several axes (a loop nest, not a matrix).
    Strided,
    /// The padded spatial axes flattened (with a stride above 1, split into the phases the
    /// taps read first, the phases concatenated), each tap one contiguous slice of them, so
    /// each tap's product is a matrix product per image (the GEMM path). Computes the
    /// positions past each inner spatial axis's output length too, then crops them.
    Shifted,
    /// No padded input: each tap's strided slice of the input itself, only the window
    /// positions where that tap meets the input, padded with zeros to the output's length (a
    /// tap that meets no input is zeros). Taken, whatever was asked for, where the padded
    /// input would be larger than the input and every tap's operand together — a dilation
    /// or stride so large that padding is most of what the windows span.
    TapWise,
    /// A 1 × 1 filter (every spatial filter axis of length 1), no padding and every stride 1:
    /// one tap, the input itself (a view of it), contracted over the channels — a GEMM-shaped
    /// dot per image with no padded or flattened copy. Taken, whatever was asked for, for such
    /// a filter (ResNet's 1 × 1 convolutions: 33 of its 53; its three 1 × 1s at a stride of 2
    /// take the shifted form, which copies the one phase they read, so their GEMM covers every
    /// output position instead of one row).
    Pointwise,
}

impl ConvExpansion {
    /// The form `expand_convolution` takes for pairing `p` (lengths bound) when asked for this
    /// one: [`ConvExpansion::Pointwise`] for a 1 × 1 filter without padding or stride,
    /// [`ConvExpansion::TapWise`] where padding would dwarf the input and the taps'
    /// reads (spatial elements: `Π (len + padding) > Π len + Π (taps · windows)`), otherwise
    /// the form asked for. The one place the choice is made.
    pub fn for_pairing(self, g: &Graph, p: &ConvPairing) -> Result<ConvExpansion, GraphError> {
        let (mut padded, mut input, mut reads) = (1u128, 1u128, 1u128);
        for s in &p.spatial {
            let (len, taps) = (g.resolve_len(s.input)?, g.resolve_len(s.filter)?);
            let windows = crate::axis::window_len(len, taps, &s.step).map_err(|message| {
                GraphError::Range {
                    op: "convolution".into(),
                    axis: g.axis_name(s.input),
                    message,
                }
            })?;
            let wide = |n: usize| n as u128;
            let padded_len = wide(len) + wide(s.step.before) + wide(s.step.after);
            padded = padded.saturating_mul(padded_len);
            input = input.saturating_mul(wide(len));
            reads = reads.saturating_mul(wide(taps) * wide(windows));
        }
        let pointwise = p.spatial.iter().all(|s| {
            s.step.before == 0
                && s.step.after == 0
                && s.step.stride == 1
                && g.axis_len(s.filter) == Some(1)
        });
        Ok(if pointwise {
            ConvExpansion::Pointwise
        } else if padded > input.saturating_add(reads) {
            ConvExpansion::TapWise
        } else {
            self
        })
    }

    /// What the form computes, for `weft explain`.
    pub fn describe(self) -> &'static str {
        match self {
            ConvExpansion::TapWise => {
                "taps over the unpadded input (padding would dwarf what the windows read): each tap a dot over the strided slice of the input it meets, padded with zeros to the windows"
            }
            ConvExpansion::Shifted => {
                "shifted matrix products: the padded spatial axes (split into phases by a stride above 1) flattened, each tap one contiguous slice of them, so each tap is a GEMM-shaped dot per image"
            }
            ConvExpansion::Strided => {
                "strided slices (a stride above 1): each tap a dot over strided views of the padded input"
            }
            ConvExpansion::Pointwise => {
                "one tap of a 1 × 1 filter without padding or stride: a dot over a view of the input itself (a GEMM-shaped dot per image, no padded copy)"
            }
        }
    }
}

/// One spatial role of a convolution: the input axis that the filter axis slides over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpatialPair {
    /// The role both axes carry.
    pub role: Role,
    /// The input's axis.
    pub input: Axis,
    /// The filter's axis.
    pub filter: Axis,
    /// Stride, dilation and padding.
    pub step: WindowStep,
}

impl SpatialPair {
    /// The derived axis of the window positions over `input`.
    pub fn output_def(&self) -> AxisDef {
        AxisDef::Window {
            of: self.input,
            kernel: WindowKernel::Axis(self.filter),
            step: self.step,
        }
    }
}

/// How a convolution pairs its operands' axes, from their roles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConvPairing {
    /// The input's Channel axis.
    pub channel: Axis,
    /// The filter's Channel axis (a group's share of the input channels).
    pub filter_channel: Axis,
    /// The filter's Channelout axis.
    pub filter_out: Axis,
    /// The spatial pairs, in the input's axis order.
    pub spatial: Vec<SpatialPair>,
    /// Channel groups.
    pub groups: usize,
}

impl Graph {
    fn roles_of(&self, a: Axis) -> &[Role] {
        &self.axis_data(a.id).roles
    }

    /// The axes of `axes` carrying `role`.
    fn with_role(&self, axes: &Axes, role: &Role) -> Vec<Axis> {
        axes.iter()
            .filter(|a| self.roles_of(**a).contains(role))
            .copied()
            .collect()
    }

    /// The one axis of `axes` with `role`, or an error saying there is none or several.
    fn one_with_role(
        &self,
        label: &str,
        what: &str,
        axes: &Axes,
        role: &Role,
    ) -> Result<Axis, GraphError> {
        match self.with_role(axes, role).as_slice() {
            [a] => Ok(*a),
            [] => Err(self.axes_err(
                label.to_string(),
                format!(
                    "the {what} {} has no axis with the {role} role",
                    self.axes_name(axes)
                ),
            )),
            several => Err(self.axes_err(
                label.to_string(),
                format!(
                    "the {what} has several axes with the {role} role: {}",
                    self.axes_name(&Axes::new_unchecked(several))
                ),
            )),
        }
    }

    /// The spatial role of `a`, if any; an error if it has several.
    fn spatial_role(&self, label: &str, a: Axis) -> Result<Option<Role>, GraphError> {
        let roles: Vec<&Role> = self
            .roles_of(a)
            .iter()
            .filter(|r| SPATIAL_ROLES.contains(r))
            .collect();
        match roles.as_slice() {
            [] => Ok(None),
            [r] => Ok(Some((*r).clone())),
            [r, s, ..] => Err(self.axes_err(
                label.to_string(),
                format!(
                    "axis `{}` has two spatial roles, {r} and {s}",
                    self.axis_name(a)
                ),
            )),
        }
    }

    /// Pairs a convolution's input axes `x` with its filter axes `f` by role.
    pub fn conv_pairing(
        &self,
        label: &str,
        x: &Axes,
        f: &Axes,
        spec: &ConvSpec,
    ) -> Result<ConvPairing, GraphError> {
        let err = |g: &Graph, m: String| g.axes_err(label.to_string(), m);
        if spec.groups == 0 {
            return Err(GraphError::Argument {
                op: label.to_string(),
                message: "groups must be at least 1".into(),
            });
        }
        let channel = self.one_with_role(label, "input", x, &Role::Channel)?;
        let filter_channel = self.one_with_role(label, "filter", f, &Role::Channel)?;
        let filter_out = self.one_with_role(label, "filter", f, &Role::Channelout)?;
        if filter_channel == filter_out {
            return Err(err(
                self,
                format!(
                    "the filter's axis `{}` is both its Channel and its Channelout axis",
                    self.axis_name(filter_out)
                ),
            ));
        }
        let mut spatial = Vec::new();
        for a in x.iter() {
            let Some(role) = self.spatial_role(label, *a)? else {
                continue;
            };
            if *a == channel {
                return Err(err(
                    self,
                    format!(
                        "axis `{}` is both the input's Channel axis and spatial ({role})",
                        self.axis_name(*a)
                    ),
                ));
            }
            let [k] = self.with_role(f, &role)[..] else {
                return Err(err(
                    self,
                    format!(
                        "the input's axis `{}` ({role}) needs exactly one filter axis with the {role} role to slide; the filter {} has {}",
                        self.axis_name(*a),
                        self.axes_name(f),
                        self.with_role(f, &role).len()
                    ),
                ));
            };
            if k == *a {
                return Err(err(
                    self,
                    format!(
                        "axis `{}` is both the input's and the filter's {role} axis; the filter needs an axis of its own",
                        self.axis_name(k)
                    ),
                ));
            }
            spatial.push((role, *a, k));
        }
        if spatial.is_empty() {
            return Err(err(
                self,
                format!(
                    "the input {} has no axis with a spatial role (Depth, Height, Width, Time) for the filter to slide over",
                    self.axes_name(x)
                ),
            ));
        }
        for (role, _) in &spec.steps {
            if !spatial.iter().any(|(r, _, _)| r == role) {
                return Err(err(
                    self,
                    format!(
                        "the spec moves the filter over {role}, but the input {} has no {role} axis",
                        self.axes_name(x)
                    ),
                ));
            }
        }
        for k in f.iter() {
            let paired = *k == filter_channel
                || *k == filter_out
                || spatial.iter().any(|(_, _, fk)| fk == k);
            if !paired {
                return Err(err(
                    self,
                    format!(
                        "the filter's axis `{}` pairs with nothing: a filter has one Channel, one Channelout and one axis per spatial role of the input",
                        self.axis_name(*k)
                    ),
                ));
            }
            if x.contains(*k) && *k != channel {
                return Err(err(
                    self,
                    format!(
                        "axis `{}` is an axis of both the input and the filter",
                        self.axis_name(*k)
                    ),
                ));
            }
        }
        if x.contains(filter_out) {
            return Err(err(
                self,
                format!(
                    "the filter's Channelout axis `{}` is an axis of the input",
                    self.axis_name(filter_out)
                ),
            ));
        }
        let mut pairs = Vec::new();
        for (role, input, filter) in spatial {
            let step = spec.step(&role);
            self.check_window(label, input, WindowKernel::Axis(filter), &step)?;
            pairs.push(SpatialPair {
                role,
                input,
                filter,
                step,
            });
        }
        self.check_groups(label, channel, filter_channel, filter_out, spec.groups)?;
        self.check_terms(label, &pairs, filter_channel, filter_out, spec.groups)?;
        Ok(ConvPairing {
            channel,
            filter_channel,
            filter_out,
            spatial: pairs,
            groups: spec.groups,
        })
    }

    /// A filter's fans over `filter_axes`: the product of every length but the Channelout
    /// axes' (the input channels times the taps: what each output element meets), and the
    /// Channelout axes' product. Initialisers scale by them; `weft bench` counts flops by
    /// the first.
    pub fn filter_fans(&self, filter_axes: &[Axis]) -> Result<(usize, usize), GraphError> {
        let (mut fan_in, mut fan_out) = (1usize, 1usize);
        for a in filter_axes {
            let len = self.resolve_len(*a)?;
            if self.roles_of(*a).contains(&Role::Channelout) {
                fan_out = fan_out.saturating_mul(len);
            } else {
                fan_in = fan_in.saturating_mul(len);
            }
        }
        Ok((fan_in, fan_out))
    }

    /// With the lengths bound: the window fits its padded axis.
    fn check_window(
        &self,
        label: &str,
        of: Axis,
        kernel: WindowKernel,
        step: &WindowStep,
    ) -> Result<(), GraphError> {
        let taps = match kernel {
            WindowKernel::Len(n) => Some(n),
            WindowKernel::Axis(k) => self.axis_len(k),
        };
        let range = |message| GraphError::Range {
            op: label.to_string(),
            axis: self.axis_name(of),
            message,
        };
        // An unbound filter length is checked once bound; the stride and dilation now.
        crate::axis::zero_in_window(taps.unwrap_or(1), step).map_err(range)?;
        if let (Some(len), Some(taps)) = (self.axis_len(of), taps) {
            crate::axis::window_len(len, taps, step).map_err(range)?;
        }
        Ok(())
    }

    /// With the lengths bound: `groups` divides the output channels and the input channels are
    /// `groups` times the filter's.
    fn check_groups(
        &self,
        label: &str,
        channel: Axis,
        filter_channel: Axis,
        filter_out: Axis,
        groups: usize,
    ) -> Result<(), GraphError> {
        let (c, j, k) = (
            self.axis_len(channel),
            self.axis_len(filter_channel),
            self.axis_len(filter_out),
        );
        if let (Some(c), Some(j)) = (c, j) {
            if j.checked_mul(groups) != Some(c) {
                return Err(self.axes_err(
                    label.to_string(),
                    format!(
                        "the input's Channel axis `{}` has length {c}, but {groups} group(s) of the filter's Channel axis `{}` (length {j}) make {}",
                        self.axis_name(channel),
                        self.axis_name(filter_channel),
                        j.saturating_mul(groups)
                    ),
                ));
            }
        }
        if let Some(k) = k {
            if k % groups != 0 {
                return Err(self.axes_err(
                    label.to_string(),
                    format!(
                        "the filter's Channelout axis `{}` has length {k}, which {groups} groups do not divide",
                        self.axis_name(filter_out)
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The checks of [`Graph::convolution`] or [`Graph::pool`] node `id` redone with the
    /// lengths as bound now (a length bound after the node was made — `Graph::bind`, a call's
    /// binding — may pair channels or fit windows wrongly), and its padded input an
    /// addressable tensor. [`Graph::verify`] calls it; every backend runs verified graphs.
    pub(crate) fn verify_window_op(&self, id: NodeId) -> Result<(), GraphError> {
        let name = self.node_label(id);
        let (input, windows, label) = match &self.node(id).op {
            Op::Convolution {
                input,
                filter,
                spec,
            } => {
                let label = format!(
                    "{name} = {}",
                    self.op_label("convolution", &[*input, *filter])
                );
                let (xa, fa) = (&self.node(*input).axes, &self.node(*filter).axes);
                let p = self.conv_pairing(&label, xa, fa, spec)?;
                let w: Vec<(Axis, WindowStep)> =
                    p.spatial.iter().map(|s| (s.input, s.step)).collect();
                (*input, w, label)
            }
            Op::Pool { input, spec } => {
                let label = format!("{name} = {}", self.op_label(spec.kind.name(), &[*input]));
                let pooled = self.pool_axes(&label, &self.node(*input).axes, spec)?;
                let w = pooled.iter().map(|p| (p.input, p.step)).collect();
                (*input, w, label)
            }
            _ => return Ok(()),
        };
        self.padded_input_fits(&label, input, &windows)
    }

    /// The input `x` padded as `windows` say is a tensor weft can address (its loops and
    /// the expansions' slices index it), or [`GraphError::TooLarge`] naming it.
    fn padded_input_fits(
        &self,
        label: &str,
        x: NodeId,
        windows: &[(Axis, WindowStep)],
    ) -> Result<(), GraphError> {
        let node = self.node(x);
        let mut lengths = Vec::new();
        let mut overflow = false;
        for a in node.axes.iter() {
            let len = self.resolve_len(*a)?;
            lengths.push(match windows.iter().find(|(w, _)| w == a) {
                Some((_, s)) => len
                    .checked_add(s.before)
                    .and_then(|n| n.checked_add(s.after))
                    .unwrap_or_else(|| {
                        overflow = true;
                        usize::MAX
                    }),
                None => len,
            });
        }
        if !overflow && crate::size::tensor_size(node.dtype, &lengths).is_some() {
            return Ok(());
        }
        Err(GraphError::TooLarge {
            tensor: format!("the padded input of {label}"),
            axes: self.axes_name(&node.axes),
            lengths,
            dtype: node.dtype,
        })
    }

    /// With the lengths bound: the expansion's terms — one per filter tap, per group unless
    /// the convolution is depthwise — are at most [`MAX_CONV_TERMS`].
    fn check_terms(
        &self,
        label: &str,
        pairs: &[SpatialPair],
        filter_channel: Axis,
        filter_out: Axis,
        groups: usize,
    ) -> Result<(), GraphError> {
        let lens: Option<Vec<usize>> = pairs.iter().map(|s| self.axis_len(s.filter)).collect();
        let (Some(lens), Some(j), Some(k)) = (
            lens,
            self.axis_len(filter_channel),
            self.axis_len(filter_out),
        ) else {
            return Ok(());
        };
        let depthwise = j == 1 && k == groups;
        let per_group = if depthwise { 1 } else { groups };
        let terms = lens
            .iter()
            .try_fold(per_group, |n, l| n.checked_mul(*l))
            .filter(|n| *n <= MAX_CONV_TERMS);
        if terms.is_some() {
            return Ok(());
        }
        let filter: Vec<Axis> = pairs.iter().map(|s| s.filter).collect();
        Err(self.axes_err(
            label.to_string(),
            format!(
                "the filter's taps over {} ({}){} make more than {MAX_CONV_TERMS} terms: the expansion computes one product per tap{}",
                self.axes_name(&Axes::new_unchecked(&filter)),
                lens.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(" × "),
                if depthwise { String::new() } else { format!(" in {groups} group(s)") },
                if depthwise { "" } else { " and group" }
            ),
        ))
    }

    /// The pooled axes of an input `x` under `spec`.
    pub fn pool_axes(
        &self,
        label: &str,
        x: &Axes,
        spec: &PoolSpec,
    ) -> Result<Vec<PooledAxis>, GraphError> {
        if spec.windows.is_empty() {
            return Err(GraphError::Argument {
                op: label.to_string(),
                message: "a pool needs at least one window (a role and its length)".into(),
            });
        }
        let mut out: Vec<PooledAxis> = Vec::new();
        for (role, taps, step) in &spec.windows {
            let input = self.one_with_role(label, "input", x, role)?;
            if out.iter().any(|p| p.input == input) {
                return Err(self.axes_err(
                    label.to_string(),
                    format!(
                        "axis `{}` is pooled twice (it has two of the listed roles)",
                        self.axis_name(input)
                    ),
                ));
            }
            if step.before >= *taps || step.after >= *taps {
                return Err(GraphError::Range {
                    op: label.to_string(),
                    axis: self.axis_name(input),
                    message: format!(
                        "padding ({}, {}) must be shorter than the window {taps}: a window of padding alone has no tap",
                        step.before, step.after
                    ),
                });
            }
            self.check_window(label, input, WindowKernel::Len(*taps), step)?;
            out.push(PooledAxis {
                input,
                taps: *taps,
                step: *step,
            });
        }
        Ok(out)
    }

    fn float_operands(&self, label: &str, ids: &[NodeId]) -> Result<DType, GraphError> {
        let dtype = self.check_node(ids[0])?.dtype;
        for id in ids {
            let d = self.check_node(*id)?.dtype;
            if d != dtype {
                return Err(GraphError::DTypeMismatch {
                    op: label.to_string(),
                    left: dtype,
                    right: d,
                });
            }
        }
        if !dtype.is_float() {
            return Err(GraphError::UnsupportedDType {
                op: label.to_string(),
                dtype,
                expected: "f32 or f64",
            });
        }
        Ok(dtype)
    }

    /// A convolution of `x` with `filter`, axes paired by role (module docs).
    pub fn convolution(
        &mut self,
        x: NodeId,
        filter: NodeId,
        spec: &ConvSpec,
    ) -> Result<NodeId, GraphError> {
        let label = self.op_label("convolution", &[x, filter]);
        let dtype = self.float_operands(&label, &[x, filter])?;
        let (xa, fa) = (self.node(x).axes.clone(), self.node(filter).axes.clone());
        let p = self.conv_pairing(&label, &xa, &fa, spec)?;
        let out = self.conv_output_axes(&xa, &p);
        let axes = self.make_axes(&label, &out)?;
        Ok(self.push_op(
            Op::Convolution {
                input: x,
                filter,
                spec: spec.canonical(),
            },
            axes,
            dtype,
        ))
    }

    /// A pool of `x` (module docs).
    pub fn pool(&mut self, x: NodeId, spec: &PoolSpec) -> Result<NodeId, GraphError> {
        let label = self.op_label(spec.kind.name(), &[x]);
        let dtype = self.float_operands(&label, &[x])?;
        let xa = self.node(x).axes.clone();
        let pooled = self.pool_axes(&label, &xa, spec)?;
        let out = self.pool_output_axes(&xa, &pooled);
        let axes = self.make_axes(&label, &out)?;
        Ok(self.push_op(
            Op::Pool {
                input: x,
                spec: spec.clone(),
            },
            axes,
            dtype,
        ))
    }

    /// The convolution `x ⊛ filter` built from pads, slices, dots and adds: for each filter tap,
    /// the input positions it meets, contracted with that tap of the filter over the channels,
    /// the taps summed in row-major order of the filter's spatial axes ([`ConvExpansion`]
    /// says how the positions are taken). The result has the axes [`Graph::convolution`] gives,
    /// in its order. Needs every length bound.
    pub fn expand_convolution(
        &mut self,
        x: NodeId,
        filter: NodeId,
        spec: &ConvSpec,
        how: ConvExpansion,
    ) -> Result<NodeId, GraphError> {
        let label = self.op_label("convolution", &[x, filter]);
        let dtype = self.float_operands(&label, &[x, filter])?;
        let (xa, fa) = (self.node(x).axes.clone(), self.node(filter).axes.clone());
        let p = self.conv_pairing(&label, &xa, &fa, spec)?;
        let want = self.conv_output_axes(&xa, &p);
        if let Some(empty) = self.empty_result(&want, dtype)? {
            return Ok(empty);
        }
        let mut roots: Vec<Axis> = fa.iter().copied().collect();
        roots.push(p.channel);
        roots.extend(p.spatial.iter().map(|s| s.input));
        let (x, shielded) = self.shield(x, &roots)?;
        let features = self.derived_axis(AxisDef::Features(p.filter_out));
        let j = self.resolve_len(p.filter_channel)?;
        let kg = self.resolve_len(p.filter_out)? / p.groups;
        let form = how.for_pairing(self, &p)?;
        if p.groups > 1 && j == 1 && kg == 1 {
            let out = self.depthwise_taps(x, filter, &p, form)?;
            let out = self.relabel(out, p.filter_out, features)?;
            let out = self.unshield(out, &shielded)?;
            return self.axes_with_order(out, &want);
        }
        let mut parts = Vec::new();
        for grp in 0..p.groups {
            // This group's input channels, relabelled as the filter's channel axis.
            let (xg, fg, out_axis) = if p.groups == 1 {
                let xg = self.relabel(x, p.channel, p.filter_channel)?;
                (xg, filter, p.filter_out)
            } else {
                let cs = SliceRange::range(as_i64(grp * j)?, as_i64((grp + 1) * j)?);
                let ks = SliceRange::range(as_i64(grp * kg)?, as_i64((grp + 1) * kg)?);
                let xg = self.slice(x, &[(p.channel, AxisSlice::Range(cs))])?;
                let fg = self.slice(filter, &[(p.filter_out, AxisSlice::Range(ks))])?;
                let c_axis = self.derived_axis(AxisDef::Slice {
                    of: p.channel,
                    range: cs,
                });
                let xg = self.relabel(xg, c_axis, p.filter_channel)?;
                let k_axis = self.derived_axis(AxisDef::Slice {
                    of: p.filter_out,
                    range: ks,
                });
                (xg, fg, k_axis)
            };
            let part = match form {
                ConvExpansion::Shifted => self.shifted_taps(xg, fg, &p)?,
                _ => self.strided_tap_terms(xg, fg, &p, form, |g, xt, ft| g.dot(xt, ft))?,
            };
            parts.push((part, out_axis));
        }
        let joined = if parts.len() == 1 {
            self.relabel(parts[0].0, p.filter_out, features)?
        } else {
            let cat = self.concat(&parts)?;
            let cat_axis =
                self.derived_axis(AxisDef::Concat(parts.iter().map(|(_, a)| *a).collect()));
            self.relabel(cat, cat_axis, features)?
        };
        let joined = self.unshield(joined, &shielded)?;
        self.axes_with_order(joined, &want)
    }

    /// For a result over `axes` of which one is bound empty, the empty tensor (a zero
    /// broadcast): nothing to compute, so no tap operand is built — one over the other window
    /// axes could be huge (windows of padding around an empty input, or no output channel).
    fn empty_result(&mut self, axes: &[Axis], dtype: DType) -> Result<Option<NodeId>, GraphError> {
        if !axes.iter().any(|a| self.axis_len(*a) == Some(0)) {
            return Ok(None);
        }
        let zero = self.scalar(Scalar::Float(0.0), dtype)?;
        self.broadcast(zero, axes).map(Some)
    }

    /// `x` with each of its axes that is derived, at any depth, from one of `roots` (and is
    /// not one of them) relabelled to a fresh base axis of its length, and the pairs
    /// `(fresh, original)` that [`Graph::unshield`] relabels back.
    ///
    /// Why: an expansion derives new axes from `roots` (the padded spatial axes, their
    /// windows, slices of the channels), and derived axes are interned by definition, so an
    /// axis `x` already has — a padding of the same spatial axis by the same amounts, say,
    /// broadcast in from another branch — would come back as the same axis, twice in one
    /// tensor. The fresh axes cannot collide with anything; the operator's own result axes
    /// were checked distinct when it was built, so relabelling back is safe.
    fn shield(
        &mut self,
        x: NodeId,
        roots: &[Axis],
    ) -> Result<(NodeId, Vec<(Axis, Axis)>), GraphError> {
        let axes: Vec<Axis> = self.node(x).axes.iter().copied().collect();
        let mut t = x;
        let mut shielded = Vec::new();
        for a in axes {
            if roots.contains(&a) || !self.derives_from(a, roots) {
                continue;
            }
            let len = self.resolve_len(a)?;
            let name = format!("{}|shielded", self.axis_data(a.id).name);
            let fresh = self.declare_axis(&name, Some(len), Vec::new());
            t = self.relabel(t, a, fresh)?;
            shielded.push((fresh, a));
        }
        Ok((t, shielded))
    }

    /// `t` with the axes [`Graph::shield`] replaced put back.
    fn unshield(&mut self, t: NodeId, shielded: &[(Axis, Axis)]) -> Result<NodeId, GraphError> {
        shielded
            .iter()
            .try_fold(t, |t, &(fresh, original)| self.relabel(t, fresh, original))
    }

    /// Whether `a`'s definition refers, at any depth, to one of `roots` (by an explicit walk:
    /// derivation chains may be as long as a graph).
    fn derives_from(&self, a: Axis, roots: &[Axis]) -> bool {
        let mut stack = vec![a];
        let mut seen = std::collections::HashSet::new();
        while let Some(b) = stack.pop() {
            if !seen.insert(b) {
                continue;
            }
            let refs: Vec<Axis> = match &self.axis_data(b.id).def {
                AxisDef::Base { .. } => Vec::new(),
                AxisDef::Slice { of, .. } | AxisDef::Pad { of, .. } | AxisDef::Features(of) => {
                    vec![*of]
                }
                AxisDef::Flatten(v) | AxisDef::Concat(v) => v.clone(),
                AxisDef::Window { of, kernel, .. } => match kernel {
                    WindowKernel::Axis(k) => vec![*of, *k],
                    WindowKernel::Len(_) => vec![*of],
                },
            };
            if refs.iter().any(|r| roots.contains(r)) {
                return true;
            }
            stack.extend(refs);
        }
        false
    }

    /// The taps of `filter` (or a group's share) pinned one at a time, with `Σ term(tap)`.
    fn sum_over_taps(
        &mut self,
        filter: NodeId,
        p: &ConvPairing,
        mut term: impl FnMut(&mut Graph, &[usize], NodeId) -> Result<NodeId, GraphError>,
    ) -> Result<NodeId, GraphError> {
        let taps: Vec<usize> = p
            .spatial
            .iter()
            .map(|s| self.resolve_len(s.filter))
            .collect::<Result<_, _>>()?;
        let mut acc: Option<NodeId> = None;
        for tap in row_major(&taps) {
            let pins: Vec<(Axis, AxisSlice)> = p
                .spatial
                .iter()
                .zip(&tap)
                .map(|(s, t)| Ok((s.filter, AxisSlice::Index(as_i64(*t)?))))
                .collect::<Result<_, GraphError>>()?;
            let ft = self.slice(filter, &pins)?;
            let t = term(self, &tap, ft)?;
            acc = Some(match acc {
                None => t,
                Some(a) => self.binary(BinaryOp::Add, a, t)?,
            });
        }
        acc.ok_or_else(|| GraphError::Argument {
            op: "convolution".into(),
            message: "the filter has no taps".into(),
        })
    }

    /// A depthwise convolution (every group one input and one output channel): per tap, the
    /// tap's strided slice of the padded input times that tap of the filter, channel by
    /// channel (the input's Channel axis relabelled as the filter's Channelout, the filter's
    /// one-long Channel axis pinned) — a product per tap, never a loop over the groups.
    fn depthwise_taps(
        &mut self,
        x: NodeId,
        filter: NodeId,
        p: &ConvPairing,
        form: ConvExpansion,
    ) -> Result<NodeId, GraphError> {
        let x = self.relabel(x, p.channel, p.filter_out)?;
        let filter = self.slice(filter, &[(p.filter_channel, AxisSlice::Index(0))])?;
        self.strided_tap_terms(x, filter, p, form, |g, xt, ft| {
            g.binary(BinaryOp::Multiply, xt, ft)
        })
    }

    /// Σ over the filter's taps of `term(tap's windows of x, tap of filter)`: strided slices
    /// of the padded x ([`ConvExpansion::Strided`]), or for [`ConvExpansion::TapWise`] of x
    /// itself, padded to the windows ([`Graph::tap_over_input`]).
    fn strided_tap_terms(
        &mut self,
        x: NodeId,
        filter: NodeId,
        p: &ConvPairing,
        form: ConvExpansion,
        term: impl Fn(&mut Graph, NodeId, NodeId) -> Result<NodeId, GraphError>,
    ) -> Result<NodeId, GraphError> {
        let windows: Vec<(Axis, WindowStep, Axis)> = p
            .spatial
            .iter()
            .map(|s| (s.input, s.step, self.derived_axis(s.output_def())))
            .collect();
        if form == ConvExpansion::TapWise {
            return self.sum_over_taps(filter, p, |g, tap, ft| {
                let xt = g.tap_over_input(x, &windows, tap)?;
                term(g, xt, ft)
            });
        }
        let xp = self.pad_windows(x, p.spatial.iter().map(|s| (s.input, s.step)))?;
        self.sum_over_taps(filter, p, |g, tap, ft| {
            let xt = g.tap_slice(xp, &windows, tap)?;
            term(g, xt, ft)
        })
    }

    /// Tap `tap` of every window over the unpadded `x` ([`ConvExpansion::TapWise`]): per
    /// windowed axis, the windows where the tap meets the input take a strided slice of it,
    /// the others a zero (a pad to the windows' length), relabelled as the output's window
    /// axis. The same values as the padded input's [`Graph::tap_slice`], with no padded input.
    fn tap_over_input(
        &mut self,
        x: NodeId,
        windows: &[(Axis, WindowStep, Axis)],
        tap: &[usize],
    ) -> Result<NodeId, GraphError> {
        let mut t = x;
        for ((of, step, out), k) in windows.iter().zip(tap) {
            let (len, n) = (self.resolve_len(*of)?, self.resolve_len(*out)?);
            // Window o's tap sits at o·stride + k·dilation of the padded axis, the input at
            // before..before + len.
            let reach = k * step.dilation;
            let input = (step.before, step.before + len);
            let (first, end) = windows_meeting(input, reach, n, step.stride);
            let range = if first < end {
                window_range(
                    first * step.stride + reach - step.before,
                    end - first,
                    step.stride,
                )?
            } else {
                SliceRange::range(0, 0)
            };
            t = self.slice(t, &[(*of, AxisSlice::Range(range))])?;
            let sliced = self.derived_axis(AxisDef::Slice { of: *of, range });
            let (before, after) = (first, n - end);
            t = self.pad_with(t, &[(sliced, before, after)], Scalar::Float(0.0))?;
            let padded = self.padded_axis(
                sliced,
                &WindowStep {
                    before,
                    after,
                    ..*step
                },
            );
            t = self.relabel(t, padded, *out)?;
        }
        Ok(t)
    }

    /// [`ConvExpansion::Shifted`]: the padded input's spatial axes flattened into one, each
    /// tap a contiguous slice of it shifted by the tap's offset, so each tap's product is a
    /// plain matrix product per image (a batched GEMM). The positions past each inner spatial
    /// axis's output length are computed and cropped; one extra padded row on the outermost
    /// spatial axis keeps the last tap's slice inside the image. With a stride `s` above 1
    /// the padded axis is split into its `s` phases (positions `r, r + s, …`): tap `k` reads
    /// phase `k·d mod s` shifted by `k·d div s`, so each phase is an image of stride 1; the
    /// phases the taps read are flattened and concatenated into one axis (one stored copy, the
    /// size of the padded input), each tap a contiguous slice of it — the same products as
    /// the strided taps, as GEMM calls over every output position instead of one row.
    fn shifted_taps(
        &mut self,
        x: NodeId,
        filter: NodeId,
        p: &ConvPairing,
    ) -> Result<NodeId, GraphError> {
        let m = p.spatial.len();
        let (mut padded, mut outs, mut phase_lens) = (Vec::new(), Vec::new(), Vec::new());
        for (i, s) in p.spatial.iter().enumerate() {
            let out_axis = self.derived_axis(s.output_def());
            let (len, out) = (self.resolve_len(s.input)?, self.resolve_len(out_axis)?);
            let taps = self.resolve_len(s.filter)?;
            let reach = (taps.saturating_sub(1) * s.step.dilation) / s.step.stride;
            let extra_row = usize::from(i == 0 && m > 1);
            let padded_len = len + s.step.before + s.step.after;
            let lq = padded_len
                .div_ceil(s.step.stride)
                .max(out + reach + extra_row);
            let mut step = s.step;
            step.after = lq * s.step.stride - len - step.before;
            padded.push((s.input, step));
            outs.push(out_axis);
            phase_lens.push(lq);
        }
        let xp = self.pad_windows(x, padded.iter().copied())?;
        let pad_axes: Vec<Axis> = padded
            .iter()
            .map(|(a, step)| self.padded_axis(*a, step))
            .collect();
        let (flat, flat_axis, phase_axes) = self.phase_images(xp, p, &pad_axes, &phase_lens)?;
        // Row-major multipliers of the phase axes, and the span of output rows computed.
        let mut mult = vec![1usize; m];
        for i in (0..m.saturating_sub(1)).rev() {
            mult[i] = mult[i + 1] * phase_lens[i + 1];
        }
        let image: usize = phase_lens.iter().product();
        // Phases kept per axis: the stride, or 1 where every tap reads one phase.
        let phases: Vec<usize> = p
            .spatial
            .iter()
            .map(|s| {
                Ok(if self.only_phase(s)?.is_some() {
                    1
                } else {
                    s.step.stride
                })
            })
            .collect::<Result<_, GraphError>>()?;
        let span = self.resolve_len(outs[0])? * mult[0];
        let whole = SliceRange::range(0, as_i64(span)?);
        let q = self.derived_axis(AxisDef::Slice {
            of: flat_axis,
            range: whole,
        });
        let acc = self.sum_over_taps(filter, p, |g, tap, ft| {
            // The tap's phase (row-major over the strides) and its shift within the phase.
            let (mut phase, mut off) = (0usize, 0usize);
            for (((t, s), mu), kept) in tap.iter().zip(&p.spatial).zip(&mult).zip(&phases) {
                let at = t * s.step.dilation;
                phase = phase * kept + at % kept;
                off += (at / s.step.stride) * mu;
            }
            let off = phase * image + off;
            let range = SliceRange::range(as_i64(off)?, as_i64(off + span)?);
            let xt = g.slice(flat, &[(flat_axis, AxisSlice::Range(range))])?;
            let at = g.derived_axis(AxisDef::Slice {
                of: flat_axis,
                range,
            });
            let xt = g.relabel(xt, at, q)?;
            g.dot(xt, ft)
        })?;
        if m == 1 {
            return self.relabel(acc, q, outs[0]);
        }
        // Back to the spatial axes: the outer one is already the output's; crop the others.
        let mut parts = vec![outs[0]];
        parts.extend(&phase_axes[1..]);
        let rows = self.derived_axis(AxisDef::Flatten(parts));
        let acc = self.relabel(acc, q, rows)?;
        let mut t = self.unflatten(acc, rows)?;
        for i in 1..m {
            let keep = SliceRange::range(0, as_i64(self.resolve_len(outs[i])?)?);
            t = self.slice(t, &[(phase_axes[i], AxisSlice::Range(keep))])?;
            let cropped = self.derived_axis(AxisDef::Slice {
                of: phase_axes[i],
                range: keep,
            });
            t = self.relabel(t, cropped, outs[i])?;
        }
        Ok(t)
    }

    /// The padded `xp` as [`Graph::shifted_taps`] reads it: its spatial axes flattened into
    /// one; with a stride above 1, each padded axis (`phase_lens · stride` long) split into
    /// its phase index within a stride (minor) and its position in the phase (major), then
    /// flattened phase indices first — every phase an image of stride 1, one after another,
    /// in one stored copy. Returns the tensor, its flat axis, the axes of one image (row-major
    /// in it), and for each phase index (row-major over the strides) where its image starts.
    #[allow(clippy::type_complexity)]
    fn phase_images(
        &mut self,
        xp: NodeId,
        p: &ConvPairing,
        pad_axes: &[Axis],
        phase_lens: &[usize],
    ) -> Result<(NodeId, Axis, Vec<Axis>), GraphError> {
        let flatten = |g: &mut Graph, t: NodeId, axes: &[Axis]| -> Result<_, GraphError> {
            if axes.len() == 1 {
                return Ok((t, axes[0]));
            }
            let f = g.flatten(t, axes)?;
            Ok((f, g.derived_axis(AxisDef::Flatten(axes.to_vec()))))
        };
        if p.spatial.iter().all(|s| s.step.stride == 1) {
            let (t, a) = flatten(self, xp, pad_axes)?;
            return Ok((t, a, pad_axes.to_vec()));
        }
        let mut t = xp;
        let (mut phase_axes, mut within) = (Vec::new(), Vec::new());
        for ((a, s), len) in pad_axes.iter().zip(&p.spatial).zip(phase_lens) {
            let name = self.axis_data(a.id).name.clone();
            let q = self.declare_axis(&format!("{name}|phase"), Some(*len), Vec::new());
            let r = self.declare_axis(&format!("{name}|within"), Some(s.step.stride), Vec::new());
            let split = self.derived_axis(AxisDef::Flatten(vec![q, r]));
            t = self.relabel(t, *a, split)?;
            t = self.unflatten(t, split)?;
            phase_axes.push(q);
            match self.only_phase(s)? {
                // Every tap reads one phase of this axis (a 1 × 1 filter at a stride): only it
                // is copied.
                Some(only) => t = self.slice(t, &[(r, AxisSlice::Index(as_i64(only)?))])?,
                None => within.push(r),
            }
        }
        let mut order = within;
        order.extend(&phase_axes);
        let (t, a) = flatten(self, t, &order)?;
        Ok((t, a, phase_axes))
    }

    /// The one phase every tap of spatial pair `s` reads (phase 0, where `k·dilation` is a
    /// multiple of the stride for every tap `k`), if there is one.
    pub(crate) fn only_phase(&self, s: &SpatialPair) -> Result<Option<usize>, GraphError> {
        let taps = self.resolve_len(s.filter)?;
        let one = (1..taps).all(|k| (k * s.step.dilation).is_multiple_of(s.step.stride));
        Ok(one.then_some(0))
    }

    /// The pool of `x` built from pads, strided slices and `maximum` or `add` (then a divide by
    /// the count of taps inside the input), its taps folded as [`PoolFold`] says: small
    /// windows one slice of the padded input per tap, large ones separably in `O(log taps)`
    /// nodes. For a max pool the padding is `−inf` (a `select` on a mask computed from the
    /// lengths, never a table), so it never wins. Needs every length bound.
    pub fn expand_pool(&mut self, x: NodeId, spec: &PoolSpec) -> Result<NodeId, GraphError> {
        let label = self.op_label(spec.kind.name(), &[x]);
        let dtype = self.float_operands(&label, &[x])?;
        let xa = self.node(x).axes.clone();
        let pooled = self.pool_axes(&label, &xa, spec)?;
        let want = self.pool_output_axes(&xa, &pooled);
        if let Some(empty) = self.empty_result(&want, dtype)? {
            return Ok(empty);
        }
        let roots: Vec<Axis> = pooled.iter().map(|p| p.input).collect();
        let (x, shielded) = self.shield(x, &roots)?;
        let op = match spec.kind {
            PoolKind::Max => BinaryOp::Maximum,
            PoolKind::Avg => BinaryOp::Add,
        };
        let acc = match PoolFold::of(&pooled) {
            PoolFold::Direct => {
                let xp = self.padded_for_pool(x, &pooled, spec.kind)?;
                self.fold_taps_directly(xp, &pooled, op)?
            }
            PoolFold::Separable => {
                let padding = match spec.kind {
                    PoolKind::Max => Scalar::Float(f64::NEG_INFINITY),
                    PoolKind::Avg => Scalar::Float(0.0),
                };
                let mut t = x;
                for p in pooled.iter().rev() {
                    let out = self.derived_axis(p.output_def());
                    t = self.fold_axis_doubling(t, p, out, op, padding)?;
                }
                t
            }
        };
        let pooled_result = if spec.kind == PoolKind::Max {
            acc
        } else {
            let count = self.tap_counts(&pooled, dtype)?;
            self.binary(BinaryOp::Divide, acc, count)?
        };
        self.unshield(pooled_result, &shielded)
    }

    /// `x` padded as the pooled axes' steps ask: with zeros, or for a max pool `−inf` (a
    /// `select` on a mask computed from the lengths, never a table), so padding never wins.
    fn padded_for_pool(
        &mut self,
        x: NodeId,
        pooled: &[PooledAxis],
        kind: PoolKind,
    ) -> Result<NodeId, GraphError> {
        let pads: Vec<(Axis, usize, usize)> = pooled
            .iter()
            .map(|p| (p.input, p.step.before, p.step.after))
            .collect();
        let value = match kind {
            PoolKind::Max => Scalar::Float(f64::NEG_INFINITY),
            PoolKind::Avg => Scalar::Float(0.0),
        };
        self.pad_with(x, &pads, value)
    }

    /// `xp` (padded) with every tap of the window folded by `op`, one by one in row-major
    /// order ([`PoolFold::Direct`]).
    fn fold_taps_directly(
        &mut self,
        xp: NodeId,
        pooled: &[PooledAxis],
        op: BinaryOp,
    ) -> Result<NodeId, GraphError> {
        let taps: Vec<usize> = pooled.iter().map(|p| p.taps).collect();
        let windows: Vec<(Axis, WindowStep, Axis)> = pooled
            .iter()
            .map(|p| (p.input, p.step, self.derived_axis(p.output_def())))
            .collect();
        let mut acc: Option<NodeId> = None;
        for tap in row_major(&taps) {
            let t = self.tap_slice(xp, &windows, &tap)?;
            acc = Some(match acc {
                None => t,
                Some(a) => self.binary(op, a, t)?,
            });
        }
        acc.ok_or_else(|| GraphError::Argument {
            op: "pool".into(),
            message: "the window has no taps".into(),
        })
    }

    /// `t` with axis `from` relabelled `to` (same length; a `cast_axes`, position by
    /// position), the other axes as they are; `t` itself when `from == to`.
    pub(crate) fn relabel(
        &mut self,
        t: NodeId,
        from: Axis,
        to: Axis,
    ) -> Result<NodeId, GraphError> {
        if from == to {
            return Ok(t);
        }
        let axes: Vec<Axis> = self
            .node(t)
            .axes
            .iter()
            .map(|a| if *a == from { to } else { *a })
            .collect();
        self.cast_axes(t, &axes)
    }

    /// `x` padded with zeros as each window's step asks (no pad node when none does).
    fn pad_windows(
        &mut self,
        x: NodeId,
        windows: impl Iterator<Item = (Axis, WindowStep)>,
    ) -> Result<NodeId, GraphError> {
        let pads: Vec<(Axis, usize, usize)> =
            windows.map(|(a, s)| (a, s.before, s.after)).collect();
        self.pad_with(x, &pads, Scalar::Float(0.0))
    }

    /// `x` padded along each `(axis, before, after)` of `pads`, the new positions holding
    /// `value`: a pad (zeros) and, for another value, a select on the padded inside mask (a
    /// padded broadcast `true`, computed where read: no table). No node when nothing is
    /// padded. The one way an expansion pads with a value.
    pub(crate) fn pad_with(
        &mut self,
        x: NodeId,
        pads: &[(Axis, usize, usize)],
        value: Scalar,
    ) -> Result<NodeId, GraphError> {
        let pads: Vec<(Axis, usize, usize)> =
            pads.iter().copied().filter(|p| p.1 + p.2 > 0).collect();
        if pads.is_empty() {
            return Ok(x);
        }
        let padded = self.pad(x, &pads)?;
        if matches!(value, Scalar::Float(v) if v.to_bits() == 0) {
            return Ok(padded);
        }
        let inside = self.scalar(Scalar::Bool(true), DType::Bool)?;
        let axes: Vec<Axis> = pads.iter().map(|p| p.0).collect();
        let inside = self.broadcast(inside, &axes)?;
        let mask = self.pad(inside, &pads)?;
        let fill = self.scalar(value, self.node(x).dtype)?;
        self.select(mask, padded, fill)
    }

    /// The padded axis of `of` under `step` (`of` itself without padding).
    pub(crate) fn padded_axis(&mut self, of: Axis, step: &WindowStep) -> Axis {
        if step.before + step.after == 0 {
            of
        } else {
            self.derived_axis(AxisDef::Pad {
                of,
                before: step.before,
                after: step.after,
            })
        }
    }

    /// The taps `tap` of every window of the padded `xp`: a strided slice per windowed axis,
    /// relabelled as the output's window axis.
    fn tap_slice(
        &mut self,
        xp: NodeId,
        windows: &[(Axis, WindowStep, Axis)],
        tap: &[usize],
    ) -> Result<NodeId, GraphError> {
        let mut slices = Vec::new();
        let mut relabels = Vec::new();
        for ((of, step, out), t) in windows.iter().zip(tap) {
            let axis = self.padded_axis(*of, step);
            let n = self.resolve_len(*out)?;
            let range = window_range(t * step.dilation, n, step.stride)?;
            slices.push((axis, AxisSlice::Range(range)));
            relabels.push((self.derived_axis(AxisDef::Slice { of: axis, range }), *out));
        }
        let mut t = self.slice(xp, &slices)?;
        for (from, to) in relabels {
            t = self.relabel(t, from, to)?;
        }
        Ok(t)
    }

    /// The number of taps of each window inside the input, over the output's window axes: per
    /// pooled axis, a padded `1` broadcast along that axis alone with its taps summed (as a
    /// separable pool does), the axes' counts multiplied — in f64, exact, then converted to
    /// `dtype` once, as the interpreter rounds its count. Nodes grow with the log of the taps,
    /// never with the lengths.
    fn tap_counts(&mut self, pooled: &[PooledAxis], dtype: DType) -> Result<NodeId, GraphError> {
        let one = self.scalar(Scalar::Float(1.0), DType::F64)?;
        let mut count: Option<NodeId> = None;
        for p in pooled {
            let ones = self.broadcast(one, &[p.input])?;
            let out = self.derived_axis(p.output_def());
            let taps = self.fold_axis_doubling(ones, p, out, BinaryOp::Add, Scalar::Float(0.0))?;
            count = Some(match count {
                None => taps,
                Some(c) => self.binary(BinaryOp::Multiply, c, taps)?,
            });
        }
        let count = count.ok_or_else(|| GraphError::Argument {
            op: "pool".into(),
            message: "a pool needs at least one window".into(),
        })?;
        if dtype == DType::F64 {
            Ok(count)
        } else {
            self.convert(count, dtype)
        }
    }
}

impl Graph {
    /// The output axes of a convolution of an input over `x`: position by position, the
    /// Channel axis replaced by the features axis and each spatial axis by its window axis.
    pub fn conv_output_axes(&mut self, x: &Axes, p: &ConvPairing) -> Vec<Axis> {
        x.iter()
            .map(|a| {
                if *a == p.channel {
                    self.derived_axis(AxisDef::Features(p.filter_out))
                } else {
                    match p.spatial.iter().find(|s| s.input == *a) {
                        Some(s) => self.derived_axis(s.output_def()),
                        None => *a,
                    }
                }
            })
            .collect()
    }

    /// The output axes of a pool of an input over `x`: each pooled axis replaced by its window
    /// axis, in place.
    pub fn pool_output_axes(&mut self, x: &Axes, pooled: &[PooledAxis]) -> Vec<Axis> {
        x.iter()
            .map(|a| match pooled.iter().find(|p| p.input == *a) {
                Some(p) => self.derived_axis(p.output_def()),
                None => *a,
            })
            .collect()
    }
}

/// Every index of a row-major array of `shape`, in order.
pub fn row_major(shape: &[usize]) -> impl Iterator<Item = Vec<usize>> + '_ {
    // A verified tensor's count fits `usize` (crate::size); a shape past it (never verified)
    // iterates nothing rather than overflow.
    let total = crate::size::element_count(shape).unwrap_or(0);
    (0..total).map(move |mut flat| {
        let mut idx = vec![0; shape.len()];
        for (i, n) in shape.iter().enumerate().rev() {
            idx[i] = flat % n;
            flat /= n;
        }
        idx
    })
}
