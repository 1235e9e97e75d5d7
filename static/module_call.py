"""`static.functional_call(module, params, args)`: call a module with other parameter and
buffer values, as `torch.func.functional_call` does.

It is what makes a module's parameters an explicit argument, so that `static.grad` and
`static.value_and_grad` can differentiate with respect to them:

    params = dict(model.named_parameters())
    loss = lambda params, x, y: F.mse_loss(static.functional_call(model, params, (x,)), y)
    value, grads = static.value_and_grad(loss)(params, x, y)   # grads: a dict like params
"""
from __future__ import annotations

from eager.func import functional_call  # noqa: F401  (one implementation, torch.func's, in eager)
