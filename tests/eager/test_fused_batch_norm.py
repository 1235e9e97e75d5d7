"""Batch norm in training as one fused node (eager/nn/_fused_batch_norm.py): the op path's
values bit for bit, PyTorch's node name, running statistics and gradients over several
steps, exact higher derivatives, and the op path for what the node does not take."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import gradcheck, gradgradcheck
from eager.nn import _fused_batch_norm as fused
from gmops import conv as C

F = eager.nn.functional

pytestmark = pytest.mark.skipif(C.conv_native() is None or fused._kernels() is None,
                                reason="eager's native kernels cannot be built here (no C++ compiler)")


def _step(x, w, b, rm, rv, g, momentum=0.1):
    xt = eager.tensor(x, requires_grad=True)
    wt, bt = eager.tensor(w, requires_grad=True), eager.tensor(b, requires_grad=True)
    y = F.batch_norm(xt, rm, rv, wt, bt, training=True, momentum=momentum, eps=1e-5)
    y.backward(eager.tensor(g))
    return y, xt.grad, wt.grad, bt.grad


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(8, 4, 5, 6), (6, 3), (3, 2, 7)])
def test_the_node_gives_the_op_paths_bits(shape, dtype, monkeypatch):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 2).astype(dtype)
    w, b = rng.standard_normal(shape[1]).astype(dtype), rng.standard_normal(shape[1]).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    runs = []
    for on in (True, False):
        if not on:
            monkeypatch.setattr(fused, "_eligible", lambda *a: False)
        rm, rv = eager.zeros(shape[1], dtype=eager.float32), eager.ones(shape[1], dtype=eager.float32)
        y, gx, gw, gb = _step(x, w, b, rm, rv, g)
        assert y.grad_fn.name() == "NativeBatchNormBackward0" and y.detach().numpy().dtype == x.dtype
        runs.append([t.detach().numpy() for t in (y, gx, gw, gb, rm, rv)])
    for ours, ops in zip(*runs):
        np.testing.assert_array_equal(ours, ops)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_running_statistics_and_gradients_follow_pytorch_over_steps(momentum):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    ours, theirs = eager.nn.BatchNorm2d(5, momentum=momentum), torch.nn.BatchNorm2d(5, momentum=momentum)
    for step in range(4):
        x = (rng.standard_normal((6, 5, 4, 3)) * (step + 1) + step).astype(np.float32)
        g = rng.standard_normal(x.shape).astype(np.float32)
        xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        ye, yt = ours(xe), theirs(xt)
        assert ye.grad_fn.name() == yt.grad_fn.name() == "NativeBatchNormBackward0"
        ye.backward(eager.tensor(g))
        yt.backward(torch.tensor(g))
        np.testing.assert_allclose(ye.detach().numpy(), yt.detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
        for a, t in ((ours.weight.grad, theirs.weight.grad), (ours.bias.grad, theirs.bias.grad),
                     (ours.running_mean, theirs.running_mean), (ours.running_var, theirs.running_var)):
            np.testing.assert_allclose(a.numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-4)
    assert int(ours.num_batches_tracked) == 4
    ours.eval()
    theirs.eval()
    x = rng.standard_normal((2, 5, 4, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(eager.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-5, atol=1e-5)


def test_gradients_match_finite_differences_and_differentiate_twice():
    rng = np.random.default_rng(2)
    x = eager.tensor(rng.standard_normal((4, 3, 2, 2)) * 2 + 1, requires_grad=True)
    w = eager.tensor(rng.standard_normal(3), requires_grad=True)
    b = eager.tensor(rng.standard_normal(3), requires_grad=True)

    def fn(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)

    assert fn(x, w, b).grad_fn.name() == "NativeBatchNormBackward0"
    assert gradcheck(fn, (x, w, b))
    assert gradgradcheck(fn, (x, w, b))


def test_only_the_inputs_that_need_a_gradient_get_one():
    rng = np.random.default_rng(3)
    x = eager.tensor(rng.standard_normal((5, 2, 3)).astype(np.float32))
    w = eager.tensor(rng.standard_normal(2).astype(np.float32), requires_grad=True)
    b = eager.tensor(rng.standard_normal(2).astype(np.float32))
    y = F.batch_norm(x, None, None, w, b, training=True)
    assert y.grad_fn.name() == "NativeBatchNormBackward0"
    y.sum().backward()
    assert x.grad is None and b.grad is None and w.grad is not None and w.grad.shape == (2,)
    with eager.no_grad():  # no node, the running statistics still move
        rm, rv = eager.zeros(2), eager.ones(2)
        out = F.batch_norm(x, rm, rv, w, b, training=True)
    assert out.grad_fn is None and not out.requires_grad and float(rm.abs().sum()) > 0


def test_an_input_changed_in_place_after_the_forward_is_an_error():
    rng = np.random.default_rng(4)
    x = eager.tensor(rng.standard_normal((4, 2, 3)).astype(np.float32), requires_grad=True)
    h = x * 1.0
    y = F.batch_norm(h, None, None, eager.ones(2, requires_grad=True), eager.zeros(2), training=True)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


@pytest.mark.parametrize("case", ["no_affine", "eval", "float16", "strided", "tensor_momentum"])
def test_what_the_node_does_not_take_runs_the_op_path(case):
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((6, 3, 4, 4)) + 1).astype(np.float32)
    w, b = eager.tensor(rng.standard_normal(3).astype(np.float32)), eager.tensor(np.zeros(3, np.float32))
    rm, rv = eager.zeros(3), eager.ones(3)
    xt = leaf = eager.tensor(x, requires_grad=True)
    kwargs: dict = {"training": True}
    if case == "no_affine":
        w = b = None
    elif case == "eval":
        kwargs["training"] = False
    elif case == "float16":
        xt = leaf = eager.tensor(x.astype(np.float16), requires_grad=True)
        w, b = w.half(), b.half()
    elif case == "strided":
        leaf = eager.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2)), requires_grad=True)
        xt = leaf.transpose(2, 3)
    else:
        kwargs["momentum"] = eager.tensor(0.1)
    # (eval mode: the caller never asks; the running statistics normalize)
    assert case == "eval" or not fused._eligible(xt, w, b, rm, rv, kwargs.get("momentum", 0.1))
    y = F.batch_norm(xt, rm, rv, w, b, **kwargs)
    ref = x if case != "float16" else x.astype(np.float16).astype(np.float32)
    if kwargs["training"]:
        mean, var = ref.mean((0, 2, 3), keepdims=True), ref.var((0, 2, 3), keepdims=True)
    else:
        mean, var = 0.0, 1.0
    want = (ref - mean) / np.sqrt(var + 1e-5)
    if w is not None:
        want = want * w.float().numpy().reshape(1, 3, 1, 1)
    tol = 1e-2 if case == "float16" else 1e-5
    np.testing.assert_allclose(y.detach().float().numpy(), want, rtol=tol, atol=tol)
    y.sum().backward()
    assert leaf.grad is not None and leaf.grad.shape == leaf.shape
