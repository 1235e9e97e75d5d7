"""torch.nn.utils.stateless: functional_call, deprecated since PyTorch 2.0 in favour of
torch.func.functional_call, which it calls."""
from __future__ import annotations

import warnings
from typing import Any

__all__ = ["functional_call"]


def functional_call(module: Any, parameters_and_buffers: Any, args: Any = None, kwargs: Any = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call `module` with some of its parameters and buffers replaced (FutureWarning)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    from ...func import functional_call as _call  # noqa: PLC0415

    return _call(module, parameters_and_buffers, () if args is None else args, kwargs,
                 tie_weights=tie_weights, strict=strict)
