"""Structured control flow: `cond`, `switch`, `while_loop`, `fori_loop` and `scan` with JAX's
signatures and semantics (jax.lax), for both modes.

Outside a trace they run the Python loop on whatever they are given (eager tensors, arrays),
so code works both ways. Inside a trace each traces its function(s) once into a closed
body (its own `TraceState`, a `BodyState`: values of the enclosing trace that the body
reads, tensors it captures, enter as extra inputs, the loop's "consts") and records one
`scan` / `while_loop` / `cond` node (eager/ops/control_flow.py) holding the body as IR text.
A 1000-step loop is one node: tracing and compiling it costs the same as one step.

The bodies are simplified (DCE, CSE, folding) when they are made; at run time each is
compiled once by the graph's code generator with fusion inside it (`runner`), and the
node's forward loops in Python around it. Reverse mode: a scan's VJP is a scan in the
other direction over the saved carries whose body is the body's VJP (`scan_vjp_body`,
built here by static's autodiff on the body); cond's is a cond of the branches' VJPs
(`cond_vjp_branch`). Forward mode (static.jvp) follows JAX's rules: each op's forward rule
runs a loop or choice over the bodies' JVPs (`jvp_body`), the tangents carried along, so a
while_loop (which has no VJP: its trip count is data, as in JAX) has a JVP too.

Under vmap each has a batching rule (eager/ops/control_flow.py) with JAX's semantics: a
scan runs once over the batch, a cond with a batched predicate computes every branch and
selects per example, a while_loop runs while any example's condition holds. A body that
reads a batched value from its closure is traced on the batch (`_scan_batched`,
`_while_batched`: per-example gradients of an RNN).

Errors follow JAX's: mismatched carry or branch types raise TypeError naming the user's
line, the component and both types.

The package, by job: `body` (tracing a function into a closed body, checking carries),
`loops` (scan, fori_loop, while_loop), `choice` (cond, switch), `ir_bodies` (bodies as IR
text: compiled at their first run, differentiated, batched, pruned). eager's loop ops call
these through the package's names (`static.control_flow.runner`, ...).
"""
from .body import BodyState
from .choice import cond, switch
from .ir_bodies import (
    batched_body,
    batched_while,
    cond_vjp_branch,
    parse_body,
    prune_loop_results,
    replay_text,
    residual_body,
    runner,
    scan_vjp_body,
    strip_residuals,
)
from .jvp_bodies import jvp_body
from .loops import fori_loop, scan, while_loop

# the public five, then the names eager's loop ops and static's passes reach through the package
__all__ = ["cond", "fori_loop", "scan", "switch", "while_loop", "BodyState", "batched_body", "batched_while",
           "cond_vjp_branch", "jvp_body", "parse_body", "prune_loop_results", "replay_text", "residual_body", "runner",
           "scan_vjp_body", "strip_residuals"]
