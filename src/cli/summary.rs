//! Human-readable reports: the inferred axes of every tensor (`weft check`) and short
//! summaries of output arrays (`weft run`).

use crate::Error;
use std::fmt::Write;
use weft_ir::{Graph, HostArray};

/// One line per tensor: name, op, dtype and inferred axes.
pub fn inferred_axes(graph: &Graph) -> Result<String, Error> {
    let mut s = String::new();
    let width = graph
        .nodes()
        .map(|(id, _)| graph.node_label(id).len())
        .max()
        .unwrap_or(0);
    for (id, node) in graph.nodes() {
        let _ = writeln!(
            s,
            "{:width$}  {:17} {:4} {}",
            graph.node_label(id),
            node.op.name(),
            node.dtype.name(),
            graph.axes_with_lengths(&node.axes),
        );
    }
    let outs: Vec<String> = graph
        .outputs()
        .iter()
        .map(|o| graph.node_label(*o))
        .collect();
    let _ = writeln!(
        s,
        "ok: {} tensors, outputs: {}",
        graph.len(),
        if outs.is_empty() {
            "(none)".to_string()
        } else {
            outs.join(", ")
        }
    );
    Ok(s)
}

/// A summary of one output: its name, then [`HostArray::display`] (dtype, named axes with
/// lengths, the values nested by axis when there are at most 64, else the first values and
/// min / max / mean).
pub fn describe(graph: &Graph, name: &str, value: &HostArray) -> String {
    format!("{name}: {}", value.display(graph))
}
