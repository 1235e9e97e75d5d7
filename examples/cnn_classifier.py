"""A small CNN classifying 12x12 images of bars (horizontal, vertical, diagonal) that the
script draws itself: Conv2d, BatchNorm2d, ReLU, MaxPool2d, AdaptiveAvgPool2d, a DataLoader
over a TensorDataset with a seeded shuffle, Adam with a StepLR schedule, and a checkpoint
saved with eager.save and loaded back.

    python examples/cnn_classifier.py --epochs 6
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

import eager as torch
from eager import nn
from eager.nn import functional as F
from eager.utils.data import DataLoader, TensorDataset, random_split

SIDE, CLASSES = 12, 3


def make_images(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """n noisy images (n, 1, 12, 12) with one bar each, and its class: 0 horizontal,
    1 vertical, 2 diagonal."""
    rng = np.random.default_rng(seed)
    images = rng.normal(0.0, 0.3, (n, 1, SIDE, SIDE)).astype(np.float32)
    labels = rng.integers(0, CLASSES, n)
    for k, label in enumerate(labels):
        at, length = rng.integers(2, SIDE - 2), rng.integers(6, SIDE)
        start = rng.integers(0, SIDE - length + 1)
        span = np.arange(start, start + length)
        if label == 0:
            images[k, 0, at, span] += 1.5
        elif label == 1:
            images[k, 0, span, at] += 1.5
        else:
            images[k, 0, span, span[::-1] if rng.random() < 0.5 else span] += 1.5
    return torch.from_numpy(images), torch.from_numpy(labels)


def make_model() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, padding="same"), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.1), nn.Linear(16, CLASSES),
    )


@torch.no_grad()
def accuracy(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    right = total = 0
    for x, y in loader:
        right += int((model(x).argmax(1) == y).sum())
        total += y.shape[0]
    model.train()
    return right / total


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=6)
    ap.add_argument("--images", type=int, default=600)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    torch.manual_seed(args.seed)
    x, y = make_images(args.images, args.seed)
    train_set, test_set = random_split(TensorDataset(x, y), [0.8, 0.2], generator=torch.Generator().manual_seed(1))
    train = DataLoader(train_set, batch_size=args.batch, shuffle=True,
                       generator=torch.Generator().manual_seed(args.seed))
    test = DataLoader(test_set, batch_size=128)
    model = make_model()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=max(1, args.epochs // 2), gamma=0.3)
    losses = []
    for epoch in range(args.epochs):
        total = 0.0
        for xb, yb in train:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * yb.shape[0]
        sched.step()
        losses.append(total / len(train_set))
        print(f"epoch {epoch}  loss {losses[-1]:.4f}  test accuracy {accuracy(model, test):.3f}  "
              f"lr {sched.get_last_lr()[0]:.4g}")
    acc = accuracy(model, test)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cnn.pt"
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": args.epochs}, path)
        checkpoint = torch.load(path)
    restored = make_model()
    restored.load_state_dict(checkpoint["model"])
    restored_acc = accuracy(restored, test)
    print(f"checkpoint of epoch {checkpoint['epoch']} restored: test accuracy {restored_acc:.3f}")
    return {"losses": losses, "accuracy": acc, "restored_accuracy": restored_acc}


if __name__ == "__main__":
    main()
