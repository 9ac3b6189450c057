//! `Computation`: calls with NumPy arrays — inputs borrowed in place (or converted once, as
//! documented), outputs lent (`outputs`), the GIL released for calls that are not short.

use super::*;

/// What a computation expects of one input.
pub(crate) struct InputSpec {
    pub(crate) name: String,
    pub(crate) dtype: DType,
    pub(crate) axes: weft::Axes,
}

/// A compiled computation: call it with one array per placeholder.
#[pyclass(frozen, module = "weft._weft")]
pub(crate) struct Computation {
    pub(crate) computation: Arc<weft::Computation>,
    pub(crate) inputs: Vec<InputSpec>,
    /// How long the last call ran (ns; `u64::MAX` before the first), to decide whether the
    /// next releases the GIL.
    pub(crate) last_call_nanos: AtomicU64,
    /// Output memory given back by NumPy arrays that are gone, for the next calls; None when
    /// lengths are bound at call time (outputs' shapes vary).
    pub(crate) spares: Option<Arc<Spares>>,
}

/// A borrowed input: the array's read guard (it keeps NumPy from handing the memory to a
/// writer while weft reads it).
pub(crate) enum Borrowed<'py> {
    F32(PyReadonlyArrayDyn<'py, f32>),
    F64(PyReadonlyArrayDyn<'py, f64>),
    I32(PyReadonlyArrayDyn<'py, i32>),
    I64(PyReadonlyArrayDyn<'py, i64>),
    Bool(PyReadonlyArrayDyn<'py, bool>),
}

impl Borrowed<'_> {
    fn data(&self) -> Result<weft::DataRef<'_>, numpy::AsSliceError> {
        Ok(match self {
            Borrowed::F32(a) => weft::DataRef::F32(a.as_slice()?),
            Borrowed::F64(a) => weft::DataRef::F64(a.as_slice()?),
            Borrowed::I32(a) => weft::DataRef::I32(a.as_slice()?),
            Borrowed::I64(a) => weft::DataRef::I64(a.as_slice()?),
            Borrowed::Bool(a) => weft::DataRef::Bool(a.as_slice()?),
        })
    }
}

/// `x` as an array weft can read in place: a C-contiguous NumPy array as it is; another NumPy
/// array copied once into a C-contiguous one (its dtype kept: a wrong dtype is refused later,
/// never converted); anything else (numbers, lists) converted to the placeholder's dtype.
pub(crate) fn as_input_array<'py>(
    py: Python<'py>,
    spec: &InputSpec,
    x: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if x.is_none() {
        // NumPy would read None as NaN for a float placeholder.
        return Err(raise(
            py,
            "CallError",
            format!("no value given for placeholder `{}`", spec.name),
        ));
    }
    if let Ok(array) = x.cast::<PyUntypedArray>() {
        if array.is_c_contiguous() {
            return Ok(x);
        }
        return contiguous_copy(py, &x);
    }
    py.import("numpy")?
        .getattr("asarray")?
        .call1((&x, dtype_name(spec.dtype)))
        .map_err(|e| {
            raise(
                py,
                "DTypeError",
                format!(
                    "input `{}`: not convertible to a {} array: {e}",
                    spec.name,
                    dtype_name(spec.dtype)
                ),
            )
        })
}

/// `x` copied once into a C-contiguous, aligned array of its own dtype.
fn contiguous_copy<'py>(py: Python<'py>, x: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    py.import("numpy")?
        .getattr("require")?
        .call1((x, py.None(), "CA"))
}

pub(crate) fn borrow<'py>(
    py: Python<'py>,
    spec: &InputSpec,
    x: &Bound<'py, PyAny>,
) -> PyResult<Borrowed<'py>> {
    let array = x.cast::<PyUntypedArray>().map_err(|_| {
        raise(
            py,
            "DTypeError",
            format!(
                "input `{}`: expected a NumPy array, got {}",
                spec.name,
                x.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ),
        )
    })?;
    // Not left to weft's `InputDType`: a borrow needs the element type first, NumPy has dtypes
    // weft lacks (float16, complex, big-endian), and this message uses NumPy's dtype names.
    let wrong = || {
        let got = array
            .dtype()
            .str()
            .map(|s| s.to_string())
            .unwrap_or_default();
        raise(
            py,
            "DTypeError",
            format!(
                "input `{}` is {} but the placeholder is {}",
                spec.name,
                got,
                dtype_name(spec.dtype)
            ),
        )
    };
    // The dtype first; then the borrow, which fails only where an `out` array of the same
    // call, borrowed for writing, shares its memory.
    let shared = || {
        raise(
            py,
            "CallError",
            format!(
                "input `{}` shares memory with an out array of the call",
                spec.name
            ),
        )
    };
    fn read<'py, T: numpy::Element>(
        x: &Bound<'py, PyAny>,
        wrong: impl Fn() -> PyErr,
        shared: impl Fn() -> PyErr,
    ) -> PyResult<PyReadonlyArrayDyn<'py, T>> {
        let array = x.cast::<numpy::PyArrayDyn<T>>().map_err(|_| wrong())?;
        array.try_readonly().map_err(|_| shared())
    }
    let b = match spec.dtype {
        DType::F32 => Borrowed::F32(read(x, wrong, shared)?),
        DType::F64 => Borrowed::F64(read(x, wrong, shared)?),
        DType::I32 => Borrowed::I32(read(x, wrong, shared)?),
        DType::I64 => Borrowed::I64(read(x, wrong, shared)?),
        DType::Bool => Borrowed::Bool(read(x, wrong, shared)?),
    };
    Ok(b)
}

/// A weft output as a NumPy array over the same memory (no copy).
pub(crate) fn to_numpy(py: Python<'_>, array: weft::HostArray) -> PyResult<Bound<'_, PyAny>> {
    let (_, shape, data) = array.into_parts();
    Ok(match data {
        ArrayData::F32(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::F64(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::I32(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::I64(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
        ArrayData::Bool(v) => PyArray::from_vec(py, v).reshape(shape)?.into_any(),
    })
}

impl Computation {
    /// Calls shorter than this (the last one's time) keep the GIL.
    const HOLD_GIL_BELOW_NANOS: u64 = 20_000;

    /// `computation` taking `inputs`; outputs reused through spares unless their shapes vary
    /// (lengths bound at call time).
    pub(crate) fn new(computation: weft::Computation, inputs: Vec<InputSpec>) -> Computation {
        let spares = computation.output_arrays().is_ok().then(|| {
            Arc::new(Spares {
                free: Mutex::new(vec![Vec::new(); computation.outputs().len()]),
            })
        });
        Computation {
            computation: Arc::new(computation),
            inputs,
            last_call_nanos: AtomicU64::new(u64::MAX),
            spares,
        }
    }

    /// Runs the computation on `inputs`: its outputs, written into spares where there are.
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<weft::HostArray>> {
        match &self.spares {
            None => self.with_inputs(py, inputs, |c, views| c.call(views)),
            Some(spares) => self.with_inputs(py, inputs, |c, views| {
                let mut outputs = spares.take(c)?;
                c.call_into(views, &mut outputs)?;
                Ok(outputs)
            }),
        }
    }

    /// [`Computation::call_into`] with fixed output shapes: the given arrays borrowed mutably
    /// (checked: dtype, shape, C-contiguous) and written in place; a spare set for the rest.
    fn call_into_in_place<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        out: &[Option<Bound<'py, PyAny>>],
        spares: &Spares,
    ) -> PyResult<()> {
        let graph = self.computation.graph();
        let outputs = self.computation.outputs();
        let shapes = outputs
            .iter()
            .map(|o| graph.shape_of(&graph.node(*o).axes))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| to_py(py, e.into()))?;
        let mut lent = Vec::with_capacity(out.len());
        for (i, (target, o)) in out.iter().zip(outputs).enumerate() {
            lent.push(match target {
                Some(t) => Some(LentOutput::of(py, i, graph.node(*o).dtype, &shapes[i], t)?),
                None => None,
            });
        }
        // Arrays of weft's own only where an output is not wanted.
        let mut own = if lent.iter().any(Option::is_none) {
            spares.take(&self.computation).map_err(|e| to_py(py, e))?
        } else {
            Vec::new()
        };
        let mut spare = own.iter_mut();
        let mut views = Vec::with_capacity(out.len());
        for (i, lent) in lent.iter_mut().enumerate() {
            let array = spare.next();
            views.push(match (lent, array) {
                (Some(l), _) => {
                    let axes = &graph.node(outputs[i]).axes;
                    let data = l.data_mut(py, i)?;
                    weft::HostViewMut::of_data(axes, &shapes[i], data)
                        .map_err(|e| raise(py, "CallError", format!("out[{i}]: {e}")))?
                }
                // `own` holds every output's array whenever one is not wanted.
                (None, array) => array
                    .ok_or_else(|| raise(py, "CallError", format!("out[{i}]: no array to write")))?
                    .view_mut(),
            });
        }
        let result = self.with_inputs(py, inputs, |c, ins| c.call_into_views(ins, &mut views));
        drop(views);
        for (i, array) in own.into_iter().enumerate() {
            spares.give(i, array);
        }
        result
    }

    /// [`Computation::call_into`] with axes bound at call time: weft's own arrays, each
    /// result copied into its `out` array once.
    fn call_into_copying<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        out: &[Option<Bound<'py, PyAny>>],
    ) -> PyResult<()> {
        let results = self.run(py, inputs)?;
        results
            .iter()
            .zip(out)
            .enumerate()
            .filter_map(|(i, (result, target))| Some((i, result, target.as_ref()?)))
            .try_for_each(|(i, result, target)| write_into(py, i, result, target))
    }

    /// Borrows `inputs` (checked against the placeholders) and runs `f` on their views, the
    /// GIL released unless the last call was shorter than [`Computation::HOLD_GIL_BELOW_NANOS`].
    fn with_inputs<'py, R: Send>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        f: impl FnOnce(&weft::Computation, &[HostView<'_>]) -> weft::Result<R> + Send,
    ) -> PyResult<R> {
        let items: Vec<Bound<'py, PyAny>> = if let Ok(t) = inputs.cast::<PyTuple>() {
            t.iter().collect()
        } else if let Ok(l) = inputs.cast::<PyList>() {
            l.iter().collect()
        } else {
            return Err(PyTypeError::new_err("inputs: a list or tuple of arrays"));
        };
        // Checked here, not left to `weft::Computation::call`: each item is converted by its
        // placeholder's spec first. The error is weft's own variant, mapped as every other.
        if items.len() != self.inputs.len() {
            let names: Vec<&str> = self.inputs.iter().map(|s| s.name.as_str()).collect();
            let e = weft::Error::InputCount {
                expected: self.inputs.len(),
                got: items.len(),
                placeholders: names.join(", "),
            };
            return Err(to_py(py, e));
        }
        let items = items
            .into_iter()
            .zip(&self.inputs)
            .map(|(x, spec)| as_input_array(py, spec, x))
            .collect::<PyResult<Vec<_>>>()?;
        let borrowed = items
            .iter()
            .zip(&self.inputs)
            .map(|(x, spec)| {
                let b = borrow(py, spec, x)?;
                if b.data().is_ok() {
                    return Ok(b);
                }
                // C-contiguous but misaligned (a view at an odd byte offset): one aligned copy.
                let aligned = contiguous_copy(py, x)?;
                borrow(py, spec, &aligned)
            })
            .collect::<PyResult<Vec<_>>>()?;
        let shapes: Vec<Vec<usize>> = items
            .iter()
            .map(|x| x.cast::<PyUntypedArray>().map(|a| a.shape().to_vec()))
            .collect::<Result<_, _>>()?;
        let mut views = Vec::with_capacity(borrowed.len());
        for ((b, spec), shape) in borrowed.iter().zip(&self.inputs).zip(&shapes) {
            let data = b
                .data()
                .map_err(|e| raise(py, "CallError", format!("input `{}`: {e}", spec.name)))?;
            let view = HostView::of_data(&spec.axes, shape, data)
                .map_err(|e| raise(py, "CallError", format!("input `{}`: {e}", spec.name)))?;
            views.push(view);
        }
        let computation = &*self.computation;
        let timed = || {
            let start = std::time::Instant::now();
            let result = f(computation, &views);
            let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            self.last_call_nanos.store(nanos, Ordering::Relaxed);
            result
        };
        // Giving the GIL up and taking it back costs more than a call of a few microseconds
        // takes, and other threads' calls cannot overlap such a call anyway: those run with
        // it held. Any call that took longer last time releases it.
        let result = if self.last_call_nanos.load(Ordering::Relaxed) < Self::HOLD_GIL_BELOW_NANOS {
            timed()
        } else {
            py.detach(timed)
        };
        result.map_err(|e| to_py(py, e))
    }
}

#[pymethods]
impl Computation {
    /// Runs the computation on `inputs` (one C-contiguous array per placeholder, each of its
    /// dtype, in the placeholders' axes order), returning one new array per output.
    fn call<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let outputs = self.run(py, inputs)?;
        match &self.spares {
            None => outputs.into_iter().map(|o| to_numpy(py, o)).collect(),
            Some(spares) => outputs
                .into_iter()
                .enumerate()
                .map(|(i, o)| lend(py, o, spares, i))
                .collect(),
        }
    }

    /// Runs the computation and writes each output into the matching array of `out`
    /// (C-contiguous, of the output's dtype and shape; None: not wanted). Where the outputs'
    /// shapes are fixed, the kernels write the given arrays in place (an output not wanted goes
    /// to a spare array); with axes bound at call time, weft writes into its own arrays and
    /// each result is copied into `out` once.
    fn call_into<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
        out: Vec<Option<Bound<'py, PyAny>>>,
    ) -> PyResult<()> {
        if out.len() != self.computation.outputs().len() {
            return Err(raise(
                py,
                "CallError",
                format!(
                    "out: {} arrays given for {} outputs",
                    out.len(),
                    self.computation.outputs().len()
                ),
            ));
        }
        match &self.spares {
            Some(spares) => self.call_into_in_place(py, inputs, &out, spares),
            None => self.call_into_copying(py, inputs, &out),
        }
    }

    /// The number of inputs it takes.
    #[getter]
    fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// The number of outputs it returns.
    #[getter]
    fn output_count(&self) -> usize {
        self.computation.outputs().len()
    }

    /// How many times it has compiled: once, or with lengths bound at call time once per
    /// binding first seen (again for one evicted and seen again).
    #[getter]
    fn compilations(&self) -> usize {
        self.computation.compilations()
    }

    /// How many bindings of call-time lengths it keeps compiled (at least 1): a new binding
    /// beyond them evicts the least recently used one.
    fn set_binding_capacity(&self, capacity: usize) {
        self.computation.set_binding_capacity(capacity);
    }

    /// The program the runtime runs, in its text form (storages, steps, how each array
    /// moves), read from this computation; `None` when it does not run on the JIT or binds
    /// lengths at call time.
    fn plan(&self) -> Option<String> {
        self.computation.plan().map(ToString::to_string)
    }

    /// `weft explain` of this computation, read from it (never compiled again); `None` as
    /// for `plan`.
    fn explain(&self) -> Option<String> {
        self.computation.explain()
    }

    /// Every IR stage of this computation (`weft compile --dump-dir`): `(file name, stage,
    /// text)` in pipeline order, read from it (the listings compile each kernel once more, for
    /// its disassembly); `None` as for `plan`.
    fn dumps(&self, py: Python<'_>) -> PyResult<Option<Vec<(String, String, String)>>> {
        let Some(exe) = self.computation.jit() else {
            return Ok(None);
        };
        let files = weft::compiler::dump::dump_stages(&exe.stages(exe.native().graph()))
            .map_err(|e| to_py(py, weft::Error::Compile(e.into())))?;
        Ok(Some(
            files
                .into_iter()
                .map(|f| (f.name, f.stage, f.contents))
                .collect(),
        ))
    }
}

/// Copies output `i`'s `result` into the caller's array `target`.
pub(crate) fn write_into(
    py: Python<'_>,
    i: usize,
    result: &weft::HostArray,
    target: &Bound<'_, PyAny>,
) -> PyResult<()> {
    fn copy<T: numpy::Element + weft::Element>(
        py: Python<'_>,
        i: usize,
        src: &[T],
        shape: &[usize],
        target: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let mut t: PyReadwriteArrayDyn<'_, T> = target.extract().map_err(|_| {
            raise(
                py,
                "DTypeError",
                format!(
                    "out[{i}] is not a writeable array of the output's dtype {}",
                    dtype_name(T::DTYPE)
                ),
            )
        })?;
        if t.shape() != shape {
            return Err(raise(
                py,
                "CallError",
                format!(
                    "out[{i}] has shape {:?} but the output has {:?}",
                    t.shape(),
                    shape
                ),
            ));
        }
        let dst = t
            .as_slice_mut()
            .map_err(|_| raise(py, "CallError", format!("out[{i}] is not C-contiguous")))?;
        dst.copy_from_slice(src);
        Ok(())
    }
    let shape = result.shape();
    match result.data() {
        ArrayData::F32(v) => copy(py, i, v, shape, target),
        ArrayData::F64(v) => copy(py, i, v, shape, target),
        ArrayData::I32(v) => copy(py, i, v, shape, target),
        ArrayData::I64(v) => copy(py, i, v, shape, target),
        ArrayData::Bool(v) => copy(py, i, v, shape, target),
    }
}

/// An `out` array borrowed for writing (rust-numpy's borrow tracking refuses one that overlaps
/// another borrowed array, such as an input).
enum LentOutput<'py> {
    F32(PyReadwriteArrayDyn<'py, f32>),
    F64(PyReadwriteArrayDyn<'py, f64>),
    I32(PyReadwriteArrayDyn<'py, i32>),
    I64(PyReadwriteArrayDyn<'py, i64>),
    Bool(PyReadwriteArrayDyn<'py, bool>),
}

impl<'py> LentOutput<'py> {
    /// `target` borrowed as output `i`, of `dtype` and shape `expected`, or an error naming
    /// `out[i]`.
    fn of(
        py: Python<'py>,
        i: usize,
        dtype: DType,
        expected: &[usize],
        target: &Bound<'py, PyAny>,
    ) -> PyResult<LentOutput<'py>> {
        let wrong = || {
            raise(
                py,
                "DTypeError",
                format!(
                    "out[{i}] is not a writeable array of the output's dtype {}",
                    dtype_name(dtype)
                ),
            )
        };
        // The borrow fails for an array NumPy marks read-only, or one sharing memory with an
        // array this call has borrowed for writing already.
        let shared = || {
            let writeable = target
                .getattr("flags")
                .and_then(|f| f.getattr("writeable"))
                .and_then(|w| w.extract::<bool>())
                .unwrap_or(true);
            let why = if writeable {
                "shares memory with another out array of the call"
            } else {
                "is not writeable"
            };
            raise(py, "CallError", format!("out[{i}] {why}"))
        };
        fn lend<'py, T: numpy::Element>(
            target: &Bound<'py, PyAny>,
            wrong: impl Fn() -> PyErr,
            shared: impl Fn() -> PyErr,
        ) -> PyResult<PyReadwriteArrayDyn<'py, T>> {
            let array = target.cast::<numpy::PyArrayDyn<T>>().map_err(|_| wrong())?;
            array.try_readwrite().map_err(|_| shared())
        }
        let lent = match dtype {
            DType::F32 => LentOutput::F32(lend(target, wrong, shared)?),
            DType::F64 => LentOutput::F64(lend(target, wrong, shared)?),
            DType::I32 => LentOutput::I32(lend(target, wrong, shared)?),
            DType::I64 => LentOutput::I64(lend(target, wrong, shared)?),
            DType::Bool => LentOutput::Bool(lend(target, wrong, shared)?),
        };
        let shape = match &lent {
            LentOutput::F32(a) => a.shape().to_vec(),
            LentOutput::F64(a) => a.shape().to_vec(),
            LentOutput::I32(a) => a.shape().to_vec(),
            LentOutput::I64(a) => a.shape().to_vec(),
            LentOutput::Bool(a) => a.shape().to_vec(),
        };
        if shape != expected {
            return Err(raise(
                py,
                "CallError",
                format!("out[{i}] has shape {shape:?} but the output has {expected:?}"),
            ));
        }
        Ok(lent)
    }

    /// Its elements, to write; an error naming `out[i]` unless C-contiguous.
    fn data_mut(&mut self, py: Python<'_>, i: usize) -> PyResult<weft::DataMut<'_>> {
        let not_contiguous = |_| raise(py, "CallError", format!("out[{i}] is not C-contiguous"));
        Ok(match self {
            LentOutput::F32(a) => weft::DataMut::F32(a.as_slice_mut().map_err(not_contiguous)?),
            LentOutput::F64(a) => weft::DataMut::F64(a.as_slice_mut().map_err(not_contiguous)?),
            LentOutput::I32(a) => weft::DataMut::I32(a.as_slice_mut().map_err(not_contiguous)?),
            LentOutput::I64(a) => weft::DataMut::I64(a.as_slice_mut().map_err(not_contiguous)?),
            LentOutput::Bool(a) => weft::DataMut::Bool(a.as_slice_mut().map_err(not_contiguous)?),
        })
    }
}
