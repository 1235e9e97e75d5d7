"""The native driver calls eager's own kernels straight for layer_norm and its gradient
(native_gen.EAGER_KERNEL_OPS): the machine code eager's ops run, so compiled values are
eager's to the bit. Checked here: the generated module names the kernels, forward and
gradients equal eager's bit for bit (float32, float64, several normalized dims, a strided
input), and where eager's kernels are switched off the op's forward runs instead, still
equal to eager (then NumPy code on both sides)."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from codegen.native_gen.driver import eager_kernel_call
from eager.nn import functional as F
from static.ir import parse_ir

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _layer_norm(shape):
    def norm(x, w, b):
        return F.layer_norm(x, shape, w, b, eps=1e-5)
    return norm


def _inputs(shape, normalized, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(dtype) * 3 + 1
    w = rng.standard_normal(normalized).astype(dtype)
    b = rng.standard_normal(normalized).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    return [eager.tensor(a, requires_grad=k < 3) for k, a in enumerate((x, w, b, g))]


def _eager_and_compiled(shape, normalized, dtype, transpose=False):
    fn = _layer_norm(normalized)
    compiled = static.compile(fn, backend="native")
    results = []
    for run in (fn, compiled):
        x, w, b, g = _inputs(shape, normalized, dtype)
        if transpose:  # a strided view: the call converts it and calls again
            x = eager.tensor(np.ascontiguousarray(np.swapaxes(x.detach().numpy(), 0, 1)), requires_grad=True)
            y = run(x.transpose(0, 1), w, b)
        else:
            y = run(x, w, b)
        (y * g).sum().backward()  # eager: the compiled backward gets g, as eager's does
        results.append([y.detach().numpy()] + [t.grad.numpy() for t in (x, w, b)])
    return results, compiled, (x, w, b, g)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,normalized", [((4, 8, 32), (32,)), ((3, 4, 5), (4, 5)), ((6, 65), (65,))])
def test_layer_norm_and_its_gradient_are_eagers_bits(shape, normalized, dtype):
    (want, got), compiled, args = _eager_and_compiled(shape, normalized, dtype)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    suffix = "f32" if dtype == np.float32 else "f64"
    source = compiled.source(*args[:3])
    assert f"_ek.address('gm_eager_layer_norm_{suffix}')" in source
    assert f"_ek.address('gm_eager_layer_norm_backward_{suffix}')" in source


def test_a_strided_input_is_converted_and_stays_eagers_bits():
    (want, got), _, _ = _eager_and_compiled((8, 6, 16), (16,), np.float32, transpose=True)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)


def test_without_eagers_kernels_the_ops_forward_runs(numpy_eager_kernels):
    (want, got), compiled, args = _eager_and_compiled((4, 8, 32), (32,), np.float32)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    assert "_rt.forward('layer_norm'" in compiled.source(*args[:3])  # the fallback beside the straight call


def test_which_nodes_call_eagers_kernel():
    graph = parse_ir("""
func @f(%x: f32[4,8], %w: f32[8], %b: f32[8], %h: f16[4,8], %hw: f16[8], %d: f64[8]) -> (f32[4,8], f16[4,8], f32[4,8]) {
  %0 = layer_norm %x, %w, %b {eps = 1e-05, ndim = 1} : f32[4,8]
  %1 = layer_norm %h, %hw, %hw {eps = 1e-05, ndim = 1} : f16[4,8]
  %2 = layer_norm %x, %d, %d {eps = 1e-05, ndim = 1} : f32[4,8]
  return %0, %1, %2
}""")
    first, half, mixed = graph.nodes
    assert eager_kernel_call(first) is None
    assert "float32/float64" in eager_kernel_call(half)
    assert "float32/float64" in eager_kernel_call(mixed)
