//! weft-compiler: graph passes, lowering to loop IR, and Cranelift code generation — the only
//! crate that knows Cranelift.

pub mod codegen;
