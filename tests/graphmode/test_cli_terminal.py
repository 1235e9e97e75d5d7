"""The `graphmode` command as a user meets it in a terminal of 80 columns: a real process,
COLUMNS=80, reading what it prints. Also --json to stdout, Ctrl-C, and the code cache."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# two sizes; the second one's inputs are built for measuring only after the first size was
# measured (each size is built once up front to check it): Ctrl-C arrives then
INTERRUPTED = textwrap.dedent('''
    """Interrupted after the first size."""
    import numpy as np
    import eager

    SIZES = ("64", "128")
    calls = []

    def loss(a, b):
        return (a * b + 1.0).sum()

    def workload(size):
        calls.append(size)
        if len(calls) == 4:
            raise KeyboardInterrupt
        rng = np.random.default_rng(0)
        return loss, tuple(eager.from_numpy(rng.standard_normal(size).astype(np.float32)).requires_grad_()
                           for _ in range(2))
''')


def graphmode(*argv: str, cache: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="80", LINES="24", GRAPHMODE_CACHE_DIR=str(cache),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    env.pop("GRAPHMODE_LOGS", None)
    return subprocess.run([sys.executable, "-m", "graphmode", *argv, *(
        ["--malloc", "default"] if argv[:1] == ("compare",) else [])], capture_output=True, text=True, env=env,
        cwd=ROOT, timeout=300, check=False)


def test_compare_fits_80_columns_with_the_verdict_on_every_row(tmp_path):
    proc = graphmode("compare", "examples/workloads/w3_mlp.py", "--sizes", "8x16x16x4,16x32x32x10", "--repeat", "2",
                     cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80, "\n".join(line for line in lines if len(line) > 80)
    for size in ("8x16x16x4", "16x32x32x10"):
        (row,) = [line for line in lines if re.match(rf"^\s*{size}\s+(ok|FAIL)\b", line)]
        assert re.search(r"\d\.\d\dx\s*$", row), row  # the speedup, last column, not cut off
    header = next(line for line in lines if line.split()[:2] == ["size", "check"])
    assert header.split() == ["size", "check", "eager", "compiled", "speedup"]
    assert "agreement:" in proc.stdout


def test_json_dash_writes_json_to_stdout_and_the_tables_to_stderr(tmp_path):
    proc = graphmode("compare", "examples/workloads/w1_seed.py", "--sizes", "100", "--repeat", "1", "--json", "-",
                     cache=tmp_path)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == "graphmode-compare/1" and data["complete"] is True
    assert [r["size"] for r in data["results"]] == ["100"]
    assert "agreement:" in proc.stderr and "wrote" not in proc.stdout


def test_ctrl_c_prints_what_was_measured(tmp_path):
    workload = tmp_path / "interrupted.py"
    workload.write_text(INTERRUPTED)
    out_json = tmp_path / "partial.json"
    proc = graphmode("compare", str(workload), "--repeat", "1", "--json", str(out_json), cache=tmp_path / "cache")
    assert proc.returncode == 130, proc.stderr
    assert re.search(r"^\s*64\s+ok\b", proc.stdout, re.M), proc.stdout
    assert not re.search(r"^\s*128\s", proc.stdout, re.M)
    assert "interrupted: 1 size(s) measured" in proc.stdout and "graphmode: interrupted" in proc.stderr
    data = json.loads(out_json.read_text())
    assert data["complete"] is False and [r["size"] for r in data["results"]] == ["64"]


def test_cache_info_and_clear(tmp_path):
    cache = tmp_path / "code-cache"
    info = graphmode("cache", "info", cache=cache)
    assert info.returncode == 0, info.stderr
    assert f"directory: {cache}" in info.stdout and "0 generated files" in info.stdout
    assert "bound:     256 MB (GRAPHMODE_CACHE_MAX_MB)" in info.stdout
    assert max(len(line) for line in info.stdout.splitlines() if not line.startswith("directory:")) <= 80
    ir = graphmode("ir", "examples/workloads/w1_seed.py", "--size", "100", "--source", cache=cache)
    assert ir.returncode == 0, ir.stderr
    generated = sorted(cache.glob("gm_*"))
    assert generated
    (cache / "notes.txt").write_text("not ours")
    info = graphmode("cache", "info", cache=cache)
    assert re.search(rf"\b{len(generated)} generated files, \d", info.stdout), info.stdout
    cleared = graphmode("cache", "clear", cache=cache)
    assert cleared.returncode == 0 and f"removed {len(generated)} generated files" in cleared.stdout
    assert not list(cache.glob("gm_*")) and (cache / "notes.txt").exists()  # only graphmode's files go


def test_cache_info_when_the_cache_is_off_or_refused(tmp_path, monkeypatch):
    """`cache info` reports where the cache would be when there is no usable directory
    (codegen.cache.directory() is None) instead of failing on it."""
    monkeypatch.setenv("GRAPHMODE_CACHE", "0")
    off = graphmode("cache", "info", cache=tmp_path / "never-made")
    assert off.returncode == 0, off.stderr
    assert f"directory: {tmp_path / 'never-made'}" in off.stdout and "off (GRAPHMODE_CACHE=0" in off.stdout
    assert "0 generated files" in off.stdout
    monkeypatch.delenv("GRAPHMODE_CACHE")
    (tmp_path / "a-file").write_text("")
    refused = graphmode("cache", "info", cache=tmp_path / "a-file")
    assert refused.returncode == 0, refused.stderr
    assert "0 generated files" in refused.stdout


def test_help_fits_80_columns_and_lists_the_commands(tmp_path):
    proc = graphmode("--help", cache=tmp_path)
    assert proc.returncode == 0
    assert max(len(line) for line in proc.stdout.splitlines()) <= 80
    for command in ("compare", "ir", "graph", "cache"):
        assert command in proc.stdout
    assert "_peer" not in proc.stdout


@pytest.mark.skipif(__import__("importlib").util.find_spec("matplotlib") is None, reason="needs matplotlib")
def test_plot_x_axis_is_the_size_argument(tmp_path):
    from graphmode.report import plot_positions  # noqa: PLC0415

    assert plot_positions([10000, 1000000]) == ([1e4, 1e6], True)
    assert plot_positions([(32, 64), (256, 784)]) == ([0.0, 1.0], False)
    proc = graphmode("compare", "examples/workloads/w1_seed.py", "--sizes", "100,1e3", "--repeat", "1", "--plot",
                     str(tmp_path / "chart.png"), cache=tmp_path / "cache")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "chart.png").stat().st_size > 1000
