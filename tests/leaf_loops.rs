//! Assembled leaf loops (`compiler/src/codegen/leaf.rs`): random f32 bodies (arithmetic,
//! maximum, minimum, relu, comparisons and selects; and with exp, sigmoid, tanh and log) over
//! contiguous inputs, a row-broadcast input, a scalar placeholder and constants, at random
//! lengths (tails of every size) with special values among the inputs, give the bits of the
//! same loops as Cranelift's 4-lane code (leaf loops off), NaNs as some NaN, and (without the
//! functions) agree with the interpreter by the oracle; `weft explain` names the leaf loop
//! where the host has AVX2.

mod jit_common;

use jit_common::{compare, references, run};
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};
use weft::prelude::*;
use weft_compiler::JitOptions;
use weft_oracle::{proptest_cases, run_property, Tally, Tolerance};

/// Per test (stores, sums; then both with functions): cases long enough for a leaf loop, and
/// those whose explanation names one.
static ELIGIBLE: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];
static LEAVES: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];

thread_local! {
    /// Whether the host assembles leaf loops (AVX2).
    static AVX2: bool = weft_runtime::Target::host().isa() >= weft_runtime::Isa::Avx2Fma;
}

/// One random expression over `x0..x2` ([R, C]), `r` ([R], broadcast over C), `s` ([]) and
/// constants, with `exp`, `sigmoid`, `tanh` and `log` among its operations if `functions`:
/// `(lines, name of the result)`.
fn expression(seed: u64, depth: u32, functions: bool) -> (Vec<String>, String) {
    let mut rng = weft_ir::perturb::SplitMix(seed);
    let mut lines = Vec::new();
    fn node(
        rng: &mut weft_ir::perturb::SplitMix,
        depth: u32,
        functions: bool,
        lines: &mut Vec<String>,
    ) -> String {
        let leaves = ["x0", "x1", "x2", "r", "s", "half", "three"];
        if depth == 0 || rng.below(5) == 0 {
            return leaves[rng.below(leaves.len())].to_string();
        }
        let unary = [
            "negative",
            "abs",
            "sqrt",
            "square",
            "reciprocal",
            "relu",
            "exp",
            "sigmoid",
            "tanh",
            "log",
        ];
        let unary = if functions { &unary[..] } else { &unary[..6] };
        let binary = [
            "add", "subtract", "multiply", "divide", "maximum", "minimum",
        ];
        let compare = [
            "equal",
            "not_equal",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
        ];
        // Operands first, so that the name is after theirs.
        let line = if rng.below(6) == 0 {
            let op = compare[rng.below(compare.len())];
            let (a, b) = (
                node(rng, depth - 1, functions, lines),
                node(rng, depth - 1, functions, lines),
            );
            let (t, f) = (
                node(rng, depth - 1, functions, lines),
                node(rng, depth - 1, functions, lines),
            );
            let cond = format!("c{}", lines.len());
            lines.push(format!("{cond} = {op}({a}, {b})"));
            format!("select({cond}, {t}, {f})")
        } else if rng.below(3) == 0 {
            let op = unary[rng.below(unary.len())];
            let a = node(rng, depth - 1, functions, lines);
            format!("{op}({a})")
        } else {
            let op = binary[rng.below(binary.len())];
            let a = node(rng, depth - 1, functions, lines);
            let b = node(rng, depth - 1, functions, lines);
            format!("{op}({a}, {b})")
        };
        let name = format!("v{}", lines.len());
        let line = format!("{name} = {line}");
        lines.push(line);
        name
    }
    let top = node(&mut rng, depth, functions, &mut lines);
    (lines, top)
}

/// The graph of `seed`'s expression over [R, C], its output `y` (a copy when the expression
/// is a leaf alone, so that every graph stores through a loop); with `sum`, `y` sums it over
/// C instead.
fn graph(seed: u64, rows: usize, cols: usize, sum: bool, functions: bool) -> Graph {
    let (lines, top) = expression(seed, 5, functions);
    let mut text = format!(
        "axis R = {rows}\naxis C = {cols}\nplaceholder x0: f32[R, C]\nplaceholder x1: f32[R, C]\n\
         placeholder x2: f32[R, C]\nplaceholder r: f32[R]\nplaceholder s: f32[]\n\
         constant half: f32[] = 0.5\nconstant three: f32[] = 3\n"
    );
    for l in &lines {
        text += l;
        text += "\n";
    }
    text += &format!("z = add(x0, {top})\n");
    text += if sum {
        "w = multiply(z, x1)\ny = sum(w, [C])\noutput y\n"
    } else {
        "y = multiply(z, x1)\noutput y\n"
    };
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
    let codegen = weft::CodegenOptions {
        leaf_loops,
        ..Default::default()
    };
    run_with(g, inputs, codegen, 2)
}

/// `y` of `g` on the JIT with leaf loops 16 lanes wide on an AVX-512F host (`wide`) or 8.
fn run_wide(g: &Graph, inputs: &[HostArray], wide: bool, threads: usize) -> Vec<u32> {
    let codegen = weft::CodegenOptions {
        wide_leaves: wide,
        ..Default::default()
    };
    run_with(g, inputs, codegen, threads).0
}

/// `y` of `g` on the JIT under `codegen` on `threads` threads, as bits with every NaN alike,
/// and the explanation.
fn run_with(
    g: &Graph,
    inputs: &[HostArray],
    codegen: weft::CodegenOptions,
    threads: usize,
) -> (Vec<u32>, String) {
    let options = JitOptions {
        codegen,
        threads: Some(threads),
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

/// `seed`'s graph: the same bits with leaf loops on and off, and (without functions) the
/// oracle's values. With functions, the oracle is left out: `exp` flushes results below the
/// smallest normal to zero (docs/numerics.md), which random expressions turn into
/// infinities and NaNs the interpreter's unflushed values do not give.
fn check(
    seed: u64,
    (rows, cols): (usize, usize),
    sum: bool,
    functions: bool,
    tally: &Tally,
) -> Result<(), TestCaseError> {
    let g = graph(seed, rows, cols, sum, functions);
    let xs = inputs(&g, seed);
    let (leaf, explained) = run_leaf(&g, &xs, true);
    let (lanes, _) = run_leaf(&g, &xs, false);
    let text = weft::ir::text::print(&g);
    prop_assert!(
        leaf == lanes,
        "leaf loops change the bits (seed {seed}, {rows} x {cols}):\n{text}\n{explained}"
    );
    // On an AVX-512F host: 16-lane leaf loops against 8-lane ones (elsewhere both are 8).
    let (zmm, ymm) = (run_wide(&g, &xs, true, 2), run_wide(&g, &xs, false, 2));
    prop_assert!(
        zmm == ymm && leaf == ymm,
        "zmm and ymm leaf loops differ (seed {seed}, {rows} x {cols}):\n{text}\n{explained}"
    );
    let leaf_loop = explained.contains("by an assembled leaf loop");
    prop_assert!(
        !leaf_loop || (AVX2.with(|a| *a) && cols >= 64),
        "{text}\n{explained}"
    );
    let counter = usize::from(sum) + 2 * usize::from(functions);
    if cols >= 64 {
        ELIGIBLE[counter].fetch_add(1, Ordering::Relaxed);
        LEAVES[counter].fetch_add(usize::from(leaf_loop), Ordering::Relaxed);
    }
    if functions {
        tally.compared();
        return Ok(());
    }
    agrees_with_the_oracle(&g, &xs, &text, tally)
}

/// `y` of `g` on the JIT against the oracle's, within the graph's tolerance (`text` names
/// the graph on failure).
fn agrees_with_the_oracle(
    g: &Graph,
    xs: &[HostArray],
    text: &str,
    tally: &Tally,
) -> Result<(), TestCaseError> {
    let (ps, outputs) = (g.placeholders(), [g.find("y").unwrap()]);
    let tol = Tolerance::for_graph(g);
    let refs = references(g, &outputs, &ps, xs, 1, &tol)
        .map_err(|e| TestCaseError::fail(e.to_string()))?;
    let jit = run(g, &outputs, &ps, xs, 1, Backend::Jit)
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
        |(seed, rows, cols), tally| check(seed, (rows, cols), false, false, tally),
    );
    assert_share(false, false);
}

/// Sums over C of the same bodies: the leaf loop's f32 partials (element i into partial
/// i mod width), combined, tailed and re-run in f64 by the kernel as its own vector loop's.
#[test]
fn leaf_sums_give_the_bits_of_the_vector_loops() {
    run_property(
        "leaf_loops::leaf_sums_give_the_bits_of_the_vector_loops",
        file!(),
        proptest_cases(64),
        1.0,
        (any::<u64>(), 1usize..4, 1usize..1100),
        |(seed, rows, cols), tally| check(seed, (rows, cols), true, false, tally),
    );
    assert_share(true, false);
}

/// The same with `exp`, `sigmoid`, `tanh` and `log` in the bodies, stored and summed: the leaf
/// loop's sequences give the bits of Cranelift's inline code (or of the span routines, where
/// those take the loop with leaf loops off).
#[test]
fn leaf_functions_give_the_bits_of_the_vector_loops() {
    for sum in [false, true] {
        run_property(
            "leaf_loops::leaf_functions_give_the_bits_of_the_vector_loops",
            file!(),
            proptest_cases(48),
            1.0,
            (any::<u64>(), 1usize..4, 1usize..1100),
            |(seed, rows, cols), tally| check(seed, (rows, cols), sum, true, tally),
        );
        assert_share(sum, true);
    }
}

/// Rows longer than one block of f32 partials (`narrow_sums::f32_block`, 8192 iterations
/// of 4 × 4 partials): the partials are folded into f64 block by block, by the leaf loop's
/// calls as by the vector loop's steps, with the same bits (special values re-run the whole
/// row in f64 in both), and the oracle's tolerance holds.
#[test]
fn long_leaf_sums_fold_their_partials_every_block_with_the_same_bits() {
    run_property(
        "leaf_loops::long_leaf_sums_fold_their_partials_every_block_with_the_same_bits",
        file!(),
        proptest_cases(8),
        1.0,
        (any::<u64>(), 1usize..3, 8193usize..26000),
        |(seed, rows, cols), tally| {
            let g = graph(seed, rows, cols, true, false);
            let explained = jit_common::explain(&g, &JitOptions::default());
            prop_assert!(
                explained.contains("folded into f64 every 8192 iterations"),
                "{explained}"
            );
            check(seed, (rows, cols), true, false, tally)
        },
    );
}

/// Many bodies fit (at most 16 registers and 6 streams, no divisor the body computes from
/// values outside the loop; a depth-5 expression with selects often needs more): at least a
/// third of the cases long enough take a leaf loop on an AVX2 host; none on a host without
/// AVX2. (A function holds up to four scratch registers: with them, a fifth.)
fn assert_share(sum: bool, functions: bool) {
    let counter = usize::from(sum) + 2 * usize::from(functions);
    let eligible = ELIGIBLE[counter].load(Ordering::Relaxed);
    let leaves = LEAVES[counter].load(Ordering::Relaxed);
    let share = if functions { 5 } else { 3 };
    eprintln!(
        "{leaves} leaf loops in {eligible} cases long enough (sums: {sum}, functions: {functions})"
    );
    if AVX2.with(|a| *a) {
        assert!(
            share * leaves >= eligible,
            "{leaves} leaf loops in {eligible} cases"
        );
    } else if !AVX2.with(|a| *a) {
        assert_eq!(leaves, 0);
    }
}

/// A layernorm over rows of 512 in a 4.3 MB input: its variance pass, a sum that prefetches
/// the row two on, is a leaf loop prefetching the same lines, with the bits of the vector
/// loop's (NaN, ±inf and huge rows among them); so is its mean pass.
#[test]
fn a_prefetching_sum_pass_is_a_leaf_loop_with_the_same_bits() {
    let (rows, cols) = (2100, 512);
    let text = format!(
        "axis R = {rows}\naxis C = {cols}\nplaceholder a: f32[R, C]\nplaceholder g: f32[C]\n\
         placeholder b: f32[C]\nconstant eps: f32[] = 1e-5\nmu = mean(a, [C])\n\
         centered = subtract(a, mu)\nsq = square(centered)\nvar = mean(sq, [C])\n\
         var_eps = add(var, eps)\nsd = sqrt(var_eps)\nnormed = divide(centered, sd)\n\
         scaled = multiply(normed, g)\ny = add(scaled, b)\noutput y\n"
    );
    let g = weft::ir::text::parse(&text, "layernorm.weft").unwrap();
    let xs = inputs(&g, 7);
    let (leaf, explained) = run_leaf(&g, &xs, true);
    let (lanes, _) = run_leaf(&g, &xs, false);
    assert!(leaf == lanes, "{explained}");
    if AVX2.with(|a| *a) {
        let prefetching_leaf = explained.lines().any(|l| {
            l.contains("by an assembled leaf loop") && l.contains("prefetching %a's row 2 ahead")
        });
        assert!(prefetching_leaf, "{explained}");
    }
}

/// A leaf loop inside an outlined loop nest (`codegen::translate::outline`): the outlined
/// function calls the kernel's assembled leaf functions, with the bits of the same graph
/// neither outlined nor assembled, and of the oracle.
#[test]
fn leaf_loops_inside_outlined_nests_give_the_same_bits() {
    // Per `A`: a pass summing over `[B, C]`, then one storing over them, each a loop over `B`
    // around a loop over `C`.
    let text = "axis A = 4\naxis B = 32\naxis C = 300\nplaceholder x: f32[A, B, C]\n\
                placeholder w: f32[C]\np = multiply(x, w)\nm = mean(p, [B, C])\n\
                d = subtract(x, m)\ny = relu(d)\noutput y\n";
    let g = weft::ir::text::parse(text, "nest.weft").unwrap();
    let xs = inputs(&g, 11);
    let codegen = |outline, leaf_loops| weft::CodegenOptions {
        outline,
        leaf_loops,
        ..Default::default()
    };
    let (outlined, explained) = run_with(&g, &xs, codegen(weft::Outline::Every, true), 2);
    let (plain, _) = run_with(&g, &xs, codegen(weft::Outline::Never, false), 2);
    assert!(outlined == plain, "{explained}");
    let lines: Vec<&str> = explained.lines().collect();
    let leaf_inside = lines.windows(2).any(|w| {
        w[0].contains("(outlined: the kernel calls it)")
            && w[1].contains("by an assembled leaf loop")
    });
    assert!(
        explained.contains("(outlined: the kernel calls it)"),
        "{explained}"
    );
    assert_eq!(leaf_inside, AVX2.with(|a| *a), "{explained}");
}

/// `weft explain` names in one line why a vector loop no routine takes is not a leaf loop
/// (`leaf::NotLeaf`): too short, an operation with no leaf instruction, a reduction other
/// than an f32 sum, too many addresses; on a host without AVX2, that it has none.
#[test]
fn explain_names_why_a_vector_loop_is_not_a_leaf_loop() {
    let sum_of_thirteen = sum_of_placeholders(13);
    let cases = [
        (
            "axis C = 32\nplaceholder x: f32[C]\ny = add(x, x)\noutput y\n".to_string(),
            "not an assembled leaf loop: 32 iterations, fewer than the 64 a call pays for",
        ),
        (
            "axis C = 512\nplaceholder x: f32[C]\ny = sin(x)\noutput y\n".to_string(),
            "not an assembled leaf loop: no leaf instruction for sin",
        ),
        (
            "axis C = 512\nplaceholder x: f32[C]\ny = max(x, [C])\noutput y\n".to_string(),
            "not an assembled leaf loop: reduces other than an f32 sum into its partials",
        ),
        (
            sum_of_thirteen,
            "not an assembled leaf loop: walks more than 12 addresses",
        ),
    ];
    // Without span routines, so that no native routine takes these loops.
    let options = JitOptions {
        codegen: weft::CodegenOptions {
            span_math: false,
            ..Default::default()
        },
        ..JitOptions::default()
    };
    for (text, reason) in cases {
        let g = weft::ir::text::parse(&text, "not_leaf.weft").unwrap();
        let explained = jit_common::explain(&g, &options);
        let expected = if AVX2.with(|a| *a) {
            reason
        } else {
            "not an assembled leaf loop: leaf loops are off or the host has no AVX2"
        };
        assert!(explained.contains(expected), "{text}\n{explained}");
        assert!(
            !explained.contains("by an assembled leaf loop"),
            "{explained}"
        );
    }
}

/// `y`, the sum of `n` placeholders `x0`..`x{n-1}` of 512 f32s: a loop walking `n + 1`
/// addresses.
fn sum_of_placeholders(n: usize) -> String {
    let mut text = String::from("axis C = 512\n");
    for j in 0..n {
        text += &format!("placeholder x{j}: f32[C]\n");
    }
    text += "s1 = add(x0, x1)\n";
    for j in 2..n {
        text += &format!("s{j} = add(s{}, x{j})\n", j - 1);
    }
    text += &format!("y = negative(s{})\noutput y\n", n - 1);
    text
}

/// A leaf loop walking twelve addresses (eleven inputs and its output) holds the last six in
/// the callee-saved registers, saved on entry and restored on return: the bits of the vector
/// loop's, and the kernel's own registers intact after the call (the graph's other values
/// right); one more address and it is refused (above).
#[test]
fn a_leaf_loop_walks_twelve_addresses_with_the_same_bits() {
    let text = sum_of_placeholders(11);
    let g = weft::ir::text::parse(&text, "sum_of_eleven.weft").unwrap();
    let xs = inputs(&g, 11);
    let (leaf, explained) = run_leaf(&g, &xs, true);
    let (lanes, _) = run_leaf(&g, &xs, false);
    assert!(leaf == lanes, "{explained}");
    if AVX2.with(|a| *a) {
        assert!(
            explained.contains("by an assembled leaf loop over the whole vectors (3 registers, 12 address streams)"),
            "{explained}"
        );
    }
    let ps = g.placeholders();
    let outputs = [g.find("y").unwrap()];
    let tol = Tolerance::for_graph(&g);
    let refs = references(&g, &outputs, &ps, &xs, 1, &tol).unwrap();
    let jit = run(&g, &outputs, &ps, &xs, 1, Backend::Jit).unwrap();
    compare(&jit, &refs, &tol).unwrap();
}

/// Sums over the strided first axis in memory order (`reduce_in_memory`): each step adds
/// eight rows of `a` into a row of f32 accumulators, eight loads of one buffer a row apart that
/// share one address register (`leaf.rs`: a displacement each), so the step is a leaf loop;
/// the bits are the Cranelift loops' (NaN, ±inf and huge values among the inputs) and the
/// oracle's.
#[test]
fn jammed_rows_share_an_address_register_with_the_same_bits() {
    let text = "axis R = 600\naxis C = 520\nplaceholder a: f32[R, C]\nmu = mean(a, [R])\n\
                d = subtract(a, mu)\nsq = square(d)\ny = mean(sq, [R])\noutput y\n";
    let g = weft::ir::text::parse(text, "column_variance.weft").unwrap();
    let xs = inputs(&g, 5);
    let (leaf, explained) = run_leaf(&g, &xs, true);
    let (lanes, _) = run_leaf(&g, &xs, false);
    assert!(leaf == lanes, "{explained}");
    let jammed = explained.lines().any(|l| {
        l.contains("by an assembled leaf loop") && l.contains("along %a's contiguous axis")
    });
    assert!(explained.contains("in memory order"), "{explained}");
    assert_eq!(jammed, AVX2.with(|a| *a), "{explained}");
    let outputs = [g.find("y").unwrap()];
    let tol = Tolerance::for_graph(&g);
    let refs = references(&g, &outputs, &g.placeholders(), &xs, 1, &tol).unwrap();
    let jit = run(&g, &outputs, &g.placeholders(), &xs, 1, Backend::Jit).unwrap();
    compare(&jit, &refs, &tol).unwrap();
}

/// `exp`, `sigmoid`, `tanh` and `log` in leaf loops over a sweep of arguments through every
/// branch of their algorithms (exp's overflow and flush limits, tanh's polynomial bound and
/// clamp, log's subnormal scaling, √2 fold, zeros and negatives; NaN, ±inf, ±0,
/// subnormals): the bits of the kernel's inline code (span routines off), of the span
/// routines (leaf loops off) and of 8-lane leaf loops (on an AVX-512F host, where leaf loops
/// are 16 lanes and, with 8, the span routines keep these loops), NaNs as some NaN; each is a
/// leaf loop on an AVX2 host.
#[test]
fn functions_in_leaf_loops_give_the_inline_bits_over_a_sweep() {
    let mut xs: Vec<f32> = (-24000..24000).map(|i| i as f32 * 0.005).collect();
    xs.extend((-2000..2000).map(|i| i as f32 * 0.0625));
    xs.extend([
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
        -1e-40,
        f32::MIN_POSITIVE,
        88.72283,
        88.72284,
        -87.33654,
        -87.33655,
        -103.9,
        0.55,
        -0.55,
        0.549_999_9,
        9.1,
        -9.1,
        3e38,
        -3e38,
        std::f32::consts::SQRT_2,
        f32::from_bits(std::f32::consts::SQRT_2.to_bits() + 1),
        std::f32::consts::FRAC_1_SQRT_2,
        f32::MAX,
        1e-45,
    ]);
    xs.extend((1..2000).map(|i| i as f32 * 1e-42));
    xs.extend((-60..60).map(|i| 2f32.powi(i) * 1.414));
    let n = xs.len();
    for f in ["exp", "sigmoid", "tanh", "log"] {
        let text = format!("axis N = {n}\nplaceholder x: f32[N]\ny = {f}(x)\noutput y\n");
        let g = weft::ir::text::parse(&text, "function.weft").unwrap();
        let input = [HostArray::from_vec(
            g.get(g.find("x").unwrap()).unwrap().axes.clone(),
            vec![n],
            xs.clone(),
        )
        .unwrap()];
        let codegen = |leaf_loops, span_math| weft::CodegenOptions {
            leaf_loops,
            span_math,
            ..Default::default()
        };
        let (leaf, explained) = run_with(&g, &input, codegen(true, true), 1);
        let (inline, _) = run_with(&g, &input, codegen(false, false), 1);
        let (span, _) = run_with(&g, &input, codegen(false, true), 1);
        let (zmm, ymm) = (
            run_wide(&g, &input, true, 1),
            run_wide(&g, &input, false, 1),
        );
        for (i, x) in xs.iter().enumerate() {
            assert_eq!(
                leaf[i], inline[i],
                "{f}({x:e}): leaf against inline\n{explained}"
            );
            assert_eq!(
                leaf[i], span[i],
                "{f}({x:e}): leaf against the span routine"
            );
            assert_eq!(leaf[i], ymm[i], "{f}({x:e}): leaf against 8-lane leaf");
            assert_eq!(
                zmm[i], ymm[i],
                "{f}({x:e}): 16-lane leaf against 8-lane leaf"
            );
        }
        assert_eq!(
            explained.contains("by an assembled leaf loop"),
            AVX2.with(|a| *a),
            "{explained}"
        );
        let wide = JitOptions {
            codegen: weft::CodegenOptions {
                wide_leaves: true,
                ..Default::default()
            },
            ..JitOptions::default()
        };
        let explained = jit_common::explain(&g, &wide);
        let zmm_host = weft_runtime::Target::host().isa() >= weft_runtime::Isa::Avx512F;
        assert_eq!(
            explained.contains("16 lanes (f32x16, AVX-512 zmm) by an assembled leaf loop"),
            zmm_host,
            "{explained}"
        );
    }
}

/// A stored leaf loop realigned to its output's cache lines (`LeafLoop::realign`) computes
/// every element by the same code wherever the row starts: rows of 1020 f32s (4080 bytes,
/// so successive rows start 48 bytes further into a line) divided by a uniform divisor —
/// (a constant), which whole vectors do by the scaled reciprocal and the scalar tail exactly,
/// give the
/// bits of Cranelift's lanes, row by row.
#[test]
fn realigned_rows_compute_each_element_by_the_same_code() {
    let text = "axis R = 8\naxis C = 1020\nplaceholder x: f32[R, C]\nconstant s: f32[] = 3\n\
                q = divide(x, s)\ny = add(q, x)\noutput y\n";
    let g = weft::ir::text::parse(text, "realign.weft").unwrap();
    let mut rng = weft_ir::perturb::SplitMix(3);
    let x: Vec<f32> = (0..8 * 1020)
        .map(|_| (rng.unit() * 200.0 - 100.0) as f32)
        .collect();
    let xs = [HostArray::from_vec(
        g.get(g.find("x").unwrap()).unwrap().axes.clone(),
        vec![8, 1020],
        x,
    )
    .unwrap()];
    let (leaf, explained) = run_leaf(&g, &xs, true);
    let (lanes, _) = run_leaf(&g, &xs, false);
    if AVX2.with(|a| *a) {
        assert!(explained.contains("64-byte-aligned store"), "{explained}");
    }
    for (i, (a, b)) in leaf.iter().zip(&lanes).enumerate() {
        assert_eq!(a, b, "row {}, column {}\n{explained}", i / 1020, i % 1020);
    }
}

/// A division by a uniform divisor, the one operation whose vector code (the scaled
/// reciprocal) and scalar code (the divide) may differ by an ulp, at every row length from
/// 64 to 160: each element comes out of the code the loop's own steps would give it — the
/// leaf loop's vectors, then the loop's vector steps where a leaf vector (16 lanes on an
/// AVX-512F host) is longer than the steps, then the scalar tail — with leaf loops 16 and 8
/// lanes wide and off alike.
#[test]
fn every_tail_of_a_uniform_division_takes_the_loops_own_code() {
    for cols in 64..=160 {
        let text = format!(
            "axis R = 3\naxis C = {cols}\nplaceholder x: f32[R, C]\nconstant s: f32[] = 3\n\
             q = divide(x, s)\ny = add(q, x)\noutput y\n"
        );
        let g = weft::ir::text::parse(&text, "divide.weft").unwrap();
        let mut rng = weft_ir::perturb::SplitMix(cols as u64);
        let x: Vec<f32> = (0..3 * cols)
            .map(|_| (rng.unit() * 200.0 - 100.0) as f32)
            .collect();
        let xs = [HostArray::from_vec(
            g.get(g.find("x").unwrap()).unwrap().axes.clone(),
            vec![3, cols],
            x,
        )
        .unwrap()];
        let (leaf, explained) = run_leaf(&g, &xs, true);
        let (lanes, _) = run_leaf(&g, &xs, false);
        let (zmm, ymm) = (run_wide(&g, &xs, true, 2), run_wide(&g, &xs, false, 2));
        if AVX2.with(|a| *a) {
            assert!(
                explained.contains("by an assembled leaf loop"),
                "{explained}"
            );
        }
        for (i, b) in lanes.iter().enumerate() {
            let at = format!("C = {cols}, row {}, column {}", i / cols, i % cols);
            assert_eq!(leaf[i], *b, "leaf loops against lanes, {at}\n{explained}");
            assert_eq!(zmm[i], *b, "16-lane leaf loops against lanes, {at}");
            assert_eq!(ymm[i], *b, "8-lane leaf loops against lanes, {at}");
        }
    }
}

/// A softmax's exponentials, stored and then summed by the next loop: the leaf loop storing
/// them also adds each into that loop's f32 partials (`LeafStrategy::then_sums`, as the span
/// routine does), which combines them, runs its tail and re-runs in f64 — with the bits of
/// the same graph with leaf loops off (the span routine's pass) and 8 lanes wide, and the
/// oracle's values, at random row lengths (every tail), rows with NaN, ±inf and huge values
/// among them.
#[test]
fn a_stored_span_summed_by_the_leaf_loop_gives_the_same_bits() {
    run_property(
        "leaf_loops::a_stored_span_summed_by_the_leaf_loop_gives_the_same_bits",
        file!(),
        proptest_cases(24),
        1.0,
        (any::<u64>(), 1usize..6, 64usize..1100),
        |(seed, rows, cols), tally| {
            let text = format!(
                "axis R = {rows}\naxis C = {cols}\nplaceholder x: f32[R, C]\nm = max(x, [C])\n\
                 s = subtract(x, m)\ne = exp(s)\nt = sum(e, [C])\ny = divide(e, t)\noutput y\n"
            );
            let g = weft::ir::text::parse(&text, "softmax.weft").unwrap();
            let mut rng = weft_ir::perturb::SplitMix(seed);
            let special = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3e38, -3e38];
            let x: Vec<f32> = (0..rows * cols)
                .map(|i| match (i / cols, rng.below(64)) {
                    (1, 0) => special[rng.below(special.len())],
                    _ => (rng.unit() * 60.0 - 30.0) as f32,
                })
                .collect();
            let axes = g.get(g.find("x").unwrap()).unwrap().axes.clone();
            let xs = [HostArray::from_vec(axes, vec![rows, cols], x).unwrap()];
            let (leaf, explained) = run_leaf(&g, &xs, true);
            let (lanes, _) = run_leaf(&g, &xs, false);
            prop_assert!(leaf == lanes, "{rows} x {cols}\n{explained}");
            let (zmm, ymm) = (run_wide(&g, &xs, true, 2), run_wide(&g, &xs, false, 2));
            prop_assert!(zmm == ymm && zmm == leaf, "{rows} x {cols}\n{explained}");
            if AVX2.with(|a| *a) {
                prop_assert!(
                    explained.contains("each stored vector also summed into")
                        && explained.contains("leaf loop as it stores"),
                    "{explained}"
                );
            }
            agrees_with_the_oracle(&g, &xs, &text, tally)
        },
    );
}
