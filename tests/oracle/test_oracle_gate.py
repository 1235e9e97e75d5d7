"""The oracle's gate: without PyTorch the differential tests skip, except under CI=true,
where they fail (a CI run that compared nothing must not pass)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def _run_without_torch(tmp_path, ci: str) -> subprocess.CompletedProcess:
    blocker = tmp_path / "no_torch"
    blocker.mkdir()
    (blocker / "torch.py").write_text("raise ImportError('PyTorch is hidden for this test')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_ADDOPTS")}
    env.update(CI=ci, PYTHONPATH=os.pathsep.join([str(blocker), str(ROOT)]))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
         str(HERE / "test_oracle_known.py"), "-k", "sibling and eager"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_missing_torch_skips_outside_ci(tmp_path):
    run = _run_without_torch(tmp_path, "")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "PyTorch is not installed" in run.stdout


def test_missing_torch_fails_under_ci(tmp_path):
    run = _run_without_torch(tmp_path, "true")
    assert run.returncode != 0, run.stdout[-2000:]
    assert "CI=true but PyTorch cannot be imported" in run.stdout


@pytest.mark.skipif(os.environ.get("CI", "").strip().lower() not in ("1", "true", "yes"), reason="CI only")
def test_ci_has_the_pinned_torch(torch):
    assert torch.__version__.split("+")[0] == "2.13.0"
