// The stride-1 convolution's runs of images on the padded image's grid (the own sgemm's grid
// products, gm_sgemm_grid and gm_sgemm_grid_t in csrc/gm_gemm.cpp): the second part of the
// eager_conv unit, compiled after csrc/eager_conv.cpp (gmnative.conv_kernels joins the two),
// whose geometry, fold_image, gather fold and declarations it uses; see the account there
// ("the stride-1 layers on the padded image's grid").

// `rows` rows of n floats, src's ss apart, into dst's ds apart (+ add, where `plus`): a row of up
// to 16 one masked load and store (AVX-512; a library memcpy a 14-float row cost 5 ns a call,
// 2 us of W6's image), the mask made once for all the rows
static inline void gm_rows_copy(float* dst, long long ds, const float* src, long long ss, long long rows, long long n,
                                bool plus = false, float add = 0.0f) {
#if defined(__AVX512F__)
    if (n <= 16) {
        const __mmask16 m = (__mmask16)((1u << n) - 1u);
        const __m512 b = _mm512_set1_ps(add);
        if (plus)
            for (long long r = 0; r < rows; ++r)
                _mm512_mask_storeu_ps(dst + r * ds, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, src + r * ss), b));
        else
            for (long long r = 0; r < rows; ++r)
                _mm512_mask_storeu_ps(dst + r * ds, m, _mm512_maskz_loadu_ps(m, src + r * ss));
        return;
    }
#endif
    for (long long r = 0; r < rows; ++r) {
        float* d = dst + r * ds;
        const float* q = src + r * ss;
        if (plus) {
            #pragma omp simd
            for (long long j = 0; j < n; ++j) d[j] = q[j] + add;
        } else {
            #pragma omp simd
            for (long long j = 0; j < n; ++j) d[j] = q[j];
        }
    }
}

struct gm_grid {
    long long Hp, Wp, P, Pr, size;  // grid rows and columns, OH * Wp positions (Pr: rounded up to 16), xp's floats
};

// the grid of a stride-1 layer, or false (strided, or more than about a third of the grid thrown away)
static inline bool gm_grid_of(const gm_geom& g, gm_grid* q) {
    if (g.sh != 1 || g.sw != 1 || g.OH <= 0 || g.OW <= 0) return false;
    q->Hp = g.OH + (g.KH - 1) * g.dh;
    q->Wp = g.OW + (g.KW - 1) * g.dw;
    q->P = g.OH * q->Wp;
    q->Pr = (q->P + 15) / 16 * 16;
    // (+ the last window row's overrun past the grid and the rounding to whole vectors, read as zeros)
    q->size = g.C * q->Hp * q->Wp + (g.KW - 1) * g.dw + 16;
    return g.ph < q->Hp && g.pw < q->Wp && 10 * q->P <= 13 * g.OH * g.OW + 160;
}

// window row (c, kh, kw)'s offset in the padded image (the grid products' row offsets)
static inline void gm_grid_offsets(const gm_geom& g, const gm_grid& q, long long* off) {
    for (long long c = 0; c < g.C; ++c)
        for (long long kh = 0; kh < g.KH; ++kh)
            for (long long kw = 0; kw < g.KW; ++kw)
                off[(c * g.KH + kh) * g.KW + kw] = c * q.Hp * q.Wp + kh * g.dh * q.Wp + kw * g.dw;
}

// image x (C, H, W) into the padded grid xp (C, Hp, Wp), whose border is zero from its allocation
// and never written
static inline void gm_grid_image(const float* x, float* xp, const gm_geom& g, const gm_grid& q) {
    const long long w = g.W < q.Wp - g.pw ? g.W : q.Wp - g.pw, h = g.H < q.Hp - g.ph ? g.H : q.Hp - g.ph;
    for (long long c = 0; c < g.C; ++c)
        gm_rows_copy(xp + c * q.Hp * q.Wp + g.ph * q.Wp + g.pw, q.Wp, x + c * g.H * g.W, g.W, h, w);
}

// G[n] (O, OH * OW) onto the grid gp (O, Pr): its thrown-away cells zero from the allocation
static inline void gm_grid_gradient(const float* gn, float* gp, long long O, const gm_geom& g, const gm_grid& q) {
    for (long long o = 0; o < O; ++o) gm_rows_copy(gp + o * q.Pr, q.Wp, gn + o * g.OH * g.OW, g.OW, g.OH, g.OW);
}

// the fold of the grid's columns into dx (C, H, W): window row r = (c, kh, kw) of dcols at
// dcols + r * S (S: gm_grid_fold_stride, the row's Pr grid positions after a zero margin of M0 =
// gm_grid_fold_margin floats, zeros after them too), each padded-plane cell t the sum over the
// window rows of row r's position t - (kh dh Wp + kw dw), in (kh, kw) order from +0, summed in
// registers a vector of cells at a time (adding each row into the plane in turn reloaded cells
// stored a float off the last pass's, a store-forwarding stall each: 20 us an image), then the
// plane's inside copied out. A cell's sums are fold_image's, in its order: the thrown-away
// positions (and the margins) add +0, which changes nothing (a cell never holds -0).
// plane: gm_grid_plane floats.
static inline long long gm_grid_fold_margin(const gm_geom& g, const gm_grid& q) {
    return ((g.KH - 1) * g.dh * q.Wp + (g.KW - 1) * g.dw + 15) / 16 * 16;
}
static inline long long gm_grid_plane(const gm_grid& q) { return (q.Hp * q.Wp + 63) / 64 * 64; }
static inline long long gm_grid_fold_stride(const gm_geom& g, const gm_grid& q) {
    return gm_grid_fold_margin(g, q) + gm_grid_plane(q);
}
static inline void gm_grid_fold(const float* dcols, float* dx, const gm_geom& g, const gm_grid& q, float* plane) {
    const long long S = gm_grid_fold_stride(g, q), M0 = gm_grid_fold_margin(g, q), T = gm_grid_plane(q);
    const long long R = g.KH * g.KW;
    const long long t0 = g.ph * q.Wp / 64 * 64, t1 = (g.ph + g.H) * q.Wp < T ? (g.ph + g.H) * q.Wp : T;
    const float* rows[64];
    const float** rp = R <= 64 ? rows : new const float*[R];
    for (long long c = 0; c < g.C; ++c) {
        for (long long kh = 0; kh < g.KH; ++kh)
            for (long long kw = 0; kw < g.KW; ++kw)
                rp[kh * g.KW + kw] = dcols + (c * R + kh * g.KW + kw) * S + M0 - (kh * g.dh * q.Wp + kw * g.dw);
        // (64 cells at a time, the rows the image's inside lies on: four independent sums in
        // flight, where one vector's chain of KH KW dependent adds waited on each add's latency)
        for (long long t = t0; t < t1; t += 64) {
#if defined(__AVX512F__)
            __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
            for (long long r = 0; r < R; ++r) {
                const float* src = rp[r] + t;
                a0 = _mm512_add_ps(a0, _mm512_loadu_ps(src));
                a1 = _mm512_add_ps(a1, _mm512_loadu_ps(src + 16));
                a2 = _mm512_add_ps(a2, _mm512_loadu_ps(src + 32));
                a3 = _mm512_add_ps(a3, _mm512_loadu_ps(src + 48));
            }
            _mm512_storeu_ps(plane + t, a0);
            _mm512_storeu_ps(plane + t + 16, a1);
            _mm512_storeu_ps(plane + t + 32, a2);
            _mm512_storeu_ps(plane + t + 48, a3);
#elif defined(__AVX__)
            __m256 a[8];
            for (int v = 0; v < 8; ++v) a[v] = _mm256_setzero_ps();
            for (long long r = 0; r < R; ++r) {
                const float* src = rp[r] + t;
                for (int v = 0; v < 8; ++v) a[v] = _mm256_add_ps(a[v], _mm256_loadu_ps(src + 8 * v));
            }
            for (int v = 0; v < 8; ++v) _mm256_storeu_ps(plane + t + 8 * v, a[v]);
#else
            float acc[64];
            for (int l = 0; l < 64; ++l) acc[l] = 0.0f;
            for (long long r = 0; r < R; ++r) {
                const float* src = rp[r] + t;
                #pragma omp simd
                for (int l = 0; l < 64; ++l) acc[l] += src[l];
            }
            for (int l = 0; l < 64; ++l) plane[t + l] = acc[l];
#endif
        }
        float* o = dx + c * g.H * g.W;
        const long long w = g.W < q.Wp - g.pw ? g.W : q.Wp - g.pw;
        const long long h = g.H < q.Hp - g.ph ? g.H : q.Hp - g.ph;
        gm_rows_copy(o, g.W, plane + g.ph * q.Wp + g.pw, q.Wp, h, w);
        for (long long y = 0; y < g.H; ++y)  // (the columns and rows no window reaches)
            for (long long xx = y < h ? w : 0; xx < g.W; ++xx) o[y * g.W + xx] = 0.0f;
    }
    if (rp != rows) delete[] rp;
}

// the forward of a run of images on the grid: false where the grid product declined (the caller
// runs the compact product)
static bool conv2d_images_grid(gm_grid_fn grid, const float* x, const float* w, const float* bias, float* out,
                               const gm_geom& g, long long O, long long lo, long long hi) {
    gm_grid q;
    if (!gm_grid_of(g, &q)) return false;
    const long long K = g.C * g.KH * g.KW, L = g.OH * g.OW;
    // (asked first with no rows: a product the routing hands to NumPy's BLAS, a large image's,
    // declines before its padded image is allocated and zeroed)
    if (!grid(0, q.Pr, K, w, K, 1, nullptr, nullptr, nullptr, q.Pr, nullptr, L)) return false;
    float* xp = new float[q.size]();
    float* cg = new float[O * q.Pr];
    long long* off = new long long[K];
    gm_grid_offsets(g, q, off);
    bool ok = true;
    for (long long n = lo; n < hi && ok; ++n) {
        gm_grid_image(x + n * g.C * g.H * g.W, xp, g, q);
        ok = grid(O, q.Pr, K, w, K, 1, xp, off, cg, q.Pr, nullptr, L) != 0;
        if (!ok) break;
        for (long long i = 0; i < O; ++i) {  // the kept positions, the bias added (the compact path's sums)
            float* row = out + (n * O + i) * L;
            const float bi = bias ? bias[i] : 0.0f;
            gm_rows_copy(row, g.OW, cg + i * q.Pr, q.Wp, g.OH, g.OW, bias != nullptr, bi);
        }
    }
    delete[] xp;
    delete[] cg;
    delete[] off;
    return ok;
}

// the backward of a run of images on the grid: dx by the grid product W^T G[n] (its thrown-away
// positions written +0) and gm_grid_fold, or where that product is not the own sgemm's (a
// shallow one on NumPy's BLAS: the grid is null, or declines) by the compact product `gemm`
// and fold_image as the caller's path; dw (transposed, K x O) by gm_sgemm_grid_t over the kept
// positions (the window rows read in the padded image, G[n] as it is); db summed as the
// compact path sums it. False where the grid does not apply (strided layers, dw not asked for
// transposed, no grid_t): the caller's path then.
template <typename I>
static bool conv2d_images_backward_grid(gm_grid_fn grid, gm_grid_t_fn gridt, gm_conv_gemm_fn<float, I> gemm,
                                        const float* gout, const float* x, const float* w, float* dx, float* partial,
                                        double* dbp, const gm_geom& g, long long O, long long lo, long long hi,
                                        bool want_dx, bool want_dw, bool dw_t, bool want_db) {
    gm_grid q;
    if (!gm_grid_of(g, &q)) return false;
    const long long K = g.C * g.KH * g.KW, L = g.OH * g.OW;
    if (want_dw && !(dw_t && gridt)) return false;
    if (!want_dw && !grid) return false;
    const bool dx_grid = want_dx && grid && grid(0, q.Pr, O, w, 1, K, nullptr, nullptr, nullptr, q.Pr, nullptr, L);
    if (want_dx && !dx_grid && !want_dw) return false;
    const bool dx_compact = want_dx && !dx_grid;
    float* gp = dx_grid ? new float[O * q.Pr]() : nullptr;
    float* xp = want_dw ? new float[q.size]() : nullptr;
    const long long S = gm_grid_fold_stride(g, q), M0 = gm_grid_fold_margin(g, q);
    float* dcols = dx_grid ? new float[K * S + M0] : nullptr;
    if (dcols)  // (zero margins and the cells past a row's Pr positions, never written)
        for (long long r = 0; r <= K; ++r) {
            float* row = dcols + r * S;
            memset(row, 0, (size_t)M0 * sizeof(float));
            if (r < K) memset(row + M0 + q.Pr, 0, (size_t)(S - M0 - q.Pr) * sizeof(float));
        }
    float* plane = dx_grid ? new float[gm_grid_plane(q)] : nullptr;
    float* cols = dx_compact ? new float[K * L] : nullptr;
    const long long PH = (g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1, PW = (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1;
    float* cplane = dx_compact ? new float[PH * PW] : nullptr;
    gm_gather_fold* gather = dx_compact && gm_gather_fold::applies(g) ? new gm_gather_fold(g, K) : nullptr;
    long long* off = new long long[K + O];
    unsigned char* keep = new unsigned char[q.Pr];
    gm_grid_offsets(g, q, off);
    for (long long o = 0; o < O; ++o) off[K + o] = o * q.Pr;
    for (long long j = 0; j < q.Pr; ++j) keep[j] = (j < q.P && j % q.Wp < g.OW) ? 1 : 0;
    for (long long n = lo; n < hi; ++n) {
        const float* gn = gout + n * O * L;
        const float beta = n > lo ? 1.0f : 0.0f;
        if (want_db) gm_add_row_sums(gn, O, L, dbp);
        if (want_dw) {
            gm_grid_image(x + n * g.C * g.H * g.W, xp, g, q);
            gridt(K, O, L, g.OW, q.Wp, xp, off, gn, L, beta, partial, O);
        }
        if (dx_compact && gather) {
            gemm(GM_ROW_MAJOR, GM_TRANS, GM_NO_TRANS, (I)K, (I)L, (I)O, 1.0f, w, (I)K, gn, (I)L, 0.0f,
                 gather->product(), (I)gather->S);
            gather->fold(dx + n * g.C * g.H * g.W, g);
        } else if (dx_compact) {
            gemm(GM_ROW_MAJOR, GM_TRANS, GM_NO_TRANS, (I)K, (I)L, (I)O, 1.0f, w, (I)K, gn, (I)L, 0.0f, cols, (I)L);
            fold_image(cols, dx + n * g.C * g.H * g.W, g, cplane);
        } else if (want_dx) {
            gm_grid_gradient(gn, gp, O, g, q);
            grid(K, q.Pr, O, w, 1, K, gp, off + K, dcols + M0, S, keep, L);
            gm_grid_fold(dcols, dx + n * g.C * g.H * g.W, g, q, plane);
        }
    }
    delete[] gp;
    delete[] xp;
    delete[] dcols;
    delete[] plane;
    delete[] cols;
    delete[] cplane;
    delete gather;
    delete[] off;
    delete[] keep;
    return true;
}
