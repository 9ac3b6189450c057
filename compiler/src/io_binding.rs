//! Which of a JIT executable's storages a call binds to the caller's own arrays instead of
//! copying (zero-copy inputs and outputs), decided once at compile time, and the binding itself
//! at call time (`weft_runtime::BindScope`).
//!
//! Assumes the storages, kernels (with their argument storages), state reads, output homes and
//! assign homes of a compiled executable. Guarantees — a placeholder's storage is bound to the
//! caller's input array only when every kernel may read the array in place of the storage:
//! - it is stored in its declared axes order, row-major at the start of a storage exactly as
//!   long as the array, and no kernel writes that storage (placeholders own their storage:
//!   passes/storage.rs);
//! - no output, assigned value or other placeholder lives in the same storage (an output that
//!   *is* a placeholder is copied out of the storage, so the input must be copied in).
//!
//! An output's storage is bound to the caller's output array only when the kernels leave
//! exactly the output's value there: row-major, a storage exactly as long, written by a kernel
//! of this computation (not a constant or a state value passed through), held by no other
//! output, input, state read or assigned value, and not `bool` (kernels may store any nonzero
//! byte as true, which a Rust `bool` may not hold). Everything else is copied, as before.

use crate::executable::Home;
use weft_ir::{ArrayData, DType, Graph, HostArray, NodeId};
use weft_runtime::{BindScope, CompiledKernel, NoSlot, RunError};

/// The facts about a compiled executable that binding decisions read.
pub(crate) struct Binding<'e> {
    /// Per storage: dtype, length in elements, constant data.
    pub(crate) specs: &'e [(DType, u64, Option<ArrayData>)],
    /// Kernels with their argument storages.
    pub(crate) kernels: &'e [(CompiledKernel, Vec<usize>)],
    /// `(source node, storage)` of every state read.
    pub(crate) state_in: &'e [(NodeId, usize)],
    /// Per output: where its value is.
    pub(crate) outputs: &'e [Home],
    /// Per assign: where the assigned value is.
    pub(crate) assigns: &'e [(NodeId, Home)],
}

impl Binding<'_> {
    /// Whether a kernel writes storage `s`.
    fn written(&self, s: usize) -> bool {
        self.kernels.iter().any(|(k, args)| {
            k.signature()
                .buffers
                .iter()
                .zip(args)
                .any(|(decl, a)| *a == s && decl.access.can_write())
        })
    }

    /// Whether an output or an assigned value lives in storage `s`.
    fn read_after(&self, s: usize) -> bool {
        self.outputs.iter().any(|h| h.storage == s)
            || self.assigns.iter().any(|(_, h)| h.storage == s)
    }

    /// Whether placeholder `i` (storage `inputs[i]`, home `home`) is read in place: see the
    /// module docs. `declared_order`: the caller did not ask for another layout.
    pub(crate) fn input(
        &self,
        inputs: &[Option<usize>],
        i: usize,
        home: Option<Home>,
        declared_order: bool,
    ) -> bool {
        let (Some(s), Some(home)) = (inputs[i], home) else {
            return false;
        };
        let alone = inputs.iter().filter(|x| **x == Some(s)).count() == 1;
        declared_order
            && home.row_major
            && alone
            && self.specs[s].2.is_none()
            && !self.written(s)
            && !self.read_after(s)
            && !self.state_in.iter().any(|(_, t)| *t == s)
    }

    /// Whether output `j` (node `o` of `graph`) is written in place: see the module docs.
    pub(crate) fn output(
        &self,
        inputs: &[Option<usize>],
        j: usize,
        o: NodeId,
        graph: &Graph,
    ) -> bool {
        let h = self.outputs[j];
        let s = h.storage;
        let Ok(size) = graph.tensor_size(o) else {
            return false;
        };
        let (dtype, len, data) = &self.specs[s];
        h.row_major
            && *dtype != DType::Bool
            && *len == size.elements as u64
            && data.is_none()
            && self.written(s)
            && self.outputs.iter().filter(|x| x.storage == s).count() == 1
            && !self.assigns.iter().any(|(_, a)| a.storage == s)
            && !inputs.contains(&Some(s))
            && !self.state_in.iter().any(|(_, t)| *t == s)
    }
}

/// Binds `array` (an input) to storage slot `s` for reading.
pub(crate) fn bind_input<'a>(
    scope: &mut BindScope<'_, 'a>,
    s: usize,
    array: &'a HostArray,
) -> Result<(), RunError> {
    let r = match array.data() {
        ArrayData::F32(v) => scope.bind(s, v),
        ArrayData::F64(v) => scope.bind(s, v),
        ArrayData::I32(v) => scope.bind(s, v),
        ArrayData::I64(v) => scope.bind(s, v),
        ArrayData::Bool(v) => scope.bind(s, v),
    };
    r.map_err(no_slot)
}

/// Binds `array` (an output) to storage slot `s` for writing.
pub(crate) fn bind_output<'a>(
    scope: &mut BindScope<'_, 'a>,
    s: usize,
    array: &'a mut HostArray,
) -> Result<(), RunError> {
    let r = match array.dtype() {
        DType::F32 => scope.bind_mut(s, array.as_mut_slice::<f32>()?),
        DType::F64 => scope.bind_mut(s, array.as_mut_slice::<f64>()?),
        DType::I32 => scope.bind_mut(s, array.as_mut_slice::<i32>()?),
        DType::I64 => scope.bind_mut(s, array.as_mut_slice::<i64>()?),
        DType::Bool => Ok(false),
    };
    match r {
        Ok(true) => Ok(()),
        Ok(false) => Err(RunError::Malformed {
            node: "executable".into(),
            op: "bind",
            message: format!("storage {s}: a bool output is never bound in place"),
        }),
        Err(e) => Err(no_slot(e)),
    }
}

fn no_slot(e: NoSlot) -> RunError {
    RunError::Malformed {
        node: "executable".into(),
        op: "bind",
        message: e.to_string(),
    }
}
