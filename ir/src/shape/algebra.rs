//! The label-expression operations for smooth, jagged and nested shapes.

use super::base::ShapeBase;
use super::error::ShapeError;
use super::index_set::{IndexBox, IndexSet};
use super::jagged::JaggedShape;
use super::label::{check_labels, LabelAlgebra, Labels};
use super::nested::Nested;
use super::smooth::Shape;

/// Checks that both operands of `+` or `-` carry the same labels.
fn check_permutation(lhs: &Labels, rhs: &Labels) -> Result<(), ShapeError> {
    if lhs.is_permutation_of(rhs) {
        Ok(())
    } else {
        Err(ShapeError::NotAPermutation {
            lhs: lhs.to_string(),
            rhs: rhs.to_string(),
        })
    }
}

/// The labels of both operands of a product, left ones first.
fn union(lhs: &Labels, rhs: &Labels) -> Labels {
    let labels = lhs
        .iter()
        .chain(rhs.iter().filter(|label| !lhs.contains(label)))
        .map(str::to_string)
        .collect();
    Labels::from_distinct(labels)
}

impl LabelAlgebra for Shape {
    fn assign(&self, labels: &Labels, result: &Labels) -> Result<Shape, ShapeError> {
        check_labels(self, labels)?;
        let modes = labels.positions_of(result)?;
        Shape::new(modes.iter().map(|&mode| self.extents()[mode]))
    }

    fn sum(&self, labels: &Labels, rhs: &Shape, rhs_labels: &Labels) -> Result<Shape, ShapeError> {
        check_labels(self, labels)?;
        check_labels(rhs, rhs_labels)?;
        check_permutation(labels, rhs_labels)?;
        let rhs_modes = rhs_labels.positions_of(labels)?;
        for ((label, &extent), &rhs_mode) in labels.iter().zip(self.extents()).zip(&rhs_modes) {
            let rhs_extent = rhs.extents()[rhs_mode];
            if extent != rhs_extent {
                return Err(ShapeError::ExtentMismatch {
                    label: label.to_string(),
                    lhs: extent,
                    rhs: rhs_extent,
                });
            }
        }
        Shape::new(self.extents().iter().copied())
    }

    fn product(
        &self,
        labels: &Labels,
        rhs: &Shape,
        rhs_labels: &Labels,
        result: &Labels,
    ) -> Result<Shape, ShapeError> {
        check_labels(self, labels)?;
        check_labels(rhs, rhs_labels)?;
        union(labels, rhs_labels).positions_of(result)?;
        for (label, &extent) in labels.iter().zip(self.extents()) {
            if let Some(rhs_mode) = rhs_labels.position(label) {
                let rhs_extent = rhs.extents()[rhs_mode];
                if extent != rhs_extent {
                    return Err(ShapeError::ExtentMismatch {
                        label: label.to_string(),
                        lhs: extent,
                        rhs: rhs_extent,
                    });
                }
            }
        }
        let extent_of = |label: &str| match labels.position(label) {
            Some(mode) => self.extents()[mode],
            // positions_of above checked the label is in one of the operands.
            None => rhs_labels
                .position(label)
                .map_or(0, |mode| rhs.extents()[mode]),
        };
        Shape::new(result.iter().map(extent_of))
    }
}

/// The boxes of `shape`, measured from its origin.
fn offset_boxes(shape: &JaggedShape) -> Vec<IndexBox> {
    let origin = shape.origin();
    shape
        .boxes()
        .into_iter()
        .map(|bx| {
            bx.iter()
                .zip(&origin)
                .map(|(&(start, end), &first)| (start - first, end - first))
                .collect()
        })
        .collect()
}

/// Each box restricted to `modes`, in that order (a permutation and projection).
fn pick(boxes: &[IndexBox], modes: &[usize]) -> Vec<IndexBox> {
    boxes
        .iter()
        .map(|bx| modes.iter().map(|&mode| bx[mode]).collect())
        .collect()
}

/// The index set of `boxes` over `modes`.
fn set_over(boxes: &[IndexBox], modes: &[usize]) -> IndexSet {
    IndexSet::from_boxes(&pick(boxes, modes), modes.len())
}

/// The modes of `wanted` (all present) in `labels`.
fn modes_of(labels: &Labels, wanted: &[String]) -> Result<Vec<usize>, ShapeError> {
    labels.positions_of(&Labels::from_distinct(wanted.to_vec()))
}

/// Compares two index sets over the modes labelled `names`, naming the first differing label.
fn check_same(lhs: &IndexSet, rhs: &IndexSet, names: &[String]) -> Result<(), ShapeError> {
    match lhs.first_difference(rhs) {
        None => Ok(()),
        Some(diff) => Err(ShapeError::ExtentMismatch {
            label: names.get(diff.mode).cloned().unwrap_or_default(),
            lhs: diff.lhs,
            rhs: diff.rhs,
        }),
    }
}

/// The shape at the zero index.
fn at_zero(shape: &JaggedShape) -> Result<JaggedShape, ShapeError> {
    let mut moved = shape.clone();
    moved.set_origin(&vec![0; shape.rank()])?;
    Ok(moved)
}

impl LabelAlgebra for JaggedShape {
    fn assign(&self, labels: &Labels, result: &Labels) -> Result<JaggedShape, ShapeError> {
        check_labels(self, labels)?;
        let modes = labels.positions_of(result)?;
        if let Some(smooth) = self.as_smooth() {
            return Ok(JaggedShape::from(smooth.assign(labels, result)?));
        }
        if modes.iter().copied().eq(0..self.rank()) {
            return at_zero(self);
        }
        set_over(&offset_boxes(self), &modes).to_jagged(result.as_slice())
    }

    fn sum(
        &self,
        labels: &Labels,
        rhs: &JaggedShape,
        rhs_labels: &Labels,
    ) -> Result<JaggedShape, ShapeError> {
        check_labels(self, labels)?;
        check_labels(rhs, rhs_labels)?;
        check_permutation(labels, rhs_labels)?;
        if let (Some(lhs), Some(rhs)) = (self.as_smooth(), rhs.as_smooth()) {
            return Ok(JaggedShape::from(lhs.sum(labels, rhs, rhs_labels)?));
        }
        let own: Vec<usize> = (0..self.rank()).collect();
        let lhs_set = set_over(&offset_boxes(self), &own);
        let rhs_set = set_over(&offset_boxes(rhs), &rhs_labels.positions_of(labels)?);
        check_same(&lhs_set, &rhs_set, labels.as_slice())?;
        at_zero(self)
    }

    fn product(
        &self,
        labels: &Labels,
        rhs: &JaggedShape,
        rhs_labels: &Labels,
        result: &Labels,
    ) -> Result<JaggedShape, ShapeError> {
        check_labels(self, labels)?;
        check_labels(rhs, rhs_labels)?;
        union(labels, rhs_labels).positions_of(result)?;
        if let (Some(lhs), Some(rhs)) = (self.as_smooth(), rhs.as_smooth()) {
            return Ok(JaggedShape::from(
                lhs.product(labels, rhs, rhs_labels, result)?,
            ));
        }
        let select = |from: &Labels, keep: &dyn Fn(&str) -> bool| -> Vec<String> {
            from.iter()
                .filter(|label| keep(label))
                .map(str::to_string)
                .collect()
        };
        let hadamard = select(labels, &|l| rhs_labels.contains(l) && result.contains(l));
        let contracted = select(labels, &|l| rhs_labels.contains(l) && !result.contains(l));
        let lhs_private = select(labels, &|l| !rhs_labels.contains(l));
        let rhs_private = select(rhs_labels, &|l| !labels.contains(l));
        let lhs_boxes = offset_boxes(self);
        let rhs_boxes = offset_boxes(rhs);

        // Hadamard modes: both operands must cover the same indices of them.
        if !hadamard.is_empty() {
            let lhs_set = set_over(&lhs_boxes, &modes_of(labels, &hadamard)?);
            let rhs_set = set_over(&rhs_boxes, &modes_of(rhs_labels, &hadamard)?);
            check_same(&lhs_set, &rhs_set, &hadamard)?;
        }

        // Contracted modes: for each Hadamard index, every slice of either operand must run
        // over the same contracted indices.
        if !contracted.is_empty() {
            let sides = [
                (&lhs_boxes, labels, &lhs_private),
                (&rhs_boxes, rhs_labels, &rhs_private),
            ];
            for (boxes, own, private) in sides {
                let order: Vec<String> = [&hadamard, private, &contracted]
                    .into_iter()
                    .flatten()
                    .cloned()
                    .collect();
                let set = set_over(boxes, &modes_of(own, &order)?);
                if let Err((first, second)) = set.uniform_below(hadamard.len(), private.len()) {
                    let diff = first.first_difference(&second);
                    let (mode, first, second) = diff.map_or((0, 0, 0), |d| (d.mode, d.lhs, d.rhs));
                    return Err(ShapeError::RaggedContraction {
                        label: contracted.get(mode).cloned().unwrap_or_default(),
                        first,
                        second,
                    });
                }
            }
            let shared: Vec<String> = hadamard.iter().chain(&contracted).cloned().collect();
            let lhs_set = set_over(&lhs_boxes, &modes_of(labels, &shared)?);
            let rhs_set = set_over(&rhs_boxes, &modes_of(rhs_labels, &shared)?);
            check_same(&lhs_set, &rhs_set, &shared)?;
        }

        // The result: join both operands on the Hadamard modes, keep the requested private
        // modes, then order as requested.
        let lhs_kept = select(&Labels::from_distinct(lhs_private), &|l| result.contains(l));
        let rhs_kept = select(&Labels::from_distinct(rhs_private), &|l| result.contains(l));
        let lhs_order: Vec<String> = hadamard.iter().chain(&lhs_kept).cloned().collect();
        let rhs_order: Vec<String> = hadamard.iter().chain(&rhs_kept).cloned().collect();
        let lhs_part = set_over(&lhs_boxes, &modes_of(labels, &lhs_order)?).boxes();
        let rhs_part = set_over(&rhs_boxes, &modes_of(rhs_labels, &rhs_order)?).boxes();
        let n_hadamard = hadamard.len();
        let mut joined: Vec<IndexBox> = Vec::new();
        for lhs_box in &lhs_part {
            for rhs_box in &rhs_part {
                let common: IndexBox = lhs_box[..n_hadamard]
                    .iter()
                    .zip(&rhs_box[..n_hadamard])
                    .map(|(&(ls, le), &(rs, re))| (ls.max(rs), le.min(re)))
                    .collect();
                if common.iter().all(|(start, end)| start < end) {
                    let mut bx = common;
                    bx.extend_from_slice(&lhs_box[n_hadamard..]);
                    bx.extend_from_slice(&rhs_box[n_hadamard..]);
                    joined.push(bx);
                }
            }
        }
        let joined_labels: Vec<String> = lhs_order.into_iter().chain(rhs_kept).collect();
        let modes = Labels::from_distinct(joined_labels).positions_of(result)?;
        set_over(&joined, &modes).to_jagged(result.as_slice())
    }
}

/// The layer ranks of a result whose modes lie in `mode_layers`; the layers must not decrease
/// from left to right, since modes are assigned to layers in order.
fn result_layers(
    result: &Labels,
    mode_layers: &[usize],
    n_layers: usize,
) -> Result<Vec<usize>, ShapeError> {
    let mut layers = vec![0; n_layers];
    for (position, (label, &layer)) in result.iter().zip(mode_layers).enumerate() {
        if position > 0 && mode_layers[position - 1] > layer {
            return Err(ShapeError::LayerOrder {
                label: label.to_string(),
                layer,
                previous: result.as_slice()[position - 1].clone(),
                previous_layer: mode_layers[position - 1],
            });
        }
        layers[layer] += 1;
    }
    Ok(layers)
}

fn check_layer_counts<S: ShapeBase>(lhs: &Nested<S>, rhs: &Nested<S>) -> Result<(), ShapeError> {
    if lhs.n_layers() == rhs.n_layers() {
        Ok(())
    } else {
        Err(ShapeError::LayerCountMismatch {
            lhs: lhs.n_layers(),
            rhs: rhs.n_layers(),
        })
    }
}

impl<S: LabelAlgebra> LabelAlgebra for Nested<S> {
    fn assign(&self, labels: &Labels, result: &Labels) -> Result<Nested<S>, ShapeError> {
        check_labels(self, labels)?;
        let modes = labels.positions_of(result)?;
        let own = self.mode_layers();
        let mode_layers: Vec<usize> = modes.iter().map(|&mode| own[mode]).collect();
        let layers = result_layers(result, &mode_layers, self.n_layers())?;
        let shape = self.shape().assign(labels, result)?;
        Ok(Nested::from_valid_parts(layers, shape))
    }

    fn sum(
        &self,
        labels: &Labels,
        rhs: &Nested<S>,
        rhs_labels: &Labels,
    ) -> Result<Nested<S>, ShapeError> {
        check_labels(self, labels)?;
        check_labels(rhs, rhs_labels)?;
        check_permutation(labels, rhs_labels)?;
        check_layer_counts(self, rhs)?;
        let (own, other) = (self.mode_layers(), rhs.mode_layers());
        for (label, &layer) in labels.iter().zip(&own) {
            let rhs_layer = rhs_labels.position(label).map_or(layer, |mode| other[mode]);
            if layer != rhs_layer {
                return Err(ShapeError::LayerMismatch {
                    label: label.to_string(),
                    lhs: layer,
                    rhs: rhs_layer,
                });
            }
        }
        let shape = self.shape().sum(labels, rhs.shape(), rhs_labels)?;
        Ok(Nested::from_valid_parts(self.layers().to_vec(), shape))
    }

    fn product(
        &self,
        labels: &Labels,
        rhs: &Nested<S>,
        rhs_labels: &Labels,
        result: &Labels,
    ) -> Result<Nested<S>, ShapeError> {
        check_labels(self, labels)?;
        check_labels(rhs, rhs_labels)?;
        check_layer_counts(self, rhs)?;
        let shape = self
            .shape()
            .product(labels, rhs.shape(), rhs_labels, result)?;
        let (own, other) = (self.mode_layers(), rhs.mode_layers());
        // A mode in both operands lands in the outer of its two layers.
        let mode_layers: Vec<usize> = result
            .iter()
            .map(|label| {
                let lhs_layer = labels.position(label).map(|mode| own[mode]);
                let rhs_layer = rhs_labels.position(label).map(|mode| other[mode]);
                match (lhs_layer, rhs_layer) {
                    (Some(l), Some(r)) => l.min(r),
                    (Some(layer), None) | (None, Some(layer)) => layer,
                    // The product above checked that every result label is in an operand.
                    (None, None) => 0,
                }
            })
            .collect();
        let layers = result_layers(result, &mode_layers, self.n_layers())?;
        Ok(Nested::from_valid_parts(layers, shape))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape<const N: usize>(extents: [usize; N]) -> Shape {
        Shape::new(extents).expect("small test shape")
    }

    fn rows(lengths: &[usize]) -> JaggedShape {
        JaggedShape::from_slices(lengths.iter().map(|&n| shape([n]))).expect("rows of rank 1")
    }

    #[test]
    fn adding_jagged_shapes_names_the_mismatched_label() -> Result<(), ShapeError> {
        let err = (rows(&[10, 20]).idx("i,j")? + rows(&[10, 15]).idx("i,j")?)
            .to("i,j")
            .unwrap_err();
        assert_eq!(
            err,
            ShapeError::ExtentMismatch {
                label: "j".into(),
                lhs: 20,
                rhs: 15
            }
        );
        Ok(())
    }

    #[test]
    fn transposing_a_set_with_holes_is_not_contiguous() -> Result<(), ShapeError> {
        let err = rows(&[10, 5, 10]).idx("i,j")?.to("j,i").unwrap_err();
        assert_eq!(err, ShapeError::NotContiguous { label: "i".into() });
        Ok(())
    }

    #[test]
    fn jagged_matrix_times_vector_contracts_matching_rows() -> Result<(), ShapeError> {
        let matrix = rows(&[4, 4, 4]);
        let vector = JaggedShape::from(shape([4]));
        let result = (matrix.idx("i,j")? * vector.idx("j")?).to("i")?;
        assert_eq!(result, JaggedShape::from(shape([3])));
        let ragged = rows(&[4, 3]);
        let err = (ragged.idx("i,j")? * vector.idx("j")?).to("i").unwrap_err();
        assert_eq!(
            err,
            ShapeError::RaggedContraction {
                label: "j".into(),
                first: 4,
                second: 3
            }
        );
        let short = rows(&[3, 3]);
        let err = (short.idx("i,j")? * vector.idx("j")?).to("i").unwrap_err();
        assert_eq!(
            err,
            ShapeError::ExtentMismatch {
                label: "j".into(),
                lhs: 3,
                rhs: 4
            }
        );
        Ok(())
    }

    #[test]
    fn summing_out_a_mode_projects() -> Result<(), ShapeError> {
        assert_eq!(shape([2, 3]).idx("i,j")?.to("j")?, shape([3]));
        assert_eq!(
            rows(&[1, 3]).idx("i,j")?.to("j")?,
            JaggedShape::from(shape([3]))
        );
        assert_eq!(shape([2, 3]).idx("i,j")?.to("")?, Shape::scalar());
        Ok(())
    }

    #[test]
    fn bad_labels_are_errors() -> Result<(), ShapeError> {
        let s = shape([2, 3]);
        assert!(matches!(
            s.idx("i,,j"),
            Err(ShapeError::EmptyLabel { position: 1, .. })
        ));
        assert!(matches!(
            s.idx("i,j,k"),
            Err(ShapeError::LabelCount {
                count: 3,
                rank: 2,
                ..
            })
        ));
        assert_eq!(
            Shape::null().idx("").unwrap_err(),
            ShapeError::NullShapeIndexed
        );
        assert!(matches!(
            s.idx("i,j")?.to("i,x"),
            Err(ShapeError::UnknownResultLabel { ref label, .. }) if label == "x"
        ));
        // Labels are case-sensitive: I and i are different modes.
        assert_eq!((s.idx("i,j")? * s.idx("I,j")?).to("i,I")?, shape([2, 2]));
        Ok(())
    }

    #[test]
    fn nested_operands_need_equal_layer_counts() -> Result<(), ShapeError> {
        let two = Nested::new([1, 1], shape([2, 3]))?;
        let three = Nested::new([1, 1, 0], shape([2, 3]))?;
        let err = (two.idx("i,j")? * three.idx("i,j")?).to("i,j").unwrap_err();
        assert_eq!(err, ShapeError::LayerCountMismatch { lhs: 2, rhs: 3 });
        Ok(())
    }

    #[test]
    fn corner_chips_drop_unit_ranges_and_pinned_chips_drop_pins() -> Result<(), ShapeError> {
        let s = shape([10, 1]);
        assert_eq!(s.chip_at(&[2])?, Shape::with_origin([1], [0])?);
        assert_eq!(s.chip(&[2, 0], &[3, 1])?, Shape::scalar());
        Ok(())
    }

    #[test]
    fn chipping_a_jagged_mode_some_row_lacks_is_an_error() -> Result<(), ShapeError> {
        let err = rows(&[10, 20]).chip(&[0, 15], &[2, 16]).unwrap_err();
        assert_eq!(err, ShapeError::ChipMissingIndex { mode: 1, index: 15 });
        assert_eq!(
            rows(&[10, 20]).chip(&[1, 15], &[2, 16])?,
            JaggedShape::from(Shape::scalar())
        );
        Ok(())
    }
}
