"""Moved to static.jit.check. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.check reach the real one; the package imports static.jit.check."""
import sys

from .jit import check as _moved

sys.modules[__name__] = _moved
