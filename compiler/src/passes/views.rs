//! view folding: broadcast, axes_with_order, cast_axes, transpose, slice (ranges with any step, and
//! pinned indices), flatten/unflatten, expand_dims, pad and concat become index maps —
//! docs/design.md's simple views (shape, strides, offset) and complex views (a valid-region mask
//! for pad, a selection among parts for concat) — never copies.
//!
//! Assumes: a verified graph (every length bound).
//! Guarantees:
//! - iteration spaces are over *atomic* axes: a flattened axis is iterated as its parts (first
//!   major), so flatten and unflatten are identities on indices and a flattened index never needs
//!   a division: storage of a tensor with a flattened axis is addressed affinely from the parts
//!   ([`expand_axes`]). Only when expansion would repeat an axis (a tensor holding both `A·B` and
//!   `A`, or two flattened axes sharing a part, `W·V` beside `W·P`), or a cast/transpose pairs a
//!   flattened axis with an axis of other parts, is an axis iterated whole; computing per part
//!   through it would need div/mod, so the index maps report [`PassError::SplitIndex`] naming
//!   the node read by parts, and the pipeline stores that node (its producer iterates its parts,
//!   its reader indexes it whole) — the reason is recorded;
//! - storing always helps, so no valid graph is refused: a node's frame ([`node_keys`]) is its
//!   axes' frame except that a flatten splits its own result axis first. The only view that
//!   goes from a whole axis to its parts is a flatten (a cast/transpose whose axes are not split
//!   alike pairs them whole); stored, a flatten is computed in a kernel of its own whose frame
//!   has its parts, and its readers address it by whole axes, which is always affine. Storing
//!   (materialising) the view was chosen over div/mod in loop-IR index expressions: every index
//!   stays affine (the loop-IR verifier's bounds, vectorisation and layouts are untouched), and
//!   the cost, one copy, falls only on graphs holding two flattened axes that share a part;
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

/// The immediate parts of a flattened axis (dual degree shifted by `axis`'s), or nothing.
fn immediate_parts(g: &Graph, axis: Axis) -> Vec<Axis> {
    match &g.axis_data(axis.id).def {
        AxisDef::Flatten(parts) => parts
            .iter()
            .map(|p| p.with_dual(p.dual + axis.dual))
            .collect(),
        _ => Vec::new(),
    }
}

/// The iteration axes of a tensor with `axes`: its index keys ([`env_keys`]) with lengths.
pub fn expand_axes(g: &Graph, axes: &Axes) -> Result<Vec<IterAxis>, PassError> {
    with_lens(g, env_keys(g, axes))
}

fn with_lens(g: &Graph, keys: Vec<Axis>) -> Result<Vec<IterAxis>, PassError> {
    keys.into_iter()
        .map(|a| {
            Ok(IterAxis {
                axis: a,
                len: g.resolve_len(a)?,
            })
        })
        .collect()
}

/// The iteration axes of node `n`'s own loops: its frame ([`node_keys`]) with lengths, except
/// that for a reduction or dot a flattened result axis stays whole where expanding it would
/// repeat a reduced or contracted axis (a result over `A·B` reducing `B`): that needs its own
/// loop.
pub fn node_space(g: &Graph, n: NodeId) -> Result<Vec<IterAxis>, PassError> {
    let node = g.node(n);
    let red: Vec<Axis> = match &node.op {
        Op::Reduce { axes, .. } => axes.iter().copied().collect(),
        Op::Dot(l, r) => g
            .dot_pairs(&g.node_label(n), &g.node(*l).axes, &g.node(*r).axes)?
            .into_iter()
            .flat_map(|(a, b)| [a, b])
            .collect(),
        _ => return with_lens(g, node_keys(g, n)),
    };
    let mut all: Vec<Axis> = node.axes.iter().copied().collect();
    for a in red {
        if !all.contains(&a) {
            all.push(a);
        }
    }
    let Ok(combined) = Axes::new(all) else {
        return expand_axes(g, &node.axes);
    };
    let keys = env_keys(g, &combined);
    node.axes
        .iter()
        .flat_map(|a| leaves_under(g, *a, &keys))
        .map(|a| {
            Ok(IterAxis {
                axis: a,
                len: g.resolve_len(a)?,
            })
        })
        .collect()
}

/// The index keys of a tensor with `axes` (its *frame*): flattened axes replaced by their parts,
/// recursively, left to right, except where a part would repeat an axis already in the tree
/// (then that flattened axis stays whole).
pub fn env_keys(g: &Graph, axes: &Axes) -> Vec<Axis> {
    frame_keys(g, axes, None)
}

/// The frame of node `n`'s value: [`env_keys`] of its axes, except that a flatten splits its
/// own result axis first. Its operand is read by those parts, so in this frame the flatten never
/// needs div/mod; another result axis with the same parts (`(A·B)*` beside the new `A*·B*`)
/// stays whole instead, and a reader that iterates the flattened axis whole stores the
/// flatten ([`PassError::SplitIndex`]), which its own kernel then computes in this frame.
pub fn node_keys(g: &Graph, n: NodeId) -> Vec<Axis> {
    let node = g.node(n);
    frame_keys(g, &node.axes, flatten_result(g, n))
}

/// The axis a flatten node makes (the derived axis of its merged axes), or nothing.
fn flatten_result(g: &Graph, n: NodeId) -> Option<Axis> {
    let node = g.node(n);
    let Op::Flatten { axes: merged, .. } = &node.op else {
        return None;
    };
    node.axes.iter().copied().find(|a| {
        a.dual == 0 && matches!(&g.axis_data(a.id).def, AxisDef::Flatten(ps) if ps == merged)
    })
}

/// [`env_keys`] of `axes`, splitting `first` (one of them) before any other.
fn frame_keys(g: &Graph, axes: &Axes, first: Option<Axis>) -> Vec<Axis> {
    let mut used: std::collections::HashSet<Axis> = axes.iter().copied().collect();
    let mut keys: Vec<Axis> = axes.iter().copied().collect();
    let split = |k: Axis, used: &mut std::collections::HashSet<Axis>| {
        let ps = immediate_parts(g, k);
        let distinct = ps.iter().collect::<std::collections::HashSet<_>>().len() == ps.len();
        if !ps.is_empty() && distinct && ps.iter().all(|p| !used.contains(p)) {
            used.extend(ps.iter().copied());
            Some(ps)
        } else {
            None
        }
    };
    if let Some(f) = first {
        if let Some(ps) = split(f, &mut used) {
            keys = keys
                .into_iter()
                .flat_map(|k| if k == f { ps.clone() } else { vec![k] })
                .collect();
        }
    }
    loop {
        let mut changed = false;
        let mut next = Vec::new();
        for k in keys {
            match split(k, &mut used) {
                Some(ps) => {
                    next.extend(ps);
                    changed = true;
                }
                None => next.push(k),
            }
        }
        keys = next;
        if !changed {
            return keys;
        }
    }
}

/// The keys under axis `a` in a frame with leaf keys `leaves`: `a` itself if it is a leaf (or
/// not flattened), else the keys under its parts.
pub fn leaves_under(g: &Graph, a: Axis, leaves: &[Axis]) -> Vec<Axis> {
    let ps = immediate_parts(g, a);
    if leaves.contains(&a) || ps.is_empty() {
        return vec![a];
    }
    ps.into_iter()
        .flat_map(|p| leaves_under(g, p, leaves))
        .collect()
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

fn split_index(g: &Graph, node: NodeId, a: Axis) -> PassError {
    PassError::SplitIndex {
        node,
        label: g.node_label(node),
        axis: g.axis_name(a),
    }
}

impl IndexEnv {
    /// The identity environment over `keys`.
    pub fn identity(keys: &[Axis]) -> IndexEnv {
        IndexEnv {
            map: keys.iter().map(|a| (*a, AffineExpr::var(*a))).collect(),
        }
    }

    /// The index of key `a`; its absence means `node` would need a div/mod index.
    pub fn get(&self, g: &Graph, node: NodeId, a: Axis) -> Result<&AffineExpr, PassError> {
        self.map.get(&a).ok_or_else(|| split_index(g, node, a))
    }

    /// The index of axis `a` taken whole: its own entry, or the row-major combination of its
    /// parts' indices (always affine).
    pub fn whole(&self, g: &Graph, node: NodeId, a: Axis) -> Result<AffineExpr, PassError> {
        if let Some(e) = self.map.get(&a) {
            return Ok(e.clone());
        }
        self.combined_parts(g, node, a)
    }

    /// The index of flattened axis `a` as the row-major combination of its parts' indices
    /// (each [`IndexEnv::whole`]), ignoring any entry of `a` itself.
    fn combined_parts(&self, g: &Graph, node: NodeId, a: Axis) -> Result<AffineExpr, PassError> {
        let ps = immediate_parts(g, a);
        if ps.is_empty() {
            return Err(split_index(g, node, a));
        }
        let mut e = AffineExpr::constant(0);
        for p in ps {
            let len = g.resolve_len(p)? as i64;
            e = e.scale_add(len, 0).add(&self.whole(g, node, p)?);
        }
        Ok(e)
    }

    /// Puts the index of axis `a` into `map` in the frame whose leaf keys are `leaves`: whole if
    /// `a` is a leaf, else part by part. Parts of an axis this environment indexes whole would
    /// need div/mod: an error naming `node`.
    pub fn axis_in_frame(
        &self,
        g: &Graph,
        node: NodeId,
        a: Axis,
        leaves: &[Axis],
        map: &mut BTreeMap<Axis, AffineExpr>,
    ) -> Result<(), PassError> {
        let ps = immediate_parts(g, a);
        if leaves.contains(&a) || ps.is_empty() {
            map.insert(a, self.whole(g, node, a)?);
            return Ok(());
        }
        if self.map.contains_key(&a) {
            return Err(split_index(g, node, a));
        }
        for p in ps {
            self.axis_in_frame(g, node, p, leaves, map)?;
        }
        Ok(())
    }

    /// Like [`IndexEnv::axis_in_frame`], but keeps an axis this environment indexes whole as a
    /// whole entry instead of failing: views pass such entries on, and the reader decides (a
    /// stored operand is addressed by whole axes; a computed one then needs div/mod).
    pub fn pass_axis(
        &self,
        g: &Graph,
        node: NodeId,
        a: Axis,
        leaves: &[Axis],
        map: &mut BTreeMap<Axis, AffineExpr>,
    ) -> Result<(), PassError> {
        let ps = immediate_parts(g, a);
        if leaves.contains(&a) || ps.is_empty() || self.map.contains_key(&a) {
            map.insert(a, self.whole(g, node, a)?);
            return Ok(());
        }
        for p in ps {
            self.pass_axis(g, node, p, leaves, map)?;
        }
        Ok(())
    }

    /// This environment in the frame of `node` ([`node_keys`]; its axes indexed here, whole or
    /// by parts).
    pub fn for_node(&self, g: &Graph, node: NodeId) -> Result<IndexEnv, PassError> {
        let leaves = node_keys(g, node);
        let mut map = BTreeMap::new();
        for a in &g.node(node).axes {
            self.axis_in_frame(g, node, *a, &leaves, &mut map)?;
        }
        Ok(IndexEnv { map })
    }

    /// The index of each axis of a stored tensor with `axes`, each taken whole.
    pub fn per_axis(
        &self,
        g: &Graph,
        node: NodeId,
        axes: &Axes,
    ) -> Result<Vec<AffineExpr>, PassError> {
        axes.iter().map(|a| self.whole(g, node, *a)).collect()
    }

    /// How view `node` (a simple or complex view, or concat) reads each operand, given the
    /// index environment of `node` in its own frame. One entry per operand, in operand order,
    /// each in the operand's frame (or with whole entries a computed operand cannot use).
    pub fn through_view(&self, g: &Graph, node: NodeId) -> Result<Vec<OperandIndex>, PassError> {
        let n = g.node(node);
        let simple = |env: IndexEnv| Ok(vec![OperandIndex { env, valid: vec![] }]);
        match &n.op {
            Op::Flatten { input: x, .. } => {
                // The merged axes are read as the parts of the flattened axis: if this frame
                // indexes it whole, they need div/mod (an axis of the same identity elsewhere in
                // the frame is another coordinate). Another result axis may have the same parts
                // (a transposed `(A·B)*` beside the new `A*·B*`); only one of the two is split
                // in a frame, so when the flatten's own axis is not whole the parts' keys are
                // its own.
                let own = flatten_result(g, node).ok_or_else(|| mismatch(g, node))?;
                if self.map.contains_key(&own) {
                    return Err(split_index(g, node, own));
                }
                simple(self.every_axis_passed(g, *x)?)
            }
            Op::Broadcast(x) | Op::AxesWithOrder(x) | Op::ExpandDims { input: x, .. } => {
                simple(self.every_axis_passed(g, *x)?)
            }
            Op::Unflatten { input: x, axis } => simple(self.through_unflatten(g, *x, *axis)?),
            Op::CastAxes(x) => {
                let from = &g.node(*x).axes;
                simple(self.positional(g, *x, from.iter().copied().zip(n.axes.iter().copied()))?)
            }
            Op::Transpose(x) => {
                let from = &g.node(*x).axes;
                simple(self.positional(
                    g,
                    *x,
                    from.iter().copied().zip(n.axes.iter().rev().copied()),
                )?)
            }
            Op::Slice { input, slices } => simple(self.through_slice(g, node, *input, slices)?),
            Op::Pad { input, pads } => Ok(vec![self.through_pad(g, node, *input, pads)?]),
            Op::Concat(parts) => self.through_concat(g, node, parts),
            _ => Err(PassError::Internal(format!(
                "{} is not a view",
                g.node_label(node)
            ))),
        }
    }

    /// Operand `x`'s index when a view passes each of its axes through unchanged.
    fn every_axis_passed(&self, g: &Graph, x: NodeId) -> Result<IndexEnv, PassError> {
        let leaves = node_keys(g, x);
        let mut map = BTreeMap::new();
        for a in &g.node(x).axes {
            self.pass_axis(g, x, *a, &leaves, &mut map)?;
        }
        Ok(IndexEnv { map })
    }

    /// Operand `x`'s index through an unflatten of its `axis`.
    fn through_unflatten(&self, g: &Graph, x: NodeId, axis: Axis) -> Result<IndexEnv, PassError> {
        // The split axis is not an axis of this view, but its name may be a key of
        // this frame as a part of another axis (`(X·C, X)` unflattened to
        // `(X·C, A, B)` iterates `X`, `C`, `A`, `B`): another coordinate. So it is
        // read from its parts, which are this view's own axes.
        let leaves = node_keys(g, x);
        let mut map = BTreeMap::new();
        for a in &g.node(x).axes {
            if *a != axis {
                self.pass_axis(g, x, *a, &leaves, &mut map)?;
            } else if leaves.contains(a) {
                map.insert(*a, self.combined_parts(g, x, *a)?);
            } else {
                for p in immediate_parts(g, *a) {
                    self.pass_axis(g, x, p, &leaves, &mut map)?;
                }
            }
        }
        Ok(IndexEnv { map })
    }

    /// Operand `x`'s index through slice `node` (`slices` of `x`'s axes).
    fn through_slice(
        &self,
        g: &Graph,
        node: NodeId,
        x: NodeId,
        slices: &[(Axis, AxisSlice)],
    ) -> Result<IndexEnv, PassError> {
        let leaves = node_keys(g, x);
        let mut map = BTreeMap::new();
        // Kept axes appear in the result in the operand's order, ranges as derived axes.
        let mut out_axes = g.node(node).axes.iter();
        for a in &g.node(x).axes {
            let e = match slices.iter().find(|s| s.0 == *a) {
                None => {
                    out_axes.next();
                    self.pass_axis(g, x, *a, &leaves, &mut map)?;
                    continue;
                }
                Some((_, AxisSlice::Index(i))) => {
                    let len = g.resolve_len(*a)? as i64;
                    AffineExpr::constant(if *i < 0 { i + len } else { *i })
                }
                Some((_, AxisSlice::Range(r))) => {
                    let len = g.resolve_len(*a)?;
                    let res = r
                        .resolve(len)
                        .map_err(|message| weft_ir::GraphError::Range {
                            op: "slice".into(),
                            axis: g.axis_name(*a),
                            message,
                        })?;
                    let s = *out_axes.next().ok_or_else(|| mismatch(g, node))?;
                    self.whole(g, node, s)?
                        .scale_add(res.step, res.first as i64)
                }
            };
            map.insert(*a, e);
        }
        Ok(IndexEnv { map })
    }

    /// Operand `x`'s index through pad `node` (`pads` of `x`'s axes), valid inside the padding.
    fn through_pad(
        &self,
        g: &Graph,
        node: NodeId,
        x: NodeId,
        pads: &[(Axis, usize, usize)],
    ) -> Result<OperandIndex, PassError> {
        let leaves = node_keys(g, x);
        let mut map = BTreeMap::new();
        let mut valid = Vec::new();
        for (a, p) in g.node(x).axes.iter().zip(g.node(node).axes.iter()) {
            match pads.iter().find(|p| p.0 == *a) {
                None => self.pass_axis(g, x, *a, &leaves, &mut map)?,
                Some((_, before, _)) => {
                    let e = self.whole(g, node, *p)?;
                    let len = g.resolve_len(*a)? as i64;
                    valid.push(ValidRange {
                        index: e.clone(),
                        lo: *before as i64,
                        hi: *before as i64 + len,
                    });
                    map.insert(*a, e.scale_add(1, -(*before as i64)));
                }
            }
        }
        Ok(OperandIndex {
            env: IndexEnv { map },
            valid,
        })
    }

    /// Each part's index through concat `node`, valid over the part's range of the axis.
    fn through_concat(
        &self,
        g: &Graph,
        node: NodeId,
        parts: &[(NodeId, Axis)],
    ) -> Result<Vec<OperandIndex>, PassError> {
        let n = g.node(node);
        let first = &g.node(parts[0].0).axes;
        let pos = first
            .position(parts[0].1)
            .ok_or_else(|| mismatch(g, node))?;
        let ce = self.whole(g, node, n.axes[pos])?;
        let mut start = 0i64;
        let mut out = Vec::new();
        for (part, axis) in parts {
            let leaves = node_keys(g, *part);
            let len = g.resolve_len(*axis)? as i64;
            let mut map = BTreeMap::new();
            for a in &g.node(*part).axes {
                if a == axis {
                    map.insert(*a, ce.scale_add(1, -start));
                } else {
                    self.pass_axis(g, *part, *a, &leaves, &mut map)?;
                }
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

    /// The keys under `a` in this environment: `a` if indexed whole (or not flattened), else
    /// the keys under its parts.
    fn keys_under(&self, g: &Graph, a: Axis) -> Vec<Axis> {
        let ps = immediate_parts(g, a);
        if self.map.contains_key(&a) || ps.is_empty() {
            return vec![a];
        }
        ps.into_iter().flat_map(|p| self.keys_under(g, p)).collect()
    }

    /// The environment of operand `x` of a positional relabelling: operand axis `from` takes the
    /// index of view axis `to` — part by part when both are split alike, else whole.
    fn positional(
        &self,
        g: &Graph,
        x: NodeId,
        pairs: impl Iterator<Item = (Axis, Axis)>,
    ) -> Result<IndexEnv, PassError> {
        let leaves = node_keys(g, x);
        let mut map = BTreeMap::new();
        for (from, to) in pairs {
            let fl = leaves_under(g, from, &leaves);
            let tl = self.keys_under(g, to);
            let alike = fl.len() == tl.len()
                && fl.len() > 1
                && tl.iter().all(|t| self.map.contains_key(t))
                && fl
                    .iter()
                    .zip(&tl)
                    .all(|(f, t)| g.resolve_len(*f).ok() == g.resolve_len(*t).ok());
            if alike {
                for (f, t) in fl.iter().zip(&tl) {
                    map.insert(*f, self.get(g, x, *t)?.clone());
                }
            } else {
                map.insert(from, self.whole(g, x, to)?);
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
/// the view's frame ([`node_keys`]) as the iteration space, the strided view into the base tensor's
/// storage (whose strides `strides_of` gives), and the valid-region mask (empty without pads).
pub fn view_index_map(
    g: &Graph,
    node: NodeId,
    strides_of: &dyn Fn(NodeId) -> Option<Strides>,
) -> Result<(StridedView, Vec<ValidRange>), PassError> {
    let space = with_lens(g, node_keys(g, node))?;
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
