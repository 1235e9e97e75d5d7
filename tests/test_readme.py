"""The README says what the code does: its quick examples print what it shows, and its table
of environment variables names every GRAPHMODE_* variable the packages read."""
from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _blocks_after(heading: str) -> list[str]:
    """The fenced code blocks of the README section that starts at `heading`."""
    start = README.index(heading)
    end = README.find("\n## ", start + len(heading))
    section = README[start:end if end != -1 else None]
    return re.findall(r"```[a-z]*\n(.*?)```", section, flags=re.S)


def _run(code: str, filename: str = "README.md") -> tuple[str, dict]:
    """What the README's code prints, and the names it defines (run as if from `filename`)."""
    out, namespace = io.StringIO(), {"__name__": "readme_example"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, filename, "exec"), namespace)  # noqa: S102  (the README's own code)
    return out.getvalue(), namespace


def test_every_graphmode_environment_variable_is_in_the_readme_table():
    used = set()
    for package in ("eager", "static", "codegen", "graphmode"):
        for path in (ROOT / package).rglob("*.py"):
            used |= set(re.findall(r"GRAPHMODE_[A-Z_]*[A-Z]", path.read_text(encoding="utf-8")))
    table = README[README.index("## Environment variables"):]
    table = table[:table.find("\n## ", 1)]
    documented = set(re.findall(r"^\| `(GRAPHMODE_[A-Z_]+)`", table, flags=re.M))
    assert used, "no GRAPHMODE_ variable found: the scan is broken"
    assert used <= documented, f"not in the README's table: {sorted(used - documented)}"


def test_the_eager_example_prints_what_the_readme_shows():
    (code,) = _blocks_after("## Eager in five lines")[:1]
    shown = next(line[2:] for line in code.splitlines() if line.startswith("# tensor("))
    assert _run(code)[0].strip() == shown


def test_the_static_example_prints_the_ir_the_readme_shows(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_NATIVE", "0")
    code, ir, generated = _blocks_after("## Static in five lines")[:3]
    # run from a file loss.py, as the generated code's comments show
    printed, names = _run(code.replace("print(loss(x, w))", "loss(x, w)").replace("print(loss.source(x, w))", ""),
                          "loss.py")
    assert printed.strip() == ir.strip()
    source = names["loss"].source(names["x"], names["w"])
    assert generated.strip() in source, source
