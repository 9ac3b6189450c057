//! How a pool folds its window's taps: the one association [`Graph::expand_pool`] builds and
//! the interpreter computes, so both round (and break `maximum` ties) alike.
//!
//! Assumes: pooled axes checked by [`Graph::pool_axes`] (at least one tap each, windows that
//! fit their padded axes, lengths bound).
//!
//! Guarantees:
//! - a window of at most [`DIRECT_POOL_TAPS`] taps in all folds them one by one in row-major
//!   order of the pooled axes ([`PoolFold::Direct`]): one strided slice per tap, what small
//!   pools (a CNN's 2×2 or 3×3) fuse best;
//! - a larger window folds separably ([`PoolFold::Separable`]): the last pooled axis first,
//!   then the one before it, and so on; along one axis, its taps in the chunks
//!   [`doubling_chunks`] gives (power-of-two lengths, largest first, folded left to right),
//!   each chunk a balanced pairwise tree. The graph for it has `O(log taps)` nodes per axis
//!   (level `k` of the tree folds `2^k` taps at each position: an `op` of two shifted slices
//!   of level `k − 1`), so compile time never grows with a window's length. Only the
//!   positions of a level that the window reads and whose taps meet the input are computed,
//!   as at most [`MAX_LEVEL_PIECES`] spans (a span per window when a few lie far apart); the
//!   others fold padding alone and hold the padding value. Where a level's trees dwarf the
//!   input, the positions whose trees hold all of it repeat with a period, and only one period
//!   is computed (`Plateau`). So memory stays near the input's size however long the window
//!   and its padding, with windows far apart or overlapping;
//! - in both, a fold's left operand holds earlier taps (in row-major order), so `maximum`,
//!   which keeps its left operand on a tie, keeps the first tied tap of the window either way.

use super::window::{as_i64, window_range, PooledAxis};
use super::{AxisSlice, BinaryOp, Graph, GraphError, NodeId};
use crate::axis::{Axis, AxisDef, SliceRange};
use crate::host::Scalar;

/// The most taps (in all) a pool folds one by one.
pub const DIRECT_POOL_TAPS: usize = 64;

/// The association of a pool's fold ([module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolFold {
    /// Every tap in row-major order, left to right.
    Direct,
    /// Axis by axis, the last first; along each, [`doubling_chunks`] of pairwise trees.
    Separable,
}

impl PoolFold {
    /// The fold of a pool over `pooled`.
    pub fn of(pooled: &[PooledAxis]) -> PoolFold {
        let taps = pooled.iter().try_fold(1usize, |n, p| n.checked_mul(p.taps));
        match taps {
            Some(n) if n <= DIRECT_POOL_TAPS => PoolFold::Direct,
            _ => PoolFold::Separable,
        }
    }

    /// What the fold computes, for `weft explain`.
    pub fn describe(self) -> &'static str {
        match self {
            PoolFold::Direct => "folded one by one over strided views of the padded input",
            PoolFold::Separable => {
                "folded axis by axis as pairwise trees (log2 of the taps levels over shifted views of the padded input)"
            }
        }
    }
}

/// The chunks `(first tap, length)` a separable fold splits `taps` taps into along one axis:
/// the binary digits of `taps`, largest first, so every length is a power of two.
pub fn doubling_chunks(taps: usize) -> Vec<(usize, usize)> {
    let mut chunks = Vec::new();
    let mut first = 0;
    for bit in (0..usize::BITS).rev() {
        let len = 1usize << bit;
        if taps & len != 0 {
            chunks.push((first, len));
            first += len;
        }
    }
    chunks
}

/// The value of a pairwise tree over `len` (a power of two) consecutive taps from `first`,
/// each tap's value given by `tap`: the reference form of one chunk.
pub fn pairwise<T, E>(
    first: usize,
    len: usize,
    tap: &mut impl FnMut(usize) -> Result<T, E>,
    op: &impl Fn(T, T) -> Result<T, E>,
) -> Result<T, E> {
    if len <= 1 {
        return tap(first);
    }
    let half = len / 2;
    let left = pairwise(first, half, tap, op)?;
    let right = pairwise(first + half, half, tap, op)?;
    op(left, right)
}

/// The most separate pieces of one level a separable fold computes; closer ones merge.
pub const MAX_LEVEL_PIECES: usize = 8;

/// The positions `[start, end)` of one level of the doubling tree along an axis: element `i`
/// of level `k` folds the taps `i, i + d, …, i + (2^k − 1)·d` of the padded axis.
type Span = (usize, usize);

/// Where the input lies in the padded axis and how its levels shrink: what decides which
/// positions of a level hold anything but the padding value.
#[derive(Clone, Copy, Debug)]
struct BandGeometry {
    /// Padding before the input.
    before: usize,
    /// The input's length.
    input_len: usize,
    /// The padded axis's length.
    padded_len: usize,
    /// Distance between taps.
    dilation: usize,
    /// Whether levels whose trees dwarf the input compute one period of their plateau
    /// ([`Plateau`]); off when the windows would read it in too many runs.
    collapse: bool,
}

/// The positions of a level whose trees hold the whole input with padding to spare (from
/// `start` to `end`): their values repeat every `period` positions (a power of two of taps
/// at least the input's length, times the dilation), because shifting a tree by whole
/// periods leaves the input's elements grouped alike and only padding moves, which `op`
/// leaves alone (a sum that meets padding is never `−0`). Only the last period,
/// [`Plateau::computed`], is computed; every read of the plateau is a read of it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Plateau {
    start: usize,
    end: usize,
    period: usize,
}

impl Plateau {
    /// The positions computed: the last period of the plateau.
    fn computed(&self) -> Span {
        (self.end - self.period, self.end)
    }

    /// Where position `p` of the plateau falls in the computed period.
    fn offset(&self, p: usize) -> usize {
        let first = self.end - self.period;
        (p % self.period + self.period - first % self.period) % self.period
    }
}

/// A run of positions of a plateau's computed period: offset of the first, count, step.
type PeriodRun = (usize, usize, i64);

/// The runs reading `count` positions `first, first + stride, …` of `plateau` from its
/// computed period (one period of them, tiled by the caller past it): steps of the stride
/// modulo the period, up or down, whichever needs fewer runs; more than
/// [`MAX_LEVEL_PIECES`] runs are cut short (the caller does not collapse then).
fn plateau_runs(plateau: &Plateau, first: usize, count: usize, stride: usize) -> Vec<PeriodRun> {
    let period = plateau.period;
    let up = stride % period;
    let u = plateau.offset(first);
    if up == 0 || count <= 1 {
        return vec![(u, 1, 1)];
    }
    let one_period = count.min(period / gcd(up, period));
    let ascending = runs_stepping(u, one_period, period, up, true);
    let descending = runs_stepping(u, one_period, period, period - up, false);
    if descending.len() < ascending.len() {
        descending
    } else {
        ascending
    }
}

/// Runs of `count` offsets from `u` stepping by `step` (up or down) modulo `period`, each
/// ending where the next step would wrap.
fn runs_stepping(
    mut u: usize,
    count: usize,
    period: usize,
    step: usize,
    up: bool,
) -> Vec<PeriodRun> {
    let mut runs = Vec::new();
    let mut taken = 0;
    while taken < count && runs.len() <= MAX_LEVEL_PIECES {
        let room = if up {
            (period - 1 - u) / step
        } else {
            u / step
        } + 1;
        let len = room.min(count - taken);
        let signed = step as i64;
        runs.push((u, len, if up { signed } else { -signed }));
        let moved = (len * step) % period;
        u = if up {
            (u + moved) % period
        } else {
            (u + period - moved) % period
        };
        taken += len;
    }
    runs
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

impl BandGeometry {
    /// The number of taps a tree of level `k` folds, times the dilation: its shift to the
    /// level above.
    fn shift(&self, k: u32) -> usize {
        (1usize << k) * self.dilation
    }

    /// Which of the windows `start + j·stride` (`j < n`) read a position of level `k` inside
    /// its band: `first..end` (empty if none).
    fn windows_in_band(&self, k: u32, start: usize, n: usize, stride: usize) -> (usize, usize) {
        windows_meeting(self.band(k), start, n, stride)
    }

    /// The spans of level `k` the windows `start + j·stride` (`j < n`) read inside its band:
    /// a span per position when there are at most [`MAX_LEVEL_PIECES`] (windows far apart,
    /// each meeting the input alone), else the one span from the first to the last.
    fn read_spans(&self, k: u32, start: usize, n: usize, stride: usize) -> Vec<Span> {
        let (first, end) = self.windows_in_band(k, start, n, stride);
        let at = |j: usize| start + j * stride;
        match end - first {
            0 => Vec::new(),
            c if c <= MAX_LEVEL_PIECES => (first..end).map(|j| (at(j), at(j) + 1)).collect(),
            _ => vec![(at(first), at(end - 1) + 1)],
        }
    }

    /// The positions of level `k` whose taps meet the input (every other one folds padding
    /// alone, so holds the padding value): none when the input is empty.
    fn band(&self, k: u32) -> Span {
        if self.input_len == 0 {
            return (0, 0);
        }
        let reach = ((1usize << k) - 1) * self.dilation;
        let len = self.padded_len - reach;
        let end = (self.before + self.input_len).min(len);
        (self.before.saturating_sub(reach).min(end), end)
    }

    /// Level `k`'s plateau when it is collapsed: its trees span at least twice the period and
    /// the input together, and the plateau holds at least a period.
    fn plateau(&self, k: u32) -> Option<Plateau> {
        if !self.collapse || self.input_len == 0 {
            return None;
        }
        let period = self
            .input_len
            .checked_next_power_of_two()?
            .checked_mul(self.dilation)?;
        let tree = 1usize.checked_shl(k)?.checked_mul(self.dilation)?;
        if tree / 2 < period.checked_add(self.input_len)? {
            return None;
        }
        let band = self.band(k);
        let reach = tree - self.dilation;
        let start = (self.before + self.input_len - 1)
            .saturating_sub(reach)
            .max(band.0);
        let end = (self.before + 1).min(band.1);
        (end >= start + period).then_some(Plateau { start, end, period })
    }

    /// How the positions `first + j·stride` (`j < count`, inside level `k`'s band) split
    /// around `plateau`: the first `j` in it and the first after it.
    fn plateau_split(
        plateau: &Plateau,
        first: usize,
        count: usize,
        stride: usize,
    ) -> (usize, usize) {
        let stride = stride.max(1);
        let at_or_after = |p: usize| p.saturating_sub(first).div_ceil(stride).min(count);
        let into = at_or_after(plateau.start);
        (into, at_or_after(plateau.end).max(into))
    }

    /// Whether every window reads the plateau of each collapsed level of `chunks` in at most
    /// [`MAX_LEVEL_PIECES`] runs.
    fn plateaus_read_in_few_runs(
        &self,
        chunks: &[(usize, usize)],
        n: usize,
        stride: usize,
    ) -> bool {
        chunks.iter().all(|&(first, len)| {
            let k = len.trailing_zeros();
            let Some(plateau) = self.plateau(k) else {
                return true;
            };
            let start = first * self.dilation;
            let (fi, ei) = self.windows_in_band(k, start, n, stride);
            let at = start + fi * stride;
            let (into, after) = Self::plateau_split(&plateau, at, ei - fi, stride);
            after == into
                || plateau_runs(&plateau, at + into * stride, after - into, stride).len()
                    <= MAX_LEVEL_PIECES
        })
    }
}

/// Which positions of each level (`0..=top`) a separable fold computes, given the positions
/// `wanted` of the levels the window's chunks read: each level's pieces cover, within its
/// band, what the level above and the chunks read, as at most [`MAX_LEVEL_PIECES`] spans
/// (merged where they touch, then the closest) on either side of a collapsed plateau, whose
/// read positions all become its computed period. Level 0 is the input itself, not listed.
fn level_pieces(geometry: &BandGeometry, top: u32, wanted: &[(u32, Span)]) -> Vec<Vec<Span>> {
    let mut pieces: Vec<Vec<Span>> = vec![Vec::new(); top as usize + 1];
    let mut demand: Vec<Span> = Vec::new();
    for k in (1..=top).rev() {
        demand.extend(wanted.iter().filter(|w| w.0 == k).map(|w| w.1));
        let clipped = clip_all(&demand, geometry.band(k));
        let here = match geometry.plateau(k) {
            None => merge_spans(clipped),
            Some(plateau) => around_plateau(&clipped, &plateau),
        };
        let shift = geometry.shift(k - 1);
        demand = here
            .iter()
            .flat_map(|&(a, b)| [(a, b), (a + shift, b + shift)])
            .collect();
        pieces[k as usize] = here;
    }
    pieces
}

/// `spans` with their parts inside `plateau` replaced by its computed period, the parts on
/// either side merged separately (never across the plateau).
fn around_plateau(spans: &[Span], plateau: &Plateau) -> Vec<Span> {
    let before: Vec<Span> = spans
        .iter()
        .filter(|s| s.0 < plateau.start)
        .map(|&(a, b)| (a, b.min(plateau.start)))
        .collect();
    let after: Vec<Span> = spans
        .iter()
        .filter(|s| s.1 > plateau.end)
        .map(|&(a, b)| (a.max(plateau.end), b))
        .collect();
    let inside = spans
        .iter()
        .any(|&(a, b)| a < plateau.end && b > plateau.start);
    let mut out = merge_spans(before);
    out.extend(inside.then(|| plateau.computed()));
    out.extend(merge_spans(after));
    out
}

/// `spans` intersected with `band`, the empty ones dropped.
fn clip_all(spans: &[Span], band: Span) -> Vec<Span> {
    spans
        .iter()
        .map(|&(a, b)| (a.max(band.0), b.min(band.1)))
        .filter(|(a, b)| a < b)
        .collect()
}

/// `spans` sorted, the touching ones merged, then the closest merged until at most
/// [`MAX_LEVEL_PIECES`] are left; every span given lies inside one span returned.
fn merge_spans(mut spans: Vec<Span>) -> Vec<Span> {
    spans.sort_unstable();
    let mut merged: Vec<Span> = Vec::new();
    for s in spans {
        match merged.last_mut() {
            Some(last) if s.0 <= last.1 => last.1 = last.1.max(s.1),
            _ => merged.push(s),
        }
    }
    while merged.len() > MAX_LEVEL_PIECES {
        let i = (0..merged.len() - 1)
            .min_by_key(|&i| merged[i + 1].0 - merged[i].1)
            .unwrap_or(0);
        merged[i].1 = merged[i + 1].1;
        merged.remove(i + 1);
    }
    merged
}

/// A computed piece of a level: positions `span` of it, as `node` over `axis` (in place of
/// the folded axis).
#[derive(Clone, Copy)]
struct Piece {
    node: NodeId,
    axis: Axis,
    span: Span,
}

/// One separable fold along an axis being built: the input, what fills the padding, and the
/// pieces of each level computed so far.
struct BandFold {
    geometry: BandGeometry,
    op: BinaryOp,
    padding: Scalar,
    /// The padded axis (what a tiled read's repeat axis is sliced from: as long as any read).
    padded: Axis,
    levels: Vec<Vec<Piece>>,
}

impl Graph {
    /// `t` (holding the pooled axis `p.input`, unpadded) with that axis folded by `op` into the
    /// pool's window axis `out`, separably ([`PoolFold::Separable`] along one axis), the
    /// padding holding `padding`. Only the positions of each level that the window reads and
    /// whose taps meet the input are computed ([`level_pieces`]), and of a plateau only its
    /// period ([`Plateau`]): the rest fold padding alone, which `op` (`add` of zeros,
    /// `maximum` of `−inf`) leaves the padding value, so the values are those of the whole
    /// levels while memory stays near the input's size, however long the window and its
    /// padding.
    pub(crate) fn fold_axis_doubling(
        &mut self,
        t: NodeId,
        p: &PooledAxis,
        out: Axis,
        op: BinaryOp,
        padding: Scalar,
    ) -> Result<NodeId, GraphError> {
        let input_len = self.resolve_len(p.input)?;
        let padded = self.padded_axis(p.input, &p.step);
        let mut geometry = BandGeometry {
            before: p.step.before,
            input_len,
            padded_len: self.resolve_len(padded)?,
            dilation: p.step.dilation,
            collapse: true,
        };
        let n = self.resolve_len(out)?;
        let chunks = doubling_chunks(p.taps);
        let top = chunks.first().map_or(0, |c| c.1.trailing_zeros());
        let stride = if n > 1 { p.step.stride } else { 1 };
        geometry.collapse = geometry.plateaus_read_in_few_runs(&chunks, n, stride);
        let wanted: Vec<(u32, Span)> = chunks
            .iter()
            .flat_map(|&(first, len)| {
                let k = len.trailing_zeros();
                let spans = geometry.read_spans(k, first * p.step.dilation, n, stride);
                spans.into_iter().map(move |s| (k, s))
            })
            .collect();
        let plan = level_pieces(&geometry, top, &wanted);
        let input = Piece {
            node: t,
            axis: p.input,
            span: geometry.band(0),
        };
        let mut fold = BandFold {
            geometry,
            op,
            padding,
            padded,
            levels: vec![vec![input]],
        };
        for (k, spans) in plan.iter().enumerate().skip(1) {
            let pieces = self.level(&fold, k as u32, spans)?;
            fold.levels.push(pieces);
        }
        let mut acc: Option<NodeId> = None;
        for (first, len) in chunks {
            let level = len.trailing_zeros();
            let start = first * p.step.dilation;
            let term = self.window_positions(&fold, level, start, n, stride, out)?;
            acc = Some(match acc {
                None => term,
                Some(a) => self.binary(op, a, term)?,
            });
        }
        acc.ok_or_else(|| GraphError::Argument {
            op: "pool".into(),
            message: "the window has no taps".into(),
        })
    }

    /// The pieces `spans` of level `k`: `op` of level `k − 1` at each position and at the
    /// position a tree of level `k − 1` further.
    fn level(&mut self, fold: &BandFold, k: u32, spans: &[Span]) -> Result<Vec<Piece>, GraphError> {
        let shift = fold.geometry.shift(k - 1);
        let mut pieces = Vec::with_capacity(spans.len());
        for &(a, b) in spans {
            let (left, axis) = self.level_span(fold, k - 1, (a, b))?;
            let (right, right_axis) = self.level_span(fold, k - 1, (a + shift, b + shift))?;
            let right = self.relabel(right, right_axis, axis)?;
            let node = self.binary(fold.op, left, right)?;
            pieces.push(Piece {
                node,
                axis,
                span: (a, b),
            });
        }
        Ok(pieces)
    }

    /// Positions `span` of level `k` over a new axis: those inside the level's band read from
    /// its pieces ([`Graph::read_band`]), the padding value around them.
    fn level_span(
        &mut self,
        fold: &BandFold,
        k: u32,
        span: Span,
    ) -> Result<(NodeId, Axis), GraphError> {
        let band = fold.geometry.band(k);
        let (a, b) = (span.0.max(band.0), span.1.min(band.1));
        let (node, axis) = if a < b {
            self.read_band(fold, k, a, b - a, 1)?
        } else {
            self.slice_along(fold.levels[0][0], empty_range())?
        };
        let before = a.min(span.1).saturating_sub(span.0);
        let kept = b.saturating_sub(a);
        let after = span.1 - span.0 - before - kept;
        self.extend_with(fold.padding, node, axis, before, after)
    }

    /// The window positions `start, start + stride, …` (`n` of them) of level `k`, as the
    /// window axis `out`: those inside the level's band read from its pieces
    /// ([`Graph::read_band`]), the others the padding value.
    fn window_positions(
        &mut self,
        fold: &BandFold,
        k: u32,
        start: usize,
        n: usize,
        stride: usize,
        out: Axis,
    ) -> Result<NodeId, GraphError> {
        let stride = stride.max(1);
        let (first_in, end_in) = fold.geometry.windows_in_band(k, start, n, stride);
        let (node, axis) = if first_in < end_in {
            let first = start + first_in * stride;
            self.read_band(fold, k, first, end_in - first_in, stride)?
        } else {
            self.slice_along(fold.levels[0][0], empty_range())?
        };
        let (t, axis) = self.extend_with(fold.padding, node, axis, first_in, n - end_in)?;
        self.relabel(t, axis, out)
    }

    /// Positions `first + j·stride` (`j < count`, all inside level `k`'s band) of level `k`
    /// over a new axis: sliced from the pieces holding them, those in a collapsed plateau
    /// from its computed period ([`Graph::plateau_read`]), concatenated.
    fn read_band(
        &mut self,
        fold: &BandFold,
        k: u32,
        first: usize,
        count: usize,
        stride: usize,
    ) -> Result<(NodeId, Axis), GraphError> {
        let plateau = fold.geometry.plateau(k);
        let (into, after) = match &plateau {
            Some(plateau) => BandGeometry::plateau_split(plateau, first, count, stride),
            None => (count, count),
        };
        let at = |j: usize| first + j * stride;
        let mut runs = self.piece_runs(fold, k, first, into, stride)?;
        if let (Some(plateau), true) = (&plateau, after > into) {
            runs.push(self.plateau_read(fold, k, plateau, at(into), after - into, stride)?);
        }
        runs.extend(self.piece_runs(fold, k, at(after), count - after, stride)?);
        self.concat_runs(&runs)
    }

    /// Positions `first + j·stride` (`j < count`) of level `k` sliced from the pieces holding
    /// them: a strided slice per piece.
    fn piece_runs(
        &mut self,
        fold: &BandFold,
        k: u32,
        first: usize,
        count: usize,
        stride: usize,
    ) -> Result<Vec<(NodeId, Axis)>, GraphError> {
        let pieces = &fold.levels[k as usize];
        let mut runs = Vec::new();
        let mut j = 0;
        while j < count {
            let at = first + j * stride;
            let piece = holding(pieces, (at, at + 1))?;
            // The positions from `j` on that this piece holds.
            let last = (piece.span.1 - 1 - at) / stride;
            let n = (last + 1).min(count - j);
            let range = window_range(at - piece.span.0, n, stride)?;
            runs.push(self.slice_along(piece, range)?);
            j += n;
        }
        Ok(runs)
    }

    /// Positions `first + j·stride` (`j < count`) of `plateau` of level `k`, read from its
    /// computed period: one period of them in [`plateau_runs`], repeated to `count` (a
    /// broadcast over a repeat axis, flattened).
    fn plateau_read(
        &mut self,
        fold: &BandFold,
        k: u32,
        plateau: &Plateau,
        first: usize,
        count: usize,
        stride: usize,
    ) -> Result<(NodeId, Axis), GraphError> {
        let piece = holding(&fold.levels[k as usize], plateau.computed())?;
        let base = plateau.computed().0 - piece.span.0;
        let mut parts = Vec::new();
        let mut period = 0;
        for (u, len, step) in plateau_runs(plateau, first, count, stride) {
            parts.push(self.slice_along(piece, run_range(base + u, len, step)?)?);
            period += len;
        }
        let (z, along) = self.concat_runs(&parts)?;
        if count <= period {
            return Ok((z, along));
        }
        let range = SliceRange::range(0, as_i64(count.div_ceil(period))?);
        let repeat = self.derived_axis(AxisDef::Slice {
            of: fold.padded,
            range,
        });
        let axes: Vec<Axis> = self
            .node(z)
            .axes
            .iter()
            .flat_map(|a| {
                if *a == along {
                    vec![repeat, along]
                } else {
                    vec![*a]
                }
            })
            .collect();
        let tiled = self.broadcast(z, &axes)?;
        let flat = self.flatten(tiled, &[repeat, along])?;
        let at = self.node(z).axes.position(along);
        let flat_axis = at.and_then(|i| self.node(flat).axes.iter().nth(i).copied());
        let flat_axis = flat_axis.ok_or_else(|| internal("a flattened repeat lost its axis"))?;
        let whole = Piece {
            node: flat,
            axis: flat_axis,
            span: (0, count.div_ceil(period) * period),
        };
        self.slice_along(whole, SliceRange::range(0, as_i64(count)?))
    }

    /// `runs` (at least one) as one tensor: concatenated along their axes when several.
    fn concat_runs(&mut self, runs: &[(NodeId, Axis)]) -> Result<(NodeId, Axis), GraphError> {
        match runs {
            [] => Err(internal("no positions to read")),
            [one] => Ok(*one),
            several => {
                let t = self.concat(several)?;
                let at = self.node(several[0].0).axes.position(several[0].1);
                let axis = at.and_then(|i| self.node(t).axes.iter().nth(i).copied());
                Ok((
                    t,
                    axis.ok_or_else(|| internal("a concatenation lost its axis"))?,
                ))
            }
        }
    }

    /// `piece` sliced by `range` along its axis, and the slice's (derived) axis.
    fn slice_along(
        &mut self,
        piece: Piece,
        range: SliceRange,
    ) -> Result<(NodeId, Axis), GraphError> {
        let t = self.slice(piece.node, &[(piece.axis, AxisSlice::Range(range))])?;
        let axis = self.derived_axis(AxisDef::Slice {
            of: piece.axis,
            range,
        });
        Ok((t, axis))
    }

    /// `t` with `before` and `after` positions of `value` added along `axis`
    /// ([`Graph::pad_with`]), and the new axis.
    fn extend_with(
        &mut self,
        value: Scalar,
        t: NodeId,
        axis: Axis,
        before: usize,
        after: usize,
    ) -> Result<(NodeId, Axis), GraphError> {
        if before + after == 0 {
            return Ok((t, axis));
        }
        let padded = self.pad_with(t, &[(axis, before, after)], value)?;
        let new_axis = self.derived_axis(AxisDef::Pad {
            of: axis,
            before,
            after,
        });
        Ok((padded, new_axis))
    }
}

/// The piece of `pieces` whose span holds `span` ([`level_pieces`] made one).
fn holding(pieces: &[Piece], span: Span) -> Result<Piece, GraphError> {
    pieces
        .iter()
        .find(|p| p.span.0 <= span.0 && span.1 <= p.span.1)
        .copied()
        .ok_or_else(|| GraphError::Argument {
            op: "pool".into(),
            message: format!(
                "internal: no computed piece of a fold level holds positions {}..{}",
                span.0, span.1
            ),
        })
}

/// The slice of `len` positions from `start` stepping by `step` (down when negative).
fn run_range(start: usize, len: usize, step: i64) -> Result<SliceRange, GraphError> {
    if step > 0 || len <= 1 {
        return window_range(start, len, step.unsigned_abs() as usize);
    }
    let down = (len as u64).saturating_mul(step.unsigned_abs());
    let start_i = as_i64(start)?;
    let stop = i64::try_from(down)
        .ok()
        .and_then(|d| start_i.checked_sub(d))
        .filter(|s| *s >= 0);
    Ok(SliceRange {
        start: Some(start_i),
        stop,
        step,
    })
}

/// An internal error of the pool's fold (a broken invariant, never bad input).
fn internal(what: &str) -> GraphError {
    GraphError::Argument {
        op: "pool".into(),
        message: format!("internal: {what}"),
    }
}

/// Which of the positions `start + j·stride` (`j < n`) lie in `span`: `first..end` (empty if
/// none).
pub(crate) fn windows_meeting(span: Span, start: usize, n: usize, stride: usize) -> (usize, usize) {
    let stride = stride.max(1);
    let first = span.0.saturating_sub(start).div_ceil(stride).min(n);
    let end = span.1.saturating_sub(start).div_ceil(stride).min(n);
    (first, end.max(first))
}

/// The empty slice `0..0`.
fn empty_range() -> SliceRange {
    SliceRange {
        start: Some(0),
        stop: Some(0),
        step: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_the_binary_digits_largest_first() {
        assert_eq!(doubling_chunks(1), vec![(0, 1)]);
        assert_eq!(doubling_chunks(6), vec![(0, 4), (4, 2)]);
        assert_eq!(doubling_chunks(13), vec![(0, 8), (8, 4), (12, 1)]);
        let n = (1usize << 40) + 3;
        let chunks = doubling_chunks(n);
        assert_eq!(chunks.iter().map(|c| c.1).sum::<usize>(), n);
        assert_eq!(chunks.len(), 3);
    }

    fn geometry(before: usize, input_len: usize, after: usize, dilation: usize) -> BandGeometry {
        BandGeometry {
            before,
            input_len,
            padded_len: before + input_len + after,
            dilation,
            collapse: true,
        }
    }

    /// What `n` windows `stride` apart (dilation 1) read of each level, chunk by chunk.
    fn wanted_by_windows(
        g: &BandGeometry,
        chunks: &[(usize, usize)],
        n: usize,
        stride: usize,
    ) -> Vec<(u32, Span)> {
        chunks
            .iter()
            .flat_map(|&(first, len)| {
                let k = len.trailing_zeros();
                let spans = g.read_spans(k, first, n, stride);
                spans.into_iter().map(move |s| (k, s))
            })
            .collect()
    }

    fn total(pieces: &[Vec<Span>]) -> usize {
        pieces.iter().flatten().map(|s| s.1 - s.0).sum()
    }

    #[test]
    fn without_padding_each_level_is_what_the_window_reads() {
        // 1000 inputs, 256 taps, stride 1: 745 windows; level 8 is read at 0..745.
        let g = geometry(0, 1000, 0, 1);
        let pieces = level_pieces(&g, 8, &[(8, (0, 745))]);
        assert_eq!(pieces[8], vec![(0, 745)]);
        assert_eq!(pieces[7], vec![(0, 745 + 128)]);
        assert_eq!(pieces[1], vec![(0, 999)]);
    }

    #[test]
    fn huge_padding_around_a_tiny_input_computes_near_its_size() {
        // One input element in the middle of a 2^28-tap window, padding 2^27 either side.
        let half = 1usize << 27;
        let g = geometry(half, 1, half, 1);
        let chunks = doubling_chunks((1 << 28) + 1);
        let wanted: Vec<(u32, Span)> = chunks
            .iter()
            .map(|&(first, len)| (len.trailing_zeros(), (first, first + 1)))
            .collect();
        let pieces = level_pieces(&g, 28, &wanted);
        assert!(total(&pieces) <= 64, "{pieces:?}");
        // The fuzzer's: window 2^32 + 2, padding (1, 2^32), a few inputs, windows over them.
        let g = geometry(1, 5, 1 << 32, 1);
        let pieces = level_pieces(&g, 32, &[(32, (0, 5)), (1, ((1 << 32), (1 << 32) + 5))]);
        assert!(total(&pieces) <= 33 * 8, "{pieces:?}");
    }

    #[test]
    fn an_empty_input_computes_no_position_of_any_level() {
        let g = geometry(1 << 32, 0, (1 << 32) - 1, 1);
        let wanted = [(32, (0, 1)), (1, (1 << 32, (1 << 32) + 1))];
        assert_eq!(total(&level_pieces(&g, 32, &wanted)), 0);
    }

    #[test]
    fn windows_far_apart_read_a_position_each() {
        // The fuzzer's: window 2^32 + 2, stride 2^32 − 1, padding (2^32, 2^32 − 1), 3 inputs:
        // two windows, 2^32 − 1 apart; each level computes a few positions, not the gap.
        let g = geometry(1 << 32, 3, (1 << 32) - 1, 1);
        let n = 2;
        let stride = (1usize << 32) - 1;
        let wanted = wanted_by_windows(&g, &doubling_chunks((1 << 32) + 2), n, stride);
        let pieces = level_pieces(&g, 32, &wanted);
        assert!(total(&pieces) <= 33 * 8, "{pieces:?}");
        // The first window starts before the band of the top level (its taps there are padding).
        assert_eq!(g.read_spans(32, 0, 2, stride), vec![(stride, stride + 1)]);
        assert_eq!(g.read_spans(1, 1 << 32, 2, stride).len(), 1);
    }

    #[test]
    fn overlapping_windows_over_a_tiny_input_compute_a_period_of_each_plateau() {
        // The fuzzer's: window 2^32 + 2, stride 429496729 (11 windows, a tenth of the window
        // apart), padding (2^32, 2^32 − 1), one input element.
        for len in [1usize, 5] {
            let g = geometry(1 << 32, len, (1 << 32) - 1, 1);
            let (n, stride) = (11, 429_496_729);
            let chunks = doubling_chunks((1 << 32) + 2);
            assert!(g.plateaus_read_in_few_runs(&chunks, n, stride));
            let wanted = wanted_by_windows(&g, &chunks, n, stride);
            let pieces = level_pieces(&g, 32, &wanted);
            assert!(total(&pieces) <= 33 * 4 * 8, "{pieces:?}");
        }
    }

    #[test]
    fn plateau_runs_read_each_position_at_its_offset() {
        let mut seed = 7u64;
        let mut next = |below: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % below
        };
        for period in [1usize, 2, 4, 8, 16, 32] {
            for _ in 0..200 {
                let plateau = Plateau {
                    start: 3,
                    end: 3 + period * (2 + next(5)),
                    period,
                };
                let stride = 1 + next(4 * period + 3);
                let first = plateau.start + next(plateau.end - plateau.start);
                let count = 1 + next(3 * period);
                let runs = plateau_runs(&plateau, first, count, stride);
                if runs.len() > MAX_LEVEL_PIECES {
                    // Too many runs: the fold does not collapse then.
                    continue;
                }
                let read: Vec<usize> = runs
                    .iter()
                    .flat_map(|&(u, len, step)| {
                        (0..len as i64).map(move |i| (u as i64 + i * step) as usize)
                    })
                    .collect();
                assert!(read.iter().all(|u| *u < period), "{runs:?}");
                // One period of the reads, then the caller repeats it.
                for j in 0..count {
                    let want = plateau.offset(first + j * stride);
                    assert_eq!(read[j % read.len()], want, "{runs:?} j {j}");
                }
            }
        }
    }

    #[test]
    fn spans_merge_where_they_touch_then_the_closest() {
        assert_eq!(
            merge_spans(vec![(5, 7), (0, 2), (2, 3)]),
            vec![(0, 3), (5, 7)]
        );
        let many: Vec<Span> = (0..20).map(|i| (i * 10 + i, i * 10 + i + 1)).collect();
        let merged = merge_spans(many.clone());
        assert!(merged.len() <= MAX_LEVEL_PIECES);
        for s in many {
            assert!(merged.iter().any(|m| m.0 <= s.0 && s.1 <= m.1));
        }
    }

    #[test]
    fn pairwise_folds_halves() {
        let mut leaf = |i: usize| Ok::<String, ()>(i.to_string());
        let join = |a: String, b: String| Ok::<String, ()>(format!("({a}{b})"));
        assert_eq!(pairwise(4, 4, &mut leaf, &join).unwrap(), "((45)(67))");
    }
}
