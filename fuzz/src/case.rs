//! One fuzz case: text → parse → verify → (when small) compile fused, unfused and forced
//! parallel → run twice on random inputs with special values → compare with the interpreter by
//! `weft_ir::testing`'s oracle.
//!
//! Assumes nothing about the text. Guarantees: a graph whose tensors exceed [`MAX_ELEMENTS`] is
//! parsed and verified but neither compiled nor run (materialising huge constants aborts the
//! process, which no in-process fuzzer survives); every other verified graph the interpreter
//! runs is compiled and run on each JIT configuration. Panics are not caught here (the engine
//! does that), so a case is a plain function of its text and seed.

use weft::prelude::*;
use weft::testing::{references, run_on, Case};
use weft_compiler::JitOptions;
use weft_ir::testing::{observed_outputs, random_inputs, small_enough, Tolerance};

/// Calls per run: `call`, then `call_into` garbage-filled arrays over inputs at odd
/// alignments (`weft::testing::call_alternately`), so state assigned by the first is read by
/// the second.
const CALLS: usize = 2;

/// No tensor of a graph that is compiled and run has more elements than this.
pub const MAX_ELEMENTS: usize = 1 << 14;
/// Nor do all its tensors together.
pub const MAX_TOTAL_ELEMENTS: usize = 1 << 18;

/// What became of a case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The text did not parse (an error with a position, as it should be).
    ParseError,
    /// It parsed but did not verify (e.g. an unbound axis).
    VerifyError,
    /// It verified but is too large to compile and run here.
    TooLarge,
    /// The interpreter refused to run it (nothing to compare with).
    InterpreterRefused,
    /// Compiled and run on every JIT configuration, matching the interpreter.
    Passed,
    /// A JIT configuration refused a graph the interpreter runs.
    Refused(String),
    /// A JIT configuration's results differ from the interpreter's.
    Mismatch(String),
}

impl Outcome {
    /// Whether the case reached compile and run.
    pub fn compiled(&self) -> bool {
        matches!(
            self,
            Outcome::Passed | Outcome::Refused(_) | Outcome::Mismatch(_)
        )
    }
}

/// The JIT configurations every case runs on: fused, unfused, and fused with parallel loops and
/// split reductions forced (`JitOptions::forced_parallel`: small graphs never reach the default
/// thresholds).
pub fn configurations() -> [(&'static str, JitOptions); 3] {
    [
        ("fused", JitOptions::default()),
        ("unfused", JitOptions::unfused()),
        ("forced-parallel", JitOptions::forced_parallel()),
    ]
}

/// Runs the case `text` with `seed` (inputs and observed outputs).
pub fn run_text(text: &str, seed: u64) -> Outcome {
    let Ok(g) = weft_ir::text::parse(text, "fuzz.weft") else {
        return Outcome::ParseError;
    };
    run_graph(&g, seed)
}

/// Runs the case of graph `g` with `seed`.
pub fn run_graph(g: &Graph, seed: u64) -> Outcome {
    if g.verify().is_err() {
        return Outcome::VerifyError;
    }
    if !small_enough(g, MAX_ELEMENTS, MAX_TOTAL_ELEMENTS) {
        return Outcome::TooLarge;
    }
    let outputs = observed_outputs(g, seed);
    if outputs.is_empty() {
        return Outcome::Passed;
    }
    let ps = g.placeholders();
    let inputs = random_inputs(g, &ps, seed, true);
    let tol = Tolerance::for_graph(g);
    let Ok(refs) = references(g, &outputs, &ps, &inputs, CALLS, &tol) else {
        return Outcome::InterpreterRefused;
    };
    let case = Case {
        graph: g,
        placeholders: &ps,
        inputs: &inputs,
        calls: CALLS,
        tol: &tol,
    };
    for (name, options) in configurations() {
        let make = |g| Transformer::with_jit_options(g, options.clone());
        let got = match make(g.clone()).and_then(|t| run_on(&t, &outputs, &ps, &inputs, CALLS)) {
            Ok(r) => r,
            Err(e) => return Outcome::Refused(format!("{name}: {e}")),
        };
        if let Err(m) = case.check(&make, &outputs, &got, &refs) {
            return Outcome::Mismatch(format!("{name}: {m}"));
        }
    }
    Outcome::Passed
}

/// Writes the case `text` with `seed` as files `weft run` reproduces on its own: `case.weft` (the
/// graph with every observed output marked) and one `NAME.npy` per placeholder (the inputs of the
/// case's calls). Returns the `weft run` arguments naming the inputs.
pub fn dump_case(text: &str, seed: u64, dir: &std::path::Path) -> Result<String, String> {
    let mut g = weft_ir::text::parse(text, "fuzz.weft").map_err(|e| e.to_string())?;
    g.verify().map_err(|e| e.to_string())?;
    for id in observed_outputs(&g, seed) {
        g.mark_output(id).map_err(|e| e.to_string())?;
    }
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let weft = dir.join("case.weft");
    std::fs::write(&weft, weft_ir::text::print(&g)).map_err(|e| e.to_string())?;
    let ps = g.placeholders();
    let mut args = format!("{}", weft.display());
    for (id, array) in ps.iter().zip(random_inputs(&g, &ps, seed, true)) {
        let name = g
            .node(*id)
            .name
            .clone()
            .unwrap_or_else(|| format!("{id:?}"));
        let path = dir.join(format!("{name}.npy"));
        array.write_npy(&path).map_err(|e| e.to_string())?;
        args += &format!(" --input {name}={}", path.display());
    }
    Ok(args)
}
