"""The native CPU backend against hand-written NumPy, the NumPy backend, and torch.compile /
JAX jit when they are installed, on W1-W4 forward + backward (float32).

    python benchmarks/native_bench.py [--runs 3] [--small] [--only W1,W2] [--threads N] [--json out.json]
    python benchmarks/native_bench.py --gpu-w2 1e8     # the CuPy backend's W2 against GPU bandwidth

Why the peers run apart: torch and JAX bring their own thread runtimes (torch a bundled
libgomp, XLA an Eigen pool). With one of them loaded in the same process as the native
backend's OpenMP kernels, each runtime's workers spin-wait after their own parallel regions
and steal the cores from the other's threads: importing torch alone made a native training
step several times slower. So graphmode (native, the NumPy backend) and hand NumPy are timed
in this process, which never imports torch or jax, and each peer family (torch.compile, JAX
jit) in a child process of its own, started once with the same thread settings
(GRAPHMODE_THREADS, OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, torch's intra-op threads; an
OMP_WAIT_POLICY or GOMP_SPINCOUNT only where the user set one) and the same seeded inputs (checked by a
digest), kept alive across runs so each compiles once. A peer's spinning workers are at
their worst on a loaded machine (torch.compile's W1 at 1e4 elements took many times longer
with libgomp's default spinning than with OMP_WAIT_POLICY=PASSIVE on two busy cores; the
native backend's own short spin pays the same price): measure on a quiet machine, and set
OMP_WAIT_POLICY for both sides to see the policy's share.

In this process the candidates of a row run interleaved after a warm-up; a child times its
peer per row right after this process's sample set of the same run (each side idle while
the other measures). The whole measurement is repeated `--runs` times (default 3); the table
shows per cell the median over runs and, for each ratio (native / candidate, from the
medians of one run), its median and spread (min-max) across runs (absolute times on a shared
machine are noise: measure on a quiet one). W2 rows, and W1 rows of 1e5 elements or more,
also show the memory floor: the bytes a fused pass must move at the copy bandwidth measured
in this process. W2 reads x and w and writes the two gradients (the gradient of w is the
forward value y): 4 float32 per element, the sum aside. W1 reads its five vectors and writes
their five gradients: 10 float32 per element. Compile times of W3 are taken in fresh processes: cold (empty cache directory:
trace, passes, C++ compiler) and from the disk cache. `--small` runs tiny sizes and few
repeats, to check the script works.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
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

from common import (  # noqa: E402
    MACHINE_ONCE,
    compiler_vector_isa,
    format_table,
    host_vector_isa,
    machine_info,
    steady_malloc,
    time_interleaved,
    write_json,
)
from compiled_bench import W4_OPS, check_agree, w1, w1_numpy, w2, w2_numpy_cubed, w3_numpy, w3_step, w4, w4_numpy  # noqa: E402

import static  # noqa: E402
from codegen import native_build, runtime  # noqa: E402
from gmbase import settings as gm_settings  # noqa: E402

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


def _peer_loss(workload: str, m, log_softmax):
    """The workload's loss written once over an array namespace `m` (torch or jax.numpy) and
    its log_softmax along rows; with the arguments the gradient is taken for."""
    if workload == "W1":
        def loss(a, p1, p2, p3, p4):
            return (10 - (p3 * (p1 * a) + p4 * (p2 * a))).sum()
        return loss, (0, 1, 2, 3, 4)
    if workload == "W2":
        def loss(x, w):
            return (0.5 * x * (1 + m.tanh(0.7978845608 * (x + 0.044715 * x ** 3))) * w).sum()
        return loss, (0, 1)
    if workload == "W3":
        def loss(X, Y, W1, b1, W2, b2):
            h = m.tanh(X @ W1 + b1)
            return -(log_softmax(h @ W2 + b2) * Y).sum() / X.shape[0]
        return loss, (2, 3, 4, 5)

    def loss(x):
        for _ in range(100):
            x = x * 1.0001 + 0.5 * m.sin(x)
        return x
    return loss, (0,)


def _with_step(workload: str, value_and_grads):
    """fn(*args) -> (value, grads), and for W3 one SGD step of the weights instead of grads."""
    if workload != "W3":
        return value_and_grads

    def fn(X, Y, W1, b1, W2, b2):
        value, grads = value_and_grads(X, Y, W1, b1, W2, b2)
        return value, [p - 0.1 * d for p, d in zip((W1, b1, W2, b2), grads)]
    return fn


def torch_peer(workload: str, arrays: list):
    """torch.compile of the workload's forward + backward (torch.func), or None."""
    torch = _torch()
    if torch is None:
        return None
    tensors = [torch.from_numpy(np.array(a, copy=True)) for a in arrays]  # (ascontiguousarray makes 0-d 1-d)
    loss, argnums = _peer_loss(workload, torch, lambda z: torch.log_softmax(z, 1))
    grads_and_value = torch.func.grad_and_value(loss, argnums=argnums if len(argnums) > 1 else argnums[0])

    def value_and_grads(*xs):
        grads, value = grads_and_value(*xs)
        return value, grads
    compiled = torch.compile(_with_step(workload, value_and_grads))
    return lambda: compiled(*tensors)


def jax_peer(workload: str, arrays: list):
    """jax.jit of the workload's forward + backward, or None."""
    jax = _jax()
    if jax is None:
        return None
    values = [jax.numpy.asarray(a) for a in arrays]
    loss, argnums = _peer_loss(workload, jax.numpy, lambda z: jax.nn.log_softmax(z, 1))
    value_and_grads = jax.value_and_grad(loss, argnums=argnums if len(argnums) > 1 else argnums[0])
    jitted = jax.jit(_with_step(workload, value_and_grads))
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


LOCAL = ("numpy (hand)", "numpy backend")
PEER_FAMILIES = {"torch": "torch.compile", "jax": "jax.jit"}  # child-process family -> the peer it times
PEERS = (*LOCAL, *PEER_FAMILIES.values())
THREAD_VARS = ("GRAPHMODE_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY", "GOMP_SPINCOUNT",
               "XLA_FLAGS")
SETTLE_S = 0.2  # a pause before each side's sample set: the other side's spinning workers go to sleep


@dataclass
class Case:
    """One row's workload and its seeded inputs, made the same way in this process and in a
    peer's child; `per` divides the times (W4: per op); W2 rows carry the bytes a fused pass
    must move, for the memory floor."""

    name: str
    workload: str
    arrays: list
    per: int = 1
    floor_bytes: float | None = None


def cases(sizes: dict, only: set | None) -> list[Case]:
    """The rows to time, their inputs drawn in a fixed order from one seeded generator."""
    rng = np.random.default_rng(0)
    out = []
    if only is None or "W1" in only:
        for n in sizes["W1"]:
            out.append(Case(f"W1 n={n:.0e}", "W1", [rng.standard_normal(n).astype(F32) for _ in range(5)],
                            floor_bytes=10 * 4 * n if n >= 1e5 else None))
    if only is None or "W2" in only:
        for n in sizes["W2"]:
            out.append(Case(f"W2 n={n:.0e}", "W2", [rng.standard_normal(n).astype(F32) for _ in range(2)],
                            floor_bytes=4 * 4 * n))
    if only is None or "W3" in only:
        for B, D, H, C in sizes["W3"]:
            arrays = [rng.standard_normal((B, D)).astype(F32), np.eye(C, dtype=F32)[rng.integers(0, C, B)],
                      (rng.standard_normal((D, H)) / np.sqrt(D)).astype(F32), np.zeros(H, F32),
                      (rng.standard_normal((H, C)) / np.sqrt(H)).astype(F32), np.zeros(C, F32)]
            out.append(Case(f"W3 {(B, D, H, C)}", "W3", arrays))
    if only is None or "W4" in only:
        out.append(Case("W4 per op (0-d, 100 steps)", "W4", [np.asarray(0.3, dtype=F32)], per=W4_OPS))
    return out


def digest(arrays: list) -> str:
    """A short hash of the inputs' shapes, dtypes and bytes: a child proves it times the same data."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(f"{a.shape}{a.dtype}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


@dataclass
class Cell:
    """One row timed in this process: its case and candidates (zero-argument callables,
    "native" first), set up and checked once."""

    case: Case
    fns: dict


def setup(sizes: dict, only: set | None) -> list[Cell]:
    """Each workload compiled for both backends and checked against hand NumPy."""
    cells = []
    for case in cases(sizes, only):
        arrays = case.arrays
        if case.workload == "W1":
            nat = static.value_and_grad(w1, argnums=(0, 1, 2, 3, 4), backend="native")
            num = static.value_and_grad(w1, argnums=(0, 1, 2, 3, 4), backend="numpy")
            hand = w1_numpy
            loss, grads = nat(*arrays)
            check_agree([loss, *grads], hand(*arrays), rtol=1e-3, atol=1e-2 * arrays[0].size ** 0.5)
        elif case.workload == "W2":
            nat = static.value_and_grad(w2, argnums=(0, 1), backend="native")
            num = static.value_and_grad(w2, argnums=(0, 1), backend="numpy")
            hand = w2_numpy_cubed
            loss, grads = nat(*arrays)
            check_agree([loss, *grads], hand(*arrays), rtol=1e-3, atol=1e-2 * arrays[0].size ** 0.5)
        elif case.workload == "W3":
            nat = static.compile(w3_step, backend="native")
            num = static.compile(w3_step, backend="numpy")
            hand = w3_numpy
            loss, params = nat(*arrays)
            ref_loss, ref_params = hand(*arrays)
            check_agree([loss, *params], [ref_loss, *ref_params])
        else:
            nat = static.value_and_grad(w4, backend="native")
            num = static.value_and_grad(w4, backend="numpy")

            def hand(x):
                return w4_numpy(x[()])
            val, grad = nat(*arrays)
            check_agree([val, grad], hand(*arrays), rtol=1e-5, atol=1e-5)
        cells.append(Cell(case, {"native": lambda f=nat, a=arrays: f(*a), "numpy backend": lambda f=num, a=arrays: f(*a),
                                 "numpy (hand)": lambda f=hand, a=arrays: f(*a)}))
    return cells


def thread_env(threads: int) -> dict:
    """The environment of a peer's child: this process's, with the native thread count as
    GRAPHMODE_THREADS (and OMP_NUM_THREADS where unset), so both sides get the same cores.
    OMP_WAIT_POLICY and GOMP_SPINCOUNT only as the user set them: the wait the native backend
    sets for its own OpenMP pool is its choice, not the peer's (a peer runs with its
    runtime's default)."""
    env = {**native_build.environ_for_peers(), "GRAPHMODE_THREADS": str(threads)}
    env.setdefault("OMP_NUM_THREADS", str(threads))
    if threads == 1:  # XLA's CPU client has no thread-count knob; one thread it can do
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false").strip()
    return env


def peer_child(family: str, config: str) -> int:
    """The child side: build the family's peer for every case, say the inputs' digests, then
    answer each "run" line with one sample set (the median seconds per case) as a JSON line."""
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the peer library prints goes to stderr, not into the protocol
    cfg = json.loads(config)
    sizes = {k: [tuple(v) if isinstance(v, list) else v for v in vs] for k, vs in cfg["sizes"].items()}
    rows = cases(sizes, set(cfg["only"]) if cfg["only"] else None)
    if family == "torch":
        import torch  # noqa: PLC0415

        torch.set_num_threads(cfg["threads"])
        version, make = torch.__version__, torch_peer
    else:
        import jax  # noqa: PLC0415

        version, make = jax.__version__, jax_peer
    fns = [make(c.workload, c.arrays) for c in rows]

    def say(payload: dict) -> None:
        protocol.write(json.dumps(payload) + "\n")
        protocol.flush()

    say({"version": version, "digests": [digest(c.arrays) for c in rows]})
    for line in sys.stdin:
        if line.strip() != "run":
            break
        time.sleep(SETTLE_S)
        say({c.name: time_interleaved([fn], repeats=cfg["repeats"], warmup=2)[0] for c, fn in zip(rows, fns)})
    return 0


class PeerProcess:
    """A peer family's child, alive across runs (each peer compiles once)."""

    def __init__(self, family: str, sizes: dict, only: set | None, repeats: int, threads: int, expect: list):
        self.family, self.name = family, PEER_FAMILIES[family]
        config = json.dumps({"sizes": sizes, "only": sorted(only) if only else None, "repeats": repeats,
                             "threads": threads})
        self.stderr = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([sys.executable, __file__, "--peer-child", family, config], text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     env=thread_env(threads))
        hello = self._reply()
        if hello["digests"] != expect:
            self.close()
            raise RuntimeError(f"{self.name} child: its inputs differ from this process's (digests {hello['digests']} "
                               f"!= {expect}): cases() must draw them the same way on both sides")
        self.version = hello["version"]

    def _reply(self) -> dict:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            self.proc.wait()
            self.stderr.seek(0)
            tail = self.stderr.read()[-2000:]
            raise RuntimeError(f"{self.name} child exited with {self.proc.returncode}:\n{tail}")
        return json.loads(line)

    def sample(self) -> dict:
        """One sample set: the median seconds per case."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("run\n")
        self.proc.stdin.flush()
        return self._reply()

    def close(self) -> None:
        if self.proc.poll() is None and self.proc.stdin is not None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)
        self.stderr.close()


def start_peers(sizes: dict, only: set | None, repeats: int, threads: int) -> list[PeerProcess]:
    """A child per installed peer family (found without importing it here); one that fails to
    start is reported and left out."""
    expect = [digest(c.arrays) for c in cases(sizes, only)]
    out = []
    for family in PEER_FAMILIES:
        if importlib.util.find_spec(family) is None:
            continue
        try:
            out.append(PeerProcess(family, sizes, only, repeats, threads, expect))
        except RuntimeError as exc:
            print(f"{PEER_FAMILIES[family]} left out: {exc}", flush=True)
    return out


def measure_cell(cell: Cell, repeats: int) -> dict:
    """One interleaved sample set of a cell's candidates in this process: median seconds each."""
    return dict(zip(cell.fns, time_interleaved(list(cell.fns.values()), repeats=repeats, warmup=2)))


def sample_of(case: Case, medians: dict, bandwidth: float) -> dict:
    """One run's row: per-op seconds of each candidate and the native/candidate ratios."""
    sample = {k: v / case.per for k, v in medians.items()}
    native = medians["native"]
    for peer in PEERS:
        if peer in medians:
            sample[f"native / {peer}"] = native / medians[peer]
    if case.floor_bytes is not None:
        floor = case.floor_bytes / bandwidth
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


def run(sizes: dict, repeats: int, only: set | None, runs: int = 1, peers: list | None = None) -> list:
    """`runs` whole measurements: each this process's interleaved sample set of every cell
    (the copy bandwidth measured again per run), then each peer child's sample set of the
    same cases; one summarized row per cell."""
    cells = setup(sizes, only)
    samples: list = [[] for _ in cells]
    for r in range(runs):
        time.sleep(SETTLE_S)
        bandwidth = copy_bandwidth(32 << 20 if repeats < 5 else 256 << 20)
        medians = [measure_cell(cell, repeats) for cell in cells]
        for peer in peers or []:
            got = peer.sample()
            for cell, m in zip(cells, medians):
                m[peer.name] = got[cell.case.name]
        for k, cell in enumerate(cells):
            samples[k].append(sample_of(cell.case, medians[k], bandwidth))
        print(f"run {r + 1}/{runs} done", flush=True)
    return [summarize(cell.case.name, s) for cell, s in zip(cells, samples)]


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
t0 = time.perf_counter(); f.ir(*arrays); ready = time.perf_counter() - t0
t0 = time.perf_counter(); f(*arrays); first = time.perf_counter() - t0
runs = []
for _ in range(5):
    t0 = time.perf_counter(); f(*arrays); runs.append(time.perf_counter() - t0)
print(ready, first - sorted(runs)[2])
"""


def compile_times() -> dict:
    """W3 compile seconds in fresh processes: the first on a machine, cold, then from the
    disk cache (the compiler probe's record included: a machine's first compile also probes
    the compiler and builds the call path's extension and the kernels of MACHINE_ONCE, which
    later cold compiles find in the cache). One run.

    Each is two numbers of the same process. "compile" is `f.ir(*arrays)`: tracing, the
    passes and code generation or the caches, the C++ compiler or the cached shared object,
    loading the modules: everything that makes the call ready, nothing run. "first call's
    warm-up" is the first call less a steady one after that: what the process pays on its
    first run of any kernels (OpenBLAS's and OpenMP's threads starting, first-touch of
    buffers), which a NumPy program of the same products pays on its first call too. Their
    sum is the first call less a steady call without `ir` first."""
    with tempfile.TemporaryDirectory() as cache_dir:
        env = {**os.environ, "GRAPHMODE_CACHE_DIR": cache_dir, "GRAPHMODE_CACHE": "1"}
        out = {}
        for label in ("first on this machine (probe + compile)", "cold (probed)", "disk cache"):
            if label == "cold (probed)":  # keep what a machine builds once (as training_step_bench), drop the rest
                for p in Path(cache_dir).iterdir():
                    if not any(part in p.name for part in MACHINE_ONCE):
                        p.unlink()
            res = subprocess.run([sys.executable, "-c", _COMPILE_SCRIPT, str(ROOT)], env=env, capture_output=True,
                                 text=True, check=True)
            ready, warm_up = (float(v) for v in res.stdout.split()[-2:])
            out[f"{label}: compile"] = ready
            out[f"{label}: first call's warm-up"] = warm_up
            out[f"{label}: both"] = ready + warm_up
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
    ap.add_argument("--small", "--quick", action="store_true", dest="small",
                    help="tiny sizes and few repeats: check that it runs (--quick: run_all.py's name for it)")
    ap.add_argument("--only", default=None, help="comma-separated workloads, e.g. W1,W2")
    ap.add_argument("--runs", type=int, default=None,
                    help="whole measurements, each its own interleaved sample set (default 3, 1 with --small): "
                         "each ratio is reported as the median over runs with its min-max spread")
    ap.add_argument("--threads", type=int, default=None, help="OpenMP threads (default GRAPHMODE_THREADS)")
    ap.add_argument("--no-compile-times", action="store_true")
    ap.add_argument("--json", default=None)
    ap.add_argument("--peer-child", nargs=2, metavar=("FAMILY", "CONFIG"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.peer_child:
        return peer_child(*args.peer_child)
    if args.runs is None:
        args.runs = 1 if args.small else 3
    if args.small:  # a check that it runs: the compile times' fresh processes (cold caches) are minutes
        args.no_compile_times = True
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
    threads = runtime.CONFIG.threads  # configured (a call may run on fewer while other processes keep cores busy)
    peers = start_peers(sizes, only, repeats, threads)
    settings = ", ".join(f"{k}={os.environ[k]}" for k in THREAD_VARS if k in os.environ)
    print(f"native: {why}; {threads} thread(s) configured, {native_build.threads()} free now; malloc: {malloc}; "
          f"thread settings: {settings or 'defaults'}; "
          f"peers (each in its own process): {', '.join(f'{p.name} {p.version}' for p in peers) or 'none installed'}; "
          f"{args.runs} run(s) of {repeats} interleaved samples")
    host_isa, host_bits = host_vector_isa()
    target = compiler_vector_isa()
    floor_bw = copy_bandwidth(32 << 20 if args.small else 256 << 20)
    print(f"host vector width: {host_isa} ({host_bits}-bit registers); kernels compiled for "
          f"{f'{target[0]} ({target[1]}-bit)' if target else 'an unknown target'} "
          f"(-march={gm_settings.native_arch()}, GRAPHMODE_NATIVE_ARCH); measured copy bandwidth "
          f"{floor_bw / 1e9:.1f} GB/s (read + write, the memory floor's rate): read the ratios against this machine")
    t0 = time.perf_counter()
    try:
        rows = run(sizes, repeats, only, args.runs, peers)
    finally:
        for p in peers:
            p.close()
    loaded = sorted({"torch", "jax"} & set(sys.modules))
    if loaded:
        raise RuntimeError(f"{', '.join(loaded)} got imported into the graphmode process: its timings are not fair")
    print(table(rows))
    payload = {"machine": machine_info(), "vector_isa": {"host": [host_isa, host_bits], "compiled_for": target,
                                                         "march": gm_settings.native_arch()},
               "copy_bandwidth_GBps": floor_bw / 1e9, "runs": args.runs, "repeats": repeats, "threads": threads,
               "thread_settings": settings, "peers": {p.name: p.version for p in peers}, "rows": rows,
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
