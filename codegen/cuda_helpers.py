"""The helpers the CuPy kernels' C expressions call: the target-neutral text of
c_helpers.py (this name stays for the modules that import it)."""
from __future__ import annotations

from gmnative.c_helpers import PREAMBLE

__all__ = ["PREAMBLE"]
