"""Native kernels for eager's 2-d convolutions, max-pooling and batch norm on NCHW images
(csrc/eager_conv.cpp): im2col into the unfold op's column layout, max_pool2d's forward and
backward straight on the image, and batch norm's training forward and gradients, one pass
per channel each (where the decomposition took three passes forward and five back); and the
select of a mask between a number and an array (relu's gradient after each of them).

Why: the NumPy path copies a 6-d strided view of the padded image (np.pad, then
ascontiguousarray over an inner dim of a dozen elements: 1.2 ms for the 900K columns of a
16-channel 14x14 batch of 32, where one threaded copy takes a tenth of it), and pools
through that window array: the windows copied, an argmax along a middle axis, a gather,
the result permuted to (N, C, ...) and copied, and for the gradient a one-hot mask, a
select and a col2im of the windows (about 3 ms of a small CNN's 20 ms step, PyTorch's
whole pooling taking 0.3). Here the pooling reads each window of the image once and its
gradient writes each gradient once.

The same rules as the NumPy code: im2col's result is the same copy, bit for bit; a pooling
window's maximum is the first largest in row-major window order with a NaN counting as the
largest (argmax's rule), and a window's gradient goes to that cell. Used only where the
kernels of gmnative.kernels can be (a compiler, float32/float64 C-contiguous NumPy arrays,
GRAPHMODE_EAGER_NATIVE not 0); None otherwise, and the op runs its NumPy code.
"""
from __future__ import annotations

import threading

import numpy as np

from . import kernels as _kernels
from ._sources import read_source

SOURCE = "eager_conv.cpp"

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_I64 = np.dtype(np.int64)
_lock = threading.Lock()
_state: dict = {}


def _address(name: str) -> tuple | None:
    """(the kernels, kernel `name`'s address), building the unit on first use; None where
    eager's native kernels cannot be used or the build failed."""
    k = _kernels.kernels()
    if k is None:
        return None
    found = _state.get(name)
    if found is None:
        with _lock:
            if "lib" not in _state:
                from . import build as native_build  # noqa: PLC0415

                try:
                    _state["lib"] = native_build.load_library(read_source(SOURCE), "gm_eager_conv")
                except (native_build.NativeCompileError, OSError):
                    _state["lib"] = None
            lib = _state["lib"]
        if lib is None:
            return None
        found = _state[name] = lib.address(name)
    return k, found


def reset() -> None:
    """Forget the loaded unit (tests that switch the kernels off and on)."""
    with _lock:
        _state.clear()


def _image(x) -> str | None:
    """The dtype suffix of a C-contiguous float32/float64 NumPy (N, C, H, W) array, else None."""
    if type(x) is not np.ndarray or x.ndim != 4 or not x.flags.c_contiguous or x.size == 0:
        return None
    return _SUFFIX.get(x.dtype)


def _geometry(x, kernel, out, stride, padding, dilation) -> np.ndarray:
    n, c, h, w = x.shape
    return np.array([n, c, h, w, kernel[0], kernel[1], out[0], out[1], stride[0], stride[1], padding[0], padding[1],
                     dilation[0], dilation[1]], _I64)


def im2col2d(x, kernel, out, stride, padding, dilation, pad_value: float) -> np.ndarray | None:
    """unfold's columns (C, KH, KW, N, OH, OW) of an (N, C, H, W) image whose top and left
    padding are padding[0] and padding[1] (cells past the image read pad_value), or None."""
    suffix = _image(x)
    found = _address(f"gm_eager_conv_im2col2d_{suffix}") if suffix is not None else None
    if found is None or found[1] is None:
        return None
    k, address = found
    n, c = x.shape[0], x.shape[1]
    cols = np.empty((c, kernel[0], kernel[1], n, out[0], out[1]), x.dtype)
    dims = _geometry(x, kernel, out, stride, padding, dilation)
    pad = np.array([pad_value], x.dtype)
    dt = x.dtype.name
    k.call(address, k.threads(), (x.nbytes, -cols.nbytes, dims.nbytes, pad.nbytes), k.formats((dt, dt, "int64", dt)),
           x, cols, dims, pad)
    return cols


def max_pool2d(x, kernel, out, stride, padding, dilation, indices: bool = False):
    """The window maxima (N, C, OH, OW) of an (N, C, H, W) image, with (when `indices`) the
    flat plane position of each as int64 (PyTorch's return_indices): an array, a pair, or
    None where the kernel cannot run."""
    suffix = _image(x)
    name = "max_pool2d" if indices else "max_pool2d_values"
    found = _address(f"gm_eager_conv_{name}_{suffix}") if suffix is not None else None
    if found is None or found[1] is None:
        return None
    k, address = found
    values = np.empty(x.shape[:2] + tuple(out), x.dtype)
    dims = _geometry(x, kernel, out, stride, padding, dilation)
    dt = x.dtype.name
    if indices:
        where = np.empty(values.shape, _I64)
        k.call(address, k.threads(), (x.nbytes, -values.nbytes, -where.nbytes, dims.nbytes),
               k.formats((dt, dt, "int64", "int64")), x, values, where, dims)
        return values, where
    k.call(address, k.threads(), (x.nbytes, -values.nbytes, dims.nbytes), k.formats((dt, dt, "int64")),
           x, values, dims)
    return values


def max_pool2d_backward(g, x, kernel, stride, padding, dilation) -> np.ndarray | None:
    """The gradient (N, C, H, W) of max_pool2d for an output gradient g (N, C, OH, OW): each
    window's gradient added at its maximum (found again in x); None where it cannot run."""
    suffix = _image(x)
    if suffix is None or _image(g) != suffix or g.shape[:2] != x.shape[:2]:
        return None
    found = _address(f"gm_eager_conv_max_pool2d_backward_{suffix}")
    if found is None or found[1] is None:
        return None
    k, address = found
    gx = np.empty(x.shape, x.dtype)
    dims = _geometry(x, kernel, g.shape[2:], stride, padding, dilation)
    dt = x.dtype.name
    k.call(address, k.threads(), (g.nbytes, x.nbytes, -gx.nbytes, dims.nbytes), k.formats((dt, dt, dt, "int64")),
           g, x, gx, dims)
    return gx


def _channels(x) -> tuple | None:
    """(suffix, dims [N, C, S]) of a C-contiguous float (N, C, ...) NumPy array, else None."""
    if type(x) is not np.ndarray or x.ndim < 2 or not x.flags.c_contiguous or x.size == 0:
        return None
    suffix = _SUFFIX.get(x.dtype)
    if suffix is None:
        return None
    n, c = x.shape[0], x.shape[1]
    return suffix, np.array([n, c, x.size // (n * c)], _I64)


def batch_norm(x, weight, bias, eps: float) -> np.ndarray | None:
    """Batch norm of an NCHW-contiguous (N, C, ...) array by its own statistics (biased
    variance), then * weight + bias per channel, one pass per channel; or None."""
    found = _channels(x)
    if found is None or any(type(t) is not np.ndarray or t.dtype != x.dtype or t.shape != (x.shape[1],)
                            or not t.flags.c_contiguous for t in (weight, bias)):
        return None
    suffix, dims = found
    kernel = _address(f"gm_eager_conv_batch_norm_{suffix}")
    if kernel is None or kernel[1] is None:
        return None
    k, address = kernel
    y = np.empty(x.shape, x.dtype)
    stats = np.empty(2 * x.shape[1], np.float64)
    e = np.array([eps], np.float64)
    dt = x.dtype.name
    k.call(address, k.threads(), (x.nbytes, weight.nbytes, bias.nbytes, -y.nbytes, -stats.nbytes, dims.nbytes, 8),
           k.formats((dt, dt, dt, dt, "float64", "int64", "float64")), x, weight, bias, y, stats, dims, e)
    return y


def batch_norm_backward(g, x, weight, eps: float) -> tuple | None:
    """(grad_input, grad_weight, grad_bias) of batch_norm for an output gradient g, or None."""
    found = _channels(x)
    if (found is None or type(g) is not np.ndarray or g.dtype != x.dtype or g.shape != x.shape
            or not g.flags.c_contiguous or type(weight) is not np.ndarray or weight.dtype != x.dtype
            or weight.shape != (x.shape[1],) or not weight.flags.c_contiguous):
        return None
    suffix, dims = found
    kernel = _address(f"gm_eager_conv_batch_norm_backward_{suffix}")
    if kernel is None or kernel[1] is None:
        return None
    k, address = kernel
    gx = np.empty(x.shape, x.dtype)
    gw = np.empty(weight.shape, x.dtype)
    gb = np.empty(weight.shape, x.dtype)
    e = np.array([eps], np.float64)
    dt = x.dtype.name
    k.call(address, k.threads(), (g.nbytes, x.nbytes, weight.nbytes, -gx.nbytes, -gw.nbytes, -gb.nbytes, dims.nbytes, 8),
           k.formats((dt, dt, dt, dt, dt, dt, "int64", "float64")), g, x, weight, gx, gw, gb, dims, e)
    return gx, gw, gb


def select_number(c, number: float, b, invert: bool = False) -> np.ndarray | None:
    """np.where(c, number, b) (`invert`: np.where(~c, number, b)) for a C-contiguous bool
    mask c and float array b of one shape, in one threaded pass; or None."""
    if (type(c) is not np.ndarray or type(b) is not np.ndarray or c.dtype != np.bool_ or c.shape != b.shape
            or not c.flags.c_contiguous or not b.flags.c_contiguous or b.dtype not in _SUFFIX):
        return None
    found = _address(f"gm_eager_conv_select_number_{_SUFFIX[b.dtype]}")
    if found is None or found[1] is None:
        return None
    k, address = found
    out = np.empty(b.shape, b.dtype)
    a = np.array([number], b.dtype)
    dims = np.array([b.size, int(invert)], _I64)
    dt = b.dtype.name
    k.call(address, k.threads(), (c.nbytes, a.nbytes, b.nbytes, -out.nbytes, dims.nbytes),
           k.formats(("bool", dt, dt, dt, "int64")), c, a, b, out, dims)
    return out
