"""The reference interpreter: runs a Graph node by node with the ops' own forward
functions. Every pass and every backend is checked against it."""
from __future__ import annotations

import numpy as np

from eager.ops import REGISTRY

from .ir import Graph, Value


def run_graph(graph: Graph, inputs: list, xp=np) -> list:
    """Evaluate `graph` on arrays (one per graph input); returns one array per output."""
    if len(inputs) != len(graph.inputs):
        raise TypeError(f"@{graph.name} takes {len(graph.inputs)} inputs, got {len(inputs)}")
    env = dict(zip(graph.inputs, inputs))
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            args = [env[v] if isinstance(v, Value) else v for v in node.inputs]
            if node.body is not None:
                results = run_graph(node.body, args, xp)
            else:
                out = REGISTRY[node.op].forward(xp, *args, **node.attrs)
                results = list(out) if isinstance(out, tuple) else [out]
            for v, r in zip(node.outputs, results):
                env[v] = xp.asarray(r) if xp is np and not isinstance(r, np.ndarray) else r
    return [env[v] if isinstance(v, Value) else v for v in graph.outputs]
