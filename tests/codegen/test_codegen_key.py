"""The generated-code cache key covers everything the generators read, by construction:
graphs with the same IR text but another memory plan or other source locations get
other keys (and a memory plan's decisions follow renamed values)."""
from __future__ import annotations

import static
from codegen.executable import generator_input
from static.passes.memory import plan_memory
from static.passes.rewrite import renumber

TEXT = """func @f(%x: f32[100]) -> f32[100] {
  %0 = exp %x : f32[100]
  %1 = exp %0 : f32[100]
  %2 = exp %1 : f32[100]
  return %2
}"""


def test_memory_plan_is_part_of_the_generator_input():
    planned, unplanned = static.parse_ir(TEXT), static.parse_ir(TEXT)
    plan_memory(planned)
    assert str(planned) == str(unplanned)
    assert generator_input(planned) != generator_input(unplanned)


def test_source_locations_are_part_of_the_generator_input():
    a, b = static.parse_ir(TEXT), static.parse_ir(TEXT)
    a.nodes[0].loc = "model.py:3"
    assert generator_input(a) != generator_input(b)


def test_memory_plan_survives_renaming():
    g = static.parse_ir(TEXT)
    plan_memory(g)
    before = dict(g.memory_plan.buffer_of)
    renumber(g)
    for node in g.nodes:
        assert g.memory_plan.buffer_of[node.outputs[0]] == before[node.outputs[0]]
