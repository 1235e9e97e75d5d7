"""What the W5 and W6 training-step workloads share: one optimizer step of a loss on a
batch, and their PyTorch peers built only where PyTorch is installed. Not a workload itself."""
from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import eager
from eager import nn


def train_step(loss_fn: Callable[[nn.Module, Any], eager.Tensor], model: nn.Module, opt: eager.optim.Optimizer,
               batch: Any) -> float:
    """One optimizer step on `loss_fn(model, batch)`; returns the loss before the update."""
    opt.zero_grad()
    loss = loss_fn(model, batch)
    loss.backward()
    opt.step()
    return float(loss.item())


def torch_peer(build: Callable[[ModuleType], Any]) -> Callable[[], Any]:
    """`build(torch)` as the workload's `peer_torch()`: what it builds with PyTorch, or None
    where PyTorch is not installed (benchmarks and tests then leave the peer out)."""

    @functools.wraps(build)
    def peer() -> Any:
        try:
            import torch  # noqa: PLC0415
        except ImportError:
            return None
        return build(torch)

    return peer
