"""The CNN fusion tests' common check (test_native_cnn_*.py): a model's SGD-momentum training
step run eager and compiled (native backend, check=True) from the same seed on the same
inputs, its outputs and the parameters after it compared within the dtype's tolerance, and
the compiled forward's generated C returned for the test to read what was fused."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

import eager
import static


def _parts(out: Any) -> tuple:
    return out if isinstance(out, tuple) else (out,)


def compiled_step_source(make_model: Callable[[], Any], loss_of: Callable[[Any, Any], Any], x: np.ndarray,
                         steps: int) -> str:
    """Run `steps` SGD steps (lr 0.1, momentum 0.9) on x * 1, x * 2, ... eager and compiled;
    make_model() builds the model after manual_seed(0) (moved to float64 for a float64 x);
    loss_of(model, t) gives the loss, or a tuple whose first item is the loss and whose other
    tensors the step returns too. Returns the compiled forward's generated source."""
    runs = []
    for compiled in (False, True):
        eager.manual_seed(0)
        model = make_model()
        if x.dtype == np.float64:
            model = model.to(eager.float64)
        opt = eager.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

        def step(t, model=model, opt=opt):
            opt.zero_grad()
            out = loss_of(model, t)
            _parts(out)[0].backward()
            opt.step()
            return out
        f = static.compile(step, backend="native", check=True) if compiled else step
        outs = [f(eager.from_numpy(x * (k + 1))) for k in range(steps)]
        runs.append((outs, [p.detach().numpy().copy() for p in model.parameters()], f))
    (want, want_p, _), (got, got_p, f) = runs
    tol = dict(rtol=1e-4, atol=1e-5) if x.dtype == np.float32 else dict(rtol=1e-9, atol=1e-11)
    for a, b in zip(got, want):
        for u, v in zip(_parts(a), _parts(b)):
            np.testing.assert_allclose(u.detach().numpy(), v.detach().numpy(), **tol)
    for a, b in zip(got_p, want_p):
        np.testing.assert_allclose(a, b, **tol)
    return f._entry_for((eager.from_numpy(x),), {})[3].forward._loaded.source
