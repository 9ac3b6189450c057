//! A compiled kernel is `Send + Sync`: several threads calling it at once, each on its own
//! buffers (and some sharing a read-only input, and one pool), all get the correct result;
//! results are bit-identical for a given thread count; conflicting use of one storage is a
//! typed error, not a data race.

use std::sync::Arc;

use weft_compiler::codegen::JitCompiler;
use weft_ir::loop_ir::{parse_kernel, ScalarType};
use weft_runtime::{
    CompiledKernel, DeviceBufferReference, DeviceBufferStorage, RuntimeError, ThreadPool,
};

fn assert_send_sync<T: Send + Sync>() {}

const TEXT: &str = "kernel @row_sums {
  buffer %x: f32[4000] read
  buffer %y: f32[40] write
  loop %r in 0..40 parallel {
    acc %s: sum f32
    loop %j in 0..100 vectorize unroll(4) {
      %v: f32 = load %x[100*%r + %j]
      %t: f32 = tanh %v
      reduce %s, %t
    }
    %o: f32 = acc.value %s
    store %y[%r], %o
  }
}";

#[test]
fn concurrent_calls_give_correct_deterministic_results() {
    assert_send_sync::<CompiledKernel>();
    let compiled = Arc::new(
        JitCompiler::new()
            .unwrap()
            .compile(&parse_kernel("c", TEXT).unwrap())
            .unwrap(),
    );
    let input: Vec<f32> = (0..4000)
        .map(|i| ((i * 37 % 101) as f32 - 50.0) / 25.0)
        .collect();
    let expected: Vec<f64> = (0..40)
        .map(|r| (0..100).map(|j| f64::from(input[100 * r + j]).tanh()).sum())
        .collect();
    let shared_x = Arc::new(DeviceBufferReference::to_storage(
        "x",
        DeviceBufferStorage::from_slice(&input).unwrap(),
    ));
    let pool = Arc::new(ThreadPool::new(2));
    let results: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|t| {
                let (compiled, shared_x, pool) = (
                    Arc::clone(&compiled),
                    Arc::clone(&shared_x),
                    Arc::clone(&pool),
                );
                scope.spawn(move || {
                    let y = DeviceBufferStorage::new(ScalarType::F32, 40).unwrap();
                    let yr = DeviceBufferReference::to_storage("y", Arc::clone(&y));
                    for _ in 0..50 {
                        if t % 2 == 0 {
                            compiled.call(&[&shared_x, &yr]).unwrap();
                        } else {
                            compiled.call_on(&pool, &[&shared_x, &yr]).unwrap();
                        }
                    }
                    y.to_vec::<f32>().unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for y in &results {
        for (got, want) in y.iter().zip(&expected) {
            assert!(
                (f64::from(*got) - want).abs() < 1e-4 * want.abs().max(1.0),
                "{got} vs {want}"
            );
        }
    }
    // The split depends only on the thread count: bit-identical results per count.
    assert_eq!(results[0], results[2]);
    assert_eq!(results[1], results[3]);
}

#[test]
fn wrong_buffers_are_typed_errors() {
    let compiled = JitCompiler::new()
        .unwrap()
        .compile(&parse_kernel("c", TEXT).unwrap())
        .unwrap();
    let x = DeviceBufferReference::to_storage(
        "x",
        DeviceBufferStorage::new(ScalarType::F32, 4000).unwrap(),
    );
    let short = DeviceBufferReference::to_storage(
        "y",
        DeviceBufferStorage::new(ScalarType::F32, 39).unwrap(),
    );
    match compiled.call(&[&x, &short]) {
        Err(RuntimeError::BufferMismatch {
            buffer,
            len: 40,
            actual_len: 39,
            ..
        }) => assert_eq!(buffer, "y"),
        other => panic!("expected a buffer mismatch, got {other:?}"),
    }
    let ints = DeviceBufferReference::to_storage(
        "y",
        DeviceBufferStorage::new(ScalarType::I32, 40).unwrap(),
    );
    assert!(matches!(
        compiled.call(&[&x, &ints]),
        Err(RuntimeError::BufferMismatch { .. })
    ));
    assert!(matches!(
        compiled.call(&[&x]),
        Err(RuntimeError::BufferCount {
            expected: 2,
            actual: 1,
            ..
        })
    ));
}

#[test]
fn writing_into_a_storage_read_by_the_same_call_in_place_works() {
    // In-place update: one storage bound to a read and a readwrite parameter is borrowed once.
    let text = "kernel @double {
  buffer %x: f64[5] read
  buffer %y: f64[5] readwrite
  loop %i in 0..5 vectorize {
    %a: f64 = load %x[%i]
    %b: f64 = add %a, %a
    store %y[%i], %b
  }
}";
    let compiled = JitCompiler::new()
        .unwrap()
        .compile(&parse_kernel("d", text).unwrap())
        .unwrap();
    let s = DeviceBufferStorage::from_slice(&[1.0f64, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let a = DeviceBufferReference::to_storage("x", Arc::clone(&s));
    let b = DeviceBufferReference::to_storage("y", Arc::clone(&s));
    compiled.call(&[&a, &b]).unwrap();
    assert_eq!(s.to_vec::<f64>().unwrap(), vec![2.0, 4.0, 6.0, 8.0, 10.0]);
}

#[test]
fn double_buffering_by_repointing() {
    let compiled = JitCompiler::new()
        .unwrap()
        .compile(&parse_kernel("c", TEXT).unwrap())
        .unwrap();
    let front = DeviceBufferStorage::from_slice(&vec![1.0f32; 4000]).unwrap();
    let back = DeviceBufferStorage::from_slice(&vec![-1.0f32; 4000]).unwrap();
    let x = DeviceBufferReference::to_storage("x", front);
    let y_store = DeviceBufferStorage::new(ScalarType::F32, 40).unwrap();
    let y = DeviceBufferReference::to_storage("y", Arc::clone(&y_store));
    compiled.call(&[&x, &y]).unwrap();
    let first = y_store.to_vec::<f32>().unwrap()[0];
    x.repoint(back).unwrap();
    compiled.call(&[&x, &y]).unwrap();
    let second = y_store.to_vec::<f32>().unwrap()[0];
    assert!((first - 100.0 * 1f32.tanh()).abs() < 1e-3);
    assert!((second + first).abs() < 1e-6);
}
