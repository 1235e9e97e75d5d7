"""More of torch.distributions for `eager.distributions`: Laplace, Exponential, MultivariateNormal
(covariance_matrix, scale_tril or precision_matrix), Independent, Gamma and Beta, in the
style of eager/distributions.py (composed of eager ops, so log_prob and rsample
differentiate). Gamma and Beta draw through NumPy's generator without a gradient (PyTorch's
implicit reparameterization is not built); their log_prob differentiates through lgamma
(eager.special's autograd.Function, with digamma as its derivative)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _functional as _F
from ._compositions import xlogy
from ._device import xp_of_array
from ._factories import rand, randn
from ._factories.random import default_generator
from ._grad_mode import no_grad
from ._tensor import Tensor
from .distributions import _LOG_SQRT_2PI, Distribution, _as_tensor, _broadcast, _LocationScale
from .special import digamma, lgamma

__all__ = ["Beta", "Exponential", "Gamma", "Independent", "Laplace", "MultivariateNormal"]


# -- Laplace -----------------------------------------------------------------------------------------------
class Laplace(_LocationScale):
    """The Laplace distribution with density exp(-|x - loc| / scale) / (2 scale)."""

    @property
    def variance(self) -> Any:
        return 2 * self.scale * self.scale

    @property
    def stddev(self) -> Any:
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape: Any = ()) -> Any:
        eps = float(np.finfo(self.loc.dtype.name).eps)
        u = rand(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device) * (2 - eps) - (
            1 - eps)
        return self.loc - self.scale * _F.sign(u) * _F.log1p(-_F.abs(u))

    def log_prob(self, value: Any) -> Any:
        value = _as_tensor(value, self.loc)
        return -_F.log(2 * self.scale) - _F.abs(value - self.loc) / self.scale

    def cdf(self, value: Any) -> Any:
        z = value - self.loc
        return 0.5 - 0.5 * _F.sign(z) * _F.expm1(-_F.abs(z) / self.scale)

    def icdf(self, value: Any) -> Any:
        term = value - 0.5
        return self.loc - self.scale * _F.sign(term) * _F.log1p(-2 * _F.abs(term))

    def entropy(self) -> Any:
        return 1 + _F.log(2 * self.scale)


# -- MultivariateNormal ------------------------------------------------------------------------------------
def _batch_mv_solve(tril: Any, vec: Any) -> Any:
    """tril^{-1} vec over broadcast batch dims (vec (..., n), tril (..., n, n))."""
    from .linalg import solve  # noqa: PLC0415

    batch = tuple(_F.broadcast_shape(tuple(tril.shape[:-2]), tuple(vec.shape[:-1])))
    n = tril.shape[-1]
    return solve(_F.broadcast_to(tril, (*batch, n, n)), _F.broadcast_to(vec, (*batch, n)).unsqueeze(-1)).squeeze(-1)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) over vectors, given exactly one of covariance_matrix, scale_tril (the
    lower Cholesky factor of Sigma) or precision_matrix (Sigma^-1)."""

    _params = ("loc", "covariance_matrix")

    def __init__(self, loc: Any, covariance_matrix: Any = None, precision_matrix: Any = None, scale_tril: Any = None,
                 validate_args: bool | None = None) -> None:
        from .linalg import cholesky, inv  # noqa: PLC0415

        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        if (covariance_matrix is not None) + (scale_tril is not None) + (precision_matrix is not None) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or scale_tril may be specified.")
        given = next(m for m in (scale_tril, covariance_matrix, precision_matrix) if m is not None)
        if given.dim() < 2:
            raise ValueError("scale_tril, covariance_matrix or precision_matrix must be at least two-dimensional, "
                             "with optional leading batch dimensions")
        if given.shape[-1] != loc.shape[-1] or given.shape[-2] != loc.shape[-1]:
            raise ValueError(f"MultivariateNormal: loc of event size {loc.shape[-1]} does not match the matrix of "
                             f"shape {tuple(given.shape)}")
        self._given = "covariance_matrix" if covariance_matrix is not None else (
            "scale_tril" if scale_tril is not None else "precision_matrix")
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        else:
            try:
                self._unbroadcasted_scale_tril = cholesky(
                    covariance_matrix if covariance_matrix is not None else inv(precision_matrix))
            except RuntimeError as err:  # not positive-definite: PyTorch's constraint error
                raise ValueError(f"Expected parameter {self._given} ({type(given).__name__} of shape "
                                 f"{tuple(given.shape)}) of distribution MultivariateNormal() to satisfy the "
                                 f"constraint PositiveDefinite(), but found invalid values:\n{given}") from err
        self._given_matrix = given
        batch = tuple(_F.broadcast_shape(tuple(loc.shape[:-1]), tuple(given.shape[:-2])))
        n = loc.shape[-1]
        self.loc = _F.broadcast_to(loc, (*batch, n))
        super().__init__(batch, (n,), validate_args)

    @property
    def scale_tril(self) -> Any:
        return _F.broadcast_to(self._unbroadcasted_scale_tril, (*self.batch_shape, *self.event_shape * 2))

    @property
    def covariance_matrix(self) -> Any:
        low = self._unbroadcasted_scale_tril
        return _F.broadcast_to(_F.matmul(low, low.mT), (*self.batch_shape, *self.event_shape * 2))

    @property
    def precision_matrix(self) -> Any:
        from .linalg import inv  # noqa: PLC0415

        return inv(self.covariance_matrix)

    @property
    def mean(self) -> Any:
        return self.loc

    @property
    def variance(self) -> Any:
        low = self._unbroadcasted_scale_tril
        return _F.broadcast_to(_F.sum(low * low, -1), (*self.batch_shape, *self.event_shape))

    def _half_log_det(self) -> Any:
        return _F.sum(_F.log(_F.diagonal(self._unbroadcasted_scale_tril, 0, -2, -1)), -1)

    def rsample(self, sample_shape: Any = ()) -> Any:
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + _F.matmul(self._unbroadcasted_scale_tril, eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value: Any) -> Any:
        diff = value - self.loc
        z = _batch_mv_solve(self._unbroadcasted_scale_tril, diff)
        maha = _F.sum(z * z, -1)
        n = self.event_shape[0]
        return -0.5 * (n * 2 * _LOG_SQRT_2PI + maha) - self._half_log_det()

    def entropy(self) -> Any:
        n = self.event_shape[0]
        h = 0.5 * n * (1.0 + 2 * _LOG_SQRT_2PI) + self._half_log_det()
        return h if tuple(h.shape) == self.batch_shape else _F.broadcast_to(h, self.batch_shape)

    def __repr__(self) -> str:
        return f"MultivariateNormal(loc: {self.loc.size()}, {self._given}: {self._given_matrix.size()})"


# -- Independent -------------------------------------------------------------------------------------------
class Independent(Distribution):
    """A distribution's rightmost `reinterpreted_batch_ndims` batch dims read as event dims:
    log_prob and entropy sum over them."""

    def __init__(self, base_distribution: Distribution, reinterpreted_batch_ndims: int,
                 validate_args: bool | None = None) -> None:
        k = int(reinterpreted_batch_ndims)
        if k > len(base_distribution.batch_shape):
            raise ValueError(f"Expected reinterpreted_batch_ndims <= len(base_distribution.batch_shape), actual {k} vs "
                             f"{len(base_distribution.batch_shape)}")
        self.base_dist = base_distribution
        self.reinterpreted_batch_ndims = k
        cut = len(base_distribution.batch_shape) - k
        super().__init__(base_distribution.batch_shape[:cut],
                         base_distribution.batch_shape[cut:] + base_distribution.event_shape, validate_args)

    def _sum_rightmost(self, value: Any) -> Any:
        k = self.reinterpreted_batch_ndims
        return _F.sum(value, tuple(range(-k, 0))) if k else value

    @property
    def mean(self) -> Any:
        return self.base_dist.mean

    @property
    def variance(self) -> Any:
        return self.base_dist.variance

    def sample(self, sample_shape: Any = ()) -> Any:
        return self.base_dist.sample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Any:
        return self.base_dist.rsample(sample_shape)

    def log_prob(self, value: Any) -> Any:
        return self._sum_rightmost(self.base_dist.log_prob(value))

    def entropy(self) -> Any:
        return self._sum_rightmost(self.base_dist.entropy())

    def __repr__(self) -> str:
        return f"Independent({self.base_dist!r}, {self.reinterpreted_batch_ndims})"


# -- Gamma, Beta -------------------------------------------------------------------------------------------
def _draw_host(fn: Any, like: Any) -> Any:
    """A draw made by NumPy's generator (eager's default stream) in like's dtype and device."""
    arr = fn(default_generator._np)
    xp = xp_of_array(like._data)
    return Tensor._make(xp.asarray(np.asarray(arr).astype(like._data.dtype)))


class Gamma(Distribution):
    """Gamma(concentration, rate), density rate^a x^(a-1) e^(-rate x) / Gamma(a)."""

    _params = ("concentration", "rate")

    def __init__(self, concentration: Any, rate: Any, validate_args: bool | None = None) -> None:
        self.concentration, self.rate = _broadcast(concentration, rate)
        super().__init__(tuple(self.concentration.shape), (), validate_args)
        self._check("concentration", self.concentration, self.concentration > 0, "GreaterThan(lower_bound=0.0)")
        self._check("rate", self.rate, self.rate > 0, "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self) -> Any:
        return self.concentration / self.rate

    @property
    def variance(self) -> Any:
        return self.concentration / (self.rate * self.rate)

    def sample(self, sample_shape: Any = ()) -> Any:
        with no_grad():
            shape = self._extended_shape(sample_shape)
            a = np.broadcast_to(_as_numpy(self.concentration), shape)
            r = np.broadcast_to(_as_numpy(self.rate), shape)
            tiny = float(np.finfo(self.concentration._data.dtype).tiny)
            return _F.clamp(_draw_host(lambda g: g.gamma(a) / r, self.concentration), tiny)

    def log_prob(self, value: Any) -> Any:
        value = _as_tensor(value, self.rate)
        self._check_sample(value, value >= 0, "GreaterThanEq(lower_bound=0.0)")
        a, b = self.concentration, self.rate
        return xlogy(a, b) + xlogy(a - 1, value) - b * value - lgamma(a)

    def entropy(self) -> Any:
        a = self.concentration
        return a - _F.log(self.rate) + lgamma(a) + (1.0 - a) * digamma(a)


class Beta(Distribution):
    """Beta(concentration1, concentration0) on (0, 1), density x^(a-1) (1-x)^(b-1) / B(a, b)."""

    _params = ("concentration1", "concentration0")

    def __init__(self, concentration1: Any, concentration0: Any, validate_args: bool | None = None) -> None:
        self.concentration1, self.concentration0 = _broadcast(concentration1, concentration0)
        super().__init__(tuple(self.concentration1.shape), (), validate_args)
        self._check("concentration1", self.concentration1, self.concentration1 > 0, "GreaterThan(lower_bound=0.0)")
        self._check("concentration0", self.concentration0, self.concentration0 > 0, "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self) -> Any:
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def variance(self) -> Any:
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total * total * (total + 1))

    def sample(self, sample_shape: Any = ()) -> Any:
        with no_grad():
            shape = self._extended_shape(sample_shape)
            a = np.broadcast_to(_as_numpy(self.concentration1), shape)
            b = np.broadcast_to(_as_numpy(self.concentration0), shape)
            return _draw_host(lambda g: g.beta(a, b), self.concentration1)

    def log_prob(self, value: Any) -> Any:
        value = _as_tensor(value, self.concentration1)
        self._check_sample(value, (value >= 0) & (value <= 1), "Interval(lower_bound=0.0, upper_bound=1.0)")
        a, b = self.concentration1, self.concentration0
        return xlogy(a - 1, value) + xlogy(b - 1, 1 - value) - (lgamma(a) + lgamma(b) - lgamma(a + b))

    def entropy(self) -> Any:
        a, b = self.concentration1, self.concentration0
        total = a + b
        return (lgamma(a) + lgamma(b) - lgamma(total) - (a - 1) * digamma(a) - (b - 1) * digamma(b)
                + (total - 2) * digamma(total))


def _as_numpy(t: Any) -> np.ndarray:
    data = t.detach()._data
    xp = xp_of_array(data)
    return data if xp is np else xp.asnumpy(data)


class Exponential(Distribution):
    """Exponential(rate), density rate e^(-rate x) on x >= 0."""

    _params = ("rate",)

    def __init__(self, rate: Any, validate_args: bool | None = None) -> None:
        (self.rate,) = _broadcast(rate)
        super().__init__(tuple(self.rate.shape), (), validate_args)
        self._check("rate", self.rate, self.rate > 0, "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self) -> Any:
        return 1 / self.rate

    @property
    def variance(self) -> Any:
        return 1 / (self.rate * self.rate)

    @property
    def stddev(self) -> Any:
        return 1 / self.rate

    def rsample(self, sample_shape: Any = ()) -> Any:
        u = rand(self._extended_shape(sample_shape), dtype=self.rate.dtype, device=self.rate.device)
        return -_F.log1p(-u) / self.rate  # u in [0, 1): 1 - u in (0, 1], so the draw is finite

    def log_prob(self, value: Any) -> Any:
        value = _as_tensor(value, self.rate)
        self._check_sample(value, value >= 0, "GreaterThanEq(lower_bound=0.0)")
        return _F.log(self.rate) - self.rate * value

    def cdf(self, value: Any) -> Any:
        return 1 - _F.exp(-self.rate * value)

    def icdf(self, value: Any) -> Any:
        return -_F.log1p(-value) / self.rate

    def entropy(self) -> Any:
        return 1.0 - _F.log(self.rate)


def _kl_exponential(p: Exponential, q: Exponential) -> Any:
    ratio = q.rate / p.rate
    return ratio - _F.log(ratio) - 1


# -- KL divergences (PyTorch's formulas), joined to eager.distributions.kl_divergence's table ------------
def _kl_mvn(p: MultivariateNormal, q: MultivariateNormal) -> Any:
    from .linalg import solve  # noqa: PLC0415

    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different event shapes cannot be "
                         "computed")
    n = p.event_shape[0]
    batch = tuple(_F.broadcast_shape(p.batch_shape, q.batch_shape))
    lq = _F.broadcast_to(q._unbroadcasted_scale_tril, (*batch, n, n))
    lp = _F.broadcast_to(p._unbroadcasted_scale_tril, (*batch, n, n))
    m = solve(lq, lp)
    z = _batch_mv_solve(q._unbroadcasted_scale_tril, q.loc - p.loc)
    term = q._half_log_det() - p._half_log_det()
    return term + 0.5 * (_F.sum(m * m, (-2, -1)) + _F.sum(z * z, -1) - n)


def _kl_laplace(p: Laplace, q: Laplace) -> Any:
    ratio = p.scale / q.scale
    gap = _F.abs(p.loc - q.loc)
    return -_F.log(ratio) + gap / q.scale + ratio * _F.exp(-gap / p.scale) - 1


def _kl_independent(p: Independent, q: Independent) -> Any:
    from .distributions import kl_divergence  # noqa: PLC0415

    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError("kl_divergence: Independent distributions with different reinterpreted_batch_ndims")
    return p._sum_rightmost(kl_divergence(p.base_dist, q.base_dist))


def _kl_gamma(p: Gamma, q: Gamma) -> Any:
    t1 = q.concentration * _F.log(p.rate / q.rate)
    t2 = lgamma(q.concentration) - lgamma(p.concentration)
    t3 = (p.concentration - q.concentration) * digamma(p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


def _kl_beta(p: Beta, q: Beta) -> Any:
    sp = p.concentration1 + p.concentration0
    sq = q.concentration1 + q.concentration0
    t1 = lgamma(q.concentration1) + lgamma(q.concentration0) + lgamma(sp)
    t2 = lgamma(p.concentration1) + lgamma(p.concentration0) + lgamma(sq)
    t3 = (p.concentration1 - q.concentration1) * digamma(p.concentration1)
    t4 = (p.concentration0 - q.concentration0) * digamma(p.concentration0)
    return t1 - t2 + t3 + t4 + (sq - sp) * digamma(sp)


def _join_kl() -> None:
    from .distributions import _KL  # noqa: PLC0415

    _KL.update({MultivariateNormal: _kl_mvn, Laplace: _kl_laplace, Independent: _kl_independent, Gamma: _kl_gamma,
                Beta: _kl_beta, Exponential: _kl_exponential})


_join_kl()
