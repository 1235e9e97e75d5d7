"""CuPy arrays and eager CUDA tensors through static (skipped without CuPy and a device):
arrays of the kind given come back, the device is part of the signature, and gradients
flow through CompiledFunctionBackward on the GPU."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not eager.cuda.is_available(), reason="needs CuPy and a CUDA device")]


def loss(x, w):
    return (eager.tanh(x * w) * w).sum()


def test_cupy_arrays_in_cupy_arrays_out():
    import cupy as cp

    x, w = np.linspace(-1, 1, 8, dtype=np.float32), np.full(8, 0.5, np.float32)
    out = static.compile(lambda x, w: (x * w, loss(x, w)))(cp.asarray(x), cp.asarray(w))
    assert all(isinstance(o, cp.ndarray) for o in out)
    np.testing.assert_allclose(cp.asnumpy(out[1]), loss(eager.tensor(x), eager.tensor(w)).item(), rtol=1e-5)


def test_interpreted_graph_runs_on_cupy_arrays():
    import cupy as cp

    g = static.trace(loss, np.ones(4, np.float32), np.ones(4, np.float32))
    (out,) = static.run_graph(g, [cp.ones(4, np.float32), cp.ones(4, np.float32)])
    assert isinstance(out, cp.ndarray)


def test_cuda_tensors_with_gradients_and_device_in_the_signature():
    x = eager.tensor(np.linspace(-1, 1, 8, dtype=np.float32), device="cuda", requires_grad=True)
    w = eager.full((8,), 0.5, device="cuda", requires_grad=True)
    f = static.compile(loss)
    out = f(x, w)
    assert out.device.type == "cuda" and out.grad_fn.name() == "CompiledFunctionBackward"
    out.backward()
    xr, wr = x.detach().cpu().requires_grad_(), w.detach().cpu().requires_grad_()
    loss(xr, wr).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), xr.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.cpu().numpy(), wr.grad.numpy(), rtol=1e-5, atol=1e-6)
    f(xr.detach(), wr.detach())
    assert f.retraces[-1] == "argument leaf 0 moved from cuda:0 to cpu"
