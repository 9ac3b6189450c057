//! Functions over the values of a statement list: which values are read, renaming reads,
//! dropping `let`s nothing reads. The one home of these utilities for every pass over the
//! loop IR (lowering, `reduce_in_memory`, span fission).
//!
//! Assumes lexical scoping as the verifier checks it: a value defined in a loop or `if` body
//! is read only inside that body. Guarantees: renaming changes only reads (never a `let`'s
//! result); dropping removes only `let`s (which have no effect but their value).

use std::collections::HashSet;

use super::{Inst, Stmt, ValueId};

impl Inst {
    /// `self` with every value operand renamed by `f`.
    pub fn renamed(&self, f: &dyn Fn(ValueId) -> ValueId) -> Inst {
        let mut inst = self.clone();
        inst.operands_mut(&|v| *v = f(*v));
        inst
    }

    /// Applies `m` to every value operand of `self`.
    pub fn operands_mut(&mut self, m: &dyn Fn(&mut ValueId)) {
        match self {
            Inst::Unary(_, a) | Inst::Convert(a) => m(a),
            Inst::Binary(_, a, b) | Inst::Compare(_, a, b) => {
                m(a);
                m(b);
            }
            Inst::Select {
                cond,
                if_true,
                if_false,
            } => {
                m(cond);
                m(if_true);
                m(if_false);
            }
            Inst::Const(_)
            | Inst::Index(_)
            | Inst::Load(_)
            | Inst::AccValue(_)
            | Inst::AccIndex(_) => {}
        }
    }
}

/// Every value some statement of `body` (or a body inside it) reads, added to `used`.
pub fn used_values(body: &[Stmt], used: &mut HashSet<ValueId>) {
    for s in body {
        match s {
            Stmt::Let { inst, .. } => used.extend(inst.operands()),
            Stmt::Store { value, .. } => {
                used.insert(*value);
            }
            Stmt::Reduce { value, index, .. } => {
                used.insert(*value);
                used.extend(index);
            }
            Stmt::Loop { body, .. } => used_values(body, used),
            Stmt::If { cond, body } => {
                used.insert(*cond);
                used_values(body, used);
            }
            Stmt::DeclareAcc(_) => {}
        }
    }
}

/// How many times statements of `body` (and the bodies inside it) read `v`.
pub fn uses(body: &[Stmt], v: ValueId) -> usize {
    body.iter()
        .map(|s| match s {
            Stmt::Let { inst, .. } => inst.operands().iter().filter(|&&o| o == v).count(),
            Stmt::Store { value, .. } => usize::from(*value == v),
            Stmt::Reduce { value, index, .. } => {
                usize::from(*value == v) + usize::from(*index == Some(v))
            }
            Stmt::Loop { body, .. } => uses(body, v),
            Stmt::If { cond, body } => usize::from(*cond == v) + uses(body, v),
            Stmt::DeclareAcc(_) => 0,
        })
        .sum()
}

/// Every `let` of `body` and the bodies inside it, in textual order.
pub fn lets_of(body: &[Stmt], out: &mut Vec<(ValueId, Inst)>) {
    for s in body {
        match s {
            Stmt::Let { result, inst } => out.push((*result, inst.clone())),
            Stmt::Loop { body, .. } | Stmt::If { body, .. } => lets_of(body, out),
            _ => {}
        }
    }
}

/// `body` with every read of a value renamed by `f` (results keep their names).
pub fn rename_reads(body: &mut [Stmt], f: &dyn Fn(ValueId) -> ValueId) {
    for s in body {
        match s {
            Stmt::Let { inst, .. } => inst.operands_mut(&|v| *v = f(*v)),
            Stmt::Store { value, .. } => *value = f(*value),
            Stmt::Reduce { value, index, .. } => {
                *value = f(*value);
                *index = index.map(f);
            }
            Stmt::Loop { body, .. } => rename_reads(body, f),
            Stmt::If { cond, body } => {
                *cond = f(*cond);
                rename_reads(body, f);
            }
            Stmt::DeclareAcc(_) => {}
        }
    }
}

/// Drops the `let`s of `body` whose value nothing in it reads, until none is left.
pub fn drop_unused(body: &mut Vec<Stmt>) {
    fn retain(body: &mut Vec<Stmt>, used: &HashSet<ValueId>) -> bool {
        let before = body.len();
        body.retain(|s| !matches!(s, Stmt::Let { result, .. } if !used.contains(result)));
        let mut changed = body.len() != before;
        for s in body.iter_mut() {
            if let Stmt::Loop { body, .. } | Stmt::If { body, .. } = s {
                changed |= retain(body, used);
            }
        }
        changed
    }
    loop {
        let mut used = HashSet::new();
        used_values(body, &mut used);
        if !retain(body, &used) {
            return;
        }
    }
}
