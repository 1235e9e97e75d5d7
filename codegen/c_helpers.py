"""The C++ helper functions that the ops' C expressions call (the `gm_` names in
lowering.py), in one text that compiles for both targets: the CuPy kernels (CUDA C++,
through NVRTC or nvcc) and the native CPU kernels (the system C++ compiler).

`GM_INLINE` is the only target-dependent spelling: `__device__ __forceinline__` under
CUDA, `static inline` on the host. Bit patterns (inf, nan) go through a union instead of
CUDA's `__longlong_as_double`, which the host lacks. Each helper mirrors its op's NumPy
forward: NaN propagation of maximum/minimum, sigmoid without overflow, softplus with its
threshold, both gelu forms.

HOST_PRELUDE is what a host translation unit puts before PREAMBLE: the C math library,
a float16 type, and (when the C library has one) the vector math declarations that let
the compiler vectorize loops calling exp/tanh/... without fast-math (see
`vector_math_declarations`)."""
from __future__ import annotations

import math

_GELU_K = repr(math.sqrt(2.0 / math.pi))
_INV_SQRT2 = repr(1.0 / math.sqrt(2.0))

# the one macro that differs between the targets (guarded: several preambles may share a file)
GM_INLINE = r"""
#ifndef GM_INLINE
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GM_INLINE __device__ __forceinline__
#else
#define GM_INLINE static inline
#endif
#endif
""".strip("\n")

PREAMBLE = GM_INLINE + "\n" + rf"""
// graphmode helpers (CUDA and host): each mirrors the NumPy forward of its op
GM_INLINE double gm_f64_from_bits(unsigned long long bits) {{
    union {{ unsigned long long u; double d; }} c;
    c.u = bits;
    return c.d;
}}
template <typename T> GM_INLINE T gm_inf() {{ return (T)gm_f64_from_bits(0x7ff0000000000000ULL); }}
template <typename T> GM_INLINE T gm_nan() {{ return (T)gm_f64_from_bits(0x7ff8000000000000ULL); }}
template <typename T> GM_INLINE T gm_lowest() {{ return -gm_inf<T>(); }}
template <typename T> GM_INLINE T gm_highest() {{ return gm_inf<T>(); }}
template <typename T> GM_INLINE T gm_max(T a, T b) {{ return (a > b || a != a) ? a : b; }}
template <typename T> GM_INLINE T gm_min(T a, T b) {{ return (a < b || a != a) ? a : b; }}
template <typename T> GM_INLINE T gm_relu(T x) {{ return (x > (T)0 || x != x) ? x : (T)0; }}
template <typename T> GM_INLINE T gm_abs(T x) {{ return x < (T)0 ? -x : (x == (T)0 ? (T)0 : x); }}
template <typename T> GM_INLINE T gm_sign(T x) {{ return x > (T)0 ? (T)1 : (x < (T)0 ? (T)(-1) : x); }}
template <typename R, typename T> GM_INLINE R gm_cast(T x) {{ return (R)x; }}
template <typename T> GM_INLINE T gm_clamp(T x, T lo, T hi, bool has_lo, bool has_hi) {{
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
}}
template <typename T> GM_INLINE T gm_sigmoid(T x) {{
    T e = exp(-gm_abs(x));
    return x >= (T)0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
}}
template <typename T> GM_INLINE T gm_softplus(T x, T beta, T threshold) {{
    T bx = x * beta;
    T soft = (log1p(exp(-gm_abs(bx))) + gm_max(bx, (T)0)) / beta;
    return bx > threshold ? x : soft;
}}
template <typename T> GM_INLINE T gm_gelu_tanh(T x) {{
    return (T)0.5 * x * ((T)1 + tanh((T){_GELU_K} * (x + (T)0.044715 * x * x * x)));
}}
template <typename T> GM_INLINE T gm_gelu_none(T x) {{
    return (T)0.5 * x * ((T)1 + erf(x * (T){_INV_SQRT2}));
}}
""".strip("\n")

HELPERS = ("gm_inf", "gm_nan", "gm_lowest", "gm_highest", "gm_max", "gm_min", "gm_relu", "gm_abs", "gm_sign",
           "gm_cast", "gm_clamp", "gm_sigmoid", "gm_softplus", "gm_gelu_tanh", "gm_gelu_none")

# C math functions the expressions and helpers call, with a vector variant in glibc's libmvec
# (>= 2.35 for tanh, erf, expm1, log1p)
VECTOR_MATH = ("exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "erf", "pow")


def vector_math_declarations() -> str:
    """Declarations that tell the compiler libmvec has SIMD versions of these functions, so
    that loops calling them vectorize without -ffast-math (glibc declares them itself only
    under __FAST_MATH__). Linked with -lmvec."""
    lines = ['extern "C" {']
    for fn in VECTOR_MATH:
        arity = 2 if fn == "pow" else 1
        for ctype, name in (("double", fn), ("float", fn + "f")):
            params = ", ".join([ctype] * arity)
            lines.append(f'{ctype} {name}({params}) __attribute__((simd("notinbranch")));')
    lines.append("}")
    return "\n".join(lines)


def host_prelude(vector_math: bool) -> str:
    """The top of a host translation unit: C math (with the float overloads C++ needs so
    that `exp(float)` computes in float, as CUDA's does), fixed-width integers, float16."""
    parts = ["#include <math.h>", "#include <stdint.h>", "#include <string.h>",
             "typedef _Float16 float16;  // CuPy's float16: stored in half, computed in float"]
    if vector_math:
        parts.append(vector_math_declarations())
    return "\n".join(parts)


__all__ = ["PREAMBLE", "GM_INLINE", "HELPERS", "VECTOR_MATH", "host_prelude", "vector_math_declarations"]
