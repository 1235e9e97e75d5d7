"""A PyTorch-style training step (zero_grad, forward with dropout, backward, AdamW step),
eager vs the same step under @static.compile, and the compile time of the step cold and
from the disk caches (post-trace cache + codegen cache), each in a fresh process.

    python benchmarks/training_step_bench.py [--quick]

Ratios from one run are what to read: absolute times on a shared machine are noise.
"""
from __future__ import annotations

import argparse
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

import eager  # noqa: E402
import eager.nn as nn  # noqa: E402
import eager.nn.functional as F  # noqa: E402
import static  # noqa: E402


def make(batch: int, width: int):
    """(step, x, y): an MLP classifier with dropout, AdamW, cross-entropy."""
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU() if hasattr(nn, "GELU") else nn.Tanh(),
                          nn.Dropout(0.1), nn.Linear(4 * width, 10))
    opt = eager.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    rng = np.random.default_rng(0)
    x = eager.tensor(rng.standard_normal((batch, width)).astype(np.float32))
    y = eager.tensor(rng.integers(0, 10, batch))

    def step(x, y):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, x, y


def per_step(fn, x, y, repeats: int) -> float:
    for _ in range(3):
        fn(x, y)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn(x, y)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def compile_time_child(batch: int, width: int) -> None:
    step, x, y = make(batch, width)
    compiled = static.compile(step)
    t = time.perf_counter()
    compiled(x, y)  # first step: its own signature (optimizer state created)
    compiled(x, y)  # the steady signature
    print(time.perf_counter() - t)


def compile_times(batch: int, width: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="graphmode-bench-") as cache:
        env = {**os.environ, "GRAPHMODE_CACHE_DIR": cache}
        cmd = [sys.executable, __file__, "--child", str(batch), str(width)]
        cold, warm = (float(subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout)
                      for _ in range(2))
    return cold, warm


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--child", nargs=2, type=int)
    args = parser.parse_args()
    if args.child:
        compile_time_child(*args.child)
        return
    batch, width, repeats = (16, 32, 5) if args.quick else (64, 256, 50)
    step, x, y = make(batch, width)
    eager_s = per_step(step, x, y, repeats)
    step, x, y = make(batch, width)
    compiled_s = per_step(static.compile(step), x, y, repeats)
    cold, warm = compile_times(batch, width)
    print(f"training step (batch {batch}, width {width}): eager {eager_s * 1e3:.2f} ms, compiled "
          f"{compiled_s * 1e3:.2f} ms, speedup {eager_s / compiled_s:.2f}x")
    print(f"compile (two signatures): cold {cold * 1e3:.0f} ms, from the disk caches {warm * 1e3:.0f} ms")


if __name__ == "__main__":
    main()
