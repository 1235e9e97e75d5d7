// the gradients of eager's softmax and log_softmax over the last dimension
// (gmnative/softmax_kernels.py), one pass per row. (Their forwards stay NumPy's, whose bits
// compiled code reproduces.)
//
// Why: op by op a softmax is five NumPy passes forward (max, subtract, exp, sum, divide) and
// its gradient four eager ops (g * y, the row sum, the subtraction, the product), each a
// buffer of the whole tensor; on a small GPT's attention weights (B*H*T rows of T) the pair
// cost about 4x PyTorch's. Here the gradient is one call: a row is read once into cache and
// written once. softmax's steps split their rows across the kernels' threads where the
// caller passes more than one (a tensor of ROWS_SPLIT_MIN elements or more, as PyTorch's
// softmax splits its rows); the others run on the calling thread. Compiled after gmnative.c_helpers.host_prelude (no system header): its
// float exp computes in float and, where libmvec is there, vectorizes the loops below.
//
// Every array is (n, c) row-major; d = [n, c]. Row sums accumulate in double. The two
// gradients are eager_rows.h's softmax_rows_backward (put before this text).
typedef long long gm_i64;

// the column sums of g (a Linear's bias gradient): out = 0, then each row added in order, so each
// column's sum is the sequential one NumPy's g.sum(0) computes (its bits). With `nt` > 1 the
// columns are split in `nt` blocks (multiples of 16) across the threads, each block's rows still
// added in order: the same sums on any team.
template <typename T> static void column_sum_block(const T* g, T* out, gm_i64 n, gm_i64 c, gm_i64 lo, gm_i64 hi) {
    #pragma omp simd
    for (gm_i64 j = lo; j < hi; ++j)
        out[j] = (T)0;
    for (gm_i64 i = 0; i < n; ++i) {
        const T* gi = g + i * c;
        #pragma omp simd
        for (gm_i64 j = lo; j < hi; ++j)
            out[j] += gi[j];
    }
}

template <typename T> static void column_sum(const T* g, T* out, const gm_i64* d, int nt) {
    const gm_i64 n = d[0], c = d[1];
    const gm_i64 blocks = (c + 15) / 16;
    if (nt <= 1 || blocks < 2) {
        column_sum_block(g, out, n, c, 0, c);
        return;
    }
    const gm_i64 parts = nt < blocks ? nt : blocks;
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (gm_i64 p = 0; p < parts; ++p) {
        const gm_i64 lo = blocks * p / parts * 16, hi = blocks * (p + 1) / parts * 16;
        column_sum_block(g, out, n, c, lo, hi < c ? hi : c);
    }
}

// each row's maximum (NaN when the row holds one, as NumPy's maximum.reduce): exact, so the
// forward's remaining NumPy steps give the op's bits; d = [n, c, rows whose maximum is not
// finite (out)]. (NumPy's maximum over a short last axis costs 6x its exp: 184 us on a GPT's
// (16, 4, 32, 32) attention scores.)
template <typename T> static void row_max(const T* x, T* out, gm_i64* d) {
    const gm_i64 n = d[0], c = d[1];
    gm_i64 bad = 0;
    for (gm_i64 i = 0; i < n; ++i) {
        const T* xi = x + i * c;
        T m = xi[0];
        int nan = m != m;
        #pragma omp simd reduction(max:m) reduction(|:nan)
        for (gm_i64 j = 1; j < c; ++j) {
            m = xi[j] > m ? xi[j] : m;
            nan |= xi[j] != xi[j];
        }
        if (nan)
            m = (T)__builtin_nan("");
        out[i] = m;
        bad += !(m > -__builtin_inf() && m < __builtin_inf());
    }
    d[2] = bad;
}

// softmax's forward steps around NumPy's exp, with NumPy's bits (so compiled code's, which
// reproduces them): e = x - max(row) (exact), then, after np.exp(e, out=e), each row divided
// by its sum, added as np.add.reduce adds a contiguous run: from 0, NumPy's pairwise
// summation (8 partial sums, halves above 128 elements). Why: NumPy's subtract, its sum over
// a short last axis and the divide were three quarters of a (16, 4, 32, 32) attention
// softmax (about 160 of 220 us); the exp stays NumPy's own (its vectorized float exp, whose
// bits no C exp here reproduces).
// row_max_sub: d = [n, c, rows whose maximum is not finite (out)]; where that count is not
// 0 the caller takes the op's forward (e is then of no use). The rows are split across `nt`
// OpenMP threads (each row's arithmetic is the same on any thread: the bits do not depend on
// the count).
template <typename T> static void row_max_sub(const T* x, T* e, gm_i64* d, int nt) {
    const gm_i64 n = d[0], c = d[1];
    gm_i64 bad = 0;
    #pragma omp parallel for num_threads(nt) schedule(static) reduction(+:bad) if(nt > 1)
    for (gm_i64 i = 0; i < n; ++i) {
        const T* xi = x + i * c;
        T m = xi[0];
        int nan = m != m;
        #pragma omp simd reduction(max:m) reduction(|:nan)
        for (gm_i64 j = 1; j < c; ++j) {
            m = xi[j] > m ? xi[j] : m;
            nan |= xi[j] != xi[j];
        }
        if (nan || !(m > -__builtin_inf() && m < __builtin_inf())) {
            bad += 1;
            continue;
        }
        T* ei = e + i * c;
        #pragma omp simd
        for (gm_i64 j = 0; j < c; ++j)
            ei[j] = xi[j] - m;
    }
    d[2] = bad;
}

template <typename T> static T pairwise_sum(const T* a, gm_i64 n) {
    if (n < 8) {
        T res = (T)0;
        for (gm_i64 i = 0; i < n; ++i) res += a[i];
        return res;
    }
    if (n <= 128) {
        T r[8];
        for (int j = 0; j < 8; ++j) r[j] = a[j];
        gm_i64 i = 8;
        for (; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; ++j) r[j] += a[i + j];
        T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) res += a[i];
        return res;
    }
    gm_i64 n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

// e[i, :] /= (0 + pairwise sum of e[i, :]) in place, the rows split across `nt` threads; d = [n, c]
template <typename T> static void rows_divide_by_sum(T* e, const gm_i64* d, int nt) {
    const gm_i64 n = d[0], c = d[1];
    #pragma omp parallel for num_threads(nt) schedule(static) if(nt > 1)
    for (gm_i64 i = 0; i < n; ++i) {
        T* ei = e + i * c;
        const T s = (T)0 + pairwise_sum(ei, c);
        #pragma omp simd
        for (gm_i64 j = 0; j < c; ++j)
            ei[j] = ei[j] / s;
    }
}

// softmax's gradient (eager_rows.h), its rows split in `nt` blocks across the threads
template <typename T> static void softmax_backward_rows(const T* g, const T* y, T* gx, const gm_i64* d, int nt) {
    const gm_i64 n = d[0], c = d[1];
    if (nt <= 1) {
        softmax_rows_backward<false, T>(g, y, gx, d);
        return;
    }
    #pragma omp parallel for num_threads(nt) schedule(static)
    for (int p = 0; p < nt; ++p) {
        const gm_i64 lo = n * p / nt, hi = n * (p + 1) / nt;
        const gm_i64 part[2] = {hi - lo, c};
        if (hi > lo)
            softmax_rows_backward<false, T>(g + lo * c, y + lo * c, gx + lo * c, part);
    }
}

#define GM_SOFTMAX_KERNELS(T, suffix) \
    extern "C" void gm_eager_row_max_sub_##suffix(void* const* a, int nt) { \
        row_max_sub<T>((const T*)a[0], (T*)a[1], (gm_i64*)a[2], nt); } \
    extern "C" void gm_eager_rows_divide_by_sum_##suffix(void* const* a, int nt) { \
        rows_divide_by_sum<T>((T*)a[0], (const gm_i64*)a[1], nt); } \
    extern "C" void gm_eager_row_max_##suffix(void* const* a, int) { \
        row_max<T>((const T*)a[0], (T*)a[1], (gm_i64*)a[2]); } \
    extern "C" void gm_eager_column_sum_##suffix(void* const* a, int nt) { \
        column_sum<T>((const T*)a[0], (T*)a[1], (const gm_i64*)a[2], nt); } \
    extern "C" void gm_eager_softmax_backward_##suffix(void* const* a, int nt) { \
        softmax_backward_rows<T>((const T*)a[0], (const T*)a[1], (T*)a[2], (const gm_i64*)a[3], nt); } \
    extern "C" void gm_eager_log_softmax_rows_backward_##suffix(void* const* a, int) { \
        softmax_rows_backward<true, T>((const T*)a[0], (const T*)a[1], (T*)a[2], (const gm_i64*)a[3]); }

GM_SOFTMAX_KERNELS(float, f32)
GM_SOFTMAX_KERNELS(double, f64)
