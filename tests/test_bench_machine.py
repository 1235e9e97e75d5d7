"""What the benchmarks report about the machine, so ratios are read against its floor: the
host's vector width and the width the native kernels were compiled for."""
from __future__ import annotations

import platform
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import common  # noqa: E402

_BITS = {"AVX-512": 512, "AVX2": 256, "AVX": 256, "SSE2": 128}


def test_the_host_vector_width_is_named_with_its_register_bits():
    name, bits = common.host_vector_isa()
    if platform.machine() in ("x86_64", "AMD64") and name != "unknown":
        assert bits == _BITS[name]
        flags = Path("/proc/cpuinfo").read_text().split()
        assert (name == "AVX-512") == ("avx512f" in flags)
    info = common.machine_info()
    assert info["vector_isa"] == name and info["vector_bits"] == bits


def test_the_kernels_target_no_wider_than_the_host():
    from codegen import native_build  # noqa: PLC0415

    if not native_build.availability()[0]:
        pytest.skip("no C++ compiler")
    target = common.compiler_vector_isa()
    host = common.host_vector_isa()
    if target is None or host[0] == "unknown":
        pytest.skip("the compiler or the OS does not name an x86 vector extension")
    assert target[1] <= host[1]  # -march=native: what this CPU runs, never wider
