"""Ops that pick or place elements by integer index along one dim (gather, scatter,
index_select, index_add, embedding) and the masks and reorderings models use (tril, triu,
flip, diagonal). Index operands are int64 tensors; they never get gradients."""
from __future__ import annotations

import numpy as np

from gmbase import dtypes as _dtypes
from gmnative import index_kernels as _index_kernels

from ._checks import fit_scalar, norm_dim
from ._layout import empty_like
from ._registry import OpDef, TensorSpec, defop
from .elementwise import EQ, LOGICAL_AND, TO_DTYPE, WHERE
from .shape_ops import INDEX_PUT, UNSQUEEZE
from .special import FULL_LIKE


def _require_index(op: str, spec: TensorSpec, what: str = "index") -> None:
    if spec.dtype not in (_dtypes.int64, _dtypes.int32):
        raise RuntimeError(f"{op}(): Expected dtype int64 for {what}, got {spec.dtype.name}; "
                           "convert it with .long()")


def _add_at(xp, out, key, values) -> None:
    """out[key] += values, accumulating repeated positions (NumPy's add.at, CuPy's scatter_add)."""
    if xp is np:
        np.add.at(out, key, values)
    else:
        import cupyx  # noqa: PLC0415

        cupyx.scatter_add(out, key, values)


def _along(xp, index, dim: int) -> tuple:
    """The full index tuple that addresses, for each element of `index`, the position
    `index` along `dim` and its own position along every other dim."""
    key = []
    for d, n in enumerate(index.shape):
        if d == dim:
            key.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            key.append(xp.arange(n).reshape(shape))
    return tuple(key)


def _leading(x, shape, dim):
    """x cut to `shape` on every dim but `dim` (PyTorch lets index be smaller there)."""
    key = tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(shape))
    return x[key]


def _cut(src, shape):
    """src cut to `shape` on every dim (scatter reads only the part index covers)."""
    return src[tuple(slice(0, n) for n in shape)]


def _check_along(op: str, x: TensorSpec, index: TensorSpec, dim: int) -> None:
    _require_index(op, index)
    if index.ndim != x.ndim:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as input tensor "
                           f"(input shape {tuple(x.shape)}, index shape {tuple(index.shape)})")
    for d, (n, m) in enumerate(zip(index.shape, x.shape)):
        if d != dim and n > m:
            raise RuntimeError(f"{op}(): Size does not match at dimension {d} expected index {list(index.shape)} "
                               f"to be smaller than self {list(x.shape)} apart from dimension {dim}")


# -- gather / scatter ---------------------------------------------------------------------------
def _gather(xp, x, index, dim):
    return xp.take_along_axis(_leading(x, index.shape, dim), index, axis=dim)


def _gather_abstract(x, index, dim):
    _check_along("gather", x, index, dim)
    return TensorSpec(tuple(index.shape), x.dtype)


def _gather_vjp(ctx, g):
    zeros = FULL_LIKE(ctx.input(0), value=0.0)
    return SCATTER_ADD(zeros, ctx.input(1), g, dim=ctx.attrs["dim"]), None


def _along_samples(rng):
    x = rng.standard_normal((3, 4))
    return [((x, rng.integers(0, 4, (3, 5))), {"dim": 1}), ((x, rng.integers(0, 3, (2, 4))), {"dim": 0})]


GATHER = defop(
    "gather", arity=2, forward=_gather, abstract=_gather_abstract, vjp=_gather_vjp, grad_name="GatherBackward0",
    save=(0, 1), kind="index", samples=_along_samples,
    doc="out[i][j] = x[index[i][j]][j] (dim 0): values picked along dim",
)


def _scatter_add(xp, x, index, src, dim):
    out = xp.array(x, copy=True)
    _add_at(xp, out, _along(xp, index, dim), _cut(src, index.shape))
    return out


def _scatter_abstract(name):
    def abstract(x, index, src, dim):
        _check_along(name, x, index, dim)
        if isinstance(src, TensorSpec):
            if src.dtype != x.dtype:
                raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype "
                                   f"({x.dtype.name} vs {src.dtype.name})")
            if any(n > m for n, m in zip(index.shape, src.shape)):
                raise RuntimeError(f"{name}(): Expected index {list(index.shape)} to be smaller than src "
                                   f"{list(src.shape)}")
        elif name == "scatter":
            fit_scalar(name, src, x.dtype)  # value=: PyTorch's overflow error at trace time too
        return x

    return abstract


def _src_grad(ctx, g):
    """The gradient of a scatter's src: g at the scattered positions, zero where src
    reaches past index (those elements are not read)."""
    if not ctx.needs(2):
        return None
    picked = GATHER(g, ctx.input(1), dim=ctx.attrs["dim"])
    src_shape = ctx.in_shape(2)
    if tuple(picked.shape) == tuple(src_shape):
        return picked
    key = tuple(("slice", 0, n, None) for n in picked.shape)
    return INDEX_PUT(FULL_LIKE(ctx.input(2), value=0.0), picked, key=key, n_index=0)


SCATTER_ADD = defop(
    "scatter_add", arity=3, forward=_scatter_add, abstract=_scatter_abstract("scatter_add"),
    vjp=lambda ctx, g: (g if ctx.needs(0) else None, None, _src_grad(ctx, g)),
    grad_name="ScatterAddBackward0", save=(1, 2), kind="index",
    samples=lambda rng: [((rng.standard_normal((3, 4)), rng.integers(0, 3, (2, 4)), rng.standard_normal((2, 4))),
                          {"dim": 0}),
                         ((rng.standard_normal((3, 4)), rng.integers(0, 4, (3, 2)), rng.standard_normal((3, 3))),
                          {"dim": 1})],
    doc="a copy of x with src added at index along dim (repeated positions accumulate)",
)


def _scatter(xp, x, index, src, dim):
    out = xp.array(x, copy=True)
    values = _cut(src, index.shape) if hasattr(src, "shape") else fit_scalar("scatter", src, _dtypes.from_numpy(out.dtype))
    out[_along(xp, index, dim)] = values
    return out


def _scatter_vjp(ctx, g):
    gx = SCATTER(g, ctx.input(1), 0.0, dim=ctx.attrs["dim"]) if ctx.needs(0) else None
    gsrc = _src_grad(ctx, g)
    return gx, None, gsrc


def _unique_rows(rng, n, k, cols):
    """An index of shape (k, cols) with distinct entries per column (scatter's result is
    only defined for distinct positions)."""
    return np.stack([rng.permutation(n)[:k] for _ in range(cols)], axis=1)


SCATTER = defop(
    "scatter", arity=3, forward=_scatter, abstract=_scatter_abstract("scatter"), vjp=_scatter_vjp,
    grad_name=lambda operands, attrs: "ScatterBackward0" if hasattr(operands[2], "shape") else "ScatterBackward1",
    save=(1, 2), kind="index",
    samples=lambda rng: [((rng.standard_normal((4, 3)), _unique_rows(rng, 4, 2, 3), rng.standard_normal((2, 3))),
                          {"dim": 0}),
                         ((rng.standard_normal((4, 3)), _unique_rows(rng, 4, 3, 3), 1.5), {"dim": 0})],
    doc="a copy of x with src (a tensor or a number) written at index along dim",
)


# -- scatter_reduce ----------------------------------------------------------------------------
_REDUCES = ("sum", "prod", "mean", "amax", "amin")
_UFUNCS = {"sum": "add", "mean": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def _identity(reduce: str, dtype):
    """The value a position starts from when its own value is not included."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    info = np.iinfo(dtype) if dtype.kind in "iu" else None
    if info is None:  # bool
        return reduce == "amin"
    return info.min if reduce == "amax" else info.max


def _scatter_reduce(xp, x, index, src, dim, reduce, include_self=True):
    if reduce not in _REDUCES or src.dtype != x.dtype:
        raise ValueError("scatter_reduce: bad arguments")  # eager re-raises the abstract rule's message
    if xp is not np:  # CuPy has scatter_add/max/min only: run on the host, then move back
        return xp.asarray(_scatter_reduce(np, xp.asnumpy(x), xp.asnumpy(index), xp.asnumpy(src), dim, reduce,
                                          include_self))
    out = np.array(x, copy=True)
    key = _along(np, index, dim)
    values = _cut(src, index.shape)
    if not include_self:
        out[key] = _identity(reduce, out.dtype)
    getattr(np, _UFUNCS[reduce]).at(out, key, values)
    if reduce == "mean":
        count = np.ones(x.shape, dtype=np.int64) if include_self else np.zeros(x.shape, dtype=np.int64)
        np.add.at(count, key, 1)
        count[count == 0] = 1
        if out.dtype.kind == "f":
            out /= count.astype(out.dtype)
        else:
            out //= count.astype(out.dtype)
    return out


def _scatter_reduce_abstract(x, index, src, dim, reduce, include_self=True):
    if reduce not in _REDUCES:
        raise RuntimeError(f"scatter_reduce(): reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    return _scatter_abstract("scatter_reduce")(x, index, src, dim)


def _mask_scattered(g, index, dim, include_self):
    """g with the positions index scatters to set to 0 when the operand's own value was left
    out there (include_self=False): those values never reached the result."""
    return g if include_self else SCATTER(g, index, 0.0, dim=dim)


def _scatter_reduce_vjp(ctx, g):
    """PyTorch's scatter_reduce_backward, written with ops: sum and mean pass g (divided by
    the count for mean); amax/amin share g evenly among the values equal to the result;
    prod divides the result by each value, with zeros handled exactly (one zero scattered to
    a position is taken out of the product; two or more make every gradient there zero)."""
    x, index, src = ctx.input(0), ctx.input(1), ctx.input(2)
    dim, reduce, include_self = ctx.attrs["dim"], ctx.attrs["reduce"], ctx.attrs["include_self"]
    src = _cut_op(src, tuple(index.shape))
    if reduce == "sum":
        gx, gsrc = g, GATHER(g, index, dim=dim)
    elif reduce == "mean":
        ones = FULL_LIKE(src, value=1.0)
        count = SCATTER_ADD(FULL_LIKE(x, value=1.0 if include_self else 0.0), index, ones, dim=dim)
        count = WHERE(EQ(count, 0.0), 1.0, count)
        gx, gsrc = g / count, GATHER(g / count, index, dim=dim)
    elif reduce in ("amax", "amin"):
        result = ctx.out
        value = GATHER(result, index, dim=dim)
        # as PyTorch: a left-out own value equal to the result still counts in the share
        self_is = TO_DTYPE(EQ(x, result), dtype=x.dtype)
        src_is = TO_DTYPE(EQ(src, value), dtype=x.dtype)
        share = g / SCATTER_ADD(self_is, index, src_is, dim=dim)
        gx, gsrc = self_is * share, src_is * GATHER(share, index, dim=dim)
    else:  # prod
        attrs = {"dim": dim, "reduce": "prod", "include_self": include_self}
        result = ctx.out
        self_zero = EQ(x, 0.0)
        masked_self = WHERE(self_zero, 1.0, x)
        gx = g * SCATTER_REDUCE(masked_self, index, src, **attrs) / masked_self
        src_zero = EQ(src, 0.0)
        zeros_at = GATHER(SCATTER_ADD(FULL_LIKE(x, value=0.0), index, TO_DTYPE(src_zero, dtype=x.dtype), dim=dim),
                          index, dim=dim)
        single = LOGICAL_AND(src_zero, EQ(zeros_at, 1.0))
        without_it = SCATTER_REDUCE(x, index, WHERE(single, 1.0, src), **attrs)
        gsrc = WHERE(single, GATHER(g * without_it, index, dim=dim),
                     GATHER(g * result, index, dim=dim) / WHERE(src_zero, 1.0, src))
    gx = _mask_scattered(gx, index, dim, include_self) if ctx.needs(0) else None
    if ctx.needs(2) and tuple(gsrc.shape) != tuple(ctx.in_shape(2)):
        key = tuple(("slice", 0, n, None) for n in gsrc.shape)
        gsrc = INDEX_PUT(FULL_LIKE(ctx.input(2), value=0.0), gsrc, key=key, n_index=0)
    return gx, None, (gsrc if ctx.needs(2) else None)


def _cut_op(src, shape: tuple):
    """src cut to `shape` (the part index reads), with ops."""
    if tuple(src.shape) == shape:
        return src
    from .shape_ops import INDEX  # noqa: PLC0415

    return INDEX(src, key=tuple(("slice", 0, n, None) for n in shape), n_index=0)


def _scatter_reduce_samples(rng):
    out = []
    for reduce in _REDUCES:
        for include_self in (True, False):
            x = rng.uniform(0.5, 1.5, (3, 4)) * rng.choice([-1.0, 1.0], (3, 4))
            src = rng.uniform(0.5, 1.5, (2, 4)) * rng.choice([-1.0, 1.0], (2, 4))
            out.append(((x, rng.integers(0, 3, (2, 4)), src), {"dim": 0, "reduce": reduce,
                                                               "include_self": include_self}))
    out.append(((rng.standard_normal((3, 4)), rng.integers(0, 4, (3, 2)), rng.standard_normal((3, 3))),
                {"dim": 1, "reduce": "mean", "include_self": False}))
    return out


SCATTER_REDUCE: OpDef = defop(
    "scatter_reduce", arity=3, forward=_scatter_reduce, abstract=_scatter_reduce_abstract, vjp=_scatter_reduce_vjp,
    grad_name="ScatterReduceBackward0", save=(0, 1, 2), save_output=True, kind="index",
    samples=_scatter_reduce_samples,
    doc="a copy of x with src combined in at index along dim by sum, prod, mean, amax or amin "
        "(include_self: whether x's own value takes part)",
)


# -- index_select / index_add -----------------------------------------------------------------
def _index_select_abstract(x, index, dim):
    _require_index("index_select", index)
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape {tuple(index.shape)}")
    shape = list(x.shape)
    if shape:
        shape[dim] = index.shape[0] if index.ndim else 1
    return TensorSpec(tuple(shape), x.dtype)


def _index_select(xp, x, index, dim):
    if x.ndim == 0:
        return xp.reshape(x, (1,))[index.reshape(-1)].reshape(())
    return xp.take(x, index.reshape(-1), axis=dim)


INDEX_SELECT = defop(
    "index_select", arity=2, forward=_index_select, abstract=_index_select_abstract,
    vjp=lambda ctx, g: (INDEX_ADD(FULL_LIKE(ctx.input(0), value=0.0), ctx.input(1), g, dim=ctx.attrs["dim"],
                                  alpha=1.0), None),
    grad_name="IndexSelectBackward0", save=(0, 1), kind="index",
    samples=lambda rng: [((rng.standard_normal((4, 3)), np.array([3, 0, 3, 1])), {"dim": 0}),
                         ((rng.standard_normal((4, 3)), np.array([2, 2])), {"dim": 1})],
)


def _index_add(xp, x, index, src, dim, alpha=1.0):
    out = xp.array(x, copy=True)
    values = src * alpha if alpha != 1 else src
    if dim == 0 and xp is np and x.ndim and out.flags.c_contiguous and type(values) is np.ndarray \
            and values.dtype == out.dtype and values.flags.c_contiguous and values.ndim == x.ndim:
        # rows added in place in one native pass, in add.at's order (its bits; gmnative.index_kernels)
        width = out.size // out.shape[0] if out.shape[0] else 0
        flat = index.reshape(-1)
        if width and values.shape[0] == flat.size and _index_kernels.rows_add(
                values.reshape(flat.size, width), flat, out.shape[0], into=out.reshape(out.shape[0], width)) is not None:
            return out
    _add_at(xp, out, (slice(None),) * dim + (index.reshape(-1),), values)
    return out


def _index_add_abstract(x, index, src, dim, alpha=1.0):
    _require_index("index_add", index)
    expected = list(x.shape)
    if expected:
        expected[dim] = index.shape[0] if index.ndim else 1
    if tuple(src.shape) != tuple(expected):
        raise RuntimeError(f"index_add_(): source shape {tuple(src.shape)} must be the input's shape with dim {dim} "
                           f"of the index's length, i.e. {tuple(expected)}")
    if src.dtype != x.dtype:
        raise RuntimeError(f"index_add_(): self ({x.dtype.name}) and source ({src.dtype.name}) must have the same "
                           "scalar type")
    return x


def _index_add_vjp(ctx, g):
    gsrc = None
    if ctx.needs(2):
        gsrc = INDEX_SELECT(g, ctx.input(1), dim=ctx.attrs["dim"])
        if ctx.attrs["alpha"] != 1:
            gsrc = gsrc * ctx.attrs["alpha"]
    return (g if ctx.needs(0) else None), None, gsrc


INDEX_ADD: OpDef = defop(
    "index_add", arity=3, forward=_index_add, abstract=_index_add_abstract, vjp=_index_add_vjp,
    grad_name="IndexAddBackward0", save=(1,), kind="index",
    samples=lambda rng: [((rng.standard_normal((4, 3)), np.array([3, 0, 3]), rng.standard_normal((3, 3))),
                          {"dim": 0, "alpha": 1.0}),
                         ((rng.standard_normal((4, 3)), np.array([1, 1]), rng.standard_normal((4, 2))),
                          {"dim": 1, "alpha": 2.0})],
    doc="a copy of x with src's slices added at index along dim (repeats accumulate)",
)


# -- embedding ---------------------------------------------------------------------------------
def _embedding_abstract(weight, indices, padding_idx=None):
    _require_index("embedding", indices, "indices")
    if weight.ndim != 2:
        raise RuntimeError(f"embedding(): 'weight' must be 2-D, got shape {tuple(weight.shape)}")
    return TensorSpec(tuple(indices.shape) + (weight.shape[1],), weight.dtype)


def _embedding(xp, weight, indices, padding_idx=None):
    return xp.take(weight, indices, axis=0)


def _embedding_backward(xp, g, indices, num_weights, padding_idx=None):
    width = g.shape[-1]
    flat = indices.reshape(-1)
    rows = g.reshape(-1, width)
    # (a broadcast gradient, x.sum()'s, is made row-major first: a copy costs less than the sort below)
    found = (_index_kernels.rows_add(np.ascontiguousarray(rows), flat, num_weights)
             if xp is np and type(rows) is np.ndarray else None)
    if found is not None:  # one pass in C, rows added in order from zero as add.at does (gmnative.index_kernels)
        if padding_idx is not None:
            found[padding_idx] = 0
        return found
    out = xp.zeros((num_weights, width), dtype=g.dtype)
    if xp is np and flat.size > 4 * num_weights:
        # sort once, then sum each run of equal indices: far cheaper than add.at's per-row work
        # (NumPy's reduceat adds a run in its own order: equal to add.at's to rounding)
        order = np.argsort(flat, kind="stable")
        sorted_idx = flat[order]
        starts = np.flatnonzero(np.r_[True, sorted_idx[1:] != sorted_idx[:-1]])
        out[sorted_idx[starts]] = np.add.reduceat(rows[order], starts, axis=0)
    else:
        _add_at(xp, out, flat, rows)
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def _padding_mask(indices, padding_idx):
    return UNSQUEEZE(EQ(indices, padding_idx), dim=indices.ndim)


def _embedding_vjp(ctx, g):
    w_shape = ctx.in_shape(0)
    return EMBEDDING_BACKWARD(g, ctx.input(1), num_weights=w_shape[0], padding_idx=ctx.attrs["padding_idx"]), None


def _embedding_backward_vjp(ctx, gg):
    indices, padding_idx = ctx.input(1), ctx.attrs["padding_idx"]
    out = EMBEDDING(gg, indices, padding_idx=None)
    if padding_idx is not None:
        out = WHERE(_padding_mask(indices, padding_idx), 0.0, out)
    return out, None


def _embedding_backward_abstract(g, indices, num_weights, padding_idx=None):
    return TensorSpec((num_weights, g.shape[-1]), g.dtype)


def _embedding_samples(rng):
    w = rng.standard_normal((5, 3))
    return [((w, rng.integers(0, 5, (2, 4))), {"padding_idx": None}),
            # the padding row gets no gradient by definition (finite differences would see one):
            # here padding_idx is not read, so both agree; tests/eager/test_nn_surface.py checks the row
            ((w, np.array([[0, 3, 3], [4, 0, 1]])), {"padding_idx": 2})]


EMBEDDING = defop(
    "embedding", arity=2, forward=_embedding, abstract=_embedding_abstract, vjp=_embedding_vjp,
    grad_name="EmbeddingBackward0", save=(1,), kind="index", samples=_embedding_samples,
    doc="rows of weight picked by indices; the padding_idx row gets no gradient",
)
EMBEDDING_BACKWARD = defop(
    "embedding_backward", arity=2, forward=_embedding_backward, abstract=_embedding_backward_abstract,
    vjp=_embedding_backward_vjp, grad_name="EmbeddingBackwardBackward0", save=(1,), kind="index",
    samples=lambda rng: [((rng.standard_normal((2, 4, 3)), np.array([[0, 2, 2, 1], [4, 0, 1, 1]])),
                          {"num_weights": 5, "padding_idx": 1})],
    doc="the weight gradient of embedding: g's rows summed into the rows they were read from",
)


# -- triangles, flips, diagonals ---------------------------------------------------------------
def _tri_abstract(name):
    def abstract(x, diagonal=0):
        if x.ndim < 2:
            raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions (got shape {tuple(x.shape)})")
        return x

    return abstract


TRIL: OpDef = defop(
    "tril", forward=lambda xp, x, diagonal=0: xp.tril(x, diagonal), abstract=_tri_abstract("tril"),
    vjp=lambda ctx, g: (TRIL(g, diagonal=ctx.attrs["diagonal"]),), grad_name="TrilBackward0", kind="index",
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"diagonal": 0}),
                         ((rng.standard_normal((2, 3, 3)),), {"diagonal": -1})],
)
TRIU: OpDef = defop(
    "triu", forward=lambda xp, x, diagonal=0: xp.triu(x, diagonal), abstract=_tri_abstract("triu"),
    vjp=lambda ctx, g: (TRIU(g, diagonal=ctx.attrs["diagonal"]),), grad_name="TriuBackward0", kind="index",
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"diagonal": 1}),
                         ((rng.standard_normal((2, 3, 3)),), {"diagonal": 0})],
)
def _flip(xp, x, dims):
    out = empty_like(xp, x)
    out[...] = xp.flip(x, axis=tuple(dims))
    return out


FLIP: OpDef = defop(
    "flip", forward=_flip,  # a copy in x's memory order, as PyTorch's flip
    abstract=lambda x, dims: x, vjp=lambda ctx, g: (FLIP(g, dims=ctx.attrs["dims"]),),
    grad_name="FlipBackward0", kind="shape", layout="preserve",
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"dims": (1,)}),
                         ((rng.standard_normal((2, 3, 4)),), {"dims": (0, 2)})],
)


def _diagonal_abstract(x, offset=0, dim1=0, dim2=1):
    if x.ndim < 2:
        raise RuntimeError(f"diagonal(): input must have at least 2 dimensions (got shape {tuple(x.shape)})")
    n1, n2 = x.shape[dim1], x.shape[dim2]
    n = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    rest = tuple(s for d, s in enumerate(x.shape) if d not in (dim1, dim2))
    return TensorSpec(rest + (n,), x.dtype)


def _diagonal(xp, x, offset=0, dim1=0, dim2=1):
    """A writable view of the diagonal, as PyTorch's (NumPy's own is read-only): the
    strides NumPy's diagonal computes, applied from the diagonal's first element."""
    if xp is not np:
        return xp.diagonal(x, offset, dim1, dim2)
    d = np.diagonal(x, offset, dim1, dim2)
    start = [slice(None)] * x.ndim
    start[dim1] = slice(max(-offset, 0), max(-offset, 0) + 1)
    start[dim2] = slice(max(offset, 0), max(offset, 0) + 1)
    first = x[tuple(start)]
    if d.size == 0 or first.size == 0:
        return np.diagonal(x, offset, dim1, dim2).copy()
    return np.lib.stride_tricks.as_strided(first, shape=d.shape, strides=d.strides, writeable=x.flags.writeable)


def _diagonal_grad(xp, g, shape, offset=0, dim1=0, dim2=1):
    out = xp.zeros(tuple(shape), dtype=g.dtype)
    view = xp.moveaxis(out, (dim1, dim2), (-2, -1))
    n = g.shape[-1]
    rows = xp.arange(n) + max(-offset, 0)
    cols = xp.arange(n) + max(offset, 0)
    view[..., rows, cols] = g
    return out


DIAGONAL = defop(
    "diagonal", forward=_diagonal, abstract=_diagonal_abstract,
    vjp=lambda ctx, g: (DIAGONAL_GRAD(g, shape=ctx.in_shape(0), **ctx.attrs),),
    grad_name="DiagonalBackward0", kind="index", is_view=True,
    samples=lambda rng: [((rng.standard_normal((3, 4)),), {"offset": 1, "dim1": 0, "dim2": 1}),
                         ((rng.standard_normal((2, 4, 3)),), {"offset": -1, "dim1": 1, "dim2": 2})],
    doc="the diagonal (offset) of the (dim1, dim2) planes, as a new last dim (a view)",
)
DIAGONAL_GRAD: OpDef = defop(
    "diagonal_grad", forward=_diagonal_grad,
    abstract=lambda g, shape, offset=0, dim1=0, dim2=1: TensorSpec(tuple(shape), g.dtype),
    vjp=lambda ctx, gg: (DIAGONAL(gg, offset=ctx.attrs["offset"], dim1=ctx.attrs["dim1"], dim2=ctx.attrs["dim2"]),),
    grad_name="DiagonalBackwardBackward0", kind="index",
    samples=lambda rng: [((rng.standard_normal((3,)),), {"shape": (3, 4), "offset": 1, "dim1": 0, "dim2": 1}),
                         ((rng.standard_normal((2, 3)),), {"shape": (2, 4, 3), "offset": -1, "dim1": 1, "dim2": 2})],
    doc="zeros of `shape` with g written on the diagonal that `diagonal` reads (diag_embed)",
)


def norm_dim_list(op: str, dims, ndim: int) -> tuple:
    if isinstance(dims, int):
        dims = (dims,)
    return tuple(norm_dim(op, d, ndim) for d in dims)
