"""`Module`: the base of every layer and model.

Assigning a Parameter, a Module or (through register_buffer) a Tensor as an attribute
registers it, so `parameters()`, `state_dict()`, `to()` and `zero_grad()` find it without
the user listing anything: the bookkeeping PyTorch users expect."""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from .._grad_mode import no_grad
from .._tensor import Tensor
from ._module_more import _ModuleMore
from .parameter import Parameter


class IncompatibleKeys(NamedTuple):
    """What `load_state_dict` returns: the keys it did not find and the ones it did not use."""

    missing_keys: list
    unexpected_keys: list

    def __repr__(self) -> str:
        # PyTorch's _IncompatibleKeys prints this when nothing is missing or unexpected;
        # tutorials print load_state_dict's result.
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys!r}, unexpected_keys={self.unexpected_keys!r})"

    def __str__(self) -> str:
        return self.__repr__()


_STRUCTURE = [0]  # bumped by every change of any module's attributes, registries or training mode


def structure_version() -> int:
    """A number that changes whenever any module's attributes, parameters, buffers,
    submodules or training mode may have changed: a compiled module re-reads its structure
    only then, so that an unchanged model costs no walk of its module tree per call."""
    return _STRUCTURE[0]


class _Registry(OrderedDict):
    """A module's parameters, buffers or submodules: every change bumps the structure version
    (containers and functional calls write into these dicts directly)."""

    def __setitem__(self, key, value) -> None:
        _STRUCTURE[0] += 1
        super().__setitem__(key, value)

    def __delitem__(self, key) -> None:
        _STRUCTURE[0] += 1
        super().__delitem__(key)

    def pop(self, *args):
        _STRUCTURE[0] += 1
        return super().pop(*args)

    def popitem(self, last: bool = True):
        _STRUCTURE[0] += 1
        return super().popitem(last)

    def clear(self) -> None:
        _STRUCTURE[0] += 1
        super().clear()

    def update(self, *args, **kwargs) -> None:
        _STRUCTURE[0] += 1
        super().update(*args, **kwargs)

    def setdefault(self, key, default=None):
        _STRUCTURE[0] += 1
        return super().setdefault(key, default)

    def move_to_end(self, key, last: bool = True) -> None:
        _STRUCTURE[0] += 1
        super().move_to_end(key, last)


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module(_ModuleMore):
    """Base class of layers: subclass it, set parameters and submodules in `__init__`,
    compute in `forward`; call the module itself (`model(x)`) to run forward."""

    training: bool

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", _Registry())
        object.__setattr__(self, "_buffers", _Registry())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", _Registry())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_backward_hooks", OrderedDict())

    # -- forward ------------------------------------------------------------------------------
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        d = self.__dict__
        compiled = d.get("_compiled_call_impl")  # Module.compile(): calls run compiled
        if compiled is not None and not d.get("_in_compiled_call"):
            d["_in_compiled_call"] = True  # the compiler's own call of the module runs it as written
            try:
                return compiled(*args, **kwargs)
            finally:
                d["_in_compiled_call"] = False
        pre_hooks = d.get("_forward_pre_hooks")
        for hook, with_kwargs in list(pre_hooks.values()) if pre_hooks else ():
            replaced = hook(self, args, kwargs) if with_kwargs else hook(self, args)
            if replaced is not None:
                if with_kwargs:
                    args, kwargs = replaced
                else:
                    args = replaced if isinstance(replaced, tuple) else (replaced,)
        if d.get("_backward_hooks"):
            from ._hooks import call_with_backward_hooks  # noqa: PLC0415

            result = call_with_backward_hooks(self, args, kwargs)
        else:
            result = self.forward(*args, **kwargs)
        hooks = d.get("_forward_hooks")
        for hook in list(hooks.values()) if hooks else ():
            replaced = hook(self, args, result)
            if replaced is not None:
                result = replaced
        return result

    def compile(self, *args: Any, **kwargs: Any) -> None:
        """Compile this module in place with eager.compile's arguments, as
        torch.nn.Module.compile: later calls run compiled, while the module keeps its
        identity and its state_dict keys (no `_orig_mod.` prefix, unlike eager.compile(module))."""
        from .._compile import compile as compile_module  # noqa: PLC0415  (eager.compile loads static lazily)

        wrapped = compile_module(self, *args, **kwargs)
        self.__dict__["_compiled_call_impl"] = wrapped.__dict__.get("_compiled", wrapped)
        self.__dict__["_in_compiled_call"] = False

    def __getstate__(self) -> dict:
        """What copy.deepcopy and pickle keep: everything but Module.compile()'s compiled call,
        which belongs to this module (a copy runs uncompiled, as PyTorch's)."""
        state = dict(self.__dict__)
        state.pop("_compiled_call_impl", None)
        state.pop("_in_compiled_call", None)
        return state

    def register_forward_hook(self, hook: Callable) -> "_HookHandle":
        """`hook(module, inputs, output)` runs after forward; a non-None return replaces the output."""
        return _HookHandle.add(self._forward_hooks, hook)

    def register_forward_pre_hook(self, hook: Callable, *, with_kwargs: bool = False) -> "_HookHandle":
        """`hook(module, args)` runs before forward; a non-None return replaces the positional
        arguments (a single value is one argument). With with_kwargs, `hook(module, args,
        kwargs)` may return a new (args, kwargs) pair."""
        return _HookHandle.add(self._forward_pre_hooks, (hook, with_kwargs))

    def register_full_backward_hook(self, hook: Callable) -> "_HookHandle":
        """`hook(module, grad_input, grad_output)` runs when the gradients of the module's tensor
        inputs are computed (tuples, None where an input needs none); a non-None return
        replaces grad_input. See eager/nn/_hooks.py for how."""
        return _HookHandle.add(self._backward_hooks, hook)

    # -- registration -------------------------------------------------------------------------
    def __setattr__(self, name: str, value: Any) -> None:
        _STRUCTURE[0] += 1
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, "_parameters")
            params[name] = value
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as parameter '{name}' "
                                "(eager.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            modules = self.__dict__.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, "_modules")
            modules[name] = value
        elif name in self.__dict__.get("_modules", {}):
            if value is not None:
                raise TypeError(f"cannot assign '{type(value).__name__}' as child module '{name}' "
                                "(eager.nn.Module or None expected)")
            self._modules[name] = None
        elif isinstance(value, Tensor) and getattr(value, "_is_buffer", False):  # nn.Buffer(t, persistent=...)
            self.register_buffer(name, value, getattr(value, "persistent", True))
        elif name in self.__dict__.get("_buffers", {}):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(eager.Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep: str | None = None) -> None:
        """Drop `name` from every registry but `keep` (the one about to hold it: a replaced
        entry keeps its place, as PyTorch's, so state_dict order stays) and the instance dict."""
        self.__dict__.pop(name, None)
        for key in ("_parameters", "_buffers", "_modules"):
            if key != keep:
                self.__dict__[key].pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name: str) -> Any:
        # only reached when ordinary lookup fails: look in the registries
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            registry = d.get(key)
            if registry is not None and name in registry:
                return registry[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        _STRUCTURE[0] += 1
        for key in ("_parameters", "_buffers", "_modules"):
            registry = self.__dict__.get(key)
            if registry is not None and name in registry:
                del registry[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        extra = [*self._parameters, *self._buffers, *self._modules]
        return sorted(set(super().__dir__()) | set(extra))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self._require_init("_parameters", "parameter")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' object to parameter '{name}' "
                            "(eager.nn.Parameter or None required)")
        self._claim(name, "_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """A tensor that belongs to the module's state (moved by `to`, saved by `state_dict`
        unless persistent=False) but is not trained."""
        self._require_init("_buffers", "buffer")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            "(eager.Tensor or None required)")
        self._claim(name, "_buffers")
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: "Module | None") -> None:
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        self._claim(name, "_modules")
        self._modules[name] = module

    register_module = add_module

    def _require_init(self, registry: str, what: str) -> None:
        """Registering before Module.__init__ made the registries is refused, as PyTorch."""
        if registry not in self.__dict__:
            raise AttributeError(f"cannot assign {what} before Module.__init__() call")

    def _claim(self, name: str, keep: str) -> None:
        """Check a name about to be registered (PyTorch's errors) and drop it from the other
        registries and the instance dict: one name, one entry."""
        if not isinstance(name, str):
            raise TypeError(f"name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f'name can\'t be empty or contain ".", got: {name!r}')
        if name not in self.__dict__[keep] and hasattr(self, name):  # (replacing it dropped, say, a parameter)
            raise KeyError(f"attribute '{name}' already exists")
        self._forget(name, keep)

    # -- traversal ----------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, "Module"]]:
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator["Module"]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, "Module"]]:
        seen: set = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator["Module"]:
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """(dotted name, value) of the non-None entries of one registry (parameters or buffers;
        the registries are untyped dicts) of this module and, with `recurse`, its submodules."""
        seen: set = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Parameter]]:
        """(dotted name, parameter) pairs, each shared parameter once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """named_parameters' parameters, in its order, each shared one once.

        Without the names where no subclass redefines how modules or parameters are listed:
        a training step asks for them every step (clip_grad_norm_(model.parameters())), and
        the dotted names were half the cost of the walk."""
        cls = type(self)
        if cls.named_parameters is not Module.named_parameters or cls.named_modules is not Module.named_modules:
            for _, p in self.named_parameters(recurse=recurse):
                yield p
            return
        seen: set = set()
        stack = [self]
        visited: set = set()
        while stack:  # named_modules' pre-order walk, each module once
            module = stack.pop()
            if id(module) in visited:
                continue
            visited.add(id(module))
            for p in module._parameters.values():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield p
            if recurse:
                children = [m for m in module._modules.values() if m is not None]
                children.reverse()
                stack.extend(children)

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Tensor]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> "Module":
        module = self
        for part in target.split(".") if target else []:
            if part not in module._modules or module._modules[part] is None:
                raise AttributeError(f"{type(module).__name__} has no attribute `{part}`")
            module = module._modules[part]
        return module

    def apply(self, fn: Callable[["Module"], None]) -> "Module":
        """Call fn on every submodule (children first) and then on self; used for custom init."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients --------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        _STRUCTURE[0] += 1
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> "Module":
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of every parameter (PyTorch's default: set them to None)."""
        for p in self.parameters():
            _clear_grad(p, set_to_none)

    # -- state --------------------------------------------------------------------------------
    def state_dict(self, destination: dict[str, Tensor] | None = None, prefix: str = "",
                   keep_vars: bool = False) -> dict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, detached unless keep_vars, in an
        OrderedDict as PyTorch's (or written into `destination`)."""
        out: dict[str, Tensor] = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict: dict, strict: bool = True) -> IncompatibleKeys:
        """Copy values into the existing parameters and buffers (in place, shapes must agree)."""
        own = self.state_dict(keep_vars=True)
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        errors = []
        if strict:
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                from .._factories import tensor  # noqa: PLC0415

                value = tensor(value, dtype=target.dtype)
            if tuple(value.shape) != tuple(target.shape):
                errors.append(f"size mismatch for {key}: copying a param with shape {value.shape} from "
                              f"checkpoint, the shape in current model is {target.shape}.")  # (Size: PyTorch's text)
                continue
            with no_grad():
                target.copy_(value)
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return IncompatibleKeys(missing, unexpected)

    # -- devices and dtypes ----------------------------------------------------------------------
    def _apply(self, fn: Callable[[Tensor], Tensor]) -> "Module":
        """Replace every parameter's data (and gradient) and every buffer by fn of it, keeping
        the Parameter objects, so optimizers built earlier still hold the right tensors."""
        for module in self.modules():
            for p in module._parameters.values():
                if p is None:
                    continue
                with no_grad():
                    p.data = fn(p.detach())
                    if p.grad is not None:
                        p.grad = fn(p.grad.detach())
            for name, b in list(module._buffers.items()):
                if b is not None:
                    module._buffers[name] = fn(b)
        return self

    def to(self, *args: Any, **kwargs: Any) -> "Module":
        """`to(device)`, `to(dtype)`, `to(device, dtype)`: floating tensors change dtype only."""

        def convert(t: Tensor) -> Tensor:
            if t.is_floating_point():
                return t.to(*args, **kwargs)
            dev_args = [a for a in args if not _is_dtype(a)]
            dev_kwargs = {k: v for k, v in kwargs.items() if k != "dtype"}
            return t.to(*dev_args, **dev_kwargs) if (dev_args or dev_kwargs) else t

        return self._apply(convert)

    def cpu(self) -> "Module":
        return self._apply(lambda t: t.cpu())

    def cuda(self, device: Any = None) -> "Module":
        return self._apply(lambda t: t.cuda(device))

    def float(self) -> "Module":
        return self._apply(lambda t: t.float() if t.is_floating_point() else t)

    def double(self) -> "Module":
        return self._apply(lambda t: t.double() if t.is_floating_point() else t)

    def half(self) -> "Module":
        return self._apply(lambda t: t.half() if t.is_floating_point() else t)

    # -- printing -----------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr line; layers override it."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines.extend(extra.split("\n"))
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        main = self._get_name() + "("
        if lines:
            if len(lines) == 1 and not self._modules:
                main += lines[0]
            else:
                main += "\n  " + "\n  ".join(lines) + "\n"
        return main + ")"


class _ClearHook:
    """Told of each gradient a zero_grad (a module's or an optimizer's) is about to clear:
    static sets it, so that a traced step knows a .grad it set to None no longer depends on
    what the call found."""

    fn: Callable[[Tensor, bool], None] | None = None


CLEAR_HOOK = _ClearHook()


def _clear_grad(p: Tensor, set_to_none: bool) -> None:
    """PyTorch's zero_grad for one tensor: drop the gradient, or zero it in place."""
    if CLEAR_HOOK.fn is not None:
        CLEAR_HOOK.fn(p, set_to_none)
    grad = p.grad
    if grad is None:
        return
    if set_to_none:
        p.grad = None
        return
    if grad.grad_fn is not None:
        grad = grad.detach()
        p.grad = grad
    else:
        grad.requires_grad_(False)
    with no_grad():
        grad.zero_()


def _is_dtype(value: Any) -> bool:
    from gmbase.dtypes import dtype  # noqa: PLC0415

    return isinstance(value, dtype)


class _HookHandle:
    """Returned by the register_*_hook methods; `.remove()` takes the hook out."""

    def __init__(self, hooks: dict, key: object) -> None:
        self._hooks, self._key = hooks, key

    @classmethod
    def add(cls, hooks: dict, entry: Any) -> "_HookHandle":
        key = object()
        hooks[key] = entry
        _STRUCTURE[0] += 1  # a compiled function that calls the module guards its hooks
        return cls(hooks, key)

    def remove(self) -> None:
        _STRUCTURE[0] += 1
        self._hooks.pop(self._key, None)
