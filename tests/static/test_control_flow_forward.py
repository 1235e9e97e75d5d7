"""Forward mode through structured control flow (static.jvp, static.jacfwd, eager.func.jvp):
a while_loop (no reverse mode) and a fori_loop with traced bounds differentiate forwards, with
the tangent carried along as JAX's rule does; scan and cond push tangents through their bodies'
JVPs. And scan/fori_loop `unroll=` (JAX's semantics: values of the rolled loop, k body copies
per trip, True for the whole loop)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from static import control_flow as cf

BACKENDS = ["interpret", "numpy", "native"]


def _t(a):
    return eager.tensor(np.asarray(a, dtype=np.float64))


def _fd(f, x, t, eps=1e-6):
    """The central difference of f at x along t (NumPy in, NumPy out)."""
    return (f(_t(x + eps * t)).numpy() - f(_t(x - eps * t)).numpy()) / (2 * eps)


def _while_fn(x):
    def cond(c):
        return c[1].sum() < 40.0

    def body(c):
        i, h = c
        return i + 1, h * 1.3 + eager.sin(h) * (h.sum() * 0.1)

    return cf.while_loop(cond, body, (0, x))[1]


def _fori_traced(x, n):
    return cf.fori_loop(0, n, lambda i, h: eager.tanh(h) * 1.5 + h.sum() * 0.1, x)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_through_a_while_loop_matches_finite_differences(backend):
    x, t = np.array([0.3, -0.2, 0.5]), np.array([1.0, 0.5, -0.25])
    fn = static.compile(lambda a, d: static.jvp(_while_fn, (a,), (d,)), backend=backend)
    out, tangent = fn(_t(x), _t(t))
    np.testing.assert_allclose(out.numpy(), _while_fn(_t(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), _fd(_while_fn, x, t), rtol=1e-6, atol=1e-8)
    text = fn.lower(_t(x), _t(t)).as_text()
    # the tangent rides in the loop: one while_loop over (carry, tangent), whose carry is also the value
    assert "while_body_jvp" in text and text.count("= while_loop") == 1, text


def test_jvp_through_fori_loop_with_traced_bounds_and_its_reverse_mode_is_refused():
    x, t = np.array([0.1, 0.4]), np.array([0.7, -1.0])
    n = eager.tensor(5)
    _, tangent = static.jvp(lambda a: _fori_traced(a, n), (_t(x),), (_t(t),))
    np.testing.assert_allclose(tangent.numpy(), _fd(lambda a: _fori_traced(a, n), x, t), rtol=1e-6, atol=1e-8)
    with pytest.raises(RuntimeError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        static.compile(static.grad(lambda a: _while_fn(a).sum()))(_t(x[:1]))


def test_jvp_of_a_scan_holding_a_while_loop_and_of_a_cond_inside_a_loop():
    def inner(h):
        return cf.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, eager.sin(c[1]) + c[1]), (0, h))[1]

    def f(x):
        def step(h, v):
            h = inner(h * v)
            h = cf.cond(h.sum() > 0, lambda a: a * a, lambda a: -a, h)
            return h, h.sum()

        h, ys = cf.scan(step, x, _t([0.9, 1.1, 0.8]))
        return h * ys.sum()

    x, t = np.array([0.2, 0.3]), np.array([1.0, -0.5])
    _, tangent = static.jvp(f, (_t(x),), (_t(t),))
    np.testing.assert_allclose(tangent.numpy(), _fd(f, x, t), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_jacfwd_is_forward_mode_and_goes_through_a_while_loop(backend):
    x = np.array([0.3, -0.2, 0.5])
    jac = static.jacfwd(_while_fn, backend=backend)(_t(x))
    cols = [_fd(_while_fn, x, e) for e in np.eye(3)]
    np.testing.assert_allclose(jac.numpy(), np.stack(cols, -1), rtol=1e-6, atol=1e-8)
    # jacrev cannot: reverse mode through a while_loop is refused, as in JAX
    with pytest.raises(RuntimeError, match="while_loop"):
        static.jacrev(_while_fn, backend=backend)(_t(x))


def test_jacfwd_agrees_with_jacrev_for_several_arguments_and_pytree_outputs():
    rng = np.random.default_rng(3)
    a = _t(rng.standard_normal((3, 4)))

    def f(x, y):
        return {"u": eager.tanh(a @ x) * y.sum(), "v": (x * x).sum()}

    x, y = _t(rng.standard_normal(4)), _t(rng.standard_normal(2))
    fwd = static.jacfwd(f, argnums=(0, 1))(x, y)
    for key, (dx, dy) in fwd.items():
        rev = static.jacrev(lambda p, q, key=key: f(p, q)[key], argnums=(0, 1))(x, y)
        np.testing.assert_allclose(dx.numpy(), rev[0].numpy(), rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(dy.numpy(), rev[1].numpy(), rtol=1e-12, atol=1e-14)
    assert tuple(fwd["u"][0].shape) == (3, 4) and tuple(fwd["v"][1].shape) == (2,)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_eager_jvp_matches_torch_func_jvp_through_python_loops():
    torch = pytest.importorskip("torch")
    x, t = np.array([0.3, 0.7, 1.1]), np.array([1.0, 0.5, -2.0])

    def ours(a):
        return cf.while_loop(lambda c: c[0] < 4, lambda c: (c[0] + 1, eager.sin(c[1]) * 1.3 + c[1].sum()), (0, a))[1]

    def theirs(a):
        for _ in range(4):
            a = torch.sin(a) * 1.3 + a.sum()
        return a

    out, tangent = eager.func.jvp(ours, (_t(x),), (_t(t),))
    t_out, t_tangent = torch.func.jvp(theirs, (torch.tensor(x),), (torch.tensor(t),))
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tangent.numpy(), t_tangent.numpy(), rtol=1e-12)
    assert not tangent.requires_grad and not out.requires_grad
    # several primals and outputs, aux
    o, d, aux = eager.func.jvp(lambda p, q: ((p * q, p.sum()), {"k": p}), (_t(x), _t(2 * x)), (_t(t), _t(t)),
                               has_aux=True)
    to, td = torch.func.jvp(lambda p, q: (p * q, p.sum()), (torch.tensor(x), torch.tensor(2 * x)),
                            (torch.tensor(t), torch.tensor(t)))
    for a, b in zip(list(o) + list(d), list(to) + list(td)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    assert not aux["k"].requires_grad
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        eager.func.jvp(ours, _t(x), (_t(t),))
    with pytest.raises(RuntimeError, match="same python structure"):
        eager.func.jvp(ours, (_t(x),), [_t(t)])
    with pytest.raises(RuntimeError, match="different size"):
        eager.func.jvp(ours, (_t(x),), (_t(t[:2]),))


def _rnn(unroll, reverse, w):
    def f(h0, xs):
        def step(h, x):
            h = eager.tanh(h @ w + x)
            return h, {"s": h.sum(), "h2": h * 2}

        return cf.scan(step, h0, xs, reverse=reverse, unroll=unroll)

    return f


@pytest.mark.parametrize("backend", ["interpret", "numpy", "native"])
def test_scan_unroll_gives_the_rolled_values_with_k_body_copies_per_trip(backend):
    rng = np.random.default_rng(0)
    w, xs, h0 = _t(rng.standard_normal((3, 3)) * 0.5), _t(rng.standard_normal((7, 3))), _t(rng.standard_normal(3))
    for reverse in (False, True):
        ref = _rnn(1, reverse, w)(h0, xs)  # the Python loop
        for unroll, loops, copies in ((2, 1, 3), (3, 1, 4), (7, 0, 7), (True, 0, 7), (0, 0, 7), (False, 1, 1)):
            fn = static.compile(_rnn(unroll, reverse, w), backend=backend)
            carry, ys = fn(h0, xs)
            np.testing.assert_allclose(carry.numpy(), ref[0].numpy(), rtol=1e-12, atol=1e-14)
            for key in ("s", "h2"):
                np.testing.assert_allclose(ys[key].numpy(), ref[1][key].numpy(), rtol=1e-12, atol=1e-14)
            text = fn.lower(h0, xs).as_text()
            # length 7 in trips of k: 7 // k trips of k copies, the 7 % k left unrolled after the loop
            assert text.count("= scan") == loops and text.count("tanh") == copies, (unroll, text)
    # gradients through an unrolled scan are the rolled one's
    g1 = static.compile(static.grad(lambda h: _rnn(1, False, w)(h, xs)[0].sum()))(h0)
    g3 = static.compile(static.grad(lambda h: _rnn(3, False, w)(h, xs)[0].sum()))(h0)
    np.testing.assert_allclose(g3.numpy(), g1.numpy(), rtol=1e-12)


def test_fori_loop_unroll_and_jax_errors():
    def f(x):
        return cf.fori_loop(0, 10, lambda i, c: c * 1.1 + i, x, unroll=3)

    ref = cf.fori_loop(0, 10, lambda i, c: c * 1.1 + i, eager.ones(2, dtype=eager.float64))
    np.testing.assert_allclose(static.compile(f)(eager.ones(2, dtype=eager.float64)).numpy(), ref.numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="Can only use `unroll` in `fori_loop` if the loop bounds are statically"):
        static.compile(lambda x, n: cf.fori_loop(0, n, lambda i, c: c + 1, x, unroll=2))(eager.ones(2), eager.tensor(3))
    with pytest.raises(ValueError, match="`unroll` must be a `bool` or a non-negative `int`"):
        cf.scan(lambda c, x: (c, x), eager.ones(2), eager.ones(3, 2), unroll=-1)
    with pytest.raises(TypeError, match="unroll"):
        cf.scan(lambda c, x: (c, x), eager.ones(2), eager.ones(3, 2), unroll=1.5)


def test_an_unrolled_carry_of_another_type_names_the_users_line():
    def f(x):
        return cf.scan(lambda c, v: (eager.cat([c, v]), v), x, eager.ones(4, 2), unroll=True)

    with pytest.raises(TypeError, match=r"(?s)test_control_flow_forward.py:\d+: scan body function carry input and "
                                        r"carry output must have equal types.*float32\[2\].*float32\[4\]"):
        static.compile(f)(eager.ones(2))


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_mismatched_carries_name_the_users_line_in_both_modes(mode):
    """JAX's TypeErrors for a carry that changes type, naming the line of the loop's call, for
    the Python loop (eager mode) as for the traced one."""
    run = (lambda f, *a: f(*a)) if mode == "eager" else (lambda f, *a: static.compile(f)(*a))
    x = eager.ones(2)
    line = r"test_control_flow_forward.py:\d+: "
    cases = [
        (lambda a: cf.scan(lambda c, v: (eager.cat([c, v]), v), a, eager.ones(3, 2)),
         "scan body function carry input and carry output must have equal types.*float32\\[2\\].*float32\\[4\\].*"
         "shapes do not match"),
        (lambda a: cf.fori_loop(0, 3, lambda i, c: c.to(eager.float64), a),
         "carry input and carry output must have equal types.*float32\\[2\\].*float64\\[2\\].*dtypes do not match"),
        (lambda a: cf.fori_loop(0, eager.tensor(3) if mode == "compiled" else 3, lambda i, c: c.sum(), a),
         "carry input and carry output must have equal types.*float32\\[2\\].*float32\\[\\].*shapes do not match"),
        (lambda a: cf.while_loop(lambda c: c.sum() < 9, lambda c: (c, c), a), "same pytree structure"),
        (lambda a: cf.while_loop(lambda c: c.sum() < 9, lambda c: c.to(eager.float64) * 2, a),
         "while_loop body function carry input and carry output must have equal types.*dtypes do not match"),
        (lambda a: cf.while_loop(lambda c: c, lambda c: c * 2, a), "cond_fun must return a boolean scalar"),
    ]
    for fn, message in cases:
        with pytest.raises(TypeError, match=f"(?s){line}.*{message}"):
            run(fn, x)
    # a weakly typed Python number may come back as a tensor of the body's dtype, in both modes
    out = run(lambda a: cf.fori_loop(0, 3, lambda i, c: c + a.sum(), 0.0), x.to(eager.float64))
    assert float(out) == 6.0


def test_eager_vmap_of_jvp_gives_the_jacobian_columns():
    """torch.func.jacfwd's construction in eager mode: vmap of jvp over the basis tangents."""
    x = _t([0.3, 0.5, 0.9])

    def f(a):
        return cf.while_loop(lambda c: c[0] < 3, lambda c: (c[0] + 1, eager.sin(c[1]) * c[1].sum()), (0, a))[1]

    cols = eager.func.vmap(lambda t: eager.func.jvp(f, (x,), (t,))[1])(eager.eye(3, dtype=eager.float64))
    np.testing.assert_allclose(cols.numpy().T, eager.func.jacrev(f)(x).numpy(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_eager_jvp_under_vmap_of_batched_primals_matches_torch():
    torch = pytest.importorskip("torch")
    x, t = np.random.default_rng(0).standard_normal((4, 3)), np.linspace(-1, 1, 12).reshape(4, 3)
    o, d = eager.func.vmap(lambda a, b: eager.func.jvp(lambda z: eager.sin(z) * z.sum(), (a,), (b,)))(_t(x), _t(t))
    to, td = torch.func.vmap(lambda a, b: torch.func.jvp(lambda z: torch.sin(z) * z.sum(), (a,), (b,)))(
        torch.tensor(x), torch.tensor(t))
    np.testing.assert_allclose(o.numpy(), to.numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.numpy(), td.numpy(), rtol=1e-12)


@pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::UserWarning")  # (torch.func's own warnings)
def test_eager_linearize_matches_torch_func_linearize():
    torch = pytest.importorskip("torch")
    x = np.array([0.3, 0.5])

    def ours(a, b):
        return cf.fori_loop(0, 3, lambda i, c: eager.sin(c) * b, a), b.sum()

    def theirs(a, b):
        for _ in range(3):
            a = torch.sin(a) * b
        return a, b.sum()

    out, fn = eager.func.linearize(ours, _t(x), _t(2 * x))
    t_out, t_fn = torch.func.linearize(theirs, torch.tensor(x), torch.tensor(2 * x))
    for a, b in zip(list(out) + list(fn(_t([1.0, -1.0]), _t([0.5, 2.0]))),
                    list(t_out) + list(t_fn(torch.tensor([1.0, -1.0], dtype=torch.float64),
                                            torch.tensor([0.5, 2.0], dtype=torch.float64)))):
        np.testing.assert_allclose(a.numpy(), b.detach().numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError, match="doesn't match the shape"):
        fn(_t([1.0, 2.0, 3.0]), _t(x))
    with pytest.raises(RuntimeError, match="same argspec"):
        fn(_t(x))


def test_eager_cond_checks_both_branches_types_naming_the_line():
    """JAX checks every branch even where one runs: eager mode traces the branches once (no
    array computed) and raises the traced cond's TypeError; a branch that needs values in
    Python is not traced and still runs."""
    x = eager.ones(3)
    with pytest.raises(TypeError, match=r"test_control_flow_forward.py:\d+: false_fun and true_fun output must have "
                                        r"identical types"):
        cf.cond(True, lambda a: a * 2, lambda a: a.sum(), x)
    with pytest.raises(TypeError, match=r"test_control_flow_forward.py:\d+: branch 0 and branch 1 output must have "
                                        r"identical types"):
        cf.switch(1, [lambda a: a, lambda a: a.to(eager.float64)], x)
    np.testing.assert_allclose(cf.cond(True, lambda a: a * 2, lambda a: a - 1, x).numpy(), [2.0, 2.0, 2.0])
    out = cf.cond(False, lambda a: a * float(a.sum().item()), lambda a: a + 1, x)
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0, 2.0])
