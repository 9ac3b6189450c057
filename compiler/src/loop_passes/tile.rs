//! Tiling a transposing copy, so it walks memory in blocks instead of columns.
//!
//! Lowering orders a kernel's loops by its result's axes, so writing `y[C, R]` from `x[R, C]`
//! puts `R` innermost: every vector step gathers four elements 4096 floats apart, each column
//! sweep touches 4096 pages, and a 4096 × 4096 transpose took 198 ms against a 7.5 ms
//! bandwidth floor (Zen 1); tiled, 60–68 ms, and 12.7–12.9 ms with 64 × 64 blocks moved through
//! registers four by four. This pass cuts the innermost loop `I` and the loop `L` along which
//! the gathered operand is contiguous into square blocks (a side from [`TILES`]): `L` becomes
//! `L_o` (in place, still parallel if it was), and `I_o`, `L_i`, `I_i` (vectorised) run innermost, so a
//! block reads short rows and writes short rows, all in cache and a few pages; code
//! generation then moves 4 × 4 sub-blocks through registers (`codegen::translate::jam`).
//!
//! Assumes a kernel as lowering builds it, before verification. Guarantees: applied only to a
//! perfect loop nest (each loop's body is the next loop, the innermost a flat body of lets and
//! stores: no accumulator, so the order of iterations cannot change a result) in which an
//! access strides at least [`MIN_STRIDE`] elements along `I` and 1 along an enclosing `L`,
//! both extents multiples of [`TILE`]. Every iteration of the nest runs exactly once, with the
//! same index values, only in another order; iterations of a copy without reductions are
//! independent (each stores its own element), so results are unchanged.

use weft_ir::loop_ir::{
    self, AffineExpr, BufferAccessExpr, Inst, Kernel, LoopAnnotations, LoopId, Stmt,
};

/// The sides of a block, in elements, best first: the first that divides both extents is
/// taken. Measured on a 4096 × 4096 f32 transpose (Zen 1, interleaved runs): with lanes
/// gathered one by one, 8 → 89–127 ms, 16 → 60–68 ms, 32 → 70–79 ms; since code generation
/// moves 4 × 4 blocks through registers (`codegen::translate::jam`, 2026-11-24), 16 →
/// 16.4–17.2 ms, 32 → 14.4–15.1 ms, 64 → 12.7–12.9 ms.
pub const TILES: [u64; 3] = [64, 32, 16];

/// A larger side is taken only if it leaves at least this many blocks along the tiled outer
/// loop, which is the parallel one when the nest has one (a 64 × 128 copy in one 64-row block
/// would run on one thread).
pub const MIN_OUTER_BLOCKS: u64 = 8;

/// The smallest side in [`TILES`]: extents it does not divide are not tiled.
pub const TILE: u64 = 16;

/// The least stride (elements) along the innermost loop that makes a nest worth tiling.
pub const MIN_STRIDE: i64 = 64;

/// [`tile_transposes`] as a pass.
pub fn run(k: &mut Kernel, _cx: &super::PassContext<'_>) -> super::PassOutcome {
    super::PassOutcome::notes(tile_transposes(k).into_iter().collect())
}

/// Tiles `k`'s loop nest if it is a transposing copy (see the module docs); the reason, for
/// `weft explain`, if it did.
pub fn tile_transposes(k: &mut Kernel) -> Option<String> {
    let nest = perfect_nest(&k.body)?;
    let (inner, body) = (
        *nest.last().expect("a nest has a loop"),
        innermost_body(&k.body),
    );
    if !loop_ir::elementwise_body(body) {
        return None;
    }
    // The worst-strided access along `inner`, and an enclosing loop it is contiguous along.
    let accesses: Vec<&BufferAccessExpr> = body
        .iter()
        .filter_map(|s| match s {
            Stmt::Let {
                inst: Inst::Load(a),
                ..
            } => Some(a),
            Stmt::Store { target, .. } => Some(target),
            _ => None,
        })
        .collect();
    let worst = accesses
        .iter()
        .max_by_key(|a| a.index.coefficient(inner).unsigned_abs())?;
    let (worst_buffer, worst_stride) = (worst.buffer, worst.index.coefficient(inner));
    if worst_stride.abs() < MIN_STRIDE {
        return None;
    }
    let &outer = nest[..nest.len() - 1]
        .iter()
        .find(|&&l| worst.index.coefficient(l).abs() == 1)?;
    let (ni, no) = (k.loops[inner].extent, k.loops[outer].extent);
    // The largest side that divides both and leaves the outer (parallel) loop enough blocks
    // to share among threads, else the smallest that divides both.
    let divides = |t: &&u64| ni.is_multiple_of(**t) && no.is_multiple_of(**t);
    let side = *TILES
        .iter()
        .filter(divides)
        .find(|&&t| no / t >= MIN_OUTER_BLOCKS)
        .or_else(|| TILES.iter().rev().find(divides))?;
    let inner_annotations = k.loops[inner].annotations;
    let inner_o = k.add_loop(ni / side, LoopAnnotations::default());
    let outer_i = k.add_loop(side, LoopAnnotations::default());
    let inner_i = k.add_loop(side, inner_annotations);
    let t = side as i64;
    let outer_expr = AffineExpr::new([(outer, t), (outer_i, 1)], 0);
    let inner_expr = AffineExpr::new([(inner_o, t), (inner_i, 1)], 0);
    let subs = [(outer, &outer_expr), (inner, &inner_expr)];
    let body = innermost_body(&k.body)
        .iter()
        .cloned()
        .map(|s| substitute(s, &subs))
        .collect::<Option<Vec<Stmt>>>()?;
    // `outer` keeps its id and annotations as the outer part of its axis.
    k.loops[outer].extent = no / side;
    let tiled = loop_ir::nest(&[inner_o, outer_i, inner_i], body);
    replace_innermost(&mut k.body, tiled);
    Some(format!(
        "tiled {side} x {side}: %{} strides {} elements along the innermost loop %{inner} and 1 \
         along %{outer}; blocks %{outer} x %{inner_o} outside, %{outer_i} x %{inner_i} inside",
        k.buffers[worst_buffer].name, worst_stride
    ))
}

/// The loops of a perfect nest of at least two loops around a flat body, outermost first.
fn perfect_nest(body: &[Stmt]) -> Option<Vec<LoopId>> {
    let (nest, inner) = loop_ir::perfect_nest(body);
    (nest.len() >= 2 && !inner.iter().any(|s| matches!(s, Stmt::Loop { .. }))).then_some(nest)
}

/// The body inside the perfect nest at the top of `body`.
fn innermost_body(body: &[Stmt]) -> &[Stmt] {
    loop_ir::perfect_nest(body).1
}

/// Replaces the innermost loop of a perfect nest by the statements `with`.
fn replace_innermost(body: &mut Vec<Stmt>, with: Vec<Stmt>) {
    if let [Stmt::Loop { body: inner, .. }] = body.as_mut_slice() {
        if matches!(inner.as_slice(), [Stmt::Loop { .. }]) {
            replace_innermost(inner, with);
            return;
        }
    }
    *body = with;
}

/// `s` with each loop of `subs` replaced by its expression in its access; `None` on overflow.
pub(crate) fn substitute(s: Stmt, subs: &[(LoopId, &AffineExpr)]) -> Option<Stmt> {
    s.map_access(&|e: &AffineExpr| {
        subs.iter()
            .try_fold(e.clone(), |e, (l, by)| e.substitute(*l, by))
    })
}
