"""Device helper functions the CuPy kernels' C expressions call (the `gm_` names in
lowering.py). Each mirrors its op's NumPy forward: NaN propagation of maximum/minimum,
sigmoid without overflow, softplus with its threshold, both gelu forms."""
from __future__ import annotations

import math

_GELU_K = repr(math.sqrt(2.0 / math.pi))
_INV_SQRT2 = repr(1.0 / math.sqrt(2.0))

PREAMBLE = rf"""
// graphmode device helpers: each mirrors the NumPy forward of its op
template <typename T> __device__ __forceinline__ T gm_inf() {{ return (T)__longlong_as_double(0x7ff0000000000000ULL); }}
template <typename T> __device__ __forceinline__ T gm_nan() {{ return (T)__longlong_as_double(0x7ff8000000000000ULL); }}
template <typename T> __device__ __forceinline__ T gm_lowest() {{ return -gm_inf<T>(); }}
template <typename T> __device__ __forceinline__ T gm_highest() {{ return gm_inf<T>(); }}
template <typename T> __device__ __forceinline__ T gm_max(T a, T b) {{ return (a > b || a != a) ? a : b; }}
template <typename T> __device__ __forceinline__ T gm_min(T a, T b) {{ return (a < b || a != a) ? a : b; }}
template <typename T> __device__ __forceinline__ T gm_relu(T x) {{ return (x > (T)0 || x != x) ? x : (T)0; }}
template <typename T> __device__ __forceinline__ T gm_abs(T x) {{ return x < (T)0 ? -x : (x == (T)0 ? (T)0 : x); }}
template <typename T> __device__ __forceinline__ T gm_sign(T x) {{ return x > (T)0 ? (T)1 : (x < (T)0 ? (T)(-1) : x); }}
template <typename R, typename T> __device__ __forceinline__ R gm_cast(T x) {{ return (R)x; }}
template <typename T> __device__ __forceinline__ T gm_clamp(T x, T lo, T hi, bool has_lo, bool has_hi) {{
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
}}
template <typename T> __device__ __forceinline__ T gm_sigmoid(T x) {{
    T e = exp(-gm_abs(x));
    return x >= (T)0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
}}
template <typename T> __device__ __forceinline__ T gm_softplus(T x, T beta, T threshold) {{
    T bx = x * beta;
    T soft = (log1p(exp(-gm_abs(bx))) + gm_max(bx, (T)0)) / beta;
    return bx > threshold ? x : soft;
}}
template <typename T> __device__ __forceinline__ T gm_gelu_tanh(T x) {{
    return (T)0.5 * x * ((T)1 + tanh((T){_GELU_K} * (x + (T)0.044715 * x * x * x)));
}}
template <typename T> __device__ __forceinline__ T gm_gelu_none(T x) {{
    return (T)0.5 * x * ((T)1 + erf(x * (T){_INV_SQRT2}));
}}
""".strip("\n")
