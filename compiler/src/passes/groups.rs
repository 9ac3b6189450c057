//! What fusion records: the groups (kernels) it partitions a graph into, each stored value's
//! reason, and every merge the cost model weighed. The data the later passes (kernel, layout,
//! storage) and `weft explain` read; [`super::fusion`] builds it.
//!
//! Assumes nothing; guarantees nothing beyond its types' documentation (the invariants a
//! [`FusionPlan`] satisfies are fusion's, stated in [`super::fusion`]).

use super::cost::Estimate;
use super::views::IterAxis;
use std::fmt;
use weft_ir::{Graph, NodeId};

/// Why a node is computed once, as a stage, rather than inline in its readers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StageReason {
    /// A reduction: its loop over the reduced axes is computed once per result element.
    Reduction,
    /// A dot: a contraction, computed once per result element.
    Dot,
    /// A sum of products read as a contraction (`Graph::sum_of_products`) and computed by a
    /// GEMM call: its product is never stored.
    Contraction,
    /// A term of a sum of GEMM taps ([`TapSum`](super::fusion::TapSum)): its GEMM call adds
    /// it into the sum's result, so it is never stored.
    Tap,
    /// The last add of a sum of GEMM taps ([`TapSum`](super::fusion::TapSum)): the GEMM
    /// call's result.
    TapSum,
    /// An expensive op read by several consumers (or twice by one).
    MultipleConsumersExpensive,
    /// An expensive op read through a broadcast: inline, it would be recomputed per repeat.
    BroadcastExpensive,
    /// A value padded with a constant other than zero (a `select` on a padded mask over a
    /// padded view: a max pool's `−inf` border) read by several consumers: inline, every
    /// reader would choose per lane at the border (scalar code); stored, it is loaded plainly.
    PaddedSeveral,
    /// A cheap op that inline would be evaluated more than
    /// [`MAX_INLINE_USES`](super::fusion::MAX_INLINE_USES) times per element (a tree of folds
    /// over shifted views of it, as a large pool's): inline, the kernel's body — and its
    /// compile time — would grow with the uses.
    ManyUses,
    /// An operand of a dot whose elements the dot reads many times (once per element of the other
    /// operand's free axes): inline, it would be recomputed each time.
    DotOperand,
    /// A value the computation returns.
    GraphOutput,
    /// The new value of a variable or persistent tensor.
    AssignValue,
    /// Unfused mode: every op is a stage of its own group.
    Unfused,
    /// Its reader iterates a flattened axis whole while it is computed per part: stored, so the
    /// reader indexes it whole without div/mod (see `views.rs`).
    SplitIndex,
    /// Inline, its reader's kernel would compute more than
    /// [`MAX_KERNEL_NODES`](super::fusion::MAX_KERNEL_NODES) ops (a long elementwise chain): a
    /// stage of its own, so every kernel's body stays bounded.
    KernelSize,
}

/// Why a value is stored to memory between groups (a group boundary).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BoundaryReason {
    /// A placeholder, variable, persistent tensor or constant: it exists before the call.
    Stored,
    /// A value the computation returns.
    GraphOutput,
    /// The new value of a variable or persistent tensor, copied into it after the call.
    AssignTarget,
    /// Read by several groups.
    ConsumersInSeveralGroups,
    /// Its group and its reader's group share no outer axis (e.g. one MLP layer's output read by
    /// the next layer's dot), so they cannot be one loop.
    DifferentIterationSpace,
    /// The reader sees it through a view that moves along the shared outer axes (a slice, pad,
    /// transpose... of a row axis), so it is not available at the reader's outer point.
    ViewOfOuterAxes,
    /// An operand a dot reads many times: stored so the dot kernel reads plain memory (and can
    /// block its loops) instead of a per-row scratch — or an operand of a dot computed by a
    /// GEMM call, which reads only memory.
    DotOperand,
    /// Unfused mode.
    Unfused,
    /// Stored to avoid a div/mod index ([`StageReason::SplitIndex`]).
    SplitIndex,
    /// A dot computed by a GEMM call (crate::gemm): the call writes the whole result to
    /// memory, and the elementwise work after it (bias, activation) reads it there in a kernel
    /// of its own.
    Gemm,
    /// A sum of products computed as a contraction by a GEMM call (`Graph::sum_of_products`):
    /// the product is never stored, the result is, as a dot's.
    GemmContraction,
    /// A sum of dots computed by one GEMM call adding each into the result in turn
    /// ([`TapSum`](super::fusion::TapSum): a convolution's taps).
    GemmTaps,
    /// A reduction over an axis its operand strides along (not the innermost in memory):
    /// alone in its kernel, `crate::reduce_in_memory` sums it in memory order, which it cannot
    /// do for one pass of a kernel of several (`strided_reduction`).
    StridedReduction,
    /// Merged into its reader, the cost model (`super::cost`) predicts the kernel slower than
    /// the two apart: [`FusionPlan::decisions`] has the figures.
    CostModel,
    /// Merged into its reader, the kernel would compute more than
    /// [`MAX_KERNEL_NODES`](super::fusion::MAX_KERNEL_NODES) ops.
    KernelSize,
}

macro_rules! display_names {
    ($t:ty { $($v:ident => $s:literal),* $(,)? }) => {
        impl $t {
            /// A short name for listings (`weft explain`).
            pub fn name(self) -> &'static str {
                match self { $(<$t>::$v => $s),* }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

display_names!(StageReason {
    Reduction => "reduction",
    Dot => "dot",
    Contraction => "sum of products computed as a contraction",
    Tap => "tap of a sum of GEMM taps (added in place, never stored)",
    TapSum => "sum of GEMM taps",
    MultipleConsumersExpensive => "expensive, several consumers",
    BroadcastExpensive => "expensive, read through a broadcast",
    PaddedSeveral => "padded with a constant, several consumers",
    ManyUses => "evaluated too many times per element inline",
    DotOperand => "dot operand read many times",
    GraphOutput => "graph output",
    AssignValue => "assigned value",
    Unfused => "unfused",
    SplitIndex => "flattened axis iterated whole by its reader",
    KernelSize => "its reader's kernel would exceed the kernel size bound inline",
});

display_names!(BoundaryReason {
    Stored => "stored tensor",
    GraphOutput => "graph output",
    AssignTarget => "assign target",
    ConsumersInSeveralGroups => "consumers in several groups",
    DifferentIterationSpace => "different iteration space",
    ViewOfOuterAxes => "read through a view of the outer axes",
    DotOperand => "dot operand",
    Unfused => "unfused",
    SplitIndex => "flattened axis iterated whole by its reader",
    Gemm => "computed by a GEMM call",
    GemmTaps => "sum of taps computed by one GEMM call (taps never stored)",
    GemmContraction => "sum of products computed by a GEMM call (product never stored)",
    StridedReduction => "reduction over a strided axis, summed in memory order in a kernel of its own",
    CostModel => "the cost model predicts the merged kernel slower",
    KernelSize => "the merged kernel would exceed the kernel size bound",
});

/// A value stored to memory, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boundary {
    /// The stored node.
    pub node: NodeId,
    /// Why it is stored.
    pub reason: BoundaryReason,
}

/// What a group computes, for choosing a lowering strategy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GroupKind {
    /// Elementwise work (and views) only: one loop nest over the outer axes.
    Elementwise,
    /// Reductions, possibly with elementwise work per result element.
    Reduction,
    /// Reductions over a row followed by elementwise work over the same row (softmax, layernorm):
    /// a loop over rows holding the reduction loops and the output loop.
    RowReduction,
    /// A contraction (dot), possibly with elementwise work before and after.
    Dot,
    /// A dot alone, computed by a GEMM call (crate::gemm) rather than a loop nest.
    Gemm,
}

/// A stage of a group: a node computed once per point of the group's outer axes times the
/// stage's own loops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    /// The node computed.
    pub node: NodeId,
    /// Why it is a stage.
    pub reason: StageReason,
    /// True if the value is written to the node's tensor (read by another group or returned);
    /// otherwise it lives only in a register or a per-row scratch of the group.
    pub stored: bool,
}

/// A fused kernel: a loop over `outer` holding `stages` in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusionGroup {
    /// The group's index in [`FusionPlan::groups`] (its place in the schedule).
    pub id: usize,
    /// What it computes.
    pub kind: GroupKind,
    /// The outer iteration space (flattened axes expanded into their parts).
    pub outer: Vec<IterAxis>,
    /// The stages, in evaluation order.
    pub stages: Vec<Stage>,
    /// Every node the group evaluates: its stages and the inline nodes (views, cheap
    /// elementwise ops) they read, in topological order.
    pub nodes: Vec<NodeId>,
    /// The stored values it reads (tensors and other groups' stored stages), in node order.
    pub inputs: Vec<NodeId>,
    /// What the cost model predicts the group costs as one kernel.
    pub estimate: Estimate,
    /// What it predicts the group's ops cost unfused: one kernel each, every intermediate
    /// stored.
    pub unfused: Estimate,
}

impl FusionGroup {
    /// The stages whose values are written to memory (the group's roots).
    pub fn roots(&self) -> Vec<NodeId> {
        self.stages
            .iter()
            .filter(|s| s.stored)
            .map(|s| s.node)
            .collect()
    }
}

/// The result of fusion: groups in a topological schedule, and why each stored value is stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusionPlan {
    /// Groups in execution order.
    pub groups: Vec<FusionGroup>,
    /// Every stored value (tensors, stored stages) and why it is stored, sorted by node.
    pub boundaries: Vec<Boundary>,
    /// The nodes that stages and outputs depend on; nodes outside are not computed.
    pub live: Vec<bool>,
    /// Every merge of a producer group into its reader's that passed the structural checks,
    /// with the cost model's figures, in the order fusion weighed them.
    pub decisions: Vec<MergeDecision>,
}

/// A merge of a producer group into its only reader's, weighed by the cost model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeDecision {
    /// The producer group's stages.
    pub producer: Vec<NodeId>,
    /// The reader group's last stage, which names it (its stages grow with each merge into
    /// it, so they are not kept here).
    pub reader: Option<NodeId>,
    /// The predicted cost of the two as one kernel.
    pub merged: Estimate,
    /// The predicted cost of the two as separate kernels, the producer's values stored.
    pub apart: Estimate,
    /// Whether they were merged (`merged` predicted no slower than `apart`).
    pub taken: bool,
}

impl FusionPlan {
    /// The group computing `node` as a stage, if any.
    pub fn group_of(&self, node: NodeId) -> Option<usize> {
        self.groups
            .iter()
            .find(|g| g.stages.iter().any(|s| s.node == node))
            .map(|g| g.id)
    }
    /// True if `node` exists in memory: a stored tensor or a stored stage.
    pub fn is_stored(&self, node: NodeId) -> bool {
        self.boundaries
            .binary_search_by_key(&node, |b| b.node)
            .is_ok()
    }
    /// A readable listing: one block per group with its stages and reasons, then the boundaries.
    pub fn display(&self, g: &Graph) -> String {
        let mut s = String::new();
        for grp in &self.groups {
            let outer: Vec<String> = grp.outer.iter().map(|a| a.display(g)).collect();
            s += &format!(
                "group {} {:?} outer ({})\n",
                grp.id,
                grp.kind,
                outer.join(", ")
            );
            for st in &grp.stages {
                s += &format!(
                    "  stage {} = {}{} [{}]\n",
                    g.node_label(st.node),
                    g.node(st.node).op.name(),
                    if st.stored { " -> stored" } else { "" },
                    st.reason
                );
            }
            let inline: Vec<String> = grp
                .nodes
                .iter()
                .filter(|n| !grp.stages.iter().any(|st| st.node == **n))
                .map(|n| format!("{}={}", g.node_label(*n), g.node(*n).op.name()))
                .collect();
            if !inline.is_empty() {
                s += &format!("  inline {}\n", inline.join(" "));
            }
            let inputs: Vec<String> = grp.inputs.iter().map(|n| g.node_label(*n)).collect();
            s += &format!("  reads {}\n", inputs.join(" "));
        }
        for b in &self.boundaries {
            s += &format!("boundary {}: {}\n", g.node_label(b.node), b.reason);
        }
        s
    }
}
