"""W3 mlp: h = tanh(X@W1 + b1), logits = h@W2 + b2, mean softmax cross-entropy.

Sizes are shapes BxDxHxC (batch, inputs, hidden, classes); a plain number is the batch
with D, H, C = 784, 512, 10. Gradients of W1, b1, W2, b2 (the SGD update that uses them is
in examples/compare_training.py). Matmuls dominate; compiling fuses what surrounds them.
The labels are one-hot rows (class probabilities), the form every peer library takes too;
cross_entropy with class indices compiles as well.

    graphmode compare examples/workloads/w3_mlp.py --sizes 32x64x64x10,256x784x512x10
"""
from __future__ import annotations

import numpy as np

import eager

SIZES = ("32x64x64x10", "256x784x512x10")


def mlp_loss(X, Y, W1, b1, W2, b2):
    """Mean softmax cross-entropy against one-hot rows Y: what
    nn.functional.cross_entropy(logits, Y) computes, written with log_softmax so that the
    hand-written NumPy of benchmarks/ mirrors it line by line."""
    h = eager.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    return -(eager.log_softmax(logits, 1) * Y).sum() / X.shape[0]


def workload(size):
    """(mlp_loss, (X, Y, W1, b1, W2, b2)) for size (B, D, H, C) or a batch size B."""
    B, D, H, C = (int(size), 784, 512, 10) if isinstance(size, int) else size
    rng = np.random.default_rng(0)
    X = eager.from_numpy(rng.standard_normal((B, D)).astype(np.float32))
    Y = eager.from_numpy(np.eye(C, dtype=np.float32)[rng.integers(0, C, B)])
    params = [rng.standard_normal((D, H)) / np.sqrt(D), np.zeros(H), rng.standard_normal((H, C)) / np.sqrt(H),
              np.zeros(C)]
    return mlp_loss, (X, Y, *(eager.from_numpy(p.astype(np.float32)).requires_grad_() for p in params))


def peer(library: str, size=None):
    """The same loss for `graphmode compare --peers`."""
    if library == "torch":
        import torch

        def torch_mlp_loss(X, Y, W1, b1, W2, b2):
            h = torch.tanh(X @ W1 + b1)
            return torch.nn.functional.cross_entropy(h @ W2 + b2, Y)
        return torch_mlp_loss
    if library == "jax":
        import jax

        def jax_mlp_loss(X, Y, W1, b1, W2, b2):
            h = jax.numpy.tanh(X @ W1 + b1)
            return -(jax.nn.log_softmax(h @ W2 + b2, axis=1) * Y).sum(axis=1).mean()
        return jax_mlp_loss
    return None
