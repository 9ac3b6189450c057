//! Multi-indices and index maps: the machinery every view and elementwise op of the
//! interpreter uses to find, for one element of its result, the element of an operand it reads.
//!
//! An [`IndexMap`] says, for each axis of an operand, where that axis's index comes from given
//! a multi-index of the result ([`Source`]). Evaluating it element by element gives the
//! operand's row-major flat index, or `None` for a position the operand does not cover (a pad
//! zero). Computed indices are checked against the operand's lengths: a wrong map is an error,
//! never an out-of-bounds read.

use weft_ir::ArrayData;

/// Row-major strides, in elements, of `shape` (`weft_ir::size::row_major_strides`: checked,
/// and all 0 for an empty tensor, whose other axes may multiply past `usize`).
pub(crate) fn strides(shape: &[usize]) -> Result<Vec<usize>, String> {
    weft_ir::size::row_major_strides(shape)
        .ok_or_else(|| format!("the strides of a tensor of shape {shape:?} overflow"))
}

/// Calls `f` with every multi-index of `shape`, in row-major order (once, with `[]`, for a
/// scalar).
pub(crate) fn for_each_index<E>(
    shape: &[usize],
    mut f: impl FnMut(&[usize]) -> Result<(), E>,
) -> Result<(), E> {
    if shape.contains(&0) {
        return Ok(());
    }
    let mut idx = vec![0usize; shape.len()];
    loop {
        f(&idx)?;
        let mut d = shape.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Where the index along one operand axis comes from, given a result multi-index `out`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Source {
    /// `out[pos]`: the same axis (or a relabelled one) at result position `pos`.
    Same(usize),
    /// `first + step·out[pos]`: a slice range.
    Strided {
        /// Result position of the sliced axis.
        pos: usize,
        /// Operand index of slice index 0.
        first: usize,
        /// Operand distance between slice indices.
        step: i64,
    },
    /// A pinned index (the axis is dropped from the result).
    Fixed(usize),
    /// `out[pos] − before` when that lies in `0..len`; otherwise the operand does not cover
    /// this result element (padding, or another part of a concatenation).
    Shifted {
        /// Result position of the shifted axis.
        pos: usize,
        /// Result indices before the operand starts.
        before: usize,
        /// The operand's length along the axis.
        len: usize,
    },
    /// One part of a flattened result axis: `(out[pos] / inner) mod len`.
    FlatPart {
        /// Result position of the flattened axis.
        pos: usize,
        /// Product of the lengths of the parts after this one.
        inner: usize,
        /// This part's length.
        len: usize,
    },
    /// A flattened operand axis rebuilt from several result axes, the first major:
    /// row-major over `(position, length)` pairs.
    Merged(Vec<(usize, usize)>),
}

/// For each axis of an operand, where its index comes from.
#[derive(Clone, Debug)]
pub(crate) struct IndexMap {
    shape: Vec<usize>,
    strides: Vec<usize>,
    sources: Vec<Source>,
}

impl IndexMap {
    /// A map into an operand of `shape` (row-major), one source per operand axis.
    pub(crate) fn new(shape: &[usize], sources: Vec<Source>) -> Result<IndexMap, String> {
        if shape.len() != sources.len() {
            return Err(format!(
                "an index map for rank {} has {} sources",
                shape.len(),
                sources.len()
            ));
        }
        Ok(IndexMap {
            shape: shape.to_vec(),
            strides: strides(shape)?,
            sources,
        })
    }

    /// The operand's flat index read for result multi-index `out`, or `None` if the operand does
    /// not cover it.
    pub(crate) fn flat(&self, out: &[usize]) -> Result<Option<usize>, String> {
        let at = |pos: usize| {
            out.get(pos)
                .copied()
                .ok_or_else(|| format!("result position {pos} is past rank {}", out.len()))
        };
        let mut flat = 0usize;
        for ((source, &len), &stride) in self.sources.iter().zip(&self.shape).zip(&self.strides) {
            let i: i64 = match source {
                Source::Same(pos) => at(*pos)? as i64,
                Source::Strided { pos, first, step } => step
                    .checked_mul(at(*pos)? as i64)
                    .and_then(|d| d.checked_add(*first as i64))
                    .ok_or_else(|| format!("slice step {step} overflows"))?,
                Source::Fixed(i) => *i as i64,
                Source::Shifted { pos, before, len } => {
                    let i = at(*pos)? as i64 - *before as i64;
                    if i < 0 || i >= *len as i64 {
                        return Ok(None);
                    }
                    i
                }
                Source::FlatPart { pos, inner, len } => {
                    ((at(*pos)? / (*inner).max(1)) % (*len).max(1)) as i64
                }
                Source::Merged(parts) => {
                    let mut m = 0usize;
                    for (pos, l) in parts {
                        m = m * l + at(*pos)?;
                    }
                    m as i64
                }
            };
            if i < 0 || i >= len as i64 {
                return Err(format!(
                    "index {i} is out of range for an operand axis of length {len}"
                ));
            }
            flat += i as usize * stride;
        }
        Ok(Some(flat))
    }

    /// The flat index read for every element of a result of `out_shape`, in row-major order.
    /// Fails (rather than aborting) when the map cannot be allocated.
    pub(crate) fn flat_all(&self, out_shape: &[usize]) -> Result<Vec<Option<usize>>, String> {
        let n = weft_ir::size::element_count(out_shape)
            .ok_or_else(|| format!("a result of shape {out_shape:?} has no element count"))?;
        let mut v = Vec::new();
        v.try_reserve_exact(n)
            .map_err(|_| format!("cannot allocate the index map of {n} elements"))?;
        for_each_index(out_shape, |idx| {
            v.push(self.flat(idx)?);
            Ok::<(), String>(())
        })?;
        Ok(v)
    }

    /// Like [`IndexMap::flat_all`] for a map that covers every result element.
    pub(crate) fn covering_all(&self, out_shape: &[usize]) -> Result<Vec<usize>, String> {
        self.flat_all(out_shape)?
            .into_iter()
            .map(|i| i.ok_or_else(|| "an operand does not cover its result".to_string()))
            .collect()
    }
}

/// The element of `v` at `i`, or an error naming the bad index.
pub(crate) fn at<T: Copy>(v: &[T], i: usize) -> Result<T, String> {
    v.get(i)
        .copied()
        .ok_or_else(|| format!("index {i} is out of range for {} elements", v.len()))
}

/// The elements of `data` at `index` (zero where `None`), as a new array of the same dtype.
pub(crate) fn gather(data: &ArrayData, index: &[Option<usize>]) -> Result<ArrayData, String> {
    fn g<T: Copy>(v: &[T], index: &[Option<usize>], zero: T) -> Result<Vec<T>, String> {
        index
            .iter()
            .map(|i| match i {
                Some(i) => at(v, *i),
                None => Ok(zero),
            })
            .collect()
    }
    Ok(match data {
        ArrayData::F32(v) => ArrayData::F32(g(v, index, 0.0)?),
        ArrayData::F64(v) => ArrayData::F64(g(v, index, 0.0)?),
        ArrayData::I32(v) => ArrayData::I32(g(v, index, 0)?),
        ArrayData::I64(v) => ArrayData::I64(g(v, index, 0)?),
        ArrayData::Bool(v) => ArrayData::Bool(g(v, index, false)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_major_order_and_strides() {
        assert_eq!(strides(&[2, 3, 4]), Ok(vec![12, 4, 1]));
        let mut seen = Vec::new();
        for_each_index(&[2, 2], |i| {
            seen.push(i.to_vec());
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(seen, vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]);
        let mut scalar = 0;
        for_each_index(&[], |i| {
            assert!(i.is_empty());
            scalar += 1;
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(scalar, 1);
    }

    #[test]
    fn sources_map_result_indices() {
        // Operand (A=3, B=2) read by a result (B, A): a transpose.
        let m = IndexMap::new(&[3, 2], vec![Source::Same(1), Source::Same(0)]).unwrap();
        assert_eq!(m.covering_all(&[2, 3]).unwrap(), vec![0, 2, 4, 1, 3, 5]);
        // Reversed slice of a length-4 axis.
        let m = IndexMap::new(
            &[4],
            vec![Source::Strided {
                pos: 0,
                first: 3,
                step: -1,
            }],
        )
        .unwrap();
        assert_eq!(m.covering_all(&[4]).unwrap(), vec![3, 2, 1, 0]);
        // Pad one before, one after.
        let m = IndexMap::new(
            &[2],
            vec![Source::Shifted {
                pos: 0,
                before: 1,
                len: 2,
            }],
        )
        .unwrap();
        assert_eq!(
            m.flat_all(&[4]).unwrap(),
            vec![None, Some(0), Some(1), None]
        );
        // A map that would read out of bounds is an error.
        let m = IndexMap::new(&[2], vec![Source::Same(0)]).unwrap();
        assert!(m.flat_all(&[3]).is_err());
    }
}
