"""Eager mode against hand-written NumPy and PyTorch eager on the design's workloads W1-W4.

For each workload and size, the same computation runs in this process with eager tensors
(forward records the graph, `backward()` walks it), as NumPy code with the backward written
out by hand and, when PyTorch is installed, with PyTorch's eager tensors. All are checked to
agree, then timed interleaved; the table shows medians, the eager/NumPy ratio (forward alone
and forward+backward) and the eager/PyTorch ratio of forward+backward. W4's per-op cost is
forward plus `autograd.grad` divided by its 400 forward ops, in both libraries.

    python benchmarks/eager_bench.py                 # design.md sizes
    python benchmarks/eager_bench.py --quick         # small sizes, a few seconds
    python benchmarks/eager_bench.py --only W4 --json out.json
    python benchmarks/eager_bench.py --profile W4    # where eager's time goes (cProfile)
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout
# the workloads' one copy
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "workloads"))

import w1_seed  # noqa: E402
import w2_gelu  # noqa: E402
import w3_mlp  # noqa: E402
import w4_scalar  # noqa: E402
from common import format_table, repeats_for, sample_interleaved, steady_malloc, time_interleaved, write_json  # noqa: E402

import eager  # noqa: E402
from eager import nn, optim  # noqa: E402

F32 = np.float32
GELU_K, GELU_C = 0.7978845608, 0.044715
W4_STEPS, W4_OPS_PER_STEP = 100, 4  # x * 1.0001, sin(x), 0.5 * _, _ + _


@dataclass
class Case:
    """One workload at one size: forward-only and forward+backward runners of each kind,
    and `grads()` of each kind for the agreement check."""

    workload: str
    size: str
    numpy_fwd: Callable[[], object]
    numpy_step: Callable[[], object]
    eager_fwd: Callable[[], object]
    eager_step: Callable[[], object]
    numpy_grads: Callable[[], list]
    eager_grads: Callable[[], list]
    ops: int = 0  # eager ops per forward (W4: for the per-op cost)
    torch_fwd: Callable[[], object] | None = None  # PyTorch eager, when it is installed
    torch_step: Callable[[], object] | None = None
    torch_grads: Callable[[], list] | None = None


def torch_or_none():
    """PyTorch on one thread (as OPENBLAS_NUM_THREADS=1 pins NumPy), or None when absent."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


TORCH = None  # set by main(): PyTorch or None


def _torch_runners(arrays: list[np.ndarray], forward: Callable, grad: bool = False):
    """(forward, forward+backward, grads) runners of `forward` on PyTorch leaves made from
    `arrays` (each requiring grad); `grad=True` takes the gradients with autograd.grad."""
    torch = TORCH
    leaves = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]

    def fwd():
        return forward(*leaves)

    def step():
        if grad:
            return list(torch.autograd.grad(fwd(), leaves))
        for t in leaves:
            t.grad = None
        fwd().backward()
        return [t.grad for t in leaves]

    return fwd, step, step


def _with_torch(case: Case, arrays: list[np.ndarray], forward: Callable | None, grad: bool = False) -> Case:
    if TORCH is not None and forward is not None:
        case.torch_fwd, case.torch_step, case.torch_grads = _torch_runners(arrays, forward, grad)
    return case


def _leaves(*arrays: np.ndarray) -> list[eager.Tensor]:
    return [eager.from_numpy(a.copy()).requires_grad_() for a in arrays]


def _eager_step(leaves: list[eager.Tensor], forward: Callable[[], eager.Tensor]) -> Callable[[], list]:
    def step():
        for t in leaves:
            t.grad = None
        forward().backward()
        return [t.grad for t in leaves]

    return step


# -- W1: the seed graph ---------------------------------------------------------------------------
def w1(n: int, rng: np.random.Generator) -> Case:
    arrays = [rng.standard_normal(n).astype(F32) for _ in range(5)]
    a, w1_, w2, w3, w4 = arrays

    def np_fwd():
        b = w1_ * a
        c = w2 * a
        d = w3 * b + w4 * c
        return (10 - d).sum(), b, c

    def np_step():
        loss, b, c = np_fwd()
        gd = np.full_like(a, -1.0)  # dL/dd for L = sum(10 - d)
        gb, gc = gd * w3, gd * w4
        return [gb * w1_ + gc * w2, gb * a, gc * a, gd * b, gd * c]  # a, w1, w2, w3, w4

    ea, ew1, ew2, ew3, ew4 = leaves = _leaves(*arrays)

    def e_fwd():
        return w1_seed.seed_loss(ea, ew1, ew2, ew3, ew4)

    step = _eager_step(leaves, e_fwd)
    case = Case("W1 seed", f"n={n:.0e}", np_fwd, np_step, e_fwd, step, np_step, step, ops=7)
    return _with_torch(case, arrays, w1_seed.peer("torch") if TORCH is not None else None)


# -- W2: gelu ---------------------------------------------------------------------------------------
def w2(n: int, rng: np.random.Generator, cube: str = "pow") -> Case:
    """cube="pow" transcribes x**3 literally (np.power, as eager runs it); "mul" writes
    x*x*x, the strength reduction a NumPy programmer would make (np.power on float32 is
    two orders of magnitude slower than two multiplications on common CPUs)."""
    x, w = rng.standard_normal(n).astype(F32), rng.standard_normal(n).astype(F32)

    def np_fwd():
        half_x = 0.5 * x
        cubed = x ** 3 if cube == "pow" else x * x * x
        t = np.tanh(GELU_K * (x + GELU_C * cubed))
        one_t = 1 + t
        y = half_x * one_t
        return (y * w).sum(), half_x, t, one_t, y

    def np_step():
        _, half_x, t, one_t, y = np_fwd()
        gu = w * half_x * (1 - t * t) * GELU_K  # through tanh and its scale
        gx = w * 0.5 * one_t + gu * (1 + 3 * GELU_C * x * x)
        return [gx, y]  # x, w

    ex, ew = leaves = _leaves(x, w)

    def e_fwd():
        return w2_gelu.gelu_loss(ex, ew)

    step = _eager_step(leaves, e_fwd)
    size = f"n={n:.0e}" + ("" if cube == "pow" else " x*x*x")
    case = Case("W2 gelu", size, np_fwd, np_step, e_fwd, step, np_step, step, ops=10)
    return _with_torch(case, [x, w], w2_gelu.peer("torch") if TORCH is not None else None)


# -- W3: MLP with softmax cross-entropy and an SGD update -----------------------------------------------
def w3(B: int, D: int, H: int, C: int, rng: np.random.Generator, lr: float = 0.01) -> Case:
    X = rng.standard_normal((B, D)).astype(F32)
    labels = rng.integers(0, C, B)
    init = [(rng.standard_normal((D, H)) / np.sqrt(D)).astype(F32), np.zeros(H, F32),
            (rng.standard_normal((H, C)) / np.sqrt(H)).astype(F32), np.zeros(C, F32)]
    np_params = [p.copy() for p in init]
    rows = np.arange(B)

    def np_fwd():
        W1, b1, W2, b2 = np_params
        h = np.tanh(X @ W1 + b1)
        logits = h @ W2 + b2
        shifted = logits - logits.max(axis=1, keepdims=True)
        e = np.exp(shifted)
        s = e.sum(axis=1, keepdims=True)
        loss = -(shifted[rows, labels] - np.log(s[:, 0])).mean()
        return loss, h, e / s

    def np_grads():
        W1, b1, W2, b2 = np_params
        _, h, p = np_fwd()
        g_logits = p.copy()
        g_logits[rows, labels] -= 1
        g_logits /= B
        gh = g_logits @ W2.T
        gz = gh * (1 - h * h)
        return [X.T @ gz, gz.sum(0), h.T @ g_logits, g_logits.sum(0)]

    def np_step():
        grads = np_grads()
        for p, g in zip(np_params, grads):
            p -= lr * g
        return grads

    eX, eY = eager.from_numpy(X), eager.from_numpy(np.eye(C, dtype=F32)[labels])  # one-hot: the same loss
    params = [nn.Parameter(eager.from_numpy(p.copy())) for p in init]
    sgd = optim.SGD(params, lr=lr)

    def e_fwd():
        return w3_mlp.mlp_loss(eX, eY, *params)

    def e_grads():
        sgd.zero_grad()
        e_fwd().backward()
        return [p.grad for p in params]

    def e_step():
        grads = e_grads()
        sgd.step()
        return grads

    case = Case("W3 mlp", f"{B}x{D}x{H}x{C}", np_fwd, np_step, e_fwd, e_step, np_grads, e_grads)
    if TORCH is not None:
        torch, loss = TORCH, w3_mlp.peer("torch")
        tX, tY = torch.from_numpy(X), torch.from_numpy(np.eye(C, dtype=F32)[labels])
        tparams = [torch.from_numpy(p.copy()).requires_grad_() for p in init]

        def t_grads():
            for p in tparams:
                p.grad = None
            loss(tX, tY, *tparams).backward()
            return [p.grad for p in tparams]

        def t_step():
            grads = t_grads()
            with torch.no_grad():
                for p in tparams:
                    p.sub_(p.grad, alpha=lr)
            return grads

        case.torch_fwd, case.torch_step, case.torch_grads = lambda: loss(tX, tY, *tparams), t_step, t_grads
    return case


# -- W4: a chain of scalar ops (per-op overhead) -------------------------------------------------------
def w4(rng: np.random.Generator) -> Case:
    x0 = F32(rng.uniform(0.2, 0.8))

    def np_fwd():
        xs, x = [], x0
        for _ in range(W4_STEPS):
            xs.append(x)
            x = x * F32(1.0001) + F32(0.5) * np.sin(x)
        return x, xs

    def np_step():
        _, xs = np_fwd()
        g = F32(1.0)
        for x in reversed(xs):
            g = g * (F32(1.0001) + F32(0.5) * np.cos(x))
        return [np.asarray(g)]

    (ex,) = _leaves(np.asarray(x0))

    def e_fwd():
        return w4_scalar.scalar_chain(ex, W4_STEPS)

    def step():  # forward plus autograd.grad: the per-op measure the issue defines
        return list(eager.autograd.grad(e_fwd(), [ex]))

    case = Case("W4 scalar", f"{W4_STEPS} steps", np_fwd, np_step, e_fwd, step, np_step, step,
                ops=W4_STEPS * W4_OPS_PER_STEP)
    chain = w4_scalar.peer("torch", W4_STEPS) if TORCH is not None else None
    return _with_torch(case, [np.asarray(x0)], chain, grad=True)


# -- running ---------------------------------------------------------------------------------------------
def cases(quick: bool, only: set[str] | None, cube: str = "pow", seed: int = 0) -> list[Case]:
    rng = np.random.default_rng(seed)
    w1_sizes = (100, 10_000) if quick else (100, 10_000, 1_000_000)
    w2_sizes = (10_000, 100_000) if quick else (10_000, 1_000_000, 8_000_000)
    w3_shapes = ((32, 64, 64, 10),) if quick else ((32, 64, 64, 10), (256, 784, 512, 10))
    out: list[Callable[[], Case]] = []
    out += [lambda n=n: w1(n, rng) for n in w1_sizes]
    out += [lambda n=n: w2(n, rng, cube) for n in w2_sizes]
    out += [lambda s=s: w3(*s, rng) for s in w3_shapes]
    out += [lambda: w4(rng)]
    built = []
    for make in out:
        case = make()
        if only is None or case.workload.split()[0] in only:
            built.append(case)
    return built


def check(case: Case) -> float:
    """Largest relative difference between eager's and NumPy's gradients (float32 math)."""
    ref = [np.asarray(g, dtype=np.float64) for g in case.numpy_grads()]
    got = [np.asarray(g.detach(), dtype=np.float64) for g in case.eager_grads()]
    worst = 0.0
    for r, g in zip(ref, got):
        scale = max(1.0, float(np.abs(r).max()))
        worst = max(worst, float(np.abs(r - g).max()) / scale)
    if worst > 1e-3:
        raise AssertionError(f"{case.workload} {case.size}: eager and NumPy gradients differ ({worst:.2e})")
    if case.torch_grads is not None:
        for r, t in zip(ref, case.torch_grads()):
            diff = float(np.abs(r - t.detach().numpy().astype(np.float64)).max()) / max(1.0, float(np.abs(r).max()))
            if diff > 1e-3:
                raise AssertionError(f"{case.workload} {case.size}: PyTorch and NumPy gradients differ ({diff:.2e})")
    return worst


def measure(case: Case, repeats: int | None, budget: float = 2.0) -> dict:
    """Medians of NumPy and eager, forward alone and forward+backward, interleaved."""
    max_error = check(case)
    probe = time_interleaved([case.eager_step], repeats=1, warmup=1)[0]
    reps = repeats or max(5, repeats_for(probe, budget))  # at least 5 interleaved runs (the W4 rule)
    inner = max(1, int(2e-3 / max(probe, 1e-9)))  # time short calls in batches of ~2 ms
    # all in one rotation, so load changes on a shared machine hit each alike
    fns = [case.numpy_fwd, case.eager_fwd, case.numpy_step, case.eager_step]
    if case.torch_step is not None:
        fns += [case.torch_fwd, case.torch_step]
    samples = sample_interleaved(fns, reps, inner=inner)
    np_fwd, e_fwd, np_step, e_step = (statistics.median(s) for s in samples[:4])
    best = [min(s) for s in samples]  # the least disturbed run: a check on the medians when the machine is busy
    row = {
        "workload": case.workload, "size": case.size, "repeats": reps,
        "numpy_fwd_s": np_fwd, "eager_fwd_s": e_fwd, "fwd_ratio": e_fwd / np_fwd,
        "numpy_fwd_bwd_s": np_step, "eager_fwd_bwd_s": e_step, "fwd_bwd_ratio": e_step / np_step,
        "min_fwd_ratio": best[1] / best[0], "min_fwd_bwd_ratio": best[3] / best[2],
        "max_rel_grad_diff": max_error,
    }
    if case.ops:
        row["eager_us_per_op_fwd_bwd"] = e_step / case.ops * 1e6
    if case.torch_step is not None:
        t_fwd, t_step = statistics.median(samples[4]), statistics.median(samples[5])
        row.update(torch_fwd_s=t_fwd, torch_fwd_bwd_s=t_step, eager_vs_torch_fwd_bwd=e_step / t_step,
                   eager_vs_torch_spread=[min(samples[3]) / max(samples[5]), max(samples[3]) / min(samples[5])])
        if case.ops:
            row["torch_us_per_op_fwd_bwd"] = t_step / case.ops * 1e6
    return row


def profile(case: Case, seconds: float = 2.0, top: int = 20) -> None:
    """cProfile of eager forward+backward, sorted by own time: what limits eager here."""
    probe = time_interleaved([case.eager_step], repeats=1, warmup=1)[0]
    calls = max(1, int(seconds / max(probe, 1e-9)))
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        case.eager_step()
    prof.disable()
    print(f"cProfile of {calls} eager fwd+bwd runs of {case.workload} {case.size}:")
    pstats.Stats(prof).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes only (seconds, not minutes)")
    parser.add_argument("--only", default=None, help="comma-separated workloads, e.g. W1,W4")
    parser.add_argument("--repeats", type=int, default=None, help="timed runs per measurement (default: adaptive)")
    parser.add_argument("--cube", choices=("pow", "mul"), default="pow",
                        help="W2's NumPy baseline: x**3 as written (pow) or x*x*x (mul)")
    parser.add_argument("--malloc", choices=("steady", "default"), default="steady",
                        help="steady: keep freed memory for reuse (see common.steady_malloc); default: as is")
    parser.add_argument("--json", metavar="FILE", default=None, help="also write the results as JSON")
    parser.add_argument("--profile", metavar="WORKLOAD", default=None,
                        help="profile eager on this workload (its largest size) instead of timing")
    parser.add_argument("--no-torch", action="store_true", help="leave out the PyTorch eager column")
    args = parser.parse_args(argv)
    only = {w.strip().upper() for w in args.only.split(",")} if args.only else None
    malloc = steady_malloc() if args.malloc == "steady" else "default"
    global TORCH
    TORCH = None if args.no_torch else torch_or_none()

    if args.profile:
        case = cases(args.quick, {args.profile.upper()}, args.cube)[-1]
        profile(case)
        return []

    rows = []
    for case in cases(args.quick, only, args.cube):
        rows.append(measure(case, args.repeats, budget=0.2 if args.quick else 2.0))
        print(f"  measured {case.workload} {case.size}", file=sys.stderr, flush=True)
    headers = ["workload", "size", "numpy fwd ms", "eager fwd ms", "fwd ratio", "numpy f+b ms", "eager f+b ms",
               "f+b ratio", "(of mins)", "us/op f+b", "torch f+b ms", "eager/torch f+b", "torch us/op"]
    table = [[r["workload"], r["size"], r["numpy_fwd_s"] * 1e3, r["eager_fwd_s"] * 1e3, r["fwd_ratio"],
              r["numpy_fwd_bwd_s"] * 1e3, r["eager_fwd_bwd_s"] * 1e3, r["fwd_bwd_ratio"], r["min_fwd_bwd_ratio"],
              r.get("eager_us_per_op_fwd_bwd", ""), r["torch_fwd_bwd_s"] * 1e3 if "torch_fwd_bwd_s" in r else "",
              r.get("eager_vs_torch_fwd_bwd", ""), r.get("torch_us_per_op_fwd_bwd", "")] for r in rows]
    print(f"eager vs hand-written NumPy and PyTorch eager (medians; ratio = eager / NumPy; W2 cube: {args.cube}; "
          f"malloc: {malloc})")
    print(format_table(headers, table))
    if TORCH is None:
        print("PyTorch is not installed (or --no-torch): no PyTorch column")
    if args.json:
        write_json(args.json, {"benchmark": "eager_bench", "quick": args.quick, "cube": args.cube, "malloc": malloc,
                               "results": rows})
    return rows


if __name__ == "__main__":
    main()
