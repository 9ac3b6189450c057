//! Axes: named dimensions with an identity, dual axes and ordered, duplicate-free axis lists
//! with list and set operations (docs/design.md, "Axes").
//!
//! An [`Axis`] is a small copyable value: the identity of an axis entry in a
//! [`Graph`](crate::graph::Graph)'s axis table plus a dual degree. The table entry ([`AxisData`])
//! holds the name, the roles and the length, which may be left unbound until the graph is compiled.
//! Two axes made separately are different even when they share a name and a length.

pub use crate::axis_names::debug_axes_by_index;
use crate::entity;
use std::collections::HashSet;
use std::fmt;

entity!(
    /// An entry in a graph's axis table.
    AxisId,
    "axis"
);

/// A dimension of a tensor: an axis-table entry and its dual degree `k` (the axis is `A^(k*)`).
///
/// `k = 0` is the axis itself, `k = 1` its dual `A*`, `k = -1` the "anti-star" axis `A^(-1*)`.
/// An axis and its duals have the same length but are different axes: elementwise ops never pair
/// them. `dot` pairs `A^((k+1)*)` in its left operand with `A^(k*)` in its right one, and
/// `transpose` maps `A^(k*)` to `A^((1-k)*)`.
///
/// An axis also remembers which graph's axis table it came from (its *table*, a process-wide
/// number each new graph draws; a clone of a graph keeps it): axis ids are table indices, so
/// axis 0 of one graph and axis 0 of another would otherwise be the same value. Comparison,
/// ordering and hashing ignore the table (inside a graph they are the same), and calls check it
/// ([`Axis::same_table`]): an array labelled with another graph's axes is rejected instead of
/// being read as this graph's axes of the same index. [`Axis::new`] makes an axis of no known
/// table, which every table accepts.
///
/// ```
/// use weft::ir::Graph;
/// let mut g = Graph::new();
/// let n = g.axis("N", 4)?;
/// assert_eq!(g.axis_name(n), "N");
/// assert_eq!(g.resolve_len(n)?, 4);
/// assert_ne!(n, n.dual()); // N*, which a dot pairs with N
/// # Ok::<(), weft::ir::GraphError>(())
/// ```
#[derive(Clone, Copy)]
pub struct Axis {
    /// The axis-table entry.
    pub id: AxisId,
    /// The dual degree.
    pub dual: i32,
    /// The graph axis table the entry belongs to; 0 when unknown.
    table: u32,
}

impl PartialEq for Axis {
    fn eq(&self, other: &Axis) -> bool {
        (self.id, self.dual) == (other.id, other.dual)
    }
}

impl Eq for Axis {}

impl std::hash::Hash for Axis {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.id, self.dual).hash(state)
    }
}

impl PartialOrd for Axis {
    fn partial_cmp(&self, other: &Axis) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Axis {
    fn cmp(&self, other: &Axis) -> std::cmp::Ordering {
        (self.id, self.dual).cmp(&(other.id, other.dual))
    }
}

/// The axis's name in its graph, with its dual degree as `Graph::axis_name` writes it (`N`,
/// `N*`, `N**`, `N^-1*`; `N@3` where two declared axes are named `N`), looked up in a
/// process-wide registry of the names of every live graph's axis table. Where no one name is
/// known it is the table index instead (`axis3`, `axis3*`, `axis3^-1*`): an axis of no table
/// ([`Axis::new`]), of a graph since dropped (with all its clones), or an index that clones of
/// one graph use for different axes. [`debug_axes_by_index`] gives the index form always.
///
/// ```
/// use weft::ir::{Axes, Graph};
/// let mut g = Graph::new();
/// let (n, c) = (g.axis("N", 2)?, g.axis("C", 3)?);
/// assert_eq!(format!("{:?}", Axes::new([n, c.dual()])?), "Axes([N, C*])");
/// drop(g);
/// assert_eq!(format!("{n:?}"), "axis0");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
impl fmt::Debug for Axis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = crate::axis_names::name_of(self.table, self.id.as_u32())
            .unwrap_or_else(|| self.id.to_string());
        match self.dual {
            0 => f.write_str(&base),
            k if (1..=3).contains(&k) => write!(f, "{base}{}", "*".repeat(k as usize)),
            k => write!(f, "{base}^{k}*"),
        }
    }
}

impl Axis {
    /// The plain (degree 0) axis of `id`, of no known table (accepted by every graph; a
    /// graph's own axes come from its methods, e.g. [`Graph::axis_of`](crate::Graph::axis_of)).
    pub fn new(id: AxisId) -> Axis {
        Axis::in_table(id, 0, 0)
    }
    pub(crate) fn in_table(id: AxisId, dual: i32, table: u32) -> Axis {
        Axis { id, dual, table }
    }
    /// This axis's entry at dual degree `dual` (same table).
    pub fn with_dual(self, dual: i32) -> Axis {
        Axis { dual, ..self }
    }
    /// The dual axis `A*` of this axis (degree + 1).
    pub fn dual(self) -> Axis {
        self.with_dual(self.dual.saturating_add(1))
    }
    /// The axis whose dual is this one (degree − 1).
    pub fn undual(self) -> Axis {
        self.with_dual(self.dual.saturating_sub(1))
    }
    /// The axis a transpose turns this one into: `A^(k*)` → `A^((1-k)*)`.
    pub fn transposed(self) -> Axis {
        self.with_dual(1i32.saturating_sub(self.dual))
    }
    /// The number of the axis table this axis came from (0: unknown).
    pub fn table(self) -> u32 {
        self.table
    }
    /// Whether this axis and `other` may belong to one graph: the same table, or either of
    /// no known table.
    pub fn same_table(self, other: Axis) -> bool {
        self.table == other.table || self.table == 0 || other.table == 0
    }
}

/// A semantic role an axis may carry (docs/design.md, "Axes").
#[derive(Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum Role {
    /// Image or feature-map height.
    Height,
    /// Image or feature-map width.
    Width,
    /// Image depth.
    Depth,
    /// Input channels.
    Channel,
    /// Output channels.
    Channelout,
    /// Recurrent time steps.
    Time,
    /// A role of the user's own.
    User(String),
}

impl Role {
    /// The role's spelling in the text format: `Height`, …, or the user's name.
    pub fn name(&self) -> &str {
        match self {
            Role::Height => "Height",
            Role::Width => "Width",
            Role::Depth => "Depth",
            Role::Channel => "Channel",
            Role::Channelout => "Channelout",
            Role::Time => "Time",
            Role::User(s) => s,
        }
    }
    /// Reads a role: a standard role's name, otherwise a user role.
    pub fn parse(s: &str) -> Role {
        match s {
            "Height" => Role::Height,
            "Width" => Role::Width,
            "Depth" => Role::Depth,
            "Channel" => Role::Channel,
            "Channelout" => Role::Channelout,
            "Time" => Role::Time,
            other => Role::User(other.to_string()),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A range along an axis, Python style: negative bounds count from the end, `step` is non-zero.
///
/// ```
/// use weft::ir::SliceRange;
/// let r = SliceRange::range(1, -1); // every element but the first and the last
/// assert_eq!((r.start, r.stop, r.step), (Some(1), Some(-1), 1));
/// assert_eq!(SliceRange::reversed().step, -1);
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SliceRange {
    /// First index taken; `None` is the start (step > 0) or the end (step < 0).
    pub start: Option<i64>,
    /// Index one past the last taken, in the direction of `step`; `None` runs to the edge.
    pub stop: Option<i64>,
    /// Distance between taken indices; never 0.
    pub step: i64,
}

impl SliceRange {
    /// `start..stop` with step 1.
    pub fn range(start: i64, stop: i64) -> SliceRange {
        SliceRange {
            start: Some(start),
            stop: Some(stop),
            step: 1,
        }
    }
    /// The whole axis, reversed.
    pub fn reversed() -> SliceRange {
        SliceRange {
            start: None,
            stop: None,
            step: -1,
        }
    }

    /// Resolves the range against an axis of length `len`: the first index taken, the step and
    /// the number of indices taken. Bounds outside the axis are errors (weft does not clamp as
    /// Python does: an out-of-range slice is almost always a bug); a range that takes nothing
    /// (`2:2`, `3:1`, anything of an empty axis) is an empty slice, as in NumPy.
    pub fn resolve(&self, len: usize) -> Result<ResolvedSlice, String> {
        if self.step == 0 {
            return Err("slice step is 0".into());
        }
        // In i128, where every i64 bound, usize length and their sums fit: no bound, length or
        // step, however large, overflows.
        let n = len as i128;
        let step = i128::from(self.step);
        let norm = |v: i64| {
            if v < 0 {
                i128::from(v) + n
            } else {
                i128::from(v)
            }
        };
        let (start, count) = if step > 0 {
            let start = self.start.map(norm).unwrap_or(0);
            let stop = self.stop.map(norm).unwrap_or(n);
            if start < 0 || start > n || stop < 0 || stop > n {
                return Err(format!("{self} is out of range for length {len}"));
            }
            if stop <= start {
                return Ok(ResolvedSlice::EMPTY);
            }
            (start, (stop - start - 1) / step + 1)
        } else {
            let start = self.start.map(norm).unwrap_or(n - 1);
            // An explicit stop of -1 means the last element, as in Python; only `None` runs past 0.
            let stop = self.stop.map(norm).unwrap_or(-1);
            if start < -1 || start >= n || stop < -1 || stop >= n {
                return Err(format!("{self} is out of range for length {len}"));
            }
            if stop >= start {
                return Ok(ResolvedSlice::EMPTY);
            }
            (start, (start - stop - 1) / -step + 1)
        };
        // Both lie in 0..len, so they fit usize. A one-index slice never moves, so its step is
        // 1: index arithmetic downstream (`step × stride`) cannot overflow on a huge step.
        Ok(ResolvedSlice {
            first: start as usize,
            step: if count == 1 { 1 } else { self.step },
            len: count as usize,
        })
    }
}

impl fmt::Display for SliceRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(s) = self.start {
            write!(f, "{s}")?;
        }
        f.write_str(":")?;
        if let Some(s) = self.stop {
            write!(f, "{s}")?;
        }
        if self.step != 1 {
            write!(f, ":{}", self.step)?;
        }
        Ok(())
    }
}

/// A slice range resolved against a length: index `i` of the slice is `first + i·step`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ResolvedSlice {
    /// The source index of slice index 0.
    pub first: usize,
    /// The source distance between consecutive slice indices (1 when `len` is 1); at most the
    /// sliced axis's length in magnitude otherwise.
    pub step: i64,
    /// The number of indices in the slice (0 for an empty slice).
    pub len: usize,
}

impl ResolvedSlice {
    /// A slice taking nothing (`2:2`, or anything of an empty axis).
    pub const EMPTY: ResolvedSlice = ResolvedSlice {
        first: 0,
        step: 1,
        len: 0,
    };
}

/// How an axis came to be: declared by the user, or derived by a view op from other axes.
///
/// Derived axes are interned: asking twice for the same derivation gives the same axis, so
/// `slice(x, H=1:3) + slice(y, H=1:3)` pairs the two sliced axes.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum AxisDef {
    /// A declared axis; its length may be left unbound until compilation.
    Base {
        /// The bound length, if any.
        len: Option<usize>,
    },
    /// `slice(of, range)`.
    Slice {
        /// The sliced axis.
        of: Axis,
        /// The range taken.
        range: SliceRange,
    },
    /// `pad(of, before, after)`: `before` zeros, the axis, `after` zeros.
    Pad {
        /// The padded axis.
        of: Axis,
        /// Zeros before.
        before: usize,
        /// Zeros after.
        after: usize,
    },
    /// The flattening of several axes, the first one major.
    Flatten(Vec<Axis>),
    /// The concatenation of several axes, in order.
    Concat(Vec<Axis>),
    /// The positions of a window sliding over `of` (a convolution's or pool's output axis);
    /// it carries `of`'s roles. Length [`window_len`].
    Window {
        /// The axis the window slides over.
        of: Axis,
        /// The window's extent: a filter axis or a fixed length.
        kernel: WindowKernel,
        /// Stride, dilation and padding.
        step: WindowStep,
    },
    /// A convolution's output feature axis, made from the filter's Channelout axis: the same
    /// length, with the Channel role, so the next convolution contracts it.
    Features(Axis),
}

/// The extent of a sliding window: the length of a filter axis, or a fixed length (pools).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum WindowKernel {
    /// As long as this filter axis.
    Axis(Axis),
    /// A fixed number of taps.
    Len(usize),
}

/// How a window moves over one axis: `stride` between positions, `dilation` between taps,
/// `before` and `after` zeros of padding.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct WindowStep {
    /// Distance between consecutive window positions (≥ 1).
    pub stride: usize,
    /// Distance between consecutive taps of one window (≥ 1).
    pub dilation: usize,
    /// Padding before the axis.
    pub before: usize,
    /// Padding after the axis.
    pub after: usize,
}

impl Default for WindowStep {
    fn default() -> WindowStep {
        WindowStep {
            stride: 1,
            dilation: 1,
            before: 0,
            after: 0,
        }
    }
}

/// An error naming them when the stride, the dilation or the tap count is 0.
pub fn zero_in_window(taps: usize, step: &WindowStep) -> Result<(), String> {
    if step.stride == 0 || step.dilation == 0 || taps == 0 {
        return Err(format!(
            "stride {}, dilation {} and window {} must all be at least 1",
            step.stride, step.dilation, taps
        ));
    }
    Ok(())
}

/// The number of positions of a window of `taps` taps moving by `step` over an axis of `len`:
/// `(len + before + after − dilation·(taps − 1) − 1) / stride + 1`. An error (the message says
/// why) when the stride, dilation or tap count is 0, the padded length is past what an axis
/// may be ([`crate::size::MAX_TENSOR_BYTES`]: its loops and slices index it in i64), or the
/// window is longer than the padded axis.
pub fn window_len(len: usize, taps: usize, step: &WindowStep) -> Result<usize, String> {
    zero_in_window(taps, step)?;
    let too_long = || {
        format!(
            "the padded length ({len} + {} + {}) or the window's extent is past {}",
            step.before,
            step.after,
            crate::size::MAX_TENSOR_BYTES
        )
    };
    let padded = len
        .checked_add(step.before)
        .and_then(|n| n.checked_add(step.after))
        .filter(|&n| n <= crate::size::MAX_TENSOR_BYTES)
        .ok_or_else(too_long)?;
    let extent = (taps - 1)
        .checked_mul(step.dilation)
        .and_then(|n| n.checked_add(1))
        .ok_or_else(too_long)?;
    if extent > padded {
        return Err(format!(
            "a window spanning {extent} (window {taps}, dilation {}) is longer than the padded length {padded} ({len} + {} + {})",
            step.dilation, step.before, step.after
        ));
    }
    Ok((padded - extent) / step.stride + 1)
}

/// An entry of a graph's axis table.
#[derive(Clone, PartialEq, Debug)]
pub struct AxisData {
    /// The name; not necessarily unique.
    pub name: String,
    /// Semantic roles.
    pub roles: Vec<Role>,
    /// Declared or derived.
    pub def: AxisDef,
}

/// Errors of the list and set operations on [`Axes`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AxesError {
    /// An axis occurs at most once in the axes of a tensor (docs/design.md, "Axes").
    #[error("axis `{0:?}` occurs more than once; a tensor's axes are distinct")]
    Duplicate(Axis),
}

/// An ordered list of distinct axes. Order is a presentation, not a layout.
///
/// ```
/// use weft::ir::{Axes, Graph};
/// let mut g = Graph::new();
/// let (a, b) = (g.axis("A", 2)?, g.axis("B", 3)?);
/// let ab = Axes::new([a, b])?;
/// assert!(ab.is_equal_set(&Axes::new([b, a])?)); // the same set, another order
/// assert!(Axes::new([a, a]).is_err()); // axes are distinct
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Default, Debug)]
pub struct Axes(Vec<Axis>);

impl Axes {
    /// Whether these are the axes `other`, in order, each labelled from the same graph's axis
    /// table ([`Axis::same_table`]): an array labelled with another graph's axes of the same
    /// ids is not what a placeholder of this graph takes.
    pub fn identical_to(&self, other: &Axes) -> bool {
        self == other && self.iter().zip(other.iter()).all(|(x, y)| x.same_table(*y))
    }

    /// The axes of a scalar.
    pub fn scalar() -> Axes {
        Axes(Vec::new())
    }
    /// Axes in the given order; an axis given twice is an error.
    pub fn new(axes: impl IntoIterator<Item = Axis>) -> Result<Axes, AxesError> {
        let v: Vec<Axis> = axes.into_iter().collect();
        let mut seen = HashSet::new();
        for a in &v {
            if !seen.insert(*a) {
                return Err(AxesError::Duplicate(*a));
            }
        }
        Ok(Axes(v))
    }
    /// Axes known to be distinct (they come from an existing `Axes` by a bijection).
    pub(crate) fn new_unchecked(axes: &[Axis]) -> Axes {
        Axes(axes.to_vec())
    }
    /// The axes as a slice.
    pub fn as_slice(&self) -> &[Axis] {
        &self.0
    }
    /// Iterates in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Axis> {
        self.0.iter()
    }
    /// The number of axes (the rank).
    pub fn len(&self) -> usize {
        self.0.len()
    }
    /// True for a scalar.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// True if `a` is one of these axes.
    pub fn contains(&self, a: Axis) -> bool {
        self.0.contains(&a)
    }
    /// The position of `a`, if present.
    pub fn position(&self, a: Axis) -> Option<usize> {
        self.0.iter().position(|x| *x == a)
    }
    /// List concatenation (nGraph's `__add__`; docs/design.md, "Axes"): an axis in both is an
    /// error.
    pub fn concat(&self, other: &Axes) -> Result<Axes, AxesError> {
        Axes::new(self.0.iter().chain(other.0.iter()).copied())
    }
    /// Ordered set difference (`__sub__`): these axes, in order, that are not in `other`.
    pub fn difference(&self, other: &Axes) -> Axes {
        Axes(
            self.0
                .iter()
                .copied()
                .filter(|a| !other.contains(*a))
                .collect(),
        )
    }
    /// Ordered set union (`__or__`): these axes, then `other`'s that are not among them.
    pub fn union(&self, other: &Axes) -> Axes {
        let mut v = self.0.clone();
        v.extend(other.0.iter().copied().filter(|a| !self.contains(*a)));
        Axes(v)
    }
    /// Ordered set intersection (`__and__`): these axes, in order, that are also in `other`.
    pub fn intersection(&self, other: &Axes) -> Axes {
        Axes(
            self.0
                .iter()
                .copied()
                .filter(|a| other.contains(*a))
                .collect(),
        )
    }
    /// True if every axis here is in `other`.
    pub fn is_sub_set(&self, other: &Axes) -> bool {
        self.0.iter().all(|a| other.contains(*a))
    }
    /// True if every axis of `other` is here.
    pub fn is_super_set(&self, other: &Axes) -> bool {
        other.is_sub_set(self)
    }
    /// True if both hold the same axes, in any order.
    pub fn is_equal_set(&self, other: &Axes) -> bool {
        self.len() == other.len() && self.is_sub_set(other)
    }
    /// The first axis here whose equal in `theirs` belongs to another graph's axis table
    /// ([`Axis::same_table`]), with that equal: an array labelled with another graph's axes.
    pub fn foreign_to(&self, theirs: &Axes) -> Option<(Axis, Axis)> {
        self.iter().find_map(|a| {
            let b = theirs.iter().find(|b| *b == a)?;
            (!a.same_table(*b)).then_some((*a, *b))
        })
    }
    /// The negation of [`Axes::is_equal_set`].
    pub fn is_not_equal_set(&self, other: &Axes) -> bool {
        !self.is_equal_set(other)
    }
    /// The result axes of an elementwise op (docs/design.md, "Axes"): (1) the same set in another
    /// order keeps the left order; (2) if one operand's axes are a superset of the other's, its
    /// order wins; (3) otherwise the left axes followed by the right axes not among them.
    pub fn elementwise(left: &Axes, right: &Axes) -> Axes {
        if left.is_equal_set(right) || left.is_super_set(right) {
            left.clone()
        } else if right.is_super_set(left) {
            right.clone()
        } else {
            left.union(right)
        }
    }
}

impl<'a> IntoIterator for &'a Axes {
    type Item = &'a Axis;
    type IntoIter = std::slice::Iter<'a, Axis>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl std::ops::Index<usize> for Axes {
    type Output = Axis;
    fn index(&self, i: usize) -> &Axis {
        &self.0[i]
    }
}

impl std::ops::Add for &Axes {
    type Output = Result<Axes, AxesError>;
    fn add(self, rhs: &Axes) -> Self::Output {
        self.concat(rhs)
    }
}

impl std::ops::Sub for &Axes {
    type Output = Axes;
    fn sub(self, rhs: &Axes) -> Axes {
        self.difference(rhs)
    }
}

impl std::ops::BitOr for &Axes {
    type Output = Axes;
    fn bitor(self, rhs: &Axes) -> Axes {
        self.union(rhs)
    }
}

impl std::ops::BitAnd for &Axes {
    type Output = Axes;
    fn bitand(self, rhs: &Axes) -> Axes {
        self.intersection(rhs)
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn slices_of_huge_lengths_and_steps_resolve_without_overflow() {
        let huge = 1usize << 63;
        let r = SliceRange::reversed().resolve(huge).unwrap();
        assert_eq!((r.first, r.len), (huge - 1, huge));
        let r = SliceRange {
            start: None,
            stop: None,
            step: i64::MIN,
        }
        .resolve(4)
        .unwrap();
        // One index taken: its step is 1, so `step × stride` cannot overflow downstream.
        assert_eq!((r.first, r.step, r.len), (3, 1, 1));
        let r = SliceRange {
            start: Some(2),
            stop: Some(i64::MIN),
            step: 1,
        };
        // The stop counts from an end past i64: 2^64 − 1 − 2^63 = 2^63 − 1.
        assert_eq!(r.resolve(usize::MAX).unwrap().len, (1usize << 63) - 3);
    }
}
