"""weft's calls from Python against the same calls from Rust, JAX's and ONNX Runtime's (issue 42).

Each round times, in turn, per workload: `weft bench --json` (whole calls from Rust, fused), the
same `.weft` file loaded by the Python package and called from Python, JAX (jitted, resident
arrays, `block_until_ready`) and ONNX Runtime (`InferenceSession.run`, 2 threads); medians over
rounds of each round's median. Calls under 100 µs are timed in batches of consecutive calls
(each sample the mean of a batch), as `weft bench` does.

    python bench/python_calls.py [--rounds 3] [--runs 9] [--weft target/release/weft]

Needs the `weft` package installed (pip install ./python) in the Python running it; JAX and
ONNX Runtime are optional (../shared/peers/setup.sh installs them).
"""

import argparse
import json
import pathlib
import statistics
import subprocess
import time

import numpy as np

import weft as ng

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKLOADS = ["small", "chain", "softmax", "layernorm"]


def inputs_for(loaded, rng):
    return [rng.uniform(-1, 1, tuple(a.length for a in p.axes)).astype(p.dtype)
            for p in loaded.placeholders]


def timed(fn, runs):
    """Median seconds a call, batched so a sample lasts at least 100 µs."""
    fn()
    start = time.perf_counter()
    fn()
    one = time.perf_counter() - start
    batch = int(min(10_000, max(1, 1e-4 / max(one, 1e-9))))
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - start) / batch)
    return statistics.median(samples)


def rust_ms(weft, name, runs):
    out = subprocess.run([weft, "bench", str(ROOT / "bench/workloads" / f"{name}.weft"), "--json",
                          "--runs", str(runs), "--skip-interp"], capture_output=True, text=True,
                         check=True).stdout
    report = json.loads(out.strip().splitlines()[-1])
    return next(m["median_ms"] for m in report["modes"] if m["mode"] == "fused")


def jax_fn(name, arrays):
    import jax
    import jax.numpy as jnp
    fns = {"small": lambda x, y: x + y,
           "chain": lambda x, y, z, w: jnp.sqrt((x - y) ** 2 + (z * w) ** 2) * 0.5,
           "softmax": lambda a: jax.nn.softmax(a, axis=1),
           "layernorm": lambda a, g, b: (a - a.mean(1, keepdims=True))
           / jnp.sqrt(a.var(1, keepdims=True) + 1e-5) * g + b}
    f = jax.jit(fns[name])
    resident = [jax.device_put(a) for a in arrays]
    return lambda: f(*resident).block_until_ready()


def ort_fn(name, arrays):
    import onnxruntime as ort
    from onnx import TensorProto
    from onnx import helper as oh
    op = oh.make_node
    graphs = {"small": ([op("Add", ["i0", "i1"], ["out"])]),
              "chain": ([op("Sub", ["i0", "i1"], ["d"]), op("Mul", ["d", "d"], ["d2"]),
                         op("Mul", ["i2", "i3"], ["p"]), op("Mul", ["p", "p"], ["p2"]),
                         op("Add", ["d2", "p2"], ["s"]), op("Sqrt", ["s"], ["r"]),
                         op("Constant", [], ["half"], value_float=0.5),
                         op("Mul", ["r", "half"], ["out"])]),
              "softmax": ([op("Softmax", ["i0"], ["out"], axis=1)]),
              "layernorm": ([op("LayerNormalization", ["i0", "i1", "i2"], ["out"], axis=-1,
                                epsilon=1e-5)])}
    names = [f"i{i}" for i in range(len(arrays))]
    graph = oh.make_graph(graphs[name], "g",
                          [oh.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                           for n, a in zip(names, arrays)],
                          [oh.make_tensor_value_info("out", TensorProto.FLOAT, None)])
    model = oh.make_model(graph, opset_imports=[oh.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feeds = dict(zip(names, arrays))
    return lambda: sess.run(None, feeds)


def thread_rates(seconds=1.0):
    """Calls a second of 1, 2 and 8 Python threads calling one computation (the GIL released
    during each call): the l2 of N = 1024 (per-call overhead) and a 256 × 1024 row softmax
    (kernels split over weft's pool, and on one kernel thread a call), as
    benches/concurrent_calls.rs does from Rust."""
    import threading
    ng.reset_default_graph()
    n = ng.make_axis(length=1024, name="N")
    x, y = ng.placeholder([n]), ng.placeholder([n])
    l2 = ng.sum(ng.square(x - y), reduction_axes=[n])
    r, c = ng.make_axis(length=256, name="R"), ng.make_axis(length=1024, name="C")
    a = ng.placeholder([r, c])
    sm = ng.softmax(a, normalization_axes=[c])
    t = ng.make_transformer()
    rng = np.random.default_rng(1)
    cases = {"l2_1k": (t.computation(l2, x, y), [rng.uniform(-1, 1, 1024).astype(np.float32)
                                                   for _ in range(2)]),
             "softmax_256x1024": (t.computation(sm, a),
                                  [rng.uniform(-1, 1, (256, 1024)).astype(np.float32)])}
    # One kernel thread a call: the callers' threads are then the only parallelism.
    cases["softmax_256x1024, threads=1"] = (
        ng.make_transformer(threads=1).computation(sm, a), cases["softmax_256x1024"][1])
    rates = {}
    for name, (comp, arrays) in cases.items():
        for threads in (1, 2, 8):
            counts = [0] * threads
            stop = threading.Event()

            def work(i, comp=comp, arrays=arrays, counts=counts, stop=stop):
                while not stop.is_set():
                    comp(*arrays)
                    counts[i] += 1
            pool = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
            for th in pool:
                th.start()
            time.sleep(seconds)
            stop.set()
            for th in pool:
                th.join()
            rates[(name, threads)] = sum(counts) / seconds
    for name in cases:
        one = rates[(name, 1)]
        print(f"{name}: " + ", ".join(f"{k} threads {rates[(name, k)]:,.0f} calls/s "
                                       f"({rates[(name, k)] / one:.2f}x)" for k in (1, 2, 8)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--weft", default=str(ROOT / "target/release/weft"))
    ap.add_argument("--workload", action="append", choices=WORKLOADS)
    ap.add_argument("--threads", action="store_true",
                    help="instead: calls/s of 1, 2 and 8 Python threads on one computation")
    a = ap.parse_args()
    if a.threads:
        for _ in range(a.rounds):
            thread_rates()
        return
    rng = np.random.default_rng(0)
    systems = {}
    for name in a.workload or WORKLOADS:
        loaded = ng.load(ROOT / "bench/workloads" / f"{name}.weft")
        arrays = inputs_for(loaded, rng)
        comp = loaded.computation()
        fns = {"weft-python": lambda comp=comp, arrays=arrays: comp(*arrays)}
        for system, make in (("jax", jax_fn), ("ort", ort_fn)):
            try:
                fns[system] = make(name, arrays)
            except ImportError as e:
                print(f"{system} skipped: {e}")
        systems[name] = fns
    times = {}
    for r in range(a.rounds):
        for name, fns in systems.items():
            times.setdefault((name, "weft-rust"), []).append(rust_ms(a.weft, name, a.runs))
            for system, fn in fns.items():
                times.setdefault((name, system), []).append(timed(fn, a.runs) * 1e3)
    for name in systems:
        rust = statistics.median(times[(name, "weft-rust")])
        print(f"\n{name}\n  system          median ms   vs weft-rust")
        rows = [(s, statistics.median(v)) for (n, s), v in times.items() if n == name]
        for system, ms in sorted(rows, key=lambda x: x[1]):
            print(f"  {system:<14} {ms:11.6f}   {ms / rust:6.2f}x   "
                  f"(+{(ms - rust) * 1e3:.2f} µs)")


if __name__ == "__main__":
    main()
