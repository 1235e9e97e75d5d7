"""Sparse COO tensors against PyTorch: construction and its checks, coalesce, to_dense,
to_sparse, the products (sparse.mm, spmm, mm, @, addmm) with gradients to the values and
to the dense operand, a sparse leaf's sparse .grad, sparse + dense, sparse * dense, and the
clear error for ops that have no sparse form here."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

IDX = [[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]]  # (0, 2) twice: uncoalesced
VALS = [3.0, 4.0, 5.0, 1.0, -2.0]


def _sparse(lib, requires_grad=False, leaf=False):
    v = lib.tensor(VALS, dtype=lib.float64, requires_grad=requires_grad and not leaf)
    s = lib.sparse_coo_tensor(IDX, v, (3, 3), requires_grad=leaf, check_invariants=True)
    return s, v


def _np(t):
    return (t.to_dense() if t.is_sparse else t).detach().numpy()


def test_construction_and_coalesce_match_pytorch():
    (se, _), (st, _) = _sparse(eager), _sparse(torch)
    assert se.is_sparse and st.is_sparse and se.layout is eager.sparse_coo
    assert str(se.layout) == str(st.layout) == "torch.sparse_coo"
    assert tuple(se.shape) == tuple(st.shape) and se.dtype is eager.float64
    assert se._nnz() == st._nnz() == 5 and se.sparse_dim() == st.sparse_dim() and se.dense_dim() == st.dense_dim()
    assert se.is_coalesced() == st.is_coalesced() is False
    np.testing.assert_array_equal(_np(se._indices()), _np(st._indices()))
    np.testing.assert_array_equal(_np(se.to_dense()), _np(st.to_dense()))
    ce, ct = se.coalesce(), st.coalesce()
    assert ce.is_coalesced() and ce._nnz() == ct._nnz() == 4
    np.testing.assert_array_equal(_np(ce.indices()), _np(ct.indices()))
    np.testing.assert_array_equal(_np(ce.values()), _np(ct.values()))
    with pytest.raises(RuntimeError, match="uncoalesced"):
        se.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        st.indices()


def test_size_is_inferred_and_checked_like_pytorch():
    e = eager.sparse_coo_tensor([[0, 4], [1, 2]], [1.0, 2.0], check_invariants=True)
    t = torch.sparse_coo_tensor([[0, 4], [1, 2]], [1.0, 2.0], check_invariants=True)
    assert tuple(e.shape) == tuple(t.shape) == (5, 3)
    # eager always checks what PyTorch checks with check_invariants=True (PyTorch's default
    # leaves an out-of-range index to fail, or corrupt memory, later)
    for bad, msg in [(dict(indices=[[0, 3]], values=[1.0, 2.0], size=(3,)), "size is inconsistent with indices"),
                     (dict(indices=[[0, 1]], values=[1.0, 2.0, 3.0], size=(3,)), "must have same nnz"),
                     (dict(indices=[[0, -1]], values=[1.0, 2.0], size=(3,)), "found negative index -1 for dim 0")]:
        with pytest.raises(RuntimeError, match=msg):
            torch.sparse_coo_tensor(**bad, check_invariants=True)
        with pytest.raises(RuntimeError, match=msg):
            eager.sparse_coo_tensor(**bad)


def _product(lib, how):
    s, v = _sparse(lib, requires_grad=True)
    d = lib.tensor(np.arange(12.0).reshape(3, 4) / 7 - 0.5, dtype=lib.float64, requires_grad=True)
    if how == "sparse.mm":
        y = lib.sparse.mm(s, d)
    elif how == "mm":
        y = lib.mm(s, d)
    elif how == "matmul":
        y = s @ d
    elif how == "spmm":
        y = lib.spmm(s, d)
    elif how == "addmm":
        y = lib.sparse.addmm(lib.ones(3, 4, dtype=lib.float64), s, d, beta=0.5, alpha=2.0)
    elif how == "mv":
        y = s @ d[:, 0]
    else:  # dense @ sparse
        y = lib.mm(d.t(), s)
    y.backward(lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)), dtype=lib.float64))
    return _np(y), _np(v.grad), _np(d.grad)


@pytest.mark.parametrize("how", ["sparse.mm", "mm", "matmul", "spmm", "addmm", "mv", "dense@sparse"])
def test_products_and_their_gradients_match_pytorch(how):
    for a, b in zip(_product(eager, how), _product(torch, how)):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_a_sparse_leafs_grad_is_sparse_on_its_pattern_like_pytorch():
    grads = []
    for lib in (eager, torch):
        s, _ = _sparse(lib, leaf=True)
        assert s.requires_grad and s.is_leaf
        d = lib.tensor(np.linspace(-1, 1, 6).reshape(3, 2), dtype=lib.float64)
        lib.sparse.mm(s, d).sum().backward()
        assert s.grad.is_sparse
        grads.append(s.grad.coalesce())
    np.testing.assert_array_equal(_np(grads[0].indices()), _np(grads[1].indices()))
    np.testing.assert_allclose(_np(grads[0].values()), _np(grads[1].values()), rtol=1e-12)


def _arith(lib, how):
    s, v = _sparse(lib, requires_grad=True)
    d = lib.tensor(np.arange(9.0).reshape(3, 3) - 4, dtype=lib.float64, requires_grad=True)
    if how == "d+s":
        y = d + s
    elif how == "d-s":
        y = d - s
    elif how == "s+s":
        y = (s + s * 0.5).to_dense()
    elif how == "s*d":
        y = (s * d).to_dense()
    elif how == "s*2":
        y = (s * 2.0).to_dense()
    elif how == "-s":
        y = (-s).to_dense()
    elif how == "t":
        y = s.t().to_dense() * d
    elif how == "sum":
        y = lib.sparse.sum(s) * d
    else:  # coalesce then to_dense
        y = s.coalesce().to_dense() * d
    y.backward(lib.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape)), dtype=lib.float64))
    return _np(y), _np(v.grad), None if d.grad is None else _np(d.grad)


@pytest.mark.parametrize("how", ["d+s", "d-s", "s+s", "s*d", "s*2", "-s", "t", "sum", "coalesce"])
def test_arithmetic_and_gradients_match_pytorch(how):
    for a, b in zip(_arith(eager, how), _arith(torch, how)):
        if a is None or b is None:
            assert (a is None or not a.any()) and (b is None or not b.any())
            continue
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("sparse_dim", [None, 1, 2])
def test_to_sparse_and_back_with_gradients_like_pytorch(sparse_dim):
    out = []
    for lib in (eager, torch):
        x = lib.tensor([[0.0, 2.0, 0.0], [0.0, 0.0, 0.0], [3.0, 0.0, -1.0]], dtype=lib.float64, requires_grad=True)
        s = x.to_sparse() if sparse_dim is None else x.to_sparse(sparse_dim)
        y = lib.sparse.mm(s, lib.ones(3, 2, dtype=lib.float64)) if s.dense_dim() == 0 else s.to_dense() * 2
        y.sum().backward()
        out.append((_np(s._indices()), _np(s._values()), s.is_coalesced(), _np(y), _np(x.grad)))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)


def test_unsupported_ops_raise_naming_the_op_and_to_dense():
    s, _ = _sparse(eager)
    with pytest.raises(RuntimeError, match=r"exp: .*sparse.*to_dense\(\)"):
        eager.exp(s)
    with pytest.raises(RuntimeError, match="to_dense"):
        s.view(9)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        eager.sparse.mm(s, eager.ones(4, 2, dtype=eager.float64))
    with pytest.raises(RuntimeError, match="same size"):
        eager.ones(3, dtype=eager.float64) + s
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        s + eager.ones(3, 3, dtype=eager.float64)
    with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
        torch.sparse_coo_tensor(IDX, VALS, (3, 3), check_invariants=True) + torch.ones(3, 3)
    with pytest.raises(TypeError, match="to_dense"):
        s.numpy()
    assert not eager.ones(2).is_sparse and eager.ones(2).layout is eager.strided


def test_sparse_values_dtype_cast_and_unary_ops_stay_sparse():
    s, _ = _sparse(eager)
    f = s.float()
    assert f.is_sparse and f.dtype is eager.float32
    a = eager.abs(-s)
    assert a.is_sparse
    np.testing.assert_array_equal(_np(a.to_dense()), np.abs(_np(s.to_dense())))
    st, _ = _sparse(torch)
    np.testing.assert_allclose(_np(eager.sqrt(eager.abs(s)).to_dense()), _np(torch.sqrt(torch.abs(st)).to_dense()))


def test_a_gcn_layer_written_as_pygcn_trains_like_pytorch():
    """pygcn's idiom: torch.sparse.FloatTensor(indices, values, shape) for the normalized
    adjacency, torch.spmm(adj, x @ W) per layer; gradients of W against PyTorch."""
    rng = np.random.default_rng(3)
    n, f, h = 6, 4, 3
    rows, cols = np.nonzero(rng.random((n, n)) < 0.4)
    vals = rng.random(rows.size).astype(np.float32)
    x0, w0 = rng.standard_normal((n, f)).astype(np.float32), rng.standard_normal((f, h)).astype(np.float32)
    out = []
    for lib in (eager, torch):
        idx = lib.from_numpy(np.vstack((rows, cols)).astype(np.int64))
        with pytest.warns(UserWarning, match="is deprecated"):
            adj = lib.sparse.FloatTensor(idx, lib.from_numpy(vals), lib.Size([n, n]))
        w = lib.tensor(w0, requires_grad=True)
        y = lib.relu(lib.spmm(adj, lib.tensor(x0) @ w))
        loss = lib.nn.functional.log_softmax(y, dim=1).sum()
        loss.backward()
        out.append((loss.item(), w.grad.numpy(), adj.to_dense().numpy()))
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5)
    np.testing.assert_allclose(out[0][1], out[1][1], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(out[0][2], out[1][2])


def test_a_compiled_function_closing_over_a_sparse_matrix_matches_eager():
    import static

    s = eager.sparse_coo_tensor(IDX, eager.tensor(VALS, dtype=eager.float64), (3, 3))
    lin = eager.nn.Linear(4, 4).double()

    def step(x):
        return eager.spmm(s, lin(x)).tanh().sum()

    x = eager.tensor(np.linspace(-1, 1, 12).reshape(3, 4))
    compiled = static.compile(step)
    a = compiled(x)
    a.backward()
    grad_c = lin.weight.grad.numpy().copy()
    lin.weight.grad = None
    b = step(x)
    b.backward()
    np.testing.assert_allclose(a.item(), b.item(), rtol=1e-12)
    np.testing.assert_allclose(grad_c, lin.weight.grad.numpy(), rtol=1e-10, atol=1e-12)


def _pygat_layer(lib):
    """pyGAT's sparse attention: a custom autograd Function saving a sparse matrix, its
    backward reading _indices() and multiplying by a.t(); factories called with size=."""

    class SpecialSpmm(lib.autograd.Function):
        @staticmethod
        def forward(ctx, indices, values, shape, b):
            a = lib.sparse_coo_tensor(indices, values, shape, check_invariants=True)
            ctx.save_for_backward(a, b)
            ctx.N = shape[0]
            return lib.matmul(a, b)

        @staticmethod
        def backward(ctx, grad_output):
            a, b = ctx.saved_tensors
            grad_values = grad_b = None
            if ctx.needs_input_grad[1]:
                edge_idx = a._indices()[0, :] * ctx.N + a._indices()[1, :]
                grad_values = grad_output.matmul(b.t()).view(-1)[edge_idx]
            if ctx.needs_input_grad[3]:
                grad_b = a.t().matmul(grad_output)
            return None, grad_values, None, grad_b

    rng = np.random.default_rng(0)
    n = 5
    edge = lib.tensor(np.array([[0, 1, 1, 2, 3, 4, 4], [1, 0, 2, 3, 4, 0, 2]]))
    h = lib.tensor(rng.standard_normal((n, 3)), requires_grad=True)
    a = lib.tensor(rng.standard_normal(6), requires_grad=True)
    edge_h = lib.cat((h[edge[0, :], :], h[edge[1, :], :]), dim=1).t()
    edge_e = lib.exp(-lib.nn.functional.leaky_relu(a.unsqueeze(0).mm(edge_h).squeeze(), 0.2))
    rowsum = SpecialSpmm.apply(edge, edge_e, lib.Size([n, n]), lib.ones(size=(n, 1), dtype=lib.float64))
    h_prime = SpecialSpmm.apply(edge, edge_e, lib.Size([n, n]), h).div(rowsum + 1e-9)
    h_prime.sum().backward()
    return h_prime.detach().numpy(), h.grad.numpy(), a.grad.numpy()


def test_a_pygat_sparse_attention_layer_matches_pytorch():
    for e, t in zip(_pygat_layer(eager), _pygat_layer(torch)):
        np.testing.assert_allclose(e, t, rtol=1e-10, atol=1e-14)
