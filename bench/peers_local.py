#!/usr/bin/env python3
"""Peers for the workloads of bench/workloads that ../shared/peers/peers.py does not define, with
its command line and its JSON lines, so bench/peers.py runs them the same way.

    bcast_exp: out[i] = Σ_j exp(x[i] − y[j]), x, y: f32[4096] each — a broadcast exp inside a
               reduction (issue 12); 16.8 M exps, no memory traffic to speak of.

numpy and JAX (jitted, `block_until_ready`). JAX is checked once against numpy (allclose rtol
1e-3) before timing; a mismatch is printed on stderr.
"""
import argparse, json, statistics, sys, time

WORKLOADS = ["bcast_exp"]


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
    ref = {"bcast_exp": lambda: np.exp(x[:, None] - y[None, :]).sum(axis=1)}
    for w in a.workload or WORKLOADS:
        if w not in ref:
            continue
        want = ref[w]()
        for system in a.system or ["numpy", "jax"]:
            if system == "numpy":
                report(w, system, timeit(ref[w], a.runs))
            elif system == "jax":
                try:
                    import jax, jax.numpy as jnp
                except ImportError:
                    print("jax not installed", file=sys.stderr)
                    continue
                jx, jy = jnp.asarray(x), jnp.asarray(y)
                f = jax.jit(lambda x, y: jnp.sum(jnp.exp(x[:, None] - y[None, :]), axis=1))
                got = np.asarray(f(jx, jy))
                if not np.allclose(got, want, rtol=1e-3):
                    print(f"{w} jax: mismatch against numpy", file=sys.stderr)
                report(w, system, timeit(lambda: f(jx, jy).block_until_ready(), a.runs))


if __name__ == "__main__":
    main()
