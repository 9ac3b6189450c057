"""The binding capacity from Python (docs/benchmarks.md, "Call-time lengths from Python"):
softmax calls over 16 batch sizes in turn, with the default capacity (8) and with 16,
interleaved; run with the venv test.sh makes: target/python-venv/bin/python bench/binding_capacity.py"""
import time, statistics, numpy as np, weft as ng, weft.transformers as ngt
N = ng.make_axis(name="N"); C = ng.make_axis(length=64, name="C")
x = ng.placeholder([N, C])
y = ng.softmax(x, normalization_axes=[C])
t = ngt.make_transformer()
small = t.computation(y, x)            # default capacity (8)
big = t.computation(y, x); big.binding_capacity = 16
sizes = list(range(1, 17))
arrays = {n: np.random.default_rng(n).standard_normal((n, 64)).astype(np.float32) for n in sizes}
for f in (small, big):
    for n in sizes: f(arrays[n])
times = {"capacity 8": [], "capacity 16": []}
for r in range(5):
    for name, f in (("capacity 8", small), ("capacity 16", big)):
        start = time.perf_counter()
        for n in sizes: f(arrays[n])
        times[name].append((time.perf_counter() - start) / len(sizes) * 1e3)
for k, v in times.items():
    print(f"{k}: median {statistics.median(v):.3f} ms a call over 16 batch sizes in turn")
print("compilations", small.compilations, big.compilations)
