//! `DeviceTensor`: a strided view (dtype, shape, strides, offset — all in elements) over a
//! buffer reference, after docs/design.md, "Device buffers".
//!
//! Guarantees: a constructed view only reaches elements `0..min_len` of its reference (checked
//! in `new`, with negative strides allowed), so host reads and writes through it are in bounds
//! for whatever storage the reference points at.

use std::sync::Arc;

use weft_ir::loop_ir::ScalarType;

use crate::{DeviceBufferReference, Element, RuntimeError};

/// A view of a buffer reference: element `idx` lives at `offset + Σ idx[d] · strides[d]`.
#[derive(Debug, Clone)]
pub struct DeviceTensor {
    reference: Arc<DeviceBufferReference>,
    shape: Vec<u64>,
    strides: Vec<i64>,
    offset: u64,
}

impl DeviceTensor {
    /// A view of `reference`; fails unless `shape` and `strides` have equal rank and every
    /// element of the view lies in `0..reference.min_len()`.
    pub fn new(
        reference: Arc<DeviceBufferReference>,
        shape: Vec<u64>,
        strides: Vec<i64>,
        offset: u64,
    ) -> Result<Self, RuntimeError> {
        let view = format!("{shape:?}/{strides:?}+{offset} of {}", reference.name());
        if shape.len() != strides.len() {
            return Err(RuntimeError::LengthMismatch {
                what: format!("strides of tensor view {view}"),
                expected: shape.len() as u64,
                actual: strides.len() as u64,
            });
        }
        if shape.iter().all(|&n| n > 0) {
            let (mut lo, mut hi) = (i128::from(offset), i128::from(offset));
            for (&n, &s) in shape.iter().zip(&strides) {
                let span = i128::from(s) * (i128::from(n) - 1);
                lo += span.min(0);
                hi += span.max(0);
            }
            let len = reference.min_len();
            if lo < 0 || hi >= i128::from(len) {
                return Err(RuntimeError::ViewOutOfBounds {
                    view,
                    reach: if lo < 0 { lo } else { hi },
                    len,
                });
            }
        }
        Ok(Self {
            reference,
            shape,
            strides,
            offset,
        })
    }

    /// The row-major contiguous view of `shape` at offset 0.
    pub fn contiguous(
        reference: Arc<DeviceBufferReference>,
        shape: Vec<u64>,
    ) -> Result<Self, RuntimeError> {
        let mut strides = vec![0i64; shape.len()];
        let mut step: i64 = 1;
        for d in (0..shape.len()).rev() {
            strides[d] = step;
            step = step.saturating_mul(i64::try_from(shape[d]).unwrap_or(i64::MAX));
        }
        Self::new(reference, shape, strides, 0)
    }

    /// Element type.
    pub fn dtype(&self) -> ScalarType {
        self.reference.dtype()
    }
    /// Extent of each dimension.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }
    /// Stride of each dimension, in elements.
    pub fn strides(&self) -> &[i64] {
        &self.strides
    }
    /// Element offset of index 0.
    pub fn offset(&self) -> u64 {
        self.offset
    }
    /// The reference viewed.
    pub fn reference(&self) -> &Arc<DeviceBufferReference> {
        &self.reference
    }
    /// Number of elements in the view.
    pub fn element_count(&self) -> u64 {
        // 0 whenever an axis is empty, whatever the others multiply to; saturating beyond u64
        // (no such view addresses memory: `DeviceTensor::new` checks its reach).
        if self.shape.contains(&0) {
            return 0;
        }
        self.shape.iter().fold(1u64, |n, &l| n.saturating_mul(l))
    }

    /// Element positions of the view in row-major order of its indices.
    fn positions(&self) -> impl Iterator<Item = usize> + '_ {
        let count = self.element_count();
        let mut index = vec![0u64; self.shape.len()];
        (0..count).map(move |k| {
            if k > 0 {
                for d in (0..index.len()).rev() {
                    index[d] += 1;
                    if index[d] < self.shape[d] {
                        break;
                    }
                    index[d] = 0;
                }
            }
            let mut at = i128::from(self.offset);
            for (&i, &s) in index.iter().zip(&self.strides) {
                at += i128::from(i) * i128::from(s);
            }
            // In range by the check in `new`.
            at as usize
        })
    }

    /// The view's elements in row-major order.
    pub fn read<T: Element + Default>(&self) -> Result<Vec<T>, RuntimeError> {
        let all: Vec<T> = self.reference.storage().to_vec()?;
        Ok(self.positions().map(|p| all[p]).collect())
    }

    /// Overwrites the view's elements (row-major order) with `data`.
    pub fn write<T: Element + Default>(&self, data: &[T]) -> Result<(), RuntimeError> {
        if data.len() as u64 != self.element_count() {
            return Err(RuntimeError::LengthMismatch {
                what: format!("write to tensor view of {}", self.reference.name()),
                expected: self.element_count(),
                actual: data.len() as u64,
            });
        }
        let storage = self.reference.storage();
        let mut all: Vec<T> = storage.to_vec()?;
        for (p, &x) in self.positions().zip(data) {
            all[p] = x;
        }
        storage.copy_from_slice(&all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DeviceBufferStorage;

    #[test]
    fn reversed_and_broadcast_views() {
        let s = DeviceBufferStorage::from_slice(&[0i32, 1, 2, 3, 4, 5]).unwrap();
        let r = Arc::new(DeviceBufferReference::to_storage("x", s));
        let reversed = DeviceTensor::new(Arc::clone(&r), vec![2, 3], vec![3, -1], 2).unwrap();
        assert_eq!(reversed.read::<i32>().unwrap(), vec![2, 1, 0, 5, 4, 3]);
        let broadcast = DeviceTensor::new(Arc::clone(&r), vec![2, 3], vec![0, 1], 3).unwrap();
        assert_eq!(broadcast.read::<i32>().unwrap(), vec![3, 4, 5, 3, 4, 5]);
        assert!(matches!(
            DeviceTensor::new(Arc::clone(&r), vec![2, 3], vec![3, -1], 1),
            Err(RuntimeError::ViewOutOfBounds { reach: -1, .. })
        ));
        let column = DeviceTensor::new(r, vec![2], vec![3], 1).unwrap();
        column.write(&[10i32, 40]).unwrap();
        assert_eq!(reversed.read::<i32>().unwrap(), vec![2, 10, 0, 5, 40, 3]);
    }
}
