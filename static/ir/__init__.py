"""graphmode's IR: typed SSA graphs, their text form, parser and verifier."""
from .core import Graph, Node, Type, Value, format_graph, format_type, half_in_float32
from .parser import parse_ir
from .verify import REGION_OPS, verify

__all__ = ["Graph", "Node", "Type", "Value", "format_graph", "format_type", "half_in_float32", "parse_ir", "verify", "REGION_OPS"]
