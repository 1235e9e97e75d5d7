"""torch.func.stack_module_state: the parameters and buffers of several modules of one
architecture stacked along a new leading dim, for vmap over an ensemble with
functional_call (PyTorch's model-ensembling recipe)."""
from __future__ import annotations

from typing import Any


def stack_module_state(models: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """(params, buffers): each name's tensors of the models stacked along dim 0. A stacked
    parameter is a new leaf that requires grad when the models' do (as PyTorch's);
    buffers are stacked as they are. Mirrors torch.func.stack_module_state."""
    from ._functional import stack  # noqa: PLC0415

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {}
    for name in all_params[0]:
        tensors = [p[name] for p in all_params]
        params[name] = stack([t.detach() for t in tensors]).requires_grad_(any(t.requires_grad for t in tensors))
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {name: stack([b[name] for b in all_buffers]) for name in all_buffers[0]}
    return params, buffers
