//! Design (b): a native vector-program engine, after numexpr. A program is a short list of
//! vector ops over registers (block-sized scratch arrays); the engine runs the whole program on
//! one block of `block` elements at a time (L1-resident temporaries), each op one loop over the
//! block written once over [`Lanes`] and instantiated for AVX2 and AVX-512F. Dispatch is one
//! `match` per op per block.

use crate::lanes::{exp, Lanes};
use std::arch::x86_64::*;

/// Where an op reads: an input array (at the block's offset, no copy) or a register.
#[derive(Clone, Copy, Debug)]
pub enum Src {
    In(u8),
    Reg(u8),
}

/// Where an op writes: an output array (at the block's offset) or a register.
#[derive(Clone, Copy, Debug)]
pub enum Dst {
    Out(u8),
    Reg(u8),
}

/// One vector op over a block.
#[derive(Clone, Copy, Debug)]
// `Load` and `Store` are part of the op set a general engine needs; neither body here uses them.
#[allow(dead_code)]
pub enum Op {
    /// Register `dst` ← input `src` read with a stride of `stride` elements (a gather: the
    /// way a strided operand enters; a contiguous input is read in place by `Src::In`).
    Load {
        dst: u8,
        src: u8,
        stride: usize,
    },
    Sub {
        dst: Dst,
        a: Src,
        b: Src,
    },
    Mul {
        dst: Dst,
        a: Src,
        b: Src,
    },
    AddC {
        dst: Dst,
        a: Src,
        c: f32,
    },
    MulC {
        dst: Dst,
        a: Src,
        c: f32,
    },
    Exp {
        dst: Dst,
        a: Src,
    },
    /// `dst = cond > c ? a : b` (ordered compare).
    SelectGtC {
        dst: Dst,
        cond: Src,
        c: f32,
        a: Src,
        b: Src,
    },
    /// Output `out` ← `a` (a copy; ops can also write an output directly).
    Store {
        out: u8,
        a: Src,
    },
    /// `acc` += Σ `a`: the block summed in `ACC` f32 vector partials, combined and widened
    /// into the accumulator's f64 lanes at the block's end (blocks of ≤ 2^10 terms).
    SumInto {
        acc: u8,
        a: Src,
    },
    /// A fused super-op: `acc` += Σ (a − b)², as `SumInto` sums.
    SubSqSumInto {
        acc: u8,
        a: Src,
        b: Src,
    },
    /// Does nothing but be dispatched (to measure dispatch).
    Nop,
}

/// Vector partials per accumulator (each `Lanes::N` wide).
const ACC: usize = 4;
/// The widest vector, in f32 lanes.
const MAXN: usize = 16;
/// f32s of padding between scratch arrays (see `run`).
const PAD: usize = 48;
/// f32s from the scratch's (64-byte aligned) start to its first array (see `run`).
const BASE: usize = 528;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; 16]);

/// A program and the engine state to run it: scratch registers, accumulators, the ISA.
pub struct Engine {
    ops: Vec<Op>,
    block: usize,
    regs: usize,
    accs: usize,
    n_in: usize,
    n_out: usize,
    scratch: Vec<Line>,
    /// Prefetch the next block's inputs (and outputs, for writing) at the start of each block.
    pub prefetch: bool,
    /// `MAXN` f64 lanes per accumulator.
    acc: Vec<f64>,
    isa: Isa,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Avx2,
    Avx512,
}

impl Isa {
    pub fn detect() -> Option<Isa> {
        if is_x86_feature_detected!("avx512f") {
            Some(Isa::Avx512)
        } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
            Some(Isa::Avx2)
        } else {
            None
        }
    }
    fn available(self) -> bool {
        match self {
            Isa::Avx512 => is_x86_feature_detected!("avx512f"),
            Isa::Avx2 => is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"),
        }
    }
}

impl Engine {
    /// An engine for `ops` over blocks of `block` elements (a multiple of 64) on `isa`, which
    /// must be available on this host.
    pub fn new(ops: Vec<Op>, n_in: usize, n_out: usize, block: usize, isa: Isa) -> Engine {
        assert!(block.is_multiple_of(64) && block > 0);
        assert!(isa.available(), "{isa:?} not on this host");
        let (mut regs, mut accs) = (0, 0);
        let reg = |s: Src| {
            if let Src::Reg(r) = s {
                r as usize + 1
            } else {
                0
            }
        };
        let dreg = |d: Dst| {
            if let Dst::Reg(r) = d {
                r as usize + 1
            } else {
                0
            }
        };
        for op in &ops {
            let (r, a) = match *op {
                Op::Load { dst, .. } => (dst as usize + 1, 0),
                Op::Sub { dst, a, b } | Op::Mul { dst, a, b } => {
                    (dreg(dst).max(reg(a)).max(reg(b)), 0)
                }
                Op::AddC { dst, a, .. } | Op::MulC { dst, a, .. } | Op::Exp { dst, a } => {
                    (dreg(dst).max(reg(a)), 0)
                }
                Op::SelectGtC {
                    dst, cond, a, b, ..
                } => (dreg(dst).max(reg(cond)).max(reg(a)).max(reg(b)), 0),
                Op::Store { a, .. } => (reg(a), 0),
                Op::SumInto { acc, a } => (reg(a), acc as usize + 1),
                Op::SubSqSumInto { acc, a, b } => (reg(a).max(reg(b)), acc as usize + 1),
                Op::Nop => (0, 0),
            };
            regs = regs.max(r);
            accs = accs.max(a);
        }
        // Registers, then shadows of every input and output for the ragged last block, each
        // `block + PAD` f32s apart.
        let lines = (regs + n_in + n_out) * (block + PAD) / 16 + BASE / 16;
        Engine {
            ops,
            block,
            regs,
            accs,
            n_in,
            n_out,
            scratch: vec![Line([0.0; 16]); lines],
            prefetch: false,
            acc: vec![0.0; accs * MAXN],
            isa,
        }
    }

    /// Runs the program over `n` elements of `inputs` into `outputs`; returns the
    /// accumulators' sums.
    ///
    /// # Safety
    /// Each input pointer has `n` valid f32s (for a strided `Load`, `n · stride`), each output
    /// `n` writable f32s not overlapping any input.
    pub unsafe fn run(
        &mut self,
        inputs: &[*const f32],
        outputs: &[*mut f32],
        n: usize,
    ) -> Vec<f32> {
        assert!(inputs.len() == self.n_in && outputs.len() == self.n_out);
        self.acc.fill(0.0);
        // SAFETY: the ISA was checked available in `new`; the caller's contract on the arrays.
        unsafe {
            match self.isa {
                Isa::Avx2 => run_avx2(self, inputs, outputs, n),
                Isa::Avx512 => run_avx512(self, inputs, outputs, n),
            }
        }
        (0..self.accs)
            .map(|a| self.acc[a * MAXN..(a + 1) * MAXN].iter().sum::<f64>() as f32)
            .collect()
    }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2(e: &mut Engine, inputs: &[*const f32], outputs: &[*mut f32], n: usize) {
    // SAFETY: compiled with the features `__m256`'s `Lanes` needs; the caller's contract.
    unsafe { run::<__m256>(e, inputs, outputs, n) }
}

#[target_feature(enable = "avx512f")]
unsafe fn run_avx512(e: &mut Engine, inputs: &[*const f32], outputs: &[*mut f32], n: usize) {
    // SAFETY: compiled with the features `__m512`'s `Lanes` needs; the caller's contract.
    unsafe { run::<__m512>(e, inputs, outputs, n) }
}

/// `$body` for `$i` in steps of `V::N` below `$len` (a multiple of `V::N`), four at a time.
macro_rules! each {
    ($V:ty, $len:expr, |$i:ident| $body:block) => {{
        let n = <$V as Lanes>::N;
        let len = $len;
        let mut $i = 0usize;
        while $i + 4 * n <= len {
            $body;
            $i += n;
            $body;
            $i += n;
            $body;
            $i += n;
            $body;
            $i += n;
        }
        while $i < len {
            $body;
            $i += n;
        }
    }};
}

/// A block's `ACC` f32 partials combined by a tree and added, widened, into the f64 lanes at
/// `acc`.
///
/// # Safety
/// The trait's contract; `V::N` f64s at `acc`.
#[inline(always)]
unsafe fn flush<V: Lanes>(s: [V; ACC], acc: *mut f64) {
    let mut buf = [0f32; MAXN];
    // SAFETY: the caller's contract; `buf` has `MAXN ≥ V::N` lanes.
    unsafe {
        s[0].add(s[1]).add(s[2].add(s[3])).store(buf.as_mut_ptr());
        for (l, &v) in buf.iter().enumerate().take(V::N) {
            *acc.add(l) += v as f64;
        }
    }
}

#[inline(always)]
unsafe fn run<V: Lanes>(e: &mut Engine, inputs: &[*const f32], outputs: &[*mut f32], n: usize) {
    let b = e.block;
    // Scratch arrays `block + PAD` apart, from `BASE` f32s in (2 KiB + 64 B off any page-aligned
    // array): without the padding, a 1024-element block puts every register 4 KiB from the
    // next, and loads 4K-alias the stores of the op before (l2 at n = 2^12 ran 1.7x slower at
    // B=1024 than at B=256 before the padding, 1.3x faster after).
    let scratch = (e.scratch.as_mut_ptr() as *mut f32).wrapping_add(BASE);
    let stride = b + PAD;
    let acc = e.acc.as_mut_ptr();
    let (regs, n_in, n_out) = (e.regs, e.n_in, e.n_out);
    let mut ins = [std::ptr::null::<f32>(); 8];
    let mut outs = [std::ptr::null_mut::<f32>(); 8];
    let mut start = 0;
    // SAFETY (the block): every pointer formed is below its array's `n` (or `block`) elements:
    // whole-vector loops run to `len_v`, which is `len` except in the ragged last block, where
    // every input and output is redirected to its zero-padded shadow in the scratch.
    // SAFETY: the ISA's features are enabled on this function's callers, and the caller's contract on the arrays.
    unsafe {
        while start < n {
            let len = b.min(n - start);
            let len_v = len.div_ceil(V::N) * V::N;
            let ragged = len_v != len;
            if e.prefetch && start + len < n {
                let next = (n - start - len).min(b);
                for &p in inputs.iter().take(n_in) {
                    let p = p.add(start + len);
                    for line in (0..next).step_by(16) {
                        _mm_prefetch::<_MM_HINT_T0>(p.add(line).cast());
                    }
                }
                for &p in outputs.iter().take(n_out) {
                    let p = p.add(start + len);
                    for line in (0..next).step_by(16) {
                        _mm_prefetch::<_MM_HINT_ET0>(p.add(line).cast_const().cast());
                    }
                }
            }
            for k in 0..n_in {
                ins[k] = inputs[k].add(start);
                if ragged {
                    let sh = scratch.add((regs + k) * stride);
                    std::ptr::write_bytes(sh, 0, len_v);
                    std::ptr::copy_nonoverlapping(ins[k], sh, len);
                    ins[k] = sh;
                }
            }
            for (k, o) in outs.iter_mut().enumerate().take(n_out) {
                *o = if ragged {
                    scratch.add((regs + n_in + k) * stride)
                } else {
                    outputs[k].add(start)
                };
            }
            let src = |s: Src| -> *const f32 {
                match s {
                    Src::In(k) => ins[k as usize],
                    Src::Reg(r) => scratch.add(r as usize * stride),
                }
            };
            let dst = |d: Dst| -> *mut f32 {
                match d {
                    Dst::Out(k) => outs[k as usize],
                    Dst::Reg(r) => scratch.add(r as usize * stride),
                }
            };
            for op in &e.ops {
                match *op {
                    Op::Load {
                        dst: r,
                        src: k,
                        stride,
                    } => {
                        let d = scratch.add(r as usize * stride);
                        let s = inputs[k as usize].add(start * stride);
                        for i in 0..len {
                            *d.add(i) = *s.add(i * stride);
                        }
                    }
                    Op::Sub { dst: d, a, b: c } => {
                        let (d, a, c) = (dst(d), src(a), src(c));
                        each!(V, len_v, |i| {
                            V::load(a.add(i)).sub(V::load(c.add(i))).store(d.add(i))
                        })
                    }
                    Op::Mul { dst: d, a, b: c } => {
                        let (d, a, c) = (dst(d), src(a), src(c));
                        each!(V, len_v, |i| {
                            V::load(a.add(i)).mul(V::load(c.add(i))).store(d.add(i))
                        })
                    }
                    Op::AddC { dst: d, a, c } => {
                        let (d, a, c) = (dst(d), src(a), V::splat(c));
                        each!(V, len_v, |i| { V::load(a.add(i)).add(c).store(d.add(i)) })
                    }
                    Op::MulC { dst: d, a, c } => {
                        let (d, a, c) = (dst(d), src(a), V::splat(c));
                        each!(V, len_v, |i| { V::load(a.add(i)).mul(c).store(d.add(i)) })
                    }
                    Op::Exp { dst: d, a } => {
                        let (d, a) = (dst(d), src(a));
                        each!(V, len_v, |i| { exp(V::load(a.add(i))).store(d.add(i)) })
                    }
                    Op::SelectGtC {
                        dst: d,
                        cond,
                        c,
                        a,
                        b: o,
                    } => {
                        let (d, cond, c, a, o) = (dst(d), src(cond), V::splat(c), src(a), src(o));
                        each!(V, len_v, |i| {
                            let m = V::load(cond.add(i)).gt(c);
                            V::load(o.add(i))
                                .select(m, V::load(a.add(i)))
                                .store(d.add(i))
                        })
                    }
                    Op::Store { out, a } => {
                        std::ptr::copy_nonoverlapping(src(a), outs[out as usize], len_v);
                    }
                    Op::SumInto { acc: k, a } => {
                        let a = src(a);
                        let mut s = [V::splat(0.0); ACC];
                        let full = len / V::N * V::N;
                        let mut i = 0;
                        while i + ACC * V::N <= full {
                            for v in &mut s {
                                *v = v.add(V::load(a.add(i)));
                                i += V::N;
                            }
                        }
                        while i < full {
                            s[0] = s[0].add(V::load(a.add(i)));
                            i += V::N;
                        }
                        if i < len {
                            s[0] = s[0].add(V::load_partial(a.add(i), len - i));
                        }
                        flush(s, acc.add(k as usize * MAXN));
                    }
                    Op::SubSqSumInto { acc: k, a, b: c } => {
                        let (a, c) = (src(a), src(c));
                        let mut s = [V::splat(0.0); ACC];
                        // Shadows are zero-padded, so (0 − 0)² adds nothing past `len`.
                        let mut i = 0;
                        while i + ACC * V::N <= len_v {
                            for v in &mut s {
                                let t = V::load(a.add(i)).sub(V::load(c.add(i)));
                                *v = t.fma(t, *v);
                                i += V::N;
                            }
                        }
                        while i < len_v {
                            let t = V::load(a.add(i)).sub(V::load(c.add(i)));
                            s[0] = t.fma(t, s[0]);
                            i += V::N;
                        }
                        flush(s, acc.add(k as usize * MAXN));
                    }
                    Op::Nop => {
                        std::hint::black_box(scratch);
                    }
                }
            }
            if ragged {
                for (k, &o) in outputs.iter().enumerate().take(n_out) {
                    std::ptr::copy_nonoverlapping(outs[k], o.add(start), len);
                }
            }
            start += len;
        }
    }
}
