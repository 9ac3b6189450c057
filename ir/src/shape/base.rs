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
/// use weft::ir::shape::{Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
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
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Shape::new([10, 20])?.rank(), 2);
    /// assert_eq!(Shape::scalar().rank(), 0);
    /// # Ok(()) }
    /// ```
    fn rank(&self) -> usize;

    /// Number of scalar elements; one for a scalar, zero for the null shape.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let js = JaggedShape::from_slices([Shape::new([10])?, Shape::new([20])?])?;
    /// assert_eq!(js.size(), 30);
    /// # Ok(()) }
    /// ```
    fn size(&self) -> usize;

    /// Whether this is the null shape, which has neither modes nor elements.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert!(Shape::null().is_null());
    /// assert!(!Shape::scalar().is_null());
    /// # Ok(()) }
    /// ```
    fn is_null(&self) -> bool;

    /// The smallest index of each mode: the first element of a smooth shape, the corner of the
    /// bounding box of a jagged one.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let js = JaggedShape::from_slices_with_origin(
    ///     [Shape::with_origin([2], [6])?, Shape::with_origin([2], [5])?],
    ///     3,
    /// )?;
    /// assert_eq!(js.origin(), [3, 5]);
    /// # Ok(()) }
    /// ```
    fn origin(&self) -> Vec<usize>;

    /// Moves the shape so that its [`origin`](ShapeBase::origin) becomes `origin`.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let mut s = Shape::new([2])?;
    /// s.set_origin(&[10])?;
    /// assert_eq!(s.indices().collect::<Vec<_>>(), [[10], [11]]);
    /// assert!(s.set_origin(&[1, 2]).is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::OriginRank`] if `origin` does not have one entry per mode,
    /// [`ShapeError::IndexOverflow`] if a moved index would not fit in `usize`.
    fn set_origin(&mut self, origin: &[usize]) -> Result<(), ShapeError>;

    /// Number of distinct indices of the leading `modes` modes: the elements of a tensor that
    /// views only those modes, each element holding the remaining modes. `leading_size(0)` is 1
    /// and `leading_size(rank)` is the size (for any shape but the null one).
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let js = JaggedShape::from_slices([Shape::new([2, 5])?, Shape::new([3, 5])?])?;
    /// assert_eq!(js.leading_size(1)?, 2);
    /// assert_eq!(js.leading_size(2)?, 5);
    /// assert_eq!(js.leading_size(3)?, 25);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::ModeOutOfRange`] if `modes` exceeds the rank.
    fn leading_size(&self, modes: usize) -> Result<usize, ShapeError>;

    /// The shape's absolute indices in lexicographic order.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::with_origin([2], [4])?;
    /// assert_eq!(s.indices().collect::<Vec<_>>(), [[4], [5]]);
    /// # Ok(()) }
    /// ```
    fn indices(&self) -> Self::Indices<'_>;

    /// The shape's indices relative to its [`origin`](ShapeBase::origin), in lexicographic
    /// order.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::with_origin([2], [4])?;
    /// assert_eq!(s.offsets().collect::<Vec<_>>(), [[0], [1]]);
    /// # Ok(()) }
    /// ```
    fn offsets(&self) -> Offsets<Self::Indices<'_>> {
        Offsets::new(self.indices(), self.origin())
    }

    /// The part of the shape inside the box `[begin, end)`, keeping every mode.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20])?;
    /// assert_eq!(s.slice(&[2, 0], &[4, 5])?, Shape::with_origin([2, 5], [2, 0])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::CornerRank`] if a corner does not have one entry per mode,
    /// [`ShapeError::InvertedCorners`] if `begin` exceeds `end` in some mode,
    /// [`ShapeError::CornerOutOfRange`] if the box leaves the shape's range.
    fn slice(&self, begin: &[usize], end: &[usize]) -> Result<Self, ShapeError>;

    /// The part of the shape whose leading modes equal `pinned`, keeping every mode (the pinned
    /// modes get extent one).
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20])?;
    /// assert_eq!(s.slice_at(&[3])?, Shape::with_origin([1, 20], [3, 0])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::TooManyPins`] if more indices are pinned than there are modes,
    /// [`ShapeError::IndexOutOfRange`] if a pinned index is not an index of the shape.
    fn slice_at(&self, pinned: &[usize]) -> Result<Self, ShapeError>;

    /// Like [`slice`](ShapeBase::slice), then drops every mode whose range `[begin, end)` has
    /// length one.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20])?;
    /// assert_eq!(s.chip(&[0, 2], &[10, 3])?, Shape::new([10])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As for [`slice`](ShapeBase::slice).
    fn chip(&self, begin: &[usize], end: &[usize]) -> Result<Self, ShapeError>;

    /// Like [`slice_at`](ShapeBase::slice_at), then drops the pinned modes: the shape of the
    /// slice at index `pinned`.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, ShapeBase};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let js = JaggedShape::from_slices([Shape::new([10])?, Shape::new([20])?])?;
    /// assert_eq!(js.chip_at(&[1])?, JaggedShape::from(Shape::new([20])?));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As for [`slice_at`](ShapeBase::slice_at).
    fn chip_at(&self, pinned: &[usize]) -> Result<Self, ShapeError>;
}
