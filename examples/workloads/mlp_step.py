"""MLP training step: the spiral classifier of examples/mlp_train.py, with explicit
parameters so that it can be compiled whole.

2 -> hidden -> hidden -> 2 with tanh, softmax cross-entropy against one-hot labels. The
size is the number of points (half per class); the hidden width is 64. `workload` gives
the loss for `graphmode compare` (forward and backward); examples/compare_training.py
builds the whole training loop, eager and compiled, from the same pieces.

    graphmode compare examples/workloads/mlp_step.py --sizes 1e3,1e4
"""
from __future__ import annotations

import math

import numpy as np

import eager
from eager import nn

SIZES = ("1e3", "1e4")
HIDDEN = 64


def spiral(points: int, noise: float = 0.03, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two interleaved spirals in [-1, 1]^2: float32 points (N, 2) and one-hot labels (N, 2)."""
    rng = np.random.default_rng(seed)
    half = points // 2
    r = np.sqrt(rng.uniform(0.02, 1.0, half))
    theta = r * 3.0 * math.pi
    arm = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1)
    xy = np.concatenate([arm, -arm]) + rng.normal(0.0, noise, (2 * half, 2))
    labels = np.concatenate([np.zeros(half, np.int64), np.ones(half, np.int64)])
    return xy.astype(np.float32), np.eye(2, dtype=np.float32)[labels]


def init_params(hidden: int = HIDDEN, seed: int = 0) -> list[np.ndarray]:
    """W1, b1, W2, b2, W3, b3 with nn.Linear's uniform(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
    rng = np.random.default_rng(seed + 1)
    shapes = [(2, hidden), (hidden,), (hidden, hidden), (hidden,), (hidden, 2), (2,)]
    fan_in = [2, 2, hidden, hidden, hidden, hidden]
    return [rng.uniform(-1, 1, s).astype(np.float32) / np.float32(math.sqrt(f)) for s, f in zip(shapes, fan_in)]


def mlp_loss(X, Y, W1, b1, W2, b2, W3, b3):
    h = eager.tanh(X @ W1 + b1)
    h = eager.tanh(h @ W2 + b2)
    return nn.functional.cross_entropy(h @ W3 + b3, Y)


def workload(size: int):
    """(mlp_loss, (X, Y, *params)) on `size` spiral points; the parameters require grad."""
    X, Y = spiral(int(size))
    params = [eager.from_numpy(p).requires_grad_() for p in init_params()]
    return mlp_loss, (eager.from_numpy(X), eager.from_numpy(Y), *params)


def peer(library: str, size=None):
    """The same loss for `graphmode compare --peers`."""
    if library == "torch":
        import torch

        def torch_mlp_loss(X, Y, W1, b1, W2, b2, W3, b3):
            h = torch.tanh(torch.tanh(X @ W1 + b1) @ W2 + b2)
            return torch.nn.functional.cross_entropy(h @ W3 + b3, Y)
        return torch_mlp_loss
    if library == "jax":
        import jax

        def jax_mlp_loss(X, Y, W1, b1, W2, b2, W3, b3):
            h = jax.numpy.tanh(jax.numpy.tanh(X @ W1 + b1) @ W2 + b2)
            return -(jax.nn.log_softmax(h @ W3 + b3, axis=1) * Y).sum(axis=1).mean()
        return jax_mlp_loss
    return None
