//! weft for Python: the native module `weft._weft` under the `weft` package (python/weft/),
//! which gives it nGraph-python's names.
//!
//! Assumes: the Python layer passes node ids this module handed out for the same `Graph`,
//! and axes of that graph (both are checked: a foreign or unknown one is an error, never a
//! panic); arrays are NumPy arrays (anything else is refused with a `TypeError`).
//!
//! Guarantees: every weft error becomes an exception of `weft.errors` (its message weft's own,
//! naming the op, axis, tensor or input); nothing here panics on bad input. Inputs that are
//! C-contiguous arrays of the placeholder's dtype are read in place — borrowed for the call,
//! not copied (`Computation::call` reads `HostView`s of their memory); a non-contiguous or
//! misaligned array is copied once, a number or list converted to the placeholder's dtype, an
//! array of another dtype refused. Outputs are the arrays weft wrote, lent to NumPy without a
//! copy, their memory given back for later calls when NumPy drops them (`Spares`). The GIL is
//! released while a computation compiles and while it runs — but for calls whose last run took
//! under 20 µs, where giving it up and taking it back would cost more than the call — so
//! Python threads call computations concurrently.

// PyO3 and rust-numpy do the FFI (their macros allow what they emit); this crate's one unsafe
// block lends an output's memory to NumPy (outputs.rs).
#![deny(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use numpy::{
    PyArray, PyArrayMethods, PyReadonlyArrayDyn, PyReadwriteArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use weft::{ArrayData, AxisSlice, BinaryOp, CompareOp, HostView, NodeId, ReduceOp, SliceRange};
use weft::{Backend, DType, TensorInit};
use weft::{Op, UnaryOp};

mod computation;
mod errors;
mod graph;
mod onnx;
mod outputs;
mod transformer;

use computation::*;
use errors::*;
use graph::*;
use onnx::*;
use outputs::*;
use transformer::*;

/// The digits data set bundled with weft (1,797 8×8 images, pixels in [0, 1] as float32, and
/// their labels 0–9 as int64): `(images [1797, 64], labels [1797])`.
#[pyfunction]
fn digits(py: Python<'_>) -> PyResult<(Bound<'_, PyAny>, Bound<'_, PyAny>)> {
    let d = weft::datasets::digits().map_err(|e| to_py(py, e))?;
    let n = d.len();
    let images = PyArray::from_vec(py, d.images().to_vec())
        .reshape(vec![n, weft::datasets::DIGITS_PIXELS])?
        .into_any();
    Ok((
        images,
        PyArray::from_vec(py, d.labels().to_vec()).into_any(),
    ))
}

/// How many bytes this process has copied between host arrays and weft's buffers (inputs
/// and state in, outputs out): a call whose arrays are read and written in place adds none.
#[pyfunction]
fn host_copy_bytes() -> u64 {
    weft::host_copy_bytes()
}

/// The native part of the `weft` package.
#[pymodule]
fn _weft(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Graph>()?;
    m.add_class::<Axis>()?;
    m.add_class::<Transformer>()?;
    m.add_class::<Computation>()?;
    m.add_class::<OutputMemory>()?;
    m.add_class::<OnnxModel>()?;
    m.add_function(wrap_pyfunction!(onnx_load, m)?)?;
    m.add("ONNX_SUPPORTED_OPS", onnx_supported_ops())?;
    m.add("ONNX_OPSETS", onnx_opsets())?;
    m.add_function(wrap_pyfunction!(parse, m)?)?;
    m.add_function(wrap_pyfunction!(digits, m)?)?;
    m.add_function(wrap_pyfunction!(host_copy_bytes, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add(
        "DEFAULT_BINDING_CAPACITY",
        weft::per_binding::DEFAULT_BINDING_CAPACITY,
    )?;
    Ok(())
}
