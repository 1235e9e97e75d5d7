"""The public surface of static's compiler, gathered from the modules that do each job:

- `static.compiled`: `static.compile`, the `Compiled` wrapper and its inspection methods;
- `static.autodiff.transforms`: `static.grad`, `static.value_and_grad` (JAX conventions);
- `static.signature`: call keys and retrace reasons; `static.guards`: guards on the Python
  values a trace read; `static.entry`: one compiled signature (trace, joint forward and
  backward); `static.bridge`: write-back, output wrapping and `CompiledFunctionBackward`;
- `static.trace_function`: `static.trace` and the tracing of one call."""
from __future__ import annotations

from .autodiff.transforms import grad, value_and_grad
from .jit.compiled import AutogradGraphs, Compiled, compile  # noqa: A004

__all__ = ["AutogradGraphs", "Compiled", "compile", "grad", "value_and_grad"]
