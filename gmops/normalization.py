"""Batch norm in training as one op and its three gradients as one op (eager's path).

`F.batch_norm` of an eager tensor in training with a weight and a bias runs `batch_norm`:
each channel's statistics, the normalization and the affine part in one pass per channel
(gmnative.conv_kernels), where the decomposition (normalize, then * weight, then + bias)
took three passes forward, and its gradient (normalize_backward, then a product and two
sums over the batch and spatial dims for the weight and the bias) five more. The VJP
`batch_norm_backward(g, x, weight)` gives the input's, weight's and bias's gradients from
one pass per channel. A trace records the decomposition, which the code generators fuse.

The statistics are the decomposition's: mean and biased variance per channel over every dim
but dim 1, accumulated in double. Without the native kernels the forwards run the
decomposition's NumPy code."""
from __future__ import annotations

from ._checks import require_float
from ._registry import OpDef, TensorSpec, defop
from .conv import _norm_backward_specs, _norm_backward_vjp, _normalize, _normalize_backward, try_conv_native
from .reductions import SUM
from .shape_ops import RESHAPE


def _dims(ndim: int) -> tuple:
    """Batch norm's reduced dims: all but the channels (dim 1)."""
    return (0,) + tuple(range(2, ndim))


def _per_channel(xp, t, ndim: int):
    return t.reshape((1, -1) + (1,) * (ndim - 2))


def _batch_norm(xp, x, weight, bias, eps):
    found = try_conv_native(xp, "batch_norm", x, weight, bias, eps)
    if found is not None:
        return found
    xhat = _normalize(xp, x, _dims(x.ndim), eps)
    return xhat * _per_channel(xp, weight, x.ndim) + _per_channel(xp, bias, x.ndim)


def _batch_norm_abstract(x, weight, bias, eps):
    require_float("batch_norm", x)
    if x.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2D input (got {x.ndim}D input)")
    for what, t in (("weight", weight), ("bias", bias)):
        if tuple(t.shape) != (x.shape[1],):
            raise RuntimeError(f"batch_norm: expected {what} of shape [{x.shape[1]}] (one per channel of the input "
                               f"{list(x.shape)}), got {list(t.shape)}")
    return TensorSpec(tuple(x.shape), x.dtype)


def _samples(rng):
    return [((rng.standard_normal((4, 3, 2, 3)), rng.standard_normal(3), rng.standard_normal(3)), {"eps": 1e-5}),
            ((rng.standard_normal((5, 2)), rng.standard_normal(2), rng.standard_normal(2)), {"eps": 1e-3})]


BATCH_NORM: OpDef = defop(
    "batch_norm", forward=_batch_norm, abstract=_batch_norm_abstract,
    vjp=lambda ctx, g: BATCH_NORM_BACKWARD(g, ctx.input(0), ctx.input(1), **ctx.attrs),
    grad_name="NativeBatchNormBackward0", save=(0, 1), kind="other", promote="float", arity=3, samples=_samples,
    doc="batch norm by the batch's statistics with the affine part, per channel (dim 1), in one pass",
)


def _batch_norm_backward(xp, g, x, weight, eps):
    found = try_conv_native(xp, "batch_norm_backward", g, x, weight, eps)
    if found is not None:
        return found
    dims = _dims(x.ndim)
    gx = _normalize_backward(xp, g * _per_channel(xp, weight, x.ndim), x, dims, eps)
    xhat = _normalize(xp, x, dims, eps)
    return (gx.astype(x.dtype, copy=False), xp.sum(g * xhat, axis=dims).astype(x.dtype, copy=False),
            xp.sum(g, axis=dims).astype(x.dtype, copy=False))


def _batch_norm_backward_abstract(g, x, weight, eps):
    _batch_norm_abstract(x, weight, weight, eps)
    return _norm_backward_specs("batch_norm_backward", g, x, weight)


def _batch_norm_backward_vjp(ctx, grads):
    """With gx = normalize_backward(g * w, x), gw = sum(g * xhat), gb = sum(g) over the
    reduced dims, for cotangents (hx, hw, hb), in ops (so batch norm differentiates again)."""
    hx, hw, hb = grads
    g, x, w = ctx.input(0), ctx.input(1), ctx.input(2)
    ndim = len(ctx.in_shape(1))
    dims = _dims(ndim)
    shape = (1, ctx.in_shape(2)[0]) + (1,) * (ndim - 2)
    per_channel = tuple(None if h is None else RESHAPE(h, shape=shape) for h in (hw, hb))
    return _norm_backward_vjp(ctx, g, x, RESHAPE(w, shape=shape), (hx, *per_channel), dims, ctx.attrs["eps"],
                              lambda nb: SUM(nb * g, dims=dims, keepdim=False) if ctx.needs(2) else None)


def _backward_samples(rng):
    return [((rng.standard_normal(x.shape), x, w), attrs) for (x, w, _), attrs in _samples(rng)]


BATCH_NORM_BACKWARD: OpDef = defop(
    "batch_norm_backward", forward=_batch_norm_backward, abstract=_batch_norm_backward_abstract,
    vjp=_batch_norm_backward_vjp, grad_name="NativeBatchNormBackwardBackward0", save=(0, 1, 2), kind="other",
    promote="float", arity=3, multi_output=True, samples=_backward_samples,
    doc="the gradients of batch_norm's input, weight and bias for an output gradient g, one pass per channel",
)
