//! Which of a JIT executable's storages a call binds to the caller's own arrays instead of
//! copying (zero-copy inputs and outputs), decided once at compile time and recorded in the
//! program ([`Binding`]); the runtime binds them at call time (`weft_runtime::BindScope`).
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

use weft_ir::{Axes, DType, Graph, NodeId};
use weft_runtime::program::{
    Assign, Binding, GemmStep, Home, Input, KernelStep, Output, StateRead, Storage, StorageKind,
};
use weft_runtime::KernelSignature;

/// A placeholder: its storage (`None`: not read) and where its value lives.
pub(crate) struct InputValue {
    pub(crate) placeholder: NodeId,
    pub(crate) name: String,
    pub(crate) storage: Option<usize>,
    pub(crate) home: Option<Home>,
    /// The axes order the caller asked for, when another than its declared one.
    pub(crate) order: Option<Axes>,
    pub(crate) shape: Vec<usize>,
}

/// An output, by its node in the caller's graph.
pub(crate) struct OutputValue {
    pub(crate) node: NodeId,
    pub(crate) home: Home,
}

/// A state read: the caller's variable, the storage it is loaded into.
pub(crate) struct StateValue {
    pub(crate) source: NodeId,
    pub(crate) name: String,
    pub(crate) storage: usize,
    pub(crate) home: Option<Home>,
}

/// An assign: the caller's variable and where the new value lives.
pub(crate) struct AssignValue {
    pub(crate) target: NodeId,
    pub(crate) name: String,
    pub(crate) home: Home,
}

/// Every value a call moves in or out.
pub(crate) struct Values {
    pub(crate) inputs: Vec<InputValue>,
    pub(crate) outputs: Vec<OutputValue>,
    pub(crate) state: Vec<StateValue>,
    pub(crate) assigns: Vec<AssignValue>,
}

/// The facts about a program that binding decisions read.
pub(crate) struct Facts<'e> {
    /// The caller's graph.
    pub(crate) graph: &'e Graph,
    pub(crate) storages: &'e [Storage],
    /// Per kernel, its signature (what it may write) and its step (the storages it binds).
    pub(crate) signatures: &'e [KernelSignature],
    pub(crate) kernels: &'e [KernelStep],
    pub(crate) gemms: &'e [GemmStep],
    pub(crate) values: &'e Values,
}

/// The first reason that holds, or in place.
fn first_failing(checks: &[(bool, &'static str)]) -> Binding {
    match checks.iter().find(|(ok, _)| !ok) {
        Some((_, why)) => Binding::Copy(why),
        None => Binding::InPlace,
    }
}

impl Facts<'_> {
    /// Whether a kernel or a GEMM call writes storage `s`.
    fn written(&self, s: usize) -> bool {
        self.gemms.iter().any(|g| g.args[2].index() == s)
            || self.signatures.iter().zip(self.kernels).any(|(sig, k)| {
                sig.buffers
                    .iter()
                    .zip(&k.args)
                    .any(|(decl, a)| a.index() == s && decl.access.can_write())
            })
    }

    fn constant(&self, s: usize) -> bool {
        matches!(self.storages[s].kind, StorageKind::Constant(_))
    }

    /// Whether an output or an assigned value lives in storage `s`.
    fn read_after(&self, s: usize) -> bool {
        let v = self.values;
        v.outputs.iter().any(|o| o.home.storage.index() == s)
            || v.assigns.iter().any(|a| a.home.storage.index() == s)
    }

    fn input_storage(&self, s: usize) -> bool {
        self.values.inputs.iter().any(|i| i.storage == Some(s))
    }

    fn state_storage(&self, s: usize) -> bool {
        self.values.state.iter().any(|r| r.storage == s)
    }

    /// The checks that `h`'s storage holds a value of `node`'s size (in the caller's graph)
    /// that a kernel writes, row-major, and not bool: what a caller's (or a spare) array can
    /// stand in for.
    fn holds_written_value(&self, h: &Home, node: NodeId) -> [(bool, &'static str); 5] {
        let s = h.storage.index();
        let size = self.graph.tensor_size(node).map(|t| t.elements as u64);
        [
            (h.row_major, "not stored row-major"),
            (
                h.dtype != DType::Bool,
                "bool (kernels may store any nonzero byte)",
            ),
            (
                size.is_ok_and(|n| n == self.storages[s].elements),
                "its storage is longer than the value",
            ),
            (!self.constant(s), "a constant"),
            (self.written(s), "no kernel of this computation writes it"),
        ]
    }

    /// Per placeholder: read in place only when every kernel may read the caller's array in
    /// place of its storage (see the module docs).
    pub(crate) fn inputs(&self) -> Vec<Input> {
        let v = self.values;
        v.inputs
            .iter()
            .map(|x| {
                let binding = match (x.storage, &x.home) {
                    (Some(s), Some(home)) => first_failing(&[
                        (x.order.is_none(), "stored in another axes order"),
                        (home.row_major, "not stored row-major"),
                        (
                            v.inputs.iter().filter(|y| y.storage == Some(s)).count() == 1,
                            "its storage holds another input",
                        ),
                        (!self.constant(s), "a constant"),
                        (!self.written(s), "a kernel writes its storage"),
                        (
                            !self.read_after(s),
                            "an output or assigned value shares its storage",
                        ),
                        (!self.state_storage(s), "a state value shares its storage"),
                    ]),
                    _ => Binding::Copy("not read by any kernel"),
                };
                Input {
                    placeholder: x.placeholder,
                    name: x.name.clone(),
                    storage: x.storage.map(weft_runtime::program::StorageId::new),
                    order: x.order.clone(),
                    shape: x.shape.clone(),
                    binding,
                }
            })
            .collect()
    }

    /// Per output: written in place only when the kernels leave exactly its value in a
    /// storage of its own (see the module docs).
    pub(crate) fn outputs(&self) -> Vec<Output> {
        let v = self.values;
        v.outputs
            .iter()
            .map(|o| {
                let h = &o.home;
                let s = h.storage.index();
                let mut checks = self.holds_written_value(h, o.node).to_vec();
                checks.extend([
                    (
                        v.outputs
                            .iter()
                            .filter(|x| x.home.storage == h.storage)
                            .count()
                            == 1,
                        "another output shares its storage",
                    ),
                    (
                        !v.assigns.iter().any(|a| a.home.storage == h.storage),
                        "an assigned value shares its storage",
                    ),
                    (!self.input_storage(s), "an input shares its storage"),
                    (!self.state_storage(s), "a state value shares its storage"),
                ]);
                Output {
                    node: o.node,
                    home: h.clone(),
                    binding: first_failing(&checks),
                }
            })
            .collect()
    }

    /// Per state read: read in place from the state's array when stored alone, row-major,
    /// exactly as long, never written, and no output, assigned value or input lives there.
    pub(crate) fn state_reads(&self) -> Vec<StateRead> {
        let v = self.values;
        v.state
            .iter()
            .map(|r| {
                let s = r.storage;
                let size = self.graph.tensor_size(r.source).map(|t| t.elements as u64);
                let binding = match &r.home {
                    Some(home) => first_failing(&[
                        (home.row_major, "not stored row-major"),
                        (
                            size.is_ok_and(|n| n == self.storages[s].elements),
                            "its storage is longer than the value",
                        ),
                        (!self.constant(s), "a constant"),
                        (
                            v.state.iter().filter(|x| x.storage == s).count() == 1,
                            "another state value shares its storage",
                        ),
                        (!self.written(s), "a kernel writes its storage"),
                        (
                            !self.read_after(s),
                            "an output or assigned value shares its storage",
                        ),
                        (!self.input_storage(s), "an input shares its storage"),
                    ]),
                    None => Binding::Copy("not stored"),
                };
                StateRead {
                    source: r.source,
                    name: r.name.clone(),
                    storage: weft_runtime::program::StorageId::new(s),
                    binding,
                }
            })
            .collect()
    }

    /// Per assign: committed by swapping when its kernels can write a spare array of the
    /// target's shape in place of the value's storage (which must hold exactly that value,
    /// row-major, in the target's axes order, written by a kernel, alone, not bool); an output
    /// that is the assigned value itself is then copied from the spare (one copy: the value
    /// has two owners). Two assigns of one target are copied (the later wins, which a copy
    /// keeps simple).
    pub(crate) fn assigns(&self) -> Vec<Assign> {
        let v = self.values;
        v.assigns
            .iter()
            .map(|a| {
                let h = &a.home;
                let s = h.storage.index();
                let mut checks = self.holds_written_value(h, a.target).to_vec();
                checks.extend([
                    (
                        v.assigns
                            .iter()
                            .filter(|x| x.home.storage == h.storage)
                            .count()
                            == 1,
                        "another assigned value shares its storage",
                    ),
                    (
                        v.assigns.iter().filter(|x| x.target == a.target).count() == 1,
                        "its target is assigned twice",
                    ),
                    (!self.input_storage(s), "an input shares its storage"),
                    (!self.state_storage(s), "a state value shares its storage"),
                ]);
                Assign {
                    target: a.target,
                    name: a.name.clone(),
                    home: h.clone(),
                    binding: first_failing(&checks),
                }
            })
            .collect()
    }
}
