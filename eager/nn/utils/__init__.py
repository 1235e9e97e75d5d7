"""`eager.nn.utils`: gradient clipping and flat parameter vectors, as torch.nn.utils (and
`rnn.pad_sequence`)."""
from __future__ import annotations

import math
from collections.abc import Iterable

from ... import _functional as _F
from ..._grad_mode import no_grad
from ..._tensor import Tensor
from . import rnn  # noqa: F401  (nn.utils.rnn.pad_sequence)


def _params(parameters) -> list[Tensor]:
    if isinstance(parameters, Tensor):
        return [parameters]
    return list(parameters)


def clip_grad_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Scale all gradients together so that their joint norm is at most max_norm; returns the
    norm before clipping (a 0-d tensor)."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    from ..._factories import tensor  # noqa: PLC0415

    if not grads:
        return tensor(0.0)
    norm_type = float(norm_type)
    with no_grad():
        norms = _F.stack([_F.norm(g.detach(), norm_type) for g in grads])
        total = _F.amax(norms) if norm_type == math.inf else _F.norm(norms, norm_type)
        if error_if_nonfinite and not bool(_F.isfinite(total)):
            raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                               "so it cannot be clipped. To disable this error and scale the gradients by the "
                               "non-finite norm anyway, set `error_if_nonfinite=False`")
        coef = _F.clamp(max_norm / (total + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    with no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def get_total_norm(tensors: Iterable[Tensor], norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    norms = _F.stack([_F.norm(t.detach(), float(norm_type)) for t in tensors])
    return _F.amax(norms) if norm_type == math.inf else _F.norm(norms, float(norm_type))


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and joined into one 1-D tensor (differentiable)."""
    return _F.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Copy slices of vec into the parameters' data, in order."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    start = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[start:start + n].reshape(*p.shape))
            start += n
