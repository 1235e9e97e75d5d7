"""eager.func.jacfwd against torch.func.jacfwd: values for pytree outputs, tuple argnums,
has_aux, composition (hessian, jacfwd of jacrev and of jacfwd, vmap of jacfwd), the argnums
and dtype errors torch raises, and vmap's randomness rule for functions that draw."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import func as ef

torch = pytest.importorskip("torch")
tf = pytest.importorskip("torch.func")

RNG = np.random.default_rng(7)
A, B, C = RNG.standard_normal((3, 2)), RNG.standard_normal(2), RNG.standard_normal((2, 2))


def _same(ours, theirs, path="jac"):
    if isinstance(theirs, (tuple, list)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs), path
        for k, (a, b) in enumerate(zip(ours, theirs)):
            _same(a, b, f"{path}[{k}]")
    elif isinstance(theirs, dict):
        assert set(ours) == set(theirs), path
        for k in theirs:
            _same(ours[k], theirs[k], f"{path}[{k!r}]")
    else:
        assert tuple(ours.shape) == tuple(theirs.shape), (path, ours.shape, theirs.shape)
        np.testing.assert_allclose(ours.numpy(), theirs.detach().numpy(), rtol=1e-7, atol=1e-10, err_msg=path)


CASES = {
    "elementwise": (lambda ns: lambda x: ns.sin(x) * 2, (A,), {}),
    "pytree_out_two_args": (lambda ns: lambda x, y: {"a": x @ y, "b": (x.sum(), y * y)}, (A, B), {"argnums": (0, 1)}),
    "second_arg": (lambda ns: lambda x, y: (x @ y).exp(), (A, B), {"argnums": 1}),
    "has_aux": (lambda ns: lambda x, y: ((x @ y).tanh(), {"aux": x.sum()}), (A, B), {"argnums": (1,), "has_aux": True}),
    "scalar_out": (lambda ns: lambda x: (x * x).sum(), (C,), {}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_jacfwd_matches_torch(case):
    make, args, kw = CASES[case]
    theirs = tf.jacfwd(make(torch), **kw)(*[torch.tensor(a) for a in args])
    ours = ef.jacfwd(make(eager), **kw)(*[eager.tensor(a) for a in args])
    _same(ours, theirs)


def test_jacfwd_compositions_match_torch():
    def f(ns):
        return lambda x: (ns.sin(x) ** 2).sum() * x.prod()

    for ours_t, theirs_t, arg in (
            (ef.hessian(f(eager)), tf.hessian(f(torch)), C),
            (ef.jacfwd(ef.jacrev(f(eager))), tf.jacfwd(tf.jacrev(f(torch))), B),
            (ef.jacfwd(ef.jacfwd(f(eager))), tf.jacfwd(tf.jacfwd(f(torch))), B),
            (ef.vmap(ef.jacfwd(lambda x: eager.sin(x) * x.sum())), tf.vmap(tf.jacfwd(lambda x: torch.sin(x) * x.sum())),
             A)):
        _same(ours_t(eager.tensor(arg)), theirs_t(torch.tensor(arg)))


@pytest.mark.parametrize("argnums", [2, (), (0, 0)])
def test_jacfwd_argnums_errors_match_torch(argnums):
    with pytest.raises(RuntimeError) as theirs:
        tf.jacfwd(lambda x: x * 2, argnums=argnums)(torch.ones(3))
    with pytest.raises(RuntimeError) as ours:
        ef.jacfwd(lambda x: x * 2, argnums=argnums)(eager.ones(3))
    assert str(ours.value) == str(theirs.value)


def test_jacfwd_of_an_integer_input_raises_as_torch():
    with pytest.raises(ValueError, match="Expected primal to be floating point") as theirs:
        tf.jacfwd(lambda x: x * 2)(torch.arange(3))
    with pytest.raises(ValueError, match="Expected primal to be floating point") as ours:
        ef.jacfwd(lambda x: x * 2)(eager.arange(3))
    assert str(ours.value).split(":")[0] == str(theirs.value).split(":")[0]


def test_jacfwd_randomness_follows_vmap():
    with pytest.raises(RuntimeError, match="randomness error mode"):
        tf.jacfwd(lambda x: torch.rand(2) * x)(torch.ones(2))
    with pytest.raises(RuntimeError, match="randomness error mode"):
        ef.jacfwd(lambda x: eager.rand(2) * x)(eager.ones(2))
    # "same": one draw shared by the columns, so the Jacobian of r * x is diag(r)
    jac = ef.jacfwd(lambda x: eager.rand(2) * x, randomness="same")(eager.ones(2)).numpy()
    assert jac.shape == (2, 2) and jac[0, 1] == 0 and jac[1, 0] == 0 and 0 < jac[0, 0] < 1 and 0 < jac[1, 1] < 1
    # "different": each column its own draw (torch's shape; the diagonal still the draws')
    jac = ef.jacfwd(lambda x: eager.rand(2) * x, randomness="different")(eager.ones(2)).numpy()
    assert jac.shape == (2, 2) and jac[0, 1] == 0 and jac[1, 0] == 0 and 0 < jac[0, 0] < 1


def test_jacfwd_is_a_forward_push_of_the_identity():
    """Each column is a jvp along a unit tangent (not a row of a reverse pass): a function
    whose Jacobian is not symmetric gives J, not its transpose."""
    m = RNG.standard_normal((2, 3))
    jac = ef.jacfwd(lambda x: eager.tensor(m) @ x)(eager.ones(3, dtype=eager.float64)).numpy()
    np.testing.assert_allclose(jac, m, rtol=1e-12)
    col = ef.jvp(lambda x: eager.tensor(m) @ x, (eager.ones(3, dtype=eager.float64),), (eager.tensor(np.eye(3)[1]),))[1].numpy()
    np.testing.assert_allclose(jac[:, 1], col, rtol=1e-12)


def test_jacfwd_pushed_columns_agree_with_the_batched_rows():
    """randomness="same" pushes the identity's columns through jvp under vmap; the default
    (a tensor output, no draws) takes jacrev's batched rows: the same matrix either way."""
    def f(x, y):
        return (eager.tanh(x) @ y).exp(), x.sum() * y

    x, y = eager.tensor(A), eager.tensor(B)
    rows = ef.jacfwd(f, argnums=(0, 1))(x, y)
    pushed = ef.jacfwd(f, argnums=(0, 1), randomness="same")(x, y)
    for r, p in zip(rows, pushed):
        for a, b in zip(r, p):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-14)
