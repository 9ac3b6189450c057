//! Outlining: a kernel's sizeable loop nests translated into Cranelift functions of their own,
//! so that the JIT compiles them on several cores at once (`jit.rs`).
//!
//! Cranelift compiles a function on one thread. Layernorm's kernel is one function of three
//! passes inside the row loop; with its largest pass outlined it is two functions of about
//! equal size, compiled side by side on a pool's threads (`codegen/parallel.rs`). Each
//! function costs a fixed part (about 35 µs measured for an empty one) and each call its
//! clobbers, so splitting finer than the threads do only adds work.
//!
//! Candidates are the loops of the first body holding several (the kernel's, its parallel
//! loop's, or that of a loop alone in one of these: softmax's row loop inside a block of
//! rows), running at least `MIN_ITERATIONS` iterations per entry (counting their nested
//! loops': a call and its interface cost tens of cycles); not a span loop whose routine does
//! the next loop's sum nor that loop (the partials pass between them in the kernel's frame),
//! nor one whose strategy is one call of a native routine (nothing to compile). A kernel with
//! fewer than two keeps all inline (one would leave nothing to compile beside it), as does one
//! whose search would enter a jammed loop. Of these the largest by cost is outlined, then the
//! next largest while what is outlined stays within half the kernel's cost. The loop-strategy
//! pass chooses them (`strategy::outline_candidates`) and the kernel's [`KernelStrategy`]
//! records the choice, which this reads.
//!
//! An outlined loop `L` becomes a function `(table, io)`, emitted by the same translator as
//! the inline loop, so it computes the same bits; `io` points at a stack slot of the caller
//! holding 8-byte entries: the indices of the loops enclosing `L` or named inside it, then
//! the values defined outside `L` that it reads (all scalars: no vector loop encloses `L`),
//! then each accumulator declared outside and reduced or read inside — its value, and its
//! index for arg-reductions. The function reads every entry on entry, writes the
//! accumulators' back before it returns, and the caller reloads them. Should its translation
//! leave state for later statements after all (a span routine's sums for a later loop,
//! [`span`](super::span)), it is dropped and the loop emitted inline. A streamed store inside
//! an outlined function is fenced by the kernel's function before it returns, as an inline
//! one is.

use cranelift_codegen::ir::{
    types, AbiParam, ExtFuncData, ExternalName, FuncRef, Function, InstBuilder, MemFlagsData,
    Signature, Type, UserExternalName, UserFuncName, Value,
};
use cranelift_codegen::isa::{CallConv, TargetFrontendConfig};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{AccId, Inst, LoopId, Stmt, ValueId};

use super::{clif_type, AccRepr, Repr, Result, Translator};
use crate::codegen::strategy::KernelStrategy;

/// The namespace of the names by which a kernel's function calls its outlined functions;
/// the JIT renames each to the module function it declares for it.
pub(crate) const OUTLINED_NAMESPACE: u32 = 2;

/// The signature of an outlined function: `(i64 table, i64 io)`.
pub(crate) fn outlined_signature(call_conv: CallConv) -> Signature {
    let mut sig = Signature::new(call_conv);
    sig.params.push(AbiParam::new(types::I64));
    sig.params.push(AbiParam::new(types::I64));
    sig
}

/// What the translator of a kernel's function needs to outline loops.
pub(crate) struct Outlining {
    /// The loops to outline ([`outline_candidates`]).
    candidates: Vec<LoopId>,
    /// How many user names, signatures and imported functions the kernel's function had
    /// before translation: each outlined function imports the same, so a `FuncRef` means the
    /// same function in both.
    imports: (usize, usize, usize),
    call_conv: CallConv,
    frontend: TargetFrontendConfig,
    /// The outlined functions, in the order of their names' indices.
    pub(crate) functions: Vec<Function>,
    /// Each loop outlined so far, the reference its caller calls it by, and whether it
    /// streams stores: a loop emitted twice (its parent unrolled) calls one function.
    done: Vec<(LoopId, FuncRef, bool)>,
}

impl Outlining {
    /// Outlining of the loops `strategy` chose, for a kernel whose function is `func` with its
    /// imports declared.
    pub(crate) fn new(
        strategy: &KernelStrategy,
        func: &Function,
        frontend: TargetFrontendConfig,
    ) -> Self {
        Self {
            candidates: strategy.outlined().to_vec(),
            imports: (
                func.params.user_named_funcs().len(),
                func.dfg.signatures.len(),
                func.dfg.ext_funcs.len(),
            ),
            call_conv: func.signature.call_conv,
            frontend,
            functions: Vec::new(),
            done: Vec::new(),
        }
    }

    /// Copies the kernel function's first imports into `sub`, in order.
    fn import_into(&self, main: &Function, sub: &mut Function) {
        let (names, sigs, funcs) = self.imports;
        for (_, name) in main.params.user_named_funcs().iter().take(names) {
            sub.declare_imported_user_function(name.clone());
        }
        for (_, sig) in main.dfg.signatures.iter().take(sigs) {
            sub.import_signature(sig.clone());
        }
        for (_, data) in main.dfg.ext_funcs.iter().take(funcs) {
            sub.import_function(data.clone());
        }
    }
}

/// What an outlined loop exchanges with its caller, in the order of the `io` entries.
struct Interface {
    loops: Vec<LoopId>,
    values: Vec<ValueId>,
    accs: Vec<AccId>,
    /// The caller's values of `loops` and `values`, in order.
    inputs: Vec<Value>,
    /// The caller's variables of `accs`: each value, then its index for arg-reductions.
    acc_vars: Vec<Variable>,
}

/// The values `body` reads that it does not define, the accumulators it reduces into or reads
/// that it does not declare, and the loops its accesses and `index` instructions name that it
/// does not run; each list in order of first use.
fn free_names(body: &[Stmt]) -> (Vec<ValueId>, Vec<AccId>, Vec<LoopId>) {
    #[derive(Default)]
    struct Walk {
        used: Vec<ValueId>,
        defined: Vec<ValueId>,
        accs: Vec<AccId>,
        declared: Vec<AccId>,
        loops: Vec<LoopId>,
        ran: Vec<LoopId>,
    }
    fn push<T: PartialEq>(v: &mut Vec<T>, x: T) {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    impl Walk {
        fn access(&mut self, a: &weft_ir::loop_ir::BufferAccessExpr) {
            let exprs = std::iter::once(&a.index).chain(a.mask.iter().map(|m| &m.expr));
            for e in exprs {
                for &(l, _) in e.terms() {
                    push(&mut self.loops, l);
                }
            }
        }
        fn stmts(&mut self, body: &[Stmt]) {
            for s in body {
                match s {
                    Stmt::Let { result, inst } => {
                        inst.operands()
                            .into_iter()
                            .for_each(|v| push(&mut self.used, v));
                        match inst {
                            Inst::Load(a) => self.access(a),
                            Inst::Index(l) => push(&mut self.loops, *l),
                            Inst::AccValue(a) | Inst::AccIndex(a) => push(&mut self.accs, *a),
                            _ => {}
                        }
                        push(&mut self.defined, *result);
                    }
                    Stmt::Store { target, value } => {
                        self.access(target);
                        push(&mut self.used, *value);
                    }
                    Stmt::DeclareAcc(a) => push(&mut self.declared, *a),
                    Stmt::Reduce { acc, value, index } => {
                        push(&mut self.accs, *acc);
                        push(&mut self.used, *value);
                        index.iter().for_each(|&i| push(&mut self.used, i));
                    }
                    Stmt::Loop { loop_id, body } => {
                        push(&mut self.ran, *loop_id);
                        self.stmts(body);
                    }
                    Stmt::If { cond, body } => {
                        push(&mut self.used, *cond);
                        self.stmts(body);
                    }
                }
            }
        }
    }
    let mut w = Walk::default();
    w.stmts(body);
    let values = w.used.into_iter().filter(|v| !w.defined.contains(v));
    let accs = w.accs.into_iter().filter(|a| !w.declared.contains(a));
    let loops = w.loops.into_iter().filter(|l| !w.ran.contains(l));
    (values.collect(), accs.collect(), loops.collect())
}

/// The loops enclosing loop `l` in `body`, outermost first; `None` if `l` is not in it.
fn enclosing(body: &[Stmt], l: LoopId) -> Option<Vec<LoopId>> {
    body.iter().find_map(|s| match s {
        Stmt::Loop { loop_id, .. } if *loop_id == l => Some(Vec::new()),
        Stmt::Loop { loop_id, body } => enclosing(body, l).map(|mut v| {
            v.insert(0, *loop_id);
            v
        }),
        Stmt::If { body, .. } => enclosing(body, l),
        _ => None,
    })
}

/// The entries of `io` an outlined function reads: the Cranelift type of each.
fn entry_types(t: &Translator<'_, '_>, i: &Interface) -> Vec<Type> {
    let mut tys = vec![types::I64; i.loops.len()];
    tys.extend(i.values.iter().map(|v| clif_type(t.k.values[*v])));
    for &a in &i.accs {
        tys.push(clif_type(t.k.accs[a].ty));
        if t.k.accs[a].kind.has_index() {
            tys.push(types::I64);
        }
    }
    tys
}

impl Translator<'_, '_> {
    /// Emits loop `l` (body `body`) as a call of a function of its own when it is one to
    /// outline and its interface allows; `false` if it must be emitted inline.
    pub(super) fn try_outline(&mut self, l: LoopId, body: &[Stmt]) -> Result<bool> {
        let eligible = self.wide.is_none()
            && self.range_override.is_none()
            && self.jam_loads.is_empty()
            && self.span_sums.is_empty()
            && self
                .outlining
                .as_ref()
                .is_some_and(|o| o.candidates.contains(&l));
        if !eligible {
            return Ok(false);
        }
        let Some(interface) = self.interface(l, body) else {
            return Ok(false);
        };
        let known = self
            .outlining
            .as_ref()
            .and_then(|o| o.done.iter().find(|d| d.0 == l).copied());
        let (callee, streamed) = match known {
            Some((_, callee, streamed)) => (callee, streamed),
            None => {
                let Some((func, streamed)) = self.outlined_function(l, body, &interface)? else {
                    return Ok(false);
                };
                let sig = func.signature.clone();
                let Some(o) = self.outlining.as_mut() else {
                    return Ok(false);
                };
                o.functions.push(func);
                let index = o.functions.len() - 1;
                let callee = self.import_outlined(index, sig);
                if let Some(o) = self.outlining.as_mut() {
                    o.done.push((l, callee, streamed));
                }
                (callee, streamed)
            }
        };
        self.call_outlined(callee, &interface);
        self.streamed |= streamed;
        Ok(true)
    }

    /// The interface of loop `l`, if everything it needs from outside is a scalar in hand.
    fn interface(&self, l: LoopId, body: &[Stmt]) -> Option<Interface> {
        let (values, accs, mut loops) = free_names(body);
        // Every enclosing loop: what `l` emits may name one its statements do not (a later
        // row's address, prefetched).
        for m in enclosing(&self.k.body, l).unwrap_or_default() {
            if !loops.contains(&m) {
                loops.push(m);
            }
        }
        loops.retain(|&m| m != l);
        let mut inputs = Vec::with_capacity(loops.len() + values.len());
        for m in &loops {
            inputs.push(self.loop_vals[m.index()]?);
        }
        for v in &values {
            match self.values[v.index()] {
                Some(Repr::Scalar(x)) => inputs.push(x),
                _ => return None,
            }
        }
        let mut acc_vars = Vec::new();
        for a in &accs {
            match self.accs[a.index()] {
                Some(AccRepr::Scalar { value, index }) => {
                    acc_vars.extend(std::iter::once(value).chain(index))
                }
                _ => return None,
            }
        }
        Some(Interface {
            loops,
            values,
            accs,
            inputs,
            acc_vars,
        })
    }

    /// Translates loop `l` into a new function; `None` if its translation left state for
    /// later statements (it is then emitted inline). Also whether it streams stores.
    fn outlined_function(
        &self,
        l: LoopId,
        body: &[Stmt],
        i: &Interface,
    ) -> Result<Option<(Function, bool)>> {
        let Some(outlining) = self.outlining.as_ref() else {
            return Ok(None);
        };
        let sig = outlined_signature(outlining.call_conv);
        let mut func = Function::with_name_signature(UserFuncName::default(), sig);
        outlining.import_into(self.b.func, &mut func);
        let tys = entry_types(self, i);
        let mut fctx = FunctionBuilderContext::new();
        let mut b = FunctionBuilder::new(&mut func, &mut fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let params = b.block_params(entry).to_vec();
        let (table, io) = (params[0], params[1]);
        let mut t = Translator::new(
            self.k,
            self.strategy,
            b,
            self.options,
            self.pow,
            table,
            self.reduced_only.clone(),
        );
        t.leaves = self.leaves;
        let loaded: Vec<Value> = (0..tys.len())
            .map(|j| {
                t.b.ins()
                    .load(tys[j], MemFlagsData::trusted(), io, (8 * j) as i32)
            })
            .collect();
        let mut at = loaded.into_iter();
        for &m in &i.loops {
            t.loop_vals[m.index()] = at.next();
        }
        for &v in &i.values {
            t.values[v.index()] = at.next().map(Repr::Scalar);
        }
        let mut acc_vars = Vec::new();
        for &a in &i.accs {
            let decl = &t.k.accs[a];
            let mut var_of = |ty: Type, init: Option<Value>| {
                let var = t.b.declare_var(ty);
                if let Some(v) = init {
                    t.b.def_var(var, v);
                }
                var
            };
            let value = var_of(clif_type(decl.ty), at.next());
            let index = decl.kind.has_index().then(|| var_of(types::I64, at.next()));
            t.accs[a.index()] = Some(AccRepr::Scalar { value, index });
            acc_vars.push((value, index));
        }
        t.emit_loop(l, body)?;
        if !t.span_sums.is_empty() {
            return Ok(None);
        }
        let streamed = t.streamed || t.staging_slot.is_some();
        let mut j = i.loops.len() + i.values.len();
        for (value, index) in acc_vars {
            for var in std::iter::once(value).chain(index) {
                let v = t.b.use_var(var);
                t.b.ins()
                    .store(MemFlagsData::trusted(), v, io, (8 * j) as i32);
                j += 1;
            }
        }
        t.b.ins().return_(&[]);
        t.b.seal_all_blocks();
        t.b.finalize(outlining.frontend);
        Ok(Some((func, streamed)))
    }

    /// The reference by which the kernel's function calls the `index`th outlined function,
    /// of signature `sig`.
    fn import_outlined(&mut self, index: usize, sig: Signature) -> FuncRef {
        let name = self
            .b
            .func
            .declare_imported_user_function(UserExternalName::new(
                OUTLINED_NAMESPACE,
                index as u32,
            ));
        let signature = self.b.import_signature(sig);
        self.b.import_function(ExtFuncData {
            name: ExternalName::User(name),
            signature,
            colocated: false,
            patchable: false,
        })
    }

    /// Calls `callee`, an outlined loop with interface `i`, and takes back its accumulators.
    fn call_outlined(&mut self, callee: FuncRef, i: &Interface) {
        let mut entries = i.inputs.clone();
        for &var in &i.acc_vars {
            entries.push(self.b.use_var(var));
        }
        let io = self.entries_at(&entries);
        let flags = MemFlagsData::trusted();
        self.b.ins().call(callee, &[self.table, io]);
        let first = i.inputs.len();
        for (j, &var) in i.acc_vars.iter().enumerate() {
            let ty = self.b.func.dfg.value_type(entries[first + j]);
            let v = self.b.ins().load(ty, flags, io, (8 * (first + j)) as i32);
            self.b.def_var(var, v);
        }
    }
}
