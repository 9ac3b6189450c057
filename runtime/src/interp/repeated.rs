//! Reductions over repeated values: a `sum`, `mean`, `max` or `min` over axes only a broadcast
//! (or a filled constant) introduced, evaluated by weft_ir's one definition
//! (`Graph::repeated_reduction`, which the compiler's simplify pass rewrites by): the repeated
//! value reduced over the reduced axes it has, then a sum multiplied by the introduced length.
//! The broadcast itself is never held when nothing else reads it, so a 2⁴⁰-long one costs
//! what its operand costs, as it does on the JIT.

use crate::plan::Plan;
use weft_ir::arena::EntityRef;
use weft_ir::graph::RepeatedReduction;
use weft_ir::{Graph, NodeId};

/// Per node: its repeated reduction, if it is one the plan evaluates, and whether the
/// interpreter never holds its value (a broadcast or filled constant that only such
/// reductions read and that is no output).
pub(crate) fn plan_repeated(g: &Graph, plan: &Plan) -> (Vec<Option<RepeatedReduction>>, Vec<bool>) {
    let mut rules = vec![None; g.len()];
    let mut read_otherwise = vec![false; g.len()];
    for o in plan.outputs() {
        read_otherwise[o.index()] = true;
    }
    for (id, node) in g.nodes().filter(|(id, _)| plan.is_needed(*id)) {
        let rule = g.repeated_reduction(id);
        let through_rule = rule.as_ref().map(|r| r.operand);
        for x in node.op.inputs() {
            if Some(x) != through_rule {
                read_otherwise[x.index()] = true;
            }
        }
        rules[id.index()] = rule;
    }
    let mut unheld = vec![false; g.len()];
    for r in rules.iter().flatten() {
        unheld[r.operand.index()] = !read_otherwise[r.operand.index()];
    }
    (rules, unheld)
}

/// The node ids of `unheld` that are true.
pub(crate) fn is_unheld(unheld: &[bool], id: NodeId) -> bool {
    unheld.get(id.index()).copied().unwrap_or(false)
}
