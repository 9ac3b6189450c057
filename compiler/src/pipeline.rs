//! The pass pipeline: simplify → fusion → kernel programs → layout → storage, keeping every
//! stage's result so it can be dumped (`weft explain`) and tested.
//!
//! Assumes: a graph that `Graph::verify` accepts (every length bound).
//! Guarantees: [`compile_plan`] either returns a complete [`CompiledPlan`] — kernels in a
//! topological schedule, every load and store addressed through a strided view, every stored
//! intermediate in a planned buffer — or a [`PassError`] naming what it cannot compile.

use crate::gemm::{plan_gemm, GemmOptions, GemmSpec};
use crate::passes::fusion::{fuse, FusionOptions, FusionPlan, GroupKind};
use crate::passes::kernel::{build_programs, KernelProgram};
use crate::passes::layout::{assign_layouts, LayoutPlan};
use crate::passes::simplify::{
    interpreter_evaluator, simplify, ConstantEvaluator, Simplified, SimplifyOptions,
};
use crate::passes::storage::{plan_buffers, BufferPlan};
use crate::passes::{NodeMap, PassError};
use std::collections::BTreeMap;
use weft_ir::{Axis, Graph, NodeId, Op};

/// How to compile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Fuse and share storage (true), or one kernel per op with every intermediate stored in a
    /// buffer of its own (false: the unfused baseline).
    pub fused: bool,
    /// Requested outputs besides the graph's marked outputs.
    pub outputs: Vec<NodeId>,
    /// Axis orders (major to minor) the caller asks for some placeholders and outputs, by node of
    /// the source graph; the others are row-major in their declared axes order.
    pub layouts: Vec<(NodeId, Vec<Axis>)>,
    /// Which dots a GEMM call computes (crate::gemm; `None`: every dot is a loop nest).
    pub gemm: Option<GemmOptions>,
    /// The least operand size (bytes) whose sums over a strided axis lowering takes in memory
    /// order (`crate::LowerOptions::reduce_in_memory_min_bytes`): fusion keeps such a
    /// reduction in a kernel of its own so that it can.
    pub reduce_in_memory_min_bytes: u64,
    /// Fold constant-only subgraphs with the reference interpreter (default true). Off, the
    /// kernels compute them: the oracle tests turn it off so that the interpreter is not
    /// compared with its own folded values (docs/testing.md).
    pub fold_constants: bool,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            fused: true,
            outputs: Vec::new(),
            layouts: Vec::new(),
            gemm: Some(GemmOptions::default()),
            reduce_in_memory_min_bytes: crate::loop_passes::thresholds::STRIDED_SUM_MIN_BYTES,
            fold_constants: true,
        }
    }
}

/// Every stage of compilation, in order.
#[derive(Clone, Debug)]
pub struct CompiledPlan {
    /// The input graph.
    pub source: Graph,
    /// The simplified graph and the map from source nodes to its nodes.
    pub simplified: Simplified,
    /// The requested outputs, as nodes of the simplified graph.
    pub outputs: Vec<NodeId>,
    /// Fusion groups and boundaries (over the simplified graph).
    pub fusion: FusionPlan,
    /// Layouts of stored tensors.
    pub layouts: LayoutPlan,
    /// One program per group, in schedule order, with strided views.
    pub kernels: Vec<KernelProgram>,
    /// Buffers.
    pub buffers: BufferPlan,
    /// Per kernel program (same order), the GEMM call that computes it instead of a loop nest,
    /// with the stored tensors it reads (A, B) and writes (C).
    pub gemms: Vec<Option<(GemmSpec, [NodeId; 3])>>,
}

impl CompiledPlan {
    /// Source node → simplified node.
    pub fn map(&self) -> &NodeMap {
        &self.simplified.map
    }
    /// One line per GEMM call: its kernel program, shape, strides and blocks.
    pub fn gemm_display(&self) -> String {
        let mut s = String::new();
        for (p, call) in self.kernels.iter().zip(&self.gemms) {
            if let Some((spec, _)) = call {
                s += &format!("kernel {}: {}\n", p.group, spec.display());
            }
        }
        s
    }
    /// Every stage as text: the simplified graph (text format) and what simplify did, fusion,
    /// layouts, kernels, buffers.
    pub fn display(&self) -> String {
        let g = &self.simplified.graph;
        let mut s = format!(
            "== simplify\n{:?}\n{}== fusion\n",
            self.simplified.stats,
            weft_ir::text::print(g)
        );
        s += &self.fusion.display(g);
        s += "== layout\n";
        s += &self.layouts.display(g);
        s += "== kernels\n";
        for k in &self.kernels {
            s += &k.display(g);
        }
        s += "== buffers\n";
        s += &self.buffers.display(g);
        if self.gemms.iter().any(Option::is_some) {
            s += "== gemm\n";
            s += &self.gemm_display();
        }
        s
    }
}

/// Runs the passes on `graph`. `evaluate` folds constant-only subgraphs (the reference
/// interpreter); without it only uniform constants fold.
pub fn compile_plan_with(
    graph: &Graph,
    options: &PlanOptions,
    evaluate: Option<ConstantEvaluator<'_>>,
) -> Result<CompiledPlan, PassError> {
    graph.verify()?;
    let simplified = simplify(
        graph,
        &SimplifyOptions {
            keep: options.outputs.clone(),
            ..SimplifyOptions::default()
        },
        evaluate,
    )?;
    let g = &simplified.graph;
    let outputs = options
        .outputs
        .iter()
        .map(|o| {
            simplified
                .map
                .get(*o)
                .ok_or_else(|| PassError::Internal(format!("requested output {o} was removed")))
        })
        .collect::<Result<Vec<_>, _>>()?;
    // Storing a node a reader would index per part of an axis it iterates whole avoids a
    // div/mod index; each retry stores one more node, so this ends. It ends in a plan: a stored
    // node is read by whole axes, and computed in its own frame, where even a flatten has its
    // parts (views.rs, `node_keys`), so a node once stored is never named again.
    // Likewise a stage its reader would read at another outer point ends its group there.
    let mut force_stored = Vec::new();
    let mut force_boundary = Vec::new();
    // A dot the GEMM path cannot compute after all (`plan_gemm` says why, once layouts are
    // known) is compiled again as a loop nest; each retry takes one dot off, so this ends.
    let mut no_gemm = Vec::new();
    let mut requested = BTreeMap::new();
    for (n, order) in &options.layouts {
        let m = simplified
            .map
            .get(*n)
            .ok_or_else(|| PassError::Unsupported {
                node: graph.node_label(*n),
                reason: "a layout was asked for a node the computation does not keep".into(),
            })?;
        requested.insert(m, order.clone());
    }
    let (fusion, kernels, layouts, gemms) = 'plan: loop {
        let (fusion, mut kernels) = loop {
            let fusion = fuse(
                g,
                &outputs,
                FusionOptions {
                    fused: options.fused,
                    force_stored: force_stored.clone(),
                    force_boundary: force_boundary.clone(),
                    gemm: options.gemm,
                    no_gemm: no_gemm.clone(),
                    strided_min_bytes: options.reduce_in_memory_min_bytes,
                },
            )?;
            match build_programs(g, &fusion) {
                Ok(k) => break (fusion, k),
                Err(PassError::SplitIndex { node, .. }) if !force_stored.contains(&node) => {
                    force_stored.push(node)
                }
                Err(PassError::OuterPoint { node, .. }) if !force_boundary.contains(&node) => {
                    force_boundary.push(node)
                }
                Err(e) => return Err(e),
            }
        };
        let layouts = assign_layouts(g, &fusion, &mut kernels, &requested)?;
        let mut gemms = Vec::with_capacity(kernels.len());
        for (p, grp) in kernels.iter().zip(&fusion.groups) {
            if grp.kind != GroupKind::Gemm {
                gemms.push(None);
                continue;
            }
            let gemm_options = options.gemm.unwrap_or_default();
            match plan_gemm(g, &layouts, p, &gemm_options) {
                Ok(call) => gemms.push(Some(call)),
                Err(_) => {
                    // A dot reading a padded view (a strided convolution's taps) reads it
                    // stored: the call then reads plain strided loads. Each retry stores one
                    // more node, so this ends.
                    if let Some(pad) = padded_operand(g, &grp.stages) {
                        if !force_stored.contains(&pad) {
                            force_stored.push(pad);
                            continue 'plan;
                        }
                    }
                    // A sum of taps falls back to a GEMM call per tap; a dot to the JIT.
                    match grp.stages.as_slice() {
                        [_, .., sum] => no_gemm.push(sum.node),
                        stages => no_gemm.extend(stages.iter().map(|s| s.node)),
                    }
                    continue 'plan;
                }
            }
        }
        break (fusion, kernels, layouts, gemms);
    };
    let batched = batched_calls(&gemms);
    let buffers = plan_buffers(g, &fusion, &kernels, &layouts, options.fused, &batched)?;
    Ok(CompiledPlan {
        source: graph.clone(),
        outputs,
        fusion,
        layouts,
        kernels,
        buffers,
        gemms,
        simplified,
    })
}

/// Per kernel, whether it is a GEMM call with batch axes (run batch index by batch index).
fn batched_calls(gemms: &[Option<(GemmSpec, [NodeId; 3])>]) -> Vec<bool> {
    gemms
        .iter()
        .map(|c| c.as_ref().is_some_and(|(spec, _)| !spec.batch.is_empty()))
        .collect()
}

/// The first `pad` view a dot among `stages` reads (through other views), if any.
fn padded_operand(g: &Graph, stages: &[crate::passes::groups::Stage]) -> Option<NodeId> {
    stages
        .iter()
        .filter(|s| matches!(g.node(s.node).op, Op::Dot(..)))
        .flat_map(|s| g.node(s.node).op.inputs())
        .find_map(|id| crate::passes::op_class::pad_under(g, id))
}

/// Runs the passes on `graph`, folding constant-only subgraphs with the reference interpreter
/// when [`PlanOptions::fold_constants`] says so.
pub fn compile_plan(graph: &Graph, options: &PlanOptions) -> Result<CompiledPlan, PassError> {
    let evaluate: ConstantEvaluator<'_> = &interpreter_evaluator;
    compile_plan_with(graph, options, options.fold_constants.then_some(evaluate))
}
