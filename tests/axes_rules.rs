//! The axis rules of docs/design.md ("Axes"), table by table: elementwise result axes (on
//! `Axes::elementwise` and through graph ops with values checked by axis identity), reductions,
//! dot, broadcast, cast_axes, the `equal` and `x + y` examples, duplicate axes, and the list/set
//! operations of `Axes`; plus the table of tensor kind flags (docs/design.md, "Tensor kinds").

mod common;
use common::*;
use weft::prelude::*;
use weft::{GraphError, TensorKind};

/// Axes C, H, W, N, M with distinct lengths, so a mix-up of axes changes shapes.
struct Letters {
    g: Graph,
    axes: Vec<(char, Axis)>,
}

impl Letters {
    fn new() -> Letters {
        let mut g = Graph::new();
        let axes = [('C', 2), ('H', 3), ('W', 4), ('N', 5), ('M', 2)]
            .into_iter()
            .map(|(c, n)| (c, g.axis(&c.to_string(), n).unwrap()))
            .collect();
        Letters { g, axes }
    }
    fn axis(&self, c: char) -> Axis {
        self.axes.iter().find(|(l, _)| *l == c).unwrap().1
    }
    fn list(&self, s: &str) -> Vec<Axis> {
        s.chars().map(|c| self.axis(c)).collect()
    }
    fn axes(&self, s: &str) -> Axes {
        Axes::new(self.list(s)).unwrap()
    }
    fn weight(c: char) -> f64 {
        match c {
            'C' => 1.0,
            'H' => 10.0,
            'W' => 100.0,
            'N' => 1000.0,
            _ => 0.5,
        }
    }
    /// A constant over `s` whose element at coordinates (i_a) is `scale · Σ_a (i_a + 1)·w(a)`.
    fn coded(&mut self, s: &str, scale: f64) -> NodeId {
        let axes = self.list(s);
        let shape = self.g.shape_of(&Axes::new(axes.clone()).unwrap()).unwrap();
        let data = coordinates(&shape)
            .iter()
            .map(|idx| code(s, idx) * scale)
            .collect();
        self.g
            .constant(
                None,
                &axes,
                DType::F64,
                TensorInit::data(ArrayData::F64(data)),
            )
            .unwrap()
    }
}

/// `Σ_a (i_a + 1)·w(a)` over the letters of `s` and their coordinates.
fn code(s: &str, idx: &[usize]) -> f64 {
    s.chars()
        .zip(idx)
        .map(|(c, i)| (*i as f64 + 1.0) * Letters::weight(c))
        .sum()
}

/// Every multi-index of `shape`, row-major.
fn coordinates(shape: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &n in shape {
        all = all
            .into_iter()
            .flat_map(|p| {
                (0..n).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    all
}

/// The coordinates, restricted to the letters of `sub`, of a multi-index over `full`.
fn project(full: &str, idx: &[usize], sub: &str) -> Vec<usize> {
    sub.chars()
        .map(|c| idx[full.find(c).expect("sub-axis of the result")])
        .collect()
}

/// The elementwise tables of docs/design.md, "Axes": (left, right, result).
const ELEMENTWISE: &[(&str, &str, &str)] = &[
    // When matches, output the same axis.
    ("H", "H", "H"),
    ("HW", "HW", "HW"),
    // Automatic broadcasting / dim shuffle.
    ("HW", "H", "HW"),
    ("HW", "W", "HW"),
    ("HW", "WN", "HWN"),
    ("HW", "NW", "HWN"),
    ("CH", "WHN", "CHWN"),
    // The three order rules.
    ("HWN", "NH", "HWN"),
    ("HW", "NHW", "NHW"),
    ("HW", "NWH", "NWH"),
    ("CHW", "NWH", "CHWN"),
    ("NCHW", "CHWN", "NCHW"),
    // Commutative property (equivalent tensors, different orders).
    ("H", "W", "HW"),
    ("W", "H", "WH"),
    ("C", "HW", "CHW"),
    ("HW", "C", "HWC"),
];

#[test]
fn elementwise_result_axes_follow_the_seed_tables() {
    let l = Letters::new();
    for (a, b, want) in ELEMENTWISE {
        let got = Axes::elementwise(&l.axes(a), &l.axes(b));
        assert_eq!(got, l.axes(want), "({a}) + ({b})");
    }
}

#[test]
fn elementwise_ops_pair_by_axis_in_the_seed_tables() {
    for (a, b, want) in ELEMENTWISE {
        let mut l = Letters::new();
        let x = l.coded(a, 1.0);
        let y = l.coded(b, 10_000.0);
        let z = l.g.add(x, y).unwrap();
        assert_eq!(l.g.node(z).axes, l.axes(want), "({a}) + ({b})");
        let shape = l.g.shape_of(&l.axes(want)).unwrap();
        let out = eval1(l.g, z);
        assert_eq!(out.shape(), &shape[..]);
        let expected: Vec<f64> = coordinates(&shape)
            .iter()
            .map(|idx| code(a, &project(want, idx, a)) + 10_000.0 * code(b, &project(want, idx, b)))
            .collect();
        assert_eq!(f64s(&out), expected, "({a}) + ({b}) values");
    }
}

#[test]
fn associative_and_distributive_examples() {
    let mut l = Letters::new();
    let (h, w, n) = (l.coded("H", 1.0), l.coded("W", 1.0), l.coded("N", 1.0));
    // ((H,) + (W,)) + (N,) -> (H, W) + (N,) -> (H, W, N)
    let hw = l.g.add(h, w).unwrap();
    assert_eq!(l.g.node(hw).axes, l.axes("HW"));
    let left = l.g.add(hw, n).unwrap();
    // (H,) + ((W,) + (N,)) -> (H,) + (W, N) -> (H, W, N)
    let wn = l.g.add(w, n).unwrap();
    assert_eq!(l.g.node(wn).axes, l.axes("WN"));
    let right = l.g.add(h, wn).unwrap();
    assert_eq!(l.g.node(left).axes, l.axes("HWN"));
    assert_eq!(l.g.node(right).axes, l.axes("HWN"));
    // (H,) * ((W,) + (N,)) = (H,) * (W, N) = (H, W, N)
    let d1 = l.g.multiply(h, wn).unwrap();
    // (H,) * (W,) + (H,) * (N,) = (H, W) * (H, N) = (H, W, N)
    let hw2 = l.g.multiply(h, w).unwrap();
    let hn = l.g.multiply(h, n).unwrap();
    assert_eq!(l.g.node(hn).axes, l.axes("HN"));
    let d2 = l.g.add(hw2, hn).unwrap();
    assert_eq!(l.g.node(d1).axes, l.axes("HWN"));
    assert_eq!(l.g.node(d2).axes, l.axes("HWN"));
    let out = eval(l.g, &[left, right, d1, d2]);
    assert_eq!(f64s(&out[0]), f64s(&out[1]));
    assert_eq!(f64s(&out[2]), f64s(&out[3]));
    // h[i] = 10(i+1), w[j] = 100(j+1), n[k] = 1000(k+1): spot-check one element.
    let (i, j, k) = (2, 1, 4);
    let at = i * 4 * 5 + j * 5 + k;
    assert_eq!(f64s(&out[0])[at], 30.0 + 200.0 + 5000.0);
    assert_eq!(f64s(&out[2])[at], 30.0 * (200.0 + 5000.0));
}

#[test]
fn reduction_examples() {
    let cases: &[(&str, &str)] = &[
        ("", "CHW"),
        ("C", "HW"),
        ("CW", "H"),
        ("WC", "H"),
        ("CHW", ""),
    ];
    for (red, want) in cases {
        let mut l = Letters::new();
        let x = l.coded("CHW", 1.0);
        let s = l.g.sum(x, &l.list(red)).unwrap();
        assert_eq!(l.g.node(s).axes, l.axes(want), "sum over ({red})");
        let shape = l.g.shape_of(&l.axes(want)).unwrap();
        let out = eval1(l.g, s);
        // Σ over the reduced coordinates of Σ_a (i_a+1)·w(a), summed by hand per axis.
        let lens = |c: char| match c {
            'C' => 2usize,
            'H' => 3,
            _ => 4,
        };
        let expected: Vec<f64> = coordinates(&shape)
            .iter()
            .map(|idx| {
                let count: usize = red.chars().map(lens).product();
                let kept = code(want, idx) * count as f64;
                let reduced: f64 = red
                    .chars()
                    .map(|c| {
                        let n = lens(c);
                        let per_axis = (n * (n + 1) / 2) as f64 * Letters::weight(c);
                        per_axis * (count / n) as f64
                    })
                    .sum();
                kept + reduced
            })
            .collect();
        assert_eq!(f64s(&out), expected, "sum over ({red})");
    }
}

#[test]
fn dot_examples_pair_by_axis_in_any_order() {
    let mut l = Letters::new();
    // (H, W) • (W, N) -> (H, N)
    let a = l.coded("HW", 1.0);
    let b = l.coded("WN", 1.0);
    let d = l.g.dot(a, b).unwrap();
    assert_eq!(l.g.node(d).axes, l.axes("HN"));
    // (M, C, H, W) • (C, H, W, N) -> (M, N), and with the left axes swapped.
    let x = l.coded("MCHW", 1.0);
    let y = l.coded("CHWN", 1.0);
    let d4 = l.g.dot(x, y).unwrap();
    assert_eq!(l.g.node(d4).axes, l.axes("MN"));
    let xs = l.g.axes_with_order(x, &l.list("MWHC")).unwrap();
    let d4s = l.g.dot(xs, y).unwrap();
    assert_eq!(l.g.node(d4s).axes, l.axes("MN"));
    let out = eval(l.g, &[d, d4, d4s]);
    // (H,W)•(W,N): Σ_w (10(h+1) + 100(w+1)) · (100(w+1) + 1000(n+1)), by hand for h = 0, n = 0.
    let hand: f64 = (1..=4)
        .map(|w| (10.0 + 100.0 * w as f64) * (100.0 * w as f64 + 1000.0))
        .sum();
    assert_eq!(f64s(&out[0])[0], hand);
    assert_eq!(out[1].shape(), &[2, 5]);
    assert_eq!(f64s(&out[1]), f64s(&out[2]));
}

#[test]
fn broadcast_examples() {
    let mut l = Letters::new();
    let x = l.coded("CH", 1.0);
    let b1 = l.g.broadcast(x, &l.list("CHW")).unwrap();
    let b2 = l.g.broadcast(x, &l.list("WHC")).unwrap();
    assert_eq!(l.g.node(b1).axes, l.axes("CHW"));
    assert_eq!(l.g.node(b2).axes, l.axes("WHC"));
    let out = eval(l.g, &[b1, b2]);
    for (o, s) in out.iter().zip(["CHW", "WHC"]) {
        let want: Vec<f64> = coordinates(o.shape())
            .iter()
            .map(|idx| code("CH", &project(s, idx, "CH")))
            .collect();
        assert_eq!(f64s(o), want, "broadcast to ({s})");
    }
}

#[test]
fn cast_axes_example_sums_two_layers() {
    let mut g = Graph::new();
    let c1 = g.axis("C1", 3).unwrap();
    let c2 = g.axis("C2", 3).unwrap();
    let n = g.axis("N", 4).unwrap();
    let ones = TensorInit::Fill(Scalar::Float(1.0));
    let h1 = g
        .constant(None, &[c1, n], DType::F32, ones.clone())
        .unwrap();
    let h2 = g.constant(None, &[c2, n], DType::F32, ones).unwrap();
    let direct = g.add(h1, h2).unwrap();
    assert_eq!(g.node(direct).axes, Axes::new([c1, n, c2]).unwrap());
    let h2c = g.cast_axes(h2, &[c1, n]).unwrap();
    let cast = g.add(h1, h2c).unwrap();
    assert_eq!(g.node(cast).axes, Axes::new([c1, n]).unwrap());
    let out = eval(g, &[direct, cast]);
    assert_eq!(out[0].shape(), &[3, 4, 3]);
    assert_eq!(out[1].shape(), &[3, 4]);
    assert!(f32s(&out[0])
        .iter()
        .chain(&f32s(&out[1]))
        .all(|v| *v == 2.0));
}

#[test]
fn equal_of_a_tensor_and_its_transposed_constant_is_all_true() {
    let mut g = Graph::new();
    let h = g.axis("H", 2).unwrap();
    let w = g.axis("W", 3).unwrap();
    let v = [0.25f64, 0.5, 0.125, 0.75, 0.375, 0.625]; // (2, 3), row-major
    let vt = vec![v[0], v[3], v[1], v[4], v[2], v[5]]; // its transpose, (3, 2)
    let x = g
        .constant(
            None,
            &[h, w],
            DType::F64,
            TensorInit::data(ArrayData::F64(v.to_vec())),
        )
        .unwrap();
    let y = g
        .constant(
            None,
            &[w, h],
            DType::F64,
            TensorInit::data(ArrayData::F64(vt)),
        )
        .unwrap();
    let z = g.equal(x, y).unwrap();
    let out = eval1(g, z);
    assert_eq!(out.shape(), &[2, 3]);
    assert_eq!(bools(&out), vec![true; 6]);
}

#[test]
fn x_plus_y_in_both_orders_gives_twos_in_each_left_order() {
    for swap in [false, true] {
        let mut g = Graph::new();
        let h = g.axis("H", 2).unwrap();
        let w = g.axis("W", 3).unwrap();
        let ones = TensorInit::Fill(Scalar::Float(1.0));
        let x = g.constant(None, &[h, w], DType::F32, ones.clone()).unwrap();
        let y = g.constant(None, &[w, h], DType::F32, ones).unwrap();
        let z = if swap { g.add(y, x) } else { g.add(x, y) }.unwrap();
        let out = eval1(g, z);
        assert_eq!(out.shape(), if swap { &[3, 2] } else { &[2, 3] });
        assert_eq!(f32s(&out), vec![2.0; 6]);
    }
}

#[test]
fn a_duplicate_axis_is_an_error_not_a_panic() {
    let mut g = Graph::new();
    let h = g.axis("H", 2).unwrap();
    let w = g.axis("W", 2).unwrap();
    let ones = TensorInit::Fill(Scalar::Float(1.0));
    let err = g
        .constant(Some("x"), &[h, h], DType::F32, ones.clone())
        .unwrap_err();
    assert!(matches!(err, GraphError::DuplicateAxis { ref axis, .. } if axis == "H"));
    assert!(err.to_string().contains("`H`"), "{err}");
    assert!(g.constant(Some("x"), &[h, w], DType::F32, ones).is_ok());
    assert!(matches!(
        Axes::new([h, h]),
        Err(weft::AxesError::Duplicate(a)) if a == h
    ));
}

#[test]
fn axes_list_and_set_operations() {
    let l = Letters::new();
    let (chw, hwn) = (l.axes("CHW"), l.axes("HWN"));
    // __add__: list concatenation; duplication is an error.
    assert_eq!((&l.axes("CH") + &l.axes("WN")).unwrap(), l.axes("CHWN"));
    assert!((&chw + &hwn).is_err());
    // __sub__, __or__, __and__: ordered set difference, union, intersection.
    assert_eq!(&chw - &hwn, l.axes("C"));
    assert_eq!(&hwn - &chw, l.axes("N"));
    assert_eq!(&chw | &hwn, l.axes("CHWN"));
    assert_eq!(&hwn | &chw, l.axes("HWNC"));
    assert_eq!(&chw & &l.axes("WNC"), l.axes("CW"));
    // __eq__/__ne__ are list comparisons: same axes in another order differ.
    assert_eq!(chw, l.axes("CHW"));
    assert_ne!(chw, l.axes("WHC"));
    // Set predicates.
    assert!(l.axes("HC").is_sub_set(&chw));
    assert!(!hwn.is_sub_set(&chw));
    assert!(chw.is_super_set(&l.axes("WC")));
    assert!(chw.is_equal_set(&l.axes("WHC")));
    assert!(!chw.is_equal_set(&l.axes("CH")));
    assert!(chw.is_not_equal_set(&hwn));
    assert!(!chw.is_not_equal_set(&l.axes("HWC")));
}

#[test]
fn seed_002_kind_flags_table() {
    // Method | constant | persistent | trainable | input
    let table = [
        (TensorKind::Constant, true, true, false, false),
        (TensorKind::Placeholder, false, true, false, true),
        (TensorKind::PersistentTensor, false, true, false, false),
        (TensorKind::Variable, false, true, true, false),
    ];
    for (kind, constant, persistent, trainable, input) in table {
        let f = kind.flags();
        assert_eq!(
            (f.constant, f.persistent, f.trainable, f.input),
            (constant, persistent, trainable, input),
            "{kind:?}"
        );
    }
}
