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


def _t(a: object) -> object:
    return torch.tensor(np.asarray(a, dtype=np.float64))


def _e(a: object, grad: bool = False) -> object:
    return eager.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


RNG = np.random.default_rng(0)


@pytest.mark.parametrize("param", ["covariance_matrix", "scale_tril", "precision_matrix"])
def test_multivariate_normal_matches_torch(param: str) -> None:
    a = RNG.standard_normal((2, 3, 3))
    cov = a @ np.swapaxes(a, -1, -2) + 3 * np.eye(3)
    mat = {"covariance_matrix": cov, "scale_tril": np.linalg.cholesky(cov), "precision_matrix": np.linalg.inv(cov)}[param]
    loc = RNG.standard_normal((2, 3))
    x = RNG.standard_normal((4, 2, 3))
    d = eager.distributions.MultivariateNormal(_e(loc), **{param: _e(mat)})
    td = torch.distributions.MultivariateNormal(_t(loc), **{param: _t(mat)})
    assert d.batch_shape == tuple(td.batch_shape) and d.event_shape == tuple(td.event_shape)
    np.testing.assert_allclose(d.log_prob(_e(x)).numpy(), td.log_prob(_t(x)).numpy(), rtol=1e-10)
    np.testing.assert_allclose(d.entropy().numpy(), td.entropy().numpy(), rtol=1e-10)
    np.testing.assert_allclose(d.covariance_matrix.numpy(), td.covariance_matrix.numpy(), rtol=1e-10)
    np.testing.assert_allclose(d.variance.numpy(), td.variance.numpy(), rtol=1e-10)
    assert tuple(d.rsample((5,)).shape) == tuple(td.rsample((5,)).shape)


def test_multivariate_normal_gradients_and_errors() -> None:
    a = RNG.standard_normal((3, 3))
    tril = np.linalg.cholesky(a @ a.T + 3 * np.eye(3))
    loc, low, x = _e(RNG.standard_normal(3), True), _e(tril, True), _e(RNG.standard_normal((2, 3)))
    assert gradcheck(lambda m, s: eager.distributions.MultivariateNormal(m, scale_tril=s.tril()).log_prob(x), (loc, low))
    assert gradcheck(lambda m, s: eager.distributions.MultivariateNormal(m, scale_tril=s.tril()).rsample((2,)) * 0
                     + eager.distributions.MultivariateNormal(m, scale_tril=s.tril()).entropy(), (loc, low))
    with pytest.raises(ValueError, match="Exactly one"):
        eager.distributions.MultivariateNormal(_e(np.zeros(3)))
    # a rsample is loc + L eps: its gradient in loc is 1
    m = _e(np.zeros(3), True)
    eager.distributions.MultivariateNormal(m, scale_tril=_e(tril)).rsample().sum().backward()
    assert m.grad.tolist() == [1.0, 1.0, 1.0]


def test_laplace_matches_torch() -> None:
    loc, scale = RNG.standard_normal(4), np.array([0.5, 1.0, 2.0, 3.0])
    x, p = RNG.standard_normal(4), np.array([0.1, 0.4, 0.6, 0.95])
    d, td = eager.distributions.Laplace(_e(loc), _e(scale)), torch.distributions.Laplace(_t(loc), _t(scale))
    for got, want in ((d.log_prob(_e(x)), td.log_prob(_t(x))), (d.entropy(), td.entropy()), (d.cdf(_e(x)), td.cdf(_t(x))),
                      (d.icdf(_e(p)), td.icdf(_t(p))), (d.variance, td.variance), (d.stddev, td.stddev)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    s = d.rsample((2000,))
    assert tuple(s.shape) == (2000, 4)
    assert abs(float((s - _e(loc)).abs().mean(0).div(_e(scale)).mean()) - 1) < 0.1  # E|x - loc| = scale
    lt, st = _e(loc, True), _e(scale, True)
    assert gradcheck(lambda a, b: eager.distributions.Laplace(a, b).log_prob(_e(x)), (lt, st))
    with pytest.raises(ValueError, match="scale"):
        eager.distributions.Laplace(_e(loc), _e(-scale))


def test_independent_sums_the_reinterpreted_dims() -> None:
    loc, scale, x = RNG.standard_normal((2, 3)), np.full((2, 3), 1.5), RNG.standard_normal((2, 3))
    d = eager.distributions.Independent(eager.distributions.Normal(_e(loc), _e(scale)), 1)
    td = torch.distributions.Independent(torch.distributions.Normal(_t(loc), _t(scale)), 1)
    assert d.batch_shape == tuple(td.batch_shape) and d.event_shape == tuple(td.event_shape)
    np.testing.assert_allclose(d.log_prob(_e(x)).numpy(), td.log_prob(_t(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(d.entropy().numpy(), td.entropy().numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="reinterpreted_batch_ndims"):
        eager.distributions.Independent(eager.distributions.Normal(_e(loc), _e(scale)), 3)


def test_gamma_and_beta_match_torch() -> None:
    a, b = np.array([0.5, 2.0, 7.5]), np.array([1.5, 0.7, 3.0])
    x, u = np.array([0.3, 2.0, 1.1]), np.array([0.2, 0.5, 0.9])
    g, tg = eager.distributions.Gamma(_e(a), _e(b)), torch.distributions.Gamma(_t(a), _t(b))
    be, tb = eager.distributions.Beta(_e(a), _e(b)), torch.distributions.Beta(_t(a), _t(b))
    for got, want in ((g.log_prob(_e(x)), tg.log_prob(_t(x))), (g.entropy(), tg.entropy()), (g.mean, tg.mean),
                      (g.variance, tg.variance), (be.log_prob(_e(u)), tb.log_prob(_t(u))), (be.entropy(), tb.entropy()),
                      (be.mean, tb.mean), (be.variance, tb.variance)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10)
    at, bt = _e(a, True), _e(b, True)
    assert gradcheck(lambda p, q: eager.distributions.Gamma(p, q).log_prob(_e(x)), (at, bt))
    assert gradcheck(lambda p, q: eager.distributions.Beta(p, q).log_prob(_e(u)), (at, bt))
    eager.manual_seed(0)
    s = g.sample((4000,))
    assert tuple(s.shape) == (4000, 3) and not s.requires_grad and float(s.min()) > 0
    np.testing.assert_allclose(s.mean(0).numpy(), a / b, rtol=0.1)
    sb = be.sample((4000,))
    np.testing.assert_allclose(sb.mean(0).numpy(), a / (a + b), rtol=0.1)
    with pytest.raises(ValueError, match="concentration"):
        eager.distributions.Gamma(_e(-a), _e(b))


def test_lgamma_digamma_match_torch_and_differentiate() -> None:
    x = np.array([-2.5, -0.3, 0.1, 0.5, 1.0, 3.3, 9.99, 100.0, 1e-5, 0.0])
    np.testing.assert_allclose(eager.lgamma(_e(x)).numpy(), torch.lgamma(_t(x)).numpy(), rtol=1e-13)
    np.testing.assert_allclose(eager.special.digamma(_e(x)).numpy(), torch.special.digamma(_t(x)).numpy(), rtol=1e-12)
    assert _e(x).lgamma().dtype == eager.float64 and eager.tensor([1, 2]).lgamma().dtype == eager.float32
    xt = _e([0.3, 1.7, 4.0, -0.5], True)
    assert gradcheck(eager.lgamma, (xt,))


def test_digamma_gradient_is_trigamma() -> None:
    xt = _e([0.3, 1.7, 4.0, 12.5, -0.5], True)
    assert gradcheck(eager.digamma, (xt,))
    eager.digamma(xt).sum().backward()
    tt = _t([0.3, 1.7, 4.0, 12.5, -0.5]).requires_grad_()
    torch.digamma(tt).sum().backward()
    # PyTorch's trigamma truncates its series earlier (about 1e-10 relative); ours is within 1e-13 of mpmath
    np.testing.assert_allclose(xt.grad.numpy(), tt.grad.numpy(), rtol=1e-8)
    # Gamma's entropy differentiates through digamma in its concentration
    a, b = _e([0.5, 2.0, 7.5], True), _e([1.5, 0.7, 3.0], True)
    assert gradcheck(lambda p, q: eager.distributions.Gamma(p, q).entropy(), (a, b))
    assert gradcheck(lambda p, q: eager.distributions.Beta(p, q).entropy(), (a, b))


def test_kl_divergences_match_torch() -> None:
    kl, tkl = eager.distributions.kl_divergence, torch.distributions.kl_divergence
    ED, TD = eager.distributions, torch.distributions  # noqa: N806
    a = RNG.standard_normal((2, 3, 3))
    covs = a @ np.swapaxes(a, -1, -2) + 2 * np.eye(3)
    locs = RNG.standard_normal((2, 3))
    pairs = [
        (ED.MultivariateNormal(_e(locs[0]), covariance_matrix=_e(covs[0])),
         ED.MultivariateNormal(_e(locs[1]), covariance_matrix=_e(covs[1])),
         TD.MultivariateNormal(_t(locs[0]), covariance_matrix=_t(covs[0])),
         TD.MultivariateNormal(_t(locs[1]), covariance_matrix=_t(covs[1]))),
        (ED.Laplace(_e([0.0, 1.0]), _e([1.0, 2.0])), ED.Laplace(_e([0.5, -1.0]), _e([0.7, 1.0])),
         TD.Laplace(_t([0.0, 1.0]), _t([1.0, 2.0])), TD.Laplace(_t([0.5, -1.0]), _t([0.7, 1.0]))),
        (ED.Gamma(_e([0.5, 3.0]), _e([1.0, 2.0])), ED.Gamma(_e([1.5, 2.0]), _e([0.7, 1.0])),
         TD.Gamma(_t([0.5, 3.0]), _t([1.0, 2.0])), TD.Gamma(_t([1.5, 2.0]), _t([0.7, 1.0]))),
        (ED.Beta(_e([0.5, 3.0]), _e([1.0, 2.0])), ED.Beta(_e([1.5, 2.0]), _e([0.7, 1.0])),
         TD.Beta(_t([0.5, 3.0]), _t([1.0, 2.0])), TD.Beta(_t([1.5, 2.0]), _t([0.7, 1.0]))),
        (ED.Independent(ED.Normal(_e(locs[0]), _e([1.0, 2.0, 3.0])), 1),
         ED.Independent(ED.Normal(_e(locs[1]), _e([2.0, 1.0, 0.5])), 1),
         TD.Independent(TD.Normal(_t(locs[0]), _t([1.0, 2.0, 3.0])), 1),
         TD.Independent(TD.Normal(_t(locs[1]), _t([2.0, 1.0, 0.5])), 1)),
    ]
    for p, q, tp, tq in pairs:
        np.testing.assert_allclose(kl(p, q).numpy(), tkl(tp, tq).numpy(), rtol=1e-10, atol=1e-12)


def test_submodule_paths() -> None:
    from eager.distributions.beta import Beta
    from eager.distributions.multivariate_normal import MultivariateNormal

    assert MultivariateNormal is eager.distributions.MultivariateNormal and Beta is eager.distributions.Beta


def test_ndtri_and_mvn_positive_definite_check() -> None:
    p = np.array([1e-6, 0.025, 0.5, 0.8, 1 - 1e-9])
    np.testing.assert_allclose(eager.special.ndtri(_e(p)).numpy(), torch.special.ndtri(_t(p)).numpy(), rtol=1e-9)
    with pytest.raises(ValueError, match="PositiveDefinite"):
        eager.distributions.MultivariateNormal(_e(np.zeros(2)), covariance_matrix=_e([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError):
        torch.distributions.MultivariateNormal(_t(np.zeros(2)), covariance_matrix=_t([[1.0, 2.0], [2.0, 1.0]]))


def test_inplace_special_methods() -> None:
    base = np.array([0.1, -0.5, 0.9])
    x = _e(base, True)
    y = x * 1.0
    y.erfinv_()
    y.sum().backward()
    t = _t(base).requires_grad_()
    u = t * 1.0
    u.erfinv_()
    u.sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), u.detach().numpy(), rtol=1e-14)
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-12)
    z = _e([1.5, 3.0])
    assert z.lgamma_() is z
    np.testing.assert_allclose(z.numpy(), torch.lgamma(_t([1.5, 3.0])).numpy(), rtol=1e-14)
    np.testing.assert_allclose(_e([1.5, 3.0]).digamma_().numpy(), torch.digamma(_t([1.5, 3.0])).numpy(), atol=1e-13)


def test_exponential_matches_torch() -> None:
    rate, x, p = np.array([0.5, 2.0, 3.0]), np.array([0.3, 1.0, 0.1]), np.array([0.1, 0.5, 0.99])
    d, td = eager.distributions.Exponential(_e(rate)), torch.distributions.Exponential(_t(rate))
    q, tq = eager.distributions.Exponential(_e([1.0, 1.0, 0.2])), torch.distributions.Exponential(_t([1.0, 1.0, 0.2]))
    for got, want in ((d.log_prob(_e(x)), td.log_prob(_t(x))), (d.entropy(), td.entropy()), (d.cdf(_e(x)), td.cdf(_t(x))),
                      (d.icdf(_e(p)), td.icdf(_t(p))), (d.mean, td.mean), (d.variance, td.variance),
                      (eager.distributions.kl_divergence(d, q), torch.distributions.kl_divergence(td, tq))):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    r = _e(rate, True)
    assert gradcheck(lambda v: eager.distributions.Exponential(v).log_prob(_e(x)), (r,))
    s = d.rsample((4000,))
    assert float(s.min()) >= 0
    np.testing.assert_allclose(s.mean(0).detach().numpy(), 1 / rate, rtol=0.1)
    with pytest.raises(ValueError, match="rate"):
        eager.distributions.Exponential(_e(-rate))
    from eager.distributions.exponential import Exponential

    assert Exponential is eager.distributions.Exponential
