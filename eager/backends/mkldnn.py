"""torch.backends.mkldnn: oneDNN flags. Recorded only: eager's CPU ops are NumPy and its own
native kernels, never oneDNN."""
from __future__ import annotations

enabled = True
deterministic = False
allow_tf32 = False


def is_available() -> bool:
    """False: no op here calls oneDNN."""
    return False
