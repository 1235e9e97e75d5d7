"""as_strided as PyTorch's view where no gradient is recorded through it: the result shares
its input's memory and version counter (writes through either reach the other), reads the
storage from the given offset (a narrow view's storage is its base's), reports PyTorch's
strides and offset; a self-overlapping view refuses writes with PyTorch's error; with a
gradient recorded the values and the gradient (overlaps summed) are PyTorch's."""
import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _both(fn):
    return fn(torch), fn(eager)


def test_writes_reach_each_other_and_versions_are_shared():
    def prog(lib):
        x = lib.arange(12.0)
        v = x.as_strided((3, 3), (3, 1), 1)
        v[0, 0] = 100
        x[5] = -1
        v.mul_(2)
        return x.tolist(), v.tolist(), v._base is x, x._version, v._version, v.stride(), v.storage_offset()

    want, got = _both(prog)
    assert got == want


def test_storage_of_a_narrow_view_and_functional_form():
    def prog(lib):
        base = lib.arange(10.0)
        n = base[2:]
        u = lib.as_strided(n, (2,), (3,), 0)  # offset 0 of the storage: base[0], base[3]
        u.fill_(7)
        t = lib.arange(6.0).reshape(2, 3).t()
        return base.tolist(), u.tolist(), t.as_strided((2, 2), (1, 2)).tolist()

    want, got = _both(prog)
    assert got == want


def test_sliding_windows_read_and_overlapping_writes_refused():
    x = eager.arange(8.0)
    win = x.as_strided((3, 4), (2, 1))
    np.testing.assert_array_equal(win.numpy(), torch.arange(8.0).as_strided((3, 4), (2, 1)).numpy())
    assert np.shares_memory(win.numpy(), x.numpy())
    with pytest.raises(RuntimeError, match="single memory location"):
        win.add_(1)
    assert x.tolist() == list(map(float, range(8)))


def test_gradient_is_pytorchs_and_no_grad_writes_reach_a_leaf():
    def prog(lib):
        x = lib.arange(6.0, requires_grad=True)
        y = x.as_strided((2, 2), (1, 1))
        values = y.tolist()
        (y * lib.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
        with lib.no_grad():
            z = x.as_strided((2,), (2,), 1)
            z.mul_(10)
        return values, x.grad.tolist(), x.tolist(), type(y.grad_fn).__name__

    want, got = _both(prog)
    assert got == want


def test_out_of_bounds_is_pytorchs_error():
    with pytest.raises(RuntimeError, match="out of bounds for storage"):
        eager.arange(4.0).as_strided((3,), (2,))
