"""Every example script runs to completion (exit 0), and mlp_train reaches its accuracy
with small settings. Scripts run as subprocesses, the way a reader runs them."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TUTORIALS = {
    "tutorial_five_neurons.py": ["grad can be implicitly created only for scalar outputs",
                                 "fix 1: L.sum().backward()", "fix 2: L.backward(gradient=torch.ones_like(L))"],
    "tutorial_backward_ones.py": ["x.grad = tensor([2., 4., 6., 8.])"],
    "tutorial_gradients.py": ["all gradients match the analytic formulas"],
    "tutorial_no_grad.py": ["detach:", "no_grad:", "retain_graph:",
                            "Trying to backward through the graph a second time"],
}
QUICK = ["--epochs", "120", "--points", "100", "--seed", "1", "--log-every", "20"]


def _run(script: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, str(EXAMPLES / script), *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("script", sorted(TUTORIALS))
def test_tutorial_runs_and_prints_its_lesson(script):
    result = _run(script)
    assert result.returncode == 0, result.stdout + result.stderr
    for text in TUTORIALS[script]:
        assert text in result.stdout, (text, result.stdout)


def test_every_example_is_covered():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    mine = set(TUTORIALS) | {"mlp_train.py"}
    assert mine <= scripts


def _load_mlp_train():
    spec = importlib.util.spec_from_file_location("mlp_train", EXAMPLES / "mlp_train.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mlp_train_reaches_95_percent_quickly(capsys):
    accuracy = _load_mlp_train().main(QUICK)
    assert accuracy >= 0.95
    losses = [float(v) for v in re.findall(r"loss (\d+\.\d+)", capsys.readouterr().out)]
    assert len(losses) >= 5 and losses[-1] < 0.5 * losses[0]


def test_mlp_train_script_exits_zero_and_fails_an_unreachable_target():
    ok = _run("mlp_train.py", *QUICK)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "final accuracy" in ok.stdout
    short = _run("mlp_train.py", "--epochs", "1", "--points", "50", "--target", "1.01")
    assert short.returncode == 1
