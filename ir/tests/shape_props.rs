//! Property tests of the shape algebra on random smooth, jagged and nested shapes.

use proptest::prelude::*;
use weft_ir::shape::{JaggedShape, LabelAlgebra, Nested, Shape, ShapeBase, ShapeError};

/// A smooth shape of exactly `rank` modes, small extents, and a random origin.
fn smooth_of_rank(rank: usize) -> BoxedStrategy<Shape> {
    (
        prop::collection::vec(0..4usize, rank),
        prop::collection::vec(0..3usize, rank),
    )
        .prop_map(|(extents, origin)| {
            Shape::with_origin(extents, origin).expect("small shapes fit")
        })
        .boxed()
}

fn smooth() -> BoxedStrategy<Shape> {
    (0..=3usize).prop_flat_map(smooth_of_rank).boxed()
}

/// A jagged shape of exactly `rank` modes: smooth, or slices of random jagged shapes.
fn jagged_of_rank(rank: usize) -> BoxedStrategy<JaggedShape> {
    let leaf = smooth_of_rank(rank).prop_map(JaggedShape::from);
    if rank == 0 {
        return leaf.boxed();
    }
    let slices = (
        prop::collection::vec(jagged_of_rank(rank - 1), 1..4),
        0..3usize,
    )
        .prop_map(|(slices, origin)| {
            JaggedShape::from_slices_with_origin(slices, origin).expect("slices share a rank")
        });
    prop_oneof![1 => leaf, 3 => slices].boxed()
}

fn jagged() -> BoxedStrategy<JaggedShape> {
    (1..=3usize).prop_flat_map(jagged_of_rank).boxed()
}

/// The jagged shape holding every index below one of `corners` (a down-set): every projection
/// and permutation of it is again a jagged shape.
fn down_set(corners: &[Vec<usize>]) -> JaggedShape {
    let reach = corners.iter().map(|corner| corner[0]).max().unwrap_or(0);
    if corners.first().is_none_or(|corner| corner.len() == 1) {
        return JaggedShape::from(Shape::new([reach]).expect("small shape"));
    }
    let slices = (0..reach).map(|value| {
        let rest: Vec<Vec<usize>> = corners
            .iter()
            .filter(|corner| corner[0] > value)
            .map(|corner| corner[1..].to_vec())
            .collect();
        down_set(&rest)
    });
    JaggedShape::from_slices(slices).expect("slices share a rank")
}

fn down_set_with_permutation() -> BoxedStrategy<(JaggedShape, Vec<usize>)> {
    (1..=4usize)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(prop::collection::vec(1..4usize, rank), 1..4),
                Just((0..rank).collect::<Vec<usize>>()).prop_shuffle(),
            )
        })
        .prop_map(|(corners, permutation)| (down_set(&corners), permutation))
        .boxed()
}

fn labels(prefix: &str, modes: impl IntoIterator<Item = usize>) -> String {
    modes
        .into_iter()
        .map(|mode| format!("{prefix}{mode}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A box `[begin, end)` inside `[lower, upper)`, from random fractions.
fn corners_in(
    lower: &[usize],
    upper: &[usize],
    picks: &[(usize, usize)],
) -> (Vec<usize>, Vec<usize>) {
    let mut begin = Vec::new();
    let mut end = Vec::new();
    for ((&lo, &hi), &(a, b)) in lower.iter().zip(upper).zip(picks) {
        let b_val = lo + a % (hi - lo + 1);
        let e_val = b_val + b % (hi - b_val + 1);
        begin.push(b_val);
        end.push(e_val);
    }
    (begin, end)
}

fn picks() -> impl Strategy<Value = Vec<(usize, usize)>> {
    prop::collection::vec((0..64usize, 0..64usize), 4)
}

/// The indices moved so that each mode's smallest index is zero: results of label expressions
/// are placed by their elements, not by empty slices.
fn from_zero(indices: impl Iterator<Item = Vec<usize>>) -> Vec<Vec<usize>> {
    let all: Vec<Vec<usize>> = indices.collect();
    let Some(first) = all.first() else {
        return all;
    };
    let mut lowest = first.clone();
    for index in &all {
        for (low, &value) in lowest.iter_mut().zip(index) {
            *low = (*low).min(value);
        }
    }
    all.iter()
        .map(|index| index.iter().zip(&lowest).map(|(v, low)| v - low).collect())
        .collect()
}

/// Checks lexicographic order (which implies distinct indices) and the count.
fn assert_lexicographic<S: ShapeBase>(shape: &S) -> Result<(), TestCaseError> {
    let all: Vec<Vec<usize>> = shape.indices().collect();
    prop_assert_eq!(all.len(), shape.size());
    for pair in all.windows(2) {
        prop_assert!(pair[0] < pair[1], "{:?} !< {:?}", pair[0], pair[1]);
    }
    for index in &all {
        prop_assert_eq!(index.len(), shape.rank());
    }
    Ok(())
}

/// Whether the slice's indices, without the modes `dropped`, are the chip's.
fn assert_chip_matches_slice<S: ShapeBase>(
    sliced: &S,
    chipped: &S,
    dropped: &[bool],
) -> Result<(), TestCaseError> {
    let kept: Vec<Vec<usize>> = sliced
        .indices()
        .map(|index| {
            index
                .iter()
                .zip(dropped)
                .filter(|(_, &drop)| !drop)
                .map(|(&value, _)| value)
                .collect()
        })
        .collect();
    let chip: Vec<Vec<usize>> = chipped.indices().collect();
    prop_assert_eq!(kept, chip);
    Ok(())
}

// `proptest!` without a config uses `ProptestConfig::default()`, which reads `PROPTEST_CASES`.
proptest! {
    #[test]
    fn direct_product_size_is_product_of_sizes(a in smooth(), b in smooth()) {
        let (la, lb) = (labels("a", 0..a.rank()), labels("b", 0..b.rank()));
        let result = [la.as_str(), lb.as_str()].iter().filter(|l| !l.is_empty()).cloned()
            .collect::<Vec<_>>().join(",");
        let product = (a.idx(&la)? * b.idx(&lb)?).to(&result)?;
        prop_assert_eq!(product.size(), a.size() * b.size());
        prop_assert_eq!(product.rank(), a.rank() + b.rank());
    }

    #[test]
    fn jagged_direct_product_size_is_product_of_sizes(a in jagged(), b in jagged()) {
        let (la, lb) = (labels("a", 0..a.rank()), labels("b", 0..b.rank()));
        let product = (a.idx(&la)? * b.idx(&lb)?).to(&format!("{la},{lb}"))?;
        prop_assert_eq!(product.size(), a.size() * b.size());
        // And a comes back by summing out b's modes, when b is not empty.
        if b.size() > 0 {
            let back = product.idx(&format!("{la},{lb}"))?.to(&la)?;
            prop_assert_eq!(from_zero(back.indices()), from_zero(a.indices()));
        }
    }

    #[test]
    fn permuting_by_inverse_permutations_is_identity(
        shape in smooth(),
        seed in any::<u64>(),
    ) {
        let rank = shape.rank();
        let mut permutation: Vec<usize> = (0..rank).collect();
        // A deterministic shuffle from the seed (a smooth shape's rank is at most 3).
        let mut state = seed;
        for i in (1..rank).rev() {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            permutation.swap(i, (state >> 33) as usize % (i + 1));
        }
        let own = labels("m", 0..rank);
        let permuted_labels = labels("m", permutation.iter().copied());
        let permuted = shape.idx(&own)?.to(&permuted_labels)?;
        for (mode, &from) in permutation.iter().enumerate() {
            prop_assert_eq!(permuted.extent(mode)?, shape.extent(from)?);
        }
        let back = permuted.idx(&permuted_labels)?.to(&own)?;
        prop_assert_eq!(back, Shape::new(shape.extents().iter().copied())?);
    }

    #[test]
    fn permuting_a_jagged_down_set_by_inverse_permutations_is_identity(
        (shape, permutation) in down_set_with_permutation(),
    ) {
        let own = labels("m", 0..shape.rank());
        let permuted_labels = labels("m", permutation.iter().copied());
        let permuted = shape.idx(&own)?.to(&permuted_labels)?;
        prop_assert_eq!(permuted.size(), shape.size());
        let back = permuted.idx(&permuted_labels)?.to(&own)?;
        prop_assert_eq!(back, shape);
    }

    #[test]
    fn permuting_a_jagged_shape_permutes_its_indices(
        shape in jagged(),
        seed in any::<u64>(),
    ) {
        let rank = shape.rank();
        let mut permutation: Vec<usize> = (0..rank).collect();
        permutation.rotate_left((seed as usize) % rank.max(1));
        if seed % 2 == 1 && rank > 1 {
            permutation.swap(0, rank - 1);
        }
        let own = labels("m", 0..rank);
        let permuted_labels = labels("m", permutation.iter().copied());
        let mut expected: Vec<Vec<usize>> = from_zero(shape.indices())
            .into_iter()
            .map(|index| permutation.iter().map(|&mode| index[mode]).collect())
            .collect();
        expected.sort();
        match shape.idx(&own)?.to(&permuted_labels) {
            Ok(permuted) => {
                prop_assert_eq!(from_zero(permuted.indices()), expected);
            }
            // Only a set whose last mode has a gap somewhere cannot be a jagged shape.
            Err(ShapeError::NotContiguous { .. }) => {
                let mut gap = false;
                for pair in expected.windows(2) {
                    let (a, b) = (&pair[0], &pair[1]);
                    if a[..rank - 1] == b[..rank - 1] && b[rank - 1] > a[rank - 1] + 1 {
                        gap = true;
                    }
                }
                prop_assert!(gap, "NotContiguous without a gap in the last mode");
            }
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }

    #[test]
    fn smooth_iteration_is_lexicographic_and_complete(shape in smooth()) {
        assert_lexicographic(&shape)?;
        let offsets: Vec<Vec<usize>> = shape.offsets().collect();
        let zero = Shape::new(shape.extents().iter().copied())?;
        prop_assert_eq!(offsets, zero.indices().collect::<Vec<_>>());
    }

    #[test]
    fn jagged_iteration_is_lexicographic_and_complete(shape in jagged()) {
        assert_lexicographic(&shape)?;
        prop_assert_eq!(shape.leading_size(shape.rank())?, shape.size());
    }

    #[test]
    fn nested_iteration_is_lexicographic_and_complete(shape in jagged(), split in 0..4usize) {
        let outer = split.min(shape.rank());
        let nested = Nested::new([outer, shape.rank() - outer], shape)?;
        assert_lexicographic(&nested)?;
        prop_assert_eq!(nested.elements_in_layer(1)?, nested.size());
    }

    #[test]
    fn smooth_chip_and_slice_keep_the_same_elements(shape in smooth(), picks in picks()) {
        let (begin, end) = corners_in(shape.first(), &shape.upper(), &picks);
        let sliced = shape.slice(&begin, &end)?;
        let chipped = shape.chip(&begin, &end)?;
        let dropped: Vec<bool> = begin.iter().zip(&end).map(|(b, e)| e - b == 1).collect();
        assert_chip_matches_slice(&sliced, &chipped, &dropped)?;
    }

    #[test]
    fn jagged_chip_and_slice_keep_the_same_elements(shape in jagged(), picks in picks()) {
        let (begin, end) = corners_in(&shape.origin(), &shape.upper(), &picks);
        let sliced = shape.slice(&begin, &end)?;
        let dropped: Vec<bool> = begin.iter().zip(&end).map(|(b, e)| e - b == 1).collect();
        // Every kept index lies in the box.
        for index in sliced.indices() {
            for (mode, &value) in index.iter().enumerate() {
                prop_assert!(begin[mode] <= value && value < end[mode]);
            }
        }
        let inside = shape.indices().filter(|index| {
            index.iter().zip(begin.iter().zip(&end)).all(|(&v, (&b, &e))| b <= v && v < e)
        }).count();
        prop_assert_eq!(sliced.size(), inside);
        match shape.chip(&begin, &end) {
            Ok(chipped) => assert_chip_matches_slice(&sliced, &chipped, &dropped)?,
            // Some slice lacks the pinned index of a dropped mode.
            Err(ShapeError::ChipMissingIndex { mode, .. }) => prop_assert!(dropped[mode]),
            Err(other) => prop_assert!(false, "unexpected error {other:?}"),
        }
    }

    #[test]
    fn chip_at_and_slice_at_keep_the_same_elements(shape in jagged(), choice in any::<usize>()) {
        let all: Vec<Vec<usize>> = shape.indices().collect();
        prop_assume!(!all.is_empty());
        let index = &all[choice % all.len()];
        let pinned = &index[..(choice / 7) % (index.len() + 1)];
        let sliced = shape.slice_at(pinned)?;
        let chipped = shape.chip_at(pinned)?;
        let dropped: Vec<bool> = (0..shape.rank()).map(|mode| mode < pinned.len()).collect();
        assert_chip_matches_slice(&sliced, &chipped, &dropped)?;
        let nested = Nested::new([pinned.len(), shape.rank() - pinned.len()], shape.clone())?;
        let element = nested.element(pinned)?;
        prop_assert_eq!(element.shape(), &chipped);
    }
}
