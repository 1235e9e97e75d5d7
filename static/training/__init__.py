"""PyTorch-style training steps inside compiled functions.

    @static.compile
    def step(x, y):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

`loss.backward()` on a traced value records the backward into the same graph (static.autodiff)
and accumulates each leaf parameter's gradient into its `.grad`, functionalized: a `.grad`
that exists is a captured tensor updated in place (written back after the call); a `.grad`
that is None becomes a new tensor the graph writes. A leaf passed as an argument of the
compiled function gets its `.grad` the same way: each call points the graph at that call's
argument's `.grad` (made when None) and writes the accumulated gradient back. An optimizer's `step()` then reads those
gradients and updates parameters and its state in place, which the tracer already
functionalizes; state it creates on the first step becomes the caller's state, and Python
numbers it keeps per parameter (Adam's step count) and the learning rate of each group are
0-d inputs read at every call, so a steady loop neither retraces nor goes stale.

What a trace did to Python attributes (`p.grad = ...`, optimizer state entries) is redone
before every call of the compiled function (`CallPrep`), and a `.grad` the trace read before
changing it is guarded: setting it to None between calls retraces (at most one more
signature: the first step, where `.grad` is None, and the steady one).

The package, by job: `bindings` (the `.grad`s and optimizer state a trace reaches, bound
before each call: `CallPrep`), `backward` (backward(), autograd.grad, `.grad` reads and
assignments), `step` (optimizer.step(), zero_grad, fed hyper-parameters), `guards` (what a
cached step checks), `update_templates` (one parameter's update traced, replayed for the
others). Importing it registers the tracer's hooks (Tracer.backward, Optimizer.step,
autograd.grad, zero_grad); the names below are the ones other modules and tests use."""
from __future__ import annotations

from . import backward, bindings, guards, step, update_templates  # noqa: F401  (the hooks are registered on import)
from .backward import FreedBackward, freed_outputs, traced_backward, traced_grad, with_freed_history
from .bindings import CallPrep, call_prep, first_step_pending, note_start
from .bindings import _reachable_owners as _reachable_owners  # (static.jit.check saves what a step reaches)
from .guards import FedGuard, GradGuard, GroupGuard, OptimizerStateGuard, StateGuard
from .step import FedNumber, traced_clear_grad, traced_step
from .step import _library_update as _library_update  # (named by update_templates)

__all__ = ["CallPrep", "FedGuard", "FedNumber", "FreedBackward", "GradGuard", "GroupGuard", "OptimizerStateGuard",
           "StateGuard", "call_prep", "first_step_pending", "freed_outputs", "note_start", "traced_backward",
           "traced_clear_grad", "traced_grad", "traced_step", "with_freed_history"]
