"""Moved to static.tracing.pytree. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.pytree reach the real one; the package imports static.tracing.pytree."""
import sys

from .tracing import pytree as _moved

sys.modules[__name__] = _moved
