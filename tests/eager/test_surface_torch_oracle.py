"""The PyTorch-programs surface against PyTorch itself, when it is installed (skipped
otherwise): values and gradients (float64) of the new functional ops, layers, losses and
tensor ops, the optimizers' parameters after several steps and the LR schedules."""
from __future__ import annotations

import math

import numpy as np
import pytest

import eager
import eager.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _both(shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    return ([eager.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _check(fe, ft, shapes, seed=0):
    E, T = _both(shapes, seed)
    oe, ot = fe(*E), ft(*T)
    if isinstance(ot, tuple):
        oe, ot = oe[0], ot[0]
    np.testing.assert_allclose(oe.detach().numpy(), ot.detach().numpy(), rtol=1e-6, atol=1e-9)
    assert tuple(oe.shape) == tuple(ot.shape)
    w = np.random.default_rng(seed + 1).standard_normal(tuple(ot.shape))
    (oe * eager.tensor(w)).sum().backward()
    (ot * torch.tensor(w)).sum().backward()
    for a, b in zip(E, T):
        ga = a.grad.numpy() if a.grad is not None else np.zeros(tuple(a.shape))
        gb = b.grad.numpy() if b.grad is not None else np.zeros(tuple(b.shape))
        np.testing.assert_allclose(ga, gb, rtol=1e-6, atol=1e-9)


_IDX = np.random.default_rng(5).integers(0, 6, (3, 4))
_GI = np.random.default_rng(6).integers(0, 4, (3, 2))
_SI = np.array([[0, 3], [1, 2], [3, 0]])
_II = np.array([2, 0, 2])
_T = np.sign(np.random.default_rng(7).standard_normal(4))

CASES = {
    "conv2d": (lambda x, w, b: EF.conv2d(x, w, b, stride=2, padding=1),
               lambda x, w, b: TF.conv2d(x, w, b, stride=2, padding=1), [(2, 3, 7, 6), (4, 3, 3, 3), (4,)]),
    "conv2d_same_groups_dilation": (lambda x, w: EF.conv2d(x, w, padding="same", dilation=2, groups=2),
                                    lambda x, w: TF.conv2d(x, w, padding="same", dilation=2, groups=2),
                                    [(2, 4, 7, 6), (6, 2, 3, 2)]),
    "conv1d": (lambda x, w, b: EF.conv1d(x, w, b, stride=2, padding=2),
               lambda x, w, b: TF.conv1d(x, w, b, stride=2, padding=2), [(2, 3, 9), (5, 3, 4), (5,)]),
    "unfold": (lambda x: EF.unfold(x, 2, padding=1, stride=2), lambda x: TF.unfold(x, 2, padding=1, stride=2),
               [(2, 3, 5, 4)]),
    "max_pool2d": (lambda x: EF.max_pool2d(x, 3, 2, 1), lambda x: TF.max_pool2d(x, 3, 2, 1), [(2, 3, 7, 8)]),
    "max_pool1d": (lambda x: EF.max_pool1d(x, 2), lambda x: TF.max_pool1d(x, 2), [(2, 3, 7)]),
    "avg_pool2d": (lambda x: EF.avg_pool2d(x, 3, 2, 1), lambda x: TF.avg_pool2d(x, 3, 2, 1), [(2, 3, 7, 8)]),
    "avg_pool2d_exclude_pad": (lambda x: EF.avg_pool2d(x, 3, 2, 1, count_include_pad=False),
                               lambda x: TF.avg_pool2d(x, 3, 2, 1, count_include_pad=False), [(2, 3, 7, 8)]),
    "adaptive_avg_pool2d": (lambda x: EF.adaptive_avg_pool2d(x, (3, 5)), lambda x: TF.adaptive_avg_pool2d(x, (3, 5)),
                            [(2, 3, 7, 8)]),
    "adaptive_avg_pool2d_even": (lambda x: EF.adaptive_avg_pool2d(x, 2), lambda x: TF.adaptive_avg_pool2d(x, 2),
                                 [(2, 3, 8, 6)]),
    "adaptive_max_pool2d": (lambda x: EF.adaptive_max_pool2d(x, (3, 5)), lambda x: TF.adaptive_max_pool2d(x, (3, 5)),
                            [(2, 3, 7, 8)]),
    "layer_norm": (lambda x, w, b: EF.layer_norm(x, (5,), w, b), lambda x, w, b: TF.layer_norm(x, (5,), w, b),
                   [(3, 4, 5), (5,), (5,)]),
    "layer_norm_2d": (lambda x: EF.layer_norm(x, (4, 5)), lambda x: TF.layer_norm(x, (4, 5)), [(3, 4, 5)]),
    "group_norm": (lambda x, w, b: EF.group_norm(x, 2, w, b), lambda x, w, b: TF.group_norm(x, 2, w, b),
                   [(3, 4, 5), (4,), (4,)]),
    "batch_norm_train": (lambda x, w, b: EF.batch_norm(x, None, None, w, b, True),
                         lambda x, w, b: TF.batch_norm(x, None, None, w, b, True), [(3, 4, 5, 2), (4,), (4,)]),
    "sdpa_causal": (lambda q, k, v: EF.scaled_dot_product_attention(q, k, v, is_causal=True),
                    lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, is_causal=True),
                    [(2, 3, 5, 4), (2, 3, 5, 4), (2, 3, 5, 4)]),
    "sdpa_float_mask_scale": (lambda q, k, v, m: EF.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
                              lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m, scale=0.3),
                              [(2, 5, 4), (2, 6, 4), (2, 6, 3), (5, 6)]),
    "leaky_relu": (lambda x: EF.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), [(4, 5)]),
    "glu": (EF.glu, TF.glu, [(4, 6)]),
    "normalize": (EF.normalize, TF.normalize, [(4, 5)]),
    "cosine_similarity": (EF.cosine_similarity, TF.cosine_similarity, [(4, 5), (4, 5)]),
    "pairwise_distance": (EF.pairwise_distance, TF.pairwise_distance, [(4, 5), (4, 5)]),
    "pad_negative": (lambda x: EF.pad(x, (-1, 2)), lambda x: TF.pad(x, (-1, 2)), [(2, 3, 4, 5)]),
    "smooth_l1_beta": (lambda a, b: EF.smooth_l1_loss(a, b, beta=0.5), lambda a, b: TF.smooth_l1_loss(a, b, beta=0.5),
                       [(4, 5), (4, 5)]),
    "huber_delta": (lambda a, b: EF.huber_loss(a, b, delta=0.7), lambda a, b: TF.huber_loss(a, b, delta=0.7),
                    [(4, 5), (4, 5)]),
    "bce": (lambda a, b: EF.binary_cross_entropy(a.sigmoid(), b.sigmoid()),
            lambda a, b: TF.binary_cross_entropy(a.sigmoid(), b.sigmoid()), [(4, 5), (4, 5)]),
    "bce_logits_weight": (lambda a, b, w: EF.binary_cross_entropy_with_logits(a, b.sigmoid(), w.detach().abs()),
                          lambda a, b, w: TF.binary_cross_entropy_with_logits(a, b.sigmoid(), w.detach().abs()),
                          [(4, 5), (4, 5), (5,)]),
    "bce_logits_pos_weight": (lambda a, b, w: EF.binary_cross_entropy_with_logits(a, b.sigmoid(),
                                                                                  pos_weight=w.detach().abs()),
                              lambda a, b, w: TF.binary_cross_entropy_with_logits(a, b.sigmoid(),
                                                                                  pos_weight=w.detach().abs()),
                              [(4, 5), (4, 5), (5,)]),
    "kl_div_log_target": (lambda a, b: EF.kl_div(EF.log_softmax(a, 1), EF.log_softmax(b, 1), reduction="batchmean",
                                                 log_target=True),
                          lambda a, b: TF.kl_div(TF.log_softmax(a, 1), TF.log_softmax(b, 1), reduction="batchmean",
                                                 log_target=True), [(4, 5), (4, 5)]),
    "margin_ranking": (lambda a, b: EF.margin_ranking_loss(a, b, eager.tensor(_T), 0.3),
                       lambda a, b: TF.margin_ranking_loss(a, b, torch.tensor(_T), 0.3), [(4,), (4,)]),
    "cosine_embedding": (lambda a, b: EF.cosine_embedding_loss(a, b, eager.tensor(_T), 0.2),
                         lambda a, b: TF.cosine_embedding_loss(a, b, torch.tensor(_T), 0.2), [(4, 5), (4, 5)]),
    "hinge_embedding": (lambda a: EF.hinge_embedding_loss(a, eager.tensor(_T)),
                        lambda a: TF.hinge_embedding_loss(a, torch.tensor(_T)), [(4,)]),
    "triplet": (EF.triplet_margin_loss, TF.triplet_margin_loss, [(4, 5), (4, 5), (4, 5)]),
    "embedding_padding": (lambda w: EF.embedding(eager.tensor(_IDX), w, padding_idx=2),
                          lambda w: TF.embedding(torch.tensor(_IDX), w, padding_idx=2), [(6, 3)]),
    "cumsum": (lambda x: x.cumsum(1), lambda x: x.cumsum(1), [(3, 4)]),
    "cumprod": (lambda x: x.cumprod(0), lambda x: x.cumprod(0), [(3, 4)]),
    "sort_descending": (lambda x: x.sort(1, descending=True), lambda x: x.sort(1, descending=True), [(3, 4)]),
    "topk": (lambda x: x.topk(2, 0), lambda x: x.topk(2, 0), [(3, 4)]),
    "topk_smallest": (lambda x: x.topk(2, largest=False), lambda x: x.topk(2, largest=False), [(3, 4)]),
    "kthvalue": (lambda x: x.kthvalue(2, 1), lambda x: x.kthvalue(2, 1), [(3, 4)]),
    "median": (lambda x: x.median(), lambda x: x.median(), [(3, 4)]),
    "median_dim": (lambda x: x.median(1, keepdim=True), lambda x: x.median(1, keepdim=True), [(3, 4)]),
    "gather": (lambda x: x.gather(1, eager.tensor(_GI)), lambda x: x.gather(1, torch.tensor(_GI)), [(3, 4)]),
    "scatter_add": (lambda x, s: x.scatter_add(1, eager.tensor(_GI), s),
                    lambda x, s: x.scatter_add(1, torch.tensor(_GI), s), [(3, 4), (3, 2)]),
    "scatter": (lambda x, s: x.scatter(1, eager.tensor(_SI), s), lambda x, s: x.scatter(1, torch.tensor(_SI), s),
                [(3, 4), (3, 2)]),
    "scatter_value": (lambda x: x.scatter(1, eager.tensor(_SI), 2.5), lambda x: x.scatter(1, torch.tensor(_SI), 2.5),
                      [(3, 4)]),
    "index_select": (lambda x: x.index_select(0, eager.tensor(_II)), lambda x: x.index_select(0, torch.tensor(_II)),
                     [(3, 4)]),
    "index_add": (lambda x, s: x.index_add(0, eager.tensor(_II), s, alpha=2),
                  lambda x, s: x.index_add(0, torch.tensor(_II), s, alpha=2), [(3, 4), (3, 4)]),
    "flip": (lambda x: x.flip(0, 1), lambda x: x.flip(0, 1), [(3, 4)]),
    "roll": (lambda x: x.roll((1, -1), (0, 1)), lambda x: x.roll((1, -1), (0, 1)), [(3, 4)]),
    "roll_flat": (lambda x: x.roll(2), lambda x: x.roll(2), [(3, 4)]),
    "repeat": (lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3), [(3, 4)]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=1), lambda x: x.repeat_interleave(2, dim=1), [(3, 4)]),
    "repeat_interleave_counts": (lambda x: x.repeat_interleave(eager.tensor([1, 0, 2]), dim=0),
                                 lambda x: x.repeat_interleave(torch.tensor([1, 0, 2]), dim=0), [(3, 4)]),
    "tril": (lambda x: x.tril(-1), lambda x: x.tril(-1), [(2, 3, 4)]),
    "triu": (lambda x: x.triu(1), lambda x: x.triu(1), [(3, 4)]),
    "diag_vector": (lambda x: eager.diag(x, 1), lambda x: torch.diag(x, 1), [(3,)]),
    "diag_matrix": (lambda x: eager.diag(x, -1), lambda x: torch.diag(x, -1), [(3, 4)]),
    "diagonal": (lambda x: x.diagonal(1, 1, 2), lambda x: x.diagonal(1, 1, 2), [(2, 3, 4)]),
    "diag_embed": (eager.diag_embed, torch.diag_embed, [(2, 3)]),
    "trace": (lambda x: x.trace(), lambda x: x.trace(), [(3, 4)]),
    "einsum_bmm": (lambda a, b: eager.einsum("bij,bjk->bik", a, b), lambda a, b: torch.einsum("bij,bjk->bik", a, b),
                   [(2, 3, 4), (2, 4, 5)]),
    "einsum_ellipsis_implicit": (lambda a, b: eager.einsum("...ij,j", a, b), lambda a, b: torch.einsum("...ij,j", a, b),
                                 [(2, 3, 4), (4,)]),
    "einsum_sum_out": (lambda a: eager.einsum("ijk->j", a), lambda a: torch.einsum("ijk->j", a), [(2, 3, 4)]),
    "outer": (eager.outer, torch.outer, [(3,), (4,)]),
    "addmm": (lambda i, a, b: eager.addmm(i, a, b, beta=0.5, alpha=2), lambda i, a, b: torch.addmm(i, a, b, beta=0.5,
                                                                                                     alpha=2),
              [(3, 5), (3, 4), (4, 5)]),
    "baddbmm": (eager.baddbmm, torch.baddbmm, [(2, 3, 5), (2, 3, 4), (2, 4, 5)]),
    "bmm": (eager.bmm, torch.bmm, [(2, 3, 4), (2, 4, 5)]),
    "lerp_tensor_weight": (eager.lerp, torch.lerp, [(3, 4), (3, 4), (4,)]),
    "var_mean": (lambda a: eager.var_mean(a, 1)[0], lambda a: torch.var_mean(a, 1)[0], [(3, 4)]),
    "std_mean": (lambda a: eager.std_mean(a, 1)[1], lambda a: torch.std_mean(a, 1)[1], [(3, 4)]),
    "remainder": (lambda a, b: a % b, lambda a, b: a % b, [(3, 4), (4,)]),
    "fmod": (lambda a, b: a.fmod(b), lambda a, b: a.fmod(b), [(3, 4), (4,)]),
    "masked_select": (lambda a: a.masked_select(a > 0), lambda a: a.masked_select(a > 0), [(3, 4)]),
    "masked_fill": (lambda a: a.masked_fill(a > 0, -1.5), lambda a: a.masked_fill(a > 0, -1.5), [(3, 4)]),
    "clamp_min": (lambda a: a.clamp_min(0.1), lambda a: a.clamp_min(0.1), [(3, 4)]),
    "nan_to_num": (lambda a: a.log().nan_to_num(), lambda a: a.log().nan_to_num(), [(3, 4)]),
}
for _name in ["silu", "mish", "elu", "selu", "celu", "hardtanh", "relu6", "hardsigmoid", "hardswish", "logsigmoid",
              "softsign", "tanhshrink"]:
    CASES[_name] = (getattr(EF, _name), getattr(TF, _name), [(4, 5)])
for _mode in ["constant", "reflect", "replicate", "circular"]:
    CASES["pad_" + _mode] = (lambda x, m=_mode: EF.pad(x, (1, 2, 2, 1), mode=m),
                             lambda x, m=_mode: TF.pad(x, (1, 2, 2, 1), mode=m), [(2, 3, 4, 5)])
for _loss in ["l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss"]:
    for _red in ["mean", "sum", "none"]:
        CASES[f"{_loss}_{_red}"] = (lambda a, b, f=_loss, r=_red: getattr(EF, f)(a, b, reduction=r),
                                    lambda a, b, f=_loss, r=_red: getattr(TF, f)(a, b, reduction=r), [(4, 5), (4, 5)])
for _red in ["sum", "batchmean", "none"]:
    CASES["kl_div_" + _red] = (lambda a, b, r=_red: EF.kl_div(EF.log_softmax(a, 1), EF.softmax(b, 1), reduction=r),
                               lambda a, b, r=_red: TF.kl_div(TF.log_softmax(a, 1), TF.softmax(b, 1), reduction=r),
                               [(4, 5), (4, 5)])


@pytest.mark.parametrize("name", sorted(CASES))
def test_value_and_gradient_match_pytorch(name):
    fe, ft, shapes = CASES[name]
    _check(fe, ft, shapes)


@pytest.mark.parametrize("expr", [
    lambda t, a: t.tensor(a) // 2, lambda t, a: t.tensor(a) % 3, lambda t, a: t.tensor(a) | 6,
    lambda t, a: t.tensor(a) ^ 3, lambda t, a: t.tensor(a) & 3, lambda t, a: t.tensor(a).fmod(3),
    lambda t, a: t.div(t.tensor(a), 2, rounding_mode="trunc"),
    lambda t, a: t.div(t.tensor(a), 2, rounding_mode="floor"),
    lambda t, a: t.tensor(a * 1.0) // 2, lambda t, a: t.div(t.tensor(a * 1.0), 2.0, rounding_mode="trunc"),
    lambda t, a: t.tensor(a).cumsum(0), lambda t, a: t.tensor(a) > 0 | (t.tensor(a) < -5),
    lambda t, a: t.isfinite(t.tensor(a) / 0), lambda t, a: t.isnan(t.tensor(a * 0.0) / 0),
    lambda t, a: t.unique(t.tensor(a), return_inverse=True, return_counts=True)[2],
    lambda t, a: t.tensor(a).nonzero(), lambda t, a: t.nn.functional.one_hot(t.tensor(a).abs() % 4),
    lambda t, a: t.tensor(a).argsort(1, descending=True), lambda t, a: t.tensor(a).tril(),
])
def test_integer_results_match_pytorch(expr):
    a = np.array([[3, -7, 5], [0, 9, -2]])
    with np.errstate(all="ignore"):
        e, t = expr(eager, a), expr(torch, a)
    assert np.array_equal(e.numpy(), t.numpy()), (e, t)
    assert e.dtype.name == str(t.dtype).split(".")[-1]


@pytest.mark.parametrize("name,kw", [
    ("RMSprop", dict(lr=0.01)), ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.01, initial_accumulator_value=0.1)), ("Adadelta", dict(weight_decay=0.01)),
    ("Adamax", dict(lr=0.01)), ("AdamW", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01)), ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)), ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1)),
    ("RAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True)),
])
def test_optimizer_steps_match_pytorch(name, kw):
    assert np.abs(_run(eager, name, kw)[0] - _run(torch, name, kw)[0]).max() < 1e-12


@pytest.mark.parametrize("name,kw", [
    ("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)), ("CosineAnnealingLR", dict(T_max=5, eta_min=0.001)),
    ("LambdaLR", dict(lr_lambda=lambda e: 1 / (e + 1))), ("LinearLR", dict(start_factor=0.2, total_iters=4)),
    ("OneCycleLR", dict(max_lr=0.1, total_steps=12)), ("ReduceLROnPlateau", dict(patience=2, factor=0.5)),
    ("ConstantLR", dict(factor=0.5, total_iters=3)),
    ("CosineAnnealingWarmRestarts", dict(T_0=4)), ("CosineAnnealingWarmRestarts", dict(T_0=2, T_mult=2, eta_min=0.001)),
    ("PolynomialLR", dict(total_iters=6, power=2.0)),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=3)),
    ("CyclicLR", dict(base_lr=0.001, max_lr=0.01, step_size_up=2, step_size_down=3, mode="triangular2")),
    ("CyclicLR", dict(base_lr=[0.001, 0.002], max_lr=0.01, step_size_up=2, mode="exp_range", gamma=0.9,
                      base_momentum=0.7, max_momentum=0.95)),
])
def test_lr_schedules_match_pytorch(name, kw):
    w_e, lr_e = _run(eager, "SGD", dict(lr=0.01, momentum=0.9), name, kw)
    w_t, lr_t = _run(torch, "SGD", dict(lr=0.01, momentum=0.9), name, kw)
    np.testing.assert_allclose(lr_e, lr_t, rtol=1e-12)
    np.testing.assert_allclose(w_e, w_t, rtol=1e-10, atol=1e-12)


def test_cyclic_lr_cycles_adams_beta1_as_pytorch_does():
    kw = dict(base_lr=0.001, max_lr=0.01, step_size_up=3, base_momentum=0.8, max_momentum=0.95)
    w_e, lr_e = _run(eager, "Adam", dict(lr=0.01), "CyclicLR", kw)
    w_t, lr_t = _run(torch, "Adam", dict(lr=0.01), "CyclicLR", kw)
    np.testing.assert_allclose(lr_e, lr_t, rtol=1e-12)
    np.testing.assert_allclose(w_e, w_t, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        eager.optim.lr_scheduler.CyclicLR(eager.optim.Adagrad([eager.ones(1, requires_grad=True)]), 0.001, 0.01)


def test_warm_restarts_take_fractional_epochs_as_pytorch_does():
    def lrs(lib):
        w = lib.tensor(np.ones(3), requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        s = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=3, eta_min=0.01)
        out = []
        for epoch in range(7):
            for batch in range(4):
                s.step(epoch + batch / 4)
                out.append(opt.param_groups[0]["lr"])
        return out, s.last_epoch

    (e, e_epoch), (t, t_epoch) = lrs(eager), lrs(torch)
    np.testing.assert_allclose(e, t, rtol=1e-12)
    assert e_epoch == t_epoch


def _run(lib, opt_name, kw, sched=None, skw=None, steps=12):
    rng = np.random.default_rng(1)
    w0, b0, X = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((8, 3))
    w = lib.tensor(w0, requires_grad=True)
    b = lib.tensor(b0, requires_grad=True)
    opt = getattr(lib.optim, opt_name)([{"params": [w]}, {"params": [b], "lr": 0.05}], **kw)
    sch = getattr(lib.optim.lr_scheduler, sched)(opt, **skw) if sched else None
    lrs = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((lib.tensor(X) @ w + b) ** 2).sum() / 8 + (w * w).sum() * 0.1
        loss.backward()
        opt.step()
        if sch is not None:
            sch.step(1.0) if sched == "ReduceLROnPlateau" else sch.step()
        lrs.append(opt.param_groups[0]["lr"])
    return w.detach().numpy().copy(), np.array(lrs)


def test_sequential_lr_matches_pytorch():
    def lrs(lib):
        w = lib.tensor(np.ones(3), requires_grad=True)
        opt = lib.optim.SGD([w], lr=0.1)
        s1 = lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
        s2 = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        s = lib.optim.lr_scheduler.SequentialLR(opt, [s1, s2], milestones=[3])
        out = []
        for _ in range(8):
            opt.step()
            s.step()
            out.append(opt.param_groups[0]["lr"])
        return out

    np.testing.assert_allclose(lrs(eager), lrs(torch), rtol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
def test_recurrent_layers_match_pytorch_with_the_same_weights(kind):
    eager.manual_seed(0)
    mine = getattr(eager.nn, kind)(4, 5, num_layers=2, batch_first=True, bidirectional=True).double()
    theirs = getattr(torch.nn, kind)(4, 5, num_layers=2, batch_first=True, bidirectional=True).double()
    assert set(mine.state_dict()) == set(theirs.state_dict())
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in mine.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((3, 6, 4))
    out_e, h_e = mine(eager.tensor(x))
    out_t, h_t = theirs(torch.tensor(x))
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    if kind == "LSTM":
        h_e, h_t = h_e[1], h_t[1]
    np.testing.assert_allclose(h_e.detach().numpy(), h_t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_multihead_attention_matches_pytorch_with_the_same_weights():
    eager.manual_seed(0)
    mine = eager.nn.MultiheadAttention(8, 2, batch_first=True).double()
    theirs = torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in mine.state_dict().items()})
    rng = np.random.default_rng(0)
    q, kv = rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 6, 8))
    pad = np.zeros((2, 6), bool)
    pad[1, 4:] = True
    mask = np.triu(np.ones((5, 6), bool), 2)
    out_e, w_e = mine(eager.tensor(q), eager.tensor(kv), eager.tensor(kv), key_padding_mask=eager.tensor(pad),
                      attn_mask=eager.tensor(mask))
    out_t, w_t = theirs(torch.tensor(q), torch.tensor(kv), torch.tensor(kv), key_padding_mask=torch.tensor(pad),
                        attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(w_e.detach().numpy(), w_t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_batchnorm_module_running_stats_match_pytorch():
    mine, theirs = eager.nn.BatchNorm2d(3, momentum=0.2).double(), torch.nn.BatchNorm2d(3, momentum=0.2).double()
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = rng.standard_normal((4, 3, 5, 5)) * 2 + 1
        np.testing.assert_allclose(mine(eager.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-10, atol=1e-12)
    for key in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_allclose(mine.state_dict()[key].numpy(), theirs.state_dict()[key].numpy(), rtol=1e-12)
    mine.eval()
    theirs.eval()
    x = rng.standard_normal((2, 3, 5, 5))
    np.testing.assert_allclose(mine(eager.tensor(x)).detach().numpy(), theirs(torch.tensor(x)).detach().numpy(),
                               rtol=1e-10)


def test_default_collate_matches_pytorch_structure():
    from eager.utils.data import default_collate  # noqa: PLC0415

    batch = [{"x": np.ones(2, np.float32) * i, "y": i, "z": (float(i), "s")} for i in range(3)]
    mine = default_collate(batch)
    theirs = torch.utils.data.default_collate(batch)
    assert type(mine["z"]) is type(theirs["z"])  # a list, as PyTorch gives for tuples
    np.testing.assert_array_equal(mine["x"].numpy(), theirs["x"].numpy())
    assert mine["y"].dtype.name == str(theirs["y"].dtype).split(".")[-1]
    assert mine["z"][0].dtype.name == str(theirs["z"][0].dtype).split(".")[-1]
    assert mine["z"][1] == theirs["z"][1]


def test_gpt_workload_step_matches_pytorch():
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "workloads"))
    import w5_gpt  # noqa: PLC0415

    model = w5_gpt.make_model()
    model.eval()  # dropout masks are random streams of each library
    theirs = w5_gpt.peer_torch()()
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in model.state_dict().items()})
    theirs.eval()
    batch = w5_gpt.make_batch(0)
    opt = w5_gpt.make_optimizer(model)
    topt = torch.optim.AdamW(theirs.parameters(), lr=w5_gpt.LR, weight_decay=w5_gpt.WEIGHT_DECAY)
    tb = tuple(torch.from_numpy(t.numpy()) for t in batch)
    for _ in range(3):
        mine = w5_gpt.train_step(model, opt, batch)
        topt.zero_grad()
        logits = theirs(tb[0])
        loss = TF.cross_entropy(logits.reshape(-1, logits.shape[-1]), tb[1].reshape(-1))
        loss.backward()
        topt.step()
        assert math.isclose(mine, loss.item(), rel_tol=1e-5)


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=(2, 3), stride=1, dilation=2)])
def test_max_pool_indices_match_pytorch(kw):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 8))
    _, mine = EF.max_pool2d(eager.tensor(x), return_indices=True, **kw)
    _, theirs = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(mine.numpy(), theirs.numpy())


@pytest.mark.parametrize("norm_first", [False, True])
def test_transformer_encoder_and_decoder_match_pytorch(norm_first):
    eager.manual_seed(0)
    enc = eager.nn.TransformerEncoder(eager.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                                       norm_first=norm_first), 2).double().eval()
    tenc = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True,
                                                                        norm_first=norm_first), 2,
                                       enable_nested_tensor=False).double().eval()
    tenc.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in enc.state_dict().items()})
    rng = np.random.default_rng(0)
    x, mask = rng.standard_normal((2, 5, 8)), np.triu(np.ones((5, 5), bool), 1)
    np.testing.assert_allclose(enc(eager.tensor(x), mask=eager.tensor(mask)).detach().numpy(),
                               tenc(torch.tensor(x), mask=torch.tensor(mask)).detach().numpy(), rtol=1e-10, atol=1e-12)
    dec = eager.nn.TransformerDecoder(eager.nn.TransformerDecoderLayer(8, 2, 16, norm_first=norm_first), 2).double()
    tdec = torch.nn.TransformerDecoder(torch.nn.TransformerDecoderLayer(8, 2, 16, norm_first=norm_first), 2).double()
    dec.eval()
    tdec.eval()
    tdec.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in dec.state_dict().items()})
    t, mem = rng.standard_normal((4, 2, 8)), rng.standard_normal((5, 2, 8))
    np.testing.assert_allclose(dec(eager.tensor(t), eager.tensor(mem)).detach().numpy(),
                               tdec(torch.tensor(t), torch.tensor(mem)).detach().numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("kw", [dict(kernel_size=3, stride=2), dict(kernel_size=2, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)])
@pytest.mark.parametrize("shape", [(2, 3, 7, 8), (1, 2, 6, 5)])
def test_ceil_mode_pooling_matches_pytorch(kw, shape):
    _check(lambda x: EF.avg_pool2d(x, ceil_mode=True, **kw), lambda x: TF.avg_pool2d(x, ceil_mode=True, **kw), [shape])
    kw = {k: v for k, v in kw.items() if k != "count_include_pad"}
    _check(lambda x: EF.max_pool2d(x, ceil_mode=True, **kw), lambda x: TF.max_pool2d(x, ceil_mode=True, **kw), [shape])


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1, output_padding=1), dict(stride=(1, 2), groups=2, dilation=2)])
def test_conv_transpose2d_matches_pytorch(kw):
    _check(lambda x, w, b: EF.conv_transpose2d(x, w, b, **kw), lambda x, w, b: TF.conv_transpose2d(x, w, b, **kw),
           [(2, 4, 5, 6), (4, 3 if "groups" not in kw else 2, 3, 3), (3 if "groups" not in kw else 4,)])


@pytest.mark.parametrize("kw", [dict(scale_factor=2), dict(size=(8, 4)), dict(scale_factor=1.5, mode="bilinear"),
                                dict(size=(9, 3), mode="bilinear", align_corners=True),
                                dict(scale_factor=(0.5, 2.5), mode="bilinear")])
def test_interpolate_matches_pytorch(kw):
    _check(lambda x: EF.interpolate(x, **kw), lambda x: TF.interpolate(x, **kw), [(2, 3, 5, 7)])
