//! One fuzz case: text → parse → bind unbound axes → verify → (when small) compile fused,
//! unfused and forced parallel → run twice on random inputs with special values → compare with
//! the interpreter by `weft_oracle`'s oracle; (when too large to run) compile only.
//!
//! Assumes nothing about the text. Guarantees:
//! - declared axes the text leaves unbound get lengths drawn from the case seed and their
//!   names ([`binding`]): 0 to 5 or 7, so a pairing by role matches or mismatches; the
//!   oracle runs the bound graph, and the JIT binds them at call time from its inputs where it
//!   can (every such axis an axis of a placeholder, no state over one), else runs the bound
//!   graph too;
//! - a graph whose tensors exceed [`MAX_ELEMENTS`] is not run (materialising huge values can
//!   abort a process) but compiled on each JIT configuration under a memory budget of
//!   [`COMPILE_ONLY_BUDGET`]: it must compile or be refused for its size ([`size_refusal`]);
//! - every other verified graph the interpreter runs is compiled and run on each JIT
//!   configuration.
//!
//! Panics are not caught here (the engine does that), so a case is a plain function of its
//! text and seed.

use std::borrow::Cow;
use std::sync::Arc;
use weft::prelude::*;
use weft::testing::{references, run_on, Case};
use weft::{GraphError, Op, RunError};
use weft_compiler::{JitError, JitExecutable, JitOptions, PassError};
use weft_ir::{AxisDef, AxisId};
use weft_oracle::{
    fill_garbage, observed_outputs, random_inputs, small_enough, state_nodes, Run, SplitMix,
    Tolerance,
};

/// Calls per run: `call`, then `call_into` garbage-filled arrays over inputs at odd
/// alignments (`weft::testing::call_alternately`), so state assigned by the first is read by
/// the second.
const CALLS: usize = 2;

/// No tensor of a graph that is compiled and run has more elements than this.
pub const MAX_ELEMENTS: usize = 1 << 14;
/// Nor do all its tensors together.
pub const MAX_TOTAL_ELEMENTS: usize = 1 << 18;
/// The memory budget (`JitOptions::max_bytes`) of a graph too large to run, compiled only: a
/// compile that would need more for a run is refused with the budget's error.
pub const COMPILE_ONLY_BUDGET: u64 = 1 << 30;

/// What became of a case.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The text did not parse (an error with a position, as it should be).
    ParseError,
    /// It parsed but did not verify (e.g. an unbound axis).
    VerifyError,
    /// It verified but is too large to run here: compiled only, every JIT configuration
    /// compiling it or refusing it for its size.
    TooLarge,
    /// The interpreter refused to run it (nothing to compare with).
    InterpreterRefused,
    /// Compiled and run on every JIT configuration, matching the interpreter.
    Passed,
    /// A JIT configuration refused a graph the interpreter runs (or, too large to run, refused
    /// it for another reason than its size).
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
/// thresholds). Unfused runs with constant folding off, so its kernels compute constant-only
/// subgraphs instead of taking the interpreter's folded values (docs/testing.md).
pub fn configurations() -> [(&'static str, JitOptions); 3] {
    [
        ("fused", JitOptions::default()),
        (
            "unfused",
            JitOptions {
                fold_constants: false,
                ..JitOptions::unfused()
            },
        ),
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
    let bound = match binding(g, seed) {
        Some(lengths) => Cow::Owned(bound_graph(g, &lengths)),
        None => Cow::Borrowed(g),
    };
    if bound.verify().is_err() {
        return Outcome::VerifyError;
    }
    if !small_enough(&bound, MAX_ELEMENTS, MAX_TOTAL_ELEMENTS) {
        return compile_only(&bound, seed);
    }
    // The JIT binds the lengths at call time where it can.
    let call_time = bindable_at_call_time(g).then_some(g);
    run_bound(&bound, call_time, seed)
}

/// Runs the case of the bound graph `g` with `seed`; the JIT's first run is on `call_time`
/// when given (`g` before its lengths were bound, bound at each call from the inputs).
fn run_bound(g: &Graph, call_time: Option<&Graph>, seed: u64) -> Outcome {
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
        let options = within_case_budget(options);
        let make = |g| Transformer::with_jit_options(g, options.clone());
        let run = if call_time.is_some() {
            run_at_call_time
        } else {
            run_on
        };
        let first = make(call_time.unwrap_or(g).clone());
        let got = match first.and_then(|t| run(&t, &outputs, &ps, &inputs, CALLS)) {
            Ok(r) => r,
            Err(e) => return Outcome::Refused(format!("{name}: {e}")),
        };
        if let Err(m) = case.check(&make, &outputs, &got, &refs) {
            return Outcome::Mismatch(format!("{name}: {m}"));
        }
    }
    Outcome::Passed
}

/// Runs `outputs` `calls` times on `t`, whose graph has lengths bound at call time, then reads
/// the state: `call`, then `call_into` garbage-filled arrays from `output_arrays_for` (as
/// `weft::testing::run_on`, whose `call_into` arrays need every length bound beforehand).
fn run_at_call_time(
    t: &Transformer,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
) -> weft::Result<Run> {
    let c = t.computation(outputs, ps)?;
    let mut results = Vec::new();
    for k in 0..calls {
        if k % 2 == 0 {
            results.push(c.call(inputs)?);
            continue;
        }
        let mut out = c.output_arrays_for(inputs)?;
        out.iter_mut().for_each(fill_garbage);
        c.call_into(inputs, &mut out)?;
        results.push(out);
    }
    let state = state_nodes(t.graph())
        .iter()
        .map(|id| t.value_of(*id))
        .collect::<weft::Result<Vec<_>>>()?;
    Ok((results, state))
}

/// `options` with a memory budget of at most [`COMPILE_ONLY_BUDGET`]: a case's graph is small,
/// so a JIT plan past it is refused (a finding) before it is allocated and run, never a run of
/// gigabytes that outlasts the watchdog (tests/findings/open/README.md).
fn within_case_budget(options: JitOptions) -> JitOptions {
    JitOptions {
        max_bytes: Some(
            options
                .max_bytes
                .map_or(COMPILE_ONLY_BUDGET, |b| b.min(COMPILE_ONLY_BUDGET)),
        ),
        ..options
    }
}

/// Compiles the observed outputs of `g` (verified, bound, too large to run) on each JIT
/// configuration with the [`COMPILE_ONLY_BUDGET`], without running them: `TooLarge` when each
/// compiles or refuses for the graph's size, else the first other refusal. No state is
/// materialised (the executable is made directly, not through a transformer).
pub fn compile_only(g: &Graph, seed: u64) -> Outcome {
    let outputs = observed_outputs(g, seed);
    let ps = g.placeholders();
    let graph = Arc::new(g.clone());
    for (name, options) in configurations() {
        let options = within_case_budget(options);
        match JitExecutable::new(Arc::clone(&graph), &outputs, &ps, &options) {
            Ok(_) => {}
            Err(e) if size_refusal(&e) => {}
            Err(e) => return Outcome::Refused(format!("{name} (compile only): JIT: {e}")),
        }
    }
    Outcome::TooLarge
}

/// Whether `e` refuses a graph for its size: over the memory budget, an allocation that
/// failed, a tensor too large to address, too many axes or an axis too long.
pub fn size_refusal(e: &JitError) -> bool {
    let graph = |g: &GraphError| {
        matches!(
            g,
            GraphError::TooLarge { .. }
                | GraphError::TooManyAxes { .. }
                | GraphError::AxisTooLong { .. }
        )
    };
    match e {
        JitError::Plan(RunError::MemoryBudget { .. } | RunError::Alloc { .. }) => true,
        JitError::Plan(RunError::Host(weft_ir::HostError::Alloc { .. })) => true,
        JitError::Plan(RunError::Graph(g)) | JitError::Pass(PassError::Graph(g)) => graph(g),
        _ => false,
    }
}

/// Lengths for the declared axes `g` leaves unbound, each drawn from `seed` and the axis's
/// name (so deleting other lines, as minimisation does, keeps it): 0 to 5 or 7, so that a
/// pairing by role with a bound axis sometimes matches, sometimes not. `None` when every axis
/// is bound.
pub fn binding(g: &Graph, seed: u64) -> Option<Vec<(Axis, usize)>> {
    const LENGTHS: [usize; 7] = [0, 1, 2, 3, 4, 5, 7];
    let unbound: Vec<(Axis, &str)> = g
        .axis_table()
        .filter(|(_, d)| matches!(d.def, AxisDef::Base { len: None }))
        .map(|(id, d)| (g.axis_of(id), d.name.as_str()))
        .collect();
    if unbound.is_empty() {
        return None;
    }
    let draw = |name: &str| {
        let h = name.bytes().fold(seed ^ 0x6269_6E64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01B3)
        });
        LENGTHS[SplitMix(h).below(LENGTHS.len())]
    };
    Some(unbound.into_iter().map(|(a, n)| (a, draw(n))).collect())
}

/// `g` with `lengths` bound.
fn bound_graph(g: &Graph, lengths: &[(Axis, usize)]) -> Graph {
    let mut bound = g.clone();
    for (axis, len) in lengths {
        // A declared axis binds; nothing else is listed.
        let _ = bound.bind(*axis, *len);
    }
    bound
}

/// Whether a transformer of `g` binds every unbound axis at call time: each is an axis of a
/// placeholder, and no variable or persistent tensor has one.
fn bindable_at_call_time(g: &Graph) -> bool {
    let ps = g.placeholders();
    let unbound: Vec<AxisId> = g
        .axis_table()
        .filter(|(_, d)| matches!(d.def, AxisDef::Base { len: None }))
        .map(|(id, _)| id)
        .collect();
    let on_placeholder = |id: &AxisId| {
        ps.iter()
            .any(|p| g.node(*p).axes.iter().any(|a| a.id == *id))
    };
    let on_state = g.nodes().any(|(_, n)| {
        let stateful = matches!(
            n.op,
            Op::Tensor {
                kind: TensorKind::Variable | TensorKind::PersistentTensor,
                ..
            }
        );
        stateful && n.axes.iter().any(|a| g.resolve_len(*a).is_err())
    });
    !unbound.is_empty() && unbound.iter().all(on_placeholder) && !on_state
}

/// Writes the case `text` with `seed` as files `weft run` reproduces on its own: `case.weft` (the
/// graph with its unbound axes bound as the case binds them, every observed output marked) and one `NAME.npy` per placeholder (the inputs of the
/// case's calls). Returns the `weft run` arguments naming the inputs.
pub fn dump_case(text: &str, seed: u64, dir: &std::path::Path) -> Result<String, String> {
    let mut g = weft_ir::text::parse(text, "fuzz.weft").map_err(|e| e.to_string())?;
    if let Some(lengths) = binding(&g, seed) {
        g = bound_graph(&g, &lengths);
    }
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
