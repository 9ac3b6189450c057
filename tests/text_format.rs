//! Hand-written tests of the `.weft` text format: the canonical text of a graph built through
//! the API, exact round trips of awkward values and names, the human-friendly forms the parser
//! accepts, and the position and wording of parse errors.

use weft_ir::text::{parse, print, ParseError};
use weft_ir::{
    ArrayData, AxisDef, AxisSlice, DType, Graph, GraphError, Role, Scalar, SliceRange, TensorInit,
};

fn round_trip(g: &Graph) -> Graph {
    let text = print(g);
    let back = parse(&text, "t.weft").unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(print(&back), text);
    back
}

/// Parses `src` expecting an error; returns its message.
fn error(src: &str) -> String {
    match parse(src, "bad.weft") {
        Ok(g) => panic!("parsed:\n{g}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn api_graph_prints_canonical_text_and_parses_back() {
    let mut g = Graph::new();
    let h = g.axis("H", 4).unwrap();
    let w = g
        .axis_with_roles("W", Some(3), vec![Role::Width, Role::User("pixels".into())])
        .unwrap();
    let b = g.axis_unbound("B").unwrap();
    let x = g.placeholder("x", &[h, w], DType::F32).unwrap();
    let y = g
        .constant(
            Some("y"),
            &[w, h],
            DType::F32,
            TensorInit::Fill(Scalar::Float(0.5)),
        )
        .unwrap();
    let s = g.add(x, y).unwrap();
    let m = g
        .reduce(weft_ir::ReduceOp::Max, s, &[], Some(&[w, h]))
        .unwrap();
    g.set_name(m, "m").unwrap();
    let sl = g
        .slice(
            x,
            &[
                (h, AxisSlice::Range(SliceRange::reversed())),
                (w, AxisSlice::Index(-1)),
            ],
        )
        .unwrap();
    let f = g.flatten(x, &[h, w]).unwrap();
    let u = g.unflatten(f, g.node(f).axes[0]).unwrap();
    let p = g.pad(x, &[(w, 1, 2)]).unwrap();
    let c = g.concat(&[(x, h), (sl, g.node(sl).axes[0])]);
    assert!(c.is_err(), "parts' other axes differ");
    let c = g.concat(&[(x, h), (x, h)]).unwrap();
    let e = g.expand_dims(m, b, 0).unwrap();
    let t = g.transpose(x).unwrap();
    let d = g.dot(t, x).unwrap();
    let k = g.convert(d, DType::I64).unwrap();
    let v = g
        .variable(
            "v",
            &[h],
            DType::F64,
            TensorInit::data(ArrayData::F64(vec![0.1, -0.0, 1e300, 5e-324])),
        )
        .unwrap();
    let v2 = g.negative(v).unwrap();
    let a = g.assign(v, v2).unwrap();
    g.mark_output(k).unwrap();
    g.mark_output(a).unwrap();
    let _ = (u, p, c, e);

    let expected = r#"axis H = 4
axis W = 3 : Width, pixels
axis B
axis "H[::-1]" = slice(H, ::-1)
axis "H*W" = flatten(H, W)
axis "W+pad(1,2)" = pad(W, 1, 2)
axis "H|H" = concat(H, H)

placeholder x: f32[H, W]
constant y: f32[W, H] = 0.5
%2 = add(x, y)
m = max(%2, [], out=[W, H])
%4 = slice(x, H=::-1, W=-1)
%5 = flatten(x, [H, W])
%6 = unflatten(%5, "H*W")
%7 = pad(x, W=(1, 2))
%8 = concat(x:H, x:H)
%9 = expand_dims(m, B, 0)
%10 = transpose(x)
%11 = dot(%10, x)
%12 = convert(%11, i64)
variable v: f64[H] = [0.1, -0.0, 1e300, 5e-324]
%14 = negative(v)
%15 = assign(v, %14)

output %12, %15
"#;
    assert_eq!(print(&g), expected);
    assert_eq!(g.to_string(), expected);
    assert!(round_trip(&g) == g);
    // A reduction whose `out_axes` are the default order prints no `out=`.
    let m0 = g
        .reduce(weft_ir::ReduceOp::Min, s, &[h], Some(&[w]))
        .unwrap();
    assert!(print(&g).ends_with(&format!("{m0} = min(%2, [H])\n\noutput %12, %15\n")));
    assert!(round_trip(&g) == g);
}

#[test]
fn extreme_values_round_trip_exactly() {
    let mut g = Graph::new();
    let n = g.axis("N", 6).unwrap();
    let f32s = vec![0.1f32, -0.0, f32::MIN_POSITIVE, 1e-45, f32::MAX, 16777217.0];
    let f64s = vec![0.1, -0.0, f64::MIN_POSITIVE, 5e-324, f64::MAX, 1e16];
    let i64s = vec![i64::MIN, i64::MAX, -1, 0, 1, 1 << 53];
    let i32s = vec![i32::MIN, i32::MAX, -1, 0, 1, 7];
    let bools = vec![true, false, true, true, false, false];
    for (name, data) in [
        ("a", ArrayData::F32(f32s)),
        ("b", ArrayData::F64(f64s)),
        ("c", ArrayData::I64(i64s)),
        ("d", ArrayData::I32(i32s)),
        ("e", ArrayData::Bool(bools)),
    ] {
        let dtype = data.dtype();
        g.constant(Some(name), &[n], dtype, TensorInit::data(data))
            .unwrap();
    }
    for (i, (dtype, s)) in [
        (DType::F32, Scalar::Float(f64::INFINITY)),
        (DType::F64, Scalar::Float(f64::NEG_INFINITY)),
        (DType::F32, Scalar::Float(1e-7)),
        (DType::I64, Scalar::Int(i64::MIN)),
        (DType::Bool, Scalar::Bool(true)),
    ]
    .into_iter()
    .enumerate()
    {
        let v = g
            .variable(&format!("v{i}"), &[], dtype, TensorInit::Fill(s))
            .unwrap();
        assert!(g.get(v).is_some());
    }
    let back = round_trip(&g);
    assert!(back == g, "{back:?}\n{g:?}");
    // The f32 value 1e-7 prints as f32, not as its f64 widening.
    assert!(
        print(&g).contains("variable v2: f32[] = 1e-7\n"),
        "{}",
        print(&g)
    );

    // NaN is not equal to itself: compare the values' bits instead.
    let mut g = Graph::new();
    g.variable(
        "nan",
        &[],
        DType::F64,
        TensorInit::Fill(Scalar::Float(f64::NAN)),
    )
    .unwrap();
    let back = round_trip(&g);
    let (_, node) = back.nodes().next().unwrap();
    match &node.op {
        weft_ir::Op::Tensor {
            init: Some(TensorInit::Fill(Scalar::Float(v))),
            ..
        } => assert!(v.is_nan()),
        other => panic!("{other:?}"),
    }
}

#[test]
fn awkward_names_round_trip() {
    // Two axes of one name come from the text form only (the API refuses them), told apart
    // by their table index.
    let mut g = parse("axis H@0 = 2\naxis H@1 = 3\n", "h.weft").unwrap();
    assert!(matches!(
        g.axis("H", 4),
        Err(weft_ir::GraphError::AxisNameTaken(_))
    ));
    let (a, b) = (
        g.axis_of(weft_ir::AxisId::from_u32(0)),
        g.axis_of(weft_ir::AxisId::from_u32(1)),
    );
    let c = g.axis("", 1).unwrap();
    let d = g.axis("my \"axis\"\n", 2).unwrap();
    let e = g.axis("output", 2).unwrap();
    g.add_roles(e.id, &[Role::User("Height".into()), Role::Height]);
    let x = g.placeholder("x y", &[a, b.dual(), c], DType::I32).unwrap();
    let y = g
        .tensor(
            weft_ir::TensorKind::Placeholder,
            None,
            &[d, e],
            DType::I32,
            None,
        )
        .unwrap();
    let z = g.dot(x, y).unwrap();
    g.set_name(z, "axis").unwrap();
    let dead = g.negative(y).unwrap();
    let back = round_trip(&g);
    assert!(back == g);
    let text = print(&g);
    assert!(text.contains("axis H@0 = 2\naxis H@1 = 3\n"), "{text}");
    assert!(
        text.contains(r#"axis "output" = 2 : "Height", Height"#),
        "{text}"
    );
    assert!(
        text.contains(r#"placeholder "x y": i32[H@0, H@1*, ""]"#),
        "{text}"
    );
    assert!(text.contains(&format!("{dead} = negative({y})")), "{text}");
    assert!(text.contains(r#""axis" = dot("x y", %1)"#), "{text}");
}

#[test]
fn duals_of_every_degree_round_trip() {
    let mut g = Graph::new();
    let h = g.axis("H", 2).unwrap();
    let axes = [
        h,
        h.dual(),
        h.dual().dual(),
        h.dual().dual().dual(),
        h.dual().dual().dual().dual(),
        h.undual(),
        h.undual().undual(),
        h.with_dual(i32::MIN),
    ];
    g.placeholder("x", &axes, DType::F32).unwrap();
    let text = print(&g);
    assert!(
        text.contains("placeholder x: f32[H, H*, H**, H***, H^4*, H^-1*, H^-2*, H^-2147483648*]"),
        "{text}"
    );
    assert!(round_trip(&g) == g);
}

#[test]
fn derived_axes_can_be_declared_by_name_and_used() {
    let src = "\
# a hand-written graph naming its derived axes
axis H = 2
axis W = 3
axis HW = flatten(H, W)
axis Hr = slice(H, ::-1) : Height
axis Wp = pad(W, 1, 0)
placeholder x: f32[H, W]
f = flatten(x, [H, W])
g = unflatten(f, HW)
r = slice(x, H=::-1)
s = sum(r, [Hr])
p = pad(x, W=(1, 0))
q = max(p, [Wp])
c = concat(x:W, p:Wp)
n = sum(c, [\"W|Wp\"])   # an undeclared derived axis goes by its generated name
output g, s, q, n
";
    let g = parse(src, "derived.weft").unwrap_or_else(|e| panic!("{e}"));
    g.verify().unwrap();
    let f = g.find("f").unwrap();
    let flat = g.node(f).axes[0];
    assert_eq!(g.axis_name(flat), "HW");
    assert_eq!(g.axis_len(flat), Some(6));
    assert_eq!(
        g.axis_data(flat.id).def,
        AxisDef::Flatten(g.node(g.find("x").unwrap()).axes.as_slice().to_vec())
    );
    let r = g.find("r").unwrap();
    assert_eq!(g.axis_data(g.node(r).axes[0].id).roles, [Role::Height]);
    assert!(g.node(g.find("s").unwrap()).axes.len() == 1);
    let c = g.find("c").unwrap();
    assert_eq!(g.axis_len(g.node(c).axes[1]), Some(7));
    assert!(round_trip(&g) == g);
}

#[test]
fn an_implicit_derived_axis_can_be_named_after_its_op() {
    let src = "axis H = 4\nplaceholder x: f32[H]\ny = slice(x, H=1:3)\naxis Mid = slice(H, 1:3)\nz = sum(y, [Mid])\n";
    let g = parse(src, "late.weft").unwrap_or_else(|e| panic!("{e}"));
    let y = g.find("y").unwrap();
    assert_eq!(g.axis_name(g.node(y).axes[0]), "Mid");
    assert!(g.node(g.find("z").unwrap()).axes.is_empty());
}

#[test]
fn comments_blank_lines_and_spacing_are_free() {
    let a = parse(
        "axis N=3\nplaceholder x:f32[N]\ny=exp(x)\noutput y",
        "a.weft",
    )
    .unwrap();
    let b = parse(
        "# header\n\n  axis   N = 3   # trailing\n\nplaceholder x : f32 [ N ]\n y = exp ( x )\n\noutput y\n\n",
        "b.weft",
    )
    .unwrap();
    assert!(a == b);
}

#[test]
fn unbound_axes_stay_unbound() {
    let g = parse("axis B\nplaceholder x: f32[B]\n", "u.weft").unwrap();
    let b = g.find_axis("B").unwrap();
    assert_eq!(g.axis_len(b), None);
    assert!(matches!(g.verify(), Err(GraphError::UnboundAxis { .. })));
}

#[test]
fn parse_errors_name_the_position_and_what_was_expected() {
    let cases: &[(&str, &str)] = &[
        (
            "axis N = 2\nplaceholder x: f32[N]\nz = frobnicate(x)\n",
            "bad.weft:3:5: expected an op name (e.g. add, dot, sum, slice; see docs/text-format.md), found `frobnicate`",
        ),
        (
            "axis N = 2\nplaceholder x: f32[N, Q]\n",
            "bad.weft:2:23: expected a declared axis, found `Q`, which is not declared",
        ),
        (
            "axis N = 2\nplaceholder x: f32[N]\nplaceholder x: f32[N]\n",
            "bad.weft:3:13: expected a new tensor name, found `x`, which is already declared",
        ),
        (
            "axis N = 2\nplaceholder x: f32[N]\nz add(x, x)\n",
            "bad.weft:3:3: expected `=`, found `add`",
        ),
        (
            "axis N = 2.5\n",
            "bad.weft:1:10: expected an axis length (a whole number), found `2.5`",
        ),
        (
            "axis N = 2\nconstant c: i32[N] = [1, 3000000000]\n",
            "bad.weft:2:26: expected an integer in i32 range, found `3000000000`",
        ),
        (
            "constant c: f64[] = 1e\n",
            "bad.weft:1:23: expected exponent digits, found end of line",
        ),
        (
            "constant c: bool[] = 1\n",
            "bad.weft:1:22: expected true or false, found `1`",
        ),
        (
            "axis N = 2\nplaceholder x: f16[N]\n",
            "bad.weft:2:16: expected a dtype (f32, f64, i32, i64 or bool), found `f16`",
        ),
        (
            "axis N = 2\naxis M = 3\nconstant c: f32[N, M] = [1.0, 2.0, 3.0]\n",
            "bad.weft:3:1: tensor `c`: 3 values given for axes (N, M) of 6 elements",
        ),
        (
            "axis N = 2\nplaceholder x: f32[N, N]\n",
            "bad.weft:2:23: expected an axis not already in the list, found `N` again",
        ),
        (
            "axis N = 2\naxis N = 3\n",
            "bad.weft:2:6: expected a new axis name, found `N`, which is already declared",
        ),
        (
            "axis N = 0\nplaceholder x: f32[N]\nm = argmin(x, [N])\n",
            "bad.weft:3:5: argmin(x): reduction axis `N` has length 0, and argmin of nothing has no value",
        ),
        (
            "axis N = 2\nplaceholder x: f32[N]\ny = exp(z)\n",
            "bad.weft:3:9: expected a declared tensor, found `z`, which is not declared",
        ),
        (
            "axis N = 2\nplaceholder x: f32[N]\nplaceholder y: i32[N]\nz = add(x, y)\n",
            "bad.weft:4:5: add(x, y): operands have dtypes f32 and i32; weft never converts implicitly (use convert)",
        ),
        (
            "axis N = 2\nplaceholder x: f32[N]\ny = exp(x) extra\n",
            "bad.weft:3:12: expected end of line, found `extra`",
        ),
        (
            "axis \"N = 2\n",
            "bad.weft:1:12: expected a closing `\"`, found end of line",
        ),
        (
            "axis N = 4\nplaceholder x: f32[N]\ny = slice(x, N=1:3:0)\n",
            "bad.weft:3:20: expected a non-zero step, found `0`",
        ),
        (
            "axis N = 4\nplaceholder x: f32[N]\ny = slice(x, N=5:7)\n",
            "bad.weft:3:5: slice(x): axis `N`: 5:7 is out of range for length 4",
        ),
        (
            "axis N = 4\naxis M = slice(N, 1:2)\naxis K = slice(N, 1:2)\n",
            "bad.weft:3:6: expected an axis derived in a new way, found the derivation of `M`, declared before",
        ),
        (
            "axis N = 4\nplaceholder x: f32[N]\ny = sum(x, [N], order=[])\n",
            "bad.weft:3:17: expected `out=[...]`, found `order`",
        ),
        (
            "axis N = 4\nplaceholder x: f32[N]\ny = transpose(x)\noutput %3\n",
            "bad.weft:4:8: expected a declared tensor, found `%3`, which is not declared",
        ),
        (
            "axis N = 4\nplaceholder x: f32[N^*]\n",
            "bad.weft:2:22: expected a dual degree, found `*`",
        ),
        ("axis N = 4 $\n", "bad.weft:1:12: expected a name, number or punctuation, found `$`"),
        (
            "placeholder x: f32[] = 1.0\n",
            "bad.weft:1:1: tensor `x`: a placeholder takes its value at each call, not an initial value",
        ),
        (
            "variable v: f32[]\n",
            "bad.weft:1:1: tensor `v`: a variable needs an initial value",
        ),
    ];
    for (src, expected) in cases {
        assert_eq!(&error(src), expected, "source:\n{src}");
    }
}

#[test]
fn parse_errors_carry_structured_positions() {
    match parse("axis N = 2\n\n  z = nope(x)\n", "p.weft") {
        Err(ParseError::Expected {
            pos,
            expected,
            found,
            ..
        }) => {
            assert_eq!((pos.file.as_str(), pos.line, pos.col), ("p.weft", 3, 7));
            assert!(expected.contains("an op name"));
            assert_eq!(found, "`nope`");
        }
        other => panic!("{other:?}"),
    }
    let err = parse(
        "axis N = 0\nplaceholder x: f32[N]\nm = max(x, [N])\n",
        "q.weft",
    )
    .unwrap_err();
    assert!(matches!(
        &err,
        ParseError::Graph { source, .. } if matches!(**source, GraphError::EmptyReduction { .. })
    ));
    assert_eq!(err.pos().line, 3);
}

/// Numbers at the edges of u64/i64/i32 in lengths, pads, slice bounds and steps and dual
/// exponents: each gives its typed error (parse or verify), or — where the number is legal — the
/// exact graph it says (a step of 2^63 - 1 or -2^63 takes one element; transposing
/// `N^-2147483648*` gives `N^2147483647*`).
#[test]
fn absurd_numbers_give_typed_errors_or_exact_results() {
    let big = u64::MAX;
    let errors = [
        (
            format!("axis N = 2\nplaceholder x: f32[N]\np = pad(x, N=({big}, 1))\nq = transpose(p)\nd = dot(q, p)\n"),
            "its length overflows",
        ),
        (
            format!("axis N = {big}\naxis M = 2\nconstant c: f32[N, M] = [1.0]\n"),
            "of more than usize::MAX elements",
        ),
        (
            "axis N = 4\nplaceholder x: f32[N]\ny = slice(x, N=-9223372036854775808)\n".to_string(),
            "index -9223372036854775808 is out of range for length 4",
        ),
    ];
    for (src, want) in &errors {
        let e = match parse(src, "big.weft") {
            Err(e) => e.to_string(),
            Ok(g) => g.verify().expect_err(want).to_string(),
        };
        assert!(e.contains(want), "`{e}` does not say `{want}`");
    }
    for step in ["0:2:9223372036854775807", "::-9223372036854775808"] {
        let src = format!("axis N = 4\nplaceholder x: f32[N]\ny = slice(x, N={step})\n");
        let g = parse(&src, "big.weft").unwrap();
        g.verify().unwrap();
        let y = g.find("y").unwrap();
        assert_eq!(g.shape_of(&g.node(y).axes).unwrap(), vec![1], "{step}");
    }
    let src = "axis N = 4\nplaceholder x: f32[N^-2147483648*]\ny = transpose(x)\n";
    let g = parse(src, "big.weft").unwrap();
    g.verify().unwrap();
    let y = g.find("y").unwrap();
    assert_eq!(g.axis_name(g.node(y).axes[0]), "N^2147483647*");
}

#[test]
fn seeded_random_initial_values_are_deterministic_and_checked() {
    let src = "axis I = 4\naxis O = 3\nvariable W: f32[I, O] = uniform(5, -0.5, 0.5)\n\
               variable V: f64[O] = normal(9, 1, 0.1)\noutput W, V\n";
    let g = weft_ir::text::parse(src, "r.weft").unwrap();
    let value = |name: &str| match &g.node(g.find(name).unwrap()).op {
        weft_ir::Op::Tensor {
            init: Some(weft_ir::TensorInit::Data(d)),
            ..
        } => weft_ir::ArrayData::clone(d),
        other => panic!("{other:?}"),
    };
    let weft_ir::ArrayData::F32(w) = value("W") else {
        panic!()
    };
    assert_eq!(w.len(), 12);
    assert!(w.iter().all(|x| (-0.5..0.5).contains(x)));
    assert!(w.windows(2).any(|p| p[0] != p[1]));
    let weft_ir::ArrayData::F64(v) = value("V") else {
        panic!()
    };
    assert!(v.iter().all(|x| (0.5..1.5).contains(x)), "{v:?}");
    // The same seed, the same values (and the printed data parse back to the same graph).
    assert_eq!(weft_ir::text::parse(src, "r.weft").unwrap(), g);
    let back = weft_ir::text::parse(&weft_ir::text::print(&g), "r.weft").unwrap();
    assert_eq!(back, g);
    for (bad, says) in [
        ("axis I\nvariable W: f32[I] = uniform(1, 0, 1)", "`I`"),
        ("axis I = 2\nvariable W: i32[I] = uniform(1, 0, 1)", "i32"),
        (
            "axis I = 2\nvariable W: f32[I] = uniform(1, 1, 0)",
            "lo < hi",
        ),
        ("axis I = 2\nvariable W: f32[I] = normal(1, 0, -1)", "std"),
        ("axis I = 2\nvariable W: f32[I] = normal(1, 0)", "`,`"),
        ("axis I = 2\nvariable W: f32[I] = uniform(-1, 0, 1)", "seed"),
    ] {
        let e = weft_ir::text::parse(bad, "r.weft").unwrap_err().to_string();
        assert!(e.contains("r.weft:2:") && e.contains(says), "{bad}: {e}");
    }
}
