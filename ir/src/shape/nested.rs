//! Nested shapes: a shape whose modes are partitioned into layers.

use std::fmt;
use std::ops::Range;

use super::base::ShapeBase;
use super::error::ShapeError;

/// A shape viewed in layers: the modes, left to right, are split into consecutive layers, so a
/// matrix can be a matrix (`[2]`), a vector of vectors (`[1, 1]`) or a scalar holding a matrix
/// (`[0, 2]`). The layering does not change the elements, only how a backend may lay them out.
///
/// ```
/// use weft::ir::shape::{Nested, Shape, ShapeBase};
///
/// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
/// // Modes 0 and 1 in layer 0, modes 2 and 3 in layer 1.
/// let s = Nested::new([2, 2], Shape::new([5, 10, 15, 20])?)?;
/// assert_eq!(s.n_layers(), 2);
/// assert_eq!(s.rank_layer(1)?, 2);
/// assert_eq!(s.elements_in_layer(0)?, 50);
/// assert_eq!(s.element(&[0, 0])?.shape(), &Shape::new([15, 20])?);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Nested<S> {
    layers: Vec<usize>,
    shape: S,
}

impl<S: ShapeBase> Nested<S> {
    /// Layers `shape`: layer `l` holds the next `layers[l]` modes, left to right.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let vector_in_layer_1 = Nested::new([0, 1], Shape::new([10])?)?;
    /// assert_eq!(vector_in_layer_1.layers(), [0, 1]);
    /// assert!(Nested::new([1, 1], Shape::new([10])?).is_err());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::NoLayers`] if `layers` is empty, [`ShapeError::LayerRanks`] if the layers
    /// do not hold exactly the shape's modes.
    pub fn new(layers: impl IntoIterator<Item = usize>, shape: S) -> Result<Self, ShapeError> {
        let layers: Vec<usize> = layers.into_iter().collect();
        if layers.is_empty() {
            return Err(ShapeError::NoLayers);
        }
        let layered = layers
            .iter()
            .try_fold(0usize, |total, &rank| total.checked_add(rank))
            .ok_or(ShapeError::LayerRanks {
                layered: usize::MAX,
                rank: shape.rank(),
            })?;
        if layered != shape.rank() {
            return Err(ShapeError::LayerRanks {
                layered,
                rank: shape.rank(),
            });
        }
        Ok(Nested { layers, shape })
    }

    /// The number of modes in each layer.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Nested::new([1, 2], Shape::new([10, 20, 30])?)?.layers(), [1, 2]);
    /// # Ok(()) }
    /// ```
    pub fn layers(&self) -> &[usize] {
        &self.layers
    }

    /// The number of layers.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// assert_eq!(Nested::new([0, 0], Shape::scalar())?.n_layers(), 2);
    /// # Ok(()) }
    /// ```
    pub fn n_layers(&self) -> usize {
        self.layers.len()
    }

    /// The number of modes in layer `layer`.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Nested::new([1, 2], Shape::new([10, 20, 30])?)?;
    /// assert_eq!((s.rank_layer(0)?, s.rank_layer(1)?), (1, 2));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::LayerOutOfRange`] if there is no such layer.
    pub fn rank_layer(&self, layer: usize) -> Result<usize, ShapeError> {
        self.layers
            .get(layer)
            .copied()
            .ok_or(ShapeError::LayerOutOfRange {
                layer,
                n_layers: self.n_layers(),
            })
    }

    /// The modes of layer `layer`, as a range of mode numbers.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Nested::new([1, 2], Shape::new([10, 20, 30])?)?;
    /// assert_eq!(s.layer_modes(1)?, 1..3);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::LayerOutOfRange`] if there is no such layer.
    pub fn layer_modes(&self, layer: usize) -> Result<Range<usize>, ShapeError> {
        let rank = self.rank_layer(layer)?;
        let start: usize = self.layers[..layer].iter().sum();
        Ok(start..start + rank)
    }

    /// The layer holding mode `mode`.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Nested::new([0, 1, 2], Shape::new([10, 20, 30])?)?;
    /// assert_eq!(s.layer_of_mode(0)?, 1);
    /// assert_eq!(s.layer_of_mode(2)?, 2);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::ModeOutOfRange`] if there is no such mode.
    pub fn layer_of_mode(&self, mode: usize) -> Result<usize, ShapeError> {
        self.mode_layers()
            .get(mode)
            .copied()
            .ok_or(ShapeError::ModeOutOfRange {
                mode,
                rank: self.shape.rank(),
            })
    }

    /// The layer of every mode, in mode order.
    pub(crate) fn mode_layers(&self) -> Vec<usize> {
        self.layers
            .iter()
            .enumerate()
            .flat_map(|(layer, &rank)| std::iter::repeat_n(layer, rank))
            .collect()
    }

    /// How many elements layer `layer` holds across the whole tensor: the number of distinct
    /// indices of the modes of layers `0..=layer`. The last layer holds every scalar element.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Nested::new([1, 2], Shape::new([10, 20, 30])?)?;
    /// assert_eq!((s.elements_in_layer(0)?, s.elements_in_layer(1)?), (10, 6000));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::LayerOutOfRange`] if there is no such layer.
    pub fn elements_in_layer(&self, layer: usize) -> Result<usize, ShapeError> {
        let modes = self.layer_modes(layer)?;
        self.shape.leading_size(modes.end)
    }

    /// The underlying shape, without the layering.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20])?;
    /// assert_eq!(Nested::new([1, 1], s.clone())?.shape(), &s);
    /// # Ok(()) }
    /// ```
    pub fn shape(&self) -> &S {
        &self.shape
    }

    /// Gives up the layering and returns the underlying shape.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Shape::new([10, 20])?;
    /// assert_eq!(Nested::new([2], s.clone())?.into_shape(), s);
    /// # Ok(()) }
    /// ```
    pub fn into_shape(self) -> S {
        self.shape
    }

    /// The shape of one element of the leading layers: `index` pins every mode of the leading
    /// layers it covers, and the result holds the remaining layers. Empty layers at the
    /// boundary are consumed too, but the last layer always remains.
    ///
    /// ```
    /// use weft::ir::shape::{Nested, Shape};
    ///
    /// # fn main() -> Result<(), weft::ir::shape::ShapeError> {
    /// let s = Nested::new([1, 2], Shape::new([10, 20, 30])?)?;
    /// let element = s.element(&[3])?;
    /// assert_eq!(element.layers(), [2]);
    /// assert_eq!(element.shape(), &Shape::new([20, 30])?);
    /// assert!(s.element(&[3, 4]).is_err()); // mode 1 alone is not a whole layer
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ShapeError::NotALayerBoundary`] if `index` does not cover whole layers, and the errors
    /// of [`ShapeBase::chip_at`] if it is not an index of the shape.
    pub fn element(&self, index: &[usize]) -> Result<Nested<S>, ShapeError> {
        let mut covered = 0;
        let mut consumed = None;
        for (layer, &rank) in self.layers.iter().enumerate() {
            if covered == index.len() {
                consumed = Some(layer);
            }
            covered += rank;
        }
        if covered == index.len() {
            consumed = Some(self.n_layers());
        }
        let Some(consumed) = consumed else {
            return Err(ShapeError::NotALayerBoundary {
                found: index.len(),
                layers: self.layers.clone(),
            });
        };
        let shape = self.shape.chip_at(index)?;
        let mut layers = self.layers_without(&self.pinned_flags(index.len()));
        let keep_from = consumed.min(self.n_layers() - 1);
        layers.drain(..keep_from);
        Ok(Nested { layers, shape })
    }

    /// One flag per mode, set for the leading `count` modes.
    fn pinned_flags(&self, count: usize) -> Vec<bool> {
        (0..self.shape.rank()).map(|mode| mode < count).collect()
    }

    /// The layer ranks after dropping the flagged modes; empty layers remain.
    fn layers_without(&self, dropped: &[bool]) -> Vec<usize> {
        let mut layers = vec![0; self.n_layers()];
        for (layer, &drop) in self.mode_layers().iter().zip(dropped) {
            if !drop {
                layers[*layer] += 1;
            }
        }
        layers
    }

    /// Builds without validation; `layers` must add up to the rank of `shape`.
    pub(crate) fn from_valid_parts(layers: Vec<usize>, shape: S) -> Self {
        debug_assert_eq!(layers.iter().sum::<usize>(), shape.rank());
        Nested { layers, shape }
    }
}

impl<S: ShapeBase> ShapeBase for Nested<S> {
    type Indices<'a>
        = S::Indices<'a>
    where
        S: 'a;

    fn rank(&self) -> usize {
        self.shape.rank()
    }

    fn size(&self) -> usize {
        self.shape.size()
    }

    fn is_null(&self) -> bool {
        self.shape.is_null()
    }

    fn origin(&self) -> Vec<usize> {
        self.shape.origin()
    }

    fn set_origin(&mut self, origin: &[usize]) -> Result<(), ShapeError> {
        self.shape.set_origin(origin)
    }

    fn leading_size(&self, modes: usize) -> Result<usize, ShapeError> {
        self.shape.leading_size(modes)
    }

    fn indices(&self) -> S::Indices<'_> {
        self.shape.indices()
    }

    fn slice(&self, begin: &[usize], end: &[usize]) -> Result<Nested<S>, ShapeError> {
        Ok(Nested {
            layers: self.layers.clone(),
            shape: self.shape.slice(begin, end)?,
        })
    }

    fn slice_at(&self, pinned: &[usize]) -> Result<Nested<S>, ShapeError> {
        Ok(Nested {
            layers: self.layers.clone(),
            shape: self.shape.slice_at(pinned)?,
        })
    }

    fn chip(&self, begin: &[usize], end: &[usize]) -> Result<Nested<S>, ShapeError> {
        let shape = self.shape.chip(begin, end)?;
        let dropped: Vec<bool> = begin.iter().zip(end).map(|(b, e)| e - b == 1).collect();
        Ok(Nested {
            layers: self.layers_without(&dropped),
            shape,
        })
    }

    fn chip_at(&self, pinned: &[usize]) -> Result<Nested<S>, ShapeError> {
        let shape = self.shape.chip_at(pinned)?;
        Ok(Nested {
            layers: self.layers_without(&self.pinned_flags(pinned.len())),
            shape,
        })
    }
}

impl<S: fmt::Display> fmt::Display for Nested<S> {
    /// The layer ranks, then the shape: `[1, 2] {10, 20, 30}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {}", self.layers, self.shape)
    }
}
