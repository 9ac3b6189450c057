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
//!   (each level of the tree is one `op` of two slices of the level below, over the whole
//!   padded axis), so compile time never grows with a window's length;
//! - in both, a fold's left operand holds earlier taps (in row-major order), so `maximum`,
//!   which keeps its left operand on a tie, keeps the first tied tap of the window either way.

use super::convolution::{window_range, PooledAxis};
use super::{AxisSlice, BinaryOp, Graph, GraphError, NodeId};
use crate::axis::{Axis, AxisDef, WindowStep};

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

/// One level of the doubling tree along an axis: a tensor whose element `i` folds the taps
/// `i, i + d, …, i + (2^level − 1)·d` of the padded axis, over `axis` of `len` positions.
struct Level {
    node: NodeId,
    axis: Axis,
    len: usize,
}

impl Graph {
    /// `t` (holding the padded axis of `p`) with that axis folded by `op` into the pool's
    /// window axis `out`, separably ([`PoolFold::Separable`] along one axis).
    pub(crate) fn fold_axis_doubling(
        &mut self,
        t: NodeId,
        p: &PooledAxis,
        out: Axis,
        op: BinaryOp,
    ) -> Result<NodeId, GraphError> {
        let axis = self.padded_axis(p.input, &p.step);
        let len = self.resolve_len(axis)?;
        let chunks = doubling_chunks(p.taps);
        let top = chunks.first().map_or(0, |c| c.1.trailing_zeros());
        let mut levels = vec![Level { node: t, axis, len }];
        for level in 1..=top {
            let below = &levels[levels.len() - 1];
            let next = self.doubled(below, 1usize << (level - 1), p.step.dilation, op)?;
            levels.push(next);
        }
        let n = self.resolve_len(out)?;
        let mut acc: Option<NodeId> = None;
        for (first, chunk) in chunks {
            let level = &levels[chunk.trailing_zeros() as usize];
            let term = self.window_positions(level, first * p.step.dilation, n, &p.step, out)?;
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

    /// The level above `below` (whose trees hold `half` taps): `op` of `below` and `below`
    /// shifted by `half` taps of `dilation`.
    fn doubled(
        &mut self,
        below: &Level,
        half: usize,
        dilation: usize,
        op: BinaryOp,
    ) -> Result<Level, GraphError> {
        let shift = half * dilation;
        let len = below.len - shift;
        let (left, axis) = self.positions(below, 0, len, 1)?;
        let (right, right_axis) = self.positions(below, shift, len, 1)?;
        let right = self.relabel(right, right_axis, axis)?;
        let node = self.binary(op, left, right)?;
        Ok(Level { node, axis, len })
    }

    /// The window positions `start, start + stride, …` (`n` of them) of `level`, as the window
    /// axis `out`.
    fn window_positions(
        &mut self,
        level: &Level,
        start: usize,
        n: usize,
        step: &WindowStep,
        out: Axis,
    ) -> Result<NodeId, GraphError> {
        let (t, axis) = self.positions(level, start, n, step.stride)?;
        self.relabel(t, axis, out)
    }

    /// `n` positions of `level` from `start` by `stride` ([`window_range`]), and the slice's
    /// (derived) axis.
    fn positions(
        &mut self,
        level: &Level,
        start: usize,
        n: usize,
        stride: usize,
    ) -> Result<(NodeId, Axis), GraphError> {
        let range = window_range(start, n, stride)?;
        let t = self.slice(level.node, &[(level.axis, AxisSlice::Range(range))])?;
        let axis = self.derived_axis(AxisDef::Slice {
            of: level.axis,
            range,
        });
        Ok((t, axis))
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

    #[test]
    fn pairwise_folds_halves() {
        let mut leaf = |i: usize| Ok::<String, ()>(i.to_string());
        let join = |a: String, b: String| Ok::<String, ()>(format!("({a}{b})"));
        assert_eq!(pairwise(4, 4, &mut leaf, &join).unwrap(), "((45)(67))");
    }
}
