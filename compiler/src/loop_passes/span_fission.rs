//! Span fission: a vector loop that adds span functions of its terms into a row of
//! accumulators — `acc[i] = acc[i] + exp(a₀) + exp(a₁) + …`, the pass of a sum of exponentials
//! over a strided axis in memory order (`crate::reduce_in_memory`, rows jammed), log-sum-exp's
//! denominator — becomes one loop per term storing `exp(aⱼ)` into a span of scratch, then the
//! original loop adding those spans into the row in the same order.
//!
//! Why: each new loop's one store of a span function is what the code generator hands to the
//! native span routine (`codegen::translate::span`: 16 lanes with AVX-512), where the fused
//! loop computed each `exp` with Cranelift's 4-lane code. The scratch is a few KiB a term,
//! written and read back while in L1.
//!
//! Assumes: a lowered kernel (after `crate::reduce_in_memory`), and that the code generator
//! runs span functions natively (the caller checks: otherwise this only adds a store and a
//! load a term). Guarantees: every value is what it was, bit for bit — each term is computed
//! by the same instructions, stored and loaded back exactly, and added in the same order; a
//! new scratch buffer per rewritten loop, `F32`, indexed by the kernel's parallel loop so
//! that no two threads share a span, which the caller binds as scratch. Only loops of at least
//! the span routine's least extent, holding no loop, `if` or reduction, with one store, to a
//! row the loop loads at the same index.

use std::collections::HashMap;
use weft_ir::loop_ir::{
    AffineExpr, BinaryOp, BufferAccess, BufferAccessExpr, BufferId, Inst, Kernel, LoopId,
    ScalarType, Stmt, UnaryOp, ValueId,
};

use crate::codegen::translate::span::{has_span_routine, lets_of, slice, MIN_EXTENT};

/// A loop [`split_span_sums`] rewrites: its accumulator row's load and store, and its terms
/// in the order the loop adds them (the span function, its argument).
struct FunctionSum {
    acc_value: ValueId,
    target: BufferAccessExpr,
    terms: Vec<(UnaryOp, ValueId)>,
}

/// [`split_span_sums`] as a pass over the kernel's body.
pub fn run(k: &mut Kernel, _cx: &super::PassContext<'_>) -> super::PassOutcome {
    let mut body = std::mem::take(&mut k.body);
    let (scratch, notes) = split_span_sums(k, &mut body);
    k.body = body;
    super::PassOutcome {
        changed: !notes.is_empty(),
        scratch,
        notes,
    }
}

/// Rewrites every qualifying loop of `body` (module docs); returns the scratch buffers it
/// added to `k`, in order, and a line per rewrite for `weft explain`.
pub fn split_span_sums(k: &mut Kernel, body: &mut Vec<Stmt>) -> (Vec<BufferId>, Vec<String>) {
    // The kernel's parallel loop: `body`'s one statement (not yet the kernel's body).
    let parallel = match body.as_slice() {
        [Stmt::Loop { loop_id, .. }] if k.loops[*loop_id].annotations.parallel => Some(*loop_id),
        _ => None,
    };
    let mut added = Vec::new();
    let mut notes = Vec::new();
    walk(k, body, parallel, &mut added, &mut notes);
    (added, notes)
}

fn walk(
    k: &mut Kernel,
    body: &mut Vec<Stmt>,
    parallel: Option<LoopId>,
    added: &mut Vec<BufferId>,
    notes: &mut Vec<String>,
) {
    let mut out = Vec::with_capacity(body.len());
    for s in std::mem::take(body) {
        match s {
            Stmt::Loop {
                loop_id,
                body: mut inner,
            } => match function_sum(k, loop_id, &inner) {
                Some(sum) => {
                    let name = format!("span{}_{}", added.len(), k.buffers[sum.target.buffer].name);
                    let (loops, buffer) = fission(k, loop_id, &inner, &sum, parallel, name);
                    notes.push(format!(
                        "%{}'s terms: {} span function{} each computed into a span of %{} by a \
                         loop of its own, then added in order",
                        k.buffers[sum.target.buffer].name,
                        sum.terms.len(),
                        if sum.terms.len() == 1 { "" } else { "s" },
                        k.buffers[buffer].name,
                    ));
                    added.push(buffer);
                    out.extend(loops);
                }
                None => {
                    walk(k, &mut inner, parallel, added, notes);
                    out.push(Stmt::Loop {
                        loop_id,
                        body: inner,
                    });
                }
            },
            Stmt::If {
                cond,
                body: mut inner,
            } => {
                walk(k, &mut inner, parallel, added, notes);
                out.push(Stmt::If { cond, body: inner });
            }
            other => out.push(other),
        }
    }
    *body = out;
}

/// The [`FunctionSum`] loop `l` (body `body`) is, if it is one.
fn function_sum(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<FunctionSum> {
    let decl = &k.loops[l];
    if !decl.annotations.vectorize || decl.annotations.parallel || decl.extent < MIN_EXTENT {
        return None;
    }
    let mut store = None;
    let mut defs: HashMap<ValueId, &Inst> = HashMap::new();
    for s in body {
        match s {
            Stmt::Let { result, inst } => {
                defs.insert(*result, inst);
            }
            Stmt::Store { target, value } if store.is_none() => store = Some((target, *value)),
            _ => return None,
        }
    }
    let (target, mut v) = store?;
    if k.buffers[target.buffer].ty != ScalarType::F32 || target.index.coefficient(l) != 1 {
        return None;
    }
    // Down the add chain from the stored value to the row's load: each add, its function
    // value, and the load.
    let (mut terms, mut chain) = (Vec::new(), Vec::new());
    let acc_value = loop {
        chain.push(v);
        match defs.get(&v)? {
            Inst::Binary(BinaryOp::Add, sum, f) => {
                let Inst::Unary(op, a) = defs.get(f)? else {
                    return None;
                };
                if !has_span_routine(*op) || k.values[*f] != ScalarType::F32 {
                    return None;
                }
                terms.push((*op, *a));
                chain.push(*f);
                v = *sum;
            }
            Inst::Load(a) if a == target => break v,
            _ => return None,
        }
    };
    terms.reverse();
    // The row is read once, by the first add, and each term feeds its add alone; no term's
    // argument reads the row or a partial sum.
    let uses = |x: ValueId| {
        body.iter()
            .filter_map(|s| match s {
                Stmt::Let { inst, .. } => Some(inst.operands()),
                Stmt::Store { value, .. } => Some(vec![*value]),
                _ => None,
            })
            .flatten()
            .filter(|o| *o == x)
            .count()
    };
    let reads_target = body.iter().filter(
        |s| matches!(s, Stmt::Let { inst: Inst::Load(a), .. } if a.buffer == target.buffer),
    );
    if reads_target.count() != 1 || chain.iter().any(|c| uses(*c) != 1) {
        return None;
    }
    for (_, a) in &terms {
        if slice(body, *a, None).iter().any(|x| chain.contains(x)) {
            return None;
        }
    }
    Some(FunctionSum {
        acc_value,
        target: target.clone(),
        terms,
    })
}

/// Loop `l` (body `body`) as one loop per term storing its function into a span of a new
/// scratch buffer, then `l` adding the spans into the row; the statements and the buffer.
fn fission(
    k: &mut Kernel,
    l: LoopId,
    body: &[Stmt],
    sum: &FunctionSum,
    parallel: Option<LoopId>,
    name: String,
) -> (Vec<Stmt>, BufferId) {
    let extent = k.loops[l].extent;
    let annotations = k.loops[l].annotations;
    let terms = sum.terms.len() as u64;
    let per_block = terms * extent;
    let blocks = parallel.map_or(1, |p| k.loops[p].extent);
    let scratch = k.add_buffer(
        name,
        ScalarType::F32,
        blocks * per_block,
        BufferAccess::ReadWrite,
    );
    let span = |j: u64, i: LoopId| BufferAccessExpr {
        buffer: scratch,
        index: match parallel {
            Some(p) => AffineExpr::new([(p, per_block as i64), (i, 1)], (j * extent) as i64),
            None => AffineExpr::new([(i, 1)], (j * extent) as i64),
        },
        mask: Vec::new(),
    };
    let mut out = Vec::new();
    for (j, (op, a)) in sum.terms.iter().enumerate() {
        let lj = k.add_loop(extent, annotations);
        let mut renamed: HashMap<ValueId, ValueId> = HashMap::new();
        let mut stmts = Vec::new();
        for st in lets_of(body, &slice(body, *a, None)) {
            let Stmt::Let { result, inst } = st else {
                continue;
            };
            let inst = match inst.renamed(&|v| *renamed.get(&v).unwrap_or(&v)) {
                Inst::Index(i) if i == l => Inst::Index(lj),
                Inst::Load(a) => Inst::Load(on_loop(a, l, lj)),
                other => other,
            };
            let (v, st) = k.define(k.values[result], inst);
            renamed.insert(result, v);
            stmts.push(st);
        }
        let (f, st) = k.define(ScalarType::F32, Inst::Unary(*op, renamed[a]));
        stmts.push(st);
        stmts.push(Stmt::Store {
            target: span(j as u64, lj),
            value: f,
        });
        out.push(Stmt::Loop {
            loop_id: lj,
            body: stmts,
        });
    }
    // The row plus each span, in the loop's order.
    let mut stmts = vec![Stmt::Let {
        result: sum.acc_value,
        inst: Inst::Load(sum.target.clone()),
    }];
    let mut acc = sum.acc_value;
    for j in 0..terms {
        let (t, st) = k.define(ScalarType::F32, Inst::Load(span(j, l)));
        stmts.push(st);
        let (s, st) = k.define(ScalarType::F32, Inst::Binary(BinaryOp::Add, acc, t));
        stmts.push(st);
        acc = s;
    }
    stmts.push(Stmt::Store {
        target: sum.target.clone(),
        value: acc,
    });
    out.push(Stmt::Loop {
        loop_id: l,
        body: stmts,
    });
    (out, scratch)
}

/// `a` with loop `from` read as loop `to` (a variable for a variable: no coefficient or
/// offset changes, so nothing can overflow).
fn on_loop(a: BufferAccessExpr, from: LoopId, to: LoopId) -> BufferAccessExpr {
    let moved = |e: &AffineExpr| e.substitute(from, &AffineExpr::var(to));
    a.clone().map_exprs(&moved).unwrap_or(a)
}
