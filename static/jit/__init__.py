"""`static.compile` and what it builds on: a function traced per call signature, optimized and
run as generated code.

- `compiled` (the `Compiled` wrapper and `compile`), with its option checks and argument
  binding (`options`), its per-signature cache (`lookup`), its call path (`call`) and the
  methods that look inside it (`introspect`, opening with `explain_summary`);
- `signature` (a call's cache key and why a new one retraces), `entry` (one compiled
  signature: the trace, its autodiff split and executables), `trace_cache` (optimized graphs
  found again right after tracing), `bridge` (arguments in, in-place updates written back,
  outputs out, CompiledFunctionBackward);
- `executable` (the backend registry), `stages` (`lower()` / `compile()` one stage at a
  time), `check` (check=True: every call run compiled and eagerly, compared);
- `dynamic_shapes` (symbolic sizes as a compile policy) and `graph_breaks` (a function split
  where its trace breaks).

The package imports none of them, so that `import static.jit.executable` (what codegen's
backends are registered with) loads no tracer.
"""
