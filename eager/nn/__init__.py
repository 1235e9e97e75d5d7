"""`eager.nn`: Modules, Parameters, layers and losses with PyTorch's names and behavior."""
from __future__ import annotations

from . import functional, init  # noqa: F401
from .layers import (  # noqa: F401
    GELU, CrossEntropyLoss, Dropout, Flatten, Identity, Linear, LogSoftmax, ModuleList, MSELoss, NLLLoss,
    ReLU, Sequential, Sigmoid, Softmax, Tanh,
)
from .module import Module  # noqa: F401
from .parameter import Parameter  # noqa: F401

__all__ = ["Module", "Parameter", "Linear", "Identity", "ReLU", "Tanh", "Sigmoid", "GELU", "Softmax",
           "LogSoftmax", "Dropout", "Flatten", "Sequential", "ModuleList", "MSELoss", "CrossEntropyLoss",
           "NLLLoss", "functional", "init"]
