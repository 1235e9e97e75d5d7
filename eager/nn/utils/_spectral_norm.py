"""The hook form of spectral normalization (torch.nn.utils.spectral_norm): `name` becomes the
parameter `<name>_orig` plus the buffers `<name>_u` and `<name>_v` (the power iteration's
singular vector estimates); a forward pre-hook sets `name = W / sigma(W)`, running
`n_power_iterations` steps of power iteration first in training mode only."""
from __future__ import annotations

from typing import Any, TypeVar

from ... import _functional as _F
from ..._grad_mode import no_grad
from ..._tensor import Tensor
from .. import functional as F
from ..parameter import Parameter
from ._norm_helpers import remove_norm_hook

__all__ = ["SpectralNorm", "remove_spectral_norm", "spectral_norm"]

T = TypeVar("T")


def _normalize_into(x: Tensor, out: Tensor, eps: float) -> Tensor:
    """F.normalize(x, dim=0, eps=eps, out=out): the buffer is updated in place, as PyTorch's."""
    out.copy_(F.normalize(x, dim=0, eps=eps))
    return out


class SpectralNorm:
    """The pre-hook: parameter name, power iterations per forward, the output dim and eps."""

    _version: int = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        self.name = name
        self.dim = dim
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but "
                             f"got n_power_iterations={n_power_iterations}")
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        weight_mat = weight
        if self.dim != 0:
            weight_mat = weight_mat.permute(self.dim, *[d for d in range(weight_mat.dim()) if d != self.dim])
        return weight_mat.reshape(weight_mat.size(0), -1)

    def compute_weight(self, module: Any, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    v = _normalize_into(_F.matmul(weight_mat.t(), u), v, self.eps)
                    u = _normalize_into(_F.matmul(weight_mat, v), u, self.eps)
                u = u.clone()
                v = v.clone()
        sigma = _F.dot(u, _F.matmul(weight_mat, v))
        return weight / sigma

    def remove(self, module: Any) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Any, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Any, name: str, n_power_iterations: int, dim: int, eps: float) -> "SpectralNorm":
        for hook, _ in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        from ..lazy import UninitializedParameter  # noqa: PLC0415

        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. "
                             "Make sure to run the dummy forward before applying spectral normalization")
        with no_grad():
            weight_mat = fn.reshape_weight_to_matrix(weight)
            h, w = weight_mat.size()
            u = F.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = F.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def _default_dim(module: Any) -> int:
    from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: PLC0415

    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


def spectral_norm(module: T, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12,
                  dim: int | None = None) -> T:
    """Divide `module.<name>` by its largest singular value (estimated by power iteration)
    before every forward; dim defaults to 0, 1 for transposed convolutions."""
    SpectralNorm.apply(module, name, n_power_iterations, _default_dim(module) if dim is None else dim, eps)
    return module


def remove_spectral_norm(module: T, name: str = "weight") -> T:
    """Make `<name>` a plain parameter again (its current normalized value)."""
    return remove_norm_hook(module, SpectralNorm, name, "spectral_norm")
