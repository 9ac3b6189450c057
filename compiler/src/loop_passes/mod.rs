//! The loop-IR passes: rewrites of a lowered kernel, run by `crate::lower` in this order
//! ([`PASSES`], the one list):
//!
//! 1. [`memory_order`] — reorders a perfect nest of result loops so a large operand's rows
//!    are read in memory order. Assumes lowering's nest, before 2 and 4.
//! 2. [`reduce_in_memory`] — sums over a strided axis with a row of accumulators in scratch,
//!    the operand read in memory order (f32 sums in f32 rows with an f64 re-run). Assumes
//!    lowering's nest, before 4; adds scratch rows.
//! 3. [`span_fission`] — splits a vector loop adding span functions of its terms into one
//!    loop per term, so native span routines compute them. Assumes vectorised loops and that
//!    span functions run natively; adds scratch spans.
//! 4. [`register_blocking`] — vectorises a result loop around a reduction that would gather.
//!    Assumes 1–3 are done (it only changes annotations).
//! 5. [`tile`] — cuts a transposing copy into square blocks. Assumes a perfect nest of lets
//!    and stores.
//! 6. [`peel_masks`] — cuts a vector loop of lets and stores where its masks and index
//!    comparisons change (a padded copy's borders), folding them in each piece. Assumes 5 is
//!    done (a cut nest is no longer perfect).
//! 7. [`narrow_sums`] — marks f64 sums of widened f32 terms `partials f32`. Assumes the final
//!    annotations (the vector plan it asks for is code generation's), so it runs last.
//!
//! Every pass has one signature ([`LoopPass::run`]): the kernel (its body in place), a
//! [`PassContext`], and back a [`PassOutcome`] — the scratch buffers it declared (in order;
//! the caller binds each as private accumulators), a line per rewrite for `weft explain`, and
//! whether anything changed. Each guarantees that every result is the same value as before
//! (up to the bounds docs/numerics.md states for narrowed f32 sums) and that a verified
//! kernel stays verifiable. `compiler/tests/loop_passes/*.lir` hold a before/after filetest
//! per pass.

pub mod blocks;
pub mod memory_order;
pub mod narrow_sums;
pub mod peel_masks;
pub mod reduce_in_memory;
pub mod register_blocking;
pub mod span_fission;
pub mod thresholds;
pub mod tile;

use weft_ir::loop_ir::{BufferId, Kernel, LoopId};

/// The switches of the loop-IR passes (from `LowerOptions`, which documents each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PassOptions {
    /// Innermost loops may be vectorised (`LowerOptions::vectorize`).
    pub vectorize: bool,
    /// `LowerOptions::rows_in_memory_order`.
    pub rows_in_memory_order: bool,
    /// `LowerOptions::reduce_in_memory`.
    pub reduce_in_memory: bool,
    /// `LowerOptions::split_span_sums`.
    pub split_span_sums: bool,
    /// `LowerOptions::tile_transposes`.
    pub tile_transposes: bool,
    /// `LowerOptions::narrow_f32_sums`.
    pub narrow_f32_sums: bool,
    /// The least strided operand (bytes) summed in memory order
    /// (`LowerOptions::reduce_in_memory_min_bytes`).
    pub strided_sum_min_bytes: u64,
}

impl Default for PassOptions {
    fn default() -> Self {
        PassOptions {
            vectorize: true,
            rows_in_memory_order: true,
            reduce_in_memory: true,
            split_span_sums: true,
            tile_transposes: true,
            narrow_f32_sums: true,
            strided_sum_min_bytes: thresholds::STRIDED_SUM_MIN_BYTES,
        }
    }
}

/// What a pass may read besides the kernel.
#[derive(Clone, Copy, Debug, Default)]
pub struct PassContext<'a> {
    /// The switches.
    pub options: PassOptions,
    /// Innermost reduction loops lowering keeps in the interpreter's order
    /// (`LowerOptions::reassociate_f64_sums`): never vectorised themselves.
    pub ordered_reductions: &'a [LoopId],
}

/// What a pass did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOutcome {
    /// Scratch buffers it declared, in order: each bound as private accumulators.
    pub scratch: Vec<BufferId>,
    /// A line per rewrite, for `weft explain`.
    pub notes: Vec<String>,
    /// Whether the kernel changed.
    pub changed: bool,
}

impl PassOutcome {
    /// Notes only: changed where there are any.
    pub fn notes(notes: Vec<String>) -> PassOutcome {
        PassOutcome {
            changed: !notes.is_empty(),
            scratch: Vec::new(),
            notes,
        }
    }

    fn absorb(&mut self, other: PassOutcome) {
        self.scratch.extend(other.scratch);
        self.notes.extend(other.notes);
        self.changed |= other.changed;
    }
}

/// One loop-IR pass: its name (the filetests' `; pass:` line), when the options run it, and
/// the rewrite.
#[derive(Clone, Copy)]
pub struct LoopPass {
    /// The pass's name.
    pub name: &'static str,
    /// Whether `options` run it.
    pub enabled: fn(&PassOptions) -> bool,
    /// The rewrite.
    pub run: fn(&mut Kernel, &PassContext<'_>) -> PassOutcome,
}

impl std::fmt::Debug for LoopPass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// The loop-IR passes in the order they run (module docs).
pub const PASSES: [LoopPass; 7] = [
    LoopPass {
        name: "memory_order",
        enabled: |o| o.rows_in_memory_order,
        run: memory_order::run,
    },
    LoopPass {
        name: "reduce_in_memory",
        enabled: |o| o.reduce_in_memory,
        run: reduce_in_memory::run,
    },
    LoopPass {
        name: "span_fission",
        enabled: |o| o.vectorize && o.split_span_sums,
        run: span_fission::run,
    },
    LoopPass {
        name: "register_blocking",
        enabled: |o| o.vectorize,
        run: register_blocking::block_over_results,
    },
    LoopPass {
        name: "tile",
        enabled: |o| o.tile_transposes,
        run: tile::run,
    },
    LoopPass {
        name: "peel_masks",
        enabled: |o| o.vectorize,
        run: peel_masks::run,
    },
    LoopPass {
        name: "narrow_sums",
        enabled: |o| o.narrow_f32_sums,
        run: narrow_sums::run,
    },
];

/// The pass named `name`.
pub fn pass(name: &str) -> Option<&'static LoopPass> {
    PASSES.iter().find(|p| p.name == name)
}

/// Runs every pass [`PASSES`] lists that `cx.options` enables, in order.
pub fn run_all(k: &mut Kernel, cx: &PassContext<'_>) -> PassOutcome {
    let mut all = PassOutcome::default();
    for p in PASSES.iter().filter(|p| (p.enabled)(&cx.options)) {
        all.absorb((p.run)(k, cx));
    }
    all
}
