"""Fixed programs of the classes the random suites leave out, each compared with PyTorch.
Those that graphmode still gets wrong are marked xfail(strict=True) with the defect: when it
is fixed the mark must go (a strict xfail that passes fails the run)."""
from __future__ import annotations

import numpy as np
import pytest
from test_oracle_programs import check

import eager
import static

X = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)


def _grad_of(T, program, compiled=False):
    x = T.tensor(X, requires_grad=True)
    fn = static.compile(lambda t: program(eager, t)) if compiled else (lambda t: program(T, t))
    fn(x).backward()
    return x.grad


def _stale_view(T, x):
    y = x * 1
    z = y[1]
    y.mul_(2)
    return (z * 5).sum()


def _sibling_view(T, x):
    y = x * 1
    z = y[1]
    y[0] = 0
    return (z * 5).sum()


def _expand_of_view(T, x):
    y = x * 1
    z = y[1].expand(3, 2)
    y.mul_(3)
    return (z * 5).sum()


def _no_grad_inside(T, x):
    with T.no_grad():
        s = x * 10
    return (x * s).sum()


def _detach_write(T, x):
    y = x * 1
    y.detach().zero_()
    return (y * x).sum()


KNOWN = {
    # name: (program, modes that are still wrong and why); every mode right today
    "view read after its base was written": (_stale_view, {}),
    "view read after a sibling write": (_sibling_view, {}),
    "expand of a view after its base was written": (_expand_of_view, {}),
    "no_grad inside the function": (_no_grad_inside, {}),
    "write through a detach() alias": (_detach_write, {}),
}


def _cases():
    for name, (program, wrong) in KNOWN.items():
        for mode in ("eager", "compiled"):
            marks = [pytest.mark.xfail(strict=True, reason=wrong[mode])] if mode in wrong else []
            yield pytest.param(program, mode == "compiled", id=f"{name}-{mode}", marks=marks)


@pytest.mark.parametrize("program, compiled", list(_cases()))
def test_fixed_program_gradient_matches_pytorch(torch, program, compiled):
    check(_grad_of(eager, program, compiled), _grad_of(torch, program), np.float32, program.__name__)


def _prod(t):
    return t.prod()


def test_eager_second_derivative_through_prod_matches_pytorch(torch):
    def hessian_row_sums(T):
        x = T.tensor(X, requires_grad=True)
        (g,) = T.autograd.grad(_prod(x), x, create_graph=True)
        (h,) = T.autograd.grad(g.sum(), x)
        return h

    check(hessian_row_sums(eager), hessian_row_sums(torch), np.float32, "d/dx sum(d prod/dx)")


def test_static_second_derivative_through_prod_matches_pytorch(torch):
    x = torch.tensor(X, requires_grad=True)
    (g,) = torch.autograd.grad(_prod(x), x, create_graph=True)
    (want,) = torch.autograd.grad(g.sum(), x)
    got = static.grad(lambda t: static.grad(_prod)(t).sum())(eager.tensor(X))
    check(got, want, np.float32, "static d/dx sum(d prod/dx)")




@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_one_tensor_passed_twice_and_written_through_one(torch, compiled):
    def program(T, a, b):
        a.add_(1)
        return b * 2

    def run(T, fn):
        x = T.ones(3)
        return fn(x, x)

    ours = run(eager, static.compile(lambda a, b: program(eager, a, b)) if compiled else
               (lambda a, b: program(eager, a, b)))
    check(ours, run(torch, lambda a, b: program(torch, a, b)), np.float32, "f(x, x) with a.add_(1); b * 2")


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
def test_constant_output_is_fresh_on_every_call(torch, compiled):
    def run(T, fn):
        first = fn(T.ones(2))
        first.add_(5)
        return fn(T.ones(2))

    ours = run(eager, static.compile(lambda x: eager.zeros(3)) if compiled else (lambda x: eager.zeros(3)))
    check(ours, run(torch, lambda x: torch.zeros(3)), np.float32, "zeros(3) after a write into the last result")
