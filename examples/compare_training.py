"""Train the spiral MLP twice, eagerly and compiled, and show that both produce the same
losses, with the time per epoch of each.

- eager: the PyTorch way. `loss = mlp_loss(X, Y, *params)`, `loss.backward()`,
  `optimizer.step()` with eager.optim.SGD: every op runs (and is recorded) one by one.
- compiled: the whole step is one function under @static.compile: static.value_and_grad
  gives the loss and gradients, and the SGD update is written in place (`p.sub_(lr * g)`).
  It is traced once into one graph (forward, backward and update optimized together),
  turned into generated NumPy code, and every later epoch runs that code.

The two loops start from the same parameters and run epoch by epoch in turn (so a busy
machine slows both alike). The model, data and loss are examples/workloads/mlp_step.py.

    python examples/compare_training.py                  # 1000 points, 200 epochs
    python examples/compare_training.py --epochs 20 --points 200
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))

from mlp_step import init_params, mlp_loss, spiral  # noqa: E402

import eager  # noqa: E402
import static  # noqa: E402
from eager import optim  # noqa: E402

N_PARAMS = 6  # W1, b1, W2, b2, W3, b3 follow X and Y in mlp_loss's arguments
loss_and_grads = static.value_and_grad(mlp_loss, argnums=tuple(range(2, 2 + N_PARAMS)))


@static.compile
def train_step(X, Y, W1, b1, W2, b2, W3, b3, lr):
    """One SGD step, compiled whole: the update is written into the parameters."""
    loss, grads = loss_and_grads(X, Y, W1, b1, W2, b2, W3, b3)
    for p, g in zip((W1, b1, W2, b2, W3, b3), grads):
        p.sub_(lr * g)
    return loss


@dataclass
class TrainingResult:
    eager_losses: list[float]
    compiled_losses: list[float]
    eager_epoch_s: list[float]
    compiled_epoch_s: list[float]  # the first one includes compiling

    @property
    def max_loss_difference(self) -> float:
        return max(abs(a - b) for a, b in zip(self.eager_losses, self.compiled_losses))


def train(epochs: int, points: int, lr: float) -> TrainingResult:
    X, Y = (eager.from_numpy(a) for a in spiral(points))
    start_params = init_params()
    eager_params = [eager.from_numpy(p.copy()).requires_grad_() for p in start_params]
    compiled_params = [eager.from_numpy(p.copy()) for p in start_params]
    sgd = optim.SGD(eager_params, lr=lr)
    result = TrainingResult([], [], [], [])
    for _ in range(epochs):
        t0 = time.perf_counter()
        sgd.zero_grad()
        loss = mlp_loss(X, Y, *eager_params)
        loss.backward()
        sgd.step()
        result.eager_losses.append(loss.item())
        t1 = time.perf_counter()
        result.compiled_losses.append(float(train_step(X, Y, *compiled_params, lr)))
        t2 = time.perf_counter()
        result.eager_epoch_s.append(t1 - t0)
        result.compiled_epoch_s.append(t2 - t1)
    return result


def report(result: TrainingResult, log_every: int) -> None:
    print(f"{'epoch':>5}  {'eager loss':>10}  {'compiled loss':>13}  {'difference':>10}")
    last = len(result.eager_losses)
    for k, (a, b) in enumerate(zip(result.eager_losses, result.compiled_losses), start=1):
        if k == 1 or k % log_every == 0 or k == last:
            print(f"{k:>5}  {a:>10.6f}  {b:>13.6f}  {abs(a - b):>10.1e}")
    eager_s = statistics.median(result.eager_epoch_s)
    compiled_s = statistics.median(result.compiled_epoch_s[1:] or result.compiled_epoch_s)
    print(f"time per epoch: eager {eager_s * 1e3:.3f} ms, compiled {compiled_s * 1e3:.3f} ms "
          f"({eager_s / compiled_s:.2f}x; medians over epochs, the compiled first epoch excluded: it compiled "
          f"the step in {result.compiled_epoch_s[0] * 1e3:.0f} ms)")
    print(f"largest loss difference: {result.max_loss_difference:.1e}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=200, help="full-batch SGD steps")
    parser.add_argument("--points", type=int, default=1000, help="spiral points (half per class)")
    parser.add_argument("--lr", type=float, default=0.2, help="SGD learning rate")
    parser.add_argument("--log-every", type=int, default=25, help="print the losses every this many epochs")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="largest allowed loss difference")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> TrainingResult:
    args = parse_args(argv)
    result = train(args.epochs, args.points, args.lr)
    report(result, args.log_every)
    return result


if __name__ == "__main__":
    outcome = main()
    sys.exit(0 if outcome.max_loss_difference <= parse_args(None).tolerance else 1)
