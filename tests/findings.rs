//! Every reproducer in `tests/findings/` (bugs found from outside: fuzzing, limit tests; see
//! `../shared/findings/README.md` where it exists) run on every backend: the interpreter, the
//! fused JIT and the unfused JIT. Each must end in a correct result or a typed error — never a
//! panic, an abort or a hang. Where the interpreter computes a result, both JIT backends must
//! compute the same one (docs/testing.md's comparison); where it refuses the graph with a typed
//! error, the JIT may refuse it too or compute it.
//!
//! Many reproducers mark no output (the fuzzer chose them): each file is run with its marked
//! outputs plus its last node requested, and, when it is small, with every node requested, so
//! each intermediate is observed. Axes declared without a length are bound to 3.
//! Dropping a new `.weft` file into `tests/findings/` makes it a regression test;
//! `WEFT_FINDINGS=substring` runs only the files whose name contains it.

mod jit_common;

use jit_common::{compare, random_inputs, rtol, run};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use weft::ir::{text, AxisDef};
use weft::prelude::*;

/// Longest a reproducer may take on all backends and output sets together (a debug build).
const TIME_LIMIT: Duration = Duration::from_secs(120);
/// Graphs up to this many nodes are also run with every node requested as an output.
const EVERY_NODE_LIMIT: usize = 300;

fn findings() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/findings");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .filter(|p| match std::env::var("WEFT_FINDINGS") {
            Ok(f) => p
                .file_name()
                .is_some_and(|n| n.to_string_lossy().contains(&f)),
            Err(_) => true,
        })
        .collect();
    files.sort();
    files
}

/// Parses `path` and binds every unbound declared axis to 3.
fn load(path: &Path) -> Result<Graph, String> {
    let src = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut g = text::parse(&src, &path.display().to_string()).map_err(|e| e.to_string())?;
    let unbound: Vec<_> = g
        .axis_table()
        .filter(|(_, d)| matches!(d.def, AxisDef::Base { len: None }))
        .map(|(id, _)| id)
        .collect();
    for id in unbound {
        let axis = g
            .axis_table()
            .find(|(a, _)| *a == id)
            .and_then(|(_, d)| g.find_axis(&d.name))
            .ok_or("unbound axis not found by name")?;
        g.bind(axis, 3).map_err(|e| e.to_string())?;
    }
    Ok(g)
}

/// The output sets a reproducer is run with.
fn output_sets(g: &Graph) -> Vec<Vec<NodeId>> {
    let mut marked = g.outputs().to_vec();
    if let Some((last, _)) = g.nodes().last() {
        if !marked.contains(&last) {
            marked.push(last);
        }
    }
    let mut sets = vec![marked];
    if g.len() <= EVERY_NODE_LIMIT {
        sets.push(g.nodes().map(|(id, _)| id).collect());
    }
    sets
}

/// Runs one reproducer; `Err` says what went wrong. Panics propagate to the caller.
fn check(path: &Path) -> Result<(), String> {
    let g = match load(path) {
        Ok(g) => g,
        // A typed parse or bind error is an acceptable end.
        Err(_) => return Ok(()),
    };
    if g.verify().is_err() || g.is_empty() {
        return Ok(());
    }
    let ps = g.placeholders();
    for outputs in output_sets(&g) {
        let inputs = random_inputs(&g, &ps, 5);
        let interp = run(&g, &outputs, &ps, &inputs, 2, Backend::Interpreter);
        for backend in [Backend::Jit, Backend::JitUnfused] {
            let jit = run(&g, &outputs, &ps, &inputs, 2, backend);
            match (&interp, jit) {
                (Ok(expected), Ok(got)) => compare(&got, expected, rtol(&g)).map_err(|m| {
                    format!("{backend:?} differs from the interpreter ({outputs:?}): {m}")
                })?,
                (Ok(_), Err(e)) => {
                    return Err(format!(
                        "{backend:?} refuses what the interpreter runs ({outputs:?}): {e}"
                    ))
                }
                (Err(_), _) => {}
            }
        }
    }
    Ok(())
}

#[test]
fn every_finding_ends_in_a_correct_result_or_a_typed_error() {
    let files = findings();
    assert!(!files.is_empty(), "tests/findings/ holds no reproducers");
    let mut failures = Vec::new();
    for path in files {
        let (tx, rx) = mpsc::channel();
        let p = path.clone();
        std::thread::Builder::new()
            .name(format!("finding {}", p.display()))
            .spawn(move || {
                let outcome = catch_unwind(AssertUnwindSafe(|| check(&p)))
                    .unwrap_or_else(|_| Err("panicked".into()));
                let _ = tx.send(outcome);
            })
            .unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        match rx.recv_timeout(TIME_LIMIT) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(format!("{name}: {e}")),
            // The thread is left running; the test fails and the process ends with it.
            Err(_) => failures.push(format!("{name}: no result in {TIME_LIMIT:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
