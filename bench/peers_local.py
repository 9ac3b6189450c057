#!/usr/bin/env python3
"""Peers for the workloads of bench/workloads that ../shared/peers/peers.py does not define, with
its command line and its JSON lines, so bench/peers.py runs them the same way.

    bcast_exp: out[i] = Σ_j exp(x[i] − y[j]), x, y: f32[4096] each — a broadcast exp inside a
               reduction (issue 12); 16.8 M exps, no memory traffic to speak of.
    sum_R_OO:  t: f32[B, M, A], 256 each (64 MiB), summed over axis R, the result laid out in
               the order OO (sum_M_AB: Σ_m t[b, m, a] stored as [A, B]) — issue 12's schedules.
    transpose: x: f32[4096, 4096] stored transposed.

numpy and JAX (jitted, `block_until_ready`). JAX is checked once against numpy (allclose rtol
1e-3) before timing; a mismatch is printed on stderr.
"""
import argparse, json, statistics, sys, time

SUMS = {f"sum_{r}_{o}": ("BMA".index(r), o)
        for r, o in [("A", "BM"), ("A", "MB"), ("B", "AM"), ("B", "MA"), ("M", "AB"), ("M", "BA")]}
WORKLOADS = ["bcast_exp", *SUMS, "transpose"]


def sum_of(xp, axis, order):
    """`Σ t` over `axis` of [B, M, A], its two kept axes put in `order` (a transpose if needed)."""
    kept = [c for c in "BMA" if c != "BMA"[axis]]
    return lambda t: xp.transpose(xp.sum(t, axis=axis), [kept.index(c) for c in order])


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
    ap.add_argument("--system", action="append", help="numpy jax (default: both)")
    ap.add_argument("--runs", type=int, default=11)
    a = ap.parse_args()
    import numpy as np
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(4096, dtype=np.float32) for _ in range(2))
    t = rng.uniform(-1, 1, size=(256, 256, 256)).astype(np.float32)
    m = rng.uniform(-1, 1, size=(4096, 4096)).astype(np.float32)
    # Each workload: its numpy function (whose result is made contiguous: a layout is part of
    # the result), the same in JAX (jitted), and its inputs.
    cases = {"bcast_exp": (lambda x, y: np.exp(x[:, None] - y[None, :]).sum(axis=1),
                           lambda jnp: lambda x, y: jnp.sum(jnp.exp(x[:, None] - y[None, :]), axis=1),
                           (x, y)),
             "transpose": (lambda m: np.ascontiguousarray(m.T), lambda jnp: lambda m: m.T, (m,))}
    for w, (axis, order) in SUMS.items():
        cases[w] = (lambda t, f=sum_of(np, axis, order): np.ascontiguousarray(f(t)),
                    lambda jnp, axis=axis, order=order: sum_of(jnp, axis, order), (t,))
    for w in a.workload or WORKLOADS:
        if w not in cases:
            continue
        ref, jax_fn, args = cases[w]
        want = ref(*args)
        for system in a.system or ["numpy", "jax"]:
            if system == "numpy":
                report(w, system, timeit(lambda: ref(*args), a.runs))
            elif system == "jax":
                try:
                    import jax, jax.numpy as jnp
                except ImportError:
                    print("jax not installed", file=sys.stderr)
                    continue
                jargs = [jnp.asarray(v) for v in args]
                f = jax.jit(jax_fn(jnp))
                got = np.asarray(f(*jargs))
                if not np.allclose(got, want, rtol=1e-3, atol=1e-3):
                    print(f"{w} jax: mismatch against numpy", file=sys.stderr)
                report(w, system, timeit(lambda: f(*jargs).block_until_ready(), a.runs))


if __name__ == "__main__":
    main()
