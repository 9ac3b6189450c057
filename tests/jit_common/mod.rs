//! Shared by the JIT tests: random inputs, running a graph on a backend, and the interpreter's
//! references for `weft_ir::testing`'s oracle (docs/testing.md).
#![allow(dead_code)]

use weft::prelude::*;
use weft::{DataRef, Perturbation};
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

fn run_on(
    t: &Transformer,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
) -> Result<Run, Error> {
    let c = t.computation(outputs, ps)?;
    let mut results = Vec::new();
    for k in 0..calls {
        results.push(call_alternately(&c, inputs, k)?);
    }
    let state = state_nodes(t.graph())
        .iter()
        .map(|id| t.value_of(*id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((results, state))
}

/// Call `k` of `c`: `call` when `k` is even, else `call_into` arrays holding garbage
/// (`weft_ir::testing::fill_garbage`) with the inputs borrowed from copies that start 1–3
/// elements into their allocation — so every test checks that a backend writing outputs in
/// place writes every element, and that one reading inputs in place reads them at any
/// alignment.
pub fn call_alternately(
    c: &Computation,
    inputs: &[HostArray],
    k: usize,
) -> Result<Vec<HostArray>, Error> {
    if k.is_multiple_of(2) {
        return c.call(inputs);
    }
    let offset = 1 + (k / 2) % 3;
    let shifted: Vec<ArrayData> = inputs.iter().map(|a| shift(a.data(), offset)).collect();
    let views = inputs
        .iter()
        .zip(&shifted)
        .map(|(a, d)| HostView::of_data(a.axes(), a.shape(), tail(d, offset)))
        .collect::<Result<Vec<_>, _>>()?;
    let mut outputs = c.output_arrays()?;
    outputs.iter_mut().for_each(weft_ir::testing::fill_garbage);
    c.call_into(&views, &mut outputs)?;
    Ok(outputs)
}

/// `d` after `offset` default elements.
fn shift(d: &ArrayData, offset: usize) -> ArrayData {
    fn s<T: Copy + Default>(v: &[T], offset: usize) -> Vec<T> {
        let mut out = vec![T::default(); offset];
        out.extend_from_slice(v);
        out
    }
    match d {
        ArrayData::F32(v) => ArrayData::F32(s(v, offset)),
        ArrayData::F64(v) => ArrayData::F64(s(v, offset)),
        ArrayData::I32(v) => ArrayData::I32(s(v, offset)),
        ArrayData::I64(v) => ArrayData::I64(s(v, offset)),
        ArrayData::Bool(v) => ArrayData::Bool(s(v, offset)),
    }
}

/// The elements of `d` from `offset` on, borrowed.
fn tail(d: &ArrayData, offset: usize) -> DataRef<'_> {
    match d {
        ArrayData::F32(v) => DataRef::F32(&v[offset..]),
        ArrayData::F64(v) => DataRef::F64(&v[offset..]),
        ArrayData::I32(v) => DataRef::I32(&v[offset..]),
        ArrayData::I64(v) => DataRef::I64(&v[offset..]),
        ArrayData::Bool(v) => DataRef::Bool(&v[offset..]),
    }
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
