// The unit exporting gm_gemm.h's product under cblas_sgemm's signature, one symbol a BLAS
// integer width (gm_sgemm64: 64-bit, as NumPy's scipy-openblas64; gm_sgemm32: 32-bit), so
// that its address can stand in a table of BLAS routines (gmnative.gemm).
//
// Routed by the result's width alone: products whose row-major result has GM_SGEMM_MIN_N to
// GM_SGEMM_MAX_N columns (the project's: a GPT block's 64-256, a classifier's 10) run here;
// wider or narrower ones call NumPy's BLAS (gm_sgemm_use_blas), where OpenBLAS measured faster
// (a 512-wide result of a 256- or 2048-deep product with a transposed operand, 1024 x 1024,
// 8 columns over a depth of 4096). The width is not split by the callers (they split rows), so
// a product takes one road whatever the split, and its bits stay those of one call.
#define GM_SGEMM_MIN_N 10
#define GM_SGEMM_MAX_N 320

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

static inline bool gm_sgemm_here(long long n) {
    return gm_sgemm_blas == nullptr || (n >= GM_SGEMM_MIN_N && n <= GM_SGEMM_MAX_N);
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
    if (gm_sgemm_here(order == 102 ? (long long)M : (long long)N))
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

// The kernels' calling convention (gmnative.caller), for one product on the calling thread
// (gmnative.gemm.product): a = [A, B, C, d], d = [M, N, K, A transposed, B transposed]; A and B
// C-contiguous as stored (transposed: read as their transposes), C row-major M x N.
extern "C" void gm_sgemm_call(void* const* a, int) {
    const long long* d = (const long long*)a[3];
    const long long M = d[0], N = d[1], K = d[2];
    const bool ta = d[3] != 0, tb = d[4] != 0;
    if (gm_sgemm_here(N))
        gm_sgemm_rows(M, N, K, 1.0f, (const float*)a[0], ta ? 1 : K, ta ? M : 1, (const float*)a[1], tb ? K : N, tb,
                      0.0f, (float*)a[2], N);
    else gm_sgemm_blas_call(101, ta ? 112 : 111, tb ? 112 : 111, M, N, K, 1.0f, (const float*)a[0], ta ? M : K,
                            (const float*)a[1], tb ? K : N, 0.0f, (float*)a[2], N);
}
