"""Three ways to control what autograd records:

- `detach()` gives a tensor that shares data but has no history (a constant for backward);
- `with torch.no_grad():` records nothing (evaluation, optimizer updates);
- `retain_graph=True` keeps the saved tensors so backward can run through a graph twice.
"""
from __future__ import annotations

import eager as torch


def demo_detach() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    z = y.detach()  # same numbers as y, but backward stops here
    print("detach: y.requires_grad =", y.requires_grad, "| z.requires_grad =", z.requires_grad,
          "| z.grad_fn =", z.grad_fn)
    loss = (y * z).sum()  # d/dx of x^2 * const = 2x * const; z contributes no gradient
    loss.backward()
    print("  d/dx (y * y.detach()).sum() =", x.grad, "(2x * x^2, not 4x^3)")
    assert x.grad.tolist() == [2.0, 16.0]


def demo_no_grad() -> None:
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    with torch.no_grad():
        y = x * 2
    print("no_grad: y.requires_grad =", y.requires_grad, "| grad enabled again:", torch.is_grad_enabled())
    assert not y.requires_grad and y.grad_fn is None

    @torch.no_grad()
    def evaluate(t):
        return t * 3

    assert evaluate(x).grad_fn is None
    with torch.no_grad():
        x -= 0.5  # an in-place update of a leaf is allowed here: what optimizers do
    print("  after x -= 0.5 under no_grad: x =", x)
    assert x.tolist() == [0.5, 1.5] and x.is_leaf


def demo_retain_graph() -> None:
    x = torch.tensor(3.0, requires_grad=True)
    y = x.exp() * x
    y.backward(retain_graph=True)
    first = x.grad.item()
    y.backward()  # a second pass works because the first kept the graph; gradients add up
    print(f"retain_graph: first dy/dx = {first:.4f}, after two passes x.grad = {x.grad.item():.4f}")
    assert abs(x.grad.item() - 2 * first) < 1e-4

    y = x.exp() * x
    y.backward()
    try:
        y.backward()
    except RuntimeError as exc:
        print("  without retain_graph, a second backward fails:", str(exc).split(".")[0] + ".")
    else:
        raise AssertionError("a second backward through a freed graph should fail")


def main() -> None:
    demo_detach()
    demo_no_grad()
    demo_retain_graph()


if __name__ == "__main__":
    main()
