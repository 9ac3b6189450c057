//! Visiting a reduction's rows in memory order, whatever the result's order.
//!
//! Lowering nests a kernel's result loops in the order of its result's axes. When each result
//! reads a whole row of a large operand (the reduced loop walks it contiguously) but the
//! result is ordered otherwise — a sum over `A` of `[B, M, A]` stored as `[M, B]` — the rows
//! read one after another are a stride apart (`M·A` elements): each starts a new stream for
//! the hardware prefetcher and waits on memory (3.35 ms against 1.45 ms for the same sum
//! stored as `[B, M]`, Zen 4, 2026-11-24). This pass reorders the perfect nest of result loops
//! so that the operand's stride decreases inward: rows are then read in memory order, and
//! it is the stores (one element per row read) that stride.
//!
//! ```text
//! loop m parallel { loop b { acc a; loop r { reduce a, t[65536·b + 256·m + r] }; store s[256·m + b] } }
//! loop b parallel { loop m { acc a; loop r { reduce a, t[65536·b + 256·m + r] }; store s[256·m + b] } }
//! ```
//!
//! Assumes a kernel as lowering builds it, before `reduce_in_memory` and register blocking.
//! Guarantees: applied only to a perfect nest of at least two loops (each body exactly the next
//! loop) whose innermost body holds a loop; in which every store is of a buffer the nest does
//! not load, stores one element per iteration of the nest (its index varies with every nest
//! loop and with no loop inside the body) and no accumulator is declared outside the body;
//! and only for an operand of at least `min_bytes` read contiguously along a loop inside the
//! body. Each iteration of such a nest then reads only memory no iteration writes and writes
//! its own elements, so the iterations are independent and reordering them changes no result.
//! The loops' annotations stay at their places (the outermost stays the parallel one), and a
//! parallel nest is reordered only if the loop moved outermost has the old one's iterations
//! or [`PARALLEL_ITERATIONS`].

use weft_ir::loop_ir::{
    self, BodyAccesses, BufferAccessExpr, BufferId, Inst, Kernel, LoopId, Stmt,
};

/// Iterations of the parallel loop that give a pool enough work to balance: a nest whose
/// parallel loop has more is reordered only if the loop taking its place has this many.
pub const PARALLEL_ITERATIONS: u64 = 64;

/// [`rows_in_memory_order`] as a pass over the kernel's body.
pub fn run(k: &mut Kernel, cx: &super::PassContext<'_>) -> super::PassOutcome {
    let mut body = std::mem::take(&mut k.body);
    let note = rows_in_memory_order(k, &mut body, cx.options.strided_sum_min_bytes);
    k.body = body;
    super::PassOutcome::notes(note.into_iter().collect())
}

/// Reorders the outermost perfect nest of `body` (see the module docs); a line for
/// `weft explain` if it did.
pub fn rows_in_memory_order(k: &mut Kernel, body: &mut [Stmt], min_bytes: u64) -> Option<String> {
    let (nest, inner) = perfect_nest(body)?;
    let BodyAccesses {
        loads,
        stores,
        loops: inside,
    } = BodyAccesses::of(inner);
    if inside.is_empty() || !independent(k, &nest, &loads, &stores, &inside, inner) {
        return None;
    }
    let operand = loads
        .iter()
        .filter(|a| {
            let d = &k.buffers[a.buffer];
            d.len.saturating_mul(d.ty.size_bytes() as u64) >= min_bytes
                && inside.iter().any(|&l| a.index.coefficient(l) == 1)
        })
        .max_by_key(|a| k.buffers[a.buffer].len)?;
    let stride = |l: &LoopId| operand.index.coefficient(*l).unsigned_abs();
    let mut order = nest.clone();
    order.sort_by_key(|l| std::cmp::Reverse(stride(l)));
    // The outermost place is the parallel one: the loop moved there must still give the
    // threads as much work to share (a split reduction's 64 chunks around 3 results, say).
    let extent = |l: LoopId| k.loops[l].extent;
    let shares = !k.loops[nest[0]].annotations.parallel
        || extent(order[0]) >= extent(nest[0]).min(PARALLEL_ITERATIONS);
    if order == nest || !shares {
        return None;
    }
    let annotations: Vec<_> = nest.iter().map(|&l| k.loops[l].annotations).collect();
    for (&l, a) in order.iter().zip(annotations) {
        k.loops[l].annotations = a;
    }
    let name = k.buffers[operand.buffer].name.clone();
    let strides: Vec<String> = order.iter().map(|l| stride(l).to_string()).collect();
    let loops: Vec<String> = order.iter().map(|l| format!("%{l}")).collect();
    rename_nest(body, &order);
    Some(format!(
        "loops {} in %{name}'s memory order (strides {} elements), not the result's: its rows \
         are read one after another",
        loops.join(", "),
        strides.join(", ")
    ))
}

/// The loops of the perfect nest at the top of `body`, outermost first, and the innermost
/// body, if there are at least two loops and that body holds a loop.
fn perfect_nest(body: &[Stmt]) -> Option<(Vec<LoopId>, &[Stmt])> {
    let (nest, inner) = loop_ir::perfect_nest(body);
    (nest.len() >= 2 && inner.iter().any(|s| matches!(s, Stmt::Loop { .. })))
        .then_some((nest, inner))
}

/// Whether the nest's iterations are independent (the module's conditions).
fn independent(
    k: &Kernel,
    nest: &[LoopId],
    loads: &[&BufferAccessExpr],
    stores: &[&BufferAccessExpr],
    inside: &[LoopId],
    inner: &[Stmt],
) -> bool {
    let loaded: Vec<BufferId> = loads.iter().map(|a| a.buffer).collect();
    let own_element = |a: &&BufferAccessExpr| {
        !loaded.contains(&a.buffer)
            && inside.iter().all(|&l| a.index.coefficient(l) == 0)
            && nest.iter().all(|&l| a.index.coefficient(l) != 0)
            && one_to_one(k, nest, a)
    };
    !stores.is_empty() && stores.iter().all(own_element) && declares_its_accs(inner)
}

/// Whether distinct iterations of the nest store distinct elements through `a`: ordered by
/// stride, each loop's stride exceeds the furthest the loops of smaller stride reach.
fn one_to_one(k: &Kernel, nest: &[LoopId], a: &BufferAccessExpr) -> bool {
    let mut by_stride: Vec<(u64, u64)> = nest
        .iter()
        .map(|&l| (a.index.coefficient(l).unsigned_abs(), k.loops[l].extent))
        .collect();
    by_stride.sort_unstable();
    let mut reach: u64 = 0;
    for (stride, extent) in by_stride {
        if stride <= reach {
            return false;
        }
        let Some(r) = extent
            .saturating_sub(1)
            .checked_mul(stride)
            .and_then(|r| r.checked_add(reach))
        else {
            return false;
        };
        reach = r;
    }
    true
}

/// Whether every accumulator the body reduces into or reads is declared in it.
fn declares_its_accs(body: &[Stmt]) -> bool {
    fn walk(body: &[Stmt], declared: &mut Vec<weft_ir::loop_ir::AccId>) -> bool {
        body.iter().all(|s| match s {
            Stmt::DeclareAcc(a) => {
                declared.push(*a);
                true
            }
            Stmt::Reduce { acc, .. }
            | Stmt::Let {
                inst: Inst::AccValue(acc) | Inst::AccIndex(acc),
                ..
            } => declared.contains(acc),
            Stmt::Loop { body, .. } => walk(body, declared),
            _ => true,
        })
    }
    walk(body, &mut Vec::new())
}

/// Gives the perfect nest at the top of `body` the loop ids of `order`, outermost first.
fn rename_nest(body: &mut [Stmt], order: &[LoopId]) {
    let mut cur = body;
    for &l in order {
        let [Stmt::Loop { loop_id, body }] = cur else {
            return;
        };
        *loop_id = l;
        cur = body;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::arena::EntityRef;
    use weft_ir::loop_ir::{AffineExpr, BufferAccess, LoopAnnotations, ReduceKind, ScalarType};

    /// `loop m parallel { loop b { acc; loop r { reduce t[B·b + M·m... ] }; store } }` with the
    /// operand's strides `sm`, `sb` along `m` and `b`.
    fn sum_nest(sm: i64, sb: i64) -> (Kernel, LoopId, LoopId) {
        let mut k = Kernel::new("k");
        let t = k.add_buffer("t", ScalarType::F32, 1 << 24, BufferAccess::Read);
        let s = k.add_buffer("s", ScalarType::F32, 1 << 16, BufferAccess::Write);
        let parallel = LoopAnnotations {
            parallel: true,
            ..LoopAnnotations::default()
        };
        let m = k.add_loop(256, parallel);
        let b = k.add_loop(256, LoopAnnotations::default());
        let r = k.add_loop(256, LoopAnnotations::default());
        let acc = k.add_acc(ReduceKind::Sum, ScalarType::F32);
        let load = BufferAccessExpr {
            buffer: t,
            index: AffineExpr::new([(m, sm), (b, sb), (r, 1)], 0),
            mask: Vec::new(),
        };
        let (v, let_v) = k.define(ScalarType::F32, Inst::Load(load));
        let (total, let_total) = k.define(ScalarType::F32, Inst::AccValue(acc));
        let store = Stmt::Store {
            target: BufferAccessExpr {
                buffer: s,
                index: AffineExpr::new([(m, 256), (b, 1)], 0),
                mask: Vec::new(),
            },
            value: total,
        };
        let reduce = Stmt::Reduce {
            acc,
            value: v,
            index: None,
        };
        let inner = vec![
            Stmt::DeclareAcc(acc),
            Stmt::Loop {
                loop_id: r,
                body: vec![let_v, reduce],
            },
            let_total,
            store,
        ];
        k.body = vec![Stmt::Loop {
            loop_id: m,
            body: vec![Stmt::Loop {
                loop_id: b,
                body: inner,
            }],
        }];
        (k, m, b)
    }

    fn nest_of(k: &Kernel) -> Vec<LoopId> {
        perfect_nest(&k.body).expect("a nest").0
    }

    #[test]
    fn rows_a_stride_apart_are_read_in_memory_order() {
        let (mut k, m, b) = sum_nest(256, 65536);
        let mut body = std::mem::take(&mut k.body);
        let note = rows_in_memory_order(&mut k, &mut body, 1 << 20).expect("reordered");
        k.body = body;
        assert_eq!(nest_of(&k), vec![b, m]);
        assert!(k.loops[b].annotations.parallel && !k.loops[m].annotations.parallel);
        assert!(note.contains("strides 65536, 256"), "{note}");
        weft_ir::loop_ir::verify(&k).expect("still a valid kernel");
    }

    #[test]
    fn nests_already_in_memory_order_or_small_operands_are_left() {
        for (sm, sb, min_bytes) in [(65536, 256, 1 << 20), (256, 65536, 1 << 30)] {
            let (mut k, m, b) = sum_nest(sm, sb);
            let mut body = std::mem::take(&mut k.body);
            assert!(rows_in_memory_order(&mut k, &mut body, min_bytes).is_none());
            k.body = body;
            assert_eq!(nest_of(&k), vec![m, b]);
        }
    }

    #[test]
    fn a_parallel_loop_keeps_its_work_to_share() {
        let (mut k, m, b) = sum_nest(256, 65536);
        k.loops[b].extent = 3;
        let mut body = std::mem::take(&mut k.body);
        assert!(rows_in_memory_order(&mut k, &mut body, 1 << 20).is_none());
        k.body = body;
        assert_eq!(nest_of(&k), vec![m, b]);
        k.loops[m].annotations.parallel = false;
        let mut body = std::mem::take(&mut k.body);
        assert!(rows_in_memory_order(&mut k, &mut body, 1 << 20).is_some());
    }

    #[test]
    fn a_store_shared_by_iterations_is_left_in_order() {
        let (mut k, m, b) = sum_nest(256, 65536);
        let mut body = std::mem::take(&mut k.body);
        // Make every b store the same element: iterations no longer independent.
        fn flatten_store(body: &mut [Stmt], b: LoopId) {
            for s in body {
                match s {
                    Stmt::Store { target, .. } => {
                        target.index = AffineExpr::new([(b, 0)], 0);
                    }
                    Stmt::Loop { body, .. } => flatten_store(body, b),
                    _ => {}
                }
            }
        }
        flatten_store(&mut body, b);
        assert!(rows_in_memory_order(&mut k, &mut body, 1 << 20).is_none());
        k.body = body;
        assert_eq!(nest_of(&k), vec![m, b]);
    }

    #[test]
    fn overlapping_stores_are_not_one_to_one() {
        let (k, m, b) = sum_nest(256, 65536);
        let overlapping = BufferAccessExpr {
            buffer: BufferId::new(1),
            index: AffineExpr::new([(m, 100), (b, 1)], 0),
            mask: Vec::new(),
        };
        assert!(!one_to_one(&k, &[m, b], &overlapping));
        let disjoint = BufferAccessExpr {
            index: AffineExpr::new([(m, 256), (b, 1)], 0),
            ..overlapping
        };
        assert!(one_to_one(&k, &[m, b], &disjoint));
    }
}
