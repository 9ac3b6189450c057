//! Compiled kernels and their invocation.
//!
//! A kernel is native code with the C signature [`KernelEntry`]: it receives a table of buffer
//! base pointers (in declaration order) and the half-open range of its parallel loop (ignored
//! by kernels without one). Lengths are compile-time constants, so the code relies on every
//! buffer being at least as long as declared; [`CompiledKernel::call`] checks exactly that,
//! plus element types and borrow conflicts, before entering the code. The call path allocates
//! nothing: the pointer table and borrows live on the stack.

use std::sync::Arc;

use weft_ir::loop_ir::{BufferDecl, Kernel};

use crate::storage::StorageBorrow;
use crate::{DeviceBufferReference, DeviceBufferStorage, RuntimeError, ThreadPool};

/// The native signature of a compiled kernel: `(buffer table, parallel begin, parallel end)`.
pub type KernelEntry = unsafe extern "C" fn(buffers: *const *mut u8, begin: i64, end: i64);

/// The most buffers one kernel may take (the size of the on-stack pointer table).
pub const MAX_KERNEL_BUFFERS: usize = 32;

/// What a caller must bind to call a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSignature {
    /// The kernel's name.
    pub name: String,
    /// Buffer parameters, in pointer-table order.
    pub buffers: Vec<BufferDecl>,
    /// Extent of the parallel loop, if the kernel has one.
    pub parallel_extent: Option<u64>,
}

impl KernelSignature {
    /// The signature of a loop-IR kernel.
    pub fn of(kernel: &Kernel) -> Self {
        Self {
            name: kernel.name.clone(),
            buffers: kernel.buffers.values().cloned().collect(),
            parallel_extent: kernel.parallel_loop().map(|l| kernel.loops[l].extent),
        }
    }
}

/// The native code of one kernel, as a code generator hands it over: the entry point's
/// address, the code's size, and ownership of the memory holding it — the code stays mapped
/// while the value lives and may be freed when it is dropped. Implementing this is safe: the
/// runtime turns the address into a callable [`KernelEntry`] only in the `unsafe`
/// [`CompiledKernel::from_code`], whose caller vouches for the code.
pub trait KernelCode: Send + Sync + 'static {
    /// The address of the entry point, a function with the [`KernelEntry`] signature.
    fn entry_address(&self) -> *const u8;
    /// Size of the machine code in bytes.
    fn code_size(&self) -> usize;
}

/// A native kernel, the metadata to call it safely, and the owner of its code.
pub struct CompiledKernel {
    signature: KernelSignature,
    entry: KernelEntry,
    code_size: usize,
    // Dropped after every call has returned: a `CompiledKernel` cannot be dropped while
    // `call`/`call_on` borrows it, and the pool does not outlive a dispatch.
    _code: Box<dyn KernelCode>,
}

impl std::fmt::Debug for CompiledKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledKernel")
            .field("signature", &self.signature)
            .field("code_size", &self.code_size)
            .finish()
    }
}

impl CompiledKernel {
    /// Wraps native code. This is the one point where a code generator vouches for the code it
    /// made; everything after it (the checks of [`CompiledKernel::call`], the borrows, the
    /// pointer table, the call) is the runtime's.
    ///
    /// # Safety
    /// While `code` lives, `code.entry_address()` must be the address of a function with the C
    /// signature [`KernelEntry`] on the host calling convention, and, for any table of pointers
    /// to buffers of `signature`'s types and at least its lengths, and any sub-range of
    /// `0..parallel_extent` (or any range, without a parallel loop), that function must only
    /// access those buffers within their declared lengths — loads from buffers declared
    /// `read`, stores to buffers declared `write`/`readwrite` — and be safe to run concurrently
    /// on disjoint sub-ranges. Code generated from a verified loop-IR kernel has these
    /// properties.
    pub unsafe fn from_code(
        signature: KernelSignature,
        code: Box<dyn KernelCode>,
    ) -> Result<Self, RuntimeError> {
        if signature.buffers.len() > MAX_KERNEL_BUFFERS {
            return Err(RuntimeError::TooManyBuffers {
                kernel: signature.name.clone(),
                count: signature.buffers.len(),
                max: MAX_KERNEL_BUFFERS,
            });
        }
        let address = code.entry_address();
        if address.is_null() {
            return Err(RuntimeError::NullEntry {
                kernel: signature.name.clone(),
            });
        }
        // SAFETY: a non-null code address; the caller guarantees (contract above) that it is a
        // function of exactly this signature that stays mapped while `code` lives, and `code`
        // is kept in the returned value next to the entry.
        let entry = unsafe { std::mem::transmute::<*const u8, KernelEntry>(address) };
        Ok(Self {
            signature,
            entry,
            code_size: code.code_size(),
            _code: code,
        })
    }

    /// The kernel's signature.
    pub fn signature(&self) -> &KernelSignature {
        &self.signature
    }

    /// Size of the native code in bytes.
    pub fn code_size(&self) -> usize {
        self.code_size
    }

    /// Runs the kernel on the calling thread over its whole iteration space.
    pub fn call(&self, buffers: &[&DeviceBufferReference]) -> Result<(), RuntimeError> {
        self.invoke(buffers, None)
    }

    /// Runs the kernel, splitting its parallel loop (if any) across `pool`'s threads.
    pub fn call_on(
        &self,
        pool: &ThreadPool,
        buffers: &[&DeviceBufferReference],
    ) -> Result<(), RuntimeError> {
        self.invoke(buffers, Some(pool))
    }

    fn invoke(
        &self,
        buffers: &[&DeviceBufferReference],
        pool: Option<&ThreadPool>,
    ) -> Result<(), RuntimeError> {
        let params = &self.signature.buffers;
        if buffers.len() != params.len() {
            return Err(RuntimeError::BufferCount {
                kernel: self.signature.name.clone(),
                expected: params.len(),
                actual: buffers.len(),
            });
        }
        // Snapshot each reference's storage once, so re-pointing during the call is harmless.
        let mut storages: [Option<Arc<DeviceBufferStorage>>; MAX_KERNEL_BUFFERS] =
            [const { None }; MAX_KERNEL_BUFFERS];
        for (i, (reference, param)) in buffers.iter().zip(params).enumerate() {
            let storage = reference.storage();
            if storage.dtype() != param.ty || storage.len() < param.len {
                return Err(RuntimeError::BufferMismatch {
                    kernel: self.signature.name.clone(),
                    buffer: param.name.clone(),
                    dtype: param.ty,
                    len: param.len,
                    actual_dtype: storage.dtype(),
                    actual_len: storage.len(),
                });
            }
            storages[i] = Some(storage);
        }
        let storages = &storages[..params.len()];
        // Borrow each distinct storage once: exclusively if any parameter bound to it is
        // written, shared otherwise.
        let mut borrows: [Option<StorageBorrow<'_>>; MAX_KERNEL_BUFFERS] =
            [const { None }; MAX_KERNEL_BUFFERS];
        let mut table: [*mut u8; MAX_KERNEL_BUFFERS] = [std::ptr::null_mut(); MAX_KERNEL_BUFFERS];
        for (i, storage) in storages.iter().enumerate() {
            let Some(storage) = storage else { continue };
            table[i] = storage.base_address();
            let same = |s: &Option<Arc<DeviceBufferStorage>>| {
                s.as_ref().is_some_and(|s| Arc::ptr_eq(s, storage))
            };
            if storages[..i].iter().any(same) {
                continue;
            }
            let exclusive = storages
                .iter()
                .zip(params)
                .any(|(s, p)| same(s) && p.access.can_write());
            match storage.try_borrow(exclusive) {
                Some(b) => borrows[i] = Some(b),
                None => {
                    return Err(RuntimeError::StorageBusy {
                        kernel: self.signature.name.clone(),
                        buffer: params[i].name.clone(),
                    })
                }
            }
        }
        let extent = self.signature.parallel_extent.map_or(0, |e| e as i64);
        match (pool, self.signature.parallel_extent) {
            (Some(pool), Some(_)) => {
                // SAFETY: every table entry points at a borrowed storage of the declared type
                // and at least the declared length, held until after the call; the contract of
                // `from_code` makes the entry safe on disjoint sub-ranges concurrently.
                unsafe { pool.run(self.entry, table.as_ptr(), extent) }
            }
            _ => {
                // SAFETY: as above, on the whole range from this thread.
                unsafe { (self.entry)(table.as_ptr(), 0, extent) }
            }
        }
        drop(borrows);
        Ok(())
    }
}
