"""A compiled output that shares memory with an input (a reshape, a transpose, the input
itself) shares its version counter too, as an eager view does, so autograd sees writes."""
import pytest

import eager
import static


def flat(x):
    return x.reshape(-1)


@pytest.mark.parametrize("fn", [flat, static.compile(flat)], ids=["eager", "compiled"])
def test_in_place_write_through_an_aliasing_output_is_detected(fn):
    x = eager.tensor([[1.0, 2.0], [3.0, 4.0]])
    w = eager.ones(2, 2, requires_grad=True)
    z = (x * w).sum()  # saves x for w's gradient
    y = fn(x)
    y.add_(10.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_fresh_outputs_keep_their_own_counter():
    f = static.compile(lambda x: x * 2)
    x = eager.tensor([1.0, 2.0])
    y = f(x)
    y.add_(1.0)
    assert x._version == 0 and y._version == 1
