//! The instructions of an assembled leaf loop at one vector width ([`Width`]): `ymm` (AVX2 and
//! FMA, 8 f32 lanes) or `zmm` (AVX-512F, 16 lanes), and the functions `exp`, `sigmoid`, `tanh`
//! and `log` written once over them.
//!
//! Assumes: the code runs on a host with the width's extensions (`leaf.rs` chooses the width
//! from the runtime's `Target`). Guarantees: every lane is computed by the same IEEE operations
//! in the same order at either width — a body's lane mask is all ones or all zeros in a vector
//! register at both; `zmm` compares into opmask registers `k1`–`k4` and turns a mask back into
//! a vector only where a body value is one — so a leaf loop gives the same bits at either
//! width, and the functions are `math.rs`'s sequences operation for operation.

use iced_x86::code_asm::*;
use iced_x86::IcedError;
use weft_runtime::vmath::{exp_f32, log_f32, tanh_f32, ExpForm};

type Result = std::result::Result<(), IcedError>;

/// A vector register width the leaf loops are assembled at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LeafWidth {
    /// `ymm`, AVX2 with FMA: 8 f32 lanes.
    Ymm,
    /// `zmm`, AVX-512F: 16 f32 lanes.
    Zmm,
}

impl LeafWidth {
    /// f32 lanes of a register.
    pub(crate) fn lanes(self) -> u32 {
        match self {
            LeafWidth::Ymm => Ymm::LANES,
            LeafWidth::Zmm => Zmm::LANES,
        }
    }

    /// Bytes the function and its constant pool (from the function's start) are aligned to:
    /// a register's, so no constant load splits a cache line.
    pub(crate) fn align(self) -> usize {
        4 * self.lanes() as usize
    }

    /// As `weft explain` names it: `"AVX2 ymm"`, `"AVX-512 zmm"`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LeafWidth::Ymm => "AVX2 ymm",
            LeafWidth::Zmm => "AVX-512 zmm",
        }
    }
}

/// `vcmpps` predicates: `>` or unordered, ordered `<`, ordered `>=`, ordered `=`, ordered `>`,
/// `<` or unordered, unordered, `>` or unordered (non-signalling).
pub(super) const NLE_UQ: u32 = 0x06;
pub(super) const LT_OQ: u32 = 0x11;
pub(super) const GE_OQ: u32 = 0x1d;
pub(super) const EQ_OQ: u32 = 0x00;
pub(super) const GT_OQ: u32 = 0x1e;
pub(super) const NGE_UQ: u32 = 0x09;
const UNORD_Q: u32 = 0x03;
const NLE_UQ_RELU: u32 = 0x16;

/// The two-operand instructions a body becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    /// Bitwise: `abs` as `and` with `0x7fffffff`; `bool → f32` as `and` with 1.0.
    And,
    /// Bitwise: `neg` as `xor` with `0x80000000`; `not` and `xor` of lane masks.
    Xor,
    /// Bitwise: `or` of lane masks.
    Or,
}

/// One vector register width: its registers, and each operation a leaf loop or a function
/// needs as that width's instructions.
pub(super) trait Width: Copy + PartialEq {
    /// f32 lanes of a register.
    const LANES: u32;
    /// Where a comparison's result is held until a blend reads it: the given scratch vector
    /// register (`ymm`), or an opmask register (`zmm`).
    type Mask: Copy;
    /// Vector registers of the width: 16 `ymm`, 32 `zmm`. A body takes registers from 0 up;
    /// the rest can keep constants for a whole loop ([`Pool::keeping`]).
    const REGISTERS: u8;
    /// Vector register `r` (below [`Width::REGISTERS`]).
    fn reg(r: u8) -> Self;
    /// A memory operand of one whole register.
    fn ptr(m: impl Into<AsmMemoryOperand>) -> AsmMemoryOperand;
    /// The mask of a function's comparison `slot` (0–3), `scratch` the register the `ymm`
    /// form holds it in.
    fn mask(slot: u8, scratch: Self) -> Self::Mask;

    fn mov(a: &mut CodeAssembler, d: Self, x: Self) -> Result;
    fn load(a: &mut CodeAssembler, d: Self, m: AsmMemoryOperand) -> Result;
    /// `d` = constant `c` (every lane).
    fn load_const(a: &mut CodeAssembler, d: Self, c: Src<Self>) -> Result;
    fn store(a: &mut CodeAssembler, m: AsmMemoryOperand, s: Self) -> Result;
    /// `d` = every lane the f32 at `m` (a `dword_ptr`).
    fn broadcast(a: &mut CodeAssembler, d: Self, m: AsmMemoryOperand) -> Result;
    /// `d` = every lane the low f32 of `x` (`x` is `d`'s own low part).
    fn broadcast_low(a: &mut CodeAssembler, d: Self, x: AsmRegisterXmm) -> Result;
    fn arith(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, y: Self) -> Result;
    fn arith_m(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, m: Src<Self>) -> Result;
    /// `and`, `or` or `xor` (`op`) of the bits.
    fn bitwise(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, y: Self) -> Result;
    fn bitwise_m(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, m: Src<Self>) -> Result;
    fn sqrt(a: &mut CodeAssembler, d: Self, x: Self) -> Result;
    fn min_m(a: &mut CodeAssembler, d: Self, x: Self, m: Src<Self>) -> Result;
    /// `d = d·x + m`, fused.
    fn fmadd213_m(a: &mut CodeAssembler, d: Self, x: Self, m: Src<Self>) -> Result;
    /// `d = d·x + y`, fused.
    fn fmadd213(a: &mut CodeAssembler, d: Self, x: Self, y: Self) -> Result;
    /// `d = x·m + d`, fused.
    fn fmadd231_m(a: &mut CodeAssembler, d: Self, x: Self, m: Src<Self>) -> Result;
    /// Each 32-bit lane shifted left (right, logically) by `n`.
    fn shl32(a: &mut CodeAssembler, d: Self, x: Self, n: u32) -> Result;
    fn shr32(a: &mut CodeAssembler, d: Self, x: Self, n: u32) -> Result;
    /// 32-bit integer lanes added.
    fn add32(a: &mut CodeAssembler, d: Self, x: Self, y: Self) -> Result;
    /// 32-bit integer lanes to f32.
    fn i32_to_f32(a: &mut CodeAssembler, d: Self, x: Self) -> Result;
    /// `k = x <predicate> m`.
    fn cmp_m(a: &mut CodeAssembler, k: Self::Mask, x: Self, m: Src<Self>, p: u32) -> Result;
    /// `d = k ? t : f`, lane by lane.
    fn blend(a: &mut CodeAssembler, d: Self, f: Self, t: Self, k: Self::Mask) -> Result;
    /// `d = k ? +0 : d`.
    fn zero_where(a: &mut CodeAssembler, d: Self, k: Self::Mask) -> Result;
    /// `d = k ? m : +0` (`d` the register `k`'s `ymm` form is held in, or any).
    fn only_where(a: &mut CodeAssembler, d: Self, k: Self::Mask, m: Src<Self>) -> Result;
    /// A body's comparison: `d` = all ones where `x <predicate> y`, else zeros.
    fn compare(a: &mut CodeAssembler, d: Self, x: Self, y: Self, p: u32) -> Result;
    /// A body's select: `d = mask ? t : f`, `mask` a lane mask in a vector register.
    fn select(a: &mut CodeAssembler, d: Self, mask: Self, t: Self, f: Self) -> Result;
    /// `max` (`min`): NaN if either is NaN, the left operand on a tie; `d` is neither operand,
    /// `scratch` free to write.
    fn extreme(
        a: &mut CodeAssembler,
        max: bool,
        d: Self,
        x: Self,
        y: Self,
        scratch: Self,
    ) -> Result;
    /// `relu`: `x` where `x > 0` or NaN, else +0 (`zero` holds +0); `d` is not `x`.
    fn relu(a: &mut CodeAssembler, d: Self, x: Self, zero: Self) -> Result;
}

/// A constant's operand: its pool entry, or the register it is kept in for the whole loop.
#[derive(Clone, Copy, Debug)]
pub(super) enum Src<W> {
    Mem(AsmMemoryOperand),
    Reg(W),
}

/// `$e` with `$o` the constant `$src`'s operand, memory or register (iced's operand types
/// choose the encoding).
macro_rules! with_src {
    ($src:expr, |$o:ident| $e:expr) => {
        match $src {
            Src::Mem($o) => $e,
            Src::Reg($o) => $e,
        }
    };
}

const YMM: [AsmRegisterYmm; 16] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15,
];
const ZMM: [AsmRegisterZmm; 32] = [
    zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13, zmm14,
    zmm15, zmm16, zmm17, zmm18, zmm19, zmm20, zmm21, zmm22, zmm23, zmm24, zmm25, zmm26, zmm27,
    zmm28, zmm29, zmm30, zmm31,
];

/// `ymm`: AVX2 and FMA.
pub(super) type Ymm = AsmRegisterYmm;
/// `zmm`: AVX-512F.
pub(super) type Zmm = AsmRegisterZmm;

/// The methods whose instructions are the same at both widths (iced's operand types choose
/// the encoding), defined in each `impl Width`.
macro_rules! same_at_both_widths {
    () => {
        fn mov(a: &mut CodeAssembler, d: Self, x: Self) -> Result {
            a.vmovaps(d, x)
        }
        fn load(a: &mut CodeAssembler, d: Self, m: AsmMemoryOperand) -> Result {
            a.vmovups(d, m)
        }
        fn load_const(a: &mut CodeAssembler, d: Self, c: Src<Self>) -> Result {
            with_src!(c, |o| a.vmovaps(d, o))
        }
        fn store(a: &mut CodeAssembler, m: AsmMemoryOperand, s: Self) -> Result {
            a.vmovups(m, s)
        }
        fn broadcast(a: &mut CodeAssembler, d: Self, m: AsmMemoryOperand) -> Result {
            a.vbroadcastss(d, m)
        }
        fn broadcast_low(a: &mut CodeAssembler, d: Self, x: AsmRegisterXmm) -> Result {
            a.vbroadcastss(d, x)
        }
        fn arith(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, y: Self) -> Result {
            match op {
                Arith::Add => a.vaddps(d, x, y),
                Arith::Sub => a.vsubps(d, x, y),
                Arith::Mul => a.vmulps(d, x, y),
                Arith::Div => a.vdivps(d, x, y),
                Arith::And | Arith::Xor | Arith::Or => Self::bitwise(a, op, d, x, y),
            }
        }
        fn arith_m(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, m: Src<Self>) -> Result {
            match op {
                Arith::Add => with_src!(m, |o| a.vaddps(d, x, o)),
                Arith::Sub => with_src!(m, |o| a.vsubps(d, x, o)),
                Arith::Mul => with_src!(m, |o| a.vmulps(d, x, o)),
                Arith::Div => with_src!(m, |o| a.vdivps(d, x, o)),
                Arith::And | Arith::Xor | Arith::Or => Self::bitwise_m(a, op, d, x, m),
            }
        }
        fn sqrt(a: &mut CodeAssembler, d: Self, x: Self) -> Result {
            a.vsqrtps(d, x)
        }
        fn min_m(a: &mut CodeAssembler, d: Self, x: Self, m: Src<Self>) -> Result {
            with_src!(m, |o| a.vminps(d, x, o))
        }
        fn fmadd213_m(a: &mut CodeAssembler, d: Self, x: Self, m: Src<Self>) -> Result {
            with_src!(m, |o| a.vfmadd213ps(d, x, o))
        }
        fn fmadd213(a: &mut CodeAssembler, d: Self, x: Self, y: Self) -> Result {
            a.vfmadd213ps(d, x, y)
        }
        fn fmadd231_m(a: &mut CodeAssembler, d: Self, x: Self, m: Src<Self>) -> Result {
            with_src!(m, |o| a.vfmadd231ps(d, x, o))
        }
        fn shl32(a: &mut CodeAssembler, d: Self, x: Self, n: u32) -> Result {
            a.vpslld(d, x, n)
        }
        fn shr32(a: &mut CodeAssembler, d: Self, x: Self, n: u32) -> Result {
            a.vpsrld(d, x, n)
        }
        fn add32(a: &mut CodeAssembler, d: Self, x: Self, y: Self) -> Result {
            a.vpaddd(d, x, y)
        }
        fn i32_to_f32(a: &mut CodeAssembler, d: Self, x: Self) -> Result {
            a.vcvtdq2ps(d, x)
        }
        fn cmp_m(a: &mut CodeAssembler, k: Self::Mask, x: Self, m: Src<Self>, p: u32) -> Result {
            with_src!(m, |o| a.vcmpps(k, x, o, p))
        }
    };
}

impl Width for AsmRegisterYmm {
    const LANES: u32 = 8;
    type Mask = AsmRegisterYmm;
    const REGISTERS: u8 = 16;
    fn reg(r: u8) -> Self {
        YMM[usize::from(r)]
    }
    fn ptr(m: impl Into<AsmMemoryOperand>) -> AsmMemoryOperand {
        ymmword_ptr(m)
    }
    fn mask(_: u8, scratch: Self) -> Self {
        scratch
    }
    fn bitwise(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, y: Self) -> Result {
        match op {
            Arith::And => a.vandps(d, x, y),
            Arith::Or => a.vorps(d, x, y),
            _ => a.vxorps(d, x, y),
        }
    }
    fn bitwise_m(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, m: Src<Self>) -> Result {
        match op {
            Arith::And => with_src!(m, |o| a.vandps(d, x, o)),
            Arith::Or => with_src!(m, |o| a.vorps(d, x, o)),
            _ => with_src!(m, |o| a.vxorps(d, x, o)),
        }
    }
    same_at_both_widths!();
    fn blend(a: &mut CodeAssembler, d: Self, f: Self, t: Self, k: Self) -> Result {
        a.vblendvps(d, f, t, k)
    }
    fn zero_where(a: &mut CodeAssembler, d: Self, k: Self) -> Result {
        a.vandnps(d, k, d)
    }
    fn only_where(a: &mut CodeAssembler, d: Self, k: Self, m: Src<Self>) -> Result {
        with_src!(m, |o| a.vandps(d, k, o))
    }
    fn compare(a: &mut CodeAssembler, d: Self, x: Self, y: Self, p: u32) -> Result {
        a.vcmpps(d, x, y, p)
    }
    fn select(a: &mut CodeAssembler, d: Self, mask: Self, t: Self, f: Self) -> Result {
        a.vblendvps(d, f, t, mask)
    }
    fn extreme(
        a: &mut CodeAssembler,
        max: bool,
        d: Self,
        x: Self,
        y: Self,
        scratch: Self,
    ) -> Result {
        // The right operand where it wins strictly, else the left; all ones (a NaN) where
        // either is NaN.
        a.vcmpps(d, x, y, if max { LT_OQ } else { GT_OQ })?;
        a.vblendvps(d, x, y, d)?;
        a.vcmpps(scratch, x, y, UNORD_Q)?;
        a.vorps(d, d, scratch)
    }
    fn relu(a: &mut CodeAssembler, d: Self, x: Self, zero: Self) -> Result {
        // Kept where `x > 0` or unordered (not `x <= 0`).
        a.vcmpps(d, x, zero, NLE_UQ_RELU)?;
        a.vandps(d, d, x)
    }
}

/// Opmask register `k` (1–7) on `r`, merging.
fn masked(r: AsmRegisterZmm, k: AsmRegisterK) -> AsmRegisterZmm {
    match k {
        _ if k == k1 => r.k1(),
        _ if k == k2 => r.k2(),
        _ if k == k3 => r.k3(),
        _ if k == k4 => r.k4(),
        _ if k == k5 => r.k5(),
        _ if k == k6 => r.k6(),
        _ => r.k7(),
    }
}

impl Width for AsmRegisterZmm {
    const LANES: u32 = 16;
    type Mask = AsmRegisterK;
    const REGISTERS: u8 = 32;
    fn reg(r: u8) -> Self {
        ZMM[usize::from(r)]
    }
    fn ptr(m: impl Into<AsmMemoryOperand>) -> AsmMemoryOperand {
        zmmword_ptr(m)
    }
    fn mask(slot: u8, _: Self) -> AsmRegisterK {
        [k1, k2, k3, k4][usize::from(slot)]
    }
    // The bitwise operations as AVX-512F's integer forms (`vandps` and the like are
    // AVX-512DQ): the same bits.
    fn bitwise(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, y: Self) -> Result {
        match op {
            Arith::And => a.vpandd(d, x, y),
            Arith::Or => a.vpord(d, x, y),
            _ => a.vpxord(d, x, y),
        }
    }
    fn bitwise_m(a: &mut CodeAssembler, op: Arith, d: Self, x: Self, m: Src<Self>) -> Result {
        match op {
            Arith::And => with_src!(m, |o| a.vpandd(d, x, o)),
            Arith::Or => with_src!(m, |o| a.vpord(d, x, o)),
            _ => with_src!(m, |o| a.vpxord(d, x, o)),
        }
    }
    same_at_both_widths!();
    fn blend(a: &mut CodeAssembler, d: Self, f: Self, t: Self, k: AsmRegisterK) -> Result {
        a.vblendmps(masked(d, k), f, t)
    }
    fn zero_where(a: &mut CodeAssembler, d: Self, k: AsmRegisterK) -> Result {
        a.vpxord(masked(d, k), d, d)
    }
    fn only_where(a: &mut CodeAssembler, d: Self, k: AsmRegisterK, m: Src<Self>) -> Result {
        with_src!(m, |o| a.vmovups(masked(d, k).z(), o))
    }
    fn compare(a: &mut CodeAssembler, d: Self, x: Self, y: Self, p: u32) -> Result {
        a.vcmpps(k1, x, y, p)?;
        a.vpternlogd(d.k1().z(), d, d, 0xff)
    }
    fn select(a: &mut CodeAssembler, d: Self, mask: Self, t: Self, f: Self) -> Result {
        a.vptestmd(k1, mask, mask)?;
        a.vblendmps(d.k1(), f, t)
    }
    fn extreme(a: &mut CodeAssembler, max: bool, d: Self, x: Self, y: Self, _: Self) -> Result {
        a.vcmpps(k1, x, y, if max { LT_OQ } else { GT_OQ })?;
        a.vblendmps(d.k1(), x, y)?;
        a.vcmpps(k2, x, y, UNORD_Q)?;
        a.vpternlogd(d.k2(), d, d, 0xff)
    }
    fn relu(a: &mut CodeAssembler, d: Self, x: Self, zero: Self) -> Result {
        a.vcmpps(k1, x, zero, NLE_UQ_RELU)?;
        a.vmovaps(d.k1().z(), x)
    }
}

/// Constants the functions read, one register of copies each, after the code: as memory
/// operands, or (the first a loop reads, as many as there are registers its body leaves
/// free, [`Pool::keeping`]) from registers loaded once before the loop. A function reads a
/// dozen constants per vector; from memory, each is a whole-register load beside the
/// arithmetic.
#[derive(Default)]
pub(super) struct Pool {
    entries: Vec<(u32, CodeLabel)>,
    /// The constants kept in registers, `kept[i]` in register `first + i`.
    kept: Vec<u32>,
    first: u8,
}

impl Pool {
    /// A pool whose constants `kept` are read from registers `first`, `first + 1`, …: those
    /// of them below [`Width::REGISTERS`], which the body (registers below `first`) leaves
    /// free.
    pub(super) fn keeping(kept: Vec<u32>, first: u8) -> Pool {
        Pool {
            entries: Vec::new(),
            kept,
            first,
        }
    }

    /// The register of the `i`-th kept constant, if there is one at width `W`.
    fn kept_register<W: Width>(&self, i: usize) -> Option<W> {
        let r = usize::from(self.first).checked_add(i)?;
        (r < usize::from(W::REGISTERS)).then(|| W::reg(r as u8))
    }

    /// The operand of constant `bits` (every lane).
    pub(super) fn at<W: Width>(&mut self, a: &mut CodeAssembler, bits: u32) -> Src<W> {
        let kept = self.kept.iter().position(|&b| b == bits);
        match kept.and_then(|i| self.kept_register::<W>(i)) {
            Some(r) => Src::Reg(r),
            None => Src::Mem(self.memory::<W>(a, bits)),
        }
    }

    /// The memory operand of constant `bits`'s entry.
    fn memory<W: Width>(&mut self, a: &mut CodeAssembler, bits: u32) -> AsmMemoryOperand {
        let label = match self.entries.iter().find(|(b, _)| *b == bits) {
            Some(&(_, label)) => label,
            None => {
                let label = a.create_label();
                self.entries.push((bits, label));
                label
            }
        };
        W::ptr(label)
    }

    fn f32<W: Width>(&mut self, a: &mut CodeAssembler, x: f32) -> Src<W> {
        self.at::<W>(a, x.to_bits())
    }

    /// Loads the kept constants into their registers (once, before the loop).
    pub(super) fn load_kept<W: Width>(&mut self, a: &mut CodeAssembler) -> Result {
        for (i, bits) in self.kept.clone().into_iter().enumerate() {
            let Some(r) = self.kept_register::<W>(i) else {
                break;
            };
            let m = self.memory::<W>(a, bits);
            W::load(a, r, m)?;
        }
        Ok(())
    }

    /// Every constant read, in the order first read.
    pub(super) fn constants(&self) -> Vec<u32> {
        self.entries.iter().map(|&(bits, _)| bits).collect()
    }

    /// The constants, `lanes` copies each, at their labels; their length in bytes.
    pub(super) fn emit(
        &mut self,
        a: &mut CodeAssembler,
        lanes: u32,
    ) -> std::result::Result<usize, IcedError> {
        for (bits, label) in &mut self.entries {
            a.set_label(label)?;
            a.dd(&vec![*bits; lanes as usize])?;
        }
        Ok(self.entries.len() * 4 * lanes as usize)
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// The functions a leaf loop evaluates, each by `weft_runtime::vmath`'s algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Function {
    Exp,
    Sigmoid,
    Tanh,
    Log,
}

/// Scratch registers a function takes at most (tanh's and log's four).
pub(super) const FUNCTION_SCRATCH: usize = 4;

/// `dst = f(x)` (`x` not `dst`, kept; `s` clobbered), operation for operation as `math.rs`
/// emits `f` inline (and `weft_runtime::vmath` computes it): the same fused multiply-adds, in
/// the same order.
pub(super) fn function<W: Width>(
    a: &mut CodeAssembler,
    pool: &mut Pool,
    f: Function,
    dst: W,
    x: W,
    s: [W; FUNCTION_SCRATCH],
) -> Result {
    let [s0, s1, s2, s3] = s;
    match f {
        Function::Exp => exp(a, pool, x, dst, [s0, s1]),
        Function::Sigmoid => {
            // 1 / (1 + e^−x).
            let m = pool.at::<W>(a, 0x8000_0000);
            W::arith_m(a, Arith::Xor, s2, x, m)?;
            exp(a, pool, s2, dst, [s0, s1])?;
            let m = pool.f32::<W>(a, 1.0);
            W::arith_m(a, Arith::Add, dst, dst, m)?;
            let m = pool.f32::<W>(a, 1.0);
            W::load_const(a, s0, m)?;
            W::arith(a, Arith::Div, dst, s0, dst)
        }
        Function::Log => log(a, pool, x, dst, s),
        Function::Tanh => {
            // small = x + x·z·P(z), z = x²; large = (1 − e)/(1 + e) of the clamped |x|.
            let m = pool.at::<W>(a, 0x7fff_ffff);
            W::arith_m(a, Arith::And, s0, x, m)?;
            W::arith(a, Arith::Mul, s1, x, x)?;
            horner(a, pool, dst, s1, &tanh_f32::POLY)?;
            W::arith(a, Arith::Mul, s1, x, s1)?;
            W::fmadd213(a, dst, s1, x)?;
            let m = pool.f32::<W>(a, tanh_f32::CLAMP);
            W::min_m(a, s1, s0, m)?;
            exp_unchecked(a, pool, s1, s1, [s2, s3], &tanh_f32::EXP_FORM)?;
            let m = pool.f32::<W>(a, 1.0);
            W::load_const(a, s2, m)?;
            W::arith(a, Arith::Sub, s2, s2, s1)?;
            let m = pool.f32::<W>(a, 1.0);
            W::arith_m(a, Arith::Add, s1, s1, m)?;
            W::arith(a, Arith::Div, s2, s2, s1)?;
            let large = W::mask(0, s0);
            let m = pool.f32::<W>(a, tanh_f32::POLY_BELOW);
            W::cmp_m(a, large, s0, m, GE_OQ)?;
            W::blend(a, dst, dst, s2, large)?;
            let m = pool.at::<W>(a, 0x8000_0000);
            W::arith_m(a, Arith::And, s0, x, m)?;
            W::arith(a, Arith::Or, dst, dst, s0)
        }
    }
}

/// `dst = ln x` (`x` not `dst`, kept; `s` clobbered): subnormals scaled by `2^25`, `x = m·2^e`
/// from the bits with `m` moved into `[√½, √2)`, `f = m − 1`, Cephes' `log(1 + f) = f − f²/2 +
/// f³·P(f)` with `e·ln 2` added in two parts; then `+inf` for `+inf`, `−inf` for `±0`, NaN for
/// a negative or NaN `x` — as `math.rs`'s `log`, operation for operation.
fn log<W: Width>(
    a: &mut CodeAssembler,
    pool: &mut Pool,
    x: W,
    dst: W,
    [s0, s1, s2, s3]: [W; FUNCTION_SCRATCH],
) -> Result {
    use log_f32::*;
    let sub = W::mask(0, s0);
    let m = pool.f32::<W>(a, f32::MIN_POSITIVE);
    W::cmp_m(a, sub, x, m, LT_OQ)?;
    let m = pool.f32::<W>(a, 2f32.powi(SUBNORMAL_SCALE));
    W::arith_m(a, Arith::Mul, s1, x, m)?;
    W::blend(a, dst, x, s1, sub)?;
    // The exponent correction: −25 where scaled, +0 elsewhere.
    let m = pool.f32::<W>(a, -(SUBNORMAL_SCALE as f32));
    W::only_where(a, s0, sub, m)?;
    // The exponent field as a float (exact), and the mantissa as m in [1, 2).
    W::shr32(a, s1, dst, 23)?;
    let m = pool.at::<W>(a, 0xff);
    W::arith_m(a, Arith::And, s1, s1, m)?;
    W::i32_to_f32(a, s1, s1)?;
    let m = pool.at::<W>(a, 0x007f_ffff);
    W::arith_m(a, Arith::And, dst, dst, m)?;
    let m = pool.f32::<W>(a, 1.0);
    W::arith_m(a, Arith::Or, dst, dst, m)?;
    let above = W::mask(2, s2);
    let m = pool.f32::<W>(a, SQRT_2);
    W::cmp_m(a, above, dst, m, GT_OQ)?;
    let m = pool.f32::<W>(a, 0.5);
    W::arith_m(a, Arith::Mul, s3, dst, m)?;
    W::blend(a, dst, dst, s3, above)?;
    let m = pool.f32::<W>(a, 1.0);
    W::arith_m(a, Arith::Add, s3, s1, m)?;
    W::blend(a, s1, s1, s3, above)?;
    let m = pool.f32::<W>(a, 127.0);
    W::arith_m(a, Arith::Sub, s1, s1, m)?;
    W::arith(a, Arith::Add, s1, s1, s0)?;
    // s1 = e; f = m − 1, z = f², the tail f·z·P(f) + e·ln2_lo − z/2, then f + tail + e·ln2_hi.
    let m = pool.f32::<W>(a, 1.0);
    W::arith_m(a, Arith::Sub, dst, dst, m)?;
    W::arith(a, Arith::Mul, s0, dst, dst)?;
    horner(a, pool, s2, dst, &POLY)?;
    W::arith(a, Arith::Mul, s3, dst, s0)?;
    W::arith(a, Arith::Mul, s3, s3, s2)?;
    let m = pool.f32::<W>(a, LN2_LO);
    W::fmadd231_m(a, s3, s1, m)?;
    let m = pool.f32::<W>(a, -0.5);
    W::fmadd231_m(a, s3, s0, m)?;
    W::arith(a, Arith::Add, dst, dst, s3)?;
    let m = pool.f32::<W>(a, LN2_HI);
    W::fmadd231_m(a, dst, s1, m)?;
    let special = W::mask(0, s0);
    for (predicate, than, value) in [
        (EQ_OQ, f32::INFINITY, f32::INFINITY),
        (EQ_OQ, 0.0, f32::NEG_INFINITY),
        (NGE_UQ, 0.0, f32::NAN),
    ] {
        let m = pool.f32::<W>(a, than);
        W::cmp_m(a, special, x, m, predicate)?;
        let m = pool.f32::<W>(a, value);
        W::load_const(a, s2, m)?;
        W::blend(a, dst, dst, s2, special)?;
    }
    Ok(())
}

/// `dst = e^x` with its limits: `x + inf` above `HI` or NaN, `+0` below `LO`; `x` is not
/// `dst` and is kept; `t` clobbered.
fn exp<W: Width>(a: &mut CodeAssembler, pool: &mut Pool, x: W, dst: W, [t0, t1]: [W; 2]) -> Result {
    exp_unchecked(a, pool, x, dst, [t0, t1], &exp_f32::FORM)?;
    let limit = W::mask(0, t0);
    let m = pool.f32::<W>(a, exp_f32::HI);
    W::cmp_m(a, limit, x, m, NLE_UQ)?;
    let m = pool.f32::<W>(a, f32::INFINITY);
    W::arith_m(a, Arith::Add, t1, x, m)?;
    W::blend(a, dst, dst, t1, limit)?;
    let m = pool.f32::<W>(a, exp_f32::LO);
    W::cmp_m(a, limit, x, m, LT_OQ)?;
    W::zero_where(a, dst, limit)
}

/// `dst = e^x` by `form` for a normal result (`x` may be `dst`); `t` clobbered: `t0 = x·log2e
/// + magic` (holding `k`), `k = t0 − magic`, `r = x + k·parts…`, `p` by Horner in `r`, the
/// result `p`'s bits plus `t0`'s shifted into the exponent.
fn exp_unchecked<W: Width>(
    a: &mut CodeAssembler,
    pool: &mut Pool,
    x: W,
    dst: W,
    [t0, t1]: [W; 2],
    form: &ExpForm,
) -> Result {
    let m = pool.f32::<W>(a, form.log2e);
    W::load_const(a, t0, m)?;
    let m = pool.f32::<W>(a, exp_f32::MAGIC);
    W::fmadd213_m(a, t0, x, m)?;
    let m = pool.f32::<W>(a, exp_f32::MAGIC);
    W::arith_m(a, Arith::Sub, t1, t0, m)?;
    if dst != x {
        W::mov(a, dst, x)?;
    }
    for &part in form.parts {
        let m = pool.f32::<W>(a, part);
        W::fmadd231_m(a, dst, t1, m)?;
    }
    horner(a, pool, t1, dst, form.poly)?;
    W::shl32(a, t0, t0, 23)?;
    W::add32(a, dst, t1, t0)
}

/// `acc = Σ coeffs[i]·x^i` by Horner's rule (`acc` not `x`): `acc = c_n`, then
/// `acc = acc·x + c_i` fused, down to `c_0`.
fn horner<W: Width>(
    a: &mut CodeAssembler,
    pool: &mut Pool,
    acc: W,
    x: W,
    coeffs: &[f32],
) -> Result {
    let Some((&last, rest)) = coeffs.split_last() else {
        return Ok(());
    };
    let m = pool.f32::<W>(a, last);
    W::load_const(a, acc, m)?;
    for &c in rest.iter().rev() {
        let m = pool.f32::<W>(a, c);
        W::fmadd213_m(a, acc, x, m)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::leaf::{LeafLoop, LeafSum};
    use super::LeafWidth;
    use iced_x86::{Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};
    use weft_ir::loop_ir::{parse_kernel, AccId, Kernel, LoopId, Stmt};

    /// Every operation a stored leaf body has but the functions: arithmetic, a uniform
    /// divisor, extremes, the unary operations, comparisons and their logic, a select and a
    /// `bool → f32` convert.
    const STORED: &str = "kernel @stored {
  buffer %a: f32[1024] read
  buffer %b: f32[1024] read
  buffer %d: f32[1] read
  buffer %o: f32[1024] write
  %v2: f32 = load %d[0]
  loop %i0 in 0..1024 vectorize {
    %v0: f32 = load %a[%i0]
    %v1: f32 = load %b[%i0]
    %v3: f32 = div %v0, %v2
    %v4: f32 = div %v3, %v1
    %v5: f32 = max %v4, %v0
    %v6: f32 = min %v5, %v1
    %v7: f32 = neg %v6
    %v8: f32 = abs %v7
    %v9: f32 = sqrt %v8
    %v10: f32 = square %v9
    %v11: f32 = reciprocal %v10
    %v12: f32 = relu %v11
    %v17: bool = lt %v12, %v0
    %v18: bool = ge %v1, %v0
    %v19: bool = and %v17, %v18
    %v20: bool = or %v19, %v17
    %v21: bool = xor %v20, %v18
    %v22: bool = not %v21
    %v23: f32 = select %v22, %v12, %v1
    %v24: f32 = convert %v19
    %v25: f32 = add %v23, %v24
    %v26: f32 = sub %v25, %v0
    %v27: f32 = mul %v26, %v1
    store %o[%i0], %v27
  }
}
";

    /// Each function, stored.
    const FUNCTIONS: &str = "kernel @functions {
  buffer %a: f32[1024] read
  buffer %o: f32[1024] write
  loop %i0 in 0..1024 vectorize {
    %v0: f32 = load %a[%i0]
    %v1: f32 = exp %v0
    %v2: f32 = sigmoid %v1
    %v3: f32 = tanh %v2
    %v4: f32 = log %v3
    store %o[%i0], %v4
  }
}
";

    /// A sum of a function of a load into 16 f32 partials (one `zmm`, two `ymm`).
    const SUMMED: &str = "kernel @summed {
  buffer %a: f32[1024] read
  buffer %o: f32[1] write
  acc %a0: sum f64 partials f32
  loop %i0 in 0..1024 vectorize {
    %v0: f32 = load %a[%i0]
    %v1: f32 = exp %v0
    %v2: f64 = convert %v1
    reduce %a0, %v2
  }
  %v3: f64 = acc.value %a0
  %v4: f32 = convert %v3
  store %o[0], %v4
}
";

    fn leaf(k: &Kernel, sum: Option<LeafSum>, width: LeafWidth) -> LeafLoop {
        let l = LoopId::from_u32(0);
        let body = k
            .body
            .iter()
            .find_map(|s| match s {
                Stmt::Loop { loop_id, body } if *loop_id == l => Some(body.as_slice()),
                _ => None,
            })
            .expect("the loop");
        LeafLoop::of(k, l, body, sum, true, true, width).expect("a leaf loop")
    }

    fn instructions(code: &[u8]) -> Vec<Instruction> {
        let mut d = Decoder::new(64, code, DecoderOptions::NONE);
        let mut out = Vec::new();
        // The code stops at the `ret`; the padding and the constant pool follow.
        while d.can_decode() {
            let i = d.decode();
            out.push(i);
            if i.mnemonic() == Mnemonic::Ret {
                break;
            }
        }
        out
    }

    /// The vector registers instruction `i` names (operands of register kind).
    fn vector_registers(i: &Instruction) -> Vec<Register> {
        (0..i.op_count())
            .filter(|&n| i.op_kind(n) == OpKind::Register)
            .map(|n| i.op_register(n))
            .filter(|r| r.is_xmm() || r.is_ymm() || r.is_zmm())
            .collect()
    }

    /// At `zmm`, a loop's whole body is in `zmm` registers (an `xmm` only where a constant
    /// is moved in to be broadcast), its memory operands 64 bytes wide, and the same
    /// registers taken as at `ymm` (but for a sum's partials); the `ymm` code names no `zmm`
    /// register. The code is not
    /// run here (the host may lack AVX-512F): tests/leaf_loops.rs runs it on hosts that have
    /// it, and docs/testing.md says how to run it under an emulator.
    #[test]
    fn both_widths_assemble_every_operation_in_their_own_registers() {
        let stored = parse_kernel("stored", STORED).unwrap();
        let functions = parse_kernel("functions", FUNCTIONS).unwrap();
        let summed = parse_kernel("summed", SUMMED).unwrap();
        let sum = Some(LeafSum {
            acc: AccId::from_u32(0),
            width: 16,
            for_loop: None,
        });
        for (k, sum) in [(&stored, None), (&functions, None), (&summed, sum)] {
            let ymm = leaf(k, sum, LeafWidth::Ymm);
            let zmm = leaf(k, sum, LeafWidth::Zmm);
            assert_eq!((ymm.lanes(), zmm.lanes()), (8, 16));
            // The same registers but the partials': 16 are two `ymm`, one `zmm`.
            let partials = u8::from(sum.is_some());
            assert_eq!(ymm.registers, zmm.registers + partials);
            let narrow = instructions(&ymm.assemble(true).unwrap());
            let wide = instructions(&zmm.assemble(true).unwrap());
            assert!(narrow
                .iter()
                .all(|i| vector_registers(i).iter().all(|r| !r.is_zmm())));
            for i in &wide {
                let regs = vector_registers(i);
                let moved_in = matches!(i.mnemonic(), Mnemonic::Vmovd | Mnemonic::Vbroadcastss)
                    && regs.iter().all(|r| r.is_xmm() || r.is_zmm());
                assert!(
                    moved_in || regs.iter().all(|r| r.is_zmm()),
                    "{:?} in {} names {regs:?}",
                    i.mnemonic(),
                    k.name
                );
                if i.op_kind(0) == OpKind::Memory
                    || i.op_kinds().skip(1).any(|o| o == OpKind::Memory)
                {
                    let bytes = i.memory_size().size();
                    assert!(
                        bytes == 64 || bytes == 4 || bytes == 8 || bytes == 1,
                        "{i:?}"
                    );
                }
            }
            // Comparisons go through opmask registers at `zmm`.
            assert!(wide.iter().any(|i| i.mnemonic() == Mnemonic::Vcmpps));
            assert!(!wide.iter().any(|i| i.mnemonic() == Mnemonic::Vblendvps));
        }
    }

    /// A loop reads the constants of its functions from the registers its body leaves free,
    /// loaded once before it: at `zmm` (28 free) all thirteen of exp's, so no instruction of
    /// the loop reads the pool; at `ymm` (12 free) the first twelve, the last from memory.
    #[test]
    fn loops_keep_their_constants_in_free_registers() {
        let k = parse_kernel(
            "exp",
            "kernel @exp {
  buffer %a: f32[1024] read
  buffer %o: f32[1024] write
  loop %i0 in 0..1024 vectorize {
    %v0: f32 = load %a[%i0]
    %v1: f32 = exp %v0
    store %o[%i0], %v1
  }
}
",
        )
        .unwrap();
        let pool_reads = |width| {
            let code = instructions(&leaf(&k, None, width).assemble(false).unwrap());
            // The loop: from the first load of the input (after the kept constants) to its
            // backward branch.
            let top = code
                .iter()
                .position(|i| i.mnemonic() == Mnemonic::Vmovups && !i.is_ip_rel_memory_operand())
                .expect("the loop's load");
            let end = code
                .iter()
                .position(|i| i.mnemonic() == Mnemonic::Jb)
                .expect("the loop's branch");
            let kept = code[..top]
                .iter()
                .filter(|i| i.is_ip_rel_memory_operand())
                .count();
            let read = code[top..end]
                .iter()
                .filter(|i| i.is_ip_rel_memory_operand())
                .count();
            (kept, read)
        };
        assert_eq!(leaf(&k, None, LeafWidth::Ymm).registers, 4);
        assert_eq!(pool_reads(LeafWidth::Zmm), (13, 0));
        let (kept, read) = pool_reads(LeafWidth::Ymm);
        assert_eq!(kept, 12);
        assert!(read >= 1, "{read} reads of the pool at ymm");
    }
}
