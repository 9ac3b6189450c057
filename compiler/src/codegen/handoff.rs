//! The hand-off of finished machine code to the runtime — the only `unsafe` code in
//! weft-compiler; the crate denies `unsafe_code` everywhere else, so it cannot spread.
//!
//! Two sites remain, and neither can move into the runtime without making a safe runtime API
//! unsound or teaching the runtime Cranelift:
//! - [`hand_over`] calls [`CompiledKernel::from_code`]: the claim "this address is a kernel
//!   that touches only its declared buffers, within their lengths" is a claim about the code
//!   generator's output, which only the code generator can make. (The runtime does the rest:
//!   it turns the address into a function pointer, checks buffers, borrows and calls.) A safe
//!   runtime constructor taking an address would let any safe code run arbitrary memory.
//! - [`JitCode`]'s `Drop` calls Cranelift's `JITModule::free_memory`, which Cranelift declares
//!   `unsafe` (it invalidates every pointer into the module). The alternative — never freeing,
//!   which is what dropping a `JITModule` does — would leak the code of every kernel of every
//!   dropped executable.

#![allow(unsafe_code)]

use std::sync::Mutex;

use cranelift_jit::JITModule;
use weft_ir::loop_ir::Kernel;
use weft_runtime::{CompiledKernel, KernelCode, KernelSignature, RuntimeError};

/// Owns one kernel's JIT module, and so its code; frees the code on drop.
struct JitCode {
    module: Mutex<Option<JITModule>>,
    /// The entry point's address (an integer, so the owner is `Send + Sync` without `unsafe`).
    entry: usize,
    code_size: usize,
}

impl KernelCode for JitCode {
    fn entry_address(&self) -> *const u8 {
        self.entry as *const u8
    }

    fn code_size(&self) -> usize {
        self.code_size
    }
}

impl Drop for JitCode {
    fn drop(&mut self) {
        let module = self
            .module
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(module) = module {
            // SAFETY: `JitCode` lives only inside the `CompiledKernel` built by `hand_over`,
            // which holds the only copy of the entry pointer and drops this owner last, after
            // every call has returned (a call borrows the kernel); no code of the module runs
            // or runs again.
            unsafe { module.free_memory() };
        }
    }
}

/// Hands `kernel`'s finalized code — `entry`, a function of `module` with the translator's
/// `kernel_signature`, `code_size` bytes long — to the runtime.
///
/// Callers (only `JitCompiler::compile_inner`, behind `compile` and `compile_with_listing`) must pass a `kernel` that passed
/// `loop_ir::verify` and the entry that the translator compiled from it into `module`.
pub(super) fn hand_over(
    kernel: &Kernel,
    module: JITModule,
    entry: *const u8,
    code_size: usize,
) -> Result<CompiledKernel, RuntimeError> {
    let code = JitCode {
        module: Mutex::new(Some(module)),
        entry: entry as usize,
        code_size,
    };
    // SAFETY: `entry` is the finalized entry of a function declared with `kernel_signature`,
    // which is the C ABI signature `KernelEntry` on the host call convention, and `code` keeps
    // its module's memory mapped while the kernel lives. The code was translated from a kernel
    // that passed `verify`, so it accesses only the declared buffers, within their lengths,
    // per their access modes, and its parallel loop iterations are independent (the
    // annotation's contract, checked by the verifier).
    unsafe { CompiledKernel::from_code(KernelSignature::of(kernel), Box::new(code)) }
}
