//! Every op of the reference interpreter on hand-computed cases, in every dtype it accepts:
//! unary, binary (broadcasting by axis), comparisons, select, convert, every reduction
//! (including out_axes order and multi-axis argmax), dot (including dual axes), and every view.

mod common;
use common::*;
use weft::prelude::*;
use weft::{AxisSlice, BinaryOp, CompareOp, ReduceOp, UnaryOp};

fn konst(g: &mut Graph, axes: &[Axis], data: ArrayData) -> NodeId {
    let dtype = data.dtype();
    g.constant(None, axes, dtype, TensorInit::data(data))
        .unwrap()
}

/// `op` applied to a 1-D constant.
fn unary_on(op: UnaryOp, data: ArrayData) -> ArrayData {
    let mut g = Graph::new();
    let n = g.axis("N", data.len()).unwrap();
    let x = konst(&mut g, &[n], data);
    let y = g.unary(op, x).unwrap();
    eval1(g, y).into_parts().2
}

/// `op(x, y)` with x over (A=2, B=3) and y over (B): y broadcasts along A.
fn binary_on(op: BinaryOp, x: ArrayData, y: ArrayData) -> HostArray {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = konst(&mut g, &[a, b], x);
    let y = konst(&mut g, &[b], y);
    let z = g.binary(op, x, y).unwrap();
    assert_eq!(g.node(z).axes, Axes::new([a, b]).unwrap());
    eval1(g, z)
}

/// `op(x, y)` on two 1-D constants of the same axis.
fn pointwise(op: BinaryOp, x: ArrayData, y: ArrayData) -> ArrayData {
    let mut g = Graph::new();
    let n = g.axis("N", x.len()).unwrap();
    let x = konst(&mut g, &[n], x);
    let y = konst(&mut g, &[n], y);
    let z = g.binary(op, x, y).unwrap();
    eval1(g, z).into_parts().2
}

fn compare_on(op: CompareOp, x: ArrayData, y: ArrayData) -> Vec<bool> {
    let mut g = Graph::new();
    let n = g.axis("N", x.len()).unwrap();
    let x = konst(&mut g, &[n], x);
    let y = konst(&mut g, &[n], y);
    let z = g.compare(op, x, y).unwrap();
    bools(&eval1(g, z))
}

fn as_f64(d: &ArrayData) -> Vec<f64> {
    (0..d.len()).map(|i| d.get(i).unwrap().as_f64()).collect()
}

// ---- unary -----------------------------------------------------------------------------

#[test]
fn unary_arithmetic_on_floats() {
    let x = [-2.0, -0.5, 0.0, 0.5, 1.0, 4.0];
    let cases: &[(UnaryOp, [f64; 6])] = &[
        (UnaryOp::Negative, [2.0, 0.5, -0.0, -0.5, -1.0, -4.0]),
        (UnaryOp::Abs, [2.0, 0.5, 0.0, 0.5, 1.0, 4.0]),
        (UnaryOp::Square, [4.0, 0.25, 0.0, 0.25, 1.0, 16.0]),
        (UnaryOp::Sign, [-1.0, -1.0, 0.0, 1.0, 1.0, 1.0]),
        (UnaryOp::Relu, [0.0, 0.0, 0.0, 0.5, 1.0, 4.0]),
        (
            UnaryOp::Reciprocal,
            [-0.5, -2.0, f64::INFINITY, 2.0, 1.0, 0.25],
        ),
    ];
    for (op, want) in cases {
        assert_eq!(
            unary_on(*op, ArrayData::F64(x.to_vec())),
            ArrayData::F64(want.to_vec()),
            "{op:?} f64"
        );
        assert_eq!(
            unary_on(*op, ArrayData::F32(x.iter().map(|v| *v as f32).collect())),
            ArrayData::F32(want.iter().map(|v| *v as f32).collect()),
            "{op:?} f32"
        );
    }
}

#[test]
fn unary_transcendentals_on_floats() {
    use std::f64::consts::{E, PI};
    let cases: &[(UnaryOp, &[f64], &[f64])] = &[
        (
            UnaryOp::Exp,
            &[0.0, 1.0, -1.0, 2.0],
            &[1.0, E, 0.36787944117144233, 7.38905609893065],
        ),
        (
            UnaryOp::Log,
            &[1.0, 4.0, 0.5, E],
            &[0.0, 1.3862943611198906, -std::f64::consts::LN_2, 1.0],
        ),
        (
            UnaryOp::Sqrt,
            &[0.0, 4.0, 2.0, 0.25],
            &[0.0, 2.0, std::f64::consts::SQRT_2, 0.5],
        ),
        (
            UnaryOp::Tanh,
            &[0.0, 0.5, -1.0],
            &[0.0, 0.46211715726000974, -0.7615941559557649],
        ),
        (
            UnaryOp::Sigmoid,
            &[0.0, 2.0, -2.0],
            &[0.5, 0.8807970779778823, 0.11920292202211755],
        ),
        (
            UnaryOp::Sin,
            &[0.0, 0.5, PI / 2.0],
            &[0.0, 0.479425538604203, 1.0],
        ),
        (
            UnaryOp::Cos,
            &[0.0, 0.5, PI],
            &[1.0, 0.8775825618903728, -1.0],
        ),
    ];
    for (op, x, want) in cases {
        let got = unary_on(*op, ArrayData::F64(x.to_vec()));
        assert_close(&as_f64(&got), want, 1e-15);
        let got = unary_on(*op, ArrayData::F32(x.iter().map(|v| *v as f32).collect()));
        assert_eq!(got.dtype(), DType::F32);
        assert_close(&as_f64(&got), want, 1e-7);
    }
    // Outside the domain: IEEE results.
    let got = as_f64(&unary_on(UnaryOp::Log, ArrayData::F64(vec![0.0, -1.0])));
    assert_eq!(got[0], f64::NEG_INFINITY);
    assert!(got[1].is_nan());
    assert!(as_f64(&unary_on(UnaryOp::Sqrt, ArrayData::F32(vec![-1.0])))[0].is_nan());
}

#[test]
fn unary_float_edge_cases_sign_and_relu_of_zero_and_nan() {
    let got = unary_on(UnaryOp::Sign, ArrayData::F64(vec![-0.0, f64::NAN]));
    let got = got.get(0).map(|s| s.as_f64()).unwrap();
    assert!(got == 0.0 && got.is_sign_negative(), "sign(-0) is -0");
    assert!(as_f64(&unary_on(UnaryOp::Sign, ArrayData::F64(vec![f64::NAN])))[0].is_nan());
    let relu = as_f64(&unary_on(
        UnaryOp::Relu,
        ArrayData::F32(vec![-0.0, f32::NAN]),
    ));
    assert!(
        relu[0] == 0.0 && relu[0].is_sign_positive(),
        "relu(-0) is +0"
    );
    assert!(relu[1].is_nan(), "relu propagates NaN");
}

#[test]
fn unary_on_integers_wraps() {
    let x32 = vec![i32::MIN, -3, 0, 5, 65536];
    let x64 = vec![i64::MIN, -3, 0, 5, 1 << 32];
    let cases: &[(UnaryOp, [i64; 5], [i64; 5])] = &[
        (
            UnaryOp::Negative,
            [i32::MIN as i64, 3, 0, -5, -65536],
            [i64::MIN, 3, 0, -5, -(1 << 32)],
        ),
        (
            UnaryOp::Abs,
            [i32::MIN as i64, 3, 0, 5, 65536],
            [i64::MIN, 3, 0, 5, 1 << 32],
        ),
        // MIN² and 2^32, 2^64 wrap to 0.
        (UnaryOp::Square, [0, 9, 0, 25, 0], [0, 9, 0, 25, 0]),
        (UnaryOp::Sign, [-1, -1, 0, 1, 1], [-1, -1, 0, 1, 1]),
        (UnaryOp::Relu, [0, 0, 0, 5, 65536], [0, 0, 0, 5, 1 << 32]),
    ];
    for (op, w32, w64) in cases {
        assert_eq!(
            unary_on(*op, ArrayData::I32(x32.clone())),
            ArrayData::I32(w32.iter().map(|v| *v as i32).collect()),
            "{op:?} i32"
        );
        assert_eq!(
            unary_on(*op, ArrayData::I64(x64.clone())),
            ArrayData::I64(w64.to_vec()),
            "{op:?} i64"
        );
    }
}

// ---- binary ----------------------------------------------------------------------------

#[test]
fn binary_on_floats_broadcasts_by_axis() {
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let y = [2.0, -1.0, 0.5];
    let cases: &[(BinaryOp, [f64; 6])] = &[
        (BinaryOp::Add, [3.0, 1.0, 3.5, 6.0, 4.0, 6.5]),
        (BinaryOp::Subtract, [-1.0, 3.0, 2.5, 2.0, 6.0, 5.5]),
        (BinaryOp::Multiply, [2.0, -2.0, 1.5, 8.0, -5.0, 3.0]),
        (BinaryOp::Divide, [0.5, -2.0, 6.0, 2.0, -5.0, 12.0]),
        (BinaryOp::Maximum, [2.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        (BinaryOp::Minimum, [1.0, -1.0, 0.5, 2.0, -1.0, 0.5]),
        (
            BinaryOp::Power,
            [1.0, 0.5, 1.7320508075688772, 16.0, 0.2, 2.449489742783178],
        ),
    ];
    for (op, want) in cases {
        let got = binary_on(*op, ArrayData::F64(x.to_vec()), ArrayData::F64(y.to_vec()));
        assert_close(&f64s(&got), want, 1e-15);
        let got = binary_on(
            *op,
            ArrayData::F32(x.iter().map(|v| *v as f32).collect()),
            ArrayData::F32(y.iter().map(|v| *v as f32).collect()),
        );
        let want32: Vec<f32> = want.iter().map(|v| *v as f32).collect();
        assert_eq!(f32s(&got), want32, "{op:?} f32 rounds once from f64");
    }
}

#[test]
fn binary_float_edge_cases() {
    // f32 results are the f64 result rounded once: 2^24 + 1 rounds to even.
    let got = pointwise(
        BinaryOp::Add,
        ArrayData::F32(vec![16_777_216.0]),
        ArrayData::F32(vec![1.0]),
    );
    assert_eq!(got, ArrayData::F32(vec![16_777_216.0]));
    let got = as_f64(&pointwise(
        BinaryOp::Divide,
        ArrayData::F64(vec![1.0, -1.0, 0.0]),
        ArrayData::F64(vec![0.0, 0.0, 0.0]),
    ));
    assert_eq!(got[0], f64::INFINITY);
    assert_eq!(got[1], f64::NEG_INFINITY);
    assert!(got[2].is_nan());
    // maximum/minimum propagate NaN from either side.
    for op in [BinaryOp::Maximum, BinaryOp::Minimum] {
        let got = as_f64(&pointwise(
            op,
            ArrayData::F32(vec![f32::NAN, 1.0, 2.0]),
            ArrayData::F32(vec![1.0, f32::NAN, 3.0]),
        ));
        assert!(got[0].is_nan() && got[1].is_nan(), "{op:?}: {got:?}");
        assert_eq!(got[2], if op == BinaryOp::Maximum { 3.0 } else { 2.0 });
    }
    // powf: fractional powers of negatives are NaN, 0^0 = 1.
    let got = as_f64(&pointwise(
        BinaryOp::Power,
        ArrayData::F64(vec![-8.0, 0.0, 2.0]),
        ArrayData::F64(vec![1.0 / 3.0, 0.0, -2.0]),
    ));
    assert!(got[0].is_nan());
    assert_eq!(&got[1..], &[1.0, 0.25]);
}

#[test]
fn binary_on_integers_broadcasts_by_axis() {
    let x = [7i64, -7, 2, -2, 0, 3];
    let y = [2i64, 2, 0];
    let cases: &[(BinaryOp, [i64; 6])] = &[
        (BinaryOp::Add, [9, -5, 2, 0, 2, 3]),
        (BinaryOp::Subtract, [5, -9, 2, -4, -2, 3]),
        (BinaryOp::Multiply, [14, -14, 0, -4, 0, 0]),
        // Truncation toward zero; division by zero gives 0.
        (BinaryOp::Divide, [3, -3, 0, -1, 0, 0]),
        (BinaryOp::Maximum, [7, 2, 2, 2, 2, 3]),
        (BinaryOp::Minimum, [2, -7, 0, -2, 0, 0]),
        (BinaryOp::Power, [49, 49, 1, 4, 0, 1]),
    ];
    for (op, want) in cases {
        let got = binary_on(*op, ArrayData::I64(x.to_vec()), ArrayData::I64(y.to_vec()));
        assert_eq!(i64s(&got), want.to_vec(), "{op:?} i64");
        let got = binary_on(
            *op,
            ArrayData::I32(x.iter().map(|v| *v as i32).collect()),
            ArrayData::I32(y.iter().map(|v| *v as i32).collect()),
        );
        let want32: Vec<i32> = want.iter().map(|v| *v as i32).collect();
        assert_eq!(i32s(&got), want32, "{op:?} i32");
    }
}

#[test]
fn integer_arithmetic_wraps_and_follows_the_power_rules() {
    let i32s_of =
        |op, x: Vec<i32>, y: Vec<i32>| match pointwise(op, ArrayData::I32(x), ArrayData::I32(y)) {
            ArrayData::I32(v) => v,
            other => panic!("{other:?}"),
        };
    assert_eq!(
        i32s_of(BinaryOp::Add, vec![i32::MAX], vec![1]),
        vec![i32::MIN]
    );
    assert_eq!(
        i32s_of(BinaryOp::Subtract, vec![i32::MIN], vec![1]),
        vec![i32::MAX]
    );
    assert_eq!(
        i32s_of(BinaryOp::Multiply, vec![65536], vec![65536]),
        vec![0]
    );
    assert_eq!(
        i32s_of(BinaryOp::Divide, vec![i32::MIN], vec![-1]),
        vec![i32::MIN]
    );
    assert_eq!(i32s_of(BinaryOp::Power, vec![2], vec![31]), vec![i32::MIN]);
    assert_eq!(
        i32s_of(BinaryOp::Power, vec![3], vec![21]),
        vec![1_870_418_611]
    ); // 3^21 mod 2^32
       // Negative exponents: 1 for base 1, ±1 for base −1, 0 otherwise.
    assert_eq!(
        i32s_of(
            BinaryOp::Power,
            vec![1, -1, -1, 2, 0, -5],
            vec![-1, -1, -2, -1, -1, -3]
        ),
        vec![1, -1, 1, 0, 0, 0]
    );
    let got = pointwise(
        BinaryOp::Add,
        ArrayData::I64(vec![i64::MAX]),
        ArrayData::I64(vec![1]),
    );
    assert_eq!(got, ArrayData::I64(vec![i64::MIN]));
    let got = pointwise(
        BinaryOp::Divide,
        ArrayData::I64(vec![i64::MIN, 5]),
        ArrayData::I64(vec![-1, 0]),
    );
    assert_eq!(got, ArrayData::I64(vec![i64::MIN, 0]));
}

#[test]
fn binary_operand_order_only_changes_the_axis_order() {
    // (B) + (A, B): the right operand's axes are a superset, so its order wins.
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = konst(&mut g, &[a, b], ArrayData::I32(vec![1, 2, 3, 4, 5, 6]));
    let y = konst(&mut g, &[b], ArrayData::I32(vec![10, 20, 30]));
    let z = g.subtract(y, x).unwrap();
    assert_eq!(g.node(z).axes, Axes::new([a, b]).unwrap());
    assert_eq!(i32s(&eval1(g, z)), vec![9, 18, 27, 6, 15, 24]);
}

// ---- comparisons, select, convert ---------------------------------------------------------

#[test]
fn comparisons_in_every_dtype() {
    use CompareOp::*;
    let ops = [Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual];
    // x = [1, 2, 3], y = [2, 2, 2]
    let want = [
        [false, true, false],
        [true, false, true],
        [true, false, false],
        [true, true, false],
        [false, false, true],
        [false, true, true],
    ];
    for (op, w) in ops.iter().zip(want) {
        let data: [(ArrayData, ArrayData); 4] = [
            (
                ArrayData::F32(vec![1.0, 2.0, 3.0]),
                ArrayData::F32(vec![2.0; 3]),
            ),
            (
                ArrayData::F64(vec![1.0, 2.0, 3.0]),
                ArrayData::F64(vec![2.0; 3]),
            ),
            (ArrayData::I32(vec![1, 2, 3]), ArrayData::I32(vec![2; 3])),
            (ArrayData::I64(vec![1, 2, 3]), ArrayData::I64(vec![2; 3])),
        ];
        for (x, y) in data {
            let dtype = x.dtype();
            assert_eq!(compare_on(*op, x, y), w.to_vec(), "{op:?} {dtype}");
        }
    }
    // NaN: every comparison false but not_equal.
    let nan = |op| {
        compare_on(
            op,
            ArrayData::F64(vec![f64::NAN]),
            ArrayData::F64(vec![f64::NAN]),
        )
    };
    for op in ops {
        assert_eq!(nan(op), vec![op == NotEqual], "{op:?} with NaN");
    }
    // bool: false < true.
    let (x, y) = (vec![false, true, true], vec![true, true, false]);
    let b = |op| compare_on(op, ArrayData::Bool(x.clone()), ArrayData::Bool(y.clone()));
    assert_eq!(b(Less), vec![true, false, false]);
    assert_eq!(b(Greater), vec![false, false, true]);
    assert_eq!(b(Equal), vec![false, true, false]);
    assert_eq!(b(GreaterEqual), vec![false, true, true]);
}

#[test]
fn comparison_broadcasts_by_axis() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = konst(&mut g, &[b], ArrayData::I64(vec![1, 5, 3]));
    let y = konst(&mut g, &[a], ArrayData::I64(vec![2, 4]));
    let z = g.greater(x, y).unwrap();
    assert_eq!(g.node(z).axes, Axes::new([b, a]).unwrap());
    assert_eq!(
        bools(&eval1(g, z)),
        vec![false, false, true, true, true, false]
    );
}

#[test]
fn select_broadcasts_condition_and_branches() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let c = konst(&mut g, &[a], ArrayData::Bool(vec![true, false]));
    let x = konst(&mut g, &[a, b], ArrayData::I32(vec![1, 2, 3, 4, 5, 6]));
    let y = konst(&mut g, &[b], ArrayData::I32(vec![10, 20, 30]));
    let s = g.select(c, x, y).unwrap();
    // The condition broadcasts along B and picks row A=0 from x, row A=1 from y.
    assert_eq!(g.node(s).axes, Axes::new([a, b]).unwrap());
    // Branches over (B) and (A) give (B, A); the condition over (B, A) picks elementwise.
    let cb = konst(&mut g, &[b], ArrayData::Bool(vec![true, false, true]));
    let xf = konst(&mut g, &[b], ArrayData::F64(vec![1.0, 2.0, 3.0]));
    let yf = konst(&mut g, &[a], ArrayData::F64(vec![-1.0, -2.0]));
    let s2 = g.select(cb, xf, yf).unwrap();
    assert_eq!(g.node(s2).axes, Axes::new([b, a]).unwrap());
    let xb = konst(&mut g, &[a], ArrayData::Bool(vec![true, true]));
    let yb = konst(&mut g, &[a], ArrayData::Bool(vec![false, false]));
    let s3 = g.select(c, xb, yb).unwrap();
    let out = eval(g, &[s, s2, s3]);
    assert_eq!(i32s(&out[0]), vec![1, 2, 3, 10, 20, 30]);
    assert_eq!(f64s(&out[1]), vec![1.0, 1.0, -1.0, -2.0, 3.0, 3.0]);
    assert_eq!(bools(&out[2]), vec![true, false]);
}

fn convert_on(x: ArrayData, to: DType) -> ArrayData {
    let mut g = Graph::new();
    let n = g.axis("N", x.len()).unwrap();
    let x = konst(&mut g, &[n], x);
    let y = g.convert(x, to).unwrap();
    eval1(g, y).into_parts().2
}

#[test]
fn convert_between_every_dtype() {
    let f = vec![2.7, -2.7, 1e10, -1e10, f64::NAN, 0.0];
    // Floats to integers truncate toward zero and saturate; NaN gives 0.
    assert_eq!(
        convert_on(ArrayData::F64(f.clone()), DType::I32),
        ArrayData::I32(vec![2, -2, i32::MAX, i32::MIN, 0, 0])
    );
    assert_eq!(
        convert_on(
            ArrayData::F32(f.iter().map(|v| *v as f32).collect()),
            DType::I64
        ),
        ArrayData::I64(vec![2, -2, 10_000_000_000, -10_000_000_000, 0, 0])
    );
    // To bool is ≠ 0 (NaN is true).
    assert_eq!(
        convert_on(ArrayData::F64(f), DType::Bool),
        ArrayData::Bool(vec![true, true, true, true, true, false])
    );
    assert_eq!(
        convert_on(ArrayData::I32(vec![0, 3, -1]), DType::Bool),
        ArrayData::Bool(vec![false, true, true])
    );
    // i64 to i32 wraps.
    assert_eq!(
        convert_on(ArrayData::I64(vec![(1 << 32) + 5, -1, 1 << 31]), DType::I32),
        ArrayData::I32(vec![5, -1, i32::MIN])
    );
    // To f32 rounds to nearest, directly from the source (2^24 + 1 is a tie, to even).
    assert_eq!(
        convert_on(ArrayData::I64(vec![16_777_217, 3]), DType::F32),
        ArrayData::F32(vec![16_777_216.0, 3.0])
    );
    assert_eq!(
        convert_on(ArrayData::F64(vec![0.1]), DType::F32),
        ArrayData::F32(vec![0.1f32])
    );
    assert_eq!(
        convert_on(ArrayData::F32(vec![0.1f32]), DType::F64),
        ArrayData::F64(vec![0.1f32 as f64])
    );
    // bool is 0 or 1.
    let b = ArrayData::Bool(vec![true, false]);
    assert_eq!(
        convert_on(b.clone(), DType::F32),
        ArrayData::F32(vec![1.0, 0.0])
    );
    assert_eq!(
        convert_on(b.clone(), DType::F64),
        ArrayData::F64(vec![1.0, 0.0])
    );
    assert_eq!(
        convert_on(b.clone(), DType::I32),
        ArrayData::I32(vec![1, 0])
    );
    assert_eq!(
        convert_on(b.clone(), DType::I64),
        ArrayData::I64(vec![1, 0])
    );
    assert_eq!(convert_on(b.clone(), DType::Bool), b);
    assert_eq!(
        convert_on(ArrayData::I32(vec![-7, 9]), DType::F64),
        ArrayData::F64(vec![-7.0, 9.0])
    );
}

// ---- reductions ------------------------------------------------------------------------

/// `op` over `axes` of x(A=2, B=3) = [[1, 5, 9], [4, 2, 6]] in dtype `dtype`.
fn reduce_ab(op: ReduceOp, dtype: DType, red: &str) -> HostArray {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let v = [1i64, 5, 9, 4, 2, 6];
    let data = match dtype {
        DType::F32 => ArrayData::F32(v.iter().map(|x| *x as f32).collect()),
        DType::F64 => ArrayData::F64(v.iter().map(|x| *x as f64).collect()),
        DType::I32 => ArrayData::I32(v.iter().map(|x| *x as i32).collect()),
        _ => ArrayData::I64(v.to_vec()),
    };
    let x = konst(&mut g, &[a, b], data);
    let axes: Vec<Axis> = red.chars().map(|c| if c == 'A' { a } else { b }).collect();
    let r = g.reduce(op, x, &axes, None).unwrap();
    eval1(g, r)
}

#[test]
fn reductions_in_every_numeric_dtype() {
    use ReduceOp::*;
    // x = [[1, 5, 9], [4, 2, 6]]
    let cases: &[(ReduceOp, &str, &[f64])] = &[
        (Sum, "B", &[15.0, 12.0]),
        (Sum, "A", &[5.0, 7.0, 15.0]),
        (Sum, "AB", &[27.0]),
        (Sum, "", &[1.0, 5.0, 9.0, 4.0, 2.0, 6.0]),
        (Prod, "B", &[45.0, 48.0]),
        (Prod, "A", &[4.0, 10.0, 54.0]),
        (Max, "B", &[9.0, 6.0]),
        (Max, "A", &[4.0, 5.0, 9.0]),
        (Min, "B", &[1.0, 2.0]),
        (Min, "BA", &[1.0]),
    ];
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        for (op, red, want) in cases {
            let got = reduce_ab(*op, dtype, red);
            assert_eq!(got.dtype(), dtype);
            assert_eq!(
                as_f64(got.data()),
                want.to_vec(),
                "{op:?} over {red} in {dtype}"
            );
        }
        for (op, red, want) in [
            (ArgMax, "B", vec![2, 2]),
            (ArgMin, "B", vec![0, 1]),
            (ArgMax, "A", vec![1, 0, 0]),
            (ArgMin, "A", vec![0, 1, 1]),
            // Multi-axis: the flat index over the reduction axes in the order given.
            (ArgMax, "AB", vec![2]),
            (ArgMax, "BA", vec![4]),
            (ArgMin, "AB", vec![0]),
            (ArgMin, "BA", vec![0]),
            // No reduction axes: identity, index 0.
            (ArgMax, "", vec![0; 6]),
        ] {
            let got = reduce_ab(op, dtype, red);
            assert_eq!(i64s(&got), want, "{op:?} over {red} in {dtype}");
        }
    }
    for dtype in [DType::F32, DType::F64] {
        let got = reduce_ab(Mean, dtype, "B");
        assert_eq!(as_f64(got.data()), vec![5.0, 4.0]);
        let got = reduce_ab(Mean, dtype, "AB");
        assert_eq!(as_f64(got.data()), vec![4.5]);
    }
}

#[test]
fn reduction_out_axes_order_the_result() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 2).unwrap();
    let c = g.axis("C", 3).unwrap();
    // x[a][b][c] = 100a + 10b + c
    let data: Vec<i64> = (0..2)
        .flat_map(|a| (0..2).flat_map(move |b| (0..3).map(move |c| 100 * a + 10 * b + c)))
        .collect();
    let x = konst(&mut g, &[a, b, c], ArrayData::I64(data));
    let s = g.reduce(ReduceOp::Sum, x, &[b], Some(&[c, a])).unwrap();
    assert_eq!(g.node(s).axes, Axes::new([c, a]).unwrap());
    let m = g.reduce(ReduceOp::ArgMax, x, &[c, b], Some(&[a])).unwrap();
    let out = eval(g, &[s, m]);
    // sum over b of (100a + 10b + c) = 200a + 10 + 2c, laid out (C, A).
    assert_eq!(i64s(&out[0]), vec![10, 210, 12, 212, 14, 214]);
    // The maximum is at b = 1, c = 2: flat index over (C, B) is 2·2 + 1 = 5.
    assert_eq!(i64s(&out[1]), vec![5, 5]);
}

fn reduce_1d(op: ReduceOp, data: ArrayData) -> ArrayData {
    let mut g = Graph::new();
    let n = g.axis("N", data.len()).unwrap();
    let x = konst(&mut g, &[n], data);
    let r = g.reduce(op, x, &[n], None).unwrap();
    eval1(g, r).into_parts().2
}

#[test]
fn reduction_conventions_ties_nan_wrapping_and_accumulation() {
    use ReduceOp::*;
    // First occurrence wins.
    assert_eq!(
        reduce_1d(ArgMax, ArrayData::I32(vec![3, 7, 7])),
        ArrayData::I64(vec![1])
    );
    assert_eq!(
        reduce_1d(ArgMin, ArrayData::F32(vec![2.0, 1.0, 1.0])),
        ArrayData::I64(vec![1])
    );
    // NaN propagates through max/min; argmax/argmin pick the first NaN.
    let with_nan = ArrayData::F64(vec![1.0, f64::NAN, 3.0, f64::NAN]);
    assert!(as_f64(&reduce_1d(Max, with_nan.clone()))[0].is_nan());
    assert!(as_f64(&reduce_1d(Min, with_nan.clone()))[0].is_nan());
    assert!(as_f64(&reduce_1d(Sum, with_nan.clone()))[0].is_nan());
    assert_eq!(reduce_1d(ArgMax, with_nan.clone()), ArrayData::I64(vec![1]));
    assert_eq!(reduce_1d(ArgMin, with_nan), ArrayData::I64(vec![1]));
    // Integers wrap.
    assert_eq!(
        reduce_1d(Sum, ArrayData::I32(vec![i32::MAX, 1])),
        ArrayData::I32(vec![i32::MIN])
    );
    assert_eq!(
        reduce_1d(Prod, ArrayData::I32(vec![65536, 65536, 3])),
        ArrayData::I32(vec![0])
    );
    assert_eq!(
        reduce_1d(Sum, ArrayData::I64(vec![i64::MAX, 2])),
        ArrayData::I64(vec![i64::MIN + 1])
    );
    // f32 sums accumulate in f64: 2^24 + 1 + 1 is exact, where f32 steps would lose both ones.
    assert_eq!(
        reduce_1d(Sum, ArrayData::F32(vec![16_777_216.0, 1.0, 1.0])),
        ArrayData::F32(vec![16_777_218.0])
    );
    assert_eq!(
        reduce_1d(Mean, ArrayData::F32(vec![16_777_216.0, 1.0, 1.0, 2.0])),
        ArrayData::F32(vec![4_194_305.0])
    );
    // bool: max is any, min is all, argmax the first true.
    let b = ArrayData::Bool(vec![false, true, true]);
    assert_eq!(reduce_1d(Max, b.clone()), ArrayData::Bool(vec![true]));
    assert_eq!(reduce_1d(Min, b.clone()), ArrayData::Bool(vec![false]));
    assert_eq!(reduce_1d(ArgMax, b.clone()), ArrayData::I64(vec![1]));
    assert_eq!(reduce_1d(ArgMin, b), ArrayData::I64(vec![0]));
    assert_eq!(
        reduce_1d(ArgMax, ArrayData::Bool(vec![false; 2])),
        ArrayData::I64(vec![0])
    );
}

// ---- dot -------------------------------------------------------------------------------

#[test]
fn dot_vectors_matrices_in_every_numeric_dtype() {
    for dtype in [DType::F32, DType::F64, DType::I32, DType::I64] {
        let mut g = Graph::new();
        let a = g.axis("A", 2).unwrap();
        let b = g.axis("B", 3).unwrap();
        let c = g.axis("C", 2).unwrap();
        let mk = |v: &[i64]| match dtype {
            DType::F32 => ArrayData::F32(v.iter().map(|x| *x as f32).collect()),
            DType::F64 => ArrayData::F64(v.iter().map(|x| *x as f64).collect()),
            DType::I32 => ArrayData::I32(v.iter().map(|x| *x as i32).collect()),
            _ => ArrayData::I64(v.to_vec()),
        };
        let u = konst(&mut g, &[b], mk(&[1, 2, 3]));
        let v = konst(&mut g, &[b], mk(&[4, 5, 6]));
        let m = konst(&mut g, &[a, b], mk(&[1, 2, 3, 4, 5, 6]));
        let n = konst(&mut g, &[b, c], mk(&[1, -1, 0, 2, 3, 1]));
        let uv = g.dot(u, v).unwrap();
        let mu = g.dot(m, u).unwrap();
        let um = g.dot(u, m).unwrap();
        let mn = g.dot(m, n).unwrap();
        let nm = g.dot(n, m).unwrap();
        assert_eq!(g.node(nm).axes, Axes::new([c, a]).unwrap());
        let out = eval(g, &[uv, mu, um, mn, nm]);
        assert_eq!(as_f64(out[0].data()), vec![32.0], "{dtype}");
        assert_eq!(as_f64(out[1].data()), vec![14.0, 32.0], "{dtype}");
        assert_eq!(as_f64(out[2].data()), vec![14.0, 32.0], "{dtype}");
        // [[1,2,3],[4,5,6]] · [[1,-1],[0,2],[3,1]] = [[10, 6], [22, 12]]
        assert_eq!(
            as_f64(out[3].data()),
            vec![10.0, 6.0, 22.0, 12.0],
            "{dtype}"
        );
        assert_eq!(
            as_f64(out[4].data()),
            vec![10.0, 22.0, 6.0, 12.0],
            "{dtype}"
        );
        assert_eq!(out[4].dtype(), dtype);
    }
}

#[test]
fn dot_accumulates_in_f64_and_integers_wrap() {
    let mut g = Graph::new();
    let n = g.axis("N", 3).unwrap();
    let x = konst(&mut g, &[n], ArrayData::F32(vec![16_777_216.0, 1.0, 1.0]));
    let ones = konst(&mut g, &[n], ArrayData::F32(vec![1.0; 3]));
    let d = g.dot(x, ones).unwrap();
    let i = konst(&mut g, &[n], ArrayData::I32(vec![65536, 1, 0]));
    let di = g.dot(i, i).unwrap();
    let out = eval(g, &[d, di]);
    assert_eq!(f32s(&out[0]), vec![16_777_218.0]);
    assert_eq!(i32s(&out[1]), vec![1]); // 2^32 + 1 wraps to 1
}

#[test]
fn dual_axes_give_squared_norms() {
    let mut g = Graph::new();
    let n = g.axis("N", 3).unwrap();
    let a = g.axis("A", 2).unwrap();
    let x = konst(&mut g, &[n], ArrayData::F64(vec![1.0, -2.0, 3.0]));
    let xt = g.transpose(x).unwrap();
    assert_eq!(g.node(xt).axes, Axes::new([n.dual()]).unwrap());
    let l2 = g.dot(xt, x).unwrap();
    assert!(g.node(l2).axes.is_empty());
    let m = konst(
        &mut g,
        &[a, n],
        ArrayData::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    );
    let mt = g.transpose(m).unwrap();
    assert_eq!(g.node(mt).axes, Axes::new([n.dual(), a.dual()]).unwrap());
    let fro = g.dot(mt, m).unwrap();
    assert!(g.node(fro).axes.is_empty());
    let out = eval(g, &[l2, fro]);
    assert_eq!(f64s(&out[0]), vec![14.0]);
    assert_eq!(f64s(&out[1]), vec![91.0]);
}

#[test]
fn dot_of_transposes_is_the_transpose_of_dot() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let c = g.axis("C", 2).unwrap();
    let x = konst(
        &mut g,
        &[a, b],
        ArrayData::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    );
    let y = konst(
        &mut g,
        &[b, c],
        ArrayData::F64(vec![1.0, -1.0, 0.0, 2.0, 3.0, 1.0]),
    );
    let xy = g.dot(x, y).unwrap();
    let yt = g.transpose(y).unwrap();
    let xt = g.transpose(x).unwrap();
    let ytxt = g.dot(yt, xt).unwrap();
    assert_eq!(g.node(ytxt).axes, Axes::new([c.dual(), a.dual()]).unwrap());
    let back = g.transpose(ytxt).unwrap();
    assert_eq!(g.node(back).axes, Axes::new([a, c]).unwrap());
    let out = eval(g, &[xy, ytxt, back]);
    assert_eq!(f64s(&out[0]), vec![10.0, 6.0, 22.0, 12.0]);
    assert_eq!(f64s(&out[1]), vec![10.0, 22.0, 6.0, 12.0]);
    assert_eq!(f64s(&out[2]), f64s(&out[0]));
}

#[test]
fn a_left_dual_pairs_with_a_right_plain_axis_only() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let p = konst(&mut g, &[a.dual()], ArrayData::I64(vec![2, 3]));
    let q = konst(&mut g, &[a], ArrayData::I64(vec![5, 7]));
    let pq = g.dot(p, q).unwrap();
    assert!(g.node(pq).axes.is_empty());
    // The other way round nothing pairs: an outer product over (A, A*).
    let qp = g.dot(q, p).unwrap();
    assert_eq!(g.node(qp).axes, Axes::new([a, a.dual()]).unwrap());
    let out = eval(g, &[pq, qp]);
    assert_eq!(i64s(&out[0]), vec![31]);
    assert_eq!(i64s(&out[1]), vec![10, 15, 14, 21]);
}

// ---- views -----------------------------------------------------------------------------

/// A graph with A=2, B=3 and x(A, B) = [[0, 1, 2], [3, 4, 5]] as i32.
fn ab() -> (Graph, Axis, Axis, NodeId) {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = konst(&mut g, &[a, b], ArrayData::I32(vec![0, 1, 2, 3, 4, 5]));
    (g, a, b, x)
}

#[test]
fn reorder_relabel_transpose_broadcast_expand_dims() {
    let (mut g, a, b, x) = ab();
    let c = g.axis("C", 2).unwrap();
    let d = g.axis("D", 3).unwrap();
    let reordered = g.axes_with_order(x, &[b, a]).unwrap();
    let cast = g.cast_axes(x, &[c, d]).unwrap();
    let t = g.transpose(x).unwrap();
    let tt = g.transpose(t).unwrap();
    let bc = g.broadcast(x, &[b, c, a]).unwrap();
    let e0 = g.expand_dims(x, c, 0).unwrap();
    let e2 = g.expand_dims(x, c, 2).unwrap();
    assert_eq!(g.node(cast).axes, Axes::new([c, d]).unwrap());
    assert_eq!(g.node(t).axes, Axes::new([b.dual(), a.dual()]).unwrap());
    assert_eq!(g.node(tt).axes, Axes::new([a, b]).unwrap());
    assert_eq!(g.node(e0).axes, Axes::new([c, a, b]).unwrap());
    let out = eval(g, &[reordered, cast, t, tt, bc, e0, e2]);
    assert_eq!(i32s(&out[0]), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(i32s(&out[1]), vec![0, 1, 2, 3, 4, 5]);
    assert_eq!(i32s(&out[2]), vec![0, 3, 1, 4, 2, 5]);
    assert_eq!(i32s(&out[3]), vec![0, 1, 2, 3, 4, 5]);
    // (B, C, A): x[a][b] repeated along C.
    assert_eq!(i32s(&out[4]), vec![0, 3, 0, 3, 1, 4, 1, 4, 2, 5, 2, 5]);
    assert_eq!(i32s(&out[5]), vec![0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5]);
    assert_eq!(i32s(&out[6]), vec![0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]);
}

#[test]
fn slices_ranges_steps_negative_steps_and_indices() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 5).unwrap();
    let x = konst(
        &mut g,
        &[a, b],
        ArrayData::F64((0..10).map(f64::from).collect()),
    );
    let r = |start, stop, step| AxisSlice::Range(SliceRange { start, stop, step });
    // (slices, result shape, result values)
    type Case = (Vec<(Axis, AxisSlice)>, Vec<usize>, Vec<f64>);
    let cases: Vec<Case> = vec![
        (
            vec![(b, r(Some(1), Some(3), 1))],
            vec![2, 2],
            vec![1., 2., 6., 7.],
        ),
        (
            vec![(b, r(None, None, 2))],
            vec![2, 3],
            vec![0., 2., 4., 5., 7., 9.],
        ),
        (
            vec![(b, r(None, None, -1))],
            vec![2, 5],
            vec![4., 3., 2., 1., 0., 9., 8., 7., 6., 5.],
        ),
        (
            vec![(b, r(Some(3), Some(0), -2))],
            vec![2, 2],
            vec![3., 1., 8., 6.],
        ),
        (
            vec![(b, r(Some(-3), Some(-1), 1))],
            vec![2, 2],
            vec![2., 3., 7., 8.],
        ),
        (
            vec![(b, r(Some(-1), None, -1))],
            vec![2, 5],
            vec![4., 3., 2., 1., 0., 9., 8., 7., 6., 5.],
        ),
        (
            vec![(a, AxisSlice::Index(1))],
            vec![5],
            vec![5., 6., 7., 8., 9.],
        ),
        (vec![(b, AxisSlice::Index(-1))], vec![2], vec![4., 9.]),
        (
            vec![(a, AxisSlice::Index(0)), (b, r(Some(4), None, 1))],
            vec![1],
            vec![4.],
        ),
        (
            vec![(a, r(None, None, -1)), (b, r(Some(0), Some(5), 3))],
            vec![2, 2],
            vec![5., 8., 0., 3.],
        ),
    ];
    let mut ids = Vec::new();
    for (slices, _, _) in &cases {
        ids.push(g.slice(x, slices).unwrap());
    }
    let out = eval(g, &ids);
    for (o, (slices, shape, want)) in out.iter().zip(&cases) {
        assert_eq!(o.shape(), &shape[..], "{slices:?}");
        assert_eq!(&f64s(o), want, "{slices:?}");
    }
}

#[test]
fn equal_slices_of_different_tensors_pair_by_axis() {
    let mut g = Graph::new();
    let b = g.axis("B", 4).unwrap();
    let x = konst(&mut g, &[b], ArrayData::I64(vec![1, 2, 3, 4]));
    let y = konst(&mut g, &[b], ArrayData::I64(vec![10, 20, 30, 40]));
    let s = [(b, AxisSlice::Range(SliceRange::range(1, 3)))];
    let xs = g.slice(x, &s).unwrap();
    let ys = g.slice(y, &s).unwrap();
    let z = g.add(xs, ys).unwrap();
    assert_eq!(g.node(z).axes.len(), 1);
    assert_eq!(i64s(&eval1(g, z)), vec![22, 33]);
}

#[test]
fn flatten_and_unflatten() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 2).unwrap();
    let c = g.axis("C", 3).unwrap();
    // x[a][b][c] = 100a + 10b + c
    let data: Vec<i64> = (0..2)
        .flat_map(|a| (0..2).flat_map(move |b| (0..3).map(move |c| 100 * a + 10 * b + c)))
        .collect();
    let x = konst(&mut g, &[a, b, c], ArrayData::I64(data.clone()));
    // Merge A and C (A major); the merged axis stands where A stood: (A*C, B).
    let f = g.flatten(x, &[a, c]).unwrap();
    let fa = g.node(f).axes[0];
    assert_eq!(g.node(f).axes, Axes::new([fa, b]).unwrap());
    // C major instead.
    let f2 = g.flatten(x, &[c, a]).unwrap();
    let u = g.unflatten(f, fa).unwrap();
    assert_eq!(g.node(u).axes, Axes::new([a, c, b]).unwrap());
    let back = g.axes_with_order(u, &[a, b, c]).unwrap();
    let whole = g.flatten(x, &[a, b, c]).unwrap();
    let out = eval(g, &[f, f2, u, back, whole]);
    assert_eq!(out[0].shape(), &[6, 2]);
    assert_eq!(
        i64s(&out[0]),
        vec![0, 10, 1, 11, 2, 12, 100, 110, 101, 111, 102, 112]
    );
    assert_eq!(
        i64s(&out[1]),
        vec![0, 10, 100, 110, 1, 11, 101, 111, 2, 12, 102, 112]
    );
    assert_eq!(out[2].shape(), &[2, 3, 2]);
    assert_eq!(i64s(&out[3]), data);
    assert_eq!(i64s(&out[4]), data);
}

#[test]
fn pad_with_zeros() {
    let (mut g, a, b, x) = ab();
    let p = g.pad(x, &[(b, 1, 2)]).unwrap();
    let p2 = g.pad(x, &[(a, 1, 0), (b, 0, 1)]).unwrap();
    let out = eval(g, &[p, p2]);
    assert_eq!(out[0].shape(), &[2, 6]);
    assert_eq!(i32s(&out[0]), vec![0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0]);
    assert_eq!(out[1].shape(), &[3, 4]);
    assert_eq!(i32s(&out[1]), vec![0, 0, 0, 0, 0, 1, 2, 0, 3, 4, 5, 0]);
}

#[test]
fn concat_parts_along_their_own_axes() {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let a2 = g.axis("A2", 1).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = konst(
        &mut g,
        &[a, b],
        ArrayData::F32(vec![0., 1., 2., 3., 4., 5.]),
    );
    // The second part has its axes in the other order: paired by identity.
    let y = konst(&mut g, &[b, a2], ArrayData::F32(vec![10., 11., 12.]));
    let cat = g.concat(&[(x, a), (y, a2)]).unwrap();
    let cat_axis = g.node(cat).axes[0];
    assert_eq!(g.node(cat).axes, Axes::new([cat_axis, b]).unwrap());
    // Three bool parts, one used twice.
    let c1 = g.axis("C1", 1).unwrap();
    let c2 = g.axis("C2", 2).unwrap();
    let p = konst(&mut g, &[c1], ArrayData::Bool(vec![true]));
    let q = konst(&mut g, &[c2], ArrayData::Bool(vec![false, true]));
    let cat2 = g.concat(&[(q, c2), (p, c1), (q, c2)]).unwrap();
    let out = eval(g, &[cat, cat2]);
    assert_eq!(out[0].shape(), &[3, 3]);
    assert_eq!(f32s(&out[0]), vec![0., 1., 2., 3., 4., 5., 10., 11., 12.]);
    assert_eq!(bools(&out[1]), vec![false, true, true, false, true]);
}

#[test]
fn views_compose_with_arithmetic() {
    // reverse(x) + x along B is symmetric: [[2, 2, 2], [8, 8, 8]].
    let (mut g, _a, b, x) = ab();
    let r = g
        .slice(x, &[(b, AxisSlice::Range(SliceRange::reversed()))])
        .unwrap();
    let rb = g.node(r).axes[1];
    let back = g.cast_axes(r, &[g.node(x).axes[0], b]).unwrap();
    let s = g.add(back, x).unwrap();
    assert_ne!(rb, b);
    assert_eq!(i32s(&eval1(g, s)), vec![2, 2, 2, 8, 8, 8]);
}

/// A dot of 4096 by 512 elements, `exp` and a sum, against a Rust reference in f64 (the
/// interpreter computes f32 ops in f64 and rounds each result once): every one of the 8 results,
/// within 1e-5 relative. (It once took minutes; no test times it: docs/testing.md.)
#[test]
fn a_few_thousand_element_graph_gives_the_reference_values() {
    let mut g = Graph::new();
    let a = g.axis("A", 64).unwrap();
    let b = g.axis("B", 64).unwrap();
    let c = g.axis("C", 8).unwrap();
    let xs: Vec<f32> = (0..4096).map(|i| i as f32 / 4096.0).collect();
    let ys: Vec<f32> = (0..512).map(|i| i as f32 / 512.0).collect();
    let x = konst(&mut g, &[a, b], ArrayData::F32(xs.clone()));
    let y = konst(&mut g, &[b, c], ArrayData::F32(ys.clone()));
    let d = g.dot(x, y).unwrap();
    let e = g.exp(d).unwrap();
    let s = g.sum(e, &[a]).unwrap();
    let out = eval1(g, s);
    assert_eq!(out.shape(), &[8]);
    let got = out.to_vec::<f32>().unwrap();
    for (k, &got) in got.iter().enumerate() {
        let want: f64 = (0..64)
            .map(|i| {
                let dot: f64 = (0..64)
                    .map(|j| xs[i * 64 + j] as f64 * ys[j * 8 + k] as f64)
                    .sum();
                dot.exp()
            })
            .sum();
        let rel = (got as f64 - want).abs() / want;
        assert!(rel < 1e-5, "result {k}: {got} against {want}");
    }
}
