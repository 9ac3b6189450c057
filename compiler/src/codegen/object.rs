//! Kernels as a relocatable object file: the machine code of ahead-of-time compilation, from
//! Cranelift's object back end (`cranelift-object`) instead of the JIT's memory.
//!
//! Assumes: kernels that passed `loop_ir::verify` (checked again here), each with the strategy
//! the compiler records for it. Guarantees: kernel `i` is the exported function
//! [`kernel_symbol`]`(prefix, i)` with the kernel entry signature (`weft_runtime::KernelEntry`)
//! and the same translation as the JIT's for the same options, compiled position-independent
//! for this host's CPU features; its outlined loops and leaf loops are local functions; the
//! runtime functions it calls are undefined symbols named as in
//! [`weft_runtime::routines::ROUTINES`], for the linker to resolve against a runtime that
//! exports them. Nothing here runs the code.

use cranelift_object::{ObjectBuilder, ObjectModule};
use weft_ir::loop_ir::Kernel;

use super::host::object_isa;
use super::{CodegenError, JitCompiler, KernelStrategy};

/// The symbol of kernel `index` in an object of `prefix`.
pub fn kernel_symbol(prefix: &str, index: usize) -> String {
    format!("{prefix}_k{index}")
}

/// An object file's bytes and what it holds.
#[derive(Clone, Debug)]
pub struct ObjectCode {
    /// The object file (ELF on Linux), to write to disk as is.
    pub bytes: Vec<u8>,
    /// Per kernel, in order, its symbol.
    pub symbols: Vec<String>,
    /// The bytes of machine code in it.
    pub code_size: usize,
}

impl JitCompiler {
    /// `kernels` (each with the strategy recorded for it) compiled into one object file whose
    /// symbols start with `prefix` (a C identifier): see the module docs.
    pub fn emit_object(
        &self,
        kernels: &[(&Kernel, &KernelStrategy)],
        prefix: &str,
    ) -> Result<ObjectCode, CodegenError> {
        let error = |e: String| CodegenError::Cranelift {
            kernel: prefix.to_string(),
            message: e,
        };
        let (isa, _) = object_isa()?;
        let builder = ObjectBuilder::new(isa, prefix, cranelift_module::default_libcall_names())
            .map_err(|e| error(e.to_string()))?;
        let mut module = ObjectModule::new(builder);
        let mut symbols = Vec::with_capacity(kernels.len());
        let mut code_size = 0;
        for (i, (kernel, strategy)) in kernels.iter().enumerate() {
            let name = kernel_symbol(prefix, i);
            let (_, listing) = self.define(kernel, strategy, &mut module, &name, false)?;
            code_size += listing.code_size;
            symbols.push(name);
        }
        let bytes = module.finish().emit().map_err(|e| error(e.to_string()))?;
        Ok(ObjectCode {
            bytes,
            symbols,
            code_size,
        })
    }
}
