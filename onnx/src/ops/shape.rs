//! Ops that move or reshape data without computing on it, and the shape arithmetic around
//! them: `Constant`, `ConstantOfShape`, `Shape`, `Identity`, `Dropout` (inference), `Reshape`,
//! `Flatten`, `Transpose`, `Unsqueeze`, `Squeeze`, `Concat`, `Slice`, `Gather` (known
//! indices), `Split`, `Pad` (constant), `Expand`.
//!
//! A reshape becomes weft's flatten and unflatten of derived axes: the dims are grouped into
//! runs with equal products, a run of several input dims is flattened into one axis, and an
//! axis that splits is relabelled as the flattening of the new axes and unflattened.

use crate::context::Cx;
use crate::error::ImportError;
use crate::ops::fold;
use crate::proto;
use crate::value::Value;
use weft_ir::{ArrayData, Axis, AxisDef, AxisSlice, DType, Scalar, SliceRange};

/// `Constant`: the `value` tensor, or one of the `value_*` attributes.
pub fn constant(cx: &mut Cx) -> Result<Value, ImportError> {
    let a = cx.attrs();
    if let Some(t) = a.tensor("value")? {
        let (dims, data) = proto::tensor_data(t, None)?;
        return cx.constant(&dims, data);
    }
    if a.has("value_float") {
        let f = a.float("value_float", 0.0)?;
        return cx.constant(&[], ArrayData::F32(vec![f]));
    }
    if a.has("value_int") {
        let i = a.int("value_int", 0)?;
        return cx.constant(&[], ArrayData::I64(vec![i]));
    }
    if let Some(v) = a.floats("value_floats")? {
        return cx.constant(&[v.len()], ArrayData::F32(v));
    }
    if let Some(v) = a.ints("value_ints")? {
        return cx.constant(&[v.len()], ArrayData::I64(v));
    }
    Err(cx.unsupported(
        "a Constant without a dense `value` (sparse and string constants are not imported)".into(),
    ))
}

/// Non-negative lengths from a known shape tensor.
fn lengths(cx: &Cx, dims: &[i64], what: &str) -> Result<Vec<usize>, ImportError> {
    dims.iter()
        .map(|d| {
            usize::try_from(*d)
                .map_err(|_| cx.malformed(format!("{what} has a negative length {d}")))
        })
        .collect()
}

/// `ConstantOfShape(value)`: a fill, never materialised when large.
pub fn constant_of_shape(cx: &mut Cx) -> Result<Value, ImportError> {
    let shape = cx.known_ints(0, "the shape")?.unwrap_or_default();
    let shape = lengths(cx, &shape, "the shape")?;
    let (dtype, value) = match cx.attrs().tensor("value")? {
        None => (DType::F32, Scalar::Float(0.0)),
        Some(t) => {
            let (_, data) = proto::tensor_data(t, None)?;
            let s = match &data {
                ArrayData::F32(v) => v.first().map(|x| Scalar::Float(*x as f64)),
                ArrayData::F64(v) => v.first().map(|x| Scalar::Float(*x)),
                ArrayData::I32(v) => v.first().map(|x| Scalar::Int(*x as i64)),
                ArrayData::I64(v) => v.first().map(|x| Scalar::Int(*x)),
                ArrayData::Bool(v) => v.first().map(|x| Scalar::Bool(*x)),
            };
            let s = s.ok_or_else(|| cx.malformed("`value` holds no element".into()))?;
            (data.dtype(), s)
        }
    };
    if weft_ir::size::tensor_size(dtype, &shape).is_none() {
        return Err(cx.shape_err(format!(
            "shape {shape:?} holds more bytes than a tensor may"
        )));
    }
    cx.fill(&shape, dtype, value)
}

/// `Shape(start, end)`: the lengths, known at import.
pub fn shape(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let dims = cx.fixed_dims(&x, "Shape")?;
    let rank = dims.len() as i64;
    let a = cx.attrs();
    let clamp = |v: i64| (if v < 0 { v + rank } else { v }).clamp(0, rank) as usize;
    let start = clamp(a.int("start", 0)?);
    let end = clamp(a.int("end", rank)?);
    let dims: Vec<i64> = dims[start..end.max(start)]
        .iter()
        .map(|d| *d as i64)
        .collect();
    cx.constant(&[dims.len()], ArrayData::I64(dims))
}

/// `Size`: the element count.
pub fn size(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let dims = cx.fixed_dims(&x, "Size")?;
    cx.constant(
        &[],
        ArrayData::I64(vec![dims.iter().product::<usize>() as i64]),
    )
}

/// `Transpose(perm)`: the positions permuted; no data moves until an op needs another order.
pub fn transpose(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let perm = match cx.attrs().ints("perm")? {
        Some(p) => p,
        None => (0..x.rank() as i64).rev().collect(),
    };
    if perm.len() != x.rank() {
        return Err(cx.malformed(format!("perm {perm:?} for a tensor of rank {}", x.rank())));
    }
    let mut seen = vec![false; x.rank()];
    let mut axes = Vec::with_capacity(x.rank());
    for p in &perm {
        let i = cx.position(*p, x.rank())?;
        if std::mem::replace(&mut seen[i], true) {
            return Err(cx.malformed(format!("perm {perm:?} is not a permutation")));
        }
        axes.push(x.axes[i]);
    }
    Ok(Value {
        axes,
        known: None,
        ..x
    })
}

/// The target of `Reshape`: `0` copies the input's length (unless `allowzero`), `-1` is
/// inferred. Entries are `Ok(len)` or `Err(position)` for a copied input axis.
fn reshape_target(
    cx: &Cx,
    x: &Value,
    spec: &[i64],
) -> Result<Vec<Result<usize, usize>>, ImportError> {
    let allowzero = cx.attrs().int("allowzero", 0)? != 0;
    let mut out: Vec<Result<usize, usize>> = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, d) in spec.iter().enumerate() {
        match *d {
            0 if !allowzero => {
                if i >= x.rank() {
                    return Err(cx.malformed(format!(
                        "shape {spec:?} copies dim {i} of a tensor of rank {}",
                        x.rank()
                    )));
                }
                out.push(Err(i));
            }
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(Ok(1));
            }
            d if d >= 0 => out.push(Ok(d as usize)),
            _ => return Err(cx.malformed(format!("shape {spec:?} has an invalid entry {d}"))),
        }
    }
    if let Some(i) = infer {
        // The copied axes cancel between the two counts, so they need no length.
        let copied: Vec<usize> = out.iter().filter_map(|e| e.err()).collect();
        let rest: Vec<Axis> = x
            .axes
            .iter()
            .enumerate()
            .filter(|(j, _)| !copied.contains(j))
            .map(|(_, a)| *a)
            .collect();
        let rest_value = Value {
            axes: rest,
            known: None,
            ..x.clone()
        };
        let total: usize = cx
            .fixed_dims(&rest_value, "Reshape's inferred dim")?
            .iter()
            .product();
        let known: usize = out.iter().filter_map(|e| e.ok()).product();
        if known == 0 || !total.is_multiple_of(known) {
            return Err(cx.shape_err(format!("cannot reshape {} elements into {spec:?}", total)));
        }
        out[i] = Ok(total / known);
    }
    Ok(out)
}

/// `Reshape` (shape from input 1, or the `shape` attribute before opset 5).
pub fn reshape(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let spec = if cx.opset() < 5 {
        cx.attrs().ints("shape")?.unwrap_or_default()
    } else {
        cx.known_ints(1, "the shape")?
            .ok_or_else(|| cx.malformed("input 1 (the shape) is required".into()))?
    };
    let target = reshape_target(cx, &x, &spec)?;
    let mut v = reshape_to(cx, &x, &target)?;
    v.known = x.known.clone();
    Ok(v)
}

/// `x` reshaped to `target` (lengths, or copies of input positions).
fn reshape_to(
    cx: &mut Cx,
    x: &Value,
    target: &[Result<usize, usize>],
) -> Result<Value, ImportError> {
    // A prefix of copied axes stays as it is; a copy after it is the length it copies.
    let keep = target
        .iter()
        .enumerate()
        .take_while(|(i, t)| **t == Err(*i))
        .count();
    let target: Vec<Result<usize, usize>> = target
        .iter()
        .enumerate()
        .map(|(k, t)| match *t {
            Err(i) if k >= keep => cx.len(x.axes[i]).ok_or(i),
            other => other,
        })
        .collect();
    if target[keep..].iter().any(|t| t.is_err()) {
        return Err(cx.unsupported(format!(
            "a reshape that copies a symbolic input dim (0) after a fixed one ({:?})",
            target
        )));
    }
    let out_lens: Vec<usize> = target[keep..].iter().map(|t| t.unwrap_or(0)).collect();
    let tail = Value {
        axes: x.axes[keep..].to_vec(),
        known: None,
        ..x.clone()
    };
    let in_lens = cx.fixed_dims(&tail, "Reshape")?;
    let (a, b): (usize, usize) = (in_lens.iter().product(), out_lens.iter().product());
    if a != b {
        return Err(cx.shape_err(format!(
            "cannot reshape {in_lens:?} ({a} elements) into {out_lens:?} ({b})"
        )));
    }
    if a == 0 {
        return Err(cx.unsupported("a reshape of an empty tensor".into()));
    }
    // Units are dropped first and put back last; the rest is grouped by equal products.
    let units: Vec<usize> = (0..in_lens.len())
        .filter(|i| in_lens[*i] == 1)
        .map(|i| i + keep)
        .collect();
    let mut v = cx.drop_units(x, &units)?;
    let ins: Vec<usize> = in_lens.iter().copied().filter(|l| *l != 1).collect();
    let outs: Vec<usize> = out_lens.iter().copied().filter(|l| *l != 1).collect();
    let mut pos = keep;
    let (mut i, mut j) = (0, 0);
    while i < ins.len() {
        let (i0, j0) = (i, j);
        let (mut pi, mut po) = (ins[i], outs[j]);
        while pi != po {
            if pi < po {
                i += 1;
                pi *= ins[i];
            } else {
                j += 1;
                po *= outs[j];
            }
        }
        i += 1;
        j += 1;
        v = regroup(cx, &v, pos, i - i0, &outs[j0..j])?;
        pos += j - j0;
    }
    for (k, len) in out_lens.iter().enumerate() {
        if *len == 1 {
            v = cx.insert_unit(&v, keep + k)?;
        }
    }
    Ok(v)
}

/// The `n` axes of `v` from position `pos` become axes of lengths `outs`.
fn regroup(
    cx: &mut Cx,
    v: &Value,
    pos: usize,
    n: usize,
    outs: &[usize],
) -> Result<Value, ImportError> {
    let mut v = if n > 1 {
        merge(cx, v, pos, n)?
    } else {
        v.clone()
    };
    if outs.len() > 1 {
        let parts: Vec<Axis> = outs
            .iter()
            .enumerate()
            .map(|(k, l)| cx.fresh(&format!("r{k}"), Some(*l), Vec::new()))
            .collect();
        let flat = cx.g.derived_axis(AxisDef::Flatten(parts.clone()));
        let mut to = v.axes.clone();
        to[pos] = flat;
        v = cx.relabel(&v, &to)?;
        let r = cx.g.unflatten(v.node, flat);
        let node = cx.ok(r)?;
        let mut axes = v.axes[..pos].to_vec();
        axes.extend_from_slice(&parts);
        axes.extend_from_slice(&v.axes[pos + 1..]);
        v = cx.value(node, axes);
    }
    Ok(v)
}

/// `Flatten(axis)`: the dims before `axis` into one, the rest into another.
pub fn flatten(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let axis = cx.attrs().int("axis", 1)?;
    let split = if axis == x.rank() as i64 {
        x.rank()
    } else {
        cx.position(axis, x.rank().max(1))?
    };
    let mut v = x.clone();
    // The second group first, so the first group's positions stay put.
    v = merge(cx, &v, split, x.rank() - split)?;
    merge(cx, &v, 0, split)
}

/// The `n` axes from `pos` merged into one (a new unit axis when `n` is 0).
fn merge(cx: &mut Cx, v: &Value, pos: usize, n: usize) -> Result<Value, ImportError> {
    match n {
        0 => cx.insert_unit(v, pos),
        1 => Ok(v.clone()),
        _ => {
            let node = cx.ordered(v)?;
            let group: Vec<Axis> = v.axes[pos..pos + n].to_vec();
            let r = cx.g.flatten(node, &group);
            let node = cx.ok(r)?;
            let merged = cx.g.node(node).axes.as_slice()[pos];
            let mut axes = v.axes[..pos].to_vec();
            axes.push(merged);
            axes.extend_from_slice(&v.axes[pos + n..]);
            Ok(cx.value(node, axes))
        }
    }
}

/// The `axes` of `Unsqueeze`/`Squeeze`/`Reduce*`: an attribute before `since`, an input from it.
pub fn axes_arg(cx: &Cx, since: i64, input: usize) -> Result<Option<Vec<i64>>, ImportError> {
    if cx.opset() < since {
        cx.attrs().ints("axes")
    } else {
        cx.known_ints(input, "the axes")
    }
}

/// `Unsqueeze`: new unit axes at the listed positions of the output.
pub fn unsqueeze(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let axes = axes_arg(cx, 13, 1)?.ok_or_else(|| cx.malformed("`axes` is required".into()))?;
    let rank = x.rank() + axes.len();
    let mut pos: Vec<usize> = axes
        .iter()
        .map(|a| cx.position(*a, rank))
        .collect::<Result<_, _>>()?;
    pos.sort_unstable();
    if pos.windows(2).any(|w| w[0] == w[1]) {
        return Err(cx.malformed(format!("axes {axes:?} repeat a position")));
    }
    let mut v = x.clone();
    for p in pos {
        v = cx.insert_unit(&v, p)?;
    }
    v.known = x.known.clone();
    Ok(v)
}

/// `Squeeze`: the listed unit axes (every unit axis when none are listed) dropped.
pub fn squeeze(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let dims = cx.dims(&x);
    let pos: Vec<usize> = match axes_arg(cx, 13, 1)? {
        Some(axes) => {
            let pos: Vec<usize> = axes
                .iter()
                .map(|a| cx.position(*a, x.rank()))
                .collect::<Result<_, _>>()?;
            if let Some(p) = pos.iter().find(|p| dims[**p] != Some(1)) {
                return Err(cx.shape_err(format!("dim {p} has length {:?}, not 1", dims[*p])));
            }
            pos
        }
        None => (0..x.rank()).filter(|i| dims[*i] == Some(1)).collect(),
    };
    let mut v = cx.drop_units(&x, &pos)?;
    v.known = x.known.clone();
    Ok(v)
}

/// `Identity`, and `Dropout` at inference: the input itself. A `Dropout` whose mask output is
/// read gets an all-true mask.
pub fn identity(cx: &mut Cx) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(0)?;
    if cx.at.op == "Dropout" && cx.opset() >= 12 {
        if let Some(t) = cx.known_ints(2, "training_mode")? {
            if t.first().copied().unwrap_or(0) != 0 {
                return Err(cx.unsupported(
                    "Dropout in training mode (weft imports models for inference)".into(),
                ));
            }
        }
    }
    let mut out = vec![x.clone()];
    if cx.node.output.len() > 1 && !cx.node.output[1].is_empty() {
        let dims = cx.fixed_dims(&x, "Dropout's mask")?;
        let mask = cx.fill(&dims, DType::Bool, Scalar::Bool(true))?;
        out.push(cx.relabel(&mask, &x.axes)?);
    }
    Ok(out)
}

/// `Concat(axis)`: the other dims relabelled onto the first input's, the concatenated ones
/// joined into a derived axis.
pub fn concat(cx: &mut Cx) -> Result<Value, ImportError> {
    let parts: Vec<Value> = (0..cx.inputs.len())
        .map(|i| cx.input(i))
        .collect::<Result<_, _>>()?;
    let first = parts
        .first()
        .ok_or_else(|| cx.malformed("Concat needs an input".into()))?
        .clone();
    // Before opset 4, the axis defaults to 1.
    let default = if cx.opset() < 4 { 1 } else { 0 };
    let axis = cx.position(cx.attrs().int("axis", default)?, first.rank().max(1))?;
    if first.rank() == 0 {
        return Err(cx.malformed("Concat of scalars (rank 0)".into()));
    }
    let mut nodes = Vec::with_capacity(parts.len());
    let mut used: Vec<Axis> = Vec::new();
    for p in &parts {
        if p.rank() != first.rank() {
            return Err(cx.shape_err(format!("inputs of rank {} and {}", first.rank(), p.rank())));
        }
        let mut to = first.axes.clone();
        // Each part keeps an axis of its own along `axis` (two parts may share one).
        to[axis] = if used.contains(&p.axes[axis])
            || (first.axes.contains(&p.axes[axis]) && p.axes[axis] != first.axes[axis])
        {
            let len = cx.len(p.axes[axis]);
            cx.fresh("c", len, Vec::new())
        } else {
            p.axes[axis]
        };
        if p.axes[axis] == first.axes[axis] && !used.is_empty() {
            let len = cx.len(p.axes[axis]);
            to[axis] = cx.fresh("c", len, Vec::new());
        }
        used.push(to[axis]);
        let dims = (cx.dims(p), cx.dims(&first));
        for k in 0..to.len() {
            if k != axis && dims.0[k].is_some() && dims.1[k].is_some() && dims.0[k] != dims.1[k] {
                return Err(cx.shape_err(format!(
                    "dim {k}: lengths {:?} and {:?}",
                    dims.1[k], dims.0[k]
                )));
            }
        }
        let v = cx.relabel(p, &to)?;
        nodes.push((v.node, to[axis]));
    }
    if nodes.len() == 1 {
        return Ok(first);
    }
    let r = cx.g.concat(&nodes);
    let node = cx.ok(r)?;
    let joined =
        cx.g.derived_axis(AxisDef::Concat(nodes.iter().map(|(_, a)| *a).collect()));
    let mut axes = first.axes.clone();
    axes[axis] = joined;
    let mut v = cx.value(node, axes);
    if first.rank() == 1 {
        let all: Option<Vec<i64>> = parts
            .iter()
            .map(|p| p.known_ints())
            .collect::<Option<Vec<_>>>()
            .map(|v| v.concat());
        if parts.iter().all(|p| p.dtype == DType::I64) {
            v.known = all.and_then(fold::ints);
        }
    }
    Ok(v)
}

/// Slice bounds resolved the way ONNX clamps them: `(start, stop, step)` with `stop` `None`
/// for "to the edge".
fn clamp_range(start: i64, end: i64, step: i64, len: usize) -> SliceRange {
    let n = len as i64;
    let norm = |v: i64| if v < 0 { v + n } else { v };
    if step > 0 {
        let s = norm(start).clamp(0, n);
        let e = norm(end).clamp(0, n);
        SliceRange {
            start: Some(s),
            stop: Some(e.max(s)),
            step,
        }
    } else {
        let s = norm(start).clamp(-1, n - 1);
        let e = norm(end).clamp(-1, n - 1);
        // A stop of -1 means "past index 0": the edge.
        SliceRange {
            start: Some(s),
            stop: if e < 0 { None } else { Some(e.min(s)) },
            step,
        }
    }
}

/// `Slice` (bounds from attributes before opset 10, from inputs after).
pub fn slice(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let (starts, ends, axes, steps) = if cx.opset() < 10 {
        let a = cx.attrs();
        (
            a.ints("starts")?.unwrap_or_default(),
            a.ints("ends")?.unwrap_or_default(),
            a.ints("axes")?,
            None,
        )
    } else {
        (
            cx.known_ints(1, "starts")?.unwrap_or_default(),
            cx.known_ints(2, "ends")?.unwrap_or_default(),
            cx.known_ints(3, "axes")?,
            cx.known_ints(4, "steps")?,
        )
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(cx.malformed("starts, ends, axes and steps differ in length".into()));
    }
    let dims = cx.fixed_dims(&x, "Slice")?;
    let mut slices = Vec::new();
    let mut ranges = Vec::new();
    for k in 0..starts.len() {
        let p = cx.position(axes[k], x.rank())?;
        if steps[k] == 0 {
            return Err(cx.malformed("a step of 0".into()));
        }
        let r = clamp_range(starts[k], ends[k], steps[k], dims[p]);
        ranges.push((p, r));
        slices.push((x.axes[p], AxisSlice::Range(r)));
    }
    let node = cx.ordered(&x)?;
    let r = cx.g.slice(node, &slices);
    let node = cx.ok(r)?;
    let axes_out = cx.g.node(node).axes.as_slice().to_vec();
    let mut v = cx.value(node, axes_out);
    if x.rank() == 1 && ranges.len() == 1 {
        if let (Some(data), (_, r)) = (x.known.as_deref(), &ranges[0]) {
            let idx = range_indices(r, dims[0]);
            v.known = fold::gather(data, &idx).map(std::rc::Rc::new);
        }
    }
    Ok(v)
}

fn range_indices(r: &SliceRange, len: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = r
        .start
        .unwrap_or(if r.step > 0 { 0 } else { len as i64 - 1 });
    let stop = r.stop.unwrap_or(if r.step > 0 { len as i64 } else { -1 });
    while (r.step > 0 && i < stop) || (r.step < 0 && i > stop) {
        out.push(i as usize);
        i += r.step;
    }
    out
}

/// `Gather(axis)` with indices known at import: a scalar index pins the axis, a list takes
/// those positions (concatenated slices).
pub fn gather(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let ind = cx.input(1)?;
    let indices = cx.known_ints(1, "the indices")?.unwrap_or_default();
    let axis = cx.position(cx.attrs().int("axis", 0)?, x.rank())?;
    let len = cx.fixed_dims(&x, "Gather")?[axis];
    let idx: Vec<usize> = indices
        .iter()
        .map(|i| {
            let j = if *i < 0 { *i + len as i64 } else { *i };
            usize::try_from(j).ok().filter(|j| *j < len).ok_or_else(|| {
                cx.shape_err(format!("index {i} is outside an axis of length {len}"))
            })
        })
        .collect::<Result<_, _>>()?;
    let known = x.known.as_deref().and_then(|d| {
        let dims = cx.fixed_dims(&x, "Gather").ok()?;
        fold::take(d, &dims, axis, &idx)
    });
    let mut v = if ind.rank() == 0 {
        let node = cx.ordered(&x)?;
        let r =
            cx.g.slice(node, &[(x.axes[axis], AxisSlice::Index(idx[0] as i64))]);
        let node = cx.ok(r)?;
        let mut axes = x.axes.clone();
        axes.remove(axis);
        cx.value(node, axes)
    } else {
        let taken = take_positions(cx, &x, axis, &idx)?;
        // Indices of rank above 1: the taken positions split into the indices' dims.
        let ind_dims = cx.fixed_dims(&ind, "Gather's indices")?;
        if ind_dims.len() > 1 && !idx.is_empty() {
            regroup(cx, &taken, axis, 1, &ind_dims)?
        } else {
            taken
        }
    };
    v.known = known.map(std::rc::Rc::new);
    Ok(v)
}

/// `x` at positions `idx` along `axis` (runs of consecutive positions as one slice).
fn take_positions(
    cx: &mut Cx,
    x: &Value,
    axis: usize,
    idx: &[usize],
) -> Result<Value, ImportError> {
    if idx.is_empty() {
        return Err(cx.unsupported("Gather of no indices (an empty result)".into()));
    }
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for i in idx {
        match runs.last_mut() {
            Some((s, e)) if *e == *i => *e = *i + 1,
            _ => runs.push((*i, *i + 1)),
        }
    }
    let node = cx.ordered(x)?;
    let mut parts = Vec::new();
    for (s, e) in &runs {
        let r = cx.g.slice(
            node,
            &[(
                x.axes[axis],
                AxisSlice::Range(SliceRange::range(*s as i64, *e as i64)),
            )],
        );
        let n = cx.ok(r)?;
        let a = cx.g.node(n).axes.as_slice()[axis];
        parts.push((n, a));
    }
    let (node, joined) = if parts.len() == 1 {
        parts[0]
    } else {
        // The same run twice would be the same derived axis twice: give each its own.
        for k in 1..parts.len() {
            if parts[..k].iter().any(|(_, a)| *a == parts[k].1) {
                let len = cx.len(parts[k].1);
                let fresh = cx.fresh("g", len, Vec::new());
                let mut to = cx.g.node(parts[k].0).axes.as_slice().to_vec();
                to[axis] = fresh;
                let r = cx.g.cast_axes(parts[k].0, &to);
                parts[k] = (cx.ok(r)?, fresh);
            }
        }
        let r = cx.g.concat(&parts);
        let n = cx.ok(r)?;
        (
            n,
            cx.g.derived_axis(AxisDef::Concat(parts.iter().map(|(_, a)| *a).collect())),
        )
    };
    let mut axes = x.axes.clone();
    axes[axis] = joined;
    Ok(cx.value(node, axes))
}

/// `Split(axis, split)`: consecutive slices.
pub fn split(cx: &mut Cx) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(0)?;
    let axis = cx.position(cx.attrs().int("axis", 0)?, x.rank())?;
    let len = cx.fixed_dims(&x, "Split")?[axis];
    let n = cx.node.output.len();
    let sizes: Vec<usize> = match if cx.opset() < 13 {
        cx.attrs().ints("split")?
    } else {
        cx.known_ints(1, "split")?
    } {
        Some(s) => lengths(cx, &s, "split")?,
        None => {
            let parts = cx.attrs().int("num_outputs", n as i64)?.max(1) as usize;
            let each = len.div_ceil(parts);
            (0..parts)
                .map(|k| each.min(len.saturating_sub(k * each)))
                .collect()
        }
    };
    if sizes.iter().sum::<usize>() != len {
        return Err(cx.shape_err(format!(
            "split {sizes:?} does not sum to the axis length {len}"
        )));
    }
    let node = cx.ordered(&x)?;
    let mut out = Vec::new();
    let mut start = 0;
    for s in sizes {
        let r = cx.g.slice(
            node,
            &[(
                x.axes[axis],
                AxisSlice::Range(SliceRange::range(start as i64, (start + s) as i64)),
            )],
        );
        let n = cx.ok(r)?;
        let axes = cx.g.node(n).axes.as_slice().to_vec();
        out.push(cx.value(n, axes));
        start += s;
    }
    Ok(out)
}

/// `Pad` (mode `constant`): weft's zero padding, shifted by the constant; negative pads slice.
pub fn pad(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let mode = cx.attrs().string("mode", "constant")?;
    if mode != "constant" {
        return Err(cx.unsupported(format!("Pad mode `{mode}` (weft pads with a constant)")));
    }
    let (pads, value, axes) = if cx.opset() < 11 {
        let a = cx.attrs();
        (
            a.ints("pads")?.or(a.ints("paddings")?).unwrap_or_default(),
            a.float("value", 0.0)? as f64,
            None,
        )
    } else {
        let pads = cx.known_ints(1, "pads")?.unwrap_or_default();
        let value = match cx.opt_input(2) {
            Some(v) => v
                .known_floats()
                .and_then(|f| f.first().copied())
                .ok_or_else(|| cx.unsupported("a padding value computed at run time".into()))?,
            None => 0.0,
        };
        (pads, value, cx.known_ints(3, "axes")?)
    };
    let axes: Vec<usize> = match axes {
        Some(a) => a
            .iter()
            .map(|p| cx.position(*p, x.rank()))
            .collect::<Result<_, _>>()?,
        None => (0..x.rank()).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(cx.malformed(format!("{} pads for {} axes", pads.len(), axes.len())));
    }
    pad_by(cx, &x, &axes, &pads, value)
}

/// `x` padded (or, negative, cut) along `axes` by `pads` (all befores, then all afters).
pub fn pad_by(
    cx: &mut Cx,
    x: &Value,
    axes: &[usize],
    pads: &[i64],
    value: f64,
) -> Result<Value, ImportError> {
    let k = axes.len();
    let dims = cx.fixed_dims(x, "Pad")?;
    let mut cut = Vec::new();
    let mut grow = Vec::new();
    for (i, p) in axes.iter().enumerate() {
        let (b, e) = (pads[i], pads[k + i]);
        if b < 0 || e < 0 {
            let n = dims[*p] as i64;
            let r = SliceRange::range((-b).max(0), n - (-e).max(0));
            cut.push((x.axes[*p], AxisSlice::Range(r)));
        }
        if b > 0 || e > 0 {
            grow.push((*p, b.max(0) as usize, e.max(0) as usize));
        }
    }
    let mut v = x.clone();
    if !cut.is_empty() {
        let node = cx.ordered(&v)?;
        let r = cx.g.slice(node, &cut);
        let node = cx.ok(r)?;
        let axes = cx.g.node(node).axes.as_slice().to_vec();
        v = cx.value(node, axes);
    }
    if grow.is_empty() {
        return Ok(v);
    }
    let shifted = if value != 0.0 {
        let c = cx.scalar(value, v.dtype)?;
        let r = cx.g.binary(weft_ir::BinaryOp::Subtract, v.node, c);
        let n = cx.ok(r)?;
        cx.value(n, v.axes.clone())
    } else {
        v.clone()
    };
    let node = cx.ordered(&shifted)?;
    let spec: Vec<(Axis, usize, usize)> = grow
        .iter()
        .map(|(p, b, e)| (shifted.axes[*p], *b, *e))
        .collect();
    let r = cx.g.pad(node, &spec);
    let mut node = cx.ok(r)?;
    if value != 0.0 {
        let c = cx.scalar(value, v.dtype)?;
        let r = cx.g.binary(weft_ir::BinaryOp::Add, node, c);
        node = cx.ok(r)?;
    }
    let axes = cx.g.node(node).axes.as_slice().to_vec();
    Ok(cx.value(node, axes))
}

/// `Expand(shape)`: broadcast to a known shape.
pub fn expand(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let shape = cx.known_ints(1, "the shape")?.unwrap_or_default();
    let shape = lengths(cx, &shape, "the shape")?;
    let ones = cx.fill(&shape, x.dtype, Scalar::Int(0))?;
    // x + zeros of the shape: NumPy's broadcast of the two, which is what Expand means.
    crate::ops::elementwise::binary(cx, weft_ir::BinaryOp::Add, &x, &ones)
}
