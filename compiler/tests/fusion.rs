//! Fusion, kernel programs, layouts and buffers on the workloads the issue names.

mod common;

use weft_compiler::passes::fusion::{BoundaryReason, GroupKind};
use weft_compiler::{compile_plan, PlanOptions};

fn fused() -> PlanOptions {
    PlanOptions::default()
}

#[test]
fn l2_sum_is_one_kernel_without_x_minus_y() {
    let g = common::l2_sum(10);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1);
    assert_eq!(p.fusion.groups[0].kind, GroupKind::Reduction);
    // Only x, y and the output exist in memory.
    assert_eq!(p.fusion.boundaries.len(), 3);
    assert_eq!(p.buffers.scratch_buffers(), 0);
    insta::assert_snapshot!(p.display());
}

#[test]
fn l2_dot_is_one_kernel_without_x_minus_y() {
    let g = common::l2_dot(10);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1);
    assert_eq!(p.fusion.groups[0].kind, GroupKind::Dot);
    let t = p.simplified.graph.find("t").unwrap();
    assert!(!p.fusion.is_stored(t));
    assert!(p.buffers.tensor_of(t).is_none());
    assert_eq!(p.buffers.scratch_buffers(), 0);
    insta::assert_snapshot!(p.display());
}

#[test]
fn softmax_is_one_row_kernel() {
    let g = common::softmax(4, 7);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1, "{}", p.display());
    assert_eq!(p.fusion.groups[0].kind, GroupKind::RowReduction);
    assert_eq!(p.fusion.groups[0].outer.len(), 1);
    // exp is computed once per element into a row scratch, not recomputed.
    let e = p.simplified.graph.find("e").unwrap();
    let k = &p.kernels[0];
    assert!(k.stages.iter().any(|s| s.node == e && s.local && !s.loops.is_empty()));
    insta::assert_snapshot!(p.display());
}

#[test]
fn layernorm_is_one_row_kernel() {
    let g = common::layernorm(3, 5);
    let p = compile_plan(&g, &fused()).unwrap();
    assert_eq!(p.fusion.groups.len(), 1, "{}", p.display());
    assert_eq!(p.fusion.groups[0].kind, GroupKind::RowReduction);
    insta::assert_snapshot!(p.display());
}

#[test]
fn mlp_uses_two_scratch_buffers_whatever_its_depth() {
    for layers in [2, 3, 8, 13] {
        let g = common::mlp(layers, 16);
        let p = compile_plan(&g, &fused()).unwrap();
        assert_eq!(p.fusion.groups.len(), layers, "{}", p.display());
        let expected = if layers > 2 { 2 } else { 1 };
        assert_eq!(p.buffers.scratch_buffers(), expected, "{}", p.display());
        assert!(p.buffers.arena_bytes < p.buffers.unshared_bytes || layers <= 3);
        for b in &p.fusion.boundaries {
            let n = p.simplified.graph.node(b.node);
            if n.name.as_deref().is_some_and(|s| s.starts_with('h') && s != "h0") {
                assert!(matches!(
                    b.reason,
                    BoundaryReason::DifferentIterationSpace | BoundaryReason::GraphOutput
                ));
            }
        }
    }
    let p = compile_plan(&common::mlp(8, 16), &fused()).unwrap();
    insta::assert_snapshot!(p.buffers.display(&p.simplified.graph));
}

#[test]
fn unfused_mode_stores_every_intermediate() {
    let g = common::softmax(4, 7);
    let p = compile_plan(
        &g,
        &PlanOptions {
            fused: false,
            ..PlanOptions::default()
        },
    )
    .unwrap();
    // max, subtract, exp, sum, divide: one kernel each.
    assert_eq!(p.fusion.groups.len(), 5, "{}", p.display());
    assert!(p.fusion.groups.iter().all(|g| g.stages.len() == 1));
    // Every intermediate has a buffer of its own.
    assert_eq!(p.buffers.scratch_buffers(), 4);
    assert_eq!(p.buffers.arena_bytes, p.buffers.unshared_bytes);
    insta::assert_snapshot!(p.fusion.display(&p.simplified.graph));
}

#[test]
fn views_fold_into_loads() {
    let g = common::views();
    let p = compile_plan(&g, &fused()).unwrap();
    // Only stored tensors and outputs are in memory: no view is ever copied.
    for b in &p.fusion.boundaries {
        let n = p.simplified.graph.node(b.node);
        assert!(!n.op.is_view() || b.reason == BoundaryReason::GraphOutput);
    }
    insta::assert_snapshot!(p.display());
}
