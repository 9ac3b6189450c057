//! Rebuilding a graph node by node: the mechanism every graph-to-graph pass uses.
//!
//! Assumes: the source graph's axis table was built by `Graph`'s own constructors (derived axes
//! interned, so no two entries share a derivation).
//! Guarantees: [`empty_like`] returns a graph with the same axis table (every `AxisId` means the
//! same axis in both graphs) and no nodes; [`add_like`] re-creates a node through the public
//! builders, so every node of a rebuilt graph is re-checked and its axes re-inferred, and
//! [`coerce_axes`] makes a replacement carry exactly the axes of the node it replaces.

use super::PassError;
use weft_ir::{Axes, DType, Graph, Node, NodeId, Op};

/// A map from the nodes of a pass's input graph to the nodes of its output graph; `None` for
/// nodes the pass removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeMap {
    map: Vec<Option<NodeId>>,
}

impl NodeMap {
    /// A map for a graph of `len` nodes, mapping nothing yet.
    pub fn new(len: usize) -> NodeMap {
        NodeMap {
            map: vec![None; len],
        }
    }
    /// The identity map over a graph of `len` nodes.
    pub fn identity(len: usize) -> NodeMap {
        NodeMap {
            map: (0..len).map(|i| Some(NodeId::from_u32(i as u32))).collect(),
        }
    }
    /// Records that `old` became `new`.
    pub fn set(&mut self, old: NodeId, new: NodeId) {
        let i = old.as_u32() as usize;
        if i >= self.map.len() {
            self.map.resize(i + 1, None);
        }
        self.map[i] = Some(new);
    }
    /// What `old` became, if it survived.
    pub fn get(&self, old: NodeId) -> Option<NodeId> {
        self.map.get(old.as_u32() as usize).copied().flatten()
    }
    /// The composition: `self` then `next` (old → `self` → `next`).
    pub fn then(&self, next: &NodeMap) -> NodeMap {
        NodeMap {
            map: self
                .map
                .iter()
                .map(|m| m.and_then(|n| next.get(n)))
                .collect(),
        }
    }
    /// The number of nodes of the source graph covered.
    pub fn len(&self) -> usize {
        self.map.len()
    }
    /// True when the map covers no node.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// A graph with `g`'s axis table (same ids, names, roles and lengths) and no nodes or outputs.
pub fn empty_like(g: &Graph) -> Result<Graph, PassError> {
    g.with_axis_table_only().ok_or_else(|| {
        PassError::Internal("the graph's axis table holds a derivation twice".into())
    })
}

/// Re-creates `node` in `g` with the operands of its op (already remapped into `g`) through the
/// public builders, keeping its name when `keep_name` is set.
pub fn add_like(g: &mut Graph, node: &Node, keep_name: bool) -> Result<NodeId, PassError> {
    let axes: Vec<_> = node.axes.iter().copied().collect();
    let id = match &node.op {
        Op::Tensor { kind, init } => {
            let name = if keep_name {
                node.name.as_deref()
            } else {
                None
            };
            return Ok(g.tensor(*kind, name, &axes, node.dtype, init.clone())?);
        }
        Op::Unary(u, x) => g.unary(*u, *x)?,
        Op::Binary(b, x, y) => g.binary(*b, *x, *y)?,
        Op::Compare(c, x, y) => g.compare(*c, *x, *y)?,
        Op::Select(c, x, y) => g.select(*c, *x, *y)?,
        Op::Convert(x) => g.convert(*x, node.dtype)?,
        Op::Reduce { op, input, axes: r } => {
            let r: Vec<_> = r.iter().copied().collect();
            g.reduce(*op, *input, &r, Some(&axes))?
        }
        Op::Dot(x, y) => g.dot(*x, *y)?,
        Op::Broadcast(x) => g.broadcast(*x, &axes)?,
        Op::AxesWithOrder(x) => g.axes_with_order(*x, &axes)?,
        Op::CastAxes(x) => g.cast_axes(*x, &axes)?,
        Op::Transpose(x) => g.transpose(*x)?,
        Op::Slice { input, slices } => g.slice(*input, slices)?,
        Op::Flatten { input, axes: f } => g.flatten(*input, f)?,
        Op::Unflatten { input, axis } => g.unflatten(*input, *axis)?,
        Op::Pad { input, pads } => g.pad(*input, pads)?,
        Op::Concat(parts) => g.concat(parts)?,
        Op::ExpandDims { input, axis, pos } => g.expand_dims(*input, *axis, *pos)?,
        Op::Assign { target, value } => g.assign(*target, *value)?,
        Op::Convolution {
            input,
            filter,
            spec,
        } => g.convolution(*input, *filter, spec)?,
        Op::Pool { input, spec } => g.pool(*input, spec)?,
    };
    let id = coerce_axes(g, id, &node.axes, node.dtype)?;
    if keep_name {
        if let Some(n) = &node.name {
            if g.find(n).is_none() {
                g.set_name(id, n)?;
            }
        }
    }
    Ok(id)
}

/// `id` viewed with exactly `axes`: itself if it has them, else an `axes_with_order` (same set)
/// or a `broadcast` (a superset) of it. A rewrite that would lose axes or change the dtype is a
/// bug in the pass, reported as [`PassError::Internal`].
pub fn coerce_axes(
    g: &mut Graph,
    id: NodeId,
    axes: &Axes,
    dtype: DType,
) -> Result<NodeId, PassError> {
    let n = g.node(id);
    if n.dtype != dtype {
        return Err(PassError::Internal(format!(
            "a rewrite changed dtype {} into {dtype}",
            n.dtype
        )));
    }
    if n.axes == *axes {
        return Ok(id);
    }
    let v: Vec<_> = axes.iter().copied().collect();
    if n.axes.is_equal_set(axes) {
        Ok(g.axes_with_order(id, &v)?)
    } else if axes.is_super_set(&n.axes) {
        Ok(g.broadcast(id, &v)?)
    } else {
        Err(PassError::Internal(format!(
            "a rewrite would turn axes {} into {}",
            g.axes_name(&n.axes),
            g.axes_name(axes)
        )))
    }
}

/// `node` with `op` in place of its own: axes, dtype and name copied, its op not (a constant's
/// data would be copied only to be dropped).
pub fn with_op(node: &Node, op: Op) -> Node {
    Node {
        op,
        axes: node.axes.clone(),
        dtype: node.dtype,
        name: node.name.clone(),
    }
}

/// `op` with every operand `x` replaced by `f(x)`.
pub fn remap_op(
    op: &Op,
    mut f: impl FnMut(NodeId) -> Result<NodeId, PassError>,
) -> Result<Op, PassError> {
    Ok(match op {
        Op::Tensor { .. } => op.clone(),
        Op::Unary(u, x) => Op::Unary(*u, f(*x)?),
        Op::Binary(b, x, y) => Op::Binary(*b, f(*x)?, f(*y)?),
        Op::Compare(c, x, y) => Op::Compare(*c, f(*x)?, f(*y)?),
        Op::Select(c, x, y) => Op::Select(f(*c)?, f(*x)?, f(*y)?),
        Op::Convert(x) => Op::Convert(f(*x)?),
        Op::Reduce { op, input, axes } => Op::Reduce {
            op: *op,
            input: f(*input)?,
            axes: axes.clone(),
        },
        Op::Dot(x, y) => Op::Dot(f(*x)?, f(*y)?),
        Op::Broadcast(x) => Op::Broadcast(f(*x)?),
        Op::AxesWithOrder(x) => Op::AxesWithOrder(f(*x)?),
        Op::CastAxes(x) => Op::CastAxes(f(*x)?),
        Op::Transpose(x) => Op::Transpose(f(*x)?),
        Op::Slice { input, slices } => Op::Slice {
            input: f(*input)?,
            slices: slices.clone(),
        },
        Op::Flatten { input, axes } => Op::Flatten {
            input: f(*input)?,
            axes: axes.clone(),
        },
        Op::Unflatten { input, axis } => Op::Unflatten {
            input: f(*input)?,
            axis: *axis,
        },
        Op::Pad { input, pads } => Op::Pad {
            input: f(*input)?,
            pads: pads.clone(),
        },
        Op::Concat(parts) => Op::Concat(
            parts
                .iter()
                .map(|(n, a)| Ok((f(*n)?, *a)))
                .collect::<Result<_, PassError>>()?,
        ),
        Op::ExpandDims { input, axis, pos } => Op::ExpandDims {
            input: f(*input)?,
            axis: *axis,
            pos: *pos,
        },
        Op::Assign { target, value } => Op::Assign {
            target: f(*target)?,
            value: f(*value)?,
        },
        Op::Convolution {
            input,
            filter,
            spec,
        } => Op::Convolution {
            input: f(*input)?,
            filter: f(*filter)?,
            spec: spec.clone(),
        },
        Op::Pool { input, spec } => Op::Pool {
            input: f(*input)?,
            spec: spec.clone(),
        },
    })
}
