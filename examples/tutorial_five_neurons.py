"""The five-neuron graph of the classic autograd tutorial:

    b = w1 * a,  c = w2 * a,  d = w3 * b + w4 * c,  L = 10 - d

With vector-valued tensors L is not a scalar, so `L.backward()` fails; the two fixes are
to reduce it first (`L.sum().backward()`) or to pass the gradient of something with
respect to L (`L.backward(gradient=ones)`, the same thing here). Run as a script; the
closing lines check the gradients against the chain rule by hand."""
from __future__ import annotations

import numpy as np

import eager as torch


def build():
    """Fresh leaves and the graph on them (a new graph for each demonstration)."""
    a = torch.tensor([2.0, 3.0], requires_grad=True)
    w1 = torch.tensor([1.0, 2.0], requires_grad=True)
    w2 = torch.tensor([3.0, 4.0], requires_grad=True)
    w3 = torch.tensor([5.0, 6.0], requires_grad=True)
    w4 = torch.tensor([7.0, 8.0], requires_grad=True)
    b = w1 * a
    c = w2 * a
    d = w3 * b + w4 * c
    L = 10 - d
    return (a, w1, w2, w3, w4), L


def expected(leaves):
    """dL/d(each leaf) by the chain rule, written out: L = 10 - (w3 w1 + w4 w2) a."""
    a, w1, w2, w3, w4 = (t.detach() for t in leaves)
    return {"a": -(w3 * w1 + w4 * w2), "w1": -w3 * a, "w2": -w4 * a, "w3": -w1 * a, "w4": -w2 * a}


def show(title: str, leaves) -> None:
    print(title)
    want = expected(leaves)
    for name, leaf in zip(("a", "w1", "w2", "w3", "w4"), leaves):
        print(f"  dL/d{name:<2} = {leaf.grad}")
        assert np.allclose(leaf.grad.numpy(), want[name].numpy()), (name, leaf.grad, want[name])


def main() -> None:
    leaves, L = build()
    print("L =", L)
    print("L.grad_fn:", L.grad_fn.name(), "<-", [f.name() for f, _ in L.grad_fn.next_functions if f is not None])
    try:
        L.backward()
    except RuntimeError as exc:
        print(f"L.backward() on a non-scalar L fails: RuntimeError: {exc}")
    else:
        raise AssertionError("backward() on a non-scalar output should have failed")

    leaves, L = build()
    L.sum().backward()
    show("fix 1: L.sum().backward()", leaves)

    leaves, L = build()
    L.backward(gradient=torch.ones_like(L))
    show("fix 2: L.backward(gradient=torch.ones_like(L))", leaves)


if __name__ == "__main__":
    main()
