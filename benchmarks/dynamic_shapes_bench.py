"""Symbolic-shape kernels against fixed-shape kernels on W1-W3 (forward and backward), in one
process with the candidates interleaved: the same function compiled with `dynamic=False` (the
sizes written into the code) and with its batch dimension marked dynamic (eager.compiler.
mark_dynamic: the size read from the inputs at run time, static.dynamic_shapes; W1 and W2's
one dimension, W3's batch of X and Y), on the NumPy backend and on the native one (its C
functions take the sizes of the call as an argument).

    python benchmarks/dynamic_shapes_bench.py [--runs 3] [--quick] [--json out.json]

The target (issue 34): symbolic within 10% of fixed, i.e. symbolic / fixed <= 1.10."""
from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples" / "workloads"))

import w1_seed  # noqa: E402
import w2_gelu  # noqa: E402
import w3_mlp  # noqa: E402
from common import format_table, sample_interleaved, steady_malloc, write_json  # noqa: E402

import static  # noqa: E402
from eager.compiler import mark_dynamic  # noqa: E402
from static import dynamic_shapes  # noqa: E402

CASES = {
    "W1 n=1e4": (w1_seed, 10_000), "W1 n=1e6": (w1_seed, 1_000_000),
    "W2 n=1e4": (w2_gelu, 10_000), "W2 n=1e6": (w2_gelu, 1_000_000),
    "W3 32x64x64x10": (w3_mlp, (32, 64, 64, 10)), "W3 256x784x512x10": (w3_mlp, (256, 784, 512, 10)),
}
QUICK = {"W1 n=1e4": (w1_seed, 10_000), "W2 n=1e4": (w2_gelu, 10_000), "W3 32x64x64x10": (w3_mlp, (32, 64, 64, 10))}


def candidates(mod, size, native: bool) -> dict[str, Callable]:
    fn, args = mod.workload(size)
    out: dict[str, Callable] = {}
    variants = [("fixed", "numpy", False), ("symbolic", "numpy", True)]
    if native:
        variants += [("fixed native", "native", False), ("symbolic native", "native", True)]
    batched = args[:2] if mod is w3_mlp else args  # W3: X and Y; W1, W2: every (1-d) argument
    for label, backend, dynamic in variants:
        compiled = static.compile(fn, backend=backend, dynamic=False if not dynamic else None)
        if dynamic:
            for a in batched:
                mark_dynamic(a, 0)

        def run(compiled=compiled):  # noqa: B023
            for a in args:
                a.grad = None
            compiled(*args).backward()
        run()
        run()
        if dynamic:
            policy = dynamic_shapes.policy_of(compiled)
            if not policy.entries:
                raise RuntimeError(f"{label}: no symbolic entry was kept: {policy.failed}")
            ran = type(policy.entries[0].entry.forward).__name__
            if backend == "native" and ran != "NativeGraph":
                print(f"note: {label} runs {ran} (the native build was refused)")
        out[label] = run
    return out


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=0, help="samples per candidate per run (0: 20, 3 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-native", action="store_true", help="skip the native fixed-shape reference")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    steady_malloc()
    repeats = args.repeats or (3 if args.quick else 20)
    native = not args.no_native
    if native:
        from codegen import native_build  # noqa: PLC0415

        native = bool(native_build.availability()[0])
    results: dict = {}
    rows = []
    for name, (mod, size) in (QUICK if args.quick else CASES).items():
        fns = candidates(mod, size, native)
        labels = list(fns)
        per_run: dict = {k: [] for k in labels}
        for _ in range(args.runs):
            samples = sample_interleaved([fns[k] for k in labels], repeats, warmup=2)
            for k, s in zip(labels, samples):
                per_run[k].append(statistics.median(s))
        ratio = [s / f for s, f in zip(per_run["symbolic"], per_run["fixed"])]
        results[name] = {"times": per_run, "symbolic_over_fixed": ratio}
        med = {k: statistics.median(v) for k, v in per_run.items()}
        row = [name, f"{med['fixed'] * 1e3:.3f}", f"{med['symbolic'] * 1e3:.3f}",
               f"{statistics.median(ratio):.3f} ({min(ratio):.3f}-{max(ratio):.3f})"]
        if "fixed native" in med:
            nratio = [s / f for s, f in zip(per_run["symbolic native"], per_run["fixed native"])]
            results[name]["native_symbolic_over_fixed"] = nratio
            row += [f"{med['fixed native'] * 1e3:.3f}", f"{med['symbolic native'] * 1e3:.3f}",
                    f"{statistics.median(nratio):.3f} ({min(nratio):.3f}-{max(nratio):.3f})"]
        rows.append(row)
    headers = ["workload", "numpy fixed ms", "numpy symbolic ms", "symbolic/fixed (min-max)"]
    if native:
        headers += ["native fixed ms", "native symbolic ms", "symbolic/fixed (min-max)"]
    print(format_table(headers, rows))
    if args.json:
        write_json(args.json, results)
    return results


if __name__ == "__main__":
    main()
