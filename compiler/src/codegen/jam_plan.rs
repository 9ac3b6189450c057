//! Which loops transpose 4 × 4 blocks in registers (the plan; `translate/jam.rs` emits it): a
//! vector loop that would gather its lanes from memory far apart, jammed with the loop around
//! it along which that memory is contiguous.
//!
//! A transposing copy (`y[C, R] = x[R, C]`, tiled by `crate::tile`) vectorises its
//! innermost loop `I` along the output, so each lane of an `x` load sits a whole row of `x`
//! away from the next: four scalar loads and three inserts per vector. When the loop `L`
//! directly around `I` walks `x` contiguously, four iterations of `L` need exactly the four
//! rows of a 4 × 4 block: this runs `L` four at a time, loads each block as four contiguous
//! vectors, transposes them with four unpacks of 32-bit lanes and four of 64-bit halves
//! (`punpck{l,h}dq`, `punpck{l,h}qdq`), and emits `I`'s body once per row of the block with
//! the transposed vector as that load's value.
//!
//! Assumes a verified kernel. Guarantees: applied only where `L` is not parallel or
//! vectorised and its extent is a multiple of 4, its body is the vector loop `I` alone, `I`
//! runs four f32 lanes per part with no tail (its extent a multiple of the step) and only
//! lets and stores in its body (no accumulator), no buffer is both loaded and stored in it,
//! and at least one unmasked f32 load strides along `I` and is contiguous along `L`. Then
//! every iteration `(l, i)` runs exactly once with the same index values, in the order `l`
//! in blocks of four, `i` by vector steps, `l` within the block; since the body stores only
//! buffers it does not load, and each iteration stores its own elements, the results equal
//! the loop nest's.

use super::vectorize::plan;
use weft_ir::loop_ir::{BufferAccessExpr, Inst, Kernel, LoopId, ScalarType, Stmt, ValueId};

/// A loop `L` to run four at a time around its vector loop `I`.
#[derive(Clone, Debug)]
pub(crate) struct Jam {
    pub(crate) inner: LoopId,
    pub(crate) parts: u32,
    /// The loads transposed in registers: their value and access.
    pub(crate) loads: Vec<(ValueId, BufferAccessExpr)>,
}

/// The jam of loop `l` of `k` with body `body` (`parallel`: whether `l` runs split over
/// threads), if the module's conditions hold; `weft explain` reports it.
pub(crate) fn jam_plan(k: &Kernel, l: LoopId, body: &[Stmt], parallel: bool) -> Option<Jam> {
    let decl = &k.loops[l];
    if parallel || decl.annotations.vectorize || decl.extent < 4 || !decl.extent.is_multiple_of(4) {
        return None;
    }
    let [Stmt::Loop {
        loop_id: inner,
        body: inner_body,
    }] = body
    else {
        return None;
    };
    if !k.loops[*inner].annotations.vectorize {
        return None;
    }
    let p = plan(k, *inner, inner_body)?;
    let step = u64::from(p.lanes * p.parts);
    if p.lanes != 4 || !p.outer_accs.is_empty() || !k.loops[*inner].extent.is_multiple_of(step) {
        return None;
    }
    let (mut loaded, mut stored, mut loads) = (Vec::new(), Vec::new(), Vec::new());
    for s in inner_body {
        match s {
            Stmt::Let {
                result,
                inst: Inst::Load(a),
            } => {
                loaded.push(a.buffer);
                let (along_i, along_l) = (a.index.coefficient(*inner), a.index.coefficient(l));
                if a.mask.is_empty()
                    && k.buffers[a.buffer].ty == ScalarType::F32
                    && !matches!(along_i, 0 | 1)
                    && along_l == 1
                {
                    loads.push((*result, a.clone()));
                }
            }
            Stmt::Let { .. } => {}
            Stmt::Store { target, .. } => stored.push(target.buffer),
            _ => return None,
        }
    }
    if loads.is_empty() || loaded.iter().any(|b| stored.contains(b)) {
        return None;
    }
    Some(Jam {
        inner: *inner,
        parts: p.parts,
        loads,
    })
}

/// A jammed loop `l` whose inner loop `i` only copies, `y[.. + ld·l + i] = x[.. + ls·i + l]`
/// (f32), perhaps with the loops around it that continue its rows and columns: a transpose,
/// which one call of the native routine (`weft_runtime::transpose::weft_transpose_32`:
/// blocks in AVX registers, whole lines of the destination stored at a time) moves instead of
/// the jammed loops. Where `crate::tile` cut the rows into `o` and `i`, `o` is in the call
/// (rows `o·s + i` as one run, `s` the extent of `i`, so the routine's blocks start where the
/// destination's lines do), and so is the loop around `o` that continues `l` (a parallel
/// chunk of it: the routine then reads `x`'s rows in order).
#[derive(Clone, Debug)]
pub(crate) struct TransposeCall {
    /// The loop around `o` continuing `l`'s columns, and `o`, if the call covers them.
    pub(crate) cols_outer: Option<LoopId>,
    pub(crate) o: Option<LoopId>,
    /// The jammed loop and its inner loop.
    pub(crate) l: LoopId,
    pub(crate) inner: LoopId,
    pub(crate) load: BufferAccessExpr,
    pub(crate) store: BufferAccessExpr,
    /// The store's stride along `l`, the load's along the inner loop (elements).
    pub(crate) ld: i64,
    pub(crate) ls: i64,
    /// Whether the routine streams its stores (the output is at least `stream_min_bytes`).
    pub(crate) stream: bool,
}

/// The [`TransposeCall`] starting at loop `p` (body `body`), the widest that matches: `p`
/// continuing the columns of a loop `o` around a jammed loop, `p` continuing the rows of a
/// jammed loop, or `p` jammed itself. Each loop added must continue the call's rows (or
/// columns) in both the load and the store, its stride that of the loop it continues times
/// that loop's extent.
pub(crate) fn transpose_call(
    k: &Kernel,
    p: LoopId,
    body: &[Stmt],
    stream_min_bytes: Option<u64>,
) -> Option<TransposeCall> {
    let inside = |body: &[Stmt]| match body {
        [Stmt::Loop { loop_id, body }] => rows_call(k, *loop_id, body, stream_min_bytes),
        _ => None,
    };
    if let Some(call) = inside(body).filter(|c| continues(k, p, c.l, c)) {
        return Some(TransposeCall {
            cols_outer: Some(p),
            ..call
        });
    }
    rows_call(k, p, body, stream_min_bytes).or_else(|| jam_call(k, p, body, stream_min_bytes))
}

/// Whether loop `outer` continues loop `m` in both of `call`'s accesses (see
/// [`transpose_call`]), and is not parallel unless it is outermost in the call.
fn continues(k: &Kernel, outer: LoopId, m: LoopId, call: &TransposeCall) -> bool {
    let width = i64::try_from(k.loops[m].extent).ok();
    let along = |a: &BufferAccessExpr| {
        width.and_then(|w| a.index.coefficient(m).checked_mul(w))
            == Some(a.index.coefficient(outer))
    };
    let inner_serial = call.o.is_none_or(|o| !k.loops[o].annotations.parallel);
    along(&call.load) && along(&call.store) && inner_serial
}

/// The call of loop `o` whose body is exactly a jammed loop's [`jam_call`] that `o` continues
/// along the rows, with the store's stride along `l` at least the rows' whole length.
fn rows_call(
    k: &Kernel,
    o: LoopId,
    body: &[Stmt],
    stream_min_bytes: Option<u64>,
) -> Option<TransposeCall> {
    let [Stmt::Loop { loop_id: l, body }] = body else {
        return None;
    };
    let call = jam_call(k, *l, body, stream_min_bytes)?;
    let rows = k.loops[call.inner].extent.saturating_mul(k.loops[o].extent);
    let fits = u64::try_from(call.ld).is_ok_and(|ld| ld >= rows);
    (fits && continues(k, o, call.inner, &call)).then_some(TransposeCall { o: Some(o), ..call })
}

/// The call of loop `l` alone, if `jam_plan` jams it and its inner loop's body is exactly a
/// load and its store: a store contiguous along the inner loop, with a positive stride along
/// `l` at least the inner loop's extent (so no two iterations store the same element, and the
/// routine's order of stores cannot matter), and a load with a positive stride along the inner
/// loop.
fn jam_call(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    stream_min_bytes: Option<u64>,
) -> Option<TransposeCall> {
    let jam = jam_plan(k, l, body, k.loops[l].annotations.parallel)?;
    let [Stmt::Loop {
        body: inner_body, ..
    }] = body
    else {
        return None;
    };
    let [Stmt::Let {
        result,
        inst: Inst::Load(load),
    }, Stmt::Store { target, value }] = inner_body.as_slice()
    else {
        return None;
    };
    let i = jam.inner;
    let (ld, ls) = (target.index.coefficient(l), load.index.coefficient(i));
    let decl = &k.buffers[target.buffer];
    let copies = value == result
        && jam.loads.iter().any(|(v, _)| v == result)
        && decl.ty == ScalarType::F32
        && target.index.coefficient(i) == 1
        && ls > 0
        && u64::try_from(ld).is_ok_and(|ld| ld >= k.loops[i].extent);
    let bytes = decl.len.saturating_mul(4);
    copies.then(|| TransposeCall {
        cols_outer: None,
        o: None,
        l,
        inner: i,
        load: load.clone(),
        store: target.clone(),
        ld,
        ls,
        stream: stream_min_bytes.is_some_and(|m| bytes >= m),
    })
}
