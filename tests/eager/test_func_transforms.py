"""eager.func: grad, grad_and_value, vjp and functional_call, as torch.func has them."""
import numpy as np
import pytest

import eager
from eager import func, nn

X = np.array([0.5, -1.0, 2.0])


def f(x):
    return (x ** 3).sum()


def test_grad_and_its_nesting():
    x = eager.tensor(X)
    np.testing.assert_allclose(func.grad(f)(x).numpy(), 3 * X ** 2, rtol=1e-12)
    second = func.grad(lambda v: func.grad(f)(v).sum())(x)
    np.testing.assert_allclose(second.numpy(), 6 * X, rtol=1e-12)
    third = func.grad(lambda v: func.grad(lambda w: func.grad(f)(w).sum())(v).sum())(x)
    np.testing.assert_allclose(third.numpy(), np.full(3, 6.0), rtol=1e-12)
    assert not func.grad(f)(x).requires_grad  # the outermost level gives plain tensors


def test_argnums_has_aux_and_value():
    def g(a, b):
        return (a * b).sum(), {"norm": a.norm()}

    a, b = eager.tensor(X), eager.tensor(X[::-1].copy())
    (ga, gb), (value, aux) = func.grad_and_value(g, argnums=(0, 1), has_aux=True)(a, b)
    np.testing.assert_allclose(ga.numpy(), X[::-1])
    np.testing.assert_allclose(gb.numpy(), X)
    assert value.item() == pytest.approx((X * X[::-1]).sum())
    assert aux["norm"].item() == pytest.approx(np.linalg.norm(X))
    gb_only, aux_only = func.grad(g, argnums=1, has_aux=True)(a, b)
    np.testing.assert_allclose(gb_only.numpy(), X)
    assert func.grad(lambda u, v: u.sum())(a, b).tolist() == [1.0, 1.0, 1.0]
    np.testing.assert_array_equal(func.grad(lambda u, v: u.sum(), argnums=1)(a, b).numpy(), 0.0)  # unused: zeros


def test_errors():
    with pytest.raises(RuntimeError, match="scalar Tensor"):
        func.grad(lambda v: v * 2)(eager.tensor(X))
    with pytest.raises(RuntimeError, match="argnums"):
        func.grad(f, argnums=2)(eager.tensor(X))
    with pytest.raises(RuntimeError, match="floating-point tensor"):
        func.grad(lambda v: v.sum())(eager.tensor([1, 2]))
    with pytest.raises(RuntimeError, match=r"tuple: \(output, aux\)"):
        func.grad(f, has_aux=True)(eager.tensor(X))


def test_vjp():
    out, vjp_fn = func.vjp(lambda v: v.sin() * 2, eager.tensor(X))
    np.testing.assert_allclose(out.numpy(), 2 * np.sin(X))
    (ct,) = vjp_fn(eager.tensor([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(ct.numpy(), 2 * np.cos(X) * [1.0, 2.0, 3.0], rtol=1e-12)
    (again,) = vjp_fn(eager.ones(3))  # vjp_fn can be called again
    np.testing.assert_allclose(again.numpy(), 2 * np.cos(X), rtol=1e-12)


def test_functional_call_with_merged_dicts():
    model = nn.Linear(3, 1)
    params = {"weight": eager.ones(1, 3)}
    buffers_like = {"bias": eager.zeros(1)}
    x = eager.tensor(X, dtype=eager.float32).reshape(1, 3)
    out = func.functional_call(model, (params, buffers_like), (x,))
    assert out.item() == pytest.approx(X.sum())
    assert not np.array_equal(model.weight.detach().numpy(), np.ones((1, 3)))  # the module is unchanged
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        func.functional_call(model, (params, params), (x,))
    params = {k: v.detach() for k, v in model.named_parameters()}
    grads = func.grad(lambda p: func.functional_call(model, p, (x,)).sum())(params)
    assert set(grads) == {"weight", "bias"}
    np.testing.assert_allclose(grads["weight"].numpy(), x.numpy())
    np.testing.assert_allclose(grads["bias"].numpy(), [1.0])


def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    t = torch.func.grad(lambda v: torch.func.grad(lambda w: (w ** 3).sum())(v).sum())(torch.tensor(X))
    e = func.grad(lambda v: func.grad(f)(v).sum())(eager.tensor(X))
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-12)
