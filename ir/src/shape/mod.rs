//! TensorWrapper's shape algebra: the extents, layouts and index sets of tensors.
//!
//! - [`Shape`]: a smooth hyper-rectangle (or the null shape, or a scalar).
//! - [`JaggedShape`]: slices of differing shapes along the leading modes, nesting recursively.
//! - [`TiledShape`]: a smooth shape cut into tiles, as a jagged shape and as a list of [`Tile`]s.
//! - [`Nested`]: any shape with its modes partitioned into layers.
//! - [`ShapeBase`]: what all of them share — rank, size, origin, iteration, slices and chips.
//! - [`LabelAlgebra`] and [`ShapeExpr`]: label expressions (`"i,j,k"`) that permute, add,
//!   contract and multiply shapes, checking that the extents they combine agree.
//!
//! Indices are absolute: a shape starts at its origin (zero unless set), and a slice keeps the
//! indices it had where it was cut. See `docs/shapes.md` for the model and the readings weft
//! chose where the reference design contradicts itself.
//!
//! ```
//! use weft::ir::shape::{LabelAlgebra, Nested, Shape, ShapeBase};
//!
//! # fn main() -> Result<(), weft::ir::shape::ShapeError> {
//! let s = Shape::new([10, 20, 30])?;
//! let layered = Nested::new([1, 2], s.clone())?;
//! let result = (layered.idx("i,j,k")? * layered.idx("i,j,k")?).to("j,k")?;
//! assert_eq!(result, Nested::new([0, 2], Shape::new([20, 30])?)?);
//! assert_eq!(s.chip_at(&[3])?, Shape::new([20, 30])?);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod algebra;
mod base;
mod error;
mod index;
mod index_set;
mod jagged;
mod label;
mod nested;
mod smooth;
mod tiled;

pub use base::ShapeBase;
pub use error::ShapeError;
pub use index::{Indices, Offsets};
pub use jagged::{JaggedIndices, JaggedShape};
pub use label::{LabelAlgebra, Labels, ShapeExpr};
pub use nested::Nested;
pub use smooth::Shape;
pub use tiled::{Tile, TiledShape, Tiles};
