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


def _workload(module_name):
    """A workload module from examples/workloads/ (their one copy), imported as the benchmarks
    and tests/static/test_workloads.py import it: W5 and W6 import their shared `_training`."""
    import importlib  # noqa: PLC0415
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    workloads = str(Path(__file__).resolve().parents[2] / "examples" / "workloads")
    if workloads not in sys.path:
        sys.path.insert(0, workloads)
    return importlib.import_module(module_name)


@pytest.mark.parametrize("module_name,size", [("w1_seed", 100_003), ("w2_gelu", 100_003), ("w3_mlp", 64),
                                              ("w4_scalar", 100)])
def test_workload_compiled_for_cuda_equals_eager_on_the_cpu(module_name, size):
    """W1-W4 compiled for CuPy: value and every argument's gradient equal eager's on the CPU."""
    fn, args = _workload(module_name).workload(size)
    on_gpu = [a.detach().cuda().requires_grad_(a.requires_grad) for a in args]
    out = static.compile(fn, backend="cupy")(*on_gpu)
    assert out.device.type == "cuda"
    out.backward()
    ref = fn(*args)
    ref.backward()
    np.testing.assert_allclose(out.item(), ref.item(), rtol=1e-4)
    for g, a in zip(on_gpu, args):
        if a.requires_grad:
            np.testing.assert_allclose(g.grad.cpu().numpy(), a.grad.numpy(), rtol=2e-3, atol=2e-5)


def _steps(mod, model, batch, n, compiled):
    """n PyTorch-style optimizer steps (compiled whole, or eager); the losses as floats."""
    opt = mod.make_optimizer(model)

    def step(model, opt, batch):
        opt.zero_grad()
        loss = mod.loss_fn(model, batch)
        loss.backward()
        opt.step()
        return loss.detach()

    run = static.compile(step) if compiled else step
    return [float(run(model, opt, batch).item()) for _ in range(n)]


@pytest.mark.parametrize("module_name", ["w5_gpt", "w6_cnn"])
def test_training_steps_on_cuda_equal_the_cpu(module_name):
    """Three eager training steps of W5 (dropout off: the generators differ by device) and W6
    on the GPU follow the CPU's losses and end at the same parameters."""
    mod = _workload(module_name)
    cpu_model, gpu_model = mod.make_model(0), mod.make_model(0).cuda()
    if module_name == "w5_gpt":
        cpu_model.eval(), gpu_model.eval()
    batch = mod.make_batch(0)
    cpu = _steps(mod, cpu_model, batch, 3, compiled=False)
    gpu = _steps(mod, gpu_model, tuple(b.cuda() for b in batch), 3, compiled=False)
    np.testing.assert_allclose(gpu, cpu, rtol=2e-4)
    for (name, p), q in zip(cpu_model.named_parameters(), gpu_model.parameters()):
        assert q.device.type == "cuda", name
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=2e-3, atol=2e-4, err_msg=name)


@pytest.mark.parametrize("module_name", ["w5_gpt", "w6_cnn"])
def test_compiled_training_step_on_cuda_equals_eager_on_cuda(module_name):
    """A whole PyTorch-style step compiled for the GPU, dropout on for W5: the same losses and
    parameters as the same steps run eagerly on the GPU from the same seed."""
    mod = _workload(module_name)
    batch = tuple(b.cuda() for b in mod.make_batch(0))
    runs = []
    for compiled in (False, True):
        model = mod.make_model(0).cuda()
        eager.manual_seed(1)
        runs.append((_steps(mod, model, batch, 3, compiled), [p.detach().cpu().numpy() for p in model.parameters()]))
    (want, want_p), (got, got_p) = runs
    np.testing.assert_allclose(got, want, rtol=1e-4)
    for g, w in zip(got_p, want_p):
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)


def test_traced_values_report_the_device_the_graph_runs_on():
    """Inside a function compiled for CUDA tensors, a value's `.device` is the GPU, so
    factories and draws made "like x" land where eager would put them."""
    seen = []

    def f(x):
        seen.append(x.device.type)
        return x + eager.ones(x.shape, device=x.device) + 0.0 * eager.rand_like(x)

    x = eager.tensor(np.arange(4.0, dtype=np.float32), device="cuda")
    out = static.compile(f)(x)
    assert seen == ["cuda"] and out.device.type == "cuda"
    np.testing.assert_allclose(out.cpu().numpy(), np.arange(4.0) + 1)
