"""`eager.nn.utils`: gradient clipping and flat parameter vectors, as torch.nn.utils (and
`rnn.pad_sequence`)."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

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
    if norm_type == 2.0:
        found = _clip_arrays(grads, float(max_norm), error_if_nonfinite)
        if found is not None:
            return found
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


def _clip_arrays(grads: list, max_norm: float, error_if_nonfinite: bool) -> Tensor | None:
    """clip_grad_norm_ for the 2-norm straight on the gradients' NumPy arrays (one dot product
    per gradient, one in-place scaling when it clips), where every gradient is a plain eager
    CPU tensor of one float dtype and no dispatch mode or trace is active; None otherwise.
    Written with ops it took five ops a gradient (norm, stack, norm, clamp, a cast and an
    in-place product each): a quarter of a seq2seq step's time. The same numbers as the ops:
    each gradient's norm in its dtype, the norm of those, then coef = min(max_norm /
    (total + 1e-6), 1) in that dtype multiplying every gradient (PyTorch's order)."""
    from ... import _dispatch  # noqa: PLC0415
    from ...optim.optimizer import bump_versions  # noqa: PLC0415

    if _dispatch._n_modes_pushed:
        return None
    arrays = []
    dtype = None
    for g in grads:
        a = g._data if type(g) is Tensor else None
        if type(a) is not np.ndarray or a.dtype.kind != "f" or (dtype is not None and a.dtype != dtype):
            return None
        dtype = a.dtype
        arrays.append(a)
    assert dtype is not None
    flat = [a.reshape(-1) for a in arrays]
    norms = np.array([np.sqrt(np.dot(f, f)) if f.size else 0.0 for f in flat], dtype=dtype)
    total = np.sqrt(np.dot(norms, norms)).astype(dtype)
    if error_if_nonfinite and not np.isfinite(total):
        raise RuntimeError("The total norm of order 2.0 for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    coef = np.minimum(dtype.type(max_norm) / (total + dtype.type(1e-6)), dtype.type(1.0))
    for a in arrays:
        np.multiply(a, coef, out=a)
    bump_versions(*grads)
    return Tensor._make(np.asarray(total, dtype=dtype))


def clip_grad_value_(parameters: Iterable[Tensor] | Tensor, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to [-clip_value, clip_value] in place."""
    with no_grad():
        for p in _params(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The norm of the norms of `tensors` (as if all were joined into one vector); 0 for none."""
    tensors = _params(tensors)
    norm_type = float(norm_type)
    if not tensors:
        from ..._factories import tensor  # noqa: PLC0415

        return tensor(0.0)
    norms = _F.stack([_F.norm(t.detach(), norm_type) for t in tensors])
    total = _F.amax(norms) if norm_type == math.inf else _F.norm(norms, norm_type)
    if error_if_nonfinite and not bool(_F.isfinite(total)):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
                           "so it cannot be clipped. To disable this error and scale the gradients by the "
                           "non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: Iterable[Tensor] | Tensor, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)) in place, total_norm
    being given (get_total_norm of the gradients: the two halves of clip_grad_norm_)."""
    grads = [p.grad for p in _params(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = _F.clamp(max_norm / (total_norm + 1e-6), max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm(parameters: Iterable[Tensor] | Tensor, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The deprecated spelling of clip_grad_norm_ (FutureWarning)."""
    import warnings  # noqa: PLC0415

    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


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



# The reparametrization and fusion helpers import the layer modules, which import this
# package (nn.rnn reads utils.rnn) while eager.nn is still loading: they load on first use.
_LAZY: dict[str, str] = {
    "convert_parameters": "convert_parameters", "parametrizations": "parametrizations",
    "parametrize": "parametrize", "stateless": "stateless", "fusion": "fusion",
    "spectral_norm": "_spectral_norm", "remove_spectral_norm": "_spectral_norm",
    "weight_norm": "_weight_norm", "remove_weight_norm": "_weight_norm",
    "fuse_conv_bn_eval": "fusion", "fuse_conv_bn_weights": "fusion",
    "fuse_linear_bn_eval": "fusion", "fuse_linear_bn_weights": "fusion", "skip_init": "init",
}


def __getattr__(name: str) -> Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module 'eager.nn.utils' has no attribute '{name}'")
    import importlib  # noqa: PLC0415

    module = importlib.import_module(f"{__name__}.{home}")
    if home == name:
        return module
    value = getattr(module, name)
    globals()[name] = value  # later lookups skip this hook
    return value
