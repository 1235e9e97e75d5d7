"""PyTorch conveniences programs call that eager lacked: `torch.*` functions and Tensor
methods (mv, take, isin, fmax, aminmax, unflatten, renorm, vander, unique_consecutive, the
legacy Tensor.new, ...) and in-place forms of existing functions (cumsum_, hypot_, addmm_, ...).

Each is written in eager's existing functions (never arrays, never a new op record) unless
it must read values (gcd/lcm, unique_consecutive, apply_/map_), so gradients, static tracing
and the code generators come from the ops they are made of.

One module per job: `pointwise`, `linalg`, `shape_ops`, `methods` (Tensor-only ones). This
module attaches the methods and in-place forms to the shared Tensor API (eager tensors and
static's traced values both get them), as `eager._compositions` does.
"""
from __future__ import annotations

from typing import Any

from .. import _functional as _F
from .._api import TensorAPI
from .._api.inplace import _InPlace
from .._compositions import copysign, deg2rad, hypot, rad2deg, sinc, xlogy
from ..special import logit
from . import methods as _methods
from . import tensor_extras as _tensor_extras
from .linalg import (  # noqa: F401
    addbmm,
    addr,
    chain_matmul,
    diagflat,
    dist,
    inner,
    linalg_vander,
    matrix_power,
    mv,
    renorm,
    vander,
    vdot,
)
from .pointwise import (  # noqa: F401
    conj,
    conj_physical,
    fmax,
    fmin,
    gcd,
    imag,
    isneginf,
    isposinf,
    isreal,
    lcm,
    real,
    resolve_conj,
    resolve_neg,
)
from .shape_ops import (  # noqa: F401
    aminmax,
    dsplit,
    isin,
    msort,
    range_,
    ravel,
    return_types_aminmax,
    split_with_sizes,
    sum_to_size,
    swapdims,
    take,
    unflatten,
    unique_consecutive,
    unravel_index,
)

__all__ = [
    "addbmm", "addr", "aminmax", "chain_matmul", "conj", "conj_physical", "diagflat", "dist", "dsplit", "fmax",
    "fmin", "gcd", "imag", "inner", "isin", "isneginf", "isposinf", "isreal", "lcm", "linalg_vander",
    "matrix_power", "msort", "mv", "range_", "ravel", "real", "renorm", "resolve_conj", "resolve_neg",
    "split_with_sizes", "sum_to_size", "swapdims", "take", "unflatten", "unique_consecutive", "unravel_index",
    "vander", "vdot",
]


def _real_property(self: Any) -> Any:
    """The real part: a real tensor itself. Mirrors torch.Tensor.real."""
    return real(self)


def _imag_property(self: Any) -> Any:
    """The imaginary part: a real tensor has none (PyTorch's RuntimeError). Mirrors torch.Tensor.imag."""
    return imag(self)


# -- Tensor methods (PyTorch's names; the function's first parameter is self) ---------------------------
_METHODS: dict[str, Any] = {
    fn.__name__: fn for fn in (
        fmax, fmin, isneginf, isposinf, isreal, gcd, lcm, conj, conj_physical, resolve_conj, resolve_neg,
        addbmm, addr, diagflat, dist, inner, matrix_power, mv, renorm, vdot,
        aminmax, dsplit, msort, ravel, split_with_sizes, sum_to_size, swapdims, take, unflatten,
        unique_consecutive,
    )
}
for _name in ("new_empty", "new_empty_strided", "new", "byte", "char", "short", "bfloat16", "get_device",
              "register_post_accumulate_grad_hook", "apply_", "map_", "equal", "hardshrink", "prelu"):
    _METHODS[_name] = getattr(_methods, _name)

# -- in-place forms: the function's result written back (saves_self: its backward reads the old value)
_INPLACE: dict[str, _InPlace] = {
    "cumsum_": _InPlace(_F.cumsum, saves_self=False),
    "cumprod_": _InPlace(_F.cumprod, saves_self=True),
    "logit_": _InPlace(logit, saves_self=True),
    "hypot_": _InPlace(hypot, saves_self=True),
    "copysign_": _InPlace(copysign, saves_self=True),
    "sinc_": _InPlace(sinc, saves_self=True),
    "deg2rad_": _InPlace(deg2rad, saves_self=False),
    "rad2deg_": _InPlace(rad2deg, saves_self=False),
    "xlogy_": _InPlace(xlogy, saves_self=True),
    "gcd_": _InPlace(gcd, saves_self=False),
    "lcm_": _InPlace(lcm, saves_self=False),
    "renorm_": _InPlace(renorm, saves_self=True),
    "addr_": _InPlace(addr, saves_self=False),
    "addbmm_": _InPlace(addbmm, saves_self=False),
    "addmm_": _InPlace(_F.addmm, saves_self=False),
    "addmv_": _InPlace(_F.addmv, saves_self=False),
    "baddbmm_": _InPlace(_F.baddbmm, saves_self=False),
}


def _install() -> None:
    """Attach what the Tensor API lacks; a name someone has since defined there is kept."""
    for name, fn in _METHODS.items():
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, fn)
    for name, entry in _INPLACE.items():
        if not hasattr(TensorAPI, name):
            entry.__set_name__(TensorAPI, name)
            setattr(TensorAPI, name, entry)
    for name, fn in _tensor_extras.METHODS.items():
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, fn)
    for name, getter in _tensor_extras.PROPERTIES.items():
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, property(getter))
    for name, getter in (("real", _real_property), ("imag", _imag_property), ("output_nr", _methods.output_nr)):
        if not hasattr(TensorAPI, name):
            setattr(TensorAPI, name, property(getter))


_install()
