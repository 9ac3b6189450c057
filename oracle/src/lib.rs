//! weft-oracle: random graphs for property tests and the fuzzer, the oracle comparison every
//! backend test shares ([`oracle`]) and the property runner that tallies its cases ([`tally`]).
//! It assumes weft-ir's public API alone and brings proptest, so only tests, the fuzzer and
//! the root package's `weft::testing` (feature `testing`) depend on it; nothing in it runs a
//! backend (the interpreter's references come from the caller).
//!
//! A graph is drawn from a stream of `u32` choices ([`graph_from_choices`]), so proptest shrinks
//! it by shortening and lowering the stream; a spent stream reads as zeros, which ends the graph
//! (after [`GraphConfig::min_nodes`] steps, each then a scalar placeholder). Every op is built through the builder API with arguments chosen to be valid:
//! axis lengths 1..=7 (including 1 and lengths that are not multiples of 4), stored tensors of
//! every kind and dtype, and chains of every op kind — elementwise, compare, select, convert,
//! reductions with and without `out_axes`, dot (with dual pairs), every view (negative-step and
//! negative-bound slices, pinned indices, pads, flatten/unflatten, concat, expand_dims,
//! transpose, cast_axes, axes_with_order, broadcast) and assign.
//!
//! [`GraphConfig::extreme_windows`] draws small graphs of convolutions, max and average pools
//! and (in [`text_from_choices`]) a `grad` of them, with extreme parameters: axis lengths 0, 1
//! and 2²⁸ to 2⁴⁰, strides, dilations and paddings up to `usize::MAX`, windows of 1 and of the
//! whole padded axis, several channel groups, and axes left unbound (bound at call time).
//!
//! Guarantees: with [`GraphConfig::compilable`] every axis is bound and the graph passes
//! [`Graph::verify`]; the other configurations' draws do not depend on `extreme_windows` (it
//! reads choices only when set). The rare draw the builder still rejects (e.g. flattening into
//! an axis the tensor already has) is skipped; the graph then keeps the derived axis the
//! attempt interned, which is itself a graph the API can build.

#![warn(missing_docs)]
#![forbid(unsafe_code)]

use proptest::prelude::*;
use std::collections::HashMap;
use weft_ir::axis::{Axis, AxisDef, AxisId, Role, SliceRange, WindowStep};
use weft_ir::dtype::DType;
use weft_ir::graph::{
    AxisSlice, BinaryOp, CompareOp, Graph, GraphError, NodeId, Op, ReduceOp, TensorInit,
    TensorKind, UnaryOp,
};
use weft_ir::host::{ArrayData, Scalar};

pub mod oracle;
pub mod tally;
pub use oracle::{
    compare_arrays, compare_runs, compare_runs_or, fill_garbage, large_cases, observed_outputs,
    proptest_cases, random_inputs, state_nodes, Observed, Run, SplitMix, Tolerance,
    PERTURBED_REFERENCES,
};
pub use tally::{run_property, Tally};

/// What random graphs may contain.
#[derive(Clone, Debug)]
pub struct GraphConfig {
    /// At most this many declared axes (at least one is declared).
    pub max_axes: usize,
    /// At least this many node-making steps (while the choice stream lasts).
    pub min_nodes: usize,
    /// At most this many node-making steps.
    pub max_nodes: usize,
    /// Leave some axis lengths unbound.
    pub unbound_axes: bool,
    /// Use awkward names: duplicate, empty, keyword-like, quoted or unnamed axes and tensors.
    pub odd_names: bool,
    /// Use NaN, infinities, −0, subnormals and integer extremes as values.
    pub special_values: bool,
    /// Include `assign` ops.
    pub assigns: bool,
    /// Percent of operand picks taken from the eight newest candidates (long chains); 0 picks
    /// uniformly and reads no extra choice.
    pub chain_bias: u32,
    /// Mostly convolutions and pools with extreme parameters and axis lengths, and a `grad`
    /// of one ([`GraphConfig::extreme_windows`]).
    pub extreme_windows: bool,
    /// Percent of declared axes given a huge length, 2²⁰ to 2⁶² (a power of two, or one more),
    /// and of the rest, length 0 ([`GraphConfig::huge_lengths`]); 0 reads no extra choice.
    pub huge_lengths: u32,
}

impl Default for GraphConfig {
    /// Everything the API allows: the text round trip's configuration.
    fn default() -> GraphConfig {
        GraphConfig {
            max_axes: 5,
            min_nodes: 0,
            max_nodes: 24,
            unbound_axes: true,
            odd_names: true,
            special_values: true,
            assigns: true,
            chain_bias: 0,
            extreme_windows: false,
            huge_lengths: 0,
        }
    }
}

impl GraphConfig {
    /// Graphs that can be compiled and run as drawn: every axis bound, plain names.
    pub fn compilable() -> GraphConfig {
        GraphConfig {
            unbound_axes: false,
            odd_names: false,
            ..GraphConfig::default()
        }
    }

    /// Compilable graphs of 100 to 400 node-making steps: long op chains, wide fan-in.
    pub fn large() -> GraphConfig {
        GraphConfig {
            max_axes: 6,
            min_nodes: 100,
            max_nodes: 400,
            chain_bias: 50,
            ..GraphConfig::compilable()
        }
    }

    /// Small graphs of convolutions, max and average pools and a gradient of one, with extreme
    /// parameters: axis lengths 0, 1, 2²⁸, 2³², 2⁴⁰ and `u32::MAX`; strides, dilations and
    /// paddings up to `usize::MAX` and near `i64::MAX`; windows of 1 and of the whole padded
    /// axis; several channel groups; some axes unbound (for the caller to bind, e.g. at call
    /// time). Many draws are too large to run (compile them only) or rejected by the builder
    /// (skipped, as always); the gradient is only in [`text_from_choices`]'s text, as a `grad`
    /// statement, and in [`graph_from_choices`]'s graph when [`Graph::grad`] accepts it.
    pub fn extreme_windows() -> GraphConfig {
        GraphConfig {
            max_axes: 3,
            min_nodes: 3,
            max_nodes: 10,
            unbound_axes: true,
            odd_names: false,
            special_values: true,
            assigns: false,
            chain_bias: 50,
            extreme_windows: true,
            huge_lengths: 0,
        }
    }

    /// Compilable graphs of every op whose axes are often huge (2²⁰ to 2⁶²) or empty: what
    /// compile-time work must never grow with (`tests/huge_lengths.rs`). Stored values over
    /// more than 2¹⁶ elements are filled with one value rather than drawn element by element.
    pub fn huge_lengths() -> GraphConfig {
        GraphConfig {
            max_axes: 4,
            min_nodes: 8,
            max_nodes: 24,
            huge_lengths: 30,
            ..GraphConfig::compilable()
        }
    }

    /// How many `u32` choices a graph of this configuration may read: about 24 per node step
    /// (ops with many operands or slices read more), at least the 1536 of the default.
    pub fn choice_len(&self) -> usize {
        (24 * self.max_nodes).max(1536)
    }
}

/// Random graphs with everything the API allows ([`GraphConfig::default`]).
pub fn arb_graph() -> impl Strategy<Value = Graph> {
    arb_graph_with(GraphConfig::default())
}

/// Random graphs drawn with `config`.
pub fn arb_graph_with(config: GraphConfig) -> impl Strategy<Value = Graph> {
    proptest::collection::vec(any::<u32>(), 0..config.choice_len())
        .prop_map(move |choices| graph_from_choices(&choices, &config))
}

/// The largest tensor a property test runs, in elements ([`small_enough`]): 8 MiB in f64, so
/// a graph's references, three JIT runs and their comparison stay well inside a test machine.
pub const PROP_MAX_ELEMENTS: usize = 1 << 20;
/// The most elements of all a property test's tensors together ([`small_enough`]).
pub const PROP_MAX_TOTAL_ELEMENTS: usize = 1 << 24;

/// Whether no tensor of `g` has more than `max_elements` elements and all of them together no
/// more than `max_total` (a tensor without a size, [`Graph::tensor_size`], counts as too
/// large). Random graphs can broadcast their way to trillions of elements, which a test or
/// fuzz case must skip rather than let the system kill the process.
pub fn small_enough(g: &Graph, max_elements: usize, max_total: usize) -> bool {
    let mut total = 0usize;
    for (id, _) in g.nodes() {
        let Ok(size) = g.tensor_size(id) else {
            return false;
        };
        let len = size.elements;
        total = total.saturating_add(len);
        if len > max_elements || total > max_total {
            return false;
        }
    }
    true
}

/// The graph a choice stream draws (deterministic). With
/// [`GraphConfig::extreme_windows`], its gradient too when [`Graph::grad`] accepts it (the
/// gradients become outputs).
pub fn graph_from_choices(choices: &[u32], config: &GraphConfig) -> Graph {
    let (mut g, _, grad) = draw_all(choices, config);
    // `Graph::grad` leaves the graph as it was when it fails.
    if let Some(Ok(ds)) = grad.map(|r| g.grad(r.loss, &r.wrt)) {
        for d in ds {
            let _ = g.mark_output(d);
        }
    }
    g
}

/// The `.weft` text of the graph a choice stream draws (deterministic), with
/// [`GraphConfig::extreme_windows`]'s gradient as a `grad` statement and its results as
/// outputs: the gradient is expanded when the text is parsed, not here, so a caller that runs
/// parsing under a watchdog (the fuzzer) also has the expansion under it.
pub fn text_from_choices(choices: &[u32], config: &GraphConfig) -> String {
    let (g, _, grad) = draw_all(choices, config);
    let mut text = weft_ir::text::print(&g);
    if let Some(grad) = grad {
        let names: Vec<String> = (0..grad.wrt.len()).map(|i| format!("dgrad{i}")).collect();
        let wrt: Vec<String> = grad.wrt.iter().map(|n| g.node_label(*n)).collect();
        text += &format!(
            "{} = grad({}, {})\noutput {}\n",
            names.join(", "),
            g.node_label(grad.loss),
            wrt.join(", "),
            names.join(", ")
        );
    }
    text
}

/// The op kinds the generator draws, by name (as [`Op::name`] for ops; `tensor` for stored
/// tensors of any kind).
pub const OP_KINDS: [&str; 21] = [
    "tensor",
    "unary",
    "binary",
    "compare",
    "select",
    "convert",
    "reduce",
    "dot",
    "broadcast",
    "axes_with_order",
    "cast_axes",
    "transpose",
    "slice",
    "flatten",
    "unflatten",
    "pad",
    "concat",
    "expand_dims",
    "assign",
    "convolution",
    "pool",
];

/// Per op kind (index into [`OP_KINDS`]): draws the builder accepted, draws it rejected.
#[derive(Clone, Debug, Default)]
pub struct DrawStats {
    /// Accepted draws per kind.
    pub built: [usize; 21],
    /// Rejected draws per kind.
    pub rejected: [usize; 21],
}

/// The graph a choice stream draws, with how many draws of each kind the builder accepted.
pub fn draw(choices: &[u32], config: &GraphConfig) -> (Graph, DrawStats) {
    let (g, stats, _) = draw_all(choices, config);
    (g, stats)
}

/// A gradient to take ([`GraphConfig::extreme_windows`]): of the float scalar `loss` with
/// respect to the float tensors `wrt`, every node named.
struct GradRequest {
    loss: NodeId,
    wrt: Vec<NodeId>,
}

/// [`draw`], and the gradient the draw asks for, if any.
fn draw_all(choices: &[u32], config: &GraphConfig) -> (Graph, DrawStats, Option<GradRequest>) {
    let mut gen = Gen {
        g: Graph::new(),
        c: Choices {
            data: choices,
            at: 0,
        },
        cfg: config.clone(),
        lens: HashMap::new(),
        pool: Vec::new(),
        names: 0,
        stats: DrawStats::default(),
    };
    gen.run();
    let grad = if config.extreme_windows {
        gen.grad_request()
    } else {
        None
    };
    (gen.g, gen.stats, grad)
}

struct Choices<'a> {
    data: &'a [u32],
    at: usize,
}

impl Choices<'_> {
    fn next(&mut self) -> u32 {
        let v = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        v
    }
    /// A number in `0..n` (0 if `n` is 0).
    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            self.next() as usize % n
        }
    }
    fn chance(&mut self, percent: u32) -> bool {
        self.next() % 100 < percent
    }
    fn pick<T: Clone>(&mut self, v: &[T]) -> T {
        v[self.below(v.len())].clone()
    }
    /// A random subset of `v` in random order, of size `min..=max` (clamped to `v.len()`).
    fn subset<T: Clone>(&mut self, v: &[T], min: usize, max: usize) -> Vec<T> {
        let mut rest: Vec<T> = v.to_vec();
        let max = max.min(rest.len());
        let min = min.min(max);
        let k = min + self.below(max - min + 1);
        (0..k)
            .map(|_| rest.remove(self.below(rest.len())))
            .collect()
    }
}

struct Gen<'a> {
    g: Graph,
    c: Choices<'a>,
    cfg: GraphConfig,
    /// Intended lengths of declared axes, bound or not.
    lens: HashMap<AxisId, usize>,
    pool: Vec<NodeId>,
    names: usize,
    stats: DrawStats,
}

/// Huge axis lengths and window taps ([`GraphConfig::extreme_windows`]).
const EXTREME_LENS: [usize; 5] = [1 << 28, 1 << 32, 1 << 40, u32::MAX as usize, (1 << 32) + 1];
/// Huge strides, dilations and paddings: past `u32`, near and past `i64::MAX`, `usize::MAX`.
const EXTREME_STEPS: [usize; 8] = [
    1 << 28,
    u32::MAX as usize,
    1 << 32,
    1 << 40,
    i64::MAX as usize - 1,
    i64::MAX as usize,
    i64::MAX as usize + 1,
    usize::MAX,
];

const AXIS_NAMES: [&str; 6] = ["N", "C", "H", "W", "B", "K"];
const ODD_AXIS_NAMES: [&str; 9] = [
    "",
    "axis",
    "my axis",
    "H*",
    "q\"uo\\te\n",
    "é",
    "H@1",
    "%3",
    "1x",
];
const ODD_NODE_NAMES: [&str; 10] = [
    "x",
    "output",
    "axis",
    "two words",
    "\"q\"",
    "%1",
    "",
    "f32",
    "nan",
    "a\tb",
];

impl Gen<'_> {
    fn run(&mut self) {
        let n_axes = 1 + self.c.below(self.cfg.max_axes.max(1));
        for _ in 0..n_axes {
            self.declare_axis();
        }
        let (lo, hi) = (
            self.cfg.min_nodes.min(self.cfg.max_nodes),
            self.cfg.max_nodes,
        );
        let n_nodes = lo + self.c.below(hi - lo + 1);
        for _ in 0..n_nodes {
            let kind = if self.cfg.extreme_windows {
                self.extreme_kind()
            } else if self.pool.is_empty() || self.c.chance(15) {
                0
            } else {
                1 + self.c.below(OP_KINDS.len() - 1)
            };
            if kind == 18 && !self.cfg.assigns {
                continue;
            }
            let Some(result) = self.draw_op(kind) else {
                continue;
            };
            match result {
                Ok(id) => {
                    self.stats.built[kind] += 1;
                    if kind != 0 && self.c.chance(30) {
                        if let Some(name) = self.node_name() {
                            let _ = self.g.set_name(id, &name);
                        }
                    }
                    // Keep ranks small so that the graphs stay cheap to evaluate.
                    if self.g.node(id).axes.len() <= 4 {
                        self.pool.push(id);
                    }
                }
                Err(_) => self.stats.rejected[kind] += 1,
            }
            if self.cfg.odd_names && self.c.chance(3) {
                let id = AxisId::from_u32(self.c.below(self.g.axis_table().len()) as u32);
                let name = self.axis_name();
                self.g.rename_axis(id, &name);
            }
        }
        let n_out = self.c.below(4);
        for _ in 0..n_out.min(self.g.len()) {
            let id = NodeId::from_u32(self.c.below(self.g.len()) as u32);
            let _ = self.g.mark_output(id);
        }
    }

    // ---- names -----------------------------------------------------------------------------

    /// A name no declared axis has (the API refuses a second axis of one name): an odd or
    /// common one when the configuration asks, numbered when already taken.
    fn axis_name(&mut self) -> String {
        let n = self.g.axis_table().len();
        let name = if self.cfg.odd_names && self.c.chance(30) {
            self.c.pick(&ODD_AXIS_NAMES).to_string()
        } else if self.cfg.odd_names {
            self.c.pick(&AXIS_NAMES).to_string()
        } else {
            format!("A{n}")
        };
        let taken = self
            .g
            .axis_table()
            .any(|(_, d)| d.name == name && matches!(d.def, AxisDef::Base { .. }));
        if taken {
            format!("{name}{n}")
        } else {
            name
        }
    }

    /// A fresh node name, or `None` for an unnamed node.
    fn node_name(&mut self) -> Option<String> {
        self.names += 1;
        let name = if self.cfg.odd_names && self.c.chance(25) {
            if self.c.chance(40) {
                return None;
            }
            self.c.pick(&ODD_NODE_NAMES).to_string()
        } else {
            format!("t{}", self.names)
        };
        if self.g.find(&name).is_some() {
            return Some(format!("t{}", self.names));
        }
        Some(name)
    }

    // ---- axes ------------------------------------------------------------------------------

    fn declare_axis(&mut self) {
        let name = self.axis_name();
        let len = if self.cfg.extreme_windows {
            self.extreme_len()
        } else if self.cfg.huge_lengths > 0 && self.c.chance(self.cfg.huge_lengths) {
            self.huge_len()
        } else {
            1 + self.c.below(7)
        };
        let roles: Vec<Role> = (0..self.c.below(3))
            .map(|_| match self.c.below(8) {
                0 => Role::Height,
                1 => Role::Width,
                2 => Role::Channel,
                3 => Role::Time,
                4 => Role::User("user_role".into()),
                5 if self.cfg.odd_names => Role::User("Height".into()),
                6 if self.cfg.odd_names => Role::User("odd role".into()),
                _ => Role::Depth,
            })
            .collect();
        let bound = !self.cfg.unbound_axes || self.c.chance(75);
        if let Ok(a) = self.g.axis_with_roles(&name, bound.then_some(len), roles) {
            self.lens.insert(a.id, len);
        }
    }

    /// The intended length of an axis (declared lengths may be unbound in the graph).
    fn len(&self, a: Axis) -> usize {
        match &self.g.axis_data(a.id).def {
            AxisDef::Base { .. } => self.lens.get(&a.id).copied().unwrap_or(1),
            AxisDef::Slice { of, range } => {
                range.resolve(self.len(*of)).map(|r| r.len).unwrap_or(1)
            }
            AxisDef::Pad { of, before, after } => {
                self.len(*of).saturating_add(*before).saturating_add(*after)
            }
            AxisDef::Flatten(parts) => parts.iter().fold(1, |n, p| n.saturating_mul(self.len(*p))),
            AxisDef::Concat(parts) => parts.iter().fold(0, |n, p| n.saturating_add(self.len(*p))),
            AxisDef::Window { of, kernel, step } => {
                let taps = match kernel {
                    weft_ir::axis::WindowKernel::Len(n) => *n,
                    weft_ir::axis::WindowKernel::Axis(k) => self.len(*k),
                };
                weft_ir::axis::window_len(self.len(*of), taps, step).unwrap_or(1)
            }
            AxisDef::Features(of) => self.len(*of),
        }
    }

    /// Any axis of the table, mostly plain, sometimes a dual.
    fn any_axis(&mut self) -> Axis {
        let id = AxisId::from_u32(self.c.below(self.g.axis_table().len()) as u32);
        let dual = match self.c.below(10) {
            0 => 1,
            1 => -1,
            2 => 2,
            _ => 0,
        };
        self.g.axis_of(id).with_dual(dual)
    }

    /// Up to `max` distinct axes, keeping tensors small.
    fn some_axes(&mut self, max: usize) -> Vec<Axis> {
        let mut v: Vec<Axis> = Vec::new();
        let count = if self.c.chance(15) {
            0
        } else {
            1 + self.c.below(max)
        };
        for _ in 0..count {
            let a = self.any_axis();
            if !v.contains(&a) && self.len(a) <= 12 {
                v.push(a);
            }
        }
        v
    }

    // ---- values ----------------------------------------------------------------------------

    fn f64_value(&mut self) -> f64 {
        if self.cfg.special_values && self.c.chance(20) {
            self.c.pick(&[
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                -0.0,
                f64::MIN_POSITIVE,
                5e-324,
                1e300,
                f64::MAX,
                0.1,
            ])
        } else if self.cfg.special_values && self.c.chance(30) {
            let bits = ((self.c.next() as u64) << 32) | self.c.next() as u64;
            f64::from_bits(bits)
        } else {
            (self.c.below(2001) as f64 - 1000.0) / 64.0
        }
    }

    fn f32_value(&mut self) -> f32 {
        if self.cfg.special_values && self.c.chance(30) {
            f32::from_bits(self.c.next())
        } else {
            self.f64_value() as f32
        }
    }

    fn i64_value(&mut self, dtype: DType) -> i64 {
        let extreme = self.cfg.special_values && self.c.chance(20);
        match (dtype, extreme) {
            (DType::I32, true) => self.c.pick(&[i32::MIN as i64, i32::MAX as i64, -1]),
            (DType::I32, false) => self.c.below(41) as i64 - 20,
            (_, true) => {
                let wide = ((self.c.next() as i64) << 32) - 7;
                self.c.pick(&[i64::MIN, i64::MAX, wide])
            }
            (_, false) => self.c.below(41) as i64 - 20,
        }
    }

    fn scalar(&mut self, dtype: DType) -> Scalar {
        match dtype {
            DType::F32 => Scalar::Float(self.f32_value() as f64),
            DType::F64 => Scalar::Float(self.f64_value()),
            DType::I32 | DType::I64 => Scalar::Int(self.i64_value(dtype)),
            DType::Bool => Scalar::Bool(self.c.chance(50)),
        }
    }

    fn data(&mut self, dtype: DType, n: usize) -> ArrayData {
        match dtype {
            DType::F32 => ArrayData::F32((0..n).map(|_| self.f32_value()).collect()),
            DType::F64 => ArrayData::F64((0..n).map(|_| self.f64_value()).collect()),
            DType::I32 => ArrayData::I32((0..n).map(|_| self.i64_value(dtype) as i32).collect()),
            DType::I64 => ArrayData::I64((0..n).map(|_| self.i64_value(dtype)).collect()),
            DType::Bool => ArrayData::Bool((0..n).map(|_| self.c.chance(50)).collect()),
        }
    }

    // ---- ops -------------------------------------------------------------------------------

    fn pick_node(&mut self, ok: impl Fn(&Graph, NodeId) -> bool) -> Option<NodeId> {
        let candidates: Vec<NodeId> = self
            .pool
            .iter()
            .copied()
            .filter(|n| ok(&self.g, *n))
            .collect();
        if candidates.is_empty() {
            None
        } else if self.cfg.chain_bias > 0 && self.c.chance(self.cfg.chain_bias) {
            Some(
                self.c
                    .pick(&candidates[candidates.len().saturating_sub(8)..]),
            )
        } else {
            Some(self.c.pick(&candidates))
        }
    }

    fn dtype_of(&self, n: NodeId) -> DType {
        self.g.node(n).dtype
    }

    fn axes_of(&self, n: NodeId) -> Vec<Axis> {
        self.g.node(n).axes.as_slice().to_vec()
    }

    /// Draws one node of kind `OP_KINDS[kind]`; `None` if the pool has no suitable operands.
    fn draw_op(&mut self, kind: usize) -> Option<Result<NodeId, GraphError>> {
        Some(match OP_KINDS[kind] {
            "tensor" => self.tensor(),
            "unary" => {
                let x = self.pick_node(|g, n| g.node(n).dtype.is_numeric())?;
                let float = self.dtype_of(x).is_float();
                let ops: Vec<UnaryOp> = UnaryOp::ALL
                    .iter()
                    .copied()
                    .filter(|u| {
                        float
                            || matches!(
                                u,
                                UnaryOp::Negative
                                    | UnaryOp::Abs
                                    | UnaryOp::Square
                                    | UnaryOp::Sign
                                    | UnaryOp::Relu
                            )
                    })
                    .collect();
                let op = self.c.pick(&ops);
                self.g.unary(op, x)
            }
            "binary" => {
                let x = self.pick_node(|g, n| g.node(n).dtype.is_numeric())?;
                let d = self.dtype_of(x);
                let y = self.pick_node(|g, n| g.node(n).dtype == d)?;
                let op = self.c.pick(BinaryOp::ALL);
                self.g.binary(op, x, y)
            }
            "compare" => {
                let x = self.pick_node(|_, _| true)?;
                let d = self.dtype_of(x);
                let y = self.pick_node(|g, n| g.node(n).dtype == d)?;
                let op = self.c.pick(CompareOp::ALL);
                self.g.compare(op, x, y)
            }
            "select" => {
                let cond = self.pick_node(|g, n| g.node(n).dtype == DType::Bool)?;
                let a = self.pick_node(|_, _| true)?;
                let d = self.dtype_of(a);
                let b = self.pick_node(|g, n| g.node(n).dtype == d)?;
                self.g.select(cond, a, b)
            }
            "convert" => {
                let x = self.pick_node(|_, _| true)?;
                let d = self.c.pick(&DType::ALL);
                self.g.convert(x, d)
            }
            "reduce" => {
                let x = self.pick_node(|_, _| true)?;
                let d = self.dtype_of(x);
                let ops: Vec<ReduceOp> = ReduceOp::ALL
                    .iter()
                    .copied()
                    .filter(|r| match r {
                        ReduceOp::Sum | ReduceOp::Prod => d.is_numeric(),
                        ReduceOp::Mean => d.is_float(),
                        _ => true,
                    })
                    .collect();
                let op = self.c.pick(&ops);
                let axes = self.axes_of(x);
                let red = self.c.subset(&axes, 0, axes.len());
                let out = if self.c.chance(40) {
                    let rest: Vec<Axis> =
                        axes.iter().copied().filter(|a| !red.contains(a)).collect();
                    Some(self.c.subset(&rest, rest.len(), rest.len()))
                } else {
                    None
                };
                self.g.reduce(op, x, &red, out.as_deref())
            }
            "dot" => {
                let x = self.pick_node(|g, n| g.node(n).dtype.is_numeric())?;
                let d = self.dtype_of(x);
                let y = self.pick_node(|g, n| g.node(n).dtype == d)?;
                let (l, r) = (self.g.node(x).axes.clone(), self.g.node(y).axes.clone());
                self.g.dot_pairs("dot", &l, &r).ok()?;
                self.g.dot(x, y)
            }
            "broadcast" => {
                let x = self.pick_node(|_, _| true)?;
                let mut axes = self.axes_of(x);
                for a in self.some_axes(2) {
                    if !axes.contains(&a) {
                        axes.push(a);
                    }
                }
                let axes = self.c.subset(&axes, axes.len(), axes.len());
                self.g.broadcast(x, &axes)
            }
            "axes_with_order" => {
                let x = self.pick_node(|_, _| true)?;
                let axes = self.axes_of(x);
                let axes = self.c.subset(&axes, axes.len(), axes.len());
                self.g.axes_with_order(x, &axes)
            }
            "cast_axes" => {
                let x = self.pick_node(|_, _| true)?;
                let table: Vec<Axis> = self
                    .g
                    .axis_table()
                    .flat_map(|(id, _)| [self.g.axis_of(id), self.g.axis_of(id).dual()])
                    .collect();
                let mut out: Vec<Axis> = Vec::new();
                for a in self.axes_of(x) {
                    let len = self.len(a);
                    let mut same: Vec<Axis> = table
                        .iter()
                        .copied()
                        .filter(|b| self.len(*b) == len && !out.contains(b))
                        .collect();
                    if !out.contains(&a) {
                        same.push(a);
                    }
                    if same.is_empty() {
                        return None;
                    }
                    out.push(self.c.pick(&same));
                }
                self.g.cast_axes(x, &out)
            }
            "transpose" => {
                let x = self.pick_node(|_, _| true)?;
                self.g.transpose(x)
            }
            "slice" => {
                let x = self.pick_node(|g, n| !g.node(n).axes.is_empty())?;
                let axes = self.axes_of(x);
                let chosen = self.c.subset(&axes, 1, 2);
                let slices: Vec<(Axis, AxisSlice)> = chosen
                    .into_iter()
                    .map(|a| {
                        let len = self.len(a);
                        let s = if self.c.chance(25) {
                            AxisSlice::Index(self.c.below(2 * len) as i64 - len as i64)
                        } else {
                            AxisSlice::Range(self.range(len))
                        };
                        (a, s)
                    })
                    .collect();
                self.g.slice(x, &slices)
            }
            "flatten" => {
                let x = self.pick_node(|g, n| g.node(n).axes.len() >= 2)?;
                let axes = self.axes_of(x);
                let group = self.c.subset(&axes, 2, 3);
                self.g.flatten(x, &group)
            }
            "unflatten" => {
                // A flattened axis whose parts are not already among the tensor's axes.
                let splittable = |g: &Graph, n: NodeId, a: &Axis| {
                    let axes = &g.node(n).axes;
                    a.dual == 0
                        && matches!(&g.axis_data(a.id).def,
                            AxisDef::Flatten(parts) if parts.iter().all(|p| !axes.contains(*p)))
                };
                let x =
                    self.pick_node(|g, n| g.node(n).axes.iter().any(|a| splittable(g, n, a)))?;
                let flat: Vec<Axis> = self
                    .axes_of(x)
                    .into_iter()
                    .filter(|a| splittable(&self.g, x, a))
                    .collect();
                let a = self.c.pick(&flat);
                self.g.unflatten(x, a)
            }
            "pad" => {
                let x = self.pick_node(|g, n| !g.node(n).axes.is_empty())?;
                let axes = self.axes_of(x);
                let chosen = self.c.subset(&axes, 1, 2);
                let pads: Vec<(Axis, usize, usize)> = chosen
                    .into_iter()
                    .map(|a| (a, self.c.below(3), self.c.below(3)))
                    .collect();
                self.g.pad(x, &pads)
            }
            "concat" => {
                let x = self.pick_node(|g, n| !g.node(n).axes.is_empty())?;
                let axes = self.axes_of(x);
                let a = self.c.pick(&axes);
                let d = self.dtype_of(x);
                let rest = self
                    .g
                    .node(x)
                    .axes
                    .difference(&weft_ir::axis::Axes::new([a]).ok()?);
                let mut candidates: Vec<(NodeId, Axis)> = Vec::new();
                for &y in &self.pool {
                    let node = self.g.node(y);
                    if node.dtype != d {
                        continue;
                    }
                    for b in node.axes.iter() {
                        let others: Vec<Axis> =
                            node.axes.iter().copied().filter(|c| c != b).collect();
                        if weft_ir::axis::Axes::new(others).is_ok_and(|o| o.is_equal_set(&rest)) {
                            candidates.push((y, *b));
                        }
                    }
                }
                let mut parts = vec![(x, a)];
                let extra = if candidates.is_empty() {
                    0
                } else {
                    self.c.below(3)
                };
                for _ in 0..extra {
                    parts.push(self.c.pick(&candidates));
                }
                self.g.concat(&parts)
            }
            "expand_dims" => {
                let x = self.pick_node(|_, _| true)?;
                let a = self.any_axis();
                if self.len(a) > 12 || self.g.node(x).axes.contains(a) {
                    return None;
                }
                let pos = self.c.below(self.g.node(x).axes.len() + 1);
                self.g.expand_dims(x, a, pos)
            }
            "assign" => {
                let t = self.pick_node(|g, n| {
                    matches!(
                        g.node(n).op,
                        Op::Tensor {
                            kind: TensorKind::Variable | TensorKind::PersistentTensor,
                            ..
                        }
                    )
                })?;
                let (axes, d) = (self.g.node(t).axes.clone(), self.dtype_of(t));
                let v = self
                    .pick_node(|g, n| g.node(n).dtype == d && g.node(n).axes.is_equal_set(&axes))?;
                self.g.assign(t, v)
            }
            "convolution" => {
                let x = match self.pick_node(|g, n| conv_input(g, n).is_some()) {
                    Some(x) if self.c.chance(60) => x,
                    _ => self.image()?,
                };
                if self.cfg.extreme_windows {
                    self.extreme_convolution(x)
                } else {
                    self.convolution(x)
                }
            }
            "pool" if self.cfg.extreme_windows => {
                let poolable =
                    |g: &Graph, n| g.node(n).dtype.is_float() && !pool_roles(g, n).is_empty();
                let x = match self.pick_node(poolable) {
                    Some(x) if self.c.chance(70) => x,
                    _ => self.image()?,
                };
                self.extreme_pool(x)
            }
            "pool" => {
                let x = self
                    .pick_node(|g, n| g.node(n).dtype.is_float() && !pool_roles(g, n).is_empty())?;
                self.pool(x)
            }
            other => unreachable!("OP_KINDS has no draw for {other}"),
        })
    }

    /// A new axis with one role and an intended length (bound, or sometimes not).
    fn role_axis(&mut self, role: Role, len: usize) -> Option<Axis> {
        let name = self.axis_name();
        let bound = !self.cfg.unbound_axes || self.c.chance(75);
        let a = self
            .g
            .axis_with_roles(&name, bound.then_some(len), vec![role])
            .ok()?;
        self.lens.insert(a.id, len);
        Some(a)
    }

    /// A new float placeholder a convolution can take: a Channel axis, one to three new
    /// spatial axes of distinct roles, and sometimes an axis of the table as a batch axis.
    fn image(&mut self) -> Option<NodeId> {
        let mut axes = Vec::new();
        if self.c.chance(60) {
            let b = self.any_axis();
            let plain = b.dual == 0 && self.g.axis_data(b.id).roles.is_empty();
            if plain && self.len(b) <= 4 {
                axes.push(b);
            }
        }
        let channels = if self.cfg.extreme_windows && self.c.chance(20) {
            self.c.pick(&[0, 1, 6])
        } else {
            1 + self.c.below(4)
        };
        axes.push(self.role_axis(Role::Channel, channels)?);
        let spatial = self
            .c
            .subset(&weft_ir::graph::convolution::SPATIAL_ROLES, 1, 2);
        for r in spatial {
            let len = if self.cfg.extreme_windows {
                self.extreme_len()
            } else {
                1 + self.c.below(6)
            };
            axes.push(self.role_axis(r, len)?);
        }
        let n = axes.len();
        for i in (1..n).rev() {
            axes.swap(i, self.c.below(i + 1));
        }
        let dtype = self.c.pick(&[DType::F32, DType::F64]);
        let name = format!("image{}", self.g.len());
        let x = self.g.placeholder(&name, &axes, dtype).ok()?;
        self.pool.push(x);
        Some(x)
    }

    /// A convolution of `x` (which [`conv_input`] accepts) with a new filter placeholder whose
    /// axes pair with `x`'s by role: random taps, strides, dilations, paddings, groups.
    fn convolution(&mut self, x: NodeId) -> Result<NodeId, GraphError> {
        let Some((channel, spatial)) = conv_input(&self.g, x) else {
            return Err(GraphError::Argument {
                op: "convolution".into(),
                message: "the generator picked an input it cannot pair".into(),
            });
        };
        let c_len = self.len(channel);
        let groups = if c_len.is_multiple_of(2) && self.c.chance(25) {
            2
        } else {
            1
        };
        let mut filter = Vec::new();
        let per_group = 1 + self.c.below(2);
        let k = self.role_axis(Role::Channelout, groups * per_group);
        filter.extend(k);
        let j = if groups == 1 && self.c.chance(50) {
            Some(channel)
        } else {
            self.role_axis(Role::Channel, c_len / groups)
        };
        filter.extend(j);
        let mut spec = weft_ir::graph::ConvSpec::new().groups(groups);
        for (a, role) in spatial {
            let (before, after) = (self.c.below(2), self.c.below(2));
            let dilation = 1 + self.c.below(2);
            let room = self.len(a) + before + after;
            let taps = (1 + self.c.below(3)).min((room - 1) / dilation + 1).max(1);
            filter.extend(self.role_axis(role.clone(), taps));
            spec = spec
                .stride(role.clone(), 1 + self.c.below(2))
                .dilation(role.clone(), dilation)
                .pad(role, before, after);
        }
        let dtype = self.dtype_of(x);
        let name = self.node_name();
        let f = self
            .g
            .placeholder(name.as_deref().unwrap_or("filter"), &filter, dtype);
        let f = match f {
            Ok(f) => f,
            Err(_) => {
                let unnamed = format!("filter{}", self.g.len());
                self.g.placeholder(&unnamed, &filter, dtype)?
            }
        };
        self.g.convolution(x, f, &spec)
    }

    /// A max or average pool of `x` over one of its roles ([`pool_roles`]).
    fn pool(&mut self, x: NodeId) -> Result<NodeId, GraphError> {
        let roles = pool_roles(&self.g, x);
        let (a, role) = self.c.pick(&roles);
        let kind = if self.c.chance(50) {
            weft_ir::graph::PoolKind::Max
        } else {
            weft_ir::graph::PoolKind::Avg
        };
        let len = self.len(a);
        let taps = 1 + self.c.below(len.min(3));
        let spec = weft_ir::graph::PoolSpec::new(kind)
            .window(role.clone(), taps)
            .stride(role.clone(), 1 + self.c.below(2))
            .pad(role, self.c.below(taps), self.c.below(taps));
        self.g.pool(x, &spec)
    }

    // ---- extreme windows ---------------------------------------------------------------

    /// An op kind for [`GraphConfig::extreme_windows`]: mostly convolutions and pools, some
    /// stored tensors and elementwise ops, reductions and pads between them.
    fn extreme_kind(&mut self) -> usize {
        let name = if self.pool.is_empty() {
            "tensor"
        } else {
            self.c.pick(&[
                "tensor",
                "unary",
                "binary",
                "reduce",
                "pad",
                "convolution",
                "convolution",
                "pool",
                "pool",
                "pool",
            ])
        };
        OP_KINDS.iter().position(|k| *k == name).unwrap_or(0)
    }

    /// A huge axis length, 2²⁰ to 2⁶² (a power of two, or one more: odd, no divisor search
    /// ends early), or now and then 0 ([`GraphConfig::huge_lengths`]).
    fn huge_len(&mut self) -> usize {
        if self.c.chance(10) {
            return 0;
        }
        (1usize << (20 + self.c.below(43))) + usize::from(self.c.chance(30))
    }

    /// An axis length: small (0 to 3) or huge (2²⁸ to 2⁴⁰).
    fn extreme_len(&mut self) -> usize {
        if self.c.chance(50) {
            self.c.below(4)
        } else {
            self.c.pick(&EXTREME_LENS)
        }
    }

    /// A stride, dilation or padding: mostly small, sometimes huge.
    fn extreme_step(&mut self, small: usize) -> usize {
        if self.c.chance(70) {
            self.c.below(small + 1)
        } else {
            self.c.pick(&EXTREME_STEPS)
        }
    }

    /// A window's taps over `padded` positions spaced `dilation` apart: 1, 2, all that fit
    /// (the window as long as the padded axis when `dilation` is 1), or huge.
    fn extreme_taps(&mut self, padded: usize, dilation: usize) -> usize {
        let fit = padded.saturating_sub(1) / dilation.max(1) + 1;
        match self.c.below(5) {
            0 => 1,
            1 => 2,
            2 | 3 => fit,
            _ => self.c.pick(&EXTREME_LENS),
        }
    }

    /// The step of one window axis of length `len`: stride, dilation, padding before and after.
    fn extreme_window_step(&mut self, len: usize) -> (WindowStep, usize) {
        let mut pad = || {
            if self.c.chance(88) {
                self.c.below(2)
            } else {
                self.c.pick(&EXTREME_STEPS)
            }
        };
        let (before, after) = (pad(), pad());
        let step = WindowStep {
            stride: self.extreme_step(2).max(1),
            dilation: self.extreme_step(2).max(1),
            before,
            after,
        };
        let padded = len.saturating_add(step.before).saturating_add(step.after);
        (step, padded)
    }

    /// A convolution of `x` ([`conv_input`]) with extreme strides, dilations, paddings, taps
    /// and groups, and a new filter placeholder (its axes sometimes unbound).
    fn extreme_convolution(&mut self, x: NodeId) -> Result<NodeId, GraphError> {
        let Some((channel, spatial)) = conv_input(&self.g, x) else {
            return Err(GraphError::Argument {
                op: "convolution".into(),
                message: "the generator picked an input it cannot pair".into(),
            });
        };
        let c_len = self.len(channel);
        let groups = self.c.pick(&[1, 1, 1, 2, c_len.max(1), EXTREME_STEPS[3]]);
        let per_group = self.c.below(3);
        let mut filter = Vec::new();
        filter.extend(self.role_axis(Role::Channelout, groups.saturating_mul(per_group)));
        if groups == 1 && self.c.chance(50) {
            filter.push(channel);
        } else {
            filter.extend(self.role_axis(Role::Channel, c_len / groups));
        }
        let mut spec = weft_ir::graph::ConvSpec::new().groups(groups);
        for (a, role) in spatial {
            let (step, padded) = self.extreme_window_step(self.len(a));
            let taps = self.extreme_taps(padded, step.dilation);
            filter.extend(self.role_axis(role.clone(), taps));
            spec = spec
                .stride(role.clone(), step.stride)
                .dilation(role.clone(), step.dilation)
                .pad(role, step.before, step.after);
        }
        let dtype = self.dtype_of(x);
        let name = format!("filter{}", self.g.len());
        let f = self.g.placeholder(&name, &filter, dtype)?;
        self.g.convolution(x, f, &spec)
    }

    /// A max or average pool of `x` over one or two of its roles ([`pool_roles`]), with
    /// extreme windows, strides, dilations and paddings.
    fn extreme_pool(&mut self, x: NodeId) -> Result<NodeId, GraphError> {
        let roles = pool_roles(&self.g, x);
        let kind = if self.c.chance(50) {
            weft_ir::graph::PoolKind::Max
        } else {
            weft_ir::graph::PoolKind::Avg
        };
        let mut spec = weft_ir::graph::PoolSpec::new(kind);
        for (a, role) in self.c.subset(&roles, 1, 2) {
            let (step, padded) = self.extreme_window_step(self.len(a));
            let taps = self.extreme_taps(padded, step.dilation);
            spec = spec
                .window(role.clone(), taps)
                .stride(role.clone(), step.stride)
                .dilation(role.clone(), step.dilation)
                .pad(role, step.before, step.after);
        }
        self.g.pool(x, &spec)
    }

    /// The gradient of the sum (or mean) of a float node — a convolution or pool when there is
    /// one — with respect to one or two float stored tensors it reads, the nodes named.
    fn grad_request(&mut self) -> Option<GradRequest> {
        let windowed =
            |g: &Graph, n: NodeId| matches!(g.node(n).op, Op::Convolution { .. } | Op::Pool { .. });
        let ids: Vec<NodeId> = self.g.nodes().map(|(id, _)| id).collect();
        let floats: Vec<NodeId> = ids
            .iter()
            .copied()
            .filter(|n| self.g.node(*n).dtype.is_float() && !self.reads(*n).is_empty())
            .collect();
        let preferred: Vec<NodeId> = floats
            .iter()
            .copied()
            .filter(|n| windowed(&self.g, *n))
            .collect();
        if floats.is_empty() || self.c.chance(30) {
            return None;
        }
        let y = self.c.pick(if preferred.is_empty() {
            &floats
        } else {
            &preferred
        });
        let axes = self.axes_of(y);
        let op = self.c.pick(&[ReduceOp::Sum, ReduceOp::Mean]);
        let loss = self.g.reduce(op, y, &axes, None).ok()?;
        self.g.set_name(loss, "loss").ok()?;
        let reads = self.reads(y);
        let wrt = self.c.subset(&reads, 1, 2);
        for &w in &wrt {
            if self.g.node(w).name.is_none() {
                self.g.set_name(w, &format!("gx{}", w.as_u32())).ok()?;
            }
        }
        Some(GradRequest { loss, wrt })
    }

    /// The float placeholders and variables `y` depends on (itself included), in node order.
    fn reads(&self, y: NodeId) -> Vec<NodeId> {
        let seen = self.g.ancestors(&[y]);
        self.g
            .nodes()
            .filter(|(id, node)| {
                seen[id.as_u32() as usize]
                    && node.dtype.is_float()
                    && matches!(
                        node.op,
                        Op::Tensor {
                            kind: TensorKind::Placeholder | TensorKind::Variable,
                            ..
                        }
                    )
            })
            .map(|(id, _)| id)
            .collect()
    }

    fn tensor(&mut self) -> Result<NodeId, GraphError> {
        let kind = self.c.pick(&[
            TensorKind::Placeholder,
            TensorKind::Placeholder,
            TensorKind::Constant,
            TensorKind::Variable,
            TensorKind::PersistentTensor,
        ]);
        let axes = self.some_axes(3);
        let dtype = self.c.pick(&DType::ALL);
        let lengths: Vec<usize> = axes.iter().map(|a| self.len(*a)).collect();
        let n = weft_ir::size::element_count(&lengths);
        // With huge lengths, drawn element by element only when small (else a fill); the
        // other configurations read the same choices as ever.
        let big = self.cfg.huge_lengths > 0 && n.is_none_or(|n| n > 1 << 16);
        let init = match kind {
            TensorKind::Placeholder => None,
            TensorKind::PersistentTensor if self.c.chance(40) => None,
            _ if big || self.c.chance(50) => Some(TensorInit::Fill(self.scalar(dtype))),
            _ => Some(TensorInit::data(self.data(dtype, n.unwrap_or(0)))),
        };
        let name = if kind == TensorKind::Constant && self.c.chance(50) {
            None
        } else {
            self.node_name()
        };
        self.g.tensor(kind, name.as_deref(), &axes, dtype, init)
    }

    /// A valid, non-empty range over an axis of length `len`, written in one of the ways that
    /// select it (negative bounds, omitted bounds, negative steps).
    fn range(&mut self, len: usize) -> SliceRange {
        let n = len as i64;
        let step = self.c.pick(&[1i64, 1, 2, 3, -1, -2]);
        let first = self.c.below(len) as i64;
        let max_count = if step > 0 {
            (n - 1 - first) / step + 1
        } else {
            first / -step + 1
        };
        let count = 1 + self.c.below(max_count as usize) as i64;
        let last = first + (count - 1) * step;
        let default_first = if step > 0 { 0 } else { n - 1 };
        let start = match self.c.below(3) {
            0 if first == default_first => None,
            1 => Some(first - n),
            _ => Some(first),
        };
        let stop_index = if step > 0 { last + 1 } else { last - 1 };
        let stop = if stop_index == n || stop_index == -1 {
            if stop_index == n && self.c.chance(50) {
                Some(n)
            } else {
                None
            }
        } else if self.c.chance(50) {
            Some(stop_index - n)
        } else {
            Some(stop_index)
        };
        SliceRange { start, stop, step }
    }
}

/// The Channel axis and the spatial axes (with their role) of a float node a convolution can
/// take: exactly one Channel axis without a spatial role, at least one spatial axis, no axis
/// with two spatial roles, no spatial role twice.
fn conv_input(g: &Graph, n: NodeId) -> Option<(Axis, Vec<(Axis, Role)>)> {
    use weft_ir::graph::convolution::SPATIAL_ROLES;
    let node = g.node(n);
    if !node.dtype.is_float() {
        return None;
    }
    let roles = |a: &Axis| g.axis_data(a.id).roles.clone();
    let channels: Vec<Axis> = node
        .axes
        .iter()
        .filter(|a| roles(a).contains(&Role::Channel))
        .copied()
        .collect();
    let [channel] = channels[..] else {
        return None;
    };
    let mut spatial: Vec<(Axis, Role)> = Vec::new();
    for a in node.axes.iter() {
        let sp: Vec<Role> = roles(a)
            .into_iter()
            .filter(|r| SPATIAL_ROLES.contains(r))
            .collect();
        match sp.as_slice() {
            [] => {}
            [r] if *a != channel && a.dual == 0 && !spatial.iter().any(|(_, q)| q == r) => {
                spatial.push((*a, r.clone()))
            }
            _ => return None,
        }
    }
    (!spatial.is_empty() && channel.dual == 0).then_some((channel, spatial))
}

/// The roles of a node's axes that name exactly one of them (what a pool may take), with it.
fn pool_roles(g: &Graph, n: NodeId) -> Vec<(Axis, Role)> {
    let axes = &g.node(n).axes;
    let mut out: Vec<(Axis, Role)> = Vec::new();
    for a in axes.iter() {
        for r in &g.axis_data(a.id).roles {
            let holders = axes
                .iter()
                .filter(|b| g.axis_data(b.id).roles.contains(r))
                .count();
            let pooled_twice = out.iter().any(|(b, _)| b == a);
            if holders == 1 && a.dual == 0 && !pooled_twice {
                out.push((*a, r.clone()));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;

    #[test]
    fn every_op_kind_is_drawn_and_rarely_rejected() {
        let mut total = DrawStats::default();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = proptest::collection::vec(any::<u32>(), 1536);
        for _ in 0..300 {
            let choices = strategy.new_tree(&mut runner).unwrap().current();
            let (_, stats) = draw(&choices, &GraphConfig::default());
            for k in 0..OP_KINDS.len() {
                total.built[k] += stats.built[k];
                total.rejected[k] += stats.rejected[k];
            }
        }
        for (k, name) in OP_KINDS.iter().enumerate() {
            assert!(total.built[k] > 0, "{name} never built: {total:?}");
            assert!(
                total.rejected[k] * 10 <= total.built[k],
                "{name} rejected too often: {total:?}"
            );
        }
    }

    #[test]
    fn large_graphs_have_hundreds_of_nodes_and_verify() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let config = GraphConfig::large();
        let strategy = proptest::collection::vec(any::<u32>(), config.choice_len());
        let mut sizes = Vec::new();
        for _ in 0..10 {
            let choices = strategy.new_tree(&mut runner).unwrap().current();
            let g = graph_from_choices(&choices, &config);
            if let Err(e) = g.verify() {
                panic!("{e}\n{g}");
            }
            sizes.push(g.len());
        }
        assert!(sizes.iter().all(|n| *n >= 80), "{sizes:?}");
        assert!(sizes.iter().any(|n| *n >= 200), "{sizes:?}");
    }

    #[test]
    fn extreme_windows_draw_windows_with_extreme_parameters_and_gradients() {
        let config = GraphConfig::extreme_windows();
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = proptest::collection::vec(any::<u32>(), config.choice_len());
        let (mut conv, mut pool, mut grads, mut unbound, mut huge) = (0, 0, 0, 0, 0);
        let mut rej = (0, 0);
        for _ in 0..200 {
            let choices = strategy.new_tree(&mut runner).unwrap().current();
            let (g, stats) = draw(&choices, &config);
            conv += stats.built[19];
            pool += stats.built[20];
            rej.0 += stats.rejected[19];
            rej.1 += stats.rejected[20];
            let text = text_from_choices(&choices, &config);
            grads += usize::from(text.contains(" = grad(loss, "));
            let free = |d: &weft_ir::axis::AxisData| matches!(d.def, AxisDef::Base { len: None });
            unbound += usize::from(g.axis_table().any(|(_, d)| free(d)));
            huge +=
                usize::from(text.contains("18446744073709551615") || text.contains("= 4294967296"));
            // The graph's text (without the gradient) parses back.
            let printed = weft_ir::text::print(&g);
            if let Err(e) = weft_ir::text::parse(&printed, "extreme.weft") {
                panic!("{}\n{printed}", e.render(&printed));
            }
        }
        assert!(
            conv >= 100 && pool >= 100,
            "{conv} convolutions, {pool} pools, rejected {rej:?}"
        );
        assert!(
            grads >= 40 && unbound >= 40 && huge >= 40,
            "{grads} {unbound} {huge}"
        );
    }

    #[test]
    fn compilable_graphs_are_bound_and_verify() {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = arb_graph_with(GraphConfig::compilable());
        for _ in 0..200 {
            let g = strategy.new_tree(&mut runner).unwrap().current();
            if let Err(e) = g.verify() {
                panic!("{e}\n{g}");
            }
        }
    }
}
