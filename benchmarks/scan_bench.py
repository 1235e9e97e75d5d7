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

On the native backend the scan runs a third way, with GRAPHMODE_NATIVE_LOOPS=0: the op's
forward loops in Python around the body's native code, where the default is one C loop
around the same kernels (codegen/native_gen/loops.py); `Python loop/C loop` is that ratio.
Ratios are per round of the interleaved samples (median, min-max); `cpu` is the ratio of
the process's CPU time, which another process's load does not inflate.

Also the compile time of a recurrent cell in a fori_loop of 10, 1000 and 10000 steps: the
loop is one node, so the time should not depend on the step count.

The target: the scan's step time within 1.2x of the unrolled graph's (ratio `scan/unrolled
step`); the unrolled graph pays compile time that grows with T instead; a 1000-step
fori_loop compiles in under 0.3 s."""
from __future__ import annotations

import argparse
import os
import resource
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
from static import trace_cache  # noqa: E402


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


def _cpu_samples(fns: list, repeats: int) -> list[list[float]]:
    """CPU seconds (this process, every thread) per call of each fn, interleaved: on a shared
    machine the wall clock also counts the time other processes hold the cores."""
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for k, fn in enumerate(fns):
            t0 = time.process_time()
            fn()
            samples[k].append(time.process_time() - t0)
    return samples


def _versions(backend: str) -> tuple:
    """(name, function, GRAPHMODE_NATIVE_LOOPS while it is built): on the native backend the
    scan also runs with the C loops off (the op's forward loops in Python around the body's
    native code), the comparison of codegen/native_gen/loops.py."""
    out = [("scan", gru_scan, "1"), ("unrolled", gru_unrolled, "1")]
    if backend == "native":
        out.append(("scan, Python loop", gru_scan, "0"))
    return tuple(out)


def _asks_runner(fn, *args) -> bool:
    """Whether a call of fn runs a loop in Python (the op's forward asks static.control_flow
    for the body's runner; a C loop never does)."""
    import static.control_flow as cf  # noqa: PLC0415

    real, calls = cf.runner, []

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    cf.runner = counting
    try:
        fn(*args)
    finally:
        cf.runner = real
    return bool(calls)


def measure(backend: str, steps: int, batch: int, n_in: int, hid: int, repeats: int) -> list[dict]:
    _warm(backend)
    rng = np.random.default_rng(0)
    p = _params(rng, n_in, hid)
    h0 = eager.tensor(np.zeros((batch, hid), np.float32))
    xs = eager.tensor(rng.standard_normal((steps, batch, n_in)).astype(np.float32))
    rows = []
    versions = _versions(backend)
    names = [v[0] for v in versions]
    for mode in ("forward", "grad"):
        made = {}
        for name, run, loops in versions:
            os.environ["GRAPHMODE_NATIVE_LOOPS"] = loops
            # the post-trace cache keeps executables in memory by the traced graph, not by codegen's
            # settings: forgotten, so the scan with the C loops off builds its own module
            trace_cache._MEMORY.clear()
            try:
                fn = (static.compile(run, backend=backend) if mode == "forward"
                      else static.value_and_grad(loss_of(run), argnums=0, backend=backend))
                t0 = time.perf_counter()
                out = fn(p, h0, xs)
                compile_s = time.perf_counter() - t0
            finally:
                os.environ.pop("GRAPHMODE_NATIVE_LOOPS", None)
            graph = static.trace(run if mode == "forward" else loss_of(run), p, h0, xs)
            made[name] = (fn, compile_s, graph.count_nodes(), out)
        if len(versions) > 2:  # the two scans run different modules: only the second asks for a body's runner
            assert not _asks_runner(made["scan"][0], p, h0, xs) and _asks_runner(made[names[2]][0], p, h0, xs), \
                "the C loops were not on and off"
        # they agree
        for name in names[1:]:
            a, b = made["scan"][3], made[name][3]
            np.testing.assert_allclose(np.asarray(a[0].numpy()), np.asarray(b[0].numpy()), rtol=2e-4, atol=2e-5)
        fns = [lambda f=made[k][0]: f(p, h0, xs) for k in names]
        samples = sample_interleaved(fns, repeats=repeats, warmup=2)
        cpu = _cpu_samples(fns, repeats)
        med = [float(np.median(s)) for s in samples]
        med_cpu = [float(np.median(s)) for s in cpu]
        peaks = [_peak(f) for f in fns]
        for k, name in enumerate(names):
            rows.append({"backend": backend, "mode": mode, "version": name, "compile_s": made[name][1],
                         "graph_nodes": made[name][2], "step_us": med[k] / steps * 1e6, "call_ms": med[k] * 1e3,
                         "cpu_step_us": med_cpu[k] / steps * 1e6, "peak_mb": peaks[k] / 2 ** 20})
        ratio = [a / b for a, b in zip(samples[0], samples[1])]  # per round: drift hits both alike
        rows.append({"backend": backend, "mode": mode, "version": "scan/unrolled",
                     "compile_ratio": made["scan"][1] / made["unrolled"][1],
                     "scan/unrolled step": float(np.median(ratio)), "spread": (min(ratio), max(ratio)),
                     "cpu ratio": med_cpu[0] / med_cpu[1], "memory_ratio": peaks[0] / max(peaks[1], 1)})
        if len(names) > 2:
            ratio = [a / b for a, b in zip(samples[2], samples[0])]
            rows.append({"backend": backend, "mode": mode, "version": "Python loop/C loop",
                         "compile_ratio": made[names[2]][1] / made["scan"][1],
                         "scan/unrolled step": float(np.median(ratio)), "spread": (min(ratio), max(ratio)),
                         "cpu ratio": med_cpu[2] / med_cpu[0], "memory_ratio": peaks[2] / max(peaks[0], 1)})
    return rows


def fori_compile(backend: str, lengths: tuple, hid: int, repeats: int) -> list[dict]:
    """Compile time of a recurrent cell in a fori_loop of each length: the first call of a
    fresh compiled function (trace, passes, code generation, the C++ compile where native;
    the code cache is an empty directory, each length and round another graph) less the
    second call (the loop's run, which grows with the length). It should not depend on the
    length. Rounds interleave the lengths; the median is reported with its min-max."""
    _warm(backend)
    rng = np.random.default_rng(1)
    w = eager.tensor((rng.standard_normal((hid, hid)) / np.sqrt(hid)).astype(np.float32))
    h0 = eager.tensor(rng.standard_normal((8, hid)).astype(np.float32))
    times: dict = {n: [] for n in lengths}
    cpu: dict = {n: [] for n in lengths}
    runs: dict = {n: [] for n in lengths}

    def cpu_now() -> float:  # this process and the compilers it ran
        child = resource.getrusage(resource.RUSAGE_CHILDREN)
        return time.process_time() + child.ru_utime + child.ru_stime

    for r in range(-1, repeats):  # round -1 warms up the loop's own first-use costs
        for n in lengths:
            def run(w, h0, n=n, r=r):
                return static.fori_loop(0, n, lambda i, h: eager.tanh(h @ w) + 0.5 * h + r, h0)
            fn = static.compile(run, backend=backend)
            c0, t0 = cpu_now(), time.perf_counter()
            fn(w, h0)
            c1, t1 = cpu_now(), time.perf_counter()
            fn(w, h0)
            c2, t2 = cpu_now(), time.perf_counter()
            if r >= 0:
                times[n].append((t1 - t0) - (t2 - t1))
                cpu[n].append((c1 - c0) - (c2 - c1))
                runs[n].append(t2 - t1)
            if r < 0:
                break
    return [{"backend": backend, "steps": n, "compile_s": float(np.median(t)), "min_s": min(t), "max_s": max(t),
             "compile_cpu_s": float(np.median(cpu[n])), "run_s": float(np.median(runs[n]))} for n, t in times.items()]


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
    ap.add_argument("--fori-only", action="store_true", help="only the fori_loop compile times")
    args = ap.parse_args(argv)
    steps, batch, hid, n_in, repeats = args.steps, args.batch, args.hidden, args.inputs, 7
    if args.quick:
        steps, batch, hid, n_in, repeats = 16, 4, 8, 4, 2
    os.environ.setdefault("GRAPHMODE_CACHE_DIR", tempfile.mkdtemp(prefix="scan_bench_"))
    rows, fori = [], []
    lengths = (10, 100, 1000) if args.quick else (10, 1000, 10000)
    for backend in args.backends.split(","):
        if backend == "native" and not _native_ok():
            print("native: no C++ compiler found; skipped")
            continue
        if not args.fori_only:
            rows += measure(backend, steps, batch, n_in, hid, repeats)
        fori += fori_compile(backend, lengths, 32 if args.quick else hid, 1 if args.quick else 3)
    print(f"GRU, {steps} steps, batch {batch}, hidden {hid}, inputs {n_in} ({machine_info()['vector_isa']}; "
          "times from a shared machine: noisy)")
    if rows:
        body = [r for r in rows if "compile_s" in r]
        print(format_table(["backend", "mode", "version", "compile s", "nodes", "us/step", "cpu us/step", "peak MB"],
                           [[r["backend"], r["mode"], r["version"], f"{r['compile_s']:.3f}", r["graph_nodes"],
                             f"{r['step_us']:.1f}", f"{r['cpu_step_us']:.1f}", f"{r['peak_mb']:.1f}"] for r in body]))
        ratios = [r for r in rows if "compile_s" not in r]
        print(format_table(["backend", "mode", "ratio", "step (median, min-max)", "cpu", "compile ratio",
                            "memory ratio"],
                           [[r["backend"], r["mode"], r["version"],
                             f"{r['scan/unrolled step']:.2f} ({r['spread'][0]:.2f}-{r['spread'][1]:.2f})",
                             f"{r['cpu ratio']:.2f}", f"{r['compile_ratio']:.3f}", f"{r['memory_ratio']:.2f}"]
                            for r in ratios]))
    print("fori_loop compile time by step count (first call less the second, empty code cache; median of "
          "rounds, min-max):")
    print(format_table(["backend", "steps", "compile s", "min-max", "cpu s (with the compiler's)", "run s"],
                       [[r["backend"], r["steps"], f"{r['compile_s']:.3f}", f"{r['min_s']:.3f}-{r['max_s']:.3f}",
                         f"{r['compile_cpu_s']:.3f}", f"{r['run_s']:.4f}"] for r in fori]))
    if args.json:
        write_json(args.json, {"steps": steps, "batch": batch, "hidden": hid, "rows": rows, "fori_compile": fori})
    return 0


if __name__ == "__main__":
    sys.exit(main())
