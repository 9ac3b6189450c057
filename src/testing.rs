//! Differential testing against the reference interpreter (feature `testing`): running a
//! computation's calls the way every backend test does, the interpreter's references for
//! `weft_oracle`'s oracle, and judging a run that fails the oracle again, node by node.
//! Shared by the JIT tests (`tests/jit_common`), `tests/findings.rs` and the fuzzer.
//!
//! Assumes the oracle of docs/testing.md ("Tolerances"): a backend's run is compared element by
//! element with the interpreter's base run and its perturbed runs. Guarantees: [`Case::check`]
//! accepts a run only if it passes that comparison, or if every observed node of the same
//! configuration run again with every node observed — which must give the same bits for the
//! parts that failed in the first failing call — matches the interpreter, globally or
//! evaluated alone from the values its operands took in that run
//! ([`Case::judge_from_operands`]). So every op is checked against
//! the interpreter on inputs the backend really had: a miscompiled op fails its own check.

use crate::{Backend, Computation, Perturbation, Result, Transformer};
use weft_ir::{ArrayData, DataRef, Graph, HostArray, HostView, NodeId, Op, TensorKind};
pub use weft_oracle::Run;
use weft_oracle::{
    compare_arrays, compare_runs_or, fill_garbage, state_nodes, Observed, Tolerance,
    PERTURBED_REFERENCES,
};

/// Runs `outputs` of `g` `calls` times on `backend` with `inputs` for the placeholders `ps`.
pub fn run(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
    backend: Backend,
) -> Result<Run> {
    let t = Transformer::new(g.clone(), backend)?;
    run_on(&t, outputs, ps, inputs, calls)
}

/// Runs `outputs` `calls` times on `t` ([`call_alternately`]), then reads every variable and
/// persistent tensor.
pub fn run_on(
    t: &Transformer,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
) -> Result<Run> {
    run_calls(t, outputs, ps, inputs, 0..calls)
}

/// [`run_on`] for the calls numbered `calls` (their number picks how each is made,
/// [`call_alternately`]).
fn run_calls(
    t: &Transformer,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: std::ops::Range<usize>,
) -> Result<Run> {
    let c = t.computation(outputs, ps)?;
    let results = calls
        .map(|k| call_alternately(&c, inputs, k))
        .collect::<Result<Vec<_>>>()?;
    let state = state_nodes(t.graph())
        .iter()
        .map(|id| t.value_of(*id))
        .collect::<Result<Vec<_>>>()?;
    Ok((results, state))
}

/// Call `k` of `c`: `call` when `k` is even, else `call_into` arrays holding garbage
/// (`weft_oracle::fill_garbage`) with the inputs borrowed from copies that start 1–3
/// elements into their allocation — so every test checks that a backend writing outputs in
/// place writes every element, and that one reading inputs in place reads them at any
/// alignment.
pub fn call_alternately(c: &Computation, inputs: &[HostArray], k: usize) -> Result<Vec<HostArray>> {
    if k.is_multiple_of(2) {
        return c.call(inputs);
    }
    let offset = 1 + (k / 2) % 3;
    let shifted: Vec<ArrayData> = inputs.iter().map(|a| shift(a.data(), offset)).collect();
    let views = inputs
        .iter()
        .zip(&shifted)
        .map(|(a, d)| HostView::of_data(a.axes(), a.shape(), tail(d, offset)))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut outputs = c.output_arrays()?;
    outputs.iter_mut().for_each(fill_garbage);
    c.call_into(&views, &mut outputs)?;
    Ok(outputs)
}

/// `d` after `offset` default elements.
fn shift(d: &ArrayData, offset: usize) -> ArrayData {
    fn s<T: Copy + Default>(v: &[T], offset: usize) -> Vec<T> {
        let mut out = vec![T::default(); offset];
        out.extend_from_slice(v);
        out
    }
    match d {
        ArrayData::F32(v) => ArrayData::F32(s(v, offset)),
        ArrayData::F64(v) => ArrayData::F64(s(v, offset)),
        ArrayData::I32(v) => ArrayData::I32(s(v, offset)),
        ArrayData::I64(v) => ArrayData::I64(s(v, offset)),
        ArrayData::Bool(v) => ArrayData::Bool(s(v, offset)),
    }
}

/// The elements of `d` from `offset` on, borrowed.
fn tail(d: &ArrayData, offset: usize) -> DataRef<'_> {
    match d {
        ArrayData::F32(v) => DataRef::F32(&v[offset..]),
        ArrayData::F64(v) => DataRef::F64(&v[offset..]),
        ArrayData::I32(v) => DataRef::I32(&v[offset..]),
        ArrayData::I64(v) => DataRef::I64(&v[offset..]),
        ArrayData::Bool(v) => DataRef::Bool(&v[offset..]),
    }
}

/// The interpreter's runs the oracle compares with: on `inputs` (the base), then with every
/// float entering the computation nudged by `tol.perturbation`
/// ([`Transformer::perturbed_interpreter`], docs/testing.md).
pub fn references(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    inputs: &[HostArray],
    calls: usize,
    tol: &Tolerance,
) -> Result<Vec<Run>> {
    references_from(g, outputs, ps, (inputs, calls), tol, Worlds::usual())
}

/// How many more perturbed references (random signs, like the third) a run that fails the
/// oracle is judged with: one random-sign world gives a sum of rounding noise one sign, a
/// backend's noise takes either (`0 · inf` is NaN in the interpreter, `±noise · inf` is `±inf`
/// in a backend), so a failure is first checked against worlds enough to show both.
pub const MORE_REFERENCES_ON_FAILURE: u64 = 8;

/// Which interpreter runs a comparison takes: the seeds (0: the base; `1..`: perturbed) and
/// the state every run starts with.
struct Worlds<'a> {
    seeds: std::ops::RangeInclusive<u64>,
    state: &'a [(NodeId, HostArray)],
}

impl Worlds<'_> {
    /// The base and the usual perturbed references, from the graph's own state.
    fn usual() -> Worlds<'static> {
        Worlds {
            seeds: 0..=PERTURBED_REFERENCES,
            state: &[],
        }
    }

    /// Every reference a failed run is judged with, from the graph's own state.
    fn all() -> Worlds<'static> {
        Worlds {
            seeds: 0..=PERTURBED_REFERENCES + MORE_REFERENCES_ON_FAILURE,
            state: &[],
        }
    }

    /// The references [`Worlds::all`] adds to [`Worlds::usual`].
    fn more() -> Worlds<'static> {
        Worlds {
            seeds: PERTURBED_REFERENCES + 1..=PERTURBED_REFERENCES + MORE_REFERENCES_ON_FAILURE,
            state: &[],
        }
    }
}

/// The parts of `got` that fail the oracle against `refs`, and the first one's message.
fn failed_parts(got: &Run, refs: &[Run], tol: &Tolerance) -> (Vec<Observed>, Option<String>) {
    let (mut failed, mut first) = (Vec::new(), None);
    let _ = compare_runs_or(got, refs, tol, |part, m| {
        failed.push(part);
        first.get_or_insert(m);
        Ok(())
    });
    (failed, first)
}

/// [`references`] of `worlds`: its seeds, every run starting with the state nodes of its
/// state set to those values.
fn references_from(
    g: &Graph,
    outputs: &[NodeId],
    ps: &[NodeId],
    (inputs, calls): (&[HostArray], usize),
    tol: &Tolerance,
    worlds: Worlds,
) -> Result<Vec<Run>> {
    let (seeds, state) = (worlds.seeds, worlds.state);
    let mut runs = Vec::new();
    for seed in seeds {
        let t = match seed {
            0 => Transformer::new(g.clone(), Backend::Interpreter)?,
            _ => {
                let rel = tol.perturbation;
                Transformer::perturbed_interpreter(g.clone(), Perturbation { seed, rel })?
            }
        };
        for (id, value) in state {
            t.set_value(*id, value)?;
        }
        runs.push(run_on(&t, outputs, ps, inputs, calls)?);
    }
    Ok(runs)
}

/// A graph's test case: its placeholders and their values, the number of calls and the
/// tolerance — what judging a backend's run needs.
#[derive(Clone, Copy, Debug)]
pub struct Case<'a> {
    /// The graph.
    pub graph: &'a Graph,
    /// Its placeholders, in the order of `inputs`.
    pub placeholders: &'a [NodeId],
    /// A value per placeholder.
    pub inputs: &'a [HostArray],
    /// How many calls each run makes.
    pub calls: usize,
    /// The oracle's tolerance.
    pub tol: &'a Tolerance,
}

/// Makes the backend under test for a graph (the same configuration every time).
pub type MakeBackend<'a> = &'a dyn Fn(Graph) -> Result<Transformer>;

impl Case<'_> {
    /// Whether `got`, a run of `outputs` on the backend `make` builds, passes the oracle
    /// against `refs`, or failing that is explained node by node
    /// ([`Case::explain_by_every_node`]); the message names both judgements.
    pub fn check(
        &self,
        make: MakeBackend,
        outputs: &[NodeId],
        got: &Run,
        refs: &[Run],
    ) -> std::result::Result<(), String> {
        let (failed, first) = failed_parts(got, refs, self.tol);
        let Some(m) = first else {
            return Ok(());
        };
        // More perturbed worlds, on demand: the failed parts judged with every reference.
        let (g, ps, inputs) = (self.graph, self.placeholders, self.inputs);
        let more = references_from(
            g,
            outputs,
            ps,
            (inputs, self.calls),
            self.tol,
            Worlds::more(),
        )
        .map_err(|e| format!("{m}; more references: {e}"))?;
        let every_world: Vec<Run> = refs.iter().chain(&more).cloned().collect();
        let (still, _) = failed_parts(got, &every_world, self.tol);
        let still: Vec<Observed> = still.into_iter().filter(|p| failed.contains(p)).collect();
        if still.is_empty() {
            return Ok(());
        }
        // Explained node by node from the first call that still fails; or, failing that, from
        // the first that failed the usual references (a part the further ones accept may be
        // where the noise that fails later was made, and keep its bits where the later part
        // does not). Either judgement alone explains the run.
        self.explain_by_every_node(make, outputs, got, &still)
            .or_else(|_| self.explain_by_every_node(make, outputs, got, &failed))
            .map_err(|why| format!("{m}; {why}"))
    }

    /// Whether the parts `failed` of a run `got` of `outputs` are explained node by node: the
    /// backend `make` builds, run again with every node observed, gives the same bits for
    /// those of the first failing call (or the final state, when only it failed), and there
    /// every node matches the interpreter, or — a computed node — matches it evaluated from
    /// the values its operands took in that run
    /// ([`Case::judge_from_operands`]). Each perturbed reference is one consistent world, so
    /// two near-ties read together can come out in the backend in a combination no reference
    /// has; judged op by op on inputs the backend really had, a miscompiled op still fails its
    /// own check. Only the failed parts must keep their bits: observing a node may change how
    /// the backend fuses (a product contracted into an `fma`, a sum's partials), so a part that
    /// is rounding noise (a gradient an exact cancellation makes zero) can differ between the
    /// two runs, and the parts that passed the oracle need no explaining.
    ///
    /// When the first failing call `c` is a later one, its calls are judged from the state the
    /// backend had when call `c` started (its earlier calls run again), once that state passes the
    /// oracle: the rerun starts there, so rounding noise the earlier calls made large in the
    /// state (a noise gradient times a huge rate, within the perturbed references' spread)
    /// is the same in both runs, not recomputed otherwise.
    pub fn explain_by_every_node(
        &self,
        make: MakeBackend,
        outputs: &[NodeId],
        got: &Run,
        failed: &[Observed],
    ) -> std::result::Result<(), String> {
        let stage = |part: &Observed| match *part {
            Observed::Output { call, .. } => call,
            Observed::State(_) => self.calls,
        };
        let first = failed.iter().map(stage).min().unwrap_or(0);
        let from = if first < self.calls { first } else { 0 };
        let state = if from > 0 {
            self.state_at(make, outputs, got, from)?
        } else {
            Vec::new()
        };
        let all: Vec<NodeId> = self.graph.nodes().map(|(id, _)| id).collect();
        let every = make(self.graph.clone())
            .and_then(|t| {
                for (id, value) in &state {
                    t.set_value(*id, value)?;
                }
                run_calls(&t, &all, self.placeholders, self.inputs, from..self.calls)
            })
            .map_err(|e| format!("not explained: with every node observed: {e}"))?;
        // Parts of later calls (and final state) follow from the state the first failing call
        // left, which the rerun recomputes: when that call's parts are rounding noise made
        // large (a noise sign times an infinite rate), the rerun's later calls start from
        // other state, so only the first failing stage must keep its bits. The later ones
        // are still judged, op by op, in the rerun below.
        for part in failed.iter().filter(|p| stage(p) == first) {
            let (x, y) = match *part {
                Observed::Output { call, k } => {
                    let j = all.iter().position(|id| *id == outputs[k]);
                    (&got.0[call][k], j.map(|j| &every.0[call - from][j]))
                }
                Observed::State(k) => (&got.1[k], every.1.get(k)),
            };
            if !y.is_some_and(|y| same_bits(x, y)) {
                return Err(format!(
                    "not explained: with every node observed, {} differs",
                    describe(*part)
                ));
            }
        }
        let (ps, inputs) = (self.placeholders, self.inputs);
        let worlds = Worlds {
            state: &state,
            ..Worlds::usual()
        };
        let calls = self.calls - from;
        let refs = references_from(self.graph, &all, ps, (inputs, calls), self.tol, worlds)
            .map_err(|e| e.to_string())?;
        // The rerun's calls are numbered from call `from`.
        let at = if from > 0 {
            format!(" from call {from}")
        } else {
            String::new()
        };
        compare_runs_or(&every, &refs, self.tol, |part, m| {
            let judged = match part {
                Observed::Output { call, k } => self.judge_from_operands(&all, (&every, call, k)),
                Observed::State(k) => self.judge_state(&all, &every, k),
            };
            judged.map_err(|why| format!("with every node observed{at}, {m}; {why}"))
        })
    }

    /// The state the backend `make` builds has when call `from` starts — its first `from`
    /// calls run again, which must repeat `got`'s bits — once it passes the oracle against
    /// the interpreter's state after as many calls (every reference, the
    /// [`MORE_REFERENCES_ON_FAILURE`] too); as `(state node, value)` pairs.
    fn state_at(
        &self,
        make: MakeBackend,
        outputs: &[NodeId],
        got: &Run,
        from: usize,
    ) -> std::result::Result<Vec<(NodeId, HostArray)>, String> {
        let (ps, inputs) = (self.placeholders, self.inputs);
        let before = make(self.graph.clone())
            .and_then(|t| run_calls(&t, outputs, ps, inputs, 0..from))
            .map_err(|e| format!("not explained: the first {from} calls again: {e}"))?;
        let repeats = before.0.iter().zip(&got.0).all(|(again, first)| {
            again.len() == first.len() && again.iter().zip(first).all(|(a, b)| same_bits(a, b))
        });
        if !repeats {
            return Err(format!(
                "not explained: the first {from} calls, run again, give other bits"
            ));
        }
        let refs = references_from(
            self.graph,
            outputs,
            ps,
            (inputs, from),
            self.tol,
            Worlds::all(),
        )
        .map_err(|e| e.to_string())?;
        let state_only = |r: &Run| (Vec::new(), r.1.clone());
        let refs: Vec<Run> = refs.iter().map(state_only).collect();
        compare_runs_or(&state_only(&before), &refs, self.tol, |_, m| Err(m)).map_err(|m| {
            format!("not explained: the state when call {from} starts differs from the interpreter's: {m}")
        })?;
        Ok(state_nodes(self.graph).into_iter().zip(before.1).collect())
    }

    /// Judges the final value of the `k`-th state node of the run `got` of every node (`all`)
    /// by [`Case::judge_by_assign`] in the last call.
    fn judge_state(&self, all: &[NodeId], got: &Run, k: usize) -> std::result::Result<(), String> {
        let target = state_nodes(self.graph)[k];
        let last_call = got.0.len().checked_sub(1).ok_or("no call")?;
        self.judge_by_assign(all, got, target, last_call, &got.1[k])
    }

    /// Whether `value`, the state of `target` after call `call` of the run `got` of `all`
    /// (observed nodes), is what the last `assign` to it (in node order, the one that wins) took in that
    /// call, which that assign's own judgement covers. State no assign sets has no other judge.
    fn judge_by_assign(
        &self,
        all: &[NodeId],
        got: &Run,
        target: NodeId,
        call: usize,
        value: &HostArray,
    ) -> std::result::Result<(), String> {
        let last = self
            .graph
            .nodes()
            .rev()
            .find(|(_, n)| matches!(n.op, Op::Assign { target: t, .. } if t == target))
            .map(|(id, _)| id)
            .ok_or("state no assign sets: not judged from operands")?;
        let j = all
            .iter()
            .position(|id| *id == last)
            .ok_or("the assign that sets it is not observed")?;
        if same_bits(value, &got.0[call][j]) {
            Ok(())
        } else {
            Err("not the value its last assign took".into())
        }
    }

    /// Judges output `k` of call `call` of the run `got` of `outputs` from the values its
    /// operands took in that run: the interpreter evaluates the node alone (its computed
    /// operands cut to placeholders, `Graph::with_placeholder_for_value`) on those values, with its
    /// perturbed references. Only for a computed node (an assign judged from its value) whose
    /// every operand is observed, a placeholder or a constant.
    pub fn judge_from_operands(
        &self,
        outputs: &[NodeId],
        (got, call, k): (&Run, usize, usize),
    ) -> std::result::Result<(), String> {
        let g = self.graph;
        let node = outputs[k];
        let op = &g.node(node).op;
        let mut operands = match op {
            // State read in a later call holds what the previous call assigned.
            Op::Tensor { .. } if call > 0 => {
                return self.judge_by_assign(outputs, got, node, call - 1, &got.0[call][k]);
            }
            Op::Tensor { .. } => return Err("a stored tensor: not judged from operands".into()),
            // An assign's result is its value; its target is state, not an operand to feed.
            Op::Assign { value, .. } => vec![*value],
            _ => op.inputs(),
        };
        operands.sort();
        operands.dedup();
        // Constants evaluate alike in the cut graph; every other operand takes the run's value.
        operands.retain(|x| !is_constant(g, *x));
        let mut cut = g.clone();
        let (mut fed, mut values, mut state) = (Vec::new(), Vec::new(), Vec::new());
        for &x in &operands {
            let observed = outputs.iter().position(|o| *o == x);
            if let Some(j) = self.placeholders.iter().position(|p| *p == x) {
                fed.push(x);
                values.push(self.inputs[j].clone());
            } else if let (Some(j), Op::Tensor { .. }) = (observed, &g.node(x).op) {
                // State read: set, as the backend's run had it at this call.
                state.push((x, got.0[call][j].clone()));
            } else if let Some(j) = observed {
                cut = cut
                    .with_placeholder_for_value(x)
                    .map_err(|e| e.to_string())?;
                fed.push(x);
                values.push(got.0[call][j].clone());
            } else {
                return Err(format!("operand {} not observed", g.node_label(x)));
            }
        }
        let worlds = Worlds {
            state: &state,
            ..Worlds::usual()
        };
        let refs = references_from(&cut, &[node], &fed, (&values, 1), self.tol, worlds)
            .map_err(|e| format!("the interpreter refused the node alone: {e}"))?;
        let ys: Vec<&HostArray> = refs.iter().map(|r| &r.0[0][0]).collect();
        compare_arrays(&got.0[call][k], &ys, self.tol)
            .map_err(|m| format!("and from its operands' values in this run: {m}"))
    }
}

/// `part` as the oracle's messages name it.
fn describe(part: Observed) -> String {
    match part {
        Observed::Output { call, k } => format!("call {call} output {k}"),
        Observed::State(k) => format!("state {k}"),
    }
}

fn is_constant(g: &Graph, x: NodeId) -> bool {
    matches!(
        g.node(x).op,
        Op::Tensor {
            kind: TensorKind::Constant,
            ..
        }
    )
}

/// Whether two arrays hold the same bits (NaN payloads and zero signs included).
fn same_bits(a: &HostArray, b: &HostArray) -> bool {
    a.axes() == b.axes() && a.dtype() == b.dtype() && a.data().same_bits(b.data())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::JitOptions;
    use weft_oracle::random_inputs;

    /// `x: f64[N]`, `e = exp(x)`, `d = subtract(e, x)`.
    fn graph() -> Graph {
        let text = "axis N = 4\nplaceholder x: f64[N]\ne = exp(x)\nd = subtract(e, x)\n";
        weft_ir::text::parse(text, "t.weft").unwrap()
    }

    fn bump(run: &mut Run, k: usize, by: f64) {
        run.0[0][k].as_mut_slice::<f64>().unwrap()[1] += by;
    }

    /// [`graph`]'s placeholders, random inputs and tolerance: what a [`Case`] borrows.
    struct Parts {
        g: Graph,
        ps: Vec<NodeId>,
        inputs: Vec<HostArray>,
        tol: Tolerance,
    }

    impl Parts {
        fn new() -> Parts {
            let g = graph();
            let (ps, tol) = (g.placeholders(), Tolerance::for_graph(&g));
            let inputs = random_inputs(&g, &ps, 3, false);
            Parts { g, ps, inputs, tol }
        }

        fn case(&self, calls: usize) -> Case<'_> {
            Case {
                graph: &self.g,
                placeholders: &self.ps,
                inputs: &self.inputs,
                calls,
                tol: &self.tol,
            }
        }
    }

    #[test]
    fn a_node_wrong_from_its_own_operands_still_fails() {
        let parts = Parts::new();
        let (g, ps, inputs, case) = (&parts.g, &parts.ps, &parts.inputs, parts.case(1));
        let outputs: Vec<NodeId> = g.nodes().map(|(id, _)| id).collect();
        let mut got = run(g, &outputs, ps, inputs, 1, Backend::Interpreter).unwrap();
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
    /// node observed is not explained; a right run is, and passes the check.
    #[test]
    fn a_run_is_explained_only_by_the_same_bits_with_every_node_observed() {
        let parts = Parts::new();
        let (g, ps, inputs, tol) = (&parts.g, &parts.ps, &parts.inputs, &parts.tol);
        let case = parts.case(2);
        let d = [g.find("d").unwrap()];
        let make = |g| Transformer::with_jit_options(g, JitOptions::default());
        let jit = make(g.clone()).unwrap();
        let mut got = run_on(&jit, &d, ps, inputs, 2).unwrap();
        let refs = references(g, &d, ps, inputs, 2, tol).unwrap();
        assert_eq!(case.check(&make, &d, &got, &refs), Ok(()));
        let first = [Observed::Output { call: 0, k: 0 }];
        assert_eq!(case.explain_by_every_node(&make, &d, &got, &first), Ok(()));
        // Within the tolerance, so the check passes, but not the same bits: not explained.
        bump(&mut got, 0, 1e-9);
        assert_eq!(case.check(&make, &d, &got, &refs), Ok(()));
        let why = case.explain_by_every_node(&make, &d, &got, &first);
        assert!(why.unwrap_err().contains("not explained"));
        // A part that did not fail needs no explaining: its bits may differ.
        assert_eq!(case.explain_by_every_node(&make, &d, &got, &[]), Ok(()));
        bump(&mut got, 0, 0.5);
        let why = case.check(&make, &d, &got, &refs).unwrap_err();
        assert!(
            why.contains("vs interpreter") && why.contains("not explained"),
            "{why}"
        );
    }

    /// A failure first seen in a later call is judged from the state the backend had when
    /// that call started — only once its earlier calls repeat their bits and that state
    /// passes the oracle.
    #[test]
    fn a_later_calls_failure_is_judged_from_the_state_it_started_with() {
        let text = "axis N = 4\nplaceholder x: f64[N]\nvariable v: f64[N] = 0\n\
                    s = add(v, x)\nu = assign(v, s)\n";
        let g = weft_ir::text::parse(text, "t.weft").unwrap();
        let (ps, tol) = (g.placeholders(), Tolerance::for_graph(&g));
        let inputs = random_inputs(&g, &ps, 3, false);
        let case = Case {
            graph: &g,
            placeholders: &ps,
            inputs: &inputs,
            calls: 3,
            tol: &tol,
        };
        let u = [g.find("u").unwrap()];
        let make = |g| Transformer::with_jit_options(g, JitOptions::default());
        let got = run_on(&make(g.clone()).unwrap(), &u, &ps, &inputs, 3).unwrap();
        let refs = references(&g, &u, &ps, &inputs, 3, &tol).unwrap();
        assert_eq!(case.check(&make, &u, &got, &refs), Ok(()));
        let second = [Observed::Output { call: 1, k: 0 }];
        assert_eq!(case.explain_by_every_node(&make, &u, &got, &second), Ok(()));
        // Call 1 wrong: the rerun from the state call 0 left gives other bits.
        let mut wrong = got.clone();
        wrong.0[1][0].as_mut_slice::<f64>().unwrap()[1] += 0.5;
        let why = case.check(&make, &u, &wrong, &refs).unwrap_err();
        assert!(
            why.contains("call 1") && why.contains("not explained"),
            "{why}"
        );
        // Call 0 not repeating its bits (within the tolerance): call 1 is not judged from
        // the state it left.
        let mut drifted = got.clone();
        drifted.0[0][0].as_mut_slice::<f64>().unwrap()[1] += 1e-12;
        let why = case.explain_by_every_node(&make, &u, &drifted, &second);
        assert!(why.unwrap_err().contains("give other bits"));
    }
}
