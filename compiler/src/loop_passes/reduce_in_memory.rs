//! Sums (and maxima, minima) over a strided axis in memory order: accumulators in a scratch
//! row, not registers.
//!
//! Lowering gives each result of a reduction its own accumulator and runs the reduced axis
//! innermost. When that axis is not the contiguous one — a column sum, a sum over the first or
//! middle axis of `[B, M, A]` — every term is a stride away from the last: register blocking
//! over the contiguous result axis helps, yet each step still reads one cache line from a
//! different page, and the loads wait on memory (a sum over `B` of `[256, 256, 256]` f32 took
//! 36 ms against a 4 ms floor on Zen 1; with the result transposed, 344 ms). This pass turns
//!
//! ```text
//! loop k { acc a; loop r { v = f(x[.. + S·r + k]); reduce a, v }; tail(acc.value a) }
//! ```
//!
//! into three loops over `k` around and after the reduced loop,
//!
//! ```text
//! loop k { acc_row[k] = 0 }; loop r { loop k { acc_row[k] += f(x[.. + S·r + k]) } };
//! loop k { tail(acc_row[k]) }
//! ```
//!
//! so the operand is read in memory order, contiguous runs of `k` at a time, and the row of
//! accumulators stays in cache. Where the runs of consecutive `r` are a stride apart, one step
//! of `r` takes [`JAM`] of them (`acc_row[k] = (((acc_row[k] + f(x₀)) + f(x₁)) + …)`), so each
//! accumulator is loaded and stored once per `JAM` terms and `JAM` runs stream side by side.
//! Each result still adds its terms in the order of `r` — the interpreter's order, so the pass
//! may apply to the f64 sums that must keep it.
//! A max or min row folds with the accumulator's own order-free step (`reduce_max`,
//! `reduce_min` in the loop IR), so its results are the accumulator's.
//!
//! Assumes a kernel as lowering builds it, before register blocking. Guarantees: applied to a
//! loop `k` whose body is exactly lets of values per result (a load of a mean the sum
//! subtracts, say; recomputed where the new loops read them), an accumulator declaration, one
//! loop `r` whose flat body lets
//! values and reduces them into that accumulator (a `sum`, no index), and a flat tail of lets
//! and stores that reads the accumulator once; only when a load in `r` of an operand of at
//! least `min_bytes` ([`STRIDED_SUM_MIN_BYTES`] by default) strides at least
//! [`MIN_STRIDE`] elements along `r` and 1 along `k` (or along a loop enclosing `k` in a perfect
//! nest, which is first interchanged with `k`), and nothing in `r` or the tail reads `k`'s
//! index directly. The accumulators' row (the acc's type, one row per iteration of the
//! kernel's parallel loop, or the whole extent when `k` is that loop, strip-mined into
//! blocks of [`block_width`] — or, where no width divides it, the whole extent on one thread,
//! the loop no longer parallel; when `k` is the parallel loop's only statement and the operand
//! reads the two as one flattened index, the parallel loop takes groups of rows,
//! `rewrite_group`) is a new
//! buffer the caller binds as scratch. Every result is the same sum of the
//! same terms in the same order, so results are unchanged — up to rounding where an f32 sum of
//! at most [`MAX_CHAIN`] terms a result runs in an f32 row first (`narrowed`: within
//! `2⁻¹⁴ · Σ|xᵢ|` of the f64 sum, and summed again in f64 under an `if` when a result is not
//! finite, so never another class of result), its tail in f32 where it can be (no f64 lane
//! outside the re-run); a longer f32 sum adds such rows of blocks of at most [`MAX_CHAIN`]
//! terms into its f64 row (`in_blocks`).

use weft_ir::loop_ir::{
    drop_unused, lets_of, rename_reads, uses, AccId, AffineExpr, BinaryOp, BufferAccess,
    BufferAccessExpr, BufferId, CompareOp, Inst, Kernel, LoopAnnotations, LoopId, ReduceKind,
    ScalarType, ScalarValue, Stmt, UnaryOp, ValueId,
};

use weft_ir::arena::EntityRef;

use super::blocks::block_width;
#[cfg(doc)]
use super::thresholds::STRIDED_SUM_MIN_BYTES;
use super::{PassContext, PassOutcome};

/// The least stride (elements) along the reduced loop that makes the rewrite worth it: a
/// batch-norm over the first axis of [32768, 32] ran 2.4× faster in memory order than
/// gathered, one of [65536, 16] no faster (docs/benchmarks.md); was 64.
pub const MIN_STRIDE: i64 = 32;

/// [`reduce_in_memory`] as a pass: the kernel's body rewritten in place.
pub fn run(k: &mut Kernel, cx: &PassContext<'_>) -> PassOutcome {
    let o = &cx.options;
    let body = std::mem::take(&mut k.body);
    let (body, scratch, notes) = reduce_in_memory(
        k,
        body,
        o.vectorize,
        o.strided_sum_min_bytes,
        o.narrow_f32_sums,
    );
    k.body = body;
    PassOutcome {
        changed: !notes.is_empty(),
        scratch,
        notes,
    }
}

/// Rewrites every qualifying reduction of `body` (see the module docs); returns the new body,
/// the scratch buffers it added to `k` (in order), which the caller must bind, and a line per
/// rewrite for `weft explain`.
pub fn reduce_in_memory(
    k: &mut Kernel,
    body: Vec<Stmt>,
    vectorize: bool,
    min_bytes: u64,
    narrow: bool,
) -> (Vec<Stmt>, Vec<BufferId>, Vec<String>) {
    let mut body = body;
    interchange(k, &mut body, min_bytes);
    let parallel = match body.as_slice() {
        [Stmt::Loop { loop_id, .. }] if k.loops[*loop_id].annotations.parallel => Some(*loop_id),
        _ => None,
    };
    let opts = Rewrite {
        parallel,
        vectorize,
        min_bytes,
        narrow,
    };
    let mut rows: Vec<(ReduceKind, Rows)> = Vec::new();
    let body = walk(k, body, &opts, &mut rows);
    let notes = rows
        .iter()
        .map(|(kind, r)| {
            let d = &k.buffers[r.buffers[0]];
            match r.buffers.get(1) {
                Some(n) if r.blocks => format!(
                    "sum over a strided axis in memory order: %{} holds {} f32 accumulators, \
                     summed in blocks of at most {} terms, each block added into %{} in f64; \
                     summed again in f64 if any is not finite",
                    k.buffers[*n].name, d.len, MAX_CHAIN, d.name
                ),
                Some(n) if r.f32_tail => format!(
                    "sum over a strided axis in memory order: %{} holds {} f32 accumulators \
                     (at most {} terms each), the reduced loop outside the contiguous one, \
                     read by the tail in f32; summed again in f64 into %{} for a tail of its \
                     own if any is not finite",
                    k.buffers[*n].name, d.len, MAX_CHAIN, d.name
                ),
                Some(n) => format!(
                    "sum over a strided axis in memory order: %{} holds {} f32 accumulators \
                     (at most {} terms each), the reduced loop outside the contiguous one, \
                     widened into %{} for the tail; summed again in f64 there if any is not \
                     finite",
                    k.buffers[*n].name, d.len, MAX_CHAIN, d.name
                ),
                None => format!(
                    "{kind} over a strided axis in memory order: %{} holds {} {} accumulators, \
                     the reduced loop outside the contiguous one",
                    d.name, d.len, d.ty
                ),
            }
        })
        .collect();
    (
        body,
        rows.into_iter().flat_map(|r| r.1.buffers).collect(),
        notes,
    )
}

/// How [`reduce_in_memory`] rewrites: the kernel's parallel loop, and the options.
struct Rewrite {
    parallel: Option<LoopId>,
    vectorize: bool,
    min_bytes: u64,
    narrow: bool,
}

/// Rewrites the candidates of `body`; each rewrite's scratch rows go to `added` (the row
/// the tail reads first, then an f32 row where the sums were narrowed).
fn walk(
    k: &mut Kernel,
    body: Vec<Stmt>,
    o: &Rewrite,
    added: &mut Vec<(ReduceKind, Rows)>,
) -> Vec<Stmt> {
    let (parallel, vectorize, min_bytes) = (o.parallel, o.vectorize, o.min_bytes);
    let mut out = Vec::with_capacity(body.len());
    for s in body {
        let Stmt::Loop { loop_id, body } = s else {
            out.push(s);
            continue;
        };
        // The parallel loop holding only `k`: rows of results can be taken in groups.
        if let (
            Some(p),
            [Stmt::Loop {
                loop_id: kl,
                body: kb,
            }],
        ) = (parallel, body.as_slice())
        {
            if p == loop_id {
                if let Some(c) = Candidate::find(k, kb, *kl, min_bytes) {
                    let terms = k.loops[c.r].extent;
                    if let Some((stmts, buffer)) = rewrite_group(k, p, *kl, kb, c, vectorize) {
                        let (stmts, rows) = narrowed(k, stmts, buffer, terms, o.narrow);
                        added.push((k.accs[c.acc].kind, rows));
                        out.push(Stmt::Loop {
                            loop_id,
                            body: stmts,
                        });
                        continue;
                    }
                }
            }
        }
        if let Some(c) = Candidate::find(k, &body, loop_id, min_bytes) {
            if let Some((stmts, rows)) = rewrite(k, loop_id, body.clone(), c, o) {
                added.push((k.accs[c.acc].kind, rows));
                out.extend(stmts);
                continue;
            }
        }
        let body = walk(k, body, o, added);
        out.push(Stmt::Loop { loop_id, body });
    }
    out
}

/// Where a candidate's operand is contiguous along a loop `l` enclosing its loop `d` in a
/// perfect nest (each body exactly the next loop), swaps the two loops' places (`l`'s
/// annotations stay at the outer place), so `l` holds the reduction. Iterations of a perfect
/// nest of result loops are independent, so only their order changes.
fn interchange(k: &mut Kernel, body: &mut [Stmt], min_bytes: u64) {
    for s in body.iter_mut() {
        let Stmt::Loop {
            loop_id: l,
            body: lb,
        } = s
        else {
            continue;
        };
        let l = *l;
        if Candidate::find(k, lb, l, min_bytes).is_none() {
            let mut cur: &mut Vec<Stmt> = lb;
            while let [Stmt::Loop {
                loop_id: d,
                body: db,
            }] = cur.as_mut_slice()
            {
                if Candidate::find(k, db, l, min_bytes).is_some() {
                    let d_id = *d;
                    *d = l;
                    let (la, da) = (k.loops[l].annotations, k.loops[d_id].annotations);
                    k.loops[d_id].annotations = la;
                    k.loops[l].annotations = da;
                    if let Stmt::Loop { loop_id, .. } = s {
                        *loop_id = d_id;
                    }
                    break;
                }
                cur = db;
            }
        }
        if let Stmt::Loop { body: lb, .. } = s {
            interchange(k, lb, min_bytes);
        }
    }
}

/// What matched in a loop `k`'s body.
#[derive(Clone, Copy, Debug)]
struct Candidate {
    acc: AccId,
    r: LoopId,
    /// Lets before the accumulator (values per result, such as a load of a mean the sum
    /// subtracts), copied into the reduced loop's body and the tail.
    head: usize,
}

impl Candidate {
    /// Loop `k`'s `body` taken apart: the reduced loop's body and the tail, each after a
    /// copy of the head — its values, per result, recomputed where the new loops read them
    /// (renamed in each copy of the reduced body; the tail's copy keeps the original
    /// definitions).
    fn parts(&self, body: Vec<Stmt>) -> Option<(Vec<Stmt>, Vec<Stmt>)> {
        let mut stmts = body.into_iter();
        let head: Vec<Stmt> = stmts.by_ref().take(self.head).collect();
        let _decl = stmts.next();
        let Some(Stmt::Loop { body: r_body, .. }) = stmts.next() else {
            return None;
        };
        let r_body: Vec<Stmt> = head.iter().cloned().chain(r_body).collect();
        let tail: Vec<Stmt> = head.into_iter().chain(stmts).collect();
        Some((r_body, tail))
    }

    /// The candidate in loop body `body` whose strided load is contiguous along `along`.
    fn find(k: &Kernel, body: &[Stmt], along: LoopId, min_bytes: u64) -> Option<Candidate> {
        let head = body
            .iter()
            .take_while(|s| {
                matches!(s, Stmt::Let { inst, .. } if !matches!(inst,
                    Inst::Index(_) | Inst::AccValue(_) | Inst::AccIndex(_)))
            })
            .count();
        let [Stmt::DeclareAcc(acc), Stmt::Loop {
            loop_id: r,
            body: rb,
        }, tail @ ..] = &body[head..]
        else {
            return None;
        };
        let decl = &k.accs[*acc];
        // Sums, maxima and minima only (an arg-reduction keeps an index too).
        combine_of(decl.kind)?;
        let reduces = rb
            .iter()
            .filter(|s| matches!(s, Stmt::Reduce { acc: a, index: None, .. } if a == acc))
            .count();
        let flat_r = rb.iter().all(|s| match s {
            Stmt::Let { inst, .. } => !matches!(inst, Inst::Index(l) if *l == along),
            Stmt::Reduce { acc: a, .. } => a == acc,
            _ => false,
        });
        let reads = tail
            .iter()
            .filter(|s| matches!(s, Stmt::Let { inst: Inst::AccValue(a), .. } if a == acc))
            .count();
        let flat_tail = tail.iter().all(|s| match s {
            Stmt::Let { inst, .. } => {
                !matches!(inst, Inst::Index(l) if *l == along)
                    && !matches!(inst, Inst::AccIndex(_))
                    && !matches!(inst, Inst::AccValue(a) if a != acc)
            }
            Stmt::Store { .. } => true,
            _ => false,
        });
        let strided = rb.iter().any(|s| match s {
            Stmt::Let {
                inst: Inst::Load(a),
                ..
            } => {
                let decl = &k.buffers[a.buffer];
                a.index.coefficient(*r).abs() >= MIN_STRIDE
                    && a.index.coefficient(along) == 1
                    && decl.len.saturating_mul(decl.ty.size_bytes() as u64) >= min_bytes
            }
            _ => false,
        });
        let long = k.loops[along].extent >= 4;
        (reduces == 1 && flat_r && reads == 1 && flat_tail && strided && long).then_some(
            Candidate {
                acc: *acc,
                r: *r,
                head,
            },
        )
    }
}

/// The statements replacing loop `kl` (see the module docs) and the accumulators' buffer.
fn rewrite(
    k: &mut Kernel,
    kl: LoopId,
    body: Vec<Stmt>,
    c: Candidate,
    o: &Rewrite,
) -> Option<(Vec<Stmt>, Rows)> {
    let (parallel, vectorize) = (o.parallel, o.vectorize);
    let terms = k.loops[c.r].extent;
    let n = k.loops[kl].extent;
    let acc_ty = k.accs[c.acc].ty;
    let width = block_width(n).filter(|_| parallel == Some(kl));
    let strip = width.is_some();
    let width = width.unwrap_or(n);
    let inner_extent = width;
    let ann = |unroll: u32| LoopAnnotations {
        vectorize,
        unroll: if vectorize && inner_extent >= 16 {
            unroll
        } else {
            1
        },
        parallel: false,
    };
    // The initialising loop stores one uniform constant: unrolled, not vectorised.
    let init_ann = LoopAnnotations {
        vectorize: false,
        unroll: if inner_extent >= 16 { 4 } else { 1 },
        parallel: false,
    };
    let (init_l, acc_l, fin_l) = (
        k.add_loop(inner_extent, init_ann),
        k.add_loop(inner_extent, ann(2)),
        k.add_loop(inner_extent, ann(2)),
    );
    // `k` as each new loop sees it, and the accumulator row's index there.
    let k_expr = |l: LoopId| {
        if strip {
            AffineExpr::new([(kl, width as i64), (l, 1)], 0)
        } else {
            AffineExpr::var(l)
        }
    };
    let row_len = match parallel.filter(|&p| p != kl) {
        Some(p) => n.checked_mul(k.loops[p].extent)?,
        None => n,
    };
    let row_index = |l: LoopId| {
        let mut terms = k_expr(l).terms().to_vec();
        if let Some(p) = parallel.filter(|&p| p != kl) {
            terms.push((p, n as i64));
        }
        AffineExpr::new(terms, 0)
    };
    // The buffer is declared only once the rewrite has succeeded (every declared buffer
    // must be bound); until then its id is the next one.
    let buffer = BufferId::new(k.buffers.len());
    let slot = |l: LoopId| BufferAccessExpr {
        buffer,
        index: row_index(l),
        mask: Vec::new(),
    };

    let (r_body, tail) = c.parts(body)?;
    // loop init { row[k] = identity }
    let init = init_row(k, c.acc, init_l, slot(init_l));
    // loop r { loop acc { v = ...; row[k] += v } }, JAM rows a step
    let ke = k_expr(acc_l);
    let combine = combine_of(k.accs[c.acc].kind)?;
    let accumulate = accumulate_rows(
        k,
        c.r,
        acc_l,
        &r_body,
        (acc_ty, combine),
        &slot(acc_l),
        &|e| e.substitute(kl, &ke),
    )?;
    // loop fin { tail, with acc.value a = row[k] }
    let fe = k_expr(fin_l);
    let fin = finish_from(&tail, &slot(fin_l), &|e: &AffineExpr| e.substitute(kl, &fe))?;
    let finish = Stmt::Loop {
        loop_id: fin_l,
        body: fin,
    };
    let name = format!("acc_{}", k.buffers.len());
    let declared = k.add_buffer(name, acc_ty, row_len, BufferAccess::ReadWrite);
    debug_assert_eq!(declared, buffer);
    // The reduced loop now runs once per term row, around the vectorised loop over results.
    k.loops[c.r].annotations = LoopAnnotations::default();
    let stmts: Vec<Stmt> = std::iter::once(init)
        .chain(accumulate)
        .chain([finish])
        .collect();
    let (stmts, rows) = narrowed(k, stmts, buffer, terms, o.narrow);
    if strip {
        // `kl` stays the parallel loop, over blocks of `width` results.
        k.loops[kl].extent = n / width;
        return Some((
            vec![Stmt::Loop {
                loop_id: kl,
                body: stmts,
            }],
            rows,
        ));
    }
    Some((stmts, rows))
}

/// `loop init_l { row[…] = identity }`: the accumulator row at `slot` set to the identity of
/// `acc`'s kind.
fn init_row(k: &mut Kernel, acc: AccId, init_l: LoopId, slot: BufferAccessExpr) -> Stmt {
    let decl = &k.accs[acc];
    let identity = weft_ir::loop_ir::semantics::reduce_identity(decl.kind, decl.ty);
    let (zero, zero_let) = k.define(decl.ty, Inst::Const(identity));
    Stmt::Loop {
        loop_id: init_l,
        body: vec![
            zero_let,
            Stmt::Store {
                target: slot,
                value: zero,
            },
        ],
    }
}

/// The operator folding a term into an accumulator row of `kind` (`None`: not rewritten):
/// `add` for sums, the order-free max and min steps for maxima and minima.
fn combine_of(kind: ReduceKind) -> Option<BinaryOp> {
    match kind {
        ReduceKind::Sum => Some(BinaryOp::Add),
        ReduceKind::Max => Some(BinaryOp::ReduceMax),
        ReduceKind::Min => Some(BinaryOp::ReduceMin),
        _ => None,
    }
}

/// Most results in a group of rows (`rewrite_group`): their f64 accumulators fill 32 KiB.
pub const GROUP: u64 = 4096;

/// The rewrite of a result loop `kl` that is the only statement of the kernel's parallel loop
/// `p`, when every load of the reduced loop's body reads `p` and `kl` as one flattened index
/// (`p`'s stride is `kl`'s extent times `kl`'s stride): `p` then runs over groups of `q` rows
/// (`q · extent(kl)` ≤ [`GROUP`] results), and the accumulating loop walks a whole group at
/// once — `q` rows of the operand back to back instead of one (1 KiB runs of a 256³ sum over
/// its first axis become 16 KiB). Returns `p`'s new body and the accumulators' buffer.
fn rewrite_group(
    k: &mut Kernel,
    p: LoopId,
    kl: LoopId,
    body: &[Stmt],
    c: Candidate,
    vectorize: bool,
) -> Option<(Vec<Stmt>, BufferId)> {
    let (np, nk) = (k.loops[p].extent, k.loops[kl].extent);
    // `q · nk ≤ GROUP` bounds the search by GROUP, never by the parallel loop's extent (a
    // 2^40-row batch is searched as fast as a 64-row one).
    let q = (1..=(GROUP / nk.max(1)).min(np))
        .rev()
        .find(|q| np % q == 0 && np / q >= 4)?;
    if q < 2 {
        return None;
    }
    let [Stmt::DeclareAcc(_), Stmt::Loop { body: r_body, .. }, tail @ ..] = body else {
        return None;
    };
    let uses_index =
        |s: &Stmt| matches!(s, Stmt::Let { inst: Inst::Index(l), .. } if *l == p || *l == kl);
    if r_body.iter().chain(tail).any(uses_index) {
        return None;
    }
    let acc_ty = k.accs[c.acc].ty;
    let group = q * nk;
    let (qi, nki, gi) = (q as i64, nk as i64, group as i64);
    let ann = |unroll: u32| LoopAnnotations {
        vectorize,
        unroll: if vectorize { unroll } else { 1 },
        parallel: false,
    };
    let init_l = k.add_loop(
        group,
        LoopAnnotations {
            vectorize: false,
            unroll: 4,
            parallel: false,
        },
    );
    let acc_l = k.add_loop(group, ann(2));
    let (row_l, fin_l) = (
        k.add_loop(q, LoopAnnotations::default()),
        k.add_loop(nk, ann(2)),
    );
    let buffer = BufferId::new(k.buffers.len());
    let slot = |index: AffineExpr| BufferAccessExpr {
        buffer,
        index,
        mask: Vec::new(),
    };
    let group_slot = |l: LoopId| slot(AffineExpr::new([(p, gi), (l, 1)], 0));
    // p·P + k·K = K·(q·nk·p' + c) where p = q·p' + c / nk, k = c % nk.
    let collapse = |e: &AffineExpr| -> Option<AffineExpr> {
        let (cp, ck) = (e.coefficient(p), e.coefficient(kl));
        if cp != ck.checked_mul(nki)? {
            return None;
        }
        let mut terms: Vec<(LoopId, i64)> = e
            .terms()
            .iter()
            .copied()
            .filter(|&(l, _)| l != p && l != kl)
            .collect();
        terms.extend([(p, ck.checked_mul(gi)?), (acc_l, ck)]);
        Some(AffineExpr::new(terms, e.offset()))
    };
    let combine = combine_of(k.accs[c.acc].kind)?;
    let accumulate = accumulate_rows(
        k,
        c.r,
        acc_l,
        r_body,
        (acc_ty, combine),
        &group_slot(acc_l),
        &collapse,
    )?;
    // The tail, per row `p = q·p' + row` and result `k`.
    let p_expr = AffineExpr::new([(p, qi), (row_l, 1)], 0);
    let k_expr = AffineExpr::var(fin_l);
    let row = slot(AffineExpr::new([(p, gi), (row_l, nki), (fin_l, 1)], 0));
    let fin = finish_from(tail, &row, &|e: &AffineExpr| {
        e.substitute(p, &p_expr)?.substitute(kl, &k_expr)
    })?;
    let init = init_row(k, c.acc, init_l, group_slot(init_l));
    let finish = Stmt::Loop {
        loop_id: row_l,
        body: vec![Stmt::Loop {
            loop_id: fin_l,
            body: fin,
        }],
    };
    let stmts: Vec<Stmt> = std::iter::once(init)
        .chain(accumulate)
        .chain([finish])
        .collect();
    let name = format!("acc_{}", k.buffers.len());
    let declared = k.add_buffer(name, acc_ty, np.checked_mul(nk)?, BufferAccess::ReadWrite);
    debug_assert_eq!(declared, buffer);
    k.loops[c.r].annotations = LoopAnnotations::default();
    k.loops[p].extent = np / q;
    Some((stmts, buffer))
}

/// Term rows each step of the accumulating loop adds when the rows are a stride apart: it
/// loads a result's accumulator once, adds the terms of `JAM` consecutive rows in their
/// order, and stores it once — an eighth of the accumulator traffic, and eight input runs read
/// side by side (a sum over the first axis of [256, 256, 256]: 3.19 → 2.20 ms with four rows a
/// step, Zen 4; eight: 2.04 → 1.83 ms into [M, A], 2.86 → 2.73 into [A, M], interleaved).
/// Results are unchanged: every result still adds its terms one by one in the order of the
/// reduced loop.
pub const JAM: u64 = 8;

/// The loops replacing `loop r { loop acc_l { body } }` of the reduced loop `r` (body
/// `r_body`) around the accumulating loop `acc_l`: `r` over steps of [`JAM`] rows, each step's
/// `acc_l` body loading `slot` once, adding each row's term (the body copied per row, every
/// access rewritten by `map` and `r ↦ JAM·r + u`) and storing it once; then, if `JAM` does not
/// divide `r`'s extent, a loop over the rows left with a copy of `acc_l`. One row per step
/// where the body reads `r`'s index itself, or where no load's rows are a stride apart.
fn accumulate_rows(
    k: &mut Kernel,
    r: LoopId,
    acc_l: LoopId,
    r_body: &[Stmt],
    acc: (ScalarType, BinaryOp),
    slot: &BufferAccessExpr,
    map: &dyn Fn(&AffineExpr) -> Option<AffineExpr>,
) -> Option<Vec<Stmt>> {
    let rows = k.loops[r].extent;
    let reads_r = r_body
        .iter()
        .any(|s| matches!(s, Stmt::Let { inst: Inst::Index(l), .. } if *l == r));
    // Only rows a stride apart: where one row's run ends at the next one's start (a sum over
    // the middle axis), the hardware streams them already, and jamming measured 2.5× slower.
    let run = i64::try_from(k.loops[acc_l].extent).unwrap_or(i64::MAX);
    let apart = r_body.iter().any(|s| match s {
        Stmt::Let {
            inst: Inst::Load(a),
            ..
        } => a.index.coefficient(r).abs() > run,
        _ => false,
    });
    let jam = if reads_r || !apart {
        1
    } else {
        JAM.min(rows).max(1)
    };
    let (steps, rest) = (rows / jam, rows % jam);
    let ji = i64::try_from(jam).ok()?;
    let same = |e: AffineExpr| Some(e);
    let body = jam_terms(
        k,
        r_body,
        acc,
        slot,
        jam,
        &|e, u| map(e)?.substitute(r, &AffineExpr::new([(r, ji)], u as i64)),
        &same,
    )?;
    k.loops[r].extent = steps;
    let mut out = vec![Stmt::Loop {
        loop_id: r,
        body: vec![Stmt::Loop {
            loop_id: acc_l,
            body,
        }],
    }];
    if rest > 0 {
        let first = i64::try_from(steps.checked_mul(jam)?).ok()?;
        let rr = k.add_loop(rest, LoopAnnotations::default());
        let acc_rest = k.add_loop(k.loops[acc_l].extent, k.loops[acc_l].annotations);
        let to_rest = |e: AffineExpr| e.substitute(acc_l, &AffineExpr::var(acc_rest));
        let body = jam_terms(
            k,
            r_body,
            acc,
            slot,
            1,
            &|e, _| to_rest(map(e)?.substitute(r, &AffineExpr::new([(rr, 1)], first))?),
            &to_rest,
        )?;
        out.push(Stmt::Loop {
            loop_id: rr,
            body: vec![Stmt::Loop {
                loop_id: acc_rest,
                body,
            }],
        });
    }
    Some(out)
}

/// One step of the accumulating loop: `slot` (rewritten by `slot_map`) loaded, the terms of
/// `rows` copies of the reduced loop's body added in order (copy `u`'s accesses rewritten by
/// `access(e, u)`, its values renamed), the sum stored back.
fn jam_terms(
    k: &mut Kernel,
    r_body: &[Stmt],
    (acc_ty, combine): (ScalarType, BinaryOp),
    slot: &BufferAccessExpr,
    rows: u64,
    access: &dyn Fn(&AffineExpr, u64) -> Option<AffineExpr>,
    slot_map: &dyn Fn(AffineExpr) -> Option<AffineExpr>,
) -> Option<Vec<Stmt>> {
    let slot = slot.clone().map_exprs(&|e| slot_map(e.clone()))?;
    let (mut sum, load) = k.define(acc_ty, Inst::Load(slot.clone()));
    let mut out = vec![load];
    // A maximum or minimum is order-free: its terms fold pairwise, a tree of depth log₂ rows
    // instead of a chain of `rows` dependent steps through the accumulator.
    let order_free = matches!(combine, BinaryOp::ReduceMax | BinaryOp::ReduceMin);
    let mut terms = Vec::new();
    for u in 0..rows {
        let mut renamed: Vec<(ValueId, ValueId)> = Vec::new();
        for s in r_body {
            match s {
                Stmt::Let { result, inst } => {
                    let inst = inst.renamed(&|v| renamed_as(&renamed, v));
                    let (new, stmt) = k.define(k.values[*result], inst);
                    out.push(stmt.map_access(&|e| access(e, u))?);
                    renamed.push((*result, new));
                }
                Stmt::Reduce { value, .. } if order_free => {
                    terms.push(renamed_as(&renamed, *value));
                }
                Stmt::Reduce { value, .. } => {
                    let term = renamed_as(&renamed, *value);
                    let (next, add) = k.define(acc_ty, Inst::Binary(combine, sum, term));
                    out.push(add);
                    sum = next;
                }
                _ => return None,
            }
        }
    }
    while terms.len() > 1 {
        let mut folded = Vec::with_capacity(terms.len().div_ceil(2));
        for pair in terms.chunks(2) {
            match *pair {
                [a, b] => {
                    let (v, st) = k.define(acc_ty, Inst::Binary(combine, a, b));
                    out.push(st);
                    folded.push(v);
                }
                [a] => folded.push(a),
                _ => {}
            }
        }
        terms = folded;
    }
    if let Some(&tree) = terms.first() {
        let (next, st) = k.define(acc_ty, Inst::Binary(combine, sum, tree));
        out.push(st);
        sum = next;
    }
    out.push(Stmt::Store {
        target: slot,
        value: sum,
    });
    Some(out)
}

/// What `pairs` (old → new) renames `x` to, or `x` itself.
fn renamed_as<T: Copy + PartialEq>(pairs: &[(T, T)], x: T) -> T {
    pairs
        .iter()
        .find(|(old, _)| *old == x)
        .map_or(x, |(_, new)| *new)
}

/// The tail after the reduction with the accumulator's value read from its slot in memory,
/// and every other access rewritten by `map`.
fn finish_from(
    tail: &[Stmt],
    slot: &BufferAccessExpr,
    map: &dyn Fn(&AffineExpr) -> Option<AffineExpr>,
) -> Option<Vec<Stmt>> {
    tail.iter()
        .map(|s| match s {
            Stmt::Let {
                result,
                inst: Inst::AccValue(_),
            } => Some(Stmt::Let {
                result: *result,
                inst: Inst::Load(slot.clone()),
            }),
            other => other.clone().map_access(map),
        })
        .collect()
}

/// The scratch rows of one rewrite: the row the tail reads first, then an f32 row where the
/// sums were narrowed.
struct Rows {
    buffers: Vec<BufferId>,
    /// Whether the tail reads the f32 row, the f64 one only in the re-run.
    f32_tail: bool,
    /// Whether the f32 row sums blocks of at most [`MAX_CHAIN`] terms, each added into the
    /// f64 row.
    blocks: bool,
}

impl Rows {
    /// Only the accumulation type's row.
    fn f64(row: BufferId) -> Rows {
        Rows {
            buffers: vec![row],
            f32_tail: false,
            blocks: false,
        }
    }
}

/// Most terms per result an f32 row may sum: the f32 chain bound of
/// [`super::narrow_sums`], one rule for both (2¹⁰ terms, so at most 2¹⁰ − 1 roundings:
/// error within `2⁻¹⁴ · Σ|xᵢ|`).
pub const MAX_CHAIN: u64 = super::narrow_sums::MAX_CHAIN;

/// `stmts` — a rewrite's `[init, accumulate…, finish]` over the f64 row `row` — with the
/// sums taken in an f32 row where that is allowed (`narrow`) and safe: the row's sums are f32
/// terms widened to f64 (each `add` adds a `convert` of an f32 value read only there), at most
/// [`MAX_CHAIN`] of them per result. Then an f32 copy of `init` and the accumulating loops
/// runs first, a loop sums `x − x` over the f32 row — NaN exactly when some sum is infinite
/// or NaN — and only then the f64 `init` and accumulating loops run again, summing every
/// result of the row in f64 as before, and the tail over `row`: an f32 sum overflowing where
/// f64 does not (`3e38 + 3e38 − 3e38`) costs that re-run, never the result's class. When all
/// are finite, a copy of the tail reads the f32 row ([`NarrowCopy::finish`]: its f64
/// arithmetic rounded to f32 done in f32, the same IEEE results, though a vector division by
/// the count is then f32's by a uniform divisor, docs/numerics.md); where the tail cannot be copied so,
/// the checking loop also widens the f32 row into `row`, and the one tail reads that. Each
/// result still adds its terms in the order of the reduced loop.
/// Returns the statements and the rows to bind (`row`, then the f32 row if added).
fn narrowed(
    k: &mut Kernel,
    stmts: Vec<Stmt>,
    row: BufferId,
    terms: u64,
    narrow: bool,
) -> (Vec<Stmt>, Rows) {
    let eligible = narrow
        && k.buffers[row].ty == ScalarType::F64
        && stmts.len() >= 3
        && widened_terms(k, &stmts[1..stmts.len() - 1]);
    if !eligible {
        return (stmts, Rows::f64(row));
    }
    if terms > MAX_CHAIN {
        return match in_blocks(k, &stmts, row, terms) {
            Some(blocked) => blocked,
            None => (stmts, Rows::f64(row)),
        };
    }
    // The widening loop `w` walks the row as `init` does. Everything that may refuse runs
    // before the f32 row is declared (every declared buffer must be bound); a refused copy
    // leaves only loops and values nothing refers to.
    let Some(walk) = stmts.first().and_then(RowWalk::of) else {
        return (stmts, Rows::f64(row));
    };
    // Four parts: the check's 16 f32 partials are a whole register at either leaf width.
    let Some((w, at)) = over_row(k, &walk, true) else {
        return (stmts, Rows::f64(row));
    };
    let rows = RowPair {
        row,
        row32: BufferId::new(k.buffers.len()),
    };
    let mut copy = NarrowCopy::new(rows);
    let last = stmts.len() - 1;
    let mut fast = Vec::new();
    for s in &stmts[..last] {
        match copy.stmt(k, s) {
            Some(copied) => fast.extend(copied),
            None => return (stmts, Rows::f64(row)),
        }
    }
    let name = format!("acc32_{}", k.buffers.len());
    let len = k.buffers[row].len;
    let row32 = k.add_buffer(name, ScalarType::F32, len, BufferAccess::ReadWrite);
    debug_assert_eq!(row32, copy.row32);
    let mut stmts = stmts;
    let finish = stmts.pop();
    // The tail in f32 where it can read the f32 row: then nothing widens the row, and the f64
    // row and the tail over it run only in the re-run.
    let finish32 = finish.as_ref().and_then(|f| copy.finish(k, f));
    let (mut out, total, cond) = finite_check(k, fast, w, at, row32, finish32.is_none());
    let rows = Rows {
        buffers: vec![row, row32],
        f32_tail: finish32.is_some(),
        blocks: false,
    };
    match finish32 {
        Some(finish32) => {
            stmts.extend(finish);
            out.push(Stmt::If { cond, body: stmts });
            let (finite, test) =
                k.define(ScalarType::Bool, Inst::Compare(CompareOp::Eq, total, total));
            out.extend([
                test,
                Stmt::If {
                    cond: finite,
                    body: finish32,
                },
            ]);
        }
        None => {
            out.push(Stmt::If { cond, body: stmts });
            out.extend(finish);
        }
    }
    (out, rows)
}

/// `fast` (the f32 copy of `init` and the accumulation) followed by the check over the f32
/// row `row32` in loop `w` at `at` (the f64 row's element): `loop w { x = row32[i];
/// [row[i] = x as f64;] bad += x − x }` (widening into the f64 row where `widen`), then `bad`'s
/// total and `total ≠ total` — NaN exactly when some sum is not finite. An f64 sum of the
/// f32 differences, so that it takes f32 partials like every sum of widened f32 terms
/// (`narrow_sums`). Returns the statements, the total and the condition.
fn finite_check(
    k: &mut Kernel,
    fast: Vec<Stmt>,
    w: LoopId,
    at: BufferAccessExpr,
    row32: BufferId,
    widen: bool,
) -> (Vec<Stmt>, ValueId, ValueId) {
    let bad = k.add_acc(ReduceKind::Sum, ScalarType::F64);
    let from = BufferAccessExpr {
        buffer: row32,
        ..at.clone()
    };
    let (x, load) = k.define(ScalarType::F32, Inst::Load(from));
    let (d, diff) = k.define(ScalarType::F32, Inst::Binary(BinaryOp::Sub, x, x));
    let (dw, widen_d) = k.define(ScalarType::F64, Inst::Convert(d));
    let mut check = vec![load];
    if widen {
        let (wide, widen) = k.define(ScalarType::F64, Inst::Convert(x));
        check.extend([
            widen,
            Stmt::Store {
                target: at,
                value: wide,
            },
        ]);
    }
    check.extend([
        diff,
        widen_d,
        Stmt::Reduce {
            acc: bad,
            value: dw,
            index: None,
        },
    ]);
    let (total, read) = k.define(ScalarType::F64, Inst::AccValue(bad));
    let (cond, test) = k.define(ScalarType::Bool, Inst::Compare(CompareOp::Ne, total, total));
    let mut out = fast;
    out.extend([
        Stmt::DeclareAcc(bad),
        Stmt::Loop {
            loop_id: w,
            body: check,
        },
        read,
        test,
    ]);
    (out, total, cond)
}

/// [`narrowed`] for sums of more than [`MAX_CHAIN`] terms a result: `[init, main, (left),
/// finish]`, `main` a loop of steps of `J` terms each (the jammed rows), `left` the rows left
/// over one at a time. The f64 row starts at −0; then per block of `MAX_CHAIN / J` steps
/// (the last block the steps left and `left`) an f32 copy of `init` and of the block's
/// accumulation fill the f32 row, and a loop adds it into the f64 row; a loop sums `x − x`
/// over the f64 row and, if that is NaN (a block's f32 sum overflowed, or a sum is not
/// finite), the original `init` and accumulation run again in f64; then `finish` reads the
/// f64 row. Each block is an f32 sum of at most `MAX_CHAIN` terms in order (the bound of
/// docs/numerics.md), the blocks added in order in f64. `None` where the statements do not
/// have that shape (nothing declared then).
fn in_blocks(
    k: &mut Kernel,
    stmts: &[Stmt],
    row: BufferId,
    terms: u64,
) -> Option<(Vec<Stmt>, Rows)> {
    let plan = BlockPlan::of(k, stmts, terms)?;
    let rows = RowPair {
        row,
        row32: BufferId::new(k.buffers.len()),
    };
    let (zero_l, zero_at) = over_row(k, &plan.walk, false)?;
    let (zero, def_zero) = k.define(ScalarType::F64, Inst::Const(ScalarValue::F64(-0.0)));
    let mut out = vec![Stmt::Loop {
        loop_id: zero_l,
        body: vec![
            def_zero,
            Stmt::Store {
                target: zero_at,
                value: zero,
            },
        ],
    }];
    if plan.full > 0 {
        let b = k.add_loop(
            plan.full,
            LoopAnnotations {
                vectorize: false,
                unroll: 1,
                parallel: false,
            },
        );
        out.push(Stmt::Loop {
            loop_id: b,
            body: plan.block(k, rows, Some(b), 0, plan.per_block, None)?,
        });
    }
    if plan.rest > 0 || plan.left.is_some() {
        let from = plan.full * plan.per_block;
        out.extend(plan.block(k, rows, None, from, plan.rest, plan.left)?);
    }
    // loop w { x = row[i]; bad += x − x }; if bad ≠ bad { init; accumulate } — in f64.
    let (w, at) = over_row(k, &plan.walk, true)?;
    let name = format!("acc32_{}", k.buffers.len());
    let len = k.buffers[row].len;
    let declared = k.add_buffer(name, ScalarType::F32, len, BufferAccess::ReadWrite);
    debug_assert_eq!(declared, rows.row32);
    let bad = k.add_acc(ReduceKind::Sum, ScalarType::F64);
    let (x, load) = k.define(ScalarType::F64, Inst::Load(at));
    let (d, diff) = k.define(ScalarType::F64, Inst::Binary(BinaryOp::Sub, x, x));
    let (total, read) = k.define(ScalarType::F64, Inst::AccValue(bad));
    let (cond, test) = k.define(ScalarType::Bool, Inst::Compare(CompareOp::Ne, total, total));
    out.extend([
        Stmt::DeclareAcc(bad),
        Stmt::Loop {
            loop_id: w,
            body: vec![
                load,
                diff,
                Stmt::Reduce {
                    acc: bad,
                    value: d,
                    index: None,
                },
            ],
        },
        read,
        test,
        Stmt::If {
            cond,
            body: stmts[..stmts.len() - 1].to_vec(),
        },
        plan.finish.clone(),
    ]);
    let rows = Rows {
        buffers: vec![row, rows.row32],
        f32_tail: false,
        blocks: true,
    };
    Some((out, rows))
}

/// The f64 row of a rewrite and the f32 row narrowing it.
#[derive(Clone, Copy)]
struct RowPair {
    row: BufferId,
    row32: BufferId,
}

/// How the row is walked: `init`'s loop and its store's element of the row.
struct RowWalk {
    init_l: LoopId,
    target: BufferAccessExpr,
}

impl RowWalk {
    /// The walk of `init` (`loop init_l { …; store row[…] }`).
    fn of(init: &Stmt) -> Option<RowWalk> {
        let Stmt::Loop {
            loop_id: init_l,
            body: init_body,
        } = init
        else {
            return None;
        };
        let Some(Stmt::Store { target, .. }) = init_body.last() else {
            return None;
        };
        Some(RowWalk {
            init_l: *init_l,
            target: target.clone(),
        })
    }
}

/// A new loop over the row as `walk` goes (vectorised with four parts, or scalar), and the
/// row's element at it.
fn over_row(k: &mut Kernel, walk: &RowWalk, vectorize: bool) -> Option<(LoopId, BufferAccessExpr)> {
    let l = k.add_loop(
        k.loops[walk.init_l].extent,
        LoopAnnotations {
            vectorize,
            unroll: if vectorize { 4 } else { 1 },
            parallel: false,
        },
    );
    let at = walk
        .target
        .clone()
        .map_exprs(&|e| e.substitute(walk.init_l, &AffineExpr::var(l)));
    at.map(|at| (l, at))
}

/// `row[i] += row32[i] as f64` over the row.
fn fold_into_row(k: &mut Kernel, walk: &RowWalk, row32: BufferId) -> Option<Stmt> {
    let (l, at) = over_row(k, walk, true)?;
    let from = BufferAccessExpr {
        buffer: row32,
        ..at.clone()
    };
    let (x, load) = k.define(ScalarType::F32, Inst::Load(from));
    let (wide, widen) = k.define(ScalarType::F64, Inst::Convert(x));
    let (a, load_acc) = k.define(ScalarType::F64, Inst::Load(at.clone()));
    let (sum, add) = k.define(ScalarType::F64, Inst::Binary(BinaryOp::Add, a, wide));
    Some(Stmt::Loop {
        loop_id: l,
        body: vec![
            load,
            widen,
            load_acc,
            add,
            Stmt::Store {
                target: at,
                value: sum,
            },
        ],
    })
}

/// The statements [`in_blocks`] cuts into blocks, and how.
struct BlockPlan<'s> {
    init: &'s Stmt,
    walk: RowWalk,
    main: &'s Stmt,
    /// `main`'s loop: steps of `J` terms.
    r: LoopId,
    left: Option<&'s Stmt>,
    finish: &'s Stmt,
    /// Steps of `main` per block (`MAX_CHAIN / J`), whole blocks, and steps left over.
    per_block: u64,
    full: u64,
    rest: u64,
}

impl<'s> BlockPlan<'s> {
    /// The plan of `stmts` summing `terms` terms a result; `None` for another shape.
    fn of(k: &Kernel, stmts: &'s [Stmt], terms: u64) -> Option<BlockPlan<'s>> {
        let (init, main, left, finish) = match stmts {
            [init, main, finish] => (init, main, None, finish),
            [init, main, left, finish] => (init, main, Some(left), finish),
            _ => return None,
        };
        let walk = RowWalk::of(init)?;
        let Stmt::Loop { loop_id: r, body } = main else {
            return None;
        };
        let adds = |b: &[Stmt]| {
            let mut all = Vec::new();
            lets_of(b, &mut all);
            all.iter()
                .filter(|(_, i)| matches!(i, Inst::Binary(BinaryOp::Add, ..)))
                .count() as u64
        };
        let per_step = adds(body);
        let left_terms = match left {
            Some(Stmt::Loop { loop_id, body }) => k.loops[*loop_id].extent * adds(body),
            Some(_) => return None,
            None => 0,
        };
        let steps = k.loops[*r].extent;
        if per_step == 0 || per_step > MAX_CHAIN || steps * per_step + left_terms != terms {
            return None;
        }
        let per_block = MAX_CHAIN / per_step;
        Some(BlockPlan {
            init,
            walk,
            main,
            r: *r,
            left,
            finish,
            per_block,
            full: steps / per_block,
            rest: steps % per_block,
        })
    }

    /// One block: the f32 row from −0, `count` steps of `main` from step `from` (its index
    /// `from + block · per_block`), `left` if given, then the fold into the f64 row.
    fn block(
        &self,
        k: &mut Kernel,
        rows: RowPair,
        b: Option<LoopId>,
        from: u64,
        count: u64,
        left: Option<&Stmt>,
    ) -> Option<Vec<Stmt>> {
        let mut out = Vec::new();
        out.push(NarrowCopy::new(rows).stmt(k, self.init)??);
        if count > 0 {
            let step = k.add_loop(count, k.loops[self.r].annotations);
            let mut terms = vec![(step, 1)];
            terms.extend(b.map(|b| (b, self.per_block as i64)));
            let at = AffineExpr::new(terms, from as i64);
            let mut copy = NarrowCopy::new(rows);
            copy.shifted = Some((self.r, step, at));
            let Some(Some(Stmt::Loop { body, .. })) = copy.stmt(k, self.main) else {
                return None;
            };
            out.push(Stmt::Loop {
                loop_id: step,
                body,
            });
        }
        if let Some(left) = left {
            out.push(NarrowCopy::new(rows).stmt(k, left)??);
        }
        out.push(fold_into_row(k, &self.walk, rows.row32)?);
        Some(out)
    }
}

/// Whether every `add` in the accumulating loops `acc` adds a term `convert`ed from an f32
/// value and read by nothing else, so the f32 copy can add the f32 value itself.
fn widened_terms(k: &Kernel, acc: &[Stmt]) -> bool {
    let mut all = Vec::new();
    lets_of(acc, &mut all);
    let uses = |v: ValueId| {
        all.iter()
            .filter(|(_, inst)| inst.operands().contains(&v))
            .count()
    };
    let mut adds = 0;
    for (_, inst) in &all {
        if let Inst::Binary(BinaryOp::Add, _, term) = inst {
            adds += 1;
            let widened = all.iter().any(|(v, i)| {
                *v == *term && matches!(i, Inst::Convert(x) if k.values[*x] == ScalarType::F32)
            });
            if !widened || uses(*term) != 1 {
                return false;
            }
        }
    }
    adds > 0
}

/// Copies the f64 row's `init` and accumulating loops into f32 ones over `row32`: fresh
/// loops and values; the row's loads, stores, identity and adds in f32; each widened term
/// replaced by the f32 value it widens. `None` (no narrowing) for anything else in f64.
struct NarrowCopy {
    row: BufferId,
    row32: BufferId,
    /// Old value → its copy.
    values: Vec<(ValueId, ValueId)>,
    /// Old loop → its copy.
    loops: Vec<(LoopId, LoopId)>,
    /// A loop copied as a given one whose index in the copy is an expression of its own
    /// (one block's steps of a longer loop): old loop, new loop, the old index.
    shifted: Option<(LoopId, LoopId, AffineExpr)>,
}

impl NarrowCopy {
    /// A fresh copy from `rows.row` to `rows.row32`.
    fn new(rows: RowPair) -> NarrowCopy {
        NarrowCopy {
            row: rows.row,
            row32: rows.row32,
            values: Vec::new(),
            loops: Vec::new(),
            shifted: None,
        }
    }

    fn value(&self, v: ValueId) -> ValueId {
        renamed_as(&self.values, v)
    }

    fn expr(&self, e: &AffineExpr) -> Option<AffineExpr> {
        let mut e = e.clone();
        if let Some((old, _, at)) = &self.shifted {
            e = e.substitute(*old, at)?;
        }
        for (old, new) in &self.loops {
            e = e.substitute(*old, &AffineExpr::var(*new))?;
        }
        Some(e)
    }

    fn access(&self, a: &BufferAccessExpr) -> Option<BufferAccessExpr> {
        let mut a = a.clone().map_exprs(&|e| self.expr(e))?;
        if a.buffer == self.row {
            a.buffer = self.row32;
        }
        Some(a)
    }

    /// The copy of `s`: no statement for a widened term (its f32 value stands in for it).
    fn stmt(&mut self, k: &mut Kernel, s: &Stmt) -> Option<Option<Stmt>> {
        match s {
            Stmt::Loop { loop_id, body } => {
                let copy = match &self.shifted {
                    Some((old, new, _)) if old == loop_id => *new,
                    _ => {
                        let decl = &k.loops[*loop_id];
                        let copy = k.add_loop(decl.extent, decl.annotations);
                        self.loops.push((*loop_id, copy));
                        copy
                    }
                };
                let mut copied = Vec::with_capacity(body.len());
                for s in body {
                    copied.extend(self.stmt(k, s)?);
                }
                Some(Some(Stmt::Loop {
                    loop_id: copy,
                    body: copied,
                }))
            }
            Stmt::Store { target, value } if target.buffer == self.row => Some(Some(Stmt::Store {
                target: self.access(target)?,
                value: self.value(*value),
            })),
            Stmt::Let { result, inst } => self.assign(k, *result, inst),
            _ => None,
        }
    }

    /// The tail `s` over the f32 row: each load of the f64 row a load of the f32 row widened
    /// (the same f64 value: the f32 sums are what the f64 row would hold), then f64 arithmetic
    /// on such values that is only rounded to f32 done in f32 ([`narrow_rounded`]: the same
    /// bits). `None` for a tail with anything but loops, lets and stores to other buffers.
    fn finish(&mut self, k: &mut Kernel, s: &Stmt) -> Option<Vec<Stmt>> {
        let mut out = self.finish_stmt(k, s)?;
        narrow_rounded(k, &mut out);
        Some(out)
    }

    fn finish_stmt(&mut self, k: &mut Kernel, s: &Stmt) -> Option<Vec<Stmt>> {
        match s {
            Stmt::Loop { loop_id, body } => {
                let decl = &k.loops[*loop_id];
                let copy = k.add_loop(decl.extent, decl.annotations);
                self.loops.push((*loop_id, copy));
                let mut copied = Vec::with_capacity(body.len() + 1);
                for s in body {
                    copied.extend(self.finish_stmt(k, s)?);
                }
                Some(vec![Stmt::Loop {
                    loop_id: copy,
                    body: copied,
                }])
            }
            Stmt::Let {
                result,
                inst: Inst::Load(a),
            } if a.buffer == self.row => {
                let (x, load) = k.define(ScalarType::F32, Inst::Load(self.access(a)?));
                let (wide, widen) = k.define(ScalarType::F64, Inst::Convert(x));
                self.values.push((*result, wide));
                Some(vec![load, widen])
            }
            Stmt::Let { result, inst } => {
                let inst = match inst {
                    Inst::Load(a) => Inst::Load(self.access(a)?),
                    Inst::Index(l) => Inst::Index(renamed_as(&self.loops, *l)),
                    Inst::AccValue(_) | Inst::AccIndex(_) => return None,
                    other => other.renamed(&|v| self.value(v)),
                };
                let (copy, stmt) = k.define(k.values[*result], inst);
                self.values.push((*result, copy));
                Some(vec![stmt])
            }
            Stmt::Store { target, value } if target.buffer != self.row => Some(vec![Stmt::Store {
                target: self.access(target)?,
                value: self.value(*value),
            }]),
            _ => None,
        }
    }

    fn assign(&mut self, k: &mut Kernel, result: ValueId, inst: &Inst) -> Option<Option<Stmt>> {
        let ty = k.values[result];
        let inst = match inst {
            Inst::Convert(x) if ty == ScalarType::F64 && k.values[*x] == ScalarType::F32 => {
                let x = self.value(*x);
                self.values.push((result, x));
                return Some(None);
            }
            Inst::Load(a) if a.buffer == self.row => Inst::Load(self.access(a)?),
            Inst::Load(a) if ty != ScalarType::F64 => Inst::Load(self.access(a)?),
            Inst::Const(ScalarValue::F64(c)) if *c == 0.0 => {
                Inst::Const(ScalarValue::F32(*c as f32))
            }
            Inst::Binary(BinaryOp::Add, x, y) if ty == ScalarType::F64 => {
                Inst::Binary(BinaryOp::Add, self.value(*x), self.value(*y))
            }
            Inst::Index(l) => Inst::Index(renamed_as(&self.loops, *l)),
            other
                if ty != ScalarType::F64
                    && other
                        .operands()
                        .iter()
                        .all(|v| k.values[*v] != ScalarType::F64) =>
            {
                other.renamed(&|v| self.value(v))
            }
            _ => return None,
        };
        let new_ty = if ty == ScalarType::F64 {
            ScalarType::F32
        } else {
            ty
        };
        let (copy, stmt) = k.define(new_ty, inst);
        self.values.push((result, copy));
        Some(Some(stmt))
    }
}

/// In `body`, each f32 `convert` of an f64 `add`, `sub`, `mul`, `div` or `sqrt` read only
/// there, whose operands are f32 values widened or f64 constants that are f32 values, becomes
/// the f32 operation; each f32 `convert` of a widened f32 value, that value. The same bits as
/// IEEE operations (the loop IR's semantics): rounding such an operation's exact result to f64
/// and then to f32 gives the f32 operation's rounding, as 53 ≥ 2 · 24 + 2 (Figueroa, "When is
/// double rounding innocuous?", 1995).
/// Values left unread are dropped.
fn narrow_rounded(k: &mut Kernel, body: &mut Vec<Stmt>) {
    let mut defs: Vec<(ValueId, Inst)> = Vec::new();
    lets_of(body, &mut defs);
    let def = |v: ValueId| defs.iter().find(|(d, _)| *d == v).map(|(_, i)| i);
    // An f64 operand as the f32 value it equals, if it is one: a widened f32 value or a
    // constant f32 holds exactly.
    let narrow = |v: ValueId| -> Option<Narrow> {
        match def(v)? {
            Inst::Convert(x) if k.values[*x] == ScalarType::F32 => Some(Narrow::Value(*x)),
            Inst::Const(ScalarValue::F64(c)) if f64::from(*c as f32) == *c => {
                Some(Narrow::Const(*c as f32))
            }
            _ => None,
        }
    };
    let mut rewrites: Vec<(ValueId, Rounded)> = Vec::new();
    for (r, inst) in &defs {
        let Inst::Convert(v) = inst else { continue };
        if k.values[*r] != ScalarType::F32 || k.values[*v] != ScalarType::F64 {
            continue;
        }
        if let Some(Narrow::Value(x)) = narrow(*v) {
            rewrites.push((*r, Rounded::Same(x)));
            continue;
        }
        if uses(body, *v) != 1 {
            continue;
        }
        match def(*v) {
            Some(Inst::Binary(
                op @ (BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul | BinaryOp::Div),
                a,
                b,
            )) => {
                if let (Some(a), Some(b)) = (narrow(*a), narrow(*b)) {
                    rewrites.push((*r, Rounded::Binary(*op, a, b)));
                }
            }
            Some(Inst::Unary(UnaryOp::Sqrt, a)) => {
                if let Some(a) = narrow(*a) {
                    rewrites.push((*r, Rounded::Sqrt(a)));
                }
            }
            _ => {}
        }
    }
    if rewrites.is_empty() {
        return;
    }
    let mut same = Vec::new();
    rewrite_rounded(k, body, &rewrites, &mut same);
    rename_reads(body, &|v| renamed_as(&same, v));
    drop_unused(body);
}

/// An f64 operand's f32 value.
#[derive(Clone, Copy)]
enum Narrow {
    Value(ValueId),
    Const(f32),
}

/// What an f32 `convert` becomes in [`narrow_rounded`].
#[derive(Clone, Copy)]
enum Rounded {
    /// The f32 value it converts back.
    Same(ValueId),
    Binary(BinaryOp, Narrow, Narrow),
    Sqrt(Narrow),
}

/// Applies `rewrites` to the `convert`s of `body` (constants defined just before their use);
/// each `Rounded::Same` is recorded in `same` for renaming instead.
fn rewrite_rounded(
    k: &mut Kernel,
    body: &mut Vec<Stmt>,
    rewrites: &[(ValueId, Rounded)],
    same: &mut Vec<(ValueId, ValueId)>,
) {
    let mut out = Vec::with_capacity(body.len());
    for mut s in std::mem::take(body) {
        match &mut s {
            Stmt::Let { result, inst } => {
                if let Some((_, how)) = rewrites.iter().find(|(r, _)| r == result) {
                    let mut operand = |n: Narrow, out: &mut Vec<Stmt>| match n {
                        Narrow::Value(x) => x,
                        Narrow::Const(c) => {
                            let (v, def) =
                                k.define(ScalarType::F32, Inst::Const(ScalarValue::F32(c)));
                            out.push(def);
                            v
                        }
                    };
                    match *how {
                        Rounded::Same(x) => same.push((*result, x)),
                        Rounded::Binary(op, a, b) => {
                            let (a, b) = (operand(a, &mut out), operand(b, &mut out));
                            *inst = Inst::Binary(op, a, b);
                        }
                        Rounded::Sqrt(a) => {
                            *inst = Inst::Unary(UnaryOp::Sqrt, operand(a, &mut out));
                        }
                    }
                }
            }
            Stmt::Loop { body, .. } | Stmt::If { body, .. } => {
                rewrite_rounded(k, body, rewrites, same)
            }
            _ => {}
        }
        out.push(s);
    }
    *body = out;
}

#[cfg(test)]
mod tests {
    use super::narrow_rounded;
    use weft_ir::loop_ir::{interpret, parse_kernel, BufferData};

    /// A tail of f64 arithmetic on widened f32 values, rounded to f32 (a mean, a variance's
    /// `sqrt(v / n + eps)`, a sum stored as it is), and the same tail after
    /// `narrow_rounded`: f32 arithmetic only, the same bits over f32 values from the
    /// smallest subnormal to the largest finite, ±0, ±inf and NaN (every NaN alike).
    #[test]
    fn rounded_f64_arithmetic_on_f32_values_narrows_to_the_same_bits() {
        const TAIL: &str = "kernel @tail {
  buffer %s: f32[4096] read
  buffer %mean: f32[4096] write
  buffer %sd: f32[4096] write
  buffer %same: f32[4096] write
  buffer %prod: f32[4096] write
  loop %i0 in 0..4096 vectorize {
    %v0: f32 = load %s[%i0]
    %v1: f64 = convert %v0
    %v2: f64 = const 1000.0
    %v3: f64 = div %v1, %v2
    %v4: f32 = convert %v3
    store %mean[%i0], %v4
    %v5: f32 = load %s[%i0]
    %v6: f64 = convert %v5
    %v7: f64 = sqrt %v6
    %v8: f32 = convert %v7
    store %sd[%i0], %v8
    %v9: f32 = load %s[%i0]
    %v10: f64 = convert %v9
    %v11: f32 = convert %v10
    store %same[%i0], %v11
    %v12: f32 = load %s[%i0]
    %v13: f64 = convert %v12
    %v14: f64 = const 0.1
    %v15: f64 = mul %v13, %v14
    %v16: f32 = convert %v15
    store %prod[%i0], %v16
  }
}";
        let wide = parse_kernel("tail", TAIL).unwrap();
        let mut narrow = wide.clone();
        let mut body = std::mem::take(&mut narrow.body);
        narrow_rounded(&mut narrow, &mut body);
        narrow.body = body;
        let text = narrow.to_string();
        // 0.1 is no f32 value: its product stays in f64; the rest is f32 only.
        assert_eq!(text.matches("f64").count(), 3, "{text}");
        let mut bits = 0x9e37_79b9_7f4a_7c15u64;
        let s: Vec<f32> = (0..4096)
            .map(|i| match i {
                0 => f32::from_bits(1),
                1 => f32::MAX,
                2 => -0.0,
                3 => f32::INFINITY,
                4 => f32::NEG_INFINITY,
                5 => f32::NAN,
                _ => {
                    bits ^= bits << 13;
                    bits ^= bits >> 7;
                    bits ^= bits << 17;
                    f32::from_bits(bits as u32)
                }
            })
            .collect();
        let run = |k: &weft_ir::loop_ir::Kernel| {
            let mut buffers = vec![BufferData::F32(s.clone())];
            buffers.extend((0..4).map(|_| BufferData::F32(vec![0.0; 4096])));
            interpret(k, &mut buffers).unwrap();
            buffers
                .iter()
                .skip(1)
                .map(|b| match b {
                    BufferData::F32(v) => v
                        .iter()
                        .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
                        .collect::<Vec<_>>(),
                    _ => unreachable!("every output is f32"),
                })
                .collect::<Vec<_>>()
        };
        assert!(run(&wide) == run(&narrow));
    }
}
