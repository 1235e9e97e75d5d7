"""The operator set shared by eager and static. Importing it fills `REGISTRY`."""
from . import elementwise, shape_ops, reductions, linalg, special  # noqa: F401  (registration order)
from ._registry import REGISTRY, OpDef, TensorSpec, defop, fit_grad, get, reduce_to_shape

__all__ = ["REGISTRY", "OpDef", "TensorSpec", "defop", "fit_grad", "get", "reduce_to_shape"]
