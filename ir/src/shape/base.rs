//! The API every shape satisfies (the reference design's `ShapeBase`).

use super::error::ShapeError;
use super::index::Offsets;

/// What every shape — smooth, jagged or nested — can do: report its rank and size, move its
/// origin, iterate its indices, and cut out slices and chips.
///
/// Indices are absolute: a shape's indices start at its [`origin`](ShapeBase::origin), and a
/// slice keeps the indices it had in the shape it was cut from. Slice corners and pinned
/// indices are absolute indices too.
///
/// ```
/// use weft_ir::shape::{Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft_ir::shape::ShapeError> {
/// let s = Shape::new([2, 3])?;
/// let row1 = s.slice_at(&[1])?;
/// assert_eq!(row1.rank(), 2);
/// assert_eq!(row1.indices().collect::<Vec<_>>(), [[1, 0], [1, 1], [1, 2]]);
/// assert_eq!(row1.offsets().collect::<Vec<_>>(), [[0, 0], [0, 1], [0, 2]]);
/// # Ok(()) }
/// ```
pub trait ShapeBase: Clone + PartialEq + std::fmt::Debug {
    /// Iterator over the shape's absolute indices in lexicographic order.
    type Indices<'a>: Iterator<Item = Vec<usize>>
    where
        Self: 'a;

    /// Number of modes; zero for scalars and for the null shape.
    fn rank(&self) -> usize;

    /// Number of scalar elements; one for a scalar, zero for the null shape.
    fn size(&self) -> usize;

    /// Whether this is the null shape, which has neither modes nor elements.
    fn is_null(&self) -> bool;

    /// The smallest index of each mode: the first element of a smooth shape, the corner of the
    /// bounding box of a jagged one.
    fn origin(&self) -> Vec<usize>;

    /// Moves the shape so that its [`origin`](ShapeBase::origin) becomes `origin`.
    ///
    /// # Errors
    /// [`ShapeError::OriginRank`] if `origin` does not have one entry per mode,
    /// [`ShapeError::IndexOverflow`] if a moved index would not fit in `usize`.
    fn set_origin(&mut self, origin: &[usize]) -> Result<(), ShapeError>;

    /// Number of distinct indices of the leading `modes` modes: the elements of a tensor that
    /// views only those modes, each element holding the remaining modes. `leading_size(0)` is 1
    /// and `leading_size(rank)` is the size (for any shape but the null one).
    ///
    /// # Errors
    /// [`ShapeError::ModeOutOfRange`] if `modes` exceeds the rank.
    fn leading_size(&self, modes: usize) -> Result<usize, ShapeError>;

    /// The shape's absolute indices in lexicographic order.
    fn indices(&self) -> Self::Indices<'_>;

    /// The shape's indices relative to its [`origin`](ShapeBase::origin), in lexicographic
    /// order.
    fn offsets(&self) -> Offsets<Self::Indices<'_>> {
        Offsets::new(self.indices(), self.origin())
    }

    /// The part of the shape inside the box `[begin, end)`, keeping every mode.
    ///
    /// # Errors
    /// [`ShapeError::CornerRank`] if a corner does not have one entry per mode,
    /// [`ShapeError::InvertedCorners`] if `begin` exceeds `end` in some mode,
    /// [`ShapeError::CornerOutOfRange`] if the box leaves the shape's range.
    fn slice(&self, begin: &[usize], end: &[usize]) -> Result<Self, ShapeError>;

    /// The part of the shape whose leading modes equal `pinned`, keeping every mode (the pinned
    /// modes get extent one).
    ///
    /// # Errors
    /// [`ShapeError::TooManyPins`] if more indices are pinned than there are modes,
    /// [`ShapeError::IndexOutOfRange`] if a pinned index is not an index of the shape.
    fn slice_at(&self, pinned: &[usize]) -> Result<Self, ShapeError>;

    /// Like [`slice`](ShapeBase::slice), then drops every mode whose range `[begin, end)` has
    /// length one.
    ///
    /// # Errors
    /// As for [`slice`](ShapeBase::slice).
    fn chip(&self, begin: &[usize], end: &[usize]) -> Result<Self, ShapeError>;

    /// Like [`slice_at`](ShapeBase::slice_at), then drops the pinned modes: the shape of the
    /// slice at index `pinned`.
    ///
    /// # Errors
    /// As for [`slice_at`](ShapeBase::slice_at).
    fn chip_at(&self, pinned: &[usize]) -> Result<Self, ShapeError>;
}
