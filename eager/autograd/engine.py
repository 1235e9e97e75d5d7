"""The backward engine: walks the graph from the roots in dependency order, summing the
gradients that meet at a node before running it (as PyTorch's engine does)."""
from __future__ import annotations

import sys
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Optional, Union

import numpy as np

from gmbase.dtypes import _BY_NP
from gmbase.fpstate import quiet_fp as _quiet_fp
from gmbase.fpstate import restore_fp as _restore_fp
from gmops._registry import fit_grad

from .._grad_mode import STATE
from .graph import _NOTHING_SAVED, COMPACT_PASSES, HOOKED, PLAIN_NODE_TYPES, AccumulateGrad, Node

if TYPE_CHECKING:
    from .._tensor import Tensor
    from .function import FunctionCtx

# A node the engine runs: an op's backward, a custom Function's, or a leaf's accumulator.
BackwardNode = Union[Node, "FunctionCtx", AccumulateGrad]
Grads = list[Optional["Tensor"]]  # per output of a node (None: no gradient flows there)
Targets = dict[tuple[BackwardNode, int], list[int]]  # (node, output_nr) -> positions in `inputs`

_refcount = sys.getrefcount
_COMPACT_LOCK = threading.Lock()  # (COMPACT_PASSES is counted by every thread)
_NO_GRAD_FN = "element {} of tensors does not require grad and does not have a grad_fn"


def _edge(t: Tensor) -> tuple[BackwardNode, int]:
    """The (node, output_nr) a gradient for tensor t flows into."""
    if t.grad_fn is not None:
        return t.grad_fn, t._output_nr
    return t._accumulator(), 0


def _collect(roots: Sequence[BackwardNode | None], targets: set[int]) -> tuple[dict[BackwardNode, int], bool]:
    """Dependency counts (how many edges from reachable nodes point at each node), and
    whether every reachable sink (a node with no next edge, a leaf's accumulator) is one of
    `targets` (ids): then every reachable node leads to a target and none needs pruning."""
    deps: dict[BackwardNode, int] = {}
    sinks_are_targets = True
    # once per node: two roots on one node (outputs of one split) must not count its edges twice
    if len(roots) == 1:  # (loss.backward(): one root, nothing to dedup)
        stack = [n for n in roots if n is not None]
    else:
        stack = list(dict.fromkeys(n for n in roots if n is not None))
    root_set = set(stack)  # a node other than a root is walked when its first edge is counted
    while stack:
        node = stack.pop()
        sink = True
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            sink = False
            count = deps.get(nxt)
            if count is None:
                deps[nxt] = 1
                if nxt not in root_set:
                    stack.append(nxt)
            else:
                deps[nxt] = count + 1
        if sink and id(node) not in targets:
            sinks_are_targets = False
    return deps, sinks_are_targets


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


def run_backward(tensors: Sequence[Tensor], grad_tensors: Sequence[Tensor], retain_graph: bool, create_graph: bool,
                 inputs: Sequence[Tensor] | None = None, accumulate: bool = True) -> list[Tensor | None]:
    """Backpropagate from `tensors`. With accumulate=False (autograd.grad) the gradients at
    `inputs` are returned instead of being added into `.grad`."""
    for i, t in enumerate(tensors):
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAD_FN.format(i))
    roots = [_edge(t) for t in tensors]
    targets: Targets = {}
    if inputs is not None:
        for k, t in enumerate(inputs):
            targets.setdefault(_edge(t), []).append(k)
    target_nodes = {id(n) for n, _ in targets}

    prev_mode, prev_compact = STATE.enabled, STATE.compact_broadcasts
    STATE.enabled = create_graph
    STATE.compact_broadcasts = not create_graph
    if not create_graph:
        with _COMPACT_LOCK:
            COMPACT_PASSES[0] += 1
    fp_token = _quiet_fp()  # masked branches (where) may overflow harmlessly
    try:
        root_nodes = [n for n, _ in roots]
        deps, sinks_are_targets = _collect(root_nodes, target_nodes)
        # Prune (run only the nodes that lead to `inputs`) unless every path ends at one of them
        # anyway: autograd.grad(loss, all_leaves) then walks the graph once, not twice.
        useful = _leads_to(root_nodes, target_nodes) if inputs is not None and not sinks_are_targets else None
        buffers: dict[BackwardNode, Grads] = {}
        owned = {id(g._data) for g in grad_tensors}
        for (node, nr), g in zip(roots, grad_tensors):
            _add(buffers, node, nr, g)
        captured: list[Tensor | None] = [None] * (len(inputs) if inputs is not None else 0)
        if len(root_nodes) == 1:  # (loss.backward(): no duplicate roots to drop)
            ready = root_nodes if root_nodes[0] not in deps else []
        else:
            ready = [n for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0]
        plain = not STATE.anomaly  # (anomaly mode: every node through _execute, which checks NaNs)
        # whether an input asked for is a plain node's output (autograd.grad(loss, [hidden])):
        # mostly they are leaves, and the inlined path then skips the per-node id() lookup
        node_targets = bool(targets) and any(type(n) in PLAIN_NODE_TYPES for n, _ in targets)
        while ready:
            node = ready.pop()
            # (a buffer exists only once a gradient reached it: it holds at least one)
            grads = buffers.pop(node, None)
            if (type(node) in PLAIN_NODE_TYPES and grads is not None and plain and (not HOOKED[0] or node._hooks is None)
                    and (not node_targets or id(node) not in target_nodes) and (useful is None or id(node) in useful)):
                # the common case, without _execute's special cases: Node.apply, Node.release
                # and the passing on of the gradients below, inlined into one loop over the edges
                if TYPE_CHECKING:  # (the set holds Node and its named subclasses: no check at run time)
                    assert isinstance(node, Node)
                op = node.op
                edges = node.next_functions
                try:
                    raw = node.apply(grads) if op.multi_output or op.vjp is None else op.vjp(node, grads[0])
                    if len(raw) < len(edges):
                        raise RuntimeError(f"{node._name}: the VJP of {op.name} returned {len(raw)} gradients "
                                           f"for {len(edges)} operands")
                    for g, m, (nxt, nr) in zip(raw, node._in_meta, edges):
                        if nxt is None:
                            continue
                        if g is not None and m is not None:
                            data = g._data
                            if data.shape != m[0] or (data.dtype is not m[1] and data.dtype != m[1]):
                                g = fit_grad(g, m[0], _BY_NP[m[1]])
                            slots = buffers.get(nxt)
                            if slots is None:
                                slots = buffers[nxt] = [None] * (len(nxt._out_meta) if type(nxt) in PLAIN_NODE_TYPES  # type: ignore[union-attr]
                                                                 else nxt.n_outputs)
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
                if not retain_graph:  # (Node.release, inlined; only ops that save_output set _saved_out)
                    if node._saved:
                        node._saved = _NOTHING_SAVED
                    if op.save_output and node._saved_out is not None:
                        node._saved = _NOTHING_SAVED
                        node._saved_out = None
                continue
            if grads is not None and node._hooks is None and not targets:
                # no hooks and nothing captured: a leaf's accumulator or a custom Function's
                # node without _execute's special cases (run_pre, captures, the pruning test)
                if isinstance(node, AccumulateGrad):  # (no subclasses)
                    g0 = grads[0]
                    if accumulate and g0 is not None:
                        node.accumulate(g0, create_graph, owned)
                    continue  # (a sink: no edges, nothing saved)
                outs: Grads | None
                if plain and useful is None:
                    try:
                        outs = node.apply(grads)
                    except Exception as exc:
                        _annotate(exc, node)
                        raise
                else:
                    outs = _execute(node, grads, targets, captured, useful, accumulate, create_graph, owned)
            else:
                outs = _execute(node, grads, targets, captured, useful, accumulate, create_graph, owned)
            if outs is not None and not retain_graph:
                node.release()  # only nodes that ran give up their saved tensors, as in PyTorch
            for k, (nxt, nr) in enumerate(node.next_functions):
                if nxt is None:
                    continue
                if outs is not None:
                    gk = outs[k]
                    if gk is not None:  # sum what meets at nxt's input slot (inlined _add)
                        slots = buffers.get(nxt)
                        if slots is None:
                            slots = buffers[nxt] = [None] * nxt.n_outputs
                        prev = slots[nr]
                        slots[nr] = gk if prev is None else _sum(prev, gk, create_graph)
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
            with _COMPACT_LOCK:
                COMPACT_PASSES[0] -= 1


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
    argument and getrefcount's; its array by prev._data, the local `a` and getrefcount's. Any other holder (the same
    gradient passed to two operands by an add's backward, a saved tensor, a view of the
    array) makes the count higher, and the sum is then a new tensor."""
    a = prev._data
    b = g._data
    if (not create_graph and type(a) is np.ndarray and type(b) is np.ndarray and a.base is None
            and a.shape == b.shape and a.dtype is b.dtype and a.flags.writeable
            and _refcount(prev) == 4 and _refcount(a) == 3 and prev.grad_fn is None):
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
