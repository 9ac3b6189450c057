//! Leaf loops at full vector width, assembled: issue 61's mechanism (docs/benchmarks.md, "the
//! spike"), for f32 arithmetic and functions, stored or summed.
//!
//! Cranelift's x86 back end emits 128-bit vectors only. A leaf loop — a vector loop whose body
//! is straight-line f32 arithmetic (`add`, `sub`, `mul`, `div`, `max`, `min`, `neg`, `abs`,
//! `sqrt`, `square`, `reciprocal`, `relu`; `exp`, `sigmoid`, `tanh` and `log` by the sequences of
//! `weft_runtime::vmath`, their constants in a pool after the code; comparisons, their
//! `and`/`or`/`xor`/`not`, selects
//! and `bool → f32` converts on lane masks) over contiguous unmasked loads, values from outside
//! the loop and constants, stored contiguously or summed into the one accumulator whose
//! partials the vector loop keeps in f32 ([`LeafSum`]), or its one store also summed into the
//! partials of the sum loop right after it over the stored span, as the span routine would
//! (softmax's exponentials and their denominator: one pass over the row fewer) — is instead
//! assembled as machine code
//! with `iced-x86` at the host's full width — 16 lanes a vector in `zmm` registers on an
//! AVX-512F host, 8 in `ymm` registers on an AVX2 one (`leaf_asm.rs`: one body, two widths,
//! the same bits) — and defined into the kernel's
//! own module as a function `(args, n)`; the kernel calls it for the whole vectors of its range
//! and runs its own scalar tail after (for a sum: combines the partials it hands back, then the
//! tail and the f64 re-run). `args` holds 8-byte entries: each stream's address at the range's
//! first iteration (accesses of one buffer whose indices differ by a constant share a stream,
//! each at its displacement: the rows of a jammed sum in memory order; a load the same for
//! every iteration is broadcast once), then the address of a later row the steps prefetch, if
//! they do, then each value from outside the loop (f32 bits), then a sum's partials' address.
//! The body's constants are immediates in the code, the functions' in a pool after it; the
//! first the loop reads are loaded once into the registers the body leaves free (above its
//! own: `zmm16`–`zmm31` and more at `zmm`, the rest of the 16 at `ymm`) and read from there
//! (`leaf_asm::Pool::keeping`; at `zmm`, `exp`, `tanh`, `log`, `sigmoid` 18–32 % faster on
//! Zen 4, docs/benchmarks.md).
//!
//! Assumes: the loop has a vector plan (its iterations are independent: `vectorize::plan`), and
//! the host has the width's extensions (AVX2 and FMA; AVX-512F for `zmm`). Guarantees: the same bits as the loop's own code (each operation is the
//! IEEE f32 operation, rounded once, as `weft_ir::scalar`'s f64-then-round is for these; a
//! function is the inline code's sequence operation for operation, `compiler/src/codegen/math.rs`,
//! so only with fused multiply-adds);
//! registers by one linear scan over the body, which is refused ([`LeafLoop::of`] says why:
//! [`NotLeaf`], one line of `weft explain`) if it needs more than the 16 registers or more
//! than [`MAX_STREAMS`] addresses.

use iced_x86::code_asm::*;
use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{
    AccId, BinaryOp, BufferAccessExpr, CompareOp, Inst, Kernel, LoopId, ScalarType, ScalarValue,
    Stmt, UnaryOp, ValueId,
};

use super::leaf_asm::{self, Arith, Function, LeafWidth, Pool, Width, FUNCTION_SCRATCH};

/// Most addresses a leaf loop walks: one general-purpose register each — the six caller-saved
/// ones left after `args`, `n` and the offset, then the six callee-saved ones, pushed on entry
/// and popped on return where used (the last pass of a layernorm over its outer axis walks
/// seven: its six arrays and the row it prefetches).
pub(crate) const MAX_STREAMS: usize = 12;

/// Largest displacement (bytes) of an access from the stream it shares: well inside an
/// `i32` with the step copies' offsets added.
const MAX_DISPLACEMENT: u32 = 1 << 30;

/// Fewest iterations a loop must run for the call to pay.
pub(crate) const MIN_EXTENT: u64 = 64;

/// Bytes a realigned loop's first store is aligned to: a cache line (a stored stream ran
/// 1.3–1.6× slower with its stores off a line's start on Zen 2; docs/benchmarks.md).
pub(crate) const REALIGN_TO: u32 = 64;

/// Fewest whole-vector iterations a range must have to be realigned: the elements it runs
/// twice (at most 14 at `ymm`, 30 at `zmm`) are then under 3 % (6 %) of it.
pub(crate) const REALIGN_MIN: i64 = 512;

/// Why a vector loop is not a leaf loop: the reason `weft explain` gives in one line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotLeaf {
    /// Leaf loops are off (`CodegenOptions::leaf_loops`) or the host has no AVX2.
    Off,
    /// Fewer iterations than [`MIN_EXTENT`].
    Short(u64),
    /// More than the 16 vector registers.
    Registers,
    /// More than [`MAX_STREAMS`] addresses.
    Streams,
    /// Partials that are not a power of two of whole registers.
    Partials(u32),
    /// A value of a type other than f32 (or a lane mask).
    Type(ScalarType),
    /// A conversion other than bool → f32 or a widening summed.
    Convert(ScalarType, ScalarType),
    /// A load or store neither contiguous nor invariant, masked, or not f32.
    Access,
    /// An operation with no leaf instruction.
    Op(&'static str),
    /// A function, where the kernel's own code would not fuse its multiply-adds (FMA off).
    Unfused(&'static str),
    /// A division by a value the body computes from values outside the loop.
    Divisor,
    /// A reduction other than an f32 sum into the partials.
    Reduce,
    /// An `if` or a loop in the body.
    Control,
    /// Both a store and a sum of its own, or neither (or a summed store that is not its only
    /// store).
    StoresAndSums,
    /// Sums into more than one accumulator, or in f64 partials.
    Accumulators,
    /// Reads a value the body computes in a way it cannot hold in a register (an f64
    /// widening read other than by its sum).
    Value,
}

impl std::fmt::Display for NotLeaf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotLeaf::Off => write!(f, "leaf loops are off or the host has no AVX2"),
            NotLeaf::Short(n) => write!(
                f,
                "{n} iterations, fewer than the {MIN_EXTENT} a call pays for"
            ),
            NotLeaf::Registers => write!(f, "needs more than 16 vector registers"),
            NotLeaf::Streams => write!(f, "walks more than {MAX_STREAMS} addresses"),
            NotLeaf::Partials(w) => write!(f, "its {w} partials are not whole vector registers"),
            NotLeaf::Type(t) => write!(f, "computes {t} values"),
            NotLeaf::Convert(a, b) => write!(f, "converts {a} to {b}"),
            NotLeaf::Access => write!(f, "reads or writes strided, masked or non-f32 elements"),
            NotLeaf::Op(op) => write!(f, "no leaf instruction for {op}"),
            NotLeaf::Unfused(op) => write!(f, "{op} without fused multiply-adds (FMA off)"),
            NotLeaf::Divisor => write!(f, "divides by a value it computes from outside values"),
            NotLeaf::Reduce => write!(f, "reduces other than an f32 sum into its partials"),
            NotLeaf::Control => write!(f, "holds an if or a loop"),
            NotLeaf::StoresAndSums => write!(
                f,
                "must either store or sum into partials (or sum its one store for the next loop)"
            ),
            NotLeaf::Accumulators => {
                write!(f, "sums into more than one accumulator, or in f64 partials")
            }
            NotLeaf::Value => write!(f, "reads a value it cannot hold in a vector register"),
        }
    }
}

/// A leaf loop: what the kernel passes and the program the code runs.
#[derive(Clone, Debug)]
pub(crate) struct LeafLoop {
    /// The accesses whose first addresses the kernel passes, in `args` order (loads and
    /// stores: `streams[k]` is walked by register `k`).
    pub streams: Vec<BufferAccessExpr>,
    /// The values from outside the loop the kernel passes after the addresses (f32 bits).
    pub scalars: Vec<LeafScalar>,
    /// The accumulator the loop sums into f32 partials, if it sums.
    pub sum: Option<LeafSum>,
    /// The stream of its first store and that store's displacement (bytes), when the loop
    /// stores, sums nothing and reads no buffer it stores: running an element twice then writes the same
    /// value again, so the kernel may run its whole vectors from where that store is aligned
    /// ([`REALIGN_TO`]), with a call over the vectors before and one over the last.
    pub realign: Option<(usize, i32)>,
    /// The registers of those partials, a register's lanes each: with `n` lanes, register
    /// `j` holds partials `nj..nj + n` (element `i` of the range goes to partial `i mod
    /// width`), so the partials are the same at either width.
    partials: Vec<u8>,
    /// The vector registers the code is assembled for.
    width: LeafWidth,
    /// The body, register-allocated.
    ops: Vec<Op>,
    /// Registers the body uses.
    pub registers: u8,
}

/// The sum a leaf loop does: the f32 partials of an accumulator whose vector code keeps them
/// in f32 (`translate::f32_partials`), element `i` into partial `i mod width`, so that the
/// kernel combines them, runs the scalar tail and re-runs in f64 as the vector loop would.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LeafSum {
    pub acc: AccId,
    /// Partials: the vector loop's lanes times parts, a multiple of the leaf loop's lanes.
    pub width: u32,
    /// When what is summed is the loop's one store rather than a `reduce` of its body: the
    /// sum loop right after it over the stored span whose partials these are
    /// (`span_plan::SpanSum`: softmax's denominator), which combines them, runs its tail and
    /// re-runs in f64 as it would after its own vector pass.
    pub for_loop: Option<LoopId>,
}

/// A value from outside the loop that the kernel passes to a leaf loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LeafScalar {
    /// The value itself.
    Value(ValueId),
    /// `r` of its scaled reciprocal (a divisor: `x / d` as `(x · r) · s`, as every vector
    /// loop divides by a divisor uniform over it; docs/numerics.md).
    Reciprocal(ValueId),
    /// `s` of its scaled reciprocal.
    Scale(ValueId),
}

/// One operation of a leaf loop's body on vector registers 0–15 (of either width).
#[derive(Clone, Copy, Debug)]
enum Op {
    /// `dst = stream[k][i]`, `disp` bytes on.
    Load { dst: u8, stream: u8, disp: i32 },
    /// `stream[k][i] = src`, `disp` bytes on.
    Store { src: u8, stream: u8, disp: i32 },
    /// `dst = broadcast(args[j])`, before the loop.
    Scalar { dst: u8, arg: u8 },
    /// `dst = broadcast(bits)`, before the loop.
    Const { dst: u8, bits: u32 },
    /// `dst = broadcast(stream[k][0])`, `disp` bytes on, before the loop: a load the same
    /// for every iteration.
    Broadcast { dst: u8, stream: u8, disp: i32 },
    /// `dst = a op b`.
    Arith { op: Arith, dst: u8, a: u8, b: u8 },
    /// `dst = sqrt(a)`.
    Sqrt { dst: u8, a: u8 },
    /// The partial register of the current copy of the body `+= src`.
    Accumulate { src: u8 },
    /// `dst = a <predicate> b`, a lane mask (`vcmpps`'s predicate).
    Compare {
        predicate: u8,
        dst: u8,
        a: u8,
        b: u8,
    },
    /// `dst = mask ? if_true : if_false`, lane by lane.
    Blend {
        dst: u8,
        mask: u8,
        if_true: u8,
        if_false: u8,
    },
    /// `max` (`min`): NaN if either is NaN, the left operand on a tie (−0 against +0 too);
    /// `dst` is neither operand, `scratch` a register only this writes.
    Extreme {
        max: bool,
        dst: u8,
        a: u8,
        b: u8,
        scratch: u8,
    },
    /// `relu`: `a` where `a > 0` or NaN, else +0; `dst` is not `a`.
    Relu { dst: u8, a: u8, zero: u8 },
    /// `dst = (a · r) · s`: a division by a divisor uniform over the loop.
    Scaled { dst: u8, a: u8, r: u8, s: u8 },
    /// `dst = f(a)`; `dst` is not `a`, `scratch` registers only functions write.
    Function {
        f: Function,
        dst: u8,
        a: u8,
        scratch: [u8; FUNCTION_SCRATCH],
    },
}

impl Function {
    /// The scratch registers it writes, taken from `b` (`exp` two, `sigmoid` three; the
    /// slots it does not use repeat the last).
    fn scratch(self, b: &mut Builder) -> Result<[u8; FUNCTION_SCRATCH], NotLeaf> {
        Ok(match self {
            Function::Exp => {
                let [s0, s1] = b.scratch::<2>()?;
                [s0, s1, s1, s1]
            }
            Function::Sigmoid => {
                let [s0, s1, s2] = b.scratch::<3>()?;
                [s0, s1, s2, s2]
            }
            Function::Tanh | Function::Log => b.scratch::<FUNCTION_SCRATCH>()?,
        })
    }

    fn of(op: UnaryOp) -> Option<Function> {
        match op {
            UnaryOp::Exp => Some(Function::Exp),
            UnaryOp::Sigmoid => Some(Function::Sigmoid),
            UnaryOp::Tanh => Some(Function::Tanh),
            UnaryOp::Log => Some(Function::Log),
            _ => None,
        }
    }
}

/// The bits of 1.0f32.
const ONE: u32 = 0x3f80_0000;

/// The constant a unary operation's instruction takes, if any: `neg` and `abs` their sign-bit
/// masks, `not` all ones, `relu` zero, `reciprocal` one (the dividend).
fn unary_constant(op: UnaryOp) -> Option<u32> {
    match op {
        UnaryOp::Neg => Some(0x8000_0000),
        UnaryOp::Abs => Some(0x7fff_ffff),
        UnaryOp::Not => Some(u32::MAX),
        UnaryOp::Relu => Some(0),
        UnaryOp::Reciprocal => Some(ONE),
        _ => None,
    }
}

/// `vcmpps`'s predicate for `op`: ordered and false on NaN but `ne` (true on NaN), as IEEE
/// comparisons and the interpreter's.
fn predicate(op: CompareOp) -> u8 {
    match op {
        CompareOp::Eq => 0x00,
        CompareOp::Lt => 0x11,
        CompareOp::Le => 0x12,
        CompareOp::Ne => 0x04,
        CompareOp::Ge => 0x1d,
        CompareOp::Gt => 0x1e,
    }
}

/// The registers and program under construction ([`LeafLoop::of`]).
struct Builder {
    /// Per value of the kernel: its register, once it has one.
    homes: Vec<Option<u8>>,
    /// Registers free now, the next to take last.
    free: Vec<u8>,
    /// One more than the highest register taken.
    used: u8,
    streams: Vec<BufferAccessExpr>,
    scalars: Vec<(LeafScalar, u8)>,
    /// Broadcasts before the loop, and the constants they hold.
    prologue: Vec<Op>,
    consts: Vec<(u32, u8)>,
    /// The loop's body.
    ops: Vec<Op>,
    /// [`Builder::scratch`]'s registers, as taken.
    scratch: Vec<u8>,
}

impl Builder {
    /// No register taken, for a kernel of `values` values.
    fn new(values: usize) -> Builder {
        Builder {
            homes: vec![None; values],
            free: (0..16).rev().collect(),
            used: 0,
            streams: Vec::new(),
            scalars: Vec::new(),
            prologue: Vec::new(),
            consts: Vec::new(),
            ops: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// The leaf loop of the body built, `extent` iterations long: it stores (and then sums
    /// nothing) or sums into its `partials` (and stores nothing: it may run twice,
    /// `translate::f32_partials`); a long loop not reading what it stores realigns its first
    /// store.
    fn finish(
        self,
        extent: u64,
        prefetch: bool,
        width: LeafWidth,
        sum: Option<LeafSum>,
        partials: Vec<u8>,
    ) -> Result<LeafLoop, NotLeaf> {
        let b = self;
        let stores = b
            .ops
            .iter()
            .filter(|o| matches!(o, Op::Store { .. }))
            .count();
        let sums = b.ops.iter().any(|o| matches!(o, Op::Accumulate { .. }));
        let fits = match sum {
            Some(s) if s.for_loop.is_some() => stores == 1 && sums,
            Some(_) => stores == 0 && sums,
            None => stores > 0 && !sums,
        };
        if !fits {
            return Err(NotLeaf::StoresAndSums);
        }
        let stored: Vec<usize> = b
            .ops
            .iter()
            .filter_map(|o| match o {
                Op::Store { stream, .. } => Some(usize::from(*stream)),
                _ => None,
            })
            .collect();
        let rereads = b.ops.iter().any(|o| match o {
            Op::Load { stream, .. } | Op::Broadcast { stream, .. } => stored
                .iter()
                .any(|&t| b.streams[t].buffer == b.streams[usize::from(*stream)].buffer),
            _ => false,
        });
        // A sum's partials follow the elements from the range's start: one call, no realigning.
        let long = extent >= REALIGN_MIN as u64 && !sums;
        let realign = b.ops.iter().find_map(|o| match o {
            Op::Store { stream, disp, .. } if long && !rereads => {
                Some((usize::from(*stream), *disp))
            }
            _ => None,
        });
        let mut ops = b.prologue;
        ops.extend(b.ops);
        // The prefetched row's address takes a stream register of its own, after the rest.
        if prefetch && b.streams.len() == MAX_STREAMS {
            return Err(NotLeaf::Streams);
        }
        Ok(LeafLoop {
            width,
            sum,
            realign,
            partials,
            streams: b.streams,
            scalars: b.scalars.into_iter().map(|(s, _)| s).collect(),
            ops,
            registers: b.used,
        })
    }

    /// The first `N` registers operations of several instructions use for intermediates
    /// (taken once, held; only those operations write them).
    fn scratch<const N: usize>(&mut self) -> Result<[u8; N], NotLeaf> {
        while self.scratch.len() < N {
            let r = self.take()?;
            self.scratch.push(r);
        }
        let mut regs = [0; N];
        regs.copy_from_slice(&self.scratch[..N]);
        Ok(regs)
    }

    fn take(&mut self) -> Result<u8, NotLeaf> {
        let r = self.free.pop().ok_or(NotLeaf::Registers)?;
        self.used = self.used.max(r + 1);
        Ok(r)
    }

    /// The stream `a` is walked by (added if new and there is room) and its displacement in
    /// bytes from it: accesses of one buffer whose indices differ by a constant (the rows of
    /// a jammed sum in memory order) share a register.
    fn stream(&mut self, a: &BufferAccessExpr) -> Result<(u8, i32), NotLeaf> {
        let shared = self.streams.iter().enumerate().find_map(|(k, s)| {
            let alike = s.buffer == a.buffer
                && s.mask.is_empty()
                && a.mask.is_empty()
                && s.index.terms() == a.index.terms();
            let elements = a.index.offset().checked_sub(s.index.offset())?;
            let bytes = i32::try_from(elements.checked_mul(4)?).ok()?;
            (alike && bytes.unsigned_abs() <= MAX_DISPLACEMENT).then_some((k, bytes))
        });
        let (k, disp) = match shared {
            Some(found) => found,
            None if self.streams.len() == MAX_STREAMS => return Err(NotLeaf::Streams),
            None => {
                self.streams.push(a.clone());
                (self.streams.len() - 1, 0)
            }
        };
        Ok((u8::try_from(k).map_err(|_| NotLeaf::Streams)?, disp))
    }

    /// The register of constant `bits`, broadcast before the loop.
    fn constant(&mut self, bits: u32) -> Result<u8, NotLeaf> {
        if let Some(&(_, r)) = self.consts.iter().find(|(b, _)| *b == bits) {
            return Ok(r);
        }
        let dst = self.take()?;
        self.prologue.push(Op::Const { dst, bits });
        self.consts.push((bits, dst));
        Ok(dst)
    }

    /// The register of operand `v`: computed in the body, or from outside the loop (then
    /// passed in `args` and broadcast before the loop).
    fn operand(&mut self, v: ValueId, inside: bool) -> Result<u8, NotLeaf> {
        if let Some(r) = self.homes[v.index()] {
            return Ok(r);
        }
        if inside {
            return Err(NotLeaf::Value);
        }
        let r = self.scalar(LeafScalar::Value(v))?;
        self.homes[v.index()] = Some(r);
        Ok(r)
    }

    /// The register of a value the body computed.
    fn home(&self, v: ValueId) -> Result<u8, NotLeaf> {
        self.homes[v.index()].ok_or(NotLeaf::Value)
    }

    /// The register of `scalar`, passed in `args` and broadcast before the loop.
    fn scalar(&mut self, scalar: LeafScalar) -> Result<u8, NotLeaf> {
        if let Some(&(_, r)) = self.scalars.iter().find(|(s, _)| *s == scalar) {
            return Ok(r);
        }
        let dst = self.take()?;
        let arg = u8::try_from(self.scalars.len()).map_err(|_| NotLeaf::Registers)?;
        self.scalars.push((scalar, dst));
        self.prologue.push(Op::Scalar { dst, arg });
        Ok(dst)
    }

    /// The registers of `r` and `s` of divisor `d` (`x / d` as `(x · r) · s`): passed by the
    /// kernel for a value from outside the loop, constants for a constant.
    fn reciprocal(&mut self, d: ValueId, constant: Option<f32>) -> Result<(u8, u8), NotLeaf> {
        match constant {
            Some(d) => {
                let (r, s) = scaled_reciprocal(d);
                Ok((self.constant(r.to_bits())?, self.constant(s.to_bits())?))
            }
            None => Ok((
                self.scalar(LeafScalar::Reciprocal(d))?,
                self.scalar(LeafScalar::Scale(d))?,
            )),
        }
    }
}

/// `(r, s)` of `translate`'s `scaled_reciprocal` for a constant divisor `d`, in f32.
fn scaled_reciprocal(d: f32) -> (f32, f32) {
    let a = d.abs();
    let mut s = if a < 2f32.powi(-126) {
        2f32.powi(25)
    } else {
        1.0
    };
    if a > 2f32.powi(126) {
        s = 2f32.powi(-4);
    }
    (1.0 / (d * s), s)
}

/// Per value: the index of the last statement of `body` that reads it (`widened`: see
/// [`operands`]).
fn last_uses(body: &[Stmt], widened: &[Option<ValueId>]) -> Vec<Option<usize>> {
    let mut last = vec![None; widened.len()];
    for (at, s) in body.iter().enumerate() {
        for v in operands(s, widened) {
            last[v.index()] = Some(at);
        }
    }
    last
}

/// The f32 values statement `s` reads (a leaf body's statements only): a reduction of an f64
/// widening (`widened`: per value, the f32 value it is `convert` of in the body) reads the
/// f32 value, which the leaf loop adds to its f32 partials; the widening itself reads
/// nothing.
fn operands(s: &Stmt, widened: &[Option<ValueId>]) -> Vec<ValueId> {
    match s {
        Stmt::Reduce { value, .. } => widened[value.index()].into_iter().collect(),
        Stmt::Let {
            inst: Inst::Binary(_, x, y),
            ..
        } => vec![*x, *y],
        Stmt::Let {
            inst: Inst::Unary(_, x),
            ..
        } => vec![*x],
        Stmt::Let {
            inst: Inst::Compare(_, x, y),
            ..
        } => vec![*x, *y],
        Stmt::Let {
            inst:
                Inst::Select {
                    cond,
                    if_true,
                    if_false,
                },
            ..
        } => vec![*cond, *if_true, *if_false],
        Stmt::Let {
            inst: Inst::Convert(x),
            result,
        } if widened[result.index()].is_none() => vec![*x],
        Stmt::Store { value, .. } => vec![*value],
        _ => Vec::new(),
    }
}

/// The f64 widenings of f32 values of `body` (per value: the f32 value it widens), each to be
/// only reduced into `sum`'s accumulator; any other conversion but `bool` to f32 is not a
/// leaf loop's.
fn reduced_widenings(
    k: &Kernel,
    body: &[Stmt],
    sum: Option<LeafSum>,
) -> Result<Vec<Option<ValueId>>, NotLeaf> {
    let mut widened: Vec<Option<ValueId>> = vec![None; k.values.len()];
    for s in body {
        if let Stmt::Let {
            result,
            inst: Inst::Convert(x),
        } = s
        {
            let (from, to) = (k.values[*x], k.values[*result]);
            match (from, to) {
                (ScalarType::F32, ScalarType::F64) if sum.is_some() => {
                    widened[result.index()] = Some(*x)
                }
                (ScalarType::Bool, ScalarType::F32) => {}
                _ => return Err(NotLeaf::Convert(from, to)),
            }
        }
    }
    Ok(widened)
}

/// Copies of the body per step: the kernel's f32 partials of `sum` over `lanes`-lane
/// registers (a power of two), else one.
fn partial_copies(sum: Option<LeafSum>, lanes: u32) -> Result<u8, NotLeaf> {
    match sum {
        Some(s) if s.width % lanes == 0 && (s.width / lanes).is_power_of_two() => {
            u8::try_from(s.width / lanes).map_err(|_| NotLeaf::Partials(s.width))
        }
        Some(s) => Err(NotLeaf::Partials(s.width)),
        None => Ok(1),
    }
}

/// Whether `a` reads or writes consecutive f32 elements along `l`, unmasked.
fn contiguous(k: &Kernel, l: LoopId, a: &BufferAccessExpr) -> bool {
    a.mask.is_empty() && a.index.coefficient(l) == 1 && k.buffers[a.buffer].ty == ScalarType::F32
}

/// Whether `a` reads one f32 element for every iteration of `l`, unmasked.
fn invariant(k: &Kernel, l: LoopId, a: &BufferAccessExpr) -> bool {
    a.mask.is_empty() && a.index.coefficient(l) == 0 && k.buffers[a.buffer].ty == ScalarType::F32
}

/// Per value of `k`: whether `body` defines it.
fn defined_in(k: &Kernel, body: &[Stmt]) -> Vec<bool> {
    let mut inside = vec![false; k.values.len()];
    for s in body {
        if let Stmt::Let { result, .. } = s {
            inside[result.index()] = true;
        }
    }
    inside
}

/// Per value of `k`: whether it varies over loop `l` (computed from a load along it).
fn varying_values(k: &Kernel, l: LoopId, body: &[Stmt]) -> Vec<bool> {
    let mut varies = vec![false; k.values.len()];
    for s in body {
        if let Stmt::Let { result, inst } = s {
            varies[result.index()] = match inst {
                Inst::Load(a) => !invariant(k, l, a),
                Inst::Binary(_, x, y) => varies[x.index()] || varies[y.index()],
                Inst::Unary(_, x) | Inst::Convert(x) => varies[x.index()],
                Inst::Compare(_, x, y) => varies[x.index()] || varies[y.index()],
                Inst::Select {
                    cond,
                    if_true,
                    if_false,
                } => [cond, if_true, if_false].iter().any(|v| varies[v.index()]),
                _ => false,
            };
        }
    }
    varies
}

/// What [`LeafLoop::of`] knows of a loop's body while it chooses registers and operations.
struct LeafBody<'k> {
    k: &'k Kernel,
    l: LoopId,
    body: &'k [Stmt],
    sum: Option<LeafSum>,
    /// Whether functions may be assembled (the kernel's own code fuses multiply-adds).
    fused: bool,
    /// Per value: the f32 value it widens, if an f64 widening reduced into `sum`'s accumulator.
    widened: Vec<Option<ValueId>>,
    /// Per value: whether the body defines it.
    inside: Vec<bool>,
    /// Per value: the statement reading it last ([`last_uses`]).
    last: Vec<Option<usize>>,
    /// Per value: whether it varies over the loop.
    varies: Vec<bool>,
    /// Per value: the constant it is, if a constant of the body (once held).
    consts: Vec<Option<f32>>,
}

impl LeafBody<'_> {
    fn contiguous(&self, a: &BufferAccessExpr) -> bool {
        contiguous(self.k, self.l, a)
    }

    fn invariant(&self, a: &BufferAccessExpr) -> bool {
        invariant(self.k, self.l, a)
    }

    fn varying(&self, v: ValueId) -> bool {
        self.varies[v.index()]
    }

    /// Gives registers to the values held throughout, before any body operation (from
    /// outside the loop, constants, the masks of `neg` and `abs`, the one of `reciprocal`), so
    /// that no register a body operation writes ever holds one.
    fn hold_throughout(&mut self, b: &mut Builder) -> Result<(), NotLeaf> {
        let k = self.k;
        for s in self.body {
            for v in operands(s, &self.widened) {
                // f32 values, and `bool`s the body computes (lane masks).
                let bool_inside = k.values[v] == ScalarType::Bool && self.inside[v.index()];
                if k.values[v] != ScalarType::F32 && !bool_inside {
                    return Err(NotLeaf::Type(k.values[v]));
                }
                if !self.inside[v.index()] {
                    b.operand(v, false)?;
                }
            }
            match s {
                Stmt::Let {
                    result,
                    inst: Inst::Const(ScalarValue::F32(x)),
                } => {
                    b.homes[result.index()] = Some(b.constant(x.to_bits())?);
                    self.consts[result.index()] = Some(*x);
                }
                Stmt::Let {
                    result,
                    inst: Inst::Load(a),
                } if self.invariant(a) => {
                    let (stream, disp) = b.stream(a)?;
                    let dst = b.take()?;
                    b.prologue.push(Op::Broadcast { dst, stream, disp });
                    b.homes[result.index()] = Some(dst);
                }
                Stmt::Let {
                    inst: Inst::Binary(BinaryOp::Div, x, d),
                    ..
                } if self.varying(*x) && !self.varying(*d) => {
                    // The kernel computes `r` and `s` of a divisor from outside the loop before
                    // the call; one the body computes from such values is not there yet.
                    if self.inside[d.index()] && self.consts[d.index()].is_none() {
                        return Err(NotLeaf::Divisor);
                    }
                    b.reciprocal(*d, self.consts[d.index()])?;
                }
                Stmt::Let {
                    inst: Inst::Unary(op, _),
                    ..
                } => {
                    if let Some(bits) = unary_constant(*op) {
                        b.constant(bits)?;
                    }
                }
                Stmt::Let {
                    inst: Inst::Convert(x),
                    result,
                } if self.widened[result.index()].is_none() && k.values[*x] == ScalarType::Bool => {
                    b.constant(ONE)?;
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Appends the body operation of statement `s` (at `at`), if it has one, its result given
    /// a register.
    fn emit(&self, b: &mut Builder, at: usize, s: &Stmt) -> Result<(), NotLeaf> {
        let k = self.k;
        let (result, inst) = match s {
            // Read where it is reduced.
            Stmt::Let { result, .. } if self.widened[result.index()].is_some() => return Ok(()),
            Stmt::Reduce {
                acc,
                value,
                index: None,
            } if Some(*acc) == self.sum.map(|s| s.acc) => {
                let term = self.widened[value.index()].ok_or(NotLeaf::Reduce)?;
                let src = b.operand(term, true)?;
                b.ops.push(Op::Accumulate { src });
                release(b, s, at, &self.last, &self.widened);
                return Ok(());
            }
            Stmt::Let { result, inst }
                if matches!(k.values[*result], ScalarType::F32 | ScalarType::Bool) =>
            {
                (*result, inst)
            }
            Stmt::Store { target, value } if self.contiguous(target) => {
                let src = b.operand(*value, true)?;
                let (stream, disp) = b.stream(target)?;
                b.ops.push(Op::Store { src, stream, disp });
                if self.sum.is_some_and(|s| s.for_loop.is_some()) {
                    b.ops.push(Op::Accumulate { src });
                }
                release(b, s, at, &self.last, &self.widened);
                return Ok(());
            }
            Stmt::Let { result, .. } => return Err(NotLeaf::Type(k.values[*result])),
            Stmt::Store { .. } => return Err(NotLeaf::Access),
            Stmt::Reduce { .. } => return Err(NotLeaf::Reduce),
            _ => return Err(NotLeaf::Control),
        };
        if matches!(inst, Inst::Const(_)) || matches!(inst, Inst::Load(a) if self.invariant(a)) {
            // Given its register by `hold_throughout`.
            return Ok(());
        }
        let op = self.operation(b, result, inst)?;
        // Operands read for the last time free their registers first, so the result may
        // take one of them — unless its instructions write it before their last read.
        let early = matches!(
            op,
            Op::Extreme { .. } | Op::Relu { .. } | Op::Function { .. }
        );
        let dst = if early {
            let dst = b.take()?;
            release(b, s, at, &self.last, &self.widened);
            dst
        } else {
            release(b, s, at, &self.last, &self.widened);
            b.take()?
        };
        b.homes[result.index()] = Some(dst);
        b.ops.push(op.with_dst(dst));
        if self.last[result.index()].is_none() {
            b.free.push(dst);
        }
        Ok(())
    }

    /// The operation computing `result` by `inst`, with `dst` to fill once the operands'
    /// registers are released.
    fn operation(&self, b: &mut Builder, result: ValueId, inst: &Inst) -> Result<Op, NotLeaf> {
        let k = self.k;
        Ok(match inst {
            Inst::Load(a) if self.contiguous(a) => {
                let (stream, disp) = b.stream(a)?;
                Op::Load {
                    dst: 0,
                    stream,
                    disp,
                }
            }
            Inst::Binary(op, x, y) => self.binary_operation(b, *op, *x, *y)?,
            Inst::Compare(op, x, y) => Op::Compare {
                predicate: predicate(*op),
                dst: 0,
                a: b.home(*x)?,
                b: b.home(*y)?,
            },
            Inst::Select {
                cond,
                if_true,
                if_false,
            } => Op::Blend {
                dst: 0,
                mask: b.home(*cond)?,
                if_true: b.home(*if_true)?,
                if_false: b.home(*if_false)?,
            },
            Inst::Convert(x) if k.values[*x] == ScalarType::Bool => Op::Arith {
                op: Arith::And,
                dst: 0,
                a: b.home(*x)?,
                b: b.constant(ONE)?,
            },
            Inst::Unary(op, x) => self.unary_operation(b, *op, *x)?,
            Inst::Load(_) => return Err(NotLeaf::Access),
            Inst::Convert(x) => return Err(NotLeaf::Convert(k.values[*x], k.values[result])),
            _ => return Err(NotLeaf::Op("this instruction")),
        })
    }

    /// The operation of `x op y`: a division by a uniform divisor as a scaled reciprocal,
    /// `max`/`min` exact, logic and arithmetic as one instruction.
    fn binary_operation(
        &self,
        b: &mut Builder,
        op: BinaryOp,
        x: ValueId,
        y: ValueId,
    ) -> Result<Op, NotLeaf> {
        Ok(match op {
            BinaryOp::Div if self.varying(x) && !self.varying(y) => {
                let (r, s) = b.reciprocal(y, self.consts[y.index()])?;
                Op::Scaled {
                    dst: 0,
                    a: b.home(x)?,
                    r,
                    s,
                }
            }
            BinaryOp::Max | BinaryOp::Min => Op::Extreme {
                max: op == BinaryOp::Max,
                dst: 0,
                a: b.home(x)?,
                b: b.home(y)?,
                scratch: b.scratch::<1>()?[0],
            },
            BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => Op::Arith {
                op: match op {
                    BinaryOp::And => Arith::And,
                    BinaryOp::Or => Arith::Or,
                    _ => Arith::Xor,
                },
                dst: 0,
                a: b.home(x)?,
                b: b.home(y)?,
            },
            op => {
                let op = match op {
                    BinaryOp::Add => Arith::Add,
                    BinaryOp::Sub => Arith::Sub,
                    BinaryOp::Mul => Arith::Mul,
                    BinaryOp::Div => Arith::Div,
                    other => return Err(NotLeaf::Op(other.name())),
                };
                Op::Arith {
                    op,
                    dst: 0,
                    a: b.home(x)?,
                    b: b.home(y)?,
                }
            }
        })
    }

    /// The operation of `op(x)`: an assembled function (only where the kernel fuses
    /// multiply-adds), else one instruction with the constant it takes.
    fn unary_operation(&self, b: &mut Builder, op: UnaryOp, x: ValueId) -> Result<Op, NotLeaf> {
        Ok(match Function::of(op) {
            Some(_) if !self.fused => return Err(NotLeaf::Unfused(op.name())),
            Some(f) => Op::Function {
                f,
                dst: 0,
                a: b.home(x)?,
                scratch: f.scratch(b)?,
            },
            None => {
                let x = b.home(x)?;
                // The constant the operation takes, given its register by `hold_throughout`.
                let c = match unary_constant(op) {
                    Some(bits) => b.constant(bits)?,
                    None => x,
                };
                let arith = |op, a, b| Op::Arith { op, dst: 0, a, b };
                match op {
                    UnaryOp::Relu => Op::Relu {
                        dst: 0,
                        a: x,
                        zero: c,
                    },
                    UnaryOp::Sqrt => Op::Sqrt { dst: 0, a: x },
                    UnaryOp::Square => arith(Arith::Mul, x, x),
                    UnaryOp::Reciprocal => arith(Arith::Div, c, x),
                    UnaryOp::Not | UnaryOp::Neg => arith(Arith::Xor, x, c),
                    UnaryOp::Abs => arith(Arith::And, x, c),
                    other => return Err(NotLeaf::Op(other.name())),
                }
            }
        })
    }
}

impl Op {
    /// The operation writing `dst` (operations with no destination unchanged).
    fn with_dst(self, dst: u8) -> Op {
        match self {
            Op::Load { stream, disp, .. } => Op::Load { dst, stream, disp },
            Op::Arith { op, a, b, .. } => Op::Arith { op, dst, a, b },
            Op::Sqrt { a, .. } => Op::Sqrt { dst, a },
            Op::Scaled { a, r, s, .. } => Op::Scaled { dst, a, r, s },
            Op::Compare {
                predicate, a, b, ..
            } => Op::Compare {
                predicate,
                dst,
                a,
                b,
            },
            Op::Blend {
                mask,
                if_true,
                if_false,
                ..
            } => Op::Blend {
                dst,
                mask,
                if_true,
                if_false,
            },
            Op::Extreme {
                max, a, b, scratch, ..
            } => Op::Extreme {
                max,
                dst,
                a,
                b,
                scratch,
            },
            Op::Relu { a, zero, .. } => Op::Relu { dst, a, zero },
            Op::Function { f, a, scratch, .. } => Op::Function { f, dst, a, scratch },
            other => other,
        }
    }
}

impl LeafLoop {
    /// Loop `l` of `k` (body `body`) as a leaf loop, if its body is one (see the module docs);
    /// `sum`: the accumulator whose f32 partials the loop's vector code keeps and their
    /// count, if it reduces; `prefetch`: whether its steps prefetch a later row; `fused`:
    /// whether the kernel's own code fuses multiply-adds (functions are assembled only then,
    /// so that they give its bits).
    pub(crate) fn of(
        k: &Kernel,
        l: LoopId,
        body: &[Stmt],
        sum: Option<LeafSum>,
        prefetch: bool,
        fused: bool,
        width: LeafWidth,
    ) -> Result<LeafLoop, NotLeaf> {
        if k.loops[l].extent < MIN_EXTENT {
            return Err(NotLeaf::Short(k.loops[l].extent));
        }
        let widened = reduced_widenings(k, body, sum)?;
        let copies = partial_copies(sum, width.lanes())?;
        let mut leaf = LeafBody {
            k,
            l,
            body,
            sum,
            fused,
            inside: defined_in(k, body),
            last: last_uses(body, &widened),
            varies: varying_values(k, l, body),
            consts: vec![None; k.values.len()],
            widened,
        };
        let mut b = Builder::new(k.values.len());
        // Partial registers first: the kernel's f32 partials, a register's lanes each.
        let partials: Vec<u8> = match sum {
            Some(_) => (0..copies).map(|_| b.take()).collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        leaf.hold_throughout(&mut b)?;
        for (at, s) in body.iter().enumerate() {
            leaf.emit(&mut b, at, s)?;
        }
        b.finish(k.loops[l].extent, prefetch, width, sum, partials)
    }

    /// f32 lanes of a vector of its code.
    pub(crate) fn lanes(&self) -> u32 {
        self.width.lanes()
    }

    /// The vector registers its code is assembled for.
    pub(crate) fn width(&self) -> LeafWidth {
        self.width
    }

    /// The machine code: `fn(args: *const u64, n: u64)` (System V), `n` a multiple of
    /// [`LeafLoop::lanes`] (of the sum's width, if it sums); `prefetch` as given to
    /// [`LeafLoop::of`] (the vector loop's `prefetch`): whether a last stream is not read but
    /// prefetched (`prefetcht1`, a line of a later row per step, as the vector loop's
    /// `weft_prefetch_line` calls), its address passed after the others. To be placed at a
    /// multiple of [`LeafWidth::align`].
    pub(crate) fn assemble(&self, prefetch: bool) -> Result<Vec<u8>, IcedError> {
        match self.width {
            LeafWidth::Ymm => self.assemble_aligned::<leaf_asm::Ymm>(prefetch),
            LeafWidth::Zmm => self.assemble_aligned::<leaf_asm::Zmm>(prefetch),
        }
    }

    /// [`LeafLoop::assemble`] at width `W`.
    fn assemble_aligned<W: Width>(&self, prefetch: bool) -> Result<Vec<u8>, IcedError> {
        // The constants the loop reads, the first of them then kept in the registers the body
        // leaves free.
        // A loop that keeps none (none read, or no register free) has its code already.
        let free = W::REGISTERS.saturating_sub(self.registers);
        let first = self.assemble_padded::<W>(prefetch, 0, Vec::new())?;
        let kept: Vec<u32> = first.2.iter().take(usize::from(free)).copied().collect();
        let (code, pool, _) = if kept.is_empty() {
            first
        } else {
            self.assemble_padded::<W>(prefetch, 0, kept.clone())?
        };
        if pool == 0 {
            return Ok(code);
        }
        // Again, with the pool moved to a multiple of the width's bytes from the start (the
        // function is placed so aligned): no constant load splits a cache line. Only the
        // padding moves; every operand of the pool is a 32-bit displacement from the
        // instruction.
        let align = 4 * W::LANES as usize;
        let pad = (code.len() - pool).next_multiple_of(align) - (code.len() - pool);
        Ok(self.assemble_padded::<W>(prefetch, pad, kept)?.0)
    }

    /// [`LeafLoop::assemble`] at width `W`, `pad` bytes between the code and its constant
    /// pool, the constants `kept` in registers ([`Pool::keeping`]); the code, the pool's
    /// length and the constants read, in the order first read.
    fn assemble_padded<W: Width>(
        &self,
        prefetch: bool,
        pad: usize,
        kept: Vec<u32>,
    ) -> Result<(Vec<u8>, usize, Vec<u32>), IcedError> {
        const XMM: [AsmRegisterXmm; 16] = [
            xmm0, xmm1, xmm2, xmm3, xmm4, xmm5, xmm6, xmm7, xmm8, xmm9, xmm10, xmm11, xmm12, xmm13,
            xmm14, xmm15,
        ];
        // rdi: args; rsi: n, then its bytes; rax: the byte offset; then one per stream.
        const STREAMS: [AsmRegister64; MAX_STREAMS] =
            [rdx, rcx, r8, r9, r10, r11, rbx, rbp, r12, r13, r14, r15];
        const CALLER_SAVED: usize = 6;
        let y = W::reg;
        let vector_bytes = 4 * W::LANES as usize;
        let mut a = CodeAssembler::new(64)?;
        let mut pool = Pool::keeping(kept, self.registers);
        let mut top = a.create_label();
        let mut done = a.create_label();
        let streams = self.streams.len() + usize::from(prefetch);
        let saved = &STREAMS[CALLER_SAVED.min(streams)..streams];
        for reg in saved {
            a.push(*reg)?;
        }
        for (k, reg) in STREAMS.iter().enumerate().take(streams) {
            a.mov(*reg, qword_ptr(rdi + 8 * k as i32))?;
        }
        let scalars_at = 8 * streams as i32;
        for op in &self.ops {
            match *op {
                Op::Scalar { dst, arg } => W::broadcast(
                    &mut a,
                    y(dst),
                    dword_ptr(rdi + scalars_at + 8 * i32::from(arg)),
                )?,
                Op::Broadcast { dst, stream, disp } => W::broadcast(
                    &mut a,
                    y(dst),
                    dword_ptr(STREAMS[usize::from(stream)] + disp),
                )?,
                Op::Const { dst, bits } => {
                    a.mov(eax, bits)?;
                    a.vmovd(XMM[usize::from(dst)], eax)?;
                    W::broadcast_low(&mut a, y(dst), XMM[usize::from(dst)])?;
                }
                _ => {}
            }
        }
        // The partials start at −0, the identity of a sum that keeps a sum of −0s −0.
        for &p in &self.partials {
            a.mov(eax, 0x8000_0000u32)?;
            a.vmovd(XMM[usize::from(p)], eax)?;
            W::broadcast_low(&mut a, y(p), XMM[usize::from(p)])?;
        }
        // One step: the body once per partial register (once when there is none), the
        // copies a vector apart.
        let copies = self.partials.len().max(1);
        pool.load_kept::<W>(&mut a)?;
        a.shl(rsi, 2)?;
        a.xor(eax, eax)?;
        a.test(rsi, rsi)?;
        a.jz(done)?;
        a.set_label(&mut top)?;
        if prefetch {
            let p = STREAMS[self.streams.len()];
            for line in (0..vector_bytes * copies).step_by(64) {
                a.prefetcht1(byte_ptr(p + rax + line as i32))?;
            }
        }
        for c in 0..copies {
            let at = (vector_bytes * c) as i32;
            for op in &self.ops {
                self.emit_op::<W>(&mut a, &mut pool, op, c, |stream, disp| {
                    W::ptr(STREAMS[usize::from(stream)] + rax + (at + disp))
                })?;
            }
        }
        a.add(rax, (vector_bytes * copies) as i32)?;
        a.cmp(rax, rsi)?;
        a.jb(top)?;
        a.set_label(&mut done)?;
        // The partials, in order, where the last entry of `args` points.
        if !self.partials.is_empty() {
            let at = 8 * (streams + self.scalars.len()) as i32;
            a.mov(rax, qword_ptr(rdi + at))?;
            for (j, &p) in self.partials.iter().enumerate() {
                W::store(&mut a, W::ptr(rax + (vector_bytes * j) as i32), y(p))?;
            }
        }
        for reg in saved.iter().rev() {
            a.pop(*reg)?;
        }
        a.vzeroupper()?;
        a.ret()?;
        if !pool.is_empty() {
            a.db(&vec![0xcc; pad])?;
        }
        let read = pool.constants();
        let pool_bytes = pool.emit(&mut a, W::LANES)?;
        Ok((a.assemble(0)?, pool_bytes, read))
    }

    /// Body operation `op` of copy `c` at width `W`; `at(stream, disp)`: the operand of a
    /// stream's vector this step.
    fn emit_op<W: Width>(
        &self,
        a: &mut CodeAssembler,
        pool: &mut Pool,
        op: &Op,
        c: usize,
        at: impl Fn(u8, i32) -> AsmMemoryOperand,
    ) -> Result<(), IcedError> {
        let y = W::reg;
        match *op {
            Op::Load { dst, stream, disp } => W::load(a, y(dst), at(stream, disp)),
            Op::Store { src, stream, disp } => W::store(a, at(stream, disp), y(src)),
            Op::Arith { op, dst, a: x, b } => W::arith(a, op, y(dst), y(x), y(b)),
            Op::Sqrt { dst, a: x } => W::sqrt(a, y(dst), y(x)),
            Op::Scaled { dst, a: x, r, s } => {
                W::arith(a, Arith::Mul, y(dst), y(x), y(r))?;
                W::arith(a, Arith::Mul, y(dst), y(dst), y(s))
            }
            Op::Compare {
                predicate,
                dst,
                a: x,
                b,
            } => W::compare(a, y(dst), y(x), y(b), u32::from(predicate)),
            Op::Blend {
                dst,
                mask,
                if_true,
                if_false,
            } => W::select(a, y(dst), y(mask), y(if_true), y(if_false)),
            Op::Extreme {
                max,
                dst,
                a: x,
                b,
                scratch,
            } => W::extreme(a, max, y(dst), y(x), y(b), y(scratch)),
            Op::Relu { dst, a: x, zero } => W::relu(a, y(dst), y(x), y(zero)),
            Op::Accumulate { src } => {
                let p = y(self.partials[c]);
                W::arith(a, Arith::Add, p, p, y(src))
            }
            Op::Function {
                f,
                dst,
                a: x,
                scratch,
            } => leaf_asm::function(a, pool, f, y(dst), y(x), scratch.map(y)),
            Op::Scalar { .. } | Op::Const { .. } | Op::Broadcast { .. } => Ok(()),
        }
    }
}

/// Frees the registers of the operands statement `s` (at `at`) reads for the last time.
fn release(
    b: &mut Builder,
    s: &Stmt,
    at: usize,
    last: &[Option<usize>],
    widened: &[Option<ValueId>],
) {
    let mut seen = Vec::new();
    for v in operands(s, widened) {
        if last[v.index()] == Some(at) && !seen.contains(&v) {
            seen.push(v);
            // Values from outside the loop and constants hold their registers throughout.
            let varying = b.ops.iter().any(|o| defines(o, b.homes[v.index()]));
            if let (true, Some(r)) = (varying, b.homes[v.index()]) {
                b.free.push(r);
            }
        }
    }
}

/// Whether body operation `o` writes register `r`.
fn defines(o: &Op, r: Option<u8>) -> bool {
    let dst = match *o {
        Op::Load { dst, .. }
        | Op::Arith { dst, .. }
        | Op::Sqrt { dst, .. }
        | Op::Scaled { dst, .. }
        | Op::Compare { dst, .. }
        | Op::Blend { dst, .. }
        | Op::Extreme { dst, .. }
        | Op::Relu { dst, .. }
        | Op::Function { dst, .. } => dst,
        _ => return false,
    };
    Some(dst) == r
}
