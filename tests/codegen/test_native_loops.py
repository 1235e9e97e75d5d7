"""scan and while_loop as C loops in the native backend (codegen/native_gen/loops.py): the
values are the Python-driven loop's to the bit (GRAPHMODE_NATIVE_LOOPS=0 runs the op's
forward, which loops in Python around the same body kernels), and eager's within rounding;
reverse scans, lengths 0 and 1, pytrees of carries, float32 and float64, fori_loop with
static and traced bounds, a while_loop whose trip count depends on the data, gradients
through a scan (the backward scan is a C loop too), and a body with an op that has no C form
(the Python loop runs, and the generated module says which node forced it).

Each test compiles a few translation units (~0.2-1 s each): loops share one function."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _leaves(tree) -> list:
    """The arrays of a result pytree (tuples, lists, dicts), in order."""
    if isinstance(tree, (tuple, list)):
        return [a for t in tree for a in _leaves(t)]
    if isinstance(tree, dict):
        return [a for k in tree for a in _leaves(tree[k])]
    return [np.asarray(tree.numpy() if hasattr(tree, "numpy") else tree)]


def _fresh_build() -> None:
    """Forget the executables the post-trace cache holds in memory (static/jit/trace_cache.py,
    keyed by the traced graph, not by codegen's settings): the next compile of the same
    function builds its module again, with the C loops on or off as the setting says (the
    disk record's graphs reach codegen, whose key has the setting)."""
    from static import trace_cache

    trace_cache._MEMORY.clear()


def _both(fn, *args, monkeypatch=None):
    """(results with C loops, results with Python-driven loops, generated source with C loops);
    checks that the second really runs the Python loop."""
    outs, sources = [], []
    for flag in ("1", "0"):
        monkeypatch.setenv("GRAPHMODE_NATIVE_LOOPS", flag)
        _fresh_build()
        f = static.compile(fn, backend="native")
        res = f(*args)
        sources.append(f.lower(*args).compile().as_text())
        outs.append(_leaves(res))
    assert "as a C loop around its body's kernels" not in sources[1], "the comparison ran the C loop twice"
    return outs[0], outs[1], sources[0]


def _same_bits(a: list, b: list) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


def _cell(w, u, b, h, x):
    return eager.tanh(x @ w + h @ u + b)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_scans_match_the_python_loop_bit_for_bit(dt, monkeypatch):
    rng = np.random.default_rng(0)
    w = eager.tensor(rng.standard_normal((5, 6)).astype(dt) * 0.5)
    u = eager.tensor(rng.standard_normal((6, 6)).astype(dt) * 0.5)
    b = eager.tensor(rng.standard_normal(6).astype(dt))
    h0 = eager.tensor(rng.standard_normal((3, 6)).astype(dt))
    xs = eager.tensor(rng.standard_normal((7, 3, 5)).astype(dt))

    def model(w, u, b, h0, xs):
        def step(h, x):
            h = _cell(w, u, b, h, x)
            return h, h * 2
        h, ys = static.scan(step, h0, xs)                       # forward
        hr, ysr = static.scan(step, h0, xs, reverse=True)       # reverse

        def tree_step(c, x):                                    # a pytree of carries, int and float
            n, (s, m) = c["n"], c["sm"]
            s2 = s + x.sum(1)
            return {"n": n + 1, "sm": (s2, eager.maximum(m, x.amax(1)))}, s2 * 0.5
        c, zs = static.scan(tree_step, {"n": eager.tensor(np.int64(0)), "sm": (xs[0].sum(1) * 0, xs[0].amax(1))}, xs)
        h1, y1 = static.scan(step, h0, xs[:1])                  # length 1
        h_empty, y_empty = static.scan(step, h0, xs[:0])         # length 0
        return h, ys, hr, ysr, c, zs, h1, y1, h_empty, y_empty

    native, python, source = _both(model, w, u, b, h0, xs, monkeypatch=monkeypatch)
    assert source.count("as a C loop around its body's kernels") >= 4, "every scan is a C loop"
    assert "loops in Python" not in source
    _same_bits(native, python)
    ref = _leaves(model(w, u, b, h0, xs)[:-1])  # eager: Python loop (its length-0 scan yields no ys)
    tol = 1e-5 if dt == np.float32 else 1e-12
    for got, want in zip(native[:-1], ref):
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    assert native[-1].shape == (0, 3, 6) and np.array_equal(native[-2], np.asarray(h0.numpy()))


def test_fori_and_while_loops(monkeypatch):
    rng = np.random.default_rng(1)
    a = eager.tensor(rng.standard_normal((4, 4)) * 0.3)
    x0 = eager.tensor(rng.standard_normal(4))
    n = eager.tensor(np.int64(9))

    def model(a, x0, n):
        def body(i, x):
            return eager.sin(x @ a) + x * 0.5 + i
        y_static = static.fori_loop(0, 25, body, x0)             # a scan with a counter
        y_traced = static.fori_loop(n * 0 + 2, n, body, x0)     # traced bounds: a while_loop

        def cond(c):                                            # a data-dependent trip count:
            k, v = c                                            # halve until the norm is small
            return (v * v).sum() > 1e-6
        k, v = static.while_loop(cond, lambda c: (c[0] + 1, v_half(c[1])), (eager.tensor(np.int64(0)), x0 * 100))
        y_nested = static.fori_loop(0, 3, lambda j, x: static.fori_loop(0, 4, body, x * 0.5), x0)  # loop in a loop
        return y_static, y_traced, k, v, y_nested

    def v_half(v):
        return v * 0.5

    native, python, source = _both(model, a, x0, n, monkeypatch=monkeypatch)
    assert source.count("as a C loop around its body's kernels") == 5 and "loops in Python" not in source
    _same_bits(native, python)
    want = _leaves(model(a, x0, n))
    for got, w in zip(native, want):
        np.testing.assert_allclose(got, w, rtol=1e-12, atol=1e-12)
    norm0 = float((np.asarray(x0.numpy()) * 100) @ (np.asarray(x0.numpy()) * 100))
    assert int(native[2]) == int(np.ceil(np.log(norm0 / 1e-6) / np.log(4)))  # the data decided the trip count


def test_while_loop_that_never_runs(monkeypatch):
    x = eager.tensor(np.arange(3.0))

    def model(x):
        return static.while_loop(lambda c: c[0] < 0, lambda c: (c[0] + 1, c[1] * 2), (eager.tensor(np.int64(5)), x))

    native, python, source = _both(model, x, monkeypatch=monkeypatch)
    _same_bits(native, python)
    assert "as a C loop" in source and int(native[0]) == 5 and np.array_equal(native[1], np.arange(3.0))


def _gru(w, u, b, h, x):
    """A GRU step (gates sliced from two products, as PyTorch's GRUCell)."""
    gi, gh = x @ w + b, h @ u
    n = h.shape[-1]
    r = eager.sigmoid(gi[:, :n] + gh[:, :n])
    z = eager.sigmoid(gi[:, n:2 * n] + gh[:, n:2 * n])
    c = eager.tanh(gi[:, 2 * n:] + r * gh[:, 2 * n:])
    return (1 - z) * c + z * h


def test_gradients_through_a_scan(monkeypatch):
    """A GRU's gradient: the forward scan (saving carries and the products' results) and the
    backward scan (transposed products, concatenated gate gradients, column sums) both run
    as C loops, with the Python loop's bits, and agree with eager's autograd unrolled."""
    rng = np.random.default_rng(2)
    dt = np.float32
    w = eager.tensor(rng.standard_normal((4, 24)).astype(dt) * 0.4)
    u = eager.tensor(rng.standard_normal((8, 24)).astype(dt) * 0.4)
    b = eager.tensor(rng.standard_normal(24).astype(dt) * 0.1)
    h0 = eager.tensor(rng.standard_normal((3, 8)).astype(dt))
    xs = eager.tensor(rng.standard_normal((6, 3, 4)).astype(dt))

    def loss(w, u, b, h0, xs):
        def step(h, x):
            h = _gru(w, u, b, h, x)
            return h, h
        h, ys = static.scan(step, h0, xs)
        return (ys * ys).mean() + h.sum()

    outs = []
    for flag in ("1", "0"):
        monkeypatch.setenv("GRAPHMODE_NATIVE_LOOPS", flag)
        _fresh_build()
        g = static.value_and_grad(loss, argnums=(0, 1, 2, 3, 4), backend="native")
        v, gs = g(w, u, b, h0, xs)
        outs.append([np.asarray(v.numpy())] + [np.asarray(t.numpy()) for t in gs])
        source = g.lower(w, u, b, h0, xs).compile().as_text()
        if flag == "1":
            assert source.count("as a C loop around its body's kernels") == 2 and "loops in Python" not in source
        else:
            assert "as a C loop" not in source
    _same_bits(outs[0], outs[1])
    # against eager's autograd through the unrolled loop
    params = [eager.tensor(np.asarray(t.numpy()), requires_grad=True) for t in (w, u, b, h0, xs)]
    h = params[3]
    ys = []
    for t in range(6):
        h = _gru(params[0], params[1], params[2], h, params[4][t])
        ys.append(h)
    ref = (eager.stack(ys) ** 2).mean() + h.sum()
    ref.backward()
    for got, p in zip(outs[0][1:], params):
        np.testing.assert_allclose(got, np.asarray(p.grad.numpy()), rtol=2e-4, atol=2e-5)


def test_large_products_split_by_rows_as_the_python_loop_does(monkeypatch):
    """With two threads and BLAS on one, the Python-driven body splits a large product by rows
    (one BLAS call a part, gmnative's gemm_rows); the C loop splits it the same way."""
    monkeypatch.setattr(native_build, "threads", lambda: 2)
    rng = np.random.default_rng(7)
    w = eager.tensor(rng.standard_normal((96, 384)).astype(np.float32) * 0.1)
    u = eager.tensor(rng.standard_normal((128, 384)).astype(np.float32) * 0.1)
    b = eager.tensor(rng.standard_normal(384).astype(np.float32) * 0.1)
    h0 = eager.tensor(rng.standard_normal((67, 128)).astype(np.float32))
    xs = eager.tensor(rng.standard_normal((3, 67, 96)).astype(np.float32))

    def model(w, u, b, h0, xs):
        return static.scan(lambda h, x: (_gru(w, u, b, h, x),) * 2, h0, xs)

    native, python, source = _both(model, w, u, b, h0, xs, monkeypatch=monkeypatch)
    assert "#pragma omp parallel for num_threads(gm_nt)" in source and "loops in Python" not in source
    _same_bits(native, python)


def test_backward_scan_is_a_c_loop(monkeypatch):
    """The reverse scan of a VJP body (scan_vjp_body: transposed products, column sums) is
    written in C too, as the forward scan with its saved carries."""
    monkeypatch.setenv("GRAPHMODE_NATIVE_LOOPS", "1")
    rng = np.random.default_rng(3)
    w = eager.tensor(rng.standard_normal((3, 3)))
    xs = eager.tensor(rng.standard_normal((5, 2, 3)))

    def loss(w, xs):
        c, ys = static.scan(lambda h, x: (eager.tanh(h @ w + x), h), xs[0], xs)
        return c.sum() + ys.sum()

    traced = static.trace(static.grad(loss), w, xs)
    from codegen.native_gen import NativeModule
    from static.passes import run_pipeline

    g = run_pipeline(traced, [], row_regions=True, backend="native")
    module = NativeModule(g)
    module.source()
    scans = [n for n in g.nodes if n.op == "scan"]
    assert len(scans) >= 2 and any(n.attrs["reverse"] for n in scans)
    assert module.stats.get("loops", 0) == len(scans), module.describe()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_reductions_of_products_sum_as_numpy_does(dt, monkeypatch):
    """Sums and means left unfused (their operand a product or a concatenation) are written
    in C as np.add.reduce adds (in order over leading axes, pairwise over trailing ones):
    the Python loop's bits, at sizes on both sides of the pairwise blocks (8, 128)."""
    rng = np.random.default_rng(4)
    w = eager.tensor(rng.standard_normal((6, 300)).astype(dt))
    xs = eager.tensor(rng.standard_normal((4, 5, 6)).astype(dt))

    def model(w, xs):
        def step(c, x):
            p = x @ w                                     # (5, 300)
            q = eager.cat([p, p[:, :7]], 1)               # (5, 307)
            return c + p.sum(0)[:5] + q.sum(1) + p.mean(1) + q.mean() + p[:, :9].sum(1), q.mean(0)
        return static.scan(step, xs[0, 0, :5] * 0, xs)

    native, python, source = _both(model, w, xs, monkeypatch=monkeypatch)
    assert "as a C loop around its body's kernels" in source and "loops in Python" not in source
    _same_bits(native, python)


def test_a_cond_inside_a_loop_is_an_if_in_c(monkeypatch):
    """cond (a bool) and switch (an index, clamped) in a loop's body: each branch's kernels in
    one arm of a C if; a product inside a branch reaches BLAS through the loop's table. The
    index's % and the floor divisions are NumPy's (signs of negative operands included)."""
    rng = np.random.default_rng(6)
    w = eager.tensor(rng.standard_normal((4, 4)) * 0.5)
    xs = eager.tensor(rng.standard_normal((9, 4)))

    def model(w, xs):
        def step(c, x):
            h, k = c
            # (transcendentals in fused chains: a lone one after a product is NumPy's ufunc in the
            # Python loop, whose last bit can differ from the C helper's)
            h = static.cond(x.sum() > 0, lambda a: eager.tanh(a @ w + 1) * 2, lambda a: a * 0.5 - 1, h + x)
            y = static.switch(k % 4 - 1, [lambda a: a + 1, lambda a: eager.sin(a) * 2, lambda a: a @ w], h)
            y = y + (x * 3) % -1.7 + (k - 4) // 3 + (k * 7 - 20) % 3  # NumPy's floor semantics, in C
            return (h, k + 1), y
        return static.scan(step, (xs[0] * 0, eager.tensor(np.int64(0))), xs)

    native, python, source = _both(model, w, xs, monkeypatch=monkeypatch)
    assert "as a C loop around its body's kernels" in source and "loops in Python" not in source
    assert "the taken branch's kernels" in source
    _same_bits(native, python)
    for got, want in zip(native, _leaves(model(w, xs))):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_a_batched_while_loop_counts_in_c(monkeypatch):
    """vmap of a while_loop runs while any example's condition holds (a sum of integers, in a
    region the generator writes op by op): each example stops at its own trip count."""
    x = eager.tensor(np.array([1.0, 5.0, 20.0, 0.5]))

    def f(v):
        return static.while_loop(lambda c: c[1] > 1.0, lambda c: (c[0] + 1, c[1] * 0.5), (eager.tensor(np.int64(0)), v))

    native, python, source = _both(static.vmap(f), x, monkeypatch=monkeypatch)
    assert "as a C loop around its body's kernels" in source and "loops in Python" not in source
    _same_bits(native, python)
    np.testing.assert_array_equal(native[0], [0, 3, 5, 0])
    np.testing.assert_array_equal(native[1], [1.0, 0.625, 0.625, 0.5])


def test_an_op_without_a_c_form_falls_back_and_says_which(monkeypatch):
    """The Python loop runs, and explain() names every body op that forced it, with its line."""
    x = eager.tensor(np.arange(12.0).reshape(4, 3))

    def model(x):
        return static.scan(lambda c, r: (c + eager.cumsum(r, 0) + eager.cumprod(r, 0), c * 1.0), x[0] * 0, x)

    native, python, source = _both(model, x, monkeypatch=monkeypatch)
    _same_bits(native, python)
    assert "loops in Python: cumsum has no C form" in source and "= cumsum %" in source
    assert "cumprod has no C form" in source and "= cumprod %" in source
    monkeypatch.setenv("GRAPHMODE_NATIVE_LOOPS", "1")
    assert "(scan) loops in Python: cumsum" in static.compile(model, backend="native").explain(x)
    rows = np.asarray(x.numpy())
    np.testing.assert_array_equal(native[0], (np.cumsum(rows, 1) + np.cumprod(rows, 1)).sum(0))
