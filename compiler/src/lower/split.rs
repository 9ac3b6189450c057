//! Split reductions: a long reduction to a short result (a scalar sum, an l2 norm, a mean, a
//! max over a few rows) runs over the thread pool as two kernels instead of one kernel whose
//! outer loop has too few iterations to share.
//!
//! Assumes: a kernel program of the pipeline, and [`LowerOptions`] to decide with.
//! Guarantees ([`plan_split`]):
//! - only a program whose first stage is its only reduction is split: a sum, mean, max, min or
//!   integer product that may be reassociated (never one `keeps_order` keeps in the
//!   interpreter's order: f64 sums unless `reassociate_f64_sums`, float products), with at
//!   least `split_min_terms` terms per result and at most `split_max_results` results (outer
//!   points × the stage's own points); later stages are elementwise over its result;
//! - the reduction's leading axis (length `n`) is cut into `chunks` = the largest divisor of
//!   `n` in `2..=split_chunks`, each chunk `n / chunks` consecutive indices: a function of the
//!   program and the options only, never of the thread count or timing, so the result is the
//!   same on every run and for every thread count;
//! - the partials kernel ([`partials_program`]) has an outermost `parallel` loop over the
//!   chunks; each chunk reduces its range for every result with the kernel's usual vector
//!   accumulators and stores the accumulator (in its accumulation type: f64 for f32 sums,
//!   before a mean's division or the final rounding) into its own slot `chunk·results + result`
//!   of a small partials buffer, so chunks never share a slot;
//! - the combining kernel ([`combine_program`]) runs after it, on one thread: per result it
//!   reduces the slots in chunk order 0, 1, 2, … with a scalar accumulator, then does what the
//!   unsplit kernel does after the reduction (a mean's division by the whole count, rounding
//!   to the node's dtype, the store, and every later stage: a sqrt for a norm).
//!
//! The order of the terms differs from the interpreter's (as vectorised reductions already
//! do); docs/numerics.md says what that changes.

use super::options::{accumulation_type, keeps_order, stage_value_type, LowerOptions};
use crate::passes::kernel::{KernelProgram, StageProgram};
use weft_ir::{DType, Graph, NodeId, ReduceOp};

/// How one program's reduction is split.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    /// The reducing stage's node.
    pub node: NodeId,
    /// Chunks of the leading reduction axis (the partials kernel's parallel extent).
    pub chunks: u64,
    /// Indices of the leading axis per chunk.
    pub per_chunk: u64,
    /// Results per chunk: outer points × the stage's own points.
    pub results: u64,
    /// The accumulation type, which the partials are kept in.
    pub acc: DType,
}

/// Whether `program` is split, and how (see the module doc).
pub(crate) fn plan_split(
    g: &Graph,
    program: &KernelProgram,
    options: &LowerOptions,
) -> Option<Split> {
    if options.split_min_terms == 0 {
        return None;
    }
    let (first, rest) = program.stages.split_first()?;
    let reduction = first.reduction.as_ref()?;
    if rest.iter().any(|s| s.reduction.is_some()) {
        return None;
    }
    let node_dtype = g.node(first.node).dtype;
    let reassociable = match reduction.op {
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Max | ReduceOp::Min | ReduceOp::Prod => {
            !keeps_order(reduction.op, node_dtype, options)
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => false,
    };
    if !reassociable {
        return None;
    }
    let points = |axes: &[crate::passes::views::IterAxis]| {
        axes.iter()
            .fold(1u64, |n, a| n.saturating_mul(a.len as u64))
    };
    let terms = points(&reduction.axes);
    let results = points(&program.outer).saturating_mul(points(&first.loops));
    if terms < options.split_min_terms || results == 0 || results > options.split_max_results {
        return None;
    }
    let lead = reduction.axes.first()?.len as u64;
    let chunks = (2..=options.split_chunks.min(lead))
        .rev()
        .find(|d| lead.is_multiple_of(*d))?;
    let acc = accumulation_type(reduction.op, stage_value_type(g, first, options), options);
    Some(Split {
        node: first.node,
        chunks,
        per_chunk: lead / chunks,
        results,
        acc,
    })
}

/// The program of the partials kernel: the reducing stage alone, neither stored nor kept.
pub(crate) fn partials_program(program: &KernelProgram) -> KernelProgram {
    KernelProgram {
        group: program.group,
        outer: program.outer.clone(),
        stages: program
            .stages
            .first()
            .map(|s| StageProgram {
                store: None,
                local: false,
                ..s.clone()
            })
            .into_iter()
            .collect(),
    }
}

/// The program of the combining kernel: every stage, the reducing one without its body (it
/// reads the partials instead, so it loads none of the inputs).
pub(crate) fn combine_program(program: &KernelProgram) -> KernelProgram {
    let mut combined = program.clone();
    if let Some(first) = combined.stages.first_mut() {
        first.body.clear();
        first.result = 0;
    }
    combined
}
