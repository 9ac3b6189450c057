//! Losses and the constants they need: an index constant along an axis ([`iota`]), one-hot
//! encoding of integer labels ([`one_hot`]), a numerically stable [`log_softmax`],
//! [`softmax_cross_entropy`], [`mean_squared_error`] and classification [`accuracy`].
//!
//! Assumes: logits and predictions are f32 or f64; labels are i32 or i64 class indices over the
//! logits' axes less the class axis, whose length is bound (the one-hot encoding needs a
//! constant `0, 1, .., n-1` along it). Guarantees: every loss is a scalar (no axes), the mean
//! over every axis other than the class axis; the log-softmax subtracts each row's maximum
//! before `exp`, so finite logits of any size never overflow (logits of 1000 give exact
//! losses); a class picked by `select`, not by multiplying with a one-hot, so a logit of −∞ in
//! another class cannot turn a loss into NaN (0 · −∞). A label outside `0..n` matches no
//! class: its row's loss is the log-sum-exp alone (no class picked), not an error — labels are
//! data, known only at call time.

use crate::{float_dtype, float_scalar, label, require_axis};
use weft_ir::axis::Axis;
use weft_ir::dtype::DType;
use weft_ir::graph::{Graph, GraphError, NodeId, TensorInit};
use weft_ir::host::ArrayData;

/// A constant over `[axis]` holding `0, 1, .., n-1` (n the axis's length, which must be
/// bound) in `dtype` (any numeric dtype; for i32 n must fit). Comparing integer labels with it
/// is a one-hot encoding ([`one_hot`]).
///
/// ```
/// use weft::ir::{ArrayData, DType, Graph, Op, TensorInit};
/// use weft::nn;
/// let mut g = Graph::new();
/// let c = g.axis("C", 4)?;
/// let k = nn::iota(&mut g, c, DType::I64)?;
/// assert_eq!(g.node(k).axes.as_slice(), &[c]);
/// let Op::Tensor { init: Some(TensorInit::Data(d)), .. } = &g.node(k).op else { panic!() };
/// assert_eq!(**d, ArrayData::I64(vec![0, 1, 2, 3]));
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn iota(g: &mut Graph, axis: Axis, dtype: DType) -> Result<NodeId, GraphError> {
    let n = g.resolve_len(axis)?;
    let op = || format!("iota({})", g.axis_name(axis));
    let data = match dtype {
        DType::I64 => ArrayData::I64((0..n as i64).collect()),
        DType::I32 => {
            let n = i32::try_from(n).map_err(|_| GraphError::Argument {
                op: op(),
                message: format!("length {n} has indices beyond i32; use i64"),
            })?;
            ArrayData::I32((0..n).collect())
        }
        DType::F32 => ArrayData::F32((0..n).map(|i| i as f32).collect()),
        DType::F64 => ArrayData::F64((0..n).map(|i| i as f64).collect()),
        DType::Bool => {
            return Err(GraphError::UnsupportedDType {
                op: op(),
                dtype,
                expected: "a numeric dtype",
            })
        }
    };
    g.constant(None, &[axis], dtype, TensorInit::data(data))
}

/// The labels' dtype (i32 or i64), and a check that their axes are `logits`' less the class
/// axis (when `logits` is given) or at least do not hold it.
fn check_labels(
    g: &Graph,
    op: &str,
    labels: NodeId,
    class_axis: Axis,
    logits: Option<NodeId>,
) -> Result<DType, GraphError> {
    let l = g.check_node(labels)?;
    if !l.dtype.is_int() {
        return Err(GraphError::UnsupportedDType {
            op: op.to_string(),
            dtype: l.dtype,
            expected: "i32 or i64 class indices for the labels",
        });
    }
    if l.axes.contains(class_axis) {
        return Err(GraphError::Axes {
            op: op.to_string(),
            message: format!(
                "the labels `{}` {} hold the class axis `{}`: labels are one index per row",
                g.node_label(labels),
                g.axes_name(&l.axes),
                g.axis_name(class_axis)
            ),
        });
    }
    if let Some(logits) = logits {
        // One axis has no duplicate: `Axes::new` cannot fail here.
        let class = weft_ir::axis::Axes::new([class_axis]).map_err(|e| GraphError::Axes {
            op: op.to_string(),
            message: e.to_string(),
        })?;
        let rows = g.check_node(logits)?.axes.difference(&class);
        if !rows.is_equal_set(&l.axes) {
            return Err(GraphError::Axes {
                op: op.to_string(),
                message: format!(
                    "the labels `{}` have axes {} but the logits' axes less the class axis `{}` are {}",
                    g.node_label(labels),
                    g.axes_name(&l.axes),
                    g.axis_name(class_axis),
                    g.axes_name(&rows)
                ),
            });
        }
    }
    Ok(l.dtype)
}

/// The one-hot encoding of integer `labels` (i32 or i64) along `class_axis`: a `bool` tensor over
/// the labels' axes then `class_axis`, true where the label equals the class index
/// (`equal(labels, iota(class_axis))`). A label outside `0..n` gives a row of false.
fn one_hot_mask(
    g: &mut Graph,
    op: &str,
    labels: NodeId,
    class_axis: Axis,
    logits: Option<NodeId>,
) -> Result<NodeId, GraphError> {
    let dtype = check_labels(g, op, labels, class_axis, logits)?;
    let classes = iota(g, class_axis, dtype)?;
    g.equal(labels, classes)
}

/// The one-hot encoding of integer `labels` (i32 or i64, any axes but `class_axis`) along
/// `class_axis` in `dtype`: 1 where the label is the class index, else 0, over the labels' axes
/// then `class_axis`. A label outside `0..n` gives a row of zeros.
///
/// ```
/// use weft::ir::{DType, Graph};
/// use weft::nn;
/// let mut g = Graph::new();
/// let (b, c) = (g.axis("B", 2)?, g.axis("C", 3)?);
/// let labels = g.placeholder("labels", &[b], DType::I32)?;
/// let oh = nn::one_hot(&mut g, labels, c, DType::F32)?;
/// assert_eq!(g.node(oh).axes.as_slice(), &[b, c]);
/// assert_eq!(g.node(oh).dtype, DType::F32);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn one_hot(
    g: &mut Graph,
    labels: NodeId,
    class_axis: Axis,
    dtype: DType,
) -> Result<NodeId, GraphError> {
    let op = label(g, "one_hot", &[labels]);
    let mask = one_hot_mask(g, &op, labels, class_axis, None)?;
    g.convert(mask, dtype)
}

/// `log(softmax(logits))` along `axis`, in `logits`' axes order: `z − log Σ exp(z)` with
/// `z = logits − max(logits, axis)`, so `exp` never sees a positive argument.
///
/// ```
/// use weft::ir::{DType, Graph};
/// use weft::nn;
/// let mut g = Graph::new();
/// let (b, c) = (g.axis("B", 2)?, g.axis("C", 3)?);
/// let logits = g.placeholder("logits", &[c, b], DType::F64)?;
/// let ls = nn::log_softmax(&mut g, logits, c)?;
/// assert_eq!(g.node(ls).axes.as_slice(), &[c, b]);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn log_softmax(g: &mut Graph, logits: NodeId, axis: Axis) -> Result<NodeId, GraphError> {
    let op = label(g, "log_softmax", &[logits]);
    float_dtype(g, &op, logits)?;
    require_axis(g, &op, logits, axis)?;
    let m = g.max(logits, &[axis])?;
    let z = g.subtract(logits, m)?;
    let e = g.exp(z)?;
    let s = g.sum(e, &[axis])?;
    let lse = g.log(s)?;
    g.subtract(z, lse)
}

/// The mean over the batch of `−log softmax(logits)[label]`: the cross-entropy of integer
/// `labels` (i32 or i64, over `logits`' axes less `class_axis`, any order) against the
/// softmax of `logits` (f32 or f64) along `class_axis`. A scalar of the logits' dtype.
/// Numerically stable ([`log_softmax`]); the label's class is picked with `select`, so −∞
/// logits elsewhere in a row do no harm.
///
/// ```
/// use weft::ir::{DType, Graph};
/// use weft::nn;
/// let mut g = Graph::new();
/// let (b, c) = (g.axis("B", 32)?, g.axis("C", 10)?);
/// let logits = g.placeholder("logits", &[b, c], DType::F32)?;
/// let labels = g.placeholder("labels", &[b], DType::I64)?;
/// let loss = nn::softmax_cross_entropy(&mut g, logits, labels, c)?;
/// assert!(g.node(loss).axes.is_empty());
/// // Labels must not hold the class axis, and must be integers.
/// let bad = g.placeholder("bad", &[b], DType::F32)?;
/// assert!(nn::softmax_cross_entropy(&mut g, logits, bad, c).is_err());
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn softmax_cross_entropy(
    g: &mut Graph,
    logits: NodeId,
    labels: NodeId,
    class_axis: Axis,
) -> Result<NodeId, GraphError> {
    let op = label(g, "softmax_cross_entropy", &[logits, labels]);
    let dtype = float_dtype(g, &op, logits)?;
    require_axis(g, &op, logits, class_axis)?;
    let mask = one_hot_mask(g, &op, labels, class_axis, Some(logits))?;
    let ls = log_softmax(g, logits, class_axis)?;
    let zero = float_scalar(g, 0.0, dtype)?;
    let picked = g.select(mask, ls, zero)?;
    let row = g.sum(picked, &[class_axis])?;
    let nll = g.negative(row)?;
    mean_over_all(g, nll)
}

/// The mean of `x` over all its axes (a scalar; `x` itself when it has none).
fn mean_over_all(g: &mut Graph, x: NodeId) -> Result<NodeId, GraphError> {
    let axes: Vec<Axis> = g.node(x).axes.iter().copied().collect();
    g.mean(x, &axes)
}

/// The mean over every element of `(pred − target)²`: a scalar. `pred` and `target` must have
/// the same axes (any order) and float dtype — unlike a plain `subtract`, which would broadcast
/// a missing axis and average the wrong thing.
///
/// ```
/// use weft::ir::{DType, Graph};
/// use weft::nn;
/// let mut g = Graph::new();
/// let (b, o) = (g.axis("B", 4)?, g.axis("O", 2)?);
/// let pred = g.placeholder("pred", &[b, o], DType::F32)?;
/// let target = g.placeholder("target", &[o, b], DType::F32)?;
/// let mse = nn::mean_squared_error(&mut g, pred, target)?;
/// assert!(g.node(mse).axes.is_empty());
/// let row = g.placeholder("row", &[o], DType::F32)?;
/// assert!(nn::mean_squared_error(&mut g, pred, row).is_err()); // would broadcast
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn mean_squared_error(
    g: &mut Graph,
    pred: NodeId,
    target: NodeId,
) -> Result<NodeId, GraphError> {
    let op = label(g, "mean_squared_error", &[pred, target]);
    let dtype = float_dtype(g, &op, pred)?;
    let (p, t) = (g.check_node(pred)?, g.check_node(target)?);
    if t.dtype != dtype {
        return Err(GraphError::DTypeMismatch {
            op,
            left: dtype,
            right: t.dtype,
        });
    }
    if !p.axes.is_equal_set(&t.axes) {
        return Err(GraphError::Axes {
            op,
            message: format!(
                "the prediction's axes {} and the target's {} differ",
                g.axes_name(&p.axes),
                g.axes_name(&t.axes)
            ),
        });
    }
    let d = g.subtract(pred, target)?;
    let sq = g.square(d)?;
    mean_over_all(g, sq)
}

/// The fraction of rows whose largest logit (the first, on ties) is at the label's class: a
/// scalar of the logits' dtype. Same arguments as [`softmax_cross_entropy`].
///
/// ```
/// use weft::ir::{DType, Graph};
/// use weft::nn;
/// let mut g = Graph::new();
/// let (b, c) = (g.axis("B", 8)?, g.axis("C", 10)?);
/// let logits = g.placeholder("logits", &[b, c], DType::F32)?;
/// let labels = g.placeholder("labels", &[b], DType::I32)?;
/// let acc = nn::accuracy(&mut g, logits, labels, c)?;
/// assert_eq!(g.node(acc).dtype, DType::F32);
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
pub fn accuracy(
    g: &mut Graph,
    logits: NodeId,
    labels: NodeId,
    class_axis: Axis,
) -> Result<NodeId, GraphError> {
    let op = label(g, "accuracy", &[logits, labels]);
    let dtype = float_dtype(g, &op, logits)?;
    require_axis(g, &op, logits, class_axis)?;
    check_labels(g, &op, labels, class_axis, Some(logits))?;
    let predicted = g.argmax(logits, &[class_axis])?;
    let wide = g.convert(labels, DType::I64)?;
    let hit = g.equal(predicted, wide)?;
    let hit = g.convert(hit, dtype)?;
    mean_over_all(g, hit)
}
