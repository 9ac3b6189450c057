//! The loop-strategy pass: how code generation emits each loop of a kernel, decided once.
//!
//! Assumes: a verified kernel and the code generator's resolved switches
//! ([`TranslateOptions`]: the host's features already applied).
//!
//! Guarantees: every loop the translator can reach outside vector code has one
//! [`LoopStrategy`], holding the plans its emission needs, and the kernel's outlined loops are
//! chosen from these; the translator (`translate.rs`, `outline.rs`) and `weft explain` read
//! the record and evaluate none of the predicates below themselves.
//!
//! A loop's strategy is the first that holds, in this order: one call of the native transpose
//! for it and the loops it continues; four iterations at a time around its vector loop (a
//! jam); the arg-extreme span routine; the column-extreme routine; then, for a loop annotated
//! `vectorize` with a vector plan, the extreme span routine, the sum span routine, or its own
//! vector steps (with, as it applies, f32 partials, a span routine that reads or computes its
//! terms, staged and streamed stores, a prefetched later row) — or, where those are plain
//! and the host allows, an assembled leaf loop at full width (`leaf.rs`); else scalar. A loop nested in
//! a vector loop runs in that loop's lanes: its strategy here is the one it gets where it is
//! emitted outside vector code (the cold f64 re-run of a loop with f32 partials).

use weft_ir::arena::EntityRef;
use weft_ir::loop_ir::{AccId, BufferAccessExpr, Kernel, LoopId, Stmt, ValueId};

use super::jam_plan::{self as jam, Jam, TransposeCall};
use super::leaf::{LeafLoop, LeafSum, NotLeaf};
use super::leaf_asm::LeafWidth;
use super::span_plan::{
    self as span, ArgExtremeSpan, ExtremeRows, ExtremeSpan, NextRow, ReduceSpan, ScaledCopy,
    SpanCall, SumSpan,
};
use super::vectorize::{self, f32_partials, widenings, WidePlan};

/// The code generator's resolved switches (the host's features applied): what the strategy
/// pass decides by and the translator reads.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TranslateOptions {
    /// Whether fused multiply-add may be emitted.
    pub fma: bool,
    /// Whether `vectorize` annotations are honoured.
    pub vectorize: bool,
    /// Whether an f32 `exp`, `tanh`, `sigmoid` or `log` stored into a span may run as a call of the
    /// native span routine after its loop ([`span`]).
    pub span_math: bool,
    /// Buffers at least this long that a vector loop writes are staged and streamed out with
    /// non-temporal stores ([`span`]); `None`: never.
    pub stream_min_bytes: Option<u64>,
    /// Whether a transposing copy may call the native transpose for its jammed loop and the
    /// loops continuing it ([`jam`]).
    pub native_transpose: bool,
    /// Which loop nests become functions of their own, compiled at once (`translate/outline.rs`);
    /// `None`: none.
    pub outline: Option<OutlinePolicy>,
    /// Whether plain f32 vector loops may be assembled leaf loops at full width
    /// ([`leaf`](super::leaf)): the option, and the host has AVX2.
    pub leaf_loops: bool,
    /// The registers leaf loops are assembled for: `zmm` on an AVX-512F host (unless
    /// `CodegenOptions::wide_leaves` is off), `ymm` otherwise.
    pub leaf_width: LeafWidth,
    /// Whether the native span routines run wider vectors than leaf loops (16 f32 lanes on
    /// an AVX-512F host against the leaf loops' 8), so that a loop a span routine can take
    /// keeps it.
    pub spans_wider: bool,
}

impl TranslateOptions {
    /// Whether loops may call the native span, sum and extreme routines: span math on and
    /// vector loops emitted.
    pub(crate) fn span_routines(&self) -> bool {
        self.span_math && self.vectorize
    }
}

/// How each loop of one kernel is emitted, and which loops become functions of their own.
#[derive(Clone, Debug, Default)]
pub struct KernelStrategy {
    /// Per loop (by index): its strategy; `None` for a loop a transpose call covers.
    loops: Vec<Option<LoopStrategy>>,
    /// The loops compiled as functions of their own ([`outline_candidates`]).
    outlined: Vec<LoopId>,
    /// Per value: the f32 value it is `convert` of, if it widens one to f64 ([`widenings`]).
    widened_from: Vec<Option<ValueId>>,
}

/// How one loop is emitted.
#[derive(Clone, Debug)]
pub(crate) enum LoopStrategy {
    /// One call of the native transpose for this loop and the loops the call covers.
    Transpose(TransposeCall),
    /// Four iterations at a time around its vector loop ([`jam`]).
    Jam(Jam),
    /// One call of the arg-extreme span routine.
    ArgExtremeSpan(ArgExtremeSpan),
    /// One call of the column-extreme routine.
    ExtremeRows(ExtremeRows),
    /// One call of the extreme span routine.
    ExtremeSpan(ExtremeSpan),
    /// One call of the sum span routine.
    SumSpan(SumSpan),
    /// Vector steps of Cranelift lanes, then a scalar tail.
    Vector(Box<VectorLoop>),
    /// Whole vectors by an assembled leaf loop at full width, then the scalar tail (and, if
    /// it sums, the combine and f64 re-run of its vector strategy).
    Leaf(Box<LeafStrategy>),
    /// One iteration at a time (or `unroll` at a time).
    Scalar(ScalarLoop),
}

/// A vector loop whose whole vectors an assembled leaf loop does.
#[derive(Clone, Debug)]
pub(crate) struct LeafStrategy {
    /// What the loop's own vector code would be: its partials, combined after the call as
    /// that code combines them.
    pub vector: VectorLoop,
    pub leaf: LeafLoop,
    /// Elements of one whole step of the call (the kernel passes it a multiple): a sum's
    /// partials' width; stored, the longer of a leaf vector and the loop's own vector step
    /// (`lanes × parts`), so that every element is computed by the code it would be without
    /// a leaf loop.
    pub step: u32,
    /// Whether whole steps of the loop's own vector code run between the call's last step and
    /// the scalar tail (a 16-lane leaf loop over steps of 8).
    pub own_steps_after: bool,
}

impl LeafStrategy {
    fn new(vector: VectorLoop, leaf: LeafLoop) -> LeafStrategy {
        let own_step = vector.plan.lanes * vector.plan.parts;
        let step = leaf.sum.map_or(leaf.lanes().max(own_step), |sum| sum.width);
        let own_steps_after = leaf.sum.is_none() && own_step < leaf.lanes();
        LeafStrategy {
            vector,
            leaf,
            step,
            own_steps_after,
        }
    }
}

/// A loop emitted as its own vector steps.
#[derive(Clone, Debug)]
pub(crate) struct VectorLoop {
    pub plan: WidePlan,
    /// Accumulators whose vector partials stay f32 (the loop re-runs in f64 if a total is not
    /// finite).
    pub narrow: Vec<AccId>,
    /// Iterations after which the f32 partials are folded into their accumulators and
    /// started again ([`vectorize::f32_block`]), when the loop is longer.
    pub fold_every: Option<u64>,
    /// A later row its steps prefetch.
    pub prefetch: Option<NextRow>,
    /// A native routine that does part of its work.
    pub routine: VectorRoutine,
    /// An earlier sibling whose span routine does this loop's vector pass as it stores.
    pub summed_by: Option<SummedBy>,
    /// Why it is not an assembled leaf loop, where no routine takes part of its work.
    pub not_leaf: Option<NotLeaf>,
}

impl VectorLoop {
    /// The span function its routine computes, if any.
    pub(crate) fn span(&self) -> Option<&SpanCall> {
        match &self.routine {
            VectorRoutine::Blocked { span, .. } => span.as_deref(),
            _ => None,
        }
    }

    /// Its streamed stores, if any.
    pub(crate) fn stream(&self) -> Option<&Stream> {
        match &self.routine {
            VectorRoutine::Blocked { stream, .. } => stream.as_deref(),
            _ => None,
        }
    }
}

/// The part of a vector loop's work a native routine does.
#[derive(Clone, Debug)]
pub(crate) enum VectorRoutine {
    None,
    /// The span routine reads and sums the terms ([`ReduceSpan`]); only with f32 partials.
    ReduceSpan(ReduceSpan),
    /// In blocks: a span function taken out of the loop, stores staged and streamed out, or
    /// both; only without f32 partials.
    Blocked {
        span: Option<Box<SpanCall>>,
        stream: Option<Box<Stream>>,
    },
}

/// Stores of a vector loop staged in L1 and streamed out.
#[derive(Clone, Debug)]
pub(crate) struct Stream {
    pub target: BufferAccessExpr,
    /// The whole loop as one call of the scaled-copy routine, if its body is one.
    pub scaled: Option<ScaledCopy>,
}

/// The span loop that sums a later loop's terms as it stores them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SummedBy {
    pub span_loop: LoopId,
    pub acc: AccId,
    /// f32 partials.
    pub width: u32,
    /// Whether that loop is a leaf loop (else its span routine sums).
    pub leaf: bool,
}

/// A loop emitted without vectors.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ScalarLoop {
    pub unroll: u32,
    pub why: ScalarWhy,
}

/// Why a loop is scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScalarWhy {
    /// Not annotated `vectorize`.
    NotAnnotated,
    /// Vectorisation is off (`CodegenOptions::vectorize`).
    Off,
    /// `vectorize::plan` refused it.
    Refused,
}

impl KernelStrategy {
    /// The strategy of loop `l`; `None` if a transpose call covers it.
    pub(crate) fn of(&self, l: LoopId) -> Option<&LoopStrategy> {
        self.loops.get(l.index()).and_then(Option::as_ref)
    }

    /// The leaf loops, in loop order.
    pub(crate) fn leaves(&self) -> impl Iterator<Item = (LoopId, &LeafStrategy)> {
        self.loops.iter().enumerate().filter_map(|(i, s)| match s {
            Some(LoopStrategy::Leaf(s)) => Some((LoopId::new(i), s.as_ref())),
            _ => None,
        })
    }

    /// The loops compiled as functions of their own.
    pub(crate) fn outlined(&self) -> &[LoopId] {
        &self.outlined
    }

    /// Per value of the kernel: the f32 value it is `convert` of, if it widens one to f64.
    pub(crate) fn widened_from(&self) -> &[Option<ValueId>] {
        &self.widened_from
    }

    /// Whether loop `l` is one call of a native routine: as a function of its own it would
    /// only add a function and a call to compile.
    pub(crate) fn done_by_a_routine(&self, l: LoopId) -> bool {
        match self.of(l) {
            Some(
                LoopStrategy::Transpose(_)
                | LoopStrategy::ArgExtremeSpan(_)
                | LoopStrategy::ExtremeRows(_)
                | LoopStrategy::ExtremeSpan(_)
                | LoopStrategy::SumSpan(_)
                | LoopStrategy::Leaf(_),
            ) => true,
            Some(LoopStrategy::Vector(v)) => {
                v.span().is_none() && v.stream().is_some_and(|s| s.scaled.is_some())
            }
            _ => false,
        }
    }

    /// The later loop whose vector pass loop `l`'s span routine does, if any.
    pub(crate) fn sums_for(&self, l: LoopId) -> Option<LoopId> {
        match self.of(l) {
            Some(LoopStrategy::Vector(v)) => v.span()?.sum.as_ref().map(|s| s.loop_id),
            _ => None,
        }
    }
}

/// Decides every loop of `k` for a translator with `options`.
pub(crate) fn decide(k: &Kernel, options: &TranslateOptions) -> KernelStrategy {
    let widened_from = widenings(k);
    let mut s = KernelStrategy {
        loops: vec![None; k.loops.len()],
        outlined: Vec::new(),
        widened_from: Vec::new(),
    };
    decide_body(k, &k.body, options, &widened_from, &mut s);
    s.widened_from = widened_from;
    if let Some(policy) = options.outline {
        s.outlined = outline_candidates(k, policy, &s);
    }
    s
}

/// Decides the loops of `body` and of the bodies inside them.
fn decide_body(
    k: &Kernel,
    body: &[Stmt],
    options: &TranslateOptions,
    widened_from: &[Option<ValueId>],
    s: &mut KernelStrategy,
) {
    for st in body {
        let (l, inner) = match st {
            Stmt::Loop { loop_id, body } => (*loop_id, body.as_slice()),
            Stmt::If { body, .. } => {
                decide_body(k, body, options, widened_from, s);
                continue;
            }
            _ => continue,
        };
        // A loop whose vector pass an earlier sibling's routine does is emitted by that
        // before anything else is considered.
        let by = summed_by(s, body, l);
        let strategy = match by.and_then(|_| vector_loop(k, l, inner, options, widened_from)) {
            Some(v) => LoopStrategy::Vector(Box::new(VectorLoop { summed_by: by, ..v })),
            None => decide_loop(k, l, inner, options, widened_from),
        };
        let transpose = matches!(strategy, LoopStrategy::Transpose(_));
        s.loops[l.index()] = Some(strategy);
        if !transpose {
            decide_body(k, inner, options, widened_from, s);
        }
    }
}

/// The loop among `siblings` before `l` whose span routine or leaf loop sums `l`'s terms as
/// it stores them, as decided.
fn summed_by(s: &KernelStrategy, siblings: &[Stmt], l: LoopId) -> Option<SummedBy> {
    siblings.iter().find_map(|st| match st {
        Stmt::Loop { loop_id, .. } if *loop_id != l => {
            let (sums, acc, width, leaf) = match s.of(*loop_id)? {
                LoopStrategy::Vector(v) => {
                    let sum = v.span()?.sum.as_ref()?;
                    (sum.loop_id, sum.acc, sum.width, false)
                }
                LoopStrategy::Leaf(f) => {
                    let sum = f.leaf.sum?;
                    (sum.for_loop?, sum.acc, sum.width, true)
                }
                _ => return None,
            };
            (sums == l).then_some(SummedBy {
                span_loop: *loop_id,
                acc,
                width,
                leaf,
            })
        }
        _ => None,
    })
}

/// The strategy of loop `l` (body `body`), emitted outside vector code.
fn decide_loop(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    o: &TranslateOptions,
    widened_from: &[Option<ValueId>],
) -> LoopStrategy {
    let spans = o.span_routines();
    if o.native_transpose && o.vectorize {
        if let Some(call) = jam::transpose_call(k, l, body, o.stream_min_bytes) {
            return LoopStrategy::Transpose(call);
        }
    }
    if o.vectorize {
        if let Some(jam) = jam::jam_plan(k, l, body, k.parallel_loop() == Some(l)) {
            return LoopStrategy::Jam(jam);
        }
    }
    if spans {
        if let Some(arg) = span::arg_extreme_span_plan(k, l, body) {
            return LoopStrategy::ArgExtremeSpan(arg);
        }
        if let Some(rows) = span::extreme_rows_plan(k, l, body) {
            return LoopStrategy::ExtremeRows(rows);
        }
    }
    let annotations = k.loops[l].annotations;
    let scalar = |why| {
        LoopStrategy::Scalar(ScalarLoop {
            unroll: annotations.unroll,
            why,
        })
    };
    if !annotations.vectorize {
        return scalar(ScalarWhy::NotAnnotated);
    }
    if !o.vectorize {
        return scalar(ScalarWhy::Off);
    }
    let Some(plan) = vectorize::plan(k, l, body) else {
        return scalar(ScalarWhy::Refused);
    };
    if spans {
        if let Some(extreme) = span::extreme_span_plan(k, l, body, o.span_math) {
            return LoopStrategy::ExtremeSpan(extreme);
        }
    }
    if let Some(sum) = span::sum_span_plan(k, l, body, o.span_math) {
        return LoopStrategy::SumSpan(sum);
    }
    let v = vector_steps(k, l, body, plan, o, widened_from);
    // A leaf loop evaluates a span routine's function in its own body (no staged block, no
    // second pass); streamed stores stay with the routine, which writes them non-temporally,
    // and so does a function where the routine runs wider vectors than leaf loops.
    let keeps_routine = match &v.routine {
        VectorRoutine::Blocked { stream, span } => {
            stream.is_some() || (span.is_some() && o.spans_wider)
        }
        VectorRoutine::ReduceSpan(_) => o.spans_wider,
        VectorRoutine::None => false,
    };
    if keeps_routine {
        return LoopStrategy::Vector(Box::new(v));
    }
    let sum = match v.narrow[..] {
        [] => Ok(None),
        [acc] => Ok(Some(LeafSum {
            acc,
            width: v.plan.lanes * v.plan.parts,
            for_loop: None,
        })),
        _ => Err(NotLeaf::Accumulators),
    };
    // The sum of the stored span that the routine would have done as it stored, the leaf
    // loop does: its one store summed into the next loop's partials.
    let sum = match (sum, v.span().and_then(|span| span.sum.as_ref())) {
        (Ok(None), Some(next)) => Ok(Some(LeafSum {
            acc: next.acc,
            width: next.width,
            for_loop: Some(next.loop_id),
        })),
        (sum, _) => sum,
    };
    // The row a span routine would have prefetched as it computed, the leaf loop prefetches.
    let prefetch = v
        .prefetch
        .clone()
        .or_else(|| v.span().and_then(|span| span.prefetch.clone()));
    let leaf = match sum {
        _ if !o.leaf_loops => Err(NotLeaf::Off),
        Ok(sum) => {
            let leaf = |width| LeafLoop::of(k, l, body, sum, prefetch.is_some(), o.fma, width);
            // Partials of half a `zmm` (8) are a whole `ymm`.
            leaf(o.leaf_width).or_else(|why| match why {
                NotLeaf::Partials(_) if o.leaf_width != LeafWidth::Ymm => leaf(LeafWidth::Ymm),
                _ => Err(why),
            })
        }
        Err(why) => Err(why),
    };
    match leaf {
        Ok(leaf) => LoopStrategy::Leaf(Box::new(LeafStrategy::new(
            VectorLoop {
                routine: VectorRoutine::None,
                prefetch,
                ..v
            },
            leaf,
        ))),
        Err(_) if !matches!(v.routine, VectorRoutine::None) => LoopStrategy::Vector(Box::new(v)),
        Err(why) => LoopStrategy::Vector(Box::new(VectorLoop {
            not_leaf: Some(why),
            ..v
        })),
    }
}

/// Loop `l` (body `body`) as vector steps, if it has a vector plan.
fn vector_loop(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    o: &TranslateOptions,
    widened_from: &[Option<ValueId>],
) -> Option<VectorLoop> {
    let plan = vectorize::plan(k, l, body)?;
    Some(vector_steps(k, l, body, plan, o, widened_from))
}

/// Loop `l` (body `body`) as vector steps by `plan`, with the routines that may do part of
/// its work.
fn vector_steps(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    plan: WidePlan,
    o: &TranslateOptions,
    widened_from: &[Option<ValueId>],
) -> VectorLoop {
    let spans = o.span_routines();
    let narrow = f32_partials(k, &plan, body, widened_from);
    let routine = if narrow.is_empty() {
        let span = spans
            .then(|| span::span_plan(k, l, body))
            .flatten()
            .map(Box::new);
        let stream = o
            .stream_min_bytes
            .and_then(|min| span::stream_plan(k, l, body, min, o.span_math))
            .map(|target| {
                Box::new(Stream {
                    scaled: span
                        .is_none()
                        .then(|| span::scaled_copy(k, l, body, &target))
                        .flatten(),
                    target,
                })
            });
        if span.is_some() || stream.is_some() {
            VectorRoutine::Blocked { span, stream }
        } else {
            VectorRoutine::None
        }
    } else {
        match spans.then(|| span::reduce_span_plan(k, l, body)).flatten() {
            Some(reduce) => VectorRoutine::ReduceSpan(reduce),
            None => VectorRoutine::None,
        }
    };
    let (lanes, parts) = (plan.lanes, plan.parts);
    let folds = !narrow.is_empty() && vectorize::blocked(k.loops[l].extent, lanes, parts);
    VectorLoop {
        fold_every: folds.then(|| vectorize::f32_block(lanes, parts)),
        prefetch: span::pass_prefetch(k, l, body, o.span_math),
        plan,
        narrow,
        routine,
        summed_by: None,
        not_leaf: None,
    }
}

/// Iterations per call (the loop's extent times its largest nested loop's, recursively) below
/// which a loop stays inline.
pub(crate) const MIN_ITERATIONS: u64 = 1024;

/// Which loops to outline: those running at least `min_iterations` per entry, when at least
/// `min_loops` such loops share the body where candidates are sought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutlinePolicy {
    pub min_iterations: u64,
    pub min_loops: usize,
    /// Outline every candidate, not only about half the kernel's cost.
    pub every: bool,
}

impl OutlinePolicy {
    /// For compiling on several threads: [`MIN_ITERATIONS`], two loops, about half.
    pub(crate) const THREADED: OutlinePolicy = OutlinePolicy {
        min_iterations: MIN_ITERATIONS,
        min_loops: 2,
        every: false,
    };
    /// Every loop where candidates are sought (tests: small kernels take the outlined path).
    pub(crate) const EVERY: OutlinePolicy = OutlinePolicy {
        min_iterations: 0,
        min_loops: 1,
        every: true,
    };
}

/// The loops of `kernel` to outline by `policy`: of the loops of the first body holding more
/// than one or none with loops inside (the kernel's, or its parallel loop's, or that of a loop
/// alone in one of these, ...) that run at least `min_iterations` per entry, the largest
/// ([`cost`]), then the next largest while what is outlined stays within half the kernel's
/// cost — two threads then compile about equal shares (every one, for [`OutlinePolicy::EVERY`]).
/// None if fewer than `min_loops` qualify.
pub(crate) fn outline_candidates(
    kernel: &Kernel,
    policy: OutlinePolicy,
    strategy: &KernelStrategy,
) -> Vec<LoopId> {
    let mut top = match (kernel.parallel_loop(), kernel.body.as_slice()) {
        (Some(_), [Stmt::Loop { body, .. }]) => body.as_slice(),
        _ => kernel.body.as_slice(),
    };
    // Through loops that are alone in their body (softmax's rows of a parallel block), but
    // not into one emitted four iterations at a time around its loop (a jam): its body is
    // not emitted statement by statement.
    loop {
        let mut loops = top.iter().filter_map(|s| match s {
            Stmt::Loop { loop_id, body } => Some((*loop_id, body.as_slice())),
            _ => None,
        });
        match (loops.next(), loops.next()) {
            (Some((l, only)), None) if only.iter().any(|s| matches!(s, Stmt::Loop { .. })) => {
                if matches!(strategy.of(l), Some(LoopStrategy::Jam(_))) {
                    return Vec::new();
                }
                top = only
            }
            _ => break,
        }
    }
    let mut found = Vec::new();
    collect_top_loops(kernel, top, policy.min_iterations, &mut found);
    // A span loop whose routine also does the next loop's sum, and that loop, stay inline:
    // the routine's partials pass from one to the other in the kernel's frame.
    let paired: Vec<LoopId> = found
        .iter()
        .filter_map(|&(l, _, _)| Some([l, strategy.sums_for(l)?]))
        .flatten()
        .collect();
    found.retain(|&(l, _, _)| !paired.contains(&l) && !strategy.done_by_a_routine(l));
    if found.len() < policy.min_loops {
        return Vec::new();
    }
    found.sort_by_key(|&(l, _, c)| (std::cmp::Reverse(c), l.index()));
    let half = cost(kernel, top) / 2;
    let mut outlined = 0;
    let mut chosen = Vec::new();
    for (l, _, c) in found {
        if policy.every || chosen.is_empty() || outlined + c <= half {
            outlined += c;
            chosen.push(l);
        }
    }
    chosen
}

/// The loops of `body` (inside `if` bodies too, not inside other loops) of at least `min`
/// iterations, with their bodies and costs.
fn collect_top_loops<'k>(
    k: &Kernel,
    body: &'k [Stmt],
    min: u64,
    found: &mut Vec<(LoopId, &'k [Stmt], u64)>,
) {
    for s in body {
        match s {
            Stmt::Loop { loop_id, body } if iterations(k, *loop_id, body) >= min => {
                found.push((*loop_id, body, cost(k, std::slice::from_ref(s))))
            }
            Stmt::If { body, .. } => collect_top_loops(k, body, min, found),
            _ => {}
        }
    }
}

/// A rough measure of the code statements `body` become, for sharing out their compile time:
/// a statement each, a loop's body as many times as it is unrolled, and once more when an
/// accumulator of it keeps f32 partials (the cold f64 re-run copies the loop).
fn cost(k: &Kernel, body: &[Stmt]) -> u64 {
    body.iter()
        .map(|s| match s {
            Stmt::Loop { loop_id, body } => {
                let decl = &k.loops[*loop_id];
                let inner = cost(k, body);
                let copies = u64::from(decl.annotations.unroll.max(1));
                let rerun = body
                    .iter()
                    .any(|s| matches!(s, Stmt::Reduce { acc, .. } if k.accs[*acc].narrow_partials));
                4 + inner * copies + if rerun { inner } else { 0 }
            }
            Stmt::If { body, .. } => 1 + cost(k, body),
            _ => 1,
        })
        .sum()
}

/// Iterations of loop `l` (body `body`) per entry: its extent times its largest nested
/// loop's.
fn iterations(k: &Kernel, l: LoopId, body: &[Stmt]) -> u64 {
    fn inner(k: &Kernel, body: &[Stmt]) -> u64 {
        body.iter()
            .map(|s| match s {
                Stmt::Loop { loop_id, body } => iterations(k, *loop_id, body),
                Stmt::If { body, .. } => inner(k, body),
                _ => 1,
            })
            .max()
            .unwrap_or(1)
    }
    k.loops[l].extent.saturating_mul(inner(k, body))
}
