"""Regression tests for eager.nn fixes: nll_loss/cross_entropy read the target's values only
on an eager Tensor, so static can trace them with a traced target and match eager."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

F = eager.nn.functional


def _logits():
    return eager.tensor(np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32))


def test_cross_entropy_traces_with_a_traced_target_and_matches_eager():
    x, t = eager.randn(4, 3), eager.tensor([0, 1, 2, 0])
    compiled = static.compile(lambda x, t: eager.nn.functional.cross_entropy(x, t))
    np.testing.assert_allclose(compiled(x, t).numpy(), F.cross_entropy(x, t).numpy(), rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_traced_cross_entropy_with_ignored_targets_and_weights(reduction):
    x, t = _logits(), eager.tensor([0, -100, 2, 1])
    w = eager.tensor([0.5, 1.0, 2.0])
    for kwargs in ({}, {"weight": w}, {"label_smoothing": 0.1}):
        compiled = static.compile(lambda x, t: F.cross_entropy(x, t, reduction=reduction, **kwargs))  # noqa: B023  (called within this iteration)
        np.testing.assert_allclose(compiled(x, t).numpy(), F.cross_entropy(x, t, reduction=reduction, **kwargs).numpy(),
                                   rtol=1e-6, atol=1e-7)


def test_traced_nll_loss_matches_eager_and_its_gradient():
    x, t = _logits(), eager.tensor([2, 0, 1, 1])
    loss = lambda x, t: F.nll_loss(F.log_softmax(x, 1), t)  # noqa: E731
    np.testing.assert_allclose(static.compile(loss)(x, t).numpy(), loss(x, t).numpy(), rtol=1e-6)
    xe = x.detach().requires_grad_()
    loss(xe, t).backward()
    np.testing.assert_allclose(static.grad(loss)(x, t).numpy(), xe.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_eager_still_checks_the_target_range():
    x = _logits()
    for bad in ([0, 1, 3, 0], [0, -1, 2, 0]):
        with pytest.raises(IndexError, match=r"Target out of bounds: class indices must lie in \[0, 3\)"):
            F.cross_entropy(x, eager.tensor(bad))
    F.cross_entropy(x, eager.tensor([0, -100, 2, 0]))  # the ignored index is not out of range
