"""Fractional max pooling (functional and modules) and the with_indices pool spellings against PyTorch:
values and indices from explicit _random_samples, gradients by finite differences, errors."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as EF

torch = pytest.importorskip("torch")
# NumPy code, not native kernels: a first native call compiles them into the test's private cache (seconds)
pytestmark = pytest.mark.usefixtures("numpy_eager_kernels")
TF = torch.nn.functional


@pytest.mark.parametrize("nd,shape,k,out", [
    (2, (2, 3, 9, 11), (2, 3), (4, 5)),
    (2, (3, 7, 7), 2, (3, 3)),
    (2, (1, 2, 5, 5), 2, (4, 4)),
    (2, (1, 1, 5, 5), 2, (1, 1)),
    (3, (1, 2, 6, 7, 8), (2, 2, 3), (3, 4, 3)),
    (3, (2, 5, 5, 6), 2, 3),
])
def test_values_and_indices_match_torch(nd: int, shape: tuple, k: object, out: object) -> None:
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape).astype(np.float32)
    batch = shape[0] if len(shape) == nd + 2 else 1
    u = rng.random((batch, shape[-nd - 1], nd)).astype(np.float32)
    f, g = getattr(TF, f"fractional_max_pool{nd}d"), getattr(EF, f"fractional_max_pool{nd}d")
    tv, ti = f(torch.tensor(a), k, output_size=out, return_indices=True, _random_samples=torch.tensor(u))
    ev, ei = g(eager.tensor(a), k, output_size=out, return_indices=True, _random_samples=eager.tensor(u))
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())
    assert ei.dtype == eager.int64
    ev2, ei2 = getattr(EF, f"fractional_max_pool{nd}d_with_indices")(eager.tensor(a), k, out,
                                                                    _random_samples=eager.tensor(u))
    np.testing.assert_array_equal(ei2.numpy(), ti.numpy())


def test_output_ratio_and_gradient() -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((1, 2, 8, 8))
    u = rng.random((1, 2, 2))
    tv = TF.fractional_max_pool2d(torch.tensor(a), 2, output_ratio=(0.5, 0.5), _random_samples=torch.tensor(u))
    ev = EF.fractional_max_pool2d(eager.tensor(a), 2, output_ratio=0.5, _random_samples=eager.tensor(u))
    np.testing.assert_array_equal(ev.numpy(), tv.numpy())
    x = eager.tensor(a, requires_grad=True)
    s = eager.tensor(u)
    assert eager.autograd.gradcheck(lambda t: EF.fractional_max_pool2d(t, 3, (4, 5), _random_samples=s), (x,))
    x3 = eager.tensor(rng.standard_normal((1, 1, 5, 5, 5)), requires_grad=True)
    s3 = eager.tensor(rng.random((1, 1, 3)))
    assert eager.autograd.gradcheck(lambda t: EF.fractional_max_pool3d(t, 2, 3, _random_samples=s3), (x3,))


def test_random_samples_drawn_when_absent() -> None:
    y = EF.fractional_max_pool2d(eager.randn(2, 3, 10, 10), 2, output_size=5)
    assert tuple(y.shape) == (2, 3, 5, 5)


def test_errors() -> None:
    with pytest.raises(RuntimeError, match="too large"):
        EF.fractional_max_pool2d(eager.randn(1, 1, 4, 4), 3, output_size=3)
    with pytest.raises(ValueError):
        EF.fractional_max_pool2d(eager.randn(1, 1, 4, 4), 2)
    with pytest.raises(RuntimeError):
        EF.fractional_max_pool2d(eager.randn(4, 4), 2, output_size=2)
    with pytest.raises(ValueError):
        eager.nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5)
    with pytest.raises(ValueError):
        eager.nn.FractionalMaxPool2d(2, output_ratio=1.5)
    with pytest.raises(ValueError):
        eager.nn.FractionalMaxPool3d(2)


def test_modules_match_torch() -> None:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 9, 9)).astype(np.float32)
    u = rng.random((2, 3, 2)).astype(np.float32)
    tm = torch.nn.FractionalMaxPool2d(3, output_size=4, return_indices=True, _random_samples=torch.tensor(u))
    em = eager.nn.FractionalMaxPool2d(3, output_size=4, return_indices=True, _random_samples=eager.tensor(u))
    for e, t in zip(em(eager.tensor(a)), tm(torch.tensor(a))):
        np.testing.assert_array_equal(e.numpy(), t.numpy())
    assert isinstance(em, eager.nn.modules.pooling.FractionalMaxPool2d)
    assert em.kernel_size == tm.kernel_size and em.output_size == tm.output_size
    a3 = rng.standard_normal((1, 2, 6, 6, 6)).astype(np.float32)
    u3 = rng.random((1, 2, 3)).astype(np.float32)
    t3 = torch.nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=torch.tensor(u3))
    e3 = eager.nn.FractionalMaxPool3d(2, output_ratio=0.5, _random_samples=eager.tensor(u3))
    np.testing.assert_array_equal(e3(eager.tensor(a3)).numpy(), t3(torch.tensor(a3)).numpy())


def test_with_indices_spellings() -> None:
    rng = np.random.default_rng(4)
    for nd in (1, 2, 3):
        a = rng.standard_normal((2, 3) + (6,) * nd).astype(np.float32)
        name = f"adaptive_max_pool{nd}d_with_indices"
        for e, t in zip(getattr(EF, name)(eager.tensor(a), 4), getattr(TF, name)(torch.tensor(a), 4)):
            np.testing.assert_array_equal(e.numpy(), t.numpy())
    a = rng.standard_normal((1, 2, 6, 6, 6)).astype(np.float32)
    for e, t in zip(EF.max_pool3d_with_indices(eager.tensor(a), 2), TF.max_pool3d_with_indices(torch.tensor(a), 2)):
        np.testing.assert_array_equal(e.numpy(), t.numpy())
