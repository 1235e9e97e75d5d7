"""W2 gelu: y = 0.5*x*(1 + tanh(0.7978845608*(x + 0.044715*x**3))), L = sum(y*w).

Two float32 vectors of n elements, both differentiated. A chain of elementwise ops whose
forward and backward fuse into one pass over memory each.

    graphmode compare examples/workloads/w2_gelu.py --sizes 1e4,1e6,8e6
"""
from __future__ import annotations

import numpy as np

import eager

SIZES = ("1e4", "1e6", "8e6")


def gelu_loss(x, w):
    y = 0.5 * x * (1 + eager.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    return (y * w).sum()


def workload(size: int):
    """(gelu_loss, (x, w)) with n = size elements each, both requiring grad."""
    rng = np.random.default_rng(0)
    x, w = (eager.from_numpy(rng.standard_normal(int(size)).astype(np.float32)).requires_grad_() for _ in range(2))
    return gelu_loss, (x, w)


def peer(library: str, size=None):
    """The same loss for `graphmode compare --peers`."""
    if library == "torch":
        import torch

        def torch_gelu_loss(x, w):
            y = 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
            return (y * w).sum()
        return torch_gelu_loss
    if library == "jax":
        import jax.numpy as jnp

        def jax_gelu_loss(x, w):
            y = 0.5 * x * (1 + jnp.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
            return (y * w).sum()
        return jax_gelu_loss
    return None
