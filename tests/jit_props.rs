//! Random graphs (views, slices with negative steps, pads, concats, reductions, dots, every
//! dtype, lengths 1 and non-multiples of the vector width, variables with assigns) run on the
//! JIT, fused and unfused, and on the interpreter; results agree within the tolerances of
//! docs/testing.md, across two calls (so assigned state is checked too). A third JIT run forces
//! every kernel parallel and row kernels into two chunks of rows.
//! `PROPTEST_CASES=5000 cargo test --release --test jit_props` runs longer.

mod jit_common;

use jit_common::{compare, random_inputs, run};
use proptest::prelude::*;
use weft::prelude::*;
use weft_compiler::{JitExecutable, JitOptions, LowerOptions};
use weft_ir::testing::{arb_graph_with, GraphConfig};
use weft_runtime::{Executable, State};

/// Runs `outputs` twice on the JIT lowered so that every kernel with two or more outer
/// iterations is parallel, and row kernels split into two chunks of rows (small random graphs
/// never reach the default thresholds).
fn run_forced_parallel(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
) -> Result<Vec<Vec<HostArray>>, String> {
    let options = JitOptions {
        lower: LowerOptions {
            parallel_min_points: 1,
            parallel_max_chunks: 2,
            ..LowerOptions::default()
        },
        ..JitOptions::default()
    };
    let exe = JitExecutable::new(std::sync::Arc::new(g.clone()), outputs, ps, &options)
        .map_err(|e| e.to_string())?;
    let mut state = State::initial(g).map_err(|e| e.to_string())?;
    (0..2)
        .map(|_| exe.run(inputs, &mut state).map_err(|e| e.to_string()))
        .collect()
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

fn check(g: &Graph, seed: u64) -> Result<(), TestCaseError> {
    // The marked outputs and the last node (a requested output the graph does not mark).
    let mut outputs = g.outputs().to_vec();
    match g.nodes().last() {
        Some((id, _)) if !outputs.contains(&id) => outputs.push(id),
        None => return Ok(()),
        _ => {}
    }
    let ps = g.placeholders();
    let inputs = random_inputs(g, &ps, seed);
    let interp = match run(g, &outputs, &ps, &inputs, 2, Backend::Interpreter) {
        Ok(r) => r,
        // The interpreter refuses it: nothing to compare.
        Err(_) => return Ok(()),
    };
    for backend in [Backend::Jit, Backend::JitUnfused] {
        let jit = run(g, &outputs, &ps, &inputs, 2, backend).map_err(|e| {
            TestCaseError::fail(format!(
                "{backend:?} failed: {e}\n{}",
                weft_ir::text::print(g)
            ))
        })?;
        compare(&jit, &interp, jit_common::rtol(g)).map_err(|m| {
            TestCaseError::fail(format!(
                "{backend:?} differs from the interpreter: {m}\n{}",
                weft_ir::text::print(g)
            ))
        })?;
    }
    let forced = run_forced_parallel(g, &outputs, &ps, &inputs).map_err(|e| {
        TestCaseError::fail(format!(
            "forced-parallel JIT failed: {e}\n{}",
            weft_ir::text::print(g)
        ))
    })?;
    compare(&(forced, interp.1.clone()), &interp, jit_common::rtol(g)).map_err(|m| {
        TestCaseError::fail(format!(
            "forced-parallel JIT differs from the interpreter: {m}\n{}",
            weft_ir::text::print(g)
        ))
    })?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn jit_matches_the_interpreter(
        g in arb_graph_with(GraphConfig::compilable()),
        seed in any::<u64>(),
    ) {
        check(&g, seed)?;
    }
}
