"""Moved to static.jit.entry. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.entry reach the real one; the package imports static.jit.entry."""
import sys

from .jit import entry as _moved

sys.modules[__name__] = _moved
