"""numpy on the spike's two bodies, for orientation: median ns per element, one thread.

Run: OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python3 numpy_ref.py  (any Python with numpy)
"""
import time

import numpy as np


def median_ns(f, n, budget=2.0):
    f()
    t = time.perf_counter()
    f()
    one = max(time.perf_counter() - t, 1e-7)
    k = max(1, int(1e-3 / one))
    rounds = int(min(301, max(9, budget / (one * k))))
    v = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(k):
            f()
        v.append((time.perf_counter() - t) / k)
    v.sort()
    return v[len(v) // 2] * 1e9 / n


rng = np.random.default_rng(1)
for p in (12, 16, 20, 24):
    n = 1 << p
    x = rng.uniform(-1, 1, n).astype(np.float32)
    y = rng.uniform(-1, 1, n).astype(np.float32)
    d = np.empty_like(x)

    def l2():
        np.subtract(x, y, out=d)
        return np.dot(d, d)

    xe = rng.uniform(-4, 4, n).astype(np.float32)
    ex = np.empty_like(xe)

    def elu():
        np.exp(xe, out=ex)
        np.subtract(ex, 1, out=ex)
        np.multiply(ex, 0.5, out=ex)
        return np.where(xe > 0, xe, ex)

    print(f"2^{p}: numpy l2 (subtract into a buffer, dot) {median_ns(l2, n):.3f} ns/elem; "
          f"ELU (exp, -1, *0.5 in place, np.where) {median_ns(elu, n):.3f} ns/elem")
