//! Smooth shapes: hyper-rectangles given by one extent per mode.

use std::fmt;

use super::base::ShapeBase;
use super::error::ShapeError;
use super::index::Indices;

/// A smooth shape: a hyper-rectangle of indices, one extent per mode, starting at an origin.
///
/// The null shape (no modes, no elements; [`Shape::null`], also the [`Default`]) is distinct
/// from the rank-0 scalar shape (no modes, one element; [`Shape::scalar`]). Two shapes are equal
/// when they have the same extents and the same origin.
///
/// ```
/// use weft::ir::shape::{Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// let matrix = Shape::new([10, 20])?;
/// assert_eq!((matrix.rank(), matrix.size()), (2, 200));
/// assert_eq!(matrix.extent(1)?, 20);
///
/// // Rank known only at run time.
/// let extents: Vec<usize> = vec![10, 20, 30];
/// assert_eq!(Shape::new(extents.iter().copied())?.size(), 6000);
///
/// assert_eq!((Shape::null().size(), Shape::scalar().size()), (0, 1));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shape {
    extents: Vec<usize>,
    origin: Vec<usize>,
    null: bool,
    size: usize,
}

impl Default for Shape {
    /// The null shape, like the reference's default constructor.
    fn default() -> Self {
        Shape::null()
    }
}

impl Shape {
    /// The null shape: no modes and no elements.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, ShapeBase};
    ///
    /// let null = Shape::null();
    /// assert!(null.is_null());
    /// assert_eq!((null.rank(), null.size()), (0, 0));
    /// assert_ne!(null, Shape::scalar());
    /// ```
    pub fn null() -> Self {
        Shape {
            extents: Vec::new(),
            origin: Vec::new(),
            null: true,
            size: 0,
        }
    }

    /// The rank-0 shape of a scalar: no modes and one element.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, ShapeBase};
    ///
    /// assert_eq!((Shape::scalar().rank(), Shape::scalar().size()), (0, 1));
    /// ```
    pub fn scalar() -> Self {
        Shape {
            extents: Vec::new(),
            origin: Vec::new(),
            null: false,
            size: 1,
        }
    }

    /// A shape with the given extents (a fixed list or any run-time iterator) whose origin is
    /// the zero index.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Shape::new([10, 20, 30])?.rank(), 3);
    /// assert_eq!(Shape::new([])?, Shape::scalar());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::SizeOverflow`] if the element count does not fit in `usize`.
    pub fn new(extents: impl IntoIterator<Item = usize>) -> Result<Self, ShapeError> {
        let extents: Vec<usize> = extents.into_iter().collect();
        let origin = vec![0; extents.len()];
        Shape::from_parts(extents, origin)
    }

    /// A shape with the given extents whose first element is `origin`.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::with_origin([2, 3], [10, 10])?;
    /// assert_eq!(s.indices().next(), Some(vec![10, 10]));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::OriginRank`] if `origin` does not have one entry per extent,
    /// [`ShapeError::SizeOverflow`] or [`ShapeError::IndexOverflow`] if the element count or an
    /// index does not fit in `usize`.
    pub fn with_origin(
        extents: impl IntoIterator<Item = usize>,
        origin: impl IntoIterator<Item = usize>,
    ) -> Result<Self, ShapeError> {
        let extents: Vec<usize> = extents.into_iter().collect();
        let origin: Vec<usize> = origin.into_iter().collect();
        if origin.len() != extents.len() {
            return Err(ShapeError::OriginRank {
                rank: extents.len(),
                found: origin.len(),
            });
        }
        Shape::from_parts(extents, origin)
    }

    /// Validates and builds; `origin` has one entry per extent.
    fn from_parts(extents: Vec<usize>, origin: Vec<usize>) -> Result<Self, ShapeError> {
        let size = extents
            .iter()
            .try_fold(1usize, |size, &extent| size.checked_mul(extent))
            .ok_or(ShapeError::SizeOverflow)?;
        for (mode, (&extent, &first)) in extents.iter().zip(&origin).enumerate() {
            if first.checked_add(extent).is_none() {
                return Err(ShapeError::IndexOverflow {
                    mode,
                    origin: first,
                    extent,
                });
            }
        }
        Ok(Shape {
            extents,
            origin,
            null: false,
            size,
        })
    }

    /// The extent of every mode.
    ///
    /// ```
    /// use weft::ir::shape::Shape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Shape::new([10, 20])?.extents(), [10, 20]);
    /// # Ok(()) }
    /// ```
    pub fn extents(&self) -> &[usize] {
        &self.extents
    }

    /// The extent of mode `mode`.
    ///
    /// ```
    /// use weft::ir::shape::Shape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20])?;
    /// assert_eq!(s.extent(0)?, 10);
    /// assert!(s.extent(2).is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::ModeOutOfRange`] if `mode` is not below the rank.
    pub fn extent(&self, mode: usize) -> Result<usize, ShapeError> {
        self.extents
            .get(mode)
            .copied()
            .ok_or(ShapeError::ModeOutOfRange {
                mode,
                rank: self.rank(),
            })
    }

    /// One past the last index of every mode (`origin + extent`).
    ///
    /// ```
    /// use weft::ir::shape::Shape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Shape::with_origin([2, 3], [10, 10])?.upper(), [12, 13]);
    /// # Ok(()) }
    /// ```
    pub fn upper(&self) -> Vec<usize> {
        // Construction checked that these sums fit.
        self.origin
            .iter()
            .zip(&self.extents)
            .map(|(first, extent)| first + extent)
            .collect()
    }

    /// The first element (the same as [`ShapeBase::origin`], without allocating).
    ///
    /// ```
    /// use weft::ir::shape::Shape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Shape::with_origin([2], [7])?.first(), [7]);
    /// # Ok(()) }
    /// ```
    pub fn first(&self) -> &[usize] {
        &self.origin
    }

    /// Whether `index` is an index of the shape.
    ///
    /// ```
    /// use weft::ir::shape::Shape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::with_origin([2, 3], [10, 10])?;
    /// assert!(s.contains(&[11, 12]));
    /// assert!(!s.contains(&[0, 0]));
    /// # Ok(()) }
    /// ```
    pub fn contains(&self, index: &[usize]) -> bool {
        !self.null
            && index.len() == self.rank()
            && index
                .iter()
                .zip(self.origin.iter().zip(&self.extents))
                .all(|(&i, (&first, &extent))| i >= first && i - first < extent)
    }

    /// The row-major position of `index` among the shape's elements (its position in
    /// [`indices`](ShapeBase::indices)).
    ///
    /// ```
    /// use weft::ir::shape::Shape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::with_origin([2, 3], [10, 10])?;
    /// assert_eq!(s.position(&[11, 12])?, 5);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::CornerRank`] if `index` does not have one entry per mode,
    /// [`ShapeError::IndexOutOfRange`] if it is not an index of the shape.
    pub fn position(&self, index: &[usize]) -> Result<usize, ShapeError> {
        if index.len() != self.rank() || self.null {
            return Err(ShapeError::CornerRank {
                rank: self.rank(),
                found: index.len(),
            });
        }
        let mut position = 0;
        for (mode, &i) in index.iter().enumerate() {
            let (first, extent) = (self.origin[mode], self.extents[mode]);
            if i < first || i - first >= extent {
                return Err(ShapeError::IndexOutOfRange {
                    mode,
                    index: i,
                    lower: first,
                    upper: first + extent,
                });
            }
            // Cannot overflow: the position is below the size.
            position = position * extent + (i - first);
        }
        Ok(position)
    }

    /// The odometer over this shape's box (nothing for the null shape).
    pub(crate) fn box_indices(&self) -> Indices {
        if self.null {
            Indices::none()
        } else {
            Indices::new(self.origin.clone(), self.upper())
        }
    }

    /// The same shape without the modes flagged in `dropped` (one flag per mode).
    pub(crate) fn drop_modes(&self, dropped: &[bool]) -> Shape {
        if self.null {
            return self.clone();
        }
        let kept = |values: &[usize]| -> Vec<usize> {
            values
                .iter()
                .zip(dropped)
                .filter(|(_, &drop)| !drop)
                .map(|(&value, _)| value)
                .collect()
        };
        let extents = kept(&self.extents);
        let size = extents.iter().product();
        Shape {
            extents,
            origin: kept(&self.origin),
            null: false,
            size,
        }
    }

    /// The box `[begin, end)` of this shape, unchecked; used after validation.
    fn sub_box(&self, begin: &[usize], end: &[usize]) -> Shape {
        let extents: Vec<usize> = begin.iter().zip(end).map(|(b, e)| e - b).collect();
        let size = extents.iter().product();
        Shape {
            extents,
            origin: begin.to_vec(),
            null: false,
            size,
        }
    }
}

/// Checks that `[begin, end)` is a box of one entry per mode inside `[lower, upper)`.
pub(crate) fn check_corners(
    lower: &[usize],
    upper: &[usize],
    begin: &[usize],
    end: &[usize],
) -> Result<(), ShapeError> {
    for corner in [begin, end] {
        if corner.len() != lower.len() {
            return Err(ShapeError::CornerRank {
                rank: lower.len(),
                found: corner.len(),
            });
        }
    }
    for mode in 0..lower.len() {
        let (b, e) = (begin[mode], end[mode]);
        if b > e {
            return Err(ShapeError::InvertedCorners {
                mode,
                begin: b,
                end: e,
            });
        }
        if b < lower[mode] || e > upper[mode] {
            return Err(ShapeError::CornerOutOfRange {
                mode,
                begin: b,
                end: e,
                lower: lower[mode],
                upper: upper[mode],
            });
        }
    }
    Ok(())
}

/// Checks pinned leading indices against per-mode ranges `[lower, upper)`.
pub(crate) fn check_pins(
    lower: &[usize],
    upper: &[usize],
    pinned: &[usize],
) -> Result<(), ShapeError> {
    if pinned.len() > lower.len() {
        return Err(ShapeError::TooManyPins {
            rank: lower.len(),
            found: pinned.len(),
        });
    }
    for (mode, &index) in pinned.iter().enumerate() {
        if index < lower[mode] || index >= upper[mode] {
            return Err(ShapeError::IndexOutOfRange {
                mode,
                index,
                lower: lower[mode],
                upper: upper[mode],
            });
        }
    }
    Ok(())
}

/// The corners of the slice pinning the leading modes to `pinned` inside `[lower, upper)`.
pub(crate) fn pinned_corners(
    lower: &[usize],
    upper: &[usize],
    pinned: &[usize],
) -> (Vec<usize>, Vec<usize>) {
    let k = pinned.len();
    let begin = pinned.iter().chain(&lower[k..]).copied().collect();
    let end = pinned
        .iter()
        .map(|p| p + 1)
        .chain(upper[k..].iter().copied())
        .collect();
    (begin, end)
}

impl ShapeBase for Shape {
    type Indices<'a> = Indices;

    fn rank(&self) -> usize {
        self.extents.len()
    }

    fn size(&self) -> usize {
        self.size
    }

    fn is_null(&self) -> bool {
        self.null
    }

    fn origin(&self) -> Vec<usize> {
        self.origin.clone()
    }

    fn set_origin(&mut self, origin: &[usize]) -> Result<(), ShapeError> {
        if self.null && origin.is_empty() {
            return Ok(());
        }
        *self = Shape::with_origin(self.extents.clone(), origin.iter().copied())?;
        Ok(())
    }

    fn leading_size(&self, modes: usize) -> Result<usize, ShapeError> {
        if modes > self.rank() {
            return Err(ShapeError::ModeOutOfRange {
                mode: modes,
                rank: self.rank(),
            });
        }
        if self.null {
            return Ok(0);
        }
        // A prefix of a product that fits in usize fits too, unless a later extent is zero.
        self.extents[..modes]
            .iter()
            .try_fold(1usize, |size, &extent| size.checked_mul(extent))
            .ok_or(ShapeError::SizeOverflow)
    }

    fn indices(&self) -> Indices {
        self.box_indices()
    }

    fn slice(&self, begin: &[usize], end: &[usize]) -> Result<Shape, ShapeError> {
        check_corners(&self.origin, &self.upper(), begin, end)?;
        if self.null {
            return Ok(self.clone());
        }
        Ok(self.sub_box(begin, end))
    }

    fn slice_at(&self, pinned: &[usize]) -> Result<Shape, ShapeError> {
        let upper = self.upper();
        check_pins(&self.origin, &upper, pinned)?;
        if self.null {
            return Ok(self.clone());
        }
        let (begin, end) = pinned_corners(&self.origin, &upper, pinned);
        Ok(self.sub_box(&begin, &end))
    }

    fn chip(&self, begin: &[usize], end: &[usize]) -> Result<Shape, ShapeError> {
        let sliced = self.slice(begin, end)?;
        let dropped: Vec<bool> = begin.iter().zip(end).map(|(b, e)| e - b == 1).collect();
        Ok(sliced.drop_modes(&dropped))
    }

    fn chip_at(&self, pinned: &[usize]) -> Result<Shape, ShapeError> {
        let sliced = self.slice_at(pinned)?;
        let dropped: Vec<bool> = (0..self.rank()).map(|mode| mode < pinned.len()).collect();
        Ok(sliced.drop_modes(&dropped))
    }
}

impl IntoIterator for &Shape {
    type Item = Vec<usize>;
    type IntoIter = Indices;

    /// Iterates the absolute indices, as [`ShapeBase::indices`].
    fn into_iter(self) -> Indices {
        self.box_indices()
    }
}

impl fmt::Display for Shape {
    /// `null`, `{}` for a scalar, `{10, 20}`, or `{2, 3} @ {10, 10}` when the origin is not
    /// zero.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.null {
            return f.write_str("null");
        }
        write_list(f, &self.extents)?;
        if self.origin.iter().any(|&first| first != 0) {
            f.write_str(" @ ")?;
            write_list(f, &self.origin)?;
        }
        Ok(())
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, values: &[usize]) -> fmt::Result {
    f.write_str("{")?;
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{value}")?;
    }
    f.write_str("}")
}
