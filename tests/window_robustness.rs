//! Convolution and pooling at their limits (issue 40): the reproducers found from outside on
//! 2026-11-28 (tests/findings/) accepted or refused alike by the interpreter, the fused and the
//! unfused JIT; a pool's expansion whose size never depends on an axis's length and grows with
//! the log of its window; large windows on the JIT bit-for-bit equal to the interpreter (one
//! association of the fold, `weft_ir::graph::window_fold`); window parameters at the edges of
//! `usize` refused or computed alike.

mod jit_common;

use std::path::Path;
use weft::prelude::*;
use weft::{GraphError, Op, PoolKind, PoolSpec, Role, TensorInit};
use weft_oracle::{random_inputs, SplitMix};

const BACKENDS: [Backend; 3] = [Backend::Interpreter, Backend::Jit, Backend::JitUnfused];

/// Placeholders up to this many elements are fed and the computation called; larger graphs
/// are only compiled.
const CALL_LIMIT: usize = 1 << 16;

fn finding(name: &str) -> Graph {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/findings")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap();
    weft::ir::text::parse(&text, name).unwrap()
}

/// What `backend` makes of `g`'s outputs: their values (when small enough to call) or the
/// error, as text.
fn outcome(g: &Graph, backend: Backend) -> Result<Option<Vec<HostArray>>, String> {
    let t = Transformer::new(g.clone(), backend).map_err(|e| e.to_string())?;
    let ps = g.placeholders();
    let c = t.computation(g.outputs(), &ps).map_err(|e| e.to_string())?;
    let small = ps
        .iter()
        .all(|p| g.tensor_size(*p).is_ok_and(|s| s.elements <= CALL_LIMIT));
    if !small {
        return Ok(None);
    }
    let inputs = random_inputs(g, &ps, 5, true);
    c.call(&inputs).map(Some).map_err(|e| e.to_string())
}

/// Every backend's outcome; they must all accept or all refuse, and accepted values agree
/// bit for bit (NaNs as NaNs).
fn alike(g: &Graph) -> Vec<Result<Option<Vec<HostArray>>, String>> {
    let all: Vec<_> = BACKENDS.iter().map(|b| outcome(g, *b)).collect();
    let accepted: Vec<bool> = all.iter().map(Result::is_ok).collect();
    assert!(
        accepted.iter().all(|a| *a == accepted[0]),
        "backends disagree on accepting the graph: {all:?}"
    );
    if let Ok(Some(reference)) = &all[0] {
        for r in all.iter().skip(1) {
            let Ok(Some(got)) = r else { unreachable!() };
            for (a, b) in got.iter().zip(reference) {
                assert_eq!(bits(a), bits(b), "values differ from the interpreter's");
            }
        }
    }
    all
}

fn bits(a: &HostArray) -> Vec<u64> {
    let canonical = |v: f64| if v.is_nan() { u64::MAX } else { v.to_bits() };
    match a.dtype() {
        DType::F32 => a
            .to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|v| canonical(f64::from(*v)))
            .collect(),
        DType::F64 => a
            .to_vec::<f64>()
            .unwrap()
            .into_iter()
            .map(canonical)
            .collect(),
        DType::Bool => a
            .to_vec::<bool>()
            .unwrap()
            .iter()
            .map(|b| *b as u64)
            .collect(),
        _ => a
            .to_vec::<i64>()
            .unwrap()
            .iter()
            .map(|v| *v as u64)
            .collect(),
    }
}

fn refused(g: &Graph) -> String {
    let all = alike(g);
    all[0].as_ref().err().cloned().expect("refused")
}

#[test]
fn a_channel_length_bound_late_is_checked_on_every_backend() {
    let mut g = finding("conv_channel_mismatch_accepted_by_interp.weft");
    let n = g.find_axis("N").unwrap();
    g.bind(n, 2).unwrap();
    let err = refused(&g);
    assert!(
        err.contains("convolution(image18, filter)") && err.contains("`N` (length 2)"),
        "{err}"
    );
    // Bound to the image's length, it runs (an empty output: Channelout has length 0).
    let mut g = finding("conv_channel_mismatch_accepted_by_interp.weft");
    g.bind(n, 1).unwrap();
    assert!(alike(&g)[0].is_ok());
}

#[test]
fn flatten_of_an_empty_bool_tensor_runs_everywhere() {
    let g = finding("interp_flatten_bool_zero_length.weft");
    let all = alike(&g);
    let out = all[0].as_ref().unwrap().as_ref().unwrap();
    assert_eq!(out[0].len(), 0);
}

#[test]
fn a_rank_past_the_limit_is_refused_everywhere_naming_it() {
    let g = finding("rank_1000_unfused_stack_overflow.weft");
    let err = refused(&g);
    assert!(err.contains("x: 1000 axes, more than the 64"), "{err}");
    let mut g = Graph::new();
    let axes: Vec<Axis> = (0..65)
        .map(|i| g.axis(&format!("A{i}"), 1).unwrap())
        .collect();
    let x = g.placeholder("x", &axes[..64], DType::F32).unwrap();
    let y = g.placeholder("y", &axes[64..], DType::F32).unwrap();
    let z = g.binary(weft::BinaryOp::Add, x, y).unwrap();
    g.mark_output(z).unwrap();
    assert!(matches!(
        g.verify(),
        Err(GraphError::TooManyAxes {
            rank: 65,
            max: 64,
            ..
        })
    ));
    // 64 axes is allowed, and every backend runs them.
    let mut g = Graph::new();
    let axes: Vec<Axis> = (0..64)
        .map(|i| g.axis(&format!("A{i}"), 1).unwrap())
        .collect();
    let x = g.placeholder("x", &axes, DType::F32).unwrap();
    let e = g.unary(weft::UnaryOp::Exp, x).unwrap();
    let s = g.reduce(weft::ReduceOp::Sum, e, &axes[..32], None).unwrap();
    g.mark_output(s).unwrap();
    alike(&g);
}

#[test]
fn a_stride_past_the_axis_takes_one_window_everywhere() {
    let g = finding("pool_stride_u64max_jit_refuses.weft");
    let all = alike(&g);
    let out = all[0].as_ref().unwrap().as_ref().unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![f32::NEG_INFINITY]);
}

#[test]
fn huge_pools_compile_or_meet_the_memory_budget() {
    // 2^28 positions: compiled (not called: a 1 GiB input) on every backend.
    let g = finding("pool_2e28_compile_44s_9GB.weft");
    for r in alike(&g) {
        assert!(matches!(r, Ok(None)), "{r:?}");
    }
    // 2^32: the JIT refuses at compile time by the memory budget (16 GiB in, 16 out), naming
    // it; the interpreter only when called (its budget counts the values it would hold).
    let g = finding("pool_2e32_compile_hangs.weft");
    for b in [Backend::Jit, Backend::JitUnfused] {
        let err = outcome(&g, b).unwrap_err();
        assert!(err.contains("memory budget"), "{err}");
    }
}

#[test]
fn paddings_past_what_an_axis_may_be_are_refused_when_built() {
    let mut g = Graph::new();
    let t = g.axis_with_roles("T", Some(4), vec![Role::Time]).unwrap();
    let x = g.placeholder("x", &[t], DType::F32).unwrap();
    let spec =
        PoolSpec::new(PoolKind::Avg)
            .window(Role::Time, 2)
            .pad(Role::Time, 1, isize::MAX as usize);
    let err = g.pool(x, &spec).unwrap_err();
    assert!(
        matches!(&err, GraphError::Range { axis, .. } if axis == "T"),
        "{err}"
    );
    assert!(err.to_string().contains("avg_pool(x)"), "{err}");
    // A padded input that overflows a tensor's bytes (every axis alone fits) is refused by
    // verification, on every backend.
    let mut g = Graph::new();
    let n = g.axis("N", 1 << 30).unwrap();
    let t = g.axis_with_roles("T", Some(1), vec![Role::Time]).unwrap();
    let x = g.placeholder("x", &[n, t], DType::F32).unwrap();
    let spec = PoolSpec::new(PoolKind::Max)
        .window(Role::Time, 1 << 33)
        .stride(Role::Time, usize::MAX)
        .pad(Role::Time, 1 << 32, 1 << 32);
    let p = g.pool(x, &spec).unwrap();
    g.mark_output(p).unwrap();
    let err = g.verify().unwrap_err().to_string();
    assert!(err.contains("the padded input of"), "{err}");
    assert!(refused(&g).contains("the padded input of"));
}

/// The nodes `expand_pool` adds for a pool over T of `len` with `window` taps, and the most
/// elements a constant among them holds.
fn expansion_size(len: usize, window: usize, kind: PoolKind) -> (usize, usize) {
    let mut g = Graph::new();
    let c = g
        .axis_with_roles("C", Some(3), vec![Role::Channel])
        .unwrap();
    let t = g.axis_with_roles("T", Some(len), vec![Role::Time]).unwrap();
    let x = g.placeholder("x", &[c, t], DType::F32).unwrap();
    let spec = PoolSpec::new(kind)
        .window(Role::Time, window)
        .stride(Role::Time, 2)
        .pad(Role::Time, 1, 0);
    let before = g.len();
    g.expand_pool(x, &spec).unwrap();
    let constants = g
        .nodes()
        .skip(before)
        .filter_map(|(id, n)| match &n.op {
            Op::Tensor {
                init: Some(TensorInit::Data(_)),
                ..
            } => Some(g.tensor_size(id).unwrap().elements),
            _ => None,
        })
        .max()
        .unwrap_or(0);
    (g.len() - before, constants)
}

#[test]
fn a_pools_expansion_never_grows_with_the_axis_and_logarithmically_with_the_window() {
    for kind in [PoolKind::Avg, PoolKind::Max] {
        let small = expansion_size(1 << 10, 2, kind);
        assert_eq!(small, expansion_size(1 << 28, 2, kind));
        assert_eq!(small, expansion_size(1 << 40, 2, kind));
        assert_eq!(small.1, 0, "no table is materialised");
        // Past the direct fold's 64 taps, each doubling of the window adds a few nodes.
        let (w1, _) = expansion_size(1 << 20, 1 << 10, kind);
        let (w2, c2) = expansion_size(1 << 20, 1 << 19, kind);
        assert!(w1 < 200 && w2 < w1 + 120, "{w1} {w2}");
        assert_eq!(c2, 0);
    }
}

/// A pool over 1 or 2 random roles with a window of more than 64 taps in all (the separable
/// fold), random stride, dilation and padding (in a third of the axes a tiny input inside a
/// window of padding, at strides up to the window), f32 or f64.
fn large_window_pool(seed: u64) -> Graph {
    let mut r = SplitMix(seed);
    let mut g = Graph::new();
    let dtype = if r.chance(50) { DType::F32 } else { DType::F64 };
    let roles = if r.chance(50) {
        vec![Role::Time]
    } else {
        vec![Role::Height, Role::Width]
    };
    let kind = if r.chance(50) {
        PoolKind::Max
    } else {
        PoolKind::Avg
    };
    let mut spec = PoolSpec::new(kind);
    let mut axes = vec![g.axis("N", 1 + r.below(2)).unwrap()];
    for (i, role) in roles.iter().enumerate() {
        let taps = if roles.len() == 1 {
            65 + r.below(200)
        } else {
            7 + r.below(20)
        };
        let dilation = 1 + r.below(2);
        let extent = dilation * (taps - 1) + 1;
        let (before, after, len, stride) = if r.chance(33) {
            // A tiny input inside a window of padding: most of every fold level is padding,
            // and the levels whose trees dwarf the input compute one period of the positions
            // holding it all, read at any stride. (Padding stays shorter than the window, so
            // the input grows when it must.)
            let before = r.below(taps);
            let after = (taps - 1).min((extent + r.below(3)).saturating_sub(before + 1));
            let len = (1 + r.below(9)).max(extent.saturating_sub(before + after));
            let stride = if r.chance(50) {
                1 + r.below(3)
            } else {
                1 + r.below(taps)
            };
            (before, after, len, stride)
        } else {
            let (before, after) = (r.below(taps), r.below(taps));
            let len = (extent + r.below(40)).saturating_sub(before + after).max(1);
            (before, after, len, 1 + r.below(3))
        };
        axes.push(
            g.axis_with_roles(&format!("X{i}"), Some(len), vec![role.clone()])
                .unwrap(),
        );
        spec = spec
            .window(role.clone(), taps)
            .stride(role.clone(), stride)
            .dilation(role.clone(), dilation)
            .pad(role.clone(), before, after);
    }
    if r.chance(50) {
        axes.reverse();
    }
    let x = g.placeholder("x", &axes, dtype).unwrap();
    let p = g.pool(x, &spec).unwrap();
    g.mark_output(p).unwrap();
    g
}

/// How many values of `dtype` lie between two of [`bits`]'s values: 0 for the same bits, the
/// distance in units in the last place for finite values of one sign, `u64::MAX` otherwise
/// (a NaN against a number, opposite signs, an infinity against a finite value).
fn ulps_apart(a: u64, b: u64, dtype: DType) -> u64 {
    if a == b {
        return 0;
    }
    let (x, y) = (f64::from_bits(a), f64::from_bits(b));
    if a == u64::MAX || b == u64::MAX || !x.is_finite() || !y.is_finite() {
        return u64::MAX;
    }
    if x.is_sign_negative() != y.is_sign_negative() {
        return u64::MAX;
    }
    match dtype {
        DType::F32 => u64::from((x as f32).to_bits().abs_diff((y as f32).to_bits())),
        _ => a.abs_diff(b),
    }
}

#[test]
fn large_windows_on_the_jit_equal_the_interpreter_bit_for_bit_but_an_averages_division() {
    for seed in 0..72 {
        let g = large_window_pool(seed);
        // Special values (NaN, ±inf, ±0, huge) in half the cases: ties and NaNs must fold
        // alike, sums must round alike.
        let ps = g.placeholders();
        let inputs = random_inputs(&g, &ps, seed, seed % 2 == 0);
        let mut runs = Vec::new();
        for b in BACKENDS {
            let t = Transformer::new(g.clone(), b).unwrap();
            let c = t.computation(g.outputs(), &ps).unwrap();
            runs.push(c.call(&inputs).unwrap());
        }
        // An average's division by a count the same at every lane of a vector loop (the
        // windows inside the input, once peeled from the border) is the reciprocal's, within
        // 1.5 ulp of the quotient (docs/numerics.md): 2 ulp of the interpreter's divide.
        let text = weft::ir::text::print(&g);
        let ulps = if text.contains("avg_pool") { 2 } else { 0 };
        for r in &runs[1..] {
            let (got, want) = (bits(&r[0]), bits(&runs[0][0]));
            let apart = got
                .iter()
                .zip(&want)
                .map(|(a, b)| ulps_apart(*a, *b, r[0].dtype()))
                .max();
            assert!(
                got.len() == want.len() && apart.unwrap_or(0) <= ulps,
                "seed {seed}: {apart:?} ulp apart\n{text}\n{got:?}\n{want:?}"
            );
        }
    }
}

/// `g` with placeholders `x` over `axes.0` (reversed if `reverse`) and `f` over `axes.1` and
/// their convolution as its output.
fn with_convolution(
    mut g: Graph,
    (mut x_axes, f_axes): (Vec<Axis>, &[Axis]),
    reverse: bool,
    dtype: DType,
    spec: &weft::ConvSpec,
) -> Graph {
    if reverse {
        x_axes.reverse();
    }
    let x = g.placeholder("x", &x_axes, dtype).unwrap();
    let f = g.placeholder("f", f_axes, dtype).unwrap();
    let y = g.convolution(x, f, spec).unwrap();
    g.mark_output(y).unwrap();
    g
}

/// `spec` with spatial axis `i` of an input (`X{i}`, `len` long, pushed on `axes.0`) and of a
/// filter (`F{i}`, `taps` long, on `axes.1`), both with `role`, moved by `(stride, dilation,
/// padding)`.
fn spatial(
    g: &mut Graph,
    axes: (&mut Vec<Axis>, &mut Vec<Axis>),
    (i, role): (usize, &Role),
    (len, taps): (usize, usize),
    (stride, dilation, (before, after)): (usize, usize, (usize, usize)),
    spec: weft::ConvSpec,
) -> weft::ConvSpec {
    let x = g.axis_with_roles(&format!("X{i}"), Some(len), vec![role.clone()]);
    let f = g.axis_with_roles(&format!("F{i}"), Some(taps), vec![role.clone()]);
    axes.0.push(x.unwrap());
    axes.1.push(f.unwrap());
    spec.stride(role.clone(), stride)
        .dilation(role.clone(), dilation)
        .pad(role.clone(), before, after)
}

/// How `expand_convolution` expands `g`'s output, a convolution, when asked for the shifted
/// form (as simplify asks).
fn expansion_form(g: &Graph) -> weft::ir::graph::ConvExpansion {
    let (input, filter, spec) = the_convolution(g);
    let (xa, fa) = (&g.node(input).axes, &g.node(filter).axes);
    let p = g.conv_pairing("convolution", xa, fa, &spec).unwrap();
    weft::ir::graph::ConvExpansion::Shifted
        .for_pairing(g, &p)
        .unwrap()
}

/// The input, filter and spec of `g`'s output, a convolution.
fn the_convolution(g: &Graph) -> (NodeId, NodeId, weft::ConvSpec) {
    let Op::Convolution {
        input,
        filter,
        spec,
    } = g.node(g.outputs()[0]).op.clone()
    else {
        panic!("the output is not a convolution")
    };
    (input, filter, spec)
}

/// A depthwise convolution (groups = channels, one input and one output channel each) over
/// 1 or 2 random roles, random strides, dilations and paddings, `c` channels, f32 or f64.
fn depthwise(seed: u64, c: usize) -> Graph {
    let mut r = SplitMix(seed);
    let mut g = Graph::new();
    let dtype = if r.chance(50) { DType::F32 } else { DType::F64 };
    let roles = if r.chance(50) {
        vec![Role::Time]
    } else {
        vec![Role::Height, Role::Width]
    };
    let mut x_axes = vec![
        g.axis("N", 1 + r.below(2)).unwrap(),
        g.axis_with_roles("C", Some(c), vec![Role::Channel])
            .unwrap(),
    ];
    let mut f_axes = vec![
        g.axis_with_roles("K", Some(c), vec![Role::Channelout])
            .unwrap(),
        g.axis_with_roles("J", Some(1), vec![Role::Channel])
            .unwrap(),
    ];
    let mut spec = weft::ConvSpec::new().groups(c);
    for (i, role) in roles.iter().enumerate() {
        let taps = 1 + r.below(4);
        let dilation = 1 + r.below(2);
        let (before, after) = (r.below(3), r.below(3));
        let extent = dilation * (taps - 1) + 1;
        let len = (extent + r.below(6)).saturating_sub(before + after).max(1);
        let step = (1 + r.below(3), dilation, (before, after));
        spec = spatial(
            &mut g,
            (&mut x_axes, &mut f_axes),
            (i, role),
            (len, taps),
            step,
            spec,
        );
    }
    with_convolution(g, (x_axes, &f_axes), r.chance(50), dtype, &spec)
}

#[test]
fn depthwise_convolutions_expand_without_a_loop_over_groups() {
    // A product per tap, whatever the channel count.
    let size = |c: usize| {
        let mut g = depthwise(3, c);
        let (input, filter, spec) = the_convolution(&g);
        let before = g.len();
        g.expand_convolution(
            input,
            filter,
            &spec,
            weft::ir::graph::ConvExpansion::Shifted,
        )
        .unwrap();
        g.len() - before
    };
    assert_eq!(size(4), size(1024));
    for seed in 0..24 {
        let g = depthwise(seed, 1 + (seed as usize % 5));
        let ps = g.placeholders();
        let inputs = random_inputs(&g, &ps, seed, false);
        jit_common::check_backends(&g, g.outputs(), &inputs).unwrap();
    }
}

/// A new axis of `g` with one role.
fn role(g: &mut Graph, name: &str, len: Option<usize>, role: Role) -> Axis {
    g.axis_with_roles(name, len, vec![role]).unwrap()
}

#[test]
fn convolutions_past_the_expansions_terms_are_refused_naming_the_filter() {
    let mut g = Graph::new();
    let c = role(&mut g, "C", Some(8), Role::Channel);
    let t = role(&mut g, "T", Some(10_000), Role::Time);
    let k = role(&mut g, "K", Some(8), Role::Channelout);
    let j = role(&mut g, "J", Some(2), Role::Channel);
    let f = role(&mut g, "F", Some(2000), Role::Time);
    let x = g.placeholder("x", &[c, t], DType::F32).unwrap();
    let w = g.placeholder("w", &[k, j, f], DType::F32).unwrap();
    let err = g
        .convolution(x, w, &weft::ConvSpec::new().groups(4))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("convolution(x, w)") && err.contains("(F) (2000) in 4 group(s)"),
        "{err}"
    );
    // Bound late, the same check runs when the graph is verified, on every backend.
    let mut g = Graph::new();
    let c = role(&mut g, "C", Some(2), Role::Channel);
    let t = role(&mut g, "T", Some(10_000), Role::Time);
    let k = role(&mut g, "K", Some(1), Role::Channelout);
    let f = role(&mut g, "F", None, Role::Time);
    let x = g.placeholder("x", &[c, t], DType::F32).unwrap();
    let w = g.placeholder("w", &[k, c, f], DType::F32).unwrap();
    let y = g.convolution(x, w, &weft::ConvSpec::new()).unwrap();
    g.mark_output(y).unwrap();
    g.bind(f, 5000).unwrap();
    assert!(refused(&g).contains("more than 4096 terms"));
}

#[test]
fn an_empty_batch_pools_to_nothing_without_a_count_over_the_window_axis() {
    // The count of taps is over the window axes alone: with an empty batch the result is
    // empty, and no backend may need memory for the count (2 GiB here, unfused).
    let text = "axis N = 0\naxis C = 1 : Channel\naxis T = 268435456 : Time\n\
                placeholder x: f32[N, C, T]\ny = avg_pool(x, Time=(window=2, pad=(1, 0)))\n\
                output y\n";
    let g = weft::ir::text::parse(text, "empty.weft").unwrap();
    for backend in BACKENDS {
        let small = |o: JitOptions| JitOptions {
            max_bytes: Some(1 << 20),
            ..o
        };
        let t = match backend {
            Backend::Interpreter => Transformer::new(g.clone(), backend),
            Backend::Jit => Transformer::with_jit_options(g.clone(), small(JitOptions::default())),
            _ => Transformer::with_jit_options(g.clone(), small(JitOptions::unfused())),
        }
        .unwrap();
        let c = t.computation(g.outputs(), &g.placeholders()).unwrap();
        let x = HostArray::from_vec(
            g.node(g.placeholders()[0]).axes.clone(),
            vec![0, 1, 1 << 28],
            Vec::<f32>::new(),
        )
        .unwrap();
        let out = c.call(&[x]).unwrap();
        assert_eq!(out[0].len(), 0, "{backend:?}");
    }
}

/// A window of 2^28 + 1 taps centred on a tiny input by padding of 2^27 either side (and one
/// with the padding all before it): the separable fold computes only the positions of its
/// levels that meet the input, so every backend computes it, alike, well under the budget
/// that whole levels (2^28 positions × 29 levels) would pass.
#[test]
fn a_huge_window_of_padding_around_a_tiny_input_runs_everywhere_alike() {
    let half = 1usize << 27;
    for (before, after) in [(half, half), (2 * half, 0)] {
        for kind in [PoolKind::Max, PoolKind::Avg] {
            let mut g = Graph::new();
            let t = g.axis_with_roles("T", Some(3), vec![Role::Time]).unwrap();
            let n = g.axis("N", 2).unwrap();
            let x = g.placeholder("x", &[n, t], DType::F32).unwrap();
            let spec = PoolSpec::new(kind).window(Role::Time, 2 * half + 1).pad(
                Role::Time,
                before,
                after + 2,
            );
            let p = g.pool(x, &spec).unwrap();
            g.mark_output(p).unwrap();
            let all = alike(&g);
            assert!(matches!(&all[0], Ok(Some(_))), "{all:?}");
        }
    }
}

/// A JIT transformer of `g`, fused or not, with a memory budget of 1 GiB.
fn within_a_gib(g: &Graph, fused: bool) -> Transformer {
    let options = JitOptions {
        fused,
        max_bytes: Some(1 << 30),
        ..JitOptions::default()
    };
    Transformer::with_jit_options(g.clone(), options).unwrap()
}

/// Pools whose few windows lie 2^32 apart over a tiny input (the fuzzer's
/// `fuzz_pool_windows_far_apart_over_budget.weft`, and the two huge-padding ones before it)
/// (unbound axes bound to 5) compile on every JIT configuration within a 1 GiB budget: each
/// fold level computes the positions the windows read, a span per window when they are far
/// apart, never the gap.
#[test]
fn pools_of_windows_far_apart_compile_within_a_small_budget() {
    for name in [
        "fuzz_pool_windows_far_apart_over_budget.weft",
        "fuzz_pool_huge_padding_jit_over_budget.weft",
        "fuzz_pool_huge_padding_levels_over_the_whole_padded_axis.weft",
    ] {
        let mut g = finding(name);
        let unbound: Vec<Axis> = g
            .axis_table()
            .filter(|(_, d)| matches!(d.def, weft::ir::AxisDef::Base { len: None }))
            .map(|(id, _)| g.axis_of(id))
            .collect();
        for a in unbound {
            g.bind(a, 5).unwrap();
        }
        for fused in [true, false] {
            let t = within_a_gib(&g, fused);
            let all: Vec<NodeId> = g.nodes().map(|(id, _)| id).collect();
            let outputs: Vec<NodeId> = all
                .into_iter()
                .filter(|id| {
                    !matches!(g.node(*id).op, Op::Tensor { .. })
                        && g.tensor_size(*id).is_ok_and(|s| s.elements <= 1 << 20)
                })
                .collect();
            t.computation(&outputs, &g.placeholders())
                .unwrap_or_else(|e| panic!("{name}, fused {fused}: {e}"));
        }
    }
}

/// Pools whose overlapping windows lie in a sea of padding around an empty, a one-element or a
/// tiny input (the fuzzer's `fuzz_pool_of_an_empty_axis_over_budget.weft` and its twin over one
/// element): every JIT configuration compiles them within a 1 GiB budget, and every backend
/// computes them bit for bit alike. Strides even, odd and near the window's period, dilation 1
/// and 2: a fold level whose trees dwarf the input computes one period of the positions that
/// hold it all (`window_fold::Plateau`), whatever the stride.
#[test]
fn overlapping_windows_of_padding_compile_small_and_run_alike() {
    let window = 1usize << 28;
    let cases = [
        (0, window / 16, 1),
        (1, window / 16, 1),
        (3, window / 10 + 1, 1),
        (5, window / 16 + 3, 1),
        (7, 12_345_679, 1),
        (2, window / 16 + 1, 2),
        (6, window / 8 - 1, 2),
    ];
    for (len, stride, dilation) in cases {
        for kind in [PoolKind::Max, PoolKind::Avg] {
            let mut g = Graph::new();
            let t = g.axis_with_roles("T", Some(len), vec![Role::Time]).unwrap();
            let n = g.axis("N", 2).unwrap();
            let x = g.placeholder("x", &[n, t], DType::F64).unwrap();
            let spec = PoolSpec::new(kind)
                .window(Role::Time, window / dilation)
                .stride(Role::Time, stride)
                .dilation(Role::Time, dilation)
                .pad(Role::Time, window / dilation - 1, window / dilation - 1);
            let p = g.pool(x, &spec).unwrap();
            g.mark_output(p).unwrap();
            for fused in [true, false] {
                within_a_gib(&g, fused)
                    .computation(g.outputs(), &g.placeholders())
                    .unwrap_or_else(|e| panic!("len {len}, {kind:?}, fused {fused}: {e}"));
            }
            let all = alike(&g);
            assert!(matches!(&all[0], Ok(Some(_))), "len {len}: {all:?}");
        }
    }
    let g = finding("fuzz_pool_of_an_empty_axis_over_budget.weft");
    let all: Vec<NodeId> = g.nodes().map(|(id, _)| id).collect();
    within_a_gib(&g, true)
        .computation(&all, &g.placeholders())
        .unwrap();
}

/// A convolution whose windows are mostly padding, drawn from `seed`: one or two spatial axes
/// of 1–4 elements, 1–3 taps, dilations and strides from 1 to 2³², paddings that make the
/// window fit; dense, grouped or depthwise. The padded input of many dwarfs the input and the
/// taps' reads together, so they expand tap by tap over the unpadded input.
fn sparse_window_convolution(seed: u64) -> Graph {
    let mut r = SplitMix(seed);
    let mut g = Graph::new();
    let dtype = if r.chance(50) { DType::F32 } else { DType::F64 };
    let roles = if r.chance(50) {
        vec![Role::Time]
    } else {
        vec![Role::Height, Role::Width]
    };
    let (groups, j, kg) = match r.below(3) {
        0 => (1, 1 + r.below(3), 1 + r.below(3)),
        1 => (2, 1 + r.below(2), 1 + r.below(2)),
        _ => (3, 1, 1),
    };
    let mut x_axes = vec![
        g.axis("N", 1 + r.below(2)).unwrap(),
        role(&mut g, "C", Some(groups * j), Role::Channel),
    ];
    let mut f_axes = vec![
        role(&mut g, "K", Some(groups * kg), Role::Channelout),
        role(&mut g, "J", Some(j), Role::Channel),
    ];
    let mut spec = weft::ConvSpec::new().groups(groups);
    for (i, rl) in roles.iter().enumerate() {
        let len = 1 + r.below(4);
        let taps = 1 + r.below(3);
        let far = [1, 2, 5, 1 << 20, 1 << 32];
        let dilation = far[r.below(far.len())];
        let stride = [1, 1, 3, 1 << 32][r.below(4)];
        let extent = dilation * (taps - 1) + 1;
        let before = [0, 1, extent / 2, extent - 1][r.below(4)];
        let after = extent.saturating_sub(len + before) + r.below(3);
        let step = (stride, dilation, (before, after));
        spec = spatial(
            &mut g,
            (&mut x_axes, &mut f_axes),
            (i, rl),
            (len, taps),
            step,
            spec,
        );
    }
    with_convolution(g, (x_axes, &f_axes), r.chance(50), dtype, &spec)
}

/// Convolutions whose windows are mostly padding (the fuzzer's
/// `fuzz_convolution_huge_dilation_and_padding_over_budget.weft`: dilation and padding 2³²
/// over a 3-long axis) run on every backend alike, the JIT's within a 1 GiB budget: where the
/// padded input would dwarf the input and the taps' reads, each tap reads the input itself
/// ([`weft::ir::graph::ConvExpansion::TapWise`]), never a padded copy.
#[test]
fn convolutions_of_windows_mostly_padding_expand_tap_wise_and_run_alike() {
    let mut tap_wise = 0;
    for seed in 0..64 {
        let g = sparse_window_convolution(seed);
        tap_wise += usize::from(expansion_form(&g) == weft::ir::graph::ConvExpansion::TapWise);
        let text = weft::ir::text::print(&g);
        for fused in [true, false] {
            within_a_gib(&g, fused)
                .computation(g.outputs(), &g.placeholders())
                .unwrap_or_else(|e| panic!("seed {seed}, fused {fused}: {e}\n{text}"));
        }
        let ps = g.placeholders();
        let inputs = random_inputs(&g, &ps, seed, true);
        jit_common::check_backends(&g, g.outputs(), &inputs)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    }
    assert!(tap_wise >= 16, "{tap_wise} of 64 expand tap by tap");
    // An ordinary convolution (3×3, padding 1) keeps the padded input.
    let mut g = Graph::new();
    let h = role(&mut g, "H", Some(8), Role::Height);
    let w = role(&mut g, "W", Some(8), Role::Width);
    let c = role(&mut g, "C", Some(2), Role::Channel);
    let fh = role(&mut g, "FH", Some(3), Role::Height);
    let fw = role(&mut g, "FW", Some(3), Role::Width);
    let k = role(&mut g, "K", Some(2), Role::Channelout);
    let j = role(&mut g, "J", Some(2), Role::Channel);
    let spec = weft::ConvSpec::new()
        .pad(Role::Height, 1, 1)
        .pad(Role::Width, 1, 1);
    let g = with_convolution(
        g,
        (vec![c, h, w], &[k, j, fh, fw]),
        false,
        DType::F32,
        &spec,
    );
    assert_eq!(expansion_form(&g), weft::ir::graph::ConvExpansion::Shifted);
}
