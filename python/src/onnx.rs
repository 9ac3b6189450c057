//! ONNX models for Python (`weft.onnx`): a model file or its bytes imported by `weft::onnx`,
//! compiled by a transformer of its graph, and called through [`Computation`] — the same
//! calling path as every other computation (inputs borrowed in place, outputs lent, the GIL
//! released), its placeholders named after the model's inputs.

use std::path::PathBuf;

use pyo3::types::PyBytes;

use super::*;

/// An imported and compiled ONNX model: its computation (one input per model input,
/// initializers excluded, one output per model output, in ONNX's order and dim order) and
/// what Python needs to name them.
#[pyclass(frozen, module = "weft._weft")]
pub(crate) struct OnnxModel {
    computation: Py<Computation>,
    input_names: Vec<String>,
    output_names: Vec<String>,
    /// The imported graph in weft's text form.
    text: String,
    opset: i64,
}

#[pymethods]
impl OnnxModel {
    /// The compiled computation (call it with one array per input, in `input_names`' order).
    #[getter]
    fn computation(&self, py: Python<'_>) -> Py<Computation> {
        self.computation.clone_ref(py)
    }

    /// The model's inputs (initializers excluded), in order.
    #[getter]
    fn input_names(&self) -> Vec<String> {
        self.input_names.clone()
    }

    /// The model's outputs, in order.
    #[getter]
    fn output_names(&self) -> Vec<String> {
        self.output_names.clone()
    }

    /// The default-domain opset the model imports.
    #[getter]
    fn opset(&self) -> i64 {
        self.opset
    }

    /// The imported graph in weft's text form (`weft::ir::text::print`).
    fn graph_text(&self) -> String {
        self.text.clone()
    }
}

/// Imports the ONNX model `source` (its bytes, or the path of its file: a model with external
/// data needs the path, its data read from beside it) and compiles it for `backend` (`jit`,
/// `unfused`, `interpreter`; `threads`: the JIT's thread count), the GIL released meanwhile.
/// A model weft cannot read is `weft.errors.OnnxImportError`, naming the node, op and opset.
/// `known_inputs`: `(name, shape, dtype name, flat values)` per input whose value is fixed at
/// import (it becomes a constant: `weft::onnx::ImportOptions::known_inputs`).
#[pyfunction]
#[pyo3(signature = (source, backend="jit", threads=None, known_inputs=Vec::new()))]
pub(crate) fn onnx_load(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    backend: &str,
    threads: Option<usize>,
    known_inputs: Vec<(String, Vec<usize>, String, Bound<'_, PyAny>)>,
) -> PyResult<OnnxModel> {
    let options = weft::onnx::ImportOptions {
        known_inputs: known_inputs
            .into_iter()
            .map(|(name, dims, dtype, values)| {
                let data = match dtype.as_str() {
                    "float32" => weft::ArrayData::F32(values.extract()?),
                    "float64" => weft::ArrayData::F64(values.extract()?),
                    "int32" => weft::ArrayData::I32(values.extract()?),
                    "int64" => weft::ArrayData::I64(values.extract()?),
                    "bool" => weft::ArrayData::Bool(values.extract()?),
                    other => {
                        return Err(PyTypeError::new_err(format!(
                            "known input `{name}`: dtype {other} (weft has float32, float64, int32, int64 and bool)"
                        )))
                    }
                };
                Ok(weft::onnx::KnownInput { name, dims, data })
            })
            .collect::<PyResult<_>>()?,
    };
    let backend = backend_of(backend)?;
    if threads == Some(0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "threads must be at least 1, not 0",
        ));
    }
    if threads.is_some() && backend == Backend::Interpreter {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "threads: the interpreter runs on one thread",
        ));
    }
    let imported = if let Ok(bytes) = source.cast::<PyBytes>() {
        let bytes = bytes.as_bytes();
        py.detach(|| weft::onnx::import_bytes_with(bytes, &options))
    } else {
        let path: PathBuf = source.extract().map_err(|_| {
            PyTypeError::new_err("source: the bytes of an ONNX model or the path of its file")
        })?;
        py.detach(|| weft::onnx::import_file_with(path, &options))
    }
    .map_err(|e| to_py(py, weft::Error::Onnx(e)))?;
    let weft::onnx::Imported {
        graph,
        inputs,
        outputs,
        opset,
    } = imported;
    let text = weft::ir::text::print(&graph);
    let specs: Vec<InputSpec> = inputs
        .iter()
        .map(|(name, id)| {
            let node = graph.node(*id);
            InputSpec {
                name: name.clone(),
                dtype: node.dtype,
                axes: node.axes.clone(),
            }
        })
        .collect();
    let placeholders: Vec<NodeId> = inputs.iter().map(|(_, id)| *id).collect();
    let outs: Vec<NodeId> = outputs.iter().map(|(_, id)| *id).collect();
    let options = weft::JitOptions {
        threads,
        ..match backend {
            Backend::JitUnfused => weft::JitOptions::unfused(),
            _ => weft::JitOptions::default(),
        }
    };
    // Kept for naming ops in a compile error: the transformer takes the graph.
    let named = graph.clone();
    let computation = py
        .detach(move || {
            let t = match backend {
                Backend::Interpreter => weft::Transformer::new(graph, backend)?,
                _ => weft::Transformer::with_jit_options(graph, options)?,
            };
            t.computation(&outs, &placeholders)
        })
        .map_err(|e| to_py_in(py, &named, e))?;
    Ok(OnnxModel {
        computation: Py::new(py, Computation::new(computation, specs))?,
        input_names: inputs.into_iter().map(|(name, _)| name).collect(),
        output_names: outputs.into_iter().map(|(name, _)| name).collect(),
        text,
        opset,
    })
}

/// Every ONNX op weft imports (default domain), sorted.
pub(crate) fn onnx_supported_ops() -> Vec<&'static str> {
    weft::onnx::SUPPORTED.to_vec()
}

/// The opsets weft reads: `(first, last)`.
pub(crate) fn onnx_opsets() -> (i64, i64) {
    (*weft::onnx::OPSETS.start(), *weft::onnx::OPSETS.end())
}
