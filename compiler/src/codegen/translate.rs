//! Translation of a verified loop-IR kernel into a Cranelift function.
//!
//! Assumes the kernel passed [`weft_ir::loop_ir::verify`]: all accesses are in bounds, so no
//! checks are emitted. Guarantees: the function has the signature of
//! `weft_runtime::KernelEntry` — `(buffer table, parallel begin, parallel end)` — and computes
//! what [`weft_ir::loop_ir::interpret`] computes (bit-exactly for integers and `bool`; floats up
//! to polynomial accuracy and reduction order). Loops become counted block loops; `unroll(n)`
//! emits `n` body copies per step plus a scalar tail; `vectorize` (when
//! [`super::vectorize::plan`] allows) runs `lanes × unroll` iterations per step with 128-bit
//! vectors, independent vector accumulators per reduction, and a scalar tail. The parallel
//! loop's range comes from the arguments, clamped to `0..extent`, so any range is safe.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    types, AbiParam, ConstantData, Endianness, FuncRef, Function, InstBuilder, InstructionData,
    MemFlagsData, Opcode, Signature, StackSlot, StackSlotData, StackSlotKind, Type, Value,
    ValueDef,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{
    AccDecl, AccId, BinaryOp, BufferAccessExpr, BufferId, CompareOp, Inst, Kernel, LoopId,
    ReduceKind, ScalarType, ScalarValue, Stmt, UnaryOp, ValueId,
};

pub(crate) mod jam;
pub(crate) mod outline;
pub(crate) mod span;

use outline::Outlining;

use super::leaf::{self, LeafScalar};
use super::math::MathEmitter;
use super::strategy::{
    KernelStrategy, LeafStrategy, LoopStrategy, TranslateOptions, VectorLoop, VectorRoutine,
};
use super::vectorize::{depends_on, plan, WidePlan};
// Read by `narrow_sums` under this path.
pub(crate) use super::vectorize::widenings;
use super::CodegenError;

/// The Cranelift type holding a value of `ty` (`bool` is an `i8` holding 0 or 1).
pub(crate) fn clif_type(ty: ScalarType) -> Type {
    match ty {
        ScalarType::F32 => types::F32,
        ScalarType::F64 => types::F64,
        ScalarType::I32 => types::I32,
        ScalarType::I64 => types::I64,
        ScalarType::Bool => types::I8,
    }
}

/// The kernel entry signature: `(i64 table, i64 begin, i64 end)`.
pub(crate) fn kernel_signature(call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    for _ in 0..3 {
        sig.params.push(AbiParam::new(types::I64));
    }
    sig
}

/// Imported scalar functions: `pow` (`f32`, `f64`), and `sin`/`cos` for arguments too large
/// for the polynomials' range reduction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PowRefs {
    pub f32: FuncRef,
    pub f64: FuncRef,
    pub sin_f32: FuncRef,
    pub sin_f64: FuncRef,
    pub cos_f32: FuncRef,
    pub cos_f64: FuncRef,
    /// `weft_exp_f32_span(dst, len, at, bytes, src, sums, width, shift)`: `e^x` over a span
    /// ([`span`]).
    pub exp_span_f32: FuncRef,
    /// `weft_tanh_f32_span`, the same parameters.
    pub tanh_span_f32: FuncRef,
    /// `weft_sigmoid_f32_span`, the same parameters.
    pub sigmoid_span_f32: FuncRef,
    /// `weft_log_f32_span`, the same parameters.
    pub log_span_f32: FuncRef,
    /// `weft_stream_copy(dst, src, bytes)`: a copy with non-temporal stores ([`span`]).
    pub stream_copy: FuncRef,
    /// `weft_prefetch_line(at)` (`preserve_all`): a line of a later row ([`span`]).
    pub prefetch_line: FuncRef,
    /// `weft_stream_scaled_f32(dst, src, len, step, r, s, d)`: a scaled streamed copy
    /// ([`span`]).
    pub stream_scaled: FuncRef,
    /// `weft_transpose_32(dst, ld, src, ls, rows, cols, stream)`: a transposing copy's
    /// rows and columns ([`jam`]).
    pub transpose_32: FuncRef,
    /// `weft_extreme_f32_span(src, len, min) -> f32`: a span's exact maximum or minimum
    /// ([`span::ExtremeSpan`]).
    pub extreme_span_f32: FuncRef,
    /// `weft_extreme_rows_f32(acc, src, stride, rows, len, min, ahead)`: a row of accumulators
    /// folded with the same columns of rows a stride apart ([`span::ExtremeRows`]).
    pub extreme_rows_f32: FuncRef,
    /// `weft_arg_extreme_f32_span(src, len, min, out)`: the first indices of a span's best
    /// non-NaN value and of its first NaN ([`span::ArgExtremeSpan`]).
    pub arg_extreme_span_f32: FuncRef,
    /// `weft_sum_f32_span(src, len, mode, acc, at, bytes, shift)` (`preserve_all`): a whole
    /// sum loop over a span into `*acc` ([`span::SumSpan`]).
    pub sum_span_f32: FuncRef,
}

#[derive(Clone, Debug)]
enum Repr {
    Scalar(Value),
    Wide(Vec<Value>),
}

#[derive(Clone, Debug)]
enum AccRepr {
    Scalar {
        value: Variable,
        index: Option<Variable>,
    },
    Wide(Vec<Variable>),
    /// The vector partials of an f32 `max`/`min` over a vector loop, in [`Extreme`] form.
    Extreme(Vec<Extreme>),
}

/// One vector partial of an f32 `max` or `min` reduced across a vector loop's steps.
///
/// The exact rule (`weft_ir::scalar::reduce_max`: NaN if any term is NaN, −0 < +0) costs
/// Cranelift's `fmax` eight instructions per vector on x86; softmax's row max spent 2.4
/// cycles per four elements there. Instead `value` takes `maxps`/`minps` (one instruction:
/// keeps the accumulator when the term is NaN or equal), and three integer lane-wise
/// reductions of the terms' bits (one instruction each with SSE4.1) recover the exact result
/// once, after the loop ([`Translator::settle_extreme`]): a NaN term shows as a signed
/// maximum above `+inf`'s bits or an unsigned maximum above `−inf`'s, and when the result is
/// a zero its sign is whether a `+0` (signed maximum 0) or a `−0` (signed minimum `i32::MIN`)
/// was among the terms.
#[derive(Clone, Copy, Debug)]
struct Extreme {
    value: Variable,
    bits_smax: Variable,
    bits_umax: Variable,
    bits_smin: Variable,
}

/// The vector loop being emitted. A varying value of float type `t` is held in
/// [`WideCtx::vectors`]`(t)` vectors of [`vector_type`]`(t)`, in lane order.
#[derive(Clone, Copy, Debug)]
struct WideCtx {
    loop_id: LoopId,
    lanes: u32,
    parts: u32,
}

impl WideCtx {
    /// 128-bit vectors holding one step (`lanes × parts` iterations) of a value of type `ty`.
    fn vectors(&self, ty: ScalarType) -> u32 {
        self.parts * (self.lanes / vector_lanes(ty)).max(1)
    }
}

/// Whether an accumulator reduced across a vector loop takes the [`Extreme`] form.
fn is_extreme(kind: ReduceKind, ty: ScalarType) -> bool {
    matches!(kind, ReduceKind::Max | ReduceKind::Min) && ty == ScalarType::F32
}

/// The type of an accumulator's vector partials: f32 when `narrow`
/// ([`AccDecl::narrow_partials`](weft_ir::loop_ir::AccDecl)), else its own.
fn partial_type(decl: &AccDecl, narrow: bool) -> ScalarType {
    if narrow {
        ScalarType::F32
    } else {
        decl.ty
    }
}

/// Lanes of `ty` in a 128-bit vector.
fn vector_lanes(ty: ScalarType) -> u32 {
    16 / ty.size_bytes() as u32
}

/// The 128-bit vector type of float `ty`.
fn vector_type(ty: ScalarType) -> Type {
    if ty == ScalarType::F64 {
        types::F64X2
    } else {
        types::F32X4
    }
}

/// The functions a kernel's code calls, declared in its function: the imported routines, and
/// per leaf loop of its strategy the assembled function ([`leaf`](super::leaf)).
pub(crate) struct Imports {
    pub pow: PowRefs,
    pub leaves: Vec<(LoopId, FuncRef)>,
}

/// Fills `func` (whose signature must be [`kernel_signature`], its `imports` declared) with
/// the code of `kernel`; returns the functions it calls for the loops it outlined
/// ([`outline`]), the `i`th named `(OUTLINED_NAMESPACE, i)` in `func`.
pub(crate) fn translate(
    kernel: &Kernel,
    strategy: &KernelStrategy,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
    imports: &Imports,
    options: TranslateOptions,
    frontend: TargetFrontendConfig,
) -> Result<Vec<Function>> {
    let outlining = options
        .outline
        .map(|_| Outlining::new(strategy, func, frontend));
    let mut b = FunctionBuilder::new(func, fctx);
    let entry = b.create_block();
    b.append_block_params_for_function_params(entry);
    b.switch_to_block(entry);
    let params = b.block_params(entry).to_vec();
    let (table, begin, end) = (params[0], params[1], params[2]);
    let mut t = Translator::new(
        kernel,
        strategy,
        b,
        options,
        imports.pow,
        table,
        reduced_only(kernel),
    );
    t.outlining = outlining;
    t.leaves = &imports.leaves;
    if let Some(l) = kernel.parallel_loop() {
        let extent = kernel.loops[l].extent as i64;
        let zero = t.b.ins().iconst(types::I64, 0);
        let ext = t.b.ins().iconst(types::I64, extent);
        let lo = t.b.ins().smax(begin, zero);
        let lo = t.b.ins().smin(lo, ext);
        let hi = t.b.ins().smin(end, ext);
        t.parallel = Some((l, lo, hi));
    }
    t.stmts(&kernel.body)?;
    if t.staging_slot.is_some() || t.streamed {
        // Streamed stores are weakly ordered: fence once, before whatever publishes the
        // kernel's completion to another thread (`weft_runtime::stream`).
        t.b.ins().fence();
    }
    t.b.ins().return_(&[]);
    t.b.seal_all_blocks();
    t.b.finalize(frontend);
    Ok(t.outlining.map(|o| o.functions).unwrap_or_default())
}

/// Per value of `kernel`: the accumulators it is reduced into (`reduce %a, %v`), if nothing
/// else reads it — no instruction, store, condition or arg-reduction index.
pub(crate) fn reduced_only(kernel: &Kernel) -> Vec<Option<Vec<AccId>>> {
    fn walk(body: &[Stmt], out: &mut [Option<Vec<AccId>>]) {
        let other = |v: ValueId, out: &mut [Option<Vec<AccId>>]| out[v.index()] = None;
        for s in body {
            match s {
                Stmt::Let { inst, .. } => inst.operands().into_iter().for_each(|v| other(v, out)),
                Stmt::Store { value, .. } => other(*value, out),
                Stmt::Reduce { acc, value, index } => {
                    if let Some(accs) = &mut out[value.index()] {
                        accs.push(*acc);
                    }
                    index.iter().for_each(|&i| other(i, out));
                }
                Stmt::If { cond, body } => {
                    other(*cond, out);
                    walk(body, out);
                }
                Stmt::Loop { body, .. } => walk(body, out),
                Stmt::DeclareAcc(_) => {}
            }
        }
    }
    let mut out = vec![Some(Vec::new()); kernel.values.len()];
    walk(&kernel.body, &mut out);
    out
}

struct Translator<'a, 'b> {
    k: &'a Kernel,
    /// How each loop is emitted ([`strategy`](super::strategy)).
    strategy: &'a KernelStrategy,
    b: FunctionBuilder<'b>,
    options: TranslateOptions,
    pow: PowRefs,
    bases: Vec<Value>,
    values: Vec<Option<Repr>>,
    loop_vals: Vec<Option<Value>>,
    accs: Vec<Option<AccRepr>>,
    wide: Option<WideCtx>,
    /// Constant added to a loop's index value (lane offsets inside a vector step).
    wide_offset: Vec<i64>,
    parallel: Option<(LoopId, Value, Value)>,
    /// Per value: the f32 value it is `convert` of, if it widens one to f64.
    widened_from: &'a [Option<ValueId>],
    /// Per value: the accumulators it is reduced into, if that is its only use.
    reduced_only: Vec<Option<Vec<AccId>>>,
    /// Accumulators whose vector partials the vector loop being emitted keeps in f32
    /// ([`AccDecl::narrow_partials`](weft_ir::loop_ir::AccDecl)).
    narrowed: Vec<AccId>,
    /// Loads whose value the jammed step being emitted took from a transposed block
    /// ([`jam`]).
    jam_loads: Vec<(ValueId, Repr)>,
    /// A block of a loop's range emitted in place of the whole ([`span`]'s blocks).
    range_override: Option<(LoopId, Value, Value)>,
    /// The stack slot holding the staging area of streamed stores, once one is needed.
    staging_slot: Option<StackSlot>,
    /// The accumulator slot of the sum routine's calls ([`span::SumSpan`]), once made.
    sum_slot: Option<StackSlot>,
    /// Where accesses of a streamed buffer go in the block being emitted ([`span`]).
    staging: Option<span::Staging>,
    /// Sum loops whose vector pass a span routine already did ([`span::SpanSum`]): the loop,
    /// and the stack slot holding the routine's partials.
    span_sums: Vec<(LoopId, StackSlot)>,
    /// The vector loop whose steps prefetch a later row, and that row's read
    /// ([`span::pass_prefetch`]).
    step_prefetch: Option<(LoopId, span::NextRow)>,
    /// Whether the kernel called a streaming routine (it fences before returning).
    streamed: bool,
    /// The buffer table, the function's first parameter.
    table: Value,
    /// Outlining of loop nests; `None` in an outlined function ([`outline`]).
    outlining: Option<Outlining>,
    /// Each leaf loop's assembled function ([`Imports::leaves`]).
    leaves: &'a [(LoopId, FuncRef)],
}

type Result<T> = std::result::Result<T, CodegenError>;

impl<'a, 'b> Translator<'a, 'b> {
    /// A translator emitting with `b`, whose current block is the function's entry: loads
    /// the buffers' base addresses from `table` there.
    fn new(
        k: &'a Kernel,
        strategy: &'a KernelStrategy,
        mut b: FunctionBuilder<'b>,
        options: TranslateOptions,
        pow: PowRefs,
        table: Value,
        reduced_only: Vec<Option<Vec<AccId>>>,
    ) -> Self {
        let bases = (0..k.buffers.len())
            .map(|i| {
                b.ins().load(
                    types::I64,
                    MemFlagsData::trusted().with_readonly(),
                    table,
                    (8 * i) as i32,
                )
            })
            .collect();
        Self {
            k,
            strategy,
            b,
            options,
            pow,
            bases,
            values: vec![None; k.values.len()],
            loop_vals: vec![None; k.loops.len()],
            accs: vec![None; k.accs.len()],
            wide: None,
            wide_offset: vec![0; k.loops.len()],
            parallel: None,
            widened_from: strategy.widened_from(),
            reduced_only,
            narrowed: Vec::new(),
            jam_loads: Vec::new(),
            range_override: None,
            staging_slot: None,
            sum_slot: None,
            staging: None,
            span_sums: Vec::new(),
            step_prefetch: None,
            streamed: false,
            table,
            outlining: None,
            leaves: &[],
        }
    }

    fn internal<T>(&self, message: impl Into<String>) -> Result<T> {
        Err(CodegenError::Internal {
            kernel: self.k.name.clone(),
            message: message.into(),
        })
    }

    fn math(&mut self) -> MathEmitter<'_, 'b> {
        MathEmitter {
            b: &mut self.b,
            fma: self.options.fma,
        }
    }

    fn repr(&self, v: ValueId) -> Result<Repr> {
        match self.values.get(v.index()).cloned().flatten() {
            Some(r) => Ok(r),
            None => self.internal(format!("value %{v} used before its definition")),
        }
    }

    fn scalar(&self, v: ValueId) -> Result<Value> {
        match self.repr(v)? {
            Repr::Scalar(x) => Ok(x),
            Repr::Wide(_) => {
                self.internal(format!("value %{v} is a vector where a scalar is needed"))
            }
        }
    }

    fn ty(&self, v: ValueId) -> ScalarType {
        self.k.values[v]
    }

    /// The value of `v` if it is an `i64` an `iconst` defines (loop bounds, extents).
    fn known_i64(&self, v: Value) -> Option<i64> {
        let dfg = &self.b.func.dfg;
        if dfg.value_type(v) != types::I64 {
            return None;
        }
        match dfg.value_def(v) {
            ValueDef::Result(inst, 0) => match dfg.insts[inst] {
                InstructionData::UnaryImm {
                    opcode: Opcode::Iconst,
                    imm,
                } => Some(imm.bits()),
                _ => None,
            },
            _ => None,
        }
    }

    /// `v + c` (wrapping, as `iadd`): `v` itself for `c = 0`, a constant when `v` is one —
    /// index and bound arithmetic Cranelift would otherwise build and fold again.
    pub(super) fn add_const(&mut self, v: Value, c: i64) -> Value {
        match self.known_i64(v) {
            _ if c == 0 => v,
            Some(k) => self.b.ins().iconst(types::I64, k.wrapping_add(c)),
            None => self.b.ins().iadd_imm_s(v, c),
        }
    }

    /// `v · c` (wrapping, as `imul`), folded like [`Self::add_const`].
    pub(super) fn mul_const(&mut self, v: Value, c: i64) -> Value {
        match self.known_i64(v) {
            _ if c == 1 => v,
            Some(k) => self.b.ins().iconst(types::I64, k.wrapping_mul(c)),
            None => self.b.ins().imul_imm_s(v, c),
        }
    }

    /// `x + y` (wrapping), folded where either is a constant.
    pub(super) fn add_values(&mut self, x: Value, y: Value) -> Value {
        match (self.known_i64(x), self.known_i64(y)) {
            (_, Some(c)) => self.add_const(x, c),
            (Some(c), _) => self.add_const(y, c),
            _ => self.b.ins().iadd(x, y),
        }
    }

    /// `x − y` (wrapping, as `isub`), folded like [`Self::add_const`].
    pub(super) fn sub_values(&mut self, x: Value, y: Value) -> Value {
        match (self.known_i64(x), self.known_i64(y)) {
            (_, Some(0)) => x,
            (Some(a), Some(b)) => self.b.ins().iconst(types::I64, a.wrapping_sub(b)),
            _ => self.b.ins().isub(x, y),
        }
    }

    /// Whether `v` widens an f32 value and is only reduced, into accumulators whose vector
    /// partials the vector step being emitted keeps in f32 — which add the f32 value instead.
    fn feeds_f32_partials_only(&self, v: ValueId) -> bool {
        self.wide.is_some()
            && self.widened_from[v.index()].is_some()
            && self.reduced_only[v.index()]
                .as_ref()
                .is_some_and(|accs| accs.iter().all(|a| self.narrowed.contains(a)))
    }

    fn stmts(&mut self, stmts: &[Stmt]) -> Result<()> {
        for s in stmts {
            match s {
                Stmt::Let { result, .. } if self.feeds_f32_partials_only(*result) => {
                    // Its reductions add the f32 value it widens (`reduce`): emitting the
                    // widening would only give Cranelift dead code to build and remove.
                }
                Stmt::Let { result, inst } => {
                    let jammed = self.jam_loads.iter().find(|(v, _)| v == result);
                    let r = match jammed {
                        Some((_, r)) => r.clone(),
                        None => self.inst(self.k.values[*result], inst)?,
                    };
                    self.values[result.index()] = Some(r);
                }
                Stmt::Store { target, value } => self.store(target, *value)?,
                Stmt::DeclareAcc(a) => self.declare_acc(*a),
                Stmt::Reduce { acc, value, index } => self.reduce(*acc, *value, *index)?,
                Stmt::Loop { loop_id, body } => {
                    if !self.try_outline(*loop_id, body)? {
                        self.emit_loop(*loop_id, body)?;
                    }
                }
                Stmt::If { cond, body } => self.emit_if(*cond, body)?,
            }
        }
        Ok(())
    }

    /// `body` in a block of its own, entered when `cond` holds (never inside a vector loop:
    /// the verifier refuses that).
    fn emit_if(&mut self, cond: ValueId, body: &[Stmt]) -> Result<()> {
        let c = self.scalar(cond)?;
        let (then, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(c, then, &[], done, &[]);
        self.b.switch_to_block(then);
        self.stmts(body)?;
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    // ----- constants, addresses, memory -------------------------------------------------

    fn constant(&mut self, c: ScalarValue) -> Value {
        match c {
            ScalarValue::F32(x) => self.b.ins().f32const(x),
            ScalarValue::F64(x) => self.b.ins().f64const(x),
            ScalarValue::I32(x) => self.b.ins().iconst(types::I32, i64::from(x)),
            ScalarValue::I64(x) => self.b.ins().iconst(types::I64, x),
            ScalarValue::Bool(x) => self.b.ins().iconst(types::I8, i64::from(x)),
        }
    }

    /// The value of `e` with each loop at its current index plus `lane` on the vector loop.
    fn affine(&mut self, e: &weft_ir::loop_ir::AffineExpr, lane: i64) -> Result<Value> {
        let mut constant = e.offset();
        let mut sum: Option<Value> = None;
        for &(l, c) in e.terms() {
            let Some(x) = self.loop_vals.get(l.index()).copied().flatten() else {
                return self.internal(format!("loop %{l} used outside its body"));
            };
            let mut offset = self.wide_offset[l.index()];
            if self.wide.is_some_and(|w| w.loop_id == l) {
                offset += lane;
            }
            constant = constant.wrapping_add(c.wrapping_mul(offset));
            let term = self.mul_const(x, c);
            sum = Some(match sum {
                Some(s) => self.add_values(s, term),
                None => term,
            });
        }
        Ok(match sum {
            Some(s) => self.add_const(s, constant),
            None => self.b.ins().iconst(types::I64, constant),
        })
    }

    fn address(&mut self, access: &BufferAccessExpr, index: Value) -> Value {
        let size = self.k.buffers[access.buffer].ty.size_bytes() as i64;
        let (base, index) = match self.staging {
            Some(s) if s.buffer == access.buffer => (s.base, self.sub_values(index, s.first)),
            _ => (self.bases[access.buffer.index()], index),
        };
        let offset = self.mul_const(index, size);
        self.add_values(base, offset)
    }

    /// Whether every range of `access`'s mask holds at each of `lanes` (`None`: no mask).
    fn mask_holds(&mut self, access: &BufferAccessExpr, lanes: &[i64]) -> Result<Option<Value>> {
        let mut all: Option<Value> = None;
        for m in &access.mask {
            for &lane in lanes {
                let e = self.affine(&m.expr, lane)?;
                let ge = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, e, m.lo);
                let lt = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, e, m.hi);
                let both = self.b.ins().band(ge, lt);
                all = Some(match all {
                    Some(v) => self.b.ins().band(v, both),
                    None => both,
                });
            }
        }
        Ok(all)
    }

    /// One element, honouring the mask (masked-out lanes load index 0 and yield zero).
    fn scalar_load(&mut self, access: &BufferAccessExpr, lane: i64) -> Result<Value> {
        let decl = &self.k.buffers[access.buffer];
        let (ty, len) = (decl.ty, decl.len);
        let cty = clif_type(ty);
        let zero_value = self.constant(ty.zero());
        if !access.mask.is_empty() && len == 0 {
            return Ok(zero_value);
        }
        let mut index = self.affine(&access.index, lane)?;
        let valid = self.mask_holds(access, &[lane])?;
        if let Some(valid) = valid {
            let zero = self.b.ins().iconst(types::I64, 0);
            index = self.b.ins().select(valid, index, zero);
        }
        let addr = self.address(access, index);
        let mut x = self.b.ins().load(cty, MemFlagsData::trusted(), addr, 0);
        if ty == ScalarType::Bool {
            x = self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0);
        }
        Ok(match valid {
            Some(valid) => self.b.ins().select(valid, x, zero_value),
            None => x,
        })
    }

    fn load(&mut self, access: &BufferAccessExpr) -> Result<Repr> {
        let Some(w) = self.wide.filter(|w| depends_on(access, w.loop_id)) else {
            return Ok(Repr::Scalar(self.scalar_load(access, 0)?));
        };
        let ty = self.k.buffers[access.buffer].ty;
        let (count, vl, vec_ty) = (w.vectors(ty), vector_lanes(ty), vector_type(ty));
        let contiguous = access.index.coefficient(w.loop_id) == 1;
        if contiguous && access.mask.is_empty() {
            return self.vector_load(access, count).map(Repr::Wide);
        }
        if !(contiguous && ty.is_float() && self.k.buffers[access.buffer].len > 0) {
            return self.lane_loads(access, count).map(Repr::Wide);
        }
        // A masked contiguous load (a pad's or a concat part's interior): where the mask
        // holds for the step's every lane, one vector load per part; else lane by lane. Each
        // mask is an interval of an affine index, so it holds for every lane exactly when it
        // holds for the first and the last.
        let last = i64::from(count * vl) - 1;
        let Some(all) = self.mask_holds(access, &[0, last])? else {
            return self.internal("a masked load without masks".to_string());
        };
        let (whole, lanes, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        for _ in 0..count {
            self.b.append_block_param(join, vec_ty);
        }
        self.b.ins().brif(all, whole, &[], lanes, &[]);
        self.b.switch_to_block(whole);
        let parts = self.vector_load(access, count)?;
        let args: Vec<_> = parts.iter().map(|v| (*v).into()).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(lanes);
        let parts = self.lane_loads(access, count)?;
        let args: Vec<_> = parts.iter().map(|v| (*v).into()).collect();
        self.b.ins().jump(join, &args);
        self.b.switch_to_block(join);
        Ok(Repr::Wide(self.b.block_params(join).to_vec()))
    }

    /// The step's `count` vectors of a load contiguous along the vector loop, every lane
    /// read (unmasked, or masked and known to hold for every lane).
    fn vector_load(&mut self, access: &BufferAccessExpr, count: u32) -> Result<Vec<Value>> {
        let vec_ty = vector_type(self.k.buffers[access.buffer].ty);
        let index = self.affine(&access.index, 0)?;
        let addr = self.address(access, index);
        Ok((0..count)
            .map(|j| {
                self.b.ins().load(
                    vec_ty,
                    MemFlagsData::new().with_notrap(),
                    addr,
                    16 * j as i32,
                )
            })
            .collect())
    }

    /// The step's `count` vectors of a load, lane by lane (each lane honouring the mask).
    fn lane_loads(&mut self, access: &BufferAccessExpr, count: u32) -> Result<Vec<Value>> {
        let ty = self.k.buffers[access.buffer].ty;
        let (vl, vec_ty) = (vector_lanes(ty), vector_type(ty));
        let mut parts = Vec::with_capacity(count as usize);
        for j in 0..count {
            let mut vector = None;
            for lane in 0..vl {
                let x = self.scalar_load(access, i64::from(j * vl + lane))?;
                vector = Some(match vector {
                    None => self.b.ins().splat(vec_ty, x),
                    Some(v) => self.b.ins().insertlane(v, x, lane as u8),
                });
            }
            parts.extend(vector);
        }
        Ok(parts)
    }

    /// Lane `lane` of the step (`0..lanes × parts`) of a value of type `ty`.
    fn lane_of(&mut self, r: &Repr, ty: ScalarType, lane: u32) -> Value {
        match r {
            Repr::Scalar(x) => *x,
            Repr::Wide(parts) => {
                let vl = vector_lanes(ty);
                self.b
                    .ins()
                    .extractlane(parts[(lane / vl) as usize], (lane % vl) as u8)
            }
        }
    }

    /// Vector `j` of the step of a value of float type `ty` (a uniform value is splatted).
    fn part_of(&mut self, r: &Repr, j: u32, ty: ScalarType) -> Value {
        match r {
            Repr::Scalar(x) => self.b.ins().splat(vector_type(ty), *x),
            Repr::Wide(parts) => parts[j as usize],
        }
    }

    fn store(&mut self, target: &BufferAccessExpr, value: ValueId) -> Result<()> {
        let r = self.repr(value)?;
        let ty = self.k.buffers[target.buffer].ty;
        let w = self
            .wide
            .filter(|w| depends_on(target, w.loop_id) || matches!(r, Repr::Wide(_)));
        let Some(w) = w else {
            let x = self.scalar(value)?;
            let index = self.affine(&target.index, 0)?;
            let addr = self.address(target, index);
            self.b.ins().store(MemFlagsData::trusted(), x, addr, 0);
            return Ok(());
        };
        if target.index.coefficient(w.loop_id) == 1 && ty.is_float() {
            let index = self.affine(&target.index, 0)?;
            let addr = self.address(target, index);
            for j in 0..w.vectors(ty) {
                let v = self.part_of(&r, j, ty);
                self.b
                    .ins()
                    .store(MemFlagsData::new().with_notrap(), v, addr, 16 * j as i32);
            }
        } else {
            for lane in 0..w.lanes * w.parts {
                let x = self.lane_of(&r, ty, lane);
                let index = self.affine(&target.index, i64::from(lane))?;
                let addr = self.address(target, index);
                self.b.ins().store(MemFlagsData::trusted(), x, addr, 0);
            }
        }
        Ok(())
    }

    // ----- accumulators ------------------------------------------------------------------

    fn identity(&mut self, kind: ReduceKind, ty: ScalarType) -> Value {
        let c = weft_ir::loop_ir::semantics::reduce_identity(kind, ty);
        self.constant(c)
    }

    fn declare_acc(&mut self, a: AccId) {
        let decl = self.k.accs[a].clone();
        let init = self.identity(decl.kind, decl.ty);
        let repr = match self.wide {
            Some(w) => {
                let vec_ty = vector_type(decl.ty);
                let v = self.b.ins().splat(vec_ty, init);
                AccRepr::Wide(
                    (0..w.vectors(decl.ty))
                        .map(|_| {
                            let var = self.b.declare_var(vec_ty);
                            self.b.def_var(var, v);
                            var
                        })
                        .collect(),
                )
            }
            None => {
                let value = self.b.declare_var(clif_type(decl.ty));
                self.b.def_var(value, init);
                let index = decl.kind.has_index().then(|| {
                    let var = self.b.declare_var(types::I64);
                    let zero = self.b.ins().iconst(types::I64, 0);
                    self.b.def_var(var, zero);
                    var
                });
                AccRepr::Scalar { value, index }
            }
        };
        self.accs[a.index()] = Some(repr);
    }

    /// `acc ⊕ x` for a non-arg reduction on scalars or float vectors.
    fn combine(&mut self, kind: ReduceKind, ty: ScalarType, acc: Value, x: Value) -> Value {
        let op = match kind {
            ReduceKind::Sum => BinaryOp::Add,
            ReduceKind::Prod => BinaryOp::Mul,
            // The float max/min reductions' rule (`weft_ir::scalar::reduce_max`: NaN, and
            // −0 < +0) is Cranelift's fmax/fmin; being order-free, it survives vector lanes.
            ReduceKind::Max | ReduceKind::ArgMax if ty.is_float() => {
                return self.b.ins().fmax(acc, x)
            }
            ReduceKind::Min | ReduceKind::ArgMin if ty.is_float() => {
                return self.b.ins().fmin(acc, x)
            }
            ReduceKind::Max | ReduceKind::ArgMax => BinaryOp::Max,
            ReduceKind::Min | ReduceKind::ArgMin => BinaryOp::Min,
        };
        self.binary_value(op, ty, acc, x)
    }

    /// One step of an argmax (argmin) accumulator held in `(value, index)`: `x` at `i`
    /// replaces it where it is strictly greater (less) — the loop IR's arg step.
    fn arg_step(
        &mut self,
        (value, index): (Variable, Variable),
        kind: ReduceKind,
        ty: ScalarType,
        x: Value,
        i: Value,
    ) {
        let op = if kind == ReduceKind::ArgMax {
            CompareOp::Gt
        } else {
            CompareOp::Lt
        };
        let cur = self.b.use_var(value);
        let better = self.compare_value(op, ty, x, cur);
        let next = self.b.ins().select(better, x, cur);
        let cur_i = self.b.use_var(index);
        let next_i = self.b.ins().select(better, i, cur_i);
        self.b.def_var(value, next);
        self.b.def_var(index, next_i);
    }

    fn reduce(&mut self, a: AccId, value: ValueId, index: Option<ValueId>) -> Result<()> {
        let decl = self.k.accs[a].clone();
        let Some(repr) = self.accs[a.index()].clone() else {
            return self.internal(format!("accumulator %{a} used before its declaration"));
        };
        match repr {
            AccRepr::Extreme(parts) => {
                let r = self.repr(value)?;
                for (j, e) in parts.iter().enumerate() {
                    let x = self.part_of(&r, j as u32, decl.ty);
                    self.extreme_step(decl.kind, e, x);
                }
            }
            AccRepr::Wide(vars) => {
                if self.wide.is_none() {
                    return self.internal(format!("vector accumulator %{a} outside its loop"));
                }
                // f32 partials add the f32 value the f64 term widens.
                let (r, ty) = match self.widened_from[value.index()] {
                    Some(x) if self.narrowed.contains(&a) => (self.repr(x)?, ScalarType::F32),
                    _ => (self.repr(value)?, decl.ty),
                };
                for (j, var) in vars.iter().enumerate() {
                    let x = self.part_of(&r, j as u32, ty);
                    let cur = self.b.use_var(*var);
                    let next = self.combine(decl.kind, ty, cur, x);
                    self.b.def_var(*var, next);
                }
            }
            AccRepr::Scalar {
                value: var,
                index: index_var,
            } => {
                let x = self.scalar(value)?;
                let cur = self.b.use_var(var);
                match (decl.kind, index_var, index) {
                    (ReduceKind::ArgMax | ReduceKind::ArgMin, Some(ivar), Some(i)) => {
                        let i = self.scalar(i)?;
                        self.arg_step((var, ivar), decl.kind, decl.ty, x, i);
                    }
                    (ReduceKind::ArgMax | ReduceKind::ArgMin, _, _) => {
                        return self.internal(format!("arg-reduction into %{a} without an index"))
                    }
                    _ => {
                        let next = self.combine(decl.kind, decl.ty, cur, x);
                        self.b.def_var(var, next);
                    }
                }
            }
        }
        Ok(())
    }

    /// One vector of terms `x` into an [`Extreme`] partial.
    fn extreme_step(&mut self, kind: ReduceKind, e: &Extreme, x: Value) {
        let cur = self.b.use_var(e.value);
        // `maxps x, cur` / `minps x, cur`: `x` only when strictly beyond `cur` (Cranelift
        // lowers exactly this bitselect-of-fcmp to the one instruction).
        let beyond = if kind == ReduceKind::Max {
            self.b.ins().fcmp(FloatCC::LessThan, cur, x)
        } else {
            self.b.ins().fcmp(FloatCC::LessThan, x, cur)
        };
        let next = self.math().select(beyond, x, cur);
        self.b.def_var(e.value, next);
        let bits = self.math().bitcast(types::I32X4, x);
        let smax = self.b.use_var(e.bits_smax);
        let smax = self.b.ins().smax(smax, bits);
        self.b.def_var(e.bits_smax, smax);
        let umax = self.b.use_var(e.bits_umax);
        let umax = self.b.ins().umax(umax, bits);
        self.b.def_var(e.bits_umax, umax);
        if kind == ReduceKind::Min {
            let smin = self.b.use_var(e.bits_smin);
            let smin = self.b.ins().smin(smin, bits);
            self.b.def_var(e.bits_smin, smin);
        }
    }

    /// The exact f32 `max`/`min` of the terms reduced into `parts` (see [`Extreme`]).
    fn settle_extreme(&mut self, kind: ReduceKind, parts: &[Extreme]) -> Value {
        let max = kind == ReduceKind::Max;
        let lanes = |t: &mut Self,
                     var: fn(&Extreme) -> Variable,
                     op: &dyn Fn(&mut Self, Value, Value) -> Value| {
            let mut v = t.b.use_var(var(&parts[0]));
            for p in &parts[1..] {
                let x = t.b.use_var(var(p));
                v = op(t, v, x);
            }
            let mut s = t.b.ins().extractlane(v, 0);
            for lane in 1..4u8 {
                let x = t.b.ins().extractlane(v, lane);
                s = op(t, s, x);
            }
            s
        };
        let pick = move |t: &mut Self, cur: Value, x: Value| {
            let beyond = if max {
                t.b.ins().fcmp(FloatCC::LessThan, cur, x)
            } else {
                t.b.ins().fcmp(FloatCC::LessThan, x, cur)
            };
            t.math().select(beyond, x, cur)
        };
        let value = lanes(self, |e| e.value, &pick);
        let smax = lanes(self, |e| e.bits_smax, &|t, a, b| t.b.ins().smax(a, b));
        let umax = lanes(self, |e| e.bits_umax, &|t, a, b| t.b.ins().umax(a, b));
        let pos_nan = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThan, smax, 0x7f80_0000);
        let neg_nan = self
            .b
            .ins()
            .icmp_imm_s(IntCC::UnsignedGreaterThan, umax, 0xff80_0000);
        let nan = self.b.ins().bor(pos_nan, neg_nan);
        // A zero result's sign: max is +0 if a +0 was reduced, min is −0 if a −0 was.
        let signed_zero = if max {
            let has_pos = self.b.ins().icmp_imm_s(IntCC::Equal, smax, 0);
            let (pos, neg) = (self.b.ins().f32const(0.0), self.b.ins().f32const(-0.0));
            self.b.ins().select(has_pos, pos, neg)
        } else {
            let smin = lanes(self, |e| e.bits_smin, &|t, a, b| t.b.ins().smin(a, b));
            let has_neg = self
                .b
                .ins()
                .icmp_imm_s(IntCC::Equal, smin, i64::from(i32::MIN));
            let (pos, neg) = (self.b.ins().f32const(0.0), self.b.ins().f32const(-0.0));
            self.b.ins().select(has_neg, neg, pos)
        };
        let zero = self.b.ins().f32const(0.0);
        let is_zero = self.b.ins().fcmp(FloatCC::Equal, value, zero);
        let value = self.b.ins().select(is_zero, signed_zero, value);
        let quiet_nan = self.b.ins().f32const(f32::NAN);
        self.b.ins().select(nan, quiet_nan, value)
    }

    // ----- instructions ------------------------------------------------------------------

    fn inst(&mut self, ty: ScalarType, inst: &Inst) -> Result<Repr> {
        Ok(match inst {
            Inst::Const(c) => Repr::Scalar(self.constant(*c)),
            Inst::Index(l) => {
                let Some(x) = self.loop_vals.get(l.index()).copied().flatten() else {
                    return self.internal(format!("loop %{l} used outside its body"));
                };
                let offset = self.wide_offset[l.index()];
                Repr::Scalar(self.add_const(x, offset))
            }
            Inst::Load(access) => self.load(access)?,
            Inst::AccValue(a) | Inst::AccIndex(a) => {
                let Some(repr) = self.accs[a.index()].clone() else {
                    return self.internal(format!("accumulator %{a} read before its declaration"));
                };
                match (repr, inst) {
                    (AccRepr::Wide(vars), Inst::AccValue(_)) => {
                        Repr::Wide(vars.iter().map(|v| self.b.use_var(*v)).collect())
                    }
                    (AccRepr::Scalar { value, .. }, Inst::AccValue(_)) => {
                        Repr::Scalar(self.b.use_var(value))
                    }
                    (AccRepr::Scalar { index: Some(i), .. }, _) => Repr::Scalar(self.b.use_var(i)),
                    (AccRepr::Extreme(_), _) => {
                        return self
                            .internal(format!("accumulator %{a} read inside its vector loop"))
                    }
                    _ => return self.internal(format!("accumulator %{a} has no index")),
                }
            }
            Inst::Unary(op, x) => {
                let rx = self.repr(*x)?;
                self.map_wide(ty, &[rx], |t, xs| t.unary_value(*op, ty, xs[0]))?
            }
            Inst::Binary(op, x, y) => {
                let (rx, ry) = (self.repr(*x)?, self.repr(*y)?);
                match (op, &rx, &ry) {
                    // Logical ops of two lane masks (the vector plan admits no other varying
                    // bool operands), mask by mask.
                    (_, Repr::Wide(xs), Repr::Wide(ys)) if ty == ScalarType::Bool => Repr::Wide(
                        xs.iter()
                            .zip(ys)
                            .map(|(x, y)| self.binary_value(*op, ty, *x, *y))
                            .collect(),
                    ),
                    (BinaryOp::Div, Repr::Wide(_), Repr::Scalar(d)) if ty.is_float() => {
                        let (r, s) = self.scaled_reciprocal(*d);
                        self.map_wide(ty, &[rx, Repr::Scalar(r), Repr::Scalar(s)], |t, xs| {
                            let q = t.b.ins().fmul(xs[0], xs[1]);
                            t.b.ins().fmul(q, xs[2])
                        })?
                    }
                    _ => {
                        self.map_wide(ty, &[rx, ry], |t, xs| t.binary_value(*op, ty, xs[0], xs[1]))?
                    }
                }
            }
            Inst::Compare(op, x, y) => {
                let operand_ty = self.ty(*x);
                let (rx, ry) = (self.repr(*x)?, self.repr(*y)?);
                // Vectors compare to lane masks, one per vector of the operands' type.
                self.map_wide(operand_ty, &[rx, ry], |t, xs| {
                    t.compare_value(*op, operand_ty, xs[0], xs[1])
                })?
            }
            Inst::Select {
                cond,
                if_true,
                if_false,
            } => {
                let (rt, rf) = (self.repr(*if_true)?, self.repr(*if_false)?);
                match self.repr(*cond)? {
                    Repr::Scalar(c) => {
                        self.map_wide(ty, &[rt, rf], |t, xs| t.b.ins().select(c, xs[0], xs[1]))?
                    }
                    rc => self.map_wide(ty, &[rc, rt, rf], |t, xs| {
                        t.math().select(xs[0], xs[1], xs[2])
                    })?,
                }
            }
            Inst::Convert(x) => {
                let from = self.ty(*x);
                let rx = self.repr(*x)?;
                match rx {
                    _ if from == ty => rx,
                    // Lane masks of `ty`'s vectors to 1 or 0.
                    Repr::Wide(masks) if from == ScalarType::Bool => {
                        let vec_ty = vector_type(ty);
                        let (one, zero) =
                            (self.fconst_vec(vec_ty, 1.0), self.fconst_vec(vec_ty, 0.0));
                        Repr::Wide(
                            masks
                                .iter()
                                .map(|m| self.math().select(*m, one, zero))
                                .collect(),
                        )
                    }
                    Repr::Scalar(x) => Repr::Scalar(self.convert(x, from, ty)),
                    Repr::Wide(xs) => Repr::Wide(self.convert_wide(&xs, from, ty)?),
                }
            }
        })
    }

    /// `(r, s)` with `x / d ≈ (x · r) · s` for every `x`, for a divisor `d` uniform over a
    /// vector loop: a vector divide costs several times a multiply (3.6 against 1.3 cycles per
    /// four f32 lanes on Zen 1, in the softmax and layernorm row kernels). `s` is a power of
    /// two that brings `d · s` where `1 / (d · s)` is normal and finite (1 unless `|d|` is
    /// below the smallest normal or above `2^(emax - 1)`), `r = 1 / (d · s)`. Two roundings
    /// (`r`, then `x · r`; multiplying by `s` is exact unless the quotient is subnormal):
    /// within 2 ulp of the divide (docs/numerics.md); 0, ±inf and NaN divisors give the
    /// divide's zeros, infinities and NaNs.
    fn scaled_reciprocal(&mut self, d: Value) -> (Value, Value) {
        let ty = self.b.func.dfg.value_type(d);
        // (largest |d| left unscaled, its scale; smallest normal, the scale of those below it)
        let (big, big_scale, small, small_scale) = if ty == types::F32 {
            (
                2f64.powi(126),
                2f64.powi(-4),
                2f64.powi(-126),
                2f64.powi(25),
            )
        } else {
            (
                2f64.powi(1022),
                2f64.powi(-4),
                2f64.powi(-1022),
                2f64.powi(54),
            )
        };
        let mut m = self.math();
        let a = m.b.ins().fabs(d);
        let (big, small) = (m.fconst(ty, big), m.fconst(ty, small));
        let one = m.fconst(ty, 1.0);
        let (big_scale, small_scale) = (m.fconst(ty, big_scale), m.fconst(ty, small_scale));
        let is_big = m.b.ins().fcmp(FloatCC::GreaterThan, a, big);
        let is_small = m.b.ins().fcmp(FloatCC::LessThan, a, small);
        let s = m.select(is_small, small_scale, one);
        let s = m.select(is_big, big_scale, s);
        let scaled = m.b.ins().fmul(d, s);
        let r = m.b.ins().fdiv(one, scaled);
        (r, s)
    }

    /// Vectors of `from` (in lane order) converted to vectors of `to`: `f32x4 → 2 × f64x2` by
    /// promoting each half, `2 × f64x2 → f32x4` by demoting both and joining the low halves.
    fn convert_wide(
        &mut self,
        xs: &[Value],
        from: ScalarType,
        to: ScalarType,
    ) -> Result<Vec<Value>> {
        let le = MemFlagsData::new().with_endianness(Endianness::Little);
        let mut out = Vec::with_capacity(xs.len() * 2);
        match (from, to) {
            (ScalarType::F32, ScalarType::F64) => {
                // Lanes 2, 3 moved down to lanes 0, 1.
                let high: Vec<u8> = (8..16).chain(8..16).collect();
                let high = self.b.func.dfg.immediates.push(ConstantData::from(high));
                for &x in xs {
                    out.push(self.b.ins().fvpromote_low(x));
                    let bytes = self.b.ins().bitcast(types::I8X16, le, x);
                    let moved = self.b.ins().shuffle(bytes, bytes, high);
                    let moved = self.b.ins().bitcast(types::F32X4, le, moved);
                    out.push(self.b.ins().fvpromote_low(moved));
                }
            }
            (ScalarType::F64, ScalarType::F32) => {
                // The low halves of two demoted vectors, side by side.
                let join: Vec<u8> = (0..8).chain(16..24).collect();
                let join = self.b.func.dfg.immediates.push(ConstantData::from(join));
                for pair in xs.chunks(2) {
                    let [lo, hi] = pair else {
                        return self.internal("f64 vectors of an odd count");
                    };
                    let lo = self.b.ins().fvdemote(*lo);
                    let hi = self.b.ins().fvdemote(*hi);
                    let lo = self.b.ins().bitcast(types::I8X16, le, lo);
                    let hi = self.b.ins().bitcast(types::I8X16, le, hi);
                    let both = self.b.ins().shuffle(lo, hi, join);
                    out.push(self.b.ins().bitcast(types::F32X4, le, both));
                }
            }
            _ => return self.internal(format!("vector conversion from {from} to {to}")),
        }
        Ok(out)
    }

    /// Applies `f` to scalars if every operand is scalar, else vector by vector (operands and
    /// result of type `ty`).
    fn map_wide(
        &mut self,
        ty: ScalarType,
        operands: &[Repr],
        f: impl Fn(&mut Self, &[Value]) -> Value,
    ) -> Result<Repr> {
        if let Some(scalars) = operands
            .iter()
            .map(|r| match r {
                Repr::Scalar(x) => Some(*x),
                Repr::Wide(_) => None,
            })
            .collect::<Option<Vec<_>>>()
        {
            return Ok(Repr::Scalar(f(self, &scalars)));
        }
        let Some(w) = self.wide else {
            return self.internal("vector value outside a vector loop");
        };
        let parts = (0..w.vectors(ty))
            .map(|j| {
                let xs: Vec<Value> = operands.iter().map(|r| self.part_of(r, j, ty)).collect();
                f(self, &xs)
            })
            .collect();
        Ok(Repr::Wide(parts))
    }

    fn fconst_vec(&mut self, vec_ty: Type, c: f64) -> Value {
        self.math().fconst(vec_ty, c)
    }

    fn fconst_like(&mut self, x: Value, c: f64) -> Value {
        let ty = self.b.func.dfg.value_type(x);
        self.math().fconst(ty, c)
    }

    /// A unary operator on a scalar of type `ty`, or on a vector of `ty` lanes.
    fn unary_value(&mut self, op: UnaryOp, ty: ScalarType, x: Value) -> Value {
        if ty.is_float() {
            match op {
                UnaryOp::Neg => self.b.ins().fneg(x),
                UnaryOp::Abs => self.b.ins().fabs(x),
                UnaryOp::Sqrt => self.b.ins().sqrt(x),
                UnaryOp::Square => self.b.ins().fmul(x, x),
                UnaryOp::Reciprocal => {
                    let one = self.fconst_like(x, 1.0);
                    self.b.ins().fdiv(one, x)
                }
                UnaryOp::Sign => {
                    let (zero, one, minus_one) = (
                        self.fconst_like(x, 0.0),
                        self.fconst_like(x, 1.0),
                        self.fconst_like(x, -1.0),
                    );
                    let pos = self.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
                    let neg = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                    let mut m = self.math();
                    let r = m.select(neg, minus_one, x);
                    m.select(pos, one, r)
                }
                UnaryOp::Relu => {
                    // x for x > 0 or NaN, else +0 (`fmax(x, 0)` would agree, but this is the
                    // documented rule itself, one compare and a select).
                    let zero = self.fconst_like(x, 0.0);
                    let keep = self.b.ins().fcmp(FloatCC::UnorderedOrGreaterThan, x, zero);
                    self.math().select(keep, x, zero)
                }
                UnaryOp::Exp => self.math().exp(x),
                UnaryOp::Log => self.math().log(x),
                UnaryOp::Tanh => self.math().tanh(x),
                UnaryOp::Sigmoid => self.math().sigmoid(x),
                UnaryOp::Sin | UnaryOp::Cos => self.trig(op, ty, x),
                UnaryOp::Not => x,
            }
        } else if ty == ScalarType::Bool {
            self.b.ins().bxor_imm_s(x, 1)
        } else {
            let cty = clif_type(ty);
            match op {
                UnaryOp::Neg => self.b.ins().ineg(x),
                UnaryOp::Abs => self.b.ins().iabs(x),
                UnaryOp::Square => self.b.ins().imul(x, x),
                UnaryOp::Sign => {
                    let one = self.b.ins().iconst(cty, 1);
                    let minus_one = self.b.ins().iconst(cty, -1);
                    let r = self.b.ins().smin(x, one);
                    self.b.ins().smax(r, minus_one)
                }
                UnaryOp::Relu => {
                    let zero = self.b.ins().iconst(cty, 0);
                    self.b.ins().smax(x, zero)
                }
                _ => x,
            }
        }
    }

    /// Float `max` (`beyond` = `GreaterThan`) or `min` (`LessThan`) on scalars or vectors, as
    /// `weft_ir::scalar::maximum`/`minimum`: NaN if either operand is NaN, else `y` only when it
    /// is strictly beyond `x`, so a tie (also −0 against +0) keeps the left operand. Cranelift's
    /// `fmax`/`fmin` order −0 < +0 instead, which breaks the tie rule.
    fn float_extreme(&mut self, beyond: FloatCC, x: Value, y: Value) -> Value {
        let y_beyond = self.b.ins().fcmp(beyond, y, x);
        let y_nan = self.b.ins().fcmp(FloatCC::Unordered, y, y);
        let take_y = self.b.ins().bor(y_beyond, y_nan);
        self.math().select(take_y, y, x)
    }

    /// A binary operator on scalars of type `ty`, or on vectors of `ty` lanes.
    fn binary_value(&mut self, op: BinaryOp, ty: ScalarType, x: Value, y: Value) -> Value {
        if ty.is_float() {
            match op {
                BinaryOp::Add => self.b.ins().fadd(x, y),
                BinaryOp::Sub => self.b.ins().fsub(x, y),
                BinaryOp::Mul => self.b.ins().fmul(x, y),
                BinaryOp::Div => self.b.ins().fdiv(x, y),
                BinaryOp::Max => self.float_extreme(FloatCC::GreaterThan, x, y),
                BinaryOp::Min => self.float_extreme(FloatCC::LessThan, x, y),
                // The reductions' rule is Cranelift's own (see `combine`).
                BinaryOp::ReduceMax => self.b.ins().fmax(x, y),
                BinaryOp::ReduceMin => self.b.ins().fmin(x, y),
                BinaryOp::Pow => self.pow(ty, x, y),
                BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => x,
            }
        } else {
            match op {
                BinaryOp::Add => self.b.ins().iadd(x, y),
                BinaryOp::Sub => self.b.ins().isub(x, y),
                BinaryOp::Mul => self.b.ins().imul(x, y),
                BinaryOp::Div => {
                    // Never trap: x / 0 = 0 and x / -1 = -x (wrapping) are handled by select;
                    // the hardware divide sees a divisor of 1 in both cases.
                    let cty = clif_type(ty);
                    let zero = self.b.ins().iconst(cty, 0);
                    let one = self.b.ins().iconst(cty, 1);
                    let is_zero = self.b.ins().icmp_imm_s(IntCC::Equal, y, 0);
                    let is_minus_one = self.b.ins().icmp_imm_s(IntCC::Equal, y, -1);
                    let special = self.b.ins().bor(is_zero, is_minus_one);
                    let safe = self.b.ins().select(special, one, y);
                    let q = self.b.ins().sdiv(x, safe);
                    let neg = self.b.ins().ineg(x);
                    let q = self.b.ins().select(is_minus_one, neg, q);
                    self.b.ins().select(is_zero, zero, q)
                }
                BinaryOp::Max | BinaryOp::ReduceMax => self.b.ins().smax(x, y),
                BinaryOp::Min | BinaryOp::ReduceMin => self.b.ins().smin(x, y),
                BinaryOp::And => self.b.ins().band(x, y),
                BinaryOp::Or => self.b.ins().bor(x, y),
                BinaryOp::Xor => self.b.ins().bxor(x, y),
                BinaryOp::Pow => x,
            }
        }
    }

    /// `sin`/`cos`: the polynomial, unless some lane's `|x|` is beyond where its Cody–Waite
    /// range reduction is exact (then every lane goes through the imported libm function, a
    /// rare slow path kept out of line).
    fn trig(&mut self, op: UnaryOp, ty: ScalarType, x: Value) -> Value {
        let poly = if op == UnaryOp::Sin {
            self.math().sin(x)
        } else {
            self.math().cos(x)
        };
        let (limit, f) = match (ty, op) {
            (ScalarType::F32, UnaryOp::Sin) => (1e5, self.pow.sin_f32),
            (ScalarType::F32, _) => (1e5, self.pow.cos_f32),
            (_, UnaryOp::Sin) => (1e7, self.pow.sin_f64),
            _ => (1e7, self.pow.cos_f64),
        };
        let vty = self.b.func.dfg.value_type(x);
        let lim = self.fconst_like(x, limit);
        let ax = self.b.ins().fabs(x);
        let big = self.b.ins().fcmp(FloatCC::GreaterThan, ax, lim);
        let any = if vty.is_vector() {
            self.b.ins().vany_true(big)
        } else {
            big
        };
        let slow = self.b.create_block();
        let join = self.b.create_block();
        self.b.append_block_param(join, vty);
        self.b.ins().brif(any, slow, &[], join, &[poly.into()]);
        self.b.switch_to_block(slow);
        let r = if vty.is_vector() {
            let mut out = x;
            for lane in 0..vty.lane_count() as u8 {
                let a = self.b.ins().extractlane(x, lane);
                let call = self.b.ins().call(f, &[a]);
                let r = self.b.inst_results(call)[0];
                out = self.b.ins().insertlane(out, r, lane);
            }
            out
        } else {
            let call = self.b.ins().call(f, &[x]);
            self.b.inst_results(call)[0]
        };
        self.b.ins().jump(join, &[r.into()]);
        self.b.switch_to_block(join);
        self.b.block_params(join)[0]
    }

    /// `pow` through the imported scalar function, lane by lane for vectors.
    fn pow(&mut self, ty: ScalarType, x: Value, y: Value) -> Value {
        let f = if ty == ScalarType::F32 {
            self.pow.f32
        } else {
            self.pow.f64
        };
        let vty = self.b.func.dfg.value_type(x);
        if !vty.is_vector() {
            let call = self.b.ins().call(f, &[x, y]);
            return self.b.inst_results(call)[0];
        }
        let mut out = x;
        for lane in 0..vty.lane_count() as u8 {
            let a = self.b.ins().extractlane(x, lane);
            let e = self.b.ins().extractlane(y, lane);
            let call = self.b.ins().call(f, &[a, e]);
            let r = self.b.inst_results(call)[0];
            out = self.b.ins().insertlane(out, r, lane);
        }
        out
    }

    fn compare_value(&mut self, op: CompareOp, ty: ScalarType, x: Value, y: Value) -> Value {
        if ty.is_float() {
            let cc = match op {
                CompareOp::Eq => FloatCC::Equal,
                CompareOp::Ne => FloatCC::NotEqual,
                CompareOp::Lt => FloatCC::LessThan,
                CompareOp::Le => FloatCC::LessThanOrEqual,
                CompareOp::Gt => FloatCC::GreaterThan,
                CompareOp::Ge => FloatCC::GreaterThanOrEqual,
            };
            self.b.ins().fcmp(cc, x, y)
        } else {
            let cc = match op {
                CompareOp::Eq => IntCC::Equal,
                CompareOp::Ne => IntCC::NotEqual,
                CompareOp::Lt => IntCC::SignedLessThan,
                CompareOp::Le => IntCC::SignedLessThanOrEqual,
                CompareOp::Gt => IntCC::SignedGreaterThan,
                CompareOp::Ge => IntCC::SignedGreaterThanOrEqual,
            };
            self.b.ins().icmp(cc, x, y)
        }
    }

    fn convert(&mut self, x: Value, from: ScalarType, to: ScalarType) -> Value {
        use ScalarType as T;
        let cto = clif_type(to);
        match (from, to) {
            (T::F32, T::F64) => self.b.ins().fpromote(cto, x),
            (T::F64, T::F32) => self.b.ins().fdemote(cto, x),
            (T::F32 | T::F64, T::I32 | T::I64) => self.b.ins().fcvt_to_sint_sat(cto, x),
            (T::I32 | T::I64, T::F32 | T::F64) => self.b.ins().fcvt_from_sint(cto, x),
            (T::I32, T::I64) => self.b.ins().sextend(cto, x),
            (T::I64, T::I32) => self.b.ins().ireduce(cto, x),
            (T::F32 | T::F64, T::Bool) => {
                let zero = self.fconst_like(x, 0.0);
                self.b.ins().fcmp(FloatCC::NotEqual, x, zero)
            }
            (T::I32 | T::I64, T::Bool) => self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0),
            (T::Bool, T::I32 | T::I64) => self.b.ins().uextend(cto, x),
            (T::Bool, T::F32 | T::F64) => {
                let wide = self.b.ins().uextend(types::I32, x);
                self.b.ins().fcvt_from_sint(cto, wide)
            }
            _ => x,
        }
    }

    // ----- loops -------------------------------------------------------------------------

    fn loop_range(&mut self, l: LoopId) -> (Value, Value) {
        if let Some((o, lo, hi)) = self.range_override {
            if o == l {
                return (lo, hi);
            }
        }
        match self.parallel {
            Some((p, lo, hi)) if p == l => (lo, hi),
            _ => {
                let extent = self.k.loops[l].extent as i64;
                (
                    self.b.ins().iconst(types::I64, 0),
                    self.b.ins().iconst(types::I64, extent),
                )
            }
        }
    }

    fn emit_loop(&mut self, l: LoopId, body: &[Stmt]) -> Result<()> {
        if let Some(at) = self.span_sums.iter().position(|(m, _)| *m == l) {
            let (_, slot) = self.span_sums.remove(at);
            return self.emit_summed_by_span(l, body, slot, None);
        }
        // Inside a vector loop a nested loop runs in its lanes, whatever its own strategy.
        if self.wide.is_some() {
            return self.emit_loop_as(l, body, None, &[]);
        }
        let strategies = self.strategy;
        let Some(strategy) = strategies.of(l) else {
            return self.internal(format!("loop %{l} has no strategy"));
        };
        match strategy {
            LoopStrategy::Transpose(call) => self.emit_transpose_call(call),
            LoopStrategy::Jam(jam) => {
                let [Stmt::Loop { body: inner, .. }] = body else {
                    return self
                        .internal(format!("jammed loop %{l} is not a loop around one loop"));
                };
                self.emit_jammed(l, jam, inner)
            }
            LoopStrategy::ArgExtremeSpan(arg) => self.emit_arg_extreme_span(l, arg),
            LoopStrategy::ExtremeRows(rows) => self.emit_extreme_rows(l, rows),
            LoopStrategy::ExtremeSpan(extreme) => self.emit_extreme_span(l, extreme),
            LoopStrategy::SumSpan(sum) => self.emit_sum_span(l, sum),
            LoopStrategy::Scalar(_) => self.emit_loop_as(l, body, None, &[]),
            LoopStrategy::Vector(v) => self.emit_vector_loop(l, body, v),
            LoopStrategy::Leaf(s) => self.emit_leaf_loop(l, body, s),
        }
    }

    /// Emits loop `l` as calls of its assembled leaf loop over the whole vectors of its
    /// range (block by block when its f32 partials are folded every block), then its
    /// scalar tail.
    fn emit_leaf_loop(&mut self, l: LoopId, body: &[Stmt], s: &LeafStrategy) -> Result<()> {
        // A summed store's partials are the next loop's, settled when it is emitted.
        if s.leaf.sum.is_none_or(|sum| sum.for_loop.is_some()) {
            return self.emit_leaf_range(l, body, s);
        }
        // A sum: its partials settled range by range, then one re-run of the whole loop if a
        // total is not finite, as the vector loop's.
        let before = self.acc_vars_now(&s.vector.narrow);
        match s.vector.fold_every {
            Some(block) => self.in_blocks(l, block, |t| t.emit_leaf_range(l, body, s))?,
            None => self.emit_leaf_range(l, body, s)?,
        }
        self.rerun_unless_finite(l, body, &s.vector.narrow, before)
    }

    /// [`Self::emit_leaf_loop`] over loop `l`'s current range, without a sum's re-run.
    fn emit_leaf_range(&mut self, l: LoopId, body: &[Stmt], s: &LeafStrategy) -> Result<()> {
        let leaf = &s.leaf;
        let Some(&(_, callee)) = self.leaves.iter().find(|(m, _)| *m == l) else {
            return self.internal(format!("leaf loop %{l} has no function"));
        };
        // A sum's partials come back in a slot of their own, its address the last entry.
        let partials = leaf.sum.map(|sum| {
            self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                4 * sum.width,
                5,
            ))
        });
        let prefetched = s.vector.prefetch.as_ref();
        // The entries in the order `leaf.rs` reads them: streams, prefetch, scalars, partials.
        let mut entries = Vec::new();
        for access in &leaf.streams {
            let first = self.first_index(l, access)?;
            entries.push(self.address(access, first));
        }
        if let Some(next) = prefetched {
            // The later row's address at the range's first column (`prefetch_step`'s).
            let (start, _) = self.loop_range(l);
            entries.push(self.ahead_address(next, start)?);
        }
        for &scalar in &leaf.scalars {
            entries.push(match scalar {
                LeafScalar::Value(v) => self.scalar(v)?,
                LeafScalar::Reciprocal(d) => self.scaled_reciprocal(self.scalar(d)?).0,
                LeafScalar::Scale(d) => self.scaled_reciprocal(self.scalar(d)?).1,
            });
        }
        if let Some(slot) = partials {
            entries.push(self.b.ins().stack_addr(types::I64, slot, 0));
        }
        let len = self.range_len(l);
        let vectors = self.b.ins().band_imm_s(len, !(i64::from(s.step) - 1));
        // The whole vectors end at the same element however the range is realigned, so every
        // element is computed by the same code (the scalar tail divides exactly; the vectors
        // by the scaled reciprocal) whatever the address of the output.
        // A leaf loop that sums is never realigned (`LeafLoop::realign`): one call.
        match leaf.realign {
            Some(store) => self.realign_leaf(l, s, callee, (&entries, vectors), store)?,
            None => {
                let args = self.entries_at(&entries);
                self.b.ins().call(callee, &[args, vectors]);
            }
        }
        if let Some(slot) = partials {
            match leaf.sum.and_then(|sum| sum.for_loop) {
                // The stored values' partials, for the sum loop to combine (`emit_loop`);
                // then this loop's own tail.
                Some(m) => self.span_sums.push((m, slot)),
                // Combined and the tail, as the vector loop's own partials are.
                None => return self.settle_summed(l, body, slot).map(|_| ()),
            }
        }
        let (start, end) = self.loop_range(l);
        let counter = self.b.declare_var(types::I64);
        let tail = self.add_values(start, vectors);
        self.b.def_var(counter, tail);
        if s.own_steps_after {
            self.emit_wide_steps(l, body, counter, end, &s.vector.plan, &[])?;
        }
        self.emit_steps(l, body, counter, end, 1)?;
        self.loop_vals[l.index()] = None;
        Ok(())
    }

    /// Stored leaf loop `l` (strategy `s`, its function `callee`, `entries` at the range's
    /// start) over the range's first `vectors` elements (its whole vectors) in three calls:
    /// the vectors covering the elements before the first whose store (`store`: stream,
    /// displacement) is [`leaf::REALIGN_TO`]-aligned, the whole vectors from that element,
    /// and the last vector before `vectors` if those stop short of it. The first and last
    /// calls run nothing when the store is aligned already or the range has fewer than
    /// [`leaf::REALIGN_MIN`] whole-vector elements (then the middle one runs them all). Up
    /// to two vectors less two elements (14 at `ymm`, 30 at `zmm`) are written twice, with the
    /// same values (`LeafLoop::realign`: the loop reads nothing it stores).
    fn realign_leaf(
        &mut self,
        l: LoopId,
        s: &LeafStrategy,
        callee: FuncRef,
        (entries, vectors): (&[Value], Value),
        (stream, disp): (usize, i32),
    ) -> Result<()> {
        let lanes = i64::from(s.leaf.lanes());
        let long =
            self.b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, vectors, leaf::REALIGN_MIN);
        let zero = self.b.ins().iconst(types::I64, 0);
        // Elements to the next aligned store: (−address mod REALIGN_TO) / 4, fewer than 16.
        let at = self.b.ins().iadd_imm_s(entries[stream], i64::from(disp));
        let to = self.b.ins().ineg(at);
        let bytes = self.b.ins().band_imm_s(to, i64::from(leaf::REALIGN_TO) - 1);
        let skip = self.b.ins().ushr_imm_s(bytes, 2);
        let skip = self.b.ins().select(long, skip, zero);
        let up = self.b.ins().iadd_imm_s(skip, lanes - 1);
        let first = self.b.ins().band_imm_s(up, !(lanes - 1));
        let args = self.entries_at(entries);
        self.b.ins().call(callee, &[args, first]);
        let rest = self.b.ins().isub(vectors, skip);
        let whole = self.b.ins().band_imm_s(rest, !(lanes - 1));
        let from_skip = self.shifted_entries(l, s, entries, skip);
        let args = self.entries_at(&from_skip);
        self.b.ins().call(callee, &[args, whole]);
        let short = self.b.ins().band_imm_s(rest, lanes - 1);
        let eight = self.b.ins().iconst(types::I64, lanes);
        let last = self.b.ins().select(short, eight, zero);
        let before_end = self.b.ins().iadd_imm_s(vectors, -lanes);
        let before_end = self.b.ins().select(short, before_end, zero);
        let at_last = self.shifted_entries(l, s, entries, before_end);
        let args = self.entries_at(&at_last);
        self.b.ins().call(callee, &[args, last]);
        Ok(())
    }

    /// `entries` of leaf loop `l` (strategy `s`) moved on `by` iterations: the addresses of
    /// its streams along the loop, and of the row it prefetches; the rest as they are.
    fn shifted_entries(
        &mut self,
        l: LoopId,
        s: &LeafStrategy,
        entries: &[Value],
        by: Value,
    ) -> Vec<Value> {
        let bytes = self.b.ins().ishl_imm_s(by, 2);
        let mut moved = entries.to_vec();
        for (j, access) in s.leaf.streams.iter().enumerate() {
            if access.index.coefficient(l) != 0 {
                moved[j] = self.b.ins().iadd(entries[j], bytes);
            }
        }
        if s.vector.prefetch.is_some() {
            let p = s.leaf.streams.len();
            moved[p] = self.b.ins().iadd(entries[p], bytes);
        }
        moved
    }

    /// A new stack slot holding `entries`, 8 bytes each in order (how a leaf loop or an
    /// outlined loop takes its arguments), and its address.
    pub(super) fn entries_at(&mut self, entries: &[Value]) -> Value {
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            (8 * entries.len()).max(8) as u32,
            3,
        ));
        let at = self.b.ins().stack_addr(types::I64, slot, 0);
        for (j, &x) in entries.iter().enumerate() {
            self.b
                .ins()
                .store(MemFlagsData::trusted(), x, at, (8 * j) as i32);
        }
        at
    }

    /// Emits loop `l` by its vector strategy `v`.
    fn emit_vector_loop(&mut self, l: LoopId, body: &[Stmt], v: &VectorLoop) -> Result<()> {
        if let Some(next) = &v.prefetch {
            self.step_prefetch = Some((l, next.clone()));
        }
        match &v.routine {
            VectorRoutine::Blocked { span, stream } => {
                return self.emit_blocked(l, body, &v.plan, span.as_deref(), stream.as_deref())
            }
            VectorRoutine::ReduceSpan(span) => return self.emit_reduce_span(l, body, span),
            VectorRoutine::None if v.narrow.is_empty() => {
                return self.emit_loop_as(l, body, Some(&v.plan), &[])
            }
            VectorRoutine::None => {}
        }
        // f32 partials first; if a total comes out infinite or NaN (an f32 partial may have
        // overflowed where f64 would not), the outer accumulators go back to their values
        // before the loop and it runs again as a plain scalar loop in f64, in the
        // interpreter's order: rare, so one body copy (compile time) rather than vector
        // speed. The loop stores nothing, so running it twice changes nothing else.
        // A long loop folds its partials into the accumulators every block, which bounds
        // the f32 additions on a term's path (`narrow_sums`).
        let before = self.acc_vars_now(&v.plan.outer_accs);
        match v.fold_every {
            Some(block) => self.in_blocks(l, block, |t| {
                t.emit_loop_as(l, body, Some(&v.plan), &v.narrow)
            })?,
            None => self.emit_loop_as(l, body, Some(&v.plan), &v.narrow)?,
        }
        self.rerun_unless_finite(l, body, &v.narrow, before)
    }

    /// The vector strategy of loop `l`, which its emission needs.
    fn vector_strategy(&self, l: LoopId) -> Result<&'a VectorLoop> {
        let strategies = self.strategy;
        match strategies.of(l) {
            Some(LoopStrategy::Vector(v)) => Ok(v),
            Some(LoopStrategy::Leaf(s)) => Ok(&s.vector),
            _ => self.internal(format!("loop %{l} has no vector strategy")),
        }
    }

    /// The variables of the scalar accumulators in `accs` with their current values.
    fn acc_vars_now(&mut self, accs: &[AccId]) -> Vec<(Variable, Value)> {
        let mut now = Vec::new();
        for &a in accs {
            if let Some(AccRepr::Scalar { value, index }) = self.accs[a.index()].clone() {
                for var in std::iter::once(value).chain(index) {
                    now.push((var, self.b.use_var(var)));
                }
            }
        }
        now
    }

    /// After loop `l` summed the accumulators in `narrow` with f32 partials: unless every
    /// total is finite, puts the accumulators back to `before` and runs the loop again as a
    /// plain scalar loop in f64 ([`Self::emit_loop`]).
    fn rerun_unless_finite(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        narrow: &[AccId],
        before: Vec<(Variable, Value)>,
    ) -> Result<()> {
        self.rerun_unless_finite_with(l, narrow, before, |t| {
            let (start, end) = t.loop_range(l);
            let counter = t.b.declare_var(types::I64);
            t.b.def_var(counter, start);
            t.emit_steps(l, body, counter, end, 1)?;
            t.loop_vals[l.index()] = None;
            Ok(())
        })
    }

    /// [`Self::rerun_unless_finite`] with the re-run's loop emitted by `emit_rerun` (which sums
    /// every term of loop `l` into the accumulators in f64, in order).
    pub(super) fn rerun_unless_finite_with(
        &mut self,
        l: LoopId,
        narrow: &[AccId],
        before: Vec<(Variable, Value)>,
        emit_rerun: impl FnOnce(&mut Self) -> Result<()>,
    ) -> Result<()> {
        let mut finite = None;
        for &a in narrow {
            let Some(AccRepr::Scalar { value, .. }) = self.accs[a.index()].clone() else {
                return self.internal(format!("accumulator %{a} has no scalar value"));
            };
            let v = self.b.use_var(value);
            let d = self.b.ins().fsub(v, v);
            let ok = self.b.ins().fcmp(FloatCC::Ordered, d, d);
            finite = Some(match finite {
                Some(f) => self.b.ins().band(f, ok),
                None => ok,
            });
        }
        let Some(finite) = finite else {
            return self.internal(format!("loop %{l} re-runs no accumulator"));
        };
        let (rerun, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(finite, done, &[], rerun, &[]);
        self.b.set_cold_block(rerun);
        self.b.switch_to_block(rerun);
        for (var, v) in before {
            self.b.def_var(var, v);
        }
        emit_rerun(self)?;
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        Ok(())
    }

    /// Emits loop `l` (vector steps by `wide_plan` if any, then a scalar tail), with the
    /// vector partials of the accumulators in `narrow` kept in f32.
    fn emit_loop_as(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        wide_plan: Option<&WidePlan>,
        narrow: &[AccId],
    ) -> Result<()> {
        let annotations = self.k.loops[l].annotations;
        let (start, end) = self.loop_range(l);
        let counter = self.b.declare_var(types::I64);
        self.b.def_var(counter, start);
        let step = match wide_plan {
            Some(p) => {
                self.emit_wide_steps(l, body, counter, end, p, narrow)?;
                p.lanes * p.parts
            }
            None if annotations.unroll > 1 => {
                self.emit_steps(l, body, counter, end, annotations.unroll)?;
                annotations.unroll
            }
            None => 1,
        };
        // The scalar tail, unless the steps above provably cover the whole range (a constant
        // extent, not a thread's share of a parallel loop, that the step divides): it would
        // never run, and a vector loop's tail repeats its whole body in scalar code.
        let whole_range = !matches!(self.parallel, Some((p, ..)) if p == l)
            && !matches!(self.range_override, Some((o, ..)) if o == l);
        let covered =
            step > 1 && whole_range && self.k.loops[l].extent.is_multiple_of(u64::from(step));
        if !covered {
            self.emit_steps(l, body, counter, end, 1)?;
        }
        self.loop_vals[l.index()] = None;
        Ok(())
    }

    /// `while counter + step <= end { body × step; counter += step }`.
    fn emit_steps(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        counter: Variable,
        end: Value,
        step: u32,
    ) -> Result<()> {
        self.counted_loop(counter, end, step, |t, i| {
            t.loop_vals[l.index()] = Some(i);
            for u in 0..step {
                t.wide_offset[l.index()] = i64::from(u);
                t.stmts(body)?;
            }
            t.wide_offset[l.index()] = 0;
            Ok(())
        })
    }

    /// `while counter + step <= end { body(counter); counter += step }`, rotated: one test
    /// before the loop, then one at the bottom of the body, so an iteration takes a single
    /// branch (a short vector loop spent as much on its two jumps as on its work).
    fn counted_loop(
        &mut self,
        counter: Variable,
        end: Value,
        step: u32,
        body: impl FnOnce(&mut Self, Value) -> Result<()>,
    ) -> Result<()> {
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        // `limit ≤ end`, and `counter < limit` before a step keeps `counter + step ≤ end`.
        let limit = self.add_const(end, -(i64::from(step) - 1));
        let first = self.b.use_var(counter);
        let go = self.b.ins().icmp(IntCC::SignedLessThan, first, limit);
        self.b.ins().brif(go, body_block, &[], exit, &[]);
        self.b.switch_to_block(body_block);
        let i = self.b.use_var(counter);
        body(self, i)?;
        let next = self.b.ins().iadd_imm_s(i, i64::from(step));
        self.b.def_var(counter, next);
        let again = self.b.ins().icmp(IntCC::SignedLessThan, next, limit);
        self.b.ins().brif(again, body_block, &[], exit, &[]);
        self.b.switch_to_block(exit);
        Ok(())
    }

    /// Vector steps of `lanes × parts` iterations; leaves the remainder to a scalar tail.
    fn emit_wide_steps(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        counter: Variable,
        end: Value,
        plan: &WidePlan,
        narrow: &[AccId],
    ) -> Result<()> {
        let ctx = WideCtx {
            loop_id: l,
            lanes: plan.lanes,
            parts: plan.parts,
        };
        // Partial vector accumulators for reductions into accumulators declared outside.
        let mut saved = Vec::new();
        for &a in &plan.outer_accs {
            let Some(scalar) = self.accs[a.index()].clone() else {
                return self.internal(format!("accumulator %{a} reduced before its declaration"));
            };
            let decl = self.k.accs[a].clone();
            let part_ty = partial_type(&decl, narrow.contains(&a));
            let init = self.identity(decl.kind, part_ty);
            let vec_ty = vector_type(part_ty);
            let v = self.b.ins().splat(vec_ty, init);
            let var_of = |t: &mut Self, ty: Type, init: Value| {
                let var = t.b.declare_var(ty);
                t.b.def_var(var, init);
                var
            };
            let partials = if is_extreme(decl.kind, decl.ty) {
                let (min, zero, max) = (
                    self.b.ins().iconst(types::I32, i64::from(i32::MIN)),
                    self.b.ins().iconst(types::I32, 0),
                    self.b.ins().iconst(types::I32, i64::from(i32::MAX)),
                );
                let (min, zero, max) = (
                    self.b.ins().splat(types::I32X4, min),
                    self.b.ins().splat(types::I32X4, zero),
                    self.b.ins().splat(types::I32X4, max),
                );
                AccRepr::Extreme(
                    (0..ctx.vectors(decl.ty))
                        .map(|_| Extreme {
                            value: var_of(self, vec_ty, v),
                            bits_smax: var_of(self, types::I32X4, min),
                            bits_umax: var_of(self, types::I32X4, zero),
                            bits_smin: var_of(self, types::I32X4, max),
                        })
                        .collect(),
                )
            } else {
                AccRepr::Wide(
                    (0..ctx.vectors(part_ty))
                        .map(|_| var_of(self, vec_ty, v))
                        .collect(),
                )
            };
            self.accs[a.index()] = Some(partials.clone());
            saved.push((a, scalar, partials));
        }
        let step = plan.lanes * plan.parts;
        self.wide = Some(ctx);
        self.narrowed = narrow.to_vec();
        let result = self.emit_steps_wide(l, body, counter, end, step);
        self.wide = None;
        self.narrowed.clear();
        result?;
        // Combine the partial accumulators into the scalar ones.
        for (a, scalar, partials) in saved {
            let decl = self.k.accs[a].clone();
            let vars = match partials {
                AccRepr::Wide(vars) => vars,
                AccRepr::Extreme(parts) => {
                    let s = self.settle_extreme(decl.kind, &parts);
                    if let AccRepr::Scalar { value, .. } = scalar {
                        let cur = self.b.use_var(value);
                        let next = self.combine(decl.kind, decl.ty, cur, s);
                        self.b.def_var(value, next);
                    }
                    self.accs[a.index()] = Some(scalar);
                    continue;
                }
                AccRepr::Scalar { .. } => {
                    return self.internal(format!("accumulator %{a} has no vector partials"))
                }
            };
            let part_ty = partial_type(&decl, narrow.contains(&a));
            let parts: Vec<Value> = vars.iter().map(|v| self.b.use_var(*v)).collect();
            self.settle_partials(&decl, part_ty, &parts, &scalar);
            self.accs[a.index()] = Some(scalar);
        }
        Ok(())
    }

    /// Combines the vector partials `parts` (of `part_ty`) of an accumulator declared as
    /// `decl` into its scalar `scalar`: the vectors in order, then their lanes in order,
    /// converted to the accumulator's type, then into the scalar.
    fn settle_partials(
        &mut self,
        decl: &AccDecl,
        part_ty: ScalarType,
        parts: &[Value],
        scalar: &AccRepr,
    ) {
        let mut v = parts[0];
        for &x in &parts[1..] {
            v = self.combine(decl.kind, part_ty, v, x);
        }
        let mut s = self.b.ins().extractlane(v, 0);
        for lane in 1..vector_lanes(part_ty) {
            let x = self.b.ins().extractlane(v, lane as u8);
            s = self.combine(decl.kind, part_ty, s, x);
        }
        if part_ty != decl.ty {
            s = self.convert(s, part_ty, decl.ty);
        }
        if let AccRepr::Scalar { value, .. } = scalar {
            let cur = self.b.use_var(*value);
            let next = self.combine(decl.kind, decl.ty, cur, s);
            self.b.def_var(*value, next);
        }
    }

    fn emit_steps_wide(
        &mut self,
        l: LoopId,
        body: &[Stmt],
        counter: Variable,
        end: Value,
        step: u32,
    ) -> Result<()> {
        self.counted_loop(counter, end, step, |t, i| {
            t.loop_vals[l.index()] = Some(i);
            t.stmts(body)?;
            t.prefetch_step(l, i, step)
        })
    }
}
