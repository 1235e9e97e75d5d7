"""Gradient checks against central finite differences (use float64 inputs)."""
from __future__ import annotations

import warnings

import numpy as np

from .._grad_mode import no_grad


class GradcheckError(RuntimeError):
    """Raised by gradcheck when analytical and numerical Jacobians disagree."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _flat_outputs(fn, inputs):
    # Not under no_grad: the function may itself differentiate (gradgradcheck).
    outs = _as_tuple(fn(*inputs))
    return np.concatenate([np.asarray(o._data, dtype=np.float64).reshape(-1)
                           for o in outs if hasattr(o, "_data") and o.is_floating_point()])


def _numerical(fn, inputs, wrt, eps):
    base = _flat_outputs(fn, inputs)
    jac = []
    for t in wrt:
        arr = t._data
        cols = np.zeros((arr.size, base.size))
        flat = arr.reshape(-1)
        if not np.shares_memory(flat, arr):
            raise ValueError("gradcheck needs contiguous inputs")
        for k in range(arr.size):
            orig = flat[k].item()
            flat[k] = orig + eps
            plus = _flat_outputs(fn, inputs)
            flat[k] = orig - eps
            minus = _flat_outputs(fn, inputs)
            flat[k] = orig
            cols[k] = (plus - minus) / (2 * eps)
        jac.append(cols)
    return jac


def _analytical(fn, inputs, wrt):
    from .._factories import zeros_like  # noqa: PLC0415
    from . import grad  # noqa: PLC0415

    outs = [o for o in _as_tuple(fn(*inputs)) if hasattr(o, "_data") and o.is_floating_point()]
    sizes = [o.numel() for o in outs]
    total = sum(sizes)
    jac = [np.zeros((t.numel(), total)) for t in wrt]
    col = 0
    for oi, o in enumerate(outs):
        for k in range(sizes[oi]):
            if not o.requires_grad:
                col += 1
                continue
            seed = zeros_like(o).contiguous()  # row-major, so the flat write below lands in it
            seed._data.reshape(-1)[k] = 1
            grads = grad([o], list(wrt), [seed], retain_graph=True, allow_unused=True)
            for j, g in enumerate(grads):
                if g is not None:
                    jac[j][:, col] = np.asarray(g._data, dtype=np.float64).reshape(-1)
            col += 1
    return jac


def gradcheck(func, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, **_ignored) -> bool:
    """Compare autograd's Jacobian of `func` with central finite differences."""
    inputs = _as_tuple(inputs)
    wrt = [t for t in inputs if hasattr(t, "_data") and t.requires_grad]
    for i, t in enumerate(wrt):
        if t.dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point. "
                          "This check will likely fail if all the inputs are not of double precision "
                          "floating point.", UserWarning, stacklevel=2)
    numerical = _numerical(func, inputs, wrt, eps)
    analytical = _analytical(func, inputs, wrt)
    for i, (n, a) in enumerate(zip(numerical, analytical)):
        if not np.allclose(a, n, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            raise GradcheckError(
                f"Jacobian mismatch for output 0 with respect to input {i},\n"
                f"numerical:{n}\nanalytical:{a}\n"
            )
    return True


def gradgradcheck(func, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, raise_exception: bool = True, **_ignored) -> bool:
    """gradcheck of the function (inputs, v) -> vjp(func, inputs, v): second derivatives."""
    from .._factories import randn  # noqa: PLC0415
    from . import grad  # noqa: PLC0415

    inputs = _as_tuple(inputs)
    with no_grad():
        outs = [o for o in _as_tuple(func(*inputs)) if o.is_floating_point()]
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = []
        for o in outs:
            v = randn(tuple(o.shape), dtype=o.dtype)
            v._data[...] = rng.standard_normal(o.shape)
            v.requires_grad_(True)
            grad_outputs.append(v)
    grad_outputs = list(_as_tuple(grad_outputs))
    n_in = len(inputs)
    wrt_idx = [i for i, t in enumerate(inputs) if hasattr(t, "_data") and t.requires_grad]

    def first_order(*args):
        ins, vs = args[:n_in], args[n_in:]
        res = [o for o in _as_tuple(func(*ins)) if o.is_floating_point()]
        gs = grad(res, [ins[i] for i in wrt_idx], list(vs), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_order, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
