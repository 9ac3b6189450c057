//! Views as index maps: for each view op, where each axis of the operand gets its index from,
//! given a multi-index of the result (see [`IndexMap`]). The interpreter then reads the operand
//! element by element. Concatenation is a complex view (docs/design.md): each result element comes
//! from the one part whose range along the concatenated axis covers it.

use super::index::{at, Source};
use super::IndexMap;
use weft_ir::{ArrayData, Axes, Axis, AxisDef, AxisSlice, Graph};

/// The result position of operand axis `a`, which the result must have.
fn out_pos(out: &Axes, a: Axis) -> Result<usize, String> {
    out.position(a)
        .ok_or_else(|| format!("the result has no axis {a:?} of the operand"))
}

/// Broadcast, axes_with_order, expand_dims and elementwise operands: every operand axis is a
/// result axis, found by identity.
pub(crate) fn by_identity(
    in_axes: &Axes,
    in_shape: &[usize],
    out: &Axes,
) -> Result<IndexMap, String> {
    let sources = in_axes
        .iter()
        .map(|a| out_pos(out, *a).map(Source::Same))
        .collect::<Result<_, _>>()?;
    IndexMap::new(in_shape, sources)
}

/// cast_axes: operand axis `i` is result axis `i`.
pub(crate) fn by_position(in_shape: &[usize]) -> Result<IndexMap, String> {
    IndexMap::new(in_shape, (0..in_shape.len()).map(Source::Same).collect())
}

/// transpose: operand axis `i` of `n` is result axis `n − 1 − i`.
pub(crate) fn reversed(in_shape: &[usize]) -> Result<IndexMap, String> {
    let n = in_shape.len();
    IndexMap::new(in_shape, (0..n).map(|i| Source::Same(n - 1 - i)).collect())
}

/// A pinned index, negative from the end, resolved against `len`.
fn pinned(i: i64, len: usize) -> Result<usize, String> {
    let j = if i < 0 { i + len as i64 } else { i };
    if j < 0 || j >= len as i64 {
        return Err(format!("index {i} is out of range for length {len}"));
    }
    Ok(j as usize)
}

/// slice: the result keeps the operand's axis order, without pinned axes and with each sliced
/// axis replaced (in place) by its derived axis.
pub(crate) fn slice(
    graph: &Graph,
    in_axes: &Axes,
    in_shape: &[usize],
    slices: &[(Axis, AxisSlice)],
) -> Result<IndexMap, String> {
    let mut sources = Vec::new();
    let mut pos = 0usize;
    for (i, a) in in_axes.iter().enumerate() {
        let len = at(in_shape, i)?;
        match slices.iter().find(|(s, _)| s == a).map(|(_, s)| s) {
            None => {
                sources.push(Source::Same(pos));
                pos += 1;
            }
            Some(AxisSlice::Index(k)) => sources.push(Source::Fixed(pinned(*k, len)?)),
            Some(AxisSlice::Range(r)) => {
                let r = r
                    .resolve(len)
                    .map_err(|m| format!("axis `{}`: {m}", graph.axis_name(*a)))?;
                sources.push(Source::Strided {
                    pos,
                    first: r.first,
                    step: r.step,
                });
                pos += 1;
            }
        }
    }
    IndexMap::new(in_shape, sources)
}

/// flatten: each merged operand axis is one digit, in the listed (major first) order, of the
/// result's flattened axis; the others are found by identity.
pub(crate) fn flatten(
    in_axes: &Axes,
    in_shape: &[usize],
    merged: &[Axis],
    out: &Axes,
) -> Result<IndexMap, String> {
    let flat_pos = in_axes
        .iter()
        .position(|a| merged.contains(a))
        .ok_or("no merged axis is an operand axis")?;
    let len_of = |a: &Axis| {
        in_axes
            .position(*a)
            .ok_or_else(|| format!("merged axis {a:?} is not an operand axis"))
            .and_then(|i| at(in_shape, i))
    };
    let lens: Vec<usize> = merged.iter().map(len_of).collect::<Result<_, _>>()?;
    let mut sources = Vec::new();
    for a in in_axes {
        match merged.iter().position(|m| m == a) {
            Some(g) => sources.push(Source::FlatPart {
                pos: flat_pos,
                inner: weft_ir::size::element_count(&lens[g + 1..])
                    .ok_or("the parts of a flattened axis overflow")?,
                len: lens[g],
            }),
            None => sources.push(Source::Same(out_pos(out, *a)?)),
        }
    }
    IndexMap::new(in_shape, sources)
}

/// unflatten: the operand's flattened axis is rebuilt, row-major, from its parts in the result;
/// the others are found by identity.
pub(crate) fn unflatten(
    graph: &Graph,
    in_axes: &Axes,
    in_shape: &[usize],
    axis: Axis,
    out: &Axes,
    out_shape: &[usize],
) -> Result<IndexMap, String> {
    let parts = match &graph.axis_data(axis.id).def {
        AxisDef::Flatten(p) if axis.dual == 0 => p.clone(),
        _ => return Err(format!("axis `{}` is not flattened", graph.axis_name(axis))),
    };
    let mut sources = Vec::new();
    for a in in_axes {
        if *a == axis {
            let digits = parts
                .iter()
                .map(|p| {
                    let i = out_pos(out, *p)?;
                    Ok((i, at(out_shape, i)?))
                })
                .collect::<Result<_, String>>()?;
            sources.push(Source::Merged(digits));
        } else {
            sources.push(Source::Same(out_pos(out, *a)?));
        }
    }
    IndexMap::new(in_shape, sources)
}

/// pad: the result keeps the operand's axis order, each padded axis replaced in place by its
/// derived axis; positions outside the operand read as zero.
pub(crate) fn pad(
    in_axes: &Axes,
    in_shape: &[usize],
    pads: &[(Axis, usize, usize)],
) -> Result<IndexMap, String> {
    let mut sources = Vec::new();
    for (i, a) in in_axes.iter().enumerate() {
        match pads.iter().find(|(p, _, _)| p == a) {
            Some((_, before, _)) => sources.push(Source::Shifted {
                pos: i,
                before: *before,
                len: at(in_shape, i)?,
            }),
            None => sources.push(Source::Same(i)),
        }
    }
    IndexMap::new(in_shape, sources)
}

/// One part of a concatenation: its data, axes, shape and the axis it contributes along.
pub(crate) struct Part<'a> {
    /// The part's elements, row-major in `axes`.
    pub data: &'a ArrayData,
    /// The part's axes.
    pub axes: &'a Axes,
    /// Their lengths.
    pub shape: &'a [usize],
    /// The axis concatenated.
    pub axis: Axis,
}

/// concat: the result's axis at `cat_pos` runs through each part's axis in turn; every other
/// result axis is found in each part by identity.
pub(crate) fn concat(
    parts: &[Part<'_>],
    out: &Axes,
    out_shape: &[usize],
    cat_pos: usize,
) -> Result<ArrayData, String> {
    let mut maps = Vec::new();
    let mut offset = 0usize;
    for p in parts {
        let mut sources = Vec::new();
        for (i, a) in p.axes.iter().enumerate() {
            if *a == p.axis {
                let len = at(p.shape, i)?;
                sources.push(Source::Shifted {
                    pos: cat_pos,
                    before: offset,
                    len,
                });
                offset += len;
            } else {
                sources.push(Source::Same(out_pos(out, *a)?));
            }
        }
        maps.push(IndexMap::new(p.shape, sources)?);
    }
    // For every result element, the part covering it and the index read from that part.
    let mut reads: Vec<(usize, usize)> = Vec::new();
    super::index::for_each_index(out_shape, |idx| {
        for (k, m) in maps.iter().enumerate() {
            if let Some(i) = m.flat(idx)? {
                reads.push((k, i));
                return Ok(());
            }
        }
        Err(format!("no part covers result index {idx:?}"))
    })?;
    fn pick<T: Copy>(parts: &[&[T]], reads: &[(usize, usize)]) -> Result<Vec<T>, String> {
        reads
            .iter()
            .map(|&(k, i)| at(parts.get(k).ok_or("no such part")?, i))
            .collect()
    }
    macro_rules! cat {
        ($v:ident) => {{
            let slices = parts
                .iter()
                .map(|p| match p.data {
                    ArrayData::$v(v) => Ok(&v[..]),
                    other => Err(format!("a part of dtype {}", other.dtype())),
                })
                .collect::<Result<Vec<_>, String>>()?;
            ArrayData::$v(pick(&slices, &reads)?)
        }};
    }
    let first = parts.first().ok_or("concat of no parts")?;
    Ok(match first.data {
        ArrayData::F32(_) => cat!(F32),
        ArrayData::F64(_) => cat!(F64),
        ArrayData::I32(_) => cat!(I32),
        ArrayData::I64(_) => cat!(I64),
        ArrayData::Bool(_) => cat!(Bool),
    })
}
