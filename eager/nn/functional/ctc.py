"""Connectionist temporal classification loss: the alpha-beta recursion and its autograd Function."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..._tensor import Tensor
from ...autograd.function import Function
from ._utils import _REDUCTIONS


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
        from ..._factories import tensor as _tensor  # noqa: PLC0415

        return _tensor(out.astype(lp.dtype if log_probs.dtype.name == "float64" else np.float32),
                       dtype=log_probs.dtype, device=log_probs.device)

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple:
        from ..._factories import tensor as _tensor  # noqa: PLC0415

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
    from ..._factories import tensor as _tensor  # noqa: PLC0415

    lens = _tensor([max(v, 1) for v in tg_lens], dtype=per_sample.dtype, device=per_sample.device)
    return (per_sample / lens).mean()
