//! `dot`: for each result element, the sum over every contracted index tuple of the product of
//! the paired left and right elements, by explicit loops.
//!
//! The pairs are [`Graph::dot_pairs`](weft_ir::Graph::dot_pairs): every axis both operands
//! share and every dual pair (`A^((k+1)*)` left with `A^(k*)` right). The result axes are the
//! left operand's unpaired axes, then the right's. Floats multiply and accumulate in f64 and
//! round once; integers in i64 with wrapping, then wrap to the result width.

use super::index::{at, for_each_index, strides};
use weft_ir::{ArrayData, Axes, Axis};

/// Index arithmetic of one `dot`: result element `k` and contraction tuple `j` read
/// `left[left_bases[k] + left_offsets[j]]` and `right[right_bases[k] + right_offsets[j]]`.
pub(crate) struct DotIndex {
    left_bases: Vec<usize>,
    right_bases: Vec<usize>,
    left_offsets: Vec<usize>,
    right_offsets: Vec<usize>,
}

impl DotIndex {
    /// The index arithmetic for operands over `left`/`right` with shapes `left_shape`/
    /// `right_shape`, contracting `pairs` (left axis, right axis), giving a result over `out`.
    pub(crate) fn new(
        left: &Axes,
        left_shape: &[usize],
        right: &Axes,
        right_shape: &[usize],
        pairs: &[(Axis, Axis)],
        out: &Axes,
    ) -> Result<DotIndex, String> {
        let (ls, rs) = (strides(left_shape)?, strides(right_shape)?);
        let pos = |axes: &Axes, a: Axis| {
            axes.position(a)
                .ok_or_else(|| format!("axis {a:?} is not an operand axis"))
        };
        // Contraction loops: one per pair, with the left axis's length.
        let mut pair_shape = Vec::new();
        let (mut lp, mut rp) = (Vec::new(), Vec::new());
        for (l, r) in pairs {
            let (i, j) = (pos(left, *l)?, pos(right, *r)?);
            let (n, m) = (at(left_shape, i)?, at(right_shape, j)?);
            if n != m {
                return Err(format!("paired axes have lengths {n} and {m}"));
            }
            pair_shape.push(n);
            lp.push(at(&ls, i)?);
            rp.push(at(&rs, j)?);
        }
        // Result loops: each result axis is an unpaired axis of the left operand (first) or of
        // the right one.
        let left_rest: Vec<Axis> = left
            .iter()
            .copied()
            .filter(|a| !pairs.iter().any(|(l, _)| l == a))
            .collect();
        let right_rest: Vec<Axis> = right
            .iter()
            .copied()
            .filter(|a| !pairs.iter().any(|(_, r)| r == a))
            .collect();
        if out.len() != left_rest.len() + right_rest.len()
            || out
                .iter()
                .zip(left_rest.iter().chain(&right_rest))
                .any(|(a, b)| a != b)
        {
            return Err("result axes are not the left then right unpaired axes".into());
        }
        let mut out_shape = Vec::new();
        let (mut lo, mut ro) = (Vec::new(), Vec::new());
        for a in &left_rest {
            let i = pos(left, *a)?;
            out_shape.push(at(left_shape, i)?);
            lo.push(at(&ls, i)?);
            ro.push(0);
        }
        for a in &right_rest {
            let j = pos(right, *a)?;
            out_shape.push(at(right_shape, j)?);
            lo.push(0);
            ro.push(at(&rs, j)?);
        }
        let linear = |shape: &[usize], s: &[usize]| {
            let mut v = Vec::new();
            for_each_index(shape, |idx| {
                v.push(idx.iter().zip(s).map(|(i, s)| i * s).sum());
                Ok::<(), String>(())
            })?;
            Ok::<Vec<usize>, String>(v)
        };
        Ok(DotIndex {
            left_bases: linear(&out_shape, &lo)?,
            right_bases: linear(&out_shape, &ro)?,
            left_offsets: linear(&pair_shape, &lp)?,
            right_offsets: linear(&pair_shape, &rp)?,
        })
    }

    /// `Σ_j mul(left[..], right[..])` folded with `add` from `zero`, for every result element.
    fn contract<T: Copy, A: Copy>(
        &self,
        left: &[T],
        right: &[T],
        zero: A,
        mul_add: impl Fn(A, T, T) -> A,
    ) -> Result<Vec<A>, String> {
        let mut out = Vec::with_capacity(self.left_bases.len());
        for (&lb, &rb) in self.left_bases.iter().zip(&self.right_bases) {
            let mut acc = zero;
            for (&lo, &ro) in self.left_offsets.iter().zip(&self.right_offsets) {
                acc = mul_add(acc, at(left, lb + lo)?, at(right, rb + ro)?);
            }
            out.push(acc);
        }
        Ok(out)
    }
}

/// The dot product of `x` and `y` under `index`.
pub(crate) fn dot(x: &ArrayData, y: &ArrayData, index: &DotIndex) -> Result<ArrayData, String> {
    use ArrayData as D;
    let fma = |acc: f64, a: f64, b: f64| acc + a * b;
    // Sums start from −0, the additive identity (`weft_ir::scalar::reduce_identity`): a dot
    // over no pairs is the product itself, and a sum of −0 products stays −0.
    let zero = -0.0f64;
    let ima = |acc: i64, a: i64, b: i64| acc.wrapping_add(a.wrapping_mul(b));
    Ok(match (x, y) {
        // An f32 product is rounded to f32, then summed in f64: the policy of a sum of the
        // same products (`sum(multiply(a, b))`, `sum(square(t))`), so every spelling of one
        // contraction computes the same values (docs/numerics.md).
        (D::F32(a), D::F32(b)) => D::F32(
            index
                .contract(a, b, zero, |acc, p, q| acc + f64::from(p * q))?
                .into_iter()
                .map(|v| v as f32)
                .collect(),
        ),
        (D::F64(a), D::F64(b)) => D::F64(index.contract(a, b, zero, fma)?),
        (D::I32(a), D::I32(b)) => D::I32(
            index
                .contract(a, b, 0i64, |acc, p, q| ima(acc, p as i64, q as i64))?
                .into_iter()
                .map(|v| v as i32)
                .collect(),
        ),
        (D::I64(a), D::I64(b)) => D::I64(index.contract(a, b, 0i64, ima)?),
        _ => return Err(format!("dot on {} and {}", x.dtype(), y.dtype())),
    })
}

/// Per result element, the bound on the error of summing its products in any order in the
/// dot's own precision: `K · u · Σ_j |left·right|` (u = 2⁻²⁴ for f32, 2⁻⁵³ for f64; Higham,
/// *Accuracy and Stability of Numerical Algorithms*, §3.1: `|fl(xᵀy) − xᵀy| ≤ γ_K |x|ᵀ|y|`,
/// `γ_K ≈ K·u`). What a GEMM accumulating f32 in f32 may differ by (docs/numerics.md); `None`
/// for integers.
pub(crate) fn error_bounds(
    x: &ArrayData,
    y: &ArrayData,
    index: &DotIndex,
) -> Result<Option<Vec<f64>>, String> {
    use ArrayData as D;
    let k = index.left_offsets.len() as f64;
    let abs = |acc: f64, a: f64, b: f64| acc + (a * b).abs();
    let sums = match (x, y) {
        (D::F32(a), D::F32(b)) => (
            index.contract(a, b, 0.0f64, |acc, p, q| abs(acc, p as f64, q as f64))?,
            f64::from(f32::EPSILON) / 2.0,
        ),
        (D::F64(a), D::F64(b)) => (index.contract(a, b, 0.0f64, abs)?, f64::EPSILON / 2.0),
        _ => return Ok(None),
    };
    let (sums, u) = sums;
    Ok(Some(sums.into_iter().map(|s| k * u * s).collect()))
}

/// [`error_bounds`] for a sum of products written as `sum(multiply(a, b), K)` and read as a
/// contraction (`Graph::sum_of_products`): `K · u · Σ |product|` over each result element's
/// group of `product`'s elements (the rounded `|a·b|`), so the oracle allows such a sum the
/// same accumulation error as a dot on the GEMM path. `None` for integers.
pub(crate) fn sum_error_bounds(
    product: &ArrayData,
    groups: &super::reduce::Groups,
) -> Option<Vec<f64>> {
    let u = match product {
        ArrayData::F32(_) => f64::from(f32::EPSILON) / 2.0,
        ArrayData::F64(_) => f64::EPSILON / 2.0,
        _ => return None,
    };
    let value = |i: usize| match product {
        ArrayData::F32(v) => v.get(i).map_or(0.0, |x| f64::from(*x)),
        ArrayData::F64(v) => v.get(i).copied().unwrap_or(0.0),
        _ => 0.0,
    };
    let k = groups.offsets.len() as f64;
    Some(
        groups
            .bases
            .iter()
            .map(|b| {
                k * u
                    * groups
                        .offsets
                        .iter()
                        .map(|o| value(b + o).abs())
                        .sum::<f64>()
            })
            .collect(),
    )
}

/// `data` (a float dot's or sum of products' result) with each finite element moved by a random part in [½, 1] of
/// its bound, up (`Some(true)`), down, or each by a random sign (`None`) — how a perturbed run
/// shows the oracle where a backend summing a dot in its own precision may differ
/// (crate::interp, "Perturbed runs"). A moved value that would not be finite is kept.
pub(crate) fn nudge(data: ArrayData, bounds: &[f64], seed: u64, up: Option<bool>) -> ArrayData {
    let mut r = weft_ir::perturb::SplitMix(seed);
    weft_ir::perturb::map_finite(&data, |i, x| {
        let e = bounds.get(i).copied().unwrap_or(0.0);
        let size = e * (0.75 + r.unit() / 8.0);
        let up = up.unwrap_or_else(|| r.chance(50));
        if up {
            x + size
        } else {
            x - size
        }
    })
}
