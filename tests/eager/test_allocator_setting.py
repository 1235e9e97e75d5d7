"""`import eager` keeps glibc's large freed blocks for reuse (gmbase.allocator), once per
process, and GRAPHMODE_MALLOC=default leaves the allocator's defaults."""
from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest

SCRIPT = "import eager\nfrom gmbase import allocator\nprint(allocator.keep_freed_blocks())\n"


def _run(**env: str) -> str:
    environ = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=environ, timeout=120,
                         check=True)
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the setting is glibc's mallopt")
def test_import_keeps_freed_blocks_unless_asked_not_to():
    assert _run(GRAPHMODE_MALLOC="").startswith("kept (glibc: mmap_threshold=32 MiB")
    assert _run(GRAPHMODE_MALLOC="default") == "default"
