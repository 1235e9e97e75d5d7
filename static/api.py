"""The public surface of static's compiler, gathered from the modules that do each job:

- `static.jit.compiled`: `static.compile`, the `Compiled` wrapper (its cache, call path and
  inspection methods in `static.jit.lookup`, `.call`, `.introspect`);
- `static.autodiff.transforms`: `static.grad`, `static.value_and_grad` (JAX conventions);
- `static.jit.signature`: call keys and retrace reasons; `static.tracing.guards`: guards on
  the Python values a trace read; `static.jit.entry`: one compiled signature (trace, joint
  forward and backward); `static.jit.bridge`: write-back, output wrapping and
  `CompiledFunctionBackward`;
- `static.tracing.function`: `static.trace` and the tracing of one call."""
from __future__ import annotations

from .autodiff.transforms import grad, value_and_grad
from .jit.compiled import AutogradGraphs, Compiled, compile  # noqa: A004

__all__ = ["AutogradGraphs", "Compiled", "compile", "grad", "value_and_grad"]
