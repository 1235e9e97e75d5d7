"""The backward engine alone on small graphs, against PyTorch eager in the same process.

A model step's backward on a small graph is mostly the engine's own work (ordering the nodes,
counting dependencies, checking for hooks, summing and passing on gradients, accumulating
into `.grad`), not the VJPs' arithmetic. This benchmark times `loss.backward()` alone on
graphs built beforehand (the forward is not timed), per library:

- tiny: (x * w).sum() (two nodes, two leaves: the engine's fixed cost per pass);
- mlp: x -> linear -> tanh -> linear -> mse (about 10 nodes, 4 leaves);
- chain: 48 elementwise ops on a 16-element vector, two leaves (a long thin graph);
- fan: 8 branches of 4 ops from one leaf summed (gradients meeting at one node).

    python benchmarks/engine_bench.py [--rounds 5] [--against DIR] [--no-torch]

`--against DIR` also times the library found in DIR (a `git archive` copy of another commit),
interleaved with this tree's in separate processes, round by round, and reports the ratio
this/other per round (median, min-max). Times are CPU time (time.process_time, one BLAS
thread), which on a loaded machine counts what ran rather than waiting for a core.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
GRAPHS = ("tiny", "mlp", "chain", "fan")
BATCH = 200  # graphs built per timed batch (backward once each)


def _tiny(lib: Any, leaves: list[Any]) -> Any:
    x, w = leaves
    return (x * w).sum()


def _mlp(lib: Any, leaves: list[Any]) -> Any:
    x, w1, b1, w2, b2, y = leaves
    h = lib.tanh(x @ w1.t() + b1)
    out = h @ w2.t() + b2
    return ((out - y) ** 2).mean()


def _chain(lib: Any, leaves: list[Any]) -> Any:
    x, w = leaves
    h = x
    for _ in range(12):
        h = lib.sin(h * w) + h * 0.5
    return h.sum()


def _fan(lib: Any, leaves: list[Any]) -> Any:
    (x,) = leaves
    total = None
    for k in range(8):
        b = lib.exp(x * (0.1 * k)).tanh() * 2.0 - 1.0
        total = b if total is None else total + b
    return total.sum()


def _leaves(lib: Any, name: str) -> list[Any]:
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(0)

    def t(*shape: int, grad: bool = True) -> Any:
        return lib.tensor(rng.standard_normal(shape).astype(np.float32), requires_grad=grad)

    if name == "mlp":
        return [t(8, 16, grad=False), t(32, 16), t(32), t(4, 32), t(4), t(8, 4, grad=False)]
    if name in ("chain", "tiny"):
        return [t(16), t(16)]
    return [t(16)]


FORWARDS: dict[str, Callable[[Any, list[Any]], Any]] = {"tiny": _tiny, "mlp": _mlp, "chain": _chain, "fan": _fan}


def time_backward(lib: Any, name: str, batches: int) -> float:
    """Median CPU seconds of one `backward()` on `name`'s graph (batches of BATCH graphs built
    first, untimed)."""
    leaves = _leaves(lib, name)
    fwd = FORWARDS[name]
    samples = []
    for _ in range(batches):
        losses = [fwd(lib, leaves) for _ in range(BATCH)]
        for p in leaves:
            p.grad = None
        start = time.process_time()
        for loss in losses:
            loss.backward()
        samples.append((time.process_time() - start) / BATCH)
        del losses
    return statistics.median(samples)


def child(torch_too: bool, batches: int) -> dict[str, dict[str, float]]:
    """{graph: {library: seconds}} in this process, the libraries interleaved per graph."""
    import eager  # noqa: PLC0415

    libs: dict[str, Any] = {"eager": eager}
    if torch_too:
        import torch  # noqa: PLC0415

        torch.set_num_threads(1)
        libs["torch"] = torch
    out: dict[str, dict[str, float]] = {}
    for name in GRAPHS:
        for lib in libs.values():
            time_backward(lib, name, 1)  # warm-up
        out[name] = {k: time_backward(lib, name, batches) for k, lib in libs.items()}
    return out


def _run_child(tree: Path, torch_too: bool, batches: int) -> dict[str, dict[str, float]]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    script = (f"import sys, json; sys.path.insert(0, {str(tree)!r}); sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
              "import engine_bench as b\n"
              f"print(json.dumps(b.child({torch_too!r}, {batches!r})))\n")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd="/",
                         timeout=900)
    if res.returncode != 0:
        raise SystemExit(f"child for {tree} failed:\n{res.stderr[-3000:]}")
    result: dict[str, dict[str, float]] = json.loads(res.stdout.strip().splitlines()[-1])
    return result


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", "--runs", dest="rounds", type=int, default=5,
                    help="rounds, each a fresh process per tree (alternating their order)")
    ap.add_argument("--json", type=Path, default=None, help="write every round's seconds per backward here")
    ap.add_argument("--batches", type=int, default=5, help="timed batches per graph per process")
    ap.add_argument("--against", type=Path, default=None, help="another tree to time, interleaved")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args(argv)
    trees = {"this": ROOT} | ({"other": args.against.resolve()} if args.against else {})
    rounds: list[dict[str, dict[str, dict[str, float]]]] = []
    for r in range(args.rounds):
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        got = {label: _run_child(tree, not args.no_torch, args.batches) for label, tree in order}
        rounds.append(got)
        print(f"round {r + 1}: " + "; ".join(
            f"{g} " + " ".join(f"{label}/{lib} {got[label][g][lib] * 1e6:.1f}us" for label in trees
                               for lib in got[label][g]) for g in GRAPHS), flush=True)
    print("\nmedian us per backward (min-max), and ratios per round:")
    for g in GRAPHS:
        for label in trees:
            for lib in rounds[0][label][g]:
                us = [rd[label][g][lib] * 1e6 for rd in rounds]
                print(f"  {g:6s} {label:5s} {lib:6s} {_spread(us)}")
        if not args.no_torch:
            print(f"  {g:6s} this eager/torch {_spread([rd['this'][g]['eager'] / rd['this'][g]['torch'] for rd in rounds])}")
        if args.against:
            print(f"  {g:6s} eager this/other {_spread([rd['this'][g]['eager'] / rd['other'][g]['eager'] for rd in rounds])}")
    if args.json:
        medians = {f"{g} {label} {lib}": statistics.median(rd[label][g][lib] for rd in rounds)
                   for g in GRAPHS for label in trees for lib in rounds[0][label][g]}
        args.json.write_text(json.dumps({"unit": "seconds per backward", "rounds": rounds,
                                         "medians": medians}, indent=1))


if __name__ == "__main__":
    main()
