//! Narrowing f32 sums to f32 accumulators where the error stays bounded.
//!
//! Lowering accumulates f32 sums and means in f64, as the interpreter does
//! ([`LowerOptions::f64_accumulation`](crate::LowerOptions::f64_accumulation)). On a 4-lane
//! machine that costs a promote and two `f64x2` adds per four terms — about a fifth of a
//! layernorm. This pass rewrites such an accumulator to f32 when each of its partial sums
//! adds few terms, so the error bound below holds whatever the data.
//!
//! Assumes a verified kernel after register blocking (the vector plan it asks for is the one
//! code generation will use). Guarantees: an f64 `sum` accumulator whose every `reduce` adds
//! `convert` of an f32 value becomes an f32 accumulator, reading back through an exact
//! `convert` to f64, only when at most [`MAX_CHAIN`] additions lie on any term's path to the
//! result (counted by `chain`: `⌈e/A⌉` into each of `A` vector partials, `log2 A` combining
//! them, fewer than `A` tail terms, and one per iteration of any loop around). Recursive
//! summation then bounds the error by `MAX_CHAIN · 2⁻²⁴ · Σ|xᵢ|` = `2⁻¹⁴ · Σ|xᵢ|` (Higham,
//! *Accuracy and Stability of Numerical Algorithms*, §4.2), before the final rounding to f32
//! that f64 accumulation has too. docs/numerics.md states the bound; the oracle's tolerance
//! (docs/testing.md) covers it. f32 products are never narrowed (partial products overflow
//! f32 long before f64), nor are dots whose products are taken in f64.

use crate::codegen::vectorize;
use weft_ir::loop_ir::{AccId, Inst, Kernel, LoopId, ReduceKind, ScalarType, Stmt, ValueId};

/// Most additions on one term's path to a narrowed sum (2¹⁰: the bound is 2⁻¹⁴ · Σ|xᵢ|); the
/// one rule the interpreter's perturbed runs read too ([`weft_ir::scalar::MAX_F32_SUM_CHAIN`]).
pub const MAX_CHAIN: u64 = weft_ir::scalar::MAX_F32_SUM_CHAIN;

/// Narrows every f64 sum accumulator of `k` that qualifies (see the module docs); true if
/// any was (the widening `convert`s it no longer reads are then unused).
pub fn narrow_f32_sums(k: &mut Kernel) -> bool {
    let mut found = Vec::new();
    survey(k, &k.body, &mut Vec::new(), &mut Vec::new(), &mut found);
    let narrow: Vec<AccId> = found
        .iter()
        .filter(|c| c.qualifies(k))
        .map(|c| c.acc)
        .collect();
    if narrow.is_empty() {
        return false;
    }
    for &a in &narrow {
        k.accs[a].ty = ScalarType::F32;
    }
    let body = std::mem::take(&mut k.body);
    k.body = rewrite(k, body, &narrow);
    true
}

/// An f64 sum accumulator and what bounds its error.
struct Candidate {
    acc: AccId,
    /// Most additions on one term's path to the result.
    chain: u64,
    /// Every `reduce` into it adds `convert` of an f32 value.
    all_widened: bool,
}

impl Candidate {
    fn qualifies(&self, k: &Kernel) -> bool {
        self.all_widened
            && k.accs[self.acc].kind == ReduceKind::Sum
            && k.accs[self.acc].ty == ScalarType::F64
            && self.chain <= MAX_CHAIN
    }
}

/// Additions on a term's path for a reduction nested in `loops` (those inside the
/// accumulator's declaration, outermost first). A vectorised innermost loop of extent `e` with
/// `A` partials adds `⌈e/A⌉` terms to each partial, combines them in `log2 A` steps, adds
/// fewer than `A` tail terms, and folds the result into the accumulator once per iteration of
/// the loops around it; otherwise every term goes into the one accumulator.
fn chain(loops: &[(LoopId, u64)], partials: u64) -> u64 {
    let product = |ls: &[(LoopId, u64)]| ls.iter().fold(1u64, |t, (_, e)| t.saturating_mul(*e));
    match loops.split_last() {
        Some((&(_, e), outer)) if partials > 1 => product(outer)
            .saturating_add(e.div_ceil(partials))
            .saturating_add(u64::from(partials.ilog2()))
            .saturating_add(partials),
        _ => product(loops),
    }
}

/// The widenings `body` defines at its own level: each value that is `convert` of an f32
/// value, with that value.
fn widenings(k: &Kernel, body: &[Stmt]) -> Vec<(ValueId, ValueId)> {
    body.iter()
        .filter_map(|s| match s {
            Stmt::Let {
                result,
                inst: Inst::Convert(x),
            } if k.values[*x] == ScalarType::F32 => Some((*result, *x)),
            _ => None,
        })
        .collect()
}

/// The f32 value `v` widens, if it is one of `widenings`.
fn widened(widenings: &[(ValueId, ValueId)], v: ValueId) -> Option<ValueId> {
    widenings.iter().find(|(r, _)| *r == v).map(|(_, x)| *x)
}

/// Walks `body` inside `loops` (outermost first), recording where accumulators are declared
/// (`declared`: accumulator and loop depth) and what their reductions look like.
fn survey(
    k: &Kernel,
    body: &[Stmt],
    loops: &mut Vec<(LoopId, u64)>,
    declared: &mut Vec<(AccId, usize)>,
    found: &mut Vec<Candidate>,
) {
    let widen = widenings(k, body);
    for s in body {
        match s {
            Stmt::DeclareAcc(a) if k.accs[*a].ty == ScalarType::F64 => {
                declared.push((*a, loops.len()));
            }
            Stmt::Reduce { acc, value, .. } => {
                let Some(&(_, depth)) = declared.iter().find(|(a, _)| a == acc) else {
                    continue;
                };
                let partials = match loops.last() {
                    Some(&(l, _)) if depth < loops.len() => partials_of(k, l, body),
                    _ => 1,
                };
                let chain = chain(&loops[depth..], partials);
                let ok = widened(&widen, *value).is_some();
                match found.iter_mut().find(|c| c.acc == *acc) {
                    Some(c) => {
                        c.all_widened &= ok;
                        c.chain = c.chain.max(chain);
                    }
                    None => found.push(Candidate {
                        acc: *acc,
                        chain,
                        all_widened: ok,
                    }),
                }
            }
            Stmt::Loop { loop_id, body } => {
                loops.push((*loop_id, k.loops[*loop_id].extent));
                survey(k, body, loops, declared, found);
                loops.pop();
            }
            _ => {}
        }
    }
}

/// Independent partial sums of a reduction directly inside loop `l` (whose body is `body`):
/// the vector plan's, or 1.
fn partials_of(k: &Kernel, l: LoopId, body: &[Stmt]) -> u64 {
    if !k.loops[l].annotations.vectorize {
        return 1;
    }
    vectorize::plan(k, l, body).map_or(1, |p| u64::from(p.lanes * p.parts))
}

/// Reduces the f32 operand instead of its widening, and reads narrowed accumulators back
/// through a `convert` to f64 so every later use is unchanged.
fn rewrite(k: &mut Kernel, body: Vec<Stmt>, narrow: &[AccId]) -> Vec<Stmt> {
    let widen = widenings(k, &body);
    let mut out = Vec::with_capacity(body.len());
    for s in body {
        match s {
            Stmt::Reduce { acc, value, index } if narrow.contains(&acc) => {
                let value = widened(&widen, value).unwrap_or(value);
                out.push(Stmt::Reduce { acc, value, index });
            }
            Stmt::Let {
                result,
                inst: Inst::AccValue(a),
            } if narrow.contains(&a) => {
                let (narrowed, read) = k.define(ScalarType::F32, Inst::AccValue(a));
                out.push(read);
                out.push(Stmt::Let {
                    result,
                    inst: Inst::Convert(narrowed),
                });
            }
            Stmt::Loop { loop_id, body } => {
                let body = rewrite(k, body, narrow);
                out.push(Stmt::Loop { loop_id, body });
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_ir::arena::EntityRef;
    use weft_ir::loop_ir::parse_kernel;

    /// A row sum of `rows × cols` f32 accumulated in f64, its loops annotated as given.
    fn row_sum(op: &str, rows: u64, cols: u64, annotations: &str) -> Kernel {
        let text = format!(
            "kernel @k {{
  buffer %a: f32[{n}] read
  buffer %s: f32[{rows}] write
  loop %i0 in 0..{rows} {{
    acc %a0: {op} f64
    loop %i1 in 0..{cols} {annotations} {{
      %v0: f32 = load %a[{cols}*%i0 + %i1]
      %v1: f64 = convert %v0
      reduce %a0, %v1
    }}
    %v2: f64 = acc.value %a0
    %v3: f32 = convert %v2
    store %s[%i0], %v3
  }}
}}
",
            n = rows * cols
        );
        parse_kernel("k", &text).unwrap()
    }

    fn narrowed(mut k: Kernel) -> Option<String> {
        narrow_f32_sums(&mut k).then(|| k.to_string())
    }

    #[test]
    fn a_vectorised_row_of_4096_sums_in_f32() {
        let text = narrowed(row_sum("sum", 8, 4096, "vectorize unroll(4)")).unwrap();
        assert!(text.contains("acc %a0: sum f32"), "{text}");
        assert!(text.contains("reduce %a0, %v0"), "{text}");
        // Read back through an exact widening, so later f64 uses are unchanged.
        assert!(text.contains(": f32 = acc.value %a0"), "{text}");
        assert!(text.contains("%v2: f64 = convert"), "{text}");
        weft_ir::loop_ir::verify(&parse_kernel("k", &text).unwrap()).unwrap();
    }

    #[test]
    fn long_or_scalar_sums_and_products_stay_f64() {
        // 65536 terms over 16 partials: 4096 additions per partial.
        assert!(narrowed(row_sum("sum", 2, 65536, "vectorize unroll(4)")).is_none());
        // Scalar: every term goes into one accumulator.
        assert!(narrowed(row_sum("sum", 2, 4096, "")).is_none());
        assert!(narrowed(row_sum("sum", 2, 1000, "")).is_some());
        assert!(narrowed(row_sum("prod", 2, 64, "vectorize unroll(4)")).is_none());
    }

    #[test]
    fn chains_count_the_loops_around_the_vector_loop() {
        let l = |e| (LoopId::new(0), e);
        // 16 partials over 4096 terms: 256 + 4 + 16 additions, and the fold into the
        // accumulator.
        assert_eq!(chain(&[l(4096)], 16), 1 + 256 + 4 + 16);
        // Folded into the accumulator once per outer iteration.
        assert_eq!(chain(&[l(2000), l(16)], 16), 2000 + 1 + 4 + 16);
        assert_eq!(chain(&[l(30), l(40)], 1), 1200);
        assert_eq!(chain(&[], 1), 1);
    }
}
