//! A steady-state kernel call allocates nothing: a counting global allocator observes zero
//! allocations across repeated calls, on the calling thread and through a thread pool, once
//! the kernel, buffers and pool exist. (One test per binary: the allocator is process-wide.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use weft_compiler::codegen::JitCompiler;
use weft_ir::loop_ir::{parse_kernel, ScalarType};
use weft_runtime::{DeviceBufferReference, DeviceBufferStorage, ThreadPool};

struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged, only counting calls.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

#[test]
fn steady_state_calls_allocate_nothing() {
    let kernel = parse_kernel(
        "alloc",
        "kernel @scale_rows {
  buffer %x: f32[64] read
  buffer %y: f32[64] write
  loop %r in 0..8 parallel {
    acc %s: sum f32
    loop %j in 0..8 vectorize {
      %v: f32 = load %x[8*%r + %j]
      reduce %s, %v
    }
    %t: f32 = acc.value %s
    loop %k in 0..8 vectorize {
      %w: f32 = load %x[8*%r + %k]
      %e: f32 = exp %w
      %o: f32 = mul %e, %t
      store %y[8*%r + %k], %o
    }
  }
}",
    )
    .unwrap();
    let compiled = JitCompiler::new().unwrap().compile(&kernel).unwrap();
    let x = DeviceBufferStorage::from_slice(&[0.5f32; 64]).unwrap();
    let y = DeviceBufferStorage::new(ScalarType::F32, 64).unwrap();
    let xr = DeviceBufferReference::to_storage("x", x);
    let yr = DeviceBufferReference::to_storage("y", Arc::clone(&y));
    let pool = ThreadPool::new(2);
    let buffers = [&xr, &yr];
    compiled.call(&buffers).unwrap();
    compiled.call_on(&pool, &buffers).unwrap();

    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..100 {
        compiled.call(&buffers).unwrap();
        compiled.call_on(&pool, &buffers).unwrap();
    }
    let after = ALLOCATIONS.load(Ordering::SeqCst);
    assert_eq!(after - before, 0, "steady-state calls allocated");
    let expected = 0.5f32.exp() * 4.0;
    assert!(y
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .all(|v| (v - expected).abs() < 1e-5));
}
