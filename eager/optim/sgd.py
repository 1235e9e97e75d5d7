"""SGD with momentum, dampening, Nesterov and weight decay: PyTorch's update, step by step."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .._tensor import Tensor
from .adam import _quiet_numpy
from .optimizer import Optimizer, StateDict, bump_versions, foreach_group, native_updates, required, state_arrays


class SGD(Optimizer):
    """For each parameter p with gradient g (PyTorch's formulation):

        g = g + weight_decay * p
        b = g (first step) else momentum * b + (1 - dampening) * g
        g = g + momentum * b if nesterov else b          (when momentum != 0)
        p = p - lr * g                                    (p + lr * g when maximize)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, differentiable: bool = False, fused: bool | None = None) -> None:
        """foreach: None (the default) or True update all parameters of a group at once where
        they are plain NumPy float tensors of one dtype (the same bits as one at a time);
        False, one parameter at a time. differentiable and fused are PyTorch's kernel choices,
        kept in the param groups as PyTorch keeps them; each computes the same update here."""
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        if fused and foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    def _first_state_reads_gradient(self, group: dict) -> bool:
        # with momentum, the first step's buffer is a copy of the gradient: not a state made
        # before the step (the first step is a graph of its own)
        return group["momentum"] != 0

    def _initial_state(self, p, group: dict) -> dict | None:
        return None if self._first_state_reads_gradient(group) else {}

    def _update_foreach(self, group: dict) -> bool:
        """Every parameter of the group at once (FlatState), with the per-parameter path's
        operations element by element (add with alpha is `x + alpha * y`, as eager's add), so
        the same bits; False (nothing done) where it does not apply: fewer than two parameters
        with gradients, other than plain NumPy float tensors of one dtype, hyper-parameters
        that are not numbers, or only some parameters with a momentum buffer yet."""
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        found = foreach_group(group, (lr, momentum, dampening, weight_decay))
        if found is None:
            return False
        params, P_arrays, G_arrays, dtype = found
        maximize = bool(group.get("maximize"))
        native = native_updates()
        if native is not None and self._update_native(native, group, params, P_arrays, G_arrays, maximize):
            return True
        if momentum == 0 and weight_decay == 0:
            # plain SGD: one in-place update per array, no gather into and scatter out of the
            # flat buffer (which cost more than the update for a few small parameters: 56 of a
            # character MLP step's 720 us); the same ufuncs on the same numbers (p + g * -lr)
            step = lr if group.get("maximize") else -lr
            with _quiet_numpy():
                for pa, ga in zip(P_arrays, G_arrays):
                    np.add(pa, ga * step, out=pa)
            bump_versions(*params)
            return True
        names: tuple = ()
        first = False
        if momentum != 0:
            names = ("momentum_buffer",)
            states = [self.state.setdefault(p, StateDict()) for p in params]
            have = sum(st.get("momentum_buffer") is not None for st in states)
            if have not in (0, len(states)):
                return False
            first = have == 0
        else:
            states = [{} for _ in params]
        flat = self._flat_state(group, params, P_arrays, dtype, names, states)
        flat.gather(P_arrays, G_arrays, bool(group.get("maximize")))
        P, G = flat.P, flat.G
        with _quiet_numpy():
            if weight_decay != 0:
                G = G + P * weight_decay  # g.add(p, alpha=weight_decay)
            if momentum != 0:
                buf = flat.buffers["momentum_buffer"]
                if first:
                    np.copyto(buf, G)  # the first buffer is the gradient itself
                else:
                    np.multiply(buf, momentum, out=buf)
                    np.add(buf, G if 1 - dampening == 1 else G * (1 - dampening), out=buf)
                G = G + buf * momentum if nesterov else buf
            np.add(P, G * -lr, out=P)
        flat.scatter(P_arrays)
        for p, st in zip(params, states):
            bump_versions(p, *(st[name] for name in names))
        return True

    def _update_native(self, native: Any, group: dict, params: list, P_arrays: list, G_arrays: list,
                       maximize: bool) -> bool:
        """The foreach update as one native pass over each parameter's own arrays (no flat
        buffers): the same operations as the NumPy update below, so the same bits; False
        (nothing done) where it does not apply."""
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        bufs = None
        first = False
        made: list = []
        if momentum != 0:
            states = [self.state.setdefault(p, StateDict()) for p in params]
            have = sum(st.get("momentum_buffer") is not None for st in states)
            if have not in (0, len(states)):
                return False
            first = have == 0
            if first:  # the kernel writes the first buffers (the gradients, after weight decay)
                made = [Tensor._make(np.empty_like(pa)) for pa in P_arrays]
                bufs = [t._data for t in made]
            else:
                found = state_arrays(states, ("momentum_buffer",))
                if found is None:
                    return False
                bufs = found[0]
        if not native.sgd(P_arrays, G_arrays, bufs, lr=lr, momentum=momentum, dampening=dampening,
                          weight_decay=weight_decay, nesterov=nesterov, maximize=maximize, first=first):
            return False
        if momentum != 0:
            for p, st, t in zip(params, states, made or [None] * len(params)):
                if t is not None:
                    st["momentum_buffer"] = t
                bump_versions(p, st["momentum_buffer"])
        else:
            bump_versions(*params)
        return True

    def _update_group(self, group: dict) -> None:
        if self._foreach_wanted(group) and self._update_foreach(group):
            return
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        for p, g in self._gradients(group):
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            if momentum != 0:
                state = self.state.setdefault(p, StateDict())
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = g.clone()
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g.add(buf, alpha=momentum) if nesterov else buf
            if isinstance(lr, (int, float)):
                p.add_(g, alpha=-lr)
            else:  # a 0-d tensor (a traced step reads the learning rate at call time)
                p.add_(g * -lr)
