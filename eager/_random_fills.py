"""The in-place random fills PyTorch draws from further distributions: geometric_,
log_normal_ and cauchy_, each a transform of the generator's uniform or normal draws (as
exponential_ on eager.Tensor). Under a trace the fill is computed from the draw each call
makes: static's Tracer mixes these in too and gives its own `_random_fill` (the draw a graph
input each call makes anew), so a compiled function draws afresh on every call."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

_T = TypeVar("_T", bound="RandomFills")


def _fill(self: Any, kind: str, transform: Callable[[Any], Any], name: str) -> Any:
    """Write transform(draw) into self, the draw of `kind` ("uniform" in [0, 1), "normal")."""
    from . import _dispatch, _inplace  # noqa: PLC0415
    from ._factories import _rng_array_gen  # noqa: PLC0415
    from ._tensor import Tensor  # noqa: PLC0415

    _inplace.check_fill_under_vmap()
    draw = Tensor._make(_rng_array_gen(None, kind, self.shape, self.dtype, self.device))
    value = transform(draw)
    if _dispatch.current_modes():  # traced (static): recorded from the draw each call makes
        return self.copy_(value)
    _inplace.write(self, value._data.astype(self._data.dtype, copy=False), name)
    return self


class RandomFills:
    """geometric_, log_normal_, cauchy_ (mixed into eager.Tensor and static's Tracer): each
    checks its arguments and hands `_random_fill` the draw's kind and its transform."""

    def _random_fill(self, kind: str, transform: Callable[[Any], Any], name: str) -> Any:
        return _fill(self, kind, transform, name)

    def geometric_(self: _T, p: float, *, generator: Any = None) -> _T:
        """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...).
        Mirrors torch.Tensor.geometric_."""
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
        _no_generator(generator, "geometric_")
        scale = 1.0 / math.log1p(-p)
        return self._random_fill("uniform", lambda u: ((-u).log1p() * scale).ceil().clamp(min=1), "geometric_")

    def log_normal_(self: _T, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> _T:
        """Fill with exp of normal(mean, std) draws. Mirrors torch.Tensor.log_normal_."""
        if std <= 0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
        _no_generator(generator, "log_normal_")
        return self._random_fill("normal", lambda z: (z * std + mean).exp(), "log_normal_")

    def cauchy_(self: _T, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> _T:
        """Fill with Cauchy(median, sigma) draws. Mirrors torch.Tensor.cauchy_."""
        if sigma <= 0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
        _no_generator(generator, "cauchy_")
        return self._random_fill("uniform", lambda u: ((u - 0.5) * math.pi).tan() * sigma + median, "cauchy_")


def _no_generator(generator: Any, name: str) -> None:
    if generator is not None:
        raise NotImplementedError(f"{name}: a generator argument is not supported; seed the default generator "
                                  "with manual_seed")
