"""The C++ helper functions that the ops' C expressions call (the `gm_` names in
lowering.py), in one text that compiles for both targets: the CuPy kernels (CUDA C++,
through NVRTC or nvcc) and the native CPU kernels (the system C++ compiler).

`GM_INLINE` is the only target-dependent spelling: `__device__ __forceinline__` under
CUDA, `static inline` on the host. Bit patterns (inf, nan) go through a union instead of
CUDA's `__longlong_as_double`, which the host lacks. Each helper mirrors its op's NumPy
forward: NaN propagation of maximum/minimum, sigmoid without overflow, softplus with its
threshold, both gelu forms.

`host_prelude` is what a host translation unit puts before PREAMBLE: a float16 type and the
C math functions with the float overloads CUDA has, declared with their vector variants
(when the C library has them) so that loops calling exp/tanh/... vectorize without
fast-math (see MATH for which, and why)."""
from __future__ import annotations

import math

_GELU_K = repr(math.sqrt(2.0 / math.pi))
_INV_SQRT2 = repr(1.0 / math.sqrt(2.0))
_INV_SQRT_2PI = repr(1.0 / math.sqrt(2.0 * math.pi))

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
// where: both operands are evaluated (loaded) before the choice, so a loop with a select
// stays one vector blend instead of a branch around a load that keeps it scalar
template <typename A, typename B> GM_INLINE A gm_select(bool c, A a, B b) {{ return c ? a : (A)b; }}
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
template <typename T> GM_INLINE T gm_gelu_grad(T x) {{  // Phi(x) + x phi(x)
    return (T)0.5 * ((T)1 + erf(x * (T){_INV_SQRT2})) + x * exp((T)-0.5 * x * x) * (T){_INV_SQRT_2PI};
}}
""".strip("\n")

HELPERS = ("gm_inf", "gm_nan", "gm_lowest", "gm_highest", "gm_max", "gm_min", "gm_relu", "gm_abs", "gm_sign",
           "gm_cast", "gm_select", "gm_clamp", "gm_sigmoid", "gm_softplus", "gm_gelu_tanh", "gm_gelu_none", "gm_gelu_grad")

# The C math functions the expressions and helpers call, and how the host computes each:
# (float32 through "f": the float function, or "d": the double one, rounded once;
#  vectorize the float function; vectorize the double function). A vector variant is used
# only where glibc's libmvec (>= 2.35) is within one ulp of NumPy's own error on the
# accuracy test's arguments (tests/codegen/test_native_accuracy.py prints both): libmvec's
# float log and erf and its double exp, expm1, sin and cos are not, so float log/erf go
# through the vectorized double function and double exp/expm1/sin/cos stay scalar calls.
#
# Why float tanh stays on libmvec, measured on a 2-core AVX2 host (gcc 12, glibc 2.36): its
# vector tanhf costs about 1.35 ns per element per thread and decides W2's time there (the
# rest of W2's loop is about 1.2 ns). Two inline float tanh versions written with explicit
# fmaf were measured against it and not kept: a compensated-division one, 0.88 ulp over every
# float in [0, 9.5], took 1.59 ns; a cheaper one (1 - 2u/(1+u) to first order) took 1.0 ns
# but reached 1.34 ulp, looser than NumPy's 1.29. Non-temporal stores did not help W2 either.
MATH = {
    "exp": ("f", True, False),
    "expm1": ("f", True, False),
    "log": ("d", False, True),
    "log1p": ("f", True, True),
    "sin": ("f", True, False),
    "cos": ("f", True, False),
    "tanh": ("f", True, True),
    "erf": ("d", False, True),
    "pow": ("f", True, True),
    "sqrt": ("f", False, False),  # an instruction: vectorizes without a library
    "exp2": ("f", False, False),  # scalar calls: libmvec's variant is not in the accuracy test yet
}
VECTOR_MATH = tuple(fn for fn, (_, vf, vd) in MATH.items() if vf or vd)
_SIMD = ' __attribute__((simd("notinbranch")))'


# Float exp through libmvec, with the arguments whose result is +0 masked out. glibc's vector
# expf sends a whole vector down a scalar slow path when one lane lies outside its fast range;
# a causal attention mask fills half of every softmax row with -inf, which made the softmax's
# exp 7x slower (65536 elements: 212 us against 31). Below log(2**-150) = -103.97 expf is
# exactly +0, so such lanes are given +0 instead (exp(0) is on the fast path) and their
# result is cleared: the same bits as expf(x) for every x. The masks are integer ANDs because
# gcc folds a float select around the call back into expf(x).
_MASKED_EXPF = """\
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define GM_MASKED_EXPF 1
#endif
#endif
#ifdef GM_MASKED_EXPF
static inline float exp(float x) {
    const int keep = x < -104.0f ? 0 : -1;  // expf(x) is +0 below -103.97
    const float fast = __builtin_bit_cast(float, __builtin_bit_cast(int, x) & keep);
    return __builtin_bit_cast(float, __builtin_bit_cast(int, expf(fast)) & keep);
}
#else
static inline float exp(float x) { return expf(x); }
#endif"""


def math_declarations(vector_math: bool) -> str:
    """The C math functions (declared here rather than through <math.h>, whose C++ overloads
    would fix how float arguments are computed) and the overloads CUDA's math API also has:
    float in, float out; integers through double, as <cmath> does. With `vector_math`, the
    `simd` attribute tells the compiler libmvec has SIMD versions, so loops calling them
    vectorize without -ffast-math (glibc declares them itself only under __FAST_MATH__)."""
    lines = ['extern "C" {']
    for fn, (_, vec_f, vec_d) in MATH.items():
        arity = 2 if fn == "pow" else 1
        for ctype, name, vec in (("double", fn, vec_d), ("float", fn + "f", vec_f)):
            params = ", ".join([ctype] * arity)
            lines.append(f"{ctype} {name}({params}){_SIMD if vector_math and vec else ''};")
    lines.append("}")
    for fn, (via, vec_f, _) in MATH.items():
        if fn == "pow":
            body = "powf(x, y)" if via == "f" else "(float)pow((double)x, (double)y)"
            lines.append(f"static inline float pow(float x, float y) {{ return {body}; }}")
            lines.append("template <typename T> static inline double pow(T x, T y) "
                         "{ return pow((double)x, (double)y); }")
            continue
        body = f"{fn}f(x)" if via == "f" else f"(float){fn}((double)x)"
        masked = fn == "exp" and vector_math and vec_f
        lines.append(_MASKED_EXPF if masked else f"static inline float {fn}(float x) {{ return {body}; }}")
        lines.append(f"template <typename T> static inline double {fn}(T x) {{ return {fn}((double)x); }}")
    return "\n".join(lines)


def host_prelude(vector_math: bool) -> str:
    """The top of a host translation unit: a float16 type, and the math functions with CUDA's
    float overloads (so `exp(float)` computes in float on both targets). No system header:
    the kernels use only built-in types (render.C_TYPES) and these declarations, and
    <stdint.h> with <string.h> cost gcc 7-8 ms a translation unit (a third of compiling the
    whole preamble), paid again by every part of a split build."""
    parts = ["typedef _Float16 float16;  // CuPy's float16: stored in half, computed in float",
             math_declarations(vector_math)]
    return "\n".join(parts)


__all__ = ["PREAMBLE", "GM_INLINE", "HELPERS", "MATH", "VECTOR_MATH", "host_prelude", "math_declarations"]
