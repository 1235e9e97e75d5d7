"""W4 scalar: x = x*1.0001 + 0.5*sin(x), repeated, on a 0-d tensor; then backward.

The size is the number of steps (design.md uses 100). Each op touches one number, so this
measures what an op costs apart from arithmetic: eager pays Python dispatch and graph
recording per op, compiled code pays one call for the whole chain.

    graphmode compare examples/workloads/w4_scalar.py --sizes 100
"""
from __future__ import annotations

import eager

SIZES = ("100",)


def scalar_chain(x, steps: int = 100):
    for _ in range(steps):
        x = x * 1.0001 + 0.5 * eager.sin(x)
    return x


def workload(size: int):
    """(chain, (x,)): `size` steps on one float32 number that requires grad."""
    steps = int(size)

    def chain(x):
        return scalar_chain(x, steps)
    chain.__name__ = f"scalar_chain_{steps}"
    return chain, (eager.tensor(0.5, requires_grad=True),)


def peer(library: str, size=100):
    """The same chain of `size` steps for `graphmode compare --peers`."""
    if library == "torch":
        import torch
        namespace = torch
    elif library == "jax":
        import jax.numpy as namespace
    else:
        return None

    def chain(x):
        for _ in range(int(size)):
            x = x * 1.0001 + 0.5 * namespace.sin(x)
        return x
    return chain
