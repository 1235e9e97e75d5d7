"""The native CPU backend against hand-written NumPy, the NumPy backend, and torch.compile /
JAX jit when they are installed, on W1-W4 forward + backward (float32).

    python benchmarks/native_bench.py [--runs 3] [--small] [--only W1,W2] [--threads N] [--json out.json]
    python benchmarks/native_bench.py --gpu-w2 1e8     # the CuPy backend's W2 against GPU bandwidth

Every candidate of a row runs interleaved in one process after a warm-up. The whole
measurement is repeated `--runs` times (default 3), each run its own interleaved sample set
of every row; the table shows per cell the median over runs and, for each ratio of medians,
its spread (min-max) across runs (absolute times on a shared machine are noise: measure on
a quiet one). torch.compile and JAX jit are peers when installed. W2 rows also show the memory floor: the bytes a fused pass must
move (read x and w, write the two gradients - the gradient of w is the forward value y:
4 float32 per element, the sum aside) at the copy bandwidth measured in this process. Compile times of W3 are taken in
fresh processes: cold (empty cache directory: trace, passes, C++ compiler) and from the
disk cache. `--small` runs tiny sizes and few repeats, to check the script works.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import format_table, machine_info, steady_malloc, time_interleaved, write_json  # noqa: E402
from compiled_bench import W4_OPS, check_agree, w1, w1_numpy, w2, w2_numpy_cubed, w3_numpy, w3_step, w4, w4_numpy  # noqa: E402

import static  # noqa: E402
from codegen import native_build, runtime  # noqa: E402

F32 = np.float32


# -- peers ------------------------------------------------------------------------------------------
def _torch():
    try:
        import torch  # noqa: PLC0415

        return torch
    except ImportError:
        return None


def _jax():
    try:
        import jax  # noqa: PLC0415

        return jax
    except ImportError:
        return None


def torch_peer(workload: str, arrays: list):
    """torch.compile of the workload's forward + backward (torch.func), or None."""
    torch = _torch()
    if torch is None:
        return None
    tensors = [torch.from_numpy(np.array(a, copy=True)) for a in arrays]  # (ascontiguousarray makes 0-d 1-d)
    if workload == "W1":
        def loss(a, p1, p2, p3, p4):
            return (10 - (p3 * (p1 * a) + p4 * (p2 * a))).sum()
        fn = torch.func.grad_and_value(loss, argnums=(0, 1, 2, 3, 4))
    elif workload == "W2":
        def loss(x, w):
            return (0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3))) * w).sum()
        fn = torch.func.grad_and_value(loss, argnums=(0, 1))
    elif workload == "W3":
        def loss(X, Y, W1, b1, W2, b2):
            h = torch.tanh(X @ W1 + b1)
            return -(torch.log_softmax(h @ W2 + b2, 1) * Y).sum() / X.shape[0]
        g = torch.func.grad_and_value(loss, argnums=(2, 3, 4, 5))

        def fn(X, Y, W1, b1, W2, b2):
            grads, value = g(X, Y, W1, b1, W2, b2)
            return value, [p - 0.1 * d for p, d in zip((W1, b1, W2, b2), grads)]
    else:
        def loss(x):
            for _ in range(100):
                x = x * 1.0001 + 0.5 * torch.sin(x)
            return x
        fn = torch.func.grad_and_value(loss)
    compiled = torch.compile(fn)
    return lambda: compiled(*tensors)


def jax_peer(workload: str, arrays: list):
    """jax.jit of the workload's forward + backward, or None."""
    jax = _jax()
    if jax is None:
        return None
    jnp = jax.numpy
    values = [jnp.asarray(a) for a in arrays]
    if workload == "W1":
        def loss(a, p1, p2, p3, p4):
            return (10 - (p3 * (p1 * a) + p4 * (p2 * a))).sum()
        fn = jax.value_and_grad(loss, argnums=(0, 1, 2, 3, 4))
    elif workload == "W2":
        def loss(x, w):
            return (0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3))) * w).sum()
        fn = jax.value_and_grad(loss, argnums=(0, 1))
    elif workload == "W3":
        def loss(X, Y, W1, b1, W2, b2):
            h = jnp.tanh(X @ W1 + b1)
            return -(jax.nn.log_softmax(h @ W2 + b2, 1) * Y).sum() / X.shape[0]
        g = jax.value_and_grad(loss, argnums=(2, 3, 4, 5))

        def fn(X, Y, W1, b1, W2, b2):
            value, grads = g(X, Y, W1, b1, W2, b2)
            return value, [p - 0.1 * d for p, d in zip((W1, b1, W2, b2), grads)]
    else:
        def loss(x):
            for _ in range(100):
                x = x * 1.0001 + 0.5 * jnp.sin(x)
            return x
        fn = jax.value_and_grad(loss)
    jitted = jax.jit(fn)
    return lambda: jax.block_until_ready(jitted(*values))


# -- measuring ----------------------------------------------------------------------------------------
def copy_bandwidth(nbytes: int = 256 << 20) -> float:
    """Bytes per second (read + write) of the faster of a one-thread NumPy copy and a
    native copy loop on every OpenMP thread, measured now."""
    import codegen  # noqa: PLC0415

    n = nbytes // 4
    src = np.ones(n, F32)
    dst = np.empty_like(src)
    copy_ir = (f"func @copy(%x: f32[{n}]) -> f32[{n}] {{\n  %1 = fused %x : f32[{n}] {{\n"
               f"    ^body(%a: f32[{n}]):\n    %2 = clone %a : f32[{n}]\n    yield %2\n  }}\n  return %1\n}}")
    mod = codegen.build(static.parse_ir(copy_ir), "native")._loaded.module  # its kernel, into dst (no allocation)

    def native_copy():
        mod._call(mod._K0, native_build.threads(), mod._K0_SIZES, mod._K0_FORMATS, src, dst)

    times = time_interleaved([lambda: np.copyto(dst, src), native_copy], repeats=7)
    return 2 * nbytes / min(times)


PEERS = ("numpy (hand)", "numpy backend", "torch.compile", "jax.jit")


@dataclass
class Cell:
    """One row of the table: its candidates (zero-argument callables, "native" first), set up
    and checked once; `per` divides the times (W4: per op); W2 rows carry the bytes a fused
    pass must move, for the memory floor."""

    case: str
    fns: dict
    per: int = 1
    floor_bytes: float | None = None


def measure_cell(cell: Cell, repeats: int, bandwidth: float) -> dict:
    """One interleaved sample set of a cell: the median seconds of each candidate and the
    native/peer ratios of those medians."""
    fns = {k: v for k, v in cell.fns.items() if v is not None}
    medians = dict(zip(fns, time_interleaved(list(fns.values()), repeats=repeats, warmup=2)))
    sample = {k: v / cell.per for k, v in medians.items()}
    native = medians["native"]
    for peer in PEERS:
        if peer in medians:
            sample[f"native / {peer}"] = native / medians[peer]
    if cell.floor_bytes is not None:
        floor = cell.floor_bytes / bandwidth
        sample["memory floor"] = floor
        sample["native / floor"] = native / floor
    return sample


def summarize(case: str, samples: list) -> dict:
    """Per key, the median over runs and (for ratios) its spread min-max across runs."""
    row: dict = {"case": case, "runs": samples}
    for key in samples[0]:
        values = [s[key] for s in samples if key in s]
        row[key] = statistics.median(values)
        if "/" in key:
            row[f"{key} spread"] = (min(values), max(values))
    return row


def setup(sizes: dict, only: set | None) -> list:
    """The cells to time: each workload compiled for both backends and checked against hand
    NumPy (peers are compiled by their own first call, in the warm-up)."""
    rng = np.random.default_rng(0)
    cells = []

    def candidates(workload, fn_native, fn_numpy, hand, arrays, peer_arrays=None):
        return {"native": lambda: fn_native(*arrays), "numpy backend": lambda: fn_numpy(*arrays),
                "numpy (hand)": lambda: hand(*arrays), "torch.compile": torch_peer(workload, peer_arrays or arrays),
                "jax.jit": jax_peer(workload, peer_arrays or arrays)}

    if only is None or "W1" in only:
        for n in sizes["W1"]:
            arrays = [rng.standard_normal(n).astype(F32) for _ in range(5)]
            nat = static.value_and_grad(w1, argnums=(0, 1, 2, 3, 4), backend="native")
            num = static.value_and_grad(w1, argnums=(0, 1, 2, 3, 4), backend="numpy")
            loss, grads = nat(*arrays)
            check_agree([loss, *grads], w1_numpy(*arrays), rtol=1e-3, atol=1e-2 * n ** 0.5)
            cells.append(Cell(f"W1 n={n:.0e}", candidates("W1", nat, num, w1_numpy, arrays)))
    if only is None or "W2" in only:
        for n in sizes["W2"]:
            arrays = [rng.standard_normal(n).astype(F32) for _ in range(2)]
            nat = static.value_and_grad(w2, argnums=(0, 1), backend="native")
            num = static.value_and_grad(w2, argnums=(0, 1), backend="numpy")
            loss, grads = nat(*arrays)
            check_agree([loss, *grads], w2_numpy_cubed(*arrays), rtol=1e-3, atol=1e-2 * n ** 0.5)
            cells.append(Cell(f"W2 n={n:.0e}", candidates("W2", nat, num, w2_numpy_cubed, arrays),
                              floor_bytes=4 * 4 * n))
    if only is None or "W3" in only:
        for B, D, H, C in sizes["W3"]:
            arrays = [rng.standard_normal((B, D)).astype(F32), np.eye(C, dtype=F32)[rng.integers(0, C, B)],
                      (rng.standard_normal((D, H)) / np.sqrt(D)).astype(F32), np.zeros(H, F32),
                      (rng.standard_normal((H, C)) / np.sqrt(H)).astype(F32), np.zeros(C, F32)]
            nat = static.compile(w3_step, backend="native")
            num = static.compile(w3_step, backend="numpy")
            loss, params = nat(*arrays)
            ref_loss, ref_params = w3_numpy(*arrays)
            check_agree([loss, *params], [ref_loss, *ref_params])
            cells.append(Cell(f"W3 {(B, D, H, C)}", candidates("W3", nat, num, w3_numpy, arrays)))
    if only is None or "W4" in only:
        x = np.asarray(0.3, dtype=F32)
        nat = static.value_and_grad(w4, backend="native")
        num = static.value_and_grad(w4, backend="numpy")
        val, grad = nat(x)
        check_agree([val, grad], w4_numpy(x[()]), rtol=1e-5, atol=1e-5)
        cells.append(Cell("W4 per op (0-d, 100 steps)", candidates("W4", nat, num, lambda x: w4_numpy(x[()]), [x]),
                          per=W4_OPS))
    return cells


def run(sizes: dict, repeats: int, only: set | None, runs: int = 1) -> list:
    """`runs` whole measurements, each its own interleaved sample set of every cell (the
    copy bandwidth measured again per run); one summarized row per cell."""
    cells = setup(sizes, only)
    samples: list = [[] for _ in cells]
    for r in range(runs):
        bandwidth = copy_bandwidth(32 << 20 if repeats < 5 else 256 << 20)
        for k, cell in enumerate(cells):
            samples[k].append(measure_cell(cell, repeats, bandwidth))
        print(f"run {r + 1}/{runs} done", flush=True)
    return [summarize(cell.case, s) for cell, s in zip(cells, samples)]


_COMPILE_SCRIPT = r"""
import sys, time
sys.path.insert(0, sys.argv[1]); sys.path.insert(0, sys.argv[1] + "/benchmarks")
import numpy as np
from compiled_bench import w3_step, static
rng = np.random.default_rng(0)
B, D, H, C = 256, 784, 512, 10
arrays = [rng.standard_normal((B, D)).astype(np.float32), np.eye(C, dtype=np.float32)[rng.integers(0, C, B)],
          rng.standard_normal((D, H)).astype(np.float32), np.zeros(H, np.float32),
          rng.standard_normal((H, C)).astype(np.float32), np.zeros(C, np.float32)]
f = static.compile(w3_step, backend="native")
t0 = time.perf_counter(); f(*arrays); first = time.perf_counter() - t0
runs = []
for _ in range(5):
    t0 = time.perf_counter(); f(*arrays); runs.append(time.perf_counter() - t0)
print(first - sorted(runs)[2])
"""


def compile_times() -> dict:
    """W3 compile seconds in fresh processes: cold, then from the disk cache (the compiler
    probe's record included: a machine's first compile also probes the compiler and builds
    the call path's extension, which later cold compiles find in the cache). One run."""
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "GRAPHMODE_CACHE_DIR": cache_dir, "GRAPHMODE_CACHE": "1"}
        out = {}
        for label in ("first on this machine (probe + compile)", "cold (probed)", "disk cache"):
            if label == "cold (probed)":  # keep the probe record and the call path, drop the rest
                for p in Path(cache_dir).iterdir():
                    if "probe" not in p.name and "gm_native_call" not in p.name:
                        p.unlink()
            res = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT, str(ROOT)], env=env, capture_output=True,
                                 text=True, check=True)
            out[label] = float(res.stdout.split()[-1])
        return out


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e6:.3f} us" if seconds < 1e-3 else f"{seconds * 1e3:.3f} ms"


def gpu_w2_bandwidth(n: int, repeats: int = 11) -> dict:
    """W2 forward + backward through the CuPy backend at n elements: its time against the
    device's copy bandwidth (the floor: 4 float32 per element moved). Needs CuPy and a GPU."""
    import cupy as cp  # noqa: PLC0415

    rng = np.random.default_rng(0)
    arrays = [cp.asarray(rng.standard_normal(n).astype(F32)) for _ in range(2)]
    f = static.value_and_grad(w2, argnums=(0, 1), backend="cupy")
    src, dst = cp.ones(n, F32), cp.empty(n, F32)

    def copy():
        cp.copyto(dst, src)
        cp.cuda.Device().synchronize()

    def step():
        f(*arrays)
        cp.cuda.Device().synchronize()

    t_copy, t_step = time_interleaved([copy, step], repeats=repeats, warmup=2)
    bandwidth = 2 * 4 * n / t_copy
    floor = 4 * 4 * n / bandwidth
    return {"n": n, "w2 seconds": t_step, "copy GB/s": bandwidth / 1e9, "floor seconds": floor,
            "w2 / floor": t_step / floor}


def _cell_text(row: dict, key: str) -> str:
    if key not in row:
        return "-"
    if "/" not in key:
        return _fmt(row[key])
    lo, hi = row[f"{key} spread"]
    return f"{row[key]:.3f}" if len(row["runs"]) == 1 else f"{row[key]:.3f} ({lo:.3f}-{hi:.3f})"


def table(rows: list) -> str:
    """Times: the median over runs; ratios: the median over runs of each run's ratio of
    medians, with its min-max across runs in parentheses."""
    keys = {k for r in rows for k in r if k not in ("case", "runs") and not k.endswith(" spread")}
    headers = sorted(keys, key=lambda k: (("/" in k), k))
    return format_table(["case"] + headers, [[r["case"]] + [_cell_text(r, h) for h in headers] for r in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu-w2", type=float, default=None, metavar="N",
                    help="only W2 at N elements through the CuPy backend on the GPU, against the copy bandwidth")
    ap.add_argument("--small", action="store_true", help="tiny sizes and few repeats: check that it runs")
    ap.add_argument("--only", default=None, help="comma-separated workloads, e.g. W1,W2")
    ap.add_argument("--runs", type=int, default=3,
                    help="whole measurements, each its own interleaved sample set (default 3): each ratio is "
                         "reported as the median over runs with its min-max spread")
    ap.add_argument("--threads", type=int, default=None, help="OpenMP threads (default GRAPHMODE_THREADS)")
    ap.add_argument("--no-compile-times", action="store_true")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error(f"--runs must be at least 1, got {args.runs}")
    if args.gpu_w2:
        result = gpu_w2_bandwidth(int(args.gpu_w2))
        print(", ".join(f"{k}: {v:.4g}" for k, v in result.items()))
        if args.json:
            write_json(args.json, {"gpu_w2": result})
        return 0
    ok, why = native_build.availability()
    if not ok:
        print(f"native backend unavailable: {why}")
        return 1
    if args.threads:
        runtime.CONFIG.threads = args.threads
    malloc = steady_malloc()
    if args.small:
        sizes = {"W1": [1, 100, 10_000], "W2": [10_000], "W3": [(32, 64, 64, 10)]}
        repeats = 3
    else:
        sizes = {"W1": [1, 100, 1_000_000], "W2": [1_000_000, 8_000_000],
                 "W3": [(256, 784, 512, 10), (32, 64, 64, 10)]}
        repeats = 21
    only = set(args.only.split(",")) if args.only else None
    peers = ", ".join(name for name, mod in (("torch.compile", _torch()), ("jax.jit", _jax())) if mod is not None)
    print(f"native: {why}; {native_build.threads()} thread(s); malloc: {malloc}; peers: {peers or 'none installed'}; "
          f"{args.runs} run(s) of {repeats} interleaved samples")
    t0 = time.perf_counter()
    rows = run(sizes, repeats, only, args.runs)
    print(table(rows))
    payload = {"machine": machine_info(), "runs": args.runs, "repeats": repeats, "rows": rows,
               "seconds": time.perf_counter() - t0}
    if not args.no_compile_times and (only is None or "W3" in only):
        per_run = [compile_times() for _ in range(args.runs)]
        payload["compile_w3_seconds"] = {k: {"median": statistics.median(r[k] for r in per_run),
                                             "min": min(r[k] for r in per_run), "max": max(r[k] for r in per_run)}
                                         for k in per_run[0]}
        for k, v in payload["compile_w3_seconds"].items():
            print(f"W3 compile, {k}: {v['median'] * 1e3:.1f} ms (runs: {v['min'] * 1e3:.1f}-{v['max'] * 1e3:.1f})")
    if args.json:
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
