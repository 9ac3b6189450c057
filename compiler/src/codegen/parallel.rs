//! Compiling a kernel's Cranelift functions — its own and those of the loops it outlined
//! (`translate/outline.rs`) — on the threads of a pool at once.
//!
//! Assumes every function is complete. Guarantees: each function's machine code, alignment
//! and relocations, in the order given, exactly as compiling them one after another would
//! produce them (each function is compiled alone by the same target; only the thread
//! differs). The pool's threads are already running: starting a thread cost 150 µs on the
//! shared machines measured, more than a small function's compile.

use cranelift_codegen::control::ControlPlane;
use cranelift_codegen::ir::Function;
use cranelift_codegen::isa::TargetIsa;
use cranelift_codegen::{Context, FinalizedMachReloc};
use std::sync::Mutex;
use weft_runtime::ThreadPool;

/// One compiled function.
pub(crate) struct CompiledFunction {
    /// The function (its names resolve the relocations).
    pub func: Function,
    /// Its machine code.
    pub code: Vec<u8>,
    /// The alignment its code needs.
    pub alignment: u64,
    /// Its relocations.
    pub relocs: Vec<FinalizedMachReloc>,
    /// Its disassembly, when asked for.
    pub disassembly: Option<String>,
}

/// Compiles `funcs` for `isa` (with disassembly when `disasm`), on `pool`'s threads when
/// there are several functions and threads, else one after another; the results in the order
/// of `funcs`. An error is the message of the first function that failed.
pub(crate) fn compile_all(
    isa: &dyn TargetIsa,
    funcs: Vec<Function>,
    disasm: bool,
    pool: Option<&ThreadPool>,
) -> Result<Vec<CompiledFunction>, String> {
    let Some(pool) = pool.filter(|p| p.threads() > 1 && funcs.len() > 1) else {
        return funcs
            .into_iter()
            .map(|f| compile_one(isa, f, disasm))
            .collect();
    };
    // Largest first: the pool hands items out in order, so the last to start is small.
    let items: Vec<(usize, Mutex<Option<Function>>)> = funcs
        .into_iter()
        .map(|f| (f.dfg.num_insts(), Mutex::new(Some(f))))
        .collect();
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(items[i].0));
    let results = pool.map(&order, |&i| {
        let f = items[i].1.lock().unwrap_or_else(|p| p.into_inner()).take();
        f.map(|f| compile_one(isa, f, disasm))
    });
    let mut out: Vec<(usize, Option<Result<CompiledFunction, String>>)> =
        order.into_iter().zip(results).collect();
    out.sort_by_key(|(i, _)| *i);
    out.into_iter()
        .map(|(_, r)| r.unwrap_or_else(|| Err("a function was not compiled".to_string())))
        .collect()
}

fn compile_one(
    isa: &dyn TargetIsa,
    func: Function,
    disasm: bool,
) -> Result<CompiledFunction, String> {
    let mut ctx = Context::for_function(func);
    ctx.set_disasm(disasm);
    let compiled = ctx
        .compile(isa, &mut ControlPlane::default())
        .map_err(|e| format!("{:?}", e.inner))?;
    let code = compiled.code_buffer().to_vec();
    let alignment = u64::from(compiled.buffer.alignment);
    let relocs = compiled.buffer.relocs().to_vec();
    let disassembly = compiled.vcode.clone();
    Ok(CompiledFunction {
        func: ctx.func,
        code,
        alignment,
        relocs,
        disassembly,
    })
}
