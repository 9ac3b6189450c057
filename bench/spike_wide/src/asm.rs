//! Design (a): a JIT assembler for leaf loops, after oneDNN's Xbyak kernels: each loop body is
//! emitted at run time as x86-64 machine code with `iced-x86`'s code assembler into an
//! executable mapping, and called through a `sysv64` function pointer (as a Cranelift kernel
//! would call it). Constants live in a pool after the code, addressed RIP-relative.

use crate::lanes::expc;
use iced_x86::code_asm::*;
use iced_x86::IcedError;

/// Machine code in an executable mapping of its own, unmapped on drop.
pub struct Code {
    mem: *mut u8,
    map_len: usize,
    pub code_len: usize,
}

impl Drop for Code {
    fn drop(&mut self) {
        // SAFETY: `mem` is the mapping of `map_len` bytes made by `finish`, unmapped only here.
        unsafe {
            libc::munmap(self.mem.cast(), self.map_len);
        }
    }
}

// SAFETY: the mapping is immutable (read + execute) after `finish`.
unsafe impl Send for Code {}

impl Code {
    pub fn addr(&self) -> *const u8 {
        self.mem
    }
}

/// Assembles `a` at a fresh mapping's address, copies it there and makes it executable.
fn finish(mut a: CodeAssembler) -> Result<Code, IcedError> {
    let mut map_len = 4096;
    loop {
        // SAFETY: a fresh anonymous private mapping; the result is checked.
        let mem = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert!(mem != libc::MAP_FAILED, "mmap failed");
        let bytes = a.assemble(mem as u64)?;
        if bytes.len() > map_len {
            // SAFETY: the mapping just made, not used.
            unsafe { libc::munmap(mem, map_len) };
            map_len = bytes.len().next_multiple_of(4096);
            continue;
        }
        // SAFETY: `bytes.len() ≤ map_len` writable bytes at `mem`; then the mapping becomes
        // read + execute (never writable and executable at once).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), mem.cast::<u8>(), bytes.len());
            let rc = libc::mprotect(mem, map_len, libc::PROT_READ | libc::PROT_EXEC);
            assert_eq!(rc, 0, "mprotect failed");
        }
        return Ok(Code {
            mem: mem.cast(),
            map_len,
            code_len: bytes.len(),
        });
    }
}

/// `Σ (x_i − y_i)²` over `n` f32s: `fn(x, y, n) -> f32`.
pub type L2Fn = unsafe extern "sysv64" fn(*const f32, *const f32, usize) -> f32;
/// `out_i = x_i > 0 ? x_i : 0.5·(e^{x_i} − 1)` over `n` f32s: `fn(x, out, n)`.
pub type EluFn = unsafe extern "sysv64" fn(*const f32, *mut f32, usize);

/// A 32-byte constant (eight lanes) in the pool, and its label.
fn pool8(a: &mut CodeAssembler, l: &mut CodeLabel, v: f32) -> Result<(), IcedError> {
    a.set_label(l)?;
    a.dd_f32(&[v; 8])
}

/// The mask table for a ragged tail of `r < 8` lanes: eight all-ones dwords then eight zeros;
/// the 8 dwords from `masks + 32 − 4r` enable the first `r` lanes.
fn mask_table(a: &mut CodeAssembler, l: &mut CodeLabel) -> Result<(), IcedError> {
    a.set_label(l)?;
    a.dd(&[u32::MAX; 8])?;
    a.dd(&[0; 8])
}

const YMM: [AsmRegisterYmm; 16] = [
    ymm0, ymm1, ymm2, ymm3, ymm4, ymm5, ymm6, ymm7, ymm8, ymm9, ymm10, ymm11, ymm12, ymm13, ymm14,
    ymm15,
];

/// Terms summed in f32 partials before they are widened into the f64 totals (issue 61 step 4's
/// "blocks of at most 2^10 terms").
pub const SUM_BLOCK: usize = 1024;

/// The l2 loop on AVX2: `accs` (1, 2, 4 or 8) independent f32 vector partials, `accs · 8`
/// elements an iteration, over blocks of [`SUM_BLOCK`] elements; after each block the partials
/// are combined by a tree and widened into two f64x4 totals (ymm12, ymm13). The ragged rest:
/// whole iterations, single vectors, a masked tail, then one more flush.
pub fn l2_avx2(accs: usize) -> Result<Code, IcedError> {
    assert!(accs.is_power_of_two() && accs <= 8);
    let mut a = CodeAssembler::new(64)?;
    let mut masks = a.create_label();
    let (mut blocks, mut inner, mut rest, mut big, mut one, mut tail, mut done) = (
        a.create_label(),
        a.create_label(),
        a.create_label(),
        a.create_label(),
        a.create_label(),
        a.create_label(),
        a.create_label(),
    );
    let acc = &YMM[..accs];
    let tmp = &YMM[8..12];
    let zero_accs = |a: &mut CodeAssembler| -> Result<(), IcedError> {
        for &r in acc {
            a.vxorps(r, r, r)?;
        }
        Ok(())
    };
    // The partials' tree into ymm0, widened and added to the f64 totals; partials zeroed.
    let flush = |a: &mut CodeAssembler| -> Result<(), IcedError> {
        let mut w = accs;
        while w > 1 {
            w /= 2;
            for j in 0..w {
                a.vaddps(YMM[j], YMM[j], YMM[j + w])?;
            }
        }
        a.vcvtps2pd(ymm8, xmm0)?;
        a.vextractf128(xmm9, ymm0, 1)?;
        a.vcvtps2pd(ymm9, xmm9)?;
        a.vaddpd(ymm12, ymm12, ymm8)?;
        a.vaddpd(ymm13, ymm13, ymm9)?;
        zero_accs(a)
    };
    let body = |a: &mut CodeAssembler| -> Result<(), IcedError> {
        for (j, &r) in acc.iter().enumerate() {
            let t = tmp[j % 4];
            let off = (j * 32) as i32;
            a.vmovups(t, ymmword_ptr(rdi + rax * 4 + off))?;
            a.vsubps(t, t, ymmword_ptr(rsi + rax * 4 + off))?;
            a.vfmadd231ps(r, t, t)?;
        }
        a.add(rax, (accs * 8) as i32)
    };
    a.vxorpd(ymm12, ymm12, ymm12)?;
    a.vxorpd(ymm13, ymm13, ymm13)?;
    zero_accs(&mut a)?;
    a.xor(rax, rax)?;
    // Whole blocks.
    a.mov(rcx, rdx)?;
    a.and(rcx, -(SUM_BLOCK as i32))?;
    a.cmp(rax, rcx)?;
    a.jae(rest)?;
    a.set_label(&mut blocks)?;
    a.lea(r9, ptr(rax + SUM_BLOCK as i32))?;
    a.set_label(&mut inner)?;
    body(&mut a)?;
    a.cmp(rax, r9)?;
    a.jb(inner)?;
    flush(&mut a)?;
    a.cmp(rax, rcx)?;
    a.jb(blocks)?;
    // The rest (< one block): whole iterations, single vectors, a masked tail.
    a.set_label(&mut rest)?;
    a.mov(rcx, rdx)?;
    a.and(rcx, -((accs * 8) as i32))?;
    a.cmp(rax, rcx)?;
    a.jae(one)?;
    a.set_label(&mut big)?;
    body(&mut a)?;
    a.cmp(rax, rcx)?;
    a.jb(big)?;
    a.set_label(&mut one)?;
    a.mov(rcx, rdx)?;
    a.and(rcx, -8)?;
    let mut one_loop = a.create_label();
    a.set_label(&mut one_loop)?;
    a.cmp(rax, rcx)?;
    a.jae(tail)?;
    a.vmovups(ymm8, ymmword_ptr(rdi + rax * 4))?;
    a.vsubps(ymm8, ymm8, ymmword_ptr(rsi + rax * 4))?;
    a.vfmadd231ps(ymm0, ymm8, ymm8)?;
    a.add(rax, 8)?;
    a.jmp(one_loop)?;
    // Masked tail: r = n − i lanes.
    a.set_label(&mut tail)?;
    a.cmp(rax, rdx)?;
    a.jae(done)?;
    a.mov(rcx, rax)?;
    a.sub(rcx, rdx)?; // −r
    a.lea(r8, ptr(masks))?;
    a.vmovups(ymm9, ymmword_ptr(r8 + rcx * 4 + 32))?;
    a.vmaskmovps(ymm10, ymm9, ymmword_ptr(rdi + rax * 4))?;
    a.vmaskmovps(ymm11, ymm9, ymmword_ptr(rsi + rax * 4))?;
    a.vsubps(ymm10, ymm10, ymm11)?;
    a.vfmadd231ps(ymm0, ymm10, ymm10)?;
    a.set_label(&mut done)?;
    flush(&mut a)?;
    // The f64 totals' lanes, then rounded to f32 once.
    a.vaddpd(ymm12, ymm12, ymm13)?;
    a.vextractf128(xmm1, ymm12, 1)?;
    a.vaddpd(xmm0, xmm12, xmm1)?;
    a.vunpckhpd(xmm1, xmm0, xmm0)?;
    a.vaddsd(xmm0, xmm0, xmm1)?;
    a.vcvtsd2ss(xmm0, xmm0, xmm0)?;
    a.vzeroupper()?;
    a.ret()?;
    a.int3()?;
    mask_table(&mut a, &mut masks)?;
    finish(a)
}

/// The constant pool of the exp/ELU body, one label per 8-lane constant.
struct EluPool {
    log2e: CodeLabel,
    magic: CodeLabel,
    ln2_hi: CodeLabel,
    ln2_lo: CodeLabel,
    poly: Vec<CodeLabel>,
    hi: CodeLabel,
    lo: CodeLabel,
    inf: CodeLabel,
    one: CodeLabel,
    half: CodeLabel,
    zero: CodeLabel,
    masks: CodeLabel,
}

impl EluPool {
    fn new(a: &mut CodeAssembler) -> EluPool {
        EluPool {
            log2e: a.create_label(),
            magic: a.create_label(),
            ln2_hi: a.create_label(),
            ln2_lo: a.create_label(),
            poly: expc::POLY.iter().map(|_| a.create_label()).collect(),
            hi: a.create_label(),
            lo: a.create_label(),
            inf: a.create_label(),
            one: a.create_label(),
            half: a.create_label(),
            zero: a.create_label(),
            masks: a.create_label(),
        }
    }
    fn emit(mut self, a: &mut CodeAssembler) -> Result<(), IcedError> {
        pool8(a, &mut self.log2e, expc::LOG2_E)?;
        pool8(a, &mut self.magic, expc::MAGIC)?;
        pool8(a, &mut self.ln2_hi, expc::NEG_LN2_HI)?;
        pool8(a, &mut self.ln2_lo, expc::NEG_LN2_LO)?;
        for (l, &c) in self.poly.iter_mut().zip(expc::POLY.iter()) {
            pool8(a, l, c)?;
        }
        pool8(a, &mut self.hi, expc::HI)?;
        pool8(a, &mut self.lo, expc::LO)?;
        pool8(a, &mut self.inf, f32::INFINITY)?;
        pool8(a, &mut self.one, 1.0)?;
        pool8(a, &mut self.half, 0.5)?;
        pool8(a, &mut self.zero, 0.0)?;
        mask_table(a, &mut self.masks)
    }
}

/// Registers of one chain of the ELU body: `x`, `t`, `k`, `r` (reused as the body goes: `k`
/// becomes the result `y` once `r` is formed, `r` the compare masks, `t` the overflow value).
type Chain = [AsmRegisterYmm; 4];

/// `$e` for every chain, in order: one instruction of each independent chain before the next
/// instruction of any, so the chains interleave in program order (the out-of-order window
/// then overlaps their long latency chains).
macro_rules! each_chain {
    ($chains:expr, |$x:ident, $t:ident, $k:ident, $r:ident| $e:expr) => {
        for &[$x, $t, $k, $r] in $chains {
            $e?;
        }
    };
}

/// The ELU body for each chain, interleaved: `x` already loaded, the result left in `k`;
/// ymm14 = log2 e, ymm15 = the magic constant. The exp is the runtime's (`simd::exp`),
/// operation for operation, so the bits agree with the engine's and weft's.
#[allow(unused_variables)] // each step names the chain's four registers, using some
fn elu_body(a: &mut CodeAssembler, p: &EluPool, chains: &[Chain]) -> Result<(), IcedError> {
    each_chain!(chains, |x, t, k, r| a.vmovaps(t, ymm15));
    each_chain!(chains, |x, t, k, r| a.vfmadd231ps(t, x, ymm14)); // t = x·log2e + magic
    each_chain!(chains, |x, t, k, r| a.vsubps(k, t, ymm15)); // k = t − magic
    each_chain!(chains, |x, t, k, r| a.vmovaps(r, x));
    each_chain!(chains, |x, t, k, r| a.vfmadd231ps(
        r,
        k,
        ymmword_ptr(p.ln2_hi)
    ));
    each_chain!(chains, |x, t, k, r| a.vfmadd231ps(
        r,
        k,
        ymmword_ptr(p.ln2_lo)
    ));
    let last = p.poly.len() - 1;
    each_chain!(chains, |x, t, k, r| a.vmovups(k, ymmword_ptr(p.poly[last]))); // y in k
    for j in (0..last).rev() {
        each_chain!(chains, |x, t, k, r| a.vfmadd213ps(
            k,
            r,
            ymmword_ptr(p.poly[j])
        ));
    }
    each_chain!(chains, |x, t, k, r| a.vpslld(t, t, 23));
    each_chain!(chains, |x, t, k, r| a.vpaddd(k, k, t)); // y · 2^k
    each_chain!(chains, |x, t, k, r| a.vcmpps(r, x, ymmword_ptr(p.hi), 6)); // NLE_UQ
    each_chain!(chains, |x, t, k, r| a.vaddps(t, x, ymmword_ptr(p.inf)));
    each_chain!(chains, |x, t, k, r| a.vblendvps(k, k, t, r));
    each_chain!(chains, |x, t, k, r| a.vcmpps(r, x, ymmword_ptr(p.lo), 0x11)); // LT_OQ
    each_chain!(chains, |x, t, k, r| a.vandnps(k, r, k));
    each_chain!(chains, |x, t, k, r| a.vsubps(k, k, ymmword_ptr(p.one))); // e^x − 1
    each_chain!(chains, |x, t, k, r| a.vmulps(k, k, ymmword_ptr(p.half))); // · 0.5
    each_chain!(chains, |x, t, k, r| a.vcmpps(
        r,
        x,
        ymmword_ptr(p.zero),
        0x1e
    )); // GT_OQ
    each_chain!(chains, |x, t, k, r| a.vblendvps(k, k, x, r));
    Ok(())
}

/// The ELU loop on AVX2: `chains` (1..=3) vectors an iteration, their bodies interleaved, then
/// single vectors, then a masked tail.
pub fn elu_avx2(chains: usize) -> Result<Code, IcedError> {
    assert!((1..=3).contains(&chains));
    let all: [Chain; 3] = [
        [ymm0, ymm1, ymm2, ymm3],
        [ymm4, ymm5, ymm6, ymm7],
        [ymm8, ymm9, ymm10, ymm11],
    ];
    let chs = &all[..chains];
    let mut a = CodeAssembler::new(64)?;
    let p = EluPool::new(&mut a);
    let (mut big, mut one, mut tail, mut done) = (
        a.create_label(),
        a.create_label(),
        a.create_label(),
        a.create_label(),
    );
    a.vmovups(ymm14, ymmword_ptr(p.log2e))?;
    a.vmovups(ymm15, ymmword_ptr(p.magic))?;
    let step = 8 * chains as i32;
    // r10 = n; r9 = n rounded down to 8; rcx = n rounded down to a whole iteration.
    a.mov(r10, rdx)?;
    a.mov(r9, rdx)?;
    a.and(r9, -8)?;
    a.mov(rax, rdx)?;
    a.xor(edx, edx)?;
    a.mov(ecx, step)?;
    a.div(rcx)?;
    a.imul_3(rcx, rax, step)?;
    a.xor(eax, eax)?;
    a.cmp(rax, rcx)?;
    a.jae(one)?;
    a.set_label(&mut big)?;
    for (u, c) in chs.iter().enumerate() {
        a.vmovups(c[0], ymmword_ptr(rdi + rax * 4 + (u * 32) as i32))?;
    }
    elu_body(&mut a, &p, chs)?;
    for (u, c) in chs.iter().enumerate() {
        a.vmovups(ymmword_ptr(rsi + rax * 4 + (u * 32) as i32), c[2])?;
    }
    a.add(rax, step)?;
    a.cmp(rax, rcx)?;
    a.jb(big)?;
    // Single vectors up to r9 = n rounded down to 8.
    a.set_label(&mut one)?;
    a.cmp(rax, r9)?;
    a.jae(tail)?;
    a.vmovups(ymm0, ymmword_ptr(rdi + rax * 4))?;
    elu_body(&mut a, &p, &all[..1])?;
    a.vmovups(ymmword_ptr(rsi + rax * 4), ymm2)?;
    a.add(rax, 8)?;
    a.jmp(one)?;
    a.set_label(&mut tail)?;
    a.cmp(rax, r10)?;
    a.jae(done)?;
    a.mov(rcx, rax)?;
    a.sub(rcx, r10)?; // −r
    a.lea(r8, ptr(p.masks))?;
    a.vmovups(ymm12, ymmword_ptr(r8 + rcx * 4 + 32))?;
    a.vmaskmovps(ymm0, ymm12, ymmword_ptr(rdi + rax * 4))?;
    elu_body(&mut a, &p, &all[..1])?;
    a.vmaskmovps(ymmword_ptr(rsi + rax * 4), ymm12, ymm2)?;
    a.set_label(&mut done)?;
    a.vzeroupper()?;
    a.ret()?;
    a.int3()?;
    p.emit(&mut a)?;
    finish(a)
}

/// The l2 loop on AVX-512F (16 lanes, `accs` partials, a k-masked tail), without the block
/// flushes of [`l2_avx2`] (they would add about the same few instructions). Emitted and sized
/// everywhere; run only where `avx512f` is detected (not on the spike's machine).
pub fn l2_avx512(accs: usize) -> Result<Code, IcedError> {
    const ZMM: [AsmRegisterZmm; 16] = [
        zmm0, zmm1, zmm2, zmm3, zmm4, zmm5, zmm6, zmm7, zmm8, zmm9, zmm10, zmm11, zmm12, zmm13,
        zmm14, zmm15,
    ];
    assert!(accs.is_power_of_two() && accs <= 8);
    let mut a = CodeAssembler::new(64)?;
    let (mut big, mut one_loop, mut tail, mut done) = (
        a.create_label(),
        a.create_label(),
        a.create_label(),
        a.create_label(),
    );
    for &r in &ZMM[..accs] {
        a.vxorps(r, r, r)?;
    }
    a.xor(rax, rax)?;
    let step = (accs * 16) as i32;
    a.mov(rcx, rdx)?;
    a.and(rcx, -step)?;
    a.cmp(rax, rcx)?;
    a.jae(one_loop)?;
    a.set_label(&mut big)?;
    for j in 0..accs {
        let (r, t) = (ZMM[j], ZMM[8 + j]);
        let off = (j * 64) as i32;
        a.vmovups(t, zmmword_ptr(rdi + rax * 4 + off))?;
        a.vsubps(t, t, zmmword_ptr(rsi + rax * 4 + off))?;
        a.vfmadd231ps(r, t, t)?;
    }
    a.add(rax, step)?;
    a.cmp(rax, rcx)?;
    a.jb(big)?;
    a.set_label(&mut one_loop)?;
    a.mov(rcx, rdx)?;
    a.and(rcx, -16)?;
    a.cmp(rax, rcx)?;
    a.jae(tail)?;
    a.vmovups(zmm8, zmmword_ptr(rdi + rax * 4))?;
    a.vsubps(zmm8, zmm8, zmmword_ptr(rsi + rax * 4))?;
    a.vfmadd231ps(zmm0, zmm8, zmm8)?;
    a.add(rax, 16)?;
    a.jmp(one_loop)?;
    a.set_label(&mut tail)?;
    a.mov(rcx, rdx)?;
    a.sub(rcx, rax)?; // r
    a.jz(done)?;
    a.mov(r8d, 1)?;
    a.shl(r8d, cl)?;
    a.dec(r8d)?;
    a.kmovw(k1, r8d)?;
    a.vmovups(zmm8.k1().z(), zmmword_ptr(rdi + rax * 4))?;
    a.vmovups(zmm9.k1().z(), zmmword_ptr(rsi + rax * 4))?;
    a.vsubps(zmm8, zmm8, zmm9)?;
    a.vfmadd231ps(zmm0, zmm8, zmm8)?;
    a.set_label(&mut done)?;
    let mut w = accs;
    while w > 1 {
        w /= 2;
        for j in 0..w {
            a.vaddps(ZMM[j], ZMM[j], ZMM[j + w])?;
        }
    }
    a.vextractf64x4(ymm1, zmm0, 1)?;
    a.vaddps(ymm0, ymm0, ymm1)?;
    a.vextractf128(xmm1, ymm0, 1)?;
    a.vaddps(xmm0, xmm0, xmm1)?;
    a.vmovhlps(xmm1, xmm0, xmm0)?;
    a.vaddps(xmm0, xmm0, xmm1)?;
    a.vmovshdup(xmm1, xmm0)?;
    a.vaddss(xmm0, xmm0, xmm1)?;
    a.vzeroupper()?;
    a.ret()?;
    finish(a)
}
