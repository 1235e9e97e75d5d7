"""A compiled training step that logs `loss.item()` at every call (a graph break: the step
before the log line runs compiled, the line runs in Python, static.graph_breaks), against the
same step without the logging line and the eager step, on the model workloads W5 (tiny GPT,
AdamW) and W6 (small CNN, SGD with momentum), interleaved in one process.

    python benchmarks/graph_break_bench.py [--runs 3] [--quick] [--json out.json]

The target (issue 34): the logging step keeps at least 80% of the speedup of the step without
it, i.e. (eager / logging) / (eager / plain) >= 0.8. Each run samples the three candidates
interleaved and takes medians; the table gives the median over runs with the min-max spread."""
from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "workloads"))

import w5_gpt  # noqa: E402
import w6_cnn  # noqa: E402
from common import format_table, sample_interleaved, steady_malloc, write_json  # noqa: E402

import eager  # noqa: E402

WORKLOADS = {"W5": w5_gpt, "W6": w6_cnn}


def step_fns(mod, quick: bool, backend: str) -> dict[str, Callable]:
    """eager, compiled, and compiled with a `.item()` logging line, each with its own model."""
    batch = mod.make_batch(seed=0, batch=4) if quick else mod.make_batch(seed=0)
    out: dict[str, Callable] = {}
    for label in ("eager", "compiled", "compiled + .item() log"):
        model = mod.make_model(seed=0)
        opt = mod.make_optimizer(model)
        losses: list = []
        if label.endswith("log"):
            def step(x, y, model=model, opt=opt, losses=losses):
                opt.zero_grad()
                loss = mod.loss_fn(model, (x, y))
                loss.backward()
                opt.step()
                losses.append(loss.item())
                return loss
        else:
            def step(x, y, model=model, opt=opt):
                opt.zero_grad()
                loss = mod.loss_fn(model, (x, y))
                loss.backward()
                opt.step()
                return loss
        fn = step if label == "eager" else eager.compile(step, backend=backend)
        out[label] = (lambda fn=fn: fn(*batch))
    return out


def measure(name: str, quick: bool, runs: int, repeats: int, backend: str) -> dict:
    fns = step_fns(WORKLOADS[name], quick, backend)
    names = list(fns)
    for f in fns.values():  # compile (first step eager, trace, the split) before timing
        for _ in range(3):
            f()
    per_run: dict = {n: [] for n in names}
    for _ in range(runs):
        samples = sample_interleaved([fns[n] for n in names], repeats, warmup=2)
        for n, s in zip(names, samples):
            per_run[n].append(statistics.median(s))
    eager_t, plain_t, log_t = (per_run[n] for n in names)
    kept = [(e / lg) / (e / p) for e, p, lg in zip(eager_t, plain_t, log_t)]
    return {"times": per_run, "speedup_plain": [e / p for e, p in zip(eager_t, plain_t)],
            "speedup_log": [e / lg for e, lg in zip(eager_t, log_t)], "kept": kept}


def split_overhead(repeats: int) -> dict:
    """The per-call cost of a split in itself: a small function whose `.item()` line splits it
    (compiled piece, Python line, compiled piece) against the same function compiled whole
    without the line, in microseconds per call."""
    logged: list = []

    def plain(x):
        y = x * 2 + 1
        return y.tanh()

    def split(x):
        y = x * 2 + 1
        logged.append(y.sum().item())
        return y.tanh()

    x = eager.ones(64)
    fns = {"whole": eager.compile(plain, backend="numpy"), "split": eager.compile(split, backend="numpy")}
    calls = {k: (lambda f=f: f(x)) for k, f in fns.items()}
    for f in calls.values():
        for _ in range(3):
            f()
    samples = sample_interleaved(list(calls.values()), repeats, warmup=2, inner=50)
    med = {k: statistics.median(s) * 1e6 for k, s in zip(calls, samples)}
    return {"whole_us": med["whole"], "split_us": med["split"], "added_us": med["split"] - med["whole"]}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=0, help="samples per candidate per run (0: 15, 3 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backend", default="inductor", help="eager.compile's backend (inductor: graphmode's default)")
    parser.add_argument("--workloads", default="W5,W6")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    steady_malloc()
    repeats = args.repeats or (3 if args.quick else 15)
    results = {}
    rows = []
    for name in args.workloads.split(","):
        r = measure(name, args.quick, args.runs, repeats, args.backend)
        results[name] = r
        med = {k: statistics.median(v) for k, v in r["times"].items()}
        rows.append([name, f"{med['eager'] * 1e3:.2f}", f"{med['compiled'] * 1e3:.2f}",
                     f"{med['compiled + .item() log'] * 1e3:.2f}",
                     f"{statistics.median(r['speedup_plain']):.2f}x", f"{statistics.median(r['speedup_log']):.2f}x",
                     f"{statistics.median(r['kept']) * 100:.0f}% ({min(r['kept']) * 100:.0f}-"
                     f"{max(r['kept']) * 100:.0f})"])
    print(format_table(["workload", "eager ms", "compiled ms", "compiled+log ms", "speedup", "speedup w/ log",
                        "speedup kept (min-max)"], rows))
    overhead = split_overhead(repeats)
    results["split_overhead"] = overhead
    print(f"\nper-call cost of a split (a 64-element function, .item() between two compiled pieces): "
          f"{overhead['split_us']:.1f} us against {overhead['whole_us']:.1f} us whole "
          f"(+{overhead['added_us']:.1f} us: one more compiled call, the Python line, the live values)")
    if args.json:
        write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
