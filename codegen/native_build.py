"""Moved to gmnative.build (the native layer, below eager and codegen). This name is the
same module object, not a copy, so that scripts and tests that import or patch
codegen.native_build reach the real one; the package itself imports gmnative.build."""
import sys

from gmnative import build as _moved

sys.modules[__name__] = _moved
