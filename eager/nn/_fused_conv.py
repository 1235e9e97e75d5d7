"""F.conv2d on a batch of images as one autograd node on the NumPy arrays (PyTorch's
ConvolutionBackward0), its columns batch-major.

Why: op by op, a convolution is an unfold (im2col, channel-major columns (C, KH, KW, N, OH,
OW)), one (O, K) @ (K, N * L) product, a permute of its (O, N, ...) result to PyTorch's
(N, O, ...) and a copy of it, a bias add, and as many backward nodes: the output gradient is
permuted and copied back to (O, N * L) first. On a small CNN's 3x3 layers (K = 9 or 144, a
batch of 32 images) the copies, the bias pass and OpenBLAS's speed on a product whose inner
dimension is the whole batch cost a third of the step. Here the columns are laid out image
by image, (N, K, L) (gmnative.conv_kernels.im2col2d_batch_major), so W @ cols[n] is image n's
result in PyTorch's layout already: one batched product, the bias added in place, no permute
or copy; backward, the output gradient is (N, O, L) as it comes, dW = sum_n G[n] cols[n]^T,
db = G summed over images and positions, dcols = W^T G[n] folded back (col2im) batch-major.
The same products as the op path, image by image: equal to rounding.

Where gmnative.conv_kernels.conv2d_images can run (the usual case), the columns are not even
made for the batch: each thread makes one image's columns in a buffer of its own, multiplies
them there (one single-threaded BLAS call an image, the images split across the kernels'
threads) and adds the bias, and the backward makes them again the same way for dW while it
folds W^T G[n] into dx[n]: the batch's columns (3.6 MB for a 16-channel 14x14 layer of 32
images, past the L2 cache) are never written out and read back, nor kept between forward and
backward. Its values are the batch-major path's (the same BLAS calls, the same fold order).

It runs for the common case only: a 4-d C-contiguous float32/float64 input, a 4-d weight and
a 1-d bias (or none) of its dtype, groups=1, plain eager tensors over NumPy arrays, no
dispatch mode or trace, and eager's native kernels available; anything else (and every error
message) takes the op path. A backward that records a graph (create_graph=True)
differentiates the op path on the saved inputs, so higher derivatives stay exact.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import _dispatch
from .._fused_node import attach
from .._grad_mode import STATE
from .._tensor import Tensor
from ..autograd.function import Function, FunctionCtx
from ._fused_cells import _grads_by_recompute
from .parameter import Parameter

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_PLAIN = (Tensor, Parameter)  # exact types: a subclass may override ops (__torch_function__)
_native: Any = None


def _kernels() -> Any:
    """gmnative.conv_kernels where eager's native kernels can run, else None."""
    global _native
    if _native is None:
        try:
            import gmnative.conv_kernels as module  # noqa: PLC0415

            _native = module
        except ImportError:  # a partial install: the op path only
            _native = False
    return _native if _native and _native._kernels.kernels() is not None else None


def eligible(x: Any, w: Any, b: Any, groups: int) -> bool:
    """Whether the fused conv2d may run (see the module docstring)."""
    if groups != 1 or _dispatch._n_modes_pushed or type(x) not in _PLAIN or type(w) not in _PLAIN:
        return False
    X, W = x._data, w._data
    if type(X) is not np.ndarray or type(W) is not np.ndarray or X.ndim != 4 or W.ndim != 4:
        return False
    dt = X.dtype
    if dt not in _FLOATS or W.dtype != dt or X.shape[1] != W.shape[1] or not X.flags.c_contiguous or X.size == 0:
        return False
    if b is not None:
        if type(b) not in _PLAIN:
            return False
        B = b._data
        if type(B) is not np.ndarray or B.dtype != dt or B.shape != (W.shape[0],):
            return False
    return _kernels() is not None


def _bmm(a: np.ndarray, b: np.ndarray, sum_batch: bool = False) -> np.ndarray:
    """a @ b over the batch (summed over it where `sum_batch`) with the images split across the
    kernels' threads (gmnative.conv_kernels.gemm_batched); NumPy's matmul where that cannot
    run (it loops over the images on one thread)."""
    native = _kernels()
    out = None if native is None else native.gemm_batched(a, b, sum_batch=sum_batch)
    if out is None:
        out = np.matmul(a, b)
        return out.sum(0) if sum_batch else out
    return out


def _conv_ops(x: Tensor, w: Tensor, b: Tensor | None, *, stride: tuple, padding: tuple, dilation: tuple) -> Tensor:
    """The op path's conv2d (what a graph-recording backward differentiates)."""
    from .functional.convolution import _conv2d_ops  # noqa: PLC0415

    return _conv2d_ops(x, w, b, stride, padding, dilation)


class _ConvCtx(FunctionCtx):
    def name(self) -> str:
        return "ConvolutionBackward0"


_ConvCtx.__name__ = _ConvCtx.__qualname__ = "ConvolutionBackward0"


def _forward_arrays(X: np.ndarray, W: np.ndarray, B: np.ndarray | None, stride: tuple, padding: tuple,
                    dilation: tuple) -> tuple | None:
    """(out (N, O, OH, OW), the batch-major columns or None, (OH, OW)), or None where the
    native im2col cannot run. padding is (top, bottom, left, right). The columns are None
    where the image-by-image kernel ran (gmnative.conv_kernels.conv2d_images: each image's
    columns made and multiplied in cache, never kept; the backward makes them again)."""
    n, _, h, wd = X.shape
    o, _, kh, kw = W.shape
    oh = (h + padding[0] + padding[1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + padding[2] + padding[3] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    native = _kernels()
    if oh <= 0 or ow <= 0 or native is None:
        return None
    out = native.conv2d_images(X, W, B, (oh, ow), stride, (padding[0], padding[2]), dilation)
    if out is not None:
        return out, None, (oh, ow)
    cols = native.im2col2d_batch_major(X, (kh, kw), (oh, ow), stride, (padding[0], padding[2]), dilation)
    if cols is None:
        return None
    out = None
    if B is None or B.flags.c_contiguous:  # the bias added to each image's product while in cache
        out = native.gemm_batched(W.reshape(o, -1), cols, bias=B)
    if out is None:
        out = _bmm(W.reshape(o, -1), cols)  # (N, O, OH * OW): PyTorch's layout
        if B is not None:
            out += B.reshape(o, 1)
    return out.reshape(n, o, oh, ow), cols, (oh, ow)


def _keep(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None, cols: np.ndarray | None, out_size: tuple, stride: tuple,
          padding: tuple, dilation: tuple) -> None:
    ctx.save_for_backward(x, w, b)
    ctx.cols = cols if w._requires_grad else None  # (only dW reads them; None: made again image by image)
    ctx.geometry = {"stride": stride, "padding": padding, "dilation": dilation}
    ctx.out_size = out_size


class Conv2dFunction(Function):
    """conv2d of (N, C, H, W) by (O, C, KH, KW) as one node named ConvolutionBackward0;
    `Conv2dFunction.apply(x, w, b, stride, padding, dilation)` with padding (top, bottom,
    left, right) where `eligible` holds (conv2d below builds the same node at less cost)."""

    _ctx_class = _ConvCtx

    @staticmethod
    def forward(ctx: Any, x: Tensor, w: Tensor, b: Tensor | None, stride: tuple, padding: tuple,
                dilation: tuple) -> Tensor:
        done = _forward_arrays(x._data, w._data, None if b is None else b._data, stride, padding, dilation)
        if done is None:
            raise RuntimeError("conv2d: the fused convolution needs eager's native kernels (check `eligible` first)")
        _keep(ctx, x, w, b, done[1], done[2], stride, padding, dilation)
        return Tensor._make(done[0])

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        extra = (None,) * (len(ctx.needs_input_grad) - 3)  # (apply's geometry arguments)
        if STATE.enabled:
            return _grads_by_recompute(ctx, functools.partial(_conv_ops, **ctx.geometry), (g,))[:3] + extra
        x, w, b = ctx.saved_tensors
        W = w._data
        n, o = g.shape[0], g.shape[1]
        G4 = np.ascontiguousarray(g._data)
        G = G4.reshape(n, o, -1)
        needs = ctx.needs_input_grad
        dx = dw = db = None
        geo = ctx.geometry
        cols = ctx.cols
        if cols is None and (needs[0] or needs[1]):  # the forward ran image by image: so does the backward
            pads = (geo["padding"][0], geo["padding"][2])
            native = _kernels()
            found = None if native is None else native.conv2d_images_backward(
                G4, x._data, W, geo["stride"], pads, geo["dilation"], bool(needs[0]), bool(needs[1]),
                b is not None and bool(needs[2]))
            if found is not None:
                return tuple(None if a is None else Tensor._make(a) for a in found) + extra
            if needs[1]:  # (the kernel cannot run now) the batch-major columns, made again
                cols = native.im2col2d_batch_major(x._data, tuple(W.shape[2:]), ctx.out_size, geo["stride"], pads,
                                                   geo["dilation"])
        if needs[0]:
            dcols = _bmm(W.reshape(o, -1).T, G)  # (N, K, L)
            size, kernel, c = tuple(x.shape[2:]), tuple(W.shape[2:]), x.shape[1]
            folded = _kernels().fold2d_batch_major(dcols, size, c, kernel, ctx.out_size, geo["stride"],
                                                  (geo["padding"][0], geo["padding"][2]), geo["dilation"])
            if folded is None:  # (the kernels' other unit failed to build) the op's own fold
                from gmops import conv as _conv  # noqa: PLC0415

                channel_major = dcols.reshape((n, c) + kernel + ctx.out_size).transpose(1, 2, 3, 0, 4, 5)
                folded = _conv._fold(np, channel_major, size, kernel, geo["stride"], geo["padding"], geo["dilation"])
            dx = Tensor._make(folded)
        if needs[1]:
            if 4 * cols.shape[1] >= cols.shape[2]:
                # many columns for few positions (a deep layer): cols[n] @ G[n]^T with G^T made
                # contiguous once runs at about twice BLAS's speed on the transposed operand
                # (a (32, 144, 196) layer: 0.8 against 1.35 ms); a first layer's few columns
                # over many positions keep G[n] @ cols[n]^T
                dw_t = _bmm(cols, np.ascontiguousarray(G.transpose(0, 2, 1)), sum_batch=True)
                dw = Tensor._make(np.ascontiguousarray(dw_t.T).reshape(W.shape))
            else:
                dw = Tensor._make(_bmm(G, cols.transpose(0, 2, 1), sum_batch=True).reshape(W.shape))
        if b is not None and needs[2]:
            db = Tensor._make(G.sum((0, 2)))
        return (dx, dw, db) + extra


def conv2d(x: Tensor, w: Tensor, b: Tensor | None, stride: tuple, padding: tuple, dilation: tuple) -> Tensor | None:
    """The fused conv2d (call only when `eligible`): padding is (top, bottom, left, right).
    None where the native im2col cannot run (the op path runs then).

    What Function.apply does, for this one case (as nn._fused_linear.linear): one output
    array, the inputs saved as they are, no no_grad block or output re-wrapping."""
    done = _forward_arrays(x._data, w._data, None if b is None else b._data, stride, padding, dilation)
    if done is None:
        return None
    t = Tensor._make(done[0])
    args = (x, w, b)
    if not STATE.enabled or not (x._requires_grad or w._requires_grad or (b is not None and b._requires_grad)):
        return t
    ctx = _ConvCtx(Conv2dFunction, args)
    _keep(ctx, x, w, b, done[1], done[2], stride, padding, dilation)
    return attach(t, ctx, args, done[0].shape)
