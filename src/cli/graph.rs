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

fn svg(dot: &str) -> Result<String, Error> {
    use layout::backends::svg::SVGWriter;
    use layout::gv::{DotParser, GraphBuilder};
    let mut parser = DotParser::new(dot);
    let ast = parser
        .process()
        .map_err(|e| Error::Picture { message: e })?;
    let mut builder = GraphBuilder::new();
    builder.visit_graph(&ast);
    let mut visual = builder.get();
    let mut writer = SVGWriter::new();
    visual.do_it(false, false, false, &mut writer);
    Ok(writer.finalize())
}
