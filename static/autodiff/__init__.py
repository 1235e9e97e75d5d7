"""Differentiation in static: reverse mode on the IR (`graph_vjp`: each op's VJP run on tracers,
appended to the trace), and the JAX-style transforms built on it, loaded when asked for:
`transforms` (grad, value_and_grad), `vjp_jvp` (vjp, and jvp as the VJP differentiated once
more). `from static.autodiff import vjp, reached` is the graph-level VJP the compile path uses.
"""
from .graph_vjp import reached, vjp

__all__ = ["reached", "vjp"]
