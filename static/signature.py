"""Moved to static.jit.signature. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.signature reach the real one; the package imports static.jit.signature."""
import sys

from .jit import signature as _moved

sys.modules[__name__] = _moved
