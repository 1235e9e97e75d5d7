"""An optimizer's live step count is what PyTorch keeps: a 0-d tensor of the scalar dtype
(float32; float64 under a float64 default dtype), counted in place, read by scripts with
`.item()` / `int()`; NAdam's running product likewise; SGD keeps none and SparseAdam an int.
Checkpoints load either form, and the updates give PyTorch's values."""
import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

TENSOR_STEP = ["Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "ASGD", "Rprop", "Adadelta", "RMSprop"]
KW = {"Adagrad": dict(lr=0.1, lr_decay=0.01), "RMSprop": dict(lr=0.01, momentum=0.5, centered=True),
      "ASGD": dict(lr=0.01, t0=1), "Adam": dict(lr=0.01, amsgrad=True), "NAdam": dict(lr=0.01, weight_decay=0.1),
      "RAdam": dict(lr=0.01), "Adamax": dict(lr=0.01), "Rprop": dict(lr=0.01), "Adadelta": dict(lr=1.0),
      "AdamW": dict(lr=0.01), "SGD": dict(lr=0.1, momentum=0.9)}


def _run(lib, name, steps, n_params=3, foreach=None):
    rng = np.random.default_rng(0)
    params = [lib.nn.Parameter(lib.tensor(rng.standard_normal((3, 2)).astype(np.float32))) for _ in range(n_params)]
    kw = dict(KW[name])
    if foreach is not None:
        kw["foreach"] = foreach
    opt = getattr(lib.optim, name)(params, **kw)
    for k in range(steps):
        for i, p in enumerate(params):
            p.grad = lib.tensor(rng.standard_normal((3, 2)).astype(np.float32) * (k + 1 + i))
        opt.step()
    return opt, params


def _scalars(opt, p):
    return {k: (str(v.dtype).split(".")[-1], v.shape == (), v.item()) for k, v in opt.state[p].items()
            if not hasattr(v, "ndim") or v.ndim == 0}


@pytest.mark.parametrize("name", TENSOR_STEP)
def test_live_step_is_a_0d_float32_tensor_as_pytorchs(name):
    opt, params = _run(eager, name, 3)
    ref, ref_params = _run(torch, name, 3)
    for p, q in zip(params, ref_params):
        step = opt.state[p]["step"]
        assert isinstance(step, eager.Tensor) and step.dtype == eager.float32 and step.shape == ()
        assert step.item() == 3.0 and int(step) == 3 and not step.requires_grad
        got, want = _scalars(opt, p), _scalars(ref, q)
        assert got.keys() == want.keys()
        for k in want:
            assert got[k][:2] == want[k][:2], k
            assert got[k][2] == pytest.approx(want[k][2], rel=1e-6), k
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("foreach", [None, False])
def test_adam_whole_group_and_per_parameter_paths_count_the_same(foreach):
    opt, params = _run(eager, "Adam", 4, n_params=4, foreach=foreach)
    steps = [opt.state[p]["step"] for p in params]
    assert len({id(s) for s in steps}) == 4  # one tensor per parameter, as PyTorch's
    assert [s.item() for s in steps] == [4.0] * 4
    assert all(s._version == 4 for s in steps)  # counted in place (PyTorch's `step_t += 1`)


def test_sgd_keeps_no_step_and_sparse_adam_an_int():
    opt, params = _run(eager, "SGD", 2)
    assert "step" not in opt.state[params[0]]
    p = eager.nn.Parameter(eager.ones(4, 2))
    sparse = eager.optim.SparseAdam([p], lr=0.1)
    p.grad = eager.ones(4, 2)
    sparse.step()
    sparse.step()
    assert type(sparse.state[p]["step"]) is int and sparse.state[p]["step"] == 2
    assert type(sparse.state_dict()["state"][0]["step"]) is int


def test_float64_default_dtype_gives_a_float64_step():
    eager.set_default_dtype(eager.float64)
    torch.set_default_dtype(torch.float64)
    try:
        for name in ("Adam", "ASGD", "NAdam"):
            opt, params = _run(eager, name, 1)
            ref, ref_params = _run(torch, name, 1)
            got = {k: str(v.dtype).split(".")[-1] for k, v in opt.state[params[0]].items() if v.ndim == 0}
            want = {k: str(v.dtype).split(".")[-1] for k, v in ref.state[ref_params[0]].items() if v.ndim == 0}
            assert got == want and got["step"] == "float64", name
    finally:
        eager.set_default_dtype(eager.float32)
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("form", ["tensor", "int", "float"])
def test_a_checkpoint_step_of_either_form_loads_as_a_tensor_and_resumes(form):
    opt, params = _run(eager, "NAdam", 2)
    sd = opt.state_dict()
    for s in sd["state"].values():
        if form != "tensor":
            s["step"] = int(s["step"]) if form == "int" else float(s["step"])
            s["mu_product"] = float(s["mu_product"])
    fresh = eager.optim.NAdam(params, **KW["NAdam"])
    fresh.load_state_dict(sd)
    st = fresh.state[params[0]]
    assert isinstance(st["step"], eager.Tensor) and st["step"].dtype == eager.float32 and st["step"].item() == 2
    assert isinstance(st["mu_product"], eager.Tensor) and st["mu_product"].dtype == eager.float32
    assert st["step"] is not sd["state"][0]["step"]  # the loaded state is its own
    for opt_ in (opt, fresh):
        for p in params:
            p.grad = eager.ones(3, 2)
        before = [p.detach().clone() for p in params]
        opt_.step()
        for p, b in zip(params, before):
            p.data.copy_(b)
    for p in params:
        assert opt.state[p]["step"].item() == fresh.state[p]["step"].item() == 3
        assert opt.state[p]["mu_product"].item() == fresh.state[p]["mu_product"].item()


def test_state_dict_layout_matches_pytorchs():
    opt, _ = _run(eager, "Adam", 2)
    ref, _ = _run(torch, "Adam", 2)
    got, want = opt.state_dict(), ref.state_dict()
    assert sorted(got) == sorted(want)
    assert list(got["state"]) == list(want["state"])
    for i in want["state"]:
        assert list(got["state"][i]) == list(want["state"][i])
        assert got["state"][i]["step"].dtype == eager.float32
    assert got["param_groups"][0].keys() == want["param_groups"][0].keys()


def test_a_script_incrementing_the_step_by_hand():
    """`state['step'] += 1` (a tensor op, as in PyTorch) and a step set to a Python int both
    keep counting."""
    opt, params = _run(eager, "Adam", 1)
    st = opt.state[params[0]]
    st["step"] += 1
    assert isinstance(st["step"], eager.Tensor) and st["step"].item() == 2
    opt.state[params[1]]["step"] = 5
    for p in params:
        p.grad = eager.ones(3, 2)
    opt.step()
    assert st["step"].item() == 3 and opt.state[params[1]]["step"] == 6


def test_state_dict_holds_the_live_state_as_pytorchs():
    """PyTorch's state_dict hands out the optimizer's own state tensors: a dict taken before
    more steps sees them (torch.save or deepcopy freezes it)."""
    import copy  # noqa: PLC0415

    lin = eager.nn.Linear(3, 2)
    opt = eager.optim.Adam(lin.parameters())
    for _ in range(2):
        opt.zero_grad()
        lin(eager.ones(4, 3)).sum().backward()
        opt.step()
        if _ == 0:
            live, frozen = opt.state_dict(), copy.deepcopy(opt.state_dict())
    assert live["state"][0]["exp_avg"] is opt.state[lin.weight]["exp_avg"]
    assert float(live["state"][0]["step"]) == 2.0 and float(frozen["state"][0]["step"]) == 1.0
