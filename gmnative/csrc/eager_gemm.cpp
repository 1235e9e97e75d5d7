
#include <omp.h>

// a matrix product C = op(A) op(B) as `parts` BLAS calls, each on its own consecutive rows of
// C, run by the OpenMP threads: BLAS (on one thread of its own) is handed one row block per
// thread without Python's thread hand-off (about 50 us a product, as much as a 512x64x256
// product costs on one core). The blocks depend on `parts` only, never on which thread runs
// one, so the bits of C depend on the thread count, not on timing. fn is the BLAS table's gemm
// (gmnative.gemm.blas_gemm: NumPy's cblas_dgemm; for float32 the project's own sgemm, whose
// bits do not depend on the rows a call is given, so not on `parts` either; 64- or 32-bit
// integers: I); d = [M, N, K, A transposed, B transposed, parts, 64-bit integers].
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

// A batch of products C[n] = op(A[n]) op(B[n]), n < batch, each operand's matrices `stride`
// elements apart (stride 0: one matrix for every n, a convolution's weight), the batch split
// across the OpenMP threads in `parts` consecutive runs of images, one single-threaded BLAS
// call per image (NumPy's matmul loops over the images on one thread). SUM: C = sum_n op(A[n])
// op(B[n]) instead (a convolution's weight gradient): each run accumulates its images into a
// partial of its own (beta 1 after its first), and the partials are added in run order at the
// end, so the bits depend on `parts` only, never on which thread ran what. d = [batch, M, N,
// K, A transposed, B transposed, stride A, stride B, stride C, parts, SUM, 64-bit integers,
// BIAS]; `work` holds (parts - 1) * M * N elements where SUM (run 0 writes C itself). BIAS
// (not with SUM): bias[i] added to row i of each C[n] right after its product, while it is
// in cache (a convolution's bias: the same additions as a pass over C afterwards).
template <typename T, typename I> static void gemm_batched(const void* fn, const T* a, const T* b, T* c, T* work,
                                                           const T* bias, const long long* d, int nt) {
    enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
    const gm_gemm_fn<T, I> gemm = (gm_gemm_fn<T, I>)fn;
    const long long batch = d[0], M = d[1], N = d[2], K = d[3], sa = d[6], sb = d[7], sc = d[8], parts = d[9];
    const bool ta = d[4] != 0, tb = d[5] != 0, sum = d[10] != 0;
    const I lda = (I)(ta ? M : K), ldb = (I)(tb ? K : N);
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (long long p = 0; p < parts; ++p) {
        const long long lo = batch * p / parts, hi = batch * (p + 1) / parts;
        T* out = sum && p > 0 ? work + (p - 1) * M * N : c;
        for (long long n = lo; n < hi; ++n) {
            gemm(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (I)M, (I)N, (I)K, (T)1, a + n * sa, lda,
                 b + n * sb, ldb, (sum && n > lo) ? (T)1 : (T)0, sum ? out : c + n * sc, (I)N);
            if (bias && !sum)
                for (long long i = 0; i < M; ++i) {
                    T* row = c + n * sc + i * N;
                    const T bi = bias[i];
                    #pragma omp simd
                    for (long long j = 0; j < N; ++j) row[j] += bi;
                }
        }
        if (sum && hi == lo && p > 0)  // (a run without images: a zero partial)
            for (long long j = 0; j < M * N; ++j) out[j] = (T)0;
    }
    if (sum && parts > 1) {
        const long long size = M * N;
        #pragma omp parallel for num_threads(nt) if(size * parts >= 65536) schedule(static)
        for (long long j = 0; j < size; ++j) {
            T s = c[j];
            for (long long p = 1; p < parts; ++p) s += work[(p - 1) * size + j];
            c[j] = s;
        }
    }
}

#define GM_EAGER_GEMM_BATCHED(T, suffix) \
    extern "C" void gm_eager_gemm_batched_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[4]; \
        const void* fn = (const void*)((const long long*)a[5])[0]; \
        const T* bias = d[12] ? (const T*)a[6] : nullptr; \
        if (d[11]) gemm_batched<T, long long>(fn, (const T*)a[0], (const T*)a[1], (T*)a[2], (T*)a[3], bias, d, nt); \
        else gemm_batched<T, int>(fn, (const T*)a[0], (const T*)a[1], (T*)a[2], (T*)a[3], bias, d, nt); }
GM_EAGER_GEMM_BATCHED(float, f32)
GM_EAGER_GEMM_BATCHED(double, f64)

// A stack of products C[i] = op(A[i]) op(B[i]) over up to GM_STACK_DIMS batch dims, broadcast
// as NumPy's matmul broadcasts them (stride 0 where an operand's dim is 1), each product the
// one BLAS call NumPy's matmul makes for that matrix (numpy/_core/src/umath/matmul.c.src: the
// same transposes and leading dimensions, so its bits), the matrices split across the OpenMP
// threads in `parts` consecutive runs (matmul of a stack runs them one after another on one
// thread). C is C-contiguous (stack index i at i * M * N). A and B are the base buffers of
// the operands' views, at element offsets d[11], d[12]. d = [batch dims D, M, N, K,
// A transposed, B transposed, lda, ldb, parts, 64-bit integers, matrices, offset A,
// offset B, shape[GM_STACK_DIMS], strides A[GM_STACK_DIMS], strides B[GM_STACK_DIMS]]
// (strides in elements).
#define GM_STACK_DIMS 6
template <typename T, typename I> static void gemm_stacked(const void* fn, const T* a, const T* b, T* c,
                                                           const long long* d, int nt) {
    enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };
    const gm_gemm_fn<T, I> gemm = (gm_gemm_fn<T, I>)fn;
    const long long D = d[0], M = d[1], N = d[2], K = d[3], lda = d[6], ldb = d[7], parts = d[8], total = d[10];
    const bool ta = d[4] != 0, tb = d[5] != 0;
    const long long* shape = d + 13;
    const long long* sa = shape + GM_STACK_DIMS;
    const long long* sb = sa + GM_STACK_DIMS;
    a += d[11];
    b += d[12];
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (long long p = 0; p < parts; ++p) {
        const long long lo = total * p / parts, hi = total * (p + 1) / parts;
        for (long long i = lo; i < hi; ++i) {
            long long rest = i, oa = 0, ob = 0;
            for (long long j = D - 1; j >= 0; --j) {
                const long long q = rest % shape[j];
                rest /= shape[j];
                oa += q * sa[j];
                ob += q * sb[j];
            }
            gemm(ROW_MAJOR, ta ? TRANS : NO_TRANS, tb ? TRANS : NO_TRANS, (I)M, (I)N, (I)K, (T)1, a + oa, (I)lda,
                 b + ob, (I)ldb, (T)0, c + i * M * N, (I)N);
        }
    }
}

#define GM_EAGER_GEMM_STACKED(T, suffix) \
    extern "C" void gm_eager_gemm_stacked_##suffix(void* const* a, int nt) { \
        const long long* d = (const long long*)a[3]; \
        const void* fn = (const void*)((const long long*)a[4])[0]; \
        if (d[9]) gemm_stacked<T, long long>(fn, (const T*)a[0], (const T*)a[1], (T*)a[2], d, nt); \
        else gemm_stacked<T, int>(fn, (const T*)a[0], (const T*)a[1], (T*)a[2], d, nt); }
GM_EAGER_GEMM_STACKED(float, f32)
GM_EAGER_GEMM_STACKED(double, f64)
