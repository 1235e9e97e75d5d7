"""The jinja2 environment that renders generated modules from codegen/templates/*.j2.

Built once per process (compiling templates is most of a cold generation's fixed cost)."""
from __future__ import annotations

import functools

import jinja2


@functools.lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("codegen", "templates"),
        autoescape=False,  # Python and C source, not HTML
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["py"] = repr  # a Python literal of a string
    return env


def render(name: str, **context) -> str:
    return environment().get_template(name).render(**context)
