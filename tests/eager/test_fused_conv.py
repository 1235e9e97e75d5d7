"""F.conv2d's fused node (eager/nn/_fused_conv.py: batch-major columns, one batched product,
its gradients written out) against PyTorch and against the op path it replaces, with finite
differences and second derivatives through it; the cases it leaves to the op path."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as F
from eager.nn import _fused_conv
from gmnative import build as native_build

pytestmark = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")

GEOMETRIES = [  # (n, c, h, w, o, k, stride, padding, dilation)
    (2, 3, 9, 8, 4, 3, 1, 1, 1),
    (3, 2, 10, 11, 5, 3, 2, 2, 2),
    (2, 1, 7, 7, 3, 2, 1, "same", 1),  # asymmetric padding (even kernel)
    (1, 2, 6, 5, 2, (3, 2), (2, 1), (0, 1), 1),
    (2, 4, 5, 5, 3, 5, 1, 0, 1),  # a single output position
]


def _inputs(geom, dtype, seed=0):
    n, c, h, w, o, k, *_ = geom
    kh, kw = (k, k) if isinstance(k, int) else k
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((n, c, h, w)).astype(dtype), rng.standard_normal((o, c, kh, kw)).astype(dtype),
            rng.standard_normal(o).astype(dtype))


def _conv(geom, *args):
    stride, padding, dilation = geom[6:]
    return F.conv2d(*args, stride=stride, padding=padding, dilation=dilation)


@pytest.mark.parametrize("geom", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
def test_fused_conv2d_matches_pytorch(geom, dtype, bias):
    torch = pytest.importorskip("torch")
    x, w, b = _inputs(geom, dtype)
    ex, ew, eb = (eager.tensor(a, requires_grad=True) for a in (x, w, b))
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    out = _conv(geom, ex, ew, eb if bias else None)
    assert type(out.grad_fn) is _fused_conv._ConvCtx and out.grad_fn.name() == "ConvolutionBackward0"
    stride, padding, dilation = geom[6:]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's note on 'same' with an even kernel
        want = torch.nn.functional.conv2d(tx, tw, tb if bias else None, stride=stride, padding=padding,
                                          dilation=dilation)
    assert tuple(out.shape) == tuple(want.shape) and out.is_contiguous() and out.dtype == ex.dtype
    tol = dict(rtol=1e-10, atol=1e-10) if dtype == np.float64 else dict(rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), **tol)
    g = np.random.default_rng(1).standard_normal(tuple(want.shape)).astype(dtype)
    out.backward(eager.tensor(g))
    want.backward(torch.tensor(g))
    for mine, theirs in ((ex, tx), (ew, tw)) + (((eb, tb),) if bias else ()):
        assert mine.grad.dtype == mine.dtype
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), **tol)


@pytest.mark.parametrize("geom", GEOMETRIES[:3])
def test_fused_conv2d_gradients_match_finite_differences_and_second_order(geom):
    args = tuple(eager.tensor(a, requires_grad=True) for a in _inputs(geom, np.float64, seed=3))
    assert type(_conv(geom, *args).grad_fn) is _fused_conv._ConvCtx
    assert eager.autograd.gradcheck(lambda *a: _conv(geom, *a), args)
    assert eager.autograd.gradgradcheck(lambda *a: _conv(geom, *a), args)


def test_fused_conv2d_equals_the_op_path(monkeypatch):
    geom = GEOMETRIES[1]
    x, w, b = _inputs(geom, np.float64, seed=5)

    def run():
        args = [eager.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = _conv(geom, *args)
        out.backward(eager.tensor(np.cos(np.arange(out.numel()).reshape(tuple(out.shape)))))
        return out, [out.detach().numpy()] + [a.grad.numpy() for a in args]

    fused_out, fused = run()
    monkeypatch.setattr(_fused_conv, "_native", False)
    plain_out, plain = run()
    assert type(fused_out.grad_fn) is _fused_conv._ConvCtx
    assert type(plain_out.grad_fn) is not _fused_conv._ConvCtx
    for a, b_ in zip(fused, plain):
        np.testing.assert_allclose(a, b_, rtol=1e-12, atol=1e-12)


def test_only_the_needed_gradients_and_no_graph_without_grad():
    x, w, b = _inputs(GEOMETRIES[0], np.float32)
    ex = eager.tensor(x)  # an image batch that needs no gradient (a first layer)
    ew = eager.tensor(w, requires_grad=True)
    out = _conv(GEOMETRIES[0], ex, ew, eager.tensor(b))
    out.sum().backward()
    assert ex.grad is None and ew.grad is not None
    with eager.no_grad():
        assert _conv(GEOMETRIES[0], ex, ew, None).grad_fn is None
    assert _conv(GEOMETRIES[0], ex, eager.tensor(w), None).grad_fn is None


def test_other_cases_take_the_op_path():
    x, w, b = _inputs(GEOMETRIES[0], np.float64)
    ex, ew = eager.tensor(x, requires_grad=True), eager.tensor(w, requires_grad=True)
    grouped = F.conv2d(eager.tensor(np.ones((1, 4, 5, 5)), requires_grad=True),
                       eager.tensor(np.ones((2, 2, 3, 3)), requires_grad=True), groups=2)
    assert type(grouped.grad_fn) is not _fused_conv._ConvCtx
    strided = ex.transpose(2, 3)  # not C-contiguous
    assert type(F.conv2d(strided, ew).grad_fn) is not _fused_conv._ConvCtx
    assert not _fused_conv.eligible(ex, eager.tensor(w.astype(np.float32)), None, 1)  # mixed dtypes
    unbatched = F.conv2d(ex[0], ew, padding=1)
    assert tuple(unbatched.shape) == (4, 9, 8)
    np.testing.assert_allclose(unbatched.detach().numpy(), F.conv2d(ex, ew, padding=1)[0].detach().numpy())


def test_apply_builds_the_same_node():
    x, w, b = (eager.tensor(a, requires_grad=True) for a in _inputs(GEOMETRIES[0], np.float64))
    out = _fused_conv.Conv2dFunction.apply(x, w, b, (1, 1), (1, 1, 1, 1), (1, 1))
    want = F.conv2d(x, w, b, padding=1)
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-12)
    gx, gw, gb = eager.autograd.grad(out.sum(), (x, w, b))
    hx, hw, hb = eager.autograd.grad(want.sum(), (x, w, b))
    for a, b_ in ((gx, hx), (gw, hw), (gb, hb)):
        np.testing.assert_allclose(a.numpy(), b_.numpy(), rtol=1e-12, atol=1e-12)


def test_input_gradient_without_the_batch_major_fold_uses_the_ops_fold(monkeypatch):
    from gmnative import conv_kernels

    geom = GEOMETRIES[1]
    x, w, _ = _inputs(geom, np.float64, seed=6)

    def grad():
        ex = eager.tensor(x, requires_grad=True)
        _conv(geom, ex, eager.tensor(w), None).square().sum().backward()
        return ex.grad.numpy()

    want = grad()
    # (the batch-major path: where the image-by-image kernels run, no batch-major fold is asked for)
    monkeypatch.setattr(conv_kernels, "conv2d_images", lambda *a, **k: None)
    monkeypatch.setattr(conv_kernels, "fold2d_batch_major", lambda *a: None)
    np.testing.assert_allclose(grad(), want, rtol=1e-12, atol=1e-12)
