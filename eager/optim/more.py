"""RMSprop, Adagrad, Adadelta, Adamax, NAdam and RAdam: PyTorch's update formulas, step by step, with
parameter groups and state_dict from `Optimizer`."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gmbase import dtypes as _dtypes

from .._functional import maximum, where
from .._tensor import Tensor
from .optimizer import Optimizer, StateDict, filled_like, next_step, step_tensor, tracing


def _check(name: str, value: float, low: float = 0.0) -> None:
    if value < low:
        raise ValueError(f"Invalid {name}: {value}")


def _decayed(p, g, group):
    """g with L2 weight decay added (the coupled form these optimizers use)."""
    if group["weight_decay"] != 0:
        g = g.add(p, alpha=group["weight_decay"])
    return g


def _zero_state(p, *buffers: str) -> dict:
    """A first step's state: step 0 (a 0-d tensor, as PyTorch's) and a zero tensor per name in
    `buffers`."""
    return {"step": step_tensor(), **{name: filled_like(p) for name in buffers}}


def _steps(opt: Optimizer, group: dict, decay=None):
    """(p, g, state, step) for each parameter of `group` that has a gradient: its state is made
    on its first step (the optimizer's `_initial_state`), and the step is counted (`step`: the
    count as the update reads it, `next_step`). g has weight decay applied by `decay` (default:
    the coupled L2 form, _decayed)."""
    for p, g in opt._gradients(group):
        g = (decay or _decayed)(p, g, group)
        state = opt._state_of(p, group)
        step = next_step(state)
        yield p, g, state, step


def _kernel_choices(**flags: Any) -> dict[str, Any]:
    """PyTorch's kernel choices (foreach, fused, capturable, differentiable) as the param
    group keeps them: scripts read and pass them, and every choice computes the same update
    here. `fused` and `foreach` both True is refused as PyTorch refuses it."""
    if flags.get("fused") and flags.get("foreach"):
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
    return flags


class RMSprop(Optimizer):
    """v = alpha v + (1 - alpha) g^2; (centered: m = alpha m + (1 - alpha) g, v - m^2);
    step = g / (sqrt(v) + eps), through a momentum buffer when momentum > 0; p -= lr * step."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False,
                 capturable: bool = False, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("momentum value", momentum)
        _check("weight_decay value", weight_decay)
        _check("alpha value", alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize,
                                      **_kernel_choices(foreach=foreach, capturable=capturable,
                                                        differentiable=differentiable)))

    def _initial_state(self, p, group: dict) -> dict:
        return _zero_state(p, "square_avg", *(("momentum_buffer",) if group["momentum"] > 0 else ()),
                           *(("grad_avg",) if group["centered"] else ()))

    def _update_group(self, group: dict) -> None:
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        for p, g, state, _ in _steps(self, group):
            square_avg = state["square_avg"]
            square_avg.mul_(alpha).add_(g * g, alpha=1 - alpha)
            if group["centered"]:
                grad_avg = state["grad_avg"]
                grad_avg.mul_(alpha).add_(g, alpha=1 - alpha)
                avg = (square_avg - grad_avg * grad_avg).sqrt() + eps
            else:
                avg = square_avg.sqrt() + eps
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).add_(g / avg)
                p.add_(buf, alpha=-lr)
            else:
                p.sub_(g / avg, alpha=lr)


class Adagrad(Optimizer):
    """s += g^2; p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, fused: bool | None = None) -> None:
        _check("learning rate", lr)
        _check("lr_decay value", lr_decay)
        _check("weight_decay value", weight_decay)
        _check("initial_accumulator_value value", initial_accumulator_value)
        _check("epsilon value", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                                      initial_accumulator_value=initial_accumulator_value, maximize=maximize,
                                      **_kernel_choices(foreach=foreach, differentiable=differentiable, fused=fused)))
        for group in self.param_groups:  # PyTorch creates the accumulators at construction
            for p in group["params"]:
                self.state[p] = StateDict(self._initial_state(p, group))

    def _initial_state(self, p, group: dict) -> dict:
        return {"step": step_tensor(), "sum": filled_like(p, group["initial_accumulator_value"])}

    def _update_group(self, group: dict) -> None:
        for p, g in self._gradients(group):
            g = _decayed(p, g, group)
            state = self._state_of(p, group)
            step = next_step(state)
            clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
            state["sum"].add_(g * g)
            p.sub_(g / (state["sum"].sqrt() + group["eps"]), alpha=clr)


class Adadelta(Optimizer):
    """v = rho v + (1 - rho) g^2; d = sqrt(u + eps) / sqrt(v + eps) * g;
    u = rho u + (1 - rho) d^2; p -= lr * d."""

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, foreach: bool | None = None, *, capturable: bool = False,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                                      **_kernel_choices(foreach=foreach, capturable=capturable,
                                                        differentiable=differentiable)))

    def _initial_state(self, p, group: dict) -> dict:
        return _zero_state(p, "square_avg", "acc_delta")

    def _update_group(self, group: dict) -> None:
        rho, eps = group["rho"], group["eps"]
        for p, g, state, _ in _steps(self, group):
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).add_(g * g, alpha=1 - rho)
            delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * g
            acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
            p.add_(delta, alpha=-group["lr"])


class Adamax(Optimizer):
    """m = b1 m + (1 - b1) g; u = max(b2 u, |g| + eps); p -= lr / (1 - b1^t) * m / u."""

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False, capturable: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      maximize=maximize, **_kernel_choices(foreach=foreach, capturable=capturable,
                                                                           differentiable=differentiable)))

    def _initial_state(self, p, group: dict) -> dict:
        return _zero_state(p, "exp_avg", "exp_inf")

    def _update_group(self, group: dict) -> None:
        (beta1, beta2), eps = group["betas"], group["eps"]
        for p, g, state, step in _steps(self, group):
            exp_avg = state["exp_avg"]
            exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
            # rebound rather than copied into: the same values, and a compiled step can trace it
            exp_inf = state["exp_inf"] = maximum(state["exp_inf"] * beta2, g.abs() + eps)
            p.sub_(exp_avg / exp_inf, alpha=group["lr"] / (1 - beta1 ** step))


def _decay(p, g, group):
    """Weight decay as `decoupled_weight_decay` says: p shrinks (AdamW's way), or g gains
    weight_decay * p (the coupled L2 form); the gradient to use is returned."""
    if group["weight_decay"] != 0:
        if group["decoupled_weight_decay"]:
            p.mul_(1 - group["lr"] * group["weight_decay"])
        else:
            g = g.add(p, alpha=group["weight_decay"])
    return g


def _sqrt(x):
    """The square root of a Python number or of a 0-d tensor (a traced step's numbers)."""
    return math.sqrt(x) if isinstance(x, (int, float)) else x.sqrt()


def _scalar_state_product(x, y: float, dtype=None):
    """x * y for a running product PyTorch keeps as a 0-d tensor of its scalar dtype (float32
    unless the default dtype is float64): computed in that dtype, y rounded to it first, as
    PyTorch's CPU kernel does, so the products agree bit for bit. A traced step's 0-d
    tensor multiplies as it is."""
    if not isinstance(x, float):
        return x * y
    dt = _dtypes.DEFAULT_FLOAT.np if dtype is None else dtype
    return float(np.multiply(dt.type(x), dt.type(y), dtype=dt))


def _update_product(state: dict, key: str, y):
    """state[key] *= y for a running product PyTorch keeps as a 0-d tensor of its scalar dtype
    (NAdam's mu_product), and the product as the update reads it: a Python number for an eager
    tensor (written through its array: the product in the tensor's dtype, `_scalar_state_product`),
    the tensor itself while the step is traced."""
    x = state[key]
    if type(x) is Tensor:
        data = x._data
        if type(data) is np.ndarray and data.ndim == 0 and not tracing():
            data[()] = _scalar_state_product(data.item(), y, data.dtype)
            x._vc[0] += 1
            return data.item()
        x.mul_(y)
        return x if tracing() else x.item()
    if isinstance(x, float):  # (a number set by hand)
        state[key] = x = _scalar_state_product(x, y)
        return x
    state[key] = x = x * y  # (a tracer's value)
    return x


def _check_betas(betas) -> None:
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")


class NAdam(Optimizer):
    """Adam with Nesterov momentum (Dozat), PyTorch's form: momentum coefficients
    mu_t = beta1 (1 - 0.96^(t psi) / 2) with psi = momentum_decay, their running product
    in the state, and p -= lr (1 - mu_t) / (1 - prod mu) g / d + lr mu_{t+1} / (1 - prod mu
    mu_{t+1}) m / d, with d = sqrt(v / (1 - beta2^t)) + eps."""

    _tensor_numbers = ("step", "mu_product")

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        _check("momentum_decay value", momentum_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, **_kernel_choices(foreach=foreach, capturable=capturable,
                                                                           differentiable=differentiable)))

    def _initial_state(self, p, group: dict) -> dict:
        return {"step": step_tensor(), "mu_product": step_tensor(1.0), "exp_avg": filled_like(p),
                "exp_avg_sq": filled_like(p)}

    def _update_group(self, group: dict) -> None:
        lr, (beta1, beta2), eps, psi = group["lr"], group["betas"], group["eps"], group["momentum_decay"]
        for p, g in self._gradients(group):
            state = self._state_of(p, group)
            step = next_step(state)
            g = _decay(p, g, group)
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
            mu_product = _update_product(state, "mu_product", mu)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(g, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            denom = exp_avg_sq.div(1 - beta2 ** step).sqrt() + eps
            p.sub_(g / denom * (lr * (1.0 - mu) / (1.0 - mu_product)))
            p.sub_(exp_avg / denom * (lr * mu_next / (1.0 - mu_product * mu_next)))


class RAdam(Optimizer):
    """Adam with the variance of the adaptive rate rectified (Liu et al.), PyTorch's form:
    while the approximated SMA length rho_t is at most 5 the step is plain momentum
    (lr m / (1 - beta1^t)); after that it is Adam's scaled by the rectification term."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        _check_betas(betas)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                                      **_kernel_choices(foreach=foreach, capturable=capturable,
                                                        differentiable=differentiable)))

    def _initial_state(self, p, group: dict) -> dict:
        return _zero_state(p, "exp_avg", "exp_avg_sq")

    def _update_group(self, group: dict) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        rho_inf = 2 / (1 - beta2) - 1
        for p, g, state, step in _steps(self, group, decay=_decay):
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.lerp_(g, 1 - beta1)
            exp_avg_sq.mul_(beta2).addcmul_(g, g, value=1 - beta2)
            bias2 = 1 - beta2 ** step
            corrected = exp_avg / (1 - beta1 ** step)
            rho_t = rho_inf - 2 * step * (beta2 ** step) / bias2
            momentum_only = corrected * lr
            if isinstance(rho_t, (int, float)) and rho_t <= 5.0:
                p.sub_(momentum_only)
                continue
            rect = _sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = corrected * lr * (_sqrt(bias2) / (exp_avg_sq.sqrt() + eps)) * rect
            # a traced step's count is a 0-d tensor: both forms, chosen elementwise
            p.sub_(adaptive if isinstance(rho_t, (int, float)) else where(rho_t > 5.0, adaptive, momentum_only))



class Rprop(Optimizer):
    """Resilient backpropagation (PyTorch's): each weight keeps its own step size, multiplied
    by etaplus while its gradient keeps its sign and by etaminus when the sign flips (that
    step is then skipped), clamped to step_sizes; p -= sign(g) * step_size."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False, foreach: Any = None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes), foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _initial_state(self, p, group: dict) -> dict:
        return {"step": step_tensor(), "prev": filled_like(p), "step_size": filled_like(p, float(group["lr"]))}

    def _update_group(self, group: dict) -> None:
        etaminus, etaplus = group["etas"]
        low, high = group["step_sizes"]
        for p, g in self._gradients(group):
            state = self._state_of(p, group)
            next_step(state)
            prev, step_size = state["prev"], state["step_size"]
            sign = (g * prev).sign()
            # the factors in p's dtype (a where() of two Python numbers would be float32)
            factor = where(sign > 0, filled_like(p, etaplus), where(sign < 0, filled_like(p, etaminus),
                                                                     filled_like(p, 1.0)))
            step_size = state["step_size"] = (step_size * factor).clamp(low, high)
            g = where(factor == etaminus, 0.0, g)  # a flipped sign: no step this time
            p.addcmul_(g.sign(), step_size, value=-1)
            state["prev"] = g.clone()


class ASGD(Optimizer):
    """Averaged SGD (PyTorch's): p = p (1 - lambd eta) - eta g, with eta decaying as
    lr / (1 + lambd lr t) ** alpha; `ax` keeps the average of the iterates from step t0 on.
    eta and mu are 0-d tensors of the scalar dtype, as PyTorch keeps them (so the rounding agrees)."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, foreach: Any = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        _check("learning rate", lr)
        _check("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _initial_state(self, p, group: dict) -> dict:
        # (0-d tensors of the scalar dtype, as PyTorch's: float64 under a float64 default)
        return {"step": step_tensor(), "eta": step_tensor(float(group["lr"])), "mu": step_tensor(1.0),
                "ax": filled_like(p)}

    def _update_group(self, group: dict) -> None:
        lr, lambd, alpha, t0 = float(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        for p, g in self._gradients(group):
            state = self._state_of(p, group)
            step = next_step(state)
            if group["weight_decay"] != 0:
                g = g.add(p, alpha=group["weight_decay"])
            eta = state["eta"].item()
            p.mul_(1 - lambd * eta)
            p.add_(g, alpha=-eta)
            if state["mu"].item() != 1:
                state["ax"].add_((p - state["ax"]) * state["mu"].item())
            else:
                state["ax"].copy_(p)
            state["eta"].fill_(lr / (1 + lambd * lr * step) ** alpha)
            state["mu"].fill_(1 / max(1, step - t0))


class SparseAdam(Optimizer):
    """Adam on the rows a gradient touches only (PyTorch's masked Adam for embeddings): the
    moments and the parameter change only at the gradient's indices. A sparse gradient's
    indices are its (coalesced) nonzero pattern; eager's Embedding(sparse=True) gives a
    dense gradient, whose touched rows are those with a nonzero entry (a looked-up row whose
    gradient is exactly zero is then left alone, where PyTorch would still decay its moments)."""

    _tensor_numbers = ()  # (PyTorch's SparseAdam keeps and saves an int step)

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, maximize: bool = False) -> None:
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))
        sparse = [[i, j] for i, g in enumerate(self.param_groups) for j, p in enumerate(g["params"])
                  if getattr(p, "is_sparse", False)]
        if sparse:
            raise ValueError(f"Sparse params at indices {sparse}: SparseAdam requires dense parameter tensors")

    def _initial_state(self, p, group: dict) -> dict:
        return {"step": 0, "exp_avg": filled_like(p), "exp_avg_sq": filled_like(p)}

    def _update_group(self, group: dict) -> None:
        from .._factories import tensor  # noqa: PLC0415
        from ..sparse import SparseTensor  # noqa: PLC0415

        (beta1, beta2), eps, lr = group["betas"], group["eps"], float(group["lr"])
        for p, g in self._gradients(group):
            state = self._state_of(p, group)
            step = next_step(state)
            if isinstance(g, SparseTensor):
                g = g.coalesce()
                index = tuple(g._indices()[d] for d in range(g.sparse_dim()))
                values = g._values()
            else:
                rows = np.nonzero(np.asarray(g.detach().reshape(g.shape[0], -1).numpy() != 0).any(1))[0]
                index = (tensor(rows.astype(np.int64), device=p.device),)
                values = g[index]
            if values.numel() == 0:
                continue
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            old = exp_avg[index]
            update = (values - old) * (1 - beta1)
            exp_avg[index] = old + update
            old_sq = exp_avg_sq[index]
            update_sq = (values * values - old_sq) * (1 - beta2)
            exp_avg_sq[index] = old_sq + update_sq
            numer = update + old
            denom = (update_sq + old_sq).sqrt() + eps
            step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
            p[index] = p[index] + (numer / denom) * -step_size
