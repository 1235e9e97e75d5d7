"""nn layers and functions added for real PyTorch programs, checked without PyTorch:
convolution against a direct NumPy sum, gradients (float64) against finite differences,
running statistics, masks, recurrent cells against their equations, containers, losses
against their formulas, and PyTorch's errors for bad input."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eager
from eager import nn
from eager.autograd import gradcheck, gradgradcheck
from eager.nn import functional as F

RNG = np.random.default_rng(0)


def t64(*shape, requires_grad=True):
    return eager.tensor(RNG.standard_normal(shape), requires_grad=requires_grad)


def conv2d_reference(x, w, b, stride, pad, dilation, groups):
    """The definition: out[n, o, i, j] = b[o] + sum over c, p, q of x_padded * w."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    out = np.zeros((n, o, oh, ow))
    per = o // groups
    for oc in range(o):
        g = oc // per
        for i in range(oh):
            for j in range(ow):
                for p in range(kh):
                    for q in range(kw):
                        row, col = i * stride[0] + p * dilation[0], j * stride[1] + q * dilation[1]
                        patch = xp[:, g * cg:(g + 1) * cg, row, col]
                        out[:, oc, i, j] += patch @ w[oc, :, p, q]
        out[:, oc] += 0 if b is None else b[oc]
    return out


@pytest.mark.parametrize("stride,pad,dilation,groups", [((1, 1), (1, 1), (1, 1), 1), ((2, 1), (0, 2), (1, 2), 1),
                                                         ((1, 2), (1, 0), (2, 1), 2)])
def test_conv2d_equals_its_definition(stride, pad, dilation, groups):
    x = RNG.standard_normal((2, 4, 7, 6))
    w = RNG.standard_normal((6, 4 // groups, 3, 2))
    b = RNG.standard_normal(6)
    out = F.conv2d(eager.tensor(x), eager.tensor(w), eager.tensor(b), stride, pad, dilation, groups)
    np.testing.assert_allclose(out.numpy(), conv2d_reference(x, w, b, stride, pad, dilation, groups), rtol=1e-10)


def test_conv_gradients_first_and_second_order():
    x, w, b = t64(2, 2, 5, 4), t64(3, 2, 3, 2), t64(3)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2)), (x, w, b))
    assert gradgradcheck(lambda x, w: F.conv2d(x, w, padding=1), (x, w))
    x1, w1 = t64(2, 2, 7), t64(4, 1, 3)
    assert gradcheck(lambda x, w: F.conv1d(x, w, padding="same", groups=2), (x1, w1))


def test_conv_same_padding_and_module_shapes():
    x = eager.randn(2, 3, 9, 8)
    assert nn.Conv2d(3, 5, (4, 3), padding="same")(x).shape == (2, 5, 9, 8)  # even kernel: extra pad on the right
    assert nn.Conv2d(3, 6, 3, stride=2, groups=3, bias=False)(x).shape == (2, 6, 4, 3)
    assert nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect")(x).shape == (2, 4, 9, 8)
    assert nn.Conv1d(3, 4, 3)(eager.randn(3, 10)).shape == (4, 8)  # unbatched input
    conv = nn.Conv2d(3, 4, 3)
    assert conv.weight.shape == (4, 3, 3, 3) and abs(conv.weight.detach()).max().item() <= 1 / math.sqrt(27)
    assert conv(x).grad_fn.name() == "ConvolutionBackward0"


def test_conv_and_pool_errors_read_like_pytorch():
    with pytest.raises(RuntimeError, match="expected input.*to have 4 channels, but got 3 channels"):
        F.conv2d(eager.randn(1, 3, 5, 5), eager.randn(2, 4, 3, 3))
    with pytest.raises(RuntimeError, match="Expected 3D .* or 4D"):
        F.conv2d(eager.randn(5, 5), eager.randn(2, 1, 3, 3))
    with pytest.raises(ValueError, match="strided convolutions"):
        nn.Conv2d(1, 1, 3, stride=2, padding="same")
    with pytest.raises(RuntimeError, match="kernel .* is larger than the padded input"):
        F.conv2d(eager.randn(1, 1, 2, 2), eager.randn(1, 1, 3, 3))
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.max_pool2d(eager.randn(1, 1, 4, 4), 2, padding=2)


def test_pooling_values_and_gradients():
    a = RNG.standard_normal((2, 3, 6, 4))
    x = eager.tensor(a, requires_grad=True)
    ref_max = a.reshape(2, 3, 3, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_allclose(F.max_pool2d(x, 2).detach().numpy(), ref_max)
    np.testing.assert_allclose(F.avg_pool2d(x, 2).detach().numpy(), a.reshape(2, 3, 3, 2, 2, 2).mean(axis=(3, 5)))
    np.testing.assert_allclose(F.adaptive_avg_pool2d(x, 1).detach().numpy(), a.mean(axis=(2, 3), keepdims=True))
    assert gradcheck(lambda t: F.max_pool2d(t, 3, stride=2, padding=1), (x,))
    assert gradcheck(lambda t: F.avg_pool2d(t, 3, stride=2, padding=1, count_include_pad=False), (x,))
    assert gradcheck(lambda t: F.adaptive_avg_pool2d(t, (4, 3)), (x,))
    values, where = F.max_pool2d(x, 2, return_indices=True)
    assert where.dtype is eager.int64 and values.grad_fn.name() == "MaxPool2DWithIndicesBackward0"
    # PyTorch's indices are flat positions in each input plane: reading them back gives the maxima
    flat = a.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, where.numpy().reshape(2, 3, -1), 2).reshape(2, 3, 3, 2),
                                  values.detach().numpy())
    assert nn.MaxPool2d(2)(eager.randn(3, 6, 4)).shape == (3, 3, 2)  # unbatched (C, H, W)


def test_layer_norm_matches_its_formula_and_gradients():
    a = RNG.standard_normal((3, 4, 5))
    x = eager.tensor(a, requires_grad=True)
    w, b = t64(5), t64(5)
    out = F.layer_norm(x, (5,), w, b, eps=1e-5).detach().numpy()
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, keepdims=True) + 1e-5) * w.detach().numpy() \
        + b.detach().numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-10)
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (4, 5), None, None) * 1.0 + F.layer_norm(x, (5,), w, b), (x, w, b))
    assert gradgradcheck(lambda x: F.layer_norm(x, (5,)), (x,))
    assert nn.LayerNorm(5)(x).shape == (3, 4, 5)
    with pytest.raises(RuntimeError, match="normalized_shape"):
        F.layer_norm(x, (4,))


def test_batch_norm_running_statistics_train_and_eval():
    bn = nn.BatchNorm2d(3, momentum=0.5).double()
    a = RNG.standard_normal((4, 3, 2, 2)) * 3 + 2
    out = bn(eager.tensor(a)).detach().numpy()
    mean, var = a.mean(axis=(0, 2, 3)), a.var(axis=(0, 2, 3))
    np.testing.assert_allclose(out, (a - mean[:, None, None]) / np.sqrt(var[:, None, None] + 1e-5), rtol=1e-9)
    # PyTorch: running stats move by momentum toward the batch mean and the UNBIASED variance
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.5 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.5 + 0.5 * var * 16 / 15, rtol=1e-12)
    assert bn.num_batches_tracked.item() == 1
    bn.eval()
    b = RNG.standard_normal((2, 3, 2, 2))
    ref = (b - bn.running_mean.numpy()[:, None, None]) / np.sqrt(bn.running_var.numpy()[:, None, None] + 1e-5)
    np.testing.assert_allclose(bn(eager.tensor(b)).detach().numpy(), ref, rtol=1e-9)
    assert bn.num_batches_tracked.item() == 1
    x = t64(5, 3)
    assert gradcheck(lambda t: F.batch_norm(t, None, None, training=True), (x,))
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(eager.randn(2, 3))
    with pytest.raises(ValueError, match="more than 1 value per channel"):
        nn.BatchNorm1d(3)(eager.randn(1, 3))
    assert set(nn.BatchNorm1d(2).state_dict()) == {"weight", "bias", "running_mean", "running_var",
                                                   "num_batches_tracked"}


def test_embedding_padding_row_and_errors():
    emb = nn.Embedding(5, 3, padding_idx=1)
    assert emb.weight[1].tolist() == [0.0, 0.0, 0.0]
    idx = eager.tensor([[1, 2, 2], [4, 1, 0]])
    out = emb(idx)
    assert out.shape == (2, 3, 3) and out.grad_fn.name() == "EmbeddingBackward0"
    out.sum().backward()
    # each row gets the number of times it was read; the padding row none (PyTorch)
    assert emb.weight.grad[:, 0].tolist() == [1.0, 0.0, 2.0, 0.0, 1.0]
    with pytest.raises(IndexError, match="index out of range"):
        emb(eager.tensor([5]))
    with pytest.raises(RuntimeError, match="Long, Int"):
        emb(eager.tensor([1.0]))
    w = t64(5, 3)
    assert gradgradcheck(lambda w: F.embedding(eager.tensor([0, 3, 3]), w, padding_idx=0) ** 2, (w,))
    frozen = nn.Embedding.from_pretrained(eager.ones(4, 2))
    assert not frozen.weight.requires_grad


def test_scaled_dot_product_attention_masks():
    q, k, v = t64(2, 4, 3), t64(2, 5, 3), t64(2, 5, 2)
    scores = q.detach().numpy() @ k.detach().numpy().transpose(0, 2, 1) / math.sqrt(3)
    mask = np.tril(np.ones((4, 5), bool))
    s = np.where(mask, scores, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=eager.tensor(mask))
    np.testing.assert_allclose(out.detach().numpy(), p @ v.detach().numpy(), rtol=1e-10)
    causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    np.testing.assert_allclose(causal.detach().numpy(), out.detach().numpy(), rtol=1e-10)  # the same triangle
    assert gradcheck(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.5), (q, k, v))
    with pytest.raises(RuntimeError, match="is_causal"):
        F.scaled_dot_product_attention(q, k, v, attn_mask=eager.tensor(mask), is_causal=True)


def test_multihead_attention_equals_the_per_head_computation():
    eager.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=True).double()
    x = RNG.standard_normal((1, 3, 4))
    out, weights = mha(eager.tensor(x), eager.tensor(x), eager.tensor(x))
    W, B = mha.in_proj_weight.detach().numpy(), mha.in_proj_bias.detach().numpy()
    q, k, v = np.split(x[0] @ W.T + B, 3, axis=-1)
    heads, maps = [], []
    for h in range(2):
        sl = slice(2 * h, 2 * h + 2)
        s = q[:, sl] @ k[:, sl].T / math.sqrt(2)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        heads.append(p @ v[:, sl])
        maps.append(p)
    ref = np.concatenate(heads, -1) @ mha.out_proj.weight.detach().numpy().T + mha.out_proj.bias.detach().numpy()
    np.testing.assert_allclose(out.detach().numpy()[0], ref, rtol=1e-10)
    np.testing.assert_allclose(weights.detach().numpy()[0], np.mean(maps, 0), rtol=1e-10)
    assert sorted(n for n, _ in mha.named_parameters()) == ["in_proj_bias", "in_proj_weight", "out_proj.bias",
                                                            "out_proj.weight"]


def _sig(z):
    return 1 / (1 + np.exp(-z))


def test_recurrent_cells_follow_their_equations():
    eager.manual_seed(0)
    x, h, c = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 4))
    lstm = nn.LSTMCell(3, 4).double()
    P = {n: p.detach().numpy() for n, p in lstm.named_parameters()}
    gates = x @ P["weight_ih"].T + P["bias_ih"] + h @ P["weight_hh"].T + P["bias_hh"]
    i, f, g, o = np.split(gates, 4, -1)
    c2 = _sig(f) * c + _sig(i) * np.tanh(g)
    h2 = _sig(o) * np.tanh(c2)
    hh, cc = lstm(eager.tensor(x), (eager.tensor(h), eager.tensor(c)))
    np.testing.assert_allclose(hh.detach().numpy(), h2, rtol=1e-10)
    np.testing.assert_allclose(cc.detach().numpy(), c2, rtol=1e-10)
    gru = nn.GRUCell(3, 4).double()
    P = {n: p.detach().numpy() for n, p in gru.named_parameters()}
    gi, gh = x @ P["weight_ih"].T + P["bias_ih"], h @ P["weight_hh"].T + P["bias_hh"]
    r = _sig(gi[:, :4] + gh[:, :4])
    z = _sig(gi[:, 4:8] + gh[:, 4:8])
    n = np.tanh(gi[:, 8:] + r * gh[:, 8:])
    np.testing.assert_allclose(gru(eager.tensor(x), eager.tensor(h)).detach().numpy(), (1 - z) * n + z * h, rtol=1e-10)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_recurrent_layers_shapes_names_and_gradients(kind):
    eager.manual_seed(0)
    layer = getattr(nn, kind)(3, 4, num_layers=2, batch_first=True, bidirectional=True).double()
    names = {n for n, _ in layer.named_parameters()}
    assert {"weight_ih_l0", "weight_hh_l1_reverse", "bias_ih_l1", "bias_hh_l0_reverse"} <= names
    x = t64(2, 5, 3)
    out, state = layer(x)
    assert out.shape == (2, 5, 8)
    h = state[0] if kind == "LSTM" else state
    assert h.shape == (4, 2, 4)
    np.testing.assert_allclose(out[:, -1, :4].detach().numpy(), h[2].detach().numpy())  # last layer, forward
    np.testing.assert_allclose(out[:, 0, 4:].detach().numpy(), h[3].detach().numpy())   # last layer, reverse
    small = getattr(nn, kind)(2, 3).double()
    assert gradcheck(lambda t: small(t)[0], (t64(4, 1, 2),))


def test_containers_register_their_contents():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.Linear(2, 1)})
            self.scales = nn.ParameterList([eager.ones(2), nn.Parameter(eager.zeros(1))])
            self.extra = nn.ParameterDict({"bias": eager.zeros(3)})
            self.unflat = nn.Unflatten(1, (2, 3))

    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias", "scales.0", "scales.1",
                     "extra.bias"]
    assert isinstance(net.scales[0], nn.Parameter) and "b" in net.heads and len(net.extra) == 1
    assert net.unflat(eager.zeros(4, 6)).shape == (4, 2, 3)
    state = net.state_dict()
    fresh = Net()
    result = fresh.load_state_dict(state)
    assert result.missing_keys == [] and eager.equal(fresh.heads["a"].weight, net.heads["a"].weight)
    del state["extra.bias"]
    state["surprise"] = eager.zeros(1)
    with pytest.raises(RuntimeError, match='(?s)Unexpected key.*"surprise".*Missing key.*"extra.bias"'):
        fresh.load_state_dict(state)
    loose = fresh.load_state_dict(state, strict=False)
    assert loose.missing_keys == ["extra.bias"] and loose.unexpected_keys == ["surprise"]


@pytest.mark.parametrize("name,module,fn", [
    ("leaky", nn.LeakyReLU(0.2), lambda a: np.where(a > 0, a, 0.2 * a)),
    ("silu", nn.SiLU(), lambda a: a * _sig(a)),
    ("elu", nn.ELU(), lambda a: np.where(a > 0, a, np.expm1(np.minimum(a, 0)))),
    ("softplus", nn.Softplus(), lambda a: np.log1p(np.exp(a))),
    ("mish", nn.Mish(), lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    ("hardtanh", nn.Hardtanh(), lambda a: np.clip(a, -1, 1)),
    ("logsigmoid", nn.LogSigmoid(), lambda a: -np.log1p(np.exp(-a))),
])
def test_activation_modules(name, module, fn):
    a = RNG.standard_normal((3, 4)) * 2
    np.testing.assert_allclose(module(eager.tensor(a)).numpy(), fn(a), rtol=1e-6, atol=1e-7)
    assert gradcheck(lambda t: module(t), (eager.tensor(a, requires_grad=True),))


def test_elu_gradient_is_finite_for_large_inputs():
    x = eager.tensor([1000.0, -3.0], requires_grad=True)
    F.elu(x).sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_against_their_formulas(reduction):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))
    red = {"mean": np.mean, "sum": np.sum, "none": lambda v: v}[reduction]
    x, y = eager.tensor(a), eager.tensor(b)
    d = np.abs(a - b)
    cases = [
        (nn.L1Loss(reduction=reduction)(x, y), red(d)),
        (nn.SmoothL1Loss(reduction=reduction, beta=0.5)(x, y), red(np.where(d < 0.5, 0.5 * d * d / 0.5, d - 0.25))),
        (nn.HuberLoss(reduction=reduction, delta=0.5)(x, y), red(np.where(d < 0.5, 0.5 * d * d, 0.5 * (d - 0.25)))),
        (nn.BCEWithLogitsLoss(reduction=reduction)(x, eager.tensor(_sig(b))),
         red(-(_sig(b) * np.log(_sig(a)) + (1 - _sig(b)) * np.log(1 - _sig(a))))),
        (nn.BCELoss(reduction=reduction)(eager.tensor(_sig(a)), eager.tensor(_sig(b))),
         red(-(_sig(b) * np.log(_sig(a)) + (1 - _sig(b)) * np.log(1 - _sig(a))))),
    ]
    for got, want in cases:
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def test_kl_div_one_hot_pad_normalize_cosine():
    logp = np.log(np.array([[0.2, 0.8], [0.5, 0.5]]))
    target = np.array([[0.0, 1.0], [0.25, 0.75]])
    pointwise = np.where(target > 0, target * (np.log(np.where(target > 0, target, 1)) - logp), 0)
    assert F.kl_div(eager.tensor(logp), eager.tensor(target), reduction="batchmean").item() == pytest.approx(
        pointwise.sum() / 2)
    assert F.one_hot(eager.tensor([0, 2])).tolist() == [[1, 0, 0], [0, 0, 1]]
    assert F.one_hot(eager.tensor([1]), 4).dtype is eager.int64
    with pytest.raises(RuntimeError, match="smaller than num_classes"):
        F.one_hot(eager.tensor([3]), 2)
    a = np.arange(6.0).reshape(1, 2, 3)
    np.testing.assert_array_equal(F.pad(eager.tensor(a), (1, 2), value=-1.0).numpy(),
                                  np.pad(a, ((0, 0), (0, 0), (1, 2)), constant_values=-1))
    np.testing.assert_array_equal(F.pad(eager.tensor(a), (2, 1, 1, 0), mode="reflect").numpy(),
                                  np.pad(a, ((0, 0), (1, 0), (2, 1)), mode="reflect"))
    np.testing.assert_array_equal(F.pad(eager.tensor(a), (1, 1), mode="replicate").numpy(),
                                  np.pad(a, ((0, 0), (0, 0), (1, 1)), mode="edge"))
    np.testing.assert_array_equal(F.pad(eager.tensor(a), (1, 1), mode="circular").numpy(),
                                  np.pad(a, ((0, 0), (0, 0), (1, 1)), mode="wrap"))
    v = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(F.normalize(eager.tensor(v)).numpy(), v / np.linalg.norm(v, axis=1, keepdims=True))
    np.testing.assert_allclose(F.cosine_similarity(eager.tensor(v), eager.tensor(2 * v)).numpy(), np.ones(3))


def test_dropout_variants_train_and_eval():
    x = eager.ones(4, 6, 5, 5)
    eager.manual_seed(0)
    out = nn.Dropout2d(0.5)(x)
    per_channel = out.numpy().reshape(4, 6, -1)
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel.min(-1) == per_channel.max(-1)).all()  # whole channels are kept or dropped
    layer = nn.Dropout1d(0.3).eval()
    sample = x[0]
    assert layer(sample) is sample
    with pytest.raises(ValueError, match="between 0 and 1"):
        nn.Dropout2d(1.5)


def test_clip_grad_norm_value_and_parameter_vectors():
    p, q = nn.Parameter(eager.zeros(2)), nn.Parameter(eager.zeros(3))
    p.grad, q.grad = eager.tensor([3.0, 0.0]), eager.tensor([0.0, 4.0, 0.0])
    total = nn.utils.clip_grad_norm_([p, q], 1.0)
    assert total.item() == pytest.approx(5.0)
    assert math.hypot(*p.grad.tolist(), *q.grad.tolist()) == pytest.approx(1.0, rel=1e-5)
    nn.utils.clip_grad_value_([p, q], 0.1)
    assert max(abs(v) for v in p.grad.tolist() + q.grad.tolist()) <= 0.1 + 1e-7
    vec = nn.utils.parameters_to_vector([p, q])
    assert vec.shape == (5,)
    nn.utils.vector_to_parameters(eager.arange(5.0), [p, q])
    assert p.tolist() == [0.0, 1.0] and q.tolist() == [2.0, 3.0, 4.0]


def test_init_functions():
    w = eager.empty(64, 32)
    nn.init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w.std().item() - math.sqrt(2 / 32)) < 0.03
    nn.init.xavier_normal_(w)
    assert abs(w.std().item() - math.sqrt(2 / 96)) < 0.02
    nn.init.trunc_normal_(w, std=1.0, a=-0.5, b=0.5)
    assert w.abs().max().item() <= 0.5
    nn.init.orthogonal_(w)
    np.testing.assert_allclose(w.numpy().T @ w.numpy(), np.eye(32), atol=1e-5)
    nn.init.eye_(w)
    assert w.trace().item() == 32
    k = eager.empty(4, 4, 3, 3)
    nn.init.dirac_(k)
    x = eager.randn(1, 4, 5, 5)
    np.testing.assert_allclose(F.conv2d(x, k, padding=1).numpy(), x.numpy(), atol=1e-6)  # identity convolution


def test_module_to_moves_parameters_buffers_and_optimizer_state_stays_attached():
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(eager.randn(4, 2)).sum().backward()
    opt.step()
    model.to("cpu").double()
    assert model[1].running_mean.dtype is eager.float64 and model[0].weight.dtype is eager.float64
    assert model[1].num_batches_tracked.dtype is eager.int64
    assert opt.param_groups[0]["params"][0] is model[0].weight


def test_transformer_layers_shapes_names_and_gradients():
    eager.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True).double()
    names = {n for n, _ in layer.named_parameters()}
    assert {"self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight", "linear2.bias",
            "norm1.weight", "norm2.bias"} <= names
    enc = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(8).double())
    assert len(enc.layers) == 2 and enc.layers[0] is not enc.layers[1]
    x = t64(2, 5, 8)
    assert enc(x).shape == (2, 5, 8)
    causal = eager.ones(5, 5, dtype=eager.bool).triu(1)
    # a causal mask: position 0's output depends on position 0 only
    y = x.detach().clone()
    y[:, 1:] = 0.0
    np.testing.assert_allclose(enc(x, mask=causal)[:, 0].detach().numpy(), enc(y, mask=causal)[:, 0].detach().numpy(),
                               rtol=1e-10)
    small = nn.TransformerEncoderLayer(4, 2, dim_feedforward=6, dropout=0.0).double()
    assert gradcheck(lambda t: small(t), (t64(3, 2, 4),))
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0), 1).double()
    assert dec(t64(4, 2, 8), t64(5, 2, 8)).shape == (4, 2, 8)


def test_init_functions_take_a_generator():
    def fill(seed):
        w = eager.empty(4, 3)
        g = eager.Generator().manual_seed(seed)
        nn.init.kaiming_uniform_(w, generator=g)
        return w

    assert eager.equal(fill(1), fill(1)) and not eager.equal(fill(1), fill(2))
    w = eager.empty(1000)
    nn.init.normal_(w, 2.0, 0.5, generator=eager.Generator().manual_seed(0))
    assert abs(w.mean().item() - 2.0) < 0.1 and abs(w.std().item() - 0.5) < 0.05


def test_ceil_mode_pooling_keeps_the_partial_last_window():
    a = np.arange(25.0).reshape(1, 1, 5, 5)
    x = eager.tensor(a)
    # PyTorch: ceil((5 - 2) / 2) + 1 = 3 windows a side; the last holds only row/column 4
    assert F.max_pool2d(x, 2, ceil_mode=True).numpy()[0, 0].tolist() == [[6, 8, 9], [16, 18, 19], [21, 23, 24]]
    avg = F.avg_pool2d(x, 2, ceil_mode=True).numpy()[0, 0]
    assert avg[2, 2] == 24.0 and avg[0, 2] == (4 + 9) / 2 and avg[0, 0] == (0 + 1 + 5 + 6) / 4
    assert nn.MaxPool2d(3, 2, ceil_mode=True)(eager.randn(1, 1, 6, 6)).shape == (1, 1, 3, 3)


@pytest.mark.parametrize("stride,padding,output_padding,groups,dilation", [(2, 1, 1, 1, 1), ((1, 2), 0, 0, 2, 2),
                                                                          (3, 2, (2, 1), 1, 1)])
def test_conv_transpose2d_is_the_adjoint_of_conv2d(stride, padding, output_padding, groups, dilation):
    """<conv2d(x, w), y> == <x, conv_transpose2d(y, w)>: the transposed convolution is the
    adjoint of the convolution with the same weight (its definition in PyTorch)."""
    w = RNG.standard_normal((4, 4 // groups, 3, 2))  # conv2d: (out=4, in/groups); transposed: (in=4, out/groups)
    y = eager.tensor(RNG.standard_normal((2, 4, 4, 5)))
    out = F.conv_transpose2d(y, eager.tensor(w), None, stride, padding, output_padding, groups, dilation)
    x = eager.tensor(RNG.standard_normal(tuple(out.shape)))
    forward = F.conv2d(x, eager.tensor(w), None, stride, padding, dilation, groups)
    assert tuple(forward.shape) == tuple(y.shape)
    assert (forward * y).sum().item() == pytest.approx((x * out).sum().item(), rel=1e-10)
    assert gradcheck(lambda t, k: F.conv_transpose2d(t, k, None, stride, padding, output_padding, groups, dilation),
                     (t64(1, 4, 3, 2), t64(4, 4 // groups, 3, 2)))
    layer = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
    assert layer.weight.shape == (4, 6, 3, 3) and layer(eager.randn(1, 4, 5, 5)).shape == (1, 6, 10, 10)


def test_interpolate_nearest_and_bilinear():
    a = RNG.standard_normal((1, 2, 3, 4))
    x = eager.tensor(a, requires_grad=True)
    # nearest with a whole scale factor repeats each pixel
    np.testing.assert_array_equal(F.interpolate(x, scale_factor=2).detach().numpy(),
                                  np.repeat(np.repeat(a, 2, 2), 2, 3))
    # bilinear with align_corners keeps a linear ramp exactly linear
    ramp = eager.tensor(np.arange(4.0).reshape(1, 1, 1, 4).repeat(2, 2))
    out = F.interpolate(ramp, size=(2, 7), mode="bilinear", align_corners=True)
    np.testing.assert_allclose(out.numpy()[0, 0, 0], np.linspace(0, 3, 7))
    assert gradcheck(lambda t: F.interpolate(t, size=(5, 3), mode="bilinear"), (x,))
    assert nn.Upsample(scale_factor=2, mode="bilinear")(x).shape == (1, 2, 6, 8)
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x, scale_factor=2, align_corners=True)
