"""The two language-model examples (examples/word_language_model.py, examples/gpt_train.py)
run as a reader runs them, at CI size, and learn: the loss falls. Both are written as
PyTorch scripts (`.contiguous().view`, a DataLoader with a sampler, a scheduler)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(script: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, str(ROOT / "examples" / script), *args], capture_output=True,
                            text=True, env=env, cwd=ROOT, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_word_language_model_learns():
    out = _run("word_language_model.py", "--epochs", "5", "--repeat", "6")
    first, last = map(float, re.search(r"valid loss (\d+\.\d+) after the first epoch, (\d+\.\d+) at the end",
                                       out).groups())
    assert last < first - 0.3, out
    assert "| epoch   5 |" in out and "lr 0.0150" in out  # StepLR halved the rate after three epochs


def test_gpt_train_learns_and_samples():
    out = _run("gpt_train.py", "--steps", "40", "--n-embd", "32", "--log-every", "10")
    first, last = map(float, re.search(r"loss (\d+\.\d+) at the first step, (\d+\.\d+) at the last", out).groups())
    assert last < first - 0.5, out
    assert re.search(r"sample: F.{60}", out), out
    assert "num decayed parameter tensors" in out
