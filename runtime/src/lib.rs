#![warn(missing_docs)]
//! weft-runtime: running graphs. It holds the state of variables and persistent tensors
//! ([`State`]), the contract every backend's compiled form meets ([`Executable`]), the set of
//! nodes one computation evaluates ([`Plan`]), the reference interpreter ([`interp`]) — the
//! correctness oracle for every other backend — and device buffers after docs/design.md (storage,
//! re-pointable references, tensor views) with compiled-kernel handles and their invocation
//! across a thread pool, and GEMM calls ([`GemmCall`]: a planned contraction run by the
//! `gemm` crate over the same buffers and pool). It depends on weft-ir only and knows no code generator: kernels arrive
//! as [`KernelCode`]: an entry address and the owner of the memory holding the code.

pub mod error;
pub mod executable;
pub mod extreme;
pub mod extreme_rows;
pub mod interp;
pub mod plan;
pub mod prefetch;
pub mod program;
pub mod routines;
pub mod span_sum;
pub mod state;
pub mod stream;
pub mod target;
pub mod transpose;
pub mod vmath;

mod binding;
mod device_error;
mod element;
mod gemm;
mod gemm_float;
mod gemm_stage;
mod gemm_tiles;
mod kernel;
mod reference;
mod signature;
mod storage;
mod tensor;
mod thread_pool;

pub use binding::{copy_array, BindScope, HostBindings, NoSlot};
pub use device_error::RuntimeError;
pub use element::Element;
pub use error::RunError;
pub use executable::Executable;
pub use gemm::{
    longest_f32_chain, BatchAxis, GemmCall, GemmEpilogue, GemmSpec, GemmTap, MatrixView, SplitDim,
};
pub use interp::{Interpreter, Perturbation};
pub use kernel::{CompiledKernel, KernelCode, STACK_TABLE};
pub use plan::Plan;
pub use program::{NativeExecutable, Program, ResidentRun};
pub use reference::DeviceBufferReference;
pub use signature::{AccessPattern, Footprint, KernelEntry, KernelSignature};
pub use state::{SharedState, State, StateAccess, StateView};
pub use storage::{
    advise_huge_pages, default_memory_budget, host_copy_bytes, physical_memory_bytes,
    zeroed_host_data, DeviceBufferStorage, HUGE_PAGE_MIN_BYTES, STORAGE_ALIGNMENT,
};
pub use target::{Isa, Target, TargetError};
pub use tensor::DeviceTensor;
pub use thread_pool::{default_threads, pool_of, shared_pool, ThreadPool, MAX_THREADS};
