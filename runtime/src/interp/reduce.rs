//! Reductions. For each result element the interpreter visits the reduced elements in
//! row-major order over the reduction axes *as listed in the op* — the order that defines
//! argmax/argmin's flat index — and folds them:
//!
//! - floats accumulate in f64 (sum, prod; mean = f64 sum / count) and round once at the end;
//!   max/min propagate NaN and order −0 < +0 (`weft_ir::scalar::reduce_max`, order-free);
//!   argmax/argmin return the first NaN if there is one, else the first extreme;
//! - integers accumulate in i64 with wrapping (then wrap to i32 for i32);
//! - bools: max is "any", min is "all", argmax/argmin the first true/false (0 if none).
//!
//! An empty reduction axis gives an empty fold: sum 0, prod 1, mean 0/0 = NaN (max, min and the
//! arg-reductions of nothing are refused when the graph is built or verified); no reduction axes means
//! each result element is its one input element (argmax/argmin 0).

use super::index::{at, for_each_index, strides};
use weft_ir::scalar::{arg_replaces, reduce_max, reduce_min};
use weft_ir::{ArrayData, ReduceOp};

/// Where the reduced elements of each result element are: `bases[k] + offsets[j]`.
pub(crate) struct Groups {
    /// For each result element (row-major in the result's axes), its first input index.
    pub bases: Vec<usize>,
    /// For each reduced element, in fold order, its offset from the base.
    pub offsets: Vec<usize>,
}

impl Groups {
    /// Groups for an input of `in_shape` whose axis `out_pos[j]` is result axis `j` and whose
    /// axis `red_pos[r]` is the `r`-th reduction axis.
    pub(crate) fn new(
        in_shape: &[usize],
        out_pos: &[usize],
        red_pos: &[usize],
    ) -> Result<Groups, String> {
        let st = strides(in_shape)?;
        let pick = |pos: &[usize]| -> Result<(Vec<usize>, Vec<usize>), String> {
            let shape = pos
                .iter()
                .map(|&p| at(in_shape, p))
                .collect::<Result<_, _>>()?;
            let stride = pos.iter().map(|&p| at(&st, p)).collect::<Result<_, _>>()?;
            Ok((shape, stride))
        };
        let (out_shape, out_strides) = pick(out_pos)?;
        let (red_shape, red_strides) = pick(red_pos)?;
        let linear = |shape: &[usize], stride: &[usize]| {
            let mut v = Vec::new();
            for_each_index(shape, |idx| {
                v.push(idx.iter().zip(stride).map(|(i, s)| i * s).sum());
                Ok::<(), String>(())
            })?;
            Ok::<Vec<usize>, String>(v)
        };
        Ok(Groups {
            bases: linear(&out_shape, &out_strides)?,
            offsets: linear(&red_shape, &red_strides)?,
        })
    }

    /// Folds each group of `v` with `f`, which sees the group's elements in order.
    fn fold<T: Copy, R>(
        &self,
        v: &[T],
        f: impl Fn(&mut dyn Iterator<Item = T>) -> R,
    ) -> Result<Vec<R>, String> {
        let mut out = Vec::with_capacity(self.bases.len());
        for &b in &self.bases {
            let group: Vec<T> = self
                .offsets
                .iter()
                .map(|&o| at(v, b + o))
                .collect::<Result<_, _>>()?;
            out.push(f(&mut group.into_iter()));
        }
        Ok(out)
    }
}

/// A float reduction in f64; `None` for argmax/argmin (see [`arg_float`]).
fn reduce_float(op: ReduceOp, xs: &mut dyn Iterator<Item = f64>) -> Option<f64> {
    Some(match op {
        // Sums start from −0, the additive identity (`weft_ir::scalar::reduce_identity`), so a
        // sum (or mean) of −0s is −0.
        ReduceOp::Sum => xs.fold(-0.0, |sum, x| sum + x),
        ReduceOp::Prod => xs.product(),
        ReduceOp::Max => xs.reduce(reduce_max)?,
        ReduceOp::Min => xs.reduce(reduce_min)?,
        ReduceOp::Mean => {
            let (mut sum, mut n) = (-0.0, 0usize);
            for x in xs {
                sum += x;
                n += 1;
            }
            sum / n as f64
        }
        ReduceOp::ArgMax | ReduceOp::ArgMin => return None,
    })
}

/// argmax (`max`) or argmin: the index of the first NaN, else of the first extreme
/// (`weft_ir::scalar::arg_replaces`).
fn arg_float(max: bool, xs: &mut dyn Iterator<Item = f64>) -> i64 {
    let mut best: Option<(usize, f64)> = None;
    for (i, x) in xs.enumerate() {
        match best {
            Some((_, b)) if !arg_replaces(max, b, x) => {}
            _ => best = Some((i, x)),
        }
    }
    best.map(|(i, _)| i as i64).unwrap_or(0)
}

/// argmax (`max`) or argmin over totally ordered values: the index of the first extreme.
fn arg_ord<T: Ord + Copy>(max: bool, xs: &mut dyn Iterator<Item = T>) -> i64 {
    let mut best: Option<(usize, T)> = None;
    for (i, x) in xs.enumerate() {
        match best {
            Some((_, b)) if !(if max { x > b } else { x < b }) => {}
            _ => best = Some((i, x)),
        }
    }
    best.map(|(i, _)| i as i64).unwrap_or(0)
}

/// An integer reduction in i64, wrapping; `None` for mean, which integers do not have, and for
/// argmax/argmin.
fn reduce_int(op: ReduceOp, xs: &mut dyn Iterator<Item = i64>) -> Option<i64> {
    Some(match op {
        ReduceOp::Sum => xs.fold(0i64, i64::wrapping_add),
        ReduceOp::Prod => xs.fold(1i64, i64::wrapping_mul),
        ReduceOp::Max => xs.max()?,
        ReduceOp::Min => xs.min()?,
        ReduceOp::Mean | ReduceOp::ArgMax | ReduceOp::ArgMin => return None,
    })
}

/// A bool reduction: max is "any", min is "all"; `None` for the others.
fn reduce_bool(op: ReduceOp, xs: &mut dyn Iterator<Item = bool>) -> Option<bool> {
    match op {
        ReduceOp::Max => Some(xs.fold(false, |a, x| a | x)),
        ReduceOp::Min => Some(xs.fold(true, |a, x| a & x)),
        _ => None,
    }
}

/// Reduces `x` group by group.
pub(crate) fn reduce(op: ReduceOp, x: &ArrayData, groups: &Groups) -> Result<ArrayData, String> {
    let unsupported = || format!("{} on {}", op.name(), x.dtype());
    let max = op == ReduceOp::ArgMax;
    if matches!(op, ReduceOp::ArgMax | ReduceOp::ArgMin) {
        return Ok(ArrayData::I64(match x {
            ArrayData::F32(v) => groups.fold(v, |xs| arg_float(max, &mut xs.map(|x| x as f64)))?,
            ArrayData::F64(v) => groups.fold(v, |xs| arg_float(max, xs))?,
            ArrayData::I32(v) => groups.fold(v, |xs| arg_ord(max, xs))?,
            ArrayData::I64(v) => groups.fold(v, |xs| arg_ord(max, xs))?,
            ArrayData::Bool(v) => groups.fold(v, |xs| arg_ord(max, xs))?,
        }));
    }
    fn all<T>(r: Vec<Option<T>>, err: impl Fn() -> String) -> Result<Vec<T>, String> {
        r.into_iter().collect::<Option<Vec<T>>>().ok_or_else(err)
    }
    Ok(match x {
        ArrayData::F32(v) => {
            let r = groups.fold(v, |xs| reduce_float(op, &mut xs.map(|x| x as f64)))?;
            ArrayData::F32(all(r, unsupported)?.into_iter().map(|x| x as f32).collect())
        }
        ArrayData::F64(v) => ArrayData::F64(all(
            groups.fold(v, |xs| reduce_float(op, xs))?,
            unsupported,
        )?),
        ArrayData::I32(v) => {
            let r = groups.fold(v, |xs| reduce_int(op, &mut xs.map(|x| x as i64)))?;
            ArrayData::I32(all(r, unsupported)?.into_iter().map(|x| x as i32).collect())
        }
        ArrayData::I64(v) => {
            ArrayData::I64(all(groups.fold(v, |xs| reduce_int(op, xs))?, unsupported)?)
        }
        ArrayData::Bool(v) => {
            ArrayData::Bool(all(groups.fold(v, |xs| reduce_bool(op, xs))?, unsupported)?)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_and_means_of_negative_zeros_stay_negative() {
        let groups = Groups::new(&[3], &[], &[0]).unwrap();
        let x = ArrayData::F32(vec![-0.0; 3]);
        for op in [ReduceOp::Sum, ReduceOp::Mean] {
            let ArrayData::F32(r) = reduce(op, &x, &groups).unwrap() else {
                panic!("{op:?} of f32 is not f32")
            };
            assert!(r[0] == 0.0 && r[0].is_sign_negative(), "{op:?}: {}", r[0]);
        }
        let mixed = ArrayData::F64(vec![-0.0, 0.0, -0.0]);
        let r = reduce(ReduceOp::Max, &mixed, &groups).unwrap();
        assert_eq!(r, ArrayData::F64(vec![0.0]));
        let ArrayData::F64(r) = r else { unreachable!() };
        assert!(r[0].is_sign_positive(), "max orders −0 < +0");
    }
}
