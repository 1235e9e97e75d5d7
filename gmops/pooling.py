"""2-d max-pooling as one op and its gradient as one op (eager's path for NCHW images).

`F.max_pool2d` of an eager tensor runs `max_pool2d`, which reads each window of the image
once (gmnative.conv_kernels) and gives the (N, C, OH, OW) maxima straight in PyTorch's
row-major layout; its VJP `max_pool2d_backward(g, x)` finds each window's maximum again in
x and writes the window's gradient there. The decomposition (unfold with -inf padding, an
argmax along the window axis, a gather, a permuted copy; for the gradient a one-hot mask, a
select and a col2im) is what a trace records and what the code generators fuse; it took
about 3 ms of a small CNN's 20 ms eager step, where these take a few tenths.

The rules are the decomposition's: a window's maximum is its first largest cell in
row-major window order, a NaN counting as the largest (argmax's rule, which is PyTorch's
for values), and the gradient of a window goes to that cell (summed where windows
overlap). `padding` is (top, bottom, left, right) as unfold's, so ceil_mode's extra row and
column are padding on the bottom and right. Without the native kernels the forwards run the
decomposition in NumPy (the same values and gradients)."""
from __future__ import annotations

import numpy as np

from ._checks import require_float
from ._registry import OpDef, TensorSpec, defop
from .conv import UNFOLD, _fold, _out_sizes, _unfold, try_conv_native
from .reductions import ARGMAX, TAKE_ALONG
from .shape_ops import RESHAPE, TRANSPOSE
from .special import FULL_LIKE


def _windows(xp, x, kernel, stride, padding, dilation):
    """x's windows (C, KH*KW, N, OH, OW), padding cells -inf (the NumPy path)."""
    cols = _unfold(xp, x, kernel, stride, padding, dilation, -np.inf)
    c, kh, kw, n, oh, ow = cols.shape
    return cols.reshape(c, kh * kw, n, oh, ow)


def _max_pool2d(xp, x, kernel, stride, padding, dilation):
    out = _out_sizes(x.shape, kernel, stride, padding, dilation)
    if any(o <= 0 for o in out):
        raise ValueError("max_pool2d: empty output")  # eager re-raises the abstract rule's message
    found = try_conv_native(xp, "max_pool2d", x, kernel, out, stride, padding[::2], dilation)
    if found is not None:
        return found
    windows = _windows(xp, x, kernel, stride, padding, dilation)
    return xp.ascontiguousarray(xp.max(windows, axis=1).swapaxes(0, 1))


def _max_pool2d_abstract(x, kernel, stride, padding, dilation):
    require_float("max_pool2d", x)
    if x.ndim != 4:
        raise RuntimeError(f"max_pool2d: expected a 4-D (N, C, H, W) input, got shape {tuple(x.shape)}")
    out = _out_sizes(x.shape, kernel, stride, padding, dilation)
    if any(o <= 0 for o in out):
        raise RuntimeError(f"max_pool2d: the kernel {tuple(kernel)} (dilation {tuple(dilation)}) is larger than the "
                           f"padded input {tuple(x.shape[2:])} (padding {tuple(padding)}); use a smaller kernel "
                           "or more padding")
    return TensorSpec(tuple(x.shape[:2]) + out, x.dtype)


def _geometry(attrs) -> dict:
    return {k: attrs[k] for k in ("kernel", "stride", "padding", "dilation")}


def _pool_samples(rng):
    return [((rng.standard_normal((2, 3, 6, 6)),),
             {"kernel": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "dilation": (1, 1)}),
            ((rng.standard_normal((2, 2, 7, 5)),),
             {"kernel": (3, 2), "stride": (2, 1), "padding": (1, 2, 0, 1), "dilation": (1, 2)})]


def _merged_batch(op_name: str, count: int):
    """vmap's rule: a batch axis in front of (N, C, H, W) operands merged into N (every
    operand batched), else NotImplemented."""
    def rule(args: list, batched: list, attrs: dict, size: int):
        if not all(batched[:count]) or any(a.ndim != 5 for a in args[:count]):
            return NotImplemented
        op = REGISTRY_OPS[op_name]
        merged = [a.reshape((size * a.shape[1],) + tuple(a.shape[2:])) for a in args[:count]]
        out = op(*merged, **attrs)
        return out.reshape((size, out.shape[0] // size) + tuple(out.shape[1:]))
    return rule


MAX_POOL2D: OpDef = defop(
    "max_pool2d", forward=_max_pool2d, abstract=_max_pool2d_abstract,
    vjp=lambda ctx, g: (MAX_POOL2D_BACKWARD(g, ctx.input(0), **_geometry(ctx.attrs)),),
    grad_name="MaxPool2DWithIndicesBackward0", save=(0,), kind="other", samples=_pool_samples,
    batch_rule=_merged_batch("max_pool2d", 1),
    doc="the maximum of each 2-d window of an (N, C, H, W) image, (N, C, OH, OW), in one pass",
)


def _max_pool2d_backward(xp, g, x, kernel, stride, padding, dilation):
    found = try_conv_native(xp, "max_pool2d_backward", g, x, kernel, stride, padding[::2], dilation)
    if found is not None:
        return found
    windows = _windows(xp, x, kernel, stride, padding, dilation)
    at = xp.argmax(windows, axis=1)[:, None]
    hit = xp.arange(windows.shape[1]).reshape(1, -1, 1, 1, 1) == at
    cols = xp.where(hit, xp.asarray(g).swapaxes(0, 1)[:, None], xp.zeros((), x.dtype)).astype(x.dtype, copy=False)
    c, n = x.shape[1], x.shape[0]
    cols = cols.reshape((c,) + tuple(kernel) + (n,) + tuple(g.shape[2:]))
    return _fold(xp, cols, tuple(x.shape[2:]), kernel, stride, padding, dilation)


def _max_pool2d_backward_abstract(g, x, kernel, stride, padding, dilation):
    out = _max_pool2d_abstract(x, kernel, stride, padding, dilation)
    if tuple(g.shape) != tuple(out.shape):
        raise RuntimeError(f"max_pool2d_backward: the gradient's shape {tuple(g.shape)} is not the pooled "
                           f"shape {tuple(out.shape)} of the input {tuple(x.shape)}")
    return TensorSpec(tuple(x.shape), x.dtype)


def _gather_at_maxima(h, x, attrs):
    """h's cells at x's window maxima, (N, C, OH, OW): the gradient's VJP in g, in ops (the
    decomposition's argmax and gather), so max-pooling differentiates twice."""
    geometry = _geometry(attrs)
    cx = UNFOLD(x, pad_value=-float("inf"), **geometry)
    c, kh, kw, n, oh, ow = cx.shape
    at = ARGMAX(RESHAPE(cx, shape=(c, kh * kw, n, oh, ow)), dim=1, keepdim=False)
    ch = RESHAPE(UNFOLD(h, pad_value=0.0, **geometry), shape=(c, kh * kw, n, oh, ow))
    return TRANSPOSE(TAKE_ALONG(ch, at, dim=1, keepdim=False), dim0=0, dim1=1)


def _backward_samples(rng):
    out = []
    for (x,), attrs in _pool_samples(rng):
        shape = tuple(x.shape[:2]) + _out_sizes(x.shape, attrs["kernel"], attrs["stride"], attrs["padding"],
                                                attrs["dilation"])
        out.append(((rng.standard_normal(shape), x), attrs))
    return out


MAX_POOL2D_BACKWARD: OpDef = defop(
    "max_pool2d_backward", forward=_max_pool2d_backward, abstract=_max_pool2d_backward_abstract,
    vjp=lambda ctx, h: (_gather_at_maxima(h, ctx.input(1), ctx.attrs) if ctx.needs(0) else None,
                        # piecewise constant in x: zeros, as PyTorch's (not None: x asked for one)
                        FULL_LIKE(ctx.input(1), value=0.0) if ctx.needs(1) else None),
    grad_name="MaxPool2DWithIndicesBackwardBackward0", save=(1,), kind="other", arity=2,
    samples=_backward_samples, batch_rule=_merged_batch("max_pool2d_backward", 2),
    doc="the gradient of max_pool2d for an output gradient g: g at each window's maximum of x, zeros elsewhere",
)

REGISTRY_OPS = {"max_pool2d": MAX_POOL2D, "max_pool2d_backward": MAX_POOL2D_BACKWARD}
