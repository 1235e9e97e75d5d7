
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
