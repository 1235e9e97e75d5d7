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

# ops whose NumPy spelling stays the op's own forward, each with the reason in its table note:
# replaying a chain of views (view_scatter), the backward-only helper of prod, moving to a GPU,
# and whole-array kernels (sorted segment sums, im2col and col2im)
FORWARD_CALLS = {"view_scatter", "prod_except_self", "embedding_backward", "unfold", "fold",
                 # whole-array kernels of the PyTorch-programs surface (see their table notes)
                 "scatter_reduce", "normalize", "normalize_backward", "layer_norm",
                 "layer_norm_backward", "cumprod_backward",
                 # the op's forward has native per-channel statistics (batch norm's running var)
                 "var", "std",
                 # max-pooling's value gather along a middle axis (a native pass in the forward)
                 "take_along",
                 # eager's max_pool2d and its gradient on NCHW images (native window passes)
                 "max_pool2d", "max_pool2d_backward", "batch_norm", "batch_norm_backward",
                 # elementwise math as the op's own forward until each gets a NumPy spelling
                 "floor", "ceil", "trunc", "round",
                 # div's rounding modes: integer division by zero raises (as PyTorch), so no kernel
                 "div_floor", "div_trunc",
                 # remainder keeps the dividend's sign on a zero result (PyTorch's -0.0), which
                 # np.remainder does not: the op's forward is its NumPy spelling
                 "remainder",
                 # integer division by zero raises (np.floor_divide and np.fmod give 0)
                 "floor_divide", "fmod",
                 # shifts by a count outside [0, bits) give 0 (or -1), which NumPy's shifts leave undefined
                 "bitwise_left_shift", "bitwise_right_shift",
                 # records with a C expression and no ufunc: fused in C, their forward in NumPy code
                 # (the Bessel functions' C expressions are gm_helpers.h's series)
                 "erfc", "frac", "i0", "i1", "i0e", "i1e", "heaviside", "ldexp", "positive", "clamp_tensor",
                 # LAPACK (inverse, solve, determinant): the op's forward reports a singular matrix
                 "inv", "solve", "det",
                 # structured control flow: a Python loop around the body's own generated code
                 "scan", "while_loop", "cond",
                 # Tensor.unfold's windows: a strided view of the operand
                 "windows"}
# (check_index_range: _rt.check_index_range compares the index's min and max itself and calls the
# op's forward only where a bound is broken, for eager's exception and message from one place)

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
    calls = {op.name for op, low in TABLE.items() if "_rt.forward" in low.numpy.call + "".join(low.numpy.body)}
    assert calls == FORWARD_CALLS
    for name in calls:
        assert TABLE[name].note, f"{name} calls the op's forward without saying why"


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


# -- elementwise chains written as one op ------------------------------------------------------
CHAINS = {
    "gelu": lambda t: eager.nn.functional.gelu(t) * 2.0,
    "gelu_tanh": lambda t: eager.nn.functional.gelu(t, approximate="tanh") + 1.0,
    "softplus": lambda t: eager.nn.functional.softplus(t * 3.0, beta=2.0, threshold=4.0),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_chains_decompose_fuse_and_equal_eager(name):
    fn = CHAINS[name]
    compiled = static.compile(fn)
    np.testing.assert_allclose(compiled(X).numpy(), fn(X).numpy(), rtol=2e-6, atol=2e-6)
    ops = [n.op for n in compiled.ir(X).nodes]
    assert not {"gelu", "softplus", "normalize"} & set(ops), ops
    assert "fused" in ops
    assert "_rt.forward" not in compiled.source(X)


@pytest.mark.parametrize("op,text", [
    ("gelu", '%0 = gelu %x {approximate = "none"} : f64[3,4]'),
    ("gelu", '%0 = gelu %x {approximate = "tanh"} : f64[3,4]'),
    ("softplus", "%0 = softplus %x {beta = 2.0, threshold = 1.5} : f64[3,4]"),
])
def test_chain_decomposition_alone_is_bit_exact(op, text, numpy_eager_kernels):
    """Against the ops' NumPy code (the native eager kernels round differently in the last bit)."""
    g = static.parse_ir(f"func @f(%x: f64[3,4]) -> f64[3,4] {{\n  {text}\n  return %0\n}}")
    x = np.random.default_rng(5).standard_normal((3, 4)) * 3.0
    expected = static.run_graph(g, [x])
    stats = PASSES["decompose"](g)
    static.verify(g)
    assert stats["rules"] == {op: 1} and op not in [n.op for n in g.nodes]
    np.testing.assert_array_equal(static.run_graph(g, [x])[0], expected[0])


def test_gelu_and_its_gradient_share_one_erf():
    """The decomposed gelu's erf(x / sqrt 2) is the one its VJP computes: merged, and left
    to the forward (remat saves it), so a compiled forward+backward runs erf once per
    element where eager runs it twice."""
    w = eager.tensor(np.random.default_rng(1).standard_normal((300, 8)).astype(np.float32), requires_grad=True)

    def f(x, w):
        return eager.nn.functional.gelu(x @ w).sum()

    graphs = static.compile(f).autograd_graphs(X, w)

    def erfs(graph):
        return sum(erfs(n.body) if n.body is not None else n.op == "erf" for n in graph.nodes)

    assert erfs(graphs.forward) + erfs(graphs.backward) == 1
    expected = eager.autograd.grad(f(X, w), w)[0].numpy()
    got = eager.autograd.grad(static.compile(f)(X, w), w)[0].numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
