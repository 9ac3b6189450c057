//! The GEMM path: which dots run as a call of a tuned GEMM (weft_runtime::GemmCall, the
//! `gemm` crate) instead of a JIT loop nest, and the plan entry describing the call.
//!
//! Assumes: for [`is_candidate`], a verified graph; for [`plan_gemm`], the kernel program of a
//! [`GroupKind::Gemm`](crate::passes::fusion::GroupKind::Gemm) group (fusion leaves such a dot
//! alone in its group, its result stored, its operands stored or read through views of stored
//! tensors) after layout, so every load and the store carry a strided view.
//!
//! Guarantees:
//! - a dot is a candidate only if it is f32 or f64, its iteration space (result elements ×
//!   contracted length) has at least [`GemmOptions::min_work`] points, its free sides are each
//!   at least [`GemmOptions::min_side`] long, and, for f32 (accumulated in f32 by the GEMM),
//!   its contracted length is at most [`GemmOptions::max_f32_k`], so the accumulation error
//!   bound `K · 2⁻²⁴ · Σ|aᵢbᵢ|` stays within `2⁻¹²·Σ|aᵢbᵢ|` (docs/numerics.md); dots that are
//!   not candidates keep the JIT's loop nest (f64 accumulation for f32);
//! - [`plan_gemm`] describes the program exactly as it is — the layout pass's strides are
//!   passed as strides (axes whose strides compose are merged, free axes that are neither M
//!   nor N become batch axes), never copied to another layout — or says why it cannot (a
//!   masked or computed operand, a contraction over axes whose strides do not compose), in
//!   which case the pipeline compiles that dot with the JIT instead. The runtime checks the
//!   description again before any call ([`weft_runtime::GemmCall::new`]);
//! - a sum of taps (`passes::fusion::TapSum`, a convolution's shifted form) is one call only
//!   when each dot is the first one's GEMM with A and B moved ([`GemmTap`]s, summed into C in
//!   the chain's order), else [`plan_gemm`] says why and the pipeline makes each dot a call of
//!   its own; with batch axes that fill the pool it takes one block per batch index;
//! - a call is split into row (or column) blocks over the thread pool, at most one per thread
//!   ([`GemmSpec::blocks_for`]); results are bit-identical for a given thread count (the
//!   crate's calls follow the blocks, so other thread counts may differ in the last bits,
//!   within the tolerance of docs/numerics.md).

use crate::passes::kernel::{Instr, KernelProgram, StageProgram};
use crate::passes::layout::LayoutPlan;
use crate::passes::views::StridedView;
use weft_ir::loop_ir::ScalarType;
use weft_ir::{Axis, DType, Graph, NodeId, ReduceOp};
pub use weft_runtime::{BatchAxis, GemmSpec, GemmTap, MatrixView, SplitDim};

mod candidate;
pub(crate) use candidate::contraction_shape;
pub use candidate::{is_candidate, GemmOptions};

/// Whether a call whose batch axes have `lengths` takes one block per batch index on a pool
/// of `threads`: when there are at least as many indices as threads (a convolution over a
/// batch of images). More blocks would pack the other operand again for no parallelism, and one
/// block per index lets the kernel after the call run on each index as its epilogue
/// (weft_runtime::GemmEpilogue).
fn one_block_per_index(lengths: impl IntoIterator<Item = usize>, threads: usize) -> bool {
    let mut lengths = lengths.into_iter().peekable();
    let batched = lengths.peek().is_some();
    let indices = lengths.fold(1usize, usize::saturating_mul);
    batched && indices >= threads
}

/// One loop of the dot's iteration space with its length and strides in A, B and C.
#[derive(Clone, Copy, Debug)]
struct Dim {
    len: usize,
    s: [i64; 3],
}

/// Merges dims whose strides compose in every operand of `ts` (`outer = inner · len(inner)`)
/// into one, until none do.
fn merge(mut dims: Vec<Dim>, ts: &[usize]) -> Vec<Dim> {
    'again: loop {
        for x in 0..dims.len() {
            for y in 0..dims.len() {
                let (o, i) = (dims[x], dims[y]);
                let composes = x != y
                    && ts
                        .iter()
                        .all(|t| (i.s[*t]).checked_mul(i.len as i64) == Some(o.s[*t]));
                if composes {
                    let merged = Dim {
                        len: o.len * i.len,
                        s: i.s,
                    };
                    dims[y] = merged;
                    dims.remove(x);
                    continue 'again;
                }
            }
        }
        return dims;
    }
}

/// The stride of loop `axis` in `v` (0 if the view does not move along it).
fn stride_of(v: &StridedView, axis: Axis) -> i64 {
    v.axes
        .iter()
        .zip(&v.strides)
        .find(|(a, _)| a.axis == axis)
        .map_or(0, |(_, s)| *s)
}

/// The GEMM call computing `program` (a `GroupKind::Gemm` group after layout), or why not.
/// Returns the spec and the stored tensors of A, B and C.
///
/// A group of several stages is a sum of taps (`passes::fusion::TapSum`): the dots, then the
/// chain of adds reading them. Each dot must be the same GEMM but for where A and B start
/// (one stored A, one stored B); the call sums them into C in the chain's order
/// ([`GemmSpec::taps`]).
pub fn plan_gemm(
    g: &Graph,
    layouts: &LayoutPlan,
    program: &KernelProgram,
    options: &GemmOptions,
) -> Result<(GemmSpec, [NodeId; 3]), String> {
    let (last, terms) = program.stages.split_last().ok_or("an empty group")?;
    let c = last
        .store
        .as_ref()
        .and_then(|t| t.view.as_ref())
        .ok_or("the result is not stored")?;
    if terms.is_empty() {
        return plan_one(g, layouts, program, last, c, options);
    }
    if tap_order(last).as_deref() != Some(&terms.iter().map(|t| t.node).collect::<Vec<_>>()) {
        return Err("the last stage is not the chain of adds of the taps".into());
    }
    let (mut spec, tensors) = plan_one(g, layouts, program, &terms[0], c, options)?;
    let mut taps = Vec::with_capacity(terms.len());
    for t in terms {
        let (s, ts) = plan_one(g, layouts, program, t, c, options)?;
        let moved = GemmSpec {
            a: MatrixView {
                offset: spec.a.offset,
                ..s.a
            },
            b: MatrixView {
                offset: spec.b.offset,
                ..s.b
            },
            name: spec.name.clone(),
            ..s.clone()
        };
        if ts != tensors || moved != spec {
            return Err(format!(
                "tap {} is not the first tap's GEMM moved along A and B",
                g.node_label(t.node)
            ));
        }
        taps.push(GemmTap {
            a: s.a.offset - spec.a.offset,
            b: s.b.offset - spec.b.offset,
        });
    }
    spec.name = g.node_label(last.node);
    spec.taps = taps;
    // A block's taps then run over one matrix of C.
    if one_block_per_index(spec.batch.iter().map(|b| b.len), options.threads) {
        (spec.split, spec.block) = (SplitDim::Rows, spec.m);
    }
    weft_runtime::GemmCall::new(spec.clone()).map_err(|e| e.to_string())?;
    Ok((spec, tensors))
}

/// The dots a tap sum's last stage adds, in order: `add(add(t₀, t₁), …)` over plain reads
/// of earlier stages at the same point, and nothing else.
fn tap_order(last: &StageProgram) -> Option<Vec<NodeId>> {
    if last.reduction.is_some() || !last.loops.is_empty() {
        return None;
    }
    let local = |v: usize| match &last.body.get(v)?.instr {
        Instr::ReadLocal { node, index, valid } if index.is_empty() && valid.is_empty() => {
            Some(*node)
        }
        _ => None,
    };
    let (mut order, mut v) = (Vec::new(), last.result);
    while let Instr::Binary(weft_ir::BinaryOp::Add, x, y) = &last.body.get(v)?.instr {
        order.push(local(*y)?);
        v = *x;
    }
    order.push(local(v)?);
    order.reverse();
    (last.body.len() == 2 * order.len() - 1).then_some(order)
}

/// [`plan_gemm`] for one dot stage `st` of `program`, its result stored through `c`.
fn plan_one(
    g: &Graph,
    layouts: &LayoutPlan,
    program: &KernelProgram,
    st: &StageProgram,
    c: &StridedView,
    options: &GemmOptions,
) -> Result<(GemmSpec, [NodeId; 3]), String> {
    let node = g.node(st.node);
    let dtype = match node.dtype {
        DType::F32 => ScalarType::F32,
        DType::F64 => ScalarType::F64,
        d => return Err(format!("element type {d}")),
    };
    let red = match &st.reduction {
        Some(r) if r.op == ReduceOp::Sum => r,
        _ => return Err("not a sum of products".into()),
    };
    let load = |v: usize| -> Result<&StridedView, String> {
        match st.body.get(v).map(|i| &i.instr) {
            Some(Instr::Load {
                valid,
                view: Some(view),
                ..
            }) if valid.is_empty() => Ok(view),
            _ => Err("an operand is not a plain load of a stored tensor".into()),
        }
    };
    let (lv, rv) = match st.body.get(st.result).map(|i| &i.instr) {
        Some(Instr::Binary(weft_ir::BinaryOp::Multiply, x, y)) => (*x, *y),
        _ => return Err("the body is not a product".into()),
    };
    let (a, b) = (load(lv)?, load(rv)?);
    if st.body.iter().any(|i| i.dtype != node.dtype) {
        return Err("a conversion inside the dot".into());
    }
    let len_of = |t: NodeId| -> Result<u64, String> {
        layouts
            .layouts
            .get(&t)
            .map(|l| l.elements as u64)
            .ok_or_else(|| format!("{} has no layout", g.node_label(t)))
    };
    let dim = |axis: Axis, len: usize, in_c: bool| Dim {
        len,
        s: [
            stride_of(a, axis),
            stride_of(b, axis),
            if in_c { stride_of(c, axis) } else { 0 },
        ],
    };
    // Free loops (outer, then the stage's own), and the contraction's.
    let (mut ms, mut ns, mut batch) = (Vec::new(), Vec::new(), Vec::new());
    for ax in program.outer.iter().chain(&st.loops).filter(|a| a.len > 1) {
        let d = dim(ax.axis, ax.len, true);
        match (d.s[0] != 0, d.s[1] != 0) {
            (true, false) => ms.push(d),
            (false, true) => ns.push(d),
            _ => batch.push(d),
        }
    }
    let ks: Vec<Dim> = red
        .axes
        .iter()
        .filter(|a| a.len > 1)
        .map(|a| dim(a.axis, a.len, false))
        .collect();
    let mut ms = merge(ms, &[0, 2]);
    let mut ns = merge(ns, &[1, 2]);
    let ks = merge(ks, &[0, 1]);
    if ks.len() > 1 {
        return Err("the contracted axes' strides do not compose into one".into());
    }
    // The longest M and N dims are the matrices'; any others repeat the multiply.
    let mut pick = |v: &mut Vec<Dim>| -> Dim {
        let at = (0..v.len()).max_by_key(|i| v[*i].len);
        let d = at.map(|i| v.remove(i)).unwrap_or(Dim { len: 1, s: [0; 3] });
        batch.append(v);
        d
    };
    let (m, n) = (pick(&mut ms), pick(&mut ns));
    // Batch axes whose strides compose (attention's heads within its batch) are one: one
    // index per matrix, which an epilogue over the batch can follow.
    let batch = merge(batch, &[0, 1, 2]);
    let k = ks.first().copied().unwrap_or(Dim { len: 1, s: [0; 3] });
    if (m.len as u64) < options.min_side || (n.len as u64) < options.min_side {
        return Err(format!(
            "a {} x {} result per batch index is below the GEMM's {} rows and columns",
            m.len, n.len, options.min_side
        ));
    }
    let threads = if one_block_per_index(batch.iter().map(|d| d.len), options.threads) {
        1
    } else {
        options.threads
    };
    let (split, block) =
        GemmSpec::blocks_for(m.len, n.len, options.min_block, options.max_blocks, threads);
    let spec = GemmSpec {
        name: g.node_label(st.node),
        dtype,
        m: m.len,
        n: n.len,
        k: k.len,
        a: MatrixView {
            offset: a.offset,
            row_stride: m.s[0],
            col_stride: k.s[0],
        },
        b: MatrixView {
            offset: b.offset,
            row_stride: k.s[1],
            col_stride: n.s[1],
        },
        c: MatrixView {
            offset: c.offset,
            row_stride: m.s[2],
            col_stride: n.s[2],
        },
        batch: batch
            .iter()
            .map(|d| BatchAxis {
                len: d.len,
                strides: d.s,
            })
            .collect(),
        lens: [len_of(a.tensor)?, len_of(b.tensor)?, len_of(c.tensor)?],
        split,
        block,
        taps: Vec::new(),
    };
    // The runtime's own checks (bounds, C without aliasing), so a plan that would fail them
    // falls back to the JIT here rather than failing at run time.
    weft_runtime::GemmCall::new(spec.clone()).map_err(|e| e.to_string())?;
    Ok((spec, [a.tensor, b.tensor, c.tensor]))
}
