//! Where the `gemm` crate writes a one-tap call's C in place far slower than it would the other
//! way round, C is computed in a scratch in the other order and copied into C: the crate's
//! frame ([`CrateFrame`]), the decision ([`Staging::decide`]) and the copy ([`copy_into`]).
//!
//! The crate always computes a column-major C: where C's rows are the nearer in memory it runs
//! `Cᵀ = Bᵀ·Aᵀ`. In that frame it packs its B' row by row when B''s columns are contiguous, once
//! a call whatever the rows of C there are to use it, and its A' term by term when A''s terms
//! are, once for all the columns of C — so a call with few rows (or few columns) pays a packing
//! the products do not repay: 1.3–8× slower than the other frame on the shapes of a linear
//! layer at small batch (`x · Wᵀ` with `W[out, in]`, or spelled `W · x`) and of a 1 × 1
//! convolution's filter into a channels-last C (the grid in docs/benchmarks.md, "Where the
//! gemm crate packs more than it multiplies").
//!
//! Assumes: a call `GemmCall::new` checked, of one tap, on the crate. Guarantees: staging changes where
//! the crate writes, not what it sums: each element is the crate's sum for the other frame
//! (within the same bound, docs/numerics.md), copied exactly.
//!
//! `unsafe` here: the copy's writes into C, within the bounds its caller proved.

/// Elements of C a staged crate call computes at a time: 256 KiB of f32, in L2 while they are
/// copied into C.
const STAGE_ELEMENTS: usize = 1 << 16;

/// A one-tap call as the crate runs it: its C column-major, `rows × cols`, `k` terms.
#[derive(Clone, Copy, Debug, PartialEq)]
struct CrateFrame {
    rows: usize,
    cols: usize,
    k: usize,
    /// Whether the frame's A (`m × k`, or `Bᵀ` transposed) has its terms contiguous.
    a_terms_contiguous: bool,
    /// Whether the frame's B (`k × n`, or `Aᵀ` transposed) has its columns contiguous.
    b_columns_contiguous: bool,
}

/// A one-tap call's block of C as the crate is handed it: `rows × cols` of `k` terms, and the
/// element strides (rows, columns) of A, B and C.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Block {
    pub rows: usize,
    pub cols: usize,
    pub k: usize,
    pub a: (i64, i64),
    pub b: (i64, i64),
    pub c: (i64, i64),
}

impl CrateFrame {
    /// The frame of `block` with C's strides as they are or (`c_row_major` as given) in the
    /// order a scratch of that major gives.
    fn new(block: &Block, c_row_major: bool) -> CrateFrame {
        if c_row_major {
            // Cᵀ = Bᵀ·Aᵀ: Bᵀ's terms lie B's row stride apart, Aᵀ's columns A's.
            CrateFrame {
                rows: block.cols,
                cols: block.rows,
                k: block.k,
                a_terms_contiguous: block.b.0 == 1,
                b_columns_contiguous: block.a.0 == 1,
            }
        } else {
            CrateFrame {
                rows: block.rows,
                cols: block.cols,
                k: block.k,
                a_terms_contiguous: block.a.1 == 1,
                b_columns_contiguous: block.b.1 == 1,
            }
        }
    }

    /// Whether the crate packs more than it multiplies here: B' row by row for at most 12 rows
    /// of C (24 from 256 terms), or A' term by term, at least twice as many rows as columns,
    /// for at most `k/2` columns (from 128 terms). The thresholds are where the grid's ratios
    /// cross 1.
    fn packs_more_than_it_multiplies(&self) -> bool {
        let few_rows = self.rows <= 12 || (self.rows <= 24 && self.k >= 256);
        let few_cols = self.k >= 128 && self.cols <= self.k / 2 && self.rows >= 2 * self.cols;
        (self.b_columns_contiguous && few_rows) || (self.a_terms_contiguous && few_cols)
    }
}

/// How a staged call writes C: the scratch's order and the columns a crate call computes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Staging {
    /// Columns of C per crate call (the scratch holds `rows × columns`).
    pub columns: usize,
    /// Whether the scratch is row-major (C is column-major), else column-major.
    pub row_major: bool,
}

impl Staging {
    /// Whether a one-tap call's `block` on the crate runs through a scratch, and how: C at
    /// least 2 × 2, the crate's frame for C as it is slow and the other one not.
    pub(crate) fn decide(block: &Block) -> Option<Staging> {
        if block.rows < 2 || block.cols < 2 {
            return None;
        }
        // The crate's own test: C's columns nearer in memory than its rows.
        let c_row_major = block.c.1.unsigned_abs() < block.c.0.unsigned_abs();
        let here = CrateFrame::new(block, c_row_major);
        let there = CrateFrame::new(block, !c_row_major);
        (here.packs_more_than_it_multiplies() && !there.packs_more_than_it_multiplies()).then(
            || Staging {
                columns: (STAGE_ELEMENTS / block.rows).clamp(16, block.cols.max(16)),
                row_major: !c_row_major,
            },
        )
    }

    /// The scratch's element strides (rows, columns) for a chunk of `rows × columns`.
    pub(crate) fn strides(&self, rows: usize, columns: usize) -> (isize, isize) {
        if self.row_major {
            (columns as isize, 1)
        } else {
            (1, rows as isize)
        }
    }

    /// The line `weft explain` prints for it.
    pub(crate) fn describe(&self) -> String {
        let (order, other) = if self.row_major {
            ("row-major", "column")
        } else {
            ("column-major", "row")
        };
        format!(
            "C computed {order} in a scratch, {} columns a crate call, then copied into C (the \
             crate packs more than it multiplies writing this C in place, in {other}-major order)",
            self.columns
        )
    }
}

/// Copies `rows × cols` elements from `stage` (element strides `stage_strides`) into C at
/// `c` (element strides `c_strides`), in blocks of 16 × 16 so that a block's reads and writes
/// each stay in a few cache lines whichever side is strided.
///
/// # Safety
/// Element `(i, j)` of C, at `c + i·c_strides.0 + j·c_strides.1`, is writable for every
/// `i < rows`, `j < cols`; the stage's elements `i·stage_strides.0 + j·stage_strides.1` lie in
/// `stage` (checked: an index past it panics rather than read out of bounds).
pub(crate) unsafe fn copy_into<T: Copy>(
    stage: &[T],
    stage_strides: (isize, isize),
    (rows, cols): (usize, usize),
    c: *mut T,
    c_strides: (isize, isize),
) {
    const BLOCK: usize = 16;
    for i0 in (0..rows).step_by(BLOCK) {
        for j0 in (0..cols).step_by(BLOCK) {
            for i in i0..(i0 + BLOCK).min(rows) {
                for j in j0..(j0 + BLOCK).min(cols) {
                    let (i, j) = (i as isize, j as isize);
                    let from = (i * stage_strides.0 + j * stage_strides.1) as usize;
                    // SAFETY: element (i, j) of C, i < rows, j < cols (the caller's).
                    unsafe { *c.offset(i * c_strides.0 + j * c_strides.1) = stage[from] };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `m × n` of `k` terms, A with its terms (`a_terms`) or rows contiguous, B with its terms
    /// or columns, C row- or column-major.
    fn staged(
        (m, n, k): (usize, usize, usize),
        a_terms: bool,
        b_terms: bool,
        c_rows: bool,
    ) -> Option<bool> {
        let strides = |contiguous_inner: bool, rows: usize, cols: usize| {
            if contiguous_inner {
                (cols as i64, 1)
            } else {
                (1, rows as i64)
            }
        };
        let block = Block {
            rows: m,
            cols: n,
            k,
            a: strides(a_terms, m, k),
            b: strides(!b_terms, k, n),
            c: strides(c_rows, m, n),
        };
        Staging::decide(&block).map(|s| s.row_major)
    }

    /// The grid's slow cases are staged, in the other order; its level ones are not.
    #[test]
    fn calls_are_staged_where_the_crates_frame_packs_more_than_it_multiplies() {
        // A linear layer at batch 8: x[8, 1024] · W[4096, 1024]ᵀ into y[8, 4096].
        assert_eq!(staged((8, 4096, 1024), true, true, true), Some(false));
        // The same spelled W · x: y[4096, 8] row-major, B = xᵀ with its terms contiguous.
        assert_eq!(staged((4096, 8, 1024), false, true, true), Some(false));
        // ResNet-50's last 1 × 1 convolution at batch 1: image 49 × 512 channels-first.
        assert_eq!(staged((49, 2048, 512), false, true, true), Some(false));
        // ResNet-50's classifier at batch 32: 32 × 1000 of 2048 terms, a block of 500 columns.
        assert_eq!(staged((32, 500, 2048), true, true, true), Some(false));
        // C column-major, B with its columns contiguous, 8 rows: staged row-major.
        assert_eq!(staged((8, 1024, 256), false, false, false), Some(true));
        // Level in the grid: left in place.
        for (shape, a, b, c) in [
            ((8, 4096, 1024), true, false, true),
            ((128, 128, 64), true, true, true),
            ((128, 64, 128), true, false, true),
            ((49, 1024, 256), false, false, false),
            ((1024, 1024, 1024), true, true, true),
            ((1, 4096, 1024), true, true, true),
        ] {
            assert_eq!(staged(shape, a, b, c), None, "{shape:?} {a} {b} {c}");
        }
    }

    #[test]
    fn the_copy_moves_every_element_between_any_strides() {
        let (rows, cols) = (19, 37);
        let stage: Vec<f32> = (0..rows * cols).map(|e| e as f32).collect();
        for (stage_strides, c_strides) in
            [((1, 19), (37, 1)), ((37, 1), (1, 19)), ((1, 19), (2, 38))]
        {
            let mut c = vec![-1.0f32; 2 * rows * cols];
            // SAFETY: every (i, j) lands inside `c` for these strides.
            unsafe {
                copy_into(
                    &stage,
                    stage_strides,
                    (rows, cols),
                    c.as_mut_ptr(),
                    c_strides,
                )
            };
            for i in 0..rows as isize {
                for j in 0..cols as isize {
                    let from = stage[(i * stage_strides.0 + j * stage_strides.1) as usize];
                    assert_eq!(c[(i * c_strides.0 + j * c_strides.1) as usize], from);
                }
            }
        }
    }
}
