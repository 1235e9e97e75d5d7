"""Independent 0-d ufunc calls batched into one array call (codegen/batching.py), local
aliases of the 0-d statements, and the cheap floating-point error switch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from gm_workloads import w4, w4_inputs
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

import eager
import static
from codegen import runtime, settings
from codegen.numpy_gen import NumpyModule
from eager.ops import REGISTRY
from static.ir import parse_ir


def _vg(fn, *arrays):
    compiled = static.value_and_grad(fn, backend="numpy")
    return compiled(*arrays), compiled.source(*arrays)


@pytest.mark.parametrize("op", sorted(name for name, op in REGISTRY.items() if op.batchable))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_ufunc_gives_the_same_bits_on_one_element_as_in_an_array(op, dtype):
    """What batching rests on: the element of an array call equals the call on the scalar."""
    from codegen.lowering import lowering_for

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(300) * s for s in (1e-3, 1.0, 30.0, 1e4)]).astype(dtype)
    if op in ("log", "sqrt", "rsqrt", "log1p"):
        x = np.abs(x) + dtype(1e-3)
    call = lowering_for(op).numpy.call
    attrs = {"beta": 1.0, "threshold": 20.0, "approximate": "'tanh'"}
    # a record's forward as the call (`_rt.forward(name, np, {args}, **{attrs})`) takes its operand as args
    text = call.format("a", args="a", attrs="{}", **attrs)
    fn = eval(f"lambda a: {text}", {"np": np, "_rt": runtime})  # noqa: S307
    with np.errstate(all="ignore"):
        batched = fn(x)
        one_by_one = np.array([fn(s) for s in x], dtype=batched.dtype)
    np.testing.assert_array_equal(batched.view(np.uint8), one_by_one.view(np.uint8))


def test_w4_backward_computes_its_cosines_in_one_call():
    (x,) = w4_inputs()
    _, src = _vg(w4, x)
    assert src.count("np.cos(np.array([") == 1
    assert "# batch: 100 independent 0-d `cos` ops as one array call" in src
    assert "np_cos(" not in src  # no cos left as a scalar call
    assert src.count("np_sin(") == 100  # the forward's sines form a chain: none batched


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batched_module_matches_the_interpreter_bitwise(dtype):
    def f(x):
        ys = [eager.exp(x * float(k)) for k in range(12)]  # 12 independent exps
        return sum(ys[1:], ys[0])

    x = np.asarray(0.37, dtype=dtype)
    (val, grad), src = _vg(f, x)
    assert "independent 0-d `exp` ops" in src
    ref_val, ref_grad = static.value_and_grad(f, backend="interpret")(x)
    assert val.dtype == dtype and grad.dtype == dtype
    assert val.tobytes() == np.asarray(ref_val).tobytes()
    assert grad.tobytes() == np.asarray(ref_grad).tobytes()


def _plan(text: str) -> list:
    graph = parse_ir(text)
    module = NumpyModule(graph)
    return sorted({id(b): [n.outputs[0].name for n in b.members] for b in module.batches.values()}.values())


def _sins(n: int, chained: bool) -> str:
    lines = ["func @f(%x: f32[]) -> (f32[]) {"]
    prev = "x"
    for i in range(n):
        lines.append(f"  %s{i} = sin %{prev if chained else 'x'} : f32[]")
        prev = f"s{i}"
    acc = "s0"
    for i in range(1, n):
        lines.append(f"  %a{i} = add %{acc}, %s{i} : f32[]")
        acc = f"a{i}"
    lines += [f"  return %{acc}", "}"]
    return "\n".join(lines)


def test_independent_calls_are_batched_and_a_chain_is_not():
    assert _plan(_sins(10, chained=False)) == [[f"s{i}" for i in range(10)]]
    assert _plan(_sins(10, chained=True)) == []


def test_too_few_calls_are_left_alone():
    assert _plan(_sins(settings.MIN_BATCH - 1, chained=False)) == []


def test_a_call_that_needs_an_earlier_batch_member_starts_a_new_batch():
    # t_i = sin(x*i) for 8 i; u_i = sin(t_i): the u's read the t's, so they form a batch of
    # their own, placed after the first
    lines = ["func @f(%x: f32[]) -> (f32[]) {"]
    for i in range(8):
        lines.append(f"  %m{i} = mul %x, {float(i)} : f32[]")
        lines.append(f"  %t{i} = sin %m{i} : f32[]")
    for i in range(8):
        lines.append(f"  %u{i} = sin %t{i} : f32[]")
    acc = "u0"
    for i in range(1, 8):
        lines.append(f"  %a{i} = add %{acc}, %u{i} : f32[]")
        acc = f"a{i}"
    lines += [f"  return %{acc}", "}"]
    assert _plan("\n".join(lines)) == [[f"t{i}" for i in range(8)], [f"u{i}" for i in range(8)]]


def test_value_names_never_clash_with_local_aliases():
    def f(np_sin, K0):  # argument names equal to the aliases the generator would pick
        return eager.sin(np_sin) * 2.0 + K0

    args = [np.asarray(0.5, np.float32), np.asarray(1.5, np.float32)]
    got = static.compile(f, backend="numpy")(*args)
    ref = static.compile(f, backend="interpret")(*args)
    assert np.asarray(got).tobytes() == np.asarray(ref).tobytes()


def test_floating_point_errors_are_silent_inside_and_restored_after():
    def f(x):
        return x * 1e30 * 1e30

    compiled = static.compile(f, backend="numpy")
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = compiled(np.asarray(3.0, np.float32))  # overflows: no RuntimeWarning
    assert np.isinf(out)
    assert np.geterr() == before
    with pytest.warns(RuntimeWarning):
        np.float32(1e30) * np.float32(1e30)


_UNARY = ["exp", "sin", "cos", "tanh", "sigmoid", "abs", "softplus", "erf"]
_BINARY = ["add", "mul", "sub"]
_program = st.lists(st.tuples(st.sampled_from(_UNARY + _BINARY), st.integers(0, 9), st.integers(0, 9)),
                    min_size=1, max_size=24)


@hypothesis_settings(max_examples=40, deadline=None)
@given(_program)
def test_random_scalar_programs_are_bitwise_equal_with_tiny_batches(steps):
    """Batches of two and more, wherever the planner finds them: forward and gradient
    keep the interpreter's bits (a batch placed too early would raise NameError, one that
    reads a wrong value would change the bits)."""
    def fn(a, b):
        values = [a, b, a * 0.5 + 0.25]
        for kind, i, j in steps:
            x, y = values[i % len(values)], values[j % len(values)]
            values.append(getattr(eager, kind)(x * 0.3) if kind in _UNARY else getattr(eager, kind)(x, y))
        return values[-1] * values[-2] + values[-3]

    args = [np.asarray(0.7, np.float32), np.asarray(-1.3, np.float32)]
    saved = settings.MIN_BATCH
    settings.MIN_BATCH = 2
    try:
        got = static.value_and_grad(fn, argnums=(0, 1), backend="numpy")(*args)
    finally:
        settings.MIN_BATCH = saved
    ref = static.value_and_grad(fn, argnums=(0, 1), backend="interpret")(*args)
    flat = lambda r: [np.asarray(r[0])] + [np.asarray(g) for g in r[1]]  # noqa: E731
    for x, y in zip(flat(got), flat(ref)):
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
