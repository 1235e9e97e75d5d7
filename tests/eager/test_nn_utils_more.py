"""nn.Buffer, weight/spectral norm (hook and parametrization forms), parametrize, orthogonal,
fusion, skip_init, stateless and the clip helpers, against PyTorch."""
import warnings

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")
nn = eager.nn


def _e(t):
    return eager.tensor(t.detach().numpy().copy())


def _copy_linear(tl, dtype=None):
    m = nn.Linear(tl.in_features, tl.out_features)
    with eager.no_grad():
        m.weight.copy_(_e(tl.weight))
        m.bias.copy_(_e(tl.bias))
    return m


def _close(a, b, tol=1e-5):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)


def test_buffer_registers_and_respects_persistent():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Buffer(eager.ones(2))
            self.b = nn.Buffer(eager.zeros(1), persistent=False)

    m = M()
    assert list(m.state_dict()) == ["a"]
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert isinstance(m.a, nn.Buffer) and not isinstance(eager.ones(1), nn.Buffer)
    assert not isinstance(m.a, nn.Parameter)


def _train(module, x, steps, lib):
    opt = lib.optim.SGD(module.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        module(x).pow(2).sum().backward()
        opt.step()


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook_matches_torch(dim):
    torch.manual_seed(0)
    tl = torch.nn.Linear(4, 3)
    el = _copy_linear(tl)
    with pytest.warns(FutureWarning):
        torch.nn.utils.weight_norm(tl, dim=dim)
    with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
        nn.utils.weight_norm(el, dim=dim)
    assert list(el.state_dict()) == list(tl.state_dict())
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    _train(tl, torch.tensor(x), 3, torch)
    _train(el, eager.tensor(x), 3, eager)
    for k, v in tl.state_dict().items():
        _close(el.state_dict()[k], v)
    _close(el(eager.tensor(x)), tl(torch.tensor(x)))
    with pytest.raises(RuntimeError, match="Cannot register two weight_norm"), pytest.warns(FutureWarning):
        nn.utils.weight_norm(el, dim=dim)
    nn.utils.remove_weight_norm(el)
    torch.nn.utils.remove_weight_norm(tl)
    assert list(el.state_dict()) == list(tl.state_dict()) and isinstance(el.weight, nn.Parameter)
    _close(el.weight, tl.weight)
    with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
        nn.utils.remove_weight_norm(el)


def _copy_sn_state(em, tm):
    with eager.no_grad():
        for k, v in tm.state_dict().items():
            em.state_dict(keep_vars=True)[k].copy_(_e(v))


def test_spectral_norm_hook_train_eval():
    torch.manual_seed(0)
    tl = torch.nn.utils.spectral_norm(torch.nn.Linear(5, 4), n_power_iterations=2)
    el = nn.utils.spectral_norm(nn.Linear(5, 4), n_power_iterations=2)
    assert list(el.state_dict()) == list(tl.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    _copy_sn_state(el, tl)
    x = np.random.default_rng(1).standard_normal((3, 5)).astype(np.float32)
    _train(tl, torch.tensor(x), 3, torch)
    _train(el, eager.tensor(x), 3, eager)
    for k, v in tl.state_dict().items():
        _close(el.state_dict()[k], v, 1e-4)
    tl.eval()
    el.eval()
    u = el.weight_u.clone()
    _close(el(eager.tensor(x)), tl(torch.tensor(x)), 1e-4)
    _close(el.weight_u, u, 0)  # no power iteration in eval
    nn.utils.remove_spectral_norm(el)
    assert list(el.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="spectral_norm of 'weight' not found"):
        nn.utils.remove_spectral_norm(el)
    with pytest.raises(ValueError, match="n_power_iterations"):
        nn.utils.spectral_norm(nn.Linear(2, 2), n_power_iterations=0)


def test_spectral_norm_conv_transpose_default_dim():
    m = nn.utils.spectral_norm(nn.ConvTranspose2d(3, 5, 2))
    assert m.weight_u.shape == (5,) and m.weight_v.shape == (3 * 4,)


def test_parametrizations_weight_norm_keys_and_training():
    torch.manual_seed(0)
    tl = torch.nn.Linear(4, 3)
    el = _copy_linear(tl)
    torch.nn.utils.parametrizations.weight_norm(tl)
    nn.utils.parametrizations.weight_norm(el)
    assert list(el.state_dict()) == list(tl.state_dict())
    assert type(el).__name__ == "ParametrizedLinear"
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    _train(tl, torch.tensor(x), 3, torch)
    _train(el, eager.tensor(x), 3, eager)
    for k, v in tl.state_dict().items():
        _close(el.state_dict()[k], v)
    _close(el.weight, tl.weight)
    nn.utils.parametrize.remove_parametrizations(el, "weight")
    assert type(el) is nn.Linear and list(el.state_dict()) == ["bias", "weight"]
    _close(el.weight, tl.weight)


def test_parametrizations_spectral_norm_matches_torch():
    torch.manual_seed(0)
    tl = torch.nn.Linear(6, 4)
    torch.nn.utils.parametrizations.spectral_norm(tl)
    el = _copy_linear(torch.nn.Linear(6, 4))
    nn.utils.parametrizations.spectral_norm(el)
    assert list(el.state_dict()) == list(tl.state_dict())
    _copy_sn_state(el, tl)
    x = np.random.default_rng(2).standard_normal((3, 6)).astype(np.float32)
    _train(tl, torch.tensor(x), 2, torch)
    _train(el, eager.tensor(x), 2, eager)
    for k, v in tl.state_dict().items():
        _close(el.state_dict()[k], v, 1e-4)
    tl.eval()
    el.eval()
    _close(el.weight, tl.weight, 1e-4)
    s = np.linalg.svd(el.weight.detach().numpy(), compute_uv=False)[0]
    assert abs(s - 1) < 0.05


class _Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).mT


class _Scale(nn.Module):
    def forward(self, x):
        return 2 * x

    def right_inverse(self, x):
        return x / 2


def test_register_parametrization_chain_cache_and_errors():
    m = nn.Linear(3, 3)
    w0 = m.weight.detach().clone()
    nn.utils.parametrize.register_parametrization(m, "weight", _Symmetric())
    assert nn.utils.parametrize.is_parametrized(m) and nn.utils.parametrize.is_parametrized(m, "weight")
    assert not nn.utils.parametrize.is_parametrized(m, "bias")
    _close(m.parametrizations.weight.original, w0, 0)
    w = m.weight
    _close(w, w.mT, 0)
    nn.utils.parametrize.register_parametrization(m, "weight", _Scale())
    _close(m.weight, 2 * w, 1e-6)
    with nn.utils.parametrize.cached():
        assert m.weight is m.weight
    assert m.weight is not m.weight
    with pytest.raises(RuntimeError, match="_Symmetric does not implement right_inverse"):
        m.weight = eager.eye(3)
    (m(eager.ones(2, 3)).sum()).backward()
    assert m.parametrizations.weight.original.grad is not None
    assert nn.utils.parametrize.type_before_parametrizations(m) is nn.Linear
    with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
        nn.utils.parametrize.register_parametrization(m, "nope", _Scale())
    with pytest.raises(ValueError, match="does not have a parametrization on bias"):
        nn.utils.parametrize.remove_parametrizations(m, "bias")
    nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)
    assert type(m) is nn.Linear and not hasattr(m, "parametrizations")
    nn.utils.parametrize.register_parametrization(m, "bias", _Scale())
    assert list(m.state_dict()) == ["weight", "parametrizations.bias.original"]
    m.bias = eager.tensor([2.0, 4.0, 6.0])  # the setter stores right_inverse(value)
    _close(m.parametrizations.bias.original, eager.tensor([1.0, 2.0, 3.0]), 0)
    _close(m.bias, eager.tensor([2.0, 4.0, 6.0]), 0)


@pytest.mark.parametrize("shape,orth_map", [((4, 4), None), ((5, 3), None), ((3, 5), None), ((4, 4), "cayley"),
                                            ((5, 3), "matrix_exp"), ((5, 3), "householder")])
def test_orthogonal_is_orthogonal_and_trains(shape, orth_map):
    m = nn.Linear(shape[1], shape[0], bias=False)
    nn.utils.parametrizations.orthogonal(m, orthogonal_map=orth_map)
    w = m.weight.detach().numpy().astype(np.float64)
    small = min(shape)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)
    opt = eager.optim.SGD(m.parameters(), lr=0.1)
    m(eager.ones(2, shape[1])).sum().backward()
    opt.step()
    w = m.weight.detach().numpy().astype(np.float64)
    gram = w.T @ w if shape[0] >= shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(small), atol=1e-5)
    assert "parametrizations.weight.original" in m.state_dict()


def test_orthogonal_errors():
    with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
        nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), orthogonal_map="bad")
    with pytest.raises(ValueError, match="Expected a matrix"):
        nn.utils.parametrizations.orthogonal(nn.Linear(3, 3), name="bias")


def test_fuse_conv_bn_and_linear_bn():
    rng = np.random.default_rng(0)
    conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
    with eager.no_grad():
        bn.running_mean.copy_(eager.tensor(rng.standard_normal(4).astype(np.float32)))
        bn.running_var.copy_(eager.tensor(rng.uniform(0.5, 2, 4).astype(np.float32)))
        bn.weight.copy_(eager.tensor(rng.standard_normal(4).astype(np.float32)))
    conv.eval()
    bn.eval()
    x = eager.tensor(rng.standard_normal((2, 3, 6, 6)).astype(np.float32))
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    _close(fused(x), bn(conv(x)), 1e-4)
    lin, bn1 = nn.Linear(5, 4), nn.BatchNorm1d(4)
    lin.eval()
    bn1.eval()
    x = eager.tensor(rng.standard_normal((3, 5)).astype(np.float32))
    _close(nn.utils.fuse_linear_bn_eval(lin, bn1)(x), bn1(lin(x)), 1e-5)
    lin.train()
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        nn.utils.fuse_linear_bn_eval(lin, bn1)


def test_skip_init_stateless_and_clip_helpers():
    m = nn.utils.skip_init(nn.Linear, 4, 3)
    assert isinstance(m, nn.Linear) and m.weight.shape == (3, 4)
    assert nn.Linear(2, 2).weight.abs().sum().item() > 0  # init restored for later instances
    with pytest.raises(RuntimeError, match="'device' arg"):
        nn.utils.skip_init(_Scale)
    lin = nn.Linear(2, 1)
    with pytest.warns(FutureWarning):
        out = nn.utils.stateless.functional_call(lin, {"weight": eager.ones(1, 2), "bias": eager.zeros(1)},
                                                 (eager.ones(1, 2),))
    assert out.item() == 2.0
    assert nn.utils.convert_parameters.parameters_to_vector is nn.utils.parameters_to_vector
    p = nn.Parameter(eager.ones(4))
    p.grad = eager.full((4,), 3.0)
    tp = torch.nn.Parameter(torch.ones(4))
    tp.grad = torch.full((4,), 3.0)
    total = nn.utils.get_total_norm([p.grad])
    _close(total, torch.nn.utils.get_total_norm([tp.grad]))
    nn.utils.clip_grads_with_norm_([p], 1.0, total)
    torch.nn.utils.clip_grads_with_norm_([tp], 1.0, torch.nn.utils.get_total_norm([tp.grad]))
    _close(p.grad, tp.grad)
    assert nn.utils.get_total_norm([]).item() == 0.0
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.get_total_norm([eager.tensor([float("inf")])], error_if_nonfinite=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.utils.get_total_norm([p.grad])


@pytest.mark.parametrize("name,args", [("uniform", ()), ("normal", ()), ("constant", (0.5,)), ("xavier_uniform", ()),
                                       ("xavier_normal", ()), ("kaiming_uniform", ()), ("kaiming_normal", ()),
                                       ("orthogonal", ()), ("sparse", (0.5,))])
def test_init_deprecated_spellings_warn_and_fill(name, args):
    t = eager.zeros(6, 4)
    with pytest.warns(FutureWarning, match=f"`nn.init.{name}` is now deprecated in favor of `nn.init.{name}_`"):
        out = getattr(nn.init, name)(t, *args)
    assert out is t
    if name == "constant":
        assert (t.numpy() == 0.5).all()
    elif name != "sparse":
        assert (t.numpy() != 0).any()


@pytest.mark.parametrize("shape,orth_map,triv", [((4, 4), None, True), ((4, 4), "cayley", True),
                                                 ((5, 3), "householder", False), ((3, 5), "householder", False)])
def test_orthogonal_matches_torch_through_training(shape, orth_map, triv):
    torch.manual_seed(0)
    tl = torch.nn.Linear(shape[1], shape[0], bias=False)
    el = nn.Linear(shape[1], shape[0], bias=False)
    with eager.no_grad():
        el.weight.copy_(_e(tl.weight))
    torch.nn.utils.parametrizations.orthogonal(tl, orthogonal_map=orth_map, use_trivialization=triv)
    nn.utils.parametrizations.orthogonal(el, orthogonal_map=orth_map, use_trivialization=triv)
    assert list(el.state_dict()) == list(tl.state_dict())
    _close(el.weight, tl.weight, 1e-5)
    x = np.random.default_rng(5).standard_normal((2, shape[1])).astype(np.float32)
    _train(tl, torch.tensor(x), 2, torch)
    _train(el, eager.tensor(x), 2, eager)
    _close(el.weight, tl.weight, 1e-5)


def test_parametrized_module_deepcopy_pickle_and_load_state_dict():
    import copy
    import pickle

    m = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    m2 = copy.deepcopy(m)
    assert type(m2).__name__ == "ParametrizedLinear"
    assert m2.parametrizations.weight.original0 is not m.parametrizations.weight.original0
    _close(m2.weight, m.weight, 0)
    with pytest.raises(RuntimeError, match="only supported through state_dict"):
        pickle.dumps(m)
    m3 = nn.utils.parametrizations.weight_norm(nn.Linear(3, 2))
    m3.load_state_dict(m.state_dict())
    _close(m3.weight, m.weight, 0)
