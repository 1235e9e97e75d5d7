"""What tracing a training step costs per recorded op: the ops of a library optimizer's
update cite the user's `opt.step()` line, found once per step rather than by a stack walk per
op (static.training.traced_step), and a custom optimizer's ops still cite their own lines."""
import cProfile
import inspect
import pstats

import numpy as np
from training_steps import mse, training_step

import eager
import eager.nn as nn
import eager.nn.functional as F
import static
from static import tracer

X = eager.tensor(np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32))
Y = eager.tensor(np.random.default_rng(1).standard_normal((8, 1)).astype(np.float32))


def _trace_step(opt_factory):
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    opt = opt_factory(model.parameters())
    opt.zero_grad()
    F.mse_loss(model(X), Y).backward()
    opt.step()  # state exists: the compiled step is the steady one
    step = training_step(model, opt, mse)
    lines, first = inspect.getsourcelines(training_step)
    step_line = first + next(k for k, line in enumerate(lines) if line.strip() == "opt.step()")
    profile = cProfile.Profile()  # counts the stack walks (a wrapper would change what they find)
    graph = profile.runcall(static.compile(step).ir, X, Y)
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]  # the raw table pstats keeps
    walks = sum(v[1] for (path, _, name), v in stats.items() if name == "user_location" and path == tracer.__file__)
    return graph, walks, f"{inspect.getsourcefile(training_step).rsplit('/', 1)[-1]}:{step_line}"


def test_a_library_optimizer_s_ops_cite_the_step_line_without_a_walk_per_op():
    graph, walks, step_loc = _trace_step(lambda ps: eager.optim.Adam(ps, lr=0.01))
    update_ops = 0
    for node in graph.nodes:
        for n in ([node] if node.body is None else node.body.nodes):
            update_ops += n.loc == step_loc
    assert update_ops > 20  # Adam's update over four parameters, fused or not
    assert walks * 4 < update_ops  # 12 walks against 99 before (one per recorded op)


class _MySGD(eager.optim.SGD):
    """A user's optimizer: its own code records ops, which cite its own lines."""

    def _update_group(self, group):
        for p in group["params"]:
            if p.grad is not None:
                p.sub_(p.grad * group["lr"])  # the line its ops cite


def test_a_user_optimizer_s_ops_cite_its_own_lines():
    graph, _, step_loc = _trace_step(lambda ps: _MySGD(ps, lr=0.1))
    own = f"{__file__.rsplit('/', 1)[-1]}:{inspect.getsourcelines(_MySGD._update_group)[1] + 3}"
    locs = {n.loc for node in graph.nodes for n in ([node] if node.body is None else node.body.nodes)}
    assert own in locs
