"""The C and C++ sources shipped with the native layer (csrc/), read as package data.

Why files and not Python strings: an editor, a compiler's diagnostics and a reviewer see
C++ as C++. The text read here is the text compiled and the text hashed into a shared
object's cache key (gmnative.build.so_key takes the whole translation unit), so editing a
.cpp or .h file rebuilds what uses it; the codegen disk cache's source fingerprint counts
these files too (gmbase.cache.FINGERPRINTED)."""
from __future__ import annotations

import functools
from importlib import resources


@functools.cache
def read_source(name: str) -> str:
    """The text of csrc/<name>, read once per process."""
    return resources.files(__package__).joinpath("csrc").joinpath(name).read_text(encoding="utf-8")


__all__ = ["read_source"]
