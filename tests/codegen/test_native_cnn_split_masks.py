"""A CNN block compiled as a drop-in (forward and backward as two graphs): the ReLU's mask is
read from the pooled maxima (static/passes/pool_masks.py) and batch norm's normalized output
is recomputed by its gradient region (static.passes.remat._channel_normalizations with
codegen bn_recompute), so the forward saves neither the normalized output nor anything of
the ReLU's, and the gradients equal eager's."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from eager import nn
from static.ir import Value

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason="no C++ compiler for the native backend")


def _block(c_in: int, c_out: int, pool: nn.Module, dtype) -> nn.Module:
    eager.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU(), pool)
    return m.to(eager.float64) if dtype == np.float64 else m


def _grads(model: nn.Module, f, x: np.ndarray) -> list:
    out = []
    for k in range(2):
        model.zero_grad()
        xk = x * (k + 1)
        (f(eager.from_numpy(xk)) ** 2).mean().backward()
        out.append([None if p.grad is None else p.grad.numpy().copy() for p in model.parameters()])
    return out


@pytest.mark.parametrize("backend, pool, shape, dtype", [
    ("native", nn.MaxPool2d(2), (3, 2, 9, 7), np.float32),  # a row and a column in no window: gradient zero
    ("numpy", nn.MaxPool2d(2), (3, 2, 9, 7), np.float32),  # the rewrite is on the IR: every backend
    ("native", nn.MaxPool2d(2), (2, 3, 6, 8), np.float64),
    ("native", nn.MaxPool2d(3, stride=2), (2, 1, 9, 9), np.float32),  # windows share cells: not rewritten
    ("native", nn.MaxPool2d(2, padding=1), (2, 2, 6, 6), np.float32),  # padded windows: not rewritten
])
def test_a_drop_in_block_gives_eager_gradients(backend, pool, shape, dtype):
    x = np.random.default_rng(7).standard_normal(shape).astype(dtype)
    model = _block(shape[1], 3, pool, dtype)
    want = _grads(model, model, x)
    model = _block(shape[1], 3, pool, dtype)
    got = _grads(model, static.compile(model, backend=backend), x)
    tol = dict(rtol=2e-4, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for gs, ws in zip(got, want):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, **tol)


def test_the_split_forward_saves_no_normalized_output_and_no_relu_mask():
    """W6's first block and a convolution as a drop-in: the forward's saved values are the
    convolution's output (normalize_backward reads it), the pooled maxima and the pooling's
    mask; the normalized output (the activation's size) is not among them, the backward runs
    no normalization function of its own (its gradient region recomputes xhat from x) and no
    pass for the ReLU's mask (the region's scatter gates each window by its maximum)."""
    model = _block(1, 8, nn.MaxPool2d(2), np.float32)
    model.append(nn.Conv2d(8, 4, 3, padding=1))  # reads the pooled maxima (saved for its own gradient), as W6
    f = static.compile(model, backend="native")
    x = np.random.default_rng(1).standard_normal((4, 1, 16, 16)).astype(np.float32)
    got = _grads(model, f, x)
    reference = _block(1, 8, nn.MaxPool2d(2), np.float32)
    reference.append(nn.Conv2d(8, 4, 3, padding=1))  # the same draws after the same seed: the same weights
    for gs, ws in zip(got, _grads(reference, reference, x)):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
    graphs = f.autograd_graphs(eager.from_numpy(x))
    saved = graphs.forward.outputs[len(graphs.forward.outputs) - graphs.n_saved:]
    producers = [v.producer.op if isinstance(v, Value) and v.producer is not None else "input" for v in saved]
    assert "normalize" not in producers
    full = (4, 8, 16, 16)
    assert sum(1 for v in saved if tuple(v.type.shape) == full and v.type.dtype.np.name == "float32") == 1  # x only
    assert not any(n.op == "relu" for n in graphs.backward.nodes)
    source = f._entry_for((eager.from_numpy(x),), {})[3].grad.backward._loaded.source
    assert "recomputed by its gradient's region, not stored" in source
    # the gate where(p <= 0, 0, g) applied in the gradient region's scatter, no pass of its own
    assert "the ReLU's mask at each chosen cell from the window's maximum" in source
    assert source.count("_call_new(_K") == 2  # the gradient region alone (twice: the call and its cast form)


def test_nan_wins_the_window_and_keeps_its_gradient_as_eager():
    """A NaN in a window is its maximum (argmax) and NaN <= 0 is false: the ReLU lets the
    gradient through there, in the mask read from the pooled maxima as in eager's."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 2, 6, 6)).astype(np.float32)
    x[0, 1, 2, 3] = np.nan
    x[1, 0, 4, 4] = -0.0
    w = eager.from_numpy(rng.standard_normal((2, 2, 3, 3)).astype(np.float32))
    relu_pool = nn.Sequential(nn.ReLU(), nn.MaxPool2d(2))
    for backend in ("numpy", "native"):
        grads = []
        for compiled in (False, True):
            t = eager.from_numpy(x.copy()).requires_grad_()
            f = static.compile(relu_pool, backend=backend) if compiled else relu_pool
            (f(t) * w).sum().backward()
            grads.append(t.grad.numpy())
        np.testing.assert_array_equal(grads[0], grads[1])
        assert not np.isnan(grads[1]).any()


@pytest.mark.parametrize("act", [nn.Tanh, nn.ReLU, nn.Identity])
def test_a_recomputed_normalization_gives_eager_gradients_whoever_reads_it(act):
    """Batch norm without a pooling after it, as a drop-in: the backward recomputes xhat from
    the saved x (the forward saves no normalized output); where its gradient region reads
    xhat only as the weight gradient's factor (Identity) nothing is written, elsewhere the
    normalization runs in the backward; the gradients are eager's either way."""
    x = np.random.default_rng(2).standard_normal((3, 2, 10, 10)).astype(np.float32)
    grads = []
    for compiled in (False, True):
        eager.manual_seed(0)
        m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.BatchNorm2d(4), act(), nn.Conv2d(4, 3, 3))
        f = static.compile(m, backend="native") if compiled else m
        grads.append(_grads(m, f, x))
        if compiled:
            graphs = f.autograd_graphs(eager.from_numpy(x))
            saved = graphs.forward.outputs[len(graphs.forward.outputs) - graphs.n_saved:]
            assert not any(v.producer is not None and v.producer.op == "normalize" for v in saved)
    for gs, ws in zip(*grads):
        for g, w in zip(gs, ws):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=2e-5)
