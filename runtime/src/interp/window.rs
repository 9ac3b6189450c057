//! Convolution and pooling written plainly: for every output element, a loop over every tap.
//! This is the oracle the compiler's expansion into pads, slices and dots is tested against,
//! so it shares nothing with that expansion but the pairing of axes by role
//! (`weft_ir::graph::convolution`) and the scalar rules of `maximum`, `add` and `divide`.
//!
//! Assumes: a node the builders made (operands' axes paired, lengths bound and checked), the
//! output's axes position by position the input's (window axes where the input's spatial or
//! pooled axes stand, the features axis where its Channel axis stands).
//! Guarantees: a convolution is, per filter tap, a dot over the group's channels (each product
//! and the sum in f64 from −0, rounded to the dtype), the taps then added in the dtype in
//! row-major order of the spatial axes (the input's order) — the association the compiler's
//! expansions compute, so an f32 sum that overflows does so in both; padding is a zero that
//! multiplies like any element (so `0·inf` is NaN there too). A pool folds
//! its taps with the dtype's own `maximum` or `add` in the association
//! `weft_ir::graph::window_fold` defines (the expansion's: row-major for small windows,
//! separable pairwise trees for large ones) — padding is `−inf` for `max_pool` and a zero for
//! `avg_pool` — and an average divides by the count of taps inside the input (exact, then
//! rounded to the dtype once).

use super::index::strides;
use weft_ir::graph::convolution::row_major;
use weft_ir::graph::window_fold::{doubling_chunks, PoolFold};
use weft_ir::graph::{ConvPairing, PooledAxis};
use weft_ir::scalar::Arith;
use weft_ir::{ArrayData, Axes, BinaryOp, HostArray, PoolKind};

/// The source index along a windowed axis of length `len` for window position `o` and tap `t`,
/// or `None` in the padding.
fn source(o: usize, t: usize, step: &weft_ir::WindowStep, len: usize) -> Option<usize> {
    let at = o * step.stride + t * step.dilation;
    at.checked_sub(step.before).filter(|i| *i < len)
}

fn floats(a: &ArrayData) -> Result<Vec<f64>, String> {
    match a {
        ArrayData::F32(v) => Ok(v.iter().map(|x| f64::from(*x)).collect()),
        ArrayData::F64(v) => Ok(v.clone()),
        _ => Err("convolution and pooling take f32 or f64".into()),
    }
}

/// The convolution of `x` with `f` paired as `p`, over `out_shape` (the input's axis positions),
/// and each element's error bound for a backend summing in another order and precision:
/// `n · u · Σ |x·w|` over its `n` terms (as a dot's, `dot::error_bounds`).
pub(crate) fn convolution(
    p: &ConvPairing,
    x: &HostArray,
    f: &HostArray,
    out_shape: &[usize],
) -> Result<(ArrayData, Vec<f64>), String> {
    let (xv, fv) = (floats(x.data())?, floats(f.data())?);
    let pos = |axes: &Axes, a| axes.position(a).ok_or("an axis of the pairing is missing");
    let (xs, fs) = (strides(x.shape())?, strides(f.shape())?);
    let x_channel = pos(x.axes(), p.channel)?;
    let f_channel = pos(f.axes(), p.filter_channel)?;
    let f_out = pos(f.axes(), p.filter_out)?;
    let spatial: Vec<(usize, usize)> = p
        .spatial
        .iter()
        .map(|s| Ok((pos(x.axes(), s.input)?, pos(f.axes(), s.filter)?)))
        .collect::<Result<_, &str>>()?;
    let j_len = f.shape()[f_channel];
    let k_per_group = f.shape()[f_out] / p.groups.max(1);
    let taps: Vec<usize> = spatial.iter().map(|(_, fi)| f.shape()[*fi]).collect();
    let tap_list: Vec<Vec<usize>> = row_major(&taps).collect();
    let mut out = Vec::with_capacity(weft_ir::size::element_count(out_shape).unwrap_or(0));
    let mut bounds = Vec::with_capacity(weft_ir::size::element_count(out_shape).unwrap_or(0));
    let u = match x.data() {
        ArrayData::F32(_) => f64::from(f32::EPSILON) / 2.0,
        _ => f64::EPSILON / 2.0,
    };
    let terms = (j_len * tap_list.len()) as f64;
    // To the dtype: f32 values round (an f32 add of two f32 values, computed in f64 and
    // rounded once, is the correctly rounded f32 sum).
    let f32_data = matches!(x.data(), ArrayData::F32(_));
    let round = |v: f64| if f32_data { f64::from(v as f32) } else { v };
    for o in row_major(out_shape) {
        let k = o[x_channel];
        let group = k / k_per_group.max(1);
        // The input offset of the batch axes, and the filter offset of this output channel.
        let mut x_base = 0;
        for (i, c) in o.iter().enumerate() {
            if i != x_channel && !spatial.iter().any(|(xi, _)| *xi == i) {
                x_base += c * xs[i];
            }
        }
        let f_base = k * fs[f_out];
        // Per tap, a dot over the group's channels (each product rounded to the dtype, summed
        // in f64 from −0, as a dot sums: −0 exactly when every product is), rounded to the
        // dtype; the taps added in the dtype.
        let (mut total, mut magnitude) = (None::<f64>, 0.0f64);
        for tap in &tap_list {
            let mut acc = -0.0f64;
            for j in 0..j_len {
                let mut xi = Some(x_base + (group * j_len + j) * xs[x_channel]);
                let mut fi = f_base + j * fs[f_channel];
                for (((xa, fa), t), s) in spatial.iter().zip(tap).zip(&p.spatial) {
                    xi = xi.and_then(|xi| {
                        source(o[*xa], *t, &s.step, x.shape()[*xa]).map(|at| xi + at * xs[*xa])
                    });
                    fi += t * fs[*fa];
                }
                let v = xi.map_or(0.0, |i| xv[i]);
                // The product in the dtype, summed in f64: a dot's policy (docs/numerics.md).
                acc += round(v * fv[fi]);
                magnitude += (v * fv[fi]).abs();
            }
            let acc = round(acc);
            total = Some(total.map_or(acc, |t| round(t + acc)));
        }
        out.push(total.unwrap_or(-0.0));
        bounds.push(terms * u * magnitude);
    }
    let data = match x.data() {
        ArrayData::F32(_) => ArrayData::F32(out.iter().map(|v| *v as f32).collect()),
        _ => ArrayData::F64(out),
    };
    Ok((data, bounds))
}

/// The pool of `x` over `pooled` (in the spec's role order), over `out_shape`.
pub(crate) fn pool(
    kind: PoolKind,
    pooled: &[PooledAxis],
    x: &HostArray,
    out_shape: &[usize],
) -> Result<ArrayData, String> {
    match x.data() {
        ArrayData::F32(v) => {
            pool_typed(kind, pooled, x, v, out_shape, |c| c as f32).map(ArrayData::F32)
        }
        ArrayData::F64(v) => pool_typed(kind, pooled, x, v, out_shape, |c| c).map(ArrayData::F64),
        _ => Err("pooling takes f32 or f64".into()),
    }
}

/// A pool's input values and how they are indexed: what folding one window needs.
struct PoolInput<'a, T> {
    pooled: &'a [PooledAxis],
    /// The input position of each pooled axis.
    at: Vec<usize>,
    shape: &'a [usize],
    strides: Vec<usize>,
    values: &'a [T],
    padding: T,
}

impl<T: Copy> PoolInput<'_, T> {
    /// The value of tap `tap` (one index per pooled axis) of the window at output `o` from
    /// `base` (the offset of the other axes), the padding outside the input.
    fn tap(&self, base: usize, o: &[usize], tap: &[usize]) -> T {
        let mut xi = Some(base);
        for ((p, a), t) in self.pooled.iter().zip(&self.at).zip(tap) {
            xi = xi.and_then(|xi| {
                source(o[*a], *t, &p.step, self.shape[*a]).map(|s| xi + s * self.strides[*a])
            });
        }
        xi.map_or(self.padding, |i| self.values[i])
    }

    /// The taps of the window at `o` inside the input, per pooled axis.
    fn inside(&self, o: &[usize]) -> Vec<usize> {
        (0..self.pooled.len())
            .map(|k| {
                let (lo, hi) = self.inside_taps(o, k);
                hi - lo
            })
            .collect()
    }

    /// The taps `[lo, hi)` of the window at `o` along pooled axis `k` inside the input, in
    /// closed form: a tap's position `o·stride + t·dilation` grows with `t`, and the input is
    /// one interval of the padded axis (so a window of 2³² taps costs what its inside does).
    fn inside_taps(&self, o: &[usize], k: usize) -> (usize, usize) {
        let (p, a) = (&self.pooled[k], self.at[k]);
        let start = o[a] as u128 * p.step.stride as u128;
        let (b, e) = (
            p.step.before as u128,
            p.step.before as u128 + self.shape[a] as u128,
        );
        let d = p.step.dilation as u128;
        let first_at = |bound: u128| {
            if start >= bound {
                0
            } else {
                (bound - start).div_ceil(d)
            }
        };
        let taps = p.taps as u128;
        let lo = first_at(b).min(taps);
        let hi = first_at(e).min(taps).max(lo);
        (lo as usize, hi as usize)
    }
}

fn pool_typed<T: Arith + Copy + From<f32>>(
    kind: PoolKind,
    pooled: &[PooledAxis],
    x: &HostArray,
    values: &[T],
    out_shape: &[usize],
    from_f64: fn(f64) -> T,
) -> Result<Vec<T>, String> {
    let input = PoolInput {
        pooled,
        at: pooled
            .iter()
            .map(|p| x.axes().position(p.input).ok_or("a pooled axis is missing"))
            .collect::<Result<_, _>>()?,
        shape: x.shape(),
        strides: strides(x.shape())?,
        values,
        padding: match kind {
            PoolKind::Max => T::from(f32::NEG_INFINITY),
            PoolKind::Avg => T::from(0.0),
        },
    };
    let op = match kind {
        PoolKind::Max => BinaryOp::Maximum,
        PoolKind::Avg => BinaryOp::Add,
    };
    let binary = |a, b| T::binary(op, a, b).ok_or("no such arithmetic on the dtype");
    let taps: Vec<usize> = pooled.iter().map(|p| p.taps).collect();
    let fold = PoolFold::of(pooled);
    let tap_list: Vec<Vec<usize>> = match fold {
        PoolFold::Direct => row_major(&taps).collect(),
        PoolFold::Separable => Vec::new(),
    };
    let mut out = Vec::with_capacity(weft_ir::size::element_count(out_shape).unwrap_or(0));
    for o in row_major(out_shape) {
        let base: usize = o
            .iter()
            .enumerate()
            .filter(|(i, _)| !input.at.contains(i))
            .map(|(i, c)| c * input.strides[i])
            .sum();
        let acc = match fold {
            PoolFold::Direct => {
                let mut acc: Option<T> = None;
                for tap in &tap_list {
                    let v = input.tap(base, &o, tap);
                    acc = Some(match acc {
                        None => v,
                        Some(a) => binary(a, v)?,
                    });
                }
                acc.ok_or("a window without taps")?
            }
            PoolFold::Separable => {
                let mut tap = vec![0; pooled.len()];
                fold_separably(&input, base, &o, 0, &mut tap, &binary)?
            }
        };
        out.push(match kind {
            PoolKind::Max => acc,
            PoolKind::Avg => {
                // The count as the expansion computes it: exact in f64, rounded once.
                let count: f64 = input.inside(&o).iter().map(|c| *c as f64).product();
                T::binary(BinaryOp::Divide, acc, from_f64(count))
                    .ok_or("no such arithmetic on the dtype")?
            }
        });
    }
    Ok(out)
}

/// `window_fold::pairwise` over taps `first..first + len`, a subtree whose taps all lie outside `inside`
/// (in the padding) taken as the padding itself — what folding padding with `maximum` (−∞) or
/// `add` (+0) gives, bit for bit — so only the subtrees that meet the input are visited.
fn pairwise_inside<T: Copy>(
    first: usize,
    len: usize,
    inside: (usize, usize),
    padding: T,
    leaf: &mut impl FnMut(usize) -> Result<T, &'static str>,
    op: &impl Fn(T, T) -> Result<T, &'static str>,
) -> Result<T, &'static str> {
    if first + len <= inside.0 || first >= inside.1 {
        return Ok(padding);
    }
    if len <= 1 {
        return leaf(first);
    }
    let half = len / 2;
    let left = pairwise_inside(first, half, inside, padding, leaf, op)?;
    let right = pairwise_inside(first + half, half, inside, padding, leaf, op)?;
    op(left, right)
}

/// The fold of the window at `o` over pooled axes `axis..` with the taps of the axes before
/// it fixed in `tap`: along `axis`, [`doubling_chunks`] of `window_fold::pairwise` trees, each tap the
/// fold over the axes after it ([`PoolFold::Separable`]: the last axis is folded first).
fn fold_separably<T: Copy>(
    input: &PoolInput<'_, T>,
    base: usize,
    o: &[usize],
    axis: usize,
    tap: &mut Vec<usize>,
    binary: &impl Fn(T, T) -> Result<T, &'static str>,
) -> Result<T, &'static str> {
    if axis == input.pooled.len() {
        return Ok(input.tap(base, o, tap));
    }
    let inside = input.inside_taps(o, axis);
    let mut acc: Option<T> = None;
    for (first, len) in doubling_chunks(input.pooled[axis].taps) {
        let mut leaf = |t: usize| {
            tap[axis] = t;
            fold_separably(input, base, o, axis + 1, tap, binary)
        };
        let chunk = pairwise_inside(first, len, inside, input.padding, &mut leaf, binary)?;
        acc = Some(match acc {
            None => chunk,
            Some(a) => binary(a, chunk)?,
        });
    }
    acc.ok_or("a window without taps")
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::graph::window_fold::pairwise;

    /// Skipping the subtrees that lie in the padding gives the full tree's bits: sums of +0
    /// and −0 inside (the sign of a zero sum is where a careless shortcut shows), maxima of
    /// −∞ and NaN, every inside range of a 16-tap chunk.
    #[test]
    fn skipping_padding_subtrees_is_exact() {
        let values = [-0.0f64, 0.0, -0.0, 1.5, f64::NAN, -2.0, -0.0, 3.0];
        for (op, padding) in [(BinaryOp::Add, 0.0), (BinaryOp::Maximum, f64::NEG_INFINITY)] {
            let binary = |a: f64, b: f64| f64::binary(op, a, b).ok_or("no op");
            for lo in 0..=16 {
                for hi in lo..=16 {
                    for shift in 0..values.len() {
                        let value = |t: usize| {
                            if (lo..hi).contains(&t) {
                                values[(t + shift) % values.len()]
                            } else {
                                padding
                            }
                        };
                        let full = pairwise(0, 16, &mut |t| Ok(value(t)), &binary).unwrap();
                        let fast = pairwise_inside(
                            0,
                            16,
                            (lo, hi),
                            padding,
                            &mut |t| Ok(value(t)),
                            &binary,
                        )
                        .unwrap();
                        assert_eq!(
                            full.to_bits(),
                            fast.to_bits(),
                            "{op:?} [{lo}, {hi}) {shift}"
                        );
                    }
                }
            }
        }
    }
}
