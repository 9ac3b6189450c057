//! `Gemm` and `MatMul`: the contracted dims relabelled onto one axis, every other dim kept
//! apart (weft's `dot` contracts every axis its operands share). A 2-D product is a `dot`;
//! a batched one is `sum(multiply(a, b), K)` over shared batch axes, which the compiler runs
//! as a contraction (weft-ir's `contraction.rs`).

use crate::context::Cx;
use crate::error::ImportError;
use crate::ops::elementwise::binary;
use crate::value::Value;
use weft_ir::{Axis, BinaryOp, ReduceOp};

/// `v` relabelled so that it shares with `other` exactly the axes `shared` (position → axis
/// of `other`); any other axis it shares gets a fresh one.
fn share_only(
    cx: &mut Cx,
    v: &Value,
    other: &[Axis],
    shared: &[(usize, Axis)],
) -> Result<Value, ImportError> {
    let mut to = v.axes.clone();
    for (p, a) in shared {
        to[*p] = *a;
    }
    for i in 0..to.len() {
        let intended = shared.iter().any(|(p, _)| *p == i);
        if !intended && (other.contains(&to[i]) || to[..i].contains(&to[i])) {
            let len = cx.len(to[i]);
            to[i] = cx.fresh("j", len, Vec::new());
        }
    }
    cx.relabel(v, &to)
}

fn check_len(cx: &Cx, a: Axis, b: Axis) -> Result<(), ImportError> {
    match (cx.len(a), cx.len(b)) {
        (Some(x), Some(y)) if x != y => {
            Err(cx.shape_err(format!("the contracted dims have lengths {x} and {y}")))
        }
        _ => Ok(()),
    }
}

/// `Gemm(alpha, beta, transA, transB)`: `alpha·A'B' + beta·C`.
pub fn gemm(cx: &mut Cx) -> Result<Value, ImportError> {
    let (a, b) = (cx.input(0)?, cx.input(1)?);
    if a.rank() != 2 || b.rank() != 2 {
        return Err(cx.shape_err(format!(
            "A has rank {} and B rank {}; Gemm takes matrices",
            a.rank(),
            b.rank()
        )));
    }
    let at = cx.attrs();
    let (ta, tb) = (at.int("transA", 0)? != 0, at.int("transB", 0)? != 0);
    let (alpha, beta) = (
        at.float("alpha", 1.0)? as f64,
        at.float("beta", 1.0)? as f64,
    );
    let (m, k) = if ta {
        (a.axes[1], a.axes[0])
    } else {
        (a.axes[0], a.axes[1])
    };
    let kb = if tb { 1 } else { 0 };
    check_len(cx, k, b.axes[kb])?;
    let b = share_only(cx, &b, &a.axes, &[(kb, k)])?;
    let n = b.axes[1 - kb];
    let r = cx.g.dot(a.node, b.node);
    let node = cx.ok(r)?;
    let mut y = cx.value(node, vec![m, n]);
    if alpha != 1.0 {
        let s = cx.scalar(alpha, y.dtype)?;
        let r = cx.g.binary(BinaryOp::Multiply, y.node, s);
        let node = cx.ok(r)?;
        y = cx.value(node, y.axes);
    }
    if let Some(c) = cx.opt_input(2) {
        let c = if beta != 1.0 {
            let s = cx.scalar(beta, c.dtype)?;
            let r = cx.g.binary(BinaryOp::Multiply, c.node, s);
            let node = cx.ok(r)?;
            cx.value(node, c.axes)
        } else {
            c
        };
        y = binary(cx, BinaryOp::Add, &y, &c)?;
    }
    Ok(y)
}

/// `MatMul`, NumPy's `matmul`: vectors promoted, batch dims broadcast.
pub fn matmul(cx: &mut Cx) -> Result<Value, ImportError> {
    let (a, b) = (cx.input(0)?, cx.input(1)?);
    if a.rank() == 0 || b.rank() == 0 {
        return Err(cx.shape_err("MatMul of a scalar".into()));
    }
    // Vectors: a's only dim is its row, b's only dim its column; neither is kept.
    let (ka, kb) = (a.rank() - 1, if b.rank() == 1 { 0 } else { b.rank() - 2 });
    check_len(cx, a.axes[ka], b.axes[kb])?;
    let k = a.axes[ka];
    if a.rank() <= 2 && b.rank() <= 2 {
        let b = share_only(cx, &b, &a.axes, &[(kb, k)])?;
        let r = cx.g.dot(a.node, b.node);
        let node = cx.ok(r)?;
        let mut axes: Vec<Axis> = a.axes[..ka].to_vec();
        if b.rank() == 2 {
            axes.push(b.axes[1]);
        }
        return Ok(cx.value(node, axes));
    }
    batched(cx, &a, &b, ka, kb)
}

/// A batched product as a sum of products over shared batch axes.
fn batched(cx: &mut Cx, a: &Value, b: &Value, ka: usize, kb: usize) -> Result<Value, ImportError> {
    let (ba, bb) = (a.rank().saturating_sub(2), b.rank().saturating_sub(2));
    let rank = ba.max(bb);
    let (mut a, mut b) = (a.clone(), b.clone());
    let mut shared: Vec<(usize, Axis)> = vec![(kb, a.axes[ka])];
    let mut batch: Vec<Axis> = Vec::with_capacity(rank);
    let (mut drop_a, mut drop_b) = (Vec::new(), Vec::new());
    for i in 0..rank {
        let pa = (i + ba).checked_sub(rank).filter(|_| i + ba >= rank);
        let pb = (i + bb).checked_sub(rank).filter(|_| i + bb >= rank);
        match (pa, pb) {
            (Some(p), Some(q)) => {
                let (la, lb) = (cx.len(a.axes[p]), cx.len(b.axes[q]));
                if la == Some(1) && lb != Some(1) {
                    drop_a.push(p);
                    batch.push(b.axes[q]);
                } else if lb == Some(1) && la != Some(1) {
                    drop_b.push(q);
                    batch.push(a.axes[p]);
                } else if la.is_some() && lb.is_some() && la != lb {
                    return Err(cx.shape_err(format!(
                        "batch dims of lengths {la:?} and {lb:?} do not broadcast"
                    )));
                } else {
                    shared.push((q, a.axes[p]));
                    batch.push(a.axes[p]);
                }
            }
            (Some(p), None) => batch.push(a.axes[p]),
            (None, Some(q)) => batch.push(b.axes[q]),
            (None, None) => unreachable!("a batch position belongs to an operand"),
        }
    }
    let m = (a.rank() >= 2).then(|| a.axes[a.rank() - 2]);
    b = share_only(cx, &b, &a.axes, &shared)?;
    let n = (b.rank() >= 2).then(|| b.axes[b.rank() - 1]);
    // Batch positions b kept where a broadcasts are b's own axes: keep the names b now has.
    for (i, ax) in batch.iter_mut().enumerate() {
        if let Some(q) = (i + bb).checked_sub(rank).filter(|_| i + bb >= rank) {
            if !shared.iter().any(|(p, _)| *p == q) && !drop_b.contains(&q) {
                *ax = b.axes[q];
            }
        }
    }
    a = cx.drop_units(&a, &drop_a)?;
    b = cx.drop_units(&b, &drop_b)?;
    let r = cx.g.binary(BinaryOp::Multiply, a.node, b.node);
    let prod = cx.ok(r)?;
    let mut out = batch;
    out.extend(m);
    out.extend(n);
    let r = cx.g.reduce(ReduceOp::Sum, prod, &[shared[0].1], Some(&out));
    let node = cx.ok(r)?;
    Ok(cx.value(node, out))
}
