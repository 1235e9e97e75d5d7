"""Python side effects of a compiled function happen at every call, as in eager, with real
values: appends, attribute and global writes holding traced values, print, hooks that record.
What cannot be redone runs eagerly with a warning naming it (fullgraph=True raises); a traced
value never stays behind in user data."""
from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import eager
import static
from eager import nn

BACKENDS = ["numpy", "native"]
X = eager.from_numpy(np.linspace(-1.0, 1.0, 6, dtype=np.float32))

LAST = None


@pytest.mark.parametrize("backend", BACKENDS)
def test_history_append_of_a_traced_loss_gets_each_call_s_tensor(backend):
    history = []

    def f(x):
        y = (x * 2).sum()
        history.append(y)
        return y + 1

    cf = static.compile(f, backend=backend)
    outs = [cf(X * k) for k in (1.0, 2.0, 3.0)]
    assert len(history) == 3 and all(type(h) is eager.Tensor for h in history)
    np.testing.assert_allclose([float(h) for h in history], [float((X * k * 2).sum()) for k in (1.0, 2.0, 3.0)],
                               rtol=1e-6)
    np.testing.assert_allclose([float(o) for o in outs], [float(h) + 1 for h in history], rtol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_print_prints_at_every_call_with_the_call_s_values(backend, capsys):
    def f(x):
        y = x.sum()
        print("loss", y)
        return y

    cf = static.compile(f, backend=backend)
    for x in (X, X + 1, X + 2):
        cf(x)
    got = capsys.readouterr().out
    for x in (X, X + 1, X + 2):
        f(x)
    assert got == capsys.readouterr().out
    assert got.count("loss tensor(") == 3 and "Tracer" not in got


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forward_hook_that_appends_runs_at_every_call(backend):
    seen = []
    m = nn.Linear(6, 2)
    m.register_forward_hook(lambda mod, inputs, out: seen.append(out))
    cf = static.compile(lambda x: m(x).sum(), backend=backend)
    for _ in range(3):
        cf(X)
    assert len(seen) == 3 and all(type(s) is eager.Tensor for s in seen)
    np.testing.assert_allclose(seen[-1]._data, m(X)._data, rtol=1e-6)


class _SetsLast(nn.Module):
    """A module whose forward sets an attribute to a traced value (self.last = y.sum())."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 2)

    def forward(self, x):
        y = self.lin(x)
        self.last = y.sum()
        return y


def test_an_attribute_set_to_a_traced_value_is_set_at_every_call():
    m = _SetsLast()
    cf = static.compile(m, backend="numpy")
    cf(X)
    assert type(m.last) is eager.Tensor
    cf(X * 2)
    np.testing.assert_allclose(float(m.last), float(m.lin(X * 2).sum()), rtol=1e-6)


def test_a_global_set_to_a_traced_value_is_set_at_every_call():
    def f(x):
        global LAST
        LAST = x.mean()
        return x * 2

    cf = static.compile(f, backend="numpy")
    cf(X)
    cf(X + 1)
    assert type(LAST) is eager.Tensor
    np.testing.assert_allclose(float(LAST), float((X + 1).mean()), rtol=1e-6)


def test_a_counter_in_forward_counts_every_call_by_running_eagerly_with_a_warning():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.calls = 0
            self.lin = nn.Linear(6, 2)

        def forward(self, x):
            self.calls += 1
            return self.lin(x)

    m = M()
    cf = static.compile(m, backend="numpy")
    with pytest.warns(RuntimeWarning, match=r"attribute 'calls' of module M \(0 -> 1\)"):
        cf(X)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        cf(X)
        cf(X)
    assert m.calls == 3
    with pytest.raises(static.TraceError, match="'calls'"):
        static.compile(M(), fullgraph=True)(X)


def test_random_random_is_not_frozen_at_trace_time():
    cf = static.compile(lambda x: x * random.random(), backend="numpy")
    with pytest.warns(RuntimeWarning, match=r"test_never_diverges_effects.py:\d+: random.random\(\)"):
        a = cf(eager.ones(3))
    b = cf(eager.ones(3))
    assert float(a[0]) != float(b[0])


def test_a_tracer_left_in_user_data_is_an_error_naming_where():
    class Holder:
        pass

    holder = Holder()
    holder.inner = [{}]

    def f(x):
        holder.inner[0]["y"] = x * 2  # deep in an object's attribute: neither an append nor an item set
        return x

    with pytest.raises(static.TraceError, match="traced value is left in attribute 'inner' of the Holder object"):
        static.compile(f, backend="numpy")(X)


def test_a_dict_item_set_to_a_traced_value_is_set_at_every_call():
    box = {}

    def f(x):
        box["y"] = x * 2
        return x

    cf = static.compile(f, backend="numpy")
    cf(X)
    cf(X + 1)
    assert type(box["y"]) is eager.Tensor
    np.testing.assert_allclose(box["y"]._data, ((X + 1) * 2)._data)


def test_a_list_the_function_reads_and_the_loop_appends_to_is_guarded():
    weights = [1.0]
    cf = static.compile(lambda x: x * sum(weights), backend="numpy")
    np.testing.assert_allclose(cf(X)._data, X._data)
    weights.append(2.0)
    np.testing.assert_allclose(cf(X)._data, (X * 3.0)._data)


def test_replayed_attribute_writes_do_not_retrace():
    m = _SetsLast()
    cf = static.compile(lambda x: m(x), backend="numpy")
    for k in range(4):
        cf(X * k)
    assert cf.retraces == []
    np.testing.assert_allclose(float(m.last), float(m.lin(X * 3).sum()), rtol=1e-6)
