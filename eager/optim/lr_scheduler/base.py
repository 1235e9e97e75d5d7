"""LRScheduler, the base of every schedule: the step counter, the optimizer-step tracking and
its warnings, state_dict, and the helpers that read and write each group's lr."""
from __future__ import annotations

import warnings
import weakref
from typing import Any

from ..._tensor import Tensor
from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. "
    "Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from "
    "None, the closed form is used instead of the new chainable form, where available.")


def _format_param(name: str, optimizer: Optimizer, param: Any) -> list:
    """One value per parameter group (a scalar is repeated; a list must match)."""
    if isinstance(param, (list, tuple)):
        if len(param) != len(optimizer.param_groups):
            raise ValueError(f"{name} must have the same length as optimizer.param_groups. {name} has "
                             f"{len(param)} values, param_groups has {len(optimizer.param_groups)}.")
        return [p.clone() if isinstance(p, Tensor) else p for p in param]
    return [param.clone() if isinstance(param, Tensor) else param for _ in optimizer.param_groups]


def _group_values(optimizer: Optimizer, key: str) -> list:
    """group[key] of each group (a tensor value copied, so a caller cannot alias it)."""
    return [g[key].clone() if isinstance(g[key], Tensor) else g[key] for g in optimizer.param_groups]


def _set_group_value(group: dict, key: str, value: Any) -> None:
    """Write group[key]; a tensor-valued entry (an lr a compiled step reads as an input) is
    filled in place so whoever holds it sees the new value."""
    if isinstance(group.get(key), Tensor):
        group[key].fill_(float(value))
    else:
        group[key] = value


class _TrackedStep:
    """The optimizer's step, noting that it ran (`optimizer._opt_called`): a scheduler's
    first step warns when the optimizer has not stepped yet, as PyTorch's. An object rather
    than a closure, so that an optimizer holding it still pickles and deep-copies (a copy
    gets a tracker of its own)."""

    _wrapped_by_lr_sched = True

    def __init__(self, optimizer: Optimizer) -> None:
        self._ref = weakref.ref(optimizer)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        opt = self._ref()
        if opt is None:
            raise RuntimeError("the optimizer of this step() no longer exists")
        opt._opt_called = True
        return type(opt).step(opt, *args, **kwargs)

    def __reduce__(self) -> tuple:
        return (_TrackedStep, (self._ref(),))


def _track_optimizer_steps(optimizer: Optimizer) -> None:
    """Wrap the optimizer's step (once, on the instance, as PyTorch does)."""
    step = optimizer.step
    if getattr(step, "_wrapped_by_lr_sched", False) or getattr(step, "__func__", None) is None:
        return  # already tracked, or replaced by the user with something that is not a method
    optimizer.step = _TrackedStep(optimizer)  # type: ignore[method-assign]


def _warn_get_lr_called_within_step(scheduler: LRScheduler) -> None:
    """get_lr() computes the next step's values: called from outside step() it is usually
    a mistake for get_last_lr(), and PyTorch warns."""
    if not scheduler._get_lr_called_within_step:
        warnings.warn("To get the last learning rate computed by the scheduler, please use `get_last_lr()`.",
                      UserWarning, stacklevel=3)


def _check_optimizer(optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class: remembers each group's initial lr (`base_lrs`, from `initial_lr` in the
    param groups) and, at each `step()`, sets every group's lr from `get_lr()`.

    Constructing a scheduler takes its initial step (epoch 0), as PyTorch's does."""

    _get_lr_called_within_step: bool = False
    _is_initial: bool = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when resuming "
                                   "scheduler with last_epoch >= 0: load the optimizer's state_dict (which holds "
                                   "it) before constructing the scheduler, or use last_epoch=-1 for a fresh run")
        self.base_lrs: list = _group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _track_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list:
        """The next lr of each group, computed from the group's current lr."""
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The lrs the last step set."""
        return self._last_lr

    def step(self, epoch: int | None = None) -> None:
        """Advance one epoch (or, deprecated, jump to `epoch` using the closed form). Call it
        after the optimizer's step: the first call warns otherwise, as PyTorch's does."""
        if self._step_count == 1:
            if not getattr(self.optimizer.step, "_wrapped_by_lr_sched", False):
                warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate scheduler "
                              "initialization. Please, make sure to call `optimizer.step()` before "
                              "`lr_scheduler.step()`. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
            elif not getattr(self.optimizer, "_opt_called", False):
                warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 "
                              "and later, you should call them in the opposite order: `optimizer.step()` before "
                              "`lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first "
                              "value of the learning rate schedule. See more details at "
                              "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                              UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            _set_group_value(group, "lr", lr)
        self._last_lr = _group_values(self.optimizer, "lr")

    def state_dict(self) -> dict:
        """Everything but the optimizer (PyTorch's layout, so checkpoints carry across)."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


class _LRScheduler(LRScheduler):
    """The old name, kept as a subclass (as PyTorch does) for code that subclasses it."""
