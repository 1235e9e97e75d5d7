"""Splitting a joint forward+backward graph into the forward (which also returns the
values the backward needs: the residuals) and the backward (residuals and output
cotangents in, input gradients out)."""
from __future__ import annotations

from dataclasses import dataclass

from .ir import Graph, Value


@dataclass
class Split:
    forward: Graph  # inputs: primal inputs; outputs: user outputs, then residuals
    backward: Graph  # inputs: residuals, then seeds; outputs: gradients
    residuals: list  # Values saved by the forward for the backward


def _live_nodes(nodes: list, wanted: set) -> list:
    """Nodes needed to compute `wanted` Values, in order (dead code dropped)."""
    keep = []
    need = set(wanted)
    for node in reversed(nodes):
        if any(o in need for o in node.outputs):
            keep.append(node)
            need.update(node.input_values())
    keep.reverse()
    return keep


def split_joint(joint: Graph, primal_inputs: list, seeds: list, n_forward_outputs: int) -> Split:
    from_seed = set(seeds)
    backward_nodes, forward_nodes = [], []
    for node in joint.nodes:
        if any(v in from_seed for v in node.input_values()):
            backward_nodes.append(node)
            from_seed.update(node.outputs)
        else:
            forward_nodes.append(node)
    grads = joint.outputs[n_forward_outputs:]
    backward_nodes = _live_nodes(backward_nodes, set(grads))
    defined_in_backward = set(seeds) | {o for n in backward_nodes for o in n.outputs}
    residuals: list = []
    for v in [v for n in backward_nodes for v in n.input_values()] + [g for g in grads if isinstance(g, Value)]:
        if v not in defined_in_backward and v not in residuals:
            residuals.append(v)
    fwd_outputs = list(joint.outputs[:n_forward_outputs])
    forward_nodes = _live_nodes(forward_nodes, set(fwd_outputs) | set(residuals))
    forward = Graph(name=joint.name + "_forward", inputs=list(primal_inputs), nodes=forward_nodes,
                    outputs=fwd_outputs + residuals)
    backward = Graph(name=joint.name + "_backward", inputs=residuals + list(seeds), nodes=backward_nodes,
                     outputs=list(grads))
    return Split(forward, backward, residuals)
