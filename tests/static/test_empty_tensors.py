"""Empty and zero-size tensors through every registry op: each op's samples with a dimension
cut to 0 (the leading one of every operand that shares it, the trailing one, or the first
operand's alone: cat/stack of an empty and a full tensor) compile and agree with eager in
both CPU backends (generated NumPy and native C++).

The cases are traced one by one (cheap) and compiled together in a few graphs per backend
(one native build each instead of hundreds); a failing graph is split down to the ops that
fail, so the report names them."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from op_samples import OPS, outputs, sample_cases, sample_program

import eager
import static
from codegen import native_build
from eager.ops import REGISTRY
from gmbase import dtypes
from gmops import TensorSpec

CHUNK = 80  # cases per compiled graph


def _variants(arrays: tuple) -> list:
    """The sample's operands with zero-size versions of its arrays (distinct variants only):
    the leading, trailing and (3-D and up) second dimension cut to 0 in every array that
    shares it, and the first array's leading dimension alone."""
    nds = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray) and a.ndim >= 1 and a.size > 0]
    if not nds:
        return []
    first = arrays[nds[0]]
    out, seen = [], set()

    def cut(select: Callable[[int, np.ndarray], bool], axis: int) -> None:
        new = tuple(np.take(a, np.arange(0), axis=axis) if i in nds and select(i, a) else a
                    for i, a in enumerate(arrays))
        key = tuple(a.shape if isinstance(a, np.ndarray) else None for a in new)
        if key not in seen:
            seen.add(key)
            out.append(new)

    cut(lambda i, a: a.shape[0] == first.shape[0], 0)
    cut(lambda i, a: a.shape[-1] == first.shape[-1], -1)
    cut(lambda i, a: i == nds[0], 0)
    if first.ndim >= 3:  # a middle dimension (channels of a convolution, a sequence's length)
        cut(lambda i, a: a.ndim == first.ndim and a.shape[1] == first.shape[1], 1)
    return out


def _is_body(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(_is_body(v) for v in value)
    return isinstance(value, str) and value.startswith("func @")


def _cases() -> list:
    """(label, fn, arrays) of every zero-size variant eager runs; ops whose ordinary sample
    does not trace (data-dependent shapes) are left out."""
    cases = []
    for name in OPS:
        for k, (arrays, attrs) in enumerate(sample_cases(name)):
            if any(_is_body(v) for v in attrs.values()):
                continue  # control flow: its bodies are typed IR for the sample's shapes
            fn, inputs = sample_program(REGISTRY[name], arrays, attrs)
            try:
                static.trace(fn, *[eager.tensor(a) for a in inputs])
            except Exception:  # noqa: BLE001 - not traceable even when full: not this test's subject
                continue
            for j, variant in enumerate(_variants(arrays)):
                vfn, vinputs = sample_program(REGISTRY[name], variant, attrs)
                try:  # the op's own shape rule must accept the variant (internal ops' eager forwards do not check)
                    REGISTRY[name].abstract(*[TensorSpec(a.shape, dtypes.from_numpy(a.dtype))
                                              if isinstance(a, np.ndarray) else a for a in variant], **attrs)
                except Exception:  # noqa: BLE001 - a shape the op refuses: nothing to compare
                    continue
                try:
                    expected = vfn(*[eager.tensor(a) for a in vinputs])
                except Exception:  # noqa: BLE001 - eager refuses this shape (as PyTorch does): nothing to compare
                    continue
                if not all(isinstance(o, eager.Tensor) for o in outputs(expected)):
                    continue
                cases.append((f"{name}[{k}.{j}] {[getattr(a, 'shape', a) for a in vinputs]}", vfn, vinputs))
    return cases


# ops whose attributes fix a shape: zero-size versions with the attributes to match
EXTRA = [
    ("reshape", (np.zeros((0, 4)),), {"shape": (0, 2, 2)}),
    ("reshape", (np.zeros((3, 0)),), {"shape": (0, 5)}),
    ("expand", (np.zeros((3, 1)),), {"shape": (0, 3, 4)}),
    ("expand", (np.zeros((3, 1)),), {"shape": (2, 3, 0)}),
    ("expand", (np.zeros((0, 1)),), {"shape": (2, 0, 4)}),
    ("full", (), {"shape": (0, 3), "value": 0.5, "dtype": eager.float64}),
    ("full", (), {"shape": (2, 0, 1), "value": 1.0, "dtype": eager.float32}),
]


def _extra_cases() -> list:
    cases = []
    for k, (name, arrays, attrs) in enumerate(EXTRA):
        fn, inputs = sample_program(REGISTRY[name], arrays, attrs)
        fn(*[eager.tensor(a) for a in inputs])  # eager runs it (as PyTorch does)
        cases.append((f"{name}[extra {k}] {[a.shape for a in inputs]} {attrs}", fn, inputs))
    return cases


CASES = _cases() + _extra_cases()


def _combined(cases: list) -> tuple[Callable[..., Any], list]:
    spans, flat = [], []
    for _, fn, inputs in cases:
        spans.append((fn, len(flat), len(flat) + len(inputs)))
        flat.extend(inputs)

    def program(*xs: Any) -> tuple:
        results: list = []
        for fn, lo, hi in spans:
            results.extend(outputs(fn(*xs[lo:hi])))
        return tuple(results)

    return program, flat


def _problems(cases: list, backend: str) -> list:
    """Labels (with the error) of the cases whose compiled result differs from eager's or
    that do not compile; one compile when all is well, a bisection when not."""
    program, flat = _combined(cases)
    tensors = [eager.tensor(a) for a in flat]
    try:
        got = outputs(static.compile(program, backend=backend)(*tensors))
        expected = outputs(program(*tensors))
        bad = []
        for g, e in zip(got, expected):
            if g.dtype != e.dtype or tuple(g.shape) != tuple(e.shape):
                bad.append(f"{g.dtype}{tuple(g.shape)} compiled, {e.dtype}{tuple(e.shape)} eager")
            elif e.numel():
                np.testing.assert_allclose(g.numpy(), e.numpy(), rtol=1e-5, atol=1e-6, equal_nan=True)
        if len(got) != len(expected):
            bad.append(f"{len(got)} results compiled, {len(expected)} eager")
        if not bad:
            return []
        problem = "; ".join(bad[:3])
    except Exception as exc:  # noqa: BLE001 - reported with the ops that cause it
        problem = f"{type(exc).__name__}: {str(exc)[:300]}"
    if len(cases) == 1:
        return [f"{cases[0][0]}: {problem}"]
    half = len(cases) // 2
    return _problems(cases[:half], backend) + _problems(cases[half:], backend)


def test_there_are_zero_size_cases_for_most_ops():
    ops = {label.split("[")[0] for label, _, _ in CASES}
    assert len(CASES) > 100 and len(ops) > 0.5 * len(OPS), (len(CASES), len(ops))
    assert {"cat", "stack", "sum", "matmul", "add", "reshape", "expand", "full"} <= ops
    # nearly every op has a case: the ones without are control flow (bodies typed for the
    # sample's shapes) and ops whose every zero-size variant eager refuses, as PyTorch does
    missing = sorted(set(OPS) - ops)
    assert len(missing) <= 0.1 * len(OPS), missing


@pytest.mark.parametrize("chunk", range(0, max(len(CASES), 1), CHUNK))
def test_zero_size_tensors_compile_and_agree_with_eager_numpy(chunk):
    problems = _problems(CASES[chunk:chunk + CHUNK], "numpy")
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(not native_build.availability()[0], reason=f"no C++ compiler: {native_build.availability()[1]}")
def test_zero_size_tensors_compile_and_agree_with_eager_native():
    problems = []
    for chunk in range(0, len(CASES), 4 * CHUNK):
        problems += _problems(CASES[chunk:chunk + 4 * CHUNK], "native")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_views_of_values_made_without_inputs(backend):
    """A view (reshape, transpose, slice) of a value whose producer reads no input (a
    constant, an arange, a full of size 0) in a graph with empty tensors."""
    if backend == "native" and not native_build.availability()[0]:
        pytest.skip("no C++ compiler")

    def program(x, e):
        a = eager.arange(6.0).reshape(2, 3).t()
        z = eager.zeros(0, 3).t()
        parts = eager.cat([e, eager.zeros(0, 3)]).reshape(-1, 3)
        n = eager.linalg.norm(e) + eager.stack([e, e]).sum()
        return a * x, z + 1.0, parts.t(), n.reshape(1), eager.cat([e, x.t()]).transpose(0, 1)

    x, e = eager.ones(3, 2), eager.zeros(0, 3)
    got = static.compile(program, backend=backend)(x, e)
    for g, w in zip(got, program(x, e)):
        assert tuple(g.shape) == tuple(w.shape)
        np.testing.assert_allclose(g.numpy(), w.numpy())


VIEW_OF_FULL = """func @f(%x: f32[3,2], %e: f32[0,3]) -> (f32[3,2], f32[3,0], f32[0,3]) {
  %0 = full {dtype = f32, shape = [2, 3], value = 0.5} : f32[2,3]
  %1 = transpose %0 {dim0 = 0, dim1 = 1} : f32[3,2]
  %2 = mul %1, %x : f32[3,2]
  %3 = tanh %2 : f32[3,2]
  %4 = full {dtype = f32, shape = [0, 3], value = 1.0} : f32[0,3]
  %5 = transpose %4 {dim0 = 0, dim1 = 1} : f32[3,0]
  %6 = exp %5 : f32[3,0]
  %7 = index %0 {key = [["slice", 0, 0, none]], n_index = 0} : f32[0,3]
  %8 = add %7, %e : f32[0,3]
  return %3, %6, %8
}"""


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_generated_code_for_a_view_of_a_value_with_no_inputs(backend):
    """The IR as written (no passes fold the constants away): the native generator looked
    for the first operand of a view chain's producer and raised IndexError on `full`."""
    import codegen  # noqa: PLC0415

    if backend == "native" and not native_build.availability()[0]:
        pytest.skip("no C++ compiler")
    graph = static.parse_ir(VIEW_OF_FULL)
    x, e = np.linspace(-1, 1, 6, dtype=np.float32).reshape(3, 2), np.zeros((0, 3), np.float32)
    got = codegen.build(graph, backend).run([x, e])
    expected = static.run_graph(graph, [x, e])
    for g, w in zip(got, expected):
        assert g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-6)


# -- the two front-door errors of issue 32, worded as static.compile's docstring describes -------------
def test_compile_of_a_non_callable_names_what_it_takes():
    with pytest.raises(TypeError, match=r"static.compile expects a function or an eager.nn.Module to compile, got int 5"):
        static.compile(5)


@pytest.mark.parametrize("target, argnums, shown", [
    (lambda x, y: x, 2, r"<lambda>\(x, y\) accepts 2 positional argument\(s\)"),
    (lambda x, y: x, (-3,), r"-3, but <lambda>\(x, y\)"),
    (eager.nn.Linear(2, 2), 1, r"Linear.forward\(input\) accepts 1 positional argument\(s\)"),
])
def test_out_of_range_static_argnums_name_the_signature(target, argnums, shown):
    with pytest.raises(ValueError, match=r"static.compile: static_argnums=.* refers to position .*" + shown):
        static.compile(target, static_argnums=argnums)
