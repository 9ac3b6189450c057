//! Peeling a vector loop at its masks' bounds (index-set splitting), so the interior of a
//! padded copy runs without masks or per-lane index arithmetic.
//!
//! Lowering makes a pad a masked load (`mask(1 <= %i2 < 113)`) and a pad with another value,
//! or a padded mask, a `select` on comparisons of the loop index: in a loop along the padded
//! axis both vary lane by lane, so the loop gathers its lanes one by one, or (integers
//! varying with the loop) is not vectorised at all — ResNet-50's padded copies before its
//! 3 × 3 convolutions and its max pool ran as scalar code. This pass cuts such a loop where a
//! mask or comparison along it changes (a few cuts: the padding before, the inside, the
//! padding after; for a mask also over outer loops — a phase of a strided image, `1 <= r +
//! 2·q < 57` — where it changes for the least and for the greatest value of their terms)
//! into consecutive loops, each with the index shifted to its start; inside each, a mask that
//! always holds (whatever the outer loops) is dropped, a load whose mask never holds is its
//! zero, a comparison of the index that never changes is a constant (an enclosing loop's index
//! in it counts as any value of its extent: `Affine`), the `select`s and `and`s
//! on constants fold, and lets the same at every index move before the loop. The inside is
//! then a plain vector loop of contiguous loads.
//!
//! Assumes a kernel as lowering builds it. Guarantees: applied only to a loop annotated
//! `vectorize`, not `parallel`, of at least [`MIN_EXTENT`] iterations, whose body is lets and
//! stores only (no accumulator: its iterations are independent), with at most [`MAX_CUTS`]
//! cuts; every iteration runs once, in the same order, with the same index values, and each
//! folded value is the one the original computes at every index of its piece, so results are
//! unchanged.

use std::collections::{BTreeSet, HashMap, HashSet};

use weft_ir::loop_ir::{
    AffineExpr, BinaryOp, BufferAccessExpr, CompareOp, Inst, Kernel, LoopAnnotations, LoopDecl,
    LoopId, ScalarType, ScalarValue, Stmt, ValueId,
};

/// Loops shorter than this are left whole: their borders are most of them.
pub const MIN_EXTENT: u64 = 8;

/// Most cuts in one loop (a pad before and after on two axes, each for the least and the
/// greatest value of the other loops' terms): more means the conditions are not a padding's.
pub const MAX_CUTS: usize = 8;

/// The pass: every loop this module applies to cut into its pieces (module docs).
pub fn run(k: &mut Kernel, _cx: &super::PassContext<'_>) -> super::PassOutcome {
    let mut notes = Vec::new();
    let body = std::mem::take(&mut k.body);
    let consts = Consts::of(k, &body);
    k.body = peel(k, &consts, body, &mut notes);
    super::PassOutcome::notes(notes)
}

/// The `i64` values of a kernel that are constants, or sums, differences and multiples of loop
/// indices over their whole extents (as ranges), and its `bool` constants, wherever defined
/// (hoisting may put them outside the loop that compares with them; a phase of a strided image
/// compares `2·q + r` with `r` an enclosing loop's index).
#[derive(Default)]
struct Consts {
    ints: HashMap<ValueId, Affine>,
    bools: HashMap<ValueId, bool>,
}

impl Consts {
    fn of(k: &Kernel, body: &[Stmt]) -> Consts {
        let mut c = Consts::default();
        c.collect(k, body);
        c
    }

    fn collect(&mut self, k: &Kernel, body: &[Stmt]) {
        for s in body {
            match s {
                Stmt::Let {
                    result,
                    inst: Inst::Const(ScalarValue::I64(v)),
                } => {
                    self.ints.insert(*result, Affine::exact(0, *v));
                }
                Stmt::Let {
                    result,
                    inst: Inst::Index(l),
                } => {
                    if let Some(range) = index_range(k, *l) {
                        self.ints.insert(*result, range);
                    }
                }
                Stmt::Let {
                    result,
                    inst: inst @ Inst::Binary(..),
                } => {
                    if let Some(v) = affine_of(inst, &self.ints) {
                        self.ints.insert(*result, v);
                    }
                }
                Stmt::Let {
                    result,
                    inst: Inst::Const(ScalarValue::Bool(v)),
                } => {
                    self.bools.insert(*result, *v);
                }
                Stmt::Loop { body, .. } | Stmt::If { body, .. } => self.collect(k, body),
                _ => {}
            }
        }
    }
}

/// `body` with every loop this pass applies to cut into its pieces; a note per loop cut.
fn peel(k: &mut Kernel, consts: &Consts, body: Vec<Stmt>, notes: &mut Vec<String>) -> Vec<Stmt> {
    let mut out = Vec::with_capacity(body.len());
    for s in body {
        match s {
            Stmt::Loop { loop_id, body } => {
                let body = peel(k, consts, body, notes);
                match cuts(k, consts, loop_id, &body) {
                    Some(cuts) => {
                        notes.push(format!(
                            "peeled %{loop_id} at {cuts:?}: masks and index comparisons along it \
                             constant in each piece"
                        ));
                        out.extend(split(k, consts, loop_id, &body, &cuts));
                    }
                    None => out.push(Stmt::Loop { loop_id, body }),
                }
            }
            Stmt::If { cond, body } => out.push(Stmt::If {
                cond,
                body: peel(k, consts, body, notes),
            }),
            s => out.push(s),
        }
    }
    out
}

/// An `i64` value `a·i + b` of loop index `i`, `b` somewhere in `lo..=hi`: the terms of
/// enclosing loops' indices, each anywhere in its extent (`lo == hi` without them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Affine {
    a: i64,
    lo: i64,
    hi: i64,
}

impl Affine {
    /// `a·i + b`.
    fn exact(a: i64, b: i64) -> Affine {
        Affine { a, lo: b, hi: b }
    }

    /// A constant's value, if this is one.
    fn constant(self) -> Option<i64> {
        (self.a == 0 && self.lo == self.hi).then_some(self.lo)
    }

    fn combine(op: BinaryOp, x: Affine, y: Affine) -> Option<Affine> {
        match op {
            BinaryOp::Add => Some(Affine {
                a: x.a.checked_add(y.a)?,
                lo: x.lo.checked_add(y.lo)?,
                hi: x.hi.checked_add(y.hi)?,
            }),
            BinaryOp::Sub => Some(Affine {
                a: x.a.checked_sub(y.a)?,
                lo: x.lo.checked_sub(y.hi)?,
                hi: x.hi.checked_sub(y.lo)?,
            }),
            BinaryOp::Mul => {
                let (c, v) = match (x.constant(), y.constant()) {
                    (Some(c), _) => (c, y),
                    (_, Some(c)) => (c, x),
                    _ => return None,
                };
                let (p, q) = (v.lo.checked_mul(c)?, v.hi.checked_mul(c)?);
                Some(Affine {
                    a: v.a.checked_mul(c)?,
                    lo: p.min(q),
                    hi: p.max(q),
                })
            }
            _ => None,
        }
    }

    /// Where `a·i + b op 0` may change as `i` grows (`a ≠ 0`), for `b` at either end of its
    /// range (between them it changes between those points).
    fn changes(self, op: CompareOp) -> Vec<i128> {
        [self.lo, self.hi]
            .into_iter()
            .flat_map(|b| Affine::exact(self.a, b).changes_exactly(op))
            .collect()
    }

    /// [`Affine::changes`] of an exact `a·i + b`: `< 0` and `≥ 0` where the negative indices
    /// end (or begin), `≤ 0` and `> 0` where the non-positive ones do, `=` and `≠` at both.
    fn changes_exactly(self, op: CompareOp) -> Vec<i128> {
        let (a, b) = (i128::from(self.a), i128::from(self.lo));
        let (ceil, floor_next) = (div_ceil(-b, a), div_floor(-b, a) + 1);
        let (negative, non_positive) = if a > 0 {
            (ceil, floor_next)
        } else {
            (floor_next, ceil)
        };
        match op {
            CompareOp::Lt | CompareOp::Ge => vec![negative],
            CompareOp::Le | CompareOp::Gt => vec![non_positive],
            CompareOp::Eq | CompareOp::Ne => vec![negative, non_positive],
        }
    }

    /// The first index at which `lo <= a·i + b < hi` holds and the first past them (`a ≠ 0`,
    /// an exact `b`).
    fn holds_between(self, lo: i64, hi: i64) -> [i128; 2] {
        let (a, b, lo, hi) = (
            i128::from(self.a),
            i128::from(self.lo),
            i128::from(lo),
            i128::from(hi),
        );
        if a > 0 {
            [div_ceil(lo - b, a), div_ceil(hi - b, a)]
        } else {
            [div_floor(b - hi, -a) + 1, div_floor(b - lo, -a) + 1]
        }
    }

    /// The least and greatest value over `i` in `0..n` (`n ≥ 1`) and `b` in its range.
    fn range(self, n: u64) -> (i128, i128) {
        let last = i128::from(self.a) * i128::from(n - 1);
        (
            last.min(0) + i128::from(self.lo),
            last.max(0) + i128::from(self.hi),
        )
    }
}

/// Loop `l`'s index anywhere in its extent, as a value of another loop's index.
fn index_range(k: &Kernel, l: LoopId) -> Option<Affine> {
    let last = k.loops.get(l)?.extent.checked_sub(1)?;
    Some(Affine {
        a: 0,
        lo: 0,
        hi: i64::try_from(last).ok()?,
    })
}

/// The affine `i64` values of `body` in loop `l`'s index, by value.
fn affine_values(
    k: &Kernel,
    l: LoopId,
    consts: &Consts,
    body: &[Stmt],
) -> HashMap<ValueId, Affine> {
    let mut known = consts.ints.clone();
    for s in body {
        let Stmt::Let { result, inst } = s else {
            continue;
        };
        let v = match inst {
            Inst::Index(i) if *i == l => Some(Affine::exact(1, 0)),
            Inst::Index(i) => index_range(k, *i),
            inst => affine_of(inst, &known),
        };
        // A value of the body varies with `l`: what the kernel-wide table says of it (its index
        // over the whole extent) gives way to this, or to nothing.
        match v {
            Some(v) => known.insert(*result, v),
            None => known.remove(result),
        };
    }
    known
}

/// `inst`'s value as an affine value of the loop index, where it is an `i64` constant or
/// a sum, difference or product (by a constant) of values `known` holds.
fn affine_of(inst: &Inst, known: &HashMap<ValueId, Affine>) -> Option<Affine> {
    match inst {
        Inst::Const(ScalarValue::I64(c)) => Some(Affine::exact(0, *c)),
        Inst::Binary(op, x, y) => Affine::combine(*op, *known.get(x)?, *known.get(y)?),
        _ => None,
    }
}

/// Where loop `l` (with `body`) is cut, if this pass applies: every index inside its extent
/// at which a mask on `l` alone or a comparison of affine index values may change.
fn cuts(k: &Kernel, consts: &Consts, l: LoopId, body: &[Stmt]) -> Option<Vec<u64>> {
    let decl = k.loops.get(l)?;
    let flat = body
        .iter()
        .all(|s| matches!(s, Stmt::Let { .. } | Stmt::Store { .. }));
    if !decl.annotations.vectorize || decl.annotations.parallel || decl.extent < MIN_EXTENT || !flat
    {
        return None;
    }
    let known = affine_values(k, l, consts, body);
    let mut at: BTreeSet<i128> = BTreeSet::new();
    for s in body {
        match s {
            Stmt::Let {
                inst: Inst::Load(acc),
                ..
            } => {
                for m in acc.mask.iter() {
                    let c = m.expr.coefficient(l);
                    let Some((olo, ohi)) = others_range(k, &m.expr, l).filter(|_| c != 0) else {
                        continue;
                    };
                    // Where it holds for the least and for the greatest value of the other
                    // loops' terms: between them it holds for some of them only.
                    for other in [olo, ohi] {
                        let e = Affine::exact(c, i64::try_from(other).ok()?);
                        at.extend(e.holds_between(m.lo, m.hi));
                    }
                }
            }
            Stmt::Let {
                inst: Inst::Compare(op, x, y),
                ..
            } => {
                if let (Some(x), Some(y)) = (known.get(x), known.get(y)) {
                    if let Some(d) = Affine::combine(BinaryOp::Sub, *x, *y).filter(|d| d.a != 0) {
                        at.extend(d.changes(*op));
                    }
                }
            }
            _ => {}
        }
    }
    let inside: Vec<u64> = at
        .into_iter()
        .filter(|t| *t > 0 && *t < i128::from(decl.extent))
        .map(|t| t as u64)
        .collect();
    (!inside.is_empty() && inside.len() <= MAX_CUTS).then_some(inside)
}

/// The least and greatest value of `expr` without loop `l`'s term, every other loop over its
/// whole extent; `None` if a loop is unknown or empty.
fn others_range(k: &Kernel, expr: &AffineExpr, l: LoopId) -> Option<(i128, i128)> {
    let (mut lo, mut hi) = (i128::from(expr.offset()), i128::from(expr.offset()));
    for &(m, c) in expr.terms().iter().filter(|(m, _)| *m != l) {
        let last = k.loops.get(m)?.extent.checked_sub(1)?;
        let (a, b) = (0, i128::from(c) * i128::from(last));
        lo += a.min(b);
        hi += a.max(b);
    }
    Some((lo, hi))
}

/// Loop `l` over `body` as consecutive loops from each cut to the next.
fn split(k: &mut Kernel, consts: &Consts, l: LoopId, body: &[Stmt], cuts: &[u64]) -> Vec<Stmt> {
    let decl = k.loops[l].clone();
    let mut bounds = vec![0];
    bounds.extend_from_slice(cuts);
    bounds.push(decl.extent);
    bounds
        .windows(2)
        .flat_map(|w| {
            let (start, n) = (w[0], w[1] - w[0]);
            // A border shorter than the pass's least loop runs as scalar code.
            let annotations = if n < MIN_EXTENT {
                LoopAnnotations {
                    vectorize: false,
                    unroll: 1,
                    ..decl.annotations
                }
            } else {
                decl.annotations
            };
            let piece = k.loops.push(LoopDecl {
                extent: n,
                annotations,
            });
            let body = Piece::new(k, consts, l, piece, start, n).rewrite(body);
            let (mut before, body) = hoist(piece, body);
            before.push(Stmt::Loop {
                loop_id: piece,
                body,
            });
            before
        })
        .collect()
}

/// The lets of `body` (a loop `l`'s) that are the same at every index of `l` — a mask or
/// comparison of an outer loop's index the pieces left — moved before the loop, and the rest.
/// A load of a buffer the body stores to stays (an earlier iteration may write what it reads).
fn hoist(l: LoopId, body: Vec<Stmt>) -> (Vec<Stmt>, Vec<Stmt>) {
    let stored: HashSet<_> = body
        .iter()
        .filter_map(|s| match s {
            Stmt::Store { target, .. } => Some(target.buffer),
            _ => None,
        })
        .collect();
    let mut varying: HashSet<ValueId> = HashSet::new();
    let (mut before, mut inside) = (Vec::new(), Vec::new());
    for s in body {
        let invariant = match &s {
            Stmt::Let { inst, .. } => match inst {
                Inst::Index(i) => *i != l,
                Inst::Load(acc) => {
                    acc.index.coefficient(l) == 0
                        && acc.mask.iter().all(|m| m.expr.coefficient(l) == 0)
                        && !stored.contains(&acc.buffer)
                }
                inst => inst.operands().iter().all(|v| !varying.contains(v)),
            },
            _ => false,
        };
        match s {
            Stmt::Let { result, .. } if !invariant => {
                varying.insert(result);
                inside.push(s);
            }
            Stmt::Let { .. } => before.push(s),
            s => inside.push(s),
        }
    }
    (before, inside)
}

/// One piece of a cut loop: `l`'s index is `start + piece`'s, `piece` running `0..n`.
struct Piece<'k> {
    k: &'k mut Kernel,
    l: LoopId,
    piece: LoopId,
    start: i64,
    n: u64,
    /// Old value → the value the piece computes instead.
    values: HashMap<ValueId, ValueId>,
    /// Affine `i64` values of the piece, in `piece`'s index.
    affine: HashMap<ValueId, Affine>,
    /// Booleans constant over the piece.
    constant: HashMap<ValueId, bool>,
}

impl<'k> Piece<'k> {
    fn new(
        k: &'k mut Kernel,
        consts: &Consts,
        l: LoopId,
        piece: LoopId,
        start: u64,
        n: u64,
    ) -> Piece<'k> {
        Piece {
            k,
            l,
            piece,
            start: start as i64,
            n,
            values: HashMap::new(),
            affine: consts.ints.clone(),
            constant: consts.bools.clone(),
        }
    }

    fn value(&self, v: ValueId) -> ValueId {
        self.values.get(&v).copied().unwrap_or(v)
    }

    /// `body` for the piece, its constants folded and its dead lets dropped.
    fn rewrite(mut self, body: &[Stmt]) -> Vec<Stmt> {
        let mut out = Vec::with_capacity(body.len());
        for s in body {
            match s {
                Stmt::Let { result, inst } => self.rewrite_let(*result, inst, &mut out),
                Stmt::Store { target, value } => out.push(Stmt::Store {
                    target: self.access(target),
                    value: self.value(*value),
                }),
                other => out.push(other.clone()),
            }
        }
        drop_dead(out)
    }

    /// `acc` with `l`'s index replaced by `start + piece`'s, and its masks on the piece's
    /// index alone dropped where they always hold; `None` where one never holds.
    fn access_or_zero(&self, acc: &BufferAccessExpr) -> Option<BufferAccessExpr> {
        let shifted = self.access(acc);

        let mut mask = Vec::with_capacity(shifted.mask.len());
        for m in shifted.mask {
            let c = m.expr.coefficient(self.piece);
            let others = others_range(self.k, &m.expr, self.piece);
            if let Some((olo, ohi)) = others.filter(|_| c != 0) {
                let (lo, hi) = Affine::exact(c, 0).range(self.n);
                let (lo, hi) = (lo + olo, hi + ohi);
                if lo >= i128::from(m.lo) && hi < i128::from(m.hi) {
                    continue;
                }
                if hi < i128::from(m.lo) || lo >= i128::from(m.hi) {
                    return None;
                }
            }
            mask.push(m);
        }
        Some(BufferAccessExpr { mask, ..shifted })
    }

    fn access(&self, acc: &BufferAccessExpr) -> BufferAccessExpr {
        let by = AffineExpr::new([(self.piece, 1)], self.start);
        acc.clone()
            .map_exprs(&|e| e.substitute(self.l, &by))
            .unwrap_or_else(|| acc.clone())
    }

    fn rewrite_let(&mut self, result: ValueId, inst: &Inst, out: &mut Vec<Stmt>) {
        let ty = self.k.values[result];
        let mut inst = inst.clone();
        inst.operands_mut(&|v| *v = self.value(*v));
        let inst = match inst {
            Inst::Index(i) if i == self.l => {
                let index = self.emit(out, ScalarType::I64, Inst::Index(self.piece));
                let start = self.emit(
                    out,
                    ScalarType::I64,
                    Inst::Const(ScalarValue::I64(self.start)),
                );
                self.affine.insert(index, Affine::exact(1, 0));
                self.affine.insert(start, Affine::exact(0, self.start));
                Inst::Binary(BinaryOp::Add, index, start)
            }
            Inst::Load(acc) => match self.access_or_zero(&acc) {
                Some(acc) => Inst::Load(acc),
                None => Inst::Const(ty.zero()),
            },
            Inst::Select {
                cond,
                if_true,
                if_false,
            } if self.constant.contains_key(&cond) => {
                let chosen = if self.constant[&cond] {
                    if_true
                } else {
                    if_false
                };
                self.values.insert(result, chosen);
                return;
            }
            Inst::Binary(op @ (BinaryOp::And | BinaryOp::Or), x, y)
                if self.constant.contains_key(&x) || self.constant.contains_key(&y) =>
            {
                let (c, other) = match self.constant.get(&x) {
                    Some(c) => (*c, y),
                    None => (self.constant[&y], x),
                };
                match (op, c) {
                    (BinaryOp::And, true) | (BinaryOp::Or, false) => {
                        self.values.insert(result, other);
                        return;
                    }
                    _ => Inst::Const(ScalarValue::Bool(c)),
                }
            }
            Inst::Compare(op, x, y) => match self.compare(op, x, y) {
                Some(c) => Inst::Const(ScalarValue::Bool(c)),
                None => Inst::Compare(op, x, y),
            },
            other => other,
        };
        let v = self.emit(out, ty, inst.clone());
        self.values.insert(result, v);
        if let Inst::Const(ScalarValue::Bool(c)) = inst {
            self.constant.insert(v, c);
        } else if let Inst::Index(m) = inst {
            // Another loop's index (this loop's became the piece's plus its start, above).
            if let Some(a) = index_range(self.k, m) {
                self.affine.insert(v, a);
            }
        } else if let Some(a) = affine_of(&inst, &self.affine) {
            self.affine.insert(v, a);
        }
    }

    /// The comparison `x op y` if it is the same at every index of the piece.
    fn compare(&self, op: CompareOp, x: ValueId, y: ValueId) -> Option<bool> {
        let d = Affine::combine(BinaryOp::Sub, *self.affine.get(&x)?, *self.affine.get(&y)?)?;
        let (lo, hi) = d.range(self.n);
        let all = |f: &dyn Fn(i128) -> bool| f(lo) && f(hi);
        let sure = |f: &dyn Fn(i128) -> bool| {
            if all(f) {
                Some(true)
            } else if !f(lo) && !f(hi) {
                Some(false)
            } else {
                None
            }
        };
        // Over an interval, `d < 0`, `d ≤ 0`, … hold everywhere iff at both ends, and
        // nowhere iff at neither — except `=`/`≠`, true at one point of a wider interval.
        match op {
            CompareOp::Lt => sure(&|d| d < 0),
            CompareOp::Le => sure(&|d| d <= 0),
            CompareOp::Gt => sure(&|d| d > 0),
            CompareOp::Ge => sure(&|d| d >= 0),
            CompareOp::Eq | CompareOp::Ne => {
                let eq = if lo == 0 && hi == 0 {
                    true
                } else if lo > 0 || hi < 0 {
                    false
                } else {
                    return None;
                };
                Some(eq == (op == CompareOp::Eq))
            }
        }
    }

    fn emit(&mut self, out: &mut Vec<Stmt>, ty: ScalarType, inst: Inst) -> ValueId {
        let v = self.k.values.push(ty);
        out.push(Stmt::Let { result: v, inst });
        v
    }
}

/// `body` without the lets nothing reads (values a loop body defines are not visible after
/// it, so only the body's own statements read them).
fn drop_dead(mut body: Vec<Stmt>) -> Vec<Stmt> {
    loop {
        let mut used: HashSet<ValueId> = HashSet::new();
        for s in &body {
            match s {
                Stmt::Let { inst, .. } => used.extend(inst.operands()),
                Stmt::Store { value, .. } => {
                    used.insert(*value);
                }
                _ => {}
            }
        }
        let before = body.len();
        body.retain(|s| !matches!(s, Stmt::Let { result, .. } if !used.contains(result)));
        if body.len() == before {
            return body;
        }
    }
}

fn div_ceil(a: i128, b: i128) -> i128 {
    -div_floor(-a, b)
}

fn div_floor(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}
