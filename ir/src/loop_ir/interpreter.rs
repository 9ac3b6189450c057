//! A direct, bounds-checked interpreter of loop-IR kernels: the oracle for code generation.
//!
//! Assumes nothing: it verifies the kernel first and checks every buffer access again at run
//! time. Guarantees: it executes statements in program order with the semantics of
//! [`super::semantics`], ignoring all loop annotations (so its float reductions are strictly
//! sequential). It is slow by design and obviously right.

use super::semantics;
use super::{
    verify, AccId, BufferAccessExpr, Inst, Kernel, LoopId, ScalarType, ScalarValue, Stmt,
    VerifierErrors,
};
use crate::arena::EntityRef;

/// Host-side contents of one buffer, typed.
#[derive(Clone, Debug, PartialEq)]
pub enum BufferData {
    /// `f32` elements.
    F32(Vec<f32>),
    /// `f64` elements.
    F64(Vec<f64>),
    /// `i32` elements.
    I32(Vec<i32>),
    /// `i64` elements.
    I64(Vec<i64>),
    /// `bool` elements.
    Bool(Vec<bool>),
}

impl BufferData {
    /// `len` zeros of type `ty`.
    pub fn zeros(ty: ScalarType, len: usize) -> Self {
        match ty {
            ScalarType::F32 => Self::F32(vec![0.0; len]),
            ScalarType::F64 => Self::F64(vec![0.0; len]),
            ScalarType::I32 => Self::I32(vec![0; len]),
            ScalarType::I64 => Self::I64(vec![0; len]),
            ScalarType::Bool => Self::Bool(vec![false; len]),
        }
    }

    /// The element type.
    pub fn ty(&self) -> ScalarType {
        match self {
            Self::F32(_) => ScalarType::F32,
            Self::F64(_) => ScalarType::F64,
            Self::I32(_) => ScalarType::I32,
            Self::I64(_) => ScalarType::I64,
            Self::Bool(_) => ScalarType::Bool,
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
            Self::I32(v) => v.len(),
            Self::I64(v) => v.len(),
            Self::Bool(v) => v.len(),
        }
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get(&self, i: usize) -> Option<ScalarValue> {
        Some(match self {
            Self::F32(v) => ScalarValue::F32(*v.get(i)?),
            Self::F64(v) => ScalarValue::F64(*v.get(i)?),
            Self::I32(v) => ScalarValue::I32(*v.get(i)?),
            Self::I64(v) => ScalarValue::I64(*v.get(i)?),
            Self::Bool(v) => ScalarValue::Bool(*v.get(i)?),
        })
    }

    fn set(&mut self, i: usize, x: ScalarValue) -> bool {
        match (self, x) {
            (Self::F32(v), ScalarValue::F32(x)) => v.get_mut(i).map(|e| *e = x).is_some(),
            (Self::F64(v), ScalarValue::F64(x)) => v.get_mut(i).map(|e| *e = x).is_some(),
            (Self::I32(v), ScalarValue::I32(x)) => v.get_mut(i).map(|e| *e = x).is_some(),
            (Self::I64(v), ScalarValue::I64(x)) => v.get_mut(i).map(|e| *e = x).is_some(),
            (Self::Bool(v), ScalarValue::Bool(x)) => v.get_mut(i).map(|e| *e = x).is_some(),
            _ => false,
        }
    }
}

/// Why interpretation failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InterpretError {
    /// The kernel does not verify.
    #[error("{0}")]
    Verify(#[from] VerifierErrors),
    /// The caller passed the wrong number of buffers.
    #[error("kernel @{kernel} takes {expected} buffers, {actual} given")]
    BufferCount {
        /// The kernel.
        kernel: String,
        /// Declared buffers.
        expected: usize,
        /// Passed buffers.
        actual: usize,
    },
    /// A passed buffer does not match its declaration.
    #[error("kernel @{kernel}: buffer %{buffer} must hold at least {len} {ty} elements, got {actual_len} {actual_ty}")]
    BufferMismatch {
        /// The kernel.
        kernel: String,
        /// The buffer's declared name.
        buffer: String,
        /// Declared type.
        ty: ScalarType,
        /// Declared length.
        len: u64,
        /// Passed type.
        actual_ty: ScalarType,
        /// Passed length.
        actual_len: usize,
    },
    /// An access or operation failed at run time (impossible for a verified kernel; kept as a
    /// second line of defence).
    #[error("kernel @{kernel}: {message}")]
    Runtime {
        /// The kernel.
        kernel: String,
        /// What failed.
        message: String,
    },
}

/// Runs `kernel` on `buffers` (one per declared buffer, in order, each at least as long as
/// declared and of the declared type).
pub fn interpret(kernel: &Kernel, buffers: &mut [BufferData]) -> Result<(), InterpretError> {
    verify(kernel)?;
    if buffers.len() != kernel.buffers.len() {
        return Err(InterpretError::BufferCount {
            kernel: kernel.name.clone(),
            expected: kernel.buffers.len(),
            actual: buffers.len(),
        });
    }
    for ((_, decl), data) in kernel.buffers.iter().zip(buffers.iter()) {
        if data.ty() != decl.ty || (data.len() as u64) < decl.len {
            return Err(InterpretError::BufferMismatch {
                kernel: kernel.name.clone(),
                buffer: decl.name.clone(),
                ty: decl.ty,
                len: decl.len,
                actual_ty: data.ty(),
                actual_len: data.len(),
            });
        }
    }
    let mut state = State {
        k: kernel,
        buffers,
        values: vec![None; kernel.values.len()],
        loops: vec![0; kernel.loops.len()],
        accs: vec![(ScalarValue::Bool(false), 0); kernel.accs.len()],
    };
    state.run(&kernel.body)
}

struct State<'a> {
    k: &'a Kernel,
    buffers: &'a mut [BufferData],
    values: Vec<Option<ScalarValue>>,
    loops: Vec<i64>,
    accs: Vec<(ScalarValue, i64)>,
}

impl State<'_> {
    fn fail<T>(&self, message: impl Into<String>) -> Result<T, InterpretError> {
        Err(InterpretError::Runtime {
            kernel: self.k.name.clone(),
            message: message.into(),
        })
    }

    fn value(&self, v: super::ValueId) -> Result<ScalarValue, InterpretError> {
        match self.values.get(v.index()).copied().flatten() {
            Some(x) => Ok(x),
            None => self.fail(format!("value %{v} read before definition")),
        }
    }

    fn acc(&self, a: AccId) -> (ScalarValue, i64) {
        self.accs[a.index()]
    }

    fn address(&self, access: &BufferAccessExpr) -> Result<Option<usize>, InterpretError> {
        let at = |l: LoopId| self.loops.get(l.index()).copied();
        for m in &access.mask {
            let Some(x) = m.expr.evaluate(at) else {
                return self.fail("mask uses an unknown loop");
            };
            if x < i128::from(m.lo) || x >= i128::from(m.hi) {
                return Ok(None);
            }
        }
        let Some(index) = access.index.evaluate(at) else {
            return self.fail("index uses an unknown loop");
        };
        let len = self.buffers[access.buffer.index()].len();
        match usize::try_from(index) {
            Ok(i) if i < len => Ok(Some(i)),
            _ => self.fail(format!(
                "index {index} out of bounds of buffer %{} (length {len})",
                self.k.buffers[access.buffer].name
            )),
        }
    }

    fn run(&mut self, stmts: &[Stmt]) -> Result<(), InterpretError> {
        for stmt in stmts {
            match stmt {
                Stmt::Let { result, inst } => {
                    let ty = self.k.values[*result];
                    let x = self.eval(ty, inst)?;
                    self.values[result.index()] = Some(x);
                }
                Stmt::Store { target, value } => {
                    let x = self.value(*value)?;
                    if let Some(i) = self.address(target)? {
                        if !self.buffers[target.buffer.index()].set(i, x) {
                            return self.fail("store of the wrong type");
                        }
                    }
                }
                Stmt::DeclareAcc(a) => {
                    let decl = &self.k.accs[*a];
                    self.accs[a.index()] = (semantics::reduce_identity(decl.kind, decl.ty), 0);
                }
                Stmt::Reduce { acc, value, index } => {
                    let x = self.value(*value)?;
                    let i = match index {
                        Some(i) => match self.value(*i)? {
                            ScalarValue::I64(i) => i,
                            _ => return self.fail("reduction index is not i64"),
                        },
                        None => 0,
                    };
                    let (a, ai) = self.acc(*acc);
                    match semantics::reduce_step(self.k.accs[*acc].kind, a, ai, x, i) {
                        Some(next) => self.accs[acc.index()] = next,
                        None => return self.fail(format!("ill-typed reduction into %{acc}")),
                    }
                }
                Stmt::If { cond, body } => match self.value(*cond)? {
                    ScalarValue::Bool(true) => self.run(body)?,
                    ScalarValue::Bool(false) => {}
                    _ => return self.fail("an if's condition is not bool"),
                },
                Stmt::Loop { loop_id, body } => {
                    let extent = self.k.loops[*loop_id].extent as i64;
                    for i in 0..extent {
                        self.loops[loop_id.index()] = i;
                        self.run(body)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn eval(&self, ty: ScalarType, inst: &Inst) -> Result<ScalarValue, InterpretError> {
        let ill_typed = || InterpretError::Runtime {
            kernel: self.k.name.clone(),
            message: format!("ill-typed instruction {inst:?}"),
        };
        Ok(match inst {
            Inst::Const(c) => *c,
            Inst::Index(l) => ScalarValue::I64(self.loops[l.index()]),
            Inst::Load(access) => match self.address(access)? {
                Some(i) => match self.buffers[access.buffer.index()].get(i) {
                    Some(x) => x,
                    None => return self.fail("load out of bounds"),
                },
                None => ty.zero(),
            },
            Inst::AccValue(a) => self.acc(*a).0,
            Inst::AccIndex(a) => ScalarValue::I64(self.acc(*a).1),
            Inst::Unary(op, x) => semantics::unary(*op, self.value(*x)?).ok_or_else(ill_typed)?,
            Inst::Binary(op, x, y) => {
                semantics::binary(*op, self.value(*x)?, self.value(*y)?).ok_or_else(ill_typed)?
            }
            Inst::Compare(op, x, y) => ScalarValue::Bool(
                semantics::compare(*op, self.value(*x)?, self.value(*y)?).ok_or_else(ill_typed)?,
            ),
            Inst::Select {
                cond,
                if_true,
                if_false,
            } => match self.value(*cond)? {
                ScalarValue::Bool(true) => self.value(*if_true)?,
                ScalarValue::Bool(false) => self.value(*if_false)?,
                _ => return Err(ill_typed()),
            },
            Inst::Convert(x) => semantics::convert(self.value(*x)?, ty),
        })
    }
}
