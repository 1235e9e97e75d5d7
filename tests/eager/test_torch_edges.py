"""Edges PyTorch defines, against PyTorch: tensor()'s dtype inference from Python iterables,
range and list indices (read and assigned), the device and layout predicates, integer
division by zero, NaN in topk and sort."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

DATA = [range(3), range(2, 9, 3), [1, 2.5], [True, 2], [True, False], [[1, 2], [3, 4.5]], (1, 2), [],
        [np.float64(1.0), 2], [np.float32(1.0), 2], [np.int32(1)], [np.uint8(1), np.int8(2)], [1, np.float16(2)],
        np.float64(2.0), 3, 2.5, True, [[True], [False]]]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_infers_dtype_as_pytorch(data):
    ours, theirs = eager.tensor(data), torch.tensor(data)
    assert ours.dtype.name == str(theirs.dtype).split(".")[-1]
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_tensor_of_0d_tensors_takes_their_dtype():
    ours = eager.tensor([eager.tensor(1.5, dtype=eager.float64), 2])
    assert ours.dtype is eager.float64


@pytest.mark.parametrize(("data", "error"), [((x for x in range(2)), RuntimeError), ({1, 2}, RuntimeError),
                                             ([1, "a"], TypeError)])
def test_tensor_refuses_what_pytorch_refuses(data, error):
    with pytest.raises(error):
        torch.tensor(data)
    with pytest.raises(error):
        eager.tensor(data)


INDICES = {
    "range_rows_tensor_cols": lambda T, x: x[range(3), T.tensor([1, 0, 3])],
    "list": lambda T, x: x[[0, 2]],
    "range": lambda T, x: x[range(1, 3)],
    "two_lists": lambda T, x: x[[0, 2], [1, 3]],
    "cols_range": lambda T, x: x[:, range(1, 3)],
    "bool_list": lambda T, x: x[[True, False, True]],
    "empty_list": lambda T, x: x[[]],
}


@pytest.mark.parametrize("index", sorted(INDICES))
def test_python_sequences_as_indices(index):
    x = np.arange(12.0).reshape(3, 4)
    ours = INDICES[index](eager, eager.tensor(x))
    theirs = INDICES[index](torch, torch.tensor(x))
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_python_sequences_as_assignment_targets_with_gradients():
    for T in (eager, torch):
        w = T.zeros(3, 4, requires_grad=True)
        v = w * 2
        v[range(3), T.tensor([1, 0, 3])] = 5.0
        v[[0, 2]] = v[[0, 2]] * 3
        v.sum().backward()
        if T is eager:
            ours = (v.detach().numpy().copy(), w.grad.numpy().copy())
        else:
            np.testing.assert_array_equal(ours[0], v.detach().numpy())
            np.testing.assert_array_equal(ours[1], w.grad.numpy())


def test_device_and_layout_predicates_match_pytorch():
    ours, theirs = eager.randn(2, 3), torch.randn(2, 3)
    props = [n for n in dir(theirs) if n.startswith("is_") and not callable(getattr(theirs, n))]
    assert {"is_xpu", "is_mps", "is_meta", "is_quantized", "is_sparse", "is_mkldnn", "is_vulkan", "is_ipu"} <= set(props)
    for name in props:
        assert getattr(ours, name) == getattr(theirs, name), name
    for name in ("is_complex", "is_conj", "is_neg", "is_inference", "is_signed", "is_pinned", "is_shared"):
        assert getattr(ours, name)() == getattr(theirs, name)(), name
    assert eager.tensor([1], dtype=eager.uint8).is_signed() is False
    assert ours.is_same_size(eager.zeros(2, 3)) and not ours.is_same_size(eager.zeros(3, 2))
    assert eager.tensor([0.0]).is_nonzero() is False
    for T in (eager, torch):
        with pytest.raises(RuntimeError, match="ambiguous"):
            T.tensor([]).is_nonzero()
        with pytest.raises(RuntimeError, match="is_coalesced expected sparse"):
            T.randn(2).is_coalesced()


DIVISIONS = {
    "floordiv_scalar": lambda T: T.tensor([1, 2]) // 0,
    "mod_scalar": lambda T: T.tensor([1, 2]) % 0,
    "fmod": lambda T: T.tensor([1, 2]).fmod(0),
    "floordiv_tensor": lambda T: T.tensor([1, 2]) // T.tensor([0, 1]),
    "rfloordiv": lambda T: 5 // T.tensor([0, 1]),
    "uint8_mod": lambda T: T.tensor([1, 2], dtype=T.uint8) % 0,
    "remainder_0d": lambda T: T.remainder(T.tensor(5), T.tensor(0)),
}


@pytest.mark.parametrize("case", sorted(DIVISIONS))
def test_integer_division_by_zero_raises_as_pytorch(case):
    with pytest.raises(RuntimeError) as theirs:
        DIVISIONS[case](torch)
    with pytest.raises(RuntimeError) as ours:
        DIVISIONS[case](eager)
    assert str(ours.value) == str(theirs.value) == "ZeroDivisionError"


def test_float_division_by_zero_and_nonzero_integer_divisors_still_compute():
    assert eager.tensor([1.0, -1.0]).floor_divide(0).tolist() == torch.tensor([1.0, -1.0]).floor_divide(0).tolist()
    assert (eager.tensor([7, -7]) % 3).tolist() == (torch.tensor([7, -7]) % 3).tolist()


@pytest.mark.parametrize("largest", [True, False])
def test_topk_and_sort_rank_nan_largest(largest):
    data = [1.0, float("nan"), 3.0, float("inf"), float("nan"), -2.0]
    ours, theirs = eager.tensor(data).topk(3, largest=largest), torch.tensor(data).topk(3, largest=largest)
    np.testing.assert_array_equal(ours.values.numpy(), theirs.values.numpy())
    assert ours.indices.tolist() == theirs.indices.tolist()
    for descending in (True, False):
        o, t = eager.tensor(data).sort(descending=descending), torch.tensor(data).sort(descending=descending)
        np.testing.assert_array_equal(o.values.numpy(), t.values.numpy())
        assert o.indices.tolist() == t.indices.tolist()
