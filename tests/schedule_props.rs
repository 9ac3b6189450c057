//! Property tests of the schedule transformations of lowering and code generation —
//! transposing copies tiled (`compiler/src/tile.rs`) and moved by the native transpose
//! (`codegen/translate/jam.rs`), sums over strided axes in memory order
//! (`compiler/src/reduce_in_memory.rs`), row reductions visiting rows in memory order
//! (`compiler/src/memory_order.rs`), register blocking — over random 2-D and 3-D shapes
//! (lengths around the tile and the strides that trigger them), random result orders, reduced
//! axes, dtypes and a tail after the reduction: fused (with ordinary and with streamed stores)
//! and unfused JIT against the interpreter, with the memory-order threshold lowered so small
//! shapes take every path.

mod jit_common;

use jit_common::{compare, references, run_jit};
use proptest::prelude::*;
use weft::prelude::*;
use weft_oracle::{proptest_cases, Tolerance};

const NAMES: [&str; 3] = ["P", "Q", "S"];

/// A `.weft` program: a placeholder over `lens`, then either a copy into `order` or a
/// reduction over the axes at `reduced` followed by the result in `order` and a tail.
fn program(
    lens: &[usize],
    dtype: DType,
    reduce: Option<(&str, Vec<usize>)>,
    order: &[usize],
) -> String {
    let axes: Vec<&str> = NAMES[..lens.len()].to_vec();
    let mut src = String::new();
    for (a, n) in axes.iter().zip(lens) {
        src += &format!("axis {a} = {n}\n");
    }
    src += &format!("placeholder t: {}[{}]\n", dtype.name(), axes.join(", "));
    match reduce {
        None => {
            let o: Vec<&str> = order.iter().map(|&i| axes[i]).collect();
            src += &format!("y = axes_with_order(t, [{}])\noutput y\n", o.join(", "));
        }
        Some((op, red)) => {
            let r: Vec<&str> = red.iter().map(|&i| axes[i]).collect();
            let kept: Vec<&str> = order
                .iter()
                .filter(|i| !red.contains(i))
                .map(|&i| axes[i])
                .collect();
            src += &format!("s = {op}(t, [{}])\n", r.join(", "));
            if kept.is_empty() {
                src += "y = multiply(s, s)\noutput s\noutput y\n";
            } else {
                src += &format!(
                    "r = axes_with_order(s, [{}])\ny = add(r, r)\noutput r\noutput y\n",
                    kept.join(", ")
                );
            }
        }
    }
    src
}

/// A normalisation over the axes at `reduced` of a placeholder over `lens`: a layernorm-like
/// one (mean, then the mean of squares of the centred values) or a softmax, in `dtype`.
/// Over a strided axis the reductions are kernels of their own, the second reading the
/// first's result per column (`BoundaryReason::StridedReduction`, the head of lets
/// `reduce_in_memory` copies into its loops).
fn normalisation(lens: &[usize], dtype: DType, reduced: &[usize], softmax: bool) -> String {
    let axes: Vec<&str> = NAMES[..lens.len()].to_vec();
    let mut src = String::new();
    for (a, n) in axes.iter().zip(lens) {
        src += &format!("axis {a} = {n}\n");
    }
    src += &format!("placeholder t: {}[{}]\n", dtype.name(), axes.join(", "));
    let r: Vec<&str> = reduced.iter().map(|&i| axes[i]).collect();
    let r = r.join(", ");
    if softmax {
        src += &format!("m = max(t, [{r}])\nz = subtract(t, m)\ne = exp(z)\n");
        src += &format!("s = sum(e, [{r}])\ny = divide(e, s)\noutput y\n");
    } else {
        src += &format!("mu = mean(t, [{r}])\nc = subtract(t, mu)\nsq = square(c)\n");
        src += &format!("v = mean(sq, [{r}])\nsd = sqrt(v)\ny = divide(c, sd)\noutput y\n");
    }
    src
}

fn check(src: &str, seed: u64) -> Result<(), TestCaseError> {
    let g = weft::ir::text::parse(src, "schedule.weft").unwrap();
    let ps = g.placeholders();
    // Half the cases hold ±0, ±inf, NaN, subnormals and huge values: f32 sums in f32 rows must
    // sum again in f64 where one overflows (`reduce_in_memory::narrowed`).
    let inputs = weft_oracle::random_inputs(&g, &ps, seed, seed.is_multiple_of(2));
    let tol = Tolerance::for_graph(&g);
    let interp = references(&g, g.outputs(), &ps, &inputs, 2, &tol).unwrap();
    for (fused, stream_min_bytes) in [(true, None), (true, Some(0)), (false, None)] {
        let options = JitOptions {
            fused,
            lower: weft::LowerOptions {
                reduce_in_memory_min_bytes: 0,
                ..Default::default()
            },
            codegen: weft::CodegenOptions {
                stream_min_bytes,
                ..Default::default()
            },
            ..JitOptions::default()
        };
        let jit = run_jit(&g, g.outputs(), &inputs, options)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{src}")))?;
        if let Err(m) = compare(&jit, &interp, &tol) {
            return Err(TestCaseError::fail(format!(
                "fused {fused}, streaming from {stream_min_bytes:?} B: {m}\n{src}"
            )));
        }
    }
    Ok(())
}

fn lens() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(
        prop::sample::select(vec![1usize, 3, 16, 17, 32, 64, 80]),
        2..=3,
    )
}

fn order(n: usize) -> impl Strategy<Value = Vec<usize>> {
    Just((0..n).collect::<Vec<_>>()).prop_shuffle()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn copies_into_any_order_match_the_interpreter(
        (lens, order) in lens().prop_flat_map(|l| { let n = l.len(); (Just(l), order(n)) }),
        dtype in prop::sample::select(vec![DType::F32, DType::F64, DType::I32]),
        seed in any::<u64>(),
    ) {
        check(&program(&lens, dtype, None, &order), seed)?;
    }

    #[test]
    fn reductions_into_any_order_match_the_interpreter(
        (lens, order, red) in lens().prop_flat_map(|l| {
            let n = l.len();
            (Just(l), order(n), prop::collection::btree_set(0..n, 1..n))
        }),
        op in prop::sample::select(vec!["sum", "mean", "max"]),
        dtype in prop::sample::select(vec![DType::F32, DType::F64, DType::I64]),
        seed in any::<u64>(),
    ) {
        let op = if op == "mean" && !dtype.is_float() { "sum" } else { op };
        let red: Vec<usize> = red.into_iter().collect();
        check(&program(&lens, dtype, Some((op, red)), &order), seed)?;
    }

    #[test]
    fn normalisations_over_any_axes_match_the_interpreter(
        (lens, red) in lens().prop_flat_map(|l| {
            let n = l.len();
            (Just(l), prop::collection::btree_set(0..n, 1..n))
        }),
        dtype in prop::sample::select(vec![DType::F32, DType::F64]),
        softmax in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let red: Vec<usize> = red.into_iter().collect();
        check(&normalisation(&lens, dtype, &red, softmax), seed)?;
    }
}
