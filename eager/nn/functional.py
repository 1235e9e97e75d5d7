"""`eager.nn.functional`: activations and losses as PyTorch spells them.

Everything here is composed from eager's own ops (eager.* functions and Tensor methods),
never from raw arrays: the gradients then come from the op registry, work to any order,
and static tracing sees ordinary ops."""
from __future__ import annotations

import warnings

from .. import _functional as _F
from .._factories import arange, rand_like
from .._tensor import Tensor

_REDUCTIONS = ("mean", "sum", "none")


# -- activations -------------------------------------------------------------------------------
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    return input.relu_() if inplace else _F.relu(input)


def tanh(input: Tensor) -> Tensor:
    return _F.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    return _F.sigmoid(input)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    if approximate not in ("none", "tanh"):
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return _F.gelu(input, approximate=approximate)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    return _F.softplus(input, beta, threshold)


def _implicit_dim(name: str, ndim: int) -> int:
    """PyTorch's legacy choice when dim is omitted (with the same deprecation warning)."""
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", UserWarning, stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
    if dim is None:
        dim = _implicit_dim("softmax", input.ndim)
    return _F.softmax(input, dim, dtype=dtype)


def log_softmax(input: Tensor, dim: int | None = None, dtype=None) -> Tensor:
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
    """y = x W^T + b, with W of shape (out_features, in_features) as in PyTorch."""
    out = _F.matmul(input, weight.t() if weight.ndim == 2 else weight)
    return out if bias is None else out + bias


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
    if tuple(input.shape) != tuple(target.shape):
        warnings.warn(f"Using a target size ({tuple(target.shape)}) that is different to the input size "
                      f"({tuple(input.shape)}). This will likely lead to incorrect results due to broadcasting. "
                      "Please ensure they have the same size.", UserWarning, stacklevel=2)
    diff = input - target
    return _reduce(diff * diff, reduction)


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
    """The negative log-likelihood of class indices, given log-probabilities `input` (N, C)."""
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
    picked = logp[arange(logp.shape[0], device=logp.device), safe_target]
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
        return loss.sum() / w.sum()
    return _reduce(loss.reshape(*out_shape), reduction)


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
        return _reduce(-_F.sum(per_class, class_dim), reduction)  # mean: over samples, not weights
    loss = nll_loss(logp, target, weight, ignore_index, reduction)
    if not label_smoothing:
        return loss
    # PyTorch's mix: (1 - eps) * nll + eps * mean over classes of -log p (weighted, masked).
    smooth = -_F.sum(logp if weight is None else logp * _class_view(weight, input.ndim), class_dim)
    valid = (target != ignore_index).to(logp.dtype)
    smooth = smooth * valid
    if reduction == "mean":
        denom = valid.sum() if weight is None else (weight[_F.where(target != ignore_index, target, 0)] * valid).sum()
        smooth = smooth.sum() / denom
    else:
        smooth = _reduce(smooth, reduction)
    return loss * (1.0 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _class_view(weight: Tensor, ndim: int) -> Tensor:
    """Per-class weights shaped to broadcast against (N, C, d1, ...) (or (C,))."""
    if ndim <= 1:
        return weight
    return weight.reshape(1, -1, *([1] * (ndim - 2)))


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, reduction: str = "mean") -> Tensor:
    """-(t log s(x) + (1 - t) log(1 - s(x))), written stably as softplus(x) - t x."""
    return _reduce(_F.softplus(input) - target * input, reduction)
