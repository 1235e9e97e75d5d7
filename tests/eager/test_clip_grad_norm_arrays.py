"""clip_grad_norm_'s 2-norm on the gradients' arrays: PyTorch's total, scaling, dtype and
in-place versions; the op path (other norms, mixed dtypes) gives the same numbers."""
from __future__ import annotations

import numpy as np
import pytest

import eager

SHAPES = [(4, 5), (5,), (3, 3, 2), (7,)]


def _grads(scale, dtype=np.float32):
    rng = np.random.default_rng(0)
    return [(rng.standard_normal(s) * scale).astype(dtype) for s in SHAPES]


def _params(lib, grads):
    params = [lib.zeros(*g.shape, requires_grad=True, dtype=getattr(lib, str(g.dtype))) for g in grads]
    for p, g in zip(params, grads):
        p.grad = lib.tensor(g)
    return params


@pytest.mark.parametrize(("scale", "max_norm"), [(1.0, 1.0), (1e-3, 5.0), (3.0, 0.5)])
def test_clip_grad_norm_matches_pytorch(scale, max_norm):
    torch = pytest.importorskip("torch")
    grads = _grads(scale)
    ours, theirs = _params(eager, grads), _params(torch, grads)
    versions = [p.grad._version for p in ours]
    total = eager.nn.utils.clip_grad_norm_(ours, max_norm)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    assert total.dtype == eager.float32 and total.shape == ()
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    for p, q, v in zip(ours, theirs, versions):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-6, atol=1e-8)
        assert p.grad._version == v + 1


def test_array_path_equals_op_path():
    grads = _grads(2.0, np.float64)
    fast, ops = _params(eager, grads), _params(eager, grads)
    total = eager.nn.utils.clip_grad_norm_(fast, 1.0)
    ops.append(eager.zeros(1, requires_grad=True))  # a float32 gradient among float64: the op path
    ops[-1].grad = eager.zeros(1)
    total_ops = eager.nn.utils.clip_grad_norm_(ops, 1.0)
    np.testing.assert_allclose(total.item(), total_ops.item(), rtol=1e-12)
    for a, b in zip(fast, ops):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


def test_non_finite_norm_raises_when_asked():
    grads = _grads(1.0)
    grads[1][0] = np.inf
    with pytest.raises(RuntimeError, match="non-finite"):
        eager.nn.utils.clip_grad_norm_(_params(eager, grads), 1.0, error_if_nonfinite=True)
