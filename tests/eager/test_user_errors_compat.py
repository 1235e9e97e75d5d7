"""Common mistakes in user programs raise the exception type PyTorch raises (shape and dtype
mismatches in layers and losses, out-of-range indices, autograd misuse, optimizer and data
loader arguments), run once with eager and once with PyTorch."""
import pytest

import eager

torch = pytest.importorskip("torch")

CASES = [
 ("linear shape", lambda t: t.nn.Linear(3, 2)(t.ones(4, 5))),
 ("ce float target 1d", lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([1.0, 0.0]))),
 ("ce target oob", lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([1, 3]))),
 ("nll int input", lambda t: t.nn.functional.nll_loss(t.ones(2, 3, dtype=t.int64), t.tensor([1, 0]))),
 ("mse shape warn", lambda t: t.nn.functional.mse_loss(t.ones(2, 1), t.ones(2)).item()),
 ("conv channels", lambda t: t.nn.Conv2d(3, 4, 3)(t.ones(1, 2, 5, 5))),
 ("conv 2d input", lambda t: t.nn.Conv2d(3, 4, 3)(t.ones(5, 5))),
 ("bn channels", lambda t: t.nn.BatchNorm1d(3)(t.ones(4, 2))),
 ("bn batch 1", lambda t: t.nn.BatchNorm1d(3)(t.ones(1, 3))),
 ("embedding oob", lambda t: t.nn.Embedding(3, 2)(t.tensor([3]))),
 ("embedding float idx", lambda t: t.nn.Embedding(3, 2)(t.tensor([1.0]))),
 ("view noncontig", lambda t: t.ones(2, 3).t().view(6)),
 ("matmul", lambda t: t.ones(2, 3) @ t.ones(2, 3)),
 ("cat dims", lambda t: t.cat([t.ones(2, 3), t.ones(2, 4)])),
 ("stack", lambda t: t.stack([t.ones(2), t.ones(3)])),
 ("backward twice", lambda t: (lambda y: (y.backward(), y.backward()))((t.ones(2, requires_grad=True) ** 2).sum())),
 ("inplace leaf", lambda t: t.ones(2, requires_grad=True).add_(1)),
 ("item many", lambda t: t.ones(2).item()),
 ("bool ambiguous", lambda t: bool(t.ones(2))),
 ("index oob", lambda t: t.ones(2)[5]),
 ("lstm input size", lambda t: t.nn.LSTM(3, 4)(t.ones(2, 1, 5))),
 ("optim empty", lambda t: t.optim.SGD([], lr=0.1)),
 ("optim lr neg", lambda t: t.optim.Adam([t.nn.Parameter(t.ones(1))], lr=-1)),
 ("sgd no lr", lambda t: t.optim.SGD([t.nn.Parameter(t.ones(1))])),
 ("load sd missing", lambda t: t.nn.Linear(2, 2).load_state_dict({})),
 ("dataloader bad batch", lambda t: t.utils.data.DataLoader(t.utils.data.TensorDataset(t.ones(3)), batch_size=0)),
 ("reshape bad", lambda t: t.ones(2, 3).reshape(4, 2)),
 ("expand bad", lambda t: t.ones(2, 3).expand(3, 3)),
 ("add broadcast", lambda t: t.ones(2, 3) + t.ones(2, 2)),
 ("softmax int", lambda t: t.softmax(t.tensor([1, 2]), 0)),
 ("dtype mismatch mm", lambda t: t.ones(2, 2) @ t.ones(2, 2, dtype=t.float64)),
 ("sched no opt", lambda t: t.optim.lr_scheduler.StepLR(None, 1)),
 ("requires grad int", lambda t: t.tensor([1, 2], requires_grad=True)),
 ("module attr", lambda t: t.nn.Linear(2, 2).nonexistent),
 ("param assign tensor", lambda t: setattr(t.nn.Linear(2, 2), "weight", t.ones(2, 2))),
 ("numpy grad", lambda t: t.ones(2, requires_grad=True).numpy()),
 ("clip nan", lambda t: t.nn.utils.clip_grad_norm_([t.nn.Parameter(t.ones(1))], 1.0, error_if_nonfinite=True)),
]


def _outcome(lib, fn):
    try:
        fn(lib)
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return type(e).__name__
    return "ok"


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name, fn", CASES, ids=[c[0] for c in CASES])
def test_same_exception_type_as_pytorch(name, fn):
    assert _outcome(eager, fn) == _outcome(torch, fn)


def test_rnn_width_messages_are_pytorchs():
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. Expected 3, got 5"):
        eager.nn.LSTM(3, 4)(eager.ones(2, 1, 5))
    with pytest.raises(RuntimeError, match="input has inconsistent input_size: got 5 expected 3"):
        eager.nn.GRUCell(3, 4)(eager.ones(2, 5))
