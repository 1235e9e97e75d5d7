"""Random programs over the op set, traced: the printed graph parses back to the same text
(and to a verified graph that computes the same thing), for the forward and the joint
forward+backward graph. Programs are recipes drawn by hypothesis and applied to tracers
and to eager tensors alike, so each traced graph is also checked against eager."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from random_programs import PROGRAM, program_function, program_inputs, program_loss

import eager
import static


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PROGRAM)
def test_random_graph_round_trips_and_runs_like_eager(program):
    arrays, fn = program_inputs(program), program_function(program)
    graph = static.trace(fn, *[eager.tensor(a) for a in arrays])
    text = str(graph)
    parsed = static.parse_ir(text)
    assert str(parsed) == text
    static.verify(parsed)
    expected = fn(*[eager.tensor(a) for a in arrays])
    for got, again, e in zip(static.run_graph(graph, arrays), static.run_graph(parsed, arrays), expected):
        np.testing.assert_array_equal(got, e.numpy())
        np.testing.assert_array_equal(again, got)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(PROGRAM)
def test_random_joint_graph_round_trips_and_matches_eager_gradients(program):
    arrays, loss = program_inputs(program, "float64"), program_loss(program)
    argnums = tuple(range(len(arrays)))
    joint = static.trace(static.grad(loss, argnums=argnums), *[eager.tensor(a) for a in arrays])
    text = str(joint)
    assert str(static.parse_ir(text)) == text

    tensors = [eager.tensor(a, requires_grad=True) for a in arrays]
    loss(*tensors).backward()
    got = static.run_graph(static.parse_ir(text), arrays)
    for g, t in zip(got, tensors):
        expected = t.grad.numpy() if t.grad is not None else np.zeros(tuple(t.shape))
        np.testing.assert_allclose(g, expected, rtol=1e-9, atol=1e-12, equal_nan=True)
