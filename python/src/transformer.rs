//! `Transformer`: the part of a graph its computations reach, compiled (the GIL released),
//! and their shared state.

use super::*;

// ---- transformers and computations -------------------------------------------------------

pub(crate) fn backend_of(name: &str) -> PyResult<Backend> {
    Ok(match name {
        "jit" | "cpu" => Backend::Jit,
        "unfused" | "jit-unfused" => Backend::JitUnfused,
        "interpreter" | "interp" => Backend::Interpreter,
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "no backend `{other}` (jit, unfused, interpreter)"
            )))
        }
    })
}

/// A graph as it was when the transformer was made — the part of it its computations need —
/// compiled into computations that share its variables.
#[pyclass(frozen, module = "weft._weft")]
pub(crate) struct Transformer {
    pub(crate) transformer: Arc<weft::Transformer>,
    /// The Python graph's op ids → the transformer graph's (None: not part of it).
    pub(crate) ids: Vec<Option<NodeId>>,
    /// The JIT's options (threads, fusion), for `explain` and `dumps`.
    pub(crate) options: weft::JitOptions,
}

/// The ops of `g` that `roots` reach through their operands, in a graph of their own with
/// `g`'s axis table (names kept), and the map from `g`'s ids to its ids: what a transformer
/// compiles, so an op it does not need — an unbound placeholder, a tensor past the memory
/// budget, built for another model in the same module-level graph — cannot stop it.
pub(crate) fn reachable_part(
    g: &weft::Graph,
    roots: &[NodeId],
) -> Result<(weft::Graph, Vec<Option<NodeId>>), String> {
    // The last root not in the graph is named, as the depth-first walk this replaced did.
    if let Some(missing) = roots.iter().rev().find(|r| g.get(**r).is_none()) {
        return Err(format!("no op #{} in this graph", missing.as_u32()));
    }
    let (part, ids) = weft::compiler::passes::rebuild::restricted(g, &g.ancestors(roots))
        .map_err(|e| e.to_string())?;
    Ok((part, ids.into_vec()))
}

#[pymethods]
impl Transformer {
    /// A transformer for `backend` over the part of `graph` that `roots` (op ids) need;
    /// `threads`: the JIT's thread count (default: the machine's cores).
    #[new]
    #[pyo3(signature = (graph, roots, backend="jit", threads=None))]
    fn new(
        py: Python<'_>,
        graph: &Graph,
        roots: Vec<u32>,
        backend: &str,
        threads: Option<usize>,
    ) -> PyResult<Transformer> {
        let backend = backend_of(backend)?;
        let roots: Vec<NodeId> = roots.into_iter().map(NodeId::from_u32).collect();
        let (part, ids) = {
            let g = lock(py, &graph.graph)?;
            reachable_part(&g, &roots).map_err(|e| raise(py, "GraphError", e))?
        };
        let options = weft::JitOptions {
            threads,
            ..match backend {
                Backend::JitUnfused => weft::JitOptions::unfused(),
                _ => weft::JitOptions::default(),
            }
        };
        let t = match backend {
            Backend::Interpreter if threads.is_some() => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "threads: the interpreter runs on one thread",
                ))
            }
            _ if threads == Some(0) => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "threads must be at least 1, not 0",
                ))
            }
            Backend::Interpreter => py.detach(|| weft::Transformer::new(part, backend)),
            _ => {
                let options = options.clone();
                py.detach(move || weft::Transformer::with_jit_options(part, options))
            }
        };
        Ok(Transformer {
            transformer: Arc::new(t.map_err(|e| to_py(py, e))?),
            ids,
            options,
        })
    }

    /// Whether op `node` is part of the graph this transformer compiles.
    fn has(&self, node: u32) -> bool {
        self.ids.get(node as usize).is_some_and(Option::is_some)
    }

    /// The ops of the Python graph this transformer holds state for (variables and
    /// persistent tensors), by their Python graph ids.
    fn state_ops(&self) -> Vec<u32> {
        let g = self.transformer.graph();
        self.ids
            .iter()
            .enumerate()
            .filter_map(|(i, id)| {
                let stateful = matches!(
                    g.node((*id)?).op,
                    Op::Tensor {
                        kind: weft::TensorKind::Variable | weft::TensorKind::PersistentTensor,
                        ..
                    }
                );
                stateful.then_some(i as u32)
            })
            .collect()
    }

    /// Compiles the computation of `outputs` given `placeholders` (GIL released meanwhile).
    fn computation(
        &self,
        py: Python<'_>,
        outputs: Vec<u32>,
        placeholders: Vec<u32>,
    ) -> PyResult<Computation> {
        let outs = self.ids_of(py, &outputs)?;
        let ins = self.ids_of(py, &placeholders)?;
        let graph = self.transformer.graph();
        let inputs = ins
            .iter()
            .zip(&placeholders)
            .map(|(&id, python_id)| {
                let node = graph.node(id);
                let name = node.name.clone().unwrap_or_else(|| format!("#{python_id}"));
                InputSpec {
                    name,
                    dtype: node.dtype,
                    axes: node.axes.clone(),
                }
            })
            .collect();
        let t = Arc::clone(&self.transformer);
        let computation = py
            .detach(move || t.computation(&outs, &ins))
            .map_err(|e| to_py_in(py, self.transformer.graph(), e))?;
        Ok(Computation::new(computation, inputs))
    }

    /// The current value of a variable or persistent tensor, as a new array.
    fn value_of<'py>(&self, py: Python<'py>, node: u32) -> PyResult<Bound<'py, PyAny>> {
        let id = self.ids_of(py, &[node])?[0];
        let t = Arc::clone(&self.transformer);
        let value = py
            .detach(move || t.value_of(id))
            .map_err(|e| to_py(py, e))?;
        to_numpy(py, value)
    }

    /// Sets a variable's or persistent tensor's value (an array in its axes' order).
    fn set_value(&self, py: Python<'_>, node: u32, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let id = self.ids_of(py, &[node])?[0];
        let n = self.transformer.graph().node(id);
        let data = array_data(py, value, n.dtype)?;
        let shape = value.cast::<PyUntypedArray>()?.shape().to_vec();
        let array =
            weft::HostArray::new(n.axes.clone(), shape, data).map_err(|e| to_py(py, e.into()))?;
        self.transformer
            .set_value(id, &array)
            .map_err(|e| to_py(py, e))
    }

    /// What the compiler did with the computation of `outputs` given `placeholders`: the
    /// target machine, fused kernels, their loops and the cost model's figures
    /// (`weft explain`).
    fn explain(
        &self,
        py: Python<'_>,
        outputs: Vec<u32>,
        placeholders: Vec<u32>,
    ) -> PyResult<String> {
        let exe = self.executable(py, &outputs, &placeholders)?;
        Ok(weft::compiler::explain::explain(&exe))
    }

    /// Every IR stage of the computation of `outputs` given `placeholders` (`weft compile
    /// --dump-dir`): `(file name, stage, text)` in pipeline order.
    fn dumps(
        &self,
        py: Python<'_>,
        outputs: Vec<u32>,
        placeholders: Vec<u32>,
    ) -> PyResult<Vec<(String, String, String)>> {
        let exe = self.executable(py, &outputs, &placeholders)?;
        let files = weft::compiler::dump::dump_stages(&exe.stages(self.transformer.graph()))
            .map_err(|e| to_py(py, e.into()))?;
        Ok(files
            .into_iter()
            .map(|f| (f.name, f.stage, f.contents))
            .collect())
    }
}

impl Transformer {
    /// The transformer graph's ids of the Python graph's ops `ids`.
    fn ids_of(&self, py: Python<'_>, ids: &[u32]) -> PyResult<Vec<NodeId>> {
        ids.iter()
            .map(|&i| {
                self.ids.get(i as usize).copied().flatten().ok_or_else(|| {
                    raise(
                        py,
                        "GraphError",
                        format!("op #{i} is not part of this transformer's graph (made after it, or needed by none of its computations)"),
                    )
                })
            })
            .collect()
    }

    /// The JIT's executable of `outputs` given `placeholders`, compiled with the GIL released.
    fn executable(
        &self,
        py: Python<'_>,
        outputs: &[u32],
        placeholders: &[u32],
    ) -> PyResult<weft::compiler::JitExecutable> {
        let graph = Arc::new(self.transformer.graph().clone());
        let outs = self.ids_of(py, outputs)?;
        let ins = self.ids_of(py, placeholders)?;
        let options = self.options.clone();
        py.detach(move || weft::compiler::JitExecutable::new(graph, &outs, &ins, &options))
            .map_err(|e| to_py(py, weft::Error::Compile(e)))
    }
}
