//! `weft graph`: the graph as a picture, DOT or SVG (drawn by the pure-Rust `layout-rs`, no
//! system Graphviz needed).

use std::sync::Arc;

use weft_compiler::picture::graph_dot;
use weft_compiler::{JitExecutable, JitOptions};
use weft_ir::Graph;

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
    /// SVG, laid out by layout-rs (kernels as fill colours and `[kernel kN]` in labels: it
    /// does not draw clusters).
    Svg,
}

/// The picture of `graph` at `stage` in `format`.
pub fn picture(graph: Graph, stage: GraphStage, format: GraphFormat) -> Result<String, Error> {
    graph.verify()?;
    let dot = match stage {
        GraphStage::Input => graph_dot(&graph, None),
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
            graph_dot(&plan.simplified.graph, Some(&plan.fusion))
        }
    };
    match format {
        GraphFormat::Dot => Ok(dot),
        GraphFormat::Svg => svg(&dot),
    }
}

/// The most edges `--format svg` lays out (the digits MLP's training graph has 117).
pub const SVG_MAX_EDGES: usize = 400;

fn svg(dot: &str) -> Result<String, Error> {
    use layout::backends::svg::SVGWriter;
    use layout::gv::{DotParser, GraphBuilder};
    let mut parser = DotParser::new(dot);
    let ast = parser
        .process()
        .map_err(|e| Error::Picture { message: e })?;
    // layout-rs takes tens of seconds on graphs of hundreds of edges and then may panic on
    // their geometry ("Can't normalize the unit vector"): larger graphs are refused at once,
    // and a panic below that is contained and reported, both naming the way out.
    let edges = dot.matches("->").count();
    if edges > SVG_MAX_EDGES {
        return Err(Error::Picture {
            message: format!(
                "{edges} edges are more than the built-in SVG layout draws ({SVG_MAX_EDGES}); \
                 write DOT with `--format dot` and draw it with Graphviz"
            ),
        });
    }
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let drawn = std::panic::catch_unwind(|| {
        let mut builder = GraphBuilder::new();
        builder.visit_graph(&ast);
        let mut visual = builder.get();
        let mut writer = SVGWriter::new();
        visual.do_it(false, false, false, &mut writer);
        writer.finalize()
    });
    std::panic::set_hook(hook);
    drawn.map_err(|_| Error::Picture {
        message: "the SVG layout failed on this graph (layout-rs); write DOT with `--format dot` \
                  and draw it with Graphviz"
            .into(),
    })
}
