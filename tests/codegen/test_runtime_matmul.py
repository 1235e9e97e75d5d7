"""The generated modules' matmul (codegen.runtime.matmul) and eager's: one BLAS call per
thread on row blocks where BLAS runs one thread (from the native kernels' OpenMP threads
where they are built, else from a Python thread pool), a plain np.matmul otherwise."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

import eager
from codegen import eager_kernels, native_build, runtime

BIG = (96, 256, 200)  # 96 * 256 * 200 multiply-adds: above MATMUL_SPLIT_MIN


@pytest.fixture
def split_matmul(monkeypatch):
    """BLAS reported as one thread and two threads for graphmode: products are split."""
    monkeypatch.setattr(runtime, "_blas_threads", [1])
    monkeypatch.setattr(runtime.CONFIG, "threads", 2)
    monkeypatch.setattr(runtime, "MATMUL_SPLIT_MIN", 1 << 12)
    monkeypatch.setattr(runtime, "MATMUL_SPLIT_MIN_ROWS", 1)


@pytest.fixture
def pool_matmul(split_matmul, monkeypatch):
    """The Python thread pool's split (the native kernels' one switched off)."""
    monkeypatch.setattr(eager_kernels, "split_matmul", lambda a, b: None)


native = pytest.mark.skipif(not native_build.availability()[0] or eager_kernels.blas_gemm() is None,
                            reason="no C++ compiler or no BLAS symbol found")


def _calls(monkeypatch) -> list:
    seen: list = []
    real = np.matmul

    def counting(a, b, **kw):
        seen.append(a.shape)
        return real(a, b, **kw)

    monkeypatch.setattr(runtime.np, "matmul", counting)
    own = runtime.own_product

    def counting_own(a, b, out=None):  # (float32: the project's own sgemm, gmnative.gemm.product)
        got = own(a, b, out)
        if got is not None:
            seen.append(a.shape)
        return got

    monkeypatch.setattr(runtime, "own_product", counting_own)
    return seen


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("layout", ["c", "transposed", "batched"])
@pytest.mark.parametrize("split", ["pool", "native"])
def test_a_split_product_equals_numpy(split_matmul, monkeypatch, dtype, layout, split):
    if split == "pool":
        monkeypatch.setattr(eager_kernels, "split_matmul", lambda a, b: None)
    rng = np.random.default_rng(0)
    m, k, n = BIG
    if layout == "transposed":
        a = (rng.standard_normal((k, m)) * 3).astype(dtype).T  # a strided view, as X.T in a backward
    elif layout == "batched":
        a = (rng.standard_normal((4, m // 4, k)) * 3).astype(dtype)
    else:
        a = (rng.standard_normal((m, k)) * 3).astype(dtype)
    b = (rng.standard_normal((k, n)) * 3).astype(dtype)
    got = runtime.matmul(a, b)
    want = np.matmul(a, b)
    assert got.shape == want.shape and got.dtype == want.dtype
    # float32: the rounding of 256-term sums of terms up to about 9 in size (another summation order)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12,
                               atol=1e-3 if dtype == np.float32 else 0)
    np.testing.assert_array_equal(runtime.matmul(a, b), got)  # the same blocks on every call


def test_the_product_is_split_only_where_blas_runs_one_thread(pool_matmul, monkeypatch):
    a, b = np.ones(BIG[:2], np.float32), np.ones(BIG[1:], np.float32)
    seen = _calls(monkeypatch)
    runtime.matmul(a, b)
    assert seen == [(48, 256), (48, 256)]
    seen.clear()
    monkeypatch.setattr(runtime, "_blas_threads", [2])
    runtime.matmul(a, b)
    assert seen == [a.shape]
    seen.clear()
    runtime.matmul(np.ones((4, 8), np.float32), np.ones((8, 3), np.float32))  # small: one call
    assert seen == [(4, 8)]


def test_blas_threads_is_a_number_or_unknown():
    found = runtime._query_blas_threads()
    assert found is None or (isinstance(found, int) and found >= 1)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_splits_products_with_a_pool_of_its_own(pool_matmul):
    a, b = np.ones(BIG[:2]), np.ones(BIG[1:])
    runtime.matmul(a, b)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: the inherited pool has no threads (a hang is cut off by the alarm)
        signal.alarm(20)
        ok = np.array_equal(runtime.matmul(a, b), np.full((BIG[0], BIG[2]), float(BIG[1])))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@native
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "a transposed", "b transposed", "batched"])
def test_the_native_split_runs_blas_per_row_block_without_numpy(split_matmul, monkeypatch, dtype, layout):
    rng = np.random.default_rng(1)
    m, k, n = BIG
    a = rng.standard_normal((k, m)).astype(dtype).T if layout == "a transposed" else \
        rng.standard_normal((4, m // 4, k) if layout == "batched" else (m, k)).astype(dtype)
    b = rng.standard_normal((n, k)).astype(dtype).T if layout == "b transposed" else rng.standard_normal((k, n)).astype(dtype)
    want = np.matmul(a, b)
    seen = _calls(monkeypatch)
    got = runtime.matmul(a, b)
    assert seen == []  # no NumPy product: the kernels' threads called BLAS
    assert got.shape == want.shape and got.dtype == want.dtype and got.flags.c_contiguous
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-4)
    np.testing.assert_array_equal(runtime.matmul(a, b), got)  # blocks fixed by the thread count


@native
def test_the_native_split_declines_what_it_cannot_do(split_matmul):
    m, k, n = BIG
    f32 = np.ones((m, k), np.float32)
    assert eager_kernels.gemm(f32, np.ones((k, n), np.float64), 2) is None  # mixed dtypes
    assert eager_kernels.gemm(np.ones((m, k), np.int64), np.ones((k, n), np.int64), 2) is None
    assert eager_kernels.gemm(np.ones((m, 2 * k), np.float32)[:, ::2], np.ones((k, n), np.float32), 2) is None
    assert eager_kernels.gemm(f32, np.ones((k, n), np.float32), 1) is None  # one thread: nothing to split
    assert eager_kernels.gemm(np.ones((2, 3), np.float32), np.ones((3, 2), np.float32), 2) is None  # too small
    empty = runtime.matmul(np.ones((m, 0), np.float32), np.ones((0, n), np.float32))
    assert empty.shape == (m, n) and not empty.any()


@native
def test_eager_and_compiled_code_compute_a_large_product_alike(split_matmul):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((256, 128)).astype(np.float32)
    b = rng.standard_normal((128, 160)).astype(np.float32)
    got = eager.matmul(eager.tensor(a), eager.tensor(b)).numpy()
    np.testing.assert_array_equal(got, runtime.matmul(a, b))  # the same row blocks, the same bits
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-4)


@native
def test_the_row_blocks_are_a_translation_unit_of_their_own():
    """The first large product of a process on a fresh machine waits for its kernel's build:
    that unit holds the row blocks only, not every eager kernel (a fifth of the compile)."""
    assert "gemm_rows" in eager_kernels.GEMM and "gemm_rows" not in eager_kernels.KERNELS
    k = eager_kernels.kernels()
    assert k.address("gm_eager_gemm_f32") is not None and k.address("gm_eager_gemm_f64") is not None
    assert "gemm" in k._libraries and k.source("gemm") == eager_kernels.GEMM


@pytest.mark.parametrize("env, spin", [({}, True), ({"GOMP_SPINCOUNT": "30000"}, True),
                                       ({"OMP_WAIT_POLICY": "passive"}, False), ({"GOMP_SPINCOUNT": "0"}, False),
                                       ({"OMP_WAIT_POLICY": "ACTIVE"}, True)])
def test_products_split_from_a_smaller_size_where_the_workers_spin(monkeypatch, env, spin):
    """Spinning workers take a block at once: products from 2**20 multiply-adds are split.
    Sleeping ones must be woken (50-200 us): only from 2**22."""
    for var in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    eager_kernels.split_min.cache_clear()
    try:
        assert native_build.workers_spin() is spin
        assert eager_kernels.split_min() == (1 << 20 if spin else 1 << 22)
    finally:
        eager_kernels.split_min.cache_clear()


@native
def test_a_product_below_the_split_size_is_one_blas_call(split_matmul, monkeypatch):
    monkeypatch.setattr(eager_kernels, "split_min", lambda: 1 << 22)
    a, b = np.ones((512, 64), np.float32), np.ones((64, 64), np.float32)  # 2**21 multiply-adds
    assert eager_kernels.gemm(a, b, 2) is None
    monkeypatch.setattr(eager_kernels, "split_min", lambda: 1 << 20)
    np.testing.assert_array_equal(eager_kernels.gemm(a, b, 2), a @ b)


def test_a_product_with_few_rows_a_part_runs_as_one_call(split_matmul, monkeypatch):
    """Each part of a split packs the whole right operand again: below MATMUL_SPLIT_MIN_ROWS
    rows a part (a convolution's (32, 144) @ (144, 6272)) the product is one NumPy call."""
    monkeypatch.setattr(runtime, "MATMUL_SPLIT_MIN_ROWS", 64)
    monkeypatch.setattr(eager_kernels, "split_matmul", lambda a, b: pytest.fail("split"))
    seen = _calls(monkeypatch)
    a, b = np.ones((96, 256), np.float32), np.ones((256, 200), np.float32)
    got = runtime.matmul(a, b)
    assert seen == [(96, 256)]
    np.testing.assert_array_equal(got, np.full((96, 200), 256.0, np.float32))


def test_the_pool_does_not_split_a_deep_product(pool_matmul, monkeypatch):
    """Beside busy processes (the kernels' team shrunk, their split declined) a product deeper
    than MATMUL_POOL_MAX_DEPTH (a convolution's weight gradient) runs as one call; a shallow
    one is still split on the pool."""
    seen = _calls(monkeypatch)
    m, k, n = BIG
    deep_a, deep_b = np.ones((m, 8 * k), np.float32), np.ones((8 * k, n), np.float32)
    np.testing.assert_array_equal(runtime.matmul(deep_a, deep_b), np.full((m, n), 8.0 * k, np.float32))
    assert seen == [(m, 8 * k)]
    seen.clear()
    runtime.matmul(np.ones((m, k), np.float32), np.ones((k, n), np.float32))
    assert sorted(seen) == [(m // 2, k), (m // 2, k)]
