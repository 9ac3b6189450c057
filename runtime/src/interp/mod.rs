//! The reference interpreter: evaluates every op of a graph directly, element by element, with
//! bounds-checked indexing and no cleverness. It is the correctness oracle for every other
//! backend, so it favours being obviously right over being fast.
//!
//! Values are [`HostArray`]s, row-major in their node's axes order. A run evaluates the nodes a
//! [`Plan`] needs, in creation (topological) order; views are index maps evaluated element by
//! element (`views.rs`), `dot` is explicit loops over the contracted pairs (`dot.rs`).
//!
//! # Numeric conventions
//!
//! These are the semantics every backend must reproduce, defined in code once by
//! `weft_ir::scalar` (docs/interpreter.md says the same):
//!
//! - **Floats.** Elementwise ops on f32 are computed in f64 from the widened operands and
//!   rounded once to f32; f64 ops are computed in f64. `power` is `powf`; `sigmoid` is
//!   `1 / (1 + exp(−x))`; `sign` gives ±1, and zeros and NaN are their own sign; `relu` gives
//!   `x` for `x > 0` and NaN, else +0.
//! - **NaN.** `maximum`/`minimum` propagate NaN like numpy's `maximum`; on a tie (including
//!   −0 against +0) they give the left operand. The `max`/`min` reductions propagate NaN and
//!   order −0 < +0, which is order-free. Float sums start from −0.
//!   `argmax`/`argmin` give the index of the first NaN if there is one. Comparisons follow IEEE
//!   754: everything but `not_equal` is false with a NaN operand.
//! - **Integers.** i32 and i64 ops are computed in i64 with wrapping arithmetic and wrapped to
//!   the result width (two's-complement, identical to wrapping at that width). Division
//!   truncates toward zero; division by zero gives 0; `power` with a negative exponent gives 1
//!   for base 1, ±1 for base −1 and 0 otherwise; `0^0 = 1`.
//! - **Bools.** Compare as `false < true`; `max` is "any", `min` is "all".
//! - **Reductions.** Elements are visited in row-major order over the reduction axes as listed
//!   in the op. Floats accumulate in f64 (sum, prod) and round once; `mean` is the f64 sum
//!   divided by the count. Integers accumulate in i64, wrapping. `argmax`/`argmin` return the
//!   i64 flat index over the reduction axes in that order; the first occurrence wins. No
//!   reduction axes: every result element is its one input element (argmax/argmin: 0).
//! - **dot.** For floats, each product is taken in f64 and summed in f64 in row-major order
//!   over the contracted pairs (in left-operand order), then rounded once; integers multiply
//!   and add in i64, wrapping.
//! - **convert.** Rust `as`: floats to integers truncate toward zero and saturate (NaN → 0);
//!   i64 → i32 wraps; to f32 rounds to nearest; to bool is `≠ 0` (NaN → true); bool → 0 or 1.
//! - **assign.** An `assign` node's value is its value operand in the target's axes order.
//!   Reads of a variable during a run see the value from before the run; after a successful
//!   run, each evaluated `assign` stores its value (if two assign one target, the later node
//!   wins). A failed run changes no state.
//!
//! # Perturbed runs
//!
//! With a [`Perturbation`], every float entering the computation — each input, each state value
//! read, each float constant and each conversion to float from an integer or bool — is nudged by
//! `weft_ir::perturb::perturb` (a relative `1 ± rel` per element, random signs, classes kept).
//! Where a backend's own error enters, results are moved one way — up in run 1, down in run 2
//! (each element by a random sign from run 3 on, `Perturbation::direction`): each result of a function backends only approximate
//! (`UnaryOp::is_approximate`, `power`) and of a rounding `add`, `subtract`, `multiply` or
//! `divide` (a backend rounds it from inputs its earlier errors moved, and an exact
//! cancellation downstream keeps only that rounding noise) by a relative `rel`; each float
//! `dot`'s result — and each sum of products that `Graph::sum_of_products` reads as a
//! contraction — by up to the error bound of summing its K products in any order in its own
//! precision, `K·u·Σ|aᵢbᵢ|` (a GEMM accumulates f32 in f32; docs/numerics.md).
//! That is the test oracle's conditioning probe (docs/testing.md,
//! "Tolerances"): how far it moves a result is how far a backend summing in another order, or
//! evaluating a polynomial, may differ there. Nothing else uses it.

mod dot;
mod elementwise;
mod index;
mod reduce;
mod repeated;
mod views;
mod window;

use crate::error::RunError;

use crate::executable::Executable;
use crate::plan::Plan;
use crate::state::{stored_value, State, StateAccess, StateView};
use index::IndexMap;
use std::sync::Arc;
use weft_ir::arena::EntityRef;
use weft_ir::graph::{Repeated, RepeatedReduction};
use weft_ir::{
    ArrayData, Axes, Axis, BinaryOp, CompareOp, ConvSpec, Graph, HostArray, Inputs, Node, NodeId,
    Op, ReduceOp, TensorKind,
};

/// The interpreter's conditioning probe (module docs, "Perturbed runs").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Perturbation {
    /// Seeds the signs; each node draws its own from it.
    pub seed: u64,
    /// The relative size of each nudge.
    pub rel: f64,
}

impl Perturbation {
    /// The seed node `id` draws its nudges from.
    fn seed_of(&self, id: NodeId) -> u64 {
        self.seed ^ (id.index() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    }

    /// Which way this run moves results where a backend's own error enters (approximate
    /// functions, rounding ops, dots): up in run 1, down in run 2, so a near-tie comes out
    /// both ways; from run 3 on each element by a random sign (`None`). One-way nudges are
    /// correlated across elements, a backend's roundings are not: where a result is nothing
    /// but rounding noise summed (a gradient an exact cancellation zeroes), which elements
    /// carry an ulp, and with which sign, is what moves a later sum, and only random signs
    /// model that (`tests/findings/fuzz_cancelled_gradient_noise_outside_perturbed_spread.weft`).
    fn direction(&self) -> Option<bool> {
        (self.seed <= 2).then_some(self.seed % 2 == 1)
    }

    /// `value` of node `id` nudged, if it is where floats enter the computation.
    fn apply(&self, g: &Graph, id: NodeId, value: HostArray) -> HostArray {
        let node = g.node(id);
        let entry = match node.op {
            Op::Tensor { .. } => Some(false),
            Op::Convert(x) => (!g.node(x).dtype.is_float()).then_some(false),
            // A backend's error enters here: its polynomial is a few ulps from the rounded
            // result, and a later cancellation (`sin(tanh(x)) − x`) amplifies that as it does
            // an input's nudge, which cannot show it (the result moves by far less than an ulp).
            Op::Unary(op, _) => op.is_approximate().then_some(true),
            Op::Binary(BinaryOp::Power, ..) => Some(true),
            // A rounding op's result: a backend computing it from inputs a few ulps away
            // (after a polynomial or a reordered sum) rounds it differently, and a later exact
            // cancellation of it (`g + (−g / e) · e`, where autodiff meets `log(exp(z))`)
            // leaves only that rounding noise, which no nudge of an input can move: the two
            // uses of `e` see one value. One way, as function results: two terms nudged
            // opposite ways by random sizes would cancel again whenever the sizes are close.
            Op::Binary(
                BinaryOp::Add | BinaryOp::Subtract | BinaryOp::Multiply | BinaryOp::Divide,
                ..,
            ) => Some(true),
            _ => None,
        };
        let Some(approximate) = entry.filter(|_| node.dtype.is_float()) else {
            return value;
        };
        // Entering values by random signs; results carrying a backend's error the run's way
        // (`direction`): up in run 1, down in run 2, so a comparison within an ulp of a tie
        // (libm's `tanh(x) > x` at x ≈ 2.3e-15) flips in one of them.
        let way = if approximate { self.direction() } else { None };
        weft_ir::perturb::perturb_towards(&value, self.rel, self.seed_of(id), way)
    }
}

/// A computation prepared for the reference interpreter: the graph, the plan and every
/// evaluated node's shape.
#[derive(Clone, Debug)]
pub struct Interpreter {
    graph: Arc<Graph>,
    plan: Plan,
    shapes: Vec<Option<Vec<usize>>>,
    /// The variables and persistent tensors a run reads (its snapshot) and assigns.
    access: StateAccess,
    /// The conditioning probe, for the test oracle's perturbed references.
    perturbation: Option<Perturbation>,
    /// Per node, the reduction over repeated values it is (`repeated.rs`), if any.
    repeated: Vec<Option<RepeatedReduction>>,
    /// Per node, whether its value is never held: only repeated reductions read it.
    unheld: Vec<bool>,
}

impl Interpreter {
    /// Prepares the computation of `outputs` given `placeholders`. The graph's axes must be
    /// bound (see [`Graph::verify`]).
    pub fn new(
        graph: Arc<Graph>,
        outputs: &[NodeId],
        placeholders: &[NodeId],
    ) -> Result<Interpreter, RunError> {
        let plan = Plan::new(&graph, outputs, placeholders)?;
        let mut shapes = vec![None; graph.len()];
        for (id, node) in graph.nodes() {
            if plan.is_needed(id) {
                // Every evaluated tensor must be addressable (crate::size's guarantee).
                graph.tensor_size(id)?;
                shapes[id.index()] = Some(graph.shape_of(&node.axes)?);
            }
        }
        let access = StateAccess::of(&graph, &plan);
        let (repeated, unheld) = repeated::plan_repeated(&graph, &plan);
        let interpreter = Interpreter {
            graph,
            plan,
            shapes,
            access,
            perturbation: None,
            repeated,
            unheld,
        };
        if let Some(budget) = crate::default_memory_budget() {
            interpreter.check_budget(budget)?;
        }
        Ok(interpreter)
    }

    /// Refuses, with [`RunError::MemoryBudget`], a run that would hold more than `budget`
    /// bytes at once: a run keeps every evaluated node's value to its end, beside the caller's
    /// inputs and state and the outputs it returns, and builds one node's index maps at a
    /// time ([`Interpreter::check_memory`]). Each allocation alone the system would grant;
    /// together they would get the process killed rather than refused.
    fn check_budget(&self, budget: u64) -> Result<(), RunError> {
        let g = &*self.graph;
        let mut values = 0u64;
        let mut index_maps = 0u64;
        let mut largest = None;
        let held = |id: NodeId| self.plan.is_needed(id) && !repeated::is_unheld(&self.unheld, id);
        for (id, node) in g.nodes().filter(|(id, _)| held(*id)) {
            let size = g.tensor_size(id)?;
            values = values.saturating_add(size.bytes as u64);
            index_maps = index_maps.max(index_map_bytes(size.elements, node) as u64);
            if largest.is_none_or(|(_, b)| size.bytes > b) {
                largest = Some((id, size.bytes));
            }
        }
        let callers = g.bytes_of_all(
            self.plan
                .placeholders()
                .iter()
                .chain(self.plan.outputs())
                .chain(self.access.reads()),
        )?;
        let needed = values.saturating_add(index_maps).saturating_add(callers);
        if needed <= budget {
            return Ok(());
        }
        let largest = largest
            .map(|(id, b)| format!("; the largest, `{}`, {b} bytes", g.node_label(id)))
            .unwrap_or_default();
        Err(RunError::MemoryBudget {
            needed,
            budget,
            detail: format!(
                "the interpreter's values of every evaluated node {values} bytes, its largest \
                 index maps {index_maps}, and the caller's inputs, state and outputs \
                 {callers}{largest}"
            ),
        })
    }

    /// This interpreter with every float entering the computation nudged by `p` (module docs,
    /// "Perturbed runs"): the test oracle's perturbed references.
    pub fn with_perturbation(mut self, p: Perturbation) -> Interpreter {
        self.perturbation = Some(p);
        self
    }

    /// `value` of `id`, nudged when this is a perturbed run.
    fn entering(&self, id: NodeId, value: HostArray) -> HostArray {
        match &self.perturbation {
            Some(p) => p.apply(&self.graph, id, value),
            None => value,
        }
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }
}

impl Executable for Interpreter {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn outputs(&self) -> &[NodeId] {
        self.plan.outputs()
    }

    fn placeholders(&self) -> &[NodeId] {
        self.plan.placeholders()
    }

    fn run_on(
        &self,
        inputs: &dyn Inputs,
        state: &mut StateView<'_>,
    ) -> Result<Vec<HostArray>, RunError> {
        let g = &*self.graph;
        if inputs.count() != self.plan.placeholders().len() {
            return Err(RunError::InputCount {
                expected: self.plan.placeholders().len(),
                got: inputs.count(),
            });
        }
        let mut values: Vec<Option<HostArray>> = vec![None; g.len()];
        for (i, p) in self.plan.placeholders().iter().enumerate() {
            let input = inputs.input(i);
            let node = g.node(*p);
            let shape = g.shape_of(&node.axes)?;
            if input.axes() != &node.axes || input.shape() != shape || input.dtype() != node.dtype {
                return Err(RunError::Input {
                    placeholder: g.node_label(*p),
                    message: format!(
                        "expected axes {} with shape {shape:?} and dtype {}, got {} with shape \
                         {:?} and dtype {}",
                        g.axes_name(&node.axes),
                        node.dtype,
                        g.axes_name(input.axes()),
                        input.shape(),
                        input.dtype()
                    ),
                });
            }
            values[p.index()] = Some(self.entering(*p, input.to_owned_array()));
        }
        state.read(|s| self.snapshot(s, &mut values))?;
        let mut assigned: Vec<(NodeId, HostArray)> = Vec::new();
        for (id, node) in g.nodes() {
            let unheld = repeated::is_unheld(&self.unheld, id);
            if !self.plan.is_needed(id) || unheld || values[id.index()].is_some() {
                continue;
            }
            self.check_memory(id, node)?;
            // A tensor with no elements (an empty axis) is not computed: its other axes may be
            // long enough that walking them would never end.
            let value = match g.shape_of(&node.axes)? {
                shape if shape.contains(&0) => {
                    let data = weft_ir::ArrayData::zeros(node.dtype, 0)?;
                    HostArray::new(node.axes.clone(), shape, data)?
                }
                _ => self.entering(id, self.eval(id, node, &values)?),
            };
            if let Op::Assign { target, .. } = node.op {
                assigned.push((target, value.clone()));
            }
            values[id.index()] = Some(value);
        }
        let outputs = self
            .plan
            .outputs()
            .iter()
            .map(|o| {
                values[o.index()]
                    .clone()
                    .ok_or_else(|| RunError::Malformed {
                        node: g.node_label(*o),
                        op: g.node(*o).op.name(),
                        message: "output was not evaluated".into(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Commit only once everything succeeded, so a failed run leaves the state untouched.
        if !assigned.is_empty() {
            state.commit(|s| s.set_all(g, assigned))?;
        }
        Ok(outputs)
    }
}

/// The bytes of the index maps `eval` builds for a node of `elements` elements: one index word
/// per element and operand.
fn index_map_bytes(elements: usize, node: &Node) -> usize {
    let index_words = node.op.inputs().len().max(1);
    elements.saturating_mul(index_words * std::mem::size_of::<Option<usize>>())
}

impl Interpreter {
    /// Refuses, with [`RunError::Alloc`] naming the node, to evaluate a node whose memory the
    /// system would not give: the result's bytes plus one index word per element and operand
    /// (the index maps `eval` builds). Evaluation allocates through `collect`, which aborts
    /// on failure; this check turns the sizes that cannot be had into errors first.
    fn check_memory(&self, id: NodeId, node: &Node) -> Result<(), RunError> {
        let g = &*self.graph;
        let size = g.tensor_size(id)?;
        let bytes = index_map_bytes(size.elements, node).saturating_add(size.bytes);
        weft_ir::host::check_alloc(bytes).map_err(|source| RunError::Alloc {
            tensor: g.node_label(id),
            source,
        })
    }

    /// Copies the value of every variable and persistent tensor the plan evaluates from the
    /// state into `values`: the run's snapshot, taken at once.
    fn snapshot(&self, state: &State, values: &mut [Option<HostArray>]) -> Result<(), RunError> {
        for id in self.access.reads() {
            let value = state.get(*id).cloned().ok_or_else(|| RunError::State {
                tensor: self.graph.node_label(*id),
                message: "no value in the transformer's state".into(),
            })?;
            values[id.index()] = Some(self.entering(*id, value));
        }
        Ok(())
    }

    /// The value of node `id`, whose operands are in `values`.
    fn eval(
        &self,
        id: NodeId,
        node: &Node,
        values: &[Option<HostArray>],
    ) -> Result<HostArray, RunError> {
        let g = &*self.graph;
        let e = NodeEval::new(self, id, node, values)?;
        let (out_axes, out_shape) = (&node.axes, e.out_shape);
        let data = match &node.op {
            Op::Tensor { kind, .. } => return e.tensor(*kind),
            Op::Unary(op, x) => {
                elementwise::unary(*op, e.operand(*x)?.data()).map_err(e.malformed())?
            }
            Op::Binary(op, x, y) => e.binary(*op, *x, *y)?,
            Op::Compare(op, x, y) => e.compare(*op, *x, *y)?,
            Op::Select(c, x, y) => e.select(*c, *x, *y)?,
            Op::Convert(x) => elementwise::convert(e.operand(*x)?.data(), node.dtype),
            Op::Reduce { op, input, axes } => match &self.repeated[id.index()] {
                Some(r) => self.eval_repeated(id, r, values, out_shape)?,
                None => self.reduce_value(id, *op, e.operand(*input)?, axes, out_axes)?,
            },
            Op::Dot(x, y) => e.dot(*x, *y)?,
            Op::Broadcast(x) | Op::AxesWithOrder(x) => {
                let x = e.operand(*x)?;
                e.gather_view(x, views::by_identity(x.axes(), x.shape(), out_axes))?
            }
            Op::ExpandDims { input, .. } => {
                let x = e.operand(*input)?;
                e.gather_view(x, views::by_identity(x.axes(), x.shape(), out_axes))?
            }
            Op::CastAxes(x) => {
                let x = e.operand(*x)?;
                e.gather_view(x, views::by_position(x.shape()))?
            }
            Op::Transpose(x) => {
                let x = e.operand(*x)?;
                e.gather_view(x, views::reversed(x.shape()))?
            }
            Op::Slice { input, slices } => {
                let x = e.operand(*input)?;
                e.gather_view(x, views::slice(g, x.axes(), x.shape(), slices))?
            }
            Op::Flatten { input, axes } => {
                let x = e.operand(*input)?;
                e.gather_view(x, views::flatten(x.axes(), x.shape(), axes, out_axes))?
            }
            Op::Unflatten { input, axis } => {
                let x = e.operand(*input)?;
                e.gather_view(
                    x,
                    views::unflatten(g, x.axes(), x.shape(), *axis, out_axes, out_shape),
                )?
            }
            Op::Pad { input, pads } => {
                let x = e.operand(*input)?;
                e.gather_view(x, views::pad(x.axes(), x.shape(), pads))?
            }
            Op::Concat(parts) => e.concat(parts)?,
            Op::Convolution {
                input,
                filter,
                spec,
            } => e.convolution(*input, *filter, spec)?,
            Op::Pool { input, spec } => {
                let x = e.operand(*input)?;
                let pooled = g.pool_axes(&g.node_label(id), x.axes(), spec)?;
                window::pool(spec.kind, &pooled, x, out_shape).map_err(e.malformed())?
            }
            Op::Assign { value, .. } => {
                let v = e.operand(*value)?;
                v.with_axes_order(out_axes)
                    .ok_or_else(|| e.malformed()("value axes are not the target's".into()))?
                    .into_parts()
                    .2
            }
        };
        Ok(HostArray::new(out_axes.clone(), out_shape.to_vec(), data)?)
    }
}

/// One node's evaluation ([`Interpreter::eval`]): its operands' values and its result's shape.
struct NodeEval<'a> {
    it: &'a Interpreter,
    g: &'a Graph,
    id: NodeId,
    node: &'a Node,
    values: &'a [Option<HostArray>],
    out_shape: &'a [usize],
}

impl<'a> NodeEval<'a> {
    fn new(
        it: &'a Interpreter,
        id: NodeId,
        node: &'a Node,
        values: &'a [Option<HostArray>],
    ) -> Result<NodeEval<'a>, RunError> {
        let mut e = NodeEval {
            it,
            g: &it.graph,
            id,
            node,
            values,
            out_shape: &[],
        };
        e.out_shape = it
            .shapes
            .get(id.index())
            .and_then(|s| s.as_deref())
            .ok_or_else(|| e.malformed()("shape not prepared".into()))?;
        Ok(e)
    }

    /// The error naming this node, its op and `message`.
    fn malformed(&self) -> impl Fn(String) -> RunError + 'a {
        let (g, id, node) = (self.g, self.id, self.node);
        move |message: String| RunError::Malformed {
            node: g.node_label(id),
            op: node.op.name(),
            message,
        }
    }

    fn operand(&self, x: NodeId) -> Result<&'a HostArray, RunError> {
        self.values
            .get(x.index())
            .and_then(|v| v.as_ref())
            .ok_or_else(|| {
                self.malformed()(format!(
                    "operand {} was not evaluated",
                    self.g.node_label(x)
                ))
            })
    }

    /// The flat index into operand `x` of every result element, `x` broadcast by axis.
    fn broadcast_index(&self, x: &HostArray) -> Result<Vec<usize>, RunError> {
        views::by_identity(x.axes(), x.shape(), &self.node.axes)
            .and_then(|m| m.covering_all(self.out_shape))
            .map_err(self.malformed())
    }

    /// The elements of `x` a view reads through `map`, in result order.
    fn gather_view(
        &self,
        x: &HostArray,
        map: Result<IndexMap, String>,
    ) -> Result<ArrayData, RunError> {
        map.and_then(|m| index::gather(x.data(), &m.flat_all(self.out_shape)?))
            .map_err(self.malformed())
    }

    /// A tensor's value: a constant's own; state and placeholders arrive before evaluation.
    fn tensor(&self, kind: TensorKind) -> Result<HostArray, RunError> {
        let malformed = self.malformed();
        match kind {
            TensorKind::Constant => stored_value(self.g, self.id),
            TensorKind::Variable | TensorKind::PersistentTensor => {
                Err(malformed("state value missing from the snapshot".into()))
            }
            TensorKind::Placeholder => Err(malformed("placeholder without an input".into())),
        }
    }

    fn binary(&self, op: BinaryOp, x: NodeId, y: NodeId) -> Result<ArrayData, RunError> {
        let (x, y) = (self.operand(x)?, self.operand(y)?);
        let (ix, iy) = (self.broadcast_index(x)?, self.broadcast_index(y)?);
        elementwise::binary(op, x.data(), &ix, y.data(), &iy).map_err(self.malformed())
    }

    fn compare(&self, op: CompareOp, x: NodeId, y: NodeId) -> Result<ArrayData, RunError> {
        let (x, y) = (self.operand(x)?, self.operand(y)?);
        let (ix, iy) = (self.broadcast_index(x)?, self.broadcast_index(y)?);
        elementwise::compare_arrays(op, x.data(), &ix, y.data(), &iy).map_err(self.malformed())
    }

    fn select(&self, c: NodeId, x: NodeId, y: NodeId) -> Result<ArrayData, RunError> {
        let (c, x, y) = (self.operand(c)?, self.operand(x)?, self.operand(y)?);
        let (ic, ix, iy) = (
            self.broadcast_index(c)?,
            self.broadcast_index(x)?,
            self.broadcast_index(y)?,
        );
        elementwise::select(c.data(), &ic, x.data(), &ix, y.data(), &iy).map_err(self.malformed())
    }

    fn dot(&self, x: NodeId, y: NodeId) -> Result<ArrayData, RunError> {
        let (g, id, malformed) = (self.g, self.id, self.malformed());
        let (x, y) = (self.operand(x)?, self.operand(y)?);
        let pairs = g.dot_pairs(&g.node_label(id), x.axes(), y.axes())?;
        let index = dot::DotIndex::new(
            x.axes(),
            x.shape(),
            y.axes(),
            y.shape(),
            &pairs,
            &self.node.axes,
        )
        .map_err(&malformed)?;
        let data = dot::dot(x.data(), y.data(), &index).map_err(&malformed)?;
        // A backend's error enters here too: a GEMM sums the products in its own order
        // and precision (f32 in f32), within the bound `error_bounds` gives.
        Ok(match &self.it.perturbation {
            Some(p) => match dot::error_bounds(x.data(), y.data(), &index).map_err(&malformed)? {
                Some(bounds) => dot::nudge(data, &bounds, p.seed_of(id), p.direction()),
                None => data,
            },
            None => data,
        })
    }

    fn concat(&self, parts: &[(NodeId, Axis)]) -> Result<ArrayData, RunError> {
        let malformed = self.malformed();
        let first = parts.first().ok_or_else(|| malformed("no parts".into()))?;
        let cat_pos = self
            .operand(first.0)?
            .axes()
            .position(first.1)
            .ok_or_else(|| malformed("the first part lacks its axis".into()))?;
        let arrays = parts
            .iter()
            .map(|(n, a)| {
                let v = self.operand(*n)?;
                Ok(views::Part {
                    data: v.data(),
                    axes: v.axes(),
                    shape: v.shape(),
                    axis: *a,
                })
            })
            .collect::<Result<Vec<_>, RunError>>()?;
        views::concat(&arrays, &self.node.axes, self.out_shape, cat_pos).map_err(malformed)
    }

    fn convolution(
        &self,
        input: NodeId,
        filter: NodeId,
        spec: &ConvSpec,
    ) -> Result<ArrayData, RunError> {
        let (g, id) = (self.g, self.id);
        let (x, f) = (self.operand(input)?, self.operand(filter)?);
        let label = g.node_label(id);
        let p = g.conv_pairing(&label, x.axes(), f.axes(), spec)?;
        let (data, bounds) =
            window::convolution(&p, x, f, self.out_shape).map_err(self.malformed())?;
        // Its expansion sums on the GEMM path and in the dtype (docs/numerics.md).
        Ok(match &self.it.perturbation {
            Some(pert) => dot::nudge(data, &bounds, pert.seed_of(id), pert.direction()),
            None => data,
        })
    }
}

impl Interpreter {
    /// Node `id`, the reduction over repeated values `r` (`repeated.rs`), over `out_shape`: the
    /// repeated value reduced over the reduced axes it has, then, for a sum, multiplied by the
    /// introduced length (the one multiply simplify writes), broadcast to the node's axes.
    fn eval_repeated(
        &self,
        id: NodeId,
        r: &RepeatedReduction,
        values: &[Option<HostArray>],
        out_shape: &[usize],
    ) -> Result<ArrayData, RunError> {
        let g = &*self.graph;
        let node = g.node(id);
        let malformed = |message: String| RunError::Malformed {
            node: g.node_label(id),
            op: node.op.name(),
            message,
        };
        let filled;
        let source = match r.source {
            Repeated::Node(y) => {
                values
                    .get(y.index())
                    .and_then(|v| v.as_ref())
                    .ok_or_else(|| {
                        malformed(format!("operand {} was not evaluated", g.node_label(y)))
                    })?
            }
            Repeated::Fill(v) => {
                // The filled constant's one value, entering the run as the constant would.
                let data = ArrayData::filled(node.dtype, v, 1)?;
                filled = self.entering(r.operand, HostArray::new(Axes::default(), vec![], data)?);
                &filled
            }
        };
        let kept = Axes::new(r.kept.iter().copied()).map_err(|e| malformed(e.to_string()))?;
        let rest = source.axes().difference(&kept);
        let reduced = if kept.is_empty() {
            source.data().clone()
        } else {
            self.reduce_value(id, r.op, source, &kept, &rest)?
        };
        let reduced = match r.factor(node.dtype) {
            Some(f) => {
                let len = ArrayData::filled(node.dtype, f, 1)?;
                let ix: Vec<usize> = (0..reduced.len()).collect();
                let iy = vec![0; ix.len()];
                elementwise::binary(BinaryOp::Multiply, &reduced, &ix, &len, &iy)
                    .map_err(malformed)?
            }
            None => reduced,
        };
        let rest_shape = g.shape_of(&rest)?;
        views::by_identity(&rest, &rest_shape, &node.axes)
            .and_then(|m| index::gather(&reduced, &m.flat_all(out_shape)?))
            .map_err(malformed)
    }

    /// `reduce(op, x, axes)` over `out_axes` (node `id`'s, or those of a repeated
    /// reduction's first step), its backend's error nudged into a perturbed run.
    fn reduce_value(
        &self,
        id: NodeId,
        op: ReduceOp,
        x: &HostArray,
        axes: &Axes,
        out_axes: &Axes,
    ) -> Result<ArrayData, RunError> {
        let g = &*self.graph;
        let malformed = |message: String| RunError::Malformed {
            node: g.node_label(id),
            op: op.name(),
            message,
        };
        let positions = |axes: &Axes| {
            axes.iter()
                .map(|a| {
                    x.axes()
                        .position(*a)
                        .ok_or_else(|| malformed(format!("axis {a:?} not in the input")))
                })
                .collect::<Result<Vec<_>, _>>()
        };
        let groups = reduce::Groups::new(x.shape(), &positions(out_axes)?, &positions(axes)?)
            .map_err(malformed)?;
        let data = reduce::reduce(op, x.data(), &groups).map_err(malformed)?;
        // A sum of products may run as a contraction on a GEMM (f32 in f32), and an
        // f32 sum or mean may be narrowed to f32 and reassociated by the JIT
        // (docs/numerics.md): their error enters here, as a dot's does.
        let f32_sum =
            matches!(op, ReduceOp::Sum | ReduceOp::Mean) && matches!(x.data(), ArrayData::F32(_));
        Ok(
            match (
                &self.perturbation,
                g.sum_of_products(id).is_some() || f32_sum,
            ) {
                (Some(p), true) => match dot::sum_error_bounds(x.data(), &groups) {
                    Some(mut bounds) => {
                        // `sum_error_bounds` is n·u·Σ|x|; a narrowed f32 sum has at most
                        // `MAX_F32_SUM_CHAIN` additions on a term's path (longer ones stay
                        // in f64), and a mean divides by n.
                        let n = groups.offsets.len().max(1) as f64;
                        let mut scale = 1.0;
                        if g.sum_of_products(id).is_none() {
                            scale *= n.min(weft_ir::scalar::MAX_F32_SUM_CHAIN as f64) / n;
                        }
                        if op == ReduceOp::Mean {
                            scale /= n;
                        }
                        bounds.iter_mut().for_each(|b| *b *= scale);
                        dot::nudge(data, &bounds, p.seed_of(id), p.direction())
                    }
                    None => data,
                },
                _ => data,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::{ArrayData, DType, TensorInit};

    /// v(N=2) starts at [1, 2]; `assign(v, v · x)` for a placeholder x.
    fn scaled() -> (Arc<Graph>, NodeId, NodeId, NodeId, weft_ir::Axis) {
        let mut g = Graph::new();
        let n = g.axis("N", 2).unwrap();
        let v = g
            .variable(
                "v",
                &[n],
                DType::I32,
                TensorInit::data(ArrayData::I32(vec![1, 2])),
            )
            .unwrap();
        let x = g.placeholder("x", &[n], DType::I32).unwrap();
        let prod = g.multiply(v, x).unwrap();
        let upd = g.assign(v, prod).unwrap();
        (Arc::new(g), v, x, upd, n)
    }

    #[test]
    fn runs_commit_assigns_and_check_their_inputs() {
        let (g, v, x, upd, n) = scaled();
        let mut state = State::initial(&g).unwrap();
        let exe = Interpreter::new(Arc::clone(&g), &[v, upd], &[x]).unwrap();
        let axes = weft_ir::Axes::new([n]).unwrap();
        let xs = HostArray::from_vec(axes.clone(), vec![2], vec![3i32, 4]).unwrap();
        let out = exe.run(std::slice::from_ref(&xs), &mut state).unwrap();
        assert_eq!(out[0].to_vec::<i32>().unwrap(), vec![1, 2]);
        assert_eq!(out[1].to_vec::<i32>().unwrap(), vec![3, 8]);
        assert_eq!(state.get(v).unwrap().to_vec::<i32>().unwrap(), vec![3, 8]);
        // Inputs that do not match exactly, or too few, are refused and change nothing.
        let wrong = HostArray::from_vec(axes, vec![2], vec![3i64, 4]).unwrap();
        let err = exe.run(&[wrong], &mut state).unwrap_err();
        assert!(matches!(err, RunError::Input { ref placeholder, .. } if placeholder == "x"));
        let err = exe.run(&[], &mut state).unwrap_err();
        assert!(matches!(
            err,
            RunError::InputCount {
                expected: 1,
                got: 0
            }
        ));
        assert_eq!(state.get(v).unwrap().to_vec::<i32>().unwrap(), vec![3, 8]);
    }

    /// Finding 002 (tests/findings/fuzz_f32_sin_tanh_cancellation_not_a_mismatch.weft): in f32,
    /// `sin(tanh(x)) − x` at x ≈ −0.005 is 138 ulps of x, the rounding of `tanh` and `sin`
    /// worth ±1 of them. Nudging x alone moves the true value by 0.004 ulp, so the result did
    /// not move at all and a backend's 1-ulp `sin` looked like a miscompile; the nudged
    /// function results must move it.
    #[test]
    fn perturbed_runs_nudge_approximate_function_results() {
        let mut g = Graph::new();
        let n = g.axis("N", 1).unwrap();
        let x = g.placeholder("x", &[n], DType::F32).unwrap();
        let t = g.unary(weft_ir::UnaryOp::Tanh, x).unwrap();
        let s = g.unary(weft_ir::UnaryOp::Sin, t).unwrap();
        let d = g.binary(BinaryOp::Subtract, s, x).unwrap();
        let g = Arc::new(g);
        let axes = weft_ir::Axes::new([n]).unwrap();
        let xs = HostArray::from_vec(axes, vec![1], vec![-0.005_054_847_f32]).unwrap();
        let run = |p: Option<Perturbation>| {
            let mut exe = Interpreter::new(Arc::clone(&g), &[d], &[x]).unwrap();
            if let Some(p) = p {
                exe = exe.with_perturbation(p);
            }
            let out = exe.run(std::slice::from_ref(&xs), &mut State::default());
            out.unwrap()[0].to_vec::<f32>().unwrap()[0]
        };
        let base = run(None);
        let ulp_of_x = 2f32.powi(-31);
        for seed in 1..=2 {
            let nudged = run(Some(Perturbation {
                seed,
                rel: 1.0 / 65536.0,
            }));
            assert!((nudged - base).abs() >= ulp_of_x, "{nudged} vs {base}");
        }
    }

    /// tests/findings/fuzz_exp_log_exact_cancellation_in_mutated_digits_mlp.weft: the gradient
    /// of `z − log(exp(z))` is `g + (−g / e) · e`, exactly 0 but for the rounding of the divide
    /// and multiply, which a backend whose `e` is an ulp away rounds differently. Both uses of
    /// `e` see one nudged value, so nudging `e` cannot spread the cancellation; nudging the
    /// rounding ops' results must, by about the size of the cancelling terms.
    #[test]
    fn perturbed_runs_spread_an_exact_cancellation_of_rounded_results() {
        let mut g = Graph::new();
        let n = g.axis("N", 1).unwrap();
        let z = g.placeholder("z", &[n], DType::F32).unwrap();
        let grad = g.placeholder("g", &[n], DType::F32).unwrap();
        let e = g.unary(weft_ir::UnaryOp::Exp, z).unwrap();
        let neg = g.unary(weft_ir::UnaryOp::Negative, grad).unwrap();
        let q = g.binary(BinaryOp::Divide, neg, e).unwrap();
        let p = g.binary(BinaryOp::Multiply, q, e).unwrap();
        let d = g.binary(BinaryOp::Add, grad, p).unwrap();
        let g = Arc::new(g);
        let axes = weft_ir::Axes::new([n]).unwrap();
        let zs = HostArray::from_vec(axes.clone(), vec![1], vec![-1.3_f32]).unwrap();
        let gs = HostArray::from_vec(axes, vec![1], vec![-0.015_625_f32]).unwrap();
        let run = |p: Option<Perturbation>| {
            let mut exe = Interpreter::new(Arc::clone(&g), &[d], &[z, grad]).unwrap();
            if let Some(p) = p {
                exe = exe.with_perturbation(p);
            }
            let out = exe.run(&[zs.clone(), gs.clone()], &mut State::default());
            out.unwrap()[0].to_vec::<f32>().unwrap()[0]
        };
        let base = run(None);
        let rel = 1.0 / 65536.0;
        for seed in 1..=2 {
            let nudged = run(Some(Perturbation { seed, rel }));
            // At least a quarter of the nudge of one term: far above the few ulps of 2⁻⁶
            // (2⁻²⁹ each) a backend's rounding leaves.
            let floor = 0.015_625 * rel as f32 / 4.0;
            assert!((nudged - base).abs() >= floor, "{nudged} vs {base}");
        }
    }

    /// jit_props seed 104: `tanh(x) > x` at x = 2.3045794977438016e-15 is true in libm (1 ulp
    /// high) and false for the correctly rounded tanh. The two perturbed runs nudge function
    /// results opposite ways, so the comparison comes out both ways and is seen as a near-tie.
    #[test]
    fn perturbed_runs_nudge_function_results_both_ways() {
        let mut g = Graph::new();
        let n = g.axis("N", 1).unwrap();
        let x = g.placeholder("x", &[n], DType::F64).unwrap();
        let t = g.unary(weft_ir::UnaryOp::Tanh, x).unwrap();
        let gt = g.compare(weft_ir::CompareOp::Greater, t, x).unwrap();
        let g = Arc::new(g);
        let axes = weft_ir::Axes::new([n]).unwrap();
        let xs = HostArray::from_vec(axes, vec![1], vec![2.304_579_497_743_801_6e-15_f64]).unwrap();
        let run = |seed| {
            let exe = Interpreter::new(Arc::clone(&g), &[gt], &[x]).unwrap();
            let exe = exe.with_perturbation(Perturbation {
                seed,
                rel: 2f64.powi(-40),
            });
            let out = exe.run(std::slice::from_ref(&xs), &mut State::default());
            out.unwrap()[0].to_vec::<bool>().unwrap()[0]
        };
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn a_missing_state_value_is_an_error_naming_the_tensor() {
        let (g, v, _x, _upd, _n) = scaled();
        let exe = Interpreter::new(Arc::clone(&g), &[v], &[]).unwrap();
        let err = exe.run(&[], &mut State::default()).unwrap_err();
        assert!(matches!(err, RunError::State { ref tensor, .. } if tensor == "v"));
    }
}
