//! Every bundled `examples/*.weft` (and `tests/axes_examples/*.weft`) parses, has all lengths
//! bound and verifies, and prints to text that parses back to the same graph; the `seed003_*`
//! axes examples (tests/axes_examples/) have the output axes the axis rules give
//! (docs/design.md, "Axes").

use std::path::{Path, PathBuf};
use weft_ir::text::{parse, print};
use weft_ir::Graph;

fn examples() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut v: Vec<PathBuf> = ["examples", "tests/axes_examples"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root.join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "weft"))
        .collect();
    v.sort();
    v
}

/// `name` in `dir` (`examples` or `tests/axes_examples`), parsed.
fn load_from(dir: &str, name: &str) -> Graph {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir).join(name);
    let src = std::fs::read_to_string(&path).unwrap();
    parse(&src, name).unwrap_or_else(|e| panic!("{e}"))
}

/// The names of the axes of the graph's only output.
fn output_axes(g: &Graph) -> Vec<String> {
    assert_eq!(g.outputs().len(), 1);
    let node = g.node(g.outputs()[0]);
    node.axes.iter().map(|a| g.axis_name(*a)).collect()
}

#[test]
fn every_example_parses_verifies_and_round_trips() {
    let files = examples();
    assert!(
        files.len() >= 8,
        "expected the five bundled examples and three axes examples, found {files:?}"
    );
    for path in files {
        let name = path.display().to_string();
        let src = std::fs::read_to_string(&path).unwrap();
        assert!(src.starts_with('#'), "{name} has no header comment");
        let g = parse(&src, &name).unwrap_or_else(|e| panic!("{e}"));
        g.verify().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!g.outputs().is_empty(), "{name} marks no output");
        let text = print(&g);
        let back = parse(&text, &name).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(back == g, "{name} does not round-trip:\n{text}");
    }
}

#[test]
fn seed003_examples_have_the_seed_output_axes() {
    let load = |name| load_from("tests/axes_examples", name);
    assert_eq!(output_axes(&load("seed003_equal.weft")), ["H", "W"]);
    assert_eq!(output_axes(&load("seed003_add_xy.weft")), ["H", "W"]);
    assert_eq!(output_axes(&load("seed003_add_yx.weft")), ["W", "H"]);
    let g = load("seed003_add_yx.weft");
    let out = &g.node(g.outputs()[0]).axes;
    assert_eq!(g.shape_of(out).unwrap(), [3, 2]);
}

#[test]
fn workload_examples_have_the_expected_output_axes() {
    let load = |name| load_from("examples", name);
    assert!(output_axes(&load("l2.weft")).is_empty());
    assert_eq!(output_axes(&load("softmax.weft")), ["R", "C"]);
    assert_eq!(output_axes(&load("layernorm.weft")), ["R", "C"]);
    assert_eq!(output_axes(&load("mlp.weft")), ["O", "B"]);
}
