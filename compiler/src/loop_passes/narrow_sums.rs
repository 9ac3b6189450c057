//! Keeping the vector partials of short f32 sums in f32, with an f64 re-run on overflow.
//!
//! Lowering accumulates f32 sums and means in f64, as the interpreter does
//! ([`LowerOptions::f64_accumulation`](crate::LowerOptions::f64_accumulation)). On a 4-lane
//! machine that costs a promote and two `f64x2` adds per four terms — about a fifth of a
//! layernorm. This pass marks such an accumulator `partials f32`
//! ([`AccDecl::narrow_partials`](weft_ir::loop_ir::AccDecl)): code generation then keeps the
//! vector partials of the loop reducing into it in f32, folds their total into the f64
//! accumulator, and re-runs the loop as a scalar f64 loop when that total is infinite or NaN —
//! so an f32 partial that overflows where f64 would not (`3e38 + 3e38 − 3e38`) costs a
//! re-run, never a wrong class of result.
//!
//! Assumes a verified kernel after register blocking (the vector plan it asks for is the one
//! code generation will use). Guarantees: an f64 `sum` accumulator is marked only when every
//! `reduce` into it adds `convert` of an f32 value defined in the same body, directly inside
//! a vectorised loop declared inside the accumulator's scope that stores nothing (re-running
//! it changes nothing but the partials), with at most [`MAX_CHAIN`] f32 additions on any
//! term's path to the f64 accumulator: a loop of any length, because code generation folds
//! the partials into f64 every [`f32_block`] iterations (`⌈b/A⌉` into each of `A` vector
//! partials, then fewer than `parts + lanes` combining them; tail terms and the fold go
//! straight into f64), and the native routines that keep partials of their own take only
//! loops of one block ([`blocked`]).
//! Recursive summation then bounds the error by `MAX_CHAIN · 2⁻²⁴ · Σ|xᵢ|` = `2⁻¹⁴ · Σ|xᵢ|`
//! (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2), before the final rounding
//! to f32 that f64 accumulation has too. docs/numerics.md states the bound; the oracle's
//! tolerance (docs/testing.md) covers it. Products are never marked, nor are dots whose
//! products are taken in f64.

/// Code generation's rules for blocking f32 partials, read here to bound the chain.
pub use crate::codegen::vectorize::{blocked, f32_block};
use crate::codegen::{translate, vectorize};
use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{AccId, Kernel, LoopId, ReduceKind, ScalarType, Stmt, ValueId};

/// Most f32 additions on one term's path to a narrowed sum (2¹⁰: the bound is
/// 2⁻¹⁴ · Σ|xᵢ|); the one rule the interpreter's perturbed runs read too
/// ([`weft_ir::scalar::MAX_F32_SUM_CHAIN`]).
pub const MAX_CHAIN: u64 = weft_ir::scalar::MAX_F32_SUM_CHAIN;

/// [`narrow_f32_sums`] as a pass (it adds no note: `weft explain` shows `partials f32`).
pub fn run(k: &mut Kernel, _cx: &super::PassContext<'_>) -> super::PassOutcome {
    super::PassOutcome {
        changed: narrow_f32_sums(k),
        ..super::PassOutcome::default()
    }
}

/// Marks every f64 sum accumulator of `k` that qualifies (see the module docs); true if any
/// was.
pub fn narrow_f32_sums(k: &mut Kernel) -> bool {
    let mut found = Vec::new();
    let widened_from = translate::widenings(k);
    survey(k, &k.body, &widened_from, &mut Vec::new(), &mut found);
    let mut any = false;
    for c in found.iter().filter(|c| c.ok) {
        let decl = &mut k.accs[c.acc];
        if decl.kind == ReduceKind::Sum && decl.ty == ScalarType::F64 {
            decl.narrow_partials = true;
            any = true;
        }
    }
    any
}

/// An f64 accumulator and whether every reduction into it can keep f32 partials.
struct Candidate {
    acc: AccId,
    ok: bool,
}

/// Additions on a term's path in f32 partials: `⌈e/A⌉` into its partial (`A = lanes · parts`),
/// then the `parts` vectors and the `lanes` lanes combined one after another.
fn chain(extent: u64, lanes: u64, parts: u64) -> u64 {
    let partials = (lanes * parts).max(1);
    extent.div_ceil(partials) + parts + lanes
}

/// Walks `body`, the body of the innermost of `loops` if any, recording for each f64
/// accumulator declared in it whether its reductions qualify (`widened_from`: code
/// generation's map of f64 widenings of f32 values, [`translate::widenings`]).
fn survey(
    k: &Kernel,
    body: &[Stmt],
    widened_from: &[Option<ValueId>],
    loops: &mut Vec<LoopId>,
    found: &mut Vec<Candidate>,
) {
    // The vector plan of the loop whose body this is, when that loop stores nothing.
    let plan = loops.last().and_then(|&l| {
        (k.loops[l].annotations.vectorize && !vectorize::stores(body))
            .then(|| vectorize::plan(k, l, body))
            .flatten()
            .map(|p| (l, p))
    });
    for s in body {
        match s {
            Stmt::DeclareAcc(a) if k.accs[*a].ty == ScalarType::F64 => {
                found.push(Candidate { acc: *a, ok: true });
            }
            Stmt::Reduce { acc, value, .. } => {
                let Some(c) = found.iter_mut().find(|c| c.acc == *acc) else {
                    continue;
                };
                let widened = widened_from[value.index()].is_some();
                c.ok &= widened
                    && plan.as_ref().is_some_and(|(l, p)| {
                        let block = k.loops[*l].extent.min(f32_block(p.lanes, p.parts));
                        p.outer_accs.contains(acc)
                            && chain(block, p.lanes.into(), p.parts.into()) <= MAX_CHAIN
                    });
            }
            Stmt::Loop { loop_id, body } => {
                loops.push(*loop_id);
                survey(k, body, widened_from, loops, found);
                loops.pop();
            }
            // No vector loop's body: a reduction in it disqualifies its accumulator.
            Stmt::If { body, .. } => survey(k, body, widened_from, &mut Vec::new(), found),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
    fn a_vectorised_row_of_4096_keeps_f32_partials() {
        let text = narrowed(row_sum("sum", 8, 4096, "vectorize unroll(4)")).unwrap();
        assert!(text.contains("acc %a0: sum f64 partials f32"), "{text}");
        // The kernel itself is unchanged: the widening stays for the f64 re-run.
        assert!(text.contains("%v1: f64 = convert %v0"), "{text}");
        assert!(text.contains("reduce %a0, %v1"), "{text}");
        let again = parse_kernel("k", &text).unwrap();
        weft_ir::loop_ir::verify(&again).unwrap();
        assert_eq!(
            again.to_string(),
            text,
            "the mark survives printing and reading"
        );
    }

    #[test]
    fn scalar_storing_sums_and_products_keep_f64_partials() {
        // Long rows keep f32 partials too: code generation folds them every block.
        assert!(narrowed(row_sum("sum", 2, 65536, "vectorize unroll(4)")).is_some());
        assert!(narrowed(row_sum("sum", 2, 16384, "vectorize unroll(4)")).is_some());
        assert!(narrowed(row_sum("sum", 2, 8192, "vectorize unroll(4)")).is_some());
        // Scalar loops have no partials.
        assert!(narrowed(row_sum("sum", 2, 1000, "")).is_none());
        assert!(narrowed(row_sum("prod", 2, 64, "vectorize unroll(4)")).is_none());
        // A loop that stores cannot be re-run.
        let text = format!("{}", row_sum("sum", 2, 64, "vectorize unroll(4)")).replace(
            "reduce %a0, %v1",
            "reduce %a0, %v1\n      store %s[%i0], %v0",
        );
        let k = parse_kernel("k", &text).unwrap();
        assert!(narrowed(k).is_none(), "{text}");
    }

    #[test]
    fn chains_count_partials_and_their_combination() {
        // 16 partials over 4096 terms: 256 into each, 4 vectors and 4 lanes combined.
        assert_eq!(chain(4096, 4, 4), 256 + 4 + 4);
        assert_eq!(chain(10, 4, 2), 2 + 2 + 4);
        assert_eq!(chain(0, 4, 1), 5);
    }

    #[test]
    fn blocks_are_the_longest_power_of_two_within_the_chain() {
        for (lanes, parts) in [(4, 4), (4, 1), (2, 4), (8, 2), (4, 8)] {
            let b = f32_block(lanes, parts);
            assert!(b.is_power_of_two());
            assert!(
                chain(b, lanes.into(), parts.into()) <= MAX_CHAIN,
                "{lanes} x {parts}"
            );
            assert!(
                chain(2 * b, lanes.into(), parts.into()) > MAX_CHAIN,
                "{lanes} x {parts}"
            );
        }
        assert_eq!(f32_block(4, 4), 8192);
        assert!(!blocked(8192, 4, 4));
        assert!(blocked(16384, 4, 4));
    }
}
