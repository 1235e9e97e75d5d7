"""The ops under convolution, pooling and normalization layers.

`unfold` (im2col) copies every kernel window of an (N, C, H, W) image into a column
tensor (C, kh, kw, N, oh, ow) through one strided view, so a convolution is ONE matmul
(O, C*kh*kw) @ (C*kh*kw, N*oh*ow) (channels first: no per-image loop, no transposed copy
of the columns) and a pooling a reduction over (kh, kw): no Python loop over pixels. Its
VJP `fold` (col2im) adds the columns back with kh*kw strided adds in the same layout, and
the two are each other's VJPs, so convolutions differentiate to any order.
`normalize` standardizes over some dims (layer norm: the trailing ones; batch norm: all but
the channels) with a VJP in ops."""
from __future__ import annotations

import numpy as np

from ._checks import require_float
from ._registry import OpDef, TensorSpec, defop
from .elementwise import RSQRT
from .reductions import MEAN, VAR


def conv_out_size(n: int, k: int, stride: int, pad: int, dilation: int) -> int:
    return (n + pad - dilation * (k - 1) - 1) // stride + 1


def _out_hw(shape, kernel, stride, padding, dilation):
    (kh, kw), (sh, sw), (t, b, left, right), (dh, dw) = kernel, stride, padding, dilation
    return (conv_out_size(shape[2], kh, sh, t + b, dh), conv_out_size(shape[3], kw, sw, left + right, dw))


def _unfold_abstract(x, kernel, stride, padding, dilation, pad_value=0.0):
    if x.ndim != 4:
        raise RuntimeError(f"unfold: expected a 4-D (N, C, H, W) input, got shape {tuple(x.shape)}")
    oh, ow = _out_hw(x.shape, kernel, stride, padding, dilation)
    if oh <= 0 or ow <= 0:
        raise RuntimeError(f"unfold: the kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger than the "
                           f"padded input {tuple(x.shape[2:])} (padding {tuple(padding)}); use a smaller kernel "
                           "or more padding")
    return TensorSpec((x.shape[1],) + tuple(kernel) + (x.shape[0], oh, ow), x.dtype)


def _unfold(xp, x, kernel, stride, padding, dilation, pad_value=0.0):
    (kh, kw), (sh, sw), (t, b, left, right), (dh, dw) = kernel, stride, padding, dilation
    if t or b or left or right:
        x = xp.pad(x, ((0, 0), (0, 0), (t, b), (left, right)), constant_values=pad_value)
    n, c, h, w = x.shape
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    if oh <= 0 or ow <= 0:
        raise ValueError("unfold: empty output")  # eager re-raises the abstract rule's message
    s0, s1, s2, s3 = x.strides
    view = xp.lib.stride_tricks.as_strided(x, (c, kh, kw, n, oh, ow), (s1, s2 * dh, s3 * dw, s0, s2 * sh, s3 * sw))
    return xp.ascontiguousarray(view)


def _fold(xp, cols, size, kernel, stride, padding, dilation):
    (kh, kw), (sh, sw), (t, b, left, right), (dh, dw) = kernel, stride, padding, dilation
    c, _, _, n, oh, ow = cols.shape
    h, w = size
    out = xp.zeros((n, c, h + t + b, w + left + right), dtype=cols.dtype)
    channels_first = out.transpose(1, 0, 2, 3)  # a view: the adds below write into out
    for i in range(kh):
        for j in range(kw):
            hs, ws = i * dh, j * dw
            channels_first[:, :, hs:hs + sh * (oh - 1) + 1:sh, ws:ws + sw * (ow - 1) + 1:sw] += cols[:, i, j]
    if t or b or left or right:
        out = xp.ascontiguousarray(out[:, :, t:t + h, left:left + w])
    return out


def _geometry(attrs):
    return {k: attrs[k] for k in ("kernel", "stride", "padding", "dilation")}


def _conv_samples(rng):
    return [((rng.standard_normal((2, 3, 5, 6)),),
             {"kernel": (3, 2), "stride": (1, 2), "padding": (1, 1, 0, 1), "dilation": (1, 1), "pad_value": 0.0}),
            ((rng.standard_normal((1, 2, 6, 6)),),
             {"kernel": (2, 2), "stride": (2, 1), "padding": (0, 0, 0, 0), "dilation": (2, 2), "pad_value": 0.0})]


UNFOLD = defop(
    "unfold", forward=_unfold, abstract=_unfold_abstract,
    vjp=lambda ctx, g: (FOLD(g, size=tuple(ctx.in_shape(0)[2:]), **_geometry(ctx.attrs)),),
    grad_name="Im2ColBackward0", kind="shape", samples=_conv_samples,
    doc="every kernel window of a padded (N, C, H, W) image, channels first: (C, kh, kw, N, oh, ow)",
)


def _fold_abstract(cols, size, kernel, stride, padding, dilation):
    if cols.ndim != 6:
        raise RuntimeError(f"fold: expected (C, kh, kw, N, oh, ow) columns, got shape {tuple(cols.shape)}")
    return TensorSpec((cols.shape[3], cols.shape[0]) + tuple(size), cols.dtype)


def _fold_samples(rng):
    out = []
    for (x,), attrs in _conv_samples(rng):
        geometry = {k: v for k, v in attrs.items() if k != "pad_value"}
        oh, ow = _out_hw(x.shape, geometry["kernel"], geometry["stride"], geometry["padding"], geometry["dilation"])
        cols = rng.standard_normal((x.shape[1],) + tuple(geometry["kernel"]) + (x.shape[0], oh, ow))
        out.append(((cols,), {"size": x.shape[2:], **geometry}))
    return out


FOLD: OpDef = defop(
    "fold", forward=_fold, abstract=_fold_abstract,
    vjp=lambda ctx, g: (UNFOLD(g, pad_value=0.0, **_geometry(ctx.attrs)),),
    grad_name="Col2ImBackward0", kind="shape", samples=_fold_samples,
    doc="the columns of unfold added back into an (N, C, H, W) image (col2im)",
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


def _normalize(xp, x, dims, eps):
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
    gx = None
    if ctx.needs(1):
        xhat = NORMALIZE(x, dims=dims, eps=eps)
        rstd = RSQRT(VAR(x, dims=dims, correction=0, keepdim=True) + eps)
        gc = g - MEAN(g, dims=dims, keepdim=True)
        hc = h - MEAN(h, dims=dims, keepdim=True)
        a = MEAN(g * xhat, dims=dims, keepdim=True)
        b = MEAN(h * xhat, dims=dims, keepdim=True)
        c = MEAN(g * hc, dims=dims, keepdim=True)
        gx = -(rstd * rstd) * (xhat * (c - a * b * 3.0) + b * gc + a * hc)
    return gg, gx


def _normalize_backward_samples(rng):
    return [((rng.standard_normal(x.shape), x), attrs) for (x,), attrs in _normalize_samples(rng)]


NORMALIZE_BACKWARD: OpDef = defop(
    "normalize_backward", forward=_normalize_backward, abstract=_normalize_backward_abstract,
    vjp=_normalize_backward_vjp, grad_name="NativeLayerNormBackwardBackward0", save=(0, 1), kind="reduction",
    arity=2, samples=_normalize_backward_samples,
    doc="the gradient of normalize for an output gradient g: rstd * (g - mean(g) - xhat * mean(g * xhat))",
)
