//! Code for the plans of [`span_plan`](crate::codegen::span_plan): the calls of native
//! routines a vector loop hands work to, block by block (span functions, whole sums, sums of a
//! function, extremes), its streamed stores through a staging area, and its prefetches of a
//! later row. That module says which loops take them and why the results are unchanged.
//!
//! Assumes the kernel's [`KernelStrategy`](crate::codegen::KernelStrategy) chose each plan
//! (its conditions hold). Guarantees what `span_plan` states: each iteration's element ends as
//! the value the loop would store, and a sum's partials hold the same f32 additions in the same
//! order as the loop's own.

use super::*;
pub(crate) use crate::codegen::span_plan::*;
use crate::codegen::strategy::Stream;
use weft_runtime::span_sum::{sum_mode, SumArg, SumTerm};
use weft_runtime::vmath::ArgForm;

/// The values a span routine's call passes for its [`Source`].
struct SourceArgs {
    /// The first element's address.
    src: Value,
    /// The shift (f32; 0 for none).
    shift: Value,
    /// The [`ArgForm`]'s code.
    form: Value,
    /// The factor (f32; 1 for none).
    scale: Value,
}

impl Translator<'_, '_> {
    /// Loop `l` as one call of the extreme routine over its range ([`ExtremeSpan`]), the
    /// result combined into the accumulator.
    pub(super) fn emit_extreme_span(&mut self, l: LoopId, span: &ExtremeSpan) -> Result<()> {
        let Some(AccRepr::Scalar { value, index: None }) = self.accs[span.acc.index()].clone()
        else {
            return self.internal(format!("accumulator %{} has no scalar value", span.acc));
        };
        let len = self.range_len(l);
        let first = self.first_index(l, &span.load)?;
        let src = self.address(&span.load, first);
        let min = self
            .b
            .ins()
            .iconst(types::I64, i64::from(span.kind == ReduceKind::Min));
        let scale = match span.scale {
            Some(c) => self.scalar(c)?,
            None => self.b.ins().f32const(1.0),
        };
        let call = self
            .b
            .ins()
            .call(self.pow.extreme_span_f32, &[src, len, min, scale]);
        let extreme = self.b.inst_results(call)[0];
        let cur = self.b.use_var(value);
        let next = self.combine(span.kind, ScalarType::F32, cur, extreme);
        self.b.def_var(value, next);
        Ok(())
    }

    /// Loop `l` as one call of the column extreme routine over its range ([`ExtremeRows`]).
    pub(super) fn emit_extreme_rows(&mut self, l: LoopId, plan: &ExtremeRows) -> Result<()> {
        let len = self.range_len(l);
        let at = self.first_index(l, &plan.acc)?;
        let acc = self.address(&plan.acc, at);
        let at = self.first_index(l, &plan.first)?;
        let src = self.address(&plan.first, at);
        let stride = self.b.ins().iconst(types::I64, plan.stride);
        let rows = self.b.ins().iconst(types::I64, plan.rows as i64);
        let min = self
            .b
            .ins()
            .iconst(types::I64, i64::from(plan.kind == ReduceKind::Min));
        let ahead = match &plan.prefetch {
            Some(next) => {
                let (start, _) = self.loop_range(l);
                self.ahead_address(next, start)?
            }
            None => self.b.ins().iconst(types::I64, 0),
        };
        self.b.ins().call(
            self.pow.extreme_rows_f32,
            &[acc, src, stride, rows, len, min, ahead],
        );
        Ok(())
    }

    /// Loop `l` as one call of the arg routine over its range ([`ArgExtremeSpan`]): the
    /// element at the best index folded into the value accumulator, and `(1, first NaN)` —
    /// or `(0, the range's first index)` where there is no NaN — into the NaN one, each by
    /// the loop's own arg step.
    pub(super) fn emit_arg_extreme_span(&mut self, l: LoopId, span: &ArgExtremeSpan) -> Result<()> {
        let scalar = |t: &Self, a: AccId| match t.accs[a.index()].clone() {
            Some(AccRepr::Scalar {
                value,
                index: Some(index),
            }) => Some((value, index)),
            _ => None,
        };
        let (Some(value_acc), Some(nan_acc)) =
            (scalar(self, span.value_acc), scalar(self, span.nan_acc))
        else {
            return self.internal(format!(
                "accumulators %{} and %{} are not scalar arg-reductions",
                span.value_acc, span.nan_acc
            ));
        };
        let (start, _) = self.loop_range(l);
        let len = self.range_len(l);
        let first = self.first_index(l, &span.load)?;
        let src = self.address(&span.load, first);
        let min = self
            .b
            .ins()
            .iconst(types::I64, i64::from(span.kind == ReduceKind::ArgMin));
        let slot =
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 16, 3));
        let out = self.b.ins().stack_addr(types::I64, slot, 0);
        self.b
            .ins()
            .call(self.pow.arg_extreme_span_f32, &[src, len, min, out]);
        let flags = MemFlagsData::trusted();
        let best = self.b.ins().load(types::I64, flags, out, 0);
        let nan = self.b.ins().load(types::I64, flags, out, 8);
        // The best value: the element there, or the identity (which no step takes) when the
        // span has no non-NaN value; its index clamped into the span to read it.
        let found = self.b.ins().icmp(IntCC::UnsignedLessThan, best, len);
        let one = self.b.ins().iconst(types::I64, 1);
        let last = self.b.ins().isub(len, one);
        let at = self.b.ins().umin(best, last);
        let at_bytes = self.b.ins().ishl_imm_u(at, 2);
        let addr = self.b.ins().iadd(src, at_bytes);
        let x = self.b.ins().load(types::F32, flags, addr, 0);
        let identity = weft_ir::loop_ir::semantics::reduce_identity(span.kind, ScalarType::F32);
        let identity = self.constant(identity);
        let x = self.b.ins().select(found, x, identity);
        let at = self.b.ins().iadd(start, at);
        self.arg_step(value_acc, span.kind, ScalarType::F32, x, at);
        // The NaN flag of the span, at its first NaN (or at its first element, as the loop's
        // first step takes a 0 over the identity).
        let has_nan = self.b.ins().icmp(IntCC::UnsignedLessThan, nan, len);
        let flag = self.b.ins().uextend(types::I32, has_nan);
        let zero = self.b.ins().iconst(types::I64, 0);
        let nan_at = self.b.ins().select(has_nan, nan, zero);
        let nan_at = self.b.ins().iadd(start, nan_at);
        self.arg_step(nan_acc, ReduceKind::ArgMax, ScalarType::I32, flag, nan_at);
        Ok(())
    }

    /// Loop `l` as one call of the sum routine over its range ([`SumSpan`]), given the
    /// accumulator's value and returning its new one: the loop's vector pass, combine, tail
    /// and f64 re-run, with its prefetches spread over the call.
    pub(super) fn emit_sum_span(&mut self, l: LoopId, span: &SumSpan) -> Result<()> {
        let Some(AccRepr::Scalar { value, index: None }) = self.accs[span.acc.index()].clone()
        else {
            return self.internal(format!("accumulator %{} has no scalar value", span.acc));
        };
        let len = self.range_len(l);
        let SourceArgs { src, shift, .. } = self.source_args(l, &span.source)?;
        let arg = match (span.source.shift, span.source.form) {
            (_, ArgForm::Times | ArgForm::TimesLess) => {
                return self.internal("a sum span of a product".to_string());
            }
            (None, _) => SumArg::Plain,
            (Some(_), ArgForm::LessShift) => SumArg::LessShift,
            (Some(_), ArgForm::ShiftLess) => SumArg::ShiftLess,
        };
        let mode = sum_mode(SumTerm::form(arg, span.square), span.width) as i64;
        let mode = self.b.ins().iconst(types::I64, mode);
        // The loop is not parallel, so its range is its whole extent, which `next`'s (the
        // same loop's, or the row's first pass of the same extent) is.
        let (at, bytes) = match &span.prefetch {
            Some(next) => self.next_row_address(next)?,
            None => {
                let zero = self.b.ins().iconst(types::I64, 0);
                (zero, zero)
            }
        };
        // The accumulator goes through a stack slot: a `preserve_all` call returns nothing.
        let slot = *self.sum_slot.get_or_insert_with(|| {
            self.b
                .create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3))
        });
        let acc = self.b.ins().stack_addr(types::I64, slot, 0);
        let init = self.b.use_var(value);
        let flags = MemFlagsData::new().with_notrap().with_aligned();
        self.b.ins().store(flags, init, acc, 0);
        self.b.ins().call(
            self.pow.sum_span_f32,
            &[src, len, mode, acc, at, bytes, shift],
        );
        let total = self.b.ins().load(types::F64, flags, acc, 0);
        self.b.def_var(value, total);
        Ok(())
    }

    /// Loop `l` (body `body`) summed by the span routine ([`ReduceSpan`]): one call per block
    /// of at most [`BLOCK`] iterations into zeroed partials, then [`Self::emit_summed_by_span`]
    /// (the partials combined, the scalar tail, the f64 re-run).
    pub(super) fn emit_reduce_span(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        span: &ReduceSpan,
    ) -> Result<()> {
        let block = reduce_block(self.k, l);
        let scratch = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            u32::try_from(block * 4).unwrap_or(u32::MAX),
            6,
        ));
        let slot = self.zeroed_partials(span.sum.width);
        self.in_blocks(l, block, |t| {
            t.call_reduce_span(l, span, scratch, Some(slot))
        })?;
        self.emit_summed_by_span(l, body, slot, Some((span, scratch)))
    }

    /// The f64 re-run of a [`ReduceSpan`] loop `l` into accumulator `acc`: per block, the
    /// routine's terms into `scratch` (the bits the loop's inline code computes), then each
    /// widened and added in order, as the loop's scalar code adds them — the same sum,
    /// without computing the function inline, which costs ~10× the routine (a row whose
    /// total is not finite, such as a log-likelihood with a `log 0`, re-runs).
    fn rerun_reduce_span(
        &mut self,
        l: LoopId,
        span: &ReduceSpan,
        scratch: StackSlot,
        acc: AccId,
    ) -> Result<()> {
        let Some(AccRepr::Scalar { value, .. }) = self.accs[acc.index()].clone() else {
            return self.internal(format!("accumulator %{acc} has no scalar value"));
        };
        let decl = self.k.accs[acc].clone();
        self.in_blocks(l, reduce_block(self.k, l), |t| {
            t.call_reduce_span(l, span, scratch, None)?;
            let len = t.range_len(l);
            let base = t.b.ins().stack_addr(types::I64, scratch, 0);
            let i = t.b.declare_var(types::I64);
            let zero = t.b.ins().iconst(types::I64, 0);
            t.b.def_var(i, zero);
            t.counted_loop(i, len, 1, |t, i| {
                let offset = t.b.ins().imul_imm_u(i, 4);
                let at = t.b.ins().iadd(base, offset);
                let flags = MemFlagsData::new().with_notrap();
                let term = t.b.ins().load(types::F32, flags, at, 0);
                let wide = t.b.ins().fpromote(types::F64, term);
                let cur = t.b.use_var(value);
                let next = t.combine(decl.kind, decl.ty, cur, wide);
                t.b.def_var(value, next);
                Ok(())
            })
        })
    }

    /// One call of [`Self::emit_reduce_span`] over loop `l`'s current range, its terms into
    /// `scratch`, summed into the partials at `slot` if any.
    fn call_reduce_span(
        &mut self,
        l: LoopId,
        span: &ReduceSpan,
        scratch: StackSlot,
        slot: Option<StackSlot>,
    ) -> Result<()> {
        let len = self.range_len(l);
        let dst = self.b.ins().stack_addr(types::I64, scratch, 0);
        let SourceArgs {
            src,
            shift,
            form,
            scale,
        } = self.source_args(l, &span.source)?;
        let zero = self.b.ins().iconst(types::I64, 0);
        let (sums, width) = match slot {
            Some(slot) => (
                self.b.ins().stack_addr(types::I64, slot, 0),
                self.b.ins().iconst(types::I64, i64::from(span.sum.width)),
            ),
            None => (zero, zero),
        };
        let callee = self.span_callee(span.op);
        self.b.ins().call(
            callee,
            &[dst, len, zero, zero, src, sums, width, shift, form, scale],
        );
        Ok(())
    }

    /// The routine's `src`, `shift`, `form` and `scale` arguments for `source` over loop `l`'s
    /// current range.
    fn source_args(&mut self, l: LoopId, source: &Source) -> Result<SourceArgs> {
        let first = self.first_index(l, &source.load)?;
        let src = self.address(&source.load, first);
        let shift = match source.shift {
            Some(u) => self.scalar(u)?,
            None => self.b.ins().f32const(0.0),
        };
        let scale = match source.scale {
            Some(c) => self.scalar(c)?,
            None => self.b.ins().f32const(1.0),
        };
        let form = self.b.ins().iconst(types::I64, source.form.code() as i64);
        Ok(SourceArgs {
            src,
            shift,
            form,
            scale,
        })
    }

    /// The span routine of `op`.
    fn span_callee(&self, op: UnaryOp) -> FuncRef {
        match op {
            UnaryOp::Tanh => self.pow.tanh_span_f32,
            UnaryOp::Sigmoid => self.pow.sigmoid_span_f32,
            UnaryOp::Log => self.pow.log_span_f32,
            _ => self.pow.exp_span_f32,
        }
    }

    /// Emits vector loop `l` as blocks of at most [`block_len`] iterations (or whole, if no
    /// longer), each with the span call and split of `span` and the staging and streaming
    /// copy of `stream`.
    pub(super) fn emit_blocked(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        plan: &WidePlan,
        span: Option<&SpanCall>,
        stream: Option<&Stream>,
    ) -> Result<()> {
        if let Some(sum) = span.and_then(|s| s.sum.as_ref()) {
            self.begin_span_sum(sum);
        }
        let block = block_len(self.k, l, span, stream.map(|s| &s.target));
        self.in_blocks(l, block, |t| t.emit_block(l, body, plan, span, stream))
    }

    /// `emit` once over loop `l`'s range if it is at most `block` long, else in a loop of
    /// blocks of `block` iterations, each with `l`'s range overridden to the block.
    pub(super) fn in_blocks(
        &mut self,
        l: LoopId,
        block: u64,
        mut emit: impl FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        if self.k.loops[l].extent <= block {
            return emit(self);
        }
        let (start, end) = self.loop_range(l);
        let cursor = self.b.declare_var(types::I64);
        self.b.def_var(cursor, start);
        // `counted_loop` runs whole steps (`at + block <= padded`, i.e. `at < end`); the last
        // block is cut at `end`.
        let padded = self.add_const(end, block as i64 - 1);
        let step = u32::try_from(block).unwrap_or(u32::MAX);
        self.counted_loop(cursor, padded, step, |t, at| {
            let next = t.b.ins().iadd_imm_s(at, i64::from(step));
            let block_end = t.b.ins().smin(next, end);
            let outer = t.range_override.replace((l, at, block_end));
            let emitted = emit(t);
            t.range_override = outer;
            emitted
        })
    }

    /// One block of [`Self::emit_blocked`]: loop `l` over its current range — the whole body,
    /// or with `span` a first loop storing the function's argument (only what it needs), the
    /// call, and for split loops the second loop — with `stream`'s buffer staged and then
    /// copied out.
    fn emit_block(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        plan: &WidePlan,
        span: Option<&SpanCall>,
        stream: Option<&Stream>,
    ) -> Result<()> {
        if let Some(Stream {
            target,
            scaled: Some(copy),
        }) = stream
        {
            return self.emit_scaled_copy(l, plan, target, copy);
        }
        let stream = stream.map(|s| &s.target);
        if let Some(target) = stream {
            self.begin_staging(l, target)?;
        }
        let emitted = match span {
            Some(span) => self.emit_span_loops(l, body, span),
            None => self.emit_loop_as(l, body, Some(plan), &[]),
        };
        let staged = self.staging.take();
        emitted?;
        if let (Some(target), Some(staged)) = (stream, staged) {
            self.stream_out(l, target, staged);
        }
        Ok(())
    }

    /// The loops of one block of a span function: the first, the call, the second if split.
    fn emit_span_loops(&mut self, l: LoopId, body: &[Stmt], span: &SpanCall) -> Result<()> {
        if span.source.is_none() {
            let mut first = lets_of(body, &slice(body, span.arg, None));
            first.push(Stmt::Store {
                target: span.target.clone(),
                value: span.arg,
            });
            let first_plan = plan(self.k, l, &first);
            self.emit_loop_as(l, &first, first_plan.as_ref(), &[])?;
        }
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

    /// The index of `access` at the first iteration of loop `l`'s current range.
    pub(super) fn first_index(&mut self, l: LoopId, access: &BufferAccessExpr) -> Result<Value> {
        let (start, _) = self.loop_range(l);
        self.loop_vals[l.index()] = Some(start);
        let first = self.affine(&access.index, 0);
        self.loop_vals[l.index()] = None;
        first
    }

    /// The number of iterations of loop `l`'s current range (0 if empty).
    pub(super) fn range_len(&mut self, l: LoopId) -> Value {
        let (start, end) = self.loop_range(l);
        let len = self.sub_values(end, start);
        match self.known_i64(len) {
            Some(n) => self.b.ins().iconst(types::I64, n.max(0)),
            None => {
                let zero = self.b.ins().iconst(types::I64, 0);
                self.b.ins().smax(len, zero)
            }
        }
    }

    /// The call of the span routine over the elements loop `l` stored.
    fn call_span(&mut self, l: LoopId, span: &SpanCall) -> Result<()> {
        let len = self.range_len(l);
        let first = self.first_index(l, &span.target)?;
        let addr = self.address(&span.target, first);
        let callee = self.span_callee(span.op);
        let zero = self.b.ins().iconst(types::I64, 0);
        let (at, bytes) = match &span.prefetch {
            Some(next) => self.next_row_address(next)?,
            None => (zero, zero),
        };
        let SourceArgs {
            src,
            shift,
            form,
            scale,
        } = match &span.source {
            Some(source) => self.source_args(l, source)?,
            None => SourceArgs {
                src: zero,
                shift: self.b.ins().f32const(0.0),
                form: zero,
                scale: self.b.ins().f32const(1.0),
            },
        };
        let (sums, width) = match &span.sum {
            Some(sum) => {
                let Some(&(_, slot)) = self.span_sums.iter().find(|(m, _)| *m == sum.loop_id)
                else {
                    return self.internal(format!("span sum of %{} has no partials", sum.loop_id));
                };
                let sums = self.b.ins().stack_addr(types::I64, slot, 0);
                (sums, self.b.ins().iconst(types::I64, i64::from(sum.width)))
            }
            None => (zero, zero),
        };
        self.b.ins().call(
            callee,
            &[addr, len, at, bytes, src, sums, width, shift, form, scale],
        );
        Ok(())
    }

    /// The block of loop `l` (body `body`) as one call of the scaled streaming copy
    /// ([`ScaledCopy`]), with the loop's vector step for where its scalar tail would start.
    fn emit_scaled_copy(
        &mut self,
        l: LoopId,
        p: &WidePlan,
        target: &BufferAccessExpr,
        copy: &ScaledCopy,
    ) -> Result<()> {
        let len = self.range_len(l);
        let first = self.first_index(l, target)?;
        let dst = self.address(target, first);
        let first = self.first_index(l, &copy.load)?;
        let src = self.address(&copy.load, first);
        let by = self.scalar(copy.by)?;
        let (r, s, step) = match copy.op {
            BinaryOp::Div => {
                let (r, s) = self.scaled_reciprocal(by);
                (r, s, i64::from(p.lanes * p.parts))
            }
            _ => (by, self.b.ins().f32const(1.0), 1),
        };
        let step = self.b.ins().iconst(types::I64, step);
        self.b
            .ins()
            .call(self.pow.stream_scaled, &[dst, src, len, step, r, s, by]);
        self.streamed = true;
        Ok(())
    }

    /// Zeroed partials for `sum` (on the stack, for the loop's span calls to add into and
    /// [`Self::emit_summed_by_span`] to combine when it emits `sum`'s loop).
    fn begin_span_sum(&mut self, sum: &SpanSum) {
        let slot = self.zeroed_partials(sum.width);
        self.span_sums.push((sum.loop_id, slot));
    }

    /// `width` f32 partials (a multiple of 4) on the stack, zeroed.
    fn zeroed_partials(&mut self, width: u32) -> StackSlot {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            width * 4,
            0,
        ));
        let base = self.b.ins().stack_addr(types::I64, slot, 0);
        let zero = self.b.ins().f32const(0.0);
        let zeros = self.b.ins().splat(types::F32X4, zero);
        for j in 0..width / 4 {
            self.b.ins().store(
                MemFlagsData::new().with_notrap(),
                zeros,
                base,
                (16 * j) as i32,
            );
        }
        slot
    }

    /// Sum loop `m` (body `body`) whose vector pass the span routine did into the partials at
    /// `slot` ([`SpanSum`]): those partials combined as the loop's own vector code combines
    /// them, then the loop's scalar tail, then its f64 re-run if a total is not finite.
    pub(super) fn emit_summed_by_span(
        &mut self,
        m: LoopId,
        body: &[Stmt],
        slot: StackSlot,
        terms: Option<(&ReduceSpan, StackSlot)>,
    ) -> Result<()> {
        let narrow = &self.vector_strategy(m)?.narrow;
        let before = self.acc_vars_now(narrow);
        let acc = self.settle_summed(m, body, slot)?;
        match terms {
            // The terms are the routine's: its re-run computes them again (see the method).
            Some((span, scratch)) => self.rerun_unless_finite_with(m, narrow, before, |t| {
                t.rerun_reduce_span(m, span, scratch, acc)
            }),
            None => self.rerun_unless_finite(m, body, narrow, before),
        }
    }

    /// The partials at `slot` of sum loop `m` (body `body`) combined into its accumulator
    /// as the loop's own vector code combines them, then the loop's scalar tail; returns the
    /// accumulator.
    pub(super) fn settle_summed(
        &mut self,
        m: LoopId,
        body: &[Stmt],
        slot: StackSlot,
    ) -> Result<AccId> {
        let VectorLoop {
            plan: p, narrow, ..
        } = self.vector_strategy(m)?;
        let [acc] = narrow[..] else {
            return self.internal(format!(
                "span-summed loop %{m} sums {} f32 partials",
                narrow.len()
            ));
        };
        let Some(scalar) = self.accs[acc.index()].clone() else {
            return self.internal(format!("accumulator %{acc} summed before its declaration"));
        };
        let width = p.lanes * p.parts;
        let base = self.b.ins().stack_addr(types::I64, slot, 0);
        let parts: Vec<Value> = (0..width / 4)
            .map(|j| {
                self.b.ins().load(
                    types::F32X4,
                    MemFlagsData::new().with_notrap(),
                    base,
                    (16 * j) as i32,
                )
            })
            .collect();
        let decl = self.k.accs[acc].clone();
        self.settle_partials(&decl, ScalarType::F32, &parts, &scalar);
        if !self.k.loops[m].extent.is_multiple_of(u64::from(width)) {
            let (start, end) = self.loop_range(m);
            let n = self.b.ins().isub(end, start);
            let steps = self.b.ins().udiv_imm_u(n, i64::from(width));
            let whole = self.b.ins().imul_imm_u(steps, i64::from(width));
            let tail = self.b.ins().iadd(start, whole);
            let counter = self.b.declare_var(types::I64);
            self.b.def_var(counter, tail);
            self.emit_steps(m, body, counter, end, 1)?;
            self.loop_vals[m.index()] = None;
        }
        Ok(acc)
    }

    /// The address and length of `next`'s read [`ROWS_AHEAD`] iterations of its row loop on.
    fn next_row_address(&mut self, next: &NextRow) -> Result<(Value, Value)> {
        let zero = self.b.ins().iconst(types::I64, 0);
        let at = self.ahead_address(next, zero)?;
        let bytes = self.b.ins().iconst(types::I64, next.bytes as i64);
        Ok((at, bytes))
    }

    /// The address `next`'s read has [`ROWS_AHEAD`] iterations of its row loop on, with its
    /// own loop at `column`.
    pub(super) fn ahead_address(&mut self, next: &NextRow, column: Value) -> Result<Value> {
        let (row, first) = (next.row.index(), next.first.index());
        let Some(current) = self.loop_vals[row] else {
            return self.internal(format!("prefetch: row loop %{} is not running", next.row));
        };
        let saved = self.loop_vals[first];
        self.loop_vals[row] = Some(self.b.ins().iadd_imm_s(current, ROWS_AHEAD));
        self.loop_vals[first] = Some(column);
        let index = self.affine(&next.load.index, 0);
        self.loop_vals[row] = Some(current);
        self.loop_vals[first] = saved;
        Ok(self.address(&next.load, index?))
    }

    /// The prefetches of one vector step of loop `l` starting at `i` ([`pass_prefetch`]):
    /// the lines of the step's columns [`ROWS_AHEAD`] rows on.
    pub(super) fn prefetch_step(&mut self, l: LoopId, i: Value, step: u32) -> Result<()> {
        let Some((pl, next)) = self.step_prefetch.clone() else {
            return Ok(());
        };
        if pl != l {
            return Ok(());
        }
        let size = self.k.buffers[next.load.buffer].ty.size_bytes() as u64;
        let step_bytes = u64::from(step) * size;
        let at = self.ahead_address(&next, i)?;
        for line in 0..(step_bytes / LINE_BYTES).max(1) {
            let a = self.b.ins().iadd_imm_s(at, (line * LINE_BYTES) as i64);
            self.b.ins().call(self.pow.prefetch_line, &[a]);
        }
        Ok(())
    }

    /// Points every access of `target`'s buffer at the staging area for the block of loop
    /// `l` about to be emitted (`self.staging`).
    fn begin_staging(&mut self, l: LoopId, target: &BufferAccessExpr) -> Result<()> {
        let slot = *self.staging_slot.get_or_insert_with(|| {
            self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                (STAGING_BYTES + STAGING_ALIGN) as u32,
                0,
            ))
        });
        // Stack slots are only as aligned as the frame: align the address by hand.
        let raw = self.b.ins().stack_addr(types::I64, slot, 0);
        let bumped = self.b.ins().iadd_imm_s(raw, STAGING_ALIGN as i64 - 1);
        let staging = self.b.ins().band_imm_s(bumped, -(STAGING_ALIGN as i64));
        let first = self.first_index(l, target)?;
        self.staging = Some(Staging {
            buffer: target.buffer,
            base: staging,
            first,
        });
        Ok(())
    }

    /// The streaming copy of what the block of loop `l` staged (`staged`, no longer in
    /// effect) for `target` into its place.
    fn stream_out(&mut self, l: LoopId, target: &BufferAccessExpr, staged: Staging) {
        let size = self.k.buffers[target.buffer].ty.size_bytes() as i64;
        let len = self.range_len(l);
        let bytes = self.mul_const(len, size);
        let dst = self.address(target, staged.first);
        self.b
            .ins()
            .call(self.pow.stream_copy, &[dst, staged.base, bytes]);
    }
}

/// Where a block's accesses of a streamed buffer go instead ([`Translator::emit_blocked`]):
/// element `first + j` of `buffer` is element `j` of the staging area at `base`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Staging {
    pub(super) buffer: BufferId,
    pub(super) base: Value,
    pub(super) first: Value,
}
