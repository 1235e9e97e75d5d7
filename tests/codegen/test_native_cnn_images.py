"""A convolution traced image by image (K = C*kh*kw >= 64) runs in a compiled step as eager's
image-by-image kernels (codegen/native_gen/conv_images.py: the columns never written), with
the library ops where the kernels cannot run: the step's losses and parameters equal eager's,
for strides, padding, dilation, a first layer whose input needs no gradient, and with the
kernels switched off."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from codegen.native_gen import conv_images
from eager import nn
from gmnative import conv_kernels
from static.jit import trace_cache

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _run(compiled: bool, conv: dict, c_in: int, first: bool, x: np.ndarray):
    eager.manual_seed(0)
    layers = [] if first else [nn.Conv2d(c_in, c_in, 1), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Conv2d(c_in, 5, **conv), nn.ReLU())
    opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step(t):
        opt.zero_grad()
        loss = (model(t) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    f = static.compile(step, backend="native", check=True) if compiled else step
    losses = [float(f(eager.from_numpy(x))) for _ in range(2)]
    return losses, [p.detach().numpy().copy() for p in model.parameters()], f


CONVS = [
    dict(kernel_size=3, padding=1),
    dict(kernel_size=3, stride=2, padding=(1, 0)),
    dict(kernel_size=(3, 2), dilation=(1, 2), padding=2),
]


@pytest.mark.parametrize("conv", CONVS)
@pytest.mark.parametrize("first", [False, True])
@pytest.mark.parametrize("dx_by_kernels", [False, True])
def test_an_image_by_image_convolution_runs_as_the_kernels_and_equals_eager(conv, first, dx_by_kernels,
                                                                             monkeypatch):
    monkeypatch.setattr(conv_images, "DX_BY_KERNELS", dx_by_kernels)
    trace_cache.clear_memory()  # what this process built is keyed by the traced graph alone, not the switch
    c_in = 8  # K = 8 * 9 = 72 (8 * 6 = 48 for the 3x2 kernel: the product channel-major, the plan not taken)
    x = np.random.default_rng(1).standard_normal((3, c_in, 9, 8)).astype(np.float32)
    want, want_p, _ = _run(False, conv, c_in, first, x)
    got, got_p, f = _run(True, conv, c_in, first, x)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    text = f.source(eager.from_numpy(x))
    k = c_in * np.prod(np.broadcast_to(conv["kernel_size"], 2))
    assert ("_rt.conv_images(" in text) == (k >= 64)
    assert ("_rt.conv_images_backward(" in text) == (k >= 64)


def test_without_the_kernels_the_library_ops_give_the_same_step(monkeypatch):
    monkeypatch.setattr(conv_kernels, "conv2d_images", lambda *a, **k: None)
    monkeypatch.setattr(conv_kernels, "conv2d_images_backward", lambda *a, **k: None)
    x = np.random.default_rng(2).standard_normal((3, 8, 7, 7)).astype(np.float32)
    conv = dict(kernel_size=3, stride=2, padding=1)
    want, want_p, _ = _run(False, conv, 8, False, x)
    got, got_p, f = _run(True, conv, 8, False, x)
    assert "_rt.conv_images(" in f.source(eager.from_numpy(x))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_by_default_the_input_gradient_comes_from_the_kernels_backward_call():
    """With default settings the one-graph step takes dx from the kernels' backward call (the
    image's dx columns folded in the thread's buffer), not the batch's columns written by a
    library product and folded by a window function."""
    trace_cache.clear_memory()  # (a test before may have built this graph with the switch off)
    x = np.random.default_rng(3).standard_normal((3, 8, 9, 8)).astype(np.float32)
    conv = dict(kernel_size=3, padding=1)
    want, want_p, _ = _run(False, conv, 8, False, x)
    got, got_p, f = _run(True, conv, 8, False, x)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    calls = [line for line in f.source(eager.from_numpy(x)).splitlines() if "_rt.conv_images_backward(" in line]
    assert len(calls) == 1 and calls[0].lstrip().split(",")[0] != "_", calls  # dx, dW = ... (not _, dW)
