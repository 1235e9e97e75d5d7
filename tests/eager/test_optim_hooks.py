"""Optimizer hooks as PyTorch's: step pre/post hooks (per optimizer and global, a pre hook
may replace the arguments), state_dict and load_state_dict hooks, removal by handle, an
optimizer subclass's own step (and LBFGS's closure step) running them once."""
import importlib

import pytest

import eager

torch = pytest.importorskip("torch")


def _program(lib):
    log, sd_log = [], []
    p = lib.nn.Parameter(lib.ones(2))
    opt = lib.optim.SGD([p], lr=0.1)
    h1 = opt.register_step_pre_hook(lambda o, a, k: log.append(("pre", len(a), a[0] is o, sorted(k))))
    h2 = opt.register_step_post_hook(lambda o, a, k: log.append(("post", type(o).__name__)))
    g = importlib.import_module(lib.__name__ + ".optim.optimizer").register_optimizer_step_pre_hook(
        lambda o, a, k: log.append("global"))
    p.grad = lib.ones(2)
    opt.step()
    h1.remove()
    g.remove()
    opt.step()
    h2.remove()
    opt.step()
    opt.register_state_dict_pre_hook(lambda o: sd_log.append("sd_pre"))
    opt.register_state_dict_post_hook(lambda o, sd: dict(sd, extra=1))
    opt.register_load_state_dict_pre_hook(lambda o, sd: sd_log.append(("load_pre", sorted(sd))))
    opt.register_load_state_dict_post_hook(lambda o: sd_log.append("load_post"))
    sd = opt.state_dict()
    opt.load_state_dict(sd)

    class Plain(lib.optim.Optimizer):  # (never instantiated itself: PyTorch patches the step of a class it makes)
        def __init__(self, params, lr):
            super().__init__(params, {"lr": lr})

        @lib.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for q in group["params"]:
                    q.add_(q.grad, alpha=-group["lr"])

    class Clipped(Plain):
        def step(self, closure=None):
            log.append("own step")
            return super().step(closure)

    mine = Clipped([p], lr=0.1)
    mine.register_step_pre_hook(lambda o, a, k: ((a[0],), {"closure": None}))  # replaces the arguments
    mine.register_step_post_hook(lambda o, a, k: log.append(("clipped post", sorted(k))))
    mine.step()
    lb = lib.optim.LBFGS([p], lr=0.1, max_iter=1)
    lb.register_step_pre_hook(lambda o, a, k: log.append(("lbfgs", len(a))))
    lb.step(lambda: (p ** 2).sum())
    return log, sd_log, sorted(sd), p.tolist()


def test_hooks_run_as_pytorchs():
    assert _program(eager) == _program(torch)


def test_a_pre_hook_returning_something_else_is_refused():
    p = eager.nn.Parameter(eager.ones(1))
    opt = eager.optim.Adam([p])
    opt.register_step_pre_hook(lambda o, a, k: 3)
    with pytest.raises(RuntimeError, match="must return None or a tuple"):
        opt.step()
