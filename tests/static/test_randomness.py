"""Random draws inside compiled functions draw what eager draws, fresh on every call."""
import numpy as np
import pytest

import eager
import eager.nn as nn
import eager.nn.functional as F
import static


def _both(fn, *args, seed=0, calls=3):
    """The results of `calls` eager calls and `calls` compiled calls from the same seed."""
    eager.manual_seed(seed)
    expected = [fn(*args) for _ in range(calls)]
    compiled = static.compile(fn)
    eager.manual_seed(seed)
    got = [compiled(*args) for _ in range(calls)]
    return expected, got, compiled


@pytest.mark.parametrize("draw", [
    lambda x: eager.randn(3, 4) * x,
    lambda x: eager.rand(3, 4) + x,
    lambda x: eager.randn_like(x) * 2 + eager.rand_like(x),
    lambda x: eager.randint(0, 10, (3, 4)) + x,
    lambda x: eager.randperm(12).reshape(3, 4) + x,
    lambda x: F.dropout(x, 0.3),
])
def test_compiled_draws_equal_eager_draws_and_are_fresh_per_call(draw):
    x = eager.ones(3, 4)
    expected, got, _ = _both(draw, x)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
    assert not np.array_equal(got[0].numpy(), got[1].numpy())


def test_the_generator_advances_as_in_eager_even_for_unused_draws():
    def f(x):
        eager.randn(5)  # drawn and dropped: the next draw must still see the advanced generator
        return x + eager.rand(2)

    x = eager.zeros(2)
    expected, got, _ = _both(f, x)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
    eager.manual_seed(3)
    static.compile(f)(x)
    after_compiled = eager.rand(4).numpy()
    eager.manual_seed(3)
    f(x)
    np.testing.assert_array_equal(eager.rand(4).numpy(), after_compiled)


def test_manual_seed_makes_compiled_runs_reproducible():
    c = static.compile(lambda x: F.dropout(x, 0.5))
    x = eager.ones(8, 8)
    eager.manual_seed(7)
    a = c(x).numpy()
    eager.manual_seed(7)
    np.testing.assert_array_equal(c(x).numpy(), a)


def test_dropout_module_in_training_mode_draws_eager_masks_and_its_gradient_flows_through_the_mask():
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 5), nn.Dropout(0.4), nn.Linear(5, 1))
    x = eager.tensor(np.random.default_rng(0).standard_normal((7, 6)).astype(np.float32))
    eager.manual_seed(11)
    model(x).sum().backward()
    expected = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    cm = static.compile(model)
    eager.manual_seed(11)
    cm(x).sum().backward()
    for p, e in zip(model.parameters(), expected):
        np.testing.assert_allclose(p.grad.numpy(), e, rtol=1e-5, atol=1e-6)


def test_grad_of_a_function_with_dropout_matches_eager_and_finite_differences():
    x = eager.tensor(np.random.default_rng(1).standard_normal((4, 3)))
    g = static.grad(lambda x: (F.dropout(x, 0.5) ** 2).sum())
    eager.manual_seed(5)
    got = g(x).numpy()
    eager.manual_seed(5)
    xe = x.clone().requires_grad_()
    (F.dropout(xe, 0.5) ** 2).sum().backward()
    np.testing.assert_allclose(got, xe.grad.numpy(), rtol=1e-12)
    eager.manual_seed(5)
    mask = (eager.rand(4, 3, dtype=x.dtype) >= 0.5).numpy() * 2.0  # drawn in x's precision, as dropout draws
    np.testing.assert_allclose(got, 2 * x.numpy() * mask * mask, rtol=1e-12)  # d/dx (x m)^2 = 2 x m^2


@pytest.mark.parametrize("size", [5, 3001, 9000])  # odd sizes: a float32 draw leaves half an output for the next
def test_consecutive_masks_drawn_as_one_run_equal_eager_draws_one_by_one(size):
    """A step's dropout masks are replayed as one draw cut into the masks (static.randomness
    .Replay); a normal draw between them ends a run. The numbers, and what the generator
    gives after the call, are eager's."""
    def f(x):
        a = F.dropout(x, 0.3)
        b = F.dropout(x * 2, 0.5)
        c = eager.randn_like(x) + F.dropout(x, 0.1)
        d = eager.rand(size, dtype=eager.float64)[:3].sum() + eager.rand(7, dtype=eager.float64).sum()
        return a + b + c + d

    x = eager.ones(size)
    expected, got, compiled = _both(f, x)
    for e, g in zip(expected, got):
        np.testing.assert_array_equal(g.numpy(), e.numpy())
    entry = next(iter(compiled._cache.values()))
    runs = [end - first for first, end in entry.trace.prepare.replay.runs]
    assert runs == [2, 1, 1, 2]  # two masks; the normal draw; the third mask; the two float64 draws
    eager.manual_seed(11)
    compiled(x)
    after = eager.rand(3).numpy()
    eager.manual_seed(11)
    f(x)
    np.testing.assert_array_equal(eager.rand(3).numpy(), after)
