"""A batch of small products (attention's scores and weighted values) is one C loop nest in
the native module (native_gen.CBatchedMatmul), not a BLAS call per product: checked against
NumPy's matmul over layouts (views of a split and transposed buffer read in place, broadcast
batch dims, a 2-d right operand), odd sizes, float64, and which products stay with BLAS."""
from __future__ import annotations

import numpy as np
import pytest

import codegen
import eager
import static
from codegen import native_build
from codegen.native_gen.matmul import small_batched_matmul

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _product(a_shape, b_shape, dt="f32"):
    out = np.broadcast_shapes(a_shape[:-2], b_shape[:-2]) + (a_shape[-2], b_shape[-1])
    dims = lambda s: ",".join(str(d) for d in s)  # noqa: E731
    return static.parse_ir(f"""
        func @f(%a: {dt}[{dims(a_shape)}], %b: {dt}[{dims(b_shape)}]) -> {dt}[{dims(out)}] {{
          %0 = matmul %a, %b : {dt}[{dims(out)}]
          return %0
        }}""")


@pytest.mark.parametrize("a_shape, b_shape", [
    ((64, 32, 16), (64, 16, 32)),
    ((4, 3, 7, 5), (4, 3, 5, 9)),  # odd sizes: one row at a time
    ((2, 1, 8, 4), (3, 4, 6)),  # batch dims broadcast both ways
    ((6, 10, 12), (12, 20)),  # a 2-d right operand
])
@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_small_batched_products_equal_numpys(a_shape, b_shape, dt):
    graph = _product(a_shape, b_shape, dt)
    assert small_batched_matmul(graph.nodes[0]) is None
    exe = codegen.build(graph, "native")
    assert "gm_matmul" in exe.c_source()
    rng = np.random.default_rng(0)
    np_dt = np.float32 if dt == "f32" else np.float64
    a, b = (rng.standard_normal(s).astype(np_dt) for s in (a_shape, b_shape))
    got = np.asarray(exe.run([a, b])[0])
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5 if dt == "f32" else 1e-12, atol=1e-5)
    # operands that are not C-contiguous are converted by the call path and give the same
    np.testing.assert_allclose(np.asarray(exe.run([np.asfortranarray(a), b])[0]), got, rtol=0, atol=0)


def test_views_of_a_split_buffer_are_read_in_place():
    """q @ k^T of heads split off one projection: both operands are strided views of its
    output, read through their base with their strides (no copy in the driver)."""
    def scores(qkv):
        q, k = qkv.split(32, dim=-1)
        q = q.reshape(4, 16, 2, 16).transpose(1, 2)
        k = k.reshape(4, 16, 2, 16).transpose(1, 2)
        return q @ k.transpose(-2, -1)

    x = eager.tensor(np.random.default_rng(1).standard_normal((4, 16, 64)).astype(np.float32))
    compiled = static.compile(scores, backend="native")
    np.testing.assert_allclose(compiled(x).numpy(), scores(x).numpy(), rtol=1e-5, atol=1e-6)
    source = compiled.source(x)
    assert "gm_matmul" in source
    assert "_SHAPES, qkv, qkv)" in source  # both operands read through the projection's output


def test_large_products_stay_with_blas():
    assert small_batched_matmul(_product((4, 128, 128), (4, 128, 128)).nodes[0]) is not None
    assert small_batched_matmul(_product((256, 64), (64, 64)).nodes[0]) is not None  # not a batch
    assert small_batched_matmul(_product((2, 4, 8), (2, 8, 512)).nodes[0]) is not None  # too wide a row


def test_a_product_whose_reader_transposes_it_is_written_in_that_order():
    """Attention's heads put back beside each other (transpose, reshape): the product is
    written in the transposed order, so the reshape after the transpose is a view, not a copy."""
    def merge_heads(att, v):
        return (att @ v).transpose(1, 2).reshape(4, 16, 32)

    rng = np.random.default_rng(2)
    att = eager.tensor(rng.standard_normal((4, 2, 16, 16)).astype(np.float32))
    v = eager.tensor(rng.standard_normal((4, 2, 16, 16)).astype(np.float32))
    compiled = static.compile(merge_heads, backend="native")
    np.testing.assert_allclose(compiled(att, v).numpy(), merge_heads(att, v).numpy(), rtol=1e-5, atol=1e-6)
    source = compiled.source(att, v)
    assert "np.swapaxes(" in source and "_t, 1, 2)" in source  # the product: a view of what was written
    assert compiled(att, v).numpy().flags.c_contiguous
