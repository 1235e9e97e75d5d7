"""The version fast path of a compiled step's checks (static.entry: a cached call skips
re-reading its captured tensors while eager's tensor metadata version has not moved) never
hides a change: each mutation made between two compiled calls of a training step is still
seen (a retrace, or the numbers eager gives), in both the NumPy and the native backend."""
from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.nn.functional as F
import static
from eager import nn
from eager._tensor import METADATA_VERSION

BACKENDS = ["numpy", "native"]


def _native_ok(backend: str) -> None:
    """(The native backend raises static.BackendError where no C++ compiler answers.)"""


def _setup(momentum: float = 0.9):
    eager.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    opt = eager.optim.SGD(model.parameters(), lr=0.05, momentum=momentum)

    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return model, opt, step


def _pair(backend: str):
    """Two identical setups: one compiled, one eager, each stepped into the steady state."""
    _native_ok(backend)
    em, eo, estep = _setup()
    cm, co, cstep = _setup()
    compiled = static.compile(cstep, backend=backend)
    x, y = eager.randn(5, 4), eager.randn(5, 3)
    for _ in range(3):
        a, b = estep(x, y), compiled(x, y)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    entry = compiled._last_entry
    assert entry is not None and entry._versioned and entry._meta_at == METADATA_VERSION[0]
    return (em, eo, estep), (cm, co, compiled), x, y


def _agree(eager_side, compiled_side, x, y, steps: int = 3) -> None:
    (em, _, estep), (cm, _, compiled) = eager_side, compiled_side
    for _ in range(steps):
        a, b = estep(x, y), compiled(x, y)
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(em.parameters(), cm.parameters()):
        assert p.dtype == q.dtype and p.requires_grad == q.requires_grad
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_steady_calls_stay_on_the_fast_path(backend):
    e, c, x, y = _pair(backend)
    compiled = c[2]
    entry = compiled._last_entry
    _agree(e, c, x, y)  # eager's steps (zero_grad outside a trace included) leave it alone too
    version = METADATA_VERSION[0]
    x2, y2 = eager.randn(5, 4), eager.randn(5, 3)
    for _ in range(3):
        c[1].zero_grad()
        compiled(x2, y2)
    assert METADATA_VERSION[0] == version  # the compiled calls' own writes do not move it
    assert entry._meta_at == version and compiled.retraces == []
    from eager.optim.optimizer import OPTIMIZER_VERSION, PARAM_GROUPS_VERSION  # noqa: PLC0415
    from static.training import FedGuard, GroupGuard, OptimizerStateGuard  # noqa: PLC0415

    versions = (OPTIMIZER_VERSION[0], PARAM_GROUPS_VERSION[0])
    for _ in range(3):
        c[1].zero_grad()
        compiled(x2, y2)
    assert (OPTIMIZER_VERSION[0], PARAM_GROUPS_VERSION[0]) == versions  # nor the optimizer's
    kinds = {OptimizerStateGuard: versions[0], GroupGuard: versions[1], FedGuard: versions[1]}
    watched = [g for g in entry.trace.guards if type(g) in kinds]
    assert {type(g) for g in watched} == set(kinds)
    assert all(g.version == kinds[type(g)] for g in watched)  # each skipped on the next call


def _requires_grad_off(model):
    model[0].weight.requires_grad = False


def _requires_grad_off_method(model):
    model[2].bias.requires_grad_(False)


def _detach_in_place(model):
    model[0].bias.detach_()


def _data_other_dtype(model):
    w = model[2].weight
    w.data = w.data.double()


def _data_same_dtype(model):
    w = model[0].weight
    w.data = w.data * 0.5


MUTATIONS = [_requires_grad_off, _requires_grad_off_method, _detach_in_place, _data_other_dtype, _data_same_dtype]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mutate", MUTATIONS, ids=lambda f: f.__name__.strip("_"))
def test_metadata_mutation_between_calls_is_seen(backend, mutate):
    e, c, x, y = _pair(backend)
    before = METADATA_VERSION[0]
    mutate(e[0])
    mutate(c[0])
    assert METADATA_VERSION[0] > before  # the mutator bumped the version: the next call reads every tensor
    if mutate is _data_other_dtype:
        # eager refuses a float64 weight against float32 activations; the compiled step must
        # not run its float32 graph on it: it retraces and refuses the same way
        with pytest.raises(RuntimeError, match="dtype"):
            e[2](x, y)
        with pytest.raises(RuntimeError, match="dtype"):
            c[2](x, y)
    else:
        _agree(e, c, x, y)
    if mutate in (_requires_grad_off, _requires_grad_off_method, _detach_in_place):
        assert c[2].retraces  # which tensors require grad changed: a new trace


@pytest.mark.parametrize("backend", BACKENDS)
def test_grad_rebind_and_in_place_history(backend):
    e, c, x, y = _pair(backend)
    for m in (e[0], c[0]):  # a .grad slot is not a captured tensor's metadata: guarded elsewhere
        p = m[0].weight
        p.grad = eager.full_like(p, 3.0)
    _agree(e, c, x, y)
    # an in-place op giving a leaf that did not require grad a history changes its requires_grad
    t = eager.zeros(3)
    w = eager.ones(3, requires_grad=True)
    before = METADATA_VERSION[0]
    t.add_(w)
    assert t.requires_grad and METADATA_VERSION[0] > before


@pytest.mark.parametrize("backend", BACKENDS)
def test_global_tensor_rebound_is_reread(backend):
    """A tensor named by a global is re-read at every call even on the fast path: rebinding
    the name to a tensor that requires grad (or not) is seen."""
    _native_ok(backend)
    g = {"W": eager.ones(3, 3)}
    exec("def f(x):\n    return (x @ W).sum()\n", g)
    f = g["f"]
    compiled = static.compile(f, backend=backend)
    x = eager.randn(2, 3)
    for _ in range(3):
        np.testing.assert_allclose(compiled(x).detach().numpy(), f(x).detach().numpy(), rtol=1e-6)
    g["W"] = eager.full((3, 3), 2.0)
    np.testing.assert_allclose(compiled(x).detach().numpy(), f(x).detach().numpy(), rtol=1e-6)
    g["W"] = eager.full((3, 3), 3.0, requires_grad=True)
    out, ref = compiled(x), f(x)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-6)
    assert out.requires_grad == ref.requires_grad


@pytest.mark.parametrize("backend", BACKENDS)
def test_optimizer_and_module_changes_still_seen(backend):
    """Python state the fast path does not version (param groups, optimizer state, modules)
    is still checked on every call."""
    e, c, x, y = _pair(backend)
    for _, opt, _ in (e, c):
        opt.param_groups[0]["momentum"] = 0.5
    _agree(e, c, x, y)
    for _, opt, _ in (e, c):
        for s in opt.state.values():
            s["momentum_buffer"].zero_()
    _agree(e, c, x, y)
    e[0][1] = nn.ReLU()
    c[0][1] = nn.ReLU()
    _agree(e, c, x, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_check_is_not_remembered(backend):
    """A global rebound to a tensor made by an op (no version bump) that requires grad fails
    the entry's check; asked again (the entry kept for alternating states), the entry must
    not pass on the strength of the swap the failed check made."""
    _native_ok(backend)
    g = {"W": eager.ones(3, 3)}
    exec("def f(x):\n    return (x @ W).sum()\n", g)
    f = g["f"]
    compiled = static.compile(f, backend=backend)
    x = eager.randn(2, 3)
    w0 = eager.ones(3, 3, requires_grad=True)  # (made first: making it moves the version)
    for _ in range(3):
        compiled(x)
    entry = compiled._last_entry
    assert entry._meta_at == METADATA_VERSION[0]
    before = METADATA_VERSION[0]
    g["W"] = w0 * 2.0  # an op's result: no metadata bump
    assert METADATA_VERSION[0] == before
    assert entry.invalid() is not None
    assert entry.invalid() is not None  # asked again: still refused
    out = compiled(x)
    assert out.requires_grad
    out.backward()
    np.testing.assert_allclose(w0.grad.numpy(), np.full((3, 3), 2.0 * x.numpy().sum(0)[:, None]), rtol=1e-5)


def _replace_buffer(opt):
    p = opt.param_groups[0]["params"][0]
    opt.state[p]["momentum_buffer"] = opt.state[p]["momentum_buffer"] * 0.25


def _drop_state(opt):
    del opt.state[opt.param_groups[0]["params"][1]]


def _clear_state_dict(opt):
    opt.state[opt.param_groups[0]["params"][2]].clear()


def _load_state(opt):
    saved = opt.state_dict()
    for s in saved["state"].values():
        s["momentum_buffer"] = s["momentum_buffer"] * 0.5
    opt.load_state_dict(saved)


def _rebind_state(opt):
    from eager.optim.optimizer import StateDict  # noqa: PLC0415

    opt.state = StateDict({p: StateDict({"momentum_buffer": s["momentum_buffer"] * 2.0}) for p, s in opt.state.items()})


def _plain_dict_state(opt):
    p = opt.param_groups[0]["params"][3]
    opt.state[p] = {"momentum_buffer": opt.state[p]["momentum_buffer"] * 3.0}  # a plain dict: never versioned


STATE_MUTATIONS = [_replace_buffer, _drop_state, _clear_state_dict, _load_state, _rebind_state, _plain_dict_state]


def _state_guards(compiled):
    from static.training import OptimizerStateGuard  # noqa: PLC0415

    return [g for g in compiled._last_entry.trace.guards if isinstance(g, OptimizerStateGuard)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mutate", STATE_MUTATIONS, ids=lambda f: f.__name__.strip("_"))
def test_optimizer_state_mutation_between_calls_is_seen(backend, mutate):
    from eager.optim.optimizer import OPTIMIZER_VERSION  # noqa: PLC0415

    e, c, x, y = _pair(backend)
    guards = _state_guards(c[2])
    assert guards and all(g.version == OPTIMIZER_VERSION[0] for g in guards)  # the steady loop skips them
    before = OPTIMIZER_VERSION[0]
    mutate(e[1])
    mutate(c[1])
    assert OPTIMIZER_VERSION[0] > before
    _agree(e, c, x, y)
    if mutate is _plain_dict_state:  # a plain dict in the state: the dicts are compared on every call
        assert all(g.version == -1 for g in _state_guards(c[2]))


def _momentum_changed(opt):
    opt.param_groups[0]["momentum"] = 0.0  # the traced update took `momentum != 0`: retrace


def _nesterov_on(opt):
    opt.param_groups[0]["nesterov"] = True


def _param_removed(opt):
    opt.param_groups[0]["params"].pop()


def _group_rebuilt(opt):
    g = dict(opt.param_groups[0])
    g["momentum"] = 0.5
    opt.param_groups = [g]  # a plain list of a plain dict: read on every call from now on


GROUP_MUTATIONS = [_momentum_changed, _nesterov_on, _param_removed, _group_rebuilt]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("mutate", GROUP_MUTATIONS, ids=lambda f: f.__name__.strip("_"))
def test_param_group_mutation_between_calls_is_seen(backend, mutate):
    from eager.optim.optimizer import PARAM_GROUPS_VERSION  # noqa: PLC0415

    e, c, x, y = _pair(backend)
    before = PARAM_GROUPS_VERSION[0]
    mutate(e[1])
    mutate(c[1])
    assert PARAM_GROUPS_VERSION[0] > before
    _agree(e, c, x, y)


def test_numpy_level_metadata_changes_do_not_reach_a_tensor():
    """A tensor's shape and dtype change only through eager's API (which counts them): the
    array given to from_numpy and the ones numpy() and np.asarray hand out are other array
    objects over the same memory, as PyTorch's, so assigning their shape or dtype leaves the
    tensor (and a compiled entry that captured it) as it was."""
    a = np.zeros(6, np.float32)
    t = eager.from_numpy(a)
    a.shape = (2, 3)
    a[0, 1] = 5.0
    assert tuple(t.shape) == (6,) and float(t[1]) == 5.0  # the memory is still shared
    for n in (t.numpy(), np.asarray(t)):
        n.shape = (3, 2)
        n.dtype = np.int32
        assert tuple(t.shape) == (6,) and t.dtype == eager.float32
    torch = pytest.importorskip("torch")
    b = np.zeros(6, np.float32)
    r = torch.from_numpy(b)
    b.shape = (2, 3)
    m = r.numpy()
    m.shape = (3, 2)
    assert tuple(r.shape) == (6,)  # PyTorch's behaviour, which eager's follows


def _pair_accumulating(backend: str):
    """As _pair, with zero_grad(set_to_none=False): the step reads the .grads it finds (the
    call's preparation puts them among the captured tensors)."""
    _native_ok(backend)
    sides = []
    for _ in range(2):
        eager.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
        opt = eager.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

        def step(x, y, model=model, opt=opt):
            opt.zero_grad(set_to_none=False)
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        sides.append((model, opt, step))
    e, c = sides[0], (sides[1][0], sides[1][1], static.compile(sides[1][2], backend=backend))
    x, y = eager.randn(5, 4), eager.randn(5, 3)
    _agree(e, c, x, y)
    version = METADATA_VERSION[0]
    _agree(e, c, x, y)
    assert METADATA_VERSION[0] == version and c[2]._last_entry._meta_at == version  # the steady loop skips
    return e, c, x, y


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("change", ["rebind", "none", "requires_grad"])
def test_grads_read_by_the_step_are_followed(backend, change):
    e, c, x, y = _pair_accumulating(backend)
    for model in (e[0], c[0]):
        p = model[0].weight
        if change == "rebind":  # another tensor in the slot: the call's preparation puts it in, and moves the version
            p.grad = eager.full_like(p, 0.5)
        elif change == "none":
            p.grad = None
        else:
            p.grad.requires_grad_(True)
    _agree(e, c, x, y)


@pytest.mark.parametrize("backend", BACKENDS)
def test_argument_grads_accumulated_across_calls(backend):
    _native_ok(backend)
    w = eager.randn(3)

    def f(x):
        (x * w).sum().backward()
        return x.grad

    compiled = static.compile(f, backend=backend)
    xs = [eager.randn(3, requires_grad=True) for _ in range(2)]
    for _ in range(3):
        f(xs[0])
        compiled(xs[1])
    np.testing.assert_allclose(xs[1].grad.numpy(), xs[0].grad.numpy(), rtol=1e-6)
    for x in xs:
        x.grad = eager.ones(3)  # another tensor: the next call accumulates into it
    f(xs[0])
    compiled(xs[1])
    np.testing.assert_allclose(xs[1].grad.numpy(), xs[0].grad.numpy(), rtol=1e-6)
    for x in xs:
        x.grad = None
    f(xs[0])
    compiled(xs[1])
    np.testing.assert_allclose(xs[1].grad.numpy(), xs[0].grad.numpy(), rtol=1e-6)


# every Tensor method that changes a tensor's shape, dtype, storage or requires_grad in place,
# with arguments that change it: each must move METADATA_VERSION (a compiled entry that
# captured the tensor would otherwise keep its traced shape). Methods eager lacks are skipped;
# one added later is held to the rule here.
_IN_PLACE_METADATA = {
    "t_": (), "transpose_": (0, 1), "swapdims_": (0, 1), "swapaxes_": (0, 1), "squeeze_": (), "unsqueeze_": (0,),
    "as_strided_": ((3, 2), (1, 3)), "resize_": (3, 2), "resize_as_": "other", "set_": "other",
    "requires_grad_": (True,), "detach_": "grad",
}


@pytest.mark.parametrize("name", sorted(_IN_PLACE_METADATA))
def test_in_place_metadata_methods_move_the_version(name):
    if not hasattr(eager.Tensor, name):
        pytest.skip(f"eager.Tensor has no {name}")
    t = eager.randn(2, 3, 1) if name == "squeeze_" else eager.randn(2, 3)
    args = _IN_PLACE_METADATA[name]
    if args == "other":
        args = (eager.randn(3, 2),)
    elif args == "grad":
        t.requires_grad_(True)
        args = ()
    before = METADATA_VERSION[0]
    getattr(t, name)(*args)
    assert METADATA_VERSION[0] > before, f"Tensor.{name} changed a tensor's metadata without moving the version"


def test_setting_requires_grad_and_data_move_the_version():
    t = eager.randn(2, 3)
    for change in (lambda: setattr(t, "requires_grad", True), lambda: setattr(t, "data", eager.randn(4)),
                   lambda: setattr(t, "data", eager.randn(4).double())):
        before = METADATA_VERSION[0]
        change()
        assert METADATA_VERSION[0] > before
    before = METADATA_VERSION[0]
    t.requires_grad = True  # no change: no move
    assert METADATA_VERSION[0] == before
