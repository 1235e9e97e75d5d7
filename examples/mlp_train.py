"""Train a small MLP on a two-class spiral with eager.nn and eager.optim, printing the
loss as it goes and the final accuracy (the classic "can autograd train a network"
check: two interleaved spirals are not linearly separable, so the hidden layers must
learn a curved boundary).

    python examples/mlp_train.py                     # default: 500 points per class
    python examples/mlp_train.py --epochs 150 --points 100 --seed 1   # a quick run
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

import eager as torch
from eager import nn, optim


def make_spiral(points_per_class: int, noise: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Two interleaved spirals (1.5 turns each) in [-1, 1]^2, labels 0 and 1."""
    rng = np.random.default_rng(seed)
    r = np.sqrt(rng.uniform(0.02, 1.0, points_per_class))  # denser near the centre, like the classic plot
    theta = r * 3.0 * math.pi
    arm = np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1)
    xy = np.concatenate([arm, -arm]) + rng.normal(0.0, noise, (2 * points_per_class, 2))
    labels = np.concatenate([np.zeros(points_per_class), np.ones(points_per_class)]).astype(np.int64)
    return torch.tensor(xy, dtype=torch.float32), torch.tensor(labels)


class MLP(nn.Module):
    """2 -> hidden -> hidden -> 2 with tanh: smooth enough for a spiral boundary."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(2, hidden), nn.Tanh(),
            nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, 2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    with torch.no_grad():
        predicted = model(x).argmax(dim=1)
    return float((predicted == y).to(torch.float32).mean())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=400, help="full-batch training steps")
    parser.add_argument("--points", type=int, default=500, help="points per class")
    parser.add_argument("--hidden", type=int, default=64, help="width of both hidden layers")
    parser.add_argument("--lr", type=float, default=0.02, help="Adam learning rate")
    parser.add_argument("--noise", type=float, default=0.03, help="std of the Gaussian noise on the points")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data and of the initial weights")
    parser.add_argument("--log-every", type=int, default=25, help="print the loss every this many epochs")
    parser.add_argument("--target", type=float, default=0.95, help="accuracy the run must reach (exit 1 if not)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> float:
    """Train and return the final training accuracy (tests call this with small settings)."""
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    x, y = make_spiral(args.points, args.noise, args.seed)
    model = MLP(args.hidden)
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        if epoch % args.log_every == 0 or epoch == 1 or epoch == args.epochs:
            print(f"epoch {epoch:4d}  loss {loss.item():.4f}  accuracy {accuracy(model, x, y):.3f}")
    acc = accuracy(model, x, y)
    elapsed = time.perf_counter() - start
    print(f"final accuracy {acc:.3f} on {2 * args.points} points after {args.epochs} epochs ({elapsed:.2f} s)")
    return acc


if __name__ == "__main__":
    raise SystemExit(0 if main() >= parse_args(None).target else 1)
