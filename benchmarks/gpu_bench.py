"""Forward+backward on a CUDA GPU: graphmode eager (CuPy), the function compiled for CuPy
(fused ElementwiseKernel/ReductionKernel code), and PyTorch eager on the same GPU where it is
installed with CUDA, the three interleaved. Needs CuPy and a GPU; prints one table: the median
of `--repeat` timings per run, and each ratio's median and min-max spread over `--runs` runs.

    python benchmarks/gpu_bench.py --runs 3
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import time_interleaved  # noqa: E402

import eager  # noqa: E402
import static  # noqa: E402
from examples.workloads import w1_seed, w2_gelu  # noqa: E402


def _graphmode_steps(loss, arrays):
    on_gpu = [eager.tensor(a, device="cuda") for a in arrays]  # copied once, as the torch peer's

    def fresh():
        return [t.detach().requires_grad_() for t in on_gpu]

    compiled = static.compile(loss, backend="cupy")

    def eager_step():
        loss(*fresh()).backward()

    def compiled_step():
        compiled(*fresh()).backward()

    return eager_step, compiled_step


def _torch_step(workload, arrays):
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None, None
    if not torch.cuda.is_available():
        return None, None
    peer = workload.peer("torch")
    tensors = [torch.tensor(a, device="cuda") for a in arrays]

    def step():
        xs = [t.detach().requires_grad_() for t in tensors]
        peer(*xs).backward()

    return step, torch.cuda.synchronize


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=30)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--quick", action="store_true", help="one run of few repeats: check that it runs")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.repeat = 1, 3
    import eager  # noqa: PLC0415

    if not eager.cuda.is_available():  # run_all.py --quick on a CPU machine: nothing to measure, not a failure
        print("gpu_bench: skipped, no CUDA device with CuPy (pip install -e .[cuda12] or .[cuda13])")
        return
    import cupy as cp  # noqa: PLC0415

    def sync():
        cp.cuda.Device().synchronize()

    rows = {}
    for label, workload, n in [("W1 seed n=8e6", w1_seed, 8_000_000), ("W2 gelu n=8e6", w2_gelu, 8_000_000)]:
        _, tensors = workload.workload(n)
        arrays = [t.detach().numpy() for t in tensors]
        eager_step, compiled_step = _graphmode_steps(workload.workload(8)[0], arrays)
        torch_step, torch_sync = _torch_step(workload, arrays)
        fns = {"eager_ms": (eager_step, sync), "compiled_ms": (compiled_step, sync)}
        if torch_step is not None:
            fns["torch_eager_ms"] = (torch_step, torch_sync)
        synced = [lambda f=f, s=s: (f(), s()) for f, s in fns.values()]  # a call ends when its kernels do
        rows[label] = [{k: t * 1e3 for k, t in zip(fns, time_interleaved(synced, args.repeat))}
                       for _ in range(args.runs)]
    print(f"{'workload':<16} {'eager ms':>10} {'compiled ms':>12} {'torch ms':>10} {'eager/compiled':>22} {'compiled/torch':>22}")
    out = {}
    for label, runs in rows.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        speed = [r["eager_ms"] / r["compiled_ms"] for r in runs]
        vs_torch = [r["compiled_ms"] / r["torch_eager_ms"] for r in runs] if "torch_eager_ms" in runs[0] else []

        def fmt(xs):
            return f"{statistics.median(xs):.2f} [{min(xs):.2f}-{max(xs):.2f}]" if xs else "-"

        print(f"{label:<16} {med['eager_ms']:>10.2f} {med['compiled_ms']:>12.2f} "
              f"{med.get('torch_eager_ms', float('nan')):>10.2f} {fmt(speed):>22} {fmt(vs_torch):>22}")
        out[label] = {"runs": runs, "eager/compiled ratio": speed, "compiled/torch ratio": vs_torch}
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
