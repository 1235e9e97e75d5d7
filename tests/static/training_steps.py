"""The training step the static tests compile and run beside eager, written once: the usual
zero_grad, loss, backward and optimizer step, with hooks for what a test does around them
(clipping, writes into .grad or .data, accumulation without zero_grad)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import eager
import eager.nn as nn

Hook = Callable[[Any], Any]  # called with the model


def small_model() -> nn.Sequential:
    """Linear(4, 8) -> Tanh -> Linear(8, 1), the same weights every call."""
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))


def squared_error(model: Any, x: Any, y: Any) -> Any:
    return ((model(x) - y) ** 2).mean()


def mse(model: Any, x: Any, y: Any) -> Any:
    """F.mse_loss of the model's prediction."""
    return eager.nn.functional.mse_loss(model(x), y)


def training_step(model: Any, opt: Any, loss_fn: Callable[[Any, Any, Any], Any] = squared_error, *,
                  zero_grad: bool = True, before: Hook | None = None, after_backward: Hook | None = None,
                  after_step: Hook | None = None, returns_hook_result: bool = False) -> Callable[[Any, Any], Any]:
    """step(x, y): `before`, opt.zero_grad() (unless zero_grad=False: gradients accumulate
    across calls), loss_fn(model, x, y).backward(), `after_backward`, opt.step(), `after_step`;
    returns the loss, or with returns_hook_result what `after_backward` returned (a value the
    test reads between backward and the step)."""
    def step(x: Any, y: Any) -> Any:
        if before is not None:
            before(model)
        if zero_grad:
            opt.zero_grad()
        loss = loss_fn(model, x, y)
        loss.backward()
        seen = after_backward(model) if after_backward is not None else None
        opt.step()
        if after_step is not None:
            after_step(model)
        return seen if returns_hook_result else loss
    return step


def under_no_grad(hook: Callable[[Any], None]) -> Hook:
    """`hook` run with gradient recording off (writes into .grad and .data are not differentiated)."""
    def run(model: Any) -> None:
        with eager.no_grad():
            hook(model)
    return run


def for_each_parameter(update: Callable[[Any], Any]) -> Callable[[Any], None]:
    """A hook calling update(p) for every parameter of the model."""
    def run(model: Any) -> None:
        for p in model.parameters():
            update(p)
    return run
