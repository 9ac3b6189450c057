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
use weft::{Op, Perturbation, TensorKind};
use weft_compiler::JitOptions;
use weft_ir::testing::{
    compare_arrays, compare_runs, compare_runs_or, fill_garbage, observed_outputs, random_inputs,
    state_nodes, Run, Tolerance, PERTURBED_REFERENCES,
};

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
    if !small_enough(g) {
        return Outcome::TooLarge;
    }
    let outputs = observed_outputs(g, seed);
    if outputs.is_empty() {
        return Outcome::Passed;
    }
    let ps = g.placeholders();
    let inputs = random_inputs(g, &ps, seed, true);
    let tol = Tolerance::for_graph(g);
    let Ok(refs) = references(g, &outputs, &ps, &inputs, &tol) else {
        return Outcome::InterpreterRefused;
    };
    for (name, options) in configurations() {
        let got = Transformer::with_jit_options(g.clone(), options.clone())
            .and_then(|t| run_on(&t, &outputs, &ps, &inputs));
        let got = match got {
            Ok(r) => r,
            Err(e) => return Outcome::Refused(format!("{name}: {e}")),
        };
        if let Err(m) = compare_runs(&got, &refs, &tol) {
            let case = Case {
                g,
                ps: &ps,
                inputs: &inputs,
                tol: &tol,
            };
            if let Err(why) = case.explain_by_every_node(options, &outputs, &got) {
                return Outcome::Mismatch(format!("{name}: {m}; {why}"));
            }
        }
    }
    Outcome::Passed
}

/// A case's graph, inputs and tolerance: what judging a run again needs.
struct Case<'a> {
    g: &'a Graph,
    ps: &'a [NodeId],
    inputs: &'a [HostArray],
    tol: &'a Tolerance,
}

impl Case<'_> {
    /// Whether a run `got` of `outputs` that failed `compare_runs` is explained node by node:
    /// the same configuration run again with every node observed gives the same bits for
    /// `outputs`, and there every node matches the interpreter, or — a computed node — matches
    /// it evaluated from the operands' values of that run ([`Case::judge_from_operands`]).
    /// Each perturbed reference is one consistent world, so two near-ties read together can
    /// come out in the backend in a combination no reference has; judged op by op on inputs the
    /// backend really had, a miscompiled op still fails its own check.
    fn explain_by_every_node(
        &self,
        options: JitOptions,
        outputs: &[NodeId],
        got: &Run,
    ) -> Result<(), String> {
        let all: Vec<NodeId> = self.g.nodes().map(|(id, _)| id).collect();
        let t =
            Transformer::with_jit_options(self.g.clone(), options).map_err(|e| e.to_string())?;
        let every = run_on(&t, &all, self.ps, self.inputs).map_err(|e| e.to_string())?;
        for (call, outs) in got.0.iter().enumerate() {
            for (k, x) in outs.iter().enumerate() {
                let j = all
                    .iter()
                    .position(|id| *id == outputs[k])
                    .expect("every node");
                if !same_bits(x, &every.0[call][j]) {
                    return Err(format!(
                        "not explained: with every node observed, call {call} output {k} differs"
                    ));
                }
            }
        }
        let refs =
            references(self.g, &all, self.ps, self.inputs, self.tol).map_err(|e| e.to_string())?;
        compare_runs_or(&every, &refs, self.tol, |call, k, m| {
            self.judge_from_operands(&all, (&every, call, k))
                .map_err(|why| format!("with every node observed, {m}; {why}"))
        })
    }

    /// Judges output `k` of call `call` of the run `got` of `outputs` from the values its
    /// operands took in that run: the interpreter evaluates the node alone (its computed
    /// operands cut to placeholders, `Graph::with_placeholder_for`) on those values, with its
    /// perturbed references. Only for a computed node (not a stored tensor or an assign) whose
    /// every operand is observed, a placeholder or a constant.
    fn judge_from_operands(
        &self,
        outputs: &[NodeId],
        (got, call, k): (&Run, usize, usize),
    ) -> Result<(), String> {
        let node = outputs[k];
        let op = &self.g.node(node).op;
        if matches!(op, Op::Tensor { .. } | Op::Assign { .. }) {
            return Err("a stored tensor or an assign: not judged from operands".into());
        }
        let mut operands = op.inputs();
        operands.sort();
        operands.dedup();
        // Constants evaluate alike in the cut graph; every other operand takes the run's value.
        operands.retain(|x| {
            !matches!(
                self.g.node(*x).op,
                Op::Tensor {
                    kind: TensorKind::Constant,
                    ..
                }
            )
        });
        let mut cut = self.g.clone();
        let mut values = Vec::with_capacity(operands.len());
        for &x in &operands {
            let value = if let Some(j) = self.ps.iter().position(|p| *p == x) {
                self.inputs[j].clone()
            } else if let Some(j) = outputs.iter().position(|o| *o == x) {
                // A variable or persistent tensor cannot be cut: refused here, as not judged.
                cut = cut.with_placeholder_for(x).map_err(|e| e.to_string())?;
                got.0[call][j].clone()
            } else {
                return Err(format!("operand {} not observed", self.g.node_label(x)));
            };
            values.push(value);
        }
        let refs = references(&cut, &[node], &operands, &values, self.tol)
            .map_err(|e| format!("the interpreter refused the node alone: {e}"))?;
        let ys: Vec<&HostArray> = refs.iter().map(|r| &r.0[0][0]).collect();
        compare_arrays(&got.0[call][k], &ys, self.tol)
            .map_err(|m| format!("and from its operands' values in this run: {m}"))
    }
}

/// Whether two arrays hold the same bits (NaN payloads and zero signs included).
fn same_bits(a: &HostArray, b: &HostArray) -> bool {
    let bits = |d: &ArrayData| -> Vec<u64> {
        match d {
            ArrayData::F32(v) => v.iter().map(|x| u64::from(x.to_bits())).collect(),
            ArrayData::F64(v) => v.iter().map(|x| x.to_bits()).collect(),
            ArrayData::I32(v) => v.iter().map(|x| *x as u64).collect(),
            ArrayData::I64(v) => v.iter().map(|x| *x as u64).collect(),
            ArrayData::Bool(v) => v.iter().map(|x| u64::from(*x)).collect(),
        }
    };
    a.axes() == b.axes() && a.dtype() == b.dtype() && bits(a.data()) == bits(b.data())
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

/// Whether every tensor of `g` is small (lengths multiplied with overflow checks).
fn small_enough(g: &Graph) -> bool {
    let mut total = 0usize;
    for (_, n) in g.nodes() {
        let Ok(shape) = g.shape_of(&n.axes) else {
            return false;
        };
        let Some(len) = shape.iter().try_fold(1usize, |a, b| a.checked_mul(*b)) else {
            return false;
        };
        total = total.saturating_add(len);
        if len > MAX_ELEMENTS || total > MAX_TOTAL_ELEMENTS {
            return false;
        }
    }
    true
}

/// Two calls of `outputs` on `t`, then the state.
fn run_on(
    t: &Transformer,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
) -> Result<Run, Error> {
    let c = t.computation(outputs, ps)?;
    // The second call writes into arrays holding garbage: a backend writing outputs in place
    // must write every element.
    let mut into = c.output_arrays()?;
    into.iter_mut().for_each(fill_garbage);
    let calls = vec![c.call(inputs)?, {
        c.call_into(inputs, &mut into)?;
        into
    }];
    let state = state_nodes(t.graph())
        .iter()
        .map(|id| t.value_of(*id))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((calls, state))
}

/// The interpreter's base run and its perturbed runs (every float entering the computation
/// nudged by `tol.perturbation`: `Transformer::perturbed_interpreter`).
fn references(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    tol: &Tolerance,
) -> Result<Vec<Run>, Error> {
    let mut runs = Vec::new();
    for k in 0..=PERTURBED_REFERENCES {
        let t = match k {
            0 => Transformer::new(g.clone(), Backend::Interpreter)?,
            _ => Transformer::perturbed_interpreter(
                g.clone(),
                Perturbation {
                    seed: k,
                    rel: tol.perturbation,
                },
            )?,
        };
        runs.push(run_on(&t, outputs, ps, inputs)?);
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x: f64[N]`, `e = exp(x)`, `d = subtract(e, x)`: every node observed.
    fn case() -> (Graph, Vec<NodeId>, Vec<NodeId>, Vec<HostArray>, Tolerance) {
        let text = "axis N = 4\nplaceholder x: f64[N]\ne = exp(x)\nd = subtract(e, x)\n";
        let g = weft_ir::text::parse(text, "t.weft").unwrap();
        let outputs: Vec<NodeId> = g.nodes().map(|(id, _)| id).collect();
        let ps = g.placeholders();
        let inputs = random_inputs(&g, &ps, 3, false);
        let tol = Tolerance::for_graph(&g);
        (g, outputs, ps, inputs, tol)
    }

    fn bump(run: &mut Run, k: usize, by: f64) {
        let data = run.0[0][k].as_mut_slice::<f64>().unwrap();
        data[1] += by;
    }

    #[test]
    fn a_node_wrong_from_its_own_operands_still_fails() {
        let (g, outputs, ps, inputs, tol) = case();
        let case = Case {
            g: &g,
            ps: &ps,
            inputs: &inputs,
            tol: &tol,
        };
        let interp = Transformer::new(g.clone(), Backend::Interpreter).unwrap();
        let mut got = run_on(&interp, &outputs, &ps, &inputs).unwrap();
        let judge = |got: &Run, k| case.judge_from_operands(&outputs, (got, 0, k));
        assert_eq!(judge(&got, 2), Ok(()));
        // A wrong `d` from right operands, and a wrong `e` from the right input: both caught.
        bump(&mut got, 2, 0.5);
        assert!(judge(&got, 2).unwrap_err().contains("operands' values"));
        bump(&mut got, 2, -0.5);
        bump(&mut got, 1, 0.5);
        assert!(judge(&got, 1).is_err());
        // `d` computed right from that wrong `e` is judged right from its operands: the wrong
        // `e` is what fails.
        bump(&mut got, 2, 0.5);
        assert_eq!(judge(&got, 2), Ok(()));
        // A placeholder has no operands to judge it by.
        assert!(judge(&got, 0).is_err());
    }

    /// A run whose observed output differs from what the configuration computes with every
    /// node observed is not explained, and a right run is.
    #[test]
    fn a_run_is_explained_only_by_the_same_bits_with_every_node_observed() {
        let (g, _, ps, inputs, tol) = case();
        let case = Case {
            g: &g,
            ps: &ps,
            inputs: &inputs,
            tol: &tol,
        };
        let d = [g.find("d").unwrap()];
        let jit = Transformer::with_jit_options(g.clone(), JitOptions::default()).unwrap();
        let mut got = run_on(&jit, &d, &ps, &inputs).unwrap();
        assert_eq!(
            case.explain_by_every_node(JitOptions::default(), &d, &got),
            Ok(())
        );
        bump(&mut got, 0, 1e-9);
        let why = case.explain_by_every_node(JitOptions::default(), &d, &got);
        assert!(why.unwrap_err().contains("not explained"));
    }
}
