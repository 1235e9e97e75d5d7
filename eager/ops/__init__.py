"""Moved to gmops (the op records, a package of their own below eager). `eager.ops` and every
`eager.ops.<name>` are the same module objects as `gmops` and `gmops.<name>`, registered
under both names when this package is imported, so `import eager.ops.elementwise`, patching
an attribute through either name, `is` comparisons and pickles that name the old path all
reach the one registry; no module is ever loaded twice."""
import pkgutil
import sys

import gmops as _moved
from gmops import REGISTRY, OpDef, TensorSpec, defop, fit_grad, get, reduce_to_shape
from gmops import (  # noqa: F401  (the submodules, for type checkers reading `from eager.ops import x`)
    _batching, _checks, _erf, _layout, _native, _registry, control_flow, conv, elementwise, index_checks,
    indexing, linalg, math_ops, reductions, shape_ops, special, views)

__all__ = ["REGISTRY", "OpDef", "TensorSpec", "defop", "fit_grad", "get", "reduce_to_shape"]


def _alias_submodules() -> None:
    """Register every gmops submodule under its old name too: without it `import
    eager.ops.views` would find gmops/views.py through this package's path and run it a
    second time as another module, with a second copy of every record."""
    for info in pkgutil.iter_modules(_moved.__path__):
        module = sys.modules.get(f"{_moved.__name__}.{info.name}")
        if module is None:
            import importlib  # noqa: PLC0415

            module = importlib.import_module(f"{_moved.__name__}.{info.name}")
        sys.modules[f"{__name__}.{info.name}"] = module


_alias_submodules()
sys.modules[__name__] = _moved
