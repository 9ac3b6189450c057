//! fusion: partitions a graph's computation into kernels (fusion groups) and says why each
//! stored intermediate is stored.
//!
//! Assumes: a verified graph (every length bound), normally simplified first.
//! Guarantees:
//! - every non-view, non-stored node that some kept value depends on is computed by exactly one
//!   group, either once as a *stage* (reductions, dots, expensive ops with several uses, outputs,
//!   assigns, dot operands that would otherwise be recomputed) or inline, recomputed wherever a
//!   stage reads it (cheap elementwise ops and every view: views never copy);
//! - an expensive producer (exp, log, tanh, sigmoid, sin, cos, power, dot, reductions) is never
//!   inlined where it would be evaluated more than once per element: it is a stage;
//! - a group is a loop over its *outer* axes holding its stages in order; a stage computes its
//!   node for every outer point, looping over the node's remaining axes (and its reduction or
//!   contraction axes). Stages of one group read each other only at the same outer point, so
//!   their values live in registers or a per-row scratch, never in a whole tensor;
//! - in fused mode a producer group merges into its consumer when that consumer is its only
//!   reader and the two share outer axes, so softmax and layernorm over a row axis become one
//!   group (a loop over rows holding the reduction loops and the output loop), and
//!   `dot(transpose(x − y), x − y)` is one group with no stored `x − y`;
//! - with [`FusionOptions::gemm`], a dot `crate::gemm::is_candidate` accepts (and not in
//!   [`FusionOptions::no_gemm`]) is a [`GroupKind::Gemm`] group alone, in fused and unfused mode:
//!   it merges into no reader ([`BoundaryReason::Gemm`]) and no producer merges into it
//!   ([`BoundaryReason::DotOperand`]), so a GEMM call can compute it from memory;
//! - likewise a sum of products `sum(multiply(a, b), K)` that `Graph::sum_of_products` reads as
//!   a contraction, that `is_candidate` accepts and whose product nothing else reads
//!   ([`StageReason::Contraction`], [`BoundaryReason::GemmContraction`]): the product is inline
//!   in the sum's group, in unfused mode too (it is half of one contraction), so the batched
//!   product `[.., M, N, K]` is never stored, and `a` and `b` are stored like a dot's operands;
//! - likewise a left-deep chain of adds of such dots, alike in axes and dtype, each read only
//!   by the chain ([`TapSum`]: what a convolution expands into, one dot per filter tap): one
//!   [`GroupKind::Gemm`] group whose stages are the dots ([`StageReason::Tap`], never stored)
//!   and the chain's last add, in fused and unfused mode (it is one convolution), computed by
//!   one GEMM call adding each tap into the result ([`BoundaryReason::GemmTaps`]);
//! - a merge that passes every structural check is weighed by the cost model
//!   ([`super::cost`]): it is taken unless the merged group is predicted slower than the two
//!   apart ([`BoundaryReason::CostModel`]); [`FusionPlan::decisions`] keeps every merge
//!   weighed and each group its estimate, fused and unfused;
//! - every value that crosses groups or leaves the computation has a [`Boundary`] naming why;
//! - `groups` is a topological schedule: a group only reads values of earlier groups.
//!
//! In unfused mode (the nGraph-python CPU baseline) every non-view op is its own group and every
//! intermediate is stored; views still fold into their readers.

use super::cost::{estimate_group, estimate_unfused, Estimate, GroupShape, Pass, MODEL};
use super::views::{expand_axes, node_space, IterAxis};
use super::PassError;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};
use weft_ir::{BinaryOp, Graph, NodeId, Op};

// The plan's types and the op classes, under the paths other passes and crates name them by.
pub use super::groups::{
    Boundary, BoundaryReason, FusionGroup, FusionPlan, GroupKind, MergeDecision, Stage, StageReason,
};
pub use super::op_class::{is_expensive, is_immediate, pad_under};

/// How fusion runs.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct FusionOptions {
    /// Fuse (true) or one group per op with every intermediate stored (false).
    pub fused: bool,
    /// Nodes to store whatever their op ([`StageReason::SplitIndex`]).
    pub force_stored: Vec<NodeId>,
    /// Stages whose group is never merged into a reader's
    /// ([`BoundaryReason::ViewOfOuterAxes`]): a reader in the same group would read them at
    /// another outer point ([`PassError::OuterPoint`]).
    pub force_boundary: Vec<NodeId>,
    /// When dots are computed by a GEMM call (`None`: never): such a dot is a group of its
    /// own ([`GroupKind::Gemm`]), nothing merges into it and it merges into nothing.
    pub gemm: Option<crate::gemm::GemmOptions>,
    /// Dots the GEMM path cannot compute after all (`crate::gemm::plan_gemm` said why): they
    /// keep the loop nest.
    pub no_gemm: Vec<NodeId>,
    /// The least size (bytes) of a tensor a reduction strides along that keeps the reduction
    /// in a kernel of its own ([`BoundaryReason::StridedReduction`]).
    pub strided_min_bytes: u64,
}

/// The most times a cheap op is evaluated per element of its value inline, in its readers'
/// bodies; more makes it a stage ([`StageReason::ManyUses`]). A pool of up to
/// `weft_ir::graph::window_fold::DIRECT_POOL_TAPS` taps reads its padded input once per tap.
pub const MAX_INLINE_USES: usize = 64;

/// The most ops one fused kernel computes (its stages and the inline ops they read). Code
/// generation's cost grows faster than a function's size (register allocation over one loop
/// body), so a 10,000-op elementwise chain fused into one kernel compiled 19× slower than 1,000
/// ops; bounded kernels keep compile time linear in the graph (docs/benchmarks.md, "Compile
/// time at scale"). Far above any model's kernel: a layer norm's is about 20.
pub const MAX_KERNEL_NODES: usize = 512;

/// Partitions `g` (verified) into fusion groups; `keep` are requested outputs besides the graph's.
pub fn fuse(g: &Graph, keep: &[NodeId], opts: FusionOptions) -> Result<FusionPlan, PassError> {
    g.verify()?;
    let outs: HashSet<NodeId> = g.outputs().iter().chain(keep).copied().collect();
    let (live, readers) = live_readers(g, &outs);
    let gemm = GemmWork::find(g, &live, &readers, &outs, &opts);
    let mut stage = dispositions(g, &live, &readers, &outs, &gemm, &opts)?;
    limit_inline_closures(g, &live, &mut stage, &gemm.products, &gemm.tap_adds);
    // Each stage's pass for the cost model, found once: it reads through the inline ops.
    let passes: HashMap<NodeId, Pass> = g
        .nodes()
        .filter(|(id, _)| live[idx(*id)] && stage[idx(*id)].is_some())
        .map(|(id, _)| (id, Pass::of(g, id, &|n| stage[idx(n)].is_none())))
        .collect();
    let groups = drafts(g, &live, &stage, &gemm, &opts)?;
    let mut m = Merging::new(g, &opts, &outs, &gemm, &passes, groups);
    m.boundary = stored_tensors(g, &live, &outs);
    m.merge_all();
    m.mark_stage_outputs();
    Ok(m.into_plan(live))
}

/// A node's index in per-node tables.
fn idx(id: NodeId) -> usize {
    id.as_u32() as usize
}

/// Per node of `g`: whether some output in `outs` or an assign depends on it, and the live
/// nodes reading it.
fn live_readers(g: &Graph, outs: &HashSet<NodeId>) -> (Vec<bool>, Vec<Vec<NodeId>>) {
    let n = g.len();
    let mut live = vec![false; n];
    for (id, node) in g.nodes() {
        if outs.contains(&id) || matches!(node.op, Op::Assign { .. }) {
            live[idx(id)] = true;
        }
    }
    let mut readers: Vec<Vec<NodeId>> = vec![Vec::new(); n];
    for (id, node) in g.nodes().rev() {
        if live[idx(id)] {
            for i in node.op.inputs() {
                live[idx(i)] = true;
                readers[idx(i)].push(id);
            }
        }
    }
    (live, readers)
}

/// The live nodes GEMM calls compute whole, found before the dispositions.
struct GemmWork {
    /// Sums of products that run as a GEMM contraction.
    sums: HashSet<NodeId>,
    /// Their products: read by nothing else, so never stored (in unfused mode too: a product
    /// is half of one contraction op); their operands are stored like a dot's.
    products: HashSet<NodeId>,
    /// Sums of GEMM taps, by their last add.
    taps: HashMap<NodeId, TapSum>,
    /// The taps' dots and inner adds.
    tap_dots: HashSet<NodeId>,
    tap_adds: HashSet<NodeId>,
}

impl GemmWork {
    fn find(
        g: &Graph,
        live: &[bool],
        readers: &[Vec<NodeId>],
        outs: &HashSet<NodeId>,
        opts: &FusionOptions,
    ) -> GemmWork {
        let is_out = |id: NodeId| outs.contains(&id);
        let (sums, products): (HashSet<NodeId>, HashSet<NodeId>) = g
            .nodes()
            .filter(|(id, _)| live[idx(*id)] && !opts.no_gemm.contains(id))
            .filter_map(|(id, _)| {
                let c = g.sum_of_products(id)?;
                let o = opts.gemm?;
                let alone = readers[idx(c.product)].as_slice() == [id] && !is_out(c.product);
                (alone && crate::gemm::is_candidate(g, id, &o)).then_some((id, c.product))
            })
            .unzip();
        let taps = TapSum::find(g, readers, &is_out, opts);
        let tap_dots = taps.values().flat_map(|t| t.dots.iter().copied()).collect();
        let tap_adds = taps.values().flat_map(|t| t.adds.iter().copied()).collect();
        GemmWork {
            sums,
            products,
            taps,
            tap_dots,
            tap_adds,
        }
    }
}

/// How a node would be evaluated inline, from its readers.
#[derive(Clone, Copy, Debug, Default)]
struct InlineUse {
    /// How many times it is evaluated per element of its value.
    uses: usize,
    /// Whether an inline evaluation happens for more elements than it has.
    widened: bool,
    /// Whether a loop-nest dot (or a GEMM product) reads it for more elements than it has.
    dot_widened: bool,
}

/// Per node: why it is a stage, `None` if inline or a stored tensor; decided consumers first.
fn dispositions(
    g: &Graph,
    live: &[bool],
    readers: &[Vec<NodeId>],
    outs: &HashSet<NodeId>,
    gemm: &GemmWork,
    opts: &FusionOptions,
) -> Result<Vec<Option<StageReason>>, PassError> {
    let n = g.len();
    let mut stage: Vec<Option<StageReason>> = vec![None; n];
    let mut inline = vec![InlineUse::default(); n];
    for (id, node) in g.nodes().rev() {
        let i = idx(id);
        if !live[i] {
            continue;
        }
        for r in &readers[i] {
            let rn = g.node(*r);
            let inline_reader = stage[idx(*r)].is_none();
            let reader_uses = if inline_reader {
                inline[idx(*r)].uses.max(1)
            } else {
                1
            };
            inline[i].uses = inline[i].uses.saturating_add(reader_uses);
            let mut w = match &rn.op {
                Op::Broadcast(_) | Op::ExpandDims { .. } => true,
                Op::Binary(..) | Op::Compare(..) | Op::Select(..) => {
                    !node.axes.is_super_set(&rn.axes)
                }
                _ => false,
            };
            if let Op::Dot(l, rr) = &rn.op {
                if dot_free_len(g, id, *l, *rr)? > 1 {
                    inline[i].dot_widened = true;
                }
            }
            if gemm.products.contains(r) {
                inline[i].dot_widened = true;
            }
            if inline_reader {
                w |= inline[idx(*r)].widened;
                if rn.op.is_view() || matches!(rn.op, Op::Concat(_)) {
                    inline[i].dot_widened |= inline[idx(*r)].dot_widened;
                }
            }
            inline[i].widened |= w;
        }
        stage[i] = stage_reason(g, id, inline[i], outs, gemm, opts);
        if stage[i].is_some() {
            // A stage is evaluated once per element whatever reads it.
            inline[i].widened = false;
        }
    }
    Ok(stage)
}

/// The elements of `dot(l, r)`'s operand other than `id` per element of `id`: the product of
/// the lengths of its axes the dot does not pair.
fn dot_free_len(g: &Graph, id: NodeId, l: NodeId, r: NodeId) -> Result<usize, PassError> {
    let other = if l == id { r } else { l };
    let pairs = g.dot_pairs("dot", &g.node(l).axes, &g.node(r).axes)?;
    let other_axes = &g.node(other).axes;
    Ok(other_axes
        .iter()
        .filter(|a| !pairs.iter().any(|(p, q)| *p == **a || *q == **a))
        .map(|a| g.resolve_len(*a))
        // Only compared with 1: saturating is exact enough and cannot overflow.
        .try_fold(1usize, |acc, l| l.map(|l| acc.saturating_mul(l)))?)
}

/// Why live node `id`, evaluated inline as `inline` says, is a stage, if it is one.
fn stage_reason(
    g: &Graph,
    id: NodeId,
    inline: InlineUse,
    outs: &HashSet<NodeId>,
    gemm: &GemmWork,
    opts: &FusionOptions,
) -> Option<StageReason> {
    let node = g.node(id);
    match &node.op {
        Op::Tensor { .. } => None,
        _ if outs.contains(&id) => Some(StageReason::GraphOutput),
        _ if opts.force_stored.contains(&id) => Some(StageReason::SplitIndex),
        Op::Assign { .. } => Some(StageReason::AssignValue),
        _ if node.op.is_view() || matches!(node.op, Op::Concat(_)) => None,
        _ if gemm.products.contains(&id) => None,
        _ if gemm.sums.contains(&id) => Some(StageReason::Contraction),
        _ if gemm.tap_dots.contains(&id) => Some(StageReason::Tap),
        _ if gemm.tap_adds.contains(&id) => None,
        _ if gemm.taps.contains_key(&id) => Some(StageReason::TapSum),
        _ if !opts.fused => Some(StageReason::Unfused),
        Op::Reduce { .. } => Some(StageReason::Reduction),
        Op::Dot(..) => Some(StageReason::Dot),
        _ if inline.dot_widened => Some(StageReason::DotOperand),
        op if is_expensive(op) && inline.uses > 1 => Some(StageReason::MultipleConsumersExpensive),
        Op::Select(c, a, _)
            if inline.uses > 1 && pad_under(g, *c).is_some() && pad_under(g, *a).is_some() =>
        {
            Some(StageReason::PaddedSeveral)
        }
        op if is_expensive(op) && inline.widened => Some(StageReason::BroadcastExpensive),
        _ if inline.uses > MAX_INLINE_USES => Some(StageReason::ManyUses),
        _ => None,
    }
}

/// One group per stage, with the stored values and stages its inline closure reads; a sum of
/// taps' dots are stages of the sum's group.
fn drafts(
    g: &Graph,
    live: &[bool],
    stage: &[Option<StageReason>],
    gemm: &GemmWork,
    opts: &FusionOptions,
) -> Result<Vec<Draft>, PassError> {
    let mut groups: Vec<Draft> = Vec::new();
    for (id, node) in g.nodes() {
        if let (true, Some(reason)) = (live[idx(id)], stage[idx(id)]) {
            if gemm.tap_dots.contains(&id) {
                // In its sum's group, below.
                continue;
            }
            let outer = node_space(g, id)?;
            let (mut reads, mut nodes) = (BTreeSet::new(), BTreeSet::new());
            let mut stages = Vec::new();
            for t in gemm.taps.get(&id).map_or(&[][..], |t| &t.dots) {
                closure(g, *t, stage, &mut nodes, &mut reads);
                stages.push((*t, StageReason::Tap));
            }
            closure(g, id, stage, &mut nodes, &mut reads);
            stages.push((id, reason));
            for (t, _) in &stages {
                reads.remove(t);
            }
            let gemm = gemm.taps.contains_key(&id)
                || gemm.sums.contains(&id)
                || matches!(node.op, Op::Dot(..))
                    && opts.gemm.is_some_and(|o| {
                        !opts.no_gemm.contains(&id) && crate::gemm::is_candidate(g, id, &o)
                    });
            groups.push(Draft {
                gemm,
                outer,
                stages,
                nodes,
                reads,
                alive: true,
            });
        }
    }
    Ok(groups)
}

/// The stored tensors: every live tensor but a uniform constant, an immediate in its readers
/// that exists in memory only when it is itself an output (the executable materialises it
/// like any constant).
fn stored_tensors(
    g: &Graph,
    live: &[bool],
    outs: &HashSet<NodeId>,
) -> HashMap<NodeId, BoundaryReason> {
    let mut boundary = HashMap::new();
    for (id, node) in g.nodes() {
        if live[idx(id)]
            && matches!(node.op, Op::Tensor { .. })
            && (!is_immediate(&node.op) || outs.contains(&id))
        {
            boundary.insert(id, BoundaryReason::Stored);
        }
    }
    boundary
}

/// The merging of producer groups into their only reader's, and the boundaries it records.
struct Merging<'a> {
    g: &'a Graph,
    opts: &'a FusionOptions,
    outs: &'a HashSet<NodeId>,
    gemm: &'a GemmWork,
    passes: &'a HashMap<NodeId, Pass>,
    groups: Vec<Draft>,
    /// Which live groups read each node, kept up to date through the merges (so finding a
    /// group's readers costs no scan of every group).
    reader_groups: HashMap<NodeId, BTreeSet<usize>>,
    boundary: HashMap<NodeId, BoundaryReason>,
    decisions: Vec<MergeDecision>,
}

impl<'a> Merging<'a> {
    fn new(
        g: &'a Graph,
        opts: &'a FusionOptions,
        outs: &'a HashSet<NodeId>,
        gemm: &'a GemmWork,
        passes: &'a HashMap<NodeId, Pass>,
        groups: Vec<Draft>,
    ) -> Merging<'a> {
        let mut reader_groups: HashMap<NodeId, BTreeSet<usize>> = HashMap::new();
        for (q, d) in groups.iter().enumerate() {
            for r in &d.reads {
                reader_groups.entry(*r).or_default().insert(q);
            }
        }
        Merging {
            g,
            opts,
            outs,
            gemm,
            passes,
            groups,
            reader_groups,
            boundary: HashMap::new(),
            decisions: Vec::new(),
        }
    }

    fn is_out(&self, id: NodeId) -> bool {
        self.outs.contains(&id)
    }

    fn groups_reading(&self, s: &NodeId) -> BTreeSet<usize> {
        self.reader_groups.get(s).cloned().unwrap_or_default()
    }

    /// Merges producers into their only reader, last producer first.
    fn merge_all(&mut self) {
        for p in (0..self.groups.len()).rev() {
            let stages: Vec<NodeId> = self.groups[p].stages.iter().map(|s| s.0).collect();
            let readers: BTreeSet<usize> = stages
                .iter()
                .flat_map(|s| self.groups_reading(s))
                .filter(|q| self.groups[*q].alive && *q != p)
                .collect();
            let why_not = match self.refusal(p, &stages, &readers) {
                Some(why) => Some(why),
                None => self.merge_into_reader(p, &stages, &readers),
            };
            self.record_boundaries(p, &stages, why_not);
        }
    }

    /// Why group `p` (its stages `stages`, read by the groups `readers`) may not merge into a
    /// reader's whatever their axes and cost, if it may not.
    fn refusal(
        &self,
        p: usize,
        stages: &[NodeId],
        readers: &BTreeSet<usize>,
    ) -> Option<BoundaryReason> {
        let (g, groups, opts) = (self.g, &self.groups, self.opts);
        if !opts.fused {
            Some(BoundaryReason::Unfused)
        } else if stages.iter().any(|s| opts.force_stored.contains(s)) {
            Some(BoundaryReason::SplitIndex)
        } else if stages.iter().any(|s| opts.force_boundary.contains(s)) {
            Some(BoundaryReason::ViewOfOuterAxes)
        } else if groups[p].gemm && stages.iter().any(|s| self.gemm.taps.contains_key(s)) {
            Some(BoundaryReason::GemmTaps)
        } else if groups[p].gemm && stages.iter().any(|s| self.gemm.sums.contains(s)) {
            Some(BoundaryReason::GemmContraction)
        } else if groups[p].gemm {
            Some(BoundaryReason::Gemm)
        } else if readers.len() != 1 {
            Some(BoundaryReason::ConsumersInSeveralGroups)
        } else if readers
            .iter()
            .any(|q| groups[*q].nodes.len() + groups[p].nodes.len() > MAX_KERNEL_NODES)
        {
            Some(BoundaryReason::KernelSize)
        } else if strided_reduction(g, &groups[p], opts.strided_min_bytes) {
            Some(BoundaryReason::StridedReduction)
        } else if readers.iter().any(|q| groups[*q].gemm)
            || groups[p]
                .stages
                .iter()
                .any(|s| s.1 == StageReason::DotOperand)
        {
            // A GEMM call reads only memory; a loop-nest dot reads its operand many times.
            Some(BoundaryReason::DotOperand)
        } else {
            None
        }
    }

    /// Merges group `p` into its one reader's when they share outer axes, its reader reads it
    /// at the same outer point and the cost model predicts the merge no slower; else why not.
    fn merge_into_reader(
        &mut self,
        p: usize,
        stages: &[NodeId],
        readers: &BTreeSet<usize>,
    ) -> Option<BoundaryReason> {
        let (g, groups, opts) = (self.g, &self.groups, self.opts);
        let q = *readers.iter().next().unwrap_or(&p);
        let shared: Vec<IterAxis> = groups[q]
            .outer
            .iter()
            .filter(|a| groups[p].outer.contains(a))
            .copied()
            .collect();
        if shared.is_empty() && !(groups[p].outer.is_empty() && groups[q].outer.is_empty()) {
            return Some(BoundaryReason::DifferentIterationSpace);
        } else if !reads_keep_outer(g, &groups[q], stages, &shared) {
            return Some(BoundaryReason::ViewOfOuterAxes);
        }
        // A stage is stored where a group besides `own` reads it.
        let stored_outside = |s: NodeId, own: &[usize]| {
            self.is_out(s)
                || matches!(g.node(s).op, Op::Assign { .. })
                || self
                    .groups_reading(&s)
                    .iter()
                    .any(|r| groups[*r].alive && !own.contains(r))
        };
        let decision = weigh_merge(
            g,
            self.passes,
            (groups, p, q),
            &shared,
            &stored_outside,
            opts.strided_min_bytes,
        );
        let taken = decision.taken;
        self.decisions.push(decision);
        if !taken {
            return Some(BoundaryReason::CostModel);
        }
        self.absorb(p, q, shared, stages);
        None
    }

    /// Moves group `p` (its stages `stages`) into group `q`, over their `shared` outer axes.
    fn absorb(&mut self, p: usize, q: usize, shared: Vec<IterAxis>, stages: &[NodeId]) {
        let pd = std::mem::take(&mut self.groups[p]);
        let qd = &mut self.groups[q];
        qd.outer = shared;
        let mut st = pd.stages;
        st.append(&mut qd.stages);
        qd.stages = st;
        qd.nodes.extend(pd.nodes);
        for r in &pd.reads {
            let by = self.reader_groups.entry(*r).or_default();
            by.remove(&p);
            by.insert(q);
        }
        qd.reads.extend(pd.reads);
        for s in stages {
            qd.reads.remove(s);
            if let Some(by) = self.reader_groups.get_mut(s) {
                by.remove(&q);
            }
        }
    }

    /// Records why group `p`'s stages are stored: outputs and assigns always, the others read
    /// outside it (or forced to memory) for `why_not`, the reason it was not merged.
    fn record_boundaries(&mut self, p: usize, stages: &[NodeId], why_not: Option<BoundaryReason>) {
        let Some(why) = why_not else {
            for s in stages {
                if self.is_out(*s) {
                    self.boundary.insert(*s, BoundaryReason::GraphOutput);
                }
            }
            return;
        };
        let opts = self.opts;
        for s in stages {
            let read_outside = self
                .groups_reading(s)
                .iter()
                .any(|q| *q != p && self.groups[*q].reads.contains(s));
            let reason = if self.is_out(*s) {
                Some(BoundaryReason::GraphOutput)
            } else if matches!(self.g.node(*s).op, Op::Assign { .. }) {
                Some(BoundaryReason::AssignTarget)
            } else if read_outside
                || opts.force_stored.contains(s)
                || opts.force_boundary.contains(s)
            {
                Some(why)
            } else {
                None
            };
            if let Some(r) = reason {
                self.boundary.insert(*s, r);
            }
        }
    }

    /// Stores every output and assigned value among the remaining groups' stages.
    fn mark_stage_outputs(&mut self) {
        for d in &self.groups {
            if !d.alive {
                continue;
            }
            for (s, _) in &d.stages {
                if self.outs.contains(s) {
                    self.boundary.insert(*s, BoundaryReason::GraphOutput);
                } else if matches!(self.g.node(*s).op, Op::Assign { .. }) {
                    self.boundary.insert(*s, BoundaryReason::AssignTarget);
                }
            }
        }
    }

    /// The plan: the remaining groups in a topological schedule with their estimates, the
    /// boundaries sorted by node.
    fn into_plan(self, live: Vec<bool>) -> FusionPlan {
        let (g, opts, passes, boundary) = (self.g, self.opts, self.passes, self.boundary);
        let drafts: Vec<Draft> = self.groups.into_iter().filter(|d| d.alive).collect();
        let order = schedule(&drafts);
        let mut out = Vec::new();
        for (k, di) in order.into_iter().enumerate() {
            let d = &drafts[di];
            out.push(FusionGroup {
                id: k,
                kind: kind_of(g, d),
                outer: d.outer.clone(),
                stages: d
                    .stages
                    .iter()
                    .map(|(s, r)| Stage {
                        node: *s,
                        reason: *r,
                        stored: boundary.contains_key(s),
                    })
                    .collect(),
                nodes: d.nodes.iter().copied().collect(),
                inputs: d.reads.iter().copied().collect(),
                estimate: estimate_stages(
                    g,
                    passes,
                    &d.stages,
                    &d.outer,
                    &|s| boundary.contains_key(&s),
                    opts.strided_min_bytes,
                ),
                unfused: estimate_unfused(
                    g,
                    &d.nodes.iter().copied().collect::<Vec<_>>(),
                    opts.strided_min_bytes,
                    &MODEL,
                ),
            });
        }
        let mut boundaries: Vec<Boundary> = boundary
            .into_iter()
            .map(|(node, reason)| Boundary { node, reason })
            .collect();
        boundaries.sort_by_key(|b| b.node);
        FusionPlan {
            groups: out,
            boundaries,
            live,
            decisions: self.decisions,
        }
    }
}

/// Makes stages ([`StageReason::KernelSize`]) of inline ops whose readers would otherwise
/// compute more than [`MAX_KERNEL_NODES`] ops inline: producers first, each node's inline
/// count (itself and its inline operands' counts: an upper bound, shared operands counted per
/// use) kept within the bound by staging its largest inline operands. Only plain elementwise
/// ops are staged (views and a GEMM call's operands stay inline, as their readers need them).
fn limit_inline_closures(
    g: &Graph,
    live: &[bool],
    stage: &mut [Option<StageReason>],
    gemm_products: &HashSet<NodeId>,
    tap_adds: &HashSet<NodeId>,
) {
    let idx = |id: NodeId| id.as_u32() as usize;
    let stageable = |id: NodeId| {
        matches!(
            g.node(id).op,
            Op::Unary(..) | Op::Binary(..) | Op::Compare(..) | Op::Select(..) | Op::Convert(_)
        ) && !gemm_products.contains(&id)
            && !tap_adds.contains(&id)
    };
    let mut count = vec![0usize; g.len()];
    for (id, node) in g.nodes() {
        if !live[idx(id)] || matches!(node.op, Op::Tensor { .. }) {
            continue;
        }
        let mut inline: Vec<NodeId> = node
            .op
            .inputs()
            .into_iter()
            .filter(|o| stage[idx(*o)].is_none() && count[idx(*o)] > 0)
            .collect();
        // A uniform constant is an immediate: a node of the kernel too.
        let immediates = node
            .op
            .inputs()
            .iter()
            .filter(|o| is_immediate(&g.node(**o).op))
            .count();
        let mut total = inline
            .iter()
            .fold(1 + immediates, |t, o| t.saturating_add(count[idx(*o)]));
        if total > MAX_KERNEL_NODES {
            inline.sort_by_key(|o| Reverse(count[idx(*o)]));
            inline.dedup();
            for o in inline.into_iter().filter(|o| stageable(*o)) {
                if total <= MAX_KERNEL_NODES {
                    break;
                }
                stage[idx(o)] = Some(StageReason::KernelSize);
                let uses = node.op.inputs().iter().filter(|x| **x == o).count();
                total = total.saturating_sub(count[idx(o)].saturating_mul(uses));
            }
        }
        count[idx(id)] = total;
    }
}

/// Adds node `id` and the inline nodes it is computed from to `nodes`, and the stages and
/// stored tensors they read to `reads` (uniform constants are immediates: nodes).
fn closure(
    g: &Graph,
    id: NodeId,
    stage: &[Option<StageReason>],
    nodes: &mut BTreeSet<NodeId>,
    reads: &mut BTreeSet<NodeId>,
) {
    nodes.insert(id);
    let mut todo = g.node(id).op.inputs();
    while let Some(x) = todo.pop() {
        let xn = g.node(x);
        if stage[x.as_u32() as usize].is_some() || matches!(xn.op, Op::Tensor { .. }) {
            if !is_immediate(&xn.op) {
                reads.insert(x);
            } else {
                nodes.insert(x);
            }
        } else if nodes.insert(x) {
            todo.extend(xn.op.inputs());
        }
    }
}

/// A sum of GEMM taps: `add(add(d₀, d₁), …, dₙ₋₁)`, a left-deep chain of at least two dots the
/// GEMM path takes ([`crate::gemm::is_candidate`], none in `no_gemm`), alike in axes and
/// dtype, each dot and inner add read only by the chain and none an output or forced to
/// memory, for f32 at most [`GemmOptions::max_f32_k`](crate::gemm::GemmOptions::max_f32_k)
/// roundings per element on either GEMM engine ([`weft_runtime::longest_f32_chain`]) — what a
/// convolution expands into
/// (`Graph::expand_convolution`, one dot per filter tap). One GEMM call computes it, adding
/// each dot into the result in the chain's order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapSum {
    /// The dots, in the order the chain adds them.
    pub dots: Vec<NodeId>,
    /// The chain's inner adds (inline in the sum's group).
    pub adds: Vec<NodeId>,
}

impl TapSum {
    /// Every sum of taps of `g`, by its last add (outermost chains first, so a chain's inner
    /// adds are never sums of their own).
    fn find(
        g: &Graph,
        readers: &[Vec<NodeId>],
        is_out: &impl Fn(NodeId) -> bool,
        opts: &FusionOptions,
    ) -> HashMap<NodeId, TapSum> {
        let mut found = HashMap::new();
        let Some(o) = opts.gemm else {
            return found;
        };
        let mut claimed = HashSet::new();
        // Read by `r` alone, and neither returned nor stored for another reason.
        let only_read_by = |x: NodeId, r: NodeId| {
            readers[x.as_u32() as usize].as_slice() == [r]
                && !is_out(x)
                && !opts.force_stored.contains(&x)
                && !opts.force_boundary.contains(&x)
        };
        let tap = |x: NodeId, r: NodeId| {
            matches!(g.node(x).op, Op::Dot(..))
                && only_read_by(x, r)
                && !opts.no_gemm.contains(&x)
                && crate::gemm::is_candidate(g, x, &o)
        };
        for (id, node) in g.nodes().rev() {
            if claimed.contains(&id) || opts.no_gemm.contains(&id) {
                continue;
            }
            let (mut dots, mut adds, mut at) = (Vec::new(), Vec::new(), id);
            while let Op::Binary(BinaryOp::Add, l, r) = g.node(at).op {
                if !tap(r, at) {
                    break;
                }
                dots.push(r);
                if tap(l, at) {
                    dots.push(l);
                    break;
                }
                if !only_read_by(l, at) {
                    break;
                }
                adds.push(l);
                at = l;
            }
            // The chain must end at a dot (its first term).
            let complete = dots.len() >= 2 && adds.len() + 2 == dots.len();
            let alike = dots.iter().all(|d| {
                let dn = g.node(*d);
                dn.axes == node.axes && dn.dtype == node.dtype
            });
            let chain = dots
                .first()
                .and_then(|d| crate::gemm::contraction_shape(g, *d))
                .and_then(|(_, _, k, _)| u64::try_from(k).ok())
                .map(|k| weft_runtime::longest_f32_chain(k, dots.len() as u64));
            let bounded =
                node.dtype != weft_ir::DType::F32 || chain.is_some_and(|c| c <= o.max_f32_k);
            if complete && alike && bounded {
                dots.reverse();
                adds.reverse();
                claimed.extend(adds.iter().copied());
                found.insert(id, TapSum { dots, adds });
            }
        }
        found
    }
}

#[derive(Default)]
struct Draft {
    /// A dot computed by a GEMM call: never merged with another group.
    gemm: bool,
    outer: Vec<IterAxis>,
    stages: Vec<(NodeId, StageReason)>,
    nodes: BTreeSet<NodeId>,
    reads: BTreeSet<NodeId>,
    alive: bool,
}

/// The cost model's estimate of `stages` as one kernel over `outer`, those for which `stored`
/// holds written to memory.
fn estimate_stages(
    g: &Graph,
    passes: &HashMap<NodeId, Pass>,
    stages: &[(NodeId, StageReason)],
    outer: &[IterAxis],
    stored: &dyn Fn(NodeId) -> bool,
    in_memory_min_bytes: u64,
) -> Estimate {
    let stages: Vec<NodeId> = stages.iter().map(|s| s.0).collect();
    estimate_group(
        g,
        &GroupShape {
            outer,
            stages: &stages,
            passes,
            stored,
            in_memory_min_bytes,
        },
        &MODEL,
    )
}

/// Weighs merging group `p` into its reader `q` over their `shared` outer axes: a stage is
/// stored where `stored_outside(s, own)` holds, `own` the groups that count as its own (`p`
/// or `q` apart, both merged). Taken unless merged is predicted slower.
fn weigh_merge(
    g: &Graph,
    passes: &HashMap<NodeId, Pass>,
    (groups, p, q): (&[Draft], usize, usize),
    shared: &[IterAxis],
    stored_outside: &dyn Fn(NodeId, &[usize]) -> bool,
    in_memory_min_bytes: u64,
) -> MergeDecision {
    let estimate = |stages: &[(NodeId, StageReason)], outer: &[IterAxis], own: &[usize]| {
        let stored = |s| stored_outside(s, own);
        estimate_stages(g, passes, stages, outer, &stored, in_memory_min_bytes)
    };
    let (pd, qd) = (&groups[p], &groups[q]);
    let apart = estimate(&pd.stages, &pd.outer, &[p]) + estimate(&qd.stages, &qd.outer, &[q]);
    let both: Vec<(NodeId, StageReason)> = pd.stages.iter().chain(&qd.stages).copied().collect();
    let merged = estimate(&both, shared, &[p, q]);
    MergeDecision {
        producer: pd.stages.iter().map(|s| s.0).collect(),
        reader: qd.stages.last().map(|s| s.0),
        merged,
        apart,
        taken: merged.seconds() <= apart.seconds(),
    }
}

/// Whether a stage of `d` reduces an axis along which a large tensor it reads
/// (`min_bytes` or more) strides, that tensor's last (contiguous) axis being kept: merged into
/// a reader, the reduction would be one pass among several of a loop over the kept axis, each
/// gathering a column with a stride.
fn strided_reduction(g: &Graph, d: &Draft, min_bytes: u64) -> bool {
    d.stages.iter().any(|(s, _)| {
        let Op::Reduce { axes: reduced, .. } = &g.node(*s).op else {
            return false;
        };
        d.reads.iter().any(|t| {
            let axes = &g.node(*t).axes;
            let big = g.tensor_size(*t).is_ok_and(|z| z.bytes as u64 >= min_bytes);
            let holds_reduced = axes.iter().any(|a| reduced.contains(*a));
            let last_kept = axes.iter().last().is_some_and(|a| !reduced.contains(*a));
            big && holds_reduced && last_kept
        })
    })
}

/// True if every path inside `q` from a node of `stages` to its reader maps each `shared`
/// outer axis to itself: only elementwise ops and views that leave those axes alone
/// (broadcast, axes_with_order, expand_dims, or slice/pad/flatten/unflatten/concat of other axes).
fn reads_keep_outer(g: &Graph, q: &Draft, stages: &[NodeId], shared: &[IterAxis]) -> bool {
    let touches = |axes: &[weft_ir::Axis]| -> bool {
        axes.iter().any(|a| {
            expand_axes(g, &weft_ir::Axes::new([*a]).unwrap_or_default())
                .map(|v| v.iter().any(|x| shared.iter().any(|s| s.axis == x.axis)))
                .unwrap_or(true)
        })
    };
    // Nodes of `q` are in topological (id) order; a node is tainted if it is inline and reads
    // a stage of `p` directly or through tainted nodes.
    let mut tainted: std::collections::HashSet<NodeId> = stages.iter().copied().collect();
    for n in &q.nodes {
        let node = g.node(*n);
        if !node.op.inputs().iter().any(|i| tainted.contains(i)) {
            continue;
        }
        let ok = match &node.op {
            Op::Broadcast(_) | Op::AxesWithOrder(_) | Op::ExpandDims { .. } => true,
            Op::Slice { slices, .. } => !touches(&slices.iter().map(|s| s.0).collect::<Vec<_>>()),
            Op::Pad { pads, .. } => !touches(&pads.iter().map(|s| s.0).collect::<Vec<_>>()),
            Op::Flatten { axes, .. } => !touches(axes),
            Op::Unflatten { axis, .. } => !touches(&[*axis]),
            Op::Concat(parts) => !touches(&parts.iter().map(|s| s.1).collect::<Vec<_>>()),
            Op::CastAxes(_) | Op::Transpose(_) => false,
            _ => true,
        };
        if !ok {
            return false;
        }
        if !q.stages.iter().any(|s| s.0 == *n) {
            tainted.insert(*n);
        }
    }
    true
}

/// A topological order of the groups (Kahn's algorithm, earliest first stage first).
fn schedule(d: &[Draft]) -> Vec<usize> {
    let owner: HashMap<NodeId, usize> = d
        .iter()
        .enumerate()
        .flat_map(|(i, g)| g.stages.iter().map(move |s| (s.0, i)))
        .collect();
    let deps: Vec<BTreeSet<usize>> = d
        .iter()
        .enumerate()
        .map(|(i, g)| {
            g.reads
                .iter()
                .filter_map(|r| owner.get(r).copied())
                .filter(|o| *o != i)
                .collect()
        })
        .collect();
    // Kahn's algorithm, always taking the ready group whose first stage is earliest.
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); d.len()];
    let mut waiting: Vec<usize> = deps.iter().map(BTreeSet::len).collect();
    for (i, ds) in deps.iter().enumerate() {
        for x in ds {
            users[*x].push(i);
        }
    }
    let key = |i: usize| Reverse((d[i].stages[0].0, i));
    let mut ready: BinaryHeap<_> = (0..d.len()).filter(|i| waiting[*i] == 0).map(key).collect();
    let mut done = vec![false; d.len()];
    let mut order = Vec::new();
    while let Some(Reverse((_, i))) = ready.pop() {
        done[i] = true;
        order.push(i);
        for u in &users[i] {
            waiting[*u] -= 1;
            if waiting[*u] == 0 {
                ready.push(key(*u));
            }
        }
    }
    // Merging never makes a cycle (see the module docs); fall back to creation order.
    order.extend((0..d.len()).filter(|i| !done[*i]));
    order
}

fn kind_of(g: &Graph, d: &Draft) -> GroupKind {
    if d.gemm {
        return GroupKind::Gemm;
    }
    let ops: Vec<&Op> = d.stages.iter().map(|(s, _)| &g.node(*s).op).collect();
    if ops.iter().any(|o| matches!(o, Op::Dot(..))) {
        return GroupKind::Dot;
    }
    let first_reduce = ops.iter().position(|o| matches!(o, Op::Reduce { .. }));
    match first_reduce {
        None => GroupKind::Elementwise,
        Some(r) => {
            let row_after = d.stages[r..].iter().any(|(s, _)| {
                let node = g.node(*s);
                !matches!(node.op, Op::Reduce { .. })
                    && node_space(g, *s).map(|a| a.len()).unwrap_or(0) > d.outer.len()
            });
            if row_after {
                GroupKind::RowReduction
            } else {
                GroupKind::Reduction
            }
        }
    }
}
