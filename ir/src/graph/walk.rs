//! The one walk over a graph's edges: which nodes a set of roots is computed from. What a
//! computation evaluates (the runtime's `Plan`), what a transformer compiles (the Python
//! binding), what simplify keeps and whether one op depends on another are all this walk
//! from different roots.
//!
//! Assumes: the roots are nodes of this graph. Guarantees: the edges followed are operands
//! (`Op::inputs`) and nothing else, so an `assign` is reached only from a root at or above
//! it (a reader of a variable does not reach the assigns of that variable), while an `assign`
//! reaches both its target and its value; the walk keeps an explicit stack (no recursion, so a
//! chain of any depth is walked) and visits each reached node and each of its operand edges
//! once: O(nodes + edges).

use super::{Graph, NodeId};
use crate::arena::EntityRef;

impl Graph {
    /// A mask over this graph's nodes, indexed by [`EntityRef::index`]: true for `roots` and
    /// every node they read, directly or through other nodes — the nodes evaluating `roots`
    /// evaluates. Repeated roots are allowed.
    ///
    /// Panics if a root is not a node of this graph (callers check ids they were handed first,
    /// with [`Graph::get`], and report them in their own terms).
    pub fn ancestors(&self, roots: &[NodeId]) -> Vec<bool> {
        let mut reached = vec![false; self.len()];
        let mut stack = Vec::new();
        for &root in roots {
            assert!(
                self.get(root).is_some(),
                "ancestors: root {root} is not a node of this graph"
            );
            // Marked when pushed, so the stack never holds more than the graph's nodes.
            if !std::mem::replace(&mut reached[root.index()], true) {
                stack.push(root);
            }
        }
        while let Some(id) = stack.pop() {
            for input in self.node(id).op.inputs() {
                if !std::mem::replace(&mut reached[input.index()], true) {
                    stack.push(input);
                }
            }
        }
        reached
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::graph::{BinaryOp, TensorInit, TensorKind, UnaryOp};
    use crate::host::Scalar;

    /// The ids `mask` holds, in creation order.
    fn held(mask: &[bool]) -> Vec<u32> {
        (0..mask.len() as u32)
            .filter(|&i| mask[i as usize])
            .collect()
    }

    fn placeholder(g: &mut Graph, name: &str) -> NodeId {
        let a = g.find_axis("A").unwrap_or_else(|| g.axis("A", 2).unwrap());
        g.tensor(TensorKind::Placeholder, Some(name), &[a], DType::F32, None)
            .unwrap()
    }

    #[test]
    fn a_diamond_is_reached_once_and_unread_nodes_are_not() {
        // x → (exp, neg) → add; `other` and `unused` are beside it.
        let mut g = Graph::new();
        let x = placeholder(&mut g, "x");
        let other = placeholder(&mut g, "other");
        let e = g.unary(UnaryOp::Exp, x).unwrap();
        let n = g.unary(UnaryOp::Negative, x).unwrap();
        let top = g.binary(BinaryOp::Add, e, n).unwrap();
        let unused = g.unary(UnaryOp::Exp, other).unwrap();
        let mask = g.ancestors(&[top]);
        assert_eq!(mask.len(), g.len());
        assert_eq!(
            held(&mask),
            [x, e, n, top].map(NodeId::as_u32).to_vec(),
            "`other` and `unused` are not read by `top`"
        );
        assert!(!mask[unused.index()] && !mask[other.index()]);
        // From the middle of the diamond, only its own side.
        assert_eq!(held(&g.ancestors(&[n])), vec![x.as_u32(), n.as_u32()]);
    }

    #[test]
    fn several_roots_repeated_roots_and_no_roots() {
        let mut g = Graph::new();
        let x = placeholder(&mut g, "x");
        let y = placeholder(&mut g, "y");
        let ex = g.unary(UnaryOp::Exp, x).unwrap();
        let ey = g.unary(UnaryOp::Exp, y).unwrap();
        let mask = g.ancestors(&[ey, ex, ey]);
        assert_eq!(held(&mask), [x, y, ex, ey].map(NodeId::as_u32).to_vec());
        assert!(g.ancestors(&[]).iter().all(|m| !m));
        // A leaf reaches itself alone.
        assert_eq!(held(&g.ancestors(&[y])), vec![y.as_u32()]);
    }

    #[test]
    fn an_assign_reaches_its_target_and_value_but_a_reader_of_the_target_not_the_assign() {
        let mut g = Graph::new();
        let a = g.axis("A", 2).unwrap();
        let x = g
            .tensor(TensorKind::Placeholder, Some("x"), &[a], DType::F32, None)
            .unwrap();
        let v = g
            .tensor(
                TensorKind::Variable,
                Some("v"),
                &[a],
                DType::F32,
                Some(TensorInit::Fill(Scalar::Float(0.0))),
            )
            .unwrap();
        let sum = g.binary(BinaryOp::Add, v, x).unwrap();
        let update = g.assign(v, sum).unwrap();
        let read = g.unary(UnaryOp::Negative, v).unwrap();
        assert_eq!(
            held(&g.ancestors(&[update])),
            [x, v, sum, update].map(NodeId::as_u32).to_vec()
        );
        assert_eq!(
            held(&g.ancestors(&[read])),
            [v, read].map(NodeId::as_u32).to_vec()
        );
    }

    #[test]
    fn a_select_and_a_concat_reach_every_operand() {
        let mut g = Graph::new();
        let a = g.axis("A", 2).unwrap();
        let x = g
            .tensor(TensorKind::Placeholder, Some("x"), &[a], DType::F32, None)
            .unwrap();
        let y = g
            .tensor(TensorKind::Placeholder, Some("y"), &[a], DType::F32, None)
            .unwrap();
        let c = g
            .tensor(TensorKind::Placeholder, Some("c"), &[a], DType::Bool, None)
            .unwrap();
        let s = g.select(c, x, y).unwrap();
        let cat = g.concat(&[(x, a), (s, a)]).unwrap();
        let mask = g.ancestors(&[cat]);
        assert!(mask.iter().all(|m| *m), "every node feeds the concat");
        assert_eq!(
            held(&g.ancestors(&[s])),
            [x, y, c, s].map(NodeId::as_u32).to_vec()
        );
    }

    #[test]
    fn a_chain_of_two_hundred_thousand_nodes_is_walked_without_recursion() {
        const DEPTH: usize = 200_000;
        let mut g = Graph::new();
        let x = placeholder(&mut g, "x");
        let beside = placeholder(&mut g, "beside");
        let mut chain = vec![x];
        for _ in 0..DEPTH {
            let last = *chain.last().unwrap();
            chain.push(g.unary(UnaryOp::Negative, last).unwrap());
        }
        let mask = g.ancestors(&[*chain.last().unwrap()]);
        assert_eq!(mask.iter().filter(|m| **m).count(), DEPTH + 1);
        assert!(chain.iter().all(|id| mask[id.index()]));
        assert!(!mask[beside.index()]);
        // From halfway down, the upper half is not reached.
        let mid = g.ancestors(&[chain[DEPTH / 2]]);
        assert_eq!(mid.iter().filter(|m| **m).count(), DEPTH / 2 + 1);
        assert!(!mid[chain[DEPTH / 2 + 1].index()]);
    }

    #[test]
    #[should_panic(expected = "is not a node of this graph")]
    fn a_root_outside_the_graph_panics() {
        let mut g = Graph::new();
        placeholder(&mut g, "x");
        g.ancestors(&[NodeId::from_u32(7)]);
    }
}
