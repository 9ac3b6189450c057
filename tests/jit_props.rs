//! Random graphs (views, slices with negative steps, pads, concats, reductions, dots, every
//! dtype, lengths 1 and non-multiples of the vector width, variables with assigns) run on the
//! JIT, fused and unfused, and on the interpreter; results agree within the tolerances of
//! docs/testing.md, across two calls (so assigned state is checked too).
//! `PROPTEST_CASES=5000 cargo test --release --test jit_props` runs longer.

mod jit_common;

use jit_common::{compare, random_inputs, run};
use proptest::prelude::*;
use weft::prelude::*;
use weft_ir::testing::{arb_graph_with, GraphConfig};

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
