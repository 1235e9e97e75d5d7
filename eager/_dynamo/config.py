"""`torch._dynamo.config` here: the settings scripts commonly set, each with its effect on
`eager.compile` (read at each compile), or said to have none.

- cache_size_limit / recompile_limit: signatures per compiled function (max_retraces =
  limit - 1); accumulated_cache_size_limit is accepted (one limit per function is kept).
- automatic_dynamic_shapes: True (default), a dimension that changes becomes a symbol
  (dynamic=None); False, every size is its own trace.
- assume_static_by_default: True (default), dimensions start static; False, every
  dimension is a symbol from the first call (dynamic=True).
- suppress_errors: accepted; what cannot be traced runs eagerly unless fullgraph=True.
- capture_scalar_outputs, capture_dynamic_output_shape_ops: accepted; `.item()` and
  data-dependent shapes break the graph.
- verbose: True switches on the recompile log (GRAPHMODE_LOGS=recompiles).
- optimize_ddp, inline_inbuilt_nn_modules, specialize_int, specialize_float,
  force_parameter_static_shapes, force_nn_module_property_static_shapes, guard_nn_modules,
  cache_size_limit_warning, dynamic_shapes, raise_on_ctx_manager_usage,
  skip_nnmodule_hook_guards: accepted, no effect.
- error_on_recompile: True makes a call that needs a new trace raise, as
  `eager.compiler.set_stance("fail_on_recompile")`.

Setting a name that is not listed raises AttributeError naming the valid ones, so a misspelt
setting does not pass silently."""
from __future__ import annotations

import sys
import types
from typing import Any

cache_size_limit = 8
recompile_limit = 8
accumulated_cache_size_limit = 256
automatic_dynamic_shapes = True
assume_static_by_default = True
suppress_errors = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
verbose = False
optimize_ddp = True
inline_inbuilt_nn_modules = True
specialize_int = False
specialize_float = False
force_parameter_static_shapes = True
force_nn_module_property_static_shapes = True
guard_nn_modules = False
cache_size_limit_warning = True
error_on_recompile = False
dynamic_shapes = True
raise_on_ctx_manager_usage = True
skip_nnmodule_hook_guards = True

_NAMES = frozenset(n for n in dir() if not n.startswith("_") and n not in ("annotations", "sys", "types", "Any"))


class _Config(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_") and name not in _NAMES:
            raise AttributeError(f"eager._dynamo.config has no setting {name!r}; known settings: "
                                 f"{', '.join(sorted(_NAMES))}")
        if name in ("cache_size_limit", "recompile_limit"):  # one limit under both names, as PyTorch's
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"eager._dynamo.config.{name} must be a positive int, got {value!r}")
            super().__setattr__("cache_size_limit", value)
            super().__setattr__("recompile_limit", value)
            return
        super().__setattr__(name, value)
        if name == "verbose":
            _switch_verbose(bool(value))
        elif name == "error_on_recompile":  # as set_stance("fail_on_recompile")
            from . import STANCE  # noqa: PLC0415  (the package imports this module first)

            STANCE.name = "fail_on_recompile" if value else "default"

    def patch(self, *args: Any, **changes: Any) -> "_Patch":
        """`config.patch(name=value)` or `config.patch({name: value})`: a context manager (and
        decorator) that sets the values and restores them after, as PyTorch's."""
        if args:
            if len(args) == 2 and isinstance(args[0], str):
                changes[args[0]] = args[1]
            elif len(args) == 1 and isinstance(args[0], dict):
                changes.update(args[0])
            else:
                raise TypeError("config.patch takes a dict, a (name, value) pair, or keyword arguments")
        for name in changes:
            if name not in _NAMES:
                raise AttributeError(f"eager._dynamo.config has no setting {name!r}")
        return _Patch(self, changes)


class _Patch:
    def __init__(self, config: _Config, changes: dict) -> None:
        self.config, self.changes = config, changes
        self.saved: dict = {}

    def __enter__(self) -> None:
        self.saved = {k: getattr(self.config, k) for k in self.changes}
        for k, v in self.changes.items():
            setattr(self.config, k, v)

    def __exit__(self, *exc: Any) -> None:
        for k, v in self.saved.items():
            setattr(self.config, k, v)

    def __call__(self, fn: Any) -> Any:
        import functools  # noqa: PLC0415

        @functools.wraps(fn)
        def patched(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return patched


def _switch_verbose(on: bool) -> None:
    import logging  # noqa: PLC0415

    logging.getLogger("graphmode.recompiles").setLevel(logging.DEBUG if on else logging.NOTSET)
    if on and not logging.getLogger("graphmode").handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
        logging.getLogger("graphmode").addHandler(handler)


def dynamic_default() -> bool | None:
    """The `dynamic` a compile without one gets: None (automatic), True or False."""
    if not assume_static_by_default:
        return True
    return None if automatic_dynamic_shapes else False


sys.modules[__name__].__class__ = _Config
