//! The reference interpreter as the oracle: random inputs, runs, and exact comparison.
#![allow(dead_code)]

use std::sync::Arc;
use weft_ir::{ArrayData, DType, Graph, HostArray, NodeId};
use weft_runtime::{Executable, Interpreter, State};

/// A deterministic pseudo-random source (no dependency needed for tests).
pub struct Lcg(pub u64);

impl Lcg {
    /// A value in [-2, 2).
    pub fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as f64 / (1u64 << 31) as f64) * 4.0 - 2.0
    }
}

/// Random values for every placeholder of `g`, in placeholder order.
pub fn random_inputs(g: &Graph, seed: u64) -> Vec<HostArray> {
    let mut r = Lcg(seed);
    g.placeholders()
        .into_iter()
        .map(|p| {
            let n = g.node(p);
            let shape = g.shape_of(&n.axes).unwrap();
            let len: usize = shape.iter().product();
            let data = match n.dtype {
                DType::F32 => ArrayData::F32((0..len).map(|_| r.next() as f32).collect()),
                DType::F64 => ArrayData::F64((0..len).map(|_| r.next()).collect()),
                DType::I32 => ArrayData::I32((0..len).map(|_| (r.next() * 3.0) as i32).collect()),
                DType::I64 => ArrayData::I64((0..len).map(|_| (r.next() * 3.0) as i64).collect()),
                DType::Bool => ArrayData::Bool((0..len).map(|_| r.next() > 0.0).collect()),
            };
            HostArray::new(n.axes.clone(), shape, data).unwrap()
        })
        .collect()
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
