//! `DeviceBufferStorage`: a typed, fixed-length, 64-byte-aligned block of device (here: host)
//! memory.
//!
//! Guarantees: the memory is zero-initialised, aligned to [`STORAGE_ALIGNMENT`], at least one
//! cache line long (so even an empty storage has a valid base pointer), and freed exactly once
//! on drop. No Rust reference to the memory is ever handed out: host copies and kernel calls go
//! through a borrow protocol (many shared or one exclusive, never blocking — a conflict is a
//! typed error), so concurrent calls cannot race on it.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use weft_ir::loop_ir::ScalarType;

use crate::{Element, RuntimeError};

/// Bytes copied between host slices and device storages by this process (both directions).
static HOST_COPY_BYTES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

pub(crate) fn count_host_copy<T: Element>(elements: usize) {
    let bytes = (elements as u64).saturating_mul(T::DTYPE.size_bytes() as u64);
    HOST_COPY_BYTES.fetch_add(bytes, Ordering::Relaxed);
}

/// How many bytes this process has copied between host memory and device storages, in both
/// directions (inputs and state in, outputs and assigned values out), or between host arrays
/// on a call's behalf ([`copy_array`](crate::copy_array)): what a call costs beyond its kernels. A call whose inputs and outputs are bound in place (crate::binding) adds
/// nothing for them.
pub fn host_copy_bytes() -> u64 {
    HOST_COPY_BYTES.load(Ordering::Relaxed)
}

/// Alignment of every storage's base address, in bytes.
pub const STORAGE_ALIGNMENT: usize = 64;

const EXCLUSIVE: usize = usize::MAX;

/// Typed device memory of a fixed number of elements.
pub struct DeviceBufferStorage {
    dtype: ScalarType,
    len: u64,
    ptr: NonNull<u8>,
    layout: Layout,
    /// 0: free; `EXCLUSIVE`: one exclusive borrow; n: n shared borrows.
    borrows: AtomicUsize,
}

// SAFETY: the storage owns its allocation outright; all access to the memory goes through the
// atomic borrow protocol (`try_borrow`), which excludes concurrent writers.
unsafe impl Send for DeviceBufferStorage {}
// SAFETY: as above — `&DeviceBufferStorage` only exposes the memory through borrows.
unsafe impl Sync for DeviceBufferStorage {}

impl DeviceBufferStorage {
    /// Zeroed storage for `len` elements of `dtype`.
    pub fn new(dtype: ScalarType, len: u64) -> Result<Arc<Self>, RuntimeError> {
        let failed = || RuntimeError::AllocationFailed { dtype, len };
        let bytes = usize::try_from(len)
            .ok()
            .and_then(|n| weft_ir::size::byte_size(dtype, n))
            .ok_or_else(failed)?;
        let layout = Layout::from_size_align(bytes.max(STORAGE_ALIGNMENT), STORAGE_ALIGNMENT)
            .map_err(|_| failed())?;
        // SAFETY: `layout` has non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).ok_or_else(failed)?;
        Ok(Arc::new(Self {
            dtype,
            len,
            ptr,
            layout,
            borrows: AtomicUsize::new(0),
        }))
    }

    /// Storage holding a copy of `data`.
    pub fn from_slice<T: Element>(data: &[T]) -> Result<Arc<Self>, RuntimeError> {
        let storage = Self::new(T::DTYPE, data.len() as u64)?;
        storage.copy_from_slice(data)?;
        Ok(storage)
    }

    /// Element type.
    pub fn dtype(&self) -> ScalarType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the storage holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Base address (64-byte aligned). Reading or writing through it is only sound while
    /// holding a borrow; the runtime's kernel calls do.
    pub fn base_address(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn check<T: Element>(&self, what: &str, len: usize) -> Result<(), RuntimeError> {
        if T::DTYPE != self.dtype {
            return Err(RuntimeError::DTypeMismatch {
                what: what.to_string(),
                expected: self.dtype,
                actual: T::DTYPE,
            });
        }
        if len as u64 != self.len {
            return Err(RuntimeError::LengthMismatch {
                what: what.to_string(),
                expected: self.len,
                actual: len as u64,
            });
        }
        Ok(())
    }

    fn busy() -> RuntimeError {
        RuntimeError::StorageBusy {
            kernel: "host".to_string(),
            buffer: "storage".to_string(),
        }
    }

    /// Overwrites every element with `data` (same type and length).
    pub fn copy_from_slice<T: Element>(&self, data: &[T]) -> Result<(), RuntimeError> {
        self.check::<T>("copy into storage", data.len())?;
        count_host_copy::<T>(data.len());
        let _borrow = self.try_borrow(true).ok_or_else(Self::busy)?;
        let size = T::DTYPE.size_bytes();
        for (i, x) in data.iter().enumerate() {
            // SAFETY: `i < len`, so the element lies inside the allocation; we hold the
            // exclusive borrow.
            unsafe { x.write_to(self.ptr.as_ptr().add(i * size)) };
        }
        Ok(())
    }

    /// Copies every element into `out` (same type and length).
    pub fn copy_to_slice<T: Element>(&self, out: &mut [T]) -> Result<(), RuntimeError> {
        self.check::<T>("copy out of storage", out.len())?;
        count_host_copy::<T>(out.len());
        let _borrow = self.try_borrow(false).ok_or_else(Self::busy)?;
        let size = T::DTYPE.size_bytes();
        for (i, x) in out.iter_mut().enumerate() {
            // SAFETY: `i < len`, so the element lies inside the allocation; we hold a shared
            // borrow, so nobody writes concurrently.
            *x = unsafe { T::read_from(self.ptr.as_ptr().add(i * size)) };
        }
        Ok(())
    }
    /// Copies the first `out.len()` elements into `out` (a storage shared by several tensors
    /// is as long as the longest; a tensor stored at its start is a prefix). Allocates nothing.
    pub fn copy_prefix_to_slice<T: Element>(&self, out: &mut [T]) -> Result<(), RuntimeError> {
        if T::DTYPE != self.dtype {
            return Err(RuntimeError::DTypeMismatch {
                what: "copy out of storage".to_string(),
                expected: self.dtype,
                actual: T::DTYPE,
            });
        }
        if out.len() as u64 > self.len {
            return Err(RuntimeError::LengthMismatch {
                what: "copy a prefix out of storage".to_string(),
                expected: self.len,
                actual: out.len() as u64,
            });
        }
        count_host_copy::<T>(out.len());
        let _borrow = self.try_borrow(false).ok_or_else(Self::busy)?;
        let size = T::DTYPE.size_bytes();
        for (i, x) in out.iter_mut().enumerate() {
            // SAFETY: `i < out.len() <= len`, so the element lies inside the allocation; we
            // hold a shared borrow, so nobody writes concurrently.
            *x = unsafe { T::read_from(self.ptr.as_ptr().add(i * size)) };
        }
        Ok(())
    }

    /// A copy of every element.
    pub fn to_vec<T: Element + Default>(&self) -> Result<Vec<T>, RuntimeError> {
        let len = usize::try_from(self.len).map_err(|_| Self::busy())?;
        let mut out = vec![T::default(); len];
        self.copy_to_slice(&mut out)?;
        Ok(out)
    }

    /// Takes a shared (`exclusive == false`) or exclusive borrow of the memory, or `None` if a
    /// conflicting borrow is held. Never blocks, never allocates.
    pub(crate) fn try_borrow(&self, exclusive: bool) -> Option<StorageBorrow<'_>> {
        let taken = if exclusive {
            self.borrows
                .compare_exchange(0, EXCLUSIVE, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        } else {
            self.borrows
                .fetch_update(Ordering::Acquire, Ordering::Relaxed, |n| {
                    if n < EXCLUSIVE - 1 {
                        Some(n + 1)
                    } else {
                        None
                    }
                })
                .is_ok()
        };
        // Not `then_some`: its argument is built eagerly, and dropping an untaken borrow
        // would release someone else's.
        if taken {
            Some(StorageBorrow {
                storage: self,
                exclusive,
            })
        } else {
            None
        }
    }
}

impl Drop for DeviceBufferStorage {
    fn drop(&mut self) {
        // SAFETY: `ptr` was returned by `alloc_zeroed(self.layout)` and is freed only here.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

impl fmt::Debug for DeviceBufferStorage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeviceBufferStorage")
            .field("dtype", &self.dtype)
            .field("len", &self.len)
            .field("base", &self.ptr)
            .finish()
    }
}

/// A held borrow of a storage's memory; released on drop.
pub(crate) struct StorageBorrow<'a> {
    storage: &'a DeviceBufferStorage,
    exclusive: bool,
}

impl Drop for StorageBorrow<'_> {
    fn drop(&mut self) {
        if self.exclusive {
            self.storage.borrows.store(0, Ordering::Release);
        } else {
            self.storage.borrows.fetch_sub(1, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn borrows_are_shared_or_exclusive() {
        let s = DeviceBufferStorage::new(ScalarType::I32, 4).unwrap();
        let r1 = s.try_borrow(false).unwrap();
        let r2 = s.try_borrow(false).unwrap();
        assert!(s.try_borrow(true).is_none(), "readers exclude a writer");
        drop((r1, r2));
        let w = s.try_borrow(true).unwrap();
        assert!(s.try_borrow(false).is_none(), "a writer excludes readers");
        assert!(matches!(
            s.copy_from_slice(&[1i32, 2, 3, 4]),
            Err(RuntimeError::StorageBusy { .. })
        ));
        drop(w);
        s.copy_from_slice(&[1i32, 2, 3, 4]).unwrap();
    }
}
