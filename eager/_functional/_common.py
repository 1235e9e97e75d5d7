"""What the families of eager's functional surface share: the tensor-kind type variable and
the size, host-array, dtype-category and grad-name helpers."""
from __future__ import annotations

from typing import TYPE_CHECKING, TypeVar

from gmbase import dtypes as _dtypes

from ..autograd.graph import Node as _Node
from ..autograd.graph import node_class as _node_class

if TYPE_CHECKING:
    from .._api import TensorAPI


_TA = TypeVar("_TA", bound="TensorAPI")  # an eager tensor or a tracer value: ops give back the same kind


def _sizes(args) -> tuple:
    """Accept f(2, 3), f((2, 3)) and f([2, 3]) alike."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    # an int subclass stays as it is: a compiled trace's symbolic size (static.dynamic_shapes)
    return tuple(a if isinstance(a, int) and not isinstance(a, bool) else int(a) for a in args)


def _ndim(x) -> int:
    return len(x.shape)


def _category(v) -> int:
    dt = getattr(v, "dtype", None)
    if isinstance(dt, _dtypes.dtype):
        return dt.category
    return _dtypes.scalar_category(v)


def _numel(x) -> int:
    n = 1
    for s in x.shape:
        n *= s
    return n


def _row_major(out):
    """`out`, a result just made (a new buffer no one else holds), laid out row-major: for
    composites whose PyTorch kernel writes a contiguous result whatever its input's layout
    (masked_fill, log_sigmoid), where the ops composing it here keep the input's order."""
    data = getattr(out, "_data", None)
    if data is not None and not data.flags.c_contiguous:
        from .._device import xp_of_array  # noqa: PLC0415

        out._data = xp_of_array(data).ascontiguousarray(data)
    return out


def _renamed(out, grad_name: str):
    """PyTorch names some nodes after the method called, not the op run (t() -> TBackward0);
    the op is the same, so only the eager node's name changes."""
    node = getattr(out, "grad_fn", None)
    if node is not None and hasattr(node, "_name"):
        node._name = grad_name
        if isinstance(node, _Node):
            node.__class__ = _node_class(grad_name)  # its type is named as PyTorch's too
    return out


def _host(x):
    """The values of x as a NumPy array. Reading them is what makes an op's output shape
    depend on the data: static's traced values refuse it with a TraceError at the user's line."""
    data = getattr(x, "_data", None)
    if data is None:
        import numpy as np  # noqa: PLC0415

        return np.asarray(x)
    return data if type(data).__module__.startswith("numpy") else data.get()


def _int_tensor(arr, like):
    from .._factories import tensor  # noqa: PLC0415

    return tensor(arr, dtype=_dtypes.int64, device=like.device)
