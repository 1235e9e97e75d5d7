"""A convolution traced image by image (K = C*kh*kw >= 64) in a module compiled as a drop-in:
the remat split saves its input rather than its columns where the backend runs such
convolutions as kernels (static.passes.remat._image_columns, Capabilities.
image_convolutions), and each half runs as eager's kernels alone
(codegen/native_gen/conv_images_split.py): the forward's product as conv2d_images, the
weight's (and input's) gradient as conv2d_images_backward. Values against eager (and
PyTorch where installed) on the geometries that take odd paths; the numpy backend keeps
saving the columns."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from eager import nn

native = pytest.mark.skipif(not native_build.availability()[0],
                            reason=f"no C++ compiler: {native_build.availability()[1]}")

# (in channels, kernel, stride, padding, dilation): each K = C*kh*kw >= 64
GEOMETRIES = [
    (8, 3, 1, 1, 1),
    (16, (3, 2), (2, 1), (0, 1), (1, 2)),  # rectangular kernel, stride, padding on one axis, dilation
    (72, 1, 1, 0, 1),  # 1x1 kernel
]


def _model(c, kernel, stride, padding, dilation, dtype=eager.float32, seed=0):
    eager.manual_seed(seed)
    return nn.Sequential(nn.Conv2d(c, 5, kernel, stride=stride, padding=padding, dilation=dilation),
                         nn.ReLU()).to(dtype)


def _run(model, target, x):
    model.zero_grad()
    if x.requires_grad:
        x.grad = None
    out = target(x)
    (out * out).sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    return out.detach().numpy().copy(), grads, (x.grad.numpy().copy() if x.requires_grad else None)


def _check(geometry, dtype, input_grad, tol):
    rng = np.random.default_rng(1)
    c = geometry[0]
    data = rng.standard_normal((3, c, 9, 8)).astype(np.float64 if dtype is eager.float64 else np.float32)
    x = eager.from_numpy(data).requires_grad_(input_grad)
    model = _model(*geometry, dtype=dtype)
    want = _run(model, model, x)
    compiled = static.compile(model, backend="native")
    for _ in range(2):  # the second call runs the built entry
        got = _run(model, compiled, x)
    np.testing.assert_allclose(got[0], want[0], **tol)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, **tol)
    if input_grad:
        np.testing.assert_allclose(got[2], want[2], **tol)
    return compiled._entry_for((x,), {})[3], x


@native
@pytest.mark.parametrize("geometry, input_grad", [(GEOMETRIES[0], True), (GEOMETRIES[1], True),
                                                  (GEOMETRIES[2], False), (GEOMETRIES[0], False)])
def test_each_half_runs_as_the_kernels_and_equals_eager(geometry, input_grad):
    """Without the input's gradient the backward holds no W^T G: the kernels get the
    weight's shape alone."""
    entry, _ = _check(geometry, eager.float32, input_grad, dict(rtol=1e-4, atol=1e-4))
    assert "_rt.conv_images(" in entry.forward._loaded.source
    backward = entry.grad.backward._loaded.source
    assert "_rt.conv_images_backward(" in backward
    # the forward saves the image (4-d), not the columns (C, kh, kw, N, OH, OW)
    assert all(len(v.type.shape) != 6 for v in entry.grad.split.residuals)
    assert "unfold" not in _driver_lines(backward)


@native
def test_float64_each_half_equals_eager():
    entry, _ = _check(GEOMETRIES[0], eager.float64, True, dict(rtol=1e-10, atol=1e-10))
    assert "_rt.conv_images_backward(" in entry.grad.backward._loaded.source


def test_the_numpy_backend_keeps_saving_the_columns():
    """Without the kernels, recomputing the columns would be a second unfold pass."""
    rng = np.random.default_rng(2)
    x = eager.from_numpy(rng.standard_normal((3, 8, 6, 6)).astype(np.float32)).requires_grad_()
    model = _model(*GEOMETRIES[0])
    want = _run(model, model, x)
    compiled = static.compile(model, backend="numpy")
    got = _run(model, compiled, x)
    for a, b in zip(got[1], want[1]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    split = compiled._entry_for((x,), {})[3].grad.split
    assert any(len(v.type.shape) == 6 for v in split.residuals)


@native
def test_matches_torch():
    torch = pytest.importorskip("torch")
    entry_geometry = GEOMETRIES[1]
    rng = np.random.default_rng(3)
    data = rng.standard_normal((4, 16, 9, 8)).astype(np.float32)
    model = _model(*entry_geometry)
    x = eager.from_numpy(data.copy()).requires_grad_()
    compiled = static.compile(model, backend="native")
    got = _run(model, compiled, x)
    c, kernel, stride, padding, dilation = entry_geometry
    tconv = torch.nn.Conv2d(c, 5, kernel, stride=stride, padding=padding, dilation=dilation)
    with torch.no_grad():
        tconv.weight.copy_(torch.from_numpy(model[0].weight.detach().numpy()))
        tconv.bias.copy_(torch.from_numpy(model[0].bias.detach().numpy()))
    tx = torch.from_numpy(data.copy()).requires_grad_()
    out = torch.relu(tconv(tx))
    (out * out).sum().backward()
    np.testing.assert_allclose(got[0], out.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got[1][0], tconv.weight.grad.numpy(), rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got[2], tx.grad.numpy(), rtol=1e-4, atol=1e-4)


def _driver_lines(source: str) -> str:
    """The generated code's statements, without the comments that cite the IR."""
    return "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("#", "//")))


def test_a_backend_declaring_image_convolutions_gets_the_image_saved(monkeypatch):
    """The split's rule alone (static.passes.remat), on a backend without the kernels: the
    columns recomputed from the saved image in the backward give eager's values."""
    from static.jit import executable  # noqa: PLC0415

    declared = executable.capabilities("numpy")
    monkeypatch.setitem(executable._CAPABILITIES, "numpy",
                        executable.Capabilities(inline=declared.inline, row_regions=declared.row_regions,
                                                image_convolutions=True))
    rng = np.random.default_rng(4)
    x = eager.from_numpy(rng.standard_normal((3, 8, 6, 6)).astype(np.float32)).requires_grad_()
    model = _model(*GEOMETRIES[0], seed=1)
    want = _run(model, model, x)
    compiled = static.compile(model, backend="numpy")  # (the capabilities are part of the cache's key)
    got = _run(model, compiled, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-5)
    for a, b in zip(got[1] + [got[2]], want[1] + [want[2]]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    split = compiled._entry_for((x,), {})[3].grad.split
    assert all(len(v.type.shape) != 6 for v in split.residuals)
    assert [n.op for n in split.backward.nodes].count("unfold") == 1  # the columns made again there


@native
def test_two_convolutions_whose_backward_makes_the_image_with_a_gradient():
    """conv -> relu -> conv: the backward recomputes the second convolution's image (the
    relu) in a fused region that also reads the first one's input gradient, so the kernels'
    backward is written after that region and takes dW alone (dx stays the library ops)."""
    rng = np.random.default_rng(6)
    data = rng.standard_normal((4, 8, 10, 10)).astype(np.float32)
    eager.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
    x = eager.from_numpy(data).requires_grad_()
    want = _run(model, model, x)
    compiled = static.compile(model, backend="native")
    for _ in range(2):
        got = _run(model, compiled, x)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-4, atol=1e-4)
    for a, b in zip(got[1] + [got[2]], want[1] + [want[2]]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    assert "_rt.conv_images_backward(" in compiled._entry_for((x,), {})[3].grad.backward._loaded.source
