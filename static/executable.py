"""Moved to static.jit.executable. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.executable reach the real one; the package imports static.jit.executable."""
import sys

from .jit import executable as _moved

sys.modules[__name__] = _moved
