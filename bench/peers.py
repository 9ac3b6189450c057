#!/usr/bin/env python3
"""weft against its peers on the public workloads, side by side in one interleaved run.

Each round times, in turn: the STREAM bandwidth probe; then per workload `weft bench --json`
(whole `call_into`s of the fused and unfused JIT over borrowed inputs, the way a host calls)
and every installed peer through ../shared/peers/peers.py (numpy, numexpr, jax, torch,
inductor, iree, iree-host, ort, tinygrad: its docstring says what each timed call covers), or,
for the workloads it does not define (bcast_exp, the schedules, the orientation rows, the
cache-resident rows), through bench/peers_local.py (numpy, jax, torch, inductor; ort for the
cache-resident rows).
Rounds interleave systems so a shared machine's drift lands on all of them; the figure of a
(workload, system) is the median over rounds of each round's median.

Prints a table per workload: median ms, the bandwidth floor (bytes that must move / STREAM
GB/s of the same rounds: copy for read+write mixes, read for reductions), each system's
ratio to the floor, and weft fused's speed-up over each system; for the orientation group
(--workload orientation, issue 41), each row's ratio to its twin in the same system (an outer
axis against the inner one, l2 as a dot against l2 as a sum). Also writes JSON lines with
--json. Not run by CI (it needs the peers' venv: ../shared/peers/setup.sh --torch --more, or
`pip install -r bench/requirements.txt`, and minutes of a quiet machine).

    python3 bench/peers.py [--rounds 3] [--runs 11] [--workload chain ...] [--system jax ...]
                           [--rows 2048 | --rows 4,64,256] [--cranelift-lanes] [--ymm-leaves]

The cache-resident rows (--workload cache, issue 61): chain_c, l2_c, softmax_c, layernorm_c are
chain, l2, softmax and layernorm at sizes whose inputs each take at most a quarter of L3 (4 MiB
an input): chain and l2 at N = 2^20 instead of 2^24, softmax and layernorm at [1024, 1024]
instead of [4096, 4096]. At the public sizes (64 MiB an input) every call streams from DRAM and
all systems crowd against the STREAM floor; on a machine whose L3 holds the inputs from call to
call (16 MiB on the machine they were added on), DRAM no longer decides, instruction throughput
does: how many instructions a system spends per element (vector width, fused or not, passes over
the data, dispatch overhead).
weft times bench/workloads/{chain,l2,softmax,layernorm}.weft with their axis lengths rewritten
to these sizes (a temporary file); the peers (numpy, jax, torch, inductor, ort) run the same math
in bench/peers_local.py. No bandwidth floor is printed for them: DRAM does not bound them.

`--rows N` runs the orientation rows with R = N (2048: 4 MiB a matrix, a cache-resident size,
issue 61), weft and the peers alike; a list (`--rows 4,64,256`, issue 61's short kept axes)
runs each row at each R in the same interleaved rounds, a table per row and R; `--cranelift-lanes` also times weft's fused plan without
assembled leaf loops, as `weft-fused-cranelift-lanes`, and `--ymm-leaves` with its leaf loops
8 lanes wide on an AVX-512F host, as `weft-fused-ymm-leaves` (16 lanes is the default there).
"""
import argparse, json, os, statistics, subprocess, sys, tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MIB64 = 64 * 2**20
# Bytes that must move, and which STREAM figure bounds the workload (../shared/peers/README.md).
WORKLOADS = {
    "chain": (5 * MIB64, "copy_gbs"),
    "l2": (2 * MIB64, "read_gbs"),
    "softmax": (2 * MIB64, "copy_gbs"),
    "layernorm": (2 * MIB64, "copy_gbs"),
    "small": (None, None),
    "compile": (None, None),  # the layernorm graph, graph to callable (weft bench --compiles)
    "mlp": (None, None),
    "attention": (None, None),
    "dense_gelu": (None, None),
    "train_step": (None, None),  # one optimizer step; its assigns update the state in place
    "bcast_exp": (None, None),  # exp inside a reduction: compute-bound (bench/peers_local.py)
    "conv": (None, None),  # 3×3, 64 → 64 channels, 32 images of 56 × 56, bias and relu: 7.4 GFLOP
}
# Issue 63's ONNX models (bench/resnet50.py, exported once into the peers' venv's cache): weft
# imports the file; ort runs the same file, torch and torch.compile the module it came from
# (bench/peers_onnx.py). Batch 1 and 32 of 3 × 224 × 224: 8.2 and 262 GFLOP.
MODELS = {"resnet50_b1": ("resnet50", 1), "resnet50_b32": ("resnet50", 32)}
WORKLOADS.update({w: (None, None) for w in MODELS})
# Issue 12's schedule rows (bench/workloads/schedules): each sum reads a 256³ f32 tensor
# [B, M, A] once and writes 256 KiB; the transpose reads and writes 64 MiB.
SCHEDULES = {f"sum_{r}_{o}": (MIB64, "read_gbs")
             for r, o in [("A", "BM"), ("A", "MB"), ("B", "AM"), ("B", "MA"), ("M", "AB"), ("M", "BA")]}
SCHEDULES["transpose"] = (2 * MIB64, "copy_gbs")
WORKLOADS.update(SCHEDULES)
# Issue 41's orientation rows (bench/workloads/orientation): each reduction over the innermost
# axis (NAME_inner: x[R, C], reduced over C) and over the outer one (NAME_outer: the same values
# stored as [C, R], reduced over C), R = 32768, C = 512: 64 MiB per matrix, twice this machine's
# 32 MiB L3, so that calls stream from memory and the STREAM floor applies (a 16 MiB input
# stays in L3: numpy summed its squares at 33 GB/s); expxy sums exp(x·y) of x[I], y[J],
# I = J = 4096, over J or I (16.8 M exps, compute-bound); l2 sums the squares of t[R, C]
# written with square and sum or as dot(transpose(t), t).
ORIENTATION = {}
for name, floor in [("softmax", (2 * MIB64, "copy_gbs")), ("layernorm", (2 * MIB64, "copy_gbs")),
                    ("lse", (MIB64, "read_gbs")), ("expxy", (None, None))]:
    ORIENTATION[f"{name}_inner"] = ORIENTATION[f"{name}_outer"] = floor
ORIENTATION["l2_sum"] = ORIENTATION["l2_dot"] = (MIB64, "read_gbs")
# Each orientation row's twin: its ratio to the twin's median (same system) is printed beside it.
TWINS = {w: w.replace("_outer", "_inner") for w in ORIENTATION if w.endswith("_outer")}
TWINS["l2_dot"] = "l2_sum"
WORKLOADS.update(ORIENTATION)
# Issue 61's cache-resident rows: each a public workload's graph with its axis lengths rewritten
# (bench/workloads/<graph>.weft, each (old, new) replaced in its text), 4 MiB an input, a quarter
# of a 16 MiB L3: calls run from cache, so no STREAM floor (None, None) applies.
CACHE = {"chain_c": ("chain", [("axis N = 16777216", "axis N = 1048576")]),
         "l2_c": ("l2", [("axis N = 16777216", "axis N = 1048576")]),
         "softmax_c": ("softmax", [("axis R = 4096", "axis R = 1024"), ("axis C = 4096", "axis C = 1024")]),
         "layernorm_c": ("layernorm", [("axis R = 4096", "axis R = 1024"), ("axis C = 4096", "axis C = 1024")])}
WORKLOADS.update({w: (None, None) for w in CACHE})
GROUPS = {"schedules": list(SCHEDULES), "orientation": list(ORIENTATION),  # --workload GROUP: all of it
          "cache": list(CACHE), "models": list(MODELS)}
LOCAL = {"bcast_exp", *SCHEDULES, *ORIENTATION, *CACHE}  # timed by bench/peers_local.py
FOLDERS = {**{w: "schedules" for w in SCHEDULES}, **{w: "orientation" for w in ORIENTATION}}
EXTRA_MODES = []  # weft bench flags for extra fused modes: --cranelift-lanes, --ymm-leaves
ALL_SYSTEMS = ["numpy", "numexpr", "jax", "torch", "inductor", "iree", "ort", "tinygrad"]


def run_json_lines(cmd, env=None):
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.stderr.write(f"{' '.join(map(str, cmd))} failed:\n{out.stderr}\n")
        return []
    if out.stderr.strip():
        sys.stderr.write(out.stderr)
    return [json.loads(l) for l in out.stdout.splitlines() if l.startswith("{")]


def stream(venv):
    exe = Path(venv) / "stream"
    if not exe.exists():
        return None
    env = dict(os.environ, OMP_NUM_THREADS=str(os.cpu_count() or 2))
    lines = run_json_lines([str(exe)], env)
    return lines[0] if lines else None


def cache_graph(workload):
    """The .weft file of cache-resident row `workload`: its public graph's text with the axis
    lengths rewritten, written to a temporary file (each length must be found: a graph edited
    since would otherwise be timed at its public size)."""
    graph, subs = CACHE[workload]
    text = (ROOT / "bench/workloads" / f"{graph}.weft").read_text()
    for old, new in subs:
        if old not in text:
            raise SystemExit(f"bench/workloads/{graph}.weft has no `{old}` to rewrite for {workload}")
        text = text.replace(old, new)
    path = Path(tempfile.gettempdir()) / f"weft-peers-{workload}.weft"
    path.write_text(f"# {workload} (bench/peers.py): bench/workloads/{graph}.weft, cache-resident\n{text}")
    return path


def model_file(venv, name):
    """The exported `name`.onnx in the peers' venv's cache, exported by bench/`name`.py if absent."""
    path = Path(venv) / "models" / f"{name}.onnx"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(Path(venv) / "bin/python"), str(ROOT / "bench" / f"{name}.py"), str(path)],
                       check=True, capture_output=True)
    return path


def weft_bench(weft, workload, runs, rows=None, venv=None):
    if workload in MODELS:
        name, batch = MODELS[workload]
        lines = run_json_lines([weft, "bench", str(model_file(venv, name)), "--bind", f"batch={batch}",
                                "--json", "--skip-interp", "--runs", str(runs), "--warmup", "1"])
        return {f"weft-{m['mode']}": m["median_ms"] for m in lines[0]["modes"]} if lines else {}
    if workload == "compile":
        # The layernorm graph compiled fused, graph to callable, `runs` times: the median.
        lines = run_json_lines([weft, "bench", str(ROOT / "bench/workloads/layernorm.weft"),
                                "--json", "--skip-interp", "--runs", "1", "--warmup", "1",
                                "--compiles", str(runs)])
        return {"weft-fused": lines[0]["compile_ms"]["whole_median"]} if lines else {}
    folder = ROOT / "bench/workloads" / FOLDERS.get(workload, "")
    path = folder / f"{workload}.weft"
    if rows and workload in ORIENTATION:
        # The same graph with R rows: its text with the axis's length replaced.
        text = path.read_text().replace("axis R = 32768", f"axis R = {rows}")
        path = Path(tempfile.gettempdir()) / f"weft-peers-{workload}-{rows}.weft"
        path.write_text(text)
    if workload in CACHE:
        path = cache_graph(workload)
    lines = run_json_lines([weft, "bench", str(path),
                            "--json", "--skip-interp", "--runs", str(runs), "--warmup", "2",
                            *EXTRA_MODES])
    if not lines:
        return {}
    return {f"weft-{m['mode']}": m["median_ms"] for m in lines[0]["modes"]}


def peers(python, script, workload, systems, runs, rows=None, venv=None):
    cmd = [python, str(script), "--workload", workload, "--runs", str(runs)]
    if workload in MODELS:
        cmd += ["--model", str(model_file(venv, MODELS[workload][0]))]
    if rows and workload in ORIENTATION:
        cmd += ["--rows", str(rows)]
    for s in systems:
        cmd += ["--system", s]
    return {l["system"]: l["median_ms"] for l in run_json_lines(cmd)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=11, help="timed calls per system per round")
    ap.add_argument("--workload", action="append",
                    help=" ".join([*WORKLOADS, *GROUPS]) + " (groups: schedules, orientation, cache = "
                    + " ".join(CACHE) + "; default: every workload)")
    ap.add_argument("--system", action="append", help=" ".join(ALL_SYSTEMS) + " (default: all installed)")
    ap.add_argument("--venv", default=os.environ.get("WEFT_PEERS_VENV", str(Path.home() / ".cache/weft-peers")))
    ap.add_argument("--peers", default=str(ROOT.parent / "shared/peers/peers.py"), help="the peers' timing script")
    ap.add_argument("--weft", default=str(ROOT / "target/release/weft"), help="a release build of the weft CLI")
    ap.add_argument("--json", action="store_true", help="also print every round's figures as JSON lines")
    ap.add_argument("--rows", help="R of the orientation rows, or a comma-separated list of them (default "
                    "their 32768: 64 MiB a matrix; 2048 makes each 4 MiB, cache-resident; 4,64,256 the short "
                    "kept axes); other workloads keep their sizes")
    ap.add_argument("--cranelift-lanes", action="store_true",
                    help="also time weft fused without assembled leaf loops (weft bench --cranelift-lanes)")
    ap.add_argument("--ymm-leaves", action="store_true",
                    help="also time weft fused with 8-lane leaf loops on an AVX-512F host (weft bench --ymm-leaves)")
    a = ap.parse_args()
    EXTRA_MODES.extend(f for f, on in [("--cranelift-lanes", a.cranelift_lanes), ("--ymm-leaves", a.ymm_leaves)] if on)
    workloads = [w for g in a.workload or list(WORKLOADS) for w in GROUPS.get(g, [g])]
    if unknown := [w for w in workloads if w not in WORKLOADS]:
        sys.exit(f"unknown workload {unknown[0]}: one of {' '.join([*WORKLOADS, *GROUPS])}")
    try:
        row_counts = [int(r) for r in a.rows.split(",")] if a.rows else [None]
    except ValueError:
        sys.exit(f"--rows {a.rows}: positive integers separated by commas")
    if any(r is not None and r < 1 for r in row_counts):
        sys.exit(f"--rows {a.rows}: positive integers separated by commas")
    # (workload, R): each orientation row at each R, every other workload once.
    items = [(w, r) for w in workloads for r in (row_counts if w in ORIENTATION else [None])]
    systems = a.system or ALL_SYSTEMS
    python = str(Path(a.venv) / "bin/python")
    if not Path(a.weft).exists():
        sys.exit(f"no weft binary at {a.weft}: cargo build --release")
    times = {}  # ((workload, R), system) -> [per-round medians]
    bandwidth = []  # per-round STREAM figures
    for r in range(a.rounds):
        s = stream(a.venv)
        if s:
            bandwidth.append(s)
        for w, rows in items:
            # One process per system, in an order rotated every round: a system that leaves
            # the machine busy (freeing gigabytes, threads winding down) slows whichever runs
            # next, so no system always follows the same one.
            runners = [lambda w=w, rows=rows: weft_bench(a.weft, w, a.runs, rows, a.venv)]
            script = (ROOT / "bench/peers_onnx.py" if w in MODELS
                      else ROOT / "bench/peers_local.py" if w in LOCAL else Path(a.peers))
            if Path(python).exists() and script.exists():
                model_systems = [s for s in systems if s in ("ort", "torch", "inductor")]
                runners += [lambda w=w, s=s, rows=rows: peers(python, script, w, [s], a.runs, rows, a.venv)
                            for s in (model_systems if w in MODELS else systems)]
            k = r % len(runners)
            figures = {}
            for run in runners[k:] + runners[:k]:
                figures.update(run())
            for system, ms in figures.items():
                times.setdefault(((w, rows), system), []).append(ms)
                if a.json:
                    print(json.dumps({"round": r, "workload": w, "rows": rows, "system": system,
                                      "median_ms": ms}), flush=True)
    gbs = {k: statistics.median(b[k] for b in bandwidth) for k in ("copy_gbs", "read_gbs")} if bandwidth else {}
    if gbs:
        print(f"STREAM over {len(bandwidth)} rounds: copy {gbs['copy_gbs']:.1f} GB/s, read {gbs['read_gbs']:.1f} GB/s")
    for w, r_ in items:
        key = (w, r_)
        rows = sorted(((statistics.median(v), s) for (kk, s), v in times.items() if kk == key))
        if not rows:
            continue
        nbytes, bound = WORKLOADS.get(w, (None, None))
        if nbytes and r_:
            nbytes = nbytes * r_ // 32768
        floor = nbytes / (gbs[bound] * 1e9) * 1e3 if nbytes and bound in gbs else None
        fused = statistics.median(times[(key, "weft-fused")]) if (key, "weft-fused") in times else None
        label = w + (f" (R = {r_})" if r_ and len(row_counts) > 1 else "")
        print(f"\n{label}" + (f"  (floor {floor:.2f} ms)" if floor else ""))
        twin = TWINS.get(w)
        print(f"  {'system':<14}{'median ms':>11}{'x floor':>9}{'weft faster':>13}"
              + (f"  x {twin} (same system)" if twin else ""))
        for ms, s in rows:
            xf = f"{ms / floor:.2f}" if floor else "-"
            sp = f"{ms / fused:.2f}x" if fused else "-"
            xt = f"{ms / statistics.median(times[((twin, r_), s)]):.2f}" if ((twin, r_), s) in times else "-"
            print(f"  {s:<14}{ms:>11.4f}{xf:>9}{sp:>13}" + (f"  {xt:>6}" if twin else ""))


if __name__ == "__main__":
    main()
