//! Random graphs (views, slices with negative steps, pads, concats, reductions, dots, every
//! dtype, lengths 1 and non-multiples of the vector width, variables with assigns) run on the
//! JIT, fused and unfused (unfused with constant folding off, so its kernels compute the
//! constant-only subgraphs), and on the interpreter, with special values among the inputs; results
//! agree by `weft_oracle`'s oracle (docs/testing.md), across two calls (so assigned state
//! is checked too). A third JIT run forces every kernel parallel, row kernels into two chunks
//! of rows and reductions to few results into two parallel chunks. Small graphs (≈ 11 nodes)
//! and large ones (100–400 node steps). Each test counts the cases it compared
//! (`weft_oracle::run_property`) and fails under a minimum share.
//! `PROPTEST_CASES=5000 cargo test --release --test jit_props` runs longer.

mod jit_common;

use jit_common::{compare, references, run, run_jit};
use proptest::prelude::*;
use weft::prelude::*;
use weft_compiler::{JitExecutable, JitOptions};
use weft_oracle::{
    arb_graph_with, large_cases, observed_outputs, proptest_cases, run_property, small_enough,
    GraphConfig, Tally, Tolerance, PROP_MAX_ELEMENTS, PROP_MAX_TOTAL_ELEMENTS,
};
use weft_runtime::{Executable, State};

/// Runs `outputs` twice on the JIT lowered so that every kernel with two or more outer
/// iterations is parallel, row kernels split into two chunks of rows, and every reassociable
/// reduction to few results whose leading axis has even length is split into two parallel
/// chunks (small random graphs never reach the default thresholds).
fn run_forced_parallel(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
) -> Result<Vec<Vec<HostArray>>, String> {
    let options = JitOptions::forced_parallel();
    let exe = JitExecutable::new(std::sync::Arc::new(g.clone()), outputs, ps, &options)
        .map_err(|e| e.to_string())?;
    let mut state = State::initial(g).map_err(|e| e.to_string())?;
    (0..2)
        .map(|_| exe.run(inputs, &mut state).map_err(|e| e.to_string()))
        .collect()
}

/// The unfused JIT with constant folding off: the kernels compute constant-only subgraphs
/// (one leaf in five of a random graph is a constant) rather than copying the values the
/// interpreter folded at compile time, which would compare the interpreter with itself.
fn unfused_unfolded() -> JitOptions {
    JitOptions {
        fold_constants: false,
        ..JitOptions::unfused()
    }
}

/// Runs `g` on every backend with random inputs (special values included) and compares each
/// with the interpreter's references; the observed outputs vary with `seed` (every node, or a
/// random subset with the marked outputs and the last node). Records in `tally` whether it
/// compared.
fn check(g: &Graph, seed: u64, tally: &Tally) -> Result<(), TestCaseError> {
    // Random graphs can broadcast to billions of elements: redrawn, not run out of memory.
    prop_assume!(small_enough(g, PROP_MAX_ELEMENTS, PROP_MAX_TOTAL_ELEMENTS));
    // An empty graph (about one draw in thirty) has nothing to observe: redrawn.
    let outputs = observed_outputs(g, seed);
    prop_assume!(!outputs.is_empty());
    let ps = g.placeholders();
    let inputs = weft_oracle::random_inputs(g, &ps, seed, true);
    let tol = Tolerance::for_graph(g);
    let refs = match references(g, &outputs, &ps, &inputs, 2, &tol) {
        Ok(r) => r,
        // The interpreter refuses it: nothing to compare (counted, and held to a share).
        Err(_) => {
            tally.skipped("interpreter refuses");
            return Ok(());
        }
    };
    let fail = |what: String| {
        TestCaseError::fail(format!("{what} (seed {seed})\n{}", weft_ir::text::print(g)))
    };
    let fused = run(g, &outputs, &ps, &inputs, 2, Backend::Jit);
    let unfused = run_jit(g, &outputs, &inputs, unfused_unfolded());
    for (what, jit) in [("fused", fused), ("unfused, unfolded", unfused)] {
        let jit = jit.map_err(|e| fail(format!("{what} JIT failed: {e}")))?;
        compare(&jit, &refs, &tol)
            .map_err(|m| fail(format!("{what} JIT differs from the interpreter: {m}")))?;
    }
    let forced = run_forced_parallel(g, &outputs, &ps, &inputs)
        .map_err(|e| fail(format!("forced-parallel JIT failed: {e}")))?;
    compare(&(forced, refs[0].1.clone()), &refs, &tol).map_err(|m| {
        fail(format!(
            "forced-parallel JIT differs from the interpreter: {m}"
        ))
    })?;
    tally.compared();
    Ok(())
}

#[test]
fn jit_matches_the_interpreter() {
    // 500 of 500 compared on CI's seed (docs/testing.md, "Cases compared").
    run_property(
        "jit_props::jit_matches_the_interpreter",
        file!(),
        proptest_cases(500),
        0.95,
        (arb_graph_with(GraphConfig::compilable()), any::<u64>()),
        |(g, seed), tally| check(&g, seed, tally),
    );
}

/// Each graph has 100 to 400 node steps. Too slow for a debug build (CI's seed did not finish
/// two cases in 10 minutes there): CI runs `cargo test --release --test
/// jit_props -- --ignored` (docs/testing.md).
#[test]
#[ignore = "minutes per case in a debug build: run with --release -- --ignored"]
fn large_graphs_match_the_interpreter() {
    run_property(
        "jit_props::large_graphs_match_the_interpreter",
        file!(),
        large_cases(500),
        0.9,
        (arb_graph_with(GraphConfig::large()), any::<u64>()),
        |(g, seed), tally| check(&g, seed, tally),
    );
}
