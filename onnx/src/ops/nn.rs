//! The neural-network ops: `Conv`, `MaxPool`/`AveragePool`, the global pools,
//! `BatchNormalization` (inference), `LRN`, `Softmax`/`LogSoftmax`, `LayerNormalization`.
//!
//! A convolution pairs its operands by role (weft-ir's `convolution.rs`): the input's dims
//! get the roles `Channel` and `Depth`/`Height`/`Width` (added to an axis without roles,
//! otherwise relabelled onto a fresh one), the filter is relabelled onto a `Channelout` axis
//! `K`, the input's channel axis (one group) and spatial axes of its own. Its output channel
//! axis is weft's `features(K)`, which the next convolution contracts.

use crate::context::Cx;
use crate::error::ImportError;
use crate::naming::spatial_roles;
use crate::ops::elementwise::{binary, unary};
use crate::ops::shape::pad_by;
use crate::value::Value;
use weft_ir::{Axis, BinaryOp, ConvSpec, PoolKind, PoolSpec, ReduceOp, Role, UnaryOp};

/// `x` with the roles a convolution or pool reads: none on dim 0, `Channel` on dim 1 (when
/// `channel`), a spatial role on each later dim.
fn with_roles(cx: &mut Cx, x: &Value, channel: bool) -> Result<(Value, Vec<Role>), ImportError> {
    let spatial: Vec<Role> = spatial_roles(x.rank().saturating_sub(2))
        .iter()
        .map(|(r, _)| r.clone())
        .collect();
    if x.rank() < 3 || spatial.is_empty() {
        return Err(cx.unsupported(format!(
            "an input of rank {}; weft convolves and pools over 1 to 3 spatial dims after N and C",
            x.rank()
        )));
    }
    let is_spatial = |r: &Role| matches!(r, Role::Height | Role::Width | Role::Depth | Role::Time);
    let mut to = x.axes.clone();
    for (i, a) in x.axes.iter().enumerate() {
        let has = cx.g.axis_data(a.id).roles.clone();
        let has_spatial: Vec<Role> = has.iter().filter(|r| is_spatial(r)).cloned().collect();
        let has_channel = has.contains(&Role::Channel);
        let (need, ok) = match i {
            0 => (vec![], has_spatial.is_empty() && !has_channel),
            1 if channel => (vec![Role::Channel], has_spatial.is_empty() && has_channel),
            1 => (vec![], has_spatial.is_empty()),
            _ => {
                let r = spatial[i - 2].clone();
                let ok = has_spatial == [r.clone()] && !has_channel;
                (vec![r], ok)
            }
        };
        if ok {
            continue;
        }
        if i > 0 && has_spatial.is_empty() && (i == 1 || !has_channel) {
            // An axis without the roles it needs gets them: the dumps keep its name.
            cx.g.add_roles(a.id, &need);
            continue;
        }
        let name = match i {
            0 => "N".to_string(),
            1 => "C".to_string(),
            _ => spatial_roles(spatial.len())[i - 2].1.to_string(),
        };
        let len = cx.len(*a);
        to[i] = cx.fresh(&name, len, need);
    }
    Ok((cx.relabel(x, &to)?, spatial))
}

/// Per spatial dim: stride, dilation, padding before and after (auto_pad resolved).
struct Window {
    kernel: Vec<usize>,
    strides: Vec<usize>,
    dilations: Vec<usize>,
    pads: Vec<(usize, usize)>,
}

fn window(
    cx: &Cx,
    x: &Value,
    kernel: Vec<usize>,
    default_stride: usize,
) -> Result<Window, ImportError> {
    let k = kernel.len();
    let a = cx.attrs();
    let positive = |v: Option<Vec<i64>>, what: &str| -> Result<Vec<usize>, ImportError> {
        match v {
            None => Ok(vec![default_stride; k]),
            Some(v) if v.len() == k && v.iter().all(|s| *s >= 1) => {
                Ok(v.iter().map(|s| *s as usize).collect())
            }
            Some(v) => Err(cx.malformed(format!("{what} {v:?} for {k} spatial dims"))),
        }
    };
    let strides = positive(a.ints("strides")?, "strides")?;
    let dilations = match a.ints("dilations")? {
        None => vec![1; k],
        d => positive(d, "dilations")?,
    };
    let dims: Vec<usize> = x.axes[2..]
        .iter()
        .map(|a| cx.fixed_len(*a, "the window"))
        .collect::<Result<_, _>>()?;
    let auto = a.string("auto_pad", "NOTSET")?;
    let pads: Vec<(usize, usize)> = match auto.as_str() {
        "NOTSET" => match a.ints("pads")? {
            None => vec![(0, 0); k],
            Some(p) if p.len() == 2 * k && p.iter().all(|v| *v >= 0) => {
                (0..k).map(|i| (p[i] as usize, p[k + i] as usize)).collect()
            }
            Some(p) => return Err(cx.malformed(format!("pads {p:?} for {k} spatial dims"))),
        },
        "VALID" => vec![(0, 0); k],
        "SAME_UPPER" | "SAME_LOWER" => (0..k)
            .map(|i| {
                let len = dims[i];
                let out = len.div_ceil(strides[i]);
                let extent = (kernel[i] - 1) * dilations[i] + 1;
                let total = ((out.max(1) - 1) * strides[i] + extent).saturating_sub(len);
                let small = total / 2;
                if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                }
            })
            .collect(),
        other => return Err(cx.malformed(format!("auto_pad `{other}`"))),
    };
    Ok(Window {
        kernel,
        strides,
        dilations,
        pads,
    })
}

/// `Conv` with an optional bias.
pub fn conv(cx: &mut Cx) -> Result<Value, ImportError> {
    let (x, w) = (cx.input(0)?, cx.input(1)?);
    let (x, roles) = with_roles(cx, &x, true)?;
    if w.rank() != x.rank() {
        return Err(cx.shape_err(format!(
            "a filter of rank {} for an input of rank {}",
            w.rank(),
            x.rank()
        )));
    }
    let wdims = cx.fixed_dims(&w, "the filter")?;
    let group = cx.attrs().int("group", 1)?;
    let group = usize::try_from(group)
        .ok()
        .filter(|g| *g >= 1)
        .ok_or_else(|| cx.malformed(format!("group {group}")))?;
    let win = window(cx, &x, wdims[2..].to_vec(), 1)?;
    if let Some(k) = cx.attrs().ints("kernel_shape")? {
        if k.iter().map(|v| *v as usize).collect::<Vec<_>>() != win.kernel {
            return Err(cx.shape_err(format!(
                "kernel_shape {k:?} but the filter's spatial dims are {:?}",
                win.kernel
            )));
        }
    }
    let out_channels = cx.fresh("K", Some(wdims[0]), vec![Role::Channelout]);
    let in_channels = if group == 1 {
        x.axes[1]
    } else {
        cx.fresh("Cg", Some(wdims[1]), vec![Role::Channel])
    };
    let mut faxes = vec![out_channels, in_channels];
    let tap_names = ["Q", "R", "S"];
    for (i, role) in roles.iter().enumerate() {
        let name = tap_names[3 - roles.len() + i];
        faxes.push(cx.fresh(name, Some(wdims[2 + i]), vec![role.clone()]));
    }
    let filter = cx.relabel(&w, &faxes)?;
    let mut spec = ConvSpec::new().groups(group);
    for (i, role) in roles.iter().enumerate() {
        spec = spec
            .stride(role.clone(), win.strides[i])
            .dilation(role.clone(), win.dilations[i])
            .pad(role.clone(), win.pads[i].0, win.pads[i].1);
    }
    let xn = cx.ordered(&x)?;
    let r = cx.g.convolution(xn, filter.node, &spec);
    let node = cx.ok(r)?;
    let axes: Vec<Axis> = cx.g.node(node).axes.as_slice().to_vec();
    name_outputs(cx, &axes, true);
    let y = cx.value(node, axes);
    match cx.opt_input(2) {
        None => Ok(y),
        Some(b) => {
            let b = cx.relabel(&b, &[y.axes[1]])?;
            let r = cx.g.binary(BinaryOp::Add, y.node, b.node);
            let node = cx.ok(r)?;
            Ok(cx.value(node, y.axes))
        }
    }
}

/// Short names for a convolution's or pool's new axes: `C1`, `H1`, `W1`, ... (weft names
/// a derived axis by its derivation, which grows with the depth of the network).
fn name_outputs(cx: &mut Cx, axes: &[Axis], features: bool) {
    let spatial = spatial_roles(axes.len().saturating_sub(2));
    if features {
        cx.namer.name_derived(cx.g, axes[1], "C");
    }
    for (a, (_, letter)) in axes[2..].iter().zip(spatial) {
        cx.namer.name_derived(cx.g, *a, letter);
    }
}

/// `MaxPool` and `AveragePool`.
pub fn pool(cx: &mut Cx, kind: PoolKind) -> Result<Value, ImportError> {
    if cx.node.output.len() > 1 && !cx.node.output[1].is_empty() {
        return Err(cx.unsupported("MaxPool's Indices output".into()));
    }
    let x = cx.input(0)?;
    let (mut x, roles) = with_roles(cx, &x, false)?;
    let kernel: Vec<usize> = cx
        .attrs()
        .ints("kernel_shape")?
        .ok_or_else(|| cx.malformed("`kernel_shape` is required".into()))?
        .iter()
        .map(|k| {
            usize::try_from(*k)
                .ok()
                .filter(|k| *k >= 1)
                .ok_or_else(|| cx.malformed(format!("kernel length {k}")))
        })
        .collect::<Result<_, _>>()?;
    if kernel.len() != roles.len() {
        return Err(cx.shape_err(format!(
            "kernel_shape {kernel:?} for {} spatial dims",
            roles.len()
        )));
    }
    let mut win = window(cx, &x, kernel, 1)?;
    let a = cx.attrs();
    let include_pad = kind == PoolKind::Avg && a.int("count_include_pad", 0)? != 0;
    let ceil = a.int("ceil_mode", 0)? != 0;
    let dims: Vec<usize> = x.axes[2..]
        .iter()
        .map(|a| cx.fixed_len(*a, "the pool"))
        .collect::<Result<_, _>>()?;
    // The windows ceil mode adds past the end: padding never counted, even with
    // count_include_pad (ONNX's and PyTorch's divisor stops at the padded input's end).
    let mut overhang = vec![0usize; roles.len()];
    if ceil {
        for (i, len) in dims.iter().copied().enumerate() {
            let s = win.strides[i];
            let extent = (win.kernel[i] - 1) * win.dilations[i] + 1;
            let padded = len + win.pads[i].0 + win.pads[i].1;
            if padded < extent {
                continue;
            }
            let mut out = (padded - extent).div_ceil(s) + 1;
            // The last window starts inside the input or its leading padding.
            if (out - 1) * s >= len + win.pads[i].0 {
                out -= 1;
            }
            let need = (out - 1) * s + extent;
            overhang[i] = need.saturating_sub(padded);
        }
    }
    if include_pad && win.pads.iter().any(|p| *p != (0, 0)) {
        let positions: Vec<usize> = (2..x.rank()).collect();
        let pads: Vec<i64> = win
            .pads
            .iter()
            .map(|p| p.0 as i64)
            .chain(win.pads.iter().map(|p| p.1 as i64))
            .collect();
        x = pad_by(cx, &x, &positions, &pads, 0.0)?;
        let (px, _) = with_roles(cx, &x, false)?;
        x = px;
        win.pads = vec![(0, 0); roles.len()];
    }
    for (p, extra) in win.pads.iter_mut().zip(&overhang) {
        p.1 += extra;
    }
    let mut spec = PoolSpec::new(kind);
    for (i, role) in roles.iter().enumerate() {
        spec = spec
            .window(role.clone(), win.kernel[i])
            .stride(role.clone(), win.strides[i])
            .dilation(role.clone(), win.dilations[i])
            .pad(role.clone(), win.pads[i].0, win.pads[i].1);
    }
    let xn = cx.ordered(&x)?;
    let r = cx.g.pool(xn, &spec);
    let node = cx.ok(r)?;
    let axes = cx.g.node(node).axes.as_slice().to_vec();
    name_outputs(cx, &axes, false);
    Ok(cx.value(node, axes))
}

/// `GlobalAveragePool` / `GlobalMaxPool`: a mean or max over every spatial dim, kept as 1s.
pub fn global_pool(cx: &mut Cx, op: ReduceOp) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    if x.rank() < 3 {
        return Err(cx.unsupported(format!("an input of rank {}", x.rank())));
    }
    reduce_keep(cx, op, &x, &(2..x.rank()).collect::<Vec<_>>(), true)
}

/// `op` over the dims at `positions`, kept as 1s when `keep`.
pub fn reduce_keep(
    cx: &mut Cx,
    op: ReduceOp,
    x: &Value,
    positions: &[usize],
    keep: bool,
) -> Result<Value, ImportError> {
    let red: Vec<Axis> = positions.iter().map(|p| x.axes[*p]).collect();
    let rest = x.axes_except(positions);
    let r = cx.g.reduce(op, x.node, &red, Some(&rest));
    let node = cx.ok(r)?;
    let mut v = cx.value(node, rest);
    if keep {
        let mut sorted = positions.to_vec();
        sorted.sort_unstable();
        for p in sorted {
            v = cx.insert_unit(&v, p)?;
        }
    }
    Ok(v)
}

/// A per-channel vector relabelled onto `x`'s channel axis (dim 1).
fn per_channel(cx: &mut Cx, x: &Value, i: usize) -> Result<Value, ImportError> {
    let v = cx.input(i)?;
    if v.rank() != 1 {
        return Err(cx.shape_err(format!(
            "input {i} has rank {}; BatchNormalization takes one value per channel",
            v.rank()
        )));
    }
    cx.relabel(&v, &[x.axes[1]])
}

/// `BatchNormalization` at inference: `(x − mean)·scale/√(var + ε) + B`, per channel.
pub fn batch_norm(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let a = cx.attrs();
    if a.int("training_mode", 0)? != 0 || cx.node.output.iter().skip(1).any(|o| !o.is_empty()) {
        return Err(cx.unsupported(
            "BatchNormalization in training mode (weft imports models for inference)".into(),
        ));
    }
    if a.int("spatial", 1)? != 1 {
        return Err(cx.unsupported("BatchNormalization with spatial = 0".into()));
    }
    let eps = a.float("epsilon", 1e-5)? as f64;
    if x.rank() < 2 {
        return Err(cx.shape_err(format!("an input of rank {}", x.rank())));
    }
    let [scale, bias, mean, var] = [1, 2, 3, 4].map(|i| per_channel(cx, &x, i));
    let (scale, bias, mean, var) = (scale?, bias?, mean?, var?);
    let e = cx.scalar(eps, x.dtype)?;
    let r = cx.g.binary(BinaryOp::Add, var.node, e);
    let ve = cx.ok(r)?;
    let r = cx.g.unary(UnaryOp::Sqrt, ve);
    let sd = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Divide, scale.node, sd);
    let factor = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Multiply, mean.node, factor);
    let shift = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Subtract, bias.node, shift);
    let offset = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Multiply, x.node, factor);
    let y = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Add, y, offset);
    let y = cx.ok(r)?;
    Ok(cx.value(y, x.axes))
}

/// `LRN`: `x / (bias + alpha/size · Σ x²)^beta`, the sum over `size` neighbouring channels.
pub fn lrn(cx: &mut Cx) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    let a = cx.attrs();
    let size = a.int("size", 0)?;
    let size = usize::try_from(size)
        .ok()
        .filter(|s| *s >= 1)
        .ok_or_else(|| cx.malformed(format!("size {size}")))?;
    let (alpha, beta, bias) = (
        a.float("alpha", 1e-4)? as f64,
        a.float("beta", 0.75)? as f64,
        a.float("bias", 1.0)? as f64,
    );
    if x.rank() < 2 {
        return Err(cx.shape_err(format!("an input of rank {}", x.rank())));
    }
    let c = x.axes[1];
    let channels = cx.fixed_len(c, "LRN")?;
    let sq = unary(cx, UnaryOp::Square, &x)?;
    let (before, after) = ((size - 1) / 2, size - 1 - (size - 1) / 2);
    let r = cx.g.pad(sq.node, &[(c, before, after)]);
    let padded = cx.ok(r)?;
    let padded_axis = cx.g.derived_axis(weft_ir::AxisDef::Pad {
        of: c,
        before,
        after,
    });
    let mut sum: Option<weft_ir::NodeId> = None;
    for t in 0..size {
        let range = weft_ir::SliceRange::range(t as i64, (t + channels) as i64);
        let r =
            cx.g.slice(padded, &[(padded_axis, weft_ir::AxisSlice::Range(range))]);
        let part = cx.ok(r)?;
        let mut to = cx.g.node(part).axes.as_slice().to_vec();
        for a in to.iter_mut() {
            if cx.g.node(padded).axes.as_slice().iter().all(|p| p != a) && !x.axes.contains(a) {
                *a = c;
            }
        }
        let r = cx.g.cast_axes(part, &to);
        let part = cx.ok(r)?;
        sum = Some(match sum {
            None => part,
            Some(s) => {
                let r = cx.g.binary(BinaryOp::Add, s, part);
                cx.ok(r)?
            }
        });
    }
    let sum = sum.expect("size ≥ 1");
    let k = cx.scalar(alpha / size as f64, x.dtype)?;
    let r = cx.g.binary(BinaryOp::Multiply, sum, k);
    let scaled = cx.ok(r)?;
    let b = cx.scalar(bias, x.dtype)?;
    let r = cx.g.binary(BinaryOp::Add, scaled, b);
    let base = cx.ok(r)?;
    let p = cx.scalar(beta, x.dtype)?;
    let r = cx.g.binary(BinaryOp::Power, base, p);
    let denom = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Divide, x.node, denom);
    let y = cx.ok(r)?;
    Ok(cx.value(y, x.axes))
}

/// `Softmax` / `LogSoftmax`: over `axis` (opset ≥ 13) or every dim from `axis` on (before,
/// where the input is read as a matrix).
pub fn softmax(cx: &mut Cx, log: bool) -> Result<Value, ImportError> {
    let x = cx.input(0)?;
    if !x.dtype.is_float() {
        return Err(cx.unsupported(format!("a {} input", x.dtype)));
    }
    let modern = cx.opset() >= 13;
    let axis = cx.attrs().int("axis", if modern { -1 } else { 1 })?;
    let rank = x.rank().max(1);
    let p = if x.rank() == 0 {
        0
    } else {
        cx.position(axis, rank)?
    };
    let over: Vec<Axis> = if x.rank() == 0 {
        vec![]
    } else if modern {
        vec![x.axes[p]]
    } else {
        x.axes[p..].to_vec()
    };
    let r = cx.g.reduce(ReduceOp::Max, x.node, &over, None);
    let m = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Subtract, x.node, m);
    let shifted = cx.ok(r)?;
    let r = cx.g.unary(UnaryOp::Exp, shifted);
    let e = cx.ok(r)?;
    let r = cx.g.reduce(ReduceOp::Sum, e, &over, None);
    let total = cx.ok(r)?;
    let y = if log {
        let r = cx.g.unary(UnaryOp::Log, total);
        let lt = cx.ok(r)?;
        let r = cx.g.binary(BinaryOp::Subtract, shifted, lt);
        cx.ok(r)?
    } else {
        let r = cx.g.binary(BinaryOp::Divide, e, total);
        cx.ok(r)?
    };
    Ok(cx.value(y, x.axes))
}

/// `LayerNormalization(axis, epsilon)`: over the dims from `axis` on, then scale and bias
/// (broadcast as NumPy does); its optional outputs `Mean` and `InvStdDev` keep the normalized
/// dims as 1s.
pub fn layer_norm(cx: &mut Cx) -> Result<Vec<Value>, ImportError> {
    let x = cx.input(0)?;
    let a = cx.attrs();
    let p = cx.position(a.int("axis", -1)?, x.rank().max(1))?;
    let eps = a.float("epsilon", 1e-5)? as f64;
    let over: Vec<Axis> = x.axes[p..].to_vec();
    let r = cx.g.reduce(ReduceOp::Mean, x.node, &over, None);
    let mean = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Subtract, x.node, mean);
    let d = cx.ok(r)?;
    let r = cx.g.unary(UnaryOp::Square, d);
    let d2 = cx.ok(r)?;
    let r = cx.g.reduce(ReduceOp::Mean, d2, &over, None);
    let var = cx.ok(r)?;
    let e = cx.scalar(eps, x.dtype)?;
    let r = cx.g.binary(BinaryOp::Add, var, e);
    let ve = cx.ok(r)?;
    let r = cx.g.unary(UnaryOp::Sqrt, ve);
    let sd = cx.ok(r)?;
    let r = cx.g.binary(BinaryOp::Divide, d, sd);
    let n = cx.ok(r)?;
    let normed = cx.value(n, x.axes.clone());
    let scale = cx.input(1)?;
    let mut y = binary(cx, BinaryOp::Multiply, &normed, &scale)?;
    if let Some(b) = cx.opt_input(2) {
        y = binary(cx, BinaryOp::Add, &y, &b)?;
    }
    let mut out = vec![y];
    if cx.node.output.iter().skip(1).any(|o| !o.is_empty()) {
        let r = cx.g.unary(UnaryOp::Reciprocal, sd);
        let inv = cx.ok(r)?;
        for stat in [mean, inv] {
            let mut v = cx.value(stat, x.axes[..p].to_vec());
            for q in p..x.rank() {
                v = cx.insert_unit(&v, q)?;
            }
            out.push(v);
        }
    }
    Ok(out)
}
