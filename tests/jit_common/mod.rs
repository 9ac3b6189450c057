//! Shared by the JIT tests: random inputs, running a graph on a backend, and the interpreter's
//! references for `weft_ir::testing`'s oracle (docs/testing.md).
// Each test binary uses a part of it.
#![allow(dead_code, unused_imports)]

use weft::prelude::*;
pub use weft::testing::{call_alternately, references, run, run_on, Run};
pub use weft_ir::testing::compare_runs as compare;

/// Random values for the placeholders `ps` of `g`: floats in [-2, 2), integers in [-6, 6),
/// bools half true, no special values (hand-written tests check those explicitly).
pub fn random_inputs(g: &Graph, ps: &[NodeId], seed: u64) -> Vec<HostArray> {
    weft_ir::testing::random_inputs(g, ps, seed, false)
}

/// Runs `outputs` of `g` twice (`call`, then `call_into`: [`call_alternately`]) on the JIT
/// with `options`, every placeholder an input.
pub fn run_jit(
    g: &Graph,
    outputs: &[NodeId],
    inputs: &[HostArray],
    options: JitOptions,
) -> Result<Run, Error> {
    let t = Transformer::with_jit_options(g.clone(), options)?;
    run_on(&t, outputs, &g.placeholders(), inputs, 2)
}

/// The JIT executable of `g`'s outputs given all its placeholders, compiled with `options`
/// (what `weft explain` and the plan inspections read).
pub fn jit_executable(g: &Graph, options: &JitOptions) -> weft::compiler::JitExecutable {
    weft::compiler::JitExecutable::new(
        std::sync::Arc::new(g.clone()),
        g.outputs(),
        &g.placeholders(),
        options,
    )
    .unwrap()
}

/// `weft explain` of `g`'s outputs compiled with `options`.
pub fn explain(g: &Graph, options: &JitOptions) -> String {
    weft::compiler::explain::explain(&jit_executable(g, options))
}

/// `relu(X·W + b)` with X over `[B, I]` (or `[I, B]` if `x_t`) and W over `[I, O]` (or
/// `[O, I]` if `w_t`): one MLP layer, the GEMM path's standard case.
pub fn mlp_layer(b: usize, i: usize, o: usize, dtype: DType, x_t: bool, w_t: bool) -> Graph {
    let mut g = Graph::new();
    let (ba, ia, oa) = (
        g.axis("B", b).unwrap(),
        g.axis("I", i).unwrap(),
        g.axis("O", o).unwrap(),
    );
    let x = g
        .placeholder("X", &if x_t { [ia, ba] } else { [ba, ia] }, dtype)
        .unwrap();
    let w = g
        .placeholder("W", &if w_t { [oa, ia] } else { [ia, oa] }, dtype)
        .unwrap();
    let bias = g.placeholder("b", &[oa], dtype).unwrap();
    let h = g.dot(x, w).unwrap();
    let hb = g.binary(weft::BinaryOp::Add, h, bias).unwrap();
    let out = g.unary(weft::UnaryOp::Relu, hb).unwrap();
    g.mark_output(out).unwrap();
    g
}

/// `outputs` of `g` on the JIT, fused and unfused, against the interpreter's references with
/// `g`'s tolerance (`weft_ir::testing`'s oracle); the failure names the backend and prints `g`.
pub fn check_backends(
    g: &Graph,
    outputs: &[NodeId],
    inputs: &[HostArray],
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::test_runner::TestCaseError;
    let ps = g.placeholders();
    let tol = weft_ir::testing::Tolerance::for_graph(g);
    let refs = references(g, outputs, &ps, inputs, 1, &tol).unwrap();
    for backend in [Backend::Jit, Backend::JitUnfused] {
        let got = run(g, outputs, &ps, inputs, 1, backend).map_err(|e| {
            TestCaseError::fail(format!(
                "{backend:?} failed: {e}\n{}",
                weft_ir::text::print(g)
            ))
        })?;
        compare(&got, &refs, &tol).map_err(|m| {
            TestCaseError::fail(format!(
                "{backend:?} differs: {m}\n{}",
                weft_ir::text::print(g)
            ))
        })?;
    }
    Ok(())
}
