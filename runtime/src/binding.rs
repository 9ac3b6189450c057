//! Host memory bound in place of a workspace buffer for the length of one call: how a call reads
//! the caller's input arrays and writes the caller's output arrays without copying them (the
//! re-pointable reference of docs/design.md, "Device buffers", for memory the runtime does not
//! own).
//!
//! Assumes the caller (an executable) knows which of its buffers a kernel may read from caller
//! memory (an input's buffer that no kernel writes) or write there (an output's buffer, of
//! exactly the output's length). Guarantees: a binding exists only inside a [`BindScope`], which
//! borrows every bound slice — shared for [`BindScope::bind`], exclusive for
//! [`BindScope::bind_mut`] — for as long as it lives, so no kernel can see the memory after the
//! borrow ends; a scope clears every slot when it is made and when it is dropped, so a leaked
//! scope leaves nothing a later call could use; a kernel that would write a slot bound shared,
//! or read or write past a slot's length or with another element type, is refused before it
//! runs ([`RuntimeError::BufferMismatch`], [`RuntimeError::ReadOnlyBinding`]). `bool` slices
//! can only be bound shared: kernels may store any nonzero byte as true, which is not a valid
//! Rust `bool`.

use std::marker::PhantomData;

use weft_ir::loop_ir::ScalarType;

use crate::Element;

/// One bound slice: its address, length in elements, type and whether kernels may write it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HostBuffer {
    pub(crate) address: *mut u8,
    pub(crate) len: u64,
    pub(crate) dtype: ScalarType,
    pub(crate) writable: bool,
}

// SAFETY: a `HostBuffer` is only reachable through a live `BindScope`, which holds the borrow
// of the slice it points into (shared slices of `Element`s are `Sync`; exclusive ones are only
// written by the kernels of the call that holds the scope, on disjoint ranges).
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

/// The slots of an executable's buffers that can be bound to host memory: one per buffer,
/// allocated once (an executable keeps one per workspace), so binding allocates nothing.
#[derive(Debug, Default)]
pub struct HostBindings {
    slots: Vec<Option<HostBuffer>>,
}

impl HostBindings {
    /// Slots for `buffers` buffers, all unbound.
    pub fn new(buffers: usize) -> HostBindings {
        HostBindings {
            slots: vec![None; buffers],
        }
    }

    /// A scope binding host slices that live at least `'a` (every slot cleared first).
    pub fn scope<'a>(&mut self) -> BindScope<'_, 'a> {
        self.clear();
        BindScope {
            bindings: self,
            _borrows: PhantomData,
        }
    }

    fn clear(&mut self) {
        for s in &mut self.slots {
            *s = None;
        }
    }
}

/// Host slices bound to buffer slots for as long as the scope lives (it borrows them for `'a`).
#[derive(Debug)]
pub struct BindScope<'b, 'a> {
    bindings: &'b mut HostBindings,
    _borrows: PhantomData<&'a mut [u8]>,
}

/// A slot index out of range (the executable's mistake, reported rather than ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("no buffer slot {slot} to bind (there are {slots})")]
pub struct NoSlot {
    /// The slot asked for.
    pub slot: usize,
    /// How many there are.
    pub slots: usize,
}

impl<'a> BindScope<'_, 'a> {
    /// Binds `data` to `slot` for reading: kernels read the caller's memory in place.
    pub fn bind<T: Element>(&mut self, slot: usize, data: &'a [T]) -> Result<(), NoSlot> {
        self.set(
            slot,
            HostBuffer {
                address: data.as_ptr().cast_mut().cast(),
                len: data.len() as u64,
                dtype: T::DTYPE,
                writable: false,
            },
        )
    }

    /// Binds `data` to `slot` for reading and writing: kernels store into the caller's memory.
    /// `bool` is refused (see the module docs): `Ok(false)`, nothing bound.
    pub fn bind_mut<T: Element>(&mut self, slot: usize, data: &'a mut [T]) -> Result<bool, NoSlot> {
        if T::DTYPE == ScalarType::Bool {
            return Ok(false);
        }
        self.set(
            slot,
            HostBuffer {
                address: data.as_mut_ptr().cast(),
                len: data.len() as u64,
                dtype: T::DTYPE,
                writable: true,
            },
        )?;
        Ok(true)
    }

    /// Whether `slot` is bound.
    pub fn is_bound(&self, slot: usize) -> bool {
        self.get(slot).is_some()
    }

    pub(crate) fn get(&self, slot: usize) -> Option<HostBuffer> {
        self.bindings.slots.get(slot).copied().flatten()
    }

    fn set(&mut self, slot: usize, buffer: HostBuffer) -> Result<(), NoSlot> {
        let slots = self.bindings.slots.len();
        match self.bindings.slots.get_mut(slot) {
            Some(s) => {
                *s = Some(buffer);
                Ok(())
            }
            None => Err(NoSlot { slot, slots }),
        }
    }
}

impl Drop for BindScope<'_, '_> {
    fn drop(&mut self) {
        self.bindings.clear();
    }
}

/// Copies `src` into `dst` (same dtype and length), counted in
/// [`host_copy_bytes`](crate::host_copy_bytes): how a call hands one value to two owners (an
/// assigned value that is also an output).
pub fn copy_array(
    dst: weft_ir::DataMut<'_>,
    src: &weft_ir::HostArray,
) -> Result<(), crate::RuntimeError> {
    use weft_ir::{ArrayData as S, DataMut as D};
    fn one<T: Copy + Element>(d: &mut [T], s: &[T]) -> Result<(), crate::RuntimeError> {
        if d.len() != s.len() {
            return Err(crate::RuntimeError::LengthMismatch {
                what: "copy between host arrays".into(),
                expected: s.len() as u64,
                actual: d.len() as u64,
            });
        }
        crate::storage::count_host_copy::<T>(s.len());
        d.copy_from_slice(s);
        Ok(())
    }
    match (dst, src.data()) {
        (D::F32(d), S::F32(s)) => one(d, s),
        (D::F64(d), S::F64(s)) => one(d, s),
        (D::I32(d), S::I32(s)) => one(d, s),
        (D::I64(d), S::I64(s)) => one(d, s),
        (D::Bool(d), S::Bool(s)) => one(d, s),
        (d, _) => Err(crate::RuntimeError::DTypeMismatch {
            what: "copy between host arrays".into(),
            expected: src.dtype(),
            actual: d.dtype(),
        }),
    }
}
