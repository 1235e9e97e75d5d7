"""Moved to static.jit.graph_breaks. This name is the same module object, not a copy, so that scripts and
tests that import or patch static.graph_breaks reach the real one; the package imports static.jit.graph_breaks."""
import sys

from .jit import graph_breaks as _moved

sys.modules[__name__] = _moved
