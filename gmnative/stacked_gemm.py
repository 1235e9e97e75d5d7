"""A stack of matrix products (matmul of 3-d or 4-d operands: attention's q @ k^T and
att @ v, and their gradients) split across the kernels' threads, with NumPy's bits
(csrc/eager_gemm.cpp: gm_eager_gemm_stacked).

Why: np.matmul of a stack runs its matrices one after another on one thread, each a
single-threaded BLAS call (gmbase.threads pins NumPy's BLAS to one thread, the kernels own
the parallelism), so a small GPT's attention products used one core of two where PyTorch's
bmm uses both. Here the stack is split in consecutive runs of matrices across the OpenMP
team, and each matrix is the very BLAS call NumPy's matmul makes for it (the same cblas_?gemm,
transposes and leading dimensions, as numpy/_core/src/umath/matmul.c.src chooses them from
the strides), so the result equals np.matmul's bit for bit, whatever the thread count.

The operands may be views (a head split of a projection and its transposes): each is passed
as the C-contiguous array that owns its memory with the view's offset and strides, no copy.
`matmul(a, b)` returns None wherever it does not apply, and the caller runs np.matmul: other
dtypes, a product NumPy would not give to gemm (a dimension below 2, a layout BLAS cannot
read, A times its own transpose, which NumPy computes with syrk), fewer than two threads or
BLAS running threads of its own, a stack too small to gain (gmnative.kernels.split_min).
"""
from __future__ import annotations

import numpy as np

from . import kernels as _kernels

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_I64 = np.dtype(np.int64)
STACK_DIMS = 6  # GM_STACK_DIMS in csrc/eager_gemm.cpp
_INT_MAX = (1 << 31) - 1


def _owner(x: np.ndarray) -> tuple[np.ndarray, int] | None:
    """(the C-contiguous array of x's dtype that owns x's memory, x's offset in it in elements)."""
    root = x
    while type(root.base) is np.ndarray:
        root = root.base
    if root.dtype != x.dtype or not root.flags.c_contiguous:
        return None
    delta = x.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    size = x.itemsize
    if delta % size or delta < 0:
        return None
    return root, delta // size


def _blas_layout(row: int, col: int, rows: int, cols: int) -> tuple[int, int] | None:
    """(transposed, leading dimension) of a rows x cols matrix with element strides (row, col),
    as NumPy's matmul gives it to gemm (is_blasable2d: row-major first), or None."""
    if col == 1 and row >= cols:
        return 0, row
    if row == 1 and col >= rows:
        return 1, col
    return None


def _batch_strides(x: np.ndarray, shape: tuple) -> list[int] | None:
    """x's element strides over the broadcast batch `shape` (0 where x is broadcast)."""
    out = [0] * (len(shape) - (x.ndim - 2))
    size = x.itemsize
    for n, s in zip(x.shape[:-2], x.strides[:-2]):
        if n == 1:
            out.append(0)
        elif s % size or s < 0:
            return None
        else:
            out.append(s // size)
    return out


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """np.matmul(a, b) of two float32/float64 stacks (or a matrix and a stack) of one dtype,
    its matrices split across the kernels' threads, equal to np.matmul bit for bit; None where
    it does not apply (see the module docstring)."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim < 2 or b.ndim < 2
            or max(a.ndim, b.ndim) < 3 or a.dtype != b.dtype or a.dtype not in _SUFFIX):
        return None
    m, k_ = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k_ != k2 or m < 2 or n < 2 or k_ < 2 or max(m, n, k_) > _INT_MAX:
        return None
    from . import build as native_build  # noqa: PLC0415

    threads = native_build.threads()  # (first: on a loaded machine it is one, nothing to split)
    if threads < 2 or native_build.blas_threads() != 1:
        return None
    batch = a.shape[:-2]
    if batch != b.shape[:-2]:
        try:
            batch = np.broadcast_shapes(batch, b.shape[:-2])
        except ValueError:
            return None
    total = 1
    for d in batch:
        total *= d
    if total < 2 or len(batch) > STACK_DIMS or total * m * n * k_ < _kernels.split_min():
        return None
    size = a.itemsize
    (ar, ac), (br, bc) = a.strides[-2:], b.strides[-2:]
    if ar % size or ac % size or br % size or bc % size:
        return None
    la = _blas_layout(ar // size, ac // size, m, k_)
    lb = _blas_layout(br // size, bc // size, k_, n)
    sa, sb = _batch_strides(a, batch), _batch_strides(b, batch)
    oa, ob = _owner(a), _owner(b)
    if la is None or lb is None or sa is None or sb is None or oa is None or ob is None or max(la[1], lb[1]) > _INT_MAX:
        return None
    if oa[0] is ob[0] and m == n and ar == bc and ac == br and la[0] != lb[0] and (oa[1] == ob[1] or sa != sb):
        return None  # A times its own transpose (the same matrix): NumPy's matmul calls syrk there, not gemm
    k = _kernels.kernels()
    found = _kernels.numpy_blas_gemm() if k is not None else None  # (np.matmul's own sgemm: its bits)
    if k is None or found is None or (not found[1] and total * m * n > _INT_MAX):
        return None
    pad = STACK_DIMS - len(batch)
    dims = np.array([len(batch), m, n, k_, la[0], lb[0], la[1], lb[1], min(threads, total), found[1], total,
                     oa[1], ob[1], *batch, *([1] * pad), *sa, *([0] * pad), *sb, *([0] * pad)], _I64)
    out = np.empty(tuple(batch) + (m, n), a.dtype)
    dt = "float32" if _SUFFIX[a.dtype] == "f32" else "float64"  # (dtype.name: a slow property)
    if not k.run(f"gm_eager_gemm_stacked_{_SUFFIX[a.dtype]}", threads,
                 (oa[0].nbytes, ob[0].nbytes, -out.nbytes, dims.nbytes, 8),
                 k.formats((dt, dt, dt, "int64", "int64")), oa[0], ob[0], out, dims,
                 np.array([found[0][a.dtype]], _I64)):
        return None
    return out


__all__ = ["matmul"]
