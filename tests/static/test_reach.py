"""static.reach: the walk that both the guards and the named captured inputs take over what a
traced function reads by name."""
from __future__ import annotations

import dis
import functools
import inspect
import types

import numpy as np

import eager
import static
from static.guards import collect
from static.reach import Walk, code_names, global_loads, names_read
from static.trace_function import named_sources

SCALE = 2.0
TABLE = np.arange(3.0)


def _reads_globals(x):
    return x * SCALE + TABLE


def _inner(x):
    return x * SCALE


def test_walk_visits_each_object_once_and_follows_wrapped_and_bound_methods():
    @functools.wraps(_inner)
    def outer(x):
        return _inner(x)

    class Box:
        def get(self):
            return 1

    box = Box()
    walk = Walk(outer)
    walk.push(outer, None, box.get)
    seen = list(walk)
    assert seen.count(outer) == 1
    assert _inner in seen  # outer.__wrapped__
    assert box in seen and Box.get in seen  # the bound method's instance and function
    assert box.get not in seen  # a bound method is replaced, never yielded itself
    assert None not in seen


def test_walk_first_visit_marks_objects_the_caller_handles():
    walk = Walk(_inner)
    assert walk.first_visit(_reads_globals)
    assert not walk.first_visit(_reads_globals)
    walk.push(_reads_globals)
    assert list(walk) == [_inner]


def test_code_names_include_nested_code():
    def f():
        return [SCALE for _ in range(2)]

    assert {"SCALE", "range"} <= code_names(f.__code__)


def test_attribute_names_are_not_globals():
    def f(opt):
        opt.step()
        return opt.SCALE

    assert "step" not in code_names(f.__code__) and "SCALE" not in code_names(f.__code__)


def _all_code(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _all_code(const)


def test_global_loads_agree_with_dis_on_real_code():
    """The direct bytecode reader gives what dis.get_instructions gives, on every function of
    the packages (thousands of code objects: extended arguments, comprehensions, class bodies)."""
    import codegen.native_gen.driver  # noqa: PLC0415
    import codegen.native_gen.region  # noqa: PLC0415
    import codegen.native_gen.region_reductions  # noqa: PLC0415
    import static.tracer  # noqa: PLC0415

    modules = [eager._tensor, static.tracer, static.trace_function, codegen.native_gen.region,
               codegen.native_gen.region_reductions, codegen.native_gen.driver, dis, inspect]
    checked = 0
    for module in modules:
        for code in _all_code(compile(inspect.getsource(module), module.__file__, "exec")):
            expected = {ins.argval for ins in dis.get_instructions(code) if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME")}
            assert global_loads(code) == expected, code.co_name
            checked += 1
    assert checked > 500


def test_global_loads_with_an_extended_argument():
    """A function naming more than 256 globals needs EXTENDED_ARG to load the last ones."""
    names = [f"g{k}" for k in range(300)]
    source = "def f():\n    return [" + ", ".join(names) + "]\n"
    space: dict = {}
    exec(compile(source, "<many globals>", "exec"), space)  # noqa: S102 - a fixed test source
    assert global_loads(space["f"].__code__) == set(names)


step = 0  # a training loop's counter at module level, as scripts have it


class _Stepper:
    def __init__(self):
        self.n = 0

    def step(self):
        self.n += 1


def test_a_module_level_loop_counter_does_not_retrace_a_step_calling_opt_step():
    global step
    stepper = _Stepper()

    def train(x):
        stepper.step()  # an attribute named like the global counter
        return (x * 2.0).sum()

    f = static.compile(train)
    x = eager.ones(3)
    for step in range(5):  # noqa: B007  (the global the compiled function must not guard on)
        f(x)
    assert f.retraces == []


def test_names_read_gives_globals_and_closure_cells_with_readers():
    k = 3

    def f(x):
        return x * SCALE + k

    reads = {r.name: r for r in names_read(f)}
    assert reads["SCALE"].kind == "global" and reads["SCALE"].value == SCALE
    assert reads["k"].kind == "closure" and reads["k"].value == 3
    k = 4  # the reader reads the cell again, where the function reads it
    assert reads["k"].read() == 4
    assert reads["SCALE"].read() == SCALE


def test_names_read_passes_over_an_empty_cell():
    def f():
        return later  # noqa: F821  (bound after f is made)

    assert [r.name for r in names_read(f)] == []
    later = 1  # noqa: F841


def test_guards_and_named_sources_see_the_same_reach():
    def wrapper(x):
        return _reads_globals(x)

    wrapped = functools.wraps(_reads_globals)(wrapper)
    assert "global 'SCALE'" in [g.what for g in collect(wrapped)]
    assert [name for name, _ in named_sources(wrapped).values()] == ["TABLE"]


def test_a_compiled_function_sees_a_rebound_global_through_the_walk():
    global SCALE
    f = static.compile(_reads_globals)
    x = eager.ones(3)
    first = f(x).numpy()
    old = SCALE
    try:
        SCALE = 5.0
        np.testing.assert_allclose(f(x).numpy(), np.ones(3) * 5.0 + TABLE)
    finally:
        SCALE = old
    np.testing.assert_allclose(first, np.ones(3) * old + TABLE)
