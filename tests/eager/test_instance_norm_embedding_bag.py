"""nn.InstanceNorm1d/2d (affine, track_running_stats, train/eval, unbatched input) and
nn.EmbeddingBag / functional.embedding_bag (sum/mean/max, offsets, include_last_offset,
padding_idx, per_sample_weights): against PyTorch when it is installed, gradients against
finite differences, PyTorch's errors, and static.compile equal to eager."""
from __future__ import annotations

import numpy as np
import pytest
from finite_differences import central_difference_grad

import eager
import eager.nn.functional as EF
import static

RNG = np.random.default_rng(1)


# -- InstanceNorm -----------------------------------------------------------------------------------
@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm2d", (2, 3, 4, 3)),
                                       ("InstanceNorm1d", (3, 5)), ("InstanceNorm2d", (3, 4, 3))])
@pytest.mark.parametrize("affine,track", [(False, False), (True, False), (True, True), (False, True)])
def test_instance_norm_matches_pytorch_in_train_and_eval(cls, shape, affine, track):
    torch = pytest.importorskip("torch")
    me = getattr(eager.nn, cls)(3, affine=affine, track_running_stats=track, momentum=0.3).double()
    mt = getattr(torch.nn, cls)(3, affine=affine, track_running_stats=track, momentum=0.3).double()
    if affine:
        w, b = RNG.standard_normal(3), RNG.standard_normal(3)
        with eager.no_grad():
            me.weight.copy_(eager.tensor(w))
            me.bias.copy_(eager.tensor(b))
        with torch.no_grad():
            mt.weight.copy_(torch.tensor(w))
            mt.bias.copy_(torch.tensor(b))
    for step in range(3):
        x = RNG.standard_normal(shape) * (step + 1) + step
        xe, xt = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        oe, ot = me(xe), mt(xt)
        np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-10, atol=1e-12)
        g = RNG.standard_normal(shape)
        (oe * eager.tensor(g)).sum().backward()
        (ot * torch.tensor(g)).sum().backward()
        np.testing.assert_allclose(xe.grad.numpy(), xt.grad.numpy(), rtol=1e-9, atol=1e-11)
        if affine:
            np.testing.assert_allclose(me.weight.grad.numpy(), mt.weight.grad.numpy(), rtol=1e-9, atol=1e-11)
    if track:
        np.testing.assert_allclose(me.running_mean.numpy(), mt.running_mean.numpy(), rtol=1e-12)
        np.testing.assert_allclose(me.running_var.numpy(), mt.running_var.numpy(), rtol=1e-12)
    me.eval(), mt.eval()
    x = RNG.standard_normal(shape)
    np.testing.assert_allclose(me(eager.tensor(x)).detach().numpy(), mt(torch.tensor(x)).detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    assert set(me.state_dict()) == set(mt.state_dict())


def test_instance_norm_running_stats_move_and_eval_uses_them():
    m = eager.nn.InstanceNorm1d(2, track_running_stats=True, momentum=0.5)
    x = eager.tensor([[[1.0, 3.0, 5.0], [0.0, 0.0, 6.0]]])
    m(x)
    # per-sample mean (3, 2) and unbiased var (4, 12), moved half way from (0, 1)
    np.testing.assert_allclose(m.running_mean.numpy(), [1.5, 1.0])
    np.testing.assert_allclose(m.running_var.numpy(), [2.5, 6.5])
    m.eval()
    out = m(x)
    np.testing.assert_allclose(out.numpy(), (x.numpy() - [[[1.5], [1.0]]]) / np.sqrt(np.array([[[2.5], [6.5]]]) + 1e-5),
                               rtol=1e-6)


def test_instance_norm_gradient_matches_finite_differences():
    x = RNG.standard_normal((2, 2, 5))
    w = RNG.standard_normal((2, 2, 5))
    m = eager.nn.InstanceNorm1d(2, affine=True).double()
    xe = eager.tensor(x, requires_grad=True)
    (m(xe) * eager.tensor(w)).sum().backward()
    num = central_difference_grad(lambda a: float((m(eager.tensor(a)).detach().numpy() * w).sum()), x)
    np.testing.assert_allclose(xe.grad.numpy(), num, rtol=1e-5, atol=1e-7)


def test_instance_norm_errors():
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        eager.nn.InstanceNorm1d(3)(eager.zeros(1, 3, 2, 2))
    with pytest.raises(ValueError, match="to match num_features"):
        eager.nn.InstanceNorm2d(3, affine=True)(eager.zeros(1, 4, 2, 2))
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        eager.nn.InstanceNorm1d(3)(eager.zeros(2, 3, 1))


def test_instance_norm_compiles():
    m = eager.nn.InstanceNorm2d(3, affine=True)
    x = eager.tensor(RNG.standard_normal((2, 3, 4, 4)).astype(np.float32))
    np.testing.assert_allclose(static.compile(m)(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-5, atol=1e-6)


# -- EmbeddingBag -----------------------------------------------------------------------------------
W = RNG.standard_normal((7, 3))
IDX1 = np.array([1, 2, 4, 5, 4, 3, 2, 0, 6])
OFF = np.array([0, 4, 4, 6])          # bags: [1 2 4 5], [], [4 3], [2 0 6]
IDX2 = np.array([[1, 2, 4], [4, 3, 2], [0, 0, 6]])
PSW1 = RNG.standard_normal(IDX1.shape)
PSW2 = RNG.standard_normal(IDX2.shape)

BAG_CASES = {
    f"{mode}_{layout}{'_pad' if pad is not None else ''}{'_last' if last else ''}{'_psw' if psw else ''}":
        (mode, layout, pad, last, psw)
    for mode in ("sum", "mean", "max") for layout in ("1d", "2d") for pad in (None, 2)
    for last in ((False, True) if layout == "1d" else (False,)) for psw in ((False, True) if mode == "sum" else (False,))
}


def _bag_args(mod, layout, last, psw, w, p1, p2):
    if layout == "2d":
        return mod.tensor(IDX2), None, (p2 if psw else None)
    offsets = np.append(OFF, len(IDX1)) if last else OFF
    return mod.tensor(IDX1), mod.tensor(offsets), (p1 if psw else None)


@pytest.mark.parametrize("name", sorted(BAG_CASES))
def test_embedding_bag_matches_pytorch(name):
    torch = pytest.importorskip("torch")
    mode, layout, pad, last, psw = BAG_CASES[name]
    outs, grads = [], []
    for mod, fn in ((eager, EF.embedding_bag), (torch, torch.nn.functional.embedding_bag)):
        w = mod.tensor(W, requires_grad=True)
        p1, p2 = mod.tensor(PSW1, requires_grad=True), mod.tensor(PSW2, requires_grad=True)
        idx, off, weights = _bag_args(mod, layout, last, psw, w, p1, p2)
        out = fn(idx, w, off, mode=mode, per_sample_weights=weights, include_last_offset=last, padding_idx=pad)
        g = np.random.default_rng(3).standard_normal(tuple(out.shape))
        (out * mod.tensor(g)).sum().backward()
        outs.append(out.detach().numpy())
        grads.append([w.grad.numpy()] + ([weights.grad.numpy()] if psw else []))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-12, atol=1e-12)
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_weight_gradient_matches_finite_differences(mode):
    g = RNG.standard_normal((4, 3))
    psw = PSW1 if mode == "sum" else None

    def f(w_arr):
        out = EF.embedding_bag(eager.tensor(IDX1), eager.tensor(w_arr), eager.tensor(OFF), mode=mode,
                               per_sample_weights=None if psw is None else eager.tensor(psw))
        return float((out.numpy() * g).sum())

    w = eager.tensor(W, requires_grad=True)
    out = EF.embedding_bag(eager.tensor(IDX1), w, eager.tensor(OFF), mode=mode,
                           per_sample_weights=None if psw is None else eager.tensor(psw))
    (out * eager.tensor(g)).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), central_difference_grad(f, W), rtol=1e-5, atol=1e-7)
    assert np.all(out.detach().numpy()[1] == 0)  # the empty bag


def test_embedding_bag_module_and_its_errors():
    bag = eager.nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0)
    assert np.all(bag.weight.detach().numpy()[0] == 0)
    out = bag(eager.tensor([1, 2, 0, 3]), eager.tensor([0, 2]))
    assert tuple(out.shape) == (2, 4)
    np.testing.assert_allclose(out.detach().numpy()[1], bag.weight.detach().numpy()[3], rtol=1e-6)
    assert "mode='sum'" in repr(bag)
    with pytest.raises(ValueError, match="offsets has to be None"):
        bag(eager.tensor([[1, 2]]), eager.tensor([0]))
    with pytest.raises(ValueError, match="offsets has to be a 1D Tensor but got None"):
        bag(eager.tensor([1, 2]))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor"):
        bag(eager.zeros(1, 1, 1, dtype=eager.int64))
    with pytest.raises(NotImplementedError, match="only supported for mode='sum'"):
        EF.embedding_bag(eager.tensor([[1, 2]]), bag.weight, mode="max", per_sample_weights=eager.ones(1, 2))
    with pytest.raises(ValueError, match="must have the same shape as the input"):
        EF.embedding_bag(eager.tensor([[1, 2]]), bag.weight, mode="sum", per_sample_weights=eager.ones(2))
    with pytest.raises(ValueError, match="mode has to be one of sum, mean or max"):
        EF.embedding_bag(eager.tensor([[1, 2]]), bag.weight, mode="min")
    frozen = eager.nn.EmbeddingBag.from_pretrained(eager.tensor(W), mode="max")
    assert not frozen.weight.requires_grad and tuple(frozen(eager.tensor(IDX2)).shape) == (3, 3)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_2d_compiles(mode):
    bag = eager.nn.EmbeddingBag(7, 3, mode=mode, padding_idx=2)
    idx = eager.tensor(IDX2)
    np.testing.assert_allclose(static.compile(bag)(idx).detach().numpy(), bag(idx).detach().numpy(), rtol=1e-6, atol=1e-7)


def test_instance_norm_with_running_stats_compiles_in_eval():
    m = eager.nn.InstanceNorm1d(2, track_running_stats=True)
    x = eager.tensor(RNG.standard_normal((3, 2, 5)).astype(np.float32))
    m(x)
    m.eval()
    np.testing.assert_allclose(static.compile(m)(x).detach().numpy(), m(x).detach().numpy(), rtol=1e-6, atol=1e-7)


def test_embedding_bag_offsets_are_data_so_static_refuses_them_with_a_trace_error():
    bag = eager.nn.EmbeddingBag(5, 3)
    with pytest.raises(static.TraceError):
        static.compile(lambda i, o: bag(i, o))(eager.tensor([1, 2, 3]), eager.tensor([0, 1]))
