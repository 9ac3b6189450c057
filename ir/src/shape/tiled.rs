//! Tiled shapes: a smooth shape cut into tiles, viewed as a jagged shape.

use super::base::ShapeBase;
use super::error::ShapeError;
use super::index::Indices;
use super::jagged::JaggedShape;
use super::nested::Nested;
use super::smooth::Shape;

/// A smooth shape of rank `r` with each mode cut into consecutive tiles of given lengths.
///
/// As a [`JaggedShape`] it has rank `2r`: the first `r` modes pick a tile of the tile grid, the
/// last `r` run over the elements inside that tile (from zero). [`tiles`](TiledShape::tiles)
/// instead lists each tile with its position in the tiled shape, which is what a loop nest over
/// tiles needs.
///
/// ```
/// use weft::ir::shape::{Shape, ShapeBase, TiledShape};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// // A 30 x 30 matrix, each mode cut into chunks of 5, 15 and 10.
/// let tiled = TiledShape::new([[5, 15, 10], [5, 15, 10]])?;
/// assert_eq!(tiled.grid(), Shape::new([3, 3])?);
/// assert_eq!(tiled.tile(&[1, 2])?, Shape::with_origin([15, 10], [5, 20])?);
/// assert_eq!(tiled.as_jagged().rank(), 4);
/// assert_eq!(tiled.as_jagged().size(), 900);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TiledShape {
    tile_lengths: Vec<Vec<usize>>,
    /// Per mode, the first index of every tile followed by one past the last tile.
    tile_bounds: Vec<Vec<usize>>,
    origin: Vec<usize>,
    jagged: JaggedShape,
}

/// One tile of a [`TiledShape`]: where it sits in the tile grid and which indices it covers.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Tile {
    /// The tile's index in the tile grid.
    pub grid_index: Vec<usize>,
    /// The tile's indices in the tiled shape: its extents, with its first element as origin.
    pub shape: Shape,
}

impl TiledShape {
    /// Tiles a smooth shape starting at the zero index: mode `m` is cut into tiles of lengths
    /// `tile_lengths[m]`, in order.
    ///
    /// ```
    /// use weft::ir::shape::TiledShape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let tiled = TiledShape::new([vec![2, 3], vec![4]])?;
    /// assert_eq!(tiled.shape().extents(), [5, 4]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::EmptyTiling`] if a mode has no tiles, [`ShapeError::ZeroTile`] for a tile
    /// of length zero, [`ShapeError::SizeOverflow`] or [`ShapeError::IndexOverflow`] if the
    /// tiled shape is too large.
    pub fn new<T: IntoIterator<Item = usize>>(
        tile_lengths: impl IntoIterator<Item = T>,
    ) -> Result<Self, ShapeError> {
        let tile_lengths: Vec<Vec<usize>> = tile_lengths
            .into_iter()
            .map(|mode| mode.into_iter().collect())
            .collect();
        let origin = vec![0; tile_lengths.len()];
        TiledShape::with_origin(tile_lengths, origin)
    }

    /// Tiles `shape` into tiles of `tile_extents` (one per mode); the last tile of a mode keeps
    /// the remainder. Tiles are placed at the shape's origin.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let tiled = TiledShape::uniform(&Shape::new([10, 4])?, &[4, 4])?;
    /// assert_eq!(tiled.tile_lengths(), [vec![4, 4, 2], vec![4]]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::CornerRank`] if `tile_extents` does not have one entry per mode,
    /// [`ShapeError::ZeroTile`] for a tile extent of zero, [`ShapeError::EmptyTiling`] for a
    /// mode of extent zero or a null shape.
    pub fn uniform(shape: &Shape, tile_extents: &[usize]) -> Result<Self, ShapeError> {
        if shape.is_null() {
            return Err(ShapeError::EmptyTiling { mode: 0 });
        }
        if tile_extents.len() != shape.rank() {
            return Err(ShapeError::CornerRank {
                rank: shape.rank(),
                found: tile_extents.len(),
            });
        }
        let mut tile_lengths = Vec::with_capacity(shape.rank());
        for (mode, (&extent, &tile)) in shape.extents().iter().zip(tile_extents).enumerate() {
            if tile == 0 {
                return Err(ShapeError::ZeroTile { mode, tile: 0 });
            }
            let (full, rest) = (extent / tile, extent % tile);
            let mut lengths = vec![tile; full];
            if rest > 0 {
                lengths.push(rest);
            }
            tile_lengths.push(lengths);
        }
        TiledShape::with_origin(tile_lengths, shape.first().to_vec())
    }

    /// Like [`new`](TiledShape::new), with the tiled shape starting at `origin`, which moves
    /// every [`Tile`] but not the jagged view.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let tiled = TiledShape::with_origin(vec![vec![2, 2]], vec![100])?;
    /// assert_eq!(tiled.tile(&[1])?, Shape::with_origin([2], [102])?);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As for [`new`](TiledShape::new), and [`ShapeError::OriginRank`] if `origin` does not have
    /// one entry per mode.
    pub fn with_origin(
        tile_lengths: Vec<Vec<usize>>,
        origin: Vec<usize>,
    ) -> Result<Self, ShapeError> {
        if origin.len() != tile_lengths.len() {
            return Err(ShapeError::OriginRank {
                rank: tile_lengths.len(),
                found: origin.len(),
            });
        }
        let mut tile_bounds = Vec::with_capacity(tile_lengths.len());
        for (mode, lengths) in tile_lengths.iter().enumerate() {
            if lengths.is_empty() {
                return Err(ShapeError::EmptyTiling { mode });
            }
            let mut bounds = Vec::with_capacity(lengths.len() + 1);
            let mut next = origin[mode];
            bounds.push(next);
            for (tile, &length) in lengths.iter().enumerate() {
                if length == 0 {
                    return Err(ShapeError::ZeroTile { mode, tile });
                }
                next = next.checked_add(length).ok_or(ShapeError::IndexOverflow {
                    mode,
                    origin: origin[mode],
                    extent: length,
                })?;
                bounds.push(next);
            }
            tile_bounds.push(bounds);
        }
        // Validates that the element count fits before building the tile tree.
        let total = tile_bounds
            .iter()
            .zip(&origin)
            .map(|(bounds, first)| bounds.last().map_or(0, |last| last - first));
        Shape::new(total)?;
        let jagged = grid_level(&tile_lengths, &mut Vec::new())?;
        Ok(TiledShape {
            tile_lengths,
            tile_bounds,
            origin,
            jagged,
        })
    }

    /// The tile lengths of every mode, as given.
    ///
    /// ```
    /// use weft::ir::shape::TiledShape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(TiledShape::new([[1, 2]])?.tile_lengths(), [vec![1, 2]]);
    /// # Ok(()) }
    /// ```
    pub fn tile_lengths(&self) -> &[Vec<usize>] {
        &self.tile_lengths
    }

    /// The smooth shape that was tiled, with its origin.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(TiledShape::new([vec![5, 15, 10], vec![5, 25]])?.shape(), Shape::new([30, 30])?);
    /// # Ok(()) }
    /// ```
    pub fn shape(&self) -> Shape {
        let extents = self
            .tile_bounds
            .iter()
            .zip(&self.origin)
            .map(|(bounds, first)| bounds.last().map_or(0, |last| last - first));
        // Construction validated this shape.
        Shape::with_origin(extents, self.origin.iter().copied()).unwrap_or_default()
    }

    /// The tile grid: one mode per tiled mode, its extent the number of tiles.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(TiledShape::new([vec![5, 5], vec![3]])?.grid(), Shape::new([2, 1])?);
    /// # Ok(()) }
    /// ```
    pub fn grid(&self) -> Shape {
        // A grid has fewer entries than the validated element count.
        Shape::new(self.tile_lengths.iter().map(Vec::len)).unwrap_or_default()
    }

    /// The tile at `grid_index`, placed in the tiled shape.
    ///
    /// ```
    /// use weft::ir::shape::{Shape, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let tiled = TiledShape::new([[5, 15, 10]])?;
    /// assert_eq!(tiled.tile(&[2])?, Shape::with_origin([10], [20])?);
    /// assert!(tiled.tile(&[3]).is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::CornerRank`] if `grid_index` does not have one entry per mode,
    /// [`ShapeError::IndexOutOfRange`] if it is not in the tile grid.
    pub fn tile(&self, grid_index: &[usize]) -> Result<Shape, ShapeError> {
        if grid_index.len() != self.tile_lengths.len() {
            return Err(ShapeError::CornerRank {
                rank: self.tile_lengths.len(),
                found: grid_index.len(),
            });
        }
        for (mode, (&index, lengths)) in grid_index.iter().zip(&self.tile_lengths).enumerate() {
            if index >= lengths.len() {
                return Err(ShapeError::IndexOutOfRange {
                    mode,
                    index,
                    lower: 0,
                    upper: lengths.len(),
                });
            }
        }
        Ok(self.tile_unchecked(grid_index))
    }

    /// The tile at a grid index known to be valid.
    fn tile_unchecked(&self, grid_index: &[usize]) -> Shape {
        let extents = grid_index
            .iter()
            .zip(&self.tile_lengths)
            .map(|(&index, lengths)| lengths[index]);
        let first = grid_index
            .iter()
            .zip(&self.tile_bounds)
            .map(|(&index, bounds)| bounds[index]);
        // Every tile lies inside the validated tiled shape.
        Shape::with_origin(extents, first).unwrap_or_default()
    }

    /// Every tile, with its grid index, in lexicographic order of the grid.
    ///
    /// ```
    /// use weft::ir::shape::{ShapeBase, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let tiled = TiledShape::new([vec![2, 1], vec![3]])?;
    /// let origins: Vec<Vec<usize>> = tiled.tiles().map(|tile| tile.shape.origin()).collect();
    /// assert_eq!(origins, [[0, 0], [2, 0]]);
    /// # Ok(()) }
    /// ```
    pub fn tiles(&self) -> Tiles<'_> {
        Tiles {
            tiled: self,
            grid: self.grid().indices(),
        }
    }

    /// The jagged view: tile-grid modes, then in-tile modes counted from zero.
    ///
    /// ```
    /// use weft::ir::shape::{JaggedShape, Shape, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let tiled = TiledShape::new([[1, 2]])?;
    /// let expected = JaggedShape::from_slices([Shape::new([1])?, Shape::new([2])?])?;
    /// assert_eq!(tiled.as_jagged(), &expected);
    /// # Ok(()) }
    /// ```
    pub fn as_jagged(&self) -> &JaggedShape {
        &self.jagged
    }

    /// The jagged view, giving up the tiling.
    ///
    /// ```
    /// use weft::ir::shape::{ShapeBase, TiledShape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(TiledShape::new([[1, 2]])?.into_jagged().size(), 3);
    /// # Ok(()) }
    /// ```
    pub fn into_jagged(self) -> JaggedShape {
        self.jagged
    }

    /// The jagged view in two layers: the tile grid, then the tiles.
    ///
    /// ```
    /// use weft::ir::shape::TiledShape;
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let nested = TiledShape::new([[5, 15, 10], [5, 15, 10]])?.nested();
    /// assert_eq!(nested.layers(), [2, 2]);
    /// assert_eq!(nested.elements_in_layer(0)?, 9);
    /// # Ok(()) }
    /// ```
    pub fn nested(&self) -> Nested<JaggedShape> {
        let r = self.tile_lengths.len();
        Nested::from_valid_parts(vec![r, r], self.jagged.clone())
    }
}

impl From<TiledShape> for JaggedShape {
    /// The jagged view of the tiling, as [`TiledShape::into_jagged`].
    fn from(tiled: TiledShape) -> Self {
        tiled.jagged
    }
}

/// The jagged shape of the tiles whose leading grid indices are `prefix`.
fn grid_level(
    tile_lengths: &[Vec<usize>],
    prefix: &mut Vec<usize>,
) -> Result<JaggedShape, ShapeError> {
    let mode = prefix.len();
    let Some(lengths) = tile_lengths.get(mode) else {
        let extents = prefix
            .iter()
            .zip(tile_lengths)
            .map(|(&index, lengths)| lengths[index]);
        return Ok(JaggedShape::from(Shape::new(extents)?));
    };
    let mut slices = Vec::with_capacity(lengths.len());
    for index in 0..lengths.len() {
        prefix.push(index);
        slices.push(grid_level(tile_lengths, prefix)?);
        prefix.pop();
    }
    JaggedShape::from_slices(slices)
}

/// The tiles of a [`TiledShape`] in lexicographic order of the tile grid.
///
/// ```
/// use weft::ir::shape::TiledShape;
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// assert_eq!(TiledShape::new([[5, 15, 10], [5, 15, 10]])?.tiles().count(), 9);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Tiles<'a> {
    tiled: &'a TiledShape,
    grid: Indices,
}

impl Iterator for Tiles<'_> {
    type Item = Tile;

    fn next(&mut self) -> Option<Tile> {
        let grid_index = self.grid.advance()?.to_vec();
        let shape = self.tiled.tile_unchecked(&grid_index);
        Some(Tile { grid_index, shape })
    }
}
