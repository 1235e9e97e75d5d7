"""Regression tests for a batch of eager fixes: small powers multiplied out, the functional
transforms with inputs or outputs that do not require grad, anomaly mode's check_nan and
forward traces, Tensor.T/all/any/norm built from ops, and the dispatch-mode hook."""
from __future__ import annotations

import math
import os
import threading

import numpy as np
import pytest
from autograd_functions import FailingBackward

import eager
import static
from eager import _dispatch
from eager.autograd import detect_anomaly, gradcheck, set_detect_anomaly
from eager.autograd.functional import hessian, jacobian, jvp, vjp
from eager.ops import elementwise as E


# -- 1. x ** 2, x ** 3, x ** 4 by multiplication ---------------------------------------------------
class _SpyXp:
    """NumPy, recording which functions a forward asks for."""

    def __init__(self) -> None:
        self.calls = []

    def __getattr__(self, name):
        self.calls.append(name)
        return getattr(np, name)


@pytest.mark.parametrize("exponent", [2, 3, 4, 2.0, 3.0, 4.0])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_small_powers_do_not_take_powers_slow_path(exponent, dt):
    xp = _SpyXp()
    E.POW.forward(xp, np.linspace(-2, 2, 7).astype(dt), exponent)
    assert "power" not in xp.calls


@pytest.mark.parametrize("exponent", [5, 0.5, 1.5, -2])
def test_other_exponents_still_use_power(exponent):
    xp = _SpyXp()
    E.POW.forward(xp, np.linspace(0.5, 2, 7), exponent)
    assert xp.calls == ["power"]


def test_integer_tensors_still_use_power():
    xp = _SpyXp()
    assert E.POW.forward(xp, np.arange(5), 3).tolist() == [0, 1, 8, 27, 64]
    assert xp.calls == ["power"]


@pytest.mark.parametrize("exponent", [2, 3, 4])
@pytest.mark.parametrize("dt, ulps", [(np.float32, 4e-7), (np.float64, 1e-15)])
def test_small_powers_match_np_power(exponent, dt, ulps):
    rng = np.random.default_rng(exponent)
    a = (rng.standard_normal(20_000) * rng.choice([1e-3, 1.0, 1e3], 20_000)).astype(dt)
    got = (eager.tensor(a) ** exponent).numpy()
    want = np.power(a, exponent)
    assert got.dtype == want.dtype
    if exponent == 2:
        np.testing.assert_array_equal(got, want)  # x*x is what np.power(x, 2) computes
    else:
        np.testing.assert_allclose(got, want, rtol=ulps, atol=0)  # one extra rounding at most


@pytest.mark.parametrize("exponent", [2, 3, 4])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_small_powers_of_special_values_match_np_power(exponent, dt):
    big, tiny = np.finfo(dt).max, np.finfo(dt).tiny  # overflow to inf, underflow to (signed) zero
    a = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -0.5, np.inf, -np.inf, np.nan, big, -big, tiny, -tiny], dtype=dt)
    with np.errstate(all="ignore"):
        got = (eager.tensor(a) ** exponent).numpy()
        want = np.power(a, exponent)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))  # -0.0 ** 3 is -0.0


def test_small_power_of_a_zero_d_tensor_is_a_zero_d_tensor():
    for exponent in (2, 3, 4):
        y = eager.tensor(1.5, dtype=eager.float32) ** exponent
        assert y.shape == () and y.dtype is eager.float32
        assert y.item() == pytest.approx(1.5 ** exponent)


def test_small_power_gradients_are_unchanged():
    x = eager.tensor(np.linspace(-2, 2, 5), requires_grad=True)
    for exponent in (2, 3, 4, 3.0):
        y = x ** exponent
        assert y.grad_fn.name() == "PowBackward0"
        assert gradcheck(lambda t: t ** exponent, (x,))  # noqa: B023  (called within this iteration)
    (g,) = eager.autograd.grad((x ** 3).sum(), x)
    np.testing.assert_allclose(g.numpy(), 3 * np.linspace(-2, 2, 5) ** 2)


# -- 2. functional transforms: what does not require grad contributes zeros ------------------------
X = np.array([1.0, 2.0])
Y = np.array([3.0, 4.0])


def _t(a):
    return eager.tensor(np.asarray(a, dtype=np.float64))


def test_jvp_with_an_input_the_output_ignores():
    out, jv = jvp(lambda a, b: a * 2, (_t(X), _t(Y)), (eager.ones(2, dtype=eager.float64),) * 2)
    np.testing.assert_allclose(out.numpy(), 2 * X)
    np.testing.assert_allclose(jv.numpy(), [2.0, 2.0])


def test_jvp_of_a_constant_function_is_zero():
    _, jv = jvp(lambda a: eager.ones(2, dtype=eager.float64), _t(X), _t([1.0, 1.0]))
    np.testing.assert_array_equal(jv.numpy(), [0.0, 0.0])


def test_hessian_of_a_linear_function_is_zero():
    H = hessian(lambda a: (a * 3).sum(), _t(X))
    np.testing.assert_array_equal(H.numpy(), np.zeros((2, 2)))


def test_hessian_blocks_of_an_input_entering_linearly_are_zero():
    (hxx, hxy), (hyx, hyy) = hessian(lambda a, b: (a ** 2).sum() + b.sum(), (_t(X), _t(Y)))
    np.testing.assert_allclose(hxx.numpy(), 2 * np.eye(2))
    for block in (hxy, hyx, hyy):
        np.testing.assert_array_equal(block.numpy(), np.zeros((2, 2)))


def test_jacobian_of_a_constant_function_is_zero():
    J = jacobian(lambda a: eager.ones(2), _t(X))
    assert tuple(J.shape) == (2, 2)
    np.testing.assert_array_equal(J.numpy(), np.zeros((2, 2)))


def test_vjp_of_a_constant_function_is_zero():
    _, g = vjp(lambda a: eager.ones(2, dtype=eager.float64), _t(X), _t([1.0, 1.0]))
    np.testing.assert_array_equal(g.numpy(), [0.0, 0.0])


def test_jvp_without_v_needs_a_single_element_input():
    with pytest.raises(RuntimeError, match="The vector v can only be None if the input to the user-provided "
                                           "function is a single Tensor with a single element."):
        jvp(lambda a: a * 2, _t(X))
    with pytest.raises(RuntimeError, match="The vector v can only be None"):
        jvp(lambda a, b: a * b, (_t([1.0]), _t([2.0])))
    out, jv = jvp(lambda a: a * 3, _t([2.0]))
    np.testing.assert_allclose(jv.numpy(), [3.0])


def test_vjp_without_v_needs_a_single_element_output():
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns"):
        vjp(lambda a: a * 2, _t(X))


# -- 3. anomaly mode -------------------------------------------------------------------------------
@pytest.fixture
def anomaly_off_afterwards():
    yield
    set_detect_anomaly(False)


def _nan_backward():
    x = eager.tensor(0.0, requires_grad=True)
    (x * 0).sqrt().backward()  # inf * 0 in MulBackward0
    return x


def test_detect_anomaly_without_check_nan_lets_nan_through(anomaly_off_afterwards):
    with detect_anomaly(check_nan=False):
        assert eager.autograd.anomaly.is_anomaly_enabled()
        x = _nan_backward()
    assert math.isnan(x.grad.item())
    with detect_anomaly(), pytest.raises(RuntimeError, match="returned nan values"):
        _nan_backward()  # the flag is restored: the default checks again


def test_set_detect_anomaly_without_check_nan(anomaly_off_afterwards):
    set_detect_anomaly(True, check_nan=False)
    assert math.isnan(_nan_backward().grad.item())
    set_detect_anomaly(True)
    with pytest.raises(RuntimeError, match="returned nan values"):
        _nan_backward()


def test_detect_anomaly_decorator_keeps_check_nan(anomaly_off_afterwards):
    @detect_anomaly(check_nan=False)
    def run():
        return _nan_backward()

    assert math.isnan(run().grad.item())
    assert not eager.autograd.anomaly.is_anomaly_enabled()


def _notes(exc) -> str:
    return "".join(getattr(exc, "__notes__", []))


def test_custom_function_nodes_carry_the_forward_trace(anomaly_off_afterwards):
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    with detect_anomaly():
        y = FailingBackward.apply(x)  # the custom function's forward line
        with pytest.raises(ValueError) as info:
            y.sum().backward()
    notes = _notes(info.value)
    assert "Error detected in FailingBackwardBackward" in notes
    assert "y = FailingBackward.apply(x)  # the custom function's forward line" in notes


def test_forward_trace_keeps_the_users_line_through_nested_modules(anomaly_off_afterwards):
    nn = eager.nn
    model = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Sequential(nn.Linear(3, 3), nn.ReLU())))
    with detect_anomaly():
        out = model(eager.randn(4, 2))  # the user's line through three Sequentials
        out.add_(1.0)  # ReluBackward0 saved its output: backward now fails
        with pytest.raises(RuntimeError, match="modified by an inplace operation") as info:
            out.sum().backward()
    notes = _notes(info.value)
    assert "Error detected in ReluBackward0" in notes
    assert "out = model(eager.randn(4, 2))  # the user's line through three Sequentials" in notes
    eager_dir = os.path.dirname(eager.__file__)
    assert eager_dir not in notes  # eager's own frames (dispatch, Module.__call__, ...) are left out


# -- 5. Tensor.T, all, any and norm from ops -------------------------------------------------------
def test_T_works_on_a_traced_value():
    x = eager.randn(2, 3)
    out = static.compile(lambda v: eager.Tensor.T.fget(v) * 1.0)(x)
    np.testing.assert_array_equal(out.numpy(), x.numpy().T)


def test_all_and_any_are_ops_that_trace():
    x = eager.tensor([[1.0, 0.0], [2.0, 3.0]])
    seen = []

    def log(op, operands, attrs):
        seen.append(op.name)
        return NotImplemented

    with _dispatch.dispatch_mode(log):
        assert not x.all().item() and x.any().item()
    assert seen  # they ran as ops, not by reading the array
    assert static.compile(lambda v: eager.Tensor.all(v, 1))(x).tolist() == [False, True]
    assert static.compile(lambda v: eager.Tensor.any(v, 0))(x).tolist() == [True, True]


def test_all_and_any_with_dims_as_pytorch():
    x = eager.tensor([[1.0, 0.0, 2.0], [3.0, 4.0, float("nan")]])
    a = np.array([[1.0, 0.0, 2.0], [3.0, 4.0, np.nan]])
    for dim in (None, 0, 1, -1, (0, 1)):
        axis = dim if dim is not None else None
        for keepdim in (False, True):
            got_all, got_any = x.all(dim, keepdim), eager.any(x, dim=dim, keepdim=keepdim)
            assert got_all.dtype is eager.bool and got_any.dtype is eager.bool
            np.testing.assert_array_equal(got_all.numpy(), np.all(a, axis=axis, keepdims=keepdim))
            np.testing.assert_array_equal(got_any.numpy(), np.any(a, axis=axis, keepdims=keepdim))
    assert eager.tensor([]).all().item() is True and eager.tensor([]).any().item() is False
    assert eager.tensor([True, True]).all().item() is True
    assert eager.arange(3).any().item() is True and eager.arange(3).all().item() is False


def test_all_of_a_tensor_that_requires_grad_records_nothing():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    r = x.all()
    assert r.item() is True and not r.requires_grad and r.grad_fn is None


@pytest.mark.parametrize("p, ord_", [(2, 2), ("fro", 2), (1, 1), (math.inf, np.inf), (-math.inf, -np.inf),
                                     (3, 3), (0.5, 0.5), (0, 0)])
def test_norm_matches_numpy(p, ord_):
    a = np.random.default_rng(1).standard_normal((3, 4))
    x = eager.tensor(a)
    np.testing.assert_allclose(x.norm(p).numpy(), np.linalg.norm(a.reshape(-1), ord=ord_))
    np.testing.assert_allclose(eager.norm(x, p, dim=(0, 1)).numpy(), np.linalg.norm(a.reshape(-1), ord=ord_))
    for dim in (0, 1, -1):
        want = np.linalg.norm(a, ord=ord_, axis=dim)
        np.testing.assert_allclose(x.norm(p, dim).numpy(), want)
        kept = x.norm(p, dim, keepdim=True)
        np.testing.assert_allclose(kept.numpy(), np.expand_dims(want, dim))


def test_norm_defaults_to_the_two_norm_of_all_elements():
    x = eager.tensor([[3.0, 0.0], [0.0, 4.0]])
    assert x.norm().item() == pytest.approx(5.0)
    assert x.norm().dtype is eager.float32 and x.norm().shape == ()


@pytest.mark.parametrize("p", [2, 1, math.inf, -math.inf, 3, 1.5])
@pytest.mark.parametrize("dim", [None, 1])
def test_norm_gradients(p, dim):
    x = eager.tensor(np.random.default_rng(2).standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda t: eager.norm(t, p, dim), (x,))


def test_norm_gradient_at_zero_is_zero_as_in_pytorch():
    for p in (2, 3):
        z = eager.zeros(3, dtype=eager.float64, requires_grad=True)
        z.norm(p).backward()
        np.testing.assert_array_equal(z.grad.numpy(), np.zeros(3))


def test_norm_traces_and_differentiates_in_static():
    x = eager.tensor(np.random.default_rng(3).standard_normal((3, 4)))
    np.testing.assert_allclose(static.compile(lambda v: v.norm(dim=1))(x).numpy(), x.norm(dim=1).numpy(), rtol=1e-6)
    g = static.grad(lambda v: v.norm())(x)
    np.testing.assert_allclose(g.numpy(), (x / x.norm()).numpy())


def test_norm_of_an_integer_tensor_is_refused():
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor as input. Got Long"):
        eager.arange(3).norm()


# -- 6. dispatch modes -----------------------------------------------------------------------------
def _logger(seen):
    def handler(op, operands, attrs):
        seen.append(op.name)
        return NotImplemented

    return handler


def test_a_mode_sees_every_op_and_eager_runs_what_it_passes_on():
    seen = []
    x = eager.tensor([1.0, 2.0])
    _dispatch.push_mode(_logger(seen))
    try:
        y = (x * 2.0).exp()
    finally:
        _dispatch.pop_mode()
    assert seen == ["mul", "exp"]
    np.testing.assert_allclose(y.numpy(), np.exp([2.0, 4.0]), rtol=1e-6)
    x + 1.0
    assert seen == ["mul", "exp"]  # popped: no longer consulted


def test_a_mode_can_take_an_op_over_and_run_ops_itself():
    def doubled_add(op, operands, attrs):
        if op.name != "add":
            return NotImplemented
        return op(*operands, **attrs) * 2.0  # its own ops skip it (no recursion)

    seen = []
    x = eager.tensor([1.0, 2.0])
    with _dispatch.dispatch_mode(_logger(seen)), _dispatch.dispatch_mode(doubled_add):
        y = x + 1.0
    assert y.tolist() == [4.0, 6.0]
    assert seen == ["add", "mul"]  # the outer mode saw what the inner one issued
    assert _dispatch.current_modes() == ()


def test_modes_come_after_operands_that_claim_the_op():
    class Claims:
        def __graphmode_dispatch__(op, operands, attrs):  # noqa: N805  (looked up on the type)
            return "claimed"

    seen = []
    with _dispatch.dispatch_mode(_logger(seen)):
        assert E.ADD(Claims(), 1.0) == "claimed"
        E.ADD(eager.tensor([1.0]), np.array([2.0]))  # an operand eager converts: the mode sees it
    assert seen == ["add", "to_dtype"]  # the float64 array promotes the float32 tensor


def test_modes_are_per_thread_and_popped_on_error():
    seen, other = [], []

    def elsewhere():
        eager.tensor([1.0]).exp()
        other.append(_dispatch.current_modes())

    with pytest.raises(ZeroDivisionError):
        with _dispatch.dispatch_mode(_logger(seen)):
            t = threading.Thread(target=elsewhere)
            t.start()
            t.join()
            1 / 0  # noqa: B018  (raises on purpose)
    assert seen == [] and other == [()]
    assert _dispatch.current_modes() == ()


def test_pop_mode_without_a_mode_raises():
    with pytest.raises(RuntimeError, match="no dispatch mode"):
        _dispatch.pop_mode()
    with pytest.raises(TypeError, match="callable"):
        _dispatch.push_mode(42)
