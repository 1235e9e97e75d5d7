"""eager's per-op fast path is rendered from one template (eager._fast_path) into `dispatch`
and into the general path's `make_node`: both must build the same backward graph, and the
rendered text must be what runs (readable in tracebacks and by inspect)."""
from __future__ import annotations

import inspect

import numpy as np
import pytest

import eager
from eager import _apply_run, _dispatch, _fast_path
from eager.autograd.gradcheck import gradcheck
from eager.ops import REGISTRY


def _general(op, operands):
    """The same call through the general path (no fast path): `_run` after the scan's facts."""
    tensors = [o for o in operands if isinstance(o, eager.Tensor)]
    wants = any(t.requires_grad for t in tensors)
    return _apply_run._run(op, tuple(operands), {}, tensors[0], tensors[0]._data.dtype, wants, 1)


def _shape_of_graph(out):
    node = out.grad_fn
    return (type(node), node.name(), [(type(fn).__name__ if fn is not None else None, nr)
                                      for fn, nr in node.next_functions],
            list(node._in_meta), sorted(node._saved), out.requires_grad)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", ["mul_number", "number_mul", "add_tensors", "sin", "sub_one_grad", "exp"])
def test_fast_and_general_paths_build_the_same_node(case, dtype):
    x = eager.tensor(np.array([0.5, -1.25], dtype), requires_grad=True)
    y = eager.tensor(np.array([2.0, 3.0], dtype))
    op, operands = {
        "mul_number": (REGISTRY["mul"], (x, 1.5)),
        "number_mul": (REGISTRY["mul"], (0.5, x)),
        "add_tensors": (REGISTRY["add"], (x, x * 2.0)),
        "sin": (REGISTRY["sin"], (x,)),
        "sub_one_grad": (REGISTRY["sub"], (y, x)),
        "exp": (REGISTRY["exp"], (x,)),
    }[case]
    fast = _dispatch.dispatch(op, operands, {})
    general = _general(op, operands)
    np.testing.assert_array_equal(fast.numpy() if not fast.requires_grad else fast.detach().numpy(),
                                  general.detach().numpy())
    assert _shape_of_graph(fast) == _shape_of_graph(general)
    assert type(fast.grad_fn).__name__ == fast.grad_fn.name() == op.backward_name(operands, {})
    gf, = eager.autograd.grad(fast.sum(), [x], retain_graph=True)
    gg, = eager.autograd.grad(general.sum(), [x], retain_graph=True)
    np.testing.assert_array_equal(gf.numpy(), gg.numpy())


def test_the_w4_chain_differentiates_as_finite_differences():
    def chain(v):
        for _ in range(5):
            v = v * 1.0001 + 0.5 * eager.sin(v)
        return v

    assert gradcheck(chain, (eager.tensor(0.5, dtype=eager.float64, requires_grad=True),))
    assert gradcheck(chain, (eager.tensor([0.25, -0.5], dtype=eager.float64, requires_grad=True),))


def test_the_rendered_text_is_what_runs():
    assert _dispatch.dispatch.__code__.co_filename.endswith("_fast_path.py <rendered dispatch>")
    assert inspect.getsource(_dispatch.dispatch) == _fast_path.SOURCES["dispatch"]
    assert _apply_run.make_node.__code__.co_filename.endswith("_fast_path.py <rendered make_node>")
    # the node snippet is one text, rendered into the fast path's two arities and make_node
    assert _fast_path.SOURCES["dispatch"].count("node._in_meta = ") == 2
    assert _fast_path.SOURCES["make_node"].count("node._in_meta = ") == 1


def test_a_failure_inside_the_fast_path_names_the_op():
    a = eager.ones(2, 3)
    b = eager.ones(4, 5)
    with pytest.raises((ValueError, RuntimeError), match="add|size|shape"):
        _dispatch.dispatch(REGISTRY["add"], (a, b), {})


def test_the_grad_fn_class_is_resolved_once_per_record():
    x = eager.tensor([1.0, 2.0], requires_grad=True)
    op = REGISTRY["cos"]
    first = eager.cos(x).grad_fn
    assert op.grad_class is type(first) and type(first).__name__ == "CosBackward0"
    assert type(eager.cos(x).grad_fn) is op.grad_class


def test_grad_with_respect_to_an_intermediate_and_a_leaf_together():
    x = eager.tensor([0.5, 2.0], requires_grad=True)
    h = x * 3.0
    loss = (eager.sin(h) * h).sum()
    gh, gx = eager.autograd.grad(loss, [h, x])
    hv = np.array([1.5, 6.0], np.float32)
    want_h = np.cos(hv) * hv + np.sin(hv)
    np.testing.assert_allclose(gh.numpy(), want_h, rtol=1e-6)
    np.testing.assert_allclose(gx.numpy(), 3.0 * want_h, rtol=1e-6)
