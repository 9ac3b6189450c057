//! A caller's `weft_buffer`, checked against the tensor it is for: the only place raw C memory
//! becomes a Rust slice.
//!
//! Assumes (the caller's contract in weft.h): `data` points at `bytes` bytes that stay valid,
//! and are not written by anyone else, for the call.
//! Guarantees: a [`Buffer`] or [`BufferMut`] exists only for memory of exactly the tensor's
//! size, aligned to its element and not NULL (unless empty); a bool buffer holds only 0 and 1
//! (one weft writes is zeroed first).

use std::ffi::c_void;

use weft_api::ir::{DataMut, DataRef};
use weft_api::DType;

use crate::model::Tensor;
use crate::status::Failure;

/// `weft_buffer` of weft.h.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RawBuffer {
    pub data: *mut c_void,
    pub bytes: usize,
}

/// Checks `raw` against `t`: its size, its alignment and that it is not NULL; `what` names
/// the buffer in messages.
fn check(raw: &RawBuffer, t: &Tensor, what: &str) -> Result<(), Failure> {
    if raw.bytes != t.bytes {
        return Err(Failure::argument(format!(
            "{what} `{}`: a buffer of {} bytes; it takes {} ({} elements of {})",
            t.label(),
            raw.bytes,
            t.bytes,
            t.elements,
            t.dtype
        )));
    }
    if raw.bytes > 0 && raw.data.is_null() {
        return Err(Failure::argument(format!(
            "{what} `{}`: its data is NULL",
            t.label()
        )));
    }
    let align = t.dtype.size_bytes();
    if !(raw.data as usize).is_multiple_of(align) {
        return Err(Failure::argument(format!(
            "{what} `{}`: its data is not aligned to its {align}-byte elements",
            t.label()
        )));
    }
    Ok(())
}

/// A checked buffer weft reads.
pub struct Buffer<'a> {
    data: DataRef<'a>,
}

impl<'a> Buffer<'a> {
    /// `raw` as the elements of `t`, or why not.
    ///
    /// # Safety
    /// `raw.data` points at `raw.bytes` readable bytes, valid and written by no one for `'a`.
    pub unsafe fn new(raw: &RawBuffer, t: &Tensor, what: &str) -> Result<Buffer<'a>, Failure> {
        check(raw, t, what)?;
        let n = t.elements;
        if n == 0 {
            return Ok(Buffer {
                data: empty(t.dtype),
            });
        }
        let p = raw.data as *const c_void;
        // SAFETY: `p` is non-NULL, aligned to the element and holds `n` elements (checked
        // above), valid and unwritten for `'a` (the caller's contract); every bit pattern is
        // a valid f32, f64, i32 or i64, and bool bytes are checked to be 0 or 1 first.
        let data = unsafe {
            match t.dtype {
                DType::F32 => DataRef::F32(std::slice::from_raw_parts(p.cast(), n)),
                DType::F64 => DataRef::F64(std::slice::from_raw_parts(p.cast(), n)),
                DType::I32 => DataRef::I32(std::slice::from_raw_parts(p.cast(), n)),
                DType::I64 => DataRef::I64(std::slice::from_raw_parts(p.cast(), n)),
                DType::Bool => {
                    let bytes: &[u8] = std::slice::from_raw_parts(p.cast(), n);
                    if let Some(i) = bytes.iter().position(|&b| b > 1) {
                        return Err(Failure::argument(format!(
                            "{what} `{}`: bool element {i} is {}, not 0 or 1",
                            t.label(),
                            bytes[i]
                        )));
                    }
                    DataRef::Bool(std::slice::from_raw_parts(p.cast(), n))
                }
            }
        };
        Ok(Buffer { data })
    }

    /// Its elements.
    pub fn data(&self) -> DataRef<'a> {
        self.data
    }
}

fn empty(dtype: DType) -> DataRef<'static> {
    match dtype {
        DType::F32 => DataRef::F32(&[]),
        DType::F64 => DataRef::F64(&[]),
        DType::I32 => DataRef::I32(&[]),
        DType::I64 => DataRef::I64(&[]),
        DType::Bool => DataRef::Bool(&[]),
    }
}

/// A checked buffer weft writes.
pub struct BufferMut<'a> {
    data: DataMut<'a>,
}

impl<'a> BufferMut<'a> {
    /// `raw` as room for the elements of `t`, or why not.
    ///
    /// # Safety
    /// `raw.data` points at `raw.bytes` writable bytes, valid and used by no one else for `'a`.
    pub unsafe fn new(raw: &RawBuffer, t: &Tensor, what: &str) -> Result<BufferMut<'a>, Failure> {
        check(raw, t, what)?;
        let n = t.elements;
        if n == 0 {
            return Ok(BufferMut {
                data: empty_mut(t.dtype),
            });
        }
        let p = raw.data;
        // SAFETY: `p` is non-NULL, aligned to the element and holds `n` elements (checked
        // above), exclusively ours for `'a` (the caller's contract); any bit pattern is a valid
        // f32, f64, i32 or i64, and bool bytes are zeroed (valid `false`s) before they are
        // seen as bools.
        let data = unsafe {
            match t.dtype {
                DType::F32 => DataMut::F32(std::slice::from_raw_parts_mut(p.cast(), n)),
                DType::F64 => DataMut::F64(std::slice::from_raw_parts_mut(p.cast(), n)),
                DType::I32 => DataMut::I32(std::slice::from_raw_parts_mut(p.cast(), n)),
                DType::I64 => DataMut::I64(std::slice::from_raw_parts_mut(p.cast(), n)),
                DType::Bool => {
                    p.cast::<u8>().write_bytes(0, n);
                    DataMut::Bool(std::slice::from_raw_parts_mut(p.cast(), n))
                }
            }
        };
        Ok(BufferMut { data })
    }

    /// Its elements, to write.
    pub fn into_data(self) -> DataMut<'a> {
        self.data
    }
}

fn empty_mut(dtype: DType) -> DataMut<'static> {
    match dtype {
        DType::F32 => DataMut::F32(&mut []),
        DType::F64 => DataMut::F64(&mut []),
        DType::I32 => DataMut::I32(&mut []),
        DType::I64 => DataMut::I64(&mut []),
        DType::Bool => DataMut::Bool(&mut []),
    }
}
