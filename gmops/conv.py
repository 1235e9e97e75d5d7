"""The ops under convolution, pooling and normalization layers.

`unfold` (im2col) copies every kernel window of an (N, C, H, W) image into a column
tensor (C, kh, kw, N, oh, ow) through one strided view (and likewise for 1 or 3 spatial
dims: (C, *kernel, N, *out)), so a convolution is ONE matmul
(O, C*kh*kw) @ (C*kh*kw, N*oh*ow) (channels first: no per-image loop, no transposed copy
of the columns) and a pooling a reduction over (kh, kw): no Python loop over pixels. Its
VJP `fold` (col2im) adds the columns back with kh*kw strided adds in the same layout, and
the two are each other's VJPs, so convolutions differentiate to any order.
`normalize` standardizes over some dims (layer norm: the trailing ones; batch norm: all but
the channels) with a VJP in ops."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from ._checks import require_float
from ._native import kernels_module, try_native
from ._registry import OpDef, TensorSpec, defop
from .elementwise import RSQRT
from .reductions import MEAN, VAR


def conv_out_size(n: int, k: int, stride: int, pad: int, dilation: int) -> int:
    return (n + pad - dilation * (k - 1) - 1) // stride + 1


def _out_sizes(shape, kernel, stride, padding, dilation) -> tuple:
    """The window count along each spatial dim; `padding` holds (before, after) per dim."""
    return tuple(conv_out_size(shape[2 + i], k, stride[i], padding[2 * i] + padding[2 * i + 1], dilation[i])
                 for i, k in enumerate(kernel))


def _unfold_abstract(x, kernel, stride, padding, dilation, pad_value=0.0):
    d = len(kernel)
    if x.ndim != d + 2:
        raise RuntimeError(f"unfold: expected a {d + 2}-D (N, C, *spatial) input for a {d}-D kernel {tuple(kernel)}, "
                           f"got shape {tuple(x.shape)}")
    out = _out_sizes(x.shape, kernel, stride, padding, dilation)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"unfold: the kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger than the "
                           f"padded input {tuple(x.shape[2:])} (padding {tuple(padding)}); use a smaller kernel "
                           "or more padding")
    return TensorSpec((x.shape[1],) + tuple(kernel) + (x.shape[0],) + out, x.dtype)


def _pad_spatial(xp, x, padding, value):
    pairs = tuple((padding[2 * i], padding[2 * i + 1]) for i in range(len(padding) // 2))
    return xp.pad(x, ((0, 0), (0, 0)) + pairs, constant_values=value)


_conv_kernels: Any = None  # the module once imported, False where it cannot be


def conv_native() -> Any:
    """gmnative.conv_kernels (eager's NCHW im2col and max-pooling), imported on first use;
    None where it cannot be imported (each of its kernels returns None where it cannot run)."""
    global _conv_kernels
    if _conv_kernels is None:
        try:
            import gmnative.conv_kernels as module  # noqa: PLC0415
        except ImportError:  # a partial install: NumPy code only
            _conv_kernels = False
        else:
            _conv_kernels = module
    return _conv_kernels or None


def try_conv_native(xp, kernel: str, *args) -> Any:
    """gmnative.conv_kernels.<kernel>(*args) when xp is NumPy, else None; None also where the
    module cannot be imported or the kernel cannot run (try_native's rule for the conv
    kernels): the normalization and pooling ops call it first and run their NumPy code on None."""
    native = conv_native() if xp is np else None
    return None if native is None else getattr(native, kernel)(*args)


def _unfold(xp, x, kernel, stride, padding, dilation, pad_value=0.0):
    native = conv_native() if xp is np and len(kernel) == 2 else None
    if native is not None:  # one threaded copy of the image's windows, the same bits
        out = _out_sizes(x.shape, kernel, stride, padding, dilation)
        if all(o > 0 for o in out):
            found = native.im2col2d(x, kernel, out, stride, padding[::2], dilation, pad_value)
            if found is not None:
                return found
    if any(padding):
        x = _pad_spatial(xp, x, padding, pad_value)
    out = _out_sizes(x.shape, kernel, stride, (0,) * len(padding), dilation)
    if any(o <= 0 for o in out):
        raise ValueError("unfold: empty output")  # eager re-raises the abstract rule's message
    s = x.strides
    spatial = s[2:]
    view = xp.lib.stride_tricks.as_strided(
        x, (x.shape[1],) + tuple(kernel) + (x.shape[0],) + out,
        (s[1],) + tuple(st * dl for st, dl in zip(spatial, dilation)) + (s[0],)
        + tuple(st * sd for st, sd in zip(spatial, stride)))
    return xp.ascontiguousarray(view)


def _fold(xp, cols, size, kernel, stride, padding, dilation):
    d = len(kernel)
    found = try_native(xp, "fold2d", cols, size, kernel, stride, padding, dilation) if d == 2 else None
    if found is not None:  # one pass per plane (gmnative.kernels), the same sums
        return found
    c, n, out = cols.shape[0], cols.shape[d + 1], cols.shape[d + 2:]
    padded = tuple(size[i] + padding[2 * i] + padding[2 * i + 1] for i in range(d))
    result = xp.zeros((n, c) + padded, dtype=cols.dtype)
    channels_first = result.swapaxes(0, 1)  # a view: the adds below write into result
    for offsets in itertools.product(*(range(k) for k in kernel)):
        window = tuple(slice(o * dl, o * dl + sd * (m - 1) + 1, sd)
                       for o, dl, sd, m in zip(offsets, dilation, stride, out))
        channels_first[(slice(None), slice(None)) + window] += cols[(slice(None),) + offsets]
    if any(padding):
        inner = tuple(slice(padding[2 * i], padding[2 * i] + size[i]) for i in range(d))
        result = xp.ascontiguousarray(result[(slice(None), slice(None)) + inner])
    return result


def _geometry(attrs):
    return {k: attrs[k] for k in ("kernel", "stride", "padding", "dilation")}


def _conv_samples(rng):
    return [((rng.standard_normal((2, 3, 5, 6)),),
             {"kernel": (3, 2), "stride": (1, 2), "padding": (1, 1, 0, 1), "dilation": (1, 1), "pad_value": 0.0}),
            ((rng.standard_normal((1, 2, 6, 6)),),
             {"kernel": (2, 2), "stride": (2, 1), "padding": (0, 0, 0, 0), "dilation": (2, 2), "pad_value": 0.0}),
            ((rng.standard_normal((2, 2, 4, 5, 3)),),
             {"kernel": (2, 3, 2), "stride": (2, 1, 1), "padding": (1, 0, 0, 1, 1, 1), "dilation": (1, 1, 2),
              "pad_value": 0.0})]


UNFOLD = defop(
    "unfold", forward=_unfold, abstract=_unfold_abstract,
    vjp=lambda ctx, g: (FOLD(g, size=tuple(ctx.in_shape(0)[2:]), **_geometry(ctx.attrs)),),
    grad_name="Im2ColBackward0", kind="shape", samples=_conv_samples,
    doc="every kernel window of a padded (N, C, *spatial) input, channels first: (C, *kernel, N, *out) "
        "(1, 2 or 3 spatial dims: the one machinery under conv1d/2d/3d and their poolings)",
)


def _fold_abstract(cols, size, kernel, stride, padding, dilation):
    d = len(kernel)
    if cols.ndim != 2 * d + 2:
        raise RuntimeError(f"fold: expected (C, *kernel, N, *out) columns for a {d}-D kernel, got shape "
                           f"{tuple(cols.shape)}")
    return TensorSpec((cols.shape[d + 1], cols.shape[0]) + tuple(size), cols.dtype)


def _fold_samples(rng):
    out = []
    for (x,), attrs in _conv_samples(rng):
        geometry = {k: v for k, v in attrs.items() if k != "pad_value"}
        sizes = _out_sizes(x.shape, geometry["kernel"], geometry["stride"], geometry["padding"], geometry["dilation"])
        cols = rng.standard_normal((x.shape[1],) + tuple(geometry["kernel"]) + (x.shape[0],) + sizes)
        out.append(((cols,), {"size": x.shape[2:], **geometry}))
    return out


FOLD: OpDef = defop(
    "fold", forward=_fold, abstract=_fold_abstract,
    vjp=lambda ctx, g: (UNFOLD(g, pad_value=0.0, **_geometry(ctx.attrs)),),
    grad_name="Col2ImBackward0", kind="shape", samples=_fold_samples,
    doc="the columns of unfold added back into an (N, C, *spatial) input (col2im)",
)


# -- normalization -------------------------------------------------------------------------------
def _rows(x, dims):
    """x as (groups, n) rows when `dims` are its trailing dims (layer norm), else None."""
    k = len(dims)
    if k and tuple(dims) == tuple(range(x.ndim - k, x.ndim)) and x.flags.c_contiguous:
        return x.reshape(-1, int(np.prod(x.shape[x.ndim - k:], dtype=np.int64)))
    return None


def _row_dot(xp, a, b):
    """sum(a * b) along the rows of two (groups, n) arrays, without an (groups, n) temporary."""
    return xp.einsum("ij,ij->i", a, b)[:, None]


def _centered_rstd(xp, x, dims, eps):
    """(x - mean, 1 / sqrt(biased var + eps)) over `dims` in x's dtype (float32 statistics
    accumulate pairwise along the rows, as PyTorch's row-wise moments do; float16 in float32).
    Trailing dims (layer norm) are reduced as rows of a 2-D view: one pass for the mean, one
    for the centering, one fused dot for the variance."""
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    rows = _rows(work, dims) if xp is np else None
    if rows is not None:
        n = rows.shape[1]
        xc = rows - np.add.reduce(rows, axis=1, keepdims=True) / rows.dtype.type(n)
        var = _row_dot(xp, xc, xc) / rows.dtype.type(n)
        return xc.reshape(work.shape), (1.0 / np.sqrt(var + eps)).astype(work.dtype, copy=False), rows.shape
    xc = work - xp.mean(work, axis=dims, keepdims=True)
    var = xp.mean(xc * xc, axis=dims, keepdims=True)
    return xc, (1.0 / xp.sqrt(var + eps)).astype(work.dtype, copy=False), None


def _native_channels(xp, x, dims):
    """gmnative.kernels when it can normalize x over batch norm's dims, else None."""
    if xp is not np or type(x) is not np.ndarray:
        return None
    native = kernels_module()
    return native if native is not None and native.channel_dims(x.ndim, dims) else None


def _normalize(xp, x, dims, eps):
    native = _native_channels(xp, x, dims)
    found = native.channel_normalize(x, eps) if native is not None else None
    if found is not None:  # batch norm in one threaded pass per channel (gmnative.kernels)
        return found
    xc, rstd, rows = _centered_rstd(xp, x, dims, eps)
    if rows is not None:  # xc is a fresh buffer: scale it in place
        flat = xc.reshape(rows)
        np.multiply(flat, rstd, out=flat)
        out = xc
    else:
        out = xc * rstd
    return out.astype(x.dtype, copy=False)


def _normalize_abstract(x, dims, eps):
    require_float("normalize", x)
    for d in dims:
        if not 0 <= d < x.ndim:
            raise IndexError(f"normalize: Dimension out of range (got {d} for a {x.ndim}-d tensor)")
    return x


def _normalize_grad_name(operands, attrs):
    x, dims = operands[0], attrs["dims"]
    trailing = tuple(dims) == tuple(range(x.ndim - len(dims), x.ndim))
    return "NativeLayerNormBackward0" if trailing else "NativeBatchNormBackward0"


def _normalize_samples(rng):
    return [((rng.standard_normal((3, 4, 5)),), {"dims": (2,), "eps": 1e-5}),
            ((rng.standard_normal((4, 3, 2, 2)),), {"dims": (0, 2, 3), "eps": 1e-3})]


NORMALIZE = defop(
    "normalize", forward=_normalize, abstract=_normalize_abstract,
    vjp=lambda ctx, g: (NORMALIZE_BACKWARD(g, ctx.input(0), **ctx.attrs),),
    grad_name=_normalize_grad_name, save=(0,), kind="reduction", samples=_normalize_samples,
    doc="(x - mean) / sqrt(biased var + eps) over dims: layer norm and batch norm without the affine part",
)


# The gradient of normalize, one kernel: with xhat = normalize(x) and rstd its scale, per group
#     F(g, x) = rstd * (g - mean(g) - xhat * mean(g * xhat)).
# Its VJP, for a cotangent h: F is linear in g with a symmetric Jacobian (normalize's), so the
# g part is F(h, x); the x part, with a = mean(g xhat), b = mean(h xhat), c = mean(g (h - mean h)),
#     -rstd^2 * (xhat * (c - 3 a b) + b * (g - mean g) + a * (h - mean h)).
def _normalize_backward(xp, g, x, dims, eps):
    native = _native_channels(xp, x, dims)
    found = native.channel_normalize_backward(g, x, eps) if native is not None and type(g) is np.ndarray else None
    if found is not None:
        return found
    xc, rstd, rows = _centered_rstd(xp, x, dims, eps)
    work = g.astype(xc.dtype, copy=False)
    if rows is not None:
        n = rows[1]
        xhat = xc.reshape(rows)
        np.multiply(xhat, rstd, out=xhat)
        g2 = work.reshape(rows)
        gxm = _row_dot(xp, g2, xhat) / xhat.dtype.type(n)
        out = g2 - np.add.reduce(g2, axis=1, keepdims=True) / xhat.dtype.type(n)
        np.multiply(xhat, gxm, out=xhat)
        np.subtract(out, xhat, out=out)
        np.multiply(out, rstd, out=out)
        return out.reshape(x.shape).astype(x.dtype, copy=False)
    xhat = xc * rstd
    out = (work - xp.mean(work, axis=dims, keepdims=True) - xhat * xp.mean(work * xhat, axis=dims, keepdims=True))
    return (out * rstd).astype(x.dtype, copy=False)


def _normalize_backward_abstract(g, x, dims, eps):
    _normalize_abstract(x, dims, eps)
    if tuple(g.shape) != tuple(x.shape):
        raise RuntimeError(f"normalize_backward: the gradient's shape {tuple(g.shape)} is not the input's "
                           f"{tuple(x.shape)}")
    return x


def _normalize_backward_vjp(ctx, h):
    dims, eps = ctx.attrs["dims"], ctx.attrs["eps"]
    g, x = ctx.input(0), ctx.input(1)
    gg = NORMALIZE_BACKWARD(h, x, dims=dims, eps=eps) if ctx.needs(0) else None
    gx = _normalize_backward_dx(g, x, h, dims, eps) if ctx.needs(1) else None
    return gg, gx


def _normalize_backward_dx(g, x, h, dims, eps):
    """The x part of normalize_backward(g, x)'s VJP for a cotangent h (see above), in ops."""
    xhat = NORMALIZE(x, dims=dims, eps=eps)
    rstd = RSQRT(VAR(x, dims=dims, correction=0, keepdim=True) + eps)
    gc = g - MEAN(g, dims=dims, keepdim=True)
    hc = h - MEAN(h, dims=dims, keepdim=True)
    a = MEAN(g * xhat, dims=dims, keepdim=True)
    b = MEAN(h * xhat, dims=dims, keepdim=True)
    c = MEAN(g * hc, dims=dims, keepdim=True)
    return -(rstd * rstd) * (xhat * (c - a * b * 3.0) + b * gc + a * hc)


def _normalize_backward_samples(rng):
    return [((rng.standard_normal(x.shape), x), attrs) for (x,), attrs in _normalize_samples(rng)]


NORMALIZE_BACKWARD: OpDef = defop(
    "normalize_backward", forward=_normalize_backward, abstract=_normalize_backward_abstract,
    vjp=_normalize_backward_vjp, grad_name="NativeLayerNormBackwardBackward0", save=(0, 1), kind="reduction",
    arity=2, samples=_normalize_backward_samples,
    doc="the gradient of normalize for an output gradient g: rstd * (g - mean(g) - xhat * mean(g * xhat))",
)


# -- layer norm, fused -----------------------------------------------------------------------------
# layer_norm(x, weight, bias) is one op: the statistics, the scaling and the affine part run
# over one (groups, n) buffer with in-place ufuncs (about six whole-array passes, where the
# composite normalize * weight + bias took a dozen, and its gradient another twenty). Its
# gradient is one op too, layer_norm_backward(g, x, weight) -> (grad_input, grad_weight,
# grad_bias), which recomputes the statistics from x (a VJP sees its operands, not the
# forward's side results) and whose own VJP is written in ops for double backward.
def _ln_rows(xp, x, ndim):
    """x as contiguous (groups, n) rows in the dtype statistics are computed in (float16 in
    float32, as PyTorch's kernels accumulate)."""
    n = 1
    for s in x.shape[x.ndim - ndim:]:
        n *= int(s)
    work = x.astype(np.float32) if x.dtype == np.float16 else x
    return xp.ascontiguousarray(work).reshape(-1, n)


# Rows are processed in blocks of about _BLOCK elements: every pass over a block runs in the
# core's cache, so memory sees one read of each operand and one write of each result however
# many ufuncs the formula takes (a whole-array pass costs as much as the arithmetic of all of
# them). CuPy takes the whole array as one block.
_BLOCK = 1 << 16


def _blocks(xp, groups, n):
    step = max(1, groups if xp is not np else _BLOCK // max(n, 1))
    return ((r, min(r + step, groups)) for r in range(0, groups, step))


def _filled(xp, n: int, value: float, dtype) -> object:
    """A length-n vector of `value` (the row-mean and column-sum weights), made once per
    (n, value, dtype) for NumPy rather than once per block and per call."""
    if xp is not np:
        return xp.full(n, value, dtype=dtype)
    key = (n, value, np.dtype(dtype))
    vec = _FILLED.get(key)
    if vec is None:
        if len(_FILLED) > 64:
            _FILLED.clear()
        vec = _FILLED[key] = np.full(n, value, dtype=dtype)
        vec.flags.writeable = False
    return vec


_FILLED: dict = {}


def _row_means(xp, a):
    """Means along the rows of a (groups, n) block as (groups, 1): a matrix-vector product with
    1/n weights (about twice as fast as NumPy's row reduction; float32 accumulates in blocks, as
    PyTorch's reductions do)."""
    n = a.shape[1]
    return (a @ _filled(xp, n, 1.0 / n if n else 0.0, a.dtype))[:, None]


def _col_sums(xp, a):
    """Sums down the columns of a (groups, n) block as (n,), as a vector-matrix product."""
    return _filled(xp, a.shape[0], 1.0, a.dtype) @ a


def _ln_centered(xp, rows, eps, out):
    """Write rows - mean into `out` and return rstd as (groups, 1): the biased variance of the
    centered rows (PyTorch's two-pass row moments), computed in place on the small vectors."""
    n = rows.shape[1]
    xp.subtract(rows, _row_means(xp, rows), out=out)
    var = xp.einsum("ij,ij->i", out, out)
    var *= 1.0 / n if n else 0.0
    var += eps
    xp.sqrt(var, out=var)
    xp.divide(1.0, var, out=var)
    return var.astype(rows.dtype, copy=False)[:, None]


def _layer_norm(xp, x, weight, bias, ndim, eps):
    rows = _ln_rows(xp, x, ndim)
    w = weight.reshape(-1).astype(rows.dtype, copy=False)
    b = bias.reshape(-1).astype(rows.dtype, copy=False)
    out = try_native(xp, "layer_norm", rows, w, b, eps)
    if out is not None:  # one threaded pass (gmnative.kernels)
        return out.reshape(x.shape).astype(x.dtype, copy=False)
    out = xp.empty_like(rows)
    for r0, r1 in _blocks(xp, *rows.shape):
        o = out[r0:r1]
        xp.multiply(o, _ln_centered(xp, rows[r0:r1], eps, o), out=o)
        xp.multiply(o, w, out=o)
        xp.add(o, b, out=o)
    return out.reshape(x.shape).astype(x.dtype, copy=False)


def _layer_norm_abstract(x, weight, bias, ndim, eps):
    require_float("layer_norm", x)
    if not 0 < ndim <= x.ndim:
        raise RuntimeError(f"layer_norm: cannot normalize over the last {ndim} dims of a {x.ndim}-d input "
                           f"of shape {tuple(x.shape)}")
    normalized = tuple(x.shape[x.ndim - ndim:])
    for what, t in (("weight", weight), ("bias", bias)):
        if tuple(t.shape) != normalized:
            raise RuntimeError(f"layer_norm: Expected {what} to be of same shape as normalized_shape, but got "
                               f"{what} of shape {list(t.shape)} and normalized_shape = {list(normalized)}")
    return TensorSpec(tuple(x.shape), x.dtype)


def _layer_norm_vjp(ctx, g):
    return LAYER_NORM_BACKWARD(g, ctx.input(0), ctx.input(1), **ctx.attrs)


def _layer_norm_samples(rng):
    return [((rng.standard_normal((3, 4, 5)), rng.standard_normal(5), rng.standard_normal(5)),
             {"ndim": 1, "eps": 1e-5}),
            ((rng.standard_normal((2, 3, 4)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4))),
             {"ndim": 2, "eps": 1e-3})]


LAYER_NORM: OpDef = defop(
    "layer_norm", forward=_layer_norm, abstract=_layer_norm_abstract, vjp=_layer_norm_vjp,
    grad_name="NativeLayerNormBackward0", save=(0, 1), kind="reduction", promote="float", arity=3,
    samples=_layer_norm_samples,
    doc="(x - mean) * rstd * weight + bias over the trailing `ndim` dims, in one fused kernel",
)


def _layer_norm_backward(xp, g, x, weight, ndim, eps):
    """With s = x - mean (per row), xhat = s * rstd and gw = g * w:
    grad_bias = sum_rows g, grad_weight = sum_rows g * xhat = rstd^T (g * s), and
    grad_input = rstd * (gw - mean(gw) - xhat * mean(gw * xhat))
               = rstd * (gw - (g @ w) / n) - s * (rstd^3 / n) * ((g * s) @ w).
    xhat itself is never formed: the row and column weights go into matrix-vector products,
    so a block takes two multiplications of whole arrays less than the textbook form."""
    rows = _ln_rows(xp, x, ndim)
    groups, n = rows.shape
    g2 = xp.ascontiguousarray(g.astype(rows.dtype, copy=False)).reshape(-1, n)
    w = weight.reshape(-1).astype(rows.dtype, copy=False)
    shape = tuple(weight.shape)
    found = try_native(xp, "layer_norm_backward", g2, rows, w, eps)
    if found is not None:  # one threaded pass (gmnative.kernels)
        gx, gw, gb = found
        return (gx.reshape(x.shape).astype(x.dtype, copy=False), gw.reshape(shape).astype(x.dtype, copy=False),
                gb.reshape(shape).astype(x.dtype, copy=False))
    grad_input = xp.empty_like(rows)
    # the column sums accumulate block by block in float64 (n numbers: free)
    grad_weight = xp.zeros(n, dtype=np.float64)
    grad_bias = xp.zeros(n, dtype=np.float64)
    inv_n = 1.0 / n if n else 0.0
    scratch = None
    for r0, r1 in _blocks(xp, groups, n):
        gb, out = g2[r0:r1], grad_input[r0:r1]
        if scratch is None or scratch.shape[0] != r1 - r0:
            scratch = xp.empty((r1 - r0, n), dtype=rows.dtype)
        centered = scratch
        rstd = _ln_centered(xp, rows[r0:r1], eps, centered)
        grad_bias += _col_sums(xp, gb)
        xp.multiply(gb, centered, out=out)  # g * s
        grad_weight += rstd[:, 0] @ out
        dot = (out @ w)[:, None]  # sum_j g w s per row: n * rstd^-1 * mean(gw * xhat)
        mean_gw = (gb @ w)[:, None] * inv_n
        xp.multiply(gb, w, out=out)
        xp.subtract(out, mean_gw, out=out)
        xp.multiply(out, rstd, out=out)
        xp.multiply(centered, dot * (rstd * rstd * rstd * inv_n), out=centered)
        xp.subtract(out, centered, out=out)
    return (grad_input.reshape(x.shape).astype(x.dtype, copy=False),
            grad_weight.reshape(shape).astype(x.dtype),
            grad_bias.reshape(shape).astype(x.dtype))


def _norm_backward_specs(op: str, g, x, weight) -> tuple:
    """The specs (grad_input, grad_weight, grad_bias) of a normalization's fused backward
    (layer_norm_backward here, batch_norm_backward in normalization.py), once its forward's
    abstract has checked x and weight: g must have x's shape."""
    if tuple(g.shape) != tuple(x.shape):
        raise RuntimeError(f"{op}: the gradient's shape {tuple(g.shape)} is not the input's "
                           f"{tuple(x.shape)}")
    w = TensorSpec(tuple(weight.shape), x.dtype)
    return (TensorSpec(tuple(x.shape), x.dtype), w, w)


def _layer_norm_backward_abstract(g, x, weight, ndim, eps):
    _layer_norm_abstract(x, weight, weight, ndim, eps)
    return _norm_backward_specs("layer_norm_backward", g, x, weight)


def _add(a, b):
    """a + b where either may be None (a cotangent not given): the other, or None for both."""
    return b if a is None else (a if b is None else a + b)


def _layer_norm_backward_vjp(ctx, grads):
    """With gx = normalize_backward(g * w, x), gw = sum(g * xhat), gb = sum(g) over the
    leading dims, for cotangents (hx, hw, hb); sums over the leading dims are left to
    fit_grad (the gradients of w come back in x's shape)."""
    g, x, w = ctx.input(0), ctx.input(1), ctx.input(2)
    ndim, eps = ctx.attrs["ndim"], ctx.attrs["eps"]
    dims = tuple(range(len(ctx.in_shape(1)) - ndim, len(ctx.in_shape(1))))
    return _norm_backward_vjp(ctx, g, x, w, grads, dims, eps, lambda nb: nb * g)


def _norm_backward_vjp(ctx, g, x, w, grads, dims, eps, weight_grad) -> tuple:
    """The vjp of a fused normalization backward (gx = normalize_backward(g * w, x),
    gw = sum(g * xhat), gb = sum(g) over dims) for cotangents grads = (hx, hw, hb), with w
    and hw, hb in x's broadcast form, in ops (so it differentiates again): layer_norm_backward's
    and batch_norm_backward's (normalization.py). weight_grad(nb) gives w's cotangent from
    nb = normalize_backward(hx, x), or None where it is not needed."""
    hx, hw, hb = grads
    d_g = d_x = d_w = None
    if hx is not None:
        nb = NORMALIZE_BACKWARD(hx, x, dims=dims, eps=eps)
        d_g = nb * w
        d_w = weight_grad(nb)
        if ctx.needs(1):
            d_x = _normalize_backward_dx(g * w, x, hx, dims, eps)
    if hw is not None:
        d_g = _add(d_g, hw * NORMALIZE(x, dims=dims, eps=eps))
        if ctx.needs(1):
            d_x = _add(d_x, NORMALIZE_BACKWARD(hw * g, x, dims=dims, eps=eps))
    if hb is not None:
        d_g = _add(d_g, hb + g * 0.0 if d_g is None else hb)
    return d_g, d_x, d_w


def _layer_norm_backward_samples(rng):
    return [((rng.standard_normal(x.shape), x, w), attrs) for (x, w, _), attrs in _layer_norm_samples(rng)]


LAYER_NORM_BACKWARD: OpDef = defop(
    "layer_norm_backward", forward=_layer_norm_backward, abstract=_layer_norm_backward_abstract,
    vjp=_layer_norm_backward_vjp, grad_name="NativeLayerNormBackwardBackward0", save=(0, 1, 2),
    kind="reduction", promote="float", arity=3, multi_output=True, samples=_layer_norm_backward_samples,
    doc="the gradients of layer_norm's input, weight and bias for an output gradient g, in one kernel",
)
