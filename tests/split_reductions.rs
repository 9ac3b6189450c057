//! Split reductions (compiler/src/split.rs): a long sum, mean, max, norm or dot to a scalar or
//! a short result runs as a parallel partials kernel plus a combining kernel, matches the
//! interpreter, and gives bit-identical results on every call and for every thread count
//! (`JitOptions::threads`, `WEFT_NUM_THREADS`).

mod common;
mod jit_common;

use jit_common::{compare, references};
use std::sync::Arc;
use weft::compiler::{JitError, JitExecutable};
use weft::prelude::*;
use weft_runtime::{Executable, State};

/// Reductions of a long axis N: to scalars, and to a short result over R.
const GRAPH: &str = "
axis R = 3
axis N = 98304
placeholder x: f32[N]
placeholder y: f32[N]
placeholder a: f32[R, N]
placeholder i: i32[N]
d = subtract(x, y)
dt = transpose(d)
l2 = dot(dt, d)
s = sum(x, [N])
m = mean(x, [N])
mx = max(x, [N])
mn = min(i, [N])
sq = square(x)
ss = sum(sq, [N])
norm = sqrt(ss)
rs = sum(a, [N])
rm = mean(a, [N])
rmx = max(a, [N])
";

const SPLIT: [&str; 9] = ["l2", "s", "m", "mx", "mn", "norm", "rs", "rm", "rmx"];

fn graph() -> Graph {
    weft::ir::text::parse(GRAPH, "split.weft").unwrap()
}

fn node(g: &Graph, name: &str) -> NodeId {
    g.nodes()
        .find(|(id, _)| g.node_label(*id) == name)
        .map(|(id, _)| id)
        .unwrap_or_else(|| panic!("no node {name}"))
}

fn inputs(g: &Graph, seed: u64) -> Vec<HostArray> {
    jit_common::random_inputs(g, &g.placeholders(), seed)
}

fn compile(g: &Graph, outputs: &[NodeId], threads: Option<usize>) -> JitExecutable {
    let options = JitOptions {
        threads,
        ..JitOptions::default()
    };
    JitExecutable::new(Arc::new(g.clone()), outputs, &g.placeholders(), &options).unwrap()
}

fn call(exe: &JitExecutable, g: &Graph, inputs: &[HostArray]) -> Vec<HostArray> {
    let mut state = State::initial(g).unwrap();
    exe.run(inputs, &mut state).unwrap()
}

/// The bits of every element of `arrays`, for bit-for-bit comparison (NaN payloads included).
fn bits(arrays: &[HostArray]) -> Vec<Vec<u64>> {
    arrays
        .iter()
        .map(|a| match a.data() {
            ArrayData::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            ArrayData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
            ArrayData::I32(v) => v.iter().map(|x| *x as u64).collect(),
            ArrayData::I64(v) => v.iter().map(|x| *x as u64).collect(),
            ArrayData::Bool(v) => v.iter().map(|x| u64::from(*x)).collect(),
        })
        .collect()
}

#[test]
fn each_long_reduction_to_few_results_is_split_and_matches_the_interpreter() {
    let g = graph();
    for name in SPLIT {
        let out = node(&g, name);
        let exe = compile(&g, &[out], None);
        let names: Vec<&str> = exe
            .lowered()
            .iter()
            .map(|k| k.kernel.name.as_str())
            .collect();
        let partials = exe
            .lowered()
            .iter()
            .find(|k| k.kernel.name.ends_with("_partials"))
            .unwrap_or_else(|| panic!("{name} is not split: kernels {names:?}"));
        let parallel = partials
            .kernel
            .parallel_loop()
            .expect("a parallel chunk loop");
        assert_eq!(partials.kernel.loops[parallel].extent, 64, "{name}");
        assert!(names.iter().any(|n| n.ends_with("_combine")), "{name}");
        let text = weft::compiler::explain::explain(&exe);
        assert!(text.contains("in 0..64: parallel over"), "{name}:\n{text}");

        let ps = g.placeholders();
        for seed in [1, 2] {
            let xs = inputs(&g, seed);
            let tol = weft_oracle::Tolerance::for_graph(&g);
            let interp = references(&g, &[out], &ps, &xs, 1, &tol).unwrap();
            let jit = (vec![call(&exe, &g, &xs)], Vec::new());
            if let Err(m) = compare(&jit, &interp, &tol) {
                panic!("{name} differs from the interpreter: {m}");
            }
        }
    }
}

#[test]
fn results_are_bit_identical_across_calls_and_thread_counts() {
    let g = graph();
    let outs: Vec<NodeId> = SPLIT.iter().map(|n| node(&g, n)).collect();
    let xs = inputs(&g, 7);
    let one = compile(&g, &outs, Some(1));
    let two = compile(&g, &outs, Some(2));
    assert_eq!((one.threads(), two.threads()), (1, 2));
    let first = bits(&call(&one, &g, &xs));
    for exe in [&one, &two, &one, &two] {
        for _ in 0..3 {
            assert_eq!(bits(&call(exe, &g, &xs)), first);
        }
    }
}

#[test]
fn a_short_or_unsplittable_reduction_is_not_split() {
    let g = weft::ir::text::parse(
        "axis N = 98304\naxis S = 64\nplaceholder x: f32[N]\nplaceholder z: f64[N]\n\
         placeholder w: f32[S]\nshort = sum(w, [S])\nf64sum = sum(z, [N])\n\
         prod = prod(x, [N])\narg = argmax(x, [N])\n",
        "unsplit.weft",
    )
    .unwrap();
    for name in ["short", "f64sum", "prod", "arg"] {
        let exe = compile(&g, &[node(&g, name)], None);
        assert!(
            exe.lowered()
                .iter()
                .all(|k| !k.kernel.name.ends_with("_partials")),
            "{name} was split"
        );
    }
}

#[test]
fn thread_counts_outside_the_pool_range_are_typed_errors() {
    let g = graph();
    for bad in [0, weft::compiler::executable::MAX_THREADS + 1] {
        let options = JitOptions {
            threads: Some(bad),
            ..JitOptions::default()
        };
        let err = JitExecutable::new(
            Arc::new(g.clone()),
            &[node(&g, "s")],
            &g.placeholders(),
            &options,
        )
        .unwrap_err();
        assert!(
            matches!(err, JitError::Threads { requested } if requested == bad),
            "{err}"
        );
    }
    // Through the API too.
    let t = Transformer::with_jit_options(
        g.clone(),
        JitOptions {
            threads: Some(0),
            ..JitOptions::default()
        },
    );
    let failed = t.and_then(|t| {
        t.computation(&[node(&g, "s")], &g.placeholders())
            .map(|_| ())
    });
    assert!(failed.is_err());
}

#[test]
fn weft_num_threads_sets_the_pool_and_a_bad_value_falls_back_with_a_warning() {
    let dir = std::env::temp_dir().join(format!("weft-split-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("l2.weft");
    std::fs::write(
        &file,
        "axis N = 98304\nplaceholder x: f32[N]\nplaceholder y: f32[N]\nd = subtract(x, y)\n\
         dt = transpose(d)\ns = dot(dt, d)\noutput s\n",
    )
    .unwrap();
    let explain = |value: &str| {
        let out = common::output_ok(
            common::weft_command()
                .arg("explain")
                .arg(&file)
                .env("WEFT_NUM_THREADS", value),
        );
        (
            String::from_utf8(out.stdout).unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    };
    for n in ["1", "2"] {
        let (text, _) = explain(n);
        assert!(
            text.contains(&format!("in 0..64: parallel over {n} threads")),
            "{text}"
        );
    }
    for bad in ["0", "many", "99999"] {
        let (text, err) = explain(bad);
        assert!(err.contains("ignoring WEFT_NUM_THREADS"), "{err}");
        let machine = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(
            text.contains(&format!("parallel over {machine} threads")),
            "{text}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
