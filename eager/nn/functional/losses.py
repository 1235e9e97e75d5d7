"""Losses of `eager.nn.functional` (regression, classification, margin and probabilistic;
CTC lives in ctc.py), reduced by the shared `reduction=` rule."""
from __future__ import annotations

import math as _math
import warnings

import numpy as np

from gmops.index_checks import CHECK_INDEX_RANGE, nll_target_message

from ... import _functional as _F
from ..._factories import arange
from ..._factories import ones as _ones
from ..._tensor import Tensor
from ...autograd.function import Function
from .. import _fused_losses
from ._utils import _REDUCTIONS, _data_range, _index_tensor
from .activations import logsigmoid
from .distances import cosine_similarity, pairwise_distance


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
    fused = _fused_losses.nll_loss(input, target, weight, ignore_index, reduction)  # one node, or None
    if fused is not None:
        return fused
    return _F._renamed(_nll_loss(input, target, weight, ignore_index, reduction), "NllLossBackward0")


def _nll_loss(input: Tensor, target: Tensor, weight: Tensor | None, ignore_index: int, reduction: str) -> Tensor:
    logp, flat_target, out_shape = _classes_last(input, target)
    if logp.shape[0] != flat_target.shape[0]:  # (checked before the dtype, as PyTorch does)
        raise ValueError(f"Expected input batch_size ({logp.shape[0]}) to match target batch_size "
                         f"({flat_target.shape[0]}).")
    if target.is_floating_point():
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.name}: nll_loss takes class "
                           "indices (pass class probabilities to cross_entropy instead)")
    if not (input.is_floating_point() or input.is_complex()):
        from gmbase.dtypes import scalar_type_name  # noqa: PLC0415

        raise NotImplementedError(f'"nll_loss_out_frame" not implemented for \'{scalar_type_name(input.dtype)}\': '
                                  "nll_loss takes log-probabilities (a float tensor)")
    n_classes = logp.shape[1]
    valid = flat_target != ignore_index
    safe_target = _F.where(valid, flat_target, 0)
    # The target's values are read at once on an eager Tensor; a tensor-like without data
    # (static's tracer) records a check_index_range node instead: the compiled graph raises the
    # same IndexError at run time rather than wrapping a negative target around.
    has_data = isinstance(target, Tensor)
    if has_data and safe_target.numel() and (int(safe_target.min()) < 0 or int(safe_target.max()) >= n_classes):
        raise IndexError(nll_target_message(n_classes))
    if not has_data:
        safe_target = CHECK_INDEX_RANGE(safe_target, low=0, high=n_classes, error="IndexError",
                                        message=nll_target_message(n_classes))
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
    fused = _fused_losses.cross_entropy(input, target, weight, ignore_index, reduction, label_smoothing)
    if fused is not None:  # two nodes on the arrays (nn/_fused_losses.py)
        return fused
    class_dim = 0 if input.ndim == 1 else 1
    logp = _F.log_softmax(input, class_dim)
    n_classes = input.shape[class_dim]
    # class probabilities only where the target has the input's shape; otherwise the target is
    # one of class indices, whose checks (batch size: ValueError; dtype, rank) speak, as PyTorch's
    if target.is_floating_point() and tuple(target.shape) == tuple(input.shape):
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


def _nll_loss_ops(logp: Tensor, target: Tensor, reduction: str, ignore_index: int = -100) -> Tensor:
    """The fused loss's case op by op (what its graph-recording backward differentiates)."""
    return _F._renamed(_nll_loss(logp, target, None, ignore_index, reduction), "NllLossBackward0")


def _class_view(weight: Tensor, ndim: int) -> Tensor:
    """Per-class weights shaped to broadcast against (N, C, d1, ...) (or (C,))."""
    if ndim <= 1:
        return weight
    return weight.reshape(1, -1, *([1] * (ndim - 2)))


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


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                reduction: str = "mean") -> Tensor:
    """Per sample, the mean over classes of -(y log sigmoid(x) + (1 - y) log sigmoid(-x))
    (times weight per class), then reduced over samples. Mirrors
    torch.nn.functional.multilabel_soft_margin_loss."""
    loss = -(target * logsigmoid(input) + (1 - target) * logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    return _reduce(_F.sum(loss, -1) / input.shape[-1], reduction)


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
