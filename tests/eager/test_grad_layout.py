"""A leaf's `.grad` is laid out like the leaf (PyTorch's gradient layout contract): a weight
whose gradient comes out of a transposed matmul still gets a row-major `.grad`, so
`p.grad.view(-1)` works after backward through every common layer."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn as nn
from eager._device import is_writeable
from eager.autograd.graph import layout_like


def _element_strides(t) -> tuple[int, ...]:
    return tuple(t.stride())


def _layers():
    """(name, module factory, input factory); the same for eager and PyTorch."""
    return [
        ("linear", lambda m: m.Linear(4, 3), lambda lib, a: lib.tensor(a((5, 4)))),
        ("conv2d", lambda m: m.Conv2d(2, 3, 3, padding=1), lambda lib, a: lib.tensor(a((2, 2, 5, 5)))),
        ("embedding", lambda m: m.Embedding(7, 3), lambda lib, a: lib.tensor(np.array([[1, 2, 2], [6, 0, 1]]))),
        ("layernorm", lambda m: m.LayerNorm(4), lambda lib, a: lib.tensor(a((3, 4)))),
        ("mha", lambda m: m.MultiheadAttention(4, 2, batch_first=True), lambda lib, a: lib.tensor(a((2, 3, 4)))),
    ]


def _run(lib, nn_mod, make_layer, make_input, seed: int = 0):
    rng = np.random.default_rng(seed)
    layer = make_layer(nn_mod).double()
    with lib.no_grad():
        for p in layer.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape))))
    x = make_input(lib, lambda s: rng.standard_normal(s))
    out = layer(x, x, x)[0] if isinstance(layer, nn_mod.MultiheadAttention) else layer(x)
    (out * out).sum().backward()
    return layer


@pytest.mark.parametrize("name,make_layer,make_input", _layers(), ids=[c[0] for c in _layers()])
def test_every_parameter_grad_views_flat(name, make_layer, make_input):
    layer = _run(eager, nn, make_layer, make_input)
    for pname, p in layer.named_parameters():
        assert p.grad is not None, pname
        assert p.grad.is_contiguous(), (name, pname, p.grad.stride())
        flat = p.grad.view(-1)
        assert tuple(flat.shape) == (p.numel(),)
        np.testing.assert_array_equal(flat.numpy(), p.grad.numpy().reshape(-1))


@pytest.mark.parametrize("name,make_layer,make_input", _layers(), ids=[c[0] for c in _layers()])
def test_grad_strides_and_values_match_pytorch(name, make_layer, make_input):
    torch = pytest.importorskip("torch")
    ours = dict(_run(eager, nn, make_layer, make_input).named_parameters())
    theirs = dict(_run(torch, torch.nn, make_layer, make_input).named_parameters())
    assert ours.keys() == theirs.keys()
    for pname, p in ours.items():
        q = theirs[pname]
        assert _element_strides(p.grad) == tuple(q.grad.stride()), pname
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_transposed_leaf_gets_a_gradient_laid_out_like_it():
    torch = pytest.importorskip("torch")
    a = np.random.default_rng(1).standard_normal((3, 5))
    x = np.random.default_rng(2).standard_normal((4, 3))
    w = eager.tensor(a).t().detach().requires_grad_()  # a column-major leaf (5, 3)
    wt = torch.tensor(a).t().detach().requires_grad_()
    assert _element_strides(w) == tuple(wt.stride())
    (eager.tensor(x) @ w.t()).sum().backward()
    (torch.tensor(x) @ wt.t()).sum().backward()
    assert _element_strides(w.grad) == tuple(wt.grad.stride())
    np.testing.assert_allclose(w.grad.numpy(), wt.grad.numpy())


def test_second_and_later_backwards_keep_the_layout():
    lin = nn.Linear(4, 3)
    x = eager.randn(5, 4)
    for _ in range(2):
        lin(x).sum().backward()
        assert lin.weight.grad.is_contiguous()
    np.testing.assert_allclose(lin.weight.grad.numpy(), 2 * (np.ones((5, 3)).T @ x.numpy()), rtol=1e-5)


def test_create_graph_grad_is_row_major_and_still_differentiable():
    w = eager.randn(3, 4, dtype=eager.float64, requires_grad=True)
    x = eager.randn(5, 4, dtype=eager.float64)
    ((x @ w.t()) ** 2).sum().backward(create_graph=True)
    g = w.grad
    assert g.is_contiguous() and g.requires_grad
    xn = x.numpy()
    np.testing.assert_allclose(g.detach().numpy(), 2 * (xn @ w.detach().numpy().T).T @ xn, rtol=1e-12)
    g.view(-1).sum().backward(inputs=[w])
    # sum(dL/dw) = 2 sum_n s_n (x w^T)_n . 1 with s = x.sum(1): its gradient is 2 (s @ x) in every row
    second = np.broadcast_to(2 * (xn.sum(axis=1) @ xn), (3, 4))
    np.testing.assert_allclose(w.grad.detach().numpy() - g.detach().numpy(), second, rtol=1e-9, atol=1e-9)


def test_layout_like_copies_only_when_needed():
    like = np.zeros((3, 4))
    ok = np.ones((3, 4))
    assert layout_like(ok, like) is ok
    fixed = layout_like(np.ones((4, 3)).T, like)
    assert fixed.flags.c_contiguous
    col_major = np.zeros((4, 3)).T
    assert layout_like(np.ones((4, 3)).T, col_major).strides == col_major.strides
    permuted = np.zeros((2, 3, 4)).transpose(2, 0, 1)
    got = layout_like(np.arange(24.0).reshape(4, 2, 3), permuted)
    assert got.strides == permuted.strides
    np.testing.assert_array_equal(got, np.arange(24.0).reshape(4, 2, 3))
    gappy = np.zeros((3, 8))[:, ::2]
    assert layout_like(np.ones((4, 3)).T, gappy).flags.c_contiguous
    broadcast = np.broadcast_to(np.ones((1, 4)), (3, 4))
    assert layout_like(broadcast, like).flags.c_contiguous


def test_writeable_reads_arrays_whose_flags_lack_the_field():
    class Flags:  # CuPy's flags: c_contiguous, f_contiguous, owndata and no `writeable`
        c_contiguous = True
        f_contiguous = False
        owndata = True

    class DeviceArray:
        flags = Flags()

    assert is_writeable(DeviceArray())
    ro = np.ones(3)
    ro.flags.writeable = False
    assert not is_writeable(ro) and is_writeable(np.ones(3))
