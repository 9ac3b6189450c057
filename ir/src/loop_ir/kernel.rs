//! The loop-IR kernel: buffers, loops, values and accumulators in typed arenas, and a body of
//! statements.
//!
//! A kernel is a function of a table of buffer base pointers. Its body is a sequence of
//! statements; loops nest and contain sequences, so several inner loops can run one after the
//! other inside an outer loop. Values are single-assignment scalars visible from their
//! definition to the end of the enclosing statement sequence (including nested loops).
//! Accumulators are the only mutable state besides buffers. Nothing here is checked: a kernel
//! is well formed only once [`super::verify`] accepts it.

use super::{
    AffineExpr, BinaryOp, CompareOp, MaskBound, ReduceKind, ScalarType, ScalarValue, UnaryOp,
};
use crate::arena::PrimaryMap;
use crate::entity_impl;

/// A buffer parameter of a kernel: index into the kernel's pointer table.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct BufferId(u32);
entity_impl!(BufferId, "b");

/// A loop (and its index variable).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct LoopId(u32);
entity_impl!(LoopId, "i");

/// A single-assignment scalar value.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ValueId(u32);
entity_impl!(ValueId, "v");

/// A reduction accumulator.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct AccId(u32);
entity_impl!(AccId, "a");

/// How a kernel uses a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BufferAccess {
    /// Only loaded from.
    Read,
    /// Only stored to.
    Write,
    /// Loaded from and stored to.
    ReadWrite,
}

impl BufferAccess {
    /// Whether loads are allowed.
    pub fn can_read(self) -> bool {
        matches!(self, Self::Read | Self::ReadWrite)
    }
    /// Whether stores are allowed.
    pub fn can_write(self) -> bool {
        matches!(self, Self::Write | Self::ReadWrite)
    }
    /// The text spelling: `read`, `write`, `readwrite`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Read => "read",
            Self::Write => "write",
            Self::ReadWrite => "readwrite",
        }
    }
}

/// A buffer parameter: a named, typed, fixed-length array of elements.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferDecl {
    /// Name, unique in the kernel; printed as `%name`.
    pub name: String,
    /// Element type.
    pub ty: ScalarType,
    /// Length in elements (the minimum size of the storage bound at call time).
    pub len: u64,
    /// Whether the kernel loads, stores or both.
    pub access: BufferAccess,
}

/// Execution hints of a loop. They never change results except for the order of floating-point
/// reduction (vectorize/unroll) — see docs/loop-ir.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LoopAnnotations {
    /// Run iterations in SIMD lanes. Asserts that iterations are independent except through
    /// accumulators.
    pub vectorize: bool,
    /// Emit this many copies of the body per step (1 = no unrolling); with `vectorize`, the
    /// number of vectors per step and of independent accumulators per reduction.
    pub unroll: u32,
    /// Split the iteration range across threads. Asserts that iterations are independent.
    pub parallel: bool,
}

impl Default for LoopAnnotations {
    fn default() -> Self {
        Self {
            vectorize: false,
            unroll: 1,
            parallel: false,
        }
    }
}

/// A loop: its index variable runs over `0..extent`.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopDecl {
    /// Number of iterations.
    pub extent: u64,
    /// Execution hints.
    pub annotations: LoopAnnotations,
}

/// A reduction accumulator; it starts at the identity of `kind` where it is declared.
#[derive(Clone, Debug, PartialEq)]
pub struct AccDecl {
    /// The reduction.
    pub kind: ReduceKind,
    /// Type of the reduced values.
    pub ty: ScalarType,
    /// An f64 `sum` whose terms are widened f32 values may keep the vector partials of the
    /// vectorised loop reducing into it in f32 (`acc %a: sum f64 partials f32`): a backend
    /// that does re-runs that loop summing in f64 whenever the total comes out infinite
    /// or NaN, so only rounding differs from f64 accumulation, never whether the result is
    /// finite. Set by the compiler's `narrow_sums` pass, which bounds that rounding; readers
    /// of the kernel that sum in f64 (the loop IR interpreter) ignore it.
    pub narrow_partials: bool,
}

/// A memory location: an affine element index into a buffer, optionally masked.
#[derive(Clone, Debug, PartialEq)]
pub struct BufferAccessExpr {
    /// The buffer.
    pub buffer: BufferId,
    /// Element index.
    pub index: AffineExpr,
    /// Conditions that must all hold for the memory to be read; otherwise the load yields 0.
    /// Always empty for stores.
    pub mask: Vec<MaskBound>,
}

/// The computation that defines a value.
#[derive(Clone, Debug, PartialEq)]
pub enum Inst {
    /// A constant of the result type.
    Const(ScalarValue),
    /// The current index of a loop, as `i64`.
    Index(LoopId),
    /// An element of a readable buffer (zero where the mask fails).
    Load(BufferAccessExpr),
    /// The current value of an accumulator.
    AccValue(AccId),
    /// The current index (`i64`) of an `argmax`/`argmin` accumulator.
    AccIndex(AccId),
    /// A unary operator.
    Unary(UnaryOp, ValueId),
    /// A binary operator.
    Binary(BinaryOp, ValueId, ValueId),
    /// A comparison yielding `bool`.
    Compare(CompareOp, ValueId, ValueId),
    /// `cond ? if_true : if_false`.
    Select {
        /// The `bool` condition.
        cond: ValueId,
        /// Result when true.
        if_true: ValueId,
        /// Result when false.
        if_false: ValueId,
    },
    /// Conversion to the result type: floats to integers truncate and saturate (NaN → 0),
    /// integers wrap, `x → bool` is `x != 0`, `bool → x` is 0 or 1.
    Convert(ValueId),
}

/// A statement of a kernel body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Defines `result` (of the declared type) as the result of `inst`.
    Let {
        /// The defined value.
        result: ValueId,
        /// Its computation.
        inst: Inst,
    },
    /// Writes `value` to a writable buffer (the access's mask must be empty).
    Store {
        /// Where to write.
        target: BufferAccessExpr,
        /// What to write; its type is the buffer's.
        value: ValueId,
    },
    /// Starts an accumulator at its identity; its scope is the rest of the sequence.
    DeclareAcc(AccId),
    /// Combines `value` (and, for arg-reductions, the `i64` `index`) into an accumulator.
    Reduce {
        /// The accumulator.
        acc: AccId,
        /// The reduced value.
        value: ValueId,
        /// The candidate index for `argmax`/`argmin`; `None` for other kinds.
        index: Option<ValueId>,
    },
    /// Runs `body` for each index of `loop_id`.
    Loop {
        /// The loop.
        loop_id: LoopId,
        /// The statements run per iteration.
        body: Vec<Stmt>,
    },
    /// Runs `body` once if the `bool` value `cond` is true. Values `body` defines are not
    /// visible after it.
    If {
        /// The condition (a `bool` value).
        cond: ValueId,
        /// The statements run when it holds.
        body: Vec<Stmt>,
    },
}

impl BufferAccessExpr {
    /// The access with its index and every mask expression rewritten by `f` (a loop
    /// transformation's substitution); `None` if `f` refuses one.
    pub fn map_exprs(self, f: &dyn Fn(&AffineExpr) -> Option<AffineExpr>) -> Option<Self> {
        let mut mask = Vec::with_capacity(self.mask.len());
        for mut m in self.mask {
            m.expr = f(&m.expr)?;
            mask.push(m);
        }
        Some(BufferAccessExpr {
            buffer: self.buffer,
            index: f(&self.index)?,
            mask,
        })
    }
}

impl Inst {
    /// The values `inst` reads, in operand order.
    pub fn operands(&self) -> Vec<ValueId> {
        match self {
            Inst::Unary(_, x) | Inst::Convert(x) => vec![*x],
            Inst::Binary(_, x, y) | Inst::Compare(_, x, y) => vec![*x, *y],
            Inst::Select {
                cond,
                if_true,
                if_false,
            } => vec![*cond, *if_true, *if_false],
            Inst::Const(_)
            | Inst::Index(_)
            | Inst::Load(_)
            | Inst::AccValue(_)
            | Inst::AccIndex(_) => Vec::new(),
        }
    }
}

impl Stmt {
    /// A flat statement with the access of its load or store rewritten by `f`
    /// ([`BufferAccessExpr::map_exprs`]); other statements unchanged (a loop's body is not
    /// visited). `None` if `f` refuses.
    pub fn map_access(self, f: &dyn Fn(&AffineExpr) -> Option<AffineExpr>) -> Option<Stmt> {
        Some(match self {
            Stmt::Let {
                result,
                inst: Inst::Load(a),
            } => Stmt::Let {
                result,
                inst: Inst::Load(a.map_exprs(f)?),
            },
            Stmt::Store { target, value } => Stmt::Store {
                target: target.map_exprs(f)?,
                value,
            },
            other => other,
        })
    }
}

/// The loops of the perfect nest at the top of `body` (each body exactly the next loop),
/// outermost first — none if `body` is not a single loop — and the body inside the last.
pub fn perfect_nest(body: &[Stmt]) -> (Vec<LoopId>, &[Stmt]) {
    let mut nest = Vec::new();
    let mut cur = body;
    while let [Stmt::Loop { loop_id, body }] = cur {
        nest.push(*loop_id);
        cur = body;
    }
    (nest, cur)
}

/// The perfect nest of `loops` (outermost first) around `body`: the inverse of
/// [`perfect_nest`]. `body` itself if `loops` is empty.
pub fn nest(loops: &[LoopId], body: Vec<Stmt>) -> Vec<Stmt> {
    loops
        .iter()
        .rev()
        .fold(body, |body, &loop_id| vec![Stmt::Loop { loop_id, body }])
}

/// Whether `body` is only lets and stores, reading no loop index as a value: no loop, no
/// accumulator, so no iteration of a loop around it depends on another or on its position
/// (what reordering or re-splitting such a loop's iterations needs, beside its indices).
pub fn elementwise_body(body: &[Stmt]) -> bool {
    body.iter().all(|s| match s {
        Stmt::Let { inst, .. } => !matches!(inst, Inst::Index(_)),
        Stmt::Store { .. } => true,
        _ => false,
    })
}

/// The memory a statement sequence touches, nested loops included, in textual order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BodyAccesses<'k> {
    /// Every load's access.
    pub loads: Vec<&'k BufferAccessExpr>,
    /// Every store's access.
    pub stores: Vec<&'k BufferAccessExpr>,
    /// Every loop.
    pub loops: Vec<LoopId>,
}

impl<'k> BodyAccesses<'k> {
    /// The accesses of `body` and of every loop in it.
    pub fn of(body: &'k [Stmt]) -> Self {
        let mut out = Self::default();
        out.walk(body);
        out
    }

    fn walk(&mut self, body: &'k [Stmt]) {
        for s in body {
            match s {
                Stmt::Let {
                    inst: Inst::Load(a),
                    ..
                } => self.loads.push(a),
                Stmt::Store { target, .. } => self.stores.push(target),
                Stmt::Loop { loop_id, body } => {
                    self.loops.push(*loop_id);
                    self.walk(body);
                }
                Stmt::If { body, .. } => self.walk(body),
                _ => {}
            }
        }
    }
}

/// A loop-IR kernel.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Kernel {
    /// Name, for diagnostics and symbols.
    pub name: String,
    /// Buffer parameters, in pointer-table order.
    pub buffers: PrimaryMap<BufferId, BufferDecl>,
    /// Loops.
    pub loops: PrimaryMap<LoopId, LoopDecl>,
    /// Value types.
    pub values: PrimaryMap<ValueId, ScalarType>,
    /// Accumulators.
    pub accs: PrimaryMap<AccId, AccDecl>,
    /// Top-level statements.
    pub body: Vec<Stmt>,
}

impl Kernel {
    /// An empty kernel called `name`.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Declares the next buffer parameter.
    pub fn add_buffer(
        &mut self,
        name: impl Into<String>,
        ty: ScalarType,
        len: u64,
        access: BufferAccess,
    ) -> BufferId {
        self.buffers.push(BufferDecl {
            name: name.into(),
            ty,
            len,
            access,
        })
    }

    /// Declares a loop over `0..extent`.
    pub fn add_loop(&mut self, extent: u64, annotations: LoopAnnotations) -> LoopId {
        self.loops.push(LoopDecl {
            extent,
            annotations,
        })
    }

    /// Declares an accumulator.
    pub fn add_acc(&mut self, kind: ReduceKind, ty: ScalarType) -> AccId {
        self.accs.push(AccDecl {
            kind,
            ty,
            narrow_partials: false,
        })
    }

    /// Creates a value of type `ty` defined by `inst`, returning it and its defining statement.
    pub fn define(&mut self, ty: ScalarType, inst: Inst) -> (ValueId, Stmt) {
        let result = self.values.push(ty);
        (result, Stmt::Let { result, inst })
    }

    /// The loop annotated `parallel` that is the kernel's only top-level statement, if any
    /// (the verifier rejects `parallel` anywhere else).
    pub fn parallel_loop(&self) -> Option<LoopId> {
        match self.body.as_slice() {
            [Stmt::Loop { loop_id, .. }] => self
                .loops
                .get(*loop_id)
                .filter(|l| l.annotations.parallel)
                .map(|_| *loop_id),
            _ => None,
        }
    }
}
