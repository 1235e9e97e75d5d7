"""Wrappers that take the wrapped function's own parameters, generated once as source text.

A wrapper written `def w(*args, **kwargs): return fn(*args, **kwargs)` packs a tuple and a
dict and calls through CALL_FUNCTION_EX on every call: about 0.2-0.3 us, a tenth of an eager
op. Where a wrapper sits on a hot path (eager's `out=` on `eager.<fn>`, an op record's layout
rule around its forward) it is generated instead with the function's own parameter list, so
a call passes its arguments straight on. Both users render their body from this one helper.
"""
from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any


def wrapper(fn: Callable[..., Any], name: str, body: str, namespace: dict[str, Any], *, filename: str,
            keyword_only: str = "") -> Callable[..., Any] | None:
    """`def name(<fn's parameters>[, *, keyword_only]):` + `body`, compiled in `namespace`
    (which must hold what the body reads; `_fn` is set to `fn`), or None when `fn`'s
    parameters cannot be spelled again (no signature, a name the text uses itself).

    `body` is indented text that may use `{call}` (the arguments as `fn` takes them),
    `{args}` (a tuple expression of the positional ones), `{kwargs}` (a dict expression of
    the keyword ones) and `{first}` (the first parameter's name). The signature read is
    `fn`'s own (`follow_wrapped=False`: a functools.wraps decorator may take other
    parameters than the function it wraps). `filename` names the code (a name under the
    caller's package keeps the frame the library's for stack walks)."""
    try:
        sig = inspect.signature(fn, follow_wrapped=False)
    except (TypeError, ValueError):
        return None
    namespace["_fn"] = fn
    kinds = inspect.Parameter
    params_list = list(sig.parameters.values())
    last_positional_only = None
    for p in params_list:
        if p.kind is kinds.POSITIONAL_ONLY:
            last_positional_only = p
    params: list[str] = []
    positional: list[str] = []
    keywords: list[str] = []
    star: str | None = None
    var_kw: str | None = None
    for p in params_list:
        if p.name in namespace or p.name == keyword_only or not p.name.isidentifier():
            return None
        default = ""
        if p.default is not kinds.empty:
            key = f"_default_{len(namespace)}"
            namespace[key] = p.default
            default = f"={key}"
        if p.kind is kinds.POSITIONAL_ONLY or p.kind is kinds.POSITIONAL_OR_KEYWORD:
            params.append(p.name + default)
            positional.append(p.name)
            if p is last_positional_only:
                params.append("/")
        elif p.kind is kinds.VAR_POSITIONAL:
            star = p.name
            params.append("*" + p.name)
        elif p.kind is kinds.KEYWORD_ONLY:
            if star is None:
                star = ""
                params.append("*")
            params.append(p.name + default)
            keywords.append(p.name)
        else:  # VAR_KEYWORD: last
            var_kw = p.name
    if keyword_only:
        if star is None:
            params.append("*")
        params.append(f"{keyword_only}=None")
    if var_kw is not None:
        params.append("**" + var_kw)
    call = ", ".join([*positional, *([f"*{star}"] if star else []), *(f"{k}={k}" for k in keywords),
                      *([f"**{var_kw}"] if var_kw else [])])
    args = "(" + "".join(f"{a}, " for a in positional) + ")" + (f" + tuple({star})" if star else "")
    kwargs = "{" + ", ".join(f"{k!r}: {k}" for k in keywords) + "}" + (f" | {var_kw}" if var_kw else "")
    first = params_list[0].name if params_list and params_list[0].kind is not kinds.VAR_POSITIONAL else None
    if first is None and "{first}" in body:
        return None
    source = f"def {name}({', '.join(params)}):\n" + body.format(call=call, args=args, kwargs=kwargs, first=first)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102  (our own text, with fn's checked parameter names)
    made: Callable[..., Any] = namespace[name]
    return made


def code_name(module_file: str, what: str) -> str:
    """A code file name under `module_file`'s directory that is no file
    (`.../eager/_out.py <rendered sin>`)."""
    return os.path.join(os.path.dirname(os.path.abspath(module_file)), f"{os.path.basename(module_file)} <rendered {what}>")
