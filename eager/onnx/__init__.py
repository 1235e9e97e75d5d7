"""`eager.onnx`: torch.onnx's names. Exporting to ONNX is not implemented: graphmode's
compiled form is its own IR and generated code. `export` raises a RuntimeError that says
what to use instead; `is_in_onnx_export()` is False, so model code that asks runs as usual."""
from __future__ import annotations

from typing import Any, NoReturn

__all__ = ["export", "dynamo_export", "is_in_onnx_export", "OperatorExportTypes", "TrainingMode"]

_INSTEAD = ("ONNX export is not supported by graphmode. To save a model use eager.save(model.state_dict(), path); "
            "to compile it use eager.compile(model) (or static.compile), and `graphmode explain` to inspect "
            "the compiled graph.")


class OperatorExportTypes:
    ONNX = 0
    ONNX_ATEN = 1
    ONNX_ATEN_FALLBACK = 2
    ONNX_FALLTHROUGH = 3


class TrainingMode:
    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


def export(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises RuntimeError: see the module docstring for what to use instead."""
    raise RuntimeError(f"torch.onnx.export: {_INSTEAD}")


def dynamo_export(*args: Any, **kwargs: Any) -> NoReturn:
    """Raises RuntimeError: see the module docstring for what to use instead."""
    raise RuntimeError(f"torch.onnx.dynamo_export: {_INSTEAD}")


def is_in_onnx_export() -> bool:
    """False: no ONNX export ever runs here."""
    return False
