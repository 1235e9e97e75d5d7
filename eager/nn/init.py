"""`eager.nn.init`: fill parameters in place without recording a graph (as torch.nn.init)."""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from .._grad_mode import no_grad
from .._tensor import Tensor


def _fans(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions")
    receptive = 1
    for s in tuple(tensor.shape)[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The gain PyTorch recommends for each nonlinearity (scales the init bounds)."""
    # (PyTorch returns the int 1 for the linear ones: it prints as 1)
    gains: dict[str, float] = {"linear": 1, "sigmoid": 1, "tanh": 5.0 / 3, "relu": math.sqrt(2.0), "selu": 3.0 / 4,
                               "conv1d": 1, "conv2d": 1, "conv3d": 1, "conv_transpose1d": 1, "conv_transpose2d": 1,
                               "conv_transpose3d": 1}
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity not in gains:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    return gains[nonlinearity]


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _host_rng(generator):
    """The NumPy generator behind `generator` (an eager.Generator), or eager's global one."""
    from .._factories import _RNG, _numpy_rng  # noqa: PLC0415

    return _RNG["numpy"] if generator is None else _numpy_rng(generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 0.0)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _fans(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    """He et al.'s standard deviation, gain / sqrt(fan), shared by the uniform and normal forms
    (0 for a tensor with no elements)."""
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0


def kaiming_uniform_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator=None) -> Tensor:
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)  # the uniform with that std
    return uniform_(tensor, -bound, bound, generator)


# == added with the PyTorch-programs surface =======================================================
def _no_grad_write(tensor: Tensor, values: Tensor) -> Tensor:
    with no_grad():
        return tensor.copy_(values)


def eye_(tensor: Tensor) -> Tensor:
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    from .._factories import eye  # noqa: PLC0415

    rows, cols = tensor.shape
    return _no_grad_write(tensor, eye(rows, cols, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    with no_grad():
        tensor.zero_()
        out_per_group = tensor.shape[0] // groups
        centre = tuple(s // 2 for s in tuple(tensor.shape)[2:])
        for g in range(groups):
            for d in range(min(out_per_group, tensor.shape[1])):
                tensor[(g * out_per_group + d, d) + centre] = 1.0
    return tensor


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def kaiming_normal_(tensor: Tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator=None) -> Tensor:
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None) -> Tensor:
    """Normal(mean, std) samples redrawn until they lie in [a, b]."""
    import numpy as np  # noqa: PLC0415

    from .._factories import tensor as _tensor  # noqa: PLC0415

    rng = _host_rng(generator)
    n = tensor.numel()
    out = np.empty(0)
    while out.size < n:
        draw = rng.normal(mean, std, 2 * n + 16)
        out = np.concatenate([out, draw[(draw >= a) & (draw <= b)]])
    return _no_grad_write(tensor, _tensor(out[:n].reshape(tuple(tensor.shape)), dtype=tensor.dtype,
                                          device=tensor.device))


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix from the QR of a Gaussian one, sign-corrected as PyTorch's."""
    import numpy as np  # noqa: PLC0415

    from .._factories import tensor as _tensor  # noqa: PLC0415

    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _host_rng(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _no_grad_write(tensor, _tensor(gain * q.reshape(tuple(tensor.shape)), dtype=tensor.dtype,
                                          device=tensor.device))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    zeros_per_col = int(math.ceil(sparsity * rows))
    normal_(tensor, 0.0, std, generator)
    rng = _host_rng(generator)
    with no_grad():
        for c in range(cols):
            for r in rng.permutation(rows)[:zeros_per_col]:
                tensor[int(r), c] = 0.0
    return tensor


def _make_deprecate(meth: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """The old spelling without the trailing underscore: warns (FutureWarning, as PyTorch's
    nn.init) and calls the in-place form."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args: Any, **kwargs: Any) -> Tensor:
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of `nn.init.{new_name}`.",
                      FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"{old_name}(...) is deprecated: use {new_name}(...)."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
