"""The model examples and workloads: short runs of the char GPT and CNN examples whose loss
must fall, the W5/W6 training steps (API, loss falls on a repeated batch, determinism), and
the models benchmark at tiny sizes (a smoke test, not a timing)."""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

import eager

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path, name: str, monkeypatch):
    monkeypatch.syspath_prepend(str(path.parent))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def test_char_gpt_loss_falls_and_it_samples(monkeypatch, capsys):
    module = _load(ROOT / "examples" / "char_gpt.py", "char_gpt", monkeypatch)
    first, last = module.main(["--steps", "25", "--batch", "8", "--context", "16", "--width", "32",
                               "--log-every", "10", "--sample", "10"])
    assert last < 0.8 * first
    out = capsys.readouterr().out
    sample = out.split("sample: ", 1)[1].splitlines()[0]
    assert len(sample) == 11 and set(sample) <= set(module.TEXT)


def test_cnn_classifier_loss_falls_and_the_checkpoint_restores(monkeypatch):
    module = _load(ROOT / "examples" / "cnn_classifier.py", "cnn_classifier", monkeypatch)
    result = module.main(["--epochs", "4", "--images", "320"])
    assert result["losses"][-1] < 0.8 * result["losses"][0]
    assert result["restored_accuracy"] == result["accuracy"]


@pytest.mark.parametrize("name", ["w5_gpt", "w6_cnn"])
def test_workload_training_steps(monkeypatch, name):
    module = _load(ROOT / "examples" / "workloads" / f"{name}.py", name, monkeypatch)
    model = module.make_model(seed=0)
    model.eval()  # no dropout: the same batch must give a falling loss
    opt = module.make_optimizer(model)
    batch = module.make_batch(seed=0, batch=4)
    losses = [module.train_step(model, opt, batch) for _ in range(4)]
    assert losses[-1] < losses[0]
    again = module.make_model(seed=0)
    assert all(eager.equal(a, b) for a, b in zip(module.make_model(seed=0).parameters(), again.parameters()))
    x, y = module.make_batch(seed=1, batch=2)
    assert x.shape[0] == 2 and y.dtype is eager.int64


def test_gpt_workload_shape_matches_the_spec(monkeypatch):
    module = _load(ROOT / "examples" / "workloads" / "w5_gpt.py", "w5_gpt", monkeypatch)
    model = module.make_model()
    idx, targets = module.make_batch()
    assert idx.shape == (16, 32) and targets.shape == (16, 32)
    assert model(idx).shape == (16, 32, 65)
    assert len(model.blocks) == 2 and model.blocks[0].mlp[0].out_features == 4 * 64
    assert isinstance(module.make_optimizer(model), eager.optim.AdamW)


def test_models_benchmark_runs_at_tiny_sizes(monkeypatch, tmp_path):
    bench = _load(ROOT / "benchmarks" / "models_bench.py", "models_bench", monkeypatch)
    out = tmp_path / "models.json"
    rows = bench.main(["--quick", "--repeats", "1", "--no-steps", "--malloc", "default", "--json", str(out)])
    assert [r["case"].split()[0] for r in rows] == ["conv2d", "layer_norm", "embedding"]
    assert all(r["eager_s"] > 0 for r in rows)
    assert json.loads(out.read_text())["results"] == rows


@pytest.mark.parametrize("name", ["w5_gpt", "w6_cnn"])
def test_workload_losses_compile_with_static(monkeypatch, name):
    """Every op of the two models has a lowering: the compiled loss (eval mode, so no random
    dropout inside the trace) and its gradients equal eager's."""
    static = pytest.importorskip("static")
    module = _load(ROOT / "examples" / "workloads" / f"{name}.py", name, monkeypatch)
    model = module.make_model(seed=0)
    model.eval()
    batch = module.make_batch(seed=0, batch=2)

    def loss(x, y):
        return module.loss_fn(model, (x, y))

    expected = loss(*batch)
    expected.backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    got = static.compile(loss)(*batch)
    assert got.item() == pytest.approx(expected.item(), rel=1e-5)
    got.backward()
    for p, g in zip(model.parameters(), grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-4, atol=1e-6)
