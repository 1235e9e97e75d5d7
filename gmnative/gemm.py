"""The project's own single-precision matrix product (csrc/gm_gemm.h), under cblas_sgemm's
calling convention so that it stands in the tables of BLAS routines the native code calls
through: eager's row-split products (gmnative.kernels.blas_gemm, read by csrc/eager_gemm.cpp)
and the generated C loops' gm_blas table (codegen/native_gen/loop_library.py); `product` runs
it on the calling thread for the products eager and the generated code keep whole. A result
narrower than 10 or wider than 320 columns goes to NumPy's sgemm from inside the unit, but for
results up to 1024 wide, at least 64 deep, with A not transposed on AVX-512 (csrc/gm_gemm.cpp:
OpenBLAS measured faster in the others; width, depth and layout are never split, so a product
takes one road however its rows are split). Stacked
products (stacked_gemm: np.matmul's bits are their contract) keep NumPy's BLAS; a CNN's
per-image products (conv_kernels) run here where they are at least 64 deep (a stride-1
layer's forward as a product on the padded image's grid, gm_sgemm_grid in csrc/gm_gemm.cpp,
reading the image in place) and keep NumPy's BLAS where shallower (its small-matrix kernels
measured faster there).

Why: the project splits a product by rows across its own threads, one single-threaded BLAS
call a part, on small shapes (a GPT block's 512x64 by 64x256 and its gradients, a CNN's
per-image 32x144 by 144x196). NumPy's OpenBLAS reaches 95-128 GFLOP/s a core there
(it packs both operands for each call); this kernel packs only B, broadcasts A's elements
in place and keeps a 12 x 32 tile of C in AVX-512 registers (6 x 16 with AVX2 and FMA, a
plain C tile elsewhere): 135-165 GFLOP/s a core on the same shapes (benchmarks/gemm_bench.py).

Each element's sum over k runs in a fixed order (blocks of 128 in order, or one block for a
depth up to 160, an accumulator from
0 within a block, the block's sum added to C), whatever the element's position or the rows a
call is given, so a row-split product has the bits of one call and eager and the generated
code agree on every product routed here.

GRAPHMODE_NATIVE_GEMM=0 (gmbase.settings.native_gemm) gives those tables NumPy's OpenBLAS
sgemm again. float64 stays on BLAS.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

from gmbase import settings

# the unit's exported names, by BLAS integer width (64-bit: NumPy's scipy-openblas64)
SYMBOLS = {True: "gm_sgemm64", False: "gm_sgemm32"}
_F32 = np.dtype(np.float32)
_I64 = np.dtype(np.int64)

# the names NumPy's wheels export cblas_?gemm under (scipy-openblas, 64-bit integers first), and
# the 32-bit forms of other OpenBLAS builds
_GEMM_SYMBOLS = (("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 1), ("cblas_sgemm64_", "cblas_dgemm64_", 1),
                 ("scipy_cblas_sgemm", "scipy_cblas_dgemm", 0), ("cblas_sgemm", "cblas_dgemm", 0))


def _kernels():
    from . import kernels  # noqa: PLC0415  (kernels imports this module: its table is here)

    return kernels


def enabled() -> bool:
    """Whether float32 products routed through the BLAS tables use this kernel (the setting,
    and a compiler to build it with)."""
    return sgemm_address(True) is not None


def sgemm_address(ilp64: bool) -> int | None:
    """The address of the kernel under cblas_sgemm's signature with 64-bit (ilp64) or 32-bit
    integers, building its unit on first use; None where it cannot be built, is switched off
    (GRAPHMODE_NATIVE_GEMM=0, GRAPHMODE_EAGER_NATIVE=0, no compiler) or is not faster here.

    Not faster: a build without AVX-512, unless GRAPHMODE_NATIVE_GEMM=1 asks for it. The kernel
    was tuned on AVX-512 (12 x 32 tiles in 32 registers). Built for AVX2 (6 x 16 tiles in 16)
    and timed against OpenBLAS's Haswell kernel on the same host (GRAPHMODE_NATIVE_ARCH=haswell,
    OPENBLAS_CORETYPE=Haswell, one thread), it took 0.95-1.16x OpenBLAS's time on W5's and
    W3's products (1.2-1.9x before its tile loops were unrolled early, GM_GEMM_UNROLL), and W5's
    compiled step 8.7 against 7.8 ms (W6's 3.14 against 3.26). OpenBLAS then takes every
    float32 product, as under GRAPHMODE_NATIVE_GEMM=0."""
    if not settings.native_gemm():
        return None
    k = _kernels().kernels()
    address = None if k is None else k.address(SYMBOLS[bool(ilp64)])
    if address is not None and not settings.native_gemm_forced() and vector_floats() < 16:
        return None
    if address is not None and not _ROUTED:
        _route(k)
    return address


def vector_floats() -> int:
    """The floats a vector of the kernel's build holds (16 with AVX-512, 8 with AVX2 and FMA,
    1 in plain C); 0 where the unit cannot be built."""
    if not _VECTOR:
        k = _kernels().kernels()
        address = None if k is None else k.address("gm_sgemm_vector_floats")
        if address is None:
            return 0
        _VECTOR.append(int(ctypes.CFUNCTYPE(ctypes.c_int)(address)()))
    return _VECTOR[0]


_VECTOR: list = []  # vector_floats' answer, kept once the unit is built (it is built once a process)


_ROUTED: list = []


def _route(k) -> None:
    """Give the unit NumPy's sgemm for the products it routes there (csrc/gm_gemm.cpp: a result
    narrower than 10 or wider than 320 columns, where OpenBLAS measured faster); without it the
    unit computes every product itself."""
    found = numpy_blas_gemm()
    setter = k.address("gm_sgemm_use_blas")
    if found is not None and setter is not None:
        ctypes.CFUNCTYPE(None, ctypes.c_longlong, ctypes.c_int)(setter)(found[0][_F32], int(found[1]))
    _ROUTED.append(True)


@functools.lru_cache(maxsize=1)
def numpy_blas_gemm() -> tuple | None:
    """({dtype: address of cblas_?gemm}, 64-bit integers) of the BLAS that NumPy loaded itself,
    or None: for the products whose contract is np.matmul's bits (gmnative.stacked_gemm)."""
    from gmbase.threads import numpy_openblas  # noqa: PLC0415

    for lib in numpy_openblas():
        for single, double, ilp64 in _GEMM_SYMBOLS:
            fs, fd = getattr(lib, single, None), getattr(lib, double, None)
            if fs is not None and fd is not None:
                return ({_F32: ctypes.cast(fs, ctypes.c_void_p).value,
                         np.dtype(np.float64): ctypes.cast(fd, ctypes.c_void_p).value}, ilp64)
    return None


@functools.lru_cache(maxsize=1)
def blas_gemm() -> tuple | None:
    """({dtype: address of cblas_?gemm}, 64-bit integers): the table eager's row-split products
    call (csrc/eager_gemm.cpp), NumPy's own BLAS routines but for float32's entry, this kernel
    under the same signature and integer width, unless GRAPHMODE_NATIVE_GEMM=0 or it cannot
    be built; None where NumPy's BLAS exports no cblas gemm. Cached: blas_gemm.cache_clear()
    after changing the setting."""
    _PLANS.clear()  # (product's and the row split's plans hold the table they were made under)
    _kernels()._GEMM_PLANS.clear()
    found = numpy_blas_gemm()
    if found is None:
        return None
    own = sgemm_address(bool(found[1]))
    return found if own is None else ({**found[0], _F32: own}, found[1])


def own_sgemm() -> bool:
    """Whether blas_gemm's float32 entry is this kernel."""
    found, native = blas_gemm(), numpy_blas_gemm()
    return found is not None and native is not None and found[0][_F32] != native[0][_F32]


def _operand(x: np.ndarray) -> tuple[np.ndarray, int] | None:
    """(C-contiguous buffer, transposed) of a 2-d operand: x, or x.T for a Fortran-ordered x."""
    if x.flags.c_contiguous:
        return x, 0
    if x.flags.f_contiguous:
        return x.T, 1
    return None


def product(a, b, out: np.ndarray | None = None) -> np.ndarray | None:
    """a @ b with this kernel on the calling thread, for float32 NumPy arrays: b 2-d, a 2-d
    (C- or Fortran-ordered) or a C-contiguous stack (its leading dims taken as rows), each
    dimension 2 or more (NumPy's matmul calls gemv, dot or a loop of its own otherwise, and so
    does the generated code); `out` (optional) a C-contiguous array of the result's shape to
    write. None where it does not apply (other dtypes or layouts, the kernel switched off or
    not built): NumPy's matmul then.

    Why: the callers that keep a product on one thread or split it themselves (eager's
    products where the kernels' team is one thread, the generated code's one-call products
    and its thread-pool parts) then give the bits of gmnative.kernels.gemm's split products:
    this kernel's bits do not depend on the rows a call is given."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.dtype != _F32 or b.dtype != _F32
            or b.ndim != 2 or a.ndim < 2 or a.shape[-1] != b.shape[0]):
        return None
    a2 = a if a.ndim == 2 else (a.reshape(-1, a.shape[-1]) if a.flags.c_contiguous else None)
    ao = None if a2 is None else _operand(a2)
    bo = _operand(b)
    if ao is None or bo is None:
        return None
    key = (a2.shape, b.shape, ao[1], bo[1])  # type: ignore[union-attr]
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(key)
        if plan is None:
            return None
    k, sizes, formats, dims = plan
    shape = a.shape[:-1] + (b.shape[1],)
    if out is None:
        out = np.empty(shape, _F32)
    elif type(out) is not np.ndarray or out.shape != shape or out.dtype != _F32 or not out.flags.c_contiguous:
        return None
    if not k.run("gm_sgemm_call", 1, sizes, formats, ao[0], bo[0], out, dims):
        return None
    return out


def _plan(key: tuple) -> tuple | None:
    """(kernels, byte sizes, type codes, dims) of product's call for one shape and layout, kept
    while the own sgemm is the table's (reset by blas_gemm.cache_clear through own_sgemm)."""
    (m, k_), (_, n), ta, tb = key
    if m < 2 or n < 2 or k_ < 2 or not own_sgemm():
        return None  # (NumPy's matmul calls gemv, dot or a loop of its own there: so does the generated code)
    k = _kernels().kernels()
    if k is None:
        return None
    plan = (k, (4 * m * k_, 4 * k_ * n, -4 * m * n, 40), k.formats(("float32", "float32", "float32", "int64")),
            np.array([m, n, k_, ta, tb], _I64))
    if len(_PLANS) > 4096:
        _PLANS.clear()
    _PLANS[key] = plan
    return plan


# (rows x depth, depth x columns, A transposed, B transposed) -> product's call constants
_PLANS: dict = {}


_CFUNC = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong,
                          ctypes.c_longlong, ctypes.c_float, ctypes.c_void_p, ctypes.c_longlong, ctypes.c_void_p,
                          ctypes.c_longlong, ctypes.c_float, ctypes.c_void_p, ctypes.c_longlong)


def sgemm_function():
    """The 64-bit-integer kernel itself (whatever the width, and whatever GRAPHMODE_NATIVE_GEMM
    routes) as a ctypes function of cblas_sgemm's arguments (order, transa, transb, M, N, K,
    alpha, A, lda, B, ldb, beta, C, ldc; pointers as integers), for tests and benchmarks; None
    where it cannot be built."""
    k = _kernels().kernels()
    address = None if k is None else k.address("gm_sgemm64_kernel")
    return None if address is None else _CFUNC(address)


__all__ = ["SYMBOLS", "blas_gemm", "enabled", "numpy_blas_gemm", "own_sgemm", "product", "sgemm_address",
           "sgemm_function"]
