"""What `make demo` runs: the `graphmode` command on the design's W2 (gelu) and W3 (MLP)
workloads at modest sizes, then one picture of what the compiler made of W2.

Each command is printed before it runs, so you can rerun any of them yourself. Files go
to build/demo/. Takes well under a minute on two cores. `--images DIR` instead makes the
README's pictures (the runtime chart at five sizes, the eager and compiled graphs of W2)
in DIR: `make images` runs it with docs/images.

    python examples/demo.py
    python examples/demo.py --images docs/images
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


def images(directory: Path) -> None:
    """The README's pictures: W2's runtime chart and its eager and compiled graphs."""
    (ROOT / directory).mkdir(parents=True, exist_ok=True)
    run("compare", "examples/workloads/w2_gelu.py", "--sizes", "1e3,1e4,1e5,1e6,8e6", "--repeat", "11",
        "--plot", str(directory / "w2_runtime.png"))
    run("graph", "examples/workloads/w2_gelu.py", "--mode", "eager", "--size", "1e3", "-o",
        str(directory / "w2_eager.svg"))
    run("graph", "examples/workloads/w2_gelu.py", "--mode", "static", "--detail", "ops", "--size", "1e3", "-o",
        str(directory / "w2_static.svg"))


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--images"] and len(args) == 2:
        images(Path(args[1]))
        return
    if args:
        raise SystemExit("usage: python examples/demo.py [--images DIR]")
    start = time.perf_counter()
    (ROOT / OUT).mkdir(parents=True, exist_ok=True)
    plot = importlib.util.find_spec("matplotlib") is not None
    w2 = ["compare", "examples/workloads/w2_gelu.py", "--sizes", "1e4,1e6", "--repeat", "5",
          "--json", str(OUT / "w2.json")]
    run(*w2, *(["--plot", str(OUT / "w2_runtime.png")] if plot else []))
    run("compare", "examples/workloads/w3_mlp.py", "--sizes", "32x64x64x10,256x784x512x10", "--repeat", "5")
    run("compare", "examples/workloads/w2_gelu.py", "--sizes", "1e4", "--repeat", "3", "--html",
        str(OUT / "w2.html"))
    # a picture needs Graphviz; without it `graph` would write the .dot and exit 4, so ask for the .dot
    drawn = "svg" if shutil.which("dot") else "dot"
    run("graph", "examples/workloads/w2_gelu.py", "--mode", "static", "--size", "1e3", "-o",
        str(OUT / f"w2_static.{drawn}"))
    print(f"\ndemo done in {time.perf_counter() - start:.1f} s; files are in {OUT}/ (open {OUT / 'w2.html'} in a "
          "browser)" + ("" if plot else "; no runtime chart: pip install 'graphmode[plot]' for --plot")
          + ("" if drawn == "svg" else "; no SVG picture: Graphviz's dot is not installed, so w2_static.dot"))


if __name__ == "__main__":
    main()
