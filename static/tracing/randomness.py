"""Random draws inside compiled functions: the same numbers eager would draw.

Eager draws from NumPy's (or CuPy's) seeded generator. While a function is traced, each
draw (`rand`, `randn`, `randint`, `randperm`, `*_like`, dropout's mask, ...) is not made: it becomes a
graph input, a placeholder tensor the trace reads like any captured tensor, and the draw's
recipe (kind, shape, dtype, device, bounds) is kept in trace order. Every call of the
compiled function then makes those draws through eager's own generator, in that order,
before the graph runs, and feeds them in. So the generator's state is an implicit input and
output of each call: every call draws fresh numbers, `manual_seed` makes runs reproducible,
and a compiled function consumes the generator exactly as the eager function would (the
numbers it draws, and what any later draw sees, are the same). The mask is an input of the
fused kernel rather than drawn inside it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from eager import _factories
from eager._device import CPU, xp_for
from eager._tensor import Tensor
from gmbase import dtypes as _dtypes

from .state import current_state
from .symbolic import SymInt, concrete_shape, env_of, note_array, sources


@dataclass(eq=False)
class Draw:
    """One random draw of a traced function, replayed on every call."""

    kind: str  # "normal", "uniform", "int" or "perm" (eager's _rng_array kinds)
    shape: tuple
    dtype: Any
    device: Any
    a: Any
    b: Any
    high: Any
    placeholder: Any  # the array the trace saw in place of the numbers
    generator: Any = None  # the user's eager.Generator, when the draw named one
    symbols: dict | None = None  # a shape with symbolic sizes: where each comes from (static.jit.dynamic_shapes)

    def make(self, env: dict | None = None):
        return _factories.draw_array(self.kind, self.shape_for(env), self.dtype, self.device, self.a, self.b,
                                     self.high, self.generator)

    def shape_for(self, env: dict | None) -> tuple:
        """The draw's shape for a call: symbolic sizes evaluated with its symbol values."""
        return self.shape if not self.symbols else concrete_shape(self.shape, env or {})


def _traced_draw(kind, shape, dt, dev, a, b, high, generator=None):
    """eager's draw hook: inside a trace, record the draw and hand back a placeholder."""
    state = current_state()
    if state is None or state.finished:
        return NotImplemented
    placeholder = xp_for(dev).zeros(shape, dtype=dt.np)
    draws = state.__dict__.setdefault("random_draws", [])
    symbolic = any(isinstance(d, SymInt) for d in shape)
    if symbolic:  # a dropout mask over a dynamic batch: drawn at each call's sizes
        note_array(placeholder, tuple(shape))
    draws.append(Draw(kind, tuple(shape), dt, dev, a, b, high, placeholder, generator,
                      sources() if symbolic else None))
    return placeholder


def _tracing() -> bool:
    """Whether _traced_draw answers a draw on this thread now (eager's fused dropout asks)."""
    state = current_state()
    return state is not None and not state.finished


_factories.DRAW_HOOK.fn = _traced_draw
_factories.DRAW_HOOK.active = _tracing


def draws_of(state) -> list:
    """The draws a finished trace made, in order."""
    return list(state.__dict__.get("random_draws", ()))


def _plain_uniform(d: Draw) -> bool:
    """A [0, 1) float32/float64 draw of eager's own NumPy generator on the CPU (a dropout
    mask): consecutive ones are drawn as one run (_factories.draw_uniform_run)."""
    return (d.kind == "uniform" and d.generator is None and d.device == CPU and d.a == 0.0 and d.b == 1.0
            and d.dtype in (_dtypes.float32, _dtypes.float64))


class Replay:
    """What a compiled call does with the draws of its trace: make them (in order) and put
    each into the captured tensor the graph reads it from. Consecutive plain uniform draws of
    one dtype (a step's dropout masks) are one draw of all their numbers, cut into the masks:
    the same numbers in the same order."""

    __slots__ = ("draws", "targets", "runs")

    def __init__(self, draws: list, captured: list) -> None:
        self.draws = draws
        by_array = {id(o._data if isinstance(o, Tensor) else o): o for o, _ in captured}
        self.targets = [by_array.get(id(d.placeholder)) for d in draws]
        self.runs: list = []  # (first draw, end): draws[first:end] are one run, or one draw alone
        k = 0
        while k < len(draws):
            end = k + 1
            if _plain_uniform(draws[k]):
                while end < len(draws) and _plain_uniform(draws[end]) and draws[end].dtype is draws[k].dtype:
                    end += 1
            self.runs.append((k, end))
            k = end

    def __call__(self, leaves=None) -> None:
        env = None
        symbolic = next((d.symbols for d in self.draws if d.symbols), None)
        if symbolic is not None and leaves is not None:  # the sizes of this call (static.jit.dynamic_shapes)
            env = env_of(symbolic, leaves)
        for first, end in self.runs:
            if end - first > 1:
                fresh = _factories.draw_uniform_run([d.shape_for(env) for d in self.draws[first:end]],
                                                    self.draws[first].dtype)
            else:
                fresh = [self.draws[first].make(env)]  # drawn even when unused: the generator advances as in eager
            for array, target in zip(fresh, self.targets[first:end]):
                if isinstance(target, Tensor):
                    target._data = array
