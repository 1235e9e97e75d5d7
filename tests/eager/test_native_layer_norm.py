"""layer_norm as one node each way (eager/_fused_layer_norm.py) with the forward's row
statistics handed to the backward (gmnative/layer_norm_kernels.py): the op path's values bit
for bit, PyTorch's within tolerance, finite differences, and the cases that fall back."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from gmnative import kernels as native_kernels
from gmnative import layer_norm_kernels
from gmops import conv

F = eager.nn.functional
needs_native = pytest.mark.skipif(native_kernels.kernels() is None, reason="no native kernels on this host")

CASES = [((16, 32, 64), (64,)), ((4, 3, 5), (3, 5)), ((7, 1), (1,)), ((2, 3, 300), (300,)), ((5,), (5,))]


def _leaves(shape, ns, dtype, seed):
    rng = np.random.default_rng(seed)
    x = eager.tensor(rng.standard_normal(shape) * 3 + 10, dtype=dtype, requires_grad=True)
    w = eager.tensor(rng.standard_normal(ns), dtype=dtype, requires_grad=True)
    b = eager.tensor(rng.standard_normal(ns), dtype=dtype, requires_grad=True)
    g = eager.tensor(rng.standard_normal(shape), dtype=dtype)
    return x, w, b, g


@needs_native
@pytest.mark.parametrize("dtype", [eager.float32, eager.float64])
@pytest.mark.parametrize("shape,ns", CASES)
def test_fused_node_equals_op_path(shape, ns, dtype):
    x, w, b, g = _leaves(shape, ns, dtype, 0)
    y = F.layer_norm(x, ns, w, b)
    assert type(y.grad_fn).__name__ == "NativeLayerNormBackward0"
    assert y.grad_fn.name() == "NativeLayerNormBackward0"
    assert y.grad_fn.stats.shape == (int(np.prod(shape[:len(shape) - len(ns)])), 2)  # the saved rows' stats
    y.backward(g)
    fused = [t.grad.numpy().copy() for t in (x, w, b)]
    for t in (x, w, b):
        t.grad = None
    y2 = conv.LAYER_NORM(x, w, b, ndim=len(ns), eps=1e-5)
    y2.backward(g)
    np.testing.assert_array_equal(y.detach().numpy(), y2.detach().numpy())
    for a, c in zip(fused, (t.grad.numpy() for t in (x, w, b))):
        np.testing.assert_array_equal(a, c)


@needs_native
def test_stats_kernels_match_row_moments():
    rng = np.random.default_rng(1)
    rows = rng.standard_normal((9, 13)) * 2 - 5
    w, b = rng.standard_normal(13), rng.standard_normal(13)
    out, stats = layer_norm_kernels.layer_norm_stats(rows, w, b, 1e-5)
    mean, var = rows.mean(1), rows.var(1)
    np.testing.assert_allclose(stats[:, 0], mean, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(stats[:, 1], 1 / np.sqrt(var + 1e-5), rtol=1e-12)
    np.testing.assert_allclose(out, (rows - mean[:, None]) / np.sqrt(var[:, None] + 1e-5) * w + b, rtol=1e-12,
                               atol=1e-12)
    g = rng.standard_normal((9, 13))
    with_stats = layer_norm_kernels.layer_norm_backward_stats(g, rows, w, 1e-5, stats)
    without = native_kernels.layer_norm_backward(g, rows, w, 1e-5)
    for a, c in zip(with_stats, without):
        np.testing.assert_array_equal(a, c)
    # stats of the wrong shape or dtype: not used (None: the caller's other path)
    assert layer_norm_kernels.layer_norm_backward_stats(g, rows, w, 1e-5, stats[:4]) is None
    assert layer_norm_kernels.layer_norm_backward_stats(g, rows, w, 1e-5, stats.astype(np.float32)) is None


@pytest.mark.parametrize("shape,ns", [((3, 4, 5), (5,)), ((2, 3, 4), (3, 4))])
def test_gradcheck(shape, ns):
    x, w, b, _ = _leaves(shape, ns, eager.float64, 2)
    fn = lambda x, w, b: F.layer_norm(x, ns, w, b, eps=1e-3)  # noqa: E731
    assert eager.autograd.gradcheck(fn, (x, w, b))
    assert eager.autograd.gradgradcheck(fn, (x, w, b))


@needs_native
@pytest.mark.parametrize("which", [0, 1, 2])
def test_only_some_inputs_require_grad(which):
    x, w, b, g = _leaves((6, 8), (8,), eager.float32, 3)
    leaves = (x, w, b)
    for i, t in enumerate(leaves):
        t.requires_grad_(i == which)
    y = F.layer_norm(x, (8,), w, b)
    assert y.requires_grad and type(y.grad_fn).__name__ == "NativeLayerNormBackward0"
    y.backward(g)
    assert [t.grad is not None for t in leaves] == [i == which for i in range(3)]
    with eager.no_grad():
        assert F.layer_norm(x, (8,), w, b).grad_fn is None


@needs_native
def test_in_place_change_after_forward_raises():
    x, w, b, g = _leaves((4, 6), (6,), eager.float32, 4)
    h = x * 1.0
    y = F.layer_norm(h, (6,), w, b)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward(g)


def test_fallbacks_take_the_op_path():
    x, w, b, g = _leaves((4, 6), (6,), eager.float32, 5)
    # weight of another dtype: promoted by the op path, as before
    y = F.layer_norm(x, (6,), w.detach().double(), b)
    assert y.shape == (4, 6)
    # a non-contiguous input: the op path's values
    xt = eager.tensor(np.random.default_rng(6).standard_normal((6, 4)), dtype=eager.float32).t()
    ref = conv.LAYER_NORM(xt, w, b, ndim=1, eps=1e-5)
    np.testing.assert_allclose(F.layer_norm(xt, (6,), w, b).detach().numpy(), ref.detach().numpy(), rtol=0, atol=0)
    # an empty input
    e = F.layer_norm(eager.zeros(0, 6, requires_grad=True), (6,), w, b)
    assert e.shape == (0, 6)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(x, (5,), w, b)


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x, w, b, g = _leaves((16, 32, 64), (64,), eager.float32, 7)
    y = F.layer_norm(x, (64,), w, b)
    y.backward(g)
    tx, tw, tb = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (x, w, b))
    ty = torch.nn.functional.layer_norm(tx, (64,), tw, tb)
    ty.backward(torch.tensor(g.numpy()))
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-5)
    for mine, theirs in ((x, tx), (w, tw), (b, tb)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(16, 4, 32, 32), (1024, 65), (3, 1), (5, 7)])
def test_log_softmax_forward_rows_equal_op(shape, dtype):
    """log_softmax's forward with the native row maxima (eager/_fused_softmax.py) gives the
    op's NumPy forward bit for bit; rows whose maximum is not finite take the op's forward."""
    from eager import _fused_softmax  # noqa: PLC0415
    from gmops import REGISTRY  # noqa: PLC0415

    rng = np.random.default_rng(8)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    if shape == (5, 7):
        x[1, 0] = -np.inf  # a finite maximum still: the kernel path
        x[3, :] = -np.inf  # a row of -inf: the op's forward (NaN row, as PyTorch)
    xt = eager.tensor(x, requires_grad=True)
    with np.errstate(divide="ignore", invalid="ignore"):  # (the -inf row's log(0) and -inf - -inf)
        y = F.log_softmax(xt, dim=-1)
        expected = REGISTRY["log_softmax"].forward(np, x, dim=x.ndim - 1)
    np.testing.assert_array_equal(y.detach().numpy(), expected)
    if shape == (5, 7):
        x2 = x[[0, 1, 2, 4]]
        got = _fused_softmax._log_softmax_rows(x2)
        if got is not None:
            np.testing.assert_array_equal(got, REGISTRY["log_softmax"].forward(np, x2, dim=1))
