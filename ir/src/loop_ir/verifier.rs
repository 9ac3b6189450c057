//! The loop-IR verifier: run on every kernel before code generation or interpretation.
//!
//! Assumes nothing: it reads the kernel only through checked lookups. Guarantees, when it
//! returns `Ok`: every entity reference is declared; every value is defined once and used only
//! after its definition in the same or an enclosing statement sequence; every loop appears in
//! exactly one loop statement and is referenced only inside it; every accumulator is declared
//! once and used in its scope; all operand and result types follow the rules of
//! [`super::UnaryOp`], [`super::BinaryOp`], [`super::CompareOp`] and [`super::Inst`]; loads read
//! readable buffers and stores write writable ones with the buffer's type; `parallel` appears
//! only on a loop that is the kernel's only top-level statement; and — the bounds proof — for
//! every load and store, every index it can touch (given loop ranges `0..extent` and mask
//! bounds, see [`super::bounds`]) lies in `0..len` of its buffer. Code generation relies on all
//! of this and emits no bounds checks.

use std::fmt;

use super::bounds::{access_range, Interval};
use super::printer::{buffer_name, AffineDisplay};
use super::{AccId, BufferAccessExpr, Inst, Kernel, LoopId, ReduceKind, ScalarType, Stmt, ValueId};

/// The largest unroll factor accepted.
pub const MAX_UNROLL: u32 = 64;

/// What is wrong with a kernel, at one statement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("kernel @{kernel}: at `{statement}`{context}: {message}")]
pub struct VerifierError {
    /// The kernel's name.
    pub kernel: String,
    /// The offending statement, printed on one line (empty for kernel-level errors).
    pub statement: String,
    /// The enclosing loops, e.g. ` in loop %i0 > %i1` (empty at top level).
    pub context: String,
    /// What is wrong, naming the buffer, value, loop or accumulator at fault.
    pub message: String,
}

/// Every error found in one kernel (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifierErrors(pub Vec<VerifierError>);

impl fmt::Display for VerifierErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifierErrors {}

/// Checks everything listed in the module documentation, reporting every violation.
pub fn verify(kernel: &Kernel) -> Result<(), VerifierErrors> {
    let mut v = Verifier {
        k: kernel,
        errors: Vec::new(),
        value_defined: vec![false; kernel.values.len()],
        value_live: vec![false; kernel.values.len()],
        loop_seen: vec![false; kernel.loops.len()],
        loop_range: vec![None; kernel.loops.len()],
        acc_declared: vec![false; kernel.accs.len()],
        acc_live: vec![false; kernel.accs.len()],
        loop_stack: Vec::new(),
        current: None,
    };
    v.check_declarations();
    v.block(&kernel.body, true, true);
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(VerifierErrors(v.errors))
    }
}

struct Verifier<'a> {
    k: &'a Kernel,
    errors: Vec<VerifierError>,
    value_defined: Vec<bool>,
    value_live: Vec<bool>,
    loop_seen: Vec<bool>,
    loop_range: Vec<Option<Interval>>,
    acc_declared: Vec<bool>,
    acc_live: Vec<bool>,
    loop_stack: Vec<LoopId>,
    /// The statement being checked (`None`: the declarations), printed only for an error.
    current: Option<&'a Stmt>,
}

impl<'a> Verifier<'a> {
    fn error(&mut self, message: impl Into<String>) {
        let context = if self.loop_stack.is_empty() {
            String::new()
        } else {
            let loops: Vec<String> = self.loop_stack.iter().map(|l| format!("%{l}")).collect();
            format!(" in loop {}", loops.join(" > "))
        };
        self.errors.push(VerifierError {
            kernel: self.k.name.clone(),
            statement: match self.current {
                Some(stmt) => self.k.display_stmt(stmt).to_string(),
                None => "kernel".to_string(),
            },
            context,
            message: message.into(),
        });
    }

    fn check_declarations(&mut self) {
        self.current = None;
        let k = self.k;
        for (id, b) in k.buffers.iter() {
            if b.name.is_empty()
                || !b
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                self.error(format!("buffer {id} has the invalid name `{}`", b.name));
            }
            if k.buffers
                .iter()
                .any(|(other, o)| other < id && o.name == b.name)
            {
                self.error(format!("buffer %{} is declared twice", b.name));
            }
            let bytes = u128::from(b.len) * b.ty.size_bytes() as u128;
            if bytes > isize::MAX as u128 {
                self.error(format!(
                    "buffer %{} of {} elements is not addressable",
                    b.name, b.len
                ));
            }
        }
        for (id, l) in k.loops.iter() {
            if l.extent > i64::MAX as u64 {
                self.error(format!("loop %{id} has extent {} beyond i64", l.extent));
            }
            if l.annotations.unroll == 0 || l.annotations.unroll > MAX_UNROLL {
                self.error(format!(
                    "loop %{id} has unroll factor {}, outside 1..={MAX_UNROLL}",
                    l.annotations.unroll
                ));
            }
        }
        for (id, a) in k.accs.iter() {
            if !a.kind.accepts(a.ty) {
                self.error(format!(
                    "accumulator %{id}: {} cannot reduce {}",
                    a.kind, a.ty
                ));
            }
        }
    }

    fn block(&mut self, stmts: &'a [Stmt], reachable: bool, top_level: bool) {
        let mut defined_here: Vec<ValueId> = Vec::new();
        let mut accs_here: Vec<AccId> = Vec::new();
        for stmt in stmts {
            self.current = Some(stmt);
            match stmt {
                Stmt::Let { result, inst } => {
                    self.inst(*result, inst, reachable);
                    match self.value_defined.get(result.index_usize()) {
                        None => self.error(format!("value %{result} is not declared")),
                        Some(true) => self.error(format!("value %{result} is defined twice")),
                        Some(false) => {
                            self.value_defined[result.index_usize()] = true;
                            self.value_live[result.index_usize()] = true;
                            defined_here.push(*result);
                        }
                    }
                }
                Stmt::Store { target, value } => self.store(target, *value, reachable),
                Stmt::DeclareAcc(acc) => {
                    if self.declare_acc(*acc) {
                        accs_here.push(*acc);
                    }
                }
                Stmt::Reduce { acc, value, index } => self.reduce(*acc, *value, *index),
                Stmt::If { cond, body } => {
                    if let Some(t) = self.use_value(*cond) {
                        if t != ScalarType::Bool {
                            self.error(format!("the condition %{cond} of an if is {t}, not bool"));
                        }
                    }
                    let vectorised = self.loop_stack.iter().any(|l| {
                        self.k
                            .loops
                            .get(*l)
                            .is_some_and(|d| d.annotations.vectorize)
                    });
                    if vectorised {
                        self.error("an if cannot sit inside a vectorised loop");
                    }
                    self.block(body, reachable, false);
                }
                Stmt::Loop { loop_id, body } => {
                    let only = top_level && stmts.len() == 1;
                    self.loop_stmt(*loop_id, body, reachable, only);
                }
            }
        }
        for v in defined_here {
            self.value_live[v.index_usize()] = false;
        }
        for a in accs_here {
            self.acc_live[a.index_usize()] = false;
        }
    }

    /// A store: a writable buffer of the value's type, unmasked.
    fn store(&mut self, target: &BufferAccessExpr, value: ValueId, reachable: bool) {
        let vt = self.use_value(value);
        self.access(target, reachable);
        if let Some(b) = self.k.buffers.get(target.buffer) {
            if !b.access.can_write() {
                self.error(format!(
                    "buffer %{} is declared {}, not writable",
                    b.name,
                    b.access.name()
                ));
            }
            if vt.is_some_and(|t| t != b.ty) {
                self.error(format!(
                    "stores %{value} of type {} into buffer %{} of type {}",
                    vt.unwrap_or(b.ty),
                    b.name,
                    b.ty
                ));
            }
        }
        if !target.mask.is_empty() {
            self.error("a store cannot be masked");
        }
    }

    /// An accumulator's declaration: true when it is now live (declared once, here).
    fn declare_acc(&mut self, acc: AccId) -> bool {
        match self.acc_declared.get(acc.index_usize()) {
            None => self.error(format!("accumulator %{acc} is not declared")),
            Some(true) => self.error(format!("accumulator %{acc} is declared twice")),
            Some(false) => {
                let decl = &self.k.accs[acc];
                if decl.narrow_partials
                    && !(decl.kind == ReduceKind::Sum && decl.ty == ScalarType::F64)
                {
                    self.error(format!(
                        "accumulator %{acc} keeps f32 partials but is a {} {}, not a sum f64",
                        decl.kind, decl.ty
                    ));
                }
                self.acc_declared[acc.index_usize()] = true;
                self.acc_live[acc.index_usize()] = true;
                return true;
            }
        }
        false
    }

    /// A reduction: a value of the accumulator's type, an i64 index exactly for arg-reductions.
    fn reduce(&mut self, acc: AccId, value: ValueId, index: Option<ValueId>) {
        let vt = self.use_value(value);
        let it = index.map(|i| self.use_value(i));
        let Some(decl) = self.use_acc(acc) else {
            return;
        };
        if vt.is_some_and(|t| t != decl.ty) {
            self.error(format!(
                "reduces %{value} of another type into {} accumulator %{acc}",
                decl.ty
            ));
        }
        match (decl.kind.has_index(), it) {
            (true, None) => self.error(format!(
                "{} accumulator %{acc} needs an index operand",
                decl.kind
            )),
            (false, Some(_)) => self.error(format!(
                "{} accumulator %{acc} takes no index operand",
                decl.kind
            )),
            (true, Some(Some(t))) if t != ScalarType::I64 => self.error(format!(
                "the index reduced into %{acc} must be i64, not {t}"
            )),
            _ => {}
        }
    }

    /// A loop statement: declared, in one statement only, parallel only as the kernel's
    /// `only` top-level statement; its body checked with its index in range.
    fn loop_stmt(&mut self, loop_id: LoopId, body: &'a [Stmt], reachable: bool, only: bool) {
        let Some(decl) = self.k.loops.get(loop_id) else {
            self.error(format!("loop %{loop_id} is not declared"));
            return;
        };
        let index = loop_id.index_usize();
        if self.loop_seen[index] {
            self.error(format!("loop %{loop_id} appears in two loop statements"));
            return;
        }
        self.loop_seen[index] = true;
        if decl.annotations.parallel && !only {
            self.error(format!(
                "parallel loop %{loop_id} must be the kernel's only top-level statement"
            ));
        }
        let extent = i128::from(decl.extent);
        self.loop_range[index] = Some(Interval {
            lo: 0,
            hi: extent - 1,
        });
        self.loop_stack.push(loop_id);
        self.block(body, reachable && extent > 0, false);
        self.loop_stack.pop();
        self.loop_range[index] = None;
    }

    /// The type of `v` if it is in scope; reports an error otherwise.
    fn use_value(&mut self, v: ValueId) -> Option<ScalarType> {
        match self.value_live.get(v.index_usize()) {
            Some(true) => self.k.values.get(v).copied(),
            Some(false) => {
                self.error(format!(
                    "value %{v} is used outside the scope of its definition"
                ));
                None
            }
            None => {
                self.error(format!("value %{v} is not declared"));
                None
            }
        }
    }

    fn use_acc(&mut self, a: AccId) -> Option<super::AccDecl> {
        match self.acc_live.get(a.index_usize()) {
            Some(true) => self.k.accs.get(a).cloned(),
            Some(false) => {
                self.error(format!(
                    "accumulator %{a} is used outside the scope of its declaration"
                ));
                None
            }
            None => {
                self.error(format!("accumulator %{a} is not declared"));
                None
            }
        }
    }

    fn inst(&mut self, result: ValueId, inst: &Inst, reachable: bool) {
        let Some(&rt) = self.k.values.get(result) else {
            return; // reported by the caller
        };
        // The message is formatted only for an error: verifying runs on every compile.
        let expect = |this: &mut Self, ok: bool, message: &dyn Fn() -> String| {
            if !ok {
                this.error(message());
            }
        };
        match inst {
            Inst::Const(c) => expect(self, c.ty() == rt, &|| {
                format!("constant of type {} defines %{result} of type {rt}", c.ty())
            }),
            Inst::Index(l) => {
                if self
                    .loop_range
                    .get(l.index_usize())
                    .is_none_or(|r| r.is_none())
                {
                    self.error(format!("loop %{l} is used outside its body"));
                }
                expect(self, rt == ScalarType::I64, &|| {
                    format!("index %{l} is i64, not {rt}")
                });
            }
            Inst::Load(access) => self.load(result, rt, access, reachable),
            Inst::AccValue(a) => {
                if let Some(decl) = self.use_acc(*a) {
                    let ty = decl.ty;
                    expect(self, ty == rt, &|| {
                        format!("accumulator %{a} holds {ty}, not {rt}")
                    });
                }
            }
            Inst::AccIndex(a) => {
                if let Some(decl) = self.use_acc(*a) {
                    let kind = decl.kind;
                    expect(self, kind.has_index(), &|| {
                        format!("{kind} accumulator %{a} has no index")
                    });
                    expect(self, rt == ScalarType::I64, &|| {
                        format!("acc.index is i64, not {rt}")
                    });
                }
            }
            Inst::Unary(op, x) => {
                if let Some(t) = self.use_value(*x) {
                    expect(self, op.accepts(t), &|| format!("{op} does not accept {t}"));
                    expect(self, t == rt, &|| {
                        format!("{op} of {t} defines %{result} of type {rt}")
                    });
                }
            }
            Inst::Binary(op, x, y) => {
                let (tx, ty) = (self.use_value(*x), self.use_value(*y));
                if let (Some(tx), Some(ty)) = (tx, ty) {
                    expect(self, tx == ty, &|| {
                        format!("{op} of {tx} and {ty}: operand types differ")
                    });
                    expect(self, op.accepts(tx), &|| {
                        format!("{op} does not accept {tx}")
                    });
                    expect(self, tx == rt, &|| {
                        format!("{op} of {tx} defines %{result} of type {rt}")
                    });
                }
            }
            Inst::Compare(op, x, y) => {
                let (tx, ty) = (self.use_value(*x), self.use_value(*y));
                if let (Some(tx), Some(ty)) = (tx, ty) {
                    expect(self, tx == ty, &|| {
                        format!("{op} of {tx} and {ty}: operand types differ")
                    });
                    expect(self, op.accepts(tx), &|| {
                        format!("{op} does not accept {tx}")
                    });
                }
                expect(self, rt == ScalarType::Bool, &|| {
                    format!("{op} yields bool, not {rt}")
                });
            }
            Inst::Select {
                cond,
                if_true,
                if_false,
            } => self.select(result, rt, *cond, *if_true, *if_false),
            Inst::Convert(x) => {
                self.use_value(*x);
            }
        }
    }

    /// A load: a readable buffer of the result's type.
    fn load(
        &mut self,
        result: ValueId,
        rt: ScalarType,
        access: &BufferAccessExpr,
        reachable: bool,
    ) {
        self.access(access, reachable);
        let Some(b) = self.k.buffers.get(access.buffer) else {
            return;
        };
        if !b.access.can_read() {
            self.error(format!(
                "buffer %{} is declared {}, not readable",
                b.name,
                b.access.name()
            ));
        }
        if b.ty != rt {
            self.error(format!(
                "load from buffer %{} of type {} defines %{result} of type {rt}",
                b.name, b.ty
            ));
        }
    }

    /// A select: a bool condition, both operands of the result's type.
    fn select(
        &mut self,
        result: ValueId,
        rt: ScalarType,
        cond: ValueId,
        if_true: ValueId,
        if_false: ValueId,
    ) {
        let tc = self.use_value(cond);
        let (tt, tf) = (self.use_value(if_true), self.use_value(if_false));
        if let Some(tc) = tc.filter(|t| *t != ScalarType::Bool) {
            self.error(format!("select condition %{cond} is {tc}, not bool"));
        }
        for t in [tt, tf].into_iter().flatten().filter(|t| *t != rt) {
            self.error(format!(
                "select operand of type {t} defines %{result} of type {rt}"
            ));
        }
    }

    /// Checks that an access names a declared buffer, uses loops in scope, and stays in bounds.
    fn access(&mut self, access: &BufferAccessExpr, reachable: bool) {
        let Some(b) = self.k.buffers.get(access.buffer) else {
            self.error(format!("buffer {} is not declared", access.buffer));
            return;
        };
        let ranges = &self.loop_range;
        let range_of = |l: LoopId| ranges.get(l.index_usize()).copied().flatten();
        match access_range(&access.index, &access.mask, &range_of) {
            Err(l) => self.error(format!("loop %{l} is used outside its body")),
            Ok(Some(r)) if reachable => {
                if r.lo < 0 || r.hi >= i128::from(b.len) {
                    self.error(format!(
                        "index {} of buffer {} ranges over [{}, {}], outside 0..{}",
                        AffineDisplay(&access.index),
                        buffer_name(self.k, access.buffer),
                        r.lo,
                        r.hi,
                        b.len
                    ));
                }
            }
            Ok(_) => {}
        }
    }
}

/// Dense index of an entity, for the verifier's side tables.
trait IndexUsize {
    fn index_usize(self) -> usize;
}

impl<T: crate::arena::EntityRef> IndexUsize for T {
    fn index_usize(self) -> usize {
        self.index()
    }
}
