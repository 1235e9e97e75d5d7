"""The less common torch.nn.functional ops and their modules against PyTorch, values and
gradients: rrelu (eval), the in-place activation forms, local_response_norm, lp_pool,
adaptive_max_pool1d/3d, channel_shuffle, pdist, multi_margin_loss, multilabel_margin_loss,
triplet_margin_with_distance_loss, max_unpool1d/2d, Unfold/Fold, and the modules' reprs."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X4 = RNG.standard_normal((2, 6, 5, 4))
X3 = RNG.standard_normal((2, 6, 7))
SCORES = RNG.standard_normal((3, 5))

CASES = {
    "rrelu-eval": (lambda F, lib, x: F.rrelu(x, 0.1, 0.3, training=False), X4),
    "local_response_norm-4d": (lambda F, lib, x: F.local_response_norm(x, 3, alpha=0.1, beta=0.7, k=2.0), X4),
    "local_response_norm-3d": (lambda F, lib, x: F.local_response_norm(x, 2), X3),
    "lp_pool2d": (lambda F, lib, x: F.lp_pool2d(x, 2.0, 2), X4),
    "lp_pool2d-p3-stride": (lambda F, lib, x: F.lp_pool2d(x, 3.0, (2, 3), stride=1), X4),
    "lp_pool1d": (lambda F, lib, x: F.lp_pool1d(x, 2.0, 3, stride=2), X3),
    "adaptive_max_pool1d": (lambda F, lib, x: F.adaptive_max_pool1d(x, 3), X3),
    "adaptive_max_pool3d": (lambda F, lib, x: F.adaptive_max_pool3d(x.unsqueeze(0), (2, 3, 2)), X4),
    "channel_shuffle": (lambda F, lib, x: F.channel_shuffle(x, 3), X4),
    "pdist": (lambda F, lib, x: F.pdist(x.reshape(6, -1)[:, :5]), X4),
    "pdist-p1": (lambda F, lib, x: F.pdist(x.reshape(6, -1)[:, :5], p=1.0), X4),
    "multi_margin_loss": (lambda F, lib, x: F.multi_margin_loss(x, lib.tensor([0, 4, 2])), SCORES),
    "multi_margin_loss-p2-w": (lambda F, lib, x: F.multi_margin_loss(
        x, lib.tensor([1, 1, 3]), p=2, margin=0.5, weight=lib.tensor([1.0, 2, 3, 4, 5], dtype=x.dtype),
        reduction="none"), SCORES),
    "multilabel_margin_loss": (lambda F, lib, x: F.multilabel_margin_loss(
        x, lib.tensor([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 0, 0, 0, 0]])), SCORES),
    "triplet_with_distance": (lambda F, lib, x: F.triplet_margin_with_distance_loss(
        x[0:1], x[1:2], x[2:3], distance_function=lambda a, b: (a - b).abs().sum(-1), margin=2.0), SCORES),
    "max_unpool2d": (lambda F, lib, x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2), X4),
    "max_unpool2d-size": (lambda F, lib, x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2,
                                                          output_size=(5, 4)), X4),
    "max_unpool1d": (lambda F, lib, x: F.max_unpool1d(*F.max_pool1d(x, 2, return_indices=True), 2), X3),
    "relu_": (lambda F, lib, x: F.relu_(x * 1.0), X3),
    "hardtanh_": (lambda F, lib, x: F.hardtanh_(x * 1.0, -0.5, 0.5), X3),
    "leaky_relu_": (lambda F, lib, x: F.leaky_relu_(x * 1.0, 0.2), X3),
    "elu_": (lambda F, lib, x: F.elu_(x * 1.0), X3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_pytorch(name):
    fn, data = CASES[name]
    out = []
    for lib in (eager, torch):
        x = lib.tensor(data, requires_grad=True)
        y = fn(lib.nn.functional, lib, x)
        y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
        out.append((y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_rrelu_training_draws_slopes_in_range():
    eager.manual_seed(0)
    x = -eager.ones(1000, dtype=eager.float64)
    y = eager.nn.RReLU(0.1, 0.3)(x)
    assert ((-y >= 0.1) & (-y <= 0.3)).all() and y.unique().numel() > 100
    assert (eager.nn.RReLU(0.1, 0.3).eval()(x) == -0.2).all()


def test_unfold_fold_modules_round_trip_like_pytorch():
    out = []
    for lib in (eager, torch):
        x = lib.tensor(X4, requires_grad=True)
        cols = lib.nn.Unfold(2, padding=1)(x)
        y = lib.nn.Fold((5, 4), 2, padding=1)(cols)
        y.sum().backward()
        out.append((cols.detach().numpy(), y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12)


@pytest.mark.parametrize("make", [
    lambda nn: nn.RReLU(), lambda nn: nn.MaxUnpool2d(2), lambda nn: nn.MaxUnpool1d(3, 2),
    lambda nn: nn.LPPool2d(2, 3), lambda nn: nn.LocalResponseNorm(2), lambda nn: nn.Unfold(2),
    lambda nn: nn.Fold((4, 4), 2), lambda nn: nn.ChannelShuffle(2), lambda nn: nn.MultiMarginLoss(),
    lambda nn: nn.AdaptiveMaxPool1d(3), lambda nn: nn.FeatureAlphaDropout(0.2),
])
def test_module_reprs_match_pytorch(make):
    assert repr(make(eager.nn)) == repr(make(torch.nn))


def test_rnn_bases_are_the_bases():
    assert isinstance(eager.nn.LSTM(2, 3), eager.nn.RNNBase)
    assert isinstance(eager.nn.GRUCell(2, 3), eager.nn.RNNCellBase)
    assert eager.nn.modules.rnn.RNNBase is eager.nn.RNNBase


@pytest.mark.parametrize("kw", [dict(stride=2), dict(stride=(1, 2, 2), padding=1, output_padding=(0, 1, 0)),
                                dict(stride=2, dilation=2, groups=2, padding=(0, 1, 1))])
def test_conv_transpose3d_matches_pytorch(kw):
    x0 = RNG.standard_normal((2, 4, 3, 4, 3))
    w0 = RNG.standard_normal((4, 3 if kw.get("groups", 1) == 1 else 2, 2, 3, 2))
    b0 = RNG.standard_normal(w0.shape[1] * kw.get("groups", 1))
    out = []
    for lib in (eager, torch):
        x, w, b = (lib.tensor(a, requires_grad=True) for a in (x0, w0, b0))
        y = lib.nn.functional.conv_transpose3d(x, w, b, **kw)
        y.backward(lib.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape))))
        out.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy(), b.grad.numpy()))
    for a, b in zip(*out):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_conv_transpose_output_size_picks_the_output_padding_like_pytorch(nd):
    shapes = {1: (1, 2, 5), 2: (1, 2, 5, 4), 3: (1, 2, 3, 4, 3)}
    x0 = RNG.standard_normal(shapes[nd])
    target = tuple(2 * s for s in shapes[nd][2:])  # stride 2, kernel 3, padding 1: 2s - 1 or 2s
    out = []
    for lib in (eager, torch):
        lib.manual_seed(0)
        m = getattr(lib.nn, f"ConvTranspose{nd}d")(2, 3, 3, stride=2, padding=1).double()
        if lib is torch:
            with torch.no_grad():
                m.weight.copy_(torch.tensor(out[0][1]))
                m.bias.copy_(torch.tensor(out[0][2]))
        y = m(lib.tensor(x0), output_size=target)
        out.append((y.detach().numpy(), m.weight.detach().numpy(), m.bias.detach().numpy()))
        with pytest.raises(ValueError, match="requested an output size"):
            m(lib.tensor(x0), output_size=tuple(t + 5 for t in target))
    assert out[0][0].shape[2:] == target
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-10, atol=1e-12)
    assert repr(eager.nn.ConvTranspose3d(2, 3, 3, stride=2)) == repr(torch.nn.ConvTranspose3d(2, 3, 3, stride=2))


X5 = RNG.standard_normal((1, 2, 3, 4, 5))
INTERPOLATIONS = [
    ("nearest-exact", X4, dict(size=(7, 9))), ("nearest-exact", X4, dict(scale_factor=0.6)),
    ("nearest-exact", X3, dict(size=3)), ("area", X4, dict(size=(3, 4))), ("area", X4, dict(scale_factor=0.5)),
    ("area", X3, dict(size=2)), ("area", X5, dict(size=(2, 2, 2))), ("trilinear", X5, dict(size=(4, 5, 6))),
    ("trilinear", X5, dict(scale_factor=(2, 1.5, 0.5), align_corners=True)), ("nearest", X5, dict(scale_factor=2)),
    ("nearest", X5, dict(size=(2, 7, 3))), ("nearest-exact", X5, dict(size=(2, 7, 3))),
]


@pytest.mark.parametrize("case", range(len(INTERPOLATIONS)),
                         ids=[f"{m}-{d.ndim}d-{k}" for m, d, k in INTERPOLATIONS])
def test_interpolate_modes_match_pytorch(case):
    mode, data, kw = INTERPOLATIONS[case]
    out = []
    for lib in (eager, torch):
        x = lib.tensor(data, requires_grad=True)
        y = lib.nn.functional.interpolate(x, mode=mode, **kw)
        y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
        out.append((y.detach().numpy(), x.grad.numpy()))
    for a, b in zip(*out):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_upsample_trilinear_module_and_mode_checks():
    up = eager.nn.Upsample(scale_factor=2, mode="trilinear")
    assert up(eager.randn(1, 2, 2, 3, 4)).shape == (1, 2, 4, 6, 8)
    with pytest.raises(NotImplementedError, match="trilinear mode needs 5D input"):
        eager.nn.functional.interpolate(eager.randn(1, 2, 3, 4), scale_factor=2, mode="trilinear")
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        eager.nn.functional.interpolate(eager.randn(1, 2, 3, 4), scale_factor=2, mode="area", align_corners=True)
