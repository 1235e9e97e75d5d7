"""Every public name users reach with help() has a docstring.

The names are found the way a user finds them: `dir(eager.Tensor)` (methods defined in the class,
attached by eager._inplace, or shared with the eager.* functions), the `eager` and
`eager.nn.functional` namespaces, and `__all__` of `eager.autograd` and `static`. A new public
function or method without a docstring fails here, naming it.
"""
from __future__ import annotations

import inspect
import types

import pytest

import eager
import eager.autograd
import eager.nn.functional
import static

# Deliberate exceptions, each with its reason.
TENSOR_EXCEPTIONS = {
    # A __slots__ entry: its descriptor is made by Python and takes no docstring unless __slots__
    # becomes a dict, which changes the class declaration rather than adding documentation.
    "grad_fn",
}


def _has_doc(obj) -> bool:
    doc = getattr(obj, "__doc__", None)
    return isinstance(doc, str) and bool(doc.strip())


def _own_doc(cls: type, name: str) -> bool:
    """The docstring of the attribute itself (a property's or its getter's), not of its type."""
    raw = inspect.getattr_static(cls, name)
    if isinstance(raw, property):
        return _has_doc(raw) or _has_doc(raw.fget)
    if isinstance(raw, (staticmethod, classmethod)):
        return _has_doc(raw.__func__)
    return _has_doc(raw)


def _is_project(obj) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.split(".")[0] in ("gmbase", "gmops", "eager", "static")


def _public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in dir(module) if not n.startswith("_")]
    return sorted(names)


def _missing_in_namespace(module: types.ModuleType) -> list[str]:
    missing = []
    for name in _public_names(module):
        obj = getattr(module, name)
        if isinstance(obj, types.ModuleType):
            continue  # submodules document themselves (module docstrings are not checked here)
        if inspect.isclass(obj) or inspect.isroutine(obj):
            if _is_project(obj) and not _has_doc(obj):
                missing.append(name)
        elif _is_project(type(obj)) and not _has_doc(type(obj)):
            # a value such as eager.float32 or eager.default_generator: help() shows its class
            missing.append(f"{name} (its class {type(obj).__name__})")
    return missing


def test_every_public_tensor_method_and_property_has_a_docstring():
    names = [n for n in dir(eager.Tensor) if not n.startswith("_")]
    assert "backward" in names and "add_" in names and "fill_" in names  # the listing sees attached methods
    missing = [n for n in names if n not in TENSOR_EXCEPTIONS and not _own_doc(eager.Tensor, n)]
    assert not missing, f"eager.Tensor members without a docstring: {missing}"


def test_tensor_exceptions_are_still_needed():
    # an exception that gains a docstring (or disappears) must leave the list
    for name in TENSOR_EXCEPTIONS:
        assert hasattr(eager.Tensor, name), f"{name} is no longer a Tensor member; drop its exception"
        assert not _own_doc(eager.Tensor, name), f"{name} has a docstring now; drop its exception"


@pytest.mark.parametrize("module", [eager, eager.nn.functional, eager.autograd, static],
                         ids=lambda m: m.__name__)
def test_every_public_function_has_a_docstring(module):
    missing = _missing_in_namespace(module)
    assert not missing, f"{module.__name__} names without a docstring: {missing}"


def test_the_check_sees_a_missing_docstring():
    # the namespace check itself: an undocumented project function is reported, a documented one is not
    def undocumented(x):
        return x

    def documented(x):
        """Documented."""
        return x

    fake = types.ModuleType("eager.fake_namespace")
    for fn in (undocumented, documented):
        fn.__module__ = "eager.fake_namespace"
        setattr(fake, fn.__name__, fn)
    assert _missing_in_namespace(fake) == ["undocumented"]


def test_shared_and_generated_methods_carry_their_docstrings():
    # methods shared with eager.* functions, and those made in a loop, get their text where they are made
    # a method generated from a record's surface points at its function and at PyTorch's method
    assert "eager.add" in eager.Tensor.add.__doc__ and "Mirrors torch.Tensor.add" in eager.Tensor.add.__doc__
    assert "Mirrors torch.Tensor.backward" in eager.Tensor.backward.__doc__
    assert eager.Tensor.add_.__doc__ and "In-place" in eager.Tensor.add_.__doc__
    # a generated method names itself, even when made from a lambda
    assert "Mirrors torch.Tensor.masked_fill_." in eager.Tensor.masked_fill_.__doc__
    assert "<lambda>" not in eager.Tensor.masked_fill_.__doc__
