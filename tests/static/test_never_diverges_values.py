"""Values inside compiled code behave as eager's: in-place random fills draw at every call the
numbers eager draws, a traced value is an eager.Tensor to isinstance and is_tensor, results
in dataclasses and plain objects come back as tensors, autograd.grad and register_hook work
inside. NumPy and native backends."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import eager
import static

BACKENDS = ["numpy", "native"]


def _same_draws(fn, backend, *args):
    cf = static.compile(fn, backend=backend)
    results = []
    for seed in (0, 1):
        eager.manual_seed(seed)
        got = cf(*args)
        eager.manual_seed(seed)
        want = fn(*args)
        np.testing.assert_allclose(got._data, want._data, rtol=1e-6, atol=1e-7)
        results.append(got._data.copy())
    assert not np.array_equal(results[0], results[1])  # drawn at each call, not once at trace time


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fill", ["normal_", "uniform_", "exponential_", "bernoulli_"])
def test_in_place_random_fills_of_a_new_tensor_draw_at_every_call(fill, backend):
    _same_draws(lambda x: x + getattr(eager.empty_like(x), fill)(), backend, eager.zeros(64))


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_random_fills_of_a_traced_value(backend):
    _same_draws(lambda x: x.clone().normal_(2.0, 0.5) + x.clone().uniform_(-1, 1) * x.clone().exponential_(2.0),
                backend, eager.ones(32))
    _same_draws(lambda x: x.clone().random_(0, 10) + x, backend, eager.zeros(32))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_traced_value_is_a_tensor_to_isinstance_and_is_tensor(backend):
    def f(x):
        if isinstance(x, eager.Tensor) and eager.is_tensor(x) and not isinstance(x, eager.nn.Parameter):
            return x * 2
        return x * 3

    x = eager.ones(3)
    np.testing.assert_allclose(static.compile(f, backend=backend)(x)._data, f(x)._data)


@dataclasses.dataclass
class Pair:
    first: object
    second: object


class Box:
    def __init__(self, value):
        self.value = value


@pytest.mark.parametrize("backend", BACKENDS)
def test_autograd_grad_inside_compiled_code(backend):
    eager.manual_seed(0)
    m = eager.nn.Linear(3, 1)

    def penalty(x):
        out = eager.tanh(m(x)).sum()
        (gx,) = eager.autograd.grad(out, [x], create_graph=True)
        (gw,) = eager.autograd.grad(out, [m.weight], create_graph=True)
        return (gx ** 2).sum() + (gw ** 2).sum()

    x = eager.randn(4, 3, requires_grad=True)
    got = static.compile(penalty, backend=backend)(x)
    got.backward()
    gx, gw = x.grad._data.copy(), m.weight.grad._data.copy()
    x.grad = m.weight.grad = None
    want = penalty(x)
    want.backward()
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    np.testing.assert_allclose(gx, x.grad._data, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(gw, m.weight.grad._data, rtol=1e-5, atol=1e-7)
    with pytest.raises(RuntimeError, match="appears to not have been used"):
        static.compile(lambda x, y: eager.autograd.grad((x * 2).sum(), [y]), backend=backend)(
            x, eager.ones(2, requires_grad=True))


def test_the_torch_compile_front_door_takes_autograd_grad():
    x = eager.randn(5, requires_grad=True)
    f = eager.compile(lambda x: eager.autograd.grad((x ** 3).sum(), [x])[0])
    np.testing.assert_allclose(f(x)._data, 3 * x._data ** 2, rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_register_hook_inside_compiled_code(backend):
    def f(x):
        y = x * 2
        handle = y.register_hook(lambda g: g * 3)
        z = x * 5
        z.register_hook(lambda g: g + 1).remove()
        del handle
        return (y + z).sum()

    x = eager.randn(3, requires_grad=True)
    static.compile(f, backend=backend)(x).backward()
    got = x.grad._data.copy()
    x.grad = None
    f(x).backward()
    np.testing.assert_allclose(got, x.grad._data, rtol=1e-6)
    np.testing.assert_allclose(got, np.full(3, 11.0), rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_results_in_a_dataclass_or_a_plain_object_come_back_as_tensors(backend):
    f = static.compile(lambda x: Pair(x * 2, Box([x + 1, 3])), backend=backend)
    for k in (1.0, 2.0):
        x = eager.full((3,), k)
        out = f(x)
        assert type(out) is Pair and type(out.first) is eager.Tensor and type(out.second) is Box
        np.testing.assert_allclose(out.first._data, np.full(3, 2 * k))
        np.testing.assert_allclose(out.second.value[0]._data, np.full(3, k + 1))
        assert out.second.value[1] == 3


def test_a_number_to_the_power_of_a_0d_tensor_is_0d_as_in_pytorch():
    # check=True found it: NAdam's running product, a 0-d tensor in a compiled step, came back 1-d eagerly
    torch = pytest.importorskip("torch")
    for base, exponent in [(0.96, 2.0), (2, 3), (0.5, [1.0, 2.0])]:
        got = base ** eager.tensor(exponent)
        want = base ** torch.tensor(exponent)
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)


def test_a_namespace_result_comes_back_with_tensors_and_an_unflattenable_one_is_refused():
    import types

    f = static.compile(lambda x: types.SimpleNamespace(y=x * 2), backend="numpy")
    out = f(eager.ones(2))
    assert type(out.y) is eager.Tensor and out.y.tolist() == [2.0, 2.0]

    class Holder(eager.nn.Module):  # a module is not taken apart: it is returned as it is
        pass

    def g(x):
        h = Holder()
        h.__dict__["y"] = x * 2
        return h

    with pytest.raises(static.TraceError, match="returns a Holder holding traced values"):
        static.compile(g, backend="numpy")(eager.ones(2))
