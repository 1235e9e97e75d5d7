"""Batch norm fused with its neighbours in the native module (native_gen/batchnorm.py): the
normalization's second pass computes the pointwise region after it (the affine part, the
ReLU and the ReLU's mask) while each element is in a register, and the gradient's channel
function computes the region before it (the ReLU's mask and the affine part's gradient, with
their channel sums) in its own passes. Checked against eager (values and gradients, the
running statistics) on odd shapes: one channel, a batch of one, float64, no affine part,
stride 2 and padding in the convolution before, and on the W6 step with check=True."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import static
from codegen import native_build
from eager import nn

pytestmark = pytest.mark.skipif(not native_build.availability()[0],
                                reason=f"no C++ compiler: {native_build.availability()[1]}")


def _block(c_in: int, c_out: int, affine: bool, stride: int, dtype) -> nn.Module:
    eager.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1), nn.BatchNorm2d(c_out, affine=affine),
                      nn.ReLU(), nn.MaxPool2d(2, ceil_mode=True))
    return m.to(eager.float64) if dtype == np.float64 else m


def _step(model: nn.Module, opt):
    def step(t):
        opt.zero_grad()
        loss = (model(t) ** 2).mean()
        loss.backward()
        opt.step()
        return loss
    return step


CASES = [  # (input shape, out channels, affine, stride, dtype)
    ((4, 2, 9, 7), 3, True, 1, np.float32),
    ((1, 1, 8, 8), 1, True, 2, np.float32),  # batch 1, one channel, stride 2
    ((3, 2, 6, 10), 4, False, 1, np.float32),  # no affine part: the ReLU alone after the normalization
    ((2, 3, 7, 7), 2, True, 2, np.float64),
]


@pytest.mark.parametrize("shape, c_out, affine, stride, dtype", CASES)
def test_batch_norm_block_step_equals_eager(shape, c_out, affine, stride, dtype):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(dtype)
    results = []
    for compiled in (False, True):
        model = _block(shape[1], c_out, affine, stride, dtype)
        step = _step(model, eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        f = static.compile(step, backend="native", check=True) if compiled else step
        losses = [float(f(eager.from_numpy(x * (k + 1)))) for k in range(2)]
        results.append((losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}, f))
    (want, want_state, _), (got, got_state, f) = results
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(got, want, **tol)
    for k in want_state:
        np.testing.assert_allclose(got_state[k], want_state[k], err_msg=k, **tol)
    text = f.source(eager.from_numpy(x))
    assert "batch norm's normalization" in text
    assert "and the bias add making it" in text  # the convolution's bias added in the first pass
    assert "the channel mean's region" in text  # the running mean's term from the first pass's sum
    # with an affine part, its gradient region and the normalization's gradient are one function
    assert ("(never stored)" in text) == affine
    # the first convolution's weight gradient (K = C_in * 9 <= 32 columns) taken in that pass
    assert ("the weight gradient's" in text) == affine


def test_the_normalization_writes_the_affine_relu_region():
    """The region after the normalization is no function of its own: its outputs are stored in
    the normalization's second pass (the driver writes no call for it)."""
    model = _block(2, 3, True, 1, np.float32)
    x = eager.from_numpy(np.random.default_rng(2).standard_normal((4, 2, 8, 8)).astype(np.float32))
    opt = eager.optim.SGD(model.parameters(), lr=0.1)

    def step(t):
        opt.zero_grad()
        loss = model(t).sum()
        loss.backward()
        opt.step()
        return loss
    f = static.compile(step, backend="native")
    f(x)
    text = f.source(x)
    norm = text.split("batch norm's normalization", 1)[1].split("\n}\n", 1)[0]
    assert "gm_relu" in norm
    driver = [line.strip() for line in text.split("def forward", 1)[1].splitlines()]
    masks = [k for k, line in enumerate(driver) if line.startswith("# L") and "= fused" in line and "bool[" in line]
    assert masks and all("computed by the window function" in driver[k + 1] for k in masks)


def test_a_wide_weight_gradient_is_taken_from_the_columns_side():
    """A convolution whose columns outnumber its channels (K = 4 * 9 > 3 here) has its weight
    gradient computed as (S @ rows^T)^T in the driver; the step equals eager."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 6, 6)).astype(np.float32)
    results = []
    for compiled in (False, True):
        eager.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(4, 3, 3, padding=1), nn.BatchNorm2d(3), nn.ReLU())
        step = _step(model, eager.optim.SGD(model.parameters(), lr=0.1))
        f = static.compile(step, backend="native", check=True) if compiled else step
        losses = [float(f(eager.from_numpy(x))) for _ in range(2)]
        results.append((losses, [p.detach().numpy().copy() for p in model.parameters()], f))
    (want, want_p, _), (got, got_p, f) = results
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    assert ".swapaxes(0, 1)).swapaxes(0, 1))" in f.source(eager.from_numpy(x))


def test_batch_norm_in_eval_mode_and_the_compiled_module_drop_in():
    """A module compiled as a drop-in (forward and backward graphs apart) in training, then
    in eval mode (running statistics: no normalize node), equals eager."""
    rng = np.random.default_rng(3)
    x = eager.from_numpy(rng.standard_normal((3, 2, 8, 9)).astype(np.float32))
    model, ref = _block(2, 4, True, 1, np.float32), _block(2, 4, True, 1, np.float32)
    compiled = static.compile(model, backend="native")
    compiled(x).square().sum().backward()
    ref(x).square().sum().backward()
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    for a, b in zip(model.buffers(), ref.buffers()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    model.eval()
    ref.eval()
    with eager.no_grad():
        np.testing.assert_allclose(compiled(x).numpy(), ref(x).numpy(), rtol=1e-5, atol=1e-6)


VARIANTS = {
    "no conv bias, leaky relu": lambda: nn.Sequential(nn.Conv2d(2, 3, 3, padding=1, bias=False), nn.BatchNorm2d(3),
                                                      nn.LeakyReLU(0.1)),
    "batchnorm1d on (N, C, L), tanh": lambda: nn.Sequential(nn.Conv1d(2, 4, 3, padding=1), nn.BatchNorm1d(4),
                                                            nn.Tanh()),
    "momentum 0.3, stride 2, no activation": lambda: nn.Sequential(nn.Conv2d(1, 2, 3, stride=2),
                                                                   nn.BatchNorm2d(2, momentum=0.3)),
    "two batch norms in a row": lambda: nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3), nn.ReLU(),
                                                      nn.BatchNorm2d(3), nn.ReLU()),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_batch_norm_variants_step_equal_eager(name):
    """Neighbours the fusions must leave as they are or take correctly: no bias add before
    the normalization, other activations after it, 3-d inputs, another momentum, a
    normalization reading another's output."""
    shape = (4, 2, 9) if "1d" in name else (3, 1 if "stride 2" in name else 2, 7, 8)
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    results = []
    for compiled in (False, True):
        eager.manual_seed(0)
        model = VARIANTS[name]()
        step = _step(model, eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        f = static.compile(step, backend="native", check=True) if compiled else step
        losses = [float(f(eager.from_numpy(x * (k + 1)))) for k in range(2)]
        results.append((losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}))
    (want, want_state), (got, got_state) = results
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    for k in want_state:
        np.testing.assert_allclose(got_state[k], want_state[k], rtol=1e-4, atol=1e-5, err_msg=k)


@pytest.mark.parametrize("stride", [1, 2])
def test_an_image_by_image_convolution_block_step_equals_eager(stride):
    # 8 channels x 3x3 = 72 columns per image: the convolution's product runs image by image
    # ((N, O, L) as it comes, eager's image-by-image kernels); its bias add is still taken by
    # the normalization's first pass
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 8, 9, 7)).astype(np.float32)
    results = []
    for compiled in (False, True):
        model = _block(8, 6, True, stride, np.float32)
        step = _step(model, eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
        f = static.compile(step, backend="native", check=True) if compiled else step
        losses = [float(f(eager.from_numpy(x * (k + 1)))) for k in range(2)]
        results.append((losses, {k: v.numpy().copy() for k, v in model.state_dict().items()}, f))
    (want, want_state, _), (got, got_state, f) = results
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    for k in want_state:
        np.testing.assert_allclose(got_state[k], want_state[k], err_msg=k, rtol=1e-4, atol=1e-5)
    text = f.source(eager.from_numpy(x))
    assert "and the bias add making it" in text
    assert "_rt.conv_images_backward(" in text  # dW and dx image by image, eager's kernels (conv_images.py)


@pytest.mark.parametrize("c_in", [1, 8])  # the product channel-major (K = 9) and image by image (K = 72)
def test_a_drop_in_modules_forward_folds_the_conv_bias_into_the_normalization(c_in):
    """A module compiled as a drop-in keeps the normalization's input for its backward graph,
    whose normalize_backward reads it after the forward has run: the bias add still runs in
    the normalization's first pass, not as a pass of its own over the product."""
    x = eager.from_numpy(np.random.default_rng(6).standard_normal((4, c_in, 6, 6)).astype(np.float32))
    model, ref = _block(c_in, 3, True, 1, np.float32), _block(c_in, 3, True, 1, np.float32)
    compiled = static.compile(model, backend="native")
    compiled(x).square().sum().backward()
    ref(x).square().sum().backward()
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-5)
    forward = compiled._entry_for((x,), {})[3].forward._loaded.source
    assert "and the bias add making it" in forward
