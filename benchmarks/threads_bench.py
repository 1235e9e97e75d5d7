"""Default settings on a quiet and on a contended machine: the compiled W3 step (native
backend) against hand-written NumPy, and the compiled W5 training step against PyTorch's
step (eager and torch.compile), each candidate in a process of its own.

    python benchmarks/threads_bench.py [--runs 3] [--quick] [--no-torch-compile] [--json out.json]

Why: every other benchmark may be read with thread variables exported. A user exports none:
BLAS then starts its own pool beside the kernels' OpenMP team, and a machine has other
processes on it. Here each child gets this process's environment with every thread variable
removed (OMP_*, GOMP_*, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, GRAPHMODE_THREADS, ...), so
each library runs with its own defaults. Each (candidate, condition) is measured in `--runs`
fresh processes, the median of each process's samples taken, and the table shows the median
over processes and the min-max spread. Conditions: quiet (nothing started beside it), and
busy (one process spinning a core from before the child starts until it ends). The ratio
columns divide by the peer measured under the same condition in the same round, and
contended/quiet divides a candidate's busy time by its quiet time.

On a shared machine "quiet" is whatever the others leave: read the ratios, not the times.
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

from common import format_table, machine_info, write_json  # noqa: E402

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "OMP_PROC_BIND", "OMP_DYNAMIC", "GOMP_SPINCOUNT",
                    "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "GRAPHMODE_THREADS", "GRAPHMODE_ADAPT_THREADS")


def default_environ() -> dict[str, str]:
    """This process's environment without any thread setting: what a user who exported
    nothing runs with."""
    return {k: v for k, v in os.environ.items() if k not in THREAD_VARIABLES}


# -- what a child times ----------------------------------------------------------------------------
def _w3_arrays(size: str):
    import numpy as np  # noqa: PLC0415

    rng = np.random.default_rng(0)
    B, D, H, C = (256, 784, 512, 10) if size == "large" else (32, 64, 64, 10)
    f32 = np.float32
    return [rng.standard_normal((B, D)).astype(f32), np.eye(C, dtype=f32)[rng.integers(0, C, B)],
            (rng.standard_normal((D, H)) / np.sqrt(D)).astype(f32), np.zeros(H, f32),
            (rng.standard_normal((H, C)) / np.sqrt(H)).astype(f32), np.zeros(C, f32)]


def _child_fn(candidate: str, quick: bool):
    """(fn, calls per sample) for one candidate, built in the child."""
    sys.path.insert(0, str(ROOT / "examples" / "workloads"))
    if candidate.startswith("W3"):
        size, who = candidate.split()[1], candidate.split()[2]
        arrays = _w3_arrays(size)
        if who == "native":
            from compiled_bench import w3_step  # noqa: PLC0415

            import static  # noqa: PLC0415

            fn = static.compile(w3_step, backend="native")
        else:
            from compiled_bench import w3_numpy as fn  # noqa: PLC0415
        return (lambda: fn(*arrays)), (10 if size == "large" else 100)
    import training_step_bench as tsb  # noqa: PLC0415

    mod = tsb.WORKLOADS[candidate.split()[0]]
    if candidate.endswith("compiled"):
        return tsb.step_fns(mod, quick, "native")["compiled"], 1
    import torch  # noqa: PLC0415

    return tsb._torch_step(torch, mod, tsb._batch(mod, quick), compiled=candidate.endswith("torch.compile")), 1


def _count_teams() -> dict[int, int]:
    """Count the team size of every native kernel call from here on (gmnative.build.threads,
    which generated native modules and eager's kernels ask per call): whether the team shrank
    beside the busy process is then read from the run, not assumed."""
    try:
        from gmnative import build as native_build  # noqa: PLC0415
    except ImportError:
        return {}
    teams: dict[int, int] = {}
    real = native_build.threads

    def counted() -> int:
        n = real()
        teams[n] = teams.get(n, 0) + 1
        return n
    native_build.threads = counted  # type: ignore[assignment]
    return teams


def child(candidate: str, quick: bool, samples: int) -> dict:
    """Median seconds per call of `candidate` in this (fresh) process: wall time, CPU time of
    the whole process (all its threads) and the kernels' team sizes seen while timing."""
    from common import steady_malloc  # noqa: PLC0415

    steady_malloc()
    teams = _count_teams() if not candidate.endswith(("torch-eager", "torch.compile", "hand-numpy")) else {}
    fn, inner = _child_fn(candidate, quick)
    for _ in range(3):
        fn()
    teams.clear()
    times, cpu = [], []
    for _ in range(samples):
        start, start_cpu = time.perf_counter(), time.process_time()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - start) / inner)
        cpu.append((time.process_time() - start_cpu) / inner)
    return {"wall": statistics.median(times), "cpu": statistics.median(cpu), "teams": teams}


def measure(candidate: str, quick: bool, samples: int, busy: bool) -> dict | None:
    """One fresh process's medians (child's dict), beside a spinning process when `busy`;
    None if it failed."""
    env = default_environ()
    spinner = None
    if busy:
        spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"], env=env)
        time.sleep(0.2)
    try:
        script = (f"import sys, json; sys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
                  "import threads_bench as b\n"
                  f"print(json.dumps(b.child({candidate!r}, {quick!r}, {samples})))\n")
        res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900)
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if res.returncode != 0:
        print(f"{candidate}: failed\n{res.stderr[-2000:]}", file=sys.stderr)
        return None
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["teams"] = {int(k): v for k, v in out["teams"].items()}
    return dict(out)


# (candidate, its peer: the ratio's denominator)
def candidates(torch_compile: bool, have_torch: bool) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = [("W3 large native", "W3 large hand-numpy"), ("W3 large hand-numpy", None),
                                         ("W3 small native", "W3 small hand-numpy"), ("W3 small hand-numpy", None)]
    if have_torch:
        peer = "W5 torch.compile" if torch_compile else "W5 torch-eager"
        out += [("W5 compiled", peer), ("W5 torch-eager", None)]
        if torch_compile:
            out.append(("W5 torch.compile", None))
    else:
        out.append(("W5 compiled", None))
    return out


def _spread(values: list[float], scale: float = 1e3) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) * scale:.3f} ({min(values) * scale:.3f}-{max(values) * scale:.3f})"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per candidate and condition")
    ap.add_argument("--samples", type=int, default=0, help="samples per process (0: by --quick)")
    ap.add_argument("--quick", action="store_true", help="one run, few samples, W5 at batch 4: check that it runs")
    ap.add_argument("--no-torch-compile", action="store_true", help="PyTorch eager only (torch.compile's first call is slow)")
    ap.add_argument("--only", default=None, help="comma-separated prefixes of candidates, e.g. W3,W5")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    runs = 1 if args.quick else args.runs
    samples = args.samples or (5 if args.quick else 30)
    try:
        import torch  # noqa: F401, PLC0415
        have_torch = True
    except ImportError:
        have_torch = False
    chosen = candidates(not args.no_torch_compile and not args.quick, have_torch)
    if args.only:
        prefixes = tuple(p.strip() for p in args.only.split(","))
        chosen = [(c, p) for c, p in chosen if c.startswith(prefixes)]
    results: dict[str, dict[str, list[float]]] = {c: {"quiet": [], "busy": []} for c, _ in chosen}
    cpu: dict[str, dict[str, list[float]]] = {c: {"quiet": [], "busy": []} for c, _ in chosen}
    teams: dict[str, dict[str, dict[int, int]]] = {c: {"quiet": {}, "busy": {}} for c, _ in chosen}
    for r in range(runs):  # rounds: every candidate once per condition, so drift hits all alike
        # the conditions' order alternates from round to round: a process started right after
        # the other condition's finds the machine in another state (measured: the first of a
        # round's busy runs often had a core to itself on a shared host)
        for cond in ("quiet", "busy") if r % 2 == 0 else ("busy", "quiet"):
            for cand, _peer in chosen:
                t = measure(cand, args.quick, samples, busy=cond == "busy")
                if t is not None:
                    results[cand][cond].append(t["wall"])
                    cpu[cand][cond].append(t["cpu"])
                    for n, count in t["teams"].items():
                        teams[cand][cond][n] = teams[cand][cond].get(n, 0) + count
        if r + 1 < runs:  # what the rounds so far give (a long run cut short still says something)
            print(f"after round {r + 1}:\n{_table(chosen, results, cpu, teams)}", flush=True)
    print(f"default settings (no thread variables), {runs} process(es) per cell, median (min-max) ms; "
          f"{os.cpu_count()} cores, shared machine: absolute times are noisy")
    print(_table(chosen, results, cpu, teams))
    print("cpu busy/quiet: the same ratio in CPU time of the whole process (every thread), which other "
          "processes' load inflates far less than the wall time; teams: the share of kernel calls per "
          "team size beside the busy process (quiet / busy)")
    payload = {"machine": machine_info(), "runs": runs, "samples": samples, "results": results,
               "cpu": cpu, "teams": teams, "peers": dict(chosen)}
    if args.json:
        write_json(args.json, payload)
    return payload


def _teams_cell(seen: dict[int, int]) -> str:
    total = sum(seen.values())
    if not total:
        return "-"
    return " ".join(f"{n}:{100 * count / total:.0f}%" for n, count in sorted(seen.items()))


def _table(chosen: list, results: dict, cpu: dict | None = None, teams: dict | None = None) -> str:
    rows = []
    for cand, peer in chosen:
        row: list[object] = [cand]
        for cond in ("quiet", "busy"):
            row.append(_spread(results[cand][cond]))
            mine, theirs = results[cand][cond], results.get(peer or "", {}).get(cond, [])
            ratios = [a / b for a, b in zip(mine, theirs)]
            row.append(f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})" if ratios else "-")
        q, b = results[cand]["quiet"], results[cand]["busy"]
        row.append(f"{statistics.median(b) / statistics.median(q):.2f}x" if q and b else "-")
        if cpu is not None:
            cq, cb = cpu[cand]["quiet"], cpu[cand]["busy"]
            row.append(f"{statistics.median(cb) / statistics.median(cq):.2f}x" if cq and cb else "-")
        if teams is not None:
            row.append(f"{_teams_cell(teams[cand]['quiet'])} / {_teams_cell(teams[cand]['busy'])}")
        row.append(peer or "")
        rows.append(row)
    headers = ["candidate", "quiet ms", "/peer", "busy ms", "/peer", "busy/quiet"]
    headers += ["cpu busy/quiet"] if cpu is not None else []
    headers += ["teams"] if teams is not None else []
    return format_table(headers + ["peer"], rows)


if __name__ == "__main__":
    main()
