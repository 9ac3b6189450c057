//! The comparison every backend test uses against the reference interpreter, and the inputs it
//! is fed. The tolerance and why it is what it is: docs/testing.md.
//!
//! Assumes the caller ran the interpreter on the inputs (the *base* reference) and again with
//! every float entering the computation — inputs, state, constants, conversions from integers —
//! nudged by [`weft_ir::perturb::perturb`] (the *perturbed* references: the runtime interpreter's
//! `Perturbation`). Guarantees: an element is judged
//! by its own magnitude and by how far the perturbed references moved it (its conditioning), never
//! by the magnitude of other elements; integers and bools must equal the base reference unless a
//! perturbed reference differs there too; NaN, infinities and the sign of zero must match exactly
//! unless the element is singular (a perturbed reference changes its class).

use weft_ir::dtype::DType;
use weft_ir::graph::{Graph, NodeId, Op, TensorKind};
use weft_ir::host::{ArrayData, HostArray, Scalar};

pub use weft_ir::perturb::SplitMix;

/// How closely a backend must match the interpreter (docs/testing.md, "Tolerances").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative error allowed against the element's own magnitude.
    pub rel: f64,
    /// Absolute floor: the smallest normal number of the graph's narrowest float type, where
    /// relative error stops meaning anything (gradual underflow, results flushed to zero).
    pub floor: f64,
    /// Relative size of the perturbation (of every float entering the computation) that measures each element's conditioning.
    pub perturbation: f64,
    /// How many times the perturbed references' spread an element may differ by.
    pub spread_factor: f64,
}

impl Tolerance {
    /// The tolerance for results of `g`: the f32 one when the graph has any f32 node (its errors
    /// reach f64 results through `convert`), the f64 one otherwise.
    pub fn for_graph(g: &Graph) -> Tolerance {
        if g.nodes().any(|(_, n)| n.dtype == DType::F32) {
            Tolerance::F32
        } else {
            Tolerance::F64
        }
    }

    /// Graphs with f32 nodes: 2^-12 relative (a few polynomial ulps, 2^-21 each, through a chain
    /// of ops), inputs perturbed by 2^-16 (≥ 128 f32 ulps, above any single op's error).
    pub const F32: Tolerance = Tolerance {
        rel: 1.0 / 4096.0,
        floor: f32::MIN_POSITIVE as f64,
        perturbation: 1.0 / 65536.0,
        spread_factor: 4.0,
    };

    /// Graphs computing only in f64: 2^-30 relative, inputs perturbed by 2^-40 (above the
    /// reordering error n·2^-53 of any sum the generator draws).
    pub const F64: Tolerance = Tolerance {
        rel: 1.0 / 1073741824.0,
        floor: f64::MIN_POSITIVE,
        perturbation: 1.0 / 1099511627776.0,
        spread_factor: 4.0,
    };
}

/// Values chosen for special behaviour: signed zeros, infinities, NaN, subnormals, huge.
const SPECIAL_F64: [f64; 12] = [
    0.0,
    -0.0,
    f64::INFINITY,
    f64::NEG_INFINITY,
    f64::NAN,
    5e-324,
    -2.2e-308,
    1e300,
    -1e250,
    f64::MAX,
    1e16,
    -1e-300,
];
const SPECIAL_F32: [f32; 12] = [
    0.0,
    -0.0,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    1e-45,
    -1.1e-38,
    1e30,
    -1e37,
    f32::MAX,
    1e8,
    -1e-30,
];
const SPECIAL_INT: [i64; 5] = [i64::MIN, i64::MAX, -1, 0, 1 << 40];

/// Random values for the placeholders `ps` of `g`, in that order: floats in [-2, 2), integers in
/// [-6, 6), bools half true. With `special`, half the arrays also hold about 15% special values
/// (±0, ±inf, NaN, subnormals, huge; integer extremes), so every array still mostly computes.
pub fn random_inputs(g: &Graph, ps: &[NodeId], seed: u64, special: bool) -> Vec<HostArray> {
    let mut r = SplitMix(seed);
    ps.iter()
        .map(|p| {
            let n = g.node(*p);
            let shape = g.shape_of(&n.axes).unwrap_or_default();
            let len: usize = shape.iter().product();
            let specials = special && r.chance(50);
            let data = random_data(&mut r, n.dtype, len, specials);
            HostArray::new(n.axes.clone(), shape, data).expect("shape from the graph")
        })
        .collect()
}

fn random_data(r: &mut SplitMix, dtype: DType, len: usize, specials: bool) -> ArrayData {
    let special = |r: &mut SplitMix| specials && r.chance(15);
    match dtype {
        DType::F32 => ArrayData::F32(
            (0..len)
                .map(|_| {
                    if special(r) {
                        SPECIAL_F32[r.below(SPECIAL_F32.len())]
                    } else {
                        r.unit() as f32
                    }
                })
                .collect(),
        ),
        DType::F64 => ArrayData::F64(
            (0..len)
                .map(|_| {
                    if special(r) {
                        SPECIAL_F64[r.below(SPECIAL_F64.len())]
                    } else {
                        r.unit()
                    }
                })
                .collect(),
        ),
        DType::I32 => ArrayData::I32(
            (0..len)
                .map(|_| {
                    if special(r) {
                        SPECIAL_INT[r.below(SPECIAL_INT.len())] as i32
                    } else {
                        (r.unit() * 3.0) as i32
                    }
                })
                .collect(),
        ),
        DType::I64 => ArrayData::I64(
            (0..len)
                .map(|_| {
                    if special(r) {
                        SPECIAL_INT[r.below(SPECIAL_INT.len())]
                    } else {
                        (r.unit() * 3.0) as i64
                    }
                })
                .collect(),
        ),
        DType::Bool => ArrayData::Bool((0..len).map(|_| r.chance(50)).collect()),
    }
}

/// Overwrites every element of `a` with garbage — NaN, an integer bit pattern, true — so a run
/// into `a` that leaves an element unwritten shows: the output arrays a test hands to
/// `call_into`, which kernels may write in place.
pub fn fill_garbage(a: &mut HostArray) {
    match a.dtype() {
        DType::F32 => a.as_mut_slice::<f32>().map(|v| v.fill(f32::NAN)),
        DType::F64 => a.as_mut_slice::<f64>().map(|v| v.fill(f64::NAN)),
        DType::I32 => a.as_mut_slice::<i32>().map(|v| v.fill(0x5A5A_5A5A)),
        DType::I64 => a
            .as_mut_slice::<i64>()
            .map(|v| v.fill(0x5A5A_5A5A_5A5A_5A5A)),
        DType::Bool => a.as_mut_slice::<bool>().map(|v| v.fill(true)),
    }
    .expect("the slice of the array's own dtype");
}

/// How many perturbed references a backend's run is compared with, besides the base one: runs
/// of the interpreter with its [`Perturbation`](weft_ir::perturb) seeded `1..=PERTURBED_REFERENCES`
/// (the first two nudging a backend's error one way each, the third with random signs).
pub const PERTURBED_REFERENCES: u64 = 3;

/// The variables and persistent tensors of `g`, in node order: the state a [`Run`] ends with.
pub fn state_nodes(g: &Graph) -> Vec<NodeId> {
    g.nodes()
        .filter(|(_, n)| {
            matches!(
                n.op,
                Op::Tensor {
                    kind: TensorKind::Variable | TensorKind::PersistentTensor,
                    ..
                }
            )
        })
        .map(|(id, _)| id)
        .collect()
}

/// One run of a computation: the outputs of each call, then the final value of every variable
/// and persistent tensor.
pub type Run = (Vec<Vec<HostArray>>, Vec<HostArray>);

/// Compares a backend's run with the interpreter's runs `refs` (the base first, then the
/// perturbed ones), naming the call and output, or the state, that differs.
pub fn compare_runs(got: &Run, refs: &[Run], tol: &Tolerance) -> Result<(), String> {
    compare_runs_or(got, refs, tol, |_, m| Err(m))
}

/// What a [`Run`] holds: output `k` of call `call`, or the final value of state node `k`
/// (of [`state_nodes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Observed {
    /// Output `k` of call `call`.
    Output {
        /// The call.
        call: usize,
        /// The output.
        k: usize,
    },
    /// The final value of the `k`-th state node.
    State(usize),
}

/// [`compare_runs`], with a second judgement of a part that differs: `recheck(part, message)`
/// may accept it (`Ok`) or name why not. `weft::testing` judges such a part again from its
/// operands' values in the backend's own run, where two ill-conditioned elements combine (a
/// bool compared with another, each a near-tie coming out one way in the backend and both ways
/// across the references, but never in the backend's combination).
pub fn compare_runs_or(
    got: &Run,
    refs: &[Run],
    tol: &Tolerance,
    mut recheck: impl FnMut(Observed, String) -> Result<(), String>,
) -> Result<(), String> {
    for (call, outs) in got.0.iter().enumerate() {
        for (k, x) in outs.iter().enumerate() {
            let ys: Vec<&HostArray> = refs.iter().filter_map(|r| r.0.get(call)?.get(k)).collect();
            if let Err(m) = compare_arrays(x, &ys, tol) {
                recheck(
                    Observed::Output { call, k },
                    format!("call {call}, output {k}: {m}"),
                )?;
            }
        }
    }
    for (k, x) in got.1.iter().enumerate() {
        let ys: Vec<&HostArray> = refs.iter().filter_map(|r| r.1.get(k)).collect();
        if let Err(m) = compare_arrays(x, &ys, tol) {
            recheck(Observed::State(k), format!("state {k}: {m}"))?;
        }
    }
    Ok(())
}

/// Checks `actual` element by element against `references` (the base reference first, then the
/// perturbed ones), naming the first element that differs.
pub fn compare_arrays(
    actual: &HostArray,
    references: &[&HostArray],
    tol: &Tolerance,
) -> Result<(), String> {
    let base = references.first().ok_or("no reference")?;
    if actual.axes() != base.axes() || actual.shape() != base.shape() {
        return Err(format!(
            "shape: {:?} {:?} vs interpreter {:?} {:?}",
            actual.axes(),
            actual.shape(),
            base.axes(),
            base.shape()
        ));
    }
    if actual.dtype() != base.dtype() {
        return Err(format!(
            "dtype: {} vs interpreter {}",
            actual.dtype(),
            base.dtype()
        ));
    }
    // A perturbed reference of another shape is not a reference of this result.
    let refs: Vec<&HostArray> = references
        .iter()
        .copied()
        .filter(|r| r.shape() == base.shape() && r.dtype() == base.dtype())
        .collect();
    let mut values = Vec::with_capacity(refs.len());
    for i in 0..actual.len() {
        values.clear();
        values.extend(refs.iter().filter_map(|r| r.data().get(i)));
        let a = actual.data().get(i).ok_or("short data")?;
        if !element_matches(a, &values, tol) {
            return Err(format!(
                "element {i}: {a} vs interpreter {} (perturbed: {})",
                values[0],
                values[1..]
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    Ok(())
}

/// Whether `a` matches `refs[0]`, within what `refs[1..]` say about the element's conditioning.
fn element_matches(a: Scalar, refs: &[Scalar], tol: &Tolerance) -> bool {
    match a {
        Scalar::Float(a) => {
            let refs: Vec<f64> = refs.iter().map(|r| r.as_f64()).collect();
            float_matches(a, &refs, tol)
        }
        // Exact, or inside the range the perturbed references span (an integer computed from
        // an ill-conditioned float, e.g. convert of a cancelling sum).
        Scalar::Int(a) => {
            let ints = refs.iter().map(|r| match r {
                Scalar::Int(v) => *v,
                other => other.as_f64() as i64,
            });
            let (lo, hi) = ints.fold((i64::MAX, i64::MIN), |(l, h), v| (l.min(v), h.max(v)));
            lo <= a && a <= hi
        }
        Scalar::Bool(a) => refs.contains(&Scalar::Bool(a)),
    }
}

/// The class of a float that must match exactly.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Nan,
    Inf(bool),
    Zero(bool),
    Finite,
}

fn class(x: f64) -> Class {
    if x.is_nan() {
        Class::Nan
    } else if x.is_infinite() {
        Class::Inf(x > 0.0)
    } else if x == 0.0 {
        Class::Zero(x.is_sign_negative())
    } else {
        Class::Finite
    }
}

fn float_matches(a: f64, refs: &[f64], tol: &Tolerance) -> bool {
    let b = refs[0];
    // How far the perturbed references moved the element: its conditioning.
    let spread = refs[1..]
        .iter()
        .filter(|r| r.is_finite())
        .map(|r| (r - b).abs())
        .fold(0.0f64, f64::max);
    let singular = refs[1..].iter().any(|r| class(*r) != class(b));
    if !singular {
        return close(a, b, tol, spread, false);
    }
    // At a singularity (a pole, an overflow threshold, a zero crossing) any value a reference
    // took is acceptable, the sign of zero included.
    if refs.iter().any(|r| close(a, *r, tol, spread, true)) {
        return true;
    }
    // References of both infinities make the element rounding noise of either sign times an
    // infinity (a gradient a cancellation leaves as noise, scaled by an infinite rate); noise
    // that lands exactly on zero gives NaN (`0 · inf`), as much a value of it as either sign.
    let both_infinities = refs.contains(&f64::INFINITY) && refs.contains(&f64::NEG_INFINITY);
    a.is_nan() && both_infinities
}

/// `a` against one reference value `b`: classes exactly (zero signs unless `any_zero`), finite
/// values within `rel · max(|a|, |b|) + floor + spread_factor · spread`.
fn close(a: f64, b: f64, tol: &Tolerance, spread: f64, any_zero: bool) -> bool {
    match (class(a), class(b)) {
        (Class::Nan, Class::Nan) => true,
        (Class::Zero(x), Class::Zero(y)) => any_zero || x == y,
        (Class::Inf(x), Class::Inf(y)) => x == y,
        (Class::Nan | Class::Inf(_), _) | (_, Class::Nan | Class::Inf(_)) => false,
        _ => {
            let bound = tol.rel * a.abs().max(b.abs())
                + tol.floor
                + tol.spread_factor * spread.min(f64::MAX);
            (a - b).abs() <= bound
        }
    }
}

/// The nodes a test requests of `g`, chosen by `seed`, so that across cases every value is
/// observed: every node (half the time), or the marked outputs, the last node and a random
/// third of the rest (so that intermediate values still fuse).
pub fn observed_outputs(g: &Graph, seed: u64) -> Vec<NodeId> {
    let mut r = SplitMix(seed ^ 0x6F75_7470_7574);
    let all = r.chance(50);
    let last = g.nodes().last().map(|(id, _)| id);
    let mut out: Vec<NodeId> = g.outputs().to_vec();
    for (id, _) in g.nodes() {
        if (all || Some(id) == last || r.chance(33)) && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// The number of cases a property test runs: `PROPTEST_CASES` when set (proptest's own variable,
/// so one setting lengthens every property test), else `default` (what CI runs).
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The number of cases of a large-graph property test (hundreds of nodes a graph):
/// `WEFT_LARGE_CASES` when set, else a tenth of [`proptest_cases`]`(default)`, at least 1.
pub fn large_cases(default: u32) -> u32 {
    std::env::var("WEFT_LARGE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or((proptest_cases(default) / 10).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(v: &[f64]) -> HostArray {
        let axis = Graph::new().axis("N", v.len()).unwrap();
        let axes = weft_ir::axis::Axes::new([axis]).unwrap();
        HostArray::new(axes, vec![v.len()], ArrayData::F64(v.to_vec())).unwrap()
    }

    #[test]
    fn nan_passes_only_where_the_references_take_both_infinities() {
        let tol = Tolerance::F32;
        let inf = f64::INFINITY;
        assert!(float_matches(f64::NAN, &[-inf, inf, -inf], &tol));
        assert!(float_matches(f64::NAN, &[inf, 1.0, -inf], &tol));
        assert!(!float_matches(f64::NAN, &[-inf, -inf, -inf], &tol));
        assert!(!float_matches(f64::NAN, &[-inf, 1.0, 2.0], &tol));
        assert!(!float_matches(1.0, &[-inf, inf], &tol));
    }

    #[test]
    fn garbage_overwrites_every_element() {
        let mut a = f64s(&[1.0, -0.0, 3.0]);
        fill_garbage(&mut a);
        assert!(a.to_vec::<f64>().unwrap().iter().all(|x| x.is_nan()));
    }

    fn judge(a: f64, refs: &[f64]) -> bool {
        let refs: Vec<Scalar> = refs.iter().map(|r| Scalar::Float(*r)).collect();
        element_matches(Scalar::Float(a), &refs, &Tolerance::F64)
    }

    #[test]
    fn a_small_element_is_judged_by_its_own_magnitude() {
        // The old comparison let 1.5 pass for 1.0 next to an element of 1e241.
        assert!(!judge(1.5, &[1.0, 1.0, 1.0]));
        assert!(judge(1.0 + 1e-12, &[1.0, 1.0, 1.0]));
        assert!(judge(1e241 * (1.0 + 1e-12), &[1e241, 1e241, 1e241]));
    }

    #[test]
    fn classes_are_exact_unless_the_element_is_singular() {
        assert!(!judge(f64::NAN, &[0.0, 0.0]));
        assert!(!judge(0.0, &[f64::NAN, f64::NAN]));
        assert!(!judge(
            f64::INFINITY,
            &[f64::NEG_INFINITY, f64::NEG_INFINITY]
        ));
        assert!(!judge(0.0, &[-0.0, -0.0]));
        assert!(judge(-0.0, &[-0.0, -0.0]));
        // A perturbed reference overflowed: the element sits at the overflow threshold.
        assert!(judge(f64::INFINITY, &[f64::MAX, f64::INFINITY]));
        assert!(judge(0.0, &[-0.0, 1e-20]));
    }

    #[test]
    fn cancellation_is_measured_by_the_perturbed_references() {
        // 1e300 + 1 − 1e300 summed in another order: 0 instead of 1, but a perturbation of the
        // inputs moves the result by far more.
        assert!(judge(0.0, &[1.0, 1e288]));
        assert!(!judge(0.0, &[1.0, 1.0]));
    }

    #[test]
    fn integers_may_lie_between_the_references_only() {
        let refs = [Scalar::Int(5), Scalar::Int(9)];
        assert!(element_matches(Scalar::Int(7), &refs, &Tolerance::F64));
        assert!(!element_matches(Scalar::Int(10), &refs, &Tolerance::F64));
        let exact = [Scalar::Int(5), Scalar::Int(5)];
        assert!(!element_matches(Scalar::Int(6), &exact, &Tolerance::F64));
        // Compared as integers, not through f64.
        let big = [Scalar::Int(i64::MAX - 1), Scalar::Int(i64::MAX - 1)];
        assert!(!element_matches(
            Scalar::Int(i64::MAX),
            &big,
            &Tolerance::F64
        ));
        assert!(element_matches(
            Scalar::Int(i64::MAX - 1),
            &big,
            &Tolerance::F64
        ));
    }
}
