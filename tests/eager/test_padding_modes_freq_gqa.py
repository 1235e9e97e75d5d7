"""Against PyTorch: Conv1d/2d/3d padding modes with padding="same" and int paddings,
Embedding's scale_grad_by_freq (module and functional), and scaled_dot_product_attention
with enable_gqa (values, gradients, and the errors PyTorch raises)."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

CONV_CASES = [(nd, mode, pad, k, dil)
              for nd in (1, 2, 3)
              for mode in ("zeros", "circular", "reflect", "replicate")
              for pad, k, dil in (("same", 3, 1), ("same", 4, 2), (1, 3, 1), ("valid", 3, 1))
              if not (nd == 3 and pad in ("valid", 1))]


def _conv(lib, nd, mode, pad, k, dil, x, params=None):
    conv = getattr(lib.nn, f"Conv{nd}d")(3, 2, k, padding=pad, padding_mode=mode, dilation=dil).double()
    if params is not None:
        with lib.no_grad():
            conv.weight.copy_(lib.tensor(params[0]))
            conv.bias.copy_(lib.tensor(params[1]))
    xt = lib.tensor(x, requires_grad=True)
    y = conv(xt)
    y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
    return (y.detach().numpy(), xt.grad.numpy(), conv.weight.grad.numpy(), conv.bias.grad.numpy(),
            repr(conv), (conv.weight.detach().numpy(), conv.bias.detach().numpy()))


@pytest.mark.parametrize("nd,mode,pad,k,dil", CONV_CASES)
def test_conv_padding_mode_matches_pytorch(nd, mode, pad, k, dil):
    x = np.random.default_rng(nd).standard_normal((2, 3) + (6 if nd == 3 else 7,) * nd)
    e = _conv(eager, nd, mode, pad, k, dil, x)
    t = _conv(torch, nd, mode, pad, k, dil, x, params=e[5])
    for a, b in zip(e[:4], t[:4]):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    assert e[4] == t[4]


def test_same_padding_with_a_mode_reads_the_wrapped_values():
    # a circular "same" conv with a kernel that picks the left neighbour shifts the signal
    conv = eager.nn.Conv1d(1, 1, 3, padding="same", padding_mode="circular", bias=False)
    with eager.no_grad():
        conv.weight.copy_(eager.tensor([[[1.0, 0.0, 0.0]]]))
    y = conv(eager.tensor([[[1.0, 2.0, 3.0, 4.0]]]))
    assert y.reshape(-1).tolist() == [4.0, 1.0, 2.0, 3.0]


def _embedding(lib, idx, padding_idx, functional):
    w0 = np.arange(12.0).reshape(6, 2) / 5
    w = lib.tensor(w0, requires_grad=True)
    i = lib.tensor(idx)
    if functional:
        y = lib.nn.functional.embedding(i, w, padding_idx=padding_idx, scale_grad_by_freq=True)
    else:
        emb = lib.nn.Embedding(6, 2, padding_idx=padding_idx, scale_grad_by_freq=True).double()
        with lib.no_grad():
            emb.weight.copy_(w)
        w = emb.weight
        y = emb(i)
    y.backward(lib.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape))))
    return y.detach().numpy(), w.grad.numpy()


@pytest.mark.parametrize("functional", [False, True], ids=["Embedding", "F.embedding"])
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_scale_grad_by_freq_matches_pytorch(functional, padding_idx):
    idx = np.array([[1, 3, 3, 0], [3, 1, 5, 3]])
    (ye, ge), (yt, gt) = (_embedding(eager, idx, padding_idx, functional),
                          _embedding(torch, idx, padding_idx, functional))
    np.testing.assert_allclose(ye, yt, rtol=1e-12)
    np.testing.assert_allclose(ge, gt, rtol=1e-12, atol=1e-15)


def test_scale_grad_by_freq_divides_by_the_count():
    w = eager.ones(4, 1, requires_grad=True)
    eager.nn.functional.embedding(eager.tensor([2, 2, 2, 0]), w, scale_grad_by_freq=True).sum().backward()
    assert w.grad.reshape(-1).tolist() == [1.0, 0.0, 1.0, 0.0]  # three 1s over a count of 3


def test_embedding_repr_shows_scale_grad_by_freq():
    assert repr(eager.nn.Embedding(3, 2, scale_grad_by_freq=True)) == repr(
        torch.nn.Embedding(3, 2, scale_grad_by_freq=True))


@pytest.mark.parametrize("kv_heads", [(2, 3), (1, 1), (6, 2), (3, 6)])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_enable_gqa_repeats_key_and_value_heads_like_pytorch(kv_heads, causal):
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 6, 4, 8))
    k, v = rng.standard_normal((2, kv_heads[0], 5, 8)), rng.standard_normal((2, kv_heads[1], 5, 3))
    out = []
    for lib in (eager, torch):
        ts = [lib.tensor(a, requires_grad=True) for a in (q, k, v)]
        y = lib.nn.functional.scaled_dot_product_attention(*ts, enable_gqa=True, is_causal=causal)
        y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
        out.append([y.detach().numpy()] + [t.grad.numpy() for t in ts])
    for a, b in zip(*out):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_sdpa_gqa_unbatched_and_errors_like_pytorch():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((6, 4, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 3))
    e = eager.nn.functional.scaled_dot_product_attention(*map(eager.tensor, (q, k, v)), enable_gqa=True)
    t = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)), enable_gqa=True)
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-10)
    q4, k4 = eager.randn(2, 6, 4, 8), eager.randn(2, 4, 5, 8)
    with pytest.raises(RuntimeError, match="Number of heads in key and value must divide"):
        eager.nn.functional.scaled_dot_product_attention(q4, k4, eager.randn(2, 4, 5, 3), enable_gqa=True)
    with pytest.raises(RuntimeError):  # without enable_gqa the head counts must match (broadcast)
        eager.nn.functional.scaled_dot_product_attention(q4, k4, eager.randn(2, 4, 5, 3))
