"""Moved to static.jit.bridge. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.bridge reach the real one; the package imports static.jit.bridge."""
import sys

from .jit import bridge as _moved

sys.modules[__name__] = _moved
