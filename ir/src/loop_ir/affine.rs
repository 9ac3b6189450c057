//! Affine index expressions over loop variables and the bounds predicates of masked loads.
//!
//! Guarantees: an [`AffineExpr`] built with [`AffineExpr::new`] is canonical — terms sorted by
//! loop, one term per loop, no zero coefficient — so structural equality is semantic equality.

use super::LoopId;

/// `constant + Σ coefficient · loop`, in elements. Coefficients may be negative
/// (reversed views); a loop absent from `terms` has stride 0 (broadcast).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct AffineExpr {
    terms: Vec<(LoopId, i64)>,
    constant: i64,
}

impl AffineExpr {
    /// The canonical form of `constant + Σ terms` (terms on the same loop are added, with
    /// wrapping arithmetic; zero terms dropped).
    pub fn new(terms: impl IntoIterator<Item = (LoopId, i64)>, constant: i64) -> Self {
        let mut terms: Vec<(LoopId, i64)> = terms.into_iter().collect();
        terms.sort_by_key(|&(l, _)| l);
        let mut merged: Vec<(LoopId, i64)> = Vec::with_capacity(terms.len());
        for (l, c) in terms {
            match merged.last_mut() {
                Some((last, acc)) if *last == l => *acc = acc.wrapping_add(c),
                _ => merged.push((l, c)),
            }
        }
        merged.retain(|&(_, c)| c != 0);
        Self {
            terms: merged,
            constant,
        }
    }

    /// The expression `constant`.
    pub fn constant(constant: i64) -> Self {
        Self::new([], constant)
    }

    /// The expression `1 · loop`.
    pub fn var(loop_id: LoopId) -> Self {
        Self::new([(loop_id, 1)], 0)
    }

    /// The non-zero terms, sorted by loop.
    pub fn terms(&self) -> &[(LoopId, i64)] {
        &self.terms
    }

    /// The constant offset.
    pub fn offset(&self) -> i64 {
        self.constant
    }

    /// The coefficient of `loop_id` (0 if absent).
    pub fn coefficient(&self, loop_id: LoopId) -> i64 {
        self.terms
            .iter()
            .find(|&&(l, _)| l == loop_id)
            .map_or(0, |&(_, c)| c)
    }

    /// The expression with `loop_id` replaced by `by`; `None` if a coefficient or the offset
    /// overflows `i64`. Loop transformations (tiling, strip-mining) rewrite indices with it.
    pub fn substitute(&self, loop_id: LoopId, by: &AffineExpr) -> Option<AffineExpr> {
        let (mut terms, mut offset) = (Vec::with_capacity(self.terms.len() + 1), self.constant);
        for &(l, c) in &self.terms {
            if l == loop_id {
                for &(m, d) in &by.terms {
                    terms.push((m, c.checked_mul(d)?));
                }
                offset = offset.checked_add(c.checked_mul(by.constant)?)?;
            } else {
                terms.push((l, c));
            }
        }
        Some(AffineExpr::new(terms, offset))
    }

    /// Evaluates the expression in `i128` (no overflow for any `i64` inputs and up to 2^60
    /// terms), given the value of every loop; `None` if a loop has no value.
    pub fn evaluate(&self, value_of: impl Fn(LoopId) -> Option<i64>) -> Option<i128> {
        let mut sum = i128::from(self.constant);
        for &(l, c) in &self.terms {
            sum += i128::from(c) * i128::from(value_of(l)?);
        }
        Some(sum)
    }
}

/// A condition `lo <= expr < hi` of a masked load: where it fails the load yields zero and reads
/// no memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaskBound {
    /// The bounded expression.
    pub expr: AffineExpr,
    /// Inclusive lower bound.
    pub lo: i64,
    /// Exclusive upper bound.
    pub hi: i64,
}
