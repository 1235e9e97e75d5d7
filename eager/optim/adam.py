"""Adam and AdamW: PyTorch's update formulas, with bias correction and optional AMSGrad."""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

from gmbase.fpstate import quiet_fp, restore_fp

from .._functional import maximum
from .optimizer import (
    Optimizer,
    advance_steps,
    bump_versions,
    eager_arrays,
    filled_like,
    foreach_group,
    native_updates,
    next_step,
    state_arrays,
    step_tensor,
)


class _quiet_numpy:
    """`with _quiet_numpy():` NumPy's floating-point reports off inside (see eager._fpstate)."""

    __slots__ = ("token",)

    def __enter__(self) -> None:
        self.token = quiet_fp()

    def __exit__(self, *exc: object) -> None:
        restore_fp(self.token)


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
                 eps: float = 1e-8, weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        """foreach: None (the default) or True update all parameters of a group at once where
        they are plain NumPy float tensors of one dtype (the same bits as one at a time);
        False, one parameter at a time. decoupled_weight_decay=True is AdamW's update.
        capturable, differentiable and fused are PyTorch's kernel choices, kept in the param
        groups as PyTorch keeps them (scripts test `'fused' in signature(AdamW).parameters`);
        every choice computes the same update here."""
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if eps < 0.0:
            raise ValueError(f"Invalid epsilon value: {eps}")
        for i, beta in enumerate(betas):
            if not 0.0 <= beta < 1.0:
                raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=bool(decoupled_weight_decay or self._decoupled)))

    def _update_group(self, group: dict) -> None:
        if self._foreach_wanted(group) and self._update_foreach(group):
            return
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        for p, g in self._gradients(group):
            state = self._state_of(p, group)
            step = next_step(state)  # (a Python number; the 0-d tensor itself while traced)
            exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
            if self._update_arrays(p, g, state, group, step):
                continue
            if weight_decay != 0:
                if group.get("decoupled_weight_decay", self._decoupled):
                    p.mul_(1 - lr * weight_decay)
                else:
                    g = g.add(p, alpha=weight_decay)
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

    def _update_foreach(self, group: dict) -> bool:
        """The update of every parameter of the group at once (FlatState): the per-parameter
        array path's ufuncs, each run once over all the parameters laid end to end, so the
        same bits; False (nothing done) where it does not apply: fewer than two parameters
        with gradients, other than plain NumPy float tensors of one dtype, hyper-parameters
        that are not numbers, or parameters at different step counts."""
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        found = foreach_group(group, (lr, beta1, beta2, eps, weight_decay))
        if found is None:
            return False
        params, P_arrays, G_arrays, dtype = found
        states = [self._state_of(p, group) for p in params]
        counted = advance_steps(states)  # (every step tensor counted once more, or None: nothing done)
        if counted is None:
            return False
        step = int(counted)
        names = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
        decoupled = group.get("decoupled_weight_decay", self._decoupled)
        native = native_updates()
        bufs = state_arrays(states, names) if native is not None else None
        if bufs is not None and native.adam(
                P_arrays, G_arrays, bufs[0], bufs[1], bufs[2] if amsgrad else None, lr=lr, beta1=beta1, beta2=beta2,
                eps=eps, weight_decay=weight_decay, decoupled=decoupled, maximize=bool(group.get("maximize")),
                step=step):
            # each parameter's arrays in place, one native pass (no gather into flat buffers)
            for p, st in zip(params, states):
                bump_versions(p, *(st[name] for name in names))
            return True
        flat = self._flat_state(group, params, P_arrays, dtype, names, states)
        flat.gather(P_arrays, G_arrays, bool(group.get("maximize")))
        P, G, m, v = flat.P, flat.G, flat.buffers["exp_avg"], flat.buffers["exp_avg_sq"]
        max_sq = flat.buffers["max_exp_avg_sq"] if amsgrad else None
        _adam_arrays(P, G, m, v, max_sq, lr, beta1, beta2, eps, weight_decay, decoupled, step)
        flat.scatter(P_arrays)
        for p, st in zip(params, states):
            bump_versions(p, *(st[name] for name in names))
        return True

    def _initial_state(self, p, group: dict) -> dict:
        state = {"step": step_tensor(), "exp_avg": filled_like(p), "exp_avg_sq": filled_like(p)}
        if group["amsgrad"]:
            state["max_exp_avg_sq"] = filled_like(p)
        return state

    def _update_arrays(self, p, g, state: dict, group: dict, step) -> bool:
        """The same update on the arrays of eager CPU tensors, in place with `out=` ufuncs
        (the same operations in the same order, so the same roundings); False (nothing done)
        when a tensor is not one or a hyper-parameter is not a number (a traced step)."""
        lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
        weight_decay, amsgrad = group["weight_decay"], group["amsgrad"]
        numbers = (lr, beta1, beta2, eps, weight_decay)
        if not ((type(step) is float or type(step) is int) and all(type(v) is float or type(v) is int for v in numbers)):
            if not (isinstance(step, (int, float)) and all(isinstance(v, (int, float)) for v in numbers)):
                return False
        buffers = [state["exp_avg"], state["exp_avg_sq"]] + ([state["max_exp_avg_sq"]] if amsgrad else [])
        arrays = eager_arrays(p, g, *buffers)
        if arrays is None:
            return False
        P, G, m, v = arrays[:4]
        if P.ndim == 0:  # NumPy gives scalars, not arrays, for 0-d operands: no `out=` into them
            return False
        dt, shape = P.dtype, P.shape
        for a in arrays:
            if a.dtype != dt or a.shape != shape:
                return False
        decoupled = group.get("decoupled_weight_decay", self._decoupled)
        native = native_updates()
        if native is None or not native.adam(
                [P], [G], [m], [v], [arrays[4]] if amsgrad else None, lr=lr, beta1=beta1, beta2=beta2, eps=eps,
                weight_decay=weight_decay, decoupled=decoupled, maximize=False, step=int(step)):
            _adam_arrays(P, G, m, v, arrays[4] if amsgrad else None, lr, beta1, beta2, eps, weight_decay, decoupled,
                         step)
        bump_versions(p, *buffers)
        return True


def _adam_arrays(P, G, m, v, max_sq, lr: float, beta1: float, beta2: float, eps: float, weight_decay: float,
                 decoupled: bool, step: float) -> None:
    """One Adam update in place on NumPy arrays with `out=` ufuncs: the one spelling of the
    update for one parameter and for all of a group's parameters laid end to end, so both give
    the same operations in the same order (the same roundings as eager's op-by-op step).
    `max_sq` is AMSGrad's running maximum, None without it. NumPy's floating-point reports are
    off for the update (as np.errstate would be, at a fraction of its cost)."""
    with _quiet_numpy():
        if weight_decay != 0:
            if decoupled:
                np.multiply(P, 1 - lr * weight_decay, out=P)
            else:
                G = G + P * weight_decay  # g.add(p, alpha=weight_decay)
        tmp = np.multiply(G, 1 - beta1)
        np.multiply(m, beta1, out=m)
        np.add(m, tmp, out=m)
        np.multiply(G, G, out=tmp)
        np.multiply(tmp, 1 - beta2, out=tmp)
        np.multiply(v, beta2, out=v)
        np.add(v, tmp, out=v)
        second = v if max_sq is None else np.maximum(max_sq, v, out=max_sq)
        denom = np.sqrt(second, out=tmp)
        np.divide(denom, math.sqrt(1 - beta2 ** step), out=denom)
        np.add(denom, eps, out=denom)
        update = np.divide(m, denom, out=denom)
        np.multiply(update, lr / (1 - beta1 ** step), out=update)
        np.subtract(P, update, out=P)


class AdamW(Adam):
    """Adam with decoupled weight decay: p = p * (1 - lr * weight_decay) before the Adam step."""

    _decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 1e-2, amsgrad: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
