"""torch.nn.functional.multi_head_attention_forward: nn.MultiheadAttention's computation with
every weight passed in (programs that keep their own projection tensors call it directly).

The same composition as the module's forward (projections, per-head scaled dot products, one
additive mask, softmax, dropout, output projection), plus what only the functional form takes:
bias_k / bias_v rows appended to the keys and values, add_zero_attn's zero key and value, and
static_k / static_v given per head."""
from __future__ import annotations

import math
from typing import Any

from ..._tensor import Tensor
from .activations import softmax
from .dropouts import dropout
from .linear_maps import linear
from .vision import pad


def multi_head_attention_forward(
        query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
        in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None, bias_v: Tensor | None,
        add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor, out_proj_bias: Tensor | None,
        training: bool = True, key_padding_mask: Tensor | None = None, need_weights: bool = True,
        attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False, q_proj_weight: Tensor | None = None,
        k_proj_weight: Tensor | None = None, v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
        static_v: Tensor | None = None, average_attn_weights: bool = True, is_causal: bool = False) -> Any:
    """(attn_output, attn_weights) for query (L, N, E) or (L, E), key/value (S, N, .) or (S, .).
    Mirrors torch.nn.functional.multi_head_attention_forward."""
    from ... import _functional as _F  # noqa: PLC0415
    from ..activation import _merge_masks  # noqa: PLC0415

    batched = query.dim() == 3
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    L, N, E = query.shape
    if E != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {E}")
    if E % num_heads:
        raise AssertionError(f"embed_dim {E} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    h, d = num_heads, E // num_heads
    if use_separate_proj_weight:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                                 "v_proj_weight is None")
        w_q, w_k, w_v = q_proj_weight, k_proj_weight, v_proj_weight
    else:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        w_q, w_k, w_v = in_proj_weight.chunk(3)
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    q = linear(query, w_q, b_q)
    k = linear(key, w_k, b_k)
    v = linear(value, w_v, b_v)
    mask = _merge_masks(attn_mask, key_padding_mask, False, L, key.shape[0], N, h, q)
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key or value.")
        k = _F.cat([k, bias_k.reshape(1, 1, E).expand(1, N, E)], 0)
        v = _F.cat([v, bias_v.reshape(1, 1, E).expand(1, N, E)], 0)
        mask = None if mask is None else pad(mask, (0, 1))
    q = q.reshape(L, N * h, d).transpose(0, 1)  # (N*h, L, d)
    k = static_k if static_k is not None else k.reshape(k.shape[0], N * h, d).transpose(0, 1)
    v = static_v if static_v is not None else v.reshape(v.shape[0], N * h, d).transpose(0, 1)
    if add_zero_attn:
        k = _F.cat([k, k.new_zeros((N * h, 1, d))], 1)
        v = _F.cat([v, v.new_zeros((N * h, 1, d))], 1)
        mask = None if mask is None else pad(mask, (0, 1))
    att, weights = scaled_heads(q, k, v, mask, dropout_p, training)
    out = linear(att.transpose(0, 1).reshape(L, N, E), out_proj_weight, out_proj_bias)
    if not batched:
        out = out.squeeze(1)
    if not need_weights:
        return out, None
    weights = head_weights(weights, N, h, average_attn_weights)
    return out, (weights if batched else weights.squeeze(0))


def scaled_heads(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float,
                 training: bool) -> tuple[Tensor, Tensor]:
    """(softmax(q k^T / sqrt(d) + mask) @ v, the softmax) of (N*h, L, d) heads, the softmax
    dropped out in training: the attention nn.MultiheadAttention and
    multi_head_attention_forward both run."""
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if mask is not None:
        scores = scores + mask
    weights = softmax(scores, -1)
    if dropout_p > 0.0 and training:
        weights = dropout(weights, dropout_p, True)
    return weights @ v, weights


def head_weights(weights: Tensor, n: int, h: int, average: bool) -> Tensor:
    """The (N*h, L, S) attention weights as (N, h, L, S), or their mean over the h heads."""
    weights = weights.reshape(n, h, weights.shape[-2], weights.shape[-1])
    return weights.mean(1) if average else weights
