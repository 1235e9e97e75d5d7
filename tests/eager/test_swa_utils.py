"""optim.swa_utils against PyTorch: AveragedModel (SWA and EMA, with and without buffers),
update_bn, and SWALR's learning rates, through a small training run."""
from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _model(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.ReLU(), lib.nn.Linear(4, 1)).double()


def _run(lib, averaging, use_buffers=False, anneal="cos"):
    rng = np.random.default_rng(0)
    X, Y = rng.standard_normal((40, 3)), rng.standard_normal((40, 1))
    model = _model(lib)
    if lib is torch:  # the same initial weights as eager's model
        with torch.no_grad():
            for p, q in zip(model.state_dict().values(), _model(eager).state_dict().values()):
                p.copy_(torch.tensor(q.numpy()))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)
    su = lib.optim.swa_utils
    fn = {"swa": {}, "ema": dict(multi_avg_fn=su.get_ema_multi_avg_fn(0.9)),
          "ema1": dict(avg_fn=su.get_ema_avg_fn(0.8))}[averaging]
    avg = su.AveragedModel(model, use_buffers=use_buffers, **fn)
    sched = su.SWALR(opt, swa_lr=0.05, anneal_epochs=3, anneal_strategy=anneal)
    lrs = []
    for _ in range(6):
        for i in range(0, 40, 10):
            opt.zero_grad()
            loss = ((model(lib.tensor(X[i:i + 10])) - lib.tensor(Y[i:i + 10])) ** 2).mean()
            loss.backward()
            opt.step()
        avg.update_parameters(model)
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    loader = [lib.tensor(X[i:i + 10]) for i in range(0, 40, 10)]
    su.update_bn(loader, avg)
    state = {k: v.detach().numpy().copy() for k, v in avg.state_dict().items()}
    avg.eval()
    return lrs, state, avg(lib.tensor(X)).detach().numpy()


@pytest.mark.parametrize("averaging,use_buffers,anneal", [("swa", False, "cos"), ("swa", True, "linear"),
                                                          ("ema", False, "cos"), ("ema1", True, "cos")])
def test_swa_training_matches_pytorch(averaging, use_buffers, anneal):
    (le, se, ye), (lt, st, yt) = _run(eager, averaging, use_buffers, anneal), _run(torch, averaging, use_buffers,
                                                                                     anneal)
    np.testing.assert_allclose(le, lt, rtol=1e-12)
    assert list(se) == list(st)
    for k in se:
        np.testing.assert_allclose(se[k], st[k], rtol=1e-9, atol=1e-12, err_msg=k)
    np.testing.assert_allclose(ye, yt, rtol=1e-9, atol=1e-12)


def test_swalr_checks_like_pytorch():
    opt = eager.optim.SGD([eager.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="anneal_strategy"):
        eager.optim.swa_utils.SWALR(opt, 0.01, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs"):
        eager.optim.swa_utils.SWALR(opt, 0.01, anneal_epochs=-1)
