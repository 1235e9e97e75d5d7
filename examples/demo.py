"""What `make demo` runs: the `graphmode` command on the design's W2 (gelu) and W3 (MLP)
workloads at modest sizes, then one picture of what the compiler made of W2.

Each command is printed before it runs, so you can rerun any of them yourself. Files go
to build/demo/. Takes well under a minute on two cores.

    python examples/demo.py
"""
from __future__ import annotations

import importlib.util
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path("build") / "demo"


def graphmode_command() -> list[str]:
    """The installed `graphmode` script next to this Python, else `python -m graphmode`."""
    script = Path(sys.executable).with_name("graphmode")
    if script.exists():
        return [str(script)]
    found = shutil.which("graphmode")
    return [found] if found else [sys.executable, "-m", "graphmode"]


def run(*args: str) -> None:
    shown = "graphmode " + " ".join(shlex.quote(a) for a in args)
    print(f"\n$ {shown}", flush=True)
    status = subprocess.run(graphmode_command() + list(args), cwd=ROOT, check=False).returncode
    if status != 0:
        raise SystemExit(f"demo: `{shown}` exited with status {status}")


def main() -> None:
    start = time.perf_counter()
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    plot = importlib.util.find_spec("matplotlib") is not None
    w2 = ["compare", "examples/workloads/w2_gelu.py", "--sizes", "1e4,1e6", "--repeat", "5",
          "--json", str(OUT / "w2.json")]
    run(*w2, *(["--plot", str(OUT / "w2_runtime.png")] if plot else []))
    run("compare", "examples/workloads/w3_mlp.py", "--sizes", "32x64x64x10,256x784x512x10", "--repeat", "5")
    run("graph", "examples/workloads/w2_gelu.py", "--mode", "static", "--size", "1e3", "-o",
        str(OUT / "w2_static.svg"))
    print(f"\ndemo done in {time.perf_counter() - start:.1f} s; files are in {OUT}/"
          + ("" if plot else " (no runtime chart: pip install 'graphmode[plot]' for --plot)"))


if __name__ == "__main__":
    main()
