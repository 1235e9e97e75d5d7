"""torch.nn.grad's convolution gradients (input and weight, 1-3 D, strided, padded, grouped) against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.grad as EG

torch = pytest.importorskip("torch")
# NumPy code, not native kernels: a first native call compiles them into the test's private cache (seconds)
pytestmark = pytest.mark.usefixtures("numpy_eager_kernels")


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kw", [dict(stride=1, padding=0, dilation=1, groups=1),
                                dict(stride=2, padding=1, dilation=1, groups=2),
                                dict(stride=1, padding=2, dilation=2, groups=1)])
def test_conv_grads_match_torch(nd: int, kw: dict) -> None:
    rng = np.random.default_rng(nd)
    x = rng.standard_normal((2, 4) + (7,) * nd).astype(np.float32)
    w = rng.standard_normal((6, 4 // kw["groups"]) + (3,) * nd).astype(np.float32)
    out = getattr(torch.nn.functional, f"conv{nd}d")(torch.tensor(x), torch.tensor(w), **kw)
    go = rng.standard_normal(out.shape).astype(np.float32)
    ti = getattr(torch.nn.grad, f"conv{nd}d_input")(x.shape, torch.tensor(w), torch.tensor(go), **kw)
    ei = getattr(EG, f"conv{nd}d_input")(x.shape, eager.tensor(w), eager.tensor(go), **kw)
    tw = getattr(torch.nn.grad, f"conv{nd}d_weight")(torch.tensor(x), w.shape, torch.tensor(go), **kw)
    ew = getattr(EG, f"conv{nd}d_weight")(eager.tensor(x), w.shape, eager.tensor(go), **kw)
    np.testing.assert_allclose(ei.numpy(), ti.numpy(), atol=1e-4, rtol=1e-5)
    np.testing.assert_allclose(ew.numpy(), tw.numpy(), atol=1e-4, rtol=1e-5)
    assert not ei.requires_grad and tuple(ew.shape) == w.shape


def test_functional_grad_is_the_module_and_shape_errors() -> None:
    assert eager.nn.functional.grad is EG
    w = eager.randn(2, 1, 3)
    with pytest.raises(RuntimeError, match="grad_output"):
        EG.conv1d_input((1, 1, 8), w, eager.randn(1, 2, 7))
    with pytest.raises(ValueError):
        EG.conv2d_input((1, 8), eager.randn(2, 1, 3, 3), eager.randn(1, 2, 6, 6))
