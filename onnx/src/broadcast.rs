//! NumPy broadcasting as axis identity: operands aligned from the right become views over one
//! set of axes, so weft's elementwise ops (which pair by axis) compute what ONNX's (which pair
//! by position) do.
//!
//! Assumes: operands of one node. Guarantees: per output position, the axis is the first
//! operand's whose dim there is not a broadcast 1 (an unbound length counts as not 1); every
//! operand dim of the same length is relabelled to it, every broadcast 1 is dropped (weft
//! broadcasts over a missing axis); two known lengths that are neither equal nor 1 are a
//! [`ImportError::Shape`] naming both shapes.

use crate::context::Cx;
use crate::error::ImportError;
use crate::value::Value;
use weft_ir::{Axis, NodeId};

/// The operands as nodes over the broadcast axes, and those axes in positional order.
pub fn broadcast(
    cx: &mut Cx,
    operands: &[&Value],
) -> Result<(Vec<NodeId>, Vec<Axis>), ImportError> {
    let rank = operands.iter().map(|v| v.rank()).max().unwrap_or(0);
    let mut out: Vec<Axis> = Vec::with_capacity(rank);
    for i in 0..rank {
        out.push(pick(cx, operands, rank, i)?);
    }
    // An axis chosen at two positions (two operands' own axes) is two dims: the later one
    // gets an axis of its own.
    for i in 0..out.len() {
        if out[..i].contains(&out[i]) {
            let len = cx.len(out[i]);
            out[i] = cx.fresh("b", len, Vec::new());
        }
    }
    let mut nodes = Vec::with_capacity(operands.len());
    for v in operands {
        nodes.push(onto(cx, v, &out)?.node);
    }
    Ok((nodes, out))
}

/// The output axis at position `i` of `rank`.
fn pick(cx: &Cx, operands: &[&Value], rank: usize, i: usize) -> Result<Axis, ImportError> {
    let dims: Vec<(Axis, Option<usize>)> = operands
        .iter()
        .filter_map(|v| {
            let off = rank - v.rank();
            (i >= off).then(|| {
                let a = v.axes[i - off];
                (a, cx.len(a))
            })
        })
        .collect();
    let known_big: Vec<usize> = dims
        .iter()
        .filter_map(|(_, l)| *l)
        .filter(|l| *l != 1)
        .collect();
    if let Some(first) = known_big.first() {
        if known_big.iter().any(|l| l != first) {
            return Err(shape_mismatch(cx, operands));
        }
    }
    let chosen = dims
        .iter()
        .find(|(_, l)| matches!(l, Some(n) if *n != 1))
        .or_else(|| dims.iter().find(|(_, l)| l.is_none()))
        .or_else(|| dims.first())
        .map(|(a, _)| *a)
        .expect("position inside the broadcast rank has an operand");
    Ok(chosen)
}

fn shape_mismatch(cx: &Cx, operands: &[&Value]) -> ImportError {
    let shapes: Vec<String> = operands
        .iter()
        .map(|v| {
            let dims: Vec<String> = cx
                .dims(v)
                .iter()
                .zip(&v.axes)
                .map(|(l, a)| match l {
                    Some(n) => n.to_string(),
                    None => cx.g.axis_name(*a),
                })
                .collect();
            format!("[{}]", dims.join(", "))
        })
        .collect();
    cx.shape_err(format!(
        "shapes {} do not broadcast (aligned from the right, each dim must be equal or 1)",
        shapes.join(" and ")
    ))
}

/// `v` as a view over (a suffix of) `out`: broadcast 1s dropped, the rest relabelled.
pub fn onto(cx: &mut Cx, v: &Value, out: &[Axis]) -> Result<Value, ImportError> {
    let off = out.len() - v.rank();
    let mut drop = Vec::new();
    let mut target = Vec::new();
    for (j, a) in v.axes.iter().enumerate() {
        let o = out[off + j];
        if cx.len(*a) == Some(1) && cx.len(o) != Some(1) {
            drop.push(j);
        } else {
            target.push(o);
        }
    }
    let dropped = cx.drop_units(v, &drop)?;
    cx.relabel(&dropped, &target)
}
