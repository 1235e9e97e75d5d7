"""Moved to static.jit.compiled. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.compiled reach the real one; the package imports static.jit.compiled."""
import sys

from .jit import compiled as _moved

sys.modules[__name__] = _moved
