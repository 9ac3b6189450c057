#!/usr/bin/env python3
"""Peers for the ONNX model workloads of bench/peers.py, with its command line and JSON lines:

    resnet50_b1, resnet50_b32: bench/resnet50.py's ResNet-50 on a batch of 1 or 32 images of
        3 × 224 × 224 (N(0, 1) inputs, seed 0).

Systems: ort (ONNX Runtime, CPU execution provider, 2 intra-op threads, all graph optimizations,
on the same exported file weft times), torch (eager, `torch.no_grad`), inductor (torch.compile of
the same module, first calls untimed). Each is checked once against ort (allclose rtol 1e-3,
atol 1e-3) before timing; a mismatch is printed on stderr.

    python3 bench/peers_onnx.py --workload resnet50_b1 --system ort --runs 5 --model PATH
"""
import argparse, json, statistics, sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers_local import timeit  # noqa: E402 — the same timing as the other local peers
WORKLOADS = {"resnet50_b1": 1, "resnet50_b32": 32}
SYSTEMS = ["ort", "torch", "inductor"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", action="append", help=" ".join(WORKLOADS))
    ap.add_argument("--system", action="append", help=" ".join(SYSTEMS))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--model", required=True, help="the exported .onnx file (bench/resnet50.py)")
    ap.add_argument("--rows", type=int, help="ignored (bench/peers.py passes it to every script)")
    a = ap.parse_args()
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    for w in a.workload or list(WORKLOADS):
        x = np.random.default_rng(0).standard_normal((WORKLOADS[w], 3, 224, 224)).astype(np.float32)
        want = sess.run(None, {"image": x})[0]
        for system in a.system or SYSTEMS:
            if system == "ort":
                f = lambda: sess.run(None, {"image": x})
            else:
                import torch
                import resnet50
                m = resnet50.model()
                if system == "inductor":
                    m = torch.compile(m)
                tx = torch.from_numpy(x)
                def f(m=m, tx=tx):
                    with torch.no_grad():
                        return m(tx)
                got = f().numpy()
                if not np.allclose(got, want, rtol=1e-3, atol=1e-3):
                    print(f"{w} {system}: mismatch against ort", file=sys.stderr)
            ts = timeit(f, a.runs)
            print(json.dumps({"workload": w, "system": system,
                              "median_ms": round(statistics.median(ts) * 1e3, 4),
                              "min_ms": round(min(ts) * 1e3, 4), "max_ms": round(max(ts) * 1e3, 4),
                              "runs": len(ts)}), flush=True)


if __name__ == "__main__":
    main()
