"""Native kernels for eager's heaviest NumPy ops: layer_norm and its gradient, batch norm's
per-channel statistics, normalization and gradient, GELU (both forms) with the exact form's
derivative, tanh and exp of large arrays, argmax/argmin along a middle axis (max-pooling's
windows), the 2-d fold (col2im) of convolution and pooling gradients, and matmul's row
blocks (one BLAS call per thread, for eager and the generated code alike).

Why: NumPy runs one whole-array pass per ufunc on one thread, so an op whose formula has a
dozen steps (the row statistics, scaling and affine part of layer_norm; the erf polynomial
of exact GELU) costs a dozen passes. PyTorch's eager kernels do each in one threaded pass,
which left eager 3x behind on layer_norm and GELU at a fifth of a GPT training step. These
kernels are shape-generic C++ written once (one translation unit per dtype, compiled the
first time an op needs it and then loaded from the same disk cache as the native backend's
kernels; a failed build leaves that dtype to the NumPy code),
over the same helper layer as the compiled kernels (`c_helpers`: gm_gelu_none,
gm_gelu_grad and the vectorized math functions), so eager and the native backend compute
GELU with the same expression.

They are used only where they can be: NumPy arrays of float32 or float64, a C++ compiler
found (codegen.native_build's probe), and GRAPHMODE_EAGER_NATIVE not set to 0. Otherwise the
ops' NumPy code runs, unchanged, and the test suite checks that the two agree. Statistics
and column sums accumulate in double per thread; per-thread partial sums are combined in
thread order, so a result depends on the thread count (GRAPHMODE_THREADS) only, never on
timing.
"""
from __future__ import annotations

import functools
import os
import threading

import numpy as np

from eager.ops.linalg import GEMM_SPLIT_MIN

from .c_helpers import PREAMBLE, host_prelude

KERNELS = r"""
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

template <typename T> static void gelu_none(const T* x, T* y, long long n, int nt) {
    blocked_map(x, y, n, nt, [](T v) { return gm_gelu_none(v); });
}

template <typename T> static void gelu_tanh(const T* x, T* y, long long n, int nt) {
    blocked_map(x, y, n, nt, [](T v) { return gm_gelu_tanh(v); });
}

template <typename T> static void gelu_grad(const T* x, T* y, long long n, int nt) {
    blocked_map(x, y, n, nt, [](T v) { return gm_gelu_grad(v); });
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
template <typename T> static void layer_norm(const T* x, const T* w, const T* b, T* y, long long groups,
                                             long long n, double eps, int nt) {
    #pragma omp parallel for num_threads(nt) if(groups * n >= GM_EAGER_PARALLEL_MIN) schedule(static)
    for (long long r = 0; r < groups; ++r) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        double mean, rstd;
        row_moments(xr, n, eps, &mean, &rstd);
        const T m = (T)mean, s = (T)rstd;
        #pragma omp simd
        for (long long j = 0; j < n; ++j) yr[j] = ((xr[j] - m) * s) * w[j] + b[j];
    }
}

// With s = x - mean and xhat = s * rstd per row:
//   gx = rstd * (g w - sum(g w) / n) - s * rstd^3 / n * sum(g w s)
//   gw = sum over rows of g * xhat,  gb = sum over rows of g
// gw and gb accumulate per thread in `part` (2 * n doubles per thread), added in thread order.
template <typename T> static void layer_norm_backward(const T* g, const T* x, const T* w, T* gx, T* gw, T* gb,
                                                      double* part, long long groups, long long n, double eps,
                                                      int nt) {
    int used = 1;
    #pragma omp parallel num_threads(nt) if(groups * n >= GM_EAGER_PARALLEL_MIN)
    {
        const int t = omp_get_thread_num(), nth = omp_get_num_threads();
        if (t == 0) used = nth;
        double* pw = part + (long long)t * 2 * n;
        double* pb = pw + n;
        for (long long j = 0; j < n; ++j) { pw[j] = 0.0; pb[j] = 0.0; }
        const long long lo = groups * t / nth, hi = groups * (t + 1) / nth;
        for (long long r = lo; r < hi; ++r) {
            const T* gr = g + r * n;
            const T* xr = x + r * n;
            T* out = gx + r * n;
            double mean, rstd;
            row_moments(xr, n, eps, &mean, &rstd);
            double sum_gw = 0.0, sum_gws = 0.0;
            #pragma omp simd reduction(+:sum_gw, sum_gws)
            for (long long j = 0; j < n; ++j) {
                const double gwj = (double)gr[j] * (double)w[j];
                sum_gw += gwj;
                sum_gws += gwj * ((double)xr[j] - mean);
            }
            // in double: g w - mean(g w) and x - mean cancel exactly where they should (one
            // element per row gives a zero gradient, not rstd times a rounding error)
            const double mean_gw = sum_gw / (double)n;
            const double c = rstd * rstd * rstd * sum_gws / (double)n;
            #pragma omp simd
            for (long long j = 0; j < n; ++j) {
                const double gj = (double)gr[j], s = (double)xr[j] - mean;
                out[j] = (T)(rstd * (gj * (double)w[j] - mean_gw) - s * c);
                pw[j] += gj * (s * rstd);
                pb[j] += gj;
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
template <typename T> static void fold2d(const T* cols, T* out, const long long* d, int nt) {
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
                    const T* src = cols + (((c * KH + kh) * KW + kw) * N + n) * window;
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
    extern "C" void gm_eager_fold2d_##suffix(void* const* a, int nt) { \
        fold2d<T>((const T*)a[0], (T*)a[1], (const long long*)a[2], nt); } \
    extern "C" void gm_eager_argmax_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[2]; \
        arg_extreme<T, true>((const T*)a[0], (long long*)a[1], d[0], d[1], d[2], nt); } \
    extern "C" void gm_eager_argmin_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[2]; \
        arg_extreme<T, false>((const T*)a[0], (long long*)a[1], d[0], d[1], d[2], nt); } \
    GM_EAGER_UNARY(gelu_none, T, suffix) \
    GM_EAGER_UNARY(gelu_tanh, T, suffix) \
    GM_EAGER_UNARY(gelu_grad, T, suffix) \
    GM_EAGER_UNARY(tanh_map, T, suffix) \
    GM_EAGER_UNARY(exp_map, T, suffix) \
    extern "C" void gm_eager_layer_norm_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[4]; \
        layer_norm<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], d[0], d[1], \
                      ((const double*)a[5])[0], nt); } \
    extern "C" void gm_eager_layer_norm_backward_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[7]; \
        layer_norm_backward<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], (T*)a[4], (T*)a[5], \
                               (double*)a[6], d[0], d[1], ((const double*)a[8])[0], nt); }
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
"""

# matmul's row blocks: a translation unit of its own, small enough to compile in a fraction
# of the kernels' time (the first large product of a process on a fresh machine waits for it)
GEMM = r"""
#include <omp.h>

// a matrix product C = op(A) op(B) as `parts` BLAS calls, each on its own consecutive rows of
// C, run by the OpenMP threads: BLAS (on one thread of its own) is handed one row block per
// thread without Python's thread hand-off (about 50 us a product, as much as a 512x64x256
// product costs on one core). The blocks depend on `parts` only, never on which thread runs
// one, so the bits of C depend on the thread count, not on timing. fn is NumPy's own BLAS
// (cblas_?gemm, 64- or 32-bit integers: I); d = [M, N, K, A transposed, B transposed, parts,
// 64-bit integers].
template <typename T, typename I> using gm_gemm_fn = void (*)(int, int, int, I, I, I, T, const T*, I, const T*, I,
                                                             T, T*, I);
template <typename T, typename I> static void gemm_rows(const void* fn, const T* a, const T* b, T* c,
                                                        const long long* d, int nt) {
    enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
    const gm_gemm_fn<T, I> gemm = (gm_gemm_fn<T, I>)fn;
    const long long M = d[0], N = d[1], K = d[2], parts = d[5];
    const bool ta = d[3] != 0, tb = d[4] != 0;
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (long long p = 0; p < parts; ++p) {
        const long long lo = M * p / parts, hi = M * (p + 1) / parts;
        if (hi > lo)
            gemm(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (I)(hi - lo), (I)N, (I)K, (T)1,
                 ta ? a + lo : a + lo * K, (I)(ta ? M : K), b, (I)(tb ? K : N), (T)0, c + lo * N, (I)N);
    }
}

#define GM_EAGER_GEMM(T, suffix) \
    extern "C" void gm_eager_gemm_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[3]; \
        const void* fn = (const void*)((const long long*)a[4])[0]; \
        if (d[6]) gemm_rows<T, long long>(fn, (const T*)a[0], (const T*)a[1], (T*)a[2], d, nt); \
        else gemm_rows<T, int>(fn, (const T*)a[0], (const T*)a[1], (T*)a[2], d, nt); }
GM_EAGER_GEMM(float, f32)
GM_EAGER_GEMM(double, f64)
"""

# NumPy's PCG64 generator, reproduced bit for bit, its outputs shared out among the threads.
# Generator.random(n, dtype=float32) costs NumPy about 4 ns a number (a call through a
# function pointer each); a dropout layer draws one per activation, 300 000 a step of the
# tiny GPT (W5): 1.2 ms. Here each thread jumps the LCG ahead to its first output (PCG's
# advance by squaring) and steps from there, so output j is the same number whichever thread
# computes it: the results and the generator's final state equal NumPy's exactly (checked
# against NumPy in tests/eager/test_uniform_draws.py).
#   state' = state * MULT + inc (128-bit); output = rotr64(hi ^ lo, state' >> 122)
#   float32: next_uint32 >> 8 times 2**-24, next_uint32 taking the low then the high half of
#            an output (the high half kept in the state as `uinteger` until used)
#   float64: output >> 11 times 2**-53 (no halves)
# p = [state hi, state lo, inc hi, inc lo, has_uint32, uinteger, n], updated in place.
RANDOM = r"""
#include <omp.h>
typedef unsigned __int128 gm_u128;
typedef unsigned long long gm_u64;
static const gm_u128 GM_PCG_MULT = ((gm_u128)0x2360ED051FC65DA4ULL << 64) | 0x4385DF649FCCF645ULL;

static inline gm_u64 gm_pcg_output(gm_u128 s) {
    const gm_u64 x = (gm_u64)(s >> 64) ^ (gm_u64)s;
    const unsigned rot = (unsigned)(s >> 122);
    return (x >> rot) | (x << ((64u - rot) & 63u));
}

// the state `delta` steps after s
static gm_u128 gm_pcg_advance(gm_u128 s, gm_u128 delta, gm_u128 inc) {
    gm_u128 acc_mult = 1, acc_plus = 0, cur_mult = GM_PCG_MULT, cur_plus = inc;
    while (delta > 0) {
        if (delta & 1) {
            acc_mult *= cur_mult;
            acc_plus = acc_plus * cur_mult + cur_plus;
        }
        cur_plus = (cur_mult + 1) * cur_plus;
        cur_mult *= cur_mult;
        delta >>= 1;
    }
    return acc_mult * s + acc_plus;
}

// outputs [0, count) of the generator at s, each handed to put(j, output) by one thread. A
// step waits for the previous one's 128-bit multiply: each thread runs four lanes (four parts
// of its range, each from its own jumped-to state) so that four multiplies are in flight.
template <typename Put> static void gm_pcg_outputs(gm_u128 s, gm_u128 inc, long long count, int nt, Put put) {
    #pragma omp parallel num_threads(nt) if(count >= (1LL << 14))
    {
        const long long t = omp_get_thread_num(), nth = omp_get_num_threads();
        const long long lo = count * t / nth, hi = count * (t + 1) / nth, len = (hi - lo) / 4;
        const long long a0 = lo, a1 = lo + len, a2 = lo + 2 * len, a3 = lo + 3 * len;  // lane 3 takes the rest
        gm_u128 x0 = gm_pcg_advance(s, (gm_u128)a0, inc), x1 = gm_pcg_advance(s, (gm_u128)a1, inc);
        gm_u128 x2 = gm_pcg_advance(s, (gm_u128)a2, inc), x3 = gm_pcg_advance(s, (gm_u128)a3, inc);
        for (long long i = 0; i < len; ++i) {
            x0 = x0 * GM_PCG_MULT + inc;
            x1 = x1 * GM_PCG_MULT + inc;
            x2 = x2 * GM_PCG_MULT + inc;
            x3 = x3 * GM_PCG_MULT + inc;
            put(a0 + i, gm_pcg_output(x0));
            put(a1 + i, gm_pcg_output(x1));
            put(a2 + i, gm_pcg_output(x2));
            put(a3 + i, gm_pcg_output(x3));
        }
        for (long long j = a3 + len; j < hi; ++j) {
            x3 = x3 * GM_PCG_MULT + inc;
            put(j, gm_pcg_output(x3));
        }
    }
}

extern "C" void gm_eager_uniform_f32(void* const* a, int nt) {
    float* out = (float*)a[0];
    gm_u64* p = (gm_u64*)a[1];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    const float scale = 1.0f / 16777216.0f;
    long long first = 0;
    if (n > 0 && p[4]) {  // the high half NumPy kept from its last output
        out[0] = (float)((unsigned)p[5] >> 8) * scale;
        p[4] = 0;
        first = 1;
    }
    const long long m = n - first, count = (m + 1) / 2;
    float* o = out + first;
    gm_pcg_outputs(s, inc, count, nt, [=](long long j, gm_u64 v) {
        o[2 * j] = (float)((unsigned)v >> 8) * scale;
        if (2 * j + 1 < m) o[2 * j + 1] = (float)((unsigned)(v >> 32) >> 8) * scale;
    });
    if (count > 0) {
        const gm_u128 end = gm_pcg_advance(s, (gm_u128)count, inc);
        p[0] = (gm_u64)(end >> 64);
        p[1] = (gm_u64)end;
        p[4] = (gm_u64)(m & 1);
        p[5] = gm_pcg_output(end) >> 32;
    }
}

extern "C" void gm_eager_uniform_f64(void* const* a, int nt) {
    double* out = (double*)a[0];
    gm_u64* p = (gm_u64*)a[1];
    const gm_u128 s = ((gm_u128)p[0] << 64) | p[1], inc = ((gm_u128)p[2] << 64) | p[3];
    const long long n = (long long)p[6];
    gm_pcg_outputs(s, inc, n, nt, [=](long long j, gm_u64 v) { out[j] = (double)(v >> 11) * (1.0 / 9007199254740992.0); });
    const gm_u128 end = gm_pcg_advance(s, (gm_u128)n, inc);
    p[0] = (gm_u64)(end >> 64);
    p[1] = (gm_u64)end;
}
"""
# the standalone translation units, by the prefix of their kernels' names (the others are
# one library per dtype suffix)
_UNITS = {"gm_eager_gemm_": "gemm", "gm_eager_uniform_": "random"}

_SUFFIX = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_I64, _F64 = np.dtype(np.int64), np.dtype(np.float64)


# one library per dtype, each built the first time an op needs it: most programs use float32
# only, and the two together took twice as long to compile (about 1 s) as one
INSTANTIATE = {"f32": "GM_EAGER_CHANNELS(float, f32)\nGM_EAGER_ALL(float, f32)\n",
               "f64": "GM_EAGER_CHANNELS(double, f64)\nGM_EAGER_ALL(double, f64)\n"}


class _Kernels:
    """The loaded libraries (by dtype suffix) and a caller."""

    def __init__(self) -> None:
        from . import native_build  # noqa: PLC0415  (imports NumPy-side machinery only when used)

        self._build = native_build
        self._prelude = host_prelude(native_build.toolchain().vector_math) + "\n" + PREAMBLE + "\n" + KERNELS
        self.call = native_build.caller()
        self.threads = native_build.threads
        self._formats = functools.lru_cache(maxsize=256)(native_build.formats)
        self._addresses: dict = {}
        self._libraries: dict = {}
        self._lock = threading.Lock()

    def formats(self, dtype_names: tuple) -> bytes:
        """The call path's type codes of the buffers (cached: the same few tuples recur)."""
        return self._formats(dtype_names)

    def source(self, suffix: str) -> str:
        """The translation unit of one dtype's kernels, of matmul's row blocks ("gemm") or of
        the random draws ("random")."""
        return {"gemm": GEMM, "random": RANDOM}.get(suffix) or self._prelude + INSTANTIATE[suffix]

    def address(self, name: str) -> int | None:
        """The kernel's address (its name ends in the dtype suffix), building that dtype's
        library first if this is its first use; None when that build failed."""
        found = self._addresses.get(name)
        if found is None:
            unit = next((u for prefix, u in _UNITS.items() if name.startswith(prefix)), None)
            suffix = unit or name.rsplit("_", 1)[1]
            with self._lock:
                if suffix not in self._libraries:
                    try:
                        self._libraries[suffix] = self._build.load_library(
                            self.source(suffix), f"gm_eager_{unit}" if unit else f"gm_eager_kernels_{suffix}")
                    except (self._build.NativeCompileError, OSError):
                        self._libraries[suffix] = None  # NumPy code from now on, for this dtype
                library = self._libraries[suffix]
            if library is None:
                return None
            found = self._addresses[name] = library.address(name)
        return found

    def run(self, name: str, threads: int, sizes: tuple, formats: bytes, *buffers) -> bool:
        """Call kernel `name` on the buffers; False (nothing run) when its library could not
        be built."""
        address = self.address(name)
        if address is None:
            return False
        self.call(address, threads, sizes, formats, *buffers)
        return True


_state: dict = {}
_lock = threading.Lock()


def kernels() -> _Kernels | None:
    """The native kernels, or None where they cannot be used (no compiler, switched off with
    GRAPHMODE_EAGER_NATIVE=0, or the build failed: NumPy code runs then)."""
    if "k" in _state:
        return _state["k"]
    with _lock:
        if "k" not in _state:
            _state["k"] = _load()
    return _state["k"]


def _load() -> _Kernels | None:
    if os.environ.get("GRAPHMODE_EAGER_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    from . import native_build  # noqa: PLC0415

    if not native_build.availability()[0]:
        return None
    try:
        return _Kernels()
    except (native_build.NoCompiler, native_build.NativeCompileError, OSError):
        return None


# numbers from which a draw runs here: below, the state's round trip through Python (about
# 10 us) costs more than NumPy's own loop
UNIFORM_MIN = 1 << 13
_MASK64 = (1 << 64) - 1


def uniform(g, shape: tuple, dtype) -> np.ndarray | None:
    """g.random(shape, dtype) for a NumPy Generator on PCG64, float32 or float64: the same
    numbers and the same final state as NumPy's, drawn by the threads (RANDOM above); None
    where it does not apply (another bit generator, a small draw, no compiler)."""
    dt = np.dtype(dtype)
    suffix = _SUFFIX.get(dt)
    bits = getattr(g, "bit_generator", None)
    if suffix is None or type(g) is not np.random.Generator or type(bits) is not np.random.PCG64:
        return None
    n = 1
    for d in shape:
        n *= int(d)
    if n < UNIFORM_MIN:
        return None
    k = kernels()
    if k is None or k.address(f"gm_eager_uniform_{suffix}") is None:
        return None
    out = np.empty(shape, dt)
    with bits.lock:  # as NumPy's own draws hold it
        state = bits.state
        s, inc = state["state"]["state"], state["state"]["inc"]
        p = np.array([s >> 64, s & _MASK64, inc >> 64, inc & _MASK64, state["has_uint32"], state["uinteger"], n],
                     np.uint64)
        if not k.run(f"gm_eager_uniform_{suffix}", k.threads(), (-out.nbytes, -p.nbytes),
                     k.formats((dt.name, "uint64")), out, p):
            return None
        state["state"]["state"] = (int(p[0]) << 64) | int(p[1])
        state["has_uint32"], state["uinteger"] = int(p[4]), int(p[5])
        bits.state = state
    return out


def address(name: str) -> int | None:
    """Kernel `name`'s address, for generated code that calls eager's kernels straight
    (codegen.native_gen.EAGER_KERNEL_OPS); None where eager's kernels cannot be used."""
    k = kernels()
    return None if k is None else k.address(name)


def reset() -> None:
    """Forget the loaded kernels (the next use looks at GRAPHMODE_EAGER_NATIVE again)."""
    with _lock:
        _state.clear()


def _usable(*arrays) -> str | None:
    """The kernel suffix when every array is a C-contiguous NumPy array of one float dtype."""
    first = arrays[0]
    suffix = _SUFFIX.get(first.dtype) if type(first) is np.ndarray else None
    if suffix is None:
        return None
    for a in arrays:
        if type(a) is not np.ndarray or a.dtype != first.dtype or not a.flags.c_contiguous:
            return None
    return suffix


def _unary(name: str, x) -> np.ndarray | None:
    suffix = _usable(x)
    k = kernels() if suffix is not None and x.size else None
    if k is None:
        return None
    out = np.empty(x.shape, x.dtype)
    nbytes = x.nbytes
    if not k.run(f"gm_eager_{name}_{suffix}", k.threads(), (nbytes, -nbytes, 8),
                 k.formats((x.dtype.name, x.dtype.name, "int64")), x, out, np.array([x.size], _I64)):
        return None
    return out


# Elements from which eager's tanh and exp run natively: below, NumPy's own SIMD loops cost
# about as much as the call (and the op's result then does not depend on the build).
LARGE = 1 << 14
# (op, dtype) pairs whose C function is vectorized and within NumPy's own error (c_helpers.MATH:
# float64 exp is a scalar libm call there, no faster than NumPy's)
_MATH_KERNELS = {("tanh", "f32"), ("tanh", "f64"), ("exp", "f32")}


def math(name: str, x) -> np.ndarray | None:
    """tanh or exp of a large float NumPy array in one threaded vector pass, or None."""
    suffix = _usable(x) if type(x) is np.ndarray and x.size >= LARGE else None
    if (name, suffix) not in _MATH_KERNELS:
        return None
    return _unary(f"{name}_map", x)


def gelu(x, approximate: str) -> np.ndarray | None:
    """GELU of a float32/float64 NumPy array in one threaded pass, or None (use NumPy)."""
    return _unary("gelu_tanh" if approximate == "tanh" else "gelu_none", x)


def gelu_grad(x) -> np.ndarray | None:
    """Phi(x) + x phi(x) (exact GELU's derivative) in one pass, or None (use NumPy)."""
    return _unary("gelu_grad", x)


def layer_norm(rows, w, b, eps: float) -> np.ndarray | None:
    """Layer norm of (groups, n) rows with weight and bias of n elements, or None."""
    suffix = _usable(rows, w, b)
    k = kernels() if suffix is not None and rows.size else None
    if k is None:
        return None
    groups, n = rows.shape
    out = np.empty_like(rows)
    dt = rows.dtype.name
    if not k.run(f"gm_eager_layer_norm_{suffix}", k.threads(),
                 (rows.nbytes, w.nbytes, b.nbytes, -out.nbytes, 16, 8), k.formats((dt, dt, dt, dt, "int64", "float64")),
                 rows, w, b, out, np.array([groups, n], _I64), np.array([eps], _F64)):
        return None
    return out


def layer_norm_backward(g, rows, w, eps: float) -> tuple | None:
    """(grad_input, grad_weight, grad_bias) of layer norm over (groups, n) rows, or None."""
    suffix = _usable(g, rows, w)
    k = kernels() if suffix is not None and rows.size else None
    if k is None:
        return None
    groups, n = rows.shape
    nt = k.threads()
    gx = np.empty_like(rows)
    gw = np.empty(n, rows.dtype)
    gb = np.empty(n, rows.dtype)
    part = np.empty((nt, 2, n), _F64)
    dt = rows.dtype.name
    if not k.run(f"gm_eager_layer_norm_backward_{suffix}", nt,
                 (g.nbytes, rows.nbytes, w.nbytes, -gx.nbytes, -gw.nbytes, -gb.nbytes, -part.nbytes, 16, 8),
                 k.formats((dt, dt, dt, dt, dt, dt, "float64", "int64", "float64")),
                 g, rows, w, gx, gw, gb, part, np.array([groups, n], _I64), np.array([eps], _F64)):
        return None
    return gx, gw, gb


def channel_dims(ndim: int, dims) -> bool:
    """Whether `dims` are batch norm's: every dim but the channels (dim 1) of a 3-d or larger
    input (the layout the channel kernels take as (N, C, S))."""
    return ndim >= 3 and tuple(dims) == (0,) + tuple(range(2, ndim))


def _nc_view(a) -> tuple | None:
    """(a C-contiguous view of a's memory, its N stride, its C stride, whether channel-major)
    for an (N, C, ...) float array stored batch-major (NCHW) or channel-major (CNHW: how a
    convolution's output comes out of its matmul), else None."""
    if type(a) is not np.ndarray or a.dtype not in _SUFFIX or a.ndim < 3 or a.size == 0:
        return None
    n, c = a.shape[0], a.shape[1]
    spatial = a.size // (n * c)
    if a.flags.c_contiguous:
        return a, c * spatial, spatial, False
    t = a.swapaxes(0, 1)
    if t.flags.c_contiguous:
        return t, spatial, n * spatial, True
    return None


def _channel_dims(x, xv: tuple, gv: tuple | None = None) -> np.ndarray:
    """The kernels' dims; results are C-contiguous (N, C, ...) whatever x's layout: the
    compiled kernels and most NumPy calls after a batch norm want that layout, and a
    channel-major result cost each of them a copy."""
    n, c = x.shape[0], x.shape[1]
    g = gv if gv is not None else (None, 0, 0)
    spatial = x.size // (n * c)
    return np.array([n, c, spatial, xv[1], xv[2], g[1], g[2], c * spatial, spatial], _I64)


def channel_moments(x) -> tuple | None:
    """(mean, sum of squared deviations) per channel of an (N, C, ...) float array, as float64
    vectors of C; or None (use NumPy)."""
    xv = _nc_view(x)
    k = kernels() if xv is not None else None
    if xv is None or k is None:
        return None
    c = x.shape[1]
    mean, m2 = np.empty(c, _F64), np.empty(c, _F64)
    if not k.run(f"gm_eager_channel_moments_{_SUFFIX[x.dtype]}", k.threads(), (x.nbytes, -8 * c, -8 * c, 72),
                 k.formats((x.dtype.name, "float64", "float64", "int64")), xv[0], mean, m2, _channel_dims(x, xv)):
        return None
    return mean, m2


def channel_normalize(x, eps: float) -> np.ndarray | None:
    """Batch norm without its affine part: (x - mean) / sqrt(biased var + eps) per channel,
    C-contiguous; or None."""
    xv = _nc_view(x)
    k = kernels() if xv is not None else None
    if xv is None or k is None:
        return None
    out = np.empty(x.shape, x.dtype)
    dt = x.dtype.name
    if not k.run(f"gm_eager_channel_normalize_{_SUFFIX[x.dtype]}", k.threads(), (x.nbytes, -x.nbytes, 72, 8),
                 k.formats((dt, dt, "int64", "float64")), xv[0], out, _channel_dims(x, xv), np.array([eps], _F64)):
        return None
    return out


def channel_normalize_backward(g, x, eps: float) -> np.ndarray | None:
    """The gradient of channel_normalize for an output gradient g, C-contiguous; or None."""
    xv, gv = _nc_view(x), _nc_view(g)
    if xv is None or gv is None or g.dtype != x.dtype or g.shape != x.shape:
        return None
    k = kernels()
    if k is None:
        return None
    out = np.empty(x.shape, x.dtype)
    dt = x.dtype.name
    if not k.run(f"gm_eager_channel_normalize_backward_{_SUFFIX[x.dtype]}", k.threads(),
                 (g.nbytes, x.nbytes, -x.nbytes, 72, 8), k.formats((dt, dt, dt, "int64", "float64")),
                 gv[0], xv[0], out, _channel_dims(x, xv, gv), np.array([eps], _F64)):
        return None
    return out


def arg_extreme(name: str, x, dim: int, keepdim: bool) -> np.ndarray | None:
    """argmax or argmin of a C-contiguous float array along `dim` (int64, NumPy's shape and
    rule: the first extreme, NaN counting as one), in one threaded pass; or None."""
    suffix = _usable(x) if type(x) is np.ndarray and x.ndim and x.size else None
    k = kernels() if suffix is not None else None
    if k is None:
        return None
    shape = x.shape
    outer = int(np.prod(shape[:dim], dtype=np.int64))
    inner = int(np.prod(shape[dim + 1:], dtype=np.int64))
    out = np.empty(shape[:dim] + (1,) * keepdim + shape[dim + 1:], np.int64)
    if not k.run(f"gm_eager_{name}_{suffix}", k.threads(), (x.nbytes, -out.nbytes, 24),
                 k.formats((x.dtype.name, "int64", "int64")), x, out, np.array([outer, shape[dim], inner], _I64)):
        return None
    return out


def fold2d(cols, size, kernel, stride, padding, dilation) -> np.ndarray | None:
    """The fold (col2im) of a 2-d window array (C, KH, KW, N, OH, OW) into (N, C, H, W), one
    pass per (channel, sample) plane, the same additions in the same order as the NumPy code;
    or None."""
    suffix = _usable(cols) if type(cols) is np.ndarray and cols.ndim == 6 and cols.size else None
    k = kernels() if suffix is not None else None
    if k is None or len(padding) != 4:
        return None
    c, kh, kw, n, oh, ow = cols.shape
    h, w = size
    out = np.empty((n, c, h, w), cols.dtype)
    dims = np.array([c, kh, kw, n, oh, ow, h, w, stride[0], stride[1], padding[0], padding[2],
                     dilation[0], dilation[1]], _I64)
    if not k.run(f"gm_eager_fold2d_{suffix}", k.threads(), (cols.nbytes, -out.nbytes, dims.nbytes),
                 k.formats((cols.dtype.name, cols.dtype.name, "int64")), cols, out, dims):
        return None
    return out


def embedding_backward(g, indices, num_weights: int) -> np.ndarray | None:
    """The (num_weights, width) gradient of an embedding table from the rows of g (one per
    index, C-contiguous float32/float64) in one pass: each row added in order, from zero (the
    bits of NumPy's add.at; the op's NumPy code uses it for a few rows an index, reduceat's
    sums of sorted runs, equal to rounding, for many);
    None where it does not apply (an index out of range is left to the NumPy code, which
    raises)."""
    suffix = _usable(g) if type(g) is np.ndarray and g.ndim == 2 and g.size else None
    if suffix is None or type(indices) is not np.ndarray or indices.ndim != 1 or len(indices) != g.shape[0]:
        return None
    idx = indices if indices.dtype == _I64 and indices.flags.c_contiguous else np.ascontiguousarray(indices, _I64)
    if int(idx.min()) < 0 or int(idx.max()) >= num_weights:
        return None
    k = kernels()
    if k is None:
        return None
    out = np.empty((num_weights, g.shape[1]), g.dtype)
    if not k.run(f"gm_eager_embedding_backward_{suffix}", k.threads(), (g.nbytes, idx.nbytes, -out.nbytes, 24),
                 k.formats((g.dtype.name, "int64", g.dtype.name, "int64")), g, idx, out,
                 np.array([g.shape[0], g.shape[1], num_weights], _I64)):
        return None
    return out


def take_middle(x, index, dim: int) -> np.ndarray | None:
    """x's values at `index` (int64, x's shape without `dim`) along `dim` of a C-contiguous
    float array, in one threaded pass; or None."""
    suffix = _usable(x) if type(x) is np.ndarray and x.ndim and x.size else None
    if (suffix is None or type(index) is not np.ndarray or index.dtype != _I64 or not index.flags.c_contiguous
            or index.shape != x.shape[:dim] + x.shape[dim + 1:]):
        return None
    k = kernels()
    if k is None:
        return None
    outer = int(np.prod(x.shape[:dim], dtype=np.int64))
    inner = int(np.prod(x.shape[dim + 1:], dtype=np.int64))
    out = np.empty(index.shape, x.dtype)
    if not k.run(f"gm_eager_take_middle_{suffix}", k.threads(), (x.nbytes, index.nbytes, -out.nbytes, 24),
                 k.formats((x.dtype.name, "int64", x.dtype.name, "int64")), x, index, out,
                 np.array([outer, x.shape[dim], inner], _I64)):
        return None
    return out


# -- matmul: BLAS one row block per thread ---------------------------------------------------------
# NumPy's own BLAS, called per row block from the OpenMP threads (gemm_rows above). The names
# NumPy's wheels export (scipy-openblas, 64-bit integers first), and the 32-bit forms of other
# OpenBLAS builds; where none is found, matmul stays NumPy's.
_GEMM_SYMBOLS = (("scipy_cblas_sgemm64_", "scipy_cblas_dgemm64_", 1), ("cblas_sgemm64_", "cblas_dgemm64_", 1),
                 ("scipy_cblas_sgemm", "scipy_cblas_dgemm", 0), ("cblas_sgemm", "cblas_dgemm", 0))


@functools.lru_cache(maxsize=1)
def blas_gemm() -> tuple | None:
    """({dtype: address of cblas_?gemm}, 64-bit integers) of the BLAS that NumPy loaded, or None."""
    import ctypes  # noqa: PLC0415

    from .runtime import numpy_openblas  # noqa: PLC0415

    for lib in numpy_openblas():
        for single, double, ilp64 in _GEMM_SYMBOLS:
            fs, fd = getattr(lib, single, None), getattr(lib, double, None)
            if fs is not None and fd is not None:
                address = {np.dtype(np.float32): ctypes.cast(fs, ctypes.c_void_p).value,
                           np.dtype(np.float64): ctypes.cast(fd, ctypes.c_void_p).value}
                return address, ilp64
    return None


def _gemm_operand(x) -> tuple | None:
    """(C-contiguous buffer, transposed) of a 2-d operand: x itself, or x.T when x is a
    transposed (Fortran-ordered) view such as a weight's swapaxes; None for other layouts."""
    if x.flags.c_contiguous:
        return x, 0
    if x.flags.f_contiguous:
        return x.T, 1
    return None


# multiply-adds from which a product is split where the workers sleep between kernels:
# waking one costs 50-200 us on a 2-core machine (below this, one BLAS call is cheaper)
GEMM_SPLIT_MIN_SLEEPING = 1 << 22


@functools.lru_cache(maxsize=1)
def split_min() -> int:
    """The smallest product (multiply-adds) split across the threads: GEMM_SPLIT_MIN (2**20)
    where the workers spin between kernels, GEMM_SPLIT_MIN_SLEEPING where they sleep. With
    spinning workers a 512x64 by 64x64 product took 32 us split against 52 us in one call,
    and W5's compiled step fell from 8.5 to 8.0 ms. Read once, as libgomp reads its wait
    policy once."""
    from . import native_build  # noqa: PLC0415

    return GEMM_SPLIT_MIN if native_build.workers_spin() else GEMM_SPLIT_MIN_SLEEPING


def gemm(a, b, threads: int) -> np.ndarray | None:
    """a @ b for float32/float64 NumPy arrays, b 2-d and a of 2 or more dims (its leading dims
    taken as rows), split by rows across `threads` OpenMP threads, each part one BLAS call;
    None where that cannot be done (other dtypes or layouts, too small a product to gain, no
    BLAS symbol or no compiler): NumPy's matmul then. BLAS must run one thread itself (the
    caller checks), or the parts would oversubscribe the cores."""
    if (threads < 2 or type(a) is not np.ndarray or type(b) is not np.ndarray or b.ndim != 2 or a.ndim < 2
            or a.dtype != b.dtype or a.dtype not in _SUFFIX or a.shape[-1] != b.shape[0]):
        return None
    m, (k_, n) = a.size // max(a.shape[-1], 1), b.shape
    if m < 2 or m * k_ * n < split_min():
        return None
    a2 = a if a.ndim == 2 else (a.reshape(m, k_) if a.flags.c_contiguous else None)
    a_op = None if a2 is None else _gemm_operand(a2)
    b_op = _gemm_operand(b)
    found = blas_gemm()
    if found is not None and not found[1] and max(m, n, k_) >= 1 << 31:
        return None  # dimensions a 32-bit BLAS integer cannot hold
    k = kernels() if found is not None and a_op is not None and b_op is not None else None
    if k is None or found is None or a_op is None or b_op is None:
        return None
    (abuf, ta), (bbuf, tb) = a_op, b_op
    out = np.empty(a.shape[:-1] + (n,), a.dtype)
    plan_key = (m, n, k_, ta, tb, threads, a.dtype)
    plan = _GEMM_PLANS.get(plan_key)
    if plan is None:  # the call's constants, made once per shape (a step's 30 products: 0.15 ms a step)
        suffix = _SUFFIX[a.dtype]
        dt = "float32" if suffix == "f32" else "float64"
        dims = np.array([m, n, k_, ta, tb, min(threads, m), found[1]], _I64)
        itemsize = a.dtype.itemsize
        plan = _GEMM_PLANS[plan_key] = (
            f"gm_eager_gemm_{suffix}", (m * k_ * itemsize, k_ * n * itemsize, -m * n * itemsize, dims.nbytes, 8),
            k.formats((dt, dt, dt, "int64", "int64")), dims, np.array([found[0][a.dtype]], _I64))
    name, sizes, formats, dims, fn = plan
    if not k.run(name, threads, sizes, formats, abuf, bbuf, out, dims, fn):
        return None
    return out


# (rows, columns, depth, transposes, threads, dtype) -> the gemm call's name, byte sizes, type
# codes and constant arrays (read-only to the kernel, so shared by every call of that shape)
_GEMM_PLANS: dict = {}


def matmul(a, b) -> np.ndarray | None:
    """a @ b split by rows across the kernels' threads (gemm) where that is worth it and safe:
    a large enough product, two threads or more, and BLAS running one thread of its own
    (where it runs several, splitting oversubscribes the cores: slower). None otherwise."""
    if type(b) is not np.ndarray or b.ndim != 2 or type(a) is not np.ndarray or a.size * b.shape[1] < GEMM_SPLIT_MIN:
        return None
    from . import native_build, runtime  # noqa: PLC0415

    threads = native_build.threads()
    if threads < 2 or runtime.blas_threads() != 1:
        return None
    return gemm(a, b, threads)
