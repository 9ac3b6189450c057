//! Graphs as pictures: Graphviz DOT text for `weft graph`.
//!
//! Guarantees: every node of the graph is one DOT node labelled with its name, op, axes (with
//! lengths) and dtype; placeholders, variables and persistent tensors (inputs) are drawn as
//! houses, constants as plain boxes, outputs with a double border; given a fusion plan, each
//! group is a `cluster_kN` subgraph (a node evaluated inline by several groups is drawn in the
//! first) and each stored tensor is bold with its boundary reason. DOT needs no Graphviz to
//! write; `dot -Tsvg` (or `weft graph --format svg`) draws it.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use weft_ir::{Graph, NodeId, Op, TensorKind};

use crate::passes::fusion::FusionPlan;

/// Light fill colours, one per kernel (cycling).
const PALETTE: [&str; 6] = [
    "#fef3c7", "#dcfce7", "#fce7f3", "#e0e7ff", "#ccfbf1", "#fde68a",
];

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn label(g: &Graph, id: NodeId, reason: Option<&str>) -> String {
    let n = g.node(id);
    let axes: Vec<String> = n
        .axes
        .iter()
        .map(|a| match g.resolve_len(*a) {
            Ok(len) => format!("{}:{len}", g.axis_name(*a)),
            Err(_) => g.axis_name(*a),
        })
        .collect();
    let mut s = format!(
        "{} = {}\\n({}) {}",
        escape(&g.node_label(id)),
        n.op.name(),
        escape(&axes.join(", ")),
        n.dtype
    );
    if let Some(r) = reason {
        let _ = write!(s, "\\nstored: {}", escape(r));
    }
    s
}

/// The graph `g` in DOT; with `fusion` (a plan over `g`), its groups as clusters.
pub fn graph_dot(g: &Graph, fusion: Option<&FusionPlan>) -> String {
    let outputs: HashSet<NodeId> = g.outputs().iter().copied().collect();
    let stored: HashMap<NodeId, &'static str> = fusion
        .map(|f| {
            f.boundaries
                .iter()
                .map(|b| (b.node, b.reason.name()))
                .collect()
        })
        .unwrap_or_default();
    let group_of: HashMap<NodeId, usize> = fusion
        .map(|f| {
            let mut m = HashMap::new();
            for grp in &f.groups {
                for &id in &grp.nodes {
                    m.entry(id).or_insert(grp.id);
                }
            }
            m
        })
        .unwrap_or_default();
    let node_line = |id: NodeId| -> String {
        let n = g.node(id);
        let mut text = label(g, id, stored.get(&id).copied());
        if let Some(k) = group_of.get(&id) {
            let _ = write!(text, "\\n[kernel k{k}]");
        }
        let mut attrs = vec![format!("label=\"{text}\"")];
        match &n.op {
            Op::Tensor {
                kind: TensorKind::Placeholder | TensorKind::Variable | TensorKind::PersistentTensor,
                ..
            } => attrs.push("shape=invhouse, style=filled, fillcolor=\"#dbeafe\"".into()),
            Op::Tensor { .. } => {
                attrs.push("shape=box, style=filled, fillcolor=\"#f3f4f6\"".into())
            }
            _ => match group_of.get(&id) {
                // Each kernel a colour too, for renderers that do not draw clusters.
                Some(k) => attrs.push(format!(
                    "shape=box, style=\"rounded,filled\", fillcolor=\"{}\"",
                    PALETTE[k % PALETTE.len()]
                )),
                None => attrs.push("shape=box, style=rounded".into()),
            },
        }
        if stored.contains_key(&id) {
            attrs.push("penwidth=2.5".into());
        }
        if outputs.contains(&id) {
            attrs.push("peripheries=2, color=\"#b91c1c\"".into());
        }
        format!("  n{} [{}];\n", id.as_u32(), attrs.join(", "))
    };
    let mut s = String::from(
        "digraph weft {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n",
    );
    let mut drawn = HashSet::new();
    if let Some(f) = fusion {
        for grp in &f.groups {
            let _ = writeln!(
                s,
                "  subgraph cluster_k{} {{\n  label=\"kernel k{} ({:?})\";\n  style=dashed;",
                grp.id, grp.id, grp.kind
            );
            for &id in &grp.nodes {
                if drawn.insert(id) {
                    s += &node_line(id);
                }
            }
            s += "  }\n";
        }
    }
    for (id, _) in g.nodes() {
        if drawn.insert(id) {
            s += &node_line(id);
        }
    }
    for (id, n) in g.nodes() {
        for i in n.op.inputs() {
            let _ = writeln!(s, "  n{} -> n{};", i.as_u32(), id.as_u32());
        }
    }
    s += "}\n";
    s
}
