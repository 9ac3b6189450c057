//! `weft graph`: the graph as a picture, DOT or SVG (drawn by the pure-Rust `layout-rs`, no
//! system Graphviz needed).

use std::sync::Arc;

use std::collections::HashMap;
use std::fmt::Write;

use weft_compiler::picture::{node_label, node_style, NodeKind, Picture};
use weft_compiler::{JitExecutable, JitOptions};
use weft_ir::{Graph, NodeId};

use crate::Error;

/// Which graph `weft graph` draws.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphStage {
    /// The graph as given.
    Input,
    /// The simplified graph with its fusion groups as clusters and stored tensors marked.
    Fused,
}

/// The picture's format.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphFormat {
    /// Graphviz DOT text (clusters per kernel).
    Dot,
    /// SVG, laid out by layout-rs, each kernel a dashed box around its nodes with its name.
    Svg,
}

/// The picture of `graph` at `stage` in `format`.
pub fn picture(graph: Graph, stage: GraphStage, format: GraphFormat) -> Result<String, Error> {
    graph.verify()?;
    let pic = match stage {
        GraphStage::Input => Picture::new(&graph, None),
        GraphStage::Fused => {
            if graph.outputs().is_empty() {
                return Err(Error::NoOutputs);
            }
            let (outputs, placeholders) = (graph.outputs().to_vec(), graph.placeholders());
            let exe = JitExecutable::new(
                Arc::new(graph),
                &outputs,
                &placeholders,
                &JitOptions::default(),
            )
            .map_err(Error::Compile)?;
            let plan = exe.compiled_plan();
            Picture::new(&plan.simplified.graph, Some(&plan.fusion))
        }
    };
    match format {
        GraphFormat::Dot => Ok(pic.dot()),
        GraphFormat::Svg => svg(&pic),
    }
}

/// The most edges `--format svg` lays out (the digits MLP's training graph has 117).
pub const SVG_MAX_EDGES: usize = 400;

/// Font size of node labels in the SVG.
const FONT: usize = 12;
/// Margin around a kernel's nodes, and room for its name above them.
const KERNEL_MARGIN: f64 = 10.0;
const KERNEL_TITLE: f64 = 16.0;

fn svg(pic: &Picture) -> Result<String, Error> {
    // layout-rs takes tens of seconds on graphs of hundreds of edges and then may panic on
    // their geometry ("Can't normalize the unit vector"): larger graphs are refused at once,
    // and a panic below that is contained and reported, both naming the way out.
    if pic.edges.len() > SVG_MAX_EDGES {
        return Err(Error::Picture {
            message: format!(
                "{} edges are more than the built-in SVG layout draws ({SVG_MAX_EDGES}); \
                 write DOT with `--format dot` and draw it with Graphviz",
                pic.edges.len()
            ),
        });
    }
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let drawn = std::panic::catch_unwind(|| lay_out(pic));
    std::panic::set_hook(hook);
    drawn.map_err(|_| Error::Picture {
        message: "the SVG layout failed on this graph (layout-rs); write DOT with `--format dot` \
                  and draw it with Graphviz"
            .into(),
    })
}

/// Lays the picture out with layout-rs and writes the SVG: the nodes and edges as layout-rs
/// draws them, then each kernel as a dashed box around its nodes with its name, and a canvas
/// cut to what is drawn.
fn lay_out(pic: &Picture) -> String {
    use layout::backends::svg::SVGWriter;
    use layout::core::base::Orientation;
    use layout::core::color::Color;
    use layout::core::geometry::{get_size_for_str, pad_shape_scalar};
    use layout::core::style::StyleAttr;
    use layout::std_shapes::shapes::{Arrow, Element, ShapeKind};
    use layout::topo::layout::VisualGraph;
    let mut vg = VisualGraph::new(Orientation::TopToBottom);
    let mut handles = HashMap::new();
    for n in &pic.nodes {
        let text = node_label(n).join("\n");
        let (fill, border, width) = node_style(n);
        let rounded = usize::from(matches!(n.kind, NodeKind::Computed(_))) * 6;
        let look = StyleAttr::new(
            Color::fast(border),
            width,
            Some(Color::fast(fill)),
            rounded,
            FONT,
        );
        let size = pad_shape_scalar(get_size_for_str(&text, FONT), 10.0);
        let shape = ShapeKind::new_box(&text);
        let elem = Element::create(shape, look, Orientation::LeftToRight, size);
        handles.insert(n.id, vg.add_node(elem));
    }
    for (from, to) in &pic.edges {
        vg.add_edge(Arrow::simple(""), handles[from], handles[to]);
    }
    let mut writer = SVGWriter::new();
    vg.do_it(false, false, false, &mut writer);
    let boxes: HashMap<NodeId, (f64, f64, f64, f64)> = handles
        .iter()
        .map(|(id, h)| {
            let (a, b) = vg.pos(*h).bbox(false);
            (*id, (a.x, a.y, b.x, b.y))
        })
        .collect();
    let mut extra = String::new();
    for k in &pic.kernels {
        let Some((x0, y0, x1, y1)) = k
            .nodes
            .iter()
            .filter_map(|id| boxes.get(id))
            .copied()
            .reduce(|(a, b, c, d), (e, f, g, h)| (a.min(e), b.min(f), c.max(g), d.max(h)))
        else {
            continue;
        };
        let (x0, y0) = (x0 - KERNEL_MARGIN, y0 - KERNEL_MARGIN - KERNEL_TITLE);
        let (x1, y1) = (x1 + KERNEL_MARGIN, y1 + KERNEL_MARGIN);
        let _ = writeln!(
            extra,
            "<g class=\"kernel\"><rect x=\"{x0}\" y=\"{y0}\" width=\"{}\" height=\"{}\" \
             fill=\"none\" stroke=\"#6b7280\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\" \
             rx=\"8\"/><text x=\"{}\" y=\"{}\" font-family=\"Helvetica\" font-size=\"11\" \
             fill=\"#374151\">{}</text></g>",
            x1 - x0,
            y1 - y0,
            x0 + 6.0,
            y0 + 12.0,
            escape_xml(&k.label)
        );
    }
    let (w, h) = boxes
        .values()
        .fold((0.0f64, 0.0f64), |(w, h), b| (w.max(b.2), h.max(b.3)));
    let margin = KERNEL_MARGIN * 2.0;
    fit_canvas(&writer.finalize(), &extra, w + margin, h + margin)
}

/// `svg` with `extra` drawn last and its canvas set to `w` × `h` (layout-rs grows its canvas
/// by each label's character count, leaving space below the graph).
fn fit_canvas(svg: &str, extra: &str, w: f64, h: f64) -> String {
    let open = svg.find("<svg ").unwrap_or(0);
    let open_end = svg[open..].find('>').map_or(open, |i| open + i + 1);
    let close = svg.rfind("</svg>").unwrap_or(svg.len());
    format!(
        "{}<svg width=\"{w:.0}\" height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" \
         xmlns=\"http://www.w3.org/2000/svg\">{}{extra}{}",
        &svg[..open],
        &svg[open_end..close],
        &svg[close..]
    )
}

fn escape_xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
