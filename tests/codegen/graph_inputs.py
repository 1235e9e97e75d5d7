"""Input arrays for an IR graph, drawn from its input types (the codegen tests run parsed
graphs with no eager program to make inputs for them)."""
from __future__ import annotations

import numpy as np


def operand_values(dtype, shape, kind: str, rng: np.random.Generator) -> np.ndarray:
    """Operand values: 'positive' in [0.2, 2], or 'mixed' with signs, zeros and edge values."""
    if np.issubdtype(dtype, np.integer):  # integers: signs and zero under 'mixed'
        low = -5 if kind == "mixed" else 1
        return rng.integers(low, 6, shape).astype(dtype)
    if kind == "positive":
        return rng.uniform(0.2, 2.0, shape).astype(dtype)
    v = rng.uniform(-3.0, 3.0, shape).astype(dtype)
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 30.0, -30.0, 1e-30], dtype)
    v.reshape(-1)[: min(v.size, edges.size)] = edges[: v.size]
    return v


def graph_inputs(graph, rng: np.random.Generator, kind: str = "positive") -> list:
    """One array per graph input: random masks for bool inputs, operand_values for the rest."""
    out = []
    for v in graph.inputs:
        dt = v.type.dtype.np
        if dt == np.bool_:
            out.append(rng.standard_normal(v.type.shape) > 0)
        else:
            out.append(operand_values(dt, v.type.shape, kind, rng))
    return out
