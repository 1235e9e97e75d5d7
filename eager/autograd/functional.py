"""Function transforms with PyTorch's signatures: vjp, jvp (by the double-vjp trick),
jacobian and hessian. Each is built from `autograd.grad`, so it works for any op."""
from __future__ import annotations

from typing import Any

from .._grad_mode import enable_grad


def _tuple(x):
    return (tuple(x), True) if isinstance(x, (tuple, list)) else ((x,), False)


def _prepare(inputs, create_graph):
    ins, is_tuple = _tuple(inputs)
    prepared = tuple(i.detach().requires_grad_(True) if not create_graph or not i.requires_grad else i for i in ins)
    return prepared, is_tuple


def _grads(outputs, inputs, grad_outputs, create_graph):
    """d(outputs)/d(inputs) against grad_outputs, zeros where nothing connects them.

    An output that does not require grad is constant in the inputs: a function that ignores
    them (`lambda a: eager.ones(2)`), or a gradient that came out as materialized zeros (the
    second pass of jvp and hessian through a linear function). It contributes zeros rather
    than the engine's "does not require grad" error, as PyTorch's transforms do with
    strict=False."""
    from .._factories import zeros_like  # noqa: PLC0415
    from . import grad  # noqa: PLC0415

    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return tuple(zeros_like(i) for i in inputs)
    return grad([o for o, _ in pairs], inputs, [g for _, g in pairs], create_graph=create_graph,
                retain_graph=True, allow_unused=True, materialize_grads=True)


def _single_element(tensors) -> bool:
    return len(tensors) == 1 and tensors[0].numel() == 1


def vjp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), v^T J)."""
    with enable_grad():
        ins, in_tuple = _prepare(inputs, create_graph)
        outs, out_tuple = _tuple(func(*ins))
        if v is None and not _single_element(outs):
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element.")
        vs = _tuple(v)[0] if v is not None else (None,) * len(outs)
        grads = _grads(list(outs), list(ins), list(vs), create_graph)
    outs = tuple(o if create_graph else o.detach() for o in outs)
    grads = tuple(g if create_graph else g.detach() for g in grads)
    return (outs if out_tuple else outs[0]), (grads if in_tuple else grads[0])


def jvp(func, inputs, v=None, create_graph: bool = False, strict: bool = False):
    """(func(inputs), J v), computed as the vjp of a vjp (no forward-mode AD needed)."""
    from .._factories import ones_like, zeros_like  # noqa: PLC0415

    if v is None and not _single_element(_tuple(inputs)[0]):
        raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                           "single Tensor with a single element.")
    with enable_grad():
        ins, in_tuple = _prepare(inputs, create_graph)
        outs, out_tuple = _tuple(func(*ins))
        us = tuple(zeros_like(o).requires_grad_(True) for o in outs)
        g = _grads(list(outs), list(ins), list(us), True)
        vs = _tuple(v)[0] if v is not None else tuple(ones_like(i) for i in ins)
        jv = _grads(list(g), list(us), list(vs), create_graph)
    outs = tuple(o if create_graph else o.detach() for o in outs)
    jv = tuple(j if create_graph else j.detach() for j in jv)
    return (outs if out_tuple else outs[0]), (jv if out_tuple else jv[0])


def jacobian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """J[i][j] = d out_i / d in_j, each of shape out_i.shape + in_j.shape."""
    from .. import _functional as F  # noqa: PLC0415
    from .._factories import zeros_like  # noqa: PLC0415

    with enable_grad():
        ins, in_tuple = _prepare(inputs, create_graph)
        outs, out_tuple = _tuple(func(*ins))
        result = []
        for o in outs:
            rows: list[list[Any]] = [[] for _ in ins]
            for k in range(o.numel()):
                seed = zeros_like(o).contiguous()  # row-major, so the flat write below lands in it
                seed._data.reshape(-1)[k] = 1
                gs = _grads([o], list(ins), [seed], create_graph)
                for j, g in enumerate(gs):
                    rows[j].append(g if create_graph else g.detach())
            per_input = []
            for j, i in enumerate(ins):
                stacked = F.stack(rows[j], 0) if rows[j] else zeros_like(i).reshape(0, *i.shape)
                per_input.append(stacked.reshape(*o.shape, *i.shape))
            result.append(tuple(per_input))
    if not out_tuple and not in_tuple:
        return result[0][0]
    if not out_tuple:
        return result[0]
    if not in_tuple:
        return tuple(r[0] for r in result)
    return tuple(result)


def hessian(func, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Jacobian of the gradient of a scalar function."""
    ins, in_tuple = _tuple(inputs)

    def gradient(*args):
        from . import grad  # noqa: PLC0415

        out = func(*args)
        if out.numel() != 1:
            raise RuntimeError("The function given to hessian should return a single element Tensor")
        gs = grad([out], list(args), create_graph=True, allow_unused=True, materialize_grads=True)
        return gs if in_tuple else gs[0]

    return jacobian(gradient, inputs if in_tuple else ins[0], create_graph=create_graph)
