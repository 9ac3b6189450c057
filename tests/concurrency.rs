//! Calls from many threads on one transformer: non-assigning calls give bit-identical results
//! to the same calls made one at a time; assigning calls never lose or tear an update (each
//! commit is all of a call's assigns or none, and readers see a consistent snapshot), with
//! assigning and non-assigning computations mixed, on the JIT and the interpreter.

mod common;
use common::*;
use weft::prelude::*;

const THREADS: usize = 8;

/// Variables `a`, `b` and `c` over N = 4 (f64, zeros) and computations:
/// `both` (a = a + 1 and b = b + 1, one call), `bump` (c = c + 1), and, assigning nothing,
/// `diff` (a − b) and `read_a` (a).
struct Counters {
    t: Transformer,
    a: NodeId,
    b: NodeId,
    c: NodeId,
    both: Computation,
    bump: Computation,
    diff: Computation,
    read_a: Computation,
}

fn counters(backend: Backend) -> Counters {
    let g = GraphBuilder::new();
    let n = g.axis("N", 4).unwrap();
    let zeros = || TensorInit::Fill(Scalar::Float(0.0));
    let a = g.variable("a", &[n], DType::F64, zeros()).unwrap();
    let b = g.variable("b", &[n], DType::F64, zeros()).unwrap();
    let c = g.variable("c", &[n], DType::F64, zeros()).unwrap();
    let up_a = a.assign((a + 1.0).unwrap()).unwrap();
    let up_b = b.assign((b + 1.0).unwrap()).unwrap();
    let up_c = c.assign((c + 1.0).unwrap()).unwrap();
    let diff = (a - b).unwrap();
    let (up_a, up_b, up_c, diff) = (up_a.id(), up_b.id(), up_c.id(), diff.id());
    let (a, b, c) = (a.id(), b.id(), c.id());
    let t = Transformer::new(g.finish(), backend).unwrap();
    let both = t.computation(&[up_a, up_b], &[]).unwrap();
    let bump = t.computation(&[up_c], &[]).unwrap();
    let diff = t.computation(&[diff], &[]).unwrap();
    let read_a = t.computation(&[a], &[]).unwrap();
    Counters {
        t,
        a,
        b,
        c,
        both,
        bump,
        diff,
        read_a,
    }
}

/// Calls `c` once, through `call` on even `k` and `call_into` on odd `k`.
fn call_alternating(c: &Computation, k: usize, outs: &mut [HostArray]) -> Vec<HostArray> {
    if k.is_multiple_of(2) {
        c.call(NO_INPUTS).unwrap()
    } else {
        c.call_into(NO_INPUTS, outs).unwrap();
        outs.to_vec()
    }
}

fn increments_are_never_lost_or_torn(backend: Backend, per_thread: usize) {
    let k = counters(backend);
    assert!(k.both.assigns() && k.bump.assigns());
    assert!(!k.diff.assigns() && !k.read_a.assigns());
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let k = &k;
            scope.spawn(move || {
                // Threads 0-3 bump a and b together, 4-5 bump c, 6 reads a − b, 7 reads a.
                let c = match thread {
                    0..=3 => &k.both,
                    4 | 5 => &k.bump,
                    6 => &k.diff,
                    _ => &k.read_a,
                };
                let mut outs = c.output_arrays().unwrap();
                let mut last_a = 0.0;
                for i in 0..per_thread {
                    let got = call_alternating(c, i, &mut outs);
                    if thread == 6 {
                        // a and b are committed together: no snapshot sees one without the other.
                        assert_eq!(f64s(&got[0]), vec![0.0; 4], "{backend:?}: torn a, b");
                    }
                    if thread == 7 {
                        // Whole commits only, in order: every element equal, never going back.
                        let a = f64s(&got[0]);
                        assert!(a.iter().all(|x| *x == a[0]), "{backend:?}: torn a {a:?}");
                        assert!(a[0] >= last_a, "{backend:?}: a went back");
                        last_a = a[0];
                    }
                }
            });
        }
    });
    let n = per_thread as f64;
    assert_eq!(f64s(&k.t.value_of(k.a).unwrap()), vec![4.0 * n; 4], "a");
    assert_eq!(f64s(&k.t.value_of(k.b).unwrap()), vec![4.0 * n; 4], "b");
    assert_eq!(f64s(&k.t.value_of(k.c).unwrap()), vec![2.0 * n; 4], "c");
}

#[test]
fn jit_increments_from_many_threads_are_never_lost_or_torn() {
    increments_are_never_lost_or_torn(Backend::Jit, 500);
}

#[test]
fn interpreter_increments_from_many_threads_are_never_lost_or_torn() {
    increments_are_never_lost_or_torn(Backend::Interpreter, 100);
}

#[test]
fn set_value_from_many_threads_never_tears_a_commit() {
    let k = counters(Backend::Jit);
    std::thread::scope(|scope| {
        for thread in 0..THREADS {
            let k = &k;
            scope.spawn(move || {
                for i in 0..200 {
                    if thread < 4 {
                        k.both.call(NO_INPUTS).unwrap();
                    } else {
                        // set_value claims like an assigning call; read it back as a value.
                        let v = (thread * 1000 + i) as f64;
                        let n = k.t.graph().node(k.c).axes.clone();
                        let value = HostArray::from_vec(n, vec![4], vec![v; 4]).unwrap();
                        k.t.set_value(k.c, &value).unwrap();
                        let seen = f64s(&k.t.value_of(k.c).unwrap());
                        assert!(seen.iter().all(|x| *x == seen[0]), "torn set_value");
                    }
                }
            });
        }
    });
    assert_eq!(f64s(&k.t.value_of(k.a).unwrap()), vec![800.0; 4]);
    assert_eq!(f64s(&k.t.value_of(k.b).unwrap()), vec![800.0; 4]);
}

/// Deterministic f32 data in `[-1, 1)`.
fn data(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s = s
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Each thread calls `c` with its own inputs, `calls` times (`call` and `call_into`
/// alternating); every result must equal, bit for bit, the same call made alone beforehand.
fn concurrent_matches_serial(t: &Transformer, c: &Computation, calls: usize) {
    let g = t.graph();
    let inputs: Vec<Vec<HostArray>> = (0..THREADS as u64)
        .map(|thread| {
            c.placeholders()
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let axes = g.node(*p).axes.clone();
                    let shape = g.shape_of(&axes).unwrap();
                    let len = shape.iter().product();
                    HostArray::from_vec(axes, shape, data(len, thread * 31 + i as u64)).unwrap()
                })
                .collect()
        })
        .collect();
    let serial: Vec<Vec<HostArray>> = inputs.iter().map(|ins| c.call(ins).unwrap()).collect();
    std::thread::scope(|scope| {
        for (ins, want) in inputs.iter().zip(&serial) {
            scope.spawn(move || {
                let mut outs = c.output_arrays().unwrap();
                for i in 0..calls {
                    let got = if i.is_multiple_of(2) {
                        c.call(ins).unwrap()
                    } else {
                        c.call_into(ins, &mut outs).unwrap();
                        outs.clone()
                    };
                    for (g, w) in got.iter().zip(want) {
                        let (g, w) = (f32s(g), f32s(w));
                        assert!(
                            g.iter().zip(&w).all(|(x, y)| x.to_bits() == y.to_bits()),
                            "a concurrent call differs from the serial one"
                        );
                    }
                }
            });
        }
    });
}

#[test]
fn concurrent_calls_of_a_small_graph_match_serial_calls() {
    let g = GraphBuilder::new();
    let n = g.axis("N", 1000).unwrap();
    let x = g.placeholder("x", &[n], DType::F32).unwrap();
    let y = g.placeholder("y", &[n], DType::F32).unwrap();
    let s = (x - y).unwrap().square().unwrap().sum(&[n]).unwrap();
    let (x, y, s) = (x.id(), y.id(), s.id());
    let graph = g.finish();
    for backend in [Backend::Jit, Backend::JitUnfused, Backend::Interpreter] {
        let t = Transformer::new(graph.clone(), backend).unwrap();
        let c = t.computation(&[s], &[x, y]).unwrap();
        concurrent_matches_serial(&t, &c, 50);
    }
}

#[test]
fn concurrent_calls_of_parallel_kernels_match_serial_calls() {
    // Large enough that the row softmax's kernels run split over the shared pool, so several
    // calls' jobs are in the pool at once.
    let g = GraphBuilder::new();
    let r = g.axis("R", 512).unwrap();
    let cols = g.axis("C", 512).unwrap();
    let a = g.placeholder("a", &[r, cols], DType::F32).unwrap();
    let m = a.max(&[cols]).unwrap();
    let e = (a - m).unwrap().exp().unwrap();
    let out = (e / e.sum(&[cols]).unwrap()).unwrap();
    let (a, out) = (a.id(), out.id());
    let graph = g.finish();
    let t = Transformer::new(graph, Backend::Jit).unwrap();
    let c = t.computation(&[out], &[a]).unwrap();
    concurrent_matches_serial(&t, &c, 10);
}
