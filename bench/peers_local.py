#!/usr/bin/env python3
"""Peers for the workloads of bench/workloads that ../shared/peers/peers.py does not define, with
its command line and its JSON lines, so bench/peers.py runs them the same way.

    bcast_exp: out[i] = Σ_j exp(x[i] − y[j]), x, y: f32[4096] each — a broadcast exp inside a
               reduction (issue 12); 16.8 M exps, no memory traffic to speak of.
    sum_R_OO:  t: f32[B, M, A], 256 each (64 MiB), summed over axis R, the result laid out in
               the order OO (sum_M_AB: Σ_m t[b, m, a] stored as [A, B]) — issue 12's schedules.
    transpose: x: f32[4096, 4096] stored transposed.

The orientation rows (issue 41, bench/workloads/orientation), R = 32768, C = 512 (64 MiB per
matrix: a 16 MiB one stays in a 32 MiB L3 from call to call; `--rows 2048` makes each 4 MiB,
a cache-resident size, issue 61), inputs uniform
in [-1, 1) as `weft bench` draws them. NAME_inner reduces over C of a C-contiguous x[R, C]
(axis 1, innermost); NAME_outer holds the same shape transposed, a C-contiguous x[C, R], and
reduces over C = axis 0, the result laid out as weft lays it out ([C, R] for softmax and
layernorm, [R] for lse):
    softmax_*:   exp(x − max_C x) / Σ_C exp(x − max_C x)   (jax.nn.softmax, torch.softmax)
    layernorm_*: (x − μ) / sqrt(σ² + 1e-5) · g + b, μ and σ² the means over C, g, b: f32[C]
                 (written out in every system: torch's layer_norm has no first-axis form)
    lse_*:       max_C x + log Σ_C exp(x − max_C x)     (jax.nn.logsumexp, torch.logsumexp)
    expxy_inner: out[i] = Σ_j exp(x[i] · y[j]); expxy_outer: out[j] = Σ_i exp(x[i] · y[j]);
                 x: f32[I], y: f32[J], I = J = 4096 (16.8 M exps; numpy and torch eager store
                 the 64 MiB product)
    l2_sum:      Σ t², t: f32[R, C], as sum(square(t)); l2_dot: the same as tensordot(t, t, 2)
                 (numpy: one BLAS call over the flattened t).

The cache-resident rows (issue 61): ../shared/peers/peers.py's chain, l2, softmax and layernorm,
the same math written the same way in every system, at sizes whose inputs each fit in a quarter
of a 16 MiB L3 (4 MiB an input), inputs drawn from N(0, 1) as there:
    chain_c:     out = sqrt((x − y)² + (z·w)²) · 0.5, x, y, z, w: f32[N], N = 2^20 (chain: 2^24)
    l2_c:        s = Σ_N (x − y)², x, y: f32[N], N = 2^20 (numpy: dot(x − y, x − y), as there)
    softmax_c:   softmax over the last axis of a: f32[1024, 1024] (softmax: [4096, 4096])
    layernorm_c: (a − μ) / sqrt(σ² + 1e-5) · g + b over the last axis of a: f32[1024, 1024],
                 g, b: f32[1024] (torch: its layer_norm; ort: LayerNormalization)

Systems: numpy; jax (jitted, resident jax arrays in, `block_until_ready` on the output); torch
(eager) and inductor (torch.compile of the same function, first call untimed), host tensors
from torch.from_numpy in and out, torch's default threads; ort (ONNX Runtime, CPU execution
provider, 2 intra-op threads, all graph optimizations: each model built in memory with
onnx.helper at opset 17 as ../shared/peers/peers.py builds its own, numpy inputs passed to
InferenceSession.run per call, numpy output). Every system but numpy is checked once against
numpy (allclose rtol 1e-3, atol 1e-3) before timing; a mismatch is printed on stderr. torch and
inductor run the orientation and cache-resident rows only, ort the cache-resident rows only (the
others: numpy and jax). A system that is not installed is skipped with a note on stderr; one
that has no such workload, silently.
"""
import argparse, json, statistics, sys, time

SUMS = {f"sum_{r}_{o}": ("BMA".index(r), o)
        for r, o in [("A", "BM"), ("A", "MB"), ("B", "AM"), ("B", "MA"), ("M", "AB"), ("M", "BA")]}
ORIENTATION = [f"{n}_{o}" for n in ["softmax", "layernorm", "lse", "expxy"] for o in ["inner", "outer"]]
ORIENTATION += ["l2_sum", "l2_dot"]
# The cache-resident rows (issue 61), each with its inputs' names (../shared/peers/peers.py's), in
# the order its function takes them.
CACHE = {"chain_c": ("x", "y", "z", "w"), "l2_c": ("x", "y"), "softmax_c": ("A",), "layernorm_c": ("A", "g", "b")}
WORKLOADS = ["bcast_exp", *SUMS, "transpose", *ORIENTATION, *CACHE]
SYSTEMS = ["numpy", "jax", "torch", "inductor", "ort"]
R, C, IJ = 32768, 512, 4096
N_CACHE, RC_CACHE = 1 << 20, 1024  # chain_c and l2_c: N; softmax_c and layernorm_c: [R, C] = [1024, 1024]


def sum_of(xp, axis, order):
    """`Σ t` over `axis` of [B, M, A], its two kept axes put in `order` (a transpose if needed)."""
    kept = [c for c in "BMA" if c != "BMA"[axis]]
    return lambda t: xp.transpose(xp.sum(t, axis=axis), [kept.index(c) for c in order])


def orientation(w, xp, kind):
    """Workload `w` of the orientation group as a function of its inputs, in array library `xp`
    (numpy, jax.numpy or torch; `kind` names which), the reduced axis C being axis 1 for _inner
    and axis 0 for _outer."""
    torch = kind == "torch"
    ax = 0 if w.endswith("_outer") else 1
    amax = (lambda a: xp.amax(a, dim=ax, keepdim=True)) if torch else (lambda a: xp.max(a, axis=ax, keepdims=True))
    mean = (lambda a: xp.mean(a, dim=ax, keepdim=True)) if torch else (lambda a: xp.mean(a, axis=ax, keepdims=True))
    if w.startswith("softmax"):
        if kind == "jax":
            import jax
            return lambda x: jax.nn.softmax(x, axis=ax)
        if torch:
            return lambda x: xp.softmax(x, ax)
        return lambda x: (lambda e: e / e.sum(axis=ax, keepdims=True))(xp.exp(x - amax(x)))
    if w.startswith("layernorm"):
        bc = (lambda v: v[:, None]) if ax == 0 else (lambda v: v)  # g, b over C
        def ln(x, g, b):
            c = x - mean(x)
            return c / xp.sqrt(mean(c * c) + 1e-5) * bc(g) + bc(b)
        return ln
    if w.startswith("lse"):
        if kind == "jax":
            import jax
            return lambda x: jax.nn.logsumexp(x, axis=ax)
        if torch:
            return lambda x: xp.logsumexp(x, ax)
        return lambda x: (lambda m: m.squeeze(ax) + xp.log(xp.exp(x - m).sum(axis=ax)))(amax(x))
    if w.startswith("expxy"):  # the implied product [I, J]: _inner sums over J (axis 1), _outer over I
        return lambda x, y: xp.exp(x[:, None] * y[None, :]).sum(ax)
    if w == "l2_sum":
        return lambda t: xp.square(t).sum()
    if w == "l2_dot":
        return lambda t: xp.tensordot(t, t, 2)
    raise KeyError(w)


def orientation_inputs(w, rng, R=R):
    """The inputs of orientation workload `w` (uniform in [-1, 1), like `weft bench`'s), C-contiguous,
    with `R` rows (`--rows`)."""
    u = lambda *shape: rng.uniform(-1, 1, size=shape).astype("float32")
    if w.startswith("expxy"):
        return (u(IJ), u(IJ))
    x = u(C, R) if w.endswith("_outer") else u(R, C)
    return (x, u(C), u(C)) if w.startswith("layernorm") else (x,)


def cache(w, xp, kind):
    """Cache-resident workload `w` as a function of its inputs (CACHE[w]), in array library `xp`
    (numpy, jax.numpy or torch; `kind` names which), written as ../shared/peers/peers.py writes it."""
    torch = kind == "torch"
    if w == "chain_c":
        return lambda x, y, z, v: xp.sqrt((x - y) ** 2 + (z * v) ** 2) * 0.5
    if w == "l2_c":
        if kind == "numpy":
            return lambda x, y: xp.dot(x - y, x - y)
        return lambda x, y: ((x - y) ** 2).sum()
    if w == "softmax_c":
        if kind == "jax":
            import jax
            return lambda a: jax.nn.softmax(a, axis=1)
        if torch:
            return lambda a: xp.softmax(a, 1)
        return lambda a: (lambda e: e / e.sum(axis=-1, keepdims=True))(xp.exp(a - a.max(axis=-1, keepdims=True)))
    if w == "layernorm_c":
        if torch:
            return lambda a, g, b: xp.nn.functional.layer_norm(a, (a.shape[-1],), g, b, 1e-5)
        def ln(a, g, b):
            mu = a.mean(axis=1, keepdims=True)
            var = ((a - mu) ** 2).mean(axis=1, keepdims=True)
            return (a - mu) / xp.sqrt(var + 1e-5) * g + b
        return ln
    raise KeyError(w)


def cache_inputs(w, rng):
    """The inputs of cache-resident workload `w`, N(0, 1) float32 like ../shared/peers/peers.py's."""
    import numpy as np
    shapes = {"x": (N_CACHE,), "y": (N_CACHE,), "z": (N_CACHE,), "w": (N_CACHE,),
              "A": (RC_CACHE, RC_CACHE), "g": (RC_CACHE,), "b": (RC_CACHE,)}
    return tuple(rng.standard_normal(shapes[n], dtype=np.float32) for n in CACHE[w])


def onnx_model(w, args):
    """Cache-resident workload `w` as a serialized ONNX model (opset 17, float32, inputs named as in
    CACHE[w] with the shapes of `args`, output "out"): ../shared/peers/peers.py's graphs."""
    from onnx import helper as oh, TensorProto
    op = oh.make_node
    nodes = {"chain_c": [op("Sub", ["x", "y"], ["d"]), op("Mul", ["d", "d"], ["d2"]), op("Mul", ["z", "w"], ["p"]),
                         op("Mul", ["p", "p"], ["p2"]), op("Add", ["d2", "p2"], ["s"]), op("Sqrt", ["s"], ["r"]),
                         op("Constant", [], ["half"], value_float=0.5), op("Mul", ["r", "half"], ["out"])],
             "l2_c": [op("Sub", ["x", "y"], ["d"]), op("ReduceSumSquare", ["d"], ["out"], keepdims=0)],
             "softmax_c": [op("Softmax", ["A"], ["out"], axis=1)],
             "layernorm_c": [op("LayerNormalization", ["A", "g", "b"], ["out"], axis=-1, epsilon=1e-5)]}[w]
    graph = oh.make_graph(nodes, "g", [oh.make_tensor_value_info(n, TensorProto.FLOAT, v.shape)
                                       for n, v in zip(CACHE[w], args)],
                          [oh.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    return oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)]).SerializeToString()


def timeit(f, runs):
    f(); f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return ts


def report(workload, system, ts):
    print(json.dumps({"workload": workload, "system": system,
                      "median_ms": round(statistics.median(ts) * 1e3, 4),
                      "min_ms": round(min(ts) * 1e3, 4), "max_ms": round(max(ts) * 1e3, 4),
                      "runs": len(ts)}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", action="append", help=" ".join(WORKLOADS))
    ap.add_argument("--system", action="append", help=" ".join(SYSTEMS) + " (default: all five)")
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--rows", type=int, default=R,
                    help="R of the orientation rows (default 32768: 64 MiB a matrix; 2048: 4 MiB, cache-resident)")
    a = ap.parse_args()
    import numpy as np
    rng = np.random.default_rng(0)
    # Each workload: its numpy function (whose result is made contiguous: a layout is part of
    # the result), a function of an array library and its kind giving the same, and its inputs
    # (drawn only for the workloads asked for).
    cases = {"bcast_exp": (lambda x, y: np.exp(x[:, None] - y[None, :]).sum(axis=1),
                           lambda xp, kind: lambda x, y: xp.sum(xp.exp(x[:, None] - y[None, :]), axis=1),
                           lambda: tuple(rng.standard_normal(4096, dtype=np.float32) for _ in range(2))),
             "transpose": (lambda m: np.ascontiguousarray(m.T),
                           lambda xp, kind: lambda m: m.T,
                           lambda: (rng.uniform(-1, 1, size=(4096, 4096)).astype(np.float32),))}
    cube = lambda: (rng.uniform(-1, 1, size=(256, 256, 256)).astype(np.float32),)
    for w, (axis, order) in SUMS.items():
        cases[w] = (lambda t, f=sum_of(np, axis, order): np.ascontiguousarray(f(t)),
                    lambda xp, kind, axis=axis, order=order: sum_of(xp, axis, order), cube)
    for w in ORIENTATION:
        cases[w] = (orientation(w, np, "numpy"), lambda xp, kind, w=w: orientation(w, xp, kind),
                    lambda w=w: orientation_inputs(w, rng, a.rows))
    for w in CACHE:
        cases[w] = (cache(w, np, "numpy"), lambda xp, kind, w=w: cache(w, xp, kind), lambda w=w: cache_inputs(w, rng))
    systems = a.system or SYSTEMS
    for w in a.workload or WORKLOADS:
        if w not in cases or not set(systems) & set(SYSTEMS):
            continue
        ref, make, inputs = cases[w]
        args = inputs()
        want = ref(*args)
        for system in systems:
            if system == "numpy":
                report(w, system, timeit(lambda: ref(*args), a.runs))
            elif system == "jax":
                try:
                    import jax, jax.numpy as jnp
                except ImportError:
                    print("jax not installed", file=sys.stderr)
                    continue
                jargs = [jnp.asarray(v) for v in args]
                f = jax.jit(make(jnp, "jax"))
                check(w, system, np.asarray(f(*jargs)), want)
                report(w, system, timeit(lambda: f(*jargs).block_until_ready(), a.runs))
            elif system in ("torch", "inductor") and (w in ORIENTATION or w in CACHE):
                try:
                    import torch
                except ImportError:
                    print("torch not installed", file=sys.stderr)
                    continue
                targs = [torch.from_numpy(v) for v in args]
                f = make(torch, "torch")
                if system == "inductor":
                    f = torch.compile(f)
                check(w, system, f(*targs).numpy(), want)
                report(w, system, timeit(lambda: f(*targs), a.runs))
            elif system == "ort" and w in CACHE:
                try:
                    import onnx, onnxruntime as ort
                except ImportError as e:
                    print(f"ort skipped: {e} (needs onnxruntime, onnx)", file=sys.stderr)
                    continue
                so = ort.SessionOptions()  # as ../shared/peers/peers.py sets them
                so.intra_op_num_threads = 2
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                sess = ort.InferenceSession(onnx_model(w, args), so, providers=["CPUExecutionProvider"])
                feeds = dict(zip(CACHE[w], args))
                check(w, system, sess.run(None, feeds)[0], want)
                report(w, system, timeit(lambda: sess.run(None, feeds), a.runs))


def check(workload, system, got, want):
    import numpy as np
    if got.shape != want.shape or not np.allclose(got, want, rtol=1e-3, atol=1e-3):
        print(f"{workload} {system}: mismatch against numpy", file=sys.stderr)


if __name__ == "__main__":
    main()
