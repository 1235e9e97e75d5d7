// A single-precision matrix product C = alpha op(A) op(B) + beta C on one thread, with the
// cblas_sgemm calling convention (row- or column-major, either operand transposed, leading
// dimensions), standing in for NumPy's OpenBLAS where the project's float32 products call
// sgemm: eager's row blocks (csrc/eager_gemm.cpp), eager's and the generated code's one-call
// products and the generated C loops' gm_blas table (gmnative.gemm, csrc/gm_gemm.cpp), and a
// CNN's per-image products at least 64 deep (gmnative.conv_kernels; a stride-1 layer's on the
// padded image's grid, gm_sgemm_grid in csrc/gm_gemm.cpp, on these tiles' arithmetic).
//
// Why our own: eager splits a product by rows across its threads, one single-threaded call a
// part, and the project's products are small (512x64 by 64x256 and the like), where NumPy's
// OpenBLAS measured 95-128 GFLOP/s a core, well below what two AVX-512 FMA units allow. Here:
//
// - B (op(B), K x N) is packed into NR-wide panels (KC x NR each, zero-padded at the right
//   edge), a KC x NC block at a time (in L2), where it is transposed or A has GM_GEMM_PACK_ROWS
//   rows or more to reuse it; otherwise it is read in place (masked loads at the right edge);
// - A is never packed: the micro-kernel broadcasts op(A)'s elements straight from A with its
//   row and column strides (a transposed A reads MR consecutive floats a k, a plain one MR
//   rows in step), so a product of 64 columns pays no transpose of A;
// - the micro-kernel keeps an MR x NR tile of C in registers (AVX-512: 12 x 32 in 24 zmm,
//   AVX2 with FMA: 6 x 16 in 12 ymm, else a plain C 4 x 4 tile), one FMA per multiply-add;
//   the MR x KC sliver of A stays in L1 while the kernel walks the NR panels of B;
// - a transposed B wider than A is tall is computed as C^T = op(B)^T op(A)^T (B then read in
//   place), through a buffer.
//
// Summation order (why the bits do not depend on how a product is split): each element of
// C is the sum over k in blocks of GM_GEMM_KC (128; a depth up to 160 one block), in order; within a block
// one accumulator starts at 0 and adds a[i,k] b[k,j] for k in order (an FMA each); the
// block's sum is then added to C (or written, for the first block with beta 0). Nothing
// depends on the element's position in its tile, the tile's position in C, the edge tiles
// or the row range of the call: a product split by rows across threads gives the bits of
// one call, and eager and the generated code give the same bits for the same product.
// Blocks are fixed by K alone.
#include <immintrin.h>
#include <stdlib.h>
#include <string.h>

#define GM_GEMM_KC 128
// a depth up to this is one block (a 144-deep product, a CNN's 16-channel 3x3 layer, took a
// second pass of 16 over every tile: its start and its C reloaded and stored again)
#define GM_GEMM_KC_ONE 160

// the depth block of a product K deep: all of it up to GM_GEMM_KC_ONE, else GM_GEMM_KC
static inline long long gm_gemm_kblock(long long K) { return K <= GM_GEMM_KC_ONE ? K : GM_GEMM_KC; }
#define GM_GEMM_NC 512
#ifndef GM_GEMM_PACK_ROWS
#define GM_GEMM_PACK_ROWS 96
#endif

#if defined(__AVX512F__)
#define GM_GEMM_VL 16
#define GM_GEMM_MR 12
typedef __m512 gm_gemm_v;
static inline gm_gemm_v gm_gemm_zero() { return _mm512_setzero_ps(); }
static inline gm_gemm_v gm_gemm_load(const float* p) { return _mm512_loadu_ps(p); }
static inline gm_gemm_v gm_gemm_bcast(const float* p) { return _mm512_set1_ps(*p); }
static inline gm_gemm_v gm_gemm_fma(gm_gemm_v a, gm_gemm_v b, gm_gemm_v c) { return _mm512_fmadd_ps(a, b, c); }
static inline gm_gemm_v gm_gemm_add(gm_gemm_v a, gm_gemm_v b) { return _mm512_add_ps(a, b); }
static inline gm_gemm_v gm_gemm_mul(gm_gemm_v a, gm_gemm_v b) { return _mm512_mul_ps(a, b); }
static inline gm_gemm_v gm_gemm_load_n(const float* p, int n) {
    return n >= 16 ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps((__mmask16)((1u << (n > 0 ? n : 0)) - 1u), p);
}
static inline void gm_gemm_store_n(float* p, gm_gemm_v v, int n) {
    if (n >= 16) _mm512_storeu_ps(p, v);
    else _mm512_mask_storeu_ps(p, (__mmask16)((1u << n) - 1u), v);
}
#elif defined(__AVX2__) && defined(__FMA__)
#define GM_GEMM_VL 8
#define GM_GEMM_MR 6
typedef __m256 gm_gemm_v;
static inline gm_gemm_v gm_gemm_zero() { return _mm256_setzero_ps(); }
static inline gm_gemm_v gm_gemm_load(const float* p) { return _mm256_loadu_ps(p); }
static inline gm_gemm_v gm_gemm_bcast(const float* p) { return _mm256_broadcast_ss(p); }
static inline gm_gemm_v gm_gemm_fma(gm_gemm_v a, gm_gemm_v b, gm_gemm_v c) { return _mm256_fmadd_ps(a, b, c); }
static inline gm_gemm_v gm_gemm_add(gm_gemm_v a, gm_gemm_v b) { return _mm256_add_ps(a, b); }
static inline gm_gemm_v gm_gemm_mul(gm_gemm_v a, gm_gemm_v b) { return _mm256_mul_ps(a, b); }
static inline __m256i gm_gemm_mask(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static inline gm_gemm_v gm_gemm_load_n(const float* p, int n) {
    return n >= 8 ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, gm_gemm_mask(n));
}
static inline void gm_gemm_store_n(float* p, gm_gemm_v v, int n) {
    if (n >= 8) _mm256_storeu_ps(p, v);
    else _mm256_maskstore_ps(p, gm_gemm_mask(n), v);
}
#else
// plain C: one float a lane; a multiply then an add (the build keeps -ffp-contract=off, and
// the multiply-add is then rounded twice, the same way for every element)
#define GM_GEMM_VL 1
#define GM_GEMM_MR 4
typedef float gm_gemm_v;
static inline gm_gemm_v gm_gemm_zero() { return 0.0f; }
static inline gm_gemm_v gm_gemm_load(const float* p) { return *p; }
static inline gm_gemm_v gm_gemm_bcast(const float* p) { return *p; }
static inline gm_gemm_v gm_gemm_fma(gm_gemm_v a, gm_gemm_v b, gm_gemm_v c) { return c + a * b; }
static inline gm_gemm_v gm_gemm_add(gm_gemm_v a, gm_gemm_v b) { return a + b; }
static inline gm_gemm_v gm_gemm_mul(gm_gemm_v a, gm_gemm_v b) { return a * b; }
static inline gm_gemm_v gm_gemm_load_n(const float* p, int n) { return n >= 1 ? *p : 0.0f; }
static inline void gm_gemm_store_n(float* p, gm_gemm_v v, int n) { if (n >= 1) *p = v; }
#endif

// Before each loop over a tile's rows or vectors: unrolled early, so that every accumulator
// becomes a register of its own. Left to -O3, gcc 12 kept the AVX2 build's 6 x 16 tile in a
// stack array and stored all 12 accumulators after every step of the depth loop (12 stores to
// 12 FMAs: the kernel took 1.4-1.7x OpenBLAS's time); the AVX-512 build happened to escape it.
#define GM_GEMM_UNROLL _Pragma("GCC unroll 32")

// panel width: two vectors (AVX-512 32, AVX2 16); the plain C tile is 4 x 4
#if GM_GEMM_VL == 1
#define GM_GEMM_NV 4
#else
#define GM_GEMM_NV 2
#endif
#define GM_GEMM_NR (GM_GEMM_VL * GM_GEMM_NV)

// One MR x (NV vectors) tile: acc = sum over k < kc of op(A)[i, k] B[k, :] (A's element (i, k)
// at a[i * ars + k * acs]; B's row k at b + k * bs: a packed panel, bs = NR, or op(B) read in
// place, bs = ldb, EDGE then loading only the first nr columns), then C = alpha acc (+ C when
// `add`), for the first `nr` columns of the tile and the MR rows. aoff (with acs 1): row i of op(A)
// at a + aoff[i] instead of a + i * ars (a convolution's window rows read in the padded image).
template <int MR, int NV, bool EDGE>
static inline void gm_gemm_tile(long long kc, const float* a, long long ars, long long acs, const float* b,
                                long long bs, float* c, long long ldc, int nr, float alpha, bool add,
                                const long long* aoff = nullptr) {
    gm_gemm_v acc[MR][NV];
    GM_GEMM_UNROLL
    for (int i = 0; i < MR; ++i)
        GM_GEMM_UNROLL
        for (int v = 0; v < NV; ++v) acc[i][v] = gm_gemm_zero();
    if (acs == 1) {  // op(A) row-major: MR rows read in step
        const float* rows[MR];
        GM_GEMM_UNROLL
        for (int i = 0; i < MR; ++i) rows[i] = aoff ? a + aoff[i] : a + i * ars;
        for (long long k = 0; k < kc; ++k) {
            gm_gemm_v bv[NV];
            GM_GEMM_UNROLL
            for (int v = 0; v < NV; ++v)
                bv[v] = EDGE ? gm_gemm_load_n(b + k * bs + v * GM_GEMM_VL, nr - v * GM_GEMM_VL)
                             : gm_gemm_load(b + k * bs + v * GM_GEMM_VL);
            GM_GEMM_UNROLL
            for (int i = 0; i < MR; ++i) {
                const gm_gemm_v x = gm_gemm_bcast(rows[i] + k);
                GM_GEMM_UNROLL
                for (int v = 0; v < NV; ++v) acc[i][v] = gm_gemm_fma(x, bv[v], acc[i][v]);
            }
        }
    } else {  // a transposed A (ars == 1) or another stride: MR elements of one k together
        for (long long k = 0; k < kc; ++k) {
            gm_gemm_v bv[NV];
            GM_GEMM_UNROLL
            for (int v = 0; v < NV; ++v)
                bv[v] = EDGE ? gm_gemm_load_n(b + k * bs + v * GM_GEMM_VL, nr - v * GM_GEMM_VL)
                             : gm_gemm_load(b + k * bs + v * GM_GEMM_VL);
            const float* col = a + k * acs;
            GM_GEMM_UNROLL
            for (int i = 0; i < MR; ++i) {
                const gm_gemm_v x = gm_gemm_bcast(col + i * ars);
                GM_GEMM_UNROLL
                for (int v = 0; v < NV; ++v) acc[i][v] = gm_gemm_fma(x, bv[v], acc[i][v]);
            }
        }
    }
    const gm_gemm_v va = gm_gemm_bcast(&alpha);
    const bool scale = alpha != 1.0f;
    GM_GEMM_UNROLL
    for (int i = 0; i < MR; ++i) {
        float* row = c + i * ldc;
        GM_GEMM_UNROLL
        for (int v = 0; v < NV; ++v) {
            const int n = nr - v * GM_GEMM_VL;
            if (n <= 0) break;
            gm_gemm_v t = scale ? gm_gemm_mul(acc[i][v], va) : acc[i][v];
            if (add) t = gm_gemm_add(gm_gemm_load_n(row + v * GM_GEMM_VL, n), t);
            gm_gemm_store_n(row + v * GM_GEMM_VL, t, n);
        }
    }
}

// the tile for the last mr (< MR) rows: one instantiation per row count
template <int NV, bool EDGE, int R = GM_GEMM_MR - 1>
static inline void gm_gemm_tile_rows(int mr, long long kc, const float* a, long long ars, long long acs,
                                     const float* b, long long bs, float* c, long long ldc, int nr, float alpha,
                                     bool add, const long long* aoff = nullptr) {
    if constexpr (R >= 1) {
        if (mr == R) gm_gemm_tile<R, NV, EDGE>(kc, a, ars, acs, b, bs, c, ldc, nr, alpha, add, aoff);
        else gm_gemm_tile_rows<NV, EDGE, R - 1>(mr, kc, a, ars, acs, b, bs, c, ldc, nr, alpha, add, aoff);
    }
}

// one tile of any size: MR rows or fewer, NR columns or fewer (one vector where nr allows)
template <bool EDGE>
static inline void gm_gemm_any_tile(int mr, long long kc, const float* a, long long ars, long long acs,
                                    const float* b, long long bs, float* c, long long ldc, int nr, float alpha,
                                    bool add, const long long* aoff = nullptr) {
#if GM_GEMM_NV == 2
    if (nr <= GM_GEMM_VL) {  // a right edge of one vector: half the work
        if (mr == GM_GEMM_MR) gm_gemm_tile<GM_GEMM_MR, 1, EDGE>(kc, a, ars, acs, b, bs, c, ldc, nr, alpha, add, aoff);
        else gm_gemm_tile_rows<1, EDGE>(mr, kc, a, ars, acs, b, bs, c, ldc, nr, alpha, add, aoff);
        return;
    }
#endif
    if (mr == GM_GEMM_MR)
        gm_gemm_tile<GM_GEMM_MR, GM_GEMM_NV, EDGE>(kc, a, ars, acs, b, bs, c, ldc, nr, alpha, add, aoff);
    else gm_gemm_tile_rows<GM_GEMM_NV, EDGE>(mr, kc, a, ars, acs, b, bs, c, ldc, nr, alpha, add, aoff);
}

// op(B)[pc:pc+kc, jc:jc+nc] into panels of NR columns (k-major inside a panel, zeros past nc)
static inline void gm_gemm_pack_b(const float* b, long long ldb, bool tb, long long pc, long long jc, long long kc,
                                  long long nc, float* dst) {
    for (long long j0 = 0; j0 < nc; j0 += GM_GEMM_NR) {
        const long long w = nc - j0 < GM_GEMM_NR ? nc - j0 : GM_GEMM_NR;
        float* panel = dst + j0 * kc;
        if (!tb && w == GM_GEMM_NR) {  // (whole vectors: a library memcpy a row cost as much as the rest)
            for (long long k = 0; k < kc; ++k) {
                const float* src = b + (pc + k) * ldb + jc + j0;
                float* out = panel + k * GM_GEMM_NR;
                for (int v = 0; v < GM_GEMM_NV; ++v) gm_gemm_store_n(out + v * GM_GEMM_VL, gm_gemm_load(src + v * GM_GEMM_VL), GM_GEMM_VL);
            }
        } else if (!tb) {
            for (long long k = 0; k < kc; ++k) {
                const float* src = b + (pc + k) * ldb + jc + j0;
                float* out = panel + k * GM_GEMM_NR;
                memcpy(out, src, (size_t)w * sizeof(float));
                for (long long j = w; j < GM_GEMM_NR; ++j) out[j] = 0.0f;
            }
        } else {
            if (w < GM_GEMM_NR) memset(panel, 0, (size_t)(kc * GM_GEMM_NR) * sizeof(float));  // (the padding)
            long long j = 0;
#if defined(__AVX__)
            // 8 x 8 blocks transposed in registers (a scalar copy cost a tenth of W5's X W^T)
            const long long k8 = kc - kc % 8;
            for (; j + 8 <= w; j += 8) {
                const float* src = b + (jc + j0 + j) * ldb + pc;
                for (long long k = 0; k < k8; k += 8) {
                    __m256 r[8], t[8];
                    for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(src + q * ldb + k);
                    for (int q = 0; q < 8; q += 2) {
                        t[q] = _mm256_unpacklo_ps(r[q], r[q + 1]);
                        t[q + 1] = _mm256_unpackhi_ps(r[q], r[q + 1]);
                    }
                    for (int q = 0; q < 8; q += 4) {
                        r[q] = _mm256_shuffle_ps(t[q], t[q + 2], 0x44);
                        r[q + 1] = _mm256_shuffle_ps(t[q], t[q + 2], 0xEE);
                        r[q + 2] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0x44);
                        r[q + 3] = _mm256_shuffle_ps(t[q + 1], t[q + 3], 0xEE);
                    }
                    // r[q], q < 4: depth q (low half) and q + 4 (high half) of columns 0-3; r[q + 4]: of 4-7
                    for (int q = 0; q < 4; ++q) {
                        _mm256_storeu_ps(panel + (k + q) * GM_GEMM_NR + j, _mm256_permute2f128_ps(r[q], r[q + 4], 0x20));
                        _mm256_storeu_ps(panel + (k + q + 4) * GM_GEMM_NR + j,
                                         _mm256_permute2f128_ps(r[q], r[q + 4], 0x31));
                    }
                }
                for (long long q = 0; q < 8; ++q)
                    for (long long k = k8; k < kc; ++k) panel[k * GM_GEMM_NR + j + q] = src[q * ldb + k];
            }
#endif
            for (; j < w; ++j) {
                const float* src = b + (jc + j0 + j) * ldb + pc;
                for (long long k = 0; k < kc; ++k) panel[k * GM_GEMM_NR + j] = src[k];
            }
        }
    }
}

// the calling thread's buffers (0: B's panels, 1: a transposed result), grown on demand and
// kept (one set per OpenMP worker)
struct gm_gemm_buffers {
    float* buf[2] = {nullptr, nullptr};
    size_t cap[2] = {0, 0};
    ~gm_gemm_buffers() { free(buf[0]); free(buf[1]); }  // (a thread's exit frees them)
};
static inline float* gm_gemm_buffer(size_t floats, int which = 0) {
    static thread_local gm_gemm_buffers b;
    if (floats > b.cap[which]) {
        free(b.buf[which]);
        const size_t bytes = ((floats * sizeof(float) + 63) / 64) * 64;
        b.buf[which] = (float*)aligned_alloc(64, bytes);
        b.cap[which] = b.buf[which] ? floats : 0;
    }
    return b.buf[which];
}

// row-major C (M x N, ldc) = alpha op(A) op(B) + beta C; op(A) element (i, k) at
// a[i * ars + k * acs], op(B) (K x N) read from b as stored (tb: transposed, ldb)
static void gm_sgemm_rows(long long M, long long N, long long K, float alpha, const float* a, long long ars,
                          long long acs, const float* b, long long ldb, bool tb, float beta, float* c, long long ldc) {
    if (M <= 0 || N <= 0) return;
    if (beta != 0.0f && beta != 1.0f)
        for (long long i = 0; i < M; ++i)
            for (long long j = 0; j < N; ++j) c[i * ldc + j] *= beta;
    if (K <= 0 || alpha == 0.0f) {
        if (beta == 0.0f)
            for (long long i = 0; i < M; ++i) memset(c + i * ldc, 0, (size_t)N * sizeof(float));
        return;
    }
    if (beta != 0.0f) beta = 1.0f;  // (C scaled above)
    if (tb && M < N && M * N <= (1LL << 20) && (acs == 1 || ars == 1)) {
        // A transposed B, wider than A is tall (a weight gradient G cols^T): C^T = op(B)^T op(A)^T,
        // whose left operand is B as stored (read in place) and whose right one, op(A)^T, is
        // M columns wide (packed where A is not transposed): M x K floats packed, not K x N.
        // The same products summed in the same order (an FMA's two factors commute): the bits
        // of the direct product. C^T is made in a buffer (of at most 4 MiB) and copied back.
        float* t = gm_gemm_buffer((size_t)(M * N), 1);
        if (!t) abort();
        if (beta != 0.0f)
            for (long long i = 0; i < M; ++i)
                for (long long j = 0; j < N; ++j) t[j * M + i] = c[i * ldc + j];
        if (ars == 1) gm_sgemm_rows(N, M, K, alpha, b, ldb, 1, a, acs, false, beta, t, M);
        else gm_sgemm_rows(N, M, K, alpha, b, ldb, 1, a, ars, true, beta, t, M);
        for (long long i = 0; i < M; ++i)
            for (long long j = 0; j < N; ++j) c[i * ldc + j] = t[j * M + i];
        return;
    }
    const long long kblk = gm_gemm_kblock(K);
    const long long ncmax = N < GM_GEMM_NC ? N : GM_GEMM_NC;
    const size_t bfloats = (size_t)kblk * (size_t)((ncmax + GM_GEMM_NR - 1) / GM_GEMM_NR * GM_GEMM_NR);
    // op(B) stored row-major is read in place (its rows ldb apart; the right edge's loads masked):
    // packing it cost as much as the product where A has few rows (a CNN's 32 x 144 weight);
    // a transposed B is packed
    const bool pack = tb || M >= GM_GEMM_PACK_ROWS;
    float* bp = pack ? gm_gemm_buffer(bfloats) : nullptr;
    if (pack && !bp) abort();
    for (long long jc = 0; jc < N; jc += GM_GEMM_NC) {
        const long long nc = N - jc < GM_GEMM_NC ? N - jc : GM_GEMM_NC;
        for (long long pc = 0; pc < K; pc += kblk) {
            const long long kc = K - pc < kblk ? K - pc : kblk;
            const bool add = pc > 0 || beta != 0.0f;
            if (pack) gm_gemm_pack_b(b, ldb, tb, pc, jc, kc, nc, bp);
            for (long long i0 = 0; i0 < M; i0 += GM_GEMM_MR) {
                const int mr = M - i0 < GM_GEMM_MR ? (int)(M - i0) : GM_GEMM_MR;
                const float* ai = a + i0 * ars + pc * acs;
                for (long long j0 = 0; j0 < nc; j0 += GM_GEMM_NR) {
                    const int nr = nc - j0 < GM_GEMM_NR ? (int)(nc - j0) : GM_GEMM_NR;
                    float* cij = c + i0 * ldc + jc + j0;
                    if (pack) gm_gemm_any_tile<false>(mr, kc, ai, ars, acs, bp + j0 * kc, GM_GEMM_NR, cij, ldc, nr, alpha, add);
                    else if (nr == GM_GEMM_NR)
                        gm_gemm_any_tile<false>(mr, kc, ai, ars, acs, b + pc * ldb + jc + j0, ldb, cij, ldc, nr, alpha, add);
                    else gm_gemm_any_tile<true>(mr, kc, ai, ars, acs, b + pc * ldb + jc + j0, ldb, cij, ldc, nr, alpha, add);
                }
            }
        }
    }
}

// cblas_sgemm's arguments (order 101 row-major, 102 column-major; trans 111 no, 112/113 yes);
// I: the integer type of the BLAS it stands in for (64-bit for NumPy's scipy-openblas64)
template <typename I>
static void gm_sgemm(int order, int transa, int transb, I M, I N, I K, float alpha, const float* A, I lda,
                     const float* B, I ldb, float beta, float* C, I ldc) {
    bool ta = transa != 111, tb = transb != 111;
    long long m = M, n = N, la = lda, lb = ldb;
    if (order == 102) {  // column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T, the
        // buffers read as they lie: swap the operands, their flags and the two sizes
        const float* t = A; A = B; B = t;
        const long long l = la; la = lb; lb = l;
        const bool x = ta; ta = tb; tb = x;
        m = N; n = M;
    }
    gm_sgemm_rows(m, n, (long long)K, alpha, A, ta ? 1 : la, ta ? la : 1, B, lb, tb, beta, C, (long long)ldc);
}
