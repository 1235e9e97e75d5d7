
#include <omp.h>

// elements below which a loop stays on the calling thread (thread wake-up costs more)
#define GM_EAGER_PARALLEL_MIN 32768LL

// Elementwise maps run in blocks of GM_EAGER_BLOCK elements, the last one padded: every
// element goes through the same vector code (a scalar remainder loop would call the scalar
// math function, whose last bit can differ from the vector one), so an element's result does
// not depend on its position or on the array's length - what batching 0-d calls into one
// array call rests on (codegen/batching.py).
#define GM_EAGER_BLOCK 64
template <typename T, typename F> static void blocked_map(const T* x, T* y, long long n, int nt, F f) {
    const long long blocks = (n + GM_EAGER_BLOCK - 1) / GM_EAGER_BLOCK;
    #pragma omp parallel for num_threads(nt) if(n >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long blk = 0; blk < blocks; ++blk) {
        const long long i0 = blk * GM_EAGER_BLOCK;
        if (i0 + GM_EAGER_BLOCK <= n) {
            #pragma omp simd
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) y[i0 + j] = f(x[i0 + j]);
        } else {
            T in[GM_EAGER_BLOCK], out[GM_EAGER_BLOCK];
            const int m = (int)(n - i0);
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) in[j] = j < m ? x[i0 + j] : (T)0;
            #pragma omp simd
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) out[j] = f(in[j]);
            for (int j = 0; j < m; ++j) y[i0 + j] = out[j];
        }
    }
}

// Exact GELU in float32 without the double erf. float32 used to go through the double
// function (c_helpers.MATH: libmvec's erff is not within NumPy's error), which made erf the
// whole cost of eager's GELU kernels: 617 us for gelu_grad and 439 for gelu a step on a small
// GPT's MLP activations (W5), where PyTorch's forward and backward together take 341. Here
// float32 is computed in float and branch-free (both ranges' formulas evaluated and one
// selected, so the loop stays vector code), for a = |x|:
//   a < 1:  erf(x) = x + x R(x^2), R of degree 6 (least squares on Chebyshev nodes in double:
//           erf(x)/x - 1 within 1.2e-9 relative);
//   a >= 1: erf(x) = sign(x) (1 - exp(-t^2 + Q(t))), t = min(a, 4), Q of degree 8
//           (log(erfc(t)) + t^2 within 6e-10 absolute); beyond 4 erfc is below half an ulp
//           of 1, so erf rounds to +-1.
// The exponential is inline (Cephes' expf: Cody-Waite reduction by ln 2, a degree-7
// polynomial, the power of two put into the exponent bits; within 1 ulp on [-87, 0]): no
// library call, so the same instructions run on every host and vector width, and nothing
// sends a vector down a slow path. Evaluated with fused multiply-adds (the build turns
// contraction off, so they are explicit): erf within 1.1 ulp of the true erf (0.9 on the
// inner range), checked in tests/eager/test_gelu_float_erf.py. Where the compiler is not told
// the host has FMA (no __FMA__) fmaf would be a scalar library call, so float32 keeps the
// double function there; float64 always does.
#if defined(__FMA__) && !defined(__CUDACC__) && defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define GM_EAGER_FLOAT_ERF 1
#endif
#endif
#ifdef GM_EAGER_FLOAT_ERF
// e^y for y <= 0 (NaN passes; below -87, where expf is subnormal or 0, it gives 0)
static inline float gm_eager_expf(float y) {
    const float c = y < -87.0f ? -87.0f : y;
    const float n = __builtin_rintf(c * 1.44269504088896341f);
    float r = __builtin_fmaf(n, -0.693359375f, c);
    r = __builtin_fmaf(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = __builtin_fmaf(p, r, 1.3981999507e-3f);
    p = __builtin_fmaf(p, r, 8.3334519073e-3f);
    p = __builtin_fmaf(p, r, 4.1665795894e-2f);
    p = __builtin_fmaf(p, r, 1.6666665459e-1f);
    p = __builtin_fmaf(p, r, 5.0000001201e-1f);
    p = __builtin_fmaf(p, r * r, r) + 1.0f;
    const float scale = __builtin_bit_cast(float, ((int)n + 127) << 23);
    return y < -87.0f ? 0.0f : p * scale;
}
static inline float gm_eager_erf(float x) {
    const float a = x < 0.0f ? -x : x;
    const float s = x * x;
    float r = 7.847259257687256e-05f;
    r = __builtin_fmaf(r, s, -0.0008008189033716917f);
    r = __builtin_fmaf(r, s, 0.005188099108636379f);
    r = __builtin_fmaf(r, s, -0.026853691786527634f);
    r = __builtin_fmaf(r, s, 0.1128358244895935f);
    r = __builtin_fmaf(r, s, -0.3761262595653534f);
    r = __builtin_fmaf(r, s, 0.12837916612625122f);
    const float inner = __builtin_fmaf(x, r, x);
    const float t = a < 4.0f ? a : 4.0f;
    float q = 1.6140616025950294e-06f;
    q = __builtin_fmaf(q, t, -4.559062290354632e-05f);
    q = __builtin_fmaf(q, t, 0.0005927695310674608f);
    q = __builtin_fmaf(q, t, -0.004740222357213497f);
    q = __builtin_fmaf(q, t, 0.02636471763253212f);
    q = __builtin_fmaf(q, t, -0.10997824370861053f);
    q = __builtin_fmaf(q, t, 0.36806291341781616f);
    q = __builtin_fmaf(q, t, -1.1301666498184204f);
    q = __builtin_fmaf(q, t, 0.0003032129898201674f);
    const float outer = 1.0f - gm_eager_expf(__builtin_fmaf(-t, t, q));
    const float tail = x < 0.0f ? -outer : outer;
    return a < 1.0f ? inner : (x != x ? x : tail);
}
#else
static inline float gm_eager_expf(float y) { return exp(y); }
static inline float gm_eager_erf(float x) { return erf(x); }
#endif
static inline double gm_eager_expf(double y) { return exp(y); }
static inline double gm_eager_erf(double x) { return erf(x); }

template <typename T> static inline T gm_eager_gelu(T x) {
    return (T)0.5 * x * ((T)1 + gm_eager_erf(x * (T)0.7071067811865475));
}
template <typename T> static inline T gm_eager_gelu_grad(T x) {  // Phi(x) + x phi(x)
    return (T)0.5 * ((T)1 + gm_eager_erf(x * (T)0.7071067811865475))
           + x * gm_eager_expf((T)-0.5 * x * x) * (T)0.3989422804014327;
}

// The float32 GELU maps' vector width: 16 floats where the host has AVX-512 (gcc's
// -march=native prefers 256-bit vectors; with the math inline nothing needs a library's
// 512-bit variant), measured 1.4x faster there; the compiler's choice elsewhere. float64 keeps
// blocked_map (its erf and exp are the library's, whose variants decide the width).
#if defined(__AVX512F__) && defined(GM_EAGER_FLOAT_ERF)
#define GM_EAGER_WIDE_SIMD _Pragma("omp simd simdlen(16)")
#else
#define GM_EAGER_WIDE_SIMD _Pragma("omp simd")
#endif
template <typename T, typename F> static void wide_map(const T* x, T* y, long long n, int nt, F f) {
    const long long blocks = (n + GM_EAGER_BLOCK - 1) / GM_EAGER_BLOCK;
    #pragma omp parallel for num_threads(nt) if(n >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long blk = 0; blk < blocks; ++blk) {
        const long long i0 = blk * GM_EAGER_BLOCK;
        if (i0 + GM_EAGER_BLOCK <= n) {
            GM_EAGER_WIDE_SIMD
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) y[i0 + j] = f(x[i0 + j]);
        } else {
            T in[GM_EAGER_BLOCK], out[GM_EAGER_BLOCK];
            const int m = (int)(n - i0);
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) in[j] = j < m ? x[i0 + j] : (T)0;
            GM_EAGER_WIDE_SIMD
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) out[j] = f(in[j]);
            for (int j = 0; j < m; ++j) y[i0 + j] = out[j];
        }
    }
}

template <typename T> static void gelu_none(const T* x, T* y, long long n, int nt) {
    if constexpr (sizeof(T) == 4) wide_map(x, y, n, nt, [](T v) { return gm_eager_gelu(v); });
    else blocked_map(x, y, n, nt, [](T v) { return gm_eager_gelu(v); });
}

template <typename T> static void gelu_tanh(const T* x, T* y, long long n, int nt) {
    blocked_map(x, y, n, nt, [](T v) { return gm_gelu_tanh(v); });
}

template <typename T> static void gelu_grad(const T* x, T* y, long long n, int nt) {
    if constexpr (sizeof(T) == 4) wide_map(x, y, n, nt, [](T v) { return gm_eager_gelu_grad(v); });
    else blocked_map(x, y, n, nt, [](T v) { return gm_eager_gelu_grad(v); });
}

// g * gelu'(x) in one pass: the backward of eager's fused GELU (eager/_fused_gelu.py), which
// took gelu_grad's pass and then NumPy's product with g (a second pass over both arrays). The
// derivative is gm_eager_gelu_grad's, the product rounded once: the two-step result's bits.
// The same blocks and tail padding as the maps above, so a float32 element's result does not
// depend on its position either.
template <typename T, typename F> static void zip_map(const T* g, const T* x, T* y, long long n, int nt, F f) {
    const long long blocks = (n + GM_EAGER_BLOCK - 1) / GM_EAGER_BLOCK;
    #pragma omp parallel for num_threads(nt) if(n >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long blk = 0; blk < blocks; ++blk) {
        const long long i0 = blk * GM_EAGER_BLOCK;
        if (i0 + GM_EAGER_BLOCK <= n) {
            GM_EAGER_WIDE_SIMD
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) y[i0 + j] = f(g[i0 + j], x[i0 + j]);
        } else {
            T in_g[GM_EAGER_BLOCK], in_x[GM_EAGER_BLOCK], out[GM_EAGER_BLOCK];
            const int m = (int)(n - i0);
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) {
                in_g[j] = j < m ? g[i0 + j] : (T)0;
                in_x[j] = j < m ? x[i0 + j] : (T)0;
            }
            GM_EAGER_WIDE_SIMD
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) out[j] = f(in_g[j], in_x[j]);
            for (int j = 0; j < m; ++j) y[i0 + j] = out[j];
        }
    }
}

// GELU and its derivative together (the forward of eager's fused GELU when a gradient will
// be asked for): erf once for both; each result is gelu_none's and gelu_grad's expression, so
// their bits. float32 only (float64's library erf and exp keep the two passes).
static inline void gelu_and_grad_block(const float* __restrict x, float* __restrict y, float* __restrict d) {
    GM_EAGER_WIDE_SIMD
    for (int j = 0; j < GM_EAGER_BLOCK; ++j) {
        const float v = x[j];
        const float phi2 = 1.0f + gm_eager_erf(v * 0.7071067811865475f);
        y[j] = 0.5f * v * phi2;
        d[j] = 0.5f * phi2 + v * gm_eager_expf(-0.5f * v * v) * 0.3989422804014327f;
    }
}

static void gelu_and_grad(const float* x, float* y, float* d, long long n, int nt) {
    const long long blocks = (n + GM_EAGER_BLOCK - 1) / GM_EAGER_BLOCK;
    #pragma omp parallel for num_threads(nt) if(n >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long blk = 0; blk < blocks; ++blk) {
        const long long i0 = blk * GM_EAGER_BLOCK;
        if (i0 + GM_EAGER_BLOCK <= n) {
            gelu_and_grad_block(x + i0, y + i0, d + i0);
        } else {
            float in[GM_EAGER_BLOCK], oy[GM_EAGER_BLOCK], od[GM_EAGER_BLOCK];
            const int m = (int)(n - i0);
            for (int j = 0; j < GM_EAGER_BLOCK; ++j) in[j] = j < m ? x[i0 + j] : 0.0f;
            gelu_and_grad_block(in, oy, od);
            for (int j = 0; j < m; ++j) { y[i0 + j] = oy[j]; d[i0 + j] = od[j]; }
        }
    }
}

template <typename T> static void gelu_backward(const T* g, const T* x, T* y, long long n, int nt) {
    if constexpr (sizeof(T) == 4) {
        zip_map(g, x, y, n, nt, [](T gv, T xv) { return gv * gm_eager_gelu_grad(xv); });
    } else {  // float64: element by element as gelu_grad's blocked_map computes its derivative
        const T* xs = x;
        gelu_grad(xs, y, n, nt);
        #pragma omp parallel for simd num_threads(nt) if(n >= GM_EAGER_PARALLEL_MIN) schedule(static)
        for (long long i = 0; i < n; ++i) y[i] = g[i] * y[i];
    }
}

// the math functions themselves, vectorized (codegen.c_helpers.MATH says through which
// function each dtype goes); eager uses them on large arrays (LARGE)
template <typename T> static void tanh_map(const T* x, T* y, long long n, int nt) {
    blocked_map(x, y, n, nt, [](T v) { return (T)tanh(v); });
}

template <typename T> static void exp_map(const T* x, T* y, long long n, int nt) {
    blocked_map(x, y, n, nt, [](T v) { return (T)exp(v); });
}

// mean and 1/sqrt(var + eps) of one row, in double: two passes over a row that is in cache
template <typename T> static inline void row_moments(const T* x, long long n, double eps, double* mean, double* rstd) {
    double s = 0.0;
    #pragma omp simd reduction(+:s)
    for (long long j = 0; j < n; ++j) s += (double)x[j];
    const double m = s / (double)n;
    double v = 0.0;
    #pragma omp simd reduction(+:v)
    for (long long j = 0; j < n; ++j) { const double d = (double)x[j] - m; v += d * d; }
    *mean = m;
    *rstd = 1.0 / sqrt(v / (double)n + eps);
}

// rows of n elements: y = (x - mean) * rstd * w + b
// `stats`, when given, receives each row's mean and rstd (2 doubles a row), for the backward
template <typename T> static void layer_norm(const T* x, const T* w, const T* b, T* y, long long groups,
                                             long long n, double eps, int nt, double* stats = nullptr) {
    #pragma omp parallel for num_threads(nt) if(groups * n >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long r = 0; r < groups; ++r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        double mean, rstd;
        row_moments(xr, n, eps, &mean, &rstd);
        if (stats) { stats[2 * r] = mean; stats[2 * r + 1] = rstd; }
        const T m = (T)mean, s = (T)rstd;
        #pragma omp simd
        for (long long j = 0; j < n; ++j) yr[j] = ((xr[j] - m) * s) * w[j] + b[j];
    }
}

// sum(g w) and sum(g w (x - mean)) over one row of layer norm's backward, in double
template <typename T> static inline void ln_row_sums(const T* gr, const T* xr, const T* w, long long n, double mean,
                                                     double* sum_gw, double* sum_gws) {
    double a = 0.0, b = 0.0;
    #pragma omp simd reduction(+:a, b)
    for (long long j = 0; j < n; ++j) {
        const double gwj = (double)gr[j] * (double)w[j];
        a += gwj;
        b += gwj * ((double)xr[j] - mean);
    }
    *sum_gw = a;
    *sum_gws = b;
}

// With s = x - mean and xhat = s * rstd per row:
//   gx = rstd * (g w - sum(g w) / n) - s * rstd^3 / n * sum(g w s)
//   gw = sum over rows of g * xhat,  gb = sum over rows of g
// gw and gb accumulate per thread in `part` (2 * n doubles per thread), added in thread order.
// `stats`, when given, holds the forward's mean and rstd of each row (not computed again).
// Rows go GM_LN_ROWS at a time through the second pass: each element of w, gw's and gb's
// partial sums is loaded and stored once per block, not once per row (the sums still add the
// rows in order, so the bits are the row-by-row loop's); 1.1x on one thread and 1.7x on two
// for a GPT's (512, 64) rows, where the row-by-row loop's loads and stores of the partial sums
// kept a second thread from helping.
#define GM_LN_ROWS 4
template <typename T> static void layer_norm_backward(const T* g, const T* x, const T* w, T* gx, T* gw, T* gb,
                                                      double* part, long long groups, long long n, double eps,
                                                      int nt, const double* stats = nullptr) {
    int used = 1;
    #pragma omp parallel num_threads(nt) if(groups * n >= GM_EAGER_PARALLEL_MIN)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        if (t == 0) used = nth;
        double* pw = part + (long long)t * 2 * n;
        double* pb = pw + n;
        for (long long j = 0; j < n; ++j) { pw[j] = 0.0; pb[j] = 0.0; }
        const long long lo = groups * t / nth, hi = groups * (t + 1) / nth;
        long long r = lo;
        for (; r < hi; r += GM_LN_ROWS) {
            const int rows = hi - r < GM_LN_ROWS ? (int)(hi - r) : GM_LN_ROWS;
            double mean[GM_LN_ROWS], rstd[GM_LN_ROWS], mgw[GM_LN_ROWS], c[GM_LN_ROWS];
            const T* gr[GM_LN_ROWS];
            const T* xr[GM_LN_ROWS];
            T* out[GM_LN_ROWS];
            for (int q = 0; q < GM_LN_ROWS; ++q) {
                const long long rr = r + (q < rows ? q : 0);
                gr[q] = g + rr * n; xr[q] = x + rr * n; out[q] = gx + rr * n;
                if (q >= rows) { mean[q] = rstd[q] = mgw[q] = c[q] = 0.0; continue; }
                if (stats) { mean[q] = stats[2 * rr]; rstd[q] = stats[2 * rr + 1]; }
                else row_moments(xr[q], n, eps, &mean[q], &rstd[q]);
                double sum_gw, sum_gws;
                ln_row_sums(gr[q], xr[q], w, n, mean[q], &sum_gw, &sum_gws);
                mgw[q] = sum_gw / (double)n;
                c[q] = rstd[q] * rstd[q] * rstd[q] * sum_gws / (double)n;
            }
            // in double: g w - mean(g w) and x - mean cancel exactly where they should (one
            // element per row gives a zero gradient, not rstd times a rounding error)
            if (rows == GM_LN_ROWS) {
                #pragma omp simd
                for (long long j = 0; j < n; ++j) {
                    const double wj = (double)w[j];
                    double aw = pw[j], ab = pb[j];
                    for (int q = 0; q < GM_LN_ROWS; ++q) {
                        const double gj = (double)gr[q][j], s = (double)xr[q][j] - mean[q];
                        out[q][j] = (T)(rstd[q] * (gj * wj - mgw[q]) - s * c[q]);
                        aw += gj * (s * rstd[q]);
                        ab += gj;
                    }
                    pw[j] = aw;
                    pb[j] = ab;
                }
            } else {
                for (int q = 0; q < rows; ++q) {
                    #pragma omp simd
                    for (long long j = 0; j < n; ++j) {
                        const double gj = (double)gr[q][j], s = (double)xr[q][j] - mean[q];
                        out[q][j] = (T)(rstd[q] * (gj * (double)w[j] - mgw[q]) - s * c[q]);
                        pw[j] += gj * (s * rstd[q]);
                        pb[j] += gj;
                    }
                }
            }
        }
    }
    for (long long j = 0; j < n; ++j) {
        double sw = 0.0, sb = 0.0;
        for (int t = 0; t < used; ++t) { sw += part[(long long)t * 2 * n + j]; sb += part[(long long)t * 2 * n + n + j]; }
        gw[j] = (T)sw;
        gb[j] = (T)sb;
    }
}

// Batch norm's layout: x is (N, C, S) - batch, channels, the spatial dims flattened - and
// each channel's statistics run over N and S. The S elements of one (batch, channel) pair are
// contiguous; N and C have any strides (sn, sc, in elements): a convolution's output is
// channels-major (C, N, S) in memory, and the kernels read it in place. Work is dealt out by
// channel (a channel's N runs of S elements are read twice, the second time from cache).
struct gm_nc { long long N, C, S, sn, sc; };

template <typename T> static inline void channel_stats(const T* x, gm_nc d, long long c, double* mean, double* m2) {
    double s = 0.0;
    for (long long b = 0; b < d.N; ++b) {
        const T* xr = x + b * d.sn + c * d.sc;
        #pragma omp simd reduction(+:s)
        for (long long j = 0; j < d.S; ++j) s += (double)xr[j];
    }
    const double m = s / (double)(d.N * d.S);
    double v = 0.0;
    for (long long b = 0; b < d.N; ++b) {
        const T* xr = x + b * d.sn + c * d.sc;
        #pragma omp simd reduction(+:v)
        for (long long j = 0; j < d.S; ++j) { const double e = (double)xr[j] - m; v += e * e; }
    }
    *mean = m;
    *m2 = v;
}

#define GM_CHANNELS_PARALLEL num_threads(nt) if(d.N * d.C * d.S >= GM_EAGER_PARALLEL_MIN) schedule(static)

// per channel: mean and the sum of squared deviations (var = m2 / (count - correction))
template <typename T> static void channel_moments(const T* x, double* mean, double* m2, gm_nc d, int nt) {
    #pragma omp parallel for GM_CHANNELS_PARALLEL
    for (long long c = 0; c < d.C; ++c) channel_stats(x, d, c, mean + c, m2 + c);
}

// (x - mean) / sqrt(biased var + eps) per channel; y has its own N and C strides (yd)
template <typename T> static void channel_normalize(const T* x, T* y, gm_nc d, gm_nc yd, double eps, int nt) {
    #pragma omp parallel for GM_CHANNELS_PARALLEL
    for (long long c = 0; c < d.C; ++c) {
        double mean, m2;
        channel_stats(x, d, c, &mean, &m2);
        const T m = (T)mean, r = (T)(1.0 / sqrt(m2 / (double)(d.N * d.S) + eps));
        for (long long b = 0; b < d.N; ++b) {
            const T* xr = x + b * d.sn + c * d.sc;
            T* yr = y + b * yd.sn + c * yd.sc;
            #pragma omp simd
            for (long long j = 0; j < d.S; ++j) yr[j] = (xr[j] - m) * r;
        }
    }
}

// rstd * (g - mean(g) - xhat * mean(g * xhat)) per channel, with xhat = (x - mean) * rstd;
// g and the result have their own N and C strides (gd, od)
template <typename T> static void channel_normalize_backward(const T* g, const T* x, T* gx, gm_nc d, gm_nc gd,
                                                             gm_nc od, double eps, int nt) {
    #pragma omp parallel for GM_CHANNELS_PARALLEL
    for (long long c = 0; c < d.C; ++c) {
        double mean, m2;
        channel_stats(x, d, c, &mean, &m2);
        const double count = (double)(d.N * d.S), rstd = 1.0 / sqrt(m2 / count + eps);
        double sg = 0.0, sgs = 0.0;
        for (long long b = 0; b < d.N; ++b) {
            const T* gr = g + b * gd.sn + c * gd.sc;
            const T* xr = x + b * d.sn + c * d.sc;
            #pragma omp simd reduction(+:sg, sgs)
            for (long long j = 0; j < d.S; ++j) { sg += (double)gr[j]; sgs += (double)gr[j] * ((double)xr[j] - mean); }
        }
        const double mean_g = sg / count, k = rstd * rstd * sgs / count;  // mean(g * xhat) * rstd
        for (long long b = 0; b < d.N; ++b) {
            const T* gr = g + b * gd.sn + c * gd.sc;
            const T* xr = x + b * d.sn + c * d.sc;
            T* out = gx + b * od.sn + c * od.sc;
            #pragma omp simd
            for (long long j = 0; j < d.S; ++j)
                out[j] = (T)(rstd * (((double)gr[j] - mean_g) - ((double)xr[j] - mean) * k));
        }
    }
}

// argmax / argmin along the middle axis of x viewed as (outer, K, inner): the first index of
// the extreme value, a NaN counting as the extreme (NumPy's and PyTorch's rule). The inner
// axis is the vector loop, so a pooling window's K candidates are compared lane by lane.
template <typename T, bool MAX> static void arg_extreme(const T* x, long long* out, long long outer, long long K,
                                                        long long inner, int nt) {
    #pragma omp parallel for num_threads(nt) if(outer * K * inner >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long o = 0; o < outer; ++o) {
        const T* xo = x + o * K * inner;
        long long* io = out + o * inner;
        for (long long i0 = 0; i0 < inner; i0 += GM_EAGER_BLOCK) {
            const int m = (int)(inner - i0 < GM_EAGER_BLOCK ? inner - i0 : GM_EAGER_BLOCK);
            T best[GM_EAGER_BLOCK];
            long long at[GM_EAGER_BLOCK];
            for (int j = 0; j < m; ++j) { best[j] = xo[i0 + j]; at[j] = 0; }
            for (long long k = 1; k < K; ++k) {
                const T* xk = xo + k * inner + i0;
                #pragma omp simd
                for (int j = 0; j < m; ++j) {
                    const T v = xk[j], b = best[j];
                    const bool take = (MAX ? v > b : v < b) || (v != v && b == b);
                    best[j] = take ? v : b;
                    at[j] = take ? k : at[j];
                }
            }
            for (int j = 0; j < m; ++j) io[i0 + j] = at[j];
        }
    }
}

// x's values at index along the middle axis of (outer, K, inner): out[o, i] = x[o, index[o, i], i]
// (the value half of max/min with dim, after arg_extreme); an index outside [0, K) gives NaN
// rather than a read out of bounds (the op's callers never make one)
template <typename T> static void take_middle(const T* x, const long long* index, T* out, long long outer,
                                              long long K, long long inner, int nt) {
    #pragma omp parallel for num_threads(nt) if(outer * inner >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long o = 0; o < outer; ++o) {
        const T* xo = x + o * K * inner;
        const long long* io = index + o * inner;
        T* oo = out + o * inner;
        for (long long i = 0; i < inner; ++i) {
            const long long k = io[i];
            oo[i] = (k >= 0 && k < K) ? xo[k * inner + i] : gm_nan<T>();
        }
    }
}

// embedding's gradient: the rows g[i] added into out[idx[i]] in row order, from zero (the
// bits of NumPy's add.at, which the op's NumPy code calls for a few rows an index; for many it
// sums sorted runs with reduceat, equal to rounding); rows no index points at stay zero.
// Columns are shared among the threads, so each element still adds its rows in order.
// d = [rows, width, num_weights]; every index is in [0, num_weights).
template <typename T> static void embedding_backward(const T* g, const long long* idx, T* out, const long long* d,
                                                     int nt) {
    const long long rows = d[0], width = d[1], nw = d[2];
    #pragma omp parallel num_threads(nt) if(rows * width >= GM_EAGER_PARALLEL_MIN)
    {
        const long long t = omp_get_thread_num(), nth = omp_get_num_threads();
        const long long lo = width * t / nth, hi = width * (t + 1) / nth;
        for (long long r = 0; r < nw; ++r)
            for (long long j = lo; j < hi; ++j) out[r * width + j] = (T)0;
        for (long long i = 0; i < rows; ++i) {
            T* o = out + idx[i] * width;
            const T* gi = g + i * width;
            #pragma omp simd
            for (long long j = lo; j < hi; ++j) o[j] = o[j] + gi[j];
        }
    }
}

// col2im of a 2-d convolution's or pooling's windows: cols is (C, KH, KW, N, OH, OW), the
// result (N, C, H, W); every window element is added into a padded plane of one (c, n) pair
// in the order of the kernel offsets (kh, then kw), as the NumPy code adds them, so the sums
// are the same bits. d = [C, KH, KW, N, OH, OW, H, W, stride h, w, pad top, left, dilation h, w].
// BATCH_MAJOR: cols laid out (N, C, KH, KW, OH, OW) (im2col2d's batch-major layout).
template <typename T, bool BATCH_MAJOR = false> static void fold2d(const T* cols, T* out, const long long* d, int nt) {
    const long long C = d[0], KH = d[1], KW = d[2], N = d[3], OH = d[4], OW = d[5], H = d[6], W = d[7];
    const long long sh = d[8], sw = d[9], ph = d[10], pw = d[11], dh = d[12], dw = d[13];
    const long long PH = (OH - 1) * sh + (KH - 1) * dh + 1, PW = (OW - 1) * sw + (KW - 1) * dw + 1;
    const long long planes = C * N, window = OH * OW;
    #pragma omp parallel num_threads(nt) if(C * KH * KW * N * window >= GM_EAGER_PARALLEL_MIN)
    {
        T* plane = new T[PH * PW];
        #pragma omp for schedule(static)
        for (long long p = 0; p < planes; ++p) {
            const long long c = p / N, n = p % N;
            for (long long j = 0; j < PH * PW; ++j) plane[j] = (T)0;
            for (long long kh = 0; kh < KH; ++kh)
                for (long long kw = 0; kw < KW; ++kw) {
                    const T* src = cols + (BATCH_MAJOR ? (((n * C + c) * KH + kh) * KW + kw) * window
                                                       : (((c * KH + kh) * KW + kw) * N + n) * window);
                    for (long long oh = 0; oh < OH; ++oh) {
                        T* row = plane + (oh * sh + kh * dh) * PW + kw * dw;
                        const T* s = src + oh * OW;
                        #pragma omp simd
                        for (long long ow = 0; ow < OW; ++ow) row[ow * sw] += s[ow];
                    }
                }
            T* o = out + (n * C + c) * H * W;
            for (long long h = 0; h < H; ++h)
                for (long long w = 0; w < W; ++w) {
                    const long long y = h + ph, x = w + pw;
                    o[h * W + w] = (y < PH && x < PW) ? plane[y * PW + x] : (T)0;
                }
        }
        delete[] plane;
    }
}

// The cells' float32 sigmoid and tanh, inline on gm_eager_expf (no library call, so the gate
// loops below stay vector code, 16 wide on AVX-512): a GRU cell's gates on a batch of 32 and
// 128 units took 19 us through libmvec's expf and tanhf, 13 us inline (one thread, CPU time).
//   sigmoid(x) = q = 1 / (1 + e) for x >= 0, e q below, e = exp(-|x|) (no overflow);
//   tanh(x) = x + x^3 P(x^2) for |x| < 0.625 (Cephes' tanhf polynomial), else
//             sign(x) (1 - e) / (1 + e), e = exp(-2|x|);
// within 2.5 ulp of the exact values (tests/eager/test_cell_gate_math.py). NaN passes, +-inf
// give the limits. float64, and hosts without FMA (see GM_EAGER_FLOAT_ERF), keep the library.
#ifdef GM_EAGER_FLOAT_ERF
static inline float gm_cell_sigmoid(float x) {
    const float e = gm_eager_expf(x < 0.0f ? x : -x);
    const float q = 1.0f / (1.0f + e);  // (one division: e / (1 + e) as e * q, within an ulp)
    return x >= 0.0f ? q : e * q;
}
static inline float gm_cell_tanh(float x) {
    const float a = x < 0.0f ? -x : x;
    const float e = gm_eager_expf(-2.0f * a);
    const float big = (1.0f - e) / (1.0f + e);
    const float s = x * x;
    float p = -5.70498872745e-3f;
    p = __builtin_fmaf(p, s, 2.06390887954e-2f);
    p = __builtin_fmaf(p, s, -5.37397155531e-2f);
    p = __builtin_fmaf(p, s, 1.33314422036e-1f);
    p = __builtin_fmaf(p, s, -3.33332819422e-1f);
    const float small = __builtin_fmaf(x * s, p, x);
    return a < 0.625f ? small : (x != x ? x : (x < 0.0f ? -big : big));
}
#define GM_CELL_SIMD GM_EAGER_WIDE_SIMD
#else
// without FMA (an SSE target: GRAPHMODE_NATIVE_ARCH=x86-64-v2) in double, rounded once: the
// float library path (libmvec's SSE4 expf, then a division) reached 3.03 ulp there
static inline float gm_cell_sigmoid(float x) { return (float)gm_sigmoid((double)x); }
static inline float gm_cell_tanh(float x) { return (float)tanh((double)x); }
#define GM_CELL_SIMD _Pragma("omp simd")
#endif
// The cells' passes split across the threads from 8192 gate elements (a GRU cell of 32 x 128
// has 12288), below the elementwise maps' GM_EAGER_PARALLEL_MIN: each element costs several
// operations (three exponentials, divisions), so a pass of 10-15 us gains from a second
// thread whose team is already spinning (the kernels' threads shrink to one when the cores
// are busy: gmbase.threads.available).
#define GM_CELL_PARALLEL_MIN 8192LL
static inline double gm_cell_sigmoid(double x) { return gm_sigmoid(x); }
static inline double gm_cell_tanh(double x) { return tanh(x); }

// The GRU cell's gate arithmetic (eager/nn/_fused_cells.py), one pass forward and one back,
// where NumPy took a dozen whole-array passes and their temporaries. The two products come
// transposed, gi = W_ih x^T and gh = W_hh h^T as (3K, B): row j of a gate holds its column
// for every batch row, so the gate loops run contiguous over the batch. PyTorch's gates:
//   r = sigmoid((gi_r + b_ir) + (gh_r + b_hr)), z likewise, hn = gh_n + b_hn,
//   n = tanh((gi_n + b_in) + r * hn), h' = (1 - z) * n + z * h,
// in the op-by-op cell's order of operations. saved = r, z, n, hn, each (K, B), for the
// backward. d = [B, K].
template <typename T> static void gru_cell(const T* gi, const T* gh, const T* bi, const T* bh, const T* h, T* out,
                                           T* saved, const long long* d, int nt) {
    const long long B = d[0], K = d[1], KB = K * B;
    T* rs = saved; T* zs = saved + KB; T* ns = saved + 2 * KB; T* hs = saved + 3 * KB;
    #pragma omp parallel for num_threads(nt) if(3 * KB >= GM_CELL_PARALLEL_MIN) schedule(static)
    for (long long j = 0; j < K; ++j) {
        const T* ir = gi + j * B; const T* iz = gi + (K + j) * B; const T* in_ = gi + (2 * K + j) * B;
        const T* hr = gh + j * B; const T* hz = gh + (K + j) * B; const T* hn_ = gh + (2 * K + j) * B;
        const T bir = bi[j], biz = bi[K + j], bin = bi[2 * K + j];
        const T bhr = bh[j], bhz = bh[K + j], bhn = bh[2 * K + j];
        T* r = rs + j * B; T* z = zs + j * B; T* n = ns + j * B; T* hn = hs + j * B;
        GM_CELL_SIMD
        for (long long b = 0; b < B; ++b) {
            const T rv = gm_cell_sigmoid((ir[b] + bir) + (hr[b] + bhr));
            const T hv = hn_[b] + bhn;
            r[b] = rv;
            z[b] = gm_cell_sigmoid((iz[b] + biz) + (hz[b] + bhz));
            hn[b] = hv;
            n[b] = gm_cell_tanh((in_[b] + bin) + rv * hv);
        }
    }
    #pragma omp parallel for num_threads(nt) if(3 * KB >= GM_CELL_PARALLEL_MIN) schedule(static)
    for (long long b = 0; b < B; ++b) {
        #pragma omp simd
        for (long long j = 0; j < K; ++j) {
            const T zv = zs[j * B + b];
            out[b * K + j] = ((T)1 - zv) * ns[j * B + b] + zv * h[b * K + j];
        }
    }
}

// Its gradient for an output gradient g (B, K): the pre-activation gradients of the input
// product, dgi (3K, B), and of the hidden one, dgh (its n rows times r), both transposed as
// the products came; gz = g * z (B, K), the gradient reaching h directly; and the bias
// gradients dbi, dbh (3K), dgi's and dgh's rows summed over the batch in batch order. The
// formulas and their order are the NumPy backward's.
template <typename T> static void gru_cell_backward(const T* g, const T* h, const T* saved, T* dgi, T* dgh, T* gz,
                                                    T* dbi, T* dbh, const long long* d, int nt) {
    const long long B = d[0], K = d[1], KB = K * B;
    const T* rs = saved; const T* zs = saved + KB; const T* ns = saved + 2 * KB; const T* hs = saved + 3 * KB;
    #pragma omp parallel for num_threads(nt) if(3 * KB >= GM_CELL_PARALLEL_MIN) schedule(static)
    for (long long j = 0; j < K; ++j) {
        const T* r = rs + j * B; const T* z = zs + j * B; const T* n = ns + j * B; const T* hn = hs + j * B;
        T* ir = dgi + j * B; T* iz = dgi + (K + j) * B; T* in_ = dgi + (2 * K + j) * B;
        T* hr = dgh + j * B; T* hz = dgh + (K + j) * B; T* hn_ = dgh + (2 * K + j) * B;
        #pragma omp simd
        for (long long b = 0; b < B; ++b) {
            const T G = g[b * K + j], H = h[b * K + j];
            const T rv = r[b], zv = z[b], nv = n[b];
            const T dn = (G * ((T)1 - zv)) * ((T)1 - nv * nv);
            const T dz = (G * (H - nv)) * (zv * ((T)1 - zv));
            const T dr = (dn * hn[b]) * (rv * ((T)1 - rv));
            ir[b] = dr; iz[b] = dz; in_[b] = dn;
            hr[b] = dr; hz[b] = dz; hn_[b] = dn * rv;
            gz[b * K + j] = G * zv;
        }
        T sr = (T)0, sz = (T)0, sn = (T)0, shn = (T)0;  // in batch order, as NumPy sums axis 0
        for (long long b = 0; b < B; ++b) { sr += ir[b]; sz += iz[b]; sn += in_[b]; shn += hn_[b]; }
        dbi[j] = sr; dbi[K + j] = sz; dbi[2 * K + j] = sn;
        dbh[j] = sr; dbh[K + j] = sz; dbh[2 * K + j] = shn;
    }
}

// The LSTM cell's gates likewise (PyTorch's i, f, g, o): gi = W_ih x^T, gh = W_hh h^T (4K, B),
//   gates = (gi + b_ih) + (gh + b_hh); i, f, o = sigmoid, g = tanh of their rows;
//   c' = f * c + i * g, h' = o * tanh(c'); h, c, h' and c' are (B, K);
// saved = i, f, g, o, tanh(c'), each (K, B). d = [B, K].
template <typename T> static void lstm_cell(const T* gi, const T* gh, const T* bi, const T* bh, const T* c, T* h2,
                                            T* c2, T* saved, const long long* d, int nt) {
    const long long B = d[0], K = d[1], KB = K * B;
    #pragma omp parallel for num_threads(nt) if(4 * KB >= GM_CELL_PARALLEL_MIN) schedule(static)
    for (long long j = 0; j < K; ++j) {
        const long long rows[4] = {j, K + j, 2 * K + j, 3 * K + j};
        T* sv[4];
        for (int q = 0; q < 4; ++q) sv[q] = saved + q * KB + j * B;
        const T* x0 = gi + rows[0] * B; const T* x1 = gi + rows[1] * B; const T* x2 = gi + rows[2] * B;
        const T* x3 = gi + rows[3] * B;
        const T* y0 = gh + rows[0] * B; const T* y1 = gh + rows[1] * B; const T* y2 = gh + rows[2] * B;
        const T* y3 = gh + rows[3] * B;
        const T a0 = bi[rows[0]], a1 = bi[rows[1]], a2 = bi[rows[2]], a3 = bi[rows[3]];
        const T e0 = bh[rows[0]], e1 = bh[rows[1]], e2 = bh[rows[2]], e3 = bh[rows[3]];
        T* si = sv[0]; T* sf = sv[1]; T* sg = sv[2]; T* so = sv[3];
        GM_CELL_SIMD
        for (long long b = 0; b < B; ++b) {
            si[b] = gm_cell_sigmoid((x0[b] + a0) + (y0[b] + e0));
            sf[b] = gm_cell_sigmoid((x1[b] + a1) + (y1[b] + e1));
            sg[b] = gm_cell_tanh((x2[b] + a2) + (y2[b] + e2));
            so[b] = gm_cell_sigmoid((x3[b] + a3) + (y3[b] + e3));
        }
    }
    const T* si = saved; const T* sf = saved + KB; const T* sg = saved + 2 * KB; const T* so = saved + 3 * KB;
    T* st = saved + 4 * KB;
    #pragma omp parallel for num_threads(nt) if(4 * KB >= GM_CELL_PARALLEL_MIN) schedule(static)
    for (long long b = 0; b < B; ++b) {
        #pragma omp simd
        for (long long j = 0; j < K; ++j) {
            const long long q = j * B + b;
            const T cv = sf[q] * c[b * K + j] + si[q] * sg[q];
            const T tv = gm_cell_tanh(cv);
            c2[b * K + j] = cv;
            st[q] = tv;
            h2[b * K + j] = so[q] * tv;
        }
    }
}

// Its gradient for output gradients gh2, gc2 (B, K): the gates' pre-activation gradients
// dg (4K, B), the same for both products; dc = gc2 + gh2 * o * (1 - tanh(c')^2) times f,
// the cell state's gradient (B, K); the bias gradient db (4K), dg's rows summed in batch
// order. The NumPy backward's formulas in its order.
template <typename T> static void lstm_cell_backward(const T* gh2, const T* gc2, const T* c, const T* saved, T* dg,
                                                     T* dcp, T* db, const long long* d, int nt) {
    const long long B = d[0], K = d[1], KB = K * B;
    const T* si = saved; const T* sf = saved + KB; const T* sg = saved + 2 * KB; const T* so = saved + 3 * KB;
    const T* st = saved + 4 * KB;
    #pragma omp parallel for num_threads(nt) if(4 * KB >= GM_CELL_PARALLEL_MIN) schedule(static)
    for (long long j = 0; j < K; ++j) {
        T* d0 = dg + j * B; T* d1 = dg + (K + j) * B; T* d2 = dg + (2 * K + j) * B; T* d3 = dg + (3 * K + j) * B;
        #pragma omp simd
        for (long long b = 0; b < B; ++b) {
            const long long q = j * B + b;
            const T H = gh2[b * K + j], C = c[b * K + j];
            const T iv = si[q], fv = sf[q], gv = sg[q], ov = so[q], tv = st[q];
            const T dc = gc2[b * K + j] + (H * ov) * ((T)1 - tv * tv);
            d0[b] = (dc * gv) * (iv * ((T)1 - iv));
            d1[b] = (dc * C) * (fv * ((T)1 - fv));
            d2[b] = (dc * iv) * ((T)1 - gv * gv);
            d3[b] = (H * tv) * (ov * ((T)1 - ov));
            dcp[b * K + j] = dc * fv;
        }
        T s0 = (T)0, s1 = (T)0, s2 = (T)0, s3 = (T)0;  // in batch order, as NumPy sums axis 0
        for (long long b = 0; b < B; ++b) { s0 += d0[b]; s1 += d1[b]; s2 += d2[b]; s3 += d3[b]; }
        db[j] = s0; db[K + j] = s1; db[2 * K + j] = s2; db[3 * K + j] = s3;
    }
}

// Optimizer updates over a list of tensors at once (eager/optim: PyTorch's foreach updates),
// one pass per element where NumPy's in-place update took a dozen passes over the whole
// group (and a gather into a flat buffer and a scatter out of it). Each element computes the
// NumPy update's operations in its order, every number rounded to T as NumPy rounds a Python
// float against a T array, with no contraction (-ffp-contract=off): +, *, / and sqrt are
// correctly rounded, so the results are the NumPy update's bits. The threads split each
// tensor into contiguous ranges (elementwise: no result depends on the split).
// a = [dims, hyper, then `per` arrays for each tensor]; dims = [n tensors, flags, size of each].
template <typename T> static inline T gm_nan_max(T a, T b) { return (a != a || a > b) ? a : b; }

// a multi-tensor update's loop over its n tensors: a = [dims, hyper, then `per` buffers per
// tensor], dims = [n, flags, the tensors' lengths]; update(q, lo, hi) updates elements [lo, hi)
// of the tensor whose buffers start at q, each tensor's elements split evenly over the threads
// (threads only when all the tensors together are large). Each thread works on its own copy of
// `update` (firstprivate: a shared closure is read through a pointer that its stores may alias,
// which kept the element loop about 3x slower when measured)
template <typename Update> static void multi_tensor(void* const* a, int nt, long long n, int per, Update update) {
    const long long* d = (const long long*)a[0];
    long long total = 0;
    for (long long i = 0; i < n; ++i) total += d[2 + i];
    #pragma omp parallel num_threads(nt) if(total >= GM_EAGER_PARALLEL_MIN) firstprivate(update)
    {
        const long long t = omp_get_thread_num(), nth = omp_get_num_threads();
        for (long long i = 0; i < n; ++i) {
            const long long len = d[2 + i];
            update(a + 2 + i * per, len * t / nth, len * (t + 1) / nth);
        }
    }
}

// Adam/AdamW: per tensor P, G, m, v (and AMSGrad's max). flags: 1 amsgrad, 2 decoupled decay,
// 4 maximize, 8 weight decay != 0. hyper = [1 - beta1, beta1, 1 - beta2, beta2, eps, weight_decay,
// 1 - lr * weight_decay, sqrt(1 - beta2**t), lr / (1 - beta1**t)]
template <typename T> static void adam_multi(void* const* a, int nt) {
    const long long* d = (const long long*)a[0];
    const double* hp = (const double*)a[1];
    const long long n = d[0], flags = d[1];
    const bool ams = flags & 1, decoupled = flags & 2, maximize = flags & 4, decay = flags & 8;
    const int per = ams ? 5 : 4;
    const T c1 = (T)hp[0], b1 = (T)hp[1], c2 = (T)hp[2], b2 = (T)hp[3], eps = (T)hp[4], wd = (T)hp[5];
    const T keep = (T)hp[6], bias2 = (T)hp[7], step = (T)hp[8];
    multi_tensor(a, nt, n, per, [=](void* const* q, long long lo, long long hi) {
        T* P = (T*)q[0]; const T* G = (const T*)q[1]; T* m = (T*)q[2]; T* v = (T*)q[3];
        T* mx = ams ? (T*)q[4] : (T*)0;
        #pragma omp simd
        for (long long j = lo; j < hi; ++j) {
            T g = maximize ? -G[j] : G[j];
            T p = P[j];
            if (decay) {
                if (decoupled) p = p * keep;
                else g = g + p * wd;
            }
            T tmp = g * c1;
            const T mm = m[j] * b1 + tmp;
            m[j] = mm;
            tmp = g * g;
            tmp = tmp * c2;
            T vv = v[j] * b2 + tmp;
            v[j] = vv;
            if (ams) { vv = gm_nan_max(mx[j], vv); mx[j] = vv; }
            T den = (T)sqrt(vv);
            den = den / bias2;
            den = den + eps;
            T up = mm / den;
            up = up * step;
            P[j] = p - up;
        }
    });
}

// SGD with momentum: per tensor P, G (and the momentum buffer). flags: 1 momentum, 2 first
// step (the buffer is the gradient), 4 nesterov, 8 maximize, 16 weight decay != 0, 32
// dampening != 0. hyper = [weight_decay, momentum, 1 - dampening, -lr]
template <typename T> static void sgd_multi(void* const* a, int nt) {
    const long long* d = (const long long*)a[0];
    const double* hp = (const double*)a[1];
    const long long n = d[0], flags = d[1];
    const bool mom = flags & 1, first = flags & 2, nesterov = flags & 4, maximize = flags & 8;
    const bool decay = flags & 16, damp = flags & 32;
    const int per = mom ? 3 : 2;
    const T wd = (T)hp[0], mu = (T)hp[1], keep = (T)hp[2], neg_lr = (T)hp[3];
    multi_tensor(a, nt, n, per, [=](void* const* q, long long lo, long long hi) {
        T* P = (T*)q[0]; const T* G = (const T*)q[1]; T* buf = mom ? (T*)q[2] : (T*)0;
        #pragma omp simd
        for (long long j = lo; j < hi; ++j) {
            T g = maximize ? -G[j] : G[j];
            const T p = P[j];
            if (decay) g = g + p * wd;
            if (mom) {
                T b;
                if (first) b = g;
                else { b = buf[j] * mu; b = b + (damp ? g * keep : g); }
                buf[j] = b;
                g = nesterov ? g + b * mu : b;
            }
            P[j] = p + g * neg_lr;
        }
    });
}

// the entry points: void k(void* const* args, int threads); dims are an int64 array, eps a
// float64 array of one element
#define GM_EAGER_UNARY(name, T, suffix) \
    extern "C" void gm_eager_##name##_##suffix(void* const* a, int nt) { \
        name<T>((const T*)a[0], (T*)a[1], ((const long long*)a[2])[0], nt); }
#define GM_EAGER_ALL(T, suffix) \
    extern "C" void gm_eager_take_middle_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[3]; \
        take_middle<T>((const T*)a[0], (const long long*)a[1], (T*)a[2], d[0], d[1], d[2], nt); } \
    extern "C" void gm_eager_embedding_backward_##suffix(void* const* a, int nt) { \
        embedding_backward<T>((const T*)a[0], (const long long*)a[1], (T*)a[2], (const long long*)a[3], nt); } \
    extern "C" void gm_eager_gru_cell_##suffix(void* const* a, int nt) { \
        gru_cell<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (const T*)a[3], (const T*)a[4], (T*)a[5], \
                    (T*)a[6], (const long long*)a[7], nt); } \
    extern "C" void gm_eager_gru_cell_backward_##suffix(void* const* a, int nt) { \
        gru_cell_backward<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], (T*)a[4], (T*)a[5], \
                             (T*)a[6], (T*)a[7], (const long long*)a[8], nt); } \
    extern "C" void gm_eager_lstm_cell_##suffix(void* const* a, int nt) { \
        lstm_cell<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (const T*)a[3], (const T*)a[4], (T*)a[5], \
                     (T*)a[6], (T*)a[7], (const long long*)a[8], nt); } \
    extern "C" void gm_eager_lstm_cell_backward_##suffix(void* const* a, int nt) { \
        lstm_cell_backward<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (const T*)a[3], (T*)a[4], (T*)a[5], \
                              (T*)a[6], (const long long*)a[7], nt); } \
    extern "C" void gm_eager_adam_multi_##suffix(void* const* a, int nt) { adam_multi<T>(a, nt); } \
    extern "C" void gm_eager_sgd_multi_##suffix(void* const* a, int nt) { sgd_multi<T>(a, nt); } \
    extern "C" void gm_eager_fold2d_##suffix(void* const* a, int nt) { \
        fold2d<T>((const T*)a[0], (T*)a[1], (const long long*)a[2], nt); } \
    extern "C" void gm_eager_fold2d_batch_major_##suffix(void* const* a, int nt) { \
        fold2d<T, true>((const T*)a[0], (T*)a[1], (const long long*)a[2], nt); } \
    extern "C" void gm_eager_argmax_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[2]; \
        arg_extreme<T, true>((const T*)a[0], (long long*)a[1], d[0], d[1], d[2], nt); } \
    extern "C" void gm_eager_argmin_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[2]; \
        arg_extreme<T, false>((const T*)a[0], (long long*)a[1], d[0], d[1], d[2], nt); } \
    GM_EAGER_UNARY(gelu_none, T, suffix) \
    GM_EAGER_UNARY(gelu_tanh, T, suffix) \
    GM_EAGER_UNARY(gelu_grad, T, suffix) \
    extern "C" void gm_eager_gelu_and_grad_##suffix(void* const* a, int nt) { \
        if constexpr (sizeof(T) == 4) \
            gelu_and_grad((const float*)a[0], (float*)a[1], (float*)a[2], ((const long long*)a[3])[0], nt); \
        else { gelu_none<T>((const T*)a[0], (T*)a[1], ((const long long*)a[3])[0], nt); \
               gelu_grad<T>((const T*)a[0], (T*)a[2], ((const long long*)a[3])[0], nt); } } \
    extern "C" void gm_eager_gelu_backward_##suffix(void* const* a, int nt) { \
        gelu_backward<T>((const T*)a[0], (const T*)a[1], (T*)a[2], ((const long long*)a[3])[0], nt); } \
    GM_EAGER_UNARY(tanh_map, T, suffix) \
    GM_EAGER_UNARY(exp_map, T, suffix) \
    extern "C" void gm_eager_layer_norm_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[4]; \
        layer_norm<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], d[0], d[1], \
                      ((const double*)a[5])[0], nt); } \
    extern "C" void gm_eager_layer_norm_backward_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[7]; \
        layer_norm_backward<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], (T*)a[4], (T*)a[5], \
                               (double*)a[6], d[0], d[1], ((const double*)a[8])[0], nt); } \
    extern "C" void gm_eager_layer_norm_stats_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[4]; \
        layer_norm<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], d[0], d[1], \
                      ((const double*)a[5])[0], nt, (double*)a[6]); } \
    extern "C" void gm_eager_layer_norm_backward_stats_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[7]; \
        layer_norm_backward<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], (T*)a[4], (T*)a[5], \
                               (double*)a[6], d[0], d[1], ((const double*)a[8])[0], nt, (const double*)a[9]); }
// channel kernels: dims = [N, C, S, x's sn, x's sc, g's sn, g's sc, out's sn, out's sc] (elements)
#define GM_EAGER_CHANNELS(T, suffix) \
    extern "C" void gm_eager_channel_moments_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[3]; \
        channel_moments<T>((const T*)a[0], (double*)a[1], (double*)a[2], gm_nc{d[0], d[1], d[2], d[3], d[4]}, nt); } \
    extern "C" void gm_eager_channel_normalize_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[2]; \
        channel_normalize<T>((const T*)a[0], (T*)a[1], gm_nc{d[0], d[1], d[2], d[3], d[4]}, \
                             gm_nc{d[0], d[1], d[2], d[7], d[8]}, ((const double*)a[3])[0], nt); } \
    extern "C" void gm_eager_channel_normalize_backward_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[3]; \
        channel_normalize_backward<T>((const T*)a[0], (const T*)a[1], (T*)a[2], gm_nc{d[0], d[1], d[2], d[3], d[4]}, \
                                      gm_nc{d[0], d[1], d[2], d[5], d[6]}, gm_nc{d[0], d[1], d[2], d[7], d[8]}, \
                                      ((const double*)a[4])[0], nt); }
