"""softmax, log_softmax and logsumexp on rows holding +inf, -inf or NaN give PyTorch's values
(log_softmax: NaN throughout a row whose maximum is +inf or NaN, or that is all -inf), with
no floating-point warnings, in eager and in compiled code alike (the compiled graph is the
op record's forward decomposed, so both modes follow the one formula)."""
import warnings

import numpy as np
import pytest

import eager
import static

torch = pytest.importorskip("torch")

INF, NAN = float("inf"), float("nan")
ROWS = [[1.0, 2.0, 3.0], [INF, 1.0, 2.0], [INF, INF, 1.0], [-INF, -INF, -INF], [-INF, 1.0, 2.0],
        [INF, -INF, 0.0], [NAN, 1.0, 2.0], [-INF, INF, -INF], [INF, INF, INF], [-INF, 0.5, -INF]]
X = np.array(ROWS, dtype=np.float32)


def _same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    finite = np.isfinite(want)
    assert np.array_equal(np.isinf(got) & (got > 0), np.isinf(want) & (want > 0))
    assert np.array_equal(np.isinf(got) & (got < 0), np.isinf(want) & (want < 0))
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("dim", [1, 0])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_eager_and_compiled_give_pytorchs_values(name, dim):
    x = X if dim == 1 else np.ascontiguousarray(X.T)
    want = getattr(torch, name)(torch.tensor(x), dim=dim).numpy()

    def fn(t):
        return getattr(eager, name)(t, dim=dim)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = fn(eager.tensor(x)).numpy()
    _same(got, want)
    for backend in ("native", "numpy"):
        try:
            compiled = static.compile(fn, backend=backend)(eager.tensor(x)).numpy()
        except static.BackendError:
            continue  # (no C++ compiler here)
        _same(compiled, want)
        np.testing.assert_array_equal(np.isnan(compiled), np.isnan(got))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
def test_gradients_on_nonfinite_rows_are_pytorchs(name):
    def grad(lib):
        t = lib.tensor(X, requires_grad=True)
        getattr(lib, name)(t, 1).sum().backward()
        return t.grad.numpy()

    _same(grad(eager), grad(torch))


def test_float64_and_functional_forms():
    x = np.array([[INF, 1.0], [-INF, -INF], [2.0, 3.0]])
    for name in ("softmax", "log_softmax"):
        want = getattr(torch.nn.functional, name)(torch.tensor(x), dim=-1).numpy()
        got = getattr(eager.nn.functional, name)(eager.tensor(x), dim=-1)
        assert got.dtype == eager.float64
        _same(got.numpy(), want)
