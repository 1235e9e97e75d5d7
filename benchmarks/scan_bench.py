"""A recurrent workload with `static.scan` against the same loop unrolled: a GRU over T steps.

Measured, per backend (numpy, and native where a compiler is found):
- compile time: the first call of a fresh compiled function (trace, passes, code
  generation; the body of the scan is compiled at that first call too). The code cache is
  pointed at an empty directory, so nothing is reused from earlier runs;
- step time: median seconds of a call after warm-up, divided by T (interleaved runs);
- memory: the peak of Python's traced allocations (tracemalloc, which sees NumPy's
  buffers) during one call, after warm-up;
- graph size: nodes in the traced graph (the scan's stays one loop node whatever T is).
Both a forward pass and a gradient (static.value_and_grad) are timed.

    python benchmarks/scan_bench.py [--quick] [--steps 256] [--json scan_bench.json]

The target: the scan's step time within 1.2x of the unrolled graph's (ratio `scan/unrolled
step`); the unrolled graph pays compile time that grows with T instead."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from common import format_table, machine_info, sample_interleaved, write_json  # noqa: E402

import eager  # noqa: E402
import static  # noqa: E402


def gru_cell(p: dict, h, x):
    """One GRU step (PyTorch's gate order r, z, n)."""
    gi = x @ p["w_ih"] + p["b_ih"]
    gh = h @ p["w_hh"] + p["b_hh"]
    hid = h.shape[-1]
    r = eager.sigmoid(gi[:, :hid] + gh[:, :hid])
    z = eager.sigmoid(gi[:, hid:2 * hid] + gh[:, hid:2 * hid])
    n = eager.tanh(gi[:, 2 * hid:] + r * gh[:, 2 * hid:])
    return (1 - z) * n + z * h


def gru_scan(p: dict, h0, xs):
    def step(h, x):
        h = gru_cell(p, h, x)
        return h, h
    return static.scan(step, h0, xs)


def gru_unrolled(p: dict, h0, xs):
    h, ys = h0, []
    for t in range(xs.shape[0]):
        h = gru_cell(p, h, xs[t])
        ys.append(h)
    return h, eager.stack(ys)


def loss_of(run):
    def loss(p, h0, xs):
        h, ys = run(p, h0, xs)
        return (ys * ys).mean() + h.sum()
    return loss


def _params(rng: np.random.Generator, n_in: int, hid: int) -> dict:
    s = 1.0 / np.sqrt(hid)
    return {"w_ih": eager.tensor(rng.uniform(-s, s, (n_in, 3 * hid)).astype(np.float32)),
            "w_hh": eager.tensor(rng.uniform(-s, s, (hid, 3 * hid)).astype(np.float32)),
            "b_ih": eager.tensor(rng.uniform(-s, s, 3 * hid).astype(np.float32)),
            "b_hh": eager.tensor(rng.uniform(-s, s, 3 * hid).astype(np.float32))}


def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _warm(backend: str) -> None:
    """One small unrelated compile first, so that neither version's compile time counts the
    process's first-use costs (imports, the code generator's start)."""
    static.compile(lambda x: eager.tanh(x @ x) + 1, backend=backend)(eager.ones(3, 3))


def measure(backend: str, steps: int, batch: int, n_in: int, hid: int, repeats: int) -> list[dict]:
    _warm(backend)
    rng = np.random.default_rng(0)
    p = _params(rng, n_in, hid)
    h0 = eager.tensor(np.zeros((batch, hid), np.float32))
    xs = eager.tensor(rng.standard_normal((steps, batch, n_in)).astype(np.float32))
    rows = []
    for mode in ("forward", "grad"):
        made = {}
        for name, run in (("scan", gru_scan), ("unrolled", gru_unrolled)):
            fn = (static.compile(run, backend=backend) if mode == "forward"
                  else static.value_and_grad(loss_of(run), argnums=0, backend=backend))
            t0 = time.perf_counter()
            out = fn(p, h0, xs)
            compile_s = time.perf_counter() - t0
            graph = static.trace(run if mode == "forward" else loss_of(run), p, h0, xs)
            made[name] = (fn, compile_s, graph.count_nodes(), out)
        # the two agree
        a, b = made["scan"][3], made["unrolled"][3]
        a0 = a[0] if mode == "forward" else a[0]
        b0 = b[0] if mode == "forward" else b[0]
        np.testing.assert_allclose(np.asarray(a0.numpy()), np.asarray(b0.numpy()), rtol=2e-4, atol=2e-5)
        fns = [lambda f=made[k][0]: f(p, h0, xs) for k in ("scan", "unrolled")]
        samples = sample_interleaved(fns, repeats=repeats, warmup=2)
        med = [float(np.median(s)) for s in samples]
        peaks = [_peak(f) for f in fns]
        for k, name in enumerate(("scan", "unrolled")):
            rows.append({"backend": backend, "mode": mode, "version": name, "compile_s": made[name][1],
                         "graph_nodes": made[name][2], "step_us": med[k] / steps * 1e6, "call_ms": med[k] * 1e3,
                         "peak_mb": peaks[k] / 2 ** 20})
        rows.append({"backend": backend, "mode": mode, "version": "scan/unrolled",
                     "compile_ratio": made["scan"][1] / made["unrolled"][1],
                     "scan/unrolled step": med[0] / med[1], "memory_ratio": peaks[0] / max(peaks[1], 1)})
    return rows


def _native_ok() -> bool:
    try:
        static.compile(lambda x: x + 1, backend="native")(eager.ones(2))
    except Exception:  # noqa: BLE001 - no compiler: the native rows are left out
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes: checks that the script runs")
    ap.add_argument("--steps", type=int, default=256)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--inputs", type=int, default=64)
    ap.add_argument("--backends", default="numpy,native")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    steps, batch, hid, n_in, repeats = args.steps, args.batch, args.hidden, args.inputs, 7
    if args.quick:
        steps, batch, hid, n_in, repeats = 16, 4, 8, 4, 2
    os.environ.setdefault("GRAPHMODE_CACHE_DIR", tempfile.mkdtemp(prefix="scan_bench_"))
    rows = []
    for backend in args.backends.split(","):
        if backend == "native" and not _native_ok():
            print("native: no C++ compiler found; skipped")
            continue
        rows += measure(backend, steps, batch, n_in, hid, repeats)
    body = [r for r in rows if r["version"] != "scan/unrolled"]
    print(f"GRU, {steps} steps, batch {batch}, hidden {hid}, inputs {n_in} ({machine_info()['vector_isa']}; "
          "times from a shared machine: noisy)")
    print(format_table(["backend", "mode", "version", "compile s", "nodes", "us/step", "peak MB"],
                       [[r["backend"], r["mode"], r["version"], f"{r['compile_s']:.3f}", r["graph_nodes"],
                         f"{r['step_us']:.1f}", f"{r['peak_mb']:.1f}"] for r in body]))
    ratios = [r for r in rows if r["version"] == "scan/unrolled"]
    print(format_table(["backend", "mode", "scan/unrolled step", "compile ratio", "memory ratio"],
                       [[r["backend"], r["mode"], f"{r['scan/unrolled step']:.2f}", f"{r['compile_ratio']:.3f}",
                         f"{r['memory_ratio']:.2f}"] for r in ratios]))
    if args.json:
        write_json(args.json, {"steps": steps, "batch": batch, "hidden": hid, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
