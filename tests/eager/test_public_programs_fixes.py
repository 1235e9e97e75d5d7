"""Fixes found by running public PyTorch programs on eager, each checked against PyTorch."""
from __future__ import annotations

import pytest

import eager


def _torch():
    return pytest.importorskip("torch")


@pytest.mark.parametrize("lib_name", ["eager", "torch"])
def test_grad_fn_types_are_named_as_pytorchs(lib_name: str) -> None:
    # torchviz labels nodes with type(fn).__name__; tutorials print type(loss.grad_fn)
    lib = eager if lib_name == "eager" else _torch()
    x = lib.ones(3, requires_grad=True)
    y = (x * 2).sum()
    assert type(y.grad_fn).__name__ == "SumBackward0"
    assert type(y.grad_fn.next_functions[0][0]).__name__ == "MulBackward0"
    assert isinstance(y.grad_fn, lib.autograd.graph.Node)
    lin = lib.nn.Linear(3, 2)
    assert type(lib.nn.functional.mse_loss(lin(x), lib.zeros(2), reduction="sum").grad_fn).__name__ == "MseLossBackward0"
    assert type(lib.nn.functional.mse_loss(lin(x), lib.zeros(2)).grad_fn).__name__ == "MseLossBackward0"
    assert type(x.unsqueeze(0).t().grad_fn).__name__ == "TBackward0"

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            ctx.save_for_backward(i)
            return i ** 3

        @staticmethod
        def backward(ctx, g):
            (i,) = ctx.saved_tensors
            return 3 * i ** 2 * g

    out = Cube.apply(x)
    assert type(out.grad_fn).__name__ == "CubeBackward"
    out.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


@pytest.mark.parametrize("lib_name", ["eager", "torch"])
def test_load_state_dict_result_prints_as_pytorchs(lib_name: str) -> None:
    lib = eager if lib_name == "eager" else _torch()
    m = lib.nn.Linear(2, 2)
    assert repr(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    assert str(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    sd = dict(m.state_dict(), extra=lib.zeros(1))
    res = m.load_state_dict(sd, strict=False)
    assert repr(res) == "_IncompatibleKeys(missing_keys=[], unexpected_keys=['extra'])"
    assert res.unexpected_keys == ["extra"] and res.missing_keys == []
