"""What a compiled call costs around its generated code, at n=1 where nothing else counts.

W1 (five tensors in, the loss out) at n=1, per backend (numpy, and native when a C++
compiler is found): the compiled call, the executable it runs called directly (the
generated code alone), and NumPy written by hand; the overhead is the first less the
second. Also the call whose inputs require grad (it records a CompiledFunctionBackward).

    python benchmarks/call_overhead_bench.py [--runs 3] [--quick] [--json out.json]

Each run interleaves the candidates and keeps the minimum of its samples (each sample
times a loop of calls); the table gives the median over runs and the min-max spread.
"""
from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import format_table, loop_bench_args, write_json  # noqa: E402

import eager  # noqa: E402
import static  # noqa: E402


def w1(a, w1, w2, w3, w4):
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    return (10 - d).sum()


def w1_hand(a, w1, w2, w3, w4):
    return (10 - (w3 * (w1 * a) + w4 * (w2 * a))).sum()


def _per_call(fn: Callable[[], object], loops: int) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops


def candidates(backend: str) -> dict[str, Callable[[], object]]:
    rng = np.random.default_rng(0)
    tensors = [eager.tensor(rng.standard_normal(1).astype(np.float32)) for _ in range(5)]
    arrays = [t.numpy() for t in tensors]
    compiled = static.compile(w1, backend=backend)
    compiled(*tensors)
    executable = next(iter(compiled._cache.values())).forward  # the generated code alone
    needs_grad = [t.detach().requires_grad_() for t in tensors]
    with_grad = static.compile(w1, backend=backend)
    with_grad(*needs_grad)
    return {"compiled call": lambda: compiled(*tensors), "generated code": lambda: executable.run(arrays),
            "hand NumPy": lambda: w1_hand(*arrays), "compiled call, grad": lambda: with_grad(*needs_grad)}


def measure(fns: dict[str, Callable[[], object]], runs: int, samples: int, loops: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        best = {name: float("inf") for name in fns}
        for _ in range(samples):
            for name, fn in fns.items():
                best[name] = min(best[name], _per_call(fn, loops if "grad" not in name else max(1, loops // 10)))
        for name in fns:
            out[name].append(best[name])
    return out


def main(argv: list[str] | None = None) -> dict:
    args = loop_bench_args(__doc__, argv)
    samples, loops = (2, 200) if args.quick else (7, 5000)
    backends = ["numpy", "native"]
    rows, payload = [], {"runs": args.runs, "backends": {}}
    for backend in backends:
        try:
            fns = candidates(backend)
        except Exception as exc:  # noqa: BLE001  (a backend that cannot build here is reported, not fatal)
            print(f"{backend}: not measured ({type(exc).__name__}: {exc})")
            continue
        per_run = measure(fns, args.runs, samples, loops)
        overhead = [c - g for c, g in zip(per_run["compiled call"], per_run["generated code"])]
        payload["backends"][backend] = {**per_run, "overhead": overhead}
        for name, values in [*per_run.items(), ("overhead (call - code)", overhead)]:
            rows.append([backend, name, statistics.median(values) * 1e6,
                         f"{min(values) * 1e6:.2f}-{max(values) * 1e6:.2f}"])
    print(format_table(["backend", "W1 n=1", "us per call", "spread"], rows))
    if args.json:
        write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    main()
