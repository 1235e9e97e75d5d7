"""`eager.optim`: optimizers that update Parameters in place under no_grad, as torch.optim."""
from __future__ import annotations

from . import lr_scheduler, swa_utils  # noqa: F401
from .adam import Adam, AdamW  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401
from .more import ASGD, Adadelta, Adagrad, Adamax, NAdam, RAdam, RMSprop, Rprop, SparseAdam  # noqa: F401
from .optimizer import Optimizer  # noqa: F401
from .sgd import SGD  # noqa: F401

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "LBFGS",
           "Rprop", "ASGD", "SparseAdam", "lr_scheduler",
           "swa_utils"]
