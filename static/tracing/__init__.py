"""Tracing: the user's Python function, run on `Tracer` values, becomes a typed Graph. (The
package is `tracing`, not `trace`: `static.trace` is the public function, in `function`.)

What runs while the function runs, and what it leaves behind for each call to redo:

- `state` (a trace's state, the active trace, the user's `file:line`), `record` (one op call
  appended as a node), `tracer` (the `Tracer` value class), `function` (`static.trace`:
  arguments flattened, sources named, the verified graph);
- what the function reads from outside: `guards` and `reach` (Python values baked in and the
  walk that finds them), `shared_memory` (captured tensors that share memory), `pytree`
  (arguments as leaves and a hashable structure);
- what it does that one graph cannot hold by itself: `symbolic` (symbolic sizes),
  `randomness` (draws replayed as eager makes them), `side_effects` (Python effects replayed
  after each call), `custom_function` (autograd.Function bodies).

The package imports none of them: `static.ir` imports `symbolic` alone. Training steps
(backward() and optimizer.step() recorded into the trace) are `static.training`; compiling
a traced function per signature is `static.jit`.
"""
