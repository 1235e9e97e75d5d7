"""eager.amp: GradScaler step by step against PyTorch's (scale, skipped steps, parameters),
its errors and pass-through when disabled; autocast as a no-op when disabled and a clear
error when enabled."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager
from eager import nn

torch = pytest.importorskip("torch")


def _pair(seed: int = 0):
    eager.manual_seed(seed)
    e_model, t_model = nn.Linear(3, 4), torch.nn.Linear(3, 4)
    t_model.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in e_model.state_dict().items()})
    return e_model, t_model


def _run(lib, model, scaler, x, y, blowups, clip):
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scales, params = [], []
    for k in range(len(x)):
        opt.zero_grad()
        loss = ((model(lib.tensor(x[k])) - lib.tensor(y[k])) ** 2).mean()
        if k in blowups:
            loss = loss * float("inf")  # every gradient becomes inf or NaN: the step is skipped
        scaler.scale(loss).backward()
        if clip:
            scaler.unscale_(opt)
            lib.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
        params.append(np.concatenate([p.detach().numpy().ravel() for p in model.parameters()]))
    return scales, params


@pytest.mark.parametrize("clip", [False, True])
def test_grad_scaler_steps_as_pytorch(clip):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((9, 5, 3)).astype(np.float32)
    y = rng.standard_normal((9, 5, 4)).astype(np.float32)
    blowups = {2, 3, 7}
    e_model, t_model = _pair()
    e_scaler = eager.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    t_scaler = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=2)
    e_scales, e_params = _run(eager, e_model, e_scaler, x, y, blowups, clip)
    t_scales, t_params = _run(torch, t_model, t_scaler, x, y, blowups, clip)
    assert e_scales == t_scales  # backed off after each blow-up, grown after two clean steps
    for a, b in zip(e_params, t_params):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(e_params[2], e_params[1])  # a skipped step leaves the parameters
    assert e_scaler.state_dict() == pytest.approx(t_scaler.state_dict())
    assert set(e_scaler.state_dict()) == set(t_scaler.state_dict())


def test_grad_scaler_state_round_trip_and_errors():
    model = nn.Linear(2, 1)
    opt = eager.optim.SGD(model.parameters(), lr=0.1)
    scaler = eager.amp.GradScaler("cpu", init_scale=8.0)
    with pytest.raises(AssertionError, match="No inf checks"):
        scaler.update()
    scaler.scale(model(eager.ones(3, 2)).sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    scaler.update()
    other = eager.amp.GradScaler("cpu")
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == scaler.get_scale() == 8.0
    with pytest.raises(RuntimeError, match="empty"):
        other.load_state_dict({})
    with pytest.raises(AssertionError, match="growth factor"):
        eager.amp.GradScaler("cpu", growth_factor=1.0)


def test_a_disabled_scaler_passes_everything_through():
    model = nn.Linear(2, 1)
    opt = eager.optim.SGD(model.parameters(), lr=0.5)
    scaler = eager.cuda.amp.GradScaler(enabled=False)
    loss = model(eager.ones(3, 2)).sum()
    assert scaler.scale(loss) is loss and scaler.get_scale() == 1.0 and not scaler.is_enabled()
    loss.backward()
    before = model.weight.detach().numpy().copy()
    scaler.step(opt)
    scaler.update()
    np.testing.assert_allclose(model.weight.detach().numpy(), before - 0.5 * 3.0)
    assert scaler.state_dict() == {}


def test_a_cuda_scaler_without_a_gpu_disables_itself_with_pytorchs_warning():
    if eager.cuda.is_available():
        pytest.skip("a GPU answers here")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        scaler = eager.cuda.amp.GradScaler()
    assert not scaler.is_enabled()
    assert any("CUDA is not available" in str(w.message) for w in seen)


def test_autocast_disabled_is_a_no_op_and_enabled_is_a_clear_error():
    x = eager.ones(2, 2)
    with eager.autocast("cpu", enabled=False):
        y = x @ x
    assert y.dtype == eager.float32
    with eager.cuda.amp.autocast(enabled=False), eager.cpu.amp.autocast(enabled=False):
        pass

    @eager.autocast("cpu", enabled=False)
    def f(a):
        return a * 2

    assert f(x).dtype == eager.float32
    with pytest.raises(NotImplementedError, match="no autocasting"):
        with eager.autocast("cpu", dtype=eager.float16):
            pass
    with pytest.raises(NotImplementedError, match="enabled=False"):
        with eager.amp.autocast("cuda"):
            pass
    assert eager.amp.is_autocast_available("cpu") is False
    with pytest.raises(ValueError, match="device_type"):
        eager.autocast(0)


def test_bfloat16_is_a_name_whose_use_is_a_clear_type_error():
    """Scripts build dtype tables at import ({'bfloat16': torch.bfloat16, ...}) and pick
    float32 on a CPU: the name exists; a tensor of it cannot be made."""
    table = {"float32": eager.float32, "bfloat16": eager.bfloat16, "float16": eager.float16}
    assert repr(table["bfloat16"]) == "eager.bfloat16" and table["bfloat16"].is_floating_point
    assert eager.ones(2).dtype != eager.bfloat16 and not eager.cuda.is_bf16_supported()
    for make in (lambda: eager.zeros(2, dtype=eager.bfloat16), lambda: eager.ones(2).to(eager.bfloat16),
                 lambda: eager.ones(2).to("cpu", eager.bfloat16), lambda: eager.tensor([1.0], dtype="bfloat16"),
                 lambda: eager.ones(2).type(eager.complex32)):
        with pytest.raises(TypeError, match="is not supported.*use float32"):
            make()
