"""The fused LSTM cell's native gate passes (gmnative/cell_kernels.py) against the cell's
NumPy code (where no compiler is found or GRAPHMODE_EAGER_NATIVE=0) and PyTorch: the same
states and gradients to rounding, float32 and float64, with and without biases; a cell state
that is not C-contiguous takes the NumPy code; finite differences through the native path."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.nn import _fused_cells
from gmnative import build as native_build

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")


def _inputs(dtype, bias: bool, seed: int = 0, c_data=None):
    rng = np.random.default_rng(seed)
    b, i, k = 5, 3, 4

    def t(*shape):
        return eager.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=True)

    x, h = t(b, i), t(b, k)
    c = t(b, k) if c_data is None else c_data
    w_ih, w_hh = t(4 * k, i), t(4 * k, k)
    b_ih, b_hh = (t(4 * k), t(4 * k)) if bias else (None, None)
    return x, h, c, w_ih, w_hh, b_ih, b_hh


def _run(args, grads):
    h2, c2 = _fused_cells.LSTMCellFunction.apply(*args)
    wrt = [a for a in args if a is not None]
    got = eager.autograd.grad((h2, c2), wrt, [eager.tensor(g) for g in grads])
    return [h2.detach().numpy(), c2.detach().numpy()] + [g.numpy() for g in got], h2.grad_fn


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_native_lstm_gates_equal_the_numpy_cell_and_pytorch(monkeypatch, dtype, bias):
    args = _inputs(dtype, bias)
    rng = np.random.default_rng(1)
    grads = [rng.standard_normal((5, 4)).astype(dtype) for _ in range(2)]
    got, node = _run(args, grads)
    assert node.gates is None and node.native_gates is not None, "the native pass did not run"
    with monkeypatch.context() as m:
        m.setattr(_fused_cells, "_native_cells", False)
        want, plain = _run(args, grads)
    assert plain.gates is not None
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype == dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, **tol)
    torch = pytest.importorskip("torch")
    x, h, c, w_ih, w_hh, b_ih, b_hh = (None if a is None else torch.tensor(a.detach().numpy(), requires_grad=True)
                                       for a in args)
    cell = torch.nn.LSTMCell(3, 4, bias=bias).to(torch.float64 if dtype == np.float64 else torch.float32)
    with torch.no_grad():
        cell.weight_ih.copy_(w_ih)
        cell.weight_hh.copy_(w_hh)
        if bias:
            cell.bias_ih.copy_(b_ih)
            cell.bias_hh.copy_(b_hh)
    th, tc = cell(x, (h, c))
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(got[0], th.detach().numpy(), **tol)
    np.testing.assert_allclose(got[1], tc.detach().numpy(), **tol)
    tx, th_, tc_, *tw = torch.autograd.grad((th, tc), [x, h, c, cell.weight_ih, cell.weight_hh]
                                            + ([cell.bias_ih, cell.bias_hh] if bias else []),
                                            [torch.tensor(g) for g in grads])
    for a, b in zip(got[2:], [tx, th_, tc_, *tw]):
        np.testing.assert_allclose(a, b.numpy(), **tol)


def test_a_non_contiguous_cell_state_takes_the_numpy_gates():
    wide = eager.tensor(np.random.default_rng(2).standard_normal((5, 8)), requires_grad=True)
    args = _inputs(np.float64, True, c_data=wide[:, ::2])
    got, node = _run(args, [np.ones((5, 4)), np.ones((5, 4))])
    assert node.gates is not None
    assert all(np.isfinite(g).all() for g in got)


@pytest.mark.parametrize("bias", [True, False])
def test_native_lstm_cell_gradients_match_finite_differences(bias):
    args = _inputs(np.float64, bias, seed=4)
    assert _fused_cells.eligible(*args)
    fixed = args[5:]

    def fn(*a):
        return _fused_cells.LSTMCellFunction.apply(*a[:5], *(a[5:] if bias else fixed))

    assert eager.autograd.gradcheck(fn, args[:5] + (args[5:] if bias else ()))
