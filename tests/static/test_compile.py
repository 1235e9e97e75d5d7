"""@static.compile: bare and with options, results of the kind given, the per-signature cache
with its retrace reasons and limit, fallback='eager', failed traces, and composition with
eager autograd (CompiledFunctionBackward)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager
import static
from static.tracer import ACTIVE


@static.compile
def double(x):
    return x * 2


def test_bare_decorator_compiles_and_keeps_the_name():
    assert isinstance(double, static.Compiled)
    assert double.__name__ == "double"
    assert double(eager.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]


def test_decorator_with_options():
    @static.compile(backend="interpret", static_argnums=(1,), fallback="eager")
    def f(x, k):
        return x * k

    assert (f.backend, f.static_argnums, f.fallback) == ("interpret", (1,), "eager")
    assert f(eager.ones(2), 3).tolist() == [3.0, 3.0]
    assert "interpret" in f.explain(eager.ones(2), 3)


@pytest.mark.parametrize("options,match", [({"backend": "fortran"}, "unknown backend"),
                                           ({"fallback": "silent"}, "fallback")])
def test_bad_options_are_value_errors(options, match):
    with pytest.raises(ValueError, match=match):
        static.compile(lambda x: x, **options)


def test_compiling_a_compiled_function_returns_it():
    assert static.compile(double) is double
    again = static.compile(double, backend="interpret")
    assert again is not double and again.backend == "interpret" and again._traceable is double._traceable


# -- results of the same kind as the inputs ---------------------------------------------------------
def test_eager_tensors_in_tensors_out():
    out = static.compile(lambda x, y: (x + y, x * y))(eager.ones(2), eager.ones(2))
    assert all(isinstance(o, eager.Tensor) for o in out)


def test_numpy_in_numpy_out():
    f = static.compile(lambda x, y: {"s": x + y, "p": x * y})
    out = f(np.ones(2, np.float32), np.full(2, 3.0, np.float32))
    assert type(out["s"]) is np.ndarray and out["s"].dtype == np.float32
    np.testing.assert_array_equal(out["p"], [3.0, 3.0])


def test_a_tensor_among_arrays_gives_tensors():
    out = static.compile(lambda x, y: x + y)(np.ones(2, np.float32), eager.ones(2))
    assert isinstance(out, eager.Tensor)


def test_python_numbers_only_give_tensors():
    out = static.compile(lambda a, b: a * b)(2.0, 3.0)
    assert isinstance(out, eager.Tensor) and out.item() == 6.0


def test_non_tensor_outputs_are_returned_as_they_are():
    out = static.compile(lambda x: (x.sum(), x.shape[0], "label", None))(eager.ones(3))
    assert out[1:] == (3, "label", None) and out[0].item() == 3.0


# -- cache per signature, retrace reasons, the limit -------------------------------------------------
def test_same_signature_hits_the_cache():
    f = static.compile(lambda x: x + 1)
    for k in range(5):
        assert f(eager.full((3,), float(k))).tolist() == [k + 1.0] * 3
    assert len(f._cache) == 1 and f.retraces == []


def test_each_retrace_records_which_part_of_the_key_changed():
    f = static.compile(lambda x: x * 2)
    f(eager.ones(2))
    f(eager.ones(3))
    f(eager.ones(3, dtype=eager.float64))
    f(np.ones(3))
    f(eager.ones(3, requires_grad=True))
    with eager.no_grad():
        f(eager.ones(3))
    assert f.retraces == [
        "argument leaf 0 changed shape (2,) -> (3,) (dimension 0: 2 -> 3)",
        "argument leaf 0 changed dtype float32 -> float64",
        "argument leaf 0 changed kind (tensor -> array)",
        "argument leaf 0 changed kind (array -> tensor)",
        "grad mode changed",
    ]
    assert len(f._cache) == 6


def test_after_the_retrace_limit_it_warns_once_and_runs_eagerly():
    calls = []

    def f(x):
        # the append is replayed after every compiled call, with the value the trace computed
        calls.append("compiled" if ACTIVE.stack else "eager")
        return x * 2

    cf = static.compile(f, max_retraces=3, dynamic=False)  # each size its own trace
    for n in range(1, 5):  # one trace, then three retraces: within the limit
        cf(eager.ones(n))
    assert len(cf.retraces) == 3 and calls == ["compiled"] * 4
    with pytest.warns(RuntimeWarning, match=r"retraced 3 times.*changed shape \(4,\) -> \(5,\)"):
        out = cf(eager.ones(5))
    assert out.tolist() == [2.0] * 5 and calls[-1] == "eager"  # ran eagerly
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning
        assert cf(eager.ones(6)).tolist() == [2.0] * 6
        assert calls[-1] == "eager"
        cf(eager.ones(2))  # a signature compiled before still runs compiled
        assert calls[-1] == "compiled" and len(calls) == 7
    assert len(cf._cache) == 4


def test_default_retrace_limit_is_eight():
    cf = static.compile(lambda x: x + 1, dynamic=False)  # automatic dynamic shapes: one symbolic trace
    assert cf.max_retraces == 8
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in range(1, 10):
            cf(eager.ones(n))
    with pytest.warns(RuntimeWarning):
        cf(eager.ones(10))


# -- failures: fallback, and the cache left as it was ---------------------------------------------
def data_dependent(x):
    if x.sum() > 0:
        return x
    return -x


def test_fallback_eager_splits_at_the_data_dependent_branch():
    f = static.compile(data_dependent, fallback="eager")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a graph break, not a fallback: no warning
        assert f(eager.ones(2)).tolist() == [1.0, 1.0]
        assert f(-eager.ones(2)).tolist() == [1.0, 1.0]  # eager semantics: the branch is taken on data
        assert f(-eager.ones(3)).tolist() == [1.0, 1.0, 1.0]
    assert f._cache == {}  # the whole function has no graph: its pieces have (static.graph_breaks)
    assert "x.sum() > 0" in static.graph_breaks.describe(f)


def test_without_fallback_a_trace_error_propagates():
    with pytest.raises(static.TraceError):
        static.compile(data_dependent)(eager.ones(2))


def test_a_failed_trace_leaves_the_cache_unchanged():
    def f(x, strict):
        if strict:
            if x.sum() > 0:
                return x
        return x * 3

    cf = static.compile(f, static_argnums=1)
    assert cf(eager.ones(2), False).tolist() == [3.0, 3.0]
    before = dict(cf._cache)
    with pytest.raises(static.TraceError):
        cf(eager.ones(2), True)
    assert cf._cache == before and cf.retraces == []
    with pytest.raises(static.TraceError):  # and it is not remembered as "eager": it fails again
        cf(eager.ones(2), True)
    assert cf(eager.ones(4), False).tolist() == [3.0] * 4  # the next valid call compiles and runs
    assert len(cf._cache) == 2 and cf.retraces == ["argument leaf 0 changed shape (2,) -> (4,) (dimension 0: 2 -> 4)"]


def test_shape_error_in_first_trace_leaves_no_entry():
    cf = static.compile(lambda x, y: x + y)
    with pytest.raises(RuntimeError, match="size of tensor"):
        cf(eager.ones(2), eager.ones(3))
    assert cf._cache == {}
    assert cf(eager.ones(3), eager.ones(3)).tolist() == [2.0] * 3


# -- composition with eager autograd -------------------------------------------------------------------
def mlp_loss(x, w1, w2):
    return (eager.tanh(x @ w1) @ w2).pow(2).mean()


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal((3, 5)).astype(np.float32),
            rng.standard_normal((5, 2)).astype(np.float32))


def test_grad_fn_is_compiled_function_backward_and_gradients_equal_eager():
    x, w1, w2 = _params()
    ref = [eager.tensor(a, requires_grad=True) for a in (x, w1, w2)]
    mlp_loss(*ref).backward()
    ts = [eager.tensor(a, requires_grad=True) for a in (x, w1, w2)]
    out = static.compile(mlp_loss)(*ts)
    assert out.requires_grad and out.grad_fn.name() == "CompiledFunctionBackward"
    assert "CompiledFunctionBackward" in repr(out)
    out.backward()
    for t, r in zip(ts, ref):
        np.testing.assert_allclose(t.grad.numpy(), r.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_only_inputs_that_require_grad_get_gradients():
    x, w1, w2 = _params()
    tx, tw1, tw2 = eager.tensor(x), eager.tensor(w1, requires_grad=True), eager.tensor(w2)
    static.compile(mlp_loss)(tx, tw1, tw2).backward()
    assert tx.grad is None and tw2.grad is None and tw1.grad is not None


def test_no_grad_call_records_nothing():
    w = eager.ones(3, requires_grad=True)
    with eager.no_grad():
        out = static.compile(lambda w: (w * w).sum())(w)
    assert out.grad_fn is None and not out.requires_grad


def test_compiled_output_continues_into_eager_ops():
    w = eager.tensor([1.0, 2.0], requires_grad=True)
    f = static.compile(lambda w: w * w)
    (f(w).sum() * 3 + (w * 0).sum()).backward()
    np.testing.assert_allclose(w.grad.numpy(), [6.0, 12.0])


def test_several_outputs_some_unused_or_integer():
    def f(x):
        return x.exp(), x.sin(), x.argmax()

    x = eager.tensor([0.1, 0.5, 0.2], requires_grad=True)
    e, s, i = static.compile(f)(x)
    assert not i.requires_grad and i.item() == 1
    e.sum().backward()  # the sin output is unused: its gradient is zero
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.1, 0.5, 0.2]), rtol=1e-6)


def test_compiled_function_inside_an_eager_training_loop_matches_eager():
    x, w1, w2 = _params(3)
    compiled = static.compile(mlp_loss)
    runs = {}
    for name, loss_fn in (("eager", mlp_loss), ("compiled", compiled)):
        params = [eager.tensor(w1, requires_grad=True), eager.tensor(w2, requires_grad=True)]
        opt = eager.optim.SGD(params, lr=0.1) if hasattr(eager, "optim") else None
        losses = []
        for _ in range(5):
            loss = loss_fn(eager.tensor(x), *params)
            for p in params:
                p.grad = None
            loss.backward()
            if opt is not None:
                opt.step()
            else:
                with eager.no_grad():
                    for p in params:
                        p -= 0.1 * p.grad
            losses.append(loss.item())
        runs[name] = (losses, [p.detach().numpy() for p in params])
    np.testing.assert_allclose(runs["compiled"][0], runs["eager"][0], rtol=1e-5)
    for a, b in zip(runs["compiled"][1], runs["eager"][1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)
    assert compiled.retraces == [] and len(compiled._cache) == 1


def test_second_backward_without_retain_graph_is_refused_like_eager():
    w = eager.ones(2, requires_grad=True)
    out = static.compile(lambda w: (w * w).sum())(w)
    out.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        out.backward()


def test_inplace_change_of_a_saved_input_before_backward_is_detected():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    w = eager.tensor([3.0, 4.0])
    out = static.compile(lambda x, w: (x * w).sum())(x, w)  # the backward reads w
    w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_higher_order_through_a_compiled_backward_is_an_error_not_a_wrong_answer():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = static.compile(lambda x: (x ** 3).sum())(x)
    (g,) = eager.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.detach().numpy(), [3.0, 12.0])
    with pytest.raises(RuntimeError, match="static.grad"):
        g.sum().backward()


def test_inplace_write_back_with_gradients_keeps_the_old_value_for_the_backward():
    def f(p, x):
        loss = (p * x).sum()
        with eager.no_grad():
            x.mul_(10)
        return loss

    p = eager.tensor([1.0, 2.0], requires_grad=True)
    x = eager.tensor([3.0, 4.0])
    static.compile(f)(p, x).backward()
    np.testing.assert_allclose(x.numpy(), [30.0, 40.0])
    np.testing.assert_allclose(p.grad.numpy(), [3.0, 4.0])  # the gradient saw x before the update


def test_compiled_function_called_inside_another_trace_is_inlined():
    inner = static.compile(lambda x: x.exp())
    outer = static.compile(lambda x: inner(x).sum())
    g = outer.ir(eager.ones(3))
    assert "exp" in str(g)
    assert inner._cache == {}
    assert outer(eager.zeros(3)).item() == 3.0


def test_keyword_arguments_bind_to_positions_and_defaults_apply():
    @static.compile(static_argnums=2)
    def f(x, lr=0.5, power=2):
        return (x ** power) * lr

    assert f(eager.ones(2), lr=0.25).tolist() == [0.25, 0.25]
    assert f(eager.ones(2), 0.25, 2).tolist() == [0.25, 0.25]
    assert len(f._cache) == 1  # the same signature either way
    assert f(x=eager.full((2,), 2.0), power=3).tolist() == [4.0, 4.0]  # power is static: a new trace
    assert isinstance(f.ir(eager.ones(2), power=3), static.Graph)
    with pytest.raises(TypeError):
        f(eager.ones(2), nonsense=1)


def test_decorating_a_method_binds_the_instance():
    class Scaler:
        def __init__(self, k):
            self.k = k

        @static.compile
        def apply(self, x):
            return x * self.k

    a, b = Scaler(2.0), Scaler(3.0)
    assert a.apply(eager.ones(2)).tolist() == [2.0, 2.0]
    assert b.apply(eager.ones(2)).tolist() == [3.0, 3.0]  # another instance: another static argument
    assert len(Scaler.apply._cache) == 2
