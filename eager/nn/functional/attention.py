"""Scaled dot-product attention of `eager.nn.functional`."""
from __future__ import annotations

import math as _math

from ... import _functional as _F
from ..._factories import ones as _ones
from ..._tensor import Tensor
from .dropouts import dropout


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """softmax(q k^T * scale + mask) v over the last two dims. A bool mask keeps the True
    positions (others get -inf); a float mask is added; is_causal keeps j <= i.

    With enable_gqa (grouped-query attention), key and value may have fewer heads (dim -3)
    than query, each a divisor of query's: their heads are repeated (repeat_interleave) to
    query's count, as PyTorch does."""
    if enable_gqa and query.ndim >= 3:
        hq = query.shape[-3]
        for name in ("key", "value"):
            t = key if name == "key" else value
            if t.ndim < 3 or t.shape[-3] == hq:
                continue
            if t.shape[-3] == 0 or hq % t.shape[-3]:
                raise RuntimeError(f"Number of heads in key and value must divide the number of heads in query "
                                   f"(scaled_dot_product_attention with enable_gqa=True: query has {hq} heads, "
                                   f"{name} has {t.shape[-3]})")
            t = t.repeat_interleave(hq // t.shape[-3], dim=-3)
            key, value = (t, value) if name == "key" else (key, t)
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / _math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _F.matmul(query, key.transpose(-2, -1)) * scale
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        causal = _ones(L, S, dtype=bool_dtype(), device=query.device).tril()
        scores = scores.masked_fill(causal.logical_not(), -_math.inf)
    if attn_mask is not None:
        if attn_mask.dtype is bool_dtype():
            scores = scores.masked_fill(attn_mask.logical_not(), -_math.inf)
        else:
            scores = scores + attn_mask
    weights = _F.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return _F.matmul(weights, value)


def bool_dtype():
    """The eager bool dtype (a helper for code that cannot name `bool` as a dtype); no PyTorch counterpart."""
    from gmbase import dtypes as _dtypes  # noqa: PLC0415

    return _dtypes.bool_
