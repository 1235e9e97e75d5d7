"""Moved to static.jit.trace_cache. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.trace_cache reach the real one; the package imports static.jit.trace_cache."""
import sys

from .jit import trace_cache as _moved

sys.modules[__name__] = _moved
