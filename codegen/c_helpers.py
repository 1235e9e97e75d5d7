"""Moved to gmnative.c_helpers (the native layer, below eager and codegen). This name is the
same module object, not a copy, so that scripts and tests that import or patch
codegen.c_helpers reach the real one; the package itself imports gmnative.c_helpers."""
import sys

from gmnative import c_helpers as _moved

sys.modules[__name__] = _moved
