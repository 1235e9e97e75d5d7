"""static: trace the same functions eager runs into a typed SSA IR, differentiate,
optimize and run them compiled.

    import static
    @static.compile
    def loss(x, w): return (eager.tanh(x * x) * w).sum()
    print(loss.explain(x, w))
"""
from __future__ import annotations

from .api import Compiled, compile, grad, value_and_grad  # noqa: A004
from .errors import IRParseError, IRVerifyError, TraceError
from .interpreter import run_graph
from .ir import Graph, Node, Value, parse_ir, verify
from .tracing import trace

__all__ = ["Compiled", "compile", "grad", "value_and_grad", "IRParseError", "IRVerifyError", "TraceError",
           "Graph", "Node", "Value", "parse_ir", "verify", "trace", "run_graph"]
from .compare import compare  # noqa: E402


def __getattr__(name: str):
    """Names loaded on first use."""
    if name == "functional_call":
        from .module_call import functional_call  # noqa: PLC0415

        return functional_call
    raise AttributeError(f"module 'static' has no attribute {name!r}")
