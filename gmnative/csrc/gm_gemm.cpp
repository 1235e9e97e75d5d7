// The unit exporting gm_gemm.h's product under cblas_sgemm's signature, one symbol a BLAS
// integer width (gm_sgemm64: 64-bit, as NumPy's scipy-openblas64; gm_sgemm32: 32-bit), so
// that its address can stand in a table of BLAS routines (gmnative.gemm).
//
// Routed by the result's width and op(A)'s layout: products whose row-major result has
// GM_SGEMM_MIN_N to GM_SGEMM_MAX_N columns (the project's: a GPT block's 64-256, a classifier's
// 10) run here, and on AVX-512 also those up to GM_SGEMM_WIDE_N columns with A not transposed;
// others call NumPy's BLAS (gm_sgemm_use_blas), where OpenBLAS measured faster (a 512-wide
// result of a 256- or 2048-deep product with a transposed A, 2048 columns, 8 columns over a
// depth of 4096). Neither is split by the callers (they split rows), so a product takes one road
// whatever the split, and its bits stay those of one call.
#define GM_SGEMM_MIN_N 10
#define GM_SGEMM_MAX_N 320
// AVX-512 builds also take results of up to GM_SGEMM_WIDE_N columns where op(A) is A as stored
// (not transposed: A is not packed, and its rows are read in step): against OpenBLAS on one
// thread, 128 x 784 by 784 x 512 (W3's first layer, either B) 0.89x its time, 256 x 784 x 512
// 0.89x, 512 x 1024 x 512 0.95x, 256 x 256 x 1024 0.93x, 1024 x 1024 x 1024 1.01x; a transposed
// A at those widths measured 0.92-1.07x and 2048 columns 1.25x, so they stay with OpenBLAS. The
// rule reads the layout, never the rows, so a split product still takes one road.
// A shallow product stays with OpenBLAS at those widths: W6's eager step took 3% longer with its
// first convolution's 16 x 9 by 9 x 784 per-image products here.
#define GM_SGEMM_WIDE_MIN_K 64
#if GM_GEMM_VL == 16
#define GM_SGEMM_WIDE_N 1024
#else
#define GM_SGEMM_WIDE_N 0
#endif

typedef void (*gm_blas64_t)(int, int, int, long long, long long, long long, float, const float*, long long,
                            const float*, long long, float, float*, long long);
typedef void (*gm_blas32_t)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*,
                            int);
static void* gm_sgemm_blas = nullptr;  // NumPy's cblas_sgemm (null: every product here)
static int gm_sgemm_blas_ilp64 = 1;

extern "C" void gm_sgemm_use_blas(long long address, int ilp64) {
    gm_sgemm_blas = (void*)address;
    gm_sgemm_blas_ilp64 = ilp64;
}

// whether a row-major product whose result is n wide, k deep (op(A) transposed: a_transposed)
// runs here
static inline bool gm_sgemm_here(long long n, bool a_transposed = true, long long k = 0) {
    return gm_sgemm_blas == nullptr || (n >= GM_SGEMM_MIN_N && n <= GM_SGEMM_MAX_N)
           || (!a_transposed && k >= GM_SGEMM_WIDE_MIN_K && n > GM_SGEMM_MAX_N && n <= GM_SGEMM_WIDE_N);
}

static void gm_sgemm_blas_call(int order, int ta, int tb, long long M, long long N, long long K, float alpha,
                               const float* A, long long lda, const float* B, long long ldb, float beta, float* C,
                               long long ldc) {
    if (gm_sgemm_blas_ilp64) ((gm_blas64_t)gm_sgemm_blas)(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else ((gm_blas32_t)gm_sgemm_blas)(order, ta, tb, (int)M, (int)N, (int)K, alpha, A, (int)lda, B, (int)ldb, beta, C,
                                      (int)ldc);
}

template <typename I>
static void gm_sgemm_routed(int order, int ta, int tb, I M, I N, I K, float alpha, const float* A, I lda,
                            const float* B, I ldb, float beta, float* C, I ldc) {
    // (column-major: C^T = op(B)^T op(A)^T row-major, so B plays A's part)
    if (gm_sgemm_here(order == 102 ? (long long)M : (long long)N, (order == 102 ? tb : ta) == 112, (long long)K))
        gm_sgemm<I>(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    else gm_sgemm_blas_call(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

extern "C" void gm_sgemm64(int order, int ta, int tb, long long M, long long N, long long K, float alpha,
                           const float* A, long long lda, const float* B, long long ldb, float beta, float* C,
                           long long ldc) {
    gm_sgemm_routed<long long>(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
extern "C" void gm_sgemm32(int order, int ta, int tb, int M, int N, int K, float alpha, const float* A, int lda,
                           const float* B, int ldb, float beta, float* C, int ldc) {
    gm_sgemm_routed<int>(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
// the kernel alone, whatever the width (tests and benchmarks of the kernel itself)
extern "C" void gm_sgemm64_kernel(int order, int ta, int tb, long long M, long long N, long long K, float alpha,
                                  const float* A, long long lda, const float* B, long long ldb, float beta, float* C,
                                  long long ldc) {
    gm_sgemm<long long>(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// The floats a vector of this build holds (16: AVX-512, 8: AVX2 with FMA, 1: plain C). The kernel
// stands in for OpenBLAS by default only at 16 (gmnative.gemm.sgemm_address says why).
extern "C" int gm_sgemm_vector_floats() { return GM_GEMM_VL; }

// The kernels' calling convention (gmnative.caller), for one product on the calling thread
// (gmnative.gemm.product): a = [A, B, C, d], d = [M, N, K, A transposed, B transposed]; A and B
// C-contiguous as stored (transposed: read as their transposes), C row-major M x N.
extern "C" void gm_sgemm_call(void* const* a, int) {
    const long long* d = (const long long*)a[3];
    const long long M = d[0], N = d[1], K = d[2];
    const bool ta = d[3] != 0, tb = d[4] != 0;
    if (gm_sgemm_here(N, ta, K))
        gm_sgemm_rows(M, N, K, 1.0f, (const float*)a[0], ta ? 1 : K, ta ? M : 1, (const float*)a[1], tb ? K : N, tb,
                      0.0f, (float*)a[2], N);
    else gm_sgemm_blas_call(101, ta ? 112 : 111, tb ? 112 : 111, M, N, K, 1.0f, (const float*)a[0], ta ? M : K,
                            (const float*)a[1], tb ? K : N, 0.0f, (float*)a[2], N);
}

// -- products on a convolution's position grid (csrc/eager_conv.cpp, stride-1 layers) --------
// A stride-1 convolution's columns are shifted copies of the zero-padded image: window offset
// (c, kh, kw)'s row at output (oh, ow) is xp[c, oh + kh dh, ow + kw dw]. Indexing the outputs on
// the padded image's grid (position oh * Wp + ow, ow < Wp, the columns ow >= OW computed and
// thrown away) makes each row one contiguous run of xp, at offset c Hp Wp + kh dh Wp + kw dw:
// the product reads the image in place (no im2col copy; the rows overlap, so all of B is the
// 16 KiB padded image, in L1), and a W6-like 14 x 14 layer's 224 grid positions are 14 whole
// vectors (the 196 compact ones were 12 vectors and a 4-column edge tile at a quarter of the
// lanes). The same grid carries the input gradient's W^T G[n] (G[n] spread onto the grid, its
// thrown-away columns zero) and the weight gradient's sum over positions.
//
// Bits: each element is gm_sgemm_rows's sum (depth blocks of gm_gemm_kblock in order, one
// accumulator from 0 a block, an FMA a term, the block sums added to C in order), whatever its
// grid position, tile or edge: the bits of the compact product W @ cols (W^T @ G[n]) through
// the routed gm_sgemm, so the per-image path and the batch-major one (gemm_batched, the
// same routed sgemm) agree. gm_sgemm_grid runs only where that routing computes the compact
// product here (gm_sgemm_here of its width; route_n), and answers 0 elsewhere (the caller
// then runs the compact product through the routed sgemm).
#if defined(GM_GRID_MR)
#elif GM_GEMM_VL == 16
#define GM_GRID_MR 8  // 8 x 3 vectors: 24 accumulators, 3 loads and 8 broadcasts a depth step (the
#define GM_GRID_NV 3  // unaligned loads of B, most split over two cache lines, cost more than broadcasts:
                      // 4 x 7 measured 102 GFLOP/s, 4 x 6 129, 12 x 2 144, 8 x 3 147 on W6's forward)
#elif GM_GEMM_VL == 8
#define GM_GRID_MR 4  // 4 x 3 vectors: 12 of the 16 ymm registers
#define GM_GRID_NV 3
#else
#define GM_GRID_MR 4
#define GM_GRID_NV 4
#endif

// v with the lanes whose bit in `bits` is clear set to +0 (NaN and infinities included)
static inline gm_gemm_v gm_grid_keep(gm_gemm_v v, unsigned bits) {
#if GM_GEMM_VL == 16
    return _mm512_maskz_mov_ps((__mmask16)bits, v);
#elif GM_GEMM_VL == 8
    const __m256i lane = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i m = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)bits), lane), lane);
    return _mm256_and_ps(v, _mm256_castsi256_ps(m));
#else
    return (bits & 1u) ? v : 0.0f;
#endif
}

// One MR x NV-vector tile over depth [0, kc): B's row k at b + boff[k] (whole vectors, read in
// place), op(A)'s element (i, k) at a[i * ars + k * acs]; C = acc, or C + acc where `add`; then,
// where keep is given (one lane mask a vector), the cleared lanes written +0.
template <int MR, int NV>
static inline void gm_grid_tile(long long kc, const float* a, long long ars, long long acs, const float* b,
                                const long long* boff, float* c, long long ldc, bool add, const unsigned* keep) {
    gm_gemm_v acc[MR][NV];
    GM_GEMM_UNROLL
    for (int i = 0; i < MR; ++i)
        GM_GEMM_UNROLL
        for (int v = 0; v < NV; ++v) acc[i][v] = gm_gemm_zero();
    if (acs == 1) {
        const float* rows[MR];
        GM_GEMM_UNROLL
        for (int i = 0; i < MR; ++i) rows[i] = a + i * ars;
        for (long long k = 0; k < kc; ++k) {
            const float* bk = b + boff[k];
            gm_gemm_v bv[NV];
            GM_GEMM_UNROLL
            for (int v = 0; v < NV; ++v) bv[v] = gm_gemm_load(bk + v * GM_GEMM_VL);
            GM_GEMM_UNROLL
            for (int i = 0; i < MR; ++i) {
                const gm_gemm_v x = gm_gemm_bcast(rows[i] + k);
                GM_GEMM_UNROLL
                for (int v = 0; v < NV; ++v) acc[i][v] = gm_gemm_fma(x, bv[v], acc[i][v]);
            }
        }
    } else {
        for (long long k = 0; k < kc; ++k) {
            const float* bk = b + boff[k];
            gm_gemm_v bv[NV];
            GM_GEMM_UNROLL
            for (int v = 0; v < NV; ++v) bv[v] = gm_gemm_load(bk + v * GM_GEMM_VL);
            const float* col = a + k * acs;
            GM_GEMM_UNROLL
            for (int i = 0; i < MR; ++i) {
                const gm_gemm_v x = gm_gemm_bcast(col + i * ars);
                GM_GEMM_UNROLL
                for (int v = 0; v < NV; ++v) acc[i][v] = gm_gemm_fma(x, bv[v], acc[i][v]);
            }
        }
    }
    GM_GEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
        float* row = c + i * ldc;
        GM_GEMM_UNROLL
        for (int v = 0; v < NV; ++v) {
            gm_gemm_v t = acc[i][v];
            if (add) t = gm_gemm_add(gm_gemm_load(row + v * GM_GEMM_VL), t);
            if (keep) t = gm_grid_keep(t, keep[v]);
            gm_gemm_store_n(row + v * GM_GEMM_VL, t, GM_GEMM_VL);
        }
    }
}

template <int MR, int NV = GM_GRID_NV>
static inline void gm_grid_tile_nv(int nv, long long kc, const float* a, long long ars, long long acs,
                                   const float* b, const long long* boff, float* c, long long ldc, bool add,
                                   const unsigned* keep) {
    if constexpr (NV >= 1) {
        if (nv == NV) gm_grid_tile<MR, NV>(kc, a, ars, acs, b, boff, c, ldc, add, keep);
        else gm_grid_tile_nv<MR, NV - 1>(nv, kc, a, ars, acs, b, boff, c, ldc, add, keep);
    }
}

template <int MR = GM_GRID_MR>
static inline void gm_grid_tile_any(int mr, int nv, long long kc, const float* a, long long ars, long long acs,
                                    const float* b, const long long* boff, float* c, long long ldc, bool add,
                                    const unsigned* keep) {
    if constexpr (MR >= 1) {
        if (mr == MR) gm_grid_tile_nv<MR>(nv, kc, a, ars, acs, b, boff, c, ldc, add, keep);
        else gm_grid_tile_any<MR - 1>(mr, nv, kc, a, ars, acs, b, boff, c, ldc, add, keep);
    }
}

// C (M x P, ldc) = op(A) B for B's row k at b + boff[k], P a multiple of 16 (B readable over whole
// vectors); keep (or null): P bytes, 0 where C's column is to be +0 (a position thrown away)
extern "C" int gm_sgemm_grid(long long M, long long P, long long K, const float* a, long long ars, long long acs,
                             const float* b, const long long* boff, float* c, long long ldc,
                             const unsigned char* keep, long long route_n) {
    if (!gm_sgemm_here(route_n) || P % 16 != 0) return 0;
    if (M <= 0 || P <= 0) return 1;
    if (K <= 0) {
        for (long long i = 0; i < M; ++i) memset(c + i * ldc, 0, (size_t)P * sizeof(float));
        return 1;
    }
    const long long nvec = P / GM_GEMM_VL, chunks = (nvec + GM_GRID_NV - 1) / GM_GRID_NV;
    unsigned bits_local[256];
    unsigned* bits = nullptr;
    if (keep) {
        bits = nvec <= 256 ? bits_local : new unsigned[nvec];
        for (long long v = 0; v < nvec; ++v) {
            unsigned m = 0;
            for (int l = 0; l < GM_GEMM_VL; ++l) m |= (keep[v * GM_GEMM_VL + l] ? 1u : 0u) << l;
            bits[v] = m;
        }
    }
    const long long kblk = gm_gemm_kblock(K);
    for (long long pc = 0; pc < K; pc += kblk) {
        const long long kc = K - pc < kblk ? K - pc : kblk;
        const bool add = pc > 0, last = pc + kc >= K;
        for (long long i0 = 0; i0 < M; i0 += GM_GRID_MR) {
            const int mr = M - i0 < GM_GRID_MR ? (int)(M - i0) : GM_GRID_MR;
            const float* ai = a + i0 * ars + pc * acs;
            for (long long q = 0; q < chunks; ++q) {  // (vector chunks of balanced sizes)
                const long long v0 = nvec * q / chunks, v1 = nvec * (q + 1) / chunks;
                gm_grid_tile_any(mr, (int)(v1 - v0), kc, ai, ars, acs, b + v0 * GM_GEMM_VL, boff + pc,
                                 c + i0 * ldc + v0 * GM_GEMM_VL, ldc, add, last && bits ? bits + v0 : nullptr);
            }
        }
    }
    if (bits && bits != bits_local) delete[] bits;
    return 1;
}

// One MR x NR tile of a weight gradient over the compact positions [p0, p0 + kc): op(A)'s row i
// at a + aoff[i], its position p at (p / run) * stride + p % run (an output row's `run` cells,
// then a jump over the grid's thrown-away columns to the next row's), B's panel packed (NR
// wide, zero-padded); C = acc, or C + acc where `add`, for the first nr columns.
template <int MR>
static inline void gm_runs_tile(long long kc, long long p0, long long run, long long stride, const float* a,
                                const long long* aoff, const float* bp, float* c, long long ldc, int nr, bool add) {
    gm_gemm_v acc[MR][GM_GEMM_NV];
    GM_GEMM_UNROLL
    for (int i = 0; i < MR; ++i)
        GM_GEMM_UNROLL
        for (int v = 0; v < GM_GEMM_NV; ++v) acc[i][v] = gm_gemm_zero();
    const float* rows[MR];
    GM_GEMM_UNROLL
    for (int i = 0; i < MR; ++i) rows[i] = a + aoff[i];
    long long ow = p0 % run, at = (p0 / run) * stride + ow;
    const long long jump = stride - run + 1;
    for (long long k = 0; k < kc; ++k) {
        gm_gemm_v bv[GM_GEMM_NV];
        GM_GEMM_UNROLL
        for (int v = 0; v < GM_GEMM_NV; ++v) bv[v] = gm_gemm_load(bp + k * GM_GEMM_NR + v * GM_GEMM_VL);
        GM_GEMM_UNROLL
        for (int i = 0; i < MR; ++i) {
            const gm_gemm_v x = gm_gemm_bcast(rows[i] + at);
            GM_GEMM_UNROLL
            for (int v = 0; v < GM_GEMM_NV; ++v) acc[i][v] = gm_gemm_fma(x, bv[v], acc[i][v]);
        }
        if (++ow == run) {
            ow = 0;
            at += jump;
        } else {
            ++at;
        }
    }
    GM_GEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
        float* row = c + i * ldc;
        GM_GEMM_UNROLL
        for (int v = 0; v < GM_GEMM_NV; ++v) {
            const int n = nr - v * GM_GEMM_VL;
            if (n <= 0) break;
            gm_gemm_v t = acc[i][v];
            if (add) t = gm_gemm_add(gm_gemm_load_n(row + v * GM_GEMM_VL, n), t);
            gm_gemm_store_n(row + v * GM_GEMM_VL, t, n);
        }
    }
}

template <int R = GM_GEMM_MR>
static inline void gm_runs_tile_rows(int mr, long long kc, long long p0, long long run, long long stride,
                                     const float* a, const long long* aoff, const float* bp, float* c, long long ldc,
                                     int nr, bool add) {
    if constexpr (R >= 1) {
        if (mr == R) gm_runs_tile<R>(kc, p0, run, stride, a, aoff, bp, c, ldc, nr, add);
        else gm_runs_tile_rows<R - 1>(mr, kc, p0, run, stride, a, aoff, bp, c, ldc, nr, add);
    }
}

// C (M x N, ldc) = sum over the L compact positions p of a[aoff[i] + (p / run) * stride + p % run]
// bt[j * ldb + p] (+ C where beta is not 0): a weight gradient sum_p cols[i, p] G[n][j, p] with
// window row i = (c, kh, kw) read in the padded image in place (run = OW, stride = Wp: only the
// kept positions, so no x * 0 term of a thrown-away one) and G[n] (N rows of L) transposed in
// the packing; gm_sgemm_rows's depth blocks, in order.
extern "C" void gm_sgemm_grid_t(long long M, long long N, long long L, long long run, long long stride,
                                const float* a, const long long* aoff, const float* bt, long long ldb, float beta,
                                float* c, long long ldc) {
    if (M <= 0 || N <= 0) return;
    if (L <= 0 || run <= 0) {
        if (beta == 0.0f)
            for (long long i = 0; i < M; ++i) memset(c + i * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
    const long long kblk = gm_gemm_kblock(L);
    const long long ncmax = N < GM_GEMM_NC ? N : GM_GEMM_NC;
    float* bp = gm_gemm_buffer((size_t)kblk * (size_t)((ncmax + GM_GEMM_NR - 1) / GM_GEMM_NR * GM_GEMM_NR));
    if (!bp) abort();
    for (long long jc = 0; jc < N; jc += GM_GEMM_NC) {
        const long long nc = N - jc < GM_GEMM_NC ? N - jc : GM_GEMM_NC;
        for (long long pc = 0; pc < L; pc += kblk) {
            const long long kc = L - pc < kblk ? L - pc : kblk;
            const bool add = pc > 0 || beta != 0.0f;
            gm_gemm_pack_b(bt, ldb, true, pc, jc, kc, nc, bp);
            for (long long i0 = 0; i0 < M; i0 += GM_GEMM_MR) {
                const int mr = M - i0 < GM_GEMM_MR ? (int)(M - i0) : GM_GEMM_MR;
                for (long long j0 = 0; j0 < nc; j0 += GM_GEMM_NR) {
                    const int nr = nc - j0 < GM_GEMM_NR ? (int)(nc - j0) : GM_GEMM_NR;
                    gm_runs_tile_rows(mr, kc, pc, run, stride, a, aoff + i0, bp + j0 * kc, c + i0 * ldc + jc + j0,
                                      ldc, nr, add);
                }
            }
        }
    }
}
