"""eager.compile: torch.compile's signature over static.compile (see eager/_compile.py)."""
import warnings

import numpy as np
import pytest

import eager as torch
import static
from eager import nn


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-6, atol=1e-6)


def _branchy(x):
    if x.sum() > 0:  # needs the data: not traceable
        return x * 2
    return -x


def test_a_compiled_module_gives_the_modules_results_and_gradients():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.GELU(), nn.Linear(8, 2))
    compiled = torch.compile(model)
    # PyTorch's OptimizedModule: an nn.Module holding the module as _orig_mod, forward compiled
    assert isinstance(compiled, nn.Module) and compiled._orig_mod is model
    assert isinstance(compiled._compiled, static.Compiled)
    x = torch.randn(5, 3)
    expected = model(x)
    got = compiled(x)
    _close(got, expected)
    got.sum().backward()
    grads = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    expected.sum().backward()
    for g, p in zip(grads, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_decorator_forms_and_modes():
    @torch.compile
    def f(x):
        return (x * 2).sin().sum()

    @torch.compile(mode="max-autotune", fullgraph=True)
    def g(x):
        return (x * 2).sin().sum()

    x = torch.randn(4)
    _close(f(x), (x * 2).sin().sum())
    _close(g(x), (x * 2).sin().sum())
    assert f.__name__ == "f" and f.__wrapped__.__name__ == "f"


def test_without_fullgraph_an_untraceable_branch_is_a_graph_break():
    x = torch.ones(3)
    compiled = torch.compile(_branchy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = compiled(x)
        _close(compiled(-x), x)
    _close(out, x * 2)
    assert not any("cannot be traced" in str(w.message) for w in caught)  # split, not run eagerly
    assert "x.sum() > 0" in compiled.explain(x)  # the break, its line and the pieces' graphs


def test_fullgraph_raises_where_the_function_cannot_be_traced():
    with pytest.raises(static.TraceError, match="Python branch"):
        torch.compile(_branchy, fullgraph=True)(torch.ones(3))


def test_disable_and_the_eager_backends_return_the_function_itself():
    assert torch.compile(_branchy, disable=True) is _branchy
    assert torch.compile(_branchy, backend="eager") is _branchy
    assert torch.compile(_branchy, backend="aot_eager") is _branchy
    assert torch.compile(disable=True)(_branchy) is _branchy


def test_graphmode_options_pass_through():
    compiled = torch.compile(lambda x: x * 1.0 + 0.0, backend="numpy", options={"opt_level": 1})
    x = torch.randn(3)
    _close(compiled(x), x)
    assert compiled.opt_level == 1 and compiled.backend == "numpy"


@pytest.mark.parametrize("kwargs, error, match", [
    ({"mode": "fast"}, RuntimeError, "unrecognized mode='fast'; valid modes: 'default'"),
    ({"options": {"triton.cudagraphs": True}}, TypeError, "unexpected option 'triton.cudagraphs'"),
    ({"options": {"fullgraph": True}}, TypeError, "give fullgraph as eager.compile's own argument"),
    ({"options": ["opt_level"]}, TypeError, "options must be a dict"),
    ({"backend": lambda gm, inputs: gm}, TypeError, "backend must be a string"),
    ({"backend": "tvm"}, ValueError, "unknown backend 'tvm'"),
])
def test_bad_options_are_refused_when_given(kwargs, error, match):
    with pytest.raises(error, match=match):
        torch.compile(_branchy, **kwargs)


def test_dynamic_true_traces_once_for_every_size():
    compiled = torch.compile(lambda x: x.sum(), dynamic=True)
    for n in (3, 4, 7):
        x = torch.randn(n)
        _close(compiled(x), x.sum())
    assert len(compiled.compile_seconds) == 1
