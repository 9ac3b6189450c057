//! Sizes: element counts, byte sizes and index conversions, with checked arithmetic in one
//! place. Every other crate computes a tensor's size through here instead of raw `*` and `as`.
//!
//! Assumes nothing about its inputs: lengths may be absurd (a fuzzer's `2^64 - 1`).
//! Guarantees: a size that is returned is exact and at most [`MAX_TENSOR_BYTES`] bytes, so any
//! element count, byte size, stride or offset inside one tensor fits `usize`, `isize` and
//! `i64`; anything larger is `None` here and a [`GraphError::TooLarge`] naming the tensor and
//! its axes once it reaches a graph ([`Graph::tensor_size`], in `graph/tensor_size.rs`).
//! [`Graph::verify`] checks every node this way, so passes, lowering and backends working on a
//! verified graph may rely on it.
//!
//! [`GraphError::TooLarge`]: crate::graph::GraphError::TooLarge
//! [`Graph::tensor_size`]: crate::graph::Graph::tensor_size
//! [`Graph::verify`]: crate::graph::Graph::verify

use crate::dtype::DType;

/// The largest tensor weft addresses, in bytes: `isize::MAX`, the most Rust can allocate or
/// offset a pointer by.
pub const MAX_TENSOR_BYTES: usize = isize::MAX as usize;

/// The most axes one tensor may have (NumPy's limit since 2.0). Loop nests, index maps and
/// kernels grow with a tensor's rank, so an unbounded rank is a deep recursion or an outsized
/// compile somewhere downstream;
/// [`Graph::tensor_size`](crate::graph::Graph::tensor_size) refuses more, on every backend alike.
pub const MAX_RANK: usize = 64;

/// The element count and byte size of one tensor, both at most [`MAX_TENSOR_BYTES`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct TensorSize {
    /// Elements (the product of the axis lengths; 1 for a scalar).
    pub elements: usize,
    /// Bytes at the dtype's host size.
    pub bytes: usize,
}

/// The product of `lengths`, if it does not overflow `usize`: 0 whenever a length is 0, in
/// whichever place (an empty axis after two that multiply past `usize` still empties the
/// tensor; the order of the axes never decides whether a size exists).
pub fn element_count(lengths: &[usize]) -> Option<usize> {
    if lengths.contains(&0) {
        return Some(0);
    }
    lengths.iter().try_fold(1usize, |n, &l| n.checked_mul(l))
}

/// The bytes of `elements` values of `dtype`, if at most [`MAX_TENSOR_BYTES`].
pub fn byte_size(dtype: DType, elements: usize) -> Option<usize> {
    elements
        .checked_mul(dtype.size_bytes())
        .filter(|&b| b <= MAX_TENSOR_BYTES)
}

/// The size of a tensor of `dtype` over axes of `lengths`, if addressable.
///
/// Every length must itself be at most [`MAX_TENSOR_BYTES`], even when another axis is empty
/// and the tensor holds nothing: loops and indices run over each axis in `i64`.
pub fn tensor_size(dtype: DType, lengths: &[usize]) -> Option<TensorSize> {
    if lengths.iter().any(|&l| l > MAX_TENSOR_BYTES) {
        return None;
    }
    let elements = element_count(lengths)?;
    let bytes = byte_size(dtype, elements)?;
    Some(TensorSize { elements, bytes })
}

/// Row-major strides, in elements, of a tensor of `shape`; `None` when one overflows `usize`.
///
/// A tensor with an empty axis holds nothing, so none of its elements is ever addressed: its
/// strides are all 0, decided before any product is taken (its other axes may multiply past
/// `usize`, which [`tensor_size`] allows for an empty tensor). The layout pass gives an empty
/// tensor the same zero strides, so the two agree on what row-major means for it.
pub fn row_major_strides(shape: &[usize]) -> Option<Vec<usize>> {
    let mut strides = vec![0usize; shape.len()];
    if shape.contains(&0) {
        return Some(strides);
    }
    let mut s = 1usize;
    for (stride, &len) in strides.iter_mut().zip(shape).rev() {
        *stride = s;
        s = s.checked_mul(len)?;
    }
    Some(strides)
}

/// `n` as an `i64` (an index, stride or offset), if it fits.
pub fn to_i64(n: usize) -> Option<i64> {
    i64::try_from(n).ok()
}

/// `n` as a `usize` (a length or element count), if it is non-negative and fits.
pub fn to_usize(n: i64) -> Option<usize> {
    usize::try_from(n).ok()
}

/// `n` followed by the singular or plural noun, as messages say it: "1 axis", "2 axes".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_bytes_are_exact_or_none() {
        assert_eq!(element_count(&[]), Some(1));
        assert_eq!(element_count(&[3, 4]), Some(12));
        assert_eq!(element_count(&[1 << 32, 1 << 32]), None);
        assert_eq!(element_count(&[1 << 40, 1 << 40, 0]), Some(0));
        assert_eq!(byte_size(DType::F64, 3), Some(24));
        assert_eq!(
            byte_size(DType::Bool, MAX_TENSOR_BYTES),
            Some(MAX_TENSOR_BYTES)
        );
        assert_eq!(byte_size(DType::Bool, MAX_TENSOR_BYTES + 1), None);
        assert_eq!(byte_size(DType::F32, 1 << 62), None);
        assert_eq!(
            tensor_size(DType::I32, &[2, 5]),
            Some(TensorSize {
                elements: 10,
                bytes: 40
            })
        );
    }

    #[test]
    fn strides_are_checked_and_zero_for_empty_tensors() {
        assert_eq!(row_major_strides(&[2, 3, 4]), Some(vec![12, 4, 1]));
        assert_eq!(row_major_strides(&[]), Some(vec![]));
        let past_u64 = [0, usize::MAX / 2, 6];
        assert_eq!(row_major_strides(&past_u64), Some(vec![0, 0, 0]));
        assert_eq!(row_major_strides(&[3, 1 << 40, 1 << 40]), None);
    }

    #[test]
    fn conversions_refuse_what_does_not_fit() {
        assert_eq!(to_i64(usize::MAX), None);
        assert_eq!(to_i64(7), Some(7));
        assert_eq!(to_usize(-1), None);
    }
}
