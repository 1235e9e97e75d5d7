"""Every op of the registry on a CUDA device (skipped without CuPy and a GPU): eager's forward
values and gradients computed on CuPy arrays equal eager's on NumPy arrays, and the CuPy
backend's compiled forward and gradients equal the NumPy backend's. This is where the CUDA
spellings of the ops (eager's `xp` calls, the generated kernels) are checked at all: CI has no
GPU, so these run only where one is lent."""
from __future__ import annotations

import numpy as np
import pytest
from op_samples import outputs, sample_programs, weighted_sum

import eager
import static
from eager.ops import REGISTRY

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not eager.cuda.is_available(), reason="needs CuPy and a CUDA device")]

# Draws come from NumPy's generator on the CPU and CuPy's on the GPU: different numbers.
OPS = sorted(name for name, op in REGISTRY.items() if not op.random and op.samples is not None)
# to_device's samples name their source device as an attribute (the CPU): moved to the GPU,
# the operand would contradict it. It is checked on its own below.
EAGER_OPS = [name for name in OPS if name != "to_device"]


def _host(x):
    """A tensor's (or array's) values as a NumPy array."""
    data = x._data if isinstance(x, eager.Tensor) else x
    return data.get() if hasattr(data, "get") else np.asarray(data)


def _tol(arr):
    return dict(rtol=2e-5, atol=2e-6) if arr.dtype in (np.float32, np.float16) else dict(rtol=1e-10, atol=1e-12)


def _expected_device(inputs, attrs, without_operands: str = "cpu") -> str:
    """Results live where the operands do, unless the op names a device. Without operands,
    eager's factories (`full`) create on the default device, the CPU, and a function
    compiled for CuPy runs, and leaves its results, on the GPU."""
    if "device" in attrs:
        return eager.device(attrs["device"]).type
    return "cuda" if inputs else without_operands


def _run_eager(fn, inputs, device):
    tensors = [eager.tensor(a, device=device, requires_grad=a.dtype.kind == "f") for a in inputs]
    outs = outputs(fn(*tensors))
    loss = weighted_sum(fn)(*tensors)
    grads = []
    if isinstance(loss, eager.Tensor) and loss.requires_grad:
        loss.backward()
        grads = [t.grad for t in tensors if t.requires_grad]
    return outs, grads


@pytest.mark.parametrize("name", EAGER_OPS)
def test_eager_op_on_cuda_equals_cpu(name):
    for fn, inputs, attrs in sample_programs(name):
        want, want_grads = _run_eager(fn, inputs, "cpu")
        got, got_grads = _run_eager(fn, inputs, "cuda")
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.device.type == _expected_device(inputs, attrs), (name, attrs)
            assert g.dtype == w.dtype and tuple(g.shape) == tuple(w.shape), (name, attrs)
            np.testing.assert_allclose(_host(g), _host(w), **_tol(_host(w)), err_msg=f"{name} {attrs}")
        assert len(got_grads) == len(want_grads)
        for g, w in zip(got_grads, want_grads):
            assert (g is None) == (w is None), (name, attrs)
            if w is not None:
                assert g.device.type == "cuda"
                np.testing.assert_allclose(_host(g), _host(w), **_tol(_host(w)), err_msg=f"grad {name} {attrs}")


@pytest.mark.parametrize("name", OPS)
def test_compiled_op_on_cuda_equals_numpy_backend(name):
    """Forward and gradients of the op compiled for CuPy (eager CUDA tensors in) against the
    NumPy backend (CPU tensors in)."""
    for fn, inputs, attrs in sample_programs(name):
        if REGISTRY[name].data_dependent_shape:
            continue  # runs eagerly: static refuses to trace it (tested elsewhere)
        want = outputs(static.compile(fn, backend="numpy")(*[eager.tensor(a) for a in inputs]))
        got = outputs(static.compile(fn, backend="cupy")(*[eager.tensor(a, device="cuda") for a in inputs]))
        for g, w in zip(got, want):
            assert g.device.type == _expected_device(inputs, attrs, "cuda") and g.dtype == w.dtype, (name, attrs)
            np.testing.assert_allclose(_host(g), _host(w), **_tol(_host(w)), err_msg=f"{name} {attrs}")
        wrt = tuple(i for i, a in enumerate(inputs) if a.dtype.kind == "f")
        loss = weighted_sum(fn)
        if not wrt or REGISTRY[name].vjp is None or REGISTRY[name].differentiable_order == 0:
            continue
        if not isinstance(loss(*[eager.tensor(a) for a in inputs]), eager.Tensor):
            continue
        want_g = static.grad(loss, argnums=wrt, backend="numpy")(*[eager.tensor(a) for a in inputs])
        got_g = static.grad(loss, argnums=wrt, backend="cupy")(*[eager.tensor(a, device="cuda") for a in inputs])
        for g, w in zip(outputs(got_g), outputs(want_g)):
            np.testing.assert_allclose(_host(g), _host(w), **_tol(_host(w)), err_msg=f"grad {name} {attrs}")


def test_moving_to_the_cpu_and_back_routes_gradients_to_each_device():
    x = eager.tensor(np.linspace(-1, 1, 6), device="cuda", requires_grad=True)
    y = x.to("cpu")
    assert y.device.type == "cpu" and y.grad_fn is not None
    z = (y * y).cuda()
    z.sum().backward()
    assert x.grad.device.type == "cuda"
    np.testing.assert_allclose(_host(x.grad), 2 * np.linspace(-1, 1, 6))
