"""`eager.distributions`: the distributions training code uses most, as torch.distributions:
Normal, Uniform, Bernoulli and Categorical, with `sample`, `rsample` (the reparameterized
draw gradients flow through), `log_prob`, `entropy`, and `kl_divergence` between two of a
kind. Laplace, Exponential, MultivariateNormal, Independent, Gamma and Beta live in
eager/_distributions_more and load on first use (module __getattr__).

Everything is composed of eager ops and eager's random draws, so it differentiates as they
do and compiles with static (a draw inside a compiled function is one of its random
inputs). Parameters are checked as PyTorch does (`validate_args`, on by default) when they
hold data; inside a compiled function they do not, and the checks are skipped."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _functional as _F
from ._factories import bernoulli as _bernoulli_draw
from ._factories import full_like, multinomial, rand, randn, tensor
from ._grad_mode import no_grad
from ._tensor import Tensor

__all__ = ["Bernoulli", "Categorical", "Distribution", "Normal", "Uniform", "kl_divergence", "register_kl"]

_LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def _as_tensor(value: Any, like: Any = None) -> Any:
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return value
    dtype = like.dtype if like is not None and hasattr(like, "dtype") else None
    return tensor(float(value), dtype=dtype)


def _broadcast(*values: Any) -> list:
    """The parameters as tensors of one shape (torch.distributions.utils.broadcast_all)."""
    like = next((v for v in values if hasattr(v, "dtype")), None)
    ts = [_as_tensor(v, like) for v in values]
    shape = _F.broadcast_shape(*[tuple(t.shape) for t in ts])
    return [t if tuple(t.shape) == tuple(shape) else _F.broadcast_to(t, shape) for t in ts]


def _has_data(*values: Any) -> bool:
    return all(isinstance(v, Tensor) for v in values)


class Distribution:
    """Base class: `batch_shape`, `event_shape`, and the shape a draw of `sample_shape` has."""

    def __init__(self, batch_shape: tuple = (), event_shape: tuple = (), validate_args: bool | None = None) -> None:
        self.batch_shape = tuple(batch_shape)
        self.event_shape = tuple(event_shape)
        self._validate = True if validate_args is None else bool(validate_args)

    def _extended_shape(self, sample_shape: Any = ()) -> tuple:
        return tuple(sample_shape) + self.batch_shape + self.event_shape

    def _check(self, name: str, value: Any, ok: Any, constraint: str) -> None:
        """ValueError as PyTorch's, where a parameter holding data breaks its constraint."""
        if self._validate and _has_data(value, ok) and not bool(ok.all()):
            raise ValueError(f"Expected parameter {name} ({type(value).__name__} of shape {tuple(value.shape)}) of "
                             f"distribution {type(self).__name__}() to satisfy the constraint {constraint}, but "
                             f"found invalid values:\n{value}")

    def _check_sample(self, value: Any, ok: Any, support: str) -> None:
        """ValueError as PyTorch's, where a value given to log_prob is outside the support."""
        if self._validate and _has_data(value, ok) and not bool(ok.all()):
            raise ValueError(f"Expected value argument ({type(value).__name__} of shape {tuple(value.shape)}) to be "
                             f"within the support ({support}) of the distribution {self!r}, but found invalid "
                             f"values:\n{value}")

    def sample(self, sample_shape: Any = ()) -> Any:
        """A draw without gradient (rsample's numbers, detached, where there is an rsample)."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no reparameterized sample (rsample): use sample()")

    def log_prob(self, value: Any) -> Any:
        raise NotImplementedError

    def entropy(self) -> Any:
        raise NotImplementedError

    @property
    def mean(self) -> Any:
        raise NotImplementedError

    @property
    def variance(self) -> Any:
        raise NotImplementedError

    @property
    def stddev(self) -> Any:
        return _F.sqrt(self.variance)

    def __repr__(self) -> str:
        # PyTorch's: a one-element parameter by its value, others by their size; of probs and
        # logits, the one the distribution was given
        def show(v: Any) -> str:
            return f"{v}" if v.numel() == 1 else str(v.size())

        given = getattr(self, "_given", None)
        names = [k for k in self._params if given is None or k == given]
        params = ", ".join(f"{k}: {show(getattr(self, k))}" for k in names)
        return f"{type(self).__name__}({params})"

    _params: tuple = ()


class _LocationScale(Distribution):
    """A distribution of loc + scale * (a fixed standard one), scale > 0, both broadcast to the
    batch shape: Normal's and Laplace's (_distributions_more) parameters, checks and mean."""

    _params = ("loc", "scale")

    def __init__(self, loc: Any, scale: Any, validate_args: bool | None = None) -> None:
        self.loc, self.scale = _broadcast(loc, scale)
        super().__init__(tuple(self.loc.shape), (), validate_args)
        self._check("scale", self.scale, self.scale > 0, "GreaterThan(lower_bound=0.0)")

    @property
    def mean(self) -> Any:
        return self.loc


class Normal(_LocationScale):
    """The normal distribution N(loc, scale^2)."""

    @property
    def variance(self) -> Any:
        return self.scale * self.scale

    @property
    def stddev(self) -> Any:
        return self.scale

    def rsample(self, sample_shape: Any = ()) -> Any:
        eps = randn(self._extended_shape(sample_shape), dtype=self.loc.dtype, device=self.loc.device)
        return self.loc + eps * self.scale

    def log_prob(self, value: Any) -> Any:
        value = _as_tensor(value, self.loc)
        self._check_sample(value, value == value, "Real()")
        return -((value - self.loc) ** 2) / (2 * self.variance) - _F.log(self.scale) - _LOG_SQRT_2PI

    def cdf(self, value: Any) -> Any:
        return 0.5 * (1 + _F.erf((value - self.loc) / self.scale / math.sqrt(2)))

    def icdf(self, value: Any) -> Any:
        """The quantile loc + scale sqrt(2) erfinv(2p - 1) (differentiable in p, loc and scale)."""
        from .special import erfinv  # noqa: PLC0415

        value = _as_tensor(value, self.loc)
        return self.loc + self.scale * erfinv(2 * value - 1) * math.sqrt(2)

    def entropy(self) -> Any:
        return 0.5 + _LOG_SQRT_2PI + _F.log(self.scale)


class Uniform(Distribution):
    """The uniform distribution on [low, high)."""

    _params = ("low", "high")

    def __init__(self, low: Any, high: Any, validate_args: bool | None = None) -> None:
        self.low, self.high = _broadcast(low, high)
        super().__init__(tuple(self.low.shape), (), validate_args)
        self._check("low", self.low, self.low < self.high, "LessThan(upper_bound=high)")

    @property
    def mean(self) -> Any:
        return (self.high + self.low) / 2

    @property
    def variance(self) -> Any:
        return (self.high - self.low) ** 2 / 12

    def rsample(self, sample_shape: Any = ()) -> Any:
        u = rand(self._extended_shape(sample_shape), dtype=self.low.dtype, device=self.low.device)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value: Any) -> Any:
        value = _as_tensor(value, self.low)
        self._check_sample(value, (self.low <= value) & (value <= self.high), "Interval(low, high)")
        inside = ((self.low <= value) & (self.high > value)).type_as(self.low)
        return _F.log(inside) - _F.log(self.high - self.low)

    def entropy(self) -> Any:
        return _F.log(self.high - self.low)


def _probs_from_logits(logits: Any, binary: bool) -> Any:
    return _F.sigmoid(logits) if binary else _F.softmax(logits, -1)


def _logits_from_probs(probs: Any, binary: bool) -> Any:
    """log p (log p - log(1 - p) for binary), with p clamped to [eps, 1 - eps] of its dtype."""
    eps = float(np.finfo(probs.dtype.np).eps) if probs.dtype.is_floating_point else 1e-7
    p = _F.clamp(probs, eps, 1 - eps)
    return _F.log(p) - _F.log1p(-p) if binary else _F.log(p)


class Bernoulli(Distribution):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0: exactly one of the two."""

    _params = ("probs", "logits")

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._given = "probs" if probs is not None else "logits"
        if probs is not None:
            (self.probs,) = _broadcast(probs)
            self.logits = _logits_from_probs(self.probs, binary=True)
        else:
            (self.logits,) = _broadcast(logits)
            self.probs = _probs_from_logits(self.logits, binary=True)
        super().__init__(tuple(self.probs.shape), (), validate_args)
        if probs is not None:
            self._check("probs", self.probs, (self.probs >= 0) & (self.probs <= 1), "Interval(lower_bound=0.0, "
                        "upper_bound=1.0)")

    @property
    def mean(self) -> Any:
        return self.probs

    @property
    def variance(self) -> Any:
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape: Any = ()) -> Any:
        with no_grad():
            return _bernoulli_draw(_F.broadcast_to(self.probs, self._extended_shape(sample_shape)))

    def log_prob(self, value: Any) -> Any:
        from .nn.functional import binary_cross_entropy_with_logits  # noqa: PLC0415

        logits, value = _broadcast(self.logits, value)
        self._check_sample(value, (value == 0) | (value == 1), "Boolean()")
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self) -> Any:
        from .nn.functional import binary_cross_entropy_with_logits  # noqa: PLC0415

        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")


class Categorical(Distribution):
    """One of K categories (the last dimension of `probs` or `logits`), by its probability;
    probs are normalized to sum to 1, logits by their logsumexp."""

    _params = ("probs", "logits")

    def __init__(self, probs: Any = None, logits: Any = None, validate_args: bool | None = None) -> None:
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        self._given = "probs" if probs is not None else "logits"
        given = probs if probs is not None else logits
        if given.dim() < 1:
            raise ValueError("`probs` or `logits` parameter must be at least one-dimensional.")
        if probs is not None:
            self.probs = probs / _F.sum(probs, -1, keepdim=True)
            self.logits = _logits_from_probs(self.probs, binary=False)
        else:
            self.logits = logits - _F.logsumexp(logits, -1, keepdim=True)
            self.probs = _probs_from_logits(self.logits, binary=False)
        self._num_events = given.shape[-1]
        super().__init__(tuple(given.shape[:-1]), (), validate_args)
        if probs is not None:
            self._check("probs", probs, _F.all(probs >= 0, -1) & (_F.sum(probs, -1) > 0), "Simplex()")

    @property
    def param_shape(self) -> tuple:
        return tuple(self.probs.shape)

    @property
    def mean(self) -> Any:
        return full_like(self.probs[..., 0], math.nan)  # categories are labels: no mean, as in PyTorch

    @property
    def variance(self) -> Any:
        return full_like(self.probs[..., 0], math.nan)

    def sample(self, sample_shape: Any = ()) -> Any:
        sample_shape = tuple(sample_shape)
        n = math.prod(sample_shape) if sample_shape else 1
        with no_grad():
            flat = self.probs.reshape(-1, self._num_events)
            drawn = multinomial(flat, n, True).T  # (n, batch)
        return drawn.reshape(self._extended_shape(sample_shape))

    def log_prob(self, value: Any) -> Any:
        value = _as_tensor(value)
        self._check_sample(value, (value >= 0) & (value < self._num_events) & (value == value.long()),
                           f"IntegerInterval(lower_bound=0, upper_bound={self._num_events - 1})")
        value = value.long().unsqueeze(-1)
        shape = _F.broadcast_shape(tuple(value.shape), tuple(self.logits.shape))
        index = _F.broadcast_to(value, shape[:-1] + (1,))
        log_pmf = _F.broadcast_to(self.logits, shape)
        return _F.gather(log_pmf, -1, index).squeeze(-1)

    def entropy(self) -> Any:
        lowest = float(np.finfo(self.logits.dtype.np).min)
        return -_F.sum(_F.clamp_min(self.logits, lowest) * self.probs, -1)


def _kl_normal(p: Normal, q: Normal) -> Any:
    var_ratio = (p.scale / q.scale) ** 2
    t1 = ((p.loc - q.loc) / q.scale) ** 2
    return 0.5 * (var_ratio + t1 - 1 - _F.log(var_ratio))


def _kl_uniform(p: Uniform, q: Uniform) -> Any:
    result = _F.log((q.high - q.low) / (p.high - p.low))
    return _F.where((q.low > p.low) | (q.high < p.high), math.inf, result)


def _kl_bernoulli(p: Bernoulli, q: Bernoulli) -> Any:
    t1 = p.probs * (_F.softplus(-q.logits) - _F.softplus(-p.logits))
    t1 = _F.where(p.probs == 0, 0.0, _F.where(q.probs == 0, math.inf, t1))
    t2 = (1 - p.probs) * (_F.softplus(q.logits) - _F.softplus(p.logits))
    t2 = _F.where(p.probs == 1, 0.0, _F.where(q.probs == 1, math.inf, t2))
    return t1 + t2


def _kl_categorical(p: Categorical, q: Categorical) -> Any:
    t = p.probs * (p.logits - q.logits)
    return _F.sum(_F.where(p.probs == 0, 0.0, _F.where(q.probs == 0, math.inf, t)), -1)


# PyTorch's formulas, inf where q gives zero probability to what p can draw
_KL: dict[type, Callable[[Any, Any], Any]] = {
    Normal: _kl_normal, Uniform: _kl_uniform, Bernoulli: _kl_bernoulli, Categorical: _kl_categorical,
}


_KL_PAIRS: dict[tuple[type, type], Callable[[Any, Any], Any]] = {}


def register_kl(type_p: type, type_q: type) -> Callable[[Callable[[Any, Any], Any]], Callable[[Any, Any], Any]]:
    """`@register_kl(P, Q)` makes the decorated `fn(p, q)` the KL(p || q) of a P and a Q (and
    their subclasses), as torch.distributions.kl.register_kl."""
    def decorator(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
        _KL_PAIRS[(type_p, type_q)] = fn
        return fn

    return decorator


def kl_divergence(p: Distribution, q: Distribution) -> Any:
    """KL(p || q) for two distributions of one kind (Normal, Uniform, Bernoulli, Categorical),
    or a pair registered with register_kl (the most specific registered pair wins)."""
    matches = [(tp, tq) for (tp, tq) in _KL_PAIRS if isinstance(p, tp) and isinstance(q, tq)]
    if matches:
        best = min(matches, key=lambda pq: (type(p).__mro__.index(pq[0]), type(q).__mro__.index(pq[1])))
        return _KL_PAIRS[best](p, q)
    rule = _KL.get(type(p))
    if rule is None or type(q) is not type(p):
        raise NotImplementedError(f"kl_divergence: no formula for {type(p).__name__} against {type(q).__name__}; "
                                  f"both must be one of {', '.join(k.__name__ for k in _KL)}")
    return rule(p, q)


def _submodules() -> None:
    """torch.distributions' module paths (`from torch.distributions.normal import Normal`,
    `torch.distributions.kl.kl_divergence`) as modules holding these same objects."""
    import sys  # noqa: PLC0415
    import types  # noqa: PLC0415

    here = sys.modules[__name__]
    for name, members in (("distribution", (Distribution,)), ("normal", (Normal,)), ("uniform", (Uniform,)),
                          ("bernoulli", (Bernoulli,)), ("categorical", (Categorical,)),
                          ("kl", (kl_divergence, register_kl))):
        mod = types.ModuleType(f"{__name__}.{name}", f"torch.distributions.{name}'s names, from {__name__}.")
        for obj in members:
            setattr(mod, obj.__name__, obj)
        sys.modules[mod.__name__] = mod
        setattr(here, name, mod)


_submodules()

_MORE = ("Beta", "Exponential", "Gamma", "Independent", "Laplace", "MultivariateNormal")
__all__ += list(_MORE)


def __getattr__(name: str) -> Any:
    """The distributions of eager/_distributions_more (built on this module's base class, so
    loaded on first use rather than imported here, which would be circular)."""
    if name in _MORE:
        from . import _distributions_more  # noqa: PLC0415

        return getattr(_distributions_more, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _more_submodules() -> None:
    """torch.distributions.multivariate_normal, .laplace, .independent, .gamma, .beta: modules
    whose class is loaded from eager/_distributions_more on first use."""
    import sys  # noqa: PLC0415
    import types  # noqa: PLC0415

    here = sys.modules[__name__]
    for name, cls_name in (("multivariate_normal", "MultivariateNormal"), ("laplace", "Laplace"),
                           ("independent", "Independent"), ("gamma", "Gamma"), ("beta", "Beta"),
                           ("exponential", "Exponential")):
        mod = types.ModuleType(f"{__name__}.{name}", f"torch.distributions.{name}'s names, from {__name__}.")

        def lazy(attr: str, _cls_name: str = cls_name) -> Any:
            if attr == _cls_name:
                return __getattr__(attr)
            raise AttributeError(f"module 'torch.distributions' submodule has no attribute {attr!r}")

        mod.__getattr__ = lazy  # type: ignore[method-assign]  # PEP 562: the class loads on first use
        sys.modules[mod.__name__] = mod
        setattr(here, name, mod)


_more_submodules()
