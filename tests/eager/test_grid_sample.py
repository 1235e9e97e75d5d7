"""affine_grid and grid_sample against PyTorch (values, and gradients to the input, the
grid and theta): bilinear and nearest, the three padding modes, both align_corners, and a
spatial-transformer step as PyTorch's tutorial writes it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 5, 6))
GRID = RNG.uniform(-1.3, 1.3, (2, 4, 7, 2))  # some points outside [-1, 1]
THETA = np.array([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]], [[1.2, 0.4, 0.0], [-0.1, 0.8, 0.3]]])


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_matches_pytorch(mode, padding_mode, align_corners):
    out = []
    for lib in (eager, torch):
        x, g = lib.tensor(X, requires_grad=True), lib.tensor(GRID, requires_grad=True)
        y = lib.nn.functional.grid_sample(x, g, mode=mode, padding_mode=padding_mode, align_corners=align_corners)
        y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))))
        out.append((y.detach().numpy(), x.grad.numpy(), g.grad.numpy() if g.grad is not None else np.zeros_like(GRID)))
    for a, b in zip(*out):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 5, 6), (2, 1, 1, 4)])
def test_affine_grid_matches_pytorch(size, align_corners):
    out = []
    for lib in (eager, torch):
        theta = lib.tensor(THETA, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (a unit-size grid with align_corners warns in PyTorch)
            grid = lib.nn.functional.affine_grid(theta, size, align_corners=align_corners)
        grid.backward(lib.tensor(np.sin(np.arange(grid.numel())).reshape(tuple(grid.shape))))
        out.append((grid.detach().numpy(), theta.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_spatial_transformer_step_like_the_tutorial():
    out = []
    for lib in (eager, torch):
        F = lib.nn.functional
        x = lib.tensor(X)
        theta = lib.tensor(THETA, requires_grad=True)
        with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
            grid = F.affine_grid(theta, x.size())
        with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
            y = F.grid_sample(x, grid)
        loss = (y ** 2).mean()
        loss.backward()
        out.append((y.detach().numpy(), theta.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_errors_like_pytorch():
    F = eager.nn.functional
    with pytest.raises(ValueError, match="expected mode"):
        F.grid_sample(eager.tensor(X), eager.tensor(GRID), mode="area", align_corners=False)
    with pytest.raises(ValueError, match="expected padding_mode"):
        F.grid_sample(eager.tensor(X), eager.tensor(GRID), padding_mode="wrap", align_corners=False)
    with pytest.raises(ValueError, match="Nx2x3"):
        F.affine_grid(eager.ones(2, 3, 3, dtype=eager.float64), [2, 3, 4, 4], align_corners=False)
