//! `weft compile`: compiles a graph's outputs on the JIT and writes one numbered file per
//! stage (weft_compiler::dump) into a folder, with an index.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use weft_compiler::dump::{dump_stages, write_dump};
use weft_compiler::{JitExecutable, JitOptions};
use weft_ir::Graph;

use crate::Error;

/// Compiles every marked output of `graph` given all its placeholders, and dumps each stage
/// whose name matches `pass` (all without it) into `dir`. Returns the files written.
pub fn compile_and_dump(
    graph: Graph,
    dir: &Path,
    pass: Option<&str>,
    unfused: bool,
) -> Result<Vec<PathBuf>, Error> {
    let filter = pass
        .map(|p| {
            regex::Regex::new(p).map_err(|e| Error::DumpPattern {
                pattern: p.to_string(),
                message: e.to_string(),
            })
        })
        .transpose()?;
    let (graph, exe) = compile(graph, unfused)?;
    let files = dump_stages(&exe.stages(&graph))?;
    Ok(write_dump(dir, &files, |f| {
        filter
            .as_ref()
            .is_none_or(|r| r.is_match(&f.stage) || r.is_match(&f.name))
    })?)
}

/// Compiles every marked output of `graph` given all its placeholders on the JIT.
pub fn compile(graph: Graph, unfused: bool) -> Result<(Arc<Graph>, JitExecutable), Error> {
    graph.verify()?;
    if graph.outputs().is_empty() {
        return Err(Error::NoOutputs);
    }
    let options = if unfused {
        JitOptions::unfused()
    } else {
        JitOptions::default()
    };
    let (outputs, placeholders) = (graph.outputs().to_vec(), graph.placeholders());
    let graph = Arc::new(graph);
    let exe = JitExecutable::new(graph.clone(), &outputs, &placeholders, &options)
        .map_err(Error::Compile)?;
    Ok((graph, exe))
}
