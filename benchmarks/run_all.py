"""Run every benchmark script (benchmarks/*_bench.py), one subprocess each, in name order.

`make bench` calls this. Each script must accept `--quick` (small sizes) and
`--json FILE`; other arguments after `--` are passed to every script unchanged.

    python benchmarks/run_all.py                    # full sizes
    python benchmarks/run_all.py --quick --json-dir results/
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def discover() -> list[Path]:
    return sorted(HERE.glob("*_bench.py"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="pass --quick to every script")
    parser.add_argument("--json-dir", type=Path, default=None, help="write <script>.json files here")
    parser.add_argument("--list", action="store_true", help="only list the scripts that would run")
    parser.add_argument("extra", nargs=argparse.REMAINDER, help="arguments after -- go to every script")
    args = parser.parse_args(argv)
    extra = args.extra[1:] if args.extra[:1] == ["--"] else args.extra

    scripts = discover()
    if args.list:
        print("\n".join(s.name for s in scripts))
        return 0
    if args.json_dir is not None:
        args.json_dir.mkdir(parents=True, exist_ok=True)
    failed = []
    for script in scripts:
        cmd = [sys.executable, str(script), *(["--quick"] if args.quick else []), *extra]
        if args.json_dir is not None:
            cmd += ["--json", str(args.json_dir / (script.stem + ".json"))]
        print(f"== {script.name}", flush=True)
        start = time.perf_counter()
        code = subprocess.call(cmd, cwd=HERE.parent)
        print(f"== {script.name}: exit {code} after {time.perf_counter() - start:.1f} s\n", flush=True)
        if code != 0:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
