"""The design's workloads W1-W4 for the codegen tests: the functions themselves come from
examples/workloads/ (their one copy, which `graphmode compare` and benchmarks/ run too);
this module adds the SGD step of W3 and NumPy inputs with a fixed seed and dtype."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import static

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "workloads"))

import w1_seed  # noqa: E402
import w2_gelu  # noqa: E402
import w4_scalar  # noqa: E402
from w3_mlp import mlp_loss  # noqa: E402

w1 = w1_seed.seed_loss
w2 = w2_gelu.gelu_loss
w3_loss = mlp_loss  # mean softmax cross-entropy of a one-hidden-layer tanh MLP (Y one-hot)
w4 = w4_scalar.scalar_chain


def w3_step(X, Y, W1, b1, W2, b2, lr=0.1):
    """One SGD step: the loss and the updated parameters."""
    loss, grads = static.value_and_grad(w3_loss, argnums=(2, 3, 4, 5))(X, Y, W1, b1, W2, b2)
    return loss, tuple(p - lr * g for p, g in zip((W1, b1, W2, b2), grads))


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
