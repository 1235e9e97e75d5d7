"""erfinv (eager.erfinv, Tensor.erfinv, special.erfinv) and Normal.icdf against PyTorch:
values across [-1, 1] and its tails in float64 and float32, the edges (+-1, outside),
integer promotion, and gradients against finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck

torch = pytest.importorskip("torch")


def test_erfinv_matches_torch_in_float64_including_tails() -> None:
    x = np.concatenate([np.linspace(-1, 1, 4001), [1 - 1e-15, -1 + 1e-12, 1 - 2.0 ** -53, 1e-300, 0.5, 0.49999]])
    got = eager.special.erfinv(eager.tensor(x)).numpy()
    want = torch.special.erfinv(torch.tensor(x)).numpy()
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-14, atol=1e-300)
    assert np.array_equal(got[~finite], want[~finite])  # +-inf at +-1


def test_erfinv_float32_edges_and_int_promotion() -> None:
    x = np.array([-1.0, -0.999, -0.2, 0.0, 0.7, 0.9999, 1.0, 1.5, -2.0], dtype=np.float32)
    got = eager.erfinv(eager.tensor(x))
    want = torch.erfinv(torch.tensor(x))
    assert got.dtype == eager.float32
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, equal_nan=True)
    ints = eager.tensor([0, 1, -1]).erfinv()
    assert ints.dtype == eager.float32 == getattr(eager, str(torch.tensor([0, 1]).erfinv().dtype).split(".")[1])
    assert ints.tolist() == torch.tensor([0, 1, -1]).erfinv().tolist()


def test_erfinv_gradient() -> None:
    x = eager.tensor([-0.95, -0.3, 0.0, 0.4, 0.9], dtype=eager.float64, requires_grad=True)
    assert gradcheck(eager.erfinv, (x,))
    eager.erfinv(x).sum().backward()
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    torch.erfinv(t).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)


def test_normal_icdf_matches_torch_and_inverts_cdf() -> None:
    loc, scale = np.array([0.0, 1.0, -2.0]), np.array([1.0, 0.5, 3.0])
    p = np.array([0.025, 0.5, 0.9])
    d = eager.distributions.Normal(eager.tensor(loc), eager.tensor(scale))
    td = torch.distributions.Normal(torch.tensor(loc), torch.tensor(scale))
    got = d.icdf(eager.tensor(p))
    np.testing.assert_allclose(got.numpy(), td.icdf(torch.tensor(p)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.cdf(got).numpy(), p, rtol=1e-12)
    lt = eager.tensor(loc, requires_grad=True)
    st = eager.tensor(scale, requires_grad=True)
    pt = eager.tensor(p, requires_grad=True)
    assert gradcheck(lambda a, b, c: eager.distributions.Normal(a, b).icdf(c), (lt, st, pt))


def test_is_inference() -> None:
    assert eager.ones(2).is_inference() is False
