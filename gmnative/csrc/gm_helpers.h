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
template <typename T> GM_INLINE T gm_relu(T x) { return (x > (T)0 || x != x) ? x : (T)0; }
template <typename T> GM_INLINE T gm_abs(T x) { return x < (T)0 ? -x : (x == (T)0 ? (T)0 : x); }
template <typename T> GM_INLINE T gm_sign(T x) { return x > (T)0 ? (T)1 : (x < (T)0 ? (T)(-1) : x); }
template <typename R, typename T> GM_INLINE R gm_cast(T x) { return (R)x; }
// where: both operands are evaluated (loaded) before the choice, so a loop with a select
// stays one vector blend instead of a branch around a load that keeps it scalar
template <typename A, typename B> GM_INLINE A gm_select(bool c, A a, B b) { return c ? a : (A)b; }
template <typename T> GM_INLINE T gm_clamp(T x, T lo, T hi, bool has_lo, bool has_hi) {
    if (has_lo && x < lo) x = lo;
    if (has_hi && x > hi) x = hi;
    return x;
}
template <typename T> GM_INLINE T gm_sigmoid(T x) {
    T e = exp(-gm_abs(x));
    return x >= (T)0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);
}
template <typename T> GM_INLINE T gm_softplus(T x, T beta, T threshold) {
    T bx = x * beta;
    T soft = (log1p(exp(-gm_abs(bx))) + gm_max(bx, (T)0)) / beta;
    return bx > threshold ? x : soft;
}
template <typename T> GM_INLINE T gm_gelu_tanh(T x) {
    return (T)0.5 * x * ((T)1 + tanh((T)0.7978845608028654 * (x + (T)0.044715 * x * x * x)));
}
template <typename T> GM_INLINE T gm_gelu_none(T x) {
    return (T)0.5 * x * ((T)1 + erf(x * (T)0.7071067811865475));
}
template <typename T> GM_INLINE T gm_gelu_grad(T x) {  // Phi(x) + x phi(x)
    return (T)0.5 * ((T)1 + erf(x * (T)0.7071067811865475)) + x * exp((T)-0.5 * x * x) * (T)0.3989422804014327;
}
