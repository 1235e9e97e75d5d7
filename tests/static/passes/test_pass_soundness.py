"""Passes that must never change a value: signed zeros through `x + 0.0`, 0-d tensors
reduced along dim 0, dead fused groups, and the fixed example of a program mixing a full
sum, exp, softmax along dim 1 and a safe division under passes=["fuse", "memory"]."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

NEG_ZERO = eager.tensor(np.array([-0.0, 1.0, -2.5], np.float32))


@pytest.mark.parametrize("fn", [lambda t: t + 0.0, lambda t: 0.0 + t, lambda t: t - (-0.0),
                                lambda t: t + eager.zeros(3), lambda t: t + (-0.0), lambda t: t - 0.0],
                         ids=["x+0", "0+x", "x-(-0)", "x+zeros", "x+(-0)", "x-0"])
def test_adding_zero_keeps_the_sign_of_negative_zero(fn):
    got = static.compile(fn)(NEG_ZERO).numpy()
    expected = fn(NEG_ZERO).numpy()
    np.testing.assert_array_equal(np.signbit(got), np.signbit(expected))
    np.testing.assert_array_equal(got, expected)


def test_fast_math_may_fold_adding_zero():
    compiled = static.compile(lambda t: t + 0.0, fast_math=True)
    compiled(NEG_ZERO)
    assert "add" not in str(compiled.ir(NEG_ZERO))


ZERO_D = [("sum", lambda t: t.sum(0)), ("mean", lambda t: t.mean(0)), ("amax", lambda t: t.amax(0)),
          ("amin", lambda t: t.amin(0)), ("prod", lambda t: t.prod(0)), ("sum_keepdim", lambda t: t.sum(0, keepdim=True)),
          ("softmax", lambda t: eager.softmax(t, 0)), ("log_softmax", lambda t: eager.log_softmax(t, 0)),
          ("logsumexp", lambda t: eager.logsumexp(t, 0)), ("fused", lambda t: (t.exp().sum(0) + 1.0) * t),
          ("argmax", lambda t: t.argmax(0))]


@pytest.mark.parametrize("backend", ["numpy", "interpret"])
@pytest.mark.parametrize("name,fn", ZERO_D, ids=[n for n, _ in ZERO_D])
def test_0d_tensor_reduced_along_dim_0_compiles_like_eager(name, fn, backend):
    x = eager.tensor(np.float32(1.5))
    got = static.compile(fn, backend=backend)(x)
    expected = fn(x)
    assert tuple(got.shape) == tuple(expected.shape) and got.dtype == expected.dtype
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-6)


def test_fuse_without_dce_drops_a_dead_group_instead_of_emitting_an_empty_region():
    def f(x, y):
        _ = (x.exp() * 2.0).sin()  # dead: no DCE runs with this pass list
        return x + y

    x, y = (eager.tensor(np.ones((3, 4), np.float32)) for _ in range(2))
    got = static.compile(f, passes=["fuse", "memory"])(x, y)
    np.testing.assert_array_equal(got.numpy(), f(x, y).numpy())


def test_full_sum_exp_softmax_and_safe_division_fuse_without_a_cycle():
    """The fixed example for the fusion-cycle report: forward and joint graphs."""
    def f(x, y):
        s = x.sum()
        e = (x * 0.1).exp()
        p = eager.softmax(e * y, 1)
        q = p / (s * s + 1.0)
        return (q * e).sum() + (e / (y * y + 1.0)).mean()

    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 4)) for _ in range(2)]
    expected = f(*[eager.tensor(a) for a in arrays]).numpy()
    got = static.compile(f, passes=["fuse", "memory"])(*[eager.tensor(a) for a in arrays]).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    g = static.compile(static.grad(f, argnums=(0, 1)), passes=["fuse", "memory"])
    tensors = [eager.tensor(a, requires_grad=True) for a in arrays]
    f(*tensors).backward()
    for got_grad, t in zip(g(*[eager.tensor(a) for a in arrays]), tensors):
        np.testing.assert_allclose(got_grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.fixture
def random_op():
    """A pointwise op that draws random numbers, declared for the length of a test."""
    from eager.ops import REGISTRY, defop

    op = defop("test_noise", forward=lambda xp, x: x + np.random.default_rng().standard_normal(x.shape),
               abstract=lambda x: x, random=True, samples=lambda rng: [((rng.standard_normal(3),), {})])
    try:
        yield op
    finally:
        del REGISTRY["test_noise"]


def test_random_ops_are_never_merged_folded_fused_or_recomputed(random_op):
    from static.passes import PASSES
    from static.passes.remat import _recomputable

    g = static.parse_ir("""func @f(%x: f32[4]) -> (f32[4], f32[4], f32[4]) {
  %0 = test_noise %x : f32[4]
  %1 = test_noise %x : f32[4]
  %2 = full {dtype = f32, shape = [4], value = 1.0} : f32[4]
  %3 = test_noise %2 : f32[4]
  return %0, %1, %3
}""")
    assert PASSES["cse"](g) == {"merged": 0}
    assert PASSES["fold"](g) == {"folded": 0}
    assert not any(_recomputable(n) for n in g.nodes if n.op == "test_noise")
    stats = PASSES["fuse"](g)
    assert all(n.op != "fused" for n in g.nodes), stats
