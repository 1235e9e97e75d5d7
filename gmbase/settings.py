"""Generator knobs that change the generated source (so they are part of the cache key).
Kept apart from the generators so that a cache hit need not import them."""

# A fused region of at most this many elements runs its ops one by one at the top level:
# the block machinery (slicing, scratch buffers, partial reductions) costs ~1.5 us per
# region, more than one pass over arrays this small saves (W3 at 32x64x64x10 ran 20%
# slower blocked).
INLINE_MAX_ELEMS = 4096

# Independent 0-d calls of one ufunc are batched into one array call from this many on
# (batching.py): packing and unpacking cost ~30 ns an element plus ~0.5 us a batch, a
# call on one NumPy scalar ~100 ns.
MIN_BATCH = 8


def fingerprint(backend: str) -> str:
    return f";inline<={INLINE_MAX_ELEMS};batch>={MIN_BATCH}" if backend == "numpy" else ""
