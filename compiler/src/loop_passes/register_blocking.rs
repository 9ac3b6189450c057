//! Register blocking of reductions: the result loop vectorised around a reduction loop whose
//! loads would gather along it.
//!
//! A loop `P` whose body declares an accumulator and holds the vectorised reduction loop `R`
//! that feeds it is vectorised and unrolled instead of `R` when fewer loads in `R` would be
//! per-lane gathers (strided or masked) along `P` than along `R` — a dot `X[b, i]·W[i, o]`
//! over `i`, a sum over rows. Each vector step then keeps `unroll × lanes` outputs in
//! independent accumulators while `R` runs inside, each output summed in order. An ordered
//! reduction (f64 sums, products: `LowerOptions::reassociate_f64_sums`, listed in
//! [`PassContext::ordered_reductions`]) is always blocked when it can be, since it would run
//! scalar.
//!
//! Assumes: a kernel as lowering builds it, after `reduce_in_memory` and `span_fission`; the
//! innermost loops annotated `vectorize` where lowering allows it. Guarantees: only
//! annotations change (`P` vectorised and unrolled, `R` scalar), only when the vectoriser
//! accepts `P`'s whole body (`codegen::vectorize::plan`), never on the parallel loop; each
//! result still adds its terms in `R`'s order.

use super::{PassContext, PassOutcome};
use weft_ir::loop_ir::{AccId, BodyAccesses, Kernel, LoopId, Stmt};

/// Register-blocks every qualifying reduction of `k` (module docs); a line per blocked loop.
pub fn block_over_results(k: &mut Kernel, cx: &PassContext<'_>) -> PassOutcome {
    let body = std::mem::take(&mut k.body);
    let mut notes = Vec::new();
    block(k, &body, cx.ordered_reductions, &mut notes);
    k.body = body;
    PassOutcome::notes(notes)
}

fn block(k: &mut Kernel, body: &[Stmt], ordered_reductions: &[LoopId], notes: &mut Vec<String>) {
    for s in body {
        let Stmt::Loop { loop_id: p, body } = s else {
            continue;
        };
        block(k, body, ordered_reductions, notes);
        let declared: Vec<AccId> = body
            .iter()
            .filter_map(|s| match s {
                Stmt::DeclareAcc(a) => Some(*a),
                _ => None,
            })
            .collect();
        let annotations = k.loops[*p].annotations;
        if declared.is_empty() || annotations.vectorize || annotations.parallel {
            continue;
        }
        let inner = body.iter().find_map(|s| {
            match s {
            Stmt::Loop { loop_id, body }
                if (k.loops[*loop_id].annotations.vectorize
                    || ordered_reductions.contains(loop_id))
                    && body.iter().any(|s| {
                        matches!(s, Stmt::Reduce { acc, index: None, .. } if declared.contains(acc))
                    }) =>
            {
                Some((*loop_id, body))
            }
            _ => None,
        }
        });
        let Some((r, inner)) = inner else {
            continue;
        };
        let accesses = BodyAccesses::of(inner).loads;
        let gathers = |l: LoopId| {
            accesses
                .iter()
                .filter(|a| {
                    let c = a.index.coefficient(l);
                    let masked = a.mask.iter().any(|m| m.expr.coefficient(l) != 0);
                    (c != 0 && c != 1) || masked
                })
                .count()
        };
        let extent = k.loops[*p].extent;
        // An ordered reduction runs scalar otherwise, so blocking always pays.
        let ordered = ordered_reductions.contains(&r);
        if extent < 4 || (!ordered && gathers(*p) >= gathers(r)) {
            continue;
        }
        let (saved_p, saved_r) = (annotations, k.loops[r].annotations);
        k.loops[r].annotations.vectorize = false;
        k.loops[r].annotations.unroll = 1;
        let a = &mut k.loops[*p].annotations;
        a.vectorize = true;
        a.unroll = if extent >= 16 { 4 } else { 1 };
        if crate::codegen::vectorize::plan(k, *p, body).is_none() {
            k.loops[*p].annotations = saved_p;
            k.loops[r].annotations = saved_r;
        } else {
            notes.push(format!(
                "register-blocked: result loop %{p} vectorised around reduction %{r}, \
                 {} accumulators per step ({} would gather along %{r}, {} along %{p})",
                k.loops[*p].annotations.unroll * 4,
                weft_ir::size::count(gathers(r), "load", "loads"),
                gathers(*p)
            ));
        }
    }
}
