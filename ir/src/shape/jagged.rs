//! Jagged shapes: shapes whose slices along the leading modes may differ, and the iterator
//! over their indices.

use std::fmt;

use super::base::ShapeBase;
use super::error::ShapeError;
use super::index::Indices;
use super::smooth::{check_corners, pinned_corners, Shape};

/// A jagged shape: a run of slice shapes along the first mode, each slice itself jagged or
/// smooth, all of one rank. A jagged shape of rank `r` built from rank-`s` slices maps an index
/// of its first `r - s` modes to the shape of that slice.
///
/// Each level of slices has its own origin in its first mode, so different slices may start at
/// different indices (as they do after slicing or transposing). The
/// [`origin`](ShapeBase::origin) of a jagged shape is the corner of its bounding box.
///
/// Equality is structural: two jagged shapes are equal when they have the same slices with the
/// same extents and origins. A run of identical smooth slices is the same as the smooth shape
/// with one more mode, so a smooth shape viewed as jagged equals the jagged shape listing its
/// rows.
///
/// ```
/// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// // A jagged matrix: row 0 has 10 elements, row 1 has 20.
/// let js = JaggedShape::from_slices([Shape::new([10])?, Shape::new([20])?])?;
/// assert_eq!((js.rank(), js.size()), (2, 30));
/// assert_eq!(js.chip_at(&[1])?, JaggedShape::from(Shape::new([20])?));
///
/// let rows = JaggedShape::from_slices([Shape::new([10])?, Shape::new([10])?])?;
/// assert_eq!(rows, JaggedShape::from(Shape::new([2, 10])?));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct JaggedShape {
    pub(crate) repr: Repr,
}

/// How a jagged shape is stored. Invariant: a `Slices` node holds at least one slice and is not
/// a run of identical smooth slices (those collapse into `Smooth`), which makes the
/// representation canonical and derived equality structural.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Repr {
    Null,
    /// Never the null shape.
    Smooth(Shape),
    Slices(SliceRun),
}

/// The slices of the first mode, with cached rank, size and bounding box.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SliceRun {
    pub(crate) origin: usize,
    pub(crate) slices: Vec<JaggedShape>,
    rank: usize,
    size: usize,
    lower: Vec<usize>,
    upper: Vec<usize>,
}

impl Default for JaggedShape {
    /// The null shape, like the reference's default constructor.
    fn default() -> Self {
        JaggedShape::null()
    }
}

impl From<Shape> for JaggedShape {
    /// The smooth shape viewed as jagged (every slice the same).
    fn from(shape: Shape) -> Self {
        if shape.is_null() {
            JaggedShape::null()
        } else {
            JaggedShape {
                repr: Repr::Smooth(shape),
            }
        }
    }
}

impl JaggedShape {
    /// The null shape: no modes and no elements.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, ShapeBase};
    ///
    /// assert!(JaggedShape::null().is_null());
    /// ```
    pub fn null() -> Self {
        JaggedShape { repr: Repr::Null }
    }

    /// The jagged shape whose first mode runs over `slices`, starting at index zero.
    ///
    /// Slices may be [`Shape`]s or [`JaggedShape`]s (so jagged shapes nest), given as a fixed
    /// list or a run-time iterator. No slices give a rank-1 shape with no elements.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let (s10, s20, s30) = (Shape::new([10])?, Shape::new([20])?, Shape::new([30])?);
    /// let e0 = JaggedShape::from_slices([s10.clone()])?;
    /// let e1 = JaggedShape::from_slices([s20, s30])?;
    /// let rank3 = JaggedShape::from_slices([e0, e1])?;
    /// assert_eq!((rank3.rank(), rank3.size()), (3, 60));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::NullSlice`] for a null slice, [`ShapeError::MixedSliceRanks`] if the slices
    /// differ in rank, [`ShapeError::SizeOverflow`] if the element count overflows.
    pub fn from_slices<T: Into<JaggedShape>>(
        slices: impl IntoIterator<Item = T>,
    ) -> Result<Self, ShapeError> {
        JaggedShape::from_slices_with_origin(slices, 0)
    }

    /// Like [`from_slices`](JaggedShape::from_slices), with the first mode starting at
    /// `origin`; each slice keeps its own origin.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let js = JaggedShape::from_slices_with_origin(
    ///     [Shape::with_origin([2], [5])?, Shape::with_origin([1], [6])?],
    ///     10,
    /// )?;
    /// assert_eq!(js.indices().collect::<Vec<_>>(), [[10, 5], [10, 6], [11, 6]]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As for [`from_slices`](JaggedShape::from_slices), and [`ShapeError::IndexOverflow`] if
    /// the last index of the first mode overflows.
    pub fn from_slices_with_origin<T: Into<JaggedShape>>(
        slices: impl IntoIterator<Item = T>,
        origin: usize,
    ) -> Result<Self, ShapeError> {
        let slices: Vec<JaggedShape> = slices.into_iter().map(Into::into).collect();
        let count = slices.len();
        if origin.checked_add(count).is_none() {
            return Err(ShapeError::IndexOverflow {
                mode: 0,
                origin,
                extent: count,
            });
        }
        let Some(first) = slices.first() else {
            return Ok(JaggedShape::from(Shape::with_origin([0], [origin])?));
        };
        let slice_rank = first.rank();
        let mut size = 0usize;
        for (index, slice) in slices.iter().enumerate() {
            if slice.is_null() {
                return Err(ShapeError::NullSlice { index });
            }
            if slice.rank() != slice_rank {
                return Err(ShapeError::MixedSliceRanks {
                    index,
                    expected: slice_rank,
                    found: slice.rank(),
                });
            }
            size = size
                .checked_add(slice.size())
                .ok_or(ShapeError::SizeOverflow)?;
        }
        if let Repr::Smooth(leaf) = &first.repr {
            if slices.iter().all(|slice| slice.repr == first.repr) {
                let extents = std::iter::once(count).chain(leaf.extents().iter().copied());
                let origins = std::iter::once(origin).chain(leaf.first().iter().copied());
                return Ok(JaggedShape::from(Shape::with_origin(extents, origins)?));
            }
        }
        let mut lower = first.origin();
        let mut upper = first.upper();
        for slice in &slices[1..] {
            for (bound, value) in lower.iter_mut().zip(slice.origin()) {
                *bound = (*bound).min(value);
            }
            for (bound, value) in upper.iter_mut().zip(slice.upper()) {
                *bound = (*bound).max(value);
            }
        }
        lower.insert(0, origin);
        upper.insert(0, origin + count);
        Ok(JaggedShape {
            repr: Repr::Slices(SliceRun {
                origin,
                slices,
                rank: slice_rank + 1,
                size,
                lower,
                upper,
            }),
        })
    }

    /// The smooth shape this jagged shape equals, if its slices are all alike.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let rows = JaggedShape::from_slices([Shape::new([3])?, Shape::new([3])?])?;
    /// assert_eq!(rows.as_smooth(), Some(&Shape::new([2, 3])?));
    /// let ragged = JaggedShape::from_slices([Shape::new([3])?, Shape::new([4])?])?;
    /// assert_eq!(ragged.as_smooth(), None);
    /// # Ok(()) }
    /// ```
    pub fn as_smooth(&self) -> Option<&Shape> {
        match &self.repr {
            Repr::Smooth(shape) => Some(shape),
            Repr::Null | Repr::Slices(_) => None,
        }
    }

    /// One past the largest index of each mode: the far corner of the bounding box.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let js = JaggedShape::from_slices([Shape::new([10])?, Shape::new([20])?])?;
    /// assert_eq!(js.upper(), [2, 20]);
    /// # Ok(()) }
    /// ```
    pub fn upper(&self) -> Vec<usize> {
        match &self.repr {
            Repr::Null => Vec::new(),
            Repr::Smooth(shape) => shape.upper(),
            Repr::Slices(run) => run.upper.clone(),
        }
    }

    /// The smooth boxes making up the shape, in lexicographic order: each is the prefix of
    /// unrolled indices (as unit ranges) followed by a smooth leaf's ranges.
    pub(crate) fn boxes(&self) -> Vec<Vec<(usize, usize)>> {
        fn walk(
            shape: &JaggedShape,
            prefix: &mut Vec<(usize, usize)>,
            out: &mut Vec<Vec<(usize, usize)>>,
        ) {
            match &shape.repr {
                Repr::Null => {}
                Repr::Smooth(leaf) => {
                    let mut bx = prefix.clone();
                    bx.extend(leaf.first().iter().zip(leaf.upper()).map(|(&b, e)| (b, e)));
                    out.push(bx);
                }
                Repr::Slices(run) => {
                    for (position, slice) in run.slices.iter().enumerate() {
                        let index = run.origin + position;
                        prefix.push((index, index + 1));
                        walk(slice, prefix, out);
                        prefix.pop();
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut Vec::new(), &mut out);
        out
    }

    /// The part inside `[begin, end)` (one entry per mode), keeping the slice structure and
    /// clamping slices that only partly overlap the box.
    fn clamp_to_box(&self, begin: &[usize], end: &[usize]) -> Result<JaggedShape, ShapeError> {
        match &self.repr {
            Repr::Null => Ok(JaggedShape::null()),
            Repr::Smooth(leaf) => {
                let (mut first, mut extents) = (Vec::new(), Vec::new());
                for (mode, (lo, hi)) in leaf.first().iter().zip(leaf.upper()).enumerate() {
                    let b = begin[mode].clamp(*lo, hi);
                    let e = end[mode].clamp(b, hi);
                    first.push(b);
                    extents.push(e - b);
                }
                Ok(JaggedShape::from(Shape::with_origin(extents, first)?))
            }
            Repr::Slices(run) => {
                let (lo, hi) = (run.origin, run.origin + run.slices.len());
                let b = begin[0].clamp(lo, hi);
                let e = end[0].clamp(b, hi);
                if b == e {
                    let first = std::iter::once(b).chain(begin[1..].iter().copied());
                    let empty = Shape::with_origin(vec![0; run.rank], first)?;
                    return Ok(JaggedShape::from(empty));
                }
                let slices = run.slices[b - lo..e - lo]
                    .iter()
                    .map(|slice| slice.clamp_to_box(&begin[1..], &end[1..]))
                    .collect::<Result<Vec<_>, _>>()?;
                JaggedShape::from_slices_with_origin(slices, b)
            }
        }
    }

    /// The same shape without the modes flagged in `dropped`, which were sliced to the unit
    /// ranges starting at `begin`; `mode` numbers the first of them in the whole shape.
    fn drop_modes(
        &self,
        dropped: &[bool],
        begin: &[usize],
        mode: usize,
    ) -> Result<JaggedShape, ShapeError> {
        // A slice that lacks the pinned index has an empty range there; dropping that mode
        // would turn "no element" into one element.
        let missing = |m: usize| ShapeError::ChipMissingIndex {
            mode: mode + m,
            index: begin[m],
        };
        match &self.repr {
            Repr::Null => Ok(JaggedShape::null()),
            Repr::Smooth(leaf) => {
                let empty = leaf
                    .extents()
                    .iter()
                    .zip(dropped)
                    .position(|(&e, &d)| d && e == 0);
                match empty {
                    Some(m) => Err(missing(m)),
                    None => Ok(JaggedShape::from(leaf.drop_modes(dropped))),
                }
            }
            Repr::Slices(run) => {
                if dropped[0] {
                    // Slicing left a unit range here, so there is exactly one slice.
                    debug_assert_eq!(run.slices.len(), 1);
                    run.slices[0].drop_modes(&dropped[1..], &begin[1..], mode + 1)
                } else {
                    let slices = run
                        .slices
                        .iter()
                        .map(|slice| slice.drop_modes(&dropped[1..], &begin[1..], mode + 1))
                        .collect::<Result<Vec<_>, _>>()?;
                    JaggedShape::from_slices_with_origin(slices, run.origin)
                }
            }
        }
    }

    /// Checks that the leading `pinned` indices lead to an existing slice.
    fn check_path(&self, pinned: &[usize], mode: usize) -> Result<(), ShapeError> {
        let Some((&index, rest)) = pinned.split_first() else {
            return Ok(());
        };
        match &self.repr {
            Repr::Null => Err(ShapeError::TooManyPins {
                rank: 0,
                found: pinned.len(),
            }),
            Repr::Smooth(leaf) => {
                let upper = leaf.upper();
                super::smooth::check_pins(leaf.first(), &upper, pinned).map_err(|err| match err {
                    ShapeError::IndexOutOfRange {
                        mode: m,
                        index,
                        lower,
                        upper,
                    } => ShapeError::IndexOutOfRange {
                        mode: mode + m,
                        index,
                        lower,
                        upper,
                    },
                    other => other,
                })
            }
            Repr::Slices(run) => {
                let (lo, hi) = (run.origin, run.origin + run.slices.len());
                if index < lo || index >= hi {
                    return Err(ShapeError::IndexOutOfRange {
                        mode,
                        index,
                        lower: lo,
                        upper: hi,
                    });
                }
                run.slices[index - lo].check_path(rest, mode + 1)
            }
        }
    }

    /// Moves every index by `new - old` per mode; every index is at least `old`.
    fn translate(&self, old: &[usize], new: &[usize]) -> Result<JaggedShape, ShapeError> {
        let shift = |mode: usize, value: usize, extent: usize| {
            (value - old[mode])
                .checked_add(new[mode])
                .ok_or(ShapeError::IndexOverflow {
                    mode,
                    origin: value - old[mode],
                    extent,
                })
        };
        match &self.repr {
            Repr::Null => Ok(JaggedShape::null()),
            Repr::Smooth(leaf) => {
                let first = leaf
                    .first()
                    .iter()
                    .zip(leaf.extents())
                    .enumerate()
                    .map(|(mode, (&value, &extent))| shift(mode, value, extent))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(JaggedShape::from(Shape::with_origin(
                    leaf.extents().iter().copied(),
                    first,
                )?))
            }
            Repr::Slices(run) => {
                let origin = shift(0, run.origin, run.slices.len())?;
                let slices = run
                    .slices
                    .iter()
                    .map(|slice| slice.translate(&old[1..], &new[1..]))
                    .collect::<Result<Vec<_>, _>>()?;
                JaggedShape::from_slices_with_origin(slices, origin)
            }
        }
    }
}

impl ShapeBase for JaggedShape {
    type Indices<'a> = JaggedIndices<'a>;

    fn rank(&self) -> usize {
        match &self.repr {
            Repr::Null => 0,
            Repr::Smooth(shape) => shape.rank(),
            Repr::Slices(run) => run.rank,
        }
    }

    fn size(&self) -> usize {
        match &self.repr {
            Repr::Null => 0,
            Repr::Smooth(shape) => shape.size(),
            Repr::Slices(run) => run.size,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.repr, Repr::Null)
    }

    fn origin(&self) -> Vec<usize> {
        match &self.repr {
            Repr::Null => Vec::new(),
            Repr::Smooth(shape) => shape.first().to_vec(),
            Repr::Slices(run) => run.lower.clone(),
        }
    }

    fn set_origin(&mut self, origin: &[usize]) -> Result<(), ShapeError> {
        if origin.len() != self.rank() {
            return Err(ShapeError::OriginRank {
                rank: self.rank(),
                found: origin.len(),
            });
        }
        *self = self.translate(&self.origin(), origin)?;
        Ok(())
    }

    fn leading_size(&self, modes: usize) -> Result<usize, ShapeError> {
        if modes > self.rank() {
            return Err(ShapeError::ModeOutOfRange {
                mode: modes,
                rank: self.rank(),
            });
        }
        match &self.repr {
            Repr::Null => Ok(0),
            Repr::Smooth(shape) => shape.leading_size(modes),
            Repr::Slices(_) if modes == 0 => Ok(1),
            Repr::Slices(run) => run.slices.iter().try_fold(0usize, |total, slice| {
                total
                    .checked_add(slice.leading_size(modes - 1)?)
                    .ok_or(ShapeError::SizeOverflow)
            }),
        }
    }

    fn indices(&self) -> JaggedIndices<'_> {
        JaggedIndices::new(self)
    }

    fn slice(&self, begin: &[usize], end: &[usize]) -> Result<JaggedShape, ShapeError> {
        check_corners(&self.origin(), &self.upper(), begin, end)?;
        self.clamp_to_box(begin, end)
    }

    fn slice_at(&self, pinned: &[usize]) -> Result<JaggedShape, ShapeError> {
        if pinned.len() > self.rank() {
            return Err(ShapeError::TooManyPins {
                rank: self.rank(),
                found: pinned.len(),
            });
        }
        self.check_path(pinned, 0)?;
        let (begin, end) = pinned_corners(&self.origin(), &self.upper(), pinned);
        self.clamp_to_box(&begin, &end)
    }

    fn chip(&self, begin: &[usize], end: &[usize]) -> Result<JaggedShape, ShapeError> {
        let sliced = self.slice(begin, end)?;
        let dropped: Vec<bool> = begin.iter().zip(end).map(|(b, e)| e - b == 1).collect();
        sliced.drop_modes(&dropped, begin, 0)
    }

    fn chip_at(&self, pinned: &[usize]) -> Result<JaggedShape, ShapeError> {
        let sliced = self.slice_at(pinned)?;
        let dropped: Vec<bool> = (0..self.rank()).map(|mode| mode < pinned.len()).collect();
        let (begin, _) = pinned_corners(&self.origin(), &self.upper(), pinned);
        sliced.drop_modes(&dropped, &begin, 0)
    }
}

impl<'a> IntoIterator for &'a JaggedShape {
    type Item = Vec<usize>;
    type IntoIter = JaggedIndices<'a>;

    /// Iterates the absolute indices, as [`ShapeBase::indices`].
    fn into_iter(self) -> JaggedIndices<'a> {
        JaggedIndices::new(self)
    }
}

impl fmt::Display for JaggedShape {
    /// `null`, a smooth shape as [`Shape`] shows it, or the slices in brackets, preceded by
    /// `@ origin` when the first mode does not start at zero: `[{10}, {20}]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Null => f.write_str("null"),
            Repr::Smooth(shape) => write!(f, "{shape}"),
            Repr::Slices(run) => {
                if run.origin != 0 {
                    write!(f, "@ {} ", run.origin)?;
                }
                f.write_str("[")?;
                for (i, slice) in run.slices.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{slice}")?;
                }
                f.write_str("]")
            }
        }
    }
}

/// The indices of a [`JaggedShape`] in lexicographic order.
///
/// ```
/// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// let js = JaggedShape::from_slices([Shape::new([1])?, Shape::new([2])?])?;
/// assert_eq!(js.indices().collect::<Vec<_>>(), [[0, 0], [1, 0], [1, 1]]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct JaggedIndices<'a> {
    /// One frame per unrolled mode on the path to the current leaf.
    frames: Vec<Frame<'a>>,
    /// The index of each unrolled mode on that path.
    prefix: Vec<usize>,
    /// The smooth leaf being iterated, if any.
    leaf: Option<Indices>,
}

#[derive(Debug, Clone)]
struct Frame<'a> {
    slices: &'a [JaggedShape],
    origin: usize,
    next: usize,
}

impl<'a> JaggedIndices<'a> {
    pub(crate) fn new(shape: &'a JaggedShape) -> Self {
        let mut it = JaggedIndices {
            frames: Vec::new(),
            prefix: Vec::new(),
            leaf: None,
        };
        it.enter(shape);
        it
    }

    fn enter(&mut self, shape: &'a JaggedShape) {
        match &shape.repr {
            Repr::Null => {}
            Repr::Smooth(s) => self.leaf = Some(s.box_indices()),
            Repr::Slices(node) => self.frames.push(Frame {
                slices: &node.slices,
                origin: node.origin,
                next: 0,
            }),
        }
    }
}

impl Iterator for JaggedIndices<'_> {
    type Item = Vec<usize>;

    fn next(&mut self) -> Option<Vec<usize>> {
        loop {
            if let Some(leaf) = &mut self.leaf {
                if let Some(rest) = leaf.advance() {
                    let mut index = Vec::with_capacity(self.prefix.len() + rest.len());
                    index.extend_from_slice(&self.prefix);
                    index.extend_from_slice(rest);
                    return Some(index);
                }
                self.leaf = None;
            }
            let depth = self.frames.len().checked_sub(1)?;
            let frame = &mut self.frames[depth];
            if frame.next == frame.slices.len() {
                self.frames.pop();
                self.prefix.truncate(depth);
                continue;
            }
            let position = frame.next;
            frame.next += 1;
            let slices = frame.slices;
            self.prefix.truncate(depth);
            self.prefix.push(frame.origin + position);
            self.enter(&slices[position]);
        }
    }
}
