"""The generated modules' matmul (codegen.runtime.matmul): one BLAS call per thread on row
blocks where BLAS runs one thread, a plain np.matmul otherwise."""
from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from codegen import runtime

BIG = (96, 256, 200)  # 96 * 256 * 200 multiply-adds: above MATMUL_SPLIT_MIN


@pytest.fixture
def split_matmul(monkeypatch):
    """BLAS reported as one thread and two threads for graphmode: products are split."""
    monkeypatch.setattr(runtime, "_blas_threads", [1])
    monkeypatch.setattr(runtime.CONFIG, "threads", 2)
    monkeypatch.setattr(runtime, "MATMUL_SPLIT_MIN", 1 << 12)


def _calls(monkeypatch) -> list:
    seen: list = []
    real = np.matmul

    def counting(a, b, **kw):
        seen.append(a.shape)
        return real(a, b, **kw)

    monkeypatch.setattr(runtime.np, "matmul", counting)
    return seen


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("layout", ["c", "transposed", "batched"])
def test_a_split_product_equals_numpy(split_matmul, dtype, layout):
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
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype == np.float32 else 1e-12)
    np.testing.assert_array_equal(runtime.matmul(a, b), got)  # the same blocks on every call


def test_the_product_is_split_only_where_blas_runs_one_thread(split_matmul, monkeypatch):
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
def test_a_forked_child_splits_products_with_a_pool_of_its_own(split_matmul):
    a, b = np.ones(BIG[:2]), np.ones(BIG[1:])
    runtime.matmul(a, b)  # the parent's pool exists now
    pid = os.fork()
    if pid == 0:  # the child: the inherited pool has no threads (a hang is cut off by the alarm)
        signal.alarm(20)
        ok = np.array_equal(runtime.matmul(a, b), np.full((BIG[0], BIG[2]), float(BIG[1])))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
