// The unit exporting gm_gemm.h's product under cblas_sgemm's signature, one symbol a BLAS
// integer width (gm_sgemm64: 64-bit, as NumPy's scipy-openblas64; gm_sgemm32: 32-bit), so
// that its address can stand in a table of BLAS routines (gmnative.gemm).
extern "C" void gm_sgemm64(int order, int ta, int tb, long long M, long long N, long long K, float alpha,
                           const float* A, long long lda, const float* B, long long ldb, float beta, float* C,
                           long long ldc) {
    gm_sgemm<long long>(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}
extern "C" void gm_sgemm32(int order, int ta, int tb, int M, int N, int K, float alpha, const float* A, int lda,
                           const float* B, int ldb, float beta, float* C, int ldc) {
    gm_sgemm<int>(order, ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

// The kernels' calling convention (gmnative.caller), for one product on the calling thread
// (gmnative.gemm.product): a = [A, B, C, d], d = [M, N, K, A transposed, B transposed]; A and B
// C-contiguous as stored (transposed: read as their transposes), C row-major M x N.
extern "C" void gm_sgemm_call(void* const* a, int) {
    const long long* d = (const long long*)a[3];
    const long long M = d[0], N = d[1], K = d[2];
    const bool ta = d[3] != 0, tb = d[4] != 0;
    gm_sgemm_rows(M, N, K, 1.0f, (const float*)a[0], ta ? 1 : K, ta ? M : 1, (const float*)a[1], tb ? K : N, tb, 0.0f,
                  (float*)a[2], N);
}
