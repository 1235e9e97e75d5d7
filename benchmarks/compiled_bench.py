"""Compiled (generated NumPy code) vs eager vs hand-written NumPy on W1-W4 (design.md).

    python benchmarks/compiled_bench.py [--quick] [--json out.json]

Every workload runs forward + backward (W3 also the SGD update) in each of: the compiled
function (static, backend="numpy", all passes), the same without fusion (opt_level=1),
eager autograd, and NumPy written by hand with the gradient derived by hand. Runs are
interleaved after a warm-up; the table shows medians and the ratios compiled / hand-written
measured in this run (absolute times on shared machines are noise). Compile time of W3
is measured in fresh processes: cold (empty cache directory) and from the disk cache.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples" / "workloads"))

import w1_seed  # noqa: E402
import w2_gelu  # noqa: E402
import w4_scalar  # noqa: E402
from common import steady_malloc  # noqa: E402
from w3_mlp import mlp_loss  # noqa: E402

import codegen  # noqa: E402
import eager  # noqa: E402
import static  # noqa: E402

F32 = np.float32


# -- the workloads, as eager/static see them: their one copy is examples/workloads/ ---------
w1 = w1_seed.seed_loss
w2 = w2_gelu.gelu_loss
w3_loss = mlp_loss
w4 = w4_scalar.scalar_chain  # 100 steps by default, as design.md's W4


def w3_step(X, Y, W1, b1, W2, b2):
    loss, grads = static.value_and_grad(w3_loss, argnums=(2, 3, 4, 5))(X, Y, W1, b1, W2, b2)
    return loss, tuple(p - 0.1 * g for p, g in zip((W1, b1, W2, b2), grads))


# -- hand-written NumPy, gradients derived by hand ---------------------------------------------
def w1_numpy(a, w1, w2, w3, w4):
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    loss = (10 - d).sum()
    return loss, -(w3 * w1 + w4 * w2), -(w3 * a), -(w4 * a), -b, -c


def w2_numpy(x, w):
    t = np.tanh(0.7978845608 * (x + 0.044715 * x ** 3))
    y = 0.5 * x * (1 + t)
    loss = (y * w).sum()
    dt = w * 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x)
    return loss, w * 0.5 * (1 + t) + dt, y


def w2_numpy_cubed(x, w):
    """w2_numpy with x*x*x for x**3: powf's general path is slow for negative x."""
    t = np.tanh(0.7978845608 * (x + 0.044715 * (x * x * x)))
    y = 0.5 * x * (1 + t)
    loss = (y * w).sum()
    dt = w * 0.5 * x * (1 - t * t) * 0.7978845608 * (1 + 3 * 0.044715 * x * x)
    return loss, w * 0.5 * (1 + t) + dt, y


def w3_numpy(X, Y, W1, b1, W2, b2):
    B = X.shape[0]
    h = np.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    m = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - m)
    s = e.sum(axis=1, keepdims=True)
    loss = -((logits - m - np.log(s)) * Y).sum() / B
    dlogits = (e / s - Y) / B
    dz = (dlogits @ W2.T) * (1 - h * h)
    grads = (X.T @ dz, dz.sum(axis=0), h.T @ dlogits, dlogits.sum(axis=0))
    return loss, tuple(p - F32(0.1) * g for p, g in zip((W1, b1, W2, b2), grads))


_C1, _C5 = F32(1.0001), F32(0.5)


def w4_numpy(x):
    xs = []
    for _ in range(100):
        xs.append(x)
        x = x * _C1 + _C5 * np.sin(x)
    g = F32(1.0)
    for xi in reversed(xs):
        g = g * (_C1 + _C5 * np.cos(xi))
    return x, g


W4_OPS = 100 * 8  # forward: mul, sin, mul, add; backward: cos, mul, add, mul per step


# -- eager ------------------------------------------------------------------------------------
def _eager_grads(fn, arrays, wrt):
    ts = [eager.tensor(a, requires_grad=i in wrt) for i, a in enumerate(arrays)]
    loss = fn(*ts)
    loss.backward()
    return loss, [ts[i].grad for i in wrt]


def _eager_w3(arrays):
    X, Y, *params = [eager.tensor(a) for a in arrays]
    for p in params:
        p.requires_grad_(True)
    loss = w3_loss(X, Y, *params)
    loss.backward()
    with eager.no_grad():
        return loss, [p - 0.1 * p.grad for p in params]


# -- timing -------------------------------------------------------------------------------------
# the clock of every sample: wall time (perf_counter), or with --clock cpu the CPU time of the
# whole process, every thread (process_time), which other processes on a shared machine
# inflate far less than the wall time (threaded regions count each thread's time)
CLOCK = [time.perf_counter]


def _inner(fn) -> int:
    """Calls per sample so that one sample lasts at least ~5 ms (timer resolution, jitter)."""
    clock = CLOCK[0]
    t0 = clock()
    fn()
    t = max(clock() - t0, 1e-7)
    return max(1, int(0.005 / t))


def interleaved(fns: dict, repeats: int, warmup: int = 2) -> dict:
    clock = CLOCK[0]
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    inner = {k: _inner(fn) for k, fn in fns.items()}
    samples = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            gc.collect()
            n = inner[k]
            t0 = clock()
            for _ in range(n):
                fn()
            samples[k].append((clock() - t0) / n)
    return {k: statistics.median(v) for k, v in samples.items()}


def _repeats(fn, quick: bool) -> int:
    t0 = time.perf_counter()
    fn()
    t = max(time.perf_counter() - t0, 1e-4)
    budget = 0.8 if quick else 3.0
    return int(max(5, min(30, budget / (t * 4))))


def bench_case(name: str, arrays: list, compiled, unfused, eager_fn, hand, quick: bool, per: int = 1) -> dict:
    """compiled: through static's call path; generated: the generated module alone (what
    codegen controls; static's per-call bookkeeping excluded)."""
    exe = codegen.build(compiled.ir(*arrays), "numpy")
    fns = {"compiled": lambda: compiled(*arrays), "generated": lambda: exe.run(arrays),
           "compiled_unfused": lambda: unfused(*arrays), "eager": eager_fn, "numpy": lambda: hand(*arrays)}
    t = interleaved(fns, _repeats(fns["eager"], quick))
    row = {"case": name, **{k: v / per for k, v in t.items()}}
    for k in ("compiled", "generated", "compiled_unfused", "eager"):
        row[f"{k}/numpy"] = t[k] / t["numpy"]
    return row


def check_agree(a, b, rtol=2e-3, atol=2e-3):
    for x, y in zip(a, b):
        np.testing.assert_allclose(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                                   rtol=rtol, atol=atol)


def run_workloads(quick: bool, only: set | None = None) -> list:
    rng = np.random.default_rng(0)
    rows = []
    def wanted(w: str) -> bool:
        return only is None or w in only

    # --quick checks that the script runs (run_all.py --quick): one size each, seconds not minutes
    sizes1 = ([10_000] if quick else [100, 10_000, 1_000_000]) if wanted("W1") else []
    for n in sizes1:
        arrays = [rng.standard_normal(n).astype(F32) for _ in range(5)]
        comp = static.value_and_grad(w1, argnums=(0, 1, 2, 3, 4), backend="numpy")
        unf = static.value_and_grad(w1, argnums=(0, 1, 2, 3, 4), backend="numpy", opt_level=1)
        loss, grads = comp(*arrays)
        ref = w1_numpy(*arrays)
        check_agree([loss, *grads], ref, rtol=1e-3, atol=1e-2 * n ** 0.5)
        rows.append(bench_case(f"W1 n={n:.0e}", arrays, comp, unf,
                               lambda arrays=arrays: _eager_grads(w1, arrays, (0, 1, 2, 3, 4)), w1_numpy, quick))
    sizes2 = ([1_000_000] if quick else [10_000, 1_000_000, 8_000_000]) if wanted("W2") else []
    for n in sizes2:
        arrays = [rng.standard_normal(n).astype(F32) for _ in range(2)]
        comp = static.value_and_grad(w2, argnums=(0, 1), backend="numpy")
        unf = static.value_and_grad(w2, argnums=(0, 1), backend="numpy", opt_level=1)
        loss, grads = comp(*arrays)
        ref = w2_numpy(*arrays)
        check_agree([loss, *grads], ref, rtol=1e-3, atol=1e-2 * n ** 0.5)
        for label, hand in (("x**3", w2_numpy), ("x*x*x", w2_numpy_cubed)):
            rows.append(bench_case(f"W2 n={n:.0e} (numpy {label})", arrays, comp, unf,
                                   lambda arrays=arrays: _eager_grads(w2, arrays, (0, 1)), hand, quick))
    for dims in [(256, 784, 512, 10), (32, 64, 64, 10)] if wanted("W3") else []:
        B, D, H, C = dims
        arrays = [rng.standard_normal((B, D)).astype(F32), np.eye(C, dtype=F32)[rng.integers(0, C, B)],
                  (rng.standard_normal((D, H)) / np.sqrt(D)).astype(F32), np.zeros(H, F32),
                  (rng.standard_normal((H, C)) / np.sqrt(H)).astype(F32), np.zeros(C, F32)]
        comp = static.compile(w3_step, backend="numpy")
        unf = static.compile(w3_step, backend="numpy", opt_level=1)
        loss, params = comp(*arrays)
        ref_loss, ref_params = w3_numpy(*arrays)
        check_agree([loss, *params], [ref_loss, *ref_params])
        rows.append(bench_case(f"W3 {'large' if B == 256 else 'small'} {dims}", arrays, comp, unf,
                               lambda arrays=arrays: _eager_w3(arrays), w3_numpy, quick))
    if not wanted("W4"):
        return rows
    x = np.asarray(0.3, dtype=F32)
    comp = static.value_and_grad(w4, backend="numpy")
    unf = static.value_and_grad(w4, backend="numpy", opt_level=1)
    val, grad = comp(x)
    check_agree([val, grad], w4_numpy(x[()]), rtol=1e-5, atol=1e-5)
    rows.append(bench_case("W4 per op (0-d, 100 steps)", [x], comp, unf,
                           lambda: _eager_grads(w4, [x], (0,)), lambda x: w4_numpy(x[()]), quick, per=W4_OPS))
    return rows


# -- compile time, in fresh processes -------------------------------------------------------------
_COMPILE_SCRIPT = r"""
import sys, time
t_import = time.perf_counter()
sys.path.insert(0, sys.argv[1])
import numpy as np
sys.path.insert(0, sys.argv[1] + "/benchmarks")
from compiled_bench import w3_step, static
rng = np.random.default_rng(0)
B, D, H, C = 256, 784, 512, 10
arrays = [rng.standard_normal((B, D)).astype(np.float32), np.eye(C, dtype=np.float32)[rng.integers(0, C, B)],
          rng.standard_normal((D, H)).astype(np.float32), np.zeros(H, np.float32),
          rng.standard_normal((H, C)).astype(np.float32), np.zeros(C, np.float32)]
import codegen
build, spent = codegen.build, [0.0]
def timed_build(graph, backend, **options):
    t = time.perf_counter(); out = build(graph, backend, **options); spent[0] += time.perf_counter() - t
    return out
codegen.build = timed_build
f = static.compile(w3_step, backend="numpy")
t0 = time.perf_counter(); f(*arrays); first = time.perf_counter() - t0
runs = []
for _ in range(5):
    t0 = time.perf_counter(); f(*arrays); runs.append(time.perf_counter() - t0)
runs.sort()
print(first, runs[2], spent[0])
"""


def compile_times() -> dict:
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "GRAPHMODE_CACHE_DIR": cache_dir, "GRAPHMODE_CACHE": "1"}
        out = {}
        for label in ("cold", "disk cache"):
            res = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT, str(ROOT)], env=env, capture_output=True,
                                 text=True, check=True)
            first, run, codegen_s = map(float, res.stdout.split())
            out[label] = max(first - run, 0.0)
            out[label + " (codegen part)"] = codegen_s
        return out


def _fmt(v: float) -> str:
    if v < 1e-3:
        return f"{v * 1e6:.2f}us"
    if v < 1:
        return f"{v * 1e3:.2f}ms"
    return f"{v:.2f}s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--malloc", choices=("steady", "default"), default="steady",
                    help="steady (as eager_bench and `graphmode compare`): glibc keeps freed memory for reuse, "
                         "so no side pays page faults for the other's frees; default: as is")
    ap.add_argument("--only", default=None, help="comma-separated workloads, e.g. W1,W4")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: time samples in the process's CPU time (all threads), steadier on a shared machine")
    args = ap.parse_args(argv)
    CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    malloc = steady_malloc() if args.malloc == "steady" else "default"
    only = {w.strip().upper() for w in args.only.split(",")} if args.only else None
    rows = run_workloads(args.quick, only)
    header = f"{'case':38} {'compiled':>9} {'generated':>9} {'unfused':>9} {'eager':>9} {'numpy':>9}  " \
             f"{'comp/np':>7} {'gen/np':>7} {'unf/np':>7} {'eager/np':>8}"
    print(f"graphmode compiled benchmark - numpy {np.__version__}, {os.cpu_count()} cores, malloc: {malloc}, "
          f"clock: {args.clock}; medians, ratios from one run")
    print(header)
    print("-" * len(header))
    for r in rows:
        print(f"{r['case']:38} {_fmt(r['compiled']):>9} {_fmt(r['generated']):>9} {_fmt(r['compiled_unfused']):>9} "
              f"{_fmt(r['eager']):>9} {_fmt(r['numpy']):>9}  {r['compiled/numpy']:7.3f} {r['generated/numpy']:7.3f} "
              f"{r['compiled_unfused/numpy']:7.3f} {r['eager/numpy']:8.3f}")
    print("compiled: static.compile'd call; generated: the generated module alone; unfused: opt_level=1;"
          " W4 times are per op")
    times = compile_times()
    print(f"\nW3 large compile (fresh process; trace + passes + codegen + load): cold {_fmt(times['cold'])} "
          f"(codegen {_fmt(times['cold (codegen part)'])}), from the disk cache {_fmt(times['disk cache'])} "
          f"(codegen {_fmt(times['disk cache (codegen part)'])})")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"rows": rows, "compile_seconds": times, "numpy": np.__version__, "cores": os.cpu_count(),
                       "clock": args.clock},
                      fh, indent=2)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
