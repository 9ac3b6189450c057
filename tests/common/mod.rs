//! Helpers shared by the integration tests: running a graph on the interpreter and building
//! host arrays tersely.
#![allow(dead_code)]

use weft::prelude::*;

/// Runs `outputs` of `graph` (which has no placeholders among their ancestors) once.
pub fn eval(graph: Graph, outputs: &[NodeId]) -> Vec<HostArray> {
    let t = Transformer::new(graph, Backend::Interpreter).expect("transformer");
    let c = t.computation(outputs, &[]).expect("computation");
    c.call(NO_INPUTS).expect("call")
}

/// Runs `output` of `graph` once and returns it.
pub fn eval1(graph: Graph, output: NodeId) -> HostArray {
    eval(graph, &[output]).remove(0)
}

/// An array over `axes` with `shape` and row-major `data`.
pub fn arr<T: weft::Element>(axes: &[Axis], shape: &[usize], data: Vec<T>) -> HostArray {
    HostArray::from_vec(
        Axes::new(axes.iter().copied()).unwrap(),
        shape.to_vec(),
        data,
    )
    .unwrap()
}

/// The elements as f32.
pub fn f32s(a: &HostArray) -> Vec<f32> {
    a.to_vec::<f32>().expect("f32 array")
}

/// The elements as f64.
pub fn f64s(a: &HostArray) -> Vec<f64> {
    a.to_vec::<f64>().expect("f64 array")
}

/// The elements as i32.
pub fn i32s(a: &HostArray) -> Vec<i32> {
    a.to_vec::<i32>().expect("i32 array")
}

/// The elements as i64.
pub fn i64s(a: &HostArray) -> Vec<i64> {
    a.to_vec::<i64>().expect("i64 array")
}

/// The elements as bool.
pub fn bools(a: &HostArray) -> Vec<bool> {
    a.to_vec::<bool>().expect("bool array")
}

/// Asserts `got` is within `tol` of `want`, element by element.
pub fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "lengths differ: {got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w} (all: {got:?} vs {want:?})"
        );
    }
}

/// The bundled examples (`examples/*.weft`), sorted.
pub fn example_paths() -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut v: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "weft"))
        .collect();
    v.sort();
    v
}

/// A command running the `weft` binary built for this test run.
pub fn weft_command() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_weft"))
}

/// Runs `cmd` and returns its output, failing the test with the command's stderr when it
/// does not exit successfully.
pub fn output_ok(cmd: &mut std::process::Command) -> std::process::Output {
    let out = cmd.output().expect("the weft binary runs");
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The fused JIT executable of all of `g`'s outputs over its placeholders, default options.
pub fn jit_executable(g: &std::sync::Arc<Graph>) -> weft_compiler::JitExecutable {
    weft_compiler::JitExecutable::new(
        g.clone(),
        g.outputs(),
        &g.placeholders(),
        &JitOptions::default(),
    )
    .unwrap()
}
