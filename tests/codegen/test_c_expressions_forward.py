"""softplus and gelu are spelled in C once, by their records' forward (codegen/c_forward.py runs
it on C text): the native C++ and the CUDA kernels both carry that text, follow an edit of the
forward, and no hand-written helper or table expression repeats the formula. Where the compiled
code uses it (float16, which `decompose` leaves alone; an undecomposed region), the values are
eager's and PyTorch's."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import c_helpers, native_build
from codegen.c_forward import NoCForm, forward_c_expr
from codegen.lowering import TABLE
from codegen.native_gen.driver import generate_c
from gmops import REGISTRY

sys.path.insert(0, str(Path(__file__).parent))
from test_codegen_cupy import _single_op_region  # noqa: E402

needs_cxx = pytest.mark.skipif(not native_build.availability()[0], reason="no C++ compiler")

_REGIONS = {
    "softplus": _single_op_region("softplus").replace("beta = 1.0, threshold = 20.0", "beta = 2.0, threshold = 15.0"),
    "gelu_none": _single_op_region("gelu"),
    "gelu_tanh": _single_op_region("gelu").replace('"none"', '"tanh"'),
}


def _sources(key: str) -> tuple[str, str]:
    graph = static.parse_ir(_REGIONS[key])
    return generate_c(graph), codegen.generate_source(static.parse_ir(_REGIONS[key]), "cupy")[0]


def _kernel_line(src: str) -> str:
    """The C statement computing the op's value in a kernel."""
    found = [line for line in src.splitlines() if re.search(r"\bt_y\b.*=", line) and "(" in line]
    assert found, src[-2000:]
    return found[0]


@pytest.mark.parametrize("key", sorted(_REGIONS))
def test_native_and_cuda_kernels_carry_the_forward_text(key):
    name, attrs = ("softplus", {"beta": 2.0, "threshold": 15.0}) if key == "softplus" else \
        ("gelu", {"approximate": key.split("_")[1]})
    native, cuda = _sources(key)
    for src in (native, cuda):
        line = _kernel_line(src)
        # the forward's text with any spelling of the operand (a load, a parameter, a local)
        pattern = re.escape(forward_c_expr(REGISTRY[name], ["OPERAND"], attrs, "float"))
        assert re.search(pattern.replace("OPERAND", r"[\w\[\]]+"), line), (key, line)
    assert not re.search(r"gm_softplus\(", native + cuda) and "gm_softplus" not in c_helpers.PREAMBLE


def test_an_edit_of_the_forward_reaches_both_generators(monkeypatch):
    """The record is the one source: change softplus's forward and both kernels change with it."""
    op = REGISTRY["softplus"]

    def edited(xp, x, beta=1.0, threshold=20.0):
        return xp.expm1(x * beta) / threshold

    monkeypatch.setattr(op, "forward", edited)
    native, cuda = _sources("softplus")
    for src in (native, cuda):
        line = _kernel_line(src)
        assert "expm1(" in line and "log1p(" not in line, line
        assert "((float)15.0)" in line and "((float)2.0)" in line, line


def test_the_table_spells_no_formula_of_its_own():
    for name in ("softplus", "gelu"):
        assert TABLE[name].cupy.expr == "{c_forward}", name


def test_a_forward_without_a_c_spelling_raises():
    class Probe:
        name = "probe"

        @staticmethod
        def forward(xp, x):
            return xp.cumsum(x)  # not a pointwise record

    with pytest.raises(NoCForm, match="cumsum"):
        forward_c_expr(Probe, ["x"], {}, "float")

    class Branching:
        name = "branching"

        @staticmethod
        def forward(xp, x):
            return x if x > 0 else -x  # a branch on the element's value

    with pytest.raises(NoCForm, match="branching"):
        forward_c_expr(Branching, ["x"], {}, "float")


def _torch_reference(key: str, x: np.ndarray) -> np.ndarray:
    torch = pytest.importorskip("torch")
    t = torch.tensor(x.astype(np.float32))
    if key == "softplus":
        out = torch.nn.functional.softplus(t, beta=2.0, threshold=15.0)
    else:
        out = torch.nn.functional.gelu(t, approximate=key.split("_")[1])
    return out.numpy()


def _eager_call(key: str):
    if key == "softplus":
        return lambda t: eager.nn.functional.softplus(t, beta=2.0, threshold=15.0)
    return lambda t: eager.nn.functional.gelu(t, approximate=key.split("_")[1])


@needs_cxx
@pytest.mark.parametrize("key", sorted(_REGIONS))
def test_float16_through_the_native_kernel_matches_eager_and_torch(key):
    """float16 is not decomposed (eager computes it in float32, rounded once): the compiled
    kernel computes the record's forward text in float32, with the values around it fused."""
    x = np.concatenate([np.linspace(-12, 12, 97), [0.0, -0.0, 30.0, -30.0, np.inf, -np.inf, np.nan]]).astype(np.float16)
    call = _eager_call(key)
    fn = static.compile(lambda t: call(t * 1.5) + 1.0, backend="native")
    got = fn(eager.tensor(x)).numpy()
    expected = call(eager.tensor(x) * 1.5).numpy() + np.float16(1.0)
    assert got.dtype == np.float16
    # both compute in float32 and round once (eager's forward upcasts float16, as PyTorch's opmath)
    np.testing.assert_array_equal(got, expected)
    reference = (_torch_reference(key, (x * np.float16(1.5)).astype(np.float16)) + 1.0).astype(np.float16)
    finite = np.isfinite(x)  # (PyTorch's float gelu gives NaN at +inf; eager and the kernel give inf)
    np.testing.assert_allclose(got[finite].astype(np.float32), reference[finite].astype(np.float32), rtol=2e-3,
                               atol=2e-3)
    source = fn.source(eager.tensor(x))
    assert "_rt.forward" not in source, "a library call: the op was not inlined"


@needs_cxx
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("key", sorted(_REGIONS))
def test_the_undecomposed_region_matches_eager(key, dtype):
    """The single-op region (no decompose pass) run by the native backend: the C text is the
    forward's, so the values agree with eager's to a few ulp."""
    text = _REGIONS[key].replace("f32", "f64") if dtype == np.float64 else _REGIONS[key]
    graph = static.parse_ir(text)
    x = np.concatenate([np.linspace(-25, 25, 5), [0.0, 1e-3, -1e-3]]).astype(dtype)
    got = codegen.build(graph, "native").run([x])[0]
    expected = _eager_call(key)(eager.tensor(x)).numpy()
    np.testing.assert_allclose(np.asarray(got), expected, rtol=4 * np.finfo(dtype).eps, atol=4 * np.finfo(dtype).eps)


def _record_spelled_ops() -> list[str]:
    """Pointwise ops whose kernel expression is their record's c_expr (the table adds none of its own)."""
    return sorted(op.name for op in REGISTRY.values()
                  if op.pointwise and op.c_expr and TABLE.get(op) is not None and TABLE[op].cupy.expr == op.c_expr
                  and TABLE[op].pointwise and "{" not in op.c_expr.replace("{0}", "").replace("{1}", "")
                  .replace("{2}", "").replace("{T}", "").replace("{R}", ""))


@pytest.mark.parametrize("name", _record_spelled_ops())
def test_both_generators_emit_the_record_expression(name):
    """The native C++ and the CUDA kernel of a one-op region both carry the record's C expression,
    its operands spelled as each generator spells them: the record is the one source of the text."""
    from test_codegen_cupy import _op_text  # noqa: PLC0415

    op = REGISTRY[name]
    params, _, result = _op_text(name)
    T = {"f32": "float", "f64": "double", "i64": "long long", "bool": "bool"}[params.split(":")[1].strip().split("[")[0]]
    R = {"f32": "float", "f64": "double", "i64": "long long", "bool": "bool"}[result.split("[")[0]]
    arity = op.arity or 1
    pattern = re.escape(op.c_expr.format(*(f"OPERAND{i}" for i in range(arity)), T=T, R=R))
    for i in range(arity):
        pattern = pattern.replace(f"OPERAND{i}", r".+?")  # a load, a parameter, a cast, a bool test
    graph_text = _single_op_region(name)
    for src in (generate_c(static.parse_ir(graph_text)), codegen.generate_source(static.parse_ir(graph_text), "cupy")[0]):
        assert re.search(pattern, _kernel_line(src)), (name, _kernel_line(src))


@pytest.mark.parametrize("key", sorted(_REGIONS))
def test_eager_float16_is_computed_in_float32_as_torch(key):
    """In float16 steps 1 + erf(x) cancels for x < -3 (gelu gave -0 where PyTorch gives -1.3e-4,
    ~2000 ulp): the forward computes in float32 and rounds once, within a few ulp of PyTorch."""
    x = np.linspace(-6, 6, 1001).astype(np.float16)
    got = _eager_call(key)(eager.tensor(x)).numpy()
    assert got.dtype == np.float16
    torch = pytest.importorskip("torch")
    call = (lambda t: torch.nn.functional.softplus(t, beta=2.0, threshold=15.0)) if key == "softplus" else \
        (lambda t: torch.nn.functional.gelu(t, approximate=key.split("_")[1]))
    reference = call(torch.tensor(x)).numpy()
    ulp = np.spacing(np.abs(reference)).astype(np.float64)
    err = np.abs(got.astype(np.float64) - reference.astype(np.float64)) / np.maximum(ulp, 2.0 ** -24)
    assert err.max() <= 8, f"{key}: {err.max():.0f} float16 ulp from PyTorch"
