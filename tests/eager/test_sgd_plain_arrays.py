"""Plain SGD (no momentum, no weight decay) updates each parameter's array in place: the
same bits as the per-parameter path and PyTorch's values, versions counted, maximize too."""
from __future__ import annotations

import numpy as np
import pytest

import eager

SHAPES = [(4, 5), (5,), (3,)]


def _run(lib, foreach, maximize):
    rng = np.random.default_rng(0)
    params = [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in SHAPES]
    opt = lib.optim.SGD(params, lr=0.1, foreach=foreach, maximize=maximize)
    for _ in range(3):
        for p in params:
            p.grad = lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32))
        opt.step()
    return [p.detach().numpy().copy() for p in params], params[0]._version


@pytest.mark.parametrize("maximize", [False, True])
def test_plain_sgd_same_bits_as_per_parameter_path(maximize):
    (fast, v_fast), (slow, v_slow) = _run(eager, True, maximize), _run(eager, False, maximize)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    assert v_fast == v_slow == 3


@pytest.mark.parametrize("maximize", [False, True])
def test_plain_sgd_matches_pytorch(maximize):
    torch = pytest.importorskip("torch")
    ours, _ = _run(eager, None, maximize)
    theirs, _ = _run(torch, None, maximize)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
