"""Native kernels for eager's heaviest NumPy ops: layer_norm and its gradient, batch norm's
per-channel statistics, normalization and gradient, GELU (both forms) with the exact form's
derivative, tanh and exp of large arrays, argmax/argmin along a middle axis (max-pooling's
windows), the 2-d fold (col2im) of convolution and pooling gradients, and matmul's row
blocks (one BLAS call per thread, for eager and the generated code alike).

Why: NumPy runs one whole-array pass per ufunc on one thread, so an op whose formula has a
dozen steps (the row statistics, scaling and affine part of layer_norm; the erf polynomial
of exact GELU) costs a dozen passes. PyTorch's eager kernels do each in one threaded pass,
which left eager 3x behind on layer_norm and GELU at a fifth of a GPT training step. These
kernels are shape-generic C++ written once (one translation unit per dtype, compiled the
first time an op needs it and then loaded from the same disk cache as the native backend's
kernels; a failed build leaves that dtype to the NumPy code),
over the same helper layer as the compiled kernels (`c_helpers`: gm_gelu_none,
gm_gelu_grad and the vectorized math functions), so eager and the native backend compute
GELU with the same expression.

They are used only where they can be: NumPy arrays of float32 or float64, a C++ compiler
found (gmnative.build's probe), and GRAPHMODE_EAGER_NATIVE not set to 0. Otherwise the
ops' NumPy code runs, unchanged, and the test suite checks that the two agree. Statistics
and column sums accumulate in double per thread; per-thread partial sums are combined in
thread order, so a result depends on the thread count (GRAPHMODE_THREADS) only, never on
timing.
"""
from __future__ import annotations

import functools
import os
import threading

import numpy as np

from ._sources import read_source
from .c_helpers import PREAMBLE, host_prelude
from .gemm import blas_gemm, numpy_blas_gemm, product  # noqa: F401  (blas_gemm, numpy_blas_gemm: their names here for conv_kernels, stacked_gemm and callers of old)

# The kernels' C++ (csrc/): one translation unit per dtype (eager_kernels.cpp, instantiated
# by INSTANTIATE), matmul's row blocks (eager_gemm.cpp, a unit of its own, small enough to
# compile in a fraction of the kernels' time: the first large product of a process on a fresh
# machine waits for it), NumPy's PCG64 generator reproduced bit for bit (eager_random.cpp) and
# the threads' floating-point mode (eager_fpmode.cpp, set_flush_denormal).
# Read when first built; the text is the cache key's, so an edited file rebuilds.
SOURCES = {"kernels": "eager_kernels.cpp", "gemm": "eager_gemm.cpp", "random": "eager_random.cpp", "fpmode": "eager_fpmode.cpp"}
# the single-precision product (gmnative.gemm): its header, then the unit exporting it
SGEMM_SOURCES = ("gm_gemm.h", "gm_gemm.cpp")

_SOURCE_NAMES = {"KERNELS": "kernels", "GEMM": "gemm", "RANDOM": "random"}


def __getattr__(name: str) -> str:
    """KERNELS, GEMM, RANDOM: the text of the translation units, as these names held it when
    the C++ lived in Python strings (read from csrc/ on first use)."""
    if name in _SOURCE_NAMES:
        return read_source(SOURCES[_SOURCE_NAMES[name]])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# products (multiply-adds) from which matmul's rows are split across the threads (the same
# gate as gmops.linalg's, which imports it from here)
GEMM_SPLIT_MIN = 1 << 20


# matmul's row blocks: a translation unit of its own, small enough to compile in a fraction
# of the kernels' time (the first large product of a process on a fresh machine waits for it)

# NumPy's PCG64 generator, reproduced bit for bit, its outputs shared out among the threads.
# Generator.random(n, dtype=float32) costs NumPy about 4 ns a number (a call through a
# function pointer each); a dropout layer draws one per activation, 300 000 a step of the
# tiny GPT (W5): 1.2 ms. Here each thread jumps the LCG ahead to its first output (PCG's
# advance by squaring) and steps from there, so output j is the same number whichever thread
# computes it: the results and the generator's final state equal NumPy's exactly (checked
# against NumPy in tests/eager/test_uniform_draws.py).
#   state' = state * MULT + inc (128-bit); output = rotr64(hi ^ lo, state' >> 122)
#   float32: next_uint32 >> 8 times 2**-24, next_uint32 taking the low then the high half of
#            an output (the high half kept in the state as `uinteger` until used)
#   float64: output >> 11 times 2**-53 (no halves)
# p = [state hi, state lo, inc hi, inc lo, has_uint32, uinteger, n], updated in place.
# the standalone translation units, by the prefix of their kernels' names (the others are
# one library per dtype suffix)
_UNITS = {"gm_eager_gemm_": "gemm", "gm_eager_uniform_": "random", "gm_sgemm": "sgemm", "gm_eager_fpmode_": "fpmode"}

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_DT_NAME = {"f32": "float32", "f64": "float64"}
_I64, _F64 = np.dtype(np.int64), np.dtype(np.float64)


# one library per dtype, each built the first time an op needs it: most programs use float32
# only, and the two together took twice as long to compile (about 1 s) as one
INSTANTIATE = {"f32": "GM_EAGER_CHANNELS(float, f32)\nGM_EAGER_ALL(float, f32)\n",
               "f64": "GM_EAGER_CHANNELS(double, f64)\nGM_EAGER_ALL(double, f64)\n"}


class _Kernels:
    """The loaded libraries (by dtype suffix) and a caller."""

    def __init__(self) -> None:
        from . import build as native_build  # noqa: PLC0415  (imports NumPy-side machinery only when used)

        self._build = native_build
        self._prelude = (host_prelude(native_build.toolchain().vector_math) + "\n" + PREAMBLE + "\n"
                         + read_source(SOURCES["kernels"]))
        self.call = native_build.caller()
        self.threads = native_build.threads
        self._formats = functools.lru_cache(maxsize=256)(native_build.formats)
        self._addresses: dict = {}
        self._libraries: dict = {}
        self._lock = threading.Lock()

    def formats(self, dtype_names: tuple) -> bytes:
        """The call path's type codes of the buffers (cached: the same few tuples recur)."""
        return self._formats(dtype_names)

    def source(self, suffix: str) -> str:
        """The translation unit of one dtype's kernels, of matmul's row blocks ("gemm") or of
        the random draws ("random")."""
        if suffix in ("gemm", "random", "fpmode"):
            return read_source(SOURCES[suffix])
        if suffix == "sgemm":  # the single-precision product (gmnative.gemm): its header, then the exports
            return "\n".join(read_source(name) for name in SGEMM_SOURCES)
        return self._prelude + INSTANTIATE[suffix]

    def address(self, name: str) -> int | None:
        """The kernel's address (its name ends in the dtype suffix), building that dtype's
        library first if this is its first use; None when that build failed."""
        found = self._addresses.get(name)
        if found is None:
            unit = next((u for prefix, u in _UNITS.items() if name.startswith(prefix)), None)
            suffix = unit or name.rsplit("_", 1)[1]
            with self._lock:
                if suffix not in self._libraries:
                    try:
                        self._libraries[suffix] = self._build.load_library(
                            self.source(suffix), f"gm_eager_{unit}" if unit else f"gm_eager_kernels_{suffix}")
                    except (self._build.NativeCompileError, OSError):
                        self._libraries[suffix] = None  # NumPy code from now on, for this dtype
                library = self._libraries[suffix]
            if library is None:
                return None
            found = self._addresses[name] = library.address(name)
        return found

    def run(self, name: str, threads: int, sizes: tuple, formats: bytes, *buffers) -> bool:
        """Call kernel `name` on the buffers; False (nothing run) when its library could not
        be built."""
        address = self.address(name)
        if address is None:
            return False
        self.call(address, threads, sizes, formats, *buffers)
        return True


_state: dict = {}
_lock = threading.Lock()


def kernels() -> _Kernels | None:
    """The native kernels, or None where they cannot be used (no compiler, switched off with
    GRAPHMODE_EAGER_NATIVE=0, or the build failed: NumPy code runs then)."""
    if "k" in _state:
        return _state["k"]
    with _lock:
        if "k" not in _state:
            _state["k"] = _load()
    return _state["k"]


def _load() -> _Kernels | None:
    if os.environ.get("GRAPHMODE_EAGER_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    from . import build as native_build  # noqa: PLC0415

    if not native_build.availability()[0]:
        return None
    try:
        return _Kernels()
    except (native_build.NoCompiler, native_build.NativeCompileError, OSError):
        return None


# numbers from which a draw runs here: below, the state's round trip through Python (about
# 10 us) costs more than NumPy's own loop
UNIFORM_MIN = 1 << 13
_MASK64 = (1 << 64) - 1


def uniform(g, shape: tuple, dtype) -> np.ndarray | None:
    """g.random(shape, dtype) for a NumPy Generator on PCG64, float32 or float64: the same
    numbers and the same final state as NumPy's, drawn by the threads (csrc/eager_random.cpp); None
    where it does not apply (another bit generator, a small draw, no compiler)."""
    dt = np.dtype(dtype)
    suffix = _SUFFIX.get(dt)
    bits = getattr(g, "bit_generator", None)
    if suffix is None or type(g) is not np.random.Generator or type(bits) is not np.random.PCG64:
        return None
    n = 1
    for d in shape:
        n *= int(d)
    if n < UNIFORM_MIN:
        return None
    k = kernels()
    if k is None or k.address(f"gm_eager_uniform_{suffix}") is None:
        return None
    out = np.empty(shape, dt)
    with bits.lock:  # as NumPy's own draws hold it
        state = bits.state
        s, inc = state["state"]["state"], state["state"]["inc"]
        p = np.array([s >> 64, s & _MASK64, inc >> 64, inc & _MASK64, state["has_uint32"], state["uinteger"], n],
                     np.uint64)
        if not k.run(f"gm_eager_uniform_{suffix}", k.threads(), (-out.nbytes, -p.nbytes),
                     k.formats((dt.name, "uint64")), out, p):
            return None
        state["state"]["state"] = (int(p[0]) << 64) | int(p[1])
        state["has_uint32"], state["uinteger"] = int(p[4]), int(p[5])
        bits.state = state
    return out


def address(name: str) -> int | None:
    """Kernel `name`'s address, for generated code that calls eager's kernels straight
    (codegen.native_gen.EAGER_KERNEL_OPS); None where eager's kernels cannot be used."""
    k = kernels()
    return None if k is None else k.address(name)


def reset() -> None:
    """Forget the loaded kernels (the next use looks at GRAPHMODE_EAGER_NATIVE again)."""
    with _lock:
        _state.clear()


def _usable(*arrays) -> str | None:
    """The kernel suffix when every array is a C-contiguous NumPy array of one float dtype."""
    first = arrays[0]
    suffix = _SUFFIX.get(first.dtype) if type(first) is np.ndarray else None
    if suffix is None:
        return None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != first.dtype or not a.flags.c_contiguous:
            return None
    return suffix


def _unary(name: str, x) -> np.ndarray | None:
    suffix = _usable(x)
    k = kernels() if suffix is not None and x.size else None
    if k is None:
        return None
    out = np.empty(x.shape, x.dtype)
    nbytes = x.nbytes
    if not k.run(f"gm_eager_{name}_{suffix}", k.threads(), (nbytes, -nbytes, 8),
                 k.formats((x.dtype.name, x.dtype.name, "int64")), x, out, np.array([x.size], _I64)):
        return None
    return out


# Elements from which eager's tanh and exp run natively: below, NumPy's own SIMD loops cost
# about as much as the call (and the op's result then does not depend on the build).
LARGE = 1 << 14
# (op, dtype) pairs whose C function is vectorized and within NumPy's own error (c_helpers.MATH:
# float64 exp is a scalar libm call there, no faster than NumPy's)
_MATH_KERNELS = {("tanh", "f32"), ("tanh", "f64"), ("exp", "f32")}


def math(name: str, x) -> np.ndarray | None:
    """tanh or exp of a large float NumPy array in one threaded vector pass, or None."""
    suffix = _usable(x) if type(x) is np.ndarray and x.size >= LARGE else None
    if (name, suffix) not in _MATH_KERNELS:
        return None
    return _unary(f"{name}_map", x)


def gelu(x, approximate: str) -> np.ndarray | None:
    """GELU of a float32/float64 NumPy array in one threaded pass, or None (use NumPy)."""
    return _unary("gelu_tanh" if approximate == "tanh" else "gelu_none", x)


def gelu_grad(x) -> np.ndarray | None:
    """Phi(x) + x phi(x) (exact GELU's derivative) in one pass, or None (use NumPy)."""
    return _unary("gelu_grad", x)


def layer_norm(rows, w, b, eps: float, stats: np.ndarray | None = None) -> np.ndarray | None:
    """Layer norm of (groups, n) rows with weight and bias of n elements, or None. With `stats`
    ((groups, 2) float64, layer_norm_kernels.layer_norm_stats) each row's mean and rstd are
    written there too, for the backward."""
    suffix = _usable(rows, w, b)
    k = kernels() if suffix is not None and rows.size else None
    if k is None or suffix is None:
        return None
    groups, n = rows.shape
    out = np.empty_like(rows)
    dt = _DT_NAME[suffix]  # (dtype.name is a Python property: 2-5 us a call)
    dims, e = np.array([groups, n], _I64), np.array([eps], _F64)
    if stats is None:
        ok = k.run(f"gm_eager_layer_norm_{suffix}", k.threads(), (rows.nbytes, w.nbytes, b.nbytes, -out.nbytes, 16, 8),
                   k.formats((dt, dt, dt, dt, "int64", "float64")), rows, w, b, out, dims, e)
    else:
        ok = k.run(f"gm_eager_layer_norm_stats_{suffix}", k.threads(),
                   (rows.nbytes, w.nbytes, b.nbytes, -out.nbytes, 16, 8, -stats.nbytes),
                   k.formats((dt, dt, dt, dt, "int64", "float64", "float64")), rows, w, b, out, dims, e, stats)
    return out if ok else None


def layer_norm_backward(g, rows, w, eps: float, stats: np.ndarray | None = None) -> tuple | None:
    """(grad_input, grad_weight, grad_bias) of layer norm over (groups, n) rows, or None. With
    the forward's `stats` (layer_norm's) the kernel reads each row's mean and rstd there
    instead of computing them again (two of its four passes)."""
    suffix = _usable(g, rows, w)
    k = kernels() if suffix is not None and rows.size else None
    if k is None or suffix is None:
        return None
    groups, n = rows.shape
    nt = k.threads()
    gx = np.empty_like(rows)
    gw = np.empty(n, rows.dtype)
    gb = np.empty(n, rows.dtype)
    part = np.empty((nt, 2, n), _F64)
    dt = _DT_NAME[suffix]  # (dtype.name is a Python property: 2-5 us a call)
    dims, e = np.array([groups, n], _I64), np.array([eps], _F64)
    if stats is None:
        ok = k.run(f"gm_eager_layer_norm_backward_{suffix}", nt,
                   (g.nbytes, rows.nbytes, w.nbytes, -gx.nbytes, -gw.nbytes, -gb.nbytes, -part.nbytes, 16, 8),
                   k.formats((dt, dt, dt, dt, dt, dt, "float64", "int64", "float64")),
                   g, rows, w, gx, gw, gb, part, dims, e)
    else:
        ok = k.run(f"gm_eager_layer_norm_backward_stats_{suffix}", nt,
                   (g.nbytes, rows.nbytes, w.nbytes, -gx.nbytes, -gw.nbytes, -gb.nbytes, -part.nbytes, 16, 8,
                    stats.nbytes),
                   k.formats((dt, dt, dt, dt, dt, dt, "float64", "int64", "float64", "float64")),
                   g, rows, w, gx, gw, gb, part, dims, e, stats)
    return (gx, gw, gb) if ok else None


def channel_dims(ndim: int, dims) -> bool:
    """Whether `dims` are batch norm's: every dim but the channels (dim 1) of a 3-d or larger
    input (the layout the channel kernels take as (N, C, S))."""
    return ndim >= 3 and tuple(dims) == (0,) + tuple(range(2, ndim))


def _nc_view(a) -> tuple | None:
    """(a C-contiguous view of a's memory, its N stride, its C stride, whether channel-major)
    for an (N, C, ...) float array stored batch-major (NCHW) or channel-major (CNHW: how a
    convolution's output comes out of its matmul), else None."""
    if type(a) is not np.ndarray or a.dtype not in _SUFFIX or a.ndim < 3 or a.size == 0:
        return None
    n, c = a.shape[0], a.shape[1]
    spatial = a.size // (n * c)
    if a.flags.c_contiguous:
        return a, c * spatial, spatial, False
    t = a.swapaxes(0, 1)
    if t.flags.c_contiguous:
        return t, spatial, n * spatial, True
    return None


def _channel_dims(x, xv: tuple, gv: tuple | None = None) -> np.ndarray:
    """The kernels' dims; results are C-contiguous (N, C, ...) whatever x's layout: the
    compiled kernels and most NumPy calls after a batch norm want that layout, and a
    channel-major result cost each of them a copy."""
    n, c = x.shape[0], x.shape[1]
    g = gv if gv is not None else (None, 0, 0)
    spatial = x.size // (n * c)
    return np.array([n, c, spatial, xv[1], xv[2], g[1], g[2], c * spatial, spatial], _I64)


def channel_moments(x) -> tuple | None:
    """(mean, sum of squared deviations) per channel of an (N, C, ...) float array, as float64
    vectors of C; or None (use NumPy)."""
    xv = _nc_view(x)
    k = kernels() if xv is not None else None
    if xv is None or k is None:
        return None
    c = x.shape[1]
    mean, m2 = np.empty(c, _F64), np.empty(c, _F64)
    if not k.run(f"gm_eager_channel_moments_{_SUFFIX[x.dtype]}", k.threads(), (x.nbytes, -8 * c, -8 * c, 72),
                 k.formats((x.dtype.name, "float64", "float64", "int64")), xv[0], mean, m2, _channel_dims(x, xv)):
        return None
    return mean, m2


def channel_normalize(x, eps: float) -> np.ndarray | None:
    """Batch norm without its affine part: (x - mean) / sqrt(biased var + eps) per channel,
    C-contiguous; or None."""
    xv = _nc_view(x)
    k = kernels() if xv is not None else None
    if xv is None or k is None:
        return None
    out = np.empty(x.shape, x.dtype)
    dt = x.dtype.name
    if not k.run(f"gm_eager_channel_normalize_{_SUFFIX[x.dtype]}", k.threads(), (x.nbytes, -x.nbytes, 72, 8),
                 k.formats((dt, dt, "int64", "float64")), xv[0], out, _channel_dims(x, xv), np.array([eps], _F64)):
        return None
    return out


def channel_normalize_backward(g, x, eps: float) -> np.ndarray | None:
    """The gradient of channel_normalize for an output gradient g, C-contiguous; or None."""
    xv, gv = _nc_view(x), _nc_view(g)
    if xv is None or gv is None or g.dtype != x.dtype or g.shape != x.shape:
        return None
    k = kernels()
    if k is None:
        return None
    out = np.empty(x.shape, x.dtype)
    dt = x.dtype.name
    if not k.run(f"gm_eager_channel_normalize_backward_{_SUFFIX[x.dtype]}", k.threads(),
                 (g.nbytes, x.nbytes, -x.nbytes, 72, 8), k.formats((dt, dt, dt, "int64", "float64")),
                 gv[0], xv[0], out, _channel_dims(x, xv, gv), np.array([eps], _F64)):
        return None
    return out


def arg_extreme(name: str, x, dim: int, keepdim: bool) -> np.ndarray | None:
    """argmax or argmin of a C-contiguous float array along `dim` (int64, NumPy's shape and
    rule: the first extreme, NaN counting as one), in one threaded pass; or None."""
    suffix = _usable(x) if type(x) is np.ndarray and x.ndim and x.size else None
    k = kernels() if suffix is not None else None
    if k is None:
        return None
    shape = x.shape
    outer = int(np.prod(shape[:dim], dtype=np.int64))
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    out = np.empty(shape[:dim] + (1,) * keepdim + shape[dim + 1:], np.int64)
    if not k.run(f"gm_eager_{name}_{suffix}", k.threads(), (x.nbytes, -out.nbytes, 24),
                 k.formats((x.dtype.name, "int64", "int64")), x, out, np.array([outer, shape[dim], inner], _I64)):
        return None
    return out


def fold2d(cols, size, kernel, stride, padding, dilation) -> np.ndarray | None:
    """The fold (col2im) of a 2-d window array (C, KH, KW, N, OH, OW) into (N, C, H, W), one
    pass per (channel, sample) plane, the same additions in the same order as the NumPy code;
    or None."""
    suffix = _usable(cols) if type(cols) is np.ndarray and cols.ndim == 6 and cols.size else None
    k = kernels() if suffix is not None else None
    if k is None or len(padding) != 4:
        return None
    c, kh, kw, n, oh, ow = cols.shape
    h, w = size
    out = np.empty((n, c, h, w), cols.dtype)
    dims = np.array([c, kh, kw, n, oh, ow, h, w, stride[0], stride[1], padding[0], padding[2],
                     dilation[0], dilation[1]], _I64)
    if not k.run(f"gm_eager_fold2d_{suffix}", k.threads(), (cols.nbytes, -out.nbytes, dims.nbytes),
                 k.formats((cols.dtype.name, cols.dtype.name, "int64")), cols, out, dims):
        return None
    return out


def embedding_backward(g, indices, num_weights: int) -> np.ndarray | None:
    """The (num_weights, width) gradient of an embedding table from the rows of g (one per
    index, C-contiguous float32/float64) in one pass: each row added in order, from zero (the
    bits of NumPy's add.at; the op's NumPy code uses it for a few rows an index, reduceat's
    sums of sorted runs, equal to rounding, for many);
    None where it does not apply (an index out of range is left to the NumPy code, which
    raises)."""
    suffix = _usable(g) if type(g) is np.ndarray and g.ndim == 2 and g.size else None
    if suffix is None or type(indices) is not np.ndarray or indices.ndim != 1 or len(indices) != g.shape[0]:
        return None
    idx = indices if indices.dtype == _I64 and indices.flags.c_contiguous else np.ascontiguousarray(indices, _I64)
    if int(idx.min()) < 0 or int(idx.max()) >= num_weights:
        return None
    k = kernels()
    if k is None:
        return None
    out = np.empty((num_weights, g.shape[1]), g.dtype)
    if not k.run(f"gm_eager_embedding_backward_{suffix}", k.threads(), (g.nbytes, idx.nbytes, -out.nbytes, 24),
                 k.formats((g.dtype.name, "int64", g.dtype.name, "int64")), g, idx, out,
                 np.array([g.shape[0], g.shape[1], num_weights], _I64)):
        return None
    return out


def take_middle(x, index, dim: int) -> np.ndarray | None:
    """x's values at `index` (int64, x's shape without `dim`) along `dim` of a C-contiguous
    float array, in one threaded pass; or None."""
    suffix = _usable(x) if type(x) is np.ndarray and x.ndim and x.size else None
    if (suffix is None or type(index) is not np.ndarray or index.dtype != _I64 or not index.flags.c_contiguous
            or index.shape != x.shape[:dim] + x.shape[dim + 1:]):
        return None
    k = kernels()
    if k is None:
        return None
    outer = int(np.prod(x.shape[:dim], dtype=np.int64))
    inner = int(np.prod(x.shape[dim + 1:], dtype=np.int64))
    out = np.empty(index.shape, x.dtype)
    if not k.run(f"gm_eager_take_middle_{suffix}", k.threads(), (x.nbytes, index.nbytes, -out.nbytes, 24),
                 k.formats((x.dtype.name, "int64", x.dtype.name, "int64")), x, index, out,
                 np.array([outer, x.shape[dim], inner], _I64)):
        return None
    return out


# -- matmul: BLAS one row block per thread ---------------------------------------------------------
# The BLAS table's gemm (gmnative.gemm.blas_gemm: NumPy's own cblas_?gemm, float32's entry the
# project's own sgemm), called per row block from the OpenMP threads (gemm_rows in csrc/eager_gemm.cpp);
# where none is found, matmul stays NumPy's.


def _gemm_operand(x) -> tuple | None:
    """(C-contiguous buffer, transposed) of a 2-d operand: x itself, or x.T when x is a
    transposed (Fortran-ordered) view such as a weight's swapaxes; None for other layouts."""
    if x.flags.c_contiguous:
        return x, 0
    if x.flags.f_contiguous:
        return x.T, 1
    return None


# multiply-adds from which a product is split where the workers sleep between kernels:
# waking one costs 50-200 us on a 2-core machine (below this, one BLAS call is cheaper)
GEMM_SPLIT_MIN_SLEEPING = 1 << 22


@functools.lru_cache(maxsize=1)
def split_min() -> int:
    """The smallest product (multiply-adds) split across the threads: GEMM_SPLIT_MIN (2**20)
    where the workers spin between kernels, GEMM_SPLIT_MIN_SLEEPING where they sleep. With
    spinning workers a 512x64 by 64x64 product took 32 us split against 52 us in one call,
    and W5's compiled step fell from 8.5 to 8.0 ms. Read once, as libgomp reads its wait
    policy once."""
    from . import build as native_build  # noqa: PLC0415

    return GEMM_SPLIT_MIN if native_build.workers_spin() else GEMM_SPLIT_MIN_SLEEPING


def gemm(a, b, threads: int) -> np.ndarray | None:
    """a @ b for float32/float64 NumPy arrays, b 2-d and a of 2 or more dims (its leading dims
    taken as rows), split by rows across `threads` OpenMP threads, each part one BLAS call;
    None where that cannot be done (other dtypes or layouts, too small a product to gain, no
    BLAS symbol or no compiler): NumPy's matmul then. BLAS must run one thread itself (the
    caller checks), or the parts would oversubscribe the cores."""
    if (threads < 2 or type(a) is not np.ndarray or type(b) is not np.ndarray or b.ndim != 2 or a.ndim < 2
            or a.dtype != b.dtype or a.dtype not in _SUFFIX or a.shape[-1] != b.shape[0]):
        return None
    m, (k_, n) = a.size // max(a.shape[-1], 1), b.shape
    if m < 2 or m * k_ * n < split_min():
        return None
    a2 = a if a.ndim == 2 else (a.reshape(m, k_) if a.flags.c_contiguous else None)
    a_op = None if a2 is None else _gemm_operand(a2)
    b_op = _gemm_operand(b)
    found = blas_gemm()
    if found is not None and not found[1] and max(m, n, k_) >= 1 << 31:
        return None  # dimensions a 32-bit BLAS integer cannot hold
    k = kernels() if found is not None and a_op is not None and b_op is not None else None
    if k is None or found is None or a_op is None or b_op is None:
        return None
    (abuf, ta), (bbuf, tb) = a_op, b_op
    out = np.empty(a.shape[:-1] + (n,), a.dtype)
    plan_key = (m, n, k_, ta, tb, threads, a.dtype)
    plan = _GEMM_PLANS.get(plan_key)
    if plan is None:  # the call's constants, made once per shape (a step's 30 products: 0.15 ms a step)
        suffix = _SUFFIX[a.dtype]
        dt = "float32" if suffix == "f32" else "float64"
        dims = np.array([m, n, k_, ta, tb, min(threads, m), found[1]], _I64)
        itemsize = a.dtype.itemsize
        plan = _GEMM_PLANS[plan_key] = (
            f"gm_eager_gemm_{suffix}", (m * k_ * itemsize, k_ * n * itemsize, -m * n * itemsize, dims.nbytes, 8),
            k.formats((dt, dt, dt, "int64", "int64")), dims, np.array([found[0][a.dtype]], _I64))
    name, sizes, formats, dims, fn = plan
    if not k.run(name, threads, sizes, formats, abuf, bbuf, out, dims, fn):
        return None
    return out


# (rows, columns, depth, transposes, threads, dtype) -> the gemm call's name, byte sizes, type
# codes and constant arrays (read-only to the kernel, so shared by every call of that shape)
_GEMM_PLANS: dict = {}


def matmul(a, b) -> np.ndarray | None:
    """a @ b split by rows across the kernels' threads where that is worth it and safe
    (split_matmul); a float32 product of GEMM_SPLIT_MIN or more that is not split runs on the
    own sgemm on this thread (its bits do not depend on the split). None otherwise."""
    out = split_matmul(a, b)
    if out is None and type(b) is np.ndarray and type(a) is np.ndarray and b.ndim == 2 \
            and a.size * b.shape[1] >= GEMM_SPLIT_MIN:
        out = _own_product(a, b)
    return out


def split_matmul(a, b) -> np.ndarray | None:
    """a @ b split by rows across the kernels' threads (gemm) where that is worth it and safe:
    a large enough product, two threads or more, and BLAS running one thread of its own
    (where it runs several, splitting oversubscribes the cores: slower). None otherwise: a
    caller with another way to split (codegen.runtime's sleeping pool, for a team that shrank
    under contention) takes it."""
    if type(b) is not np.ndarray or b.ndim != 2 or type(a) is not np.ndarray or a.size * b.shape[1] < GEMM_SPLIT_MIN:
        return None
    from . import build as native_build  # noqa: PLC0415

    threads = native_build.threads()
    if threads < 2 or native_build.blas_threads() != 1:
        return None
    return gemm(a, b, threads)


def _own_product(a, b) -> np.ndarray | None:
    """a @ b on this thread with the project's own sgemm (gmnative.gemm.product: a float32
    product's bits, split or not), or None (NumPy's matmul)."""
    return product(a, b)
