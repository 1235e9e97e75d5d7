"""static.functional_call: module parameters as an explicit, differentiable argument."""
import numpy as np
import pytest

import eager
import eager.nn as nn
import eager.nn.functional as F
import static

X = eager.tensor(np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32))
Y = eager.tensor(np.random.default_rng(1).standard_normal((5, 2)).astype(np.float32))


def _model():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def test_value_and_grad_with_respect_to_module_parameters_equals_eager():
    model = _model()
    params = {n: p.detach() for n, p in model.named_parameters()}

    def loss(params, x, y):
        return F.mse_loss(static.functional_call(model, params, (x,)), y)

    value, grads = static.value_and_grad(loss)(params, X, Y)
    F.mse_loss(model(X), Y).backward()
    np.testing.assert_allclose(value.item(), F.mse_loss(model(X), Y).item(), rtol=1e-6)
    assert set(grads) == set(params)
    for n, p in model.named_parameters():
        np.testing.assert_allclose(grads[n].numpy(), p.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_functional_call_uses_the_given_values_and_restores_the_module():
    model = _model()
    zeros = {n: eager.zeros_like(p) for n, p in model.named_parameters()}
    out = static.functional_call(model, zeros, X)
    np.testing.assert_array_equal(out.detach().numpy(), np.zeros((5, 2), np.float32))
    assert model[0].weight.abs().sum().item() > 0  # restored


def test_strict_and_unknown_names_are_refused():
    model = _model()
    with pytest.raises(RuntimeError, match="missing keys"):
        static.functional_call(model, {"0.weight": model[0].weight}, X, strict=True)
    with pytest.raises(AttributeError, match="not a parameter or buffer"):
        static.functional_call(model, {"0.nope": model[0].weight}, X)
