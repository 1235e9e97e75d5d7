"""Generator knobs that change the generated source (so they are part of the cache key).
Kept apart from the generators so that a cache hit need not import them."""

# A fused region of at most this many elements runs its ops one by one at the top level:
# the block machinery (slicing, scratch buffers, partial reductions) costs ~1.5 us per
# region, more than one pass over arrays this small saves (W3 at 32x64x64x10 ran 20%
# slower blocked).
INLINE_MAX_ELEMS = 4096


def fingerprint(backend: str) -> str:
    return f";inline<={INLINE_MAX_ELEMS}" if backend == "numpy" else ""
