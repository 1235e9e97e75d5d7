"""The design's workloads W1-W4 as plain functions of eager tensors, for the codegen tests
(the same functions as examples/workloads/ and benchmarks/compiled_bench.py, kept here so
the tests import nothing from scripts)."""
from __future__ import annotations

import numpy as np

import eager
import static


def w1(a, w1, w2, w3, w4):
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    return (10 - d).sum()


def w2(x, w):
    y = 0.5 * x * (1 + eager.tanh(0.7978845608 * (x + 0.044715 * x ** 3)))
    return (y * w).sum()


def w3_loss(X, Y, W1, b1, W2, b2):
    """Mean softmax cross-entropy of a one-hidden-layer tanh MLP (Y one-hot)."""
    h = eager.tanh(X @ W1 + b1)
    logits = h @ W2 + b2
    logp = eager.log_softmax(logits, 1)
    return -(logp * Y).sum() / X.shape[0]


def w3_step(X, Y, W1, b1, W2, b2, lr=0.1):
    """One SGD step: the loss and the updated parameters."""
    loss, grads = static.value_and_grad(w3_loss, argnums=(2, 3, 4, 5))(X, Y, W1, b1, W2, b2)
    return loss, tuple(p - lr * g for p, g in zip((W1, b1, W2, b2), grads))


def w4(x, steps=100):
    for _ in range(steps):
        x = x * 1.0001 + 0.5 * eager.sin(x)
    return x


def w1_inputs(n, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype) for _ in range(5)]


def w2_inputs(n, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)]


def w3_inputs(B, D, H, C, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((B, D)).astype(dtype)
    Y = np.eye(C, dtype=dtype)[rng.integers(0, C, B)]
    W1 = (rng.standard_normal((D, H)) / np.sqrt(D)).astype(dtype)
    b1 = (0.1 * rng.standard_normal(H)).astype(dtype)
    W2 = (rng.standard_normal((H, C)) / np.sqrt(H)).astype(dtype)
    b2 = (0.1 * rng.standard_normal(C)).astype(dtype)
    return [X, Y, W1, b1, W2, b2]


def w4_inputs(dtype=np.float32):
    return [np.asarray(0.3, dtype=dtype)]
