"""JAX as the oracle for structured control flow and the function transforms: the same
programs written once against a small namespace (ours: eager/static; JAX: jax.numpy/jax.lax),
on random inputs (fixed seeds), compared for values, reverse-mode gradients (where JAX has
them: not through a while_loop) and forward-mode JVPs, in eager mode (the Python loop, eager's
autograd, eager.func) and compiled by every CPU backend; then vmap, jacfwd, jacrev and hessian
against jax's. Float64 throughout (jax_enable_x64), so the tolerances are tight."""
from __future__ import annotations

import functools

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import eager  # noqa: E402
import static  # noqa: E402
from static import control_flow as cf  # noqa: E402

jax.config.update("jax_enable_x64", True)

MODES = ["eager", "numpy", "native"]
RTOL, ATOL = 1e-9, 1e-11


class Ours:
    sin, cos, tanh, exp = eager.sin, eager.cos, eager.tanh, eager.exp
    logical_and, where = eager.logical_and, eager.where
    cond, while_loop, fori_loop, scan = (staticmethod(cf.cond), staticmethod(cf.while_loop),
                                         staticmethod(cf.fori_loop), staticmethod(cf.scan))

    @staticmethod
    def arr(a):
        return eager.tensor(np.asarray(a))


class Jax:
    sin, cos, tanh, exp = jnp.sin, jnp.cos, jnp.tanh, jnp.exp
    logical_and, where = jnp.logical_and, jnp.where
    cond, while_loop, fori_loop, scan = (staticmethod(jax.lax.cond), staticmethod(jax.lax.while_loop),
                                         staticmethod(jax.lax.fori_loop), staticmethod(jax.lax.scan))

    @staticmethod
    def arr(a):
        return jnp.asarray(np.asarray(a))


# -- the programs: (m, x, w) -> a vector; x and w are the differentiated inputs -------------------
def p_cond(m, x, w):
    y = m.cond(x.sum() > 0, lambda a, b: m.sin(a) * b, lambda a, b: a * a - b, x, w)
    return m.cond(y.sum() < 0.5, lambda a: m.tanh(a) + 1.0, lambda a: a * 0.5, y)


def p_while(m, x, w):
    def cond(c):
        return m.logical_and(c[0] < 12, (c[1] * c[1]).sum() < 25.0)

    def body(c):
        i, h = c
        return i + 1, h * 1.25 + m.sin(h * w) * 0.5 + 0.05

    return m.while_loop(cond, body, (0, x))[1]


def p_fori(m, x, w):
    def body(i, h):
        return m.cond(i % 2 == 0, lambda a: m.tanh(a * w) + a, lambda a: m.sin(a) * 0.9, h)

    return m.fori_loop(1, 6, body, x)


def p_scan(m, x, w):
    xs = m.arr(np.linspace(-1.0, 1.0, 5 * x.shape[0]).reshape(5, x.shape[0]))

    def step(h, v):
        h = m.tanh(h * w + v) + 0.1 * h
        return h, (h * h).sum()

    h, ys = m.scan(step, x, xs)
    h2, ys2 = m.scan(step, h, xs * 0.5, reverse=True, unroll=2)
    return h2 * ys.sum() + ys2[0]


PROGRAMS = {"cond": p_cond, "while_loop": p_while, "fori_loop": p_fori, "scan": p_scan}
REVERSE = {"cond", "fori_loop", "scan"}  # JAX has no reverse mode through a while_loop


def _inputs(seed, n=3):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, n)
    w = rng.uniform(0.5, 1.5, n)
    return x, w, rng.standard_normal(n), rng.standard_normal(n), rng.standard_normal(n)


@functools.cache
def _jax(kind, name, seed):
    """JAX's answer, jitted (one XLA compilation instead of one per primitive) and kept for
    the three modes that compare with it."""
    x, w, tx, tw, ct = (jnp.asarray(a) for a in _inputs(seed))

    def f(a, b):
        return PROGRAMS[name](Jax, a, b)

    if kind == "value":
        return np.asarray(jax.jit(f)(x, w))
    if kind == "jvp":
        return np.asarray(jax.jit(lambda a, b, c, d: jax.jvp(f, (a, b), (c, d))[1])(x, w, tx, tw))
    if kind == "grad":
        return tuple(np.asarray(g) for g in jax.jit(jax.grad(lambda a, b: (f(a, b) * ct).sum(), argnums=(0, 1)))(x, w))
    if kind in ("jacfwd", "jacrev"):
        return np.asarray(jax.jit(getattr(jax, kind)(lambda a: f(a, w)))(x))
    if kind == "hessian":
        return np.asarray(jax.jit(jax.hessian(lambda a: (f(a, w) ** 2).sum()))(x))
    if kind == "vmap":
        xb = jnp.asarray(np.random.default_rng(seed).uniform(-1, 1, (4, 3)))
        return np.asarray(jax.jit(jax.vmap(lambda a: f(a, w)))(xb))
    raise ValueError(kind)


def _ours(name, mode):
    """The program as a function of eager tensors: run eagerly, or compiled by a backend."""
    def fn(x, w):
        return PROGRAMS[name](Ours, x, w)

    return fn if mode == "eager" else static.compile(fn, backend=mode)


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a.numpy() if hasattr(a, "numpy") else a), np.asarray(b),
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_values_gradients_and_jvps_agree_with_jax(name, mode):
    for seed in (list(PROGRAMS).index(name),):  # (one random input per program: the file runs in seconds)
        x, w, tx, tw, ct = _inputs(seed)
        X, W = eager.tensor(x), eager.tensor(w)
        _close(_ours(name, mode)(X, W), _jax("value", name, seed))
        # forward mode: the JVP along (tx, tw)
        if mode == "eager":
            _, ot = eager.func.jvp(_ours(name, "eager"), (X, W), (eager.tensor(tx), eager.tensor(tw)))
        else:
            _, ot = static.jvp(_ours(name, "eager"), (X, W), (eager.tensor(tx), eager.tensor(tw)), backend=mode)
        _close(ot, _jax("jvp", name, seed))
        if name not in REVERSE:
            continue

        # reverse mode: the gradient of <f(x, w), ct>
        def loss(a, b, name=name, ct=ct):
            return (PROGRAMS[name](Ours, a, b) * eager.tensor(ct)).sum()

        if mode == "eager":
            a, b = X.clone().requires_grad_(True), W.clone().requires_grad_(True)
            loss(a, b).backward()
            og = (a.grad, b.grad)
        else:
            og = static.compile(static.grad(loss, argnums=(0, 1)), backend=mode)(X, W)
        for o, j in zip(og, _jax("grad", name, seed)):
            _close(o, j)


@pytest.mark.parametrize("mode", MODES)
def test_while_loop_and_traced_fori_loop_refuse_reverse_mode_as_jax_does(mode):
    x, w, *_ = _inputs(5)
    with pytest.raises(ValueError, match="Reverse-mode differentiation does not work"):
        jax.grad(lambda a: p_while(Jax, a, jnp.asarray(w)).sum())(jnp.asarray(x))
    if mode == "eager":  # eager runs the Python loop: reverse mode goes through it, as PyTorch's would
        a = eager.tensor(x).requires_grad_(True)
        p_while(Ours, a, eager.tensor(w)).sum().backward()
        jt = jax.jacfwd(lambda v: p_while(Jax, v, jnp.asarray(w)).sum())(jnp.asarray(x))
        _close(a.grad, jt)
        return
    with pytest.raises(RuntimeError, match="Reverse-mode differentiation does not work for lax.while_loop"):
        static.compile(static.grad(lambda a: p_while(Ours, a, eager.tensor(w)).sum()), backend=mode)(eager.tensor(x))

    def traced_bounds(a, n):
        return cf.fori_loop(0, n, lambda i, h: eager.sin(h) * a, a)

    _, t = static.jvp(lambda a: traced_bounds(a, eager.tensor(4)), (eager.tensor(x),), (eager.tensor(w),),
                      backend=mode)
    _, jt = jax.jvp(lambda a: jax.lax.fori_loop(0, jnp.asarray(4), lambda i, h: jnp.sin(h) * a, a),
                    (jnp.asarray(x),), (jnp.asarray(w),))
    _close(t, jt)


@pytest.mark.parametrize("mode", MODES)
def test_jacobians_hessian_and_vmap_agree_with_jax(mode):
    seed = 7
    x, w, *_ = _inputs(seed)
    X, W = eager.tensor(x), eager.tensor(w)
    for name in PROGRAMS:
        def ours(a, name=name):
            return PROGRAMS[name](Ours, a, W)

        for kind in ("jacfwd", "jacrev") if name in REVERSE else ("jacfwd",):
            got = (getattr(eager.func, kind)(ours)(X) if mode == "eager"
                   else getattr(static, kind)(ours, backend=mode)(X))
            _close(got, _jax(kind, name, seed))
        xb = eager.tensor(np.random.default_rng(seed).uniform(-1, 1, (4, 3)))
        got = eager.func.vmap(ours)(xb) if mode == "eager" else static.vmap(ours, backend=mode)(xb)
        _close(got, _jax("vmap", name, seed))

    def scalar(a):
        return (p_fori(Ours, a, W) ** 2).sum()

    got = eager.func.hessian(scalar)(X) if mode == "eager" else static.hessian(scalar, backend=mode)(X)
    _close(got, _jax("hessian", "fori_loop", seed))


@functools.cache
def _per_example_expected():
    rng = np.random.default_rng(11)
    xb, w = rng.uniform(-1, 1, (4, 3)), rng.uniform(0.5, 1.5, 3)

    def loss(v, a):
        return (p_scan(Jax, a, v) ** 2).sum()

    return xb, w, np.asarray(jax.jit(jax.vmap(jax.grad(loss), in_axes=(None, 0)))(jnp.asarray(w), jnp.asarray(xb)))


@pytest.mark.parametrize("mode", MODES)
def test_per_example_gradients_through_a_scan_agree_with_jax(mode):
    xb, w, expected = _per_example_expected()

    def loss(v, a):
        return (p_scan(Ours, a, v) ** 2).sum()

    if mode == "eager":
        got = eager.func.vmap(eager.func.grad(loss), in_dims=(None, 0))(eager.tensor(w), eager.tensor(xb))
    else:
        got = static.vmap(static.grad(loss), in_dims=(None, 0), backend=mode)(eager.tensor(w), eager.tensor(xb))
    _close(got, expected)


def test_jacobians_of_pytree_outputs_and_aux_agree_with_jax():
    x = np.array([0.7, -1.1, 0.2])

    def ours(a):
        h = cf.fori_loop(0, 3, lambda i, c: eager.sin(c) * a, a)
        return ({"s": (h * a).sum(), "v": eager.tanh(h) * 2}, a[0] * h), h.sum()

    def theirs(a):
        h = jax.lax.fori_loop(0, 3, lambda i, c: jnp.sin(c) * a, a)
        return ({"s": (h * a).sum(), "v": jnp.tanh(h) * 2}, a[0] * h), h.sum()

    for kind in ("jacfwd", "jacrev"):
        got, aux = getattr(static, kind)(ours, has_aux=True)(eager.tensor(x))
        expected, j_aux = jax.jit(getattr(jax, kind)(theirs, has_aux=True))(jnp.asarray(x))
        _close(aux, j_aux)
        for key in ("s", "v"):
            _close(got[0][key], expected[0][key])
        _close(got[1], expected[1])


@pytest.mark.parametrize("mode", ["numpy", "native"])
def test_vmap_of_jvp_and_of_jacfwd_through_a_while_loop_agree_with_jax(mode):
    """Forward mode under vmap (batched primals): the whole batch's JVPs at once, a while_loop
    on the path included, as jax.vmap(jax.jvp) and jax.vmap(jax.jacfwd) give them."""
    xb, w = np.random.default_rng(3).uniform(-1, 1, (4, 3)), np.random.default_rng(4).uniform(0.5, 1.5, 3)
    tangent = np.linspace(-1.0, 1.0, 3)

    def ours(a):
        return p_while(Ours, a, eager.tensor(w))

    def theirs(a):
        return p_while(Jax, a, jnp.asarray(w))

    out, tan = static.vmap(lambda a: static.jvp(ours, (a,), (eager.tensor(tangent),)), backend=mode)(eager.tensor(xb))
    j_out, j_tan = jax.jit(jax.vmap(lambda a: jax.jvp(theirs, (a,), (jnp.asarray(tangent),))))(jnp.asarray(xb))
    _close(out, j_out)
    _close(tan, j_tan)
    jac = static.vmap(static.jacfwd(ours), backend=mode)(eager.tensor(xb))
    _close(jac, jax.jit(jax.vmap(jax.jacfwd(theirs)))(jnp.asarray(xb)))
