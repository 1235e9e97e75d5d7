"""Random programs run in eager, compiled (`static.compile`, forward and backward),
`static.value_and_grad` and second derivatives, each compared with real PyTorch.
The examples are fixed by the suite's deterministic hypothesis profile."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from programs import arrays, describe, programs, run, shapes, tolerance

import eager
import static

DTYPES = st.sampled_from([np.float32, np.float64])
CASES = dict(shapes_=shapes(), program=programs(), dtype=DTYPES, seed=st.integers(0, 2**16))


def _dtype_name(d) -> str:
    return str(d).rsplit(".", 1)[-1]


def check(ours, theirs, dtype, what: str) -> None:
    """Same shape, same dtype, values within the dtype's tolerance (NaN where PyTorch has NaN)."""
    assert theirs is not None, what
    assert ours is not None, f"{what}: PyTorch has a value, graphmode none"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    assert _dtype_name(ours.dtype) == _dtype_name(theirs.dtype), f"{what}: dtype {ours.dtype} vs {theirs.dtype}"
    np.testing.assert_allclose(np.asarray(ours.detach().numpy()), theirs.detach().numpy(), err_msg=what,
                               **tolerance(dtype))


def _torch_reference(torch, program, xs, weight):
    leaves = [torch.tensor(x, requires_grad=True) for x in xs]
    out = run(program, torch, *leaves)
    loss = (out * torch.tensor(weight)).sum()
    grads = torch.autograd.grad(loss, leaves, allow_unused=True)
    return out, loss, [g if g is not None else torch.zeros_like(x) for g, x in zip(grads, leaves)]


def _setup(torch, shapes_, program, dtype, seed):
    xs = arrays(seed, shapes_, dtype)
    out, loss, grads = _torch_reference(torch, program, xs, 1.0)
    weight = np.random.default_rng(seed + 1).uniform(0.5, 1.5, size=tuple(out.shape)).astype(dtype)
    out, loss, grads = _torch_reference(torch, program, xs, weight)
    return xs, weight, (out, loss, grads)


def _grads_or_zeros(leaves):
    return [x.grad if x.grad is not None else eager.zeros_like(x) for x in leaves]


def _forward_and_backward_match(torch, how: str, shapes_, program, dtype, seed) -> None:
    """The program's output and the gradients `.backward()` leaves on its inputs, run eagerly
    (how="eager") or through static.compile (how="compiled"), against PyTorch's."""
    xs, weight, (t_out, _, t_grads) = _setup(torch, shapes_, program, dtype, seed)
    what = describe(program)

    def f(*args):
        return run(program, eager, *args)

    if how == "compiled":
        f = static.compile(f)
    leaves = [eager.tensor(x, requires_grad=True) for x in xs]
    out = f(*leaves)
    check(out, t_out, dtype, f"{how} forward of {what}")
    (out * eager.tensor(weight)).sum().backward()
    for i, (g, tg) in enumerate(zip(_grads_or_zeros(leaves), t_grads)):
        check(g, tg, dtype, f"{how} gradient of input {i} of {what}")


@settings(max_examples=40)
@given(**CASES)
def test_eager_matches_pytorch(torch, shapes_, program, dtype, seed):
    _forward_and_backward_match(torch, "eager", shapes_, program, dtype, seed)


@settings(max_examples=25)
@given(**CASES)
def test_compiled_matches_pytorch(torch, shapes_, program, dtype, seed):
    _forward_and_backward_match(torch, "compiled", shapes_, program, dtype, seed)


@settings(max_examples=25)
@given(**CASES)
def test_value_and_grad_matches_pytorch(torch, shapes_, program, dtype, seed):
    xs, weight, (t_out, t_loss, t_grads) = _setup(torch, shapes_, program, dtype, seed)
    what = describe(program)
    w = eager.tensor(weight)
    vg = static.value_and_grad(lambda *args: (run(program, eager, *args) * w).sum(), argnums=tuple(range(len(xs))))
    value, grads = vg(*[eager.tensor(x) for x in xs])
    check(value, t_loss, dtype, f"value_and_grad value of {what}")
    for i, (g, tg) in enumerate(zip(grads, t_grads)):
        check(g, tg, dtype, f"value_and_grad gradient of input {i} of {what}")


@settings(max_examples=15)
@given(**CASES)
def test_second_derivatives_match_pytorch(torch, shapes_, program, dtype, seed):
    """d/dx0 of <d loss/d x0, v>: a Hessian-vector product, in eager (create_graph) and in
    static (grad of grad), against PyTorch's double backward."""
    xs, weight, _ = _setup(torch, shapes_, program, dtype, seed)
    what = describe(program)
    v = np.random.default_rng(seed + 2).uniform(-1, 1, size=xs[0].shape).astype(dtype)

    t_leaves = [torch.tensor(x, requires_grad=True) for x in xs]
    t_loss = (run(program, torch, *t_leaves) * torch.tensor(weight)).sum()
    (t_g,) = torch.autograd.grad(t_loss, t_leaves[:1], create_graph=True, allow_unused=True)
    if t_g is None or not t_g.requires_grad:
        t_hvp = torch.zeros_like(t_leaves[0])
    else:
        (t_hvp,) = torch.autograd.grad((t_g * torch.tensor(v)).sum(), t_leaves[:1], allow_unused=True)
        t_hvp = torch.zeros_like(t_leaves[0]) if t_hvp is None else t_hvp

    e_leaves = [eager.tensor(x, requires_grad=True) for x in xs]
    e_loss = (run(program, eager, *e_leaves) * eager.tensor(weight)).sum()
    (e_g,) = eager.autograd.grad(e_loss, e_leaves[:1], create_graph=True, allow_unused=True)
    if e_g is None or not e_g.requires_grad:
        e_hvp = eager.zeros_like(e_leaves[0])
    else:
        (e_hvp,) = eager.autograd.grad((e_g * eager.tensor(v)).sum(), e_leaves[:1], allow_unused=True)
        e_hvp = eager.zeros_like(e_leaves[0]) if e_hvp is None else e_hvp
    check(e_hvp, t_hvp, dtype, f"eager Hessian-vector product of {what}")

    w, vt = eager.tensor(weight), eager.tensor(v)

    def loss(*args):
        return (run(program, eager, *args) * w).sum()

    hvp = static.grad(lambda *args: (static.grad(loss)(*args) * vt).sum())
    check(hvp(*[eager.tensor(x) for x in xs]), t_hvp, dtype, f"static grad-of-grad of {what}")
