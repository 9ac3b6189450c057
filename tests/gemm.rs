//! The GEMM path (weft_compiler::gemm, weft_runtime::GemmCall) against the interpreter:
//! random shapes around the threshold, operands with their axes in either order (transposed
//! layouts), strided and reversed slices, lengths 1, 3, 17 and 1023, batch axes, f32 and f64,
//! fused and unfused, one and two threads — and which dots take the path; and sums of products
//! `sum(multiply(a, b), K)` (batched contractions, attention) on the same path.

mod jit_common;

use jit_common::{compare, jit_executable, mlp_layer, references, run_jit};
use weft::prelude::*;
use weft::{BinaryOp, ReduceOp};
use weft_compiler::gemm::GemmOptions;
use weft_ir::perturb::SplitMix;
use weft_oracle::{Run, Tolerance};

/// Options that send every dot of at least `min_work` points and sides of 2 to the GEMM.
fn options(fused: bool, min_work: u64, threads: usize) -> JitOptions {
    options_sides(fused, min_work, 2, threads)
}

/// Options that send every dot of at least `min_work` points and `min_side` rows and columns
/// to the GEMM.
fn options_sides(fused: bool, min_work: u64, min_side: u64, threads: usize) -> JitOptions {
    JitOptions {
        fused,
        // Unfused: no epilogue inside a GEMM call either (`JitOptions::unfused`).
        epilogue: fused,
        threads: Some(threads),
        gemm: Some(GemmOptions {
            min_work,
            min_side,
            min_block: 16,
            ..GemmOptions::default()
        }),
        ..JitOptions::default()
    }
}

/// Runs the outputs of `g` twice (`call`, then `call_into`) with `options`.
fn run_with(g: &Graph, inputs: &[HostArray], options: JitOptions) -> Run {
    run_jit(g, g.outputs(), inputs, options).unwrap()
}

/// How many GEMM calls the computation of `g`'s outputs makes with `options` (from `weft
/// explain`'s listing).
fn gemm_calls(g: &Graph, options: JitOptions) -> usize {
    let text = jit_common::explain(g, &options);
    text.lines().filter(|l| l.starts_with("gemm @")).count()
}

/// `g` on the GEMM path (fused and unfused, 1 and 2 threads) against the interpreter; asserts
/// that `expected` GEMM calls are made and that runs with one thread count agree bit for bit.
fn agree(g: &Graph, expected: usize) {
    let ps = g.placeholders();
    let inputs = weft_oracle::random_inputs(g, &ps, 7, false);
    let tol = Tolerance::for_graph(g);
    let refs = references(g, g.outputs(), &ps, &inputs, 2, &tol).unwrap();
    for fused in [true, false] {
        let calls = gemm_calls(g, options(fused, 1, 2));
        assert!(
            calls >= expected,
            "fused {fused}: {calls} GEMM calls, expected {expected}\n{}",
            weft::ir::text::print(g)
        );
        if let Err(m) = per_thread_count(g, &inputs, fused, &refs, &tol) {
            panic!("fused {fused} differs: {m}\n{}", weft::ir::text::print(g));
        }
    }
}

/// `g` on the GEMM path with 1 and 2 threads, each compiled and run twice: each run within
/// `tol` of `refs`, and the two runs of a thread count bit for bit alike (NaNs compared as
/// printed). The GEMM's blocks follow the thread count, so 1 and 2 threads may differ in
/// the last bits (docs/numerics.md).
fn per_thread_count(
    g: &Graph,
    inputs: &[HostArray],
    fused: bool,
    refs: &[Run],
    tol: &Tolerance,
) -> Result<(), String> {
    for threads in [1, 2] {
        let first = run_with(g, inputs, options(fused, 1, threads));
        let again = run_with(g, inputs, options(fused, 1, threads));
        compare(&first, refs, tol).map_err(|m| format!("{threads} threads: {m}"))?;
        if format!("{:?}", first.0) != format!("{:?}", again.0) {
            return Err(format!("two runs with {threads} threads differ"));
        }
    }
    Ok(())
}

#[test]
fn operands_in_either_axis_order_and_odd_lengths() {
    for dtype in [DType::F32, DType::F64] {
        for (b, i, o) in [
            (3, 17, 5),
            (17, 3, 33),
            (2, 1, 3),
            (1023, 3, 2),
            (5, 1023, 3),
        ] {
            for (x_t, w_t) in [(false, false), (true, false), (false, true), (true, true)] {
                agree(&mlp_layer(b, i, o, dtype, x_t, w_t), 1);
            }
        }
    }
}

#[test]
fn random_shapes_around_the_threshold() {
    // The default threshold, with sides from 1 to ~100 and contractions to ~200: some dots
    // take the GEMM, others the loop nest; every one must agree with the interpreter.
    let mut r = SplitMix(11);
    let mut taken = 0;
    for case in 0..16 {
        let dtype = if case % 2 == 0 {
            DType::F32
        } else {
            DType::F64
        };
        let (b, i, o) = (1 + r.below(100), 1 + r.below(200), 1 + r.below(100));
        let g = mlp_layer(b, i, o, dtype, r.chance(50), r.chance(50));
        let ps = g.placeholders();
        let inputs = weft_oracle::random_inputs(&g, &ps, case, false);
        let tol = Tolerance::for_graph(&g);
        let refs = references(&g, g.outputs(), &ps, &inputs, 2, &tol).unwrap();
        let default = JitOptions {
            threads: Some(2),
            ..JitOptions::default()
        };
        taken += gemm_calls(&g, default.clone());
        for fused in [true, false] {
            let got = run_with(
                &g,
                &inputs,
                JitOptions {
                    fused,
                    ..default.clone()
                },
            );
            if let Err(m) = compare(&got, &refs, &tol) {
                panic!("{b}x{i}x{o} fused {fused}: {m}");
            }
        }
    }
    assert!(taken > 0, "no random dot reached the GEMM threshold");
}

#[test]
fn strided_and_reversed_operands() {
    for dtype in [DType::F32, DType::F64] {
        let mut g = Graph::new();
        let (ba, ia, oa) = (
            g.axis("B", 34).unwrap(),
            g.axis("I", 19).unwrap(),
            g.axis("O", 40).unwrap(),
        );
        let x = g.placeholder("X", &[ba, ia], dtype).unwrap();
        let w = g.placeholder("W", &[oa, ia], dtype).unwrap();
        // Every other row of X, and W's rows reversed from the last in steps of 3.
        let xs = g
            .slice(
                x,
                &[(
                    ba,
                    AxisSlice::Range(SliceRange {
                        start: Some(0),
                        stop: None,
                        step: 2,
                    }),
                )],
            )
            .unwrap();
        let ws = g
            .slice(
                w,
                &[(
                    oa,
                    AxisSlice::Range(SliceRange {
                        start: None,
                        stop: None,
                        step: -3,
                    }),
                )],
            )
            .unwrap();
        let h = g.dot(xs, ws).unwrap();
        g.mark_output(h).unwrap();
        agree(&g, 1);
    }
}

#[test]
fn batch_axes_that_do_not_merge() {
    // X[B, I, C]·W[I, O] → [B, C, O]: B and C are both rows of the product, but I lies between
    // them in X, so their strides do not compose: one of them is a batch axis.
    for dtype in [DType::F32, DType::F64] {
        let mut g = Graph::new();
        let (ba, ia, ca, oa) = (
            g.axis("B", 3).unwrap(),
            g.axis("I", 17).unwrap(),
            g.axis("C", 5).unwrap(),
            g.axis("O", 7).unwrap(),
        );
        let x = g.placeholder("X", &[ba, ia, ca], dtype).unwrap();
        let w = g.placeholder("W", &[ia, oa], dtype).unwrap();
        let h = g.dot(x, w).unwrap();
        let e = g.unary(weft::UnaryOp::Exp, h).unwrap();
        g.mark_output(e).unwrap();
        agree(&g, 1);
    }
}

/// A linear layer at a small batch in PyTorch's weight layout (`W[O, I]`, so B's terms are
/// contiguous and C's rows are): the crate would pack `Wᵀ` term by term for 8 columns, so its C
/// is computed column-major in a scratch and copied (runtime/src/gemm_stage.rs) — `weft
/// explain` says so, and the results agree with the interpreter fused and unfused, on 1 and 2
/// threads. `W[I, O]` (B's columns contiguous) is written in place.
#[test]
fn a_linear_layer_in_pytorchs_layout_is_staged_and_agrees() {
    for (w_t, staged) in [(true, true), (false, false)] {
        let g = mlp_layer(8, 300, 400, DType::F32, false, w_t);
        let text = jit_common::explain(&g, &options(true, 1, 2));
        assert_eq!(
            text.contains("C computed column-major in a scratch"),
            staged,
            "W transposed {w_t}:\n{text}"
        );
        agree(&g, 1);
    }
}

#[test]
fn mlp_dot_takes_the_gemm_path_and_explain_shows_it() {
    let g = mlp_layer(256, 96, 80, DType::F32, false, false);
    let exe = jit_executable(
        &g,
        &JitOptions {
            threads: Some(2),
            ..JitOptions::default()
        },
    );
    let text = weft_compiler::explain::explain(&exe);
    assert!(
        text.contains("computed by a GEMM call"),
        "the dot is stored for the GEMM:\n{text}"
    );
    let line = text
        .lines()
        .find(|l| l.contains("gemm ") && l.contains("m 256 n 80 k 96"))
        .unwrap_or_else(|| panic!("no GEMM call of 256 x 80 x 96:\n{text}"));
    assert!(line.contains("strides (96, 1)"), "{line}");
    assert!(line.contains("2 blocks of 128 rows"), "{line}");
    assert!(text.contains("over 2 threads"), "{text}");
    // The epilogue (bias, relu) stays one fused kernel after the call.
    assert_eq!(exe.lowered().len(), 1, "{text}");
    // Below the threshold the same layer keeps the loop nest.
    let small = mlp_layer(8, 8, 8, DType::F32, false, false);
    assert_eq!(gemm_calls(&small, JitOptions::default()), 0);
    // And `gemm: None` turns the path off.
    let off = JitOptions {
        gemm: None,
        ..JitOptions::default()
    };
    assert_eq!(gemm_calls(&g, off), 0);
}

#[test]
fn long_f32_contractions_keep_f64_accumulation() {
    // K above `max_f32_k`: the f32 GEMM's error bound would pass 2^-12 · Σ|ab|.
    let g = mlp_layer(16, 8192, 16, DType::F32, false, false);
    assert_eq!(gemm_calls(&g, JitOptions::default()), 0);
    let g = mlp_layer(16, 8192, 16, DType::F64, false, false);
    assert_eq!(gemm_calls(&g, JitOptions::default()), 1);
}

#[test]
fn a_sum_of_negative_zero_products_stays_negative_zero() {
    negative_zero_sums(false);
}

#[test]
fn a_transposed_result_keeps_negative_zero_sums_too() {
    negative_zero_sums(true);
}

/// X (`b × i`) and W (`i × o`), small but for row 0 of X, −1e19 and 2e19, against column 0
/// of W, 1e19 and 2e19 (the two the other way round with `swap`): the product 4e38 passes
/// f32's range.
fn overflowing_operands((b, i, o): (usize, usize, usize), swap: bool) -> (Vec<f32>, Vec<f32>) {
    let mut xs: Vec<f32> = (0..b * i).map(|v| (v as f32 * 0.37).sin()).collect();
    let mut ws: Vec<f32> = (0..i * o).map(|v| (v as f32 * 0.71).cos()).collect();
    let (first, second) = if swap { (1, 0) } else { (0, 1) };
    (xs[first], ws[first * o]) = (-1e19, 1e19);
    (xs[second], ws[second * o]) = (2e19, 2e19);
    (xs, ws)
}

/// Row 0 of X holds −1e19 and 2e19, column 0 of W 1e19 and 2e19: the second product, 4e38,
/// passes f32's range, so the interpreter's sum (products rounded to f32, summed in f64) is
/// `inf`, where the crate's fused multiply-adds (products never rounded) may reach a finite
/// 3e38 after the first. The GEMM call sees the operands' magnitudes and computes the block
/// the interpreter's way (`GemmCall::products_may_overflow`). Either order of the two, for
/// whichever order the crate sums in; every other element stays what the crate computes.
#[test]
fn a_product_past_f32s_range_is_infinite_as_in_the_interpreter() {
    let (b, i, o) = (32, 64, 32);
    // relu(X·W + 0): element (0, 0) is the dot's.
    let g = mlp_layer(b, i, o, DType::F32, false, false);
    let ps = g.placeholders();
    for swap in [false, true] {
        let (xs, ws) = overflowing_operands((b, i, o), swap);
        let array = |p: NodeId, shape: Vec<usize>, v: Vec<f32>| {
            HostArray::from_vec(g.node(p).axes.clone(), shape, v).unwrap()
        };
        let inputs = vec![
            array(ps[0], vec![b, i], xs),
            array(ps[1], vec![i, o], ws),
            array(ps[2], vec![o], vec![0.0; o]),
        ];
        let text = jit_common::explain(&g, &options(true, 1, 2));
        assert!(
            !text.contains("a constant, its largest magnitude"),
            "{text}"
        );
        for fused in [true, false] {
            assert_eq!(gemm_calls(&g, options(fused, 1, 2)), 1);
            let got = run_with(&g, &inputs, options(fused, 1, 2));
            let v = got.0[0][0].to_vec::<f32>().unwrap();
            assert_eq!(v[0], f32::INFINITY, "swap {swap}, fused {fused}");
        }
    }
}

/// As above with W a constant: its largest magnitude is found once when the executable is
/// loaded (its storage told it, so no call scans W; `weft explain` says so), and it still
/// sends the block with the overflowing product (X's −1e19, 2e19 against W's 1e19, 2e19) to
/// the interpreter's sums.
#[test]
fn a_constant_operands_known_magnitude_still_finds_a_product_past_f32s_range() {
    let (b, i, o) = (32, 64, 32);
    for swap in [false, true] {
        let (xs, ws) = overflowing_operands((b, i, o), swap);
        let mut g = Graph::new();
        let (ba, ia, oa) = (
            g.axis("B", b).unwrap(),
            g.axis("I", i).unwrap(),
            g.axis("O", o).unwrap(),
        );
        let x = g.placeholder("X", &[ba, ia], DType::F32).unwrap();
        let w = g
            .constant(
                Some("W"),
                &[ia, oa],
                DType::F32,
                TensorInit::data(ArrayData::F32(ws)),
            )
            .unwrap();
        let y = g.dot(x, w).unwrap();
        g.mark_output(y).unwrap();
        let input = HostArray::from_vec(g.node(x).axes.clone(), vec![b, i], xs).unwrap();
        let text = jit_common::explain(&g, &options(true, 1, 2));
        assert!(
            text.contains("  B: a constant, its largest magnitude found once at load"),
            "{text}"
        );
        for fused in [true, false] {
            assert_eq!(gemm_calls(&g, options(fused, 1, 2)), 1);
            for _ in 0..2 {
                let got = run_with(&g, std::slice::from_ref(&input), options(fused, 1, 2));
                let v = got.0[0][0].to_vec::<f32>().unwrap();
                assert_eq!(v[0], f32::INFINITY, "swap {swap}, fused {fused}");
                assert!(
                    v[1..].iter().all(|e| e.is_finite()),
                    "swap {swap}, fused {fused}"
                );
            }
        }
    }
}

/// Row 0 of X is +0, W is negative: every product of row 0 is −0, so the interpreter's sum
/// (from −0) is −0, and `reciprocal` turns the zero's sign into an infinity's. With
/// `transposed`, the output is ordered [O, B], so the GEMM writes C column by column and the
/// fix-up tests C's columns.
fn negative_zero_sums(transposed: bool) {
    let mut g = Graph::new();
    let (ba, ia, oa) = (
        g.axis("B", 20).unwrap(),
        g.axis("I", 30).unwrap(),
        g.axis("O", 20).unwrap(),
    );
    let x = g.placeholder("X", &[ba, ia], DType::F32).unwrap();
    let w = g.placeholder("W", &[ia, oa], DType::F32).unwrap();
    let h = g.dot(x, w).unwrap();
    let r = g.unary(weft::UnaryOp::Reciprocal, h).unwrap();
    let r = if transposed {
        g.axes_with_order(r, &[oa, ba]).unwrap()
    } else {
        r
    };
    g.mark_output(r).unwrap();
    let mut xs = vec![1.0f32; 20 * 30];
    xs[..30].iter_mut().for_each(|v| *v = 0.0);
    let inputs = vec![
        HostArray::from_vec(g.node(x).axes.clone(), vec![20, 30], xs).unwrap(),
        HostArray::from_vec(g.node(w).axes.clone(), vec![30, 20], vec![-1.0f32; 600]).unwrap(),
    ];
    for fused in [true, false] {
        assert_eq!(gemm_calls(&g, options(fused, 1, 2)), 1);
        let got = run_with(&g, &inputs, options(fused, 1, 2));
        let v = got.0[0][0].to_vec::<f32>().unwrap();
        // Element (b, o) of the result, in its axes order.
        let at = |b: usize, o: usize| {
            if transposed {
                v[o * 20 + b]
            } else {
                v[b * 20 + o]
            }
        };
        for o in 0..20 {
            assert_eq!(at(0, o), f32::NEG_INFINITY, "{v:?}");
            for b in 1..20 {
                assert!((at(b, o) + 1.0 / 30.0).abs() < 1e-6);
            }
        }
        if transposed && fused {
            let plan = jit_common::explain(&g, &options(fused, 1, 2));
            assert!(plan.contains("C @0 strides (1, 20)"), "{plan}");
        }
    }
}

/// Random graphs (`weft_oracle`, every view and op) with every dot and every sum of
/// products read as a contraction sent to the GEMM (matrix-vector and scalar results included),
/// on inputs without special values: whatever views feed a dot, the GEMM reads them through the
/// right strides or the dot falls back to the loop nest. Graphs without a dot or sum of
/// products are redrawn, so every case counted compares one.
#[test]
fn random_graphs_with_every_dot_on_the_gemm() {
    use proptest::prelude::*;
    use proptest::test_runner::TestCaseError;
    weft_oracle::run_property(
        "gemm::random_graphs_with_every_dot_on_the_gemm",
        file!(),
        weft_oracle::proptest_cases(300),
        0.95,
        (
            weft_oracle::arb_graph_with(weft_oracle::GraphConfig::compilable()),
            any::<u64>(),
        ),
        |(g, seed), tally| {
            let outputs = weft_oracle::observed_outputs(&g, seed);
            let has_dot = g.nodes().any(|(id, n)| {
                matches!(n.op, weft::ir::Op::Dot(..)) || g.sum_of_products(id).is_some()
            });
            prop_assume!(!outputs.is_empty() && has_dot);
            let ps = g.placeholders();
            let inputs = weft_oracle::random_inputs(&g, &ps, seed, false);
            let tol = Tolerance::for_graph(&g);
            let Ok(refs) = references(&g, &outputs, &ps, &inputs, 2, &tol) else {
                tally.skipped("interpreter refuses");
                return Ok(());
            };
            for fused in [true, false] {
                let all = options_sides(fused, 1, 1, 2);
                let got = run_jit(&g, &outputs, &inputs, all).map_err(|e| {
                    TestCaseError::fail(format!(
                        "fused {fused} failed: {e}\n{}",
                        weft::ir::text::print(&g)
                    ))
                })?;
                compare(&got, &refs, &tol).map_err(|m| {
                    TestCaseError::fail(format!(
                        "fused {fused} differs (seed {seed}): {m}\n{}",
                        weft::ir::text::print(&g)
                    ))
                })?;
            }
            tally.compared();
            Ok(())
        },
    );
}

/// The attention core as nGraph writes it, with `multiply` + `sum`: scores = Σ_D q·k over
/// batch axes B and H, p = softmax over T of scores / 8, out = Σ_T p·v. `orders` permutes the
/// axes of q, k and v (transposed layouts of the same computation).
fn attention(lens: [usize; 5], dtype: DType, orders: [[usize; 4]; 3]) -> (Graph, [NodeId; 2]) {
    let mut g = Graph::new();
    let names = ["B", "H", "S", "T", "D"];
    let ax: Vec<Axis> = names
        .iter()
        .zip(lens)
        .map(|(n, l)| g.axis(n, l).unwrap())
        .collect();
    let (bb, h, s, t, d) = (ax[0], ax[1], ax[2], ax[3], ax[4]);
    let arrange = |axes: [Axis; 4], o: [usize; 4]| o.map(|i| axes[i]);
    let q = g
        .placeholder("q", &arrange([bb, h, s, d], orders[0]), dtype)
        .unwrap();
    let k = g
        .placeholder("k", &arrange([bb, h, t, d], orders[1]), dtype)
        .unwrap();
    let v = g
        .placeholder("v", &arrange([bb, h, t, d], orders[2]), dtype)
        .unwrap();
    let qk = g.binary(BinaryOp::Multiply, q, k).unwrap();
    let scores = g.reduce(ReduceOp::Sum, qk, &[d], None).unwrap();
    let eighth = g.scalar(Scalar::Float(0.125), dtype).unwrap();
    let scaled = g.binary(BinaryOp::Multiply, scores, eighth).unwrap();
    let m = g.reduce(ReduceOp::Max, scaled, &[t], None).unwrap();
    let shifted = g.binary(BinaryOp::Subtract, scaled, m).unwrap();
    let e = g.unary(weft::UnaryOp::Exp, shifted).unwrap();
    let total = g.reduce(ReduceOp::Sum, e, &[t], None).unwrap();
    let p = g.binary(BinaryOp::Divide, e, total).unwrap();
    let pv = g.binary(BinaryOp::Multiply, p, v).unwrap();
    let out = g.reduce(ReduceOp::Sum, pv, &[t], None).unwrap();
    g.mark_output(out).unwrap();
    (g, [qk, pv])
}

#[test]
fn attention_written_as_sums_of_products_runs_two_gemm_contractions() {
    let rows = [0, 1, 2, 3];
    for (lens, dtype, orders) in [
        ([2, 3, 16, 16, 8], DType::F32, [rows; 3]),
        ([1, 2, 5, 7, 3], DType::F64, [rows; 3]),
        // q with D before S (a transposed A), k and v with T innermost, H outermost.
        (
            [2, 2, 9, 11, 4],
            DType::F32,
            [[0, 1, 3, 2], [1, 0, 3, 2], [3, 1, 0, 2]],
        ),
    ] {
        let (g, _) = attention(lens, dtype, orders);
        agree(&g, 2);
    }
}

/// Batch axes whose strides compose are one axis: attention's batch and heads, laid out one
/// within the other in q, k and the scores, are one batch axis of B·H matrices (with the
/// interpreter's values); laid out otherwise (H outermost in k), they stay two.
#[test]
fn composing_batch_axes_are_one() {
    let (g, _) = attention([2, 3, 16, 16, 8], DType::F32, [[0, 1, 2, 3]; 3]);
    let text = jit_common::explain(&g, &options(true, 1, 2));
    assert!(text.contains("; batch 6 strides ("), "{text}");
    assert!(!text.contains("; batch 2 strides ("), "{text}");
    agree(&g, 2);
    // Big enough for the softmax to run in parallel: its loop is over B (2), the scores'
    // batch is B·H (6), so the softmax runs as the scores' epilogue on each group of 3
    // batch indices — and agrees with the interpreter.
    let (g, _) = attention([2, 3, 128, 128, 8], DType::F32, [[0, 1, 2, 3]; 3]);
    let text = jit_common::explain(&g, &options(true, 1, 2));
    assert!(
        text.contains("then epilogue kernel @k1 over the same groups of 3 batch indices"),
        "{text}"
    );
    assert!(
        text.contains("work items taken 3 at a time, 2 units of consecutive batch indices"),
        "{text}"
    );
    agree(&g, 2);
    let (g, _) = attention(
        [2, 2, 9, 11, 4],
        DType::F32,
        [[0, 1, 3, 2], [1, 0, 3, 2], [3, 1, 0, 2]],
    );
    let text = jit_common::explain(&g, &options(true, 1, 2));
    assert!(text.contains("; batch 2 strides ("), "{text}");
}

#[test]
fn explain_names_the_contraction_and_the_product_is_never_stored() {
    let (g, products) = attention([2, 3, 32, 32, 16], DType::F32, [[0, 1, 2, 3]; 3]);
    for fused in [true, false] {
        let exe = jit_executable(&g, &options(fused, 1, 2));
        let text = weft_compiler::explain::explain(&exe);
        // (Unfused, every value's reason to be stored is "unfused".)
        assert!(
            !fused || text.contains("sum of products computed by a GEMM call"),
            "fused {fused}:\n{text}"
        );
        assert_eq!(text.lines().filter(|l| l.starts_with("gemm @")).count(), 2);
        // Neither [B, H, S, T, D] product is stored: every planned buffer together is smaller
        // than one of them.
        let product_bytes = 2 * 3 * 32 * 32 * 16 * 4;
        assert!(
            exe.planned_buffer_bytes() < product_bytes,
            "fused {fused}: {} planned bytes\n{text}",
            exe.planned_buffer_bytes()
        );
        let plan = exe.compiled_plan();
        assert!(
            !plan
                .fusion
                .boundaries
                .iter()
                .any(|b| products.contains(&b.node)),
            "fused {fused}: a product is stored\n{text}"
        );
    }
}

#[test]
fn sums_that_are_not_contractions_stay_reductions() {
    // A product that is itself returned, a row-wise dot (no free side) and a sum over an axis
    // only one operand has: none is a GEMM contraction, all agree with the interpreter.
    let mut g = Graph::new();
    let (r, c, n) = (
        g.axis("R", 24).unwrap(),
        g.axis("C", 20).unwrap(),
        g.axis("N", 18).unwrap(),
    );
    let a = g.placeholder("a", &[r, c], DType::F32).unwrap();
    let b = g.placeholder("b", &[c, n], DType::F32).unwrap();
    let x = g.placeholder("x", &[r, c], DType::F32).unwrap();
    let returned = g.binary(BinaryOp::Multiply, a, b).unwrap();
    let s1 = g.reduce(ReduceOp::Sum, returned, &[c], None).unwrap();
    let ax = g.binary(BinaryOp::Multiply, a, x).unwrap();
    let rowdot = g.reduce(ReduceOp::Sum, ax, &[c], None).unwrap();
    let ab = g.binary(BinaryOp::Multiply, a, b).unwrap();
    let over_r = g.reduce(ReduceOp::Sum, ab, &[r], None).unwrap();
    for o in [returned, s1, rowdot, over_r] {
        g.mark_output(o).unwrap();
    }
    for fused in [true, false] {
        assert_eq!(gemm_calls(&g, options(fused, 1, 2)), 0, "fused {fused}");
    }
    agree(&g, 0);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
        weft_oracle::proptest_cases(64)
    ))]

    /// Batched contractions written as sums of products: random lengths (1 to 20), one or two
    /// contracted axes, operands' axes in random orders, f32 and f64, fused and unfused, one and
    /// two threads, against the interpreter; with one contracted axis the GEMM takes it.
    #[test]
    fn random_sums_of_products_on_the_gemm(
        lens in proptest::collection::vec(1usize..20, 5),
        seed in proptest::prelude::any::<u64>(),
        two_contracted in proptest::prelude::any::<bool>(),
        f64_ in proptest::prelude::any::<bool>(),
    ) {
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        let mut g = Graph::new();
        // M and N at least 2 (the options' shortest side), batch and K any length.
        let m = g.axis("M", lens[0] + 1).unwrap();
        let n = g.axis("N", lens[1] + 1).unwrap();
        let bt = g.axis("Bt", lens[2]).unwrap();
        let k1 = g.axis("K1", lens[3]).unwrap();
        let k2 = g.axis("K2", lens[4]).unwrap();
        let mut r = SplitMix(seed);
        let mut shuffle = |mut v: Vec<Axis>| {
            for i in (1..v.len()).rev() {
                v.swap(i, (r.next_u64() % (i as u64 + 1)) as usize);
            }
            v
        };
        let (mut la, mut ra) = (vec![m, bt, k1], vec![bt, k1, n]);
        if two_contracted {
            la.push(k2);
            ra.push(k2);
        }
        let a = g.placeholder("a", &shuffle(la), dtype).unwrap();
        let b = g.placeholder("b", &shuffle(ra), dtype).unwrap();
        let p = g.binary(BinaryOp::Multiply, a, b).unwrap();
        let ks: &[Axis] = if two_contracted { &[k1, k2] } else { &[k1] };
        let out_axes = shuffle(vec![m, n, bt]);
        let s = g.reduce(ReduceOp::Sum, p, ks, Some(&out_axes)).unwrap();
        g.mark_output(s).unwrap();
        agree(&g, usize::from(!two_contracted));
    }
}

/// `relu(… relu(relu(X·W0 + b0)·W1 + b1) …)`, `depth` layers of `width` units over a batch of
/// `batch`.
fn deep_mlp(depth: usize, batch: usize, width: usize) -> Graph {
    let mut g = Graph::new();
    let b = g.axis("B", batch).unwrap();
    let units: Vec<Axis> = (0..=depth)
        .map(|i| g.axis(&format!("A{i}"), width).unwrap())
        .collect();
    let mut h = g.placeholder("x", &[b, units[0]], DType::F32).unwrap();
    for i in 0..depth {
        let w = g
            .placeholder(&format!("W{i}"), &[units[i], units[i + 1]], DType::F32)
            .unwrap();
        let bias = g
            .placeholder(&format!("b{i}"), &[units[i + 1]], DType::F32)
            .unwrap();
        let d = g.dot(h, w).unwrap();
        let hb = g.binary(BinaryOp::Add, d, bias).unwrap();
        h = g.unary(weft::UnaryOp::Relu, hb).unwrap();
    }
    g.mark_output(h).unwrap();
    g
}

#[test]
fn a_deep_mlp_on_the_gemm_runs_in_two_scratch_buffers_whatever_its_depth() {
    // Each GEMM result and its layer's output are scratch; a GEMM's C never shares memory
    // with its A, so two buffers are the fewest, and depth must not add any.
    for depth in [2, 8, 12] {
        let g = deep_mlp(depth, 64, 48);
        let exe = jit_executable(&g, &options(true, 1, 2));
        let plan = exe.compiled_plan();
        let text = weft_compiler::explain::explain(&exe);
        assert_eq!(
            text.lines().filter(|l| l.starts_with("gemm @")).count(),
            depth,
            "{text}"
        );
        assert!(
            plan.buffers.scratch_buffers() <= 2,
            "depth {depth}: {} scratch buffers\n{}",
            plan.buffers.scratch_buffers(),
            plan.buffers.display(&plan.simplified.graph)
        );
    }
    agree(&deep_mlp(8, 32, 24), 8);
}

/// `inputs` with NaN, +inf, −inf and −0 planted at random positions (one element in 16).
/// Not the extremes near the type's largest value: an f32 GEMM's sums overflow where the
/// interpreter's f64 sums do not, as docs/numerics.md states.
fn plant_specials(inputs: Vec<HostArray>, seed: u64) -> Vec<HostArray> {
    let mut r = SplitMix(seed);
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0];
    let mut pick = |x: f64| match r.next_u64() % 16 {
        0 => specials[(r.next_u64() % 4) as usize],
        _ => x,
    };
    inputs
        .into_iter()
        .map(|a| {
            let data = match a.data() {
                ArrayData::F32(v) => {
                    ArrayData::F32(v.iter().map(|x| pick(*x as f64) as f32).collect())
                }
                ArrayData::F64(v) => ArrayData::F64(v.iter().map(|x| pick(*x)).collect()),
                other => other.clone(),
            };
            HostArray::new(a.axes().clone(), a.shape().to_vec(), data).unwrap()
        })
        .collect()
}

#[test]
fn special_values_on_the_gemm_path_match_the_interpreter() {
    // NaN, ±inf and −0 in the operands: NaN and infinities propagate as in the interpreter
    // (inf·0 is NaN, inf − inf is NaN), signed zeros are kept, for dots and sums of products
    // alike, fused and unfused, 1 and 2 threads.
    let (attention, _) = attention([1, 2, 16, 16, 8], DType::F32, [[0, 1, 2, 3]; 3]);
    for (g, calls) in [
        (mlp_layer(32, 24, 20, DType::F32, false, true), 1),
        (mlp_layer(20, 17, 33, DType::F64, true, false), 1),
        (attention, 2),
    ] {
        let ps = g.placeholders();
        for seed in 0..6 {
            let inputs = plant_specials(weft_oracle::random_inputs(&g, &ps, seed, false), seed);
            let tol = Tolerance::for_graph(&g);
            let refs = references(&g, g.outputs(), &ps, &inputs, 2, &tol).unwrap();
            for fused in [true, false] {
                assert!(gemm_calls(&g, options(fused, 1, 2)) >= calls);
                if let Err(m) = per_thread_count(&g, &inputs, fused, &refs, &tol) {
                    panic!(
                        "seed {seed}, fused {fused}: {m}\n{}",
                        weft::ir::text::print(&g)
                    );
                }
            }
        }
    }
}

#[test]
fn convolution_taps_run_as_one_gemm_call_and_match_the_interpreter() {
    // Each group's taps (two or more) are one GEMM call summing them into its result, fused
    // and unfused, 1 and 2 threads, every dot on the GEMM whatever its size (the shared
    // generator's unit-stride convolutions, and pools after some); the plain inputs, then NaN,
    // ±inf and −0 planted.
    let mut summed = 0;
    for seed in 0..60 {
        let jit_common::ConvCase { g, out } = jit_common::random_convolution(seed, Some(true));
        let mut g = g;
        for o in out {
            g.mark_output(o).unwrap();
        }
        let text = jit_common::explain(&g, &options(true, 1, 2));
        summed += usize::from(text.contains("taps summed in C"));
        let ps = g.placeholders();
        let tol = Tolerance::for_graph(&g);
        for specials in [false, true] {
            let mut inputs = weft_oracle::random_inputs(&g, &ps, seed, false);
            if specials {
                inputs = plant_specials(inputs, seed);
            }
            let refs = references(&g, g.outputs(), &ps, &inputs, 2, &tol).unwrap();
            for fused in [true, false] {
                if let Err(m) = per_thread_count(&g, &inputs, fused, &refs, &tol) {
                    panic!(
                        "seed {seed}, fused {fused}, specials {specials}: {m}\n{}",
                        weft::ir::text::print(&g)
                    );
                }
            }
        }
    }
    assert!(
        summed >= 20,
        "{summed} of 60 convolutions summed their taps in one call"
    );
}

#[test]
fn a_convolution_over_a_batch_runs_its_epilogue_per_image() {
    // The conv workload (bench/workloads/conv.weft) scaled down: a 3×3 convolution, 16 → 64
    // channels (more than one crate call's columns), over 2 images of 40 × 40 (enough for a
    // parallel epilogue), bias and relu: one GEMM call of nine taps, its operands in the
    // layout the crate reads (the padded image's positions contiguous), bias and relu run by
    // each work item on its image.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/bench/workloads/conv.weft"
    ))
    .unwrap()
    .replace("axis N = 32", "axis N = 2")
    .replace("axis C = 64", "axis C = 16")
    .replace("= 56 :", "= 40 :");
    let g = weft::ir::text::parse(&text, "conv.weft").unwrap();
    let text = jit_common::explain(&g, &options(true, 1, 2));
    assert!(text.contains("9 taps summed in C"), "{text}");
    assert!(text.contains("A @0 strides (1, "), "{text}");
    // The host decides the engine: weft's tiles (every tap in registers), else the crate (a
    // call per tap).
    let schedule = if text.contains("(weft's AVX2 tiles)")
        || text.contains("(weft's AVX-512 tiles)")
    {
        "taps: every tap summed in registers"
    } else {
        "one crate call per tap and per 48 columns (A read in place, not packed); B packed once per call"
    };
    assert!(text.contains(schedule), "{text}");
    assert!(
        text.contains("each work item runs kernel @k2 on its rows right after computing them"),
        "{text}"
    );
    let unfused = jit_common::explain(&g, &options(false, 1, 2));
    assert!(unfused.contains("9 taps summed in C"), "{unfused}");
    assert!(!unfused.contains("each work item runs"), "{unfused}");
    agree(&g, 1);
}

#[test]
fn a_convolution_of_more_products_than_max_f32_k_is_one_call_within_the_chain_bound() {
    // A 3 × 3 convolution over 512 channels (ResNet-50's layer 4): 9 × 512 = 4608 products per
    // element, more than `max_f32_k` = 4096, but no element goes through more than 931
    // roundings on either engine (the crate: 512 per tap plus 8 additions; the tiles: a slice
    // of 103 × 9 terms plus 4 additions of the slices), so all nine taps are one call; with
    // 4096 channels per tap the crate's chain alone passes the bound and the taps stay apart.
    assert_eq!(weft::runtime::longest_f32_chain(512, 9), 931);
    assert_eq!(weft::runtime::longest_f32_chain(64, 9), 576);
    assert_eq!(weft::runtime::longest_f32_chain(3000, 2), 3001);
    assert_eq!(weft::runtime::longest_f32_chain(4096, 2), 4097);
    let conv = |channels: usize| {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/bench/workloads/conv.weft"
        ))
        .unwrap()
        .replace("axis N = 32", "axis N = 1")
        .replace("axis C = 64", &format!("axis C = {channels}"))
        .replace("axis O = 64", "axis O = 16")
        .replace("= 56 :", "= 6 :");
        weft::ir::text::parse(&text, "conv.weft").unwrap()
    };
    let g = conv(512);
    let text = jit_common::explain(&g, &options(true, 1, 2));
    assert!(text.contains("9 taps summed in C"), "{text}");
    agree(&g, 1);
    let text = jit_common::explain(&conv(4096), &options(true, 1, 2));
    assert!(!text.contains("taps summed in C"), "{text}");
}

#[test]
fn a_sum_of_unrelated_dots_falls_back_to_a_gemm_call_per_dot() {
    // `X·W + Y·V`: a chain fusion reads as a sum of taps, which plan_gemm refuses (the dots
    // read different tensors), so each dot is a GEMM call of its own and the add a kernel.
    let mut g = Graph::new();
    let (b, i, o) = (
        g.axis("B", 32).unwrap(),
        g.axis("I", 24).unwrap(),
        g.axis("O", 20).unwrap(),
    );
    let x = g.placeholder("X", &[b, i], DType::F32).unwrap();
    let w = g.placeholder("W", &[i, o], DType::F32).unwrap();
    let y = g.placeholder("Y", &[b, i], DType::F32).unwrap();
    let v = g.placeholder("V", &[i, o], DType::F32).unwrap();
    let (xw, yv) = (g.dot(x, w).unwrap(), g.dot(y, v).unwrap());
    let sum = g.binary(BinaryOp::Add, xw, yv).unwrap();
    g.mark_output(sum).unwrap();
    let text = jit_common::explain(&g, &options(true, 1, 2));
    assert!(!text.contains("taps summed"), "{text}");
    agree(&g, 2);
}

#[test]
fn a_tensor_only_gemm_calls_read_keeps_its_declared_order() {
    // h = relu(W·x) is declared [O, B] and read only by the second GEMM, which contracts O.
    // Laid out in that GEMM's loop order it would be [B, O], and the kernel writing h (walking
    // [O, B]) would scatter its stores: it keeps [O, B], and the GEMM reads it column-major.
    let mut g = Graph::new();
    let (b, i, o, p) = (
        g.axis("B", 64).unwrap(),
        g.axis("I", 48).unwrap(),
        g.axis("O", 40).unwrap(),
        g.axis("P", 32).unwrap(),
    );
    let x = g.placeholder("x", &[b, i], DType::F32).unwrap();
    let w = g.placeholder("w", &[o, i], DType::F32).unwrap();
    let v = g.placeholder("v", &[o, p], DType::F32).unwrap();
    let wx = g.dot(w, x).unwrap();
    let h = g.unary(weft::UnaryOp::Relu, wx).unwrap();
    let out = g.dot(h, v).unwrap();
    g.mark_output(out).unwrap();
    assert_eq!(g.node(h).axes.iter().copied().collect::<Vec<_>>(), [o, b]);
    for fused in [true, false] {
        let exe = jit_common::jit_executable(&g, &options(fused, 1, 2));
        let plan = exe.compiled_plan();
        let text = weft_compiler::explain::explain(&exe);
        assert_eq!(text.lines().filter(|l| l.starts_with("gemm @")).count(), 2);
        let stored = plan.map().get(h).expect("h is kept");
        let layout = &plan.layouts.layouts[&stored];
        assert_eq!(layout.order, [o, b], "fused {fused}\n{text}");
    }
    agree(&g, 2);
}
