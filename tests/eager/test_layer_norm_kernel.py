"""The fused layer-norm kernels (forward and the one-op backward that never forms xhat)
against a float64 reference of the textbook formulas, for inputs whose rows have large
means (where a one-pass variance would cancel), tiny spreads, several row blocks and
float16 inputs."""
from __future__ import annotations

import numpy as np
import pytest

from eager.ops import conv as C


def _reference(x, w, b, g, ndim, eps):
    n = int(np.prod(x.shape[x.ndim - ndim:]))
    rows = x.astype(np.float64).reshape(-1, n)
    g2 = g.astype(np.float64).reshape(-1, n)
    w1, b1 = w.astype(np.float64).reshape(-1), b.astype(np.float64).reshape(-1)
    mean = rows.mean(1, keepdims=True)
    rstd = 1.0 / np.sqrt(((rows - mean) ** 2).mean(1, keepdims=True) + eps)
    xhat = (rows - mean) * rstd
    y = xhat * w1 + b1
    gx = g2 * w1
    dx = rstd * (gx - gx.mean(1, keepdims=True) - xhat * (gx * xhat).mean(1, keepdims=True))
    return (y.reshape(x.shape), dx.reshape(x.shape), (g2 * xhat).sum(0).reshape(w.shape),
            g2.sum(0).reshape(w.shape))


CASES = {
    "gpt_rows": ((512, 64), 1, 0.0, 1.0),
    "large_mean": ((64, 48), 1, 300.0, 1.0),
    "tiny_spread": ((32, 40), 1, 2.0, 1e-3),
    "two_dims": ((3, 5, 6), 2, -4.0, 3.0),
    "many_blocks": ((3000, 40), 1, 1.0, 2.0),
}


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-10), (np.float32, 3e-4), (np.float16, 3e-2)])
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernels_match_the_textbook_formulas(case, dtype, tol):
    shape, ndim, shift, spread = CASES[case]
    rng = np.random.default_rng(len(case))
    x = (rng.standard_normal(shape) * spread + shift).astype(dtype)
    w = rng.standard_normal(shape[len(shape) - ndim:]).astype(dtype)
    b = rng.standard_normal(w.shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    eps = 1e-5
    want = _reference(x, w, b, g, ndim, eps)
    y = C._layer_norm(np, x, w, b, ndim, eps)
    got = (y,) + tuple(C._layer_norm_backward(np, g, x, w, ndim, eps))
    for a, e, name in zip(got, want, ("y", "grad_input", "grad_weight", "grad_bias")):
        assert a.dtype == dtype and a.shape == e.shape, name
        scale = np.abs(e).max()
        assert np.abs(a.astype(np.float64) - e).max() <= tol * scale, name
