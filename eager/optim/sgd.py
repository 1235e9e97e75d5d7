"""SGD with momentum, dampening, Nesterov and weight decay: PyTorch's update, step by step."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .optimizer import Optimizer, required


class SGD(Optimizer):
    """For each parameter p with gradient g (PyTorch's formulation):

        g = g + weight_decay * p
        b = g (first step) else momentum * b + (1 - dampening) * g
        g = g + momentum * b if nesterov else b          (when momentum != 0)
        p = p - lr * g                                    (p + lr * g when maximize)
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False) -> None:
        if lr is not required and lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize))

    def _first_state_reads_gradient(self, group: dict) -> bool:
        # with momentum, the first step's buffer is a copy of the gradient: not a state made
        # before the step (the first step is a graph of its own)
        return group["momentum"] != 0

    def _initial_state(self, p, group: dict) -> dict | None:
        return None if self._first_state_reads_gradient(group) else {}

    def _update_group(self, group: dict) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        weight_decay, nesterov = group["weight_decay"], group["nesterov"]
        for p, g in self._gradients(group):
            if weight_decay != 0:
                g = g.add(p, alpha=weight_decay)
            if momentum != 0:
                state = self.state.setdefault(p, {})
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
