"""Module hooks: forward pre-hooks and full backward hooks, against PyTorch where installed,
and refused inside a compiled function (they would run once, when tracing)."""
import numpy as np
import pytest

import eager
import static
from eager import nn

RNG = np.random.default_rng(0)
WEIGHTS = [RNG.standard_normal(s) for s in ((4, 3), (4,), (2, 4), (2,))]
X = RNG.standard_normal((5, 3))


def _model(lib):
    m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p, w in zip(m.parameters(), WEIGHTS):
            p.copy_(lib.tensor(w, dtype=p.dtype))
    return m


def test_a_forward_pre_hook_replaces_the_arguments_and_can_be_removed():
    m = nn.Linear(3, 2)
    x = eager.tensor(X, dtype=eager.float32)
    w, b = m.weight.detach().numpy(), m.bias.detach().numpy()
    handle = m.register_forward_pre_hook(lambda mod, args: args[0] * 2)  # one value: the only argument
    np.testing.assert_allclose(m(x).detach().numpy(), (2 * X) @ w.T + b, rtol=1e-5, atol=1e-6)
    handle.remove()
    np.testing.assert_allclose(m(x).detach().numpy(), X @ w.T + b, rtol=1e-5, atol=1e-6)


def test_a_forward_pre_hook_with_kwargs():
    class Scale(nn.Module):
        def forward(self, x, factor=1.0):
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {**kwargs, "factor": 3.0}), with_kwargs=True)
    assert m(eager.ones(2)).tolist() == [3.0, 3.0]


def _hooked_run(lib):
    m = _model(lib)
    seen = []
    m[2].register_full_backward_hook(lambda mod, gi, go: seen.append(
        ("last", [g.detach().numpy().copy() for g in gi], [g.detach().numpy().copy() for g in go])))
    m[0].register_full_backward_hook(lambda mod, gi, go: seen.append(("first", list(gi), len(go))))
    m[1].register_full_backward_hook(lambda mod, gi, go: (gi[0] * 2,))  # doubles what flows upstream
    out = m(lib.tensor(X, dtype=lib.float32))
    (out * lib.tensor(np.arange(10.0).reshape(5, 2), dtype=lib.float32)).sum().backward()
    return m, seen


def test_full_backward_hooks_see_and_replace_gradients():
    m, seen = _hooked_run(eager)
    assert [s[0] for s in seen] == ["last", "first"]  # in backward order
    # the first Linear's input needs no grad: its hook gets grad_input (None,), as in PyTorch
    assert seen[1][1] == [None] and seen[1][2] == 1
    grad_output = seen[0][2][0]
    np.testing.assert_allclose(grad_output, np.arange(10.0).reshape(5, 2))
    # the Tanh hook doubled the gradient reaching the first Linear
    plain = _model(eager)
    out = plain(eager.tensor(X, dtype=eager.float32))
    (out * eager.tensor(np.arange(10.0).reshape(5, 2), dtype=eager.float32)).sum().backward()
    np.testing.assert_allclose(m[0].weight.grad.numpy(), 2 * plain[0].weight.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(m[2].weight.grad.numpy(), plain[2].weight.grad.numpy(), rtol=1e-6)


@pytest.mark.filterwarnings("ignore:Full backward hook is firing")  # PyTorch's note on the None grad_input
def test_full_backward_hooks_match_pytorch():
    torch = pytest.importorskip("torch")
    m_e, seen_e = _hooked_run(eager)
    m_t, seen_t = _hooked_run(torch)
    for p_e, p_t in zip(m_e.parameters(), m_t.parameters()):
        np.testing.assert_allclose(p_e.grad.numpy(), p_t.grad.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(seen_e[0][1][0], seen_t[0][1][0], rtol=1e-5, atol=1e-6)


def test_a_backward_hook_returning_the_wrong_count_is_an_error():
    m = nn.Linear(3, 2)
    m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    x = eager.tensor(X, dtype=eager.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned 2 gradient"):
        m(x).sum().backward()


def test_backward_hooks_are_refused_inside_a_compiled_function_and_run_with_fallback():
    m = nn.Linear(3, 2)
    calls = []
    m.register_full_backward_hook(lambda mod, gi, go: calls.append(1))
    x = eager.tensor(X, dtype=eager.float32, requires_grad=True)
    with pytest.raises(static.TraceError, match="full backward hook, which runs eagerly only"):
        static.compile(lambda v: m(v).sum())(x)
    with pytest.warns(RuntimeWarning, match="cannot be traced"):
        f = static.compile(lambda v: m(v).sum(), fallback="eager")
        for _ in range(2):
            f(x).backward()
    assert len(calls) == 2
