"""RMSprop, Adagrad, Adadelta and Adamax: PyTorch's update formulas, step by step, with
parameter groups and state_dict from `Optimizer`."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._factories import full_like, zeros_like
from .._functional import maximum
from .optimizer import Optimizer


def _check(name: str, value: float, low: float = 0.0) -> None:
    if value < low:
        raise ValueError(f"Invalid {name}: {value}")


def _decayed(p, g, group):
    """g with L2 weight decay added (the coupled form these optimizers use)."""
    if group["weight_decay"] != 0:
        g = g.add(p, alpha=group["weight_decay"])
    return g


def _steps(opt: Optimizer, group: dict, buffers: tuple[str, ...]):
    """(p, g, state) for each parameter of `group` that has a gradient: its state is made on
    its first step (step 0 and a zero tensor per name in `buffers`), and the step is counted."""
    for p, g in opt._gradients(group):
        g = _decayed(p, g, group)
        state = opt.state.setdefault(p, {})
        if not state:
            state["step"] = 0
            for name in buffers:
                state[name] = zeros_like(p)
        state["step"] += 1
        yield p, g, state


class RMSprop(Optimizer):
    """v = alpha v + (1 - alpha) g^2; (centered: m = alpha m + (1 - alpha) g, v - m^2);
    step = g / (sqrt(v) + eps), through a momentum buffer when momentum > 0; p -= lr * step."""

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0.0, momentum: float = 0.0, centered: bool = False, *,
                 maximize: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("momentum value", momentum)
        _check("weight_decay value", weight_decay)
        _check("alpha value", alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, maximize=maximize))

    def _update_group(self, group: dict) -> None:
        lr, alpha, eps, momentum = group["lr"], group["alpha"], group["eps"], group["momentum"]
        buffers = ("square_avg",) + (("momentum_buffer",) if momentum > 0 else ()) + (
            ("grad_avg",) if group["centered"] else ())
        for p, g, state in _steps(self, group, buffers):
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

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, *, maximize: bool = False) -> None:
        _check("learning rate", lr)
        _check("lr_decay value", lr_decay)
        _check("weight_decay value", weight_decay)
        _check("initial_accumulator_value value", initial_accumulator_value)
        _check("epsilon value", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                                      initial_accumulator_value=initial_accumulator_value, maximize=maximize))
        for group in self.param_groups:  # PyTorch creates the accumulators at construction
            for p in group["params"]:
                self.state[p] = {"step": 0, "sum": full_like(p, group["initial_accumulator_value"])}

    def _update_group(self, group: dict) -> None:
        for p, g in self._gradients(group):
            g = _decayed(p, g, group)
            state = self.state.setdefault(p, {"step": 0, "sum": full_like(p, group["initial_accumulator_value"])})
            state["step"] += 1
            clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
            state["sum"].add_(g * g)
            p.sub_(g / (state["sum"].sqrt() + group["eps"]), alpha=clr)


class Adadelta(Optimizer):
    """v = rho v + (1 - rho) g^2; d = sqrt(u + eps) / sqrt(v + eps) * g;
    u = rho u + (1 - rho) d^2; p -= lr * d."""

    def __init__(self, params: Iterable[Any], lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0.0, *, maximize: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize))

    def _update_group(self, group: dict) -> None:
        rho, eps = group["rho"], group["eps"]
        for p, g, state in _steps(self, group, ("square_avg", "acc_delta")):
            square_avg, acc_delta = state["square_avg"], state["acc_delta"]
            square_avg.mul_(rho).add_(g * g, alpha=1 - rho)
            delta = (acc_delta + eps).sqrt() / (square_avg + eps).sqrt() * g
            acc_delta.mul_(rho).add_(delta * delta, alpha=1 - rho)
            p.add_(delta, alpha=-group["lr"])


class Adamax(Optimizer):
    """m = b1 m + (1 - b1) g; u = max(b2 u, |g| + eps); p -= lr / (1 - b1^t) * m / u."""

    def __init__(self, params: Iterable[Any], lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, *, maximize: bool = False) -> None:
        _check("learning rate", lr)
        _check("epsilon value", eps)
        _check("weight_decay value", weight_decay)
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update_group(self, group: dict) -> None:
        (beta1, beta2), eps = group["betas"], group["eps"]
        for p, g, state in _steps(self, group, ("exp_avg", "exp_inf")):
            exp_avg = state["exp_avg"]
            exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
            # rebound rather than copied into: the same values, and a compiled step can trace it
            exp_inf = state["exp_inf"] = maximum(state["exp_inf"] * beta2, g.abs() + eps)
            p.sub_(exp_avg / exp_inf, alpha=group["lr"] / (1 - beta1 ** state["step"]))
