//! weft-runtime: device buffers (after seed 001: storage, re-pointable references, tensor
//! views), compiled-kernel handles and their invocation, with the parallel split across a
//! thread pool. It knows no code generator: kernels arrive as plain function pointers with an
//! owner object keeping their code alive.

mod element;
mod error;
mod kernel;
mod reference;
mod storage;
mod tensor;
mod thread_pool;

pub use element::Element;
pub use error::RuntimeError;
pub use kernel::{CompiledKernel, KernelEntry, KernelSignature, MAX_KERNEL_BUFFERS};
pub use reference::DeviceBufferReference;
pub use storage::{DeviceBufferStorage, STORAGE_ALIGNMENT};
pub use tensor::DeviceTensor;
pub use thread_pool::ThreadPool;
