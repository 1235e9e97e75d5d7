"""Adam and AdamW: PyTorch's update formulas, with bias correction and optional AMSGrad."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from .._factories import zeros_like
from .._functional import maximum
from .optimizer import Optimizer


class Adam(Optimizer):
    """For each parameter p with gradient g, at step t (PyTorch's formulation):

        g = g + weight_decay * p                    (Adam; AdamW decays p itself instead)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)                       (amsgrad; then v_max replaces v below)
        denom = sqrt(v) / sqrt(1 - beta2**t) + eps
        p = p - lr / (1 - beta1**t) * m / denom
    """

    _decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.0, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize))

    def _update_group(self, group: dict) -> None:
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        for p in group["params"]:
            g = p.grad
            if g is None:
                continue
            if group["maximize"]:
                g = -g
            state = self.state.setdefault(p, {})
            if not state:
                state["step"] = 0
                state["exp_avg"] = zeros_like(p)
                state["exp_avg_sq"] = zeros_like(p)
                if amsgrad:
                    state["max_exp_avg_sq"] = zeros_like(p)
            state["step"] += 1
            step = state["step"]
            if weight_decay != 0:
                if self._decoupled:
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g.add(p, alpha=weight_decay)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            exp_avg.mul_(beta1).add_(g, alpha=1 - beta1)
            exp_avg_sq.mul_(beta2).add_(g * g, alpha=1 - beta2)
            second = exp_avg_sq
            if amsgrad:
                second = state["max_exp_avg_sq"] = maximum(state["max_exp_avg_sq"], exp_avg_sq)
            step_size = lr / (1 - beta1 ** step)
            bias2 = 1 - beta2 ** step
            # the step count and lr may be 0-d tensors (as PyTorch keeps them; a traced step does)
            denom = second.sqrt() / (math.sqrt(bias2) if isinstance(bias2, float) else bias2.sqrt()) + eps
            if isinstance(step_size, float):
                p.sub_(exp_avg / denom, alpha=step_size)
            else:
                p.sub_(exp_avg / denom * step_size)


class AdamW(Adam):
    """Adam with decoupled weight decay: p = p * (1 - lr * weight_decay) before the Adam step."""

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
