"""`inplace=True` of nn.functional's activations (and their modules, and the `_` forms) writes
into the input as PyTorch's does: the result is the input, its version bumps, its history is
PyTorch's in-place node, a leaf requiring grad is refused, gradients equal the out-of-place
form's; static.compile of a function using them equals eager, aliasing included."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn as nn
import eager.nn.functional as F
import static

CASES = [
    ("leaky_relu", {"negative_slope": 0.2}, "LeakyReluBackward1"),
    ("elu", {"alpha": 0.7}, "EluBackward1"),
    ("selu", {}, "EluBackward1"),
    ("celu", {"alpha": 1.5}, "CeluBackward1"),
    ("hardtanh", {"min_val": -0.5, "max_val": 0.8}, "HardtanhBackward0"),
    ("relu6", {}, "HardtanhBackward0"),
    ("silu", {}, "SiluBackward0"),
    ("mish", {}, "MishBackward0"),
    ("hardsigmoid", {}, "HardsigmoidBackward0"),
    ("hardswish", {}, "HardswishBackward0"),
    ("rrelu", {}, "RreluWithNoiseBackward1"),
    ("relu", {}, "ReluBackward0"),
    ("threshold", {"threshold": 0.1, "value": 2.0}, "ThresholdBackward1"),
]
X = np.array([-4.0, -3.0, -1.2, -0.3, 0.0, 0.05, 0.4, 1.1, 3.0, 7.5])


@pytest.mark.parametrize("name,kw,node", CASES, ids=[c[0] for c in CASES])
def test_inplace_writes_into_input(name, kw, node):
    fn = getattr(F, name)
    expected = fn(eager.tensor(X), **kw).numpy()
    x = eager.tensor(X)
    v = x._version
    y = fn(x, inplace=True, **kw)
    assert y is x and x._version == v + 1
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)

    a = eager.tensor(X, requires_grad=True)
    h = a * 1
    out = fn(h, inplace=True, **kw)
    assert out is h and type(h.grad_fn).__name__ == node
    g = np.linspace(-1, 1, X.size)
    out.backward(eager.tensor(g))
    b = eager.tensor(X, requires_grad=True)
    fn(b * 1, **kw).backward(eager.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6)

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        fn(eager.tensor(X, requires_grad=True), inplace=True, **kw)


@pytest.mark.parametrize("name,kw,node", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name, kw, node):
    torch = pytest.importorskip("torch")
    g = np.linspace(-1, 1, X.size)
    ta = torch.tensor(X, requires_grad=True)
    th = ta * 1
    tout = getattr(torch.nn.functional, name)(th, inplace=True, **kw)
    tout.backward(torch.tensor(g))
    a = eager.tensor(X, requires_grad=True)
    h = a * 1
    out = getattr(F, name)(h, inplace=True, **kw)
    out.backward(eager.tensor(g))
    assert type(out.grad_fn).__name__ == type(tout.grad_fn).__name__
    np.testing.assert_allclose(h.detach().numpy(), th.detach().numpy(), rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-6, atol=1e-12)


def test_gradcheck_inplace_forms():
    from eager.autograd import gradcheck

    x = eager.tensor(np.array([-1.3, -0.4, 0.35, 0.9, 2.2]), requires_grad=True)
    for name, kw, _ in CASES:
        if name == "rrelu":
            kw = {"training": False}
        assert gradcheck(lambda t, n=name, k=kw: getattr(F, n)(t * 1, inplace=True, **k), (x,)), name


def test_underscore_forms_and_top_level():
    for name in ["relu_", "selu_", "celu_", "rrelu_", "threshold_", "elu_", "leaky_relu_", "hardtanh_"]:
        f = getattr(F, name)
        args = (0.1, 2.0) if name == "threshold_" else ()
        x = eager.tensor(X)
        expected = getattr(F, name[:-1])(eager.tensor(X), *args).numpy()
        assert f(x, *args) is x
        np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)
    for name in ["relu_", "selu_", "celu_", "rrelu_", "threshold_", "selu", "celu", "threshold"]:
        assert callable(getattr(eager, name)), name
    x = eager.tensor(X)
    assert eager.selu_(x) is x


@pytest.mark.parametrize("module", [
    lambda: nn.LeakyReLU(0.2, inplace=True), lambda: nn.ELU(inplace=True), lambda: nn.SELU(inplace=True),
    lambda: nn.CELU(inplace=True), lambda: nn.Hardtanh(inplace=True), lambda: nn.ReLU6(inplace=True),
    lambda: nn.SiLU(inplace=True), lambda: nn.Mish(inplace=True), lambda: nn.Hardsigmoid(inplace=True),
    lambda: nn.Hardswish(inplace=True), lambda: nn.RReLU(inplace=True).eval(),
])
def test_modules_inplace(module):
    m = module()
    x = eager.tensor(X)
    expected = m(eager.tensor(X)).numpy()
    assert m(x) is x
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("name,kw", [(c[0], c[1]) for c in CASES if c[0] != "rrelu"], ids=[c[0] for c in CASES
                                                                                           if c[0] != "rrelu"])
def test_compiled_equals_eager(name, kw):
    fn = getattr(F, name)

    def f(x):
        h = x * 2.0
        y = fn(h, inplace=True, **kw)
        return h + 1.0, y * 3.0, x

    x = eager.tensor(X)
    expected = f(eager.tensor(X))
    got = static.compile(f)(x)
    for e, r in zip(expected, got):
        np.testing.assert_allclose(r.numpy(), e.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.numpy(), X)  # the input itself untouched: the write was into h


def test_compiled_writes_into_argument():
    def f(x):
        y = F.leaky_relu(x, 0.2, inplace=True)
        return y * 2

    g = static.compile(f)
    for _ in range(2):
        a, b = eager.tensor(X), eager.tensor(X)
        np.testing.assert_allclose(g(b).numpy(), f(a).numpy())
        np.testing.assert_allclose(b.numpy(), a.numpy())
        assert not np.allclose(b.numpy(), X)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("n", [1, 7, 1000, 100_003])
def test_relu_keeps_negative_zero(dtype, n):
    """PyTorch's relu keeps x unless x < 0: relu(-0.0) is -0.0 (NumPy's maximum(x, 0) gave 0.0
    on some dtypes and hosts); vector bodies and tails alike."""
    x = eager.tensor(np.full(n, -0.0), dtype=getattr(eager, dtype))
    for out in (eager.relu(x), F.relu(x), nn.ReLU()(x), x.clone().relu_()):
        assert np.signbit(out.numpy()).all()
    y = eager.relu(eager.tensor([0.0, -1.0, 2.0, float("nan")], dtype=getattr(eager, dtype))).numpy()
    assert not np.signbit(y[:2]).any() and y[2] == 2.0 and np.isnan(y[3])



@pytest.mark.parametrize("form", [0, 1, 2])
def test_relu_forms(form, monkeypatch):
    """Each of relu's three NumPy forms (picked per dtype by a probe of the host's maximum)
    gives relu's values; the one picked here keeps -0.0 (checked above)."""
    from gmops import unary as U

    monkeypatch.setitem(U._RELU_FORM, np.dtype(np.float64), form)
    x = np.array([-0.0, 0.0, -1.5, np.nan, 2.0, -np.inf, np.inf])
    out = eager.relu(eager.tensor(x)).numpy()
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.0, np.nan, 2.0, 0.0, np.inf])
    assert out.dtype == np.float64
    if form != 1:  # (form 1, maximum(x, 0), is chosen only where the probe shows it keeps -0.0)
        assert np.signbit(out[0])


def test_compiled_module_with_inplace_activations_trains_as_eager():
    """A GAN-style block (Linear, LeakyReLU(inplace=True), ...): compiled forward and gradients
    equal eager's."""
    eager.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 3), nn.LeakyReLU(0.2, inplace=True), nn.Linear(3, 2), nn.ELU(inplace=True))
    x = eager.randn(5, 4)
    ye = m(x)
    ye.sum().backward()
    ge = [p.grad.numpy().copy() for p in m.parameters()]
    m.zero_grad()
    yc = static.compile(m)(x)
    yc.sum().backward()
    np.testing.assert_allclose(yc.detach().numpy(), ye.detach().numpy(), rtol=1e-6)
    for p, g in zip(m.parameters(), ge):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-5, atol=1e-7)
