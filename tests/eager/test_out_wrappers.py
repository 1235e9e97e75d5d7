"""eager._out's wrappers: each `eager.<fn>` given `out=` keeps its own parameters (names,
kinds, defaults) and passes every argument on unchanged when `out` is not given."""
from __future__ import annotations

import inspect
import types

import numpy as np
import pytest

import eager
from eager import _out


def _wrapped_functions():
    for name, fn in sorted(vars(eager).items()):
        if isinstance(fn, types.FunctionType) and "_out.py <rendered" in fn.__code__.co_filename:
            yield name, fn


def test_every_wrapper_has_its_functions_parameters_and_a_keyword_only_out():
    names = []
    for name, fn in _wrapped_functions():
        names.append(name)
        own = inspect.signature(fn, follow_wrapped=False).parameters
        inner = inspect.signature(fn.__wrapped__, follow_wrapped=False).parameters
        assert own["out"].kind is inspect.Parameter.KEYWORD_ONLY and own["out"].default is None, name
        got = [(p.name, p.kind, p.default) for p in own.values() if p.name != "out"]
        assert got == [(p.name, p.kind, p.default) for p in inner.values()], name
    # (sin, exp, mul, add, clamp ... take out= of their own: generated from their records, eager._surface)
    assert {"matmul", "sum"} <= set(names)


def _all_kinds(a, b=2, /, c=3, *rest, d, e=5, **more):
    return a, b, c, rest, d, e, more


def test_every_kind_of_parameter_is_passed_on():
    fn = _out.with_out(_all_kinds)
    assert fn(1, d=4) == (1, 2, 3, (), 4, 5, {})
    assert fn(1, 2, 3, 4, 5, d=6, z=7) == (1, 2, 3, (4, 5), 6, 5, {"z": 7})
    with pytest.raises(TypeError):
        fn(a=1, d=4)  # positional-only stays positional-only
    assert fn.__wrapped__ is _all_kinds and fn.__name__ == "_all_kinds"


def test_a_wrapper_of_a_functools_wraps_function_uses_the_outer_signature():
    def inner(x, y):
        return x - y

    def outer(*args, **kwargs):  # as a decorator leaves it: __wrapped__ names other parameters
        return inner(*args, **kwargs)

    outer.__wrapped__ = inner  # type: ignore[attr-defined]
    fn = _out.with_out(outer)
    assert fn(5, y=2) == 3


def test_out_receives_the_result_and_refuses_autograd():
    x = eager.tensor([0.5, 1.0])
    o = eager.empty(2)
    assert eager.sin(x, out=o) is o
    np.testing.assert_array_equal(o.numpy(), np.sin(np.array([0.5, 1.0], np.float32)))
    w = eager.tensor([0.5], requires_grad=True)
    with pytest.raises(RuntimeError, match="sin\\(\\): functions with out="):
        eager.sin(w, out=eager.empty(1))
