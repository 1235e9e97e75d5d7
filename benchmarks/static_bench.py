"""What static's front end costs: tracing, verifying and differentiating the design's
workloads, and the overhead of a cached call to a compiled function.

- trace + verify + autodiff of W3 (B,D,H,C) = (256,784,512,10): the joint graph of the
  loss and its gradients in W1,b1,W2,b2 (target <= 0.1 s);
- the same for W4's 400-op unrolled loop (target <= 0.25 s);
- the overhead of a cached call with three small inputs, without the computation
  (target <= 5 us), measured two ways: the call path with the executable replaced by one
  that returns a ready result (signature, cache lookup, argument and result handling
  only), and a real call minus the executable's own run, interleaved.

Medians of repeated runs after a warm-up; absolute times on shared machines are noisy.

    python benchmarks/static_bench.py
    python benchmarks/static_bench.py --json static_bench.json
    python benchmarks/static_bench.py --quick        # a few repeats, seconds
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

from common import format_table, time_interleaved, write_json  # noqa: E402
from compiled_bench import w3_loss as w3  # noqa: E402  (the workloads, defined once)
from compiled_bench import w4

import eager  # noqa: E402
import static  # noqa: E402
from static.ir import verify  # noqa: E402
from static.trace_function import trace_function  # noqa: E402

TARGETS = {"W3": 0.1, "W4": 0.25, "call overhead": 5e-6}


def w3_args(B=256, D=784, H=512, C=10):
    rng = np.random.default_rng(0)
    return (rng.standard_normal((B, D)).astype(np.float32), np.eye(C, dtype=np.float32)[rng.integers(0, C, B)],
            (rng.standard_normal((D, H)) * 0.03).astype(np.float32), np.zeros(H, np.float32),
            (rng.standard_normal((H, C)) * 0.04).astype(np.float32), np.zeros(C, np.float32))


def _median_time(fn, repeats):
    fn()  # warm-up
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def front_end(name, fn, args, argnums, repeats):
    """Seconds to trace the forward alone, to verify the joint graph alone, and to trace +
    differentiate + verify the joint graph (what static.grad builds)."""
    joint_fn = static.value_and_grad(fn, argnums=argnums)._traceable
    joint = trace_function(joint_fn, args).graph
    return {
        "workload": name,
        "forward ops": len(trace_function(fn, args).graph.nodes),
        "joint ops": len(joint.nodes),
        "forward trace+verify s": _median_time(lambda: trace_function(fn, args), repeats),
        "verify joint s": _median_time(lambda: verify(joint), repeats),
        "trace+autodiff+verify s": _median_time(lambda: trace_function(joint_fn, args), repeats),
        "target s": TARGETS[name],
    }


class _Ready:
    """An executable that does no work: it hands back a result made in advance, so that timing
    a call through it times static's call path alone."""

    def __init__(self, result):
        self.result = result

    def run(self, arrays):
        return self.result


def call_overhead(repeats, inner):
    """Per-call seconds of static's own work on a cached call with three small inputs."""
    rows = []
    for kind, make in (("eager tensors", lambda: eager.ones(4)), ("numpy arrays", lambda: np.ones(4, np.float32))):
        a, b, c = make(), make(), make()
        f = static.compile(lambda a, b, c: a + b * c)
        f(a, b, c)
        (entry,) = f._cache.values()
        arrays = [x._data if isinstance(x, eager.Tensor) else x for x in (a, b, c)]
        t_call, t_run = time_interleaved([lambda: f(a, b, c), lambda: entry.forward.run(arrays)],
                                         repeats=repeats, warmup=2, inner=inner)
        real = entry.forward
        entry.forward = _Ready(real.run(arrays))
        try:
            (t_path,) = time_interleaved([lambda: f(a, b, c)], repeats=repeats, warmup=2, inner=inner)
        finally:
            entry.forward = real
        rows.append({"inputs": kind, "call path (no-op executable) us": t_path * 1e6,
                     "full call us": t_call * 1e6, "executable run us": t_run * 1e6,
                     "call - run us": (t_call - t_run) * 1e6, "target us": TARGETS["call overhead"] * 1e6})
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="few repeats (a smoke run; tracing cost does not "
                        "depend on array sizes, so W3 keeps the design's sizes)")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--json", help="also write the results to this JSON file")
    opts = parser.parse_args(argv)
    repeats = opts.repeats or (2 if opts.quick else 7)

    fe = [front_end("W3", w3, w3_args(), (2, 3, 4, 5), repeats),
          front_end("W4", w4, (np.asarray(0.3, np.float32),), 0, repeats)]
    print("static front end: trace + verify + autodiff (seconds, medians)")
    print(format_table(list(fe[0]), [list(r.values()) for r in fe]))
    calls = call_overhead(repeats=repeats if opts.quick else max(repeats, 15), inner=200 if opts.quick else 2000)
    print("\ncached call to a compiled function of three small inputs (microseconds, medians)")
    print(format_table(list(calls[0]), [list(r.values()) for r in calls]))
    if opts.json:
        write_json(opts.json, {"front_end": fe, "call_overhead": calls})
    return {"front_end": fe, "call_overhead": calls}


if __name__ == "__main__":
    main()
