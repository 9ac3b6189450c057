//! The objects behind weft.h's handles: a [`Context`] (options) and a [`Model`] (a compiled
//! computation of a loaded graph, its state, and what its tensors are, kept as C strings), in
//! safe Rust; `lib.rs` turns pointers into these.
//!
//! Assumes: the buffers handed to [`Model::run`] and the variable accessors were checked by
//! [`Buffer`]'s constructors (length, alignment, bool values).
//! Guarantees: a model's tensors are its graph's placeholders (in declaration order), outputs
//! and stateful tensors (in node order), each with every length bound; a run reads its inputs
//! in place and writes its outputs into the caller's buffers (docs/c-api.md).

use std::ffi::{c_char, CString};
use std::path::Path;

use weft_api::cli::Binding;
use weft_api::ir::{ArrayData, Axes, DataRef, HostArray, HostView, HostViewMut, NodeId};
use weft_api::{Backend, Computation, DType, Error, JitOptions, Transformer};

use crate::buffer::{Buffer, BufferMut};
use crate::status::{Failure, Status};

/// `weft_context`: the options of the models it loads.
pub struct Context {
    pub options: JitOptions,
}

impl Context {
    /// A context for `threads` threads (0: the default) and a budget of `memory_budget` bytes
    /// (0: the default).
    pub fn new(threads: usize, memory_budget: u64) -> Result<Context, Failure> {
        let max = weft_api::runtime::MAX_THREADS;
        if threads > max {
            return Err(Failure::argument(format!(
                "weft_context_create: {threads} threads; at most {max}"
            )));
        }
        let mut options = JitOptions::default();
        if threads > 0 {
            options.threads = Some(threads);
        }
        if memory_budget > 0 {
            options.max_bytes = Some(memory_budget);
        }
        Ok(Context { options })
    }
}

/// The axis names of a tensor as C strings, and an array of pointers to them.
struct AxisNames {
    _names: Vec<CString>,
    pointers: Vec<*const c_char>,
}

// SAFETY: `pointers` point into `_names`' heap buffers, which live and stay unchanged as long as
// the struct (a CString's buffer does not move with it); nothing writes through them.
unsafe impl Send for AxisNames {}
// SAFETY: as for Send: the struct is never mutated after it is made.
unsafe impl Sync for AxisNames {}

/// An input, output or variable: what `weft_tensor_info` describes.
pub struct Tensor {
    pub node: NodeId,
    name: CString,
    pub dtype: DType,
    pub axes: Axes,
    axis_names: AxisNames,
    pub lengths: Vec<usize>,
    pub elements: usize,
    pub bytes: usize,
}

/// `weft_tensor_info` of weft.h.
#[repr(C)]
pub struct TensorInfo {
    pub name: *const c_char,
    pub dtype: std::ffi::c_int,
    pub rank: usize,
    pub axes: *const *const c_char,
    pub lengths: *const usize,
    pub elements: usize,
    pub bytes: usize,
}

/// `weft_dtype`'s value of `dtype`.
pub fn dtype_code(dtype: DType) -> std::ffi::c_int {
    match dtype {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::I32 => 2,
        DType::I64 => 3,
        DType::Bool => 4,
    }
}

/// The dtype of a `weft_dtype` value.
pub fn dtype_of(code: std::ffi::c_int) -> Option<DType> {
    [DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool]
        .into_iter()
        .find(|&d| dtype_code(d) == code)
}

/// A C string of `s`, cut at a NUL (graph names cannot hold one; a file's could).
fn c_string(s: &str) -> CString {
    CString::new(s.split('\0').next().unwrap_or_default()).unwrap_or_default()
}

impl Tensor {
    fn new(graph: &weft_api::ir::Graph, node: NodeId) -> Result<Tensor, Failure> {
        let n = graph.node(node);
        let lengths = graph
            .shape_of(&n.axes)
            .map_err(|e| Failure::of(Error::Graph(e), Status::Model))?;
        let elements = lengths
            .iter()
            .try_fold(1usize, |a, &l| a.checked_mul(l))
            .filter(|&e| e.checked_mul(n.dtype.size_bytes()).is_some())
            .ok_or_else(|| Failure {
                status: Status::Model,
                message: format!("`{}`: its size overflows", graph.node_label(node)),
            })?;
        let names: Vec<CString> = n
            .axes
            .iter()
            .map(|&a| c_string(&graph.axis_name(a)))
            .collect();
        let pointers = names.iter().map(|s| s.as_ptr()).collect();
        Ok(Tensor {
            node,
            name: c_string(&graph.node_label(node)),
            dtype: n.dtype,
            axes: n.axes.clone(),
            axis_names: AxisNames {
                _names: names,
                pointers,
            },
            lengths,
            elements,
            bytes: elements * n.dtype.size_bytes(),
        })
    }

    /// Its `weft_tensor_info`, pointing into it.
    pub fn info(&self) -> TensorInfo {
        TensorInfo {
            name: self.name.as_ptr(),
            dtype: dtype_code(self.dtype),
            rank: self.lengths.len(),
            axes: self.axis_names.pointers.as_ptr(),
            lengths: self.lengths.as_ptr(),
            elements: self.elements,
            bytes: self.bytes,
        }
    }

    /// Its name, for messages.
    pub fn label(&self) -> &str {
        self.name.to_str().unwrap_or("?")
    }
}

/// `weft_model`: a loaded graph's computation of its outputs from its placeholders.
pub struct Model {
    transformer: Transformer,
    computation: Computation,
    pub inputs: Vec<Tensor>,
    pub outputs: Vec<Tensor>,
    pub variables: Vec<Tensor>,
}

impl Model {
    /// Loads `path` with `bindings` (`AXIS=LEN` each) and compiles it with `context`'s
    /// options.
    pub fn load(context: &Context, path: &str, bindings: &[String]) -> Result<Model, Failure> {
        let bindings = bindings
            .iter()
            .map(|b| b.parse::<Binding>().map_err(Failure::argument))
            .collect::<Result<Vec<_>, _>>()?;
        let graph = weft_api::cli::load(Path::new(path), &bindings)
            .map_err(|e| Failure::of(e, Status::Model))?;
        if graph.outputs().is_empty() {
            return Err(Failure::of(Error::NoOutputs, Status::Model));
        }
        let (outputs, placeholders) = (graph.outputs().to_vec(), graph.placeholders());
        let tensors = |ids: &[NodeId]| -> Result<Vec<Tensor>, Failure> {
            ids.iter().map(|&id| Tensor::new(&graph, id)).collect()
        };
        let (inputs, outputs_info) = (tensors(&placeholders)?, tensors(&outputs)?);
        let transformer = Transformer::with_jit_options(graph.clone(), context.options.clone())
            .map_err(|e| Failure::of(e, Status::Compile))?;
        debug_assert_eq!(transformer.backend(), Backend::Jit);
        let variables = tensors(&transformer.stateful())?;
        let computation = transformer
            .computation(&outputs, &placeholders)
            .map_err(|e| Failure::of(e, Status::Compile))?;
        // Every length is bound (checked above): a computation of lengths bound at call time
        // would refuse here.
        computation
            .output_arrays()
            .map_err(|e| Failure::of(e, Status::Model))?;
        Ok(Model {
            transformer,
            computation,
            inputs,
            outputs: outputs_info,
            variables,
        })
    }

    /// Runs on `inputs`, writing `outputs` (both checked against the tensors already): the
    /// outputs the kernels write in place straight into the caller's memory.
    pub fn run(&self, inputs: &[Buffer<'_>], outputs: Vec<BufferMut<'_>>) -> Result<(), Failure> {
        let views = self
            .inputs
            .iter()
            .zip(inputs)
            .map(|(t, b)| {
                HostView::of_data(&t.axes, &t.lengths, b.data())
                    .map_err(|e| Failure::of(e.into(), Status::Argument))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut outs = self
            .outputs
            .iter()
            .zip(outputs)
            .map(|(t, b)| {
                HostViewMut::of_data(&t.axes, &t.lengths, b.into_data())
                    .map_err(|e| Failure::of(e.into(), Status::Argument))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.computation
            .call_into_views(&views, &mut outs)
            .map_err(|e| Failure::of(e, Status::Run))
    }

    /// Copies variable `index`'s value into `out` (checked against it already).
    pub fn read_variable(&self, index: usize, out: BufferMut<'_>) -> Result<(), Failure> {
        let node = self.variables[index].node;
        let value = self
            .transformer
            .value_of(node)
            .map_err(|e| Failure::of(e, Status::Run))?;
        out.into_data()
            .copy_from(value.view().data())
            .map_err(|e| Failure::of(e.into(), Status::Internal))
    }

    /// Sets variable `index` from `value` (checked against it already).
    pub fn write_variable(&self, index: usize, value: &Buffer<'_>) -> Result<(), Failure> {
        let t = &self.variables[index];
        let data = match value.data() {
            DataRef::F32(v) => ArrayData::F32(v.to_vec()),
            DataRef::F64(v) => ArrayData::F64(v.to_vec()),
            DataRef::I32(v) => ArrayData::I32(v.to_vec()),
            DataRef::I64(v) => ArrayData::I64(v.to_vec()),
            DataRef::Bool(v) => ArrayData::Bool(v.to_vec()),
        };
        let array = HostArray::new(t.axes.clone(), t.lengths.clone(), data)
            .map_err(|e| Failure::of(e.into(), Status::Argument))?;
        self.transformer
            .set_value(t.node, &array)
            .map_err(|e| Failure::of(e, Status::Run))
    }
}
