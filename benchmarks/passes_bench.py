"""What the optimization pipeline does to the design's workloads, and what it costs.

For W1-W4 (each as `static.value_and_grad` over its differentiable arguments: the joint
forward+backward graph), it reports IR nodes as traced and after the pipeline (a fused
region counts once; its body ops are counted apart), fused regions, and the time of
trace + autodiff + every pass (no code generation). For W2 and W3 called on tensors that
require grad (eager autograd composition) it also reports the bytes the forward saves for
the backward with and without min-cut rematerialization.
Targets (issue: passes): W3's joint graph <= 0.1 s, W4's 400-op graph <= 0.25 s, tracing included.

    python benchmarks/passes_bench.py [--json FILE]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # run from a checkout

import numpy as np  # noqa: E402
from common import format_table, write_json  # noqa: E402
from compiled_bench import w1, w2, w3_loss, w4  # noqa: E402  (the workloads, defined once)

import eager  # noqa: E402
import static  # noqa: E402
from static.passes import recording, run_pipeline  # noqa: E402


def cases():
    rng = np.random.default_rng(0)
    f32 = lambda *s: eager.tensor(rng.standard_normal(s).astype(np.float32))  # noqa: E731
    B, D, H, C = 256, 784, 512, 10
    return [
        ("W1 n=1e6", w1, [f32(10**6) for _ in range(5)], (0, 1, 2, 3, 4)),
        ("W2 n=1e6", w2, [f32(10**6), f32(10**6)], (0, 1)),
        ("W3 256x784x512x10", w3_loss, [f32(B, D), eager.tensor(np.eye(C, dtype=np.float32)[rng.integers(0, C, B)]),
                                        f32(D, H), f32(H), f32(H, C), f32(C)], (2, 3, 4, 5)),
        ("W4 100 steps", w4, [eager.tensor(0.3)], 0),
    ]


def _count(graph) -> tuple[int, int, int]:
    top = len(graph.nodes)
    fused = [n for n in graph.nodes if n.op == "fused"]
    return top, len(fused), sum(len(n.body.nodes) for n in fused)


def measure(name, fn, args, argnums, repeats: int = 7) -> dict:
    g = static.value_and_grad(fn, argnums=argnums)
    traced = static.trace(g, *args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        graph = run_pipeline(static.trace(g, *args), [])
        times.append(time.perf_counter() - start)
    top, regions, fused_ops = _count(graph)
    return {"case": name, "traced_nodes": len(traced.nodes), "optimized_nodes": top, "fused_regions": regions,
            "ops_in_regions": fused_ops, "other_nodes": top - regions,
            "pipeline_s": statistics.median(times)}


def saved_bytes(name, fn, args, argnums) -> dict:
    """Bytes the forward keeps for CompiledFunctionBackward, from the partition stage."""
    nums = (argnums,) if isinstance(argnums, int) else argnums
    tensors = [a.detach().requires_grad_() if i in nums else a for i, a in enumerate(args)]
    f = static.compile(fn)
    with recording():
        text = f.explain(*tensors)
    line = next(ln for ln in text.splitlines() if ln.startswith("== partition"))
    stats = dict(part.split(": ") for part in line.split("(", 1)[1].rstrip(")").split(", "))
    return {"case": name, "saved_bytes": int(stats["saved_bytes"]),
            "saved_bytes_without_remat": int(stats["saved_bytes_without_remat"]),
            "recomputed_ops": int(stats["recomputed_ops"])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    args = ap.parse_args(argv)
    rows = [measure(*c, repeats=3 if args.quick else 7) for c in cases()]
    print("pipeline on joint forward+backward graphs (value_and_grad): trace + autodiff + passes, medians")
    print(format_table(["case", "traced nodes", "optimized nodes", "fused regions", "ops in regions",
                        "other nodes", "pipeline s"],
                       [[r["case"], r["traced_nodes"], r["optimized_nodes"], r["fused_regions"], r["ops_in_regions"],
                         r["other_nodes"], f"{r['pipeline_s']:.4f}"] for r in rows]))
    saved = [saved_bytes(*c) for c in cases()[1:3]]
    print("\nsaved for the backward under eager autograd (min-cut remat vs saving what the backward reads)")
    print(format_table(["case", "saved bytes", "without remat", "recomputed ops"],
                       [[s["case"], s["saved_bytes"], s["saved_bytes_without_remat"], s["recomputed_ops"]]
                        for s in saved]))
    if args.json:
        write_json(args.json, {"pipeline": rows, "saved": saved})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
