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
//!
//! The state (variables, persistent tensors) is treated the same way: a state value read by the
//! kernels is bound to the state's own array when stored alone, row-major and never written (the
//! run holds the state shared while its kernels run); an assigned value is written into a spare
//! array of the target's shape and swapped into the state at the commit — double buffering
//! (docs/design.md, "Device buffers") — when its storage holds exactly that value and nothing else.

use crate::executable::Home;
use weft_ir::{ArrayData, DType, DataRef, Graph, HostArray, HostView, NodeId};
use weft_runtime::{BindScope, CompiledKernel, NoSlot, RunError};

/// The facts about a compiled executable that binding decisions read.
pub(crate) struct Binding<'e> {
    /// Per storage: dtype, length in elements, constant data.
    pub(crate) specs: &'e [(DType, u64, Option<ArrayData>)],
    /// Kernels with their argument storages.
    pub(crate) kernels: &'e [(CompiledKernel, Vec<usize>)],
    /// The storages GEMM calls write (their C).
    pub(crate) gemm_writes: &'e [usize],
    /// `(source node, storage)` of every state read.
    pub(crate) state_in: &'e [(NodeId, usize)],
    /// Per output: where its value is.
    pub(crate) outputs: &'e [Home],
    /// Per assign: where the assigned value is.
    pub(crate) assigns: &'e [(NodeId, Home)],
}

impl Binding<'_> {
    /// Whether a kernel or a GEMM call writes storage `s`.
    fn written(&self, s: usize) -> bool {
        self.gemm_writes.contains(&s)
            || self.kernels.iter().any(|(k, args)| {
                k.signature()
                    .buffers
                    .iter()
                    .zip(args)
                    .any(|(decl, a)| *a == s && decl.access.can_write())
            })
    }

    /// Whether `h`'s storage holds a value of `node`'s size that a kernel writes, row-major,
    /// and not bool: what a caller's (or a spare) array can stand in for.
    fn holds_written_value(&self, h: Home, node: NodeId, graph: &Graph) -> bool {
        let Ok(size) = graph.tensor_size(node) else {
            return false;
        };
        let (dtype, len, data) = &self.specs[h.storage];
        h.row_major
            && *dtype != DType::Bool
            && *len == size.elements as u64
            && data.is_none()
            && self.written(h.storage)
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
        self.holds_written_value(h, o, graph)
            && self.outputs.iter().filter(|x| x.storage == s).count() == 1
            && !self.assigns.iter().any(|(_, a)| a.storage == s)
            && !inputs.contains(&Some(s))
            && !self.state_in.iter().any(|(_, t)| *t == s)
    }
}

impl Binding<'_> {
    /// Whether state read `k` (its storage, its simplified node's home) is read in place from
    /// the state's array: stored alone, row-major, exactly as long, never written, and no
    /// output, assigned value or input lives there.
    pub(crate) fn state(
        &self,
        inputs: &[Option<usize>],
        k: usize,
        home: Option<Home>,
        graph: &Graph,
    ) -> bool {
        let (src, s) = self.state_in[k];
        let (Some(home), Ok(size)) = (home, graph.tensor_size(src)) else {
            return false;
        };
        home.row_major
            && self.specs[s].1 == size.elements as u64
            && self.specs[s].2.is_none()
            && self.state_in.iter().filter(|(_, t)| *t == s).count() == 1
            && !self.written(s)
            && !self.read_after(s)
            && !inputs.contains(&Some(s))
    }

    /// Whether assign `k` is committed by swapping: its kernels write a spare array of the
    /// target's shape in place of the value's storage (which must hold exactly that value,
    /// row-major, in the target's axes order, written by a kernel, alone, not bool), and the
    /// commit swaps it with the state's array. An output that is the assigned value itself is
    /// copied from the spare (one copy: the value has two owners). Two assigns of one target
    /// are copied instead (the later wins, which a copy keeps simple).
    pub(crate) fn assign(&self, inputs: &[Option<usize>], k: usize, graph: &Graph) -> bool {
        let (target, h) = self.assigns[k];
        let s = h.storage;
        self.holds_written_value(h, target, graph)
            && self.assigns.iter().filter(|(_, a)| a.storage == s).count() == 1
            && self.assigns.iter().filter(|(t, _)| *t == target).count() == 1
            && !inputs.contains(&Some(s))
            && !self.state_in.iter().any(|(_, t)| *t == s)
    }
}

/// Binds `array` (an input) to storage slot `s` for reading.
pub(crate) fn bind_input<'a>(
    scope: &mut BindScope<'_, 'a>,
    s: usize,
    input: HostView<'a>,
) -> Result<(), RunError> {
    let r = match input.data() {
        DataRef::F32(v) => scope.bind(s, v),
        DataRef::F64(v) => scope.bind(s, v),
        DataRef::I32(v) => scope.bind(s, v),
        DataRef::I64(v) => scope.bind(s, v),
        DataRef::Bool(v) => scope.bind(s, v),
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
