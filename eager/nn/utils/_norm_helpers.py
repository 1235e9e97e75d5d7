"""norm_except_dim and _weight_norm as torch's (the weight norm reparametrization's math),
and the removal both hook forms (weight_norm, spectral_norm) share."""
from __future__ import annotations

from typing import Any

from ... import linalg as _linalg
from ..._tensor import Tensor


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The `pow`-norm of v over every dim but `dim`, kept with size 1 there (dim = -1: the
    whole tensor's norm, a 0-d tensor, as torch.norm_except_dim)."""
    if dim == -1:
        return _linalg.vector_norm(v, pow)
    ndim = v.ndim
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    dim %= ndim
    others = [d for d in range(ndim) if d != dim]
    if not others:
        return v.abs()
    return _linalg.vector_norm(v, pow, dim=others, keepdim=True)


def weight_norm_values(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """v * (g / ||v||) with the norm over every dim but `dim` (torch._weight_norm)."""
    return v * (g / norm_except_dim(v, 2, dim))


def remove_norm_hook(module: Any, hook_type: Any, name: str, what: str) -> Any:
    """Drop the forward pre-hook of type `hook_type` that normalizes `<name>`, making it a
    plain parameter again (the hook's `remove`); PyTorch's ValueError when there is none."""
    hooks = module._forward_pre_hooks
    for k, (hook, _) in list(hooks.items()):
        if isinstance(hook, hook_type) and hook.name == name:
            hook.remove(module)
            del hooks[k]
            return module
    raise ValueError(f"{what} of '{name}' not found in {module}")
