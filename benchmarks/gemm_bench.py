"""Single-precision matrix products on one thread: the project's own sgemm (gmnative.gemm,
csrc/gm_gemm.h) against NumPy's OpenBLAS and PyTorch's (MKL) on the project's product shapes,
each library in a process of its own, one thread each:

- W5 (the tiny GPT, examples/workloads/w5_gpt.py): X(512,64) @ W^T(64,N), G(512,N) @ W(N,64),
  G^T(N,512) @ X(512,64) for N in 192, 64, 256, 65, and (512,256) @ (256,64);
- W6 (the small CNN): conv2's per-image products, W(32,144) @ cols(144,196), its input
  gradient W^T(144,32) @ G(32,196) and weight gradient G(32,196) @ cols^T(196,144), as
  compact products (the kernel's record on them);
- W6 conv2 as the layer runs it, a batch of 32 16x14x14 images by a 32x16x3x3 weight, per
  image: ours the image-by-image kernels (gmnative.conv_kernels: the products on the padded
  image's grid, gm_sgemm_grid, with the padding copies, the fold of dx and the compaction
  included), NumPy the batch's products alone (np.matmul of the batch, the columns made
  beforehand, no fold: a lower bound of its path), PyTorch its own conv2d, conv2d_input and
  conv2d_weight (oneDNN's direct convolutions); rates count the compact products' flops.

    python benchmarks/gemm_bench.py [--runs 3] [--quick] [--json out.json]

Why processes of their own: PyTorch brings its own OpenMP runtime and BLAS. Why one thread:
the project splits products by rows itself, one single-threaded call a part, so the
per-core rate is what decides. Each call includes the result's allocation and the Python
call (NumPy's `a @ b`, torch's `a @ b`, gmnative.gemm.product), as an op pays them. Times
are CPU time of the calling thread (time.thread_time), the median of several samples per
shape; rounds run the three processes in turn (alternating order), and the table gives the
median GFLOP/s over rounds and the ratio ours/peer per round (median and min-max spread).
On a shared machine read the ratios, not the absolute rates.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

LIBS = ("ours", "numpy", "torch")


def shapes() -> list[tuple[str, tuple, tuple, bool, bool]]:
    """(name, stored A shape, stored B shape, A transposed, B transposed): C = op(A) op(B)."""
    out = []
    for n in (192, 64, 256, 65):
        out += [(f"W5 X@W^T n={n}", (512, 64), (n, 64), False, True),
                (f"W5 G@W n={n}", (512, n), (n, 64), False, False),
                (f"W5 G^T@X n={n}", (512, n), (512, 64), True, False)]
    out.append(("W5 (512,256)@(256,64)", (512, 256), (256, 64), False, False))
    out += [("W6 W@cols", (32, 144), (144, 196), False, False),
            ("W6 W^T@G", (32, 144), (32, 196), True, False),
            ("W6 G@cols^T", (32, 196), (144, 196), False, True)]
    return out


# W6's second convolution, image by image: (row name, part)
CONV_ROWS = (("W6 conv2 fwd/img", "fwd"), ("W6 conv2 dx/img", "dx"), ("W6 conv2 dw/img", "dw"))


def _conv_functions(lib: str, part: str):
    """A call running `part` of W6's conv2 over a batch of 32 images with `lib` on one thread."""
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 16, 14, 14)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    g = rng.standard_normal((32, 32, 14, 14)).astype(np.float32)
    if lib == "torch":
        import torch  # noqa: PLC0415

        xt, wt, gt = torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(g)
        if part == "fwd":
            return lambda: torch.nn.functional.conv2d(xt, wt, None, 1, 1)
        if part == "dx":
            return lambda: torch.nn.grad.conv2d_input(xt.shape, wt, gt, 1, 1)
        return lambda: torch.nn.grad.conv2d_weight(xt, wt.shape, gt, 1, 1)
    from gmnative import conv_kernels as ck  # noqa: PLC0415

    if lib == "numpy":
        cols = ck.im2col2d_batch_major(x, (3, 3), (14, 14), (1, 1), (1, 1), (1, 1))
        wm, gm = w.reshape(32, -1), g.reshape(32, 32, -1)
        if part == "fwd":
            return lambda: np.matmul(wm, cols)
        if part == "dx":
            return lambda: np.matmul(wm.T, gm)
        g2 = np.ascontiguousarray(gm.transpose(1, 0, 2).reshape(32, -1))
        c2 = np.ascontiguousarray(cols.transpose(0, 2, 1).reshape(-1, 144))
        return lambda: g2 @ c2
    from gmbase import threads  # noqa: PLC0415

    threads.set_num_threads(1)
    if part == "fwd":
        return lambda: ck.conv2d_images(x, w, None, (14, 14), (1, 1), (1, 1), (1, 1))
    want = part == "dx"
    return lambda: ck.conv2d_images_backward(g, x, w, (1, 1), (1, 1), (1, 1), want, not want)


def _flops(a_shape, b_shape, ta, tb) -> int:
    m, k = (a_shape[1], a_shape[0]) if ta else a_shape
    n = b_shape[0] if tb else b_shape[1]
    return 2 * m * n * k


def child(lib: str, quick: bool) -> dict:
    """GFLOP/s per shape for one library on one thread (run in a process of its own)."""
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(0)
    results = {}
    if lib == "torch":
        import torch  # noqa: PLC0415

        torch.set_num_threads(1)
    elif lib == "ours":
        from gmnative import gemm  # noqa: PLC0415

        if not gemm.enabled():
            return {"error": "the own sgemm is not available (no compiler, or GRAPHMODE_NATIVE_GEMM=0)"}
    for name, sa, sb, ta, tb in shapes():
        A = rng.standard_normal(sa).astype(np.float32)
        B = rng.standard_normal(sb).astype(np.float32)
        a, b = (A.T if ta else A), (B.T if tb else B)
        if lib == "torch":
            ta_, tb_ = torch.from_numpy(A), torch.from_numpy(B)
            at, bt = (ta_.T if ta else ta_), (tb_.T if tb else tb_)

            def fn(at=at, bt=bt):
                return at @ bt
        elif lib == "numpy":
            def fn(a=a, b=b):
                return a @ b
        else:
            def fn(a=a, b=b):
                return gemm.product(a, b)
        assert fn() is not None, name
        flops = _flops(sa, sb, ta, tb)
        results[name] = _gflops(fn, flops, max(3, min(2000, int(2e8 // flops))) if not quick else 3, quick)
    for name, part in CONV_ROWS:
        fn = _conv_functions(lib, part)
        assert fn() is not None, name
        results[name] = _gflops(fn, 2 * 32 * 144 * 196 * 32, 3 if quick else 60, quick)
    return results


def _gflops(fn, flops: int, reps: int, quick: bool) -> float:
    """GFLOP/s of `fn` (`flops` a call): a warm-up, then the median of 3 (quick) or 7 samples
    of `reps` calls each, on this thread's CPU clock."""
    for _ in range(max(3, reps // 10)):
        fn()
    samples = []
    for _ in range(3 if quick else 7):
        t = time.thread_time()
        for _ in range(reps):
            fn()
        samples.append((time.thread_time() - t) / reps)
    return flops / statistics.median(samples) / 1e9


def _run_child(lib: str, quick: bool) -> dict:
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env.pop(var, None)
    env["OPENBLAS_NUM_THREADS"] = "1"  # (NumPy's BLAS on one thread, as the project runs it per part)
    cmd = [sys.executable, __file__, "--child", lib] + (["--quick"] if quick else [])
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900, check=False)
    if run.returncode != 0:
        return {"error": (run.stderr.strip().splitlines() or ["failed"])[-1]}
    return json.loads(run.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="few repetitions, to check the script runs")
    parser.add_argument("--json", default=None)
    parser.add_argument("--child", choices=LIBS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.quick)))
        return 0
    from common import format_table, machine_info, write_json  # noqa: PLC0415

    try:
        import torch  # noqa: F401, PLC0415
        libs = LIBS
    except ImportError:
        libs = LIBS[:2]
    rounds: list[dict] = []
    for r in range(max(1, args.runs)):
        order = libs if r % 2 == 0 else tuple(reversed(libs))
        rounds.append({lib: _run_child(lib, args.quick) for lib in order})
    errors = {lib: rd[lib]["error"] for rd in rounds for lib in libs if "error" in rd[lib]}
    for lib, why in errors.items():
        print(f"{lib}: {why}")
    good = [lib for lib in libs if lib not in errors]
    rows = []
    payload: dict = {"shapes": {}}
    for name in [name for name, *_ in shapes()] + [name for name, _ in CONV_ROWS]:
        rates = {lib: statistics.median(rd[lib][name] for rd in rounds) for lib in good}
        row: list = [name] + [f"{rates[lib]:.0f}" for lib in good]
        entry: dict = {"gflops": rates}
        if "ours" in good:
            for peer in good[1:]:
                ratios = [rd["ours"][name] / rd[peer][name] for rd in rounds]
                row.append(f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})")
                entry[f"ours/{peer}"] = ratios
        rows.append(row)
        payload["shapes"][name] = entry
    info = machine_info()
    print(f"one thread each; GFLOP/s (median of {len(rounds)} rounds); host vector ISA {info['vector_isa']} "
          f"({info['vector_bits']} bits), {info['cpu_count']} CPUs, load {os.getloadavg()[0]:.1f}")
    peers = [f"ours/{p} (spread)" for p in good[1:]] if "ours" in good else []
    print(format_table(["product"] + list(good) + peers, rows))
    if args.json:
        write_json(args.json, payload)
    return 0


if __name__ == "__main__":
    sys.exit(main())
