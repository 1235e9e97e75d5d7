"""`torch.compile(model)` in public programs: the result is PyTorch's OptimizedModule, an
nn.Module holding the model as `_orig_mod`. Checkpoints saved from it carry the `_orig_mod.`
prefix (nanoGPT strips it before loading into a plain model), `model = model.eval()` keeps
the model compiled, attribute writes reach the model, and training through it matches eager
on the NumPy and native backends."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as F
from eager import nn


def _net(lib):
    # no bias before the BatchNorm: its exact gradient is zero, so what Adam would make of it is
    # rounding noise scaled up to a full step, which no two summation orders share
    return lib.nn.Sequential(lib.nn.Linear(3, 4, bias=False), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 2))


def test_state_dict_keys_and_names_carry_orig_mod_as_pytorchs():
    torch = pytest.importorskip("torch")
    ours, theirs = eager.compile(_net(eager)), torch.compile(_net(torch))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert [n for n, _ in ours.named_buffers()] == [n for n, _ in theirs.named_buffers()]
    assert type(ours).__name__ == type(theirs).__name__ == "OptimizedModule"
    assert repr(ours).splitlines()[:2] == ["OptimizedModule(", "  (_orig_mod): Sequential("]


def test_checkpoint_round_trip_with_the_prefix_stripped_as_nanogpt_does():
    eager.manual_seed(0)
    model = eager.compile(_net(eager))
    model(eager.randn(5, 3))  # running stats move
    sd = model.state_dict()
    fresh = _net(eager)
    with pytest.raises(RuntimeError, match="_orig_mod"):
        fresh.load_state_dict(sd)  # PyTorch's error: unexpected keys with the prefix
    unwanted = "_orig_mod."
    fresh.load_state_dict({k[len(unwanted):] if k.startswith(unwanted) else k: v for k, v in sd.items()})
    again = eager.compile(_net(eager))
    again.load_state_dict(sd)  # the prefixed keys load into a compiled model
    x = eager.randn(4, 3)
    model.eval(), fresh.eval(), again.eval()
    with eager.no_grad():
        np.testing.assert_allclose(fresh(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(again(x).numpy(), model(x).numpy(), rtol=1e-6, atol=1e-6)


def test_mode_switches_return_the_compiled_module_and_reach_the_model():
    raw = _net(eager)
    model = eager.compile(raw)
    assert model.eval() is model and not raw.training and not model.training
    assert model.train() is model and raw.training
    model.training = False  # a write of the mode reaches the model, as PyTorch's property does
    assert not raw.training
    raw.train()
    assert model.training
    model.flag = 3  # other attributes are the model's
    assert raw.flag == 3 and model.flag == 3
    assert model._orig_mod is raw and len(model) == 4
    with pytest.raises(TypeError, match="not subscriptable"):  # as PyTorch's: only len() is passed on
        model[0]
    assert isinstance(model, nn.Module)
    # scripts unwrap with `isinstance(m, torch._dynamo.eval_frame.OptimizedModule)`
    assert isinstance(model, eager._dynamo.OptimizedModule)
    assert eager._dynamo.OptimizedModule is eager._dynamo.eval_frame.OptimizedModule
    assert "explain" in dir(type(model._compiled)) and callable(model.explain)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_training_through_the_compiled_module_matches_eager_with_eval_switches(backend):
    def run(compiled):
        eager.manual_seed(0)
        raw = _net(eager)
        model = eager.compile(raw, backend=backend) if compiled else raw
        opt = eager.optim.AdamW(model.parameters(), lr=0.05, weight_decay=0.1)
        losses = []
        for _ in range(5):
            model = model.train()
            x, y = eager.randn(6, 3), eager.randn(6, 2)
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
            losses.append(loss.item())
            model = model.eval()
            with eager.no_grad():
                losses.append(model(x).sum().item())
        return losses, [t.numpy().copy() for t in raw.state_dict().values()]

    want, want_state = run(False)
    got, got_state = run(True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_state, want_state):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_eager_backend_and_disable_as_pytorchs():
    raw = _net(eager)
    wrapped = eager.compile(raw, backend="eager")
    assert type(wrapped).__name__ == "OptimizedModule" and wrapped._orig_mod is raw
    x = eager.randn(2, 3)
    raw.eval()
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), raw(x).detach().numpy())
    assert eager.compile(raw, disable=True) is raw


def test_a_copy_of_a_compiled_module_is_compiled_alike_and_independent():
    import copy  # noqa: PLC0415

    eager.manual_seed(0)
    model = eager.compile(_net(eager), backend="numpy")
    x = eager.randn(4, 3)
    model(x)
    twin = copy.deepcopy(model)  # PyTorch's EMA and checkpoint-averaging programs copy the model
    assert type(twin).__name__ == "OptimizedModule" and twin._orig_mod is not model._orig_mod
    assert twin._compiled.backend == "numpy" and twin._compiled is not model._compiled
    with eager.no_grad():
        twin._orig_mod[0].weight.add_(1.0)
    model.eval(), twin.eval()
    with eager.no_grad():
        want = model._orig_mod(x).numpy()
        np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-6, atol=1e-6)
        assert not np.allclose(twin(x).numpy(), want)
        np.testing.assert_allclose(twin(x).numpy(), twin._orig_mod(x).numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_module_compile_in_place_keeps_the_module_and_trains_as_eager(backend):
    def run(compiled):
        eager.manual_seed(0)
        model = _net(eager)
        if compiled:
            assert model.compile(backend=backend) is None  # torch.nn.Module.compile: in place
        opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        out = []
        for _ in range(4):
            model.train()
            opt.zero_grad()
            loss = F.mse_loss(model(eager.randn(6, 3)), eager.randn(6, 2))
            loss.backward()
            opt.step()
            out.append(loss.item())
            model.eval()
            with eager.no_grad():
                out.append(model(eager.ones(2, 3)).sum().item())
        return model, out

    ref, want = run(False)
    model, got = run(True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert list(model.state_dict()) == list(ref.state_dict())  # no prefix: the module is itself
    compiled = model.__dict__["_compiled_call_impl"]
    assert compiled.compile_seconds and len(compiled.compile_seconds) <= 3  # compiled, not retraced per call


def test_a_copy_of_a_module_compiled_in_place_runs_its_own_weights():
    import copy  # noqa: PLC0415

    model = nn.Linear(2, 1)
    model.compile(backend="numpy")
    x = eager.ones(1, 2)
    model(x)
    twin = copy.deepcopy(model)  # as PyTorch's: the copy runs uncompiled, on its own parameters
    assert "_compiled_call_impl" not in twin.__dict__
    with eager.no_grad():
        twin.weight.add_(1.0)
        np.testing.assert_allclose(twin(x).numpy(), model(x).numpy() + 2.0, rtol=1e-6)


def test_a_whole_compiled_model_saved_and_loaded_is_compiled_alike():
    import io  # noqa: PLC0415

    model = eager.compile(_net(eager), backend="numpy")
    model.eval()
    buf = io.BytesIO()
    eager.save(model, buf)  # torch.save(model): PyTorch pickles OptimizedModule too
    buf.seek(0)
    loaded = eager.load(buf, weights_only=False)
    assert type(loaded).__name__ == "OptimizedModule" and loaded._compiled.backend == "numpy"
    assert list(loaded.state_dict()) == list(model.state_dict())
    x = eager.randn(3, 3)
    with eager.no_grad():
        np.testing.assert_array_equal(loaded(x).numpy(), model(x).numpy())
