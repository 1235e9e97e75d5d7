"""Ops that generated code used to run through eager's registry (`_rt.forward`) are lowered
for real: softmax, log_softmax and logsumexp decompose into fusible primitives (same values
as eager, bit for bit) that fuse with their neighbours; the others have NumPy spellings."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen.lowering import TABLE
from static.passes import PASSES

# ops whose reference algorithm stays the op's own forward (many-case index updates, the
# backward-only helper of prod, and moving between devices)
FORWARD_CALLS = {"index_grad", "index_put", "view_scatter", "prod_except_self", "to_device",
                 # var/std accumulate float32 in float64 as eager does (one rule, the op's own)
                 "var", "std",
                 # whole-array kernels of the PyTorch-programs surface (index, scan, sort, conv,
                 # normalization): library calls of the op's forward until each gets a spelling
                 "gather", "scatter_add", "scatter", "scatter_reduce", "index_select", "index_add", "embedding",
                 "embedding_backward", "tril", "triu", "flip", "diagonal", "diagonal_grad", "cumsum",
                 "cumprod", "argsort", "einsum", "unfold", "fold", "normalize", "normalize_backward", "nan_to_num",
                 "layer_norm", "layer_norm_backward",
                 "gelu_grad", "floor", "ceil", "trunc", "round", "log2", "log10", "sinh", "cosh", "asin", "acos",
                 "atan", "atan2"}

X = eager.tensor(np.random.default_rng(0).standard_normal((64, 300)).astype(np.float32))

PROGRAMS = {
    "softmax_then_scale": lambda t: eager.softmax(t * 2.0, 1) + 1.0,
    "softmax_negative_dim": lambda t: eager.softmax(t, -1),
    "log_softmax_dim0": lambda t: eager.log_softmax(t, 0) * 3.0,
    "logsumexp": lambda t: eager.logsumexp(t, 1),
    "logsumexp_keepdim": lambda t: eager.logsumexp(t, 1, True) - t,
    "logsumexp_of_inf": lambda t: eager.logsumexp(t * float("inf"), 1),
}


def test_only_the_listed_ops_call_back_into_the_registry():
    calls = {name for name, low in TABLE.items() if "_rt.forward" in low.numpy.call}
    assert calls == FORWARD_CALLS


@pytest.mark.parametrize("opt_level", [1, 2])
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_values_equal_eager_bit_for_bit(name, opt_level):
    fn = PROGRAMS[name]
    compiled = static.compile(fn, opt_level=opt_level)
    got = compiled(X).numpy()
    np.testing.assert_array_equal(got, fn(X).numpy())
    assert "_rt.forward" not in compiled.source(X)


def test_softmax_decomposes_and_fuses_with_its_neighbours():
    fn = PROGRAMS["softmax_then_scale"]
    compiled = static.compile(fn)
    compiled(X)
    ops = [n.op for n in compiled.ir(X).nodes]
    assert "softmax" not in ops and "fused" in ops
    fused_ops = [m.op for n in compiled.ir(X).nodes if n.body is not None for m in n.body.nodes]
    assert {"amax", "exp", "sum", "div", "mul", "add"} <= set(fused_ops)


@pytest.mark.parametrize("op,text", [
    ("softmax", "%0 = softmax %x {dim = 1} : f32[3,4]"),
    ("log_softmax", "%0 = log_softmax %x {dim = 0} : f32[3,4]"),
    ("logsumexp", "%0 = logsumexp %x {dims = [1], keepdim = false} : f32[3]"),
])
def test_decompose_pass_alone(op, text):
    out_type = text.rsplit(": ", 1)[1]
    g = static.parse_ir(f"func @f(%x: f32[3,4]) -> {out_type} {{\n  {text}\n  return %0\n}}")
    x = np.random.default_rng(3).standard_normal((3, 4)).astype(np.float32)
    expected = static.run_graph(g, [x])
    stats = PASSES["decompose"](g)
    static.verify(g)
    assert stats["rules"] == {op: 1} and op not in [n.op for n in g.nodes]
    np.testing.assert_array_equal(static.run_graph(g, [x])[0], expected[0])


def test_empty_and_0d_softmax_family_compile():
    empty = eager.tensor(np.zeros((3, 0), np.float32))
    for fn in (lambda t: eager.softmax(t, 0), lambda t: eager.log_softmax(t, 0), lambda t: eager.logsumexp(t, 0)):
        got = static.compile(fn)(empty)
        assert tuple(got.shape) == tuple(fn(empty).shape)
    assert static.compile(lambda t: eager.softmax(t, 0))(eager.tensor(2.0)).item() == 1.0


@pytest.mark.parametrize("name", ["where", "clamp", "argmax", "argmin", "take_along", "index_mask"])
def test_library_call_lowerings_match_the_ops_forward(name):
    """The ops' own samples through their NumPy spelling equal their forward."""
    from codegen.render import fields, fill
    from eager.ops import REGISTRY, TensorSpec
    from static.ir import Node, Value

    op = REGISTRY[name]
    for arrays, attrs in op.samples(np.random.default_rng(0)):
        values = [Value(f"a{i}", TensorSpec(a.shape, eager.tensor(a).dtype)) if isinstance(a, np.ndarray) else a
                  for i, a in enumerate(arrays)]
        out = op.abstract(*[v.type if isinstance(v, Value) else v for v in values], **attrs)
        node = Node(op=name, inputs=values, attrs=attrs)
        node.outputs = [Value("out", out, node, 0)]
        names = [f"a{i}" if isinstance(a, np.ndarray) else repr(a) for i, a in enumerate(arrays)]
        src = fill(TABLE[name].numpy.call, names, fields(node, names))
        env = {"np": np, **{f"a{i}": a for i, a in enumerate(arrays)}}
        from codegen import runtime as _rt
        env["_rt"] = _rt
        got = eval(src, env)  # noqa: S307 - generated test expression
        expected = op.forward(np, *arrays, **attrs)
        assert np.asarray(got).dtype == np.asarray(expected).dtype
        np.testing.assert_array_equal(got, expected)
