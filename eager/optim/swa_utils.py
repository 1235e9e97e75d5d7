"""`eager.optim.swa_utils`: stochastic weight averaging and EMA, as torch.optim.swa_utils.

`AveragedModel` keeps a copy of a model whose parameters are the running average (SWA) or
an exponential moving average (`get_ema_multi_avg_fn`) of the model's; `update_bn`
recomputes BatchNorm statistics for the averaged weights with one pass over the data;
`SWALR` anneals each group's lr to its `swa_lr` over `anneal_epochs` epochs."""
from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Callable, Iterable
from copy import deepcopy
from typing import Any

from .._factories import tensor
from .._grad_mode import no_grad
from .._tensor import Tensor
from ..nn.module import Module
from .lr_scheduler import LRScheduler
from .lr_scheduler.base import _format_param
from .optimizer import Optimizer

__all__ = ["AveragedModel", "SWALR", "get_ema_avg_fn", "get_ema_multi_avg_fn", "get_swa_avg_fn",
           "get_swa_multi_avg_fn", "update_bn"]


def get_ema_multi_avg_fn(decay: float = 0.999) -> Callable[..., None]:
    """An in-place EMA update of lists of tensors: ema = ema + (1 - decay) (current - ema)."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_param_list: list, current_param_list: list, _: Any) -> None:
        with no_grad():
            for p_ema, p_model in zip(ema_param_list, current_param_list):
                if p_ema.is_floating_point():
                    p_ema.lerp_(p_model, 1 - decay)
                else:
                    p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn() -> Callable[..., None]:
    """An in-place running-average update of lists of tensors."""

    def swa_update(averaged_param_list: list, current_param_list: list, num_averaged: Any) -> None:
        # 1 / (n + 1) as PyTorch computes it: of its integer tensor n, so a float32 number
        weight = float(1 / (num_averaged + 1))
        with no_grad():
            for p_avg, p_model in zip(averaged_param_list, current_param_list):
                if p_avg.is_floating_point():
                    p_avg.lerp_(p_model, weight)
                else:
                    p_avg.add_(p_model - p_avg, alpha=weight)

    return swa_update


def get_ema_avg_fn(decay: float = 0.999) -> Callable[..., Tensor]:
    """decay * ema + (1 - decay) * current, per tensor."""
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")

    def ema_update(ema_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn() -> Callable[..., Tensor]:
    """averaged + (current - averaged) / (n + 1), per tensor."""

    def swa_update(averaged_param: Tensor, current_param: Tensor, num_averaged: Any) -> Tensor:
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of `model` whose parameters (and buffers with use_buffers=True) average the
    model's over the `update_parameters` calls. Mirrors torch.optim.swa_utils.AveragedModel."""

    def __init__(self, model: Module, device: Any = None, avg_fn: Callable[..., Tensor] | None = None,
                 multi_avg_fn: Callable[..., None] | None = None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Average `model`'s current parameters into this copy (the first call copies them)."""
        mine = (itertools.chain(self.module.parameters(), self.module.buffers()) if self.use_buffers
                else self.parameters())
        theirs = itertools.chain(model.parameters(), model.buffers()) if self.use_buffers else model.parameters()
        mine_d, theirs_d = [], []
        n = int(self.n_averaged.item())
        with no_grad():
            for p_avg, p_model in zip(mine, theirs):
                p_model_ = p_model.detach().to(p_avg.device)
                mine_d.append(p_avg.detach())
                theirs_d.append(p_model_)
                if n == 0:
                    p_avg.detach().copy_(p_model_)
            if n > 0:
                if self.multi_avg_fn is not None:
                    self.multi_avg_fn(mine_d, theirs_d, self.n_averaged)
                else:  # per tensor, as PyTorch on the CPU (its fused form is for CUDA only)
                    avg_fn = self.avg_fn or get_swa_avg_fn()
                    for p_avg, p_model in zip(mine_d, theirs_d):
                        p_avg.copy_(avg_fn(p_avg, p_model, self.n_averaged))
            if not self.use_buffers:  # the buffers follow the model's (update_bn recomputes BN's)
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged.add_(1)


def update_bn(loader: Iterable[Any], model: Module, device: Any = None) -> None:
    """Recompute every BatchNorm's running statistics with one pass of `loader` through
    `model` (a cumulative average: momentum None during the pass). Mirrors
    torch.optim.swa_utils.update_bn."""
    from ..nn.normalization import _BatchNorm  # noqa: PLC0415

    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for input in loader:
            if isinstance(input, (list, tuple)):
                input = input[0]
            if device is not None:
                input = input.to(device)
            model(input)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr from its value to `swa_lr` over `anneal_epochs` epochs (cosine
    or linear), then hold it. Mirrors torch.optim.swa_utils.SWALR."""

    def __init__(self, optimizer: Optimizer, swa_lr: Any, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        for lr, group in zip(_format_param("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._anneal_strategy = anneal_strategy
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def anneal_func(self, t: float) -> float:
        return (1 - math.cos(math.pi * t)) / 2 if self._anneal_strategy == "cos" else t

    @staticmethod
    def _get_initial_lr(lr: float, swa_lr: float, alpha: float) -> float:
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                          UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(self.optimizer.param_groups, prev_lrs)]
