"""static.cond / switch / while_loop / fori_loop / scan: JAX's semantics, checked against the
Python loop run eagerly (values, and gradients through eager's autograd), in every CPU
backend; the IR they make (one node per loop, printed and parsed back); compile time that
does not grow with the trip count; JAX's errors for mismatched carries and branches."""
from __future__ import annotations

import time

import numpy as np
import pytest

import eager
import static
from eager import _higher_order_ops as hop
from static import control_flow as cf
from static.errors import TraceError

BACKENDS = ["interpret", "numpy", "native"]


def _compile(fn, backend):
    if backend == "native":
        from codegen import native  # noqa: PLC0415

        if native.auto_backend() != "native" and not _native_available():
            pytest.skip("no C++ compiler for the native backend")
    return static.compile(fn, backend=backend)


def _native_available() -> bool:
    try:
        static.compile(lambda x: x + 1, backend="native")(eager.ones(2))
    except Exception:  # noqa: BLE001 - any failure to build: not available here
        return False
    return True


def _t(a, grad=False):
    t = eager.tensor(np.asarray(a, dtype=np.float64))
    return t.requires_grad_(True) if grad else t


def _rnn(w, u, h0, xs):
    def step(h, x):
        h = eager.tanh(h @ w + x @ u)
        return h, (h * h).sum(-1)
    return cf.scan(step, h0, xs)


def _rnn_loss(w, u, h0, xs):
    h, ys = _rnn(w, u, h0, xs)
    return h.sum() + (ys.sum(-1) * eager.arange(ys.shape[0], dtype=ys.dtype)).sum()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("seed", [0, 1])
def test_scan_values_and_gradients_agree_with_the_python_loop(backend, seed):
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(2, 7)), int(rng.integers(1, 5))
    arrays = [rng.standard_normal((d, d)) * 0.5, rng.standard_normal((2, d)), rng.standard_normal((3, d)),
              rng.standard_normal((n, 3, 2))]
    eager_ins = [_t(a, grad=True) for a in arrays]
    h_e, ys_e = _rnn(*eager_ins)  # outside a trace: the Python loop
    loss = _rnn_loss(*eager_ins)
    loss.backward()
    h_s, ys_s = _compile(_rnn, backend)(*[_t(a) for a in arrays])
    np.testing.assert_allclose(h_s.numpy(), h_e.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ys_s.numpy(), ys_e.detach().numpy(), rtol=1e-10, atol=1e-12)
    grads = static.grad(_rnn_loss, argnums=(0, 1, 2, 3), backend=backend)(*[_t(a) for a in arrays])
    for g, t in zip(grads, eager_ins):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)


def test_scan_reverse_pytree_carry_and_length_without_xs():
    def f(a, xs):
        def step(c, x):
            return {"s": c["s"] + x, "p": c["p"] * 0.5 + x.sum()}, c["s"] * 2
        return cf.scan(step, {"s": a, "p": a.sum()}, xs, reverse=True)

    a, xs = _t(np.arange(3.0)), _t(np.random.default_rng(2).standard_normal((4, 3)))
    want = f(a, xs)
    got = static.compile(f)(a, xs)
    np.testing.assert_allclose(got[0]["s"].numpy(), want[0]["s"].numpy())
    np.testing.assert_allclose(got[0]["p"].numpy(), want[0]["p"].numpy())
    np.testing.assert_allclose(got[1].numpy(), want[1].numpy())
    # JAX's reverse scan: ys keep their index order, the carry runs from the end
    carry, ys = cf.scan(lambda c, x: (c + x, c), 0.0, np.arange(4.0), reverse=True)
    assert float(carry) == 6.0 and list(np.asarray(ys)) == [6.0, 5.0, 3.0, 0.0]

    def count(x):
        return cf.scan(lambda c, _: (c * 2.0, c), x, None, length=5)

    c, ys = static.compile(count)(_t(1.0))
    assert float(c) == 32.0 and ys.numpy().tolist() == [1, 2, 4, 8, 16]


@pytest.mark.parametrize("backend", BACKENDS)
def test_fori_loop_static_bounds_is_a_differentiable_scan(backend):
    def f(x, w):
        return cf.fori_loop(2, 9, lambda i, v: eager.sin(v * w) + i, x)

    x, w = np.random.default_rng(3).standard_normal((2, 4, 3))
    xe, we = _t(x, True), _t(w, True)
    f(xe, we).sum().backward()
    np.testing.assert_allclose(_compile(f, backend)(_t(x), _t(w)).numpy(), f(_t(x), _t(w)).numpy(), rtol=1e-12)
    gx, gw = static.grad(lambda x, w: f(x, w).sum(), argnums=(0, 1), backend=backend)(_t(x), _t(w))
    np.testing.assert_allclose(gx.numpy(), xe.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gw.numpy(), we.grad.numpy(), rtol=1e-10)


def test_fori_loop_with_traced_bounds_is_a_while_loop():
    def f(n, x):
        return cf.fori_loop(0, n, lambda i, v: v + i.to(v.dtype), x)

    g = static.trace(f, eager.tensor(5), _t(np.zeros(2)))
    assert [n.op for n in g.nodes].count("while_loop") == 1
    out = static.compile(f)(eager.tensor(5), _t(np.zeros(2)))
    np.testing.assert_allclose(out.numpy(), [10.0, 10.0])


def test_while_loop_runs_to_the_condition_and_refuses_reverse_mode():
    def f(x):
        return cf.while_loop(lambda c: c[1].sum() < 100.0, lambda c: (c[0] + 1, c[1] * 2.0 + 1.0), (0, x))

    x = _t([1.0, 2.0])
    n, y = static.compile(f)(x)
    n_e, y_e = f(x)
    assert int(n) == n_e == 5 and n.dtype == eager.int64
    np.testing.assert_allclose(y.numpy(), y_e.numpy())
    with pytest.raises(RuntimeError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        static.grad(lambda x: f(x)[1].sum())(x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_cond_runs_one_branch_and_differentiates_both(backend):
    def f(p, x, y):
        return cf.cond(p.sum() > 0, lambda a, b: (a * b, eager.exp(a)), lambda a, b: (eager.sin(a) + b, a * 3.0), x, y)

    def loss(p, x, y):
        u, v = f(p, x, y)
        return (u * u).sum() + v.sum()

    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((2, 5))
    compiled = _compile(f, backend)
    for sign in (1.0, -1.0):
        p = _t([sign])
        got, want = compiled(p, _t(x), _t(y)), f(p, _t(x), _t(y))
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
        xe, ye = _t(x, True), _t(y, True)
        loss(p, xe, ye).backward()
        gx, gy = static.grad(loss, argnums=(1, 2), backend=backend)(p, _t(x), _t(y))
        np.testing.assert_allclose(gx.numpy(), xe.grad.numpy(), rtol=1e-10)
        np.testing.assert_allclose(gy.numpy(), ye.grad.numpy(), rtol=1e-10)


def test_switch_clamps_its_index_and_cond_takes_integer_predicates():
    branches = [lambda x: x + 1.0, lambda x: x * 10.0, lambda x: -x]
    f = static.compile(lambda i, x: cf.switch(i, branches, x))
    x = _t([2.0])
    assert [float(f(eager.tensor(i), x)) for i in (-3, 0, 1, 2, 7)] == [3.0, 3.0, 20.0, -2.0, -2.0]
    g = static.compile(lambda n, x: cf.cond(n, lambda v: v + 1.0, lambda v: v - 1.0, x))
    assert float(g(eager.tensor(3), x)) == 3.0 and float(g(eager.tensor(0), x)) == 1.0


def test_bodies_read_outer_values_captured_tensors_and_nest():
    weight = _t(np.linspace(-1, 1, 3))

    def f(x, xs):
        scale = x.sum()  # an outer traced value read by the body

        def outer(c, row):
            inner, _ = cf.scan(lambda d, v: (d + v * weight, None), c, row.reshape(-1, 1).expand(-1, 3))
            return cf.cond(inner.sum() > 0, lambda a: a * scale, lambda a: a - scale, inner), inner.mean()
        return cf.scan(outer, x, xs)

    x, xs = _t([0.1, 0.2, 0.3]), _t(np.random.default_rng(5).standard_normal((4, 2)))
    want = f(x, xs)
    got = static.compile(f)(x, xs)
    np.testing.assert_allclose(got[0].numpy(), want[0].numpy(), rtol=1e-12)
    np.testing.assert_allclose(got[1].numpy(), want[1].numpy(), rtol=1e-12)
    ge = static.grad(lambda x, xs: f(x, xs)[0].sum(), argnums=(0, 1))(x, xs)
    xe, xse = _t(x.numpy(), True), _t(xs.numpy(), True)
    f(xe, xse)[0].sum().backward()
    np.testing.assert_allclose(ge[0].numpy(), xe.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ge[1].numpy(), xse.grad.numpy(), rtol=1e-10)


def test_one_node_per_loop_printed_parsed_and_run():
    g = static.trace(_rnn, *[_t(np.ones(s)) for s in ((2, 2), (3, 2), (1, 2), (6, 1, 3))])
    assert [n.op for n in g.nodes].count("scan") == 1
    text = str(g)
    assert "func @scan_body(" in text
    again = static.parse_ir(text)
    assert str(again) == text
    arrays = [np.random.default_rng(6).standard_normal(tuple(v.type.shape)) for v in g.inputs]
    for a, b in zip(static.run_graph(again, arrays), static.run_graph(g, arrays)):
        np.testing.assert_allclose(a, b)


def test_a_malformed_body_in_ir_text_is_a_verify_error():
    text = str(static.trace(_rnn, *[_t(np.ones(s)) for s in ((2, 2), (3, 2), (1, 2), (6, 1, 3))]))
    bad = text.replace("length = 6", "length = 5")
    with pytest.raises(ValueError, match="leading dimension 5"):
        static.parse_ir(bad)


def test_dead_code_inside_a_body_is_removed():
    def f(xs):
        def step(c, x):
            unused = eager.exp(x) * 3.0  # noqa: F841
            return c + x, c + x  # the same value twice: CSE keeps one add
        return cf.scan(step, eager.zeros(2, dtype=eager.float64), xs)

    body = static.trace(f, _t(np.ones((3, 2)))).nodes[-1].attrs["body"]
    assert "exp" not in body and body.count(" add ") == 1


def test_compile_time_of_a_fori_loop_does_not_grow_with_the_trip_count():
    def make(n):
        def f(x, w):
            return cf.fori_loop(0, n, lambda i, h: eager.tanh(h @ w + 0.1), x)
        return f

    x, w = _t(np.ones((4, 8))), _t(np.eye(8) * 0.5)
    make(3)(x, w)  # warm the imports
    static.compile(make(7))(x, w)
    times = {}
    for n in (10, 1000):
        f = make(n)
        sizes = static.trace(f, x, w).count_nodes()
        t0 = time.perf_counter()
        out = static.compile(f, backend="numpy")(x, w)
        times[n] = time.perf_counter() - t0
        assert sizes < 12
        if n == 1000:
            np.testing.assert_allclose(out.numpy(), make(1000)(x, w).numpy(), rtol=1e-12)
    assert static.trace(make(10), x, w).count_nodes() == static.trace(make(1000), x, w).count_nodes()
    assert times[1000] < 0.3 + times[10], times


def test_mismatched_carry_types_name_the_users_line():
    def f(x):
        return cf.scan(lambda c, v: (eager.cat([c, v]), v), x, eager.ones(3, 2))  # the carry grows

    with pytest.raises(TypeError, match=r"(?s)test_control_flow.py:\d+: scan body function carry input and carry output "
                                        r"must have equal types.*carry has type float32\[2\] but the corresponding "
                                        r"output carry component has type float32\[4\], so the shapes do not match"):
        static.compile(f)(eager.ones(2))

    def g(x):
        return cf.while_loop(lambda c: c.sum() < 3, lambda c: c.to(eager.float64), x)

    with pytest.raises(TypeError, match=r"(?s)test_control_flow.py:\d+: while_loop body .*float32\[2\] .*float64\[2\], so "
                                        "the dtypes do not match"):
        static.compile(g)(eager.ones(2))

    def h(x):
        return cf.scan(lambda c, v: ((c, c), v), x, eager.ones(3, 2))

    with pytest.raises(TypeError, match="same pytree structure"):
        static.compile(h)(eager.ones(2))


def test_branches_of_different_types_are_refused():
    def f(p, x):
        return cf.cond(p > 0, lambda a: a.sum(), lambda a: a, x)

    with pytest.raises(TypeError, match=r"test_control_flow.py:\d+: false_fun and true_fun output must have identical "
                                        r"types"):
        static.compile(f)(eager.tensor(1.0), eager.ones(3))
    with pytest.raises(TypeError, match="Pred must be a scalar"):
        static.compile(lambda p, x: cf.cond(p, lambda a: a, lambda a: a, x))(eager.ones(2) > 0, eager.ones(2))


def test_weakly_typed_number_carries_take_the_body_dtype():
    def f(x):
        return cf.fori_loop(0, 3, lambda i, c: c + x.sum(), 0.0)

    x = eager.ones(2, dtype=eager.float64)
    out = static.compile(f)(x)
    assert out.dtype == eager.float64 and float(out) == 6.0


def test_jvp_of_a_scan_matches_finite_differences():
    def f(x):
        return cf.scan(lambda c, v: (eager.sin(c) * v, c * v), x, eager.tensor(np.linspace(0.5, 1.5, 4)))[0]

    x, t = _t([0.3, -0.7, 1.1, 0.2]), _t([1.0, 0.5, -0.25, 2.0])
    _, tangent = static.jvp(f, (x,), (t,))
    eps = 1e-6
    fd = (f(_t(x.numpy() + eps * t.numpy())).numpy() - f(_t(x.numpy() - eps * t.numpy())).numpy()) / (2 * eps)
    np.testing.assert_allclose(tangent.numpy(), fd, rtol=1e-6, atol=1e-8)


def test_a_traced_value_leaking_out_of_a_body_is_refused():
    kept = []

    def f(x):
        def step(c, v):
            kept.append(c)
            return c + v, v
        cf.scan(step, x, eager.ones(2, 2))
        return kept[0] * 2

    with pytest.raises(TraceError):
        static.compile(f)(eager.ones(2))


def test_torch_spellings_through_the_front_door():
    x = eager.tensor([1.0, -2.0])
    f = eager.compile(lambda x: eager.cond(x.sum() > 0, lambda a: a * 2, lambda a: a - 1, (x,)))
    np.testing.assert_allclose(f(x).numpy(), (x - 1).numpy())
    assert eager.cond(True, lambda a: a * 2, lambda a: a - 1, (x,)).tolist() == [2.0, -4.0]
    n, v = hop.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2), (eager.tensor(0), x))
    assert int(n) == 3 and v.tolist() == [8.0, -16.0]
    sn, sv = static.compile(lambda x: hop.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2),
                                                       (eager.tensor(0), x)))(x)
    assert int(sn) == 3 and sv.tolist() == [8.0, -16.0]
    xs = eager.tensor(np.random.default_rng(7).standard_normal((3, 4)), dtype=eager.float32)
    c, ys = hop.scan(lambda c, x: (c + x, c * x), eager.zeros(3), xs, dim=1)
    cs, yss = static.compile(lambda xs: hop.scan(lambda c, x: (c + x, c * x), eager.zeros(3), xs, dim=1))(xs)
    np.testing.assert_allclose(cs.numpy(), c.numpy())
    np.testing.assert_allclose(yss.numpy(), ys.numpy())
    assert tuple(ys.shape) == (3, 4)


def test_torch_oracle_for_cond_and_the_loop_semantics():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(8).standard_normal(4).astype(np.float32)
    want = torch.cond(torch.tensor(x).sum() > 0, lambda a: a.cos(), lambda a: a.sin(), (torch.tensor(x),))
    got = static.compile(lambda t: eager.cond(t.sum() > 0, lambda a: a.cos(), lambda a: a.sin(), (t,)))(eager.tensor(x))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_the_cupy_module_of_a_loop_runs_on_the_host_stand_in():
    """The CuPy generator's module for a graph with a scan and a cond, run by the tests' host
    stand-in for CuPy (its kernels compiled with the host C++ compiler): the loop node calls
    the op's forward with the module's `cp`, which runs the body on that array module."""
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    from codegen import native_build  # noqa: PLC0415

    if not native_build.availability()[0]:
        pytest.skip("no host C++ compiler for the CuPy stand-in")
    sys.path.insert(0, str(Path(__file__).parents[1] / "codegen"))
    from cuda_host import HostCupy  # noqa: PLC0415

    import codegen  # noqa: PLC0415

    def f(w, h0, xs):
        h, ys = _rnn(w, w, h0, xs)
        return cf.cond(h.sum() > 0, lambda a: a * 2.0, lambda a: a - 1.0, ys)

    rng = np.random.default_rng(9)
    arrays = [rng.standard_normal((2, 2)), rng.standard_normal((2, 2)), rng.standard_normal((5, 2, 2))]
    graph = static.trace(f, *[_t(a) for a in arrays])
    assert len(graph.inputs) == 3
    cp = HostCupy()
    namespace = cp.load(codegen.generate_source(graph, "cupy")[0], "cupy_loop")
    got = namespace["forward"](*arrays)
    want = f(*[_t(a) for a in arrays])
    np.testing.assert_allclose(np.asarray(got[0]), want.numpy(), rtol=1e-12)


def test_vmap_over_scan_and_cond_in_both_modes_and_per_example_gradients():
    from eager.func import grad, vmap  # noqa: PLC0415

    rng = np.random.default_rng(10)
    w, xs = _t(rng.standard_normal((3, 3)) * 0.5), _t(rng.standard_normal((4, 6, 3)))

    def rnn(w, x):
        h, ys = cf.scan(lambda h, v: (eager.tanh(h @ w + v), h.sum()), eager.zeros(3, dtype=w.dtype), x)
        return cf.cond(h.sum() > 0, lambda a: a * 2.0, lambda a: -a, ys)  # a batched predicate: a select

    loop = np.stack([rnn(w, xs[i]).numpy() for i in range(4)])
    np.testing.assert_allclose(vmap(rnn, in_dims=(None, 0))(w, xs).numpy(), loop, rtol=1e-12)
    np.testing.assert_allclose(static.vmap(rnn, in_dims=(None, 0))(w, xs).numpy(), loop, rtol=1e-12)
    graph = static.trace(lambda w, xs: vmap(rnn, in_dims=(None, 0))(w, xs), w, xs)
    assert [n.op for n in graph.nodes].count("scan") == 1  # one loop over the whole batch

    def loss(w, x):
        return rnn(w, x).sum()

    want = np.stack([grad(loss)(w, xs[i]).numpy() for i in range(4)])
    # the body reads the per-example weights from its closure: the loop is traced on the batch
    got = static.vmap(static.grad(loss), in_dims=(None, 0))(w, xs)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-10)
    np.testing.assert_allclose(vmap(grad(loss), in_dims=(None, 0))(w, xs).numpy(), want, rtol=1e-10)

    def decay(s):  # only the closure is batched: the first trace finds out, the second runs on the batch
        return cf.scan(lambda h, v: (h * s + v, h), eager.zeros(3, dtype=s.dtype), xs[0])[0]

    scales = _t([0.5, -1.0, 2.0])
    want_d = np.stack([decay(scales[i]).numpy() for i in range(3)])
    np.testing.assert_allclose(static.vmap(decay)(scales).numpy(), want_d, rtol=1e-12)


def test_results_of_a_loop_nobody_reads_are_not_computed():
    def f(w, xs):
        h, (ys, zs) = cf.scan(lambda h, x: (eager.tanh(h * w + x), (eager.exp(h).sum(), h * 2)),
                              eager.zeros(3, dtype=w.dtype), xs)
        return h, zs

    w, xs = _t(np.random.default_rng(11).standard_normal(3)), _t(np.random.default_rng(12).standard_normal((4, 3)))
    graph = static.trace(f, w, xs)
    from static.passes.simplify import dce  # noqa: PLC0415

    dce(graph)
    (node,) = [n for n in graph.nodes if n.op == "scan"]
    assert "exp" not in node.attrs["body"] and len(node.outputs) == 2
    got = static.run_graph(graph, [w.numpy(), xs.numpy(), np.zeros(3)][:len(graph.inputs)])
    want = f(w, xs)
    np.testing.assert_allclose(got[1], want[1].numpy(), rtol=1e-12)


def test_scan_bench_quick_runs(tmp_path, monkeypatch, capsys):
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    monkeypatch.syspath_prepend(str(Path(__file__).parents[2] / "benchmarks"))
    monkeypatch.setenv("GRAPHMODE_CACHE_DIR", str(tmp_path / "cache"))
    sys.modules.pop("scan_bench", None)
    import scan_bench  # noqa: PLC0415

    out = tmp_path / "scan.json"
    assert scan_bench.main(["--quick", "--steps", "6", "--backends", "numpy", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "scan/unrolled" in printed and out.exists()


def test_while_loop_condition_must_be_a_boolean_scalar():
    with pytest.raises(TypeError, match=r"test_control_flow.py:\d+: cond_fun must return a boolean scalar, but got "
                                        r"output type\(s\) \[float32\[\]\]"):
        static.compile(lambda x: cf.while_loop(lambda c: c.sum(), lambda c: c * 2, x))(eager.ones(2))


def _newton_sqrt(a):
    """Per-example trip counts: each example iterates until its own value converged."""
    def cond(c):
        x, i = c
        return ((x * x - a).abs() > 1e-10) & (i < 50)

    def body(c):
        x, i = c
        return (x + a / x) * 0.5, i + 1

    return cf.while_loop(cond, body, (a * 0 + 1.0, 0))


def test_vmap_over_while_loop_runs_each_example_to_its_own_condition():
    from eager.func import vmap  # noqa: PLC0415

    a = _t([2.0, 9.0, 100.0, 1.0])
    want = [_newton_sqrt(a[i]) for i in range(4)]
    for mapped in (vmap(_newton_sqrt), static.vmap(_newton_sqrt)):
        x, n = mapped(a)
        np.testing.assert_allclose(x.numpy(), [float(w[0]) for w in want], rtol=1e-12)
        assert n.tolist() == [int(w[1]) for w in want] == [4, 6, 8, 0]
    # the op's own rule (a while_loop node applied to batched operands) agrees too
    graph_fn = static.compile(lambda a: eager.func.vmap(_newton_sqrt)(a))
    np.testing.assert_allclose(graph_fn(a)[0].numpy(), [float(w[0]) for w in want], rtol=1e-12)


def test_torch_cond_under_vmap_selects_per_example():
    from eager.func import vmap  # noqa: PLC0415

    x = _t([[1.0, 2.0], [-3.0, 1.0], [0.5, -4.0]])
    f = lambda v: eager.cond(v.sum() > 0, lambda a: a * 10.0, lambda a: a - 1.0, (v,))  # noqa: E731
    want = np.stack([f(x[i]).numpy() for i in range(3)])
    np.testing.assert_allclose(vmap(f)(x).numpy(), want)
    np.testing.assert_allclose(static.vmap(f)(x).numpy(), want)


def test_reverse_mode_saves_the_costly_steps_and_runs_the_forward_loop_once(monkeypatch):
    """The VJP's forward saves each step's carry and matmul results (residuals); CSE merges it
    with the forward, and the backward body reads the saved products instead of recomputing
    them: four matmuls in the backward of two, none of the forward's again."""
    ran: list = []
    real = cf.runner

    def counting(text, xp, backend="numpy"):
        ran.append(text.split("(")[0])
        return real(text, xp, backend)

    monkeypatch.setattr(cf, "runner", counting)
    rng = np.random.default_rng(13)
    w, u, xs = _t(rng.standard_normal((3, 3))), _t(rng.standard_normal((4, 3))), _t(rng.standard_normal((5, 2, 4)))

    def loss(w, u, xs):
        h, ys = cf.scan(lambda h, x: (eager.tanh(h @ w + x @ u), (h * h).sum()), eager.zeros(2, 3, dtype=w.dtype), xs)
        return (h * h).sum() + ys.sum()

    grads = static.grad(loss, argnums=(0, 1, 2))(w, u, xs)
    assert sorted(ran) == ["func @scan_body", "func @scan_vjp"]  # each loop once
    ins = [t.detach().requires_grad_(True) for t in (w, u, xs)]
    loss(*ins).backward()
    for g, t in zip(grads, ins):
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-14)
    graph = static.trace(lambda w, u, xs: static.grad(loss, argnums=(0,))(w, u, xs), w, u, xs)
    (backward,) = [n for n in graph.nodes if n.op == "scan" and n.attrs["body"].startswith("func @scan_vjp")]
    assert backward.attrs["body"].count("= matmul") == 4


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_loop_body_runs_on_the_backend_of_its_graph(backend, monkeypatch):
    seen: list = []
    real = cf.runner

    def spy(text, xp, which="numpy"):
        seen.append(which)
        return real(text, xp, which)

    monkeypatch.setattr(cf, "runner", spy)
    # (the native driver's own C loops, on by default, never ask: tests/codegen/test_native_loops.py)
    monkeypatch.setenv("GRAPHMODE_NATIVE_LOOPS", "0")
    f = _compile(lambda w, xs: cf.scan(lambda h, x: (eager.tanh(h * w + x), h.sum()), eager.zeros(3, dtype=w.dtype),
                                       xs), backend)
    f(_t(np.ones(3)), _t(np.ones((4, 3))))
    assert seen == [backend]


def test_jvp_of_a_cond_is_the_taken_branch_derivative():
    def f(x):
        return cf.cond(x.sum() > 0, lambda a: eager.sin(a) * a, lambda a: a ** 3, x)

    t = _t([1.0, -2.0, 0.5])
    for x in (_t([0.3, 0.2, 0.1]), _t([-0.3, 0.2, -0.4])):
        _, tangent = static.jvp(f, (x,), (t,))
        a = x.numpy()
        d = (np.cos(a) * a + np.sin(a)) if a.sum() > 0 else 3 * a ** 2
        np.testing.assert_allclose(tangent.numpy(), d * t.numpy(), rtol=1e-12)
