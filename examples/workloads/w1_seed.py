"""W1 seed: the tutorial graph b = w1*a, c = w2*a, d = w3*b + w4*c, L = sum(10 - d).

Five vectors of n float32 elements, all differentiated. Small sizes show per-op overhead,
large ones memory traffic: eager runs 7 ops (and their backward) as separate NumPy calls,
compiled code fuses them into one loop.

    graphmode compare examples/workloads/w1_seed.py --sizes 1e2,1e4,1e6
"""
from __future__ import annotations

import numpy as np

import eager

SIZES = ("1e2", "1e4", "1e6")


def seed_loss(a, w1, w2, w3, w4):
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    return (10 - d).sum()


def workload(size: int):
    """(seed_loss, (a, w1, w2, w3, w4)) with n = size elements each, all requiring grad."""
    rng = np.random.default_rng(0)
    args = tuple(eager.from_numpy(rng.standard_normal(int(size)).astype(np.float32)).requires_grad_()
                 for _ in range(5))
    return seed_loss, args


def peer(library: str, size=None):
    """The same loss for `graphmode compare --peers` (same arguments, that library's arrays)."""
    if library in ("torch", "jax"):
        return seed_loss  # only arithmetic operators and .sum(): the same code runs on both
    return None
