//! Errors raised while building or verifying a graph. Each names the op and the axes at fault,
//! with axes rendered by name.

use crate::dtype::DType;

/// An error building, binding or verifying a [`Graph`](super::Graph).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    /// An axis occurs twice in one tensor's axes (docs/design.md, "Axes").
    #[error("{op}: axis `{axis}` occurs more than once in {axes}")]
    DuplicateAxis {
        /// The op or declaration at fault.
        op: String,
        /// The repeated axis.
        axis: String,
        /// The offending axes.
        axes: String,
    },
    /// Operands of different dtypes.
    #[error("{op}: operands have dtypes {left} and {right}; weft never converts implicitly (use convert)")]
    DTypeMismatch {
        /// The op at fault.
        op: String,
        /// The left operand's dtype.
        left: DType,
        /// The right operand's dtype.
        right: DType,
    },
    /// An op applied to a dtype it does not accept.
    #[error("{op}: dtype {dtype} is not accepted (expected {expected})")]
    UnsupportedDType {
        /// The op at fault.
        op: String,
        /// The dtype given.
        dtype: DType,
        /// What the op accepts.
        expected: &'static str,
    },
    /// Two axes sets that must relate in a given way do not.
    #[error("{op}: {message}")]
    Axes {
        /// The op at fault.
        op: String,
        /// What is wrong, naming the axes.
        message: String,
    },
    /// Two axes whose lengths must agree do not.
    #[error("{op}: axis `{left}` has length {left_len} but `{right}` has length {right_len}")]
    LengthMismatch {
        /// The op at fault.
        op: String,
        /// One axis.
        left: String,
        /// Its length.
        left_len: usize,
        /// The other axis.
        right: String,
        /// Its length.
        right_len: usize,
    },
    /// An axis whose length is needed is not bound.
    #[error("axis `{axis}` has no length: bind it before compiling (`Graph::bind`; on the command line, `--bind {axis}=LEN`)")]
    UnboundAxis {
        /// The unbound axis.
        axis: String,
    },
    /// A max, min, argmax or argmin over an axis of length 0: it has no value (sum, prod and
    /// mean of nothing do: 0, 1 and NaN).
    #[error("{op}: reduction axis `{axis}` has length 0, and {kind} of nothing has no value")]
    EmptyReduction {
        /// The op.
        op: String,
        /// The empty axis.
        axis: String,
        /// The reduction (`max`, `argmin`, …).
        kind: &'static str,
    },
    /// An axis that must be a declared axis is derived, or the reverse.
    #[error("axis `{axis}`: {message}")]
    AxisDefinition {
        /// The axis.
        axis: String,
        /// What is wrong.
        message: String,
    },
    /// A slice, pad or index out of range.
    #[error("{op}: axis `{axis}`: {message}")]
    Range {
        /// The op at fault.
        op: String,
        /// The axis sliced or padded.
        axis: String,
        /// What is wrong.
        message: String,
    },
    /// A tensor's initial value does not fit its declaration.
    #[error("tensor `{tensor}`: {message}")]
    Init {
        /// The tensor.
        tensor: String,
        /// What is wrong.
        message: String,
    },
    /// Two tensors with one name.
    #[error("the name `{0}` is already taken by another tensor")]
    NameTaken(String),
    /// Two axes declared with one name through the API: names are how errors, the text form
    /// and calls by name tell axes apart.
    #[error("an axis named `{0}` is already declared in this graph; give each axis its own name")]
    AxisNameTaken(String),
    /// A node or axis that does not belong to this graph.
    #[error("{0} does not belong to this graph")]
    Foreign(String),
    /// [`Graph::with_placeholder_for`](super::Graph::with_placeholder_for) of a node that
    /// computes nothing (a stored tensor) or assigns state.
    #[error(
        "`{node}` is a {op}, not a computed value: only a computed node can become a placeholder"
    )]
    NotComputed {
        /// The node.
        node: String,
        /// Its op.
        op: String,
    },
    /// `assign` to something that is not a variable or persistent tensor.
    #[error("assign: `{target}` is a {kind}, not a variable or persistent tensor")]
    AssignTarget {
        /// The target.
        target: String,
        /// What it is.
        kind: String,
    },
    /// A tensor with more elements than `usize` counts, or more bytes than
    /// [`MAX_TENSOR_BYTES`](crate::size::MAX_TENSOR_BYTES): no backend can address it.
    #[error("tensor `{tensor}` over axes {axes} (lengths {lengths:?}) of {dtype} is larger than {} bytes, the most weft can address", crate::size::MAX_TENSOR_BYTES)]
    TooLarge {
        /// The tensor.
        tensor: String,
        /// Its axes.
        axes: String,
        /// Their lengths.
        lengths: Vec<usize>,
        /// Its dtype.
        dtype: DType,
    },
    /// A [`GraphBuilder`](super::GraphBuilder) asked to build while a guard from its
    /// `graph()` is alive.
    #[error(
        "the graph is being read: a guard from `GraphBuilder::graph()` is still alive; drop it \
         (or read in its own statement) before building"
    )]
    GraphBorrowed,
    /// A tensor with more axes than [`MAX_RANK`](crate::size::MAX_RANK).
    #[error("{tensor}: {rank} axes, more than the {max} a tensor may have")]
    TooManyAxes {
        /// The tensor.
        tensor: String,
        /// Its axis count.
        rank: usize,
        /// The limit.
        max: usize,
    },
    /// An argument of a graph-building helper (`weft_nn`: a loss's labels, an optimizer's
    /// parameter list or hyper-parameters) that does not fit, for a reason other than axes or
    /// dtypes.
    #[error("{op}: {message}")]
    Argument {
        /// The helper at fault, with the tensor or parameter named.
        op: String,
        /// What is wrong.
        message: String,
    },
    /// An axis whose derived length (pad, flatten, concat) overflows `usize`.
    #[error(
        "axis `{axis}`: its length overflows (more than {} elements)",
        usize::MAX
    )]
    AxisTooLong {
        /// The derived axis.
        axis: String,
    },
    /// [`Graph::grad`](super::Graph::grad) of a loss that is not a float scalar.
    #[error("grad: the loss `{loss}` must be a float scalar (no axes, f32 or f64); it has axes {axes} and dtype {dtype}")]
    GradLoss {
        /// The loss.
        loss: String,
        /// Its axes.
        axes: String,
        /// Its dtype.
        dtype: DType,
    },
    /// [`Graph::grad`](super::Graph::grad) through a node with no derivative on a path from a
    /// `wrt` node to the loss (docs/autodiff.md, "Not differentiable").
    #[error("grad: `{node}` ({op}) lies on a path from `{wrt}` to the loss and is not differentiable: {reason}")]
    NotDifferentiable {
        /// The node's op.
        op: &'static str,
        /// The node.
        node: String,
        /// The `wrt` node it depends on.
        wrt: String,
        /// Why it has no derivative.
        reason: &'static str,
    },
}
