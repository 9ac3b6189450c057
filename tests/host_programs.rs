//! The host programs of examples/ — a layer norm called 1000 times on ndarray data, an MLP
//! with weights from `.npy` files, one graph at two batch sizes, an MLP and a CNN trained on
//! the digits — run as tests; each stays under 40 lines of code (the training programs under
//! 65 and 95: below — the CNN also shapes its image);
//! the README's library example is the first of them, verbatim. And the `.npy` initial values
//! behind the MLP: lengths from the file, errors naming it.

#[path = "../examples/batch_sizes.rs"]
mod batch_sizes;
#[cfg(feature = "ndarray")]
#[path = "../examples/layernorm_ndarray.rs"]
mod layernorm_ndarray;
#[path = "../examples/mlp_npy.rs"]
mod mlp_npy;
#[path = "../examples/train_digits.rs"]
mod train_digits;
#[path = "../examples/train_digits_cnn.rs"]
mod train_digits_cnn;

use weft::prelude::*;

/// Each example and its most lines of code. The training program builds a model, a train step
/// and an evaluation, then runs epochs of batches with a progress bar, evaluates, saves and
/// checks its target: every line is one a user's training program has, and squeezing them
/// under 40 would cost the readability the example exists for.
const EXAMPLES: [(&str, usize); 5] = [
    ("layernorm_ndarray", 40),
    ("mlp_npy", 40),
    ("batch_sizes", 40),
    ("train_digits", 65),
    ("train_digits_cnn", 95),
];

fn source(example: &str) -> String {
    let path = format!("{}/examples/{example}.rs", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

#[cfg(feature = "ndarray")]
#[test]
fn a_layer_norm_called_1000_times_on_ndarray_data() {
    layernorm_ndarray::main().unwrap();
}

#[test]
fn an_mlp_with_weights_from_npy_files() {
    mlp_npy::main().unwrap();
}

#[test]
fn one_graph_at_two_batch_sizes_compiles_once_per_size() {
    // The example asserts `compilations() == 2` after five calls at two sizes.
    batch_sizes::main().unwrap();
}

#[test]
fn an_mlp_trained_on_the_digits_reaches_97_percent() {
    // The example asserts its test accuracy after 20 epochs (seed 0, 20% test split).
    train_digits::main().unwrap();
}

#[test]
fn a_cnn_trained_on_the_digits_reaches_98_percent() {
    // The example asserts its test accuracy after 20 epochs (seed 0, 20% test split).
    train_digits_cnn::main().unwrap();
}

#[test]
fn each_host_program_is_under_its_line_budget() {
    for (e, most) in EXAMPLES {
        let code = source(e)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("//"))
            .count();
        assert!(
            code < most,
            "{e}: {code} lines of code, the budget is < {most}"
        );
    }
}

#[test]
fn the_readme_library_example_is_the_layer_norm_program() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert!(
        readme.contains(&source("layernorm_ndarray")),
        "README.md's library example differs from examples/layernorm_ndarray.rs"
    );
}

/// Writes `data` over `shape` as an f32 `.npy` file in a fresh folder; returns its path.
fn npy(name: &str, shape: &[usize], data: Vec<f32>) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("weft-npy-init-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut g = Graph::new();
    let axes: Vec<Axis> = (0..shape.len())
        .map(|i| g.axis(&format!("D{i}"), shape[i]).unwrap())
        .collect();
    let path = dir.join(format!("{name}.npy"));
    HostArray::from_vec(Axes::new(axes).unwrap(), shape.to_vec(), data)
        .unwrap()
        .write_npy(&path)
        .unwrap();
    path
}

#[test]
fn npy_initial_values_bind_lengths_and_errors_name_the_file() {
    let path = npy("w", &[2, 3], (0..6).map(|i| i as f32).collect());
    let mut g = Graph::new();
    let (i, o) = (g.axis_unbound("I").unwrap(), g.axis_unbound("O").unwrap());
    let w = g
        .tensor_from_npy(TensorKind::Variable, "W", &[i, o], DType::F32, &path)
        .unwrap();
    assert_eq!(
        (g.resolve_len(i).unwrap(), g.resolve_len(o).unwrap()),
        (2, 3)
    );
    g.mark_output(w).unwrap();
    let t = Transformer::new(g.clone(), Backend::Jit).unwrap();
    assert_eq!(
        t.value_of(w).unwrap().as_slice::<f32>().unwrap(),
        &[0., 1., 2., 3., 4., 5.]
    );
    // A bound length that differs from the file's, another dtype, a missing file.
    let mut g = Graph::new();
    let (i, o) = (g.axis("I", 2).unwrap(), g.axis("O", 4).unwrap());
    let e = g
        .tensor_from_npy(TensorKind::Variable, "W", &[i, o], DType::F32, &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("w.npy") && e.contains("`O`") && e.contains('4') && e.contains('3'),
        "{e}"
    );
    let e = g
        .tensor_from_npy(TensorKind::Variable, "W2", &[i, o], DType::F64, &path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("w.npy") && e.contains("f64"), "{e}");
    let e = g
        .tensor_from_npy(
            TensorKind::Variable,
            "W3",
            &[i, o],
            DType::F32,
            &path.with_extension("x"),
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("w.x"), "{e}");
    // In the text form, relative to the .weft file; an error there has its line and column.
    let dir = path.parent().unwrap();
    let weft_file = dir.join("m.weft");
    std::fs::write(
        &weft_file,
        "axis I\naxis O\nvariable W: f32[I, O] = npy(\"w.npy\")\noutput W\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(&weft_file).unwrap();
    let g = weft::ir::text::parse(&text, &weft_file.display().to_string()).unwrap();
    assert_eq!(g.resolve_len(g.find_axis("O").unwrap()).unwrap(), 3);
    let bad = text.replace("w.npy", "nope.npy");
    let e = weft::ir::text::parse(&bad, &weft_file.display().to_string()).unwrap_err();
    assert!(
        e.to_string().contains("m.weft:3:1") && e.to_string().contains("nope.npy"),
        "{e}"
    );
}

#[test]
fn save_and_load_round_trip_every_variable_and_refuse_a_misfit() {
    let mut g = Graph::new();
    let n = g.axis("N", 3).unwrap();
    let v = g
        .variable("v", &[n], DType::F32, TensorInit::Fill(Scalar::Float(1.5)))
        .unwrap();
    let p = g.persistent_tensor("p", &[n], DType::F32, None).unwrap();
    g.mark_output(v).unwrap();
    g.mark_output(p).unwrap();
    let t = Transformer::new(g.clone(), Backend::Interpreter).unwrap();
    let dir = std::env::temp_dir().join(format!("weft-save-{}", std::process::id()));
    let written = t.save(&dir).unwrap();
    assert_eq!(written.len(), 2);
    let other = Transformer::new(g, Backend::Jit).unwrap();
    other
        .set_value(
            v,
            &HostArray::from_vec(Axes::new([n]).unwrap(), vec![3], vec![0f32; 3]).unwrap(),
        )
        .unwrap();
    other.load(&dir).unwrap();
    assert_eq!(other.value_of(v).unwrap(), t.value_of(v).unwrap());
    // A file of the wrong length: an error, and nothing set.
    let short = npy("short", &[2], vec![9.0, 9.0]);
    std::fs::copy(&short, dir.join("p.npy")).unwrap();
    let before = other.value_of(v).unwrap();
    assert!(other.load(&dir).is_err());
    assert_eq!(other.value_of(v).unwrap(), before);
}

#[test]
fn the_readme_text_example_is_examples_l2() {
    // Its statements, in order, are the file's (the file adds comments and blank lines).
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let file =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/l2.weft")).unwrap();
    let statements = |text: &str| -> Vec<String> {
        text.lines()
            .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
            .filter(|l| !l.is_empty())
            .collect()
    };
    let start = readme
        .find("```text\n# examples/l2.weft")
        .expect("the README shows examples/l2.weft");
    let block = &readme[start + 8..];
    let block = &block[..block.find("```").unwrap()];
    assert_eq!(statements(block), statements(&file));
}
