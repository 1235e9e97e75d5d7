"""Conv3d, MaxPool3d, AvgPool3d and AdaptiveAvgPool3d (and their functionals) on the N-d
unfold/fold ops: values and gradients against PyTorch (float64) when it is installed,
against finite differences always, PyTorch's defaults, grad_fn names and errors, and the
compiled path."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn as nn
import eager.nn.functional as EF
import static
from eager.autograd.gradcheck import gradcheck, gradgradcheck


def _torch():
    return pytest.importorskip("torch")


CONV_CASES = {
    "plain": ((2, 4, 5, 6, 7), (6, 4, 3, 2, 3), {}),
    "padded_strided_dilated": ((2, 4, 5, 6, 7), (6, 4, 3, 2, 3),
                               {"stride": (2, 1, 2), "padding": (1, 0, 1), "dilation": (1, 2, 1)}),
    "same": ((1, 2, 4, 5, 6), (3, 2, 3, 2, 3), {"padding": "same", "dilation": 2}),
    "valid": ((1, 2, 4, 5, 6), (3, 2, 2, 2, 2), {"padding": "valid"}),
    "groups": ((2, 4, 4, 5, 3), (6, 2, 2, 3, 2), {"groups": 2, "padding": 1}),
    "unbatched": ((3, 4, 5, 4), (2, 3, 2, 2, 2), {"stride": 2}),
}


def _arrays(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


def _compare(fe, ft, arrays, seed=1):
    torch = _torch()
    E = [eager.tensor(a, requires_grad=True) for a in arrays]
    T = [torch.tensor(a, requires_grad=True) for a in arrays]
    oe, ot = fe(*E), ft(*T)
    name = (oe[0] if isinstance(oe, tuple) else oe).grad_fn.name()
    assert name == (ot[0] if isinstance(ot, tuple) else ot).grad_fn.name()
    if isinstance(ot, tuple):
        np.testing.assert_array_equal(oe[1].numpy(), ot[1].numpy())
        assert oe[1].dtype == eager.int64
        oe, ot = oe[0], ot[0]
    assert tuple(oe.shape) == tuple(ot.shape)
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-10, atol=1e-12)
    w = np.random.default_rng(seed).standard_normal(tuple(ot.shape))
    (oe * eager.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    for a, b in zip(E, T):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    return oe


@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv3d_matches_pytorch(case):
    torch = _torch()
    xs, ws, kw = CONV_CASES[case]
    x, w, b = _arrays(xs, ws, (ws[0],))
    _compare(lambda x, w, b: EF.conv3d(x, w, b, **kw), lambda x, w, b: torch.nn.functional.conv3d(x, w, b, **kw),
             [x, w, b])


def test_conv3d_finite_differences_first_and_second_order():
    x, w, b = _arrays((1, 2, 3, 4, 3), (2, 2, 2, 2, 2), (2,))
    args = tuple(eager.tensor(a, requires_grad=True) for a in (x, w, b))
    fn = lambda x, w, b: EF.conv3d(x, w, b, stride=(1, 2, 1), padding=1)  # noqa: E731
    assert gradcheck(fn, args)
    assert gradgradcheck(fn, args)


MAX_CASES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
             dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1), ceil_mode=True),
             dict(kernel_size=(1, 2, 3), stride=1)]
AVG_CASES = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
             dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
             dict(kernel_size=(2, 3, 2), stride=(1, 2, 2), ceil_mode=True),
             dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
             dict(kernel_size=2, divisor_override=3)]


@pytest.mark.parametrize("kw", MAX_CASES, ids=str)
@pytest.mark.parametrize("indices", [False, True])
def test_max_pool3d_matches_pytorch(kw, indices):
    torch = _torch()
    (x,) = _arrays((2, 3, 5, 6, 7))
    out = _compare(lambda t: EF.max_pool3d(t, return_indices=indices, **kw),
                   lambda t: torch.nn.functional.max_pool3d(t, return_indices=indices, **kw), [x])
    assert out.grad_fn.name() == "MaxPool3DWithIndicesBackward0"


@pytest.mark.parametrize("kw", AVG_CASES, ids=str)
def test_avg_pool3d_matches_pytorch(kw):
    torch = _torch()
    (x,) = _arrays((2, 3, 5, 6, 7))
    out = _compare(lambda t: EF.avg_pool3d(t, **kw), lambda t: torch.nn.functional.avg_pool3d(t, **kw), [x])
    assert out.grad_fn.name() == "AvgPool3DBackward0"


@pytest.mark.parametrize("size", [(1, 1, 1), (5, 3, 7), (2, 4, 3), (None, 2, 3), 3])
def test_adaptive_avg_pool3d_matches_pytorch(size):
    torch = _torch()
    (x,) = _arrays((2, 3, 5, 6, 7))
    _compare(lambda t: EF.adaptive_avg_pool3d(t, size),
             lambda t: torch.nn.functional.adaptive_avg_pool3d(t, size), [x])  # (1, 1, 1) is a plain mean


def test_unbatched_pools_match_pytorch():
    torch = _torch()
    (x,) = _arrays((3, 4, 5, 6))
    _compare(lambda t: EF.max_pool3d(t, 2), lambda t: torch.nn.functional.max_pool3d(t, 2), [x])
    _compare(lambda t: EF.avg_pool3d(t, 2, 1), lambda t: torch.nn.functional.avg_pool3d(t, 2, 1), [x])
    _compare(lambda t: EF.adaptive_avg_pool3d(t, (3, 2, 4)),
             lambda t: torch.nn.functional.adaptive_avg_pool3d(t, (3, 2, 4)), [x])


def test_pools_finite_differences():
    (x,) = _arrays((1, 2, 4, 5, 3))
    t = eager.tensor(x, requires_grad=True)
    assert gradcheck(lambda a: EF.max_pool3d(a, 2, 1, 1), (t,))
    assert gradcheck(lambda a: EF.avg_pool3d(a, 3, 2, 1, ceil_mode=True, count_include_pad=False), (t,))
    assert gradgradcheck(lambda a: EF.avg_pool3d(a, 2), (t,))
    assert gradcheck(lambda a: EF.adaptive_avg_pool3d(a, (3, 2, 2)), (t,))


def test_modules_match_pytorch_with_the_same_weights():
    torch = _torch()
    (x,) = _arrays((2, 4, 5, 6, 5))
    ours = nn.Conv3d(4, 6, 3, stride=(1, 2, 1), padding=1, groups=2, padding_mode="replicate").double()
    theirs = torch.nn.Conv3d(4, 6, 3, stride=(1, 2, 1), padding=1, groups=2, padding_mode="replicate").double()
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape) and tuple(ours.bias.shape) == tuple(theirs.bias.shape)
    assert ours.kernel_size == theirs.kernel_size and ours.stride == theirs.stride
    assert ours.padding == theirs.padding and ours.dilation == theirs.dilation
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(ours.weight.detach().numpy()))
        theirs.bias.copy_(torch.tensor(ours.bias.detach().numpy()))
    layers = [(ours, theirs), (nn.MaxPool3d(2, padding=1), torch.nn.MaxPool3d(2, padding=1)),
              (nn.AvgPool3d(3, stride=2), torch.nn.AvgPool3d(3, stride=2)),
              (nn.AdaptiveAvgPool3d((2, 3, None)), torch.nn.AdaptiveAvgPool3d((2, 3, None)))]
    for a, b in layers:
        np.testing.assert_allclose(a(eager.tensor(x)).detach().numpy(), b(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-10, atol=1e-12)
    pool = nn.MaxPool3d(3)
    assert pool.stride == 3 and pool.padding == 0 and pool.dilation == 1 and not pool.ceil_mode
    assert nn.AvgPool3d(2).count_include_pad and nn.AvgPool3d(2).divisor_override is None


def test_conv3d_default_init_bounds():
    layer = nn.Conv3d(2, 3, (2, 3, 1))
    fan_in = 2 * 2 * 3 * 1
    assert tuple(layer.weight.shape) == (3, 2, 2, 3, 1)
    assert float(layer.weight.abs().max()) <= 1 / np.sqrt(fan_in) + 1e-7
    assert float(layer.bias.abs().max()) <= 1 / np.sqrt(fan_in) + 1e-7


def test_bad_input_raises_pytorchs_types_with_the_shapes():
    x = eager.randn(2, 3, 4, 5)
    with pytest.raises(RuntimeError, match=r"conv3d: Expected 4D \(unbatched\) or 5D \(batched\).*\[3, 4, 5\]"):
        EF.conv3d(eager.randn(3, 4, 5), eager.randn(2, 3, 1, 1, 1))
    with pytest.raises(RuntimeError, match=r"groups=1.*to have 2 channels, but got 3"):
        EF.conv3d(eager.randn(1, 3, 4, 4, 4), eager.randn(2, 2, 1, 1, 1))
    with pytest.raises(ValueError, match="padding='same' is not supported for strided"):
        EF.conv3d(eager.randn(1, 2, 4, 4, 4), eager.randn(2, 2, 1, 1, 1), stride=2, padding="same")
    with pytest.raises(RuntimeError, match=r"max_pool3d: Expected non-empty 4D or 5D.*\[4, 5\]"):
        EF.max_pool3d(eager.randn(4, 5), 2)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        EF.avg_pool3d(eager.randn(1, 1, 4, 4, 4), 2, padding=2)
    with pytest.raises(RuntimeError, match=r"max_pool3d: Given input size \[1, 1, 2, 2, 2\].*empty"):
        EF.max_pool3d(eager.randn(1, 1, 2, 2, 2), 3)
    with pytest.raises(RuntimeError, match="adaptive_avg_pool3d: Expected non-empty"):
        EF.adaptive_avg_pool3d(x.reshape(-1), 2)
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv3d(3, 4, 2, groups=2)


def test_bad_input_errors_agree_with_pytorchs_types():
    torch = _torch()
    for call in (lambda lib: lib.nn.functional.conv3d(lib.randn(3, 4, 5), lib.randn(2, 3, 1, 1, 1)),
                 lambda lib: lib.nn.functional.max_pool3d(lib.randn(4, 5), 2),
                 lambda lib: lib.nn.functional.avg_pool3d(lib.randn(1, 1, 4, 4, 4), 2, padding=2),
                 lambda lib: lib.nn.functional.max_pool3d(lib.randn(1, 1, 2, 2, 2), 3)):
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(Exception) as ours:
            call(eager)
        assert type(ours.value) is type(theirs.value)


def test_compiled_conv3d_and_pools_equal_eager():
    (x, w, b) = _arrays((2, 2, 4, 5, 4), (3, 2, 2, 2, 2), (3,))

    def net(x, w, b):
        h = EF.conv3d(x, w, b, padding=1).relu()
        return (EF.max_pool3d(h, 2).sum() + EF.avg_pool3d(h, 2, 1).sum()
                + EF.adaptive_avg_pool3d(h, (2, 3, 2)).sum())

    args = [eager.tensor(a, requires_grad=True) for a in (x, w, b)]
    compiled = static.compile(net)
    np.testing.assert_allclose(compiled(*args).detach().numpy(), net(*args).detach().numpy(), rtol=1e-10)
    grads = eager.autograd.grad(compiled(*args), args)  # through the compiled backward
    want = eager.autograd.grad(net(*args), args)
    for g, e in zip(grads, want):
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-10, atol=1e-12)
    source = compiled.source(*args)
    assert "_rt.forward('unfold'" in source and "_rt.forward('fold'" in source  # 3-D windows and their VJP
