//! Reductions: `ReduceSum/Mean/Max/Min/Prod`, the composed `ReduceL1/L2/SumSquare/LogSum/
//! LogSumExp`, `ArgMax`/`ArgMin`; `keepdims` puts length-1 axes back in place.

use crate::context::Cx;
use crate::error::ImportError;
use crate::ops::elementwise::unary;
use crate::ops::nn::reduce_keep;
use crate::ops::shape::axes_arg;
use crate::value::Value;
use weft_ir::{AxisSlice, BinaryOp, DType, ReduceOp, SliceRange, UnaryOp};

/// `Reduce*` ops.
pub fn reduce(cx: &mut Cx, op_type: &str) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    // ReduceSum took its axes as an input from opset 13, the others from 18.
    let since = if op_type == "ReduceSum" { 13 } else { 18 };
    let axes = axes_arg(cx, since, 1)?;
    let a = cx.attrs();
    let keep = a.int("keepdims", 1)? != 0;
    let noop_empty = a.int("noop_with_empty_axes", 0)? != 0;
    let positions: Vec<usize> = match axes {
        Some(v) if !v.is_empty() => {
            let mut p: Vec<usize> = v
                .iter()
                .map(|a| cx.position(*a, x.rank()))
                .collect::<Result<_, _>>()?;
            p.sort_unstable();
            p.dedup();
            p
        }
        _ if noop_empty => return Ok(x),
        _ => (0..x.rank()).collect(),
    };
    let pre = match op_type {
        "ReduceL1" => Some(UnaryOp::Abs),
        "ReduceL2" | "ReduceSumSquare" => Some(UnaryOp::Square),
        "ReduceLogSumExp" => Some(UnaryOp::Exp),
        _ => None,
    };
    let op = match op_type {
        "ReduceMean" => ReduceOp::Mean,
        "ReduceMax" => ReduceOp::Max,
        "ReduceMin" => ReduceOp::Min,
        "ReduceProd" => ReduceOp::Prod,
        _ => ReduceOp::Sum,
    };
    let input = match pre {
        Some(u) => unary(cx, u, &x)?,
        None => x,
    };
    let mut y = reduce_keep(cx, op, &input, &positions, keep)?;
    let post = match op_type {
        "ReduceL2" => Some(UnaryOp::Sqrt),
        "ReduceLogSum" | "ReduceLogSumExp" => Some(UnaryOp::Log),
        _ => None,
    };
    if let Some(u) = post {
        y = unary(cx, u, &y)?;
    }
    Ok(y)
}

/// `ArgMax` / `ArgMin(axis, keepdims)`: the first extreme's index, as i64.
pub fn arg(cx: &mut Cx, op: ReduceOp) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let a = cx.attrs();
    let last = a.int("select_last_index", 0)? != 0;
    let p = cx.position(a.int("axis", 0)?, x.rank())?;
    let keep = a.int("keepdims", 1)? != 0;
    if !last {
        return reduce_keep(cx, op, &x, &[p], keep);
    }
    // The last extreme is the first of the axis reversed, counted from the end.
    let len = cx.fixed_len(x.axes[p], "select_last_index")?;
    let node = cx.ordered(&x)?;
    let r = cx.g.slice(
        node,
        &[(x.axes[p], AxisSlice::Range(SliceRange::reversed()))],
    );
    let node = cx.ok(r)?;
    let axes = cx.g.node(node).axes.as_slice().to_vec();
    let reversed = cx.value(node, axes);
    let first = reduce_keep(cx, op, &reversed, &[p], keep)?;
    let end = cx.scalar(len as f64 - 1.0, DType::I64)?;
    let r = cx.g.binary(BinaryOp::Subtract, end, first.node);
    let node = cx.ok(r)?;
    Ok(cx.value(node, first.axes))
}
