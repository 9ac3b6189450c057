//! The one error type of the shape algebra.

use thiserror::Error;

/// Everything that can be wrong with a shape, a slice request, a layering or a label expression.
///
/// Each variant names the offending part (mode, label, layer, slice) and the values involved, so
/// a message can point at the exact spot of bad input.
///
/// ```
/// use weft::ir::shape::{Shape, ShapeBase, ShapeError};
///
/// # fn main() -> Result<(), ShapeError> {
/// let err = Shape::new([10, 20])?.slice(&[0, 5], &[10, 3]).unwrap_err();
/// assert_eq!(err, ShapeError::InvertedCorners { mode: 1, begin: 5, end: 3 });
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ShapeError {
    /// The product of the extents does not fit in `usize`.
    #[error("the shape's element count overflows usize")]
    SizeOverflow,
    /// An index of the shape (origin plus extent) does not fit in `usize`.
    #[error("mode {mode}: origin {origin} plus extent {extent} overflows usize")]
    IndexOverflow {
        /// The mode whose last index overflows.
        mode: usize,
        /// The origin of that mode.
        origin: usize,
        /// The extent of that mode.
        extent: usize,
    },
    /// An origin was given with the wrong number of entries.
    #[error("the origin has {found} entries but the shape has rank {rank}")]
    OriginRank {
        /// Rank of the shape.
        rank: usize,
        /// Number of entries given.
        found: usize,
    },
    /// A mode number is not below the rank.
    #[error("mode {mode} does not exist in a rank-{rank} shape")]
    ModeOutOfRange {
        /// The requested mode.
        mode: usize,
        /// Rank of the shape.
        rank: usize,
    },
    /// A slice of a jagged shape has a different rank than the first slice.
    #[error("slice {index} of the jagged shape has rank {found} but slice 0 has rank {expected}")]
    MixedSliceRanks {
        /// Position of the offending slice.
        index: usize,
        /// Rank of slice 0.
        expected: usize,
        /// Rank of the offending slice.
        found: usize,
    },
    /// A null shape was given as a slice of a jagged shape.
    #[error("slice {index} of the jagged shape is a null shape")]
    NullSlice {
        /// Position of the offending slice.
        index: usize,
    },
    /// Slice corners have a different length than the rank.
    #[error("the corner has {found} entries but the shape has rank {rank}")]
    CornerRank {
        /// Rank of the shape.
        rank: usize,
        /// Number of entries given.
        found: usize,
    },
    /// More indices were pinned than the shape has modes.
    #[error("{found} indices were pinned but the shape has rank {rank}")]
    TooManyPins {
        /// Rank of the shape.
        rank: usize,
        /// Number of pinned indices given.
        found: usize,
    },
    /// A slice's begin corner lies after its end corner.
    #[error("mode {mode}: slice begins at {begin} but ends at {end}")]
    InvertedCorners {
        /// The offending mode.
        mode: usize,
        /// Begin of the slice in that mode.
        begin: usize,
        /// End (exclusive) of the slice in that mode.
        end: usize,
    },
    /// A slice's corners leave the shape.
    #[error("mode {mode}: slice [{begin}, {end}) leaves the shape's range [{lower}, {upper})")]
    CornerOutOfRange {
        /// The offending mode.
        mode: usize,
        /// Begin of the slice in that mode.
        begin: usize,
        /// End (exclusive) of the slice in that mode.
        end: usize,
        /// First index of the shape in that mode.
        lower: usize,
        /// One past the last index of the shape in that mode.
        upper: usize,
    },
    /// A pinned index is not an index of the shape.
    #[error("mode {mode}: index {index} is outside [{lower}, {upper})")]
    IndexOutOfRange {
        /// The offending mode.
        mode: usize,
        /// The pinned index.
        index: usize,
        /// First index in that mode.
        lower: usize,
        /// One past the last index in that mode.
        upper: usize,
    },
    /// A chip drops a mode at an index that some slice of a jagged shape does not have, so that
    /// slice would have no element left to keep.
    #[error("mode {mode}: the chip drops this mode at index {index}, which some slice lacks")]
    ChipMissingIndex {
        /// The dropped mode.
        mode: usize,
        /// The index the chip pins it to.
        index: usize,
    },
    /// A tiling lists no tiles for a mode.
    #[error("mode {mode} of the tiling has no tiles")]
    EmptyTiling {
        /// The offending mode.
        mode: usize,
    },
    /// A tiling has a tile of length zero.
    #[error("mode {mode}: tile {tile} has length zero")]
    ZeroTile {
        /// The offending mode.
        mode: usize,
        /// Position of the tile in that mode.
        tile: usize,
    },
    /// A nesting was given no layers.
    #[error("a nested shape needs at least one layer")]
    NoLayers,
    /// The layer ranks do not add up to the rank of the shape.
    #[error("the layers hold {layered} modes but the shape has rank {rank}")]
    LayerRanks {
        /// Sum of the layer ranks.
        layered: usize,
        /// Rank of the shape.
        rank: usize,
    },
    /// A layer number is not below the number of layers.
    #[error("layer {layer} does not exist in a {n_layers}-layer shape")]
    LayerOutOfRange {
        /// The requested layer.
        layer: usize,
        /// Number of layers.
        n_layers: usize,
    },
    /// An element index does not cover whole leading layers.
    #[error(
        "an index of {found} entries does not end on a layer boundary (layer ranks {layers:?})"
    )]
    NotALayerBoundary {
        /// Number of entries given.
        found: usize,
        /// The ranks of the layers.
        layers: Vec<usize>,
    },
    /// A label string holds an empty label.
    #[error("label string {labels:?}: label {position} is empty")]
    EmptyLabel {
        /// The label string as given.
        labels: String,
        /// Zero-based position of the empty label.
        position: usize,
    },
    /// A label string names a label twice.
    #[error("label string {labels:?} names {label:?} twice")]
    DuplicateLabel {
        /// The label string as given.
        labels: String,
        /// The repeated label.
        label: String,
    },
    /// A shape was indexed with a different number of labels than its rank.
    #[error("{count} labels ({labels}) index a rank-{rank} shape")]
    LabelCount {
        /// The labels as written.
        labels: String,
        /// Number of labels.
        count: usize,
        /// Rank of the shape.
        rank: usize,
    },
    /// A null shape was indexed; it has no modes to label.
    #[error("a null shape cannot be indexed")]
    NullShapeIndexed,
    /// The operands of `+` or `-` are labelled by different label sets.
    #[error("operands of + or - must be permutations of each other: ({lhs}) vs ({rhs})")]
    NotAPermutation {
        /// Labels of the left operand.
        lhs: String,
        /// Labels of the right operand.
        rhs: String,
    },
    /// A result label names no mode of the expression.
    #[error("result label {label:?} is not among the expression's labels ({available})")]
    UnknownResultLabel {
        /// The offending result label.
        label: String,
        /// The labels the expression provides.
        available: String,
    },
    /// Two modes that must match (added, Hadamard-multiplied or contracted) have different
    /// extents.
    #[error("label {label:?}: extent {lhs} on the left does not match extent {rhs} on the right")]
    ExtentMismatch {
        /// The label shared by the two modes.
        label: String,
        /// Extent on the left (for jagged shapes: at the first place the two differ).
        lhs: usize,
        /// Extent on the right (for jagged shapes: at the first place the two differ).
        rhs: usize,
    },
    /// A contracted mode of a jagged operand has different extents in different slices, so it
    /// cannot match the other operand everywhere.
    #[error("contracted label {label:?} has extent {first} in one slice and {second} in another")]
    RaggedContraction {
        /// The contracted label.
        label: String,
        /// Extent in one slice.
        first: usize,
        /// Extent in another slice.
        second: usize,
    },
    /// A jagged result would have a mode whose indices are not contiguous, which no jagged shape
    /// can describe.
    #[error("the result's mode {label:?} would not be index-contiguous")]
    NotContiguous {
        /// Label of the offending result mode.
        label: String,
    },
    /// Nested operands have different numbers of layers.
    #[error("nested operands have {lhs} and {rhs} layers")]
    LayerCountMismatch {
        /// Layers of the left operand.
        lhs: usize,
        /// Layers of the right operand.
        rhs: usize,
    },
    /// A label sits in different layers of two added nested operands.
    #[error("label {label:?} is in layer {lhs} on the left but layer {rhs} on the right")]
    LayerMismatch {
        /// The offending label.
        label: String,
        /// Its layer on the left.
        lhs: usize,
        /// Its layer on the right.
        rhs: usize,
    },
    /// Result labels of a nested expression are not ordered by layer, so the modes cannot be
    /// assigned to layers left to right.
    #[error(
        "result label {label:?} (layer {layer}) follows {previous:?} (layer {previous_layer})"
    )]
    LayerOrder {
        /// The offending label.
        label: String,
        /// Its layer.
        layer: usize,
        /// The label before it.
        previous: String,
        /// The layer of the label before it.
        previous_layer: usize,
    },
}
