"""Eager's fast paths for model steps give PyTorch's values and gradients: a stack times a
matrix as one product (forward and the matrix's gradient), checked against PyTorch and
finite differences."""
from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.ops import linalg


@pytest.mark.parametrize("shape", [(16, 32, 64), (4, 7, 3, 5), (2, 1, 5)])
def test_a_stack_times_a_matrix_is_one_product(shape, monkeypatch):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(shape).astype(np.float32), rng.standard_normal((shape[-1], 9)).astype(np.float32)
    seen = []
    real = np.matmul

    def counting(x, y, *args, **kw):
        seen.append(x.shape)
        return real(x, y, *args, **kw)

    monkeypatch.setattr(linalg.np, "matmul", counting)
    got = linalg.fold_matmul(np, a, b)
    monkeypatch.undo()
    assert seen == [(int(np.prod(shape[:-1])), shape[-1])]  # one 2-d product of all the rows
    np.testing.assert_allclose(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)
    assert got.shape == shape[:-1] + (9,)


def test_a_strided_stack_is_not_folded():
    a = np.arange(2 * 3 * 4, dtype=np.float64).reshape(2, 4, 3).transpose(0, 2, 1)  # not C-contiguous
    b = np.ones((4, 2))
    np.testing.assert_array_equal(linalg.fold_matmul(np, a, b), np.matmul(a, b))


def test_the_matrix_gradient_of_a_stack_product_is_one_product():
    rng = np.random.default_rng(1)
    a = eager.tensor(rng.standard_normal((3, 4, 5)), requires_grad=True)
    b = eager.tensor(rng.standard_normal((5, 6)), requires_grad=True)
    assert eager.autograd.gradcheck(lambda x, y: (x @ y).sin(), (a, b))
    (a @ b).sum().backward()
    np.testing.assert_allclose(b.grad.numpy(), a.detach().numpy().reshape(-1, 5).T @ np.ones((12, 6)), rtol=1e-12)


def test_a_stack_product_and_its_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    A, B = rng.standard_normal((2, 3, 4, 8)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    ea, eb = eager.tensor(A, requires_grad=True), eager.tensor(B, requires_grad=True)
    ta, tb = torch.tensor(A, requires_grad=True), torch.tensor(B, requires_grad=True)
    (ea @ eb).tanh().sum().backward()
    (ta @ tb).tanh().sum().backward()
    np.testing.assert_allclose((ea @ eb).detach().numpy(), (ta @ tb).detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ea.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(eb.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-5)


# -- GRU and LSTM cells as one node ------------------------------------------------------------------
def _cell_inputs(kind: str, dtype, rng, batch: int = 3, inp: int = 4, hidden: int = 5, bias: bool = True):
    gates = 3 if kind == "gru" else 4
    make = lambda *s: eager.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)  # noqa: E731
    x, h = make(batch, inp), make(batch, hidden)
    w_ih, w_hh = make(gates * hidden, inp), make(gates * hidden, hidden)
    b_ih, b_hh = (make(gates * hidden), make(gates * hidden)) if bias else (None, None)
    c = make(batch, hidden)
    return x, h, c, w_ih, w_hh, b_ih, b_hh


@pytest.mark.parametrize("bias", [True, False])
def test_the_fused_gru_cell_equals_the_op_by_op_cell_and_finite_differences(bias):
    from eager.nn import _fused_cells, rnn

    x, h, _, w_ih, w_hh, b_ih, b_hh = _cell_inputs("gru", np.float64, np.random.default_rng(3), bias=bias)
    args = (x, h, w_ih, w_hh, b_ih, b_hh)
    assert _fused_cells.eligible(*args)
    fused = rnn._gru_cell(*args)
    assert "GRUCell" in type(fused.grad_fn).__name__ or "GRUCell" in fused.grad_fn.name()
    plain = rnn._gru_cell_ops(*args)
    np.testing.assert_allclose(fused.detach().numpy(), plain.detach().numpy(), rtol=1e-12, atol=1e-12)
    wrt = tuple(a for a in args if a is not None)
    g = np.random.default_rng(4).standard_normal(fused.shape)
    got = eager.autograd.grad(fused, wrt, eager.tensor(g))
    want = eager.autograd.grad(plain, wrt, eager.tensor(g))
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    assert eager.autograd.gradcheck(lambda *a: rnn._gru_cell(*a, *((b_ih, b_hh) if bias else (None, None))),
                                    (x, h, w_ih, w_hh))


@pytest.mark.parametrize("bias", [True, False])
def test_the_fused_lstm_cell_equals_the_op_by_op_cell_and_finite_differences(bias):
    from eager.nn import rnn

    x, h, c, w_ih, w_hh, b_ih, b_hh = _cell_inputs("lstm", np.float64, np.random.default_rng(5), bias=bias)
    fused = rnn._lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)
    plain = rnn._lstm_cell_flat(x, h, c, w_ih, w_hh, b_ih, b_hh)
    for a, b in zip(fused, plain):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
    wrt = tuple(a for a in (x, h, c, w_ih, w_hh, b_ih, b_hh) if a is not None)
    rng = np.random.default_rng(6)
    gs = [eager.tensor(rng.standard_normal(fused[0].shape)) for _ in range(2)]
    got = eager.autograd.grad(fused, wrt, gs)
    want = eager.autograd.grad(plain, wrt, gs)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-10, atol=1e-12)
    # one output used alone (the other's gradient is zero), and finite differences
    assert eager.autograd.gradcheck(lambda *a: rnn._lstm_cell(a[0], (a[1], a[2]), *a[3:], b_ih, b_hh)[0],
                                    (x, h, c, w_ih, w_hh))


def test_a_fused_cell_backward_that_records_a_graph_gives_second_derivatives():
    from eager.nn import rnn

    x, h, _, w_ih, w_hh, b_ih, b_hh = _cell_inputs("gru", np.float64, np.random.default_rng(7))
    assert eager.autograd.gradgradcheck(lambda x, h: rnn._gru_cell(x, h, w_ih, w_hh, b_ih, b_hh), (x, h))
    x, h, c, w_ih, w_hh, b_ih, b_hh = _cell_inputs("lstm", np.float64, np.random.default_rng(8))
    assert eager.autograd.gradgradcheck(lambda x, c: rnn._lstm_cell(x, (h, c), w_ih, w_hh, b_ih, b_hh)[1], (x, c))


@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_recurrent_layers_match_pytorch_values_and_gradients(kind, batch_first):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(9)
    ours = getattr(eager.nn, kind)(4, 6, num_layers=2, batch_first=batch_first, bidirectional=True)
    theirs = getattr(torch.nn, kind)(4, 6, num_layers=2, batch_first=batch_first, bidirectional=True)
    theirs.load_state_dict({k: torch.from_numpy(v.detach().numpy().copy()) for k, v in ours.state_dict().items()})
    X = rng.standard_normal((3, 5, 4)).astype(np.float32)
    ex, tx = eager.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    eo, to = ours(ex)[0], theirs(tx)[0]
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-5)
    eo.square().sum().backward()
    to.square().sum().backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)
    for (name, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_a_traced_cell_runs_op_by_op():
    """Under static.compile the cell's ops are recorded (the fused node is eager's only)."""
    import static

    cell = eager.nn.GRUCell(3, 4)
    f = static.compile(lambda x, h: cell(x, h).sum(), backend="numpy")
    x, h = eager.randn(2, 3), eager.randn(2, 4)
    np.testing.assert_allclose(f(x, h).item(), cell(x, h).sum().item(), rtol=1e-5)


# -- multi-tensor (foreach) optimizer updates ---------------------------------------------------------
_X = np.random.default_rng(10).standard_normal((4, 5)).astype(np.float32)


def _train(cls, foreach, steps=4, freeze_some=False, **kw):
    eager.manual_seed(0)
    model = eager.nn.Sequential(eager.nn.Linear(5, 7), eager.nn.Tanh(), eager.nn.Linear(7, 3))
    opt = cls(model.parameters(), lr=1e-2, foreach=foreach, **kw)
    x = eager.tensor(_X)
    for k in range(steps):
        opt.zero_grad()
        model(x).square().sum().backward()
        if freeze_some and k == 1:
            model[0].bias.grad = None  # one parameter skips a step: step counts differ after
        opt.step()
    return model, opt


_CASES = [(eager.optim.Adam, {}), (eager.optim.Adam, {"amsgrad": True, "weight_decay": 0.1}),
          (eager.optim.AdamW, {"weight_decay": 0.1}), (eager.optim.Adam, {"maximize": True}),
          (eager.optim.SGD, {}), (eager.optim.SGD, {"momentum": 0.9, "dampening": 0.2}),
          (eager.optim.SGD, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01})]


@pytest.mark.parametrize("cls, kw", _CASES)
@pytest.mark.parametrize("freeze_some", [False, True])
@pytest.mark.parametrize("native", [True, False])
def test_foreach_updates_give_the_per_parameter_bits(cls, kw, freeze_some, native, monkeypatch):
    from eager.optim import optimizer

    if not native:  # the NumPy multi-tensor update over flat buffers (where no compiler is found)
        monkeypatch.setattr(optimizer, "_native", False)
    one, opt_one = _train(cls, False, freeze_some=freeze_some, **kw)
    many, opt_many = _train(cls, None, freeze_some=freeze_some, **kw)
    for p, q in zip(one.parameters(), many.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    # (plain SGD updates each array in place: no flat state to keep; the native update works
    # on each parameter's own arrays)
    plain_sgd = cls is eager.optim.SGD and not kw
    on_arrays = optimizer.native_updates() is not None
    assert not opt_one._flat and (opt_many._flat or freeze_some or plain_sgd or on_arrays)
    for st_one, st_many in zip(opt_one.state.values(), opt_many.state.values()):
        assert st_one.keys() == st_many.keys()
        for k, v in st_one.items():
            w = st_many[k]
            if isinstance(v, eager.Tensor):
                np.testing.assert_array_equal(v.numpy(), w.numpy(), err_msg=k)
            else:
                assert v == w


@pytest.mark.parametrize("cls, kw", _CASES[:1] + _CASES[5:6])
def test_foreach_state_survives_a_save_and_load(cls, kw):
    model, opt = _train(cls, None, **kw)
    saved = opt.state_dict()
    twin, opt_twin = _train(cls, False, **kw)
    opt.load_state_dict(saved)  # new state tensors: the next step lays the buffers out again
    x = eager.tensor(_X)
    for m, o in ((model, opt), (twin, opt_twin)):
        for _ in range(2):
            o.zero_grad()
            m(x).square().sum().backward()
            o.step()
    for p, q in zip(model.parameters(), twin.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())


def test_foreach_updates_match_pytorch():
    torch = pytest.importorskip("torch")
    for name, kw in (("AdamW", {"weight_decay": 0.1}), ("SGD", {"momentum": 0.9, "nesterov": True})):
        eager.manual_seed(0)
        ours = eager.nn.Sequential(eager.nn.Linear(5, 7), eager.nn.Tanh(), eager.nn.Linear(7, 3))
        theirs = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
        theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in ours.state_dict().items()})
        o1 = getattr(eager.optim, name)(ours.parameters(), lr=1e-2, **kw)
        o2 = getattr(torch.optim, name)(theirs.parameters(), lr=1e-2, foreach=False, **kw)
        for _ in range(3):
            o1.zero_grad()
            o2.zero_grad()
            ours(eager.tensor(_X)).square().sum().backward()
            theirs(torch.tensor(_X)).square().sum().backward()
            o1.step()
            o2.step()
        # the multi-tensor path ran: over flat buffers, or natively on each parameter's arrays
        assert o1._flat or eager.optim.optimizer.native_updates() is not None
        for p, q in zip(ours.parameters(), theirs.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6, err_msg=name)


def test_mixed_dtypes_update_one_parameter_at_a_time():
    a = eager.nn.Parameter(eager.ones(3))
    b = eager.nn.Parameter(eager.ones(2, dtype=eager.float64))
    opt = eager.optim.Adam([a, b], lr=0.1)
    (a.sum() + b.sum()).backward()
    opt.step()
    assert not opt._flat
    np.testing.assert_allclose(a.detach().numpy(), 0.9, rtol=1e-6)
    np.testing.assert_allclose(b.detach().numpy(), 0.9, rtol=1e-8)  # (eps in the denominator)


# -- a TensorDataset's batches ---------------------------------------------------------------------
@pytest.mark.parametrize("shuffle, drop_last", [(False, False), (True, False), (True, True)])
def test_a_tensor_dataset_batch_is_its_rows_gathered_at_once(shuffle, drop_last, monkeypatch):
    from eager.utils.data import DataLoader, TensorDataset

    X = eager.randn(37, 3, 2)
    Y = eager.arange(37)
    seen_batches = []
    loader = DataLoader(TensorDataset(X, Y), batch_size=8, shuffle=shuffle, drop_last=drop_last)
    real = type(loader)._fetch

    def fetch(self, what):
        seen_batches.append(list(what))
        return real(self, what)

    monkeypatch.setattr(type(loader), "_fetch", fetch)
    calls = []
    real_getitem = TensorDataset.__getitem__
    monkeypatch.setattr(TensorDataset, "__getitem__", lambda self, i: calls.append(i) or real_getitem(self, i))
    batches = list(loader)
    assert not calls  # no sample fetched one at a time
    assert len(batches) == (4 if drop_last else 5)
    for (xb, yb), rows in zip(batches, seen_batches):
        np.testing.assert_array_equal(yb.numpy(), np.array(rows))
        np.testing.assert_array_equal(xb.numpy(), X.numpy()[rows])
        assert xb.dtype == X.dtype and yb.dtype == Y.dtype


def test_a_custom_collate_still_gets_the_samples():
    from eager.utils.data import DataLoader, TensorDataset

    ds = TensorDataset(eager.arange(6.0), eager.arange(6))
    got = list(DataLoader(ds, batch_size=4, collate_fn=lambda samples: len(samples)))
    assert got == [4, 2]


# -- a view of one tensor -----------------------------------------------------------------------------
def test_a_view_of_one_tensor_shares_memory_version_and_gradient():
    torch = pytest.importorskip("torch")
    base = eager.randn(4, 6, requires_grad=True)
    y = base * 2.0
    v = y.reshape(6, 4).transpose(0, 1)
    assert v._base is y and v._vc is y._vc and np.shares_memory(v._data, y._data)
    assert v.grad_fn.name() == "TransposeBackward0"
    before = v._version
    y.add_(1.0)  # a write into the base is seen by the view and counts for it
    assert v._version == before + 1
    np.testing.assert_allclose(v.detach().numpy(), (base.detach().numpy() * 2 + 1).reshape(6, 4).T)
    (v * v).sum().backward()
    tb = torch.tensor(base.detach().numpy(), requires_grad=True)
    ty = tb * 2.0
    ty.add_(1.0)
    tv = ty.reshape(6, 4).transpose(0, 1)
    (tv * tv).sum().backward()
    np.testing.assert_allclose(base.grad.numpy(), tb.grad.numpy(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="reshape"):
        y.reshape(5, 5)


# -- where by selecting bits ---------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_where_by_bits_gives_numpys_bits(dtype):
    from eager.ops import elementwise as E

    rng = np.random.default_rng(11)
    shape = (64, 300)  # above SELECT_BITS_MIN
    assert np.prod(shape) >= E.SELECT_BITS_MIN
    a, b = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    a[0, :8] = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-45, -1e-40, 3]
    b[0, :8] = [-0.0, np.nan, 1, 2, -np.inf, 0, -0.0, np.nan]
    c = rng.random(shape) < 0.5

    def bits(x):
        return np.ascontiguousarray(x).view(np.uint8)

    for other in (0.0, -0.0, 1.5, 3, float("nan"), b):
        for got, want in ((E._where(np, c, a, other), np.where(c, a, other)),
                          (E._where(np, c, other, a), np.where(c, other, a))):
            assert got.dtype == want.dtype and got.shape == want.shape
            np.testing.assert_array_equal(bits(got), bits(want))
    np.testing.assert_array_equal(bits(E._where(np, c.T, a.T, 0.0)), bits(np.where(c.T, a.T, 0.0)))


def test_relu_gradient_through_where_matches_pytorch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(12).standard_normal((8, 64, 40)).astype(np.float32)
    x[0, 0, :2] = [0.0, -0.0]  # (at NaN PyTorch passes the gradient on and relu's VJP gives 0: not covered here)
    ex, tx = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    g = np.random.default_rng(13).standard_normal(x.shape).astype(np.float32)
    eager.nn.functional.relu(ex).backward(eager.tensor(g))
    torch.nn.functional.relu(tx).backward(torch.tensor(g))
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


# -- cross_entropy's loss after log_softmax as one node ------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_fused_cross_entropy_matches_pytorch_graph_values_and_gradients(reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(14)
    X, T = rng.standard_normal((16, 7)).astype(np.float32), rng.integers(0, 7, 16)
    ex, tx = eager.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    el = eager.nn.functional.cross_entropy(ex, eager.tensor(T), reduction=reduction)
    tl = torch.nn.functional.cross_entropy(tx, torch.tensor(T), reduction=reduction)
    assert el.grad_fn.name() == tl.grad_fn.name() == "NllLossBackward0"
    assert el.grad_fn.next_functions[0][0].name() == tl.grad_fn.next_functions[0][0].name()
    np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), rtol=1e-6, atol=1e-6)
    g = rng.standard_normal(tl.shape).astype(np.float32)
    el.backward(eager.tensor(g))
    tl.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_fused_cross_entropy_has_exact_first_and_second_derivatives():
    x = eager.randn(5, 4, dtype=eager.float64, requires_grad=True)
    t = eager.tensor([0, 3, 1, 1, 2])
    assert eager.autograd.gradcheck(lambda a: eager.nn.functional.cross_entropy(a, t), (x,))
    assert eager.autograd.gradgradcheck(lambda a: eager.nn.functional.cross_entropy(a, t, reduction="sum"), (x,))


def test_targets_out_of_range_or_ignored_take_the_op_path():
    from eager.nn import _fused_losses

    x = eager.randn(3, 4)
    assert not _fused_losses.eligible(x, eager.tensor([0, 4, 1]), None, -100, "mean", 0.0)
    assert _fused_losses.eligible(x, eager.tensor([0, -100, 1]), None, -100, "mean", 0.0)  # masked, fused
    with pytest.raises(IndexError, match="out of bounds"):
        eager.nn.functional.cross_entropy(x, eager.tensor([0, 4, 1]))
    ignored = eager.nn.functional.cross_entropy(x, eager.tensor([0, -100, 1]))
    logp = np.log(np.exp(x.numpy()) / np.exp(x.numpy()).sum(1, keepdims=True))
    np.testing.assert_allclose(ignored.item(), -(logp[0, 0] + logp[2, 1]) / 2, rtol=1e-5)
