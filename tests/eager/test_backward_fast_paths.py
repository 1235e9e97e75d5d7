"""The fast paths a transformer's training step takes in eager (the W5 GPT's backward), each
checked to run where it should and to give what the general path gives."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.nn import _fused_dropout
from eager.nn import functional as F
from gmnative import build as native_build

needs_compiler = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")


@needs_compiler
def test_dropout_stays_fused_once_static_is_imported():
    # importing static installs eager's draw hook for good: outside a trace the hook does not
    # answer, so dropout keeps its one native pass and node
    import static  # noqa: F401

    x = eager.randn(8, 16, requires_grad=True)
    y = F.dropout(x, 0.25)
    assert type(y.grad_fn) is _fused_dropout._MulCtx
    assert y.grad_fn.name() == "MulBackward0"


@needs_compiler
def test_dropout_inside_a_trace_is_still_replayed_per_call():
    import static

    x = eager.ones(64, 32)
    fn = static.compile(lambda t: F.dropout(t, 0.5), backend="numpy")
    eager.manual_seed(3)
    a = fn(x).numpy()
    b = fn(x).numpy()
    assert not np.array_equal(a, b)  # a draw per call, not a mask frozen into the graph
    eager.manual_seed(3)
    first = F.dropout(x, 0.5).numpy()  # eager draws the same first mask from the same seed
    np.testing.assert_array_equal(a, first)


class _FlatGrad(eager.autograd.Function):
    """x * 3 whose backward computes its gradient flat and hands back a whole view of that
    buffer (as a fused backward that works on rows does); `held` keeps the buffer when set."""

    keep = False
    held: list = []

    @staticmethod
    def forward(ctx, x):
        return x * 3.0

    @staticmethod
    def backward(ctx, g):
        flat = (g.numpy().reshape(-1) * 3.0).astype(np.float32)
        if _FlatGrad.keep:
            _FlatGrad.held.append(flat)
        return eager.from_numpy(flat.reshape(g.shape))


@pytest.mark.parametrize("keep", [False, True])
def test_a_leafs_gradient_that_views_a_private_buffer_is_stored_without_a_copy(keep, monkeypatch):
    monkeypatch.setattr(_FlatGrad, "keep", keep)
    monkeypatch.setattr(_FlatGrad, "held", [])
    w = eager.ones(4, 5, requires_grad=True)
    _FlatGrad.apply(w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 5), 3.0, np.float32))
    if keep:  # someone else holds the buffer: .grad is a copy of its own
        w.grad.add_(1.0)
        np.testing.assert_array_equal(_FlatGrad.held[0], np.full(20, 3.0, np.float32))
    else:
        assert w.grad._data.base is not None and w.grad._data.base.shape == (20,)
    # a second pass accumulates into .grad in place, as for any gradient
    g = w.grad
    _FlatGrad.apply(w).sum().backward()
    assert w.grad is g
    np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 5), 7.0 if keep else 6.0, np.float32))


@pytest.mark.parametrize("keep", [False, True])
def test_gradients_meeting_at_a_slot_add_into_a_private_view_only(keep, monkeypatch):
    monkeypatch.setattr(_FlatGrad, "keep", keep)
    monkeypatch.setattr(_FlatGrad, "held", [])
    x = eager.ones(3, 4, requires_grad=True)
    h = x * 1.0  # h's node receives the _FlatGrad gradient and the product's
    (_FlatGrad.apply(h).sum() + (h * 2.0).sum()).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full((3, 4), 5.0, np.float32))
    for arr in _FlatGrad.held:  # a buffer someone else holds was never written
        np.testing.assert_array_equal(arr, np.full(12, 3.0, np.float32))


def test_layer_norm_gradients_match_the_op_path():
    # the fused node's gradients (stored as the parameters' .grad without a copy) against the
    # op record's, whose backward is written with ops
    from gmops._registry import REGISTRY

    ln = eager.nn.LayerNorm(8)
    with eager.no_grad():
        ln.weight.copy_(eager.linspace(0.5, 1.5, 8))
        ln.bias.copy_(eager.linspace(-1.0, 1.0, 8))
    x = eager.randn(4, 3, 8, requires_grad=True)
    ln(x).pow(2).sum().backward()
    assert ln(x).grad_fn.name() == "NativeLayerNormBackward0"
    fused = [p.grad.numpy().copy() for p in (x, ln.weight, ln.bias)]
    for p in (x, ln.weight, ln.bias):
        p.grad = None
    REGISTRY["layer_norm"](x, ln.weight, ln.bias, ndim=1, eps=ln.eps).pow(2).sum().backward()
    for p, f in zip((x, ln.weight, ln.bias), fused):
        np.testing.assert_allclose(f, p.grad.numpy(), rtol=1e-5, atol=1e-5)


@needs_compiler
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mask_shape", [(32, 32), (32,), (4, 32, 32)])
def test_a_trailing_mask_is_read_in_place_by_the_native_select(dtype, mask_shape):
    from gmnative import conv_kernels

    rng = np.random.default_rng(2)
    b = rng.standard_normal((16, 4, 32, 32)).astype(dtype)
    b[0, 0, 0, :3] = [np.nan, -0.0, np.inf]
    c = rng.random(mask_shape) > 0.4
    bits = np.uint32 if dtype == np.float32 else np.uint64
    for invert in (False, True):
        got = conv_kernels.select_number(c, -np.inf, b, invert)
        expected = np.where(~c if invert else c, dtype(-np.inf), b)
        assert got is not None and got.dtype == dtype
        np.testing.assert_array_equal(got.view(bits), expected.view(bits))
    # a mask that only broadcasts (not b's trailing shape) is not taken
    assert conv_kernels.select_number(np.ones((16, 1, 1, 32), bool), 0.0, b) is None


def test_masked_fill_with_a_causal_mask_forward_and_backward_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    s = rng.standard_normal((8, 4, 32, 32)).astype(np.float32)
    g = rng.standard_normal((8, 4, 32, 32)).astype(np.float32)
    g[0, 0, 0, 1] = np.nan  # a NaN gradient where the mask fills: PyTorch's gradient is 0 there
    mask = np.triu(np.ones((32, 32), bool), 1)
    ours = eager.tensor(s, requires_grad=True)
    theirs = torch.tensor(s, requires_grad=True)
    y = ours.masked_fill(eager.tensor(mask), float("-inf"))
    ty = theirs.masked_fill(torch.tensor(mask), float("-inf"))
    y.backward(eager.tensor(g))
    ty.backward(torch.tensor(g))
    assert y.grad_fn.name() == "MaskedFillBackward0"
    np.testing.assert_array_equal(y.detach().numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("used", [(0, 2), (1, 2), (0,)])
def test_split_parts_without_a_gradient_are_zeros_beside_the_others_bits(used):
    # q, k, v of one projection, some unused: the used parts' gradients kept bit for bit
    # (a -0.0 too) and zeros elsewhere, as PyTorch's split backward (zeros, then cat)
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 5, 12)).astype(np.float32)
    gs = [rng.standard_normal((2, 5, 4)).astype(np.float32) for _ in range(3)]
    for g in gs:
        g[0, 0, 0] = -0.0
    a, t = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = (a * 1.0).split(4, dim=2)
    theirs = (t * 1.0).split(4, dim=2)
    eager.autograd.backward([ours[i] for i in used], [eager.tensor(gs[i]) for i in used])
    torch.autograd.backward([theirs[i] for i in used], [torch.tensor(gs[i]) for i in used])
    np.testing.assert_array_equal(a.grad.numpy().view(np.uint32), t.grad.numpy().view(np.uint32))


def test_split_partial_gradient_double_backward_and_gradcheck():
    from eager.autograd import gradcheck, gradgradcheck

    x = eager.tensor(np.random.default_rng(5).standard_normal((3, 6)), requires_grad=True)

    def f(v):
        q, _, w = v.split(2, dim=1)
        return (q * q).sum() + (w * w * w).sum()

    assert gradcheck(f, (x,))
    assert gradgradcheck(f, (x,))


def test_randints_common_draw_keeps_its_native_call_once_static_is_imported(monkeypatch):
    import static  # noqa: F401  (installs the draw hook)
    from eager._factories import random as _random

    calls = []
    real = _random._index_kernels.bounded_int64
    monkeypatch.setattr(_random._index_kernels, "bounded_int64", lambda *a: calls.append(a) or real(*a))
    eager.manual_seed(0)
    first = eager.randint(0, 10, (32,)).numpy()
    assert calls  # outside a trace the hook does not answer: the one native call ran
    with monkeypatch.context() as m:  # the general path (as where the hook answers): the same numbers
        m.setattr(_random, "draw_hook_answers", lambda: True)
        m.setattr(_random.DRAW_HOOK, "fn", lambda *a: NotImplemented)
        eager.manual_seed(0)
        general = eager.randint(0, 10, (32,)).numpy()
    assert len(calls) == 1
    np.testing.assert_array_equal(first, general)


def test_views_of_views_and_copies_are_marked_as_pytorch():
    base = eager.arange(24.0).reshape(4, 6)
    v = base.t()  # a view of a view: the same root, the same version counter
    w = v.reshape(24) if not v.is_contiguous() else None
    assert v._base is base._base or v._base is base
    v2 = base.transpose(0, 1).transpose(0, 1)
    v2.add_(1.0)
    assert base._version == v2._version and float(base[0, 0]) == 1.0
    assert w is not None and w._base is None  # a copy: no view of base, its own version counter
    w.add_(1.0)
    assert float(base[0, 1]) == 2.0 and base._version == 1


@needs_compiler
@pytest.mark.parametrize("rows", [1, 3, 4, 5, 9, 821])
@pytest.mark.parametrize("threads", [1, 2])
def test_layer_norm_backward_rows_in_blocks_and_their_tails(rows, threads, monkeypatch):
    # the kernel's second pass takes rows four at a time; a block's tail and a thread's share
    # that is no multiple of four go row by row (821 rows of 40: two threads' shares of 410 and
    # 411): every row's gradient as the textbook formula's
    from gmnative import kernels, layer_norm_kernels

    k = kernels.kernels()
    if k is None:
        pytest.skip("eager's native kernels are off (GRAPHMODE_EAGER_NATIVE=0)")
    monkeypatch.setattr(k, "threads", lambda: threads)
    rng = np.random.default_rng(rows)
    x = rng.standard_normal((rows, 40)).astype(np.float32)
    w = rng.standard_normal(40).astype(np.float32)
    g = rng.standard_normal((rows, 40)).astype(np.float32)
    _, stats = layer_norm_kernels.layer_norm_stats(x, w, np.zeros(40, np.float32), 1e-5)
    found = layer_norm_kernels.layer_norm_backward_stats(g, x, w, 1e-5, stats)
    again = kernels.layer_norm_backward(g, x, w, 1e-5)  # the statistics computed again: the same bits
    assert found is not None and again is not None
    for a, b in zip(found, again):
        np.testing.assert_array_equal(a, b)
    xd, wd, gd = x.astype(np.float64), w.astype(np.float64), g.astype(np.float64)
    mean = xd.mean(1, keepdims=True)
    rstd = 1 / np.sqrt(xd.var(1, keepdims=True) + 1e-5)
    xhat = (xd - mean) * rstd
    gw = gd * wd
    gx = rstd * (gw - gw.mean(1, keepdims=True) - xhat * (gw * xhat).mean(1, keepdims=True))
    np.testing.assert_allclose(found[0], gx, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(found[1], (gd * xhat).sum(0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(found[2], gd.sum(0), rtol=1e-5, atol=1e-5)
