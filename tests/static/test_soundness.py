"""Compiled code is never silently wrong: grad-mode regions, in-place updates of inputs that
take part in autograd, fresh outputs, aliased arguments, writes through detach(), guards on
the Python values a trace reads, programs eager runs that tracing used to refuse, and the
messages tracing gives. Each case compares with eager, which follows PyTorch."""
from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import eager
import static


def _both(fn, make_args, call=None):
    """Run `fn` eagerly and compiled on fresh arguments from `make_args`; `call(f, args)`
    says what to observe (default: the result's values)."""
    call = call or (lambda f, args: f(*args).numpy())
    return call(fn, make_args()), call(static.compile(fn), make_args())


# -- grad-mode regions inside compiled code ----------------------------------------------------
def scaled_by_constant(x):
    with eager.no_grad():
        s = x * 10
    return (x * s).sum()


def scaled_by_constant_set_grad(x):
    with eager.set_grad_enabled(False):
        s = x * 10
    return (x * s).sum()


@pytest.mark.parametrize("fn", [scaled_by_constant, scaled_by_constant_set_grad])
def test_no_grad_region_inside_a_compiled_function_stops_the_gradient(fn):
    def grad_of(f, x):
        f(x).backward()
        return x.grad.numpy()

    eager_grad, compiled_grad = _both(fn, lambda: (eager.tensor([1.0, 2.0], requires_grad=True),),
                                      lambda f, args: grad_of(f, *args))
    np.testing.assert_allclose(eager_grad, [10.0, 20.0])
    np.testing.assert_allclose(compiled_grad, eager_grad)


@pytest.mark.parametrize("fn", [scaled_by_constant, scaled_by_constant_set_grad])
def test_no_grad_region_under_static_grad(fn):
    g = static.grad(fn)(eager.tensor([1.0, 2.0]))
    np.testing.assert_allclose(g.numpy(), [10.0, 20.0])


def test_static_grad_under_an_outer_no_grad_still_differentiates():
    with eager.no_grad():
        g = static.grad(lambda x: (x * x).sum())(eager.tensor([1.0, 2.0]))
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_enable_grad_inside_under_an_outer_no_grad_gives_a_result_that_requires_grad():
    def f(x):
        with eager.enable_grad():
            y = x * 3
        return y, x * 2

    x = eager.tensor([1.0, 2.0], requires_grad=True)
    with eager.no_grad():
        y, z = static.compile(f)(x)
        ey, ez = f(x)
    assert (y.requires_grad, z.requires_grad) == (ey.requires_grad, ez.requires_grad) == (True, False)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


# -- in-place updates of inputs that take part in autograd -------------------------------------
def doubles_in_place(y):
    y.mul_(2)
    return (y * y).sum()


def test_a_non_leaf_input_mutated_inside_takes_the_new_history():
    def grad_of(f, x):
        y = x * 1
        out = f(y)
        (out + (y * 5).sum()).backward()  # y is 2x now: d/dx (4x^2 + 10x) = 8x + 10
        return x.grad.numpy()

    eager_grad, compiled_grad = _both(doubles_in_place, lambda: (eager.tensor([1.0, 2.0], requires_grad=True),),
                                      lambda f, args: grad_of(f, *args))
    np.testing.assert_allclose(eager_grad, [18.0, 26.0])
    np.testing.assert_allclose(compiled_grad, eager_grad)


def test_a_saved_tensor_modified_in_place_inside_is_an_error_at_backward():
    def bump(z):
        z.add_(1)
        return z.sum()

    for f in (bump, static.compile(bump)):
        x = eager.tensor([1.0, 2.0], requires_grad=True)
        z = x.exp()  # exp saves its result for the backward
        out = f(z)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            out.backward()


def test_in_place_write_on_a_leaf_that_requires_grad_raises_eagers_message():
    def bump(w):
        w.add_(1)
        return w.sum()

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        bump(eager.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        static.compile(bump)(eager.ones(2, requires_grad=True))
    with eager.no_grad():  # allowed under no_grad, in both modes
        w = eager.ones(2, requires_grad=True)
        static.compile(bump)(w)
    np.testing.assert_allclose(w.detach().numpy(), [2.0, 2.0])


def test_an_exception_during_write_back_leaves_every_input_untouched():
    def update_both(a, b):
        a.add_(1)
        b.add_(1)
        return a.sum()

    a = eager.zeros(3)
    b = eager.zeros(1).expand(3)  # a broadcast view: eager refuses to write into it
    with pytest.raises(RuntimeError, match="single memory location"):
        update_both(eager.zeros(3), eager.zeros(1).expand(3))
    with pytest.raises(RuntimeError, match="single memory location"):
        static.compile(update_both)(a, b)
    np.testing.assert_array_equal(a.numpy(), [0.0, 0.0, 0.0])  # not half-updated


# -- fresh outputs -----------------------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda x: eager.zeros(3), lambda x: eager.full((3,), 2.0) * 1,
                                  lambda x: (eager.zeros(3), x * 2)])
def test_a_constant_output_is_a_fresh_tensor_every_call(make):
    f = static.compile(make)
    first = f(eager.ones(3))
    first = first[0] if isinstance(first, tuple) else first
    expected = first.numpy().copy()
    first.add_(1)
    second = f(eager.ones(3))
    second = second[0] if isinstance(second, tuple) else second
    np.testing.assert_array_equal(second.numpy(), expected)


# -- aliased arguments -------------------------------------------------------------------------
def add_one_to_first(a, b):
    a.add_(1)
    return b * 2


def test_the_same_tensor_passed_twice_follows_eager():
    def run(f, _):
        x = eager.ones(2)
        return f(x, x).numpy(), x.numpy()

    (eager_out, eager_x), (compiled_out, compiled_x) = _both(add_one_to_first, lambda: (), run)
    np.testing.assert_allclose(eager_out, [4.0, 4.0])
    np.testing.assert_allclose(compiled_out, eager_out)
    np.testing.assert_allclose(compiled_x, eager_x)


def test_overlapping_views_passed_as_arguments_follow_eager():
    def run(f, _):
        x = eager.ones(2, 2)
        return f(x, x[0]).numpy(), x.numpy()

    (eager_out, eager_x), (compiled_out, compiled_x) = _both(add_one_to_first, lambda: (), run)
    np.testing.assert_allclose(compiled_out, eager_out)
    np.testing.assert_allclose(compiled_x, eager_x)


def test_distinct_arguments_after_aliased_ones_retrace_with_the_reason():
    f = static.compile(add_one_to_first)
    x = eager.ones(2)
    f(x, x)
    out = f(eager.ones(2), eager.ones(2))
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0])
    assert "share memory" in f.retraces[-1]


def test_a_write_through_detach_is_not_dropped():
    def zero_through_detach(x):
        y = x * 2
        y.detach().zero_()
        return y + 1

    eager_out, compiled_out = _both(zero_through_detach, lambda: (eager.tensor([1.0, 2.0]),))
    np.testing.assert_allclose(eager_out, [1.0, 1.0])
    np.testing.assert_allclose(compiled_out, eager_out)


# -- guards on Python values read from outside --------------------------------------------------
scale = 2.0
config = {"scale": 2.0}


def times_global(x):
    return x * scale


def times_config(x):
    return x * config["scale"]


def test_a_changed_global_number_recompiles_with_the_reason():
    global scale
    f = static.compile(times_global)
    x = eager.ones(2)
    try:
        np.testing.assert_allclose(f(x).numpy(), [2.0, 2.0])
        scale = 3.0
        np.testing.assert_allclose(f(x).numpy(), [3.0, 3.0])
        assert f.retraces == ["global 'scale' changed 2.0 -> 3.0"]
        np.testing.assert_allclose(f(x).numpy(), [3.0, 3.0])
        assert len(f.retraces) == 1  # unchanged since: no further trace
    finally:
        scale = 2.0


def test_a_changed_dict_entry_recompiles():
    f = static.compile(times_config)
    x = eager.ones(2)
    try:
        f(x)
        config["scale"] = 5.0
        np.testing.assert_allclose(f(x).numpy(), [5.0, 5.0])
        assert "config" in f.retraces[-1]
    finally:
        config["scale"] = 2.0


def test_a_changed_closure_variable_recompiles():
    k = 2

    def f(x):
        return x + k

    cf = static.compile(f)
    cf(eager.ones(2))
    k = 7  # noqa: F841  (read by f through its closure cell)
    np.testing.assert_allclose(cf(eager.ones(2)).numpy(), [8.0, 8.0])
    assert "closure variable 'k'" in cf.retraces[-1]


def test_a_changed_float_attribute_of_a_compiled_module_recompiles():
    class Scale(eager.nn.Module):
        def __init__(self):
            super().__init__()
            self.factor = 2.0
            self.lin = eager.nn.Linear(2, 2)

        def forward(self, x):
            return self.lin(x) * self.factor

    model = Scale()
    cm = static.compile(model)
    x = eager.ones(1, 2)
    cm(x)
    model.factor = 0.5
    np.testing.assert_allclose(cm(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert "attribute 'factor' of module Scale changed 2.0 -> 0.5" in cm.retraces[-1]


class Config:
    def __init__(self) -> None:
        self.scale = 2.0


CONFIG = Config()


def test_a_changed_attribute_of_a_config_object_recompiles():
    f = static.compile(lambda x: x * CONFIG.scale)
    f(eager.ones(2))
    try:
        CONFIG.scale = 4.0
        np.testing.assert_allclose(f(eager.ones(2)).numpy(), [4.0, 4.0])
        assert f.retraces == ["attribute 'scale' of the Config object changed 2.0 -> 4.0"]
    finally:
        CONFIG.scale = 2.0


def test_a_changed_attribute_of_the_instance_of_a_compiled_method_recompiles():
    class Shift:
        def __init__(self) -> None:
            self.k = 1.0

        @static.compile
        def apply(self, x):
            return x + self.k

    s = Shift()
    np.testing.assert_allclose(s.apply(eager.ones(2)).numpy(), [2.0, 2.0])
    s.k = 5.0
    np.testing.assert_allclose(s.apply(eager.ones(2)).numpy(), [6.0, 6.0])


# -- programs eager runs that tracing used to refuse ---------------------------------------------
def test_all_and_any_with_dim():
    for fn in (lambda x: (x > 0).all(dim=1), lambda x: (x > 0).any(1, keepdim=True)):
        eager_out, compiled_out = _both(fn, lambda: (eager.tensor([[1.0, -1.0], [2.0, 3.0]]),))
        np.testing.assert_array_equal(compiled_out, eager_out)


def test_writing_traced_values_into_a_fresh_buffer():
    def f(x):
        out = eager.zeros(3, 3)
        out[0] = x[0] * 2
        out += x
        return out

    eager_out, compiled_out = _both(f, lambda: (eager.ones(3, 3),))
    np.testing.assert_allclose(compiled_out, eager_out)
    cf = static.compile(f)
    cf(eager.ones(3, 3))
    np.testing.assert_allclose(cf(eager.ones(3, 3)).numpy(), eager_out)  # the buffer is made anew each call


MASK = eager.tensor([True, False, True])


def masked_write(y, v):
    y = y * 1
    y[MASK] = v
    return (y * y * eager.tensor([1.0, 2.0, 3.0])).sum()


def test_gradient_of_a_masked_write_with_a_constant_mask():
    y = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = eager.tensor(3.0, requires_grad=True)
    masked_write(y, v).backward()
    gy, gv = static.grad(masked_write, argnums=(0, 1))(eager.tensor([1.0, 2.0, 3.0]), eager.tensor(3.0))
    np.testing.assert_allclose(gy.numpy(), y.grad.numpy())
    np.testing.assert_allclose(gv.numpy(), v.grad.numpy())
    eps = 1e-3  # and against a central difference in v
    fd = (masked_write(eager.tensor([1.0, 2.0, 3.0]), eager.tensor(3.0 + eps)).item()
          - masked_write(eager.tensor([1.0, 2.0, 3.0]), eager.tensor(3.0 - eps)).item()) / (2 * eps)
    assert gv.item() == pytest.approx(fd, rel=1e-3)


def test_a_constant_mask_read_from_outside_is_guarded():
    mask = eager.tensor([True, False, True])

    def pick(x):
        return x[mask] * 1

    f = static.compile(pick)
    np.testing.assert_allclose(f(eager.tensor([1.0, 2.0, 3.0])).numpy(), [1.0, 3.0])
    mask[1] = True
    np.testing.assert_allclose(f(eager.tensor([1.0, 2.0, 3.0])).numpy(), [1.0, 2.0, 3.0])
    assert "mask" in f.retraces[-1]


def test_a_python_int_beyond_int64_as_an_argument():
    big = 2 ** 70
    eager_out, compiled_out = _both(lambda x, n: x * n, lambda: (eager.ones(2), big))
    np.testing.assert_allclose(compiled_out, eager_out)


# -- tracing messages --------------------------------------------------------------------------
def test_a_traced_value_in_an_f_string_names_the_users_line():
    def report(x):
        print(f"{x.sum():.3f}")  # FORMAT
        return x

    line = report.__code__.co_firstlineno + 1
    with pytest.raises(static.TraceError, match=rf"test_soundness.py:{line}:.*format"):
        static.compile(report)(eager.ones(2))


def test_a_returned_shape_is_an_eager_size():
    shape = static.compile(lambda x: x.shape)(eager.ones(2, 3))
    assert type(shape) is eager.Size and shape == (2, 3)
    out, shape = static.compile(lambda x: (x * 2, x.shape))(eager.ones(2, 3))
    assert type(shape) is eager.Size


def test_warnings_point_at_the_line_that_called_the_compiled_function():
    f = static.compile(lambda x: x * 2, max_retraces=0)
    f(eager.ones(1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        here = inspect.currentframe().f_lineno; f(eager.ones(2))  # noqa: E702
    (w,) = caught
    assert "max_retraces" in str(w.message) and (w.filename, w.lineno) == (__file__, here)

    def branchy(x):
        global _BRANCHES  # not split at its graph break (static.graph_breaks): it falls back, with the warning
        _BRANCHES = x
        return x if x.sum() > 0 else -x

    g = static.compile(branchy, fallback="eager")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        here = inspect.currentframe().f_lineno; g(eager.ones(2))  # noqa: E702
    (w,) = caught
    assert "fallback" in str(w.message) and (w.filename, w.lineno) == (__file__, here)


def test_writes_through_views_of_a_captured_parameter():
    weight = eager.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    start = weight.detach().clone()

    def step(x):
        with eager.no_grad():
            weight[0].add_(x)
            weight.t()[1].mul_(2)
        return (weight * 1).sum()

    def bad(x):
        weight[0].add_(x)
        return weight.sum()

    results = []
    for f in (step, static.compile(step)):
        with eager.no_grad():
            weight.copy_(start)
        results.append((f(eager.ones(2)).item(), weight.detach().numpy().copy()))
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            (bad if f is step else static.compile(bad))(eager.ones(2))
    assert results[0][0] == results[1][0]
    np.testing.assert_allclose(results[1][1], results[0][1])


@pytest.mark.parametrize("other", [100000, 70000.0, 3])
@pytest.mark.parametrize("name", ["div", "mul"])
def test_float16_with_a_0d_tensor_of_another_dtype_computes_as_eager(name, other):
    """A float16 tensor times or over a 0-d tensor of another dtype (tensor(1e5)): eager
    computes at float32 precision and rounds once (1e5 is inf in float16, which would give
    zeros); compiled code records the same float32 computation."""
    x = eager.tensor([1.0, 2.0, 6e4], dtype=eager.float16)
    d = eager.tensor(other)

    def f(t):
        return t / d if name == "div" else t * d

    want = f(x)
    got = static.compile(f)(x)
    assert got.dtype == want.dtype == eager.float16
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("scalar", [100000, 70000.0])
def test_the_reference_interpreter_computes_float16_with_a_number_as_eager(scalar):
    x = eager.tensor([1.0, 2.0, 6e4], dtype=eager.float16)
    graph = static.trace(lambda t: t / scalar, x)
    (got,) = static.run_graph(graph, [x.numpy()])
    np.testing.assert_array_equal(got, (x / scalar).numpy())


@pytest.mark.parametrize("fn", [lambda t: eager.softmax(t * 2.0, 1), lambda t: eager.log_softmax(t, 1),
                                lambda t: eager.logsumexp(t, 1)], ids=["softmax", "log_softmax", "logsumexp"])
def test_float16_softmax_family_compiles_to_eagers_values(fn):
    """eager computes these in float32 and rounds once; compiled code (opt_level 2, which
    decomposes the float32/float64 ones) gives the same float16 values."""
    x = eager.tensor(np.random.default_rng(0).standard_normal((8, 33)).astype(np.float16))
    np.testing.assert_array_equal(static.compile(fn, opt_level=2)(x).numpy(), fn(x).numpy())
