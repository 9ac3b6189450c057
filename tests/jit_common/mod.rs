//! Shared by the JIT tests: random inputs, running a graph on a backend, and the interpreter's
//! references for `weft_ir::testing`'s oracle (docs/testing.md).
#![allow(dead_code)]

use weft::prelude::*;
use weft::Perturbation;
pub use weft_ir::testing::{compare_runs as compare, Run};
use weft_ir::testing::{state_nodes, Tolerance, PERTURBED_REFERENCES};

/// Random values for the placeholders `ps` of `g`: floats in [-2, 2), integers in [-6, 6),
/// bools half true, no special values (hand-written tests check those explicitly).
pub fn random_inputs(g: &Graph, ps: &[NodeId], seed: u64) -> Vec<HostArray> {
    weft_ir::testing::random_inputs(g, ps, seed, false)
}

/// Runs `outputs` of `g` `calls` times on `backend` with `inputs`.
pub fn run(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
    backend: Backend,
) -> Result<Run, Error> {
    let t = Transformer::new(g.clone(), backend)?;
    run_on(&t, outputs, ps, inputs, calls)
}

fn run_on(
    t: &Transformer,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
) -> Result<Run, Error> {
    let c = t.computation(outputs, ps)?;
    let mut results = Vec::new();
    for _ in 0..calls {
        results.push(c.call(inputs)?);
    }
    let state = state_nodes(t.graph())
        .iter()
        .map(|id| t.value_of(*id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((results, state))
}

/// The interpreter's runs the oracle compares with: on `inputs` (the base), then with every float
/// entering the computation nudged by `tol.perturbation` (`Transformer::perturbed_interpreter`,
/// docs/testing.md).
pub fn references(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
    tol: &Tolerance,
) -> Result<Vec<Run>, Error> {
    let mut runs = vec![run(g, outputs, ps, inputs, calls, Backend::Interpreter)?];
    for k in 1..=PERTURBED_REFERENCES {
        let p = Perturbation {
            seed: k,
            rel: tol.perturbation,
        };
        let t = Transformer::perturbed_interpreter(g.clone(), p)?;
        runs.push(run_on(&t, outputs, ps, inputs, calls)?);
    }
    Ok(runs)
}
