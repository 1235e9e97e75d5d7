"""Tensor creation, dtypes, requires_grad rules and dtype promotion, as PyTorch has them."""
from __future__ import annotations

import numpy as np
import pytest

import eager

CTOR_MSG = "Only Tensors of floating point and complex dtype can require gradients"
SETTER_MSG = "only Tensors of floating point and complex dtype can require gradients"
NONLEAF_MSG = "you can only change requires_grad flags of leaf variables."


# -- default dtypes ---------------------------------------------------------------------------
@pytest.mark.parametrize("data, expected", [
    (1.5, eager.float32), ([1.0, 2.0], eager.float32), ([[1, 2], [3, 4]], eager.int64),
    (3, eager.int64), (True, eager.bool), ([1, 2.5], eager.float32), ([True, False], eager.bool),
])
def test_python_data_default_dtypes(data, expected):
    assert eager.tensor(data).dtype is expected


@pytest.mark.parametrize("np_dtype, expected", [
    (np.float64, eager.float64), (np.float32, eager.float32), (np.float16, eager.float16),
    (np.int32, eager.int32), (np.int64, eager.int64), (np.uint8, eager.uint8), (np.bool_, eager.bool),
])
def test_numpy_array_keeps_its_dtype(np_dtype, expected):
    assert eager.tensor(np.zeros(3, dtype=np_dtype)).dtype is expected
    assert eager.from_numpy(np.zeros(3, dtype=np_dtype)).dtype is expected


def test_factories_default_to_float32():
    for t in (eager.zeros(2), eager.ones(2, 3), eager.randn(2), eager.rand(2), eager.empty(2),
              eager.full((2,), 1.5), eager.eye(2), eager.linspace(0, 1, 5)):
        assert t.dtype is eager.float32
    assert eager.arange(5).dtype is eager.int64
    assert eager.arange(0.0, 1.0, 0.25).dtype is eager.float32
    assert eager.full((2,), 3).dtype is eager.int64


def test_tensor_copies_its_data():
    a = np.ones(3)
    t = eager.tensor(a)
    a[0] = 5.0
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_dtype_argument_accepts_names_and_types():
    assert eager.tensor([1, 2], dtype=eager.float64).dtype is eager.float64
    assert eager.zeros(2, dtype="float64").dtype is eager.float64
    assert eager.zeros(2, dtype=eager.long).dtype is eager.int64
    assert eager.zeros(2, dtype=eager.double).dtype is eager.float64


def test_shape_size_and_ndim():
    t = eager.zeros(2, 3)
    assert t.shape == (2, 3) and t.size() == (2, 3) and t.size(1) == 3 and t.size(-1) == 3
    assert t.ndim == 2 and t.dim() == 2 and t.numel() == 6
    assert repr(t.shape) == "eager.Size([2, 3])"


# -- requires_grad ------------------------------------------------------------------------------
def test_requires_grad_defaults_to_false():
    t = eager.tensor([1.0])
    assert t.requires_grad is False and t.grad is None and t.grad_fn is None and t.is_leaf


@pytest.mark.parametrize("make", [
    lambda: eager.tensor([1, 2], requires_grad=True),
    lambda: eager.zeros(3, dtype=eager.int64, requires_grad=True),
    lambda: eager.ones(3, dtype=eager.bool, requires_grad=True),
    lambda: eager.arange(3, requires_grad=True),
])
def test_constructor_refuses_requires_grad_for_non_float(make):
    with pytest.raises(RuntimeError, match=f"^{CTOR_MSG}$"):
        make()


def test_requires_grad_setter_and_method_refuse_non_float():
    t = eager.tensor([1, 2])
    with pytest.raises(RuntimeError, match=f"^{SETTER_MSG}$"):
        t.requires_grad = True
    with pytest.raises(RuntimeError, match=f"^{CTOR_MSG}$"):
        t.requires_grad_()
    assert t.requires_grad is False
    t.requires_grad_(False)  # turning it off is always fine
    assert t.requires_grad is False


def test_float_dtypes_can_require_grad():
    for dt in (eager.float16, eager.float32, eager.float64):
        assert eager.zeros(2, dtype=dt, requires_grad=True).requires_grad


def test_requires_grad_is_contagious():
    a = eager.randn(3, 3)
    b = eager.randn(3, 3)
    z = eager.randn((3, 3), requires_grad=True)
    assert (a + b).requires_grad is False
    assert (a + b).grad_fn is None
    c = a + z
    assert c.requires_grad is True and c.grad_fn is not None
    assert (c * 2).sum().requires_grad


def test_is_leaf_exactly_when_grad_fn_is_none():
    x = eager.randn(3, requires_grad=True)
    c = eager.randn(3)
    y = x * 2
    z = c * 2
    for t in (x, c, y, z, y.detach(), (x * c).sum()):
        assert t.is_leaf == (t.grad_fn is None)
    assert x.is_leaf and c.is_leaf and z.is_leaf and not y.is_leaf


def test_only_leaves_may_change_requires_grad():
    x = eager.randn(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match=NONLEAF_MSG + " If you want to use a computed variable in a "
                       "subgraph that doesn't require differentiation use var_no_grad = var.detach()."):
        y.requires_grad = False
    with pytest.raises(RuntimeError, match=f"^{NONLEAF_MSG}$"):
        y.requires_grad = True
    with pytest.raises(RuntimeError, match=NONLEAF_MSG):
        y.requires_grad_(False)
    assert y.requires_grad_() is y  # requires_grad_(True) on a non-leaf is a no-op, as in PyTorch
    assert y.requires_grad and y.grad_fn is not None
    x.requires_grad = False
    assert not x.requires_grad and x.is_leaf


def test_requires_grad_can_be_set_after_creation():
    t2 = eager.FloatTensor(3, 3)
    t2.requires_grad = True
    assert t2.requires_grad and t2.is_leaf
    (t2 * 2).sum().backward()
    assert np.array_equal(t2.grad.numpy(), np.full((3, 3), 2.0, np.float32))


# -- promotion ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn, expected", [
    (lambda: eager.ones(3) * 2.0, eager.float32),
    (lambda: eager.ones(3) * 2, eager.float32),
    (lambda: eager.tensor([1, 2]) * 2.5, eager.float32),
    (lambda: eager.tensor([1, 2]) * 2, eager.int64),
    (lambda: eager.tensor(2.0, dtype=eager.float64) * eager.ones(3), eager.float32),
    (lambda: eager.ones(3, dtype=eager.float64) * eager.ones(3), eager.float64),
    (lambda: eager.tensor([1, 2]) / eager.tensor([2, 4]), eager.float32),
    (lambda: eager.tensor([1, 2]) / 2, eager.float32),
    (lambda: eager.tensor([1, 2], dtype=eager.int32) + eager.tensor([1, 2]), eager.int64),
    (lambda: eager.tensor([1, 2], dtype=eager.int32) + 1, eager.int32),
    (lambda: eager.tensor([True]) + eager.tensor([True]), eager.bool),
    (lambda: eager.tensor([True]) + 1, eager.int64),
    (lambda: eager.tensor(1.5, dtype=eager.float64) + eager.tensor([1, 2]), eager.float64),
    (lambda: eager.tensor([1, 2]) + eager.tensor(1.5), eager.float32),
    (lambda: eager.ones(2, dtype=eager.float16) * 3.0, eager.float16),
    (lambda: 2.0 ** eager.ones(2), eager.float32),
    (lambda: eager.tensor([1, 2]).sum(), eager.int64),
    (lambda: eager.tensor([1, 2], dtype=eager.int32).sum(), eager.int64),
    (lambda: eager.exp(eager.tensor([1, 2])), eager.float32),
    (lambda: eager.tensor([1, 2]) > 1, eager.bool),
])
def test_promotion(fn, expected):
    assert fn().dtype is expected


def test_int_true_division_values():
    out = eager.tensor([1, 3]) / eager.tensor([2, 2])
    assert out.tolist() == [0.5, 1.5]


def test_float32_times_python_float_keeps_precision_of_float32():
    x = eager.tensor([1.0], dtype=eager.float32)
    y = x * 1.0001
    assert y.dtype is eager.float32
    assert y.item() == pytest.approx(float(np.float32(1.0) * np.float32(1.0001)))


# -- legacy constructors -------------------------------------------------------------------------
def test_legacy_constructors():
    t = eager.Tensor(3, 5)
    assert t.shape == (3, 5) and t.dtype is eager.float32 and not t.requires_grad
    f = eager.FloatTensor(3, 3)
    assert f.shape == (3, 3) and f.dtype is eager.float32
    v = eager.FloatTensor([1.0, 2.0])
    assert v.tolist() == [1.0, 2.0] and v.dtype is eager.float32
    assert eager.Tensor([1, 2]).dtype is eager.float32
    assert eager.DoubleTensor(2).dtype is eager.float64
    assert eager.LongTensor([1, 2]).dtype is eager.int64
    assert isinstance(f, eager.Tensor) and isinstance(eager.tensor(1.0), eager.Tensor)
    assert eager.Tensor().shape == (0,)


def test_manual_seed_reproduces_random_tensors():
    eager.manual_seed(0)
    a = (eager.randn(4), eager.rand(3), eager.randint(0, 10, (5,)), eager.randperm(6))
    eager.manual_seed(0)
    b = (eager.randn(4), eager.rand(3), eager.randint(0, 10, (5,)), eager.randperm(6))
    for u, v in zip(a, b):
        assert np.array_equal(u.numpy(), v.numpy())
    eager.manual_seed(1)
    assert not np.array_equal(eager.randn(4).numpy(), a[0].numpy())


def test_manual_seed_also_fixes_in_place_init_and_like_factories():
    def draw():
        eager.manual_seed(7)
        w = eager.empty(3, 2)
        w.uniform_(-1, 1)
        return w.numpy().copy(), eager.randn_like(w).numpy()

    (w1, r1), (w2, r2) = draw(), draw()
    assert np.array_equal(w1, w2) and np.array_equal(r1, r2)
    assert np.all((w1 >= -1) & (w1 <= 1))
