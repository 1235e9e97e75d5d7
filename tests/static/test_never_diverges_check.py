"""`static.compile(fn, check=True)` (and GRAPHMODE_CHECK=1): every call runs compiled and
eagerly from the same state; the example programs run clean under it, and a divergence put
in on purpose is caught and named (the value, the largest difference, the IR and user lines)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from eager import nn
from static.check import CheckError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "workloads"))  # their one copy

import w1_seed  # noqa: E402
import w2_gelu  # noqa: E402
import w3_mlp  # noqa: E402
import w4_scalar  # noqa: E402
import w5_gpt  # noqa: E402
import w6_cnn  # noqa: E402

BACKENDS = ["numpy", "native"]


def _inject(compiled, index: int, delta: float) -> None:
    """Make the compiled forward of the last entry return output `index` off by `delta`."""
    entry = compiled._last_entry
    run = entry.forward.run

    def wrong(arrays):
        out = run(arrays)
        out[index] = out[index] + delta
        return out

    entry.forward.run = wrong


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_injected_divergence_is_caught_and_named(backend):
    def f(x):
        h = eager.tanh(x) * 2
        return h + 1, x.sum()

    cf = static.compile(f, backend=backend, check=True)
    x = eager.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    cf(x)
    _inject(cf, 0, np.float32(0.25))
    with pytest.raises(CheckError) as caught:
        cf(x)
    message = str(caught.value)
    assert "output 0 of f differs" in message
    assert "the largest difference is 0.25" in message and "12 of 12 elements differ" in message
    assert "IR line `%" in message and "test_never_diverges_check.py:" in message
    np.testing.assert_allclose(cf.__wrapped__(x)[0]._data, (eager.tanh(x) * 2 + 1)._data)


def test_a_divergence_in_the_state_a_step_writes_is_named():
    eager.manual_seed(0)
    m = nn.Linear(4, 1)
    opt = eager.optim.SGD(m.parameters(), lr=0.1)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss

    cf = static.compile(step, backend="numpy", check=True)
    x, y = eager.ones(3, 4), eager.zeros(3, 1)
    cf(x, y)
    cf(x, y)
    entry = cf._last_entry
    n_user = entry.trace.n_outputs
    _inject(cf, n_user, np.float32(1e-2))  # the first write-back: a parameter's new value
    with pytest.raises(CheckError, match=r"check: (weight|bias) differs between the compiled and the eager call: "
                                         r".* the largest difference is 0\.01.*IR line"):
        cf(x, y)


@pytest.mark.parametrize("module", [w1_seed, w2_gelu, w3_mlp, w4_scalar])
def test_the_workloads_and_their_gradients_run_clean_under_check(module):
    size = {w1_seed: 100, w2_gelu: 1000, w3_mlp: (16, 32, 32, 10), w4_scalar: 100}[module]
    fn, args = module.workload(size)
    compiled = static.compile(fn, backend="numpy", check=True)
    for _ in range(2):
        compiled(*args)
    arrays = [np.asarray(a._data) for a in args]
    grads = static.compile(static.value_and_grad(fn, argnums=tuple(range(len(arrays)))), backend="numpy",
                           check=True)
    for _ in range(2):
        grads(*arrays)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("module", [w5_gpt, w6_cnn])
def test_the_training_steps_run_clean_under_check(module, backend):
    model = module.make_model(0)
    opt = module.make_optimizer(model)
    batch = module.make_batch(0, batch=4) if module is w5_gpt else module.make_batch(0, batch=4)

    def step(batch):
        opt.zero_grad()
        loss = module.loss_fn(model, batch)
        loss.backward()
        opt.step()
        return loss

    compiled = static.compile(step, backend=backend, check=True)
    for _ in range(3):
        compiled(batch)
    assert compiled.retraces == []


def test_the_environment_variable_checks_a_whole_script(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import numpy as np, eager, static\n"
        "f = static.compile(lambda x: eager.tanh(x) + 1, backend='numpy')\n"
        "x = eager.ones(4)\n"
        "f(x)\n"
        "assert f.check\n"
        "e = f._last_entry\n"
        "run = e.forward.run\n"
        "e.forward.run = lambda arrays: [a + 1 for a in run(arrays)]\n"
        "f(x)\n")
    env = {"GRAPHMODE_CHECK": "1", "PYTHONPATH": str(ROOT), "GRAPHMODE_NATIVE": "0", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode != 0 and "CheckError" in done.stderr and "largest difference is 1" in done.stderr


def test_compare_training_example_runs_clean_under_check():
    env = {"GRAPHMODE_CHECK": "1", "PYTHONPATH": str(ROOT), "GRAPHMODE_NATIVE": "0", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "compare_training.py"), "--epochs", "20",
                           "--points", "100"], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
