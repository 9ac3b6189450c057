//! The C examples (examples/c/), built with the system C compiler against this package's
//! libweft_c.so and libweft_c.a, run, and compared with the same computation in Rust: bit for bit
//! with the JIT (the same compiled code behind another interface), and within the documented
//! tolerance with the reference interpreter.

use std::path::{Path, PathBuf};
use std::process::Command;

use weft_api::cli::{load, Binding};
use weft_api::prelude::*;

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("capi/ has a parent")
        .to_path_buf()
}

/// Where cargo put libweft_c.so and libweft_c.a, built with this package's tests: beside
/// this test, in `target/<profile>/deps/` (the copies one level up are made only when the
/// library is what a command builds).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let dir = exe
        .parent()
        .expect("target/<profile>/deps/<test>")
        .to_path_buf();
    assert!(
        dir.join("libweft_c.so").exists() && dir.join("libweft_c.a").exists(),
        "no libweft_c.so / libweft_c.a in {}",
        dir.display()
    );
    dir
}

/// Compiles `examples/c/{name}.c`, linked dynamically or statically, once per test run (tests
/// run at once and share the executables); returns the executable.
fn build(name: &str, statically: bool) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, bool, PathBuf)>> =
        std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, _, exe)) = built.iter().find(|(n, s, _)| n == name && *s == statically) {
        return exe.clone();
    }
    let exe = compile(name, statically);
    built.push((name.to_owned(), statically, exe.clone()));
    exe
}

fn compile(name: &str, statically: bool) -> PathBuf {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "{name}-{}",
        if statically { "static" } else { "shared" }
    ));
    let lib = lib_dir();
    let mut cc = Command::new(std::env::var("CC").unwrap_or_else(|_| "cc".into()));
    cc.args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(root().join("capi/include"))
        .arg(root().join(format!("examples/c/{name}.c")))
        .arg("-o")
        .arg(&out);
    if statically {
        // rustc's `--print native-static-libs` for this library; unused code collected.
        cc.arg(lib.join("libweft_c.a")).args([
            "-Wl,--gc-sections",
            "-lgcc_s",
            "-lutil",
            "-lrt",
            "-lpthread",
            "-lm",
            "-ldl",
            "-lc",
        ]);
    } else {
        // By path: the library has no soname, so the program needs this very file, whatever
        // LD_LIBRARY_PATH says (cargo's lists target/<profile>, where an older copy may lie).
        cc.arg(lib.join("libweft_c.so"));
    }
    let status = cc.status().expect("the system C compiler (cc) runs");
    assert!(status.success(), "cc failed to build examples/c/{name}.c");
    out
}

/// Runs `exe` with `args` from the repository's root; its standard output's lines.
fn run(exe: &Path, args: &[&str]) -> Vec<String> {
    let out = Command::new(exe)
        .args(args)
        .current_dir(root())
        .output()
        .expect("the example runs");
    assert!(
        out.status.success(),
        "{} {args:?} failed: {}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("UTF-8 output")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The values after `prefix` on the lines that start with it (`%.9g`: every f32 exactly).
fn values(lines: &[String], prefix: &str) -> Vec<f32> {
    lines
        .iter()
        .filter_map(|l| l.strip_prefix(prefix))
        .map(|v| v.trim().parse().expect("a number"))
        .collect()
}

/// Within the tolerance the oracle tests use for f32 results of a few hundred roundings
/// (docs/testing.md): `|a - b| <= 1e-4 (1 + |b|)`.
fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= 1e-4 * (1.0 + y.abs()))
}

/// The layer norm's inputs as layernorm.c fills them, for `graph`'s placeholders.
fn layernorm_inputs(graph: &Graph) -> Vec<HostArray> {
    graph
        .placeholders()
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let node = graph.node(p);
            let shape = graph.shape_of(&node.axes).unwrap();
            let n: usize = shape.iter().product();
            let data: Vec<f32> = (0..n)
                .map(|e| match i {
                    0 => ((e * 7 % 13) as f32 - 6.0) / 4.0,
                    1 => 1.0 + e as f32 / 8.0,
                    _ => e as f32 / 16.0,
                })
                .collect();
            HostArray::from_vec(node.axes.clone(), shape, data).unwrap()
        })
        .collect()
}

/// The layer norm's output on `backend`, under `bind`.
fn layernorm_in_rust(bind: &[&str], backend: Backend) -> Vec<f32> {
    let binds: Vec<Binding> = bind.iter().map(|b| b.parse().unwrap()).collect();
    let graph = load(&root().join("examples/layernorm.weft"), &binds).unwrap();
    let inputs = layernorm_inputs(&graph);
    let t = Transformer::new(graph.clone(), backend).unwrap();
    let c = t
        .computation(graph.outputs(), &graph.placeholders())
        .unwrap();
    c.call(&inputs).unwrap()[0].to_vec::<f32>().unwrap()
}

#[test]
fn layernorm_from_c_matches_rust_and_the_interpreter() {
    let exe = build("layernorm", false);
    for bind in [&[][..], &["R=7"][..], &["R=3", "C=33"][..]] {
        let mut args = vec!["examples/layernorm.weft"];
        args.extend_from_slice(bind);
        let lines = run(&exe, &args);
        let from_c = values(&lines[1..], "");
        let jit = layernorm_in_rust(bind, Backend::Jit);
        assert_eq!(
            from_c.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            jit.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{bind:?}: C and Rust ran the same code"
        );
        assert!(close(
            &from_c,
            &layernorm_in_rust(bind, Backend::Interpreter)
        ));
    }
}

#[test]
fn a_statically_linked_program_gives_the_same_bits() {
    let shared = run(
        &build("layernorm", false),
        &["examples/layernorm.weft", "R=5"],
    );
    let static_ = run(
        &build("layernorm", true),
        &["examples/layernorm.weft", "R=5"],
    );
    assert_eq!(shared, static_);
}

/// `steps` training steps of digits_mlp.weft as train_digits.c runs them, on `backend`:
/// the losses, then b2.
fn train_in_rust(steps: usize, backend: Backend) -> (Vec<f32>, Vec<f32>) {
    let graph = load(&root().join("examples/digits_mlp.weft"), &[]).unwrap();
    let placeholders = graph.placeholders();
    let input = |i: usize| {
        let node = graph.node(placeholders[i]);
        (
            node.axes.clone(),
            graph.shape_of(&node.axes).unwrap(),
            node.dtype,
        )
    };
    let (xa, xs, _) = input(0);
    let (la, ls, _) = input(1);
    let x: Vec<f32> = (0..xs.iter().product::<usize>())
        .map(|e| (e * 5 % 17) as f32 / 16.0)
        .collect();
    let labels: Vec<i64> = (0..ls[0]).map(|b| (b % 10) as i64).collect();
    let inputs = [
        HostArray::from_vec(xa, xs, x).unwrap(),
        HostArray::from_vec(la, ls, labels).unwrap(),
    ];
    let t = Transformer::new(graph.clone(), backend).unwrap();
    let c = t.computation(graph.outputs(), &placeholders).unwrap();
    let b1 = graph.find("b1").unwrap();
    let zeros = HostArray::from_vec(
        graph.node(b1).axes.clone(),
        graph.shape_of(&graph.node(b1).axes).unwrap(),
        vec![0f32; 128],
    )
    .unwrap();
    t.set_value(b1, &zeros).unwrap();
    let losses = (0..steps)
        .map(|_| c.call(&inputs).unwrap()[0].to_vec::<f32>().unwrap()[0])
        .collect();
    let b2 = t.value_of(graph.find("b2").unwrap()).unwrap();
    (losses, b2.to_vec::<f32>().unwrap())
}

#[test]
fn training_from_c_updates_the_variables_as_rust_does() {
    let lines = run(
        &build("train_digits", false),
        &["examples/digits_mlp.weft", "6"],
    );
    let (losses, b2) = (values(&lines, "loss "), values(&lines, "b2 "));
    assert_eq!(losses.len(), 6);
    assert!(
        losses[5] < losses[0],
        "training lowers the loss: {losses:?}"
    );
    let (jit_losses, jit_b2) = train_in_rust(6, Backend::Jit);
    assert_eq!(losses, jit_losses);
    assert_eq!(b2, jit_b2);
    let (interp_losses, interp_b2) = train_in_rust(6, Backend::Interpreter);
    assert!(
        close(&losses, &interp_losses),
        "{losses:?} {interp_losses:?}"
    );
    assert!(close(&b2, &interp_b2));
    let refused = lines.iter().find(|l| l.starts_with("refused: ")).unwrap();
    assert!(
        refused.contains("variable `b2`") && refused.contains("takes 40"),
        "{refused}"
    );
}
