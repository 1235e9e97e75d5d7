"""The operator set shared by eager and static. Importing it fills `REGISTRY`."""
from . import elementwise, shape_ops, views, reductions, linalg, special  # noqa: F401  (registration order)
from . import indexing, math_ops, conv  # noqa: F401  (ops added with the PyTorch-programs surface)
from . import pooling, normalization  # noqa: F401  (max-pooling, batch norm and their gradients: eager's NCHW path)
from . import control_flow  # noqa: F401  (scan, while_loop, cond: bodies as IR text, static.control_flow)
from . import index_checks  # noqa: F401  (check_index_range; range checks of gather, index_select, embedding)
from . import _batching  # (vmap's batching rule of every op, declared once the registry is full)
from . import device  # noqa: F401  (to_device, fill: registered after the batching rules, as they always were)
from ._registry import REGISTRY, OpDef, TensorSpec, defop, fit_grad, get, reduce_to_shape

__all__ = ["REGISTRY", "OpDef", "TensorSpec", "defop", "fit_grad", "get", "reduce_to_shape"]

_batching.declare_all()
