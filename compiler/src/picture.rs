//! Graphs as pictures for `weft graph`: what to draw ([`Picture`]: nodes, edges, kernels), and
//! Graphviz DOT text of it ([`Picture::dot`]); the SVG renderer (src/cli/graph.rs) draws the
//! same [`Picture`].
//!
//! Guarantees: every node of the graph is one picture node labelled with its name, op, axes
//! (with lengths) and dtype, of one [`NodeKind`]: inputs (placeholders, variables, persistent
//! tensors) are houses, constants plain grey boxes, computed values rounded boxes, values a
//! fusion plan stores between kernels bold orange with the reason (`stored: …`), outputs
//! double-bordered red. Given a fusion plan, each group is a [`Kernel`] holding its nodes (a
//! node evaluated inline by several groups is drawn in the first), named `kernel kN (kind)`:
//! a DOT `cluster_kN` subgraph, a dashed box in the SVG. DOT needs no Graphviz to write; `dot
//! -Tsvg` (or `weft graph --format svg`) draws it.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use weft_ir::{Graph, NodeId, Op, TensorKind};

use crate::passes::fusion::{BoundaryReason, FusionPlan};

/// Light fill colours, one per kernel (cycling).
pub const PALETTE: [&str; 6] = [
    "#fef3c7", "#dcfce7", "#fce7f3", "#e0e7ff", "#ccfbf1", "#fde68a",
];

/// How a node is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A placeholder, variable or persistent tensor: it exists before the call.
    Input,
    /// A constant.
    Constant,
    /// A computed value, in kernel `Some(k)` (or no plan).
    Computed(Option<usize>),
}

/// One node of the picture.
#[derive(Clone, Debug)]
pub struct PictureNode {
    /// The graph node.
    pub id: NodeId,
    /// `name = op`, then the axes with lengths and the dtype, one line each.
    pub lines: Vec<String>,
    /// How it is drawn.
    pub kind: NodeKind,
    /// Why the plan stores it between kernels (not for inputs and constants, which are
    /// stored by nature).
    pub stored: Option<&'static str>,
    /// A graph output.
    pub output: bool,
}

/// One kernel (fusion group) and the nodes drawn inside it.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Its number (`kN`).
    pub id: usize,
    /// `kernel kN (Kind)`.
    pub label: String,
    /// Its nodes, in graph order.
    pub nodes: Vec<NodeId>,
}

/// What `weft graph` draws.
#[derive(Clone, Debug)]
pub struct Picture {
    /// Every node, in graph order.
    pub nodes: Vec<PictureNode>,
    /// Operand → reader.
    pub edges: Vec<(NodeId, NodeId)>,
    /// The fusion plan's kernels (none without a plan).
    pub kernels: Vec<Kernel>,
}

impl Picture {
    /// The picture of `g`; with `fusion` (a plan over `g`), its kernels and stored values.
    pub fn new(g: &Graph, fusion: Option<&FusionPlan>) -> Picture {
        let outputs: HashSet<NodeId> = g.outputs().iter().copied().collect();
        let stored: HashMap<NodeId, &'static str> = fusion
            .map(|f| {
                f.boundaries
                    .iter()
                    .filter(|b| b.reason != BoundaryReason::Stored)
                    .map(|b| (b.node, b.reason.name()))
                    .collect()
            })
            .unwrap_or_default();
        let mut kernels = Vec::new();
        let mut group_of: HashMap<NodeId, usize> = HashMap::new();
        for grp in fusion.map(|f| f.groups.as_slice()).unwrap_or_default() {
            let nodes: Vec<NodeId> = grp
                .nodes
                .iter()
                .copied()
                .filter(|id| !group_of.contains_key(id))
                .collect();
            for id in &nodes {
                group_of.insert(*id, grp.id);
            }
            kernels.push(Kernel {
                id: grp.id,
                label: format!("kernel k{} ({:?})", grp.id, grp.kind),
                nodes,
            });
        }
        let nodes = g
            .nodes()
            .map(|(id, n)| PictureNode {
                id,
                lines: lines(g, id),
                kind: match &n.op {
                    Op::Tensor {
                        kind: TensorKind::Constant,
                        ..
                    } => NodeKind::Constant,
                    Op::Tensor { .. } => NodeKind::Input,
                    _ => NodeKind::Computed(group_of.get(&id).copied()),
                },
                stored: stored.get(&id).copied(),
                output: outputs.contains(&id),
            })
            .collect();
        let edges = g
            .nodes()
            .flat_map(|(id, n)| n.op.inputs().into_iter().map(move |i| (i, id)))
            .collect();
        Picture {
            nodes,
            edges,
            kernels,
        }
    }

    /// The picture in Graphviz DOT.
    pub fn dot(&self) -> String {
        let by_id: HashMap<NodeId, &PictureNode> = self.nodes.iter().map(|n| (n.id, n)).collect();
        let mut s = String::from(
            "digraph weft {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n",
        );
        let mut drawn = HashSet::new();
        for k in &self.kernels {
            let _ = writeln!(
                s,
                "  subgraph cluster_k{} {{\n  label=\"{}\";\n  style=dashed;",
                k.id,
                escape(&k.label)
            );
            for id in &k.nodes {
                if drawn.insert(*id) {
                    s += &dot_node(by_id[id]);
                }
            }
            s += "  }\n";
        }
        for n in &self.nodes {
            if drawn.insert(n.id) {
                s += &dot_node(n);
            }
        }
        for (from, to) in &self.edges {
            let _ = writeln!(s, "  n{} -> n{};", from.as_u32(), to.as_u32());
        }
        s += "}\n";
        s
    }
}

/// A node's label lines: `name = op`, its axes with lengths, its dtype.
fn lines(g: &Graph, id: NodeId) -> Vec<String> {
    let n = g.node(id);
    let axes: Vec<String> = n
        .axes
        .iter()
        .map(|a| match g.resolve_len(*a) {
            Ok(len) => format!("{}:{len}", g.axis_name(*a)),
            Err(_) => g.axis_name(*a),
        })
        .collect();
    vec![
        format!("{} = {}", g.node_label(id), n.op.name()),
        format!("({}) {}", axes.join(", "), n.dtype),
    ]
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The fill, border colour and border width of a node, shared by both renderers.
pub fn node_style(n: &PictureNode) -> (&'static str, &'static str, usize) {
    let fill = match n.kind {
        NodeKind::Input => "#dbeafe",
        NodeKind::Constant => "#f3f4f6",
        NodeKind::Computed(Some(k)) => PALETTE[k % PALETTE.len()],
        NodeKind::Computed(None) => "#ffffff",
    };
    match (n.output, n.stored.is_some()) {
        (true, _) => (fill, "#b91c1c", 3),
        (false, true) => (fill, "#c2410c", 3),
        _ => (fill, "#374151", 1),
    }
}

/// A node's full label: its lines, then why it is stored, if it is.
pub fn node_label(n: &PictureNode) -> Vec<String> {
    let mut lines = n.lines.clone();
    if let Some(r) = n.stored {
        lines.push(format!("stored: {r}"));
    }
    lines
}

fn dot_node(n: &PictureNode) -> String {
    let label: Vec<String> = node_label(n).iter().map(|l| escape(l)).collect();
    let (fill, border, width) = node_style(n);
    let shape = match n.kind {
        NodeKind::Input => "shape=invhouse, style=filled",
        NodeKind::Constant => "shape=box, style=filled",
        NodeKind::Computed(_) => "shape=box, style=\"rounded,filled\"",
    };
    let mut attrs = vec![
        format!("label=\"{}\"", label.join("\\n")),
        format!("{shape}, fillcolor=\"{fill}\", color=\"{border}\", penwidth={width}"),
    ];
    if n.output {
        attrs.push("peripheries=2".into());
    }
    format!("  n{} [{}];\n", n.id.as_u32(), attrs.join(", "))
}

/// The graph `g` in DOT; with `fusion` (a plan over `g`), its groups as clusters.
pub fn graph_dot(g: &Graph, fusion: Option<&FusionPlan>) -> String {
    Picture::new(g, fusion).dot()
}
