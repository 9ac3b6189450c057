//! Reverse-mode automatic differentiation: [`Graph::grad`] appends the backward graph of a
//! scalar loss to the graph, as ordinary ops (docs/autodiff.md).
//!
//! Assumes: a graph built through the builder API (operands precede their consumers, every
//! node's axes and dtype inferred), and the lengths of the axes that a slice, pad or concat
//! on the differentiated path cuts bound when `grad` is called (their adjoints are pads and
//! slices of fixed widths); other lengths may stay unbound.
//!
//! Guarantees:
//! - `grad(loss, wrt)` returns one new node per `wrt` entry, distinct from each other and from
//!   every node that existed before, whose axes are exactly its `wrt` node's (same axes, same
//!   order) and whose dtype is its dtype. Its value is the total derivative of `loss` with
//!   respect to that node (through every path, including paths through other `wrt` nodes).
//! - A `wrt` node the loss does not depend on (through differentiable edges) gets zero: a
//!   broadcast scalar constant.
//! - The backward graph is ordinary ops appended after the existing nodes, so it verifies,
//!   prints, parses and compiles like any graph; the gradient of a `dot` is a `dot`, and the
//!   adjoint of a broadcasting `multiply` is a sum of products, so both can take the GEMM path
//!   ([`Graph::sum_of_products`]).
//! - Bad input is a typed [`GraphError`], never a panic: a loss that is not a float scalar
//!   ([`GraphError::GradLoss`]); a node without a derivative on a path from a `wrt` node to
//!   the loss — `argmax`, `argmin`, `assign`, or any integer- or bool-valued node
//!   ([`GraphError::NotDifferentiable`], naming the op, the node and the `wrt` node). On any
//!   error the graph is left as it was.
//!
//! Comparisons and a `select`'s condition carry no gradient (their derivative is zero wherever
//! it exists), so a path through them is no path: `relu` written as
//! `select(greater(x, 0), x, 0)` differentiates, and so does a mask built from `argmax` that
//! only feeds a condition. The walk runs over a petgraph of the nodes that lie on a path from
//! some `wrt` node to the loss, in reverse topological order; a node's adjoint is the `add`
//! of its consumers' contributions. The per-op rules and their conventions at kinks and ties
//! are in `rules.rs` and docs/autodiff.md.

mod rules;

use crate::graph::{Graph, GraphError, NodeId, Op, ReduceOp};
use crate::host::Scalar;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::{Dfs, EdgeFiltered, Reversed, Walker};
use rules::Adjoint;
use std::collections::HashMap;

impl Graph {
    /// The gradients of the scalar `loss` with respect to each node of `wrt`: one new node
    /// each, with exactly that node's axes (in its order) and dtype (module docs of
    /// `weft_ir::autodiff` and docs/autodiff.md for the rules).
    ///
    /// ```
    /// use weft::ir::{DType, Graph};
    /// let mut g = Graph::new();
    /// let n = g.axis("N", 3)?;
    /// let x = g.placeholder("x", &[n], DType::F64)?;
    /// let sq = g.square(x)?;
    /// let loss = g.sum(sq, &[n])?;
    /// let dx = g.grad(loss, &[x])?; // 2x
    /// assert_eq!(g.node(dx[0]).axes.as_slice(), &[n]);
    /// g.verify()?;
    /// # Ok::<(), weft::ir::GraphError>(())
    /// ```
    pub fn grad(&mut self, loss: NodeId, wrt: &[NodeId]) -> Result<Vec<NodeId>, GraphError> {
        self.grad_stopping(loss, wrt, &[])
    }

    /// [`Graph::grad`] with the nodes `stops` held constant: no gradient flows from them into
    /// their operands, as if their values came from outside (nGraph's `stop_gradient`; a
    /// target network's value in a temporal-difference loss).
    pub fn grad_stopping(
        &mut self,
        loss: NodeId,
        wrt: &[NodeId],
        stops: &[NodeId],
    ) -> Result<Vec<NodeId>, GraphError> {
        for s in stops {
            self.check_node(*s)?;
        }
        // Work on a copy, so an error leaves the graph as it was.
        let mut g = self.clone();
        let out = backward(&mut g, loss, wrt, stops)?;
        *self = g;
        Ok(out)
    }
}

/// The operands of `op` through which a gradient flows: all of them except a comparison's and
/// a select's condition (derivative zero wherever it exists).
pub(crate) fn differentiable_operands(op: &Op) -> Vec<NodeId> {
    match op {
        Op::Compare(..) => Vec::new(),
        Op::Select(_, a, b) => vec![*a, *b],
        other => other.inputs(),
    }
}

/// Why a node on a differentiated path has no derivative, if it has none.
fn not_differentiable(g: &Graph, id: NodeId) -> Option<&'static str> {
    let node = g.node(id);
    match &node.op {
        Op::Reduce {
            op: ReduceOp::ArgMax | ReduceOp::ArgMin,
            ..
        } => Some("an index is piecewise constant in its input and has no gradient"),
        Op::Assign { .. } => Some("assign changes state; it has no gradient"),
        _ if !node.dtype.is_float() => Some(
            "its values are integers or booleans (an integer-valued path): only f32 and f64 \
             nodes are differentiable",
        ),
        _ => None,
    }
}

fn backward(
    g: &mut Graph,
    loss: NodeId,
    wrt: &[NodeId],
    stops: &[NodeId],
) -> Result<Vec<NodeId>, GraphError> {
    let l = g.check_node(loss)?;
    let dtype = l.dtype;
    if !l.axes.is_empty() || !dtype.is_float() {
        return Err(GraphError::GradLoss {
            loss: g.node_label(loss),
            axes: g.axes_name(&l.axes),
            dtype,
        });
    }
    let seed = g.scalar(Scalar::Float(1.0), dtype)?;
    backward_from(g, loss, seed, wrt, stops)
}

/// The vector-Jacobian products of `output` seeded with `seed` (a node with `output`'s axes as a
/// set and its dtype): for each `wrt` node, `Σ seed · ∂output/∂wrt`. `grad` seeds a scalar loss
/// with 1; the convolution and pool rules seed their expansion with their own adjoint. No
/// gradient flows from a node of `stops` into its operands.
pub(crate) fn backward_from(
    g: &mut Graph,
    output: NodeId,
    seed: NodeId,
    wrt: &[NodeId],
    stops: &[NodeId],
) -> Result<Vec<NodeId>, GraphError> {
    let loss = output;
    for w in wrt {
        g.check_node(*w)?;
    }

    // The petgraph of the nodes up to the loss (none after it can reach it), an edge from each
    // operand to its consumer; edges that carry no gradient are marked and filtered out.
    let last = loss.as_u32() as usize;
    let mut pg: DiGraph<NodeId, bool> = DiGraph::with_capacity(last + 1, last + 1);
    let index: Vec<NodeIndex> = g
        .nodes()
        .take(last + 1)
        .map(|(id, _)| pg.add_node(id))
        .collect();
    for (id, node) in g.nodes().take(last + 1) {
        let flows = if stops.contains(&id) {
            Vec::new()
        } else {
            differentiable_operands(&node.op)
        };
        for o in node.op.inputs() {
            let carries = flows.contains(&o);
            pg.add_edge(
                index[o.as_u32() as usize],
                index[id.as_u32() as usize],
                carries,
            );
        }
    }
    let flowing = EdgeFiltered::from_fn(&pg, |e| *e.weight());

    // On a path: reaches the loss (reverse walk from it) and is reached from a wrt node
    // (forward walk from each; the first wrt reaching a node names it in errors).
    let mut to_loss = vec![false; last + 1];
    for i in Dfs::new(Reversed(&flowing), index[last]).iter(Reversed(&flowing)) {
        to_loss[i.index()] = true;
    }
    let mut from_wrt: Vec<Option<NodeId>> = vec![None; last + 1];
    for w in wrt {
        let Some(&start) = index.get(w.as_u32() as usize) else {
            continue; // made after the loss: the loss does not depend on it
        };
        for i in Dfs::new(&flowing, start).iter(&flowing) {
            from_wrt[i.index()].get_or_insert(*w);
        }
    }
    let on_path = |i: usize| to_loss[i] && from_wrt[i].is_some();

    // Every node on a path must have a derivative; the first that has none (in creation
    // order) is the error, before anything is built.
    for (i, reaching) in from_wrt.iter().enumerate() {
        let (Some(w), true) = (reaching, on_path(i)) else {
            continue;
        };
        let id = pg[NodeIndex::new(i)];
        if let Some(reason) = not_differentiable(g, id) {
            return Err(GraphError::NotDifferentiable {
                op: g.node(id).op.name(),
                node: g.node_label(id),
                wrt: g.node_label(*w),
                reason,
            });
        }
    }

    // Reverse topological order of the nodes on a path.
    let on: Vec<bool> = (0..=last).map(on_path).collect();
    let sub = petgraph::visit::NodeFiltered::from_fn(&flowing, |i: NodeIndex| on[i.index()]);
    let order = petgraph::algo::toposort(&sub, None).map_err(|cycle| GraphError::Axes {
        op: "grad".into(),
        message: format!(
            "the graph has a cycle through `{}`",
            g.node_label(pg[cycle.node_id()])
        ),
    })?;

    let mut adjoint: HashMap<NodeId, Adjoint> = HashMap::new();
    adjoint.insert(loss, Adjoint::Node(seed));
    for i in order.into_iter().rev() {
        let id = pg[i];
        let Some(&adj) = adjoint.get(&id) else {
            continue; // only zero contributions reached it (e.g. through `sign`)
        };
        let wanted = |o: NodeId| {
            let k = o.as_u32() as usize;
            k <= last && on[k]
        };
        for (operand, contribution) in rules::contributions(g, id, adj, &wanted)? {
            let total = match adjoint.get(&operand) {
                // Both have the operand's axes, broadcast or not: add what they broadcast
                // (add broadcasts by axis itself).
                Some(&prev) => {
                    let sum = g.add(prev.source(), contribution.source())?;
                    Adjoint::to(g, sum, operand)
                }
                None => contribution,
            };
            adjoint.insert(operand, total);
        }
    }

    let mut out: Vec<NodeId> = Vec::with_capacity(wrt.len());
    for w in wrt {
        let node = g.node(*w).clone();
        let adj = match adjoint.get(w) {
            Some(&a) => a.materialise(g)?,
            None => {
                let zero = g.scalar(Scalar::zero(node.dtype), node.dtype)?;
                g.broadcast(zero, node.axes.as_slice())?
            }
        };
        let fresh = out.contains(&adj) || adj == *w;
        let adj = if fresh || g.node(adj).axes != node.axes {
            g.axes_with_order(adj, node.axes.as_slice())?
        } else {
            adj
        };
        out.push(adj);
    }
    Ok(out)
}
