//! `weft bench`: compiles a graph once per mode and times fused JIT, unfused JIT and the
//! interpreter, interleaved round by round.
//!
//! What is timed: one whole `Computation::call_into`, the way a host calls: input checks, the
//! inputs and outputs bound in place where the JIT can (zero-copy; the rest, and the state,
//! copied), the kernels, into output arrays allocated once; a sample of a call under 20 ms
//! starts after one untimed call of the same mode (`WARM_BELOW`). Bytes that must move: every
//! placeholder read plus every output written, once.
//! FLOPs: one per element of each elementwise, compare, select or convert result, one per
//! input element of each reduction, `2·(output elements)·K` per dot (`K` the contracted
//! length, `√(|a|·|b| / |out|)`); views and tensors none.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use weft_compiler::codegen::JitCompiler;
use weft_compiler::{compile_plan, lower_plan, JitOptions, LowerOptions, PlanOptions};
use weft_ir::{Graph, HostArray, NodeId, Op};

use crate::{Backend, Error, Transformer};

/// The options of `weft bench`.
#[derive(Clone, Copy, Debug)]
pub struct BenchOptions {
    /// Timed rounds (each mode once per round).
    pub runs: usize,
    /// Untimed rounds first.
    pub warmup: usize,
    /// Leave the interpreter out (it is slow on big graphs).
    pub skip_interp: bool,
    /// Print JSON instead of a table.
    pub json: bool,
    /// Also time the fused JIT with every dot on the loop nest (`JitOptions::gemm = None`,
    /// the code path before the GEMM path), as mode `fused-loop-nest`.
    pub loop_nest: bool,
    /// Also time the fused JIT with every GEMM call and the kernel after it as two steps
    /// (`JitOptions::epilogue = false`), as mode `fused-epilogue-apart`.
    pub epilogue_apart: bool,
    /// Also time the fused JIT with every output written by ordinary stores
    /// (`CodegenOptions::stream_min_bytes = None`), as mode `fused-ordinary-stores`.
    pub ordinary_stores: bool,
    /// Also time the fused JIT with every loop on Cranelift's 4-lane code, no assembled leaf
    /// loops (`CodegenOptions::leaf_loops = false`), as mode `fused-cranelift-lanes`.
    pub cranelift_lanes: bool,
    /// Also time the fused JIT with leaf loops 8 lanes wide (`ymm`) on an AVX-512F host
    /// (`CodegenOptions::wide_leaves = false`), as mode `fused-ymm-leaves`.
    pub ymm_leaves: bool,
    /// Also time this many more fused compiles, graph to callable (`Transformer` +
    /// `computation`, what a host does at start-up), after the calls; their median is
    /// reported as `compile_ms.whole_median`.
    pub compiles: usize,
}

fn bytes_and_flops(g: &Graph) -> Result<(u64, u64), Error> {
    let elements = |id| -> Result<u64, Error> {
        let n = g.node(id);
        Ok(g.shape_of(&n.axes)?.iter().product::<usize>() as u64)
    };
    let mut bytes = 0u64;
    for p in g.placeholders() {
        bytes += elements(p)? * g.node(p).dtype.size_bytes() as u64;
    }
    for o in g.outputs() {
        bytes += elements(*o)? * g.node(*o).dtype.size_bytes() as u64;
    }
    let mut flops = 0u64;
    for (id, n) in g.nodes() {
        flops += match &n.op {
            Op::Unary(..) | Op::Binary(..) | Op::Compare(..) | Op::Select(..) | Op::Convert(_) => {
                elements(id)?
            }
            Op::Reduce { input, .. } => elements(*input)?,
            Op::Dot(a, b) => {
                let out = elements(id)?.max(1);
                let k = ((elements(*a)? as f64 * elements(*b)? as f64 / out as f64).sqrt()).round();
                2 * out * k as u64
            }
            // A multiply and an add per output element, input channel of its group and tap.
            Op::Convolution { filter, .. } => {
                let axes: Vec<_> = g.node(*filter).axes.iter().copied().collect();
                2 * elements(id)? * g.filter_fans(&axes)?.0 as u64
            }
            // One comparison or add per tap.
            Op::Pool { spec, .. } => {
                elements(id)? * spec.windows.iter().map(|w| w.1 as u64).product::<u64>()
            }
            _ => 0,
        };
    }
    Ok((bytes, flops))
}

pub(crate) fn inputs_for(g: &Graph) -> Result<Vec<HostArray>, Error> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    g.placeholders()
        .iter()
        .map(|p| {
            let n = g.node(*p);
            let shape = g.shape_of(&n.axes)?;
            let len: usize = shape.iter().product();
            // Zeros on huge pages first (as numpy's large arrays are), then filled in place.
            let mut data = weft_runtime::zeroed_host_data(n.dtype, len)?;
            match &mut data {
                weft_ir::ArrayData::F32(v) => v.fill_with(|| rng.random_range(-1.0..1.0)),
                weft_ir::ArrayData::F64(v) => v.fill_with(|| rng.random_range(-1.0..1.0)),
                weft_ir::ArrayData::I32(v) => v.fill_with(|| rng.random_range(-9..10)),
                weft_ir::ArrayData::I64(v) => v.fill_with(|| rng.random_range(-9..10)),
                weft_ir::ArrayData::Bool(v) => v.fill_with(|| rng.random_bool(0.5)),
            }
            Ok(HostArray::new(n.axes.clone(), shape, data)?)
        })
        .collect()
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// How many consecutive calls one timed sample makes: enough for ≈ 100 µs (so the clock's
/// cost and resolution vanish from sub-microsecond calls), at most 10 000; 1 for calls of
/// 100 µs or more. The sample is their mean: the steady-state call a host loop sees.
fn calls_per_sample(per_call: Duration) -> u32 {
    const SAMPLE: Duration = Duration::from_micros(100);
    let nanos = per_call.as_nanos().max(1);
    u32::try_from(SAMPLE.as_nanos().div_ceil(nanos)).map_or(10_000, |k| k.clamp(1, 10_000))
}

/// Modes whose call takes less than this make one untimed call before each timed sample, so
/// that the sample starts with the caches as the mode's own previous call left them — as a
/// host calling it in a loop finds them, and as `bench/peers.py` times the peers — not as the
/// other modes' calls of the round left them (an unfused plan writing its intermediates
/// evicts a cache-resident fused plan's inputs). Longer calls barely notice, and would double
/// the run.
const WARM_BELOW: Duration = Duration::from_millis(20);

/// Runs the benchmark and returns its report (a table, or JSON).
pub fn bench(graph: Graph, o: BenchOptions) -> Result<String, Error> {
    graph.verify()?;
    if graph.outputs().is_empty() {
        return Err(Error::NoOutputs);
    }
    let runs = o.runs.max(1);
    let (outputs, placeholders) = (graph.outputs().to_vec(), graph.placeholders());
    let empty = |id: &NodeId| graph.tensor_size(*id).is_ok_and(|s| s.elements == 0);
    if outputs.iter().all(empty) {
        let names: Vec<String> = outputs
            .iter()
            .map(|id| {
                let axes = graph.axes_with_lengths(&graph.node(*id).axes);
                format!("`{}` over {axes}", graph.node_label(*id))
            })
            .collect();
        return Err(Error::NothingToTime {
            empty: names.join(", "),
        });
    }
    // Compile time per stage (fused): passes, lowering, code generation.
    let t = Instant::now();
    let jit = |e: weft_compiler::JitError| Error::Compile(e);
    let plan = compile_plan(&graph, &PlanOptions::default()).map_err(|e| jit(e.into()))?;
    let passes = t.elapsed();
    let t = Instant::now();
    let lowered = lower_plan(&plan, &LowerOptions::default()).map_err(|e| jit(e.into()))?;
    let lowering = t.elapsed();
    let t = Instant::now();
    let compiler = JitCompiler::new().map_err(|e| jit(e.into()))?;
    for lk in &lowered {
        compiler.compile(&lk.kernel).map_err(|e| jit(e.into()))?;
    }
    let codegen = t.elapsed();
    let mut modes = vec![
        (
            "fused",
            Transformer::with_jit_options(graph.clone(), JitOptions::default())?,
        ),
        (
            "unfused",
            Transformer::with_jit_options(graph.clone(), JitOptions::unfused())?,
        ),
    ];
    if o.loop_nest {
        modes.push((
            "fused-loop-nest",
            Transformer::with_jit_options(
                graph.clone(),
                JitOptions {
                    gemm: None,
                    ..JitOptions::default()
                },
            )?,
        ));
    }
    if o.epilogue_apart {
        modes.push((
            "fused-epilogue-apart",
            Transformer::with_jit_options(
                graph.clone(),
                JitOptions {
                    epilogue: false,
                    ..JitOptions::default()
                },
            )?,
        ));
    }
    if o.ordinary_stores {
        let mut options = JitOptions::default();
        options.codegen.stream_min_bytes = None;
        modes.push((
            "fused-ordinary-stores",
            Transformer::with_jit_options(graph.clone(), options)?,
        ));
    }
    if o.cranelift_lanes {
        let mut options = JitOptions::default();
        options.codegen.leaf_loops = false;
        modes.push((
            "fused-cranelift-lanes",
            Transformer::with_jit_options(graph.clone(), options)?,
        ));
    }
    if o.ymm_leaves {
        let mut options = JitOptions::default();
        options.codegen.wide_leaves = false;
        modes.push((
            "fused-ymm-leaves",
            Transformer::with_jit_options(graph.clone(), options)?,
        ));
    }
    if !o.skip_interp {
        modes.push((
            "interp",
            Transformer::new(graph.clone(), Backend::Interpreter)?,
        ));
    }
    let t = Instant::now();
    let computations = modes
        .iter()
        .map(|(_, t)| t.computation(&outputs, &placeholders))
        .collect::<Result<Vec<_>, _>>()?;
    let compile_all = t.elapsed();
    let inputs = inputs_for(&graph)?;
    let mut arrays = computations
        .iter()
        .map(|c| c.output_arrays())
        .collect::<Result<Vec<_>, _>>()?;
    let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(runs); modes.len()];
    // The warm-up rounds also estimate each mode's call time: for the progress bar, and for
    // how many consecutive calls one sample times (`calls_per_sample`).
    // The fastest warm-up call estimates it: the first call of a mode builds its workspace.
    let mut per_call = vec![Duration::MAX; modes.len()];
    for _ in 0..o.warmup.max(1) {
        for ((c, out), w) in computations
            .iter()
            .zip(arrays.iter_mut())
            .zip(&mut per_call)
        {
            let t = Instant::now();
            c.call_into(&inputs, out)?;
            *w = (*w).min(t.elapsed());
        }
    }
    let batches: Vec<u32> = per_call.iter().map(|d| calls_per_sample(*d)).collect();
    let per_round: Duration = per_call.iter().zip(&batches).map(|(d, k)| *d * *k).sum();
    let bar = (std::io::stderr().is_terminal() && per_round * runs as u32 > Duration::from_secs(1))
        .then(|| indicatif::ProgressBar::new(runs as u64));
    for _ in 0..runs {
        for (i, (c, out)) in computations.iter().zip(arrays.iter_mut()).enumerate() {
            if per_call[i] < WARM_BELOW {
                // Untimed: the sample starts from the caches this mode's own call leaves.
                c.call_into(&inputs, out)?;
            }
            let t = Instant::now();
            for _ in 0..batches[i] {
                c.call_into(&inputs, out)?;
            }
            times[i].push(t.elapsed().as_secs_f64() * 1e3 / f64::from(batches[i]));
        }
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let (bytes, flops) = bytes_and_flops(&graph)?;
    let batch_of = |name: &str| {
        modes
            .iter()
            .position(|(n, _)| *n == name)
            .map_or(1, |i| batches[i])
    };
    let stats: Vec<(&str, f64, f64, f64)> = modes
        .iter()
        .zip(times.iter_mut())
        .map(|((name, _), t)| {
            let min = t.iter().copied().fold(f64::INFINITY, f64::min);
            let max = t.iter().copied().fold(0.0, f64::max);
            (*name, median(t), min, max)
        })
        .collect();
    let ratio = stats[1].1 / stats[0].1;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let whole = whole_compiles(&graph, o.compiles)?;
    if o.json {
        let modes: Vec<serde_json::Value> = stats
            .iter()
            .map(|(name, med, min, max)| {
                serde_json::json!({
                    "mode": name, "median_ms": med, "min_ms": min, "max_ms": max,
                    "calls_per_sample": batch_of(name),
                    "gb_per_s": bytes as f64 / (med * 1e6),
                    "gflop_per_s": flops as f64 / (med * 1e6),
                })
            })
            .collect();
        let report = serde_json::json!({
            "target": weft_runtime::Target::host().to_string(),
            "runs": runs, "warmup": o.warmup, "bytes": bytes, "flops": flops,
            "modes": modes,
            "unfused_over_fused": ratio,
            "compile_ms": {
                "passes": ms(passes), "lowering": ms(lowering), "codegen": ms(codegen),
                "all_modes": ms(compile_all),
                "whole_median": whole,
            },
        });
        return Ok(format!("{report}\n"));
    }
    let mut s = format!("target: {}\n", weft_runtime::Target::host());
    s += &format!(
        "{runs} runs after {} warm-up, interleaved, each sample of a call under 20 ms after an \
         untimed one; a whole call_into each (a sample of a short call is the mean of \
         consecutive calls: {}); {bytes} bytes must move, {flops} flop\n",
        o.warmup,
        stats
            .iter()
            .map(|(name, ..)| format!("{name} ×{}", batch_of(name)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    s += &format!(
        "{:<8} {:>11} {:>11} {:>11} {:>9} {:>9}\n",
        "mode", "median ms", "min ms", "max ms", "GB/s", "GFLOP/s"
    );
    // Enough decimals for sub-microsecond calls.
    let d = if stats.iter().any(|st| st.1 < 0.01) {
        6
    } else {
        4
    };
    for (name, med, min, max) in &stats {
        s += &format!(
            "{name:<8} {med:>11.d$} {min:>11.d$} {max:>11.d$} {:>9.2} {:>9.2}\n",
            bytes as f64 / (med * 1e6),
            flops as f64 / (med * 1e6)
        );
    }
    s += &format!("unfused / fused: {ratio:.2}x\n");
    s += &format!(
        "compile (fused, each stage alone on one thread): passes {:.2} ms, lowering {:.2} ms, \
         codegen {:.2} ms\n",
        ms(passes),
        ms(lowering),
        ms(codegen),
    );
    s += &format!(
        "compile (every mode above, each computation compiling its kernels in parallel on its \
         pool, so below the stages' sum where there are several kernels): {:.2} ms\n",
        ms(compile_all)
    );
    if let Some(w) = whole {
        s += &format!(
            "compile (fused, graph to callable): median {w:.3} ms of {}\n",
            o.compiles
        );
    }
    Ok(s)
}

/// The median of `n` fused compiles of `graph`, graph to callable, in ms (`None` for none).
fn whole_compiles(graph: &Graph, n: usize) -> Result<Option<f64>, Error> {
    let (outputs, placeholders) = (graph.outputs().to_vec(), graph.placeholders());
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let transformer = Transformer::with_jit_options(graph.clone(), JitOptions::default())?;
        let computation = transformer.computation(&outputs, &placeholders)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        drop(computation);
    }
    Ok((n > 0).then(|| median(&mut times)))
}
