"""The reference interpreter: runs a Graph node by node with the ops' own forward
functions. Every pass and every backend is checked against it."""
from __future__ import annotations

import numpy as np

from eager._device import xp_of_array
from gmops import REGISTRY

from .ir import Graph, Value, half_in_float32


def run_graph(graph: Graph, inputs: list, xp=None) -> list:
    """Evaluate `graph` on arrays (one per graph input); returns one array per output.
    `xp` is the array module (numpy or cupy); by default the one of the first array input."""
    if len(inputs) != len(graph.inputs):
        raise TypeError(f"@{graph.name} takes {len(graph.inputs)} inputs, got {len(inputs)}")
    if xp is None:
        first = next((a for a in inputs if hasattr(a, "shape") and not isinstance(a, np.generic)), None)
        xp = np if first is None or isinstance(first, np.ndarray) else xp_of_array(first)
    env = dict(zip(graph.inputs, inputs))
    with np.errstate(all="ignore"):
        for node in graph.nodes:
            args = [env[v] if isinstance(v, Value) else v for v in node.inputs]
            if node.body is not None:
                results = run_graph(node.body, args, xp)
            else:
                if half_in_float32(node):  # float16 with a Python number: float32 precision, as eager
                    args = [a.astype(np.float32) if hasattr(a, "astype") else a for a in args]
                    out = REGISTRY[node.op].forward(xp, *args, **node.attrs).astype(np.float16)
                else:
                    out = REGISTRY[node.op].forward(xp, *args, **node.attrs)
                results = list(out) if isinstance(out, tuple) else [out]
            for v, r in zip(node.outputs, results):
                env[v] = xp.asarray(r) if xp is np and not isinstance(r, np.ndarray) else r
    return [env[v] if isinstance(v, Value) else v for v in graph.outputs]
