"""`eager.nn.functional`: activations and losses as PyTorch spells them.

Everything here is composed from eager's own ops (eager.* functions and Tensor methods),
never from raw arrays: the gradients then come from the op registry, work to any order,
and static tracing sees ordinary ops."""
from __future__ import annotations

import warnings
from typing import Any

from .. import _functional as _F
from .._factories import arange, rand_like, zeros_like
from .._tensor import Tensor
from ..autograd.function import Function

_REDUCTIONS = ("mean", "sum", "none")


# -- activations -------------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0), elementwise (in place with `inplace=True`). Mirrors torch.nn.functional.relu."""
    return input.relu_() if inplace else _F.relu(input)


def tanh(input: Tensor) -> Tensor:
    """The hyperbolic tangent, elementwise. Mirrors torch.nn.functional.tanh."""
    return _F.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    """1 / (1 + exp(-input)), elementwise. Mirrors torch.nn.functional.sigmoid."""
    return _F.sigmoid(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """The Gaussian error linear unit x * Phi(x); approximate='tanh' uses the tanh formula.

    Mirrors torch.nn.functional.gelu."""
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _F.gelu(input, approximate=approximate)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * input)) / beta, linear where beta * input > threshold.

    Mirrors torch.nn.functional.softplus."""
    return _F.softplus(input, beta, threshold)


def _implicit_dim(name: str, ndim: int) -> int:
    """PyTorch's legacy choice when dim is omitted (with the same deprecation warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """exp(input) normalized to sum to 1 along `dim`.

    Without `dim`, PyTorch's deprecated implicit choice (with its warning). Mirrors torch.nn.functional.softmax."""
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim)
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """log(softmax(input, dim)), computed stably.

    Without `dim`, PyTorch's deprecated implicit choice (with its warning). Mirrors torch.nn.functional.log_softmax."""
    if dim is None:
        dim = _implicit_dim("log_softmax", input.ndim)
    return _F.log_softmax(input, dim, dtype=dtype)


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero each element with probability p and scale the rest by 1/(1-p) (training only)."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return input * 0.0
    keep = (rand_like(input) >= p).to(input.dtype)
    return input * (keep * (1.0 / (1.0 - p)))


# -- layers ---------------------------------------------------------------------------------
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x W^T + b, with W of shape (out_features, in_features) as in PyTorch.

    A batch of more than one leading dim is flattened to one matrix first: NumPy's matmul
    of a 3-D stack by a matrix loops over the stack (about 8x slower than one 2-D product).
    The nodes are named as PyTorch's: AddmmBackward0 for the product plus bias, then
    ViewBackward0 (UnsafeViewBackward0 without bias) for a batch reshaped back."""
    if input.ndim != 2 and weight.ndim == 2 and bias is not None:
        lead = tuple(input.shape[:-1])
        out = linear(input.reshape(-1, input.shape[-1]), weight, bias)
        return out.reshape(*lead, weight.shape[0])
    if input.ndim > 2 and weight.ndim == 2:
        lead = tuple(input.shape[:-1])
        out = _F.matmul(input.reshape(-1, input.shape[-1]), weight.t())
        return _F._renamed(out.reshape(*lead, weight.shape[0]), "UnsafeViewBackward0")
    out = _F.matmul(input, weight.t() if weight.ndim == 2 else weight)
    if bias is None:
        return out
    return _F._renamed(out + bias, "AddmmBackward0") if input.ndim == 2 and weight.ndim == 2 else out + bias


# -- losses -----------------------------------------------------------------------------------
def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise ValueError(f"{reduction} is not a valid value for reduction (expected one of {_REDUCTIONS})")


def mse_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The squared error (input - target) ** 2, reduced; warns when the shapes differ (broadcasting).

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.mse_loss."""
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=2)
    diff = input - target
    return _F._renamed(_reduce(diff * diff, reduction), "MseLossBackward0")


def _classes_last(input: Tensor, target: Tensor) -> tuple[Tensor, Tensor, tuple]:
    """(N, C, d1, ...) logits and (N, d1, ...) targets as (M, C) and (M,), plus the shape
    the unreduced loss must take back."""
    if input.ndim == 1:  # one sample without a batch dimension
        return input.unsqueeze(0), target.reshape(1), ()
    if input.ndim == 2:
        return input, target, (input.shape[0],)
    n_classes = input.shape[1]
    moved = input.permute(0, *range(2, input.ndim), 1)
    return moved.reshape(-1, n_classes), target.reshape(-1), tuple(target.shape)


def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
             reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of class indices, given log-probabilities `input` (N, C);
    its node is named NllLossBackward0, as PyTorch's (cross_entropy's result shows it)."""
    return _F._renamed(_nll_loss(input, target, weight, ignore_index, reduction), "NllLossBackward0")


def _nll_loss(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str) -> Tensor:
    if target.is_floating_point():
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name}: nll_loss takes class "
                           "indices (pass class probabilities to cross_entropy instead)")
    logp, flat_target, out_shape = _classes_last(input, target)
    if logp.shape[0] != flat_target.shape[0]:
        raise ValueError(f"Expected input batch_size ({logp.shape[0]}) to match target batch_size "
                         f"({flat_target.shape[0]}).")
    n_classes = logp.shape[1]
    valid = flat_target != ignore_index
    safe_target = _F.where(valid, flat_target, 0)
    # Checks that read the target's values run only on an eager Tensor: a tensor-like without
    # data (static's tracer) would fail the read, and the compiled graph cannot raise anyway.
    has_data = isinstance(target, Tensor)
    if has_data and safe_target.numel() and (int(safe_target.min()) < 0 or int(safe_target.max()) >= n_classes):
        raise IndexError(f"Target out of bounds: class indices must lie in [0, {n_classes})")
    rows = logp.shape[0]
    if type(rows) is int:
        picked = logp[arange(rows, device=logp.device), safe_target]
    else:  # a symbolic batch size (a compiled function's dynamic dimension): no arange of its size
        picked = logp.gather(1, safe_target.unsqueeze(1)).squeeze(1)
    # With no weight and no ignored target the loss is a plain mean of -picked; telling needs
    # the data, so a traced target takes the masked path below, which gives the same value.
    plain = weight is None and has_data and bool(valid.all())
    if plain:
        loss = -picked
        return _reduce(loss.reshape(*out_shape), reduction)
    w = valid.to(logp.dtype)
    if weight is not None:
        w = w * weight[safe_target]
    loss = -(picked * w)
    if reduction == "mean":
        return _weighted_mean(loss.sum(), w.sum())
    return _reduce(loss.reshape(*out_shape), reduction)


def _weighted_mean(total: Tensor, total_weight: Tensor) -> Tensor:
    """total / total_weight with PyTorch's convention when every target is ignored (total
    weight 0): the value is nan but the gradient is 0, not nan (0/0 would make both nan)."""
    empty = total_weight == 0
    return total / _F.where(empty, 1.0, total_weight) + _F.where(empty, float("nan"), 0.0)


def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """Softmax cross-entropy of logits `input` (N, C) (or (C,), or (N, C, d1, ...)) against
    class indices, or against class probabilities when `target` is floating point."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (expected one of {_REDUCTIONS})")
    class_dim = 0 if input.ndim == 1 else 1
    logp = _F.log_softmax(input, class_dim)
    n_classes = input.shape[class_dim]
    if target.is_floating_point():
        if tuple(target.shape) != tuple(input.shape):
            raise RuntimeError(f"cross_entropy: class-probability targets must have the input's shape "
                               f"{tuple(input.shape)}, got {tuple(target.shape)}")
        if label_smoothing:
            target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
        per_class = logp * target if weight is None else logp * target * _class_view(weight, input.ndim)
        loss = -_F.sum(per_class, class_dim)
        # mean: over samples, not weights; the nodes named as PyTorch's (its sum negates last)
        return loss if reduction == "none" else _F._renamed(_reduce(loss, reduction),
                                                               "DivBackward1" if reduction == "mean" else "NegBackward0")
    loss = nll_loss(logp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return loss
    # PyTorch's mix: (1 - eps) * nll + eps * mean over classes of -log p (weighted, masked).
    smooth = -_F.sum(logp if weight is None else logp * _class_view(weight, input.ndim), class_dim)
    valid = (target != ignore_index).to(logp.dtype)
    smooth = smooth * valid
    if reduction == "mean":
        denom = valid.sum() if weight is None else (weight[_F.where(target != ignore_index, target, 0)] * valid).sum()
        smooth = _weighted_mean(smooth.sum(), denom)
    else:
        smooth = _reduce(smooth, reduction)
    return loss * (1.0 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _class_view(weight: Tensor, ndim: int) -> Tensor:
    """Per-class weights shaped to broadcast against (N, C, d1, ...) (or (C,))."""
    if ndim <= 1:
        return weight
    return weight.reshape(1, -1, *([1] * (ndim - 2)))




# == added with the PyTorch-programs surface =======================================================
import math as _math  # noqa: E402

from .._factories import ones as _ones  # noqa: E402
from ..ops import conv as _conv  # noqa: E402
from ..ops import indexing as _indexing  # noqa: E402


def _data_range(t) -> tuple | None:
    """(min, max) of an eager tensor's values for input checks, read from its array (no
    op is recorded, so a trace that captured the tensor is not asked for data); None for
    a traced value or an empty tensor, which skip the check."""
    if not isinstance(t, Tensor) or t._data.size == 0:
        return None
    return t._data.min().item(), t._data.max().item()


def _pair(v, n: int = 2) -> tuple:
    return tuple(v) if isinstance(v, (tuple, list)) else (v,) * n


# -- activations -------------------------------------------------------------------------------
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), elementwise.

    `inplace` is accepted for compatibility; the result is always a new tensor. Mirrors torch.nn.functional.silu."""
    return _F._renamed(input * _F.sigmoid(input), "SiluBackward0")


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x)), elementwise.

    `inplace` is accepted for compatibility; the result is always a new tensor. Mirrors torch.nn.functional.mish."""
    return _F._renamed(input * _F.tanh(_F.softplus(input)), "MishBackward0")


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x where x > 0, else negative_slope * x.

    `inplace` is accepted for compatibility; the result is always a new tensor.
    Mirrors torch.nn.functional.leaky_relu."""
    return _F._renamed(_F.where(input > 0, input, input * negative_slope), "LeakyReluBackward0")


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x) - 1).

    `inplace` is accepted for compatibility; the result is always a new tensor. Mirrors torch.nn.functional.elu."""
    # expm1 of x clipped to <= 0: the branch where() drops never overflows (its zero gradient
    # stays 0, not nan). The clip is a where, not minimum(x, 0): at x = 0 PyTorch takes the
    # negative branch's whole gradient (alpha), where minimum would split it in two.
    return _F._renamed(_F.where(input > 0, input, _F.expm1(_nonpositive(input)) * alpha), "EluBackward0")


def _nonpositive(input: Tensor) -> Tensor:
    """x where x <= 0, else 0, with the gradient of x passing wherever x <= 0 (0 included)."""
    return _F.where(input > 0, 0.0, input)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalizing constants.

    `inplace` is accepted for compatibility; the result is always a new tensor. Mirrors torch.nn.functional.selu."""
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    return _F._renamed(elu(input, alpha) * scale, "EluBackward0")


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where x > 0, else alpha * (exp(x / alpha) - 1).

    `inplace` is accepted for compatibility; the result is always a new tensor. Mirrors torch.nn.functional.celu."""
    return _F._renamed(_F.where(input > 0, input, _F.expm1(_nonpositive(input) / alpha) * alpha), "CeluBackward0")


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """input clamped to [min_val, max_val].

    The gradient is 1 strictly inside the interval and 0 at its bounds, as PyTorch's
    (clamp passes it at the bounds, so this is not clamp).
    `inplace` is accepted for compatibility; the result is always a new tensor. Mirrors torch.nn.functional.hardtanh."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) cannot be greater than max_val ({max_val})")
    return _F._renamed(_F.where(input <= min_val, min_val, _F.where(input >= max_val, max_val, input)),
                       "HardtanhBackward0")


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6), elementwise.

    `inplace` is accepted for compatibility; the result is always a new tensor. Mirrors torch.nn.functional.relu6."""
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """clamp(x / 6 + 1/2, 0, 1), elementwise.

    `inplace` is accepted for compatibility; the result is always a new tensor.
    Its gradient is 1/6 strictly inside (-3, 3) and 0 at and beyond ±3, as PyTorch's.
    Mirrors torch.nn.functional.hardsigmoid."""
    return _F._renamed(_F.where(input <= -3.0, 0.0, _F.where(input >= 3.0, 1.0, (input + 3.0) / 6.0)),
                       "HardsigmoidBackward0")


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * hardsigmoid(x), elementwise.

    `inplace` is accepted for compatibility; the result is always a new tensor.
    PyTorch's gradient convention: 0 for x <= -3, x / 3 + 1/2 for -3 < x < 3, 1 for x >= 3.
    Mirrors torch.nn.functional.hardswish."""
    return _F._renamed(_F.where(input <= -3.0, 0.0, _F.where(input >= 3.0, input, input * (input + 3.0) / 6.0)),
                       "HardswishBackward0")


def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), computed stably; `log_sigmoid` is the same. Mirrors torch.nn.functional.logsigmoid."""
    return _F._renamed(_F._row_major(-_F.softplus(-input)), "LogSigmoidBackward0")  # row-major, as PyTorch's


log_sigmoid = logsigmoid


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """input where input > threshold, else value. Mirrors torch.nn.functional.threshold."""
    return _F.where(input > threshold, input, value)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input where |input| > lambd, else 0. Mirrors torch.nn.functional.hardshrink."""
    return _F.where(_F.abs(input) > lambd, input, 0.0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input - lambd above lambd, input + lambd below -lambd, else 0. Mirrors torch.nn.functional.softshrink."""
    return _F.where(input > lambd, input - lambd, _F.where(input < -lambd, input + lambd, 0.0))


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """input where input > 0, else weight * input (so at 0 the gradient is weight, as
    PyTorch's), weight (one value or one per channel, dim 1) broadcast over the rest.
    Mirrors torch.nn.functional.prelu."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.ndim > 1 else input.shape[0]
        if weight.numel() != channels:
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. Found parameter numbers "
                               f"= {weight.numel()} and channel size = {channels}.")
        if input.ndim > 1:
            weight = weight.reshape(-1, *([1] * (input.ndim - 2)))
    return _F.where(input > 0, input, input * weight)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r): channels moved into space. Mirrors torch.nn.functional.pixel_shuffle."""
    r = int(upscale_factor)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W): the inverse of pixel_shuffle. Mirrors torch.nn.functional.pixel_unshuffle."""
    r = int(downscale_factor)
    *lead, c, h, w = input.shape
    if h % r or w % r:
        raise RuntimeError(f"pixel_unshuffle expects height and width to be divisible by downscale_factor, but "
                           f"input.size(-2)={h} and input.size(-1)={w} are not divisible by {r}")
    n = len(lead)
    x = input.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|), elementwise. Mirrors torch.nn.functional.softsign."""
    return input / (_F.abs(input) + 1.0)


def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x), elementwise. Mirrors torch.nn.functional.tanhshrink."""
    return input - _F.tanh(input)


def softmin(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    """softmax(-input, dim): weights that favour the smallest values. Mirrors torch.nn.functional.softmin."""
    return softmax(-input, dim, dtype=dtype)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """The gated linear unit a * sigmoid(b), with a and b the two halves of input along `dim`.

    Mirrors torch.nn.functional.glu."""
    a, b = _F.chunk(input, 2, dim)
    return a * _F.sigmoid(b)


# -- dropout variants ----------------------------------------------------------------------------
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool = False) -> Tensor:
    """PyTorch's feature_dropout: one draw per (dim 0, dim 1) pair, broadcast over the rest,
    so a 2-D input drops single elements. Identity when not training or p == 0."""
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    if p == 1.0:
        mask = input.new_zeros(shape)
    else:
        mask = (rand_like(input.new_zeros(shape)) >= p).to(input.dtype) * (1.0 / (1.0 - p))
    return input.mul_(mask) if inplace else input * mask


def _unbatched_feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    """feature dropout of input with a batch dimension of 1 added (its dim 0 is the channel)."""
    out = _feature_dropout(input.unsqueeze(0), p, training)
    out = out.squeeze(0)
    return input.copy_(out) if inplace and out is not input else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, L) or (C, L) input with probability p, scaling the rest by 1/(1-p).

    Other ranks raise RuntimeError, as PyTorch. Identity when not training.
    Mirrors torch.nn.functional.dropout1d."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that "
                           "dropout1d exists to provide channel-wise dropout on inputs with 1 spatial dimension, a "
                           "channel dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    if input.ndim == 2:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, H, W) input with probability p, scaling the rest by 1/(1-p).

    PyTorch's rank rules: other ranks warn (deprecated) and still drop over dims (0, 1), so
    a 2-D input drops single elements; a 3-D input warns and is read as (N, C, L).
    Identity when not training. Mirrors torch.nn.functional.dropout2d."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
                      "inputs).", UserWarning, stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior "
                      "is desired - input is interpreted as shape (N, C, L), where C is the channel dim. This "
                      "behavior will change in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout behavior, please "
                      "switch to using dropout1d instead.", UserWarning, stacklevel=2)
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zero whole channels of a (N, C, D, H, W) or (C, D, H, W) input with probability p, scaling the rest.

    PyTorch's rank rules: other ranks warn (deprecated) and are taken as unbatched (dim 0 the
    channel). Identity when not training. Mirrors torch.nn.functional.dropout3d."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result "
                      "in an error in a future release. To retain the behavior and silence this warning, please use "
                      "dropout instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D "
                      "inputs).", UserWarning, stacklevel=2)
    if input.ndim != 5:
        return _unbatched_feature_dropout(input, p, training, inplace)
    return _feature_dropout(input, p, training, inplace)


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalizing mean and variance."""
    if not training or p == 0.0:
        return input
    alpha_p = -1.7580993408473766
    keep = (rand_like(input) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    return (input * keep + alpha_p * (1.0 - keep)) * a + b


# -- embedding, normalization -----------------------------------------------------------------------
def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` picked by the integer tensor `input`; `padding_idx`'s row gets no gradient.

    With `max_norm`, each row the lookup reads whose `norm_type`-norm exceeds max_norm is first
    scaled in place to norm max_norm (by max_norm / (norm + 1e-7), as PyTorch), so `weight`
    changes: a weight saved for an earlier backward then fails its version check, as in PyTorch."""
    if input.is_floating_point() or input.dtype.name == "bool":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {input.dtype.name} instead (while checking arguments for embedding)")
    n = weight.shape[0]
    if padding_idx is not None:
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
    span = _data_range(input)
    if span is not None:
        lo, hi = span
        if lo < 0 or hi >= n:
            raise IndexError(f"embedding: index out of range in self (indices span [{lo}, {hi}] for a weight of "
                             f"{n} rows); indices must lie in [0, {n})")
    if input.dtype.name != "int64":
        input = input.long()
    if max_norm is not None:
        _embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    if scale_grad_by_freq and weight.requires_grad:
        return _EmbeddingScaledByFreq.apply(weight, input, padding_idx)
    return _indexing.EMBEDDING(weight, input, padding_idx=padding_idx)


class _EmbeddingScaledByFreq(Function):
    """embedding with `scale_grad_by_freq`: each position's gradient is divided by how often
    its index occurs in this mini-batch before it is summed into the row (PyTorch's
    embedding_dense_backward). The counts are data, so this is eager's own node rather than
    a composition (a compiled graph sees the lookup and the count as separate ops)."""

    @staticmethod
    def forward(ctx, weight: Tensor, input: Tensor, padding_idx: int | None) -> Tensor:
        ctx.save_for_backward(input)
        ctx.padding_idx, ctx.rows = padding_idx, weight.shape[0]
        return _indexing.EMBEDDING(weight, input, padding_idx=padding_idx)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        (input,) = ctx.saved_tensors
        flat = input.reshape(-1)
        counts = grad.new_zeros(ctx.rows).index_add(0, flat, grad.new_ones(flat.shape[0]))
        rows_grad = grad.reshape(flat.shape[0], -1) / counts[flat].unsqueeze(-1)
        if ctx.padding_idx is not None:
            rows_grad = rows_grad * (flat != ctx.padding_idx).to(grad.dtype).unsqueeze(-1)
        return grad.new_zeros(ctx.rows, rows_grad.shape[1]).index_add(0, flat, rows_grad), None, None


def _embedding_renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows of `weight` that `input` reads down to norm max_norm, in place and
    unrecorded (PyTorch's embedding_renorm_). Which rows is data: eager only."""
    from .._grad_mode import no_grad  # noqa: PLC0415

    with no_grad():
        rows = input.reshape(-1).unique()
        picked = weight[rows]
        norms = picked.norm(norm_type, 1, True)
        scale = _F.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight[rows] = picked * scale.to(weight.dtype)


def _normalized_dims(name: str, input: Tensor, normalized_shape) -> tuple:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or len(shape) > input.ndim:
        raise RuntimeError(f"{name}: Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size {list(input.shape)}")
    return tuple(range(input.ndim - len(shape), input.ndim))


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """(x - mean) / sqrt(var + eps) over the trailing normalized_shape dims, then * weight + bias."""
    dims = _normalized_dims("layer_norm", input, normalized_shape)
    normalized = list(input.shape[input.ndim - len(dims):])
    for what, t in (("weight", weight), ("bias", bias)):
        if t is not None and list(t.shape) != normalized:
            raise RuntimeError(f"layer_norm: Expected {what} to be of same shape as normalized_shape, but got "
                               f"{what} of shape {list(t.shape)} and normalized_shape = {normalized}")
    if weight is not None and bias is not None:  # the common case: one fused op, one fused gradient
        return _conv.LAYER_NORM(input, weight, bias, ndim=len(dims), eps=float(eps))
    out = _conv.NORMALIZE(input, dims=dims, eps=float(eps))
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """input / sqrt(mean(input ** 2) + eps) over the trailing `normalized_shape` dims, times `weight`.

    When `eps` is None it is float32's machine epsilon, whatever the dtype (PyTorch uses the input dtype's).
    Mirrors torch.nn.functional.rms_norm."""
    dims = _normalized_dims("rms_norm", input, normalized_shape)
    eps = 1.1920928955078125e-07 if eps is None else eps  # PyTorch: the dtype's eps when None
    out = input * _F.rsqrt(_F.mean(input * input, dims, True) + eps)
    return out if weight is None else out * weight


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    return t.reshape(1, -1, *([1] * (ndim - 2)))


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None, weight: Tensor | None = None,
               bias: Tensor | None = None, training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) over the batch and spatial dims. Training uses the batch's
    statistics and moves the running ones toward them (unbiased variance, as PyTorch); eval
    uses the running statistics."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {input.ndim}D input)")
    dims = (0,) + tuple(range(2, input.ndim))
    if training:
        count = input.numel() // input.shape[1]
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
    return _normalize_channels(input, dims, training, running_mean, running_var, weight, bias, momentum, eps,
                               per_sample=False, missing_running="batch_norm: running_mean and running_var must "
                               "be given when training=False")


def _normalize_channels(input: Tensor, dims: tuple[int, ...], from_input: bool, running_mean: Tensor | None,
                        running_var: Tensor | None, weight: Tensor | None, bias: Tensor | None, momentum: float,
                        eps: float, per_sample: bool, missing_running: str) -> Tensor:
    """What batch_norm and instance_norm share once each has checked its input: normalize over
    `dims` by the input's own statistics (moving the running ones toward them) or, when not
    `from_input`, by the running statistics (an error saying `missing_running` if absent);
    then the per-channel weight and bias."""
    if from_input:
        out = _conv.NORMALIZE(input, dims=dims, eps=float(eps))
        _move_running(running_mean, running_var, input, dims, momentum, per_sample)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError(missing_running)
        out = (input - _channel_view(running_mean, input.ndim)) * _channel_view(
            _F.rsqrt(running_var + eps), input.ndim)
    return _channel_affine(out, weight, bias)


def _move_running(running_mean: Tensor | None, running_var: Tensor | None, input: Tensor, dims: tuple[int, ...],
                  momentum: float, per_sample: bool) -> None:
    """Running statistics moved toward the batch's, in place and outside autograd (batch_norm
    and instance_norm); nothing happens unless both are given. The batch's are the mean and
    unbiased variance over `dims`, averaged over the samples when `per_sample` (instance norm
    keeps one per sample and channel)."""
    if running_mean is None or running_var is None:
        return
    from .._grad_mode import no_grad  # noqa: PLC0415

    with no_grad():
        x = input.detach()
        mean = _F.mean(x, dims)
        var = _F.var(x, dims, correction=1)
        if per_sample:
            mean, var = _F.mean(mean, 0), _F.mean(var, 0)
        running_mean.mul_(1 - momentum).add_(mean.to(running_mean.dtype), alpha=momentum)
        running_var.mul_(1 - momentum).add_(var.to(running_var.dtype), alpha=momentum)


def _channel_affine(out: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """out * weight + bias, both per channel (dim 1); either may be None."""
    if weight is not None:
        out = out * _channel_view(weight, out.ndim)
    if bias is not None:
        out = out + _channel_view(bias, out.ndim)
    return out


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel of each sample over its spatial dims, then scale by weight and add bias.

    With `use_input_stats` (training, or no running statistics) the sample's own statistics
    normalize it, and given running_mean/running_var move toward the batch average of the
    per-sample mean and unbiased variance, as PyTorch; otherwise the running statistics
    normalize (eval with track_running_stats). Mirrors torch.nn.functional.instance_norm."""
    if input.ndim < 3:
        raise ValueError(f"instance_norm: expected at least 3D input (N, C, *), got input of shape "
                         f"{list(input.shape)}; add the batch dimension with unsqueeze(0)")
    dims = tuple(range(2, input.ndim))
    if use_input_stats:
        spatial = input.numel() // (input.shape[0] * input.shape[1]) if input.numel() else 0
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{list(input.shape)}")
    return _normalize_channels(input, dims, use_input_stats, running_mean, running_var, weight, bias, momentum, eps,
                               per_sample=True, missing_running="instance_norm: Expected running_mean and "
                               "running_var to be defined when use_input_stats is false")


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize each sample over groups of `num_groups` channels, then apply the per-channel weight and bias.

    Mirrors torch.nn.functional.group_norm."""
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible by num_groups, but got "
                           f"input of shape {list(input.shape)} and num_groups={num_groups}")
    grouped = input.reshape(n, num_groups, -1)
    out = _conv.NORMALIZE(grouped, dims=(2,), eps=float(eps)).reshape(*input.shape)
    if weight is not None:
        out = out * _channel_view(weight, input.ndim)
    if bias is not None:
        out = out + _channel_view(bias, input.ndim)
    return out


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:
    """input / max(||input||_p along dim, eps)."""
    return input / _F.clamp_min(_F.norm(input, p, dim, True), eps)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """The cosine of the angle between x1 and x2 along `dim` (norms clamped below by eps).

    Mirrors torch.nn.functional.cosine_similarity."""
    dot = _F.sum(x1 * x2, dim)
    n1 = _F.clamp_min(_F.norm(x1, 2, dim), eps)
    n2 = _F.clamp_min(_F.norm(x2, 2, dim), eps)
    return _F._renamed(dot / (n1 * n2), "SumBackward1")  # PyTorch sums the normalized product last


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """The p-norm of x1 - x2 + eps along the last dimension. Mirrors torch.nn.functional.pairwise_distance."""
    return _F.norm(x1 - x2 + eps, p, -1, keepdim)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot rows of class indices (num_classes=-1: one more than the largest index)."""
    if tensor.is_floating_point():
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    span = _data_range(tensor)
    if num_classes == -1:  # reads the data: eager only (a traced tensor needs num_classes)
        num_classes = int(tensor.max()) + 1 if span is None else (span[1] + 1 if tensor.numel() else 0)
    if span is not None and (span[0] < 0 or span[1] >= num_classes):
        raise RuntimeError("Class values must be smaller than num_classes." if span[0] >= 0
                           else "Class values must be non-negative.")
    return (tensor.unsqueeze(-1) == arange(num_classes, device=tensor.device)).long()


def pad(input: Tensor, pad: tuple, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims: pad = (last_left, last_right, prev_left, prev_right, ...).
    Modes: constant (negative pads crop), reflect, replicate, circular."""
    if len(pad) % 2:
        raise ValueError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise ValueError(f"Padding length should be less than or equal to two times the input dimension but got "
                         f"padding length {len(pad)} and input of dimension {input.ndim}")
    out = input
    for k in range(len(pad) // 2):
        d = input.ndim - 1 - k
        left, right = int(pad[2 * k]), int(pad[2 * k + 1])
        out = _pad_dim(out, d, left, right, mode, 0.0 if value is None else value)
    return out


def _pad_dim(x: Tensor, d: int, left: int, right: int, mode: str, value: float) -> Tensor:
    n = x.shape[d]
    if left < 0:
        x, n, left = _F.narrow(x, d, -left, n + left), n + left, 0
    if right < 0:
        x, n, right = _F.narrow(x, d, 0, n + right), n + right, 0
    if not left and not right:
        return x
    if mode == "constant":
        def block(n):
            shape = list(x.shape)
            shape[d] = n
            return x.new_full(tuple(shape), value)

        return _F.cat(([block(left)] if left else []) + [x] + ([block(right)] if right else []), d)
    if mode == "reflect":
        if left >= n or right >= n:
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({left}, {right}) at dimension {d} of input {list(x.shape)}")
        idx = list(range(left, 0, -1)) + list(range(n)) + list(range(n - 2, n - 2 - right, -1))
    elif mode == "replicate":
        idx = [0] * left + list(range(n)) + [n - 1] * right
    elif mode == "circular":
        idx = [(i - left) % n for i in range(left + n + right)]
    else:
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (constant, reflect, replicate, circular)")
    from .._factories import tensor as _tensor  # noqa: PLC0415

    return _F.index_select(x, d, _tensor(idx, device=x.device))


# -- convolution and pooling ---------------------------------------------------------------------------
def _conv_padding(name, padding, kernel, dilation, stride, spatial):
    if isinstance(padding, str):
        if padding == "valid":
            return (0,) * (2 * spatial)
        if padding != "same":
            raise ValueError(f"Invalid padding string {padding!r}, should be one of ('valid', 'same')")
        if any(s != 1 for s in stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        out = []
        for k, dl in zip(kernel, dilation):
            total = dl * (k - 1)
            out += [total // 2, total - total // 2]  # the odd one out goes on the right, as PyTorch
        return tuple(out)
    pads = _pair(padding, spatial)
    return tuple(v for p in pads for v in (p, p))


def _batch_of_images(name: str, input: Tensor, weight: Tensor) -> tuple[Tensor, bool]:
    """A 2-D convolution's (N, C, H, W) input (a (C, H, W) one gains N = 1) and whether it had
    no batch dimension; any other rank, or a weight that is not 4-D, is refused."""
    if input.ndim not in (3, 4) or weight.ndim != 4:
        raise RuntimeError(f"{name}: Expected 3D (unbatched) or 4D (batched) input to {name}, but got input of size: "
                           f"{list(input.shape)} (weight {list(weight.shape)})")
    return (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-D cross-correlation of (N, C, H, W) (or (C, H, W)) with weight (O, C/groups, kh, kw):
    im2col through a strided view, then one (batched) matmul, channels first."""
    input, unbatched = _batch_of_images("conv2d", input, weight)
    n, c = input.shape[0], input.shape[1]
    o, cg, kh, kw = weight.shape
    if c != cg * groups:
        raise RuntimeError(f"conv2d: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cg * groups} channels, but got {c} channels instead")
    if o % groups:
        raise RuntimeError(f"conv2d: out_channels ({o}) must be divisible by groups ({groups})")
    stride, dilation = _pair(stride), _pair(dilation)
    pads = _conv_padding("conv2d", padding, (kh, kw), dilation, stride, 2)
    geometry = dict(kernel=(kh, kw), stride=stride, padding=pads, dilation=dilation)
    cols = _conv.UNFOLD(input, pad_value=0.0, **geometry)  # (C, kh, kw, N, oh, ow)
    oh, ow = cols.shape[4], cols.shape[5]
    if groups == 1:  # one (O, K) @ (K, N*L) product
        out = _F.matmul(weight.reshape(o, c * kh * kw), cols.reshape(c * kh * kw, n * oh * ow))
    else:
        g_cols = cols.reshape(groups, cg * kh * kw, n * oh * ow)
        out = _F.matmul(weight.reshape(groups, o // groups, cg * kh * kw), g_cols)
    # the product is channel-major (O, N, ...); PyTorch's result is row-major (N, O, ...), and
    # scripts rely on it (conv(x).view(N, -1)), so batches of more than one image are copied
    out = out.reshape(o, n, oh, ow).permute(1, 0, 2, 3)
    if n > 1:
        out = out.contiguous()
    if bias is not None:
        out = out + bias.reshape(1, o, 1, 1)
    _F._renamed(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The transpose (input-gradient) of conv2d: weight (C_in, C_out/groups, kh, kw); each
    input pixel scatters weight * value into the output, which is one matmul onto columns
    and a fold (col2im) of them, channels first."""
    input, unbatched = _batch_of_images("conv_transpose2d", input, weight)
    n, c, h, w = input.shape
    cin, og, kh, kw = weight.shape
    if c != cin:
        raise RuntimeError(f"conv_transpose2d: Given transposed=1, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cin} channels, but got {c} channels instead")
    if cin % groups:
        raise RuntimeError(f"conv_transpose2d: in_channels ({cin}) must be divisible by groups ({groups})")
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = _pair(stride), _pair(padding), _pair(output_padding), _pair(dilation)
    if oph >= max(sh, dh) or opw >= max(sw, dw):
        raise RuntimeError("conv_transpose2d: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={(oph, opw)}, stride={(sh, sw)}, dilation={(dh, dw)}")
    out_h = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    out_w = (w - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    x = input.permute(1, 0, 2, 3).reshape(groups, cin // groups, n * h * w)
    wt = weight.reshape(groups, cin // groups, og * kh * kw).transpose(1, 2)  # (G, C_out/G * K, C_in/G)
    cols = _F.matmul(wt, x).reshape(groups * og, kh, kw, n, h, w)
    # output_padding needs no padding of its own: the fold's buffer of out + 2 * padding rows
    # already holds the extra rows, which no column reaches (they stay zero, as in PyTorch)
    out = _conv.FOLD(cols, size=(out_h, out_w), kernel=(kh, kw), stride=(sh, sw), padding=(ph, ph, pw, pw),
                     dilation=(dh, dw))
    if bias is not None:
        out = out + bias.reshape(1, -1, 1, 1)
    _F._renamed(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The 1-d transposed convolution (the gradient of conv1d) of a (N, C_in, L) input.

    Mirrors torch.nn.functional.conv_transpose1d."""
    out = conv_transpose2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _pair(stride, 1)[0]),
                           (0, _pair(padding, 1)[0]), (0, _pair(output_padding, 1)[0]), groups,
                           (1, _pair(dilation, 1)[0]))
    return out.squeeze(-2)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-D cross-correlation of (N, C, L): conv2d over a height of 1."""
    if input.ndim not in (2, 3) or weight.ndim != 3:
        raise RuntimeError(f"conv1d: Expected 2D (unbatched) or 3D (batched) input to conv1d, but got input of size: "
                           f"{list(input.shape)} (weight {list(weight.shape)})")
    pad = padding if isinstance(padding, str) else (0, _pair(padding, 1)[0])
    out = conv2d(input.unsqueeze(-2), weight.unsqueeze(-2), bias, (1, _pair(stride, 1)[0]), pad,
                 (1, _pair(dilation, 1)[0]), groups)
    return _F._renamed(out.squeeze(-2), "ConvolutionBackward0")


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """im2col as PyTorch's F.unfold: (N, C*kh*kw, L)."""
    kh, kw = _pair(kernel_size)
    ph, pw = _pair(padding)
    cols = _conv.UNFOLD(input, kernel=(kh, kw), stride=_pair(stride), padding=(ph, ph, pw, pw),
                        dilation=_pair(dilation), pad_value=0.0)  # (C, kh, kw, N, oh, ow)
    n, c = input.shape[0], input.shape[1]
    return cols.reshape(c * kh * kw, n, -1).permute(1, 0, 2).contiguous()  # row-major, as PyTorch's


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """col2im as PyTorch's F.fold: (N, C*kh*kw, L) blocks summed back into (N, C, H, W), the
    inverse arrangement of unfold (overlaps add up)."""
    kh, kw = _pair(kernel_size)
    (ph, pw), (sh, sw), (dh, dw) = _pair(padding), _pair(stride), _pair(dilation)
    height, width = _pair(output_size)
    batched = input.ndim == 3
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported (got "
                           f"{input.ndim}D)")
    x = input if batched else input.unsqueeze(0)
    oh = (height + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (width + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    n, ckk, blocks = x.shape
    if ckk % (kh * kw) != 0:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                           f"but got input.size(1)={ckk} and kernel_size={(kh, kw)}")
    if blocks != oh * ow:
        raise RuntimeError(f"Given output_size={(height, width)}, kernel_size={(kh, kw)}, dilation={(dh, dw)}, "
                           f"padding={(ph, pw)}, stride={(sh, sw)}, expected size of input's dimension 2 to match "
                           f"the calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got "
                           f"input.size(2)={blocks}.")
    c = ckk // (kh * kw)
    cols = x.reshape(n, c, kh, kw, oh, ow).permute(1, 2, 3, 0, 4, 5)  # unfold's layout: (C, kh, kw, N, oh, ow)
    out = _conv.FOLD(cols, size=(height, width), kernel=(kh, kw), stride=(sh, sw), padding=(ph, ph, pw, pw),
                     dilation=(dh, dw))
    return out if batched else out.squeeze(0)


def _pool_input(name: str, input: Tensor) -> tuple[Tensor, bool]:
    if input.ndim not in (3, 4):
        raise RuntimeError(f"{name}: Expected 3D or 4D (batch mode) tensor for input, but got shape "
                           f"{list(input.shape)}")
    return (input.unsqueeze(0), True) if input.ndim == 3 else (input, False)


def _ceil_extra(n: int, k: int, s: int, p: int, d: int) -> int:
    """Padding to add on the right so that ceil_mode's last (partial) window exists:
    PyTorch's output size is ceil((n + 2p - d(k-1) - 1) / s) + 1, less one when that last
    window would start past the input and its left padding."""
    span = n + 2 * p - d * (k - 1) - 1
    out = -(-span // s) + 1
    if (out - 1) * s >= n + p:
        out -= 1
    return max(0, (out - 1) * s + d * (k - 1) + 1 - (n + 2 * p))


def _pool_geometry(name, input, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _pair(kernel_size)
    stride = kernel if stride is None or stride == [] or stride == () else _pair(stride)
    ph, pw = _pair(padding)
    dilation = _pair(dilation)
    if ph > kernel[0] // 2 or pw > kernel[1] // 2:
        raise RuntimeError(f"{name}: pad should be at most half of effective kernel size, but got pad={(ph, pw)}, "
                           f"kernel_size={kernel}")
    eh = ew = 0
    if ceil_mode:
        h, w = input.shape[-2:]
        eh = _ceil_extra(h, kernel[0], stride[0], ph, dilation[0])
        ew = _ceil_extra(w, kernel[1], stride[1], pw, dilation[1])
    return kernel, stride, (ph, ph + eh, pw, pw + ew), dilation


def _pool_windows(name, input, kernel_size, stride, padding, dilation, ceil_mode, pad_value):
    kernel, stride, pads, dilation = _pool_geometry(name, input, kernel_size, stride, padding, dilation, ceil_mode)
    x, unbatched = _pool_input(name, input)
    cols = _conv.UNFOLD(x, kernel=kernel, stride=stride, padding=pads, dilation=dilation, pad_value=pad_value)
    c, kh, kw, n, oh, ow = cols.shape
    return cols.reshape(c, kh * kw, n, oh, ow), unbatched


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each kernel_size window of a (N, C, H, W) or (C, H, W) input.

    With `return_indices`, also the flat index of each maximum in its input plane.
    Mirrors torch.nn.functional.max_pool2d."""
    windows, unbatched = _pool_windows("max_pool2d", input, kernel_size, stride, padding, dilation, ceil_mode,
                                       -_math.inf)
    values, where = _F.max(windows, 1)
    # row-major (N, C, ...) as PyTorch's, so pool(x).view(N, -1) works
    values, where = values.permute(1, 0, 2, 3).contiguous(), where.permute(1, 0, 2, 3).contiguous()
    _F._renamed(values, "MaxPool2DWithIndicesBackward0")
    if return_indices:
        where = _flat_input_index(where, input.shape[-2:], kernel_size, stride, padding, dilation)
    if unbatched:
        values, where = values.squeeze(0), where.squeeze(0)
    return (values, where) if return_indices else values


def _flat_input_index(where: Tensor, hw, kernel_size, stride, padding, dilation) -> Tensor:
    """PyTorch's max_pool indices: the flat position row * W + col in the (unpadded) input
    plane, from the position `where` inside each window."""
    kh, kw = _pair(kernel_size)
    sh, sw = (kh, kw) if stride is None or stride == [] or stride == () else _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    oh, ow = where.shape[-2:]
    rows = (arange(oh, device=where.device) * sh - ph).reshape(oh, 1) + _F.floor_divide(where, kw) * dh
    cols = (arange(ow, device=where.device) * sw - pw).reshape(1, ow) + _F.remainder(where, kw) * dw
    return rows * hw[1] + cols


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each kernel_size window of a (N, C, H, W) or (C, H, W) input.

    `count_include_pad` and `divisor_override` choose the divisor as in PyTorch.
    Mirrors torch.nn.functional.avg_pool2d."""
    windows, unbatched = _pool_windows("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode, 0.0)
    if divisor_override:
        out = _F.sum(windows, 1) / float(divisor_override)
    elif not ceil_mode and (count_include_pad or not any(_pair(padding))):
        out = _F.mean(windows, 1)
    else:
        # the divisor counts the input (and its padding when count_include_pad), never the
        # extra cells a ceil_mode window reaches past them
        kernel, strides, pads, _ = _pool_geometry("avg_pool2d", input, kernel_size, stride, padding, 1, ceil_mode)
        h, w = input.shape[-2:]
        ph, pw = _pair(padding)
        if count_include_pad:
            ones = _ones(1, 1, h + 2 * ph, w + 2 * pw, dtype=input.dtype, device=input.device)
            pads = (0, pads[1] - ph, 0, pads[3] - pw)
        else:
            ones = _ones(1, 1, h, w, dtype=input.dtype, device=input.device)
        counts = _conv.UNFOLD(ones, kernel=kernel, stride=strides, padding=pads, dilation=(1, 1), pad_value=0.0)
        counts = counts.reshape(1, kernel[0] * kernel[1], 1, *counts.shape[-2:])
        out = _F.sum(windows, 1) / _F.sum(counts, 1)
    out = out.permute(1, 0, 2, 3).contiguous()  # row-major, as PyTorch's
    _F._renamed(out, "AvgPool2DBackward0")
    return out.squeeze(0) if unbatched else out


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each kernel_size window of a (N, C, L) or (C, L) input.

    Mirrors torch.nn.functional.max_pool1d."""
    k = _pair(kernel_size, 1)[0]
    s = k if stride is None else _pair(stride, 1)[0]
    out = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _pair(padding, 1)[0]), (1, _pair(dilation, 1)[0]),
                     ceil_mode, return_indices)
    if return_indices:
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """The mean over each kernel_size window of a (N, C, L) or (C, L) input. Mirrors torch.nn.functional.avg_pool1d."""
    k = _pair(kernel_size, 1)[0]
    s = k if stride is None else _pair(stride, 1)[0]
    return avg_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, _pair(padding, 1)[0]), ceil_mode,
                      count_include_pad).squeeze(-2)


def _adaptive_bounds(n: int, m: int) -> list[tuple[int, int]]:
    return [((i * n) // m, -((-(i + 1) * n) // m)) for i in range(m)]


def _adaptive(input: Tensor, output_size, reduce, name: str) -> Tensor:
    x, unbatched = _pool_input(name, input)
    h, w = x.shape[-2:]
    oh, ow = (v if v is not None else n for v, n in zip(_pair(output_size), (h, w)))
    if h % oh == 0 and w % ow == 0:  # equal windows: one pooling over strided windows
        kernel = (h // oh, w // ow)
        windows = _conv.UNFOLD(x, kernel=kernel, stride=kernel, padding=(0, 0, 0, 0), dilation=(1, 1),
                               pad_value=0.0)
        n, c = x.shape[:2]
        out = reduce(windows.reshape(c, kernel[0] * kernel[1], n, oh, ow), 1).permute(1, 0, 2, 3).contiguous()
    else:
        rows = []
        for h0, h1 in _adaptive_bounds(h, oh):
            cells = [reduce(x[:, :, h0:h1, w0:w1].reshape(x.shape[0], x.shape[1], -1), 2)
                     for w0, w1 in _adaptive_bounds(w, ow)]
            rows.append(_F.stack(cells, -1))
        out = _F.stack(rows, -2)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """The mean over windows chosen so the output has spatial size `output_size`.

    Mirrors torch.nn.functional.adaptive_avg_pool2d."""
    return _F._renamed(_adaptive(input, output_size, _F.mean, "adaptive_avg_pool2d"), "AdaptiveAvgPool2DBackward0")


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False) -> Tensor:
    """The maximum over windows chosen so the output has spatial size `output_size`.

    `return_indices=True` is not supported. Mirrors torch.nn.functional.adaptive_max_pool2d."""
    if return_indices:
        raise NotImplementedError("adaptive_max_pool2d(return_indices=True) is not supported")
    return _adaptive(input, output_size, lambda t, d: _F.amax(t, d), "adaptive_max_pool2d")


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """The mean over windows chosen so the output has length `output_size`.

    Mirrors torch.nn.functional.adaptive_avg_pool1d."""
    return adaptive_avg_pool2d(input.unsqueeze(-2), (1, _pair(output_size, 1)[0])).squeeze(-2)


# -- attention -----------------------------------------------------------------------------------
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
    from .. import _dtypes  # noqa: PLC0415

    return _dtypes.bool_


# -- losses ----------------------------------------------------------------------------------------
def l1_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The absolute error |input - target|, reduced.

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.l1_loss."""
    return _reduce(_F.abs(input - target), reduction)


def smooth_l1_loss(input: Tensor, target: Tensor, reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5 * d ** 2 / beta where d = |input - target| < beta, else d - 0.5 * beta; reduced.

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.smooth_l1_loss."""
    diff = _F.abs(input - target)
    if beta == 0.0:
        return _reduce(diff, reduction)
    loss = _F.where(diff < beta, diff * diff * (0.5 / beta), diff - 0.5 * beta)
    return _F._renamed(_reduce(loss, reduction), "SmoothL1LossBackward0")


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """0.5 * d ** 2 where d = |input - target| < delta, else delta * (d - 0.5 * delta); reduced.

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.huber_loss."""
    diff = _F.abs(input - target)
    loss = _F.where(diff < delta, diff * diff * 0.5, (diff - 0.5 * delta) * delta)
    return _F._renamed(_reduce(loss, reduction), "HuberLossBackward0")


def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         reduction: str = "mean") -> Tensor:
    """-(t log p + (1 - t) log(1 - p)) of probabilities p; logs clamped at -100 as PyTorch."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                         f"({tuple(input.shape)}) is deprecated. Please ensure they have the same size.")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (expected one of {_REDUCTIONS})")
    span = _data_range(input)
    if span is not None and (span[0] < 0 or span[1] > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        weight = weight.expand(*input.shape)
    loss = _BinaryCrossEntropy.apply(input, target, weight)
    return _F._renamed(_reduce(loss, reduction), "BinaryCrossEntropyBackward0")


_BCE_EPSILON = 9.999999960041972e-13  # PyTorch's EPSILON, 1e-12 as a float32 constant


class _BinaryCrossEntropy(Function):
    """The pointwise binary cross-entropy with PyTorch's edge conventions, which no
    composition of log and clamp reproduces: the logs are clamped at -100 (a finite loss at
    p = 0 or 1), the input's gradient is w (p - t) / max(p (1 - p), 1e-12) (finite: +-1e12
    at the edges, where d/dp of the clamped log would be 0 * inf = nan), and the target's
    is w (log(1 - p) - log(p)) unclamped (+-inf at the edges). The backward is written in
    ops, so it can be differentiated again."""

    @staticmethod
    def forward(ctx, input: Tensor, target: Tensor, weight: Tensor | None) -> Tensor:
        ctx.save_for_backward(input, target, weight)
        loss = (target - 1.0) * _F.clamp_min(_F.log1p(-input), -100.0) - target * _F.clamp_min(_F.log(input), -100.0)
        return loss if weight is None else loss * weight

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        input, target, weight = ctx.saved_tensors
        g = grad if weight is None else grad * weight
        grad_input = grad_target = None
        if ctx.needs_input_grad[0]:
            grad_input = g * (input - target) / _F.clamp_min((1.0 - input) * input, _BCE_EPSILON)
        if ctx.needs_input_grad[1]:
            grad_target = g * (_F.log1p(-input) - _F.log(input))
        return grad_input, grad_target, None


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     reduction: str = "mean", pos_weight: Tensor | None = None) -> Tensor:
    """-(pw t log s(x) + (1 - t) log(1 - s(x))), stably: (1 - t) x + (1 + (pw - 1) t) softplus(-x)."""
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({tuple(target.shape)}) must be the same as input size ({tuple(input.shape)})")
    if pos_weight is None:
        loss = _F.softplus(input) - target * input
    else:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * _F.softplus(-input)
    if weight is not None:
        loss = loss * weight
    return _F._renamed(_reduce(loss, reduction), "BinaryCrossEntropyWithLogitsBackward0")


def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False) -> Tensor:
    """KL(target || exp(input)) pointwise: target * (log target - input) (0 where target is 0)."""
    if log_target:
        loss = _F.exp(target) * (target - input)
    else:
        safe = _F.where(target > 0, target, _ones((), dtype=target.dtype, device=target.device))
        loss = _F.where(target > 0, target * (_F.log(safe) - input), target * 0.0)
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    return _reduce(loss, reduction)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: str = "mean") -> Tensor:
    """max(0, -target * (input1 - input2) + margin), reduced.

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.margin_ranking_loss."""
    return _reduce(_F.clamp_min(-target * (input1 - input2) + margin, 0.0), reduction)


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: str = "mean") -> Tensor:
    """input where target is 1, else max(0, margin - input); reduced.

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.hinge_embedding_loss."""
    loss = _F.where(target == 1, input, _F.clamp_min(margin - input, 0.0))
    return _reduce(loss, reduction)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: str = "mean") -> Tensor:
    """1 - cos(input1, input2) where target is 1, else max(0, cos - margin); reduced.

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.cosine_embedding_loss."""
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-8) if input1.ndim > 1 else cosine_similarity(
        input1.unsqueeze(0), input2.unsqueeze(0), dim=1).squeeze(0)
    loss = _F.where(target == 1, 1.0 - cos, _F.clamp_min(cos - margin, 0.0))
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """log(1 + exp(-target * input)), reduced.

    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.soft_margin_loss."""
    return _reduce(_F.softplus(-target * input), reduction)


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     eps: float = 1e-8, reduction: str = "mean") -> Tensor:
    """The Poisson negative log likelihood: exp(input) - target * input (log_input),
    else input - target * log(input + eps); reduced.

    `full=True` adds the Stirling approximation of log(target!), target log(target) - target
    + log(2 pi target) / 2, where target > 1 (0 elsewhere), as PyTorch.
    `reduction` is 'mean', 'sum' or 'none'. Mirrors torch.nn.functional.poisson_nll_loss."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (expected one of {_REDUCTIONS})")
    loss = _F.exp(input) - target * input if log_input else input - target * _F.log(input + eps)
    if full:
        big = target > 1
        safe = _F.where(big, target, 2.0)  # keeps log() finite (and its gradient 0) where the term is masked
        stirling = safe * _F.log(safe) - safe + 0.5 * _F.log(2 * _math.pi * safe)
        loss = loss + _F.where(big, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean") -> Tensor:
    """0.5 * (log(var) + (input - target) ** 2 / var) with var clamped below by eps (+ 0.5 * log(2 pi) if full).

    As PyTorch, the clamp is applied without recording it (PyTorch clamps under no_grad):
    the value uses max(var, eps) but var's gradient is that of the clamped value taken as
    var itself, not 0. `var` may have one dimension less than input (homoscedastic per
    sample) or a last dimension of 1. `reduction` is 'mean', 'sum' or 'none'.
    Mirrors torch.nn.functional.gaussian_nll_loss."""
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif not (tuple(input.shape[:-1]) == tuple(var.shape[:-1]) and var.shape[-1] == 1):
            raise ValueError(f"gaussian_nll_loss: var is of incorrect size {tuple(var.shape)} for input of size "
                             f"{tuple(input.shape)}: give var the input's shape, the input's shape without its last "
                             "dimension, or that with a last dimension of 1")
    if reduction not in _REDUCTIONS:
        raise ValueError(reduction + " is not valid")
    span = _data_range(var)
    if span is not None and span[0] < 0:
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")
    var = _F.where(var < eps, (var - var.detach()) + eps, var)
    loss = 0.5 * (_F.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * _math.log(2 * _math.pi)
    return _reduce(loss, reduction)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: str = "mean") -> Tensor:
    """max(0, d(anchor, positive) - d(anchor, negative) + margin) with the pairwise p-norm distance d.

    `swap` also uses d(positive, negative) when smaller. `reduction` is 'mean', 'sum' or 'none'.
    Mirrors torch.nn.functional.triplet_margin_loss."""
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _F.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_F.clamp_min(d_pos - d_neg + margin, 0.0), reduction)


# -- resampling ----------------------------------------------------------------------------------
def _source_positions(n_in: int, n_out: int, scale: float | None, mode: str, align_corners: bool):
    """For each output position along one dim: the two source indices and the weight of the
    second (linear modes), or the one index (nearest), as PyTorch computes them."""
    import numpy as np  # noqa: PLC0415

    dst = np.arange(n_out, dtype=np.float64)
    if mode == "nearest":
        ratio = (1.0 / scale) if scale else n_in / n_out
        return np.minimum(np.floor(dst * ratio).astype(np.int64), n_in - 1), None, None
    if mode == "nearest-exact":  # the pixel whose centre is nearest (PyTorch's _upsample_nearest_exact)
        ratio = (1.0 / scale) if scale else n_in / n_out
        return np.minimum(np.floor((dst + 0.5) * ratio).astype(np.int64), n_in - 1), None, None
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(dst)
    else:
        ratio = (1.0 / scale) if scale else n_in / n_out
        src = np.maximum((dst + 0.5) * ratio - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _cubic_taps(n_in: int, n_out: int, scale: float | None, align_corners: bool):
    """Bicubic along one dim, as PyTorch's upsample_bicubic2d: for each output position the
    four source indices floor(src) - 1 .. floor(src) + 2 (clamped to the input) and their
    cubic-convolution weights (A = -0.75). Unlike the linear modes, src is not clamped at 0."""
    import numpy as np  # noqa: PLC0415

    dst = np.arange(n_out, dtype=np.float64)
    if align_corners:
        src = dst * ((n_in - 1) / (n_out - 1)) if n_out > 1 else np.zeros_like(dst)
    else:
        ratio = (1.0 / scale) if scale else n_in / n_out
        src = (dst + 0.5) * ratio - 0.5
    floor = np.floor(src)
    t = src - floor
    a = _CUBIC_A

    def near(x):  # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):  # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a

    weights = np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)])
    taps = np.clip(floor.astype(np.int64)[None, :] + np.arange(-1, 3)[:, None], 0, n_in - 1)
    return taps, weights


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims of (N, C, L) or (N, C, H, W): modes nearest, linear, bilinear
    and bicubic (separable index_select and weights: differentiable, no loop over pixels)."""
    from .._factories import tensor as _tensor  # noqa: PLC0415

    spatial = input.ndim - 2
    if spatial not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.ndim}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if mode not in ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area"):
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (nearest, nearest-exact, linear, "
                                  "bilinear, bicubic, trilinear, area)")
    needs = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
    if mode in needs and needs[mode] != spatial:
        raise NotImplementedError(f"Got {input.ndim}D input, but {mode} mode needs {needs[mode] + 2}D input")
    if antialias:
        raise NotImplementedError(f"interpolate(antialias=True) is not supported (mode {mode!r}); resize without "
                                  "it, or blur before downsampling")
    if mode in ("nearest", "nearest-exact", "area") and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if (size is None) == (scale_factor is None):
        raise ValueError("only one of size or scale_factor should be defined")
    in_sizes = tuple(input.shape[2:])
    scales: tuple[float | None, ...]
    if size is not None:
        out_sizes = _pair(size, spatial)
        scales = (None,) * spatial
    else:
        scales = tuple(float(s) for s in _pair(scale_factor, spatial))
        out_sizes = tuple(int(n * s) for n, s in zip(in_sizes, scales))
        if recompute_scale_factor:
            scales = (None,) * spatial
    if mode == "area":  # PyTorch's: an adaptive average pool to the output size
        pool = (adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d)[spatial - 1]
        return pool(input, out_sizes if spatial > 1 else out_sizes[0])
    out = input
    for k, (n_in, n_out, scale) in enumerate(zip(in_sizes, out_sizes, scales)):
        dim = 2 + k
        if mode == "bicubic":
            taps, weights = _cubic_taps(n_in, n_out, scale, bool(align_corners))
            shape = [1] * input.ndim
            shape[dim] = n_out
            total: Tensor | None = None
            for idx, w in zip(taps, weights):
                term = _F.index_select(out, dim, _tensor(idx, device=input.device)) * _tensor(
                    w.reshape(shape), dtype=input.dtype, device=input.device)
                total = term if total is None else total + term
            assert total is not None  # at least one tap per output position
            out = total
            continue
        lo, hi, frac = _source_positions(n_in, n_out, scale, mode, bool(align_corners))
        first = _F.index_select(out, dim, _tensor(lo, device=input.device))
        if frac is None:
            out = first
            continue
        second = _F.index_select(out, dim, _tensor(hi, device=input.device))
        shape = [1] * input.ndim
        shape[dim] = n_out
        w = _tensor(frac.reshape(shape), dtype=input.dtype, device=input.device)
        out = first + (second - first) * w
    return out


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """The deprecated name of interpolate (same arguments). Mirrors torch.nn.functional.upsample."""
    return interpolate(input, size, scale_factor, mode, align_corners)


# -- bags of embeddings ---------------------------------------------------------------------------
def _bags_from_offsets(input: Tensor, offsets: Tensor, include_last_offset: bool) -> tuple[Tensor, Tensor, Tensor]:
    """A 1-D index list cut at `offsets` as a padded (bags, longest) index matrix, the flat
    position of each slot in input, and a mask of the real slots. Reads offsets' values, so
    it runs eagerly only (static's traced offsets raise a TraceError at the user's line)."""
    import numpy as np  # noqa: PLC0415

    from .._factories import tensor  # noqa: PLC0415

    starts = _F._host(offsets).astype(np.int64).reshape(-1)
    n = input.shape[0]
    if include_last_offset:
        starts, ends = starts[:-1], starts[1:]
    else:
        ends = np.append(starts[1:], n)
    if starts.size and (starts[0] != 0 or np.any(np.diff(np.append(starts, ends[-1:])) < 0) or ends[-1] > n):
        raise ValueError(f"embedding_bag: offsets must start at 0, not decrease and not pass the input's length "
                         f"{n} (got offsets {starts.tolist()}); offsets[i] is where bag i begins in input")
    lengths = ends - starts
    longest = int(lengths.max()) if lengths.size else 0
    slot = np.arange(longest)
    mask = slot[None, :] < lengths[:, None]
    position = np.where(mask, starts[:, None] + slot[None, :], 0)
    device = input.device
    return (tensor(position, device=device), tensor(mask, device=device),
            tensor(position.reshape(-1), device=device))


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None, max_norm: float | None = None,
                  norm_type: float = 2, scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """The sum, mean or max of each bag of embedding rows, without materializing the bags'
    lookups one by one: a 2-D input is one bag per row; a 1-D input is cut into bags at
    `offsets`. Entries equal to `padding_idx` are left out of their bag; an empty bag gives
    zeros. `per_sample_weights` (mode "sum" only) scales each looked-up row. Built from
    embedding and reductions over a padded (bags, longest) layout, so gradients reach
    weight and per_sample_weights. Mirrors torch.nn.functional.embedding_bag."""
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max (got mode={mode!r})")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({tuple(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        index, valid, psw = input, None, per_sample_weights
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError(f"offsets has to be a 1D Tensor (got shape {tuple(offsets.shape)})")
        position, valid, flat_position = _bags_from_offsets(input, offsets, include_last_offset)
        index = _F.reshape(_F.index_select(input, 0, flat_position), *position.shape)
        psw = (None if per_sample_weights is None else
               _F.reshape(_F.index_select(per_sample_weights, 0, flat_position), *position.shape))
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if padding_idx is not None:
        n = weight.shape[0]
        if not -n <= padding_idx < n:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx %= n
        kept = index != padding_idx
        valid = kept if valid is None else _F.logical_and(valid, kept)
    rows = embedding(index, weight, None, max_norm, norm_type)  # (bags, longest, dim)
    if mode == "max":
        if valid is None:
            return _F.amax(rows, 1)
        has = _F.any(valid, 1)  # an empty bag reduces zeros, then gives zeros (no -inf reaches amax's backward)
        picked = _F.where(_F.unsqueeze(valid, -1), rows, float("-inf"))
        safe = _F.where(_F.reshape(has, -1, 1, 1), picked, 0.0)
        return _F.where(_F.unsqueeze(has, -1), _F.amax(safe, 1), 0.0)
    scale = None if valid is None else valid.to(weight.dtype)
    if psw is not None:
        scale = psw if scale is None else scale * psw
    summed = _F.sum(rows if scale is None else rows * _F.unsqueeze(scale, -1), 1)
    if mode == "sum":
        return summed
    if valid is None:
        return summed / rows.shape[1] if rows.shape[1] else summed
    count = _F.clamp_min(_F.sum(valid, 1, keepdim=True), 1).to(weight.dtype)
    return summed / count


# -- three spatial dims: conv3d and its poolings, on the N-d unfold/fold ops -------------------------
import itertools as _itertools  # noqa: E402


def _convnd(name: str, input: Tensor, weight: Tensor, bias: Tensor | None, stride, padding, dilation, groups: int,
            spatial: int) -> Tensor:
    """Cross-correlation over `spatial` trailing dims: one unfold (im2col, channels first) and
    one (batched) matmul, as conv2d."""
    if input.ndim not in (spatial + 1, spatial + 2) or weight.ndim != spatial + 2:
        raise RuntimeError(f"{name}: Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to {name}, "
                           f"but got input of size: {list(input.shape)} (weight {list(weight.shape)}, which must "
                           f"be {spatial + 2}-D: (out_channels, in_channels/groups, *kernel))")
    unbatched = input.ndim == spatial + 1
    if unbatched:
        input = input.unsqueeze(0)
    n, c = input.shape[0], input.shape[1]
    o, cg = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if c != cg * groups:
        raise RuntimeError(f"{name}: Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(input.shape)} to have {cg * groups} channels, but got {c} channels instead")
    if o % groups:
        raise RuntimeError(f"{name}: out_channels ({o}) must be divisible by groups ({groups})")
    stride, dilation = _pair(stride, spatial), _pair(dilation, spatial)
    pads = _conv_padding(name, padding, kernel, dilation, stride, spatial)
    cols = _conv.UNFOLD(input, kernel=kernel, stride=stride, padding=pads, dilation=dilation, pad_value=0.0)
    out_sizes = tuple(cols.shape[spatial + 2:])
    k = cg * _math.prod(kernel)
    length = n * _math.prod(out_sizes)
    if groups == 1:
        out = _F.matmul(weight.reshape(o, k), cols.reshape(k, length))
    else:
        out = _F.matmul(weight.reshape(groups, o // groups, k), cols.reshape(groups, k, length))
    out = out.reshape(o, n, *out_sizes).permute(1, 0, *range(2, spatial + 2))
    if n > 1:  # row-major (N, O, ...), as PyTorch's (see conv2d)
        out = out.contiguous()
    if bias is not None:
        out = out + bias.reshape(1, o, *(1,) * spatial)
    _F._renamed(out, "ConvolutionBackward0")
    return out.squeeze(0) if unbatched else out


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-D cross-correlation of (N, C, D, H, W) (or (C, D, H, W)) with weight
    (O, C/groups, kd, kh, kw); padding may be "same" or "valid".

    Mirrors torch.nn.functional.conv3d."""
    return _convnd("conv3d", input, weight, bias, stride, padding, dilation, groups, 3)


def _pool_input_nd(name: str, input: Tensor, spatial: int) -> tuple[Tensor, bool]:
    if input.ndim not in (spatial + 1, spatial + 2) or 0 in tuple(input.shape[1:]):
        raise RuntimeError(f"{name}: Expected non-empty {spatial + 1}D or {spatial + 2}D (batch mode) tensor for "
                           f"input, but got shape {list(input.shape)}")
    return (input.unsqueeze(0), True) if input.ndim == spatial + 1 else (input, False)


def _pool_geometry_nd(name: str, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                      spatial: int) -> tuple[tuple, tuple, tuple, tuple]:
    """(kernel, stride, per-dim (before, after) padding, dilation); ceil_mode's last partial
    window gets extra padding on the right, as in 2-D."""
    kernel = _pair(kernel_size, spatial)
    strides = kernel if stride is None or stride == [] or stride == () else _pair(stride, spatial)
    pads, dilation = _pair(padding, spatial), _pair(dilation, spatial)
    if any(p > k // 2 for p, k in zip(pads, kernel)):
        raise RuntimeError(f"{name}: pad should be at most half of effective kernel size, but got pad={pads}, "
                           f"kernel_size={kernel}")
    if any(v <= 0 for v in kernel + strides + dilation):
        raise RuntimeError(f"{name}: kernel_size, stride and dilation must be greater than zero, but got "
                           f"kernel_size={kernel}, stride={strides}, dilation={dilation}")
    sizes = tuple(input.shape[-spatial:])
    out: list[int] = []
    for i in range(spatial):
        extra = _ceil_extra(sizes[i], kernel[i], strides[i], pads[i], dilation[i]) if ceil_mode else 0
        out += [pads[i], pads[i] + extra]
    return kernel, strides, tuple(out), dilation


def _pool_windows_nd(name: str, input: Tensor, kernel_size, stride, padding, dilation, ceil_mode: bool,
                     pad_value: float, spatial: int) -> tuple[Tensor, bool]:
    """Every pooling window as (C, prod(kernel), N, *out) and whether the input was unbatched."""
    kernel, strides, pads, dilation = _pool_geometry_nd(name, input, kernel_size, stride, padding, dilation,
                                                        ceil_mode, spatial)
    x, unbatched = _pool_input_nd(name, input, spatial)
    try:
        cols = _conv.UNFOLD(x, kernel=kernel, stride=strides, padding=pads, dilation=dilation, pad_value=pad_value)
    except RuntimeError as exc:
        raise RuntimeError(f"{name}: Given input size {list(input.shape)}, the output size would be empty: the "
                           f"kernel {kernel} (dilation {dilation}, padding {_pair(padding, spatial)}) is larger than "
                           "the input; use a smaller kernel_size or more padding") from exc
    c, n = cols.shape[0], cols.shape[spatial + 1]
    return cols.reshape(c, _math.prod(kernel), n, *cols.shape[spatial + 2:]), unbatched


def _flat_input_index_nd(where: Tensor, sizes: tuple, kernel: tuple, strides: tuple, pads: tuple,
                         dilation: tuple) -> Tensor:
    """PyTorch's max_pool indices: the flat position of each maximum in its (unpadded) input
    volume, from its position `where` inside the window."""
    spatial = len(kernel)
    out_sizes = tuple(where.shape[-spatial:])
    flat: Tensor = where * 0
    for i in range(spatial):
        inner = _math.prod(kernel[i + 1:])
        offset = _F.remainder(_F.floor_divide(where, inner), kernel[i])
        start = arange(out_sizes[i], device=where.device) * strides[i] - pads[i]
        start = start.reshape(*(out_sizes[i] if d == i else 1 for d in range(spatial)))
        pos = (start + offset * dilation[i]) * _math.prod(sizes[i + 1:])
        flat = flat + pos
    return flat


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The maximum over each kernel_size window of a (N, C, D, H, W) or (C, D, H, W) input.

    With `return_indices`, also the flat index of each maximum in its input volume.
    Mirrors torch.nn.functional.max_pool3d."""
    windows, unbatched = _pool_windows_nd("max_pool3d", input, kernel_size, stride, padding, dilation, ceil_mode,
                                          -_math.inf, 3)
    values, where = _F.max(windows, 1)
    values, where = values.permute(1, 0, 2, 3, 4).contiguous(), where.permute(1, 0, 2, 3, 4).contiguous()
    if return_indices:
        kernel, strides, _, dils = _pool_geometry_nd("max_pool3d", input, kernel_size, stride, padding, dilation,
                                                     ceil_mode, 3)
        where = _flat_input_index_nd(where, tuple(input.shape[-3:]), kernel, strides, _pair(padding, 3), dils)
    if unbatched:
        values, where = values.squeeze(0), where.squeeze(0)
    _F._renamed(values, "MaxPool3DWithIndicesBackward0")  # (PyTorch pools unbatched inputs natively)
    return (values, where) if return_indices else values


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """The mean over each kernel_size window of a (N, C, D, H, W) or (C, D, H, W) input;
    `count_include_pad` and `divisor_override` choose the divisor as in PyTorch.

    Mirrors torch.nn.functional.avg_pool3d."""
    spatial = 3
    windows, unbatched = _pool_windows_nd("avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode, 0.0,
                                          spatial)
    if divisor_override is not None and divisor_override <= 0:
        raise RuntimeError(f"avg_pool3d: divisor must be not zero, got divisor_override={divisor_override}")
    pads = _pair(padding, spatial)
    if divisor_override:
        out = _F.sum(windows, 1) / float(divisor_override)
    elif not ceil_mode and (count_include_pad or not any(pads)):
        out = _F.mean(windows, 1)
    else:
        # the divisor counts the input (and its padding when count_include_pad), never the
        # extra cells a ceil_mode window reaches past them
        kernel, strides, full, _ = _pool_geometry_nd("avg_pool3d", input, kernel_size, stride, padding, 1, ceil_mode,
                                                     spatial)
        sizes = tuple(input.shape[-spatial:])
        if count_include_pad:
            ones = _ones(1, 1, *(s + 2 * p for s, p in zip(sizes, pads)), dtype=input.dtype, device=input.device)
            full = tuple(v for i in range(spatial) for v in (0, full[2 * i + 1] - pads[i]))
        else:
            ones = _ones(1, 1, *sizes, dtype=input.dtype, device=input.device)
        counts = _conv.UNFOLD(ones, kernel=kernel, stride=strides, padding=full, dilation=(1,) * spatial,
                              pad_value=0.0)
        counts = counts.reshape(1, _math.prod(kernel), 1, *counts.shape[spatial + 2:])
        out = _F.sum(windows, 1) / _F.sum(counts, 1)
    out = out.permute(1, 0, 2, 3, 4).contiguous()
    return _F._renamed(out.squeeze(0) if unbatched else out, "AvgPool3DBackward0")


def _adaptive_nd(name: str, input: Tensor, output_size, reduce, spatial: int) -> Tensor:
    """Adaptive pooling over `spatial` trailing dims: one pooling over strided windows when
    every size divides evenly, else one reduction per output cell (PyTorch's window bounds)."""
    x, unbatched = _pool_input_nd(name, input, spatial)
    sizes = tuple(x.shape[-spatial:])
    outs = tuple(v if v is not None else s for v, s in zip(_pair(output_size, spatial), sizes))
    if any(o <= 0 for o in outs):
        raise RuntimeError(f"{name}: output_size must be positive, got {tuple(outs)}")
    n, c = x.shape[:2]
    if all(s % o == 0 for s, o in zip(sizes, outs)):
        kernel = tuple(s // o for s, o in zip(sizes, outs))
        windows = _conv.UNFOLD(x, kernel=kernel, stride=kernel, padding=(0,) * (2 * spatial),
                               dilation=(1,) * spatial, pad_value=0.0)
        out = reduce(windows.reshape(c, _math.prod(kernel), n, *outs), 1).permute(1, 0, *range(2, spatial + 2))
        out = out.contiguous()
    else:
        cells = []
        for bounds in _itertools.product(*(_adaptive_bounds(s, o) for s, o in zip(sizes, outs))):
            box = x[(slice(None), slice(None)) + tuple(slice(a, b) for a, b in bounds)]
            cells.append(reduce(box.reshape(n, c, -1), 2))
        out = _F.stack(cells, -1).reshape(n, c, *outs)
    return out.squeeze(0) if unbatched else out


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """The mean over windows chosen so the output has spatial size `output_size` (None keeps
    that dim's size).

    Mirrors torch.nn.functional.adaptive_avg_pool3d."""
    if _pair(output_size, 3) == (1, 1, 1) and input.ndim in (4, 5) and 0 not in tuple(input.shape[1:]):
        return _F.mean(input, (-3, -2, -1), keepdim=True)  # PyTorch's global average: a plain mean
    return _F._renamed(_adaptive_nd("adaptive_avg_pool3d", input, output_size, _F.mean, 3),
                       "AdaptiveAvgPool3DBackward0")


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample of the Gumbel-softmax (concrete) distribution: softmax((logits + g) / tau) with
    g = -log(E), E ~ Exp(1), drawn from eager's generator (a compiled function draws the same
    numbers for the same seed). With hard=True the one-hot of its argmax in the forward and the
    soft sample's gradient (the straight-through estimator). `eps` is unused, as in PyTorch.
    Mirrors torch.nn.functional.gumbel_softmax."""
    exponential = -_F.log1p(-rand_like(logits))  # Exp(1) from U in [0, 1): finite
    y_soft = _F.softmax((logits - _F.log(exponential)) / tau, dim)
    if not hard:
        return y_soft
    index = _F.argmax(y_soft, dim, keepdim=True)
    y_hard = _F.scatter(zeros_like(logits), dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o].
    Mirrors torch.nn.functional.bilinear."""
    if weight.ndim != 3 or input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear: expected weight (out, {input1.shape[-1]}, {input2.shape[-1]}) for inputs "
                           f"of shapes {tuple(input1.shape)} and {tuple(input2.shape)}, got weight of shape "
                           f"{tuple(weight.shape)}")
    out = _F.einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes of -(y log sigmoid(x) + (1 - y) log sigmoid(-x))
    (times weight per class), then reduced over samples. Mirrors
    torch.nn.functional.multilabel_soft_margin_loss."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(_F.sum(loss, -1) / input.shape[-1], reduction)


# == more of torch.nn.functional ==================================================================
import numpy as np  # noqa: E402


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: negative inputs are scaled by a slope drawn from U(lower, upper)
    per element while training, by (lower + upper) / 2 otherwise. Mirrors torch.nn.functional.rrelu."""
    if training:
        slope = rand_like(input) * (upper - lower) + lower
    else:
        slope = (lower + upper) / 2
    out = _F.where(input > 0, input, input * slope)  # at 0 the gradient is the slope, as PyTorch's
    return input.copy_(out) if inplace else out


def _inplace_form(fn, name: str):
    def inplace(input: Tensor, *args, **kwargs) -> Tensor:
        return input.copy_(fn(input, *args, **kwargs))

    inplace.__name__ = inplace.__qualname__ = name
    inplace.__doc__ = f"{fn.__name__}, written into input. Mirrors torch.nn.functional.{name}."
    return inplace


relu_ = _inplace_form(relu, "relu_")
elu_ = _inplace_form(elu, "elu_")
selu_ = _inplace_form(selu, "selu_")
celu_ = _inplace_form(celu, "celu_")
leaky_relu_ = _inplace_form(leaky_relu, "leaky_relu_")
hardtanh_ = _inplace_form(hardtanh, "hardtanh_")
threshold_ = _inplace_form(threshold, "threshold_")
rrelu_ = _inplace_form(rrelu, "rrelu_")


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False, inplace: bool = False) -> Tensor:
    """alpha_dropout with one draw per (sample, channel), broadcast over the rest.
    Mirrors torch.nn.functional.feature_alpha_dropout."""
    _check_p(p)
    if not training or p == 0.0:
        return input
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    alpha_p = -1.7580993408473766
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2)
    keep = (rand_like(input.new_zeros(shape)) >= p).to(input.dtype)
    a = ((1 - p) * (1 + p * alpha_p ** 2)) ** -0.5
    b = -a * alpha_p * p
    out = (input * keep + alpha_p * (1.0 - keep)) * a + b
    return input.copy_(out) if inplace else out


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalize each channel by the sum of squares over `size` neighbouring channels:
    x / (k + alpha / size * sum) ** beta, written as PyTorch's (an average pool over
    channels). Mirrors torch.nn.functional.local_response_norm."""
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    div = input * input
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:
        sizes = tuple(input.shape)
        div = div.reshape(sizes[0], 1, sizes[1], sizes[2], -1)
        div = pad(div, (0, 0, 0, 0, size // 2, (size - 1) // 2))
        div = avg_pool3d(div, (size, 1, 1), stride=1).squeeze(1)
        div = div.reshape(*sizes)
    div = (div * alpha + k) ** beta
    return input / div


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm over each window: (sum x ** p) ** (1 / p), as PyTorch computes it (an
    average pool of x ** p times the window size). Mirrors torch.nn.functional.lp_pool2d."""
    kw, kh = _pair(kernel_size)
    out = avg_pool2d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (_F.sign(out) * relu(_F.abs(out)) * (kw * kh)) ** (1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None, ceil_mode: bool = False) -> Tensor:
    """The p-norm over each window of a (N, C, L) input. Mirrors torch.nn.functional.lp_pool1d."""
    out = avg_pool1d(input ** norm_type, kernel_size, stride, 0, ceil_mode)
    return (_F.sign(out) * relu(_F.abs(out)) * kernel_size) ** (1.0 / norm_type)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False) -> Tensor:
    """The maximum over windows chosen so the output has length `output_size`.
    Mirrors torch.nn.functional.adaptive_max_pool1d."""
    if return_indices:
        raise NotImplementedError("adaptive_max_pool1d(return_indices=True) is not supported; use max_pool1d with "
                                  "return_indices when the length divides evenly")
    if input.ndim not in (2, 3):
        raise RuntimeError(f"adaptive_max_pool1d: Expected 2D or 3D input, but got {input.ndim}D")
    return adaptive_max_pool2d(input.unsqueeze(-2), (1, _pair(output_size, 1)[0])).squeeze(-2)


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False) -> Tensor:
    """The maximum over windows chosen so the output has spatial size `output_size`.
    Mirrors torch.nn.functional.adaptive_max_pool3d."""
    if return_indices:
        raise NotImplementedError("adaptive_max_pool3d(return_indices=True) is not supported")
    return _adaptive_nd("adaptive_max_pool3d", input, output_size, lambda t, d: _F.amax(t, d), 3)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """(N, g * c, ...) -> channels regrouped as (N, c * g, ...) (ShuffleNet).
    Mirrors torch.nn.functional.channel_shuffle."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"sizes {list(input.shape)}")
    n, c = input.shape[0], input.shape[1]
    if groups <= 0 or c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    rest = tuple(input.shape[2:])
    return input.reshape(n, groups, c // groups, *rest).transpose(1, 2).reshape(n, c, *rest)


native_channel_shuffle = channel_shuffle


def pdist(input: Tensor, p: float = 2) -> Tensor:
    """The p-norm distances between every pair of rows i < j of a (N, M) input, in row-major
    pair order (the upper triangle). Mirrors torch.nn.functional.pdist."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    n = input.shape[0]
    i, j = np.triu_indices(n, 1)
    a, b = input[_index_tensor(i.astype(np.int64), input)], input[_index_tensor(j.astype(np.int64), input)]
    return _F.norm(a - b, p, -1)  # norm's gradient at a zero difference is 0, as PyTorch's pdist


def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                      reduction: str = "mean") -> Tensor:
    """The multi-class hinge loss: per sample, the mean over classes i != y of
    max(0, margin - x[y] + x[i]) ** p (times weight[y]). Mirrors torch.nn.functional.multi_margin_loss."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (expected one of {_REDUCTIONS})")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    y = target.reshape(-1)
    n, c = x.shape
    picked = x.gather(1, y.reshape(-1, 1))
    hinge = _F.clamp_min(margin - picked + x, 0.0)
    if p == 2:
        hinge = hinge * hinge
    if weight is not None:
        hinge = hinge * weight[y].reshape(-1, 1)
    others = (arange(c, device=x.device).reshape(1, -1) != y.reshape(-1, 1)).to(x.dtype)
    loss = (hinge * others).sum(1) / c
    if input.ndim != 2 and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_margin_loss(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """The multi-label hinge loss: target lists each sample's classes, ended by the first -1;
    per sample, the sum over its classes j and the other classes i of
    max(0, 1 - (x[j] - x[i])), over the number of classes. Mirrors
    torch.nn.functional.multilabel_margin_loss."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction (expected one of {_REDUCTIONS})")
    x = input if input.ndim == 2 else input.reshape(1, -1)
    t = target.reshape(x.shape)
    n, c = x.shape
    t_np = np.asarray(t.detach().numpy() if isinstance(t, Tensor) else t)
    is_label = np.zeros((n, c), dtype=bool)  # (sample, class): a target class
    pair = np.zeros((n, c), dtype=bool)  # (sample, position): a target position before the first -1
    for s in range(n):
        for pos in range(c):
            k = int(t_np[s, pos])
            if k < 0:
                break
            is_label[s, k] = True
            pair[s, pos] = True
    safe = np.where(pair, t_np, 0).astype(np.int64)
    xj = x.gather(1, _index_tensor(safe, x))  # (n, c): x at each target position
    margins = _F.clamp_min(1.0 - (xj.unsqueeze(2) - x.unsqueeze(1)), 0.0)  # (n, pos, class)
    mask = _index_tensor(pair[:, :, None] & ~is_label[:, None, :], x).to(x.dtype)
    loss = (margins * mask).sum((1, 2)) / c
    if input.ndim != 2 and reduction == "none":
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def _index_tensor(array, like: Tensor) -> Tensor:
    from .._factories import tensor as _tensor  # noqa: PLC0415

    return _tensor(array, device=like.device)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean") -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin) with a distance function (pairwise_distance by
    default). Mirrors torch.nn.functional.triplet_margin_with_distance_loss."""
    if margin <= 0:
        raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater than 0, got {margin} instead")
    dist = distance_function if distance_function is not None else pairwise_distance
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = _F.minimum(d_neg, dist(positive, negative))
    return _reduce(_F.clamp_min(margin + d_pos - d_neg, 0.0), reduction)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool2d: each value written at its flat index in a zero
    plane of the unpooled size. Mirrors torch.nn.functional.max_unpool2d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool1d. Mirrors torch.nn.functional.max_unpool1d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool3d. Mirrors torch.nn.functional.max_unpool3d."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


def _max_unpool(input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size, spatial: int) -> Tensor:
    kernel = _pair(kernel_size, spatial)
    strides = kernel if stride is None else _pair(stride, spatial)
    pads = _pair(padding, spatial)
    in_sizes = tuple(input.shape[-spatial:])
    default = tuple((i - 1) * s - 2 * p + k for i, s, p, k in zip(in_sizes, strides, pads, kernel))
    if output_size is None:
        sizes = default
    else:
        sizes = tuple(output_size)[-spatial:]
        for d, (got, want) in enumerate(zip(sizes, default)):
            lo, hi = want - strides[d], want + strides[d]
            if not lo < got < hi:
                raise ValueError(f"invalid output_size {tuple(output_size)} (dim {d} must be between {lo} and {hi})")
    lead = tuple(input.shape[:-spatial])
    plane = _math.prod(sizes)
    flat_in = input.reshape(-1, _math.prod(in_sizes))
    flat_idx = indices.reshape(-1, _math.prod(in_sizes))
    out = zeros_like(flat_in.new_zeros((flat_in.shape[0], plane)))
    out = _F.scatter(out, 1, flat_idx, flat_in)
    return out.reshape(*lead, *sizes)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """interpolate(mode="nearest") (deprecated in PyTorch, with its warning).
    Mirrors torch.nn.functional.upsample_nearest."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """interpolate(mode="bilinear", align_corners=True) (deprecated in PyTorch, with its warning).
    Mirrors torch.nn.functional.upsample_bilinear."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """max_pool1d returning (values, indices). Mirrors torch.nn.functional.max_pool1d_with_indices."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """max_pool2d returning (values, indices). Mirrors torch.nn.functional.max_pool2d_with_indices."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """The transpose (input-gradient) of conv3d: weight (C_in, C_out/groups, kd, kh, kw); one
    matmul onto columns and a fold (col2im) of them, as conv_transpose2d.
    Mirrors torch.nn.functional.conv_transpose3d."""
    if input.ndim not in (4, 5):
        raise RuntimeError(f"conv_transpose3d: Expected 4D (unbatched) or 5D (batched) input, but got input of size "
                           f"{list(input.shape)}")
    unbatched = input.ndim == 4
    if unbatched:
        input = input.unsqueeze(0)
    n, c = input.shape[0], input.shape[1]
    sizes = tuple(input.shape[2:])
    cin, og = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if c != cin:
        raise RuntimeError(f"conv_transpose3d: Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(input.shape)} to have {cin} channels, but got {c} channels instead")
    if cin % groups:
        raise RuntimeError(f"conv_transpose3d: in_channels ({cin}) must be divisible by groups ({groups})")
    st, pd, op, dl = _pair(stride, 3), _pair(padding, 3), _pair(output_padding, 3), _pair(dilation, 3)
    if any(o >= max(s_, d_) for o, s_, d_ in zip(op, st, dl)):
        raise RuntimeError("conv_transpose3d: output padding must be smaller than either stride or dilation, but got "
                           f"output_padding={op}, stride={st}, dilation={dl}")
    out = tuple((i - 1) * s_ - 2 * p_ + d_ * (k - 1) + o + 1 for i, s_, p_, d_, k, o in zip(sizes, st, pd, dl, kernel, op))
    x = input.permute(1, 0, 2, 3, 4).reshape(groups, cin // groups, n * _math.prod(sizes))
    wt = weight.reshape(groups, cin // groups, og * _math.prod(kernel)).transpose(1, 2)
    cols = _F.matmul(wt, x).reshape(groups * og, *kernel, n, *sizes)
    y = _conv.FOLD(cols, size=out, kernel=kernel, stride=st, padding=(pd[0], pd[0], pd[1], pd[1], pd[2], pd[2]),
                   dilation=dl)
    if bias is not None:
        y = y + bias.reshape(1, -1, 1, 1, 1)
    _F._renamed(y, "ConvolutionBackward0")
    return y.squeeze(0) if unbatched else y


# -- spatial transformers -----------------------------------------------------------------------
_ALIGN_CORNERS_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since "
                          "1.3.0. Please specify align_corners=True if the old behavior is desired. See the "
                          "documentation of grid_sample for details.")


def _linspace_from_neg_one(n: int, align_corners: bool, like: Tensor) -> Tensor:
    """PyTorch's base-grid coordinates: n points in [-1, 1] (pixel corners with
    align_corners, else pixel centres, scaled by (n - 1) / n)."""
    from .._factories import linspace, tensor  # noqa: PLC0415

    if n <= 1:
        return tensor([0.0], dtype=like.dtype, device=like.device)
    r = linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return r if align_corners else r * (n - 1) / n


def affine_grid(theta: Tensor, size: list, align_corners: bool | None = None) -> Tensor:
    """The sampling grid (N, H, W, 2) of the 2-D affine maps theta (N, 2, 3) for an output
    of `size` (N, C, H, W): base coordinates in [-1, 1] times theta^T. Differentiable in
    theta (spatial transformer networks learn it). Mirrors torch.nn.functional.affine_grid."""
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = list(size)
    if len(size) == 5:
        raise NotImplementedError("affine_grid: 3-D (5-D size) grids are not supported here; only 2-D (N, C, H, W)")
    if len(size) != 4:
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if theta.ndim != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
        raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                         f"Got {list(theta.shape)}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, _, h, w = size
    xs = _linspace_from_neg_one(w, align_corners, theta).reshape(1, w).expand(h, w)
    ys = _linspace_from_neg_one(h, align_corners, theta).reshape(h, 1).expand(h, w)
    base = _F.stack([xs, ys, _ones((h, w), dtype=theta.dtype, device=theta.device)], -1)  # (H, W, 3)
    base = base.reshape(1, h * w, 3).expand(n, h * w, 3)
    return _F.matmul(base, theta.transpose(1, 2)).reshape(n, h, w, 2)


def _grid_source_index(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """A grid coordinate in [-1, 1] as a pixel position, with the padding's clipping or
    reflection (PyTorch's grid_sampler_compute_source_index, gradients included: 0 where a
    coordinate is clipped)."""
    if align_corners:
        coord = (coord + 1) / 2 * (size - 1)
    else:
        coord = ((coord + 1) * size - 1) / 2
    if padding_mode == "reflection":
        low, high = (0.0, 2.0 * (size - 1)) if align_corners else (-1.0, 2.0 * size - 1)
        if low == high:
            coord = coord * 0.0
        else:
            lo, span = low / 2, (high - low) / 2
            dist = _F.abs(coord - lo)
            extra = _F.fmod(dist, span)
            flips = _F.floor(dist / span)
            coord = _F.where(_F.remainder(flips, 2) == 0, extra + lo, span - extra + lo)
    if padding_mode in ("border", "reflection"):
        coord = _F.where(coord <= 0, 0.0, _F.where(coord >= size - 1, float(size - 1), coord))
    return coord


def _gather_plane(flat: Tensor, iy: Tensor, ix: Tensor, h: int, w: int) -> tuple[Tensor, Tensor]:
    """The values of flat (N, C, H*W) at integer positions (iy, ix) (N, Ho, Wo) read as
    floats, and whether each is inside the plane (outside reads 0)."""
    valid = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
    lin = (_F.clamp(iy, 0, h - 1) * w + _F.clamp(ix, 0, w - 1)).long()
    n, c = flat.shape[0], flat.shape[1]
    index = lin.reshape(n, 1, -1).expand(n, c, lin.shape[1] * lin.shape[2])
    values = flat.gather(2, index).reshape(n, c, lin.shape[1], lin.shape[2])
    return values, valid.unsqueeze(1).to(flat.dtype)


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """Sample input (N, C, H, W) at the grid's (N, Ho, Wo, 2) normalized (x, y) positions,
    bilinearly or at the nearest pixel; outside the image 'zeros' reads 0, 'border' the edge,
    'reflection' the mirrored image. Differentiable in input and (bilinear) in grid, with
    PyTorch's corner weights and summation order. 2-D only here.
    Mirrors torch.nn.functional.grid_sample."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_CORNERS_WARNING, stacklevel=2)
        align_corners = False
    if mode == "bicubic":
        raise NotImplementedError("grid_sample(mode='bicubic') is not supported here; use 'bilinear' or 'nearest'")
    if input.ndim == 5:
        raise NotImplementedError("grid_sample: 5-D (volumetric) input is not supported here; only (N, C, H, W)")
    if input.ndim != 4 or grid.ndim != 4 or grid.shape[-1] != 2:
        raise RuntimeError(f"grid_sampler(): expected 4D input and grid with same number of dimensions and a last "
                           f"grid dimension of 2, but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.dtype} and grid has {grid.dtype}")
    n, c, h, w = input.shape
    ix = _grid_source_index(grid[..., 0], w, padding_mode, align_corners)
    iy = _grid_source_index(grid[..., 1], h, padding_mode, align_corners)
    flat = input.reshape(n, c, h * w)
    if mode == "nearest":
        vals, valid = _gather_plane(flat, _F.round(iy).detach(), _F.round(ix).detach(), h, w)
        return vals * valid
    x0, y0 = _F.floor(ix).detach(), _F.floor(iy).detach()
    x1, y1 = x0 + 1, y0 + 1
    corners = [(y0, x0, (x1 - ix) * (y1 - iy)), (y0, x1, (ix - x0) * (y1 - iy)),
               (y1, x0, (x1 - ix) * (iy - y0)), (y1, x1, (ix - x0) * (iy - y0))]
    out = None
    for cy, cx, weight in corners:  # nw, ne, sw, se: PyTorch's order of the sum
        vals, valid = _gather_plane(flat, cy, cx, h, w)
        term = vals * (weight.unsqueeze(1) * valid)
        out = term if out is None else out + term
    assert out is not None
    return out


# -- connectionist temporal classification --------------------------------------------------------
def _ctc_alpha_beta(lp: np.ndarray, target: np.ndarray, length: int, blank: int, backward: bool):
    """Log-space forward (alpha) or backward (beta) variables of one sample: (T, 2L + 1)."""
    labels = np.full(2 * len(target) + 1, blank, dtype=np.int64)
    labels[1::2] = target
    n_states = labels.size
    neg_inf = -np.inf
    out = np.full((lp.shape[0], n_states), neg_inf)
    if length == 0:
        return out, labels
    # a state may skip the blank before it when its label differs from the one two back
    skip = np.zeros(n_states, dtype=bool)
    skip[2:] = (labels[2:] != blank) & (labels[2:] != labels[:-2])
    if not backward:
        out[0, 0] = lp[0, blank]
        if n_states > 1:
            out[0, 1] = lp[0, labels[1]]
        for t in range(1, length):
            prev = out[t - 1]
            a = prev
            b = np.concatenate(([neg_inf], prev[:-1]))
            c = np.where(skip, np.concatenate(([neg_inf, neg_inf], prev[:-2])), neg_inf)
            out[t] = np.logaddexp(np.logaddexp(a, b), c) + lp[t, labels]
    else:
        last = length - 1
        out[last, n_states - 1] = lp[last, blank]
        if n_states > 1:
            out[last, n_states - 2] = lp[last, labels[n_states - 2]]
        skip_next = np.zeros(n_states, dtype=bool)
        skip_next[:-2] = skip[2:]
        for t in range(last - 1, -1, -1):
            nxt = out[t + 1]
            a = nxt
            b = np.concatenate((nxt[1:], [neg_inf]))
            c = np.where(skip_next, np.concatenate((nxt[2:], [neg_inf, neg_inf])), neg_inf)
            out[t] = np.logaddexp(np.logaddexp(a, b), c) + lp[t, labels]
    return out, labels


class _CTCLoss(Function):
    """The per-sample CTC negative log-likelihood, with PyTorch's gradient: for t < the
    input length, exp(log_probs) - exp(log(sum of alpha beta over the label's states) + nll
    - log_probs), 0 after it (and everywhere for an infinite loss with zero_infinity). That
    is the gradient of the logits when log_probs is their log_softmax, which is what PyTorch
    returns for log_probs (so the gradient reaching the logits is the true one)."""

    @staticmethod
    def forward(ctx, log_probs: Tensor, targets: list, input_lengths: list, blank: int,
                zero_infinity: bool) -> Tensor:
        lp = np.asarray(log_probs.detach().numpy(), dtype=np.float64)
        nll = np.zeros(lp.shape[1])
        alphas = []
        for n, (target, length) in enumerate(zip(targets, input_lengths)):
            alpha, _ = _ctc_alpha_beta(lp[:, n], target, length, blank, backward=False)
            alphas.append(alpha)
            if length == 0:
                nll[n] = 0.0 if len(target) == 0 else np.inf
                continue
            end = alpha[length - 1, -2:] if alpha.shape[1] > 1 else alpha[length - 1, -1:]
            nll[n] = -np.logaddexp.reduce(end)
        ctx.saved = (lp, targets, input_lengths, blank, zero_infinity, alphas, nll, log_probs.dtype)
        out = np.where(np.isinf(nll) & zero_infinity, 0.0, nll)
        from .._factories import tensor as _tensor  # noqa: PLC0415

        return _tensor(out.astype(lp.dtype if log_probs.dtype.name == "float64" else np.float32),
                       dtype=log_probs.dtype, device=log_probs.device)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        from .._factories import tensor as _tensor  # noqa: PLC0415

        lp, targets, input_lengths, blank, zero_infinity, alphas, nll, dtype = ctx.saved
        g_out = np.asarray(grad.detach().numpy(), dtype=np.float64).reshape(-1)
        result = np.zeros_like(lp)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for n, (target, length) in enumerate(zip(targets, input_lengths)):
                if length == 0 or (zero_infinity and np.isinf(nll[n])):
                    continue
                beta, labels = _ctc_alpha_beta(lp[:, n], target, length, blank, backward=True)
                ab = alphas[n][:length] + beta[:length]  # (t, state)
                lcab = np.full((length, lp.shape[2]), -np.inf)
                for s, c in enumerate(labels):
                    lcab[:, c] = np.logaddexp(lcab[:, c], ab[:, s])
                lpn = lp[:length, n]
                result[:length, n] = (np.exp(lpn) - np.exp(lcab + nll[n] - lpn)) * g_out[n]
        return _tensor(result, dtype=dtype, device=grad.device), None, None, None, None


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The connectionist temporal classification loss of log_probs (T, N, C) (or (T, C))
    against targets, padded (N, S) or concatenated (sum(target_lengths),); 'mean' divides
    each sample's loss by its target length, then averages. Mirrors torch.nn.functional.ctc_loss."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    unbatched = log_probs.ndim == 2
    if unbatched:
        log_probs = log_probs.unsqueeze(1)
        targets = targets.reshape(1, -1) if targets.ndim == 1 else targets
    if log_probs.ndim != 3:
        raise RuntimeError(f"ctc_loss: log_probs must be (T, N, C) or (T, C), got shape {list(log_probs.shape)}")
    t_max, n, c = log_probs.shape
    in_lens = [int(v) for v in (input_lengths.reshape(-1).tolist() if isinstance(input_lengths, Tensor)
                                else ([input_lengths] if isinstance(input_lengths, int) else input_lengths))]
    tg_lens = [int(v) for v in (target_lengths.reshape(-1).tolist() if isinstance(target_lengths, Tensor)
                                else ([target_lengths] if isinstance(target_lengths, int) else target_lengths))]
    if len(in_lens) != n or len(tg_lens) != n:
        raise RuntimeError(f"ctc_loss: expected input_lengths and target_lengths of size {n} (the batch), got "
                           f"{len(in_lens)} and {len(tg_lens)}")
    tg = np.asarray(targets.numpy() if isinstance(targets, Tensor) else targets).astype(np.int64)
    seqs = []
    offset = 0
    for k in range(n):
        if tg.ndim == 1:
            seqs.append(tg[offset:offset + tg_lens[k]])
            offset += tg_lens[k]
        else:
            seqs.append(tg[k, :tg_lens[k]])
        if in_lens[k] > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got value {in_lens[k]} "
                               f"(while checking arguments for ctc_loss_cpu)")
        if not 0 <= blank < c:
            raise RuntimeError("blank must be in label range")
    per_sample = _CTCLoss.apply(log_probs, seqs, in_lens, blank, zero_infinity)
    if reduction == "none":
        return per_sample.squeeze(0) if unbatched else per_sample
    if reduction == "sum":
        return per_sample.sum()
    from .._factories import tensor as _tensor  # noqa: PLC0415

    lens = _tensor([max(v, 1) for v in tg_lens], dtype=per_sample.dtype, device=per_sample.device)
    return (per_sample / lens).mean()
