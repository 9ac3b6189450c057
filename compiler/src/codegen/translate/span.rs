//! An f32 `exp`, `tanh` or `sigmoid` stored into a contiguous span, computed after its vector
//! loop by the native span routine (`weft_runtime::vmath`: AVX-512F, or AVX2 with FMA).
//!
//! Cranelift's 128-bit `exp` needs about 35 instructions per four lanes, a third of them
//! spills of its constants; softmax's row pass spent most of its time there. When a vector
//! loop's one store is `store T[.. + i], f(a)` — `T` contiguous along the loop, and the
//! result used by that store alone — the loop stores `a` instead, and one call after the loop
//! replaces the span it wrote by its `f`, eight or sixteen lanes at a time. When the store's
//! value is computed *from* `f(a)` (gelu's `0.5·x·(1 + tanh(z))`), the loop splits in two
//! around the call: the first stores `a` (only what `a` needs), the second reads `f(a)` back from
//! `T[.. + i]` and computes the rest (only what the store needs, its loads repeated from
//! cache). A loop longer than [`BLOCK`] runs block by block, each block its loops and its
//! call, so nothing is read back from memory.
//!
//! Assumes a verified kernel and a host with AVX2 and FMA (`TranslateOptions::span_math`).
//! Guarantees: applied only where the loop is vectorised, its body is lets and that one store
//! (no loop, no accumulator, no load of `T`, so no iteration can observe another's element
//! of `T`), and the store is unmasked with coefficient 1 along the loop. Each iteration's
//! element of `T` ends as the value the loop would store: the first loop's `a`, the call's
//! `f(a)` (bits of the inline code, [`weft_runtime::vmath`]), the second loop's value from it
//! computed by the same instructions; so results are unchanged, only the time moves.

use super::*;

/// Loops shorter than this keep the inline function: a call costs about as much as a few
/// dozen inline vectors.
const MIN_EXTENT: u64 = 32;

/// Longer loops run in blocks of this many iterations, each its loop(s) and its call, so the
/// call and a split loop's second half read what the first just wrote from L1 (16 KiB of f32),
/// not memory.
pub(crate) const BLOCK: u64 = 4096;

/// A function of loop `l` to take out of the loop and run over the span its store wrote.
#[derive(Clone, Debug)]
pub(crate) struct SpanCall {
    /// The function.
    pub(crate) op: UnaryOp,
    /// Its result, which the loop replaces by its argument.
    pub(crate) result: ValueId,
    /// Its argument.
    pub(crate) arg: ValueId,
    /// The store writing it: the span starts at its index with `l` at its first iteration.
    pub(crate) target: BufferAccessExpr,
    /// The value the loop stores, when computed from the result rather than the result
    /// itself: the loop splits in two around the call.
    pub(crate) rest: Option<ValueId>,
}

/// The span function of vector loop `l` with body `body` of `k`, if the module's conditions
/// hold; `weft explain` reports it.
pub(crate) fn span_plan(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<SpanCall> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize || decl.extent < MIN_EXTENT {
        return None;
    }
    let (target, stored) = the_store(k, l, body)?;
    let needed = slice(body, stored, None);
    let (op, result, arg) = body.iter().find_map(|s| match s {
        Stmt::Let {
            result,
            inst: Inst::Unary(op @ (UnaryOp::Exp | UnaryOp::Tanh | UnaryOp::Sigmoid), arg),
        } if k.values[*result] == ScalarType::F32 && needed.contains(result) => {
            Some((*op, *result, *arg))
        }
        _ => None,
    })?;
    let rest = (stored != result).then_some(stored);
    Some(SpanCall {
        op,
        result,
        arg,
        target,
        rest,
    })
}

/// The body's one store, if the body is lets and that store, the store is an unmasked f32
/// store contiguous along `l`, and nothing in the body loads its buffer.
fn the_store(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<(BufferAccessExpr, ValueId)> {
    let mut store = None;
    for s in body {
        match s {
            Stmt::Store { target, value } if store.is_none() => {
                store = Some((target.clone(), *value));
            }
            Stmt::Let { .. } => {}
            _ => return None,
        }
    }
    let (t, v) = store?;
    let loads_target = body
        .iter()
        .any(|s| matches!(s, Stmt::Let { inst: Inst::Load(a), .. } if a.buffer == t.buffer));
    let contiguous = t.mask.is_empty() && t.index.coefficient(l) == 1;
    (contiguous && !loads_target && k.buffers[t.buffer].ty == ScalarType::F32).then_some((t, v))
}

/// The values `v` is computed from in `body` (itself included), not looking through `stop`.
fn slice(body: &[Stmt], v: ValueId, stop: Option<ValueId>) -> Vec<ValueId> {
    let mut needed = vec![v];
    for s in body.iter().rev() {
        if let Stmt::Let { result, inst } = s {
            if needed.contains(result) && Some(*result) != stop {
                needed.extend(operands(inst));
            }
        }
    }
    needed
}

/// The lets of `body` defining values in `needed`, in order.
fn lets_of(body: &[Stmt], needed: &[ValueId]) -> Vec<Stmt> {
    body.iter()
        .filter(|s| matches!(s, Stmt::Let { result, .. } if needed.contains(result)))
        .cloned()
        .collect()
}

/// The values `inst` reads.
fn operands(inst: &Inst) -> Vec<ValueId> {
    match inst {
        Inst::Unary(_, x) | Inst::Convert(x) => vec![*x],
        Inst::Binary(_, x, y) | Inst::Compare(_, x, y) => vec![*x, *y],
        Inst::Select {
            cond,
            if_true,
            if_false,
        } => vec![*cond, *if_true, *if_false],
        Inst::Const(_) | Inst::Index(_) | Inst::Load(_) | Inst::AccValue(_) | Inst::AccIndex(_) => {
            Vec::new()
        }
    }
}

impl Translator<'_, '_> {
    /// The span function of loop `l`, if the options allow it and its conditions hold.
    pub(super) fn span_of(&self, l: LoopId, body: &[Stmt]) -> Option<SpanCall> {
        if !self.options.span_math || !self.options.vectorize || self.wide.is_some() {
            return None;
        }
        span_plan(self.k, l, body)
    }

    /// Emits loop `l` as [`BLOCK`]-long blocks (or whole, if no longer), each storing the
    /// function's argument, calling the span routine over what it stored, and (split loops)
    /// finishing the stored value from it.
    pub(super) fn emit_span(&mut self, l: LoopId, body: &[Stmt], span: &SpanCall) -> Result<()> {
        if self.k.loops[l].extent <= BLOCK {
            return self.emit_span_block(l, body, span);
        }
        let (start, end) = self.loop_range(l);
        let (head, block, exit) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        let cursor = self.b.declare_var(types::I64);
        self.b.def_var(cursor, start);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let at = self.b.use_var(cursor);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, at, end);
        self.b.ins().brif(more, block, &[], exit, &[]);
        self.b.switch_to_block(block);
        let at = self.b.use_var(cursor);
        let next = self.b.ins().iadd_imm_s(at, BLOCK as i64);
        let block_end = self.b.ins().smin(next, end);
        self.range_override = Some((l, at, block_end));
        let emitted = self.emit_span_block(l, body, span);
        self.range_override = None;
        emitted?;
        self.b.def_var(cursor, next);
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// One block of [`Self::emit_span`]: loop `l` over its current range, as a first loop
    /// storing the function's argument (only what it needs), the call, and for split loops
    /// the second loop.
    fn emit_span_block(&mut self, l: LoopId, body: &[Stmt], span: &SpanCall) -> Result<()> {
        let mut first = lets_of(body, &slice(body, span.arg, None));
        first.push(Stmt::Store {
            target: span.target.clone(),
            value: span.arg,
        });
        let first_plan = plan(self.k, l, &first);
        self.emit_loop_as(l, &first, first_plan.as_ref(), &[])?;
        self.call_span(l, span)?;
        if let Some(stored) = span.rest {
            let second: Vec<Stmt> = lets_of(body, &slice(body, stored, Some(span.result)))
                .into_iter()
                .map(|s| match s {
                    Stmt::Let { result, .. } if result == span.result => Stmt::Let {
                        result,
                        inst: Inst::Load(span.target.clone()),
                    },
                    s => s,
                })
                .chain([Stmt::Store {
                    target: span.target.clone(),
                    value: stored,
                }])
                .collect();
            let second_plan = plan(self.k, l, &second);
            self.emit_loop_as(l, &second, second_plan.as_ref(), &[])?;
        }
        Ok(())
    }

    /// The call of the span routine over the elements loop `l` stored.
    fn call_span(&mut self, l: LoopId, span: &SpanCall) -> Result<()> {
        let (start, end) = self.loop_range(l);
        let len = self.b.ins().isub(end, start);
        let zero = self.b.ins().iconst(types::I64, 0);
        let len = self.b.ins().smax(len, zero);
        self.loop_vals[l.index()] = Some(start);
        let first = self.affine(&span.target.index, 0);
        self.loop_vals[l.index()] = None;
        let addr = self.address(&span.target, first?);
        let callee = match span.op {
            UnaryOp::Tanh => self.pow.tanh_span_f32,
            UnaryOp::Sigmoid => self.pow.sigmoid_span_f32,
            _ => self.pow.exp_span_f32,
        };
        self.b.ins().call(callee, &[addr, len]);
        Ok(())
    }
}
