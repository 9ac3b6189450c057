//! Column chains: two kernels that run one after the other, whose parallel loops cut the same
//! columns into the same blocks, become one kernel whose parallel iteration `p` runs the first
//! kernel's iteration `p`, then the second's — so a block's data, read or written by the
//! first, is still in cache when the second reads it.
//!
//! A reduction over a strided axis is lowered in memory order in a kernel of its own
//! (`crate::reduce_in_memory`): iteration `p` of its parallel loop reduces a block of `W`
//! contiguous result columns over every row. A second such reduction over the same operand —
//! a variance after a mean, a sum of exponentials after a maximum — has the same loop; chained,
//! each block of the operand is read from memory once and from cache after.
//!
//! Assumes two verified kernels, `a` scheduled before `b`, with the storages each buffer
//! parameter is bound to (`crate::executable`: the same storage, the same memory). Guarantees:
//! applied only when each kernel's body is one parallel loop, both of the same extent `N`, and
//! every storage one kernel writes and the other touches is read and written only *banded*:
//! every access to it, in either kernel, is `W·p + Σ rows + Σ columns + c` with `p` the
//! parallel index, the same `W > 0` throughout, every row term's coefficient a multiple of
//! `M = W·N` and the column terms plus `c mod M` within `[0, W)`. Element `e` of such a
//! storage is then touched only by iteration `(e mod M) div W` of either kernel, so running
//! `a(p); b(p)` for each `p`, the iterations in parallel, reads and writes every element in
//! the order `a` then `b` did: results are unchanged. A storage bound to both kernels has one
//! parameter in the result (its access the union), so the result's parameters alias nothing
//! they did not before. The result is verified again; otherwise the reason, for `weft explain`.
//!
//! An intermediate of a chain that no other step binds — softmax's exponentials, written by
//! one part and read by two later ones — need not exist whole: [`contract`] cuts the parallel
//! loop into chunks of consecutive blocks and gives each chunk one block of scratch, reused
//! from block to block, so the block never leaves the cache (a whole tensor written and read
//! back is two streams through memory).

pub use crate::loop_passes::blocks::{chunk_count, CHUNK_COUNTS, PREFERRED_CHUNKS};
use std::collections::HashMap;
use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{
    verify, AccId, AffineExpr, BufferAccess, BufferAccessExpr, BufferId, Inst, Kernel, LoopId,
    Stmt, ValueId,
};

/// Two kernels as one ([`chain`]).
#[derive(Clone, Debug)]
pub struct Chained {
    /// The chained kernel: `a`'s parameters, then those of `b` whose storage `a` does not
    /// bind.
    pub kernel: Kernel,
    /// The storage of each parameter.
    pub args: Vec<usize>,
    /// For each parameter after `a`'s, the index of `b`'s parameter it is.
    pub from_b: Vec<usize>,
}

/// `a` then `b` as one kernel (module docs), or why not. `a_args[i]` is the storage of `a`'s
/// `i`-th buffer parameter, `b_args` likewise.
pub fn chain(
    a: &Kernel,
    a_args: &[usize],
    b: &Kernel,
    b_args: &[usize],
) -> Result<Chained, String> {
    let names = format!("kernels @{} and @{}", a.name, b.name);
    let (Some((pa, n)), Some((pb, _))) = (parallel_loop(a), parallel_loop(b)) else {
        return Err(format!("{names} are not each one parallel loop"));
    };
    if b.loops[pb].extent != n {
        return Err(format!("{names}' parallel loops differ in extent"));
    }
    if has_duplicates(a_args) || has_duplicates(b_args) {
        return Err(format!("{names} bind one storage to two parameters"));
    }
    let mut out = a.clone();
    out.name = format!("{}_{}", a.name, b.name);
    let mut args = a_args.to_vec();
    let mut from_b = Vec::new();
    let mut ids = Ids::default();
    for (j, decl) in b.buffers.iter() {
        let storage = b_args[j.index()];
        let into = match args.iter().position(|s| *s == storage) {
            Some(i) => {
                let id = BufferId::new(i);
                let mine = &mut out.buffers[id];
                if mine.ty != decl.ty || mine.len != decl.len {
                    return Err(format!(
                        "{names} see one storage as %{} and %{} of other types or lengths",
                        mine.name, decl.name
                    ));
                }
                mine.access = union(mine.access, decl.access);
                id
            }
            None => {
                let mut name = decl.name.clone();
                while out.buffers.values().any(|d| d.name == name) {
                    name.push('_');
                }
                args.push(storage);
                from_b.push(j.index());
                out.add_buffer(name, decl.ty, decl.len, decl.access)
            }
        };
        ids.buffers.insert(j, into);
    }
    for (l, decl) in b.loops.iter() {
        let into = if l == pb {
            pa
        } else {
            out.add_loop(decl.extent, decl.annotations)
        };
        ids.loops.insert(l, into);
    }
    for (v, ty) in b.values.iter() {
        ids.values.insert(v, out.values.push(*ty));
    }
    for (x, decl) in b.accs.iter() {
        ids.accs.insert(x, out.accs.push(decl.clone()));
    }
    let Some(Stmt::Loop { body: b_body, .. }) = b.body.first() else {
        return Err(format!("{names} are not each one parallel loop"));
    };
    let moved = b_body
        .iter()
        .map(|s| ids.stmt(s))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| format!("{names}: an id of @{} has no image", b.name))?;
    if let Some(Stmt::Loop { body, .. }) = out.body.first_mut() {
        body.extend(moved);
    }
    check_bands(&out, pa, n, a, a_args, b, b_args, &args)
        .map_err(|why| format!("{names}: {why}"))?;
    verify(&out).map_err(|e| format!("{names} chained do not verify: {e}"))?;
    Ok(Chained {
        kernel: out,
        args,
        from_b,
    })
}

/// A chained kernel whose intermediates live in a block-sized scratch ([`contract`]).
#[derive(Clone, Debug)]
pub struct Contracted {
    /// The kernel: its parallel loop cut into chunks of consecutive blocks, each contracted
    /// buffer parameter replaced, in place, by a scratch of one block's rows per chunk.
    pub kernel: Kernel,
    /// The contracted parameters.
    pub contracted: Vec<BufferId>,
    /// How many chunks of consecutive blocks the parallel loop runs ([`chunk_count`]).
    pub chunks: u64,
}

/// `k` (a chained kernel, its body one parallel loop `p` of `n` blocks) with each buffer of
/// `private` — an intermediate no other step reads or writes, every access to it banded as
/// the module docs say — held for one block at a time: the parallel loop becomes `q` in
/// `0..chunks` (parallel) around `b` in `0..n / chunks`, `p = (n / chunks)·q + b`, and element
/// `row·M + W·p + c` of the buffer becomes `q·(rows·W) + row·W + c` of a scratch of `chunks`
/// blocks. Iterations of one `q` run one after the other on one thread, each writing its
/// block before reading it (the buffer is an intermediate: the original kernel reads only
/// what an earlier part of the same iteration wrote), so the results are the same; the block
/// stays in cache instead of streaming the whole tensor out and back. `chunks` is
/// [`chunk_count`]`(n, preferred)`. `None` when no buffer of `private` qualifies or no chunk
/// count does.
pub fn contract(k: &Kernel, private: &[BufferId], preferred: u64) -> Option<Contracted> {
    let (p, n) = parallel_loop(k)?;
    let chunks = chunk_count(n, preferred)?;
    if reads_index(&k.body, p) {
        return None;
    }
    let mut accesses = Vec::new();
    collect_accesses(&k.body, &mut accesses);
    let mut plans = Vec::new();
    for &buffer in private {
        let of_it: Vec<&BufferAccessExpr> = accesses
            .iter()
            .copied()
            .filter(|a| a.buffer == buffer)
            .collect();
        let w = of_it.first()?.index.coefficient(p);
        let row = i64::try_from(n).ok()?.checked_mul(w)?;
        let len = i64::try_from(k.buffers[buffer].len).ok()?;
        // Only what the kernel writes: a buffer it only reads holds the caller's data.
        let written = k.buffers[buffer].access != BufferAccess::Read;
        let fits = written && w > 0 && len % row == 0;
        if !fits
            || !of_it
                .iter()
                .all(|a| a.index.coefficient(p) == w && banded(k, &a.index, p, w, n))
        {
            continue;
        }
        plans.push((buffer, w, row, len / row));
    }
    if plans.is_empty() {
        return None;
    }
    let mut out = k.clone();
    let q = out.add_loop(
        chunks,
        weft_ir::loop_ir::LoopAnnotations {
            parallel: true,
            ..Default::default()
        },
    );
    let per = n / chunks;
    out.loops[p].extent = per;
    out.loops[p].annotations.parallel = false;
    for &(buffer, w, _, rows) in &plans {
        let decl = &mut out.buffers[buffer];
        decl.len = u64::try_from(
            w.checked_mul(rows)?
                .checked_mul(i64::try_from(chunks).ok()?)?,
        )
        .ok()?;
    }
    let Stmt::Loop { body, .. } = out.body.first()?.clone() else {
        return None;
    };
    let body = body
        .into_iter()
        .map(|s| contract_stmt(s, &plans, p, q))
        .collect::<Option<Vec<_>>>()?;
    let by = AffineExpr::new([(q, i64::try_from(per).ok()?), (p, 1)], 0);
    let body = body
        .into_iter()
        .map(|s| substitute_all(s, p, &by))
        .collect::<Option<Vec<_>>>()?;
    out.body = weft_ir::loop_ir::nest(&[q, p], body);
    verify(&out).ok()?;
    Some(Contracted {
        kernel: out,
        contracted: plans.iter().map(|x| x.0).collect(),
        chunks,
    })
}

/// `s` with every access to a buffer of `plans` (buffer, band width `w`, row length `M`,
/// rows) moved to its block scratch indexed by chunk `q` (see [`contract`]).
fn contract_stmt(
    s: Stmt,
    plans: &[(BufferId, i64, i64, i64)],
    p: LoopId,
    q: LoopId,
) -> Option<Stmt> {
    map_accesses(s, &|a: BufferAccessExpr| {
        let Some(&(_, w, row, rows)) = plans.iter().find(|x| x.0 == a.buffer) else {
            return Some(a);
        };
        let mut terms = vec![(q, rows.checked_mul(w)?)];
        for &(l, c) in a.index.terms() {
            if l == p {
                continue;
            }
            terms.push((
                l,
                if c % row == 0 {
                    (c / row).checked_mul(w)?
                } else {
                    c
                },
            ));
        }
        let off = a.index.offset();
        let offset = off
            .div_euclid(row)
            .checked_mul(w)?
            .checked_add(off.rem_euclid(row))?;
        let index = AffineExpr::new(terms, offset);
        Some(BufferAccessExpr { index, ..a })
    })
}

/// `s` with loop `p`'s index replaced by `by` in every access, nested statements included.
fn substitute_all(s: Stmt, p: LoopId, by: &AffineExpr) -> Option<Stmt> {
    map_accesses(s, &|a: BufferAccessExpr| {
        a.map_exprs(&|e| e.substitute(p, by))
    })
}

/// `s` with every load and store access, nested statements included, rewritten by `f`;
/// `None` if `f` refuses one.
fn map_accesses(s: Stmt, f: &dyn Fn(BufferAccessExpr) -> Option<BufferAccessExpr>) -> Option<Stmt> {
    let nested = |body: Vec<Stmt>| -> Option<Vec<Stmt>> {
        body.into_iter().map(|s| map_accesses(s, f)).collect()
    };
    Some(match s {
        Stmt::Let {
            result,
            inst: Inst::Load(a),
        } => Stmt::Let {
            result,
            inst: Inst::Load(f(a)?),
        },
        Stmt::Store { target, value } => Stmt::Store {
            target: f(target)?,
            value,
        },
        Stmt::Loop { loop_id, body } => Stmt::Loop {
            loop_id,
            body: nested(body)?,
        },
        Stmt::If { cond, body } => Stmt::If {
            cond,
            body: nested(body)?,
        },
        other => other,
    })
}

/// `k`, an elementwise nest of rows (parallel) around columns, strip-mined so that its parallel
/// loop is `n` blocks of columns (`crate::column_blocks::strip_columns`) — the form a kernel
/// chains in after a reduction over those blocks — or `None`, also where a block would be
/// narrower than the narrowest column block of a reduction in memory order
/// (`crate::loop_passes::blocks::BLOCK_WIDTHS`) over a buffer too large to stay in cache
/// (the cost model's `gather_min_bytes`): such a strip walks every row a few elements at a
/// time, a row's stride apart — the gathered pass fusion's cost model keeps apart.
pub fn strip_to_blocks(k: &Kernel, n: u64) -> Option<Kernel> {
    let (nest, _) = weft_ir::loop_ir::perfect_nest(&k.body);
    let [_, cols] = nest[..] else {
        return None;
    };
    let extent = k.loops[cols].extent;
    if n == 0 || !extent.is_multiple_of(n) {
        return None;
    }
    let largest = k
        .buffers
        .iter()
        .map(|(_, b)| b.len.saturating_mul(b.ty.size_bytes() as u64))
        .max()
        .unwrap_or(0);
    if extent / n < *crate::loop_passes::blocks::BLOCK_WIDTHS.start()
        && largest >= crate::loop_passes::thresholds::GATHER_MIN_BYTES
    {
        return None;
    }
    crate::column_blocks::strip_columns(k, extent / n).ok()
}

/// The extent of the kernel's parallel loop, when its body is that one loop.
pub fn parallel_extent(k: &Kernel) -> Option<u64> {
    parallel_loop(k).map(|(_, n)| n)
}

/// The kernel's parallel loop and its extent, when its body is that one loop and the loop
/// is only parallel: a loop also vectorised or unrolled runs its body in lanes or copies,
/// which another kernel's loops appended to it could not be.
fn parallel_loop(k: &Kernel) -> Option<(LoopId, u64)> {
    match k.body.as_slice() {
        [Stmt::Loop { loop_id, .. }] => {
            let a = k.loops[*loop_id].annotations;
            (a.parallel && !a.vectorize && a.unroll <= 1)
                .then(|| (*loop_id, k.loops[*loop_id].extent))
        }
        _ => None,
    }
}

fn has_duplicates(args: &[usize]) -> bool {
    args.iter().enumerate().any(|(i, s)| args[..i].contains(s))
}

fn union(x: BufferAccess, y: BufferAccess) -> BufferAccess {
    if x == y {
        x
    } else {
        BufferAccess::ReadWrite
    }
}

/// Checks that every storage one of `a`, `b` writes and the other touches is accessed banded
/// in the chained kernel `k` (parallel loop `p` of extent `n`, parameters bound to `args`).
#[allow(clippy::too_many_arguments)]
fn check_bands(
    k: &Kernel,
    p: LoopId,
    n: u64,
    a: &Kernel,
    a_args: &[usize],
    b: &Kernel,
    b_args: &[usize],
    args: &[usize],
) -> Result<(), String> {
    let writes = |k: &Kernel, args: &[usize], s: usize| {
        args.iter()
            .position(|x| *x == s)
            .is_some_and(|i| k.buffers[BufferId::new(i)].access != BufferAccess::Read)
    };
    let shared: Vec<usize> = a_args
        .iter()
        .copied()
        .filter(|s| b_args.contains(s) && (writes(a, a_args, *s) || writes(b, b_args, *s)))
        .collect();
    let mut accesses = Vec::new();
    collect_accesses(&k.body, &mut accesses);
    let mut width = None;
    for access in accesses {
        if !shared.contains(&args[access.buffer.index()]) {
            continue;
        }
        let name = &k.buffers[access.buffer].name;
        let w = access.index.coefficient(p);
        if w <= 0 || width.is_some_and(|x| x != w) {
            return Err(format!(
                "%{name} is read or written other than in blocks of the parallel loop"
            ));
        }
        width = Some(w);
        if !banded(k, &access.index, p, w, n) {
            return Err(format!(
                "%{name} at {:?} leaves its block of {w} columns",
                access.index
            ));
        }
    }
    Ok(())
}

/// Whether `index` is `w·p + Σ rows + Σ columns + c` as the module docs say.
fn banded(k: &Kernel, index: &AffineExpr, p: LoopId, w: i64, n: u64) -> bool {
    let Some(row) = i64::try_from(n).ok().and_then(|n| n.checked_mul(w)) else {
        return false;
    };
    let base = i128::from(index.offset().rem_euclid(row));
    let (mut lo, mut hi) = (base, base);
    for &(l, c) in index.terms() {
        if l == p || c % row == 0 {
            continue;
        }
        let reach = i128::from(c) * (i128::from(k.loops[l].extent) - 1).max(0);
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    lo >= 0 && hi < i128::from(w)
}

/// Whether `body` reads loop `l`'s index as a value.
fn reads_index(body: &[Stmt], l: LoopId) -> bool {
    body.iter().any(|s| match s {
        Stmt::Let {
            inst: Inst::Index(x),
            ..
        } => *x == l,
        Stmt::Loop { body, .. } | Stmt::If { body, .. } => reads_index(body, l),
        _ => false,
    })
}

/// Every load and store in `body`.
fn collect_accesses<'a>(body: &'a [Stmt], out: &mut Vec<&'a BufferAccessExpr>) {
    for s in body {
        match s {
            Stmt::Let {
                inst: Inst::Load(a),
                ..
            } => out.push(a),
            Stmt::Store { target, .. } => out.push(target),
            Stmt::Loop { body, .. } | Stmt::If { body, .. } => collect_accesses(body, out),
            _ => {}
        }
    }
}

/// Where each of the second kernel's ids goes in the chained kernel.
#[derive(Default)]
struct Ids {
    buffers: HashMap<BufferId, BufferId>,
    loops: HashMap<LoopId, LoopId>,
    values: HashMap<ValueId, ValueId>,
    accs: HashMap<AccId, AccId>,
}

impl Ids {
    fn value(&self, v: ValueId) -> Option<ValueId> {
        self.values.get(&v).copied()
    }

    fn expr(&self, e: &AffineExpr) -> Option<AffineExpr> {
        let terms = e
            .terms()
            .iter()
            .map(|(l, c)| Some((*self.loops.get(l)?, *c)))
            .collect::<Option<Vec<_>>>()?;
        Some(AffineExpr::new(terms, e.offset()))
    }

    fn access(&self, a: &BufferAccessExpr) -> Option<BufferAccessExpr> {
        let buffer = *self.buffers.get(&a.buffer)?;
        let moved = a.clone().map_exprs(&|e| self.expr(e))?;
        Some(BufferAccessExpr { buffer, ..moved })
    }

    fn inst(&self, inst: &Inst) -> Option<Inst> {
        let v = |x: &ValueId| self.value(*x);
        Some(match inst {
            Inst::Const(c) => Inst::Const(*c),
            Inst::Index(l) => Inst::Index(*self.loops.get(l)?),
            Inst::Load(a) => Inst::Load(self.access(a)?),
            Inst::AccValue(x) => Inst::AccValue(*self.accs.get(x)?),
            Inst::AccIndex(x) => Inst::AccIndex(*self.accs.get(x)?),
            Inst::Unary(op, x) => Inst::Unary(*op, v(x)?),
            Inst::Binary(op, x, y) => Inst::Binary(*op, v(x)?, v(y)?),
            Inst::Compare(op, x, y) => Inst::Compare(*op, v(x)?, v(y)?),
            Inst::Select {
                cond,
                if_true,
                if_false,
            } => Inst::Select {
                cond: v(cond)?,
                if_true: v(if_true)?,
                if_false: v(if_false)?,
            },
            Inst::Convert(x) => Inst::Convert(v(x)?),
        })
    }

    fn stmt(&self, s: &Stmt) -> Option<Stmt> {
        let body = |b: &[Stmt]| b.iter().map(|s| self.stmt(s)).collect::<Option<Vec<_>>>();
        Some(match s {
            Stmt::Let { result, inst } => Stmt::Let {
                result: self.value(*result)?,
                inst: self.inst(inst)?,
            },
            Stmt::Store { target, value } => Stmt::Store {
                target: self.access(target)?,
                value: self.value(*value)?,
            },
            Stmt::DeclareAcc(x) => Stmt::DeclareAcc(*self.accs.get(x)?),
            Stmt::Reduce { acc, value, index } => Stmt::Reduce {
                acc: *self.accs.get(acc)?,
                value: self.value(*value)?,
                index: match index {
                    Some(i) => Some(self.value(*i)?),
                    None => None,
                },
            },
            Stmt::Loop { loop_id, body: b } => Stmt::Loop {
                loop_id: *self.loops.get(loop_id)?,
                body: body(b)?,
            },
            Stmt::If { cond, body: b } => Stmt::If {
                cond: self.value(*cond)?,
                body: body(b)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::loop_ir::parse_kernel;

    /// Column maxima of `x[4, 8]` in blocks of 4 columns.
    const MAX: &str = "kernel @k0 {
  buffer %x: f32[32] read
  buffer %m: f32[8] write
  loop %i0 in 0..2 parallel {
    loop %i1 in 0..4 vectorize {
      acc %a0: max f32
      loop %i2 in 0..4 {
        %v0: f32 = load %x[4*%i0 + 8*%i2 + %i1]
        reduce %a0, %v0
      }
      %v1: f32 = acc.value %a0
      store %m[4*%i0 + %i1], %v1
    }
  }
}
";

    /// Column sums of `x − m`, the same blocks.
    const SUM: &str = "kernel @k1 {
  buffer %x: f32[32] read
  buffer %m: f32[8] read
  buffer %s: f32[8] write
  loop %i0 in 0..2 parallel {
    loop %i1 in 0..4 vectorize {
      acc %a0: sum f32
      %v0: f32 = load %m[4*%i0 + %i1]
      loop %i2 in 0..4 {
        %v1: f32 = load %x[4*%i0 + 8*%i2 + %i1]
        %v2: f32 = sub %v1, %v0
        reduce %a0, %v2
      }
      %v3: f32 = acc.value %a0
      store %s[4*%i0 + %i1], %v3
    }
  }
}
";

    #[test]
    fn kernels_over_the_same_column_blocks_chain() {
        let (a, b) = (
            parse_kernel("a", MAX).unwrap(),
            parse_kernel("b", SUM).unwrap(),
        );
        // x is storage 0, m storage 1, s storage 2.
        let c = chain(&a, &[0, 1], &b, &[0, 1, 2]).unwrap();
        assert_eq!((c.args, c.from_b), (vec![0, 1, 2], vec![2]));
        insta::assert_snapshot!(c.kernel.to_string(), @r"
        kernel @k0_k1 {
          buffer %x: f32[32] read
          buffer %m: f32[8] readwrite
          buffer %s: f32[8] write
          loop %i0 in 0..2 parallel {
            loop %i1 in 0..4 vectorize {
              acc %a0: max f32
              loop %i2 in 0..4 {
                %v0: f32 = load %x[4*%i0 + %i1 + 8*%i2]
                reduce %a0, %v0
              }
              %v1: f32 = acc.value %a0
              store %m[4*%i0 + %i1], %v1
            }
            loop %i3 in 0..4 vectorize {
              acc %a1: sum f32
              %v2: f32 = load %m[4*%i0 + %i3]
              loop %i4 in 0..4 {
                %v3: f32 = load %x[4*%i0 + %i3 + 8*%i4]
                %v4: f32 = sub %v3, %v2
                reduce %a1, %v4
              }
              %v5: f32 = acc.value %a1
              store %s[4*%i0 + %i3], %v5
            }
          }
        }
        ");
    }

    #[test]
    fn kernels_that_would_see_another_block_do_not_chain() {
        let a = parse_kernel("a", MAX).unwrap();
        let with_m_read =
            |index: &str| parse_kernel("b", &SUM.replace("load %m[4*%i0 + %i1]", index)).unwrap();
        // m read one column to the right: iteration 0 would read block 1's first maximum
        // before iteration 1 computed it.
        let b = with_m_read("load %m[4*%i0 + %i1 + 1]");
        let why = chain(&a, &[0, 1], &b, &[0, 1, 2]).unwrap_err();
        assert!(why.contains("leaves its block"), "{why}");
        // m read whole in every iteration (no band at all).
        let b = with_m_read("load %m[%i1]");
        let why = chain(&a, &[0, 1], &b, &[0, 1, 2]).unwrap_err();
        assert!(why.contains("other than in blocks"), "{why}");
        // m read by another band width (two blocks' worth per iteration).
        let b = with_m_read("load %m[2*%i0 + %i1]");
        assert!(chain(&a, &[0, 1], &b, &[0, 1, 2]).is_err());
        // One storage seen as buffers of other lengths.
        let longer = SUM.replace("%m: f32[8] read", "%m: f32[12] read");
        let b = parse_kernel("b", &longer).unwrap();
        let why = chain(&a, &[0, 1], &b, &[0, 1, 2]).unwrap_err();
        assert!(why.contains("other types or lengths"), "{why}");
        // Other extents, or a serial loop.
        let b = parse_kernel("b", &SUM.replace("0..2 parallel", "0..1 parallel")).unwrap();
        assert!(chain(&a, &[0, 1], &b, &[0, 1, 2])
            .unwrap_err()
            .contains("extent"));
        let b = parse_kernel("b", &SUM.replace("0..2 parallel", "0..2")).unwrap();
        let why = chain(&a, &[0, 1], &b, &[0, 1, 2]).unwrap_err();
        assert!(why.contains("one parallel loop"), "{why}");
        // A parallel loop that is also vectorised (a one-loop elementwise kernel).
        let b = parse_kernel(
            "b",
            &SUM.replace("0..2 parallel", "0..2 parallel vectorize"),
        )
        .unwrap();
        let why = chain(&a, &[0, 1], &b, &[0, 1, 2]).unwrap_err();
        assert!(why.contains("one parallel loop"), "{why}");
        // A storage bound to two parameters of one kernel.
        let b = parse_kernel("b", SUM).unwrap();
        assert!(chain(&a, &[0, 1], &b, &[0, 1, 1]).is_err());
        // A storage only one kernel touches needs no band: m bound elsewhere in the second.
        let b = with_m_read("load %m[%i1]");
        let c = chain(&a, &[0, 1], &b, &[0, 3, 2]).unwrap();
        assert_eq!((c.args, c.from_b), (vec![0, 1, 3, 2], vec![1, 2]));
    }

    /// The column maxima and sums of `x[4, 16]` in 4 blocks of 4 columns, chained.
    fn chained_over_four_blocks() -> Kernel {
        let wide = |t: &str| {
            t.replace("f32[32]", "f32[64]")
                .replace("f32[8]", "f32[16]")
                .replace("8*%i2", "16*%i2")
                .replace("0..2 parallel", "0..4 parallel")
        };
        let a = parse_kernel("a", &wide(MAX)).unwrap();
        let b = parse_kernel("b", &wide(SUM).replace("8*%i2", "16*%i2")).unwrap();
        chain(&a, &[0, 1], &b, &[0, 1, 2]).unwrap().kernel
    }

    #[test]
    fn an_intermediate_of_a_chain_is_held_one_block_at_a_time() {
        let k = chained_over_four_blocks();
        // m (parameter 1) is private: two chunks of two blocks, a scratch block each.
        let c = contract(&k, &[BufferId::new(1)], 2).unwrap();
        assert_eq!(c.contracted, [BufferId::new(1)]);
        insta::assert_snapshot!(c.kernel.to_string(), @r"
        kernel @k0_k1 {
          buffer %x: f32[64] read
          buffer %m: f32[8] readwrite
          buffer %s: f32[16] write
          loop %i5 in 0..2 parallel {
            loop %i0 in 0..2 {
              loop %i1 in 0..4 vectorize {
                acc %a0: max f32
                loop %i2 in 0..4 {
                  %v0: f32 = load %x[4*%i0 + %i1 + 16*%i2 + 8*%i5]
                  reduce %a0, %v0
                }
                %v1: f32 = acc.value %a0
                store %m[%i1 + 4*%i5], %v1
              }
              loop %i3 in 0..4 vectorize {
                acc %a1: sum f32
                %v2: f32 = load %m[%i3 + 4*%i5]
                loop %i4 in 0..4 {
                  %v3: f32 = load %x[4*%i0 + %i3 + 16*%i4 + 8*%i5]
                  %v4: f32 = sub %v3, %v2
                  reduce %a1, %v4
                }
                %v5: f32 = acc.value %a1
                store %s[4*%i0 + %i3 + 8*%i5], %v5
              }
            }
          }
        }
        ");
        // Chunks divide the blocks and are fewer: 3 and 4 preferred give 2 of 4 blocks; x,
        // which the kernel only reads, never qualifies.
        assert_eq!(contract(&k, &[BufferId::new(1)], 3).unwrap().chunks, 2);
        assert_eq!(contract(&k, &[BufferId::new(1)], 4).unwrap().chunks, 2);
        assert!(contract(&k, &[BufferId::new(0)], 2).is_none());
    }

    #[test]
    fn chunk_counts_divide_the_blocks_nearest_the_preferred_count() {
        assert_eq!(chunk_count(512, 16), Some(16));
        assert_eq!(chunk_count(513, 16), Some(19));
        assert_eq!(chunk_count(625, 16), Some(25));
        assert_eq!(chunk_count(1366, 16), Some(2));
        assert_eq!(chunk_count(2049, 16), Some(3));
        assert_eq!(chunk_count(683, 16), None);
        assert_eq!(chunk_count(16, 16), Some(8));
        assert_eq!(chunk_count(1, 16), None);
    }
}
