"""NumPy interop (__array__, numpy(), from_numpy, item, tolist) and devices (cpu, cuda)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import eager

NUMPY_MSG = "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
gpu = pytest.mark.gpu
needs_cuda = pytest.mark.skipif(not eager.cuda.is_available(), reason="needs CuPy and a CUDA device")


# -- NumPy ------------------------------------------------------------------------------------------
def test_numpy_shares_memory():
    t = eager.zeros(3)
    a = t.numpy()
    a[0] = 5.0
    assert t.tolist() == [5.0, 0.0, 0.0]
    assert a.dtype == np.float32


def test_numpy_refuses_tensors_that_require_grad():
    x = eager.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        x.numpy()
    assert str(info.value) == NUMPY_MSG
    with pytest.raises(RuntimeError, match=re.escape(NUMPY_MSG)):
        np.asarray(x)
    with pytest.raises(RuntimeError, match=re.escape(NUMPY_MSG)):
        (x * 2).numpy()
    assert x.detach().numpy().tolist() == [1.0, 1.0]
    assert x.numpy(force=True).tolist() == [1.0, 1.0]


def test_array_protocol():
    t = eager.tensor([[1, 2], [3, 4]], dtype=eager.int32)
    a = np.asarray(t)
    assert a.dtype == np.int32 and a.shape == (2, 2)
    assert np.array(t, dtype=np.float64).dtype == np.float64
    assert np.sum(np.asarray(eager.tensor([1.0, 2.5]))) == 3.5


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(4, dtype=np.float64)
    t = eager.from_numpy(a)
    assert t.dtype is eager.float64 and not t.requires_grad
    a[1] = 10.0
    assert t.tolist() == [0.0, 10.0, 2.0, 3.0]
    t.add_(1)
    assert a.tolist() == [1.0, 11.0, 3.0, 4.0]
    with pytest.raises(TypeError, match="expected np.ndarray"):
        eager.from_numpy([1, 2])


def test_from_numpy_refuses_unsupported_dtypes():
    with pytest.raises(TypeError, match="can't convert np.ndarray of type complex128"):
        eager.from_numpy(np.zeros(2, dtype=np.complex128))


def test_item_and_tolist():
    assert eager.tensor(2.5).item() == 2.5 and isinstance(eager.tensor(2.5).item(), float)
    assert eager.tensor([7]).item() == 7 and isinstance(eager.tensor([7]).item(), int)
    assert eager.tensor([[True]]).item() is True
    x = eager.tensor([1.5, 2.0], requires_grad=True)
    assert (x * 2).sum().item() == 7.0  # item() works on tensors that require grad
    assert x.tolist() == [1.5, 2.0]
    assert eager.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    assert eager.tensor(3).tolist() == 3
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        x.item()


def test_python_number_conversions():
    assert float(eager.tensor([2.5])) == 2.5
    assert int(eager.tensor(3.7)) == 3
    assert bool(eager.tensor([1.0])) is True
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(eager.ones(2))
    assert [1, 2, 3][eager.tensor(1)] == 2


def test_numpy_scalars_and_arrays_as_operands():
    t = eager.tensor([1.0, 2.0])
    assert (t * np.float32(2.0)).dtype is eager.float32
    assert (t + np.array([1.0, 1.0], dtype=np.float32)).tolist() == [2.0, 3.0]
    y = np.array([1.0, 1.0], dtype=np.float32) + t
    assert isinstance(y, eager.Tensor) and y.tolist() == [2.0, 3.0]


def test_gradients_are_numpy_compatible():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    (x ** 2).sum().backward()
    assert np.array_equal(x.grad.numpy(), np.array([2.0, 4.0], dtype=np.float32))


# -- devices ----------------------------------------------------------------------------------------
def test_cpu_device():
    t = eager.ones(2)
    assert t.device == eager.device("cpu") and t.device == "cpu" and str(t.device) == "cpu"
    assert repr(t.device) == "device(type='cpu')"
    assert t.cpu() is t and t.to("cpu") is t and t.to(eager.device("cpu")) is t
    assert not t.is_cuda
    assert eager.zeros(2, device="cpu").device.type == "cpu"


def test_to_dtype_and_device_forms():
    t = eager.tensor([1.5, 2.5])
    assert t.to(eager.float64).dtype is eager.float64
    assert t.to("cpu", eager.int64).tolist() == [1, 2]
    assert t.to(dtype=eager.float16).dtype is eager.float16
    assert t.to(eager.zeros(1, dtype=eager.float64)).dtype is eager.float64
    assert t.to(eager.float32) is t
    assert t.float() is t and t.double().dtype is eager.float64 and t.long().dtype is eager.int64
    assert t.int().dtype is eager.int32 and t.half().dtype is eager.float16 and t.bool().dtype is eager.bool


def test_cast_keeps_gradient_flowing():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    y = x.double() * 3
    assert y.dtype is eager.float64
    y.sum().backward()
    assert x.grad.dtype is eager.float32 and x.grad.tolist() == [3.0, 3.0]


def test_unknown_device_strings():
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda device type at start of device string: tpu"):
        eager.device("tpu")
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        eager.zeros(2, device="gpu")


@pytest.mark.skipif(eager.cuda.is_available(), reason="checks the error without a GPU")
def test_cuda_without_a_gpu_raises_a_clear_error():
    t = eager.ones(2)
    for make in (lambda: t.cuda(), lambda: t.to("cuda"), lambda: eager.zeros(2, device="cuda"),
                 lambda: eager.tensor([1.0], device="cuda")):
        with pytest.raises(RuntimeError, match="Torch not compiled with CUDA enabled"):
            make()
    assert t.device.type == "cpu" and eager.cuda.is_available() is False


@gpu
@needs_cuda
def test_cuda_round_trip_and_gradients():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    xc = x.cuda()
    assert xc.is_cuda and xc.device == eager.device("cuda:0") and str(xc.device) == "cuda:0"
    assert "device='cuda:0'" in repr(xc)
    y = (xc * xc).sum()
    y.backward()
    assert x.grad.device.type == "cpu" and x.grad.tolist() == [2.0, 4.0]
    back = xc.cpu()
    assert back.device.type == "cpu" and back.grad_fn.name() == "ToCopyBackward0"
    with pytest.raises(TypeError, match="can't convert cuda:0 device type tensor to numpy"):
        xc.detach().numpy()


@gpu
@needs_cuda
def test_cuda_factories_seed_and_mixing_devices():
    eager.manual_seed(3)
    a = eager.randn(4, device="cuda")
    eager.manual_seed(3)
    b = eager.randn(4, device="cuda")
    assert a.is_cuda and eager.equal(a.cpu(), b.cpu())
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        a + eager.ones(4)
    w = eager.randn(3, 3, device="cuda", requires_grad=True)
    (w @ w).sum().backward()
    assert w.grad.is_cuda


def test_mixing_devices_raises_with_both_named(monkeypatch):
    """Without a GPU, a stand-in array type plays the second device for the dispatcher's check."""
    import eager._device as D

    class FakeCudaArray(np.ndarray):
        class _Dev:
            id = 0

        device = _Dev()

    a = eager.ones(2)
    b = eager.ones(2)
    b._data = np.ones(2, dtype=np.float32).view(FakeCudaArray)
    monkeypatch.setattr(D, "device_of_array",
                        lambda arr: D.device("cuda", 0) if isinstance(arr, FakeCudaArray) else D.CPU)
    monkeypatch.setattr(eager._tensor_metadata, "device_of_array", D.device_of_array)
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!")):
        a + b
    assert a.tolist() == [1.0, 1.0] and a._version == 0
