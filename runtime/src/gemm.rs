//! GEMM calls: a contraction the compiler planned as a general matrix multiply, run by the
//! `gemm` crate (packed, cache-blocked, with its micro-kernels chosen at run time from the
//! CPU's features: AVX-512F, else AVX2+FMA, else scalar code on x86-64; built without its
//! rayon threads) beside the JIT's kernels.
//!
//! Assumes: a [`GemmSpec`] from the compiler — `C[b, i, j] = Σ_t Σ_p A_t[b, i, p] · B_t[b, p, j]`
//! for every batch index `b`, each matrix an element offset and a stride per axis into its
//! buffer (any strides the layout pass chose, negative and zero included for A and B; they are
//! passed to the crate as strides, never copied), `A_t`, `B_t` A and B moved by tap `t`'s
//! offsets ([`GemmTap`]: a convolution's filter taps; a plain GEMM has one tap at 0), f32 or
//! f64, and the buffer lengths the compiler planned.
//!
//! Guarantees:
//! - [`GemmCall::new`] proves, once, that every element the call addresses lies within the
//!   declared lengths and that no two elements of C share an address (so row blocks written by
//!   different threads never touch the same memory); anything else is a typed
//!   [`RuntimeError::Gemm`], never a panic;
//! - each call checks the bound buffers' types and lengths against the declared ones (and that
//!   C shares no memory with A or B), borrows them (A and B shared, C exclusive) for the call,
//!   then runs: the batch indices times fixed row (or column) blocks of C ([`GemmSpec::block`],
//!   chosen by the compiler from the shape and the pool's thread count) are the items of one
//!   job, each a single-threaded `gemm` call, split over the [`ThreadPool`] when one is given.
//!   Each call is deterministic, so results are bit-identical run after run for a given spec —
//!   for a given thread count. Several taps run over sub-blocks of a block (about 256 KiB of
//!   C, so it stays in cache), each sub-block one crate call per tap (per chunk of at most
//!   [`unpacked_columns`] columns where A is column-major, so the crate reads each tap's A in
//!   place), the first writing C and the others adding to it; where several taps read B along
//!   strided rows, B (up to 2²² elements) is first packed once per call into a per-thread
//!   scratch kept between calls, every tap's `k × n` matrix with `k` contiguous — the layout
//!   the crate reads without packing it again in every call (the same values: results are
//!   unchanged). Where a one-tap call's C rows and B's terms are both contiguous (a linear
//!   layer's `x · Wᵀ`), or where few rows of C would make the crate pack a row-major B for
//!   them alone, the crate writes C in the other order into a per-thread scratch, a chunk of
//!   columns at a time, and the chunk is copied into C ([`crate::gemm_stage`]: the crate is
//!   several times slower writing such a C in place). Across thread counts they may differ
//!   in the last bits: the crate picks its K-blocking and its code path by the call's shape
//!   (a block of one row is a matrix-vector product; blocks of at most 64 × 64 block K
//!   differently), as BLAS libraries do;
//! - f32 products and sums are taken in f32 (as every BLAS), f64 in f64, in the crate's order;
//!   the error of each element is within the bound `K · u · Σ_p |A·B|` (u = 2⁻²⁴ or 2⁻⁵³;
//!   docs/numerics.md), taps summed in C in the element type as the interpreter adds a
//!   convolution's taps. An element the crate leaves at ±0 gets the interpreter's sign: −0
//!   exactly when every step of the interpreter's sums (each tap's products in the element
//!   type, summed in f64 from −0) stays −0, found by walking those steps until one does not (usually the
//!   first); a non-finite one is computed again the interpreter's way (each tap's f64 sum
//!   rounded, the taps added in order), as the crate's f32 sums may pass f32's range where the
//!   interpreter's f64 sums do not; and a whole block is, when its operands' largest
//!   magnitudes multiply past the type's range, as the crate's fused multiply-adds never
//!   round a product the interpreter rounds to `inf`.
//!
//! `unsafe` here: the calls of the crate's raw-pointer `gemm`, the fix-up's reads and writes,
//! the reads that pack B once per call and the epilogue kernel's calls, each with the bounds
//! argument above (docs/ARCHITECTURE.md).

use std::sync::Arc;

use weft_ir::loop_ir::{BufferDecl, ScalarType};

use crate::binding::{BindScope, HostBuffer};
use crate::gemm_float::{any_special, largest_magnitude, special_mask, Float};
use crate::gemm_stage::{self, Staging};
use crate::gemm_tiles::{self, Strided};
use crate::signature::{AccessPattern, Footprint, KernelEntry, KernelSignature};
use crate::{DeviceBufferReference, DeviceBufferStorage, RuntimeError, ThreadPool};

/// One matrix operand of a GEMM: where element (row 0, column 0) of batch index 0 is, and the
/// element stride along its rows and its columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MatrixView {
    /// Elements from the start of the buffer.
    pub offset: i64,
    /// Stride between consecutive rows (A: along M; B: along K; C: along M).
    pub row_stride: i64,
    /// Stride between consecutive columns (A: along K; B: along N; C: along N).
    pub col_stride: i64,
}

impl MatrixView {
    /// The strides of rows and columns.
    fn strides(&self) -> (i64, i64) {
        (self.row_stride, self.col_stride)
    }
}

/// The most roundings an f32 element of a call summing `taps` taps of `k` products each goes
/// through, on whichever engine runs it: the crate's calls sum `k` per tap and add the taps in
/// C (`k + taps − 1`); weft's tiles sum a slice of `k` over every tap, then add the slices'
/// sums (runtime/src/gemm_tiles.rs). The compiler sends an f32 sum of taps to the GEMM only
/// when this is within `GemmOptions::max_f32_k` (docs/numerics.md): the same answer on every
/// host.
pub fn longest_f32_chain(k: u64, taps: u64) -> u64 {
    let on_crate = k.saturating_add(taps.saturating_sub(1));
    let (k, taps) = (
        usize::try_from(k).unwrap_or(usize::MAX),
        usize::try_from(taps).unwrap_or(usize::MAX),
    );
    let on_tiles = if (1..=gemm_tiles::MAX_TAPS).contains(&taps) {
        gemm_tiles::chain(k, taps) as u64
    } else {
        0
    };
    on_crate.max(on_tiles)
}

/// An axis the GEMM is repeated over (a free axis that is not M or N): its length and its
/// stride in A, B and C.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchAxis {
    /// Its length.
    pub len: usize,
    /// Strides in A, B and C (0 where the operand does not move along it).
    pub strides: [i64; 3],
}

/// One term of a GEMM of several taps: `A` and `B` read this many elements further on (a
/// convolution's filter tap: the input shifted, the filter's tap pinned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GemmTap {
    /// Elements added to A's offset.
    pub a: i64,
    /// Elements added to B's offset.
    pub b: i64,
}

/// Which dimension of C the parallel blocks cut.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitDim {
    /// Blocks of rows (M).
    Rows,
    /// Blocks of columns (N).
    Columns,
}

impl SplitDim {
    /// `"row"` or `"column"`, for listings.
    pub fn noun(self) -> &'static str {
        match self {
            SplitDim::Rows => "row",
            SplitDim::Columns => "column",
        }
    }
}

/// What the compiler planned: `C[b] = Σ_t A_t[b] · B_t[b]` over buffers of the declared
/// lengths, `A_t` and `B_t` A and B moved by tap `t` ([`GemmSpec::taps`]; one tap at 0 when
/// none are listed: `C[b] = A[b] · B[b]`).
#[derive(Clone, Debug, PartialEq)]
pub struct GemmSpec {
    /// A name for errors and listings (the dot's label).
    pub name: String,
    /// f32 or f64 (A, B and C alike).
    pub dtype: ScalarType,
    /// Rows of A and C.
    pub m: usize,
    /// Columns of B and C.
    pub n: usize,
    /// Columns of A, rows of B: the contracted length.
    pub k: usize,
    /// A: m × k.
    pub a: MatrixView,
    /// B: k × n.
    pub b: MatrixView,
    /// C: m × n.
    pub c: MatrixView,
    /// Axes the multiply repeats over, outermost first.
    pub batch: Vec<BatchAxis>,
    /// The declared lengths (elements) of A's, B's and C's buffers.
    pub lens: [u64; 3],
    /// The dimension cut into parallel blocks.
    pub split: SplitDim,
    /// Rows (or columns) per block, at least 1.
    pub block: usize,
    /// The terms summed into C, in the order the interpreter adds them (in the element
    /// type, each term a dot summed in f64): empty for a plain GEMM.
    pub taps: Vec<GemmTap>,
}

impl GemmSpec {
    /// The block size and dimension a `m × n` result is cut into: the longer of the two, in
    /// blocks of at least `min_block` (rounded up to a multiple of 16, the micro-kernels'
    /// tile), at most one per thread of a `threads` pool and at most `max_blocks` of them. Each
    /// block packs all of the other operand again, so a block beyond one per thread costs
    /// packing and buys nothing. The blocks, and so the crate's calls and their results'
    /// last bits, follow the thread count (module docs).
    pub fn blocks_for(
        m: usize,
        n: usize,
        min_block: usize,
        max_blocks: usize,
        threads: usize,
    ) -> (SplitDim, usize) {
        let (split, len) = if m >= n {
            (SplitDim::Rows, m)
        } else {
            (SplitDim::Columns, n)
        };
        let min_block = min_block.max(1);
        let count = (len / min_block)
            .min(threads.max(1))
            .clamp(1, max_blocks.max(1));
        let block = len.div_ceil(count).div_ceil(16).saturating_mul(16).max(1);
        (split, block)
    }

    /// `m·n·k` per batch index and tap times the batch count and the taps: the multiply-adds
    /// of one call.
    pub fn work(&self) -> u128 {
        let batch: u128 = self.batch.iter().map(|b| b.len as u128).product();
        batch * self.m as u128 * self.n as u128 * self.k as u128 * self.taps().len() as u128
    }

    /// The taps summed into C: at least one (`(0, 0)` when none are listed).
    pub fn taps(&self) -> &[GemmTap] {
        const PLAIN: [GemmTap; 1] = [GemmTap { a: 0, b: 0 }];
        if self.taps.is_empty() {
            &PLAIN
        } else {
            &self.taps
        }
    }

    /// Number of blocks per batch index.
    fn blocks(&self) -> usize {
        let len = match self.split {
            SplitDim::Rows => self.m,
            SplitDim::Columns => self.n,
        };
        len.div_ceil(self.block)
    }

    /// A readable one-line description (`weft explain`).
    pub fn display(&self) -> String {
        let v =
            |x: &MatrixView| format!("@{} strides ({}, {})", x.offset, x.row_stride, x.col_stride);
        let mut s = format!(
            "gemm {} {}: m {} n {} k {}; A {}, B {}, C {}",
            self.name,
            self.dtype,
            self.m,
            self.n,
            self.k,
            v(&self.a),
            v(&self.b),
            v(&self.c)
        );
        for b in &self.batch {
            s += &format!(
                "; batch {} strides ({}, {}, {})",
                b.len, b.strides[0], b.strides[1], b.strides[2]
            );
        }
        if self.taps.len() > 1 {
            let offsets: Vec<String> = self
                .taps
                .iter()
                .map(|t| format!("({}, {})", t.a, t.b))
                .collect();
            s += &format!(
                "; {} taps summed in C, A and B moved by {}",
                self.taps.len(),
                offsets.join(" ")
            );
        }
        s += &format!(
            "; {} blocks of {} {}s",
            self.blocks(),
            self.block,
            self.split.noun()
        );
        s
    }
}

/// Where work items read B: B itself, or a copy packed once per call ([`GemmCall::pack_b`]).
struct BOperand {
    /// The buffer's address.
    base: usize,
    /// Tap 0's B in it.
    view: MatrixView,
    /// Packed: tap `t`'s B starts `t` times this many elements on.
    packed_taps: Option<i64>,
}

impl BOperand {
    /// Elements from tap 0's B to tap `t`'s.
    fn tap(&self, t: usize, tap: &GemmTap) -> i64 {
        self.packed_taps.map_or(tap.b, |stride| t as i64 * stride)
    }
}

/// Most elements of B a call packs once for all its taps ([`GemmCall::packed_b_len`]): 16 MiB
/// of f32.
const PACKED_B_MAX: usize = 1 << 22;

/// Bytes of C a GEMM of several taps computes at a time ([`GemmCall::item`]).
const TAP_BLOCK_BYTES: usize = 256 << 10;

/// The most columns of C a crate call may have for the crate to read a column-major A in
/// place rather than packing it first: its single-threaded packing threshold times the
/// micro-kernels' six columns (x86-64, f32 and f64, AVX2 and AVX-512 alike). A GEMM of
/// several taps calls the crate with at most this many columns at a time when A is
/// column-major (a convolution's padded image): each tap's A is a fresh shifted matrix, so
/// packing it costs a copy per tap that nothing amortises (8 % of the conv workload).
fn unpacked_columns() -> usize {
    (gemm::get_lhs_packing_threshold_single_thread() * 6).max(6)
}

/// A checked GEMM, ready to be called over buffers.
#[derive(Clone, Debug)]
pub struct GemmCall {
    spec: GemmSpec,
    /// Batch indices × blocks: the work items.
    items: usize,
    blocks: usize,
    /// Rows (or columns) of the sub-blocks a block with several taps is run in.
    tap_block: usize,
    /// Most columns of C per crate call of a tap ([`unpacked_columns`]).
    tap_columns: usize,
    /// Whether weft's tiles run the blocks ([`gemm_tiles::takes`]), not the crate.
    tiles: bool,
    /// How the crate's calls write C where not in place ([`Staging::decide`]; one tap on the
    /// crate only).
    staging: Option<Staging>,
}

/// The lowest and highest element index `offset + Σ i·stride` reaches for `0 ≤ i < len`.
fn reach(offset: i64, axes: &[(usize, i64)]) -> (i128, i128) {
    let mut lo = offset as i128;
    let mut hi = offset as i128;
    for &(len, stride) in axes {
        let far = (len as i128 - 1) * stride as i128;
        if far < 0 {
            lo += far;
        } else {
            hi += far;
        }
    }
    (lo, hi)
}

/// Whether `offset + Σ i·stride` is injective over the axes: sorted by |stride|, each stride
/// passes everything the smaller ones reach.
fn injective(axes: &[(usize, i64)]) -> bool {
    let mut moving: Vec<(u128, u128)> = axes
        .iter()
        .filter(|(len, _)| *len > 1)
        .map(|&(len, s)| (s.unsigned_abs() as u128, len as u128))
        .collect();
    moving.sort_unstable();
    let mut span = 0u128;
    for (stride, len) in moving {
        if stride <= span {
            return false;
        }
        span += (len - 1) * stride;
    }
    true
}

impl GemmCall {
    /// Checks `spec` (module docs): dtype, non-empty dimensions, every address in bounds, C
    /// without aliasing, strides that fit `isize`.
    pub fn new(spec: GemmSpec) -> Result<GemmCall, RuntimeError> {
        let fail = |message: String| RuntimeError::Gemm {
            gemm: spec.name.clone(),
            message,
        };
        if !matches!(spec.dtype, ScalarType::F32 | ScalarType::F64) {
            return Err(fail(format!(
                "element type {} (f32 or f64 only)",
                spec.dtype
            )));
        }
        if spec.m == 0 || spec.n == 0 || spec.k == 0 || spec.batch.iter().any(|b| b.len == 0) {
            return Err(fail("an empty dimension".into()));
        }
        if spec.block == 0 {
            return Err(fail("a block of 0 rows".into()));
        }
        let views = [spec.a, spec.b, spec.c];
        let dims = [(spec.m, spec.k), (spec.k, spec.n), (spec.m, spec.n)];
        for (t, (v, (rows, cols))) in views.iter().zip(dims).enumerate() {
            let mut axes = vec![(rows, v.row_stride), (cols, v.col_stride)];
            axes.extend(spec.batch.iter().map(|b| (b.len, b.strides[t])));
            // Every tap's A and B; C is the same for all.
            let mut lo = i128::MAX;
            let mut hi = i128::MIN;
            for tap in spec.taps() {
                let delta = [tap.a, tap.b, 0][t];
                let offset = v
                    .offset
                    .checked_add(delta)
                    .ok_or_else(|| fail("a tap's offset past i64".into()))?;
                let (l, h) = reach(offset, &axes);
                (lo, hi) = (lo.min(l), hi.max(h));
            }
            if lo < 0 || hi >= spec.lens[t] as i128 {
                return Err(fail(format!(
                    "{} reaches elements {lo}..={hi} of a buffer of {}",
                    ["A", "B", "C"][t],
                    spec.lens[t]
                )));
            }
            // Every address, and every stride times an index, then fits isize.
            if isize::try_from(hi).is_err()
                || axes.iter().any(|(_, s)| isize::try_from(*s).is_err())
            {
                return Err(fail("a stride or offset past isize".into()));
            }
            if t == 2 && !injective(&axes) {
                return Err(fail(
                    "C's strides make two elements share an address".into(),
                ));
            }
        }
        let blocks = spec.blocks();
        let batch = spec
            .batch
            .iter()
            .try_fold(1usize, |n, b| n.checked_mul(b.len));
        let items = batch
            .and_then(|b| b.checked_mul(blocks))
            .filter(|i| i64::try_from(*i).is_ok())
            .ok_or_else(|| fail("too many work items".into()))?;
        // Sub-blocks of C of about 256 KiB (whole micro-kernel tiles of 16), in cache while
        // every tap adds into them.
        let line = match spec.split {
            SplitDim::Rows => spec.n,
            SplitDim::Columns => spec.m,
        };
        let bytes = line.saturating_mul(spec.dtype.size_bytes()).max(1);
        let tap_block = ((TAP_BLOCK_BYTES / bytes) / 16 * 16).clamp(16, spec.block.max(16));
        let tap_columns = if spec.taps.len() > 1 && spec.a.row_stride == 1 {
            unpacked_columns()
        } else {
            spec.n
        };
        let tiles = spec.dtype == ScalarType::F32
            && gemm_tiles::takes(
                spec.m,
                spec.n,
                spec.taps().len(),
                spec.c.row_stride,
                spec.c.col_stride,
            );
        let staging = if tiles || spec.taps().len() != 1 {
            None
        } else {
            let (rows, cols) = match spec.split {
                SplitDim::Rows => (spec.block.min(spec.m), spec.n),
                SplitDim::Columns => (spec.m, spec.block.min(spec.n)),
            };
            Staging::decide(&gemm_stage::Block {
                rows,
                cols,
                k: spec.k,
                a: spec.a.strides(),
                b: spec.b.strides(),
                c: spec.c.strides(),
            })
        };
        Ok(GemmCall {
            spec,
            items,
            blocks,
            tap_block,
            tap_columns,
            tiles,
            staging,
        })
    }

    /// What it computes.
    pub fn spec(&self) -> &GemmSpec {
        &self.spec
    }

    /// What runs the blocks (`weft explain`): weft's tiles (at the host's width) or the
    /// `gemm` crate.
    pub fn engine(&self) -> String {
        if self.tiles {
            format!("weft's {} tiles", gemm_tiles::Width::host().isa())
        } else {
            "gemm crate, runtime CPU dispatch".into()
        }
    }

    /// How a call of several taps runs its blocks (`weft explain`), or `None` for one tap.
    pub fn tap_schedule(&self) -> Option<String> {
        if self.spec.taps.len() < 2 {
            return None;
        }
        if self.tiles {
            return Some(gemm_tiles::schedule());
        }
        let mut s = format!(
            "taps: each block in sub-blocks of {} {}s, one crate call per tap",
            self.tap_block,
            self.spec.split.noun()
        );
        if self.tap_columns < self.spec.n {
            s += &format!(
                " and per {} columns (A read in place, not packed)",
                self.tap_columns
            );
        }
        if self.packed_b_len().is_some() {
            s += "; B packed once per call for every tap";
        }
        Some(s)
    }

    /// How the crate's calls write C where they do not write it in place (`weft explain`),
    /// or `None`.
    pub fn c_staging(&self) -> Option<String> {
        self.staging.map(|s| s.describe())
    }

    /// The work items (batch indices × blocks) a call splits over a pool.
    pub fn items(&self) -> usize {
        self.items
    }

    /// Runs over `references[args[0..3]]` (A, B, C), each replaced by `host`'s binding of its
    /// slot where there is one, split over `pool` if given.
    pub fn call_bound(
        &self,
        pool: Option<&ThreadPool>,
        references: &[DeviceBufferReference],
        host: Option<&BindScope<'_, '_>>,
        args: [usize; 3],
    ) -> Result<(), RuntimeError> {
        let name = &self.spec.name;
        let mismatch = |t: usize, dtype: ScalarType, len: u64| RuntimeError::BufferMismatch {
            kernel: name.clone(),
            buffer: ["A", "B", "C"][t].into(),
            dtype: self.spec.dtype,
            len: self.spec.lens[t],
            actual_dtype: dtype,
            actual_len: len,
        };
        let mut hosts: [Option<HostBuffer>; 3] = [None; 3];
        let mut storages: [Option<Arc<DeviceBufferStorage>>; 3] = [None, None, None];
        for t in 0..3 {
            if let Some(h) = host.and_then(|s| s.get(args[t])) {
                if h.dtype != self.spec.dtype || h.len < self.spec.lens[t] {
                    return Err(mismatch(t, h.dtype, h.len));
                }
                if t == 2 && !h.writable {
                    return Err(RuntimeError::ReadOnlyBinding {
                        kernel: name.clone(),
                        buffer: "C".into(),
                    });
                }
                hosts[t] = Some(h);
                continue;
            }
            // Lazily: the error's name is formatted only when it happens (a steady-state call
            // allocates nothing here).
            let reference = references
                .get(args[t])
                .ok_or_else(|| RuntimeError::BufferCount {
                    kernel: name.clone(),
                    expected: 3,
                    actual: t,
                })?;
            let s = reference.storage();
            if s.dtype() != self.spec.dtype || s.len() < self.spec.lens[t] {
                return Err(mismatch(t, s.dtype(), s.len()));
            }
            storages[t] = Some(s);
        }
        // Base addresses and the byte ranges the declared lengths cover.
        let size = self.spec.dtype.size_bytes() as u64;
        let base = |t: usize| match (&hosts[t], &storages[t]) {
            (Some(h), _) => h.address as usize,
            (None, Some(s)) => s.base_address() as usize,
            (None, None) => 0,
        };
        let range = |t: usize| {
            let b = base(t) as u128;
            (b, b + u128::from(self.spec.lens[t]) * u128::from(size))
        };
        for t in 0..2 {
            let ((a0, a1), (c0, c1)) = (range(t), range(2));
            if a0 < c1 && c0 < a1 {
                return Err(RuntimeError::Gemm {
                    gemm: name.clone(),
                    message: format!("C shares memory with {}", ["A", "B"][t]),
                });
            }
        }
        // Borrows held until the call returns: C exclusive, A and B shared (once if they are
        // one storage).
        let busy = |t: usize| RuntimeError::StorageBusy {
            kernel: name.clone(),
            buffer: ["A", "B", "C"][t].into(),
        };
        let _c = match &storages[2] {
            Some(s) => Some(s.try_borrow(true).ok_or_else(|| busy(2))?),
            None => None,
        };
        let _a = match &storages[0] {
            Some(s) => Some(s.try_borrow(false).ok_or_else(|| busy(0))?),
            None => None,
        };
        let same = matches!((&storages[0], &storages[1]), (Some(x), Some(y)) if Arc::ptr_eq(x, y));
        let _b = match &storages[1] {
            Some(s) if !same => Some(s.try_borrow(false).ok_or_else(|| busy(1))?),
            _ => None,
        };
        let bases = [base(0), base(1), base(2)];
        // Read with the borrows held: a write since the storage was told would have forgotten it.
        let known = [0, 1].map(|t| storages[t].as_ref()?.known_largest_magnitude());
        // SAFETY: `bases` as `run` needs them (checked and borrowed above), no epilogue.
        unsafe {
            match self.spec.dtype {
                ScalarType::F32 => self.run::<f32>(pool, bases, known, None),
                _ => self.run::<f64>(pool, bases, known, None),
            }
        }
        Ok(())
    }

    /// The iterations `first..last` of an epilogue kernel's parallel loop that work item
    /// `item` runs: the rows of C it computes, or, in column blocks, its block; with batch
    /// axes (one block each), its group of batch indices ([`GemmCall::batch_group`]).
    fn parallel_range(&self, item: usize) -> (usize, usize) {
        if !self.spec.batch.is_empty() {
            // One block per batch index (checked): the kernel's iteration of the item's group.
            return (item, item.saturating_add(1).min(self.items));
        }
        match self.spec.split {
            SplitDim::Rows => {
                let first = item.saturating_mul(self.spec.block).min(self.spec.m);
                let last = first.saturating_add(self.spec.block).min(self.spec.m);
                (first, last)
            }
            SplitDim::Columns => (item, item.saturating_add(1).min(self.blocks)),
        }
    }

    /// Whether a kernel of `signature` may run right after this GEMM on each of its blocks
    /// (the iterations of its parallel loop = the rows, or the column block, of C just
    /// computed) with the same results as after the whole GEMM, given how each of its buffers
    /// relates in memory to A, B and C: `relation(i, t)` for kernel buffer `i` and operand `t`
    /// (0 A, 1 B, 2 C). Why not, if not. No batch axes, and C's rows in disjoint bands
    /// ([`banded`]); then by the split: rows ([`GemmCall::check_row_epilogue`]) or columns
    /// ([`GemmCall::check_column_epilogue`]). If so, the *group* it proved: how many work
    /// items a unit of the run takes before the kernel's iteration of them (1, or G for an
    /// iteration over G consecutive batch indices) — what [`GemmCall::run_with_epilogue`]
    /// runs by, never derived again.
    fn check_epilogue(
        &self,
        signature: &KernelSignature,
        relation: impl Fn(usize, usize) -> Relation,
    ) -> Result<usize, String> {
        if !self.spec.batch.is_empty() {
            return self.check_batch_epilogue(signature, relation);
        }
        if !banded(&self.spec.c, self.spec.n) {
            return Err("C's rows are not laid out one after another".into());
        }
        match self.spec.split {
            SplitDim::Rows => self.check_row_epilogue(signature, relation)?,
            SplitDim::Columns => self.check_column_epilogue(signature, relation)?,
        }
        Ok(1)
    }

    /// [`GemmCall::check_epilogue`] for a GEMM with batch axes (a convolution over a batch of
    /// images).
    ///
    /// The conditions: one batch axis, one work item per batch index (a single block), and
    /// the kernel's parallel loop runs over the batch indices; C's matrix of batch index `b`
    /// lies in its own band of `stride` elements from `c.offset + b·stride` (all strides
    /// positive); every kernel buffer sharing C's memory is C's buffer with a footprint
    /// keeping iteration `b` inside band `b`; no buffer the kernel writes shares memory with
    /// A or B. Then iteration `b` touches C's memory only where the item of batch index `b`
    /// wrote, before it runs, and writes nothing any GEMM item reads.
    fn check_batch_epilogue(
        &self,
        signature: &KernelSignature,
        relation: impl Fn(usize, usize) -> Relation,
    ) -> Result<usize, String> {
        let s = &self.spec;
        let [batch] = s.batch.as_slice() else {
            return Err("the GEMM has several batch axes".into());
        };
        if self.blocks != 1 {
            return Err("the GEMM has several blocks per batch index".into());
        }
        let Some(group) = self.batch_group(signature.parallel_extent) else {
            return Err(format!(
                "kernel @{}'s parallel loop is not over the GEMM's {} batch indices or equal \
                 groups of them",
                signature.name, batch.len
            ));
        };
        let stride = batch.strides[2];
        let (lo, hi) = reach(s.c.offset, &[(s.m, s.c.row_stride), (s.n, s.c.col_stride)]);
        let in_own_band = stride > 0
            && s.c.row_stride > 0
            && s.c.col_stride > 0
            && hi < s.c.offset as i128 + stride as i128;
        if !in_own_band || lo != s.c.offset as i128 {
            return Err("C's batch indices are not laid out one after another".into());
        }
        // Iteration `e` covers the group's batch indices, one band after another.
        let Some(group_stride) = i64::try_from(group)
            .ok()
            .and_then(|g| g.checked_mul(stride))
        else {
            return Err("C's groups of batch indices lie past the address space".into());
        };
        let band = MatrixView {
            offset: s.c.offset,
            row_stride: group_stride,
            col_stride: 1,
        };
        for (i, b) in signature.buffers.iter().enumerate() {
            let fits = in_band(&band, signature.footprint(i));
            on_c(b, relation(i, 2), fits, "batch index by batch index")?;
            apart_from_operands(b, &relation, i)?;
        }
        Ok(group)
    }

    /// With one batch axis, how many consecutive batch indices one iteration of an epilogue
    /// kernel's parallel loop of `extent` iterations covers, if it covers equal groups: 1 when
    /// the loop is over the batch indices themselves, more when it is over a coarser axis
    /// (attention's softmax over B after a GEMM whose batch is B·H, merged).
    fn batch_group(&self, extent: Option<u64>) -> Option<usize> {
        let [batch] = self.spec.batch.as_slice() else {
            return None;
        };
        let extent = usize::try_from(extent?).ok().filter(|&e| e > 0)?;
        (batch.len % extent == 0).then(|| batch.len / extent)
    }

    /// [`GemmCall::check_epilogue`] for row blocks.
    ///
    /// The conditions: the kernel's parallel loop runs over
    /// C's `m` rows (which lie in disjoint *bands* of `row_stride` elements, row `p` from
    /// `c.offset + p·row_stride`, checked by the caller); every kernel buffer sharing C's memory starts where C's
    /// buffer does and its [`Footprint`] keeps iteration `p` inside band `p`; no kernel buffer
    /// that is written shares memory with B, or with A other than as A's buffer with a
    /// footprint inside the band of A's row `p`. Then iteration `p` only touches C's memory in
    /// the band of row `p`, which only the work item computing row `p` writes, before it runs
    /// the kernel on its rows; and it writes only memory the GEMM no longer reads (A's row
    /// `p`, read only by that same work item's GEMM, already done).
    fn check_row_epilogue(
        &self,
        signature: &KernelSignature,
        relation: impl Fn(usize, usize) -> Relation,
    ) -> Result<(), String> {
        let s = &self.spec;
        if signature.parallel_extent != Some(s.m as u64) {
            return Err(format!(
                "kernel @{}'s parallel loop is not over C's {} rows",
                signature.name, s.m
            ));
        }
        for (i, b) in signature.buffers.iter().enumerate() {
            let footprint = signature.footprint(i);
            on_c(b, relation(i, 2), in_band(&s.c, footprint), "row by row")?;
            if !b.access.can_write() {
                continue;
            }
            // A row of A is read only by the work item of the same row of C, before its
            // kernel runs: the kernel may overwrite A's buffer row by row (the storage plan
            // gives a layer's output its dead input's buffer). All of B is read by every item.
            let a_rows =
                relation(i, 0) == Relation::Same && banded(&s.a, s.k) && in_band(&s.a, footprint);
            if (relation(i, 0) != Relation::Disjoint && !a_rows)
                || relation(i, 1) != Relation::Disjoint
            {
                return Err(format!(
                    "kernel buffer %{} is written and shares memory with the GEMM's operands \
                     other than row by row of A",
                    b.name
                ));
            }
        }
        Ok(())
    }

    /// [`GemmCall::check_epilogue`] for column blocks.
    ///
    /// The conditions: C's `n` columns are a whole number of blocks and the kernel's parallel
    /// loop runs over them (iteration `p` = block `p`, columns `p·block ..< (p + 1)·block`);
    /// every kernel buffer sharing C's memory
    /// starts where C's buffer does, and each of its accesses moves by `block·col_stride` per
    /// iteration and — its terms along whole rows (coefficients that are multiples of the
    /// row stride) set aside — spans, within a band, only the columns of block 0; no kernel
    /// buffer that is written shares memory with A or B (every item reads all of A and its
    /// columns of B). Then iteration `p` touches C's memory only in block `p`'s columns, which
    /// only work item `p` writes, before it runs the kernel's iteration `p`, and it writes
    /// nothing the GEMM reads.
    fn check_column_epilogue(
        &self,
        signature: &KernelSignature,
        relation: impl Fn(usize, usize) -> Relation,
    ) -> Result<(), String> {
        let s = &self.spec;
        if !s.n.is_multiple_of(s.block) {
            return Err(format!(
                "C's {} columns are not a whole number of blocks of {}",
                s.n, s.block
            ));
        }
        if signature.parallel_extent != Some((s.n / s.block) as u64) {
            return Err(format!(
                "kernel @{}'s parallel loop is not over C's {} column blocks",
                signature.name,
                s.n / s.block
            ));
        }
        let (rs, cs) = (i128::from(s.c.row_stride), i128::from(s.c.col_stride));
        let last_column = (s.block as i128 - 1) * cs;
        let in_block = |a: &AccessPattern| {
            let col = (i128::from(a.offset) - i128::from(s.c.offset)).rem_euclid(rs);
            // Terms along whole rows stay in the column; empty loops never run.
            let reach = a.reach(|&(c, extent)| extent > 0 && i128::from(c) % rs != 0);
            reach.is_some_and(|(lo, hi)| {
                i128::from(a.parallel) == s.block as i128 * cs
                    && col + lo >= 0
                    && col + hi <= last_column
            })
        };
        for (i, b) in signature.buffers.iter().enumerate() {
            let accesses = signature.accesses.get(i).map_or(&[][..], Vec::as_slice);
            let fits = accesses.iter().all(in_block);
            on_c(b, relation(i, 2), fits, "column block by column block")?;
            apart_from_operands(b, &relation, i)?;
        }
        Ok(())
    }

    /// [`GemmCall::check_epilogue`] over the memory a call has bound: `range(i)` is the byte
    /// range of kernel buffer `i`, and of A, B and C at `n..n + 3` (`n` the kernel's buffer
    /// count). Also refuses C overlapping A or B. The group it proved, as `check_epilogue`.
    pub(crate) fn check_epilogue_memory(
        &self,
        signature: &KernelSignature,
        range: impl Fn(usize) -> (u128, u128),
    ) -> Result<usize, RuntimeError> {
        let n = signature.buffers.len();
        let relation = |x: usize, y: usize| {
            let ((x0, x1), (y0, y1)) = (range(x), range(y));
            if x0 == y0 {
                Relation::Same
            } else if x0 < y1 && y0 < x1 {
                Relation::Overlap
            } else {
                Relation::Disjoint
            }
        };
        let fail = |message: String| RuntimeError::Gemm {
            gemm: self.spec.name.clone(),
            message,
        };
        for t in 0..2 {
            if relation(n + t, n + 2) != Relation::Disjoint {
                return Err(fail(format!("C shares memory with {}", ["A", "B"][t])));
            }
        }
        self.check_epilogue(signature, |i, t| relation(i, n + t))
            .map_err(fail)
    }

    /// Runs every work item: the GEMM's block over `bases` (A, B, C), then `entry` over
    /// `table` on the block's iterations ([`GemmCall::parallel_range`]) — `group` items a
    /// unit, then the kernel's iteration of them — split over `pool` if given.
    ///
    /// # Safety
    /// `bases` as [`GemmCall::call_bound`] makes them (each at a buffer of the spec's type
    /// and declared length, borrowed — C exclusively — until this returns, C sharing no memory
    /// with A or B); `entry` a kernel whose contract
    /// ([`CompiledKernel::from_code`](crate::kernel::CompiledKernel::from_code)) holds for
    /// `table` (valid and its buffers borrowed until this returns) with the signature
    /// `signature`; and [`GemmCall::check_epilogue_memory`] passed for this signature over
    /// the memory `table` and `bases` point at, returning `group`; `known` as in
    /// [`GemmCall::run`].
    pub(crate) unsafe fn run_with_epilogue(
        &self,
        pool: Option<&ThreadPool>,
        (bases, known): ([usize; 3], [Option<f64>; 2]),
        entry: KernelEntry,
        table: *const *mut u8,
        group: usize,
    ) {
        let epilogue = Some((entry, table, group));
        // SAFETY: forwarded from this function's contract.
        unsafe {
            match self.spec.dtype {
                ScalarType::F32 => self.run::<f32>(pool, bases, known, epilogue),
                _ => self.run::<f64>(pool, bases, known, epilogue),
            }
        }
    }

    /// Runs every work item over `bases` (A, B, C), each followed by `epilogue`'s kernel on
    /// the item's iterations when given, split over `pool` if given; with an epilogue over
    /// groups of `group` batch indices, a unit of work is a group: its items, then the
    /// kernel's iteration of the group. B is first packed once ([`GemmCall::pack_b`]) when
    /// several taps read it along strided rows. `known`: the largest magnitudes of A's and B's
    /// whole buffers where their storages know them (a program's constants), which the
    /// overflow bound reads instead of scanning the operand.
    ///
    /// # Safety
    /// As [`GemmCall::run_with_epilogue`] (without an epilogue: only its conditions on
    /// `bases`).
    unsafe fn run<T: Float>(
        &self,
        pool: Option<&ThreadPool>,
        bases: [usize; 3],
        known: [Option<f64>; 2],
        epilogue: Option<(KernelEntry, *const *mut u8, usize)>,
    ) {
        let group = epilogue.map_or(1, |(_, _, g)| g);
        let units = self.items / group;
        // An address, so the closure is `Sync`; only turned back into the table below.
        let epilogue = epilogue.map(|(entry, table, _)| (entry, table as usize));
        let go = |b: &BOperand| {
            let run = |begin: i64, end: i64| {
                for unit in begin.max(0)..end.min(units as i64) {
                    let unit = unit as usize;
                    for item in unit * group..(unit + 1) * group {
                        self.item::<T>([bases[0], bases[2]], (b, known), item);
                    }
                    let Some((entry, table)) = epilogue else {
                        continue;
                    };
                    let (first, last) = self.parallel_range(unit);
                    if first < last {
                        // SAFETY: the caller's contract makes `entry` safe on `table` for any
                        // sub-range of the parallel loop (`0..m`, `0..blocks` for column
                        // blocks, or the batch indices, checked), concurrently on disjoint
                        // ones — items are disjoint ranges. Against the GEMM items running on
                        // other threads: rows — iteration `p` touches C's memory only in the
                        // band of row `p` (its footprint, checked), which only this item's
                        // GEMM wrote, before this call; the kernel's other buffers share no
                        // memory with C, and the ones it writes none with B and none with A
                        // except, as A's buffer, in the band of A's row `p` (checked), which
                        // only this item's GEMM read, before this call. Columns — iteration
                        // `p` touches C's memory only in block `p`'s columns (its accesses,
                        // checked), which only this item's GEMM wrote, before this call, and
                        // the buffers it writes share no memory with A, B or C other than
                        // those columns. Batch indices — iteration `p` touches C's memory
                        // only in batch index `p`'s band (its footprint, checked), which only
                        // this item wrote, and writes no memory of A or B; grouped, iteration
                        // `p` touches only the bands of group `p`'s indices, which only this
                        // unit's items wrote. So the GEMM's reads
                        // and writes and the kernel's never meet.
                        unsafe { entry(table as *const *mut u8, first as i64, last as i64) }
                    }
                }
            };
            match pool {
                Some(pool) if pool.threads() > 1 && units > 1 => pool.run_fn(units as i64, &run),
                _ => run(0, units as i64),
            }
        };
        let direct = BOperand {
            base: bases[1],
            view: self.spec.b,
            packed_taps: None,
        };
        let Some(len) = self.packed_b_len() else {
            return go(&direct);
        };
        T::with_scratch(len, |packed| {
            // SAFETY: `bases[1]` is B's buffer, checked against every element the taps
            // address (the caller's contract).
            unsafe { self.pack_b(bases[1] as *const T, packed) };
            go(&BOperand {
                base: packed.as_ptr() as usize,
                view: MatrixView {
                    offset: 0,
                    row_stride: 1,
                    col_stride: self.spec.k as i64,
                },
                packed_taps: Some((self.spec.k * self.spec.n) as i64),
            })
        })
    }

    /// The elements B is packed into before the items run, if it is: several taps (each
    /// would make the crate pack its B again in every block) reading B along strided rows,
    /// the same B for every batch index, and at most [`PACKED_B_MAX`] elements in all (a
    /// filter's taps; B repeated by a zero stride could be far larger than its buffer).
    fn packed_b_len(&self) -> Option<usize> {
        let s = &self.spec;
        let len = s.taps.len().checked_mul(s.k)?.checked_mul(s.n)?;
        let packs = !self.tiles
            && s.taps.len() > 1
            && s.b.row_stride != 1
            && s.batch.iter().all(|b| b.strides[1] == 0)
            && len <= PACKED_B_MAX;
        packs.then_some(len)
    }

    /// Copies every tap's `k × n` B into `packed`, column by column (`k` contiguous), tap
    /// after tap: the layout the crate reads without packing.
    ///
    /// # Safety
    /// `b` points at B's buffer, in which every element of every tap lies (`GemmCall::new`).
    unsafe fn pack_b<T: Float>(&self, b: *const T, packed: &mut [T]) {
        let s = &self.spec;
        let mut out = packed.iter_mut();
        for tap in s.taps() {
            for j in 0..s.n as i64 {
                for p in 0..s.k as i64 {
                    let at = s.b.offset + tap.b + p * s.b.row_stride + j * s.b.col_stride;
                    if let Some(o) = out.next() {
                        // SAFETY: element (p, j) of tap `tap`'s B, in bounds (the contract).
                        *o = unsafe { *b.offset(at as isize) };
                    }
                }
            }
        }
    }

    /// Work item `item`: one block of one batch index (`known` as in [`GemmCall::run`]).
    fn item<T: Float>(
        &self,
        bases: [usize; 2],
        (b, known): (&BOperand, [Option<f64>; 2]),
        item: usize,
    ) {
        let s = &self.spec;
        let (mut batch, block) = (item / self.blocks, item % self.blocks);
        let mut off = [s.a.offset, b.view.offset, s.c.offset];
        for axis in s.batch.iter().rev() {
            let i = (batch % axis.len) as i64;
            batch /= axis.len;
            for (o, stride) in off.iter_mut().zip(axis.strides) {
                *o += i * stride;
            }
        }
        let (first, last) = (
            block * s.block,
            ((block + 1) * s.block).min(match s.split {
                SplitDim::Rows => s.m,
                SplitDim::Columns => s.n,
            }),
        );
        if first >= last {
            return;
        }
        // Several taps run over sub-blocks of the block, all taps each, so C's sub-block
        // stays in cache while every tap adds into it.
        let taps = s.taps();
        let step = if taps.len() > 1 {
            self.tap_block
        } else {
            last - first
        };
        let is = |x: i64| x as isize;
        let mut sub = first;
        while sub < last {
            let end = (sub + step).min(last);
            let (i0, rows, j0, cols) = match s.split {
                SplitDim::Rows => (sub, end - sub, 0, s.n),
                SplitDim::Columns => (0, s.m, sub, end - sub),
            };
            let (i0, j0) = (i0 as i64, j0 as i64);
            let a = off[0] + i0 * s.a.row_stride;
            let bj = off[1] + j0 * b.view.col_stride;
            let c = off[2] + i0 * s.c.row_stride + j0 * s.c.col_stride;
            // SAFETY: `GemmCall::new` proved that for every batch index, tap, 0 ≤ i < m,
            // 0 ≤ p < k and 0 ≤ j < n, the elements `A[off + tap.a + i·rs + p·cs]`,
            // `B[off + tap.b + ..]` and `C[..]` lie within the declared lengths, and
            // `call_bound` checked that each base address points at a buffer of this element
            // type and at least that length, borrowed (C exclusively) until it returns; this
            // sub-block addresses a subset of those elements (rows `i0..i0+rows`, columns
            // `j0..j0+cols`), so `a`, `b`, `c`, each tap's shift of them and everything the
            // crate reads or writes from them is in bounds. C's elements are pairwise distinct
            // (proved injective), and blocks and batch indices are disjoint index sets, so
            // items running concurrently write disjoint memory; A and B do not overlap C
            // (checked). The element offsets and strides fit isize (checked).
            unsafe {
                let pa = (bases[0] as *const T).offset(is(a));
                let pb = (b.base as *const T).offset(is(bj));
                let pc = (bases[1] as *mut T).offset(is(c));
                let (overflow, specials) = if self.tiles {
                    // The tiles are f32's (`GemmCall::new`): T is f32.
                    let seen = gemm_tiles::run(
                        &gemm_tiles::Block {
                            rows,
                            cols,
                            k: s.k,
                            a: Strided {
                                ptr: pa as *const f32,
                                rows: is(s.a.row_stride),
                                cols: is(s.a.col_stride),
                            },
                            b: Strided {
                                ptr: pb as *const f32,
                                rows: is(b.view.row_stride),
                                cols: is(b.view.col_stride),
                            },
                            c: Strided {
                                ptr: pc as *mut f32,
                                rows: is(s.c.row_stride),
                                cols: is(s.c.col_stride),
                            },
                            taps: taps.iter().map(|t| (t.a, t.b)),
                            known,
                        },
                        // This thread's f32 scratch: free, as B is not packed for the tiles.
                        |len, f| f32::with_scratch(len, |s| f(s)),
                    );
                    (seen.largest_product > T::MAX_FINITE, seen.specials)
                } else {
                    match self.staging {
                        Some(staging) => {
                            self.staged_crate_calls(rows, cols, staging, pa, (pb, b), pc)
                        }
                        None => self.crate_calls(rows, cols, pa, (pb, b), pc),
                    }
                    let overflow = self.products_may_overflow(pa, (pb, b), (rows, cols), known);
                    (overflow, true)
                };
                // The tiles saw every element they stored: without a special one (or a
                // possible overflow), the fix-up would change nothing.
                if overflow || specials {
                    self.fix_up(pa, (pb, b), pc, rows, cols, overflow);
                }
            }
            sub = end;
        }
    }

    /// The crate's calls for one sub-block: one per tap (per chunk of [`unpacked_columns`]
    /// columns where A is column-major), the first writing C, the others adding to it.
    ///
    /// # Safety
    /// As in [`GemmCall::item`]: `pa`, `pb` and `pc` at the sub-block's first row and
    /// column, every element of it and of the taps' operands in bounds.
    unsafe fn crate_calls<T: Float>(
        &self,
        rows: usize,
        cols: usize,
        pa: *const T,
        (pb, b): (*const T, &BOperand),
        pc: *mut T,
    ) {
        let s = &self.spec;
        let c_strides = (s.c.row_stride as isize, s.c.col_stride as isize);
        let width = self.tap_columns;
        for t in 0..s.taps().len() {
            let mut j = 0;
            while j < cols {
                let w = width.min(cols - j);
                // SAFETY: forwarded from `item`'s argument: columns `j..j + w` of the
                // sub-block's C, its A rows and tap `t`'s B columns, all in bounds.
                unsafe {
                    let c = pc.offset(j as isize * c_strides.1);
                    self.crate_call(rows, (j, w), (pa, (pb, b), t), (c, c_strides), t > 0);
                }
                j += w;
            }
        }
    }

    /// [`GemmCall::crate_calls`] for a one-tap call whose C is staged ([`Staging`]): a chunk
    /// of columns at a time computed into the thread's scratch in the staging's order, then
    /// copied into C.
    ///
    /// # Safety
    /// As [`GemmCall::crate_calls`].
    unsafe fn staged_crate_calls<T: Float>(
        &self,
        rows: usize,
        cols: usize,
        staging: Staging,
        pa: *const T,
        (pb, b): (*const T, &BOperand),
        pc: *mut T,
    ) {
        let s = &self.spec;
        let c_strides = (s.c.row_stride as isize, s.c.col_stride as isize);
        T::with_scratch(rows * staging.columns.min(cols), |stage| {
            let mut j = 0;
            while j < cols {
                let w = staging.columns.min(cols - j);
                let strides = staging.strides(rows, w);
                // SAFETY: A's rows and B's columns `j..j + w` of the sub-block are in bounds
                // (the caller's); the scratch holds `rows × w` elements at these strides,
                // written by the crate and read back within them; C's elements (i, j + c) for
                // i < rows, c < w are the sub-block's, in bounds.
                unsafe {
                    let operands = (pa, (pb, b), 0);
                    self.crate_call(rows, (j, w), operands, (stage.as_mut_ptr(), strides), false);
                    let c = pc.offset(j as isize * c_strides.1);
                    gemm_stage::copy_into(&stage[..rows * w], strides, (rows, w), c, c_strides);
                }
                j += w;
            }
        });
    }

    /// One crate call: columns `j..j + w` of tap `t`'s product of the sub-block's A rows (at
    /// `pa`) and B columns (at `pb`) into `c` (element strides `c_strides`: the sub-block's C
    /// at column `j`, or a scratch), adding to it when `accumulate`.
    ///
    /// # Safety
    /// As [`GemmCall::crate_calls`], and `c` valid for `rows × w` elements at its strides.
    unsafe fn crate_call<T: Float>(
        &self,
        rows: usize,
        (j, w): (usize, usize),
        (pa, (pb, b), t): (*const T, (*const T, &BOperand), usize),
        (c, (c_rows, c_cols)): (*mut T, (isize, isize)),
        accumulate: bool,
    ) {
        let s = &self.spec;
        let tap = &s.taps()[t];
        let is = |x: i64| x as isize;
        // SAFETY: the caller's bounds, forwarded.
        unsafe {
            T::gemm(
                rows,
                s.k,
                w,
                pa.offset(is(tap.a)),
                is(s.a.row_stride),
                is(s.a.col_stride),
                pb.offset(is(b.tap(t, tap)) + j as isize * is(b.view.col_stride)),
                is(b.view.row_stride),
                is(b.view.col_stride),
                c,
                c_rows,
                c_cols,
                accumulate,
            );
        }
    }

    /// Whether a product of an element of the block's A rows (at `pa`, `rows` of them) and
    /// of its B columns (at `pb`, `cols`), any tap, may pass the type's range: the largest
    /// magnitudes' product (in f64, so never itself overflowing for f32) above the type's
    /// largest finite value. A scan of each operand's block in memory order, or the whole
    /// buffer's largest magnitude where `known` gives it (never below the block's); NaNs are
    /// not counted (the fix-up finds the NaN they make).
    ///
    /// # Safety
    /// As in [`GemmCall::fix_up`].
    unsafe fn products_may_overflow<T: Float>(
        &self,
        pa: *const T,
        (pb, b): (*const T, &BOperand),
        (rows, cols): (usize, usize),
        known: [Option<f64>; 2],
    ) -> bool {
        let s = &self.spec;
        let taps = s.taps();
        // SAFETY: the caller's bounds: every tap's A rows and B columns of the block.
        let largest = unsafe {
            [
                known[0].unwrap_or_else(|| {
                    max_magnitude(pa, s.a.strides(), rows, s.k, || taps.iter().map(|t| t.a))
                }),
                known[1].unwrap_or_else(|| {
                    max_magnitude(pb, b.view.strides(), s.k, cols, || {
                        taps.iter().enumerate().map(|(t, tap)| b.tap(t, tap))
                    })
                }),
            ]
        };
        largest[0] * largest[1] > T::MAX_FINITE
    }

    /// Gives the block of C at `pc` (`rows × cols`, its A rows at `pa`, its B columns at `pb`)
    /// the interpreter's zeros and non-finite values.
    ///
    /// A zero the crate computed is +0 (its sums start at +0); the interpreter's, each tap's
    /// sum taken from −0 and the taps added in order, is −0 exactly when every step of every
    /// tap leaves its sum at −0 — once one does not, no later step brings −0 back (an exact
    /// zero sum of other values is +0). So the walk stops at the first step that leaves −0:
    /// one step for typical data, all of them only when the answer is −0. An infinite or NaN
    /// element may be the crate's partial sums passing the type's range (f32 sums in f32; f64
    /// reassociated) where the interpreter's ordered f64 sums stay finite: it is computed again
    /// the interpreter's way. Rare (overflowing or non-finite operands), and exact for
    /// non-finite operands too. A contiguous line of C is first tested whole, without branches
    /// (vectorised): most have neither. Lines run along C's contiguous direction: rows when
    /// its column stride is 1, columns when its row stride is 1 (a GEMM writing a transposed
    /// C). With `overflow` (a product of the block's operands may pass the type's range:
    /// [`GemmCall::products_may_overflow`]), every element is computed again the
    /// interpreter's way: the crate's fused multiply-adds never round a product, so a sum the
    /// interpreter makes infinite with one product rounded to `inf` may come out finite.
    ///
    /// # Safety
    /// As in [`GemmCall::item`]: the block and every element the taps' sums read are in
    /// bounds, C's block written by no one else until this returns.
    unsafe fn fix_up<T: Float>(
        &self,
        pa: *const T,
        (pb, b): (*const T, &BOperand),
        pc: *mut T,
        rows: usize,
        cols: usize,
        overflow: bool,
    ) {
        let s = &self.spec;
        let is = |x: i64| x as isize;
        let width = crate::vmath::path();
        let (rs, cs) = (is(s.c.row_stride), is(s.c.col_stride));
        let by_rows = cs == 1 || rs != 1;
        let (lines, len, line_stride) = if by_rows {
            (rows, cols, rs)
        } else {
            (cols, rows, cs)
        };
        let contiguous = if by_rows { cs == 1 } else { rs == 1 };
        // The interpreter's steps of element (i, j): tap by tap, each an f64 sum from −0.
        let tap_sum = |t: usize, i: isize, j: isize, until_not_negative_zero: bool| {
            let tap = &s.taps()[t];
            let (ta, tb) = (is(tap.a), is(b.tap(t, tap)));
            let (brs, bcs) = (is(b.view.row_stride), is(b.view.col_stride));
            let mut acc = -0.0f64;
            for p in 0..s.k as isize {
                // SAFETY: the caller's bounds (every tap's A row i and B column j).
                let (x, y) = unsafe {
                    (
                        *pa.offset(ta + i * is(s.a.row_stride) + p * is(s.a.col_stride)),
                        *pb.offset(tb + p * brs + j * bcs),
                    )
                };
                acc = T::mul_add(acc, x, y);
                if until_not_negative_zero && acc.to_bits() != (-0.0f64).to_bits() {
                    break;
                }
            }
            acc
        };
        for line in 0..lines as isize {
            // SAFETY: the line lies in the caller's block; contiguous lines are `len`
            // consecutive elements.
            let start = unsafe { pc.offset(line * line_stride) };
            if overflow {
                for e in 0..len as isize {
                    let (i, j) = if by_rows { (line, e) } else { (e, line) };
                    let mut taps = (0..s.taps().len()).map(|t| T::finish(tap_sum(t, i, j, false)));
                    let first = taps.next().unwrap_or(T::ZERO);
                    // SAFETY: element (i, j) of the caller's block.
                    unsafe { *pc.offset(i * rs + j * cs) = taps.fold(first, T::add) };
                }
                continue;
            }
            if contiguous {
                // SAFETY: a contiguous line is `len` consecutive elements of the caller's
                // block from `start` (above), read only while nothing writes them.
                let line = unsafe { std::slice::from_raw_parts(start, len) };
                if !any_special(line, width) {
                    continue;
                }
            }
            // The line's special elements, 64 at a time from a branch-free bit mask.
            let specials = (0..len).step_by(64).flat_map(|c0| {
                let n = (len - c0).min(64);
                let mut mask = if contiguous {
                    // SAFETY: as above, a part of the line.
                    let chunk = unsafe { std::slice::from_raw_parts(start.add(c0), n) };
                    special_mask(chunk, width)
                } else {
                    u64::MAX >> (64 - n)
                };
                std::iter::from_fn(move || {
                    let e = (mask != 0).then(|| c0 + mask.trailing_zeros() as usize)?;
                    mask &= mask - 1;
                    Some(e as isize)
                })
            });
            for e in specials {
                let (i, j) = if by_rows { (line, e) } else { (e, line) };
                // SAFETY: element (i, j) of the caller's block.
                let at = unsafe { &mut *pc.offset(i * rs + j * cs) };
                if !(*at).finite() {
                    let mut taps = (0..s.taps().len()).map(|t| T::finish(tap_sum(t, i, j, false)));
                    let first = taps.next().unwrap_or(T::ZERO);
                    *at = taps.fold(first, T::add);
                } else if *at == T::ZERO
                    && (0..s.taps().len())
                        .all(|t| tap_sum(t, i, j, true).to_bits() == (-0.0f64).to_bits())
                {
                    *at = T::finish(-0.0);
                }
            }
        }
    }
}

/// The largest magnitude of the `rows × cols` matrices with `strides` (rows, columns) at `p`
/// moved by each of `taps`, NaNs ignored: rows outside, columns inside, or
/// the other way round when rows are the nearer in memory, so the inner loop walks the
/// smaller stride. Where the taps' lines fill at least half of the memory between the first
/// and the last, that run is scanned once for all taps — elements between them that no tap
/// reads included, so the result may exceed the matrices' (never fall below it): a
/// convolution's image and filter are scanned once, not once per tap.
///
/// # Safety
/// Every element of the matrix lies in one allocation of `T`s `p` points into.
unsafe fn max_magnitude<T: Float, I: Iterator<Item = i64>>(
    p: *const T,
    (rs, cs): (i64, i64),
    rows: usize,
    cols: usize,
    taps: impl Fn() -> I,
) -> f64 {
    let (rs, cs) = (rs as isize, cs as isize);
    let (outer, outer_stride, inner, inner_stride) = if cs.unsigned_abs() <= rs.unsigned_abs() {
        (rows, rs, cols, cs)
    } else {
        (cols, cs, rows, rs)
    };
    let width = crate::vmath::path();
    let (count, first, last) = taps().fold((0usize, i64::MAX, i64::MIN), |(n, lo, hi), o| {
        (n + 1, lo.min(o), hi.max(o))
    });
    // The taps' lines of each outer index as one run of memory, when they fill at least
    // half of it (a filter's taps side by side; an image's taps shifted by a few rows).
    let span = (last - first) as i128 + (inner as i128 - 1) * inner_stride as i128 + 1;
    let dense = inner_stride > 0 && span <= 2 * (inner * count) as i128;
    let mut largest = 0.0f64;
    for o in 0..outer as isize {
        let at = |tap: i64| tap as isize + o * outer_stride;
        if dense {
            // SAFETY: the run lies between the line's first element of the lowest tap and
            // its last of the highest, both in bounds (the caller's), in one buffer.
            let run = unsafe { std::slice::from_raw_parts(p.offset(at(first)), span as usize) };
            largest = largest.max(largest_magnitude(run, width));
            continue;
        }
        for tap in taps() {
            // SAFETY: the caller's bounds.
            let line = unsafe { p.offset(at(tap)) };
            let m = if inner_stride == 1 {
                // SAFETY: the caller's bounds: the line's `inner` consecutive elements.
                largest_magnitude(unsafe { std::slice::from_raw_parts(line, inner) }, width)
            } else {
                (0..inner as isize)
                    // SAFETY: the caller's bounds.
                    .map(|i| unsafe { *line.offset(i * inner_stride) }.magnitude())
                    .fold(0.0, f64::max)
            };
            largest = largest.max(m);
        }
    }
    largest
}

/// Whether row `p` of a matrix of `cols` columns lies in its own band `offset + p·rs ..=
/// offset + p·rs + rs − 1`: rows one after another, columns moving forward within a row.
fn banded(v: &MatrixView, cols: usize) -> bool {
    let (rs, cs) = (v.row_stride, v.col_stride);
    rs > 0 && (cols == 1 || (cs > 0 && (cs as i128) * (cols as i128 - 1) < rs as i128))
}

/// Whether footprint `f` stays in band `p` of `v` (rows `v.row_stride` apart, `banded`) in
/// iteration `p`: it moves by the row stride and spans only band 0.
fn in_band(v: &MatrixView, f: Option<Footprint>) -> bool {
    f.is_some_and(|f| {
        f.stride == v.row_stride
            && v.offset <= f.lo
            && (f.hi as i128) < v.offset as i128 + v.row_stride as i128
    })
}

/// Kernel buffer `b` (index `i`) written only where A and B are not (`relation(i, t)`).
fn apart_from_operands(
    b: &BufferDecl,
    relation: &impl Fn(usize, usize) -> Relation,
    i: usize,
) -> Result<(), String> {
    if b.access.can_write()
        && (relation(i, 0) != Relation::Disjoint || relation(i, 1) != Relation::Disjoint)
    {
        return Err(format!(
            "kernel buffer %{} is written and shares memory with the GEMM's operands",
            b.name
        ));
    }
    Ok(())
}

/// Kernel buffer `b` against C, given how its memory relates to C's: no common memory, or C's
/// own buffer with accesses that `fit` their iteration's block of C (read or written `by`
/// its blocks).
fn on_c(b: &BufferDecl, relation: Relation, fit: bool, by: &str) -> Result<(), String> {
    match relation {
        Relation::Disjoint => Ok(()),
        Relation::Overlap => Err(format!(
            "kernel buffer %{} overlaps C's memory without being C's buffer",
            b.name
        )),
        Relation::Same if fit => Ok(()),
        Relation::Same => Err(format!(
            "kernel buffer %{} (C's buffer) is not read or written {by} of C",
            b.name
        )),
    }
}

/// How a kernel buffer's memory relates to a GEMM operand's (GemmCall::check_epilogue).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Relation {
    /// The same buffer (same start).
    Same,
    /// Overlapping memory from another start.
    Overlap,
    /// No common memory.
    Disjoint,
}

/// A GEMM and the JIT kernel after it (its *epilogue*) as one step: each work item computes
/// one block of C — a block of rows, or of columns, or with batch axes one batch index's
/// matrix — then runs the kernel's parallel loop over that block (the block's rows, or the one
/// iteration for that column block or batch index) while it is still in cache.
/// [`GemmEpilogue::new`] accepts the pair only when that gives the results of the GEMM
/// followed by the kernel (the conditions are `GemmCall`'s epilogue check, stated on the
/// buffer slots); each call checks them again on the memory actually bound. A call is
/// [`GemmEpilogue::call_bound`], defined in `kernel.rs` beside the kernel call it enters.
#[derive(Clone, Debug)]
pub struct GemmEpilogue {
    call: GemmCall,
    gemm_args: [usize; 3],
    kernel_args: Vec<usize>,
    /// The work items a kernel iteration follows ([`GemmCall::check_epilogue`]'s group).
    group: usize,
}

impl GemmEpilogue {
    /// The GEMM `spec` over slots `gemm_args` (A, B, C), then a kernel of `signature` over
    /// slots `kernel_args`; slots are indices into the references of a call, and two slots
    /// are taken to be the same memory exactly when they are equal. A typed
    /// [`RuntimeError::Gemm`] says why the pair cannot be one step.
    pub fn new(
        spec: GemmSpec,
        gemm_args: [usize; 3],
        signature: &KernelSignature,
        kernel_args: Vec<usize>,
    ) -> Result<GemmEpilogue, RuntimeError> {
        let call = GemmCall::new(spec)?;
        let fail = |message: String| RuntimeError::Gemm {
            gemm: call.spec.name.clone(),
            message,
        };
        if kernel_args.len() != signature.buffers.len() {
            return Err(fail(format!(
                "kernel @{} takes {} buffers, {} given",
                signature.name,
                signature.buffers.len(),
                kernel_args.len()
            )));
        }
        let relation = |i: usize, t: usize| {
            if kernel_args[i] == gemm_args[t] {
                Relation::Same
            } else {
                Relation::Disjoint
            }
        };
        let group = call.check_epilogue(signature, relation).map_err(fail)?;
        Ok(GemmEpilogue {
            call,
            gemm_args,
            kernel_args,
            group,
        })
    }

    /// The units the step runs the kernel over, for `weft explain` and the program's text:
    /// "row blocks" (a batch index's matrix is one block of rows), "column blocks", or
    /// "groups of G batch indices".
    pub fn blocks(&self) -> String {
        match (self.group, self.call.spec.split) {
            (g, _) if g > 1 => format!("groups of {g} batch indices"),
            (_, split) => format!("{} blocks", split.noun()),
        }
    }

    /// How the step runs kernel @`kernel`, for `weft explain`: each work item on its rows or
    /// its column block, or, grouped, each unit of G work items on its group of batch
    /// indices, right after the GEMM computed them.
    pub fn schedule(&self, kernel: &str) -> String {
        match (self.group, self.call.spec.split) {
            (g, _) if g > 1 => format!(
                "work items taken {g} at a time, {} units of consecutive batch indices: each \
                 unit runs kernel @{kernel}'s iteration of its group right after computing it",
                self.call.items / g
            ),
            (_, SplitDim::Rows) => {
                format!(
                    "each work item runs kernel @{kernel} on its rows right after computing them"
                )
            }
            (_, SplitDim::Columns) => format!(
                "each work item runs kernel @{kernel} on its column block right after computing it"
            ),
        }
    }

    /// The GEMM (with the blocks the step runs).
    pub fn gemm(&self) -> &GemmCall {
        &self.call
    }

    /// The slots of the GEMM's A, B and C.
    pub(crate) fn gemm_args(&self) -> [usize; 3] {
        self.gemm_args
    }

    /// The slots of the kernel's buffers.
    pub(crate) fn kernel_args(&self) -> &[usize] {
        &self.kernel_args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `C (2×2) = A (2×3) · B (3×2)`, all row-major from offset 0.
    fn spec() -> GemmSpec {
        GemmSpec {
            name: "t".into(),
            dtype: ScalarType::F32,
            m: 2,
            n: 2,
            k: 3,
            a: MatrixView {
                offset: 0,
                row_stride: 3,
                col_stride: 1,
            },
            b: MatrixView {
                offset: 0,
                row_stride: 2,
                col_stride: 1,
            },
            c: MatrixView {
                offset: 0,
                row_stride: 2,
                col_stride: 1,
            },
            batch: Vec::new(),
            lens: [6, 6, 4],
            split: SplitDim::Rows,
            block: 1,
            taps: Vec::new(),
        }
    }

    fn gemm_error(s: GemmSpec) -> String {
        match GemmCall::new(s) {
            Err(RuntimeError::Gemm { message, .. }) => message,
            other => panic!("expected a GEMM error, got {other:?}"),
        }
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        let mut s = spec();
        s.dtype = ScalarType::I32;
        assert!(gemm_error(s).contains("element type"));
        let mut s = spec();
        s.lens[0] = 5;
        assert!(gemm_error(s).contains("A reaches elements 0..=5"));
        let mut s = spec();
        s.b.row_stride = -2;
        assert!(gemm_error(s).contains("B reaches elements -4"));
        let mut s = spec();
        s.c.row_stride = 1;
        assert!(gemm_error(s).contains("share an address"));
        let mut s = spec();
        s.k = 0;
        assert!(gemm_error(s).contains("empty"));
        let mut s = spec();
        s.block = 0;
        assert!(gemm_error(s).contains("block"));
        let mut s = spec();
        s.a.offset = i64::MAX;
        assert!(GemmCall::new(s).is_err());
    }

    fn reference(name: &str, data: &[f32]) -> DeviceBufferReference {
        DeviceBufferReference::to_storage(name, DeviceBufferStorage::from_slice(data).unwrap())
    }

    /// A GEMM of random shape, taps and layouts for the engines to agree on: A column- or
    /// row-major, B with `k` or `n` contiguous or a filter's taps side by side, C column-major,
    /// row-major or strided both ways; each tap moves A by a few rows and B by a tap index.
    fn random_spec(
        (m, n, k, taps): (usize, usize, usize, usize),
        (a_layout, b_layout, c_layout): (u8, u8, u8),
        split_rows: bool,
        block: usize,
    ) -> GemmSpec {
        let shifts = 3;
        let a_rows = m + shifts * taps;
        let (ars, acs) = match a_layout {
            0 => (1, a_rows as i64),
            _ => (k as i64 + 1, 1),
        };
        let (brs, bcs, tap_b) = match b_layout {
            0 => (1, (k * taps) as i64, k as i64),
            1 => ((n * taps) as i64, 1, n as i64),
            _ => (taps as i64, (k * taps) as i64, 1),
        };
        let (crs, ccs) = match c_layout {
            0 => (1, m as i64),
            1 => (n as i64, 1),
            _ => (2, 2 * m as i64),
        };
        let len = |rs: i64, cs: i64, r: usize, c: usize, extra: i64| {
            ((r as i64 - 1) * rs + (c as i64 - 1) * cs + extra + 1) as u64
        };
        let a_extra = (shifts * (taps - 1)) as i64 * ars;
        GemmSpec {
            name: "random".into(),
            dtype: ScalarType::F32,
            m,
            n,
            k,
            a: MatrixView {
                offset: 0,
                row_stride: ars,
                col_stride: acs,
            },
            b: MatrixView {
                offset: 0,
                row_stride: brs,
                col_stride: bcs,
            },
            c: MatrixView {
                offset: 0,
                row_stride: crs,
                col_stride: ccs,
            },
            batch: Vec::new(),
            lens: [
                len(ars, acs, m, k, a_extra),
                len(brs, bcs, k, n, (taps as i64 - 1) * tap_b),
                len(crs, ccs, m, n, 0),
            ],
            split: if split_rows {
                SplitDim::Rows
            } else {
                SplitDim::Columns
            },
            block,
            taps: (0..taps as i64)
                .map(|t| GemmTap {
                    a: (shifts as i64 * t) * ars,
                    b: t * tap_b,
                })
                .collect(),
        }
    }

    /// Runs `call` on 1 and 2 threads (asserting the same bits) and returns C.
    fn run_both(call: &GemmCall, a: &[f32], b: &[f32]) -> Vec<f32> {
        let run = |threads: usize| {
            let refs = [
                reference("a", a),
                reference("b", b),
                reference("c", &vec![f32::NAN; call.spec().lens[2] as usize]),
            ];
            let pool = ThreadPool::new(threads);
            call.call_bound(Some(&pool), &refs, None, [0, 1, 2])
                .unwrap();
            refs[2].storage().to_vec::<f32>().unwrap()
        };
        let one = run(1);
        let two = run(2);
        assert_eq!(
            one.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            two.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        one
    }

    /// A zero, an infinity and a NaN in rows of C in different tiles (and the last slice of a
    /// long `k`) reach the fix-up on every engine and layout: a row of −0 in A over a
    /// positive B is −0 (the interpreter's sums stay −0; the tiles' and the crate's are +0),
    /// an infinite or NaN element of A makes its row infinite or NaN, and no other row moves.
    #[test]
    fn special_elements_in_any_tile_get_the_interpreters_values() {
        let (m, n) = (40, 13);
        for k in [5, 1500] {
            for layouts in [(0, 0, 0), (1, 1, 1), (0, 2, 2), (1, 0, 1)] {
                let spec = random_spec((m, n, k, 1), layouts, true, 24);
                let at = |v: &MatrixView, r: usize, c: usize| {
                    (v.offset + r as i64 * v.row_stride + c as i64 * v.col_stride) as usize
                };
                let mut a: Vec<f32> = (0..spec.lens[0] as usize)
                    .map(|i| 0.5 + (i as f32 * 0.37).sin().abs())
                    .collect();
                let b: Vec<f32> = (0..spec.lens[1] as usize)
                    .map(|i| 0.5 + (i as f32 * 0.61).cos().abs())
                    .collect();
                // Row 30 in the second block of rows, apart from the infinity (a block with one
                // is summed again whole, as its products may overflow).
                for p in 0..k {
                    a[at(&spec.a, 30, p)] = -0.0;
                }
                a[at(&spec.a, 37, k - 1)] = f32::NAN;
                a[at(&spec.a, 5, 0)] = f32::INFINITY;
                let mut call = GemmCall::new(spec.clone()).unwrap();
                for tiles in engines() {
                    call.tiles = tiles;
                    let c = run_both(&call, &a, &b);
                    for i in 0..m {
                        for j in 0..n {
                            let v = c[at(&spec.c, i, j)];
                            let ok = match i {
                                30 => v.to_bits() == (-0.0f32).to_bits(),
                                37 => v.is_nan(),
                                5 => v == f32::INFINITY,
                                _ => v.is_finite() && v > 0.0,
                            };
                            assert!(ok, "k {k}, {layouts:?}, tiles {tiles}: ({i}, {j}) = {v}");
                        }
                    }
                }
            }
        }
    }

    /// The tiles' overflow scan reads only what the call packed: an earlier call's huge values
    /// left in the thread's scratch do not send a later, smaller call to the interpreter's
    /// sums (whose bits differ from the tiles'), so its result does not depend on history.
    #[test]
    fn an_earlier_calls_packing_does_not_change_a_later_result() {
        if !gemm_tiles::runnable() {
            return;
        }
        let run = |spec: &GemmSpec, value: f32| {
            let mut call = GemmCall::new(spec.clone()).unwrap();
            call.tiles = true;
            let a: Vec<f32> = (0..spec.lens[0])
                .map(|i| value * (i as f32 * 0.37).sin())
                .collect();
            let b: Vec<f32> = (0..spec.lens[1])
                .map(|i| 10.0 * (i as f32 * 0.61).cos())
                .collect();
            let refs = [
                reference("a", &a),
                reference("b", &b),
                reference("c", &vec![0.0; spec.lens[2] as usize]),
            ];
            call.call_bound(None, &refs, None, [0, 1, 2]).unwrap();
            refs[2].storage().to_vec::<f32>().unwrap()
        };
        let big = random_spec((160, 12, 40, 2), (0, 0, 0), true, 160);
        let small = random_spec((20, 7, 9, 1), (0, 0, 0), true, 20);
        // On a fresh thread: an empty scratch.
        let fresh = std::thread::spawn({
            let small = small.clone();
            move || run(&small, 1.0)
        })
        .join()
        .unwrap();
        let _ = run(&big, 3e38);
        let after = run(&small, 1.0);
        let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&after), bits(&fresh));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// weft's tiles (where the CPU has them, on any shape) and the crate compute every
        /// element within the f32 bound `K·u·Σ|a·b|` of an f64 reference (K = k × taps),
        /// the tiles bit-identically on any thread count, C's elements outside the
        /// matrix untouched.
        #[test]
        fn the_tiles_and_the_crate_agree_with_a_reference(
            // Past 128 rows: several chunks of packed A; past 256 terms: several slices of k.
            m in proptest::prop_oneof![1usize..40, 130usize..170],
            n in 1usize..15,
            k in proptest::prop_oneof![1usize..24, 250usize..300],
            taps in 1usize..4,
            a_layout in 0u8..2, b_layout in 0u8..3, c_layout in 0u8..3,
            split_rows: bool, block in 1usize..40, seed in 0u32..1000,
        ) {
            let spec = random_spec((m, n, k, taps), (a_layout, b_layout, c_layout), split_rows, block);
            let value = |i: usize, salt: u32| ((i as f32 + 0.5) * 0.731 + (seed + salt) as f32).sin();
            let a: Vec<f32> = (0..spec.lens[0] as usize).map(|i| value(i, 0)).collect();
            let b: Vec<f32> = (0..spec.lens[1] as usize).map(|i| value(i, 7)).collect();
            let mut call = GemmCall::new(spec.clone()).unwrap();
            for tiles in engines() {
                call.tiles = tiles;
                let c = run_both(&call, &a, &b);
                let near = near_the_reference(&spec, (&a, &b), &c);
                proptest::prop_assert!(near.is_ok(), "tiles {}: {}", tiles, near.unwrap_err());
            }
        }
    }

    /// Whether every element of `c` is within the f32 bound `K·u·Σ|a·b|` of an f64 reference
    /// (K = k × taps) and every element outside the matrix is untouched (NaN, as
    /// [`run_both`] leaves it); the first that is not, in words.
    fn near_the_reference(
        spec: &GemmSpec,
        (a, b): (&[f32], &[f32]),
        c: &[f32],
    ) -> Result<(), String> {
        let at = |v: &MatrixView, r: usize, c: usize, shift: i64| {
            (v.offset + shift + r as i64 * v.row_stride + c as i64 * v.col_stride) as usize
        };
        let mut written = vec![false; c.len()];
        for i in 0..spec.m {
            for j in 0..spec.n {
                let (mut sum, mut bound) = (0.0f64, 0.0f64);
                for tap in spec.taps() {
                    for p in 0..spec.k {
                        let x = f64::from(a[at(&spec.a, i, p, tap.a)]);
                        let y = f64::from(b[at(&spec.b, p, j, tap.b)]);
                        sum += x * y;
                        bound += (x * y).abs();
                    }
                }
                let e = at(&spec.c, i, j, 0);
                written[e] = true;
                let terms = spec.k * spec.taps().len();
                let tolerance = terms as f64 * f64::from(f32::EPSILON) * bound + 1e-30;
                if (f64::from(c[e]) - sum).abs() > tolerance {
                    return Err(format!("({i}, {j}) = {} against {sum}", c[e]));
                }
            }
        }
        match c
            .iter()
            .enumerate()
            .find(|(e, v)| !written[*e] && !v.is_nan())
        {
            Some((e, _)) => Err(format!("element {e}, outside C, written")),
            None => Ok(()),
        }
    }

    /// A one-tap call the crate would run slowly in place — C's rows and B's terms contiguous
    /// (a linear layer's `x · Wᵀ`), or C column-major with 8 rows and B's columns contiguous —
    /// is computed in the other order in a scratch and copied into C, in chunks of columns
    /// (also forced narrow, so a block takes several), and agrees with the reference; the
    /// other layouts, or few terms, leave C to the crate.
    #[test]
    fn c_is_staged_where_the_crate_would_pack_more_than_it_multiplies() {
        let shape = (8, 400, 300, 1);
        for (layouts, row_major) in [((1, 0, 1), false), ((0, 1, 0), true)] {
            let spec = random_spec(shape, layouts, true, 8);
            let mut call = GemmCall::new(spec.clone()).unwrap();
            call.tiles = false;
            let staging = call.staging.expect("staged");
            assert_eq!((staging.columns, staging.row_major), (400, row_major));
            assert!(call.c_staging().unwrap().contains("in a scratch"));
            let value = |i: usize, salt: f32| ((i as f32 + 0.5) * 0.731 + salt).sin();
            let a: Vec<f32> = (0..spec.lens[0] as usize).map(|i| value(i, 0.0)).collect();
            let b: Vec<f32> = (0..spec.lens[1] as usize).map(|i| value(i, 7.0)).collect();
            for columns in [7, 400] {
                call.staging = Some(Staging { columns, ..staging });
                let c = run_both(&call, &a, &b);
                near_the_reference(&spec, (&a, &b), &c).unwrap();
            }
        }
        for (shape, layouts) in [
            (shape, (1, 0, 0)),
            (shape, (1, 1, 1)),
            ((8, 400, 100, 1), (1, 0, 1)),
            ((200, 400, 300, 1), (1, 0, 1)),
        ] {
            let other = GemmCall::new(random_spec(shape, layouts, true, shape.0)).unwrap();
            assert_eq!(other.staging, None, "{shape:?} {layouts:?}");
            assert_eq!(other.c_staging(), None);
        }
    }

    #[test]
    fn computes_over_storages_and_checks_them() {
        let call = GemmCall::new(spec()).unwrap();
        let refs = [
            reference("a", &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
            reference("b", &[1.0, 0.0, 0.0, 1.0, 1.0, -1.0]),
            reference("c", &[9.0; 4]),
            reference("short", &[0.0; 3]),
        ];
        let pool = ThreadPool::new(2);
        call.call_bound(Some(&pool), &refs, None, [0, 1, 2])
            .unwrap();
        assert_eq!(
            refs[2].storage().to_vec::<f32>().unwrap(),
            [4.0, -1.0, 10.0, -1.0]
        );
        assert!(matches!(
            call.call_bound(None, &refs, None, [0, 1, 3]),
            Err(RuntimeError::BufferMismatch { .. })
        ));
        assert!(matches!(
            call.call_bound(None, &refs, None, [0, 1, 9]),
            Err(RuntimeError::BufferCount { .. })
        ));
        // C over A's storage: refused before anything runs.
        assert!(matches!(
            call.call_bound(None, &refs, None, [0, 1, 0]),
            Err(RuntimeError::Gemm { .. })
        ));
    }

    /// A kernel copying C (2 x 2, buffer 0) into buffer 1 with `index` for both, over a
    /// parallel loop of `rows` iterations.
    fn epilogue(index: &str, rows: u64) -> KernelSignature {
        let text = format!(
            "kernel @e {{\n  buffer %c: f32[6] read\n  buffer %o: f32[6] write\n  \
             loop %i0 in 0..{rows} parallel {{\n    loop %i1 in 0..2 {{\n      \
             %v0: f32 = load %c[{index}]\n      store %o[{index}], %v0\n    }}\n  }}\n}}\n"
        );
        KernelSignature::of(&weft_ir::loop_ir::parse_kernel("e.lir", &text).unwrap())
    }

    /// Why `GemmEpilogue::new` refuses GEMM `spec` then a kernel of `signature`.
    fn refused(spec: GemmSpec, signature: &KernelSignature, kernel_args: Vec<usize>) -> String {
        match GemmEpilogue::new(spec, [0, 1, 2], signature, kernel_args) {
            Err(RuntimeError::Gemm { message, .. }) => message,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    fn refusal(signature: &KernelSignature, kernel_args: Vec<usize>) -> String {
        refused(spec(), signature, kernel_args)
    }

    #[test]
    fn an_epilogue_fits_only_row_by_row_and_away_from_the_operands() {
        let rows = epilogue("2*%i0 + %i1", 2);
        let f = Footprint {
            stride: 2,
            lo: 0,
            hi: 1,
        };
        assert_eq!([rows.footprint(0), rows.footprint(1)], [Some(f), Some(f)]);
        assert!(GemmEpilogue::new(spec(), [0, 1, 2], &rows, vec![2, 3]).is_ok());
        // In place: the kernel writes C's own rows.
        assert!(GemmEpilogue::new(spec(), [0, 1, 2], &rows, vec![2, 2]).is_ok());
        // Columns of C.
        let columns = epilogue("%i0 + 2*%i1", 2);
        assert!(refusal(&columns, vec![2, 3]).contains("row by row"));
        // Writing B, or A by other rows than A's (A's rows are 3 long).
        assert!(refusal(&rows, vec![2, 1]).contains("shares memory"));
        assert!(refusal(&rows, vec![2, 0]).contains("shares memory"));
        // A parallel loop over something else than C's rows.
        assert!(refusal(&epilogue("2*%i0 + %i1", 3), vec![2, 3]).contains("parallel loop"));
        // Batch axes, and a wrong buffer count.
        let mut batched = spec();
        batched.batch.push(BatchAxis {
            len: 1,
            strides: [0, 0, 0],
        });
        assert!(GemmEpilogue::new(batched, [0, 1, 2], &rows, vec![2, 3]).is_err());
        assert!(refusal(&rows, vec![2]).contains("buffers"));
    }

    /// C (2 x 4, row stride 4) = A (2 x 3) · B (3 x 4), in column blocks of `block`.
    fn column_spec(block: usize) -> GemmSpec {
        let c = MatrixView {
            offset: 0,
            row_stride: 4,
            col_stride: 1,
        };
        GemmSpec {
            n: 4,
            b: c,
            c,
            lens: [6, 12, 8],
            split: SplitDim::Columns,
            block,
            ..spec()
        }
    }

    /// A kernel copying C (buffer 0) into buffer 1 with `index` for both, over a parallel
    /// loop `%j` of `blocks` iterations around the rows `%i0` and a column block's `%i1`.
    fn column_epilogue(index: &str, blocks: u64) -> KernelSignature {
        let text = format!(
            "kernel @e {{\n  buffer %c: f32[8] read\n  buffer %o: f32[8] write\n  \
             loop %j in 0..{blocks} parallel {{\n    loop %i0 in 0..2 {{\n      \
             loop %i1 in 0..2 {{\n        %v0: f32 = load %c[{index}]\n        \
             store %o[{index}], %v0\n      }}\n    }}\n  }}\n}}\n"
        );
        KernelSignature::of(&weft_ir::loop_ir::parse_kernel("e.lir", &text).unwrap())
    }

    #[test]
    fn an_epilogue_fits_column_blocks_only_block_by_block_and_away_from_the_operands() {
        let blocks = column_epilogue("4*%i0 + 2*%j + %i1", 2);
        assert_eq!(
            blocks.accesses[0],
            [AccessPattern {
                parallel: 2,
                offset: 0,
                terms: vec![(4, 2), (1, 2)],
            }]
        );
        assert!(GemmEpilogue::new(column_spec(2), [0, 1, 2], &blocks, vec![2, 3]).is_ok());
        // In place: the kernel writes C's own column block.
        assert!(GemmEpilogue::new(column_spec(2), [0, 1, 2], &blocks, vec![2, 2]).is_ok());
        // Reading the next block's first column too; blocks that do not tile C's columns; a
        // parallel loop over another count.
        let wide = column_epilogue("4*%i0 + 2*%j + 2*%i1", 2);
        assert!(refused(column_spec(2), &wide, vec![2, 3]).contains("column block by column block"));
        assert!(refused(column_spec(3), &blocks, vec![2, 3]).contains("whole number"));
        let three = column_epilogue("4*%i0 + 2*%j + %i1", 3);
        assert!(refused(column_spec(2), &three, vec![2, 3]).contains("column blocks"));
        // Writing A or B, which every item reads.
        assert!(refused(column_spec(2), &blocks, vec![2, 1]).contains("shares memory"));
        assert!(refused(column_spec(2), &blocks, vec![2, 0]).contains("shares memory"));
    }

    /// A 1-D convolution as a GEMM of 3 taps: C[i, j] = Σ_t Σ_p x[p·10 + i + t] · w[j·6 +
    /// p·3 + t] for 8 positions i, 2 channels p, 2 features j (B's rows strided: packed).
    fn tap_spec() -> GemmSpec {
        GemmSpec {
            name: "taps".into(),
            dtype: ScalarType::F32,
            m: 8,
            n: 2,
            k: 2,
            a: MatrixView {
                offset: 0,
                row_stride: 1,
                col_stride: 10,
            },
            b: MatrixView {
                offset: 0,
                row_stride: 3,
                col_stride: 6,
            },
            c: MatrixView {
                offset: 0,
                row_stride: 1,
                col_stride: 8,
            },
            batch: Vec::new(),
            lens: [20, 12, 16],
            split: SplitDim::Rows,
            block: 8,
            taps: (0..3).map(|t| GemmTap { a: t, b: t }).collect(),
        }
    }

    /// The interpreter's taps: each an f64 sum of f32 products from −0 rounded to f32, added in
    /// f32 in order.
    fn taps_by_hand(x: &[f32], w: &[f32]) -> Vec<f32> {
        let mut c = vec![0.0f32; 16];
        for j in 0..2 {
            for i in 0..8 {
                let tap = |t: usize| {
                    let sum = (0..2).fold(-0.0f64, |acc, p| {
                        acc + f64::from(x[p * 10 + i + t] * w[j * 6 + p * 3 + t])
                    });
                    sum as f32
                };
                c[j * 8 + i] = tap(0) + tap(1) + tap(2);
            }
        }
        c
    }

    /// The engines this CPU can run a call on: the crate, and weft's tiles where it has AVX2
    /// and FMA (the AVX-512 hosts' default is the crate, but the tiles run there too).
    fn engines() -> Vec<bool> {
        let mut engines = vec![false];
        if gemm_tiles::runnable() {
            engines.push(true);
        }
        engines
    }

    /// C on every engine ([`engines`]).
    fn run_taps(spec: GemmSpec, x: &[f32], w: &[f32]) -> Vec<Vec<f32>> {
        let mut call = GemmCall::new(spec).unwrap();
        engines()
            .into_iter()
            .map(|tiles| {
                call.tiles = tiles;
                let refs = [
                    reference("x", x),
                    reference("w", w),
                    reference("c", &[7.0; 16]),
                ];
                call.call_bound(Some(&ThreadPool::new(2)), &refs, None, [0, 1, 2])
                    .unwrap();
                refs[2].storage().to_vec::<f32>().unwrap()
            })
            .collect()
    }

    #[test]
    fn taps_are_summed_into_c_as_the_interpreter_sums_them() {
        let x: Vec<f32> = (0..20).map(|v| (v as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..12).map(|v| (v as f32 * 0.71).cos()).collect();
        let call = GemmCall::new(tap_spec()).unwrap();
        assert_eq!(call.packed_b_len(), Some(3 * 2 * 2));
        assert!(call.spec().display().contains("3 taps summed in C"));
        assert_eq!(call.spec().work(), 8 * 2 * 2 * 3);
        let got = run_taps(tap_spec(), &x, &w);
        for got in &got {
            for (g, want) in got.iter().zip(taps_by_hand(&x, &w)) {
                assert!((g - want).abs() <= 1e-6, "{got:?}");
            }
        }
        // B read in place (unit row stride: no packing) gives the same.
        let mut direct = tap_spec();
        direct.b = MatrixView {
            offset: 0,
            row_stride: 1,
            col_stride: 6,
        };
        direct.taps = (0..3).map(|t| GemmTap { a: t, b: 2 * t }).collect();
        assert_eq!(GemmCall::new(direct.clone()).unwrap().packed_b_len(), None);
        let w2: Vec<f32> = (0..12)
            .map(|e| w[(e / 6) * 6 + (e % 2) * 3 + (e % 6) / 2])
            .collect();
        assert_eq!(run_taps(direct, &x, &w2), got);
    }

    #[test]
    fn taps_keep_the_interpreters_negative_zeros_and_finite_sums() {
        // All products −0: every tap's sum stays −0, so C is −0; a +0 tap makes it +0.
        let x = vec![-0.0f32; 20];
        let mut w = vec![1.0f32; 12];
        for c in run_taps(tap_spec(), &x, &w) {
            assert!(
                c.iter().all(|v| v.to_bits() == (-0.0f32).to_bits()),
                "{c:?}"
            );
        }
        w[0] = -1.0; // feature 0, channel 0, tap 0: −0 · −1 = +0.
        for c in run_taps(tap_spec(), &x, &w) {
            assert_eq!(c[0].to_bits(), 0.0f32.to_bits());
            assert_eq!(c[8].to_bits(), (-0.0f32).to_bits());
        }
        // Channel sums past f32's range within a tap, back in range in f64: the crate's f32
        // sum overflows, the interpreter's does not.
        let mut x = vec![0.0f32; 20];
        let mut w = vec![0.0f32; 12];
        x[0] = 3e38;
        x[10] = 3e38;
        w[0] = 1.0; // channel 0, tap 0
        w[3] = -1.0; // channel 1, tap 0
        x[1] = 3e38; // position 0 at tap 1 reads x[1]
        w[1] = 1.0;
        for c in run_taps(tap_spec(), &x, &w) {
            assert_eq!(c, taps_by_hand(&x, &w));
            assert_eq!(c[0], 3e38);
        }
        // A product past f32's range after a finite one: the interpreter rounds it to `inf`,
        // the crate's fused multiply-add adds it unrounded to −1e38 and gets 3e38.
        // Either channel first, whichever order the crate sums in.
        for (finite, past) in [((-1e19, 1e19), (2e19, 2e19)), ((2e19, 2e19), (-1e19, 1e19))] {
            let mut x = vec![0.0f32; 20];
            let mut w = vec![0.0f32; 12];
            (x[0], w[0]) = finite; // channel 0, tap 0
            (x[10], w[3]) = past; // channel 1, tap 0
            for c in run_taps(tap_spec(), &x, &w) {
                assert_eq!(c, taps_by_hand(&x, &w));
                assert_eq!(c[0], f32::INFINITY);
            }
        }
    }

    #[test]
    fn taps_wider_than_the_crates_unpacked_width_run_in_column_chunks() {
        // C (20 × 50, column-major) = Σ_t A_t (20 × 3, column-major, shifted by t) · B_t
        // (3 × 50, row-major, moved by t·150): more columns than one unpacked call takes.
        let (m, n, k) = (20usize, 50usize, 3usize);
        let spec = GemmSpec {
            name: "wide".into(),
            dtype: ScalarType::F32,
            m,
            n,
            k,
            a: MatrixView {
                offset: 0,
                row_stride: 1,
                col_stride: 22,
            },
            b: MatrixView {
                offset: 0,
                row_stride: n as i64,
                col_stride: 1,
            },
            c: MatrixView {
                offset: 0,
                row_stride: 1,
                col_stride: m as i64,
            },
            batch: Vec::new(),
            lens: [66, 300, 1000],
            split: SplitDim::Rows,
            block: m,
            taps: (0..2).map(|t| GemmTap { a: t, b: t * 150 }).collect(),
        };
        let call = GemmCall::new(spec.clone()).unwrap();
        assert!(
            call.tap_columns < n,
            "{} columns per call",
            call.tap_columns
        );
        let x: Vec<f32> = (0..66).map(|v| (v as f32 * 0.37).sin()).collect();
        let w: Vec<f32> = (0..300).map(|v| (v as f32 * 0.71).cos()).collect();
        let refs = [
            reference("x", &x),
            reference("w", &w),
            reference("c", &[7.0; 1000]),
        ];
        call.call_bound(None, &refs, None, [0, 1, 2]).unwrap();
        let got = refs[2].storage().to_vec::<f32>().unwrap();
        for j in 0..n {
            for i in 0..m {
                let want: f32 = (0..2)
                    .map(|t| {
                        (0..k)
                            .map(|p| x[t + i + 22 * p] * w[t * 150 + p * n + j])
                            .sum::<f32>()
                    })
                    .sum();
                assert!((got[j * m + i] - want).abs() <= 1e-5, "({i}, {j})");
            }
        }
        assert!(
            got[m * n..].iter().all(|v| *v == 7.0),
            "C written past its columns"
        );
    }

    #[test]
    fn a_tap_out_of_bounds_is_a_typed_error() {
        let mut s = tap_spec();
        s.taps[2].a = 3;
        assert!(gemm_error(s).contains("A reaches elements 0..=20"));
        let mut s = tap_spec();
        s.taps[1].b = -1;
        assert!(gemm_error(s).contains("B reaches elements -1"));
        let mut s = tap_spec();
        s.a.offset = 1;
        s.taps[1].a = i64::MAX;
        assert!(gemm_error(s).contains("past i64"));
    }

    /// A kernel copying C (a batch of 2 matrices of 4, buffer 0) into buffer 1 with `index`,
    /// over a parallel loop of `batch` iterations.
    fn batch_epilogue(index: &str, batch: u64) -> KernelSignature {
        let text = format!(
            "kernel @e {{\n  buffer %c: f32[8] read\n  buffer %o: f32[8] write\n  \
             loop %i0 in 0..{batch} parallel {{\n    loop %i1 in 0..4 {{\n      \
             %v0: f32 = load %c[{index}]\n      store %o[{index}], %v0\n    }}\n  }}\n}}\n"
        );
        KernelSignature::of(&weft_ir::loop_ir::parse_kernel("e.lir", &text).unwrap())
    }

    #[test]
    fn an_epilogue_after_a_batched_gemm_fits_batch_index_by_batch_index() {
        // C[b] (2 × 2, row-major) = A[b] (2 × 3) · B, two batch indices 4 elements apart.
        let batched = |block: usize| GemmSpec {
            batch: vec![BatchAxis {
                len: 2,
                strides: [6, 0, 4],
            }],
            lens: [12, 6, 8],
            block,
            ..spec()
        };
        let fits = batch_epilogue("4*%i0 + %i1", 2);
        assert!(GemmEpilogue::new(batched(2), [0, 1, 2], &fits, vec![2, 3]).is_ok());
        // In place: the kernel writes C's own batch index.
        assert!(GemmEpilogue::new(batched(2), [0, 1, 2], &fits, vec![2, 2]).is_ok());
        // Several blocks per batch index; a loop over another count; reading the next
        // batch index's matrix; writing A.
        assert!(refused(batched(1), &fits, vec![2, 3]).contains("several blocks"));
        let three = batch_epilogue("4*%i0 + %i1", 3);
        assert!(refused(batched(2), &three, vec![2, 3]).contains("batch indices"));
        let wide = batch_epilogue("4*%i0 + 2*%i1", 2);
        assert!(refused(batched(2), &wide, vec![2, 3]).contains("batch index by batch index"));
        assert!(refused(batched(2), &fits, vec![2, 0]).contains("shares memory"));
    }

    #[test]
    fn an_epilogue_over_a_coarser_axis_fits_equal_groups_of_batch_indices() {
        // C[b] (2 × 2) for four batch indices 4 elements apart; the kernel's loop over 2
        // iterations of 8 elements each: groups of two batch indices.
        let batched = GemmSpec {
            batch: vec![BatchAxis {
                len: 4,
                strides: [6, 0, 4],
            }],
            lens: [24, 6, 16],
            block: 2,
            ..spec()
        };
        let kernel = |index: &str, extent: u64, inner: u64| {
            let text = format!(
                "kernel @e {{\n  buffer %c: f32[16] read\n  buffer %o: f32[16] write\n  \
                 loop %i0 in 0..{extent} parallel {{\n    loop %i1 in 0..{inner} {{\n      \
                 %v0: f32 = load %c[{index}]\n      store %o[{index}], %v0\n    }}\n  }}\n}}\n"
            );
            KernelSignature::of(&weft_ir::loop_ir::parse_kernel("e.lir", &text).unwrap())
        };
        let pairs = GemmEpilogue::new(
            batched.clone(),
            [0, 1, 2],
            &kernel("8*%i0 + %i1", 2, 8),
            vec![2, 3],
        )
        .unwrap();
        assert_eq!(pairs.blocks(), "groups of 2 batch indices");
        // Four groups of one: the batch indices themselves.
        let ones = GemmEpilogue::new(
            batched.clone(),
            [0, 1, 2],
            &kernel("4*%i0 + %i1", 4, 4),
            vec![2, 3],
        )
        .unwrap();
        assert_eq!(ones.blocks(), "row blocks");
        // Three iterations do not cut four indices evenly; an iteration reading past its
        // group's bands.
        assert!(
            refused(batched.clone(), &kernel("4*%i0 + %i1", 3, 4), vec![2, 3])
                .contains("equal groups")
        );
        assert!(refused(batched, &kernel("4*%i0 + %i1", 2, 8), vec![2, 3])
            .contains("batch index by batch index"));
    }

    #[test]
    fn at_most_one_block_per_thread_of_at_least_min_block() {
        // (m, n, threads) → (split, block), with min_block 128 and at most 64 blocks.
        let cases = [
            ((1024, 1024, 2), (SplitDim::Rows, 512)),
            ((1024, 1024, 16), (SplitDim::Rows, 128)),
            ((64, 256, 2), (SplitDim::Columns, 128)),
            ((5, 3, 2), (SplitDim::Rows, 16)),
            ((100_000, 7, 1), (SplitDim::Rows, 100_000)),
            ((100_000, 7, 128), (SplitDim::Rows, 1568)),
        ];
        for ((m, n, threads), want) in cases {
            assert_eq!(
                GemmSpec::blocks_for(m, n, 128, 64, threads),
                want,
                "{m}x{n}"
            );
        }
    }
}
