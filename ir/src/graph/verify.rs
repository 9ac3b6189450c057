//! Whole-graph verification once lengths are bound: every axis has a length, derived axes
//! resolve, paired axes agree in length, initial values fit their tensors, every tensor (and
//! every dot's iteration space and every convolution's or pool's padded input) is small enough
//! to address (`crate::size`), and every convolution and pool pairs, groups and fits its
//! windows with the lengths as bound — the one validation every backend relies on, so a graph
//! is accepted or refused alike everywhere.

use super::{Graph, GraphError, NodeId, Op, TensorInit};
use crate::axis::Axis;

impl Graph {
    /// Checks everything that needs axis lengths. Compilation calls this; a graph that passes
    /// can be evaluated without further shape errors.
    pub fn verify(&self) -> Result<(), GraphError> {
        self.verify_part(|_| true)
    }

    /// [`Graph::verify`] of the nodes `part` keeps: what a computation evaluates, so that an
    /// axis or a tensor only other computations reach (an axis their inputs bind at call
    /// time) does not stop it.
    pub fn verify_part(&self, part: impl Fn(NodeId) -> bool) -> Result<(), GraphError> {
        for (id, node) in self.nodes().filter(|(id, _)| part(*id)) {
            let size = self.tensor_size(id)?;
            let label = self.node_label(id);
            match &node.op {
                Op::Tensor {
                    init: Some(TensorInit::Data(d)),
                    ..
                } if size.elements != d.len() => {
                    return Err(GraphError::Init {
                        tensor: label,
                        message: format!(
                            "{} values given for axes {} of {} elements",
                            d.len(),
                            self.axes_name(&node.axes),
                            size.elements
                        ),
                    });
                }
                Op::CastAxes(x) => {
                    let from = &self.node(*x).axes;
                    for (a, b) in from.iter().zip(node.axes.iter()) {
                        self.same_len(&format!("cast_axes {label}"), *a, *b)?;
                    }
                }
                Op::Convolution { .. } | Op::Pool { .. } => self.verify_window_op(id)?,
                Op::Reduce { op, axes, .. } => {
                    self.check_reduction_not_empty(&label, *op, axes)?;
                }
                Op::Dot(x, y) => {
                    let pairs = self.dot_pairs(&label, &self.node(*x).axes, &self.node(*y).axes)?;
                    for (a, b) in &pairs {
                        self.same_len(&format!("dot {label}"), *a, *b)?;
                    }
                    self.dot_space_fits(id, &pairs)?;
                }
                Op::Slice { input, slices } => {
                    for (a, s) in slices {
                        if let super::AxisSlice::Index(i) = s {
                            let len = self.resolve_len(*a)?;
                            super::build::resolve_index(*i, len).map_err(|message| {
                                GraphError::Range {
                                    op: format!("slice {label}"),
                                    axis: self.axis_name(*a),
                                    message,
                                }
                            })?;
                        }
                    }
                    self.shape_of(&self.node(*input).axes)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A dot iterates over its result's elements times its contracted lengths; that count must
    /// fit an i64 loop index as every tensor's does ([`crate::size`]).
    fn dot_space_fits(&self, id: NodeId, pairs: &[(Axis, Axis)]) -> Result<(), GraphError> {
        if self.dot_points(id)?.and_then(crate::size::to_i64).is_some() {
            return Ok(());
        }
        let contracted: Vec<String> = pairs.iter().map(|(a, _)| self.axis_name(*a)).collect();
        Err(GraphError::Axes {
            op: format!("dot {}", self.node_label(id)),
            message: format!(
                "its iteration space (the result's elements times contracted axes ({})) has more \
                 than {} points",
                contracted.join(", "),
                i64::MAX
            ),
        })
    }

    fn same_len(&self, op: &str, a: Axis, b: Axis) -> Result<(), GraphError> {
        let (la, lb) = (self.resolve_len(a)?, self.resolve_len(b)?);
        if la != lb {
            return Err(GraphError::LengthMismatch {
                op: op.to_string(),
                left: self.axis_name(a),
                left_len: la,
                right: self.axis_name(b),
                right_len: lb,
            });
        }
        Ok(())
    }
}
