"""The Python surface generated from the op records (eager._surface): each name a record's
`surface` declares exists once, as the generated function, method or in-place form (a copy
written by hand elsewhere fails here, so it cannot come back), and each has PyTorch's
parameter names and kinds (checked against torch's documented signatures and by calling
torch with our keyword names, where torch is installed)."""
from __future__ import annotations

import ast
import inspect
import re
from functools import partial
from pathlib import Path

import numpy as np
import pytest

import eager
import eager._functional as F
from eager import _surface
from eager._api import TensorAPI, _InPlace
from eager.autograd import gradcheck
from eager.ops import REGISTRY

ROOT = Path(__file__).resolve().parents[2]
GENERATED = _surface.GENERATED_FILE.format("")[:-1]  # the generated code's file names begin so

# where eager's functions and the tensor classes' members are written by hand
FUNCTION_MODULES = ("eager/__init__.py", "eager/_functional", "eager/_compositions")
TENSOR_CLASSES = {"TensorAPI", "TensorHooks", "TensorOperators", "TensorMethods", "TensorConversions",
                  "TensorInPlace", "Tensor", "TensorMetadata", "Tracer"}


def _names() -> tuple[dict[str, object], dict[str, object], dict[str, object]]:
    """(functions, methods, in-place forms) the records declare, name -> op."""
    functions, methods, inplace = {}, {}, {}
    for op in REGISTRY.values():
        if not op.surface:
            continue
        sig = _surface.signature(op)
        for name in sig.names:
            if "function" in sig.kinds:
                functions[name] = op
            if "method" in sig.kinds:
                methods[name] = op
            if "inplace" in sig.kinds:
                inplace[name + "_"] = op
    return functions, methods, inplace


def _hand_written(source: str, path: str, functions, members) -> list[str]:
    """Definitions in `source` of a generated name: module-level functions (and assignments)
    in eager's function modules, members of the tensor classes anywhere."""
    found = []
    tree = ast.parse(source)
    if path.startswith(FUNCTION_MODULES):
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in functions:
                found.append(f"{path}:{node.lineno} def {node.name}")
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name) and n.id in functions:
                            found.append(f"{path}:{node.lineno} {n.id} = ...")
    for cls in ast.walk(tree):
        if not (isinstance(cls, ast.ClassDef) and cls.name in TENSOR_CLASSES):
            continue
        for node in cls.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in members:
                found.append(f"{path}:{node.lineno} {cls.name}.{node.name}")
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id in members:
                        found.append(f"{path}:{node.lineno} {cls.name}.{t.id} = ...")
    return found


def test_no_generated_name_is_also_written_by_hand():
    functions, methods, inplace = _names()
    assert {"sin", "exp", "mul", "pow", "eq", "isnan", "round", "atan2", "arcsin", "reciprocal", "clamp",
            "clamp_min", "clamp_max"} <= set(functions)
    assert {"clamp_min", "clamp_max"} <= set(methods) and {"clamp_min_", "clamp_max_"} <= set(inplace)
    members = {**methods, **inplace}
    found = []
    for pkg in ("eager", "static"):
        for p in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(p.relative_to(ROOT))
            if rel != "eager/_surface.py":
                found += _hand_written(p.read_text(encoding="utf-8"), rel, functions, members)
    assert not found, "written by hand, but generated from the op record's surface: " + ", ".join(found)


def test_the_check_sees_a_hand_written_copy():
    """The scanner itself: a function, a method, an in-place form and an alias written by hand
    are each reported (so the test above can fail)."""
    functions, methods, inplace = _names()
    members = {**methods, **inplace}
    source = ("def sin(input):\n    pass\n\narcsin = sin\n\n"
              "class TensorMethods:\n    exp = None\n\n    def mul_(self, other):\n        pass\n")
    found = _hand_written(source, "eager/_functional/elementwise.py", functions, members)
    assert [f.split(" ", 1)[1] for f in found] == ["def sin", "arcsin = ...", "TensorMethods.exp = ...",
                                                    "TensorMethods.mul_"]
    assert _hand_written("def sin(input):\n    pass\n", "eager/special.py", functions, members) == []


def test_every_generated_name_is_the_generated_object_everywhere():
    from static.tracing.tracer import Tracer

    functions, methods, inplace = _names()
    made = _surface.functions()
    for name in functions:
        fn = getattr(eager, name)
        assert fn is made[name] and getattr(F, name) is fn, name
        assert fn.__code__.co_filename.startswith(GENERATED) and fn.__module__ == "eager", name
    for name in methods:
        for cls in (eager.Tensor, Tracer):
            member = inspect.getattr_static(cls, name)
            assert member.__code__.co_filename.startswith(GENERATED), (cls, name)
    for name, op in inplace.items():
        member = inspect.getattr_static(eager.Tensor, name)
        assert isinstance(member, _InPlace) and member.fn.__code__.co_filename.startswith(GENERATED), name
        assert member.saves_self == (0 in op.save), name
    assert inspect.getattr_static(TensorAPI, "__imul__") is inspect.getattr_static(TensorAPI, "mul_")


def test_bad_surface_entries_raise_naming_the_op():
    op = REGISTRY["exp2"]
    saved = op.surface
    try:
        for bad, match in ((("function", "operator"), "operator"), (("exp2(*, input)",), "operand"),
                           (("exp3(input)",), "exp2"), (("exp2(input, out=None)",), "keyword-only")):
            op.surface = bad
            with pytest.raises(ValueError, match=match):
                _surface.signature(op)
    finally:
        op.surface = saved
    where = REGISTRY["where"]  # three operands: no default parameter names to invent
    saved = where.surface
    try:
        where.surface = ("function",)
        with pytest.raises(ValueError, match="needs its signature"):
            _surface.signature(where)
        where.surface = ("function", "where(condition, input, other)")
        assert _surface.signature(where).operands == ("condition", "input", "other")
    finally:
        where.surface = saved


def test_generated_functions_take_out_and_keywords_and_refuse_unknown_ones():
    x = eager.tensor([0.25, 0.5, 2.0])
    out = eager.empty(3)
    assert eager.sin(input=x, out=out) is out and out.tolist() == eager.sin(x).tolist()
    assert eager.pow(x, exponent=2).tolist() == (x * x).tolist()
    np.testing.assert_allclose(x.round(decimals=1).numpy(), [0.2, 0.5, 2.0])
    with pytest.raises(TypeError, match="unexpected keyword argument 'other'"):
        eager.sin(x, other=x)
    with pytest.raises(TypeError, match="out"):
        eager.isnan(x, out=out)  # PyTorch's isnan takes no out=
    w = eager.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="out=... arguments don't support automatic differentiation"):
        eager.exp(w, out=eager.empty(1))


def test_generated_functions_and_in_place_forms_differentiate():
    rng = np.random.default_rng(0)
    x = eager.tensor(rng.uniform(0.2, 0.8, (3, 4)), dtype=eager.float64, requires_grad=True)
    y = eager.tensor(rng.uniform(0.5, 1.5, (4,)), dtype=eager.float64, requires_grad=True)
    for fn in (eager.sin, eager.log1p, eager.arcsin, eager.tanh, eager.rsqrt, lambda a: a.sigmoid()):
        assert gradcheck(fn, (x,))
    for fn in (eager.mul, eager.atan2, eager.maximum, lambda a, b: eager.pow(a, exponent=b)):
        assert gradcheck(fn, (x, y))
    assert gradcheck(lambda a: (a * 1.0).sin_().exp_(), (x,))


def _torch_params(torch, name: str) -> list[tuple[str, bool]] | None:
    """(name, keyword-only) of each parameter of torch.<name>'s documented signature."""
    doc = getattr(torch, name).__doc__ or ""
    m = re.search(rf"^\s*{name}\((.*?)\)\s*->", doc, re.M)
    if m is None:
        return None
    params, kw = [], False
    for part in m.group(1).split(","):
        part = part.strip()
        if part == "*":
            kw = True
        elif part:
            params.append((re.split(r"[:=]", part)[0].strip(), kw))
    return params


def _ours(fn) -> list[tuple[str, bool]]:
    return [(p.name, p.kind is inspect.Parameter.KEYWORD_ONLY) for p in inspect.signature(fn).parameters.values()]


def _arguments(params, torch_mode, torch):
    """Keyword arguments for the parameters named: the operands as float64 tensors in (0.2, 0.8)
    and (0.5, 1.5), decimals=1."""
    rng = np.random.default_rng(1)
    values = {}
    for i, p in enumerate(params):
        if p == "decimals":
            values[p] = 1
            continue
        a = rng.uniform(0.2, 0.8, (2, 3)) if i == 0 else rng.uniform(0.5, 1.5, (3,))
        values[p] = torch.tensor(a) if torch_mode else eager.tensor(a, dtype=eager.float64)
    return values


def _close(ours, theirs):
    if isinstance(theirs, tuple):  # where(condition) alone: one index tensor per dim
        assert isinstance(ours, tuple) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _close(o, t)
        return
    np.testing.assert_allclose(np.asarray(ours.detach().numpy(), dtype=np.float64),
                               np.asarray(theirs.detach().numpy(), dtype=np.float64), rtol=1e-12, equal_nan=True)


def _same_or_same_error(ours, theirs):
    """Both calls give the same values, or both raise the same exception type (clamp with
    neither bound, called with only its required parameters)."""
    try:
        want = theirs()
    except (RuntimeError, TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            ours()
        return
    _close(ours(), want)


# functions whose docs name their parameters otherwise than PyTorch's parser takes them
# (torch.true_divide's docs: dividend, divisor; it takes input=, other=): the parser wins
PARSER_NAMES = {"true_divide"}


def test_generated_signatures_are_pytorchs():
    torch = pytest.importorskip("torch")
    functions, methods, inplace = _names()
    checked = 0
    for name in functions:
        if not hasattr(torch, name):
            continue
        ours = getattr(eager, name)
        documented = _torch_params(torch, name)
        if documented is not None and name not in PARSER_NAMES:
            assert _ours(ours) == documented, (name, _ours(ours), documented)
            checked += 1
        # torch accepts every parameter by our names, and both compute the same
        names = [p.name for p in inspect.signature(ours).parameters.values()
                 if p.name == "decimals" or p.default is inspect.Parameter.empty]
        _same_or_same_error(partial(ours, **_arguments(names, False, torch)),
                            partial(getattr(torch, name), **_arguments(names, True, torch)))
    assert checked >= 40
    for name in methods:
        if not hasattr(torch.Tensor, name):
            continue
        params = [p.name for p in inspect.signature(getattr(eager.Tensor, name)).parameters.values()
                  if p.name != "self" and (p.name == "decimals" or p.default is inspect.Parameter.empty)]
        first_e, first_t = _arguments(["input"], False, torch)["input"], _arguments(["input"], True, torch)["input"]
        kw_e, kw_t = _arguments(["input", *params], False, torch), _arguments(["input", *params], True, torch)
        del kw_e["input"], kw_t["input"]
        _same_or_same_error(partial(getattr(first_e, name), **kw_e), partial(getattr(first_t, name), **kw_t))
        if name + "_" in inplace and hasattr(torch.Tensor, name + "_"):
            a, b = first_e.clone(), first_t.clone()
            _same_or_same_error(partial(getattr(a, name + "_"), **kw_e), partial(getattr(b, name + "_"), **kw_t))
            _close(a, b)


def test_neg_refuses_bool_in_every_spelling_as_pytorch():
    """neg's bool check lives in its record (forward and abstract rule), so the generated
    function, method, in-place form, alias, operator and a trace all give PyTorch's error."""
    import static

    b = eager.tensor([True, False])
    spellings = (eager.neg, eager.negative, lambda t: t.neg(), lambda t: -t, lambda t: t.clone().neg_(),
                 static.compile(lambda t: -t, backend="interpret"))
    for fn in spellings:
        with pytest.raises(RuntimeError, match="Negation, the `-` operator, on a bool tensor is not supported"):
            fn(b)
    x = eager.tensor([1.0, -2.0])
    assert eager.negative(x).tolist() == (-x).tolist() == x.neg().tolist() == [-1.0, 2.0]
    assert eager.neg(eager.tensor([3, -4])).tolist() == [-3, 4]


def test_nan_to_num_in_place_keeps_what_its_gradient_reads():
    """The generated in-place form saves the old value when the VJP reads it (nan_to_num's
    gradient is zero where the input was not finite): the hand-written one did not, and its
    backward raised PyTorch's modified-by-an-inplace-operation error."""
    torch = pytest.importorskip("torch")
    data = [1.0, float("nan"), float("inf"), -float("inf"), 2.0]
    grads = []
    for lib in (eager, torch):
        x = lib.tensor(data, requires_grad=True)
        y = x * 1.0
        assert y.nan_to_num_(nan=5.0, posinf=9.0) is y
        (y * 3.0).sum().backward()
        grads.append((x.grad.tolist(), y.tolist()))
    assert grads[0] == grads[1]


def test_generated_source_is_readable_and_pickles_by_name():
    import pickle

    assert inspect.getsource(eager.sin).startswith("def sin(input, *, out=None):")
    assert inspect.getsource(eager.Tensor.sin).startswith("def sin(self):")
    assert pickle.loads(pickle.dumps(eager.arcsin)) is eager.arcsin


def test_special_exp2_is_the_exp2_op_as_pytorchs():
    """torch.special.exp2 is exp2 (node Exp2Backward0), not 2 ** x: eager.special binds the
    generated function instead of a second spelling."""
    torch = pytest.importorskip("torch")
    x = np.array([0.3, 1.7, -2.2, 10.5])
    e, t = eager.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    a, b = eager.special.exp2(e), torch.special.exp2(t)
    assert a.grad_fn.name() == b.grad_fn.name() == "Exp2Backward0"
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert eager.special.exp2 is eager.exp2


@pytest.mark.parametrize("name,kwargs", [("divide", {"rounding_mode": "floor"}), ("divide", {}),
                                         ("subtract", {"alpha": 2}), ("multiply", {}), ("absolute", None),
                                         ("greater_equal", {}), ("not_equal", {})])
def test_pytorchs_long_names_as_pytorch(name, kwargs):
    torch = pytest.importorskip("torch")
    a, b = np.array([3.5, -2.0, 0.25]), np.array([2.0, -0.5, 0.25])
    args_e = {"input": eager.tensor(a)} if kwargs is None else {"input": eager.tensor(a), "other": eager.tensor(b)}
    args_t = {"input": torch.tensor(a)} if kwargs is None else {"input": torch.tensor(a), "other": torch.tensor(b)}
    _close(getattr(eager, name)(**args_e, **(kwargs or {})), getattr(torch, name)(**args_t, **(kwargs or {})))
    e, t = eager.tensor(a), torch.tensor(a)
    rest_e = [eager.tensor(b)] if kwargs is not None else []
    rest_t = [torch.tensor(b)] if kwargs is not None else []
    getattr(e, name + "_")(*rest_e, **(kwargs or {}))
    getattr(t, name + "_")(*rest_t, **(kwargs or {}))
    _close(e, t)


@pytest.mark.parametrize("name,other_is_tensor", [("eq", False), ("lt", True), ("ge", False), ("ne", True)])
def test_comparison_in_place_stays_on_the_graph_as_pytorchs(name, other_is_tensor):
    """x.lt_(y) writes the 0/1 result and keeps x on the graph with a zero gradient, named
    <Op>Backward0 for a number and <Op>Backward1 for a tensor, as PyTorch records."""
    torch = pytest.importorskip("torch")
    data = np.array([-1.0, 0.0, 2.0], dtype=np.float32)
    other_data = np.array([0.5, 0.0, 3.0], dtype=np.float32)
    results = []
    for lib in (eager, torch):
        leaf = lib.tensor(data, requires_grad=True)
        other = lib.tensor(other_data, requires_grad=True) if other_is_tensor else 0.0
        x = leaf.clone()
        r = getattr(x, name + "_")(other)
        assert r is x
        (r * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        results.append((type(r.grad_fn).__name__, r.detach().numpy().copy(), leaf.grad.numpy().copy(),
                        None if not other_is_tensor else other.grad.numpy().copy()))
    (ours_name, ours_val, ours_grad, ours_other), (t_name, t_val, t_grad, t_other) = results
    assert ours_name == t_name
    np.testing.assert_array_equal(ours_val, t_val)
    np.testing.assert_array_equal(ours_grad, t_grad)
    if other_is_tensor:
        np.testing.assert_array_equal(ours_other, t_other)
    plain = eager.tensor(data)  # nothing to record: no graph, the values only
    assert plain.clone().lt_(0.0).grad_fn is None


# -- records with an argument mapping (add/sub's alpha, div's rounding_mode) ---------------------
_MAPPED_CASES = [
    ("add", {"alpha": 2}), ("add", {"alpha": 0.5}), ("add", {}), ("sub", {"alpha": -3}), ("subtract", {"alpha": 2}),
    ("rsub", {"alpha": 2}), ("rsub", {}), ("div", {}), ("div", {"rounding_mode": "trunc"}),
    ("div", {"rounding_mode": "floor"}), ("divide", {"rounding_mode": "trunc"}), ("true_divide", {}),
]


@pytest.mark.parametrize("name,kwargs", _MAPPED_CASES)
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize("other_kind", ["tensor", "number"])
def test_mapped_functions_methods_and_in_place_forms_as_pytorch(name, kwargs, dtype, other_kind):
    """The function, the method and the in-place form of each spelling give PyTorch's value and
    dtype, or PyTorch's exception type (a float alpha with integer tensors, an integer in-place
    form of a true division)."""
    torch = pytest.importorskip("torch")
    a = np.array([[7, -7, 5], [-3, 9, 2]]).astype(dtype)
    b = np.array([2, 3, -4]).astype(dtype)
    for form in ("function", "method", "inplace"):
        if form != "function" and not hasattr(torch.Tensor, name):
            continue
        outcomes = []
        for lib in (eager, torch):
            x = lib.tensor(a)
            y = lib.tensor(b) if other_kind == "tensor" else (3 if dtype == "int64" else 2.5)
            try:
                if form == "function":
                    r = getattr(lib, name)(x, y, **kwargs)
                elif form == "method":
                    r = getattr(x, name)(y, **kwargs)
                else:
                    r = getattr(x, name + "_")(y, **kwargs)
                    assert r is x
                outcomes.append((str(r.dtype).split(".")[-1], r.numpy()))
            except (RuntimeError, TypeError) as exc:
                outcomes.append((type(exc).__name__, None))
        (ours_kind, ours), (theirs_kind, theirs) = outcomes
        assert ours_kind == theirs_kind, (form, outcomes)
        if theirs is not None:
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, err_msg=f"{name} {form}")


def test_mapped_functions_take_out_refuse_bad_arguments_and_differentiate():
    x = eager.tensor([1.0, -2.0, 3.5], dtype=eager.float64, requires_grad=True)
    y = eager.tensor([0.5, 4.0, -1.5], dtype=eager.float64, requires_grad=True)
    out = eager.empty(3)
    assert eager.add(x.detach(), y.detach(), alpha=3, out=out) is out
    np.testing.assert_allclose(out.numpy(), [2.5, 10.0, -1.0])
    assert gradcheck(lambda a, b: eager.add(a, b, alpha=-2.5), (x, y))
    assert gradcheck(lambda a, b: eager.sub(a, b, alpha=2), (x, y))
    assert gradcheck(lambda a, b: eager.rsub(a, b, alpha=3), (x, y))
    assert gradcheck(lambda a, b: a.div(b), (x, y))
    assert gradcheck(lambda a, b: eager.true_divide(a, b), (x, y))
    with pytest.raises(RuntimeError, match="rounding_mode"):
        eager.div(x, y, rounding_mode="round")
    with pytest.raises(RuntimeError, match="alpha"):
        eager.add(eager.tensor([1, 2]), eager.tensor([1, 2]), alpha=0.5)
    with pytest.raises(RuntimeError, match="alpha"):
        eager.add(x, y, alpha=True)
    with pytest.raises(RuntimeError, match="bool"):
        eager.sub(eager.tensor([True]), eager.tensor([False]))
    with pytest.raises(TypeError):
        eager.add(x, y, beta=2)  # PyTorch's own parameters only
    with pytest.raises(TypeError):
        eager.true_divide(x, y, rounding_mode="floor")  # true_divide has none, as PyTorch
    z = x.detach().clone()
    z += y.detach()
    z -= 1
    z /= 2
    np.testing.assert_allclose(z.numpy(), ([1.0, -2.0, 3.5] + np.array([0.5, 4.0, -1.5]) - 1) / 2)


def test_mapped_functions_trace_as_eager():
    import static

    def f(a, b):
        return eager.add(a, b, alpha=2) - a.sub(b, alpha=3) + eager.div(a, b, rounding_mode="floor") + a.true_divide(b)

    a, b = eager.tensor([[1.5, -2.0], [3.0, 4.5]]), eager.tensor([0.5, -3.0])
    np.testing.assert_allclose(static.compile(f, backend="interpret")(a, b).numpy(), f(a, b).numpy(), rtol=1e-6)


@pytest.mark.parametrize("bounds", [
    {"min": 0, "max": 1}, {"min": -0.5}, {"max": 2}, {"min": 1.5, "max": 0.5},
    {"min": "tensor"}, {"max": "tensor"}, {"min": "tensor", "max": "tensor"}, {"min": "tensor", "max": 1.0},
    {"min": "scalar_tensor", "max": 3},
])
@pytest.mark.parametrize("spelling", ["clamp", "clip"])
@pytest.mark.parametrize("dtype", ["float64", "int64"])
def test_clamp_number_and_tensor_bounds_as_pytorch(bounds, spelling, dtype):
    """clamp/clip's function, method and in-place form: number bounds (ClampBackward1) and
    tensor bounds (ClampBackward0: broadcast, promoted, max wins where min > max, each bound
    gets the gradient where it wins), values, dtypes, node names and gradients as PyTorch."""
    torch = pytest.importorskip("torch")
    a = np.array([[-2.0, 0.25, 1.0], [3.0, 0.5, -0.75]]).astype(dtype)
    lo, hi = np.array([0.0, 0.5, 2.0]), np.array([1.0, 0.25, 3.0])
    results = []
    for lib in (eager, torch):
        def bound(key, v, lib=lib):
            if v == "tensor":
                return lib.tensor(lo if key == "min" else hi, requires_grad=True)
            return lib.tensor(0.25, dtype=lib.float64) if v == "scalar_tensor" else v
        kw = {k: bound(k, v) for k, v in bounds.items()}
        x = lib.tensor(a, requires_grad=dtype == "float64")
        try:
            r = getattr(lib, spelling)(x, **kw)
        except TypeError:  # a tensor bound beside a number one: refused by both, as no overload takes it
            results.append("TypeError")
            continue
        m = getattr(x.detach(), spelling)(**kw)
        y = x.detach().clone()
        try:
            getattr(y, spelling + "_")(**kw)
            inplace = y.detach().numpy().copy()
        except RuntimeError as exc:  # an int tensor cannot hold a float bound's result
            inplace = type(exc).__name__
        grads = None
        if x.requires_grad:
            r.backward(lib.ones_like(r))
            grads = [x.grad.numpy().copy()] + [v.grad.numpy().copy() for v in kw.values()
                                               if hasattr(v, "grad") and v.requires_grad]
        results.append((str(r.dtype).split(".")[-1], r.detach().numpy(), m.detach().numpy(), inplace,
                        type(r.grad_fn).__name__ if r.grad_fn is not None else None, grads))
    ours, theirs = results
    if theirs == "TypeError":
        assert ours == theirs
        return
    assert ours[0] == theirs[0] and ours[4] == theirs[4], (ours, theirs)
    np.testing.assert_array_equal(ours[1], theirs[1])
    np.testing.assert_array_equal(ours[2], theirs[2])
    if isinstance(theirs[3], str):
        assert ours[3] == theirs[3]
    else:
        np.testing.assert_array_equal(ours[3], theirs[3])
    if theirs[5] is not None:
        for g_ours, g_theirs in zip(ours[5], theirs[5]):
            np.testing.assert_array_equal(g_ours, g_theirs)


def test_clamp_refuses_no_bound_and_traces_and_differentiates():
    x = eager.tensor([[-2.0, 0.3], [0.9, 4.0]], dtype=eager.float64, requires_grad=True)
    lo = eager.tensor([0.1, 0.5], dtype=eager.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        eager.clamp(x)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max'"):
        x.clip()
    hi = eager.tensor([1.5, 0.2], dtype=eager.float64, requires_grad=True)
    assert gradcheck(lambda a, b, c: eager.clamp(a, b, c), (x, lo, hi))
    with pytest.raises(TypeError, match="tensors or both numbers"):
        eager.clamp(x, lo, 1.5)  # no PyTorch overload takes a tensor beside a number
    import static

    f = lambda a, b: eager.clamp(a, min=b) + a.clip(0, 1)  # noqa: E731
    np.testing.assert_allclose(static.compile(f, backend="interpret")(x.detach(), lo.detach()).numpy(),
                               f(x.detach(), lo.detach()).numpy())


def test_where_generated_as_pytorchs():
    """where(condition, input, other) with tensors and numbers, the method (self is input),
    out=, where(condition) alone (nonzero as a tuple), a one-sided call and a float condition
    refused with PyTorch's exception types; the gradient goes to the chosen side."""
    torch = pytest.importorskip("torch")
    c = np.array([[True, False, True], [False, False, True]])
    a = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]])
    for lib in (eager, torch):
        cond, x = lib.tensor(c), lib.tensor(a)
        got = [lib.where(cond, x, 0.5), lib.where(cond, 1, 2), x.where(cond, -x), x.where(cond, other=7.0)]
        got += list(lib.where(cond))
        if lib is eager:
            ours = got
            out = eager.empty(2, 3, dtype=eager.float64)
            assert eager.where(cond, x, -x, out=out) is out
            np.testing.assert_array_equal(out.numpy(), np.where(c, a, -a))
        else:
            theirs = got
        with pytest.raises(TypeError):
            lib.where(cond, x)
        with pytest.raises(RuntimeError):
            lib.where(lib.tensor(a), x, x)
    for o, t in zip(ours, theirs):
        assert str(o.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
        np.testing.assert_array_equal(o.numpy(), t.numpy())
    x = eager.tensor(a, requires_grad=True)
    y = eager.tensor(-a, requires_grad=True)
    assert gradcheck(lambda p, q: eager.where(eager.tensor(c), p, q), (x, y))
    assert gradcheck(lambda p, q: p.where(eager.tensor(c), q), (x, y))


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor"])
@pytest.mark.parametrize("kinds", [("bool", "bool"), ("int64", "int64"), ("int32", "bool"), ("uint8", "int"),
                                   ("bool", "pybool"), ("float32", "float32"), ("int64", "float")])
def test_bitwise_generated_as_pytorchs(name, kinds):
    """bitwise_and/or/xor: function, method, in-place form and operator give PyTorch's values
    and dtypes (bools the logical op, integers bit by bit, promotion with Python numbers), or
    its exception type for floats."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)

    def operand(lib, kind, first):
        if kind == "int":
            return 6
        if kind == "pybool":
            return True
        if kind == "float":
            return 1.5
        data = rng.integers(0, 2, (2, 3)) if kind == "bool" else rng.integers(0, 100, (2, 3) if first else (3,))
        return lib.tensor(data.astype(kind))

    operator = {"bitwise_and": "__and__", "bitwise_or": "__or__", "bitwise_xor": "__xor__"}[name]
    outcomes = []
    state = rng.bit_generator.state
    for lib in (eager, torch):
        rng.bit_generator.state = state
        a, b = operand(lib, kinds[0], True), operand(lib, kinds[1], False)
        got = []
        for call in (lambda lib, a, b: getattr(lib, name)(a, b), lambda lib, a, b: getattr(a, name)(b),
                     lambda lib, a, b: getattr(a, operator)(b), lambda lib, a, b: getattr(a.clone(), name + "_")(b)):
            try:
                r = call(lib, a, b)
                got.append((str(r.dtype).split(".")[-1], r.numpy().tolist()))
            except (RuntimeError, TypeError, NotImplementedError) as exc:
                got.append(type(exc).__name__)
        if isinstance(got[0], str) and isinstance(got[3], str):
            got[3] = "raises"  # (PyTorch checks an in-place form's cast before the op: either error type)
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int64", "float32"])
def test_bitwise_not_generated_as_pytorchs(dtype):
    """bitwise_not (a record of its own now, fused with a C expression): function, method,
    in-place form and `~` as PyTorch's, floats refused with its exception types (NotImplementedError
    for the functions, TypeError for the operator); compiled with the NumPy and native backends."""
    torch = pytest.importorskip("torch")
    data = np.array([[0, 1, 3], [100, 1, 0]]).astype(dtype)
    outcomes = []
    for lib in (eager, torch):
        got = []
        for call in (lambda lib, x: lib.bitwise_not(x), lambda lib, x: x.bitwise_not(), lambda lib, x: ~x,
                     lambda lib, x: x.clone().bitwise_not_()):
            try:
                r = call(lib, lib.tensor(data))
                got.append((str(r.dtype).split(".")[-1], r.numpy().tolist()))
            except (RuntimeError, TypeError, NotImplementedError) as exc:
                got.append(type(exc).__name__)
        outcomes.append(got)
    assert outcomes[0] == outcomes[1]
    if dtype != "float32":
        import static

        x = eager.tensor(data)
        for backend in ("numpy", "native"):
            got = static.compile(lambda t: eager.bitwise_not(t) & (~t | t), backend=backend)(x)
            np.testing.assert_array_equal(got.numpy(), np.invert(data) & (np.invert(data) | data))


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_square_is_pow_2_as_pytorchs(dtype):
    """square is a form of pow's record (pow(input, 2)), as PyTorch's: PowBackward0, a bool
    tensor squares to int64; function, method, in-place form and out=."""
    torch = pytest.importorskip("torch")
    data = np.array([[1, -2, 3], [0, 5, -1]]).astype(dtype)
    got = []
    for lib in (eager, torch):
        x = lib.tensor(data)
        r = [lib.square(x), x.square()]
        try:
            y = x.clone()
            y.square_()
            r.append(y)
        except RuntimeError:  # bool squares to int64: no in-place form, as PyTorch's
            r.append(None)
        got.append([None if t is None else (str(t.dtype).split(".")[-1], t.numpy().tolist()) for t in r])
    assert got[0] == got[1]
    x = eager.tensor([1.5, -2.0], dtype=eager.float64, requires_grad=True)
    assert type(eager.square(x).grad_fn).__name__ == "PowBackward0"
    assert gradcheck(eager.square, (x,))
    out = eager.empty(2)
    assert eager.square(x.detach(), out=out) is out


def test_softplus_and_gelu_generated_with_their_attributes():
    """softplus(input, beta, threshold) and gelu(input, approximate) are the records' attributes
    by keyword (nn.functional's signatures), values and gradients as PyTorch's."""
    torch = pytest.importorskip("torch")
    data = np.array([-30.0, -1.0, 0.5, 4.0, 30.0])
    for ours, theirs in ((lambda t: eager.softplus(t, beta=2, threshold=5), lambda t: torch.nn.functional.softplus(
            t, beta=2, threshold=5)), (lambda t: t.softplus(), torch.nn.functional.softplus),
                         (lambda t: eager.gelu(t, approximate="tanh"),
                          lambda t: torch.nn.functional.gelu(t, approximate="tanh")),
                         (eager.gelu, torch.nn.functional.gelu)):
        np.testing.assert_allclose(ours(eager.tensor(data)).numpy(), theirs(torch.tensor(data)).numpy(), rtol=1e-12)
    assert [p.name for p in inspect.signature(eager.softplus).parameters.values()] == ["input", "beta", "threshold"]
    x = eager.tensor([-1.0, 0.3, 2.0], dtype=eager.float64, requires_grad=True)
    assert gradcheck(lambda t: eager.softplus(t, beta=1.5, threshold=2.0), (x,))
    assert gradcheck(lambda t: eager.gelu(t, approximate="tanh"), (x,))


# -- clamp_min / clamp_max: records of their own (ClampMinBackward0/1, ClampMaxBackward0/1) --------
_CLAMP_ONE_CASES = [
    # (input, bound): a number, a 0-d tensor, a broadcast tensor; NaN and ties on both sides
    (lambda L: L.tensor([1.0, 2.0, 3.0, float("nan"), 2.0]), lambda L: 2.0),
    (lambda L: L.tensor([1.0, 2.0, 3.0, float("nan"), 2.0]), lambda L: float("nan")),
    (lambda L: L.tensor([1.0, 2.0, 3.0, float("nan"), 2.0]), lambda L: L.tensor([2.0, float("nan"), 2.0, 2.0, 2.0])),
    (lambda L: L.tensor([[1.0, -2.0], [0.5, 3.0]]), lambda L: L.tensor(0.5)),
    (lambda L: L.tensor([[1.0, -2.0], [0.5, 3.0]]), lambda L: L.tensor([0.5, 1.0])),
    (lambda L: L.tensor([[1.0], [-2.0]]), lambda L: L.tensor([0.5, 1.0, -3.0])),
]


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
@pytest.mark.parametrize("case", range(len(_CLAMP_ONE_CASES)))
def test_clamp_min_max_values_gradients_and_node_names_as_pytorch(name, case):
    """Value (NaN propagates from either side), grad_fn name (Backward0 for a number bound,
    Backward1 for a tensor, a 0-d one included) and both gradients: input keeps it at a tie,
    the bound takes it where it wins, a NaN gives neither, as PyTorch."""
    torch = pytest.importorskip("torch")
    make_x, make_b = _CLAMP_ONE_CASES[case]
    results = []
    for lib in (eager, torch):
        x = make_x(lib).requires_grad_()
        b = make_b(lib)
        if hasattr(b, "requires_grad_"):
            b.requires_grad_()
        for form in ("function", "method"):
            y = getattr(lib, name)(x, b) if form == "function" else getattr(x, name)(b)
            seed = lib.arange(1.0, 1.0 + y.numel()).reshape(y.shape)
            grads = lib.autograd.grad((y * seed).sum(), [x, b] if hasattr(b, "shape") else [x])
            results.append((form, type(y.grad_fn).__name__, y.detach().numpy().copy(),
                            [g.numpy().copy() for g in grads]))
    half = len(results) // 2
    for ours, theirs in zip(results[:half], results[half:]):
        assert ours[:2] == theirs[:2], (ours, theirs)
        np.testing.assert_array_equal(ours[2], theirs[2])
        for a, b in zip(ours[3], theirs[3]):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_clamp_min_max_dtypes_in_place_out_and_errors_as_pytorch(name):
    """PyTorch's promotion (a number bound is a Python scalar: int tensor by 2.5 is float32; a
    0-d float64 bound of an int tensor gives float64), the in-place form and out=, and its
    refusals (no bound, a string, a bool tensor by a number, a bound beyond float16)."""
    torch = pytest.importorskip("torch")
    calls = [
        lambda L: getattr(L, name)(L.arange(5), 2.5),
        lambda L: getattr(L, name)(L.arange(5), 2),
        lambda L: getattr(L, name)(L.arange(5), True),
        lambda L: getattr(L, name)(L.arange(5), L.tensor(2.5, dtype=L.float64)),
        lambda L: getattr(L, name)(L.arange(5.0), L.tensor(2, dtype=L.int64)),
        lambda L: getattr(L, name)(L.arange(5.0, dtype=L.float16), L.tensor([2.0], dtype=L.float64)),
        lambda L: getattr(L, name)(L.tensor([True, False]), L.tensor([True, True])),
        lambda L: getattr(L.arange(5.0), name + "_")(L.tensor([2.5], dtype=L.float64)),
        lambda L: getattr(L.arange(5.0), name + "_")(1),
        lambda L: getattr(L, name)(L.arange(5.0), 2.0, out=L.empty(5)),
        lambda L: getattr(L, name)(L.arange(5.0), **{name[-3:]: 1}),
        lambda L: getattr(L.arange(5.0), name)(**{name[-3:]: 1}),
        # refused
        lambda L: getattr(L, name)(L.arange(3.0), None),
        lambda L: getattr(L, name)(L.arange(3.0), "a"),
        lambda L: getattr(L, name)(2.0, L.tensor([1.0])),
        lambda L: getattr(L, name)(L.tensor([True, False]), True),
        lambda L: getattr(L, name)(L.ones(3, dtype=L.float16), 1e10),
        lambda L: getattr(L, name)(L.zeros(3), L.zeros(4)),
        lambda L: getattr(L.arange(3), name + "_")(2.5),
        lambda L: getattr(L.zeros(3), name + "_")(L.zeros(2, 3)),
    ]
    for i, call in enumerate(calls):
        outcomes = []
        for lib in (eager, torch):
            try:
                r = call(lib)
                outcomes.append((str(r.dtype).split(".")[-1], r.tolist()))
            except (RuntimeError, TypeError, NotImplementedError) as exc:
                outcomes.append((type(exc).__name__, None))
        assert outcomes[0] == outcomes[1], (i, outcomes)
    with pytest.raises(TypeError, match=name):
        getattr(eager, name)(eager.arange(3.0), "a")


def test_clamp_min_max_gradcheck():
    rng = np.random.default_rng(3)
    x = eager.tensor(rng.standard_normal((3, 4)), dtype=eager.float64, requires_grad=True)
    b = eager.tensor(rng.standard_normal((4,)), dtype=eager.float64, requires_grad=True)
    for fn in (eager.clamp_min, eager.clamp_max, lambda a, c: a.clamp_max(c), lambda a, c: (a * 1.0).clamp_min_(c)):
        assert gradcheck(fn, (x, b))
        assert gradcheck(lambda a, fn=fn: fn(a, 0.1), (x,))


@pytest.mark.parametrize("backend", ["numpy", "native"])
def test_clamp_min_max_compiled_equal_eager(backend):
    """Traced and compiled (static NumPy and native C++), the values and both gradients are
    eager's, bit for bit, NaN included."""
    import static

    if backend == "native":
        from gmnative import build

        if not build.availability()[0]:
            pytest.skip("no C++ compiler")
    rng = np.random.default_rng(4)
    xd = rng.standard_normal((3, 4)).astype(np.float32)
    xd[0, 0], xd[1, 1] = np.nan, 0.1
    bd = rng.standard_normal((4,)).astype(np.float32)
    bd[2] = np.nan
    xi = eager.tensor(rng.integers(-5, 5, (3, 4)))

    def f(x, b, xi):
        y = eager.clamp_min(x, 0.1) * 2.0 + x.clamp_max(b) + eager.clamp_min(xi, 2.5) + eager.clamp_max(xi, 1)
        y = y + eager.clamp(x, b - 1.0, b * 0.5)  # (both tensor bounds: one clamp_tensor node)
        return (y * y).sum(), y

    runs = []
    for fn in (f, static.compile(f, backend=backend)):
        x = eager.tensor(xd, requires_grad=True)
        b = eager.tensor(bd, requires_grad=True)
        loss, y = fn(x, b, xi)
        loss.backward()
        runs.append([y.detach().numpy(), x.grad.numpy(), b.grad.numpy()])
    for ours, theirs in zip(*runs):
        np.testing.assert_array_equal(ours, theirs)


def test_clamp_with_tensor_bounds_as_pytorch():
    """clamp(input, min, max) with tensor bounds is one node (ClampBackward0) with PyTorch's
    gradients: ties keep input's, min > max gives max the gradient whatever input is (NaN
    included), min == max gives min none; one tensor bound alone as PyTorch too."""
    torch = pytest.importorskip("torch")
    nan = float("nan")
    x = [1.0, nan, 3.0, 2.0, 0.5, 5.0, 2.0, 1.0, 3.0]
    lo = [2.0, 2.0, nan, 2.0, 1.0, 4.0, 2.0, 2.0, 1.0]
    hi = [4.0, -1.0, 4.0, 1.0, 0.7, 3.0, 2.0, 2.0, 3.0]
    results = []
    for lib in (eager, torch):
        ts = [lib.tensor(v, requires_grad=True) for v in (x, lo, hi)]
        seed = lib.arange(1.0, 10.0)
        for call in (lambda a, b, c: a.clamp(b, c), lambda a, b, c: a.clip(min=b, max=c),
                     lambda a, b, c: a.clamp(min=b), lambda a, b, c: a.clamp(max=c),
                     lambda a, b, c: a.reshape(9, 1).clamp(b, c)):
            y = call(*ts)
            grads = lib.autograd.grad(y, ts, seed.expand(*y.shape), allow_unused=True)
            results.append((type(y.grad_fn).__name__, y.detach().numpy().copy(),
                            [None if g is None else g.numpy().copy() for g in grads]))
    half = len(results) // 2
    for ours, theirs in zip(results[:half], results[half:]):
        assert ours[0] == theirs[0]
        np.testing.assert_array_equal(ours[1], theirs[1])
        for a, b in zip(ours[2], theirs[2]):
            assert (a is None) == (b is None)
            if b is not None:
                np.testing.assert_array_equal(a, b)
    rng = np.random.default_rng(5)
    args = [eager.tensor(rng.standard_normal(s), dtype=eager.float64, requires_grad=True) for s in ((3, 4), (4,), (3, 1))]
    assert gradcheck(lambda a, b, c: eager.clamp(a, b, c), args)
