"""Grad modes (thread-local), usable as context managers and as decorators."""
from __future__ import annotations

import functools
import threading


class _State(threading.local):
    enabled = True
    anomaly = False
    anomaly_check_nan = True  # in anomaly mode, is a NaN from a backward node an error
    inference = False  # inside inference_mode (is_inference_mode_enabled)
    # Set by the engine during a backward pass that records no graph: elementwise ops on
    # broadcast gradients (the expand of a sum's backward) may then return broadcast views.
    compact_broadcasts = False


STATE = _State()


def is_grad_enabled() -> bool:
    """Whether operations are recorded for autograd now (False inside no_grad). Mirrors torch.is_grad_enabled."""
    return STATE.enabled


class _GradModeBase:
    """Context manager that also decorates functions (as torch.no_grad does)."""

    _target: bool

    def __enter__(self):
        self._prev = STATE.enabled
        STATE.enabled = self._target
        return None

    def __exit__(self, *exc) -> None:
        STATE.enabled = self._prev

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__._clone(self):
                return fn(*args, **kwargs)

        return wrapper

    def _clone(self):
        return self.__class__()


class _NoParamDecorator(_GradModeBase):
    """Also usable as a bare decorator, `@no_grad` (as torch >= 2.0 allows)."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecorator):
    """Operations inside record no backward graph (an optimizer step, evaluation)."""

    _target = False


class enable_grad(_NoParamDecorator):
    """Re-enables recording inside a `no_grad` block."""

    _target = True


class set_grad_enabled(_GradModeBase):
    """Sets grad mode at once (like torch.set_grad_enabled) and restores it as a context."""

    def __init__(self, mode: bool) -> None:
        self._target = bool(mode)
        self._prev = STATE.enabled
        STATE.enabled = self._target

    def __enter__(self):
        return None

    def __exit__(self, *exc) -> None:
        STATE.enabled = self._prev

    def __call__(self, fn):
        STATE.enabled = self._prev  # as a decorator it must not change the mode at definition
        return super().__call__(fn)

    def _clone(self):
        clone = object.__new__(set_grad_enabled)
        clone._target = self._target
        clone._prev = STATE.enabled
        STATE.enabled = self._target
        return clone


class inference_mode(_GradModeBase):
    """no_grad that also reports itself (is_inference_mode_enabled): eager has no separate
    inference tensors. Usable as `with inference_mode():`, `@inference_mode()` and bare
    `@inference_mode`, as PyTorch's."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # bare @inference_mode
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self._target = not mode
        self._mode = bool(mode)

    def __enter__(self):
        self._prev_inference = STATE.inference
        STATE.inference = self._mode
        return super().__enter__()

    def __exit__(self, *exc) -> None:
        STATE.inference = self._prev_inference
        super().__exit__(*exc)

    def _clone(self):
        return inference_mode(self._mode)


def is_inference_mode_enabled() -> bool:
    """Whether an inference_mode block is active now. Mirrors torch.is_inference_mode_enabled."""
    return STATE.inference
