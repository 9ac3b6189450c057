//! Every reduction in every axis order: random reductions (sum, prod, max, min, mean, argmax,
//! argmin) and the multi-pass graphs built on them (softmax, a layer normalisation, log-sum-exp,
//! a sum of `exp(x·y)` over a broadcast product, the squared norm written as a dot) over a
//! tensor whose axes are declared in a random order, reducing a random set of them, on the JIT
//! fused and unfused — each also with the thresholds of the memory-order paths at zero, so
//! small tensors take the kernels large ones take (a reduction over a strided axis in a kernel
//! of its own, accumulators in memory) — and forced parallel, against the interpreter's
//! references (`weft_oracle`'s oracle). Issue 41: with named axes, which axis is innermost
//! is an accident, so every order must compute what the interpreter does.
//! `PROPTEST_CASES=2000 cargo test --release --test orientation_props` runs longer.

mod jit_common;

use jit_common::{compare, references, run_jit};
use proptest::prelude::*;
use weft::compiler::ScheduledStep;
use weft::prelude::*;
use weft::{BinaryOp, ReduceOp, UnaryOp};
use weft_oracle::{proptest_cases, SplitMix, Tolerance};

/// Lengths drawn for an axis: ones, odd lengths around the vector widths, and a length at
/// the memory-order paths' least stride (64 elements) and past it: a prime (no column block
/// divides it) and a multiple of 8 that 64 does not divide (blocks of another width).
const LENGTHS: [usize; 9] = [1, 2, 3, 5, 8, 17, 64, 67, 96];

/// The most elements the drawn tensor may have (debug builds run every test).
const MAX_ELEMENTS: usize = 1 << 14;

/// What is computed from the tensor.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// One reduction over the drawn axes.
    Reduce(ReduceOp),
    /// `exp(x − max x) / Σ exp(x − max x)` over the drawn axes.
    Softmax,
    /// `(x − μ) / sqrt(σ² + 1e-5)`, μ and σ² means over the drawn axes.
    Normalise,
    /// `max x + log Σ exp(x − max x)` over the drawn axes.
    LogSumExp,
    /// `Σ exp(x · y)` over the drawn axes, `y` over the axes `x` lacks: a broadcast product.
    SumExpProduct,
    /// `dot(transpose(x), x)`: every axis contracted with itself, the squared norm.
    SquaredNormAsDot,
}

const FORMS: [Form; 12] = [
    Form::Reduce(ReduceOp::Sum),
    Form::Reduce(ReduceOp::Prod),
    Form::Reduce(ReduceOp::Max),
    Form::Reduce(ReduceOp::Min),
    Form::Reduce(ReduceOp::Mean),
    Form::Reduce(ReduceOp::ArgMax),
    Form::Reduce(ReduceOp::ArgMin),
    Form::Softmax,
    Form::Normalise,
    Form::LogSumExp,
    Form::SumExpProduct,
    Form::SquaredNormAsDot,
];

/// A drawn case: the graph, its output, and what was drawn.
struct Case {
    g: Graph,
    out: NodeId,
    form: Form,
    /// `x`'s axes in declared order (the last is innermost in memory).
    order: Vec<Axis>,
    reduced: Vec<Axis>,
    lens: Vec<usize>,
    dtype: DType,
}

impl Case {
    /// What was drawn, for a failure's message.
    fn drawn(&self) -> String {
        let (form, reduced, order) = (self.form, &self.reduced, &self.order);
        format!(
            "{form:?} over {reduced:?} of x{order:?}, lengths {:?}, {:?}",
            self.lens, self.dtype
        )
    }
}

/// Draws 1–3 axes with lengths from [`LENGTHS`] (at most [`MAX_ELEMENTS`] in all), declares
/// `x` over them in a random order, draws a nonempty set of them to reduce and a form.
fn draw(seed: u64) -> Result<Case, weft::Error> {
    let mut r = SplitMix(seed);
    let mut g = Graph::new();
    let rank = 1 + r.below(3);
    let mut lens = Vec::new();
    for _ in 0..rank {
        let budget = MAX_ELEMENTS / lens.iter().product::<usize>().max(1);
        let fits: Vec<usize> = LENGTHS.into_iter().filter(|l| *l <= budget).collect();
        lens.push(fits[r.below(fits.len())]);
    }
    let axes: Vec<Axis> = lens
        .iter()
        .enumerate()
        .map(|(i, len)| g.axis(&format!("A{i}"), *len))
        .collect::<Result<_, _>>()?;
    let mut order = axes.clone();
    for i in (1..order.len()).rev() {
        order.swap(i, r.below(i + 1));
    }
    let mut reduced: Vec<Axis> = axes.iter().copied().filter(|_| r.chance(50)).collect();
    if reduced.is_empty() {
        reduced.push(axes[r.below(axes.len())]);
    }
    let form = FORMS[r.below(FORMS.len())];
    let dtype = if r.chance(75) { DType::F32 } else { DType::F64 };
    let x = g.placeholder("x", &order, dtype)?;
    let out = build(&mut g, form, x, &reduced, dtype)?;
    g.mark_output(out)?;
    Ok(Case {
        g,
        out,
        form,
        order,
        reduced,
        lens,
        dtype,
    })
}

/// `form` of `x` over `axes`.
fn build(
    g: &mut Graph,
    form: Form,
    x: NodeId,
    axes: &[Axis],
    dtype: DType,
) -> Result<NodeId, weft::Error> {
    let reduce = |g: &mut Graph, op, v| g.reduce(op, v, axes, None);
    Ok(match form {
        Form::Reduce(op) => reduce(g, op, x)?,
        Form::Softmax => {
            let m = reduce(g, ReduceOp::Max, x)?;
            let shifted = g.binary(BinaryOp::Subtract, x, m)?;
            let e = g.unary(UnaryOp::Exp, shifted)?;
            let total = reduce(g, ReduceOp::Sum, e)?;
            g.binary(BinaryOp::Divide, e, total)?
        }
        Form::Normalise => {
            let mean = reduce(g, ReduceOp::Mean, x)?;
            let d = g.binary(BinaryOp::Subtract, x, mean)?;
            let d2 = g.unary(UnaryOp::Square, d)?;
            let var = reduce(g, ReduceOp::Mean, d2)?;
            let eps = g.scalar(Scalar::Float(1e-5), dtype)?;
            let shifted = g.binary(BinaryOp::Add, var, eps)?;
            let sd = g.unary(UnaryOp::Sqrt, shifted)?;
            g.binary(BinaryOp::Divide, d, sd)?
        }
        Form::LogSumExp => {
            let m = reduce(g, ReduceOp::Max, x)?;
            let shifted = g.binary(BinaryOp::Subtract, x, m)?;
            let e = g.unary(UnaryOp::Exp, shifted)?;
            let total = reduce(g, ReduceOp::Sum, e)?;
            let l = g.unary(UnaryOp::Log, total)?;
            g.binary(BinaryOp::Add, m, l)?
        }
        Form::SumExpProduct => {
            let b = g.axis("B", 5)?;
            let y = g.placeholder("y", &[b], dtype)?;
            let xy = g.binary(BinaryOp::Multiply, x, y)?;
            let e = g.unary(UnaryOp::Exp, xy)?;
            reduce(g, ReduceOp::Sum, e)?
        }
        Form::SquaredNormAsDot => {
            let t = g.transpose(x)?;
            g.dot(t, x)?
        }
    })
}

/// The JIT configurations the case runs on: fused and unfused, each as shipped and with the
/// memory-order thresholds at zero, and forced parallel with them at zero.
fn configurations() -> Vec<(&'static str, JitOptions)> {
    let eager = |mut o: JitOptions| {
        o.lower.reduce_in_memory_min_bytes = 0;
        o
    };
    let unfused = || JitOptions {
        fused: false,
        ..JitOptions::default()
    };
    vec![
        ("fused", JitOptions::default()),
        (
            "fused, memory order at any size",
            eager(JitOptions::default()),
        ),
        ("unfused", unfused()),
        ("unfused, memory order at any size", eager(unfused())),
        (
            "forced parallel, memory order at any size",
            eager(JitOptions::forced_parallel()),
        ),
    ]
}

fn check(seed: u64) -> Result<(), TestCaseError> {
    let case = draw(seed).map_err(|e| TestCaseError::fail(format!("drawing: {e}")))?;
    let g = &case.g;
    let ps = g.placeholders();
    let inputs = weft_oracle::random_inputs(g, &ps, seed, true);
    let tol = Tolerance::for_graph(g);
    let outputs = [case.out];
    let refs = references(g, &outputs, &ps, &inputs, 2, &tol)
        .map_err(|e| TestCaseError::fail(format!("interpreter: {e} ({})", case.drawn())))?;
    for (name, options) in configurations() {
        let fail = |what: String| {
            TestCaseError::fail(format!(
                "{name}: {what}\n{} (seed {seed})\n{}",
                case.drawn(),
                weft_ir::text::print(g)
            ))
        };
        let got = run_jit(g, &outputs, &inputs, options).map_err(|e| fail(e.to_string()))?;
        compare(&got, &refs, &tol).map_err(fail)?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(128)))]

    #[test]
    fn every_reduction_in_every_axis_order_matches_the_interpreter(seed in any::<u64>()) {
        check(seed)?;
    }
}

/// The draw covers what it promises: over a few hundred seeds, every form, every rank, both
/// dtypes, reductions of the innermost axis and of outer axes only, and the memory-order
/// paths' stride all come up, and the configurations with the memory-order thresholds at zero
/// take those kernels (so the property above cannot pass by drawing little).
#[test]
fn the_draw_covers_every_form_and_orientation() {
    let mut forms = std::collections::BTreeSet::new();
    let mut ranks = std::collections::BTreeSet::new();
    let (mut inner, mut outer_only, mut long, mut f64s) = (false, false, false, false);
    let (mut in_memory_order, mut chained) = (0, 0);
    let eager = &configurations()[4].1;
    for seed in 0..400 {
        let case = draw(seed).unwrap();
        let explained = jit_common::explain(&case.g, eager);
        in_memory_order += usize::from(explained.contains("in memory order"));
        chained += usize::from(explained.contains("chained with"));
        forms.insert(format!("{:?}", case.form));
        ranks.insert(case.order.len());
        let innermost = *case.order.last().unwrap();
        inner |= case.reduced.contains(&innermost);
        outer_only |= !case.reduced.contains(&innermost);
        long |= case.lens.iter().any(|l| *l >= 64);
        f64s |= case.dtype == DType::F64;
    }
    assert_eq!(forms.len(), FORMS.len(), "{forms:?}");
    assert_eq!(ranks.len(), 3, "{ranks:?}");
    assert!(inner && outer_only && long && f64s);
    // The configurations with the thresholds at zero do reach the memory-order kernels.
    assert!(in_memory_order >= 30, "{in_memory_order} of 400 cases");
    // And some chain two such kernels into one (crate::chain): a variance after its mean.
    assert!(chained >= 10, "{chained} of 400 cases chain kernels");
}

/// Softmax, a normalisation and log-sum-exp over the outer axis of a 1 MiB tensor, as
/// shipped: their reductions run in memory order and chain into one kernel with the
/// elementwise kernels between them strip-mined into the same column blocks (each block read
/// from memory once); every configuration still computes what the interpreter does, with
/// chaining and without. The kept axis is 4096 long (blocks of 1024) or 4104 (blocks of
/// 1026: not a power of two, a tail of 2 a row).
#[test]
fn multi_pass_graphs_over_the_outer_axis_chain_and_match() {
    for (form, kept) in [Form::Softmax, Form::Normalise, Form::LogSumExp]
        .into_iter()
        .flat_map(|f| [(f, 4096), (f, 4104)])
    {
        let mut g = Graph::new();
        let c = g.axis("C", 64).unwrap();
        let r = g.axis("R", kept).unwrap();
        let x = g.placeholder("x", &[c, r], DType::F32).unwrap();
        let out = build(&mut g, form, x, &[c], DType::F32).unwrap();
        g.mark_output(out).unwrap();
        let explained = jit_common::explain(&g, &JitOptions::default());
        assert!(explained.contains("chained with"), "{form:?}: {explained}");
        assert!(!explained.contains("gathered"), "{form:?}: {explained}");
        let unchained = JitOptions {
            chain: false,
            ..JitOptions::default()
        };
        // The kernels a chained kernel runs are not kept (nor compiled) apart from it: every
        // kernel kept is one a step runs, and there are fewer than without chaining.
        let exe = jit_common::jit_executable(&g, &JitOptions::default());
        let scheduled = exe
            .schedule()
            .iter()
            .filter(|s| !matches!(s, ScheduledStep::Gemm(..)))
            .count();
        assert_eq!(exe.lowered().len(), scheduled, "{form:?}");
        let apart = jit_common::jit_executable(&g, &unchained).lowered().len();
        assert!(
            exe.lowered().len() < apart,
            "{form:?}: {apart} kernels unchained"
        );
        // Softmax's exponentials, stored for two later passes, live in a block scratch.
        if matches!(form, Form::Softmax) {
            assert!(
                explained.contains("held one block at a time"),
                "{explained}"
            );
        }
        let ps = g.placeholders();
        let inputs = weft_oracle::random_inputs(&g, &ps, 7, true);
        let tol = Tolerance::for_graph(&g);
        let refs = references(&g, &[out], &ps, &inputs, 2, &tol).unwrap();
        for options in [
            JitOptions::default(),
            unchained,
            JitOptions::forced_parallel(),
        ] {
            let got = run_jit(&g, &[out], &inputs, options).unwrap();
            compare(&got, &refs, &tol).unwrap_or_else(|m| panic!("{form:?}: {m}"));
        }
    }
}

/// The same graphs over a kept axis of prime length (4099), which no column block divides:
/// their reductions still run in memory order — one kernel each, its accumulators a whole row,
/// without a parallel loop — never gathering a strided column per result (15× slower at
/// R = 32771; docs/benchmarks.md), and every configuration computes what the interpreter does.
#[test]
fn multi_pass_graphs_over_an_outer_axis_of_prime_length_stay_in_memory_order() {
    for form in [Form::Softmax, Form::Normalise, Form::LogSumExp] {
        let mut g = Graph::new();
        let c = g.axis("C", 64).unwrap();
        let r = g.axis("R", 4099).unwrap();
        let x = g.placeholder("x", &[c, r], DType::F32).unwrap();
        let out = build(&mut g, form, x, &[c], DType::F32).unwrap();
        g.mark_output(out).unwrap();
        let explained = jit_common::explain(&g, &JitOptions::default());
        assert!(
            explained.contains("in memory order"),
            "{form:?}: {explained}"
        );
        assert!(!explained.contains("gathered"), "{form:?}: {explained}");
        let ps = g.placeholders();
        let inputs = weft_oracle::random_inputs(&g, &ps, 11, true);
        let tol = Tolerance::for_graph(&g);
        let refs = references(&g, &[out], &ps, &inputs, 2, &tol).unwrap();
        for options in [JitOptions::default(), JitOptions::forced_parallel()] {
            let got = run_jit(&g, &[out], &inputs, options).unwrap();
            compare(&got, &refs, &tol).unwrap_or_else(|m| panic!("{form:?}: {m}"));
        }
    }
}

/// With sums over a strided axis not taken in memory order (the threshold above the tensor),
/// a normalisation over the outer axis of a 2 MiB tensor would gather: fusion's cost model
/// keeps the normalising pass apart from the statistics, and no chain strip-mines it back
/// into their one-column blocks — it runs along x's contiguous axis, and still computes what
/// the interpreter does.
#[test]
fn a_pass_the_cost_model_keeps_apart_is_not_chained_back_into_columns() {
    let mut g = Graph::new();
    let c = g.axis("C", 64).unwrap();
    let r = g.axis("R", 8192).unwrap();
    let x = g.placeholder("x", &[c, r], DType::F32).unwrap();
    let out = build(&mut g, Form::Normalise, x, &[c], DType::F32).unwrap();
    g.mark_output(out).unwrap();
    let mut options = JitOptions::default();
    options.lower.reduce_in_memory_min_bytes = u64::MAX;
    let explained = jit_common::explain(&g, &options);
    assert!(
        explained.contains("the cost model predicts the merged kernel slower"),
        "{explained}"
    );
    let kernels: Vec<&str> = explained
        .split("\nkernel @")
        .skip(1)
        .map(|k| k.split("\n#").next().unwrap_or(k))
        .collect();
    let last = kernels.last().expect("kernels");
    assert!(kernels.len() >= 2, "{explained}");
    assert!(
        last.contains("along") && !last.contains("gathered"),
        "the normalising pass: {last}"
    );
    let ps = g.placeholders();
    let inputs = weft_oracle::random_inputs(&g, &ps, 5, true);
    let tol = Tolerance::for_graph(&g);
    let refs = references(&g, &[out], &ps, &inputs, 2, &tol).unwrap();
    let got = run_jit(&g, &[out], &inputs, options).unwrap();
    compare(&got, &refs, &tol).unwrap();
}
