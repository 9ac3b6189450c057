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
//!   as at most [`MAX_LEVEL_PIECES`] spans (a span per window when a few lie far apart); the others fold padding alone and hold the
//!   padding value, so memory stays near the input's size however long the padding;
//! - in both, a fold's left operand holds earlier taps (in row-major order), so `maximum`,
//!   which keeps its left operand on a tie, keeps the first tied tap of the window either way.

use super::convolution::{window_range, PooledAxis};
use super::{AxisSlice, BinaryOp, Graph, GraphError, NodeId};
use crate::axis::{Axis, AxisDef, SliceRange};
use crate::{DType, Scalar};

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
        let band = self.band(k);
        let stride = stride.max(1);
        let first = band.0.saturating_sub(start).div_ceil(stride).min(n);
        let end = band.1.saturating_sub(start).div_ceil(stride).min(n);
        (first, end.max(first))
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
}

/// Which positions of each level (`0..=top`) a separable fold computes, given the positions
/// `wanted` of the levels the window's chunks read: each level's pieces cover, within its
/// band, what the level above and the chunks read, as at most [`MAX_LEVEL_PIECES`] spans
/// (merged where they touch, then the closest). Level 0 is the input itself, not listed.
fn level_pieces(geometry: &BandGeometry, top: u32, wanted: &[(u32, Span)]) -> Vec<Vec<Span>> {
    let mut pieces: Vec<Vec<Span>> = vec![Vec::new(); top as usize + 1];
    let mut demand: Vec<Span> = Vec::new();
    for k in (1..=top).rev() {
        demand.extend(wanted.iter().filter(|w| w.0 == k).map(|w| w.1));
        let here = merge_spans(clip_all(&demand, geometry.band(k)));
        let shift = geometry.shift(k - 1);
        demand = here
            .iter()
            .flat_map(|&(a, b)| [(a, b), (a + shift, b + shift)])
            .collect();
        pieces[k as usize] = here;
    }
    pieces
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
    levels: Vec<Vec<Piece>>,
}

impl Graph {
    /// `t` (holding the pooled axis `p.input`, unpadded) with that axis folded by `op` into the
    /// pool's window axis `out`, separably ([`PoolFold::Separable`] along one axis), the
    /// padding holding `padding`. Only the positions of each level that the window reads and
    /// whose taps meet the input are computed ([`level_pieces`]): the rest fold padding
    /// alone, which `op` (`add` of zeros, `maximum` of `−inf`) leaves the padding value, so the
    /// values are those of the whole levels while memory stays near the input's size,
    /// however long the window and its padding.
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
        let geometry = BandGeometry {
            before: p.step.before,
            input_len,
            padded_len: self.resolve_len(padded)?,
            dilation: p.step.dilation,
        };
        let n = self.resolve_len(out)?;
        let chunks = doubling_chunks(p.taps);
        let top = chunks.first().map_or(0, |c| c.1.trailing_zeros());
        let stride = if n > 1 { p.step.stride } else { 1 };
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

    /// Positions `span` of level `k` over a new axis: the computed piece holding the part
    /// inside the level's band, the padding value around it.
    fn level_span(
        &mut self,
        fold: &BandFold,
        k: u32,
        span: Span,
    ) -> Result<(NodeId, Axis), GraphError> {
        let band = fold.geometry.band(k);
        let (a, b) = (span.0.max(band.0), span.1.min(band.1));
        let (node, axis) = if a < b {
            let piece = holding(&fold.levels[k as usize], (a, b))?;
            let range = window_range(a - piece.span.0, b - a, 1)?;
            self.slice_along(piece, range)?
        } else {
            self.slice_along(fold.levels[0][0], empty_range())?
        };
        let before = a.min(span.1).saturating_sub(span.0);
        let kept = b.saturating_sub(a);
        let after = span.1 - span.0 - before - kept;
        self.extend_with(fold.padding, node, axis, before, after)
    }

    /// The window positions `start, start + stride, …` (`n` of them) of level `k`, as the
    /// window axis `out`: those inside the level's band sliced from the pieces holding them
    /// (concatenated when several do), the others the padding value.
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
        let pieces = &fold.levels[k as usize];
        let mut runs: Vec<(NodeId, Axis)> = Vec::new();
        let mut j = first_in;
        while j < end_in {
            let at = start + j * stride;
            let piece = holding(pieces, (at, at + 1))?;
            // The windows from `j` on whose position this piece holds.
            let last = (piece.span.1 - 1 - at) / stride;
            let count = (last + 1).min(end_in - j);
            let range = window_range(at - piece.span.0, count, stride)?;
            runs.push(self.slice_along(piece, range)?);
            j += count;
        }
        let (node, axis) = match runs.as_slice() {
            [] => self.slice_along(fold.levels[0][0], empty_range())?,
            [one] => *one,
            several => {
                let t = self.concat(several)?;
                let at = self.node(several[0].0).axes.position(several[0].1);
                let axis = at.and_then(|i| self.node(t).axes.iter().nth(i).copied());
                (
                    t,
                    axis.ok_or_else(|| GraphError::Argument {
                        op: "pool".into(),
                        message: "internal: a concatenation lost its axis".into(),
                    })?,
                )
            }
        };
        let (t, axis) = self.extend_with(fold.padding, node, axis, first_in, n - end_in)?;
        self.relabel(t, axis, out)
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

    /// `t` with `before` and `after` positions of `value` added along `axis` (a pad, and for
    /// a value other than zero a select on the padded mask), and the new axis.
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
        let padded = self.pad(t, &[(axis, before, after)])?;
        let new_axis = self.derived_axis(AxisDef::Pad {
            of: axis,
            before,
            after,
        });
        if value == Scalar::Float(0.0) {
            return Ok((padded, new_axis));
        }
        let inside = self.scalar(Scalar::Bool(true), DType::Bool)?;
        let inside = self.broadcast(inside, &[axis])?;
        let mask = self.pad(inside, &[(axis, before, after)])?;
        let fill = self.scalar(value, self.node(t).dtype)?;
        Ok((self.select(mask, padded, fill)?, new_axis))
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
        }
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
        let wanted: Vec<(u32, Span)> = doubling_chunks((1 << 32) + 2)
            .iter()
            .flat_map(|&(first, len)| {
                let k = len.trailing_zeros();
                let spans = g.read_spans(k, first, n, stride);
                spans.into_iter().map(move |s| (k, s))
            })
            .collect();
        let pieces = level_pieces(&g, 32, &wanted);
        assert!(total(&pieces) <= 33 * 8, "{pieces:?}");
        // The first window starts before the band of the top level (its taps there are padding).
        assert_eq!(g.read_spans(32, 0, 2, stride), vec![(stride, stride + 1)]);
        assert_eq!(g.read_spans(1, 1 << 32, 2, stride).len(), 1);
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
