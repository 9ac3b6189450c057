//! `.npy` files: a write/read round trip for every dtype, `.npy` inputs to a computation, and
//! the errors for files of the wrong shape, rank or dtype.

mod common;
use common::*;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use weft::prelude::*;
use weft::HostError;

/// A fresh path in the system temp directory, unique to this process and call.
fn temp_path(stem: &str) -> PathBuf {
    static COUNT: AtomicUsize = AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, Ordering::SeqCst);
    std::env::temp_dir().join(format!("weft-test-{}-{stem}-{n}.npy", std::process::id()))
}

/// Removes the file when dropped, so failing tests leave nothing behind either.
struct TempFile(PathBuf);
impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn axes2() -> (Graph, Axis, Axis) {
    let mut g = Graph::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    (g, a, b)
}

#[test]
fn round_trip_every_dtype() {
    let (_g, a, b) = axes2();
    let arrays = [
        arr(
            &[a, b],
            &[2, 3],
            vec![0.5f32, -1.0, 2.25, f32::MAX, f32::MIN_POSITIVE, -0.0],
        ),
        arr(
            &[a, b],
            &[2, 3],
            vec![0.1f64, -1e300, 3.0, f64::INFINITY, 5.0, 6.0],
        ),
        arr(&[a, b], &[2, 3], vec![1i32, -2, i32::MAX, i32::MIN, 0, 7]),
        arr(&[a, b], &[2, 3], vec![1i64, -2, i64::MAX, i64::MIN, 0, 7]),
        arr(
            &[a, b],
            &[2, 3],
            vec![true, false, true, true, false, false],
        ),
        arr(&[b, a], &[3, 2], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]),
    ];
    for x in arrays {
        let file = TempFile(temp_path(x.dtype().name()));
        x.write_npy(&file.0).unwrap();
        let back = HostArray::read_npy(&file.0, x.axes().clone()).unwrap();
        assert_eq!(back, x, "{} round trip", x.dtype());
    }
    let s = HostArray::scalar(2.5f64);
    let file = TempFile(temp_path("scalar"));
    s.write_npy(&file.0).unwrap();
    assert_eq!(HostArray::read_npy(&file.0, Axes::scalar()).unwrap(), s);
}

/// x(A, B) + 1 as a computation.
fn plus_one() -> (Transformer, Computation, Axis, Axis) {
    let g = GraphBuilder::new();
    let a = g.axis("A", 2).unwrap();
    let b = g.axis("B", 3).unwrap();
    let x = g.placeholder("x", &[a, b], DType::F32).unwrap();
    let y = (x + 1.0).unwrap().id();
    let x = x.id();
    let t = Transformer::new(g.finish(), Backend::Interpreter).unwrap();
    let c = t.computation(&[y], &[x]).unwrap();
    (t, c, a, b)
}

#[test]
fn npy_files_as_inputs() {
    let (_t, c, a, b) = plus_one();
    let file = TempFile(temp_path("input"));
    arr(&[a, b], &[2, 3], vec![1f32, 2., 3., 4., 5., 6.])
        .write_npy(&file.0)
        .unwrap();
    let x = HostArray::read_npy(&file.0, Axes::new([a, b]).unwrap()).unwrap();
    let out = c.call(&[x]).unwrap();
    assert_eq!(f32s(&out[0]), vec![2., 3., 4., 5., 6., 7.]);
    // The same file read as (B, A) has the wrong lengths: named by placeholder and axis.
    let x = HostArray::read_npy(&file.0, Axes::new([b, a]).unwrap()).unwrap();
    let err = c.call(&[x]).unwrap_err();
    assert!(matches!(err, weft::Error::InputLength { ref tensor, .. } if tensor == "x"));
    assert!(err.to_string().contains("`x`"), "{err}");
}

#[test]
fn npy_of_the_wrong_shape_rank_or_dtype() {
    let (_t, c, a, b) = plus_one();
    // Wrong shape.
    let file = TempFile(temp_path("shape"));
    arr(&[a, b], &[2, 4], vec![0f32; 8])
        .write_npy(&file.0)
        .unwrap();
    let x = HostArray::read_npy(&file.0, Axes::new([a, b]).unwrap()).unwrap();
    let err = c.call(&[x]).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::InputLength { ref axis, expected: 3, got: 4, .. } if axis == "B"
    ));
    // Wrong rank: refused when read, naming the file.
    let err = HostArray::read_npy(&file.0, Axes::new([a]).unwrap()).unwrap_err();
    assert!(matches!(err, HostError::Npy { .. }));
    let msg = err.to_string();
    assert!(
        msg.contains("rank 2") && msg.contains(&file.0.display().to_string()),
        "{msg}"
    );
    // Wrong dtype.
    let file = TempFile(temp_path("dtype"));
    arr(&[a, b], &[2, 3], vec![0i64; 6])
        .write_npy(&file.0)
        .unwrap();
    let x = HostArray::read_npy(&file.0, Axes::new([a, b]).unwrap()).unwrap();
    let err = c.call(&[x]).unwrap_err();
    assert!(matches!(
        err,
        weft::Error::InputDType {
            expected: DType::F32,
            got: DType::I64,
            ..
        }
    ));
    assert!(err.to_string().contains("`x`"));
}

#[test]
fn unreadable_npy_files() {
    let (_g, a, _b) = axes2();
    // A dtype weft does not read (u16), in a hand-made version 1.0 file.
    let header = "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }";
    let mut padded = header.to_string();
    while !(10 + padded.len() + 1).is_multiple_of(64) {
        padded.push(' ');
    }
    padded.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((padded.len() as u16).to_le_bytes());
    bytes.extend(padded.as_bytes());
    bytes.extend([1u8, 0, 2, 0]);
    let file = TempFile(temp_path("u16"));
    std::fs::write(&file.0, bytes).unwrap();
    let err = HostArray::read_npy(&file.0, Axes::new([a]).unwrap()).unwrap_err();
    assert!(matches!(err, HostError::Npy { .. }));
    assert!(err.to_string().contains("unsupported"), "{err}");
    // Not a .npy file at all.
    std::fs::write(&file.0, b"hello").unwrap();
    let err = HostArray::read_npy(&file.0, Axes::new([a]).unwrap()).unwrap_err();
    assert!(matches!(err, HostError::Npy { .. }), "{err}");
    // A missing file names its path.
    let missing = temp_path("missing");
    let err = HostArray::read_npy(&missing, Axes::new([a]).unwrap()).unwrap_err();
    assert!(matches!(err, HostError::Io { .. }));
    assert!(err.to_string().contains(&missing.display().to_string()));
}
