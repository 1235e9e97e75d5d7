"""Moved to static.tracing.custom_function. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.custom_function reach the real one; the package imports static.tracing.custom_function."""
import sys

from .tracing import custom_function as _moved

sys.modules[__name__] = _moved
