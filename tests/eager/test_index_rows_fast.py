"""x[idx] with one integer index tensor on dim 0 (eager/_index_fast.py) and its gradient
(gmops.shape_ops index_grad's row kernel): the values, errors, graph and gradients of the op
path, against PyTorch where it is installed."""
import numpy as np
import pytest

import eager
from gmops import shape_ops


def test_rows_values_and_dtypes():
    x = eager.arange(12.0).reshape(4, 3)
    for dtype in (eager.int64, eager.int32):
        idx = eager.tensor([3, -1, 0, 3], dtype=dtype)
        np.testing.assert_array_equal(x[idx].numpy(), x.numpy()[[3, -1, 0, 3]])
    two_d = eager.tensor([[0, 1], [2, 3]])
    assert tuple(x[two_d].shape) == (2, 2, 3)
    assert tuple(eager.zeros(0, 3)[eager.tensor([], dtype=eager.int64)].shape) == (0, 3)
    assert x[eager.tensor([1, 2])].is_contiguous()


@pytest.mark.parametrize("bad", [[4], [0, -5], [1, 9, 2]])
def test_out_of_range_speaks_as_the_op_path(bad):
    x = eager.arange(12.0).reshape(4, 3)
    value = next(b for b in bad if not -4 <= b < 4)
    with pytest.raises(IndexError, match=f"^index {value} is out of bounds for axis 0 with size 4$"):
        x[eager.tensor(bad)]
    with pytest.raises(IndexError, match=f"^index {value} is out of bounds for axis 0 with size 4$"):
        x[eager.tensor(bad), :]  # (the op path)
    with pytest.raises(IndexError, match="^index 0 is out of bounds for axis 0 with size 0$"):
        eager.zeros(0, 3)[eager.tensor([0])]


def test_masks_and_zero_d_indices_keep_the_op_path():
    x = eager.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(x[eager.tensor([True, False, True, False])].numpy(), x.numpy()[[0, 2]])
    assert tuple(x[eager.tensor(2)].shape) == (3,)


def test_graph_and_gradients_with_repeated_rows():
    w = eager.randn(5, 3, dtype=eager.float64, requires_grad=True)
    idx = eager.tensor([[0, 4, 0], [-1, 2, 0]])
    out = w[idx]
    assert out.grad_fn.name() == "IndexBackward0"
    assert out.grad_fn.next_functions[0][0].variable is w
    g = np.random.default_rng(0).standard_normal((2, 3, 3))
    out.backward(eager.tensor(g))
    expect = np.zeros((5, 3))
    np.add.at(expect, idx.numpy().reshape(-1) % 5, g.reshape(-1, 3))
    np.testing.assert_allclose(w.grad.numpy(), expect, rtol=1e-12)
    assert eager.autograd.gradcheck(lambda a: a[idx], (w,))
    assert eager.autograd.gradgradcheck(lambda a: a[idx] * a[idx], (w,))


def test_no_grad_and_integer_sources_record_nothing():
    w = eager.randn(4, 2, requires_grad=True)
    with eager.no_grad():
        assert w[eager.tensor([0, 1])].grad_fn is None
    assert not eager.arange(4)[eager.tensor([1])].requires_grad


def test_an_index_changed_in_place_before_backward_is_refused():
    w = eager.randn(4, 2, requires_grad=True)
    idx = eager.tensor([0, 1])
    out = w[idx].sum()
    idx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_gradient_has_add_at_bits(dtype):
    rng = np.random.default_rng(1)
    g = rng.standard_normal((40, 7)).astype(dtype)
    idx = rng.integers(-6, 6, 40)
    got = shape_ops.INDEX_GRAD.forward(np, g, idx, key=(("tensor", 0),), shape=(6, 7), n_index=1)
    expect = np.zeros((6, 7), dtype)
    np.add.at(expect, idx, g)
    np.testing.assert_array_equal(got, expect)
    with pytest.raises(IndexError):
        shape_ops.INDEX_GRAD.forward(np, g, np.r_[idx[:-1], 6], key=(("tensor", 0),), shape=(6, 7), n_index=1)


def test_against_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    W = rng.standard_normal((27, 10)).astype(np.float32)
    idx = rng.integers(0, 27, (32, 3))
    ours, theirs = eager.tensor(W, requires_grad=True), torch.tensor(W, requires_grad=True)
    a, b = ours[eager.tensor(idx)], theirs[torch.tensor(idx)]
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    (a * a).sum().backward()
    (b * b).sum().backward()
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_embedding_lookup_on_the_arrays_keeps_the_ops_graph_and_errors():
    emb = eager.nn.Embedding(6, 4, padding_idx=-1)
    idx = eager.tensor([[0, 5, 2], [5, 1, 0]])
    out = emb(idx)
    assert out.grad_fn.name() == "EmbeddingBackward0"
    np.testing.assert_array_equal(out.detach().numpy(), emb.weight.detach().numpy()[idx.numpy()])
    out.sum().backward()
    expect = np.zeros((6, 4))
    np.add.at(expect, idx.numpy().reshape(-1), 1.0)
    expect[5] = 0.0  # the padding row gets no gradient
    np.testing.assert_array_equal(emb.weight.grad.numpy(), expect)
    for bad in ([0, 6], [-1, 0]):
        with pytest.raises(IndexError, match="index out of range"):
            emb(eager.tensor(bad))
    w = eager.randn(5, 3, dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(lambda a: eager.nn.functional.embedding(idx % 5, a), (w,))
    assert eager.autograd.gradgradcheck(lambda a: eager.nn.functional.embedding(idx % 5, a) ** 2, (w,))


BASIC = [0, -1, slice(None), slice(1, None, 2), (slice(None), 2), (Ellipsis, 0), (None, 1), (), (0, None, slice(0, 2)),
         (Ellipsis, slice(None, -1), None)]


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_basic_keys_are_index_keys_and_give_views(index):
    from eager._functional import indexing

    items = index if isinstance(index, tuple) else (index,)
    assert indexing._basic_key(items) == indexing.index_key(index, eager.tensor)[0]
    x = eager.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(x[index].numpy(), x.numpy()[index])
    view = x[index]
    if view.numel():
        view.mul_(0)  # a view: the write reaches x, its version counter shared
        assert float(x.numpy()[index].sum()) == 0.0 and x._version == view._version


def test_other_indices_take_the_general_path():
    from eager._functional import indexing

    for items in [(True,), (np.int64(1),), (slice(None, None, -1),), (slice(0, 2.0),), ([0, 1],)]:
        assert indexing._basic_key(items) is None
    x = eager.arange(6.0)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1]
    np.testing.assert_array_equal(x[np.int64(2)].numpy(), 2.0)
    assert tuple(x[True].shape) == (1, 6)
    w = eager.randn(3, 4, requires_grad=True)
    assert w[:, 1].grad_fn.name() == "SelectBackward0" and w[1:].grad_fn.name() == "SliceBackward0"
    assert w[:].grad_fn.name() == "AliasBackward0" and w[0, None].grad_fn.name() == "UnsqueezeBackward0"


NAMED = [(slice(None), 1), (1,), (slice(1, None),), (slice(None),), (slice(None), slice(None), 2), (Ellipsis, 1),
         (None, 1), (1, None), (1, slice(1, 3)), (slice(0, None), 1), (slice(None, 10), 1), (None,), (Ellipsis,),
         (1, 2), (slice(-3, None),), (slice(None, None, 2),), (Ellipsis, slice(0, 5)), (0, Ellipsis, None), ()]


def test_basic_index_nodes_are_named_as_pytorchs():
    torch = pytest.importorskip("torch")
    ours, theirs = eager.randn(3, 4, 5, requires_grad=True), torch.randn(3, 4, 5, requires_grad=True)
    for index in NAMED:
        assert ours[index].grad_fn.name() == theirs[index].grad_fn.name(), index


def test_a_uint8_index_is_a_mask_with_pytorchs_warning():
    x = eager.arange(12.0).reshape(4, 3)
    with pytest.warns(UserWarning, match="indexing with dtype torch.uint8 is now deprecated"):
        got = x[eager.tensor([1, 0, 1, 0], dtype=eager.uint8)]
    np.testing.assert_array_equal(got.numpy(), x.numpy()[[0, 2]])
    with pytest.warns(UserWarning), pytest.raises(IndexError, match="The shape of the mask"):
        x[eager.tensor([1, 0], dtype=eager.uint8)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_index_add_along_dim_0_has_add_at_bits(dtype):
    from gmops import indexing

    rng = np.random.default_rng(6)
    x = rng.standard_normal((6, 3, 2)).astype(dtype)
    src = rng.standard_normal((9, 3, 2)).astype(dtype)
    idx = rng.integers(0, 6, 9)
    for alpha in (1.0, -2.5):
        want = x.copy()
        np.add.at(want, idx, src * alpha if alpha != 1 else src)
        got = indexing.INDEX_ADD.forward(np, x, idx, src, dim=0, alpha=alpha)
        np.testing.assert_array_equal(got, want)
        assert not np.shares_memory(got, x)
    with pytest.raises(RuntimeError, match="index 6 is out of bounds for dimension 0 with size 6"):
        indexing.INDEX_ADD.forward(np, x, np.r_[idx[:-1], 6], src, dim=0)
    w = eager.tensor(x.astype(np.float64), requires_grad=True)
    picked = eager.tensor(idx)
    assert eager.autograd.gradcheck(lambda a: eager.index_select(a, 0, picked), (w,))
    assert eager.autograd.gradgradcheck(lambda a: eager.index_select(a, 0, picked) ** 2, (w,))


def test_a_broadcast_gradient_takes_the_row_kernel_with_add_at_bits():
    from gmops import indexing

    g = np.broadcast_to(np.float32(0.1), (32, 12, 16))  # x.sum()'s gradient: strides of 0
    idx = np.random.default_rng(7).integers(0, 40, (32, 12))
    want = np.zeros((40, 16), np.float32)
    np.add.at(want, idx.reshape(-1), g.reshape(-1, 16))
    np.testing.assert_array_equal(indexing.EMBEDDING_BACKWARD.forward(np, g, idx, num_weights=40), want)
    got = shape_ops.INDEX_GRAD.forward(np, g, idx, key=(("tensor", 0),), shape=(40, 16), n_index=1)
    np.testing.assert_array_equal(got, want)
