//! Shared by the JIT tests: random inputs, running a graph on a backend, and the comparison of
//! JIT results with the interpreter's within the tolerances documented in docs/testing.md.
#![allow(dead_code)]

use weft::prelude::*;
use weft::Op;

/// A deterministic pseudo-random source.
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

/// Random values for the placeholders `ps` of `g`: floats in [-2, 2), integers in [-6, 6),
/// bools half true.
pub fn random_inputs(g: &Graph, ps: &[NodeId], seed: u64) -> Vec<HostArray> {
    let mut r = Lcg(seed);
    ps.iter()
        .map(|p| {
            let n = g.node(*p);
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

/// The outputs after each of `calls` calls, and the final value of every variable and
/// persistent tensor, on `backend`.
pub type Run = (Vec<Vec<HostArray>>, Vec<HostArray>);

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
    let c = t.computation(outputs, ps)?;
    let mut results = Vec::new();
    for _ in 0..calls {
        results.push(c.call(inputs)?);
    }
    let state = g
        .nodes()
        .filter(|(_, n)| {
            matches!(
                n.op,
                Op::Tensor {
                    kind: TensorKind::Variable | TensorKind::PersistentTensor,
                    ..
                }
            )
        })
        .map(|(id, _)| t.value_of(id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((results, state))
}

/// Relative tolerance of float results of `g`: f32 computation may differ by rounding in f32
/// (the interpreter rounds once from f64), polynomial transcendental functions (≤ 4 ulp) and
/// reduction order; f64 only by the last two. A graph with any f32 node gets the f32 tolerance
/// for every float output, since f32 errors reach f64 results through `convert`.
pub fn rtol(g: &Graph) -> f64 {
    if g.nodes().any(|(_, n)| n.dtype == DType::F32) {
        2e-4
    } else {
        1e-9
    }
}

/// Whether `jit` matches the interpreter's `reference` element `y`, allowing an absolute error of
/// `rtol · scale` (scale: the largest magnitude in the reference array, at least 1, so
/// cancellation near zero is judged against the size of what cancelled).
pub fn close(x: f64, y: f64, rtol: f64, scale: f64) -> bool {
    if x.is_nan() && y.is_nan() {
        return true;
    }
    if x == y {
        return true;
    }
    if x.is_nan() || y.is_nan() || x.is_infinite() || y.is_infinite() {
        return false;
    }
    (x - y).abs() <= rtol * (y.abs() + scale)
}

/// The first element where `a` (JIT) and `b` (interpreter) differ beyond tolerance.
pub fn mismatch(a: &HostArray, b: &HostArray, tol: f64) -> Option<String> {
    if a.axes() != b.axes() || a.shape() != b.shape() || a.dtype() != b.dtype() {
        return Some(format!(
            "shape/dtype: {:?} {:?} vs {:?} {:?}",
            a.shape(),
            a.dtype(),
            b.shape(),
            b.dtype()
        ));
    }
    let scale = (0..b.len())
        .map(|i| b.data().get(i).unwrap().as_f64().abs())
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max);
    for i in 0..a.len() {
        let (x, y) = (a.data().get(i).unwrap(), b.data().get(i).unwrap());
        let ok = if a.dtype().is_float() {
            close(x.as_f64(), y.as_f64(), tol, scale)
        } else {
            x == y
        };
        if !ok {
            return Some(format!("element {i}: jit {x} vs interpreter {y}"));
        }
    }
    None
}

/// Compares two runs, naming what differs.
pub fn compare(jit: &Run, interp: &Run, tol: f64) -> Result<(), String> {
    for (call, (a, b)) in jit.0.iter().zip(&interp.0).enumerate() {
        for (k, (x, y)) in a.iter().zip(b).enumerate() {
            if let Some(m) = mismatch(x, y, tol) {
                return Err(format!("call {call}, output {k}: {m}"));
            }
        }
    }
    for (k, (x, y)) in jit.1.iter().zip(&interp.1).enumerate() {
        if let Some(m) = mismatch(x, y, tol) {
            return Err(format!("state {k}: {m}"));
        }
    }
    Ok(())
}
