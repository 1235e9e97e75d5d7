"""e = a*b + c*log(d): backward fills every leaf's .grad; each is checked against the
derivative worked out by hand:

    de/da = b,  de/db = a,  de/dc = log(d),  de/dd = c / d
"""
from __future__ import annotations

import math

import eager as torch


def main() -> None:
    a = torch.tensor(2.0, requires_grad=True)
    b = torch.tensor(3.0, requires_grad=True)
    c = torch.tensor(4.0, requires_grad=True)
    d = torch.tensor(5.0, requires_grad=True)
    e = a * b + c * torch.log(d)
    print(f"e = a*b + c*log(d) = {e.item():.6f}  (grad_fn={e.grad_fn.name()})")
    e.backward()

    analytic = {"a": b.item(), "b": a.item(), "c": math.log(d.item()), "d": c.item() / d.item()}
    for name, leaf in (("a", a), ("b", b), ("c", c), ("d", d)):
        got, want = leaf.grad.item(), analytic[name]
        print(f"de/d{name} = {got:.6f}   analytic {want:.6f}")
        assert abs(got - want) < 1e-5 * max(1.0, abs(want)), (name, got, want)
    print("all gradients match the analytic formulas")


if __name__ == "__main__":
    main()
