"""eager.nn: Module bookkeeping, Parameter, layers and nn.functional against NumPy."""
from __future__ import annotations

import copy
import math
import pickle

import numpy as np
import pytest

import eager
from eager import nn
from eager.nn import functional as F


def _np(t: eager.Tensor) -> np.ndarray:
    return np.asarray(t.detach())


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = nn.Parameter(eager.ones(3))
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        self.register_buffer("count", eager.zeros(1))
        self.plain = eager.ones(2)  # a plain tensor attribute is not registered

    def forward(self, x):
        return self.body(x * self.scale)


# -- Parameter ------------------------------------------------------------------------------------
def test_parameter_is_a_leaf_tensor_requiring_grad_and_aliases_its_data():
    t = eager.zeros(2)
    p = nn.Parameter(t)
    assert isinstance(p, eager.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    with eager.no_grad():
        t.add_(1.0)
    assert p.tolist() == [1.0, 1.0]  # shares memory, as torch.nn.Parameter(t) does
    assert not nn.Parameter(eager.zeros(2), requires_grad=False).requires_grad


def test_parameter_repr_and_integer_refusal():
    p = nn.Parameter(eager.tensor([1.0, 2.0]))
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    with pytest.raises(RuntimeError, match="floating point"):
        nn.Parameter(eager.tensor([1, 2]))


def test_operations_on_parameters_give_plain_tensors():
    p = nn.Parameter(eager.tensor([1.0, 2.0]))
    y = p * 2
    assert type(y) is eager.Tensor and y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    assert p.grad.tolist() == [2.0, 2.0]


def test_parameter_deepcopy_and_pickle_keep_the_type():
    p = nn.Parameter(eager.tensor([1.0, 2.0]))
    for clone in (copy.deepcopy(p), pickle.loads(pickle.dumps(p))):
        assert type(clone) is nn.Parameter and clone.requires_grad and clone.tolist() == [1.0, 2.0]
        with eager.no_grad():
            clone.mul_(0.0)
        assert p.tolist() == [1.0, 2.0]


# -- Module registration and traversal ---------------------------------------------------------------
def test_named_parameters_follow_registration_order_with_dotted_names():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias"]
    assert all(isinstance(p, nn.Parameter) for p in net.parameters())
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in net.named_buffers()] == ["count"]
    assert "plain" not in dict(net.named_parameters()) and net.plain.tolist() == [1.0, 1.0]


def test_shared_parameters_and_modules_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, nn.Tanh(), lin)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]


def test_children_and_modules():
    net = Net()
    assert [type(m).__name__ for m in net.children()] == ["Sequential"]
    assert [type(m).__name__ for m in net.modules()] == ["Net", "Sequential", "Linear", "ReLU", "Linear"]
    assert net.get_submodule("body.2") is net.body[2]


def test_setattr_guards():
    class Early(nn.Module):
        def __init__(self) -> None:
            self.w = nn.Parameter(eager.zeros(1))  # before super().__init__()

    with pytest.raises(AttributeError, match="before Module.__init__"):
        Early()
    net = Net()
    with pytest.raises(TypeError, match="cannot assign 'Tensor' as parameter 'scale'"):
        net.scale = eager.ones(3)
    net.scale = None
    assert [n for n, _ in net.named_parameters(recurse=False)] == []
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'missing'"):
        net.missing  # noqa: B018
    del net.body
    assert list(net.children()) == []


def test_reassigning_a_name_moves_it_between_registries():
    net = Net()
    net.count = nn.Parameter(eager.zeros(1))  # was a buffer, now a parameter
    assert "count" in dict(net.named_parameters()) and "count" not in dict(net.named_buffers())


def test_train_and_eval_reach_every_submodule():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net and not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())


def test_dropout_acts_only_in_training_mode():
    eager.manual_seed(0)
    drop = nn.Dropout(0.5)
    x = eager.ones(1000)
    y = drop(x)
    values = set(np.unique(_np(y)).tolist())
    assert values == {0.0, 2.0} and 300 < int((y == 0).sum()) < 700
    drop.eval()
    assert drop(x) is x


def test_zero_grad_set_to_none_and_in_place():
    net = Net()
    net(eager.randn(5, 3)).sum().backward()
    grads = [p.grad for p in net.parameters()]
    assert all(g is not None for g in grads)
    net.zero_grad(set_to_none=False)
    assert all(p.grad is g for p, g in zip(net.parameters(), grads))  # same tensors, zeroed in place
    assert all(float(g.abs().sum()) == 0.0 for g in grads)
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_requires_grad_switches_all_parameters():
    net = Net().requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


# -- state_dict --------------------------------------------------------------------------------------
def test_state_dict_round_trip():
    a, b = Net(), Net()
    state = a.state_dict()
    assert list(state) == ["scale", "count", "body.0.weight", "body.0.bias", "body.2.weight", "body.2.bias"]
    assert all(not v.requires_grad for v in state.values())  # detached copies of the values
    weight_before = b.body[0].weight
    result = b.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.body[0].weight is weight_before  # loaded in place: optimizers keep working
    x = eager.randn(4, 3)
    np.testing.assert_array_equal(_np(a(x)), _np(b(x)))


def test_load_state_dict_reports_missing_unexpected_and_size_mismatch():
    net = Net()
    state = net.state_dict()
    state.pop("scale")
    state["extra"] = eager.zeros(1)
    with pytest.raises(RuntimeError, match='Unexpected key\\(s\\) in state_dict: "extra"') as info:
        net.load_state_dict(state)
    assert 'Missing key(s) in state_dict: "scale"' in str(info.value)
    result = net.load_state_dict(state, strict=False)
    assert result.missing_keys == ["scale"] and result.unexpected_keys == ["extra"]
    bad = Net().state_dict()
    bad["body.0.bias"] = eager.zeros(5)
    with pytest.raises(RuntimeError, match="size mismatch for body.0.bias"):
        net.load_state_dict(bad)


def test_non_persistent_buffers_stay_out_of_state_dict():
    m = nn.Module()
    m.register_buffer("keep", eager.zeros(1))
    m.register_buffer("scratch", eager.zeros(1), persistent=False)
    assert list(m.state_dict()) == ["keep"]


def test_to_double_keeps_parameter_objects():
    net = Net()
    params = list(net.parameters())
    net.to(eager.float64)
    assert all(a is b for a, b in zip(net.parameters(), params))
    assert all(p.dtype is eager.float64 for p in net.parameters())
    assert net(eager.randn(2, 3, dtype=eager.float64)).dtype is eager.float64


# -- repr --------------------------------------------------------------------------------------------
def test_repr_matches_pytorch():
    model = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 1, bias=False), nn.Sigmoid()))
    assert repr(model) == (
        "Sequential(\n"
        "  (0): Linear(in_features=2, out_features=8, bias=True)\n"
        "  (1): ReLU()\n"
        "  (2): Sequential(\n"
        "    (0): Linear(in_features=8, out_features=1, bias=False)\n"
        "    (1): Sigmoid()\n"
        "  )\n"
        ")"
    )
    assert repr(nn.GELU()) == "GELU(approximate='none')"


# -- layers ------------------------------------------------------------------------------------------
def test_linear_init_bounds_forward_and_gradients():
    eager.manual_seed(0)
    lin = nn.Linear(16, 5)
    bound = 1 / math.sqrt(16)
    w, b = _np(lin.weight), _np(lin.bias)
    assert w.shape == (5, 16) and b.shape == (5,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.8 * bound  # uniform over the whole range, not a narrow one
    x = eager.randn(7, 16)
    y = lin(x)
    np.testing.assert_allclose(_np(y), _np(x) @ w.T + b, rtol=1e-5, atol=1e-6)
    g = np.random.default_rng(0).standard_normal((7, 5)).astype(np.float32)
    y.backward(eager.tensor(g))
    np.testing.assert_allclose(_np(lin.weight.grad), g.T @ _np(x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(_np(lin.bias.grad), g.sum(0), rtol=1e-5, atol=1e-5)


def test_linear_without_bias_and_on_a_single_vector():
    lin = nn.Linear(3, 2, bias=False)
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]
    assert tuple(lin(eager.ones(3)).shape) == (2,)


def test_sequential_container_protocol():
    seq = nn.Sequential(nn.Linear(2, 3), nn.Tanh())
    assert len(seq) == 2 and isinstance(seq[-1], nn.Tanh)
    seq.append(nn.Linear(3, 1))
    assert [type(m).__name__ for m in seq] == ["Linear", "Tanh", "Linear"]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    assert tuple(seq(eager.randn(4, 2)).shape) == (4, 1)
    with pytest.raises(IndexError):
        seq[3]  # noqa: B018


def test_module_list_registers_its_items():
    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(2, 2) for _ in range(3))

    assert len(list(Stack().parameters())) == 6


def test_forward_hook_can_replace_the_output():
    lin = nn.Linear(2, 2)
    handle = lin.register_forward_hook(lambda module, inputs, out: out * 0)
    assert float(lin(eager.ones(2)).abs().sum()) == 0.0
    handle.remove()
    assert float(lin(eager.ones(2)).abs().sum()) != 0.0


def test_missing_forward_is_reported():
    with pytest.raises(NotImplementedError, match="missing the required \"forward\""):
        nn.Module()(eager.ones(1))


# -- functional ---------------------------------------------------------------------------------------
X = np.array([[0.5, -1.0, 2.0], [-0.3, 0.0, 1.5], [3.0, -2.0, 0.1], [0.0, 0.2, -0.7]])
T = np.array([2, 0, 1, 2])


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def test_activations_match_numpy():
    x = eager.tensor(X, dtype=eager.float64)
    np.testing.assert_allclose(_np(F.relu(x)), np.maximum(X, 0))
    np.testing.assert_allclose(_np(F.tanh(x)), np.tanh(X))
    np.testing.assert_allclose(_np(F.sigmoid(x)), 1 / (1 + np.exp(-X)))
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(_np(F.gelu(x)), 0.5 * X * (1 + erf(X / math.sqrt(2))), rtol=1e-12)
    tanh_gelu = 0.5 * X * (1 + np.tanh(math.sqrt(2 / math.pi) * (X + 0.044715 * X ** 3)))
    np.testing.assert_allclose(_np(F.gelu(x, approximate="tanh")), tanh_gelu, rtol=1e-12)
    np.testing.assert_allclose(_np(F.softmax(x, dim=1)), _softmax(X, 1), rtol=1e-12)
    np.testing.assert_allclose(_np(F.log_softmax(x, dim=0)), np.log(_softmax(X, 0)), rtol=1e-12)
    np.testing.assert_allclose(_np(nn.Softmax(dim=1)(x)), _softmax(X, 1), rtol=1e-12)


def test_softmax_without_dim_warns_like_pytorch():
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        out = F.softmax(eager.tensor(X))
    np.testing.assert_allclose(_np(out), _softmax(X, 1), rtol=1e-6)


def test_relu_module_in_place():
    x = eager.tensor([-1.0, 2.0])
    assert nn.ReLU(inplace=True)(x) is x and x.tolist() == [0.0, 2.0]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_values_and_gradient(reduction):
    x = eager.tensor(X, dtype=eager.float64, requires_grad=True)
    loss = F.cross_entropy(x, eager.tensor(T), reduction=reduction)
    per_sample = -np.log(_softmax(X, 1))[np.arange(4), T]
    expected = {"mean": per_sample.mean(), "sum": per_sample.sum(), "none": per_sample}[reduction]
    np.testing.assert_allclose(_np(loss), expected, rtol=1e-12)
    loss.sum().backward()
    grad = _softmax(X, 1) - np.eye(3)[T]
    np.testing.assert_allclose(_np(x.grad), grad / (4 if reduction == "mean" else 1), rtol=1e-10, atol=1e-12)


def test_cross_entropy_builds_on_registry_ops():
    x = eager.tensor(X, requires_grad=True)
    loss = F.cross_entropy(x, eager.tensor(T))
    names, stack = set(), [loss.grad_fn]
    while stack:
        node = stack.pop()
        names.add(node.name())
        stack.extend(n for n, _ in node.next_functions if n is not None)
    assert "LogSoftmaxBackward0" in names


def test_cross_entropy_weight_and_ignore_index():
    w = np.array([0.2, 1.0, 3.0])
    target = np.array([2, -100, 1, 0])
    loss = F.cross_entropy(eager.tensor(X, dtype=eager.float64), eager.tensor(target),
                           weight=eager.tensor(w, dtype=eager.float64))
    logp = np.log(_softmax(X, 1))
    keep = target != -100
    rows, cls = np.arange(4)[keep], target[keep]
    expected = -(w[cls] * logp[rows, cls]).sum() / w[cls].sum()
    np.testing.assert_allclose(float(loss), expected, rtol=1e-12)
    none = F.cross_entropy(eager.tensor(X), eager.tensor(target), reduction="none")
    assert float(none[1]) == 0.0


def test_cross_entropy_label_smoothing_and_probability_targets():
    eps = 0.1
    loss = F.cross_entropy(eager.tensor(X, dtype=eager.float64), eager.tensor(T), label_smoothing=eps)
    logp = np.log(_softmax(X, 1))
    expected = (1 - eps) * -logp[np.arange(4), T].mean() + eps / 3 * -logp.sum(1).mean()
    np.testing.assert_allclose(float(loss), expected, rtol=1e-12)
    probs = _softmax(np.arange(12.0).reshape(4, 3), 1)
    soft = F.cross_entropy(eager.tensor(X, dtype=eager.float64), eager.tensor(probs))
    np.testing.assert_allclose(float(soft), -(probs * logp).sum(1).mean(), rtol=1e-12)


def test_cross_entropy_on_spatial_logits_matches_the_flattened_form():
    rng = np.random.default_rng(1)
    logits = rng.standard_normal((2, 3, 4))  # (N, C, d1)
    target = rng.integers(0, 3, (2, 4))
    loss = F.cross_entropy(eager.tensor(logits), eager.tensor(target), reduction="none")
    flat = F.cross_entropy(eager.tensor(logits.transpose(0, 2, 1).reshape(-1, 3)), eager.tensor(target.reshape(-1)),
                           reduction="none")
    assert tuple(loss.shape) == (2, 4)
    np.testing.assert_allclose(_np(loss).reshape(-1), _np(flat), rtol=1e-6)


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.cross_entropy(eager.tensor(X), eager.tensor(T), reduction="avg")
    with pytest.raises(IndexError, match="Target out of bounds"):
        F.cross_entropy(eager.tensor(X), eager.tensor([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="batch_size"):
        F.cross_entropy(eager.tensor(X), eager.tensor([0, 1]))


def test_cross_entropy_passes_gradcheck():
    x = eager.tensor(X, dtype=eager.float64, requires_grad=True)
    w = eager.tensor([0.5, 1.0, 2.0], dtype=eager.float64)
    assert eager.autograd.gradcheck(lambda t: F.cross_entropy(t, eager.tensor(T), weight=w, label_smoothing=0.2), (x,))


def test_mse_loss_value_gradient_and_module():
    x = eager.tensor([1.0, 2.0, 4.0], requires_grad=True)
    t = eager.tensor([0.0, 2.0, 2.0])
    loss = F.mse_loss(x, t)
    assert float(loss) == pytest.approx(5.0 / 3)
    loss.backward()
    np.testing.assert_allclose(_np(x.grad), 2 * np.array([1.0, 0.0, 2.0]) / 3, rtol=1e-6)
    assert float(nn.MSELoss(reduction="sum")(x, t)) == pytest.approx(5.0)
    assert nn.MSELoss(reduction="none")(x, t).tolist() == [1.0, 0.0, 4.0]


def test_loss_modules_agree_with_functional():
    x, t = eager.tensor(X), eager.tensor(T)
    assert float(nn.CrossEntropyLoss()(x, t)) == pytest.approx(float(F.cross_entropy(x, t)))
    assert float(nn.NLLLoss()(F.log_softmax(x, 1), t)) == pytest.approx(float(F.cross_entropy(x, t)))


def test_linear_functional_and_bce_with_logits():
    x, w, b = eager.tensor(X), eager.tensor(np.ones((2, 3))), eager.tensor([1.0, -1.0])
    np.testing.assert_allclose(_np(F.linear(x, w, b)), X @ np.ones((3, 2)) + [1.0, -1.0], rtol=1e-6)
    logits, target = np.array([-2.0, 0.5, 3.0]), np.array([0.0, 1.0, 1.0])
    s = 1 / (1 + np.exp(-logits))
    expected = -(target * np.log(s) + (1 - target) * np.log(1 - s)).mean()
    got = F.binary_cross_entropy_with_logits(eager.tensor(logits, dtype=eager.float64), eager.tensor(target))
    np.testing.assert_allclose(float(got), expected, rtol=1e-12)
