"""eager: define-by-run tensors with PyTorch's autograd semantics, on NumPy or CuPy.

    import eager as torch
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    x.grad  # tensor([2., 4.])
"""
from __future__ import annotations

import builtins as _builtins
import math as _math

from gmbase.allocator import keep_freed_blocks as _keep_freed_blocks
from gmbase.version import __version__ as __version__  # (one constant, in the base layer for the disk cache)

import gmops as ops  # noqa: F401  (fills the registry first; eager.ops, the old name, is gmops itself)
from gmbase.dtypes import (  # noqa: F401
    bool_ as bool, dtype, float16, float32, float64, int8, int16, int32, int64, uint8,
)
from gmbase.dtypes import float16 as half, float32 as float, float64 as double, int64 as long  # noqa: F401
from gmbase.dtypes import int32 as int, int16 as short  # noqa: F401
from gmbase.dtypes import bfloat16, complex32  # noqa: F401  (names only: using them raises TypeError)
from ._device import cuda_is_available as _cuda_is_available, device  # noqa: F401
from ._grad_mode import (  # noqa: F401
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from . import _dispatch  # noqa: F401  (the op engine; it imports Tensor, whose op hook it is)
from ._tensor import Tensor  # noqa: F401
from ._tensor_metadata import Size  # noqa: F401
from ._memory_format import (  # noqa: F401
    channels_last, channels_last_3d, contiguous_format, memory_format, preserve_format,
)
from ._factories import (  # noqa: F401
    BoolTensor, ByteTensor, DoubleTensor, FloatTensor, HalfTensor, IntTensor, LongTensor,
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, linspace, manual_seed,
    ones, ones_like, rand, rand_like, randint, randn, randn_like, randperm, seed, tensor, zeros,
    zeros_like,
)
from ._functional import (  # noqa: F401
    add, all, amax, amin, any, argmax, argmin, broadcast_to, cat, chunk, clamp, clip, clone, concat,
    concatenate, div, divide, dot, expand, flatten, gelu, log_softmax, logsumexp, matmul, max, mean, min, mm, narrow,
    norm, permute, prod, reshape, rsub, select, softmax, softplus, split, square, squeeze, stack, std, sub,
    subtract, sum, swapaxes, t, transpose, true_divide, unbind, unsqueeze, var, where,
)
from ._surface import export_functions as _export_functions  # noqa: E402

# eager.<name> of each op whose record declares a function (eager._surface): exp, sin, mul, eq, isnan, ...
_export_functions(globals())
from . import autograd  # noqa: F401,E402
# -- added with the PyTorch-programs surface ---------------------------------------------------------
from ._functional import (  # noqa: F401,E402
    addmm, addmv, argsort, argwhere, baddbmm, bmm, cdist,
    broadcast_shape as broadcast_shapes, cumprod, cumsum, diag, diag_embed, diagonal,
    einsum, flip, fliplr, flipud, gather, ger, index_add, index_fill, index_select, kthvalue, lerp, masked_fill,
    masked_select, median, nonzero, outer, repeat_interleave, roll, scatter, scatter_add,
    scatter_reduce, sort, std_mean, topk, trace, tril, triu, unique, var_mean,
)
from ._factories import (  # noqa: F401,E402
    Generator, bernoulli, default_generator, get_rng_state, initial_seed, multinomial, normal, set_rng_state,
)
from ._functional import (  # noqa: F401,E402
    addcdiv, addcmul, atleast_1d, atleast_2d, atleast_3d, column_stack, count_nonzero, diff, dstack, hstack, isclose,
    meshgrid, moveaxis, movedim, row_stack, tile, vstack,
)
from .autograd import Function  # noqa: F401,E402
from ._compile import compile  # noqa: F401,E402,A004  (torch.compile's front door onto static.compile)
from . import _dynamo, _logging, compiler  # noqa: F401,E402  (torch._dynamo, torch._logging, torch.compiler)
from . import func, linalg, special  # noqa: F401,E402
from . import backends  # noqa: F401,E402  (torch imports these packages with itself)
from . import _higher_order_ops  # noqa: F401,E402  (torch._higher_order_ops: while_loop, scan)
from ._higher_order_ops import cond  # noqa: F401,E402  (torch.cond)
from .func import vmap  # noqa: F401,E402  (torch.vmap)
from ._settings import (  # noqa: F401,E402
    are_deterministic_algorithms_enabled, finfo, get_num_interop_threads, get_num_threads, iinfo,
    is_complex, is_deterministic_algorithms_warn_only_enabled, is_floating_point, set_num_interop_threads,
    set_flush_denormal, set_num_threads, set_printoptions, use_deterministic_algorithms,
)
from ._settings import get_float32_matmul_precision, set_float32_matmul_precision  # noqa: F401,E402
from ._settings import can_cast, promote_types, result_type  # noqa: F401,E402
from .special import logit  # noqa: F401,E402  (torch.logit is torch.special.logit)
from .special import digamma, erfinv, lgamma  # noqa: F401,E402  (torch.erfinv is torch.special.erfinv)
from ._functional import bucketize, cartesian_prod, combinations, histc, index_put, searchsorted  # noqa: F401,E402
from ._compositions import (  # noqa: F401,E402
    bincount, block_diag, broadcast_tensors, copysign, cross, cummax, cummin, deg2rad, hsplit, hypot, kron, logaddexp,
    logaddexp2, logcumsumexp, nanmean, nansum, rad2deg, rot90, signbit, sinc, take_along_dim, tensor_split, tensordot,
    trapezoid, tril_indices, triu_indices, vsplit, xlogy,
)
from ._factories import logspace  # noqa: F401,E402
from ._functional import (  # noqa: F401,E402  (scatters, statistics, as_strided)
    as_strided, corrcoef, cov, diagonal_scatter, gradient, histogram, index_copy, index_reduce, masked_scatter, mode,
    nanmedian, nanquantile, put, quantile, select_scatter, slice_scatter,
)
from ._functional.gamma_family import igamma, igammac, mvlgamma, polygamma  # noqa: F401,E402
from ._linalg_decompositions import matrix_exp  # noqa: F401,E402  (torch.matrix_exp is torch.linalg.matrix_exp)
from ._conveniences import (  # noqa: F401,E402  (eager._conveniences also attaches their Tensor methods)
    addbmm, addr, aminmax, chain_matmul, conj, conj_physical, diagflat, dist, dsplit, fmax, fmin, gcd, imag, inner,
    isin, isneginf, isposinf, isreal, lcm, matrix_power, msort, mv, range_ as range, ravel, real, renorm,
    resolve_conj, resolve_neg, split_with_sizes, swapdims, take, unflatten, unique_consecutive, unravel_index,
    vander, vdot,
)
from ._conveniences.methods import hardshrink, prelu  # noqa: F401,E402  (torch.hardshrink, torch.prelu)
from .linalg import det, inv as inverse  # noqa: F401,E402
from ._linalg_decompositions import (  # noqa: F401,E402  (torch.<name> of the decompositions)
    cholesky_inverse, cholesky_legacy as cholesky, cholesky_solve, logdet, svd_legacy as svd,
)
from .linalg import pinv as pinverse, slogdet  # noqa: F401,E402
from ._linalg_more import lu_unpack  # noqa: F401,E402  (torch.lu_unpack)
from . import amp  # noqa: E402
from .amp import autocast, is_autocast_available  # noqa: F401,E402


# `bool`, `int` and `float` are eager dtypes in this module (as in torch): annotations and
# conversions below use the builtins by their full name.
from . import cuda  # noqa: E402,F401  (torch.cuda, a package as in torch: `import torch.cuda.amp` works)


class cpu:  # noqa: N801  (mirrors the torch.cpu namespace)
    """`eager.cpu.amp.autocast` / `GradScaler`, as PyTorch spells them per device."""

    amp = amp.cpu_amp

    @staticmethod
    def is_available() -> _builtins.bool:
        return True


def is_tensor(obj: object) -> _builtins.bool:
    """Whether `obj` is an eager.Tensor (a traced value standing for one, inside a compiled
    function, too). Mirrors torch.is_tensor."""
    return isinstance(obj, Tensor) or hasattr(type(obj), "__graphmode_inplace__")


def numel(input: Tensor) -> _builtins.int:
    """The number of elements of `input`. Mirrors torch.numel."""
    return input.numel()


def get_default_dtype() -> dtype:
    """The dtype Python floats become in factories and tensor() (see set_default_dtype).

    Mirrors torch.get_default_dtype."""
    from gmbase import dtypes as _dtypes  # noqa: PLC0415

    return _dtypes.DEFAULT_FLOAT


def set_default_dtype(d: dtype) -> None:
    """The dtype of Python floats in factories and tensor(): float32 (default) or float64."""
    from gmbase import dtypes as _dtypes  # noqa: PLC0415

    d = _dtypes.as_dtype(d)
    if not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type (got {d.name})")
    _dtypes.DEFAULT_FLOAT = d


def allclose(input: Tensor, other: Tensor, rtol: _builtins.float = 1e-5, atol: _builtins.float = 1e-8,
             equal_nan: _builtins.bool = False) -> _builtins.bool:
    """Whether |input - other| <= atol + rtol * |other| holds for every element (NaNs equal if `equal_nan`).

    Mirrors torch.allclose."""
    import numpy as _np  # noqa: PLC0415

    return _builtins.bool(_np.allclose(_np.asarray(input.detach()), _np.asarray(other.detach()), rtol=rtol, atol=atol,
                             equal_nan=equal_nan))


def equal(input: Tensor, other: Tensor) -> _builtins.bool:
    """Whether input and other have the same shape and the same elements. Mirrors torch.equal."""
    return tuple(input.shape) == tuple(other.shape) and _builtins.bool((input == other).all())


# The training API (nn, optim, utils.data), graph pictures and the other namespaces built on the
# core above load on first use (PEP 562): `import static.ir`, which needs only the op set and
# dtypes, must not pay for nn and optim (tests/test_import_contracts.py). `eager.nn`,
# `from eager import nn` and `import eager.nn` all still work.
_LAZY_SUBMODULES = frozenset({"distributed", "distributions", "jit", "nn", "onnx", "optim", "random", "testing", "utils",
                              "viz"})
_NN_ACTIVATIONS = frozenset({"selu", "celu", "rrelu", "threshold", "relu_", "selu_", "celu_", "rrelu_", "threshold_"})
from ._conveniences.spelling_names import NN_SPELLINGS as _NN_SPELLINGS  # noqa: E402


def __getattr__(name: str) -> object:
    if name in _LAZY_SUBMODULES:
        import importlib  # noqa: PLC0415

        return importlib.import_module(f"{__name__}.{name}")  # the import binds it as an attribute too
    if name in _NN_ACTIVATIONS:  # torch.selu, torch.relu_, ...: nn.functional's, loaded on first use
        from .nn import functional as _nnf  # noqa: PLC0415

        return getattr(_nnf, name)
    if name in _NN_SPELLINGS:  # torch.conv2d, torch.dropout(x, p, train), ...: on first use, as nn
        from ._conveniences import torch_spellings  # noqa: PLC0415

        return getattr(torch_spellings, name)
    raise AttributeError(f"module 'eager' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _LAZY_SUBMODULES)


from . import accelerator  # noqa: E402,F401
from ._factories import get_default_device, set_default_device  # noqa: E402,F401
from .serialization import load, save  # noqa: E402,F401
from . import sparse  # noqa: E402,F401  (sparse COO tensors)
from .sparse import layout, sparse_coo, sparse_coo_tensor, strided  # noqa: E402,F401
from .sparse import spmm  # noqa: E402,F401

from ._out import install as _install_out  # noqa: E402
_install_out(globals())  # torch.<fn>(..., out=t) for the functions PyTorch gives out= (eager._out)
from ._conveniences.method_spellings import install as _install_method_spellings  # noqa: E402
_install_method_spellings(globals())  # torch.abs_(t), torch.detach(t), torch.is_nonzero(t), ...: the methods
from ._conveniences.factories_flags import *  # noqa: E402,F401,F403  (windows, asarray, typename, mode queries)

# torch's numeric constants (torch.pi, torch.e, torch.inf, torch.nan): Python floats, as PyTorch's
pi: _builtins.float = _math.pi
e: _builtins.float = _math.e
inf: _builtins.float = _math.inf
nan: _builtins.float = _math.nan

_keep_freed_blocks()  # large arrays reused, not page-faulted in again every step (gmbase.allocator)
