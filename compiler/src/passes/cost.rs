//! cost: fusion's cost model — what a group of stages is predicted to cost on a model machine,
//! as one fused kernel, and what the same ops cost unfused (one kernel each, every
//! intermediate stored).
//!
//! Assumes: a verified graph (every length bound); stored tensors row-major in their axes'
//! order (the layout pass's default: a layout a caller asks for is not seen here).
//! Guarantees: every estimate is a pure function of the graph and the group, computed from
//! sizes by multiplication (saturating), never by iterating over an axis, so its cost does not
//! grow with any length. What a stage's pass evaluates does not depend on the group holding it
//! ([`Pass`]): it is found once per stage, so weighing a merge costs a step per stage of the
//! two groups, not a walk of their inline ops. The figures are those of [`MODEL`], a model machine documented in
//! docs/cost-model.md with the measurements its constants come from: they rank plans, they
//! do not promise times on the machine at hand.
//!
//! What it counts, per kernel ([`Estimate`]):
//! - bytes moved to and from memory: each stored tensor a group reads once, or once per pass
//!   that reads it when its part at one outer point (a row) does not stay in cache
//!   ([`Machine::cache_bytes`]); each stored stage written once;
//! - element operations, weighted ([`op_weight`]): each pass evaluates its stage and the
//!   inline ops it reads once per element of its loops;
//! - gathered elements: a pass whose inner loops run along an axis a large stored tensor it
//!   reads or writes strides along (that tensor's contiguous axis being one of the group's
//!   outer axes) moves those elements one lane at a time — except a reduction alone in its group, which
//!   lowering sums in memory order (`crate::reduce_in_memory`) once the tensor reaches the
//!   pipeline's threshold;
//! - kernels launched.
//!
//! [`Estimate::seconds`] is a roofline: the larger of memory and arithmetic time, plus the
//! gathers (a gather waits on its loads) and a fixed cost per kernel.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use weft_ir::{Graph, NodeId, Op};

/// The machine the estimates are in (docs/cost-model.md says where each figure comes from).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Bytes a second to and from memory, all threads together.
    pub memory_bytes_per_s: f64,
    /// Weighted element operations a second, all threads together.
    pub ops_per_s: f64,
    /// Elements a second loaded one lane at a time with a stride past a cache line.
    pub gathers_per_s: f64,
    /// Seconds a kernel launch costs (the thread pool's fork and join).
    pub kernel_s: f64,
    /// The part of a tensor at one outer point that a second pass still finds in cache.
    pub cache_bytes: u64,
    /// The least tensor (bytes) whose strided reads miss the cache element by element.
    pub gather_min_bytes: u64,
}

/// The model machine: two cores of a 2024 x86-64 server (docs/cost-model.md).
pub const MODEL: Machine = Machine {
    memory_bytes_per_s: 32e9,
    ops_per_s: 48e9,
    gathers_per_s: 0.4e9,
    kernel_s: 1e-6,
    cache_bytes: 512 << 10,
    gather_min_bytes: crate::loop_passes::thresholds::GATHER_MIN_BYTES,
};

/// What a kernel (or several) is predicted to do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Estimate {
    /// Bytes read from and written to memory.
    pub memory_bytes: u64,
    /// Weighted element operations ([`op_weight`]).
    pub element_ops: u64,
    /// Elements loaded one lane at a time with a stride.
    pub gathered: u64,
    /// Kernels launched.
    pub kernels: u64,
}

impl Estimate {
    /// The predicted time on `m`, in seconds.
    pub fn seconds_on(&self, m: &Machine) -> f64 {
        let memory = self.memory_bytes as f64 / m.memory_bytes_per_s;
        let compute = self.element_ops as f64 / m.ops_per_s;
        memory.max(compute)
            + self.gathered as f64 / m.gathers_per_s
            + self.kernels as f64 * m.kernel_s
    }

    /// The predicted time on [`MODEL`], in seconds.
    pub fn seconds(&self) -> f64 {
        self.seconds_on(&MODEL)
    }
}

impl std::ops::Add for Estimate {
    type Output = Estimate;
    fn add(self, o: Estimate) -> Estimate {
        Estimate {
            memory_bytes: self.memory_bytes.saturating_add(o.memory_bytes),
            element_ops: self.element_ops.saturating_add(o.element_ops),
            gathered: self.gathered.saturating_add(o.gathered),
            kernels: self.kernels.saturating_add(o.kernels),
        }
    }
}

impl fmt::Display for Estimate {
    /// `≈ 4.20 ms (128.0 MiB moved, 33.6 M element ops, 0 gathers, 1 kernel)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "≈ {} ({} moved, {} element ops, {} gathers, {} kernel{})",
            duration(self.seconds()),
            bytes(self.memory_bytes),
            count(self.element_ops),
            count(self.gathered),
            self.kernels,
            if self.kernels == 1 { "" } else { "s" }
        )
    }
}

/// `4.20 ms`, `12.5 µs`.
fn duration(seconds: f64) -> String {
    if seconds >= 1e-4 {
        format!("{:.2} ms", seconds * 1e3)
    } else {
        format!("{:.1} µs", seconds * 1e6)
    }
}

/// `128.0 MiB`, `12.0 KiB`, `96 B`.
fn bytes(n: u64) -> String {
    match n {
        0..1024 => format!("{n} B"),
        1024..0x10_0000 => format!("{:.1} KiB", n as f64 / 1024.0),
        0x10_0000..0x4000_0000 => format!("{:.1} MiB", n as f64 / f64::from(1 << 20)),
        _ => format!("{:.1} GiB", n as f64 / f64::from(1 << 30)),
    }
}

/// `0`, `12.0 k`, `3.2 M`, `1.5 G`: a count short enough to read.
fn count(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1} k", n as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.1} M", n as f64 / 1e6),
        _ => format!("{:.1} G", n as f64 / 1e9),
    }
}

/// What one element of `op` costs in weighted operations: 0 for views and stored tensors
/// (addressing only), 4 for a transcendental or a power (a polynomial and a range reduction,
/// at full vector width), 1 for the rest (per term for a reduction, 2 per term for a dot: a multiply
/// and an add).
pub fn op_weight(op: &Op) -> u64 {
    match op {
        Op::Tensor { .. } => 0,
        _ if op.is_view() => 0,
        Op::Dot(..) => 2,
        _ if super::op_class::is_expensive(op) && !matches!(op, Op::Reduce { .. }) => 4,
        _ => 1,
    }
}

/// What one stage's pass evaluates, whatever group holds the stage: the stage and the inline
/// ops it reads, each once per element of the stage's loops, and the values where that walk
/// stops — stored tensors (uniform constants, immediates, left out) and stages, which the
/// group holding the pass reads from memory unless they are its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pass {
    /// Weighted element operations ([`op_weight`]).
    pub element_ops: u64,
    /// The values read rather than computed, each once.
    pub reads: Vec<NodeId>,
}

impl Pass {
    /// The pass of stage `s`, walking its operands through the nodes for which `inline` holds.
    pub fn of(g: &Graph, s: NodeId, inline: &dyn Fn(NodeId) -> bool) -> Pass {
        let terms = pass_elements(g, s);
        let mut weight = op_weight(&g.node(s).op);
        let mut reads = Vec::new();
        let mut seen: BTreeSet<NodeId> = BTreeSet::from([s]);
        let mut todo: Vec<NodeId> = g.node(s).op.inputs();
        while let Some(n) = todo.pop() {
            if !seen.insert(n) {
                continue;
            }
            let op = &g.node(n).op;
            if matches!(op, Op::Tensor { .. }) || !inline(n) {
                if !super::op_class::is_immediate(op) {
                    reads.push(n);
                }
                continue;
            }
            weight = weight.saturating_add(op_weight(op));
            todo.extend(op.inputs());
        }
        Pass {
            element_ops: terms.saturating_mul(weight),
            reads,
        }
    }
}

/// What a group needs to be estimated: its outer axes, its stages in order and their passes.
pub struct GroupShape<'a> {
    /// The outer axes' lengths, by axis.
    pub outer: &'a [super::views::IterAxis],
    /// The stages, in order.
    pub stages: &'a [NodeId],
    /// Each stage's pass.
    pub passes: &'a HashMap<NodeId, Pass>,
    /// The stages written to memory.
    pub stored: &'a dyn Fn(NodeId) -> bool,
    /// The least size (bytes) of a tensor a lone reduction strides along that lowering sums
    /// in memory order (`PlanOptions::reduce_in_memory_min_bytes`).
    pub in_memory_min_bytes: u64,
}

/// The predicted cost of `group` as one fused kernel on `m`'s terms.
pub fn estimate_group(g: &Graph, group: &GroupShape<'_>, m: &Machine) -> Estimate {
    let stage_set: HashSet<NodeId> = group.stages.iter().copied().collect();
    let outer_points = group
        .outer
        .iter()
        .fold(1u64, |acc, a| acc.saturating_mul(a.len as u64));
    let lone_reduction = matches!(group.stages, [s] if matches!(g.node(*s).op, Op::Reduce { .. }));
    let mut est = Estimate {
        kernels: 1,
        ..Estimate::default()
    };
    // Per stored value read: how many passes read it.
    let mut passes_reading: HashMap<NodeId, u64> = HashMap::new();
    for &s in group.stages {
        let Some(pass) = group.passes.get(&s) else {
            continue;
        };
        est.element_ops = est.element_ops.saturating_add(pass.element_ops);
        let inner = inner_axes(g, s, group.outer);
        // A stage of the group is read in a register or the group's row scratch.
        for &t in pass.reads.iter().filter(|t| !stage_set.contains(t)) {
            *passes_reading.entry(t).or_default() += 1;
            let bytes = bytes_of(g, t);
            let memory_order = lone_reduction && bytes >= group.in_memory_min_bytes;
            if !memory_order
                && bytes >= m.gather_min_bytes
                && strides_inner(g, t, group.outer, &inner)
            {
                est.gathered = est.gathered.saturating_add(elements_of(g, t));
            }
        }
        if (group.stored)(s) {
            let bytes = bytes_of(g, s);
            est.memory_bytes = est.memory_bytes.saturating_add(bytes);
            if bytes >= m.gather_min_bytes && strides_inner(g, s, group.outer, &inner) {
                // Scattered: stored a lane at a time, a stride apart.
                est.gathered = est.gathered.saturating_add(elements_of(g, s));
            }
        }
    }
    for (t, passes) in passes_reading {
        let bytes = bytes_of(g, t);
        let shared_outer = group
            .outer
            .iter()
            .filter(|a| g.node(t).axes.iter().any(|b| b.id == a.axis.id))
            .fold(1u64, |acc, a| acc.saturating_mul(a.len as u64));
        let row = bytes / shared_outer.max(1);
        let reads = if row > m.cache_bytes && outer_points > 0 {
            passes
        } else {
            1
        };
        est.memory_bytes = est.memory_bytes.saturating_add(bytes.saturating_mul(reads));
    }
    est
}

/// The predicted cost of computing `nodes` unfused on `m`'s terms: one kernel per op that is
/// not a view or a stored tensor, over its own axes, reading its operands (through the views
/// it folds in) from memory and writing its value.
pub fn estimate_unfused(
    g: &Graph,
    nodes: &[NodeId],
    in_memory_min_bytes: u64,
    m: &Machine,
) -> Estimate {
    let mut est = Estimate::default();
    for &n in nodes {
        let op = &g.node(n).op;
        if op.is_view() || matches!(op, Op::Tensor { .. }) {
            continue;
        }
        let Ok(outer) = super::views::node_space(g, n) else {
            continue;
        };
        // The op alone, reading through the views it folds into its loads.
        let passes = HashMap::from([(n, Pass::of(g, n, &|i| g.node(i).op.is_view()))]);
        let shape = GroupShape {
            outer: &outer,
            stages: &[n],
            passes: &passes,
            stored: &|_| true,
            in_memory_min_bytes,
        };
        est = est + estimate_group(g, &shape, m);
    }
    est
}

/// The axes `n` loops over besides its own: those it reduces or contracts.
fn folded_axes(g: &Graph, n: NodeId) -> Vec<weft_ir::Axis> {
    let node = g.node(n);
    match &node.op {
        Op::Reduce { axes, .. } => axes.iter().copied().collect(),
        Op::Dot(l, r) => g
            .dot_pairs(&g.node_label(n), &g.node(*l).axes, &g.node(*r).axes)
            .unwrap_or_default()
            .into_iter()
            .map(|(a, _)| a)
            .collect(),
        _ => Vec::new(),
    }
}

/// The elements of `n`'s loops: its own, times the axes it reduces or contracts.
fn pass_elements(g: &Graph, n: NodeId) -> u64 {
    folded_axes(g, n)
        .iter()
        .map(|a| g.resolve_len(*a).unwrap_or(1) as u64)
        .fold(elements_of(g, n), u64::saturating_mul)
}

/// The axes `s`'s pass loops over inside the group's outer loop: its own and those it reduces
/// or contracts, less the outer ones.
fn inner_axes(g: &Graph, s: NodeId, outer: &[super::views::IterAxis]) -> Vec<weft_ir::AxisId> {
    let own = g.node(s).axes.iter().copied();
    own.chain(folded_axes(g, s))
        .map(|a| a.id)
        .filter(|a| !outer.iter().any(|o| o.axis.id == *a))
        .collect()
}

/// Whether `t`, row-major in its axes, is read with a stride by loops running over `inner`
/// inside loops over `outer`: its contiguous (last) axis is an outer one while it holds an
/// inner one.
fn strides_inner(
    g: &Graph,
    t: NodeId,
    outer: &[super::views::IterAxis],
    inner: &[weft_ir::AxisId],
) -> bool {
    let axes = &g.node(t).axes;
    let last_outer = axes
        .iter()
        .last()
        .is_some_and(|a| outer.iter().any(|o| o.axis.id == a.id));
    last_outer && axes.iter().any(|a| inner.contains(&a.id))
}

fn bytes_of(g: &Graph, n: NodeId) -> u64 {
    g.tensor_size(n).map_or(0, |z| z.bytes as u64)
}

fn elements_of(g: &Graph, n: NodeId) -> u64 {
    g.tensor_size(n).map_or(0, |z| z.elements as u64)
}
