"""The pointwise ops added as one record each (frac, erfc, positive, heaviside, float_power,
ldexp, nextafter, i0, special.i1) and the torch.special names built on them: values against
PyTorch over dtypes and broadcasting, gradients against finite differences, compiled code
(NumPy and native backends) against eager, the in-place and out= forms, and PyTorch's errors."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

torch = pytest.importorskip("torch")

FLOATS = [("float32", 1e-6), ("float64", 1e-12)]


def _pair(arr, dtype):
    return eager.tensor(arr.astype(dtype)), torch.tensor(arr.astype(dtype))


def _close(ours, theirs, rtol):
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=rtol, atol=rtol, equal_nan=True)


UNARY = {
    "frac": lambda rng: rng.uniform(-5, 5, (3, 4)),
    "erfc": lambda rng: rng.uniform(-4, 9, (3, 4)),
    "i0": lambda rng: rng.uniform(-12, 12, (3, 4)),
    "positive": lambda rng: rng.standard_normal((3, 4)),
}


@pytest.mark.parametrize("dtype,rtol", FLOATS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_values_match_pytorch(name, dtype, rtol):
    arr = UNARY[name](np.random.default_rng(0))
    arr[0, :3] = [0.0, np.inf, np.nan] if name != "i0" else [0.0, -0.0, np.nan]
    ours, theirs = _pair(arr, dtype)
    _close(getattr(eager, name)(ours), getattr(torch, name)(theirs), rtol)
    _close(getattr(ours, name)(), getattr(theirs, name)(), rtol)


def test_special_values_match_pytorch():
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.uniform(-30, 30, 40), [0.0, -0.0, 1e-300, np.nan]])
    a, t = _pair(x, "float64")
    for name in ("erfc", "i0", "i1", "i0e", "i1e", "sinc", "entr", "spherical_bessel_j0", "modified_bessel_i0",
                 "modified_bessel_i1"):
        _close(getattr(eager.special, name)(a), getattr(torch.special, name)(t), 1e-13)
    y = np.abs(x[:20]) - 0.5
    (b, tb) = _pair(np.concatenate([[0.0, 0.0], x[2:20]]), "float64")
    c, tc = _pair(np.concatenate([[np.nan, -1.0], y[2:]]), "float64")
    _close(eager.special.xlog1py(b, c), torch.special.xlog1py(tb, tc), 1e-13)
    # ndtr is 0.5 erfc(-x / sqrt 2): where PyTorch's 0.5 (1 + erf) is exact, the same values
    z, tz = _pair(rng.uniform(-8, 8, 30), "float64")
    _close(eager.special.ndtr(z), torch.special.ndtr(tz), 1e-12)
    assert eager.special.ndtr(eager.tensor([-30.0], dtype=eager.float64)).item() == pytest.approx(4.906713927148187e-198)


@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-6), ("float64", 1e-12)])
def test_log_ndtr_matches_pytorch_into_the_far_tail(dtype, rtol):
    """log_ndtr where ndtr underflows (float32 below -13, float64 below -38) and near 0 on the right."""
    x = np.concatenate([np.linspace(-60, 40, 501), [-20.0, -10.0, -5.0, 0.0, np.inf, -np.inf, np.nan]])
    a, t = _pair(x, dtype)
    ours, theirs = eager.special.log_ndtr(a).numpy(), torch.special.log_ndtr(t).numpy()
    assert np.isfinite(ours[:501]).all()
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=0, equal_nan=True)
    xg = eager.tensor([-30.0, -21.0, -19.0, -3.0, 0.5, 4.0], dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(eager.special.log_ndtr, (xg,))
    _close(eager.special.round(eager.tensor([0.5, 1.5, -2.5])), torch.special.round(torch.tensor([0.5, 1.5, -2.5])), 0)


@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-6), ("float64", 2e-14)])
def test_erfcx_matches_pytorch_where_erfc_underflows(dtype, rtol):
    x = np.concatenate([np.linspace(-26, 60, 431), [1e10, np.inf, np.nan, 0.0]])
    a, t = _pair(x, dtype)
    np.testing.assert_allclose(eager.special.erfcx(a).numpy(), torch.special.erfcx(t).numpy(), rtol=rtol, atol=0,
                               equal_nan=True)
    xg = eager.tensor([-3.0, -0.5, 0.7, 9.9, 10.1, 40.0], dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(eager.special.erfcx, (xg,))


def test_multigammaln_matches_pytorch():
    a = np.array([2.5, 3.0, 7.25])
    for p in (1, 2, 4):
        _close(eager.special.multigammaln(eager.tensor(a), p), torch.special.multigammaln(torch.tensor(a), p), 1e-12)
    ag = eager.tensor(a, requires_grad=True)
    assert eager.autograd.gradcheck(lambda v: eager.special.multigammaln(v, 3), (ag,))
    with pytest.raises(ValueError, match="multigammaln"):
        eager.special.multigammaln(eager.tensor(a), 0)


POLYNOMIALS = ["chebyshev_polynomial_t", "chebyshev_polynomial_u", "hermite_polynomial_h", "hermite_polynomial_he",
               "laguerre_polynomial_l", "legendre_polynomial_p"]


@pytest.mark.parametrize("dtype,rtol", [("float32", 1e-4), ("float64", 1e-12)])
@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomials_match_pytorch(name, dtype, rtol):
    rng = np.random.default_rng(8)
    x = np.concatenate([rng.uniform(-2, 2, 60), [1.0, -1.0, 0.0, 0.5, -0.5, 0.25]]).astype(dtype)
    n = np.concatenate([rng.integers(-2, 15, 60), [7, 9, 3, 12, 10, 0]])
    ours = getattr(eager.special, name)(eager.tensor(x), eager.tensor(n))
    theirs = getattr(torch.special, name)(torch.tensor(x), torch.tensor(n))
    assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol, atol=rtol)
    _close(getattr(eager.special, name)(eager.tensor(x[:4]), 2.7), getattr(torch.special, name)(torch.tensor(x[:4]), 2.7),
           rtol)  # a number as n, truncated


def test_integer_inputs_follow_pytorch():
    ints = np.array([[-3, 0, 2]])
    a, t = eager.tensor(ints), torch.tensor(ints)
    for name in ("erfc", "i0"):  # promoted to the default float dtype
        _close(getattr(eager, name)(a), getattr(torch, name)(t), 1e-6)
    _close(eager.positive(a), torch.positive(t), 0)
    _close(eager.heaviside(a, eager.tensor([7])), torch.heaviside(t, torch.tensor([7])), 0)
    _close(eager.float_power(a, 2), torch.float_power(t, 2), 0)
    _close(eager.ldexp(a, eager.tensor([1])), torch.ldexp(t, torch.tensor([1])), 0)
    with pytest.raises(NotImplementedError, match="frac"):
        eager.frac(a)
    with pytest.raises(NotImplementedError, match="nextafter"):
        eager.nextafter(a, a)
    with pytest.raises(RuntimeError, match="bool"):
        eager.positive(eager.tensor([True]))


BINARY = {
    "heaviside": (lambda rng: rng.choice([-1.0, 0.0, 2.0, np.nan], (3, 4)), lambda rng: rng.uniform(0, 1, (4,))),
    "float_power": (lambda rng: rng.uniform(0.1, 3, (3, 4)), lambda rng: rng.uniform(-2, 2, (3, 1))),
    "ldexp": (lambda rng: rng.standard_normal((2, 3, 4)), lambda rng: rng.integers(-5, 6, (4,)).astype(np.float64)),
    "nextafter": (lambda rng: rng.standard_normal((3, 4)), lambda rng: rng.standard_normal((1, 4)) * 3),
}


@pytest.mark.parametrize("dtype,rtol", FLOATS)
@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_values_match_pytorch_with_broadcasting(name, dtype, rtol):
    rng = np.random.default_rng(2)
    make_a, make_b = BINARY[name]
    (a, ta), (b, tb) = _pair(make_a(rng), dtype), _pair(make_b(rng), dtype)
    _close(getattr(eager, name)(a, b), getattr(torch, name)(ta, tb), 0 if name == "nextafter" else rtol)
    _close(getattr(a, name)(b), getattr(ta, name)(tb), 0 if name == "nextafter" else rtol)


def test_mixed_dtypes_follow_pytorch():
    a32, b64 = eager.tensor([1.5, 2.0]), eager.tensor([2.0, -1.0], dtype=eager.float64)
    t32, t64 = torch.tensor([1.5, 2.0]), torch.tensor([2.0, -1.0], dtype=torch.float64)
    _close(eager.float_power(a32, a32), torch.float_power(t32, t32), 1e-12)  # float64 result
    _close(eager.float_power(2, a32), torch.float_power(2, t32), 1e-12)
    _close(eager.nextafter(a32, b64), torch.nextafter(t32, t64), 0)
    _close(eager.ldexp(a32.half(), eager.tensor([3, 4])), torch.ldexp(t32.half(), torch.tensor([3, 4])), 1e-3)
    with pytest.raises(RuntimeError, match="different dtypes"):
        eager.heaviside(a32, b64)
    for fn in (eager.heaviside, eager.ldexp, eager.nextafter):
        with pytest.raises(TypeError, match="must be Tensor"):
            fn(a32, 0.5)


@pytest.mark.parametrize("name", ["frac", "erfc", "i0", "positive"])
def test_unary_gradients(name):
    x = eager.tensor(np.random.default_rng(3).uniform(-2.9, 2.9, (5,)) + 0.03, dtype=eager.float64,
                     requires_grad=True)
    assert eager.autograd.gradcheck(getattr(eager, name), (x,))
    if name in ("erfc", "i0"):
        assert eager.autograd.gradgradcheck(getattr(eager, name), (x,))
    y = getattr(eager, name)(x)
    tx = torch.tensor(x.detach().numpy(), requires_grad=True)
    ty = getattr(torch, name)(tx)
    g = np.random.default_rng(4).standard_normal(5)
    y.backward(eager.tensor(g))
    ty.backward(torch.tensor(g))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)


def test_special_gradients():
    rng = np.random.default_rng(5)
    x = eager.tensor(rng.uniform(-3, 3, (5,)), dtype=eager.float64, requires_grad=True)
    for fn in (eager.special.i1, eager.special.i0e, eager.special.i1e, eager.special.spherical_bessel_j0):
        assert eager.autograd.gradcheck(fn, (x,))
        assert eager.autograd.gradgradcheck(fn, (x,))
    big = eager.tensor([-800.0, 750.0], dtype=eager.float64)  # I overflows there, the scaled forms do not
    _close(eager.special.i0e(big), torch.special.i0e(torch.tensor(big.numpy())), 1e-14)
    _close(eager.special.i1e(big), torch.special.i1e(torch.tensor(big.numpy())), 1e-14)
    assert eager.autograd.gradcheck(eager.special.ndtr, (x,))
    p = eager.tensor(rng.uniform(0.1, 2, (5,)), dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(eager.special.entr, (p,))
    assert eager.autograd.gradcheck(eager.special.xlog1py, (x, p))
    zero = eager.tensor([0.0], dtype=eager.float64, requires_grad=True)
    eager.special.i1(zero).backward()
    assert zero.grad.item() == 0.5  # I1'(0) = 1/2, the limit of I0(x) - I1(x)/x


def test_binary_gradients():
    rng = np.random.default_rng(6)
    a = eager.tensor(rng.uniform(0.5, 2, (3, 4)), dtype=eager.float64, requires_grad=True)
    b = eager.tensor(rng.uniform(-1, 1, (4,)), dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(eager.float_power, (a, b))
    assert eager.autograd.gradcheck(eager.ldexp, (a, b))
    # float32 operands: the gradient is computed in float64 and cast back, as PyTorch's
    a32 = eager.tensor(rng.uniform(0.5, 2, (4,)).astype(np.float32), requires_grad=True)
    ta = torch.tensor(a32.detach().numpy(), requires_grad=True)
    y, ty = eager.float_power(a32, 2.5), torch.float_power(ta, 2.5)
    assert type(y.grad_fn).__name__ == type(ty.grad_fn).__name__ == "PowBackward0"
    y.sum().backward()
    ty.sum().backward()
    assert a32.grad.dtype == eager.float32
    np.testing.assert_allclose(a32.grad.numpy(), ta.grad.numpy(), rtol=1e-6)
    # nextafter: PyTorch passes the gradient to input and gives other zero
    x, o = (eager.tensor([1.0, 2.0], requires_grad=True) for _ in range(2))
    eager.nextafter(x, o).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0] and o.grad.tolist() == [0.0, 0.0]


def test_heaviside_has_no_derivative_like_pytorch():
    x = eager.tensor([-1.0, 0.0, 2.0], requires_grad=True)
    y = eager.heaviside(x, eager.tensor([0.5]))
    assert y.requires_grad
    with pytest.raises(RuntimeError, match="heaviside"):
        y.sum().backward()
    with pytest.raises(RuntimeError, match="heaviside"):  # what PyTorch raises too
        torch.heaviside(torch.tensor([1.0], requires_grad=True), torch.tensor([0.5])).sum().backward()


def test_positive_is_input_itself():
    x = eager.tensor([1.0, 2.0])
    eager.positive(x).add_(1.0)  # PyTorch returns input itself: the write reaches it
    assert x.tolist() == [2.0, 3.0]
    assert not hasattr(eager.Tensor, "positive_") and not hasattr(torch.Tensor, "positive_")


@pytest.mark.parametrize("name,other", [("frac", None), ("erfc", None), ("i0", None), ("heaviside", [0.5]),
                                        ("ldexp", [2.0]), ("nextafter", [5.0]), ("float_power", [2.0])])
def test_inplace_and_out_forms(name, other):
    dtype = eager.float64 if name == "float_power" else eager.float32
    tdtype = getattr(torch, str(dtype).split(".")[-1])
    vals = [-1.25, 0.0, 2.5]
    ours, theirs = eager.tensor(vals, dtype=dtype), torch.tensor(vals, dtype=tdtype)
    args = () if other is None else (eager.tensor(other, dtype=dtype),)
    targs = () if other is None else (torch.tensor(other, dtype=tdtype),)
    expected = getattr(torch, name)(theirs, *targs)
    out = eager.empty(3, dtype=dtype)
    result = getattr(eager, name)(ours, *args, out=out)
    assert result is out
    _close(out, expected, 1e-6)
    same = getattr(ours, name + "_")(*args)
    assert same is ours
    _close(ours, expected, 1e-6)


def test_float_power_writes_only_into_float64():
    x, tx = eager.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0])
    with pytest.raises(RuntimeError, match="requires dtype Double"):
        x.float_power_(2)
    with pytest.raises(RuntimeError, match="requires dtype Double"):
        tx.float_power_(2)
    with pytest.raises(RuntimeError, match="requires dtype Double"):
        eager.float_power(x, 2, out=eager.empty(2))
    assert x.tolist() == [1.0, 2.0]


def _all_new_ops(x, y, n):
    a = eager.frac(x * 3.0) + eager.erfc(x) + eager.i0(x) + eager.positive(x)
    b = eager.heaviside(x, y) + eager.ldexp(x, n) + eager.nextafter(x, y)
    return a * b + eager.float_power(x.abs() + 0.5, y).float() + eager.special.i1(x)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_compiled_equals_eager(backend):
    rng = np.random.default_rng(7)
    x = eager.tensor(rng.uniform(-2, 2, (4, 8)).astype(np.float32))
    y = eager.tensor(rng.uniform(-1, 1, (8,)).astype(np.float32))
    n = eager.tensor(rng.integers(-3, 4, (4, 1)).astype(np.float32))
    x[0, 0] = 0.0
    f = static.compile(_all_new_ops, backend=backend)
    np.testing.assert_allclose(f(x, y, n).numpy(), _all_new_ops(x, y, n).numpy(), rtol=2e-6, atol=1e-6)
