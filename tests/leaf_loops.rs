//! Assembled leaf loops (`compiler/src/codegen/leaf.rs`): random f32 arithmetic bodies over
//! contiguous inputs, a row-broadcast input, a scalar placeholder and constants, at random
//! lengths (tails of every size) with special values among the inputs, give the bits of the
//! same loops as Cranelift's 4-lane code (leaf loops off), NaNs as some NaN, and agree with
//! the interpreter by the oracle; `weft explain` names the leaf loop where the host has AVX2.

mod jit_common;

use jit_common::{compare, references, run};
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use weft::prelude::*;
use weft_compiler::JitOptions;
use weft_ir::testing::{proptest_cases, run_property, Tally, Tolerance};

/// Cases long enough for a leaf loop, and those whose explanation names one.
static ELIGIBLE: AtomicUsize = AtomicUsize::new(0);
static LEAVES: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether the host assembles leaf loops (AVX2).
    static AVX2: bool = weft_runtime::Target::host().isa() >= weft_runtime::Isa::Avx2Fma;
}

/// One random expression over `x0..x2` ([R, C]), `r` ([R], broadcast over C), `s` ([]) and
/// constants: `(lines, name of the result)`.
fn expression(seed: u64, depth: u32) -> (Vec<String>, String) {
    let mut rng = weft_ir::perturb::SplitMix(seed);
    let mut lines = Vec::new();
    fn node(rng: &mut weft_ir::perturb::SplitMix, depth: u32, lines: &mut Vec<String>) -> String {
        let leaves = ["x0", "x1", "x2", "r", "s", "half", "three"];
        if depth == 0 || rng.below(5) == 0 {
            return leaves[rng.below(leaves.len())].to_string();
        }
        let unary = ["negative", "abs", "sqrt", "square", "reciprocal"];
        let binary = ["add", "subtract", "multiply", "divide"];
        // Operands first, so that the name is after theirs.
        let line = if rng.below(3) == 0 {
            let op = unary[rng.below(unary.len())];
            let a = node(rng, depth - 1, lines);
            format!("{op}({a})")
        } else {
            let op = binary[rng.below(binary.len())];
            let a = node(rng, depth - 1, lines);
            let b = node(rng, depth - 1, lines);
            format!("{op}({a}, {b})")
        };
        let name = format!("v{}", lines.len());
        let line = format!("{name} = {line}");
        lines.push(line);
        name
    }
    let top = node(&mut rng, depth, &mut lines);
    (lines, top)
}

/// The graph of `seed`'s expression over [R, C], its output `y` (a copy when the expression
/// is a leaf alone, so that every graph stores through a loop).
fn graph(seed: u64, rows: usize, cols: usize) -> Graph {
    let (lines, top) = expression(seed, 5);
    let mut text = format!(
        "axis R = {rows}\naxis C = {cols}\nplaceholder x0: f32[R, C]\nplaceholder x1: f32[R, C]\n\
         placeholder x2: f32[R, C]\nplaceholder r: f32[R]\nplaceholder s: f32[]\n\
         constant half: f32[] = 0.5\nconstant three: f32[] = 3\n"
    );
    for l in &lines {
        text += l;
        text += "\n";
    }
    text += &format!("z = add(x0, {top})\ny = multiply(z, x1)\noutput y\n");
    weft::ir::text::parse(&text, "leaf.weft").expect("a valid graph")
}

/// Inputs with one special value (NaN, ±inf, ±0, a subnormal, huge) in about eight.
fn inputs(g: &Graph, seed: u64) -> Vec<HostArray> {
    let mut rng = weft_ir::perturb::SplitMix(seed ^ 0x5eed);
    let special = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        1e-40,
        3e38,
        -3e38,
    ];
    g.placeholders()
        .iter()
        .map(|&p| {
            let axes = g.get(p).unwrap().axes.clone();
            let shape: Vec<usize> = axes.iter().map(|a| g.axis_len(*a).unwrap()).collect();
            let data = (0..shape.iter().product::<usize>())
                .map(|_| match rng.below(8) {
                    0 => special[rng.below(special.len())],
                    _ => (rng.unit() * 8.0 - 4.0) as f32,
                })
                .collect();
            HostArray::from_vec(axes, shape, data).unwrap()
        })
        .collect()
}

/// `y` of `g` on the JIT with leaf loops on or off, as bits with every NaN alike, and the
/// explanation.
fn run_leaf(g: &Graph, inputs: &[HostArray], leaf_loops: bool) -> (Vec<u32>, String) {
    let options = JitOptions {
        codegen: weft::CodegenOptions {
            leaf_loops,
            ..Default::default()
        },
        threads: Some(2),
        ..JitOptions::default()
    };
    let explained = jit_common::explain(g, &options);
    let t = Transformer::with_jit_options(g.clone(), options).unwrap();
    let comp = t
        .computation(&[g.find("y").unwrap()], &g.placeholders())
        .unwrap();
    let out = comp.call(inputs).unwrap()[0].to_vec::<f32>().unwrap();
    let bits = out
        .iter()
        .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
        .collect();
    (bits, explained)
}

fn check(seed: u64, rows: usize, cols: usize, tally: &Tally) -> Result<(), TestCaseError> {
    let g = graph(seed, rows, cols);
    let xs = inputs(&g, seed);
    let (leaf, explained) = run_leaf(&g, &xs, true);
    let (lanes, _) = run_leaf(&g, &xs, false);
    let text = weft::ir::text::print(&g);
    prop_assert!(
        leaf == lanes,
        "leaf loops change the bits (seed {seed}, {rows} x {cols}):\n{text}\n{explained}"
    );
    let leaf_loop = explained.contains("assembled leaf loop");
    prop_assert!(
        !leaf_loop || (AVX2.with(|a| *a) && cols >= 64),
        "{text}\n{explained}"
    );
    if cols >= 64 {
        ELIGIBLE.fetch_add(1, Ordering::Relaxed);
        LEAVES.fetch_add(usize::from(leaf_loop), Ordering::Relaxed);
    }
    let ps = g.placeholders();
    let outputs = [g.find("y").unwrap()];
    let tol = Tolerance::for_graph(&g);
    let refs = references(&g, &outputs, &ps, &xs, 1, &tol)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let jit = run(&g, &outputs, &ps, &xs, 1, Backend::Jit)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    compare(&jit, &refs, &tol).map_err(|m| TestCaseError::fail(format!("{m}\n{text}")))?;
    tally.compared();
    Ok(())
}

#[test]
fn leaf_loops_give_the_bits_of_the_vector_loops() {
    run_property(
        "leaf_loops::leaf_loops_give_the_bits_of_the_vector_loops",
        file!(),
        proptest_cases(64),
        1.0,
        (any::<u64>(), 1usize..4, 1usize..1100),
        |(seed, rows, cols), tally| check(seed, rows, cols, tally),
    );
    // Most bodies fit (at most 16 registers and 6 streams, no divisor the body computes
    // from values outside the loop); on a host without AVX2 none is assembled.
    let (eligible, leaves) = (
        ELIGIBLE.load(Ordering::Relaxed),
        LEAVES.load(Ordering::Relaxed),
    );
    eprintln!("{leaves} leaf loops in {eligible} cases long enough");
    if AVX2.with(|a| *a) {
        assert!(
            2 * leaves >= eligible,
            "{leaves} leaf loops in {eligible} cases"
        );
    } else {
        assert_eq!(leaves, 0);
    }
}
