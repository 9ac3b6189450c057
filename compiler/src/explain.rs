//! `weft explain`: why each materialised tensor is stored, and what each kernel does.
//!
//! Assumes a compiled [`JitExecutable`]. Guarantees: first the host `Target` (ISA level,
//! lanes, caches, model: `weft_runtime::target`), then one line per tensor that exists in memory
//! with the fusion pass's named reason ([`BoundaryReason`](crate::passes::fusion::BoundaryReason)),
//! then the cost model's figures (docs/cost-model.md) for every merge fusion weighed and for
//! every group, fused and unfused, then per kernel its loop nest — extents, which loops run vectorised (lanes and vector
//! types, as the code generator will actually emit them, or why not), unrolling, the parallel
//! loop and its thread count — and the bytes it reads and writes in memory (row scratch, which
//! stays in cache, counted apart); then how a call moves each input, output, state value and
//! assigned value: bound in place (zero-copy) or copied, and why not bound.

use std::fmt::Write;

use weft_ir::loop_ir::{
    BodyAccesses, BufferAccess, BufferAccessExpr, CompareOp, Inst, Kernel, LoopId, Stmt, ValueId,
};

use crate::codegen::leaf;
use crate::codegen::strategy::{LoopStrategy, ScalarWhy, VectorLoop, VectorRoutine};
use crate::codegen::translate::{jam, span};
use crate::codegen::KernelStrategy;
use crate::executable::{JitExecutable, ScheduledStep};
use crate::lower::BufferBinding;

/// The explanation of `exe` as text.
pub fn explain(exe: &JitExecutable) -> String {
    let plan = exe.compiled_plan();
    let g = &plan.simplified.graph;
    // The machine first, so every figure quoted from an explanation names it.
    let mut s = format!("# target: {}\n\n", weft_runtime::Target::host());
    if !plan.simplified.expansions.is_empty() {
        s += "# convolutions and pools: each expanded into ordinary ops\n";
        for e in &plan.simplified.expansions {
            let _ = writeln!(s, "{e}");
        }
        s += "\n";
    }
    s += "# materialised tensors: why each is stored\n";
    for b in &plan.fusion.boundaries {
        let n = g.node(b.node);
        let _ = writeln!(
            s,
            "{:<16} {:<10} {} {}: {}",
            g.node_label(b.node),
            n.op.name(),
            n.dtype,
            g.axes_name(&n.axes),
            b.reason.name()
        );
    }
    cost_model(&plan.fusion, g, &mut s);
    let _ = writeln!(s, "\n# kernels, in schedule order");
    for step in exe.schedule() {
        let lk = match step {
            ScheduledStep::Kernel(lk) => lk,
            ScheduledStep::Gemm(id, call, note) => {
                let known = exe.native().gemm_operands_known(id);
                gemm(call, (exe.threads(), known), &mut s);
                if let Some(why) = note {
                    let _ = writeln!(s, "  the next kernel runs after the whole call: {why}");
                }
                continue;
            }
            ScheduledStep::GemmThen(id, fused, lk) => {
                let _ = writeln!(
                    s,
                    "fused step: gemm @{} then epilogue kernel @{} over the same {}",
                    fused.gemm().spec().name,
                    lk.kernel.name,
                    fused.blocks()
                );
                let known = exe.native().gemm_operands_known(id);
                gemm(fused.gemm(), (exe.threads(), known), &mut s);
                let _ = writeln!(s, "  {}", fused.schedule(&lk.kernel.name));
                lk
            }
        };
        let k = &lk.kernel;
        let (mut read, mut written, mut scratch) = (0u64, 0u64, 0u64);
        for ((_, decl), binding) in k.buffers.iter().zip(&lk.bindings) {
            let bytes = decl.len * decl.ty.size_bytes() as u64;
            if matches!(
                binding,
                BufferBinding::RowScratch(_) | BufferBinding::Accumulators
            ) {
                scratch += bytes;
                continue;
            }
            if matches!(decl.access, BufferAccess::Read | BufferAccess::ReadWrite) {
                read += bytes;
            }
            if matches!(decl.access, BufferAccess::Write | BufferAccess::ReadWrite) {
                written += bytes;
            }
        }
        let _ = writeln!(
            s,
            "kernel @{}: reads {read} B, writes {written} B, row scratch {scratch} B",
            k.name
        );
        for note in &lk.notes {
            let _ = writeln!(s, "  {note}");
        }
        if lk.notes.is_empty() && k.body.iter().any(|st| matches!(st, Stmt::Loop { .. })) {
            let _ = writeln!(
                s,
                "  loop order: the result's axes, as lowered (no tiling, reordering or sum in \
                 memory applied)"
            );
        }
        if let Some(strategy) = &lk.strategy {
            loops(k, &k.body, strategy, exe.threads(), 1, &mut s);
        }
    }
    s += &exe.binding_report();
    s
}

/// The cost model's figures: every merge fusion weighed, then every group fused against its
/// ops unfused.
fn cost_model(fusion: &crate::passes::fusion::FusionPlan, g: &weft_ir::Graph, s: &mut String) {
    let names = |nodes: &[weft_ir::NodeId]| {
        let v: Vec<String> = nodes.iter().map(|n| g.node_label(*n)).collect();
        v.join(", ")
    };
    let _ = writeln!(
        s,
        "\n# fusion's cost model (on the model machine of docs/cost-model.md: it ranks plans, \
         it does not time this machine)"
    );
    for d in &fusion.decisions {
        let _ = writeln!(
            s,
            "{} {} into the group of {}: {} merged against {} apart",
            if d.taken { "merged" } else { "kept apart" },
            names(&d.producer),
            names(d.reader.as_slice()),
            d.merged,
            d.apart
        );
    }
    for grp in &fusion.groups {
        let stages: Vec<_> = grp.stages.iter().map(|st| st.node).collect();
        let _ = writeln!(
            s,
            "group k{} ({}): {} fused against {} unfused",
            grp.id,
            names(&stages),
            grp.estimate,
            grp.unfused
        );
    }
}

/// Why loop `l` (body `body`) is a good vector axis, or what it costs: how the largest
/// buffer whose index varies along it is walked.
fn vector_axis(k: &Kernel, l: LoopId, body: &[Stmt]) -> String {
    let BodyAccesses { loads, stores, .. } = BodyAccesses::of(body);
    let all = loads.into_iter().chain(stores);
    let bytes = |a: &&BufferAccessExpr| {
        let d = &k.buffers[a.buffer];
        d.len.saturating_mul(d.ty.size_bytes() as u64)
    };
    let largest = all
        .filter(|a| a.index.coefficient(l) != 0)
        .max_by_key(bytes);
    match largest {
        None => "along a broadcast axis (no access varies along it)".into(),
        Some(a) => {
            let name = &k.buffers[a.buffer].name;
            match a.index.coefficient(l) {
                1 => format!("along %{name}'s contiguous axis"),
                c if a.mask.is_empty() => {
                    format!("%{name} strided by {c} elements along it (lanes gathered)")
                }
                _ => format!("%{name} masked along it (lanes gathered)"),
            }
        }
    }
}

/// A GEMM call's line: shape, strides of A, B and C, batch axes, blocks and threads; which
/// operands (`known`: A, B) are constants whose largest magnitude was found at load.
fn gemm(call: &weft_runtime::GemmCall, (threads, known): (usize, [bool; 2]), s: &mut String) {
    let spec = call.spec();
    let size = spec.dtype.size_bytes() as u128;
    let bytes = |t: usize| u128::from(spec.lens[t]) * size;
    let _ = writeln!(
        s,
        "gemm @{} ({}): reads {} B, writes {} B",
        spec.name,
        call.engine(),
        bytes(0) + bytes(1),
        bytes(2)
    );
    let _ = writeln!(s, "  {}", spec.display());
    let threads = if call.items() > 1 {
        threads.min(call.items())
    } else {
        1
    };
    let _ = writeln!(
        s,
        "  {} work items (batch x blocks), each one single-threaded call; over {threads} threads",
        call.items()
    );
    if let Some(taps) = call.tap_schedule() {
        let _ = writeln!(s, "  {taps}");
    }
    if let Some(staging) = call.c_staging() {
        let _ = writeln!(s, "  {staging}");
    }
    let constants: Vec<&str> = ["A", "B"]
        .into_iter()
        .zip(known)
        .filter_map(|(name, k)| k.then_some(name))
        .collect();
    if !constants.is_empty() {
        let _ = writeln!(
            s,
            "  {}: a constant, its largest magnitude found once at load: no overflow scan of it per call",
            constants.join(" and ")
        );
    }
}

/// The lines of loop `o` (body `body`) and the loops nested inside it, all done by one call of
/// the native transpose (`parallel`: the threads, if `o` is the parallel loop).
fn transpose_lines(
    k: &Kernel,
    o: LoopId,
    body: &[Stmt],
    call: &jam::TransposeCall,
    parallel: Option<usize>,
    depth: usize,
    s: &mut String,
) {
    let mut line = parallel.map_or(String::new(), |t| format!("parallel over {t} threads, "));
    line += &format!(
        "%{} transposed into %{} by the native routine, the loops inside in one call (per \
         chunk): 16 x 8 blocks through AVX registers, a whole line of %{} per row stored at a \
         time, each tile's rows of %{} prefetched while the tile before is done (tiles of at most \
         {} KiB)",
        k.buffers[call.load.buffer].name,
        k.buffers[call.store.buffer].name,
        k.buffers[call.store.buffer].name,
        k.buffers[call.load.buffer].name,
        weft_runtime::transpose::PREFETCH_BYTES >> 10,
    );
    if call.stream {
        line += ", streamed (non-temporal: no read for ownership)";
    }
    let mut at = (o, body);
    for d in depth.. {
        let (l, b) = at;
        let what = if l == o {
            line.as_str()
        } else {
            "in that call"
        };
        let _ = writeln!(
            s,
            "{}loop %{l} in 0..{}: {what}",
            "  ".repeat(d),
            k.loops[l].extent
        );
        match b {
            [Stmt::Loop { loop_id, body }] => at = (*loop_id, body.as_slice()),
            _ => break,
        }
    }
}

/// What an `if` of the kernel's is for, by its condition: `x ≠ x` (some f32 sum is not
/// finite) starts the f64 re-run of sums narrowed to f32, `x = x` (every one is) the tail
/// that reads their f32 results (`reduce_in_memory`, `narrow_sums`).
fn if_why(k: &Kernel, cond: ValueId) -> &'static str {
    match defining_inst(&k.body, cond) {
        Some(Inst::Compare(CompareOp::Eq, a, b)) if a == b => "as a rule: every sum finite",
        _ => "rarely: a re-run",
    }
}

/// The instruction that defines `v` in `body` or the bodies inside it.
fn defining_inst(body: &[Stmt], v: ValueId) -> Option<&Inst> {
    body.iter().find_map(|s| match s {
        Stmt::Let { result, inst } if *result == v => Some(inst),
        Stmt::Loop { body, .. } | Stmt::If { body, .. } => defining_inst(body, v),
        _ => None,
    })
}

/// Writes one line per loop of `body`, as `strategy` records it (`threads`: the pool's).
fn loops(
    k: &Kernel,
    body: &[Stmt],
    strategy: &KernelStrategy,
    threads: usize,
    depth: usize,
    s: &mut String,
) {
    for st in body {
        let (l, inner) = match st {
            Stmt::If { cond, body } => {
                let indent = "  ".repeat(depth);
                let _ = writeln!(s, "{indent}if %{cond} holds ({}):", if_why(k, *cond));
                loops(k, body, strategy, threads, depth + 1, s);
                continue;
            }
            Stmt::Loop { loop_id, body } => (*loop_id, body.as_slice()),
            _ => continue,
        };
        let Some(decided) = strategy.of(l) else {
            continue;
        };
        let parallel = k.loops[l].annotations.parallel.then_some(threads);
        if let LoopStrategy::Transpose(call) = decided {
            transpose_lines(k, l, inner, call, parallel, depth, s);
            continue;
        }
        let mut what = Vec::new();
        if let Some(threads) = parallel {
            what.push(format!("parallel over {threads} threads"));
        }
        loop_lines(k, l, inner, decided, &mut what);
        if strategy.outlined().contains(&l) {
            what.push(
                "compiled as a function of its own, beside the kernel's (outlined: the \
                 kernel calls it)"
                    .into(),
            );
        }
        let _ = writeln!(
            s,
            "{}loop %{} in 0..{}{}{}",
            "  ".repeat(depth),
            l,
            k.loops[l].extent,
            if what.is_empty() { "" } else { ": " },
            what.join(", ")
        );
        loops(k, inner, strategy, threads, depth + 1, s);
    }
}

/// What loop `l` (body `body`) does by its strategy `decided` (not a transpose), as phrases.
fn loop_lines(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    decided: &LoopStrategy,
    what: &mut Vec<String>,
) {
    let isa = weft_runtime::vmath::span_isa().unwrap_or("scalar");
    let name = |b: weft_ir::loop_ir::BufferId| &k.buffers[b].name;
    match decided {
        LoopStrategy::Transpose(_) => {}
        LoopStrategy::Jam(jam) => {
            let names: Vec<String> = jam
                .loads
                .iter()
                .map(|(_, access)| format!("%{}", name(access.buffer)))
                .collect();
            what.push(format!(
                "4 iterations at a time: 4 x 4 blocks of {} loaded as whole vectors and \
                 transposed in registers",
                names.join(", ")
            ));
        }
        LoopStrategy::ArgExtremeSpan(span) => what.push(format!(
            "the first {} of %{}'s span for %{} and its first NaN for %{} by the native {isa} \
             arg routine, folded in here",
            extreme_word(span.kind == weft_ir::loop_ir::ReduceKind::ArgMin),
            name(span.load.buffer),
            span.value_acc,
            span.nan_acc,
        )),
        LoopStrategy::ExtremeRows(rows) => what.push(extreme_rows_line(k, rows, isa)),
        LoopStrategy::ExtremeSpan(span) => {
            let times = span
                .scale
                .map(|c| format!(" times %{c}"))
                .unwrap_or_default();
            what.push(format!(
                "the {} of %{}'s span{times} for %{} by the native {isa} extreme routine \
                 (exact: NaN if any term is, -0 < +0), combined here",
                extreme_word(span.kind == weft_ir::loop_ir::ReduceKind::Min),
                name(span.load.buffer),
                span.acc,
            ));
        }
        LoopStrategy::SumSpan(sum) => sum_span_lines(k, sum, isa, what),
        LoopStrategy::Vector(v) => vector_lines(k, l, body, v, what),
        LoopStrategy::Leaf(s) => leaf_lines(k, l, body, s, what),
        LoopStrategy::Scalar(scalar) => {
            match scalar.why {
                ScalarWhy::Off => {
                    what.push("scalar (vectorisation off: CodegenOptions::vectorize)".into())
                }
                ScalarWhy::Refused => what.push(
                    "scalar (vectorize refused: per-lane control flow, integers or \
                     arg-reduction)"
                        .into(),
                ),
                ScalarWhy::NotAnnotated => {}
            }
            if scalar.unroll > 1 && scalar.why != ScalarWhy::Refused {
                what.push(format!("unrolled x{}", scalar.unroll));
            }
        }
    }
}

/// What a loop the native column-extreme routine takes does (`isa`: the routine's).
fn extreme_rows_line(k: &Kernel, rows: &span::ExtremeRows, isa: &str) -> String {
    let name = |b: weft_ir::loop_ir::BufferId| &k.buffers[b].name;
    let ahead = match &rows.prefetch {
        Some(_) => format!(
            "; prefetching those rows {} steps ahead, a line of each per 16 columns",
            span::ROWS_AHEAD
        ),
        None => String::new(),
    };
    format!(
        "the {} of %{}'s row and {} rows of %{} {} elements apart, column by column, \
         by the native {isa} column routine (exact: NaN if any term is, -0 < +0){ahead}",
        extreme_word(rows.kind == weft_ir::loop_ir::ReduceKind::Min),
        name(rows.acc.buffer),
        rows.rows,
        name(rows.first.buffer),
        rows.stride,
    )
}

/// What a loop the native sum routine takes does (`isa`: the routine's).
fn sum_span_lines(k: &Kernel, sum: &span::SumSpan, isa: &str, what: &mut Vec<String>) {
    let term = source_text(k, &sum.source);
    let term = if sum.square {
        format!("({term}) squared")
    } else {
        term
    };
    what.push(format!(
        "the sum of {term} into %{} by the native {isa} sum routine in one call ({} \
         f32 partials combined, the tail, and the f64 re-run if the total is not \
         finite, as the loop's own code would)",
        sum.acc, sum.width
    ));
    if let Some(next) = &sum.prefetch {
        what.push(prefetch_text(k, next));
    }
}

/// What loop `l` (body `body`) does as an assembled leaf loop `s`.
fn leaf_lines(
    k: &Kernel,
    l: LoopId,
    body: &[Stmt],
    s: &crate::codegen::strategy::LeafStrategy,
    what: &mut Vec<String>,
) {
    what.push(format!(
        "vectorised: {} lanes (f32x{}, {}) by an assembled leaf loop over the whole \
         vectors ({} registers, {} address streams), then the scalar tail, {}",
        s.leaf.lanes(),
        s.leaf.lanes(),
        s.leaf.width().name(),
        s.leaf.registers,
        s.leaf.streams.len(),
        vector_axis(k, l, body)
    ));
    if let Some(next) = &s.vector.prefetch {
        what.push(prefetch_text(k, next));
    }
    if let Some((stream, _)) = s.leaf.realign {
        what.push(format!(
            "its vectors from %{}'s first {}-byte-aligned store on in ranges of {} or \
             more (calls over the vector or two before it and the last one)",
            k.buffers[s.leaf.streams[stream].buffer].name,
            leaf::REALIGN_TO,
            leaf::REALIGN_MIN,
        ));
    }
    if let Some((sum, next)) = s.leaf.sum.and_then(|sum| Some((sum, sum.for_loop?))) {
        what.push(format!(
            "each stored vector also summed into %{}'s {} f32 partials for loop %{next} \
             (element i into partial i mod {})",
            sum.acc, sum.width, sum.width
        ));
    } else if let Some(sum) = s.leaf.sum {
        what.push(format!(
            "{} f32 partials for %{} (element i into partial i mod {}), combined here{} \
             (the loop re-runs in f64 if the total is not finite)",
            sum.width,
            sum.acc,
            sum.width,
            folded(s.vector.fold_every)
        ));
    }
}

/// How often f32 partials are folded into their f64 accumulator, if more than once.
fn folded(every: Option<u64>) -> String {
    every.map_or(String::new(), |n| {
        format!(" and folded into f64 every {n} iterations")
    })
}

/// The phrases of vector loop `l` (body `body`) by its strategy `v`.
fn vector_lines(k: &Kernel, l: LoopId, body: &[Stmt], v: &VectorLoop, what: &mut Vec<String>) {
    let isa = weft_runtime::vmath::span_isa().unwrap_or("scalar");
    let axis = vector_axis(k, l, body);
    // A routine that does the whole loop leaves no vector code of ours to describe.
    let mut ours = true;
    let mut after = Vec::new();
    if let VectorRoutine::ReduceSpan(span) = &v.routine {
        ours = false;
        after.push(format!(
            "%{} = {} summed by the native {isa} routine, which reads {} itself ({} f32 \
             partials for %{}, combined here; if the total is not finite the routine \
             computes the terms again and they are summed in f64, in order)",
            span.result,
            span.op.name(),
            source_text(k, &span.source),
            span.sum.width,
            span.sum.acc
        ));
    } else if let Some(by) = &v.summed_by {
        after.push(format!(
            "its vector pass done by %{}'s {} as it stores ({} f32 partials for \
             %{}, combined here; the loop re-runs in f64 if the total is not finite)",
            by.span_loop,
            if by.leaf { "leaf loop" } else { "span routine" },
            by.width,
            by.acc
        ));
    } else if !v.narrow.is_empty() {
        let accs: Vec<String> = v.narrow.iter().map(|a| format!("%{a}")).collect();
        after.push(format!(
            "f32 partials for {}{} (the loop re-runs in f64 if a total is not finite)",
            accs.join(", "),
            folded(v.fold_every)
        ));
    }
    if let Some(why) = v.not_leaf {
        after.push(format!("not an assembled leaf loop: {why}"));
    }
    if let Some(span) = v.span() {
        let (f, t) = (span.op.name(), &k.buffers[span.target.buffer].name);
        let prefetch = span.prefetch.as_ref().map_or(String::new(), |next| {
            format!(
                " (prefetching %{}'s row {} ahead for %{}, {} B)",
                k.buffers[next.load.buffer].name,
                span::ROWS_AHEAD,
                next.first,
                next.bytes
            )
        });
        let mut routine = format!("the native {isa} routine");
        if let Some(source) = &span.source {
            routine += &format!(", which reads {} itself", source_text(k, source));
        }
        if let Some(sum) = &span.sum {
            routine += &format!(" and sums the results for %{}", sum.acc);
        }
        let routine = routine + &prefetch;
        if span.source.is_some() && span.rest.is_none() {
            ours = false;
        }
        after.push(match (span.rest, &span.source) {
            (None, Some(_)) => format!("%{} = {f} computed into %{t} by {routine}", span.result),
            (None, None) => format!(
                "%{} = {f} stored as its argument, then {f} over the span of %{t} by {routine}",
                span.result
            ),
            (Some(v), Some(_)) => format!(
                "split around %{} = {f}: {routine} computes it into %{t}, a loop reads it back \
                 and stores %{v}",
                span.result
            ),
            (Some(v), None) => format!(
                "split around %{} = {f}: a first loop stores its argument to %{t}, {f} runs \
                 over that span by {routine}, a second loop reads it back and stores %{v}",
                span.result
            ),
        });
    }
    if let Some(next) = &v.prefetch {
        after.push(prefetch_text(k, next));
    }
    if let Some(stream) = v.stream() {
        let name = &k.buffers[stream.target.buffer].name;
        after.push(match &stream.scaled {
            Some(copy) => {
                let by = if copy.op == weft_ir::loop_ir::BinaryOp::Div {
                    "divided"
                } else {
                    "multiplied"
                };
                ours = false;
                format!(
                    "done by the native routine: %{} {by} by %{}, streamed out to %{name} \
                     (non-temporal: no read for ownership)",
                    k.buffers[copy.load.buffer].name, copy.by
                )
            }
            None => format!(
                "stores to %{name} staged in L1 and streamed out (non-temporal: no read for \
                 ownership)"
            ),
        });
    }
    if ours {
        what.push(match v.plan.lanes {
            4 => format!(
                "vectorised: 4 lanes (f32x4; f64 values as 2 x f64x2) x {} parts, {axis}",
                v.plan.parts
            ),
            _ => format!(
                "vectorised: 2 lanes (f64x2) x {} parts, {axis}",
                v.plan.parts
            ),
        });
    }
    what.extend(after);
}

/// A vector loop's prefetch of a later row, as a phrase.
fn prefetch_text(k: &Kernel, next: &span::NextRow) -> String {
    format!(
        "prefetching %{}'s row {} ahead for %{}, a line per step ({} B)",
        k.buffers[next.load.buffer].name,
        span::ROWS_AHEAD,
        next.first,
        next.bytes
    )
}

/// "minimum" or "maximum".
fn extreme_word(min: bool) -> &'static str {
    if min {
        "minimum"
    } else {
        "maximum"
    }
}

/// What a span routine reads as its argument: `%y`, `%y less %u`, `%u less %y`, `%y times
/// %c` or `%y times %c less %u`.
fn source_text(k: &Kernel, source: &span::Source) -> String {
    use weft_runtime::vmath::ArgForm;
    let from = &k.buffers[source.load.buffer].name;
    let value = |v: Option<weft_ir::loop_ir::ValueId>| match v {
        Some(v) => format!("%{v}"),
        None => "0".to_string(),
    };
    let (c, u) = (value(source.scale), value(source.shift));
    match source.form {
        ArgForm::TimesLess => format!("%{from} times {c} less {u}"),
        ArgForm::Times => format!("%{from} times {c}"),
        ArgForm::ShiftLess => format!("{u} less %{from}"),
        ArgForm::LessShift if source.shift.is_some() => format!("%{from} less {u}"),
        ArgForm::LessShift => format!("%{from}"),
    }
}
