//! `DeviceBufferReference`: a typed, minimum-size slot that points at one storage at a time
//! and can be re-pointed (double buffering), after docs/design.md, "Device buffers".
//!
//! Guarantees: the storage pointed at always has the reference's element type and at least its
//! minimum size — `new` and `repoint` check, and fail with a typed error otherwise. Re-pointing
//! takes `&self` (the reference is shared by the tensor views over it) and is atomic with
//! respect to kernel calls, which snapshot the storage once per call.

use std::sync::{Arc, Mutex};

use weft_ir::loop_ir::ScalarType;

use crate::{DeviceBufferStorage, RuntimeError};

/// A re-pointable reference to device storage.
#[derive(Debug)]
pub struct DeviceBufferReference {
    name: String,
    dtype: ScalarType,
    min_len: u64,
    storage: Mutex<Arc<DeviceBufferStorage>>,
}

impl DeviceBufferReference {
    /// A reference called `name` needing `min_len` elements of `dtype`, pointing at `storage`.
    pub fn new(
        name: impl Into<String>,
        dtype: ScalarType,
        min_len: u64,
        storage: Arc<DeviceBufferStorage>,
    ) -> Result<Self, RuntimeError> {
        let name = name.into();
        check(&name, dtype, min_len, &storage)?;
        Ok(Self {
            name,
            dtype,
            min_len,
            storage: Mutex::new(storage),
        })
    }

    /// A reference with the type and length of `storage`, pointing at it.
    pub fn to_storage(name: impl Into<String>, storage: Arc<DeviceBufferStorage>) -> Self {
        Self {
            name: name.into(),
            dtype: storage.dtype(),
            min_len: storage.len(),
            storage: Mutex::new(storage),
        }
    }

    /// Points the reference at `storage` (same type, at least the minimum size).
    pub fn repoint(&self, storage: Arc<DeviceBufferStorage>) -> Result<(), RuntimeError> {
        check(&self.name, self.dtype, self.min_len, &storage)?;
        *self.storage.lock().unwrap_or_else(|p| p.into_inner()) = storage;
        Ok(())
    }

    /// The storage currently pointed at.
    pub fn storage(&self) -> Arc<DeviceBufferStorage> {
        Arc::clone(&self.storage.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// The reference's name (for diagnostics).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Element type.
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    /// Minimum number of elements of any storage pointed at.
    pub fn min_len(&self) -> u64 {
        self.min_len
    }
}

fn check(
    name: &str,
    dtype: ScalarType,
    min_len: u64,
    storage: &DeviceBufferStorage,
) -> Result<(), RuntimeError> {
    if storage.dtype() != dtype {
        return Err(RuntimeError::DTypeMismatch {
            what: format!("reference {name}"),
            expected: dtype,
            actual: storage.dtype(),
        });
    }
    if storage.len() < min_len {
        return Err(RuntimeError::LengthMismatch {
            what: format!("reference {name}"),
            expected: min_len,
            actual: storage.len(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repoint_checks_type_and_size() {
        let a = DeviceBufferStorage::new(ScalarType::F32, 8).unwrap();
        let r = DeviceBufferReference::new("x", ScalarType::F32, 6, a).unwrap();
        let bigger = DeviceBufferStorage::new(ScalarType::F32, 10).unwrap();
        r.repoint(Arc::clone(&bigger)).unwrap();
        assert!(Arc::ptr_eq(&r.storage(), &bigger));
        let small = DeviceBufferStorage::new(ScalarType::F32, 5).unwrap();
        assert!(matches!(
            r.repoint(small),
            Err(RuntimeError::LengthMismatch {
                expected: 6,
                actual: 5,
                ..
            })
        ));
        let ints = DeviceBufferStorage::new(ScalarType::I32, 8).unwrap();
        assert!(matches!(
            r.repoint(ints),
            Err(RuntimeError::DTypeMismatch { .. })
        ));
        assert!(
            Arc::ptr_eq(&r.storage(), &bigger),
            "a failed repoint leaves the reference alone"
        );
    }

    #[test]
    fn storage_is_aligned_zeroed_and_typed() {
        let s = DeviceBufferStorage::new(ScalarType::F64, 3).unwrap();
        assert_eq!(s.base_address() as usize % crate::STORAGE_ALIGNMENT, 0);
        assert_eq!(s.to_vec::<f64>().unwrap(), vec![0.0; 3]);
        assert!(s.to_vec::<f32>().is_err());
        s.copy_from_slice(&[1.0f64, 2.0, 3.0]).unwrap();
        assert_eq!(s.to_vec::<f64>().unwrap(), vec![1.0, 2.0, 3.0]);
        assert!(s.copy_from_slice(&[1.0f64]).is_err());
        let empty = DeviceBufferStorage::new(ScalarType::Bool, 0).unwrap();
        assert_eq!(empty.base_address() as usize % crate::STORAGE_ALIGNMENT, 0);
    }
}
