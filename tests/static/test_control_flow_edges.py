"""Edges of structured control flow: scans of length 0 (JAX's empty ys, in eager mode and in
every CPU backend; PyTorch's error for its scan), PyTorch-spelled loops checking their carry
per step with static's errors (and PyTorch's exception type), and every control-flow node
carrying the user's file:line whichever transform recorded it."""
from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import eager
import static
from eager import _higher_order_ops as hop
from eager._dynamo.exc import UncapturedHigherOrderOpError

HERE = os.path.basename(__file__)
BACKENDS = ["interpret", "numpy", "native"]


def _line() -> str:
    """This file's name and the caller's line."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return f"{HERE}:{frame.f_back.f_lineno}"


# -- scans of length 0 ----------------------------------------------------------------------------
def _body(c, x):
    return c + x, {"prod": c * x, "total": x.sum(), "wide": (c[:2] * 2).double()}


def _check_empty(ys, n_first: int = 0) -> None:
    assert set(ys) == {"prod", "total", "wide"}
    assert tuple(ys["prod"].shape) == (n_first, 3) and ys["prod"].dtype == eager.float32
    assert tuple(ys["total"].shape) == (n_first,) and ys["total"].dtype == eager.float32
    assert tuple(ys["wide"].shape) == (n_first, 2) and ys["wide"].dtype == eager.float64


@pytest.mark.parametrize("reverse", [False, True])
def test_eager_scan_of_length_zero_returns_empty_ys(reverse):
    init = eager.ones(3)
    carry, ys = static.scan(_body, init, eager.zeros(0, 3), reverse=reverse)
    np.testing.assert_array_equal(carry.numpy(), np.ones(3, np.float32))
    _check_empty(ys)
    # the types are those one step gives: a scan of one step agrees on all but the length
    _, one = static.scan(_body, init, eager.zeros(1, 3))
    for k in ys:
        assert tuple(one[k].shape[1:]) == tuple(ys[k].shape[1:]) and one[k].dtype == ys[k].dtype


def test_eager_scan_of_length_zero_with_length_and_no_xs():
    carry, ys = static.scan(lambda c, _: (c + 1, (c.double(), c > 0)), eager.zeros(2, dtype=eager.int32), None,
                            length=0)
    assert carry.dtype == eager.int32
    assert tuple(ys[0].shape) == (0, 2) and ys[0].dtype == eager.float64
    assert tuple(ys[1].shape) == (0, 2) and ys[1].dtype == eager.bool


def test_eager_scan_of_length_zero_keeps_none_ys_and_numpy_inputs():
    _, ys = static.scan(lambda c, x: (c + x, None), eager.ones(3), eager.zeros(0, 3))
    assert ys is None
    carry, ys = static.scan(lambda c, x: (c + x, c * x), np.ones(3, np.float32), np.zeros((0, 3), np.float32))
    assert isinstance(ys, np.ndarray) and ys.shape == (0, 3) and ys.dtype == np.float32


def test_eager_scan_of_length_zero_reports_a_body_it_cannot_type():
    def needs_values(c, x):
        return c + x, (c if float(c.sum()) > 0 else -c)

    with pytest.raises(ValueError, match=rf"{HERE}:\d+: scan of length 0 .*could not be traced"):
        static.scan(needs_values, eager.ones(3), eager.zeros(0, 3))
    with pytest.raises(TypeError, match=rf"{HERE}:\d+: scan body function carry input and carry output"):
        static.scan(lambda c, x: (c.sum(), c), eager.ones(3), eager.zeros(0, 3))


@pytest.mark.parametrize("vmap", ["eager", "static"])
def test_scan_of_length_zero_under_vmap(vmap):
    def f(c0, xs):
        return static.scan(lambda c, x: (c + x, (c * x).double()), c0, xs)

    mapped = eager.func.vmap(f) if vmap == "eager" else static.vmap(f)
    carry, ys = mapped(eager.ones(2, 3), eager.zeros(2, 0, 3))
    np.testing.assert_array_equal(carry.numpy(), np.ones((2, 3), np.float32))
    assert tuple(ys.shape) == (2, 0, 3) and ys.dtype == eager.float64


@pytest.mark.parametrize("backend", BACKENDS)
def test_compiled_scan_of_length_zero_matches_eager(backend):
    def f(xs):
        return static.scan(_body, eager.ones(3), xs)

    carry, ys = static.compile(f, backend=backend)(eager.zeros(0, 3))
    np.testing.assert_array_equal(carry.numpy(), np.ones(3, np.float32))
    _check_empty(ys)


def test_scan_of_length_zero_agrees_with_jax():
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")

    def jbody(c, x):
        return c + x, {"prod": c * x, "total": x.sum(), "wide": (c[:2] * 2).astype(jnp.float64)}

    jax.config.update("jax_enable_x64", True)  # (as test_control_flow_jax: float64 is float64)
    _, jys = jax.lax.scan(jbody, jnp.ones(3, jnp.float32), jnp.zeros((0, 3), jnp.float32))
    _, ys = static.scan(_body, eager.ones(3), eager.zeros(0, 3))
    assert set(ys) == set(jys)
    for k in jys:
        assert tuple(ys[k].shape) == jys[k].shape and ys[k].numpy().dtype == np.dtype(jys[k].dtype)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_torch_scan_of_length_zero_raises_as_torch(mode):
    def f(xs):
        return hop.scan(lambda c, x: (c + x, c * x), eager.ones(3), xs)

    run = f if mode == "eager" else static.compile(f)
    with pytest.raises(RuntimeError, match="scan dimension > 0"):
        run(eager.zeros(0, 3))


def test_torch_scan_of_length_zero_error_type_is_torchs():
    torch = pytest.importorskip("torch")
    from torch._higher_order_ops.scan import scan  # noqa: PLC0415

    with pytest.raises(RuntimeError, match="scan dimension > 0"):
        scan(lambda c, x: (c + x, c * x), torch.ones(3), torch.zeros(0, 3))


# -- PyTorch-spelled loops check their carry per step ---------------------------------------------
def _mismatches():
    return {
        "scan": lambda x: hop.scan(lambda c, xi: (c.sum(), c), x[0], x),
        "while_loop": lambda x: hop.while_loop(lambda c: c.abs().sum() < 100.0, lambda c: ((c * 2).double(),), (x,)),
        "cond": lambda x: hop.cond(x.sum() > 0, lambda a: a, lambda a: a.sum(), (x,)),
    }


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("kind", ["scan", "while_loop", "cond"])
def test_torch_spelled_loops_raise_static_errors_naming_the_line(kind, mode):
    fn = _mismatches()[kind]
    run = fn if mode == "eager" else static.compile(fn)
    x = eager.randn(4, 3) + 1.0
    with pytest.raises(TypeError) as info:
        run(x)
    assert isinstance(info.value, UncapturedHigherOrderOpError) and isinstance(info.value, RuntimeError)
    text = str(info.value)
    line = inspect.getsourcelines(_mismatches)[1]
    assert text.startswith(f"{HERE}:"), text
    assert int(text.split(":")[1]) > line  # the line inside _mismatches where the loop is called
    assert ("must have equal types" in text) if kind != "cond" else ("must have identical types" in text)


def test_torch_spelled_while_loop_checks_every_step_not_only_the_first():
    steps = []

    def body(c):
        steps.append(1)
        return (c + 1 if len(steps) < 3 else (c + 1).double(),)

    with pytest.raises(TypeError, match="the dtypes do not match"):
        hop.while_loop(lambda c: c.sum() < 100.0, body, (eager.zeros(2),))
    assert len(steps) == 3


def test_torch_spelled_loops_keep_the_users_own_errors():
    def body(c):
        raise TypeError("mine")

    with pytest.raises(TypeError, match="^mine$") as info:
        hop.while_loop(lambda c: c.sum() < 1.0, body, (eager.zeros(2),))
    assert not isinstance(info.value, UncapturedHigherOrderOpError)


def test_torch_while_loop_carry_dtype_error_is_of_torchs_type():
    torch = pytest.importorskip("torch")
    from torch._higher_order_ops.while_loop import while_loop  # noqa: PLC0415

    with pytest.raises(torch._dynamo.exc.UncapturedHigherOrderOpError):
        while_loop(lambda c: c.sum() < 10, lambda c: (c.double() * 2,), (torch.ones(3),))
    with pytest.raises(UncapturedHigherOrderOpError):
        hop.while_loop(lambda c: c.sum() < 10, lambda c: (c.double() * 2,), (eager.ones(3),))


def test_torch_spelled_loops_agree_with_their_python_loops():
    x = eager.randn(5, 3)

    def f(x):
        c, ys = hop.scan(lambda c, xi: (c * 0.5 + xi, (c * xi).sum()), x[0], x, reverse=True)
        (k, d) = hop.while_loop(lambda k, d: k < 4, lambda k, d: (k + 1, d * 1.5), (eager.tensor(0), c))
        return hop.cond(d.sum() > 0, lambda a, b: a + b.sum(), lambda a, b: a - b.sum(), (d, ys))

    expected = f(x).numpy()
    for backend in BACKENDS:
        np.testing.assert_allclose(static.compile(f, backend=backend)(x).numpy(), expected, rtol=1e-5, atol=1e-6)


# -- every control-flow node carries the user's line ----------------------------------------------
def _loops(x):
    lines = {}
    c, ys = static.scan(lambda c, xi: (c + xi, c * xi), x[0], x); lines["scan"] = _line()  # noqa: E702
    z = static.cond(c.sum() > 0, lambda a: a + 1, lambda a: a - 1, c); lines["cond"] = _line()  # noqa: E702
    w = static.fori_loop(0, 3, lambda i, v: v + 1, z); lines["fori"] = _line()  # noqa: E702
    (u,) = hop.while_loop(lambda v: v.abs().sum() < 100.0, lambda v: (v * 2.0 + 1.0,), (w,)); lines["while"] = _line()  # noqa: E702,E501
    (t,) = hop.cond(u.sum() > 0, lambda a: (a * 2,), lambda a: (a * 3,), (u,)); lines["hop.cond"] = _line()  # noqa: E702
    _LINES.update(lines)
    return (w + ys.sum()).sum() + t.sum()


def _reverse_loops(x):
    lines = {}
    c, ys = static.scan(lambda c, xi: (c + xi, c * xi), x[0], x); lines["scan"] = _line()  # noqa: E702
    z = static.cond(c.sum() > 0, lambda a: a + 1, lambda a: a - 1, c); lines["cond"] = _line()  # noqa: E702
    w = static.fori_loop(0, 3, lambda i, v: v + 1, z); lines["fori"] = _line()  # noqa: E702
    c2, _ = hop.scan(lambda c, xi: (c * xi, c), w, x); lines["hop.scan"] = _line()  # noqa: E702
    _LINES.update(lines)
    return (c2 + ys.sum()).sum()


_LINES: dict = {}
_CONTROL = {"scan", "while_loop", "cond"}


@pytest.mark.parametrize("transform", ["plain", "grad", "jvp", "vmap", "vmap_grad"])
def test_every_control_flow_node_names_the_users_line(transform):
    x = eager.randn(4, 3)
    fn, arg = {
        "plain": (_loops, x),
        "grad": (static.grad(_reverse_loops), x),
        "jvp": (lambda x: static.jvp(_loops, (x,), (eager.ones_like(x),)), x),
        "vmap": (static.vmap(_loops), eager.randn(2, 4, 3)),
        "vmap_grad": (static.vmap(static.grad(_reverse_loops)), eager.randn(2, 4, 3)),
    }[transform]
    _LINES.clear()
    lowered = static.compile(fn).lower(arg)
    allowed = set(_LINES.values())
    assert allowed
    for graph in (lowered.trace, lowered.graph):
        graph = getattr(graph, "graph", graph)
        nodes = [n for n in graph.nodes if n.op in _CONTROL]
        assert nodes
        for node in nodes:
            assert node.loc in allowed, (node.op, node.loc, sorted(allowed))
        assert {n.op for n in graph.nodes} & _CONTROL
    for node in (n for n in lowered.graph.nodes):
        assert node.loc is None or not node.loc.startswith(("_registry.py", "loops.py", "choice.py",
                                                            "_higher_order_ops.py", "control_flow.py")), node.loc


def test_user_code_in_a_folder_named_like_a_library_package_is_the_users(tmp_path):
    from static.tracing.state import is_library_file  # noqa: PLC0415

    root = os.path.dirname(os.path.dirname(os.path.abspath(static.__file__)))
    for pkg in ("eager", "static", "codegen", "gmops", "gmbase", "gmnative", "graphmode"):
        assert is_library_file(os.path.join(root, pkg, "x.py"))
        assert is_library_file(os.path.join(root, pkg, "sub", "x.py"))
        assert not is_library_file(str(tmp_path / pkg / "x.py"))  # the user's own folder of that name
    assert not is_library_file(os.path.join(root, "tests", "static", "x.py"))


# -- static.jvp of a post-processed loop runs one loop -------------------------------------------
@pytest.mark.parametrize("kind", ["scan", "while_loop", "cond", "fori_loop"])
def test_jvp_of_a_post_processed_loop_keeps_one_loop(kind):
    """The tangent-carrying loop computes the primal results too: the plain loop is dead code."""
    def f(x):
        if kind == "scan":
            out = static.scan(lambda c, xi: (eager.sin(c) * xi, c * xi), x[0], x)[0]
        elif kind == "while_loop":
            out = static.while_loop(lambda c: c.abs().sum() < 50.0, lambda c: c * 1.5 + 1.0, x)
        elif kind == "fori_loop":
            out = static.fori_loop(0, 4, lambda i, c: eager.tanh(c) + c, x)
        else:
            out = static.cond(x.sum() > 0, lambda a: a.exp(), lambda a: a.sin(), x)
        return out.exp().sum() + (out * out).mean()  # the primal read again after the loop

    def g(x):
        return static.jvp(f, (x,), (eager.ones_like(x),))

    x = eager.rand(4, 3) + 0.5
    lowered = static.compile(g).lower(x)
    op = "while_loop" if kind == "while_loop" else ("cond" if kind == "cond" else "scan")
    assert sum(n.op == op for n in lowered.graph.nodes) == 1, lowered.as_text()
    primal, tangent = static.compile(g)(x)
    e_primal, e_tangent = eager.func.jvp(f, (x,), (eager.ones_like(x),))
    np.testing.assert_allclose(primal.numpy(), e_primal.numpy(), rtol=1e-5)
    np.testing.assert_allclose(tangent.numpy(), e_tangent.numpy(), rtol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_loops_of_no_trip_in_every_backend(backend):
    def f(x):
        a = static.fori_loop(3, 3, lambda i, c: c * 2.0, x)
        b = static.while_loop(lambda c: c.sum() < -1.0, lambda c: c * 2.0, x)
        (c,) = hop.while_loop(lambda c: c.sum() < -1.0, lambda c: (c * 2.0,), (x,))
        return a + b + c

    x = eager.rand(3)
    np.testing.assert_allclose(static.compile(f, backend=backend)(x).numpy(), 3 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(f(x).numpy(), 3 * x.numpy(), rtol=1e-6)


@pytest.mark.parametrize("pred", ["two_elements", "float", "float_tensor"])
def test_torch_cond_predicates_as_torch(pred):
    torch = pytest.importorskip("torch")

    def make(ns):
        return {"two_elements": ns.tensor([True, False]), "float": 1.5, "float_tensor": ns.tensor(1.0)}[pred]

    try:
        theirs = torch.cond(make(torch), lambda a: a + 1, lambda a: a - 1, (torch.ones(3),))
    except RuntimeError as exc:
        with pytest.raises(RuntimeError, match="Expected pred to be bool or single-element tensor") as ours:
            hop.cond(make(eager), lambda a: a + 1, lambda a: a - 1, (eager.ones(3),))
        assert str(exc).split(",")[0] == str(ours.value).split(",")[0]
        return
    ours = hop.cond(make(eager), lambda a: a + 1, lambda a: a - 1, (eager.ones(3),))
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_static_rule_errors_are_one_type(mode):
    from static.control_flow.body import RuleTypeError  # noqa: PLC0415
    from static.control_flow.choice import BranchTypeError  # noqa: PLC0415

    x = eager.randn(4, 3)
    bad = [lambda x: static.scan(lambda c, xi: (c.sum(), c), x[0], x),
           lambda x: static.while_loop(lambda c: c.sum(), lambda c: c, x),
           lambda x: static.cond(True, lambda a: a, lambda a: (a, a), x)]
    for fn in bad:
        with pytest.raises(RuleTypeError, match=rf"^{HERE}:\d+: "):
            (fn if mode == "eager" else static.compile(fn))(x)
    assert issubclass(BranchTypeError, RuleTypeError) and issubclass(RuleTypeError, TypeError)
