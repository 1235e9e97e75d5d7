"""The fast path of a compiled call (the last call's signature, checked in generated code)
checks everything the full key checks: each change below must take the full path and give
eager's answer, and a repeated call must not compute the key or walk the module tree."""
import numpy as np
import pytest

import eager
import eager.nn as nn
import static
import static.jit.lookup
from eager.nn.module import structure_version
from static.signature import MISS

RNG = np.random.default_rng(0)


def _n(t):
    return t.detach().numpy()


def _t(*shape, dtype=np.float32, requires_grad=False):
    return eager.tensor(RNG.standard_normal(shape).astype(dtype), requires_grad=requires_grad)


def f(a, b):
    return (a * b + 1.0).sum()


def g(a, b):
    a.add_(b)  # an in-place update of an argument: how it aliases the other one matters
    return a * 2.0


@pytest.fixture
def keys(monkeypatch):
    """Counts the calls that computed the full cache key (the slow path)."""
    calls = []
    real = static.jit.lookup.call_key  # looked up there: the cache's lookup computes the key

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(static.jit.lookup, "call_key", counting)
    return calls


def test_a_repeated_call_does_not_compute_the_key(keys):
    c = static.compile(f, backend="numpy")
    a, b = _t(3), _t(3)
    c(a, b)
    assert len(keys) == 1
    for _ in range(5):
        out = c(a, b)
    assert len(keys) == 1
    np.testing.assert_allclose(out.numpy(), (a.numpy() * b.numpy() + 1).sum(), rtol=1e-6)
    c(_t(3), _t(3))  # other tensors of the same signature: still the fast path
    assert len(keys) == 1


@pytest.mark.parametrize("change", ["shape", "dtype", "requires_grad", "kind", "number", "count"])
def test_each_part_of_the_signature_is_checked(keys, change):
    c = static.compile(f, backend="numpy")
    a, b = _t(3), _t(3)
    c(a, b)
    c(a, b)
    new = {"shape": (_t(4), _t(4)), "dtype": (_t(3, dtype=np.float64), _t(3, dtype=np.float64)),
           "requires_grad": (_t(3, requires_grad=True), b), "kind": (a.numpy(), b.numpy()),
           "number": (a, 2.0), "count": (a,)}[change]
    if change == "count":
        with pytest.raises(TypeError):
            c(*new)
        return
    out = c(*new)
    assert len(keys) == 2  # the fast path refused it
    x, y = (v.detach().numpy() if isinstance(v, eager.Tensor) else np.asarray(v) for v in new)
    got = out.detach().numpy() if isinstance(out, eager.Tensor) else np.asarray(out)
    np.testing.assert_allclose(got, (x * y + 1).sum(), rtol=1e-6)
    if change == "requires_grad":
        out.backward()
        np.testing.assert_allclose(new[0].grad.numpy(), b.numpy())


def test_grad_mode_is_checked(keys):
    c = static.compile(f, backend="numpy")
    a, b = _t(3, requires_grad=True), _t(3)
    c(a, b)
    with eager.no_grad():
        out = c(a, b)
    assert not out.requires_grad
    assert c(a, b).requires_grad


def test_the_same_tensor_twice_and_overlapping_views_are_checked():
    c = static.compile(g, backend="numpy")
    a, b = _t(4), _t(4)
    c(a, b)
    c(a, b)  # the fast path
    x = _t(4)
    x_eager = x.detach().clone()
    out = c(x, x)  # the same tensor twice: a + a, as eager
    expected = g(x_eager, x_eager)
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.numpy(), x_eager.numpy(), rtol=1e-6)
    base = _t(5)
    base_eager = base.detach().clone()
    c(a, b)
    out = c(base[0:4], base[1:5])  # overlapping views, one updated in place: eager's semantics
    expected = g(base_eager[0:4], base_eager[1:5])
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-6)
    np.testing.assert_allclose(base.numpy(), base_eager.numpy(), rtol=1e-6)


def test_views_of_distinct_buffers_take_the_fast_path(keys):
    c = static.compile(f, backend="numpy")
    big_a, big_b = _t(2, 3), _t(2, 3)
    c(big_a[0], big_b[1])
    c(big_a[1], big_b[0])
    assert len(keys) == 1
    halves = _t(6)
    out = c(halves[:3], halves[3:])  # one buffer: the full path decides (they do not overlap)
    assert len(keys) == 2
    np.testing.assert_allclose(out.numpy(), (halves.numpy()[:3] * halves.numpy()[3:] + 1).sum(), rtol=1e-6)


def test_a_call_while_tracing_is_inlined():
    inner = static.compile(f, backend="numpy")
    a, b = _t(3), _t(3)
    inner(a, b)
    inner(a, b)
    outer = static.compile(lambda x, y: inner(x, y) * 3.0, backend="numpy")
    np.testing.assert_allclose(outer(a, b).numpy(), 3 * (a.numpy() * b.numpy() + 1).sum(), rtol=1e-6)


SCALE = 2.0


def h(a, b):
    return (a * b).sum() * SCALE


def test_a_guarded_global_is_checked_on_the_fast_path():
    global SCALE
    c = static.compile(h, backend="numpy")
    a, b = _t(3), _t(3)
    c(a, b)
    c(a, b)
    SCALE = 3.0
    try:
        np.testing.assert_allclose(c(a, b).numpy(), 3.0 * (a.numpy() * b.numpy()).sum(), rtol=1e-6)
    finally:
        SCALE = 2.0


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.drop = nn.Dropout(0.5)
        self.scale = 2.0

    def forward(self, x):
        return self.drop(self.fc(x)) * self.scale


def _warm_compiled_net():
    """A Net in eval mode, compiled and called twice (traced, then on the fast path), and its input."""
    eager.manual_seed(0)
    model = Net().eval()
    cm = static.compile(model, backend="numpy")
    x = _t(5, 4)
    cm(x)
    cm(x)
    return model, cm, x


def test_a_compiled_module_does_not_walk_its_tree_per_call(monkeypatch):
    model, cm, x = _warm_compiled_net()
    walks = []
    real = nn.Module.named_modules

    def counting(self, *args, **kwargs):
        walks.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(nn.Module, "named_modules", counting)
    for _ in range(5):
        out = cm(x)
    assert walks == []
    np.testing.assert_allclose(_n(out), _n(model(x)), rtol=1e-6)


def test_module_changes_are_seen_by_the_fast_path():
    model, cm, x = _warm_compiled_net()
    model.scale = 5.0  # a guarded attribute
    np.testing.assert_allclose(_n(cm(x)), _n(model(x)), rtol=1e-6)
    model.fc.weight = nn.Parameter(_t(3, 4))  # a replaced parameter of the same shape
    np.testing.assert_allclose(_n(cm(x)), _n(model(x)), rtol=1e-6)
    model.fc = nn.Linear(4, 3)  # a replaced submodule
    np.testing.assert_allclose(_n(cm(x)), _n(model(x)), rtol=1e-6)
    model.fc._parameters["bias"] = nn.Parameter(_t(3))  # the registry written directly
    np.testing.assert_allclose(_n(cm(x)), _n(model(x)), rtol=1e-6)
    model.fc.weight.data = _t(3, 4)  # new data of the same parameter
    np.testing.assert_allclose(_n(cm(x)), _n(model(x)), rtol=1e-6)
    model.train()  # the mode: dropout now draws
    eager.manual_seed(3)
    got = _n(cm(x))
    eager.manual_seed(3)
    np.testing.assert_allclose(got, _n(model(x)), rtol=1e-6)
    model.eval()
    np.testing.assert_allclose(_n(cm(x)), _n(model(x)), rtol=1e-6)


class Configured(nn.Module):
    def __init__(self):
        super().__init__()
        self.cfg = {"scale": 2.0}

    def forward(self, x):
        return x * self.cfg["scale"]


def test_a_dict_attribute_changed_in_place_is_seen():
    model = Configured()
    cm = static.compile(model, backend="numpy")
    x = _t(3)
    cm(x)
    cm(x)
    model.cfg["scale"] = 5.0  # no assignment to the module: the structure version stays
    np.testing.assert_allclose(_n(cm(x)), 5.0 * x.numpy(), rtol=1e-6)


def test_the_structure_version_moves_with_every_module_change():
    model = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    changes = [lambda: model.train(False), lambda: setattr(model[0], "in_features", 3),
               lambda: model.__delitem__(1), lambda: model.append(nn.Tanh()),
               lambda: model[0].register_buffer("b", eager.zeros(2)),
               lambda: model[0]._parameters.pop("bias"), lambda: model.to(eager.float64)]
    for change in changes:
        before = structure_version()
        change()
        assert structure_version() != before


def test_functional_call_is_seen_by_a_compiled_module():
    eager.manual_seed(0)
    model = nn.Linear(4, 3)
    cm = static.compile(model, backend="numpy")
    x = _t(2, 4)
    cm(x)
    cm(x)
    other = {"weight": _t(3, 4), "bias": _t(3)}
    np.testing.assert_allclose(_n(static.functional_call(cm.__wrapped__, other, (x,))),
                               x.numpy() @ other["weight"].numpy().T + other["bias"].numpy(), rtol=1e-5)
    np.testing.assert_allclose(_n(cm(x)), _n(model(x)), rtol=1e-6)


def test_the_fast_call_answers_miss_for_another_signature():
    c = static.compile(f, backend="numpy")
    a, b = _t(3), _t(3)
    c(a, b)
    assert c._fast((a, b)) is not MISS
    assert c._fast((a, _t(2))) is MISS
    assert c._fast((a, b, a)) is MISS
