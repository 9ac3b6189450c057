//! Compiled kernels and their invocation: alone, or in a GEMM's work items after it
//! ([`GemmEpilogue::call_bound`]). A kernel's description ([`KernelSignature`]) is in
//! `signature.rs`.
//!
//! A kernel is native code with the C signature [`KernelEntry`]: it receives a table of buffer
//! base pointers (in declaration order) and the half-open range of its parallel loop (ignored
//! by kernels without one). Lengths are compile-time constants, so the code relies on every
//! buffer being at least as long as declared; [`CompiledKernel::call`] checks exactly that,
//! plus element types and borrow conflicts, before entering the code. A kernel may take any
//! number of buffers; up to [`STACK_TABLE`] of them the call path allocates nothing (the pointer
//! table and borrows live on the stack), beyond that they live in vectors made per call.

use std::sync::Arc;

use weft_ir::loop_ir::ScalarType;

use crate::binding::{BindScope, HostBuffer};
use crate::gemm::{GemmCall, GemmEpilogue};
use crate::signature::{KernelEntry, KernelSignature};
use crate::storage::StorageBorrow;
use crate::{DeviceBufferReference, DeviceBufferStorage, RuntimeError, ThreadPool};

/// The most buffers whose pointer table and borrows a call keeps on the stack (allocating
/// nothing); a kernel with more is called through tables on the heap.
pub const STACK_TABLE: usize = 32;
/// Kernels of up to this many buffers use tables of this size (most elementwise kernels).
const SMALL_TABLE: usize = 6;

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
    /// on disjoint sub-ranges; and, while it runs iteration `p` of the parallel loop, it must
    /// access each buffer `i` only at elements one of `signature.accesses[i]` reaches in
    /// iteration `p` (`offset + parallel·p + Σ coefficient·i`, each `i` within its extent) —
    /// so within [`KernelSignature::footprint`]`(i)` where that is `Some(f)`:
    /// `f.lo + p·f.stride ..= f.hi + p·f.stride`. Code
    /// generated from a verified loop-IR kernel, with the signature [`KernelSignature::of`]
    /// that kernel, has these properties.
    pub unsafe fn from_code(
        signature: KernelSignature,
        code: Box<dyn KernelCode>,
    ) -> Result<Self, RuntimeError> {
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
        self.invoke(buffers.len(), |i| buffers.get(i).copied(), None, None, None)
    }

    /// Runs the kernel, splitting its parallel loop (if any) across `pool`'s threads.
    pub fn call_on(
        &self,
        pool: &ThreadPool,
        buffers: &[&DeviceBufferReference],
    ) -> Result<(), RuntimeError> {
        self.invoke(
            buffers.len(),
            |i| buffers.get(i).copied(),
            Some(pool),
            None,
            None,
        )
    }

    /// Runs the kernel with buffer parameter `i` bound to `references[args[i]]`, on `pool` if
    /// given (as [`CompiledKernel::call_on`]) or on the calling thread: how an executable binds
    /// its workspace without building a table of references first.
    pub fn call_indexed(
        &self,
        pool: Option<&ThreadPool>,
        references: &[DeviceBufferReference],
        args: &[usize],
    ) -> Result<(), RuntimeError> {
        self.invoke(
            args.len(),
            |i| args.get(i).and_then(|a| references.get(*a)),
            pool,
            None,
            None,
        )
    }

    /// As [`CompiledKernel::call_indexed`], with every parameter whose slot `args[i]` is bound
    /// in `host` reading or writing that host slice in place of `references[args[i]]`: how a
    /// call runs over the caller's own arrays (crate::binding).
    pub fn call_bound(
        &self,
        pool: Option<&ThreadPool>,
        references: &[DeviceBufferReference],
        host: &BindScope<'_, '_>,
        args: &[usize],
    ) -> Result<(), RuntimeError> {
        let slot = |i: usize| args.get(i).copied().unwrap_or(usize::MAX);
        self.invoke(
            args.len(),
            |i| references.get(slot(i)),
            pool,
            Some((host, &slot)),
            None,
        )
    }

    /// Parameter `i` of a call: the kernel's buffers, then, when a GEMM runs first, its A, B
    /// (read) and C (written).
    fn param<'a>(&'a self, gemm: Option<&'a GemmCall>, i: usize) -> Param<'a> {
        let params = &self.signature.buffers;
        match (params.get(i), gemm) {
            (Some(b), _) => Param {
                name: &b.name,
                ty: b.ty,
                len: b.len,
                write: b.access.can_write(),
            },
            (None, Some(g)) => {
                let t = (i - params.len()).min(2);
                Param {
                    name: ["gemm A", "gemm B", "gemm C"][t],
                    ty: g.spec().dtype,
                    len: g.spec().lens[t],
                    write: t == 2,
                }
            }
            (None, None) => Param {
                name: "",
                ty: ScalarType::I32,
                len: 0,
                write: false,
            },
        }
    }

    /// Checks `count` buffers (`buffer(i)` is parameter i's, `None` if it does not exist;
    /// `host`'s binding of slot `slot(i)` instead, when there is one) and runs the kernel over
    /// them — after `gemm` per work item when given, whose A, B and C are parameters
    /// `count..count + 3`.
    fn invoke<'r>(
        &self,
        count: usize,
        buffer: impl Fn(usize) -> Option<&'r DeviceBufferReference>,
        pool: Option<&ThreadPool>,
        host: Option<(&BindScope<'_, '_>, &dyn Fn(usize) -> usize)>,
        gemm: Option<&GemmCall>,
    ) -> Result<(), RuntimeError> {
        let params = &self.signature.buffers;
        if count != params.len() {
            return Err(RuntimeError::BufferCount {
                kernel: self.signature.name.clone(),
                expected: params.len(),
                actual: count,
            });
        }
        let n = params.len() + if gemm.is_some() { 3 } else { 0 };
        // Tables sized to the kernel: a small kernel's call does not clear and drop room for
        // `STACK_TABLE` buffers (a visible share of a 1K-element call).
        if n <= SMALL_TABLE {
            self.invoke_on_stack::<SMALL_TABLE>(n, &buffer, pool, host, gemm)
        } else if n <= STACK_TABLE {
            self.invoke_on_stack::<STACK_TABLE>(n, &buffer, pool, host, gemm)
        } else {
            let mut storages = vec![None; n];
            let mut hosts = vec![None; n];
            self.bind_host(host, gemm, &mut hosts)?;
            self.snapshot(&buffer, gemm, &hosts, &mut storages)?;
            let mut tables = HeapTables::new(n);
            self.borrow_and_run(&storages, &hosts, tables.slices(), pool, gemm)
        }
    }

    /// [`CompiledKernel::invoke`] with its tables on the stack, room for `N ≥ n` buffers.
    fn invoke_on_stack<'r, const N: usize>(
        &self,
        n: usize,
        buffer: &impl Fn(usize) -> Option<&'r DeviceBufferReference>,
        pool: Option<&ThreadPool>,
        host: Option<(&BindScope<'_, '_>, &dyn Fn(usize) -> usize)>,
        gemm: Option<&GemmCall>,
    ) -> Result<(), RuntimeError> {
        let mut storages: [Option<Arc<DeviceBufferStorage>>; N] = [const { None }; N];
        let mut hosts = [None; N];
        self.bind_host(host, gemm, &mut hosts[..n])?;
        self.snapshot(buffer, gemm, &hosts[..n], &mut storages[..n])?;
        let mut tables = StackTables::<N>::new();
        self.borrow_and_run(&storages[..n], &hosts[..n], tables.slices(n), pool, gemm)
    }

    /// The host binding of each parameter whose slot is bound, checked against the parameter:
    /// type, length, and no store into a slice bound shared.
    fn bind_host(
        &self,
        host: Option<(&BindScope<'_, '_>, &dyn Fn(usize) -> usize)>,
        gemm: Option<&GemmCall>,
        hosts: &mut [Option<HostBuffer>],
    ) -> Result<(), RuntimeError> {
        let Some((scope, slot)) = host else {
            return Ok(());
        };
        for (i, h) in hosts.iter_mut().enumerate() {
            let Some(b) = scope.get(slot(i)) else {
                continue;
            };
            let param = self.param(gemm, i);
            if b.dtype != param.ty || b.len < param.len {
                return Err(RuntimeError::BufferMismatch {
                    kernel: self.signature.name.clone(),
                    buffer: param.name.to_string(),
                    dtype: param.ty,
                    len: param.len,
                    actual_dtype: b.dtype,
                    actual_len: b.len,
                });
            }
            if param.write && !b.writable {
                return Err(RuntimeError::ReadOnlyBinding {
                    kernel: self.signature.name.clone(),
                    buffer: param.name.to_string(),
                });
            }
            *h = Some(b);
        }
        Ok(())
    }

    /// Takes each reference's storage once (so re-pointing during the call is harmless),
    /// checking its element type and length against the parameter; parameters bound to host
    /// memory (`hosts`) take none.
    fn snapshot<'r>(
        &self,
        buffer: &impl Fn(usize) -> Option<&'r DeviceBufferReference>,
        gemm: Option<&GemmCall>,
        hosts: &[Option<HostBuffer>],
        storages: &mut [Option<Arc<DeviceBufferStorage>>],
    ) -> Result<(), RuntimeError> {
        for (i, storage_of) in storages.iter_mut().enumerate() {
            if hosts[i].is_some() {
                continue;
            }
            let param = self.param(gemm, i);
            let Some(reference) = buffer(i) else {
                return Err(RuntimeError::BufferCount {
                    kernel: self.signature.name.clone(),
                    expected: self.signature.buffers.len(),
                    actual: i,
                });
            };
            let storage = reference.storage();
            if storage.dtype() != param.ty || storage.len() < param.len {
                return Err(RuntimeError::BufferMismatch {
                    kernel: self.signature.name.clone(),
                    buffer: param.name.to_string(),
                    dtype: param.ty,
                    len: param.len,
                    actual_dtype: storage.dtype(),
                    actual_len: storage.len(),
                });
            }
            *storage_of = Some(storage);
        }
        Ok(())
    }

    /// Borrows each distinct storage once — exclusively if any parameter bound to it is
    /// written, shared otherwise — fills the pointer table and enters the code (after `gemm`
    /// per work item, when given).
    fn borrow_and_run<'s>(
        &self,
        storages: &'s [Option<Arc<DeviceBufferStorage>>],
        hosts: &[Option<HostBuffer>],
        t: Tables<'_, 's>,
        pool: Option<&ThreadPool>,
        gemm: Option<&GemmCall>,
    ) -> Result<(), RuntimeError> {
        group_by_storage(
            storages,
            |i| self.param(gemm, i).write,
            t.order,
            t.leader,
            t.exclusive,
        );
        for (entry, host) in t.table.iter_mut().zip(hosts) {
            if let Some(h) = host {
                *entry = h.address;
            }
        }
        for (i, storage) in storages.iter().enumerate() {
            let Some(storage) = storage else { continue };
            t.table[i] = storage.base_address();
            if t.leader[i] != i {
                continue;
            }
            match storage.try_borrow(t.exclusive[i]) {
                Some(b) => t.borrows[i] = Some(b),
                None => {
                    return Err(RuntimeError::StorageBusy {
                        kernel: self.signature.name.clone(),
                        buffer: self.param(gemm, i).name.to_string(),
                    })
                }
            }
        }
        if let Some(gemm) = gemm {
            let n = self.signature.buffers.len();
            let bases = [n, n + 1, n + 2].map(|i| t.table[i] as usize);
            let ranges = |i: usize| {
                let p = self.param(Some(gemm), i);
                let b = t.table[i] as usize as u128;
                (b, b + u128::from(p.len) * p.ty.size_bytes() as u128)
            };
            let group = gemm.check_epilogue_memory(&self.signature, ranges)?;
            // Read with the borrows held (a storage written since it was told forgets it).
            let known = [n, n + 1].map(|i| storages[i].as_ref()?.known_largest_magnitude());
            // SAFETY: the table's first `n` entries point at storages or host slices of the
            // kernel's declared types and at least its declared lengths, and entries `n..n+3`
            // at the GEMM's A, B and C, of its type and at least its declared lengths (checked
            // by `bind_host` and `snapshot`), all borrowed until after the call (storages in
            // `t.borrows`, exclusively where the GEMM or the kernel writes; host slices by the
            // caller's `BindScope`). `check_epilogue_memory` has just proved the memory
            // conditions `run_with_epilogue` requires of the kernel's buffers, and the
            // kernel's code is what `from_code`'s contract describes (footprints included).
            unsafe {
                gemm.run_with_epilogue(pool, (bases, known), self.entry, t.table.as_ptr(), group)
            };
            return Ok(());
        }
        let extent = self.signature.parallel_extent.map_or(0, |e| e as i64);
        match (pool, self.signature.parallel_extent) {
            (Some(pool), Some(_)) => {
                // SAFETY: every table entry points at a borrowed storage of the declared type
                // and at least the declared length, held (in `t.borrows`) until after the call,
                // or at a host slice of the declared type and at least the declared length,
                // borrowed by the `BindScope` the caller holds across this call (exclusively
                // where the kernel may write: `bind_host`); the contract of `from_code` makes
                // the entry safe on disjoint sub-ranges concurrently.
                unsafe { pool.run(self.entry, t.table.as_ptr(), extent) }
            }
            _ => {
                // SAFETY: as above, on the whole range from this thread.
                unsafe { (self.entry)(t.table.as_ptr(), 0, extent) }
            }
        }
        Ok(())
    }
}

impl GemmEpilogue {
    /// Runs the GEMM and `kernel` (the one [`GemmEpilogue::new`] was checked for) over
    /// `references`, slots bound in `host` reading or writing the caller's arrays, split over
    /// `pool` if given: each work item computes one block of C, then runs the kernel's parallel
    /// loop over that block. Every buffer of both is checked, borrowed once (exclusively where
    /// either writes) and bound to `host`'s slices as in [`CompiledKernel::call_bound`].
    /// Allocates nothing for kernels of up to [`STACK_TABLE`] − 3 buffers. (Here, not in
    /// `gemm.rs`: it enters the kernel through `CompiledKernel::invoke`.)
    pub fn call_bound(
        &self,
        kernel: &CompiledKernel,
        pool: Option<&ThreadPool>,
        references: &[DeviceBufferReference],
        host: Option<&BindScope<'_, '_>>,
    ) -> Result<(), RuntimeError> {
        let (args, gemm_args) = (self.kernel_args(), self.gemm_args());
        let n = args.len();
        let slot = |i: usize| match args.get(i) {
            Some(a) => *a,
            None => gemm_args.get(i - n).copied().unwrap_or(usize::MAX),
        };
        let host = host.map(|h| (h, &slot as &dyn Fn(usize) -> usize));
        kernel.invoke(
            n,
            |i| references.get(slot(i)),
            pool,
            host,
            Some(self.gemm()),
        )
    }
}

/// One parameter of a call, as [`CompiledKernel::param`] describes it.
struct Param<'a> {
    name: &'a str,
    ty: ScalarType,
    len: u64,
    write: bool,
}

/// Which parameters share a storage: `leader[i]` is the first parameter bound to parameter
/// i's storage, and `exclusive[leader]` whether any of them is written (`written(i)`). By
/// sorting parameter indices by storage address (in place, `order` as room), so any number of
/// buffers costs O(n log n) and nothing is allocated.
fn group_by_storage(
    storages: &[Option<Arc<DeviceBufferStorage>>],
    written: impl Fn(usize) -> bool,
    order: &mut [usize],
    leader: &mut [usize],
    exclusive: &mut [bool],
) {
    let address = |i: usize| storages[i].as_ref().map(Arc::as_ptr);
    for (i, o) in order.iter_mut().enumerate() {
        *o = i;
    }
    order.sort_unstable_by_key(|i| (address(*i), *i));
    let mut run = 0;
    while run < order.len() {
        let first = order[run];
        let mut end = run;
        let mut any_written = false;
        while end < order.len() && address(order[end]) == address(first) {
            leader[order[end]] = first;
            any_written |= written(order[end]);
            end += 1;
        }
        exclusive[first] = any_written;
        run = end;
    }
}

/// The per-call tables of one invocation, whichever memory holds them.
struct Tables<'a, 's> {
    table: &'a mut [*mut u8],
    borrows: &'a mut [Option<StorageBorrow<'s>>],
    order: &'a mut [usize],
    leader: &'a mut [usize],
    exclusive: &'a mut [bool],
}

/// Tables for up to `N` buffers, on the stack.
struct StackTables<'s, const N: usize> {
    table: [*mut u8; N],
    borrows: [Option<StorageBorrow<'s>>; N],
    order: [usize; N],
    leader: [usize; N],
    exclusive: [bool; N],
}

impl<'s, const N: usize> StackTables<'s, N> {
    fn new() -> Self {
        Self {
            table: [std::ptr::null_mut(); N],
            borrows: [const { None }; N],
            order: [0; N],
            leader: [0; N],
            exclusive: [false; N],
        }
    }

    fn slices(&mut self, n: usize) -> Tables<'_, 's> {
        Tables {
            table: &mut self.table[..n],
            borrows: &mut self.borrows[..n],
            order: &mut self.order[..n],
            leader: &mut self.leader[..n],
            exclusive: &mut self.exclusive[..n],
        }
    }
}

/// Tables for any number of buffers, on the heap.
struct HeapTables<'s> {
    table: Vec<*mut u8>,
    borrows: Vec<Option<StorageBorrow<'s>>>,
    order: Vec<usize>,
    leader: Vec<usize>,
    exclusive: Vec<bool>,
}

impl<'s> HeapTables<'s> {
    fn new(n: usize) -> Self {
        Self {
            table: vec![std::ptr::null_mut(); n],
            borrows: std::iter::repeat_with(|| None).take(n).collect(),
            order: vec![0; n],
            leader: vec![0; n],
            exclusive: vec![false; n],
        }
    }

    fn slices(&mut self) -> Tables<'_, 's> {
        Tables {
            table: &mut self.table,
            borrows: &mut self.borrows,
            order: &mut self.order,
            leader: &mut self.leader,
            exclusive: &mut self.exclusive,
        }
    }
}
