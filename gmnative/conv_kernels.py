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

The convolution's products run here too, on the kernels' threads, one single-threaded call an
image (float32 products at least 64 deep on the project's own sgemm, others on NumPy's own
BLAS: _product): `gemm_batched` (a batch of products, a broadcast weight, an optional row
bias, or their sum over the batch: a weight gradient), and `conv2d_images` /
`conv2d_images_backward` (each image's columns made in a thread's own buffer and used there,
so a batch's columns are never written out; a stride-1 layer's own-sgemm products read the
zero-padded image in place instead, on its grid: csrc/eager_conv.cpp, gm_sgemm_grid). eager's
fused conv2d (eager/nn/_fused_conv.py) calls them, and compiled code may
(codegen.runtime.conv_images).
"""
from __future__ import annotations

import threading

import numpy as np

from . import kernels as _kernels
from ._sources import read_source

SOURCE = "eager_conv.cpp"
# the unit's text: the kernels, then the stride-1 layers' runs on the padded image's grid
SOURCES = (SOURCE, "eager_conv_grid.cpp")

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
                    _state["lib"] = native_build.load_library("\n".join(read_source(n) for n in SOURCES),
                                                               "gm_eager_conv")
                except (native_build.NativeCompileError, OSError):
                    _state["lib"] = None
            lib = _state["lib"]
        if lib is None:
            return None
        found = _state[name] = lib.address(name)
    return k, found


def _kernel(name: str, suffix: str | None) -> tuple | None:
    """(the kernels, gm_eager_conv_<name>_<suffix>'s address), or None where there is no
    suffix (an array the kernels do not take), no kernels or no such address."""
    found = _address(f"gm_eager_conv_{name}_{suffix}") if suffix is not None else None
    return None if found is None or found[1] is None else found


def _call(kernel: tuple, args: tuple, written: tuple) -> None:
    """Run a kernel from _kernel on the NumPy arrays args in its parameter order, those at the
    positions `written` being its outputs; each buffer's size and type code come from the
    array itself, so a call site names each array once."""
    k, address = kernel
    dtypes = tuple([a.dtype for a in args])
    formats = _FORMATS.get(dtypes)
    if formats is None:  # (dtype.name is a Python property of NumPy's: 7 us a call's names)
        formats = _FORMATS[dtypes] = k.formats(tuple(d.name for d in dtypes))
    k.call(address, k.threads(), tuple([-a.nbytes if i in written else a.nbytes for i, a in enumerate(args)]),
           formats, *args)


# (the buffers' dtypes) -> the call path's type codes
_FORMATS: dict = {}


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
    found = _kernel("im2col2d", suffix)
    if found is None:
        return None
    n, c = x.shape[0], x.shape[1]
    cols = np.empty((c, kernel[0], kernel[1], n, out[0], out[1]), x.dtype)
    dims = _geometry(x, kernel, out, stride, padding, dilation)
    pad = np.array([pad_value], x.dtype)
    _call(found, (x, cols, dims, pad), written=(1,))
    return cols


def im2col2d_batch_major(x, kernel, out, stride, padding, dilation) -> np.ndarray | None:
    """Each image's columns (N, C * KH * KW, OH * OW) of an (N, C, H, W) image padded with zeros
    (top and left padding[0], padding[1]): im2col2d's copy in batch-major order, or None."""
    suffix = _image(x)
    found = _kernel("im2col2d_batch_major", suffix)
    if found is None:
        return None
    n, c = x.shape[0], x.shape[1]
    cols = np.empty((n, c * kernel[0] * kernel[1], out[0] * out[1]), x.dtype)
    dims = _geometry(x, kernel, out, stride, padding, dilation)
    _call(found, (x, cols, dims, np.zeros(1, x.dtype)), written=(1,))
    return cols


def fold2d_batch_major(cols, size, channels: int, kernel, out, stride, padding, dilation) -> np.ndarray | None:
    """The fold (col2im) of batch-major columns (N, C * KH * KW, OH * OW) into (N, C, H, W): the
    windows' cells added into each plane in kernel-offset order (as gmnative.kernels.fold2d
    adds the op's channel-major columns); or None."""
    if type(cols) is not np.ndarray or cols.ndim != 3 or not cols.flags.c_contiguous or cols.size == 0:
        return None
    suffix = _SUFFIX.get(cols.dtype)
    k = _kernels.kernels() if suffix is not None else None
    if k is None:
        return None
    n = cols.shape[0]
    h, w = size
    result = np.empty((n, channels, h, w), cols.dtype)
    dims = np.array([channels, kernel[0], kernel[1], n, out[0], out[1], h, w, stride[0], stride[1], padding[0],
                     padding[1], dilation[0], dilation[1]], _I64)
    if not k.run(f"gm_eager_fold2d_batch_major_{suffix}", k.threads(), (cols.nbytes, -result.nbytes, dims.nbytes),
                 k.formats((cols.dtype.name, cols.dtype.name, "int64")), cols, result, dims):
        return None
    return result


def max_pool2d(x, kernel, out, stride, padding, dilation, indices: bool = False):
    """The window maxima (N, C, OH, OW) of an (N, C, H, W) image, with (when `indices`) the
    flat plane position of each as int64 (PyTorch's return_indices): an array, a pair, or
    None where the kernel cannot run."""
    suffix = _image(x)
    name = "max_pool2d" if indices else "max_pool2d_values"
    found = _kernel(name, suffix)
    if found is None:
        return None
    values = np.empty(x.shape[:2] + tuple(out), x.dtype)
    dims = _geometry(x, kernel, out, stride, padding, dilation)
    if indices:
        where = np.empty(values.shape, _I64)
        _call(found, (x, values, where, dims), written=(1, 2))
        return values, where
    _call(found, (x, values, dims), written=(1,))
    return values


def max_pool2d_backward(g, x, kernel, stride, padding, dilation) -> np.ndarray | None:
    """The gradient (N, C, H, W) of max_pool2d for an output gradient g (N, C, OH, OW): each
    window's gradient added at its maximum (found again in x); None where it cannot run."""
    suffix = _image(x)
    if suffix is None or _image(g) != suffix or g.shape[:2] != x.shape[:2]:
        return None
    found = _kernel("max_pool2d_backward", suffix)
    if found is None:
        return None
    gx = np.empty(x.shape, x.dtype)
    dims = _geometry(x, kernel, g.shape[2:], stride, padding, dilation)
    _call(found, (g, x, gx, dims), written=(2,))
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


def _batch_norm_kernel(name: str, x, like_x: tuple, per_channel: tuple) -> tuple | None:
    """(kernel `name` for x's dtype, dims [N, C, S]) where x is a C-contiguous float (N, C, ...)
    array and each of like_x one of x's dtype and shape, each of per_channel one of x's dtype
    and shape (C,), all C-contiguous NumPy arrays: the operands batch norm's kernels take;
    else None (the NumPy code runs)."""
    found = _channels(x)
    if found is None or any(type(t) is not np.ndarray or t.dtype != x.dtype or not t.flags.c_contiguous
                            or t.shape != shape for ts, shape in ((like_x, x.shape), (per_channel, (x.shape[1],)))
                            for t in ts):
        return None
    suffix, dims = found
    kernel = _kernel(name, suffix)
    return None if kernel is None else (kernel, dims)


def batch_norm(x, weight, bias, eps: float) -> np.ndarray | None:
    """Batch norm of an NCHW-contiguous (N, C, ...) array by its own statistics (biased
    variance), then * weight + bias per channel, one pass per channel; or None."""
    found = batch_norm_stats(x, weight, bias, eps)
    return None if found is None else found[0]


def batch_norm_stats(x, weight, bias, eps: float) -> tuple | None:
    """(y, stats) of batch_norm: stats a float64 array of the C channel means then the C sums
    of squared deviations from them (over N and the spatial dims), the statistics the kernel
    normalized by: the running statistics' update (unbiased variance m2 / (count - 1)) and
    batch_norm_backward's `saved`, with no second pass over x. None where it cannot run."""
    found = _batch_norm_kernel("batch_norm", x, (), (weight, bias))
    if found is None:
        return None
    kernel, dims = found
    y = np.empty(x.shape, x.dtype)
    stats = np.empty(2 * x.shape[1], np.float64)
    e = np.array([eps], np.float64)
    _call(kernel, (x, weight, bias, y, stats, dims, e), written=(3, 4))
    return y, stats


def batch_norm_backward(g, x, weight, eps: float, saved=None) -> tuple | None:
    """(grad_input, grad_weight, grad_bias) of batch_norm for an output gradient g, or None.
    `saved`: the forward's stats (batch_norm_stats) for x, so the kernel reads them instead of
    computing each channel's statistics again (the same values: the same arithmetic)."""
    if saved is not None and (type(saved) is not np.ndarray or saved.dtype != np.float64 or _channels(x) is None
                              or saved.shape != (2 * x.shape[1],) or not saved.flags.c_contiguous):
        saved = None
    name = "batch_norm_backward" if saved is None else "batch_norm_backward_saved"
    found = _batch_norm_kernel(name, x, (g,), (weight,))
    if found is None:
        return None
    kernel, dims = found
    gx = np.empty(x.shape, x.dtype)
    gw = np.empty(weight.shape, x.dtype)
    gb = np.empty(weight.shape, x.dtype)
    e = np.array([eps], np.float64)
    args = (g, x, weight, gx, gw, gb, dims, e) if saved is None else (g, x, weight, gx, gw, gb, dims, e, saved)
    _call(kernel, args, written=(3, 4, 5))
    return gx, gw, gb


def relu(x) -> np.ndarray | None:
    """relu of a C-contiguous float32/float64 NumPy array in one threaded pass (x where x is not
    below zero, else 0: NaN and -0.0 kept, as PyTorch's), or None."""
    if type(x) is not np.ndarray or not x.flags.c_contiguous or x.dtype not in _SUFFIX:
        return None
    found = _kernel("relu", _SUFFIX[x.dtype])
    if found is None:
        return None
    out = np.empty(x.shape, x.dtype)
    _call(found, (x, out, np.array([x.size], _I64)), written=(1,))
    return out


def select_number(c, number: float, b, invert: bool = False) -> np.ndarray | None:
    """np.where(c, number, b) (`invert`: np.where(~c, number, b)) for a C-contiguous bool
    mask c and float array b of one shape, or a mask of b's trailing shape (repeated over b's
    leading dims, read in place: no tiled copy), in one threaded pass; or None."""
    if (type(c) is not np.ndarray or type(b) is not np.ndarray or c.dtype != np.bool_
            or not c.flags.c_contiguous or not b.flags.c_contiguous or b.dtype not in _SUFFIX):
        return None
    if c.shape == b.shape:
        period = 0
    elif 0 < c.ndim < b.ndim and c.shape == b.shape[b.ndim - c.ndim:] and c.size:
        period = c.size
    else:
        return None
    found = _kernel("select_number", _SUFFIX[b.dtype])
    if found is None:
        return None
    out = np.empty(b.shape, b.dtype)
    a = np.array([number], b.dtype)
    dims = np.array([b.size, int(invert), period], _I64)
    _call(found, (c, a, b, out, dims), written=(3,))
    return out


def _batched_operand(x) -> tuple | None:
    """(C-contiguous buffer, transposed, batch stride in elements, rows, columns) of a batched
    product's operand: a 3-d array whose matrices are C-contiguous (or transposed views of
    C-contiguous ones, as x.transpose(0, 2, 1)), its matrices one after another; or a 2-d
    matrix (C- or Fortran-ordered) used for every image (stride 0); else None."""
    if type(x) is not np.ndarray or x.dtype not in _SUFFIX or x.size == 0:
        return None
    if x.ndim == 2:
        if x.flags.c_contiguous:
            return x, 0, 0, x.shape[0], x.shape[1]
        return (x.T, 1, 0, x.shape[0], x.shape[1]) if x.flags.f_contiguous else None
    if x.ndim != 3:
        return None
    if x.flags.c_contiguous:
        return x, 0, x.shape[1] * x.shape[2], x.shape[1], x.shape[2]
    t = x.transpose(0, 2, 1)
    return (t, 1, x.shape[1] * x.shape[2], x.shape[1], x.shape[2]) if t.flags.c_contiguous else None


# (batch, M, N, K, transposes, strides, parts, sum, dtype) -> the call's constants
_BATCHED_PLANS: dict = {}


def gemm_batched(a, b, *, sum_batch: bool = False, bias=None, threads: int | None = None) -> np.ndarray | None:
    """A batch of matrix products on the kernels' threads: a @ b for a (B, M, K) or (M, K) and
    b (B, K, N) or (K, N), at least one of them 3-d (a 2-d operand is used for every image, as
    a convolution's weight), float32/float64 of one dtype; each 3-d operand C-contiguous or a
    transpose of its last two axes of a C-contiguous array (cols.transpose(0, 2, 1)), each 2-d
    one C- or Fortran-ordered. Returns (B, M, N), or with `sum_batch` the sum over the batch
    (M, N) (a convolution's weight gradient, sum_n G[n] cols[n]^T, without the (B, M, N)
    intermediate). `bias` (not with sum_batch): a C-contiguous (M,) array of the dtype added
    to row i of each image's product right after it (a convolution's bias; the same float
    additions as `out += bias[:, None]` afterwards). None where it cannot run (other dtypes
    or layouts, no BLAS symbol, no compiler): use np.matmul then.

    Why: np.matmul of a batch loops over the images on one thread, each a BLAS call on BLAS's
    own pool, which gmbase.threads pins to one thread: a small CNN's conv products ran on one
    of two cores. Here the images are split across the OpenMP team in consecutive runs (one
    run a thread; `threads` defaults to the kernels' count, gmnative.build.threads(), which
    shrinks when other processes keep cores busy), each image one single-threaded BLAS call
    (NumPy's own cblas_?gemm). Each image's result is that BLAS call's, bit for bit whatever
    the thread count; a sum's partials (one a run, beta 1 across the run's images) are added
    in run order, so its bits depend on the thread count only, never on timing. Where BLAS
    runs several threads itself, the images run on the calling thread (no oversubscription)."""
    ao, bo = _batched_operand(a), _batched_operand(b)
    if ao is None or bo is None or a.dtype != b.dtype or (a.ndim == 2 and b.ndim == 2):
        return None
    (abuf, ta, sa, m, k_), (bbuf, tb, sb, k2, n) = ao, bo
    batch = a.shape[0] if a.ndim == 3 else b.shape[0]
    if k2 != k_ or (a.ndim == 3 and b.ndim == 3 and a.shape[0] != b.shape[0]):
        return None
    if bias is not None and (sum_batch or type(bias) is not np.ndarray or bias.dtype != a.dtype
                             or bias.shape != (m,) or not bias.flags.c_contiguous):
        return None
    k = _kernels.kernels()
    found = _product(a.dtype, k_) if k is not None else None
    if k is None or found is None or (not found[1] and max(m, n, k_) >= 1 << 31):
        return None
    if threads is None:
        from . import build as native_build  # noqa: PLC0415

        threads = native_build.threads() if native_build.blas_threads() == 1 else 1
    parts = max(1, min(threads, batch))
    dt = a.dtype
    out = np.empty((m, n) if sum_batch else (batch, m, n), dt)
    work = np.empty(((parts - 1) * m * n if sum_batch else 0) or 1, dt)
    has_bias = bias is not None
    key = (batch, m, n, k_, ta, tb, sa, sb, parts, sum_batch, has_bias, dt)
    plan = _BATCHED_PLANS.get(key)
    if plan is None:  # the call's constants, made once per shape
        dims = np.array([batch, m, n, k_, ta, tb, sa, sb, m * n, parts, int(sum_batch), found[1], int(has_bias)],
                        _I64)
        name = dt.name
        plan = _BATCHED_PLANS[key] = (f"gm_eager_gemm_batched_{_SUFFIX[dt]}",
                                      k.formats((name, name, name, name, "int64", "int64", name)), dims,
                                      np.array([found[0]], _I64))
    kname, formats, dims, fn = plan
    if bias is None:
        bias = work
    sizes = (abuf.nbytes, bbuf.nbytes, -out.nbytes, -work.nbytes, dims.nbytes, 8, bias.nbytes)
    if not k.run(kname, parts, sizes, formats, abuf, bbuf, out, work, dims, fn, bias):
        return None
    return out


def _conv_plan(name: str, x, w, out, stride, padding, dilation, flags: tuple) -> tuple | None:
    """(parts, the kernel (kernels, address), dims, BLAS pointer array, type codes) for the
    image-by-image conv kernel `name`, or None where it cannot run (layouts, dtypes, no BLAS
    symbol, no compiler). dims: the geometry, then [O, parts, *flags]. The thread policy is
    gemm_batched's; the constants are made once per geometry (a step's convolutions made
    four small arrays each a call)."""
    suffix = _image(x)
    if suffix is None or type(w) is not np.ndarray or w.dtype != x.dtype or w.ndim != 4 \
            or not w.flags.c_contiguous or w.shape[1] != x.shape[1]:
        return None
    from . import build as native_build  # noqa: PLC0415

    threads = native_build.threads() if native_build.blas_threads() == 1 else 1
    parts = max(1, min(threads, x.shape[0]))
    key = (name, x.shape, x.dtype, w.shape, tuple(out), tuple(stride), tuple(padding), tuple(dilation), parts, flags)
    plan = _CONV_PLANS.get(key)
    if plan is None:
        o, k_ = w.shape[0], w.shape[1] * w.shape[2] * w.shape[3]
        # (as gemm_batched: the forward's product W @ cols is k_ deep, the input gradient's W^T G[n] o deep)
        found = _product(x.dtype, o if name.endswith("backward") else k_) if _kernels.kernels() is not None else None
        if found is None or (not found[1] and max(o, k_, out[0] * out[1]) >= 1 << 31):
            return None
        kernel = _kernel(name, suffix)
        if kernel is None:
            return None
        geometry = _geometry(x, w.shape[2:], out, stride, padding, dilation)
        dims = np.concatenate([geometry, np.array((o, parts) + flags, _I64)])
        grid, grid_t = _grid_products(x.dtype)
        native = _kernels.numpy_blas_gemm()
        if native is None or found[0] == native[0][x.dtype]:
            grid = 0  # (the grid keeps the own sgemm's bits: not for a product on NumPy's BLAS)
        fn = np.array([found[0], found[1], _own_dw_gemm(x.dtype, name), grid, grid_t], _I64)
        dt = x.dtype.name
        # (forward: x, w, bias, out, dims, fn; backward: g, x, w, dx, dw, work, dims, fn, db)
        codes = (dt,) * 6 + ("int64", "int64", dt) if name.endswith("backward") else (dt,) * 4 + ("int64", "int64")
        plan = _CONV_PLANS[key] = (parts, kernel, dims, fn, kernel[0].formats(codes))
    return plan


# (kernel, shapes, dtype, geometry, parts, flags) -> the image-by-image conv call's constants
_CONV_PLANS: dict = {}


# the depth from which a float32 product here runs on the own sgemm (gmnative.gemm): deeper
# products (W6's second-layer forward W @ cols, 144 deep) run on the padded image's grid
# (gm_sgemm_grid, csrc/gm_gemm.cpp: no columns copied, whole vectors), which keeps the own
# sgemm's bits; shallower ones keep NumPy's OpenBLAS, whose small-matrix kernels ran W6's input
# gradient W^T G[n] (32 deep: a short accumulation a tile) at 137 GFLOP/s a core, the own
# sgemm's compact product at 104 and its grid product, with G[n] spread onto the grid, slower
# than OpenBLAS with the compact fold (19.8 against 18.1 us an image, one thread, AVX-512).
OWN_MIN_DEPTH = 64


def _product(dtype, depth: int) -> tuple | None:
    """(cblas_?gemm address, 64-bit integers) for a product `depth` deep, the one entry both
    gemm_batched and the image-by-image kernels call for that shape, so that the two paths give
    the same bits: for float32 at least OWN_MIN_DEPTH deep, gmnative.gemm.blas_gemm's (the
    project's own sgemm, routed by the result's width, unless GRAPHMODE_NATIVE_GEMM=0), else
    NumPy's own BLAS routine; None where NumPy's BLAS exports no cblas gemm."""
    found = _kernels.blas_gemm() if depth >= OWN_MIN_DEPTH else _kernels.numpy_blas_gemm()
    if found is None or dtype not in found[0]:
        return None
    return found[0][dtype], found[1]


def _grid_products(dtype) -> tuple[int, int]:
    """The addresses of gm_sgemm_grid and gm_sgemm_grid_t (csrc/gm_gemm.cpp) for float32 where the
    own sgemm is the table's (gmnative.gemm.own_sgemm), else (0, 0): the kernels then make each
    image's columns and call the table's product."""
    from . import gemm  # noqa: PLC0415

    if dtype != np.float32 or not gemm.own_sgemm():
        return 0, 0
    k = _kernels.kernels()
    if k is None:
        return 0, 0
    return int(k.address("gm_sgemm_grid") or 0), int(k.address("gm_sgemm_grid_t") or 0)


def _own_dw_gemm(dtype, name: str) -> int:
    """The address of the project's own sgemm (gmnative.gemm, the kernel alone) for the float32
    backward's transposed weight gradient (sum_n cols[n] G[n]^T with G[n] read transposed, no
    copy of it made), 0 elsewhere or where it is switched off (GRAPHMODE_NATIVE_GEMM=0) or
    cannot be built: there it beat NumPy's OpenBLAS plus the transposition of G[n] (W6's
    second layer: 12.2 against 15.4 us an image). dW's bits are then the own kernel's (the
    tests hold dW to a tolerance against the batch-major path, dx to its bits)."""
    if dtype != np.float32 or not name.endswith("backward"):
        return 0
    from . import gemm  # noqa: PLC0415

    k = _kernels.kernels() if gemm.enabled() else None
    address = None if k is None else k.address("gm_sgemm64_kernel")
    return int(address or 0)


def conv2d_images(x, w, bias, out, stride, padding, dilation) -> np.ndarray | None:
    """conv2d of an (N, C, H, W) image by an (O, C, KH, KW) weight (bias (O,) or None), zero
    padding padding[0] (top) and padding[1] (left), output size `out`, as (N, O, OH, OW):
    each image's columns made into a buffer of its thread's own and multiplied by the weight
    there (one single-threaded BLAS call an image, the images split across the kernels'
    threads), so the batch's columns are never written out. The values of
    im2col2d_batch_major + gemm_batched(w, cols, bias=bias). None where it cannot run."""
    if bias is not None and (type(bias) is not np.ndarray or type(x) is not np.ndarray or bias.dtype != x.dtype
                             or type(w) is not np.ndarray or bias.shape != (w.shape[0],)
                             or not bias.flags.c_contiguous):
        return None
    plan = _conv_plan("conv2d_images", x, w, out, stride, padding, dilation, (int(bias is not None),))
    if plan is None:
        return None
    parts, (k, address), dims, fn, formats = plan
    result = np.empty((x.shape[0], w.shape[0]) + tuple(out), x.dtype)
    b = bias if bias is not None else result
    k.call(address, parts, (x.nbytes, w.nbytes, b.nbytes, -result.nbytes, dims.nbytes, fn.nbytes), formats,
           x, w, b, result, dims, fn)
    return result


def conv2d_images_backward(g, x, w, stride, padding, dilation, want_dx: bool, want_dw: bool,
                           want_db: bool = False) -> tuple | None:
    """(dx (N, C, H, W) or None, dw (O, C, KH, KW) or None, db (O,) or None) of conv2d_images
    for an output gradient g (N, O, OH, OW), image by image: each image's columns made again
    in its thread's buffer (for dw = sum_n G[n] cols[n]^T, the runs' partials added in run
    order), W^T G[n] into a second buffer and folded into dx[n] there, and (want_db) G[n]'s
    rows summed in double while in cache. dx and dw are the values of the batch-major path
    (gemm_batched's products and sums, fold2d_batch_major's fold) with the same thread count;
    db is G summed over images and positions to rounding. None where it cannot run."""
    if type(g) is not np.ndarray or g.ndim != 4 or type(x) is not np.ndarray or type(w) is not np.ndarray \
            or g.dtype != x.dtype or not g.flags.c_contiguous or x.ndim != 4 or w.ndim != 4 \
            or g.shape[:2] != (x.shape[0], w.shape[0]):
        return None
    o, k_, l_ = w.shape[0], w.shape[1] * w.shape[2] * w.shape[3], g.shape[2] * g.shape[3]
    transposed = want_dw and 4 * k_ >= l_  # (see conv2d_images_backward in csrc/eager_conv.cpp)
    plan = _conv_plan("conv2d_images_backward", x, w, g.shape[2:], stride, padding, dilation,
                      (int(want_dx), int(want_dw), int(transposed), int(want_db)))
    if plan is None:
        return None
    parts, (k, address), dims, fn, formats = plan
    dx = np.empty(x.shape, x.dtype) if want_dx else np.empty(1, x.dtype)
    dw = np.empty((k_, o) if transposed else (o, k_), x.dtype) if want_dw else np.empty(1, x.dtype)
    work = np.empty(max((parts - 1) * o * k_, 1) if want_dw else 1, x.dtype)
    db = np.empty(o if want_db else 1, x.dtype)
    k.call(address, parts, (g.nbytes, x.nbytes, w.nbytes, -dx.nbytes, -dw.nbytes, -work.nbytes, dims.nbytes,
                            fn.nbytes, -db.nbytes), formats, g, x, w, dx, dw, work, dims, fn, db)
    if want_dw:
        dw = (np.ascontiguousarray(dw.T) if transposed else dw).reshape(w.shape)
    return (dx if want_dx else None), (dw if want_dw else None), (db if want_db else None)
