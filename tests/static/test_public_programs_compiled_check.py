"""The compile check (`check=True`, GRAPHMODE_CHECK=1) over public-program patterns: a step
that logs `loss.item()` into a list runs eagerly (it cannot be split between zero_grad() and
backward()), and the check must not run it a second time (the log once had every loss
twice); a function returning a dataclass of tensors is compared field by field (its
generated __eq__ once raised "Boolean value of Tensor ... is ambiguous")."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from eager import nn
from static.check import CheckError, _compare


def _logging_run(backend):
    eager.manual_seed(0)
    model = nn.Linear(3, 1)
    opt = eager.optim.SGD(model.parameters(), lr=0.1)
    log: list = []

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        log.append(loss.item())
        loss.backward()
        opt.step()
        return loss

    f = static.compile(step, backend=backend, check=True, fallback="eager") if backend else step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # runs eagerly, said once
        for i in range(3):
            f(eager.ones(4, 3) * i, eager.ones(4, 1))
    return log, [p.detach().numpy().copy() for p in model.parameters()]


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_check_runs_an_eager_fallback_step_once(backend):
    want_log, want = _logging_run(None)
    got_log, got = _logging_run(backend)
    assert got_log == want_log  # not each loss twice
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


@dataclasses.dataclass
class _Out:
    logits: object
    loss: object


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_check_compares_a_dataclass_result_field_by_field(backend):
    def f(x, w):
        h = x @ w
        return _Out(h, h.square().mean())

    compiled = static.compile(f, backend=backend, check=True)
    x, w = eager.ones(3, 4), eager.ones(4, 2, requires_grad=True)
    out = compiled(x, w)
    assert isinstance(out, _Out)
    np.testing.assert_allclose(out.logits.detach().numpy(), np.full((3, 2), 4.0))
    assert out.loss.item() == 16.0
    with pytest.raises(CheckError, match=r"output 0 of f\.loss"):  # a field that differs is named
        _compare("output 0 of f", _Out(np.ones(2), np.float32(1.0)), _Out(np.ones(2), np.float32(2.0)), None, None)
