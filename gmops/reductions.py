"""Reductions and normalizations along axes. `dims` is None (all axes) or a sorted tuple
of non-negative axes; the public wrappers normalize what users write."""
from __future__ import annotations

import math

import numpy as np

from gmbase import dtypes as _dtypes
from gmbase.fpstate import quiet_fp, restore_fp

from ._checks import norm_dim, numel, reduced_shape, require_float
from ._native import kernels_module, try_native
from ._registry import Reduction, TensorSpec, defop
from .elementwise import EQ, EXP, WHERE
from .shape_ops import EXPAND, INDEX_PUT, PERMUTE, RESHAPE, UNSQUEEZE
from .special import FULL_LIKE

_int_dtypes_to_i64 = {_dtypes.bool_, _dtypes.uint8, _dtypes.int8, _dtypes.int16, _dtypes.int32}


def _axes(dims, x=None):
    """NumPy's `axis` for `dims`; a 0-d tensor reduces over its (only) dim 0 or -1, as in
    PyTorch, which NumPy spells axis=None."""
    return None if dims is None or (x is not None and x.ndim == 0) else tuple(dims)


_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)


def _upcast(x):
    """x in the dtype a reduction accumulates in, as PyTorch's CPU kernels do: float16 in
    float32 (summing 0.1 a hundred thousand times in float16 stalls at 256; exp and squares
    overflow at 65504); other dtypes as they are."""
    return x.astype(_F32) if x.dtype == _F16 else x


def _sum_like(fn: str, ufunc):
    """sum/prod forward: integer and bool inputs give int64 (PyTorch's integer reduction
    dtype; NumPy would give uint64 for uint8, a dtype eager has no tensor type for), float16
    accumulates in float32 and is rounded once at the end. On NumPy the ufunc's own reduce
    is called (np.sum is a Python wrapper around it, about a microsecond a call)."""

    def forward(xp, x, dims=None, keepdim=False):
        axis = _axes(dims, x)
        reduce = ufunc.reduce if xp is np else getattr(xp, fn)
        kind = x.dtype.kind
        if kind == "f":
            if x.dtype == _F16:
                return reduce(x, axis=axis, keepdims=keepdim, dtype=_F32).astype(_F16)
            return reduce(x, axis=axis, keepdims=keepdim)
        if kind in "biu":
            return reduce(x, axis=axis, keepdims=keepdim, dtype=np.int64)
        return reduce(x, axis=axis, keepdims=keepdim)

    return forward


def _group_size(shape, dims) -> int:
    return numel(shape) if dims is None or not shape else numel(tuple(shape[d] for d in dims))


def _mean(xp, x, dims=None, keepdim=False):
    """NumPy's mean (float16 already accumulates in float32 there); an empty group gives NaN
    silently as in PyTorch, where NumPy would warn "Mean of empty slice"."""
    axis = _axes(dims, x)
    if x.size == 0:
        total = xp.sum(x, axis=axis, keepdims=keepdim)
        return (total / x.dtype.type(_group_size(x.shape, dims))).astype(x.dtype, copy=False)
    return xp.mean(x, axis=axis, keepdims=keepdim)


def _reduce_abstract(name, float_only=False, widen_ints=False):
    def abstract(x, dims=None, keepdim=False, **attrs):
        if float_only:
            require_float(name, x)
        for d in dims or ():
            if not 0 <= d < max(x.ndim, 1):
                raise IndexError(f"{name}: Dimension out of range (got {d} for a {x.ndim}-d tensor)")
        dt = _dtypes.int64 if widen_ints and x.dtype in _int_dtypes_to_i64 else x.dtype
        return TensorSpec(reduced_shape(x.shape, dims, keepdim), dt)

    return abstract


def _keep(ctx, value):
    """A reduced value (gradient or result) reshaped to keepdim form, ready to broadcast."""
    shape = reduced_shape(ctx.in_shape(0), ctx.attrs["dims"], True)
    return value if tuple(value.shape) == shape else RESHAPE(value, shape=shape)


def _expand_back(ctx, g):
    if g.ndim == 0:  # a full reduction's gradient broadcasts as it is (no reshape op first)
        return EXPAND(g, shape=ctx.in_shape(0))
    return EXPAND(_keep(ctx, g), shape=ctx.in_shape(0))


def _count(ctx):
    return _group_size(ctx.in_shape(0), ctx.attrs["dims"])


def _mean_grad(ctx, g):
    """g spread over the reduced elements, divided by their count (0: an empty input). A count
    that is a symbolic size (a compiled function's dynamic batch dimension) divides as a size
    read at run time: 1/count as a number would fix the traced call's size in the graph."""
    count = _count(ctx)
    if type(count) is not int and isinstance(count, int):
        return _expand_back(ctx, g) / count
    return _expand_back(ctx, g) * (1.0 / max(count, 1))


def _reduce_samples(**extra):
    def make(rng):
        x = rng.standard_normal((3, 4, 2))
        return [((x,), {"dims": None, "keepdim": False, **extra}),
                ((x,), {"dims": (1,), "keepdim": True, **extra}),
                ((x,), {"dims": (0, 2), "keepdim": False, **extra})]

    return make


def _by_dims(full: str, partial: str):
    return lambda operands, attrs: full if attrs.get("dims") is None else partial


SUM = defop(
    "sum", forward=_sum_like("sum", np.add),
    abstract=_reduce_abstract("sum", widen_ints=True), vjp=lambda ctx, g: (_expand_back(ctx, g),),
    grad_name=_by_dims("SumBackward0", "SumBackward1"), kind="reduction", samples=_reduce_samples(),
    reduction=Reduction("add", 0.0),
)
MEAN = defop(
    "mean", forward=_mean,
    abstract=_reduce_abstract("mean", float_only=True),
    vjp=lambda ctx, g: (_mean_grad(ctx, g),),
    grad_name=_by_dims("MeanBackward0", "MeanBackward1"), kind="reduction", samples=_reduce_samples(),
    reduction=Reduction("add", 0.0, divide_by_count=True),
)


def _prod_vjp(ctx, g):
    return (_expand_back(ctx, g) * PROD_EXCEPT_SELF(ctx.input(0), dims=ctx.attrs["dims"]),)


PROD = defop(
    "prod", forward=_sum_like("prod", np.multiply),
    abstract=_reduce_abstract("prod", widen_ints=True), vjp=_prod_vjp, save=(0,),
    grad_name=_by_dims("ProdBackward0", "ProdBackward1"), kind="reduction",
    samples=_reduce_samples(),
    reduction=Reduction("mul", 1.0),
)


def _prod_except_self(xp, x, dims=None):
    """For each element, the product of the others in its reduction group; exact with
    zeros (no division), by products of prefixes and suffixes along the flattened group."""
    nd = x.ndim
    if nd == 0 or x.size == 0:
        return xp.ones_like(x)  # a group of one element (or none): the empty product
    axes = tuple(range(nd)) if dims is None else tuple(dims)
    rest = tuple(i for i in range(nd) if i not in axes)
    moved = xp.transpose(x, rest + axes)
    flat = moved.reshape(moved.shape[: len(rest)] + (-1,))
    ones = xp.ones(flat.shape[:-1] + (1,), dtype=x.dtype)
    before = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
    after = xp.flip(xp.cumprod(xp.flip(xp.concatenate([flat[..., 1:], ones], axis=-1), -1), axis=-1), -1)
    out = (before * after).reshape(moved.shape)
    inverse = [0] * nd
    for i, a in enumerate(rest + axes):
        inverse[a] = i
    return xp.transpose(out, inverse)


def _prod_except_self_vjp(ctx, g):
    """d out_i / d x_k = prod of the group without i and k (0 for k = i), so
    grad_k = sum_{i != k} g_i * prod_{j != i, k} x_j, exact with zeros.

    Written with ops, so it is differentiable again (prod's hessian and beyond): each
    group of n elements is spread into an n x n matrix whose row k is the group with x_k
    set to 1; prod_except_self along the rows then gives every prod_{j != i, k} x_j. The
    diagonal is a strided slice of the flattened matrix (step n + 1), so no index tensor
    is needed. Costs O(n^2) per group, only where a second derivative is asked for."""
    x = ctx.input(0)
    shape = tuple(ctx.in_shape(0))
    nd = len(shape)
    if nd == 0 or numel(shape) == 0:
        return (FULL_LIKE(x, value=0.0),)  # the empty product is a constant
    dims = ctx.attrs["dims"]
    axes = tuple(range(nd)) if dims is None else tuple(dims)
    rest = tuple(i for i in range(nd) if i not in axes)
    perm = rest + axes
    rest_shape = tuple(shape[i] for i in rest)
    n = numel(tuple(shape[i] for i in axes))
    moved_shape = tuple(shape[i] for i in perm)
    flat = rest_shape + (n,)
    xf = RESHAPE(PERMUTE(x, dims=perm), shape=flat)
    gf = RESHAPE(PERMUTE(g, dims=perm), shape=flat)
    diagonal = (("ellipsis",), ("slice", None, None, n + 1))
    square = rest_shape + (n, n)
    spread = RESHAPE(EXPAND(UNSQUEEZE(xf, dim=len(rest)), shape=square), shape=rest_shape + (n * n,))
    rows = RESHAPE(INDEX_PUT(spread, 1.0, key=diagonal, n_index=0), shape=square)
    pairs = PROD_EXCEPT_SELF(rows, dims=(len(rest) + 1,)) * UNSQUEEZE(gf, dim=len(rest))
    pairs = INDEX_PUT(RESHAPE(pairs, shape=rest_shape + (n * n,)), 0.0, key=diagonal, n_index=0)
    grad = SUM(RESHAPE(pairs, shape=square), dims=(len(rest) + 1,), keepdim=False)
    inverse = [0] * nd
    for i, a in enumerate(perm):
        inverse[a] = i
    return (PERMUTE(RESHAPE(grad, shape=moved_shape), dims=tuple(inverse)),)


PROD_EXCEPT_SELF = defop(
    "prod_except_self", forward=_prod_except_self,
    abstract=lambda x, dims=None: x, kind="reduction",
    vjp=_prod_except_self_vjp, save=(0,),
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dims": (1,)}),
                         ((rng.standard_normal((2, 3, 2)),), {"dims": (0, 2)}),
                         ((rng.standard_normal((3,)),), {"dims": None})],
    doc="helper of prod's VJP: each element's product of the others in its group; "
        "differentiable (prod's second derivatives go through it)",
)


def _amax_vjp(ctx, g):
    x, out = ctx.input(0), _keep(ctx, ctx.out)
    mask = EQ(x, out)
    ties = SUM(WHERE(mask, 1.0, 0.0), dims=ctx.attrs["dims"], keepdim=True)
    return (WHERE(mask, _expand_back(ctx, g) / ties, 0.0),)


def _check_nonempty(name: str, shape: tuple, dims, full_error=RuntimeError) -> None:
    """A maximum (or its index) over no elements is undefined: PyTorch's errors."""
    if dims is None:
        if numel(shape) == 0:
            raise full_error(f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
                             "Specify the reduction dim with the 'dim' argument.")
        return
    for d in dims:
        if d < len(shape) and shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")


def _extreme_abstract(name):
    base = _reduce_abstract(name)

    def abstract(x, dims=None, keepdim=False):
        _check_nonempty(name, x.shape, dims)
        return base(x, dims=dims, keepdim=keepdim)

    return abstract


def _amax_like(name, fn, grad_name, combiner, identity):
    return defop(
        name,
        forward=lambda xp, x, dims=None, keepdim=False: getattr(xp, fn)(x, axis=_axes(dims, x), keepdims=keepdim),
        abstract=_extreme_abstract(name), vjp=_amax_vjp, grad_name=grad_name, save=(0,), save_output=True,
        kind="reduction", samples=_reduce_samples(),
        doc="gradient shared evenly between tied maxima",
        reduction=Reduction(combiner, identity),
    )


AMAX = _amax_like("amax", "amax", "AmaxBackward0", "maximum", -math.inf)
AMIN = _amax_like("amin", "amin", "AminBackward0", "minimum", math.inf)
MAX_ALL = _amax_like("max", "amax", "MaxBackward1", "maximum", -math.inf)
MIN_ALL = _amax_like("min", "amin", "MinBackward1", "minimum", math.inf)


def _arg_abstract(name):
    def abstract(x, dim=None, keepdim=False):
        dims = None if dim is None else (dim,)
        _check_nonempty(name, x.shape, dims, full_error=IndexError)
        return TensorSpec(reduced_shape(x.shape, dims, keepdim), _dtypes.int64)

    return abstract


_NATIVE_ARG_MIN = 1 << 12  # elements from which argmax/argmin along a middle axis runs natively


def _argreduce(fn):
    def forward(xp, x, dim=None, keepdim=False):
        if x.dtype.kind == "b":
            raise RuntimeError(f"{fn}(): does not support bool input")
        if dim is None:
            r = getattr(xp, fn)(x.reshape(-1))
            return xp.asarray(r).reshape((1,) * x.ndim if keepdim else ())
        if x.size >= _NATIVE_ARG_MIN and dim % x.ndim != x.ndim - 1:
            # NumPy's arg-reduction along a middle axis is slow (max-pooling)
            found = try_native(xp, "arg_extreme", fn, x, dim % x.ndim, keepdim)
            if found is not None:
                return found
        return getattr(xp, fn)(x, axis=dim, keepdims=keepdim)

    return forward


ARGMAX = defop("argmax", forward=_argreduce("argmax"), abstract=_arg_abstract("argmax"), kind="reduction",
               samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dim": 1, "keepdim": False})])
ARGMIN = defop("argmin", forward=_argreduce("argmin"), abstract=_arg_abstract("argmin"), kind="reduction",
               samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dim": 0, "keepdim": True})])


def _select_along_vjp(ctx, g):
    """Gradient of a value picked at `index` along `dim` (max/min with dim, gather)."""
    dim, keepdim = ctx.attrs["dim"], ctx.attrs["keepdim"]
    index = ctx.input(1)
    shape = ctx.in_shape(0)
    if not keepdim:
        kshape = shape[:dim] + (1,) + shape[dim + 1:]
        g = RESHAPE(g, shape=kshape)
        index = RESHAPE(index, shape=kshape)
    hit = INDEX_MASK(index, dim=dim, size=shape[dim])
    return WHERE(hit, EXPAND(g, shape=shape), 0.0), None


def _take_along(xp, x, index, dim, keepdim=False):
    if not keepdim and x.size >= _NATIVE_ARG_MIN and dim % x.ndim != x.ndim - 1:
        # max-pooling's values: a gather along a middle axis, one native pass
        found = try_native(xp, "take_middle", x, index, dim % x.ndim)
        if found is not None:
            return found
    if keepdim:
        return xp.take_along_axis(x, index, axis=dim)
    return xp.squeeze(xp.take_along_axis(x, xp.expand_dims(index, dim), axis=dim), axis=dim)


TAKE_ALONG = defop(
    "take_along", forward=_take_along,
    abstract=lambda x, index, dim, keepdim=False: TensorSpec(index.shape, x.dtype),
    vjp=_select_along_vjp, grad_name="MaxBackward0", save=(1,), kind="index",
    samples=lambda rng: [((rng.standard_normal((3, 4)), rng.integers(0, 4, (3,))), {"dim": 1, "keepdim": False})],
    doc="x's values at `index` along `dim`: the value half of max/min(dim)",
    arity=2,
)
INDEX_MASK = defop(
    "index_mask",
    forward=lambda xp, index, dim, size: (
        xp.expand_dims(xp.arange(size), tuple(i for i in range(index.ndim) if i != dim))
        == index
    ),
    abstract=lambda index, dim, size: TensorSpec(
        index.shape[:dim] + (size,) + index.shape[dim + 1:], _dtypes.bool_),
    samples=lambda rng: [((rng.integers(0, 4, (3, 1)),), {"dim": 1, "size": 4})], kind="index",
    doc="True where the position along `dim` equals `index` (keepdim form)",
)


def _var_abstract(name):
    def abstract(x, dims=None, correction=1, keepdim=False):
        require_float(name, x)
        return TensorSpec(reduced_shape(x.shape, dims, keepdim), x.dtype)

    return abstract


def _centered(ctx):
    x = ctx.input(0)
    return x - MEAN(x, dims=ctx.attrs["dims"], keepdim=True)


def _dof(ctx):
    return max(_count(ctx) - ctx.attrs["correction"], 0)


def _std_vjp(ctx, g):
    """d std = centered / (std * dof); 0 where the std is 0 (a constant group), as PyTorch
    masks it, rather than the NaN of 0/0."""
    out = _keep(ctx, ctx.out)
    zero = EQ(out, 0.0)
    safe = WHERE(zero, 1.0, out)
    return WHERE(zero, 0.0, _expand_back(ctx, g) * _centered(ctx) / (safe * float(_dof(ctx))))


def _var(xp, x, dims=None, correction=1, keepdim=False):
    """The variance, accumulated as PyTorch's CPU kernel does: float32 in float64 (squares of
    large finite float32 values would overflow; the result is rounded once), float16 in
    float32. A group with no degrees of freedom gives inf or NaN silently (NumPy warns)."""
    if x.dtype.kind not in "fc":
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if xp is np and dims is not None and type(x) is np.ndarray:
        native = kernels_module()
        if native is not None and native.channel_dims(x.ndim, dims):
            found = native.channel_moments(x)  # batch norm's running statistics, one threaded pass
            if found is not None:
                m2 = found[1]
                n = x.size // x.shape[1]
                var = m2 / m2.dtype.type(max(n - correction, 0))
                return var.reshape((1, -1) + (1,) * (x.ndim - 2)) if keepdim else var
    acc = np.dtype(np.float64) if x.dtype == _F32 else (_F32 if x.dtype == _F16 else x.dtype)
    xa = x.astype(acc, copy=False)
    axis = _axes(dims, x)
    n = _group_size(x.shape, dims)
    centered = xa - xp.sum(xa, axis=axis, keepdims=True) / acc.type(n)  # n == 0: NaN, silently
    squares = xp.sum(centered * centered, axis=axis, keepdims=keepdim)
    return squares / squares.dtype.type(max(n - correction, 0))


def _std(xp, x, dims=None, correction=1, keepdim=False):
    return xp.sqrt(_var(xp, x, dims, correction, keepdim)).astype(x.dtype, copy=False)


VAR = defop(
    "var",
    forward=lambda xp, x, dims=None, correction=1, keepdim=False: _var(
        xp, x, dims, correction, keepdim).astype(x.dtype, copy=False),
    abstract=_var_abstract("var"),
    # no degrees of freedom: PyTorch's gradient is inf * 0 = NaN there (and empty for an empty input)
    vjp=lambda ctx, g: (_expand_back(ctx, g) * _centered(ctx) * (2.0 / _dof(ctx) if _dof(ctx) else math.inf),),
    grad_name="VarBackward0", save=(0,), kind="reduction", samples=_reduce_samples(correction=1),
)
STD = defop(
    "std",
    forward=_std,
    abstract=_var_abstract("std"),
    vjp=lambda ctx, g: (_std_vjp(ctx, g),),
    grad_name="StdBackward0", save=(0,), save_output=True, kind="reduction",
    samples=_reduce_samples(correction=1),
)


def _logsumexp_acc(xp, x, dims, keepdim):
    """logsumexp in x's dtype (the caller upcasts float16). Over an empty group the sum of
    exponentials is 0 and the result -inf, as in PyTorch (amax of an empty group would fail)."""
    axis = _axes(dims, x)
    if x.size == 0:
        return xp.log(xp.sum(xp.exp(x), axis=axis, keepdims=keepdim))
    m = xp.amax(x, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdim else xp.squeeze(out, axis=axis)


def _logsumexp(xp, x, dims=None, keepdim=False):
    """Integer and bool inputs give float32 (the default float), as in PyTorch."""
    if x.dtype.kind in "biu":
        return _logsumexp_acc(xp, x.astype(_F32), dims, keepdim)
    return _logsumexp_acc(xp, _upcast(x), dims, keepdim).astype(x.dtype, copy=False)


def _logsumexp_abstract(x, dims=None, keepdim=False):
    spec = _reduce_abstract("logsumexp")(x, dims=dims, keepdim=keepdim)
    return spec if spec.dtype.is_floating_point else TensorSpec(spec.shape, _dtypes.DEFAULT_FLOAT)


LOGSUMEXP = defop(
    "logsumexp", forward=_logsumexp, abstract=_logsumexp_abstract,
    vjp=lambda ctx, g: (_expand_back(ctx, g) * EXP(ctx.input(0) - _keep(ctx, ctx.out)),),
    grad_name="LogsumexpBackward0", save=(0,), save_output=True, kind="reduction",
    samples=_reduce_samples(),
)


def _dim_abstract(name):
    def abstract(x, dim):
        require_float(name, x)
        norm_dim(name, dim, x.ndim)
        return x

    return abstract


def _require_float_kernel(name: str, x) -> None:
    """PyTorch has no integer softmax kernel (NumPy would compute one and truncate it)."""
    if x.dtype.kind not in "fc":
        raise NotImplementedError(f'{name}: "{name}_lastdim_kernel_impl" not implemented for '
                                  f"'{_dtypes.scalar_type_name(_dtypes.from_numpy(x.dtype))}'; "
                                  "cast with .float() first")


def _softmax(xp, x, dim):
    """Computed in float32 for float16 input, as PyTorch does; an empty input is its own
    (empty) softmax."""
    if x.size == 0:
        return x.copy()
    _require_float_kernel("softmax", x)
    axis = dim if x.ndim else None
    xa = _upcast(x)
    if xp is np and x.ndim:  # the ufuncs' reduce straight (amax and sum are these, behind a Python wrapper each)
        token = quiet_fp()  # (a row with an infinite maximum is NaN, as PyTorch's, and no error)
        try:
            e = np.subtract(xa, np.maximum.reduce(xa, axis=axis, keepdims=True))
            np.exp(e, out=e)
            e /= np.add.reduce(e, axis=axis, keepdims=True)
        finally:
            restore_fp(token)
        return e.astype(x.dtype, copy=False)
    e = xp.asarray(xa - xp.amax(xa, axis=axis, keepdims=True))  # a fresh buffer: exp and the division run in it
    xp.exp(e, out=e)
    e /= xp.sum(e, axis=axis, keepdims=True)
    return e.astype(x.dtype, copy=False)


def _log_softmax(xp, x, dim):
    """(x - m) - log(sum(exp(x - m))) along dim, m the row maximum, in PyTorch's order (the
    bits eager's fused row kernels give for finite rows): x - (log(sum) + m) lost the log-sum
    against a large maximum (float32 logits of 1e30 gave 0 for log(1/2)). A row whose maximum is +inf or NaN, or that is all
    -inf, is NaN throughout, as PyTorch's (its (x - m) - log(sum(exp(x - m))) is): unlike
    logsumexp, whose +inf row is +inf, only an all -inf row's maximum is replaced (by 0, so
    that row's exp(x - m) is 0 and x - log(0) is -inf + inf). NumPy's reports are off: those
    rows are no error."""
    if x.size == 0:
        return x.copy()
    _require_float_kernel("log_softmax", x)
    xa = _upcast(x)
    token = quiet_fp() if xp is np else None
    try:
        m = xp.amax(xa, axis=dim, keepdims=True)
        m = xp.where(m > -math.inf, m, 0)
        d = xa - m
        out = d - xp.log(xp.sum(xp.exp(d), axis=dim, keepdims=True))
    finally:
        if token is not None:
            restore_fp(token)
    return out.astype(x.dtype, copy=False)


def _softmax_vjp(ctx, g):
    y = ctx.out
    return (y * (g - SUM(g * y, dims=(ctx.attrs["dim"],), keepdim=True)),)


def _log_softmax_vjp(ctx, g):
    return (g - EXP(ctx.out) * SUM(g, dims=(ctx.attrs["dim"],), keepdim=True),)


def _dim_samples(rng):
    x = rng.standard_normal((3, 4))
    return [((x,), {"dim": 1}), ((x,), {"dim": 0})]


SOFTMAX = defop("softmax", forward=_softmax, abstract=_dim_abstract("softmax"), vjp=_softmax_vjp,
                grad_name="SoftmaxBackward0", save_output=True, kind="reduction", samples=_dim_samples)
LOG_SOFTMAX = defop("log_softmax", forward=_log_softmax, abstract=_dim_abstract("log_softmax"),
                    vjp=_log_softmax_vjp, grad_name="LogSoftmaxBackward0", save_output=True,
                    kind="reduction", samples=_dim_samples)


# Maxima and their indices select values: no floating-point events (see elementwise.py's note).
for _op in (AMAX, AMIN, MAX_ALL, MIN_ALL, ARGMAX, ARGMIN):
    _op.quiet_fp = False
