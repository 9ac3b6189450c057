//! Which dots take the GEMM path, judged on the graph before fusion ([`is_candidate`]), and
//! the options that decide it ([`GemmOptions`]); the module above plans the calls.

use weft_ir::{Axis, DType, Graph, NodeId, Op};

/// When dots take the GEMM path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmOptions {
    /// Fewest points `M·N·K` (times any batch) of a dot's iteration space: below, the JIT's
    /// loop nest is as fast or faster (measured, docs/benchmarks.md).
    pub min_work: u64,
    /// Shortest M and N (products of each operand's free axes): a matrix-vector product
    /// (a side of 1) is bound by memory, where the loop nest is twice as fast and keeps f64
    /// accumulation; from a side of 2 the GEMM wins (1.4–3.5× at sides 2–12, and the train
    /// step's two `[64, 128] × [128, 10]` products; docs/benchmarks.md).
    pub min_side: u64,
    /// Longest contraction an f32 GEMM (accumulating in f32) may have.
    pub max_f32_k: u64,
    /// Fewest rows (or columns) of a parallel block.
    pub min_block: usize,
    /// Threads of the pool the calls run on: a call has at most one block per thread (each
    /// block packs the other operand again). The executable sets it from its pool.
    pub threads: usize,
    /// Most blocks per call (per batch index).
    pub max_blocks: usize,
}

impl Default for GemmOptions {
    fn default() -> Self {
        GemmOptions {
            min_work: 1 << 16,
            min_side: 2,
            max_f32_k: 1 << 12,
            min_block: 128,
            threads: weft_runtime::default_threads(),
            max_blocks: 64,
        }
    }
}

/// Whether node `id` of `g` — a dot, or a sum of products [`Graph::sum_of_products`] reads
/// as a contraction — takes the GEMM path under `o` (module docs), judged by its shape.
pub fn is_candidate(g: &Graph, id: NodeId, o: &GemmOptions) -> bool {
    let node = g.node(id);
    let Some((m, n, k, batch)) = contraction_shape(g, id) else {
        return false;
    };
    let side = u128::from(o.min_side);
    matches!(node.dtype, DType::F32 | DType::F64)
        && m >= side
        && n >= side
        && k >= 1
        && batch.saturating_mul(m).saturating_mul(n).saturating_mul(k) >= u128::from(o.min_work)
        && (node.dtype != DType::F32 || k <= u128::from(o.max_f32_k))
}

/// The lengths `(M, N, K, batch)` of node `id`'s contraction — a dot whose operands have its
/// dtype (batch 1), or a sum of products [`Graph::sum_of_products`] reads as a contraction —
/// each the product of its axes' lengths; `None` for anything else or a length not known.
pub(crate) fn contraction_shape(g: &Graph, id: NodeId) -> Option<(u128, u128, u128, u128)> {
    let node = g.node(id);
    let len = |axes: &[Axis]| -> Option<u128> {
        axes.iter()
            .try_fold(1u128, |n, a| n.checked_mul(g.resolve_len(*a).ok()? as u128))
    };
    match node.op {
        Op::Dot(l, r) => {
            let (ln, rn) = (g.node(l), g.node(r));
            if ln.dtype != node.dtype || rn.dtype != node.dtype {
                return None;
            }
            let pairs = g.dot_pairs("dot", &ln.axes, &rn.axes).ok()?;
            let free = |axes: &weft_ir::Axes, left: bool| -> Vec<Axis> {
                axes.iter()
                    .copied()
                    .filter(|a| !pairs.iter().any(|p| *a == if left { p.0 } else { p.1 }))
                    .collect()
            };
            let k: Vec<Axis> = pairs.iter().map(|p| p.0).collect();
            Some((
                len(&free(&ln.axes, true))?,
                len(&free(&rn.axes, false))?,
                len(&k)?,
                1,
            ))
        }
        _ => {
            let c = g.sum_of_products(id)?;
            Some((
                len(&c.lhs_free)?,
                len(&c.rhs_free)?,
                len(&c.contracted)?,
                len(&c.batch)?,
            ))
        }
    }
}
