//! Whether, and how, a loop annotated `vectorize` runs in SIMD lanes.
//!
//! Assumes a verified kernel. Guarantees: a returned [`WidePlan`] describes a body that the
//! translator can run `lanes × parts` iterations at a time with the same results as the scalar
//! loop (up to float reduction order): every value that varies with the loop is `f32`, `f64` or
//! a `bool` compared from one of them, and no operation needs per-lane control flow. Otherwise the loop stays scalar — the
//! annotation is a request, not a promise. A value is *varying* if it depends on the vectorised
//! loop's index (through a load, `index`, an accumulator declared inside, or an operand);
//! everything else is *uniform* and computed once per vector step as a scalar.
//!
//! A `bool` that varies is a comparison of floats held as lane masks of their vectors; it may
//! select between, convert to, or combine logically with values of that float type only.
//!
//! A loop may mix the two float types (an f32 sum accumulated in f64, say): it then steps four
//! lanes at a time, an f32 value in one `f32x4` per part and an f64 value in two `f64x2` per
//! part, with `convert` between them a promote of each half (or a demote and a join).

use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{
    AccId, BinaryOp, BufferAccessExpr, Inst, Kernel, LoopId, ScalarType, Stmt, UnaryOp, ValueId,
};
use weft_ir::scalar::MAX_F32_SUM_CHAIN;

/// How to run a vectorised loop.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct WidePlan {
    /// Lanes per part: 4 if any varying value is `f32`, else 2 (128-bit vectors; an `f64`
    /// value of a 4-lane part takes two vectors).
    pub lanes: u32,
    /// Vectors per step (the loop's unroll factor): independent accumulators per reduction.
    pub parts: u32,
    /// Accumulators declared outside the loop and reduced inside: they get `parts` vector
    /// partial sums, combined into the scalar accumulator after the vector steps.
    pub outer_accs: Vec<AccId>,
    /// Per value: whether it varies with the loop.
    pub varying: Vec<bool>,
}

/// Whether `access` touches different elements for different indices of `l`.
pub(crate) fn depends_on(access: &BufferAccessExpr, l: LoopId) -> bool {
    access.index.coefficient(l) != 0 || access.mask.iter().any(|m| m.expr.coefficient(l) != 0)
}

/// Whether `body` stores anywhere, nested loops included.
pub(crate) fn stores(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Store { .. } => true,
        Stmt::Loop { body, .. } | Stmt::If { body, .. } => stores(body),
        _ => false,
    })
}

fn collect(body: &[Stmt], declared: &mut Vec<AccId>, reduced: &mut Vec<AccId>) {
    for s in body {
        match s {
            Stmt::DeclareAcc(a) => declared.push(*a),
            Stmt::Reduce { acc, .. } => reduced.push(*acc),
            Stmt::Loop { body, .. } | Stmt::If { body, .. } => collect(body, declared, reduced),
            _ => {}
        }
    }
}

/// The plan for vectorising loop `l` with body `body`, or `None` if it must stay scalar.
pub(crate) fn plan(k: &Kernel, l: LoopId, body: &[Stmt]) -> Option<WidePlan> {
    let (mut declared, mut reduced) = (Vec::new(), Vec::new());
    collect(body, &mut declared, &mut reduced);
    let mut outer_accs: Vec<AccId> = reduced
        .iter()
        .copied()
        .filter(|a| !declared.contains(a))
        .collect();
    outer_accs.sort();
    outer_accs.dedup();
    let mut walker = Walker {
        k,
        l,
        declared,
        outer_accs,
        varying: vec![false; k.values.len()],
        masks: vec![None; k.values.len()],
        has_f32: false,
        has_f64: false,
        accesses: Vec::new(),
    };
    walker.walk(body)?;
    if !walker.lanes_independent() {
        return None;
    }
    if !walker.has_f32 && !walker.has_f64 {
        return None;
    }
    // Accumulators take their type's lanes too (an f32 sum of a uniform value in an otherwise
    // f64 loop still needs four lanes per step).
    for a in walker
        .declared
        .clone()
        .iter()
        .chain(&walker.outer_accs.clone())
    {
        let decl = k.accs.get(*a)?;
        if decl.kind.has_index() {
            return None;
        }
        walker.require_float(decl.ty)?;
    }
    Some(WidePlan {
        lanes: if walker.has_f32 { 4 } else { 2 },
        parts: k.loops.get(l)?.annotations.unroll.max(1),
        outer_accs: walker.outer_accs,
        varying: walker.varying,
    })
}

struct Walker<'a> {
    k: &'a Kernel,
    l: LoopId,
    declared: Vec<AccId>,
    outer_accs: Vec<AccId>,
    varying: Vec<bool>,
    /// Per varying `bool` value: the float type whose comparison made it. It is held as lane
    /// masks of that type's vectors, and may only meet values of that type (a `select` of
    /// it, a `convert` to it, a logical op with another of its masks).
    masks: Vec<Option<ScalarType>>,
    has_f32: bool,
    has_f64: bool,
    /// Every load and store in the body, with whether a store's value varies.
    accesses: Vec<Access<'a>>,
}

/// A load or store met while walking the body.
struct Access<'a> {
    expr: &'a BufferAccessExpr,
    /// `Some(varying)` for a store, `None` for a load.
    store: Option<bool>,
}

impl<'a> Walker<'a> {
    /// Whether running the loop's iterations side by side in lanes keeps the scalar loop's
    /// memory semantics. Two hazards break it: a varying value stored where every lane writes
    /// the same element (the lanes race and the last one wins, where the scalar loop would
    /// have each iteration read back its own value), and a buffer both stored and loaded in
    /// the body unless every access to it is the same per-lane element (otherwise one lane
    /// may read what another lane of the same step wrote, or was about to write). Row
    /// scratch written inside a register-blocked result loop is the case that needs this.
    fn lanes_independent(&self) -> bool {
        let racing_store = self
            .accesses
            .iter()
            .any(|a| a.store == Some(true) && a.expr.index.coefficient(self.l) == 0);
        if racing_store {
            return false;
        }
        self.accesses
            .iter()
            .filter(|a| a.store.is_some())
            .all(|stored| self.only_own_element(stored.expr))
    }

    /// Whether every lane touches only its own element of `stored`'s buffer: the buffer is not
    /// loaded in the body, or every access to it is `stored`'s index and mask, which moves with
    /// the loop.
    fn only_own_element(&self, stored: &BufferAccessExpr) -> bool {
        let mut same = self
            .accesses
            .iter()
            .filter(|a| a.expr.buffer == stored.buffer);
        let loaded = same.clone().any(|a| a.store.is_none());
        !loaded
            || (stored.index.coefficient(self.l) != 0
                && same.all(|a| a.expr.index == stored.index && a.expr.mask == stored.mask))
    }

    /// The float type of a varying `bool`'s lane masks ([`Walker::masks`]).
    fn mask(&self, v: weft_ir::loop_ir::ValueId) -> Option<ScalarType> {
        self.masks.get(v.index()).copied().flatten()
    }

    fn is_varying(&self, v: weft_ir::loop_ir::ValueId) -> bool {
        self.varying.get(v.index()).copied().unwrap_or(false)
    }

    fn require_float(&mut self, ty: ScalarType) -> Option<()> {
        match ty {
            ScalarType::F32 => self.has_f32 = true,
            ScalarType::F64 => self.has_f64 = true,
            _ => return None,
        }
        Some(())
    }

    fn walk(&mut self, body: &'a [Stmt]) -> Option<()> {
        for s in body {
            match s {
                Stmt::Let { result, inst } => {
                    let ty = *self.k.values.get(*result)?;
                    let varying = match inst {
                        Inst::Const(_) => false,
                        Inst::Index(l) => *l == self.l,
                        Inst::Load(access) => {
                            self.accesses.push(Access {
                                expr: access,
                                store: None,
                            });
                            depends_on(access, self.l)
                        }
                        Inst::AccValue(a) => {
                            if self.outer_accs.contains(a) {
                                return None;
                            }
                            self.declared.contains(a)
                        }
                        Inst::AccIndex(a) => {
                            if self.outer_accs.contains(a) || self.declared.contains(a) {
                                return None;
                            }
                            false
                        }
                        Inst::Unary(op, x) => {
                            let v = self.is_varying(*x);
                            if v && *op == UnaryOp::Not {
                                return None;
                            }
                            v
                        }
                        Inst::Binary(op, x, y) => {
                            let v = self.is_varying(*x) || self.is_varying(*y);
                            if v && matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor) {
                                // Two masks of one float type combine lane by lane.
                                let (mx, my) = (self.mask(*x), self.mask(*y));
                                if mx.is_none() || mx != my {
                                    return None;
                                }
                                *self.masks.get_mut(result.index())? = mx;
                            }
                            v
                        }
                        Inst::Compare(_, x, y) => {
                            let v = self.is_varying(*x) || self.is_varying(*y);
                            if v {
                                let operand = *self.k.values.get(*x)?;
                                self.require_float(operand)?;
                                *self.masks.get_mut(result.index())? = Some(operand);
                            }
                            v
                        }
                        Inst::Select {
                            cond,
                            if_true,
                            if_false,
                        } => {
                            if self.is_varying(*cond) && self.mask(*cond) != Some(ty) {
                                return None;
                            }
                            self.is_varying(*cond)
                                || self.is_varying(*if_true)
                                || self.is_varying(*if_false)
                        }
                        Inst::Convert(x) => {
                            let v = self.is_varying(*x);
                            let from = *self.k.values.get(*x)?;
                            if v && !from.is_float() && self.mask(*x) != Some(ty) {
                                return None;
                            }
                            v
                        }
                    };
                    if varying && ty == ScalarType::Bool {
                        if self.masks.get(result.index())?.is_none() {
                            return None;
                        }
                    } else if varying {
                        self.require_float(ty)?;
                    }
                    *self.varying.get_mut(result.index())? = varying;
                }
                Stmt::Loop { body, .. } => self.walk(body)?,
                Stmt::Store { target, value } => {
                    let varying = self.is_varying(*value);
                    if self.mask(*value).is_some() {
                        // A mask is not a bool buffer's byte.
                        return None;
                    }
                    self.accesses.push(Access {
                        expr: target,
                        store: Some(varying),
                    });
                }
                Stmt::DeclareAcc(_) | Stmt::Reduce { .. } => {}
                // A branch cannot run lane by lane (the verifier refuses it here anyway).
                Stmt::If { .. } => return None,
            }
        }
        Some(())
    }
}

/// Whether `body` reduces into `a` anywhere, nested loops included.
fn reduces_into(body: &[Stmt], a: AccId) -> bool {
    body.iter().any(|s| match s {
        Stmt::Reduce { acc, .. } => *acc == a,
        Stmt::Loop { body, .. } | Stmt::If { body, .. } => reduces_into(body, a),
        _ => false,
    })
}

/// The accumulators whose vector partials the vector loop with plan `plan` and body `body`
/// keeps in f32: those marked `partials f32` that every reduction in the body feeds an f64
/// widening of an f32 value (`widened_from`, from [`widenings`]), if the loop stores nothing
/// (it may run twice).
pub(crate) fn f32_partials(
    k: &Kernel,
    plan: &WidePlan,
    body: &[Stmt],
    widened_from: &[Option<ValueId>],
) -> Vec<AccId> {
    let reduces_widened = |a: AccId| {
        body.iter().all(|s| match s {
            Stmt::Reduce { acc, value, .. } if *acc == a => widened_from[value.index()].is_some(),
            Stmt::Loop { body, .. } => !reduces_into(body, a),
            _ => true,
        })
    };
    if stores(body) {
        return Vec::new();
    }
    plan.outer_accs
        .iter()
        .copied()
        .filter(|a| k.accs[*a].narrow_partials && reduces_widened(*a))
        .collect()
}

/// Per value of `kernel`: the f32 value it is `convert` of, if it is an f64 widening.
pub(crate) fn widenings(kernel: &Kernel) -> Vec<Option<ValueId>> {
    fn walk(k: &Kernel, body: &[Stmt], out: &mut [Option<ValueId>]) {
        for s in body {
            match s {
                Stmt::Let {
                    result,
                    inst: Inst::Convert(x),
                } if k.values[*x] == ScalarType::F32 && k.values[*result] == ScalarType::F64 => {
                    out[result.index()] = Some(*x);
                }
                Stmt::Loop { body, .. } | Stmt::If { body, .. } => walk(k, body, out),
                _ => {}
            }
        }
    }
    let mut out = vec![None; kernel.values.len()];
    walk(kernel, &kernel.body, &mut out);
    out
}

/// Iterations of a vector loop of `lanes × parts` f32 partials that code generation sums
/// into them before folding them into the f64 accumulator: the largest power of two whose
/// chain (`⌈b/A⌉ + parts + lanes` additions, [`crate::narrow_sums`]) stays within
/// [`MAX_F32_SUM_CHAIN`] (8192 for 4 × 4 partials). The one rule the loop strategy reads to
/// block a longer loop, and `narrow_sums` to bound the chain.
pub fn f32_block(lanes: u32, parts: u32) -> u64 {
    let (lanes, parts) = (u64::from(lanes), u64::from(parts));
    let most = (lanes * parts).max(1) * MAX_F32_SUM_CHAIN.saturating_sub(parts + lanes).max(1);
    1 << most.ilog2()
}

/// Whether a vector loop of `extent` iterations and `lanes × parts` f32 partials is longer
/// than one [`f32_block`]: its partials are then folded block by block, which a native
/// routine summing a whole loop into partials of its own does not do.
pub fn blocked(extent: u64, lanes: u32, parts: u32) -> bool {
    extent > f32_block(lanes, parts)
}

#[cfg(test)]
mod tests {
    use super::plan;
    use weft_ir::loop_ir::{parse_kernel, Kernel, LoopId, Stmt};

    fn outer_loop(k: &Kernel) -> (LoopId, &[Stmt]) {
        match &k.body[0] {
            Stmt::Loop { loop_id, body } => (*loop_id, body),
            other => panic!("expected a loop, got {other:?}"),
        }
    }

    /// The fused `dot(dot(x, pad(y)), pad(y))` kernel: row scratch written and read back
    /// inside the result loop, at an index that does not move with it.
    const SHARED_SCRATCH: &str = "kernel @k {
  buffer %x: f32[5] read
  buffer %t: f32[5] write
  buffer %rows: f32[6] readwrite
  loop %i0 in 0..5 vectorize {
    %v0: f32 = load %x[%i0]
    loop %i1 in 0..6 {
      store %rows[%i1], %v0
    }
    acc %a: sum f32
    loop %i2 in 0..6 {
      %v1: f32 = load %rows[%i2]
      reduce %a, %v1
    }
    %v2: f32 = acc.value %a
    store %t[%i0], %v2
  }
}";

    #[test]
    fn lanes_never_share_stored_memory() {
        let k = parse_kernel("shared", SHARED_SCRATCH).unwrap();
        let (l, body) = outer_loop(&k);
        assert_eq!(plan(&k, l, body), None);
    }

    #[test]
    fn a_buffer_read_back_at_its_own_index_still_vectorises() {
        let text = "kernel @k {
  buffer %x: f32[8] read
  buffer %s: f32[8] readwrite
  loop %i0 in 0..8 vectorize {
    %v0: f32 = load %x[%i0]
    store %s[%i0], %v0
    %v1: f32 = load %s[%i0]
    %v2: f32 = add %v1, %v0
    store %s[%i0], %v2
  }
}";
        let k = parse_kernel("own", text).unwrap();
        let (l, body) = outer_loop(&k);
        assert!(plan(&k, l, body).is_some());
    }

    #[test]
    fn a_uniform_value_may_be_stored_by_every_lane() {
        let text = "kernel @k {
  buffer %x: f32[8] read
  buffer %y: f32[1] read
  buffer %s: f32[1] write
  buffer %t: f32[8] write
  loop %i0 in 0..8 vectorize {
    %v0: f32 = load %y[0]
    store %s[0], %v0
    %v1: f32 = load %x[%i0]
    store %t[%i0], %v1
  }
}";
        let k = parse_kernel("uniform", text).unwrap();
        let (l, body) = outer_loop(&k);
        assert!(plan(&k, l, body).is_some());
    }
}
