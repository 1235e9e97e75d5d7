"""Reads and writes of captured tensors through their eager aliases inside compiled functions.

`p.grad.detach()`, `p.grad.data`, a view of `p.grad`, or a detached copy of a global made
outside the function are other Python objects over the same memory as the tensor the trace
functionalizes: every read through any of them must see every write through any other, as in
eager (static.shared_memory). Each case runs step by step beside eager (and PyTorch where it
is installed)."""
import numpy as np
import pytest
from training_steps import for_each_parameter, small_model, squared_error, training_step, under_no_grad

import eager
import eager.nn as nn
import static
from static.errors import TraceError

X = np.random.default_rng(0).standard_normal((16, 4)).astype(np.float32)
Y = np.random.default_rng(1).standard_normal((16, 1)).astype(np.float32)


def _params(model) -> list:
    return [p.detach().numpy().copy() for p in model.parameters()]


def _side_by_side(make_step, steps: int = 4, opt_cls=eager.optim.SGD, **kw):
    """The same training step in eager and compiled, compared after every step (loss,
    parameters and gradients)."""
    runs = []
    for compiled in (False, True):
        model = small_model()
        opt = opt_cls(model.parameters(), **kw)
        step = make_step(model, opt)
        runs.append((model, static.compile(step) if compiled else step))
    x, y = eager.tensor(X), eager.tensor(Y)
    for k in range(steps):
        (m_e, f_e), (m_c, f_c) = runs
        loss_e, loss_c = f_e(x, y), f_c(x, y)
        np.testing.assert_allclose(loss_c.item(), loss_e.item(), rtol=1e-5, err_msg=f"loss of step {k}")
        for a, b in zip(_params(m_c), _params(m_e)):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"parameters after step {k}")
        for pa, pb in zip(m_c.parameters(), m_e.parameters()):
            assert (pa.grad is None) == (pb.grad is None)
            if pa.grad is not None:
                np.testing.assert_allclose(pa.grad.numpy(), pb.grad.numpy(), rtol=1e-5, atol=1e-6,
                                           err_msg=f"gradients after step {k}")
    return runs


CLIPPED = [
    (eager.optim.SGD, dict(lr=0.1)),
    (eager.optim.SGD, dict(lr=0.05, momentum=0.9)),
    (eager.optim.Adam, dict(lr=0.01)),
    (eager.optim.AdamW, dict(lr=0.01, weight_decay=0.1)),
]


@pytest.mark.parametrize("opt_cls,kw", CLIPPED, ids=lambda v: getattr(v, "__name__", str(v)))
@pytest.mark.parametrize("max_norm", [0.05, 100.0])  # clipping, and a bound the norm stays under
def test_clip_grad_norm_inside_a_compiled_step_equals_eager_step_by_step(opt_cls, kw, max_norm):
    def make_step(model, opt):
        return training_step(model, opt, after_backward=lambda m: nn.utils.clip_grad_norm_(m.parameters(), max_norm))

    _side_by_side(make_step, opt_cls=opt_cls, **kw)


@pytest.mark.parametrize("opt_cls,kw", CLIPPED[::2], ids=lambda v: getattr(v, "__name__", str(v)))
def test_clip_grad_value_inside_a_compiled_step_equals_eager_step_by_step(opt_cls, kw):
    def make_step(model, opt):
        return training_step(model, opt, after_backward=lambda m: nn.utils.clip_grad_value_(m.parameters(), 0.01))

    _side_by_side(make_step, opt_cls=opt_cls, **kw)


def test_clip_grad_norm_with_accumulated_gradients_across_calls_equals_eager():
    """No zero_grad: the .grad the call finds is accumulated into, then clipped in place."""
    def make_step(model, opt):
        return training_step(model, opt, zero_grad=False,
                             after_backward=lambda m: nn.utils.clip_grad_norm_(m.parameters(), 0.1))

    _side_by_side(make_step, opt_cls=eager.optim.SGD, lr=0.1)


# -- each kind of alias, written and then read ---------------------------------------------------
WRITES = {
    "detach": lambda p: p.grad.detach().mul_(0.5),
    "data": lambda p: p.grad.data.mul_(0.5),
    "view": lambda p: p.grad[..., :1].zero_(),
    "index": lambda p: p.grad[0].mul_(3.0),
    "view of detach": lambda p: p.grad.detach()[..., 1:].mul_(2.0),
    "transpose of data": lambda p: p.grad.data.t().mul_(2.0) if p.ndim == 2 else p.grad.data.mul_(2.0),
}
READS = {
    "grad": lambda p: p.grad,
    "detach": lambda p: p.grad.detach(),
    "data": lambda p: p.grad.data,
    "view": lambda p: p.grad[..., :2],
}


@pytest.mark.parametrize("read", READS, ids=lambda r: f"read-{r}")
@pytest.mark.parametrize("write", WRITES, ids=lambda w: f"write-{w}")
def test_a_write_into_grad_through_an_alias_is_seen_by_every_later_read(write, read):
    def write_then_read(model):
        seen = 0.0
        with eager.no_grad():
            for p in model.parameters():
                WRITES[write](p)
                seen = seen + READS[read](p).abs().sum()
        return seen

    def make_step(model, opt):
        return training_step(model, opt, after_backward=write_then_read, returns_hook_result=True)

    _side_by_side(make_step, steps=3)


def test_an_alias_taken_before_the_write_reads_the_written_value():
    """`d = p.grad.detach()` before `p.grad.mul_`: d shows the write in eager."""
    def alias_then_write(model):
        aliases = [(p.grad.detach(), p.grad.data, p.grad[..., 1:]) for p in model.parameters()]
        with eager.no_grad():
            for p in model.parameters():
                p.grad.mul_(0.25)
            return sum(a.sum() + b.abs().sum() + c[:1].sum() for a, b, c in aliases)

    def make_step(model, opt):
        return training_step(model, opt, after_backward=alias_then_write, returns_hook_result=True)

    _side_by_side(make_step, steps=3)


def test_a_write_through_data_of_a_parameter_is_seen_by_the_parameter():
    """`p.data.mul_()` (a weight constraint) then a forward through p, in one compiled step."""
    def make_step(model, opt):
        return training_step(model, opt, before=under_no_grad(for_each_parameter(lambda p: p.data.clamp_(-0.3, 0.3))))

    _side_by_side(make_step, steps=3)


def test_a_global_detached_alias_of_a_captured_tensor_sees_writes_and_rebinding_retraces():
    w = eager.tensor([1.0, 2.0, 3.0])
    alias = w.detach()

    def f(x):
        w.mul_(2.0)
        return alias * x

    # eager reference on a copy of the same setup
    w_e = eager.tensor([1.0, 2.0, 3.0])
    alias_e = w_e.detach()

    def f_e(x):
        w_e.mul_(2.0)
        return alias_e * x

    g = static.compile(f)
    x = eager.tensor([1.0, 1.0, 1.0])
    for _ in range(3):
        np.testing.assert_allclose(g(x).numpy(), f_e(x).numpy())
        np.testing.assert_allclose(w.numpy(), w_e.numpy())
    alias = eager.tensor([5.0, 5.0, 5.0])  # no longer an alias of w: the graph must read it
    alias_e = eager.tensor([5.0, 5.0, 5.0])
    np.testing.assert_allclose(g(x).numpy(), f_e(x).numpy())
    np.testing.assert_allclose(w.numpy(), w_e.numpy())


def test_a_global_view_of_a_captured_tensor_sees_writes_into_the_tensor_and_writes_into_it():
    base = eager.arange(6.0).reshape(2, 3)
    row = base[1]
    base_e = eager.arange(6.0).reshape(2, 3)
    row_e = base_e[1]

    def make(b, r):
        def f(x):
            b.add_(x)
            out = r * 1.0
            r.mul_(10.0)
            return out, b.sum()
        return f

    g, f_e = static.compile(make(base, row)), make(base_e, row_e)
    x = eager.ones(2, 3)
    for _ in range(3):
        (a, s), (a_e, s_e) = g(x), f_e(x)
        np.testing.assert_allclose(a.numpy(), a_e.numpy())
        np.testing.assert_allclose(s.item(), s_e.item())
        np.testing.assert_allclose(base.numpy(), base_e.numpy())


def test_overlapping_views_made_outside_with_a_write_raise_instead_of_reading_stale_values():
    buf = eager.arange(4.0)
    first, second = buf[0:3], buf[1:4]  # views of a tensor the function never reads

    def f():
        first.add_(1.0)
        return second * 1.0

    with pytest.raises(TraceError, match="shares memory"):
        static.compile(f)()


def test_overlapping_views_that_are_only_read_are_fine():
    buf = eager.arange(4.0)
    first, second = buf[0:3], buf[1:4]

    def f():
        return first * 2.0 + second

    np.testing.assert_allclose(static.compile(f)().numpy(), (first * 2.0 + second).numpy())


def test_clip_grad_norm_inside_a_compiled_adam_step_equals_pytorch():
    torch = pytest.importorskip("torch")
    model = small_model()
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    with torch.no_grad():
        for tp, p in zip(tmodel.parameters(), model.parameters()):
            tp.copy_(torch.from_numpy(p.detach().numpy().copy()))
    opt = eager.optim.Adam(model.parameters(), lr=0.01)
    topt = torch.optim.Adam(tmodel.parameters(), lr=0.01)

    @static.compile
    def step(x, y):
        opt.zero_grad()
        loss = squared_error(model, x, y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.05)
        opt.step()
        return loss

    tx, ty = torch.from_numpy(X), torch.from_numpy(Y)
    for k in range(4):
        loss = step(eager.tensor(X), eager.tensor(Y))
        topt.zero_grad()
        tloss = ((tmodel(tx) - ty) ** 2).mean()
        tloss.backward()
        torch.nn.utils.clip_grad_norm_(tmodel.parameters(), 0.05)
        topt.step()
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5, err_msg=f"loss of step {k}")
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-4, atol=1e-6)


# -- adversarial training steps: gradients and parameters equal eager's after every step ----------
def _accumulate_and_scale_in_place(model, opt):
    return training_step(model, opt, zero_grad=False,
                         after_backward=under_no_grad(for_each_parameter(lambda p: p.grad.mul_(0.5))))


def _set_grad(value):
    """A hook setting every parameter's .grad to value(p)."""
    def assign(p):
        p.grad = value(p)
    return for_each_parameter(assign)


def _grad_set_to_none_after_the_step(model, opt):
    return training_step(model, opt, zero_grad=False, after_step=_set_grad(lambda p: None))


def _grad_zeroed_in_place_when_present(model, opt):
    return training_step(model, opt, zero_grad=False,
                         before=for_each_parameter(lambda p: p.grad.zero_() if p.grad is not None else None))


def _grad_set_to_fresh_zeros_then_accumulated(model, opt):
    """`p.grad = zeros_like(p)` inside the step: a tensor made in the function becomes the
    .grad that backward accumulates into (it used to stay zeros after the call)."""
    return training_step(model, opt, zero_grad=False, before=_set_grad(eager.zeros_like))


def _two_backwards_one_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        first = squared_error(model, x, y)
        first.backward()
        second = (model(x) ** 2).mean()
        second.backward()
        opt.step()
        return first + second
    return step


def _grad_norm_read_after_the_step(model, opt):
    def step(x, y):
        opt.zero_grad()
        squared_error(model, x, y).backward()
        opt.step()
        return sum(p.grad.detach().norm() + p.detach().sum() for p in model.parameters())
    return step


def _frozen_first_layer(model, opt):
    model[0].weight.requires_grad_(False)
    return training_step(model, opt)


def _grad_rebound_to_a_traced_value(model, opt):
    """`p.grad = p.grad * s` (used to raise a TypeError from eager's .grad setter)."""
    def step(x, y):
        opt.zero_grad()
        squared_error(model, x, y).backward()
        for p in model.parameters():
            p.grad = p.grad * 0.5
        opt.step()
        return squared_error(model, x, y)
    return step


def _data_rebound_to_a_traced_value(model, opt):
    """`p.data = p.data * s` (used to raise an AttributeError from eager's .data setter)."""
    def rebind(p):
        p.data = p.data * 0.99
    return training_step(model, opt, after_step=under_no_grad(for_each_parameter(rebind)))


def _parameter_copied_from_a_traced_value(model, opt):
    """`w.copy_(w.clamp(...))` under no_grad (used to be refused: eager converted the source)."""
    return training_step(model, opt, after_step=under_no_grad(lambda m: m[0].weight.copy_(m[0].weight.clamp(-0.2, 0.2))))


ADVERSARIAL = [_grad_rebound_to_a_traced_value, _data_rebound_to_a_traced_value,
               _parameter_copied_from_a_traced_value, _accumulate_and_scale_in_place,
               _grad_set_to_none_after_the_step, _grad_zeroed_in_place_when_present,
               _grad_set_to_fresh_zeros_then_accumulated, _two_backwards_one_step,
               _grad_norm_read_after_the_step, _frozen_first_layer]


@pytest.mark.parametrize("make_step", ADVERSARIAL, ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("opt_cls,kw", [(eager.optim.SGD, dict(lr=0.1, momentum=0.9)),
                                        (eager.optim.Adam, dict(lr=0.01))], ids=["SGD", "Adam"])
def test_adversarial_training_steps_equal_eager_step_by_step(make_step, opt_cls, kw):
    _side_by_side(make_step, opt_cls=opt_cls, **kw)


def test_two_optimizers_and_a_parameter_shared_by_two_modules_equal_eager():
    def build():
        eager.manual_seed(0)
        a, b, head = nn.Linear(4, 4), nn.Linear(4, 4), nn.Linear(4, 1)
        b.weight = a.weight  # weight tying: one Parameter in two modules
        first = eager.optim.SGD(list(a.parameters()) + [b.bias], lr=0.1, momentum=0.9)
        second = eager.optim.Adam(head.parameters(), lr=0.01)
        params = list(a.parameters()) + [b.bias] + list(head.parameters())

        def step(x, y):
            first.zero_grad()
            second.zero_grad()
            loss = ((head(b(eager.tanh(a(x)))) - y) ** 2).mean()
            loss.backward()
            first.step()
            second.step()
            return loss
        return params, step

    (params_e, f_e), (params_c, f_c) = build(), build()
    f_c = static.compile(f_c)
    x, y = eager.tensor(X), eager.tensor(Y)
    for _ in range(4):
        np.testing.assert_allclose(f_c(x, y).item(), f_e(x, y).item(), rtol=1e-5)
        for pc, pe in zip(params_c, params_e):
            np.testing.assert_allclose(pc.detach().numpy(), pe.detach().numpy(), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(pc.grad.numpy(), pe.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_disjoint_views_of_one_buffer_made_outside_are_written_and_read_independently():
    """Two columns of one matrix have overlapping bounds but no element in common: a write
    into one is not refused, and the other reads its own values."""
    def build():
        buf = eager.arange(6.0).reshape(3, 2)
        return buf, buf[:, 0], buf[:, 1]

    (_, a_e, b_e), (buf_c, a_c, b_c) = build(), build()

    def make(a, b):
        def f(x):
            a.mul_(x)
            return b * 1.0 + a.sum()
        return f

    f_e, f_c = make(a_e, b_e), static.compile(make(a_c, b_c))
    for _ in range(2):
        np.testing.assert_allclose(f_c(eager.tensor(2.0)).numpy(), f_e(eager.tensor(2.0)).numpy())
    np.testing.assert_allclose(buf_c.numpy(), [[0.0, 1.0], [8.0, 3.0], [16.0, 5.0]])


def test_two_parameters_over_one_buffer_each_get_their_own_gradient():
    """`nn.Parameter(w.data)` shares memory with w but is another leaf: autograd gives each its
    own .grad; the compiled backward must too (it is not read as an alias of w)."""
    def build():
        eager.manual_seed(0)
        w = nn.Parameter(eager.randn(3))
        v = nn.Parameter(w.data)

        def f(x):
            loss = (w * x).sum() + (v * x * x).sum()
            loss.backward()
            return loss
        return w, v, f

    (w_e, v_e, f_e), (w_c, v_c, f_c) = build(), build()
    f_c = static.compile(f_c)
    x = eager.tensor([1.0, 2.0, 3.0])
    for _ in range(2):
        np.testing.assert_allclose(f_c(x).item(), f_e(x).item(), rtol=1e-6)
        np.testing.assert_allclose(w_c.grad.numpy(), w_e.grad.numpy())
        np.testing.assert_allclose(v_c.grad.numpy(), v_e.grad.numpy())
