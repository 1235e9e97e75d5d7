"""Run one benchmark script several times, each in a fresh process, and report every ratio
it measured as the median and the min-max spread across the runs.

One run of a benchmark is one sample of a noisy machine: a ratio is only worth quoting with
its spread over several independent processes (new allocator state, new caches, new thread
pools). This script passes `--json FILE` to the benchmark, reads what it wrote, and finds
the ratios in it wherever they sit (keys naming a ratio, a speedup or an `a/b` quotient).
A script with a `--runs` option of its own repeats itself; it is run once with `--runs N`.

    python benchmarks/repeat.py compiled_bench.py --runs 5
    python benchmarks/repeat.py native_bench.py --runs 3 --json build/native-runs.json -- --only W2
    python benchmarks/repeat.py eager_bench.py --runs 3 --keys 'ratio|_s$' -- --quick
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RATIO_KEYS = r"ratio|speedup|/"
LABEL_KEYS = ("case", "workload", "name", "size")  # what names a row of a results list


def find_script(name: str) -> Path:
    """A script of benchmarks/ by file name or stem (`native_bench`), or a path."""
    for candidate in (Path(name), HERE / name, HERE / f"{name}.py"):
        if candidate.is_file():
            return candidate.resolve()
    known = ", ".join(p.name for p in sorted(HERE.glob("*_bench.py")))
    raise SystemExit(f"repeat.py: no benchmark script {name!r}; the scripts of benchmarks/: {known}")


def options_of(script: Path) -> str:
    """The script's --help text: which of --json and --runs it takes."""
    run = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, timeout=120)
    return run.stdout


def _label(row: dict) -> str | None:
    parts = [str(row[k]) for k in LABEL_KEYS if isinstance(row.get(k), (str, int)) and not isinstance(row[k], bool)]
    return " ".join(parts) or None


def measurements(payload: Any) -> dict[str, float]:
    """Every number in a benchmark's JSON under a readable path: `rows[W2 n=8e+06].compiled/numpy`
    (a list entry is named by its case/workload/size fields, else by its index). The machine
    description is left out."""
    found: dict[str, float] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if not (path == "" and key == "machine"):
                    walk(value, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list):
            for i, item in enumerate(node):
                name = _label(item) if isinstance(item, dict) else None
                walk(item, f"{path}[{name if name is not None else i}]")
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            found[path] = float(node)

    walk(payload, "")
    return found


def summarize(runs: list[dict[str, float]], keys: str) -> list[dict]:
    """Per measurement whose last path component matches `keys`: the median, min and max over
    the runs that have it (in the order the first run lists them)."""
    pattern = re.compile(keys)
    names = list(dict.fromkeys(name for run in runs for name in run))
    rows = []
    for name in names:
        leaf = re.split(r"[.\]]", name)[-1]
        if not pattern.search(leaf):
            continue
        values = [run[name] for run in runs if name in run]
        median = statistics.median(values)
        rows.append({"measurement": name, "median": median, "min": min(values), "max": max(values),
                     "spread": (max(values) - min(values)) / abs(median) if median else float("nan"),
                     "runs": len(values), "values": values})
    return rows


def format_summary(rows: list[dict]) -> str:
    if not rows:
        return "no measurement matched (see --keys)"
    width = max(len(r["measurement"]) for r in rows)
    lines = [f"{'measurement':{width}}  {'median':>9}  {'min':>9}  {'max':>9}  {'spread':>7}  runs",
             "-" * (width + 52)]
    for r in rows:
        lines.append(f"{r['measurement']:{width}}  {r['median']:9.4g}  {r['min']:9.4g}  {r['max']:9.4g}  "
                     f"{r['spread']:7.1%}  {r['runs']:4d}")
    lines.append("spread: (max - min) / median across the runs")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("script", help="a script of benchmarks/ (file name or stem) or a path to one")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes to run (default 3)")
    parser.add_argument("--keys", default=RATIO_KEYS,
                        help=f"regular expression for the measured keys to report (default {RATIO_KEYS!r}: ratios)")
    parser.add_argument("--json", metavar="FILE", default=None,
                        help="also write every run's measurements and the summary here")
    parser.epilog = "Arguments after -- go to the script unchanged."
    argv = sys.argv[1:] if argv is None else list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    extra = argv[cut + 1:]
    if args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    if args.json and not Path(args.json).resolve().parent.is_dir():
        parser.error(f"--json {args.json}: its directory does not exist (create it first)")
    script = find_script(args.script)
    help_text = options_of(script)
    if "--runs" in help_text:  # the script repeats itself and reports its own spread
        cmd = [sys.executable, str(script), "--runs", str(args.runs), *extra]
        if args.json:
            cmd += ["--json", args.json]
        print(f"{script.name} has its own --runs: running it once with --runs {args.runs}", file=sys.stderr)
        return subprocess.call(cmd, cwd=HERE.parent)
    if "--json" not in help_text:
        print(f"repeat.py: {script.name} takes no --json FILE option, and repeat.py reads the results from the JSON "
              "a script writes; add the option to the script", file=sys.stderr)
        return 2
    runs: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="graphmode-repeat-") as tmp:
        for k in range(args.runs):
            out = Path(tmp) / f"run{k}.json"
            print(f"== {script.name}: run {k + 1}/{args.runs}", file=sys.stderr, flush=True)
            code = subprocess.call([sys.executable, str(script), *extra, "--json", str(out)], cwd=HERE.parent,
                                   stdout=subprocess.DEVNULL)
            if code != 0 or not out.is_file():
                print(f"repeat.py: run {k + 1} of {script.name} failed (exit status {code}"
                      f"{'' if out.is_file() else ', no JSON written'}); rerun it alone to see why", file=sys.stderr)
                return 1
            runs.append(measurements(json.loads(out.read_text(encoding="utf-8"))))
    rows = summarize(runs, args.keys)
    print(f"{script.name} {' '.join(extra)}".rstrip() + f": {args.runs} runs, each in a fresh process")
    print(format_summary(rows))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"script": script.name, "arguments": extra, "runs": runs, "summary": rows}, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
