//! How to compile a JIT executable ([`JitOptions`]) and why it could not be ([`JitError`]).

use crate::codegen::{CodegenError, CodegenOptions, Outline};
use crate::gemm::GemmOptions;
use crate::lower::{LowerError, LowerOptions};
use crate::passes::PassError;
use weft_ir::{Axis, NodeId};
use weft_runtime::{RunError, MAX_THREADS};

/// Why a computation could not be compiled for the JIT.
#[derive(Debug, thiserror::Error)]
pub enum JitError {
    /// The computation's signature is invalid (see [`Plan::new`](weft_runtime::Plan::new)).
    #[error(transparent)]
    Plan(#[from] RunError),
    /// A pass refused the graph.
    #[error(transparent)]
    Pass(#[from] PassError),
    /// A kernel program could not be lowered to the loop IR.
    #[error(transparent)]
    Lower(#[from] LowerError),
    /// Code generation failed.
    #[error(transparent)]
    Codegen(#[from] CodegenError),
    /// The IR dump asked for could not be written.
    #[error(transparent)]
    Dump(#[from] crate::dump::DumpError),
    /// [`JitOptions::threads`] is not a thread count a pool can have.
    #[error("JitOptions::threads = {requested}: a pool runs 1 to {MAX_THREADS} threads")]
    Threads {
        /// The count asked for.
        requested: usize,
    },
}

/// How to compile a JIT executable.
///
/// ```
/// use weft::compiler::JitOptions;
/// // Two threads, fused; `JitOptions::unfused()` is the one-kernel-per-op baseline.
/// let options = JitOptions { threads: Some(2), ..JitOptions::default() };
/// assert!(options.fused && !JitOptions::unfused().fused);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JitOptions {
    /// Fusion and storage sharing (off: one kernel per op, every intermediate stored).
    pub fused: bool,
    /// Lowering switches.
    pub lower: LowerOptions,
    /// Code generation switches.
    pub codegen: CodegenOptions,
    /// Axis orders (major to minor) for some placeholders and outputs, by node of the graph
    /// handed to [`JitExecutable::new`](crate::JitExecutable::new); the others are row-major in their declared axes order
    /// ([`PlanOptions::layouts`](crate::PlanOptions::layouts)). Callers still pass and receive arrays in the declared order:
    /// such an input is transposed into its layout on the way in (a copy that allocates), such
    /// an output gathered on the way out.
    pub layouts: Vec<(NodeId, Vec<Axis>)>,
    /// Write every stage's IR (crate::dump) into a numbered subfolder `cN` of this folder.
    /// Unset, the `WEFT_DUMP` environment variable names the folder, for host programs that
    /// cannot change their code.
    pub dump: Option<std::path::PathBuf>,
    /// A memory budget in bytes: compilation fails with [`RunError::MemoryBudget`] when a run
    /// would need more (its workspace — planned buffers at their peak sharing, inputs, state,
    /// constants, outputs, row scratch — plus the inputs' and outputs' host arrays), before
    /// anything of that size is allocated. The default ([`weft_runtime::default_memory_budget`]) is the
    /// `WEFT_MAX_BYTES` environment variable (a byte count), else the machine's physical
    /// memory (no budget where it cannot be read): the system grants each allocation up to
    /// that size on its own, and would kill the process whose allocations together exceed it.
    pub max_bytes: Option<u64>,
    /// Threads that run this computation's parallel kernels, the calling thread included
    /// (1 to [`MAX_THREADS`]; anything else is [`JitError::Threads`]). `None` (the default)
    /// takes the `WEFT_NUM_THREADS` environment variable if it holds such a count (anything
    /// else is ignored with a warning on stderr), else the machine's
    /// [`std::thread::available_parallelism`] ([`default_threads`](weft_runtime::default_threads)). Computations with the same
    /// count share one pool ([`pool_of`](weft_runtime::pool_of)). Results do not depend on it: parallel loops split
    /// independent iterations, and a split reduction's chunks are fixed by
    /// [`LowerOptions::split_chunks`], not by the thread count.
    pub threads: Option<usize>,
    /// Which dots a GEMM call computes instead of a JIT loop nest (crate::gemm; `None`: none).
    /// Fused and unfused alike.
    pub gemm: Option<GemmOptions>,
    /// Whether a GEMM call and the kernel after it run as one step, the kernel on each row
    /// block of the GEMM's result as soon as it is computed (crate::epilogue; default true).
    /// Results are the same either way.
    pub epilogue: bool,
    /// Whether consecutive kernels whose parallel loops cut the same columns into the same
    /// blocks run as one kernel, block by block (crate::chain; default true). Results are the
    /// same either way.
    pub chain: bool,
    /// Fold constant-only subgraphs with the reference interpreter at compile time (default
    /// true; [`PlanOptions::fold_constants`](crate::PlanOptions::fold_constants)). The oracle tests turn it off on one
    /// configuration, so that the JIT computes those subgraphs instead of copying the
    /// interpreter's values (docs/testing.md).
    pub fold_constants: bool,
}

impl Default for JitOptions {
    fn default() -> Self {
        JitOptions {
            fused: true,
            lower: LowerOptions::default(),
            codegen: CodegenOptions::default(),
            layouts: Vec::new(),
            dump: None,
            max_bytes: weft_runtime::default_memory_budget(),
            threads: None,
            gemm: Some(GemmOptions::default()),
            epilogue: true,
            chain: true,
            fold_constants: true,
        }
    }
}

impl JitOptions {
    /// The unfused baseline: one kernel per op, every intermediate in a buffer of its own —
    /// a GEMM call too, so no epilogue runs inside it ([`JitOptions::epilogue`] off): the
    /// fused/unfused ratio shows what fusion, epilogues included, buys.
    pub fn unfused() -> Self {
        JitOptions {
            fused: false,
            epilogue: false,
            chain: false,
            ..JitOptions::default()
        }
    }

    /// Fused, with every kernel of two or more outer points parallel (row kernels in two
    /// chunks), every reduction that may be split split in two, and loop nests outlined
    /// wherever they may be ([`Outline::Every`]): small graphs then take the parallel, split
    /// and outlined paths that only large ones reach by default — how the tests and the
    /// fuzzer check that those paths compute what the interpreter does.
    pub fn forced_parallel() -> Self {
        JitOptions {
            lower: LowerOptions {
                parallel_min_points: 1,
                parallel_max_chunks: 2,
                split_min_terms: 1,
                split_chunks: 2,
                ..LowerOptions::default()
            },
            codegen: CodegenOptions {
                outline: Outline::Every,
                ..CodegenOptions::default()
            },
            ..JitOptions::default()
        }
    }
}
