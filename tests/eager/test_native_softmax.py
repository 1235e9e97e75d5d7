"""softmax / log_softmax over the last dimension as one native node each way
(eager/_fused_softmax.py, gmnative/softmax_kernels.py), against PyTorch and the op path."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck
from gmnative import softmax_kernels

torch = pytest.importorskip("torch")

_TOL = {np.float32: (2e-6, 1e-7), np.float64: (1e-12, 1e-14), np.float16: (1e-3, 1e-4)}
needs_kernel = pytest.mark.skipif(not softmax_kernels.available(),
                                  reason="no native compiler (the op path runs)")


def _pair(name, x, dim, g):
    a = eager.tensor(x, requires_grad=True)
    y = getattr(eager, name)(a, dim)
    y.backward(eager.tensor(g))
    b = torch.tensor(x, requires_grad=True)
    z = getattr(torch, name)(b, dim)
    z.backward(torch.tensor(g))
    return y, a.grad, z, b.grad


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("shape,dim", [((4, 2, 9, 9), -1), ((4, 2, 9, 9), 3), ((6, 5), 0), ((7,), -1),
                                       ((0, 5), -1), ((3, 1), -1), ((2, 300), 1)])
def test_values_and_gradients_match_torch(name, dtype, shape, dim):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    y, gx, z, gz = _pair(name, x, dim, g)
    rtol, atol = _TOL[dtype]
    assert y.dtype == getattr(eager, np.dtype(dtype).name) and y.shape == tuple(shape)
    atol = max(atol, np.finfo(dtype).eps * 32)  # (log_softmax near 0 is x - lse: |x| ~ 10 cancels)
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(gx.numpy(), gz.numpy(), rtol=rtol * 10, atol=atol)
    assert y.grad_fn.name() == z.grad_fn.name()


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_zero_dim_matches_torch(name):
    y, gx, z, gz = _pair(name, np.array(1.5, np.float32), 0, np.array(2.0, np.float32))
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy())
    np.testing.assert_allclose(gx.numpy(), gz.numpy())


@needs_kernel
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_last_dim_is_one_native_node_each_way(name):
    a = eager.tensor(np.ones((3, 4), np.float32), requires_grad=True)
    y = getattr(eager, name)(a, -1)
    assert type(y.grad_fn).__module__ == "eager._fused_softmax"
    assert y.grad_fn.next_functions[0][0].name().endswith("AccumulateGrad")
    b = a * 2.0
    assert getattr(eager, name)(b, -1).grad_fn.next_functions[0][0] is b.grad_fn


@needs_kernel
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_forward_bits_equal_the_op_path(name):
    from gmops import REGISTRY

    for dtype in (np.float32, np.float64):
        x = (np.random.default_rng(7).standard_normal((4, 6, 33)) * 5).astype(dtype)
        x[0, :, 20:] = -np.inf  # (masked scores, as a causal attention's)
        np.testing.assert_array_equal(getattr(eager, name)(eager.tensor(x), -1).numpy(),
                                      REGISTRY[name].forward(np, x, dim=2))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_non_finite_rows_match_torch(name):
    rows = [[1.0, -np.inf, 2.0], [-np.inf] * 3, [np.nan, 0.0, 1.0]]
    if name == "softmax":  # (log_softmax of a row holding +inf: the op path's -inf where PyTorch's is nan)
        rows += [[np.inf, 0.0, 1.0], [np.inf, np.inf, 0.0]]
    x = np.array(rows, np.float32)
    with np.errstate(all="ignore"):
        y = getattr(eager, name)(eager.tensor(x), -1).numpy()
    z = getattr(torch, name)(torch.tensor(x), -1).numpy()
    np.testing.assert_array_equal(np.isnan(y), np.isnan(z))
    np.testing.assert_allclose(y[~np.isnan(y)], z[~np.isnan(z)], rtol=1e-6)


def test_masked_attention_row_matches_torch():
    x = np.random.default_rng(1).standard_normal((2, 8, 8)).astype(np.float32)
    x[:, np.triu(np.ones((8, 8), bool), 1)] = -np.inf
    g = np.random.default_rng(2).standard_normal((2, 8, 8)).astype(np.float32)
    y, gx, z, gz = _pair("softmax", x, -1, g)
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(gx.numpy(), gz.numpy(), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_non_contiguous_input_and_gradient(name):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 6)).astype(np.float32)
    a = eager.tensor(x, requires_grad=True)
    y = getattr(eager, name)(a.t(), -1)
    g = rng.standard_normal((6, 5)).astype(np.float32)
    (y * eager.tensor(g).t().contiguous().t()).sum().backward()
    b = torch.tensor(x, requires_grad=True)
    (getattr(torch, name)(b.t(), -1) * torch.tensor(g).t().contiguous().t()).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_gradcheck_and_double_backward(name):
    fn = getattr(eager, name)
    x = eager.tensor(np.random.default_rng(4).standard_normal((3, 5)), requires_grad=True)
    assert gradcheck(lambda t: fn(t, -1), (x,))
    w = eager.tensor(np.random.default_rng(5).standard_normal((3, 5)))
    (gx,) = eager.autograd.grad([(fn(x, -1) * w).sum()], [x], create_graph=True)
    (ggx,) = eager.autograd.grad([(gx * gx).sum()], [x])
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    (gt,) = torch.autograd.grad([(getattr(torch, name)(xt, -1) * torch.tensor(w.numpy())).sum()], [xt],
                                create_graph=True)
    (ggt,) = torch.autograd.grad([(gt * gt).sum()], [xt])
    np.testing.assert_allclose(gx.detach().numpy(), gt.detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(ggx.numpy(), ggt.numpy(), rtol=1e-9, atol=1e-12)


def test_modifying_the_output_in_place_then_backward_raises():
    a = eager.tensor(np.ones((2, 3), np.float32), requires_grad=True)
    y = eager.softmax(a, -1)
    y.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_integer_input_raises_as_torch():
    with pytest.raises((NotImplementedError, RuntimeError), match="softmax"):
        eager.softmax(eager.tensor([[1, 2]]), -1)


def test_dtype_argument_and_functional_spellings():
    x = np.random.default_rng(6).standard_normal((3, 4)).astype(np.float32)
    want = torch.softmax(torch.tensor(x), -1, dtype=torch.float64).numpy()
    for got in (eager.softmax(eager.tensor(x), -1, dtype=eager.float64),
                eager.nn.functional.softmax(eager.tensor(x).double(), dim=-1), eager.tensor(x).double().softmax(-1)):
        assert got.dtype == eager.float64
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


@needs_kernel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (333, 77), (1024, 128)])
def test_column_sum_has_numpys_bits(dtype, shape):
    rng = np.random.default_rng(8)
    g = (rng.standard_normal(shape) * np.exp(rng.standard_normal(shape) * 5)).astype(dtype)
    np.testing.assert_array_equal(softmax_kernels.column_sum(g), g.sum(0))
    np.testing.assert_array_equal(softmax_kernels.column_sum(np.full(shape, -0.0, dtype)), np.full(shape, -0.0, dtype).sum(0))


def test_linear_bias_gradient_matches_torch():
    rng = np.random.default_rng(9)
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 6, 5), (3, 5), (3,)))
    g = rng.standard_normal((4, 6, 3)).astype(np.float32)
    ts = [eager.tensor(a, requires_grad=True) for a in (x, w, b)]
    eager.nn.functional.linear(*ts).backward(eager.tensor(g))
    rs = [torch.tensor(a, requires_grad=True) for a in (x, w, b)]
    torch.nn.functional.linear(*rs).backward(torch.tensor(g))
    for t, r in zip(ts, rs):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert np.array_equal(ts[2].grad.numpy(), g.reshape(-1, 3).sum(0))


# -- exact GELU as one node each way (eager/_fused_gelu.py) -------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_matches_torch_and_the_op_path(dtype, approximate):
    if dtype == np.float16 and approximate == "tanh":
        pytest.skip("the op path's float16 tanh-GELU gradient is computed in float16 steps (not this path's)")
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((4, 6, 33)) * 3).astype(dtype)
    g = rng.standard_normal((4, 6, 33)).astype(dtype)
    a = eager.tensor(x, requires_grad=True)
    y = eager.nn.functional.gelu(a, approximate=approximate)
    y.backward(eager.tensor(g))
    b = torch.tensor(x, requires_grad=True)
    z = torch.nn.functional.gelu(b, approximate=approximate)
    z.backward(torch.tensor(g))
    assert y.grad_fn.name() == z.grad_fn.name() == "GeluBackward0"
    tol = dict(rtol=1e-5, atol=2e-5) if dtype == np.float32 else (  # (tanh form: its tails cancel)
        dict(rtol=1e-12, atol=1e-14) if dtype == np.float64 else dict(rtol=2e-3, atol=2e-3))
    np.testing.assert_allclose(y.detach().numpy(), z.detach().numpy(), **tol)
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)
    c = eager.tensor(x, requires_grad=True)  # the op path: the same bits
    yc = eager._functional.gelu(c, approximate=approximate)
    yc.backward(eager.tensor(g))
    np.testing.assert_array_equal(yc.detach().numpy(), y.detach().numpy())
    np.testing.assert_array_equal(c.grad.numpy(), a.grad.numpy())


def test_gelu_gradcheck_double_backward_and_in_place_check():
    x = eager.tensor(np.random.default_rng(11).standard_normal((3, 5)), requires_grad=True)
    assert gradcheck(lambda t: eager.nn.functional.gelu(t), (x,))
    (gx,) = eager.autograd.grad([eager.nn.functional.gelu(x).sum()], [x], create_graph=True)
    (ggx,) = eager.autograd.grad([gx.sum()], [x])
    xt = torch.tensor(x.detach().numpy(), requires_grad=True)
    (gt,) = torch.autograd.grad([torch.nn.functional.gelu(xt).sum()], [xt], create_graph=True)
    (ggt,) = torch.autograd.grad([gt.sum()], [xt])
    np.testing.assert_allclose(ggx.numpy(), ggt.numpy(), rtol=1e-10, atol=1e-12)
    h = x * 1.0
    y = eager.nn.functional.gelu(h)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_gelu_of_zero_dim_and_empty_and_no_grad():
    for x in (np.array(0.5, np.float32), np.zeros((0, 4), np.float32)):
        got = eager.nn.functional.gelu(eager.tensor(x)).numpy()
        np.testing.assert_allclose(got, torch.nn.functional.gelu(torch.tensor(x)).numpy(), rtol=1e-6)
        assert got.shape == x.shape
    with eager.no_grad():
        y = eager.nn.functional.gelu(eager.tensor(np.ones(3, np.float32), requires_grad=True))
    assert y.grad_fn is None and not y.requires_grad
