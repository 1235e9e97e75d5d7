"""Ops whose derivative is zero almost everywhere (rounding, the sign, rounded quotients, the
remainders' divisor side) as PyTorch has them: whether the result requires grad, the grad_fn's
name, the gradient's values (zeros_like(grad), so a NaN or inf flowing in still gives 0; frac,
remainder and fmod pass the gradient to their input) or the error a backward raises where PyTorch
implements no derivative (floor_divide, remainder(number, tensor)). Each case runs in eager and
traced (static.grad), and the traced gradient is eager's.

A user's backward through `div(a, b, rounding_mode="floor")` used to raise (the result did not
require grad), which is what this table is for: one row per spelling."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

torch = pytest.importorskip("torch")

A = [2.7, -1.3, 0.5, -2.5, 3.0, 7.0, -0.0]
B = [1.5, 0.7, -2.0, 2.0, 1.2, 0.5, 3.0]
# the gradient flowing in: NaN and inf included (a zero gradient is zeros_like(grad), not grad * 0)
SEED = [1.0, float("nan"), float("inf"), -2.0, 0.5, 1.0, 3.0]

# (id, fn(lib, a, b), operands differentiated): a and b are float tensors that require grad
CASES = [
    ("floor", lambda L, a, b: L.floor(a), 1),
    ("ceil", lambda L, a, b: L.ceil(a), 1),
    ("round", lambda L, a, b: L.round(a), 1),
    ("round_decimals", lambda L, a, b: L.round(a, decimals=1), 1),
    ("round_decimals_0", lambda L, a, b: a.round(decimals=0), 1),
    ("special_round", lambda L, a, b: L.special.round(a), 1),  # (decimals=0 always given: RoundBackward1)
    ("trunc", lambda L, a, b: L.trunc(a), 1),
    ("fix", lambda L, a, b: L.fix(a), 1),
    ("sign", lambda L, a, b: L.sign(a), 1),
    ("sgn", lambda L, a, b: L.sgn(a), 1),
    ("frac", lambda L, a, b: L.frac(a), 1),
    ("floor_", lambda L, a, b: (a * 1.0).floor_(), 1),
    ("round_", lambda L, a, b: (a * 1.0).round_(), 1),
    ("sign_", lambda L, a, b: (a * 1.0).sign_(), 1),
    ("remainder", lambda L, a, b: L.remainder(a, b), 2),
    ("remainder_number", lambda L, a, b: L.remainder(a, 1.5), 1),
    ("mod_operator", lambda L, a, b: a % b, 2),
    ("rmod_operator", lambda L, a, b: 2.0 % b, 2),
    ("fmod", lambda L, a, b: L.fmod(a, b), 2),
    ("fmod_number", lambda L, a, b: L.fmod(a, 1.5), 1),
    ("div_floor", lambda L, a, b: L.div(a, b, rounding_mode="floor"), 2),
    ("div_trunc", lambda L, a, b: L.div(a, b, rounding_mode="trunc"), 2),
    ("div_floor_number", lambda L, a, b: L.div(a, 2.0, rounding_mode="floor"), 1),
    ("div_trunc_number", lambda L, a, b: L.div(a, -0.75, rounding_mode="trunc"), 1),
    ("divide_method", lambda L, a, b: a.divide(b, rounding_mode="floor"), 2),
    ("div_inplace", lambda L, a, b: (a * 1.0).div_(b, rounding_mode="trunc"), 2),
    ("div_broadcast", lambda L, a, b: L.div(a.reshape(7, 1), b, rounding_mode="floor"), 2),
    ("floor_divide", lambda L, a, b: L.floor_divide(a, b), 2),
    ("floor_divide_number", lambda L, a, b: L.floor_divide(a, 2.0), 1),
    ("floordiv_operator", lambda L, a, b: a // b, 2),
    ("rfloordiv_operator", lambda L, a, b: 3.0 // b, 2),
    ("heaviside", lambda L, a, b: L.heaviside(a, b), 2),
    # the gradient to one operand only: the other's is zeros_like(grad), not none and not NaN
    ("copysign", lambda L, a, b: L.copysign(a, b), 2),
    ("copysign_method", lambda L, a, b: a.copysign(b), 2),
    ("copysign_number", lambda L, a, b: L.copysign(a, -2.0), 1),
    ("nextafter", lambda L, a, b: L.nextafter(a, b), 2),
]


def _run(lib, fn, n):
    """(requires_grad, grad_fn name, gradients or the backward's exception type) of one case."""
    a = lib.tensor(A, dtype=lib.float64, requires_grad=True)
    b = lib.tensor(B, dtype=lib.float64, requires_grad=True)
    y = fn(lib, a, b)
    name = type(y.grad_fn).__name__ if y.grad_fn is not None else None
    if not y.requires_grad:
        return y.requires_grad, name, y.detach().numpy().copy(), None
    seed = lib.tensor(SEED, dtype=lib.float64)
    seed = seed.reshape(7, 1).expand(*y.shape) if y.dim() == 2 else seed
    try:
        grads = lib.autograd.grad(y, [a, b][:n], seed, allow_unused=True)
    except RuntimeError as exc:
        assert "derivative for" in str(exc) and "not implemented" in str(exc), str(exc)
        return y.requires_grad, name, y.detach().numpy().copy(), RuntimeError
    # (clone: PyTorch's sgn gives a ZeroTensor, which has no storage to read)
    return y.requires_grad, name, y.detach().numpy().copy(), [None if g is None else g.clone().numpy() for g in grads]


@pytest.mark.parametrize(("fn", "n"), [pytest.param(fn, n, id=name) for name, fn, n in CASES])
def test_zero_gradient_ops_as_pytorch(fn, n):
    ours, theirs = _run(eager, fn, n), _run(torch, fn, n)
    assert ours[:2] == theirs[:2], (ours[:2], theirs[:2])
    np.testing.assert_array_equal(ours[2], theirs[2])
    if theirs[3] is None or theirs[3] is RuntimeError:
        assert ours[3] is theirs[3]
        return
    assert len(ours[3]) == len(theirs[3])
    for g_ours, g_theirs in zip(ours[3], theirs[3]):
        assert (g_ours is None) == (g_theirs is None)
        if g_theirs is not None:
            np.testing.assert_array_equal(g_ours, g_theirs)


@pytest.mark.parametrize(("fn", "n"), [pytest.param(fn, n, id=name) for name, fn, n in CASES
                                       if not name.endswith(("_", "_inplace"))])
def test_zero_gradient_ops_traced_as_eager(fn, n):
    """static.grad of sum(seed * f(a, b)) is eager's gradient; where eager's backward raises
    (no derivative in PyTorch), tracing the gradient raises the same."""
    seed = eager.tensor([1.0, 0.0, 0.0, -2.0, 0.5, 1.0, 3.0], dtype=eager.float64)  # (finite: a product)

    def loss(a, b):
        y = fn(eager, a, b)
        return (y * (seed.reshape(7, 1) if y.dim() == 2 else seed)).sum()

    a = eager.tensor(A, dtype=eager.float64, requires_grad=True)
    b = eager.tensor(B, dtype=eager.float64, requires_grad=True)
    argnums = tuple(range(n))
    try:
        expected = eager.autograd.grad(loss(a, b), [a, b][:n], allow_unused=True)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="not implemented"):
            static.grad(loss, argnums=argnums)(a.detach(), b.detach())
        return
    traced = static.grad(loss, argnums=argnums)(a.detach(), b.detach())
    for g_eager, g_traced in zip(expected, traced):
        want = np.zeros(7) if g_eager is None else g_eager.numpy()
        np.testing.assert_array_equal(np.asarray(g_traced), want)


def test_rounded_division_values_as_pytorch():
    """div's rounding modes give PyTorch's values bit for bit: trunc is trunc(a / b) for floats
    (the quotient rounded first), C's truncating division for integers; floor is Python's."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal(4000) * 10
    b = rng.standard_normal(4000)
    ai, bi = rng.integers(-50, 50, 200), rng.integers(1, 9, 200) * rng.choice([-1, 1], 200)
    for mode in ("trunc", "floor"):
        for x, y in ((a, b), (a.astype(np.float32), b.astype(np.float32)), (ai, bi)):
            ours = eager.div(eager.tensor(x), eager.tensor(y), rounding_mode=mode)
            theirs = torch.div(torch.tensor(x), torch.tensor(y), rounding_mode=mode)
            assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
            traced = static.compile(lambda p, q, m=mode: eager.div(p, q, rounding_mode=m), backend="numpy")
            np.testing.assert_array_equal(traced(eager.tensor(x), eager.tensor(y)).numpy(), theirs.numpy())
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        eager.div(eager.tensor([3]), eager.tensor([0]), rounding_mode="trunc")
    with pytest.raises(RuntimeError, match="rounding_mode"):
        eager.div(eager.tensor([3.0]), 2.0, rounding_mode="round")


def test_a_training_step_through_a_rounded_division_runs():
    """The user's program from the report: a loss through div(..., rounding_mode='floor') of
    a tensor that requires grad backpropagates (zero gradient there, the rest flows)."""
    w = eager.tensor([1.5, -2.0, 0.25], requires_grad=True)
    loss = (eager.div(w * 4.0, 3.0, rounding_mode="floor") + w * w).sum()
    loss.backward()
    np.testing.assert_array_equal(w.grad.numpy(), (2 * w.detach()).numpy())


def test_round_with_decimals_refuses_integers_as_pytorch():
    """round.decimals has no integer kernel in PyTorch; round without decimals keeps an integer
    tensor as it is."""
    for dt in ("int32", "int64"):
        for kwargs in ({"decimals": 0}, {"decimals": 1}):
            with pytest.raises(NotImplementedError):
                torch.round(torch.tensor([1, 2], dtype=getattr(torch, dt)), **kwargs)
            with pytest.raises(NotImplementedError, match="round"):
                eager.round(eager.tensor([1, 2], dtype=getattr(eager, dt)), **kwargs)
        assert eager.round(eager.tensor([1, 2], dtype=getattr(eager, dt))).tolist() == [1, 2]


@pytest.mark.parametrize("call", [
    lambda L, a, b: L.div(a, b, rounding_mode="floor"), lambda L, a, b: L.div(a, b, rounding_mode="trunc"),
    lambda L, a, b: L.floor_divide(a, b), lambda L, a, b: L.remainder(a, b), lambda L, a, b: L.fmod(a, b),
    lambda L, a, b: L.div(a, True if b.dtype == L.bool else 2, rounding_mode="floor"), lambda L, a, b: a // b])
def test_divisions_of_two_bools_are_refused_as_pytorch(call):
    """PyTorch has no bool kernel of the rounded divisions and remainders (NumPy computes int8);
    a bool beside an integer is promoted and divides."""
    results = []
    for lib in (eager, torch):
        a, b = lib.tensor([True, False, True]), lib.tensor([True, True, True])
        with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
            call(lib, a, b)
        results.append(call(lib, a, lib.tensor([1, 2, 3])).tolist())
    with pytest.raises(NotImplementedError, match="Bool"):
        static.compile(lambda a, b: call(eager, a, b), backend="numpy")(eager.tensor([True]), eager.tensor([True]))
    assert results[0] == results[1]


@pytest.mark.parametrize("backend", ["numpy", "interpret"])
def test_a_compiled_forward_through_an_op_without_derivative_runs(backend):
    """x // 2 of a tensor that requires grad compiles and runs (PyTorch raises only when a
    backward reaches floor_divide): the output that depends on it gets no backward, so a
    backward through it raises, while the call's other outputs keep theirs."""
    x = eager.tensor([1.5, 2.5, -3.0], requires_grad=True)
    both = static.compile(lambda t: ((t // 2) + t, t * 2), backend=backend)(x)
    np.testing.assert_array_equal(both[0].numpy(), [1.5, 3.5, -5.0])
    both[1].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0, 2.0])
    with pytest.raises(RuntimeError):
        both[0].sum().backward()

    def step(w):
        y = w // 2
        loss = (w * w).sum() + (y.detach() * w).sum()
        loss.backward()
        return y

    for fn in (step, static.compile(step, backend=backend)):
        x.grad = None
        np.testing.assert_array_equal(fn(x).detach().numpy(), [0.0, 1.0, -2.0])
        np.testing.assert_array_equal(x.grad.numpy(), [3.0, 6.0, -8.0])
