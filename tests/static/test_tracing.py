"""What tracing means: Python control flow on static values unrolls, data-dependent Python
is a TraceError naming the user's line, captured tensors are implicit inputs read at call
time, Python numbers are 0-d inputs unless static, in-place ops are functionalized and
written back, and pytrees go in and out."""
from __future__ import annotations

import collections
import os

import numpy as np
import pytest

import eager
import static

HERE = os.path.basename(__file__)


def _ops(graph):
    return [n.op for n in graph.nodes]


# -- Python control flow on static values -------------------------------------------------------
def test_loops_and_branches_on_shapes_and_numbers_unroll():
    def f(x, n):
        total = x[0]
        for i in range(1, x.shape[0]):  # a loop over a static length
            total = total + x[i]
        if x.ndim == 1 and len(x) == 3:  # branches on shapes
            total = total * 2
        for _ in range(n):  # n is static: the loop count is known
            total = eager.sin(total)
        return total

    g = static.trace(f, eager.ones(3), 4, static_argnums=1)
    assert _ops(g).count("add") == 2 and _ops(g).count("sin") == 4
    assert [v.name for v in g.inputs] == ["x"]
    x = np.array([0.1, 0.2, 0.3], np.float32)
    (out,) = static.run_graph(g, [x])
    np.testing.assert_allclose(out, f(eager.tensor(x), 4).numpy(), rtol=1e-6)


def test_shape_metadata_is_static_on_tracers():
    seen = {}

    def f(x):
        seen.update(shape=tuple(x.shape), size=x.size(1), ndim=x.ndim, numel=x.numel(), dtype=x.dtype,
                    fp=x.is_floating_point(), length=len(x))
        return x.reshape(x.shape[0] * x.shape[1])

    static.trace(f, eager.ones(2, 3))
    assert seen == dict(shape=(2, 3), size=3, ndim=2, numel=6, dtype=eager.float32, fp=True, length=2)


# -- using a traced value's data is an error naming the user's line ------------------------------
def _line_of(fn, marker):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def branch_on_value(x):
    if x.sum() > 0:  # MARK
        return x
    return -x


def float_of_value(x):
    return float(x.sum())  # MARK


def item_of_value(x):
    return x.sum().item() * x  # MARK


def tolist_of_value(x):
    return x.tolist()  # MARK


def numpy_of_value(x):
    return x.numpy()  # MARK


def asarray_of_value(x):
    return np.asarray(x) + 1  # MARK


def numpy_ufunc_on_value(x):
    return np.exp(x)  # MARK


def while_on_value(x):
    while x.max() > 1:  # MARK
        x = x / 2
    return x


def int_index_from_value(x):
    return x[int(x.argmax())]  # MARK


@pytest.mark.parametrize("fn", [branch_on_value, float_of_value, item_of_value, tolist_of_value, numpy_of_value,
                                asarray_of_value, numpy_ufunc_on_value, while_on_value, int_index_from_value])
def test_data_dependent_python_raises_trace_error_with_the_users_line(fn):
    with pytest.raises(static.TraceError) as info:
        static.trace(fn, eager.ones(3))
    msg = str(info.value)
    assert f"{HERE}:{_line_of(fn, '# MARK')}" in msg, msg
    assert "traced value" in msg


@pytest.mark.parametrize("fn", [branch_on_value, float_of_value, while_on_value])
def test_trace_error_suggests_where_or_static_argnums(fn):
    with pytest.raises(static.TraceError, match=r"eager\.where.*static_argnums"):
        static.compile(fn)(eager.ones(3))


def test_trace_error_is_a_runtime_error_and_exported():
    assert issubclass(static.TraceError, RuntimeError)


def test_shape_errors_are_raised_at_trace_time_naming_the_op_and_line():
    def f(x, y):
        return x @ y  # MARK

    with pytest.raises(RuntimeError, match=rf"matmul.*{HERE}:{_line_of(f, '# MARK')}"):
        static.trace(f, eager.ones(3, 2), eager.ones(4))


def test_a_tracer_leaking_out_of_its_trace_is_an_error():
    leaked = []

    def f(x):
        leaked.append(x * 2)
        return x

    static.trace(f, eager.ones(2))
    with pytest.raises(static.TraceError, match="trace has ended"):
        leaked[0] + 1


def test_random_numbers_drawn_while_tracing_are_drawn_per_call_not_frozen():
    def noisy(x):  # static.randomness replays every draw at call time (tests/static/test_randomness.py)
        return x + eager.randperm(3)

    f = static.compile(noisy)
    eager.manual_seed(0)
    got = [f(eager.zeros(3)).numpy() for _ in range(4)]
    eager.manual_seed(0)
    expected = [noisy(eager.zeros(3)).numpy() for _ in range(4)]
    np.testing.assert_array_equal(got, expected)


# -- captured tensors: implicit inputs read at call time -----------------------------------------
W_GLOBAL = eager.tensor([1.0, 2.0, 3.0])


def uses_global(x):
    return (x * W_GLOBAL).sum()


def test_captured_global_is_an_implicit_input_not_a_constant():
    g = static.trace(uses_global, eager.ones(3))
    assert [v.name for v in g.inputs] == ["x", "W_GLOBAL"]  # named after the global it reads
    assert "1.0" not in str(g) and "const" not in str(g)


def test_captured_global_is_read_at_each_call_in_place_and_rebound():
    global W_GLOBAL
    saved = W_GLOBAL
    try:
        f = static.compile(uses_global)
        x = eager.ones(3)
        assert f(x).item() == 6.0
        W_GLOBAL.mul_(2)  # changed in place
        assert f(x).item() == 12.0
        W_GLOBAL = eager.tensor([5.0, 5.0, 5.0])  # rebound to a new tensor of the same type
        assert f(x).item() == 15.0
        assert f.retraces == [] and len(f._cache) == 1
        W_GLOBAL = eager.tensor([2.0])  # another shape: the graph no longer fits, so it retraces
        assert f(x).item() == 6.0
        assert f.retraces == ["a captured tensor changed shape, dtype or kind"]
        W_GLOBAL = eager.tensor([1.0, 1.0])  # a retrace that fails, on the shapes, like eager would
        with pytest.raises(RuntimeError, match="size of tensor"):
            f(x)
        assert len(f.retraces) == 1  # a failed trace records nothing
    finally:
        W_GLOBAL = saved


def test_captured_closure_tensor_is_read_at_call_time():
    scale = eager.tensor(2.0)

    def f(x):
        return x * scale

    cf = static.compile(f)
    assert cf(eager.ones(2)).tolist() == [2.0, 2.0]
    scale = eager.tensor(3.0)  # rebinding the closure variable  # noqa: F841
    assert cf(eager.ones(2)).tolist() == [3.0, 3.0]
    assert len(cf._cache) == 1


def test_ops_on_captured_tensors_alone_are_recorded_not_frozen():
    """`w.t()` or `w * 2` touch no argument, but must not be snapshots taken at trace time."""
    w = eager.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)

    def f(x):
        return (x @ w.t() * 2).sum()

    g = static.trace(f, eager.ones(2))
    assert "transpose" in _ops(g)
    cf = static.compile(f)
    x = eager.ones(2)
    out = cf(x)
    out.backward()
    np.testing.assert_allclose(w.grad.numpy(), np.full((2, 2), 2.0))  # gradient reaches the captured tensor
    with eager.no_grad():
        w.mul_(10)
    assert cf(x).item() == pytest.approx(200.0)


# -- Python numbers: 0-d inputs, or constants with static_argnums --------------------------------
def scaled(x, lr):
    return x * lr


def test_python_numbers_are_weak_0d_inputs_and_do_not_retrace():
    g = static.trace(scaled, eager.ones(2), 0.5)
    assert [(v.name, v.type.shape) for v in g.inputs] == [("x", (2,)), ("lr", ())]
    assert g.outputs[0].type.dtype is eager.float32  # weak: a float never promotes float32 to float64
    f = static.compile(scaled)
    assert f(eager.ones(2), 0.5).tolist() == [0.5, 0.5]
    assert f(eager.ones(2), 0.25).tolist() == [0.25, 0.25]
    assert f.retraces == [] and len(f._cache) == 1


def test_static_argnums_make_numbers_constants_and_retrace_on_change():
    f = static.compile(scaled, static_argnums=(1,))
    assert "0.5" in str(f.ir(eager.ones(2), 0.5)) or "0.5" in f.explain(eager.ones(2), 0.5)
    assert f(eager.ones(2), 0.5).tolist() == [0.5, 0.5]
    assert f(eager.ones(2), 0.25).tolist() == [0.25, 0.25]
    assert len(f._cache) == 2
    assert f.retraces == ["static argument leaf 1 changed value 0.5 -> 0.25"]


def test_static_argnums_distinguish_equal_values_of_different_types():
    f = static.compile(lambda x, k: x * k, static_argnums=1)
    assert f(eager.ones(1, dtype=eager.int64), 1).dtype is eager.int64
    assert f(eager.ones(1, dtype=eager.int64), 1.0).dtype is eager.float32  # 1 == 1.0, but not the same constant
    assert len(f._cache) == 2


def test_unhashable_static_argument_is_a_type_error():
    f = static.compile(lambda x, cfg: x * cfg[0], static_argnums=1)
    with pytest.raises(TypeError, match="static argument 1 has unhashable type list"):
        f(eager.ones(2), [2.0])
    assert f(eager.ones(2), (2.0,)).tolist() == [2.0, 2.0]  # a tuple is fine


def test_negative_static_argnums_count_from_the_end():
    f = static.compile(lambda x, n: x * n, static_argnums=-1)
    assert "3" in str(f.ir(eager.ones(2), 3))
    assert [v.name for v in f.ir(eager.ones(2), 3).inputs] == ["x"]


# -- in-place ops: functionalized, updates written back -------------------------------------------
def sgd_step(p, g, lr):
    with eager.no_grad():
        p -= lr * g
    return (p * p).sum()


def test_inplace_update_of_an_input_is_functionalized_and_written_back():
    graph = static.trace(sgd_step, eager.ones(3), eager.ones(3), 0.1)
    assert not any(op.endswith("_") for op in _ops(graph))  # the graph is pure
    assert len(graph.outputs) == 2  # the loss, then the new value of p

    f = static.compile(sgd_step)
    p, g = eager.tensor([1.0, 2.0, 3.0]), eager.tensor([1.0, 1.0, 1.0])
    version = p._version
    loss = f(p, g, 0.5)
    np.testing.assert_allclose(p.numpy(), [0.5, 1.5, 2.5])
    assert loss.item() == pytest.approx(0.25 + 2.25 + 6.25)
    assert p._version > version  # the write-back is an in-place change eager can see
    f(p, g, 0.5)
    np.testing.assert_allclose(p.numpy(), [0.0, 1.0, 2.0])
    assert len(f._cache) == 1


def test_inplace_updates_of_numpy_inputs_are_written_back():
    f = static.compile(sgd_step)
    p = np.array([1.0, 2.0], np.float32)
    out = f(p, np.ones(2, np.float32), 0.5)
    assert isinstance(out, np.ndarray)
    np.testing.assert_allclose(p, [0.5, 1.5])


def test_setitem_and_method_inplace_ops_are_written_back():
    def f(x):
        x[0] = 10.0
        x.mul_(2)
        x.add_(1)
        return x.sum()

    x = eager.tensor([1.0, 2.0])
    out = static.compile(f)(x)
    np.testing.assert_allclose(x.numpy(), [21.0, 5.0])
    assert out.item() == 26.0


def test_inplace_update_of_a_captured_tensor_is_written_back():
    state = eager.zeros(2)

    def accumulate(x):
        with eager.no_grad():
            state.add_(x)
        return state * 1

    f = static.compile(accumulate)
    f(eager.ones(2))
    out = f(eager.ones(2))
    np.testing.assert_allclose(state.numpy(), [2.0, 2.0])
    np.testing.assert_allclose(out.numpy(), [2.0, 2.0])


def _row_of_input(x):
    x[0].add_(1)
    return x * 1


def _transposed_row_of_temporary(x):
    y = x * 1
    y.t()[0].zero_()
    return y


def _stale_view_read_after_base_update(x):
    y = x * 1
    z = y[1]
    y.mul_(2)
    return z * 5


def _piece_of_unbind(x):
    y = x * 1
    a, _ = y.unbind(0)
    a.mul_(3)
    return y


@pytest.mark.parametrize("fn", [_row_of_input, _transposed_row_of_temporary, _stale_view_read_after_base_update,
                                _piece_of_unbind])
def test_writing_through_a_view_reaches_the_base_and_its_other_views(fn):
    """A write into a view becomes view_scatter into the tensor owning the memory; a view
    taken before an update of its base is made again from the new value, as eager shows it."""
    x_eager, x_compiled = eager.tensor([[1.0, 2.0], [3.0, 4.0]]), eager.tensor([[1.0, 2.0], [3.0, 4.0]])
    expected = fn(x_eager).numpy()
    np.testing.assert_allclose(static.compile(fn)(x_compiled).numpy(), expected)
    np.testing.assert_allclose(x_compiled.numpy(), x_eager.numpy())  # input updates written back alike


def test_gradient_through_a_view_taken_before_its_base_changed():
    """PyTorch gives [[0, 0], [10, 10]]: the view's history is regenerated after y.mul_(2)."""
    def loss(x):
        return _stale_view_read_after_base_update(x).sum()

    x = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(static.grad(loss)(x).numpy(), [[0.0, 0.0], [10.0, 10.0]])
    xr = x.clone().requires_grad_()
    static.compile(loss)(xr).backward()
    np.testing.assert_allclose(xr.grad.numpy(), [[0.0, 0.0], [10.0, 10.0]])


def test_inplace_on_a_local_temporary_needs_no_write_back():
    def f(x):
        y = x * 1
        y += 1
        return y

    graph = static.trace(f, eager.ones(2))
    assert len(graph.outputs) == 1
    x = eager.ones(2)
    assert static.compile(f)(x).tolist() == [2.0, 2.0]
    assert x.tolist() == [1.0, 1.0]


# -- pytrees --------------------------------------------------------------------------------------
Pair = collections.namedtuple("Pair", "a b")


def test_nested_pytrees_in_and_out():
    def f(tree):
        x, (ys, d) = tree["x"], tree["rest"]
        return {"sum": x + ys[0] + ys[1], "parts": [d["k"] * 2, (x,)], "pair": Pair(x, None), "n": 3}

    tree = {"x": eager.ones(2), "rest": ([eager.ones(2), eager.full((2,), 2.0)], {"k": eager.full((2,), 3.0)})}
    cf = static.compile(f)
    out = cf(tree)
    assert set(out) == {"sum", "parts", "pair", "n"}
    assert out["sum"].tolist() == [4.0, 4.0]
    assert out["parts"][0].tolist() == [6.0, 6.0] and out["parts"][1][0].tolist() == [1.0, 1.0]
    assert isinstance(out["pair"], Pair) and out["pair"].b is None
    assert out["n"] == 3
    names = [v.name for v in cf.ir(tree).inputs]
    assert names == ["tree_0", "tree_1", "tree_2", "tree_3"]
    # another structure is another signature
    cf({"x": eager.ones(2), "rest": ([eager.ones(2)] * 3, {"k": eager.ones(2)})})
    assert cf.retraces == ["the structure of the arguments changed"]


# -- the Tensor API on tracers -------------------------------------------------------------------
API = {
    "operators": lambda x: (-x + 1) * 2 / (x.abs() + 1) - x ** 2,
    "matmul and T": lambda x: x.T @ x,
    "reductions": lambda x: x.sum(1) + x.mean(0).sum() + x.amax(1) + x.std(1),
    "max with dim": lambda x: x.max(dim=1),
    "indexing": lambda x: x[1:, ::2] * x[0, 1] + x[[0, 2]].sum(),
    "masked_fill": lambda x: x.masked_fill(x > 0, 0.0),
    "where": lambda x: eager.where(x > 0, x, 0.1 * x),
    "shape ops": lambda x: x.reshape(4, 3).transpose(0, 1).unsqueeze(0).squeeze(0).flatten(),
    "cat stack split": lambda x: eager.cat(list(x.split(2, dim=1)) + [eager.stack([x[0], x[1]])[:, :2]], dim=0),
    "dtype casts": lambda x: x.double().float() + x.long().float() + x.bool().float(),
    "comparisons and all/any": lambda x: ((x > 0) & (x < 1)).float() + (x > -10).all().float() + (x > 10).any(),
    "new tensors": lambda x: x + x.new_zeros(3, 4) + x.new_full((4,), 2.0) + eager.ones(4),
    "softmax family": lambda x: eager.softmax(x, dim=1) + eager.log_softmax(x, dim=0) + eager.logsumexp(x, dim=1,
                                                                                                     keepdim=True),
    "metadata": lambda x: x * (x.nelement() + x.element_size() + x.stride(0) + x.dim() + int(x.is_contiguous())),
    "detach and data": lambda x: x.detach() * x.data,
    "in-place methods": lambda x: x.clone().sin_().cos_().masked_fill_(x > 0, 1.0),
}


@pytest.mark.parametrize("name", sorted(API))
def test_tensor_api_traces_like_eager(name):
    fn = API[name]
    x = eager.tensor(np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32))
    got, expected = static.compile(fn)(x), fn(x)
    for g, e in zip(got if isinstance(got, tuple) else (got,), expected if isinstance(expected, tuple) else (expected,)):
        assert g.dtype == e.dtype and tuple(g.shape) == tuple(e.shape)
        np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-6, atol=1e-6)


def test_boolean_mask_indexing_is_a_trace_error_but_masked_assignment_works():
    def select(x):
        return x[x > 0]  # MARK

    with pytest.raises(static.TraceError, match=rf"{HERE}:{_line_of(select, '# MARK')}.*boolean mask.*where"):
        static.trace(select, eager.ones(3))

    def clip(x):
        x[x > 0] = 0.0
        return x

    x = eager.tensor([-1.0, 2.0, 3.0])
    np.testing.assert_array_equal(static.compile(clip)(x.clone()).numpy(), [-1.0, 0.0, 0.0])


@pytest.mark.parametrize("call", [lambda x: x.retain_grad()])  # register_hook: test_never_diverges_values
def test_autograd_calls_inside_a_trace_point_to_static_grad(call):
    with pytest.raises(static.TraceError):
        static.trace(lambda x: call(x) or x, eager.ones(2))


def test_backward_inside_a_trace_of_a_value_without_history_is_eagers_error():
    with pytest.raises(RuntimeError, match="does not require grad and does not have a grad_fn"):
        static.trace(lambda x: x.sum().backward() or x, eager.ones(2))


@pytest.mark.parametrize("alias", [lambda y: y.data, lambda y: y.detach()])
def test_inplace_through_data_or_detach_reaches_the_tensor(alias):
    """A write through `.data` or `detach()` changes the tensor they alias, as in eager (it
    used to be dropped: the functionalized write only renamed the alias)."""
    def f(x):
        y = x * 2
        alias(y).add_(1)
        return y * 3

    x = eager.tensor([1.0, 2.0])
    expected = f(x).numpy()
    np.testing.assert_allclose(static.compile(f)(x).numpy(), expected)
    np.testing.assert_allclose(expected, [9.0, 15.0])


def test_other_threads_run_eagerly_while_one_traces():
    """Tracing swaps eager's dispatch so that ops on captured tensors are recorded; only the
    tracing thread may see that."""
    import threading

    inside, release, results = threading.Event(), threading.Event(), {}

    def slow(x):
        inside.set()
        assert release.wait(5)
        return x * 2

    def tracer_thread():
        results["graph"] = static.trace(slow, eager.ones(2))

    t = threading.Thread(target=tracer_thread)
    t.start()
    assert inside.wait(5)
    try:
        y = eager.ones(2) + eager.ones(2)  # meanwhile, on this thread: plain eager
        results["eager"] = y
    finally:
        release.set()
        t.join(5)
    assert isinstance(results["eager"], eager.Tensor) and results["eager"].tolist() == [2.0, 2.0]
    assert [n.op for n in results["graph"].nodes] == ["mul"]


def test_reading_a_view_after_its_base_changed_in_place_follows_eager():
    """Eager views share memory, so they show a later in-place update; static makes such a
    view again from the updated base, so it shows the update too."""
    def stale(p):
        q = p.t()
        p.add_(1)
        return q * 2

    def returned(p):
        q = p.reshape(4)
        p.mul_(3)
        return q

    def fresh(p):
        p.add_(1)
        rows = p[[0, 1]]  # indexing with a tensor copies, in eager too
        p.mul_(10)
        return p.reshape(4) + rows.reshape(4)

    for fn in (stale, returned, fresh):
        x = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
        expected = fn(eager.tensor([[1.0, 2.0], [3.0, 4.0]])).numpy()
        np.testing.assert_array_equal(static.compile(fn)(x).numpy(), expected)


def test_a_view_of_a_detached_alias_read_after_the_base_changed_is_refused():
    """How such a view is made from the base is not known (detach() is not a view op), so
    reading it stale is refused, naming the user's line, rather than wrong."""
    def stale(p):
        q = p.detach()[0]
        p.add_(1)
        return q * 2  # MARK

    with pytest.raises(static.TraceError, match=rf"{HERE}:{_line_of(stale, '# MARK')}.*view"):
        static.trace(stale, eager.ones(2, 2))


def test_random_draws_on_another_thread_do_not_fail_a_trace():
    """The draw check is per thread: a data loader drawing meanwhile is not the function's."""
    import threading

    weight = eager.ones(3)
    stop = threading.Event()

    def draw():
        while not stop.is_set():
            eager.randn(4)

    worker = threading.Thread(target=draw)
    worker.start()
    try:
        for _ in range(20):
            f = static.compile(lambda x: x * weight)
            assert f(eager.ones(3)).tolist() == [1.0, 1.0, 1.0]
    finally:
        stop.set()
        worker.join()


def test_the_tracer_has_every_in_place_method_eager_has():
    """One table of in-place methods (eager's TensorAPI): each one is functionalized on the
    tracer and gives eager's values."""
    from eager._api import inplace_methods
    from static.tracer import Tracer

    x = eager.tensor([[0.5, 1.5], [2.0, 3.0]])
    args = {"add_": [2.0], "sub_": [2.0], "mul_": [2.0], "div_": [2.0], "pow_": [2.0], "clamp_": [0.0, 1.0],
            "clip_": [0.0, 1.0], "clamp_min_": [1.0], "clamp_max_": [1.0],
            "masked_fill_": [eager.tensor([[True, False], [False, True]]), -1.0],
            "atan2_": [2.0], "addcmul_": [x, x], "addcdiv_": [x, x + 4.0],
            "scatter_reduce_": [1, eager.tensor([[1, 1], [0, 0]]), eager.tensor([[2.0, 3.0], [4.0, 5.0]]), "sum"],
            **{f"{op}_": [2.0] for op in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                                          "logical_xor", "remainder", "fmod", "floor_divide", "arctan2", "not_equal", "less",
                                          "less_equal", "greater", "greater_equal", "multiply", "divide", "subtract",
                                          "true_divide")},
            "heaviside_": [eager.tensor(0.5)], "ldexp_": [eager.tensor(2.0)], "nextafter_": [eager.tensor(0.0)],
            **{f"bitwise_{op}_": [3] for op in ("and", "or", "xor", "left_shift", "right_shift")}}
    args.update({"cumsum_": [1], "cumprod_": [0], "hypot_": [2.0], "copysign_": [-1.0], "xlogy_": [2.0],
                 "gcd_": [eager.tensor(6)], "lcm_": [eager.tensor(4)], "renorm_": [2, 0, 1.0],
                 "addr_": [x[0], x[1]], "addmm_": [x, x], "addmv_": [x, x[0]],
                 "addbmm_": [eager.ones(3, 2, 2), eager.ones(3, 2, 2)],
                 "baddbmm_": [eager.ones(1, 2, 2), eager.ones(1, 2, 2)]})  # (eager._conveniences')
    source = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
    args.update({"index_copy_": [0, eager.tensor([1, 0]), source],
                 "index_reduce_": [0, eager.tensor([1, 0]), source, "prod"],
                 "masked_scatter_": [eager.tensor([[True, False], [False, True]]), source],
                 "put_": [eager.tensor([0, 3]), eager.tensor([9.0, 8.0])]})  # (eager/_functional/scatters.py)
    integers = eager.tensor([[1, 2], [3, 4]])  # the bitwise forms take integers
    names = inplace_methods()
    assert {"add_", "mul_", "sin_", "masked_fill_"} <= set(names)
    for name in names:
        assert callable(getattr(Tracer, name)), name
        if name == "float_power_":  # a float64 result, which the float32 input cannot hold (PyTorch refuses too)
            continue

        def f(t, name=name):
            y = t * 1
            getattr(y, name)(*args.get(name, []))
            return y

        inp = integers if name.startswith(("bitwise_", "gcd_", "lcm_")) else x
        if name == "baddbmm_":  # (a batch written back needs a 3-d tensor)
            inp = x.unsqueeze(0)
        got = static.compile(f, backend="interpret")(inp)  # the tracing is under test, not codegen
        np.testing.assert_allclose(got.numpy(), f(inp).numpy(), rtol=1e-6, err_msg=name)


def test_static_trace_is_the_function_and_its_module_has_its_own_name():
    import importlib

    module = importlib.import_module("static.trace_function")  # importing the module does not replace the function
    assert static.trace is module.trace and callable(static.trace)
    assert static.trace.__module__ == "static.tracing.function"  # its home; static.trace_function is an alias
    assert importlib.import_module("static.tracing.function") is module
