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


@pytest.fixture
def _restore_print_and_dtype():
    yield
    eager.set_printoptions(profile="default")
    eager.set_default_dtype(eager.float32)
    torch = pytest.importorskip("torch")
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


@pytest.mark.usefixtures("_restore_print_and_dtype")
def test_tensor_printing_follows_pytorchs_formatter() -> None:
    torch = _torch()
    cases = [[1e6, 2.0, 3.0], [0.001, 1000.0], [float("nan"), float("inf"), 1.0], [-0.0, 0.5], list(range(1200)),
             [1e-5, 6e4], [1.5, -2.25, 1e8], [0.0, 0.0], [12345.678, 1.0]]
    for values in cases:
        for name in ("float32", "float16", "float64"):
            want = repr(torch.tensor(values, dtype=getattr(torch, name))).replace("torch.", "")
            got = repr(eager.tensor(values, dtype=getattr(eager, name))).replace("eager.", "")
            assert got == want, (values, name)
    for shape in ((100, 20), (3, 400), (4, 5, 6), (2, 1000)):
        n = 1
        for s in shape:
            n *= s
        assert repr(eager.arange(n).reshape(shape)) == repr(torch.arange(n).reshape(shape))
        assert repr(eager.arange(float(n)).reshape(shape) / 7) == repr(torch.arange(float(n)).reshape(shape) / 7)
    for kwargs in (dict(precision=2), dict(sci_mode=False), dict(sci_mode=True), dict(threshold=5, edgeitems=1),
                   dict(linewidth=40), dict(profile="short")):
        eager.set_printoptions(**kwargs)
        torch.set_printoptions(**kwargs)
        for values in ([1e-5, 1.0], [1.23456, 2.0], list(range(30))):
            assert repr(eager.tensor(values)) == repr(torch.tensor(values)), (kwargs, values)
        eager.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")
    eager.set_default_dtype(eager.float64)
    torch.set_default_dtype(torch.float64)
    for dt in ("float32", "float64"):
        want = repr(torch.tensor([1.5], dtype=getattr(torch, dt))).replace("torch.", "")
        assert repr(eager.tensor([1.5], dtype=getattr(eager, dt))).replace("eager.", "") == want
        want = repr(torch.zeros(0, dtype=getattr(torch, dt))).replace("torch.", "")
        assert repr(eager.zeros(0, dtype=getattr(eager, dt))).replace("eager.", "") == want


OPTIMIZERS = ["ASGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Rprop", "SGD",
              "LBFGS"]


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_signatures_and_param_groups_match_pytorchs(name: str) -> None:
    # nanoGPT's configure_optimizers asks `'fused' in inspect.signature(torch.optim.AdamW).parameters`;
    # checkpoints carry every group key PyTorch's optimizers write
    import inspect

    torch = _torch()
    want = [(k, v.kind, repr(v.default)) for k, v in inspect.signature(getattr(torch.optim, name)).parameters.items()]
    got = [(k, v.kind, repr(v.default)) for k, v in inspect.signature(getattr(eager.optim, name)).parameters.items()]
    assert got == want
    kw = {} if name == "LBFGS" else {"lr": 0.1}
    tg = getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2))], **kw).param_groups[0]
    eg = getattr(eager.optim, name)([eager.nn.Parameter(eager.ones(2))], **kw).param_groups[0]
    assert {k: v for k, v in eg.items() if k != "params"} == {k: v for k, v in tg.items() if k != "params"}


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "Adagrad"])
def test_fused_with_foreach_is_refused_as_pytorch(name: str) -> None:
    torch = _torch()
    for lib in (torch, eager):
        p = lib.nn.Parameter(lib.ones(2))
        with pytest.raises(RuntimeError, match="`fused` and `foreach` cannot be `True` together"):
            getattr(lib.optim, name)([p], lr=0.1, fused=True, foreach=True)


def test_adam_decoupled_weight_decay_is_adamw() -> None:
    torch = _torch()
    import numpy as np

    results = []
    for lib, cls, kw in ((torch, "Adam", dict(decoupled_weight_decay=True)), (eager, "Adam", dict(decoupled_weight_decay=True)),
                         (eager, "AdamW", {}), (eager, "Adam", dict(fused=True))):
        w = lib.nn.Parameter(lib.tensor([1.0, -2.0, 3.0]))
        opt = getattr(lib.optim, cls)([w], lr=0.1, weight_decay=0.5, **kw)
        for _ in range(3):
            opt.zero_grad()
            (w ** 2).sum().backward()
            opt.step()
        results.append(w.detach().numpy().copy())
    np.testing.assert_allclose(results[1], results[0], rtol=1e-6)
    np.testing.assert_array_equal(results[1], results[2])
    assert not np.allclose(results[3], results[1])  # plain Adam (fused is only a kernel choice) differs


def test_format_of_tensors_as_pytorch() -> None:
    # print(f"loss {loss}") shows the Python number of a 0-d tensor, as PyTorch's
    torch = _torch()
    for lib in (torch, eager):
        p = lib.nn.Parameter(lib.tensor(1.0))
        got = (f"{lib.tensor(0.3)}", f"{lib.tensor(3)}", f"{lib.tensor(True)}", f"{lib.tensor(2.5):.3f}",
               f"{lib.ones(2)}", f"{p}".replace("eager.", "torch."))
        assert got == ("0.30000001192092896", "3", "True", "2.500", "tensor([1., 1.])",
                       "Parameter containing:\ntensor(1., requires_grad=True)")
        with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
            f"{lib.ones(2):.2f}"


def test_distributions_module_paths_repr_and_register_kl() -> None:
    torch = _torch()
    from eager.distributions.categorical import Categorical  # noqa: F401  (torch's module paths import)
    from eager.distributions.kl import kl_divergence, register_kl
    from eager.distributions.normal import Normal

    for lib in (torch, eager):
        D = lib.distributions
        reprs = [repr(d).replace("eager.", "torch.") for d in (
            D.Normal(lib.tensor(0.0), lib.tensor(1.0)), D.Normal(lib.zeros(2), 1.0), D.Normal(lib.zeros(1), 1.0),
            D.Categorical(logits=lib.zeros(3)), D.Categorical(probs=lib.ones(3)), D.Bernoulli(logits=lib.zeros(2)),
            D.Bernoulli(probs=lib.tensor(0.25)), D.Uniform(0.0, 1.0))]
        assert reprs == ["Normal(loc: 0.0, scale: 1.0)", "Normal(loc: torch.Size([2]), scale: torch.Size([2]))",
                         "Normal(loc: tensor([0.]), scale: tensor([1.]))", "Categorical(logits: torch.Size([3]))",
                         "Categorical(probs: torch.Size([3]))", "Bernoulli(logits: torch.Size([2]))",
                         "Bernoulli(probs: 0.25)", "Uniform(low: 0.0, high: 1.0)"]
    assert Normal is eager.distributions.Normal and kl_divergence is eager.distributions.kl_divergence

    class Wide(Normal):
        pass

    @register_kl(Wide, Normal)
    def _kl_wide(p, q):
        return eager.tensor(42.0)

    assert kl_divergence(Wide(0.0, 1.0), Normal(0.0, 1.0)).item() == 42.0
    assert kl_divergence(Normal(0.0, 1.0), Normal(0.0, 1.0)).item() == 0.0


def _copy_params(src, dst) -> None:
    import numpy as np

    with eager.no_grad():
        for (n1, p1), (n2, p2) in zip(src.named_parameters(), dst.named_parameters()):
            assert n1 == n2
            p2.copy_(eager.tensor(np.asarray(p1.detach().numpy())))


@pytest.mark.parametrize("kind", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_packed_sequences_through_recurrent_layers_match_pytorch(kind: str, enforce_sorted: bool) -> None:
    import numpy as np

    torch = _torch()
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    mine = getattr(eager.nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True)
    _copy_params(ref, mine)
    x = np.random.default_rng(0).standard_normal((3, 5, 3)).astype(np.float32)
    lengths = [5, 3, 2] if enforce_sorted else [2, 5, 3]
    h0 = np.random.default_rng(1).standard_normal((4, 3, 4)).astype(np.float32)
    results = []
    for lib, model in ((torch, ref), (eager, mine)):
        xt = lib.tensor(x, requires_grad=True)
        hx = lib.tensor(h0)
        if kind == "LSTM":
            hx = (hx, lib.tensor(h0 * 0.5))
        packed = lib.nn.utils.rnn.pack_padded_sequence(xt, lib.tensor(lengths), batch_first=True,
                                                       enforce_sorted=enforce_sorted)
        assert isinstance(packed, lib.nn.utils.rnn.PackedSequence)
        out, h = model(packed, hx)
        assert isinstance(out, lib.nn.utils.rnn.PackedSequence)
        padded, lens = lib.nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=6)
        h = h[0] if kind == "LSTM" else h
        (padded.sum() + (h * h).sum()).backward()
        results.append((padded.detach().numpy(), lens.tolist(), str(lens.dtype).split(".")[1], h.detach().numpy(),
                        xt.grad.numpy(), out.batch_sizes.tolist(), out.data.shape[0]))
    (p1, l1, d1, h1, g1, b1, n1), (p2, l2, d2, h2, g2, b2, n2) = results
    assert (l1, d1, b1, n1) == (l2, d2, b2, n2)
    np.testing.assert_allclose(p2, p1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h2, h1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g2, g1, rtol=1e-4, atol=1e-5)


def test_packing_helpers_and_errors_match_pytorch() -> None:
    torch = _torch()
    for lib in (torch, eager):
        rnn = lib.nn.utils.rnn
        seqs = [lib.tensor([1.0, 2.0, 3.0]), lib.tensor([4.0]), lib.tensor([5.0, 6.0])]
        packed = rnn.pack_sequence(seqs, enforce_sorted=False)
        assert packed.data.tolist() == [1.0, 5.0, 4.0, 2.0, 6.0, 3.0]
        assert packed.batch_sizes.tolist() == [3, 2, 1] and packed.sorted_indices.tolist() == [0, 2, 1]
        assert [s.tolist() for s in rnn.unpack_sequence(packed)] == [[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]]
        padded = rnn.pad_sequence(seqs, batch_first=True)
        assert [s.tolist() for s in rnn.unpad_sequence(padded, lib.tensor([3, 1, 2]), batch_first=True)] == \
            [[1.0, 2.0, 3.0], [4.0], [5.0, 6.0]]
        with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
            rnn.pack_sequence(seqs)
        with pytest.raises(ValueError, match="Expected total_length to be at least"):
            rnn.pad_packed_sequence(packed, total_length=2)


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "std", "var", "amax", "amin", "logsumexp", "all", "any",
                                  "max", "min", "argmax", "argmin"])
def test_reductions_take_numpys_axis_and_keepdims_as_pytorch(name: str) -> None:
    # makemore: P /= P.sum(1, keepdims=True); PyTorch's parser takes axis= and keepdims= everywhere
    torch = _torch()
    import numpy as np

    x = np.arange(1.0, 7.0, dtype=np.float32).reshape(2, 3)
    results = []
    for lib in (torch, eager):
        t = lib.tensor(x)
        a = getattr(t, name)(axis=1, keepdims=True)
        b = getattr(lib, name)(t, 1, keepdims=True)
        a = a[0] if isinstance(a, tuple) else a
        b = b[0] if isinstance(b, tuple) else b
        results.append((np.asarray(a.float().numpy()), np.asarray(b.float().numpy()), tuple(a.shape)))
    np.testing.assert_allclose(results[1][0], results[0][0], rtol=1e-6)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-6)
    assert results[1][2] == results[0][2]


def test_return_types_print_as_pytorchs() -> None:
    torch = _torch()
    import pickle

    for lib in (torch, eager):
        x = lib.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        for r, name in ((x.max(1), "max"), (x.min(1), "min"), (x.sort(1), "sort"), (x.topk(2), "topk"),
                        (x.median(1), "median"), (x.kthvalue(2, 1), "kthvalue"), (x.cummax(1), "cummax")):
            prefix = lib.__name__ + ".return_types." + name
            assert repr(r) == f"{prefix}(\nvalues={r.values!r},\nindices={r.indices!r})"
            assert str(r) == repr(r)
            values, indices = r
            assert values is r[0] and indices is r.indices
        assert pickle.loads(pickle.dumps(x.max(1))).indices.tolist() == [0, 1]


def test_multihead_attention_prints_as_pytorchs() -> None:
    torch = _torch()
    for lib in (torch, eager):
        mha = lib.nn.MultiheadAttention(8, 2, batch_first=True)
        assert repr(mha) == ("MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizableLinear(in_features=8, "
                             "out_features=8, bias=True)\n)")
        assert isinstance(mha.out_proj, lib.nn.Linear)
        assert type(mha.out_proj) is lib.nn.modules.linear.NonDynamicallyQuantizableLinear


def test_assert_close_messages_are_pytorchs() -> None:
    torch = _torch()

    def cases(lib):
        return [(lib.ones(2), lib.ones(3)), (lib.tensor([1.0, 2.0, 3.0]), lib.tensor([1.0, 2.5, 3.1])),
                (lib.tensor([1, 2]), lib.tensor([1, 3])), ({"a": lib.ones(1)}, {"a": lib.zeros(1)}),
                ([lib.ones(1), {"b": [lib.ones(2)]}], [lib.ones(1), {"b": [lib.zeros(2)]}]),
                (lib.tensor(1.0), lib.tensor(2.0)), (lib.tensor([float("nan")]), lib.tensor([float("nan")])),
                (lib.ones(1), lib.ones(1, dtype=lib.float64)),
                (lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64),
                 lib.tensor([[1.0, 2.0], [3.0, 4.1]], dtype=lib.float64))]

    def messages(lib):
        got = []
        for a, b in cases(lib):
            with pytest.raises(AssertionError) as info:
                lib.testing.assert_close(a, b)
            got.append(str(info.value).replace(lib.__name__ + ".", "torch."))
        return got

    assert messages(eager) == messages(torch)


def test_einsum_sublist_form_and_inference_mode_as_pytorch() -> None:
    torch = _torch()
    import numpy as np

    a = np.arange(6.0, dtype=np.float32).reshape(2, 3)
    b = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    for lib in (torch, eager):
        A, B = lib.tensor(a), lib.tensor(b)
        np.testing.assert_allclose(lib.einsum(A, [0, 1], B, [1, 2], [0, 2]).numpy(), a @ b)
        np.testing.assert_allclose(lib.einsum(A, [Ellipsis, 1], B, [1, 2]).numpy(), a @ b)
        np.testing.assert_allclose(lib.einsum(A, [0, 1], [1]).numpy(), a.sum(0))
        assert lib.is_inference_mode_enabled() is False
        with lib.inference_mode():
            assert lib.is_inference_mode_enabled() is True and not lib.is_grad_enabled()
            with lib.inference_mode(False):
                assert lib.is_inference_mode_enabled() is False
        w = lib.ones(2, requires_grad=True)

        @lib.inference_mode
        def bare(x, lib=lib):
            return x * 2, lib.is_inference_mode_enabled()

        y, on = bare(w)
        assert on is True and y.requires_grad is False and lib.is_inference_mode_enabled() is False


def test_out_keyword_of_torch_functions_as_pytorch() -> None:
    # the tensors tutorial: torch.matmul(tensor, tensor.T, out=y3); torch.mul(tensor, tensor, out=z3)
    torch = _torch()
    import warnings

    import numpy as np

    for lib in (torch, eager):
        a = lib.arange(6.0).reshape(2, 3)
        y = lib.empty(2, 2)
        r = lib.matmul(a, a.T, out=y)
        assert r is y and np.array_equal(y.numpy(), (a @ a.T).numpy())
        z = lib.zeros(2, 3)
        assert lib.mul(a, a, out=z) is z and z[1, 2].item() == 25.0
        i = lib.zeros(2, dtype=lib.int64)
        lib.add(lib.tensor([1, 2]), 3, out=i)
        assert i.tolist() == [4, 5]
        f = lib.zeros(3, dtype=lib.float64)
        lib.sum(a, 0, out=f)
        assert f.tolist() == [3.0, 5.0, 7.0] and f.dtype == lib.float64
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            lib.add(lib.ones(2), 1.5, out=lib.zeros(2, dtype=lib.int64))
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            lib.mul(lib.ones(2, requires_grad=True), 2, out=lib.zeros(2))
        with lib.no_grad():
            lib.mul(lib.ones(2, requires_grad=True), 2, out=lib.zeros(2))
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            w = lib.zeros(5)
            lib.cat([lib.ones(2), lib.ones(2)], out=w)
        assert tuple(w.shape) == (4,) and any("was resized" in str(m.message) for m in seen)
        e = lib.empty(0)
        lib.stack([lib.ones(2), lib.zeros(2)], out=e)
        assert tuple(e.shape) == (2, 2)


def test_cross_entropy_checks_in_pytorchs_order() -> None:
    torch = _torch()
    for lib in (torch, eager):
        F = lib.nn.functional
        with pytest.raises(ValueError, match=r"Expected input batch_size \(2\) to match target batch_size \(3\)"):
            F.cross_entropy(lib.ones(2, 3), lib.tensor([0.0, 1.0, 2.0]))  # float, not the input's shape: indices
        with pytest.raises(ValueError, match="Expected input batch_size"):
            F.nll_loss(lib.ones(2, 3), lib.tensor([0.0, 1.0, 2.0]))
        with pytest.raises(RuntimeError):
            F.cross_entropy(lib.ones(2, 3), lib.tensor([0.0, 1.0]))
        assert abs(F.cross_entropy(lib.zeros(2, 3), lib.full((2, 3), 1 / 3)).item() - 1.0986123) < 1e-5


def test_function_setup_context_style_and_grad_keywords_as_pytorch() -> None:
    torch = _torch()
    for lib in (torch, eager):
        class Scale(lib.autograd.Function):
            @staticmethod
            def forward(x, k):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]
                ctx.save_for_backward(output)

            @staticmethod
            def backward(ctx, g):
                (out,) = ctx.saved_tensors
                return g * ctx.k + 0 * out, None

        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = Scale.apply(x, 3.0)
        assert y.tolist() == [3.0, 6.0] and type(y.grad_fn).__name__ == "ScaleBackward"
        (g,) = lib.autograd.grad(y.sum(), x, only_inputs=True)
        assert g.tolist() == [3.0, 3.0]
        z = lib.tensor([1.0], requires_grad=True)
        (gz,) = lib.autograd.grad((x * 2).sum(), z, materialize_grads=True)
        assert gz.tolist() == [0.0]
        with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed"):
            lib.autograd.grad((x * 2).sum(), z, allow_unused=False, materialize_grads=True)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adagrad", "Rprop", "NAdam"])
def test_optimizer_checkpoints_hold_the_step_as_pytorchs(name: str) -> None:
    # checkpoints read `opt.state_dict()['state'][0]['step'].item()`; loading one keeps training identical
    torch = _torch()
    for lib in (torch, eager):
        p = lib.nn.Parameter(lib.tensor([1.0, -2.0]))
        opt = getattr(lib.optim, name)([p], lr=0.1)
        for _ in range(3):
            opt.zero_grad()
            (p ** 2).sum().backward()
            opt.step()
        step = opt.state_dict()["state"][0]["step"]
        assert isinstance(step, lib.Tensor) and step.dtype == lib.float32 and step.ndim == 0 and step.item() == 3.0
    q = eager.nn.Parameter(eager.tensor([1.0, -2.0]))
    r = eager.nn.Parameter(eager.tensor([1.0, -2.0]))
    o1, o2 = getattr(eager.optim, name)([q], lr=0.1), getattr(eager.optim, name)([r], lr=0.1)
    for opt, w in ((o1, q), (o2, r)):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    o2.load_state_dict(o1.state_dict())
    for opt, w in ((o1, q), (o2, r)):
        opt.zero_grad()
        (w ** 2).sum().backward()
        opt.step()
    assert q.tolist() == r.tolist() and o2.state[r]["step"] == 2


def test_module_reprs_and_small_tensor_api_as_pytorchs() -> None:
    torch = _torch()
    import warnings

    def reprs(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            mods = [lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3)), lib.nn.Parameter(lib.ones(2))]),
                    lib.nn.ParameterList([lib.nn.Parameter(lib.ones(2, 3))]), lib.nn.ParameterList(),
                    lib.nn.RNN(2, 3, nonlinearity="relu", bias=False, bidirectional=True, dropout=0.5, num_layers=2),
                    lib.nn.LSTM(2, 3, batch_first=True, dropout=0.1), lib.nn.GRU(2, 3),
                    lib.nn.Upsample(scale_factor=2, mode="bilinear"), lib.nn.Upsample(scale_factor=(2, 3)),
                    lib.nn.Upsample(size=(2, 3))]
        got = [repr(m).replace(lib.__name__ + ".", "torch.") for m in mods]
        got += [str(lib.nn.init.calculate_gain(n)) for n in ("linear", "conv2d", "sigmoid", "tanh", "relu")]
        x = lib.ones(2, 3)
        got += [str(x.type(lib.LongTensor).dtype).split(".")[1], str(x.type("torch.IntTensor").dtype).split(".")[1],
                str(x.ndimension())]
        lib.set_float32_matmul_precision("high")
        got.append(lib.get_float32_matmul_precision())
        lib.set_float32_matmul_precision("highest")
        return got

    assert reprs(eager) == reprs(torch)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        eager.nn.LSTM(2, 3, dropout=0.2)


def test_cosine_similarity_in_pytorchs_order() -> None:
    torch = _torch()
    import numpy as np

    a = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((1, 4)).astype(np.float32)
    res = []
    for lib in (torch, eager):
        F = lib.nn.functional
        x1, x2 = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        y = F.cosine_similarity(x1, x2)
        y.sum().backward()
        z = lib.zeros(1, 3, requires_grad=True)
        F.cosine_similarity(z, lib.ones(1, 3)).sum().backward()
        res.append((y.detach().numpy(), x1.grad.numpy(), x2.grad.numpy(), type(y.grad_fn).__name__,
                    F.cosine_similarity(lib.ones(1, 2), lib.ones(1, 2)).tolist(), z.grad.tolist()))
    (y1, g1, h1, n1, o1, z1), (y2, g2, h2, n2, o2, z2) = res
    np.testing.assert_array_equal(y2, y1)
    np.testing.assert_allclose(g2, g1, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h2, h1, rtol=1e-5, atol=1e-6)
    assert (n2, o2, z2) == (n1, o1, z1) and o1 == [np.float32(0.99999994)]


def test_dtype_helpers_and_logit_as_pytorch() -> None:
    torch = _torch()

    def answers(lib):
        pairs = [(lib.tensor([1]), 1.0), (lib.tensor([1], dtype=lib.int32), lib.tensor(1.0, dtype=lib.float64)),
                 (lib.tensor([1.0], dtype=lib.float16), lib.tensor([1], dtype=lib.int64)), (lib.tensor(1), lib.tensor([True])),
                 (lib.tensor([1], dtype=lib.uint8), 5)]
        kinds = (lib.bool, lib.uint8, lib.int64, lib.float16, lib.float64)
        return ([str(lib.result_type(a, b)).split(".")[1] for a, b in pairs],
                [lib.can_cast(a, b) for a in kinds for b in kinds],
                [str(lib.promote_types(a, b)).split(".")[1] for a in kinds for b in kinds],
                [round(v, 5) for v in lib.tensor([0.25, 0.5, 0.9]).logit().tolist()],
                [round(v, 5) for v in lib.logit(lib.tensor([0.0, 1.0]), eps=1e-3).tolist()])

    assert answers(eager) == answers(torch)
    x = eager.tensor([0.25, 0.75], dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(lambda t: t.logit(), (x,))


def test_linalg_products_as_pytorch() -> None:
    torch = _torch()
    import numpy as np

    r = np.random.default_rng(0)
    A, B, C = r.standard_normal((3, 3)), r.standard_normal((3, 4)), r.standard_normal((4, 2))
    v, w = r.standard_normal(3), r.standard_normal(2)
    results = []
    for lib in (torch, eager):
        L = lib.linalg

        def t(a, lib=lib):
            return lib.tensor(a, dtype=lib.float64)

        results.append([L.matmul(t(A), t(B)).numpy(), L.vecdot(t(A), t(A)).numpy(), L.diagonal(t(A), offset=1).numpy(),
                        L.multi_dot([t(v), t(B), t(C), t(w)]).numpy(), L.multi_dot([t(A), t(B), t(C)]).numpy(),
                        L.matrix_power(t(A), 3).numpy(), L.matrix_power(t(A), 0).numpy(), L.matrix_power(t(A), -2).numpy()])
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    x = eager.tensor(A, dtype=eager.float64, requires_grad=True)
    assert eager.autograd.gradcheck(lambda a: eager.linalg.matrix_power(a, 3), (x,))
    assert eager.autograd.gradcheck(lambda a: eager.linalg.multi_dot([a, a, a]), (x,))
    with pytest.raises(RuntimeError, match="matrix_power"):
        eager.linalg.matrix_power(eager.ones(2, 3), 2)


@pytest.mark.parametrize("spelling", ["cuda.amp.GradScaler", "cuda.amp.autocast", "cpu.amp.autocast"])
def test_deprecated_amp_spellings_warn_as_pytorch(spelling: str) -> None:
    torch = _torch()
    device, _, name = spelling.split(".")
    for lib in (torch, eager):
        factory = getattr(getattr(lib, device).amp, name)
        with pytest.warns(FutureWarning, match=rf"`torch\.{device}\.amp\.{name}\(args\.\.\.\)` is deprecated"):
            factory(enabled=False)
    with warnings_none():
        eager.amp.GradScaler("cuda", enabled=False)
        eager.amp.autocast("cpu", enabled=False)


def warnings_none():
    import contextlib
    import warnings

    @contextlib.contextmanager
    def ctx():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            yield

    return ctx()


def test_out_wrappers_keep_aliases_one_object() -> None:
    # an alias bound twice (eager.clip and eager.clamp) stays one object when given out=
    by_original: dict[int, set[int]] = {}
    for value in vars(eager).values():
        original = getattr(value, "__wrapped__", None)
        if callable(value) and original is not None:
            by_original.setdefault(id(original), set()).add(id(value))
    assert by_original and all(len(ids) == 1 for ids in by_original.values())
    # clip is clamp's generated alias: its own function (as torch.clip is not torch.clamp), the same op
    assert eager.clip.__name__ == "clip" and eager.clip._op is eager.clamp._op
    # torch.fix is its own function (not torch.trunc) computing the same: so is eager.fix
    assert eager.fix.__name__ == "fix" and eager.fix(eager.tensor([-1.5, 2.5])).tolist() == [-1.0, 2.0]
