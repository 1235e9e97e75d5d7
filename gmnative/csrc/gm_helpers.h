#ifndef GM_INLINE
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GM_INLINE __device__ __forceinline__
#else
#define GM_INLINE static inline
#endif
#endif
// graphmode helpers (CUDA and host): each mirrors the NumPy forward of its op
GM_INLINE double gm_f64_from_bits(unsigned long long bits) {
    union { unsigned long long u; double d; } c;
    c.u = bits;
    return c.d;
}
template <typename T> GM_INLINE T gm_inf() { return (T)gm_f64_from_bits(0x7ff0000000000000ULL); }
template <typename T> GM_INLINE T gm_nan() { return (T)gm_f64_from_bits(0x7ff8000000000000ULL); }
template <typename T> GM_INLINE T gm_lowest() { return -gm_inf<T>(); }
template <typename T> GM_INLINE T gm_highest() { return gm_inf<T>(); }
template <typename T> GM_INLINE T gm_max(T a, T b) { return (a > b || a != a) ? a : b; }
template <typename T> GM_INLINE T gm_min(T a, T b) { return (a < b || a != a) ? a : b; }
template <typename T> GM_INLINE T gm_relu(T x) { return x < (T)0 ? (T)0 : x; }  // NaN and -0.0 pass, as PyTorch
template <typename T> GM_INLINE T gm_abs(T x) { return x < (T)0 ? -x : (x == (T)0 ? (T)0 : x); }
template <typename T> GM_INLINE T gm_sign(T x) { return x > (T)0 ? (T)1 : (x < (T)0 ? (T)(-1) : x); }
template <typename R, typename T> GM_INLINE R gm_cast(T x) { return (R)x; }
// isinf, isfinite of any type without its constants: x - x is NaN exactly for inf and NaN
// (0 for every finite float and every integer), so no bit pattern or limit per type is needed
template <typename T> GM_INLINE bool gm_isinf(T x) { return x == x && x - x != x - x; }
template <typename T> GM_INLINE bool gm_isfinite(T x) { return x - x == x - x; }
// where: both operands are evaluated (loaded) before the choice, so a loop with a select
// stays one vector blend instead of a branch around a load that keeps it scalar
template <typename A, typename B> GM_INLINE A gm_select(bool c, A a, B b) { return c ? a : (A)b; }
template <typename T> GM_INLINE T gm_clamp(T x, T lo, T hi, bool has_lo, bool has_hi) {
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
}
// floor, ceil, trunc and round (half to even) of floats; an integer is its own rounding, with no
// detour through double (which would round an int64 beyond 2^53). round with `decimals` as
// NumPy's around: x * 10^d rounded, divided by 10^d (d < 0: divided, rounded, multiplied), the
// power rounded to the operand's type first
template <typename T> GM_INLINE T gm_floor(T x) { return x; }
GM_INLINE float gm_floor(float x) { return floor(x); }
GM_INLINE double gm_floor(double x) { return floor(x); }
template <typename T> GM_INLINE T gm_ceil(T x) { return x; }
GM_INLINE float gm_ceil(float x) { return ceil(x); }
GM_INLINE double gm_ceil(double x) { return ceil(x); }
template <typename T> GM_INLINE T gm_trunc(T x) { return x; }
GM_INLINE float gm_trunc(float x) { return trunc(x); }
GM_INLINE double gm_trunc(double x) { return trunc(x); }
GM_INLINE double gm_pow10(int d) {
    double p = 1.0;
    for (int k = 0; k < d; ++k) p *= 10.0;
    return p;
}
template <typename T> GM_INLINE T gm_round_float(T x, int decimals) {
    if (decimals == 0) return rint(x);
    const T f = (T)gm_pow10(decimals < 0 ? -decimals : decimals);
    return decimals > 0 ? rint(x * f) / f : rint(x / f) * f;
}
template <typename T> GM_INLINE T gm_round(T x, int decimals) { return x; }
GM_INLINE float gm_round(float x, int decimals) { return gm_round_float(x, decimals); }
GM_INLINE double gm_round(double x, int decimals) { return gm_round_float(x, decimals); }
// nan_to_num: NaN, +inf and -inf replaced (the lowering passes the dtype's largest finite values
// where the call gives none); integers and bools are their own value
template <typename T, typename L> GM_INLINE T gm_nan_to_num(T x, L nan, L posinf, L neginf) { return x; }
template <typename T> GM_INLINE T gm_nan_to_num_float(T x, T nan, T posinf, T neginf) {
    return x != x ? nan : (x == gm_inf<T>() ? posinf : (x == -gm_inf<T>() ? neginf : x));
}
GM_INLINE float gm_nan_to_num(float x, float nan, float posinf, float neginf) {
    return gm_nan_to_num_float(x, nan, posinf, neginf);
}
GM_INLINE double gm_nan_to_num(double x, double nan, double posinf, double neginf) {
    return gm_nan_to_num_float(x, nan, posinf, neginf);
}
template <typename T> GM_INLINE T gm_sigmoid(T x) {
    T e = exp(-gm_abs(x));
    return x >= (T)0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
}
// eager's native GELU kernels (gmnative.kernels, eager_kernels.cpp); compiled kernels spell
// gelu from its record's forward (codegen/c_forward.py), softplus too
template <typename T> GM_INLINE T gm_gelu_tanh(T x) {
    return (T)0.5 * x * ((T)1 + tanh((T)0.7978845608028654 * (x + (T)0.044715 * x * x * x)));
}
template <typename T> GM_INLINE T gm_gelu_none(T x) {
    return (T)0.5 * x * ((T)1 + erf(x * (T)0.7071067811865475));
}
template <typename T> GM_INLINE T gm_gelu_grad(T x) {  // Phi(x) + x phi(x)
    return (T)0.5 * ((T)1 + erf(x * (T)0.7071067811865475)) + x * exp((T)-0.5 * x * x) * (T)0.3989422804014327;
}
// the modified Bessel functions of the first kind I0, I1 and their scaled forms e^-|x| I(x)
// (torch.i0, torch.special.i0e, i1, i1e), as their records' forward computes them
// (gmops/unary.py, _bessel_first_kind), in double and rounded once: at a = |x| <= 30 the power
// series (a/2)^n sum_k (a^2/4)^k / (k! (k+n)!), positive terms without cancellation (50 terms
// reach double precision at a = 30); above, the asymptotic series e^a / sqrt(2 pi a)
// sum_k (-1)^k prod_j (4n^2 - (2j-1)^2) / (k! (8a)^k), with e^a as two halves (finite where
// e^a alone overflows but I(a) does not). A fixed number of steps and no table: the same text
// vectorizes on the host and compiles as CUDA device code.
GM_INLINE double gm_bessel_i(double a, int n, bool scaled) {
    if (a > 30.0) {
        if (a == gm_inf<double>()) return scaled ? 0.0 : a;
        const double z = 8.0 * a;
        double term = 1.0, total = 1.0;
        for (int k = 1; k < 30; ++k) {
            const double odd = 2.0 * k - 1.0;
            term *= -(4.0 * n * n - odd * odd) / (k * z);
            total += term;
        }
        const double root = total / sqrt(6.283185307179586 * a);
        if (scaled) return root;
        const double half = exp(a * 0.5);
        return half * (half * root);
    }
    const double t = 0.5 * a, q = t * t;
    double term = n ? t : 1.0, total = term;
    for (int k = 1; k < 50; ++k) {
        term *= q / (k * (double)(k + n));
        total += term;
    }
    return scaled ? total * exp(-a) : total;
}
template <typename T> GM_INLINE T gm_i0(T x) { return (T)gm_bessel_i(gm_abs((double)x), 0, false); }
template <typename T> GM_INLINE T gm_i0e(T x) { return (T)gm_bessel_i(gm_abs((double)x), 0, true); }
// odd: negative where x < 0 only (I1(-0) is +0, as PyTorch's)
template <typename T> GM_INLINE T gm_i1(T x) {
    const double m = gm_bessel_i(gm_abs((double)x), 1, false);
    return (T)(x < (T)0 ? -m : m);
}
template <typename T> GM_INLINE T gm_i1e(T x) {
    const double m = gm_bessel_i(gm_abs((double)x), 1, true);
    return (T)(x < (T)0 ? -m : m);
}
