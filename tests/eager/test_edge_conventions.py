"""PyTorch's conventions at the edges it defines, op by op, values AND gradients, against
PyTorch: activations at their kinks (0, the clamp bounds, +-3), losses at p in {0, 1},
cross-entropy with every target ignored, gaussian_nll_loss below eps, poisson_nll_loss's
Stirling term. One table each; every row runs in float64 and float32."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

EDGES = np.array([-7.0, -6.0, -3.0, -2.5, -1.0, -0.5, 0.0, 0.5, 1.0, 2.5, 3.0, 6.0, 7.0])

# (functional name, kwargs): each is swept over EDGES
ACTIVATIONS = [
    ("relu", {}), ("relu6", {}), ("elu", {}), ("elu", dict(alpha=0.5)), ("celu", {}), ("celu", dict(alpha=2.0)),
    ("selu", {}), ("hardtanh", {}), ("hardtanh", dict(min_val=-3.0, max_val=0.5)), ("hardsigmoid", {}),
    ("hardswish", {}), ("leaky_relu", dict(negative_slope=0.2)), ("threshold", dict(threshold=1.0, value=-2.0)),
    ("hardshrink", dict(lambd=1.0)), ("softshrink", dict(lambd=1.0)), ("softplus", dict(beta=2.0, threshold=6.0)),
    ("gelu", {}), ("silu", {}), ("mish", {}), ("logsigmoid", {}), ("rrelu", dict(training=False)),
    ("softsign", {}), ("tanhshrink", {}),
]


def _activation(lib, name, kw, dtype):
    x = lib.tensor(EDGES.astype(dtype), requires_grad=True)
    y = getattr(lib.nn.functional, name)(x, **kw)
    y.backward(lib.tensor(np.linspace(0.5, 1.5, EDGES.size).astype(dtype)))
    return y.detach().numpy(), x.grad.numpy()


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,kw", ACTIVATIONS, ids=[f"{n}{'-' + str(k) if k else ''}" for n, k in ACTIVATIONS])
def test_activation_values_and_gradients_at_the_edges_match_pytorch(name, kw, dtype):
    (ye, ge), (yt, gt) = _activation(eager, name, kw, dtype), _activation(torch, name, kw, dtype)
    assert ye.dtype == yt.dtype
    tol = dict(rtol=1e-12, atol=1e-14) if dtype == "float64" else dict(rtol=2e-6, atol=1e-6)
    np.testing.assert_allclose(ye, yt, **tol)
    # (PyTorch's hardsigmoid gradient is 1/6 rounded to float32 even in float64)
    np.testing.assert_allclose(ge, gt, **(dict(rtol=1e-7, atol=1e-14) if name == "hardsigmoid" and dtype == "float64" else tol))


@pytest.mark.parametrize("name", ["ELU", "CELU", "SELU", "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish"])
def test_activation_modules_follow_the_same_convention(name):
    def grad(lib):
        x = lib.tensor(EDGES, requires_grad=True)
        getattr(lib.nn, name)()(x).sum().backward()
        return x.grad.numpy()

    np.testing.assert_allclose(grad(eager), grad(torch), rtol=1e-7, atol=1e-14)


def test_elu_family_gradient_at_zero_is_the_negative_branch():
    x = eager.tensor([0.0], dtype=eager.float64, requires_grad=True)
    eager.nn.functional.elu(x, alpha=0.5).sum().backward()
    assert x.grad.item() == 0.5  # alpha (a split between the branches would give 0.75)


P = np.array([0.0, 1.0, 0.0, 1.0, 0.5, 1e-30, 1 - 1e-16, 0.3])
T = np.array([1.0, 0.0, 0.0, 1.0, 0.5, 1.0, 0.0, 0.7])
_rng = np.random.default_rng(0)
LOGITS = _rng.standard_normal((3, 4))
MEAN, TARGET = _rng.standard_normal(5), _rng.standard_normal(5)
VAR = np.array([1e-8, 0.0, 1e-6, 0.5, 2.0])
RATES = np.array([0.0, 0.5, 1.0, 1.5, 3.0, 10.0])

# (functional, [arrays], indices that require grad, kwargs); integer arrays are class targets
LOSSES = [
    ("binary_cross_entropy", [P, T], [0, 1], dict(reduction="none")),
    ("binary_cross_entropy", [P, T], [0, 1], {}),
    ("binary_cross_entropy", [P, T, np.linspace(0.5, 2, P.size)], [0], dict(reduction="sum")),
    ("cross_entropy", [LOGITS, np.array([-100, -100, -100])], [0], {}),
    ("cross_entropy", [LOGITS, np.array([-100, -100, -100])], [0], dict(reduction="sum")),
    ("cross_entropy", [LOGITS, np.array([-100, -100, -100])], [0], dict(label_smoothing=0.1)),
    ("cross_entropy", [LOGITS, np.array([1, 1, 1])], [0], dict(ignore_index=1)),
    ("cross_entropy", [LOGITS, np.array([1, -100, 2])], [0], {}),
    ("cross_entropy", [LOGITS, np.array([1, 1, 1])], [0], dict(ignore_index=1, weight=np.array([1., 2, 3, 4]))),
    ("nll_loss", [LOGITS, np.array([-100, -100, -100])], [0], {}),
    ("gaussian_nll_loss", [MEAN, TARGET, VAR], [0, 1, 2], {}),
    ("gaussian_nll_loss", [MEAN, TARGET, VAR], [0, 2], dict(full=True, reduction="none")),
    ("gaussian_nll_loss", [MEAN, TARGET, VAR], [2], dict(eps=1e-3, reduction="sum")),
    ("poisson_nll_loss", [MEAN.repeat(2)[:6], RATES], [0], dict(full=True, reduction="none")),
    ("poisson_nll_loss", [np.abs(MEAN.repeat(2)[:6]), RATES], [0], dict(full=True, log_input=False)),
    ("poisson_nll_loss", [np.array([0.0, 1.0, 2.0]), np.array([0.0, 2.0, 3.0])], [0], dict(log_input=False)),
]


def _loss(lib, name, arrays, grads, kw, dtype):
    ts = []
    for i, a in enumerate(arrays):
        a = a if a.dtype.kind == "i" else a.astype(dtype)
        ts.append(lib.tensor(a, requires_grad=i in grads))
    if "weight" in kw:
        kw = dict(kw, weight=lib.tensor(kw["weight"].astype(dtype)))
    y = getattr(lib.nn.functional, name)(*ts, **kw)
    y.sum().backward()
    return [y.detach().numpy()] + [ts[i].grad.numpy() for i in grads]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("case", range(len(LOSSES)), ids=[f"{c[0]}-{c[3]}" for c in LOSSES])
def test_loss_values_and_gradients_at_the_edges_match_pytorch(case, dtype):
    name, arrays, grads, kw = LOSSES[case]
    e, t = _loss(eager, name, arrays, grads, kw, dtype), _loss(torch, name, arrays, grads, kw, dtype)
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == "float64" else dict(rtol=2e-5, atol=1e-5)
    for a, b in zip(e, t):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, equal_nan=True, **tol)


def test_bce_edges_are_finite_where_pytorch_is_finite():
    p = eager.tensor([0.0, 1.0], dtype=eager.float64, requires_grad=True)
    loss = eager.nn.functional.binary_cross_entropy(p, eager.tensor([1.0, 0.0], dtype=eager.float64))
    loss.backward()
    assert loss.item() == 100.0
    assert np.isfinite(p.grad.numpy()).all()


def test_cross_entropy_all_ignored_is_nan_with_a_zero_gradient():
    x = eager.tensor(LOGITS, requires_grad=True)
    loss = eager.nn.functional.cross_entropy(x, eager.tensor([-100, -100, -100]))
    loss.backward()
    assert np.isnan(loss.item())
    assert (x.grad.numpy() == 0).all()


def test_gaussian_nll_loss_checks_like_pytorch():
    F = eager.nn.functional
    x = eager.zeros(4, 3)
    with pytest.raises(ValueError, match="var has negative"):
        F.gaussian_nll_loss(x, x, -eager.ones(4, 3))
    with pytest.raises(ValueError, match="incorrect size"):
        F.gaussian_nll_loss(x, x, eager.ones(2, 3))
    # var with one dimension fewer is broadcast over the last dimension, as PyTorch
    v = np.array([0.5, 1.0, 2.0, 3.0])
    xe, xt = np.arange(12.0).reshape(4, 3) / 7, np.ones((4, 3))
    e = F.gaussian_nll_loss(eager.tensor(xe), eager.tensor(xt), eager.tensor(v)).item()
    t = torch.nn.functional.gaussian_nll_loss(torch.tensor(xe), torch.tensor(xt), torch.tensor(v)).item()
    assert e == pytest.approx(t, rel=1e-12)


@pytest.mark.parametrize("weight", [[0.25], [0.1, -0.3, 0.5]])
def test_prelu_gradient_at_zero_is_the_weight_like_pytorch(weight):
    out = []
    for lib in (eager, torch):
        x = lib.tensor(np.array([[0.0, -1.0, 2.0], [1.0, 0.0, -0.5]]).reshape(2, 3), requires_grad=True)
        w = lib.tensor(weight, dtype=lib.float64, requires_grad=True)
        lib.nn.functional.prelu(x, w).sum().backward()
        out.append((x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12)


def test_pdist_of_equal_rows_has_a_zero_gradient_like_pytorch():
    out = []
    for lib in (eager, torch):
        x = lib.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]], dtype=lib.float64, requires_grad=True)
        y = lib.nn.functional.pdist(x)
        y.sum().backward()
        out.append((y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12)
