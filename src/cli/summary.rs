//! Human-readable reports: the inferred axes of every tensor (`weft check`) and short
//! summaries of output arrays (`weft run`).

use crate::Error;
use std::fmt::Write;
use weft_ir::host::write_float;
use weft_ir::{Axes, Graph, HostArray, Scalar};

/// Axes with lengths: `(H=2, W=3)`; unbound lengths print as `?`.
pub fn axes_with_lengths(graph: &Graph, axes: &Axes) -> String {
    let parts: Vec<String> = axes
        .iter()
        .map(|a| match graph.axis_len(*a) {
            Some(n) => format!("{}={n}", graph.axis_name(*a)),
            None => format!("{}=?", graph.axis_name(*a)),
        })
        .collect();
    format!("({})", parts.join(", "))
}

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
            axes_with_lengths(graph, &node.axes),
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

fn scalar_text(v: Scalar) -> String {
    let mut s = String::new();
    match v {
        Scalar::Float(f) => {
            if f.is_finite() && f != 0.0 && (f.abs() >= 1e6 || f.abs() < 1e-4) {
                let _ = write!(s, "{f:.6e}");
            } else if f.is_finite() {
                let _ = write!(s, "{}", trim_float(f));
            } else {
                let _ = write_float(&mut s, f);
            }
        }
        other => s = other.to_string(),
    }
    s
}

fn trim_float(f: f64) -> String {
    let t = format!("{f:.6}");
    let t = t.trim_end_matches('0');
    let t = t.strip_suffix('.').unwrap_or(t);
    if t == "-0" {
        "0".into()
    } else {
        t.to_string()
    }
}

/// A summary of one output: its axes and dtype, the values in full when there are at most 64
/// (nested by axis), else the first values and min / max / mean.
pub fn describe(graph: &Graph, name: &str, value: &HostArray) -> String {
    let mut s = format!(
        "{name}: {} {}",
        value.dtype(),
        axes_with_lengths(graph, value.axes())
    );
    let data = value.data();
    let n = data.len();
    if n == 0 {
        // No elements: the nesting of an empty axis inside long ones would be all brackets.
        s.push_str(" = []");
    } else if n <= 64 {
        s.push_str(" =\n  ");
        s.push_str(&nested(value.shape(), &|i| {
            scalar_text(data.get(i).unwrap_or(Scalar::Float(f64::NAN)))
        }));
    } else {
        let first: Vec<String> = (0..8)
            .filter_map(|i| data.get(i).map(scalar_text))
            .collect();
        let vals: Vec<f64> = (0..n)
            .filter_map(|i| data.get(i).map(|v| v.as_f64()))
            .collect();
        let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mean = vals.iter().sum::<f64>() / n as f64;
        let _ = write!(
            s,
            "\n  first: [{}, ...]\n  min {}  max {}  mean {}",
            first.join(", "),
            scalar_text(Scalar::Float(min)),
            scalar_text(Scalar::Float(max)),
            scalar_text(Scalar::Float(mean))
        );
    }
    s
}

fn nested(shape: &[usize], item: &dyn Fn(usize) -> String) -> String {
    fn go(shape: &[usize], base: usize, item: &dyn Fn(usize) -> String, depth: usize) -> String {
        match shape.split_first() {
            None => item(base),
            Some((&n, rest)) => {
                let inner: usize = rest.iter().product();
                let sep = if rest.is_empty() {
                    ", ".to_string()
                } else {
                    format!(",\n{}", " ".repeat(depth + 3))
                };
                let parts: Vec<String> = (0..n)
                    .map(|i| go(rest, base + i * inner, item, depth + 1))
                    .collect();
                format!("[{}]", parts.join(&sep))
            }
        }
    }
    go(shape, 0, item, 0)
}
