//! Output memory lent to NumPy and given back: `Spares`, `OutputMemory`, `lend`.

use super::*;

/// Output arrays a computation has handed out and NumPy has given back, per output, at most
/// [`Spares::KEEP`] each: a call writes into one of them in place (`call_into`) instead of into
/// fresh memory, which the OS must zero page by page on its first touch — as long as a call
/// takes for a 64 MiB output. What a host loop that keeps its output arrays gets from Rust.
pub(crate) struct Spares {
    pub(crate) free: Mutex<Vec<Vec<weft::HostArray>>>,
}

impl Spares {
    const KEEP: usize = 2;

    /// One array per output: spares where there are, else new ones from `computation`.
    pub(crate) fn take(
        &self,
        computation: &weft::Computation,
    ) -> weft::Result<Vec<weft::HostArray>> {
        if let Ok(mut free) = self.free.lock() {
            if free.iter().all(|spares| !spares.is_empty()) {
                return Ok(free.iter_mut().filter_map(Vec::pop).collect());
            }
        }
        computation.output_arrays()
    }

    pub(crate) fn give(&self, output: usize, array: weft::HostArray) {
        if let Ok(mut free) = self.free.lock() {
            if let Some(list) = free.get_mut(output) {
                if list.len() < Self::KEEP {
                    list.push(array);
                }
            }
        }
    }
}

/// The memory under one output array NumPy holds: returned to its computation's spares when
/// NumPy drops the array.
#[pyclass(module = "weft._weft")]
pub(crate) struct OutputMemory {
    pub(crate) array: Option<weft::HostArray>,
    pub(crate) spares: Arc<Spares>,
    pub(crate) output: usize,
}

impl Drop for OutputMemory {
    fn drop(&mut self) {
        if let Some(array) = self.array.take() {
            self.spares.give(self.output, array);
        }
    }
}

/// `array` as a NumPy array over its own memory, which goes back to `spares` afterwards.
pub(crate) fn lend<'py>(
    py: Python<'py>,
    array: weft::HostArray,
    spares: &Arc<Spares>,
    output: usize,
) -> PyResult<Bound<'py, PyAny>> {
    fn view<'py, T: numpy::Element + weft::Element>(
        array: &weft::HostArray,
        owner: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let data = array
            .as_slice::<T>()
            .map_err(|e| PyTypeError::new_err(e.to_string()))?;
        let view = numpy::ndarray::ArrayViewD::from_shape(array.shape(), data)
            .map_err(|e| PyTypeError::new_err(e.to_string()))?;
        // SAFETY: `owner` (an `OutputMemory`) owns `array` and becomes the NumPy array's base
        // object, so it outlives the array; the `HostArray` is never touched again while it
        // lives there (no reallocation: its data only moves, with its heap buffer in place,
        // back to the spares when `owner` is dropped, after NumPy has dropped the array).
        #[allow(unsafe_code)]
        let lent = unsafe { PyArray::borrow_from_array(&view, owner) };
        Ok(lent.into_any())
    }
    let dtype = array.dtype();
    let owner = Bound::new(
        py,
        OutputMemory {
            array: Some(array),
            spares: Arc::clone(spares),
            output,
        },
    )?;
    let held = owner.borrow();
    let array = held
        .array
        .as_ref()
        .ok_or_else(|| PyTypeError::new_err("output memory gone"))?;
    let any = owner.clone().into_any();
    match dtype {
        DType::F32 => view::<f32>(array, any),
        DType::F64 => view::<f64>(array, any),
        DType::I32 => view::<i32>(array, any),
        DType::I64 => view::<i64>(array, any),
        DType::Bool => view::<bool>(array, any),
    }
}
