//! The JIT (fused and unfused) against the interpreter on every example and on hand-written
//! graphs covering every op and dtype, lengths 1 and non-multiples of the vector width, views
//! (slices with negative steps, pads, concat), large kernels (vectorised, parallel, with row
//! scratch), variables with assign across calls, and concurrent calls of one computation.

mod jit_common;

use jit_common::{compare, random_inputs, references, run};
use std::path::Path;
use std::sync::Arc;
use weft::prelude::*;
use weft::{BinaryOp, CompareOp, ReduceOp, UnaryOp};

const BACKENDS: [Backend; 2] = [Backend::Jit, Backend::JitUnfused];

/// Runs `outputs` of `g` on both JIT modes and the interpreter (`calls` calls) and compares.
fn agree(g: &Graph, outputs: &[NodeId], calls: usize) {
    let ps = g.placeholders();
    for seed in [1u64, 2] {
        let inputs = random_inputs(g, &ps, seed);
        let tol = weft_oracle::Tolerance::for_graph(g);
        let interp = references(g, outputs, &ps, &inputs, calls, &tol).unwrap();
        for b in BACKENDS {
            let jit = run(g, outputs, &ps, &inputs, calls, b)
                .unwrap_or_else(|e| panic!("{b:?} cannot run the graph: {e}"));
            if let Err(m) = compare(&jit, &interp, &tol) {
                panic!("{b:?} differs: {m}\n{}", weft::ir::text::print(g));
            }
        }
    }
}

/// Runs every output of `g` fused and unfused with lowering options `lower` against the
/// interpreter (two calls) and compares.
fn agree_lowered(g: &Graph, lower: weft::LowerOptions) {
    let ps = g.placeholders();
    let inputs = random_inputs(g, &ps, 1);
    let tol = weft_oracle::Tolerance::for_graph(g);
    let interp = references(g, g.outputs(), &ps, &inputs, 2, &tol).unwrap();
    for fused in [true, false] {
        let options = JitOptions {
            fused,
            lower,
            ..JitOptions::default()
        };
        let jit = jit_common::run_jit(g, g.outputs(), &inputs, options).unwrap();
        if let Err(m) = compare(&jit, &interp, &tol) {
            panic!("fused {fused} differs: {m}\n{}", weft::ir::text::print(g));
        }
    }
}

#[test]
fn every_example_matches_the_interpreter() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "weft") {
            let src = std::fs::read_to_string(&p).unwrap();
            let g = weft::ir::text::parse(&src, &p.display().to_string()).unwrap();
            agree(&g, g.outputs(), 1);
            n += 1;
        }
    }
    assert!(n >= 5);
}

/// One placeholder per dtype over axes of lengths `lens`.
fn inputs_of(g: &mut Graph, lens: &[usize], dtype: DType, k: usize) -> Vec<NodeId> {
    let axes: Vec<Axis> = lens
        .iter()
        .enumerate()
        .map(|(i, n)| g.axis(&format!("A{i}"), *n).unwrap())
        .collect();
    (0..k)
        .map(|i| g.placeholder(&format!("x{i}"), &axes, dtype).unwrap())
        .collect()
}

#[test]
fn every_elementwise_op_and_dtype() {
    for lens in [vec![1], vec![7], vec![3, 13]] {
        for dtype in DType::ALL {
            let mut g = Graph::new();
            let x = inputs_of(&mut g, &lens, dtype, 3);
            let mut outs = Vec::new();
            for u in UnaryOp::ALL {
                if let Ok(n) = g.unary(*u, x[0]) {
                    outs.push(n);
                }
            }
            for b in BinaryOp::ALL {
                if let Ok(n) = g.binary(*b, x[0], x[1]) {
                    outs.push(n);
                }
            }
            for c in CompareOp::ALL {
                outs.push(g.compare(*c, x[0], x[1]).unwrap());
            }
            let cond = g.compare(CompareOp::Less, x[1], x[2]).unwrap();
            outs.push(g.select(cond, x[0], x[2]).unwrap());
            for to in DType::ALL {
                outs.push(g.convert(x[0], to).unwrap());
            }
            agree(&g, &outs, 1);
        }
    }
}

#[test]
fn integer_power_with_negative_and_large_exponents() {
    for dtype in [DType::I32, DType::I64] {
        let mut g = Graph::new();
        let a = g.axis("N", 9).unwrap();
        let data = |v: Vec<i64>| match dtype {
            DType::I32 => ArrayData::I32(v.into_iter().map(|x| x as i32).collect()),
            _ => ArrayData::I64(v),
        };
        let base = g
            .constant(
                None,
                &[a],
                dtype,
                TensorInit::data(data(vec![1, -1, -1, 2, 3, 0, -2, 5, 7])),
            )
            .unwrap();
        let exp = g
            .constant(
                None,
                &[a],
                dtype,
                TensorInit::data(data(vec![-5, -3, -4, -1, 40, 0, 31, 3, 1000])),
            )
            .unwrap();
        let p = g.placeholder("p", &[a], dtype).unwrap();
        let base = g.binary(BinaryOp::Add, base, p).unwrap();
        let out = g.binary(BinaryOp::Power, base, exp).unwrap();
        agree(&g, &[out], 1);
    }
}

#[test]
fn every_reduction_and_dtype() {
    for lens in [vec![1, 1], vec![5, 7], vec![3, 17]] {
        for dtype in DType::ALL {
            let mut g = Graph::new();
            let x = inputs_of(&mut g, &lens, dtype, 1)[0];
            let axes: Vec<Axis> = g.node(x).axes.iter().copied().collect();
            let mut outs = Vec::new();
            for op in ReduceOp::ALL {
                for red in [
                    vec![axes[1]],
                    vec![axes[0], axes[1]],
                    vec![axes[1], axes[0]],
                    vec![],
                ] {
                    if let Ok(n) = g.reduce(*op, x, &red, None) {
                        outs.push(n);
                    }
                }
            }
            agree(&g, &outs, 1);
        }
    }
}

#[test]
fn arg_reductions_find_the_first_nan() {
    let mut g = Graph::new();
    let a = g.axis("N", 6).unwrap();
    let c = g
        .constant(
            None,
            &[a],
            DType::F32,
            TensorInit::data(ArrayData::F32(vec![
                1.0,
                9.0,
                f32::NAN,
                9.0,
                f32::NAN,
                -3.0,
            ])),
        )
        .unwrap();
    let p = g.placeholder("p", &[a], DType::F32).unwrap();
    let x = g.binary(BinaryOp::Add, c, p).unwrap();
    let outs: Vec<NodeId> = [
        ReduceOp::ArgMax,
        ReduceOp::ArgMin,
        ReduceOp::Max,
        ReduceOp::Min,
    ]
    .iter()
    .map(|op| g.reduce(*op, x, &[a], None).unwrap())
    .collect();
    agree(&g, &outs, 1);
}

#[test]
fn dot_products_of_every_numeric_dtype() {
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        for (m, k, n) in [(1, 1, 1), (3, 5, 7), (17, 9, 6), (5, 33, 37)] {
            let mut g = Graph::new();
            let (am, ak, an) = (
                g.axis("M", m).unwrap(),
                g.axis("K", k).unwrap(),
                g.axis("N", n).unwrap(),
            );
            let x = g.placeholder("x", &[am, ak], dtype).unwrap();
            let y = g.placeholder("y", &[ak, an], dtype).unwrap();
            let d = g.dot(x, y).unwrap();
            let r = g.unary(UnaryOp::Relu, d).unwrap();
            agree(&g, &[r, d], 1);
        }
    }
}

#[test]
fn views_slices_pads_and_concat() {
    let mut g = Graph::new();
    let a = g.axis("A", 7).unwrap();
    let b = g.axis("B", 5).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
    let y = g.placeholder("y", &[b], DType::F32).unwrap();
    let rev = g
        .slice(
            x,
            &[(
                a,
                AxisSlice::Range(SliceRange {
                    start: Some(-1),
                    stop: None,
                    step: -2,
                }),
            )],
        )
        .unwrap();
    let picked = g.slice(x, &[(b, AxisSlice::Index(-2))]).unwrap();
    let padded = g.pad(x, &[(a, 2, 1), (b, 0, 3)]).unwrap();
    let padded_exp = g.unary(UnaryOp::Exp, padded).unwrap();
    let t = g.transpose(x).unwrap();
    let f = g.flatten(x, &[a, b]).unwrap();
    let fs = g.unary(UnaryOp::Negative, f).unwrap();
    let cat = g.concat(&[(y, b), (y, b)]).unwrap();
    let cat_sq = g.unary(UnaryOp::Square, cat).unwrap();
    let e = g.expand_dims(y, a, 0).unwrap();
    let sum = g.binary(BinaryOp::Add, e, x).unwrap();
    let pa = g.node(padded_exp).axes.iter().next().copied().unwrap();
    let red = g.reduce(ReduceOp::Sum, padded_exp, &[pa], None).unwrap();
    agree(
        &g,
        &[
            rev, picked, padded, padded_exp, t, fs, cat, cat_sq, sum, red,
        ],
        1,
    );
}

#[test]
fn large_kernels_vectorise_and_run_in_parallel() {
    let mut g = Graph::new();
    let r = g.axis("R", 300).unwrap();
    let c = g.axis("C", 301).unwrap();
    let x = g.placeholder("x", &[r, c], DType::F32).unwrap();
    // softmax over C: row scratch, parallel over R.
    let m = g.reduce(ReduceOp::Max, x, &[c], None).unwrap();
    let s = g.binary(BinaryOp::Subtract, x, m).unwrap();
    let e = g.unary(UnaryOp::Exp, s).unwrap();
    let t = g.reduce(ReduceOp::Sum, e, &[c], None).unwrap();
    let sm = g.binary(BinaryOp::Divide, e, t).unwrap();
    // a long elementwise chain.
    let th = g.unary(UnaryOp::Tanh, x).unwrap();
    let sg = g.unary(UnaryOp::Sigmoid, th).unwrap();
    let ch = g.binary(BinaryOp::Multiply, sg, x).unwrap();
    let am = g.reduce(ReduceOp::ArgMax, x, &[c], None).unwrap();
    agree(&g, &[sm, ch, am], 1);
}

#[test]
fn variables_and_assign_persist_across_calls() {
    let mut g = Graph::new();
    let n = g.axis("N", 5).unwrap();
    let w = g
        .variable("w", &[n], DType::F32, TensorInit::Fill(Scalar::Float(0.5)))
        .unwrap();
    let k = g.persistent_tensor("k", &[n], DType::I32, None).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let w1 = g.binary(BinaryOp::Add, w, x).unwrap();
    let aw = g.assign(w, w1).unwrap();
    let one = g.scalar(Scalar::Int(1), DType::I32).unwrap();
    let k1 = g.binary(BinaryOp::Add, k, one).unwrap();
    let ak = g.assign(k, k1).unwrap();
    let read = g.binary(BinaryOp::Multiply, w, x).unwrap();
    agree(&g, &[aw, ak, read], 3);
    // Without asking for the assign, it does not run.
    agree(&g, &[read], 2);
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let c = t.computation(&[aw], &[x]).unwrap();
    let xs = HostArray::from_vec(Axes::new([n]).unwrap(), vec![5], vec![1f32; 5]).unwrap();
    c.call(std::slice::from_ref(&xs)).unwrap();
    c.call(&[xs]).unwrap();
    assert_eq!(
        t.value_of(w).unwrap().to_vec::<f32>().unwrap(),
        vec![2.5f32; 5]
    );
}

#[test]
fn a_computation_is_send_sync_and_correct_from_several_threads() {
    fn is_send_sync<T: Send + Sync>() {}
    is_send_sync::<Computation>();
    let mut g = Graph::new();
    let r = g.axis("R", 64).unwrap();
    let c = g.axis("C", 333).unwrap();
    let x = g.placeholder("x", &[r, c], DType::F32).unwrap();
    let m = g.reduce(ReduceOp::Mean, x, &[c], None).unwrap();
    let d = g.binary(BinaryOp::Subtract, x, m).unwrap();
    let out = g.unary(UnaryOp::Exp, d).unwrap();
    let ps = g.placeholders();
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    let comp = Arc::new(t.computation(&[out], &ps).unwrap());
    let handles: Vec<_> = (0..4u64)
        .map(|seed| {
            let comp = Arc::clone(&comp);
            let g = g.clone();
            let ps = ps.clone();
            std::thread::spawn(move || {
                let inputs = random_inputs(&g, &ps, seed);
                let expected = run(&g, &[out], &ps, &inputs, 1, Backend::Jit).unwrap();
                for _ in 0..20 {
                    let got = comp.call(&inputs).unwrap();
                    assert_eq!(got[0], expected.0[0][0], "bitwise deterministic");
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn the_default_backend_is_the_jit() {
    assert_eq!(Backend::default(), Backend::Jit);
}

/// The JIT's out-of-line sin/cos for huge arguments (where the polynomial's reduction stops
/// being exact) give the interpreter's values; both are std's, so the libm comparison is
/// `sin_cos_and_power_match_an_independent_libm_densely`.
#[test]
fn sin_and_cos_of_huge_arguments_match_the_interpreter() {
    for dtype in [DType::F32, DType::F64] {
        let mut g = Graph::new();
        let n = g.axis("N", 9).unwrap();
        let v = vec![
            1e300,
            -1e300,
            3e38,
            1e6,
            -2e5,
            123456.7,
            0.5,
            f64::INFINITY,
            99999.0,
        ];
        let data = match dtype {
            DType::F32 => ArrayData::F32(v.iter().map(|x| *x as f32).collect()),
            _ => ArrayData::F64(v),
        };
        let c = g
            .constant(None, &[n], dtype, TensorInit::data(data))
            .unwrap();
        let p = g.placeholder("p", &[n], dtype).unwrap();
        let z = g.binary(BinaryOp::Multiply, p, p).unwrap();
        let zero = g.binary(BinaryOp::Subtract, z, z).unwrap();
        let x = g.binary(BinaryOp::Add, c, zero).unwrap();
        let s = g.unary(UnaryOp::Sin, x).unwrap();
        let co = g.unary(UnaryOp::Cos, x).unwrap();
        agree(&g, &[s, co], 1);
    }
}

#[test]
fn a_reduction_over_a_part_of_a_flattened_result_axis_gets_its_own_loop() {
    // t6 keeps the flattened axis A2·A3*·A0 and reduces A0: the result is iterated whole so the
    // reduction has a loop over A0 of its own (found by jit_props).
    let src = "axis A0 = 5\naxis A2 = 1\naxis A3 = 5\naxis \"A2*A3**A0\" = flatten(A2, A3*, A0)\n\
               placeholder t1: i32[A2, A3*, A0]\nt3 = flatten(t1, [A2, A3*, A0])\n\
               t5 = broadcast(t3, [\"A2*A3**A0\", A0])\nt6 = sum(t5, [A0])\noutput t6\n";
    let g = weft::ir::text::parse(src, "flat.weft").unwrap();
    agree(&g, g.outputs(), 1);
}

#[test]
fn a_dot_whose_flattened_result_axis_contains_a_contracted_axis() {
    // Found by jit_props: t12's result axis A0·A0* holds the contracted A0.
    let src = "axis A0 = 3\naxis \"A0*A0*\" = flatten(A0, A0*)\n\
               placeholder t1: f32[A0**, A0]\nt2 = cast_axes(t1, [A0, A0*])\n\
               t3 = flatten(t2, [A0, A0*])\nt9 = add(t1, t3)\nt12 = dot(t1, t9)\noutput t12\n";
    let g = weft::ir::text::parse(src, "dot.weft").unwrap();
    agree(&g, g.outputs(), 1);
}

#[test]
fn f32_products_accumulate_without_overflowing_early() {
    let src = "axis N = 6\nvariable t1: f32[N] = [7.421138e-20, 1.07591795e24, 4.2617677e33, -0.0, 0.0, -15.625]\n\
               t2 = prod(t1, [N])\noutput t2\n";
    let g = weft::ir::text::parse(src, "prod.weft").unwrap();
    agree(&g, g.outputs(), 1);
}

#[test]
fn f32_dots_overflow_where_the_interpreter_does() {
    // Found by jit_props: f32 products beyond f32 range would give inf − inf = NaN; taken in
    // f64 as the interpreter's, the sum is inf.
    let src = "axis A = 2\naxis B = 3\n\
               variable t1: f32[A, B] = [-15.625, -662.9258, -inf, 4.3995447, -7.7344905e37, 0.0]\n\
               variable t2: f32[B] = [-7.7344905e37, -7.7344905e37, 2.0]\n\
               t3 = dot(t1, t2)\noutput t3\n";
    let g = weft::ir::text::parse(src, "dot_overflow.weft").unwrap();
    agree(&g, g.outputs(), 1);
}

/// A row of f64 terms whose partial sums overflow in the interpreter's order: `inf` there,
/// finite if reassociated. 64 terms, so the reduction loop would vectorise with accumulators.
fn overflowing_f64_rows(op: &str) -> String {
    let mut v = Vec::new();
    for r in 0..6 {
        for i in 0..64 {
            v.push(match (r + i) % 4 {
                0 | 1 => "1e308".to_string(),
                2 => "-1e308".to_string(),
                _ => format!("{}.5", i),
            });
        }
    }
    format!(
        "axis R = 6\naxis N = 64\nvariable x: f64[R, N] = [{}]\nvariable w: f64[N] = 1.0\n\
         s = {op}\noutput s\n",
        v.join(", ")
    )
}

#[test]
fn f64_sums_dots_and_means_keep_the_interpreter_order_for_overflow() {
    for op in ["sum(x, [N])", "mean(x, [N])", "dot(x, w)", "sum(x, [R, N])"] {
        let src = overflowing_f64_rows(op);
        let g = weft::ir::text::parse(&src, "overflow.weft").unwrap();
        agree(&g, g.outputs(), 1);
    }
}

#[test]
fn products_keep_the_interpreter_order() {
    // In order, 1e200 · 1e200 overflows to inf and stays there; eight reassociated partial
    // products (lanes × unroll) would each see 1e200 · 1e-200 · … = 1 instead.
    let term = |i: usize| match i % 32 {
        0 | 1 | 16 | 17 => "1e200",
        8 | 9 | 24 | 25 => "1e-200",
        _ => "1.0",
    };
    let terms: Vec<&str> = (0..64).map(term).collect();
    let src = format!(
        "axis R = 2\naxis N = 32\nvariable x: f64[R, N] = [{}]\np = prod(x, [N])\noutput p\n",
        terms.join(", ")
    );
    let g = weft::ir::text::parse(&src, "prod_order.weft").unwrap();
    agree(&g, g.outputs(), 1);
}

#[test]
fn resident_runs_give_the_outputs_of_a_call_and_can_be_repeated() {
    use weft::runtime::State;
    use weft_compiler::executable::{JitExecutable, JitOptions};
    let src = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/layernorm.weft"),
    )
    .unwrap();
    let g = weft::ir::text::parse(&src, "layernorm.weft").unwrap();
    let ps = g.placeholders();
    let inputs = random_inputs(&g, &ps, 3);
    let graph = Arc::new(g.clone());
    let state = State::initial(&graph).unwrap();
    for options in [JitOptions::default(), JitOptions::unfused()] {
        let exe = JitExecutable::new(Arc::clone(&graph), g.outputs(), &ps, &options).unwrap();
        let mut state_for_call = state.clone();
        let called = weft::Executable::run(&exe, &inputs, &mut state_for_call).unwrap();
        let mut run = exe.resident(&inputs, &state).unwrap();
        assert_eq!(run.outputs().unwrap(), called);
        run.execute().unwrap();
        run.execute().unwrap();
        assert_eq!(run.outputs().unwrap(), called);
    }
}

#[test]
fn requested_layouts_and_lowering_options_reach_the_jit_through_the_transformer() {
    // x is stored C-major (transposed), the output R-major as declared; arrays go in and come
    // out in their declared order either way. Every kernel is forced parallel in two chunks.
    let mut g = Graph::new();
    let r = g.axis("R", 6).unwrap();
    let c = g.axis("C", 9).unwrap();
    let x = g.placeholder("x", &[r, c], DType::F32).unwrap();
    let m = g.reduce(ReduceOp::Max, x, &[c], None).unwrap();
    let s = g.binary(BinaryOp::Subtract, x, m).unwrap();
    let e = g.unary(UnaryOp::Exp, s).unwrap();
    g.mark_output(e).unwrap();
    let xs = HostArray::from_vec(
        Axes::new([r, c]).unwrap(),
        vec![6, 9],
        (0..54).map(|i| (i as f32 * 0.37).sin()).collect::<Vec<_>>(),
    )
    .unwrap();
    let expected = Transformer::new(g.clone(), Backend::Interpreter)
        .unwrap()
        .computation(&[e], &[x])
        .unwrap()
        .call(std::slice::from_ref(&xs))
        .unwrap();
    for layouts in [
        vec![(x, vec![c, r])],
        vec![(x, vec![c, r]), (e, vec![c, r])],
    ] {
        let options = JitOptions {
            layouts,
            lower: weft::LowerOptions {
                parallel_min_points: 1,
                parallel_max_chunks: 2,
                ..weft::LowerOptions::default()
            },
            ..JitOptions::default()
        };
        let t = Transformer::with_jit_options(g.clone(), options).unwrap();
        let c = t.computation(&[e], &[x]).unwrap();
        let got = c.call(std::slice::from_ref(&xs)).unwrap();
        assert_eq!(got[0].axes(), expected[0].axes());
        let (a, b) = (
            got[0].to_vec::<f32>().unwrap(),
            expected[0].to_vec::<f32>().unwrap(),
        );
        for (p, q) in a.iter().zip(&b) {
            assert!((p - q).abs() <= 1e-6 * q.abs().max(1.0), "{a:?} vs {b:?}");
        }
    }
}

/// Fuzz finding 003 (tests/findings/fuzz_unflatten_axis_named_like_a_part_of_another.weft):
/// `A·B·C` flattens `A·B`, so a kernel over `x: [A·B·C, A·B]` iterates `A·B` twice — as the
/// second axis and as a part of the first. Unflattening the second axis must read its index
/// from `A` and `B`, its own parts, not from the key `A·B` of the first axis's frame; the
/// fused kernel read the first axis's coordinate and gave wrong values.
#[test]
fn unflattening_an_axis_that_is_also_a_part_of_another_reads_its_own_index() {
    let src = "axis A = 2\naxis B = 3\naxis C = 2\naxis \"A*B\" = flatten(A, B)\n\
               axis \"A*B*C\" = flatten(\"A*B\", C)\n\
               placeholder x: f64[\"A*B*C\", \"A*B\"]\nu = unflatten(x, \"A*B\")\n\
               y = negative(u)\noutput u\noutput y\n";
    let g = weft::ir::text::parse(src, "unflatten.weft").unwrap();
    agree(&g, g.outputs(), 1);
}

/// Row sums of 4096 f32 terms accumulate in f32 vector partials (`weft_compiler::narrow_sums`):
/// the documented bound, `2⁻¹⁴ · Σ|xᵢ|` before the final rounding, holds on terms spanning
/// six orders of magnitude with both signs, and the kernel really is narrowed.
#[test]
fn narrowed_f32_row_sums_stay_within_their_bound() {
    let src = "axis R = 8\naxis C = 4096\nplaceholder x: f32[R, C]\ns = sum(x, [C])\noutput s\n";
    let g = weft::ir::text::parse(src, "rows.weft").unwrap();
    let narrow = weft::LowerOptions::default();
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let kernels = weft_compiler::lower_plan(&plan, &narrow).unwrap();
    let text = kernels[0].kernel.to_string();
    assert!(text.contains("sum f64 partials f32"), "{text}");
    let (r, c) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let xs: Vec<f32> = (0..8 * 4096)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let sign = if state & 1 == 0 { 1.0 } else { -1.0 };
            let mag = 10f32.powi((state >> 8) as i32 % 7 - 3);
            sign * mag * ((state >> 20) % 1000) as f32 / 1000.0
        })
        .collect();
    let input = HostArray::from_vec(Axes::new([r, c]).unwrap(), vec![8, 4096], xs.clone()).unwrap();
    let t = Transformer::with_jit_options(
        g.clone(),
        JitOptions {
            lower: narrow,
            ..JitOptions::default()
        },
    )
    .unwrap();
    let comp = t
        .computation(&[g.find("s").unwrap()], &[g.find("x").unwrap()])
        .unwrap();
    let got = comp.call(&[input]).unwrap()[0].to_vec::<f32>().unwrap();
    for (row, got) in xs.chunks(4096).zip(got) {
        let exact: f64 = row.iter().map(|&x| f64::from(x)).sum();
        let abs: f64 = row.iter().map(|&x| f64::from(x).abs()).sum();
        let bound = abs * 2f64.powi(-14) + exact.abs() * 2f64.powi(-23);
        let err = (f64::from(got) - exact).abs();
        assert!(
            err <= bound,
            "sum {got} vs exact {exact}: error {err} > {bound}"
        );
    }
}

/// An f32 partial that overflows where f64 would not re-runs its row in f64
/// (`AccDecl::narrow_partials`): `3e38 + 3e38 − 3e38` in one partial is `3e38`, not `inf`,
/// on the JIT as in the interpreter; rows whose f64 sum is itself infinite or NaN (an `inf`
/// term, `inf − inf`, a NaN, a total past f32's range) keep that class; a row re-run next to
/// rows that are not leaves them alone. Rows of 4099: vector steps and a scalar tail.
#[test]
fn narrowed_row_sums_rerun_in_f64_when_an_f32_partial_overflows() {
    const C: usize = 4099;
    let src = format!(
        "axis R = 7\naxis C = {C}\nplaceholder x: f32[R, C]\ns = sum(x, [C])\nm = mean(x, [C])\n\
         output s\noutput m\n"
    );
    let g = weft::ir::text::parse(&src, "rows.weft").unwrap();
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let kernels = weft_compiler::lower_plan(&plan, &Default::default()).unwrap();
    let text: String = kernels.iter().map(|k| k.kernel.to_string()).collect();
    assert!(text.contains("partials f32"), "{text}");
    let big = 3e38f32;
    let mut xs = vec![0.25f32; 7 * C];
    let mut set = |row: usize, col: usize, v: f32| xs[row * C + col] = v;
    // Row 0: three terms into one partial (columns 16 apart): inf in f32, 3e38 in f64.
    set(0, 5, big);
    set(0, 21, big);
    set(0, 37, -big);
    // Row 1: the same, the negative term in the scalar tail.
    set(1, 5, big);
    set(1, 21, big);
    set(1, 4098, -big);
    // Rows 2-5: infinite or NaN in f64 too.
    set(2, 7, f32::INFINITY);
    set(3, 7, f32::INFINITY);
    set(3, 9, f32::NEG_INFINITY);
    set(4, 100, f32::NAN);
    set(5, 1, big);
    set(5, 2, big);
    // Row 6: ordinary.
    let (r, c) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
    let input = HostArray::from_vec(Axes::new([r, c]).unwrap(), vec![7, C], xs.clone()).unwrap();
    for backend in BACKENDS {
        let t = Transformer::new(g.clone(), backend).unwrap();
        let comp = t
            .computation(
                &[g.find("s").unwrap(), g.find("m").unwrap()],
                &[g.find("x").unwrap()],
            )
            .unwrap();
        let got = comp.call(std::slice::from_ref(&input)).unwrap();
        let (sums, means) = (
            got[0].to_vec::<f32>().unwrap(),
            got[1].to_vec::<f32>().unwrap(),
        );
        for (i, row) in xs.chunks(C).enumerate() {
            let exact: f64 = row.iter().map(|&x| f64::from(x)).sum();
            for (what, got, want) in [
                ("sum", sums[i], exact as f32),
                ("mean", means[i], (exact / C as f64) as f32),
            ] {
                let ok = if want.is_finite() {
                    (f64::from(got) - f64::from(want)).abs() <= 1e-6 * f64::from(want.abs()) + 1e-3
                } else {
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan())
                };
                assert!(ok, "{backend:?} row {i} {what}: {got} vs {want}");
            }
        }
    }
}

/// Vectorised f32 row max/min reduce with `maxps`/`minps` and settle NaN and signed zeros
/// from the terms' bits after the loop (`codegen::translate`, `Extreme`): every special case,
/// at positions in the vector steps (each lane and part) and in the scalar tail.
#[test]
fn vector_row_max_and_min_settle_nans_and_signed_zeros_exactly() {
    const C: usize = 67; // 4 vector steps of 16 and a tail of 3
    let neg_nan = f32::from_bits(0xffc0_0000);
    let low_neg_nan = f32::from_bits(0xff80_0001);
    let high_pos_nan = f32::from_bits(0x7fff_ffff);
    let mut rows: Vec<Vec<f32>> = Vec::new();
    let base_neg: Vec<f32> = (0..C).map(|i| -1.0 - i as f32).collect();
    let base_pos: Vec<f32> = (0..C).map(|i| 1.0 + i as f32).collect();
    for at in [0, 1, 5, 17, 30, 63, 64, 66] {
        for (base, special) in [
            (&base_neg, 0.0),
            (&base_neg, -0.0),
            (&base_pos, 0.0),
            (&base_pos, -0.0),
            (&base_pos, f32::NAN),
            (&base_neg, neg_nan),
            (&base_pos, low_neg_nan),
            (&base_neg, high_pos_nan),
            (&base_neg, f32::INFINITY),
            (&base_pos, f32::NEG_INFINITY),
        ] {
            let mut row = base.clone();
            row[at] = special;
            rows.push(row);
        }
        // Both zeros, the other sign elsewhere: max is +0, min is −0 whatever the order.
        for (first, second) in [(0.0f32, -0.0f32), (-0.0, 0.0)] {
            for base in [&base_neg, &base_pos] {
                let mut row = base.clone();
                row[at] = first;
                row[(at + 31) % C] = second;
                rows.push(row);
            }
        }
    }
    rows.push(vec![-0.0; C]);
    rows.push(vec![0.0; C]);
    rows.push(vec![f32::NEG_INFINITY; C]);
    let mut g = Graph::new();
    let (r, c) = (g.axis("R", rows.len()).unwrap(), g.axis("C", C).unwrap());
    let x = g.placeholder("x", &[r, c], DType::F32).unwrap();
    let outs: Vec<NodeId> = [ReduceOp::Max, ReduceOp::Min]
        .iter()
        .map(|op| g.reduce(*op, x, &[c], None).unwrap())
        .collect();
    let data: Vec<f32> = rows.concat();
    let input = HostArray::from_vec(Axes::new([r, c]).unwrap(), vec![rows.len(), C], data).unwrap();
    let inputs = [input];
    let tol = weft_oracle::Tolerance::for_graph(&g);
    let interp = references(&g, &outs, &[x], &inputs, 1, &tol).unwrap();
    for b in BACKENDS {
        let jit = run(&g, &outs, &[x], &inputs, 1, b).unwrap();
        if let Err(m) = compare(&jit, &interp, &tol) {
            panic!("{b:?} differs: {m}");
        }
    }
    // The settling is what is tested: the row loop must be a vector loop.
    for &o in &outs {
        g.mark_output(o).unwrap();
    }
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let kernels = weft_compiler::lower_plan(&plan, &Default::default()).unwrap();
    let text = kernels[0].kernel.to_string();
    assert!(text.contains("vectorize"), "{text}");
}

/// A divisor uniform over a vector loop is applied as a scaled reciprocal
/// (`codegen::translate`, `scaled_reciprocal`): within 2 ulp of the divide, with the divide's
/// zeros, infinities and NaNs, also for subnormal, huge, zero, infinite and NaN divisors and
/// dividends whose quotients overflow or underflow.
#[test]
fn division_by_a_row_value_matches_the_divide_at_every_magnitude() {
    const C: usize = 67;
    for dtype in [DType::F32, DType::F64] {
        let (tiny, huge, min_normal) = match dtype {
            DType::F32 => (
                f64::from(f32::from_bits(1)),
                f64::from(f32::MAX),
                f64::from(f32::MIN_POSITIVE),
            ),
            _ => (f64::from_bits(1), f64::MAX, f64::MIN_POSITIVE),
        };
        let divisors = [
            1.0,
            -3.0,
            tiny,
            -tiny * 3.0,
            min_normal * 0.75,
            min_normal,
            huge,
            -huge / 3.0,
            huge / 7.0,
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let dividends: Vec<f64> = (0..C)
            .map(|i| match i % 11 {
                0 => tiny * (i + 1) as f64,
                1 => huge / (i + 1) as f64,
                2 => 0.0,
                3 => -0.0,
                4 => f64::INFINITY,
                5 => f64::NAN,
                6 => min_normal * 1.5,
                _ => (i as f64 - 30.0) * 0.37,
            })
            .collect();
        let mut g = Graph::new();
        let (r, c) = (
            g.axis("R", divisors.len()).unwrap(),
            g.axis("C", C).unwrap(),
        );
        let x = g.placeholder("x", &[r, c], dtype).unwrap();
        let d = g.placeholder("d", &[r], dtype).unwrap();
        let q = g.binary(BinaryOp::Divide, x, d).unwrap();
        let xs: Vec<f64> = divisors.iter().flat_map(|_| dividends.clone()).collect();
        let (xa, da) = match dtype {
            DType::F32 => (
                ArrayData::F32(xs.iter().map(|&v| v as f32).collect()),
                ArrayData::F32(divisors.iter().map(|&v| v as f32).collect()),
            ),
            _ => (ArrayData::F64(xs), ArrayData::F64(divisors.to_vec())),
        };
        let inputs = [
            HostArray::new(Axes::new([r, c]).unwrap(), vec![divisors.len(), C], xa).unwrap(),
            HostArray::new(Axes::new([r]).unwrap(), vec![divisors.len()], da).unwrap(),
        ];
        let tol = weft_oracle::Tolerance::for_graph(&g);
        let interp = references(&g, &[q], &[x, d], &inputs, 1, &tol).unwrap();
        for b in BACKENDS {
            let jit = run(&g, &[q], &[x, d], &inputs, 1, b).unwrap();
            if let Err(m) = compare(&jit, &interp, &tol) {
                panic!("{dtype:?} {b:?} differs: {m}");
            }
        }
    }
}

/// Transposing copies are tiled (`compiler/src/tile.rs`): every permutation of a 3-D tensor and
/// 2-D transposes of every dtype, at lengths that are and are not multiples of the tile, match
/// the interpreter; the 2-D float transpose is tiled.
#[test]
fn transposing_copies_are_tiled_and_exact() {
    for dtype in DType::ALL {
        for (r, c) in [(64, 128), (48, 80), (33, 64)] {
            let src = format!(
                "axis R = {r}\naxis C = {c}\nplaceholder x: {}[R, C]\ny = axes_with_order(x, [C, R])\noutput y\n",
                dtype.name()
            );
            let g = weft::ir::text::parse(&src, "t.weft").unwrap();
            agree(&g, g.outputs(), 1);
            if dtype == DType::F32 && r % 16 == 0 {
                let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
                let kernels = weft_compiler::lower_plan(&plan, &Default::default()).unwrap();
                let text = kernels[0].kernel.to_string();
                assert_eq!(text.matches("loop ").count(), 4, "{text}");
                let why = jit_common::explain(&g, &JitOptions::default());
                assert!(why.contains("tiled 16 x 16: %x strides"), "{why}");
            }
        }
    }
    let orders = [
        "B, M, A", "B, A, M", "M, B, A", "M, A, B", "A, B, M", "A, M, B",
    ];
    for order in orders {
        let src = format!(
            "axis B = 32\naxis M = 16\naxis A = 64\nplaceholder t: f32[B, M, A]\n\
             y = axes_with_order(t, [{order}])\noutput y\n"
        );
        let g = weft::ir::text::parse(&src, "t3.weft").unwrap();
        agree(&g, g.outputs(), 1);
    }
}

/// Tiled f32 transposes call the native routine (`weft_runtime::transpose`) once per parallel
/// chunk, and give the bits of the jammed loops (native transposes off): 2-D shapes whose
/// sides are and are not multiples of the routine's units (16 rows, 8 columns), a batched
/// 3-D transpose, inputs read in place at every 4-byte misalignment (the routine's blocks of
/// columns start where the input is aligned), streamed stores forced on and off, one thread
/// and two.
#[test]
fn native_transposes_give_the_bits_of_the_jammed_loops() {
    let cases = [
        (
            "axis R = 64\naxis C = 80\nplaceholder x: f32[R, C]",
            "[C, R]",
        ),
        (
            "axis R = 48\naxis C = 136\nplaceholder x: f32[R, C]",
            "[C, R]",
        ),
        (
            "axis R = 16\naxis C = 64\nplaceholder x: f32[R, C]",
            "[C, R]",
        ),
        (
            "axis R = 256\naxis C = 96\nplaceholder x: f32[R, C]",
            "[C, R]",
        ),
        (
            "axis B = 3\naxis R = 48\naxis C = 64\nplaceholder x: f32[B, R, C]",
            "[B, C, R]",
        ),
    ];
    for (decl, order) in cases {
        let src = format!("{decl}\ny = axes_with_order(x, {order})\noutput y\n");
        let g = weft::ir::text::parse(&src, "t.weft").unwrap();
        let ps = g.placeholders();
        let input = random_inputs(&g, &ps, 5).remove(0);
        let values = input.as_slice::<f32>().unwrap();
        let bits_of = |native: bool, stream_min_bytes, threads, offset: usize| {
            let options = JitOptions {
                codegen: weft::CodegenOptions {
                    native_transpose: native,
                    stream_min_bytes,
                    ..Default::default()
                },
                threads,
                ..JitOptions::default()
            };
            let explained = jit_common::explain(&g, &options);
            let t = Transformer::with_jit_options(g.clone(), options).unwrap();
            let c = t.computation(g.outputs(), &ps).unwrap();
            let mut buffer = vec![0.0f32; offset];
            buffer.extend_from_slice(values);
            let view = HostView::new(input.axes(), input.shape(), &buffer[offset..]).unwrap();
            let out = c.call(&[view]).unwrap().remove(0);
            let bits: Vec<u32> = out
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|y| y.to_bits())
                .collect();
            (bits, explained)
        };
        let want: Vec<u32> = {
            let tol = weft_oracle::Tolerance::for_graph(&g);
            let interp =
                references(&g, g.outputs(), &ps, std::slice::from_ref(&input), 1, &tol).unwrap();
            interp[0].0[0][0]
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|y| y.to_bits())
                .collect()
        };
        let (jammed, explained) = bits_of(false, None, Some(2), 0);
        assert!(
            jammed == want,
            "{src}: jammed loops differ from the interpreter"
        );
        assert!(explained.contains("transposed in registers"), "{explained}");
        for (stream, threads, offset) in [
            (None, Some(2), 0),
            (Some(0), Some(2), 0),
            (Some(0), Some(1), 1),
            (None, Some(2), 2),
            (Some(0), Some(2), 3),
        ] {
            let (native, explained) = bits_of(true, stream, threads, offset);
            assert!(
                native == want,
                "{src}: native transpose differs (stream {stream:?}, offset {offset})"
            );
            if weft_runtime::transpose::available() {
                assert!(
                    explained.contains("transposed into %y by the native routine"),
                    "{explained}"
                );
                assert_eq!(
                    explained.contains("streamed"),
                    stream.is_some(),
                    "{explained}"
                );
            }
        }
    }
}

/// Lowering options with the memory-order threshold at 0, so small shapes take the
/// sum-in-memory rewrite, and the JIT options carrying them.
fn in_memory_for_small_shapes() -> (weft::LowerOptions, JitOptions) {
    let small = weft::LowerOptions {
        reduce_in_memory_min_bytes: 0,
        ..Default::default()
    };
    let options = JitOptions {
        lower: small,
        ..JitOptions::default()
    };
    (small, options)
}

/// A normalisation over the first axis of `a[N, C]` (batch-norm style; issue 41): fusion keeps
/// each reduction over the strided `N` in a kernel of its own (`StridedReduction`), where it
/// is summed in memory order — the variance's kernel reading the mean per column before its
/// accumulator (a head `reduce_in_memory` copies into its loops) — and the values match the
/// interpreter's. Over the contiguous axis the normalisation stays one kernel.
#[test]
fn a_normalisation_over_a_strided_axis_reduces_in_memory_order() {
    let (small, options) = in_memory_for_small_shapes();
    for (order, strided) in [("N, C", true), ("C, N", false)] {
        let src = format!(
            "axis N = 300\naxis C = 80\nplaceholder a: f32[{order}]\n\
             mu = mean(a, [N])\nc = subtract(a, mu)\nsq = square(c)\nv = mean(sq, [N])\n\
             sd = sqrt(v)\ny = divide(c, sd)\noutput y\n"
        );
        let g = weft::ir::text::parse(&src, "bn.weft").unwrap();
        agree_lowered(&g, small);
        let why = jit_common::explain(&g, &options);
        let in_memory = why
            .matches("sum over a strided axis in memory order")
            .count();
        let kept = why.matches("reduction over a strided axis").count();
        let kernels = why.matches("\nkernel @").count();
        if strided {
            // The variance is kept by this rule; the mean, then read by two kernels, by that.
            assert_eq!((in_memory, kept, kernels), (2, 1, 3), "{why}");
        } else {
            assert_eq!((in_memory, kept, kernels), (0, 0, 1), "{why}");
        }
    }
}

/// Sums over a strided axis run in memory order with their accumulators in a scratch row
/// (`compiler/src/reduce_in_memory.rs`): each axis of a 3-D tensor summed into each result
/// order (rows a stride apart jammed `reduce_in_memory::JAM` a step, with a remainder), means (a tail after the
/// sum), column sums whose result loop is the parallel one (strip-mined), every numeric dtype
/// — against the interpreter, and the rewrite happened.
/// Small shapes lower the operand-size threshold so the rewrite applies to them.
#[test]
fn strided_sums_accumulate_in_memory_order() {
    let small = weft::LowerOptions {
        reduce_in_memory_min_bytes: 0,
        ..Default::default()
    };
    let agree_in_memory = |g: &Graph| {
        agree_lowered(g, small);
        let plan = weft_compiler::compile_plan(g, &Default::default()).unwrap();
        let kernels = weft_compiler::lower_plan(&plan, &small).unwrap();
        let k = kernels[0].kernel.clone();
        assert!(
            k.buffers.values().any(|b| b.name.starts_with("acc_")),
            "not accumulated in memory:\n{k}"
        );
        let options = JitOptions {
            lower: small,
            ..JitOptions::default()
        };
        let why = jit_common::explain(g, &options);
        assert!(
            why.contains("sum over a strided axis in memory order"),
            "{why}"
        );
        k
    };
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let d = dtype.name();
        for (red, order) in [
            ("B", "M, A"),
            ("B", "A, M"),
            ("M", "B, A"),
            ("M", "A, B"),
            ("A", "M, B"),
        ] {
            for op in ["sum", "mean"] {
                if op == "mean" && !dtype.is_float() {
                    continue;
                }
                let src = format!(
                    "axis B = 11\naxis M = 5\naxis A = 96\nplaceholder t: {d}[B, M, A]\n\
                     s = {op}(t, [{red}])\nr = axes_with_order(s, [{order}])\n\
                     y = multiply(r, r)\noutput r\noutput y\n"
                );
                let g = weft::ir::text::parse(&src, "s3.weft").unwrap();
                if red == "A" {
                    // A contiguous reduction stays in registers.
                    agree(&g, g.outputs(), 1);
                } else {
                    // Rows of B are a stride apart: eight a step (`reduce_in_memory::JAM`)
                    // and the three left one at a time; rows of M are adjacent: one a step.
                    // f32 sums run first in an f32 row, then (if one is not finite) again
                    // in f64: each step's loads twice.
                    let k = agree_in_memory(&g);
                    let loads = k.to_string().matches("load %t[").count();
                    let copies = if dtype == DType::F32 { 2 } else { 1 };
                    assert_eq!(loads, copies * if red == "B" { 9 } else { 1 }, "{k}");
                }
            }
        }
        // Parallel (B·M·A points): the sum over M keeps one row of accumulators per parallel
        // iteration over B; the sum over B takes the rows of M in groups of 16 (the operand
        // reads M and A as one flattened index).
        for (red, stride, len) in [("M", 128, 16 * 128), ("B", 2048, 64 * 128)] {
            let src = format!(
                "axis B = 16\naxis M = 64\naxis A = 128\nplaceholder t: {d}[B, M, A]\n\
                 s = sum(t, [{red}])\noutput s\n"
            );
            let g = weft::ir::text::parse(&src, "par.weft").unwrap();
            let k = agree_in_memory(&g);
            let p = k.parallel_loop().expect("a parallel kernel");
            let rows = k
                .buffers
                .values()
                .find(|b| b.name.starts_with("acc_"))
                .unwrap();
            assert_eq!(rows.len, len, "{k}");
            let row = format!("%{}[{stride}*%{p} + ", rows.name);
            assert!(k.to_string().contains(&row), "rows indexed by {row}: {k}");
        }
        // Columns, the result loop parallel: strip-mined into chunks of results.
        let src = format!(
            "axis B = 64\naxis O = 4096\nplaceholder x: {d}[B, O]\ns = sum(x, [B])\noutput s\n"
        );
        let g = weft::ir::text::parse(&src, "cols.weft").unwrap();
        agree_in_memory(&g);
    }
    // By default only an operand of at least `reduce_in_memory::MIN_BYTES` (64 KiB) is summed
    // in memory order.
    let src = "axis B = 256\naxis O = 1024\nplaceholder x: f32[B, O]\ns = sum(x, [B])\noutput s\n";
    let g = weft::ir::text::parse(src, "big.weft").unwrap();
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let kernels = weft_compiler::lower_plan(&plan, &Default::default()).unwrap();
    assert!(kernels[0].kernel.to_string().contains("%acc_"));
    let src = "axis B = 8\naxis O = 1024\nplaceholder x: f32[B, O]\ns = sum(x, [B])\noutput s\n";
    let g = weft::ir::text::parse(src, "small.weft").unwrap();
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let kernels = weft_compiler::lower_plan(&plan, &Default::default()).unwrap();
    assert!(!kernels[0].kernel.to_string().contains("%acc_"));
}

/// `g`'s f32 outputs for its placeholder `x` of `shape` holding `data`, on the JIT fused and
/// unfused, one and two threads, lowered with `lower`: the interpreter's bits (NaNs alike).
fn assert_interpreter_bits(
    g: &Graph,
    shape: Vec<usize>,
    data: Vec<f32>,
    lower: weft::LowerOptions,
) {
    let x = g.find("x").unwrap();
    let inputs = vec![HostArray::from_vec(g.node(x).axes.clone(), shape, data).unwrap()];
    let ps = g.placeholders();
    let expected = run(g, g.outputs(), &ps, &inputs, 2, Backend::Interpreter)
        .unwrap()
        .0;
    for fused in [true, false] {
        for threads in [1, 2] {
            let options = JitOptions {
                fused,
                threads: Some(threads),
                lower,
                ..JitOptions::default()
            };
            let got = jit_common::run_jit(g, g.outputs(), &inputs, options)
                .unwrap()
                .0;
            for (e, a) in expected.iter().flatten().zip(got.iter().flatten()) {
                let (e, a) = (e.to_vec::<f32>().unwrap(), a.to_vec::<f32>().unwrap());
                for (i, (e, a)) in e.iter().zip(&a).enumerate() {
                    assert!(
                        e.to_bits() == a.to_bits() || (e.is_nan() && a.is_nan()),
                        "fused {fused}, {threads} threads, element {i}: {a} vs {e}"
                    );
                }
            }
        }
    }
}

/// f32 sums over a strided axis take their row of accumulators in f32 (at most
/// `reduce_in_memory::MAX_CHAIN` terms a result) and sum the whole row again in f64 when one
/// of them is not finite, so an f32 sum overflowing where the interpreter's f64 sum does not
/// keeps the interpreter's result: `3e38 + 3e38 − 3e38 − 3e38 + 1` is 1, not NaN; `3e38 +
/// 3e38 − inf` is −inf, not NaN; means likewise. The other columns sum quarters, exact in
/// f32, so every output must have the interpreter's bits, fused and unfused, one and two
/// threads. A row of more than `MAX_CHAIN` terms sums in f32 blocks (below).
#[test]
fn strided_f32_sums_in_f32_rows_sum_again_in_f64_when_not_finite() {
    let small = weft::LowerOptions {
        reduce_in_memory_min_bytes: 0,
        ..Default::default()
    };
    let src = "axis B = 6\naxis O = 64\nplaceholder x: f32[B, O]\n\
               s = sum(x, [B])\nm = mean(x, [B])\noutput s\noutput m\n";
    let g = weft::ir::text::parse(src, "rerun.weft").unwrap();
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let text = weft_compiler::lower_plan(&plan, &small).unwrap()[0]
        .kernel
        .to_string();
    assert!(text.contains("%acc32_") && text.contains("if %"), "{text}");
    let (big, huge) = (3e38f32, f32::INFINITY);
    let special: [[f32; 6]; 5] = [
        [big, big, -big, -big, 1.0, 0.0],
        [big, big, 0.0, 0.0, 0.0, 0.0],
        [big, big, -huge, 0.0, 0.0, 0.0],
        [f32::NAN, 1.0, 2.0, 0.0, 0.0, 0.0],
        [-big, -big, big, 1.0, 0.0, 0.0],
    ];
    for rerun_column in [None, Some(0usize), Some(2)] {
        let mut data = vec![0f32; 6 * 64];
        for b in 0..6 {
            for o in 0..64 {
                data[b * 64 + o] = ((b * 7 + o * 3) % 17) as f32 * 0.25 - 2.0;
            }
        }
        // All five special columns, or only one of them (the others ordinary).
        for (c, col) in special.iter().enumerate() {
            if rerun_column.is_none_or(|r| r == c) {
                for b in 0..6 {
                    data[b * 64 + 5 * c + 1] = col[b];
                }
            }
        }
        assert_interpreter_bits(&g, vec![6, 64], data, small);
    }
    // More terms a result than an f32 row may sum: f32 blocks added into f64 (below).
    let src = "axis B = 1100\naxis O = 64\nplaceholder x: f32[B, O]\ns = sum(x, [B])\noutput s\n";
    let g = weft::ir::text::parse(src, "long.weft").unwrap();
    agree_lowered(&g, small);
}

/// f32 sums over a strided axis of more than `reduce_in_memory::MAX_CHAIN` terms a result sum
/// blocks of at most that many terms in an f32 row, each block added into the f64 row in order
/// (2500 rows: two blocks of 1024, then 448 — 56 jammed steps and the 4 rows left over), and
/// sum everything again in f64 when a result is not finite: a block overflowing in f32 (the
/// first, or the third) keeps the interpreter's value, as do NaN and infinite terms. The other
/// columns sum quarters (exact), so every output has the interpreter's bits, fused and
/// unfused, one and two threads, sums and means.
#[test]
fn long_strided_f32_sums_run_in_f32_blocks_added_in_f64() {
    let small = weft::LowerOptions {
        reduce_in_memory_min_bytes: 0,
        ..Default::default()
    };
    let rows = 2500;
    let src = format!(
        "axis B = {rows}\naxis O = 64\nplaceholder x: f32[B, O]\n\
         s = sum(x, [B])\nm = mean(x, [B])\noutput s\noutput m\n"
    );
    let g = weft::ir::text::parse(&src, "blocks.weft").unwrap();
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let text = weft_compiler::lower_plan(&plan, &small).unwrap()[0]
        .kernel
        .to_string();
    assert!(
        text.contains("%acc32_") && text.contains("in 0..2 {") && text.contains("if %"),
        "{text}"
    );
    let (big, huge) = (3e38f32, f32::INFINITY);
    // (column, row, value): overflow in the first block and in the last, NaN, −inf.
    let special = [
        (1, 0, big),
        (1, 1, big),
        (1, 2, -big),
        (1, 3, -big),
        (6, 2100, big),
        (6, 2101, big),
        (6, 2499, -big),
        (6, 2498, -big),
        (11, 1500, f32::NAN),
        (16, 10, -huge),
        (16, 2400, big),
    ];
    let mut data = vec![0f32; rows * 64];
    for b in 0..rows {
        for o in 0..64 {
            data[b * 64 + o] = ((b * 7 + o * 3) % 17) as f32 * 0.25 - 2.0;
        }
    }
    for (o, b, v) in special {
        data[b * 64 + o] = v;
    }
    assert_interpreter_bits(&g, vec![rows, 64], data, small);
    agree_lowered(&g, small);
    // Lengths at the blocks' edges: one block and one row, two whole blocks, a block and 7.
    for rows in [1025, 2048, 1031] {
        let src = src.replace("axis B = 2500", &format!("axis B = {rows}"));
        agree_lowered(&weft::ir::text::parse(&src, "edges.weft").unwrap(), small);
    }
}

/// A sum over the contiguous axis stored in another order than its operand's reads the
/// operand's rows in memory order (`memory_order`): the result loops are reordered, the
/// results equal the interpreter's in every dtype, fused and unfused, and `weft explain` says
/// why. Small shapes lower the operand-size threshold so the reordering applies to them.
#[test]
fn row_sums_stored_transposed_read_rows_in_memory_order() {
    let small = weft::LowerOptions {
        reduce_in_memory_min_bytes: 0,
        ..Default::default()
    };
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let d = dtype.name();
        // The note, where the nest is reordered: the operand's strides, outermost first.
        for (shape, order, note) in [
            ("B, M, A", "M, B", Some("strides 480, 96")),
            ("B, M, A", "B, M", None),
            ("M, B, A", "B, M", Some("strides 672, 96")),
        ] {
            let src = format!(
                "axis B = 7\naxis M = 5\naxis A = 96\nplaceholder t: {d}[{shape}]\n\
                 s = sum(t, [A])\nr = axes_with_order(s, [{order}])\n\
                 y = multiply(r, r)\noutput r\noutput y\n"
            );
            let g = weft::ir::text::parse(&src, "rows.weft").unwrap();
            agree_lowered(&g, small);
            let options = JitOptions {
                lower: small,
                ..JitOptions::default()
            };
            let why = jit_common::explain(&g, &options);
            match note {
                Some(n) => assert!(
                    why.contains(&format!("memory order ({n} elements), not the result's")),
                    "{d} {shape} -> {order}: {why}"
                ),
                None => assert!(!why.contains("not the result's"), "{d} {order}: {why}"),
            }
        }
    }
}

/// Comparisons of floats that vary across a vector loop are lane masks
/// (`codegen::vectorize`): every comparison, with NaN and signed zeros planted, feeding
/// `select`, `convert` to float and logical ops, in f32, f64 and a loop mixing both — vector
/// loops, against the interpreter.
#[test]
fn vector_comparisons_select_convert_and_combine_as_masks() {
    for (tx, ty) in [("f32", "f32"), ("f64", "f64"), ("f32", "f64")] {
        let mut src = format!(
            "axis R = 3\naxis C = 37\nplaceholder x: {tx}[R, C]\nplaceholder y: {tx}[R, C]\n\
             placeholder w: {ty}[R, C]\n"
        );
        for (i, op) in [
            "equal",
            "not_equal",
            "less",
            "less_equal",
            "greater",
            "greater_equal",
        ]
        .iter()
        .enumerate()
        {
            src += &format!(
                "c{i} = {op}(x, y)\ns{i} = select(c{i}, x, y)\nk{i} = convert(c{i}, {tx})\n\
                 output s{i}\noutput k{i}\n"
            );
        }
        // A mask of one type selecting values of another stays scalar; still exact.
        src +=
            "n = greater(x, y)\nsw = select(n, w, w)\nkw = multiply(w, w)\noutput sw\noutput kw\n";
        let g = weft::ir::text::parse(&src, "masks.weft").unwrap();
        let ps = g.placeholders();
        let mut inputs = random_inputs(&g, &ps, 7);
        // NaN, ±0 and ties planted in x and y.
        for a in inputs.iter_mut().take(2) {
            let plant = |v: &mut [f64]| {
                v[3] = f64::NAN;
                v[10] = 0.0;
                v[11] = -0.0;
                v[20] = 1.5;
                v[57] = 1.5;
            };
            let (axes, shape) = (a.axes().clone(), a.shape().to_vec());
            *a = if tx == "f32" {
                let mut v: Vec<f64> = a
                    .to_vec::<f32>()
                    .unwrap()
                    .into_iter()
                    .map(f64::from)
                    .collect();
                plant(&mut v);
                HostArray::from_vec(axes, shape, v.into_iter().map(|x| x as f32).collect()).unwrap()
            } else {
                let mut v = a.to_vec::<f64>().unwrap();
                plant(&mut v);
                HostArray::from_vec(axes, shape, v).unwrap()
            };
        }
        let tol = weft_oracle::Tolerance::for_graph(&g);
        let outs = g.outputs().to_vec();
        let interp = references(&g, &outs, &ps, &inputs, 1, &tol).unwrap();
        for b in BACKENDS {
            let jit = run(&g, &outs, &ps, &inputs, 1, b).unwrap();
            if let Err(m) = compare(&jit, &interp, &tol) {
                panic!("{tx}/{ty} {b:?} differs: {m}");
            }
        }
    }
}

/// Output `y` of graph `g` on `input`, with span functions on or off (and `threads`), as bits
/// (every NaN one value: a NaN's sign and payload follow each compiler's rewrites — Cranelift
/// folds `fneg` into `fnmadd`); with `weft explain`'s text and whether span calls were allowed.
/// Leaf loops are off: they would evaluate these functions themselves (tests/leaf_loops.rs),
/// and the span routines are what runs where a loop is no leaf loop.
fn span_run(
    g: &Graph,
    input: &HostArray,
    span_math: bool,
    threads: Option<usize>,
) -> (Vec<u32>, String, bool) {
    let codegen = weft::CodegenOptions {
        span_math,
        leaf_loops: false,
        ..Default::default()
    };
    codegen_run(g, std::slice::from_ref(input), codegen, threads)
}

/// The bits of output `y` of `g` on `inputs` (for its placeholders in order) under `codegen`
/// (NaNs as one value), with `weft explain`'s report and whether span functions run natively.
fn codegen_run(
    g: &Graph,
    inputs: &[HostArray],
    codegen: weft::CodegenOptions,
    threads: Option<usize>,
) -> (Vec<u32>, String, bool) {
    let options = JitOptions {
        codegen,
        threads,
        ..JitOptions::default()
    };
    let shared = Arc::new(g.clone());
    let exe = weft_compiler::JitExecutable::new(
        shared.clone(),
        shared.outputs(),
        &shared.placeholders(),
        &options,
    )
    .unwrap();
    let explained = weft_compiler::explain::explain(&exe);
    let t = Transformer::with_jit_options(g.clone(), options).unwrap();
    let comp = t
        .computation(&[g.find("y").unwrap()], &g.placeholders())
        .unwrap();
    let out = &comp.call(inputs).unwrap()[0];
    let bits = match out.dtype() {
        DType::F64 => out
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .flat_map(|y| {
                let b = if y.is_nan() { u64::MAX } else { y.to_bits() };
                [b as u32, (b >> 32) as u32]
            })
            .collect(),
        DType::I64 => out
            .to_vec::<i64>()
            .unwrap()
            .iter()
            .flat_map(|i| [*i as u32, (*i >> 32) as u32])
            .collect(),
        _ => out
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|y| if y.is_nan() { u32::MAX } else { y.to_bits() })
            .collect(),
    };
    (bits, explained, exe.span_math())
}

/// Stores to a buffer the kernel only writes, staged and streamed out with non-temporal
/// stores (`codegen::translate::span`, `weft_runtime::stream`), give the bits of ordinary
/// stores: elementwise and row kernels, a span function streamed (and one split around its
/// call, whose second loop reads the staging area back), f32 and f64, f32 rows divided or
/// multiplied by a value and streamed by the native routine (its vector part by the scaled
/// reciprocal, its tail by an exact divide, as the JIT loop does); rows too short to
/// stream, rows of one block at every misalignment of their start, rows of several blocks
/// and one long parallel row. (Blocks must not depend on the destination's address: a vector
/// loop's scalar tail divides exactly where its body multiplies by a reciprocal, so moving a
/// block boundary by the output's alignment changed last bits from call to call.)
#[test]
fn streamed_stores_give_the_bits_of_ordinary_stores() {
    let graphs = [
        (
            "placeholder x: f32[R, C]\ns = add(x, x)\ny = multiply(s, x)\noutput y\n",
            4,
        ),
        (
            "placeholder x: f32[R, C]\nm = max(x, [C])\ny = subtract(x, m)\noutput y\n",
            4,
        ),
        ("placeholder x: f32[R, C]\ny = exp(x)\noutput y\n", 4),
        (
            "placeholder x: f32[R, C]\nz = multiply(x, x)\nt = tanh(z)\ny = add(t, x)\noutput y\n",
            4,
        ),
        (
            "placeholder x: f64[R, C]\nm = sum(x, [C])\ny = divide(x, m)\noutput y\n",
            8,
        ),
        (
            "placeholder x: f32[R, C]\nm = max(x, [C])\ny = divide(x, m)\noutput y\n",
            4,
        ),
        (
            "placeholder x: f32[R, C]\nm = sum(x, [C])\ny = multiply(m, x)\noutput y\n",
            4,
        ),
    ];
    for (src, size) in graphs {
        for (rows, c) in [(5usize, 37usize), (5, 1001), (3, 5000), (1, 100_003)] {
            let text = format!("axis R = {rows}\naxis C = {c}\n{src}");
            let g = weft::ir::text::parse(&text, "stream.weft").unwrap();
            let (r, cx) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
            let xs = (0..rows * c).map(|i| ((i * 7919) % 2001) as f64 / 500.0 - 2.0);
            let axes = Axes::new([r, cx]).unwrap();
            let input = if size == 8 {
                HostArray::from_vec(axes, vec![rows, c], xs.collect::<Vec<f64>>())
            } else {
                HostArray::from_vec(axes, vec![rows, c], xs.map(|x| x as f32).collect())
            }
            .unwrap();
            let with = |stream_min_bytes| weft::CodegenOptions {
                stream_min_bytes,
                ..Default::default()
            };
            let (ordinary, explained_ordinary, _) =
                codegen_run(&g, std::slice::from_ref(&input), with(None), Some(2));
            let (streamed, explained, _) =
                codegen_run(&g, std::slice::from_ref(&input), with(Some(0)), Some(2));
            assert!(streamed == ordinary, "{src}, {rows} x {c}: results differ");
            // An f32 loop that only scales what it reads is streamed by the native routine.
            let scaled = size == 4 && (src.contains("divide(x, m)") || src.contains("multiply(m"));
            assert_eq!(
                explained.contains("done by the native routine"),
                scaled && c * size >= 1024,
                "{src}, {rows} x {c}:\n{explained}"
            );
            assert!(!explained_ordinary.contains("streamed out"));
            assert_eq!(
                explained.contains("streamed out"),
                c * size >= 1024,
                "{src}, {rows} x {c}:\n{explained}"
            );
        }
    }
}

/// By default only large buffers stream (`weft::compiler::codegen::stream_min_bytes`: half the
/// L3, at least 16 MiB), and only from loops that also read a large buffer, or whose row's next
/// input a span function prefetches: layernorm's last pass at 4096 x 4096 (64 MiB) streams its
/// output where half the L3 is no larger, softmax's (which reads only its row scratch) only
/// where its `exp` runs natively, prefetching.
#[test]
fn only_large_outputs_of_passes_over_memory_stream_by_default() {
    let native = weft_runtime::vmath::span_isa().is_some();
    let large = 64 << 20 >= weft::compiler::codegen::stream_min_bytes(weft_runtime::Target::host());
    for (workload, streams) in [
        ("layernorm", large),
        ("softmax", native && large),
        ("small", false),
    ] {
        let path = format!(
            "{}/bench/workloads/{workload}.weft",
            env!("CARGO_MANIFEST_DIR")
        );
        let g = weft::ir::text::parse(&std::fs::read_to_string(&path).unwrap(), &path).unwrap();
        let explained = jit_common::explain(&g, &JitOptions::default());
        assert_eq!(
            explained.contains("streamed out"),
            streams,
            "{workload}:\n{explained}"
        );
    }
}

/// An f32 `exp`, `tanh`, `sigmoid` or `log` stored into a contiguous span runs after its loop
/// as the native span routine (`codegen::translate::span`, `weft_runtime::vmath`), bit for bit
/// what the inline code gives: softmax rows (the `exp` inside a fused row kernel, its argument
/// read and its sum's vector pass done by the routine), rows of `exp` normalised by their sum,
/// plain `exp`, `tanh` and `log` kernels, a sigmoid of a product and a log of `|x|`, over
/// lengths with and without a tail and inputs with every edge (NaN payloads, ±inf, the
/// overflow and flush limits, subnormals), compared with `span_math` off.
#[test]
fn span_functions_give_the_inline_bits() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let edges = [
        f32::NAN,
        f32::from_bits(0x7fc0_0123),
        f32::from_bits(0xffc0_0001),
        f32::INFINITY,
        f32::NEG_INFINITY,
        88.722_83,
        88.722_84,
        -87.336_54,
        -87.336_55,
        -0.0,
        1e-40,
        -104.0,
    ];
    for (src, name) in [
        (
            "placeholder x: f32[R, C]\nm = max(x, [C])\nd = subtract(x, m)\ne = exp(d)\n\
             t = sum(e, [C])\ny = divide(e, t)\noutput y\n",
            "softmax (exp less the max)",
        ),
        // Attention's softmax: the routines read x times the scale (less the max) themselves.
        (
            "placeholder x: f32[R, C]\nconstant k: f32[] = 0.125\ns = multiply(x, k)\n\
             m = max(s, [C])\nd = subtract(s, m)\ne = exp(d)\nt = sum(e, [C])\n\
             y = divide(e, t)\noutput y\n",
            "softmax of x times a constant",
        ),
        (
            "placeholder x: f32[R, C]\ne = exp(x)\nt = sum(e, [C])\ny = divide(e, t)\n\
             output y\n",
            "exp normalised without its max",
        ),
        ("placeholder x: f32[R, C]\ny = exp(x)\noutput y\n", "exp"),
        ("placeholder x: f32[R, C]\ny = tanh(x)\noutput y\n", "tanh"),
        (
            "placeholder x: f32[R, C]\nh = multiply(x, x)\ny = sigmoid(h)\noutput y\n",
            "sigmoid",
        ),
        (
            "placeholder x: f32[R, C]\nz = multiply(x, x)\nt = tanh(z)\no = add(t, x)\n\
             y = multiply(o, x)\noutput y\n",
            "a loop split around tanh",
        ),
        // The routine reads x times a value from outside the loop itself.
        (
            "placeholder x: f32[R, C]\nm = min(x, [C])\np = multiply(m, x)\ny = exp(p)\n\
             output y\n",
            "exp of x times its row min",
        ),
        // Every edge of log: negatives, ±0, subnormals (1e-40), ±inf, NaN payloads.
        ("placeholder x: f32[R, C]\ny = log(x)\noutput y\n", "log"),
        (
            "placeholder x: f32[R, C]\na = abs(x)\ny = log(a)\noutput y\n",
            "log of |x|",
        ),
    ] {
        // Rows with and without a tail, rows longer than a span block, and one long row
        // (R = 1: the parallel loop is the vector loop, run block by block).
        for (rows, c) in [(5usize, 37usize), (5, 64), (5, 4099), (1, 100_003)] {
            let text = format!("axis R = {rows}\naxis C = {c}\n{src}");
            let g = weft::ir::text::parse(&text, "span.weft").unwrap();
            let (r, cx) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
            let xs: Vec<f32> = (0..rows * c)
                .map(|i| match next() % 8 {
                    0 => edges[i % edges.len()],
                    1 => f32::from_bits(next() as u32),
                    _ => ((next() >> 11) as f64 / (1u64 << 53) as f64 * 240.0 - 120.0) as f32,
                })
                .collect();
            let input =
                HostArray::from_vec(Axes::new([r, cx]).unwrap(), vec![rows, c], xs).unwrap();
            let (inline, explained_inline, _) = span_run(&g, &input, false, None);
            let (span, explained, available) = span_run(&g, &input, true, None);
            assert_eq!(span, inline, "{name}, C = {c}");
            // And with leaf loops on (the default): those that take a function's loop
            // evaluate it in their own body, with the same bits.
            let (leaf, _, _) = codegen_run(
                &g,
                std::slice::from_ref(&input),
                weft::CodegenOptions::default(),
                None,
            );
            assert_eq!(leaf, inline, "{name}, C = {c}: leaf loops");
            assert!(!explained_inline.contains("by the native"));
            assert_eq!(
                explained.contains("by the native"),
                available,
                "{name}, C = {c}:\n{explained}"
            );
            // Rows of a row loop read their argument and sum their results in the routine
            // (one long row is a parallel loop: no sum there).
            let normalised = name.starts_with("softmax") || name.starts_with("exp normalised");
            let scaled = name.contains("times a constant");
            assert!(
                !(available && rows > 1 && scaled)
                    || explained.contains("times %") && explained.contains("extreme routine"),
                "{name}, C = {c}:\n{explained}"
            );
            let summed = available && rows > 1 && normalised;
            assert!(
                !summed || explained.contains("and sums the results for"),
                "{name}, C = {c}:\n{explained}"
            );
        }
    }
}

/// Output `y` of `g` on `inputs` with native routines on and off (`span_math`), on 1 and 2
/// threads: the same bits, and `weft explain` mentions `marker` exactly when they run natively.
fn assert_native_gives_inline_bits(g: &Graph, inputs: &[HostArray], marker: &str, what: &str) {
    assert_native_bits(g, inputs, marker, what, true)
}

/// [`assert_native_gives_inline_bits`] where the routine takes the loop only if `takes` (a sum
/// routine keeps its f32 partials for the whole loop, so it takes only a loop of one block of
/// `narrow_sums::f32_block`, 8192 iterations: longer rows are folded block by block). Leaf
/// loops off, as in [`span_run`]; and the defaults (leaf loops on) give the same bits.
fn assert_native_bits(g: &Graph, inputs: &[HostArray], marker: &str, what: &str, takes: bool) {
    for threads in [Some(1), Some(2)] {
        let with = |span_math| weft::CodegenOptions {
            span_math,
            leaf_loops: false,
            ..Default::default()
        };
        let (inline, explained_inline, _) = codegen_run(g, inputs, with(false), threads);
        let (native, explained, available) = codegen_run(g, inputs, with(true), threads);
        assert_eq!(native, inline, "{what}");
        let (leaf, _, _) = codegen_run(g, inputs, weft::CodegenOptions::default(), threads);
        assert_eq!(leaf, inline, "{what}: leaf loops on");
        assert!(!explained_inline.contains(marker), "{what}");
        assert_eq!(
            explained.contains(marker),
            available && takes,
            "{what}:\n{explained}"
        );
    }
}

/// Inputs that reach every edge of a span function: NaN payloads, ±inf, `exp`'s overflow and
/// underflow, a negative zero, a subnormal.
const SPAN_EDGES: [f32; 8] = [
    f32::NAN,
    f32::from_bits(0x7fc0_0123),
    f32::INFINITY,
    f32::NEG_INFINITY,
    88.722_84,
    -87.336_55,
    -0.0,
    1e-40,
];

/// A row loop that only sums an f32 `exp`, `tanh`, `sigmoid` or `log` of a broadcast difference
/// (`Σ_C exp(x[R] − y[C])`, the other order, a plain load) or product (`Σ_C exp(x[R] · y[C])`)
/// is summed by the span routine —
/// the routine reading `y` and adding into the loop's f32 partials — with the bits of the
/// inline code: lengths with and without a tail and longer than a span block, inputs with
/// every edge (NaN payloads, ±inf, overflow, so the f64 re-run runs too), 1 and 2 threads.
#[test]
fn sums_of_span_functions_give_the_inline_bits() {
    let mut rng = weft_ir::perturb::SplitMix(0x2545_f491_4f6c_dd1d);
    let edges = SPAN_EDGES;
    for (src, name) in [
        (
            "d = subtract(x, c)\ne = exp(d)\ny = sum(e, [C])\n",
            "exp(x - c)",
        ),
        (
            "d = subtract(c, x)\ne = exp(d)\ny = sum(e, [C])\n",
            "exp(c - x)",
        ),
        (
            "d = subtract(x, c)\ne = tanh(d)\ny = sum(e, [C])\n",
            "tanh(x - c)",
        ),
        (
            "d = subtract(c, x)\ne = sigmoid(d)\ny = sum(e, [C])\n",
            "sigmoid(c - x)",
        ),
        // A log-likelihood's shape; negative arguments give NaN, which the re-run keeps.
        (
            "d = subtract(x, c)\ne = log(d)\ny = sum(e, [C])\n",
            "log(x - c)",
        ),
        ("e = exp(c)\ny = sum(e, [C])\n", "exp(c)"),
        // A broadcast product, either operand order (issue 41's expxy).
        (
            "d = multiply(x, c)\ne = exp(d)\ny = sum(e, [C])\n",
            "exp(x * c)",
        ),
        (
            "d = multiply(c, x)\ne = tanh(d)\ny = sum(e, [C])\n",
            "tanh(c * x)",
        ),
    ] {
        for (rows, cols, special) in [
            (5, 37, false),
            (5, 64, true),
            (3, 4099, true),
            (2, 8190, false),
            (2, 9000, false),
        ] {
            let text = format!(
                "axis R = {rows}\naxis C = {cols}\nplaceholder x: f32[R]\n\
                 placeholder c: f32[C]\n{src}output y\n"
            );
            let g = weft::ir::text::parse(&text, "sum_span.weft").unwrap();
            let (r, cx) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
            let mut value = |i: usize| match rng.below(16) {
                0 if special => edges[i % edges.len()],
                _ => (rng.unit() * 40.0 - 20.0) as f32,
            };
            let xs: Vec<f32> = (0..rows).map(&mut value).collect();
            let cs: Vec<f32> = (0..cols).map(&mut value).collect();
            let inputs = [
                HostArray::from_vec(Axes::new([r]).unwrap(), vec![rows], xs).unwrap(),
                HostArray::from_vec(Axes::new([cx]).unwrap(), vec![cols], cs).unwrap(),
            ];
            let what = format!("{name}, C = {cols}");
            let one_block = cols <= 8192;
            assert_native_bits(&g, &inputs, "summed by the native", &what, one_block);
        }
    }
}

/// A row loop that only sums f32 terms read from a span — `x`, `x − c`, `c − x`, or the
/// square of one (`square` or `multiply(d, d)`): layernorm's mean and variance passes, an l2
/// norm — runs as one call of the native sum routine (`weft_runtime::span_sum`), with the
/// inline loop's bits: rows of 4096 terms and more, with and without a tail (shorter rows keep
/// the inline loop: `explain` says so), inputs with every edge (NaN, ±inf,
/// rows of −0, values whose f32 partials overflow, so the routine's f64 re-run runs), 1 and 2
/// threads; `weft explain` says so exactly when the routine is available.
#[test]
fn plain_and_squared_sums_give_the_inline_bits() {
    let mut rng = weft_ir::perturb::SplitMix(0x9e37_79b9_7f4a_7c15);
    let edges = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3e38,
        -3e38,
        1e-40,
    ];
    let head = "placeholder x: f32[R, C]\nplaceholder c: f32[R]\n";
    for (src, name) in [
        ("y = sum(x, [C])\n", "sum"),
        ("y = mean(x, [C])\n", "mean"),
        ("d = subtract(x, c)\ny = sum(d, [C])\n", "sum of x - c"),
        (
            "d = subtract(x, c)\nq = square(d)\ny = sum(q, [C])\n",
            "sum of (x - c)^2",
        ),
        (
            "d = subtract(c, x)\nq = multiply(d, d)\ny = sum(q, [C])\n",
            "sum of (c - x)(c - x)",
        ),
        ("q = square(x)\ny = sum(q, [C])\n", "sum of squares"),
    ] {
        // Rows of at least `span::SUM_MIN_EXTENT` (4096) terms: with and without a tail.
        for (rows, cols) in [(5, 4096), (4, 4099), (3, 8190), (3, 9000)] {
            let text = format!("axis R = {rows}\naxis C = {cols}\n{head}{src}output y\n");
            let g = weft::ir::text::parse(&text, "sum.weft").unwrap();
            let (r, cx) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
            // Row 0 ordinary values, row 1 with edges, row 2 (if any) overflowing f32
            // partials, the rest −0.
            let xs: Vec<f32> = (0..rows * cols)
                .map(|i| match i / cols {
                    0 => (rng.unit() * 40.0 - 20.0) as f32,
                    1 if rng.below(8) == 0 => edges[i % edges.len()],
                    1 => (rng.unit() * 2e6 - 1e6) as f32,
                    2 => 2e38 + (rng.unit() * 1e37) as f32,
                    _ => -0.0,
                })
                .collect();
            let cs: Vec<f32> = (0..rows).map(|_| (rng.unit() * 4.0 - 2.0) as f32).collect();
            let inputs = [
                HostArray::from_vec(Axes::new([r, cx]).unwrap(), vec![rows, cols], xs).unwrap(),
                HostArray::from_vec(Axes::new([r]).unwrap(), vec![rows], cs).unwrap(),
            ];
            let what = format!("{name}, C = {cols}");
            let one_block = cols <= 8192;
            assert_native_bits(&g, &inputs, "sum routine in one call", &what, one_block);
        }
    }
    let g = weft::ir::text::parse(&layernorm_text(6, 4099, "y"), "ln.weft").unwrap();
    let inputs: Vec<HostArray> = g
        .placeholders()
        .iter()
        .map(|&p| {
            let axes = g.get(p).unwrap().axes.clone();
            let shape: Vec<usize> = axes.iter().map(|a| g.axis_len(*a).unwrap()).collect();
            let data = (0..shape.iter().product::<usize>())
                .map(|i| match i % 4099 {
                    7 if i / 4099 == 1 => f32::NAN,
                    _ if i / 4099 == 2 => 3e38,
                    _ => (rng.unit() * 10.0 - 5.0) as f32,
                })
                .collect();
            HostArray::from_vec(axes, shape, data).unwrap()
        })
        .collect();
    assert_native_gives_inline_bits(&g, &inputs, "sum routine in one call", "layernorm");
    // Beside every other loop nest outlined (the sums stay calls in the row loop; the last
    // pass a Cranelift loop, not an assembled leaf loop, which is never outlined): the bits
    // of the inline code without routines.
    let every = weft::CodegenOptions {
        outline: weft::Outline::Every,
        leaf_loops: false,
        ..Default::default()
    };
    let plain = weft::CodegenOptions {
        span_math: false,
        outline: weft::Outline::Never,
        ..Default::default()
    };
    let (outlined, explained, _) = codegen_run(&g, &inputs, every, Some(2));
    assert_eq!(outlined, codegen_run(&g, &inputs, plain, Some(2)).0);
    assert!(
        explained.contains("(outlined: the kernel calls it)"),
        "{explained}"
    );
    let short = "axis R = 4\naxis C = 4095\nplaceholder x: f32[R, C]\ny = sum(x, [C])\noutput y\n";
    let g = weft::ir::text::parse(short, "short.weft").unwrap();
    let inputs = [HostArray::from_vec(
        g.get(g.placeholders()[0]).unwrap().axes.clone(),
        vec![4, 4095],
        (0..4 * 4095).map(|i| (i % 97) as f32 - 48.0).collect(),
    )
    .unwrap()];
    let (_, explained, _) = codegen_run(&g, &inputs, Default::default(), None);
    assert!(!explained.contains("sum routine"), "{explained}");
}

/// A row loop that only takes an f32 maximum or minimum (softmax's row max) runs as one call
/// of the native extreme routine (`weft_runtime::extreme`), with the inline vector loop's bits:
/// lengths with and without a tail, inputs with every edge (NaNs of either sign and any
/// payload, ±inf, subnormals), rows of zeros of mixed signs (the `−0 < +0` rule), rows of
/// one sign, 1 and 2 threads; `weft explain` says so exactly when the routine is available.
/// An argmax or argmin (the JIT's loop a scalar one) runs as one call of the arg routine with
/// the loop's indices — the first maximum, the first NaN — and agrees with the interpreter.
#[test]
fn extremes_by_the_native_routine_give_the_inline_bits() {
    let mut rng = weft_ir::perturb::SplitMix(0x5851_f42d_4c95_7f2d);
    let edges = [
        f32::NAN,
        f32::from_bits(0xffc0_0123),
        f32::INFINITY,
        f32::NEG_INFINITY,
        -0.0,
        0.0,
        1e-40,
        -1e-40,
    ];
    for op in ["max", "min", "argmax", "argmin"] {
        for (rows, cols) in [(5, 37), (5, 64), (3, 4099), (2, 9000)] {
            let text = format!(
                "axis R = {rows}\naxis C = {cols}\nplaceholder x: f32[R, C]\n\
                 y = {op}(x, [C])\noutput y\n"
            );
            let g = weft::ir::text::parse(&text, "extreme.weft").unwrap();
            let axes = Axes::new([g.find_axis("R").unwrap(), g.find_axis("C").unwrap()]).unwrap();
            // Row 0 ordinary values; row 1 zeros of both signs; row 2 negative values and −0
            // (a max of −0), the rest ordinary values with edges mixed in.
            let xs: Vec<f32> = (0..rows * cols)
                .map(|i| match (i / cols, rng.below(16)) {
                    (0, _) => (rng.unit() * 40.0 - 20.0) as f32,
                    (1, r) => [0.0, -0.0][r % 2],
                    (2, 0) => -0.0,
                    (2, _) => -(rng.unit() * 40.0) as f32,
                    (_, 0) => edges[i % edges.len()],
                    _ => (rng.unit() * 40.0 - 20.0) as f32,
                })
                .collect();
            let inputs = [HostArray::from_vec(axes, vec![rows, cols], xs).unwrap()];
            let what = format!("{op}, C = {cols}");
            let marker = if op.starts_with("arg") {
                "arg routine"
            } else {
                "extreme routine"
            };
            assert_native_gives_inline_bits(&g, &inputs, marker, &what);
            if op.starts_with("arg") {
                agree(&g, g.outputs(), 2);
            }
        }
    }
    scaled_extremes_by_the_native_routine_give_the_inline_bits(&mut rng, &edges);
}

/// The maximum or minimum of `x · c` (a scaled softmax's row max; `c` a row's value or a
/// constant, either operand order) is taken by the extreme routine multiplying as it reads,
/// with the inline loop's bits: scales that are negative (the max of a negated row), zero
/// (`0 · ±inf` is NaN), tiny (products flushing to ±0 and subnormals), huge (products
/// overflowing to ±inf), infinite and NaN.
fn scaled_extremes_by_the_native_routine_give_the_inline_bits(
    rng: &mut weft_ir::perturb::SplitMix,
    edges: &[f32],
) {
    let scales = [0.125, -1.7, 0.0, -0.0, 1e-30, 3e30, f32::INFINITY, f32::NAN];
    for (op, product) in [
        ("max", "multiply(x, c)"),
        ("min", "multiply(c, x)"),
        ("max", "multiply(x, k)"),
    ] {
        let rows = scales.len();
        for cols in [37, 64, 4099] {
            let text = format!(
                "axis R = {rows}\naxis C = {cols}\nplaceholder x: f32[R, C]\n\
                 placeholder c: f32[R]\nconstant k: f32[] = -0.3\ns = {product}\n\
                 y = {op}(s, [C])\noutput y\n"
            );
            let g = weft::ir::text::parse(&text, "scaled_extreme.weft").unwrap();
            let (r, cx) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
            let xs: Vec<f32> = (0..rows * cols)
                .map(|i| match rng.below(8) {
                    0 => edges[i % edges.len()],
                    _ => (rng.unit() * 40.0 - 20.0) as f32,
                })
                .collect();
            let inputs = [
                HostArray::from_vec(Axes::new([r, cx]).unwrap(), vec![rows, cols], xs).unwrap(),
                HostArray::from_vec(Axes::new([r]).unwrap(), vec![rows], scales.to_vec()).unwrap(),
            ];
            let what = format!("{op} of {product}, C = {cols}");
            assert_native_gives_inline_bits(&g, &inputs, "extreme routine", &what);
        }
    }
}

/// The graph of `src` over `x[R = 260, C = 4099]` (4.3 MB: above the prefetch threshold) on
/// hashed values in [−30, 30), run on two threads with span functions off and on: both
/// results' bits, what `weft explain` says with them on, and whether the host has them.
fn inline_and_span_over_260_rows(src: &str) -> (Vec<u32>, Vec<u32>, String, bool) {
    let g = weft::ir::text::parse(src, "rows.weft").unwrap();
    let (r, c) = (g.find_axis("R").unwrap(), g.find_axis("C").unwrap());
    let xs: Vec<f32> = (0..260 * 4099u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) as f32 / u32::MAX as f32) * 60.0 - 30.0)
        .collect();
    let input = HostArray::from_vec(Axes::new([r, c]).unwrap(), vec![260, 4099], xs).unwrap();
    let (inline, _, _) = span_run(&g, &input, false, Some(2));
    let (span, explained, available) = span_run(&g, &input, true, Some(2));
    (inline, span, explained, available)
}

/// A span function in a row kernel over a large input prefetches a later row of that input
/// while it computes (`codegen::translate::span`, `weft_runtime::vmath::Prefetch`): softmax
/// over 260 x 4099 (4.3 MB, above the prefetch threshold) says so in `weft explain` and gives
/// the inline code's bits (a prefetch changes no value, and the last row's reaches past the
/// input harmlessly).
#[test]
fn span_functions_prefetch_the_next_row() {
    let src = "axis R = 260\naxis C = 4099\nplaceholder x: f32[R, C]\nm = max(x, [C])\n\
               d = subtract(x, m)\ne = exp(d)\nt = sum(e, [C])\ny = divide(e, t)\noutput y\n";
    let (inline, span, explained, available) = inline_and_span_over_260_rows(src);
    assert!(inline == span, "prefetching changed a result");
    assert_eq!(
        explained.contains("prefetching %x's row 2 ahead"),
        available,
        "{explained}"
    );
}

/// A span function that is itself its row's first pass over rows adjacent in memory — `exp`
/// of `x[R, C]` row by row — prefetches nothing: the hardware follows the one stream from row
/// to row, and a second stream a row ahead made 128 KiB rows 3.4x slower
/// (docs/benchmarks.md). (A span function after the row's first pass still prefetches:
/// `span_functions_prefetch_the_next_row`.) It gives the inline code's bits.
#[test]
fn a_span_function_over_adjacent_rows_prefetches_nothing() {
    let src = "axis R = 260\naxis C = 4099\nplaceholder x: f32[R, C]\ny = exp(x)\noutput y\n";
    let (inline, span, explained, available) = inline_and_span_over_260_rows(src);
    assert!(inline == span, "a span function changed a result");
    assert_eq!(
        explained.contains("exp computed into %y by the native"),
        available,
        "{explained}"
    );
    assert!(!explained.contains("prefetching"), "{explained}");
}

/// Layernorm over `[R, C]` (gain and bias over `C`), its output named `out`.
fn layernorm_text(r: usize, c: usize, out: &str) -> String {
    format!(
        "axis R = {r}\naxis C = {c}\nplaceholder a: f32[R, C]\nplaceholder g: f32[C]\n\
         placeholder b: f32[C]\nconstant eps: f32[] = 1e-5\nmu = mean(a, [C])\n\
         centered = subtract(a, mu)\nsq = square(centered)\nvar = mean(sq, [C])\n\
         var_eps = add(var, eps)\nsd = sqrt(var_eps)\nnormed = divide(centered, sd)\n\
         scaled = multiply(normed, g)\n{out} = add(scaled, b)\noutput {out}\n"
    )
}

/// A row kernel's pass over its row in cache prefetches a later row of its large input, a
/// line per vector step, where no span function does (`codegen::translate::span::
/// pass_prefetch`, `weft_runtime::prefetch::weft_prefetch_line`, called with Cranelift's
/// `preserve_all` convention from inside the vector loop, or spread over the sum routine's
/// steps where it does the pass): layernorm over 260 x 4099 (4.3 MB,
/// above the prefetch threshold) says so for its variance pass and agrees with the
/// interpreter on both JIT modes; the last rows' prefetches reach past the input harmlessly.
#[test]
fn row_passes_in_cache_prefetch_a_later_row() {
    let g = weft::ir::text::parse(&layernorm_text(260, 4099, "out"), "layernorm.weft").unwrap();
    let explained = jit_common::explain(&g, &JitOptions::default());
    let prefetching: Vec<&str> = explained
        .lines()
        .filter(|l| l.contains("prefetching %a's row 2 ahead for %i1, a line per step"))
        .collect();
    assert_eq!(prefetching.len(), 1, "{explained}");
    // The variance pass: its own vector loop, or (span routines available, 4099 terms a row)
    // the sum routine, which takes over its prefetch.
    assert!(
        prefetching[0].contains("f32 partials for %a1")
            || prefetching[0].contains("squared into %a1 by the native"),
        "{explained}"
    );
    agree(&g, g.outputs(), 2);
}

/// A pass over memory whose rows are not adjacent prefetches the row ahead itself
/// (`codegen::translate::span::pass_prefetch`): a sum over the first axis of a [B, M, A]
/// f32 tensor of 5.2 MB reads B runs of M·A elements a stride apart, and asks for the run
/// ahead while it reads one; a sum over the middle axis (its runs adjacent, streamed by the
/// hardware) does not. Both agree with the interpreter.
#[test]
fn passes_over_rows_apart_prefetch_the_row_ahead() {
    for (over, prefetches) in [("B", true), ("M", false)] {
        let src = format!(
            "axis B = 64\naxis M = 128\naxis A = 160\nplaceholder t: f32[B, M, A]\n\
             s = sum(t, [{over}])\noutput s\n"
        );
        let g = weft::ir::text::parse(&src, "sums.weft").unwrap();
        let explained = jit_common::explain(&g, &JitOptions::default());
        assert_eq!(
            explained.contains("prefetching %t's row 2 ahead"),
            prefetches,
            "sum over {over}:\n{explained}"
        );
        agree(&g, g.outputs(), 1);
    }
}

/// A parallel vector loop longer than a span block (`codegen::translate::span::BLOCK`) runs
/// block by block within each thread's share — its first loop, the call, its second loop per
/// block — and gives the inline code's bits (NaNs aside).
#[test]
fn span_blocks_split_a_parallel_loop() {
    let src = "axis C = 2000003\nplaceholder x: f32[C]\nz = multiply(x, x)\nt = tanh(z)\n\
               y = add(t, x)\noutput y\n";
    let g = weft::ir::text::parse(src, "blocks.weft").unwrap();
    let c = g.find_axis("C").unwrap();
    let xs: Vec<f32> = (0..2_000_003u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) as f32 / u32::MAX as f32) * 8.0 - 4.0)
        .collect();
    let input = HostArray::from_vec(Axes::new([c]).unwrap(), vec![2_000_003], xs).unwrap();
    let (inline, _, _) = span_run(&g, &input, false, Some(2));
    let (span, explained, available) = span_run(&g, &input, true, Some(2));
    assert!(inline == span, "the span path changed a result");
    if available {
        assert!(
            explained.contains("parallel over 2 threads") && explained.contains("split around"),
            "{explained}"
        );
    }
}

/// Outlined loop nests (`codegen::translate::outline`): layernorm over rows of 1100 columns,
/// each pass long enough to be outlined, gives the same bits with its largest pass a function
/// of its own compiled beside the kernel's (two threads), with every pass outlined (one
/// thread), and with none — on ordinary rows, a row whose f32 partial sums overflow (the cold
/// f64 re-run, inside the outlined function) and a row with a NaN; the kernels' listings
/// hold one, two and four functions, and `weft explain` names the loops outlined.
#[test]
fn outlined_loop_nests_compute_the_inline_bits() {
    let graph = weft::ir::text::parse(&layernorm_text(6, 1100, "y"), "layernorm.weft").unwrap();
    let (r, c) = (graph.find_axis("R").unwrap(), graph.find_axis("C").unwrap());
    let mut xs: Vec<f32> = (0..6 * 1100u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) as f32 / u32::MAX as f32) * 8.0 - 4.0)
        .collect();
    // Row 4: f32 sums overflow, f64 ones do not (mean 3e38). Row 5: a NaN.
    xs[4 * 1100..5 * 1100].fill(3.0e38);
    xs[5 * 1100 + 7] = f32::NAN;
    let columns = |f: fn(u32) -> f32| (0..1100).map(f).collect::<Vec<f32>>();
    let inputs = [
        HostArray::from_vec(Axes::new([r, c]).unwrap(), vec![6, 1100], xs).unwrap(),
        HostArray::from_vec(
            Axes::new([c]).unwrap(),
            vec![1100],
            columns(|i| 0.5 + i as f32 / 1100.0),
        )
        .unwrap(),
        HostArray::from_vec(
            Axes::new([c]).unwrap(),
            vec![1100],
            columns(|i| i as f32 / 550.0 - 1.0),
        )
        .unwrap(),
    ];
    // Leaf loops off: an assembled leaf loop is never outlined (nothing to compile).
    let run = |outline, threads| {
        let codegen = weft::CodegenOptions {
            outline,
            leaf_loops: false,
            ..Default::default()
        };
        codegen_run(&graph, &inputs, codegen, Some(threads))
    };
    // How many functions a kernel became: its own and those of its outlined loops.
    let functions = |outline, threads| {
        let options = JitOptions {
            threads: Some(threads),
            codegen: weft::CodegenOptions {
                outline,
                leaf_loops: false,
                ..Default::default()
            },
            ..JitOptions::default()
        };
        let exe = jit_common::jit_executable(&graph, &options);
        let compiler = weft_compiler::codegen::JitCompiler::with_options(exe.codegen_options())
            .unwrap()
            .with_pool(weft_compiler::executable::pool_of(threads));
        let lk = &exe.lowered()[0];
        compiler
            .clif_text(&lk.kernel)
            .unwrap()
            .matches("\nfunction ")
            .count()
            + 1
    };
    let (inline, _, _) = run(weft::Outline::Never, 2);
    assert!(inline[4 * 1100..5 * 1100].iter().all(|&b| b != u32::MAX));
    for (outline, threads, want) in [
        (weft::Outline::Never, 2, 1),
        (weft::Outline::WhenThreaded, 1, 1),
        (weft::Outline::WhenThreaded, 2, 2),
        (weft::Outline::Every, 1, 4),
    ] {
        let (outlined, explained, _) = run(outline, threads);
        let differ = outlined.iter().zip(&inline).filter(|(a, b)| a != b).count();
        assert!(
            differ == 0,
            "{outline:?}: {differ} results differ from inline code"
        );
        assert_eq!(
            functions(outline, threads),
            want,
            "{outline:?}, {threads} threads"
        );
        let said = explained.matches("(outlined: the kernel calls it)").count();
        assert_eq!(
            said,
            want - 1,
            "{outline:?}, {threads} threads:\n{explained}"
        );
    }
}

/// A softmax over the first axis of `x[N, C]`: its max over the strided `N` folds a row of
/// accumulators in memory order with the max accumulator's own order-free step (NaN, −0 < +0:
/// loop IR `reduce_max`), and its sum of exponentials reads the max per column — the values
/// the interpreter's, special values (NaN, ±inf, ±0) included. Its sum reduces in memory
/// order too: `e`, which the sum and the division read, is stored in x's order (layout follows
/// fusion's strided-reduction judgement, made on the declared order), so no kernel transposes.
#[test]
fn a_softmax_over_a_strided_axis_takes_its_max_in_memory_order() {
    let (small, options) = in_memory_for_small_shapes();
    for op in ["max", "min"] {
        let src = format!(
            "axis N = 300\naxis C = 80\nplaceholder x: f32[N, C]\nm = {op}(x, [N])\n\
             z = subtract(x, m)\ne = exp(z)\ns = sum(e, [N])\ny = divide(e, s)\n\
             output m\noutput y\n"
        );
        let g = weft::ir::text::parse(&src, "softmax.weft").unwrap();
        agree_lowered(&g, small);
        let ps = g.placeholders();
        let specials = weft_oracle::random_inputs(&g, &ps, 3, true);
        let jit = jit_common::run_jit(&g, g.outputs(), &specials, options.clone()).unwrap();
        let tol = weft_oracle::Tolerance::for_graph(&g);
        let interp = references(&g, g.outputs(), &ps, &specials, 2, &tol).unwrap();
        compare(&jit, &interp, &tol).unwrap();
        let why = jit_common::explain(&g, &options);
        assert!(
            why.contains(&format!("{op} over a strided axis in memory order")),
            "{why}"
        );
        // `e` keeps x's order, so its sum also runs in memory order and no kernel transposes.
        assert!(
            why.contains("sum over a strided axis in memory order"),
            "{why}"
        );
        assert!(!why.contains("tiled"), "{why}");
    }
}

/// The squared norm in three spellings — seed 003's `dot(transpose(t), t)`,
/// `sum(multiply(t, t))` and `sum(square(t))` — is one kernel (simplify canonicalises the first
/// two into the third) and one value, bit for bit, in the interpreter and on the JIT: a dot's
/// products are rounded to its dtype and summed as a sum's terms (docs/numerics.md, issue 41).
#[test]
fn every_spelling_of_the_squared_norm_is_one_kernel_and_one_value() {
    let cases = [
        ("N", 1000, "f32"),
        ("N", 70_000, "f32"),
        ("N", 1000, "f64"),
        ("N, M", 300, "f32"),
        ("N, M", 300, "f64"),
    ];
    for (axes, n, dtype) in cases {
        // A transposed matrix pairs its axes in reverse: the sums list them so.
        let rev = if axes == "N" { "N" } else { "M, N" };
        let spellings = [
            "tt = transpose(t)\ns = dot(tt, t)".to_string(),
            format!("p = multiply(t, t)\ns = sum(p, [{rev}])"),
            format!("p = square(t)\ns = sum(p, [{rev}])"),
        ];
        let mut kernels = Vec::new();
        let mut values = Vec::new();
        for body in &spellings {
            let src = format!(
                "axis N = {n}\naxis M = 70\nplaceholder x: {dtype}[{axes}]\n\
                 placeholder y: {dtype}[{axes}]\nt = subtract(x, y)\n{body}\noutput s\n"
            );
            let g = weft::ir::text::parse(&src, "l2.weft").unwrap();
            let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
            let lowered = weft_compiler::lower_plan(&plan, &Default::default()).unwrap();
            kernels.push(
                lowered
                    .iter()
                    .map(|k| k.kernel.to_string())
                    .collect::<Vec<_>>(),
            );
            let ps = g.placeholders();
            let inputs = random_inputs(&g, &ps, 7);
            for backend in [Backend::Interpreter, Backend::Jit] {
                let t = Transformer::new(g.clone(), backend).unwrap();
                let out = t
                    .computation(g.outputs(), &ps)
                    .unwrap()
                    .call(&inputs)
                    .unwrap();
                values.push(out[0].to_vec::<f64>().ok().unwrap_or_else(|| {
                    out[0]
                        .to_vec::<f32>()
                        .unwrap()
                        .into_iter()
                        .map(f64::from)
                        .collect()
                }));
            }
        }
        for k in &kernels[1..] {
            assert_eq!(k, &kernels[0], "{axes} {n} {dtype}");
        }
        // The interpreter's three values are bit-equal; so are the JIT's.
        let bits = |i: usize| values[i][0].to_bits();
        assert_eq!(
            (bits(2), bits(4)),
            (bits(0), bits(0)),
            "{n} {dtype}: {values:?}"
        );
        assert_eq!(
            (bits(3), bits(5)),
            (bits(1), bits(1)),
            "{n} {dtype}: {values:?}"
        );
    }
}

/// A sum of a span function over the outer axis — log-sum-exp's denominator `Σ_C exp(x − m)`
/// of `x[C, R]`, summed in memory order with rows jammed — computes each jammed row's
/// function by the native routine (`span_fission`: one loop per row storing it into scratch,
/// then the additions in order) with the inline code's bits: R in blocks of 1027 (a tail of
/// 3 lanes a row), inputs with every edge (NaN payloads, ±inf, overflow) in one block, which
/// re-runs in f64, ordinary values in the others, 1 and 2 threads.
#[test]
fn sums_of_span_functions_over_the_outer_axis_give_the_inline_bits() {
    let mut rng = weft_ir::perturb::SplitMix(0x9e37_79b9_7f4a_7c15);
    let edges = SPAN_EDGES;
    for body in [
        "m = max(x, [C])\nd = subtract(x, m)\ne = exp(d)\ny = sum(e, [C])\n",
        "e = tanh(x)\ny = sum(e, [C])\n",
        "e = log(x)\ny = sum(e, [C])\n",
    ] {
        let (c, r) = (64usize, 4108usize);
        let text =
            format!("axis C = {c}\naxis R = {r}\nplaceholder x: f32[C, R]\n{body}output y\n");
        let g = weft::ir::text::parse(&text, "outer.weft").unwrap();
        let axes = Axes::new([g.find_axis("C").unwrap(), g.find_axis("R").unwrap()]).unwrap();
        // Edges only in the first 16 columns: their block re-runs in f64, the others keep
        // the f32 sums the routine's terms went into.
        let xs: Vec<f32> = (0..c * r)
            .map(|i| match (i % r < 16, rng.below(8)) {
                (true, 0) => edges[i % edges.len()],
                _ => (rng.unit() * 20.0 - 10.0) as f32,
            })
            .collect();
        let inputs = [HostArray::from_vec(axes, vec![c, r], xs).unwrap()];
        assert_native_gives_inline_bits(&g, &inputs, "each computed into a span", body);
    }
}

/// Each of a jammed step's span-function loops (one per row: `span_fission`) prefetches the
/// row it will read two steps on — not all of them the first row's — whether the span
/// routine or an assembled leaf loop (which takes the routine's prefetch) evaluates it.
#[test]
fn each_jammed_row_of_a_column_sum_prefetches_its_own_row() {
    let src = "axis C = 64\naxis R = 16384\nplaceholder x: f32[C, R]\nm = max(x, [C])\n\
               d = subtract(x, m)\ne = exp(d)\ny = sum(e, [C])\noutput y\n";
    let g = weft::ir::text::parse(src, "lse.weft").unwrap();
    let shared = Arc::new(g.clone());
    let exe = weft_compiler::JitExecutable::new(
        shared.clone(),
        shared.outputs(),
        &shared.placeholders(),
        &JitOptions::default(),
    )
    .unwrap();
    if !exe.span_math() {
        return; // no native span routines on this host: nothing is split
    }
    let explained = weft_compiler::explain::explain(&exe);
    let rows: std::collections::BTreeSet<&str> = explained
        .lines()
        .filter(|l| {
            l.contains("exp over the span of %span0") || l.contains("by an assembled leaf loop")
        })
        .filter_map(|l| l.split("row 2 ahead for %").nth(1))
        .filter_map(|rest| rest.split(',').next())
        .collect();
    assert_eq!(rows.len(), 8, "{explained}");
}

/// A maximum or minimum over the outer axis — `max(x, [C])` of `x[C, R]`, in memory order
/// with 8 rows jammed a step and the rest one at a time — folds each step's rows by the native
/// column routine with the inline code's bits: inputs with every edge (NaN payloads, ±inf,
/// both zeros, subnormals), R with a tail of the routine's 16 lanes, C leaving rows over, 1
/// and 2 threads; and inside softmax and log-sum-exp.
#[test]
fn extremes_over_the_outer_axis_by_the_column_routine_give_the_inline_bits() {
    let mut rng = weft_ir::perturb::SplitMix(0x6a09_e667_f3bc_c909);
    let edges = [
        f32::NAN,
        f32::from_bits(0xffc0_0123),
        f32::INFINITY,
        f32::NEG_INFINITY,
    ];
    for (body, c) in [
        ("y = max(x, [C])\n", 67),
        ("y = min(x, [C])\n", 67),
        (
            "m = max(x, [C])\nd = subtract(x, m)\ne = exp(d)\ny = sum(e, [C])\n",
            64,
        ),
    ] {
        let r = 4100usize;
        let text =
            format!("axis C = {c}\naxis R = {r}\nplaceholder x: f32[C, R]\n{body}output y\n");
        let g = weft::ir::text::parse(&text, "outer.weft").unwrap();
        let axes = Axes::new([g.find_axis("C").unwrap(), g.find_axis("R").unwrap()]).unwrap();
        // Columns by kind: zeros of both signs among negatives (a maximum's tie) or among
        // positives (a minimum's), subnormals and zeros, one edge among ordinary values, or
        // ordinary values alone.
        let xs: Vec<f32> = (0..c * r)
            .map(|i| {
                let z = [0.0, -0.0][rng.below(2)];
                let v = (rng.unit() * 40.0 - 20.0) as f32;
                match (i % r % 6, rng.below(4)) {
                    (0, 0) | (1, 0) => z,
                    (0, _) => -v.abs() - 1.0,
                    (1, _) => v.abs() + 1.0,
                    (2, 0) => z,
                    (2, _) => [1e-40, -1e-40][rng.below(2)],
                    (3, _) if rng.below(64) == 0 => edges[i % edges.len()],
                    _ => v,
                }
            })
            .collect();
        let inputs = [HostArray::from_vec(axes, vec![c, r], xs).unwrap()];
        assert_native_gives_inline_bits(&g, &inputs, "column routine", body);
    }
}

/// Distance in units in the last place between two floats of one class (`None` when they
/// differ in class: NaN against a number, infinities, zeros of different signs).
fn ulps(a: f64, b: f64, f32: bool) -> Option<u64> {
    if a.is_nan() || b.is_nan() {
        return (a.is_nan() && b.is_nan()).then_some(0);
    }
    if a.is_infinite() || b.is_infinite() || a == 0.0 || b == 0.0 {
        return (a.to_bits() == b.to_bits()).then_some(0);
    }
    // Ordered integers: adjacent floats differ by one, across zero too.
    let key = |x: f64| -> i64 {
        let bits = if f32 {
            (x as f32).to_bits() as i32 as i64
        } else {
            x.to_bits() as i64
        };
        if bits < 0 {
            i64::MIN - bits
        } else {
            bits
        }
    };
    Some(key(a).abs_diff(key(b)))
}

/// Dense arguments of sin/cos for `dtype`: a uniform sweep of [-10, 10], magnitudes from 1e-30
/// (1e-300 in f64) to the largest finite value at 7 per decade (huge arguments need full range
/// reduction), both signs, and the special values.
fn trig_arguments(f32: bool) -> Vec<f64> {
    let mut v: Vec<f64> = (0..20_001).map(|i| -10.0 + i as f64 * 1e-3).collect();
    let (lo, hi) = if f32 { (-30, 38) } else { (-300, 308) };
    for e in lo..=hi {
        for m in [1.0, 1.3, 2.0, 3.0, 4.7, 6.5, 9.1] {
            let x = m * 10f64.powi(e);
            if !f32 || x <= f32::MAX as f64 {
                v.extend([x, -x]);
            }
        }
    }
    // Near the zeros of sin and cos, where the reduction by π/2 cancels.
    v.extend((-64..=64).map(|k| k as f64 * std::f64::consts::FRAC_PI_2));
    v.extend([0.0, -0.0, f64::INFINITY, f64::NEG_INFINITY, f64::NAN]);
    v.extend(if f32 {
        [f32::MAX as f64, 1e-40, std::f32::consts::PI as f64]
    } else {
        [f64::MAX, 5e-324, std::f64::consts::PI]
    });
    v
}

/// The JIT (fused and unfused) computes `f` of the placeholders `xs` (one or two, of `dtype`)
/// elementwise; its results, each as f64.
fn jit_elementwise(
    dtype: DType,
    xs: &[Vec<f64>],
    f: impl Fn(&mut Graph, &[NodeId]) -> NodeId,
) -> Vec<Vec<f64>> {
    let mut g = Graph::new();
    let n = g.axis("N", xs[0].len()).unwrap();
    let ps: Vec<NodeId> = (0..xs.len())
        .map(|i| g.placeholder(&format!("x{i}"), &[n], dtype).unwrap())
        .collect();
    let out = f(&mut g, &ps);
    let inputs: Vec<HostArray> = xs
        .iter()
        .map(|x| {
            let data = match dtype {
                DType::F32 => ArrayData::F32(x.iter().map(|v| *v as f32).collect()),
                _ => ArrayData::F64(x.clone()),
            };
            HostArray::new(g.node(ps[0]).axes.clone(), vec![x.len()], data).unwrap()
        })
        .collect();
    BACKENDS
        .iter()
        .map(|&b| {
            let t = Transformer::new(g.clone(), b).unwrap();
            let c = t.computation(&[out], &ps).unwrap();
            let got = c.call(&inputs).unwrap().remove(0);
            (0..got.len())
                .map(|i| got.data().get(i).unwrap().as_f64())
                .collect()
        })
        .collect()
}

/// The worst distance of `got` from `want` in ulps, failing on a class mismatch.
/// The worst distance of `got` from `want` in ulps, and where (arguments, JIT, libm), failing
/// on a class mismatch. With `near_zero`, results under 2⁻¹⁰ in magnitude are measured in
/// ulps of 2⁻¹⁰ instead (docs/numerics.md: sin/cos's reduction by π/2 has an absolute error
/// there, so sin(π) is 7 ulps of its own tiny value off).
fn worst_ulps(
    what: &str,
    args: &[Vec<f64>],
    got: &[f64],
    want: &[f64],
    f32: bool,
    near_zero: bool,
) -> (u64, String) {
    let tiny = 2f64.powi(-10);
    let ulp_of_tiny = tiny
        * if f32 {
            f32::EPSILON as f64
        } else {
            f64::EPSILON
        };
    let mut worst = (0, String::new());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let arg: Vec<f64> = args.iter().map(|a| a[i]).collect();
        let class = ulps(g, w, f32)
            .unwrap_or_else(|| panic!("{what}{arg:?}: JIT {g:e}, libm {w:e} (other class)"));
        let d = if near_zero && w.abs() < tiny && g.abs() < tiny {
            ((g - w).abs() / ulp_of_tiny).ceil() as u64
        } else {
            class
        };
        if d > worst.0 {
            worst = (d, format!("{what}{arg:?}: JIT {g:e}, libm {w:e}"));
        }
    }
    worst
}

/// sin, cos and power on the JIT, fused and unfused, against the `libm` crate (musl's): a
/// reference independent of std's functions, which the interpreter and the JIT's out-of-line
/// calls (huge trig arguments, `pow`) use, so checking the JIT against the interpreter there
/// compares std with itself. ~21 000 arguments each (dense in [−10, 10], every decade to the
/// largest finite value, the multiples of π/2 up to 100, special values); classes exact, values
/// within `TRIG_ULPS` — docs/numerics.md's bound for the polynomial sin/cos, measured in ulps
/// of 2⁻¹⁰ where the result is smaller (the reduction's absolute error) — and `POW_ULPS`: two
/// implementations each within 1 ulp of the exact power. Measured 2026-12-06: sin/cos 2 ulps
/// (f32 and f64), power 1.
#[test]
fn sin_cos_and_power_match_an_independent_libm_densely() {
    const TRIG_ULPS: u64 = 2;
    const POW_ULPS: u64 = 2;
    for f32 in [true, false] {
        let dtype = if f32 { DType::F32 } else { DType::F64 };
        let round = |v: f64| if f32 { v as f32 as f64 } else { v };
        let xs: Vec<f64> = trig_arguments(f32).into_iter().map(round).collect();
        type Pair = (&'static str, UnaryOp, fn(f64) -> f64, fn(f32) -> f32);
        let fns: [Pair; 2] = [
            ("sin", UnaryOp::Sin, libm::sin, libm::sinf),
            ("cos", UnaryOp::Cos, libm::cos, libm::cosf),
        ];
        for (name, op, f64_fn, f32_fn) in fns {
            let want: Vec<f64> = xs
                .iter()
                .map(|&x| {
                    if f32 {
                        f32_fn(x as f32) as f64
                    } else {
                        f64_fn(x)
                    }
                })
                .collect();
            let args = [xs.clone()];
            for got in jit_elementwise(dtype, &args, |g, p| g.unary(op, p[0]).unwrap()) {
                let (worst, at) = worst_ulps(name, &args, &got, &want, f32, true);
                eprintln!("{name} {dtype:?}: {worst} ulps at most ({at})");
                assert!(worst <= TRIG_ULPS, "{name} {dtype:?}: {worst} ulps at {at}");
            }
        }
        // Bases over 1e-3..1e3 and their negatives, exponents over [-40, 40] (integers for
        // negative bases, where a fraction is NaN), and the special pairs.
        let mut r = weft_oracle::SplitMix(7);
        let (mut bases, mut exps) = (Vec::new(), Vec::new());
        for i in 0..20_000 {
            let b = 10f64.powf(r.unit() * 6.0 - 3.0);
            let e = r.unit() * 80.0 - 40.0;
            let (b, e) = if i % 4 == 0 { (-b, e.round()) } else { (b, e) };
            bases.push(round(b));
            exps.push(round(e));
        }
        for b in [
            0.0,
            -0.0,
            1.0,
            -1.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ] {
            for e in [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 3.0, f64::INFINITY, f64::NAN] {
                bases.push(b);
                exps.push(e);
            }
        }
        let want: Vec<f64> = bases
            .iter()
            .zip(&exps)
            .map(|(&b, &e)| {
                if f32 {
                    libm::powf(b as f32, e as f32) as f64
                } else {
                    libm::pow(b, e)
                }
            })
            .collect();
        let args = [bases, exps];
        let power = |g: &mut Graph, p: &[NodeId]| g.binary(BinaryOp::Power, p[0], p[1]).unwrap();
        for got in jit_elementwise(dtype, &args, power) {
            let (worst, at) = worst_ulps("power", &args, &got, &want, f32, false);
            eprintln!("power {dtype:?}: {worst} ulps at most ({at})");
            assert!(worst <= POW_ULPS, "power {dtype:?}: {worst} ulps at {at}");
        }
    }
}

/// `JitOptions::fold_constants`: on (the default), `sin` of a constant is folded at compile time
/// by the interpreter, so the JIT never computes it; off (the oracle tests' unfused
/// configuration, docs/testing.md), the kernels compute it, and still match the interpreter.
#[test]
fn constant_folding_off_leaves_constant_subgraphs_to_the_kernels() {
    let mut g = Graph::new();
    let n = g.axis("N", 5).unwrap();
    let data = ArrayData::F64(vec![0.5, -1.0, 2.0, 1e6, -0.0]);
    let c = g
        .constant(None, &[n], DType::F64, TensorInit::data(data))
        .unwrap();
    let s = g.unary(UnaryOp::Sin, c).unwrap();
    g.mark_output(s).unwrap();
    let sines = |options: &JitOptions| {
        let exe = jit_common::jit_executable(&g, options);
        let simplified = &exe.compiled_plan().simplified.graph;
        simplified
            .nodes()
            .filter(|(_, node)| matches!(node.op, weft::Op::Unary(UnaryOp::Sin, _)))
            .count()
    };
    assert_eq!(sines(&JitOptions::default()), 0);
    let unfolded = JitOptions {
        fold_constants: false,
        ..JitOptions::unfused()
    };
    assert_eq!(sines(&unfolded), 1);
    let tol = weft_oracle::Tolerance::for_graph(&g);
    // run_jit calls twice (`call`, then `call_into`).
    let refs = references(&g, &[s], &[], &[], 2, &tol).unwrap();
    let got = jit_common::run_jit(&g, &[s], &[], unfolded).unwrap();
    compare(&got, &refs, &tol).unwrap();
}

/// A reduction over `[C, 1, 1]` (a pooled image flattened into a dense layer, ResNet's last
/// layer at batch 1) loops over `C` innermost, vectorised, with no loop for the one-long axes —
/// sum, mean and max, an arg-reduction (its flat index unchanged) and a reduction over
/// one-long axes only (which keeps its loops) — all as the interpreter computes them.
#[test]
fn reductions_over_one_long_axes_loop_over_the_long_one() {
    let mut g = Graph::new();
    let (o, c, h, w) = (
        g.axis("O", 5).unwrap(),
        g.axis("C", 67).unwrap(),
        g.axis("H", 1).unwrap(),
        g.axis("W", 1).unwrap(),
    );
    let x = g.placeholder("x", &[c, h, w], DType::F32).unwrap();
    let k = g.placeholder("k", &[o, c, h, w], DType::F32).unwrap();
    let xk = g.binary(BinaryOp::Multiply, x, k).unwrap();
    let mut outs = Vec::new();
    for op in [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::ArgMax,
    ] {
        outs.push(g.reduce(op, xk, &[c, h, w], None).unwrap());
    }
    outs.push(g.reduce(ReduceOp::Sum, xk, &[h, w], None).unwrap());
    for &out in &outs {
        g.mark_output(out).unwrap();
    }
    let ps = [x, k];
    let tol = weft_oracle::Tolerance::for_graph(&g);
    for seed in 0..3 {
        let inputs = random_inputs(&g, &ps, seed);
        let interp = references(&g, &outs, &ps, &inputs, 1, &tol).unwrap();
        for b in BACKENDS {
            let jit = run(&g, &outs, &ps, &inputs, 1, b).unwrap();
            if let Err(m) = compare(&jit, &interp, &tol) {
                panic!("seed {seed}, {b:?} differs: {m}");
            }
        }
    }
    let plan = weft_compiler::compile_plan(&g, &Default::default()).unwrap();
    let kernels = weft_compiler::lower_plan(&plan, &Default::default()).unwrap();
    let text: String = kernels.iter().map(|k| k.kernel.to_string()).collect();
    assert!(text.contains("in 0..67 vectorize"), "{text}");
    // Only the reduction over H and W alone keeps its one-long loops.
    assert_eq!(text.matches("in 0..1 ").count(), 2, "{text}");
}
