//! An f32 `exp` stored into a contiguous span, computed after its vector loop by the native
//! span routine (`weft_runtime::vmath::weft_exp_f32_span`, AVX2 with FMA).
//!
//! Cranelift's 128-bit `exp` needs about 35 instructions per four lanes, a third of them
//! spills of its constants; softmax's row pass spent most of its time there. When a vector
//! loop's body ends in `store T[.. + i], exp(a)` — `T` contiguous along the loop, and the
//! `exp` used by that store alone — the loop stores `a` instead, and one call after the loop
//! replaces the span it wrote by its `exp`, eight lanes at a time.
//!
//! Assumes a verified kernel and a host with AVX2 and FMA (`TranslateOptions::span_exp`).
//! Guarantees: applied only where the loop is vectorised, its body holds no loop, no
//! accumulator and no other store to `T` or load of `T` (so no iteration can observe an
//! element before its `exp`), the store is unmasked with coefficient 1 along the loop, and
//! the `exp` result has no other use. The span routine gives each element the bits the inline
//! code would ([`weft_runtime::vmath`]), so results are unchanged; only the time moves.

use super::*;

/// Loops shorter than this keep the inline `exp`: a call costs about as much as a few dozen
/// inline vectors.
const MIN_EXTENT: u64 = 32;

/// An `exp` of loop `l` to take out of the loop and run over the span its store wrote.
#[derive(Clone, Debug)]
pub(crate) struct SpanExp {
    /// The `exp`'s result, which the loop replaces by its argument.
    pub(crate) result: ValueId,
    /// The `exp`'s argument.
    pub(crate) arg: ValueId,
    /// The store writing it: the span starts at its index with `l` at its first iteration.
    pub(crate) target: BufferAccessExpr,
}

/// The span `exp` of vector loop `l` with body `body` of `k`, if the module's conditions hold;
/// `weft explain` reports it.
pub(crate) fn span_plan(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<SpanExp> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize || decl.extent < MIN_EXTENT {
        return None;
    }
    let mut found: Option<SpanExp> = None;
    for s in body {
        if let Stmt::Let {
            result,
            inst: Inst::Unary(UnaryOp::Exp, arg),
        } = s
        {
            if k.values[*result] == ScalarType::F32 && found.is_none() {
                found = stored_once(k, l, body, *result).map(|target| SpanExp {
                    result: *result,
                    arg: *arg,
                    target,
                });
            }
        }
    }
    let span = found?;
    let clean = body.iter().all(|s| match s {
        Stmt::Let {
            inst: Inst::Load(a),
            ..
        } => a.buffer != span.target.buffer,
        Stmt::Let { .. } => true,
        Stmt::Store { target, value } => {
            target.buffer != span.target.buffer || *value == span.result
        }
        Stmt::DeclareAcc(_) | Stmt::Reduce { .. } | Stmt::Loop { .. } => false,
    });
    clean.then_some(span)
}

/// The target of the one store of `v` in `body`, if that is `v`'s only use and the store is
/// unmasked and contiguous along `l`.
fn stored_once(k: &Kernel, l: LoopId, body: &[Stmt], v: ValueId) -> Option<BufferAccessExpr> {
    let mut target = None;
    for s in body {
        match s {
            Stmt::Store { target: t, value } if *value == v => {
                if target.is_some() {
                    return None;
                }
                target = Some(t.clone());
            }
            Stmt::Let { inst, .. } if uses(inst, v) => return None,
            Stmt::Store { .. } | Stmt::Let { .. } => {}
            _ => return None,
        }
    }
    let t = target?;
    let contiguous = t.mask.is_empty() && t.index.coefficient(l) == 1;
    (contiguous && k.buffers[t.buffer].ty == ScalarType::F32).then_some(t)
}

/// Whether `inst` reads value `v`.
fn uses(inst: &Inst, v: ValueId) -> bool {
    match inst {
        Inst::Unary(_, x) | Inst::Convert(x) => *x == v,
        Inst::Binary(_, x, y) | Inst::Compare(_, x, y) => *x == v || *y == v,
        Inst::Select {
            cond,
            if_true,
            if_false,
        } => [cond, if_true, if_false].contains(&&v),
        Inst::Const(_) | Inst::Index(_) | Inst::Load(_) | Inst::AccValue(_) | Inst::AccIndex(_) => {
            false
        }
    }
}

impl Translator<'_, '_> {
    /// The span `exp` of loop `l`, if the options allow it and its conditions hold.
    pub(super) fn span_of(&self, l: LoopId, body: &[Stmt]) -> Option<SpanExp> {
        if !self.options.span_exp || !self.options.vectorize || self.wide.is_some() {
            return None;
        }
        span_plan(self.k, l, body)
    }

    /// Emits loop `l` storing the `exp`'s argument, then the call over the span it wrote.
    pub(super) fn emit_span_exp(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        span: &SpanExp,
        wide_plan: Option<&WidePlan>,
    ) -> Result<()> {
        self.span_identity = Some((span.result, span.arg));
        let emitted = self.emit_loop_as(l, body, wide_plan, &[]);
        self.span_identity = None;
        emitted?;
        let (start, end) = self.loop_range(l);
        let len = self.b.ins().isub(end, start);
        let zero = self.b.ins().iconst(types::I64, 0);
        let len = self.b.ins().smax(len, zero);
        self.loop_vals[l.index()] = Some(start);
        let first = self.affine(&span.target.index, 0);
        self.loop_vals[l.index()] = None;
        let addr = self.address(&span.target, first?);
        self.b.ins().call(self.pow.exp_span_f32, &[addr, len]);
        Ok(())
    }
}
