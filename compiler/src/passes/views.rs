//! view folding: broadcast, axes_with_order, cast_axes, transpose, slice (ranges with any step,
//! and pinned indices), flatten/unflatten, expand_dims, pad and concat become index maps —
//! seed 000's simple views (shape, strides, offset) and complex views (a valid-region mask for
//! pad, a selection among parts for concat) — never copies.
//!
//! Assumes: a verified graph (every length bound).
//! Guarantees:
//! - iteration spaces are over *atomic* axes: a flattened axis is iterated as its parts (first
//!   major), so flatten and unflatten are identities on indices and a flattened index never needs
//!   a division: storage of a tensor with a flattened axis is addressed affinely from the parts
//!   ([`expand_axes`]). Only when expansion would repeat an axis (a tensor holding both `A·B` and
//!   `A`) is the flattened axis iterated whole; reading per-part through it then needs div/mod and
//!   is refused with a [`PassError::Unsupported`] naming the node;
//! - [`IndexEnv::through_view`] maps the index of every axis of a view to affine indices of its
//!   operand's axes, plus the validity ranges under which the operand is read at all (pad);
//! - [`view_index_map`] gives, for a chain of simple views over a stored tensor of known
//!   layout, the [`StridedView`] from the view's axes to storage (and the mask, for pads).

use super::PassError;
use std::collections::BTreeMap;
use std::fmt;
use weft_ir::{Axes, Axis, AxisDef, AxisSlice, Graph, NodeId, Op};

/// An axis iterated by a loop, with its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IterAxis {
    /// The (atomic) axis.
    pub axis: Axis,
    /// Its length.
    pub len: usize,
}

impl IterAxis {
    /// `name:len`.
    pub fn display(&self, g: &Graph) -> String {
        format!("{}:{}", g.axis_name(self.axis), self.len)
    }
}

/// The atomic parts of `axis`: its flatten parts (recursively, dual degree shifted by `axis`'s),
/// or itself.
fn parts_of(g: &Graph, axis: Axis, out: &mut Vec<Axis>) {
    match &g.axis_data(axis.id).def {
        AxisDef::Flatten(parts) => {
            for p in parts {
                parts_of(
                    g,
                    Axis {
                        id: p.id,
                        dual: p.dual + axis.dual,
                    },
                    out,
                );
            }
        }
        _ => out.push(axis),
    }
}

/// The iteration axes of a tensor with `axes`: flattened axes replaced by their parts, unless
/// that would repeat an axis (then the axes as they are). Lengths resolved.
pub fn expand_axes(g: &Graph, axes: &Axes) -> Result<Vec<IterAxis>, PassError> {
    let keys = env_keys(g, axes);
    keys.into_iter()
        .map(|a| {
            Ok(IterAxis {
                axis: a,
                len: g.resolve_len(a)?,
            })
        })
        .collect()
}

/// The index keys of a tensor with `axes` (see [`expand_axes`]).
pub fn env_keys(g: &Graph, axes: &Axes) -> Vec<Axis> {
    let mut v = Vec::new();
    for a in axes {
        parts_of(g, *a, &mut v);
    }
    let mut seen = std::collections::HashSet::new();
    if v.iter().all(|a| seen.insert(*a)) {
        v
    } else {
        axes.iter().copied().collect()
    }
}

/// An affine index: `constant + Σ coefficient · index(axis)` over iteration axes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct AffineExpr {
    /// The constant term.
    pub constant: i64,
    /// `(axis, coefficient)`, sorted by axis, no zero coefficient.
    pub terms: Vec<(Axis, i64)>,
}

impl AffineExpr {
    /// The index of `axis`.
    pub fn var(axis: Axis) -> AffineExpr {
        AffineExpr {
            constant: 0,
            terms: vec![(axis, 1)],
        }
    }
    /// A constant index.
    pub fn constant(c: i64) -> AffineExpr {
        AffineExpr {
            constant: c,
            terms: Vec::new(),
        }
    }
    /// `self · k + c`.
    pub fn scale_add(&self, k: i64, c: i64) -> AffineExpr {
        let mut e = AffineExpr {
            constant: self.constant * k + c,
            terms: self.terms.iter().map(|(a, x)| (*a, x * k)).collect(),
        };
        e.terms.retain(|t| t.1 != 0);
        e
    }
    /// `self + other`.
    pub fn add(&self, other: &AffineExpr) -> AffineExpr {
        let mut m: BTreeMap<Axis, i64> = BTreeMap::new();
        for (a, k) in self.terms.iter().chain(other.terms.iter()) {
            *m.entry(*a).or_default() += k;
        }
        AffineExpr {
            constant: self.constant + other.constant,
            terms: m.into_iter().filter(|t| t.1 != 0).collect(),
        }
    }
    /// The coefficient of `axis`.
    pub fn coefficient(&self, axis: Axis) -> i64 {
        self.terms
            .iter()
            .find(|t| t.0 == axis)
            .map(|t| t.1)
            .unwrap_or(0)
    }
    /// `3 + 2·i + j`, axes by name.
    pub fn display(&self, g: &Graph) -> String {
        let mut parts: Vec<String> = Vec::new();
        if self.constant != 0 || self.terms.is_empty() {
            parts.push(self.constant.to_string());
        }
        for (a, k) in &self.terms {
            let n = g.axis_name(*a);
            parts.push(if *k == 1 { n } else { format!("{k}·{n}") });
        }
        parts.join(" + ")
    }
}

/// `lo ≤ index < hi`: where a padded view reads its operand (elsewhere it is zero), or where a
/// concat reads one part.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValidRange {
    /// The index tested.
    pub index: AffineExpr,
    /// The first valid value.
    pub lo: i64,
    /// One past the last valid value.
    pub hi: i64,
}

impl ValidRange {
    /// `lo ≤ expr < hi`.
    pub fn display(&self, g: &Graph) -> String {
        format!("{} <= {} < {}", self.lo, self.index.display(g), self.hi)
    }
}

/// The index of every axis key of one tensor, as affine expressions over iteration axes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct IndexEnv {
    /// Axis key → index.
    pub map: BTreeMap<Axis, AffineExpr>,
}

/// How a view reads one of its operands.
#[derive(Clone, Debug, PartialEq)]
pub struct OperandIndex {
    /// The operand's index environment.
    pub env: IndexEnv,
    /// Conditions under which the operand is read (pad: inside the unpadded region; concat: inside
    /// the part's range). Outside them the view's value is zero (pad) or another part's (concat).
    pub valid: Vec<ValidRange>,
}

impl IndexEnv {
    /// The identity environment over `keys`.
    pub fn identity(keys: &[Axis]) -> IndexEnv {
        IndexEnv {
            map: keys.iter().map(|a| (*a, AffineExpr::var(*a))).collect(),
        }
    }

    /// The index of key `a`, or why it has none.
    pub fn get(&self, g: &Graph, node: NodeId, a: Axis) -> Result<&AffineExpr, PassError> {
        self.map.get(&a).ok_or_else(|| PassError::Unsupported {
            node: g.node_label(node),
            reason: format!(
                "axis `{}` is indexed through a flattened axis iterated whole (needs div/mod)",
                g.axis_name(a)
            ),
        })
    }

    /// This environment restricted to `keys`.
    pub fn restrict(&self, g: &Graph, node: NodeId, keys: &[Axis]) -> Result<IndexEnv, PassError> {
        let mut map = BTreeMap::new();
        for k in keys {
            map.insert(*k, self.get(g, node, *k)?.clone());
        }
        Ok(IndexEnv { map })
    }

    /// The index of each axis of a tensor with `axes` (a flattened axis from its parts' indices,
    /// first part major).
    pub fn per_axis(
        &self,
        g: &Graph,
        node: NodeId,
        axes: &Axes,
    ) -> Result<Vec<AffineExpr>, PassError> {
        let mut out = Vec::new();
        let keys = env_keys(g, axes);
        let expanded =
            keys.len() != axes.len() || keys.iter().zip(axes.iter()).any(|(a, b)| a != b);
        for a in axes {
            if let (true, Some(e)) = (!expanded, self.map.get(a)) {
                out.push(e.clone());
                continue;
            }
            let mut parts = Vec::new();
            parts_of(g, *a, &mut parts);
            let mut e = AffineExpr::constant(0);
            for p in parts {
                let len = g.resolve_len(p)? as i64;
                e = e.scale_add(len, 0).add(self.get(g, node, p)?);
            }
            out.push(e);
        }
        Ok(out)
    }

    /// How view `node` (a simple or complex view, or concat) reads each operand, given the
    /// index environment of `node`. One entry per operand, in operand order.
    pub fn through_view(&self, g: &Graph, node: NodeId) -> Result<Vec<OperandIndex>, PassError> {
        let n = g.node(node);
        let simple = |env: IndexEnv| Ok(vec![OperandIndex { env, valid: vec![] }]);
        match &n.op {
            Op::Broadcast(x) | Op::AxesWithOrder(x) | Op::ExpandDims { input: x, .. } => {
                simple(self.restrict(g, node, &env_keys(g, &g.node(*x).axes))?)
            }
            Op::Flatten { input: x, .. } | Op::Unflatten { input: x, .. } => {
                simple(self.restrict(g, node, &env_keys(g, &g.node(*x).axes))?)
            }
            Op::CastAxes(x) => {
                let from = &g.node(*x).axes;
                simple(self.positional(
                    g,
                    node,
                    from.iter().copied().zip(n.axes.iter().copied()),
                )?)
            }
            Op::Transpose(x) => {
                let from = &g.node(*x).axes;
                simple(self.positional(
                    g,
                    node,
                    from.iter().copied().zip(n.axes.iter().rev().copied()),
                )?)
            }
            Op::Slice { input, slices } => {
                let mut map = BTreeMap::new();
                // Kept axes appear in the result in the operand's order, ranges as derived axes.
                let mut out_axes = n.axes.iter();
                for a in &g.node(*input).axes {
                    let e = match slices.iter().find(|s| s.0 == *a) {
                        None => {
                            out_axes.next();
                            self.get(g, node, *a)?.clone()
                        }
                        Some((_, AxisSlice::Index(i))) => {
                            let len = g.resolve_len(*a)? as i64;
                            AffineExpr::constant(if *i < 0 { i + len } else { *i })
                        }
                        Some((_, AxisSlice::Range(r))) => {
                            let len = g.resolve_len(*a)?;
                            let res =
                                r.resolve(len)
                                    .map_err(|message| weft_ir::GraphError::Range {
                                        op: "slice".into(),
                                        axis: g.axis_name(*a),
                                        message,
                                    })?;
                            let s = *out_axes.next().ok_or_else(|| mismatch(g, node))?;
                            self.get(g, node, s)?.scale_add(res.step, res.first as i64)
                        }
                    };
                    insert_axis(g, &mut map, *a, e)?;
                }
                simple(IndexEnv { map })
            }
            Op::Pad { input, pads } => {
                let mut map = BTreeMap::new();
                let mut valid = Vec::new();
                for (a, p) in g.node(*input).axes.iter().zip(n.axes.iter()) {
                    let e = match pads.iter().find(|p| p.0 == *a) {
                        None => self.get(g, node, *a)?.clone(),
                        Some((_, before, _)) => {
                            let e = self.get(g, node, *p)?.clone();
                            let len = g.resolve_len(*a)? as i64;
                            valid.push(ValidRange {
                                index: e.clone(),
                                lo: *before as i64,
                                hi: *before as i64 + len,
                            });
                            e.scale_add(1, -(*before as i64))
                        }
                    };
                    insert_axis(g, &mut map, *a, e)?;
                }
                Ok(vec![OperandIndex {
                    env: IndexEnv { map },
                    valid,
                }])
            }
            Op::Concat(parts) => {
                let first = &g.node(parts[0].0).axes;
                let pos = first
                    .position(parts[0].1)
                    .ok_or_else(|| mismatch(g, node))?;
                let cat = n.axes[pos];
                let ce = self.get(g, node, cat)?.clone();
                let mut start = 0i64;
                let mut out = Vec::new();
                for (part, axis) in parts {
                    let len = g.resolve_len(*axis)? as i64;
                    let mut map = BTreeMap::new();
                    for a in &g.node(*part).axes {
                        let e = if a == axis {
                            ce.scale_add(1, -start)
                        } else {
                            self.get(g, node, *a)?.clone()
                        };
                        insert_axis(g, &mut map, *a, e)?;
                    }
                    out.push(OperandIndex {
                        env: IndexEnv { map },
                        valid: vec![ValidRange {
                            index: ce.clone(),
                            lo: start,
                            hi: start + len,
                        }],
                    });
                    start += len;
                }
                Ok(out)
            }
            _ => Err(PassError::Internal(format!(
                "{} is not a view",
                g.node_label(node)
            ))),
        }
    }

    /// The operand environment of a positional relabelling: operand axis `from` takes the index
    /// of view axis `to`, part by part.
    fn positional(
        &self,
        g: &Graph,
        node: NodeId,
        pairs: impl Iterator<Item = (Axis, Axis)>,
    ) -> Result<IndexEnv, PassError> {
        let mut map = BTreeMap::new();
        for (from, to) in pairs {
            let (mut fp, mut tp) = (Vec::new(), Vec::new());
            parts_of(g, from, &mut fp);
            parts_of(g, to, &mut tp);
            let to_e = self.map.contains_key(&to);
            if fp.len() == tp.len() && !to_e {
                for (f, t) in fp.iter().zip(tp.iter()) {
                    map.insert(*f, self.get(g, node, *t)?.clone());
                }
            } else {
                let e = self.get(g, node, to)?.clone();
                insert_axis(g, &mut map, from, e)?;
            }
        }
        Ok(IndexEnv { map })
    }
}

fn mismatch(g: &Graph, node: NodeId) -> PassError {
    PassError::Internal(format!(
        "{}: view axes do not match its operand",
        g.node_label(node)
    ))
}

/// Sets the index of operand axis `a` to `e`; a flattened axis whose parts are keys of the operand
/// is split only when `e` is a single part-aligned term (otherwise div/mod would be needed).
fn insert_axis(
    g: &Graph,
    map: &mut BTreeMap<Axis, AffineExpr>,
    a: Axis,
    e: AffineExpr,
) -> Result<(), PassError> {
    let mut parts = Vec::new();
    parts_of(g, a, &mut parts);
    if parts.len() == 1 {
        map.insert(a, e);
        return Ok(());
    }
    // `e` is already the flattened index of the parts when it came from the parts themselves; we
    // can only recover them if `e` is the row-major combination of the parts' own keys.
    let mut rebuilt = AffineExpr::constant(0);
    for p in &parts {
        rebuilt = rebuilt
            .scale_add(g.resolve_len(*p)? as i64, 0)
            .add(&AffineExpr::var(*p));
    }
    if rebuilt == e {
        for p in parts {
            map.insert(p, AffineExpr::var(p));
        }
        Ok(())
    } else {
        map.insert(a, e);
        Ok(())
    }
}

/// A simple view of stored memory: element `index` of the view (one index per entry of `axes`)
/// is at `offset + Σ strides[k] · index[k]` elements from the start of `tensor`'s storage.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StridedView {
    /// The stored tensor read.
    pub tensor: NodeId,
    /// The axes indexing the view, with lengths (the view's shape).
    pub axes: Vec<IterAxis>,
    /// Elements between consecutive indices of each axis (0 for a broadcast axis, negative for a
    /// reversed slice).
    pub strides: Vec<i64>,
    /// Elements from the start of storage to index (0, …, 0).
    pub offset: i64,
}

impl StridedView {
    /// `tensor[offset; A:4*8, B:3*1]`.
    pub fn display(&self, g: &Graph) -> String {
        let dims: Vec<String> = self
            .axes
            .iter()
            .zip(&self.strides)
            .map(|(a, s)| format!("{}*{s}", a.display(g)))
            .collect();
        format!(
            "{}[{}; {}]",
            g.node_label(self.tensor),
            self.offset,
            dims.join(", ")
        )
    }
}

/// The element strides of a stored tensor: one per axis of the node, in the node's axes order.
pub type Strides = Vec<i64>;

/// The strided view of `per_axis` indices (one per axis of `tensor`, affine over `space`) into
/// storage with `strides`.
pub fn strided(
    tensor: NodeId,
    per_axis: &[AffineExpr],
    strides: &[i64],
    space: &[IterAxis],
) -> StridedView {
    let mut offset = 0;
    let mut st = vec![0i64; space.len()];
    for (e, s) in per_axis.iter().zip(strides) {
        offset += e.constant * s;
        for (a, k) in &e.terms {
            if let Some(p) = space.iter().position(|x| x.axis == *a) {
                st[p] += k * s;
            }
        }
    }
    StridedView {
        tensor,
        axes: space.to_vec(),
        strides: st,
        offset,
    }
}

/// The index map of `node`, a chain of views (simple or padded; not concat) over a stored tensor:
/// the view's axes (expanded) as the iteration space, the strided view into the base tensor's
/// storage (whose strides `strides_of` gives), and the valid-region mask (empty without pads).
pub fn view_index_map(
    g: &Graph,
    node: NodeId,
    strides_of: &dyn Fn(NodeId) -> Option<Strides>,
) -> Result<(StridedView, Vec<ValidRange>), PassError> {
    let space = expand_axes(g, &g.node(node).axes)?;
    let keys: Vec<Axis> = space.iter().map(|a| a.axis).collect();
    let mut env = IndexEnv::identity(&keys);
    let mut valid = Vec::new();
    let mut cur = node;
    loop {
        if let Some(strides) = strides_of(cur) {
            let per = env.per_axis(g, cur, &g.node(cur).axes)?;
            return Ok((strided(cur, &per, &strides, &space), valid));
        }
        let n = g.node(cur);
        if !n.op.is_view() {
            return Err(PassError::Unsupported {
                node: g.node_label(cur),
                reason: "is neither a view nor a stored tensor".into(),
            });
        }
        let mut ops = env.through_view(g, cur)?;
        let o = ops.remove(0);
        env = o.env;
        valid.extend(o.valid);
        cur = n.op.inputs()[0];
    }
}

impl fmt::Display for AffineExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.constant)?;
        for (a, k) in &self.terms {
            write!(f, " + {k}·{}", a.id)?;
        }
        Ok(())
    }
}
