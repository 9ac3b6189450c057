//! Which work a vector loop hands to native routines, block by block, and the plans their
//! calls need (the loop-strategy pass chooses among them; `translate/span.rs` emits them): an
//! f32 `exp`, `tanh`, `sigmoid` or `log` stored into a contiguous span, computed after the loop
//! by the span routine (`weft_runtime::vmath`: AVX-512F, or AVX2 with FMA), and a large output
//! written with non-temporal stores (`weft_runtime::stream`) — for a loop that only scales what
//! it reads, by a routine that computes and streams it ([`ScaledCopy`]); and prefetches of
//! later rows.
//!
//! **Span functions.** Cranelift's 128-bit `exp` needs about 35 instructions per four lanes, a
//! third of them spills of its constants; softmax's row pass spent most of its time there.
//! When a vector loop's one store is `store T[.. + i], f(a)` — `T` contiguous along the loop,
//! and the result used by that store alone — the loop stores `a` instead, and one call after
//! the loop replaces the span it wrote by its `f`, eight or sixteen lanes at a time. When the
//! store's value is computed *from* `f(a)` (gelu's `0.5·x·(1 + tanh(z))`), the loop splits in
//! two around the call: the first stores `a` (only what `a` needs), the second reads `f(a)`
//! back from `T[.. + i]` and computes the rest (only what the store needs, its loads repeated
//! from cache).
//!
//! **Streamed stores.** An ordinary store to a line not in cache first reads that line from
//! memory, so a kernel that reads one large array and writes another moves three arrays'
//! worth of bytes. When a vector loop's one store goes to a buffer the kernel only writes and
//! that is at least `TranslateOptions::stream_min_bytes` long (too large to be read back from
//! cache), contiguous along the loop, and the loop reads a buffer that large too or its row's
//! next input is prefetched (below: otherwise ordinary stores, which drain while later passes
//! compute, measured faster), every access of that buffer in a block goes to a 16 KiB
//! staging area on the stack instead (`Staging`, `translate/span.rs`), and one call of `weft_stream_copy` after
//! the block moves it out with non-temporal stores, which skip that read.
//!
//! **Prefetching a row ahead.** A span function's loop inside a row loop whose body first
//! reads a large input ([`NextRow`]: softmax's max pass over `a`) passes the routine the
//! address of that read [`ROWS_AHEAD`] rows on, and the routine prefetches it line by line
//! while it computes: that row's first pass then finds it in cache, so a core's compute and
//! its memory traffic overlap instead of alternating (softmax 10–15% faster). A prefetch
//! changes no value and cannot fault, so the last rows', which reach past the input, are
//! harmless. A routine that is itself that first read, over rows adjacent in memory (`exp(x)`
//! row by row), prefetches nothing: the hardware streams from row to row, and a second stream
//! a row ahead only competed with it ([`rows_adjacent`]). A loop reading another row of that
//! input than the first loop does (a jammed row of a column sum, split by
//! `crate::span_fission`) prefetches its own row instead ([`own_row`]). A row with no span function prefetches from its first vector pass after the
//! first whose step reads at least a line ([`pass_prefetch`]: layernorm's variance pass): each
//! step calls `weft_prefetch_line` (a naked `prefetcht1; ret` called with Cranelift's
//! `preserve_all` convention, so the loop's registers stay put) for the same columns
//! [`ROWS_AHEAD`] rows on (layernorm 13–16% faster). A row whose first pass reads a run of
//! memory a stride away from the last row's — a sum over the first axis — prefetches from that
//! pass itself, since the hardware's stream stops at each run's end (28–31% faster).
//!
//! **Reading and summing in the routine.** When the function's argument is a contiguous f32
//! load, or one less a value from outside the loop ([`Source`]: softmax's `a − max`), or one
//! times such a value (less another: attention's scaled softmax, `a·c − max`), the
//! routine reads it itself and the loop storing the argument is left out; when the next
//! loop sums the span into f32 partials ([`SpanSum`]: softmax's denominator), the routine
//! adds each result into the partial that loop's vector code would, so that loop keeps only
//! its combine, tail and f64 re-run. Two passes over the row fewer, the same bits.
//!
//! **Sums of a function.** A loop that stores nothing and only sums an f32 `exp`, `tanh`,
//! `sigmoid` or `log` of an argument the routine can read ([`ReduceSpan`]: `Σ_j exp(x_i − y_j)`, a
//! broadcast exp inside a reduction; the argument may be the load less an outer value or
//! an outer value less the load) is one routine call per block adding into the loop's own
//! f32 partials (its results written to a scratch block on the stack); the loop keeps its
//! combine and tail (2.3 ms against 6.8 for 4096 × 4096 on Zen 4), and its f64 re-run calls
//! the routine again per block, without partials, and adds the block's results in order — the
//! inline re-run computed every term with the 4-lane code, ~10× the cost (`Σ_C log x` over
//! 4096² rows that all re-run: 128–142 → 15–16 ms on Zen 4).
//!
//! **Whole sums.** A loop that stores nothing and only sums f32 terms read from a span — a
//! contiguous load, one less an outer value or an outer value less it, or the square of one
//! of those ([`SumSpan`]: layernorm's mean and variance passes) — is one call of
//! `weft_runtime::span_sum`'s routine over its range: the vector pass into the loop's f32
//! partials, their combine, the scalar tail and the f64 re-run, each as the loop's own code
//! does it, so the accumulator gets the loop's bits, and the kernel has none of that code for
//! Cranelift to compile (layernorm's kernel 272 → 157 CLIF instructions, its whole compile
//! about 28% faster). Only loops of at least [`SUM_MIN_EXTENT`] terms: the call costs about
//! 40 ns, which shorter rows in cache do not hide. The call keeps every register
//! (`preserve_all`, through a trampoline): as an ordinary call it made the row loop's values
//! spill, and the pass after it reload them every step.
//!
//! **Extremes.** A loop that only takes the f32 maximum or minimum of a contiguous load, or
//! of one times a value from outside the loop ([`ExtremeSpan`]: softmax's row max, attention's
//! of `a·c`, the routine multiplying as the loop does) is one call of `weft_runtime::extreme`'s routine over
//! its range, its result combined into the accumulator: the loop's 128-bit code spends three
//! instructions per four elements (its `Extreme` partials), where the routine spends three per
//! sixteen with AVX-512 (a 4096² row max 1.2–1.9× faster; softmax's, which then waits on
//! memory, unchanged — docs/benchmarks.md). The rule is order-free, so the bits are the
//! loop's. Not where the loop itself prefetches a later row ([`pass_prefetch`]). A loop that
//! folds rows a stride apart into a row of accumulators ([`ExtremeRows`]: a maximum over a
//! strided axis in memory order, rows jammed) is one call of `weft_runtime::extreme_rows`'
//! routine, which also takes over the loop's prefetch — every row of a later step.
//!
//! Either way a loop longer than a block ([`BLOCK`] f32 elements, 16 KiB) runs block by block,
//! each block its loops and calls, so the call reads what the loop just wrote from L1.
//!
//! Assumes a verified kernel; span functions also a host with AVX2 and FMA
//! (`TranslateOptions::span_math`). Guarantees: applied only where the loop is vectorised,
//! its body is lets and that one store (no loop, no accumulator, no load of `T`, so no
//! iteration can observe another's element of `T`), and the store is unmasked with coefficient
//! 1 along the loop. Each iteration's element of `T` ends as the value the loop would store:
//! the first loop's `a`, the call's `f(a)` (bits of the inline code, [`weft_runtime::vmath`]),
//! the second loop's value from it computed by the same instructions, the staged element
//! copied byte for byte, a routine-read argument `S[i] − u` computed as the loop computes it,
//! a scaled copy's `(x·r)·s` and tail `x / u` as the loop's vector code and tail compute
//! them; a [`SpanSum`]'s partials — a [`ReduceSpan`]'s too, whose loop has no store and only
//! lets feeding its one sum — hold the same f32 additions in the same order as the sum
//! loop's own; so results are unchanged, only the time moves.

use super::vectorize::{blocked, f32_partials, plan, widenings};
use weft_ir::loop_ir::{
    AccId, BinaryOp, BufferAccess, BufferAccessExpr, CompareOp, Inst, Kernel, LoopId, ReduceKind,
    ScalarType, Stmt, UnaryOp, ValueId,
};
use weft_runtime::vmath::ArgForm;

/// Loops shorter than this keep the inline function: a call costs about as much as a few
/// dozen inline vectors.
pub(crate) const MIN_EXTENT: u64 = 32;

/// Bytes of the staging area for a streamed store: a loop storing at most this much is one
/// block (a row of softmax or layernorm: 16 KiB of f32 at 4096 columns).
pub(crate) const STAGING_BYTES: u64 = 16 << 10;

/// Bytes per block of a longer loop with a streamed store: small, so its loads and its
/// bursts of stores to memory alternate often (measured on chain: 4 KiB blocks 5–13% faster
/// than ordinary stores, 16 KiB blocks no faster; docs/benchmarks.md).
const STREAM_BLOCK_BYTES: u64 = 4 << 10;

/// Alignment of the staging area: a cache line.
pub(crate) const STAGING_ALIGN: u64 = 64;

/// Longer loops run in blocks of this many iterations, each its loop(s) and its call, so the
/// call and a split loop's second half read what the first just wrote from L1 (16 KiB of f32),
/// not memory.
pub(crate) const BLOCK: u64 = 4096;

/// A streamed store writes at least this many contiguous bytes per loop: shorter runs would
/// leave partly written lines, which non-temporal stores write slowly.
const MIN_STREAM_RUN: u64 = 1 << 10;

/// The least default of `CodegenOptions::stream_min_bytes` ([`stream_min_bytes`]): half the
/// 32 MiB last-level cache of the machines it was measured on (docs/benchmarks.md).
pub const STREAM_MIN_BYTES: u64 = 16 << 20;

/// The default of `CodegenOptions::stream_min_bytes` on `target`: buffers at least this large
/// are written with non-temporal stores. Half its last-level cache, so that what a later
/// kernel or the caller could still find in cache is written normally (a server's L3 of
/// hundreds of MiB keeps 64 MiB outputs), and at least [`STREAM_MIN_BYTES`].
pub fn stream_min_bytes(target: &weft_runtime::Target) -> u64 {
    let half_l3 = target.caches.l3.map_or(0, |bytes| bytes as u64 / 2);
    STREAM_MIN_BYTES.max(half_l3)
}

/// Iterations per block of loop `l` with span call `span` and streamed store `stream`.
pub(crate) fn block_len(
    k: &Kernel,
    l: LoopId,
    span: Option<&SpanCall>,
    stream: Option<&BufferAccessExpr>,
) -> u64 {
    let streamed = stream.map_or(u64::MAX, |t| {
        let size = k.buffers[t.buffer].ty.size_bytes() as u64;
        if k.loops[l].extent.saturating_mul(size) <= STAGING_BYTES {
            k.loops[l].extent
        } else {
            STREAM_BLOCK_BYTES / size
        }
    });
    streamed.min(if span.is_some() { BLOCK } else { u64::MAX })
}

/// A function of loop `l` to take out of the loop and run over the span its store wrote.
#[derive(Clone, Debug)]
pub(crate) struct SpanCall {
    /// The function.
    pub(crate) op: UnaryOp,
    /// Its result, which the loop replaces by its argument.
    pub(crate) result: ValueId,
    /// Its argument.
    pub(crate) arg: ValueId,
    /// The store writing it: the span starts at its index with `l` at its first iteration.
    pub(crate) target: BufferAccessExpr,
    /// The value the loop stores, when computed from the result rather than the result
    /// itself: the loop splits in two around the call.
    pub(crate) rest: Option<ValueId>,
    /// What the call prefetches while it computes.
    pub(crate) prefetch: Option<NextRow>,
    /// Where the argument comes from, when the routine can read it itself: the first loop
    /// is left out.
    pub(crate) source: Option<Source>,
    /// The sum of the span right after the loop, whose vector pass the routine does.
    pub(crate) sum: Option<SpanSum>,
}

/// An argument the span routine reads itself ([`weft_runtime::vmath`]'s `src`, `scale` and
/// `shift`): `load S[.. + i]`, or that less a value from outside the loop (softmax's
/// `a − max`), or a value from outside the loop less it (`u − y[j]`), or that times a value
/// from outside the loop (`x[i] · y[j]`: a broadcast product), or that product less a value
/// from outside the loop (a scaled softmax's `x·c − max`) — the routine's [`ArgForm`].
/// Subtracting 0 when there is no shift changes no result (`x − 0` is `x` but for NaN).
#[derive(Clone, Debug)]
pub(crate) struct Source {
    /// The load, contiguous along the loop.
    pub(crate) load: BufferAccessExpr,
    /// The factor of a product (`Times`, `TimesLess`).
    pub(crate) scale: Option<ValueId>,
    /// The value subtracted, or subtracted from.
    pub(crate) shift: Option<ValueId>,
    /// How the argument is made from the load, the scale and the shift (`LessShift` with
    /// neither).
    pub(crate) form: ArgForm,
}

/// A sum loop right after a span function's loop (past accumulator declarations) over the
/// same span — `acc %a: sum f64 partials f32; loop { load T[.. + j]; convert; reduce %a }`,
/// softmax's denominator — whose vector pass the span routine does as it stores: it adds
/// each result into the same f32 partial the loop's vector code would (element `i` into
/// partial `i mod width`, in order), so the loop keeps only combining those partials, its
/// scalar tail and its f64 re-run, and the total has the loop's bits.
#[derive(Clone, Debug)]
pub(crate) struct SpanSum {
    /// The sum loop.
    pub(crate) loop_id: LoopId,
    /// Its accumulator.
    pub(crate) acc: AccId,
    /// Its vector step, `lanes × parts`: the number of partials.
    pub(crate) width: u32,
}

/// A vector loop that only sums an f32 `exp`, `tanh`, `sigmoid` or `log` of an argument the span
/// routine can read itself — `acc %a: sum f64 partials f32; loop { load y[j]; sub u, ..;
/// exp; convert; reduce %a }`, the sum of `exp(x_i − y_j)` over a row — done by the routine:
/// it reads the argument, computes the function and adds each result into the f32 partial
/// the loop's vector code would ([`SpanSum`] with the loop itself as the sum loop; its
/// results go to a scratch block on the stack, never read), and the loop keeps only
/// combining the partials, its scalar tail and its f64 re-run.
#[derive(Clone, Debug)]
pub(crate) struct ReduceSpan {
    /// The function.
    pub(crate) op: UnaryOp,
    /// Its result, which the loop sums.
    pub(crate) result: ValueId,
    /// Where its argument comes from.
    pub(crate) source: Source,
    /// The loop's own sum.
    pub(crate) sum: SpanSum,
}

/// The iterations of [`ReduceSpan`] loop `l` one routine call covers, the length of its
/// stack scratch block.
pub(crate) fn reduce_block(k: &Kernel, l: LoopId) -> u64 {
    BLOCK.min(k.loops[l].extent)
}

/// Whether `op` has a span routine (`weft_runtime::vmath::SpanFn`): the f32 functions
/// [`span_plan`] and [`reduce_span_plan`] hand to it.
pub(crate) fn has_span_routine(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Sigmoid | UnaryOp::Log
    )
}

/// Partial counts a [`ReduceSpan`] may have: whole vectors of the routine's every path (8 or
/// 16 lanes; 1, 2 or 4 vectors), which it sums without reading its results back.
const REDUCE_WIDTHS: [u32; 2] = [16, 32];

/// The [`ReduceSpan`] of loop `l` (body `body` of `k`), if its conditions hold: vectorised,
/// not parallel, at least [`MIN_EXTENT`] long; its body lets and one sum `reduce` of the f64
/// widening of an f32 `exp`, `tanh`, `sigmoid` or `log` whose argument has a [`Source`], every let
/// feeding that sum; the accumulator summed in f32 partials of a width in [`REDUCE_WIDTHS`].
pub(crate) fn reduce_span_plan(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<ReduceSpan> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize || decl.annotations.parallel || decl.extent < MIN_EXTENT {
        return None;
    }
    let sum = widened_sum(k, body)?;
    let &Inst::Unary(op, arg) = definition(body, sum.term)? else {
        return None;
    };
    if !has_span_routine(op) {
        return None;
    }
    let source = source_of(k, l, body, arg)?;
    let (width, _) = f32_sum_width(k, l, body, sum.acc)?;
    (REDUCE_WIDTHS.contains(&width) && BLOCK.is_multiple_of(u64::from(width))).then_some(
        ReduceSpan {
            op,
            result: sum.term,
            source,
            sum: SpanSum {
                loop_id: l,
                acc: sum.acc,
                width,
            },
        },
    )
}

/// The sum a loop body does and nothing else: lets and one sum `reduce %acc` (no index) of
/// the f64 widening (`convert`) of an f32 `term`, every let feeding it, into an f64
/// accumulator.
struct WidenedSum {
    pub(crate) acc: AccId,
    pub(crate) term: ValueId,
}

/// The [`WidenedSum`] of `body` (of `k`), if it is one.
fn widened_sum(k: &Kernel, body: &[Stmt]) -> Option<WidenedSum> {
    let mut reduce = None;
    for s in body {
        match s {
            Stmt::Let { .. } => {}
            Stmt::Reduce {
                acc,
                value,
                index: None,
            } if reduce.is_none() => reduce = Some((*acc, *value)),
            _ => return None,
        }
    }
    let (acc, value) = reduce?;
    let &Inst::Convert(term) = definition(body, value)? else {
        return None;
    };
    let needed = slice(body, value, None);
    let idle = body
        .iter()
        .any(|s| matches!(s, Stmt::Let { result, .. } if !needed.contains(result)));
    let typed = k.values[term] == ScalarType::F32
        && k.values[value] == ScalarType::F64
        && k.accs[acc].kind == ReduceKind::Sum
        && k.accs[acc].ty == ScalarType::F64;
    (!idle && typed).then_some(WidenedSum { acc, term })
}

/// The f32 partial count (`lanes × parts`) and lanes of vector loop `l` (body `body`) summing
/// into `acc`, if it keeps `acc`'s partials in f32 and is one block long
/// ([`blocked`]: the routines keep their partials for the whole loop).
fn f32_sum_width(k: &Kernel, l: LoopId, body: &[Stmt], acc: AccId) -> Option<(u32, u32)> {
    let p = plan(k, l, body)?;
    let one_block = !blocked(k.loops[l].extent, p.lanes, p.parts);
    (one_block && f32_partials(k, &p, body, &widenings(k)).contains(&acc))
        .then_some((p.lanes * p.parts, p.lanes))
}

/// A vector loop that only takes the f32 maximum or minimum of a contiguous load —
/// `acc %a: max f32; loop { load S[.. + i]; reduce %a }`, softmax's row maximum — done by one
/// call of the extreme routine (`weft_runtime::extreme`: AVX-512F or AVX2, a step of four
/// vectors) over the loop's range, its result combined into the accumulator as the loop's
/// settled partials would be. The rule is order-free (NaN if any term is, `−0 < +0`, else the
/// exact extreme), so the bits are the loop's.
#[derive(Clone, Debug)]
pub(crate) struct ExtremeSpan {
    /// The accumulator.
    pub(crate) acc: AccId,
    /// Maximum or minimum.
    pub(crate) kind: ReduceKind,
    /// The load, contiguous along the loop.
    pub(crate) load: BufferAccessExpr,
    /// A value from outside the loop the load is multiplied by first (a scaled softmax's
    /// `max(x·c)`), if any.
    pub(crate) scale: Option<ValueId>,
}

/// The [`ExtremeSpan`] of loop `l` (body `body` of `k`; span functions on or off by
/// `span_math`), if its conditions hold: vectorised, not parallel, at least [`MIN_EXTENT`]
/// long, not a pass that prefetches a later row ([`pass_prefetch`]); its body one unmasked
/// f32 load contiguous along `l`, perhaps times a value from outside the loop, and one `max`
/// or `min` reduce of it into an f32 accumulator.
pub(crate) fn extreme_span_plan(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    span_math: bool,
) -> Option<ExtremeSpan> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize
        || decl.annotations.parallel
        || decl.extent < MIN_EXTENT
        || pass_prefetch(k, l, body, span_math).is_some()
    {
        return None;
    }
    let (load, scale, value, acc) = match body {
        [Stmt::Let {
            result,
            inst: Inst::Load(load),
        }, Stmt::Reduce {
            acc,
            value,
            index: None,
        }] if value == result => (load, None, value, acc),
        [Stmt::Let {
            result: x,
            inst: Inst::Load(load),
        }, Stmt::Let {
            result,
            inst: Inst::Binary(BinaryOp::Mul, a, b),
        }, Stmt::Reduce {
            acc,
            value,
            index: None,
        }] if value == result && (a == x) != (b == x) => {
            // IEEE multiplication commutes bit for bit: `c · x` is `x · c`.
            let c = if a == x { *b } else { *a };
            (load, Some(c), value, acc)
        }
        _ => return None,
    };
    let kind = k.accs[*acc].kind;
    let contiguous = load.mask.is_empty() && load.index.coefficient(l) == 1;
    let scale_f32 = scale.is_none_or(|c| k.values[c] == ScalarType::F32);
    (contiguous
        && scale_f32
        && k.values[*value] == ScalarType::F32
        && k.buffers[load.buffer].ty == ScalarType::F32
        && k.accs[*acc].ty == ScalarType::F32
        && matches!(kind, ReduceKind::Max | ReduceKind::Min))
    .then(|| ExtremeSpan {
        acc: *acc,
        kind,
        load: load.clone(),
        scale,
    })
}

/// A vector loop that folds rows a stride apart into a row of accumulators by a maximum or
/// minimum — `acc[.. + i] = max(acc[.. + i], x[c₀ + i], x[c₀ + s + i], …)` in any order of
/// `reduce_max` steps (order-free), a step of a reduction over a strided axis in memory order
/// (`crate::reduce_in_memory`, rows jammed) — done by one call of
/// `weft_runtime::extreme_rows`' routine over the loop's range: sixteen lanes of four
/// instructions where the 128-bit `fmax` takes eight per four. The rule is order-free, so the
/// bits are the loop's. Where the loop is its row's first pass over a large input
/// ([`pass_prefetch`]), the routine prefetches every row of the step [`ROWS_AHEAD`] steps on.
#[derive(Clone, Debug)]
pub(crate) struct ExtremeRows {
    /// Maximum or minimum.
    pub(crate) kind: ReduceKind,
    /// The accumulators' load and store.
    pub(crate) acc: BufferAccessExpr,
    /// The first row's load.
    pub(crate) first: BufferAccessExpr,
    /// Rows folded in.
    pub(crate) rows: u64,
    /// Elements from one row to the next.
    pub(crate) stride: i64,
    /// The row to prefetch a step's rows from, if any.
    pub(crate) prefetch: Option<NextRow>,
}

/// The [`ExtremeRows`] of loop `l` (body `body` of `k`), if its conditions hold: vectorised,
/// not parallel, at least [`MIN_EXTENT`] long; its body loads — an f32 row of accumulators,
/// unmasked and contiguous along `l`, and rows of one other f32 buffer, each unmasked,
/// contiguous and a constant stride from the last — and one kind of `reduce_max` or
/// `reduce_min` step folding each load exactly once into the value it stores back to the
/// accumulators.
pub(crate) fn extreme_rows_plan(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<ExtremeRows> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize || decl.annotations.parallel || decl.extent < MIN_EXTENT {
        return None;
    }
    let (Stmt::Store { target, value }, lets) = body.split_last()? else {
        return None;
    };
    let f32_run = |a: &BufferAccessExpr| {
        a.mask.is_empty()
            && a.index.coefficient(l) == 1
            && k.buffers[a.buffer].ty == ScalarType::F32
    };
    if !f32_run(target) {
        return None;
    }
    let (mut acc_loads, mut rows, mut steps) = (0, Vec::new(), Vec::new());
    let mut op = None;
    for st in lets {
        match st {
            Stmt::Let {
                result,
                inst: Inst::Load(a),
            } if a.buffer == target.buffer => {
                acc_loads += 1;
                if a != target {
                    return None;
                }
                steps.push(*result);
            }
            Stmt::Let {
                inst: Inst::Load(a),
                result,
            } if f32_run(a) => {
                rows.push(a.clone());
                steps.push(*result);
            }
            Stmt::Let {
                inst: Inst::Binary(b @ (BinaryOp::ReduceMax | BinaryOp::ReduceMin), x, y),
                result,
            } if op.is_none_or(|o| o == *b) && k.values[*result] == ScalarType::F32 => {
                op = Some(*b);
                // Each value folded exactly once: both operands defined here and not yet used.
                for v in [x, y] {
                    let at = steps.iter().position(|s| s == v)?;
                    steps.remove(at);
                }
                steps.push(*result);
            }
            _ => return None,
        }
    }
    if acc_loads != 1 || steps.as_slice() != [*value] || rows.is_empty() {
        return None;
    }
    rows.sort_by_key(|a| a.index.offset());
    let first = rows[0].clone();
    let same_but_constant =
        |a: &BufferAccessExpr| a.buffer == first.buffer && a.index.terms() == first.index.terms();
    let stride = rows
        .get(1)
        .map_or(0, |r| r.index.offset() - first.index.offset());
    let evenly = rows.iter().enumerate().all(|(r, a)| {
        same_but_constant(a) && a.index.offset() == first.index.offset() + r as i64 * stride
    });
    let kind = match op? {
        BinaryOp::ReduceMax => ReduceKind::Max,
        _ => ReduceKind::Min,
    };
    (evenly && first.buffer != target.buffer).then(|| ExtremeRows {
        kind,
        acc: target.clone(),
        rows: rows.len() as u64,
        stride,
        prefetch: pass_prefetch(k, l, body, true).filter(|next| next.load == first),
        first,
    })
}

/// A loop that is lowering's argmax (argmin) of a contiguous f32 load —
/// `acc %v: argmax f32; acc %n: argmax i32; loop { x = load S[.. + i]; i = index; n = convert
/// (ne x, x); reduce %n, n, i; reduce %v, x, i }` — done by one call of
/// `weft_runtime::extreme`'s arg routine over the loop's range (the JIT never vectorises an
/// arg-reduction: a scalar step per element). The routine returns the first index of the
/// best non-NaN value and of the first NaN; each is folded into its accumulator with the
/// loop's own step, as the element at that index would be — both summaries are order-free,
/// so the accumulators end as the loop leaves them.
#[derive(Clone, Debug)]
pub(crate) struct ArgExtremeSpan {
    /// The value accumulator (`argmax`/`argmin` f32).
    pub(crate) value_acc: AccId,
    /// The NaN accumulator (`argmax` i32 of `x != x`).
    pub(crate) nan_acc: AccId,
    /// Argmax or argmin.
    pub(crate) kind: ReduceKind,
    /// The load, contiguous along the loop.
    pub(crate) load: BufferAccessExpr,
}

/// The [`ArgExtremeSpan`] of loop `l` (body `body` of `k`), if its conditions hold: marked
/// to vectorise, not parallel, at least [`MIN_EXTENT`] long; its body exactly lowering's
/// arg-reduction of one unmasked f32 load contiguous along `l`, indexed by `l` itself.
pub(crate) fn arg_extreme_span_plan(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
) -> Option<ArgExtremeSpan> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize || decl.annotations.parallel || decl.extent < MIN_EXTENT {
        return None;
    }
    let [Stmt::Let {
        result: x,
        inst: Inst::Load(load),
    }, Stmt::Let {
        result: i,
        inst: Inst::Index(il),
    }, Stmt::Let {
        result: ne,
        inst: Inst::Compare(CompareOp::Ne, a, b),
    }, Stmt::Let {
        result: n,
        inst: Inst::Convert(c),
    }, Stmt::Reduce {
        acc: nan_acc,
        value: nv,
        index: Some(ni),
    }, Stmt::Reduce {
        acc: value_acc,
        value: xv,
        index: Some(xi),
    }] = body
    else {
        return None;
    };
    let (nan_decl, value_decl) = (&k.accs[*nan_acc], &k.accs[*value_acc]);
    let kind = value_decl.kind;
    let shape = il == &l
        && (a, b) == (x, x)
        && c == ne
        && (nv, ni, xv, xi) == (n, i, x, i)
        && load.mask.is_empty()
        && load.index.coefficient(l) == 1
        && k.buffers[load.buffer].ty == ScalarType::F32
        && k.values[*n] == ScalarType::I32
        && value_decl.ty == ScalarType::F32
        && matches!(kind, ReduceKind::ArgMax | ReduceKind::ArgMin)
        && nan_decl.ty == ScalarType::I32
        && nan_decl.kind == ReduceKind::ArgMax;
    shape.then(|| ArgExtremeSpan {
        value_acc: *value_acc,
        nan_acc: *nan_acc,
        kind,
        load: load.clone(),
    })
}

/// A vector loop that only sums f32 terms read from a contiguous span — `acc %a: sum f64
/// partials f32; loop { load S[.. + i]; [sub u, ..]; [square]; convert; reduce %a }`,
/// layernorm's mean and variance passes, an l2 norm — done whole by one call of
/// `weft_runtime::span_sum`'s routine: its vector pass into the loop's f32 partials, their
/// combine, the scalar tail and the f64 re-run, all as the loop's own code does them, so the
/// accumulator gets the loop's bits and the kernel none of that code to compile.
#[derive(Clone, Debug)]
pub(crate) struct SumSpan {
    /// The accumulator.
    pub(crate) acc: AccId,
    /// Where each term's argument comes from.
    pub(crate) source: Source,
    /// Whether the term is the argument squared.
    pub(crate) square: bool,
    /// The loop's vector step, `4 × parts`: its number of f32 partials.
    pub(crate) width: u32,
    /// A later row the routine prefetches as it goes, where the loop would ([`pass_prefetch`]).
    pub(crate) prefetch: Option<NextRow>,
}

/// Sum loops shorter than this keep their own code: the routine's call costs about 40 ns
/// (its trampoline, setup and combine), which a loop of 4096 terms in cache (about 300 ns)
/// hides and one of 256 does not (measured 2× slower; docs/benchmarks.md).
pub(crate) const SUM_MIN_EXTENT: u64 = 4096;

/// The [`SumSpan`] of loop `l` (body `body` of `k`; span routines on or off by `span_math`),
/// if its conditions hold: vectorised in four f32 lanes, not parallel, at least
/// [`SUM_MIN_EXTENT`] long; its body lets and one sum `reduce` of the f64 widening of an f32 term — an argument
/// with a [`Source`], or its square (`square a` or `mul a, a`) — every let feeding that sum;
/// the accumulator summed in f32 partials of a width the routine takes
/// (`weft_runtime::span_sum::valid_width`).
pub(crate) fn sum_span_plan(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    span_math: bool,
) -> Option<SumSpan> {
    let decl = &k.loops[l];
    if !span_math
        || !decl.annotations.vectorize
        || decl.annotations.parallel
        || decl.extent < SUM_MIN_EXTENT
    {
        return None;
    }
    let sum = widened_sum(k, body)?;
    let (arg, square) = match definition(body, sum.term)? {
        Inst::Unary(UnaryOp::Square, a) => (*a, true),
        Inst::Binary(BinaryOp::Mul, a, b) if a == b => (*a, true),
        _ => (sum.term, false),
    };
    if k.values[arg] != ScalarType::F32 {
        return None;
    }
    // The sum routine's terms are `x`, `x − u` or `u − x` (squared or not), never a product.
    let source = source_of(k, l, body, arg)
        .filter(|s| matches!(s.form, ArgForm::LessShift | ArgForm::ShiftLess))?;
    let (width, lanes) = f32_sum_width(k, l, body, sum.acc)?;
    (lanes == 4 && weft_runtime::span_sum::valid_width(width as usize)).then(|| SumSpan {
        acc: sum.acc,
        source,
        square,
        width,
        prefetch: pass_prefetch(k, l, body, span_math),
    })
}

/// How many rows ahead a span function prefetches: two measured 4–7% faster than the next
/// row on softmax (Zen 4, docs/benchmarks.md), three and four no faster than two.
pub(crate) const ROWS_AHEAD: i64 = 2;

/// The span of a large buffer that an iteration of the loop around a span function's loop
/// reads first: while the routine computes this row, it prefetches that span
/// [`ROWS_AHEAD`] rows on, so that row's first pass finds it in cache instead of waiting on
/// memory.
#[derive(Clone, Debug)]
pub(crate) struct NextRow {
    /// The loop around the span function's loop (its iterations are the rows).
    pub(crate) row: LoopId,
    /// The first loop of its body that reads a large buffer, contiguously.
    pub(crate) first: LoopId,
    /// That read.
    pub(crate) load: BufferAccessExpr,
    /// Bytes it reads over its loop.
    pub(crate) bytes: u64,
}

/// Buffers at least this large are prefetched a row ahead: smaller ones stay in cache.
const PREFETCH_MIN_BYTES: u64 = 4 << 20;

/// The [`NextRow`] of span function loop `l` of `k`, if the loop directly around `l` has
/// one: its body's first loop with a load contiguous along it from a buffer of at least
/// [`PREFETCH_MIN_BYTES`].
fn next_row(k: &Kernel, l: LoopId) -> Option<NextRow> {
    let (row, body) = parent(&k.body, l)?;
    body.iter().find_map(|s| {
        let Stmt::Loop { loop_id, body } = s else {
            return None;
        };
        let extent = k.loops[*loop_id].extent;
        body.iter().find_map(|s| match s {
            Stmt::Let {
                inst: Inst::Load(a),
                ..
            } => {
                let b = &k.buffers[a.buffer];
                let size = b.ty.size_bytes() as u64;
                let large = b.len.saturating_mul(size) >= PREFETCH_MIN_BYTES;
                (large && a.mask.is_empty() && a.index.coefficient(*loop_id) == 1).then(|| {
                    NextRow {
                        row,
                        first: *loop_id,
                        load: a.clone(),
                        bytes: extent.saturating_mul(size),
                    }
                })
            }
            _ => None,
        })
    })
}

/// Whether a span function of the loop around `l` prefetches that loop's next row (with
/// span functions on: `span_math`).
fn row_prefetched(k: &Kernel, l: LoopId, span_math: bool) -> bool {
    let Some((_, body)) = parent(&k.body, l).filter(|_| span_math) else {
        return false;
    };
    body.iter().any(|s| match s {
        Stmt::Loop { loop_id, body } => {
            span_plan(k, *loop_id, body).is_some_and(|span| span.prefetch.is_some())
        }
        _ => false,
    })
}

/// A vector pass that prefetches a later row for the row's first pass, when no span function
/// of the row does ([`NextRow`]; `l` with body `body`, not parallel). Either a pass over the
/// row in cache — the first loop after the row's first pass `F` with `F`'s extent whose
/// vector step reads at least a line of `F`'s input: layernorm's variance pass — or `F`
/// itself when the rows it reads are not adjacent in memory, so the hardware's stream ends
/// with each row (a sum over the first axis of `[B, M, A]` reads runs of `M·A` elements
/// `B` times, each a stride apart). Each step asks for the same columns [`ROWS_AHEAD`] rows
/// on (`weft_prefetch_line`, a line per 64 bytes of the step, at least one): the row's lines
/// spread over the pass, as the span routines spread theirs.
pub(crate) fn pass_prefetch(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    span_math: bool,
) -> Option<NextRow> {
    let decl = &k.loops[l];
    if decl.annotations.parallel || row_prefetched(k, l, span_math) {
        return None;
    }
    let next = next_row(k, l)?;
    let extent = k.loops[next.first].extent;
    if next.first == l {
        return (!rows_adjacent(k, &next, body) && plan(k, l, body).is_some()).then_some(next);
    }
    let (_, siblings) = parent(&k.body, l)?;
    let size = k.buffers[next.load.buffer].ty.size_bytes() as u64;
    let line_steps = |m: LoopId, body: &[Stmt]| {
        let p = plan(k, m, body)?;
        let bytes = u64::from(p.lanes * p.parts) * size;
        (k.loops[m].extent == extent && bytes >= LINE_BYTES).then_some(m)
    };
    let chosen = siblings
        .iter()
        .skip_while(|s| !matches!(s, Stmt::Loop { loop_id, .. } if *loop_id == next.first))
        .skip(1)
        .find_map(|s| match s {
            Stmt::Loop { loop_id, body } => line_steps(*loop_id, body),
            _ => None,
        })?;
    (chosen == l && line_steps(l, body).is_some()).then_some(next)
}

/// Whether the rows `next`'s first pass (body `body`) reads of its buffer in one iteration of
/// the row loop (several when rows are jammed: `reduce_in_memory::JAM`) end where the next
/// iteration's start: one run through memory, which the hardware's stream prefetcher follows
/// from row to row, so prefetching from that pass itself only adds a second stream.
fn rows_adjacent(k: &Kernel, next: &NextRow, body: &[Stmt]) -> bool {
    let extent = k.loops[next.first].extent;
    let first = &next.load.index;
    let reach = body
        .iter()
        .filter_map(|s| match s {
            Stmt::Let {
                inst: Inst::Load(a),
                ..
            } if a.buffer == next.load.buffer && a.index.terms() == first.terms() => {
                Some(a.index.offset() - first.offset())
            }
            _ => None,
        })
        .max()
        .unwrap_or(0)
        .saturating_add(i64::try_from(extent).unwrap_or(i64::MAX));
    first.coefficient(next.row) == reach
}

/// A cache line's bytes.
pub(crate) const LINE_BYTES: u64 = 64;

/// The loop whose body holds loop `l` directly, and that body.
fn parent(body: &[Stmt], l: LoopId) -> Option<(LoopId, &[Stmt])> {
    body.iter().find_map(|s| match s {
        Stmt::Loop { loop_id, body } => {
            let holds = body
                .iter()
                .any(|s| matches!(s, Stmt::Loop { loop_id, .. } if *loop_id == l));
            if holds {
                Some((*loop_id, body.as_slice()))
            } else {
                parent(body, l)
            }
        }
        _ => None,
    })
}

/// The span function of vector loop `l` with body `body` of `k`, if the module's conditions
/// hold; `weft explain` reports it.
pub(crate) fn span_plan(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<SpanCall> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize || decl.extent < MIN_EXTENT {
        return None;
    }
    let (target, stored) = the_store(l, body)?;
    if k.buffers[target.buffer].ty != ScalarType::F32 {
        return None;
    }
    let needed = slice(body, stored, None);
    let (op, result, arg) = body.iter().find_map(|s| match s {
        Stmt::Let {
            result,
            inst: Inst::Unary(op, arg),
        } if has_span_routine(*op)
            && k.values[*result] == ScalarType::F32
            && needed.contains(result) =>
        {
            Some((*op, *result, *arg))
        }
        _ => None,
    })?;
    let rest = (stored != result).then_some(stored);
    Some(SpanCall {
        op,
        result,
        arg,
        source: source_of(k, l, body, arg),
        sum: sum_after(k, l, &target),
        target,
        rest,
        // A routine that is its row's first pass over memory rows adjacent in it prefetches
        // nothing: the hardware follows that stream (a row ahead on 128 KiB rows of `exp(x)`
        // took 3.4x as long; docs/benchmarks.md).
        prefetch: next_row(k, l)
            .map(|next| own_row(k, l, body, next))
            .filter(|next| next.first != l || !rows_adjacent(k, next, body)),
    })
}

/// `next`, or — where loop `l` (body `body`) reads another row of `next`'s buffer than the
/// row's first loop does (one of a jammed step's rows, each a loop of its own:
/// `crate::span_fission`) — that row of `l`'s own, so each loop's routine prefetches the row
/// it will read.
fn own_row(k: &Kernel, l: LoopId, body: &[Stmt], next: NextRow) -> NextRow {
    if next.first == l {
        return next;
    }
    let as_l = next
        .load
        .index
        .substitute(next.first, &weft_ir::loop_ir::AffineExpr::var(l));
    let own = body.iter().find_map(|s| match s {
        Stmt::Let {
            inst: Inst::Load(a),
            ..
        } if a.buffer == next.load.buffer
            && a.mask.is_empty()
            && a.index.coefficient(l) == 1
            && as_l.as_ref() != Some(&a.index) =>
        {
            Some(a.clone())
        }
        _ => None,
    });
    match own {
        Some(load) => NextRow {
            first: l,
            load,
            bytes: k.loops[l]
                .extent
                .saturating_mul(k.buffers[next.load.buffer].ty.size_bytes() as u64),
            ..next
        },
        None => next,
    }
}

/// The instruction defining `v` in `body`, if a let there does.
fn definition(body: &[Stmt], v: ValueId) -> Option<&Inst> {
    body.iter().find_map(|s| match s {
        Stmt::Let { result, inst } if *result == v => Some(inst),
        _ => None,
    })
}

/// The [`Source`] of argument `arg` of span function loop `l` (body `body`), if it is an
/// unmasked f32 load contiguous along `l`, or one less a value defined outside the loop.
fn source_of(k: &Kernel, l: LoopId, body: &[Stmt], arg: ValueId) -> Option<Source> {
    let def = |v: ValueId| definition(body, v);
    let load = |v: ValueId| match def(v)? {
        Inst::Load(a)
            if a.mask.is_empty()
                && a.index.coefficient(l) == 1
                && k.buffers[a.buffer].ty == ScalarType::F32 =>
        {
            Some(a.clone())
        }
        _ => None,
    };
    let outer = |v: ValueId| def(v).is_none();
    // `x · u` with `x` the load; IEEE multiplication commutes bit for bit, so `u · x` too.
    let product = |v: ValueId| match def(v)? {
        Inst::Binary(BinaryOp::Mul, x, u) | Inst::Binary(BinaryOp::Mul, u, x)
            if outer(*u) && load(*x).is_some() =>
        {
            Some((load(*x)?, *u))
        }
        _ => None,
    };
    let source = |load, scale, shift, form| {
        Some(Source {
            load,
            scale,
            shift,
            form,
        })
    };
    match def(arg)? {
        Inst::Binary(BinaryOp::Sub, x, u) if outer(*u) => match product(*x) {
            Some((x, c)) => source(x, Some(c), Some(*u), ArgForm::TimesLess),
            None => source(load(*x)?, None, Some(*u), ArgForm::LessShift),
        },
        Inst::Binary(BinaryOp::Sub, u, x) if outer(*u) => {
            source(load(*x)?, None, Some(*u), ArgForm::ShiftLess)
        }
        Inst::Binary(BinaryOp::Mul, ..) => {
            let (x, c) = product(arg)?;
            source(x, Some(c), None, ArgForm::Times)
        }
        _ => source(load(arg)?, None, None, ArgForm::LessShift),
    }
}

/// The [`SpanSum`] after span function loop `l` storing to `target`, if `l` is not parallel
/// and its next sibling loop (past accumulator declarations) is exactly the sum of that span
/// into an accumulator with f32 partials, whose vector step divides every block length (so
/// each block's call sums whole steps).
fn sum_after(k: &Kernel, l: LoopId, target: &BufferAccessExpr) -> Option<SpanSum> {
    let (_, siblings) = parent(&k.body, l)?;
    let at = siblings
        .iter()
        .position(|s| matches!(s, Stmt::Loop { loop_id, .. } if *loop_id == l))?;
    let next = siblings[at + 1..]
        .iter()
        .find(|s| !matches!(s, Stmt::DeclareAcc(_)))?;
    let Stmt::Loop { loop_id: m, body } = next else {
        return None;
    };
    let (decl_l, decl_m) = (&k.loops[l], &k.loops[*m]);
    if decl_l.annotations.parallel || decl_m.annotations.parallel || decl_m.extent != decl_l.extent
    {
        return None;
    }
    let [Stmt::Let {
        result: v,
        inst: Inst::Load(read),
    }, Stmt::Let {
        result: w,
        inst: Inst::Convert(x),
    }, Stmt::Reduce {
        acc,
        value,
        index: None,
    }] = body.as_slice()
    else {
        return None;
    };
    let same_span = read.buffer == target.buffer
        && read.mask.is_empty()
        && target
            .index
            .substitute(l, &weft_ir::loop_ir::AffineExpr::var(*m))
            .as_ref()
            == Some(&read.index);
    if !same_span || x != v || value != w || k.accs[*acc].kind != ReduceKind::Sum {
        return None;
    }
    let p = plan(k, *m, body)?;
    if blocked(decl_m.extent, p.lanes, p.parts)
        || !f32_partials(k, &p, body, &widenings(k)).contains(acc)
    {
        return None;
    }
    let width = p.lanes * p.parts;
    let divides = |n: u64| n.is_multiple_of(u64::from(width));
    (divides(BLOCK) && divides(STREAM_BLOCK_BYTES / 4)).then_some(SpanSum {
        loop_id: *m,
        acc: *acc,
        width,
    })
}

/// The store of vector loop `l` (body `body` of `k`) to stream, if the conditions of the
/// module hold with buffers of at least `min_bytes`.
pub(crate) fn stream_plan(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    min_bytes: u64,
    span_math: bool,
) -> Option<BufferAccessExpr> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize {
        return None;
    }
    let (target, _) = the_store(l, body)?;
    let buffer = &k.buffers[target.buffer];
    let size = buffer.ty.size_bytes() as u64;
    let large = buffer.len.saturating_mul(size) >= min_bytes;
    let long_runs = decl.extent.saturating_mul(size) >= MIN_STREAM_RUN;
    let write_only = buffer.access == BufferAccess::Write;
    // Only where the loop also reads a large buffer (a pass over memory, whose loads the
    // streamed stores leave room for), or its row's next input is prefetched while a span
    // function computes: softmax's last pass, which reads only cached scratch, ran 10%
    // slower streamed without the prefetch (its ordinary stores drained while later passes
    // computed) and 11% faster with it.
    let reads_large = body.iter().any(|s| match s {
        Stmt::Let {
            inst: Inst::Load(a),
            ..
        } => {
            let b = &k.buffers[a.buffer];
            b.len.saturating_mul(b.ty.size_bytes() as u64) >= min_bytes
        }
        _ => false,
    });
    (large && long_runs && write_only && (reads_large || row_prefetched(k, l, span_math)))
        .then_some(target)
}

/// The body's one store, if the body is lets and that store, the store is unmasked and
/// contiguous along `l`, and nothing in the body loads its buffer.
fn the_store(l: LoopId, body: &[Stmt]) -> Option<(BufferAccessExpr, ValueId)> {
    let mut store = None;
    for s in body {
        match s {
            Stmt::Store { target, value } if store.is_none() => {
                store = Some((target.clone(), *value));
            }
            Stmt::Let { .. } => {}
            _ => return None,
        }
    }
    let (t, v) = store?;
    let loads_target = body
        .iter()
        .any(|s| matches!(s, Stmt::Let { inst: Inst::Load(a), .. } if a.buffer == t.buffer));
    let contiguous = t.mask.is_empty() && t.index.coefficient(l) == 1;
    (contiguous && !loads_target).then_some((t, v))
}

/// A streamed loop that only scales a contiguous f32 read by a value from outside the loop
/// — `store T[.. + i] = S[.. + i] / u` (or `· u`): softmax's last pass. The routine
/// (`weft_runtime::stream::weft_stream_scaled_f32`) computes and streams it piece by piece,
/// with the vector body's scaled reciprocal and the scalar tail's exact divide, so no
/// staging area and no pass of JIT code over it.
#[derive(Clone, Debug)]
pub(crate) struct ScaledCopy {
    /// The read.
    pub(crate) load: BufferAccessExpr,
    /// `Div` or `Mul`.
    pub(crate) op: BinaryOp,
    /// The divisor or factor.
    pub(crate) by: ValueId,
}

/// The [`ScaledCopy`] of vector loop `l` (body `body`) storing to `target`, if the body is
/// exactly that: a contiguous unmasked f32 load, one divide or multiply by a value defined
/// outside the body, the store of an f32 buffer.
pub(crate) fn scaled_copy(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    target: &BufferAccessExpr,
) -> Option<ScaledCopy> {
    let [Stmt::Let {
        result: v,
        inst: Inst::Load(load),
    }, Stmt::Let {
        result: w,
        inst: Inst::Binary(op, x, y),
    }, Stmt::Store { value, .. }] = body
    else {
        return None;
    };
    let by = match op {
        BinaryOp::Div if x == v => *y,
        BinaryOp::Mul if x == v => *y,
        BinaryOp::Mul if y == v => *x,
        _ => return None,
    };
    let f32s = k.buffers[load.buffer].ty == ScalarType::F32
        && k.buffers[target.buffer].ty == ScalarType::F32
        && k.values[by] == ScalarType::F32;
    let contiguous = load.mask.is_empty() && load.index.coefficient(l) == 1;
    (value == w && by != *v && f32s && contiguous && load.buffer != target.buffer).then(|| {
        ScaledCopy {
            load: load.clone(),
            op: *op,
            by,
        }
    })
}

/// The values `v` is computed from in `body` (itself included), not looking through `stop`.
pub(crate) fn slice(body: &[Stmt], v: ValueId, stop: Option<ValueId>) -> Vec<ValueId> {
    let mut needed = vec![v];
    for s in body.iter().rev() {
        if let Stmt::Let { result, inst } = s {
            if needed.contains(result) && Some(*result) != stop {
                needed.extend(inst.operands());
            }
        }
    }
    needed
}

/// The lets of `body` defining values in `needed`, in order.
pub(crate) fn lets_of(body: &[Stmt], needed: &[ValueId]) -> Vec<Stmt> {
    body.iter()
        .filter(|s| matches!(s, Stmt::Let { result, .. } if needed.contains(result)))
        .cloned()
        .collect()
}
