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
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use weft_ir::loop_ir::ScalarType;
use weft_ir::{ArrayData, DType, HostError};

use crate::{Element, RuntimeError};

/// The memory this process may use, in bytes: the machine's physical memory (`MemTotal` of
/// `/proc/meminfo`), or its memory cgroup's limit where that is lower (a container's), or
/// `None` where neither can be read (not Linux, or no `/proc`). The default memory budget of a
/// compiled computation: the system accepts each allocation up to that size on its own, but
/// a run whose allocations together exceed it would be killed by the system, not refused with
/// an error.
pub fn physical_memory_bytes() -> Option<u64> {
    // Read once: every compile asks (a read of /proc costs tens of microseconds).
    static MEMORY: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *MEMORY.get_or_init(|| {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let total = read("/proc/meminfo").and_then(|t| meminfo_total_bytes(&t));
        let limit = read("/proc/self/cgroup")
            .and_then(|t| cgroup_limit_files(&t).into_iter().find_map(|f| read(&f)))
            .and_then(|t| cgroup_limit_bytes(&t));
        match (total, limit) {
            (Some(t), Some(l)) => Some(t.min(l)),
            (t, l) => t.or(l),
        }
    })
}

/// The files that may hold this process's memory limit, from its `/proc/self/cgroup` text:
/// cgroup v1's `memory.limit_in_bytes` of the `memory` controller's group, cgroup v2's
/// `memory.max` of the unified group.
fn cgroup_limit_files(cgroup: &str) -> Vec<String> {
    cgroup
        .lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (id, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
            if controllers.split(',').any(|c| c == "memory") {
                Some(format!("/sys/fs/cgroup/memory{path}/memory.limit_in_bytes"))
            } else if id == "0" && controllers.is_empty() {
                Some(format!("/sys/fs/cgroup{path}/memory.max"))
            } else {
                None
            }
        })
        .collect()
}

/// A cgroup memory limit file's bytes, or `None` for no limit (`max`, or v1's page-rounded
/// `i64::MAX`).
fn cgroup_limit_bytes(text: &str) -> Option<u64> {
    let bytes: u64 = text.trim().parse().ok()?;
    (bytes < 1 << 62).then_some(bytes)
}

/// The memory budget a computation gets unless its caller sets one: the `WEFT_MAX_BYTES`
/// environment variable if it holds a byte count (anything else is ignored with a warning on
/// stderr, rather than silently), else [`physical_memory_bytes`]. The JIT's
/// (`JitOptions::max_bytes`) and the interpreter's ([`crate::Interpreter::new`]).
pub fn default_memory_budget() -> Option<u64> {
    if let Ok(v) = std::env::var("WEFT_MAX_BYTES") {
        match v.trim().parse() {
            Ok(n) => return Some(n),
            Err(_) => eprintln!("weft: ignoring WEFT_MAX_BYTES={v:?}: not a byte count"),
        }
    }
    physical_memory_bytes()
}

/// `MemTotal` of a `/proc/meminfo` text, in bytes.
fn meminfo_total_bytes(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => value.checked_mul(1024),
        None => Some(value),
        Some(_) => None,
    }
}

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

/// Allocations of at least this many bytes ask for transparent huge pages (two 2 MiB pages).
pub const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// [`advise_huge_pages`] over `len` bytes at `ptr`.
fn advise_huge_pages_raw(ptr: *mut u8, len: usize) {
    const HUGE: usize = 2 << 20;
    if len < HUGE_PAGE_MIN_BYTES {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize).saturating_add(len) / HUGE * HUGE;
    if end <= start {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: `[start, end)` lies inside the `len` bytes at `ptr`, memory the caller owns
    // (an allocation it just made, or a slice it borrows mutably); `MADV_HUGEPAGE` changes
    // only how the kernel backs those pages, never their contents or mapping, and `start` is
    // page-aligned as `madvise` requires.
    unsafe {
        libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
    }
}

/// Asks the OS to back the whole 2 MiB pages of host array data with transparent huge
/// pages (Linux `madvise(MADV_HUGEPAGE)`, which the default THP mode `madvise` waits for):
/// a kernel streaming 64 MiB through 4 KiB pages walks the page table every 4 KiB, and
/// huge pages took 5–8 % off whole layernorm and l2 calls (docs/runtime.md). Advice only —
/// contents and ownership are unchanged, and a refusal (THP off, another OS) is ignored.
/// Below [`HUGE_PAGE_MIN_BYTES`] it does nothing. Call it before the memory is first
/// touched: pages already faulted in stay small until the kernel's background collapse.
pub fn advise_huge_pages(data: &mut ArrayData) {
    fn bytes<T>(v: &mut [T]) -> (*mut u8, usize) {
        (v.as_mut_ptr().cast(), std::mem::size_of_val(v))
    }
    let (ptr, len) = match data {
        ArrayData::F32(v) => bytes(v),
        ArrayData::F64(v) => bytes(v),
        ArrayData::I32(v) => bytes(v),
        ArrayData::I64(v) => bytes(v),
        ArrayData::Bool(v) => bytes(v),
    };
    advise_huge_pages_raw(ptr, len);
}

/// `n` zeros of `dtype` as host array data, large ones on huge pages
/// ([`advise_huge_pages`]): the arrays the runtime allocates for outputs and state.
pub fn zeroed_host_data(dtype: DType, n: usize) -> Result<ArrayData, HostError> {
    let mut data = ArrayData::zeros(dtype, n)?;
    advise_huge_pages(&mut data);
    Ok(data)
}

const EXCLUSIVE: usize = usize::MAX;

/// Typed device memory of a fixed number of elements.
pub struct DeviceBufferStorage {
    dtype: ScalarType,
    len: u64,
    ptr: NonNull<u8>,
    layout: Layout,
    /// 0: free; `EXCLUSIVE`: one exclusive borrow; n: n shared borrows.
    borrows: AtomicUsize,
    /// The largest magnitude of its elements (NaNs ignored), as f64 bits, while nothing has
    /// written it since a caller said so ([`DeviceBufferStorage::know_largest_magnitude`]: a
    /// program's constants, for the GEMM's overflow bound); `UNKNOWN` otherwise. Every
    /// exclusive borrow — every write — forgets it.
    largest_magnitude: AtomicU64,
}

/// [`DeviceBufferStorage::largest_magnitude`] when it is not known (a NaN's bits: no
/// magnitude is one).
const UNKNOWN: u64 = u64::MAX;

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
        advise_huge_pages_raw(ptr.as_ptr(), layout.size());
        Ok(Arc::new(Self {
            dtype,
            len,
            ptr,
            layout,
            borrows: AtomicUsize::new(0),
            largest_magnitude: AtomicU64::new(UNKNOWN),
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

    /// Records that the largest magnitude of its elements (NaNs ignored) is `value` — true
    /// now, and kept until the next write (exclusive borrow) forgets it.
    pub(crate) fn know_largest_magnitude(&self, value: f64) {
        self.largest_magnitude
            .store(value.to_bits(), Ordering::Release);
    }

    /// The largest magnitude of its elements, where [`Self::know_largest_magnitude`] said it
    /// and nothing has written the storage since.
    pub(crate) fn known_largest_magnitude(&self) -> Option<f64> {
        let bits = self.largest_magnitude.load(Ordering::Acquire);
        (bits != UNKNOWN).then(|| f64::from_bits(bits))
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
        if taken && exclusive {
            // A writer may change any element.
            self.largest_magnitude.store(UNKNOWN, Ordering::Release);
        }
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
    use super::DeviceBufferStorage;

    /// A storage keeps the largest magnitude it was told while only readers borrow it, and
    /// forgets it at the first write (exclusive borrow or copy in).
    #[test]
    fn a_known_largest_magnitude_lasts_until_a_write() {
        let s = DeviceBufferStorage::from_slice(&[1.0f32, -4.0, 2.0]).unwrap();
        assert_eq!(s.known_largest_magnitude(), None);
        s.know_largest_magnitude(4.0);
        drop(s.try_borrow(false));
        assert_eq!(s.known_largest_magnitude(), Some(4.0));
        drop(s.try_borrow(true));
        assert_eq!(s.known_largest_magnitude(), None);
        s.know_largest_magnitude(4.0);
        s.copy_from_slice(&[9.0f32, 0.0, 0.0]).unwrap();
        assert_eq!(s.known_largest_magnitude(), None);
    }

    #[test]
    fn the_physical_memory_is_read_from_meminfo() {
        let text = "MemTotal:       24576000 kB\nMemFree:        1000 kB\n";
        assert_eq!(super::meminfo_total_bytes(text), Some(24_576_000 * 1024));
        assert_eq!(super::meminfo_total_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(super::meminfo_total_bytes("MemTotal: x kB\n"), None);
        assert_eq!(super::meminfo_total_bytes("MemTotal: 5 MB\n"), None);
        #[cfg(target_os = "linux")]
        assert!(super::physical_memory_bytes().is_some_and(|b| b > 1 << 20));
    }

    #[test]
    fn a_memory_cgroup_limit_is_found_in_either_version() {
        let v1 = "5:devices:/\n4:memory:/box/7\n0::/\n";
        assert_eq!(
            super::cgroup_limit_files(v1),
            [
                "/sys/fs/cgroup/memory/box/7/memory.limit_in_bytes",
                "/sys/fs/cgroup//memory.max"
            ]
        );
        assert_eq!(
            super::cgroup_limit_files("0::/user.slice/app\n"),
            ["/sys/fs/cgroup/user.slice/app/memory.max"]
        );
        assert_eq!(super::cgroup_limit_bytes("4294967296\n"), Some(4 << 30));
        assert_eq!(super::cgroup_limit_bytes("max\n"), None);
        assert_eq!(super::cgroup_limit_bytes("9223372036854771712\n"), None);
    }

    use super::*;

    /// `THPeligible` of the mapping holding `addr`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn huge_page_eligible(addr: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-') {
                if let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                {
                    inside = (lo..hi).contains(&addr);
                    continue;
                }
            }
            if let Some(v) = line.strip_prefix("THPeligible:").filter(|_| inside) {
                return Some(v.trim() == "1");
            }
        }
        None
    }

    /// Large host arrays and storages are advised onto huge pages: with the kernel's THP mode
    /// `madvise` (the default), a mapping is eligible only after `MADV_HUGEPAGE`. Skipped
    /// where THP is off or unreadable.
    #[cfg(target_os = "linux")]
    #[test]
    fn large_allocations_are_eligible_for_huge_pages() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !mode.contains("[madvise]") && !mode.contains("[always]") {
            eprintln!("transparent huge pages are off here ({mode:?}): nothing to check");
            return;
        }
        let n = 16 << 20;
        let mut data = zeroed_host_data(DType::F32, n / 4).unwrap();
        let ArrayData::F32(v) = &mut data else {
            panic!("f32 data")
        };
        assert!(v.iter().all(|x| *x == 0.0));
        let mid = v.as_ptr() as usize + n / 2;
        assert_eq!(
            huge_page_eligible(mid),
            Some(true),
            "host array at {mid:#x}"
        );
        let s = DeviceBufferStorage::new(ScalarType::F64, (n / 8) as u64).unwrap();
        let mid = s.ptr.as_ptr() as usize + n / 2;
        assert_eq!(huge_page_eligible(mid), Some(true), "storage at {mid:#x}");
        // Small and odd-sized data is left alone, and advising it is harmless.
        let mut small = zeroed_host_data(DType::Bool, 3).unwrap();
        advise_huge_pages(&mut small);
        assert_eq!(small, ArrayData::Bool(vec![false; 3]));
    }

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
