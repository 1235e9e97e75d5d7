"""The tutorial of the documentation site runs: its files are written as the page shows
them, its shell commands run in order in a fresh directory (`graphmode` being this
checkout's command), and what they print is what the page says they print."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "tutorial.md"
BLOCK = re.compile(r'^```(python|sh)(?: title="([^"]+)")?\n(.*?)^```', re.S | re.M)


def blocks() -> list[tuple[str, str | None, str]]:
    """(language, file name or None, code) of each fenced block, in page order."""
    return [(m.group(1), m.group(2), m.group(3)) for m in BLOCK.finditer(PAGE.read_text(encoding="utf-8"))]


def test_the_page_has_the_steps_the_tutorial_promises():
    langs = [(lang, title) for lang, title, _ in blocks()]
    assert ("python", "train_torch.py") in langs and ("python", "mlp_workload.py") in langs
    text = PAGE.read_text(encoding="utf-8")
    for needed in ("import eager as torch", "torch.compile(train_step)", ".explain(", "graphmode compare",
                   "--html"):
        assert needed in text


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> dict[str, str]:
    """Run the page: {command or file: what it printed}."""
    work = tmp_path_factory.mktemp("tutorial")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
               GRAPHMODE_CACHE_DIR=str(work / ".cache"), COLUMNS="100")
    shim = work / ".bin"
    shim.mkdir()
    for name, command in (("graphmode", f"{shlex.quote(sys.executable)} -m graphmode"),
                          ("python", shlex.quote(sys.executable))):
        (shim / name).write_text(f'#!/bin/sh\nexec {command} "$@"\n')
        (shim / name).chmod(0o755)
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    printed: dict[str, str] = {}
    for lang, title, code in blocks():
        if title is not None:
            (work / title).write_text(code, encoding="utf-8")
            continue
        if lang != "sh":
            continue
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=work, env=env, capture_output=True,
                              text=True, timeout=600, check=False)
        assert proc.returncode == 0, f"{code}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        printed[code.strip()] = proc.stdout
    printed["(files)"] = "\n".join(sorted(p.name for p in work.rglob("*") if p.is_file()))
    return printed


def _output_of(ran: dict[str, str], starts: str) -> str:
    return next(out for cmd, out in ran.items() if cmd.startswith(starts))


def test_the_pytorch_script_runs_on_eager_with_its_imports_changed(ran):
    out = _output_of(ran, "sed ")
    assert re.fullmatch(r"final loss \d\.\d{3}, training accuracy \d+%\n", out), out
    accuracy = int(re.search(r"accuracy (\d+)%", out).group(1))
    assert accuracy >= 90  # it learns the nonlinear label, as the page says


def test_the_compiled_step_trains_and_explain_opens_with_the_summary(ran):
    out = _output_of(ran, "python compiled.py")
    assert "compiled loss" in out and re.search(r"eager [\d.]+ ms, compiled [\d.]+ ms per step", out)
    summary = _output_of(ran, "python explain.py")  # (importing compiled.py prints its lines first)
    summary = summary[summary.index("== summary ==\n"):]
    assert "a training step" in summary and "kernels" in summary


def test_graphmode_compare_agrees_and_writes_the_html_report(ran):
    out = _output_of(ran, "mkdir -p build")
    assert "agreement: eager and compiled results agree at every size" in out
    assert "mlp.html" in ran["(files)"] and "mlp.json" in ran["(files)"]
    assert "== summary ==" in _output_of(ran, "graphmode ir")


def test_the_pytorch_original_runs_under_pytorch_too(tmp_path):
    pytest.importorskip("torch")
    code = next(c for _, title, c in blocks() if title == "train_torch.py")
    (tmp_path / "train_torch.py").write_text(code)
    proc = subprocess.run([sys.executable, "train_torch.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("final loss")
