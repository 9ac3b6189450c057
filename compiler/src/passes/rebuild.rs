//! Rebuilding a graph node by node: the mechanism every graph-to-graph pass uses.
//!
//! Assumes: the source graph's axis table was built by `Graph`'s own constructors (derived axes
//! interned, so no two entries share a derivation).
//! Guarantees: [`empty_like`] returns a graph with the same axis table (every `AxisId` means the
//! same axis in both graphs) and no nodes; [`add_like`] re-creates a node through the public
//! builders, so every node of a rebuilt graph is re-checked and its axes re-inferred, and
//! [`coerce_axes`] makes a replacement carry exactly the axes of the node it replaces.

use super::PassError;
use weft_ir::arena::EntityRef;
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
    /// What each source node became, indexed by the source node's index.
    pub fn into_vec(self) -> Vec<Option<NodeId>> {
        self.map
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

/// `g` restricted to the nodes `keep` marks (a mask over `g`'s nodes, as
/// [`Graph::ancestors`] returns): each re-created in creation order with [`add_like`], names
/// kept, in a graph of `g`'s axis table with no outputs marked; and the map from `g`'s nodes to
/// it. The one rebuild behind every "only what these roots need" graph (a computation's, a
/// transformer's, dead-code elimination's). `keep` must be closed under operands (a mask from
/// `ancestors` is, and stays so with leaves added): a kept node reading one not kept is
/// [`PassError::Internal`]. Panics if `keep` is not as long as `g`.
pub fn restricted(g: &Graph, keep: &[bool]) -> Result<(Graph, NodeMap), PassError> {
    assert_eq!(keep.len(), g.len(), "restricted: a mask over another graph");
    let mut out = empty_like(g)?;
    let mut map = NodeMap::new(g.len());
    for (id, node) in g.nodes().filter(|(id, _)| keep[id.index()]) {
        let op = remap_op(&node.op, |x| {
            map.get(x).ok_or_else(|| {
                PassError::Internal(format!(
                    "{} is read by {} but not kept",
                    g.node_label(x),
                    g.node_label(id)
                ))
            })
        })?;
        map.set(id, add_like(&mut out, &with_op(node, op), true)?);
    }
    Ok((out, map))
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

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::{BinaryOp, TensorKind, UnaryOp};

    /// `x`, `y` placeholders over `A`; `e = exp(x)` named; `s = e + x`; `n = negative(y)`,
    /// an output.
    fn graph() -> (Graph, [NodeId; 5]) {
        let mut g = Graph::new();
        let a = g.axis("A", 3).unwrap();
        let p = |g: &mut Graph, name| {
            g.tensor(TensorKind::Placeholder, Some(name), &[a], DType::F32, None)
                .unwrap()
        };
        let (x, y) = (p(&mut g, "x"), p(&mut g, "y"));
        let e = g.unary(UnaryOp::Exp, x).unwrap();
        g.set_name(e, "e").unwrap();
        let s = g.binary(BinaryOp::Add, e, x).unwrap();
        let n = g.unary(UnaryOp::Negative, y).unwrap();
        g.mark_output(n).unwrap();
        (g, [x, y, e, s, n])
    }

    #[test]
    fn restricted_keeps_what_the_roots_read_in_order_with_names_and_no_outputs() {
        let (g, [x, y, e, s, n]) = graph();
        let (part, map) = restricted(&g, &g.ancestors(&[s])).unwrap();
        assert_eq!(part.len(), 3);
        assert_eq!(part.outputs(), &[] as &[NodeId]);
        let (px, pe, ps) = (
            map.get(x).unwrap(),
            map.get(e).unwrap(),
            map.get(s).unwrap(),
        );
        assert!(px < pe && pe < ps, "creation order kept");
        assert_eq!((map.get(y), map.get(n)), (None, None));
        assert_eq!(part.find("e"), Some(pe));
        assert_eq!(part.find("x"), Some(px));
        assert_eq!(part.node(ps).op.inputs(), vec![pe, px]);
        assert_eq!(part.node(ps).axes, g.node(s).axes);
        assert_eq!(part.axis_table().len(), g.axis_table().len());
        let ids = map.into_vec();
        assert_eq!(ids.len(), g.len());
        assert_eq!(ids.iter().filter(|m| m.is_some()).count(), 3);
    }

    #[test]
    fn a_mask_not_closed_under_operands_is_an_internal_error() {
        let (g, [x, _, e, _, _]) = graph();
        let mut keep = vec![false; g.len()];
        keep[e.index()] = true;
        let err = restricted(&g, &keep).unwrap_err();
        assert!(matches!(err, PassError::Internal(_)), "{err}");
        assert!(err.to_string().contains(&g.node_label(x)), "{err}");
        // With the operand added, it holds.
        keep[x.index()] = true;
        assert_eq!(restricted(&g, &keep).unwrap().0.len(), 2);
    }
}
