"""The fused GRU cell's native gate passes (gmnative/cell_kernels.py) against the cell's NumPy
code (the path where no compiler is found or GRAPHMODE_EAGER_NATIVE=0): the same new state
and gradients to rounding, in float32 and float64, with and without biases; a state that is
not C-contiguous takes the NumPy code; finite differences through the native path."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.nn import _fused_cells
from gmnative import build as native_build
from gmnative import cell_kernels

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")


def _cell(dtype, bias: bool, seed: int = 0):
    rng = np.random.default_rng(seed)
    b, i, k = 5, 3, 4

    def t(*shape, grad=True):
        return eager.tensor(rng.standard_normal(shape).astype(dtype), requires_grad=grad)

    x, h = t(b, i), t(b, k)
    w_ih, w_hh = t(3 * k, i), t(3 * k, k)
    b_ih, b_hh = (t(3 * k), t(3 * k)) if bias else (None, None)
    return x, h, w_ih, w_hh, b_ih, b_hh


def _run(args, g):
    out = _fused_cells.node_apply(_fused_cells.GRUCellFunction, *args)
    wrt = [a for a in args if a is not None]
    grads = eager.autograd.grad(out, wrt, eager.tensor(g))
    return out.detach().numpy(), [gr.numpy() for gr in grads], out.grad_fn


def _numpy_run(monkeypatch, args, g):
    with monkeypatch.context() as m:
        m.setattr(_fused_cells, "_native_cells", False)
        assert _fused_cells._cell_kernels() is None
        return _run(args, g)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_native_gates_equal_the_numpy_cell(monkeypatch, dtype, bias):
    args = _cell(dtype, bias)
    g = np.random.default_rng(1).standard_normal((5, 4)).astype(dtype)
    out, grads, node = _run(args, g)
    assert getattr(node, "native_gates", None) is not None, "the native pass did not run"
    want_out, want_grads, want_node = _numpy_run(monkeypatch, args, g)
    assert want_node.gates is not None
    tol = dict(rtol=2e-6, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out, want_out, **tol)
    assert out.dtype == want_out.dtype == dtype
    for got, want in zip(grads, want_grads):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, **tol)


def test_a_non_contiguous_state_takes_the_numpy_gates(monkeypatch):
    x, h, w_ih, w_hh, b_ih, b_hh = _cell(np.float64, True)
    wide = eager.tensor(np.random.default_rng(2).standard_normal((5, 8)), requires_grad=True)
    h2 = wide[:, ::2]  # a strided view: the kernel takes C-contiguous arrays only
    args = (x, h2, w_ih, w_hh, b_ih, b_hh)
    g = np.random.default_rng(3).standard_normal((5, 4))
    out, grads, node = _run(args, g)
    assert node.gates is not None
    want_out, want_grads, _ = _numpy_run(monkeypatch, args, g)
    np.testing.assert_allclose(out, want_out, rtol=1e-12, atol=1e-12)
    for got, want in zip(grads, want_grads):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("bias", [True, False])
def test_native_gru_cell_gradients_match_finite_differences(bias):
    x, h, w_ih, w_hh, b_ih, b_hh = _cell(np.float64, bias, seed=4)
    assert _fused_cells.eligible(x, h, w_ih, w_hh, b_ih, b_hh)
    rest = (b_ih, b_hh)
    assert eager.autograd.gradcheck(
        lambda *a: _fused_cells.node_apply(_fused_cells.GRUCellFunction, *a[:4], *(a[4:] if bias else rest)),
        (x, h, w_ih, w_hh, *(rest if bias else ())))


def test_kernel_refuses_mismatched_operands():
    f = np.float32
    gi = np.zeros((12, 5), f)
    h = np.zeros((5, 4), f)
    b = np.zeros(12, f)
    assert cell_kernels.gru_cell(gi, gi, b, b, h) is not None
    assert cell_kernels.gru_cell(gi, gi, b, b, h.astype(np.float64)) is None  # mixed dtypes
    assert cell_kernels.gru_cell(gi[:9], gi[:9], b, b, h) is None  # 3K rows expected
    assert cell_kernels.gru_cell_backward(h, h, np.zeros((4, 4, 4), f)) is None  # saved of another batch
