"""Activations at NaN, at their kinks and at their bounds: values and gradients as PyTorch's
(its backward kernels test `x <= t` for the branch that drops the gradient, so a NaN takes
the other branch: relu and threshold pass the gradient, elu passes it scaled, hardsigmoid
drops it), in eager and in a compiled function."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

VALUES = [float("nan"), -3.0, -1.0, 0.0, 1.0, 3.0, 6.0, 7.0]
CASES = {
    "relu": lambda F, x: F.relu(x),
    "Tensor.relu": lambda F, x: x.relu(),
    "threshold": lambda F, x: F.threshold(x, 0.5, -2.0),
    "elu": lambda F, x: F.elu(x, 0.7),
    "selu": lambda F, x: F.selu(x),
    "celu": lambda F, x: F.celu(x, 1.3),
    "hardswish": lambda F, x: F.hardswish(x),
    "hardsigmoid": lambda F, x: F.hardsigmoid(x),
    "relu6": lambda F, x: F.relu6(x),
    "hardtanh": lambda F, x: F.hardtanh(x),
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.1),
}


def _torch_reference(name):
    torch = pytest.importorskip("torch")
    x = torch.tensor(VALUES, requires_grad=True)
    y = CASES[name](torch.nn.functional, x)
    (y * torch.arange(1.0, len(VALUES) + 1)).sum().backward()
    return y.detach().numpy(), x.grad.numpy()


def _ours(name, compiled: bool):
    F = eager.nn.functional
    x = eager.tensor(VALUES, requires_grad=True)
    weights = eager.arange(1.0, len(VALUES) + 1)

    def loss(x):
        y = CASES[name](F, x)
        return (y * weights).sum(), y
    if compiled:
        out, y = static.compile(loss)(x)
    else:
        out, y = loss(x)
    out.backward()
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("name", list(CASES))
def test_activation_values_and_gradients_at_nan_match_pytorch(name, compiled):
    expected_y, expected_g = _torch_reference(name)
    y, g = _ours(name, compiled)
    np.testing.assert_allclose(y, expected_y, rtol=1e-6, atol=1e-7, equal_nan=True)
    np.testing.assert_allclose(g, expected_g, rtol=1e-6, atol=1e-7, equal_nan=True)
