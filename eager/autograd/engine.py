"""The backward engine: walks the graph from the roots in dependency order, summing the
gradients that meet at a node before running it (as PyTorch's engine does).

`run_backward` is rendered once at import from the template below, with the steps of running
a node (its VJP, fitting each gradient to its operand, releasing what it saved) taken from the
snippets eager.autograd.graph renders `Node.apply`/`Node.release` from: the common node runs
inline (no call, no list of gradients per node; each gradient passes on as soon as it is
fitted) while the text exists once. The rendered source is in eager._fast_path.SOURCES
["run_backward"] and linecache (tracebacks show it); tests/eager/test_engine_rendering.py checks
that the inline path and Node.apply agree."""
from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Optional, Union

import numpy as np

from gmbase.dtypes import _BY_NP  # noqa: F401  (read by the rendered loop)
from gmbase.fpstate import FP_QUIET as _FP_QUIET  # noqa: F401
from gmbase.fpstate import restore_fp as _restore_fp  # noqa: F401
from gmbase.fpstate import set_fp as _set_fp  # noqa: F401
from gmops._registry import fit_grad  # noqa: F401

from .._fast_path import _indent, define
from .._grad_mode import STATE
from .graph import _NOTHING_SAVED as _NOTHING_SAVED  # (`x as x`: names the rendered loop reads)
from .graph import COMPACT_PASSES as COMPACT_PASSES
from .graph import FIT, RELEASE, VJP, AccumulateGrad, Node, _private_view
from .graph import HOOKED as HOOKED
from .graph import PLAIN_NODE_TYPES as PLAIN_NODE_TYPES

if TYPE_CHECKING:
    from .._tensor import Tensor
    from .function import FunctionCtx

# A node the engine runs: an op's backward, a custom Function's, or a leaf's accumulator.
BackwardNode = Union[Node, "FunctionCtx", AccumulateGrad]
Grads = list[Optional["Tensor"]]  # per output of a node (None: no gradient flows there)
Targets = dict[tuple[BackwardNode, int], list[int]]  # (node, output_nr) -> positions in `inputs`

_refcount = sys.getrefcount
_NO_GRAD_FN = "element {} of tensors does not require grad and does not have a grad_fn"


def _edge(t: Tensor) -> tuple[BackwardNode, int]:
    """The (node, output_nr) a gradient for tensor t flows into."""
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    return t._accumulator(), 0


def _leads_to(roots: Iterable[BackwardNode | None], targets: set[int]) -> set[int]:
    """Nodes from which some target node can be reached (the ones worth running): one
    post-order walk, each node decided after all the nodes it points to."""
    useful: set[int] = set()  # ids of nodes
    done: set[int] = set()
    stack = [(n, False) for n in roots if n is not None]
    while stack:
        node, children_done = stack.pop()
        if id(node) in done:
            continue
        if not children_done:
            stack.append((node, True))
            stack.extend((n, False) for n, _ in node.next_functions if n is not None and id(n) not in done)
            continue
        done.add(id(node))
        if id(node) in targets or any(n is not None and id(n) in useful for n, _ in node.next_functions):
            useful.add(id(node))
    return useful


# -- the engine's loop, rendered once ---------------------------------------------------------------
# {vjp}, {fit}, {release}: eager.autograd.graph's VJP, FIT and RELEASE snippets (the text of
# Node.apply and Node.release), indented into the inline path. {count_in_loop} and
# {count_in_sink_loop}: COUNT_EDGE in the dependency walk's two loops (plain, and noting sinks).
# An edge to `nxt` counted in the dependency walk: its node walked the first time it is met
# (a root is walked already).
COUNT_EDGE = """\
count = deps.get(nxt)
if count is None:
    deps[nxt] = 1
    if nxt not in root_set:
        stack.append(nxt)
else:
    deps[nxt] = count + 1"""

ENGINE = '''\
def run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs=None, accumulate=True):
    """Backpropagate from `tensors`. With accumulate=False (autograd.grad) the gradients at
    `inputs` are returned instead of being added into `.grad` (rendered by
    eager.autograd.engine, its node steps from eager.autograd.graph's snippets)."""
    roots = []
    for i, t in enumerate(tensors):
        if not t._requires_grad:
            raise RuntimeError(_NO_GRAD_FN.format(i))
        fn = t.grad_fn
        roots.append((fn, t._output_nr) if fn is not None else (t._accumulator(), 0))
    targets = {{}}
    if inputs is not None:
        for k, t in enumerate(inputs):
            targets.setdefault(_edge(t), []).append(k)
        target_nodes = {{id(n) for n, _ in targets}}
        captured = [None] * len(inputs)
    else:
        target_nodes = _NO_IDS
        captured = []

    prev_mode, prev_compact = STATE.enabled, STATE.compact_broadcasts
    STATE.enabled = create_graph
    STATE.compact_broadcasts = not create_graph
    if not create_graph:
        COMPACT_PASSES.append(True)  # (one list operation: atomic, no lock)
    fp_token = _set_fp(_FP_QUIET)  # masked branches (where) may overflow harmlessly (gmbase.fpstate.quiet_fp)
    try:
        # Dependency counts (how many edges from reachable nodes point at each node), and
        # whether every reachable sink (a node with no next edge, a leaf's accumulator) is a
        # target: then every reachable node leads to one and none needs pruning.
        deps = {{}}
        sinks_are_targets = True
        if len(roots) == 1:  # (loss.backward(): no other root to meet, nothing to dedup)
            stack = [roots[0][0]]
            root_set = ()
        else:  # once per node: two roots on one node (outputs of one split) count its edges once
            stack = list(dict.fromkeys(n for n, _ in roots))
            root_set = set(stack)  # a node other than a root is walked when its first edge is counted
        if inputs is None:
            while stack:
                for nxt, _ in stack.pop().next_functions:
                    if nxt is not None:
{count_in_loop}
        else:  # the same walk, which also notes a sink that is no target
            while stack:
                node = stack.pop()
                sink = True
                for nxt, _ in node.next_functions:
                    if nxt is None:
                        continue
                    sink = False
{count_in_sink_loop}
                if sink and id(node) not in target_nodes:
                    sinks_are_targets = False
        # Prune (run only the nodes that lead to `inputs`) unless every path ends at one of them
        # anyway: autograd.grad(loss, all_leaves) then walks the graph once, not twice.
        useful = _leads_to([n for n, _ in roots], target_nodes) if inputs is not None and not sinks_are_targets else None

        buffers = {{}}
        if len(roots) == 1:
            node, nr = roots[0]
            g = grad_tensors[0]
            owned = {{id(g._data)}}
            slots = buffers[node] = [None] * node.n_outputs
            slots[nr] = g
            ready = [node] if node not in deps else []
        else:
            owned = {{id(g._data) for g in grad_tensors}}
            for (node, nr), g in zip(roots, grad_tensors):
                _add(buffers, node, nr, g)
            ready = [n for n in dict.fromkeys(n for n, _ in roots) if deps.get(n, 0) == 0]
        plain = not STATE.anomaly  # (anomaly mode: every node through _execute, which checks NaNs)
        # whether an input asked for is a plain node's output (autograd.grad(loss, [hidden])):
        # mostly they are leaves, and the inline path then skips the per-node id() lookup
        node_targets = bool(targets) and any(type(n) in PLAIN_NODE_TYPES for n, _ in targets)
        # no node can need the general path for hooks, a capture or pruning: one test per pass
        simple = plain and useful is None and not node_targets and not HOOKED[0]
        while ready:
            node = ready.pop()
            # (a buffer exists only once a gradient reached it: it holds at least one)
            grads = buffers.pop(node, None)
            if type(node) in PLAIN_NODE_TYPES and grads is not None and (simple or (
                    plain and (not HOOKED[0] or node._hooks is None)
                    and (not node_targets or id(node) not in target_nodes) and (useful is None or id(node) in useful))):
                # the common case: Node.apply and Node.release (the same snippets), and the
                # passing on of each gradient as soon as it is fitted, in one loop over the edges
                edges = node.next_functions
                try:
{vjp}
                    for g, m, (nxt, nr) in zip(raw, node._in_meta, edges):
                        if nxt is None:
                            continue
                        if g is not None and m is not None:
{fit}
                            slots = buffers.get(nxt)
                            if slots is None:  # (one slot per output of nxt: every node kind has _out_meta)
                                slots = buffers[nxt] = [None] * len(nxt._out_meta)
                                slots[nr] = g
                            else:  # sum what meets at nxt's input slot
                                prev = slots[nr]
                                slots[nr] = g if prev is None else _sum(prev, g, create_graph)
                        left = deps[nxt] - 1
                        if left:
                            deps[nxt] = left
                        else:  # (a node's count reaches zero once; it is not read again)
                            ready.append(nxt)
                except Exception as exc:
                    _annotate(exc, node)
                    raise
                if not retain_graph:
{release}
                continue
            if type(node) is AccumulateGrad and grads is not None and node._hooks is None and not targets:
                # a leaf's accumulator with no hooks and nothing captured (a sink: no edges,
                # nothing saved)
                g = grads[0]
                if accumulate and g is not None:
                    node.accumulate(g, create_graph, owned)
                continue
            if grads is not None and node._hooks is None and not targets and plain and useful is None:
                # a custom Function's node (or a subclass of Node) without _execute's special
                # cases (run_pre, captures, the pruning test)
                try:
                    outs = node.apply(grads)
                except Exception as exc:
                    _annotate(exc, node)
                    raise
            else:
                outs = _execute(node, grads, targets, captured, useful, accumulate, create_graph, owned)
            if outs is not None and not retain_graph:
                node.release()  # only nodes that ran give up their saved tensors, as in PyTorch
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                if outs is not None:
                    g = outs[k]
                    if g is not None:  # sum what meets at nxt's input slot
                        slots = buffers.get(nxt)
                        if slots is None:
                            slots = buffers[nxt] = [None] * len(nxt._out_meta)
                        prev = slots[nr]
                        slots[nr] = g if prev is None else _sum(prev, g, create_graph)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left == 0:
                    ready.append(nxt)
        return captured
    finally:
        _restore_fp(fp_token)
        STATE.enabled = prev_mode
        STATE.compact_broadcasts = prev_compact
        if not create_graph:
            COMPACT_PASSES.pop()
'''

_NO_IDS: frozenset[int] = frozenset()  # target_nodes when no inputs are asked for


def render_engine() -> str:
    """The source of run_backward (see the module docstring)."""
    return ENGINE.format(vjp=_indent(VJP.format(node="node", grads="grads", edges="edges"), 5),
                         fit=_indent(FIT, 7), release=_indent(RELEASE.format(node="node"), 5),
                         count_in_loop=_indent(COUNT_EDGE, 6), count_in_sink_loop=_indent(COUNT_EDGE, 5))


if TYPE_CHECKING:
    def run_backward(tensors: Sequence[Tensor], grad_tensors: Sequence[Tensor], retain_graph: bool,
                     create_graph: bool, inputs: Sequence[Tensor] | None = None,
                     accumulate: bool = True) -> list[Tensor | None]: ...
else:
    run_backward = define("run_backward", render_engine(), globals())


def _any(grads: Grads) -> bool:
    for g in grads:
        if g is not None:
            return True
    return False


def _sum(prev: Tensor, g: Tensor, create_graph: bool) -> Tensor:
    """prev + g, the gradients meeting at one input slot: added into prev's array in place
    when nothing but the slot holds prev or its array (PyTorch's InputBuffer steals a buffer
    whose use count is one the same way), which spares an array and an op's dispatch per
    extra gradient (a recurrent step's weights meet one gradient per time step).

    The reference counts: prev is held by the slot, the caller's local `prev`, this call's
    argument and getrefcount's; its array by prev._data, the local `a` and getrefcount's (an
    array that views another, whole, is taken when nothing else holds that one: _private_view).
    Any other holder (the same gradient passed to two operands by an add's backward, a saved
    tensor, a view of the array) makes the count higher, and the sum is then a new tensor."""
    a = prev._data
    b = g._data
    if (not create_graph and type(a) is np.ndarray and type(b) is np.ndarray
            and (a.base is None or _private_view(a)) and a.shape == b.shape and a.dtype is b.dtype
            and a.flags.writeable and _refcount(prev) == 4 and _refcount(a) == 3 and prev.grad_fn is None):
        np.add(a, b, out=a)
        return prev
    total: Tensor = prev + g
    return total


def _add(buffers: dict[BackwardNode, Grads], node: BackwardNode, nr: int, g: Tensor) -> None:
    slots = buffers.get(node)
    if slots is None:
        slots = buffers[node] = [None] * node.n_outputs
    prev = slots[nr]
    slots[nr] = g if prev is None else prev + g


def _execute(node: BackwardNode, grads: Grads | None, targets: Targets, captured: list[Tensor | None],
             useful: set[int] | None, accumulate: bool, create_graph: bool, owned: set[int]) -> Grads | None:
    """Run one node; returns the gradients for its next edges (or None: nothing flows on)."""
    if grads is None:
        return None
    hooks = node._hooks
    if hooks is not None:
        grads = hooks.run_pre(grads)
    if targets:
        for nr, g in enumerate(grads):
            for k in targets.get((node, nr), ()):
                captured[k] = g
    if isinstance(node, AccumulateGrad):  # (no subclasses)
        g0 = grads[0]
        if accumulate and g0 is not None and (not targets or (node, 0) in targets):
            node.accumulate(g0, create_graph, owned)
            if hooks is not None and hooks.post:  # PyTorch runs an accumulator's hooks after .grad
                hooks.run_post([], grads)  # is written (register_post_accumulate_grad_hook's)
        return None
    if useful is not None and id(node) not in useful:
        return None
    for g in grads:
        if g is not None:
            break
    else:
        return None  # nothing flows into this node
    out = _call(node, grads)
    if hooks is not None and hooks.post:
        out = hooks.run_post(out, grads)
    return out


def _annotate(exc: Exception, node: Node | FunctionCtx) -> None:
    """Add the forward stack of a node recorded in anomaly mode to its backward's error."""
    if node._trace is not None:
        from .anomaly import annotate  # noqa: PLC0415

        annotate(exc, node)


def _call(node: Node | FunctionCtx, grads: Grads) -> Grads:
    try:
        out = node.apply(grads)
    except Exception as exc:
        _annotate(exc, node)
        raise
    if STATE.anomaly and STATE.anomaly_check_nan:
        from .anomaly import check_nan  # noqa: PLC0415

        check_nan(node, out)
    return out
