"""Reductions and normalizations along axes. `dims` is None (all axes) or a sorted tuple
of non-negative axes; the public wrappers normalize what users write."""
from __future__ import annotations

import math

from .. import _dtypes
from ._checks import norm_dim, numel, reduced_shape, require_float
from ._registry import Reduction, TensorSpec, defop
from .elementwise import EQ, EXP, WHERE
from .shape_ops import EXPAND, RESHAPE

_int_dtypes_to_i64 = {_dtypes.bool_, _dtypes.uint8, _dtypes.int8, _dtypes.int16, _dtypes.int32}


def _axes(dims, x=None):
    """NumPy's `axis` for `dims`; a 0-d tensor reduces over its (only) dim 0 or -1, as in
    PyTorch, which NumPy spells axis=None."""
    return None if dims is None or (x is not None and x.ndim == 0) else tuple(dims)


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
    return EXPAND(_keep(ctx, g), shape=ctx.in_shape(0))


def _count(ctx):
    shape, dims = ctx.in_shape(0), ctx.attrs["dims"]
    return numel(shape) if dims is None or not shape else numel([shape[d] for d in dims])


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
    "sum", forward=lambda xp, x, dims=None, keepdim=False: xp.sum(x, axis=_axes(dims, x), keepdims=keepdim),
    abstract=_reduce_abstract("sum", widen_ints=True), vjp=lambda ctx, g: (_expand_back(ctx, g),),
    grad_name=_by_dims("SumBackward0", "SumBackward1"), kind="reduction", samples=_reduce_samples(),
    reduction=Reduction("add", 0.0),
)
MEAN = defop(
    "mean", forward=lambda xp, x, dims=None, keepdim=False: xp.mean(x, axis=_axes(dims, x), keepdims=keepdim),
    abstract=_reduce_abstract("mean", float_only=True),
    vjp=lambda ctx, g: (_expand_back(ctx, g) * (1.0 / max(_count(ctx), 1)),),  # count 0: an empty input
    grad_name=_by_dims("MeanBackward0", "MeanBackward1"), kind="reduction", samples=_reduce_samples(),
    reduction=Reduction("add", 0.0, divide_by_count=True),
)


def _prod_vjp(ctx, g):
    return (_expand_back(ctx, g) * PROD_EXCEPT_SELF(ctx.input(0), dims=ctx.attrs["dims"]),)


PROD = defop(
    "prod", forward=lambda xp, x, dims=None, keepdim=False: xp.prod(x, axis=_axes(dims, x), keepdims=keepdim),
    abstract=_reduce_abstract("prod", widen_ints=True), vjp=_prod_vjp, save=(0,),
    grad_name=_by_dims("ProdBackward0", "ProdBackward1"), kind="reduction",
    samples=_reduce_samples(),
    reduction=Reduction("mul", 1.0), differentiable_order=1,
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


PROD_EXCEPT_SELF = defop(
    "prod_except_self", forward=_prod_except_self,
    abstract=lambda x, dims=None: x, kind="reduction",
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dims": (1,)})],
    doc="helper of prod's VJP; not differentiable itself (no double backward of prod)",
    differentiable_order=0,
)


def _amax_vjp(ctx, g):
    x, out = ctx.input(0), _keep(ctx, ctx.out)
    mask = EQ(x, out)
    ties = SUM(WHERE(mask, 1.0, 0.0), dims=ctx.attrs["dims"], keepdim=True)
    return (WHERE(mask, _expand_back(ctx, g) / ties, 0.0),)


def _amax_like(name, fn, grad_name, combiner, identity):
    return defop(
        name,
        forward=lambda xp, x, dims=None, keepdim=False: getattr(xp, fn)(x, axis=_axes(dims, x), keepdims=keepdim),
        abstract=_reduce_abstract(name), vjp=_amax_vjp, grad_name=grad_name, save=(0,), save_output=True,
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
        return TensorSpec(reduced_shape(x.shape, dims, keepdim), _dtypes.int64)

    return abstract


def _argreduce(fn):
    def forward(xp, x, dim=None, keepdim=False):
        if dim is None:
            r = getattr(xp, fn)(x.reshape(-1))
            return xp.asarray(r).reshape((1,) * x.ndim if keepdim else ())
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


TAKE_ALONG = defop(
    "take_along", forward=lambda xp, x, index, dim, keepdim=False: (
        xp.take_along_axis(x, index if keepdim else xp.expand_dims(index, dim), axis=dim)
        if keepdim else xp.squeeze(xp.take_along_axis(x, xp.expand_dims(index, dim), axis=dim), axis=dim)
    ),
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


VAR = defop(
    "var",
    forward=lambda xp, x, dims=None, correction=1, keepdim=False: xp.var(
        x, axis=_axes(dims, x), ddof=correction, keepdims=keepdim),
    abstract=_var_abstract("var"),
    vjp=lambda ctx, g: (_expand_back(ctx, g) * _centered(ctx) * (2.0 / _dof(ctx)),),
    grad_name="VarBackward0", save=(0,), kind="reduction", samples=_reduce_samples(correction=1),
)
STD = defop(
    "std",
    forward=lambda xp, x, dims=None, correction=1, keepdim=False: xp.std(
        x, axis=_axes(dims, x), ddof=correction, keepdims=keepdim),
    abstract=_var_abstract("std"),
    vjp=lambda ctx, g: (_std_vjp(ctx, g),),
    grad_name="StdBackward0", save=(0,), save_output=True, kind="reduction",
    samples=_reduce_samples(correction=1),
)


def _logsumexp(xp, x, dims=None, keepdim=False):
    m = xp.amax(x, axis=_axes(dims, x), keepdims=True)
    m = xp.where(xp.isfinite(m), m, 0)
    out = xp.log(xp.sum(xp.exp(x - m), axis=_axes(dims, x), keepdims=True)) + m
    return out if keepdim else xp.squeeze(out, axis=_axes(dims, x))


LOGSUMEXP = defop(
    "logsumexp", forward=_logsumexp, abstract=_reduce_abstract("logsumexp", float_only=True),
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


def _softmax(xp, x, dim):
    axis = dim if x.ndim else None
    e = xp.exp(x - xp.amax(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def _log_softmax(xp, x, dim):
    return x - _logsumexp(xp, x, dims=(dim,), keepdim=True)


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
