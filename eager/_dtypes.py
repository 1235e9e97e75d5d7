"""Moved to gmbase.dtypes (the base layer, gmbase). This name is the same module object, not a copy,
so scripts, tests and pickles that import or patch the old name reach the real one."""
import sys

from gmbase import dtypes as _moved
from gmbase.dtypes import *  # noqa: F403  (the names, for type checkers; at run time this name is the module)
from gmbase.dtypes import _BY_NP  # noqa: F401  (read by eager's autograd)

sys.modules[__name__] = _moved
