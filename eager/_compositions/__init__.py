"""PyTorch functions that are compositions of the shared op set.

Each function here is written in terms of functions eager already has (`eager._functional`),
never in arrays and never as a new op record: a composition differentiates through the
backward rules of the ops it is made of, and static traces it like any other user code, so
one definition serves eager and compiled code alike. The exceptions read data on purpose:
`bincount` (its length depends on the values, so it runs eagerly only and a traced value
refuses it with static's TraceError, as `unique` and `nonzero` do) and the index factories
`tril_indices` / `triu_indices` (they read no tensor at all).

The functions are exported from `eager` and, where PyTorch has the method, attached to the
shared Tensor API (so eager tensors and static's traced values both get them).

One module per job, as eager/_functional: elementwise, reductions (scans included), linalg
and shape_ops; `_helpers` holds what they share.
"""
from .._api import TensorAPI
from .elementwise import copysign, deg2rad, hypot, logaddexp, logaddexp2, rad2deg, signbit, sinc, xlogy  # noqa: F401
from .linalg import cross, kron, tensordot  # noqa: F401
from .reductions import (  # noqa: F401
    bincount,
    cummax,
    cummin,
    logcumsumexp,
    nanmean,
    nansum,
    return_types_cummax,
    return_types_cummin,
    trapezoid,
)
from .shape_ops import (  # noqa: F401
    block_diag,
    broadcast_tensors,
    hsplit,
    rot90,
    take_along_dim,
    tensor_split,
    tril_indices,
    triu_indices,
    vsplit,
)

__all__ = [
    "block_diag", "bincount", "broadcast_tensors", "copysign", "cross", "cummax", "cummin", "deg2rad", "hsplit",
    "hypot", "kron", "logaddexp", "logaddexp2", "logcumsumexp", "nanmean", "nansum", "rad2deg", "rot90", "signbit",
    "sinc", "take_along_dim", "tensor_split", "tensordot", "trapezoid", "tril_indices", "triu_indices", "vsplit",
    "xlogy",
]

# -- the Tensor methods PyTorch has for these ---------------------------------------------------------
_METHODS = (
    logaddexp, logaddexp2, hypot, xlogy, copysign, sinc, deg2rad, rad2deg, signbit, nansum, nanmean, kron, cross,
    take_along_dim, tensor_split, hsplit, vsplit, rot90, bincount, cummax, cummin, logcumsumexp,
)
for _fn in _METHODS:
    setattr(TensorAPI, _fn.__name__, _fn)
