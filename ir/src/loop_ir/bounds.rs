//! Interval bounds of affine expressions over loop ranges: the arithmetic behind the verifier's
//! proof that every load and store stays inside its buffer.
//!
//! Assumes each loop variable lies in a closed interval (`0..=extent-1` for a loop in scope).
//! Guarantees: [`access_range`] returns an interval containing every index the access can
//! read or write, or `None` when it provably touches no memory (an empty loop range, or a mask
//! that can never hold). Computation is in `i128`, so no `i64` input can overflow it.

use super::{AffineExpr, LoopId, MaskBound};

/// A closed interval `[lo, hi]` of `i128`; empty when `lo > hi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Interval {
    /// Smallest value.
    pub lo: i128,
    /// Largest value.
    pub hi: i128,
}

impl Interval {
    /// Whether the interval holds no value.
    pub fn is_empty(self) -> bool {
        self.lo > self.hi
    }

    fn intersect(self, other: Interval) -> Interval {
        Interval {
            lo: self.lo.max(other.lo),
            hi: self.hi.min(other.hi),
        }
    }
}

/// The range of `expr` when each loop `l` ranges over `range_of(l)`; `None` if some loop has
/// no range (it is not in scope).
pub fn expr_range(
    expr: &AffineExpr,
    range_of: &impl Fn(LoopId) -> Option<Interval>,
) -> Option<Interval> {
    let c0 = i128::from(expr.offset());
    let mut out = Interval { lo: c0, hi: c0 };
    for &(l, c) in expr.terms() {
        let r = range_of(l)?;
        let c = i128::from(c);
        let (a, b) = (c * r.lo, c * r.hi);
        out.lo += a.min(b);
        out.hi += a.max(b);
    }
    Some(out)
}

/// The range of indices an access `index` guarded by `mask` can touch (see module docs).
/// `range_of` gives the range of each loop in scope; `Err(l)` names a loop out of scope.
pub fn access_range(
    index: &AffineExpr,
    mask: &[MaskBound],
    range_of: &impl Fn(LoopId) -> Option<Interval>,
) -> Result<Option<Interval>, LoopId> {
    let mut tightened: Vec<(LoopId, Interval)> = Vec::new();
    for term in index
        .terms()
        .iter()
        .chain(mask.iter().flat_map(|m| m.expr.terms()))
    {
        let l = term.0;
        let r = range_of(l).ok_or(l)?;
        if !tightened.iter().any(|&(t, _)| t == l) {
            tightened.push((l, r));
        }
    }
    // Single-loop mask bounds restrict that loop's range.
    for m in mask {
        if let [(l, c)] = *m.expr.terms() {
            let (k, c) = (i128::from(m.expr.offset()), i128::from(c));
            let (lo, hi) = (i128::from(m.lo), i128::from(m.hi) - 1);
            let allowed = if c > 0 {
                Interval {
                    lo: div_ceil(lo - k, c),
                    hi: div_floor(hi - k, c),
                }
            } else {
                Interval {
                    lo: div_ceil(k - hi, -c),
                    hi: div_floor(k - lo, -c),
                }
            };
            if let Some(entry) = tightened.iter_mut().find(|(t, _)| *t == l) {
                entry.1 = entry.1.intersect(allowed);
            }
        }
    }
    if tightened.iter().any(|(_, r)| r.is_empty()) {
        return Ok(None);
    }
    let lookup = |l: LoopId| tightened.iter().find(|(t, _)| *t == l).map(|&(_, r)| r);
    let Some(mut range) = expr_range(index, &lookup) else {
        return Ok(None);
    };
    for m in mask {
        let bound = Interval {
            lo: i128::from(m.lo),
            hi: i128::from(m.hi) - 1,
        };
        let Some(possible) = expr_range(&m.expr, &lookup) else {
            return Ok(None);
        };
        if possible.intersect(bound).is_empty() {
            return Ok(None);
        }
        // The index is `k·m + rest` with the masked expression `m` sharing no loop with
        // `rest`: the mask bounds that part directly (a padded axis split into chunks of rows
        // is masked on `Q·chunk + row` and indexed by a multiple of it).
        if let Some(k) = multiple_of(index, &m.expr) {
            let part = possible.intersect(bound);
            let (a, b) = (k * part.lo, k * part.hi);
            let rest = AffineExpr::new(
                index
                    .terms()
                    .iter()
                    .copied()
                    .filter(|(l, _)| m.expr.coefficient(*l) == 0),
                index.offset(),
            );
            let Some(rest) = expr_range(&rest, &lookup) else {
                return Ok(None);
            };
            let c = k * i128::from(m.expr.offset());
            range = range.intersect(Interval {
                lo: a.min(b) + rest.lo - c,
                hi: a.max(b) + rest.hi - c,
            });
        }
    }
    if let Some(all) = masked_parts(index, mask, &lookup) {
        range = range.intersect(all);
    }
    Ok(if range.is_empty() { None } else { Some(range) })
}

/// The index's range with every mask that bounds a part of it applied at once: the index
/// as `Σ kⱼ·mⱼ + rest`, the masks' expressions `mⱼ` over disjoint loops none of which `rest`
/// uses, each part bounded by its mask (a convolution's phase image reads its input masked on
/// two axes, `r + s·q` on each). `None` when no mask is such a part.
fn masked_parts(
    index: &AffineExpr,
    mask: &[MaskBound],
    lookup: &impl Fn(LoopId) -> Option<Interval>,
) -> Option<Interval> {
    let (mut used, mut sum) = (Vec::new(), Interval { lo: 0, hi: 0 });
    for m in mask {
        let loops: Vec<LoopId> = m.expr.terms().iter().map(|(l, _)| *l).collect();
        if loops.iter().any(|l| used.contains(l)) {
            continue;
        }
        let Some(k) = multiple_of(index, &m.expr) else {
            continue;
        };
        let bound = Interval {
            lo: i128::from(m.lo),
            hi: i128::from(m.hi) - 1,
        };
        let part = expr_range(&m.expr, lookup)?.intersect(bound);
        let (a, b, c) = (k * part.lo, k * part.hi, k * i128::from(m.expr.offset()));
        sum.lo += a.min(b) - c;
        sum.hi += a.max(b) - c;
        used.extend(loops);
    }
    if used.is_empty() {
        return None;
    }
    let rest = AffineExpr::new(
        index
            .terms()
            .iter()
            .copied()
            .filter(|(l, _)| !used.contains(l)),
        index.offset(),
    );
    let rest = expr_range(&rest, lookup)?;
    Some(Interval {
        lo: sum.lo + rest.lo,
        hi: sum.hi + rest.hi,
    })
}

/// `k ≠ 0` such that every loop of `m` has `k` times its coefficient in `index`.
fn multiple_of(index: &AffineExpr, m: &AffineExpr) -> Option<i128> {
    let (&(l0, a0), others) = m.terms().split_first()?;
    let c0 = i128::from(index.coefficient(l0));
    let a0 = i128::from(a0);
    if a0 == 0 || c0 == 0 || c0 % a0 != 0 {
        return None;
    }
    let k = c0 / a0;
    others
        .iter()
        .all(|&(l, a)| i128::from(index.coefficient(l)) == k * i128::from(a))
        .then_some(k)
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::EntityRef;

    fn l(i: usize) -> LoopId {
        LoopId::new(i)
    }

    #[test]
    fn negative_strides_and_broadcast() {
        let ranges = |x: LoopId| {
            Some(Interval {
                lo: 0,
                hi: if x == l(0) { 3 } else { 4 },
            })
        };
        let e = AffineExpr::new([(l(0), -5), (l(1), 1)], 15);
        assert_eq!(expr_range(&e, &ranges), Some(Interval { lo: 0, hi: 19 }));
    }

    #[test]
    fn a_mask_on_the_index_minus_a_constant_bounds_the_index() {
        let (i, j) = (LoopId::from_u32(0), LoopId::from_u32(1));
        let ranges = |l: LoopId| {
            Some(if l == i {
                Interval { lo: 0, hi: 1 }
            } else {
                Interval { lo: 0, hi: 2 }
            })
        };
        // load t[i + j - 1] mask(1 <= i + j < 2): only index 0 is touched.
        let index = AffineExpr::new([(i, 1), (j, 1)], -1);
        let mask = [MaskBound {
            expr: AffineExpr::new([(i, 1), (j, 1)], 0),
            lo: 1,
            hi: 2,
        }];
        assert_eq!(
            access_range(&index, &mask, &ranges),
            Ok(Some(Interval { lo: 0, hi: 0 }))
        );
    }

    #[test]
    fn a_mask_on_a_chunked_axis_bounds_a_multiple_of_it() {
        // t[100·c + 25·r + j - 50], mask(2 <= 4·c + r < 6), c in 0..=1, r in 0..=3, j in 0..=24:
        // 25·(4c + r) lies in [50, 125], so the index lies in [0, 99].
        let (c, r, j) = (l(0), l(1), l(2));
        let ranges = |x: LoopId| {
            Some(Interval {
                lo: 0,
                hi: if x == c {
                    1
                } else if x == r {
                    3
                } else {
                    24
                },
            })
        };
        let index = AffineExpr::new([(c, 100), (r, 25), (j, 1)], -50);
        let mask = [MaskBound {
            expr: AffineExpr::new([(c, 4), (r, 1)], 0),
            lo: 2,
            hi: 6,
        }];
        assert_eq!(
            access_range(&index, &mask, &ranges),
            Ok(Some(Interval { lo: 0, hi: 99 }))
        );
        // Coefficients not proportional: no such bound (the plain interval remains).
        let skew = AffineExpr::new([(c, 100), (r, 24), (j, 1)], -50);
        assert_eq!(
            access_range(&skew, &mask, &ranges),
            Ok(Some(Interval { lo: -50, hi: 146 }))
        );
    }

    #[test]
    fn masks_on_two_axes_bound_their_parts_together() {
        // A stride-2 phase image of a 56 × 56 image padded by one: x[56·(r + 2q) + (s + 2p) -
        // 57], masks 1 <= r + 2q < 57 and 1 <= s + 2p < 57, r, s in 0..=1, q, p in 0..=29.
        // Each mask alone leaves the other axis's padding in (index −1 reachable); both
        // together keep the index in [0, 3135].
        let (r, s, q, p) = (l(0), l(1), l(2), l(3));
        let ranges = |x: LoopId| {
            Some(Interval {
                lo: 0,
                hi: if x == r || x == s { 1 } else { 29 },
            })
        };
        let index = AffineExpr::new([(r, 56), (s, 1), (q, 112), (p, 2)], -57);
        let mask = [
            MaskBound {
                expr: AffineExpr::new([(r, 1), (q, 2)], 0),
                lo: 1,
                hi: 57,
            },
            MaskBound {
                expr: AffineExpr::new([(s, 1), (p, 2)], 0),
                lo: 1,
                hi: 57,
            },
        ];
        assert_eq!(
            access_range(&index, &mask, &ranges),
            Ok(Some(Interval { lo: 0, hi: 3135 }))
        );
        assert_eq!(
            access_range(&index, &mask[..1], &ranges),
            Ok(Some(Interval { lo: -1, hi: 3138 }))
        );
    }

    #[test]
    fn single_loop_mask_tightens_the_range() {
        // x[i - 1] for i in 0..5, valid where 0 <= i - 1 < 3.
        let ranges = |_| Some(Interval { lo: 0, hi: 4 });
        let index = AffineExpr::new([(l(0), 1)], -1);
        let mask = [MaskBound {
            expr: index.clone(),
            lo: 0,
            hi: 3,
        }];
        assert_eq!(
            access_range(&index, &mask, &ranges),
            Ok(Some(Interval { lo: 0, hi: 2 }))
        );
        let never = [MaskBound {
            expr: index.clone(),
            lo: 10,
            hi: 12,
        }];
        assert_eq!(access_range(&index, &never, &ranges), Ok(None));
    }

    #[test]
    fn negative_mask_coefficient() {
        // 2 - i in [0, 2) with i in 0..=4 means i in {1, 2}.
        let ranges = |_| Some(Interval { lo: 0, hi: 4 });
        let index = AffineExpr::new([(l(0), 1)], 0);
        let mask = [MaskBound {
            expr: AffineExpr::new([(l(0), -1)], 2),
            lo: 0,
            hi: 2,
        }];
        assert_eq!(
            access_range(&index, &mask, &ranges),
            Ok(Some(Interval { lo: 1, hi: 2 }))
        );
    }

    #[test]
    fn out_of_scope_loop_is_reported() {
        let ranges = |_| None;
        let index = AffineExpr::var(l(3));
        assert_eq!(access_range(&index, &[], &ranges), Err(l(3)));
    }
}
