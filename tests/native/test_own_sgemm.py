"""The project's own single-precision product (gmnative/csrc/gm_gemm.h, gmnative.gemm): its
values against float64 products on shapes that cross every edge of its tiles and blocks, its
cblas arguments (transposes, leading dimensions, alpha and beta, column-major), and the
property the routing rests on: a product's bits do not depend on how its rows are split, so
eager's split products, its one-call products and the generated code's agree bit for bit."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from gmnative import gemm
from gmnative import kernels as native_kernels

pytestmark = pytest.mark.skipif(gemm.sgemm_function() is None, reason="no C++ compiler: the own sgemm is not built")

ROW, COL, NO, TRANS = 101, 102, 111, 112
# tiles are 12 x 32 (AVX-512), 6 x 16 (AVX2), 4 x 4 (plain C); depth blocks of 128 (a depth up to
# 160 one block: 144, 160; 161 the first past it)
SHAPES = [(1, 1, 1), (1, 37, 5), (29, 1, 130), (2, 3, 2), (13, 17, 19), (12, 32, 128), (13, 33, 129),
          (25, 65, 257), (97, 47, 300), (6, 16, 8), (7, 15, 1), (32, 196, 144), (5, 40, 160), (14, 31, 161)]


def _call(a, b, ta, tb, *, alpha=1.0, beta=0.0, c=None, pad=0, order=ROW):
    """C = alpha op(A) op(B) + beta C through the kernel's cblas signature, each stored matrix
    given `pad` spare columns (a leading dimension larger than its width)."""
    f = gemm.sgemm_function()
    m, k = a.shape
    n = b.shape[1]
    sa = np.ascontiguousarray(a.T if ta else a)  # the stored matrices
    sb = np.ascontiguousarray(b.T if tb else b)
    if order == COL:  # column-major storage is the row-major storage of the transpose
        sa = np.ascontiguousarray(a if ta else a.T)
        sb = np.ascontiguousarray(b if tb else b.T)
    A = np.zeros((sa.shape[0], sa.shape[1] + pad), np.float32)
    A[:, :sa.shape[1]] = sa
    B = np.zeros((sb.shape[0], sb.shape[1] + pad), np.float32)
    B[:, :sb.shape[1]] = sb
    shape = (m, n) if order == ROW else (n, m)
    C = np.full((shape[0], shape[1] + pad), np.nan if beta == 0 else 0, np.float32)
    if c is not None:
        C[:, :shape[1]] = c if order == ROW else c.T
    f(order, TRANS if ta else NO, TRANS if tb else NO, m, n, k, alpha, A.ctypes.data, A.shape[1],
      B.ctypes.data, B.shape[1], beta, C.ctypes.data, C.shape[1])
    if pad:
        assert np.isnan(C[:, shape[1]:]).all() if beta == 0 else (C[:, shape[1]:] == 0).all()  # untouched
    out = C[:, :shape[1]]
    return out if order == ROW else out.T


def _tol(a, b):
    """float32 rounding of sums of k terms: relative to the sum of the terms' sizes."""
    return 1e-6 * np.sqrt(a.shape[1]) * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) + 1e-30


@pytest.mark.parametrize("m, n, k", SHAPES)
@pytest.mark.parametrize("ta, tb", [(0, 0), (0, 1), (1, 0), (1, 1)])
def test_products_against_float64(m, n, k, ta, tb):
    rng = np.random.default_rng(m * 1000 + n * 10 + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    got = _call(a, b, ta, tb)
    assert (np.abs(got - exact) <= _tol(a, b)).all()
    padded = _call(a, b, ta, tb, pad=3)  # leading dimensions past the width: the same bits
    np.testing.assert_array_equal(padded, got)


@pytest.mark.parametrize("order", [ROW, COL])
def test_alpha_beta_and_column_major(order):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((23, 300)).astype(np.float32)
    b = rng.standard_normal((300, 41)).astype(np.float32)
    c = rng.standard_normal((23, 41)).astype(np.float32)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    tol = _tol(a, b) * 2
    for ta, tb in ((0, 0), (1, 1), (0, 1)):
        got = _call(a, b, ta, tb, beta=1.0, c=c, order=order, pad=2)  # beta 1: accumulate into C
        assert (np.abs(got - (exact + c)) <= tol + 1e-6 * np.abs(c)).all()
        got = _call(a, b, ta, tb, alpha=-0.5, beta=0.0, order=order)
        assert (np.abs(got - (-0.5 * exact)) <= tol).all()
    # beta 0 never reads C (NaN there stays out of the result), k = 0 writes beta C
    assert np.isfinite(_call(a, b, 0, 0, order=order)).all()
    empty = _call(a[:, :0], b[:0], 0, 0, beta=1.0, c=c, order=order)
    np.testing.assert_array_equal(empty, c)


def test_a_row_block_has_the_bits_of_the_whole_product():
    """Each element's sum runs in one order wherever its row lies: row blocks (as the threads
    split a product) and one call give the same bits, transposed operands included."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((77, 300)).astype(np.float32)
    b = rng.standard_normal((300, 70)).astype(np.float32)
    for ta in (0, 1):
        for tb in (0, 1):
            whole = _call(a, b, ta, tb)
            for lo, hi in ((0, 1), (1, 13), (13, 40), (40, 77)):
                np.testing.assert_array_equal(_call(a[lo:hi], b, ta, tb), whole[lo:hi])
            # and the transposed product computes the same sums: C^T = B^T A^T, bit for bit
            np.testing.assert_array_equal(_call(b.T, a.T, tb, ta), whole.T)


def test_the_split_and_the_one_call_products_agree():
    """kernels.gemm's row-split product (the threads), gemm.product (one thread) and
    kernels.matmul (what eager and the generated code call) give one set of bits."""
    if not gemm.own_sgemm():
        pytest.skip("GRAPHMODE_NATIVE_GEMM=0: float32 products are NumPy's BLAS")
    rng = np.random.default_rng(11)
    a = rng.standard_normal((512, 64)).astype(np.float32)
    w = rng.standard_normal((192, 64)).astype(np.float32)
    one = gemm.product(a, w.T)
    assert one is not None
    for threads in (2, 3):
        split = native_kernels.gemm(a, w.T, threads)
        if split is not None:  # (None only below the split's size where the workers sleep)
            np.testing.assert_array_equal(split, one)
    g = rng.standard_normal((512, 192)).astype(np.float32)
    np.testing.assert_array_equal(gemm.product(g.T, a), gemm.product(np.ascontiguousarray(g.T), a))
    stack = a.reshape(4, 128, 64)  # a C-contiguous stack by a matrix: its rows as one product
    np.testing.assert_array_equal(gemm.product(stack, w.T).reshape(512, 192), one)
    np.testing.assert_array_equal(native_kernels.matmul(stack, w.T).reshape(512, 192), one)
    exact = a.astype(np.float64) @ w.T.astype(np.float64)
    assert (np.abs(one - exact) <= _tol(a, w.T)).all()


@pytest.mark.parametrize("b_transposed", [False, True])
def test_a_wide_product_has_the_bits_of_one_call_however_split(b_transposed):
    """A result wider than 320 columns (W3's 256 x 784 by 784 x 512) takes one road, the own
    sgemm or OpenBLAS (csrc/gm_gemm.cpp: by its width, depth and A's layout, never its rows):
    split by rows across threads it gives the one call's bits."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 784)).astype(np.float32)
    w = rng.standard_normal((512, 784)).astype(np.float32)
    b = w.T if b_transposed else np.ascontiguousarray(w.T)
    one = native_kernels.matmul(a, b)
    if one is None:
        pytest.skip("no native kernels here")
    for threads in (2, 3):
        split = native_kernels.gemm(a, b, threads)
        if split is not None:
            np.testing.assert_array_equal(split, one)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    assert (np.abs(one - exact) <= _tol(a, b)).all()


def test_the_escape_hatch_restores_numpys_blas(monkeypatch):
    a = np.ones((64, 64), np.float32)
    try:
        for value, own in (("0", False), ("1", gemm.numpy_blas_gemm() is not None)):
            with monkeypatch.context() as env:
                env.setenv("GRAPHMODE_NATIVE_GEMM", value)
                native_kernels.blas_gemm.cache_clear()
                assert gemm.own_sgemm() is own
                assert (native_kernels.blas_gemm() == gemm.numpy_blas_gemm()) is not own
                assert (gemm.sgemm_address(True) is None) is not own
                assert (gemm.product(a, a) is None) is not own
    finally:
        native_kernels.blas_gemm.cache_clear()  # (the table of this process's setting again)


def test_an_avx2_build_gives_the_same_properties():
    """The kernel built for AVX2 with FMA (6 x 16 tiles) where this host runs it: values against
    float64 and row blocks against the whole product, in a process of its own."""
    from gmnative import build, toolchain  # noqa: PLC0415

    problem = toolchain.target_problem(build.toolchain().command, "haswell")
    if problem is not None:
        pytest.skip(problem)
    script = textwrap.dedent("""
        import numpy as np
        from gmnative import gemm
        f = gemm.sgemm_function()
        rng = np.random.default_rng(0)
        a = rng.standard_normal((53, 300)).astype(np.float32)
        b = rng.standard_normal((300, 37)).astype(np.float32)
        bt = np.ascontiguousarray(b.T)
        c = np.empty((53, 37), np.float32)
        f(101, 111, 112, 53, 37, 300, 1.0, a.ctypes.data, 300, bt.ctypes.data, 300, 0.0, c.ctypes.data, 37)
        exact = a.astype(np.float64) @ b.astype(np.float64)
        assert np.abs(c - exact).max() < 1e-4, np.abs(c - exact).max()
        part = np.empty((20, 37), np.float32)
        f(101, 111, 112, 20, 37, 300, 1.0, a[7:].ctypes.data, 300, bt.ctypes.data, 300, 0.0, part.ctypes.data, 37)
        assert np.array_equal(part, c[7:27])
        print("ok")
    """)
    env = dict(os.environ, GRAPHMODE_NATIVE_ARCH="haswell")  # (the target is part of every cache key)
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr


def test_an_avx2_build_leaves_products_to_openblas_unless_asked():
    """Built without AVX-512 the kernel measured slower than OpenBLAS (gemm.sgemm_address), so
    by default OpenBLAS takes every float32 product there; GRAPHMODE_NATIVE_GEMM=1 asks for the
    kernel anyway. In processes of their own (the target is part of every cache key)."""
    from gmnative import build, toolchain  # noqa: PLC0415

    problem = toolchain.target_problem(build.toolchain().command, "haswell")
    if problem is not None:
        pytest.skip(problem)
    script = ("from gmnative import gemm\n"
              "print(gemm.vector_floats(), gemm.own_sgemm(), gemm.sgemm_address(True) is not None)\n")
    seen = {}
    for value in (None, "1"):
        env = {k: v for k, v in os.environ.items() if k != "GRAPHMODE_NATIVE_GEMM"}
        env["GRAPHMODE_NATIVE_ARCH"] = "haswell"
        if value is not None:
            env["GRAPHMODE_NATIVE_GEMM"] = value
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        seen[value] = run.stdout.split()
    assert seen[None] == ["8", "False", "False"]
    assert seen["1"] == ["8", str(gemm.numpy_blas_gemm() is not None), "True"]


@pytest.mark.parametrize("threads", [1, 2])
def test_eager_and_compiled_products_have_the_same_bits(monkeypatch, threads):
    """A float32 product of 2**20 multiply-adds or more is the own sgemm's in eager (the matmul
    op, the fused linear), in the compiled code's one-call or split product and in a scan's C
    loop (the gm_blas table's large-product entry) as in its Python-driven loop: one set of
    bits, on one thread or two."""
    import eager  # noqa: PLC0415
    import static  # noqa: PLC0415
    from gmnative import build  # noqa: PLC0415
    from static import trace_cache  # noqa: PLC0415

    monkeypatch.setattr(build, "threads", lambda: threads)
    own = gemm.own_sgemm()  # (GRAPHMODE_NATIVE_GEMM=0: NumPy's BLAS, the same agreement asked)
    rng = np.random.default_rng(13)
    x = eager.tensor(rng.standard_normal((3, 130, 96)).astype(np.float32))
    w = eager.tensor(rng.standard_normal((96, 100)).astype(np.float32) * 0.1)  # 130x96x100: 1.25M
    lin = eager.nn.Linear(96, 100)
    want = [eager.matmul(x[i], w).numpy() for i in range(3)]
    if own or threads == 1:  # (OpenBLAS's bits change with the rows a part has: 130 rows split in two)
        mm = gemm.product if own else np.matmul
        np.testing.assert_array_equal(want[0], mm(x.numpy()[0], w.numpy()))
        np.testing.assert_array_equal(lin(x[0]).detach().numpy(),
                                      mm(x.numpy()[0], lin.weight.detach().numpy().T) + lin.bias.detach().numpy())

    def body(w, xs):
        return static.scan(lambda h, xi: (h, xi @ w), xs[0, :1, :1], xs)[1]

    got = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("GRAPHMODE_NATIVE_LOOPS", flag)
        trace_cache._MEMORY.clear()
        f = static.compile(body, backend="native")
        got[flag] = f(w, x).numpy()
        source = f.lower(w, x).compile().as_text()
        assert ("as a C loop around its body's kernels" in source) == (flag == "1")
    trace_cache._MEMORY.clear()
    one = static.compile(lambda a, b: a @ b, backend="native")(x[1], w).numpy()
    np.testing.assert_array_equal(one, want[1])
    for flag in ("1", "0"):
        for i in range(3):
            np.testing.assert_array_equal(got[flag][i], want[i])
