//! The text form of loop-IR kernels (the grammar is in docs/loop-ir.md).
//!
//! Guarantees: the output is canonical — loops, values and accumulators are named by their
//! entity (`%i0`, `%v3`, `%a1`), buffers by their declared name — and the reader parses it back
//! to an equal kernel when entities were created in order of first appearance (as the reader
//! and any front-to-back builder do). Printing never fails and never panics, even on an
//! unverified kernel: dangling entities are printed by number.

use std::fmt::{self, Display, Formatter, Write as _};

use super::{AffineExpr, BufferAccessExpr, BufferId, Inst, Kernel, LoopId, MaskBound, Stmt};

const INDENT: &str = "  ";

impl Display for Kernel {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        writeln!(f, "kernel @{} {{", self.name)?;
        for (_, b) in self.buffers.iter() {
            writeln!(
                f,
                "{INDENT}buffer %{}: {}[{}] {}",
                b.name,
                b.ty,
                b.len,
                b.access.name()
            )?;
        }
        for stmt in &self.body {
            write_stmt(f, self, stmt, 1)?;
        }
        writeln!(f, "}}")
    }
}

/// One statement on one line (a loop prints as its header only), for diagnostics.
pub struct StmtDisplay<'a> {
    kernel: &'a Kernel,
    stmt: &'a Stmt,
}

impl Kernel {
    /// Displays `stmt` as one line of this kernel's text form (a loop as its header).
    pub fn display_stmt<'a>(&'a self, stmt: &'a Stmt) -> StmtDisplay<'a> {
        StmtDisplay { kernel: self, stmt }
    }
}

impl Display for StmtDisplay<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        write_stmt_line(f, self.kernel, self.stmt)
    }
}

fn write_stmt(f: &mut Formatter<'_>, k: &Kernel, stmt: &Stmt, depth: usize) -> fmt::Result {
    for _ in 0..depth {
        f.write_str(INDENT)?;
    }
    write_stmt_line(f, k, stmt)?;
    if let Stmt::Loop { body, .. } | Stmt::If { body, .. } = stmt {
        f.write_str(" {\n")?;
        for s in body {
            write_stmt(f, k, s, depth + 1)?;
        }
        for _ in 0..depth {
            f.write_str(INDENT)?;
        }
        f.write_str("}")?;
    }
    f.write_char('\n')
}

fn write_stmt_line(f: &mut Formatter<'_>, k: &Kernel, stmt: &Stmt) -> fmt::Result {
    match stmt {
        Stmt::Let { result, inst } => {
            let ty = k.values.get(*result).map_or("<undeclared>", |t| t.name());
            write!(f, "%{result}: {ty} = ")?;
            write_inst(f, k, inst)
        }
        Stmt::Store { target, value } => {
            f.write_str("store ")?;
            write_access(f, k, target)?;
            write!(f, ", %{value}")
        }
        Stmt::DeclareAcc(acc) => match k.accs.get(*acc) {
            Some(decl) => {
                write!(f, "acc %{acc}: {} {}", decl.kind, decl.ty)?;
                if decl.narrow_partials {
                    f.write_str(" partials f32")?;
                }
                Ok(())
            }
            None => write!(f, "acc %{acc}: <undeclared>"),
        },
        Stmt::Reduce { acc, value, index } => {
            write!(f, "reduce %{acc}, %{value}")?;
            if let Some(index) = index {
                write!(f, ", %{index}")?;
            }
            Ok(())
        }
        Stmt::If { cond, .. } => write!(f, "if %{cond}"),
        Stmt::Loop { loop_id, .. } => {
            write!(f, "loop %{loop_id} in 0..")?;
            match k.loops.get(*loop_id) {
                Some(decl) => {
                    write!(f, "{}", decl.extent)?;
                    let a = decl.annotations;
                    if a.parallel {
                        f.write_str(" parallel")?;
                    }
                    if a.vectorize {
                        f.write_str(" vectorize")?;
                    }
                    if a.unroll != 1 {
                        write!(f, " unroll({})", a.unroll)?;
                    }
                    Ok(())
                }
                None => f.write_str("<undeclared>"),
            }
        }
    }
}

fn write_inst(f: &mut Formatter<'_>, k: &Kernel, inst: &Inst) -> fmt::Result {
    match inst {
        Inst::Const(c) => write!(f, "const {c}"),
        Inst::Index(l) => write!(f, "index %{l}"),
        Inst::Load(access) => {
            f.write_str("load ")?;
            write_access(f, k, access)
        }
        Inst::AccValue(a) => write!(f, "acc.value %{a}"),
        Inst::AccIndex(a) => write!(f, "acc.index %{a}"),
        Inst::Unary(op, x) => write!(f, "{op} %{x}"),
        Inst::Binary(op, x, y) => write!(f, "{op} %{x}, %{y}"),
        Inst::Compare(op, x, y) => write!(f, "{op} %{x}, %{y}"),
        Inst::Select {
            cond,
            if_true,
            if_false,
        } => write!(f, "select %{cond}, %{if_true}, %{if_false}"),
        Inst::Convert(x) => write!(f, "convert %{x}"),
    }
}

/// The text spelling of a buffer: its declared name, or `%b<n>?` when undeclared.
pub(super) fn buffer_name(k: &Kernel, b: BufferId) -> String {
    match k.buffers.get(b) {
        Some(decl) => format!("%{}", decl.name),
        None => format!("%{b}?"),
    }
}

fn write_access(f: &mut Formatter<'_>, k: &Kernel, access: &BufferAccessExpr) -> fmt::Result {
    write!(
        f,
        "{}[{}]",
        buffer_name(k, access.buffer),
        AffineDisplay(&access.index)
    )?;
    if !access.mask.is_empty() {
        f.write_str(" mask(")?;
        for (i, MaskBound { expr, lo, hi }) in access.mask.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{lo} <= {} < {hi}", AffineDisplay(expr))?;
        }
        f.write_str(")")?;
    }
    Ok(())
}

/// Displays an affine expression as `4*%i0 + %i1 - 1` (`0` when empty).
pub struct AffineDisplay<'a>(pub &'a AffineExpr);

impl Display for AffineDisplay<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut term = |f: &mut Formatter<'_>, coeff: i64, var: Option<LoopId>| -> fmt::Result {
            let magnitude = coeff.unsigned_abs();
            if first {
                if coeff < 0 {
                    f.write_char('-')?;
                }
            } else {
                f.write_str(if coeff < 0 { " - " } else { " + " })?;
            }
            first = false;
            match var {
                Some(l) if magnitude == 1 => write!(f, "%{l}"),
                Some(l) => write!(f, "{magnitude}*%{l}"),
                None => write!(f, "{magnitude}"),
            }
        };
        for &(l, c) in self.0.terms() {
            term(f, c, Some(l))?;
        }
        if self.0.offset() != 0 || self.0.terms().is_empty() {
            term(f, self.0.offset(), None)?;
        }
        Ok(())
    }
}
