
#include <omp.h>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <type_traits>

// Eager's 2-d convolution, pooling and batch-norm kernels on NCHW (batch-major, C-contiguous)
// images: im2col into the column layout of the unfold op, max-pooling's forward and backward
// straight on the image (no window array), and batch norm's training forward (statistics,
// normalization and affine part) and its three gradients, each one pass per channel; and the
// select of a bool mask between a number and an array (relu's gradient). One translation
// unit for float and double.

// elements below which a loop stays on the calling thread (thread wake-up costs more)
#define GM_CONV_PARALLEL_MIN 32768LL

// the geometry every kernel here takes, as an int64 array:
// [N, C, H, W, KH, KW, OH, OW, stride h, stride w, pad top, pad left, dilation h, dilation w]
struct gm_geom {
    long long N, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw, dh, dw;
};

static inline gm_geom gm_geom_of(const long long* d) {
    return gm_geom{d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7], d[8], d[9], d[10], d[11], d[12], d[13]};
}

// im2col: cols (C, KH, KW, N, OH, OW) from x (N, C, H, W); a window cell outside the image
// (its padding) is `pad`. The same copy as the op's NumPy code (a strided view of the padded
// image made contiguous): every element is x's bits or pad's. BATCH_MAJOR: cols laid out
// (N, C, KH, KW, OH, OW) instead, each image's columns a matrix of its own (the fused conv2d
// of eager/nn/_fused_conv.py multiplies them image by image, its result then batch-major).
// one row of im2col: window offset (c, kh, kw) of image `src` (its C planes) over every output
// position, into dst (OH * OW); a cell outside the image is `pad`
template <typename T> static inline void im2col_row(const T* src, T* dst, const gm_geom& g, long long c,
                                                    long long kh, long long kw, T pad) {
    src += c * g.H * g.W;
    if (g.sh == 1 && g.sw == 1 && g.dw == 1 && g.OW == g.W) {
        // stride 1 and output rows as long as the image's ("same" padding, the usual 3x3 layer):
        // the window offset's cells are the plane shifted by dy rows and dx columns, one long
        // contiguous copy (rows of a dozen cells took more loop than copy), then the cells
        // whose column falls off the image (the copy wrapped them to a neighbour row) set to pad
        const long long W = g.W, L = g.OH * W, dy = kh * g.dh - g.ph, dx = kw - g.pw;
        long long oh_lo = dy < 0 ? -dy : 0, oh_hi = g.H - dy < g.OH ? g.H - dy : g.OH;
        if (oh_lo > g.OH) oh_lo = g.OH;
        if (oh_hi < oh_lo) oh_hi = oh_lo;
        const long long shift = dy * W + dx, j0 = oh_lo * W, j1 = oh_hi * W;
        long long js = j0 > -shift ? j0 : -shift, je = j1 < g.H * W - shift ? j1 : g.H * W - shift;
        if (js > j1) js = j1;
        if (je < js) je = js;
        for (long long j = 0; j < js; ++j) dst[j] = pad;
        const T* from = src + shift;
        #pragma omp simd
        for (long long j = js; j < je; ++j) dst[j] = from[j];
        for (long long j = je; j < L; ++j) dst[j] = pad;
        const long long lo = dx < 0 ? -dx : 0, hi = W - dx < W ? W - dx : W;
        if (lo > 0 || hi < W)
            for (long long oh = oh_lo; oh < oh_hi; ++oh) {
                T* out = dst + oh * W;
                for (long long ow = 0; ow < lo && ow < W; ++ow) out[ow] = pad;
                for (long long ow = hi < 0 ? 0 : hi; ow < W; ++ow) out[ow] = pad;
            }
        return;
    }
    for (long long oh = 0; oh < g.OH; ++oh) {
        const long long y = oh * g.sh + kh * g.dh - g.ph;
        T* out = dst + oh * g.OW;
        if (y < 0 || y >= g.H) {
            for (long long ow = 0; ow < g.OW; ++ow) out[ow] = pad;
            continue;
        }
        const T* line = src + y * g.W;
        // the cells [lo, hi) of the output row fall inside the image row; pad around them
        const long long x0 = kw * g.dw - g.pw;
        long long lo = x0 >= 0 ? 0 : (-x0 + g.sw - 1) / g.sw;
        long long hi = g.W - x0 <= 0 ? 0 : (g.W - x0 + g.sw - 1) / g.sw;
        if (hi > g.OW) hi = g.OW;
        if (lo > hi) lo = hi;
        for (long long ow = 0; ow < lo; ++ow) out[ow] = pad;
        if (g.sw == 1) {
            const T* from = line + x0;
            #pragma omp simd
            for (long long ow = lo; ow < hi; ++ow) out[ow] = from[ow];
        } else {
            for (long long ow = lo; ow < hi; ++ow) out[ow] = line[x0 + ow * g.sw];
        }
        for (long long ow = hi; ow < g.OW; ++ow) out[ow] = pad;
    }
}

template <typename T, bool BATCH_MAJOR = false> static void im2col2d(const T* x, T* cols, const long long* d, T pad,
                                                                     int nt) {
    const gm_geom g = gm_geom_of(d);
    const long long rows = g.C * g.KH * g.KW * g.N, plane = g.OH * g.OW;
    #pragma omp parallel for num_threads(nt) if(rows * plane >= GM_CONV_PARALLEL_MIN) schedule(static)
    for (long long r = 0; r < rows; ++r) {
        const long long inner = BATCH_MAJOR ? r % (g.C * g.KH * g.KW) : r / g.N;
        const long long n = BATCH_MAJOR ? r / (g.C * g.KH * g.KW) : r % g.N;
        const long long kw = inner % g.KW, kh = (inner / g.KW) % g.KH, c = inner / (g.KW * g.KH);
        im2col_row(x + n * g.C * g.H * g.W, cols + r * plane, g, c, kh, kw, pad);
    }
}

// The position (y * W + x in the plane) of the largest value of one pooling window, the
// first in row-major window order, a NaN counting as the largest (the first NaN wins): the
// rule of argmax over the window array, so the gradient goes where the decomposed op sends
// it. Cells in the padding never win (a window of -inf values picks its first real cell).
template <typename T> static inline long long window_argmax(const T* p, const gm_geom& g, long long oh, long long ow,
                                                            T* value) {
    long long at = -1;
    T best = (T)0;
    for (long long kh = 0; kh < g.KH; ++kh) {
        const long long y = oh * g.sh + kh * g.dh - g.ph;
        if (y < 0 || y >= g.H) continue;
        for (long long kw = 0; kw < g.KW; ++kw) {
            const long long x = ow * g.sw + kw * g.dw - g.pw;
            if (x < 0 || x >= g.W) continue;
            const T v = p[y * g.W + x];
            if (at < 0 || v > best || (v != v && best == best)) {
                best = v;
                at = y * g.W + x;
            }
        }
    }
    *value = at < 0 ? -(T)INFINITY : best;
    return at;
}

// whether candidate v replaces best: larger, or the first NaN (argmax's rule)
template <typename T> static inline bool gm_takes(T v, T best) { return v > best || (v != v && best == best); }

// the larger of a and b, NaN when either is
template <typename T> static inline T gm_nan_max(T a, T b) { return (b > a) | (b != b) ? b : a; }

// whether v is the window maximum m (a NaN maximum: any NaN)
template <typename T> static inline bool gm_same(T v, T m) { return (v == m) | ((v != v) & (m != m)); }

// the common 2x2 window of stride 2, no padding or dilation (its windows do not overlap)
static inline bool gm_pool_2x2(const gm_geom& g) {
    return g.KH == 2 && g.KW == 2 && g.sh == 2 && g.sw == 2 && g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1
           && 2 * g.OH <= g.H && 2 * g.OW <= g.W;
}

// The position (0-3, window order) and value of the maximum of the 2x2 window at column 2 * ow
// of rows r0 and r1, without branches (the candidates' order decides nothing a jump would).
template <typename T> static inline int gm_argmax_2x2(const T* r0, const T* r1, long long ow, T* value) {
    const T a = r0[2 * ow], b = r0[2 * ow + 1], c = r1[2 * ow], e = r1[2 * ow + 1];
    T best = a;
    int at = 0;
    bool t = gm_takes(b, best);
    best = t ? b : best; at = t ? 1 : at;
    t = gm_takes(c, best);
    best = t ? c : best; at = t ? 2 : at;
    t = gm_takes(e, best);
    best = t ? e : best; at = t ? 3 : at;
    *value = best;
    return at;
}

// max_pool2d: out (N, C, OH, OW) the window maxima of x (N, C, H, W); idx (when not null)
// the flat plane position of each (PyTorch's return_indices).
template <typename T> static void max_pool2d(const T* x, T* out, long long* idx, const long long* d, int nt) {
    const gm_geom g = gm_geom_of(d);
    const long long planes = g.N * g.C, plane = g.OH * g.OW;
    const bool two = gm_pool_2x2(g);
    #pragma omp parallel for num_threads(nt) if(planes * g.H * g.W >= GM_CONV_PARALLEL_MIN) schedule(static)
    for (long long p = 0; p < planes; ++p) {
        const T* src = x + p * g.H * g.W;
        T* o = out + p * plane;
        long long* io = idx ? idx + p * plane : nullptr;
        if (two) {
            for (long long oh = 0; oh < g.OH; ++oh) {
                const T* r0 = src + 2 * oh * g.W;
                const T* r1 = r0 + g.W;
                T* orow = o + oh * g.OW;
                if (io) {
                    long long* irow = io + oh * g.OW;
                    for (long long ow = 0; ow < g.OW; ++ow) {
                        const int at = gm_argmax_2x2(r0, r1, ow, orow + ow);
                        irow[ow] = (2 * oh + (at >> 1)) * g.W + 2 * ow + (at & 1);
                    }
                } else if (2 * g.OW <= 1024) {
                    // values only: the larger of each column pair, then of each pair of those
                    // (a NaN anywhere in the window gives NaN; the order of the comparisons
                    // changes no value), as contiguous vector loops
                    T col[1024];
                    #pragma omp simd
                    for (long long w = 0; w < 2 * g.OW; ++w) col[w] = gm_nan_max(r0[w], r1[w]);
                    #pragma omp simd
                    for (long long ow = 0; ow < g.OW; ++ow) orow[ow] = gm_nan_max(col[2 * ow], col[2 * ow + 1]);
                } else {
                    for (long long ow = 0; ow < g.OW; ++ow) {
                        T v;
                        gm_argmax_2x2(r0, r1, ow, &v);
                        orow[ow] = v;
                    }
                }
            }
            continue;
        }
        for (long long oh = 0; oh < g.OH; ++oh)
            for (long long ow = 0; ow < g.OW; ++ow) {
                T v;
                const long long at = window_argmax(src, g, oh, ow, &v);
                o[oh * g.OW + ow] = v;
                if (io) io[oh * g.OW + ow] = at < 0 ? 0 : at;
            }
    }
}

// max_pool2d's gradient: gx (N, C, H, W) zero but where a window's maximum (found again in x)
// is, which receives that window's gradient (summed in window order where windows overlap).
template <typename T> static void max_pool2d_backward(const T* gout, const T* x, T* gx, const long long* d, int nt) {
    const gm_geom g = gm_geom_of(d);
    const long long planes = g.N * g.C, plane = g.OH * g.OW, size = g.H * g.W;
    const bool two = gm_pool_2x2(g);
    #pragma omp parallel for num_threads(nt) if(planes * size >= GM_CONV_PARALLEL_MIN) schedule(static)
    for (long long p = 0; p < planes; ++p) {
        const T* src = x + p * size;
        const T* gp = gout + p * plane;
        T* o = gx + p * size;
        if (two && 2 * g.OW <= 1024) {  // every cell of a window written once: the gradient at the maximum, else 0
            for (long long oh = 0; oh < g.OH; ++oh) {
                const T* r0 = src + 2 * oh * g.W;
                const T* r1 = r0 + g.W;
                T* o0 = o + 2 * oh * g.W;
                T* o1 = o0 + g.W;
                const T* grow = gp + oh * g.OW;
                // each window's maximum by contiguous vector passes (as the values-only forward),
                // then the first cell in window order equal to it (the first NaN where it is
                // NaN: argmax's rule) takes the gradient; no branch on the data
                T col[1024], top[512];
                #pragma omp simd
                for (long long w = 0; w < 2 * g.OW; ++w) col[w] = gm_nan_max(r0[w], r1[w]);
                #pragma omp simd
                for (long long ow = 0; ow < g.OW; ++ow) top[ow] = gm_nan_max(col[2 * ow], col[2 * ow + 1]);
                #pragma omp simd
                for (long long ow = 0; ow < g.OW; ++ow) {
                    const T m = top[ow], gv = grow[ow];
                    const bool ta = gm_same(r0[2 * ow], m);
                    const bool tb = !ta & gm_same(r0[2 * ow + 1], m);
                    const bool tc = !ta & !tb & gm_same(r1[2 * ow], m);
                    const bool te = !ta & !tb & !tc;
                    o0[2 * ow] = ta ? gv : (T)0;
                    o0[2 * ow + 1] = tb ? gv : (T)0;
                    o1[2 * ow] = tc ? gv : (T)0;
                    o1[2 * ow + 1] = te ? gv : (T)0;
                }
                // an odd last column or row no window covers
                for (long long w = 2 * g.OW; w < g.W; ++w) { o0[w] = (T)0; o1[w] = (T)0; }
            }
            for (long long j = 2 * g.OH * g.W; j < size; ++j) o[j] = (T)0;
            continue;
        }
        for (long long j = 0; j < size; ++j) o[j] = (T)0;
        for (long long oh = 0; oh < g.OH; ++oh)
            for (long long ow = 0; ow < g.OW; ++ow) {
                T v;
                const long long at = window_argmax(src, g, oh, ow, &v);
                if (at >= 0) o[at] += gp[oh * g.OW + ow];
            }
    }
}

// Batch norm in training (the batch's statistics), NCHW-contiguous x viewed as (N, C, S):
// each channel's mean and biased variance over N and S in double (two passes, the second from
// cache), then y = ((x - mean) * rstd) * w + b. stats receives each channel's mean and sum of
// squared deviations (the running statistics' update). d = [N, C, S].
template <typename T> static inline void bn_stats(const T* x, const long long* d, long long c, double* mean,
                                                  double* m2) {
    const long long N = d[0], C = d[1], S = d[2];
    double s = 0.0;
    for (long long b = 0; b < N; ++b) {
        const T* xr = x + (b * C + c) * S;
        #pragma omp simd reduction(+:s)
        for (long long j = 0; j < S; ++j) s += (double)xr[j];
    }
    const double m = s / (double)(N * S);
    double v = 0.0;
    for (long long b = 0; b < N; ++b) {
        const T* xr = x + (b * C + c) * S;
        #pragma omp simd reduction(+:v)
        for (long long j = 0; j < S; ++j) { const double e = (double)xr[j] - m; v += e * e; }
    }
    *mean = m;
    *m2 = v;
}

// body(c, mean, m2) for each channel c of x, the channels split over the threads, with the
// channel's statistics from bn_stats, or from `saved` (the forward's stats: C means, then C
// sums of squared deviations) where given: the loop batch norm's forward and its gradients
// share. The saved statistics are the ones bn_stats gives, so either way the same bits.
template <typename T, typename F> static inline void bn_channels(const T* x, const long long* d, int nt, F body,
                                                                 const double* saved = nullptr) {
    const long long N = d[0], C = d[1], S = d[2];
    #pragma omp parallel for num_threads(nt) if(N * C * S >= GM_CONV_PARALLEL_MIN) schedule(static)
    for (long long c = 0; c < C; ++c) {
        double mean, m2;
        if (saved) {
            mean = saved[c];
            m2 = saved[C + c];
        } else {
            bn_stats(x, d, c, &mean, &m2);
        }
        body(c, mean, m2);
    }
}

template <typename T> static void batch_norm(const T* x, const T* w, const T* bias, T* y, double* stats,
                                             const long long* d, double eps, int nt) {
    const long long N = d[0], C = d[1], S = d[2];
    bn_channels(x, d, nt, [&](long long c, double mean, double m2) {
        stats[c] = mean;
        stats[C + c] = m2;
        const T m = (T)mean, r = (T)(1.0 / sqrt(m2 / (double)(N * S) + eps)), wc = w[c], bc = bias[c];
        for (long long b = 0; b < N; ++b) {
            const T* xr = x + (b * C + c) * S;
            T* yr = y + (b * C + c) * S;
            #pragma omp simd
            for (long long j = 0; j < S; ++j) yr[j] = ((xr[j] - m) * r) * wc + bc;
        }
    });
}

// its gradients for an output gradient g (NCHW-contiguous): with xhat = (x - mean) * rstd,
// gb = sum g, gw = sum g * xhat, gx = w * rstd * (g - gb / M - xhat * gw / M), in double
template <typename T> static void batch_norm_backward(const T* g, const T* x, const T* w, T* gx, T* gw, T* gb,
                                                      const long long* d, double eps, int nt,
                                                      const double* saved = nullptr) {
    const long long N = d[0], C = d[1], S = d[2];
    bn_channels(x, d, nt, [&](long long c, double mean, double m2) {
        const double count = (double)(N * S), rstd = 1.0 / sqrt(m2 / count + eps);
        double sg = 0.0, sgs = 0.0;
        for (long long b = 0; b < N; ++b) {
            const T* gr = g + (b * C + c) * S;
            const T* xr = x + (b * C + c) * S;
            #pragma omp simd reduction(+:sg, sgs)
            for (long long j = 0; j < S; ++j) { sg += (double)gr[j]; sgs += (double)gr[j] * ((double)xr[j] - mean); }
        }
        const double mean_g = sg / count, k = rstd * rstd * sgs / count, scale = (double)w[c] * rstd;
        for (long long b = 0; b < N; ++b) {
            const T* gr = g + (b * C + c) * S;
            const T* xr = x + (b * C + c) * S;
            T* out = gx + (b * C + c) * S;
            #pragma omp simd
            for (long long j = 0; j < S; ++j)
                out[j] = (T)(scale * (((double)gr[j] - mean_g) - ((double)xr[j] - mean) * k));
        }
        gw[c] = (T)(sgs * rstd);
        gb[c] = (T)sg;
    }, saved);
}

// where(c, a, b) for a bool mask c, a number a and an array b of c's size (`invert`: where(!c,
// a, b)): relu's gradient (zero where the result is <= 0) and every masked fill of that form,
// one pass, each element b's bits or a's, as the select it replaces. `period` > 0: c holds
// that many elements, repeated over b's rows of that length (a mask of b's trailing dims, as
// the causal mask of attention scores), read in place of a tiled copy of c.
template <typename T> static void select_number(const unsigned char* c, T a, const T* b, T* out, long long n,
                                                bool invert, int nt, long long period = 0) {
    if (period > 0) {
        const long long rows = n / period;
        #pragma omp parallel for num_threads(nt) if(n >= GM_CONV_PARALLEL_MIN) schedule(static)
        for (long long r = 0; r < rows; ++r) {
            const T* br = b + r * period;
            T* o = out + r * period;
            if (invert) {
                #pragma omp simd
                for (long long j = 0; j < period; ++j) o[j] = c[j] ? br[j] : a;
            } else {
                #pragma omp simd
                for (long long j = 0; j < period; ++j) o[j] = c[j] ? a : br[j];
            }
        }
        return;
    }
    #pragma omp parallel for num_threads(nt) if(n >= GM_CONV_PARALLEL_MIN) schedule(static)
    for (long long i0 = 0; i0 < n; i0 += 4096) {
        const long long i1 = i0 + 4096 < n ? i0 + 4096 : n;
        if (invert) {
            #pragma omp simd
            for (long long i = i0; i < i1; ++i) out[i] = c[i] ? b[i] : a;
        } else {
            #pragma omp simd
            for (long long i = i0; i < i1; ++i) out[i] = c[i] ? a : b[i];
        }
    }
}

// -- 2-d convolution image by image: each image's columns made and used while in cache ------
// The fused conv2d of eager/nn/_fused_conv.py as two kernels. Forward: for each image, its
// columns (C * KH * KW, OH * OW) into a buffer of the thread's own (im2col_row), then one
// single-threaded BLAS call W @ cols into out[n] and the bias added to each row. Backward:
// for each image, its columns again (for the weight gradient: G[n] cols^T accumulated into
// the run's partial, beta 1 after the run's first image), W^T G[n] into a second buffer and
// its fold (col2im) into dx[n]. The columns of the whole batch (3.6 MB for a 16-channel 14x14
// layer of 32 images, past the L2 cache) are never written out and read back. The images are
// split across the threads in `parts` consecutive runs as gemm_batched's (eager_gemm.cpp), the
// runs' weight-gradient partials added in run order, so the bits depend on `parts` only; each
// product is the same BLAS call as the batch-major path's, the fold adds the cells in
// fold2d's order: the same values as im2col2d_batch_major + gemm_batched + fold2d_batch_major.
// fn: NumPy's cblas_?gemm (I: its integer type).
template <typename T, typename I> using gm_conv_gemm_fn = void (*)(int, int, int, I, I, I, T, const T*, I,
                                                                  const T*, I, T, T*, I);
enum { GM_ROW_MAJOR = 101, GM_NO_TRANS = 111, GM_TRANS = 112 };

// the fold of one image's columns (C * KH * KW, OH * OW) into out (C, H, W): fold2d's order
// (each plane zeroed, the kernel offsets' cells added in (kh, kw) order); plane: PH * PW scratch
template <typename T> static void fold_image(const T* cols, T* out, const gm_geom& g, T* plane) {
    if (g.sh == 1 && g.sw == 1 && g.dw == 1 && g.OW == g.W) {
        // stride 1, output rows as long as the image's (the usual "same" 3x3 layer): im2col_row's
        // shifted copy run backwards, each window offset's row added to the image plane shifted
        // by dy rows and dx columns in one long loop (rows of a dozen cells took more loop than
        // adds: W6's 16-channel 14x14 fold cost 7 us an image), a cell whose column falls off the
        // image (the shift wrapped it to a neighbour row) adding +0. Same sums in the same order
        // as below: each image cell starts at +0 and gets its offsets' cells in (kh, kw) order;
        // a cell never holds -0 (+0 + -0 is +0), so the +0 added for a wrapped cell changes
        // nothing, NaN and infinities included.
        const long long W = g.W, L = g.OH * W, HW = g.H * W;
        unsigned char keep[4096];  // keep[kw * L + j]: output cell j's column plus dx inside the image
        unsigned char* kp = L * g.KW <= (long long)sizeof(keep) ? keep : new unsigned char[g.KW * L];
        for (long long kw = 0; kw < g.KW; ++kw)
            for (long long oh = 0; oh < g.OH; ++oh)
                for (long long ow = 0; ow < W; ++ow) {
                    const long long xx = ow + kw - g.pw;
                    kp[kw * L + oh * W + ow] = (xx >= 0 && xx < W) ? 1 : 0;
                }
        for (long long c = 0; c < g.C; ++c) {
            T* o = out + c * HW;
            for (long long j = 0; j < HW; ++j) o[j] = (T)0;
            for (long long kh = 0; kh < g.KH; ++kh)
                for (long long kw = 0; kw < g.KW; ++kw) {
                    const T* src = cols + ((c * g.KH + kh) * g.KW + kw) * L;
                    const long long dy = kh * g.dh - g.ph, dx = kw - g.pw;
                    long long oh_lo = dy < 0 ? -dy : 0, oh_hi = g.H - dy < g.OH ? g.H - dy : g.OH;
                    if (oh_lo > g.OH) oh_lo = g.OH;
                    if (oh_hi < oh_lo) oh_hi = oh_lo;
                    const long long shift = dy * W + dx, j0 = oh_lo * W, j1 = oh_hi * W;
                    long long js = j0 > -shift ? j0 : -shift, je = j1 < HW - shift ? j1 : HW - shift;
                    if (js > j1) js = j1;
                    if (je < js) je = js;
                    T* to = o + shift;
                    if (dx == 0) {
                        #pragma omp simd
                        for (long long j = js; j < je; ++j) to[j] += src[j];
                    } else {
                        const unsigned char* k = kp + kw * L;
                        #pragma omp simd
                        for (long long j = js; j < je; ++j) to[j] += k[j] ? src[j] : (T)0;
                    }
                }
        }
        if (kp != keep) delete[] kp;
        return;
    }
    const long long PH = (g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1, PW = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
    const long long window = g.OH * g.OW;
    for (long long c = 0; c < g.C; ++c) {
        for (long long j = 0; j < PH * PW; ++j) plane[j] = (T)0;
        for (long long kh = 0; kh < g.KH; ++kh)
            for (long long kw = 0; kw < g.KW; ++kw) {
                const T* src = cols + ((c * g.KH + kh) * g.KW + kw) * window;
                for (long long oh = 0; oh < g.OH; ++oh) {
                    T* row = plane + (oh * g.sh + kh * g.dh) * PW + kw * g.dw;
                    const T* sp = src + oh * g.OW;
                    #pragma omp simd
                    for (long long ow = 0; ow < g.OW; ++ow) row[ow * g.sw] += sp[ow];
                }
            }
        T* o = out + c * g.H * g.W;
        for (long long h = 0; h < g.H; ++h)
            for (long long w = 0; w < g.W; ++w) {
                const long long y = h + g.ph, xx = w + g.pw;
                o[h * g.W + w] = (y < PH && xx < PW) ? plane[y * PW + xx] : (T)0;
            }
    }
}

// The bias gradient's part of one image: each of the O rows of G[n] (L values) summed in
// double and added to acc[row]. Sixteen running sums a row (sixteen lanes in flight, combined
// in a fixed order at the row's end): one vector's chain of dependent adds waited on each add,
// 1.5 cycles an element (W6's first layer, 16 x 784 values an image: 0.23 ms a batch on one
// thread). The order depends on L alone, never on the thread count.
template <typename T> static inline void gm_add_row_sums(const T* g, long long rows, long long L, double* acc) {
    for (long long i = 0; i < rows; ++i) {
        const T* row = g + i * L;
        double part[16] = {0.0};
        long long j = 0;
        for (; j + 16 <= L; j += 16) {
            #pragma omp simd
            for (int k = 0; k < 16; ++k) part[k] += (double)row[j + k];
        }
        double sum = 0.0;
        for (; j < L; ++j) sum += (double)row[j];
        for (int k = 0; k < 16; ++k) sum += part[k];
        acc[i] += sum;
    }
}

static inline void gm_conv_image_columns(const float* x, float* cols, const gm_geom& g) {
    const long long L = g.OH * g.OW;
    for (long long r = 0; r < g.C * g.KH * g.KW; ++r)
        im2col_row(x, cols + r * L, g, r / (g.KH * g.KW), (r / g.KW) % g.KH, r % g.KW, 0.0f);
}
static inline void gm_conv_image_columns(const double* x, double* cols, const gm_geom& g) {
    const long long L = g.OH * g.OW;
    for (long long r = 0; r < g.C * g.KH * g.KW; ++r)
        im2col_row(x, cols + r * L, g, r / (g.KH * g.KW), (r / g.KW) % g.KH, r % g.KW, 0.0);
}

// fold_image's stride-1 full-width road as a gather (AVX-512, or AVX2: a masked-off row adds +0):
// each image cell's window rows read where the shifted add would have added them, 16 cells at a
// time, in (kh, kw) order from +0, a row whose column wraps (or a row past the image) masked
// off: the same sums in the same order (a skipped add and the +0 fold_image adds there change
// nothing: a cell never holds -0), one store a vector. The shifted adds reloaded each cell a
// float off the last pass's store (a store-forwarding stall each): W6's 16-channel fold took
// 3.7 us an image, the gather 2.0 (C loop, AVX-512). W^T G[n] is written into `buf` for it, its
// rows S apart between zero margins, so a gather past a row's ends reads 0.
struct gm_gather_fold {
    long long S = 0, M0 = 0, chunks = 0;
    float* buf = nullptr;
    unsigned short* masks = nullptr;  // [kw * (chunks + 4) + q]: chunk q's cells whose column - dx is inside
    unsigned* lanes = nullptr;        // (AVX2) the same as 32-bit lane masks, 16 a chunk
    static bool applies(const gm_geom& g) {
#if defined(__AVX512F__) || defined(__AVX2__)
        return g.sh == 1 && g.sw == 1 && g.dw == 1 && g.OW == g.W && g.KW <= 64 && g.KH * g.KW <= 256;
#else
        (void)g;
        return false;
#endif
    }
    gm_gather_fold(const gm_geom& g, long long K) {
        const long long L = g.OH * g.W, HW = g.H * g.W;
        long long m = 0;
        for (long long kh = 0; kh < g.KH; ++kh)
            for (long long kw = 0; kw < g.KW; ++kw) {
                const long long sh = (kh * g.dh - g.ph) * g.W + (kw - g.pw);
                m = sh > m ? sh : (-sh > m ? -sh : m);
            }
        M0 = (m + (HW > L ? HW - L : L - HW) + 64 + 15) / 16 * 16;
        S = L + M0;
        buf = new float[K * S + M0];  // (its margins zeroed; the product writes every row's L cells)
        for (long long r = 0; r <= K; ++r) memset(buf + r * S, 0, (size_t)M0 * sizeof(float));
        chunks = (HW + 15) / 16;
        masks = new unsigned short[g.KW * (chunks + 4)]();
        for (long long kw = 0; kw < g.KW; ++kw)
            for (long long q = 0; q < chunks; ++q) {
                unsigned bits = 0;
                for (int l = 0; l < 16; ++l) {
                    const long long t = q * 16 + l, xx = t % g.W - (kw - g.pw);
                    if (t < HW && xx >= 0 && xx < g.W) bits |= 1u << l;
                }
                masks[kw * (chunks + 4) + q] = (unsigned short)bits;
            }
        lanes = new unsigned[g.KW * (chunks + 4) * 16]();
        for (long long j = 0; j < g.KW * (chunks + 4) * 16; ++j) lanes[j] = (masks[j / 16] >> (j % 16)) & 1u ? ~0u : 0u;
    }
    ~gm_gather_fold() {
        delete[] buf;
        delete[] masks;
        delete[] lanes;
    }
    float* product() const { return buf + M0; }  // (W^T G[n] written here, leading dimension S)
    // rows[r]: window row r = (kh, kw) of channel c, shifted so that input cell i reads rows[r][i]
    void window_rows(long long c, const gm_geom& g, const float** rows) const {
        const long long R = g.KH * g.KW;
        for (long long kh = 0; kh < g.KH; ++kh)
            for (long long kw = 0; kw < g.KW; ++kw)
                rows[kh * g.KW + kw] = buf + (c * R + kh * g.KW + kw) * S + M0
                                       - ((kh * g.dh - g.ph) * g.W + (kw - g.pw));
    }
    void fold(float* dx, const gm_geom& g) const {
#if defined(__AVX512F__)
        const long long HW = g.H * g.W, R = g.KH * g.KW, MS = chunks + 4;
        const float* rows[256];
        for (long long c = 0; c < g.C; ++c) {
            window_rows(c, g, rows);
            float* o = dx + c * HW;
            for (long long q = 0; q < chunks; q += 4) {  // (four vectors in flight)
                __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
                for (long long r = 0; r < R; ++r) {
                    const float* src = rows[r] + q * 16;
                    const unsigned short* mk = masks + (r % g.KW) * MS + q;
                    a0 = _mm512_mask_add_ps(a0, (__mmask16)mk[0], a0, _mm512_loadu_ps(src));
                    a1 = _mm512_mask_add_ps(a1, (__mmask16)mk[1], a1, _mm512_loadu_ps(src + 16));
                    a2 = _mm512_mask_add_ps(a2, (__mmask16)mk[2], a2, _mm512_loadu_ps(src + 32));
                    a3 = _mm512_mask_add_ps(a3, (__mmask16)mk[3], a3, _mm512_loadu_ps(src + 48));
                }
                const __m512 acc[4] = {a0, a1, a2, a3};
                for (int u = 0; u < 4 && q + u < chunks; ++u) {
                    const long long t = (q + u) * 16, n = HW - t < 16 ? HW - t : 16;
                    _mm512_mask_storeu_ps(o + t, (__mmask16)((1u << n) - 1u), acc[u]);
                }
            }
        }
#elif defined(__AVX2__)
        const long long HW = g.H * g.W, R = g.KH * g.KW, MS = (chunks + 4) * 16;
        const float* rows[256];
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        for (long long c = 0; c < g.C; ++c) {
            window_rows(c, g, rows);
            float* o = dx + c * HW;
            for (long long q = 0; q < chunks; q += 2) {  // (32 cells: four vectors in flight)
                __m256 a[4];
                for (int v = 0; v < 4; ++v) a[v] = _mm256_setzero_ps();
                for (long long r = 0; r < R; ++r) {
                    const float* src = rows[r] + q * 16;
                    const float* mk = (const float*)(lanes + (r % g.KW) * MS + q * 16);
                    for (int v = 0; v < 4; ++v)
                        a[v] = _mm256_add_ps(a[v], _mm256_and_ps(_mm256_loadu_ps(src + 8 * v),
                                                                 _mm256_loadu_ps(mk + 8 * v)));
                }
                for (int v = 0; v < 4; ++v) {
                    const long long t = q * 16 + 8 * v, n = HW - t;
                    if (n >= 8) _mm256_storeu_ps(o + t, a[v]);
                    else if (n > 0)
                        _mm256_maskstore_ps(o + t, _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane), a[v]);
                }
            }
        }
#else
        (void)dx;
        (void)g;
#endif
    }
};

// -- the stride-1 layers on the padded image's grid (the own sgemm's grid products) ----------
// gm_sgemm_grid / gm_sgemm_grid_t (csrc/gm_gemm.cpp): outputs indexed on the zero-padded image's
// grid (Hp x Wp, position oh * Wp + ow, the columns ow >= OW computed and thrown away), so that a
// window row (c, kh, kw) is the padded image read in place from c Hp Wp + kh dh Wp + kw dw: no
// columns copied (W6's im2col took 2.5 us an image) and whole vectors (no edge tile). The
// forward and W^T G[n] keep the bits of the compact products through the routed sgemm (the
// grid product declines, returning 0, where that routing hands the product to NumPy's BLAS).
typedef int (*gm_grid_fn)(long long, long long, long long, const float*, long long, long long, const float*,
                          const long long*, float*, long long, const unsigned char*, long long);
typedef void (*gm_grid_t_fn)(long long, long long, long long, long long, long long, const float*, const long long*,
                             const float*, long long, float, float*, long long);

// the runs of images on the grid (csrc/eager_conv_grid.cpp, compiled after this file in the same
// unit: gmnative.conv_kernels joins the two)
static bool conv2d_images_grid(gm_grid_fn grid, const float* x, const float* w, const float* bias, float* out,
                               const gm_geom& g, long long O, long long lo, long long hi);
template <typename I>
static bool conv2d_images_backward_grid(gm_grid_fn grid, gm_grid_t_fn gridt, gm_conv_gemm_fn<float, I> gemm,
                                        const float* gout, const float* x, const float* w, float* dx, float* partial,
                                        double* dbp, const gm_geom& g, long long O, long long lo, long long hi,
                                        bool want_dx, bool want_dw, bool dw_t, bool want_db);

// d = [the 14 gm_geom numbers, O, parts, has bias]; gridfn: gm_sgemm_grid (float) or null
template <typename T, typename I> static void conv2d_images(const void* fn, const T* x, const T* w, const T* bias,
                                                            T* out, const long long* d, int nt,
                                                            const void* gridfn = nullptr) {
    const gm_conv_gemm_fn<T, I> gemm = (gm_conv_gemm_fn<T, I>)fn;
    const gm_geom g = gm_geom_of(d);
    const long long O = d[14], parts = d[15], K = g.C * g.KH * g.KW, L = g.OH * g.OW;
    const bool has_bias = d[16] != 0;
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (long long p = 0; p < parts; ++p) {
        const long long lo = g.N * p / parts, hi = g.N * (p + 1) / parts;
        if constexpr (std::is_same<T, float>::value) {
            if (gridfn && conv2d_images_grid((gm_grid_fn)gridfn, x, w, has_bias ? bias : nullptr, out, g, O, lo, hi))
                continue;  // (a declined grid declines at its first image: the routing is the shape's)
        }
        T* cols = new T[K * L];
        for (long long n = lo; n < hi; ++n) {
            gm_conv_image_columns(x + n * g.C * g.H * g.W, cols, g);
            T* o = out + n * O * L;
            gemm(GM_ROW_MAJOR, GM_NO_TRANS, GM_NO_TRANS, (I)O, (I)L, (I)K, (T)1, w, (I)K, cols, (I)L, (T)0, o, (I)L);
            if (has_bias)
                for (long long i = 0; i < O; ++i) {
                    T* row = o + i * L;
                    const T bi = bias[i];
                    #pragma omp simd
                    for (long long j = 0; j < L; ++j) row[j] += bi;
                }
        }
        delete[] cols;
    }
}

// d = [the 14 gm_geom numbers, O, parts, wants dx, wants dw, dw transposed, wants db]; db: the
// bias gradient, each image's gradient rows summed in double while in cache, the runs' sums
// added in run order (bits fixed by `parts`); dw transposed:
// the weight gradient as sum_n cols[n] G[n]^T (K, O) with G[n]^T made contiguous first (BLAS
// runs a product whose right operand is transposed at about half speed when K is large), dw
// then (K, O), the caller transposing it; else sum_n G[n] cols[n]^T (O, K). work: (parts - 1)
// partials of O * K.
// dwfn (or null): the project's own sgemm (gm_sgemm64_kernel, float only) for the transposed
// weight gradient, sum_n cols[n] G[n]^T read with G[n] transposed in its packing (no G[n]^T made
// first): W6's 144 x 32 x 196 products took 12.2 us an image against BLAS's 13.4 plus 2.0 for
// the transposition (one thread, C loop, AVX-512).
template <typename T, typename I> static void conv2d_images_backward(const void* fn, const T* gout, const T* x,
                                                                     const T* w, T* dx, T* dw, T* work, T* db,
                                                                     const long long* d, int nt,
                                                                     const void* dwfn = nullptr,
                                                                     const void* gridfn = nullptr,
                                                                     const void* gridtfn = nullptr) {
    const gm_conv_gemm_fn<T, I> gemm = (gm_conv_gemm_fn<T, I>)fn;
    const gm_conv_gemm_fn<T, long long> own = (gm_conv_gemm_fn<T, long long>)dwfn;
    const gm_geom g = gm_geom_of(d);
    const long long O = d[14], parts = d[15], K = g.C * g.KH * g.KW, L = g.OH * g.OW;
    const bool want_dx = d[16] != 0, want_dw = d[17] != 0, dw_t = d[18] != 0, want_db = d[19] != 0;
    double* db_parts = want_db ? new double[parts * O]() : nullptr;
    const long long PH = (g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1, PW = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (long long p = 0; p < parts; ++p) {
        const long long lo = g.N * p / parts, hi = g.N * (p + 1) / parts;
        T* partial = p == 0 ? dw : work + (p - 1) * O * K;
        if constexpr (std::is_same<T, float>::value) {
            if ((gridfn || gridtfn)
                && conv2d_images_backward_grid<I>((gm_grid_fn)gridfn, (gm_grid_t_fn)gridtfn, gemm, gout, x, w, dx,
                                                  partial, want_db ? db_parts + p * O : nullptr, g, O, lo, hi,
                                                  want_dx, want_dw, dw_t, want_db))
                continue;
        }
        T* cols = new T[K * L];
        T* gt = (want_dw && dw_t && own == nullptr) ? new T[L * O] : nullptr;
        T* plane = want_dx ? new T[PH * PW] : nullptr;
        gm_gather_fold* gather = nullptr;
        if constexpr (std::is_same<T, float>::value)
            if (want_dx && gm_gather_fold::applies(g)) gather = new gm_gather_fold(g, K);
        for (long long n = lo; n < hi; ++n) {
            const T* gn = gout + n * O * L;
            const T beta = n > lo ? (T)1 : (T)0;
            if (want_db) gm_add_row_sums(gn, O, L, db_parts + p * O);
            if (want_dw) {
                gm_conv_image_columns(x + n * g.C * g.H * g.W, cols, g);
                if (dw_t && own != nullptr) {
                    own(GM_ROW_MAJOR, GM_NO_TRANS, GM_TRANS, K, O, L, (T)1, cols, L, gn, L, beta, partial, O);
                } else if (dw_t) {
                    for (long long i = 0; i < O; ++i)
                        for (long long j = 0; j < L; ++j) gt[j * O + i] = gn[i * L + j];
                    gemm(GM_ROW_MAJOR, GM_NO_TRANS, GM_NO_TRANS, (I)K, (I)O, (I)L, (T)1, cols, (I)L, gt, (I)O, beta,
                         partial, (I)O);
                } else {
                    gemm(GM_ROW_MAJOR, GM_NO_TRANS, GM_TRANS, (I)O, (I)K, (I)L, (T)1, gn, (I)L, cols, (I)L, beta,
                         partial, (I)K);
                }
            }
            if (want_dx && gather) {
                if constexpr (std::is_same<T, float>::value) {
                    gemm(GM_ROW_MAJOR, GM_TRANS, GM_NO_TRANS, (I)K, (I)L, (I)O, (T)1, w, (I)K, gn, (I)L, (T)0,
                         gather->product(), (I)gather->S);
                    gather->fold(dx + n * g.C * g.H * g.W, g);
                }
            } else if (want_dx) {
                gemm(GM_ROW_MAJOR, GM_TRANS, GM_NO_TRANS, (I)K, (I)L, (I)O, (T)1, w, (I)K, gn, (I)L, (T)0, cols,
                     (I)L);
                fold_image(cols, dx + n * g.C * g.H * g.W, g, plane);
            }
        }
        delete[] cols;
        delete[] gt;
        delete[] plane;
        delete gather;
    }
    if (want_dw && parts > 1) {
        const long long size = O * K;
        for (long long j = 0; j < size; ++j) {
            T s = dw[j];
            for (long long p = 1; p < parts; ++p) s += work[(p - 1) * size + j];
            dw[j] = s;
        }
    }
    if (want_db) {
        for (long long i = 0; i < O; ++i) {
            double s = 0.0;
            for (long long p = 0; p < parts; ++p) s += db_parts[p * O + i];
            db[i] = (T)s;
        }
        delete[] db_parts;
    }
}

// relu: out = x where x is not below zero, else 0, in one threaded vector pass (NumPy's maximum
// runs on one thread): a NaN and a negative zero are kept (PyTorch's relu keeps x unless x < 0)
template <typename T> static void relu(const T* x, T* out, long long n, int nt) {
    #pragma omp parallel for num_threads(nt) if(n >= GM_CONV_PARALLEL_MIN) schedule(static)
    for (long long i0 = 0; i0 < n; i0 += 4096) {
        const long long i1 = i0 + 4096 < n ? i0 + 4096 : n;
        #pragma omp simd
        for (long long i = i0; i < i1; ++i) out[i] = x[i] < (T)0 ? (T)0 : x[i];
    }
}

// the entry points: void k(void* const* args, int threads); dims an int64 array (gm_geom)
#define GM_CONV_ALL(T, suffix) \
    extern "C" void gm_eager_conv_im2col2d_##suffix(void* const* a, int nt) { \
        im2col2d<T>((const T*)a[0], (T*)a[1], (const long long*)a[2], ((const T*)a[3])[0], nt); } \
    extern "C" void gm_eager_conv_im2col2d_batch_major_##suffix(void* const* a, int nt) { \
        im2col2d<T, true>((const T*)a[0], (T*)a[1], (const long long*)a[2], ((const T*)a[3])[0], nt); } \
    extern "C" void gm_eager_conv_max_pool2d_##suffix(void* const* a, int nt) { \
        max_pool2d<T>((const T*)a[0], (T*)a[1], (long long*)a[2], (const long long*)a[3], nt); } \
    extern "C" void gm_eager_conv_max_pool2d_values_##suffix(void* const* a, int nt) { \
        max_pool2d<T>((const T*)a[0], (T*)a[1], nullptr, (const long long*)a[2], nt); } \
    extern "C" void gm_eager_conv_max_pool2d_backward_##suffix(void* const* a, int nt) { \
        max_pool2d_backward<T>((const T*)a[0], (const T*)a[1], (T*)a[2], (const long long*)a[3], nt); } \
    extern "C" void gm_eager_conv_select_number_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[4]; \
        select_number<T>((const unsigned char*)a[0], ((const T*)a[1])[0], (const T*)a[2], (T*)a[3], d[0], d[1] != 0, \
                         nt, d[2]); } \
    extern "C" void gm_eager_conv_conv2d_images_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[4]; \
        const void* fn = (const void*)((const long long*)a[5])[0]; \
        const T* bias = d[16] ? (const T*)a[2] : nullptr; \
        const void* gridfn = (const void*)((const long long*)a[5])[3]; \
        if (((const long long*)a[5])[1]) \
            conv2d_images<T, long long>(fn, (const T*)a[0], (const T*)a[1], bias, (T*)a[3], d, nt, gridfn); \
        else conv2d_images<T, int>(fn, (const T*)a[0], (const T*)a[1], bias, (T*)a[3], d, nt, gridfn); } \
    extern "C" void gm_eager_conv_conv2d_images_backward_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[6]; \
        const void* fn = (const void*)((const long long*)a[7])[0]; \
        const void* dwfn = (const void*)((const long long*)a[7])[2]; \
        const void* gridfn = (const void*)((const long long*)a[7])[3]; \
        const void* gridtfn = (const void*)((const long long*)a[7])[4]; \
        if (((const long long*)a[7])[1]) \
            conv2d_images_backward<T, long long>(fn, (const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], \
                                                 (T*)a[4], (T*)a[5], (T*)a[8], d, nt, dwfn, gridfn, gridtfn); \
        else conv2d_images_backward<T, int>(fn, (const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], \
                                            (T*)a[4], (T*)a[5], (T*)a[8], d, nt, dwfn, gridfn, gridtfn); } \
    extern "C" void gm_eager_conv_relu_##suffix(void* const* a, int nt) { \
        relu<T>((const T*)a[0], (T*)a[1], ((const long long*)a[2])[0], nt); } \
    extern "C" void gm_eager_conv_batch_norm_##suffix(void* const* a, int nt) { \
        batch_norm<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], (double*)a[4], \
                      (const long long*)a[5], ((const double*)a[6])[0], nt); } \
    extern "C" void gm_eager_conv_batch_norm_backward_##suffix(void* const* a, int nt) { \
        batch_norm_backward<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], (T*)a[4], (T*)a[5], \
                               (const long long*)a[6], ((const double*)a[7])[0], nt); } \
    extern "C" void gm_eager_conv_batch_norm_backward_saved_##suffix(void* const* a, int nt) { \
        batch_norm_backward<T>((const T*)a[0], (const T*)a[1], (const T*)a[2], (T*)a[3], (T*)a[4], (T*)a[5], \
                               (const long long*)a[6], ((const double*)a[7])[0], nt, (const double*)a[8]); }

GM_CONV_ALL(float, f32)
GM_CONV_ALL(double, f64)
