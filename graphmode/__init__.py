"""graphmode: the command-line product on top of the library (`eager`, `static`, `codegen`).

    graphmode compare examples/workloads/w1_seed.py --sizes 1e4,1e6
    python -m graphmode ir examples/workloads/w2_gelu.py --stage fuse

`graphmode.cli` parses arguments and runs the commands, `graphmode.report` prints the
tables and writes JSON and charts, `graphmode.draw` draws the compiled IR with Graphviz,
`graphmode.peers` runs the same workload in PyTorch or JAX for comparison. The library
never imports this package; `static.compare(fn, *args)` is the measurement it renders."""
from __future__ import annotations

from collections.abc import Sequence

__all__ = ["main", "__version__"]

# the release, as in pyproject.toml and eager.__version__ (tests/graphmode/test_packaging_meta.py
# checks the three agree)
__version__ = "0.1.0"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `graphmode` command with `argv` (default: sys.argv[1:]); returns the exit status."""
    from .cli import main as cli_main  # noqa: PLC0415  (rich and argparse only when the command runs)

    return cli_main(argv)
