//! Host element types that can be copied into and out of device storage.
//!
//! Guarantees: each implementation's in-memory layout is the buffer layout of its
//! [`ScalarType`] (`bool` is one byte, 0 or 1), and reading a `bool` accepts any byte (non-zero
//! is true), so memory written by a kernel can never produce an invalid `bool`.

use weft_ir::loop_ir::ScalarType;

mod sealed {
    pub trait Sealed {}
}

/// A host type with the layout of one buffer element type.
pub trait Element: Copy + sealed::Sealed + Send + Sync + 'static {
    /// The buffer element type.
    const DTYPE: ScalarType;
    /// Reads one element.
    ///
    /// # Safety
    /// `ptr` must be valid for reading `DTYPE.size_bytes()` bytes (no alignment needed).
    unsafe fn read_from(ptr: *const u8) -> Self;
    /// Writes one element.
    ///
    /// # Safety
    /// `ptr` must be valid for writing `DTYPE.size_bytes()` bytes (no alignment needed).
    unsafe fn write_to(self, ptr: *mut u8);
}

macro_rules! plain_element {
    ($t:ty, $dtype:expr) => {
        impl sealed::Sealed for $t {}
        impl Element for $t {
            const DTYPE: ScalarType = $dtype;
            unsafe fn read_from(ptr: *const u8) -> Self {
                // SAFETY: the caller guarantees `size_of::<$t>()` readable bytes; every bit
                // pattern is a valid `$t`.
                unsafe { ptr.cast::<$t>().read_unaligned() }
            }
            unsafe fn write_to(self, ptr: *mut u8) {
                // SAFETY: the caller guarantees `size_of::<$t>()` writable bytes.
                unsafe { ptr.cast::<$t>().write_unaligned(self) }
            }
        }
    };
}

plain_element!(f32, ScalarType::F32);
plain_element!(f64, ScalarType::F64);
plain_element!(i32, ScalarType::I32);
plain_element!(i64, ScalarType::I64);

impl sealed::Sealed for bool {}
impl Element for bool {
    const DTYPE: ScalarType = ScalarType::Bool;
    unsafe fn read_from(ptr: *const u8) -> Self {
        // SAFETY: the caller guarantees one readable byte; any byte is a valid `u8`.
        unsafe { ptr.read() != 0 }
    }
    unsafe fn write_to(self, ptr: *mut u8) {
        // SAFETY: the caller guarantees one writable byte.
        unsafe { ptr.write(u8::from(self)) }
    }
}
