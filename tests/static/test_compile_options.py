"""static.compile looks like the function it wraps and checks its options when they are given:
update_wrapper, keyword-only parameters and **kwargs, static_argnames, fullgraph, and clear
errors (with what would be valid) at decoration time rather than at the first call."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import eager
import static


def scaled(x, y=2.0, *, scale=3.0, **extra):
    """Doc of scaled."""
    out = x * y * scale
    for _, v in sorted(extra.items()):
        out = out + v
    return out


def power(x, n):
    return x * n if n > 1 else x


def test_a_compiled_function_looks_like_the_function_it_wraps():
    f = static.compile(scaled)
    assert f.__name__ == "scaled" and f.__doc__ == "Doc of scaled." and f.__wrapped__ is scaled
    assert f.__module__ == scaled.__module__
    assert inspect.signature(f) == inspect.signature(scaled)


def test_compile_documents_its_options():
    params = inspect.signature(static.compile).parameters
    assert list(params)[1:] == ["backend", "static_argnums", "static_argnames", "fallback", "fullgraph",
                                "max_retraces", "opt_level", "passes", "fast_math", "check"]
    assert all(name in static.compile.__doc__ for name in list(params)[1:])


def test_keyword_only_parameters_and_kwargs():
    f = static.compile(scaled)
    x = eager.ones(2)
    for args, kwargs in [((x,), {}), ((x,), {"scale": 1.0}), ((x, 1.0), {"scale": 2.0, "bias": eager.ones(2)}),
                         ((x,), {"y": 4.0, "a": eager.ones(2), "b": eager.full((2,), 2.0)})]:
        np.testing.assert_allclose(f(*args, **kwargs).numpy(), scaled(*args, **kwargs).numpy())


def test_a_new_keyword_value_is_not_a_retrace():
    f = static.compile(scaled)
    f(eager.ones(2), scale=1.0)
    np.testing.assert_allclose(f(eager.ones(2), scale=5.0).numpy(), [10.0, 10.0])
    assert f.retraces == []  # numbers are 0-d inputs, keywords too


@pytest.mark.parametrize("names", ["n", ("n",)])
def test_static_argnames_for_positional_parameters(names):
    f = static.compile(power, static_argnames=names)
    np.testing.assert_allclose(f(eager.ones(2), 3).numpy(), [3.0, 3.0])  # a Python branch on n: static
    np.testing.assert_allclose(f(eager.ones(2), n=1).numpy(), [1.0, 1.0])


def test_static_argnames_for_keyword_only_parameters():
    def g(x, *, n):
        return x * n if n > 1 else x

    f = static.compile(g, static_argnames="n")
    np.testing.assert_allclose(f(eager.ones(2), n=3).numpy(), [3.0, 3.0])
    np.testing.assert_allclose(f(eager.ones(2), n=1).numpy(), [1.0, 1.0])
    assert len(f.retraces) == 1 and "n" in f.retraces[0]


@pytest.mark.parametrize("option, match", [
    ({"mode": "max-autotune"}, "unexpected option 'mode'.*opt_level.*valid options: backend"),
    ({"dynamic": "yes"}, "dynamic must be None"),
    ({"foo": 1}, "unexpected option 'foo'; valid options: backend, static_argnums, static_argnames"),
])
def test_unknown_options_are_refused_with_the_valid_ones(option, match):
    with pytest.raises(TypeError, match=match):
        static.compile(power, **option)
    with pytest.raises(TypeError, match=match):
        static.compile(**option)  # the decorator form: refused at once


@pytest.mark.parametrize("option, error, match", [
    ({"max_retraces": "3"}, TypeError, "max_retraces must be a non-negative int, got str"),
    ({"max_retraces": -1}, ValueError, "max_retraces must be a non-negative int, got -1"),
    ({"max_retraces": True}, TypeError, "max_retraces"),
    ({"opt_level": "x"}, ValueError, "opt_level must be 0, 1 or 2"),
    ({"opt_level": 3}, ValueError, "opt_level must be 0, 1 or 2"),
    ({"static_argnums": "a"}, TypeError, "static_argnums must be an int or a sequence of ints"),
    ({"static_argnums": (1.5,)}, TypeError, "static_argnums must be ints, got 1.5"),
    ({"passes": "cse"}, TypeError, r"passes must be a list of pass names \(passes=\['cse'\]\)"),
    ({"passes": ["nope"]}, ValueError, "unknown pass name"),
    ({"backend": "gpu"}, ValueError, "unknown backend 'gpu'"),
    ({"fallback": "yes"}, ValueError, "fallback must be None or 'eager'"),
    ({"fullgraph": True, "fallback": "eager"}, ValueError, "fullgraph=True never falls back"),
    ({"fast_math": "yes"}, TypeError, "fast_math must be True or False"),
    ({"static_argnames": 3}, TypeError, "static_argnames must be a name or a sequence of names, got int"),
    ({"static_argnames": ("n", 2)}, TypeError, r"static_argnames must be strings, got \('n', 2\)"),
    ({"passes": 3}, TypeError, "passes must be a list of pass names or a dict, got int"),
    ({"passes": ("cse", 1)}, TypeError, r"passes must name passes by string, got \['cse', 1\]"),
])
def test_bad_options_are_refused_at_decoration(option, error, match):
    with pytest.raises(error, match=match):
        static.compile(**option)
    with pytest.raises(error, match=match):
        static.compile(power, **option)


def test_positions_and_names_are_checked_against_the_signature():
    with pytest.raises(ValueError, match=r"static_argnums=5 refers to position 5, but power\(x, n\) accepts 2"):
        static.compile(power, static_argnums=5)
    with pytest.raises(ValueError, match=r"refers to position -3"):
        static.compile(power, static_argnums=(-3,))
    with pytest.raises(ValueError, match="static_argnames names 'm', which is not a parameter of power"):
        static.compile(power, static_argnames="m")
    static.compile(lambda *args: args[0], static_argnums=5)  # *args: any position may exist


def test_compile_of_something_that_is_not_callable():
    with pytest.raises(TypeError, match="expects a function or an eager.nn.Module to compile, got int 5"):
        static.compile(5)


def test_fullgraph_never_falls_back():
    def branchy(x):
        return x if x.sum() > 0 else -x

    with pytest.raises(static.TraceError):
        static.compile(branchy, fullgraph=True)(eager.ones(2))
    f = static.compile(lambda x: x * 2, fullgraph=True, max_retraces=0)
    f(eager.ones(1))
    with pytest.raises(RuntimeError, match="changed shape.*fullgraph=True does not fall back"):
        f(eager.ones(2))


@pytest.mark.parametrize("argnums, error, match", [
    (3, ValueError, r"static.grad: argnums=3 refers to argument 3, but power has 2 positional parameter"),
    ("x", TypeError, "static.grad: argnums must be an int or a tuple of ints"),
    ((), ValueError, "static.grad: argnums is empty"),
    ((0, 1.0), TypeError, "static.grad: argnums must be ints"),
])
def test_bad_argnums_of_static_grad_name_the_parameter(argnums, error, match):
    with pytest.raises(error, match=match):
        static.grad(power, argnums=argnums)


def test_grad_errors_name_only_what_exists():
    with pytest.raises(TypeError, match="must return a scalar") as info:
        static.grad(lambda x: x * 2)(eager.ones(2))
    assert "vjp" not in str(info.value) or hasattr(static, "vjp")


def test_transforms_take_compile_options_and_refuse_others():
    g = static.grad(power, opt_level=1)
    assert g.opt_level == 1
    with pytest.raises(TypeError, match="unexpected option 'mode'; valid options: backend"):
        static.value_and_grad(power, mode="max-autotune")
