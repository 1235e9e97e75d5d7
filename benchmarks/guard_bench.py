"""What checking a compiled training step's guards costs per call, for a step over 50
parameters (25 Linear layers, an SGD with momentum and an Adam optimizer).

A cached call checks that what the trace read from Python is unchanged (static.guards,
static.training's grad, state and param-group guards, the fed hyper-parameters' branches)
and that each captured tensor (parameters, gradients, optimizer state) still has the traced
shape, dtype and requires_grad: `Entry.invalid()`; the Python-state guards alone are timed
too. What only a counted change can invalidate is skipped while its version stands still:
the module guards (eager.nn's structure version), the captured tensors' metadata
(eager._tensor.METADATA_VERSION), the optimizer's state dicts (OPTIMIZER_VERSION) and
param groups (PARAM_GROUPS_VERSION). It is timed alone, on the entry of the compiled step:
as a call finds it in a steady loop (no version moved), after a scheduler set a group's lr
(the group guards read again), after some tensor's metadata changed (every captured tensor
read again), and after a module attribute was set (every guard read again). The target is
at most 2 us per call for the steady case.

    python benchmarks/guard_bench.py [--runs 3] [--quick] [--json out.json]

Each run keeps the minimum of its samples (each sample times a loop of checks); the table
gives the median over runs and the min-max spread. The machine this runs on is shared:
quote the spread, and rerun on a quiet machine for a number worth keeping.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import format_table, loop_bench_args, machine_info, write_json  # noqa: E402

import eager  # noqa: E402
import eager.nn.functional as F  # noqa: E402
import static  # noqa: E402
from eager import nn  # noqa: E402
from eager._tensor import METADATA_VERSION  # noqa: E402
from eager.nn.module import _STRUCTURE  # noqa: E402
from eager.optim.optimizer import PARAM_GROUPS_VERSION  # noqa: E402
from static.guards import first_change  # noqa: E402

LAYERS = 25  # a weight and a bias each: 50 parameters


def build(optimizer: str):
    """The compiled step's entry: "sgd", "adam", or "sgd, zero_grad(set_to_none=False)" (the
    step then reads the .grads it finds: 50 more guards, and its preparation re-reads them)."""
    eager.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(8, 8) for _ in range(LAYERS)])
    opt = eager.optim.SGD(model.parameters(), lr=0.01, momentum=0.9) if optimizer.startswith("sgd") \
        else eager.optim.Adam(model.parameters(), lr=1e-3)
    set_to_none = "set_to_none=False" not in optimizer

    def step(x, y):
        opt.zero_grad(set_to_none=set_to_none)
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = static.compile(step, backend="numpy")
    x, y = eager.randn(4, 8), eager.randn(4, 8)
    for _ in range(3):
        compiled(x, y)
    entry = compiled._last_entry
    assert entry is not None and entry.invalid() is None and compiled.retraces == []
    return entry, len(entry.trace.guards)


# what moves before each check: the counter a change of that kind bumps
MOVES = {"steady": None, "a group's lr set": PARAM_GROUPS_VERSION, "a tensor's metadata changed": METADATA_VERSION,
         "a module changed": _STRUCTURE}


def per_check(entry, loops: int, moves: str, python_only: bool = False) -> float:
    invalid = entry.invalid
    if python_only:  # the guards on Python state alone, without the captured tensors' checks
        guards = entry._other_guards
        invalid = lambda: first_change(guards)  # noqa: E731
    counter = MOVES[moves]
    start = time.perf_counter()
    if counter is not None:
        for _ in range(loops):
            counter[0] += 1  # what a scheduler setting lr, a requires_grad_(), a module attribute set does
            invalid()
    else:
        for _ in range(loops):
            invalid()
    return (time.perf_counter() - start) / loops


def main(argv: list[str] | None = None) -> dict:
    args = loop_bench_args(__doc__, argv)
    samples, loops = (2, 200) if args.quick else (7, 20000)
    rows, payload = [], {"runs": args.runs, "machine": machine_info(), "cases": {}}
    for optimizer in ("sgd", "adam", "sgd, zero_grad(set_to_none=False)"):
        entry, n_guards = build(optimizer)
        cases = [(m, False) for m in MOVES] + [("steady", True)] if "set_to_none" not in optimizer \
            else [("steady", False), ("steady", True)]
        for moves, python_only in cases:
            values = []
            for _ in range(args.runs):
                values.append(min(per_check(entry, loops, moves, python_only) for _ in range(samples)))
            name = f"{optimizer}, {moves}" + (", Python-state guards only" if python_only else "")
            payload["cases"][name] = {"seconds": values, "guards": n_guards}
            rows.append([name, n_guards, statistics.median(values) * 1e6,
                         f"{min(values) * 1e6:.2f}-{max(values) * 1e6:.2f}"])
    print(format_table(["50-parameter step", "guards", "us per check", "spread"], rows))
    steady = [statistics.median(payload["cases"][f"{o}, steady"]["seconds"]) for o in ("sgd", "adam")]
    print(f"target: at most 2 us per steady check (the SGD and Adam steps); measured {max(steady) * 1e6:.2f} us "
          f"({'met' if max(steady) <= 2e-6 else 'missed'})")
    accumulating = statistics.median(payload["cases"]["sgd, zero_grad(set_to_none=False), steady"]["seconds"])
    print(f"with zero_grad(set_to_none=False): {accumulating * 1e6:.2f} us "
          f"({'within' if accumulating <= 2e-6 else 'over'} the target)")
    if args.json:
        write_json(args.json, payload)
    return payload


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
