//! What a kernel's caller knows of it: the native signature of its code ([`KernelEntry`]) and
//! its [`KernelSignature`] — buffers, parallel extent and every access ([`AccessPattern`],
//! [`Footprint`]), against which kernel calls (`kernel.rs`) check buffers and GEMM epilogues
//! (`gemm.rs`) are checked.

use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{BufferDecl, Kernel};

/// The native signature of a compiled kernel: `(buffer table, parallel begin, parallel end)`.
pub type KernelEntry = unsafe extern "C" fn(buffers: *const *mut u8, begin: i64, end: i64);

/// What a caller must bind to call a kernel.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSignature {
    /// The kernel's name.
    pub name: String,
    /// Buffer parameters, in pointer-table order.
    pub buffers: Vec<BufferDecl>,
    /// Extent of the parallel loop, if the kernel has one.
    pub parallel_extent: Option<u64>,
    /// Per buffer (in table order), every access of it as an [`AccessPattern`] (empty: not
    /// accessed, or no parallel loop). What a GEMM epilogue's check relies on
    /// (crate::gemm::GemmEpilogue), directly for column blocks, as [`KernelSignature::footprint`]s
    /// for row blocks.
    pub accesses: Vec<Vec<AccessPattern>>,
}

/// One access of a buffer: in iteration `p` of the parallel loop it touches elements
/// `offset + parallel·p + Σ coefficient·i` for `0 ≤ i < extent` of each other loop (masks
/// ignored, so a superset of what a masked access touches).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessPattern {
    /// The coefficient of the parallel loop.
    pub parallel: i64,
    /// The constant term.
    pub offset: i64,
    /// `(coefficient, extent)` of every other loop the index moves along.
    pub terms: Vec<(i64, u64)>,
}

impl AccessPattern {
    /// The lowest and highest value of `Σ coefficient·i` over the terms `keep` selects, each
    /// `i` over `0..extent`; `None` if a selected loop is empty (the access never runs).
    pub fn reach(&self, keep: impl Fn(&(i64, u64)) -> bool) -> Option<(i128, i128)> {
        let (mut lo, mut hi) = (0i128, 0i128);
        for &(c, extent) in self.terms.iter().filter(|t| keep(t)) {
            let far = i128::from(c) * (i128::from(extent.checked_sub(1)?));
            if far < 0 {
                lo += far;
            } else {
                hi += far;
            }
        }
        Some((lo, hi))
    }
}

/// Where one iteration of a kernel's parallel loop may touch a buffer: in iteration `p`, only
/// elements `lo + p·stride ..= hi + p·stride`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    /// Elements the footprint moves per iteration of the parallel loop.
    pub stride: i64,
    /// Lowest element touched in iteration 0.
    pub lo: i64,
    /// Highest element touched in iteration 0.
    pub hi: i64,
}

impl KernelSignature {
    /// The signature of a loop-IR kernel.
    pub fn of(kernel: &Kernel) -> Self {
        Self {
            name: kernel.name.clone(),
            buffers: kernel.buffers.values().cloned().collect(),
            parallel_extent: kernel.parallel_loop().map(|l| kernel.loops[l].extent),
            accesses: access_patterns(kernel),
        }
    }

    /// Where one iteration of the parallel loop may touch buffer `i`, when one [`Footprint`]
    /// bounds every access (`None`: no parallel loop, the buffer is not accessed, an access in
    /// an empty loop or past `i64`, or accesses moving along the parallel loop by different
    /// strides). Masks are ignored (a masked access touches a subset), so the footprint
    /// contains every element the accesses can touch.
    pub fn footprint(&self, i: usize) -> Option<Footprint> {
        let mut found: Option<Footprint> = None;
        for a in self.accesses.get(i)? {
            let (lo, hi) = a.reach(|_| true)?;
            let g = Footprint {
                stride: a.parallel,
                lo: i64::try_from(i128::from(a.offset) + lo).ok()?,
                hi: i64::try_from(i128::from(a.offset) + hi).ok()?,
            };
            found = Some(match found {
                None => g,
                Some(f) if f.stride == g.stride => Footprint {
                    stride: f.stride,
                    lo: f.lo.min(g.lo),
                    hi: f.hi.max(g.hi),
                },
                Some(_) => return None,
            });
        }
        found
    }
}

/// Every buffer's [`AccessPattern`]s in `kernel` (see [`KernelSignature::accesses`]).
fn access_patterns(kernel: &Kernel) -> Vec<Vec<AccessPattern>> {
    let mut found = vec![Vec::new(); kernel.buffers.len()];
    let Some(p) = kernel.parallel_loop() else {
        return found;
    };
    let accesses = weft_ir::loop_ir::BodyAccesses::of(&kernel.body);
    for a in accesses.loads.iter().chain(&accesses.stores) {
        let Some(slot) = found.get_mut(a.buffer.index()) else {
            continue;
        };
        slot.push(AccessPattern {
            parallel: a.index.coefficient(p),
            offset: a.index.offset(),
            terms: a
                .index
                .terms()
                .iter()
                .filter(|(l, _)| *l != p)
                .map(|&(l, c)| (c, kernel.loops.get(l).map_or(0, |d| d.extent)))
                .collect(),
        });
    }
    found
}
