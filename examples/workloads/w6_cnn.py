"""W6 small CNN training step: Conv2d(1->16, 3x3, padding 1) + BatchNorm2d + ReLU +
MaxPool2d(2), Conv2d(16->32, 3x3, padding 1) + BatchNorm2d + ReLU + MaxPool2d(2),
Linear(32*7*7 -> 10), on (32, 1, 28, 28), cross-entropy, SGD (lr 0.05, momentum 0.9).

    model = make_model(); opt = make_optimizer(model)
    loss = train_step(model, opt, make_batch(seed=0))
"""
from __future__ import annotations

import _training  # the step W5 and W6 share (this directory is on sys.path)
import numpy as np

import eager
from eager import nn
from eager.nn import functional as F

BATCH, CLASSES, SIDE = 32, 10, 28
LR, MOMENTUM = 0.05, 0.9


def make_model(seed: int = 0) -> nn.Module:
    eager.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, CLASSES),
    )


def make_optimizer(model: nn.Module) -> eager.optim.Optimizer:
    return eager.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)


def make_batch(seed: int = 0, batch: int = BATCH):
    """(images, labels): float32 (batch, 1, 28, 28) and int64 (batch,)."""
    rng = np.random.default_rng(seed)
    images = rng.standard_normal((batch, 1, SIDE, SIDE)).astype(np.float32)
    labels = rng.integers(0, CLASSES, batch)
    return eager.from_numpy(images), eager.from_numpy(labels)


def loss_fn(model: nn.Module, batch) -> eager.Tensor:
    images, labels = batch
    return F.cross_entropy(model(images), labels)


def train_step(model: nn.Module, opt: eager.optim.Optimizer, batch) -> float:
    """One SGD step on `batch`; returns the loss before the update."""
    return _training.train_step(loss_fn, model, opt, batch)


@_training.torch_peer
def peer_torch(torch):
    """The same model builder in PyTorch (for benchmarks/models_bench.py), or None."""
    tnn = torch.nn
    return lambda: tnn.Sequential(
        tnn.Conv2d(1, 16, 3, padding=1), tnn.BatchNorm2d(16), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Conv2d(16, 32, 3, padding=1), tnn.BatchNorm2d(32), tnn.ReLU(), tnn.MaxPool2d(2),
        tnn.Flatten(), tnn.Linear(32 * 7 * 7, CLASSES))
