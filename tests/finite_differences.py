"""Central finite differences, the reference the hand-written and traced gradients are checked against."""
from __future__ import annotations

from collections.abc import Callable

import numpy as np


def central_difference_grad(f: Callable[[np.ndarray], float], a: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """d f / d a, element by element: (f(a + eps) - f(a - eps)) / 2 eps. `f` maps an array
    like `a` to a scalar; use float64 arrays (float32 loses the difference to rounding)."""
    grad = np.zeros_like(a)
    for idx in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[idx] += eps
        lo[idx] -= eps
        grad[idx] = (f(hi) - f(lo)) / (2 * eps)
    return grad
