//! Every code example of the reference "Tensor Shape Design" (summarised in docs/design.md,
//! "Shapes"; 004 is its original number, hence this file's name), in order, as a test.
//!
//! Where the reference contradicts its own definitions, the test checks the reading documented in
//! docs/shapes.md ("Contradictions in the reference"); those tests say so by name.

use weft_ir::shape::{JaggedShape, LabelAlgebra, Nested, Shape, ShapeBase, ShapeError, TiledShape};

type TestResult = Result<(), ShapeError>;

fn shape<const N: usize>(extents: [usize; N]) -> Shape {
    Shape::new(extents).expect("small test shape")
}

fn jagged<T: Into<JaggedShape>>(slices: impl IntoIterator<Item = T>) -> JaggedShape {
    JaggedShape::from_slices(slices).expect("valid test slices")
}

fn indices<S: ShapeBase>(s: &S) -> Vec<Vec<usize>> {
    s.indices().collect()
}

// ---- Constructing a Shape ----

#[test]
fn shape_construction_from_fixed_lists() -> TestResult {
    let null_shape = Shape::null();
    let rank0_shape = Shape::new([])?;
    let rank1_shape = Shape::new([10])?;
    let rank2_shape = Shape::new([10, 20])?;
    let rank3_shape = Shape::new([10, 20, 30])?;

    assert!(null_shape.is_null());
    assert_eq!((null_shape.rank(), null_shape.size()), (0, 0));
    assert!(!rank0_shape.is_null());
    assert_eq!((rank0_shape.rank(), rank0_shape.size()), (0, 1));
    assert_ne!(null_shape, rank0_shape);
    assert_eq!(Shape::default(), null_shape);
    assert_eq!((rank1_shape.rank(), rank1_shape.size()), (1, 10));
    assert_eq!((rank2_shape.rank(), rank2_shape.size()), (2, 200));
    assert_eq!((rank3_shape.rank(), rank3_shape.size()), (3, 6000));
    assert_eq!(rank3_shape.extent(2)?, 30);
    Ok(())
}

#[test]
fn shape_construction_from_a_run_time_iterator() -> TestResult {
    let get_extents = || -> Vec<usize> { (1..=4).map(|i| i * 10).collect() };
    let extents = get_extents();
    let runtime_rank_shape = Shape::new(extents.iter().copied())?;
    assert_eq!(runtime_rank_shape.rank(), 4);
    assert_eq!(runtime_rank_shape.extents(), extents.as_slice());
    Ok(())
}

// ---- Jagged Shape Construction ----

#[test]
fn jagged_construction() -> TestResult {
    let (s10, s20, s30) = (shape([10]), shape([20]), shape([30]));
    let (s10_20, s30_40, s50_60) = (shape([10, 20]), shape([30, 40]), shape([50, 60]));
    let (s10_20_30, s40_50_60) = (shape([10, 20, 30]), shape([40, 50, 60]));

    let null_shape = JaggedShape::null();
    assert!(null_shape.is_null());
    assert_eq!((null_shape.rank(), null_shape.size()), (0, 0));

    let smooth0_shape = JaggedShape::from(Shape::new([])?);
    assert_eq!((smooth0_shape.rank(), smooth0_shape.size()), (0, 1));
    let smooth1_shape = JaggedShape::from(shape([10]));
    assert_eq!((smooth1_shape.rank(), smooth1_shape.size()), (1, 10));
    let smooth2_shape = JaggedShape::from(shape([10, 20]));
    assert_eq!((smooth2_shape.rank(), smooth2_shape.size()), (2, 200));

    let rank2_shape = JaggedShape::from_slices([s10.clone()])?;
    assert_eq!((rank2_shape.rank(), rank2_shape.size()), (2, 10));

    let rank2_shape2 = JaggedShape::from_slices([s10.clone(), s20.clone(), s30.clone()])?;
    assert_eq!((rank2_shape2.rank(), rank2_shape2.size()), (2, 60));
    assert_eq!(rank2_shape2.chip_at(&[1])?, JaggedShape::from(s20.clone()));

    let rank3_shape = JaggedShape::from_slices([s10_20.clone(), s30_40.clone(), s50_60.clone()])?;
    assert_eq!(
        (rank3_shape.rank(), rank3_shape.size()),
        (3, 200 + 1200 + 3000)
    );
    assert_eq!(
        rank3_shape.chip_at(&[2])?,
        JaggedShape::from(s50_60.clone())
    );

    let rank4_shape = JaggedShape::from_slices([s10_20_30.clone(), s40_50_60.clone()])?;
    assert_eq!(
        (rank4_shape.rank(), rank4_shape.size()),
        (4, 6000 + 120_000)
    );
    assert_eq!(rank4_shape.chip_at(&[1])?, JaggedShape::from(s40_50_60));

    let rank4_shape2 = JaggedShape::from_slices([
        jagged([s10_20.clone(), s30_40.clone()]),
        jagged([s30_40.clone(), s10_20.clone(), s50_60.clone()]),
    ])?;
    assert_eq!(rank4_shape2.rank(), 4);
    assert_eq!(
        rank4_shape2.chip_at(&[0, 0])?,
        JaggedShape::from(s10_20.clone())
    );
    assert_eq!(
        rank4_shape2.chip_at(&[0, 1])?,
        JaggedShape::from(s30_40.clone())
    );
    assert_eq!(rank4_shape2.chip_at(&[1, 0])?, JaggedShape::from(s30_40));
    assert_eq!(rank4_shape2.chip_at(&[1, 1])?, JaggedShape::from(s10_20));
    assert_eq!(rank4_shape2.chip_at(&[1, 2])?, JaggedShape::from(s50_60));
    assert!(rank4_shape2.chip_at(&[0, 2]).is_err());
    Ok(())
}

/// Contradiction: the reference names this `rank0_shape` but calls it "a jagged vector with no
/// elements". weft reads the comment: no slices make a rank-1 shape with no elements, which
/// differs from the null shape.
#[test]
fn contradiction_jagged_from_no_slices_is_an_empty_vector() -> TestResult {
    let rank0_shape = JaggedShape::from_slices(Vec::<JaggedShape>::new())?;
    assert_eq!((rank0_shape.rank(), rank0_shape.size()), (1, 0));
    assert_ne!(rank0_shape, JaggedShape::null());
    assert_eq!(rank0_shape, JaggedShape::from(shape([0])));
    Ok(())
}

/// Contradiction: the reference's comment numbers the matrices 0, 2, 3 and the rows 0, 2; the
/// braces give matrices 0, 1, 2 with rows counted from 0. weft follows the braces.
#[test]
fn contradiction_rank3_jagged_of_jagged_matrices_counts_from_zero() -> TestResult {
    let (s10, s20, s30) = (shape([10]), shape([20]), shape([30]));
    let rank3_shape2 = JaggedShape::from_slices([
        jagged([s10.clone()]),
        jagged([s20.clone(), s30.clone()]),
        jagged([s30.clone(), s10.clone(), s20.clone()]),
    ])?;
    assert_eq!(
        (rank3_shape2.rank(), rank3_shape2.size()),
        (3, 10 + 50 + 60)
    );
    // Matrix 0 is 1 by 10.
    assert_eq!(
        rank3_shape2.chip_at(&[0])?,
        JaggedShape::from(shape([1, 10]))
    );
    // Matrix 1 has 20 columns in row 0 and 30 in row 1.
    assert_eq!(
        rank3_shape2.chip_at(&[1, 0])?,
        JaggedShape::from(s20.clone())
    );
    assert_eq!(
        rank3_shape2.chip_at(&[1, 1])?,
        JaggedShape::from(s30.clone())
    );
    // Matrix 2 has 30, 10 and 20 columns in rows 0, 1 and 2.
    assert_eq!(rank3_shape2.chip_at(&[2, 0])?, JaggedShape::from(s30));
    assert_eq!(rank3_shape2.chip_at(&[2, 1])?, JaggedShape::from(s10));
    assert_eq!(rank3_shape2.chip_at(&[2, 2])?, JaggedShape::from(s20));
    Ok(())
}

fn seed_rank4_jagged_of_jagged() -> Result<JaggedShape, ShapeError> {
    let (s10, s20, s30) = (shape([10]), shape([20]), shape([30]));
    JaggedShape::from_slices([
        jagged([jagged([s10.clone()]), jagged([s20.clone(), s30.clone()])]),
        jagged([
            jagged([s10.clone(), s30.clone()]),
            jagged([s20.clone()]),
            jagged([s10, s20, s30]),
        ]),
    ])
}

/// The reference declares `rank4_shape` twice; weft's test names the second one apart. Its listed
/// slices along modes 0, 1 and 2 are checked one by one.
#[test]
fn jagged_rank4_of_jagged_rank3_of_jagged_matrices() -> TestResult {
    let rank4_shape = seed_rank4_jagged_of_jagged()?;
    assert_eq!(rank4_shape.rank(), 4);
    assert_eq!(rank4_shape.size(), 10 + 50 + 40 + 20 + 60);
    let expected = [
        ([0, 0, 0], 10),
        ([0, 1, 0], 20),
        ([0, 1, 1], 30),
        ([1, 0, 0], 10),
        ([1, 0, 1], 30),
        ([1, 1, 0], 20),
        ([1, 2, 0], 10),
        ([1, 2, 1], 20),
        ([1, 2, 2], 30),
    ];
    for (index, extent) in expected {
        assert_eq!(
            rank4_shape.chip_at(&index)?,
            JaggedShape::from(shape([extent]))
        );
    }
    assert!(rank4_shape.chip_at(&[0, 0, 1]).is_err());
    Ok(())
}

/// Contradiction: the reference says element 0 of the (0,1) slice "is a 10-element vector" and, in
/// the same breath, that the slice equals `JaggedShape{s20, s30}`. The construction gives
/// `{s20, s30}`, which weft checks.
#[test]
fn contradiction_slice_0_1_of_rank4_is_s20_s30() -> TestResult {
    let rank4_shape = seed_rank4_jagged_of_jagged()?;
    let slice_0_1 = rank4_shape.chip_at(&[0, 1])?;
    assert_eq!(slice_0_1, jagged([shape([20]), shape([30])]));
    assert_eq!(slice_0_1.chip_at(&[0])?, JaggedShape::from(shape([20])));
    Ok(())
}

#[test]
fn jagged_shape_is_recursive() -> TestResult {
    let (s10, s20, s30) = (shape([10]), shape([20]), shape([30]));
    let e00 = jagged([s10.clone()]);
    let e01 = jagged([s20.clone(), s30.clone()]);
    let e10 = jagged([s10.clone(), s30.clone()]);
    let e11 = jagged([s20.clone()]);
    let e12 = jagged([s10, s20, s30]);
    let e0 = jagged([e00, e01]);
    let e1 = jagged([e10, e11, e12]);
    let rank4_shape = JaggedShape::from_slices([e0, e1])?;
    assert_eq!(rank4_shape, seed_rank4_jagged_of_jagged()?);
    Ok(())
}

#[test]
fn jagged_construction_from_a_run_time_iterator() -> TestResult {
    let get_slices = || -> Vec<JaggedShape> {
        (1..=3)
            .map(|rows| jagged((0..rows).map(|row| shape([row + 1]))))
            .collect()
    };
    let slice_shapes = get_slices();
    let js = JaggedShape::from_slices(slice_shapes.iter().cloned())?;
    assert_eq!(js.rank(), 3);
    assert_eq!(js.size(), 1 + (1 + 2) + (1 + 2 + 3));
    assert_eq!(js.chip_at(&[2])?, slice_shapes[2]);
    Ok(())
}

fn seed_explicit_tiling() -> Result<JaggedShape, ShapeError> {
    JaggedShape::from_slices([
        jagged([shape([5, 5]), shape([5, 15]), shape([5, 10])]),
        jagged([shape([15, 5]), shape([15, 15]), shape([15, 10])]),
        jagged([shape([10, 5]), shape([10, 15]), shape([10, 10])]),
    ])
}

/// Contradiction 1: the explicit jagged shape tiles each mode into chunks 5, 15, 10, but the
/// `TiledShape` said to declare "the same shape" lists 5, 10, 15. weft takes tile lengths in
/// order, so 5, 15, 10 reproduces the explicit shape and 5, 10, 15 is a different one.
///
/// Contradiction 2: by the recursive construction rule, the explicit shape (a list of lists of
/// matrices) has rank 4, not the rank 2 of the matrix it tiles: two tile-grid modes, then two
/// in-tile modes. weft's tiled shape is that rank-4 jagged shape.
#[test]
fn contradiction_tiling_chunk_order_and_rank() -> TestResult {
    let js = seed_explicit_tiling()?;
    assert_eq!((js.rank(), js.size()), (4, 900));

    let s = TiledShape::new([[5, 15, 10], [5, 15, 10]])?;
    assert_eq!(s.as_jagged(), &js);
    assert_eq!(s.shape(), shape([30, 30]));
    assert_eq!(s.grid(), shape([3, 3]));

    let as_written = TiledShape::new([[5, 10, 15], [5, 10, 15]])?;
    assert_ne!(as_written.as_jagged(), &js);
    assert_eq!(
        as_written.as_jagged().chip_at(&[0, 1])?,
        JaggedShape::from(shape([5, 10]))
    );
    Ok(())
}

// ---- Constructing Nested Shapes ----

#[test]
fn nested_construction() -> TestResult {
    let cases: Vec<(Vec<usize>, Shape)> = vec![
        (vec![0], Shape::new([])?),
        (vec![0, 0], Shape::new([])?),
        (vec![1], shape([10])),
        (vec![1, 0], shape([10])),
        (vec![0, 1], shape([10])),
        (vec![2], shape([10, 20])),
        (vec![2, 0], shape([10, 20])),
        (vec![1, 1], shape([10, 20])),
        (vec![0, 2], shape([10, 20])),
        (vec![3], shape([10, 20, 30])),
        (vec![1, 2], shape([10, 20, 30])),
        (vec![1, 1, 1], shape([10, 20, 30])),
        (vec![2, 2], shape([5, 10, 15, 20])),
    ];
    for (layers, s) in cases {
        let nested = Nested::new(layers.clone(), s.clone())?;
        assert_eq!(nested.n_layers(), layers.len());
        for (layer, &rank) in layers.iter().enumerate() {
            assert_eq!(nested.rank_layer(layer)?, rank);
        }
        assert_eq!(nested.shape(), &s);
        assert_eq!(nested.size(), s.size());
    }
    // Modes are assigned to layers left to right: modes 0 and 1 in layer 0, 2 and 3 in layer 1.
    let s = Nested::new([2, 2], shape([5, 10, 15, 20]))?;
    assert_eq!((s.layer_modes(0)?, s.layer_modes(1)?), (0..2, 2..4));
    assert_eq!(
        Nested::new([1, 1], shape([10])),
        Err(ShapeError::LayerRanks {
            layered: 2,
            rank: 1
        })
    );
    Ok(())
}

// ---- Basic Operations ----

#[test]
fn basic_operations_on_smooth_shapes() -> TestResult {
    let s = shape([10, 20, 30]);
    assert_eq!(s.rank(), 3);
    assert_eq!(s.size(), 6000);
    Ok(())
}

/// Contradiction: the reference builds `JaggedShape js{s, Shape{10, 20}}` from a rank-3 and a rank-2
/// slice, yet its own definition has all slices of one rank, and it then asserts `rank() == 3`
/// (so rank-2 slices) and `size() == 6200` (so a 6000-element first slice). weft rejects mixed
/// slice ranks and reads the first slice as `s` with its first two modes fused: `{200, 30}`.
#[test]
fn contradiction_jagged_from_slices_of_different_ranks() -> TestResult {
    let s = shape([10, 20, 30]);
    let as_written = JaggedShape::from_slices([s.clone(), shape([10, 20])]);
    assert_eq!(
        as_written,
        Err(ShapeError::MixedSliceRanks {
            index: 1,
            expected: 3,
            found: 2
        })
    );

    let js = JaggedShape::from_slices([shape([200, 30]), shape([10, 20])])?;
    assert_eq!(js.rank(), 3);
    assert_eq!(js.size(), 6200);

    let s1_2 = Nested::new([1, 2], s.clone())?;
    let js1_2 = Nested::new([1, 2], js)?;
    assert_eq!(s1_2.n_layers(), 2);
    assert_eq!(js1_2.n_layers(), 2);
    assert_eq!(s1_2.rank_layer(0)?, 1);
    assert_eq!(s1_2.rank_layer(1)?, 2);
    assert_eq!(js1_2.rank_layer(0)?, 1);
    assert_eq!(js1_2.rank_layer(1)?, 2);
    assert_eq!(s1_2.elements_in_layer(0)?, 10);
    assert_eq!(s1_2.elements_in_layer(1)?, 6000);
    assert_eq!(js1_2.elements_in_layer(0)?, 2);
    assert_eq!(js1_2.elements_in_layer(1)?, 6200);
    assert!(s1_2.elements_in_layer(2).is_err());
    Ok(())
}

/// Contradiction: `s3_3({0, 0}) == s` uses a shape `s3_3` the reference never declares. By the
/// reference's naming (`s1_2` has layers {1, 2}) it has layers {3, 3}; its layer-0 elements are
/// indexed by three indices, so weft asks for element (0, 0, 0) of
/// `Nested({3, 3}, Shape{10, 20, 30, 10, 20, 30})` and rejects the two-index form.
#[test]
fn contradiction_element_of_the_undeclared_s3_3() -> TestResult {
    let s = shape([10, 20, 30]);
    let s3_3 = Nested::new([3, 3], shape([10, 20, 30, 10, 20, 30]))?;
    assert_eq!(s3_3.element(&[0, 0, 0])?.shape(), &s);
    assert_eq!(s3_3.element(&[0, 0, 0])?.layers(), [3]);
    assert_eq!(
        s3_3.element(&[0, 0]),
        Err(ShapeError::NotALayerBoundary {
            found: 2,
            layers: vec![3, 3]
        })
    );
    Ok(())
}

// ---- Shape Composition ----

#[test]
fn composing_smooth_shapes() -> TestResult {
    let s0 = shape([10, 20, 30]);

    let s1 = (s0.idx("i,j,k")? + s0.idx("i,j,k")?).to("i,j,k")?;
    assert_eq!(s1, s0);

    let s1 = (s0.idx("i,j,k")? + s0.idx("i,j,k")?).to("j,i,k")?;
    assert_eq!(s1, shape([20, 10, 30]));

    let s1 = (s0.idx("i,j,k")? * s0.idx("i,j,k")?).to("i,k")?;
    assert_eq!(s1, shape([10, 30]));

    // Would throw in the reference: the contracted modes differ in length.
    let err = (s0.idx("j,i,k")? * s0.idx("i,j,k")?).to("i,k").unwrap_err();
    assert_eq!(
        err,
        ShapeError::ExtentMismatch {
            label: "j".into(),
            lhs: 10,
            rhs: 20
        }
    );

    let s1 = (s0.idx("i,j,k")? * s0.idx("i,j,l")?).to("i,j,k,l")?;
    assert_eq!(s1, shape([10, 20, 30, 30]));

    // Subtraction follows addition's rules.
    assert_eq!(
        (s0.idx("i,j,k")? - s0.idx("i,j,k")?).to("k,j,i")?,
        shape([30, 20, 10])
    );
    let err = (s0.idx("i,j,k")? - s0.idx("i,j,l")?)
        .to("i,j,k")
        .unwrap_err();
    assert!(matches!(err, ShapeError::NotAPermutation { .. }));
    Ok(())
}

#[test]
fn composing_jagged_shapes() -> TestResult {
    let js0 = jagged([shape([10]), shape([20])]);

    let js1 = (js0.idx("i,j")? + js0.idx("i,j")?).to("i,j")?;
    assert_eq!(js1, js0);

    // Would throw in the reference: js0("i,j") * js0("j,k") contracts mode j of the left
    // (20 long in row 1) with mode 0 of the right (2 long).
    let err = (js0.idx("i,j")? * js0.idx("j,k")?).to("i,k").unwrap_err();
    assert!(
        matches!(err, ShapeError::RaggedContraction { ref label, .. } if label == "j"),
        "{err:?}"
    );

    let js1 = (js0.idx("i,j")? * js0.idx("i,k")?).to("i,j,k")?;
    assert_eq!(js1, jagged([shape([10, 10]), shape([20, 20])]));
    Ok(())
}

/// Contradiction: the reference claims `js1("j,i") = js0("i,j") + ...` gives
/// `JaggedShape{Shape{20}, Shape{10}}`, which only reverses the rows. Permuting modes maps the
/// element (i, j) to (j, i): the transpose of rows {10, 20} has 20 rows; rows 0..10 hold i in
/// 0..2, rows 10..20 hold only i = 1. weft computes that transpose.
#[test]
fn contradiction_permuting_a_jagged_matrix_transposes_it() -> TestResult {
    let js0 = jagged([shape([10]), shape([20])]);
    let js1 = (js0.idx("i,j")? + js0.idx("i,j")?).to("j,i")?;

    let mut rows = vec![shape([2]); 10];
    rows.extend(vec![Shape::with_origin([1], [1])?; 10]);
    assert_eq!(js1, jagged(rows));
    assert_ne!(js1, jagged([shape([20]), shape([10])]));
    assert_eq!(js1.size(), js0.size());

    let mut transposed: Vec<Vec<usize>> = js0
        .indices()
        .map(|index| vec![index[1], index[0]])
        .collect();
    transposed.sort();
    assert_eq!(indices(&js1), transposed);
    Ok(())
}

/// Contradiction: the reference contracts `js0("i,j") * js0("k,j")` with rows of 10 and 20 and
/// expects a 2 x 2 result, but row 0 pairs 10 values of j with row 1's 20 — the extent
/// mismatch the reference itself says throws. weft rejects it, and gives the reference's 2 x 2 result
/// when the rows match.
#[test]
fn contradiction_contracting_jagged_rows_of_different_lengths() -> TestResult {
    let js0 = jagged([shape([10]), shape([20])]);
    let err = (js0.idx("i,j")? * js0.idx("k,j")?).to("i,k").unwrap_err();
    assert_eq!(
        err,
        ShapeError::RaggedContraction {
            label: "j".into(),
            first: 10,
            second: 20
        }
    );

    let rows = jagged([shape([10]), shape([10])]);
    let js1 = (rows.idx("i,j")? * rows.idx("k,j")?).to("i,k")?;
    assert_eq!(js1, jagged([shape([2]), shape([2])]));
    Ok(())
}

#[test]
fn composing_nested_shapes() -> TestResult {
    let s = shape([10, 20, 30]);
    let s1_2 = Nested::new([1, 2], s.clone())?;
    let s2_1 = Nested::new([2, 1], s.clone())?;

    let result = (s1_2.idx("i,j,k")? + s1_2.idx("i,j,k")?).to("i,j,k")?;
    assert_eq!(result, s1_2);

    // Not allowed: layer 0 has rank 1 on the left and rank 2 on the right.
    let err = (s1_2.idx("i,j,k")? + s2_1.idx("i,j,k")?)
        .to("i,j,k")
        .unwrap_err();
    assert_eq!(
        err,
        ShapeError::LayerMismatch {
            label: "j".into(),
            lhs: 1,
            rhs: 0
        }
    );

    let result = (s1_2.idx("i,j,k")? * s1_2.idx("i,j,k")?).to("i,j")?;
    assert_eq!(result, Nested::new([1, 1], shape([10, 20]))?);

    let result = (s1_2.idx("i,j,k")? * s1_2.idx("i,j,k")?).to("j,k")?;
    assert_eq!(result, Nested::new([0, 2], shape([20, 30]))?);

    // Layers only need compatible shapes: a mode lands in the outer of its two layers.
    let result = (s1_2.idx("i,j,k")? * s2_1.idx("i,j,k")?).to("j,k")?;
    assert_eq!(result, Nested::new([1, 1], shape([20, 30]))?);

    // Re-layering by permutation must keep layers in order.
    let err = (s1_2.idx("i,j,k")? + s1_2.idx("i,j,k")?)
        .to("j,i,k")
        .unwrap_err();
    assert!(matches!(err, ShapeError::LayerOrder { .. }));
    Ok(())
}

// ---- Slicing and Chipping ----

#[test]
fn slicing_and_chipping_smooth_shapes() -> TestResult {
    let s = shape([10, 20]);

    let s0 = s.slice_at(&[0])?;
    assert_eq!(s0, shape([1, 20]));

    let sx0 = s.slice(&[0, 0], &[10, 1])?;
    assert_eq!(sx0, shape([10, 1]));

    let s05_05 = s.slice(&[0, 0], &[5, 5])?;
    assert_eq!(s05_05, shape([5, 5]));

    let s01_05 = s.slice(&[0, 0], &[1, 5])?;
    assert_eq!(s01_05, shape([1, 5]));
    assert_eq!(s01_05.rank(), 2);

    let s2 = s.chip_at(&[2])?;
    assert_eq!(s2, shape([20]));

    let sx2 = s.chip(&[0, 2], &[10, 3])?;
    assert_eq!(sx2, shape([10]));

    // Corners out of range, inverted or of the wrong length are errors.
    assert!(matches!(
        s.slice(&[0, 0], &[11, 5]),
        Err(ShapeError::CornerOutOfRange { mode: 0, .. })
    ));
    assert_eq!(
        s.slice(&[5, 0], &[4, 5]),
        Err(ShapeError::InvertedCorners {
            mode: 0,
            begin: 5,
            end: 4
        })
    );
    assert_eq!(
        s.slice(&[0], &[1, 5]),
        Err(ShapeError::CornerRank { rank: 2, found: 1 })
    );
    assert_eq!(
        s.chip_at(&[1, 2, 3]),
        Err(ShapeError::TooManyPins { rank: 2, found: 3 })
    );
    assert!(matches!(
        s.chip_at(&[10]),
        Err(ShapeError::IndexOutOfRange { mode: 0, .. })
    ));
    Ok(())
}

/// Contradiction: the reference writes `js0.chip(0) == JaggedShape{Shape10}` — by its own brace
/// convention a one-row jagged matrix (rank 2) — but a chip drops the pinned mode. weft's chip
/// is the rank-1 row `JaggedShape(Shape{10})`; the slice keeps the rank, `JaggedShape{Shape{10}}`.
///
/// For `Nested`, the reference asserts `s1_2.chip(0) == Shape{10, 20}` for `s1_2` over
/// `Shape{10, 20, 30}`; pinning mode 0 leaves `{20, 30}`, which weft returns, still nested: the
/// chip keeps the (now empty) layer 0, so its `.shape()` is what compares to a plain `Shape`.
#[test]
fn contradiction_chipping_jagged_and_nested_shapes() -> TestResult {
    let js0 = jagged([shape([10]), shape([20])]);

    let j0 = js0.chip_at(&[0])?;
    assert_eq!(j0, JaggedShape::from(shape([10])));
    assert_eq!(j0.rank(), 1);

    let j1 = js0.slice_at(&[0])?;
    assert_eq!(j1, jagged([shape([10])]));
    assert_eq!(j1.rank(), 2);

    let s1_2 = Nested::new([1, 2], shape([10, 20, 30]))?;
    let s2 = s1_2.chip_at(&[0])?;
    assert_eq!(s2.shape(), &shape([20, 30]));
    assert_ne!(s2.shape(), &shape([10, 20]));
    assert_eq!(s2.layers(), [0, 2]);
    Ok(())
}

// ---- Iterating ----

#[test]
fn iterating_smooth_shapes() -> TestResult {
    let mut s = shape([2, 3]);
    assert_eq!(
        indices(&s),
        [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    );
    // `for index in &s` works too.
    let mut count = 0;
    for index in &s {
        assert_eq!(index.len(), 2);
        count += 1;
    }
    assert_eq!(count, 6);

    let s01_13 = s.slice(&[0, 1], &[1, 3])?;
    assert_eq!(indices(&s01_13), [[0, 1], [0, 2]]);
    assert_eq!(s01_13.offsets().collect::<Vec<_>>(), [[0, 0], [0, 1]]);

    s.set_origin(&[10, 10])?;
    assert_eq!(
        indices(&s),
        [[10, 10], [10, 11], [10, 12], [11, 10], [11, 11], [11, 12]]
    );
    Ok(())
}

#[test]
fn shapes_constructed_with_an_origin() -> TestResult {
    let s = Shape::with_origin([2, 3], [10, 10])?;
    assert_eq!(indices(&s)[0], [10, 10]);
    assert_eq!(s.size(), 6);

    // Outer vector starts at 10; element 0 starts at 5, element 1 at 6.
    let js = JaggedShape::from_slices_with_origin(
        [
            Shape::with_origin([10], [5])?,
            Shape::with_origin([20], [6])?,
        ],
        10,
    )?;
    let all = indices(&js);
    assert_eq!(all.len(), 30);
    assert_eq!(all[0], [10, 5]);
    assert_eq!(all[9], [10, 14]);
    assert_eq!(all[10], [11, 6]);
    assert_eq!(all[29], [11, 25]);
    assert_eq!(js.origin(), [10, 5]);
    assert_eq!(js.offsets().next(), Some(vec![0, 0]));

    // Outer vector starts at 10, inner vector starts at 10.
    let s1_1 = Nested::new([1, 1], s.clone())?;
    assert_eq!(indices(&s1_1), indices(&s));
    assert_eq!(s1_1.origin(), [10, 10]);
    Ok(())
}
