"""A compiled function watches the Python state its trace read: each change below is seen on
the next call (a retrace, or another entry kept for that state), and the call computes what
eager computes, in the NumPy and native backends."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from eager import nn

BACKENDS = ["numpy", "native"]
X = eager.from_numpy(np.linspace(-1.5, 2.0, 12, dtype=np.float32).reshape(3, 4))


def same(compiled_out, eager_out) -> None:
    np.testing.assert_allclose(np.asarray(compiled_out._data), np.asarray(eager_out._data), rtol=1e-6, atol=1e-6)


ACT = F.tanh
LIST = [1.0, 2.0]
CFG = {"a": {"b": {"c": {"d": {"e": 1.0}}}}}
BIG = {i: float(i) for i in range(100)}


class Scale:
    k = 2.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_rebound_global_function_is_seen(backend):
    global ACT
    ACT = F.tanh
    f = static.compile(lambda x: ACT(x) * 2, backend=backend)
    same(f(X), F.tanh(X) * 2)
    ACT = F.relu
    try:
        same(f(X), F.relu(X) * 2)
        assert "global 'ACT'" in f.retraces[-1]
    finally:
        ACT = F.tanh


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_swapped_parameter_free_submodule_is_seen(backend):
    m = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    f = static.compile(lambda x: m(x), backend=backend)
    same(f(X), m(X))
    m[1] = nn.Tanh()
    same(f(X), m(X))
    assert "submodule" in f.retraces[-1]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_monkey_patched_forward_is_seen(backend):
    m = nn.Linear(4, 4)
    f = static.compile(lambda x: m(x), backend=backend)
    same(f(X), m(X))
    m.forward = lambda x: x * 3
    same(f(X), X * 3)


def test_a_forward_replaced_on_the_class_is_seen():
    class Block(nn.Module):
        def forward(self, x):
            return x + 1

    m = Block()
    f = static.compile(lambda x: m(x), backend="numpy")
    same(f(X), X + 1)
    Block.forward = lambda self, x: x - 1
    same(f(X), X - 1)


def test_a_tensor_replaced_inside_a_dict_is_seen():
    d = {"w": eager.ones(4)}
    f = static.compile(lambda x: x * d["w"], backend="numpy")
    same(f(X), X)
    d["w"] = eager.full((4,), 3.0)
    same(f(X), X * 3)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_item_of_a_global_list_is_seen(backend):
    LIST[0] = 1.0
    f = static.compile(lambda x: x * LIST[0], backend=backend)
    same(f(X), X)
    LIST[0] = 5.0
    same(f(X), X * 5.0)
    assert "global 'LIST' changed [1.0, 2.0] -> [5.0, 2.0]" in f.retraces[-1]


def test_a_class_attribute_is_seen():
    Scale.k = 2.0
    f = static.compile(lambda x: x * Scale.k, backend="numpy")
    same(f(X), X * 2)
    Scale.k = 3.0
    same(f(X), X * 3)
    assert "'k' of Scale" in f.retraces[-1]


def test_dicts_deeper_than_three_and_larger_than_sixty_four_are_guarded():
    f = static.compile(lambda x: x * CFG["a"]["b"]["c"]["d"]["e"] + BIG[3], backend="numpy")
    same(f(X), X * 1.0 + 3.0)
    CFG["a"]["b"]["c"]["d"]["e"] = 4.0
    same(f(X), X * 4.0 + 3.0)
    BIG[3] = 7.0
    same(f(X), X * 4.0 + 7.0)
    CFG["a"]["b"]["c"]["d"]["e"] = 1.0
    BIG[3] = 3.0


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_list_attribute_of_a_module_is_seen(backend):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = [1.0, 2.0]

        def forward(self, x):
            return x * self.scales[0]

    m = M()
    f = static.compile(m, backend=backend)
    same(f(X), X)
    m.scales[0] = 3.0
    same(f(X), X * 3)


def test_a_numpy_array_changed_in_place_is_seen():
    arr = np.ones(4, dtype=np.float32)
    f = static.compile(lambda x: x * eager.from_numpy(arr), backend="numpy")
    same(f(X), X)
    arr *= 3
    same(f(X), X * 3)


def test_the_default_dtype_is_seen():
    f = static.compile(lambda x: x + eager.ones(4), backend="numpy")
    x = X.double()
    assert f(x).dtype == (x + eager.ones(4)).dtype
    eager.set_default_dtype(eager.float64)
    try:
        assert f(x).dtype == (x + eager.ones(4)).dtype
        assert f(X).dtype == (X + eager.ones(4)).dtype
    finally:
        eager.set_default_dtype(eager.float32)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hooks_added_and_removed_after_the_first_call_are_seen(backend):
    m = nn.Linear(4, 4)
    f = static.compile(lambda x: m(x), backend=backend)
    same(f(X), m(X))
    handle = m.register_forward_hook(lambda mod, inputs, out: out * 0 + 1)
    same(f(X), eager.ones(3, 4))
    handle.remove()
    same(f(X), m(X))


def _step_of(get_model, get_opt):
    def step(x, y):
        opt = get_opt()
        opt.zero_grad()
        loss = F.mse_loss(get_model()(x), y)
        loss.backward()
        opt.step()
        return loss
    return step


model = opt = None


@pytest.mark.parametrize("backend", BACKENDS)
def test_k_fold_rebinding_model_and_optimizer_in_globals_trains_each_fold(backend):
    global model, opt
    x, y = eager.randn(6, 4, generator=eager.Generator().manual_seed(1)), eager.zeros(6, 1)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    compiled = static.compile(step, backend=backend)
    for fold in range(3):
        eager.manual_seed(fold)
        model = nn.Linear(4, 1)
        opt = eager.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(3):
            compiled(x, y)
        eager.manual_seed(fold)
        ref = nn.Linear(4, 1)
        ref_opt = eager.optim.SGD(ref.parameters(), lr=0.1)
        for _ in range(3):
            ref_opt.zero_grad()
            F.mse_loss(ref(x), y).backward()
            ref_opt.step()
        np.testing.assert_allclose(model.weight._data, ref.weight._data, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_optimizer_load_state_dict_is_seen(backend):
    x, y = eager.randn(6, 4, generator=eager.Generator().manual_seed(2)), eager.zeros(6, 1)
    eager.manual_seed(0)
    m = nn.Linear(4, 1)
    o = eager.optim.Adam(m.parameters(), lr=0.1)
    step = _step_of(lambda: m, lambda: o)
    compiled = static.compile(step, backend=backend)
    for _ in range(2):
        compiled(x, y)
    saved_opt = {"state": {k: {n: (v.clone() if isinstance(v, eager.Tensor) else v) for n, v in s.items()}
                           for k, s in o.state_dict()["state"].items()},
                 "param_groups": o.state_dict()["param_groups"]}
    saved_model = {k: v.clone() for k, v in m.state_dict().items()}
    for _ in range(2):
        compiled(x, y)
    m.load_state_dict(saved_model)
    o.load_state_dict(saved_opt)
    compiled(x, y)
    got = m.weight._data.copy()
    m.load_state_dict(saved_model)
    o.load_state_dict(saved_opt)
    step(x, y)
    np.testing.assert_allclose(got, m.weight._data, rtol=1e-6, atol=1e-7)


def test_train_and_eval_alternating_keep_one_entry_each():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))
    f = static.compile(lambda x: m(x), backend="numpy", max_retraces=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no retrace-limit warning: the switches find their entries
        for i in range(6):
            m.train(i % 2 == 0)
            eager.manual_seed(i)
            got = f(X)
            eager.manual_seed(i)
            same(got, m(X))
    assert len(f.retraces) == 1 and "'training'" in f.retraces[0]
    assert len(f.entries()) == 2


def test_the_retrace_limit_counts_distinct_entries_and_names_the_change():
    state = {"k": 0}
    f = static.compile(lambda x: x * state["k"], backend="numpy", max_retraces=2)
    for k in (0, 1, 0, 1, 0, 1, 2):
        state["k"] = k
        same(f(X), X * k)
    assert len(f.retraces) == 2
    state["k"] = 3
    with pytest.warns(RuntimeWarning, match=r"closure variable 'state' changed \{'k': 2\} -> \{'k': 3\}"):
        same(f(X), X * 3)


def test_a_module_passed_as_a_default_argument_is_watched():
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))

    def f(x, model=m):
        return model(x)

    cf = static.compile(f, backend="numpy")
    eager.manual_seed(0)
    cf(X)
    m.eval()
    same(cf(X), m(X))


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_accumulation_with_set_to_none_keeps_both_entries(backend):
    x, y = eager.randn(6, 4, generator=eager.Generator().manual_seed(3)), eager.zeros(6, 1)

    def run(compiled):
        eager.manual_seed(0)
        m = nn.Linear(4, 1)
        o = eager.optim.SGD(m.parameters(), lr=0.1)

        def micro(x, y):  # accumulates: finds .grad None after zero_grad, then the last micro-step's
            F.mse_loss(m(x), y).backward()

        f = static.compile(micro, backend=backend, max_retraces=1) if compiled else micro
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(4):
                for _ in range(2):
                    f(x, y)
                o.step()
                o.zero_grad(set_to_none=True)
        return m.weight._data.copy(), f

    (want, _), (got, f) = run(False), run(True)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert len(f.entries()) <= 2 and len(f.retraces) <= 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_tensor_a_loop_replaces_in_a_dict_is_re_read_not_retraced(backend):
    state = {"h": eager.zeros(4)}
    w = eager.from_numpy(np.eye(4, dtype=np.float32) * 0.5)

    def cell(x):
        return eager.tanh(x + state["h"] @ w)

    f = static.compile(cell, backend=backend)
    h = eager.zeros(4)
    for i in range(10):
        x = eager.full((4,), float(i) / 10)
        state["h"] = f(x)
        h = eager.tanh(x + h @ w)
        same(state["h"], h)
    assert f.retraces == []
