"""What generated NumPy modules call at run time: the block scheduler and its thread
pool, per-thread scratch buffers, and the few ops that are not one NumPy call.

Kept small and free of generation logic, so a generated module reads as straight-line
NumPy plus `_rt.run_blocks(...)` where a fused region is spread over the cores."""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from gmbase import dtypes as _dtypes
from gmbase import threads as _threads
from gmbase.fpstate import quiet_fp, restore_fp
from gmnative.gemm import product as own_product
from gmops import REGISTRY
from gmops.linalg import GEMM_SPLIT_MIN, fold_matmul


def _env_int(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, default)))
    except ValueError:
        return default


@dataclass
class Config:
    """Blocking and threading knobs, read at every call (tests force tiny blocks).

    block_elems: elements per block of a fused region (128Ki: big enough that the per-op
      Python overhead, ~1 us, stays small against the work, small enough that a block's few
      buffers stay in L2/L3; with compiled_bench's steady allocator, 128Ki-256Ki blocks ran
      W1/W2 at 1e6 elements 10-45% faster than 64Ki, and 512Ki no faster).
    threads: workers a region is spread over (NumPy releases the GIL in its loops) and the
      native kernels' OpenMP team: set_num_threads, else GRAPHMODE_THREADS, else
      OMP_NUM_THREADS, else the cores this process may run on. Not stored here: it reads and
      writes gmbase.threads' one count, which eager.set_num_threads and the native layer use.
    parallel_min_elems: below this many elements a region runs in the calling thread,
      where handing blocks to other threads would cost more than it saves (512Ki: on two
      cores W3's 256x512 and 784x512 regions ran 5% slower threaded, while W1/W2 at 1e6
      elements ran 1.3-1.6x faster)."""

    block_elems: int = _env_int("GRAPHMODE_BLOCK_ELEMS", 1 << 17)
    parallel_min_elems: int = _env_int("GRAPHMODE_PARALLEL_MIN_ELEMS", 1 << 19)

    @property
    def threads(self) -> int:
        return _threads.num_threads()

    @threads.setter
    def threads(self, n: int) -> None:
        _threads.set_num_threads(n)


CONFIG = Config()


# -- floating-point errors off for the length of a call ----------------------------------------
# What `with np.errstate(all="ignore")` does around a generated forward, at a fraction of its
# cost (it matters for 0-d graphs of a few dozen microseconds): eager's own switch.
ignore_fp_errors, restore_fp_errors = quiet_fp, restore_fp

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _get_pool(workers: int) -> ThreadPoolExecutor:
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="graphmode-block")
            _pool_size = workers
        return _pool


def _forget_pool_in_child() -> None:
    """A forked child (a DataLoader worker) has none of the parent's pool threads: a task
    submitted to the inherited pool would wait forever. The child makes its own."""
    global _pool, _pool_size, _pool_lock
    _pool, _pool_size, _pool_lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_in_child)


def _run_span(fn, spans, args) -> list:
    with np.errstate(all="ignore"):
        return [fn(lo, hi, *args) for lo, hi in spans]


def block_rows(nrows: int, row_elems: int) -> int:
    """Rows per block: CONFIG.block_elems elements, at least one row."""
    return max(1, min(nrows, CONFIG.block_elems // max(row_elems, 1)))


def run_blocks(fn, nrows: int, row_elems: int, args: tuple) -> list:
    """Call fn(lo, hi, *args) for consecutive row blocks [lo, hi) covering [0, nrows) and
    return the results in block order (so combining partials is deterministic). Blocks
    are dealt to CONFIG.threads workers in contiguous runs; the caller works on one."""
    if nrows * row_elems <= CONFIG.block_elems:
        return [fn(0, nrows, *args)]  # one block, in the caller (already under errstate)
    rows = block_rows(nrows, row_elems)
    spans = [(lo, min(lo + rows, nrows)) for lo in range(0, max(nrows, 1), rows)]
    if nrows * row_elems < CONFIG.parallel_min_elems:
        return [fn(lo, hi, *args) for lo, hi in spans]
    # the blocks are fixed by the shape, so fewer workers while other processes keep cores busy
    # (eager._threads.available) change no bits
    workers = min(_threads.available(CONFIG.threads), len(spans))
    if workers <= 1:
        return [fn(lo, hi, *args) for lo, hi in spans]
    per = -(-len(spans) // workers)
    runs = [spans[k:k + per] for k in range(0, len(spans), per)]
    pool = _get_pool(workers - 1)
    futures = [pool.submit(_run_span, fn, run, args) for run in runs[1:]]
    out = _run_span(fn, runs[0], args)
    for f in futures:
        out += f.result()
    return out


# -- matmul: one BLAS call per thread where BLAS itself runs one thread --------------------------
# With BLAS on one thread (OPENBLAS_NUM_THREADS=1, the setting that keeps it from fighting the
# native kernels' OpenMP threads), a large product left the other cores idle: split by rows
# across CONFIG.threads, each part one BLAS call on its own rows of the output, W3's
# 256x784x512 products ran 1.8x faster on two cores. Where BLAS runs several threads already,
# splitting only oversubscribes the cores (measured 1.1-1.4x slower), so it is not done.
MATMUL_SPLIT_MIN = 1 << 23  # multiply-adds below which one BLAS call is cheaper than the hand-off (~50 us)
# Rows of the left operand each part must get for a split to pay: every part packs the whole
# right operand again and waits for the other's core, so a product with few rows and a wide
# right operand (a convolution's (32, 144) @ (144, 6272)) took 1.7-2.1 ms of CPU time split
# in two against 0.9 ms in one call, and no less wall time (16 to 128 rows, shared 2-core
# AVX-512 host under load; at 128 rows, 64 a part, still 1.5x the CPU time).
MATMUL_SPLIT_MIN_ROWS = 64
# Depth above which the Python pool's split (kernels not built) is not made: a convolution's
# weight gradient (144, 6272) @ (6272, 32) split in two cost W6's compiled step 1.2 ms more CPU
# time than one call (8.5 against 9.8-10.4 ms, interleaved, load 5 on two cores) and no wall
# time, each part streaming the whole deep right operand.
MATMUL_POOL_MAX_DEPTH = 1024


_blas_threads: list = []  # a fixed answer for blas_threads (tests pin one here)


def blas_threads() -> int | None:
    """Threads of NumPy's BLAS as the kernels should assume them: decided once per process by
    eager._threads (one thread unless the user chose, with large products split among the
    kernels' threads instead); None when unknown."""
    if _blas_threads:
        return _blas_threads[0]
    return _threads.blas_threads()


# the bundled OpenBLAS libraries (eager_kernels looks its gemm up there) and what BLAS says
numpy_openblas = _threads.numpy_openblas
_query_blas_threads = _threads.query_blas_threads


def matmul(a, b):
    """np.matmul(a, b); a large product with a 2-d right operand runs as one BLAS call per
    thread on consecutive blocks of a's rows when BLAS runs one thread: from the OpenMP
    threads of eager's native kernels where they are built (eager_kernels.matmul, which
    eager's matmul calls too), else on blocks of a's leading axis from a Python thread pool;
    on the caller alone while other processes keep the cores busy (see below).
    The blocks are fixed by the shape and the team: the same inputs give the same bits on
    every call while the team stays (use_deterministic_algorithms pins it, see
    gmbase.threads.available).

    The small product is tested first and goes straight to NumPy: a generated module calls
    this for every matmul, and W3 small's five 32x64-sized products paid ~0.5 us each here
    (reading the thread count, fold_matmul's getattr tests) on top of NumPy's ~2.7 us."""
    if b.ndim != 2 or a.ndim < 2:
        return np.matmul(a, b)  # nothing to split or fold (fold_matmul folds a stack by a matrix only)
    if a.size * b.shape[1] < GEMM_SPLIT_MIN:
        return np.matmul(a, b) if a.ndim == 2 else fold_matmul(np, a, b)
    workers = _threads.num_threads()
    if workers < 2 or blas_threads() != 1 or a.size // a.shape[-1] < MATMUL_SPLIT_MIN_ROWS * workers:
        return _one_product(a, b)
    from gmnative import kernels as eager_kernels  # noqa: PLC0415  (the native layer, loaded when first needed)

    out = eager_kernels.split_matmul(a, b)
    if out is not None:
        return out
    if (a.shape[0] < 2 or a.size * b.shape[1] < MATMUL_SPLIT_MIN or a.shape[-1] > MATMUL_POOL_MAX_DEPTH
            or _threads.available(workers) < 2):
        return _one_product(a, b)
    # The pool splits only where the kernels could not (not built, or a layout their gemm does
    # not take), never when their team shrank because other processes keep the cores busy: the
    # caller then waits on the result of a helper queued behind the busy process, and one call
    # was faster. Beside one spinning process (default settings, 2-core AVX-512 host, fresh
    # processes alternated, 3 each): W5's compiled step 11.8-12.8 ms with its products on the
    # caller against 13.4-14.7 split here; W3 large 5.0-5.2 against 6.0-6.1 ms. A C helper
    # thread that sleeps between products and that the caller never waits on to start (the
    # product's rows claimed chunk by chunk) did no better: it joined 60% of the products, ~30 us
    # after the wake-up, and the W5 step took 11.0-12.4 ms against 10.5-10.8 on the caller alone.
    out = np.empty(a.shape[:-1] + (b.shape[1],), np.result_type(a.dtype, b.dtype))
    parts = min(workers, a.shape[0])
    bounds = [a.shape[0] * k // parts for k in range(parts + 1)]
    pool = _get_pool(parts - 1)
    futures = [pool.submit(_part_product, a[lo:hi], b, out[lo:hi]) for lo, hi in zip(bounds[1:-1], bounds[2:])]
    _part_product(a[:bounds[1]], b, out[:bounds[1]])
    for f in futures:
        f.result()
    return out


def _part_product(a, b, out):
    """One row block of the pool's split: the project's own sgemm for float32 (gmnative.gemm:
    the bits of eager's product, whatever the split), else NumPy's matmul."""
    if own_product(a, b, out) is None:
        np.matmul(a, b, out=out)


def _one_product(a, b):
    """a @ b as one BLAS call (a stack by a matrix folded, as eager's matmul). A product of a
    few rows by a transposed matrix (b.T of a C-contiguous one) over a long depth, as a
    convolution's weight gradient (32, 6272) @ (6272, 144), runs as (b.T @ a.T).T: OpenBLAS's
    kernel for a few rows by a transposed operand was 1.1-1.35x slower than the same dot
    products with the operands swapped (32x6272x144: 1.12 against 0.82 ms; 64x4096x256: 1.74
    against 1.44; 100x3000x300: 2.05 against 1.80), while a depth under twice the columns
    lost (256x512x784: 1.83 against 2.04), so only rows < columns and depth >= 2 columns
    take it. The result is copied C-contiguous (rows x columns elements, small against the
    product): the same dot products, equal to rounding. A float32 product is the project's
    own sgemm where it runs (gmnative.gemm.product: eager's bits for it, split or not)."""
    out = own_product(a, b)
    if out is not None:
        return out
    if a.ndim == 2 and b.flags.f_contiguous and not b.flags.c_contiguous and a.flags.c_contiguous:
        m, k = a.shape
        n = b.shape[1]
        if m < n and k >= 2 * n:
            return np.ascontiguousarray(np.matmul(b.T, a.T).T)
    return fold_matmul(np, a, b)


_local = threading.local()


def scratch(specs: tuple, rows: int) -> list:
    """Per-thread block buffers: one array of shape (rows,) + row_shape per (row_shape,
    dtype) in specs, reused from block to block and call to call (a thread runs one
    block at a time, so sharing them between regions with equal specs is safe)."""
    cache = _local.__dict__.setdefault("buffers", {})
    have = cache.get(specs)
    if have is None or have[0] < rows:
        have = (rows, [np.empty((rows,) + tuple(shape), dtype=dt) for shape, dt in specs])
        cache[specs] = have
    if have[0] == rows:
        return have[1]
    return [b[:rows] for b in have[1]]


# -- ops that are more than one NumPy call: computed as their forward computes them ----------
def forward(name: str, xp, *operands, **attrs):
    """The op's own forward (the reference implementation), for library-call lowerings."""
    return REGISTRY[name].forward(xp, *operands, **attrs)


def check_index_range(index, **attrs):
    """check_index_range on a host array: its min and max read by the array's own methods
    and compared with the bounds, the index returned where it lies in them (a training step's
    labels: 2 us, where the record's forward through the registry and np.min/np.max took 6);
    anything else, or a broken bound, goes to the record's forward, which raises eager's
    exception with its message."""
    low, high = attrs["low"], attrs["high"]
    if type(index) is np.ndarray and index.size and type(low) is int and type(high) is int \
            and int(index.min()) >= low and int(index.max()) < high:
        return index
    return forward("check_index_range", np, index, **attrs)


def arg_reduce(name: str, x, dim, keepdim: bool, dtype):
    """argmax/argmin as the op's forward computes them (along a middle axis, as max-pooling
    asks, one native pass where eager has its kernels; NumPy's along the rows otherwise), in
    the IR's index dtype."""
    return np.asarray(REGISTRY[name].forward(np, x, dim=dim, keepdim=keepdim), dtype=dtype)


# The softmax family as library calls (a graph whose decompose pass left them: float16, 0-d):
# the op's own forward, whose formula lives in its record only (it was written here a second
# time; the decompose pass runs the same forward on IR values, static/passes/ir_namespace.py).
def logsumexp(xp, x, dims, keepdim):
    """log(sum(exp(x - m))) + m with m = amax(x) (0 where not finite): the record's forward."""
    return forward("logsumexp", xp, x, dims=dims, keepdim=keepdim)


def softmax(xp, x, dim):
    """exp(x - amax x) / its sum: the record's forward."""
    return forward("softmax", xp, x, dim=dim)


def log_softmax(xp, x, dim):
    """x - logsumexp(x): the record's forward."""
    return forward("log_softmax", xp, x, dim=dim)


def _into(result, out):
    if out is None:
        return result
    np.copyto(out, result, casting="unsafe")
    return out


def rsqrt(x, out=None):
    if out is None:
        return np.true_divide(1.0, np.sqrt(x))
    np.sqrt(x, out=out)
    return np.true_divide(1.0, out, out=out)


def erf(x, out=None):
    return _into(REGISTRY["erf"].forward(np, np.asarray(x)), out)


def gelu_grad(x, out=None):
    return _into(REGISTRY["gelu_grad"].forward(np, np.asarray(x)), out)


def softplus(x, beta, threshold, out=None):
    return _into(REGISTRY["softplus"].forward(np, np.asarray(x), beta=beta, threshold=threshold), out)


def gelu(x, approximate, out=None):
    return _into(REGISTRY["gelu"].forward(np, np.asarray(x), approximate=approximate), out)


def dtype(name: str):
    """An eager dtype by name, for attributes passed on to an op's forward."""
    return _dtypes.from_name(name)


def combine(parts: list, j: int, ufunc: np.ufunc, shape: tuple, count: int | None = None, dtype=None):
    """Reduce the j-th partial of every block (in block order) with `ufunc` (the reduction's
    combiner) into the final value, divided by count for a mean, and rounded to `dtype`
    where the partials were accumulated in a wider one (float16 sums in float32)."""
    if len(parts) == 1:
        total = parts[0][j]
    else:
        total = ufunc.reduce(np.stack([p[j] for p in parts]), axis=0)
    if count is not None:
        total = np.true_divide(total, count)
    if dtype is not None:
        total = total.astype(dtype)
    return total.reshape(shape)


# -- a convolution image by image (native_gen/conv_images.py) ------------------------------------
def conv_images(x, w, out: tuple, stride: tuple, padding: tuple, dilation: tuple, pads: tuple):
    """conv2d of a C-contiguous (N, C, H, W) x by (O, C, kh, kw) w without bias as (N, O, OH, OW):
    eager's image-by-image kernel (gmnative.conv_kernels.conv2d_images, each image's columns in
    a buffer of its thread's own), else unfold and one product per image as the IR has them.
    padding is (top, left), pads the unfold's (top, bottom, left, right)."""
    from gmnative import conv_kernels  # noqa: PLC0415

    y = conv_kernels.conv2d_images(x, w, None, out, stride, padding, dilation)
    if y is not None:
        return y
    o, k = w.shape[0], w.shape[1] * w.shape[2] * w.shape[3]
    cols = _cols(x, w, stride, pads, dilation)
    return np.matmul(w.reshape(o, k), cols).reshape((x.shape[0], o) + tuple(out))


def _cols(x, w, stride, pads, dilation):
    """The batch-major columns (N, K, L) of x, as the IR's unfold, reshape and permute."""
    cols = forward("unfold", np, x, kernel=tuple(w.shape[2:]), stride=stride, padding=pads, dilation=dilation,
                   pad_value=0.0)
    k = w.shape[1] * w.shape[2] * w.shape[3]
    return cols.reshape(k, x.shape[0], -1).transpose(1, 0, 2)


def conv_images_backward(g, x, w, stride: tuple, padding: tuple, dilation: tuple, pads: tuple, want_dx: bool,
                         dw_shape: tuple):
    """(dx or None, dW shaped `dw_shape`) of conv_images for the output gradient g (N, O, OH,
    OW): eager's kernel (the columns made again per image), else the IR's ops (the columns,
    the summed product, W^T G folded)."""
    from gmnative import conv_kernels  # noqa: PLC0415

    if g.flags.c_contiguous:
        res = conv_kernels.conv2d_images_backward(g, x, w, stride, padding, dilation, want_dx, True)
        if res is not None:
            return res[0], res[1].reshape(dw_shape)
    n, o = g.shape[0], g.shape[1]
    k = w.shape[1] * w.shape[2] * w.shape[3]
    g3 = g.reshape(n, o, -1)
    cols = _cols(x, w, stride, pads, dilation)
    dw = np.matmul(g3, cols.transpose(0, 2, 1)).sum(axis=0).reshape(dw_shape)
    if not want_dx:
        return None, dw
    dcols = np.matmul(w.reshape(o, k).T, g3).transpose(1, 0, 2).reshape(
        (w.shape[1], w.shape[2], w.shape[3], n) + g.shape[2:])
    dx = forward("fold", np, dcols, size=x.shape[2:], kernel=tuple(w.shape[2:]), stride=stride, padding=pads,
                 dilation=dilation)
    return dx, dw
