"""Activation modules (ReLU, Tanh, Sigmoid, GELU, Softmax, ... RReLU) and MultiheadAttention, as
torch.nn.modules.activation: thin Modules over eager.nn.functional."""
from __future__ import annotations

import math
from typing import Any

from .._factories import empty, zeros
from .._tensor import Tensor
from . import functional as F
from . import init
from .functional.mha import head_weights, scaled_heads
from .module import Module
from .parameter import Parameter


class ReLU(Module):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.tanh(input)


class Sigmoid(Module):
    def forward(self, input: Tensor) -> Tensor:
        return F.sigmoid(input)


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate='{self.approximate}'"


class Softmax(Module):
    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x, dim)), computed stably (not a Softmax: isinstance checks tell them apart,
    as PyTorch's)."""

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.log_softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"



def _simple(name: str, fn, doc: str, **defaults: Any):
    """A Module class calling `fn(input, **settings)`, its settings the constructor's keywords."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)
        settings = dict(defaults)
        for key, value in zip(defaults, args):
            settings[key] = value
        for key, value in kwargs.items():
            if key not in defaults:
                raise TypeError(f"{name}.__init__() got an unexpected keyword argument '{key}'")
            settings[key] = value
        for key, value in settings.items():
            setattr(self, key, value)

    def forward(self, input: Tensor) -> Tensor:
        return fn(input, **{k: getattr(self, k) for k in defaults})

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={getattr(self, k)}" for k in defaults if k != "inplace" or getattr(self, k))

    return type(name, (Module,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr,
                                  "__doc__": doc, "__module__": __name__})


LeakyReLU = _simple("LeakyReLU", F.leaky_relu, "max(0, x) + negative_slope * min(0, x)",
                    negative_slope=0.01, inplace=False)
SiLU = _simple("SiLU", F.silu, "x * sigmoid(x)", inplace=False)
Mish = _simple("Mish", F.mish, "x * tanh(softplus(x))", inplace=False)
ELU = _simple("ELU", F.elu, "x if x > 0 else alpha * (exp(x) - 1)", alpha=1.0, inplace=False)
CELU = _simple("CELU", F.celu, "x if x > 0 else alpha * (exp(x / alpha) - 1)", alpha=1.0, inplace=False)
SELU = _simple("SELU", F.selu, "scale * elu(x, alpha) with the self-normalizing constants", inplace=False)
Hardtanh = _simple("Hardtanh", F.hardtanh, "clamp(x, min_val, max_val)", min_val=-1.0, max_val=1.0, inplace=False)
Hardsigmoid = _simple("Hardsigmoid", F.hardsigmoid, "clamp(x / 6 + 1/2, 0, 1)", inplace=False)
Hardswish = _simple("Hardswish", F.hardswish, "x * hardsigmoid(x)", inplace=False)
LogSigmoid = _simple("LogSigmoid", F.logsigmoid, "log(sigmoid(x)), computed stably")
Softsign = _simple("Softsign", F.softsign, "x / (1 + |x|)")
Tanhshrink = _simple("Tanhshrink", F.tanhshrink, "x - tanh(x)")
Softplus = _simple("Softplus", F.softplus, "log(1 + exp(beta x)) / beta (linear above threshold)",
                   beta=1.0, threshold=20.0)
Softmin = _simple("Softmin", F.softmin, "softmax(-x, dim)", dim=None)
GLU = _simple("GLU", F.glu, "a * sigmoid(b) of the two halves of dim", dim=-1)


Threshold = _simple("Threshold", F.threshold, "x if x > threshold else value", threshold=0.0, value=0.0,
                    inplace=False)
Hardshrink = _simple("Hardshrink", F.hardshrink, "x if |x| > lambd else 0", lambd=0.5)
Softshrink = _simple("Softshrink", F.softshrink, "x -+ lambd beyond +-lambd, else 0", lambd=0.5)
Hardshrink.extra_repr = Softshrink.extra_repr = lambda self: f"{self.lambd}"  # (PyTorch's: `Hardshrink(0.5)`)


class ReLU6(Hardtanh):  # type: ignore[misc,valid-type]
    """clamp(x, 0, 6): a Hardtanh with min_val 0 and max_val 6, as PyTorch's."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def forward(self, input: Tensor) -> Tensor:
        return F.relu6(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class PReLU(Module):
    """max(0, x) + weight * min(0, x) with a learned slope: one, or one per channel (dim 1),
    initialized to `init`. Mirrors torch.nn.PReLU."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        from .._factories import full  # noqa: PLC0415

        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(full((num_parameters,), init, device=device, dtype=dtype))

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W). Mirrors torch.nn.Softmax2d."""

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D instead")
        return F.softmax(input, -3)


class MultiheadAttention(Module):
    """Multi-head attention as PyTorch's: packed in_proj_weight (3E, E) and in_proj_bias,
    out_proj a Linear; inputs (L, N, E), or (N, L, E) with batch_first. Keys and values of
    other widths (kdim, vdim) get their own projections q_proj_weight (E, E), k_proj_weight
    (E, kdim) and v_proj_weight (E, vdim) instead of in_proj_weight, as in PyTorch."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if add_bias_kv or add_zero_attn:
            raise NotImplementedError("MultiheadAttention: add_bias_kv and add_zero_attn are not supported")
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise AssertionError("embed_dim must be divisible by num_heads")
        from .linear import NonDynamicallyQuantizableLinear  # noqa: PLC0415

        self.embed_dim, self.num_heads, self.dropout = embed_dim, num_heads, dropout
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.batch_first = batch_first
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, device=device, dtype=dtype))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, device=device, dtype=dtype))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, device=device, dtype=dtype))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, device=device, dtype=dtype))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(zeros(3 * embed_dim, device=device, dtype=dtype))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if bias:
            init.zeros_(self.out_proj.bias)

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False):
        batched = query.ndim == 3
        if not batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif self.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        for name, t, width in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.shape[-1] != width:
                raise AssertionError(f"MultiheadAttention: {name} has width {t.shape[-1]} (shape {tuple(t.shape)}), "
                                     f"expected {width}; pass kdim/vdim for keys and values of other widths")
        L, N, E = query.shape
        S = key.shape[0]
        h, d = self.num_heads, self.head_dim
        if self._qkv_same_embed_dim:
            w_q, w_k, w_v = self.in_proj_weight.chunk(3)
        else:
            w_q, w_k, w_v = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        b_q = b_k = b_v = None
        if self.in_proj_bias is not None:
            b_q, b_k, b_v = self.in_proj_bias.chunk(3)
        q = F.linear(query, w_q, b_q).reshape(L, N * h, d).transpose(0, 1)  # (N*h, L, d)
        k = F.linear(key, w_k, b_k).reshape(S, N * h, d).transpose(0, 1)
        v = F.linear(value, w_v, b_v).reshape(S, N * h, d).transpose(0, 1)
        mask = _merge_masks(attn_mask, key_padding_mask, is_causal, L, S, N, h, q)
        att, weights = scaled_heads(q, k, v, mask, self.dropout, self.training)
        out = self.out_proj(att.transpose(0, 1).reshape(L, N, E))
        if self.batch_first and batched:
            out = out.transpose(0, 1)
        if not batched:
            out = out.squeeze(1)
        if not need_weights:
            return out, None
        weights = head_weights(weights, N, h, average_attn_weights)
        if not batched:
            weights = weights.squeeze(0)
        return out, weights


def _merge_masks(attn_mask, key_padding_mask, is_causal, L, S, N, h, like):
    """One additive float mask of shape (N*h, L, S) (or broadcastable) from a bool or float
    attn_mask (True/-inf: not allowed), a key padding mask and is_causal."""
    from .. import _functional as _F  # noqa: PLC0415
    from .._factories import ones  # noqa: PLC0415

    neg = -math.inf
    total = None

    def additive(mask):
        if mask.dtype.name == "bool":
            return _F.where(mask, neg, 0.0).to(like.dtype)
        return mask.to(like.dtype)

    if is_causal and attn_mask is None:
        attn_mask = ones(L, S, dtype=_bool(), device=like.device).triu(1)
    if attn_mask is not None:
        m = additive(attn_mask)
        if m.ndim == 2:
            m = m.unsqueeze(0)
        total = m
    if key_padding_mask is not None:
        kp = additive(key_padding_mask).reshape(N, 1, 1, S).expand(N, h, 1, S).reshape(N * h, 1, S)
        total = kp if total is None else total + kp
    return total


def _bool():
    from gmbase import dtypes as _dtypes  # noqa: PLC0415

    return _dtypes.bool_


class RReLU(Module):
    """Randomized leaky ReLU: a random negative slope from U(lower, upper) per element while
    training, (lower + upper) / 2 in eval mode. Mirrors torch.nn.RReLU."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
