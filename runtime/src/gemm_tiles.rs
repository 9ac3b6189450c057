//! weft's own f32 GEMM tiles for AVX2 with FMA and for AVX-512F: one block of a GEMM call of
//! any number of taps, `C = Σ_t A_t · B_t`, every tap summed in registers.
//!
//! Why: the `gemm` crate takes one tap per call, so a convolution's nine taps pass C through
//! memory nine times and each call packs its operands again; with ResNet-50's `k` of 64 to
//! 512 per tap most of the crate's time went to that. Here a tile of C stays in accumulator
//! registers ([`Width`]: 16 rows × 6 columns in twelve `ymm`, or 32 × 8 in sixteen
//! `zmm`) over a slice of `k` (about [`SLICE_TERMS`] terms,
//! every tap), A is packed per slice and chunk of rows, B is broadcast element by element from
//! wherever it is (a filter's taps are adjacent in memory, so one pass over B reads it in
//! order), and C is written once per slice.
//!
//! Assumes: a block as [`GemmCall`](crate::gemm) cuts it: every element `A[i + tap.a, p]`,
//! `B[p + tap.b, j]` (offsets as given, strides as given) and `C[i, j]` for `i < rows`,
//! `p < k`, `j < cols` and every tap lies in memory the caller holds (A and B readable, C
//! writable, C's elements distinct and apart from A and B); the CPU has AVX2 and FMA
//! ([`runnable`]), and AVX-512F for [`Width::Zmm`]; one to [`MAX_TAPS`] taps.
//!
//! Guarantees: `C[i, j]` = the sum of the slices' sums in slice order, each slice's the f32
//! sum from +0 of its `A_t[i, p] · B_t[p, j]`, each fused multiply-added, `p` outer and the
//! taps inner in their order — the same order for every element whatever the block, chunk or
//! tile or width, so results do not depend on blocks, thread counts or the host's vector width
//! (AVX2 and AVX-512 hosts give the same bits); each element goes through at
//! most [`chain`] roundings, within `γ_chain · Σ |A·B|` (docs/numerics.md). C's earlier
//! contents are read only where an earlier slice wrote them. Allocates nothing: A is packed
//! into scratch the caller lends (`gemm.rs`: its per-thread f32 scratch, kept between calls).
//!
//! `unsafe` here: the intrinsics and the raw reads and writes, each with the bounds argument
//! above (docs/ARCHITECTURE.md).

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

use crate::gemm_float;
use std::sync::OnceLock;

use crate::target::{Isa, Target};

/// The registers the tiles run in, which set their shape: two vectors of rows by as many
/// columns as leave three registers free (A's two vectors and B's broadcast).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Width {
    /// AVX2 with FMA: 16 rows (two `ymm`) × 6 columns, twelve accumulators of sixteen.
    Ymm,
    /// AVX-512F: 32 rows (two `zmm`) × 8 columns: sixteen accumulators, and room for B's
    /// eight broadcasts, which the compiler hoists above the multiply-adds (at 12 columns
    /// they spilled).
    Zmm,
}

impl Width {
    /// The widest this CPU runs ([`runnable`] first).
    pub(crate) fn host() -> Width {
        if Target::host().isa() >= Isa::Avx512F {
            Width::Zmm
        } else {
            Width::Ymm
        }
    }

    /// The registers' name, for `weft explain`.
    pub(crate) const fn registers(self) -> &'static str {
        match self {
            Width::Ymm => "ymm",
            Width::Zmm => "zmm",
        }
    }

    /// The instruction set, for `weft explain`.
    pub(crate) const fn isa(self) -> &'static str {
        match self {
            Width::Ymm => "AVX2",
            Width::Zmm => "AVX-512",
        }
    }

    /// Rows of a tile: two vectors.
    const fn rows(self) -> usize {
        match self {
            Width::Ymm => 16,
            Width::Zmm => 32,
        }
    }

    /// Columns of a tile.
    const fn cols(self) -> usize {
        match self {
            Width::Ymm => 6,
            Width::Zmm => 8,
        }
    }
}

/// The most rows a tile has (of any [`Width`]).
const MAX_MR: usize = 32;
/// Most taps a call takes (their offsets are kept on the stack).
pub(crate) const MAX_TAPS: usize = 64;
/// f32 elements of packed A a part keeps in L2 across every column tile (256 KiB, half of
/// a Zen 3 core's L2).
const CHUNK_ELEMENTS: usize = 1 << 16;

/// How the tiles run a call of several taps, for `weft explain`.
pub(crate) fn schedule() -> String {
    let w = Width::host();
    format!(
        "taps: every tap summed in registers, tiles of {} rows x {} columns ({}) over slices \
         of about {SLICE_TERMS} terms of k x taps, A packed per slice and chunk of rows, B read \
         in place",
        w.rows(),
        w.cols(),
        w.registers()
    )
}

/// Whether this CPU can run the tiles: AVX2 and FMA.
pub(crate) fn runnable() -> bool {
    Target::host().isa() >= Isa::Avx2Fma
}

/// Whether f32 calls go to the tiles ([`takes`]): wherever they run (AVX2 with FMA, at the
/// host's [`Width`]), unless the `WEFT_GEMM_ENGINE` environment variable says `crate` (never)
/// — for comparing the engines on one machine. Read once.
pub(crate) fn chosen() -> bool {
    static CHOSEN: OnceLock<bool> = OnceLock::new();
    *CHOSEN.get_or_init(|| {
        let default = runnable();
        match std::env::var("WEFT_GEMM_ENGINE").as_deref() {
            Err(_) | Ok("auto") => default,
            Ok("crate") => false,
            Ok("tiles") if runnable() => true,
            Ok(v) => {
                eprintln!(
                    "weft: ignoring WEFT_GEMM_ENGINE={v:?}: not `auto`, `crate` or `tiles` \
                     (which needs AVX2 and FMA)"
                );
                default
            }
        }
    })
}

/// A matrix in memory: the address of element (0, 0) and the element strides of its rows and
/// columns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Strided<P> {
    pub ptr: P,
    pub rows: isize,
    pub cols: isize,
}

/// One block: `C (rows × cols) = Σ_t A_t (rows × k) · B_t (k × cols)`, tap `t` moving A
/// and B by the elements of `taps`'s `t`-th pair.
pub(crate) struct Block<T> {
    pub rows: usize,
    pub cols: usize,
    pub k: usize,
    pub a: Strided<*const f32>,
    pub b: Strided<*const f32>,
    pub c: Strided<*mut f32>,
    pub taps: T,
    /// The largest magnitudes of A's and B's whole buffers where they are known (a program's
    /// constants): not scanned again for [`Seen::largest_product`].
    pub known: [Option<f64>; 2],
}

/// Whether the tiles take a call of this shape: f32 on an AVX2 host, a sum of 2 to
/// [`MAX_TAPS`] taps, and at least one full tile of rows along the side C's elements are
/// contiguous (where neither is, along M). One tap stays on the crate: with no taps to keep
/// in registers, its kernels measured as fast or faster (ResNet-50's plain convolutions,
/// attention, a training step's small GEMMs: docs/benchmarks.md).
pub(crate) fn takes(m: usize, n: usize, taps: usize, c_row_stride: i64, c_col_stride: i64) -> bool {
    let rows = if transposes(c_row_stride, c_col_stride) {
        n
    } else {
        m
    };
    chosen() && (2..=MAX_TAPS).contains(&taps) && rows >= Width::host().rows()
}

/// Whether a block is computed as `Cᵀ = Σ Bᵀ·Aᵀ`: C's columns, not its rows, are contiguous.
fn transposes(c_row_stride: i64, c_col_stride: i64) -> bool {
    c_row_stride != 1 && c_col_stride == 1
}

/// The block oriented so C's rows are contiguous where either side is.
struct Oriented {
    rows: usize,
    cols: usize,
    k: usize,
    a: Strided<*const f32>,
    b: Strided<*const f32>,
    c: Strided<*mut f32>,
    a_taps: [isize; MAX_TAPS],
    b_taps: [isize; MAX_TAPS],
    taps: usize,
    width: Width,
    /// [`Block::known`], in this orientation.
    known: [Option<f64>; 2],
}

impl Oriented {
    fn new<T: Iterator<Item = (i64, i64)> + Clone>(x: &Block<T>, width: Width) -> Oriented {
        let mut a_taps = [0; MAX_TAPS];
        let mut b_taps = [0; MAX_TAPS];
        let mut taps = 0;
        for (t, (a, b)) in x.taps.clone().enumerate().take(MAX_TAPS) {
            (a_taps[t], b_taps[t]) = (a as isize, b as isize);
            taps = t + 1;
        }
        if !transposes(x.c.rows as i64, x.c.cols as i64) {
            return Oriented {
                rows: x.rows,
                cols: x.cols,
                k: x.k,
                a: x.a,
                b: x.b,
                c: x.c,
                a_taps,
                b_taps,
                taps,
                width,
                known: x.known,
            };
        }
        let flip = |s: Strided<*const f32>| Strided {
            ptr: s.ptr,
            rows: s.cols,
            cols: s.rows,
        };
        Oriented {
            rows: x.cols,
            cols: x.rows,
            k: x.k,
            a: flip(x.b),
            b: flip(x.a),
            c: Strided {
                ptr: x.c.ptr,
                rows: x.c.cols,
                cols: x.c.rows,
            },
            a_taps: b_taps,
            b_taps: a_taps,
            taps,
            width,
            known: [x.known[1], x.known[0]],
        }
    }
}

/// What a block's run saw, for the fix-up after it (`gemm.rs`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Seen {
    /// The product of the largest magnitudes of the A and the B it read (NaNs ignored; B's
    /// may count elements between the taps' that no tap reads, [`Part::largest_in_b`]):
    /// where it passes f32's range a product may have, and the caller sums the block again
    /// the interpreter's way.
    pub largest_product: f64,
    /// Whether an element of C it wrote is zero, infinite or NaN (seen in the registers
    /// before the last store): where it is not, the fix-up has nothing to do.
    pub specials: bool,
}

/// Computes the block (module docs) at the host's [`Width`], packing A into the scratch
/// `scratch` lends (of the length it is asked for), and returns what it [`Seen`].
///
/// # Safety
/// The module's assumptions: every element addressed in bounds, C distinct and apart from A
/// and B, AVX2 and FMA present ([`runnable`]), at most [`MAX_TAPS`] taps.
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn run<T: Iterator<Item = (i64, i64)> + Clone>(
    block: &Block<T>,
    scratch: impl FnOnce(usize, &mut dyn FnMut(&mut [f32])),
) -> Seen {
    // SAFETY: forwarded; the host runs its own width.
    unsafe { run_at(Width::host(), block, scratch) }
}

/// [`run`] at `width`.
///
/// # Safety
/// As [`run`], and AVX-512F present for [`Width::Zmm`].
#[cfg(target_arch = "x86_64")]
pub(crate) unsafe fn run_at<T: Iterator<Item = (i64, i64)> + Clone>(
    width: Width,
    block: &Block<T>,
    scratch: impl FnOnce(usize, &mut dyn FnMut(&mut [f32])),
) -> Seen {
    let x = Oriented::new(block, width);
    let mr = width.rows();
    if x.rows == 0 || x.cols == 0 {
        return Seen::default();
    }
    if x.k == 0 || x.taps == 0 {
        // Sums of nothing: the caller's fix-up gives them the interpreter's zeros.
        return Seen {
            largest_product: 0.0,
            specials: true,
        };
    }
    let (_, slice) = slicing(x.k, x.taps);
    let chunk = ((CHUNK_ELEMENTS / (slice * x.taps)) / mr).max(1) * mr;
    let mut largest = [0.0f32; 2];
    let mut specials = false;
    scratch(chunk * slice * x.taps, &mut |packed| {
        let mut p0 = 0;
        while p0 < x.k {
            let depth = slice.min(x.k - p0);
            let mut first = 0;
            while first < x.rows {
                let rows = chunk.min(x.rows - first);
                let part = Part {
                    first,
                    rows,
                    p0,
                    depth,
                };
                // SAFETY: rows `first..first + rows` and `p0..p0 + depth` of the block (the
                // caller's contract); `packed` holds the part's A.
                let ([a, b], special) = unsafe { part.run(&x, packed) };
                largest = [largest[0].max(a), largest[1].max(b)];
                specials |= special;
                first += rows;
            }
            p0 += depth;
        }
    });
    let [a, b] = [0, 1].map(|t| x.known[t].unwrap_or(f64::from(largest[t])));
    Seen {
        largest_product: a * b,
        specials,
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn run<T>(
    _: &Block<T>,
    _: impl FnOnce(usize, &mut dyn FnMut(&mut [f32])),
) -> Seen {
    unreachable!("gemm_tiles::runnable is false off x86-64")
}

/// Terms `p × taps` a slice of `k` sums before they are added to C: its B (× 6 columns,
/// 24 KiB) stays in L1, its packed A rows in L2. (256 and no slicing at all measured within
/// 4 % of it on ResNet-50's shapes, docs/benchmarks.md.)
const SLICE_TERMS: usize = 1024;

/// How a call of `taps` taps of `k` terms is sliced: the slice count and the terms of `k` in
/// each (the last may have fewer), each slice at most about [`SLICE_TERMS`] terms × taps.
fn slicing(k: usize, taps: usize) -> (usize, usize) {
    let slices = k
        .saturating_mul(taps)
        .div_ceil(SLICE_TERMS)
        .clamp(1, k.max(1));
    (slices, k.div_ceil(slices))
}

/// The most roundings an element of C goes through on the tiles for a call of `taps` taps of
/// `k` terms: a slice's multiply-adds, then the additions of the slices' sums.
pub(crate) fn chain(k: usize, taps: usize) -> usize {
    let (slices, slice) = slicing(k, taps);
    slice.saturating_mul(taps).saturating_add(slices - 1)
}

/// Rows `first..first + rows` of C, terms `p0..p0 + depth` of `k`.
struct Part {
    first: usize,
    rows: usize,
    p0: usize,
    depth: usize,
}

#[cfg(target_arch = "x86_64")]
impl Part {
    /// Packs the part's A, then runs every column tile over every row tile, so a column
    /// tile's B is read from cache by all of the part's rows; the tiles add their sums to C
    /// where an earlier slice of `k` left it. Returns the largest magnitudes of A and B it read
    /// and, on the last slice, whether it stored a special element ([`Seen`]).
    ///
    /// # Safety
    /// As [`run`]; `packed` holds the part's A.
    unsafe fn run(&self, x: &Oriented, packed: &mut [f32]) -> ([f32; 2], bool) {
        // SAFETY: the part's elements of A (the caller's contract).
        unsafe { self.pack_a(x, packed) };
        let (mr, nr) = (x.width.rows(), x.width.cols());
        let used = self.rows.div_ceil(mr) * mr * self.depth * x.taps;
        // Only the part's own packing: the scratch past it holds earlier calls' values.
        let largest_a = match x.known[0] {
            Some(_) => 0.0,
            None => largest_magnitude(&packed[..used], x.width),
        };
        let mut largest_b = 0.0f32;
        let mut specials = false;
        let last = self.p0 + self.depth == x.k;
        let per_tile = (mr * self.depth * x.taps) as isize;
        let mut j = 0;
        while j < x.cols {
            let cols = nr.min(x.cols - j);
            let b =
                x.b.ptr
                    .wrapping_offset(j as isize * x.b.cols + self.p0 as isize * x.b.rows);
            if self.first == 0 && x.known[1].is_none() {
                // SAFETY: the panel's B, in bounds (the caller's contract).
                largest_b = largest_b.max(unsafe { self.largest_in_b(x, b, cols) });
            }
            let mut i = 0;
            while i < self.rows {
                let tile = Tile {
                    depth: self.depth,
                    taps: x.taps,
                    a: packed
                        .as_ptr()
                        .wrapping_offset((i / mr) as isize * per_tile),
                    b,
                    b_rows: x.b.rows,
                    b_cols: x.b.cols,
                    b_taps: &x.b_taps[..x.taps],
                    c: x.c.ptr.wrapping_offset(
                        (self.first + i) as isize * x.c.rows + j as isize * x.c.cols,
                    ),
                    c_rows: x.c.rows,
                    c_cols: x.c.cols,
                    mr: mr.min(self.rows - i),
                    width: x.width,
                    resume: self.p0 > 0,
                    last,
                };
                // SAFETY: the tile's elements are among the block's (the caller's contract);
                // the width's features are present (the caller's contract).
                specials |= unsafe { tile.run(cols) };
                i += mr;
            }
            j += nr;
        }
        ([largest_a, largest_b], specials)
    }

    /// The largest magnitude of the slice's B in the `nr` columns at `b`, read just before
    /// the tiles read it (so from memory once): each column's terms as one run of memory
    /// where the taps fill at least half of it (a filter's taps side by side), which may count
    /// elements no tap reads — a bound never below the true one; element by element
    /// otherwise.
    ///
    /// # Safety
    /// The columns' terms of every tap's B in bounds (the caller's contract); AVX2 present.
    unsafe fn largest_in_b(&self, x: &Oriented, b: *const f32, nr: usize) -> f32 {
        let taps = &x.b_taps[..x.taps];
        let (lo, hi) = taps
            .iter()
            .fold((isize::MAX, isize::MIN), |(l, h), &t| (l.min(t), h.max(t)));
        let depth = self.depth as isize;
        let span = hi - lo + (depth - 1) * x.b.rows + 1;
        let dense = x.b.rows > 0 && span <= 2 * depth * taps.len() as isize;
        let mut largest = 0.0f32;
        for j in 0..nr as isize {
            let column = b.wrapping_offset(j * x.b.cols);
            largest = largest.max(if dense {
                // SAFETY: between the column's first element of the lowest tap and its last
                // of the highest, both in bounds, in one buffer.
                largest_magnitude(
                    unsafe {
                        std::slice::from_raw_parts(column.wrapping_offset(lo), span as usize)
                    },
                    x.width,
                )
            } else {
                let mut m = 0.0f32;
                for p in 0..depth {
                    for &t in taps {
                        // SAFETY: element (p, j) of tap t's B: in bounds (the contract).
                        let v = unsafe { *column.wrapping_offset(p * x.b.rows + t) }.abs();
                        m = if v > m { v } else { m };
                    }
                }
                m
            });
        }
        largest
    }

    /// Copies the part's A, every tap, tile by tile into `out`: tile `q`'s element (row `r`,
    /// term `p`, tap `t`) at `q·MR·depth·taps + (p·taps + t)·MR + r` (MR: the width's rows),
    /// rows past the block zero — so the tiles read A in order, whatever its strides.
    ///
    /// # Safety
    /// The part's rows and terms of every tap's A are in bounds (the caller's contract);
    /// `out` holds the part.
    unsafe fn pack_a(&self, x: &Oriented, out: &mut [f32]) {
        let terms = self.depth * x.taps;
        let tile_rows = x.width.rows();
        let a = x.a.ptr.wrapping_offset(self.p0 as isize * x.a.cols);
        for (q, tile) in out
            .chunks_exact_mut(tile_rows * terms)
            .take(self.rows.div_ceil(tile_rows))
            .enumerate()
        {
            let i0 = self.first + q * tile_rows;
            let mr = tile_rows.min(self.first + self.rows - i0);
            let rows = a.wrapping_offset(i0 as isize * x.a.rows);
            // SAFETY: elements (i0 + r, p0 + p) of every tap's A for r < mr, p < depth: in
            // bounds (the contract); `tile` holds the tile's terms.
            unsafe {
                if x.a.rows == 1 {
                    match x.width {
                        Width::Ymm => pack_columns_ymm(x, rows, mr, tile),
                        Width::Zmm => pack_columns_zmm(x, rows, mr, tile),
                    }
                } else {
                    pack_rows(x, rows, mr, tile);
                }
            }
        }
    }
}

/// [`pack_columns`] in `ymm` moves.
///
/// # Safety
/// As [`pack_columns`], AVX2 present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn pack_columns_ymm(x: &Oriented, rows: *const f32, mr: usize, tile: &mut [f32]) {
    // SAFETY: forwarded.
    unsafe { pack_columns(x, rows, mr, tile) }
}

/// [`pack_columns`] in `zmm` moves (in SSE's, the copies took a fifth of a convolution's
/// time on the zmm tiles).
///
/// # Safety
/// As [`pack_columns`], AVX-512F present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn pack_columns_zmm(x: &Oriented, rows: *const f32, mr: usize, tile: &mut [f32]) {
    // SAFETY: forwarded.
    unsafe { pack_columns(x, rows, mr, tile) }
}

/// A tile's A where its rows are contiguous: each term's `mr` elements copied at once.
/// Inlined into its callers, each compiled for its width's moves.
///
/// # Safety
/// As [`Part::pack_a`]: `rows` at the tile's first row and the slice's first term.
#[inline(always)]
unsafe fn pack_columns(x: &Oriented, rows: *const f32, mr: usize, tile: &mut [f32]) {
    let tile_rows = x.width.rows();
    let depth = tile.len() / tile_rows / x.taps;
    let mut terms = tile.chunks_exact_mut(tile_rows);
    for p in 0..depth as isize {
        for &shift in &x.a_taps[..x.taps] {
            let Some(to) = terms.next() else { return };
            let from = rows.wrapping_offset(p * x.a.cols + shift);
            // The next tile's elements of this term: A's terms lie far apart (a channel of
            // an image each), more streams than the hardware prefetchers follow.
            #[cfg(target_arch = "x86_64")]
            for line in [0, 16] {
                let next = from.wrapping_add(tile_rows + line);
                // SAFETY: a prefetch reads nothing and cannot fault.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(next.cast()) };
            }
            // SAFETY: `mr` consecutive elements of A (the caller's), `to` holds the tile's rows.
            unsafe { copy_rows(from, to, mr) };
        }
    }
}

/// Copies `mr` elements from `from` into `to`, zeros after them: a whole tile's as one
/// fixed-size copy, which compiles to a few vector moves (a `memmove` call a term cost a
/// sixth of a convolution's time at zmm).
///
/// # Safety
/// `from` is valid for `mr` reads, `mr ≤ to.len()`.
#[inline(always)]
unsafe fn copy_rows(from: *const f32, to: &mut [f32], mr: usize) {
    match to.len() {
        32 if mr == 32 => {
            // SAFETY: 32 readable elements (the caller's).
            to.copy_from_slice(unsafe { &*from.cast::<[f32; 32]>() })
        }
        16 if mr == 16 => {
            // SAFETY: 16 readable elements (the caller's).
            to.copy_from_slice(unsafe { &*from.cast::<[f32; 16]>() })
        }
        _ => {
            // SAFETY: `mr` readable elements (the caller's), `to` holds at least as many.
            unsafe { std::ptr::copy_nonoverlapping(from, to.as_mut_ptr(), mr) };
            to[mr..].fill(0.0);
        }
    }
}

/// A tile's A where its rows are not contiguous: row by row along the terms.
///
/// # Safety
/// As [`pack_columns`].
unsafe fn pack_rows(x: &Oriented, rows: *const f32, mr: usize, tile: &mut [f32]) {
    let tile_rows = x.width.rows();
    let depth = tile.len() / tile_rows / x.taps;
    for r in 0..tile_rows {
        let row = rows.wrapping_offset(r as isize * x.a.rows);
        for (t, &shift) in x.a_taps[..x.taps].iter().enumerate() {
            let from = row.wrapping_offset(shift);
            for p in 0..depth {
                let v = if r < mr {
                    // SAFETY: element (r, p) of tap t's A, r < mr: in bounds (the caller's).
                    unsafe { *from.wrapping_offset(p as isize * x.a.cols) }
                } else {
                    0.0
                };
                tile[(p * x.taps + t) * tile_rows + r] = v;
            }
        }
    }
}

/// One tile of C (at most the [`Width`]'s rows × columns) and what it reads.
struct Tile<'a> {
    /// Terms of `k` in the slice.
    depth: usize,
    taps: usize,
    /// The tile's packed A ([`Part::pack_a`]).
    a: *const f32,
    /// B at the slice's first term and the tile's first column, tap 0 moved by `b_taps`.
    b: *const f32,
    b_rows: isize,
    b_cols: isize,
    b_taps: &'a [isize],
    c: *mut f32,
    c_rows: isize,
    c_cols: isize,
    /// Rows of C in the tile (≤ the width's).
    mr: usize,
    /// The registers it runs in; its packed A has the width's rows a term.
    width: Width,
    /// Whether the slice's sums are added to C (the earlier slices' sums), not stored.
    resume: bool,
    /// Whether this is the last slice of `k`: C's final values, checked for specials.
    last: bool,
}

#[cfg(target_arch = "x86_64")]
impl Tile<'_> {
    /// Computes the tile's `nr` columns (≤ the width's); on the last slice, returns whether one
    /// of its elements is special ([`Tile::specials`]).
    ///
    /// # Safety
    /// Every element the tile reads and writes in bounds; the width's features present.
    unsafe fn run(&self, nr: usize) -> bool {
        if self.width == Width::Zmm {
            // SAFETY: forwarded; a tile of at most 16 rows reads only A's first vector.
            return unsafe {
                if self.mr > 16 {
                    self.zmm_columns::<2>(nr)
                } else {
                    self.zmm_columns::<1>(nr)
                }
            };
        }
        if self.mr > 8 {
            // SAFETY: forwarded.
            unsafe { self.run_vectors::<2>(nr) }
        } else {
            // SAFETY: forwarded; a tile of at most 8 rows reads only A's first vector.
            unsafe { self.run_vectors::<1>(nr) }
        }
    }

    /// # Safety
    /// As [`Tile::run`], `V` vectors covering the tile's rows.
    unsafe fn run_vectors<const V: usize>(&self, nr: usize) -> bool {
        // SAFETY: forwarded (one arm per column count, each the same contract).
        unsafe {
            match nr {
                6 => self.columns::<6, V>(),
                5 => self.columns::<5, V>(),
                4 => self.columns::<4, V>(),
                3 => self.columns::<3, V>(),
                2 => self.columns::<2, V>(),
                _ => self.columns::<1, V>(),
            }
        }
    }

    /// The lane masks of the tile's rows: lane `r` of vector `v` set iff `8v + r < mr`.
    #[target_feature(enable = "avx2")]
    fn row_masks(&self) -> [__m256i; 2] {
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mr = self.mr as i32;
        [
            _mm256_cmpgt_epi32(_mm256_set1_epi32(mr), lanes),
            _mm256_cmpgt_epi32(_mm256_set1_epi32(mr - 8), lanes),
        ]
    }

    /// The tile's `N` columns from `V` vectors of rows (a tile of at most 8 rows takes one:
    /// half the multiply-adds of a padded 16).
    ///
    /// # Safety
    /// As [`Tile::run`], `N` ≤ 6 columns, `V` ≤ 2.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn columns<const N: usize, const V: usize>(&self) -> bool {
        let mask = self.row_masks();
        let mut acc = [[_mm256_setzero_ps(); V]; N];
        let mut a = self.a;
        for p in 0..self.depth as isize {
            let pb = self.b.wrapping_offset(p * self.b_rows);
            for &tb in &self.b_taps[..self.taps] {
                let mut rows = [_mm256_setzero_ps(); V];
                for (v, row) in rows.iter_mut().enumerate() {
                    // SAFETY: 16 packed elements of A (the caller's).
                    *row = unsafe { _mm256_loadu_ps(a.add(8 * v)) };
                }
                a = a.wrapping_add(16);
                let y = pb.wrapping_offset(tb);
                for (j, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: element (p, j) of this tap's B for the tile's columns, in
                    // bounds (the contract).
                    let b = unsafe {
                        _mm256_broadcast_ss(&*y.wrapping_offset(j as isize * self.b_cols))
                    };
                    for (acc, row) in acc.iter_mut().zip(rows) {
                        *acc = _mm256_fmadd_ps(row, b, *acc);
                    }
                }
            }
        }
        if self.resume {
            // SAFETY: the tile's elements of C are in bounds (the contract).
            let earlier = unsafe { self.load::<N, V>(mask) };
            for (acc, earlier) in acc.iter_mut().zip(earlier) {
                for (acc, earlier) in acc.iter_mut().zip(earlier) {
                    *acc = _mm256_add_ps(earlier, *acc);
                }
            }
        }
        // SAFETY: the tile's elements of C are in bounds and written by no one else.
        unsafe { self.store(&acc, mask) };
        self.last && Tile::specials(&acc, mask)
    }

    /// Whether a lane of the accumulators in the tile's rows holds zero (either sign), an
    /// infinity or a NaN — what the fix-up looks for — without branches: the lanes that are
    /// not `0 < |x| < ∞` (ordered compares: false for NaN), masked to the tile's rows.
    #[target_feature(enable = "avx2")]
    fn specials<const N: usize, const V: usize>(
        acc: &[[__m256; V]; N],
        mask: [__m256i; 2],
    ) -> bool {
        let sign = _mm256_set1_ps(-0.0);
        let (zero, infinity) = (_mm256_setzero_ps(), _mm256_set1_ps(f32::INFINITY));
        let mut any = _mm256_setzero_ps();
        for acc in acc {
            for (v, x) in acc.iter().enumerate() {
                let magnitude = _mm256_andnot_ps(sign, *x);
                let ordinary = _mm256_and_ps(
                    _mm256_cmp_ps::<_CMP_GT_OQ>(magnitude, zero),
                    _mm256_cmp_ps::<_CMP_LT_OQ>(magnitude, infinity),
                );
                let rows = _mm256_castsi256_ps(mask[v]);
                any = _mm256_or_ps(any, _mm256_andnot_ps(ordinary, rows));
            }
        }
        _mm256_movemask_ps(any) != 0
    }

    /// The tile's C where the earlier slices of `k` left it (their sums), rows past `mr`
    /// zero.
    ///
    /// # Safety
    /// The tile's elements of C in bounds.
    #[target_feature(enable = "avx2")]
    unsafe fn load<const N: usize, const V: usize>(&self, mask: [__m256i; 2]) -> [[__m256; V]; N] {
        let mut acc = [[_mm256_setzero_ps(); V]; N];
        for (j, acc) in acc.iter_mut().enumerate() {
            let c = self.c.wrapping_offset(j as isize * self.c_cols);
            // SAFETY: rows < mr of column j of the tile: in bounds (the contract); masked
            // lanes are not read.
            unsafe {
                if self.c_rows == 1 {
                    for (v, acc) in acc.iter_mut().enumerate() {
                        *acc = _mm256_maskload_ps(c.wrapping_add(8 * v), mask[v]);
                    }
                } else {
                    let mut lanes = [0.0f32; MAX_MR];
                    for (r, l) in lanes.iter_mut().enumerate().take(self.mr) {
                        *l = *c.wrapping_offset(r as isize * self.c_rows);
                    }
                    for (v, acc) in acc.iter_mut().enumerate() {
                        *acc = _mm256_loadu_ps(lanes.as_ptr().add(8 * v));
                    }
                }
            }
        }
        acc
    }

    /// Writes the accumulators to C: vector stores (masked to `mr` rows) where C's rows are
    /// contiguous, element by element otherwise.
    ///
    /// # Safety
    /// The tile's elements of C in bounds, written by no one else.
    #[target_feature(enable = "avx2")]
    unsafe fn store<const N: usize, const V: usize>(
        &self,
        acc: &[[__m256; V]; N],
        mask: [__m256i; 2],
    ) {
        for (j, acc) in acc.iter().enumerate() {
            let c = self.c.wrapping_offset(j as isize * self.c_cols);
            // SAFETY: rows < mr of column j of the tile: in bounds (the contract).
            unsafe {
                if self.c_rows == 1 && self.mr == 8 * V {
                    for (v, acc) in acc.iter().enumerate() {
                        _mm256_storeu_ps(c.wrapping_add(8 * v), *acc);
                    }
                } else if self.c_rows == 1 {
                    for (v, acc) in acc.iter().enumerate() {
                        _mm256_maskstore_ps(c.wrapping_add(8 * v), mask[v], *acc);
                    }
                } else {
                    let mut lanes = [0.0f32; MAX_MR];
                    for (v, acc) in acc.iter().enumerate() {
                        _mm256_storeu_ps(lanes.as_mut_ptr().add(8 * v), *acc);
                    }
                    for (r, l) in lanes.iter().enumerate().take(self.mr) {
                        *c.wrapping_offset(r as isize * self.c_rows) = *l;
                    }
                }
            }
        }
    }
}

/// The tiles in `zmm` registers ([`Width::Zmm`]): the same sums in the same order as the `ymm`
/// ones, sixteen lanes a vector, masks in mask registers.
#[cfg(target_arch = "x86_64")]
impl Tile<'_> {
    /// # Safety
    /// As [`Tile::run`], AVX-512F present, `V` vectors covering the tile's rows.
    unsafe fn zmm_columns<const V: usize>(&self, nr: usize) -> bool {
        // SAFETY: forwarded (one arm per column count, each the same contract).
        unsafe {
            match nr {
                8 => self.zmm_tile::<8, V>(),
                7 => self.zmm_tile::<7, V>(),
                6 => self.zmm_tile::<6, V>(),
                5 => self.zmm_tile::<5, V>(),
                4 => self.zmm_tile::<4, V>(),
                3 => self.zmm_tile::<3, V>(),
                2 => self.zmm_tile::<2, V>(),
                _ => self.zmm_tile::<1, V>(),
            }
        }
    }

    /// The lane masks of the tile's rows: bit `r` of vector `v`'s set iff `16v + r < mr`.
    fn zmm_row_masks(&self) -> [__mmask16; 2] {
        let lanes = |rows: usize| match rows {
            0 => 0,
            r if r >= 16 => 0xffff,
            r => (1u16 << r) - 1,
        };
        [lanes(self.mr), lanes(self.mr.saturating_sub(16))]
    }

    /// The tile's `N` columns from `V` vectors of rows ([`Tile::columns`] in `zmm`).
    ///
    /// # Safety
    /// As [`Tile::run`], AVX-512F present, `N` ≤ 8 columns, `V` ≤ 2.
    #[target_feature(enable = "avx512f")]
    unsafe fn zmm_tile<const N: usize, const V: usize>(&self) -> bool {
        let mask = self.zmm_row_masks();
        let mut acc = [[_mm512_setzero_ps(); V]; N];
        let mut a = self.a;
        for p in 0..self.depth as isize {
            let pb = self.b.wrapping_offset(p * self.b_rows);
            for &tb in &self.b_taps[..self.taps] {
                let mut rows = [_mm512_setzero_ps(); V];
                for (v, row) in rows.iter_mut().enumerate() {
                    // SAFETY: 32 packed elements of A (the caller's).
                    *row = unsafe { _mm512_loadu_ps(a.add(16 * v)) };
                }
                a = a.wrapping_add(32);
                let y = pb.wrapping_offset(tb);
                for (j, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: element (p, j) of this tap's B for the tile's columns, in
                    // bounds (the contract).
                    let b = _mm512_set1_ps(unsafe { *y.wrapping_offset(j as isize * self.b_cols) });
                    for (acc, row) in acc.iter_mut().zip(rows) {
                        *acc = _mm512_fmadd_ps(row, b, *acc);
                    }
                }
            }
        }
        if self.resume {
            // SAFETY: the tile's elements of C are in bounds (the contract).
            let earlier = unsafe { self.zmm_load::<N, V>(mask) };
            for (acc, earlier) in acc.iter_mut().zip(earlier) {
                for (acc, earlier) in acc.iter_mut().zip(earlier) {
                    *acc = _mm512_add_ps(earlier, *acc);
                }
            }
        }
        // SAFETY: the tile's elements of C are in bounds and written by no one else.
        unsafe { self.zmm_store(&acc, mask) };
        self.last && Tile::zmm_specials(&acc, mask)
    }

    /// [`Tile::specials`] in `zmm`: a lane of the tile's rows that is not `0 < |x| < ∞`.
    #[target_feature(enable = "avx512f")]
    fn zmm_specials<const N: usize, const V: usize>(
        acc: &[[__m512; V]; N],
        mask: [__mmask16; 2],
    ) -> bool {
        let (zero, infinity) = (_mm512_setzero_ps(), _mm512_set1_ps(f32::INFINITY));
        let mut any: __mmask16 = 0;
        for acc in acc {
            for (v, x) in acc.iter().enumerate() {
                let magnitude = _mm512_abs_ps(*x);
                let ordinary = _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(mask[v], magnitude, zero)
                    & _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(mask[v], magnitude, infinity);
                any |= mask[v] & !ordinary;
            }
        }
        any != 0
    }

    /// [`Tile::load`] in `zmm`.
    ///
    /// # Safety
    /// The tile's elements of C in bounds.
    #[target_feature(enable = "avx512f")]
    unsafe fn zmm_load<const N: usize, const V: usize>(
        &self,
        mask: [__mmask16; 2],
    ) -> [[__m512; V]; N] {
        let mut acc = [[_mm512_setzero_ps(); V]; N];
        for (j, acc) in acc.iter_mut().enumerate() {
            let c = self.c.wrapping_offset(j as isize * self.c_cols);
            // SAFETY: rows < mr of column j of the tile: in bounds (the contract); masked
            // lanes are neither read nor fault.
            unsafe {
                if self.c_rows == 1 {
                    for (v, acc) in acc.iter_mut().enumerate() {
                        *acc = _mm512_maskz_loadu_ps(mask[v], c.wrapping_add(16 * v));
                    }
                } else {
                    let mut lanes = [0.0f32; MAX_MR];
                    for (r, l) in lanes.iter_mut().enumerate().take(self.mr) {
                        *l = *c.wrapping_offset(r as isize * self.c_rows);
                    }
                    for (v, acc) in acc.iter_mut().enumerate() {
                        *acc = _mm512_loadu_ps(lanes.as_ptr().add(16 * v));
                    }
                }
            }
        }
        acc
    }

    /// [`Tile::store`] in `zmm`.
    ///
    /// # Safety
    /// The tile's elements of C in bounds, written by no one else.
    #[target_feature(enable = "avx512f")]
    unsafe fn zmm_store<const N: usize, const V: usize>(
        &self,
        acc: &[[__m512; V]; N],
        mask: [__mmask16; 2],
    ) {
        for (j, acc) in acc.iter().enumerate() {
            let c = self.c.wrapping_offset(j as isize * self.c_cols);
            // SAFETY: rows < mr of column j of the tile: in bounds (the contract); masked
            // lanes are not written.
            unsafe {
                if self.c_rows == 1 {
                    for (v, acc) in acc.iter().enumerate() {
                        _mm512_mask_storeu_ps(c.wrapping_add(16 * v), mask[v], *acc);
                    }
                } else {
                    let mut lanes = [0.0f32; MAX_MR];
                    for (v, acc) in acc.iter().enumerate() {
                        _mm512_storeu_ps(lanes.as_mut_ptr().add(16 * v), *acc);
                    }
                    for (r, l) in lanes.iter().enumerate().take(self.mr) {
                        *c.wrapping_offset(r as isize * self.c_rows) = *l;
                    }
                }
            }
        }
    }
}

/// The largest magnitude in `values`, NaNs ignored, in the vectors of the tiles' `width` (the
/// tiles run only where the CPU has them: [`runnable`]).
fn largest_magnitude(values: &[f32], width: Width) -> f32 {
    let isa = match width {
        Width::Ymm => Isa::Avx2Fma,
        Width::Zmm => Isa::Avx512F,
    };
    // Exact: the magnitude of an f32.
    gemm_float::largest_magnitude(values, isa) as f32
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// C of a block of `m × n`, `k` terms, the taps `(a, b)` shifts, A's rows contiguous or
    /// not, C's rows or columns contiguous, at `width`; C starts as NaN (a tile reading C
    /// before its first slice wrote it would show).
    #[allow(clippy::too_many_arguments)]
    fn tiles_at(
        width: Width,
        (m, n, k): (usize, usize, usize),
        taps: &[(i64, i64)],
        a_rows_contiguous: bool,
        c_rows_contiguous: bool,
        (a, b): (&[f32], &[f32]),
        known: [Option<f64>; 2],
    ) -> (Vec<f32>, Seen) {
        let (a_rows, a_cols) = if a_rows_contiguous {
            (1, m + 4)
        } else {
            (k + 4, 1)
        };
        let (c_rows, c_cols) = if c_rows_contiguous { (1, m) } else { (n, 1) };
        let mut c = vec![f32::NAN; m * n];
        let block = Block {
            rows: m,
            cols: n,
            k,
            a: Strided {
                ptr: a.as_ptr(),
                rows: a_rows as isize,
                cols: a_cols as isize,
            },
            b: Strided {
                ptr: b.as_ptr(),
                rows: 1,
                cols: (k + 4) as isize,
            },
            c: Strided {
                ptr: c.as_mut_ptr(),
                rows: c_rows as isize,
                cols: c_cols as isize,
            },
            taps: taps.iter().copied(),
            known,
        };
        // SAFETY: A holds (m + 4)·(k + 4) elements, B (k + 4)·n, every tap shifts by at most
        // 3: every element addressed is in bounds; C is its own vector; the width's features
        // are checked by the caller.
        let seen = unsafe { run_at(width, &block, |len, f| f(&mut vec![0.0; len])) };
        (c, seen)
    }

    /// A known largest magnitude of A or B (a program's constant) stands for its scan in the
    /// largest product, whichever way round the block is computed (C's rows or columns
    /// contiguous), and leaves C as it was. A's elements are at most 1, B's reach past 2, so
    /// a known value applied to the wrong operand shows.
    #[test]
    fn a_known_largest_magnitude_stands_for_the_operands_scan() {
        if !runnable() {
            return;
        }
        let (m, n, k) = (40, 9, 30);
        let taps = [(0, 0), (1, 2)];
        let a: Vec<f32> = (0..(m + 4) * (k + 4))
            .map(|i| (i as f32 * 0.37).sin())
            .collect();
        let b: Vec<f32> = (0..(k + 4) * n)
            .map(|i| 3.0 * (i as f32 * 0.61).cos())
            .collect();
        let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        for c_rows_contiguous in [false, true] {
            let shape = (m, n, k);
            let run = |known| {
                tiles_at(
                    Width::host(),
                    shape,
                    &taps,
                    true,
                    c_rows_contiguous,
                    (&a, &b),
                    known,
                )
            };
            let (c, scanned) = run([None; 2]);
            let largest_a = run([None, Some(1.0)]).1.largest_product;
            let largest_b = run([Some(1.0), None]).1.largest_product;
            assert!(
                largest_a <= 1.0 && largest_b > 2.0,
                "{largest_a} {largest_b}"
            );
            assert_eq!(scanned.largest_product, largest_a * largest_b);
            for (known, product) in [
                ([Some(5.0), Some(7.0)], 35.0),
                ([Some(5.0), None], 5.0 * largest_b),
                ([None, Some(7.0)], 7.0 * largest_a),
            ] {
                let (known_c, seen) = run(known);
                assert_eq!(bits(&known_c), bits(&c), "{known:?}");
                assert_eq!(
                    seen.largest_product, product,
                    "{known:?}, C rows {c_rows_contiguous}"
                );
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(40))]
        /// The `ymm` and `zmm` tiles give the same bits for every element, and see the same
        /// specials and largest product (where the CPU runs both): the order of the sums does
        /// not depend on the tile's shape. Partial tiles (rows and columns past a multiple of
        /// either width's), several slices of `k` and chunks of rows included.
        #[test]
        fn both_widths_give_the_same_bits(
            m in proptest::prop_oneof![1usize..70, 100usize..140],
            n in 1usize..30,
            k in proptest::prop_oneof![1usize..40, 500usize..700],
            taps in 1usize..4,
            a_rows_contiguous: bool, c_rows_contiguous: bool, seed in 0u32..1000,
        ) {
            if Target::host().isa() < Isa::Avx512F {
                return Ok(());
            }
            let taps: Vec<(i64, i64)> =
                (0..taps as i64).map(|t| (t, (t * 2) % 4)).collect();
            let value = |i: usize, salt: u32| ((i as f32 + 0.5) * 0.731 + (seed + salt) as f32).sin();
            let a: Vec<f32> = (0..(m + 4) * (k + 4)).map(|i| value(i, 0)).collect();
            let b: Vec<f32> = (0..(k + 4) * n).map(|i| value(i, 7)).collect();
            let shape = (m, n, k);
            let (y, ys) = tiles_at(Width::Ymm, shape, &taps, a_rows_contiguous, c_rows_contiguous, (&a, &b), [None; 2]);
            let (z, zs) = tiles_at(Width::Zmm, shape, &taps, a_rows_contiguous, c_rows_contiguous, (&a, &b), [None; 2]);
            let bits = |c: &[f32]| c.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            proptest::prop_assert_eq!(bits(&y), bits(&z));
            proptest::prop_assert!(y.iter().all(|v| v.is_finite()));
            proptest::prop_assert_eq!(ys.specials, zs.specials);
            proptest::prop_assert_eq!(ys.largest_product, zs.largest_product);
        }
    }
}
