"""torch.backends.cpu: what the CPU offers the kernels."""
from __future__ import annotations


def get_cpu_capability() -> str:
    """The widest vector extension this CPU has ("AVX512", "AVX2" or "DEFAULT"), as PyTorch
    names it; read from /proc/cpuinfo where there is one."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = f.read()
    except OSError:
        return "DEFAULT"
    if " avx512f" in flags:
        return "AVX512"
    if " avx2" in flags:
        return "AVX2"
    return "DEFAULT"
