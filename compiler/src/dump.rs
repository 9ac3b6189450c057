//! IR dumps: one numbered, human-readable file per compilation stage, and an index.
//!
//! Assumes a compiled executable's [`Stages`] (`JitExecutable::stages`). Guarantees: the stages come in pipeline order — the
//! input graph and the graph after simplify in the `.weft` text form (both re-parse and run),
//! fusion groups with the reason each boundary is stored, kernel programs, layouts, the buffer
//! plan (sizes, offsets, sharers, lifetimes, peak bytes against one buffer per tensor), the
//! GEMM calls (m, n, k, strides, blocks) when there are any, the steps of a run (kernels, GEMM
//! calls, and GEMM calls with their epilogue kernel as one step), the program the runtime runs
//! (`weft_runtime::Program`'s text form: storages, steps, how each array moves), then per
//! kernel its loop IR,
//! its Cranelift IR and its machine code disassembled — and
//! `index.txt` lists every file written with its stage. Reached by `weft compile --dump-dir`,
//! [`JitOptions::dump`](crate::JitOptions::dump) and the `WEFT_DUMP=DIR` environment variable.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use weft_ir::Graph;

use crate::codegen::{CodegenOptions, JitCompiler};
use crate::lower::LoweredKernel;
use crate::pipeline::CompiledPlan;
use weft_runtime::Program;

/// What a dump shows of a compiled executable.
#[derive(Clone, Copy, Debug)]
pub struct Stages<'a> {
    /// The graph it was compiled from.
    pub source: &'a Graph,
    /// The passes' results.
    pub compiled: &'a CompiledPlan,
    /// Its kernels' loop IR.
    pub lowered: &'a [LoweredKernel],
    /// The program the runtime runs.
    pub program: &'a Program,
    /// The code generator's switches its kernels were compiled with.
    pub codegen: CodegenOptions,
    /// Its thread count (the listings are compiled for the same pool).
    pub threads: usize,
}

/// One dumped stage.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DumpFile {
    /// The file name, numbered in pipeline order (`03-fusion.txt`).
    pub name: String,
    /// The stage it shows (`input`, `simplify`, `fusion`, `kernels`, `layout`, `buffers`,
    /// `gemm`, `steps`, `program`, `loop-ir`, `clif`, `asm`), which `--dump-pass` filters on.
    pub stage: String,
    /// The text.
    pub contents: String,
}

/// Why a dump could not be written.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// The folder or a file could not be written.
    #[error("cannot write dump file {path}: {message}")]
    Write {
        /// The path at fault.
        path: PathBuf,
        /// What the file system said.
        message: String,
    },
    /// A kernel could not be compiled again for its listing.
    #[error("cannot list kernel {kernel}: {message}")]
    Listing {
        /// The kernel's name.
        kernel: String,
        /// What failed.
        message: String,
    },
}

/// Every stage of an executable (`exe.stages(source)`), in pipeline order.
pub fn dump_stages(exe: &Stages<'_>) -> Result<Vec<DumpFile>, DumpError> {
    let (source, plan) = (exe.source, exe.compiled);
    let g = &plan.simplified.graph;
    let mut files = Vec::new();
    let mut push = |stage: &str, ext: &str, suffix: &str, contents: String| {
        let name = format!("{:02}-{stage}{suffix}.{ext}", files.len());
        files.push(DumpFile {
            name,
            stage: stage.to_string(),
            contents,
        });
    };
    push("input", "weft", "", weft_ir::text::print(source));
    push(
        "simplify",
        "weft",
        "",
        format!("# {:?}\n{}", plan.simplified.stats, weft_ir::text::print(g)),
    );
    push("fusion", "txt", "", plan.fusion.display(g));
    let mut programs = String::new();
    for k in &plan.kernels {
        programs += &k.display(g);
    }
    push("kernels", "txt", "", programs);
    push("layout", "txt", "", plan.layouts.display(g));
    push("buffers", "txt", "", plan.buffers.display(g));
    if plan.gemms.iter().any(Option::is_some) {
        push("gemm", "txt", "", plan.gemm_display());
    }
    push("steps", "txt", "", exe.program.steps_text());
    push("program", "txt", "", exe.program.to_string());
    // The executable's own switches and threads, so the listings are the code it runs.
    let compiler = JitCompiler::with_options(CodegenOptions {
        disassemble: true,
        ..exe.codegen
    })
    .map_err(|e| DumpError::Listing {
        kernel: "(host)".into(),
        message: e.to_string(),
    })?
    .with_pool(weft_runtime::pool_of(exe.threads));
    for lk in exe.lowered {
        let name = lk.kernel.name.clone();
        let suffix = format!("-{name}");
        push("loop-ir", "lir", &suffix, lk.kernel.to_string());
        let (_, listing) =
            compiler
                .compile_with_listing(&lk.kernel)
                .map_err(|e| DumpError::Listing {
                    kernel: name.clone(),
                    message: e.to_string(),
                })?;
        push("clif", "clif", &suffix, listing.clif);
        push(
            "asm",
            "s",
            &suffix,
            format!(
                "; {} bytes of machine code\n{}",
                listing.code_size,
                listing.disassembly.unwrap_or_default()
            ),
        );
    }
    Ok(files)
}

/// Writes the files `keep` accepts into `dir` (created if missing), and `index.txt` listing
/// them; returns the paths written, index last.
pub fn write_dump(
    dir: &Path,
    files: &[DumpFile],
    keep: impl Fn(&DumpFile) -> bool,
) -> Result<Vec<PathBuf>, DumpError> {
    let fail = |path: &Path, e: std::io::Error| DumpError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
    let mut written = Vec::new();
    let mut index = String::from("# weft IR dump: file, stage\n");
    for f in files.iter().filter(|f| keep(f)) {
        let path = dir.join(&f.name);
        std::fs::write(&path, &f.contents).map_err(|e| fail(&path, e))?;
        index += &format!("{}\t{}\n", f.name, f.stage);
        written.push(path);
    }
    let path = dir.join("index.txt");
    std::fs::write(&path, index).map_err(|e| fail(&path, e))?;
    written.push(path);
    Ok(written)
}

/// The folder the next computation compiled with dumping on writes into: `dir/cN`, `N`
/// counting computations in this process, so several never overwrite each other.
pub(crate) fn next_dump_dir(dir: &Path) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    dir.join(format!("c{}", NEXT.fetch_add(1, Ordering::Relaxed)))
}
