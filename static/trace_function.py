"""Moved to static.tracing.function. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.trace_function reach the real one; the package imports static.tracing.function."""
import sys

from .tracing import function as _moved

sys.modules[__name__] = _moved
