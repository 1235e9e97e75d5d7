"""The C++ helper functions that the ops' C expressions call (the `gm_` names in the op
records' C expressions), in one text that compiles for both targets: the CuPy kernels (CUDA C++,
through NVRTC or nvcc) and the native CPU kernels (the system C++ compiler).

`GM_INLINE` is the only target-dependent spelling: `__device__ __forceinline__` under
CUDA, `static inline` on the host. Bit patterns (inf, nan) go through a union instead of
CUDA's `__longlong_as_double`, which the host lacks. Each helper mirrors its op's NumPy
forward: NaN propagation of maximum/minimum, sigmoid without overflow, gelu's derivative, the
Bessel functions' series, both gelu forms (eager's native kernels). A composite op with
attributes (softplus, gelu) has no helper for compiled code: its C expression is its record's
forward run on C text (codegen/c_forward.py), so its formula is written once.

`host_prelude` is what a host translation unit puts before PREAMBLE: a float16 type and the
C math functions with the float overloads CUDA has, declared with their vector variants
(when the C library has them) so that loops calling exp/tanh/... vectorize without
fast-math (see MATH for which, and why)."""
from __future__ import annotations

from ._sources import read_source

# The helpers themselves are C++ in csrc/gm_helpers.h (the whole text goes into every
# translation unit, so the build's cache key covers it). It opens with `GM_INLINE`, the one
# macro that differs between the targets (guarded: several preambles may share a file).
PREAMBLE = read_source("gm_helpers.h").rstrip("\n")
GM_INLINE = PREAMBLE[:PREAMBLE.index("\n// graphmode helpers")]

# the helpers the ops' C expressions call (gm_gelu_none and gm_gelu_tanh are eager's kernels' only:
# a compiled gelu is its record's forward, codegen/c_forward.py)
HELPERS = ("gm_inf", "gm_nan", "gm_lowest", "gm_highest", "gm_max", "gm_min", "gm_relu", "gm_abs", "gm_sign",
           "gm_cast", "gm_select", "gm_clamp", "gm_sigmoid", "gm_gelu_grad",
           "gm_i0", "gm_i0e", "gm_i1", "gm_i1e", "gm_isinf", "gm_isfinite",
           "gm_floor", "gm_ceil", "gm_trunc", "gm_round", "gm_nan_to_num")

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
    "erfc": ("d", False, False),  # float32 through the double function, rounded once (as erf)
    "trunc": ("f", False, False),  # exact (rounds toward zero, an instruction): nothing to check
    "floor": ("f", False, False),  # exact, instructions as trunc (gm_floor, gm_ceil, gm_round)
    "ceil": ("f", False, False),
    "rint": ("f", False, False),  # to nearest, ties to even (the default rounding mode), as NumPy's rint
    "nextafter": ("f", False, False),  # exact (the next representable number): nothing to check
    # The float functions all vectorized: libmvec's are within 0.6 ulp of NumPy's own error (the
    # accuracy test), and a scalar call costs 5-20 ns an element where NumPy's SIMD loops take
    # 0.4-0.9 (AVX-512 host, one thread): inlined scalar calls made a compiled tan 3x and asinh
    # 12x slower than the library call. In double, libmvec's tan, atanh, sinh and asin are 1.1-1.8
    # ulp worse than NumPy's, so those stay scalar calls (correctly rounded to 0.5-1.3 ulp).
    "tan": ("f", True, False),
    "asinh": ("f", True, True),
    "acosh": ("f", True, True),
    "atanh": ("f", True, False),
    "log2": ("f", True, True),
    "log10": ("f", True, True),
    "sinh": ("f", True, False),
    "cosh": ("f", True, True),
    "asin": ("f", True, False),
    "acos": ("f", True, True),
    "atan": ("f", True, True),
    "atan2": ("f", False, False),  # scalar calls: libmvec's variant is not in the accuracy test yet
}
_BINARY_MATH = ("pow", "nextafter", "atan2")
# double functions the host computes in long double, rounded once: glibc's double atanh is 1.6
# ulp off where NumPy's is 0.57 (the accuracy test); atanhl is within 0.5 (unary functions only)
_DOUBLE_VIA_LONG_DOUBLE = ("atanh",)  # the functions of two arguments
VECTOR_MATH = tuple(fn for fn, (_, vf, vd) in MATH.items() if vf or vd)
_SIMD = ' __attribute__((simd("notinbranch")))'
# vector variants used on x86-64 only where the target has AVX2 (GRAPHMODE_NATIVE_ARCH=x86-64-v2
# and other SSE targets call the scalar function): libmvec's SSE4 tanf reached 3.30 ulp on the
# accuracy test's arguments against its AVX2 variant's 2.65 and the stated bound of 3.0
_VECTOR_FROM_AVX2 = ("tanf",)


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
        arity = 2 if fn in _BINARY_MATH else 1
        double = (("long double", fn + "l", False) if fn in _DOUBLE_VIA_LONG_DOUBLE else ("double", fn, vec_d))
        for ctype, name, vec in (double, ("float", fn + "f", vec_f)):
            params = ", ".join([ctype] * arity)
            if vector_math and vec and name in _VECTOR_FROM_AVX2:
                lines += ["#if defined(__AVX2__) || !defined(__x86_64__)", f"{ctype} {name}({params}){_SIMD};", "#else"]
                lines += [f"{ctype} {name}({params});", "#endif"]
                continue
            lines.append(f"{ctype} {name}({params}){_SIMD if vector_math and vec else ''};")
    lines.append("}")
    for fn in _DOUBLE_VIA_LONG_DOUBLE:
        lines.append(f"static inline double {fn}(double x) {{ return (double){fn}l((long double)x); }}")
    for fn, (via, vec_f, _) in MATH.items():
        if fn in _BINARY_MATH:
            body = f"{fn}f(x, y)" if via == "f" else f"(float){fn}((double)x, (double)y)"
            lines.append(f"static inline float {fn}(float x, float y) {{ return {body}; }}")
            lines.append(f"template <typename T> static inline double {fn}(T x, T y) "
                         f"{{ return {fn}((double)x, (double)y); }}")
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
