"""y = x**2 - 5 is a vector, so backward needs the vector it multiplies the Jacobian by:
`y.backward(torch.ones_like(y))` gives dy/dx summed over outputs, i.e. 2x here."""
from __future__ import annotations

import eager as torch


def main() -> None:
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x ** 2 - 5
    print("x =", x)
    print("y = x**2 - 5 =", y)
    y.backward(torch.ones_like(y))  # the vector-Jacobian product with v = ones
    print("x.grad =", x.grad, " (expected 2x)")
    assert x.grad.tolist() == [2.0, 4.0, 6.0, 8.0]

    # any other v weighs the outputs: v = (1, 0, 0, 0) keeps only dy0/dx
    x.grad = None
    y = x ** 2 - 5
    y.backward(torch.tensor([1.0, 0.0, 0.0, 0.0]))
    print("with v = (1, 0, 0, 0): x.grad =", x.grad)
    assert x.grad.tolist() == [2.0, 0.0, 0.0, 0.0]


if __name__ == "__main__":
    main()
