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
def _normalize(xp, x, dims, eps):
    mu = xp.mean(x, axis=dims, keepdims=True)
    xc = x - mu
    var = xp.mean(xc * xc, axis=dims, keepdims=True)
    return xc * (1.0 / xp.sqrt(var + eps)).astype(x.dtype, copy=False)


def _normalize_abstract(x, dims, eps):
    require_float("normalize", x)
    for d in dims:
        if not 0 <= d < x.ndim:
            raise IndexError(f"normalize: Dimension out of range (got {d} for a {x.ndim}-d tensor)")
    return x


def _normalize_vjp(ctx, g):
    dims, eps = ctx.attrs["dims"], ctx.attrs["eps"]
    xhat = ctx.out
    rstd = RSQRT(VAR(ctx.input(0), dims=dims, correction=0, keepdim=True) + eps)
    gm = MEAN(g, dims=dims, keepdim=True)
    gxm = MEAN(g * xhat, dims=dims, keepdim=True)
    return ((g - gm - xhat * gxm) * rstd,)


def _normalize_grad_name(operands, attrs):
    x, dims = operands[0], attrs["dims"]
    trailing = tuple(dims) == tuple(range(x.ndim - len(dims), x.ndim))
    return "NativeLayerNormBackward0" if trailing else "NativeBatchNormBackward0"


NORMALIZE = defop(
    "normalize", forward=_normalize, abstract=_normalize_abstract, vjp=_normalize_vjp,
    grad_name=_normalize_grad_name, save=(0,), save_output=True, kind="reduction",
    samples=lambda rng: [((rng.standard_normal((3, 4, 5)),), {"dims": (2,), "eps": 1e-5}),
                         ((rng.standard_normal((4, 3, 2, 2)),), {"dims": (0, 2, 3), "eps": 1e-3})],
    doc="(x - mean) / sqrt(biased var + eps) over dims: layer norm and batch norm without the affine part",
)
