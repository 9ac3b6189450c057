//! Regression tests for bugs found from outside (fuzzing, limit tests): every reproducer in
//! `tests/findings/` (copied from the shared findings folder, whose README explains each) runs
//! on every backend — the interpreter, the fused JIT and the unfused JIT — and must end in a
//! correct result (the interpreter's, compared as docs/testing.md says) or a typed error naming
//! the culprit: never a panic, an abort or a hang. Where the interpreter refuses a graph, the
//! JIT may refuse it too or compute it; where the interpreter computes it, the JIT must too.
//!
//! Many reproducers mark no output (the fuzzer chose them): each runs with its marked outputs
//! (its last node when none is marked) and, when small, with every node requested, so each
//! intermediate is observed. Axes declared without a length are bound to 3. Dropping a new
//! `.weft` file into `tests/findings/` makes it a regression test
//! (`every_finding_ends_in_a_correct_result_or_a_typed_error`; `WEFT_FINDINGS=substring` runs
//! only the matching files); the tests after it check what the errors name, finding by finding.

mod jit_common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;
use weft::ir::AxisDef;
use weft::prelude::*;
use weft::{Error, Op, ReduceOp};
use weft_oracle::Tolerance;

/// Longest one reproducer may take on all backends and output sets together (debug build).
const TIME_LIMIT: Duration = Duration::from_secs(120);
/// Graphs up to this many nodes, none larger than `EVERY_NODE_ELEMENTS`, are also run with
/// every node requested as an output (larger ones would only time the interpreter).
const EVERY_NODE_LIMIT: usize = 300;
const EVERY_NODE_ELEMENTS: usize = 1 << 20;
/// Placeholders above this many elements are not fed (the run counts as compiled only).
const INPUT_LIMIT: usize = 1 << 16;

fn findings_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/findings")
}

/// The graph of `tests/findings/NAME.weft`, every unbound declared axis bound to 3.
fn load(name: &str) -> Graph {
    let text = std::fs::read_to_string(findings_dir().join(name)).expect("reproducer");
    let g = weft::ir::text::parse(&text, name).expect("reproducers parse");
    bind_unbound(g)
}

fn bind_unbound(mut g: Graph) -> Graph {
    let unbound: Vec<Axis> = g
        .axis_table()
        .filter(|(_, d)| matches!(d.def, AxisDef::Base { len: None }))
        .map(|(id, _)| g.axis_of(id))
        .collect();
    for a in unbound {
        g.bind(a, 3).unwrap();
    }
    g
}

/// Whether every node is cheap enough to request at once.
fn small(g: &Graph) -> bool {
    g.len() <= EVERY_NODE_LIMIT
        && g.nodes().all(|(id, _)| {
            g.tensor_size(id)
                .is_ok_and(|s| s.elements <= EVERY_NODE_ELEMENTS)
        })
}

/// The output sets to request: the marked outputs (the last node if none is marked), and every
/// node when the graph is small.
fn output_sets(g: &Graph) -> Vec<Vec<NodeId>> {
    let mut sets = match (g.outputs(), g.nodes().last()) {
        ([], Some((last, _))) => vec![vec![last]],
        ([], None) => vec![],
        (marked, _) => vec![marked.to_vec()],
    };
    if small(g) {
        sets.push(g.nodes().map(|(id, _)| id).collect());
    }
    sets
}

/// Deterministic values for the placeholders (see jit_common), or `None` when one is too
/// large to make.
fn inputs(g: &Graph, placeholders: &[NodeId]) -> Option<Vec<HostArray>> {
    for p in placeholders {
        let shape = g.shape_of(&g.node(*p).axes).ok()?;
        weft::ir::size::element_count(&shape).filter(|&n| n <= INPUT_LIMIT)?;
    }
    Some(jit_common::random_inputs(g, placeholders, 5))
}

/// Compiles `outputs` of `g` on `backend` without running it.
fn compile(g: &Graph, outputs: &[NodeId], backend: Backend) -> Result<(), Error> {
    let t = Transformer::new(g.clone(), backend)?;
    t.computation(outputs, &g.placeholders()).map(|_| ())
}

/// Runs `g` on every backend and output set, each called twice (so assigned state is compared
/// too). `Err` on a mismatch with the interpreter (weft_oracle's oracle) or on a JIT
/// refusing what the interpreter runs; otherwise the refusals' texts, for the caller's
/// expectations. Placeholders too large to feed are compiled only.
fn check_graph(name: &str, g: &Graph) -> Result<Vec<String>, String> {
    check_graph_digest(name, g, &mut Digest::default())
}

/// What a reproducer's runs gave, for its pinned outcome (`tests/findings/EXPECTED`).
#[derive(Default)]
struct Digest {
    /// Output sets the interpreter computed (their results and state folded into `bits`).
    computed: usize,
    /// Output sets compiled only (inputs too large to make).
    compiled_only: usize,
    /// Of the interpreter's base results and state, every array's `bits_digest`, chained,
    /// every NaN as one (see [`nan_blind_digest`]).
    bits: u64,
}

/// `data`'s `bits_digest` with every NaN replaced by one: which NaN an operation on NaNs
/// gives is no part of a result — x86 returns its first operand's, and the compiler may swap
/// an addition's operands (LLVM does not keep NaN payloads), so the interpreter built with
/// another code-unit split summed a gradient of NaNs to NaNs of other signs.
fn nan_blind_digest(data: &ArrayData) -> u64 {
    match data {
        ArrayData::F32(v) if v.iter().any(|x| x.is_nan()) => {
            let canonical = v.iter().map(|&x| if x.is_nan() { f32::NAN } else { x });
            ArrayData::F32(canonical.collect()).bits_digest()
        }
        ArrayData::F64(v) if v.iter().any(|x| x.is_nan()) => {
            let canonical = v.iter().map(|&x| if x.is_nan() { f64::NAN } else { x });
            ArrayData::F64(canonical.collect()).bits_digest()
        }
        _ => data.bits_digest(),
    }
}

/// [`check_graph`], recording what the interpreter computed in `digest`.
fn check_graph_digest(name: &str, g: &Graph, digest: &mut Digest) -> Result<Vec<String>, String> {
    let mut errors = Vec::new();
    let ps = g.placeholders();
    let tol = Tolerance::for_graph(g);
    for outputs in output_sets(g) {
        let Some(inputs) = inputs(g, &ps) else {
            digest.compiled_only += 1;
            for backend in [Backend::Interpreter, Backend::Jit, Backend::JitUnfused] {
                if let Err(e) = compile(g, &outputs, backend) {
                    errors.push(format!("{backend:?}: {e}"));
                }
            }
            continue;
        };
        let refs = jit_common::references(g, &outputs, &ps, &inputs, 2, &tol);
        match &refs {
            Err(e) => errors.push(format!("Interpreter: {e}")),
            Ok(refs) => {
                digest.computed += 1;
                let (calls, state) = &refs[0];
                for a in calls.iter().flatten().chain(state) {
                    digest.bits = digest.bits.rotate_left(7) ^ nan_blind_digest(a.data());
                }
            }
        }
        let case = weft::testing::Case {
            graph: g,
            placeholders: &ps,
            inputs: &inputs,
            calls: 2,
            tol: &tol,
        };
        for backend in [Backend::Jit, Backend::JitUnfused] {
            match (
                jit_common::run(g, &outputs, &ps, &inputs, 2, backend),
                &refs,
            ) {
                (Ok(got), Ok(refs)) => case
                    .check(&|g| Transformer::new(g, backend), &outputs, &got, refs)
                    .map_err(|m| format!("{name} on {backend:?}: {m}"))?,
                (Err(e), Ok(_)) => {
                    return Err(format!(
                        "{name}: {backend:?} refuses what the interpreter runs: {e}"
                    ))
                }
                (Err(e), Err(_)) => errors.push(format!("{backend:?}: {e}")),
                (Ok(_), Err(_)) => {}
            }
        }
    }
    Ok(errors)
}

/// [`check_graph`] on `tests/findings/NAME.weft`, failing the test on `Err`.
fn check(name: &str) -> Vec<String> {
    check_graph(name, &load(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// The pinned outcome of a reproducer (one line of `tests/findings/EXPECTED`): `parse error:
/// MESSAGE`; or each distinct refusal (`Backend: message`, first lines, sorted) joined by ` | `
/// — `refused: …` when nothing was computed —, then `computed N (digest D)`: the output sets
/// the interpreter computed and the digest of its values (every JIT agreed with them, by the
/// oracle), and `compiled only N` for sets whose inputs are too large to make.
fn outcome(name: &str, text: &str) -> Result<String, String> {
    let g = match weft::ir::text::parse(text, name) {
        Ok(g) => bind_unbound(g),
        Err(e) => return Ok(format!("parse error: {}", first_line(&e.to_string()))),
    };
    let mut digest = Digest::default();
    let mut errors: Vec<String> = check_graph_digest(name, &g, &mut digest)?
        .iter()
        .map(|e| first_line(e))
        .collect();
    errors.sort();
    errors.dedup();
    let mut parts = Vec::new();
    if !errors.is_empty() {
        parts.push(format!("refused: {}", errors.join(" | ")));
    }
    if digest.computed > 0 {
        parts.push(format!(
            "computed {} (digest {:016x})",
            digest.computed, digest.bits
        ));
    }
    if digest.compiled_only > 0 {
        parts.push(format!("compiled only {}", digest.compiled_only));
    }
    Ok(parts.join("; "))
}

/// The first line of `s` with every number in it blurred to `#`: the memory budget is the
/// machine's memory by default, and the bytes a plan needs move whenever storage planning
/// improves — a pin keeps who refused and why, not the planner's arithmetic.
fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    let mut out = String::with_capacity(line.len());
    let mut in_number = false;
    for c in line.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// `tests/findings/EXPECTED`: each reproducer's pinned outcome, by file name.
fn pinned() -> std::collections::BTreeMap<String, String> {
    let text = std::fs::read_to_string(findings_dir().join("EXPECTED")).expect("EXPECTED");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (name, outcome) = l.split_once('\t').expect("NAME<TAB>OUTCOME");
            (name.to_string(), outcome.to_string())
        })
        .collect()
}

/// Every reproducer ends in a correct result or a typed error — never a panic, an abort or a
/// hang — and in the outcome pinned for it in `tests/findings/EXPECTED` (a new reproducer
/// without a line there fails: `WEFT_FINDINGS_PIN=1` prints every file's outcome as a line of
/// that file, to review and paste).
#[test]
fn every_finding_ends_in_a_correct_result_or_a_typed_error() {
    let pins = pinned();
    let print_pins = std::env::var_os("WEFT_FINDINGS_PIN").is_some_and(|v| v == "1");
    let mut files: Vec<String> = std::fs::read_dir(findings_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".weft"))
        .filter(|n| std::env::var("WEFT_FINDINGS").map_or(true, |f| n.contains(&f)))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "tests/findings/ holds no reproducers");
    let mut failures = Vec::new();
    if std::env::var_os("WEFT_FINDINGS").is_none() {
        for name in pins.keys().filter(|n| !files.contains(n)) {
            failures.push(format!(
                "EXPECTED pins {name}, which is not in tests/findings/"
            ));
        }
    }
    for name in files {
        let (tx, rx) = mpsc::channel();
        let n = name.clone();
        std::thread::Builder::new()
            .name(format!("finding {n}"))
            .spawn(move || {
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    let text = std::fs::read_to_string(findings_dir().join(&n)).unwrap();
                    outcome(&n, &text)
                }))
                .unwrap_or_else(|_| Err("panicked".into()));
                let _ = tx.send(outcome);
            })
            .unwrap();
        match rx.recv_timeout(TIME_LIMIT) {
            Ok(Ok(got)) if print_pins => println!("{name}\t{got}"),
            Ok(Ok(got)) => match pins.get(&name) {
                Some(want) if *want == got => {}
                Some(want) => failures.push(format!("{name}: pinned `{want}`, got `{got}`")),
                None => failures.push(format!("{name}: no outcome pinned in EXPECTED: `{got}`")),
            },
            Ok(Err(e)) => failures.push(format!("{name}: {e}")),
            // The thread is left running; the test fails and the process ends with it.
            Err(_) => failures.push(format!("{name}: no result in {TIME_LIMIT:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every backend refused (with a typed error containing each of `needles`) or fed nothing.
fn check_refused(name: &str, needles: &[&str]) {
    let errors = check(name);
    assert!(!errors.is_empty(), "{name}: nothing was refused");
    for e in &errors {
        for n in needles {
            assert!(e.contains(n), "{name}: `{e}` does not mention `{n}`");
        }
    }
}

/// No backend refused.
fn check_ok(name: &str) {
    let errors = check(name);
    assert!(errors.is_empty(), "{name}: {errors:#?}");
}

/// A reproducer refused on every backend because a tensor is too large to address.
macro_rules! too_large {
    ($($test:ident: $file:literal names [$($needle:literal),*];)*) => {$(
        #[test]
        fn $test() {
            check_refused($file, &["is larger than 9223372036854775807 bytes" $(, $needle)*]);
        }
    )*};
}

too_large! {
    lower_148_dot_space_over_i64: "panic_compiler_lower_148_mul_overflow.weft" names ["`t3`", "(A0^-1*, A0)"];
    layout_113_elements_times_dtype: "panic_compiler_passes_layout_113.weft" names ["`w`", "(I, O)", "f32"];
    layout_115_elements_overflow: "panic_compiler_passes_layout_115_mul_overflow.weft" names ["`t1`", "(A0, A1, A1*)"];
    layout_122_bytes_overflow: "panic_compiler_passes_layout_122.weft" names ["`t1`", "(W**)", "f64"];
    simplify_309_expand_dims_of_constant: "panic_compiler_passes_simplify_309_mul_overflow.weft" names ["(N, B, "];
    views_172_flatten_of_huge: "panic_compiler_passes_views_172.weft" names ["`t1`"];
    views_450_strided_slice_of_huge: "panic_compiler_passes_views_450.weft" names ["`t2`", "(A3)"];
    views_452_pad_past_i64: "panic_compiler_passes_views_452.weft" names ["pad(9223372036854775808,1)"];
    views_475_concat_of_huge: "panic_compiler_passes_views_475.weft" names ["`t1`", "(B**, B)"];
    views_485_reduce_of_huge: "panic_compiler_passes_views_485.weft" names ["`t1`", "(A0*, A1**)"];
    axis_150_flatten_of_huge: "panic_ir_axis_150.weft" names ["`t1`"];
    axis_168_reversed_slice_of_2e63: "panic_ir_axis_168.weft" names ["`x`", "(H, W)"];
    build_812_index_on_2e63: "panic_ir_graph_build_812.weft" names ["(axis)", "i32"];
    host_125_expand_dims_to_2e64: "panic_ir_host_125_capacity_overflow.weft" names ["`t2`", "(A1^-1*)"];
    state_94_expand_dims_of_constant: "panic_runtime_state_94_mul_overflow.weft" names ["(%3, B)", "i64"];
    constant_sum_is_not_folded_over_2e64: "ovf_constant_sum_oom.weft" names ["`c`", "(A, B)"];
    interp_output_does_not_wrap_to_empty: "interp_wrapped_empty_output.weft" names ["`c`", "(A, B)"];
    interp_broadcast_to_2e63: "interp_capacity_overflow_panic.weft" names ["`b`", "(N)"];
}

#[test]
fn fusion_348_ambiguous_dot_is_a_parse_error_naming_the_axes() {
    // dot(%1, %1) over [A1^-1*, A0, A1]: A1 could pair with A1 or with A1^-1* (docs/axes.md).
    let name = "panic_compiler_passes_fusion_348.weft";
    let text = std::fs::read_to_string(findings_dir().join(name)).unwrap();
    let e = weft::ir::text::parse(&text, name).unwrap_err().to_string();
    assert!(e.contains(":5:") && e.contains("ambiguous"), "{e}");
    assert!(e.contains("`A1`") && e.contains("`A1^-1*`"), "{e}");
}

#[test]
fn storage_163_pad_length_overflow_names_the_axis() {
    check_refused(
        "panic_compiler_passes_storage_163.weft",
        &["axis `A2*+pad(18446744073709551615,1)`", "overflows"],
    );
}

#[test]
fn views_598_slice_step_of_i64_min_runs() {
    // One index taken with step -2^63: a valid slice, computed alike everywhere.
    check_ok("panic_compiler_passes_views_598.weft");
}

#[test]
fn slow_compile_scalar_broadcast_is_not_materialised() {
    // The 2^31-element broadcast of a scalar constant is dead here; requested too, it must
    // not be materialised (it was: a slow compile filling a 2^31-element constant) but
    // computed by the kernel: on both JIT modes no constant of the compiled plan holds more
    // than the folding budget's 2^16 values.
    check_ok("slow_compile_broadcast_const_2e31.weft");
    let g = load("slow_compile_broadcast_const_2e31.weft");
    let last = g.nodes().last().unwrap().0;
    for options in [JitOptions::default(), JitOptions::unfused()] {
        let exe = weft::compiler::JitExecutable::new(
            std::sync::Arc::new(g.clone()),
            &[last],
            &[],
            &JitOptions {
                max_bytes: None,
                ..options
            },
        )
        .unwrap();
        let simplified = &exe.compiled_plan().simplified.graph;
        for (id, node) in simplified.nodes() {
            if let Op::Tensor {
                init: Some(weft::TensorInit::Data(data)),
                ..
            } = &node.op
            {
                assert!(data.len() <= 1 << 16, "{id:?} holds {} values", data.len());
            }
        }
    }
}

#[test]
fn abort_alloc_broadcast_to_2e40_is_an_allocation_error() {
    // 8 TiB of f64: compiles without materialising, then, past the machine's memory (the
    // default budget), refuses it naming the tensor; with no budget, refuses to allocate it.
    let name = "abort_alloc_broadcast_scalar_const_2e40.weft";
    let errors = check(name);
    assert_eq!(
        errors.len(),
        3 * output_sets(&load(name)).len(),
        "{errors:#?}"
    );
    for e in &errors {
        let refused = e.contains("`%6`: cannot allocate")
            || (e.contains("more than the memory budget") && e.contains("`%6`"));
        assert!(refused, "{e}");
    }
}

#[test]
fn memory_budget_refuses_before_allocating_and_names_peak_and_budget() {
    let g = load("abort_alloc_broadcast_scalar_const_2e40.weft");
    let options = JitOptions {
        max_bytes: Some(1 << 30),
        ..JitOptions::default()
    };
    let t = Transformer::with_jit_options(g.clone(), options).unwrap();
    let e = t.computation(g.outputs(), &[]).unwrap_err().to_string();
    assert!(
        e.contains("more than the memory budget of 1073741824 bytes"),
        "{e}"
    );
    assert!(
        e.contains(&format!("needs {} bytes", 2 * (8u64 << 40))),
        "{e}"
    );
}

#[test]
fn memory_budget_admits_what_fits() {
    let mut g = Graph::new();
    let n = g.axis("N", 1000).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let y = g.exp(x).unwrap();
    let run = |budget: u64| -> Result<Vec<HostArray>, Error> {
        let options = JitOptions {
            max_bytes: Some(budget),
            ..JitOptions::default()
        };
        let t = Transformer::with_jit_options(g.clone(), options)?;
        let c = t.computation(&[y], &[x])?;
        c.call(&inputs(&g, &[x]).unwrap())
    };
    // x and y in the workspace (4000 bytes each, 64-aligned: 4032) plus x's and y's host
    // arrays.
    assert!(run(4032 * 2 + 8000).is_ok());
    let e = run(4032 * 2 + 7999).unwrap_err();
    assert!(
        matches!(
            e,
            Error::Compile(weft::compiler::JitError::Plan(
                weft::RunError::MemoryBudget {
                    needed: 16064,
                    budget: 16063,
                    ..
                }
            ))
        ),
        "{e}"
    );
}

#[test]
fn runs_past_the_machines_memory_are_refused_not_killed() {
    // x and exp(x), each 0.3 of the machine's memory: every allocation alone the system would
    // grant, together not — `PROPTEST_CASES=3000 cargo test --release --test jit_props --
    // --ignored` drew such graphs and the system killed the process (as it did `weft run` of
    // a 60000² exp). With the machine's memory as the default budget, every backend refuses
    // at compile time, before anything is allocated.
    let Some(memory) = weft::runtime::physical_memory_bytes() else {
        return;
    };
    let mut g = Graph::new();
    let n = g.axis("N", (memory / 4 * 3 / 10) as usize).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let y = g.exp(x).unwrap();
    for backend in [Backend::Interpreter, Backend::Jit, Backend::JitUnfused] {
        let t = Transformer::new(g.clone(), backend).unwrap();
        let e = t.computation(&[y], &[x]).unwrap_err().to_string();
        assert!(
            e.contains("more than the memory budget"),
            "{backend:?}: {e}"
        );
    }
}

#[test]
fn weft_max_bytes_sets_the_default_budget() {
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/findings/abort_alloc_broadcast_scalar_const_2e40.weft"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
        .args([
            "run",
            file,
            "--backend",
            "jit",
            "--bind",
            "é=3",
            "--bind",
            "W=3",
        ])
        .env("WEFT_MAX_BYTES", "1000000")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("memory budget of 1000000 bytes"),
        "{stderr}"
    );
}

#[test]
fn folding_keeps_to_its_budget() {
    use weft::compiler::passes::simplify::{interpreter_evaluator, simplify, SimplifyOptions};
    let mut g = Graph::new();
    let a = g.axis("A", 1 << 9).unwrap();
    let b = g.axis("B", 1 << 9).unwrap();
    // 2^18 elements: above the 2^16 budget, so kept as broadcast(scalar), and its sum is not
    // evaluated at compile time: it is the repeated value times the length (weft_ir's
    // `Graph::repeated_reduction`), one multiply of two scalars.
    let c = g
        .constant(
            Some("c"),
            &[a, b],
            DType::F32,
            TensorInit::Fill(Scalar::Float(1.0)),
        )
        .unwrap();
    let s = g.reduce(ReduceOp::Sum, c, &[a, b], None).unwrap();
    g.mark_output(s).unwrap();
    let out = simplify(
        &g,
        &SimplifyOptions::default(),
        Some(&interpreter_evaluator),
    )
    .unwrap();
    assert_eq!(out.stats.folded, 0);
    let sg = &out.graph;
    let Op::Binary(weft::BinaryOp::Multiply, value, len) = sg.node(out.map.get(s).unwrap()).op
    else {
        panic!("{}", weft::ir::text::print(sg))
    };
    assert!(sg.node(value).axes.is_empty() && sg.node(len).axes.is_empty());
    assert!(
        sg.nodes().all(|(_, n)| n.axes.is_empty()),
        "nothing of 2^18 elements is left"
    );
    // The result is still right on every backend.
    for backend in [Backend::Interpreter, Backend::Jit, Backend::JitUnfused] {
        let t = Transformer::new(g.clone(), backend).unwrap();
        let v = t.computation(&[s], &[]).unwrap().call(NO_INPUTS).unwrap();
        assert_eq!(v[0].to_vec::<f32>().unwrap(), vec![(1u32 << 18) as f32]);
    }
}

/// Runs `text` as a reproducer (every node, and the last node, requested on every backend).
fn check_text(text: &str) -> Vec<String> {
    let g = weft::ir::text::parse(text, "inline").expect("parses");
    check_graph("inline", &g).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn many_huge_intermediates_do_not_overflow_the_buffer_plan() {
    // Six stored tensors of 2^62 bytes each: each addressable, together past usize. The plan's
    // byte totals saturate; running refuses to allocate, naming a tensor.
    let errors = check_text(
        "axis N = 1152921504606846976\n\
         constant c: f32[] = 1.0\n\
         b = broadcast(c, [N])\n\
         e1 = exp(b)\ne2 = exp(e1)\ne3 = exp(e2)\ne4 = exp(e3)\ne5 = exp(e4)\n",
    );
    assert!(!errors.is_empty());
    for e in &errors {
        // Past the default budget each backend names the largest tensor it would hold.
        let refused = e.contains("cannot allocate")
            || (e.contains("more than the memory budget")
                && (e.contains("the largest, `b`") || e.contains("holds `e5`")));
        assert!(refused, "{e}");
    }
}

#[test]
fn a_dot_whose_iteration_space_passes_i64_is_refused() {
    let errors = check_text(
        "axis M = 1048576\naxis N = 1048576\naxis K = 16777216\n\
         placeholder x: f32[M, K*]\nplaceholder y: f32[K, N]\n\
         d = dot(x, y)\n",
    );
    assert_eq!(errors.len(), 3, "{errors:#?}");
    for e in &errors {
        assert!(e.contains("dot `d`") || e.contains("dot d"), "{e}");
        assert!(e.contains("iteration space"), "{e}");
    }
}

#[test]
fn cli_refuses_inputs_too_large_to_draw() {
    // `weft run` compiles, then draws placeholder values: a size past the addressable is a
    // typed error, one past the memory budget (by default the machine's) is refused before
    // anything is drawn, and with no budget to stop it the draw itself is refused, naming `x`.
    let dir = std::env::temp_dir().join(format!("weft-findings-sizes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let unlimited = u64::MAX.to_string();
    for (len, budget, needle) in [
        ("9223372036854775807", None, "is larger than"),
        ("1099511627776", None, "more than the memory budget"),
        (
            "1099511627776",
            Some(unlimited.as_str()),
            "`x`: cannot allocate 4398046511104 bytes",
        ),
    ] {
        let file = dir.join(format!("big_{len}.weft"));
        let text = format!("axis N = {len}\nplaceholder x: f32[N]\ny = exp(x)\noutput y\n");
        std::fs::write(&file, text).unwrap();
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_weft"));
        command.arg("run").arg(&file).env_remove("WEFT_MAX_BYTES");
        if let Some(b) = budget {
            command.env("WEFT_MAX_BYTES", b);
        }
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains(needle), "{stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn folding_a_dot_counts_its_contracted_lengths() {
    use weft::compiler::passes::simplify::{interpreter_evaluator, simplify, SimplifyOptions};
    // Operands and result within the 2^16 budget; the iteration space (m·n·k) decides.
    let folded = |m: usize, k: usize, n: usize| {
        let mut g = Graph::new();
        let (ma, ka, na) = (
            g.axis("M", m).unwrap(),
            g.axis("K", k).unwrap(),
            g.axis("N", n).unwrap(),
        );
        let data = |len: usize| TensorInit::data(ArrayData::F32(vec![0.5; len]));
        let x = g
            .constant(
                None,
                &[ma, Axis::new(ka.id).dual()],
                DType::F32,
                data(m * k),
            )
            .unwrap();
        let y = g
            .constant(None, &[ka, na], DType::F32, data(k * n))
            .unwrap();
        let d = g.dot(x, y).unwrap();
        g.mark_output(d).unwrap();
        let opts = SimplifyOptions::default();
        simplify(&g, &opts, Some(&interpreter_evaluator))
            .unwrap()
            .stats
            .folded
    };
    assert_eq!(folded(8, 8, 8), 1);
    assert_eq!(folded(200, 300, 200), 0);
}

/// What `tests/findings/NAME.weft` gives on `backend`: its outputs on `inputs` (one per
/// placeholder), or the refusal's text.
fn run_on(name: &str, backend: Backend, inputs: &[HostArray]) -> Result<Vec<HostArray>, String> {
    let g = load(name);
    let (outputs, ps) = (g.outputs().to_vec(), g.placeholders());
    let t = Transformer::new(g, backend).map_err(|e| e.to_string())?;
    let c = t.computation(&outputs, &ps).map_err(|e| e.to_string())?;
    let refs: Vec<&HostArray> = inputs.iter().collect();
    c.call(&refs).map_err(|e| e.to_string())
}

/// `NAME`'s outcome on every backend, each checked by `expect`. (That none takes long is
/// `every_finding_ends_in_a_correct_result_or_a_typed_error`'s watchdog: no timed assertion.)
fn on_every_backend(
    name: &str,
    inputs: &[HostArray],
    expect: impl Fn(Result<Vec<HostArray>, String>),
) {
    for backend in [Backend::Interpreter, Backend::Jit, Backend::JitUnfused] {
        expect(run_on(name, backend, inputs));
    }
}

/// Refused over the memory budget, naming `tensor`, on every backend, before any work that
/// grows with the batch's length (reduce_in_memory's group search walked 2^40 row counts).
fn refused_over_budget(name: &str, tensor: &str) {
    on_every_backend(name, &[], |got| {
        let e = got.expect_err("refused");
        assert!(
            e.contains("memory budget") && e.contains(tensor),
            "{name}: {e}"
        );
    });
}

#[test]
fn sum_over_the_middle_axis_of_a_2e40_batch_is_refused_at_once() {
    refused_over_budget("slow_refusal_sum_over_middle_axis_2e40.weft", "`t`");
}

#[test]
fn dense_layer_with_a_2e32_batch_is_refused_at_once() {
    refused_over_budget("slow_refusal_dot_batch_2e32.weft", "`x`");
}

#[test]
fn empty_tensor_whose_other_axes_pass_2e64_has_zero_strides() {
    // Debug builds multiplied the strides of (B = 2^63 - 1) x (Q = 18) and panicked.
    on_every_backend("debug_overflow_strides_of_empty_tensor.weft", &[], |got| {
        let v = got.expect("an empty result");
        assert_eq!(v[0].shape(), &[0, (1 << 63) - 1, 18]);
        assert_eq!(v[0].len(), 0);
    });
}

/// The one f32 output of a reproducer.
fn scalar_f32(got: Result<Vec<HostArray>, String>) -> f32 {
    let v = got.expect("computed");
    v[0].to_vec::<f32>().unwrap()[0]
}

#[test]
fn sum_of_a_2e40_broadcast_constant_is_the_value_times_the_length() {
    on_every_backend("sum_of_broadcast_constant_2e40.weft", &[], |got| {
        assert_eq!(scalar_f32(got), (1u64 << 40) as f32);
    });
}

#[test]
fn sum_of_a_2e40_broadcast_placeholder_is_the_value_times_the_length() {
    // 0.1 is not exact in binary, so 2^40 sequential f64 additions of it would drift; the
    // rule's one multiply by a power of two is exact.
    let x = HostArray::from_vec(Axes::default(), vec![], vec![0.1f32]).unwrap();
    let expected = (0.1f32 as f64 * (1u64 << 40) as f64) as f32;
    on_every_backend("sum_of_broadcast_placeholder_2e40.weft", &[x], |got| {
        assert_eq!(scalar_f32(got), expected);
    });
}
