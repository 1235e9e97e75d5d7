"""The write-back of a compiled training step as generated code (static/jit/bridge.writer),
and the rest of a call after its preparation as one generated function (static/jit/call_plan):
made at an entry's first calls, they give the values of the general path (loss, parameters,
optimizer state, fresh `.grad` tensors, the loss's freed history), refuse a read-only
parameter as write_back does, changing nothing, and hand a call whose captured tensor changed
type to the general path."""
import numpy as np
import pytest

import eager
import eager.nn as nn
import static
import static.jit.call as jit_call
from static.jit.bridge import _OVERLAP_MSG

X = eager.tensor(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))


def _compiled_sgd_step():
    """(model, compiled step) of a Linear(3, 2) trained by plain SGD, seed 0."""
    eager.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = eager.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        loss = model(x).sum()
        loss.backward()
        opt.step()
        return loss
    return model, static.compile(step)


def _run(planned: bool, monkeypatch, steps: int = 3):
    if not planned:
        monkeypatch.setattr(jit_call, "writer", lambda *a, **k: None)
        monkeypatch.setattr(jit_call, "runner", lambda *a, **k: None)
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(x):
        opt.zero_grad()
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        return loss
    f = static.compile(step)
    out, grads = [], []
    for _ in range(steps):
        loss = f(X)
        assert loss.requires_grad and loss.grad_fn is not None  # (a backward() inside freed its graph)
        out.append(loss.detach().numpy().copy())
        grads.append(model[0].weight.grad)  # kept: each step's own tensor
    entry = f._last_entry
    assert bool(entry.writer) == planned and bool(entry.runner) == planned
    state = [t.detach().numpy().copy() for t in model.state_dict().values()]
    momenta = [s["momentum_buffer"].numpy().copy() for s in opt.state.values()]
    monkeypatch.undo()
    return out, [g.numpy().copy() for g in grads], state, momenta, len({id(g) for g in grads})


def test_the_generated_write_back_gives_write_backs_values(monkeypatch):
    planned, generic = _run(True, monkeypatch), _run(False, monkeypatch)
    assert planned[4] == generic[4] == 3  # a new .grad tensor each step
    for a, b in zip(planned[:4], generic[:4]):
        for u, v in zip(a, b):
            np.testing.assert_array_equal(u, v)


def test_a_read_only_parameter_is_refused_and_nothing_is_written():
    model, f = _compiled_sgd_step()
    f(X)
    f(X)
    assert f._last_entry.writer
    before = [p.detach().numpy().copy() for p in model.parameters()]
    model.weight._data.flags.writeable = False
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        f(X)
    assert _OVERLAP_MSG.startswith("unsupported operation")
    for p, b in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), b)


def test_a_captured_tensor_of_another_type_takes_the_general_path():
    model, f = _compiled_sgd_step()
    for _ in range(3):
        f(X)
    entry = f._last_entry
    assert entry.runner
    captured = next(c for c in entry.trace.captured if c[0] is model.weight)
    taken = []
    general = entry.runner.__globals__["GENERAL"]
    entry.runner.__globals__["GENERAL"] = lambda e, lv: taken.append(1) or general(e, lv)
    try:
        captured[0] = eager.Tensor._make(model.weight.detach().numpy().copy())  # a plain tensor, not a Parameter
        f(X)
    finally:
        captured[0] = model.weight
        entry.runner.__globals__["GENERAL"] = general
    assert taken == [1]


def test_graphmode_call_plan_0_keeps_the_general_path(monkeypatch):
    monkeypatch.setenv("GRAPHMODE_CALL_PLAN", "0")
    model, f = _compiled_sgd_step()
    for _ in range(3):
        f(X)
    assert f._last_entry.writer is False and f._last_entry.runner is False
