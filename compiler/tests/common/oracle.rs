//! The reference interpreter as the oracle: random inputs (from `weft_oracle`), runs, and
//! exact comparison (passes must not change a bit; backends are judged by
//! `weft_oracle::compare_arrays`).
#![allow(dead_code)]

use std::sync::Arc;
use weft_ir::{Graph, HostArray, NodeId};
use weft_runtime::{Executable, Interpreter, State};

/// Random values for every placeholder of `g`, in placeholder order: ordinary values, or with
/// `special` also ±0, ±inf, NaN, subnormals, huge values and integer extremes
/// (`weft_oracle::random_inputs`, shared with the JIT tests and the fuzzer).
pub fn random_inputs_with(g: &Graph, seed: u64, special: bool) -> Vec<HostArray> {
    weft_oracle::random_inputs(g, &g.placeholders(), seed, special)
}

/// Ordinary random values for every placeholder of `g` (hand-written graphs).
pub fn random_inputs(g: &Graph, seed: u64) -> Vec<HostArray> {
    random_inputs_with(g, seed, false)
}

/// Runs `outputs` of `g` with the interpreter, placeholders fed in placeholder order.
pub fn interpret(g: &Graph, outputs: &[NodeId], inputs: &[HostArray]) -> Vec<HostArray> {
    let g = Arc::new(g.clone());
    let interp = Interpreter::new(g.clone(), outputs, &g.placeholders()).unwrap();
    let mut state = State::initial(&g).unwrap();
    interp.run(inputs, &mut state).unwrap()
}

/// Bit-for-bit equality (NaN equal to NaN of any payload).
pub fn same_bits(a: &HostArray, b: &HostArray) -> bool {
    if a.axes() != b.axes() || a.shape() != b.shape() || a.dtype() != b.dtype() {
        return false;
    }
    (0..a.len()).all(|i| {
        let (x, y) = (a.data().get(i).unwrap(), b.data().get(i).unwrap());
        match (x, y) {
            (weft_ir::Scalar::Float(x), weft_ir::Scalar::Float(y)) => {
                (x.is_nan() && y.is_nan()) || x.to_bits() == y.to_bits()
            }
            _ => x == y,
        }
    })
}
