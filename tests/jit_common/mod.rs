//! Shared by the JIT tests: random inputs, running a graph on a backend, and the interpreter's
//! references for `weft_oracle`'s oracle (docs/testing.md).
// Each test binary uses a part of it.
#![allow(dead_code, unused_imports)]

use weft::prelude::*;
pub use weft::testing::{call_alternately, references, run, run_on, Run};
use weft::{ConvSpec, PoolKind, PoolSpec, Role};
pub use weft_oracle::compare_runs as compare;
use weft_oracle::SplitMix;

/// Random values for the placeholders `ps` of `g`: floats in [-2, 2), integers in [-6, 6),
/// bools half true, no special values (hand-written tests check those explicitly).
pub fn random_inputs(g: &Graph, ps: &[NodeId], seed: u64) -> Vec<HostArray> {
    weft_oracle::random_inputs(g, ps, seed, false)
}

/// Runs `outputs` of `g` twice (`call`, then `call_into`: [`call_alternately`]) on the JIT
/// with `options`, every placeholder an input.
pub fn run_jit(
    g: &Graph,
    outputs: &[NodeId],
    inputs: &[HostArray],
    options: JitOptions,
) -> Result<Run, Error> {
    let t = Transformer::with_jit_options(g.clone(), options)?;
    run_on(&t, outputs, &g.placeholders(), inputs, 2)
}

/// The JIT executable of `g`'s outputs given all its placeholders, compiled with `options`
/// (what `weft explain` and the plan inspections read).
pub fn jit_executable(g: &Graph, options: &JitOptions) -> weft::compiler::JitExecutable {
    weft::compiler::JitExecutable::new(
        std::sync::Arc::new(g.clone()),
        g.outputs(),
        &g.placeholders(),
        options,
    )
    .unwrap()
}

/// `weft explain` of `g`'s outputs compiled with `options`.
pub fn explain(g: &Graph, options: &JitOptions) -> String {
    weft::compiler::explain::explain(&jit_executable(g, options))
}

/// `relu(X·W + b)` with X over `[B, I]` (or `[I, B]` if `x_t`) and W over `[I, O]` (or
/// `[O, I]` if `w_t`): one MLP layer, the GEMM path's standard case.
pub fn mlp_layer(b: usize, i: usize, o: usize, dtype: DType, x_t: bool, w_t: bool) -> Graph {
    let mut g = Graph::new();
    let (ba, ia, oa) = (
        g.axis("B", b).unwrap(),
        g.axis("I", i).unwrap(),
        g.axis("O", o).unwrap(),
    );
    let x = g
        .placeholder("X", &if x_t { [ia, ba] } else { [ba, ia] }, dtype)
        .unwrap();
    let w = g
        .placeholder("W", &if w_t { [oa, ia] } else { [ia, oa] }, dtype)
        .unwrap();
    let bias = g.placeholder("b", &[oa], dtype).unwrap();
    let h = g.dot(x, w).unwrap();
    let hb = g.binary(weft::BinaryOp::Add, h, bias).unwrap();
    let out = g.unary(weft::UnaryOp::Relu, hb).unwrap();
    g.mark_output(out).unwrap();
    g
}

/// `outputs` of `g` on the JIT, fused and unfused, against the interpreter's references with
/// `g`'s tolerance (`weft_oracle`'s oracle); the failure names the backend and prints `g`.
pub fn check_backends(
    g: &Graph,
    outputs: &[NodeId],
    inputs: &[HostArray],
) -> Result<(), proptest::test_runner::TestCaseError> {
    use proptest::test_runner::TestCaseError;
    let ps = g.placeholders();
    let tol = weft_oracle::Tolerance::for_graph(g);
    let refs = references(g, outputs, &ps, inputs, 1, &tol).unwrap();
    for backend in [Backend::Jit, Backend::JitUnfused] {
        let got = run(g, outputs, &ps, inputs, 1, backend).map_err(|e| {
            TestCaseError::fail(format!(
                "{backend:?} failed: {e}\n{}",
                weft_ir::text::print(g)
            ))
        })?;
        compare(&got, &refs, &tol).map_err(|m| {
            TestCaseError::fail(format!(
                "{backend:?} differs: {m}\n{}",
                weft_ir::text::print(g)
            ))
        })?;
    }
    Ok(())
}

/// A random convolution, then (sometimes) a pool of its result: 1-D (Time), 2-D or 3-D
/// (Depth) by the roles drawn, axes in a random order, random strides (every stride 1 when
/// `unit_strides` says so, else 40 % of the cases), paddings, dilations and groups, f32 or
/// f64.
pub struct ConvCase {
    /// The graph.
    pub g: Graph,
    /// The convolution, then the pool if drawn.
    pub out: Vec<NodeId>,
}

pub fn random_convolution(seed: u64, unit_strides: Option<bool>) -> ConvCase {
    random_convolution_with(seed, unit_strides, false)
}

/// [`random_convolution`], drawn alike but, when `differentiable`, f64 and any pool an average
/// pool: what a central-difference gradient check can judge (f32 differences are too coarse; a
/// max pool's step may cross a tie), so every draw is checked instead of two in three skipped.
pub fn random_convolution_with(
    seed: u64,
    unit_strides: Option<bool>,
    differentiable: bool,
) -> ConvCase {
    let mut r = SplitMix(seed);
    let mut g = Graph::new();
    let roles: Vec<Role> = match r.below(3) {
        0 => vec![Role::Time],
        1 => vec![Role::Height, Role::Width],
        _ => vec![Role::Depth, Role::Height, Role::Width],
    };
    let groups = 1 + r.below(3);
    let (j, kg) = (1 + r.below(3), 1 + r.below(3));
    let dtype = if r.chance(50) && !differentiable {
        DType::F32
    } else {
        DType::F64
    };
    let mut x_axes = vec![
        g.axis("N", 1 + r.below(2)).unwrap(),
        g.axis_with_roles("C", Some(groups * j), vec![Role::Channel])
            .unwrap(),
    ];
    let mut f_axes = vec![
        g.axis_with_roles("K", Some(groups * kg), vec![Role::Channelout])
            .unwrap(),
        g.axis_with_roles("J", Some(j), vec![Role::Channel])
            .unwrap(),
    ];
    let mut spec = ConvSpec::new().groups(groups);
    // Unit strides often: the compiler expands those another way (shifted matrix products).
    let unit_strides = unit_strides.unwrap_or_else(|| r.chance(40));
    for (i, role) in roles.iter().enumerate() {
        let taps = 1 + r.below(3);
        let dilation = 1 + r.below(2);
        let stride = if unit_strides { 1 } else { 1 + r.below(3) };
        let (before, after) = (r.below(3), r.below(3));
        let extent = dilation * (taps - 1) + 1;
        let len = (extent + r.below(5)).saturating_sub(before + after).max(1);
        x_axes.push(
            g.axis_with_roles(&format!("X{i}"), Some(len), vec![role.clone()])
                .unwrap(),
        );
        f_axes.push(
            g.axis_with_roles(&format!("F{i}"), Some(taps), vec![role.clone()])
                .unwrap(),
        );
        spec = spec
            .stride(role.clone(), stride)
            .dilation(role.clone(), dilation)
            .pad(role.clone(), before, after);
    }
    shuffle(&mut r, &mut x_axes);
    shuffle(&mut r, &mut f_axes);
    let x = g.placeholder("x", &x_axes, dtype).unwrap();
    let f = g.placeholder("f", &f_axes, dtype).unwrap();
    let y = g.convolution(x, f, &spec).unwrap();
    let mut out = vec![y];
    if r.chance(60) {
        let kind = if r.chance(50) && !differentiable {
            PoolKind::Max
        } else {
            PoolKind::Avg
        };
        let role = roles[r.below(roles.len())].clone();
        let axis = *g
            .node(y)
            .axes
            .iter()
            .find(|a| g.axis_data(a.id).roles.contains(&role))
            .unwrap();
        let len = g.axis_len(axis).unwrap();
        let taps = 1 + r.below(len.min(3));
        let pad = r.below(taps);
        let spec = PoolSpec::new(kind)
            .window(role.clone(), taps)
            .stride(role.clone(), 1 + r.below(2))
            .pad(role, pad, r.below(taps));
        if let Ok(p) = g.pool(y, &spec) {
            out.push(p);
        }
    }
    ConvCase { g, out }
}

fn shuffle<T>(r: &mut SplitMix, v: &mut [T]) {
    for i in (1..v.len()).rev() {
        v.swap(i, r.below(i + 1));
    }
}
